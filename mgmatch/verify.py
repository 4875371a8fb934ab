"""Checks and sequential references for matchings.

Invariants first (:func:`is_matching`, :func:`is_maximal_matching`, :func:`is_b_matching`), then
references: :func:`greedy_matching` and :func:`greedy_b_matching` are the sequential greedy
algorithms under the total order every mgmatch algorithm shares, and
:func:`check_half_approximation` compares a matching with NetworkX's exact maximum weight
matching on small graphs.
"""

from __future__ import annotations

import numpy as np

from .cpu import matching as _cpu
from .errors import InputError
from .graph import Graph

__all__ = [
    "is_matching", "is_maximal_matching", "is_b_matching", "is_maximal_b_matching", "matching_weight",
    "greedy_matching", "greedy_b_matching", "check_half_approximation", "verify_result",
    "verify_bipartite_result", "verify_communities",
]


def _edge_set(graph: Graph):
    u, v, w = graph.to("cpu").edges()
    return u.astype(np.int64), v.astype(np.int64), w


def _entry_positions(graph: Graph, rows, cols) -> np.ndarray:
    """CSR position of each entry ``(rows[k], cols[k])``, or -1 where it is not stored.

    Rows of the CSR are sorted by column, so ``row * n_cols + col`` over all entries is a sorted
    key array and one vectorised search finds every pair.
    """
    g = graph.to("cpu")
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    out = np.full(rows.shape, -1, dtype=np.int64)
    ok = (rows >= 0) & (rows < g.n_rows) & (cols >= 0) & (cols < g.n_cols)
    if g.nnz == 0 or not ok.any():
        return out
    width = np.int64(max(g.n_cols, 1))
    keys = g.row_ids().astype(np.int64) * width + g.indices.astype(np.int64)
    wanted = rows[ok] * width + cols[ok]
    pos = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
    out[ok] = np.where(keys[pos] == wanted, pos, -1)
    return out


def _lookup_weights(graph: Graph, u, v):
    """Weights of edges ``(u, v)``; NaN where the pair is not an edge."""
    pos = _entry_positions(graph, u, v)
    out = np.full(pos.shape, np.nan)
    found = pos >= 0
    out[found] = np.asarray(graph.to("cpu").weights)[pos[found]]
    return out


def is_matching(graph: Graph, u, v) -> bool:
    """True when the pairs ``(u[k], v[k])`` are edges of ``graph`` and no vertex is used twice.

    >>> g = Graph.from_edges([0, 1], [1, 2])
    >>> is_matching(g, [0], [1]), is_matching(g, [0, 1], [1, 2])
    (True, False)
    """
    return is_b_matching(graph, u, v, 1)


def is_b_matching(graph: Graph, u, v, b) -> bool:
    """True when the pairs are distinct edges and vertex ``x`` is in at most ``b(x)`` of them."""
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    if u.shape != v.shape or u.ndim != 1:
        return False
    if u.size == 0:
        return True
    if np.isnan(_lookup_weights(graph, u, v)).any():
        return False
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    if np.unique(lo * graph.n + hi).size != lo.size:
        return False
    deg = np.bincount(np.concatenate([u, v]), minlength=graph.n)
    cap = np.broadcast_to(np.asarray(b, dtype=np.int64), (graph.n,))
    return bool((deg <= cap).all())


def is_maximal_matching(graph: Graph, u, v) -> bool:
    """True when ``(u, v)`` is a matching and no edge joins two unmatched vertices."""
    return is_maximal_b_matching(graph, u, v, 1)


def is_maximal_b_matching(graph: Graph, u, v, b) -> bool:
    """True when ``(u, v)`` is a b-matching and every edge left out has an end that already
    holds its ``b`` edges (none could be added).

    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3])
    >>> is_maximal_b_matching(g, [0, 2], [1, 3], 1), is_maximal_b_matching(g, [0], [1], 2)
    (True, False)
    """
    if not is_b_matching(graph, u, v, b):
        return False
    u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
    deg = np.bincount(np.concatenate([u, v]), minlength=graph.n)
    full = deg >= np.broadcast_to(np.asarray(b, dtype=np.int64), (graph.n,))
    g = graph.to("cpu")
    taken = np.zeros(g.nnz, dtype=bool)  # both stored directions of each edge of the result
    taken[_entry_positions(g, np.concatenate([u, v]), np.concatenate([v, u]))] = True
    return not bool((~taken & ~full[g.row_ids()] & ~full[g.indices]).any())


