"""Half-approximate weighted matching and b-matching: Suitor, b-Suitor, locally-dominant (LD)
and one-way handshaking, each a bulk-synchronous program over partitions.

All four break ties by one total order on edges (weight, then the smaller ``(min, max)`` pair of
endpoint ids first), so each returns *the* greedy matching (b-Suitor: the greedy b-matching),
edge for edge, on any device and any number of partitions.

References
----------
.. [1] F. Manne and M. Halappanavar, "New effective multithreaded matching algorithms",
   IPDPS 2014.
.. [2] M. Naim, F. Manne, M. Halappanavar, A. Tumeo, J. Langguth, "Optimizing approximate
   weighted matching on Nvidia Kepler K40", HiPC 2015.
.. [3] A. Khan et al., "Efficient approximation algorithms for weighted b-matching",
   SIAM J. Sci. Comput. 38(5), 2016.
.. [4] F. Manne, M. Naim, H. Lerring, M. Halappanavar, "On stable marriages and greedy
   matchings", CSC 2016.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
import numpy as np

from .._array import concat_to_host, resolve_device, to_numpy
from ..cpu import matching as cpu
from ..engine import Messages, RoundLog, execute, fork_state, is_distributed_graph
from ..engine.config import ConfigScope, check_count
from ..gpu import tunables as _gpu_defaults
from ..engine.warmup import register as _register_warm_up
from ..errors import ParameterError
from ..convert import attach_mapping, coerce_input
from ..graph import Graph, Partition
from ._rounds import round_fields

__all__ = [
    "MatchingResult", "suitor", "b_suitor", "locally_dominant", "handshake", "strongest_neighbour",
    "match", "ALGORITHMS", "MatchingConfig", "get_matching_config", "matching_config",
]


# ---------------------------------------------------------------------------- tunables
@dataclass(frozen=True)
class MatchingConfig:
    """Tunables of the matching kernels, validated once and passed down: a run reads the object
    in force when it starts (:func:`matching_config`) and hands it to every launch, on a
    cluster's workers too. None of them changes a result.

    Attributes
    ----------
    vertices_per_warp : int
        GPU-Suitor: vertices a warp takes per chunk, at most 32 (a lane each). [2]_ found 8 best on Kepler; on a recent
        GPU the count matters little, with 8 among the fastest (docs/performance.md, section
        "GPU Suitor: warps and blocks"), since lanes are idle only while a warp's vertices
        differ in how often they retry. A compile-time value of the kernels.
    threads_per_block : int
        GPU-Suitor: threads per block, a multiple of 32 up to 1024 (default 4 warps); the block
        size matters little (the same section).
    handshake_variant : {"warp", "scan"}
        The strongest-neighbour step of handshaking: a warp per row, or the segmented max-scan
        (one stride per launch), then collate.
    wide_keys : bool or None
        GPU-Suitor keys: ``None`` takes 128-bit keys on GPUs of compute capability 9.0 and newer
        (no weight-rank sort), ``False`` the 64-bit rank keys (any GPU); ``True`` asks for wide
        keys where the GPU has them.
    max_b_per_scan : int
        b-Suitor: most proposals chosen per row scan, at most 64 (a vertex with more free slots
        scans again). A compile-time value of the kernels.
    top_edges : int
        Suitor on a CPU partition placed on a worker: each row's best entries listed in rank
        order, which a search reads first (see :func:`mgmatch.cpu.matching.suitor_local`). The
        list is made in the first run on the partition and kept with it. 0: none.
        docs/performance.md, section "Suitor on placed CPU partitions: each row's best
        entries", gives the measurements behind the default.

    >>> with matching_config(handshake_variant="scan"):
    ...     get_matching_config().handshake_variant
    'scan'
    """

    vertices_per_warp: int = _gpu_defaults.VERTICES_PER_WARP
    threads_per_block: int = _gpu_defaults.THREADS_PER_BLOCK
    handshake_variant: str = _gpu_defaults.HANDSHAKE_VARIANT
    wide_keys: bool | None = _gpu_defaults.WIDE_KEYS
    max_b_per_scan: int = _gpu_defaults.MAX_B_PER_SCAN
    top_edges: int = 8

    def __post_init__(self):
        check_count("vertices_per_warp", self.vertices_per_warp)
        if self.vertices_per_warp > 32:  # a lane holds one of the warp's vertices
            raise ParameterError(f"vertices_per_warp must be at most 32, not {self.vertices_per_warp}")
        check_count("threads_per_block", self.threads_per_block)
        if self.threads_per_block % 32 or self.threads_per_block > 1024:
            raise ParameterError(f"threads_per_block must be a multiple of 32 up to 1024, not {self.threads_per_block}")
        if self.handshake_variant not in ("warp", "scan"):
            raise ParameterError(f"handshake_variant must be 'warp' or 'scan', not {self.handshake_variant!r}")
        if not (self.wide_keys is None or isinstance(self.wide_keys, bool)):
            raise ParameterError(f"wide_keys must be True, False or None, not {self.wide_keys!r}")
        check_count("max_b_per_scan", self.max_b_per_scan)
        if self.max_b_per_scan > 64:
            raise ParameterError(f"max_b_per_scan must be at most 64, not {self.max_b_per_scan}")
        check_count("top_edges", self.top_edges, 0)


_SCOPE = ConfigScope("mgmatch_matching_config", MatchingConfig())


def get_matching_config() -> MatchingConfig:
    """The configuration in force (the innermost :func:`matching_config`, else the defaults)."""
    return _SCOPE.get()


def matching_config(**changes):
    """Run the block with some matching tunables changed (validated on entry); a run takes the
    values in force when it starts."""
    return _SCOPE.changed(**changes)


# ------------------------------------------------------------------------------ results
@dataclass
class MatchingResult:
    """A (b-)matching and how it was computed.

    Attributes
    ----------
    u, v, w : ndarray
        Matched edges, ``u < v``, sorted by ``(u, v)``, and their weights.
    mate : ndarray or None
        ``mate[x]`` is the partner of ``x`` or -1 (one-matchings only).
    n : int
        Number of vertices of the graph.
    algorithm : str
    params : dict
    timings : dict
        Seconds per phase (``partition``, ``match``, ``total``).
    rounds : RoundLog
        Message counts per round.
    device : str
    n_parts : int
    """

    u: np.ndarray
    v: np.ndarray
    w: np.ndarray
    mate: np.ndarray | None
    n: int
    m: int
    algorithm: str
    params: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    rounds: RoundLog = field(default_factory=RoundLog)
    device: str = "cpu"
    n_parts: int = 1

    @property
    def weight(self) -> float:
        """Total weight of the matched edges."""
        return float(np.sum(self.w, dtype=np.float64))

    @property
    def cardinality(self) -> int:
        """Number of matched edges."""
        return int(self.u.shape[0])

    def partners(self, x: int) -> np.ndarray:
        """Partners of vertex ``x`` (at most ``b(x)`` of them)."""
        return np.sort(np.concatenate([self.v[self.u == x], self.u[self.v == x]]))

    def to_table(self) -> dict:
        """Columns ``u, v, weight`` for writing."""
        return {"u": self.u.astype(np.int64), "v": self.v.astype(np.int64), "weight": self.w.astype(np.float64)}

    def summary(self) -> dict:
        """A JSON-able record of the run."""
        return {
            "algorithm": self.algorithm,
            "parameters": dict(self.params),
            "device": self.device,
            "partitions": self.n_parts,
            "n": self.n,
            "m": self.m,
            "weight": self.weight,
            "cardinality": self.cardinality,
            "rounds": self.rounds.rounds,
            "messages_per_round": list(self.rounds.messages),
            **round_fields(self.rounds),
            "time_s": dict(self.timings),
        }

    def __repr__(self) -> str:
        return (
            f"MatchingResult({self.algorithm}, cardinality={self.cardinality}, "
            f"weight={self.weight:.6g}, rounds={self.rounds.rounds}, device={self.device!r})"
        )


# ------------------------------------------------------------------------ shared state
def _slots(part: Partition):
    """Slot of each CSR entry's neighbour (owned ``v - lo``, ghosts after the owned ones) and,
    on the CPU, the ghosts' id-to-slot table (``None`` on the GPU, whose kernels search the
    sorted ghost list; empty when nothing is remote). The slots are read-only and kept with a
    CPU partition between runs (:meth:`Partition.derived`); the table, with an entry for every
    vertex of the graph, is made for each run (it writes only the ghosts' entries)."""
    xp = part.xp
    idx = part.indices
    if part.lo == 0 and part.ghosts.size == 0:  # one partition owning everything: slots are the ids
        return idx, (np.empty(0, dtype=idx.dtype) if xp is np else None)
    if xp is np:
        from ..cpu.graph_build import ghost_lookup, ghost_slots  # noqa: PLC0415

        lookup = ghost_lookup(part.lo, part.hi, part.ghosts, part.n_global)
        slot = part.derived("matching.slots",
                            lambda: ghost_slots(idx, part.lo, part.hi, part.ghosts, part.n_global, lookup))
        return slot, lookup
    from ..gpu.matching import neighbour_slots  # noqa: PLC0415

    return neighbour_slots(idx, part.lo, part.hi, part.ghosts), None


def _active_queue(part: Partition):
    """Global ids of the owned vertices with edges (one mask and one id array, no other temporaries)."""
    xp = part.xp
    queue = xp.flatnonzero(part.indptr[1:] != part.indptr[:-1]).astype(xp.int64, copy=False)
    if part.lo:
        queue += part.lo
    return queue


def _as_inbox(inbox: Messages, xp):
    return inbox.ints, inbox.w


#: No list of each row's best entries (the CPU Suitor then reads its rows whole).
_NO_TOP = np.empty((0, 1), dtype=np.int64)


# ------------------------------------------------------------------------------ programs
class _MatchingProgram:
    """What the four matching programs share: how a state is copied, the GPU memory estimate
    and the assembly of the partitions' results."""

    name = "matching"
    #: State fields that no step writes (the partition and arrays derived from it once).
    shared = ("part", "slot", "ghosts", "ghost_slot", "prepared", "top")
    b = None
    #: The CPU kernels release the GIL: the engine steps the partitions on threads at once.
    concurrent_steps = True
    #: The result is the same for every partition count, so a run on the CPU that names none
    #: is split into one partition per thread.
    split_by_threads = True

    def __init__(self, tune: MatchingConfig | None = None):
        # the tunables in force when the run starts, carried to the workers with the program
        self.tune = get_matching_config() if tune is None else tune

    def _gpu(self, **kw) -> dict:
        """Keyword arguments of a GPU launch wrapper: ``kw`` and the run's tunables."""
        return {**kw, "tune": self.tune}

    def fork(self, st):
        return fork_state(st, self.shared)

    def gpu_bytes(self, graph) -> int:
        return gpu_memory_estimate(graph, self.name, self.b)

    def assemble(self, graph, pieces: list[dict], info) -> "MatchingResult":
        result = _assemble(graph, self.name, pieces, info.log)
        result.device = info.device
        result.n_parts = info.n_parts
        result.params = {"partitions": info.n_parts}
        if self.name == "bsuitor":
            result.params["b"] = int(self.b) if np.isscalar(self.b) else "per-vertex"
        t_part, t_run = info.timings["partition"], info.timings["run"]
        result.timings = {"partition": t_part, "match": t_run, "total": t_part + t_run}
        result.timings.update({k: v for k, v in info.log.as_dict().items() if k.endswith("_s")})
        return result


class _Suitor(_MatchingProgram):
    """Suitor (paper I, Algorithm 3) as partition steps; see :func:`suitor`."""

    name = "suitor"
    phase = "propose"
    #: In-process on the CPU, one partition runs on every thread over the shared graph
    #: (:meth:`single_device`), so a run that names no partition count is not split.
    split_by_threads = False

    def single_device(self, graph):
        """Suitor on every CPU thread over the shared graph (:mod:`.suitor_shared`) when the
        graph is on the CPU, else ``None`` (the one-partition program)."""
        from .suitor_shared import run_shared, suitor_piece  # noqa: PLC0415

        return run_shared(self, graph, suitor_piece)

    def init(self, part: Partition):
        xp = part.xp
        n_slots = part.n_owned + part.ghosts.size
        slot, ghost_slot = _slots(part)
        prepared, key, top = {}, None, _NO_TOP
        if xp is np and part.placed and self.tune.top_edges:  # kept with the partition between runs
            from ..cpu.graph_build import top_edges  # noqa: PLC0415

            k = self.tune.top_edges
            top = part.derived(f"matching.top{k}", lambda: top_edges(part.indptr, part.indices, part.weights, k))
        if xp is not np:  # made once here, not per step: the outbox bound, the weight ranks, the keys
            from ..gpu.matching import suitor_keys, suitor_prepare  # noqa: PLC0415

            prepared = suitor_prepare(part.indices, slot, part.weights, part.n_owned, part.ghosts.size, self.tune)
            key = suitor_keys(n_slots, self.tune)
        return SimpleNamespace(
            part=part,
            slot=slot,
            ghosts=xp.asarray(part.ghosts, dtype=xp.int64),
            suitor=xp.full(n_slots, -1, dtype=xp.int64),
            ws=xp.full(n_slots, -np.inf, dtype=xp.float64),
            target=xp.full(part.n_owned, -1, dtype=xp.int64),
            target_w=xp.zeros(part.n_owned, dtype=xp.float64),
            queue=_active_queue(part),
            prepared=prepared,
            key=key,
            top=top,
            ghost_slot=ghost_slot,
        )

    def step(self, st, inbox: Messages) -> Messages:
        p = st.part
        extra = self._gpu(**st.prepared, key=st.key) if p.xp is not np else {"ghost_slot": st.ghost_slot, "top": st.top}
        ints, w = _twin("suitor_local", p.xp)(
            p.lo, p.hi, p.indptr, p.indices, p.weights, st.slot, st.ghosts,
            st.suitor, st.ws, st.target, st.target_w, st.queue, *_as_inbox(inbox, p.xp), **extra,
        )
        st.queue = st.queue[:0]
        return Messages(ints, w)

    def _unpack(self, st) -> None:
        """The GPU keys kept between steps, written back to ``suitor`` and ``ws``."""
        if st.key is not None:
            from ..gpu.matching import suitor_unpack  # noqa: PLC0415

            suitor_unpack(st.key, st.suitor, st.ws, (st.part.indices, st.slot, st.part.weights), self.tune)

    def matched(self, st) -> int:
        self._unpack(st)
        own = st.suitor[: st.part.n_owned]
        return int(((st.target >= 0) & (own == st.target)).sum())

    def finish(self, st) -> dict:
        self._unpack(st)
        own = st.suitor[: st.part.n_owned]
        mate = st.target.copy()
        mate[(st.target < 0) | (own != st.target)] = -1
        return _own_pairs(st.part, mate, st.target_w)


class _BSuitor(_MatchingProgram):
    """b-Suitor (Khan et al., SISC 2016) as partition steps; see :func:`b_suitor`."""

    name = "bsuitor"
    phase = "propose"

    #: In-process on the CPU, one partition runs on every thread over the shared graph
    #: (:meth:`single_device`), so a run that names no partition count is not split.
    split_by_threads = False

    def __init__(self, b, tune: MatchingConfig | None = None):
        super().__init__(tune)
        self.b = b  # int or global array

    def single_device(self, graph):
        """b-Suitor on every CPU thread over the shared graph (:mod:`.suitor_shared`) when the
        graph is on the CPU, else ``None`` (the one-partition program)."""
        from .suitor_shared import bsuitor_piece, run_shared  # noqa: PLC0415

        return run_shared(self, graph, lambda g, threads: bsuitor_piece(g, threads, self.b))

    def init(self, part: Partition):
        xp = part.xp
        n = part.n_owned
        if np.isscalar(self.b):
            b = xp.full(n, int(self.b), dtype=xp.int64)
        else:
            b = xp.asarray(self.b[part.lo : part.hi], dtype=xp.int64)
        deg = (part.indptr[1:] - part.indptr[:-1]).astype(xp.int64)
        b_eff = xp.minimum(b, deg)  # nobody keeps more partners than it has neighbours
        off = xp.zeros(n + 1, dtype=xp.int64)
        off[1:] = xp.cumsum(b_eff)
        total = int(off[-1])
        n_ghost = part.ghosts.size
        slot, ghost_slot = _slots(part)
        cpu_only = {} if xp is not np else {  # the empty heaps' thresholds and the ceilings (bsuitor_local)
            "own_w": np.where(b_eff == 0, np.inf, -np.inf), "own_s": np.where(b_eff == 0, -2, -1).astype(np.int64),
            "ceil_w": np.full(n, np.inf), "ceil_v": np.full(n, -1, dtype=np.int64)}
        return SimpleNamespace(
            part=part, b=b_eff, slot=slot, ghosts=xp.asarray(part.ghosts, dtype=xp.int64), ghost_slot=ghost_slot,
            hw=xp.zeros(total, dtype=xp.float64), hs=xp.full(total, -1, dtype=xp.int64),
            hcnt=xp.zeros(n, dtype=xp.int64), hoff=off[:-1].copy(),
            tw=xp.full(n_ghost, -np.inf, dtype=xp.float64), ts=xp.full(n_ghost, -1, dtype=xp.int64),
            tid=xp.full(total, -1, dtype=xp.int64), tcnt=xp.zeros(n, dtype=xp.int64), toff=off[:-1].copy(),
            queue=_active_queue(part), prepared=self._prepare(part, slot, b_eff, self.tune), **cpu_only,
            keys=None if xp is np else self._keys(b_eff, n_ghost, total),
        )

    @staticmethod
    def _keys(b, n_ghost: int, total: int):
        """The GPU heaps as keys, kept between steps (``gpu.matching.bsuitor_keys``)."""
        from ..gpu.matching import bsuitor_keys  # noqa: PLC0415

        return bsuitor_keys(b, n_ghost, total)

    @staticmethod
    def _prepare(part: Partition, slot, b, tune) -> dict:
        """What every GPU step of the partition shares (see ``gpu.matching.bsuitor_prepare``),
        and the largest ``b``, which bounds a sweep's messages on the host."""
        if part.xp is np:
            return {}
        from ..gpu.matching import bsuitor_prepare  # noqa: PLC0415

        prepared = bsuitor_prepare(part.indices, slot, part.weights, part.n_owned, part.ghosts.size, tune)
        prepared["b_max"] = int(b.max()) if b.size else 0
        return prepared

    def step(self, st, inbox: Messages) -> Messages:
        p = st.part
        extra = self._gpu(**st.prepared, keys=st.keys) if p.xp is not np else {
            "own_w": st.own_w, "own_s": st.own_s, "ceil_w": st.ceil_w, "ceil_v": st.ceil_v,
            "ghost_slot": st.ghost_slot}
        ints, w = _twin("bsuitor_local", p.xp)(
            p.lo, p.hi, p.indptr, p.indices, p.weights, st.slot, st.ghosts, st.b,
            st.hw, st.hs, st.hcnt, st.hoff, st.tw, st.ts, st.tid, st.tcnt, st.toff,
            st.queue, *_as_inbox(inbox, p.xp), **extra,
        )
        st.queue = st.queue[:0]
        return Messages(ints, w)

    def matched(self, st) -> int:
        return int((st.tcnt > 0).sum())

    def finish(self, st) -> dict:
        if st.keys is not None:  # the GPU heaps, kept as keys between steps, back in hw/hs
            from ..gpu.matching import bsuitor_unpack  # noqa: PLC0415

            bsuitor_unpack(st.keys, st.hw, st.hs, st.prepared["ranks"])
        u, v, w = _twin("bsuitor_pairs", st.part.xp)(
            st.part.lo, st.hoff, st.hcnt, st.hs, st.hw, st.tid, st.tcnt, **({} if st.part.xp is np else self._gpu())
        )
        return _sorted_pairs(st.part, u, v, w)


class _PointerProgram(_MatchingProgram):
    """Shared state of the pointer-based algorithms (LD and handshaking)."""

    def init(self, part: Partition):
        xp = part.xp
        n_slots = part.n_owned + part.ghosts.size
        slot, ghost_slot = _slots(part)
        return SimpleNamespace(
            part=part,
            slot=slot,
            ghosts=xp.asarray(part.ghosts, dtype=xp.int64),
            ghost_slot=ghost_slot,
            matched=xp.zeros(n_slots, dtype=xp.bool_),
            cand=xp.full(n_slots, -1, dtype=xp.int64),
            mate=xp.full(part.n_owned, -1, dtype=xp.int64),
            mate_w=xp.zeros(part.n_owned, dtype=xp.float64),
            sent=xp.full(part.n_owned, -1, dtype=xp.int64),
            first=True,
            passes=0,
        )

    def _extra(self, st) -> dict:
        """The twin's extra arguments: the ghosts' id-to-slot table on the CPU, the tunables on
        the GPU."""
        return {"ghost_slot": st.ghost_slot} if st.part.xp is np else self._gpu()

    def matched(self, st) -> int:
        return int((st.mate >= 0).sum())

    def finish(self, st) -> dict:
        return {**_own_pairs(st.part, st.mate, st.mate_w), "passes": st.passes}


class _LocallyDominant(_PointerProgram):
    """Locally-dominant matching (paper I, Algorithm 1) as partition steps."""

    name = "ld"
    phase = "point"

    def step(self, st, inbox: Messages) -> Messages:
        p = st.part
        ints, w = _twin("ld_local", p.xp)(
            p.lo, p.hi, p.indptr, p.indices, p.weights, st.slot, st.ghosts,
            st.matched, st.cand, st.mate, st.mate_w, st.first, *_as_inbox(inbox, p.xp), **self._extra(st),
        )
        st.first = False
        return Messages(ints, w)


class _Handshake(_PointerProgram):
    """One-way handshaking (segmented max-scan + collate) as partition steps."""

    name = "handshake"
    phase = "handshake"

    def step(self, st, inbox: Messages) -> Messages:
        p = st.part
        ints, w, passes = _twin("handshake_local", p.xp)(
            p.lo, p.hi, p.indptr, p.indices, p.weights, st.slot, st.ghosts,
            st.matched, st.cand, st.mate, st.mate_w, st.sent, *_as_inbox(inbox, p.xp), **self._extra(st),
        )
        st.passes += int(passes)
        return Messages(ints, w)


# ------------------------------------------------------------------------ device twins
_CPU_TWINS = {
    "suitor_local": cpu.suitor_local,
    "bsuitor_local": cpu.bsuitor_local,
    "ld_local": cpu.ld_local,
    "handshake_local": cpu.handshake_local,
    "bsuitor_pairs": cpu.bsuitor_pairs,
}


def _twin(name: str, xp):
    """The CPU or GPU implementation of kernel ``name`` for arrays of namespace ``xp``."""
    if xp is np:
        return _CPU_TWINS[name]
    from ..gpu import matching as gpu  # noqa: PLC0415

    return getattr(gpu, name)


# ------------------------------------------------------------------------ public entry
ALGORITHMS = {"suitor": _Suitor, "ld": _LocallyDominant, "handshake": _Handshake}


def _validate(graph, b=None):
    """What the matching family checks beyond the engine: the kind of graph, and ``b``."""
    if not is_distributed_graph(graph) and not isinstance(graph, Graph):
        raise ParameterError(f"expected an mgmatch.Graph, got {type(graph).__name__}")
    if graph.bipartite:
        raise ParameterError(
            "weighted matching takes an undirected graph; this one is bipartite "
            "(use mgmatch.bipartite_matching, or build the graph with bipartite=False)"
        )
    if b is not None:
        if np.isscalar(b):
            if not isinstance(b, (int, np.integer)) or isinstance(b, bool) or not 0 <= b <= _B_MAX:
                raise ParameterError(f"b must be a non-negative integer below 2^63, not {b!r}")
        else:
            b = np.asarray(to_numpy(b))
            if b.shape != (graph.n,):
                raise ParameterError(f"b must be an integer or an array of {graph.n} entries, got shape {b.shape}")
            if not np.issubdtype(b.dtype, np.integer) or (b < 0).any() or (b > _B_MAX).any():
                raise ParameterError("b must hold non-negative integers below 2^63")
    return b


def match(graph: Graph, algorithm: str = "suitor", *, b=None, partitions=None, device: str = "auto",
          client=None, progress=None) -> MatchingResult:
    """Run one algorithm of the weighted-matching family (the shared entry of the public
    functions below; ``algorithm`` is ``suitor``, ``bsuitor``, ``ld`` or ``handshake``).

    ``graph`` may also be a :class:`~mgmatch.distributed.loading.DistributedGraph` (from
    :func:`~mgmatch.distributed.read_partitions` or :func:`~mgmatch.distributed.place`) with the
    ``client`` of its cluster: its partitions, held by the workers, are used as they are."""
    if algorithm == "bsuitor":
        if b is None:
            raise ParameterError("b-Suitor needs b (an integer or one per vertex)")
    elif algorithm not in ALGORITHMS:
        raise ParameterError(f"unknown matching algorithm {algorithm!r}; choose from suitor, bsuitor, ld, handshake")
    graph, mapping = coerce_input(graph, bipartite=False)
    b = _validate(graph, b if algorithm == "bsuitor" else None)
    program = _BSuitor(b) if algorithm == "bsuitor" else ALGORITHMS[algorithm]()
    if progress is not None and not callable(progress):
        raise ParameterError(f"progress must be callable, not {type(progress).__name__}")
    report = None if progress is None else (lambda rec: progress(rec["round"], rec["messages"], rec.get("matched")))
    return attach_mapping(execute(program, graph, partitions=partitions, device=device, client=client,
                                  progress=report), mapping)


# Device bytes one GPU run needs beyond the graph, per vertex and per stored edge (CSR entry):
# state arrays, work lists and, per edge, the weight ranks with the sort that builds them
# (Suitor, b-Suitor) or the segmented-scan buffers (handshaking).
#: The largest b: capacities are int64 (and clipped to each vertex's degree).
_B_MAX = int(np.iinfo(np.int64).max)
_GPU_BYTES = {"suitor": (64, 20), "bsuitor": (96, 20), "ld": (72, 4), "handshake": (72, 36)}


def gpu_memory_estimate(graph: Graph, algorithm: str, b=None) -> int:
    """Bytes of GPU memory a single-device run of ``algorithm`` on ``graph`` needs (an upper
    estimate, the graph's own arrays included unless they already live on the GPU)."""
    per_vertex, per_edge = _GPU_BYTES[algorithm]
    n, nnz = graph.n, graph.nnz
    need = per_vertex * n + per_edge * nnz
    if algorithm == "bsuitor":
        slots = n * (int(np.max(to_numpy(b))) if not np.isscalar(b) and np.size(b) else int(b or 0))
        need += 40 * min(slots, nnz)  # heap keys, suitor ids, weights, target ids per slot
    if graph.xp is np:
        need += graph.indptr.nbytes + graph.indices.nbytes + graph.weights.nbytes
    return int(need)


def _assemble(graph: Graph, algorithm: str, parts_out: list[dict], log: RoundLog) -> MatchingResult:
    """The one device-to-host exit: gather partition results into a MatchingResult."""
    # each partition's pairs have u owned, u < v, ascending by (u, v) (_own_pairs, _sorted_pairs):
    # in partition order they ascend throughout, so the host only copies them
    u, v = (concat_to_host([p[k] for p in parts_out], np.int64) for k in ("u", "v"))
    w = concat_to_host([p["w"] for p in parts_out], np.float64)
    if algorithm == "bsuitor":
        return MatchingResult(u=u, v=v, w=w, mate=None, n=graph.n, m=graph.m, algorithm=algorithm, rounds=log)
    from ..cpu.pairs import mate_from_pairs  # noqa: PLC0415

    return MatchingResult(u=u, v=v, w=w, mate=mate_from_pairs(u, v, graph.n), n=graph.n, m=graph.m,
                          algorithm=algorithm, rounds=log)


def _own_pairs(part: Partition, mate, mate_w) -> dict:
    """A partition's matched pairs ``u < v`` with ``u`` owned, ascending, as its result: ids in
    32 bits where the graph's fit (half the bytes to gather), weights as they are."""
    xp = part.xp
    ids = xp.arange(part.lo, part.hi, dtype=xp.int64)
    keep = xp.flatnonzero(mate > ids)  # -1 (unmatched) is never above an id
    dtype = xp.int32 if part.n_global < 2**31 else xp.int64
    return {"u": ids[keep].astype(dtype), "v": mate[keep].astype(dtype), "w": mate_w[keep]}


def _sorted_pairs(part: Partition, u, v, w) -> dict:
    """A partition's b-matching edges as its result: of the edges its owned vertices see (``u``
    owned, in any order), those with ``u < v``, ascending by ``(u, v)`` on the partition's own
    device, with ids in 32 bits where the graph's fit (as :func:`_own_pairs`)."""
    xp = part.xp
    keep = xp.flatnonzero(u < v)  # the edge (v, u) of an owned v < u is the other owner's
    u, v, w = u[keep], v[keep], w[keep]
    n_owned, n = max(part.n_owned, 1), max(part.n_global, 1)
    if n_owned * n < 2**63:  # one integer key: a single radix sort on a GPU
        key = (u - part.lo).astype(xp.int64) * n + v.astype(xp.int64)
        order = xp.argsort(key, kind="stable") if xp is np else xp.argsort(key)
    else:
        order = xp.lexsort(xp.stack([v, u]))
    dtype = xp.int32 if part.n_global < 2**31 else xp.int64
    return {"u": u[order].astype(dtype), "v": v[order].astype(dtype), "w": w[order]}


def suitor(graph: Graph, *, partitions=None, device: str = "auto", client=None, progress=None) -> MatchingResult:
    """Half-approximate maximum weight matching by the Suitor algorithm.

    Every vertex proposes to its heaviest neighbour that would accept it (whose current suitor
    is lighter); a displaced suitor proposes again to its next best choice [1]_ [2]_. Partitions
    exchange proposals and displacements for ghost vertices as messages.

    Parameters
    ----------
    graph : Graph or graph-like
        An undirected weighted graph: a :class:`~mgmatch.graph.Graph`, or a NetworkX graph, SciPy matrix, edge table or ``(src, dst[, weight])`` arrays
        (see :func:`mgmatch.convert.as_graph`; the result's ``mapping`` then gives the user's ids
        back to :func:`~mgmatch.convert.to_pandas` and the other converters).
    partitions : int or sequence of int, optional
        Number of partitions the rounds run over, or explicit range bounds
        ``[0, b_1, ..., n]``. Default: 1 in-process, one per worker with ``client``. The result
        does not depend on it.
    device : {"auto", "cpu", "gpu"}
        Where the kernels run; ``auto`` picks the GPU when CuPy sees one.
    client : distributed.Client, optional
        Run the partitions on this Dask cluster (one partition per worker by default). With an
        asynchronous client the call returns an awaitable.
    progress : callable, optional
        ``progress(round, messages, matched_fraction)`` after each round.

    Returns
    -------
    MatchingResult

    Notes
    -----
    The result is the greedy matching under the total order (weight, then the smaller
    ``(min, max)`` endpoint pair), so its weight is at least half the maximum:
    :math:`w(M) \\ge \\tfrac12 \\max_{M^*} w(M^*)`.

    References
    ----------
    .. [1] Manne and Halappanavar, IPDPS 2014. .. [2] Naim et al., HiPC 2015, Algorithm 3.

    Examples
    --------
    >>> import mgmatch
    >>> g = mgmatch.Graph.from_edges([0, 1, 2], [1, 2, 3], [1.0, 3.0, 1.0])
    >>> r = mgmatch.suitor(g, device="cpu")
    >>> r.mate.tolist(), r.weight
    ([-1, 2, 1, -1], 3.0)
    """
    return match(graph, "suitor", partitions=partitions, device=device, client=client, progress=progress)


def b_suitor(graph: Graph, b, *, partitions=None, device: str = "auto", client=None, progress=None) -> MatchingResult:
    """Half-approximate maximum weight b-matching by b-Suitor.

    Each vertex ``v`` keeps its ``b(v)`` best suitors; a vertex proposes to its best
    neighbours that would take it, up to ``b(u)`` at a time, and a displaced suitor proposes
    again [3]_.

    Parameters
    ----------
    graph : Graph or graph-like
        As for :func:`suitor`.
    b : int or array_like of int
        Capacity of every vertex, or one per vertex.
    partitions, device, client, progress
        As in :func:`suitor`.

    Returns
    -------
    MatchingResult
        ``u, v, w`` list the matched edges; ``mate`` is None.

    Notes
    -----
    The result is the greedy b-matching under the shared total order, a ½-approximation of
    the maximum weight b-matching.

    References
    ----------
    .. [3] Khan et al., SIAM J. Sci. Comput. 38(5), 2016.

    Examples
    --------
    >>> import mgmatch
    >>> g = mgmatch.Graph.from_edges([0, 0, 0, 1], [1, 2, 3, 2], [4.0, 3.0, 2.0, 1.0])
    >>> r = mgmatch.b_suitor(g, 2, device="cpu")
    >>> list(zip(r.u.tolist(), r.v.tolist()))
    [(0, 1), (0, 2), (1, 2)]
    """
    return match(graph, "bsuitor", b=b, partitions=partitions, device=device, client=client, progress=progress)


def locally_dominant(graph: Graph, *, partitions=None, device: str = "auto", client=None, progress=None) -> MatchingResult:
    """Half-approximate weighted matching by locally-dominant edges (LD).

    Every free vertex points at its heaviest free neighbour; two vertices pointing at each
    other match, and the vertices that pointed at a newly matched one look again (paper I,
    Algorithm 1 with ProcessVertex) [2]_.

    Examples
    --------
    >>> import mgmatch
    >>> g = mgmatch.Graph.from_edges([0, 1, 2], [1, 2, 3], [1.0, 3.0, 1.0])
    >>> mgmatch.locally_dominant(g, device="cpu").mate.tolist()
    [-1, 2, 1, -1]
    """
    return match(graph, "ld", partitions=partitions, device=device, client=client, progress=progress)


def handshake(graph: Graph, *, partitions=None, device: str = "auto", client=None, progress=None) -> MatchingResult:
    """Half-approximate weighted matching by one-way handshaking.

    In each pass every free vertex finds its strongest free neighbour with a segmented
    max-scan over its edges (ties to the smaller id), vertices that chose each other match
    (collate), and passes repeat on the remaining graph until no edge can be added.

    Examples
    --------
    >>> import mgmatch
    >>> g = mgmatch.Graph.from_edges([0, 1, 2], [1, 2, 3], [1.0, 3.0, 1.0])
    >>> mgmatch.handshake(g, device="cpu").mate.tolist()
    [-1, 2, 1, -1]
    """
    return match(graph, "handshake", partitions=partitions, device=device, client=client, progress=progress)


def strongest_neighbour(graph: Graph, *, device: str = "auto"):
    """Each vertex's strongest neighbour (heaviest edge, ties to the smaller id), or -1 for an
    isolated vertex: the segmented max-scan of one handshaking pass.

    Examples
    --------
    >>> import mgmatch
    >>> g = mgmatch.Graph.from_edges([0, 1, 2], [1, 2, 3], [1.0, 3.0, 1.0])
    >>> mgmatch.strongest_neighbour(g, device="cpu").tolist()
    [1, 2, 1, 2]
    """
    _validate(graph)
    g = graph.to(resolve_device(device))
    xp = g.xp
    if xp is np:
        free = np.ones(g.n, dtype=np.bool_)
        return cpu.strongest_neighbour(g.n, g.indptr, g.indices, g.weights, g.indices, np.zeros(g.n, np.bool_), free)
    from ..gpu import matching as gpu  # noqa: PLC0415

    return to_numpy(gpu.strongest_neighbour_all(g, tune=get_matching_config()))


def _warm_up() -> None:
    """Compile (or load from Numba's cache) every CPU matching kernel on a tiny graph split in
    two, so that a worker's first round does not pay for it (:mod:`mgmatch.engine.warmup`)."""
    g = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([1.0, 2.0]))
    for algorithm in ("suitor", "ld", "handshake"):
        match(g, algorithm, partitions=2, device="cpu")
    match(g, "bsuitor", b=1, partitions=2, device="cpu")


_register_warm_up("matching", _warm_up)
