"""Louvain community detection after the GPU Louvain algorithm of Naim et al.

The method alternates two phases until modularity stops improving:

1. **Modularity optimisation** (Algorithm 1): every vertex starts in a community of its own;
   the vertices are split into seven buckets by degree (``[1, 4]``, ``[5, 8]``, ``[9, 16]``,
   ``[17, 32]``, ``[33, 84]``, ``[85, 319]``, ``> 319``) and the buckets are processed in turn.
   Each bucket of at least :data:`MOVE_SLICE_MIN` vertices is split into :data:`MOVE_SLICES`
   interleaved batches (vertices ``0, s, 2s, ...`` of the bucket, then ``1, s + 1, ...``, with
   ``s = MOVE_SLICES``), processed in turn; a smaller bucket is one batch. Each
   vertex of a batch computes its best move (computeMove, Algorithm 2, the gain of Eq. (2))
   from the communities as they stood at the start of the batch; the moves are then applied
   and ``a_c`` updated before the next batch. Sweeps repeat until the modularity gain of a
   sweep falls below ``t_bin`` (graphs of more than 100,000 vertices) or ``t_final``.

   This departs from the paper, whose Algorithm 1 updates the community ids and ``a_c`` once
   per bucket (lines 8-11). After the first aggregation of an R-MAT (Kronecker) graph nearly
   all vertices fall into one degree bucket, so they all move at once from the same snapshot;
   many move towards the same communities at the same time and overshoot, the sweep lowers
   modularity, it is undone and the level ends early (about 0.038 against 0.054 for NetworKit
   PLM on ``kron(18)``). Applying the moves after each of ``MOVE_SLICES`` batches lets later
   batches see the earlier ones' moves and closes most of that gap, at the cost of more
   (smaller) batches per sweep. ``MOVE_SLICES = 1`` gives the paper's order; the default, 2,
   keeps kron(21) within 0.001 of what 4 batches reach, with a third to two thirds fewer batches
   (see :data:`MOVE_SLICES`). Buckets of
   fewer than ``MOVE_SLICE_MIN = 64`` vertices move whole, as in the paper: too few vertices
   move together to overshoot, and splitting them only reorders the moves, which on tiny
   graphs changes which local optimum is found (Zachary's karate club: 0.392 instead of 0.419).
2. **Aggregation** (Algorithm 3): every community becomes one vertex; edges between two
   communities merge into one edge with the summed weight, edges inside a community into a
   self-loop.

Each level is a bulk-synchronous program over a :class:`~mgmatch.graph.Partition`:
:func:`init` builds the state, :func:`step` runs one superstep (one sweep of the move phase, or
one aggregation) and returns the messages for other partitions, :func:`finish` builds the
:class:`LouvainResult`. A partition owning the whole graph sends nothing; :func:`louvain` runs
that loop in-process.

Weights are held in 60-bit fixed point (a power-of-two scale chosen from the largest weight and
the edge count), so every sum of weights is exact and independent of summation order: the
moves decided by many threads are the same on every run, and the CPU and GPU twins take the
same decisions from the same state.

References
----------
.. [1] M. Naim, F. Manne, M. Halappanavar, A. Tumeo, "Community Detection on the GPU",
   IEEE IPDPS 2017.
.. [2] V. D. Blondel, J.-L. Guillaume, R. Lambiotte, E. Lefebvre, "Fast unfolding of
   communities in large networks", J. Stat. Mech. (2008) P10008.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._array import get_namespace, resolve_device, to_numpy, to_numpy_rows
from ..errors import InputError, ParameterError, ResourceError
from ..graph import Graph, Partition

__all__ = [
    "louvain",
    "modularity",
    "LouvainResult",
    "LouvainState",
    "validate_louvain_params",
    "init",
    "step",
    "finish",
    "MOVE_BUCKETS",
    "MOVE_SLICES",
    "MOVE_SLICE_MIN",
    "MERGE_BUCKETS",
    "BIN_VERTICES",
]

#: Upper degree bounds of the computeMove buckets (the last bucket holds every larger degree).
MOVE_BUCKETS = (4, 8, 16, 32, 84, 319)
#: Interleaved batches per computeMove bucket: batch ``j`` is ``bucket[j::MOVE_SLICES]``, and the
#: moves of a batch are applied (``C``, community sizes, ``a_c``) before the next batch decides.
#: Naim et al. [1]_ apply them once per bucket (``MOVE_SLICES = 1``); on R-MAT graphs, after
#: aggregation, most vertices share one bucket and moving them all from one snapshot overshoots
#: (see the module notes). Read at the start of every level; both twins use the same batches,
#: so CPU and GPU results stay identical.
#:
#: 2 rather than 4 (the default before): a run has a third to two thirds fewer batches, each of
#: which is a barrier on the GPU, and its modularity moves by -0.0026 to +0.0009 (CPU twin, whose
#: decisions the GPU's equal, on 4elt, netscience and delaunay, rgg and kron graphs of k = 12 to
#: 18 and seeds 1 to 3). For example, 4 against 2: 4elt 0.9259 / 0.9249, delaunay k=18
#: 0.9713 / 0.9700, rgg k=18 0.9808 / 0.9801, kron k=12 0.0810 / 0.0784, kron k=18
#: 0.0486 / 0.0485; on an H200 kron k=21 0.0392 / 0.0382 (NetworKit PLM about 0.045). Times on an
#: H200, 4 against 2: 4elt 1.28 / 1.11 ms, kron k=16 57 / 45 ms, rgg k=22 112 / 97 ms, kron k=21
#: 185 / 185 ms, delaunay k=18 8.0 / 8.3 ms and delaunay k=22 78 / 85 ms (a sweep or a level more).
MOVE_SLICES = 2
#: Buckets of fewer vertices than this are one batch (as in the paper) whatever MOVE_SLICES is.
MOVE_SLICE_MIN = 64
#: Upper community-degree bounds of the mergeCommunity buckets.
MERGE_BUCKETS = (127, 479)
#: Above this many vertices a level uses ``t_bin``, at or below it ``t_final``.
BIN_VERTICES = 100_000
#: Bits of the fixed-point weights: the total weight ``2m`` stays below ``2**FIXED_BITS``.
FIXED_BITS = 60


# ------------------------------------------------------------------------------- result
@dataclass
class LouvainResult:
    """Communities found by :func:`louvain`, level by level.

    Attributes
    ----------
    levels : list of ndarray
        ``levels[l][v]`` is the community of original vertex ``v`` after level ``l``;
        communities are numbered ``0 .. k_l - 1``.
    communities : ndarray
        The last level (the final communities).
    modularity : list of float
        Modularity of each level's partition.
    n_communities : int
        Number of final communities.
    timings : dict
        Seconds spent in each phase of each level (``levels``), and in total.
    params : dict
        The validated parameters.
    device : str
        ``"cpu"`` or ``"gpu"``.
    """

    levels: list
    communities: np.ndarray
    modularity: list
    n_communities: int
    timings: dict
    params: dict
    device: str

    def to_table(self, all_levels: bool = False) -> dict:
        """Columns ``vertex`` and ``community`` (int64) of the final level.

        With ``all_levels=True`` every level is stacked, with a ``level`` column first.

        >>> import mgmatch
        >>> g = mgmatch.Graph.from_edges([0, 1, 2, 3], [1, 2, 0, 4])
        >>> t = louvain(g, device="cpu").to_table()
        >>> sorted(t), t["community"].tolist()
        (['community', 'vertex'], [0, 0, 0, 1, 1])
        """
        n = self.communities.shape[0]
        vertex = np.arange(n, dtype=np.int64)
        if not all_levels:
            return {"vertex": vertex, "community": np.asarray(self.communities, dtype=np.int64)}
        k = len(self.levels)
        return {
            "level": np.repeat(np.arange(k, dtype=np.int64), n),
            "vertex": np.tile(vertex, k),
            "community": np.concatenate([np.asarray(lv, dtype=np.int64) for lv in self.levels])
            if k
            else np.empty(0, dtype=np.int64),
        }

    def summary(self) -> dict:
        """A JSON-able summary: modularity and community count per level, timings, parameters.

        >>> import json, mgmatch
        >>> g = mgmatch.Graph.from_edges([0, 1, 2, 3], [1, 2, 0, 4])
        >>> s = louvain(g, device="cpu").summary()
        >>> s["n_communities"], round(s["modularity"], 4), s["levels"][0]["n_communities"]
        (2, 0.375, 2)
        >>> _ = json.dumps(s)
        """
        return {
            "algorithm": "louvain",
            "device": self.device,
            "n": int(self.communities.shape[0]),
            "n_communities": int(self.n_communities),
            "modularity": float(self.modularity[-1]) if self.modularity else 0.0,
            "modularity_per_level": [float(q) for q in self.modularity],
            "levels": [
                {
                    "level": i,
                    "modularity": float(q),
                    "n_communities": int(lv.max(initial=-1)) + 1,
                }
                for i, (q, lv) in enumerate(zip(self.modularity, self.levels))
            ],
            "time_s": _jsonable(self.timings),
            "parameters": _jsonable(self.params),
        }


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    return obj


# --------------------------------------------------------------------------- parameters
def validate_louvain_params(
    resolution=1.0,
    *,
    t_bin=1e-3,
    t_final=1e-6,
    max_levels=100,
    max_iterations=100,
    device="auto",
) -> dict:
    """Check Louvain's parameters once for every tier; return them as a dict.

    Raises
    ------
    ParameterError
        A value is out of its domain.

    Examples
    --------
    >>> validate_louvain_params(1.0, device="cpu")["resolution"]
    1.0
    >>> validate_louvain_params(-1.0)
    Traceback (most recent call last):
    ...
    mgmatch.errors.ParameterError: resolution must be a positive finite number, not -1.0
    """
    if device not in ("auto", "cpu", "gpu"):
        raise ParameterError(f"device must be 'auto', 'cpu' or 'gpu', not {device!r}")
    return {
        "resolution": _positive_real("resolution", resolution),
        "t_bin": _positive_real("t_bin", t_bin, allow_zero=True),
        "t_final": _positive_real("t_final", t_final, allow_zero=True),
        "max_levels": _positive_int("max_levels", max_levels),
        "max_iterations": _positive_int("max_iterations", max_iterations),
        "device": device,
    }


# (module functions rather than closures made on every call, and a plain float or int checked
# without the general test: a small graph's whole call on a GPU takes under a millisecond)
def _positive_real(name, value, allow_zero=False):
    if type(value) is float and (0.0 < value < math.inf or (allow_zero and value == 0.0)):
        return value
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if ok:
        value = float(value)
        ok = math.isfinite(value) and (value > 0 or (allow_zero and value == 0))
    if not ok:
        what = "a non-negative" if allow_zero else "a positive"
        raise ParameterError(f"{name} must be {what} finite number, not {value!r}")
    return value


def _positive_int(name, value):
    if type(value) is int and value >= 1:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(f"{name} must be a positive integer, not {value!r}")
    return int(value)


# ---------------------------------------------------------------------- public functions
def louvain(
    graph: Graph,
    resolution: float = 1.0,
    *,
    t_bin: float = 1e-3,
    t_final: float = 1e-6,
    max_levels: int = 100,
    max_iterations: int = 100,
    device: str = "auto",
    progress=None,
) -> LouvainResult:
    r"""Communities of an undirected graph by the Louvain method, after Naim et al. (GPU Louvain).

    Parameters
    ----------
    graph : Graph
        An undirected graph, weighted or not (unweighted edges count 1).
    resolution : float
        The resolution :math:`\gamma > 0`; larger values give smaller communities.
    t_bin, t_final : float
        A level's move phase stops when one sweep raises modularity by less than ``t_bin``
        (level graphs of more than 100,000 vertices; default ``1e-3``) or ``t_final`` (smaller
        ones; default ``1e-6``); the levels stop when one level raises it by less than the same
        threshold. (``t_bin`` was ``1e-2``, too coarse for graphs whose whole modularity is
        about 0.05, such as R-MAT graphs.)
    max_levels : int
        Most levels (aggregations) to run.
    max_iterations : int
        Most sweeps of the move phase per level.
    device : {"auto", "cpu", "gpu"}
        Where to run; ``auto`` takes the GPU when one is visible.
    progress : callable, optional
        ``progress(level, sweeps, modularity)`` after every sweep of the move phase and every
        aggregation: the level in progress (from 0), the sweeps done on it, and the modularity
        of the partition so far. On a GPU, graphs of up to 4M stored edges run every level in
        one kernel launch, which reports only the levels it hands back to the host.

    Returns
    -------
    LouvainResult
        Communities per level and their modularity.

    Raises
    ------
    ParameterError
        A parameter is out of its domain.
    InputError
        The graph is bipartite.
    ResourceError
        The graph does not fit the GPU (the message gives the estimate), or no GPU is visible
        when ``device="gpu"``.

    Notes
    -----
    Modularity (Eq. (1) of [1]_, with resolution :math:`\gamma`) is

    .. math:: Q = \frac{1}{2m}\sum_i e_{i \to C(i)} - \gamma \sum_c \frac{a_c^2}{4m^2},

    and moving :math:`i` to :math:`C(j)` gains (Eq. (2))

    .. math:: \Delta Q = \frac{e_{i \to C(j)} - e_{i \to C(i) \setminus \{i\}}}{m}
              + \gamma k_i \frac{a_{C(i) \setminus \{i\}} - a_{C(j)}}{2 m^2}.

    A vertex moves only for a positive gain, to the community of lowest id among the best; a
    vertex alone in its community joins another lone vertex's community only if that id is
    smaller. Modularity never decreases from one level to the next (a sweep that would lower
    it is undone). Results are deterministic for a given graph, parameters and device.

    References
    ----------
    .. [1] M. Naim, F. Manne, M. Halappanavar, A. Tumeo, "Community Detection on the GPU",
       IEEE IPDPS 2017.

    Examples
    --------
    Two triangles joined by one edge:

    >>> import mgmatch
    >>> g = mgmatch.Graph.from_edges([0, 1, 2, 3, 4, 5, 2], [1, 2, 0, 4, 5, 3, 3])
    >>> res = louvain(g, device="cpu")
    >>> res.communities.tolist()
    [0, 0, 0, 1, 1, 1]
    >>> round(res.modularity[-1], 4)
    0.3571
    """
    params = validate_louvain_params(
        resolution, t_bin=t_bin, t_final=t_final, max_levels=max_levels,
        max_iterations=max_iterations, device=device,
    )
    if not isinstance(graph, Graph):
        raise InputError(f"louvain needs an mgmatch.Graph, not {type(graph).__name__}")
    if graph.bipartite:
        raise InputError("louvain needs an undirected graph; this one is bipartite")
    if progress is not None and not callable(progress):
        raise ParameterError(f"progress must be callable, not {type(progress).__name__}")
    dev = resolve_device(params["device"])
    t0 = time.perf_counter()
    g = graph.to(dev) if _device_of(graph) != dev else graph
    state = _fused_start(g, params) if dev == "gpu" else None
    if isinstance(state, LouvainResult):  # every level ran in the fused kernel
        result = state
    else:
        if state is None:
            part = g.partition(1)[0]
            state = init(part, params, device=dev)
        inbox: dict = {}
        while not state.done:
            state, outbox = step(state, inbox)
            inbox = {}  # a partition owning the whole graph has no one to hear from
            del outbox
            if progress is not None:
                progress(state.level, state.iteration, state.q_current)
        result = finish(state)
    result.timings["total_s"] = time.perf_counter() - t0
    return result


def _fused_start(g: Graph, params: dict) -> LouvainResult | LouvainState | None:
    """Run the whole method as one kernel on a GPU thread-block cluster, for small graphs.

    On a graph of a few thousand edges a sweep of the phase-per-kernel driver is a dozen
    launches of microseconds' work each; the fused kernel (``louvain_fused`` in
    ``kernels/louvain.cu``) runs the same phases, batches and decisions, so its communities are
    the same as the CPU twin's. Returns ``None`` when the graph or the device does not qualify
    (:func:`mgmatch.gpu.louvain.fused_eligible`) or the kernel stopped before doing anything the
    driver would not redo; the result when the kernel ran every level (made without the
    partition state that :func:`finish` takes, which with its finish cost 4elt 9 us of host
    Python on an H100 host); else the state started on the level it handed over (a level with a vertex
    of degree > 319 and no room for its table), for the driver's steps to go on from.
    """
    twin = _twin("gpu")
    _move_slices([])  # MOVE_SLICES and MOVE_SLICE_MIN checked as for the driver
    if not twin.fused_eligible(g.n, g.nnz, move_buckets=MOVE_BUCKETS, slices=MOVE_SLICES):
        return None
    params = dict(params, device="gpu")
    try:
        out = twin.run_fused(
            g.indptr, g.indices, g.weights, params, slices=MOVE_SLICES, slice_min=MOVE_SLICE_MIN,
            bin_vertices=BIN_VERTICES, fixed_bits=FIXED_BITS,
        )
        if out["status"] == "no_room" or (out["status"] == "handover" and out["level"] == 0):
            return None
        timings = {"levels": out["level_timings"], "fused_kernel_s": out["kernel_s"]}
        if out["status"] == "done":  # the levels are host rows already
            return _result(out["levels"], out["modularity"], out["n_communities"], timings, params, "gpu")
        # a handover: the driver goes on from the level the kernels stopped at
        state = LouvainState(
            part=None, params=params, device="gpu", twin=twin, xp=get_namespace(g.indptr),
            graph=_LevelGraph(*out["graph"]), two_m_fix=0, levels=out["levels"], modularity=out["modularity"],
            timings=timings, orig_to_level=out["orig_to_level"], level=out["level"],
        )
        _start_level(state)
    except Exception as exc:
        _reraise_oom(exc, g.n, g.nnz)
        raise
    return state


def modularity(graph: Graph, communities, resolution: float = 1.0) -> float:
    r"""Modularity of a partition of an undirected graph's vertices.

    .. math:: Q = \frac{1}{2m}\sum_{ij} A_{ij}\,[c_i = c_j]
              - \gamma \sum_c \Big(\frac{a_c}{2m}\Big)^2, \qquad a_c = \sum_{i \in c} k_i,

    the definition NetworkX's ``modularity`` uses. A graph without edge weight has ``Q = 0``.

    Parameters
    ----------
    graph : Graph
        An undirected graph.
    communities : array_like of int
        Community of each vertex (any non-negative integer labels).
    resolution : float
        The resolution :math:`\gamma > 0`.

    Examples
    --------
    >>> import mgmatch
    >>> g = mgmatch.Graph.from_edges([0, 1, 2, 3, 4, 5, 2], [1, 2, 0, 4, 5, 3, 3])
    >>> round(modularity(g, [0, 0, 0, 1, 1, 1]), 6)
    0.357143
    """
    resolution = validate_louvain_params(resolution)["resolution"]
    if not isinstance(graph, Graph) or graph.bipartite:
        raise InputError("modularity needs an undirected mgmatch.Graph")
    comm = np.asarray(to_numpy(communities))
    if comm.shape != (graph.n,):
        raise InputError(f"communities has shape {comm.shape}, expected ({graph.n},)")
    if comm.size and not np.issubdtype(comm.dtype, np.integer):
        raise InputError(f"community labels must be integers, not {comm.dtype}")
    if comm.size and comm.min() < 0:
        raise InputError("community labels must be non-negative")
    comm = comm.astype(np.int64)
    indptr = to_numpy(graph.indptr).astype(np.int64)
    indices = to_numpy(graph.indices)
    w = to_numpy(graph.weights).astype(np.float64)
    two_m = float(w.sum())
    if graph.n == 0 or two_m == 0:
        return 0.0
    rows = np.repeat(np.arange(graph.n), np.diff(indptr))
    internal = float(w[comm[rows] == comm[indices]].sum())
    strength = np.bincount(rows, weights=w, minlength=graph.n)
    a = np.bincount(comm, weights=strength) / two_m
    return internal / two_m - resolution * float(a @ a)


# ---------------------------------------------------------------- partition program
@dataclass
class _LevelGraph:
    """One level's graph: CSR without self entries, fixed-point weights, self-loop weights."""

    indptr: object  # int64, n + 1
    indices: object  # int32
    wfix: object  # int64, fixed-point edge weights
    loop_fix: object  # int64, per vertex: self-loop weight as counted in k_i

    @property
    def n(self) -> int:
        return int(self.indptr.shape[0]) - 1

    @property
    def nnz(self) -> int:
        return int(self.indices.shape[0])


