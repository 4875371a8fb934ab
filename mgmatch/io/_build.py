"""Build a file's graph through SciPy's sparse conversions where no entry needs merging.

:meth:`Graph.from_edges <mgmatch.graph.Graph.from_edges>` sorts every entry to merge repeated
edges by the duplicate rule. Most files repeat none: a symmetric matrix gives each edge as
``a_ij`` and its mirror ``a_ji``, a bipartite matrix or an edge list each edge once. For those,
SciPy's COO to CSR conversion (which sorts each row's columns) gives the graph's CSR itself,
and only the canonicalisation rules are applied here, as ``from_edges`` applies them: self-loops
dropped, ``|w|`` under ``negative="abs"``, a mirrored pair merged (to ``2 |a_ij|`` under
``duplicates="sum"``, else ``|a_ij|``; a mirror that the format implies, a symmetric Matrix
Market file's or a METIS file's, is not a second entry and stays ``|a_ij|``), zeros kept or
dropped, the weight dtype, and the overflow checks. Anything else (a repeated edge, random
weights, an option ``from_edges`` refuses, ids it refuses) returns ``None``, and the caller
builds through ``from_edges``.
"""

from __future__ import annotations

import numpy as np

from ..graph import CanonSummary, Graph, _check_merged_weights, _check_vertex_memory, index_dtype_for

__all__ = ["graph_from_edge_arrays", "graph_from_csr", "mirror_of"]


def _options(canon: dict) -> dict | None:
    """The canonicalisation options with their defaults, or ``None`` for what is left to
    ``from_edges`` (random weights, and any option it refuses, so that it names it)."""
    canon = {"duplicates": "max", "zeros": "keep", "negative": "error", "random_weights": None,
             "dtype": "float64", **canon}
    if (canon["random_weights"] is not None or canon["duplicates"] not in ("max", "sum", "min", "first")
            or canon["zeros"] not in ("keep", "drop") or canon["negative"] not in ("error", "abs")
            or canon["dtype"] not in ("float64", "float32") or len(canon) != 5):
        return None
    return canon


def graph_from_csr(csr, canon: dict, source, *, weighted: bool, bipartite: bool, symmetric: bool = False,
                   implied: bool = False):
    """The graph :meth:`Graph.from_scipy <mgmatch.graph.Graph.from_scipy>` builds from ``csr``
    (sorted, distinct columns in each row; weights finite), or ``None``: a bipartite graph (every
    entry an edge), or an undirected graph whose matrix is symmetric in its pattern and in
    ``|a_ij|`` (``symmetric`` says it is known to be; else it is checked). ``implied``: the
    format gives each edge's mirror (a symmetric Matrix Market file, a METIS file), so a mirrored
    pair is one entry of the file, not two to merge by the duplicate rule."""
    options = _options(canon)
    if options is None:
        return None
    data = csr.data
    weighted = weighted and data.dtype != bool
    if weighted and np.issubdtype(data.dtype, np.complexfloating):
        data = np.abs(data)
    w = data.astype(np.float64, copy=False) if weighted else np.ones(data.size)
    negatives = int(np.count_nonzero(w < 0)) if weighted else 0
    if negatives:
        if options["negative"] == "error":
            return None  # from_edges refuses it, naming the edge
        w = np.abs(w)
    if weighted and not np.isfinite(w).all():
        return None  # from_edges refuses it, naming the edge
    if not bipartite and not symmetric and not _is_symmetric(csr, w if weighted else None):
        return None
    return _finish(csr.indptr, csr.indices, w, options, source, shape=csr.shape, weighted=weighted,
                   bipartite=bipartite, mirrors_given=not bipartite, entries=int(csr.nnz), negatives=negatives,
                   implied=implied)


def _is_symmetric(csr, w) -> bool:
    """Whether ``csr`` (sorted columns) has the pattern of its transpose, and weights ``w``
    (``None``: the pattern only) equal to the transpose's."""
    if not np.array_equal(np.diff(csr.indptr), np.bincount(csr.indices, minlength=csr.shape[1])):
        return False  # some row and its column differ in length: seen without a transpose
    mirror = mirror_of(csr)
    return (np.array_equal(mirror.indptr, csr.indptr) and np.array_equal(mirror.indices, csr.indices)
            and (w is None or np.array_equal(w[mirror.data], w)))


def mirror_of(csr):
    """The transpose of ``csr`` (sorted columns) whose values are positions in ``csr``: its entry
    ``k`` is entry ``data[k]`` of ``csr``; for a symmetric pattern, the mirror of entry ``k``."""
    order = csr.copy()
    order.data = np.arange(csr.nnz, dtype=np.int64)
    return order.T.tocsr()


