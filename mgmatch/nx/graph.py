"""The backend's graph: a NetworkX graph seen through mgmatch, converted once per weight."""

from __future__ import annotations

from ..convert import GraphInput, as_graph

__all__ = ["NxGraph", "count_self_loops"]


def count_self_loops(G) -> int:
    """Self-loops of a NetworkX graph, counted without dispatching (``nx.number_of_selfloops``
    would go through the backends again)."""
    return sum(1 for v, nbrs in G.adj.items() if v in nbrs)


class NxGraph:
    """A NetworkX graph as the ``mgmatch`` backend holds it.

    The nodes, in the order ``G.nodes`` lists them, are mgmatch's vertices ``0 .. n-1`` (any
    hashable node ids; :class:`~mgmatch.convert.VertexMap` maps results back). The mgmatch
    :class:`~mgmatch.graph.Graph` is built per weight attribute when first needed (NetworkX
    converts with the attribute the call names, and caches the result on the original graph).

    Parameters
    ----------
    graph : networkx.Graph
        The graph; it is kept, not copied, so that results name its nodes.
    """

    __networkx_backend__ = "mgmatch"

    def __init__(self, graph):
        self.graph = graph
        self._inputs: dict = {}

    def __len__(self) -> int:
        return len(self.graph)

    def __repr__(self) -> str:
        return f"NxGraph({self.graph!r})"

    def is_directed(self) -> bool:
        return self.graph.is_directed()

    def is_multigraph(self) -> bool:
        return self.graph.is_multigraph()

    def input(self, weight: str | None) -> GraphInput:
        """The mgmatch graph with edge weights from attribute ``weight`` (1 where it is missing,
        or everywhere when ``weight`` is None); parallel edges of a multigraph add up."""
        if weight not in self._inputs:
            self._inputs[weight] = as_graph(self.graph, weight=weight)
        return self._inputs[weight]
