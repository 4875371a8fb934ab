"""Running the algorithms on a Dask cluster: one partition per worker, boundary messages
exchanged worker to worker by a coordinator (see :mod:`mgmatch.distributed.coordinator`).

>>> from mgmatch.distributed import cluster  # doctest: +SKIP
>>> with cluster(workers=2) as client:  # doctest: +SKIP
...     result = mgmatch.suitor(graph, client=client)
"""

from .cluster import WorkerSetup, cluster, connect
from .coordinator import run_distributed, run_rounds_async

__all__ = ["cluster", "connect", "WorkerSetup", "run_distributed", "run_rounds_async"]
