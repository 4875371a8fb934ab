"""Seeded generators of the graph families used by the benchmarks and the papers' experiments.

Every generator returns a :class:`~mgmatch.graph.Graph` in canonical form (no self-loops, no
duplicate edges, sorted neighbour lists) and is deterministic: the same call twice gives
identical arrays. ``seed`` drives both the structure and the weights:

* the structure (points, Kronecker samples, deleted edges, ...) comes from a child stream of
  ``seed`` (``numpy.random.SeedSequence(seed, spawn_key=(1,))``);
* ``weights="random"`` draws one weight per undirected edge, uniformly from (0, 1], exactly as
  ``Graph.from_edges(..., random_weights=seed)`` does: the ``i``-th edge in ``(u, v)`` order
  (``u < v``) gets weight ``i`` of :func:`mgmatch.graph.random_unit_weights` with ``seed``;
* ``weights=None`` or ``"unit"`` gives every edge weight 1.0 (an unweighted graph).

Families
--------
=====================  ==============================================================
``delaunay``           Delaunay triangulation of ``2**k`` random points (DIMACS10
                       ``delaunay_nK``)
``rgg``                random geometric graph on ``2**k`` points (DIMACS10 ``rgg_n_2_K_s0``)
``kron``               Graph500 Kronecker / R-MAT graph (DIMACS10 ``kron_g500-lognK``)
``grid2d``             2-D four-neighbour grid, optionally with random edge deletions
``random_bipartite``   uniform random bipartite graph (rows x columns)
``erdos_renyi``        uniform random graph with a given number of edges, G(n, m)
=====================  ==============================================================

Graph specs
-----------
Benchmarks, pipeline files and the command line name a generated graph with a *spec*::

    NAME[:KEY=VALUE[,KEY=VALUE]...]

``NAME`` is a key of :data:`GENERATORS`; each ``KEY`` is a keyword parameter of that generator.
A ``VALUE`` is read as an integer (``18``, ``1_000``), else as a float (``0.25``, ``1e-3``), else
``none``/``null`` is ``None``, else it stays a string (``weights=unit``). Spaces around names,
keys and values are ignored. Examples: ``kron:k=18,seed=1``, ``grid2d:nx=1000,ny=500,
delete_fraction=0.1``, ``random_bipartite:n_rows=1000,n_cols=2000,avg_degree=8``.
See :func:`parse_graph_spec`.

References
----------
.. [DIMACS10] D. A. Bader, H. Meyerhenke, P. Sanders, D. Wagner (eds.), "Graph Partitioning
   and Graph Clustering", 10th DIMACS Implementation Challenge, Contemporary Mathematics 588,
   AMS, 2013. Families ``delaunay_n*``, ``rgg_n_2_*_s0`` and ``kron_g500-logn*``.
.. [HSS10] M. Holtgrewe, P. Sanders, C. Schulz, "Engineering a scalable high quality graph
   partitioner", IPDPS 2010 (origin of the ``delaunay`` and ``rgg`` families).
.. [G500] Graph 500 Steering Committee, "Graph 500 benchmark specification", section
   "Kronecker graph generator", https://graph500.org/.
.. [RMAT] D. Chakrabarti, Y. Zhan, C. Faloutsos, "R-MAT: a recursive model for graph mining",
   SIAM International Conference on Data Mining, 2004.
"""

from __future__ import annotations

import inspect
import math
import numbers

import numpy as np

from ._array import check_host_memory
from .errors import ParameterError
from .graph import CanonSummary, Graph, index_dtype_for, random_unit_weights

__all__ = [
    "delaunay",
    "rgg",
    "kron",
    "grid2d",
    "random_bipartite",
    "erdos_renyi",
    "rgg_radius",
    "GENERATORS",
    "generate",
    "parse_graph_spec",
    "split_graph_spec",
    "builtin_demo_graph",
    "sm_easy",
    "sm_hard",
    "sm_random",
    "PREFERENCE_GENERATORS",
    "parse_preferences_spec",
]

_MAX_K = 30
_WEIGHT_CHOICES = ("random", "unit", None)

# Delaunay triangulation by tiles (see _delaunay_triangles_tiled).
_TILE_POINTS = 4096  # points in the core of one tile
_TILE_MIN_POINTS = 1 << 18  # fewer points are triangulated in one piece
_MARGIN_POINTS = 30.0  # expected points in a disk of radius `margin`: n * pi * margin**2
_KRON_CHUNK = 1 << 16  # Kronecker samples per vectorised block (part of the seeded stream)


# ============================================================================ families
def delaunay(k, *, seed=0, weights="random", order="random") -> Graph:
    """Delaunay triangulation of ``2**k`` uniform random points in the unit square.

    The DIMACS10 ``delaunay_nK`` family [DIMACS10]_ [HSS10]_: vertex ``i`` is the ``i``-th point
    (see ``order``), and ``{i, j}`` is an edge when the two points share a triangle.

    Parameters
    ----------
    k : int
        ``log2`` of the number of vertices, ``1 <= k <= 30``.
    seed : int
        Seed of the points and the weights.
    weights : {"random", "unit", None}
        Uniform (0, 1] weights per edge, or 1.0 everywhere.
    order : {"random", "cells"}
        How the points are numbered: as they are drawn (neighbours' ids are unrelated: half of
        the edges cross the middle of the id range), or cell by cell, row by row, in a grid of
        about one point per cell (neighbours get nearby ids, as a mesh's numbering gives them:
        a range of ids is a strip of the square). The same points, so the same graph up to the
        numbering, except for which edge gets which random weight.

    Returns
    -------
    Graph
        Planar graph with ``n = 2**k`` vertices and ``m = 3n - 3 - h`` edges, where ``h`` is the
        number of points on the convex hull (so the average degree is just under 6).

    Raises
    ------
    ParameterError
        ``k`` outside ``[1, 30]``, a negative seed, or an unknown ``weights`` or ``order``.
    ResourceError
        The graph would not fit in this machine's memory.

    Notes
    -----
    Large inputs are triangulated tile by tile: each tile is triangulated together with a margin
    of neighbouring points, and a triangle is kept only when its circumcircle lies inside the
    points that tile saw (so no other point can lie in it). Triangles along the hull are taken
    from a triangulation of the points near the border of the square. The result is checked
    against Euler's count of ``2n - 2 - h`` triangles; if the check fails the whole point set is
    triangulated in one piece, so the graph is always the Delaunay graph of the points.

    Examples
    --------
    >>> g = delaunay(8, seed=3)
    >>> g.n, g.m <= 3 * g.n - 6
    (256, True)
    """
    k = _check_k(k)
    seed = _check_seed(seed)
    random_weights = _check_weights(weights)
    n = 1 << k
    cells = _check_order(order)
    _check_memory(f"delaunay(k={k})", 150.0 * n)
    points = _structure_rng(seed).random((n, 2))
    if cells:
        points = points[_cell_order(points, 1.0 / math.sqrt(n))]
    keys = _delaunay_edge_keys(points)
    summary = CanonSummary(input_entries=int(keys.size))
    return _undirected_graph(keys, n, seed if random_weights else None, summary)