@dataclass(eq=False)
class LouvainState:
    """What one partition holds between supersteps.

    ``phase`` is ``"move"`` (the next step runs one sweep of Algorithm 1), ``"aggregate"``
    (the next step records the level and runs Algorithm 3) or ``"done"``.
    """

    part: Partition
    params: dict
    device: str
    twin: object
    xp: object
    graph: _LevelGraph
    two_m_fix: int
    kfix: object = None  # k_i, strengths in fixed point
    comm: object = None  # C, community of each level vertex
    csize: object = None  # comSize
    afix: object = None  # a_c in fixed point
    buckets: list = field(default_factory=list)
    workspace: object = None
    orig_to_level: object = None  # level vertex of each original vertex
    level: int = 0
    iteration: int = 0
    q_current: float = 0.0
    q_level_start: float = 0.0
    phase: str = "move"
    levels: list = field(default_factory=list)
    modularity: list = field(default_factory=list)
    timings: dict = field(default_factory=lambda: {"levels": []})
    _level_timing: dict = field(default_factory=dict)
    n_communities: int | None = None  # of the last level, where known without counting

    @property
    def done(self) -> bool:
        return self.phase == "done"

    @property
    def threshold(self) -> float:
        p = self.params
        return p["t_bin"] if self.graph.n > BIN_VERTICES else p["t_final"]


