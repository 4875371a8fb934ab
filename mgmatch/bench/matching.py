"""Benchmark of the weighted-matching family against NetworKit on the same graphs.

Rows per graph: our Suitor, b-Suitor (b=3), LD and handshaking, and NetworKit's
``SuitorMatcher`` (the generic Suitor; ``sortSuitor=False`` because SortSuitor needs rows sorted
by weight) and ``BSuitorMatcher`` run with a thread for each CPU the process may use
(:func:`~mgmatch.bench._common.run_threads`: the pass's count with ``--threads``). ``time_s`` is
end to end (host graph in, host result out), ``kernel_time_s`` the run on a graph already
resident and partitioned on the device (GPU: kernels and their few scalar reads; CPU: the
partitions a run makes for the threads in force, one per thread on a large graph);
``speedup`` is peer time / our end-to-end time and ``speedup_kernel`` peer time / our kernel
time; ``weight_rel_diff`` compares the matched weights (equal on tie-free weights, since both
compute the greedy matching). On the GPU, ``peak_gpu_bytes_per_nnz`` is the device memory of a
run per stored edge (CSR entry), the resident graph included, and ``extra_gpu_bytes_per_nnz``
what the run allocates on top of the graph.
"""

from __future__ import annotations

from ._common import announce, device_bytes, gpu_peak_bytes, named_graph, networkit_graph, run_threads, time_call

__all__ = ["run", "DEFAULT_GRAPHS"]

DEFAULT_GRAPHS = {
    "cpu": ["kron:k=18,seed=1", "delaunay:k=18,seed=1"],
    "gpu": ["kron:k=21,seed=1", "delaunay:k=22,seed=1", "rgg:k=22,seed=1", "kron:k=20,seed=1,weights=unit"],
}
QUICK_GRAPHS = ["kron:k=12,seed=1", "delaunay:k=12,seed=1"]


def _peers(graph, repeats):
    """NetworKit rows (or nothing when it is not installed)."""
    try:
        import networkit as nk  # noqa: PLC0415
    except ImportError:
        return {}
    nk.setNumberOfThreads(run_threads())
    g = networkit_graph(graph, weighted=True)  # unit weights on an unweighted graph

    def suitor():
        m = nk.matching.SuitorMatcher(g, False, False)
        m.run()
        return m.getMatching().weight(g)

    def bsuitor():
        m = nk.matching.BSuitorMatcher(g, 3)
        m.run()
        return m.getBMatching().weight()

    return {
        "suitor": ("networkit SuitorMatcher", time_call(suitor, repeats=repeats)),
        "bsuitor": ("networkit BSuitorMatcher", time_call(bsuitor, repeats=repeats)),
    }


def run(graphs=None, device="auto", repeats=5, quick=False, timeout=None) -> list[dict]:
    """Time each algorithm on each graph; return benchmark rows (see :mod:`mgmatch.bench`)."""
    from .._array import resolve_device  # noqa: PLC0415
    from ..algorithms.matching import match  # noqa: PLC0415

    dev = resolve_device(device)
    specs = graphs or (QUICK_GRAPHS if quick else DEFAULT_GRAPHS[dev])
    rows = []
    for spec in specs:
        announce("matching", spec)
        spec, graph = named_graph(spec)
        peers = _peers(graph, repeats)
        resident = graph.to(dev)
        for algorithm, b in (("suitor", None), ("bsuitor", 3), ("ld", None), ("handshake", None)):
            parts = _resident_partitions(resident, algorithm, b)  # once: kernel time excludes splitting
            run_e2e = time_call(lambda: match(graph, algorithm, b=b, device=dev), repeats=repeats, timeout=timeout)
            run_dev = time_call(lambda: _run_partitions(parts, algorithm, b), repeats=repeats, timeout=timeout)
            result = run_e2e["result"]
            row = {
                "family": "matching", "graph": spec, "impl": f"mgmatch {algorithm}" + (" b=3" if b else ""),
                "device": dev, "n": graph.n, "nnz": graph.nnz,
                "time_s": run_e2e["time_s"], "times_s": run_e2e["times_s"],
                "kernel_time_s": run_dev["time_s"],
                "kernel_times_s": run_dev["times_s"],
                "nnz_per_s": graph.nnz / run_dev["time_s"],
                "weight": result.weight, "cardinality": result.cardinality, "rounds": result.rounds.rounds,
            }
            if dev == "gpu":
                mem = gpu_peak_bytes(lambda: _run_partitions(parts, algorithm, b), _resident_bytes(parts))
                row["peak_gpu_bytes_per_nnz"] = mem["peak_bytes"] / max(graph.nnz, 1)
                row["extra_gpu_bytes_per_nnz"] = mem["extra_bytes"] / max(graph.nnz, 1)
            if algorithm in peers:
                name, peer = peers[algorithm]
                row.update(ratio_vs=name, peer_time_s=peer["time_s"], speedup=peer["time_s"] / run_e2e["time_s"],
                           speedup_kernel=peer["time_s"] / run_dev["time_s"],
                           weight_rel_diff=abs(result.weight - peer["result"]) / max(abs(peer["result"]), 1e-300))
            rows.append(row)
        for algorithm, (name, peer) in peers.items():
            rows.append({"family": "matching", "graph": spec, "impl": name, "device": "cpu", "n": graph.n,
                         "nnz": graph.nnz, "time_s": peer["time_s"], "times_s": peer["times_s"],
                         "weight": peer["result"]})
    return rows


def _program(algorithm, b):
    from ..algorithms.matching import ALGORITHMS, _BSuitor  # noqa: PLC0415

    return _BSuitor(b) if algorithm == "bsuitor" else ALGORITHMS[algorithm]()


def _resident_partitions(resident, algorithm, b):
    """The partitions an end-to-end run of ``algorithm`` makes of ``resident`` (one on the GPU;
    on the CPU one per thread in force, see :func:`~mgmatch.engine.execute.default_partitions`)."""
    from ..engine import get_config  # noqa: PLC0415
    from ..engine.execute import default_partitions  # noqa: PLC0415

    dev = "cpu" if resident.xp.__name__ == "numpy" else "gpu"
    return resident.partition(default_partitions(_program(algorithm, b), resident, dev, get_config()))


def _run_partitions(parts, algorithm, b):
    """One run of ``algorithm`` on partitions already resident on the device (kernel time)."""
    from ..engine import run_local  # noqa: PLC0415

    outs, log = run_local(_program(algorithm, b), parts)
    return outs


def _resident_bytes(parts) -> int:
    """Device bytes of the resident partitions (CSR arrays and ghost lists)."""
    return sum(device_bytes(p.indptr, p.indices, p.weights, p.ghosts) for p in parts)
