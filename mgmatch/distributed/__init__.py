"""Placing graphs on a Dask cluster: one partition per worker; the engine
(:mod:`mgmatch.engine.cluster_runner`) runs every algorithm's rounds on them.

>>> from mgmatch.distributed import cluster  # doctest: +SKIP
>>> with cluster(workers=2) as client:  # doctest: +SKIP
...     result = mgmatch.suitor(graph, client=client)

Files on storage that every worker reads can be read into partitions on the workers, so the
graph never passes through the client:

>>> from mgmatch.distributed import read_partitions  # doctest: +SKIP
>>> dg = read_partitions(client, "web.parquet")  # doctest: +SKIP
>>> result = mgmatch.suitor(dg, client=client)  # doctest: +SKIP

A graph in the client that several runs use is placed on the workers once with :func:`place`.
"""

from .cluster import WorkerSetup, cluster, connect
from .loading import DistributedGraph, place, place_async, read_partitions, read_partitions_async

__all__ = [
    "cluster", "connect", "WorkerSetup", "DistributedGraph",
    "read_partitions", "read_partitions_async", "place", "place_async",
]