def graph_from_edge_arrays(src, dst, weight, canon: dict, source, *, n=None, bipartite=False, shape=None):
    """The graph :meth:`Graph.from_edges <mgmatch.graph.Graph.from_edges>` builds from edge
    arrays (``int64`` ids, ``float64`` weights or ``None``), or ``None`` where an entry repeats
    an edge (in either direction, for an undirected graph), or ``from_edges`` would refuse the
    input (it then names what is wrong)."""
    import scipy.sparse as sp  # noqa: PLC0415

    options = _options(canon)
    if options is None or src.dtype != np.int64 or dst.dtype != np.int64 or src.size == 0:
        return None
    if src.shape != dst.shape or src.ndim != 1 or (weight is not None and weight.shape != src.shape):
        return None
    if min(int(src.min()), int(dst.min())) < 0:
        return None
    weighted = weight is not None
    if weighted:
        if weight.dtype != np.float64 or not np.isfinite(weight).all():
            return None
        negatives = int(np.count_nonzero(weight < 0))
        if negatives and options["negative"] == "error":
            return None
        w = np.abs(weight) if negatives else weight
    else:
        negatives = 0
        w = np.ones(src.size)
    top_src, top_dst = int(src.max()) + 1, int(dst.max()) + 1
    if bipartite:
        n_rows, n_cols = (top_src, top_dst) if shape is None else (int(shape[0]), int(shape[1]))
        if top_src > n_rows or top_dst > n_cols:
            return None
    else:
        n_rows = n_cols = max(top_src, top_dst) if n is None else int(n)
        if max(top_src, top_dst) > n_rows or (shape is not None and tuple(shape) != (n_rows, n_rows)):
            return None
    _check_vertex_memory(n_rows, n_cols, int(src.size), source)
    if bipartite:
        rows, cols, values = src, dst, w
    else:
        loops = src == dst
        if loops.any():
            keep = ~loops
            src, dst, w = src[keep], dst[keep], w[keep]
        rows, cols, values = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([w, w])
    csr = sp.csr_array((values, (rows, cols)), shape=(n_rows, n_cols))  # sorted; repeats summed
    if csr.nnz != rows.size:
        return None  # some entry repeats an edge: from_edges merges it by the duplicate rule
    entries = int(src.size) + (0 if bipartite else int(loops.sum()))
    graph = _finish(csr.indptr, csr.indices, csr.data, options, source, shape=(n_rows, n_cols), weighted=weighted,
                    bipartite=bipartite, mirrors_given=False, entries=entries, negatives=negatives)
    if not bipartite:
        graph.summary.self_loops_dropped = int(loops.sum())
    return graph


def _finish(indptr, cols, w, options, source, *, shape, weighted, bipartite, mirrors_given, entries, negatives,
            implied=False):
    """The graph of a CSR with sorted, distinct columns and ``|w|`` weights, under ``options``.
    An undirected graph's CSR holds every edge in both directions (and maybe self-loops, which
    are dropped); ``mirrors_given`` says the input gave both (merged as a mirrored pair, as
    ``from_edges`` does, unless the format ``implied`` the mirror), else each edge was given
    once."""
    n_rows, n_cols = shape
    summary = CanonSummary(input_entries=entries, weighted=weighted, duplicate_rule=options["duplicates"],
                           negatives_made_absolute=negatives)
    if mirrors_given:
        _check_vertex_memory(n_rows, n_cols, entries, source)
    rows = np.repeat(np.arange(n_rows, dtype=cols.dtype), np.diff(indptr))  # (the row of each entry)
    keep = None
    if bipartite:
        edge = None  # every entry is an edge
    else:
        loops = rows == cols
        summary.self_loops_dropped = int(np.count_nonzero(loops))
        if summary.self_loops_dropped:
            keep = ~loops
        edge = rows < cols  # each edge once: its entry above the diagonal
        if mirrors_given:
            summary.mirrored_pairs = int(np.count_nonzero(edge))
            if options["duplicates"] == "sum" and not implied:
                with np.errstate(over="ignore"):  # an overflowing sum is refused below, naming the edge
                    w = w * 2  # a_ij + a_ji
    zero = w == 0
    zeros = int(np.count_nonzero(zero if edge is None else zero & edge))
    if options["zeros"] == "drop":
        summary.zeros_dropped = zeros
        if zeros:
            keep = ~zero if keep is None else keep & ~zero
    else:
        summary.zeros_kept = zeros
    del zero
    wdtype = np.dtype(options["dtype"])
    with np.errstate(over="ignore"):
        stored = w.astype(wdtype, copy=False)
        # every edge's weight, and their total (each edge of an undirected graph counted twice,
        # as the algorithms count it: its CSR entries), must be finite
        finite = bool(np.isfinite(stored).all()) and bool(np.isfinite(np.sum(stored, dtype=np.float64)))
    if not finite:  # refused, naming the edge
        every = np.ones(cols.size, dtype=bool) if edge is None else edge
        _check_merged_weights(rows[every], cols[every], w[every], wdtype, bipartite, source)
    del edge
    if keep is not None:
        rows, cols, stored = rows[keep], cols[keep], stored[keep]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))])
    del rows
    idx = index_dtype_for(max(n_rows, n_cols), cols.size)
    return Graph(indptr=indptr.astype(idx, copy=False), indices=cols.astype(idx, copy=False), weights=stored,
                 n_rows=int(n_rows), n_cols=int(n_cols), bipartite=bool(bipartite), weighted=bool(weighted),
                 summary=summary)
