"""Louvain community detection after the GPU Louvain algorithm of Naim et al., on one
partition or several.

The method alternates two phases until modularity stops improving:

1. **Modularity optimisation** (Algorithm 1): every vertex starts in a community of its own;
   the vertices are split into seven buckets by degree (``[1, 4]``, ``[5, 8]``, ``[9, 16]``,
   ``[17, 32]``, ``[33, 84]``, ``[85, 319]``, ``> 319``) and the buckets are processed in turn.
   Each bucket is split into ``move_slices`` interleaved batches (vertices ``0, s, 2s, ...`` of
   the bucket, then ``1, s + 1, ...``), processed in turn (:class:`LouvainConfig`; buckets of
   fewer than ``move_slice_min`` vertices, none by default, move whole). Each vertex of a
   batch computes its best move (computeMove, Algorithm 2, the gain of Eq. (2)) from the
   communities as they stood at the start of the batch; the moves are then applied and
   ``a_c`` updated before the next batch. Sweeps repeat until the modularity gain of a sweep
   falls below the threshold.

   This departs from the paper, whose Algorithm 1 updates the community ids and ``a_c`` once
   per bucket (lines 8-11). After the first aggregation of an R-MAT (Kronecker) graph nearly
   all vertices fall into one degree bucket, so they all move at once from the same snapshot;
   many move towards the same communities at the same time and overshoot, the sweep lowers
   modularity, it is undone and the level ends early. Applying the moves after each of
   ``move_slices`` batches lets later batches see the earlier ones' moves and closes most of
   that gap. Small buckets are split too: on small weighted graphs a bucket moved whole sends
   vertices after neighbours that leave at the same time.
2. **Aggregation** (Algorithm 3): every community becomes one vertex; edges between two
   communities merge into one edge with the summed weight, edges inside a community into a
   self-loop.

:func:`louvain` runs :class:`~mgmatch.algorithms.louvain_program.LouvainProgram` through
:func:`mgmatch.engine.execute`: on one partition, one sweep or aggregation per step; on several
(in-process or on a Dask cluster), the distributed Louvain of Ghosh et al. with the same
batches, which takes the one-partition decisions (see :mod:`~mgmatch.algorithms.louvain_program`).
Small graphs on one GPU take the fused kernel of :mod:`~mgmatch.algorithms.louvain_fused`.

Weights are held in 60-bit fixed point (a power-of-two scale chosen from the largest weight and
the edge count), so every sum of weights is exact and independent of summation order: the
moves decided by many threads or many partitions are the same on every run, and the CPU and
GPU twins take the same decisions from the same state.

References
----------
.. [1] M. Naim, F. Manne, M. Halappanavar, A. Tumeo, "Community Detection on the GPU",
   IEEE IPDPS 2017.
.. [2] V. D. Blondel, J.-L. Guillaume, R. Lambiotte, E. Lefebvre, "Fast unfolding of
   communities in large networks", J. Stat. Mech. (2008) P10008.
.. [3] S. Ghosh et al., "Distributed Louvain Algorithm for Graph Community Detection",
   IEEE IPDPS 2018.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._array import to_numpy
from ..errors import InputError, ParameterError
from ..convert import attach_mapping, coerce_input
from ..graph import Graph
from .louvain_program import FIXED_BITS, MOVE_BUCKETS, LouvainConfig, LouvainProgram, get_louvain_config, louvain_config

__all__ = [
    "louvain",
    "modularity",
    "LouvainResult",
    "LouvainConfig",
    "LouvainProgram",
    "louvain_config",
    "get_louvain_config",
    "validate_louvain_params",
    "community_size_histogram",
    "MOVE_BUCKETS",
    "FIXED_BITS",
]

#: Thresholds when none is given. A level graph of at most ``LouvainConfig.bin_vertices``
#: vertices stops when a sweep (or the level) raises modularity by less than ``T_FINAL``; a
#: larger one when it rises by less than ``T_REL`` times the modularity reached, and at least
#: ``T_FINAL``. The rule is relative because an absolute one ends the large levels of graphs of
#: low modularity (R-MAT) after a few sweeps, far from where their peers stop, while taking
#: graphs of high modularity (meshes, geometric graphs) through sweeps that add little
#: (docs/performance.md, "Louvain: the threshold above 100,000 vertices").
T_REL = 2.5e-3
T_FINAL = 1e-6
#: The large levels' absolute threshold before the relative rule, kept by the deprecated
#: ``t_bin``/``t_final`` for the release that still takes them.
_FORMER_T_BIN = 1e-3


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
    rounds : RoundLog or None
        Message counts and seconds per round of the partitions' rounds (``None`` on the fused
        single-GPU path, which runs no rounds).
    """

    levels: list
    communities: np.ndarray
    modularity: list
    n_communities: int
    timings: dict
    params: dict
    device: str
    rounds: object = None

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

    def _level_summary(self, i: int, q: float, lv) -> dict:
        out = {"level": i, "modularity": float(q), "n_communities": int(lv.max(initial=-1)) + 1}
        recs = self.timings.get("levels", [])
        if i < len(recs):
            rec = recs[i]
            out["sweeps"] = int(rec.get("iterations", 0))
            out["messages"] = int(rec.get("messages", 0))
            out["time_s"] = {"moves": float(rec.get("move_s", 0.0)), "exchange": float(rec.get("exchange_s", 0.0)),
                             "aggregation": float(rec.get("aggregate_s", 0.0))}
        return out

    def summary(self) -> dict:
        """A JSON-able summary: per level the modularity, community count, sweeps, messages
        exchanged between partitions and seconds moving, exchanging and aggregating; timings;
        parameters.

        >>> import json, mgmatch
        >>> g = mgmatch.Graph.from_edges([0, 1, 2, 3], [1, 2, 0, 4])
        >>> s = louvain(g, device="cpu").summary()
        >>> s["n_communities"], round(s["modularity"], 4), s["levels"][0]["n_communities"]
        (2, 0.375, 2)
        >>> _ = json.dumps(s)
        """
        out = {
            "algorithm": "louvain",
            "device": self.device,
            "n": int(self.communities.shape[0]),
            "n_communities": int(self.n_communities),
            "modularity": float(self.modularity[-1]) if self.modularity else 0.0,
            "modularity_per_level": [float(q) for q in self.modularity],
            "levels": [self._level_summary(i, q, lv) for i, (q, lv) in enumerate(zip(self.modularity, self.levels))],
            "community_sizes": community_size_histogram(self.communities),
            "time_s": _jsonable(self.timings),
            "parameters": _jsonable(self.params),
        }
        for count in ("partitions", "rounds"):  # (also in time_s, deprecated there: they are not times)
            if count in self.timings:
                out[count] = int(self.timings[count])
        if self.rounds is not None:
            from ._rounds import round_fields  # noqa: PLC0415

            out["messages_per_round"] = list(self.rounds.messages)
            out.update(round_fields(self.rounds))
        return out


