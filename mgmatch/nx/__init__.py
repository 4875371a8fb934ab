"""mgmatch as a NetworkX backend.

With mgmatch installed, NetworkX dispatches these functions to it when asked to::

    import networkx as nx
    nx.community.louvain_communities(G, backend="mgmatch")          # or device="cpu" / "gpu"
    nx.community.louvain_partitions(G, backend="mgmatch")
    nx.community.modularity(G, communities, backend="mgmatch")
    nx.maximal_matching(G, backend="mgmatch")
    nx.bipartite.maximum_matching(G, backend="mgmatch")             # hopcroft_karp_matching
    nx.bipartite.eppstein_matching(G, backend="mgmatch")

or for every call, with ``nx.config.backend_priority.algos = ["mgmatch"]`` (or the environment
variable ``NETWORKX_BACKEND_PRIORITY=mgmatch``). The node ids may be any hashables: the nodes, in
the order ``G.nodes`` lists them, become mgmatch's vertices ``0 .. n-1`` and results name the
original nodes. Results are what NetworkX returns: a list of sets of nodes, a float, a set of
pairs, a dict of partners.

Where mgmatch differs from NetworkX:

* Louvain is deterministic (Naim et al.'s GPU Louvain, the same on CPU and GPU), so ``seed`` is
  accepted and ignored, and its communities are its own local optimum rather than the one
  NetworkX's randomised order finds for a seed; ``threshold`` ends the levels as NetworkX's does.
* ``maximal_matching`` is the greedy matching in mgmatch's edge order; the bipartite matchings
  have NetworkX's (maximum) cardinality, not necessarily its pairs.
* Directed graphs, and for Louvain and modularity graphs with negative weights or a resolution
  that is not positive, and for Louvain graphs with self-loops, are left to NetworkX: ``can_run`` says why, and NetworkX runs
  its own implementation when ``nx.config.fallback_to_nx`` is on (otherwise the call raises
  ``NotImplementedError`` with that reason).

NetworkX shows these notes in the functions' docstrings (from ``_mgmatch_nx.get_info``). Its own
tests of these functions run through the backend with ``NETWORKX_TEST_BACKEND=mgmatch``; the
ones expected to fail, with the reasons, are :data:`interface.EXPECTED_FAILURES`.
"""

from .algorithms import (
    eppstein_matching,
    hopcroft_karp_matching,
    louvain_communities,
    louvain_partitions,
    maximal_matching,
    modularity,
)
from .graph import NxGraph
from .interface import BackendInterface, backend_interface

__all__ = [
    "NxGraph",
    "BackendInterface",
    "backend_interface",
    "louvain_communities",
    "louvain_partitions",
    "modularity",
    "maximal_matching",
    "hopcroft_karp_matching",
    "eppstein_matching",
]
