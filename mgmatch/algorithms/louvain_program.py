"""Louvain as a partition program: one partition (the whole graph) or several.

A partition that owns the whole level graph runs Naim et al.'s GPU Louvain [1]_ as it stands:
one step is a sweep of the move phase (Algorithm 1, every batch of every degree bucket decided
by computeMove, Algorithm 2, then applied), or one aggregation (Algorithm 3).

Several partitions follow the distributed Louvain of Ghosh et al. [2]_ (the method of Vite)
across partitions, with the same batches inside them, so that they take the decisions one
partition takes:

* **Ownership.** Partition ``p`` owns the level vertices ``[lo, hi)`` (their rows and their
  moves) and the communities of the same ids (their new ids at aggregation). A *ghost* is a
  remote neighbour of an owned vertex.
* **Community state.** Every partition keeps ``C``, the community sizes and ``a_c`` of the whole
  level, the same on all of them: at the level's start each owner sends its vertices'
  strengths to every partition (``STRENGTH (v, 0, k_v)``), and every batch's moves go to every
  partition as ``MOVE (v, c, 0)``, which each applies (:func:`apply_move_rows`: integer atomics,
  so the order of the rows does not matter). Ghosh et al. keep a community's totals at its
  owner, send the ghosts' new communities to their holders and the totals back to the
  partitions touching them: that needs a selection of the boundary's moves, the communities new
  to each holder and a sum by community in every batch, each a read back to the host on a GPU,
  where these rows need none. On a GPU a partition sends its whole share of the batch (a row of
  a vertex that stays changes nothing); on a CPU, where a selection costs nothing, only the
  vertices that moved.
* **A batch** is one round: a step applies the previous batch's ``MOVE`` rows of every
  partition, then decides the partition's share of the next batch from that state
  (computeMove) and sends its rows. The global batches are the single
  partition's: bucket ``b`` holds the level's vertices of a degree range in ascending id (the
  last by degree, largest first), batch ``j`` its vertices at positions ``j, j + s, ...``; a
  partition's share comes from the bucket counts of the partitions before it (an all-gather)
  and, for the last bucket, from every partition's degrees there.
* **A sweep** ends with one more round (*close*: the last batch's messages applied) and one
  all-reduce of the change of the internal weight that the partition's movers made (each
  twin counts it from their rows as it applies the batches, as one partition's sweep does)
  and of ``sum_c a_c^2`` over the owned communities (exact integers, carried in 30-bit limbs
  that a float64 sum adds exactly), so every partition computes the same modularity and takes
  the same decision: keep the sweep, or undo it when modularity fell, as one partition does.
* **Aggregation.** Every partition numbers the non-empty communities in id order (it knows
  every community's size), which is what the owners' counts and a prefix sum over them would
  give: the new ids of the communities a partition owns follow those of the partitions before
  it. Each partition maps its own edges to community pairs, merges duplicates, and sends each coarse edge to the owner
  of its source community; the coarse graph is then cut anew into ranges of equal stored-entry
  count (``Graph.partition``'s rule, from one all-reduce of per-cut counts) and its rows moved
  there. The mapping and the moves go ``aggregate_entries`` stored entries a round, and the
  owners merge what they received a key range at a time, so that the aggregation's memory
  beyond the level graph and the coarse entries is bounded by that size, not by the graph. A
  coarse graph of at most ``gather_edges`` stored entries goes whole to partition 0, which
  finishes it alone: its levels are latency bound, each batch an exchange for little work.

Weights are 60-bit fixed point with one scale for the whole graph (from the largest weight and
the stored-entry count, both all-reduced), so every sum is exact and independent of order; the
decisions depend on the partition count only through the modularity's rounding, which is the
same for every partition count because its sums are exact. Several partitions therefore give
the one-partition labels.

References
----------
.. [1] M. Naim, F. Manne, M. Halappanavar, A. Tumeo, "Community Detection on the GPU",
   IEEE IPDPS 2017.
.. [2] S. Ghosh, M. Halappanavar, A. Tumeo, A. Kalyanaraman, H. Lu, D. Chavarria-Miranda,
   A. Khan, A. H. Gebremedhin, "Distributed Louvain Algorithm for Graph Community Detection",
   IEEE IPDPS 2018.
"""

from __future__ import annotations

import copy
import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._array import get_namespace, to_numpy, to_numpy_rows
from ..engine.config import ConfigScope, check_amount, check_count
from ..engine.program import Messages, fork_state
from ..errors import InputError, ParameterError, ResourceError, out_of_device_memory
from ..gpu import tunables as _gpu_defaults

__all__ = ["LouvainConfig", "LouvainProgram", "LouvainState", "MOVE_BUCKETS", "FIXED_BITS", "modularity_of",
           "get_louvain_config", "louvain_config"]

#: Upper degree bounds of the computeMove buckets (the last bucket holds every larger degree).
MOVE_BUCKETS = (4, 8, 16, 32, 84, 319)
#: Bits of the fixed-point weights: the total weight ``2m`` stays below ``2**FIXED_BITS``.
FIXED_BITS = 60

#: Coarse graphs of at most this many stored entries are gathered on one partition (CPU, GPU)
#: when ``LouvainConfig.gather_edges`` is ``None``.
GATHER_EDGES_CPU = 1 << 18
GATHER_EDGES_GPU = 1 << 22

# message kinds (``Messages.ints[:, 0]``); the other columns as named in the module notes
MOVE, STRENGTH, BIGDEG, EDGE, LOOP = range(1, 6)
_LIMB = 30  # bits per limb of an exact integer carried through the float64 all-reduce
_HEAD = 16  # scalar slots of the all-reduce vector before the per-partition (all-gather) slots
_SLOT = 8  # all-gather slots per partition


