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
import os
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["EngineConfig", "get_config", "config_context", "available_threads", "cpu_threads", "ConfigScope",
           "check_count", "check_amount"]


def check_count(name: str, value, least: int = 1, *, also: str = "") -> None:
    """Refuse ``value`` unless it is an integer (a bool is not) of at least ``least`` (0 or 1),
    in the words every parameter object uses; ``also`` names what else the field accepts."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        what = "a positive" if least >= 1 else "a non-negative"
        raise ParameterError(f"{name} must be {what} integer{also}, not {value!r}")


def check_amount(name: str, value) -> None:
    """Refuse ``value`` unless it is a finite non-negative number (a bool is not), in the words
    every parameter object uses."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0 <= value < math.inf:
        raise ParameterError(f"{name} must be a non-negative finite number, not {value!r}")


class ConfigScope:
    """The frozen parameter object in force: the defaults, or the innermost block's changes.

    Each family's tunables (the engine's, Louvain's, bipartite matching's) are one such scope:
    a call reads the object once and passes it down, to a cluster's workers too.

    >>> scope = ConfigScope("example", EngineConfig())
    >>> with scope.changed(max_restarts=0):
    ...     scope.get().max_restarts
    0
    >>> scope.get().max_restarts
    2
    """

    def __init__(self, name: str, default):
        self._var = contextvars.ContextVar(name, default=default)

    def get(self):
        """The object in force."""
        return self._var.get()

    @contextlib.contextmanager
    def changed(self, **changes):
        """The block runs with ``changes`` applied (validated on entry by the object's class)."""
        token = self._var.set(dataclasses.replace(self._var.get(), **changes))
        try:
            yield self._var.get()
        finally:
            self._var.reset(token)


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
    spin_wait_s : float
        Longest a GPU worker polls its device without pausing while it waits for a round's
        kernels and its peers; longer waits sleep between polls (0: always). The default covers
        the rounds of every family on the measured graphs (docs/performance.md, "Waiting for
        the device").
    threads : int or None
        Threads an in-process run on the CPU uses: partitions whose program declares concurrent
        steps run them on a pool of this many threads, and a run given no partition count is
        split into this many partitions (see :func:`~mgmatch.engine.execute.execute`). ``None``
        (the default): :func:`available_threads`, the CPUs this process may run on. The result
        does not depend on it.
    min_partition_nnz : int
        Least stored entries (CSR entries) per partition when a run given no partition count is
        split by ``threads``: a smaller graph gets fewer partitions (one below twice this);
        partitions smaller than this on average step one after another on the calling thread.
        Split, a matching does more work in all (a proposal across partitions waits a round for
        its answer) and pays per round for handing the steps to threads and routing their
        messages; below about a million entries a partition, another thread gains less than
        that costs.
    handback_bytes : int or None
        Result arrays of at least this many bytes come back from a worker on the client's own
        host through a file in its memory file system instead of Dask's comm layer
        (:mod:`mgmatch.engine.handback`); ``None``: always through Dask.
    handback_device : bool
        Such arrays on the GPU of a worker on the client's host are mapped by the client (CUDA
        IPC) and copied straight to its memory, instead of through a file. The client then
        holds a CUDA context on that GPU (made once per process, a few hundred MB of its
        memory); where it cannot have one, the arrays come through files.
    """

    exchange: str = "direct"
    peer_timeout_s: float = 30.0
    heartbeat_s: float = 0.5
    connect_timeout_s: float = 120.0
    max_restarts: int = 2
    progress_interval_s: float = 0.2
    spin_wait_s: float = 0.05
    threads: int | None = None
    min_partition_nnz: int = 1 << 20
    handback_bytes: int | None = 1 << 22
    handback_device: bool = True

    def __post_init__(self):
        if self.exchange not in ("direct", "tasks"):
            raise ParameterError(f"exchange must be 'direct' or 'tasks', not {self.exchange!r}")
        for name in ("peer_timeout_s", "heartbeat_s", "connect_timeout_s", "progress_interval_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
                raise ParameterError(f"{name} must be a positive finite number of seconds, not {value!r}")
        if self.heartbeat_s >= self.peer_timeout_s:
            raise ParameterError("heartbeat_s must be shorter than peer_timeout_s")
        check_amount("spin_wait_s", self.spin_wait_s)
        check_count("max_restarts", self.max_restarts, 0)
        if self.threads is not None:
            check_count("threads", self.threads, also=" (or None: every CPU this process may use)")
            object.__setattr__(self, "threads", int(self.threads))
        check_count("min_partition_nnz", self.min_partition_nnz)
        if self.handback_bytes is not None:
            check_count("handback_bytes", self.handback_bytes, 0, also=" (or None: through Dask)")
        if not isinstance(self.handback_device, (bool, np.bool_)):
            raise ParameterError(f"handback_device must be True or False, not {self.handback_device!r}")
        object.__setattr__(self, "handback_device", bool(self.handback_device))

    def thread_count(self) -> int:
        """The threads in force: ``threads``, or :func:`available_threads` when it is None."""
        return available_threads() if self.threads is None else self.threads


def available_threads() -> int:
    """The CPUs this process may run on (its affinity set, where the platform has one: a batch
    job's cpuset, ``taskset``), capped by ``NUMBA_NUM_THREADS`` when the environment sets it and
    by the thread count Numba started with (the same cap Numba's own parallel loops have).

    >>> available_threads() >= 1
    True
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (no affinity on this platform)
        cpus = os.cpu_count() or 1
    caps = [cpus]
    env = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        caps.append(int(env))
    caps.append(_numba_most())  # imported only where a thread count is needed
    return max(1, min(caps))


_SCOPE = ConfigScope("mgmatch_engine_config", EngineConfig())


def get_config() -> EngineConfig:
    """The configuration in force (the innermost :func:`config_context`, else the defaults)."""
    return _SCOPE.get()


def config_context(**changes):
    """Run the block with some engine tunables changed (validated on entry)."""
    return _SCOPE.changed(**changes)


def _numba_most() -> int:
    import numba  # noqa: PLC0415

    return int(numba.config.NUMBA_NUM_THREADS)


@contextlib.contextmanager
def cpu_threads(threads: int | None):
    """Run the block on ``threads`` CPU threads: the engine's (``config_context(threads=...)``)
    and those of Numba's parallel loops started from this thread (``numba.set_num_threads``).
    ``None`` changes nothing. More threads than Numba started with (``NUMBA_NUM_THREADS``,
    by default every CPU of the host) are refused.

    >>> with cpu_threads(1):
    ...     get_config().threads
    1
    """
    if threads is None:
        yield get_config()
        return
    most = _numba_most()
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ParameterError(f"threads must be a positive integer, not {threads!r}")
    if threads > most:
        raise ParameterError(f"{threads} threads is more than Numba runs here ({most}); set NUMBA_NUM_THREADS "
                             "to allow more")
    import numba  # noqa: PLC0415

    before = numba.get_num_threads()
    numba.set_num_threads(int(threads))
    try:
        with config_context(threads=int(threads)) as config:
            yield config
    finally:
        numba.set_num_threads(before)
