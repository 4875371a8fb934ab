"""mgmatch: matchings and communities on large graphs, on CPUs, one GPU, or a Dask cluster."""

from ._version import __version__
from .errors import ClusterError, InputError, MgmatchError, ParameterError, ResourceError
from .graph import Graph, Partition

__all__ = [
    "__version__",
    "Graph",
    "Partition",
    "MgmatchError",
    "InputError",
    "ParameterError",
    "ResourceError",
    "ClusterError",
]
