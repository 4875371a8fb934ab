"""The partition-program protocol that every algorithm family implements.

An algorithm is a :class:`Program` over :class:`~mgmatch.graph.Partition` objects:

* ``init(part) -> state`` builds one partition's state on the partition's device;
* ``step(state, inbox) -> outbox`` runs the partition to local quiescence on the messages it
  received and returns the messages for other partitions, either as one :class:`Messages`
  (each message goes to the owner of its ``dst`` vertex) or as ``{partition: Messages}``
  (for messages addressed to partitions directly, such as ghost updates);
* ``finish(state) -> dict`` returns the partition's share of the result (arrays);
* ``assemble(graph, pieces, log) -> result`` builds the family's result object from every
  partition's ``finish`` output, in partition order (runs once, in the caller's process).

Optional hooks, each looked up with ``getattr``:

* ``active(state) -> bool``: the partition has work for another round even when no message
  arrives (Louvain's next sweep); the rounds end when no partition sends a message and none is
  active;
* ``reduce(state) -> sequence of float``: values summed over every partition after each step
  (one all-reduce); ``reduced(state, totals)`` receives the sums before the next step;
* ``matched(state) -> int``: owned vertices matched so far, for progress displays;
* ``report(state, totals) -> dict``: extra progress fields (partition 0's view);
* ``fork(state) -> state``: a copy whose mutable arrays are new, for the per-round task mode
  (a step there must not alter an earlier round's state, which Dask may use again);
* ``gpu_bytes(graph) -> int``: device memory a single-device run needs, checked before it starts;
* ``concurrent_steps`` (an attribute): the CPU kernels release the GIL and a partition's
  ``init``, ``step`` and ``finish`` touch only its own state, so the in-process runner runs the
  partitions at once on threads (:func:`~mgmatch.engine.local.run_local`);
* ``split_by_threads`` (an attribute, with ``concurrent_steps``): the result is the same for
  every partition count, so an in-process CPU run that names none is split into one partition
  per thread (:func:`~mgmatch.engine.execute.default_partitions`).

The engine never looks inside a state.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Protocol

import numpy as np

from .._array import get_namespace
from ..cpu.routing import group_by_owner

__all__ = ["Messages", "Program", "RoundLog", "fork_state", "outbox_pieces", "round_vector", "sum_in_order"]


@dataclass
class Messages:
    """A batch of messages: ``ints[k] = (kind, dst, src, aux)`` and ``w[k]``.

    Unless a step addresses its messages to partitions itself, the receiver of a message is the
    partition owning vertex ``dst``.
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
    def concat(cls, batches: list["Messages"], xp=np) -> "Messages":
        batches = [b for b in batches if len(b)]
        if not batches:
            return cls.empty(xp)
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
        if xp is np:  # one linear pass, without the GIL (partitions split their outboxes at once)
            ints, w, offsets = group_by_owner(self.ints, self.w, bounds)
            cut = offsets.tolist()
            return {p: Messages(ints[cut[p] : cut[p + 1]], w[cut[p] : cut[p + 1]])
                    for p in range(len(cut) - 1) if cut[p + 1] > cut[p]}
        # on a device: the counts per receiver come back to the host (no list of receivers, no
        # second search); a batch for one receiver (every batch of a two-partition run) is not
        # reordered, others are sorted by (receiver, position), stable by construction
        n_parts, k = len(bounds) - 1, len(self)
        owner = xp.searchsorted(xp.asarray(bounds), self.ints[:, 1], side="right") - 1
        counts = xp.bincount(owner, minlength=n_parts).get()
        parts = np.flatnonzero(counts).tolist()
        if len(parts) == 1:
            return {parts[0]: self}
        order = xp.argsort(owner * k + xp.arange(k, dtype=owner.dtype))
        cut = np.concatenate([[0], np.cumsum(counts)]).tolist()
        ints, w = self.ints[order], self.w[order]
        return {p: Messages(ints[cut[p] : cut[p + 1]], w[cut[p] : cut[p + 1]]) for p in parts}

    def to_words(self):
        """The batch as one ``(k, 5)`` int64 array (the weight's bits in the last column): one
        buffer per message exchange instead of two."""
        xp = get_namespace(self.ints)
        out = xp.empty((len(self), 5), dtype=xp.int64)
        out[:, :4] = self.ints
        out[:, 4] = self.w.astype(xp.float64, copy=False).view(xp.int64)
        return out

    @classmethod
    def from_words(cls, words) -> "Messages":
        xp = get_namespace(words)
        words = words.reshape(-1, 5)
        return cls(words[:, :4], xp.ascontiguousarray(words[:, 4]).view(xp.float64))


