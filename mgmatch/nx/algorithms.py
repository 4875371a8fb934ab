"""The NetworkX functions that the ``mgmatch`` backend runs, with NetworkX's signatures and return
types, each calling mgmatch's public function on the converted graph.

What differs from NetworkX is stated in ``_mgmatch_nx.FUNCTIONS`` (which NetworkX shows in these
functions' docstrings) and in :mod:`mgmatch.nx`.
"""

from __future__ import annotations


import networkx as nx
import numpy as np
from networkx.algorithms.community.quality import NotAPartition

import mgmatch

from ..convert import GraphInput, communities_as_sets, matching_as_pairs
from ..errors import InputError
from .graph import NxGraph, count_self_loops

__all__ = [
    "unsupported",
    "louvain_communities",
    "louvain_partitions",
    "modularity",
    "maximal_matching",
    "hopcroft_karp_matching",
    "eppstein_matching",
]


def _device(device):
    if device is not None:
        return device
    cfg = getattr(nx.config.backends, "mgmatch", None)
    return cfg.get("device", "auto") if cfg is not None else "auto"


def _as_nx_graph(G) -> NxGraph:
    return G if isinstance(G, NxGraph) else NxGraph(G)


#: The calls whose result depends on edge weights, self-loops and the resolution.
WEIGHTED = {"louvain_communities", "louvain_partitions", "modularity"}


def unsupported(name: str, G, resolution=1) -> str | None:
    """Why mgmatch does not run call ``name`` on graph ``G`` (None: it does).

    The backend's ``can_run`` answers NetworkX with this, and each function raises
    ``NotImplementedError`` with it when called directly.
    """
    graph = G.graph if isinstance(G, NxGraph) else G
    if graph is None or not hasattr(graph, "is_directed"):
        return "the graph is not a NetworkX graph"
    if graph.is_directed():
        return "mgmatch's algorithms take undirected graphs"
    if name in WEIGHTED:
        if name != "modularity" and count_self_loops(graph):
            return "mgmatch's Louvain takes graphs without self-loops, which NetworkX counts in modularity"
        if isinstance(resolution, bool) or not isinstance(resolution, (int, float)) or not resolution > 0:
            return "mgmatch needs a positive resolution"
    return None


def _require(name: str, G, resolution=1) -> NxGraph:
    reason = unsupported(name, G, resolution)
    if reason is not None:
        raise NotImplementedError(f"mgmatch does not run {name} here: {reason}")
    return _as_nx_graph(G)


def _input(G: NxGraph, weight, name: str) -> GraphInput:
    """The converted graph; input mgmatch refuses (negative or NaN weights) is not run here, so
    NetworkX can run its own implementation."""
    try:
        return G.input(weight)
    except InputError as exc:
        raise NotImplementedError(f"mgmatch does not run {name} on this graph: {exc}") from exc


# ---------------------------------------------------------------------------- Louvain
def _levels(G, weight, resolution, threshold, max_level, device, name):
    """Yield NetworkX-style partitions level by level, stopping as NetworkX's Louvain does: after
    the first level whose modularity gain over the one before is at most ``threshold``."""
    G = _require(name, G, resolution)
    gi = _input(G, weight, name)
    g = gi.graph
    if g.m == 0:  # NetworkX: a graph without edges is its singletons, one level
        yield communities_as_sets(np.arange(g.n), gi)
        return
    options = {"resolution": float(resolution), "device": _device(device)}
    # NetworkX's threshold ends the levels only (its moves go on while any vertex gains), while
    # mgmatch's also ends a level's sweeps: mgmatch runs with its own, the same for every
    # threshold, so each level is the same partition and the rule below picks where to stop.
    if max_level is not None:
        options["max_level"] = max_level
    result = mgmatch.louvain(g, **options)
    previous = mgmatch.modularity(g, np.arange(g.n), resolution=float(resolution))
    for level, (labels, q) in enumerate(zip(result.levels, result.modularity), 1):
        yield communities_as_sets(labels, gi)
        if q - previous <= threshold or (max_level is not None and level >= max_level):
            return
        previous = q


def louvain_communities(G, weight="weight", resolution=1, threshold=0.0000001, max_level=None, seed=None, *,
                        device=None):
    """Communities of ``G`` by mgmatch's Louvain, as NetworkX's ``louvain_communities`` returns them.

    ``seed`` is accepted and ignored: the result is deterministic. ``device`` picks where it runs.
    """
    if max_level is not None and max_level <= 0:
        raise ValueError("max_level argument must be a positive integer or None")
    partition = None
    for partition in _levels(G, weight, resolution, threshold, max_level, device, "louvain_communities"):
        pass
    return partition