@dataclass(frozen=True)
class LouvainConfig:
    """Louvain's tunables, validated once and passed down: a run reads the object in force when
    it starts (:func:`louvain_config`) and hands it to every step and GPU launch, on a cluster's
    workers too. The GPU fields (from ``table_budget_bytes`` on) change no result.

    Attributes
    ----------
    move_slices : int
        Interleaved batches per computeMove bucket: batch ``j`` is ``bucket[j::move_slices]``,
        and the moves of a batch are applied before the next batch decides. Naim et al. apply
        them once per bucket (``1``); on R-MAT graphs, after aggregation, most vertices share
        one bucket, and moving them all from one snapshot overshoots (modularity falls, the
        sweep is undone and the level ends early). docs/performance.md, section "Louvain:
        batches per bucket (move_slices)", gives the measurements behind the default.
    move_slice_min : int
        Buckets of fewer vertices than this move as one batch, as in the paper. The default, 0,
        splits every bucket: moved from one snapshot, even a small bucket's vertices follow
        neighbours that leave at the same time (a vertex joins a lone neighbour's community
        while that neighbour joins a third one), and on small weighted graphs such chains leave
        the first level far from a local optimum (Zachary's karate club with its weights: 0.4036
        with whole buckets below 64 vertices, 0.4449 split, the value of NetworkX, igraph and
        NetworKit).
    bin_vertices : int
        Without a ``threshold``, level graphs of more vertices than this stop at a gain below
        ``2.5e-3`` times their modularity (``t_rel`` of the parameters), others at ``1e-6``
        (``t_final``).
    gather_edges : int or None
        With several partitions, a coarse graph of at most this many stored entries is gathered
        on partition 0, which finishes alone (0: never gather). ``None`` (the default) takes
        :data:`GATHER_EDGES_CPU` or :data:`GATHER_EDGES_GPU` by the device. A sweep across
        partitions is an exchange per batch (about 14 batches), each at least a message
        round trip and a step's host work; a sweep on one device costs in proportion to the
        stored entries. The threshold is where the two meet: see docs/performance.md, section
        "Distributed Louvain: gathering small levels", for the figures.
    aggregate_entries : int
        With several partitions, the stored entries a partition maps at once to community
        pairs in the aggregation. The aggregation sends each slice's coarse
        entries in a round of their own, and the coarse rows move to their next partitions in
        slices of this many entries a round, so a partition's memory beyond the level graph and
        the coarse entries it receives is a few 8-byte arrays of this length, whatever the
        graph (the whole level at once needs about 90 bytes per stored entry). Changes no result.
    fused_max_edges : int
        On one GPU, graphs of at most this many stored entries run every level in one fused
        kernel launch when the device allows it (0: never).
    table_budget_bytes : int
        GPU phase driver: bytes of global memory the hash tables of the edge-balanced kernels
        (vertices of degree above 319, communities of degree above 479) may take at once; the
        items of a bucket are cut into chunks whose tables fit (plus one item's table).
    range_steps : int
        GPU phase driver: an edge-balanced warp takes 32 x this many consecutive edges or table
        slots. A compile-time value of the kernels.
    fused_max_vertices : int
        Graphs of more vertices than this never take the fused kernel (0: none does). The
        kernel packs a vertex id in 20 bits, so graphs of more than ``2**20`` vertices never
        take it, whatever this says.
    fused_cluster : int
        Blocks of the fused kernel's thread-block cluster, 2 to 16: 8 is the portable maximum;
        16, the most an H100/H200 takes, needs the non-portable attribute, and a device that
        refuses it gets 8. A compile-time value of the kernel.
    fused_threads : int
        Threads per block of the fused kernel, a multiple of 128 (its computeMove groups of 128
        threads each have a table in shared memory) from 256 (a block's reductions give each of
        their eight values a warp) to 1024. A compile-time value of the kernel.
    fused_range_steps : int
        An edge-balanced warp of the fused kernel's aggregation takes at least 32 x this many
        edges or slots (more where the team's warps split a level's evenly). 1 rather than 2: on
        the last levels, of a few hundred edges, twice as many warps share them, and those
        aggregations run faster (docs/performance.md, section "Fused kernel:
        FUSED_RANGE_STEPS"). A compile-time value of the kernel.
    fused_solo_edges : int
        From the first level of at most this many stored edges whose graph and state fit
        ``fused_solo_bytes`` of shared memory on, the levels run on one block
        (``louvain_fused_solo``, launched after the cluster's kernel), out of its shared memory
        with __syncthreads for barriers: levels of a few thousand edges or fewer run faster
        there than on the cluster, larger ones slower, hence the bound (docs/performance.md,
        section "Fused kernel: FUSED_SOLO_EDGES"). 0 keeps every level on the cluster.
    fused_solo_threads : int or None
        Threads of that block, as ``fused_threads`` allows (``None``: ``fused_threads``). A
        compile-time value of the kernel.
    fused_mid_vertices : int
        Before that, from the first level after level 0 of at most this many vertices that one
        block does not take, the cluster's levels run in a second cluster kernel of
        ``fused_solo_threads`` threads a block (the one-block kernel's build), whose registers
        spill less: levels of a few thousand vertices move faster there, level 0 of the same
        graph slower, hence the bound (docs/performance.md, section "Fused kernel:
        FUSED_MID_VERTICES"). 0 keeps them on the first kernel.
    fused_solo_bytes : int or None
        Shared memory for that block's copy of a level (0: no level fits it); ``None``: all the
        device lets a block have beside the computeMove tables and the kernel's own arrays
        (docs/performance.md, section "Fused kernel: FUSED_SOLO_BYTES", gives the size on one
        device).
    fused_level_bytes : int
        Most bytes for the levels' communities that the fused kernel writes (a row of 8 bytes
        per vertex of the input for each level, at most ``fused_level_rows`` rows, and always
        one); a level without a row left stops the kernel there, and the phase-per-kernel driver
        goes on. The rows lie in pinned host memory, which the kernel writes directly.
    fused_level_rows : int
        Most rows of the levels' communities (see ``fused_level_bytes``).
    fused_view_bytes : int
        Rows of the levels (every row the buffer has, written or not) of at most this many
        bytes are handed to the result as they lie in the pinned buffer, as views of it, and
        the buffer goes back to its pool when they are gone; larger ones are copied out.
    fused_table_slots : float
        Slots per stored edge the fused kernel's aggregation tables get at first (at least
        ``fused_table_min_slots``). A community's table holds its edges to other communities,
        and those need 0.39 (rgg k=14), 0.72 (delaunay k=14) and 0.87 (4elt) slots per stored
        edge on the first level, far less on later ones. A run that needs more (random graphs
        without community structure) goes again with the bound of every partition (1.7 to 2.6
        slots per stored edge), which would otherwise take about half the run's device memory
        on sparse graphs; only graphs that need the bound pay for the try that stopped
        (docs/performance.md, section "Fused kernel: FUSED_TABLE_SLOTS").
    fused_table_min_slots : int
        The fewest slots of the first try's aggregation tables.
    fused_hub_bytes : float
        Vertices of degree above 319 ("hubs") take a block each in the fused kernel, with a
        table in global memory: ``ts[largest degree]`` slots (12 bytes each) for as many blocks
        as a batch has hubs, up to the cluster's. A run starts on the kernel built without them
        (``FUSED_HUBS=0``: the hub code in its sweep loop slows the kernel on graphs without
        hubs too; docs/performance.md, section "Fused kernel: hubs"); a level with hubs stops
        it, and the run goes again on the kernel with them, with twice the table room that
        level needed (or the room the aggregation's region leaves free beside the move phase's
        arrays, if more), within this many bytes per stored edge, ``fused_hub_min_bytes`` or
        the free room, whichever is most. If not even the need fits, the phase-per-kernel
        driver goes on from that level. 0 sends every level with hubs to the driver.
    fused_hub_min_bytes : int
        The hubs' tables may always take this many bytes (see ``fused_hub_bytes``).
    fused_hub_max_edges : int
        Graphs of more stored edges than this with hubs go to the phase driver: the fused
        kernel's 16 SMs lose to the driver's whole GPU there (docs/performance.md, section
        "Fused kernel: FUSED_HUB_MAX_EDGES").
    """

    move_slices: int = 2
    move_slice_min: int = 0
    bin_vertices: int = 100_000
    gather_edges: int | None = None
    aggregate_entries: int = 1 << 25
    fused_max_edges: int = 1 << 22
    table_budget_bytes: int = _gpu_defaults.GLOBAL_TABLE_BUDGET
    range_steps: int = _gpu_defaults.RANGE_STEPS
    fused_max_vertices: int = _gpu_defaults.FUSED_MAX_VERTICES
    fused_cluster: int = _gpu_defaults.FUSED_CLUSTER
    fused_threads: int = _gpu_defaults.FUSED_THREADS
    fused_range_steps: int = _gpu_defaults.FUSED_RANGE_STEPS
    fused_solo_edges: int = _gpu_defaults.FUSED_SOLO_EDGES
    fused_solo_threads: int | None = _gpu_defaults.FUSED_SOLO_THREADS
    fused_mid_vertices: int = _gpu_defaults.FUSED_MID_VERTICES
    fused_solo_bytes: int | None = _gpu_defaults.FUSED_SOLO_BYTES
    fused_level_bytes: int = _gpu_defaults.FUSED_LEVEL_BYTES
    fused_level_rows: int = _gpu_defaults.FUSED_LEVEL_ROWS
    fused_view_bytes: int = _gpu_defaults.FUSED_VIEW_BYTES
    fused_table_slots: float = _gpu_defaults.FUSED_TABLE_SLOTS
    fused_table_min_slots: int = _gpu_defaults.FUSED_TABLE_MIN_SLOTS
    fused_hub_bytes: float = _gpu_defaults.FUSED_HUB_BYTES
    fused_hub_min_bytes: int = _gpu_defaults.FUSED_HUB_MIN_BYTES
    fused_hub_max_edges: int = _gpu_defaults.FUSED_HUB_MAX_EDGES

    def __post_init__(self):
        for name, least in (("move_slices", 1), ("move_slice_min", 0), ("bin_vertices", 0), ("aggregate_entries", 1),
                            ("fused_max_edges", 0),
                            ("table_budget_bytes", 1), ("range_steps", 1), ("fused_max_vertices", 0),
                            ("fused_range_steps", 1), ("fused_solo_edges", 0), ("fused_mid_vertices", 0),
                            ("fused_level_bytes", 0), ("fused_level_rows", 1), ("fused_view_bytes", 0),
                            ("fused_table_min_slots", 0), ("fused_hub_min_bytes", 0), ("fused_hub_max_edges", 0)):
            check_count(name, getattr(self, name), least)
        for name, none in (("gather_edges", "by the device"), ("fused_solo_bytes", "all a block may have")):
            if getattr(self, name) is not None:
                check_count(name, getattr(self, name), 0, also=f" or None ({none})")
        check_count("fused_cluster", self.fused_cluster)
        if not 2 <= self.fused_cluster <= 16:  # (the code for a team of one block is the one-block kernel's)
            raise ParameterError(f"fused_cluster must be from 2 to 16, not {self.fused_cluster}")
        for name in ("fused_threads", "fused_solo_threads"):
            value = getattr(self, name)
            if value is None and name == "fused_solo_threads":
                continue
            check_count(name, value, also=" or None (fused_threads)" if name == "fused_solo_threads" else "")
            if value % 128 or not 256 <= value <= 1024:  # groups of 128 threads; a warp per reduced value
                raise ParameterError(f"{name} must be a multiple of 128 from 256 to 1024, not {value}")
        for name in ("fused_table_slots", "fused_hub_bytes"):
            check_amount(name, getattr(self, name))


_SCOPE = ConfigScope("mgmatch_louvain_config", LouvainConfig())


def get_louvain_config() -> LouvainConfig:
    """The Louvain configuration in force (the innermost :func:`louvain_config`, else the defaults)."""
    return _SCOPE.get()


def louvain_config(**changes):
    """Run the block with some Louvain tunables changed (validated on entry); a call reads the
    configuration once and passes it down, to a cluster's workers too.

    >>> from mgmatch.algorithms.louvain_program import get_louvain_config, louvain_config
    >>> with louvain_config(move_slices=1):
    ...     get_louvain_config().move_slices
    1
    """
    return _SCOPE.changed(**changes)


