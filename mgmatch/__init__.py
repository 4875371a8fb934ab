"""mgmatch: matchings and communities on large graphs, on CPUs, one GPU, or a Dask cluster.

>>> import mgmatch
>>> g = mgmatch.Graph.from_edges([0, 1, 2], [1, 2, 3], [1.0, 3.0, 1.0])
>>> mgmatch.suitor(g, device="cpu").weight
3.0
"""

from ._numba_cache import ensure_numba_cache as _ensure_numba_cache
from ._version import __version__

_ensure_numba_cache()  # before the CPU twins are compiled

from .algorithms.matching import (  # noqa: E402
    MatchingResult,
    b_suitor,
    handshake,
    locally_dominant,
    strongest_neighbour,
    suitor,
)
from .algorithms.bipartite import BipartiteMatchingResult, bipartite_matching  # noqa: E402
from .algorithms.louvain import LouvainResult, louvain, modularity  # noqa: E402
from .algorithms.stable_marriage import StableMarriageResult, stable_marriage  # noqa: E402
from .errors import ClusterError, InputError, MgmatchError, ParameterError, ResourceError  # noqa: E402
from .graph import Graph, Partition  # noqa: E402
from .ordering import reorder  # noqa: E402
from .preferences import Preferences  # noqa: E402

__all__ = [
    "__version__",
    "Graph",
    "Partition",
    "reorder",
    "MatchingResult",
    "suitor",
    "b_suitor",
    "locally_dominant",
    "handshake",
    "strongest_neighbour",
    "BipartiteMatchingResult",
    "bipartite_matching",
    "LouvainResult",
    "louvain",
    "modularity",
    "Preferences",
    "StableMarriageResult",
    "stable_marriage",
    "MgmatchError",
    "InputError",
    "ParameterError",
    "ResourceError",
    "ClusterError",
]