def matching_weight(graph: Graph, u, v) -> float:
    """Sum of the weights of the edges ``(u[k], v[k])``."""
    w = _lookup_weights(graph, u, v)
    if np.isnan(w).any():
        raise ValueError("a listed pair is not an edge of the graph")
    return float(w.sum())


def greedy_matching(graph: Graph) -> np.ndarray:
    """The sequential greedy matching under the shared total order, as a ``mate`` array.

    Edges are taken by decreasing weight, ties by the smaller ``(min, max)`` endpoint pair.

    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 3], [1.0, 3.0, 1.0])
    >>> greedy_matching(g).tolist()
    [-1, 2, 1, -1]
    """
    u, v, w = _edge_set(graph)
    return _cpu.greedy_matching(u, v, w, graph.n)


def greedy_b_matching(graph: Graph, b):
    """The sequential greedy b-matching under the shared total order: edge arrays ``(u, v, w)``.

    >>> g = Graph.from_edges([0, 0, 0, 1], [1, 2, 3, 2], [4.0, 3.0, 2.0, 1.0])
    >>> u, v, w = greedy_b_matching(g, 2)
    >>> list(zip(u.tolist(), v.tolist()))
    [(0, 1), (0, 2), (1, 2)]
    """
    u, v, w = _edge_set(graph)
    cap = np.broadcast_to(np.asarray(b, dtype=np.int64), (graph.n,)).copy()
    chosen = _cpu.greedy_b_matching(u, v, w, cap)
    u, v, w = u[chosen], v[chosen], w[chosen]
    order = np.lexsort((v, u))
    return u[order], v[order], w[order]


def check_half_approximation(graph: Graph, u, v, *, max_edges: int = 5000) -> tuple[float, float]:
    """Compare a matching's weight with NetworkX's exact maximum weight matching.

    Returns ``(weight, optimum)`` and raises ``AssertionError`` when ``weight < optimum / 2``.
    Meant for small graphs (NetworkX's blossom algorithm is cubic).
    """
    import networkx as nx  # noqa: PLC0415

    if graph.m > max_edges:
        raise ValueError(f"graph has {graph.m} edges; the exact check is limited to {max_edges}")
    a, c, w = _edge_set(graph)
    g = nx.Graph()
    g.add_weighted_edges_from(zip(a.tolist(), c.tolist(), w.tolist()))
    opt = nx.max_weight_matching(g)
    optimum = float(sum(g[x][y]["weight"] for x, y in opt))
    weight = matching_weight(graph, u, v)
    if weight < optimum / 2 - 1e-9 * max(1.0, optimum):
        raise AssertionError(f"matching weight {weight} is below half the optimum {optimum}")
    return weight, optimum


def _id_column(columns: dict, name: str) -> np.ndarray:
    """A result column of vertex ids as int64, refused when a value is not a whole number (a
    CSV column of ``0.9`` reads as floats, and casting would truncate it to a valid-looking 0).
    Negative and too-large ids stay, for the report's ``ids_in_range``."""
    values = np.asarray(columns[name])
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values) | (values != np.round(values)) | (np.abs(values) >= 2.0**63)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            why = "too large for a vertex id" if np.isfinite(values[i]) and values[i] == np.round(values[i]) \
                else "not a vertex id (a whole number)"
            raise InputError(f"column {name!r}, row {i + 1}: {values[i].item()!r} is {why}")
    elif values.dtype.kind == "u":
        if (values > np.iinfo(np.int64).max).any():
            raise InputError(f"column {name!r} holds ids beyond int64")
    elif values.dtype.kind not in "ib" and values.size:
        raise InputError(f"column {name!r} holds {values.dtype} values, not vertex ids")
    return values.astype(np.int64)


