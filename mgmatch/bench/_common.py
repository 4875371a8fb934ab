"""Timing helpers shared by every benchmark family.

Every family module exposes ``run(...) -> list[dict]`` returning one row per (graph,
implementation); :func:`mgmatch.bench.write_report` turns rows into the printed table and the JSON
file. A row always has ``family``, ``graph``, ``impl``, ``device``, ``n``, ``nnz``, ``time_s``
(median), ``times_s`` (all repeats) and, where a peer ran on the same graph, ``ratio_vs`` (the
peer's name) and ``speedup`` (peer time / our time).
"""

from __future__ import annotations

import statistics
import time

__all__ = ["time_call", "sync_device", "announce", "named_graph", "networkit_graph"]


def named_graph(spec):
    """``(name, Graph)`` from a graph spec (``"kron:k=18,seed=1"``, see
    :func:`mgmatch.generators.parse_graph_spec`) or from a ready ``(name, Graph)`` pair."""
    if isinstance(spec, tuple):
        return spec
    from .. import generators  # noqa: PLC0415  (imported lazily: only benchmarks need it)

    return spec, generators.parse_graph_spec(spec)


def networkit_graph(graph):
    """The same undirected graph as a NetworKit graph (weighted when ``graph`` is), edges indexed."""
    import networkit as nk  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    u, v, w = (np.asarray(a) for a in graph.to("cpu").edges())
    g = nk.graph.Graph(graph.n, weighted=bool(graph.weighted))
    ends = (u.astype(np.uint64), v.astype(np.uint64))
    g.addEdges((w.astype(np.float64), ends) if graph.weighted else ends)
    g.indexEdges()
    return g


def announce(family: str, spec) -> None:
    """One status line on standard error as a benchmark graph starts (generation and repeats
    of large graphs take a while)."""
    import sys  # noqa: PLC0415

    name = spec if isinstance(spec, str) else spec[0]
    print(f"mgmatch bench: {family}: {name}", file=sys.stderr, flush=True)


def sync_device() -> None:
    """Wait for queued GPU work, when CuPy is loaded and sees a device."""
    from .._array import cupy_or_none  # noqa: PLC0415

    cp = cupy_or_none()
    if cp is not None:
        cp.cuda.runtime.deviceSynchronize()


def time_call(fn, *, repeats: int = 5, warmup: int = 1, timeout: float | None = None) -> dict:
    """Run ``fn()`` ``warmup`` times untimed, then ``repeats`` times timed (wall clock,
    device synchronised). Stops early when the elapsed total passes ``timeout`` seconds.

    Returns ``{"time_s": median, "times_s": [...], "result": last result}``.
    """
    result = None
    for _ in range(warmup):
        result = fn()
        sync_device()
    times = []
    start_all = time.perf_counter()
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        sync_device()
        times.append(time.perf_counter() - t0)
        if timeout is not None and time.perf_counter() - start_all > timeout:
            break
    return {"time_s": statistics.median(times), "times_s": times, "result": result}