def rgg(k, *, seed=0, weights="random", order="random") -> Graph:
    """Random geometric graph on ``2**k`` uniform random points in the unit square.

    The DIMACS10 ``rgg_n_2_K_s0`` family [DIMACS10]_ [HSS10]_: points ``i`` and ``j`` are
    joined when their Euclidean distance is below ``r = 0.55 * sqrt(ln n / n)``.

    Parameters
    ----------
    k : int
        ``log2`` of the number of vertices, ``1 <= k <= 30``.
    seed : int
        Seed of the points and the weights.
    weights : {"random", "unit", None}
        Uniform (0, 1] weights per edge, or 1.0 everywhere.
    order : {"random", "cells"}
        How the points are numbered: as they are drawn, or cell by cell, row by row, in the grid
        of cells of side ``r`` (see :func:`delaunay`).

    Returns
    -------
    Graph
        ``n = 2**k`` vertices; the expected degree away from the border is
        :math:`n \\pi r^2 = 0.3025\\,\\pi \\ln n`.

    Raises
    ------
    ParameterError
        ``k`` outside ``[1, 30]``, a negative seed, or an unknown ``weights`` or ``order``.
    ResourceError
        The graph would not fit in this machine's memory.

    Examples
    --------
    >>> g = rgg(10, seed=1)
    >>> g.n, 5 < 2 * g.m / g.n < 7
    (1024, True)
    """
    from scipy.spatial import cKDTree  # noqa: PLC0415

    k = _check_k(k)
    seed = _check_seed(seed)
    random_weights = _check_weights(weights)
    n = 1 << k
    cells = _check_order(order)
    radius = rgg_radius(n)
    _check_memory(f"rgg(k={k})", 20.0 * n * max(1.0, n * math.pi * radius**2))
    points = _structure_rng(seed).random((n, 2))
    if cells:
        points = points[_cell_order(points, radius)]
    tree = cKDTree(points, balanced_tree=False, compact_nodes=False)
    pairs = tree.query_pairs(radius, output_type="ndarray")  # rows (i, j) with i < j
    del tree
    keys = pairs[:, 0].astype(np.int64) * n + pairs[:, 1]
    del pairs
    keys.sort()
    summary = CanonSummary(input_entries=int(keys.size))
    return _undirected_graph(keys, n, seed if random_weights else None, summary)


def rgg_radius(n: int) -> float:
    """Connection radius ``0.55 * sqrt(ln n / n)`` of :func:`rgg` on ``n`` points.

    >>> f"{rgg_radius(2**18):.6f}"
    '0.003794'
    """
    return 0.55 * math.sqrt(math.log(n) / n) if n > 1 else 0.0


def kron(k, *, edge_factor=48, seed=0, a=0.57, b=0.19, c=0.19, weights="random") -> Graph:
    """Graph500 Kronecker (R-MAT) graph on ``2**k`` vertices.

    The DIMACS10 ``kron_g500-lognK`` family [DIMACS10]_, generated as the Graph500
    specification describes [G500]_ [RMAT]_: ``edge_factor * 2**k`` edge samples, each choosing
    the ``k`` bits of its two endpoints one level at a time, quadrant ``(0, 0)``, ``(0, 1)``,
    ``(1, 0)``, ``(1, 1)`` with probabilities ``a``, ``b``, ``c``, ``d = 1 - a - b - c``
    (independently at every level); then the vertex labels are randomly permuted. Self-loops and
    repeated samples are removed, so the graph has fewer than ``edge_factor * 2**k`` edges, and
    vertices that no sample touched are kept as isolated vertices.

    Parameters
    ----------
    k : int
        ``log2`` of the number of vertices (the Graph500 SCALE), ``1 <= k <= 30``.
    edge_factor : int
        Edge samples per vertex (DIMACS10 used 48; the Graph500 benchmark uses 16).
    seed : int
        Seed of the samples, the relabelling and the weights.
    a, b, c : float
        Initiator probabilities; ``a + b + c <= 1``.
    weights : {"random", "unit", None}
        Uniform (0, 1] weights per edge, or 1.0 everywhere.

    Returns
    -------
    Graph
        A graph with a heavily skewed degree distribution.

    Raises
    ------
    ParameterError
        ``k`` outside ``[1, 30]``, ``edge_factor < 1``, probabilities outside ``[0, 1]`` or
        summing past 1, a negative seed, or an unknown ``weights``.
    ResourceError
        The graph would not fit in this machine's memory.

    Examples
    --------
    >>> g = kron(10, edge_factor=16, seed=2)
    >>> g.n, g.m < 16 * g.n, int(g.degrees.max()) > 10 * 2 * g.m / g.n
    (1024, True, True)
    """
    k = _check_k(k)
    edge_factor = _check_int("edge_factor", edge_factor, 1)
    a = _check_real("a", a, 0.0, 1.0)
    b = _check_real("b", b, 0.0, 1.0)
    c = _check_real("c", c, 0.0, 1.0)
    if a + b + c > 1.0 + 1e-12:
        raise ParameterError(f"a + b + c must not exceed 1, got {a} + {b} + {c} = {a + b + c}")
    seed = _check_seed(seed)
    random_weights = _check_weights(weights)

    n = 1 << k
    samples = edge_factor * n
    _check_memory(f"kron(k={k}, edge_factor={edge_factor})", 24.0 * samples)
    rng = _structure_rng(seed)
    relabel = rng.permutation(n).astype(np.uint32)
    keys = np.empty(samples, dtype=np.int64)
    kept = 0
    for start in range(0, samples, _KRON_CHUNK):
        size = min(_KRON_CHUNK, samples - start)
        src, dst = _rmat_block(rng, k, size, a, b, c)
        src, dst = relabel[src], relabel[dst]
        lo, hi = np.minimum(src, dst), np.maximum(src, dst)
        proper = lo != hi
        block = (lo[proper].astype(np.int64) << k) | hi[proper]
        keys[kept : kept + block.size] = block
        kept += block.size
    keys = keys[:kept]
    keys.sort()
    keys = _drop_repeats(keys)
    summary = CanonSummary(
        input_entries=int(samples),
        self_loops_dropped=int(samples - kept),
        duplicates_merged=int(kept - keys.size),
    )
    return _undirected_graph(keys, n, seed if random_weights else None, summary)


