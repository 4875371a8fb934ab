"""The engine's tunables as one frozen value, validated once and passed down.

>>> from mgmatch.engine.config import config_context, get_config
>>> get_config().exchange
'direct'
>>> with config_context(peer_timeout_s=5.0):
...     get_config().peer_timeout_s
5.0
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from dataclasses import dataclass

from ..errors import ParameterError

__all__ = ["EngineConfig", "get_config", "config_context"]


@dataclass(frozen=True)
class EngineConfig:
    """How the engine runs a program on a cluster.

    Attributes
    ----------
    exchange : {"direct", "tasks"}
        ``direct`` (the default): one long-lived task per worker holds the whole round loop and
        exchanges messages with the other workers directly (NCCL between GPU workers, TCP
        connections opened once between CPU workers). ``tasks``: every round is a Dask task per
        partition and messages travel as futures (slow, but each round shows on the dashboard's
        task stream).
    peer_timeout_s : float
        A peer that sends nothing, not even the heartbeat every ``heartbeat_s``, for this long is
        taken as stopped: the run aborts its communicator and starts over without that worker.
    heartbeat_s : float
        Interval of the liveness frames each worker sends its peers while it computes.
    connect_timeout_s : float
        Longest wait for every worker of a job to join the job's connections.
    max_restarts : int
        Runs started over after a lost or stopped worker before the job fails.
    progress_interval_s : float
        Least time between two progress events that a cluster run publishes.
    """

    exchange: str = "direct"
    peer_timeout_s: float = 30.0
    heartbeat_s: float = 0.5
    connect_timeout_s: float = 120.0
    max_restarts: int = 2
    progress_interval_s: float = 0.2

    def __post_init__(self):
        if self.exchange not in ("direct", "tasks"):
            raise ParameterError(f"exchange must be 'direct' or 'tasks', not {self.exchange!r}")
        for name in ("peer_timeout_s", "heartbeat_s", "connect_timeout_s", "progress_interval_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
                raise ParameterError(f"{name} must be a positive finite number of seconds, not {value!r}")
        if self.heartbeat_s >= self.peer_timeout_s:
            raise ParameterError("heartbeat_s must be shorter than peer_timeout_s")
        if isinstance(self.max_restarts, bool) or not isinstance(self.max_restarts, int) or self.max_restarts < 0:
            raise ParameterError(f"max_restarts must be a non-negative integer, not {self.max_restarts!r}")


_CONFIG: contextvars.ContextVar[EngineConfig] = contextvars.ContextVar("mgmatch_engine_config",
                                                                       default=EngineConfig())


def get_config() -> EngineConfig:
    """The configuration in force (the innermost :func:`config_context`, else the defaults)."""
    return _CONFIG.get()


@contextlib.contextmanager
def config_context(**changes):
    """Run the block with some engine tunables changed (validated on entry)."""
    token = _CONFIG.set(dataclasses.replace(_CONFIG.get(), **changes))
    try:
        yield _CONFIG.get()
    finally:
        _CONFIG.reset(token)
