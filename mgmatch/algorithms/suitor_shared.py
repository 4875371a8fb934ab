"""Suitor's fast path on the CPU: the whole graph shared by every thread, one lock per vertex.

In-process on the CPU a one-partition Suitor run needs no rounds at all: the threads propose
into one shared state (:mod:`mgmatch.cpu.suitor_shared`, the parallel Suitor of Manne and
Halappanavar), which returns the matching the partition program returns on any partition count.
This module is the Suitor program's ``single_device`` hook and nothing else calls it: a run over
several partitions, in-process or on a cluster, never depends on it.
"""

from __future__ import annotations

import time

import numpy as np

from ..engine.config import get_config
from ..engine.program import RoundLog

__all__ = ["run_shared_suitor"]


def run_shared_suitor(graph, chunk: int = 256):
    """The :class:`~mgmatch.algorithms.matching.MatchingResult` of Suitor on ``graph`` (on the
    CPU) on the engine's threads (:meth:`~mgmatch.engine.config.EngineConfig.thread_count`,
    capped by Numba's), the vertices handed out ``chunk`` at a time."""
    import numba  # noqa: PLC0415

    from ..cpu.suitor_shared import suitor_shared  # noqa: PLC0415
    from .matching import MatchingResult  # noqa: PLC0415

    threads = max(1, min(get_config().thread_count(), numba.get_num_threads()))
    t0 = time.perf_counter()
    mate, mate_w = suitor_shared(graph.indptr, graph.indices, graph.weights, threads, chunk)
    u = np.flatnonzero(mate > np.arange(graph.n))  # each pair once, u < v, ascending
    t = time.perf_counter() - t0
    log = RoundLog()
    log.add(0, t, 0.0)  # one round that sends no message
    return MatchingResult(
        u=u.astype(np.int64), v=mate[u], w=mate_w[u], mate=mate, n=graph.n, m=graph.m, algorithm="suitor",
        params={"partitions": 1, "threads": threads}, rounds=log, device="cpu", n_parts=1,
        timings={"partition": 0.0, "match": t, "total": t, **{k: v for k, v in log.as_dict().items()
                                                              if k.endswith("_s")}},
    )