def grid2d(nx, ny=None, *, weights="random", seed=0, delete_fraction=0.0) -> Graph:
    """Two-dimensional ``nx`` x ``ny`` grid with four-neighbour connectivity.

    Vertex ``x + nx * y`` sits at column ``x`` and row ``y``. With ``delete_fraction > 0``, that
    fraction of the edges (rounded to the nearest count) is removed, chosen uniformly at random:
    a road-network-like graph with dead ends and detours.

    Parameters
    ----------
    nx : int
        Columns, at least 1.
    ny : int, optional
        Rows, at least 1; defaults to ``nx``.
    weights : {"random", "unit", None}
        Uniform (0, 1] weights per edge, or 1.0 everywhere.
    seed : int
        Seed of the deletions and the weights.
    delete_fraction : float
        Fraction of the edges to remove, ``0 <= delete_fraction < 1``.

    Returns
    -------
    Graph
        ``nx * ny`` vertices and ``m - round(delete_fraction * m)`` edges, where
        ``m = 2 nx ny - nx - ny`` is the edge count of the full grid.

    Raises
    ------
    ParameterError
        Non-positive sizes, a fraction outside ``[0, 1)``, a negative seed, or an unknown
        ``weights``.
    ResourceError
        The graph would not fit in this machine's memory.

    Examples
    --------
    >>> g = grid2d(4, 3, weights=None)
    >>> g.n, g.m, g.neighbours(5)[0].tolist()
    (12, 17, [1, 4, 6, 9])
    >>> grid2d(10, delete_fraction=0.5, seed=1).m
    90
    """
    nx = _check_int("nx", nx, 1)
    ny = nx if ny is None else _check_int("ny", ny, 1)
    delete_fraction = _check_real("delete_fraction", delete_fraction, 0.0, 1.0, include_high=False)
    seed = _check_seed(seed)
    random_weights = _check_weights(weights)

    n = nx * ny
    _check_memory(f"grid2d({nx}, {ny})", 64.0 * n)
    vertex = np.arange(n, dtype=np.int64)
    x = vertex % nx
    y = vertex // nx
    # Per vertex, its right neighbour then its lower one: already in sorted (u, v) order.
    right = np.where(x < nx - 1, vertex * n + vertex + 1, -1)
    down = np.where(y < ny - 1, vertex * n + vertex + nx, -1)
    keys = np.stack([right, down], axis=1).ravel()
    keys = keys[keys >= 0]
    total = keys.size
    removed = 0
    if delete_fraction > 0 and total:
        removed = int(round(delete_fraction * total))
        doomed = _sample_distinct(_structure_rng(seed), total, removed)
        keep = np.ones(total, dtype=bool)
        keep[doomed] = False
        keys = keys[keep]
    summary = CanonSummary(input_entries=int(total))
    return _undirected_graph(keys, n, seed if random_weights else None, summary)


def random_bipartite(
    n_rows, n_cols, *, avg_degree=None, density=None, seed=0, weights=None
) -> Graph:
    """Uniform random bipartite graph between ``n_rows`` rows and ``n_cols`` columns.

    Exactly ``m`` distinct (row, column) pairs are chosen uniformly among all ``m``-subsets, with
    ``m = round(avg_degree * n_rows)`` or ``m = round(density * n_rows * n_cols)``.

    Parameters
    ----------
    n_rows, n_cols : int
        Sizes of the two sides, at least 0.
    avg_degree : float, optional
        Mean number of edges per row, ``0 <= avg_degree <= n_cols``.
    density : float, optional
        Fraction of the ``n_rows * n_cols`` possible edges, ``0 <= density <= 1``.
        Give exactly one of ``avg_degree`` and ``density``.
    seed : int
        Seed of the edges and the weights.
    weights : {None, "unit", "random"}
        1.0 everywhere (the default, as cardinality matching ignores weights), or uniform
        (0, 1] weights per edge.

    Returns
    -------
    Graph
        ``bipartite=True`` with ``shape == (n_rows, n_cols)``.

    Raises
    ------
    ParameterError
        Negative sizes, both or neither of ``avg_degree`` and ``density``, values out of range,
        a negative seed, or an unknown ``weights``.
    ResourceError
        The graph would not fit in this machine's memory.

    Examples
    --------
    >>> g = random_bipartite(100, 50, avg_degree=4, seed=1)
    >>> g.shape, g.m, g.bipartite
    ((100, 50), 400, True)
    >>> random_bipartite(10, 10, density=0.25).m
    25
    """
    n_rows = _check_int("n_rows", n_rows, 0)
    n_cols = _check_int("n_cols", n_cols, 0)
    if (avg_degree is None) == (density is None):
        raise ParameterError("give exactly one of avg_degree and density")
    total = n_rows * n_cols
    if density is not None:
        density = _check_real("density", density, 0.0, 1.0)
        m = int(round(density * total))
    else:
        avg_degree = _check_real("avg_degree", avg_degree, 0.0, float(n_cols))
        m = int(round(avg_degree * n_rows))
    m = min(m, total)
    seed = _check_seed(seed)
    random_weights = _check_weights(weights)
    _check_memory(f"random_bipartite({n_rows}, {n_cols})", 40.0 * m + 8.0 * n_rows)

    keys = _sample_distinct(_structure_rng(seed), total, m)
    rows, cols = np.divmod(keys, max(n_cols, 1))
    del keys
    idx = index_dtype_for(max(n_rows, n_cols), m)
    indptr = np.zeros(n_rows + 1, dtype=idx)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    del rows
    summary = CanonSummary(input_entries=int(m), weighted=random_weights)
    if random_weights:
        summary.random_weights_seed = seed
        edge_weights = random_unit_weights(m, seed)
    else:
        edge_weights = np.ones(m, dtype=np.float64)
    return Graph(
        indptr=indptr,
        indices=cols.astype(idx),
        weights=edge_weights,
        n_rows=n_rows,
        n_cols=n_cols,
        bipartite=True,
        weighted=random_weights,
        summary=summary,
    )


