"""Timing helpers shared by every benchmark family.

Every family module exposes ``run(...) -> list[dict]`` returning one row per (graph,
implementation); :func:`mgmatch.bench.write_report` turns rows into the printed table and the JSON
file. A row always has ``family``, ``graph``, ``impl``, ``device``, ``n``, ``nnz``, ``time_s``
(median), ``times_s`` (all repeats), ``threads`` (the CPU threads of the pass, see
:func:`bench_threads`) and, where a peer ran on the same graph, ``ratio_vs`` (the peer's name)
and ``speedup`` (peer time / our time).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import statistics
import time

__all__ = [
    "time_call", "time_alternating", "sync_device", "announce", "named_graph", "networkit_graph", "gpu_peak_bytes",
    "host_threads", "run_threads", "bench_threads", "check_thread_counts", "graph_cache",
]

#: The thread count of the benchmark pass under way (``mgmatch bench --threads``), or None.
_PASS_THREADS: contextvars.ContextVar[int | None] = contextvars.ContextVar("mgmatch_bench_threads", default=None)
#: Graphs already built in this run, by spec, while :func:`graph_cache` is open (or None).
_GRAPHS: contextvars.ContextVar[dict | None] = contextvars.ContextVar("mgmatch_bench_graphs", default=None)


def host_threads() -> int:
    """The CPUs this process may run on: its affinity set where the platform has one (a batch
    job's cpuset, ``taskset``), else every CPU of the host. The CPU peers get this many threads,
    as Numba gives mgmatch's CPU kernels: ``os.cpu_count()`` counts the host's CPUs, and on a
    job given a few of many cores it would run a peer oversubscribed, slower than it is."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # (no affinity on this platform)
        return os.cpu_count() or 1


def run_threads() -> int:
    """The threads a benchmark case runs on: the pass's count under :func:`bench_threads`
    (``--threads``), else :func:`host_threads`. Peers get this many (NetworKit's
    ``setNumberOfThreads``), as mgmatch does."""
    threads = _PASS_THREADS.get()
    return host_threads() if threads is None else threads


def check_thread_counts(counts) -> list[int]:
    """Thread counts for :func:`bench_threads`, checked (as
    :func:`~mgmatch.engine.cpu_threads` checks one): at least one, each a positive integer no
    larger than the threads Numba runs."""
    from ..engine import cpu_threads  # noqa: PLC0415
    from ..errors import ParameterError  # noqa: PLC0415

    counts = list(counts)
    if not counts:
        raise ParameterError("give at least one thread count")
    for t in counts:
        with cpu_threads(t):
            pass
    return [int(t) for t in counts]


@contextlib.contextmanager
def bench_threads(threads: int | None):
    """Run the block on ``threads`` threads (None: as configured): mgmatch's
    (:func:`~mgmatch.engine.cpu_threads`: the engine's partitions and pool, Numba's parallel
    loops) and the peers' (:func:`run_threads`; NetworKit's pool is set here too when it is
    installed). Everything is put back afterwards."""
    if threads is None:
        yield
        return
    from ..engine import cpu_threads  # noqa: PLC0415

    try:
        import networkit as nk  # noqa: PLC0415
    except ImportError:
        nk = None
    with cpu_threads(threads):
        nk_before = nk.getMaxNumberOfThreads() if nk is not None else None
        token = _PASS_THREADS.set(int(threads))
        if nk is not None:
            nk.setNumberOfThreads(int(threads))
        try:
            yield
        finally:
            _PASS_THREADS.reset(token)
            if nk is not None:
                nk.setNumberOfThreads(nk_before)


@contextlib.contextmanager
def graph_cache():
    """Within the block, :func:`named_graph` builds each spec once (a run that repeats a family
    at several thread counts generates its graphs once)."""
    token = _GRAPHS.set({})
    try:
        yield
    finally:
        _GRAPHS.reset(token)


def named_graph(spec):
    """``(name, Graph)`` from a graph spec (``"kron:k=18,seed=1"``, see
    :func:`mgmatch.generators.parse_graph_spec`), from a graph file (``"file:PATH"``, or a
    path to a file that exists; read by :func:`mgmatch.io.read_graph` and named by its file
    name), or from a ready ``(name, Graph)`` pair."""
    if isinstance(spec, tuple):
        return spec
    cache = _GRAPHS.get()
    if cache is not None:
        if spec not in cache:
            cache[spec] = _build_named_graph(spec)
        return cache[spec]
    return _build_named_graph(spec)


def _build_named_graph(spec):
    path = spec[5:] if spec.startswith("file:") else spec
    if spec.startswith("file:") or os.path.isfile(path):
        from ..io import read_graph  # noqa: PLC0415

        return os.path.basename(path), read_graph(path)
    from .. import generators  # noqa: PLC0415  (imported lazily: only benchmarks need it)

    return spec, generators.parse_graph_spec(spec)


def networkit_graph(graph, *, weighted=None):
    """The same undirected graph as a NetworKit graph, edges indexed: weighted when ``graph`` is,
    or as ``weighted`` says (an unweighted graph then gets weight 1 on every edge, which
    NetworKit's b-Suitor needs)."""
    import networkit as nk  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    u, v, w = (np.asarray(a) for a in graph.to("cpu").edges())
    weighted = bool(graph.weighted) if weighted is None else bool(weighted)
    g = nk.graph.Graph(graph.n, weighted=weighted)
    ends = (u.astype(np.uint64), v.astype(np.uint64))
    g.addEdges((w.astype(np.float64), ends) if weighted else ends)
    g.indexEdges()
    return g


def announce(family: str, spec) -> None:
    """One status line on standard error as a benchmark graph starts (generation and repeats
    of large graphs take a while)."""
    import sys  # noqa: PLC0415

    name = spec if isinstance(spec, str) else spec[0]
    threads = _PASS_THREADS.get()
    where = "" if threads is None else f" ({threads} thread{'s' if threads != 1 else ''})"
    print(f"mgmatch bench: {family}: {name}{where}", file=sys.stderr, flush=True)


def sync_device() -> None:
    """Wait for queued GPU work, when CuPy is loaded and sees a device."""
    from .._array import cupy_or_none  # noqa: PLC0415

    cp = cupy_or_none()
    if cp is not None:
        cp.cuda.runtime.deviceSynchronize()


def time_call(fn, *, repeats: int = 5, warmup: int = 1, timeout: float | None = None, warmup_s: float = 0.0) -> dict:
    """Run ``fn()`` untimed ``warmup`` times (at least once), and on until ``warmup_s`` seconds
    have passed since the first of them ended; then ``repeats`` times timed (wall clock, device
    synchronised). Stops early when the elapsed total of the timed runs passes ``timeout`` seconds.

    A run of a few milliseconds needs more than one run to warm up (clocks, caches, allocator
    pools, a peer's thread pool): the time-based warm-up gives short runs many untimed runs and
    long ones the one. Its time starts after the first run, which may spend seconds loading
    kernels.

    Returns ``{"time_s": median, "times_s": [...], "warmup_runs": n, "result": last result}``.
    """
    result = fn()
    sync_device()
    warmup_runs = 1
    start_warm = time.perf_counter()
    while warmup_runs < warmup or time.perf_counter() - start_warm < warmup_s:
        result = fn()
        sync_device()
        warmup_runs += 1
    times = []
    start_all = time.perf_counter()
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        sync_device()
        times.append(time.perf_counter() - t0)
        if timeout is not None and time.perf_counter() - start_all > timeout:
            break
    return {"time_s": statistics.median(times) if times else None, "times_s": times, "warmup_runs": warmup_runs,
            "result": result}


def time_alternating(fns: dict, *, repeats: int = 5, block: int = 5, timeout: float | None = None,
                     warmup_s: float = 0.0, block_warmup_s: float = 0.0) -> dict:
    """Time several implementations of one computation in alternating blocks: each ``fn`` of
    ``fns`` (name to callable) is warmed up as :func:`time_call` does, one after another; then,
    round after round, each runs untimed (once, and on until ``block_warmup_s`` seconds have
    passed) and ``block`` times timed, until it has ``repeats`` timed runs or its timed runs add
    up to more than ``timeout`` seconds.

    Timed one after the other, two implementations can meet different host conditions: on a
    GPU host, the Python of one process ran half as fast in one second as in another
    (docs/performance.md, section "Benchmark warm-up rules"), and whichever side ran in the slow
    stretch lost. In alternating blocks both sides share such stretches. The untimed runs that
    open each block warm the side's caches, threads and clocks again after the other side's block.

    Returns ``{name: {"time_s": median, "times_s": [...], "warmup_runs": n, "result": last,
    "wall_s": seconds of all its runs, untimed ones included}}``.

    >>> out = time_alternating({"a": lambda: 1, "b": lambda: 2}, repeats=3, block=2)
    >>> [len(out[k]["times_s"]) for k in "ab"], out["b"]["result"]
    ([3, 3], 2)
    """
    if repeats < 1 or block < 1:
        raise ValueError("repeats and block must be at least 1")
    out = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        out[name] = time_call(fn, repeats=0, warmup=1, warmup_s=warmup_s)
        out[name]["wall_s"] = time.perf_counter() - t0
    while True:
        going = [name for name, rec in out.items() if len(rec["times_s"]) < repeats
                 and (timeout is None or sum(rec["times_s"]) <= timeout)]
        if not going:
            break
        for name in going:
            rec = out[name]
            t0 = time.perf_counter()
            t = time_call(fns[name], repeats=min(block, repeats - len(rec["times_s"])), warmup=1,
                          warmup_s=block_warmup_s,
                          timeout=None if timeout is None else timeout - sum(rec["times_s"]))
            rec["wall_s"] += time.perf_counter() - t0
            rec["times_s"] += t["times_s"]
            rec["warmup_runs"] += t["warmup_runs"]
            rec["result"] = t["result"]
    for rec in out.values():
        rec["time_s"] = statistics.median(rec["times_s"])
    return out


def gpu_peak_bytes(fn, resident_bytes: int = 0) -> dict:
    """GPU memory of one call of ``fn()``: every allocation it makes goes to a fresh CuPy memory
    pool, which keeps each block it ever handed out, so the pool's size afterwards bounds the
    call's peak from above. ``resident_bytes`` (the graph already on the device) is added to
    give the peak of the whole run.

    Returns ``{"extra_bytes": ..., "peak_bytes": ...}``.
    """
    import cupy as cp  # noqa: PLC0415

    pool = cp.cuda.MemoryPool()
    with cp.cuda.using_allocator(pool.malloc):
        fn()
        sync_device()
    extra = int(pool.total_bytes())
    pool.free_all_blocks()
    return {"extra_bytes": extra, "peak_bytes": extra + int(resident_bytes)}


def device_bytes(*arrays) -> int:
    """Bytes of the given arrays (those that are ``None`` count nothing)."""
    return int(sum(a.nbytes for a in arrays if a is not None))