def community_size_histogram(communities) -> dict:
    """How many communities have each size, in bins that double: sizes 1, 2-3, 4-7, 8-15, ...

    ``size_from[k]`` and ``size_to[k]`` bound bin ``k`` (inclusive), ``communities[k]`` counts
    the communities of a size in it; the bins run up to the one of the largest community.
    Labels are ``0 .. k - 1`` as :func:`louvain` numbers them (a label no vertex has is no
    community).

    >>> community_size_histogram(np.array([0, 0, 0, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3]))  # sizes 3, 1, 5, 4
    {'size_from': [1, 2, 4], 'size_to': [1, 3, 7], 'communities': [1, 1, 2], 'largest': 5}
    >>> community_size_histogram(np.array([], dtype=np.int64))
    {'size_from': [], 'size_to': [], 'communities': [], 'largest': 0}
    """
    sizes = np.bincount(np.asarray(to_numpy(communities), dtype=np.int64))
    sizes = sizes[sizes > 0]
    if sizes.size == 0:
        return {"size_from": [], "size_to": [], "communities": [], "largest": 0}
    bins = np.bincount(np.frexp(sizes)[1] - 1)  # floor(log2(size)), exact: sizes are below 2**53
    lows = 2 ** np.arange(bins.size, dtype=np.int64)
    return {"size_from": lows.tolist(), "size_to": (2 * lows - 1).tolist(), "communities": bins.tolist(),
            "largest": int(sizes.max())}




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
_RENAMED = {"max_levels": "max_level", "t_bin": "threshold", "t_final": "threshold"}