def louvain_partitions(G, weight="weight", resolution=1, threshold=0.0000001, seed=None, *, device=None):
    """Yield the partition of every Louvain level, as NetworkX's ``louvain_partitions`` does."""
    yield from _levels(G, weight, resolution, threshold, None, device, "louvain_partitions")


# --------------------------------------------------------------------------- modularity
def modularity(G, communities, weight="weight", resolution=1):
    """Modularity of a partition, by :func:`mgmatch.modularity`; NetworkX's checks and errors."""
    G = _require("modularity", G, resolution)
    if not isinstance(communities, list):
        communities = list(communities)
    gi = _input(G, weight, "modularity")
    index = {v: i for i, v in enumerate(G.graph)}
    labels = np.full(len(index), -1, dtype=np.int64)
    for c, members in enumerate(communities):
        for v in members:
            i = index.get(v)
            if i is None or labels[i] >= 0:  # not a node of G, or in two communities
                raise NotAPartition(G.graph, communities)
            labels[i] = c
    if (labels < 0).any():
        raise NotAPartition(G.graph, communities)
    graph = gi.graph
    loops = [(index[u], 1.0 if weight is None else float(d.get(weight, 1.0)))
             for u, v, d in G.graph.edges(data=True) if u == v]
    if loops:
        graph, labels = _loops_as_pendants(graph, labels, loops, name="modularity")
    return float(mgmatch.modularity(graph, labels, resolution=float(resolution)))


def _loops_as_pendants(graph, labels, loops, *, name):
    """The graph with each self-loop ``(u, u, w)`` replaced by an edge ``(u, u')`` of weight ``w``
    to a new vertex ``u'`` in ``u``'s community. Modularity counts both alike (``w`` inside the
    community, ``2w`` of its degree, ``w`` of the total weight), so mgmatch's modularity, whose
    graphs have no self-loops, gives NetworkX's value for a graph with them."""
    u, v, w = (np.asarray(a) for a in graph.edges())
    owner = np.array([i for i, _ in loops], dtype=np.int64)
    pendant = np.arange(graph.n, graph.n + len(loops), dtype=np.int64)
    try:
        extended = mgmatch.Graph.from_edges(
            np.concatenate([u, owner]), np.concatenate([v, pendant]),
            np.concatenate([w, np.array([x for _, x in loops], dtype=np.float64)]), n=graph.n + len(loops))
    except InputError as exc:
        raise NotImplementedError(f"mgmatch does not run {name} on this graph: {exc}") from exc
    return extended, np.concatenate([labels, labels[owner]])


# ---------------------------------------------------------------------------- matchings
def maximal_matching(G, *, device=None):
    """A maximal matching (set of pairs) by mgmatch's Suitor on unit weights: the greedy matching
    in mgmatch's edge order."""
    G = _require("maximal_matching", G)
    gi = G.input(None)
    return matching_as_pairs(mgmatch.suitor(gi.graph, device=_device(device)), gi)


def hopcroft_karp_matching(G, top_nodes=None, *, device=None):
    """A maximum cardinality matching of a bipartite graph, as NetworkX returns one: a dict that
    maps every matched node to its partner (both directions)."""
    G = _require("hopcroft_karp_matching", G)
    top, bottom = nx.bipartite.sets(G.graph, top_nodes, backend="networkx")
    top = [v for v in G.graph if v in top]  # G.nodes order, as the sets' order is arbitrary
    bottom = [v for v in G.graph if v in bottom]
    row_of = {v: i for i, v in enumerate(top)}
    col_of = {v: i for i, v in enumerate(bottom)}
    rows, cols = [], []
    for u in top:
        for v in G.graph[u]:
            if v in col_of:
                rows.append(row_of[u])
                cols.append(col_of[v])
    g = mgmatch.Graph.from_edges(np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64),
                                 bipartite=True, shape=(len(top), len(bottom)))
    result = mgmatch.bipartite_matching(g, device=_device(device))
    matching = {}
    for r, c in zip(*result.to_table().values()):
        u, v = top[int(r)], bottom[int(c)]
        matching[u] = v
        matching[v] = u
    return matching


def eppstein_matching(G, top_nodes=None, *, device=None):
    """As :func:`hopcroft_karp_matching` (any maximum matching is a valid answer)."""
    return hopcroft_karp_matching(G, top_nodes, device=device)
