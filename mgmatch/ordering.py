"""Vertex orders that give neighbours nearby ids, for graphs split into ranges of ids.

The engine splits a graph into contiguous ranges of vertex ids, balanced by stored entries
(:meth:`mgmatch.Graph.partition`), in-process and on a cluster alike. The entries that cross
between ranges become the messages of every round, so what several partitions cost depends on
how the vertices are numbered. A mesh or a road network usually comes numbered so that
neighbours have nearby ids. A graph numbered at random (points in the order drawn, hashed ids)
crosses most entries: two ranges cut half of them, four ranges three quarters. There the
rounds' work grows with the cut and more workers make a run slower
(docs/performance.md, "Distributed runs: the vertex order and the cut").

:func:`reorder` numbers the vertices again by reverse Cuthill-McKee (Cuthill and McKee, 1969;
George, 1971), a breadth-first order from a vertex of low degree. It keeps each vertex's
neighbours within a band of ids, so a range of ids has a short boundary. On rgg k=20 in the
order drawn it cuts 0.12% of the entries between two ranges, against 50%. The result is a
:class:`~mgmatch.convert.GraphInput` whose map leads back to the input's ids, as for ids that
were renumbered: an algorithm run on it computes on the new numbering, and
:func:`~mgmatch.convert.to_pandas`, :func:`~mgmatch.convert.matching_as_pairs` and the command
line's outputs (``mgmatch run --reorder rcm``) name the input's vertices.

The order is SciPy's (:func:`scipy.sparse.csgraph.reverse_cuthill_mckee`, one thread); the
graph's rows are then copied in that order, renamed and sorted, by every thread. It is deterministic. Where weights tie, an algorithm that
breaks ties by vertex id (the matchings) may pick another, equally heavy, matching than on the
input's numbering. No order helps a power-law graph much: on kron k=18 two ranges cut 50% of
the entries as generated and 55% in this order.
"""

from __future__ import annotations

import numpy as np

from .errors import ParameterError
from .graph import Graph

__all__ = ["reorder", "cut_fraction", "METHODS"]

#: The orders :func:`reorder` makes.
METHODS = ("rcm",)


def reorder(graph, *, method: str = "rcm"):
    """The graph with its vertices numbered so that neighbours get nearby ids.

    Parameters
    ----------
    graph
        An undirected graph: a :class:`~mgmatch.Graph`, a :class:`~mgmatch.convert.GraphInput`
        (its map back to the input's ids is kept), or anything
        :func:`~mgmatch.convert.as_graph` takes.
    method : {"rcm"}
        Reverse Cuthill-McKee (see the module notes).

    Returns
    -------
    GraphInput
        ``graph``: the same graph numbered anew (new vertex ``i`` is the input's
        ``vertices.ids[i]``). Pass it to an algorithm or to ``place(client, it)``: the result
        carries the map (``result.mapping``), and :func:`~mgmatch.convert.to_pandas` and the
        other converters name the input's vertices. A result's own arrays (``mate``,
        ``communities``) are in the new numbering, and so must be per-vertex arrays given with
        it (b-Suitor's ``b``, :func:`~mgmatch.modularity`'s ``communities``):
        ``values[it.vertices.ids]`` puts values in the input's order into it.

    Raises
    ------
    ParameterError
        An unknown ``method``, a bipartite graph (its rows and columns are matched on one
        device: there is nothing to split), a graph already placed on a cluster, or one of
        2^31 or more stored entries (SciPy's order takes 32-bit indices).

    Examples
    --------
    >>> import mgmatch
    >>> ring = mgmatch.Graph.from_edges([0, 1, 2, 3, 4, 5], [3, 4, 5, 1, 2, 0], n=6)  # 0-3-1-4-2-5-0
    >>> it = reorder(ring)
    >>> cut_fraction(ring, 2), cut_fraction(it.graph, 2)
    (1.0, 0.3333333333333333)
    >>> sorted(it.vertices.ids.tolist())
    [0, 1, 2, 3, 4, 5]
    """
    from .convert import GraphInput, VertexMap, coerce_input  # noqa: PLC0415

    if not (isinstance(method, str) and method in METHODS):
        raise ParameterError(f"method must be one of {', '.join(map(repr, METHODS))}, not {method!r}")
    if isinstance(graph, GraphInput):
        given = graph
    else:
        g, mapping = coerce_input(graph)
        if not isinstance(g, Graph):
            raise ParameterError("reorder() takes a graph in this process: reorder it before placing it on a cluster")
        given = mapping if mapping is not None else GraphInput(g, VertexMap.identity(g.n_rows), None, "graph")
    g = given.graph
    if g.bipartite:
        raise ParameterError("reorder() numbers the vertices of an undirected graph; a bipartite graph is matched "
                             "whole on one device, so its order does not split it")
    if g.nnz >= 2**31:
        raise ParameterError(f"reorder() takes graphs of fewer than 2^31 stored entries, not {g.nnz} (SciPy's "
                             "reverse Cuthill-McKee indexes them in 32 bits)")
    g = g.to("cpu")
    order = _rcm(g)
    ids = given.vertices.ids[order] if given.vertices.renumbered else order
    return GraphInput(_renumbered(g, order), VertexMap(ids, True), None, given.source)


def _rcm(g: Graph) -> np.ndarray:
    """``order[i]``: the vertex that gets id ``i``."""
    if g.n < 2:
        return np.arange(g.n, dtype=np.int64)
    from scipy.sparse.csgraph import reverse_cuthill_mckee  # noqa: PLC0415

    return np.asarray(reverse_cuthill_mckee(g.to_scipy(), symmetric_mode=True), dtype=np.int64)


def _renumbered(g: Graph, order: np.ndarray) -> Graph:
    """``g`` with vertex ``order[i]`` named ``i`` (every edge, weight and flag as it was)."""
    import dataclasses  # noqa: PLC0415

    from .cpu.graph_build import permute_csr  # noqa: PLC0415

    indptr, indices, weights = permute_csr(g.indptr, g.indices, g.weights, order.astype(g.indices.dtype))
    return dataclasses.replace(g, indptr=indptr, indices=indices, weights=weights)


def cut_fraction(graph: Graph, partitions: int) -> float:
    """The share of ``graph``'s stored entries whose two ends fall in different partitions when
    it is split into ``partitions`` ranges of ids, as the engine splits it."""
    from .convert import GraphInput  # noqa: PLC0415

    graph = graph.graph if isinstance(graph, GraphInput) else graph
    if not isinstance(graph, Graph) or graph.bipartite:
        raise ParameterError(f"cut_fraction() takes an undirected mgmatch.Graph, not {_kind(graph)}")
    if graph.nnz == 0:
        return 0.0
    g = graph.to("cpu")
    bounds = g.partition_bounds(partitions)
    crossing = 0
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):  # a partition's rows at a time
        ids = g.indices[g.indptr[lo]:g.indptr[hi]]
        crossing += int(np.count_nonzero((ids < lo) | (ids >= hi)))
    return crossing / g.nnz


def _kind(graph) -> str:
    return "a bipartite graph" if isinstance(graph, Graph) else type(graph).__name__