def validate_louvain_params(
    resolution=1.0,
    *,
    threshold=None,
    max_level=None,
    max_iterations=100,
    device="auto",
    t_bin=None,
    t_final=None,
    max_levels=None,
) -> dict:
    """Check Louvain's parameters once for every tier; return them as a dict.

    ``threshold`` (NetworkX's and cuGraph's name) ends a level's sweeps, and the levels, when
    modularity rises by less; ``None`` takes ``1e-6`` on level graphs of at most 100,000
    vertices and, on larger ones, ``2.5e-3`` times the modularity reached (at least ``1e-6``).
    The dict holds the large levels' floor and factor as ``t_bin`` and ``t_rel`` (0 when a
    threshold is given), the small levels' threshold as ``t_final``: a large level stops below
    ``max(t_bin, t_rel * Q)``. ``t_bin``, ``t_final`` and ``max_levels`` are the former names,
    deprecated (a :class:`FutureWarning`), and go in the next release; given, they keep the
    former absolute rule (``t_bin`` 1e-3 unless given).

    Raises
    ------
    ParameterError
        A value is out of its domain, or a parameter is given under both names.

    Examples
    --------
    >>> validate_louvain_params(1.0, device="cpu")["resolution"]
    1.0
    >>> validate_louvain_params(threshold=1e-7)["t_bin"]
    1e-07
    >>> validate_louvain_params(-1.0)
    Traceback (most recent call last):
    ...
    mgmatch.errors.ParameterError: resolution must be a positive finite number, not -1.0
    """
    if device not in ("auto", "cpu", "gpu"):
        raise ParameterError(f"device must be 'auto', 'cpu' or 'gpu', not {device!r}")
    for old, value in (("t_bin", t_bin), ("t_final", t_final), ("max_levels", max_levels)):
        if value is not None:
            new = _RENAMED[old]
            if (new == "threshold" and threshold is not None) or (new == "max_level" and max_level is not None):
                raise ParameterError(f"give {new} or its former name {old}, not both")
            warnings.warn(f"louvain's {old} is deprecated and goes in the next release; use {new}",
                          FutureWarning, stacklevel=3)
    t_rel = 0.0
    if threshold is not None:
        threshold = _positive_real("threshold", threshold, allow_zero=True)
        tb = tf = threshold
    elif t_bin is not None or t_final is not None:  # the former names keep the former, absolute rule
        tb = _FORMER_T_BIN if t_bin is None else _positive_real("t_bin", t_bin, True)
        tf = T_FINAL if t_final is None else _positive_real("t_final", t_final, True)
    else:
        tb, tf, t_rel = T_FINAL, T_FINAL, T_REL
    if max_level is None:
        max_level = 100 if max_levels is None else _positive_int("max_levels", max_levels)
    return {
        "resolution": _positive_real("resolution", resolution),
        "threshold": threshold,
        "t_bin": tb,
        "t_final": tf,
        "t_rel": t_rel,
        "max_level": _positive_int("max_level", max_level),
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
    graph,
    resolution: float = 1.0,
    *,
    threshold: float | None = None,
    max_level: int | None = None,
    max_iterations: int = 100,
    device: str = "auto",
    partitions=None,
    client=None,
    progress=None,
    config: LouvainConfig | None = None,
    t_bin: float | None = None,
    t_final: float | None = None,
    max_levels: int | None = None,
) -> LouvainResult:
    r"""Communities of an undirected graph by the Louvain method, after Naim et al. (GPU Louvain).

    Parameters
    ----------
    graph : Graph, DistributedGraph or graph-like
        An undirected graph, weighted or not (unweighted edges count 1); one placed on a Dask
        cluster (then ``client`` is required); or a NetworkX graph, SciPy matrix, edge table or ``(src, dst[, weight])`` arrays
        (see :func:`mgmatch.convert.as_graph`; the result's ``mapping`` then gives the user's ids
        back to :func:`~mgmatch.convert.to_pandas` and the other converters).
    resolution : float
        The resolution :math:`\gamma > 0`; larger values give smaller communities.
    threshold : float, optional
        A level's move phase stops when one sweep raises modularity by less, and the levels stop
        when one level does. Default: on level graphs of more than 100,000 vertices, ``2.5e-3``
        times the modularity reached (at least ``1e-6``); ``1e-6`` on smaller ones.
    max_level : int, optional
        Most levels (aggregations) to run; default 100.
    max_iterations : int
        Most sweeps of the move phase per level.
    device : {"auto", "cpu", "gpu"}
        Where to run; ``auto`` takes the GPU when one is visible.
    partitions : int or sequence of int, optional
        Partition count or bounds (see :func:`mgmatch.engine.execute`). Default: one in-process,
        one per worker on a cluster. The labels do not depend on it.
    client : distributed.Client, optional
        Run on this Dask cluster.
    progress : callable, optional
        ``progress(level, sweeps, modularity)`` after every sweep of the move phase and every
        aggregation: the level in progress (from 0), the sweeps done on it, and the modularity
        of the partition so far. On a GPU, graphs that take the fused kernel run every level in
        one launch, which reports only the levels it hands back to the host.
    config : LouvainConfig, optional
        Tunables (batches per bucket, the gather threshold of several partitions, the fused
        kernel's size limit, the GPU kernels' shapes and budgets); default:
        :func:`get_louvain_config` (see :func:`louvain_config`).
    t_bin, t_final, max_levels
        Former names of ``threshold`` (the thresholds above and below 100,000 vertices) and
        ``max_level``; deprecated.

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
    it is undone). Results are deterministic for a given graph and parameters, and the same on
    CPU and GPU and for every partition count.

    References
    ----------
    .. [1] M. Naim, F. Manne, M. Halappanavar, A. Tumeo, "Community Detection on the GPU",
       IEEE IPDPS 2017.
    .. [2] S. Ghosh et al., "Distributed Louvain Algorithm for Graph Community Detection",
       IEEE IPDPS 2018.

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
    >>> louvain(g, device="cpu", partitions=2).communities.tolist()
    [0, 0, 0, 1, 1, 1]
    """
    from ..engine import execute, is_distributed_graph  # noqa: PLC0415

    params = validate_louvain_params(
        resolution, threshold=threshold, max_level=max_level, max_iterations=max_iterations, device=device,
        t_bin=t_bin, t_final=t_final, max_levels=max_levels,
    )
    if config is None:
        config = get_louvain_config()
    elif not isinstance(config, LouvainConfig):
        raise ParameterError(f"config must be a LouvainConfig, not {type(config).__name__}")
    graph, mapping = coerce_input(graph, bipartite=False)
    if not is_distributed_graph(graph):
        if graph.bipartite:
            raise InputError("louvain needs an undirected graph; this one is bipartite")
    if progress is not None and not callable(progress):
        raise ParameterError(f"progress must be callable, not {type(progress).__name__}")
    t0 = time.perf_counter()
    # (the program travels to a cluster's workers; the callback, used only by the fused path's
    # hand-over in this process, stays here)
    program = LouvainProgram(params, config, progress=progress if client is None else None)
    result = execute(program, graph, partitions=partitions, device=params["device"], client=client,
                     progress=None if progress is None else _LevelProgress(progress))
    if isinstance(result, LouvainResult):
        result.timings["total_s"] = time.perf_counter() - t0
    return attach_mapping(result, mapping)


