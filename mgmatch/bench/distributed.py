"""Benchmark of the Dask coordinator: in-process local mode against 1, 2, ... workers.

For each graph the matching runs in-process (``impl`` ``local``, one partition on one device)
and on embedded local clusters of each worker count (``impl`` ``dask-<k>w``, one partition per
worker: one GPU per worker, or one CPU process per worker). The graph is placed on the workers
once (:func:`mgmatch.distributed.place`, ``placement_s``); each timed run then starts from the
partitions in the workers' host memory, as a local run starts from the graph in host memory,
and ends with the result in the client. Extra row fields:

``identical``
    the matching equals the local run's, vertex for vertex (b-Suitor: pair for pair);
``rounds``, ``messages``
    coordinator rounds and messages exchanged (median run);
``load_s``, ``finish_s``
    the time the workers took to load their partitions onto their devices before round 1,
    and from the last round to the results in the client;
``compute_s``, ``exchange_s``, ``idle_s``, ``exchange_share``
    the coordinator's time per phase (``*_per_round_s``: per round) and the share of the run's
    wall time spent in exchange;
``speedup``
    the one-worker run's time / this run's time (``ratio_vs`` names it);
``dask_1w_over_local`` (local rows)
    the one-worker run's time / the local run's time: the coordinator's overhead.
"""

from __future__ import annotations

import time

import numpy as np

from ._common import announce, named_graph, time_call

__all__ = ["run", "DEFAULT_GRAPHS"]

DEFAULT_GRAPHS = {
    "gpu": ["kron:k=22,seed=1", "delaunay:k=22,seed=1", "kron:k=23,seed=1"],
    "cpu": ["kron:k=18,seed=1", "delaunay:k=18,seed=1"],
}
QUICK_GRAPHS = ["kron:k=12,seed=1", "delaunay:k=12,seed=1"]


def _same(a, b, algorithm) -> bool:
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


def run(graphs=None, device="auto", repeats=3, quick=False, workers=None, algorithm="suitor", b=3,
        timeout=None) -> list[dict]:
    """Time ``algorithm`` in-process and on local clusters of each worker count; return rows.

    Parameters
    ----------
    graphs : list of str, optional
        Graph specs; default kron k=22 and k=23 and delaunay k=22 on GPUs, k=18 on CPUs.
    device : {"auto", "cpu", "gpu"}
    repeats : int
        Timed runs per configuration (after one warm-up run).
    workers : list of int, optional
        Worker counts (default: 1 to the number of GPUs; 1 and 2 CPU processes).
    algorithm : str
        ``suitor``, ``bsuitor``, ``ld`` or ``handshake``; ``b`` for b-Suitor.
    """
    from .._array import resolve_device  # noqa: PLC0415
    from ..algorithms.matching import match  # noqa: PLC0415
    from ..distributed import cluster, place  # noqa: PLC0415

    dev = resolve_device(device)
    specs = graphs or (QUICK_GRAPHS if quick else DEFAULT_GRAPHS[dev])
    bb = b if algorithm == "bsuitor" else None
    graphs = []
    rows = []
    for spec in specs:
        announce("distributed", spec)
        name, graph = named_graph(spec)
        local = time_call(lambda g=graph: match(g, algorithm, b=bb, device=dev), repeats=repeats, timeout=timeout)
        ref = local["result"]
        rows.append({"family": "distributed", "graph": name, "impl": "local", "device": dev, "workers": 0,
                     "n": graph.n, "nnz": graph.nnz, "time_s": local["time_s"], "times_s": local["times_s"],
                     "rounds": ref.rounds.rounds, "weight": ref.weight, "identical": True})
        graphs.append((name, graph, ref, rows[-1]))
    one_worker = {}
    for k in _worker_counts(dev, workers):
        with cluster(workers=k, device=dev, dashboard=False) as client:
            for name, graph, ref, local_row in graphs:
                announce("distributed", f"{name} on {k} worker(s)")
                start = time.perf_counter()
                dg = place(client, graph, partitions=k)
                placement = time.perf_counter() - start
                t = time_call(lambda: match(dg, algorithm, b=bb, client=client), repeats=repeats, timeout=timeout)
                res = t["result"]
                log = res.rounds
                total = res.timings["total"]
                row = {
                    "family": "distributed", "graph": name, "impl": f"dask-{k}w", "device": res.device,
                    "workers": k, "n": graph.n, "nnz": graph.nnz, "time_s": t["time_s"], "times_s": t["times_s"],
                    "placement_s": placement, "rounds": log.rounds, "messages": int(sum(log.messages)),
                    "messages_per_round": list(log.messages),
                    "compute_s": float(sum(log.compute_s)), "exchange_s": float(sum(log.exchange_s)),
                    "idle_s": float(sum(log.idle_s)), "load_s": float(log.load_s),
                    "finish_s": float(log.finish_s),
                    "compute_per_round_s": [round(x, 5) for x in log.compute_s],
                    "exchange_per_round_s": [round(x, 5) for x in log.exchange_s],
                    "exchange_share": float(sum(log.exchange_s)) / total if total > 0 else None,
                    "weight": res.weight, "identical": _same(res, ref, algorithm),
                }
                if k == 1:
                    one_worker[name] = t["time_s"]
                    local_row["dask_1w_over_local"] = t["time_s"] / local_row["time_s"]
                if name in one_worker and k > 1:
                    row.update(ratio_vs="dask-1w", speedup=one_worker[name] / t["time_s"])
                rows.append(row)
                del dg
    return rows
