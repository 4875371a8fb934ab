"""The bulk-synchronous loop shared by every algorithm.

An algorithm is a :class:`Program`: ``init(part) -> state``, ``step(state, inbox) -> outbox``
(run the partition to local quiescence, returning the messages for other partitions) and
``finish(state) -> dict of arrays``. :func:`run_local` runs the rounds in-process over any number
of partitions; the Dask coordinator runs the very same steps on workers. The loop ends when a
round produces no message at all.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from .._array import get_namespace

__all__ = ["Messages", "Program", "RoundLog", "run_local"]


@dataclass
class Messages:
    """A batch of messages: ``ints[k] = (kind, dst, src, aux)`` and ``w[k]``.

    The receiver of a message is the partition owning vertex ``dst``.
    """

    ints: Any
    w: Any

    @classmethod
    def empty(cls, xp=np) -> "Messages":
        return cls(xp.empty((0, 4), dtype=xp.int64), xp.empty(0, dtype=xp.float64))

    def __len__(self) -> int:
        return int(self.ints.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.ints.nbytes + self.w.nbytes)

    @classmethod
    def concat(cls, batches: list["Messages"]) -> "Messages":
        batches = [b for b in batches if len(b)]
        if not batches:
            return cls.empty()
        if len(batches) == 1:
            return batches[0]
        xp = get_namespace(batches[0].ints)
        return cls(xp.concatenate([b.ints for b in batches]), xp.concatenate([b.w for b in batches]))

    def split(self, bounds: np.ndarray) -> dict[int, "Messages"]:
        """Group by receiving partition (``bounds`` as in :class:`~mgmatch.graph.Partition`).
        Order within each group is kept, so routing is deterministic."""
        if len(self) == 0:
            return {}
        xp = get_namespace(self.ints)
        owner = xp.searchsorted(xp.asarray(bounds), self.ints[:, 1], side="right") - 1
        order = xp.argsort(owner, kind="stable")
        owner_sorted = owner[order]
        parts = [int(p) for p in (xp.unique(owner_sorted).tolist())]
        cuts = xp.searchsorted(owner_sorted, xp.asarray(parts + [len(bounds)]), side="left").tolist()
        ints, w = self.ints[order], self.w[order]
        return {p: Messages(ints[cuts[k] : cuts[k + 1]], w[cuts[k] : cuts[k + 1]]) for k, p in enumerate(parts)}


class Program(Protocol):
    """What an algorithm provides to the loop (see the module docstring)."""

    name: str

    def init(self, part) -> Any: ...

    def step(self, state, inbox: Messages) -> Messages: ...

    def finish(self, state) -> dict: ...

    def matched(self, state) -> int:
        """Owned vertices matched so far (tentatively, for progress displays)."""
        ...


@dataclass
class RoundLog:
    """Per-round message counts and time per phase of one run.

    ``load_s`` is the time the workers took to load their partitions onto their devices and
    build the algorithm's state before the first round (the slowest partition), ``finish_s``
    the time from the last round to the partitions' results in the client (both 0
    in-process, where they are part of partitioning and assembling)."""

    messages: list[int] = field(default_factory=list)
    compute_s: list[float] = field(default_factory=list)
    exchange_s: list[float] = field(default_factory=list)
    idle_s: list[float] = field(default_factory=list)
    load_s: float = 0.0
    finish_s: float = 0.0

    @property
    def rounds(self) -> int:
        return len(self.messages)

    def as_dict(self) -> dict:
        return {
            "rounds": self.rounds,
            "messages_per_round": list(self.messages),
            "compute_s": float(sum(self.compute_s)),
            "exchange_s": float(sum(self.exchange_s)),
            "idle_s": float(sum(self.idle_s)),
            "load_s": float(self.load_s),
            "finish_s": float(self.finish_s),
        }


def run_local(
    program: Program,
    parts: list,
    *,
    progress: Callable[[int, int, float | None], None] | None = None,
    max_rounds: int | None = None,
) -> tuple[list[dict], RoundLog]:
    """Run ``program`` over ``parts`` in-process until no partition sends a message.

    ``progress(round, messages, matched_fraction)`` is called after each round. Returns the per-partition
    ``finish`` results (in partition order) and the round log.
    """
    log = RoundLog()
    states = [program.init(p) for p in parts]
    bounds = parts[0].bounds
    inboxes: list[Messages] = [Messages.empty() for _ in parts]
    while True:
        t0 = time.perf_counter()
        outboxes = [program.step(s, inboxes[i]) for i, s in enumerate(states)]
        t1 = time.perf_counter()
        total = sum(len(o) for o in outboxes)
        routed: list[list[Messages]] = [[] for _ in parts]
        for o in outboxes:
            for dest, batch in o.split(bounds).items():
                routed[dest].append(batch)
        inboxes = [Messages.concat(r) for r in routed]
        log.messages.append(total)
        log.compute_s.append(t1 - t0)
        log.exchange_s.append(time.perf_counter() - t1)
        if progress is not None:
            n = parts[0].n_global
            matched = sum(int(program.matched(s)) for s in states)
            progress(log.rounds, total, matched / n if n else None)
        if total == 0:
            break
        if max_rounds is not None and log.rounds >= max_rounds:
            raise RuntimeError(f"{program.name} did not settle within {max_rounds} rounds")
    return [program.finish(s) for s in states], log


def is_distributed_graph(graph) -> bool:
    """Whether ``graph`` is a :class:`~mgmatch.distributed.loading.DistributedGraph` (whose module
    is loaded whenever one exists, so this never imports Dask)."""
    loading = sys.modules.get("mgmatch.distributed.loading")
    return loading is not None and isinstance(graph, loading.DistributedGraph)