def verify_result(graph: Graph, columns: dict, *, b=None) -> dict:
    """Check a written matching (columns ``u, v[, weight]``) against its graph.

    Returns a report dict with ``ok`` and the findings (used by ``mgmatch verify``).
    """
    u, v = _id_column(columns, "u"), _id_column(columns, "v")
    report = {"pairs": int(u.size)}
    in_range = bool(((u >= 0) & (u < graph.n) & (v >= 0) & (v < graph.n)).all())
    report["ids_in_range"] = in_range
    if not in_range:
        report["ok"] = False
        return report
    w = _lookup_weights(graph, u, v)
    report["all_pairs_are_edges"] = not bool(np.isnan(w).any())
    cap = 1 if b is None else b
    report["valid"] = is_b_matching(graph, u, v, cap)
    report["weight"] = float(np.nansum(w))
    if "weight" in columns:
        given = np.asarray(columns["weight"], dtype=np.float64)  # (a missing weight, read as NaN, fails)
        report["weights_match_graph"] = given.shape == w.shape and bool(np.allclose(given, w, rtol=1e-6, atol=0,
                                                                                  equal_nan=False))
    if report["valid"]:
        report["maximal"] = is_maximal_matching(graph, u, v) if b is None else is_maximal_b_matching(graph, u, v, b)
    report["ok"] = bool(report["valid"] and report.get("weights_match_graph", True) and report.get("maximal", True))
    return report


def verify_bipartite_result(graph: Graph, columns: dict) -> dict:
    """Check a written bipartite matching (columns ``row, col``) against its matrix: every pair
    is a stored entry, no row or column is used twice, and the cardinality equals SciPy's
    ``maximum_bipartite_matching`` (an independent Hopcroft-Karp)."""
    import scipy.sparse as sp  # noqa: PLC0415
    from scipy.sparse.csgraph import maximum_bipartite_matching  # noqa: PLC0415

    r, c = _id_column(columns, "row"), _id_column(columns, "col")
    report = {"pairs": int(r.size)}
    report["ids_in_range"] = bool(((r >= 0) & (r < graph.n_rows) & (c >= 0) & (c < graph.n_cols)).all())
    if not report["ids_in_range"]:
        report["ok"] = False
        return report
    a = graph.to_scipy().tocsr()
    report["all_pairs_are_entries"] = bool((_entry_positions(graph, r, c) >= 0).all())
    report["valid"] = report["all_pairs_are_entries"] and np.unique(r).size == r.size and np.unique(c).size == c.size
    pattern = sp.csr_array((np.ones(a.nnz), a.indices, a.indptr), shape=a.shape)
    maximum = int((maximum_bipartite_matching(pattern, perm_type="column") >= 0).sum())
    report["maximum_cardinality"] = maximum
    report["maximum"] = bool(report["valid"] and r.size == maximum)
    report["ok"] = report["maximum"]
    return report


def verify_communities(graph: Graph, columns: dict) -> dict:
    """Check written communities (columns ``vertex, community`` and, for every level, ``level``):
    every level (numbered 0, 1, ...) assigns every vertex exactly one community; reports the
    final level's modularity."""
    from .algorithms.louvain import modularity  # noqa: PLC0415

    vertex, community = _id_column(columns, "vertex"), _id_column(columns, "community")
    report = {}
    once = True
    if "level" in columns:
        level = _id_column(columns, "level")
        levels = np.unique(level)
        report["levels"] = int(levels.size)
        report["levels_numbered_from_0"] = bool(np.array_equal(levels, np.arange(levels.size)))
        for k in levels[:-1]:  # (the last is checked below)
            at = level == k
            once &= at.sum() == graph.n and np.array_equal(np.sort(vertex[at]), np.arange(graph.n))
        last = level == level.max(initial=0)
        vertex, community = vertex[last], community[last]
    report["vertices"] = int(vertex.size)
    once &= vertex.size == graph.n and np.array_equal(np.sort(vertex), np.arange(graph.n))
    report["every_vertex_once"] = bool(once)
    report["labels_non_negative"] = bool((community >= 0).all())
    if once and report["labels_non_negative"]:
        labels = np.empty(graph.n, dtype=np.int64)
        labels[vertex] = community
        report["n_communities"] = int(np.unique(labels).size)
        report["modularity"] = float(modularity(graph, labels)) if graph.m else 0.0
    report["ok"] = bool(once and report["labels_non_negative"] and report.get("levels_numbered_from_0", True))
    return report