@functools.cache
def _twin(device: str):
    if device == "gpu":
        from ..gpu import louvain as twin  # noqa: PLC0415
    else:
        from ..cpu import louvain as twin  # noqa: PLC0415
    return twin


def _device_of(graph: Graph) -> str:
    return "cpu" if get_namespace(graph.indptr) is np else "gpu"


def init(part: Partition, params: dict, *, device: str | None = None) -> LouvainState:
    """Build the state of one partition: level-0 graph in fixed point, every vertex alone.

    Only a partition owning the whole graph is supported until the coordinator learns to
    finish the aggregation across partitions.
    """
    if part.bipartite:
        raise InputError("louvain needs an undirected graph; this one is bipartite")
    if part.lo != 0 or part.hi != part.n_global:
        raise ParameterError(
            "louvain runs on one partition owning the whole graph; "
            f"this one owns [{part.lo}, {part.hi}) of {part.n_global}"
        )
    device = device or ("cpu" if get_namespace(part.indices) is np else "gpu")
    twin = _twin(device)
    xp = get_namespace(part.indices)
    t0 = time.perf_counter()
    n, nnz = part.n_owned, part.nnz
    indptr = part.indptr.astype(xp.int64, copy=False)  # read only: the level-0 graph shares the input's arrays
    degrees = indptr[1:] - indptr[:-1]
    max_degree = int(degrees.max()) if n else 0
    twin.check_memory(n, nnz, max_degree)
    try:
        weights = part.weights.astype(xp.float64, copy=False)
        wmax = float(weights.max()) if nnz else 0.0
        if wmax > 0:
            shift = FIXED_BITS - math.frexp(wmax)[1] - int(nnz).bit_length()
            wfix = twin.fixed_point(weights, math.ldexp(1.0, shift))
        else:
            wfix = xp.zeros(nnz, dtype=xp.int64)
        del weights
        graph = _LevelGraph(
            indptr=indptr,
            indices=part.indices.astype(xp.int32, copy=False),
            wfix=wfix,
            loop_fix=xp.zeros(n, dtype=xp.int64),
        )
        state = LouvainState(
            part=part, params=dict(params, device=device), device=device, twin=twin, xp=xp,
            graph=graph, two_m_fix=0, orig_to_level=xp.arange(n, dtype=xp.int32),
        )
        _start_level(state)
    except Exception as exc:
        _reraise_oom(exc, n, nnz)
        raise
    state.timings["setup_s"] = time.perf_counter() - t0
    return state