# ------------------------------------------------------------------------------ level graph
@dataclass
class _LevelGraph:
    """One level's rows: CSR without self entries, fixed-point weights, self-loop weights.

    ``indices`` are the level's global vertex ids; ``indptr`` has a row per owned vertex."""

    indptr: object  # int64, n_owned + 1
    indices: object  # int32
    wfix: object  # int64, fixed-point edge weights
    loop_fix: object  # int64, per owned vertex: self-loop weight as counted in k_i

    @property
    def n(self) -> int:
        return int(self.indptr.shape[0]) - 1

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])


@dataclass(eq=False)
class LouvainState:
    """What one partition holds between steps (the engine never looks inside).

    ``phase`` names the next step: ``move`` and ``aggregate_local`` for a partition owning the
    whole level graph; ``scale``, ``start``, ``decide``, ``close``, ``aggregate``,
    ``agg_edges``, ``agg_merge``, ``agg_cut``, ``agg_move`` for one of several; ``done``.
    Arrays named ``*_g`` and ``comm``, ``csize``, ``afix`` are indexed by level vertex or
    community id over the whole level (``indptr_g`` holds only the owned rows;
    ``kfix_g``, ``comm``, ``csize`` and ``afix`` are the same on every partition).
    """

    part: object  # the input partition; several partitions release it after the first aggregation
    params: dict
    config: LouvainConfig
    device: str
    twin: object
    xp: object
    n_parts: int
    index: int
    n_global: int = 0  # the input graph's vertices
    phase: str = "scale"
    compose: bool = False  # one partition from the start: levels composed on the device as they come
    graph: _LevelGraph | None = None
    bounds: np.ndarray | None = None  # the level's partition bounds
    n_level: int = 0
    nnz_level: int = 0
    two_m_fix: int = 0
    shift: int | None = None  # the fixed-point scale is 2**shift
    kfix: object = None  # k_i of the owned vertices
    kfix_g: object = None  # k_i of every level vertex
    indptr_g: object = None
    comm: object = None  # C
    csize: object = None  # comSize
    afix: object = None  # a_c
    buckets: list = field(default_factory=list)
    batches: list = field(default_factory=list)  # (bucket, batch) of every global batch
    batch_t: int = 0
    bucket_counts: object = None  # (partitions, buckets) vertex counts, from the all-gather
    workspace: object = None
    saved: tuple | None = None
    orig_to_level: object = None  # compose mode
    levels: list = field(default_factory=list)  # compose mode: device rows
    maps: list = field(default_factory=list)  # several partitions: new id of each owned level vertex
    modularity: list = field(default_factory=list)
    level: int = 0
    iteration: int = 0
    q_current: float = 0.0
    internal: int = 0  # the level's internal weight at the last kept sweep, fixed point
    d_internal: object = 0  # several partitions: this sweep's change of it from the owned moves (int or device scalar)
    q_level_start: float = 0.0
    stop_after: bool = False
    nid_offsets: np.ndarray | None = None
    n_new: int = 0
    new_rows: tuple | None = None
    red_out: np.ndarray | None = None
    red_in: np.ndarray | None = None
    event: bool = False
    steps: int = 0
    timings: dict = field(default_factory=lambda: {"levels": []})
    level_timing: dict = field(default_factory=dict)
    n_communities: int | None = None
    edge_offsets: np.ndarray | None = None
    nid_g: object = None  # aggregation: the new id of every community known here
    src: object = None  # aggregation: the new id of every owned vertex's community
    cuts: list = field(default_factory=list)  # aggregation: the row (or entry) slices still to send
    acc_keys: list = field(default_factory=list)  # aggregation: coarse entries received, src * n_new + dst ...
    acc_w: list = field(default_factory=list)  # ... and their weights
    acc_loops: list = field(default_factory=list)  # (vertex, weight) pairs of the next level's self-loops
    stepped: str = ""  # the phase of the last step

    @property
    def done(self) -> bool:
        return self.phase == "done"

    def threshold(self, q: float) -> float:
        """The gain below which the level's sweeps, or the levels, stop at modularity ``q``
        (:func:`~mgmatch.algorithms.louvain.validate_louvain_params`); the fused kernel takes
        the same rule."""
        p = self.params
        if self.n_level > self.config.bin_vertices:
            return max(p["t_bin"], p["t_rel"] * q)
        return p["t_final"]


@functools.cache
def _twin(device: str):
    if device == "gpu":
        from ..gpu import louvain as twin  # noqa: PLC0415
    else:
        from ..cpu import louvain as twin  # noqa: PLC0415
    return twin


# ----------------------------------------------------------------------- exact arithmetic
def modularity_of(internal: int, square_sum: int, two_m: int, resolution: float) -> float:
    """Eq. (1) from exact fixed-point sums: ``internal / 2m - gamma sum_c a_c^2 / (2m)^2``
    (the fused kernel's formula, so both paths round alike)."""
    if two_m <= 0:
        return 0.0
    t = float(two_m)
    return float(internal) / t - resolution * (float(square_sum) / t / t)


def _limbs(x: int, k: int) -> list:
    """Non-negative ``x`` as ``k`` limbs of :data:`_LIMB` bits (each exact in float64, and so is
    their sum over partitions)."""
    mask = (1 << _LIMB) - 1
    return [float((x >> (_LIMB * i)) & mask) for i in range(k)]


def _unlimb(values) -> int:
    return sum(int(round(float(v))) << (_LIMB * i) for i, v in enumerate(values))


# ------------------------------------------------------------------------- array helpers
def _repeat(values, counts, xp):
    """``np.repeat(values, counts)`` on either namespace (counts an int array)."""
    if xp is np:
        return np.repeat(values, counts)
    ends = xp.cumsum(counts)
    total = int(ends[-1]) if ends.shape[0] else 0
    return values[xp.searchsorted(ends, xp.arange(total, dtype=ends.dtype), side="right")]


def _row_slices(indptr, size: int) -> list:
    """Consecutive row ranges ``(a, b, indptr[a], indptr[b])`` covering every row of the CSR
    offsets ``indptr``, each of at most ``size`` stored entries plus one row's."""
    xp = get_namespace(indptr)
    n = int(indptr.shape[0]) - 1
    if n <= 0:
        return []
    nnz = int(indptr[-1])
    if nnz <= size:
        return [(0, n, 0, nnz)]
    # the last row starting at or before each multiple of size
    starts = xp.searchsorted(indptr, xp.arange(size, nnz, size, dtype=indptr.dtype), side="right") - 1
    cuts = np.unique(np.concatenate([[0], to_numpy(starts), [n]])).astype(np.int64)
    at = to_numpy(indptr[xp.asarray(cuts)]).tolist()
    cuts = cuts.tolist()
    return [(cuts[i], cuts[i + 1], at[i], at[i + 1]) for i in range(len(cuts) - 1)]