def erdos_renyi(n, *, avg_degree, seed=0, weights="random") -> Graph:
    """Uniform random graph G(n, m) with ``m = round(avg_degree * n / 2)`` edges.

    Every set of ``m`` distinct vertex pairs is equally likely (the Erdős–Rényi model with a
    fixed edge count).

    Parameters
    ----------
    n : int
        Number of vertices, at least 0.
    avg_degree : float
        Mean vertex degree, ``0 <= avg_degree <= n - 1``.
    seed : int
        Seed of the edges and the weights.
    weights : {"random", "unit", None}
        Uniform (0, 1] weights per edge, or 1.0 everywhere.

    Returns
    -------
    Graph

    Raises
    ------
    ParameterError
        A negative ``n``, ``avg_degree`` out of range, a negative seed, or an unknown
        ``weights``.
    ResourceError
        The graph would not fit in this machine's memory.

    Examples
    --------
    >>> g = erdos_renyi(100, avg_degree=6, seed=1)
    >>> g.n, g.m
    (100, 300)
    """
    n = _check_int("n", n, 0)
    avg_degree = _check_real("avg_degree", avg_degree, 0.0, float(max(n - 1, 0)))
    seed = _check_seed(seed)
    random_weights = _check_weights(weights)
    total = n * (n - 1) // 2
    m = min(int(round(avg_degree * n / 2)), total)
    _check_memory(f"erdos_renyi({n})", 60.0 * m + 8.0 * n)
    pair = _sample_distinct(_structure_rng(seed), total, m)
    u, v = _unrank_pairs(pair, n)
    keys = u * n + v  # pair ranks and these keys are both in (u, v) order
    summary = CanonSummary(input_entries=int(m))
    return _undirected_graph(keys, n, seed if random_weights else None, summary)


def builtin_demo_graph() -> Graph:
    """The demo graph: ``delaunay(16, seed=1)``, 65,536 vertices and about 196,000 edges.

    >>> builtin_demo_graph().n
    65536
    """
    return delaunay(16, seed=1)


GENERATORS = {
    "delaunay": delaunay,
    "rgg": rgg,
    "kron": kron,
    "grid2d": grid2d,
    "random_bipartite": random_bipartite,
    "erdos_renyi": erdos_renyi,
}
"""Generator functions by family name, as used in graph specs and on the command line."""


# ============================================================================ names and specs
def generate(name: str, **params) -> Graph:
    """Run the generator called ``name`` (a key of :data:`GENERATORS`) with ``params``.

    Raises
    ------
    ParameterError
        An unknown name, a missing or unknown parameter, or an invalid value.

    Examples
    --------
    >>> generate("grid2d", nx=3, ny=2).m
    7
    """
    if not isinstance(name, str) or name not in GENERATORS:
        raise ParameterError(
            f"unknown graph generator {name!r}; choose one of {', '.join(sorted(GENERATORS))}"
        )
    fn = GENERATORS[name]
    _bind(name, fn, params)
    return fn(**params)


def _bind(name: str, fn, params: dict) -> None:
    """Refuse ``params`` that ``fn`` does not take, naming an unknown one before a missing one (a
    misspelt parameter leaves its right name missing)."""
    signature = inspect.signature(fn)
    accepted = ", ".join(signature.parameters)
    unknown = [key for key in params if key not in signature.parameters]
    if unknown:
        raise ParameterError(f"{name}: unknown parameter {unknown[0]!r} (parameters: {accepted})")
    try:
        signature.bind(**params)
    except TypeError as exc:
        raise ParameterError(f"{name}: {exc} (parameters: {accepted})") from None


def parse_graph_spec(spec: str) -> Graph:
    """Generate the graph named by a spec such as ``"kron:k=18,seed=1"``.

    The syntax is ``NAME[:KEY=VALUE[,KEY=VALUE]...]`` (see the module documentation); values
    are read as integers, then floats, then ``none``/``null``, else kept as strings.

    Raises
    ------
    ParameterError
        A malformed spec, an unknown generator or parameter, or an invalid value.

    Examples
    --------
    >>> parse_graph_spec("grid2d:nx=4,ny=3,weights=unit").m
    17
    >>> parse_graph_spec("delaunay: k = 6, seed = 2").n
    64
    """
    name, params = split_graph_spec(spec)
    return generate(name, **params)


def split_graph_spec(spec: str, *, families=None) -> tuple[str, dict]:
    """The generator name and parameters of a graph spec, without generating anything
    (``families``: the names allowed, :data:`GENERATORS` by default).

    >>> split_graph_spec("kron:k=18,seed=1,a=0.6,weights=none")
    ('kron', {'k': 18, 'seed': 1, 'a': 0.6, 'weights': None})
    """
    families = GENERATORS if families is None else families
    if not isinstance(spec, str):
        raise ParameterError(f"a graph spec must be a string, not {type(spec).__name__}")
    name, sep, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise ParameterError(
            f"graph spec {spec!r} has no generator name (expected NAME:KEY=VALUE,...)"
        )
    if name not in families:
        raise ParameterError(
            f"graph spec {spec!r}: unknown generator {name!r}; "
            f"choose one of {', '.join(sorted(families))}"
        )
    params: dict = {}
    if sep and rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if not eq or not key.isidentifier() or not value:
                raise ParameterError(
                    f"graph spec {spec!r}: expected KEY=VALUE, got {item.strip()!r}"
                )
            if key in params:
                raise ParameterError(f"graph spec {spec!r}: parameter {key!r} is given twice")
            params[key] = _parse_spec_value(value)
    return name, params