def _start_level(state: LouvainState) -> None:
    """Every vertex of the level graph alone in its community; k_i, a_c, buckets, Q."""
    xp, g = state.xp, state.graph
    state.kfix = state.twin.strengths(g.indptr, g.wfix, g.loop_fix)  # k_i, Algorithm 1 line 2
    state.two_m_fix = int(state.kfix.sum()) if g.n else 0
    state.comm = xp.arange(g.n, dtype=xp.int32)
    state.csize = xp.ones(g.n, dtype=xp.int32)
    state.afix = state.kfix.copy()
    state.buckets = _degree_buckets(g.indptr, xp)
    max_degree = int((g.indptr[1:] - g.indptr[:-1]).max()) if g.n else 0
    state.workspace = state.twin.make_move_workspace(
        g.n, max_degree, state.buckets, slices=_move_slices(state.buckets)
    )
    state.iteration = 0
    state.q_current = _level_modularity(state)
    state.q_level_start = state.q_current
    state._level_timing = {"level": state.level, "n": g.n, "nnz": g.nnz, "move_s": 0.0}
    state.phase = "move" if (g.nnz and state.two_m_fix > 0) else "aggregate"


def _move_slices(buckets) -> list:
    """Batches per bucket: :data:`MOVE_SLICES`, or 1 for buckets below :data:`MOVE_SLICE_MIN` vertices."""
    s, lo = MOVE_SLICES, MOVE_SLICE_MIN
    if not (type(s) is int and type(lo) is int and s >= 1 and lo >= 0):  # (plain ints pass: every call asks)
        for name, value, least in (("MOVE_SLICES", s, 1), ("MOVE_SLICE_MIN", lo, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                what = "a positive" if least else "a non-negative"
                raise ParameterError(f"{name} must be {what} integer, not {value!r}")
    return [int(s) if int(b.shape[0]) >= lo else 1 for b in buckets]


def _degree_buckets(indptr, xp) -> list:
    """Vertices of each computeMove bucket (Algorithm 1 line 5); the last sorted by degree, largest first.

    Every bucket is in the same order on both devices (ascending ids; the last by a stable sort
    on degree), so the batches ``bucket[j::MOVE_SLICES]`` are the same too.
    """
    deg = indptr[1:] - indptr[:-1]
    out = []
    lo = 0
    for hi in MOVE_BUCKETS:
        out.append(xp.flatnonzero((deg > lo) & (deg <= hi)).astype(xp.int32))
        lo = hi
    big = xp.flatnonzero(deg > lo)
    if big.shape[0]:
        big = big[xp.argsort(-deg[big], kind="stable")] if xp is np else big[xp.argsort(-deg[big])]
    out.append(big.astype(xp.int32))
    return out


def _level_modularity(state: LouvainState) -> float:
    """Eq. (1) on the level graph, from the fixed-point weights."""
    if state.two_m_fix <= 0:
        return 0.0
    g, xp = state.graph, state.xp
    internal = state.twin.internal_weight(g.indptr, g.indices, g.wfix, g.loop_fix, state.comm)
    two_m = float(state.two_m_fix)
    a = state.afix.astype(xp.float64) / two_m
    return float(internal) / two_m - state.params["resolution"] * float((a * a).sum())


def step(state: LouvainState, inbox: dict) -> tuple[LouvainState, dict]:
    """One superstep: a sweep of the move phase, or the level's aggregation.

    ``inbox`` holds community updates of ghost vertices from other partitions; the outbox
    returned holds those of this partition's boundary vertices. A partition owning the whole
    graph has no ghosts, so both stay empty.
    """
    if state.done:
        return state, {}
    try:
        if state.phase == "move":
            _move_step(state)
        else:
            _aggregate_step(state)
    except Exception as exc:
        _reraise_oom(exc, state.graph.n, state.graph.nnz)
        raise
    return state, {}


def _move_step(state: LouvainState) -> None:
    """One iteration of Algorithm 1 (lines 4-11); the sweep's modularity decides termination."""
    g = state.graph
    t0 = time.perf_counter()
    saved = (state.comm.copy(), state.csize.copy(), state.afix.copy())
    gamma_over_2m = state.params["resolution"] / float(state.two_m_fix)
    state.twin.move_sweep(
        g.indptr, g.indices, g.wfix, state.kfix, state.comm, state.csize, state.afix,
        state.buckets, gamma_over_2m, state.workspace,
    )
    q = _level_modularity(state)  # the one scalar read back per sweep
    state.iteration += 1
    gain = q - state.q_current
    if gain < 0:  # simultaneous moves lowered Q: undo the sweep and end the phase
        state.comm, state.csize, state.afix = saved
        state.phase = "aggregate"
    else:
        state.q_current = q
        if gain < state.threshold or state.iteration >= state.params["max_iterations"]:
            state.phase = "aggregate"
    state._level_timing["move_s"] += time.perf_counter() - t0
    state._level_timing["iterations"] = state.iteration


def _aggregate_step(state: LouvainState) -> None:
    """Record the level, then Algorithm 3 unless the levels have converged."""
    g, xp = state.graph, state.xp
    t0 = time.perf_counter()
    changed = bool((state.comm != xp.arange(g.n, dtype=xp.int32)).any()) if g.n else False
    level_gain = state.q_current - state.q_level_start
    if not changed:
        if not state.levels:  # nothing moved at all: every vertex is its own community
            state.levels.append(state.orig_to_level.copy())
            state.modularity.append(state.q_current)
        state._level_timing.setdefault("iterations", state.iteration)
        state._level_timing["aggregate_s"] = 0.0
        state.timings["levels"].append(state._level_timing)
        state.phase = "done"
        return
    # the move phase's state is rebuilt for the next level: free it before the edge lists grow
    state.workspace, state.buckets, state.kfix, state.csize, state.afix = None, [], None, None, None
    new_indptr, new_indices, new_wfix, new_loop, new_id = state.twin.aggregate(
        g.indptr, g.indices, g.wfix, g.loop_fix, state.comm
    )
    state.orig_to_level = new_id[state.comm][state.orig_to_level]
    state.levels.append(state.orig_to_level.copy())
    state.modularity.append(state.q_current)
    state._level_timing["aggregate_s"] = time.perf_counter() - t0
    state._level_timing["modularity"] = state.q_current
    state.timings["levels"].append(state._level_timing)
    state.level += 1
    if state.level >= state.params["max_levels"] or level_gain < state.threshold:
        state.phase = "done"
        return
    state.graph = _LevelGraph(new_indptr, new_indices, new_wfix, new_loop)
    _start_level(state)


def finish(state: LouvainState) -> LouvainResult:
    """The :class:`LouvainResult` of a finished partition program (arrays copied to the host)."""
    n_communities = state.n_communities
    if n_communities is None and state.levels:
        # counted where the last level is (on a GPU, a reduction instead of a pass on the host)
        last = state.levels[-1]
        n_communities = int(last.max()) + 1 if last.shape[0] else 0
    levels = to_numpy_rows(state.levels) if state.levels else []
    return _result(levels, state.modularity, n_communities, dict(state.timings), dict(state.params), state.device)


def _result(levels: list, modularity, n_communities, timings: dict, params: dict, device: str) -> LouvainResult:
    """The result of the host rows ``levels`` (int64); ``n_communities`` ``None``: counted from the last."""
    last = levels[-1] if levels else np.zeros(0, dtype=np.int64)
    if n_communities is None:
        n_communities = int(last.max()) + 1 if last.shape[0] else 0
    return LouvainResult(
        levels=levels, communities=last, modularity=[float(q) for q in modularity],
        n_communities=n_communities, timings=timings, params=params, device=device,
    )


def _reraise_oom(exc: Exception, n: int, nnz: int) -> None:
    """Turn a CUDA out-of-memory error into a :class:`ResourceError` naming the graph size."""
    name = type(exc).__name__
    if "OutOfMemory" in name or "cudaErrorMemoryAllocation" in str(exc):
        raise ResourceError(
            f"the GPU ran out of memory running louvain on a graph with {n} vertices and "
            f"{nnz} stored edges: {exc}"
        ) from None