def _merge_keys(keys: list, weights: list, xp, size: int, unique: bool = False):
    """The sorted pieces of ``keys`` and their ``weights`` as one sorted array of keys and their
    summed weights (``unique``: no key repeats, only the order is made).

    More than ``size`` entries in all are merged a key range at a time, the ranges cut at
    quantiles of the pieces (a sample sort's splitters, so each range holds about ``size``
    entries): the sort's scratch then stays that small, and no copy of all the pieces is made
    while they are held. The lists are emptied."""

    def merged(k, w):
        if unique:
            k, (w,) = _by_key(k, [w], xp, check=True)
            return k, w
        k, (w,) = _sum_by_key(k, [w], xp, check=True)
        return k, w

    total = sum(int(k.shape[0]) for k in keys)
    if total <= size or len(keys) == 1:
        k, w = _join(keys, xp), _join(weights, xp)
        keys.clear()
        weights.clear()
        return merged(k, w)
    ranges = -(-total // size)
    filled = [k for k in keys if k.shape[0]]
    at = [np.linspace(0, int(k.shape[0]) - 1, ranges + 1).astype(np.int64)[1:-1] for k in filled]
    samples = np.sort(np.concatenate([to_numpy(k[xp.asarray(i)]) for k, i in zip(filled, at)]))
    del filled  # (no reference to the pieces may outlive the lists)
    splitters = np.unique(samples[(np.arange(1, ranges) * samples.shape[0]) // ranges])
    split_d = xp.asarray(splitters)
    cuts = [[0, *to_numpy(xp.searchsorted(k, split_d, side="left")).tolist(), int(k.shape[0])] for k in keys]
    out_k, out_w = [], []
    for r in range(splitters.shape[0] + 1):
        ks = [k[c[r] : c[r + 1]] for k, c in zip(keys, cuts) if c[r + 1] > c[r]]
        ws = [w[c[r] : c[r + 1]] for w, c in zip(weights, cuts) if c[r + 1] > c[r]]
        if ks:
            k, w = merged(_join(ks, xp), _join(ws, xp))
            out_k.append(k)
            out_w.append(w)
        del ks, ws  # (views: they would keep the pieces)
    keys.clear()
    weights.clear()
    return _join(out_k, xp), _join(out_w, xp)


def _join(pieces: list, xp):
    """The pieces as one int64 array (the piece itself when there is one)."""
    if not pieces:
        return xp.zeros(0, dtype=xp.int64)
    return pieces[0] if len(pieces) == 1 else xp.concatenate(pieces)


def _by_key(keys, values: list, xp, *, check: bool = False):
    """``keys`` sorted and each column of ``values`` alike; ``check``: unless they already are
    (a read from the device, so only where the sort is often saved: received pieces)."""
    if keys.shape[0] < 2 or (check and bool((keys[1:] >= keys[:-1]).all())):
        return keys, values
    order = xp.argsort(keys)
    return keys[order], [v[order] for v in values]


def _sum_by_key(keys, values: list, xp, *, check: bool = False):
    """Unique ``keys`` (sorted) and each column of ``values`` summed over equal keys (int64:
    exact, whatever the order); ``check`` as :func:`_by_key` takes it."""
    if keys.shape[0] == 0:
        return keys, [v[:0] for v in values]
    keys, values = _by_key(keys, values, xp, check=check)
    start = xp.ones(keys.shape[0], dtype=bool)
    start[1:] = keys[1:] != keys[:-1]
    first = xp.flatnonzero(start)
    del start
    ends = xp.concatenate([first[1:] - 1, xp.asarray([keys.shape[0] - 1], dtype=first.dtype)])
    out = []
    for v in values:  # a key's sum: the running sum at its last entry minus that before its first
        cs = xp.cumsum(v.astype(xp.int64, copy=False))
        tot = cs[ends]
        tot[1:] -= cs[first[1:] - 1]
        out.append(tot)
    return keys[first], out


class _Outbox:
    """Messages addressed to partitions, collected piece by piece and grouped once."""

    def __init__(self, xp, n_parts: int):
        self.xp, self.n_parts, self.dest, self.rows = xp, n_parts, [], []

    def add(self, dest, kind: int, dst, src, aux) -> None:
        xp = self.xp
        k = int(dst.shape[0])
        if k == 0:
            return
        rows = xp.empty((k, 4), dtype=xp.int64)
        rows[:, 0] = kind
        rows[:, 1] = dst
        rows[:, 2] = src
        rows[:, 3] = aux
        self.rows.append(rows)
        self.dest.append(xp.broadcast_to(xp.asarray(dest, dtype=xp.int64), (k,)) if np.ndim(dest) == 0 else dest)

    def to_all(self, kind: int, dst, src, aux) -> None:
        for q in range(self.n_parts):
            self.add(q, kind, dst, src, aux)

    def build(self) -> dict:
        xp = self.xp
        if not self.rows:
            return {}
        rows = xp.concatenate(self.rows)
        dest = xp.concatenate([xp.asarray(d, dtype=xp.int64) for d in self.dest])
        order = xp.argsort(dest)
        rows, dest = rows[order], dest[order]
        counts = to_numpy(xp.bincount(dest, minlength=self.n_parts)).tolist()
        out, at = {}, 0
        for q, c in enumerate(counts):
            if c:
                r = rows[at : at + c]
                out[q] = Messages(r, xp.zeros(c, dtype=xp.float64))
            at += c
        return out

    def __len__(self) -> int:
        return sum(int(r.shape[0]) for r in self.rows)


def _of_kind(inbox: Messages, kind: int):
    ints = inbox.ints
    if ints.shape[0] == 0:
        return ints[:, 1], ints[:, 2], ints[:, 3]
    sel = ints[ints[:, 0] == kind]
    return sel[:, 1], sel[:, 2], sel[:, 3]


def _owner(bounds, ids, xp):
    return xp.searchsorted(xp.asarray(bounds), ids, side="right") - 1


# ============================================================================== program
class LouvainProgram:
    """Louvain over partitions for :func:`mgmatch.engine.execute` (see the module notes)."""

    name = "louvain"
    phase = "louvain"

    def __init__(self, params: dict, config: LouvainConfig, progress=None):
        self.params = params
        self.config = config
        self.progress = progress  # progress(level, sweeps, modularity), for single_device's driver

    # ------------------------------------------------------------------ protocol hooks
    def single_device(self, graph):
        """The fused one-kernel path on a GPU for small graphs, when it applies (else ``None``)."""
        if graph.xp is np:
            return None
        from .louvain_fused import run_fused_single  # noqa: PLC0415

        return run_fused_single(self, graph)

    def init(self, part) -> LouvainState:
        if part.bipartite:
            raise InputError("louvain needs an undirected graph; this one is bipartite")
        xp = get_namespace(part.indices)
        device = "cpu" if xp is np else "gpu"
        state = LouvainState(part=part, params=dict(self.params, device=device), config=self.config, device=device,
                             twin=_twin(device), xp=xp, n_parts=part.n_parts, index=part.index,
                             n_global=part.n_global)
        state.red_out = np.zeros(self._red_len(state), dtype=np.float64)
        t0 = time.perf_counter()
        try:
            if part.n_parts == 1:
                state.compose = True
                nnz = part.nnz
                wmax = float(part.weights.max()) if nnz else 0.0
                state.shift = _shift(wmax, nnz)
                state.bounds = np.asarray([0, part.n_global], dtype=np.int64)
                self._level_from_partition(state)
                _start_local(state)
            else:
                state.bounds = np.asarray(part.bounds, dtype=np.int64)
                state.phase = "scale"
        except Exception as exc:
            _reraise_oom(exc, part.n_owned, part.nnz)
            raise
        state.timings["setup_s"] = time.perf_counter() - t0
        return state

    def step(self, state: LouvainState, inbox: Messages):
        state.event = False
        state.red_out[:] = 0.0
        state.steps += 1
        if state.done:
            return {}
        phase, before = state.phase, state.level_timing
        state.stepped = phase
        t0 = time.perf_counter()
        try:
            out = getattr(self, "_" + phase)(state, inbox)
        except Exception as exc:
            _reraise_oom(exc, state.n_level, state.nnz_level)
            raise
        dt = time.perf_counter() - t0
        # a level's record: the time of its steps from its start to the next level's start
        timing = state.level_timing if phase in ("scale", "start") else before
        key = "aggregate_s" if phase.startswith("agg") else "move_s"
        timing[key] = timing.get(key, 0.0) + dt
        timing["last_round"] = state.steps
        if out:  # messages to other partitions (a partition's own come back without a transfer)
            timing["messages"] = timing.get("messages", 0) + sum(len(m) for q, m in out.items() if q != state.index)
        return out

    def active(self, state: LouvainState) -> bool:
        return not state.done

    def reduce(self, state: LouvainState):
        return state.red_out

    def reduced(self, state: LouvainState, totals) -> None:
        if state.done or state.n_parts == 1 or state.phase in ("move", "aggregate_local"):
            return
        state.red_in = np.asarray(totals, dtype=np.float64)
        hook = getattr(self, "_after_" + state.stepped, None)  # the step just taken
        if hook is not None:
            hook(state)

    def report(self, state: LouvainState, totals) -> dict:
        return {"level": state.level, "sweeps": state.iteration, "modularity": state.q_current,
                "event": state.event}

    def fork(self, state: LouvainState) -> LouvainState:
        """A copy for the per-round task mode: the arrays a step changes are new, the level's
        read-only ones (graph, strengths, scratch) shared."""
        new = fork_state(state, shared=("part", "twin", "xp", "config", "params", "workspace", "graph", "buckets",
                                        "indptr_g", "kfix", "kfix_g", "saved",
                                        "timings", "level_timing", "red_out", "red_in"))
        if state.saved is not None:
            new.saved = tuple(a.copy() for a in state.saved)
        new.timings, new.level_timing = copy.deepcopy((state.timings, state.level_timing))
        new.red_out = state.red_out.copy()
        return new

    def finish(self, state: LouvainState) -> dict:
        if state.compose:
            n_comm = state.n_communities
            if n_comm is None and state.levels:
                last = state.levels[-1]
                n_comm = int(last.max()) + 1 if last.shape[0] else 0
            levels = to_numpy_rows(state.levels) if state.levels else []
            return {"levels": levels, "n_communities": n_comm, "modularity": list(state.modularity),
                    "timings": state.timings, "params": state.params}
        return {"maps": [to_numpy(m).astype(np.int64) for m in state.maps], "modularity": list(state.modularity),
                "timings": state.timings, "params": state.params, "n0": state.n_global}

    def assemble(self, graph, pieces: list, run_info):
        from .louvain import _result  # noqa: PLC0415

        head = pieces[0]
        timings = dict(head["timings"])
        timings["levels"] = [dict(t) for t in head["timings"]["levels"]]
        if "levels" in head:
            res = _result(head["levels"], head["modularity"], head["n_communities"], timings, head["params"],
                          run_info.device)
        else:
            n_levels = max(len(pc["maps"]) for pc in pieces)
            lab = np.arange(head["n0"], dtype=np.int64)
            levels = []
            for lv in range(n_levels):
                m = np.concatenate([pc["maps"][lv] for pc in pieces if len(pc["maps"]) > lv])
                lab = m[lab]
                levels.append(lab)
            for lv, rec in enumerate(timings["levels"]):  # messages sent by every partition
                rec["messages"] = sum(pc["timings"]["levels"][lv].get("messages", 0) for pc in pieces
                                      if len(pc["timings"]["levels"]) > lv)
            res = _result(levels, head["modularity"], None, timings, head["params"], run_info.device)
        log = run_info.log
        for rec in res.timings["levels"]:
            a, b = rec.pop("first_round", None), rec.pop("last_round", None)
            if a is not None and b is not None:
                rec["exchange_s"] = float(sum(log.exchange_s[a:b]))
                rec["rounds"] = b - a
        res.timings["partitions"] = run_info.n_parts
        res.timings["rounds"] = log.rounds
        res.rounds = log
        return res

    # ------------------------------------------------------------------- helpers
    def _red_len(self, state) -> int:
        return _HEAD + _SLOT * state.n_parts

    def _gathered(self, state, slot: int) -> np.ndarray:
        """The all-gather slot ``slot`` of every partition, from the last all-reduce."""
        base = _HEAD + slot
        return np.rint(state.red_in[base::_SLOT][: state.n_parts]).astype(np.int64)

    def _put(self, state, slot: int, value) -> None:
        state.red_out[_HEAD + _SLOT * state.index + slot] = float(value)

    def _level_from_partition(self, state: LouvainState) -> None:
        """Level 0's rows in fixed point (the partition's own rows, one scale for all)."""
        part, xp, twin = state.part, state.xp, state.twin
        n, nnz = part.n_owned, part.nnz
        indptr = part.indptr.astype(xp.int64, copy=False)
        degrees = indptr[1:] - indptr[:-1]
        twin.check_memory(n, nnz, int(degrees.max()) if n else 0, tune=state.config)
        weights = part.weights.astype(xp.float64, copy=False)
        wfix = _fixed_point(twin, weights, state.shift) if nnz and state.shift is not None else \
            xp.zeros(nnz, dtype=xp.int64)
        state.graph = _LevelGraph(indptr=indptr, indices=part.indices.astype(xp.int32, copy=False), wfix=wfix,
                                  loop_fix=xp.zeros(n, dtype=xp.int64))
        state.n_level = part.n_global
        if state.compose:
            state.orig_to_level = xp.arange(n, dtype=xp.int32)

    # ================================================== one partition owning the level
    def _move(self, state, inbox):
        _local_sweep(state)
        state.event = True
        return {}

    def _aggregate_local(self, state, inbox):
        _local_aggregate(state)
        state.event = True
        return {}

    # ======================================================== several partitions
    def _scale(self, state, inbox):
        """Round 0: the largest weight (all-gathered) and the stored entries (summed)."""
        part = state.part
        self._put(state, 0, float(part.weights.max()) if part.nnz else 0.0)
        state.red_out[0] = float(part.nnz)
        return {}

    def _after_scale(self, state):
        wmax = float(np.max(state.red_in[_HEAD::_SLOT][: state.n_parts]))
        state.shift = _shift(wmax, int(round(state.red_in[0])))
        self._level_from_partition(state)
        state.phase = "start"

    def _start(self, state, inbox):
        """Level start: every vertex alone; the owned vertices' strengths and the last bucket's
        degrees to everyone, and the sums for ``2m`` and the start modularity."""
        xp = state.xp
        if state.level > 0:
            self._receive_rows(state, inbox)
            if state.phase != "start":  # gathered on one partition, or left with nothing
                return {}
        g = state.graph
        lo, hi = int(state.bounds[state.index]), int(state.bounds[state.index + 1])
        n, N = hi - lo, state.n_level
        state.level_timing = {"level": state.level, "n": N, "move_s": 0.0, "first_round": state.steps - 1}
        state.kfix = state.twin.strengths(g.indptr, g.wfix, g.loop_fix, tune=state.config)
        deg = g.indptr[1:] - g.indptr[:-1]
        # the kernels index rows, strengths and communities by level vertex id: global-shaped
        # offsets (empty rows outside [lo, hi)) and strengths
        state.indptr_g = xp.concatenate([xp.zeros(lo, dtype=xp.int64), g.indptr,
                                         xp.full(N - hi, g.nnz, dtype=xp.int64)])
        state.comm = xp.arange(N, dtype=xp.int32)
        state.csize = xp.ones(N, dtype=xp.int32)
        out = _Outbox(xp, state.n_parts)
        owned, zero = xp.arange(lo, hi, dtype=xp.int64), xp.zeros(n, dtype=xp.int64)
        for q in range(state.n_parts):  # the strengths: every partition keeps a_c of every community
            if q != state.index:
                out.add(q, STRENGTH, owned, zero, state.kfix)
        big = xp.flatnonzero(deg > MOVE_BUCKETS[-1])
        out.to_all(BIGDEG, deg[big], xp.full(big.shape[0], state.index, dtype=xp.int64), big + lo)
        two_m = int(state.kfix.sum()) if n else 0
        internal = int(g.loop_fix.sum()) if n else 0
        red = state.red_out
        red[0:2] = _limbs(two_m, 2)
        red[2:4] = _limbs(internal, 2)
        red[4:8] = _limbs(state.twin.square_sum(state.kfix, tune=state.config), 4)
        red[8] = float(g.nnz)
        counts = _bucket_counts(deg, xp)
        for b, c in enumerate(counts):
            self._put(state, b, c)
        state.buckets = _local_buckets(deg, xp, lo)
        state.iteration = 0
        return out.build()

    def _after_start(self, state):
        red = state.red_in
        state.two_m_fix = _unlimb(red[0:2])
        state.nnz_level = int(round(red[8]))
        state.internal = _unlimb(red[2:4])  # (every vertex alone: the self-loops)
        q = modularity_of(state.internal, _unlimb(red[4:8]), state.two_m_fix, state.params["resolution"])
        state.q_current = state.q_level_start = q
        state.level_timing["nnz"] = state.nnz_level
        state.bucket_counts = np.stack([self._gathered(state, b) for b in range(len(MOVE_BUCKETS) + 1)], axis=1)
        state.batches = []
        state.phase = "decide" if (state.nnz_level and state.two_m_fix > 0) else "aggregate"
        state.batch_t = 0
        state.workspace = None

    def _decide(self, state, inbox):
        """The previous batch's moves of every partition applied; this partition's share of the
        next batch decided from that state (computeMove); its rows to every partition."""
        xp = state.xp
        if state.workspace is None:
            self._make_batches(state, inbox)
            self._receive_strengths(state, inbox)
        else:
            self._apply_moves(state, inbox)
        if state.batch_t == 0:  # a sweep starts: what an undo restores
            state.saved = tuple(a.copy() for a in (state.comm, state.csize, state.afix))
            state.d_internal = 0
        b, j = state.batches[state.batch_t]
        gm = state.params["resolution"] / float(state.two_m_fix)
        verts = state.twin.decide_moves(state.indptr_g, state.graph.indices, state.graph.wfix, state.kfix_g, state.comm,
                                        state.csize, state.afix, gm, state.workspace, b, j, tune=state.config)
        new = state.workspace["new_comm"][verts]
        if xp is np:  # (see the module notes: a selection here reads nothing back)
            moved = new != state.comm[verts]
            verts, new = verts[moved], new[moved]
        state.batch_t += 1
        state.phase = "decide" if state.batch_t < len(state.batches) else "close"
        k = int(verts.shape[0])
        if k == 0:
            return {}
        rows = xp.empty((k, 4), dtype=xp.int64)
        rows[:, 0] = MOVE
        rows[:, 1] = verts
        rows[:, 2] = new
        rows[:, 3] = 0
        msg = Messages(rows, xp.zeros(k, dtype=xp.float64))
        return dict.fromkeys(range(state.n_parts), msg)  # (its own come back in the next step)

    def _apply_moves(self, state, inbox) -> None:
        """A batch's ``MOVE`` rows of every partition (a decide round's only messages), and the
        change of the internal weight that the owned vertices' moves make (an int from the CPU
        twin, a device scalar from the GPU twin: summed without a read back)."""
        lo, hi = int(state.bounds[state.index]), int(state.bounds[state.index + 1])
        g = state.graph
        change = state.twin.apply_move_rows(inbox.ints, state.comm, state.csize, state.afix, state.kfix_g,
                                            tune=state.config, graph=(state.indptr_g, g.indices, g.wfix, lo, hi),
                                            workspace=state.workspace)
        state.d_internal = state.d_internal + change  # (a new value: a forked state keeps its own)

    def _close(self, state, inbox):
        """A sweep's last batch applied; the sums of modularity for the all-reduce: this
        partition's share of the sweep's change of the internal weight (modulo ``2**60``: it may
        be negative) and ``sum a_c^2`` of the owned communities."""
        self._apply_moves(state, inbox)
        lo, hi = int(state.bounds[state.index]), int(state.bounds[state.index + 1])
        state.red_out[0:2] = _limbs(int(state.d_internal) % (1 << FIXED_BITS), 2)
        state.red_out[2:6] = _limbs(state.twin.square_sum(state.afix[lo:hi], tune=state.config), 4)
        state.phase = "decide"
        return {}

    def _after_close(self, state):
        red = state.red_in
        # the shares of the change (exact modulo 2**60; 2m is below)
        internal = (state.internal + _unlimb(red[0:2])) % (1 << FIXED_BITS)
        q = modularity_of(internal, _unlimb(red[2:6]), state.two_m_fix, state.params["resolution"])
        state.iteration += 1
        gain = q - state.q_current
        state.batch_t = 0
        if gain < 0:  # the sweep lowered Q: undo it and end the phase, on every partition alike
            state.comm, state.csize, state.afix = state.saved
            state.phase = "aggregate"
        else:
            state.q_current, state.internal = q, internal
            if gain < state.threshold(q) or state.iteration >= state.params["max_iterations"]:
                state.phase = "aggregate"
        state.saved = None
        state.level_timing["iterations"] = state.iteration
        state.event = True

    def _make_batches(self, state, inbox) -> None:
        """This partition's share of every global batch (see the module notes)."""
        xp, cfg = state.xp, state.config
        counts = state.bucket_counts  # (partitions, buckets)
        totals = counts.sum(axis=0)
        before = counts[: state.index].sum(axis=0)
        local = []
        state.batches = []
        last = len(MOVE_BUCKETS)
        for b, verts in enumerate(state.buckets):
            nb = int(totals[b])
            s = cfg.move_slices if nb >= cfg.move_slice_min else 1
            k = min(s, nb)
            if b < last:
                pos = xp.arange(verts.shape[0], dtype=xp.int64) + int(before[b])
            else:  # largest degree first, ties by id: rank among every partition's degrees
                deg, part_of, _ = _of_kind(inbox, BIGDEG)
                mine = (state.indptr_g[verts + 1] - state.indptr_g[verts]).astype(xp.int64)
                if verts.shape[0]:
                    srt = xp.sort(deg)
                    larger = srt.shape[0] - xp.searchsorted(srt, mine, side="right")
                    earlier = xp.sort(deg[part_of < state.index])
                    same_before = (xp.searchsorted(earlier, mine, side="right")
                                   - xp.searchsorted(earlier, mine, side="left"))
                    # by degree, largest first, then id: one sort of unique keys (below 2**62)
                    order = xp.argsort((state.n_level - mine) * state.n_level + verts.astype(xp.int64))
                    ranks = xp.empty_like(order)
                    ranks[order] = xp.arange(order.shape[0])
                    # rank among this partition's equal degrees = rank - those of larger degree here
                    local_larger = verts.shape[0] - xp.searchsorted(xp.sort(mine), mine, side="right")
                    pos = larger + same_before + (ranks - local_larger)
                    verts = verts[order]  # the global batch order (largest degree first)
                    pos = pos[order]
                else:
                    pos = xp.zeros(0, dtype=xp.int64)
            local.append([xp.ascontiguousarray(verts[pos % s == j]) for j in range(k)])
            state.batches.extend((b, j) for j in range(k))
        deg = state.graph.indptr[1:] - state.graph.indptr[:-1]
        max_degree = int(deg.max()) if deg.shape[0] else 0
        state.workspace = state.twin.make_move_workspace(state.n_level, max_degree, state.buckets,
                                                         slices=[len(x) for x in local], batches=local)

    def _receive_strengths(self, state, inbox) -> None:
        """The level's start: every vertex's strength, each alone in its community (new arrays:
        a forked state shares the old ones)."""
        xp = state.xp
        lo, hi = int(state.bounds[state.index]), int(state.bounds[state.index + 1])
        v, _, k = _of_kind(inbox, STRENGTH)
        kfix_g = xp.zeros(state.n_level, dtype=xp.int64)
        kfix_g[lo:hi] = state.kfix
        kfix_g[v] = k
        state.kfix_g, state.afix = kfix_g, kfix_g.copy()

    # ---------------------------------------------------------------- aggregation
    def _aggregate(self, state, inbox):
        """Aggregation, first round: whether anything moved (summed by the all-reduce)."""
        xp = state.xp
        lo, hi = int(state.bounds[state.index]), int(state.bounds[state.index + 1])
        moved = int((state.comm[lo:hi] != xp.arange(lo, hi, dtype=xp.int32)).sum()) if hi > lo else 0
        state.red_out[0] = float(moved)
        return {}

    def _after_aggregate(self, state):
        changed = state.red_in[0] > 0
        level_gain = state.q_current - state.q_level_start
        state.level_timing.setdefault("iterations", state.iteration)
        if not changed:
            if not state.maps:  # nothing moved at all: every vertex is its own community
                lo, hi = int(state.bounds[state.index]), int(state.bounds[state.index + 1])
                state.maps.append(np.arange(lo, hi, dtype=np.int64))
                state.modularity.append(state.q_current)
            self._close_level(state)
            state.phase = "done"
            state.event = True
            return
        state.stop_after = (state.level + 1 >= state.params["max_level"]
                            or level_gain < state.threshold(state.q_current))
        state.phase = "agg_edges"

    def _agg_edges(self, state, inbox):
        """New ids: the non-empty communities numbered in id order, the same on every partition
        (the sizes are), which is the order of a prefix sum over the owners' counts. Record the
        level; unless the levels end here, start mapping the owned rows to community pairs, a
        slice of rows a round (:meth:`_agg_send`)."""
        xp = state.xp
        lo, hi = int(state.bounds[state.index]), int(state.bounds[state.index + 1])
        # non-empty communities before each id (0 .. N): the new ids and each owner's first
        below = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(state.csize > 0, dtype=xp.int64)])
        state.nid_offsets = to_numpy(below[xp.asarray(state.bounds)]).astype(np.int64)
        state.n_new = int(state.nid_offsets[-1])
        nid_g = below[1:] - 1
        del below
        src = nid_g[state.comm[lo:hi]]
        state.maps.append(src)  # (to the host at the end, with the run's result)
        state.modularity.append(state.q_current)
        state.event = True
        self._close_level(state)
        state.level += 1
        if state.stop_after:
            state.phase = "done"
            return {}
        state.iteration = 0
        # what the moves needed and the mapping does not: freed before the coarse entries come
        state.workspace = state.saved = None
        state.indptr_g = state.kfix_g = state.csize = state.afix = None
        state.nid_g, state.src = nid_g, src
        state.cuts = _row_slices(state.graph.indptr, state.config.aggregate_entries)
        state.acc_keys, state.acc_w, state.acc_loops = [], [], []
        return self._agg_send(state, inbox)  # (it holds no coarse entries yet)

    def _agg_send(self, state, inbox):
        """Keep the coarse entries received; map the next slice of owned rows (and their
        self-loops) to community pairs ``(C(u), C(v))`` in new ids, merge duplicates, and send
        each to the owner of its source community (this partition's own stay here). The
        all-reduce counts the partitions with slices left."""
        self._take_edges(state, inbox)
        out = _Outbox(state.xp, state.n_parts)
        if state.cuts:
            keys, w = _coarse_slice(state, *state.cuts.pop(0))
            self._route(state, out, keys, w, state.nid_offsets)
        state.red_out[0] = float(bool(state.cuts))
        state.phase = "agg_send"
        return out.build()

    def _after_agg_send(self, state):
        if state.phase != "done" and state.red_in[0] == 0:  # every partition has sent its last slice
            state.phase = "agg_merge"

    _after_agg_edges = _after_agg_send

    def _route(self, state, out, keys, w, bounds) -> None:
        """Coarse entries ``keys = src * n_new + dst`` (sorted) to the partitions of ``bounds``
        owning their sources; those of this partition go straight to its received ones."""
        xp, n_new = state.xp, state.n_new
        dest = _owner(bounds, keys // n_new, xp)
        mine = dest == state.index
        if bool(mine.all()):
            state.acc_keys.append(keys)
            state.acc_w.append(w)
            return
        state.acc_keys.append(keys[mine])
        state.acc_w.append(w[mine])
        other = ~mine
        keys, w, dest = keys[other], w[other], dest[other]
        out.add(dest, EDGE, keys // n_new, keys % n_new, w)

    def _take_edges(self, state, inbox) -> None:
        """Keep the coarse entries (``EDGE``) and self-loops (``LOOP``) of a round's messages."""
        s, d, w = _of_kind(inbox, EDGE)
        if s.shape[0]:  # (kept sorted: _merge_keys cuts the pieces by key)
            keys, (w,) = _by_key(s * state.n_new + d, [w.copy()], state.xp, check=True)
            state.acc_keys.append(keys)
            state.acc_w.append(w)
        v, _, lw = _of_kind(inbox, LOOP)
        if v.shape[0]:
            state.acc_loops.append((v.copy(), lw.copy()))

    def _agg_merge(self, state, inbox):
        """Merge the coarse entries received (the rows of the new ids of this partition's
        communities); their count goes to the all-gather that places the next level."""
        xp = state.xp
        self._take_edges(state, inbox)
        # the level graph is done with: free it before the merge's sort, and the input partition
        # too (the first level's graph shares its indices; the engine holds no other reference
        # to a copy it made for the run, while a partition resident on the device stays)
        state.graph = state.comm = state.nid_g = state.src = state.part = None
        keys, w = _merge_keys(state.acc_keys, state.acc_w, xp, state.config.aggregate_entries)
        state.acc_keys, state.acc_w = [], []
        n_new = state.n_new
        lo_new, hi_new = int(state.nid_offsets[state.index]), int(state.nid_offsets[state.index + 1])
        # (one column at a time, each old array freed as its filtered copy is made: at most
        # four 8-byte values per coarse entry at once)
        s = keys // n_new
        self_loop = s == keys % n_new
        loop = xp.zeros(hi_new - lo_new, dtype=xp.int64)
        loop[s[self_loop] - lo_new] = w[self_loop]
        del s
        e = ~self_loop
        del self_loop
        keys = keys[e]
        w = w[e]
        del e
        counts = xp.bincount(keys // n_new - lo_new, minlength=hi_new - lo_new) if keys.shape[0] else \
            xp.zeros(hi_new - lo_new, dtype=xp.int64)
        state.new_rows = (keys, w, loop, counts)
        self._put(state, 0, int(keys.shape[0]))
        state.phase = "agg_cut"
        return {}

    def _after_agg_merge(self, state):
        nnz = self._gathered(state, 0)
        state.nnz_level = int(nnz.sum())
        state.n_level = state.n_new
        limit = state.config.gather_edges
        if limit is None:
            limit = GATHER_EDGES_GPU if state.device == "gpu" else GATHER_EDGES_CPU
        if state.nnz_level <= limit:  # small: partition 0 finishes alone
            state.bounds = np.asarray([0] + [state.n_new] * state.n_parts, dtype=np.int64)
            state.phase = "agg_move"
        else:
            state.edge_offsets = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)

    def _agg_cut(self, state, inbox):
        """Cut the coarse graph into ranges of equal stored-entry count (``Graph.partition``'s
        rule): cut ``k`` is 1 plus the number of rows whose entries end before ``k E / P``; each
        partition counts its own rows."""
        xp = state.xp
        counts = state.new_rows[3]
        # (entry counts below 2**53: exact as floats, compared with the float targets as
        # Graph.partition compares them)
        ends = (xp.cumsum(counts.astype(xp.int64)) + int(state.edge_offsets[state.index])).astype(xp.float64)
        P = state.n_parts
        targets = np.arange(1, P) * (state.nnz_level / P)
        if ends.shape[0]:
            below = to_numpy(xp.searchsorted(ends, xp.asarray(targets), side="left"))
        else:
            below = np.zeros(P - 1)
        state.red_out[_HEAD : _HEAD + P - 1] = below
        state.phase = "agg_move"
        return {}

    def _after_agg_cut(self, state):
        P = state.n_parts
        cuts = np.rint(state.red_in[_HEAD : _HEAD + P - 1]).astype(np.int64) + 1
        cuts = np.clip(cuts, 0, state.n_new)
        state.bounds = np.maximum.accumulate(np.concatenate([[0], cuts, [state.n_new]])).astype(np.int64)

    def _agg_move(self, state, inbox):
        """Send the coarse rows to their partitions of the next level, ``aggregate_entries`` a
        round (the self-loops with the first), and keep those received; rows that stay here do
        not move. The all-reduce counts the partitions with rows left to send."""
        xp = state.xp
        self._take_edges(state, inbox)
        out = _Outbox(xp, state.n_parts)
        if state.new_rows is not None:
            keys, w, loop, _ = state.new_rows
            if loop is not None:  # the first round: the self-loops; the rows' slices
                lo_new = int(state.nid_offsets[state.index])
                v = xp.flatnonzero(loop)
                dest = _owner(state.bounds, v + lo_new, xp)
                mine = dest == state.index
                state.acc_loops.append((v[mine] + lo_new, loop[v[mine]]))
                v = v[~mine]
                out.add(dest[~mine], LOOP, v + lo_new, xp.zeros_like(v), loop[v])
                size, nnz = state.config.aggregate_entries, int(keys.shape[0])
                state.cuts = [(at, min(at + size, nnz)) for at in range(0, nnz, size)]
                state.new_rows = (keys, w, None, None)
            if state.cuts:
                a, b = state.cuts.pop(0)
                self._route(state, out, keys[a:b], w[a:b], state.bounds)
            if not state.cuts:
                state.new_rows = None
        state.red_out[0] = float(bool(state.cuts))
        return out.build()

    def _after_agg_move(self, state):
        if state.red_in[0] == 0:  # every partition has sent its last rows
            state.phase = "start"

    def _receive_rows(self, state, inbox) -> None:
        """The next level's rows from the coarse entries received; a partition that owns the
        whole level goes on alone, one that owns nothing of a gathered level stops."""
        xp = state.xp
        self._take_edges(state, inbox)
        lo, hi = int(state.bounds[state.index]), int(state.bounds[state.index + 1])
        n, n_new = hi - lo, state.n_new
        # (each coarse entry arrives once)
        keys, w = _merge_keys(state.acc_keys, state.acc_w, xp, state.config.aggregate_entries, unique=True)
        state.acc_keys, state.acc_w = [], []
        s = keys // n_new
        indptr = xp.zeros(n + 1, dtype=xp.int64)
        if s.shape[0]:
            indptr[1:] = xp.cumsum(xp.bincount(s - lo, minlength=n))
        del s
        loop = xp.zeros(n, dtype=xp.int64)
        for lv, lw in state.acc_loops:
            loop[lv - lo] = lw
        state.acc_loops = []
        state.graph = _LevelGraph(indptr, (keys % n_new).astype(xp.int32), w, loop)
        del keys
        if n == state.n_level and state.n_parts > 1 and n > 0:  # gathered here: go on alone
            _start_local(state)
            state.level_timing["first_round"] = state.steps - 1
            return
        sizes = np.diff(state.bounds)
        if n == 0 and (sizes == state.n_level).any() and state.n_level > 0:  # gathered elsewhere
            state.phase = "done"
            return

    def _close_level(self, state) -> None:
        state.level_timing["modularity"] = state.q_current
        state.timings["levels"].append(state.level_timing)  # (its later aggregation rounds still add to it)


def _coarse_slice(state: LouvainState, a: int, b: int, e0: int, e1: int):
    """The coarse entries of the owned rows ``a .. b - 1`` (stored entries ``e0 .. e1 - 1``)
    and of their self-loops: keys ``C(u) * n_new + C(v)`` in new ids (a self-loop's
    ``(C(u), C(u))``), sorted and unique, and their summed weights.

    The entries' keys sorted and summed (any device), or on a CPU, for a slice of at least as
    many entries as the level has vertices, the twin's aggregation
    (:func:`_coarse_slice_hashed`): NumPy sorts on one thread, and on kron k=16 a partition's
    slice of 2.4M entries took 0.32 s sorted against 0.05 s hashed on every thread. The
    aggregation goes over every vertex of the level and takes some 80 bytes of scratch per
    vertex, so a smaller slice is sorted: the time and memory of a slice stay in proportion to
    its entries (``LouvainConfig.aggregate_entries``). On a GPU the sort keeps up with one
    partition's hash aggregation (half of kron k=23 sorted in 0.155 s, all of it hashed in
    0.31 s)."""
    if state.xp is np and e1 - e0 >= state.n_level:
        return _coarse_slice_hashed(state, a, b, e0, e1)
    return _coarse_slice_sorted(state, a, b, e0, e1)


def _coarse_slice_sorted(state: LouvainState, a: int, b: int, e0: int, e1: int):
    """:func:`_coarse_slice` by sorting the slice's entries by key and summing equal keys."""
    xp, g, n_new = state.xp, state.graph, state.n_new
    src = state.src[a:b]
    s_e = _repeat(src, g.indptr[a + 1 : b + 1] - g.indptr[a:b], xp)
    d_e = state.nid_g[state.comm[g.indices[e0:e1]]]
    keys = xp.concatenate([s_e * n_new + d_e, src * n_new + src])
    w = xp.concatenate([g.wfix[e0:e1], g.loop_fix[a:b]])
    del s_e, d_e
    keys, (w,) = _sum_by_key(keys, [w], xp)
    return keys, w


def _coarse_slice_hashed(state: LouvainState, a: int, b: int, e0: int, e1: int):
    """:func:`_coarse_slice` by the twin's aggregation (Algorithm 3) of a level-shaped graph
    holding only the slice's rows: every partition knows ``C`` of the whole level, so the new
    ids are the level's (non-empty communities in id order). Self-loops of zero weight are left
    out (the merge reads a missing one as zero)."""
    xp, g, n_new = state.xp, state.graph, state.n_new
    lo, N = int(state.bounds[state.index]), state.n_level
    indptr = xp.zeros(N + 1, dtype=xp.int64)
    indptr[lo + a : lo + b + 1] = g.indptr[a : b + 1] - e0
    indptr[lo + b + 1 :] = e1 - e0
    loops = xp.zeros(N, dtype=xp.int64)
    loops[lo + a : lo + b] = g.loop_fix[a:b]
    new_indptr, new_indices, new_w, new_loop, _ = state.twin.aggregate(
        indptr, g.indices[e0:e1], g.wfix[e0:e1], loops, state.comm, tune=state.config)
    del indptr, loops
    src = _repeat(xp.arange(n_new, dtype=xp.int64), new_indptr[1:] - new_indptr[:-1], xp)
    looped = xp.flatnonzero(new_loop)
    keys = xp.concatenate([src * n_new + new_indices, looped * n_new + looped])
    w = xp.concatenate([new_w, new_loop[looped]])
    keys, (w,) = _by_key(keys, [w], xp)
    return keys, w


def _shift(wmax: float, nnz: int) -> int | None:
    """The fixed-point scale's exponent: weights times ``2**shift`` keep every sum of weights
    below ``2**60`` (``None`` when no weight is positive)."""
    if wmax <= 0:
        return None
    return FIXED_BITS - math.frexp(wmax)[1] - int(nnz).bit_length()


def _fixed_point(twin, weights, shift: int):
    """``rint(weights * 2**shift)`` as int64. Tiny weights (below about 1e-290) need a shift
    whose power of two a float cannot hold, so the weights are first scaled by part of it:
    multiplying by a power of two is exact, so the result is the same."""
    if shift <= 1000:
        return twin.fixed_point(weights, math.ldexp(1.0, shift))
    half = shift // 2
    return twin.fixed_point(weights * math.ldexp(1.0, shift - half), math.ldexp(1.0, half))


def _bucket_counts(deg, xp) -> list:
    lo, out = 0, []
    for hi in MOVE_BUCKETS:
        out.append(int(((deg > lo) & (deg <= hi)).sum()) if deg.shape[0] else 0)
        lo = hi
    out.append(int((deg > lo).sum()) if deg.shape[0] else 0)
    return out


def _local_buckets(deg, xp, lo: int) -> list:
    """The owned vertices of each computeMove bucket, as level ids in ascending order."""
    out, a = [], 0
    for b in MOVE_BUCKETS:
        out.append((xp.flatnonzero((deg > a) & (deg <= b)) + lo).astype(xp.int32))
        a = b
    out.append((xp.flatnonzero(deg > a) + lo).astype(xp.int32))
    return out


# ===================================================== one partition: Algorithm 1 and 3
def _degree_buckets(indptr, xp) -> list:
    """Vertices of each computeMove bucket (Algorithm 1 line 5); the last sorted by degree, largest first.

    Every bucket is in the same order on both devices (ascending ids; the last by a stable sort
    on degree), so the batches ``bucket[j::move_slices]`` are the same too.
    """
    if xp is np:  # one compiled pass on every thread
        return _twin("cpu").degree_buckets(indptr, MOVE_BUCKETS)
    deg = indptr[1:] - indptr[:-1]
    out = _local_buckets(deg, xp, 0)
    big = out[-1]
    if big.shape[0]:
        d = deg[big]
        out[-1] = big[xp.argsort(-d, kind="stable")] if xp is np else big[xp.argsort(-d)]
    return out


def _move_slices(config: LouvainConfig, buckets) -> list:
    """Batches per bucket: ``move_slices``, or 1 for buckets below ``move_slice_min`` vertices."""
    return [config.move_slices if int(b.shape[0]) >= config.move_slice_min else 1 for b in buckets]


def _start_local(state: LouvainState) -> None:
    """Every vertex of the level graph alone in its community; k_i, a_c, buckets, Q."""
    xp, g = state.xp, state.graph
    state.kfix = state.twin.strengths(g.indptr, g.wfix, g.loop_fix, tune=state.config)  # k_i, Algorithm 1 line 2
    state.kfix_g = state.kfix
    state.two_m_fix = int(state.kfix.sum()) if g.n else 0
    state.n_level = g.n
    state.nnz_level = g.nnz
    state.comm = xp.arange(g.n, dtype=xp.int32)
    state.csize = xp.ones(g.n, dtype=xp.int32)
    state.afix = state.kfix.copy()
    state.buckets = _degree_buckets(g.indptr, xp)
    max_degree = int((g.indptr[1:] - g.indptr[:-1]).max()) if g.n else 0
    state.workspace = state.twin.make_move_workspace(g.n, max_degree, state.buckets,
                                                     slices=_move_slices(state.config, state.buckets))
    state.iteration = 0
    # every vertex alone: its weight to its own community is its self-loop (a level graph holds
    # self-loops in loop_fix only), so the internal weight needs no pass over the entries
    state.q_current = _local_modularity(state, int(g.loop_fix.sum()) if g.n else 0)
    state.q_level_start = state.q_current
    state.level_timing = {"level": state.level, "n": g.n, "nnz": g.nnz, "move_s": 0.0,
                          "first_round": state.steps}
    state.phase = "move" if (g.nnz and state.two_m_fix > 0) else "aggregate_local"


def _copy(a, xp):
    """A copy of ``a``; on the CPU by every thread when large (a sweep's snapshot of the level)."""
    if xp is np and a.shape[0] >= 1 << 16:
        from ..cpu.graph_build import copy_parallel  # noqa: PLC0415

        out = np.empty_like(a)
        copy_parallel(a, out)
        return out
    return a.copy()


def _local_modularity(state: LouvainState, internal: int) -> float:
    """Eq. (1) on the level graph, from the fixed-point weights and the internal weight
    ``internal`` (its first term: over every vertex, its self-loop and its edges' weights into
    its own community), which is kept."""
    state.internal = internal
    if state.two_m_fix <= 0:
        return 0.0
    square_sum = state.twin.square_sum(state.afix, tune=state.config)
    return modularity_of(internal, square_sum, state.two_m_fix, state.params["resolution"])


def _local_sweep(state: LouvainState) -> None:
    """One iteration of Algorithm 1 (lines 4-11); the sweep's modularity decides termination."""
    g = state.graph
    saved = tuple(_copy(a, state.xp) for a in (state.comm, state.csize, state.afix)) + (state.internal,)
    gamma_over_2m = state.params["resolution"] / float(state.two_m_fix)
    # (the change of the internal weight: an int from the CPU twin, a device scalar from the GPU's)
    change = state.twin.move_sweep(g.indptr, g.indices, g.wfix, state.kfix, state.comm, state.csize, state.afix,
                                   state.buckets, gamma_over_2m, state.workspace, tune=state.config)
    q = _local_modularity(state, state.internal + int(change))  # read back per sweep
    state.iteration += 1
    gain = q - state.q_current
    if gain < 0:  # simultaneous moves lowered Q: undo the sweep and end the phase
        state.comm, state.csize, state.afix, state.internal = saved
        state.phase = "aggregate_local"
    else:
        state.q_current = q
        if gain < state.threshold(q) or state.iteration >= state.params["max_iterations"]:
            state.phase = "aggregate_local"
    state.level_timing["iterations"] = state.iteration


def _local_aggregate(state: LouvainState) -> None:
    """Record the level, then Algorithm 3 unless the levels have converged."""
    g, xp = state.graph, state.xp
    changed = bool((state.comm != xp.arange(g.n, dtype=xp.int32)).any()) if g.n else False
    level_gain = state.q_current - state.q_level_start
    timing = state.level_timing
    timing.setdefault("iterations", state.iteration)
    if not changed:
        if state.compose and not state.levels:  # nothing moved at all: every vertex is its own community
            state.levels.append(state.orig_to_level.copy())
            state.modularity.append(state.q_current)
        elif not state.compose and not state.maps:
            state.maps.append(xp.arange(g.n, dtype=xp.int64))
            state.modularity.append(state.q_current)
        _close_local(state)
        state.phase = "done"
        return
    # the move phase's state is rebuilt for the next level: free it before the edge lists grow
    state.workspace, state.buckets, state.kfix, state.kfix_g, state.csize, state.afix = None, [], None, None, None, None
    new_indptr, new_indices, new_wfix, new_loop, new_id = state.twin.aggregate(
        g.indptr, g.indices, g.wfix, g.loop_fix, state.comm, tune=state.config
    )
    if state.compose:
        if xp is np:  # one parallel gather into a new array
            state.orig_to_level = state.twin.compose_labels(new_id, state.comm, state.orig_to_level)
        else:
            state.orig_to_level = new_id[state.comm][state.orig_to_level]
        state.levels.append(state.orig_to_level)  # (never written in place: each level's is new)
    else:
        state.maps.append(new_id[state.comm].astype(xp.int64))
    state.modularity.append(state.q_current)
    _close_local(state)
    state.level += 1
    if state.level >= state.params["max_level"] or level_gain < state.threshold(state.q_current):
        state.phase = "done"
        return
    state.graph = _LevelGraph(new_indptr, new_indices, new_wfix, new_loop)
    _start_local(state)


def _close_local(state: LouvainState) -> None:
    state.level_timing["modularity"] = state.q_current
    state.timings["levels"].append(state.level_timing)


def _reraise_oom(exc: Exception, n: int, nnz: int) -> None:
    """Turn a CUDA out-of-memory error into a :class:`ResourceError` naming the graph size."""
    if out_of_device_memory(exc):
        raise ResourceError(
            f"the GPU ran out of memory running louvain on a graph with {n} vertices and "
            f"{nnz} stored edges: {exc}"
        ) from None