class _LevelProgress:
    """The engine's per-round record as ``progress(level, sweeps, modularity)``, called on the
    rounds that end a sweep or an aggregation."""

    def __init__(self, progress):
        self.progress = progress

    def __call__(self, record: dict) -> None:
        if record.get("event"):
            self.progress(record["level"], record["sweeps"], record["modularity"])


def modularity(graph: Graph, communities, resolution: float = 1.0) -> float:
    r"""Modularity of a partition of an undirected graph's vertices.

    .. math:: Q = \frac{1}{2m}\sum_{ij} A_{ij}\,[c_i = c_j]
              - \gamma \sum_c \Big(\frac{a_c}{2m}\Big)^2, \qquad a_c = \sum_{i \in c} k_i,

    the definition NetworkX's ``modularity`` uses. A graph without edge weight has ``Q = 0``.

    Parameters
    ----------
    graph : Graph or graph-like
        An undirected graph (or what :func:`mgmatch.convert.as_graph` takes).
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
    graph, _ = coerce_input(graph, bipartite=False)
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


def _result(levels: list, modularity, n_communities, timings: dict, params: dict, device: str) -> LouvainResult:
    """The result of the host rows ``levels`` (int64); ``n_communities`` ``None``: counted from the last."""
    last = levels[-1] if levels else np.zeros(0, dtype=np.int64)
    if n_communities is None:
        n_communities = int(last.max()) + 1 if last.shape[0] else 0
    return LouvainResult(
        levels=levels, communities=last, modularity=[float(q) for q in modularity],
        n_communities=n_communities, timings=timings, params=params, device=device,
    )


