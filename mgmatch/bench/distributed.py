"""Benchmark of the engine on Dask: in-process local mode against clusters of 1, 2, ... workers.

For each graph and algorithm the matching runs in-process (``impl`` ``local``, one partition on
one device) and on embedded local clusters of each worker count (``impl`` ``dask-<k>w``, one
partition per worker: one GPU per worker, or one CPU process per worker). The graph is placed
on the workers once (:func:`mgmatch.distributed.place`, ``placement_s``); each timed run then
starts from the partitions in the workers' host memory, as a local run starts from the graph in
host memory, and ends with the result in the client. On GPU workers the graph is also placed
resident in GPU memory (``impl`` ``dask-<k>w-resident``), against a local run that starts from
the graph on the GPU (``local-resident``). Extra row fields:

``identical``
    the matching equals the local run's, vertex for vertex (b-Suitor: pair for pair);
``rounds``, ``messages``, ``max_messages_per_round``
    rounds and messages exchanged (median run);
``transport``
    how the workers exchanged them (``nccl``, ``tcp``; ``local`` for one worker);
``load_s``, ``finish_s``
    the time the workers took to load their partitions onto their devices before round 1,
    and from the last round to their results;
``handback_bytes``
    the result bytes that came back through the host (files in its shared memory, or mapped from a
    worker's GPU), not through Dask
    (:mod:`mgmatch.engine.handback`);
``cut_fraction``
    the share of the stored entries whose ends the partitions split
    (:func:`mgmatch.ordering.cut_fraction`): what the rounds' messages grow with;
``compute_s``, ``exchange_s``, ``idle_s``, ``exchange_share``
    time per phase and the share of the run's wall time spent in exchange;
``exchange_ms_per_round``, ``exchange_ms_max``
    the median and the largest exchange of one round (the slowest worker's);
``speedup``
    the one-worker run's time / this run's time (``ratio_vs`` names it);
``dask_1w_over_local`` (local rows)
    the one-worker run's time / the local run's time: the engine's overhead on one worker.

With ``fill_gpus`` the family measures capacity instead (``impl`` ``filled-<k>w``): every
visible GPU is filled until less than the single-GPU estimate of the run is free (the estimate
the local run checks before it starts, ``fill_fraction`` of it left free), the local run must
refuse with the memory message (``local_refused``, the message in ``local_error``), and the
clusters of each worker count of at least 2 (partitions in host memory) must finish with the
local result computed before the GPUs were filled (``identical``).

With ``read`` (the default) each graph is also written to a Parquet file and read into
partitions on each cluster two ways, timed in alternating blocks (algorithm ``read``): by the
workers themselves (``impl`` ``read-on-<k>w``, :func:`mgmatch.distributed.read_partitions`,
what ``mgmatch run --read-on-workers`` does) and by the client, which reads the file and scatters
the partitions (``client-read-<k>w``: :func:`mgmatch.io.read_graph`, then
:func:`mgmatch.distributed.place`); ``speedup`` is the client's time over the workers'.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from ._common import announce, named_graph, time_alternating, time_call

__all__ = ["run", "DEFAULT_GRAPHS"]

#: Geometric graphs both in the order their points are drawn (half of the entries cross between
#: two ranges of ids) and numbered cell by cell (a tenth of a percent do): how the engine fares
#: depends on the cut (docs/performance.md, "Distributed runs: the vertex order and the cut").
DEFAULT_GRAPHS = {
    "gpu": ["kron:k=23,seed=1", "rgg:k=24,seed=1", "rgg:k=24,seed=1,order=cells"],
    "cpu": ["kron:k=18,seed=1", "delaunay:k=18,seed=1", "delaunay:k=18,seed=1,order=cells"],
}
QUICK_GRAPHS = ["kron:k=12,seed=1", "delaunay:k=12,seed=1"]
DEFAULT_ALGORITHMS = ("suitor", "bsuitor")


def _same(a, b, algorithm) -> bool:
    if algorithm == "louvain":  # every partition count takes the one-partition decisions
        return bool(np.array_equal(a.communities, b.communities) and list(a.modularity) == list(b.modularity))
    if algorithm == "bsuitor":
        return bool(np.array_equal(a.u, b.u) and np.array_equal(a.v, b.v))
    return bool(np.array_equal(a.mate, b.mate))


def _worker_counts(dev: str, workers):
    if workers is not None:
        return [int(w) for w in workers]
    if dev == "gpu":
        from .._array import cupy_or_none  # noqa: PLC0415

        return list(range(1, cupy_or_none().cuda.runtime.getDeviceCount() + 1))
    return [1, 2]


def run(graphs=None, device="auto", repeats=3, quick=False, workers=None, algorithms=DEFAULT_ALGORITHMS, b=3,
        timeout=None, read=True, fill_gpus=False, fill_fraction=0.7) -> list[dict]:
    """Time each algorithm in-process and on local clusters of each worker count; return rows.

    Parameters
    ----------
    graphs : list of str, optional
        Graph specs; default kron k=23 and rgg k=24 on GPUs, kron and delaunay k=18 on CPUs.
    device : {"auto", "cpu", "gpu"}
    repeats : int
        Timed runs per configuration (after one warm-up run).
    workers : list of int, optional
        Worker counts (default: 1 to the number of GPUs; 1 and 2 CPU processes).
    algorithms : sequence of str
        Of ``suitor``, ``bsuitor``, ``ld``, ``handshake``, ``louvain``; ``b`` for b-Suitor.
    read : bool
        Also time reading each graph from Parquet on the workers against reading it in the
        client and placing it.
    fill_gpus : bool
        Measure capacity instead: the GPUs filled so that a local run does not fit, clusters of
        2 or more workers (see the module notes); ``fill_fraction`` of the single-GPU estimate
        is left free on each GPU.
    """
    from .._array import resolve_device  # noqa: PLC0415
    from ..algorithms.louvain import louvain  # noqa: PLC0415
    from ..algorithms.matching import match  # noqa: PLC0415
    from ..distributed import cluster, place  # noqa: PLC0415
    from ..ordering import cut_fraction  # noqa: PLC0415

    def solve(graph, algorithm, b, **where):
        return louvain(graph, **where) if algorithm == "louvain" else match(graph, algorithm, b=b, **where)

    dev = resolve_device(device)
    if isinstance(algorithms, str):
        algorithms = (algorithms,)
    specs = graphs or (QUICK_GRAPHS if quick else DEFAULT_GRAPHS[dev])
    if fill_gpus:
        return _capacity_rows(specs, dev, algorithms, b, _worker_counts(dev, workers), repeats, timeout,
                              fill_fraction, solve)
    placements = ("host", "resident") if dev == "gpu" else ("host",)
    rows, graphs, local_rows = [], [], {}
    for spec in specs:
        announce("distributed", spec)
        name, graph = named_graph(spec)
        refs = {}
        for where in placements:
            g = graph.to("gpu") if where == "resident" else graph
            for algorithm in algorithms:
                bb = b if algorithm == "bsuitor" else None
                local = time_call(lambda g=g, a=algorithm, bb=bb: solve(g, a, bb, device=dev), repeats=repeats,
                                  timeout=timeout)
                ref = refs.setdefault(algorithm, local["result"])
                row = {"family": "distributed", "graph": name, "algorithm": algorithm,
                       "impl": "local" if where == "host" else "local-resident", "device": dev, "workers": 0,
                       "n": graph.n, "nnz": graph.nnz, "time_s": local["time_s"], "times_s": local["times_s"],
                       "identical": _same(local["result"], ref, algorithm), **_outcome(local["result"])}
                rows.append(row)
                _tell(row)
                local_rows[(name, algorithm, where)] = row
            del g
        graphs.append((name, graph, refs))
    one_worker = {}
    with tempfile.TemporaryDirectory(prefix="mgmatch-bench-read-") as tmp:
        files = _parquet_files(graphs, Path(tmp)) if read else {}
        for k in _worker_counts(dev, workers):
            with cluster(workers=k, device=dev, dashboard=False) as client:
                for name, graph, refs in graphs:
                    cut = cut_fraction(graph, k)
                    for where in placements:
                        announce("distributed", f"{name} on {k} worker(s), partitions in {where} memory")
                        start = time.perf_counter()
                        dg = place(client, graph, partitions=k, resident=where == "resident")
                        placement = time.perf_counter() - start
                        for algorithm in algorithms:
                            bb = b if algorithm == "bsuitor" else None
                            t = time_call(lambda a=algorithm, bb=bb, dg=dg: solve(dg, a, bb, client=client),
                                          repeats=repeats, timeout=timeout)
                            rows.append(_cluster_row(t, name, graph, algorithm, k, where, placement, refs[algorithm]))
                            rows[-1]["cut_fraction"] = cut
                            key = (name, algorithm, where)
                            if k == 1:
                                one_worker[key] = t["time_s"]
                                local_rows[key]["dask_1w_over_local"] = t["time_s"] / local_rows[key]["time_s"]
                            elif key in one_worker:
                                rows[-1].update(ratio_vs=f"dask-1w{'-resident' if where == 'resident' else ''}",
                                                speedup=one_worker[key] / t["time_s"])
                            _tell(rows[-1])
                        del dg
                    if name in files:
                        rows += _read_rows(client, k, name, graph, files[name], repeats, timeout)
    return rows


def _tell(row) -> None:
    """A row's time on standard error as soon as it is measured: a long benchmark cut short
    (a batch job's time limit) still leaves what it measured in the log."""
    import sys  # noqa: PLC0415

    extra = f", {row['speedup']:.2f}x {row['ratio_vs']}" if row.get("speedup") else ""
    took = "failed" if row["time_s"] is None else f"{row['time_s']:.4f} s"
    print(f"mgmatch bench: distributed: {row['graph']} {row['algorithm']} {row['impl']}: {took}{extra}",
          file=sys.stderr, flush=True)


def _outcome(res) -> dict:
    """Rounds and weight of a matching; levels, modularity and each level's seconds moving,
    exchanging and aggregating of a Louvain run."""
    if hasattr(res, "modularity"):
        levels = res.timings.get("levels", [])
        return {"levels": len(res.levels), "modularity": float(res.modularity[-1]),
                "per_level": [{k: lv.get(k) for k in ("level", "n", "nnz", "iterations", "rounds", "move_s",
                                                      "exchange_s", "aggregate_s")} for lv in levels]}
    return {"rounds": res.rounds.rounds, "weight": res.weight}


def _parquet_files(graphs, folder: Path) -> dict:
    """Each graph written as a Parquet edge table, for the read rows."""
    from ..io import write_graph  # noqa: PLC0415

    return {name: write_graph(folder / f"graph{i}.parquet", graph) for i, (name, graph, _) in enumerate(graphs)}


def _read_rows(client, k, name, graph, path, repeats, timeout) -> list[dict]:
    """The graph's Parquet file read into ``k`` partitions by the workers and by the client."""
    from ..distributed import place, read_partitions  # noqa: PLC0415
    from ..io import read_graph  # noqa: PLC0415

    announce("distributed", f"{name}: Parquet read on {k} worker(s) and in the client")
    timed = time_alternating({
        "workers": lambda: read_partitions(client, path, partitions=k),
        "client": lambda: place(client, read_graph(path), partitions=k),
    }, repeats=repeats, block=1, timeout=timeout)
    ours, theirs = timed["workers"].pop("result"), timed["client"].pop("result")
    same = bool(ours.n == theirs.n and ours.m == theirs.m and ours.summary.as_dict() == theirs.summary.as_dict())
    del ours, theirs  # (their partitions leave the workers)
    out = [{"family": "distributed", "graph": name, "algorithm": "read", "impl": impl, "device": "cpu", "workers": k,
            "n": graph.n, "nnz": graph.nnz, "time_s": timed[side]["time_s"], "times_s": timed[side]["times_s"],
            "file_bytes": Path(path).stat().st_size, "identical": same}
           for side, impl in (("workers", f"read-on-{k}w"), ("client", f"client-read-{k}w"))]
    out[0].update(ratio_vs=out[1]["impl"], speedup=out[1]["time_s"] / out[0]["time_s"])
    return out


def _cluster_row(t, name, graph, algorithm, k, where, placement, ref) -> dict:
    res = t["result"]
    if algorithm == "louvain":
        return {"family": "distributed", "graph": name, "algorithm": algorithm,
                "impl": f"dask-{k}w" + ("-resident" if where == "resident" else ""), "device": res.device,
                "workers": k, "n": graph.n, "nnz": graph.nnz, "time_s": t["time_s"], "times_s": t["times_s"],
                "placement_s": placement, "edges_per_s": graph.m / t["time_s"] if t["time_s"] > 0 else None,
                "rounds": res.timings.get("rounds"),
                "modularity_diff_vs_local": float(res.modularity[-1]) - float(ref.modularity[-1]),
                "identical": _same(res, ref, algorithm), **_outcome(res)}
    log = res.rounds
    total = res.timings["total"]
    per_round = sorted(log.exchange_s)
    return {
        "family": "distributed", "graph": name, "algorithm": algorithm,
        "impl": f"dask-{k}w" + ("-resident" if where == "resident" else ""), "device": res.device,
        "workers": k, "n": graph.n, "nnz": graph.nnz, "time_s": t["time_s"], "times_s": t["times_s"],
        "placement_s": placement, "transport": log.transport, "rounds": log.rounds,
        "messages": int(sum(log.messages)), "max_messages_per_round": int(max(log.messages, default=0)),
        "messages_per_round": list(log.messages),
        "compute_s": float(sum(log.compute_s)), "exchange_s": float(sum(log.exchange_s)),
        "idle_s": float(sum(log.idle_s)), "load_s": float(log.load_s), "finish_s": float(log.finish_s),
        "handback_bytes": int(log.handback_bytes),
        "exchange_ms_per_round": 1e3 * per_round[len(per_round) // 2] if per_round else 0.0,
        "exchange_ms_max": 1e3 * per_round[-1] if per_round else 0.0,
        "exchange_share": float(sum(log.exchange_s)) / total if total > 0 else None,
        "weight": res.weight, "identical": _same(res, ref, algorithm),
    }


# --------------------------------------------------------------------------------- capacity
def _single_gpu_estimate(graph, algorithm: str, b) -> int:
    """Device bytes a local run of ``algorithm`` on ``graph`` (in host memory) checks for
    before it starts: the matchings' :func:`~mgmatch.algorithms.matching.gpu_memory_estimate`;
    Louvain's level-0 estimate (:func:`mgmatch.gpu.louvain.estimate_bytes`) plus the graph's
    own arrays, which it copies to the device first."""
    if algorithm == "louvain":
        from ..algorithms.louvain_program import get_louvain_config  # noqa: PLC0415
        from ..gpu.louvain import estimate_bytes  # noqa: PLC0415

        degrees = np.diff(graph.indptr)
        graph_bytes = graph.indptr.nbytes + graph.indices.nbytes + graph.weights.nbytes
        return graph_bytes + estimate_bytes(graph.n, graph.nnz, int(degrees.max(initial=0)),
                                            tune=get_louvain_config())
    from ..algorithms.matching import gpu_memory_estimate  # noqa: PLC0415

    return gpu_memory_estimate(graph, algorithm, b)


def _release_pool() -> None:
    """Give the blocks CuPy's pool caches back to the driver (on a worker: those of its last run,
    which would otherwise be room the filled GPU does not show as free), after collecting the
    last run's unreachable arrays (a run's state may hold reference cycles), whose blocks would
    otherwise return to the pool during the next run."""
    import gc  # noqa: PLC0415

    import cupy as cp  # noqa: PLC0415

    gc.collect()
    cp.cuda.get_current_stream().synchronize()
    cp.get_default_memory_pool().free_all_blocks()


class _FilledGpus:
    """Every visible GPU filled with plain allocations (outside CuPy's pool, so that no free
    block of it counts) until ``free_bytes`` are left; freed on exit. The client's and the
    workers' pools give their cached blocks back first."""

    def __init__(self, free_bytes: int, client):
        self.free_bytes = int(free_bytes)
        self.client = client
        self.held: list[tuple[int, int]] = []

    def __enter__(self):
        import cupy as cp  # noqa: PLC0415

        self.client.run(_release_pool)
        _release_pool()
        try:
            for d in range(cp.cuda.runtime.getDeviceCount()):
                with cp.cuda.Device(d):
                    free, _total = cp.cuda.runtime.memGetInfo()
                    take = int(free) - self.free_bytes
                    if take > 0:
                        try:
                            self.held.append((d, cp.cuda.runtime.malloc(take)))
                        except cp.cuda.runtime.CUDARuntimeError as exc:
                            from ..errors import ResourceError  # noqa: PLC0415

                            raise ResourceError(f"could not fill GPU {d} so that {self.free_bytes} bytes stay "
                                                f"free: {exc}") from None
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def free_now(self) -> list[int]:
        """Each GPU's free bytes now."""
        import cupy as cp  # noqa: PLC0415

        out = []
        for d in range(cp.cuda.runtime.getDeviceCount()):
            with cp.cuda.Device(d):
                out.append(int(cp.cuda.runtime.memGetInfo()[0]))
        return out

    def __exit__(self, *exc):
        import cupy as cp  # noqa: PLC0415

        for d, ptr in self.held:
            with cp.cuda.Device(d):
                cp.cuda.runtime.free(ptr)
        self.held = []
        return False


def _capacity_rows(specs, dev, algorithms, b, counts, repeats, timeout, fill_fraction, solve) -> list[dict]:
    """Rows of the capacity runs (``fill_gpus``; see the module notes)."""
    from ..distributed import cluster, place  # noqa: PLC0415
    from ..errors import ParameterError, ResourceError  # noqa: PLC0415
    from ..generators import kron  # noqa: PLC0415

    if dev != "gpu":
        raise ParameterError("the capacity runs (fill_gpus) fill GPUs: they need device='gpu'")
    if not 0.0 < fill_fraction < 1.0:
        raise ParameterError(f"fill_fraction must lie between 0 and 1, not {fill_fraction}")
    counts = [k for k in counts if k >= 2]
    if not counts:
        raise ParameterError("the capacity runs need clusters of at least 2 workers (--workers 2,...)")
    rows = []
    for spec in specs:
        announce("distributed", f"{spec}: capacity, the GPUs filled")
        name, graph = named_graph(spec)
        cases = []
        for algorithm in algorithms:
            bb = b if algorithm == "bsuitor" else None
            ref = solve(graph, algorithm, bb, device="gpu")  # before the GPUs are filled
            cases.append((algorithm, bb, ref, _single_gpu_estimate(graph, algorithm, bb)))
        warm = kron(10, seed=1)  # for the first job of each cluster (below)
        for k in counts:
            with cluster(workers=k, device="gpu", dashboard=False) as client:
                dg = place(client, graph, partitions=k)
                for algorithm, bb, ref, need in cases:
                    # a first job on a small graph before the GPUs fill: the workers' sessions, NCCL
                    # communicators and their connections, and the kernels, are set up once per
                    # cluster, not per run
                    solve(warm, algorithm, bb, client=client, device="gpu")
                    with _FilledGpus(int(fill_fraction * need), client) as filled:
                        free = filled.free_now()
                        try:
                            solve(graph, algorithm, bb, device="gpu")
                            refused, message = False, ""
                        except ResourceError as exc:
                            refused, message = True, str(exc)
                        finally:  # what the local run left in the client's pool is not the cluster's room
                            _release_pool()
                        try:
                            t = time_call(lambda a=algorithm, bb=bb, dg=dg: solve(dg, a, bb, client=client),
                                          repeats=repeats, timeout=timeout)
                            failed = ""
                        except Exception as exc:  # noqa: BLE001 - the row says why; the other algorithms still run
                            t, failed = None, f"{type(exc).__name__}: {exc}"
                    fields = dict(impl=f"filled-{k}w", single_gpu_estimate_bytes=int(need), free_bytes_per_gpu=free,
                                  local_refused=refused, local_error=message, cluster_error=failed)
                    if t is None:
                        row = {"family": "distributed", "graph": name, "algorithm": algorithm, "device": "gpu",
                               "workers": k, "n": graph.n, "nnz": graph.nnz, "time_s": None, "identical": False}
                    else:
                        row = _cluster_row(t, name, graph, algorithm, k, "host", None, ref)
                    row.update(fields)
                    rows.append(row)
                    _tell(row)
                del dg
    return rows