class Program(Protocol):
    """What an algorithm provides to the engine (see the module docstring)."""

    name: str
    phase: str

    def init(self, part) -> Any: ...

    def step(self, state, inbox: Messages) -> Messages | dict: ...

    def finish(self, state) -> dict: ...

    def assemble(self, graph, pieces: list[dict], log: "RoundLog"): ...


def outbox_pieces(outbox, bounds) -> dict[int, Messages]:
    """A step's outbox as ``{receiving partition: Messages}`` (empty batches dropped)."""
    if isinstance(outbox, dict):
        return {int(q): m for q, m in outbox.items() if len(m)}
    return outbox.split(bounds)


def round_vector(program, state, sent: int, watched: bool = True) -> np.ndarray:
    """One partition's contribution to a round's all-reduce: messages sent, whether it is still
    active, vertices matched, then the program's own ``reduce`` values.

    The matched count is for progress displays only, and counting it reads a value back from the
    device: it is counted only when someone ``watched`` the run (0 otherwise), so a GPU round
    needs no host read beyond the exchange's."""
    active = getattr(program, "active", None)
    matched = getattr(program, "matched", None) if watched else None
    extra = getattr(program, "reduce", None)
    head = [float(sent), float(bool(active(state))) if active else 0.0, float(matched(state)) if matched else 0.0]
    if extra is not None:
        head.extend(float(x) for x in extra(state))
    return np.asarray(head, dtype=np.float64)


#: Fields of :func:`round_vector` before the program's own values.
HEAD = 3


def sum_in_order(vectors) -> np.ndarray:
    """The all-reduce of round vectors: summed one after another in partition order, so that
    every runner and every rank gets the same floating-point totals."""
    vectors = list(vectors)
    total = np.array(vectors[0], dtype=np.float64, copy=True)
    for v in vectors[1:]:
        total += v
    return total


@dataclass
class RoundLog:
    """Per-round message counts and time per phase of one run.

    ``load_s`` is the time the workers took to load their partitions onto their devices and
    build the algorithm's state before the first round (the slowest partition), ``finish_s``
    the time from the last round to the partitions' results in the client (both 0
    in-process, where they are part of partitioning and assembling). ``transport`` names how
    the partitions exchanged messages (``local``, ``tcp``, ``nccl`` or ``tasks``);
    ``handback_bytes`` counts the result bytes that came back from the workers through the
    host (files in its shared memory, or mapped from a worker's GPU: :mod:`mgmatch.engine.handback`) rather
    than through Dask."""

    messages: list[int] = field(default_factory=list)
    compute_s: list[float] = field(default_factory=list)
    exchange_s: list[float] = field(default_factory=list)
    idle_s: list[float] = field(default_factory=list)
    load_s: float = 0.0
    finish_s: float = 0.0
    transport: str = "local"
    workers: int = 0
    handback_bytes: int = 0

    @property
    def rounds(self) -> int:
        return len(self.messages)

    def add(self, messages: int, compute_s: float, exchange_s: float, idle_s: float = 0.0) -> None:
        self.messages.append(int(messages))
        self.compute_s.append(float(compute_s))
        self.exchange_s.append(float(exchange_s))
        self.idle_s.append(float(idle_s))

    def as_dict(self) -> dict:
        out = {
            "rounds": self.rounds,
            "messages_per_round": list(self.messages),
            "compute_s": float(sum(self.compute_s)),
            "exchange_s": float(sum(self.exchange_s)),
            "idle_s": float(sum(self.idle_s)),
            "load_s": float(self.load_s),
            "finish_s": float(self.finish_s),
            "transport": self.transport,
        }
        if self.workers:
            out["workers"] = self.workers
            out["handback_bytes"] = int(self.handback_bytes)
        return out


def fork_state(state, shared=()):
    """A copy of ``state`` (a ``SimpleNamespace`` or a dataclass) whose array fields are new;
    the fields named in ``shared`` (read-only ones: the partition, arrays derived from it once)
    are kept as they are. Lists of arrays are copied element by element."""
    def copy(value):
        if isinstance(value, list):
            return [copy(v) for v in value]
        if hasattr(value, "copy") and not np.isscalar(value) and hasattr(value, "shape"):
            return value.copy()
        return value

    if dataclasses.is_dataclass(state):
        names = [f.name for f in dataclasses.fields(state)]
        return dataclasses.replace(state, **{k: copy(getattr(state, k)) for k in names if k not in shared
                                             and next(f for f in dataclasses.fields(state) if f.name == k).init})
    return SimpleNamespace(**{k: v if k in shared else copy(v) for k, v in vars(state).items()})
