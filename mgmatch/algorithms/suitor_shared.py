"""Suitor's and b-Suitor's fast path on the CPU: the whole graph shared by every thread, one lock
per vertex.

In-process on the CPU a one-partition run needs no rounds at all: the threads propose into one
shared state (:mod:`mgmatch.cpu.suitor_shared`: the parallel Suitor of Manne and Halappanavar,
the multithreaded b-Suitor of Khan et al.), which returns the (b-)matching the partition program
returns on any partition count. This module is the two programs' ``single_device`` hook and
nothing else calls it: a run over several partitions, in-process or on a cluster, never depends
on it.
"""

from __future__ import annotations

import time

import numpy as np

from ..engine.config import get_config
from ..engine.program import RoundLog

__all__ = ["run_shared_suitor", "run_shared_bsuitor"]


def _threads() -> int:
    """The engine's threads (:meth:`~mgmatch.engine.config.EngineConfig.thread_count`), capped
    by Numba's."""
    import numba  # noqa: PLC0415

    return max(1, min(get_config().thread_count(), numba.get_num_threads()))


def _result(graph, algorithm, u, v, w, mate, threads, t, params=None):
    from .matching import MatchingResult  # noqa: PLC0415

    log = RoundLog()
    log.add(0, t, 0.0)  # one round that sends no message
    return MatchingResult(
        u=u, v=v, w=w, mate=mate, n=graph.n, m=graph.m, algorithm=algorithm,
        params={"partitions": 1, **(params or {}), "threads": threads}, rounds=log, device="cpu", n_parts=1,
        timings={"partition": 0.0, "match": t, "total": t, **{k: x for k, x in log.as_dict().items()
                                                              if k.endswith("_s")}},
    )


def run_shared_suitor(graph, chunk: int = 256):
    """The :class:`~mgmatch.algorithms.matching.MatchingResult` of Suitor on ``graph`` (on the
    CPU) on the engine's threads, the vertices handed out ``chunk`` at a time."""
    from ..cpu.suitor_shared import suitor_shared  # noqa: PLC0415

    threads = _threads()
    t0 = time.perf_counter()
    mate, mate_w = suitor_shared(graph.indptr, graph.indices, graph.weights, threads, chunk)
    u = np.flatnonzero(mate > np.arange(graph.n))  # each pair once, u < v, ascending
    t = time.perf_counter() - t0
    return _result(graph, "suitor", u.astype(np.int64), mate[u], mate_w[u], mate, threads, t)


def run_shared_bsuitor(graph, b, chunk: int = 256):
    """The :class:`~mgmatch.algorithms.matching.MatchingResult` of b-Suitor on ``graph`` (on the
    CPU) with capacities ``b`` (an integer, or one per vertex) on the engine's threads."""
    from ..cpu.suitor_shared import bsuitor_shared  # noqa: PLC0415

    threads = _threads()
    t0 = time.perf_counter()
    deg = np.diff(graph.indptr).astype(np.int64)
    cap = np.minimum(np.asarray(b, dtype=np.int64), deg)  # nobody keeps more partners than neighbours
    u, v, w = bsuitor_shared(graph.indptr, graph.indices, graph.weights, np.broadcast_to(cap, deg.shape).copy(),
                             threads, chunk)
    t = time.perf_counter() - t0
    return _result(graph, "bsuitor", u, v, w, None, threads, t,
                   {"b": int(b) if np.isscalar(b) else "per-vertex"})
