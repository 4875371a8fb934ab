"""Maximum cardinality bipartite matching: push-relabel (G-PR) and augmenting-path BFS (APFB, APsB).

Rows are ``V_R`` and columns ``V_C``, as in the papers. One driver serves every device: it picks
the CPU twins (:mod:`mgmatch.cpu.bipartite`, Numba) or the GPU twins
(:mod:`mgmatch.gpu.bipartite`, CUDA kernels in ``kernels/bipartite.cu``) and runs the paper's
outer loop over them:

* **G-PR** [1]_ (Algorithms 3 and 7): global relabeling ``G-GR`` (a level-synchronous BFS from
  the unmatched rows, one ``G-GR-KRNL`` launch per level) before the first push and then after
  ``k * maxLevel`` push launches (``relabel="adaptive"``) or every ``ceil(k)`` launches
  (``relabel="fixed"``); lock- and atomic-free pushes that tolerate an inconsistent ``mu``,
  repaired by ``FIXMATCHING`` at the end. Variants: ``"first"`` (Algorithm 6, a thread per
  column), ``"noshrink"`` (Algorithms 7 to 9 with the active-column lists ``A_c``/``A_p`` and
  the ``iA`` guard) and ``"shrink"`` (also ``G-PR-SHRKRNL``, compacting the lists after a global
  relabeling when at least 512 slots remain).
* **APFB / APsB** [2]_: BFS from all unmatched columns (``GPUBFS``, or ``GPUBFS-WR`` with the root
  array, its early exit and, for APsB, the level encoding), then ``ALTERNATE`` and
  ``FIXMATCHING``, until no augmenting path is left. APsB stops each BFS at the first level that
  reaches an unmatched row (shortest paths, like Hopcroft-Karp); APFB runs it to the end.
  Launch modes on the GPU: ``"persistent"`` (the default: one cooperative launch runs every
  phase, with a group of lanes per frontier column and no host round trip), and the papers'
  ``"ct"`` (a launch per level, a constant number of threads, several vertices each) and ``"mt"``
  (a thread per vertex). The persistent kernel claims each path end and its root by
  compare-and-swap, so with GPUBFS-WR a phase augments vertex-disjoint paths, one per BFS tree;
  APsB's level encoding is then not needed. For APFB it runs each phase's search as one FIFO
  work queue, with no barrier between levels: APFB needs every column reachable from a root
  that has no path yet, not the level order, and on meshes most of a phase is hundreds of
  levels with small frontiers, where the barriers cost as much as the work. APsB needs the
  levels (it stops at the first that finds a path), so it runs them one by one, separated by
  grid-wide barriers. On the CPU the launch mode changes nothing.

On the CPU the twins run the kernels' parallel loops on Numba's threads (``threads=``; see
:mod:`mgmatch.cpu.bipartite`): every BFS level (APFB/APsB's searches, G-GR) whose frontier holds
at least :attr:`BipartiteConfig.cpu_parallel_min_edges` edges is shared among them, smaller
ones run on the calling thread.

Both start from an initial matching: ``"cheap"`` (greedy, the papers' default), ``"karp-sipser"``
or ``"none"``. Times of the algorithm proper (``timings["match"]``) exclude the initial matching
(``timings["init"]``), as the papers report them.

A non-bipartite (undirected) :class:`~mgmatch.graph.Graph` is matched as its bipartite double
cover (its symmetric matrix read as rows x columns). Explicitly stored zeros are edges unless the
graph was built with ``zeros="drop"``; SciPy's ``maximum_bipartite_matching`` counts them too.

References
----------
.. [1] M. Deveci, K. Kaya, B. Ucar, U. V. Catalyurek, "A push-relabel-based maximum cardinality
   bipartite matching algorithm on GPUs", ICPP 2013.
.. [2] M. Deveci, K. Kaya, B. Ucar, U. V. Catalyurek, "GPU accelerated maximum cardinality
   matching algorithms for bipartite graphs", Euro-Par 2013.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from .._array import to_numpy
from ..engine import Messages, execute
from ..engine.config import ConfigScope, check_amount, check_count
from ..errors import ParameterError, ResourceError, out_of_device_memory
from ..gpu import tunables as _gpu_defaults
from ..convert import attach_mapping, coerce_input
from ..graph import Graph

__all__ = ["bipartite_matching", "BipartiteMatchingResult", "BipartiteConfig", "bipartite_config",
           "get_bipartite_config", "check_parameters", "estimate_gpu_bytes"]

ALGORITHMS = ("gpr", "apfb", "apsb")
INITS = ("cheap", "karp-sipser", "none")
VARIANTS = ("first", "noshrink", "shrink")
RELABELS = ("adaptive", "fixed")
BFS_KERNELS = ("gpubfs-wr", "gpubfs")
LAUNCHES = ("persistent", "ct", "mt")
SHRINK_MIN = 512  # [1], Algorithm 7 line 11: shrink only lists of at least this many slots
_INT32_MAX = np.iinfo(np.int32).max
_GROUPS = (4, 8, 16, 32)  # lanes per frontier column: a power of two up to a warp


# ----------------------------------------------------------------------------- tunables
@dataclass(frozen=True)
class BipartiteConfig:
    """Tunables of bipartite matching, validated once and passed down: a run reads the object in
    force when it starts (:func:`bipartite_config`) and hands it to the CPU twins' threads and
    to every GPU launch that has tunables, on a cluster's worker too. None of them changes the
    cardinality.

    Attributes
    ----------
    cpu_parallel_min_edges : int
        On CPU threads, a BFS level whose frontier holds fewer edges than this (its length
        times the mean degree), or a sweep over fewer than 8 times this many vertices, runs on
        the calling thread, and a graph of fewer than 128 times this many edges (2^22 by
        default) is searched as on one thread: a parallel loop costs microseconds to start and
        end, on meshes most of a phase's levels are small, and a graph that stays in cache
        spends a few nanoseconds an edge. (1 shares every loop, as the tests do on small
        graphs.)
    persistent_block : int
        The persistent GPU kernel: threads per block, a multiple of 32 (a warp) up to 1024 (the
        kernel is compiled for blocks of up to 1024 threads, at most 64 registers a thread).
        Default 512: two such blocks fill a multiprocessor's registers.
    persistent_blocks_per_sm : int
        The persistent GPU kernel: most resident blocks per multiprocessor; the launch takes
        fewer where the device cannot hold that many at once (a cooperative launch needs every
        block resident). Default 2, with ``persistent_block`` 512 as many as stay resident.
    persistent_group : {4, 8, 16, 32} or None
        Lanes that expand one frontier column in the persistent kernel and in the deterministic
        GPU search. ``None`` (the default): the mean column degree rounded up to a power of two
        between 4 and 32, or ``queue_group`` for the work queue.
    persistent_local : int
        The persistent kernel's levels run by block 0 alone, with block barriers instead of
        grid barriers, while the frontier fits this many rounds of the block's lane groups (at
        most this many columns per group; 0: never): the long tails of a phase (few roots, long
        paths) then cost a block barrier per level instead of a grid barrier, while a wider
        frontier keeps the whole grid. Default 2.
    persistent_queue : bool or None
        APFB's search in the persistent kernel as one work queue per phase (no barrier between
        levels, ``True``) or level by level (``False``). ``None`` (the default) takes the queue
        on graphs whose mean column degree is at most ``queue_max_mean_degree``. APsB always
        runs level by level (it stops at the first level that finds a path).
    queue_max_mean_degree : int or float
        The largest mean column degree (edges per column) of a graph whose APFB search
        ``persistent_queue=None`` runs as a work queue, at least 0. Default 8: the queue is
        faster on meshes and grids, whose phases are hundreds of levels with small frontiers,
        and slower on graphs with hubs, whose levels are few and wide (docs/performance.md,
        section "Bipartite matching on the GPU: launch modes and thresholds").
    queue_group : {4, 8, 16, 32}
        Lanes per frontier column of the work queue when ``persistent_group`` is None. Default 4:
        more columns in flight hide the latency of each.
    queue_max_roots : int or None
        The work queue takes only the phases that start with at most this many roots (a positive
        integer), the others run level by level; ``None`` (the default): every phase. A bound
        gained a little on meshes but lost more on a grid with edges deleted, whose phases keep
        thousands of roots for long (docs/performance.md, section "Bipartite matching on the
        GPU: launch modes and thresholds"), so it is off by default.
    persistent_defines : tuple of (str, int) pairs
        Compile-time settings of the persistent kernel (defines of ``kernels/bipartite.cu``,
        part of the kernel cache key): ``MGM_EDGES_PER_LANE`` (edges a lane takes per step
        with int32 indices, at least 1), ``MGM_CLAIM_TEST`` (1: read a column's level before
        the compare-and-swap that claims it; 0: not) and ``MGM_QUEUE_BACKOFF_NS`` (the longest
        pause of a warp waiting on the work queue, in nanoseconds; 0: none). A mapping or pairs
        are accepted and kept as pairs sorted by name. Empty (the default): the kernel's own
        values, 2, 1 and 64 (the kernel's comments give the measurements behind the first two).
    deterministic_blocks : int or None
        Blocks of the deterministic GPU kernels' launches (a positive integer); ``None`` (the
        default): a constant-thread grid, as ``launch="ct"``. Their result does not depend on it.

    >>> with bipartite_config(persistent_queue=False, persistent_defines={"MGM_CLAIM_TEST": 0}):
    ...     c = get_bipartite_config()
    >>> c.persistent_queue, c.persistent_defines
    (False, (('MGM_CLAIM_TEST', 0),))
    """

    cpu_parallel_min_edges: int = 32768
    persistent_block: int = _gpu_defaults.PERSISTENT_BLOCK
    persistent_blocks_per_sm: int = _gpu_defaults.PERSISTENT_BLOCKS_PER_SM
    persistent_group: int | None = _gpu_defaults.PERSISTENT_GROUP
    persistent_local: int = _gpu_defaults.PERSISTENT_LOCAL
    persistent_queue: bool | None = _gpu_defaults.PERSISTENT_QUEUE
    queue_max_mean_degree: float = _gpu_defaults.QUEUE_MAX_MEAN_DEGREE
    queue_group: int = _gpu_defaults.QUEUE_GROUP
    queue_max_roots: int | None = _gpu_defaults.QUEUE_MAX_ROOTS
    persistent_defines: tuple = _gpu_defaults.PERSISTENT_DEFINES
    deterministic_blocks: int | None = _gpu_defaults.DETERMINISTIC_BLOCKS

    def __post_init__(self):
        check_count("cpu_parallel_min_edges", self.cpu_parallel_min_edges)
        check_count("persistent_block", self.persistent_block)
        if self.persistent_block % 32 or self.persistent_block > 1024:
            raise ParameterError(f"persistent_block must be a multiple of 32 up to 1024, not {self.persistent_block}")
        check_count("persistent_blocks_per_sm", self.persistent_blocks_per_sm)
        for name, none_ok in (("persistent_group", True), ("queue_group", False)):
            value = getattr(self, name)
            if not ((none_ok and value is None) or (_is_int(value) and value in _GROUPS)):
                also = " or None (from the mean degree)" if none_ok else ""
                raise ParameterError(f"{name} must be one of 4, 8, 16, 32{also}, not {value!r}")
        check_count("persistent_local", self.persistent_local, 0)
        if not (self.persistent_queue is None or isinstance(self.persistent_queue, bool)):
            raise ParameterError(f"persistent_queue must be True, False or None (by the mean degree), "
                                 f"not {self.persistent_queue!r}")
        check_amount("queue_max_mean_degree", self.queue_max_mean_degree)
        if self.queue_max_roots is not None:
            check_count("queue_max_roots", self.queue_max_roots, also=" or None (every phase)")
        object.__setattr__(self, "persistent_defines", _persistent_defines(self.persistent_defines))
        if self.deterministic_blocks is not None:
            check_count("deterministic_blocks", self.deterministic_blocks, also=" or None (a constant-thread grid)")
            if self.deterministic_blocks > _INT32_MAX:  # CUDA's most blocks of a grid's x dimension
                raise ParameterError(f"deterministic_blocks must be at most {_INT32_MAX}, "
                                     f"not {self.deterministic_blocks}")


def _is_int(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def _persistent_defines(value) -> tuple:
    """``persistent_defines`` as ``(name, value)`` pairs sorted by name, each name a setting of
    the persistent kernel and each value an integer in its range; ParameterError otherwise."""
    what = "persistent_defines must be a mapping or (name, value) pairs of the persistent kernel's settings"
    if isinstance(value, dict):
        value = tuple(value.items())
    try:
        pairs = [tuple(p) for p in value]
    except TypeError:
        raise ParameterError(f"{what}, not {value!r}") from None
    if isinstance(value, (str, bytes)) or any(len(p) != 2 for p in pairs):
        raise ParameterError(f"{what}, not {value!r}")
    settings = _gpu_defaults.PERSISTENT_SETTINGS
    for name, v in pairs:
        if not isinstance(name, str) or name not in settings:
            raise ParameterError(f"persistent_defines: {name!r} is not a setting of the persistent kernel "
                                 f"(one of {', '.join(map(repr, settings))})")
        least, most = settings[name]
        if not _is_int(v) or v < least or (most is not None and v > most):
            bound = f"from {least} to {most}" if most is not None else f"of at least {least}"
            raise ParameterError(f"persistent_defines: {name} must be an integer {bound}, not {v!r}")
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise ParameterError(f"persistent_defines names a setting twice: {value!r}")
    return tuple(sorted((str(name), int(v)) for name, v in pairs))


_SCOPE = ConfigScope("mgmatch_bipartite_config", BipartiteConfig())


def get_bipartite_config() -> BipartiteConfig:
    """The configuration in force (the innermost :func:`bipartite_config`, else the defaults)."""
    return _SCOPE.get()


def bipartite_config(**changes):
    """Run the block with some bipartite-matching tunables changed (validated on entry); a call
    reads the configuration once and passes it down, to a cluster's worker too.

    >>> with bipartite_config(cpu_parallel_min_edges=1):
    ...     get_bipartite_config().cpu_parallel_min_edges
    1
    """
    return _SCOPE.changed(**changes)


# ----------------------------------------------------------------------------- result
@dataclass
class BipartiteMatchingResult:
    """A maximum matching between the rows and columns of a bipartite graph.

    Attributes
    ----------
    row_match : ndarray of int64
        ``row_match[r]`` is the column matched to row ``r``, or -1.
    col_match : ndarray of int64
        ``col_match[c]`` is the row matched to column ``c``, or -1.
    cardinality : int
        Number of matched pairs.
    algorithm : str
        ``"gpr"``, ``"apfb"`` or ``"apsb"``.
    params : dict
        The parameters that shaped the run (initial matching, variant, relabeling strategy, BFS
        kernel, launch mode; on the CPU the number of threads).
    init_cardinality : int
        Cardinality of the initial matching.
    timings : dict
        Seconds per phase: ``setup`` (adjacency on the device), ``init``, ``match``,
        ``certificate`` and ``total``. The persistent GPU kernel adds ``match_bfs`` and
        ``match_alternate``, measured on the device: its searches, and its ALTERNATE and
        FIXMATCHING passes.
    iterations : int
        Outer iterations: push-relabel loops (G-PR) or BFS-and-alternate phases (APFB/APsB).
    global_relabels : int
        Global relabelings (G-PR).
    bfs_levels : int
        BFS levels, summed over all BFS phases (global relabelings included); for the
        persistent APFB's work queue, the depth of each phase's search plus one (the levels a
        level-synchronous search runs).
    device : str
        ``"cpu"`` or ``"gpu"``.
    n_rows, n_cols, m : int
        Shape and edge count of the matched graph.
    cover_rows, cover_cols : ndarray of bool
        A minimum vertex cover (König): every edge has an endpoint in it and
        ``cover_rows.sum() + cover_cols.sum() == cardinality``, which certifies that the
        matching is maximum.
    counts : dict
        Further counters: G-PR's shrinks; for the persistent kernel, whether the search ran as
        one work queue (``queue_traversal``), the phases and levels it searched so
        (``queue_phases``, ``queue_levels``), the levels run grid-wide (``grid_levels``) and by
        one block alone (``block_runs``, ``block_levels``), the lanes that expand a frontier
        column and the blocks of the launch.
    """

    row_match: np.ndarray
    col_match: np.ndarray
    cardinality: int
    algorithm: str
    params: dict
    init_cardinality: int
    timings: dict
    iterations: int
    global_relabels: int
    bfs_levels: int
    device: str
    n_rows: int
    n_cols: int
    m: int
    cover_rows: np.ndarray
    cover_cols: np.ndarray
    counts: dict = field(default_factory=dict)

    def to_table(self) -> dict:
        """Matched pairs sorted by row: ``{"row": int64 array, "col": int64 array}``.

        >>> r = bipartite_matching(Graph.from_edges([0, 1], [1, 0], bipartite=True), device="cpu")
        >>> {k: v.tolist() for k, v in r.to_table().items()}
        {'row': [0, 1], 'col': [1, 0]}
        """
        rows = np.flatnonzero(self.row_match >= 0).astype(np.int64)
        return {"row": rows, "col": self.row_match[rows].astype(np.int64)}

    def summary(self) -> dict:
        """A JSON-able description of the run.

        >>> r = bipartite_matching(Graph.from_edges([0], [0], bipartite=True), device="cpu")
        >>> s = r.summary()
        >>> s["algorithm"], s["cardinality"], s["n_rows"]
        ('apfb', 1, 1)
        """
        return {
            "family": "bipartite",
            "algorithm": self.algorithm,
            "parameters": dict(self.params),
            "device": self.device,
            "n_rows": int(self.n_rows),
            "n_cols": int(self.n_cols),
            "m": int(self.m),
            "cardinality": int(self.cardinality),
            "init_cardinality": int(self.init_cardinality),
            "cover_size": int(self.cover_rows.sum() + self.cover_cols.sum()),
            "time_s": {k: float(v) for k, v in self.timings.items()},
            "counts": {
                "iterations": int(self.iterations),
                "global_relabels": int(self.global_relabels),
                "bfs_levels": int(self.bfs_levels),
                **{k: int(v) for k, v in self.counts.items()},
            },
        }

    def __repr__(self) -> str:
        return (
            f"BipartiteMatchingResult({self.algorithm}, {self.n_rows}x{self.n_cols}, "
            f"cardinality={self.cardinality}, device={self.device})"
        )


# ----------------------------------------------------------------------------- parameters
def check_parameters(algorithm="apfb", init="cheap", variant="shrink", relabel="adaptive", relabel_k=0.7,
                     bfs="gpubfs-wr", launch="persistent", device="auto", deterministic=False, threads=None) -> None:
    """Validate the parameters of :func:`bipartite_matching`; raise ParameterError naming the bad one.

    >>> check_parameters(algorithm="hk")
    Traceback (most recent call last):
    ...
    mgmatch.errors.ParameterError: algorithm must be one of 'gpr', 'apfb', 'apsb', not 'hk'
    """
    for name, value, choices in (
        ("algorithm", algorithm, ALGORITHMS),
        ("init", init, INITS),
        ("variant", variant, VARIANTS),
        ("relabel", relabel, RELABELS),
        ("bfs", bfs, BFS_KERNELS),
        ("launch", launch, LAUNCHES),
        ("device", device, ("auto", "cpu", "gpu")),
    ):
        if not isinstance(value, str) or value not in choices:
            raise ParameterError(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r}")
    if (
        isinstance(relabel_k, bool)
        or not isinstance(relabel_k, (int, float, np.integer, np.floating))
        or not math.isfinite(float(relabel_k))
        or float(relabel_k) <= 0
    ):
        raise ParameterError(f"relabel_k must be a positive number, not {relabel_k!r}")
    if threads is not None and (isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer))
                                or threads < 1):
        raise ParameterError(f"threads must be a positive integer or None (all of Numba's), not {threads!r}")
    if not isinstance(deterministic, (bool, np.bool_)):
        raise ParameterError(f"deterministic must be True or False, not {deterministic!r}")
    if deterministic and algorithm == "gpr":
        raise ParameterError("deterministic=True needs algorithm 'apfb' or 'apsb': G-PR's pushes race by design "
                             "(the paper's lock- and atomic-free kernel), so its matching varies between GPU runs")
    if deterministic and bfs != "gpubfs-wr":
        raise ParameterError("deterministic=True runs the GPUBFS-WR search (one path per BFS tree); "
                             f"bfs={bfs!r} is not available with it")


def _next_relabel(strategy: str, k: float, loop: int, max_level: int) -> int:
    """GETITERGR [1]: the loop of the next global relabeling."""
    if strategy == "adaptive":
        return loop + max(1, math.ceil(k * max_level))
    return loop + max(1, math.ceil(k))


# ----------------------------------------------------------------------------- memory
def estimate_gpu_bytes(n_rows: int, n_cols: int, nnz: int, itemsize: int = 4) -> int:
    """Peak GPU memory of one matching run, in bytes, from the graph's size.

    Counts the CSR and CSC adjacency, the temporaries of building the CSC, and the per-vertex
    arrays of the algorithms (matching, labels, active lists, BFS levels, roots, predecessors,
    and the persistent kernel's frontier queues: up to two of four indices per column).

    >>> estimate_gpu_bytes(1000, 1000, 5000)
    332008
    """
    s = int(itemsize)
    adjacency = (n_rows + 1 + nnz + n_cols + 1 + nnz) * s
    # the row of each entry (as int64, then narrowed), the sort's permutation and its scratch,
    # the sorted columns: 40 bytes an entry at s = 4 (docs/performance.md, section "Bipartite
    # matching: GPU memory", has the peak this was checked against)
    build = nnz * (32 + 2 * s) + n_cols * 8
    vertices = (2 * (n_rows + n_cols) + 14 * n_cols + n_rows) * s
    return int(adjacency + build + vertices)


def _check_gpu_memory(n_rows, n_cols, nnz, itemsize, cp) -> None:
    need = estimate_gpu_bytes(n_rows, n_cols, nnz, itemsize)
    free, _total = cp.cuda.runtime.memGetInfo()
    free += cp.get_default_memory_pool().free_bytes()
    if need > 0.95 * free:
        raise ResourceError(
            f"bipartite matching of a {n_rows} x {n_cols} graph with {nnz} edges needs about "
            f"{need / 2**30:.2f} GiB of GPU memory, but only {free / 2**30:.2f} GiB is free"
        )


# ----------------------------------------------------------------------------- driver
def bipartite_matching(
    graph,
    algorithm: str = "apfb",
    init: str = "cheap",
    *,
    variant: str = "shrink",
    relabel: str = "adaptive",
    relabel_k: float = 0.7,
    bfs: str = "gpubfs-wr",
    launch: str = "persistent",
    device: str = "auto",
    deterministic: bool = False,
    threads: int | None = None,
    client=None,
) -> BipartiteMatchingResult:
    """Maximum cardinality matching of a bipartite graph.

    Parameters
    ----------
    graph : Graph, scipy.sparse matrix or graph-like
        A bipartite :class:`~mgmatch.graph.Graph` (rows x columns). An undirected graph is matched
        as its bipartite double cover; a SciPy sparse matrix is read as rows x columns, stored
        zeros included; an edge table or ``(src, dst)`` arrays as sources x destinations, in the
        user's ids (see :func:`mgmatch.convert.as_graph`; the result's ``mapping`` maps back).
    algorithm : {"apfb", "gpr", "apsb"}
        The augmenting-path BFS algorithms APFB / APsB [2]_, or push-relabel G-PR [1]_. APFB
        (with GPUBFS-WR and the persistent launch) is the default: it was the fastest on every
        benchmark graph, on the CPU and on the GPU.
    init : {"cheap", "karp-sipser", "none"}
        Initial matching: greedy (the papers' choice), Karp-Sipser, or empty.
    variant : {"shrink", "noshrink", "first"}
        G-PR: active-column lists with shrinking (Algorithm 7), without it, or the first kernel
        over all columns (Algorithm 6).
    relabel : {"adaptive", "fixed"}
        G-PR: next global relabeling after ``k * maxLevel`` push launches, or every
        ``ceil(k)`` launches.
    relabel_k : float
        The ``k`` above (0.7 is the paper's best with the adaptive strategy).
    bfs : {"gpubfs-wr", "gpubfs"}
        APFB/APsB: BFS kernel with the root array (early exit) or without.
    launch : {"persistent", "ct", "mt"}
        APFB/APsB on the GPU: one cooperative launch for the whole matching, or a launch per BFS
        level with a constant number of threads or a thread per vertex.
    device : {"auto", "cpu", "gpu"}
        ``auto`` uses the GPU when CuPy sees one.
    deterministic : bool
        APFB/APsB: resolve every race by the smallest vertex id instead of by thread timing, so
        that the same graph gives the same matching on every run and on both devices (see the
        notes). The search then runs level by level (``launch`` does not apply) and is slower
        on the GPU; ``init="cheap"`` becomes its deterministic rounds. Not available for G-PR.
    threads : int, optional
        CPU threads (Numba's): ``1`` runs every step sequentially, ``None`` (the default) on all
        of Numba's threads (``NUMBA_NUM_THREADS``). No effect on the GPU.
    client : distributed.Client, optional
        Run on a worker of this Dask cluster (the whole graph on one worker, through the same
        engine as every family); the result is the one an in-process run gives.

    Returns
    -------
    BipartiteMatchingResult
        ``row_match``, ``col_match``, ``cardinality``, timings, counters, and a König vertex cover
        of the same size that certifies maximality.

    Raises
    ------
    ParameterError
        A parameter is outside its domain.
    InputError
        ``graph`` is neither a Graph nor a SciPy sparse matrix.
    ResourceError
        The GPU was asked for but is absent, or the graph will not fit in its free memory (the
        message names the estimate).

    Notes
    -----
    The result is a maximum matching: ``cardinality`` equals the structural rank of the
    matrix, ``max |M|`` over all matchings ``M``, and by König's theorem equals the size of the
    minimum vertex cover returned in ``cover_rows``/``cover_cols``. The cover comes from a last
    alternating BFS (from the unmatched rows for G-PR, from the unmatched columns for APFB/APsB):
    reached columns and unreached rows (G-PR), or unreached columns and the mates of reached ones
    (APFB/APsB).

    The cardinality never depends on the run, but which maximum matching is returned may. On
    the GPU the papers' kernels let threads race (the cheap matching's proposals, G-PR's pushes,
    the BFS claims of APFB/APsB) and the winner of a race depends on timing, so two runs may
    match different pairs. On the CPU, one thread runs every algorithm sequentially and returns
    the same matching on every run; G-PR returns that matching on any number of threads (its
    pushes stay sequential), while APFB/APsB on several threads let the BFS claims race as on
    the GPU. With ``deterministic=True`` APFB/APsB resolve each race by the smallest id
    (:func:`mgmatch.cpu.bipartite.augmenting_bfs_deterministic` states the rules); the matching
    is then the same on every run, for every number of CPU threads, and on the GPU.

    The CPU's parallel loops take their size threshold, and the persistent GPU kernel and the
    deterministic GPU search their launch settings, from :class:`BipartiteConfig` (set them with
    :func:`bipartite_config`).

    References
    ----------
    .. [1] M. Deveci, K. Kaya, B. Ucar, U. V. Catalyurek, "A push-relabel-based maximum
       cardinality bipartite matching algorithm on GPUs", ICPP 2013.
    .. [2] M. Deveci, K. Kaya, B. Ucar, U. V. Catalyurek, "GPU accelerated maximum cardinality
       matching algorithms for bipartite graphs", Euro-Par 2013.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> a = sp.csr_array(([1, 1, 1, 1], ([0, 0, 1, 2], [0, 1, 0, 2])), shape=(3, 3))
    >>> r = bipartite_matching(Graph.from_scipy(a, bipartite=True), "gpr", device="cpu")
    >>> r.cardinality, r.row_match.tolist()
    (3, [1, 0, 2])
    >>> bipartite_matching(a, "apfb", init="karp-sipser", device="cpu").cardinality
    3
    """
    check_parameters(algorithm, init, variant, relabel, relabel_k, bfs, launch, device, deterministic, threads)
    graph, mapping = _as_bipartite(graph)
    if algorithm == "gpr":
        params = {"init": init, "variant": variant, "relabel": relabel, "relabel_k": float(relabel_k)}
    else:
        params = {"init": init, "bfs": bfs, "launch": launch, "deterministic": bool(deterministic)}
    program = _BipartiteProgram(algorithm, params, None if threads is None else int(threads), get_bipartite_config())
    try:
        return attach_mapping(execute(program, graph, device=device, client=client), mapping)
    except Exception as exc:
        if out_of_device_memory(exc):
            need = estimate_gpu_bytes(graph.n_rows, graph.n_cols, graph.nnz, _index_dtype(graph).itemsize)
            raise ResourceError(
                f"the GPU ran out of memory matching a {graph.n_rows} x {graph.n_cols} graph with "
                f"{graph.nnz} edges (estimated need {need / 2**30:.2f} GiB)"
            ) from exc
        raise


class _BipartiteProgram:
    """A maximum bipartite matching as an engine program: one partition owns every row and
    column, and its one step runs the whole algorithm on the partition's device."""

    phase = "match"
    max_partitions = 1

    def __init__(self, algorithm: str, params: dict, threads: int | None = None, config: BipartiteConfig | None = None):
        self.name = algorithm
        self.params = params
        self.threads = threads  # CPU threads; None: all of Numba's
        self.config = BipartiteConfig() if config is None else config

    def init(self, part):
        graph = Graph(part.indptr, part.indices, part.weights, part.n_global, part.n_cols, bipartite=True,
                      weighted=False, symmetric=part.symmetric)
        return SimpleNamespace(graph=graph, device="cpu" if part.xp is np else "gpu", result=None)

    def step(self, st, inbox: Messages) -> Messages:
        if st.result is None:
            st.result = _run(st.graph, self.name, self.params, st.device, self.threads, self.config)
        return Messages.empty(st.graph.xp)

    def fork(self, st):
        return SimpleNamespace(**vars(st))  # a step only replaces ``result``

    def finish(self, st) -> dict:
        return {f.name: getattr(st.result, f.name) for f in dataclasses.fields(st.result)}

    def gpu_bytes(self, graph) -> int:
        return estimate_gpu_bytes(graph.n_rows, graph.n_cols, graph.nnz, _index_dtype(graph).itemsize)

    def assemble(self, graph, pieces: list[dict], info) -> BipartiteMatchingResult:
        result = BipartiteMatchingResult(**pieces[0])
        result.timings = dict(result.timings, partition=info.timings["partition"])
        return result


def _as_bipartite(graph) -> tuple:
    """``(bipartite graph, mapping)``: an undirected Graph as its double cover, a SciPy matrix as
    rows x columns, anything else :func:`~mgmatch.convert.as_graph` takes as a bipartite graph
    (an edge table's sources are the rows), with the map back to the user's ids."""
    if isinstance(graph, Graph):
        return (graph if graph.bipartite else graph.bipartite_double_cover()), None
    import scipy.sparse as sp  # noqa: PLC0415

    if sp.issparse(graph):
        return Graph.from_scipy(graph, bipartite=True, weighted=False), None
    from ..convert import GraphInput  # noqa: PLC0415

    if isinstance(graph, GraphInput) and not graph.graph.bipartite:  # its rows and columns are its vertices
        return graph.graph.bipartite_double_cover(), dataclasses.replace(graph, columns=graph.vertices)
    return coerce_input(graph, bipartite=True)


def _index_dtype(graph: Graph) -> np.dtype:
    big = graph.n_rows + graph.n_cols + 2 > _INT32_MAX or graph.nnz > _INT32_MAX
    return np.dtype(np.int64 if big else np.int32)


def _twins(dev: str):
    if dev == "gpu":
        from ..gpu import bipartite as ops  # noqa: PLC0415
    else:
        from ..cpu import bipartite as ops  # noqa: PLC0415
    return ops


@dataclass
class _Adjacency:
    """CSR (rows -> columns) and CSC (columns -> rows) of the graph on the run's device."""

    n_rows: int
    n_cols: int
    row_ptr: object
    row_cols: object
    col_ptr: object
    col_rows: object


def _adjacency(graph: Graph, dev: str, idx: np.dtype, xp) -> _Adjacency:
    if dev == "gpu":
        _check_gpu_memory(graph.n_rows, graph.n_cols, graph.nnz, idx.itemsize, xp)
    row_ptr = xp.asarray(graph.indptr).astype(idx, copy=False)
    row_cols = xp.asarray(graph.indices).astype(idx, copy=False)
    if graph.symmetric:  # a double cover: column c's rows are row c's columns, ascending as well
        return _Adjacency(graph.n_rows, graph.n_cols, row_ptr, row_cols, row_ptr, row_cols)
    if xp is np:  # linear-time transpose on the host, on the run's threads
        col_ptr, col_rows = _twins(dev).column_adjacency(row_ptr, row_cols, graph.n_cols)
        return _Adjacency(graph.n_rows, graph.n_cols, row_ptr, row_cols, col_ptr, col_rows)
    nnz = int(row_cols.shape[0])
    rows = (xp.searchsorted(row_ptr, xp.arange(nnz, dtype=idx), side="right") - 1).astype(idx)
    order = xp.argsort(row_cols, kind="stable")
    col_rows = rows[order].astype(idx, copy=False)
    # Column c starts where the sorted columns reach c. (CuPy's bincount, the obvious way to
    # count them, takes far more scratch memory than the graph: docs/performance.md, section
    # "Bipartite matching: GPU memory".)
    col_ptr = xp.searchsorted(row_cols[order], xp.arange(graph.n_cols + 1, dtype=idx), side="left").astype(idx)
    return _Adjacency(graph.n_rows, graph.n_cols, row_ptr, row_cols, col_ptr, col_rows)


def _run(graph: Graph, algorithm: str, params: dict, dev: str, threads: int | None,
         config: BipartiteConfig) -> BipartiteMatchingResult:
    if dev == "gpu":
        return _run_on(graph, algorithm, params, dev, config)
    # the CPU twins' threads and the size below which a loop stays on the calling thread
    from ..cpu.bipartite import parallel  # noqa: PLC0415

    with parallel(threads, config.cpu_parallel_min_edges) as n_threads:
        return _run_on(graph, algorithm, dict(params, threads=n_threads), dev, config)


def _run_on(graph: Graph, algorithm: str, params: dict, dev: str,
            config: BipartiteConfig) -> BipartiteMatchingResult:
    ops = _twins(dev)
    if dev == "gpu":
        from .._array import cupy_or_none  # noqa: PLC0415

        xp = cupy_or_none()
    else:
        xp = np
    idx = _index_dtype(graph)
    timings = {}
    t_start = time.perf_counter()
    adj = _adjacency(graph, dev, idx, xp)
    mu_row = xp.full(adj.n_rows, -1, dtype=idx)
    mu_col = xp.full(adj.n_cols, -1, dtype=idx)
    ops.synchronize()
    timings["setup"] = time.perf_counter() - t_start

    t0 = time.perf_counter()
    init = params["init"]
    if init == "cheap" and params.get("deterministic"):
        ops.cheap_matching_deterministic(adj.n_rows, adj.n_cols, adj.col_ptr, adj.col_rows, mu_row, mu_col,
                                         tune=config)
    elif init == "cheap":
        ops.cheap_matching(adj.n_rows, adj.n_cols, adj.col_ptr, adj.col_rows, mu_row, mu_col)
    elif init == "karp-sipser":
        ops.karp_sipser_matching(adj.n_rows, adj.n_cols, adj.row_ptr, adj.row_cols, adj.col_ptr, adj.col_rows,
                                 mu_row, mu_col)
    ops.synchronize()
    timings["init"] = time.perf_counter() - t0
    init_cardinality = ops.cardinality(mu_row)

    t0 = time.perf_counter()
    if algorithm == "gpr":
        counts = _gpr(ops, adj, mu_row, mu_col, params, xp, idx)
    else:
        counts = _augmenting_paths(ops, adj, mu_row, mu_col, algorithm, params, xp, idx, config)
    ops.synchronize()
    timings["match"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    timings.update(counts.pop("_timings", {}))
    cover_rows, cover_cols = counts.pop("_cover")()
    ops.synchronize()
    timings["certificate"] = time.perf_counter() - t0
    row_match = to_numpy(mu_row).astype(np.int64)
    col_match = to_numpy(mu_col).astype(np.int64)
    timings["total"] = time.perf_counter() - t_start

    return BipartiteMatchingResult(
        row_match=row_match,
        col_match=col_match,
        cardinality=int(np.count_nonzero(row_match >= 0)),
        algorithm=algorithm,
        params=params,
        init_cardinality=int(init_cardinality),
        timings=timings,
        iterations=int(counts.pop("iterations")),
        global_relabels=int(counts.pop("global_relabels", 0)),
        bfs_levels=int(counts.pop("bfs_levels")),
        device=dev,
        n_rows=graph.n_rows,
        n_cols=graph.n_cols,
        m=graph.m,
        cover_rows=cover_rows,
        cover_cols=cover_cols,
        counts=counts,
    )


# ----------------------------------------------------------------------------- G-PR
def _gpr(ops, adj: _Adjacency, mu_row, mu_col, params: dict, xp, idx) -> dict:
    """G-PR [1]: Algorithm 3 (variant "first") or Algorithm 7 (with active-column lists)."""
    n_rows, n_cols = adj.n_rows, adj.n_cols
    inf = n_rows + n_cols  # m + n in [1]
    psi_row = xp.empty(n_rows, dtype=idx)  # ψ, distance labels of the rows
    psi_col = xp.empty(n_cols, dtype=idx)  # ψ of the columns
    variant, strategy, k = params["variant"], params["relabel"], params["relabel_k"]
    counts = {"iterations": 0, "global_relabels": 0, "bfs_levels": 0, "shrinks": 0}

    def global_relabel():
        max_level = ops.global_relabel(n_rows, n_cols, adj.row_ptr, adj.row_cols, mu_row, mu_col, psi_row, psi_col)
        counts["global_relabels"] += 1
        counts["bfs_levels"] += max_level // 2
        return max_level

    loop = 0
    iter_gr = 0
    if variant == "first":
        act_exists = True
        while act_exists:
            if loop == iter_gr:
                iter_gr = _next_relabel(strategy, k, loop, global_relabel())
            act_exists = ops.pr_push_all(n_rows, n_cols, adj.col_ptr, adj.col_rows, mu_row, mu_col, psi_row, psi_col)
            loop += 1
    else:
        a_c = ops.unmatched_columns(mu_col)  # A_c, active columns of this loop
        a_p = a_c.copy()  # A_p, the columns processed by the previous loop
        size = int(a_c.shape[0])
        ia = xp.full(n_cols, -1, dtype=idx)  # iA(v) = loop iff v is active in this loop
        act_exists = size > 0
        shrink = False
        while act_exists:
            if loop == iter_gr:
                iter_gr = _next_relabel(strategy, k, loop, global_relabel())
                shrink = True
            if shrink and variant == "shrink" and size >= SHRINK_MIN:
                size = ops.pr_shrink(size, mu_row, mu_col, loop, a_c, a_p, ia)
                a_c, a_p = a_p, a_c
                act_exists = size > 0
                shrink = False
                counts["shrinks"] += 1
            else:
                act_exists = ops.pr_init(size, mu_row, mu_col, loop, a_c, a_p, ia)
            if act_exists:
                ops.pr_push(size, n_rows, n_cols, adj.col_ptr, adj.col_rows, mu_row, mu_col, psi_row, psi_col,
                            loop, a_c, a_p, ia)
            a_c, a_p = a_p, a_c
            loop += 1
    ops.fix_matching(mu_row, mu_col, rows_are_truth=True)
    counts["iterations"] = loop

    def cover():
        # König cover from a last G-GR: unreached rows and reached columns.
        ops.global_relabel(n_rows, n_cols, adj.row_ptr, adj.row_cols, mu_row, mu_col, psi_row, psi_col)
        pr, pc = to_numpy(psi_row), to_numpy(psi_col)
        return pr >= inf, pc < inf

    counts["_cover"] = cover
    return counts


# ----------------------------------------------------------------------------- APFB / APsB
def _augmenting_paths(ops, adj: _Adjacency, mu_row, mu_col, algorithm: str, params: dict, xp, idx,
                      config: BipartiteConfig) -> dict:
    """APFB / APsB [2], Algorithm 1: BFS, ALTERNATE, FIXMATCHING until no augmenting path is found;
    ``config`` tunes the persistent and the deterministic searches' launches."""
    n_rows, n_cols = adj.n_rows, adj.n_cols
    bfs_level = xp.empty(n_cols, dtype=idx)  # bfs_array
    # root column of each visited column (GPUBFS-WR); the persistent kernel keeps the parent column there
    root = xp.empty(n_cols, dtype=idx)
    pred = xp.full(n_rows, -1, dtype=idx)  # predecessor column of each visited row
    with_root = params["bfs"] == "gpubfs-wr"
    stop_at_first = algorithm == "apsb"
    level_encoding = with_root and stop_at_first  # [2]: used by APsB-GPUBFS-WR only
    launch = params["launch"]
    counts = {"iterations": 0, "bfs_levels": 0}
    cap = 4 * (min(n_rows, n_cols) + 4)  # each phase augments at least one path
    deterministic = bool(params.get("deterministic"))
    if not deterministic and launch == "persistent" and ops.persistent_supported():
        phases, levels, capped, device_timings, device_counts = ops.augmenting_paths_persistent(
            n_rows, n_cols, adj.col_ptr, adj.col_rows, mu_row, mu_col, bfs_level, root, pred,
            stop_at_first=stop_at_first, with_root=with_root, max_phases=cap, tune=config)
        counts.update(device_counts, iterations=phases, bfs_levels=levels)
        counts["_timings"] = {f"match_{k}": v for k, v in device_timings.items()}
        if capped:
            raise RuntimeError(f"{algorithm} made no progress after {cap} phases")
    else:
        # the CPU twins, a GPU without cooperative launches (the papers' launches), or the
        # deterministic search, whose paths are vertex-disjoint (no level encoding, nothing to repair)
        launch = "mt" if deterministic else ("ct" if launch == "persistent" else launch)
        level_encoding = level_encoding and not deterministic
        while True:
            if deterministic:
                found, levels = ops.augmenting_bfs_deterministic(n_rows, n_cols, adj.col_ptr, adj.col_rows, mu_row,
                                                                 mu_col, bfs_level, root, pred,
                                                                 stop_at_first=stop_at_first, tune=config)
            else:
                found, levels = ops.augmenting_bfs(n_rows, n_cols, adj.col_ptr, adj.col_rows, mu_row, mu_col,
                                                   bfs_level, root, pred, stop_at_first=stop_at_first,
                                                   with_root=with_root, level_encoding=level_encoding, launch=launch)
            counts["iterations"] += 1
            counts["bfs_levels"] += levels
            if not found:
                break
            ops.alternate(n_rows, mu_row, mu_col, pred, bfs_level, root, level_encoding=level_encoding,
                          launch=launch)
            if not deterministic:
                ops.fix_matching(mu_row, mu_col, rows_are_truth=False)
            if counts["iterations"] > cap:
                raise RuntimeError(f"{algorithm} made no progress after {cap} phases")

    def cover():
        # König cover from the last BFS: unreached columns and the mates of reached columns.
        if n_cols == 0:
            return np.zeros(n_rows, dtype=bool), np.zeros(0, dtype=bool)
        visited = to_numpy(bfs_level) != ops.L0 - 1
        mr = to_numpy(mu_row)
        cover_rows = np.zeros(n_rows, dtype=bool)
        matched = mr >= 0
        cover_rows[matched] = visited[mr[matched]]
        return cover_rows, ~visited

    counts["_cover"] = cover
    return counts
