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
from ..engine.execute import RunInfo
from ..engine.program import RoundLog

__all__ = ["run_shared", "suitor_piece", "bsuitor_piece"]


def run_shared(program, graph, solve):
    """``program``'s result on ``graph`` from ``solve(graph, threads)``, the matched edges as
    one partition's piece on the engine's threads
    (:meth:`~mgmatch.engine.config.EngineConfig.thread_count`, capped by Numba's): assembled as
    the program assembles its partitions' pieces, as one round that sends no message. ``None``
    when the graph is not on the CPU: the program's own partition then runs."""
    if graph.xp is not np:
        return None
    import numba  # noqa: PLC0415

    threads = max(1, min(get_config().thread_count(), numba.get_num_threads()))
    t0 = time.perf_counter()
    piece = solve(graph, threads)
    t = time.perf_counter() - t0
    log = RoundLog()
    log.add(0, t, 0.0)
    result = program.assemble(graph, [piece], RunInfo(log=log, device="cpu", n_parts=1,
                                                      timings={"partition": 0.0, "run": t}))
    result.params["threads"] = threads
    return result


def suitor_piece(graph, threads: int, chunk: int = 256) -> dict:
    """Suitor's matched pairs ``u < v``, ascending, on ``threads`` threads, the vertices handed
    out ``chunk`` at a time."""
    from ..cpu.suitor_shared import suitor_shared  # noqa: PLC0415

    mate, mate_w = suitor_shared(graph.indptr, graph.indices, graph.weights, threads, chunk)
    u = np.flatnonzero(mate > np.arange(graph.n))
    return {"u": u, "v": mate[u], "w": mate_w[u]}


def bsuitor_piece(graph, threads: int, b, chunk: int = 256) -> dict:
    """b-Suitor's edges ``u < v``, ascending, with capacities ``b`` (an integer, or one per
    vertex) on ``threads`` threads."""
    from ..cpu.suitor_shared import bsuitor_shared  # noqa: PLC0415

    deg = np.diff(graph.indptr).astype(np.int64)
    cap = np.minimum(np.broadcast_to(np.asarray(b, dtype=np.int64), deg.shape), deg)  # at most one per neighbour
    u, v, w = bsuitor_shared(graph.indptr, graph.indices, graph.weights, cap, threads, chunk)
    return {"u": u, "v": v, "w": w}