def _parse_spec_value(text: str):
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    if text.lower() in ("none", "null"):
        return None
    return text


# ============================================================================ validation
def _check_int(name, value, low, high=None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"{name} must be an integer, not {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        bounds = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ParameterError(f"{name} must be {bounds}, not {value}")
    return value


def _check_k(k) -> int:
    return _check_int("k", k, 1, _MAX_K)


def _check_real(name, value, low, high, *, include_high=True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a number, not {value!r}")
    value = float(value)
    above = value > high if include_high else value >= high
    if not math.isfinite(value) or value < low or above:
        interval = f"[{low:g}, {high:g}{']' if include_high else ')'}"
        raise ParameterError(f"{name} must lie in {interval}, not {value}")
    return value


def _check_seed(seed) -> int:
    return _check_int("seed", seed, 0)


def _check_weights(weights) -> bool:
    """True for random weights, False for unit weights."""
    if weights is not None and not (isinstance(weights, str) and weights in _WEIGHT_CHOICES):
        raise ParameterError(f"weights must be 'random', 'unit' or None, not {weights!r}")
    return weights == "random"


def _check_order(order) -> bool:
    """True for the cell-by-cell numbering, False for the order drawn."""
    if not (isinstance(order, str) and order in ("random", "cells")):
        raise ParameterError(f"order must be 'random' or 'cells', not {order!r}")
    return order == "cells"


def _cell_order(points: np.ndarray, side: float) -> np.ndarray:
    """The points' positions sorted by their cell in a grid of cells of ``side`` (row by row,
    then column), in the order drawn within a cell."""
    if side <= 0 or points.shape[0] < 2:
        return np.arange(points.shape[0])
    per_row = math.ceil(1.0 / side)
    cell = np.minimum((points / side).astype(np.int64), per_row - 1)
    return np.argsort(cell[:, 1] * per_row + cell[:, 0], kind="stable")


def _check_memory(what: str, estimate_bytes: float) -> None:
    """Refuse a graph whose working set alone exceeds the machine's physical memory."""
    check_host_memory(f"generating {what}", estimate_bytes)


def _structure_rng(seed: int) -> np.random.Generator:
    """The generator of a graph's structure: a child stream of ``seed``, independent of the
    weight stream ``numpy.random.default_rng(seed)``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))


# ============================================================================ assembly
def _undirected_graph(keys, n: int, weight_seed: int | None, summary: CanonSummary) -> Graph:
    """The canonical graph of the edges ``keys = u * n + v`` (sorted, distinct, ``u < v``).

    Gives exactly what ``Graph.from_edges(u, v, n=n, random_weights=weight_seed)`` gives for
    these edges: the keys are already canonical, so the graph model's linear-time CSR builder
    takes them as they are, skipping the sort that ``from_edges`` needs for arbitrary input.
    ``keys`` is overwritten.
    """
    n_div = max(n, 1)
    u = keys // n_div
    np.remainder(keys, n_div, out=keys)
    if weight_seed is None:
        edge_weights = np.ones(keys.size, dtype=np.float64)
    else:
        edge_weights = random_unit_weights(keys.size, weight_seed)
        summary.random_weights_seed = int(weight_seed)
    summary.weighted = weight_seed is not None
    return Graph._from_sorted_pairs(u, keys, edge_weights, n, n, False, weight_seed is not None, summary,
                                    np.dtype(np.float64))


def _drop_repeats(sorted_keys):
    """The distinct values of a sorted array."""
    if sorted_keys.size == 0:
        return sorted_keys
    first = np.empty(sorted_keys.size, dtype=bool)
    first[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=first[1:])
    return sorted_keys[first]


def _sample_distinct(rng, total: int, count: int):
    """``count`` distinct integers from ``[0, total)``, sorted, every subset equally likely."""
    if count > total:
        raise ParameterError(f"cannot choose {count} distinct items out of {total}")
    if count == 0:
        return np.empty(0, dtype=np.int64)
    if 2 * count > total:  # dense: choose the complement instead
        left_out = _sample_distinct(rng, total, total - count)
        keep = np.ones(total, dtype=bool)
        keep[left_out] = False
        return np.flatnonzero(keep).astype(np.int64)
    chosen = np.empty(0, dtype=np.int64)
    while chosen.size < count:
        missing = count - chosen.size
        fresh = 1.0 - chosen.size / total  # chance that a new draw is not chosen yet
        draws = rng.integers(0, total, size=int(missing / fresh * 1.05) + 16, dtype=np.int64)
        chosen = np.concatenate([chosen, draws])
        chosen.sort()
        chosen = _drop_repeats(chosen)
    if chosen.size > count:  # the chosen set is exchangeable: drop a uniform surplus
        surplus = rng.choice(chosen.size, size=chosen.size - count, replace=False)
        keep = np.ones(chosen.size, dtype=bool)
        keep[surplus] = False
        chosen = chosen[keep]
    return chosen


def _unrank_pairs(rank, n: int):
    """Pairs ``(u, v)``, ``u < v < n``, of the given ranks in row-major order."""
    rank = np.asarray(rank, dtype=np.int64)

    def row_start(u):  # rank of (u, u + 1)
        return u * (2 * n - u - 1) // 2

    disc = float(2 * n - 1) ** 2 - 8.0 * rank.astype(np.float64)
    u = np.floor((2 * n - 1 - np.sqrt(np.maximum(disc, 0.0))) / 2).astype(np.int64)
    u = np.clip(u, 0, max(n - 2, 0))
    while True:  # the float estimate is off by at most a few rows
        low = row_start(u) > rank
        high = row_start(u + 1) <= rank
        if not (low.any() or high.any()):
            break
        u = u - low + high
    v = rank - row_start(u) + u + 1
    return u, v


# ============================================================================ R-MAT
def _rmat_block(rng, k: int, size: int, a: float, b: float, c: float):
    """``size`` R-MAT samples: per level, one 32-bit draw picks the quadrant.

    Quadrants in order (0,0), (0,1), (1,0), (1,1) take the draw ranges below ``a``, ``a + b``,
    ``a + b + c`` and 1 (scaled to 2**32); the source bit is set in the lower two quadrants and
    the destination bit in the right-hand ones.
    """
    scale = 2.0**32
    t_a, t_ab, t_abc = (min(int(p * scale), 2**32) for p in (a, a + b, a + b + c))
    src = np.zeros(size, dtype=np.uint32)
    dst = np.zeros(size, dtype=np.uint32)
    words = (size + 1) // 2
    for level in range(k):
        draw = rng.bit_generator.random_raw(words).view(np.uint32)[:size]
        src_bit = _at_least(draw, t_ab)
        dst_bit = _at_least(draw, t_a) ^ src_bit ^ _at_least(draw, t_abc)
        shift = np.uint32(level)
        src |= src_bit.view(np.uint8).astype(np.uint32) << shift
        dst |= dst_bit.view(np.uint8).astype(np.uint32) << shift
    return src, dst


def _at_least(draw, threshold: int):
    if threshold >= 2**32:
        return np.zeros(draw.shape, dtype=bool)
    return draw >= np.uint32(threshold)


# ============================================================================ Delaunay
def _delaunay_edge_keys(points):
    """Sorted distinct keys ``u * n + v`` (``u < v``) of the Delaunay edges of ``points``."""
    n = points.shape[0]
    if n < 3:
        return np.arange(1, 2, dtype=np.int64) if n == 2 else np.empty(0, dtype=np.int64)
    triangles = None
    if n >= max(_TILE_MIN_POINTS, 4 * _TILE_POINTS):
        triangles = _delaunay_triangles_tiled(points)
    if triangles is None:
        simplices = _delaunay_triangles(points)
        triangles = _sorted_rows(simplices[:, 0], simplices[:, 1], simplices[:, 2])
        del simplices
    first, second, third = (t.astype(np.int64) for t in triangles)
    del triangles
    keys = np.concatenate([first * n + second, first * n + third, second * n + third])
    del first, second, third
    keys.sort()
    return _drop_repeats(keys)


def _delaunay_triangles(points):
    from scipy.spatial import Delaunay  # noqa: PLC0415

    return Delaunay(points).simplices


def _sorted_rows(first, second, third):
    """The vertex triples sorted within each triangle (a three-element sorting network)."""
    first, second = np.minimum(first, second), np.maximum(first, second)
    second, third = np.minimum(second, third), np.maximum(second, third)
    first, second = np.minimum(first, second), np.maximum(first, second)
    return first, second, third


def _delaunay_triangles_tiled(points):
    """All Delaunay triangles of ``points`` (in the unit square), tile by tile, or ``None``.

    A triangle of a subset's triangulation is a triangle of the whole triangulation when its
    circumcircle (within the square) lies inside the region whose points the subset holds.
    Each triangle has one owner tile, the one holding its circumcentre (clamped to the square);
    the owner keeps it if that test passes for the owner's tile plus margin. Triangles that no
    owner can certify (those along the convex hull, whose circles are huge) come from the
    triangulation of a frame of points along the border of the square. Returns the triangles as
    three arrays of sorted vertex ids, or ``None`` when they fall short of Euler's count
    ``2n - 2 - h``, ``h`` being the number of hull vertices, so that the caller triangulates the
    points in one piece.
    """
    from scipy.spatial import Delaunay, QhullError  # noqa: PLC0415

    n = points.shape[0]
    tiles = max(2, int(round(math.sqrt(n / _TILE_POINTS))))
    margin = math.sqrt(_MARGIN_POINTS / (math.pi * n))
    cells_per_tile = max(1, int(1.0 / (tiles * margin)))  # cells at least `margin` wide
    grid = tiles * cells_per_tile  # fine cells per side
    margin_cells = max(1, math.ceil(margin * grid - 1e-9))
    frame_cells = min(2 * margin_cells, grid // 2 - 1)
    if frame_cells < 1:
        return None
    geometry = _TileGeometry(tiles, cells_per_tile, margin_cells, grid)
    id_dtype = np.int32 if n <= np.iinfo(np.int32).max else np.int64

    # Work on the points sorted by fine cell (row by row), so that a tile's points are a few
    # contiguous runs; `order` maps these positions back to vertex ids at the end.
    cell_x = np.minimum((points[:, 0] * grid).astype(np.int32), grid - 1)
    cell_y = np.minimum((points[:, 1] * grid).astype(np.int32), grid - 1)
    cell = cell_y.astype(np.int64) * grid + cell_x
    del cell_x, cell_y
    order = np.argsort(cell).astype(id_dtype)
    cell_start = np.zeros(grid * grid + 1, dtype=np.int64)
    np.cumsum(np.bincount(cell, minlength=grid * grid), out=cell_start[1:])
    cell = cell[order]
    local = points[order]
    xs, ys = np.ascontiguousarray(local[:, 0]), np.ascontiguousarray(local[:, 1])

    kept = []
    try:
        for ty in range(tiles):
            for tx in range(tiles):
                x0, x1, y0, y1 = geometry.cell_box(tx, ty)
                rows = np.arange(y0, y1, dtype=np.int64) * grid
                runs = [slice(s, e) for s, e in zip(cell_start[rows + x0], cell_start[rows + x1])]
                members = np.concatenate([np.arange(r.start, r.stop, dtype=id_dtype) for r in runs])
                simplices = Delaunay(np.concatenate([local[r] for r in runs])).simplices
                tri = _sorted_rows(*(members[simplices[:, i]] for i in range(3)))
                cx, cy, radius = _circumcircles(xs, ys, *tri)
                owner_x, owner_y, finite = geometry.owner(cx, cy, radius)
                mine = np.flatnonzero(finite & (owner_x == tx) & (owner_y == ty))
                cx, cy, radius = cx[mine], cy[mine], radius[mine]
                mine = mine[geometry.certifies(tx, ty, cx, cy, radius)]
                kept.append(tuple(t[mine] for t in tri))

        cell_x, cell_y = cell % grid, cell // grid
        frame = (
            (cell_x < frame_cells)
            | (cell_x >= grid - frame_cells)
            | (cell_y < frame_cells)
            | (cell_y >= grid - frame_cells)
        )
        del cell, cell_x, cell_y
        members = np.flatnonzero(frame).astype(id_dtype)
        frame_triangulation = Delaunay(local[members])
    except QhullError:
        return None
    simplices = frame_triangulation.simplices
    tri = _sorted_rows(*(members[simplices[:, i]] for i in range(3)))
    cx, cy, radius = _circumcircles(xs, ys, *tri)
    owner_x, owner_y, finite = geometry.owner(cx, cy, radius)
    inner_lo, inner_hi = frame_cells / grid, (grid - frame_cells) / grid
    clear = _disk_clear_of_box(cx, cy, radius, inner_lo, inner_hi, inner_lo, inner_hi)
    clear &= finite & ~geometry.certifies(owner_x, owner_y, cx, cy, radius)
    kept.append(tuple(t[clear] for t in tri))

    # Euler: a triangulation of n points with h of them on the hull has 2n - 2 - h triangles.
    # Every point outside the frame lies in the inner square; if the frame's hull contains
    # that square, the frame's hull is the hull of all points.
    corners = np.array(
        [[inner_lo, inner_lo], [inner_lo, inner_hi], [inner_hi, inner_lo], [inner_hi, inner_hi]]
    )
    corners += np.sign(corners - 0.5) * 1e-9
    if (frame_triangulation.find_simplex(corners) < 0).any():
        return None
    hull = len(frame_triangulation.convex_hull)
    found = sum(part[0].size for part in kept)
    if found != 2 * n - 2 - hull:
        return None
    return _sorted_rows(*(order[np.concatenate([part[i] for part in kept])] for i in range(3)))


class _TileGeometry:
    """Tiles of the unit square, each ``cells_per_tile`` fine cells wide, and their margins."""

    def __init__(self, tiles, cells_per_tile, margin_cells, grid):
        self.tiles = tiles
        self.cells_per_tile = cells_per_tile
        self.margin_cells = margin_cells
        self.grid = grid

    def cell_box(self, tx, ty):
        """Fine-cell ranges ``[x0, x1) x [y0, y1)`` of tile ``(tx, ty)`` plus its margin."""
        lo_x = np.maximum(tx * self.cells_per_tile - self.margin_cells, 0)
        hi_x = np.minimum((tx + 1) * self.cells_per_tile + self.margin_cells, self.grid)
        lo_y = np.maximum(ty * self.cells_per_tile - self.margin_cells, 0)
        hi_y = np.minimum((ty + 1) * self.cells_per_tile + self.margin_cells, self.grid)
        return lo_x, hi_x, lo_y, hi_y

    def owner(self, cx, cy, radius):
        """Tile holding each circumcentre clamped to the square, and which circles are finite."""
        finite = np.isfinite(cx) & np.isfinite(cy) & np.isfinite(radius)
        top = self.tiles - 1
        owner_x = np.clip(np.where(finite, cx, 0.0) * self.tiles, 0, top).astype(np.int64)
        owner_y = np.clip(np.where(finite, cy, 0.0) * self.tiles, 0, top).astype(np.int64)
        return owner_x, owner_y, finite

    def certifies(self, tx, ty, cx, cy, radius):
        """Whether each circle, within the square, lies inside the points of tile ``(tx, ty)``.

        The circle must keep clear of the parts of the square outside the tile plus margin:
        the strips left of, right of, below and above it (those that exist).
        """
        box = self.cell_box(tx, ty)
        x0, x1, y0, y1 = (np.asarray(side, dtype=np.float64) / self.grid for side in box)
        ok = np.ones(np.shape(cx), dtype=bool)
        ok &= (x0 <= 0) | _disk_clear_of_box(cx, cy, radius, 0.0, x0, 0.0, 1.0)
        ok &= (x1 >= 1) | _disk_clear_of_box(cx, cy, radius, x1, 1.0, 0.0, 1.0)
        ok &= (y0 <= 0) | _disk_clear_of_box(cx, cy, radius, 0.0, 1.0, 0.0, y0)
        ok &= (y1 >= 1) | _disk_clear_of_box(cx, cy, radius, 0.0, 1.0, y1, 1.0)
        return ok


def _disk_clear_of_box(cx, cy, radius, x0, x1, y0, y1):
    """Whether each closed disk misses the box ``[x0, x1] x [y0, y1]`` by a safe distance.

    The box is widened by ``1e-9`` (points on cell borders) and the test asks for a gap of
    ``1e-12 (1 + radius)`` beyond rounding in the circumcircle.
    """
    pad = 1e-9
    with np.errstate(invalid="ignore"):
        dx = np.maximum(np.maximum((x0 - pad) - cx, cx - (x1 + pad)), 0.0)
        dy = np.maximum(np.maximum((y0 - pad) - cy, cy - (y1 + pad)), 0.0)
        return np.hypot(dx, dy) > radius + 1e-12 * (1.0 + radius)


def _circumcircles(xs, ys, first, second, third):
    """Centres and radii of the circumcircles of triangles given by sorted vertex ids.

    Computed relative to the vertex opposite the longest side, which keeps the rounding error
    of the centre near ``1e-15`` times the radius, and the same way for a triangle whatever
    subset it was found in.
    """
    x0, y0 = xs[first], ys[first]
    x1, y1 = xs[second], ys[second]
    x2, y2 = xs[third], ys[third]
    side0 = (x1 - x2) ** 2 + (y1 - y2) ** 2  # side opposite each vertex
    side1 = (x0 - x2) ** 2 + (y0 - y2) ** 2
    side2 = (x0 - x1) ** 2 + (y0 - y1) ** 2
    apex0 = (side0 >= side1) & (side0 >= side2)
    apex2 = ~apex0 & (side2 > side1)
    ox = np.where(apex0, x0, np.where(apex2, x2, x1))
    oy = np.where(apex0, y0, np.where(apex2, y2, y1))
    bx = np.where(apex0, x1, x0) - ox  # the two other vertices, in id order
    by = np.where(apex0, y1, y0) - oy
    cx = np.where(apex2, x1, x2) - ox
    cy = np.where(apex2, y1, y2) - oy
    b2 = bx * bx + by * by
    c2 = cx * cx + cy * cy
    with np.errstate(divide="ignore", invalid="ignore"):
        d = 2.0 * (bx * cy - by * cx)
        ux = (cy * b2 - by * c2) / d
        uy = (bx * c2 - cx * b2) / d
        radius = np.hypot(ux, uy)
    return ox + ux, oy + uy, radius


# ============================================================================ stable marriage
def sm_easy(n, *, seed=0, n_women=None):
    """The paper's *easy* stable-marriage instances [SM]_: each man draws ``eps`` uniformly from
    [0, 1] and ranks ``(1 + eps) ln n`` distinct women chosen at random (at least one), in
    random order; each woman ranks exactly the men who rank her, in random order.

    Parameters
    ----------
    n : int
        Men (and women, unless ``n_women`` is given), at least 1.
    seed : int
    n_women : int, optional
        Women (default ``n``); the lists then hold ``(1 + eps) ln n_women`` women.

    Returns
    -------
    Preferences

    References
    ----------
    .. [SM] F. Manne, M. Naim, H. Lerring, M. Halappanavar, "On stable marriages and greedy
       matchings", CSC 2016, section 4.

    Examples
    --------
    >>> p = sm_easy(1000, seed=1)
    >>> p.n_men, p.n_women, bool(p.nnz >= 1000 * 6)
    (1000, 1000, True)
    """
    from .cpu.stable_marriage import rank_by_keys, repeated_entries  # noqa: PLC0415
    from .preferences import MAX_ID, Preferences  # noqa: PLC0415

    n = _check_int("n", n, 1, MAX_ID)
    nw = n if n_women is None else _check_int("n_women", n_women, 1, MAX_ID)
    seed = _check_seed(seed)
    rng = _structure_rng(seed)
    length = np.floor((1.0 + rng.random(n)) * math.log(nw)).astype(np.int64)
    np.clip(length, 1, nw, out=length)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(length, out=indptr[1:])
    total = int(indptr[-1])
    # (the pairs, and each person's arrays: the women's lists are counted and ordered too)
    _check_memory(f"an easy instance of {n} men and {nw} women", 24.0 * total + 24.0 * (n + nw))
    dtype = np.int32 if nw <= np.iinfo(np.int32).max else np.int64
    women = rng.integers(0, nw, size=total, dtype=dtype)
    again = np.flatnonzero(repeated_entries(indptr, women))
    while again.size:  # a woman drawn twice for one man: draw again (rare unless lists are long)
        women[again] = rng.integers(0, nw, size=again.size, dtype=dtype)
        again = np.flatnonzero(repeated_entries(indptr, women))
    keys = rng.integers(0, 2**32, size=total, dtype=np.uint32)
    return Preferences(indptr, women, rank_by_keys(women, keys, nw), n, nw)


def sm_hard(n, *, seed=0):
    """The paper's *hard* stable-marriage instances [SM]_: every man ranks all ``n`` women in
    one common random order, and every woman all ``n`` men in another; the stable matching is
    unique and takes ``n (n + 1) / 2`` proposals. ``n^2`` list entries.

    >>> p = sm_hard(50, seed=2)
    >>> p.nnz, bool((p.women[:50] == p.women[50:100]).all())
    (2500, True)
    """
    from .preferences import MAX_ID, Preferences  # noqa: PLC0415

    n = _check_int("n", n, 1, MAX_ID)
    seed = _check_seed(seed)
    _check_memory(f"a hard instance of {n} men", 8.0 * n * n)
    rng = _structure_rng(seed)
    order = rng.permutation(n).astype(np.int32 if n <= np.iinfo(np.int32).max else np.int64)
    rank_of_man = np.empty(n, dtype=np.int32)
    rank_of_man[rng.permutation(n)] = np.arange(n, dtype=np.int32)
    indptr = np.arange(0, n * n + 1, n, dtype=np.int64)
    return Preferences(indptr, np.tile(order, n), np.repeat(rank_of_man, n), n, n)


def sm_random(n, *, seed=0, n_women=None):
    """Random complete preference lists (SM): every man ranks all women, every woman all men,
    each list an independent uniformly random order. ``n * n_women`` list entries.

    >>> p = sm_random(6, n_women=4, seed=3)
    >>> p.n_men, p.n_women, p.nnz
    (6, 4, 24)
    """
    from .preferences import MAX_ID, Preferences  # noqa: PLC0415

    n = _check_int("n", n, 1, MAX_ID)
    nw = n if n_women is None else _check_int("n_women", n_women, 1, MAX_ID)
    seed = _check_seed(seed)
    _check_memory(f"a complete instance of {n} x {nw}", 24.0 * n * nw)
    rng = _structure_rng(seed)
    women = rng.permuted(np.tile(np.arange(nw, dtype=np.int64), (n, 1)), axis=1)
    her_list = rng.permuted(np.tile(np.arange(n, dtype=np.int64), (nw, 1)), axis=1)
    rank = np.empty((nw, n), dtype=np.int32)  # rank[w, m]: woman w's rank of man m
    np.put_along_axis(rank, her_list, np.arange(n, dtype=np.int32)[None, :], axis=1)
    men = np.repeat(np.arange(n, dtype=np.int64), nw)
    flat = women.reshape(-1)
    indptr = np.arange(0, n * nw + 1, nw, dtype=np.int64)
    return Preferences(indptr, flat.astype(np.int32), rank[flat, men], n, nw)


PREFERENCE_GENERATORS = {"sm_easy": sm_easy, "sm_hard": sm_hard, "sm_random": sm_random}
"""Stable-marriage instance generators by name, as used in specs and on the command line."""


def parse_preferences_spec(spec: str):
    """Generate the stable-marriage instance named by a spec such as ``"sm_easy:n=1000,seed=1"``
    (the syntax of graph specs, with a name of :data:`PREFERENCE_GENERATORS`).

    >>> parse_preferences_spec("sm_hard:n=10").nnz
    100
    """
    name, params = split_graph_spec(spec, families=PREFERENCE_GENERATORS)
    fn = PREFERENCE_GENERATORS[name]
    _bind(name, fn, params)
    return fn(**params)
