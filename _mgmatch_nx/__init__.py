"""What NetworkX learns about the ``mgmatch`` backend when it starts, without importing mgmatch.

NetworkX reads every installed backend's information (the ``networkx.backend_info`` entry point)
while ``import networkx`` runs; importing mgmatch itself there would compile nothing but still
load Numba, so this small package holds the information alone. The backend itself is
:mod:`mgmatch.nx`, loaded on the first call that dispatches to it.
"""

from __future__ import annotations

import os

#: The NetworkX functions the backend implements, each with what differs from NetworkX's own.
FUNCTIONS = {
    "louvain_communities": (
        "mgmatch's Louvain (Naim et al., GPU Louvain) is deterministic: the same graph, parameters "
        "and device give the same communities, so ``seed`` is accepted and ignored, and the "
        "communities may differ from those NetworkX finds for a given seed. ``threshold`` stops "
        "the levels as NetworkX's does; within a level, moves stop when a sweep gains less than "
        "mgmatch's own sweep threshold. Directed graphs, graphs with self-loops and negative "
        "weights are not supported (NetworkX's own implementation runs them when fallback is on)."
    ),
    "louvain_partitions": (
        "As ``louvain_communities``: deterministic (``seed`` ignored); one partition per level."
    ),
    "modularity": (
        "Undirected graphs with non-negative weights and a positive resolution; others are left "
        "to NetworkX. Self-loops count as NetworkX counts them."
    ),
    "maximal_matching": (
        "The matching is the greedy one in mgmatch's edge order (ties broken by the smaller "
        "endpoint ids, Suitor algorithm), so it can differ from NetworkX's, which follows the "
        "order of ``G.edges``; both are maximal."
    ),
    "hopcroft_karp_matching": (
        "A maximum matching by mgmatch's bipartite matching (APFB by default); the cardinality is "
        "NetworkX's, the pairs may differ. Directed graphs are left to NetworkX."
    ),
    "eppstein_matching": "As ``hopcroft_karp_matching``.",
}

_DEVICE = {"device : {'auto', 'cpu', 'gpu'}, optional": (
    "Where mgmatch runs (default: ``nx.config.backends.mgmatch.device``, 'auto' unless the "
    "MGMATCH_NX_DEVICE environment variable says otherwise: the GPU when CuPy sees one)."
)}


def get_info() -> dict:
    """The ``networkx.backend_info`` entry point: name, summary, functions, default config."""
    return {
        "backend_name": "mgmatch",
        "project": "mgmatch",
        "package": "mgmatch",
        "url": "https://github.com/mgmatch/mgmatch",
        "short_summary": "Matchings and Louvain communities on a CPU, one GPU or a Dask cluster.",
        "functions": {
            name: {"additional_docs": docs, "additional_parameters": dict(_DEVICE)}
            for name, docs in FUNCTIONS.items()
        },
        "default_config": {"device": os.environ.get("MGMATCH_NX_DEVICE", "auto")},
    }
