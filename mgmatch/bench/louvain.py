"""Benchmark of :func:`mgmatch.algorithms.louvain.louvain` against NetworKit's PLM.

One row per (graph, implementation) as described in :mod:`mgmatch.bench._common`, plus
``levels``, ``modularity``, ``edges_per_s`` (undirected edges per second) and, on the GPU,
``peak_bytes_per_nnz`` (device memory of a run per stored edge, the resident graph included;
``extra_bytes_per_nnz`` what the run allocates on top of it), and ``warmup_runs``. PLM runs
without refinement, ``gamma = 1``, on a thread for each CPU the process may use
(:func:`~mgmatch.bench._common.run_threads`: every host thread, unless the process is
confined to some, or the pass's count with ``--threads``).

With ``partitions`` (counts above 1, in-process or on ``client``'s cluster), each graph also
gets one row per count: ``partitions``, its time and ``edges_per_s``, ``speedup_vs_one`` (the
one-partition time over its own), ``modularity_diff_vs_one``, ``same_labels_as_one`` (the
partitions take the one-partition decisions, so the labels are equal) and ``per_level`` (each
level's sweeps, messages exchanged and seconds moving, exchanging and aggregating).

Both sides are timed alike: untimed runs for at least :data:`WARMUP_S` seconds (at least one),
then timed runs in alternating blocks of :data:`BLOCK` (each opened by untimed runs for at least
:data:`BLOCK_WARMUP_S` seconds, at least one; see
:func:`~mgmatch.bench._common.time_alternating`), and the median of each side's timed runs.
"""

from __future__ import annotations

import numpy as np

from .._array import resolve_device
from ._common import (
    announce, device_bytes, gpu_peak_bytes, named_graph, networkit_graph, run_threads, time_alternating,
)

__all__ = ["run", "DEFAULT_GRAPHS", "QUICK_GRAPHS"]

DEFAULT_GRAPHS = {
    "gpu": ("delaunay:k=22,seed=1", "rgg:k=22,seed=1", "kron:k=21,seed=1"),
    "cpu": ("delaunay:k=18,seed=1",),
}
QUICK_GRAPHS = ("delaunay:k=14,seed=1", "rgg:k=14,seed=1", "kron:k=14,seed=1")
#: Seconds of untimed runs before the timed ones, on each side (at least one run). One run is
#: too few for a graph of a few milliseconds: the timed runs after it still get faster
#: (docs/performance.md, section "Benchmark warm-up rules").
WARMUP_S = 0.5
#: Timed runs of one side in a row before the other side's (see the module notes).
BLOCK = 5
#: Seconds of untimed runs that open each block (at least one run). After the other side's block
#: (tens of milliseconds on every host thread, the GPU idle), one untimed run does not bring a
#: side back to speed, and this many seconds of them do (docs/performance.md, section
#: "Benchmark warm-up rules"). PLM's blocks open the same way (with two runs or so of its own).
BLOCK_WARMUP_S = 0.02


def _plm(graph):
    """``(run once, its report row from a timing)`` of NetworKit's PLM on ``graph``, or ``None``
    without NetworKit. (PLM's first run pays for its thread pool and first allocations: the
    warm-up is the same as mgmatch's.)"""
    try:
        import networkit as nk  # noqa: PLC0415
    except ImportError:
        return None
    nk.setNumberOfThreads(run_threads())
    g = graph.to("cpu")
    G = networkit_graph(g)

    def once():
        plm = nk.community.PLM(G, refine=False, gamma=1.0)
        plm.run()
        return plm.getPartition()

    def row(name: str, t: dict) -> dict:
        q = nk.community.Modularity().getQuality(t["result"], G)
        return {
            "family": "louvain", "graph": name, "impl": "networkit-plm", "device": "cpu",
            "threads": nk.getMaxNumberOfThreads(), "n": g.n, "nnz": g.nnz,
            "time_s": t["time_s"], "times_s": t["times_s"], "warmup_runs": t["warmup_runs"],
            "edges_per_s": g.m / t["time_s"] if t["time_s"] > 0 else None,
            "modularity": float(q), "n_communities": int(t["result"].numberOfSubsets()),
        }

    return once, row


def run(graphs=None, device: str = "auto", repeats: int = 3, timeout: float = 120.0, quick: bool = False,
        partitions=(), client=None) -> list[dict]:
    """Time Louvain (and PLM on the same host) on each graph; return the report rows.

    Parameters
    ----------
    graphs : iterable of str or of (name, Graph), optional
        Graph specs (``"kron:k=21,seed=1"``, see :func:`mgmatch.generators.parse_graph_spec`)
        or ready graphs. Defaults on the GPU to delaunay and
        rgg at k = 22 and kron (edge factor 48) at k = 21, on the CPU to delaunay at k = 18;
        ``quick`` takes k = 14.
    device : {"auto", "cpu", "gpu"}
        Where mgmatch runs.
    repeats : int
        Timed runs per implementation, after untimed ones (see :data:`WARMUP_S`).
    timeout : float
        Seconds after which an implementation stops repeating on a graph.
    partitions : sequence of int
        Partition counts above 1 to time as well (see the module notes).
    client : distributed.Client, optional
        Run the partitioned runs on this cluster.
    """
    from ..algorithms.louvain import louvain  # noqa: PLC0415

    dev = resolve_device(device)
    if graphs is None:
        graphs = QUICK_GRAPHS if quick else DEFAULT_GRAPHS[dev]
    rows: list[dict] = []
    for spec in graphs:
        announce("louvain", spec)
        name, graph = named_graph(spec)
        g = graph.to(dev)
        plm = _plm(g)
        fns = {"mgmatch": lambda g=g: louvain(g, device=dev)}
        if plm is not None:
            fns["plm"] = plm[0]
        times = time_alternating(fns, repeats=repeats, block=BLOCK, warmup_s=WARMUP_S,
                                 block_warmup_s=BLOCK_WARMUP_S, timeout=timeout)
        t = times["mgmatch"]
        res = t["result"]
        row = {
            "family": "louvain", "graph": name, "impl": "mgmatch", "device": dev,
            "n": g.n, "nnz": g.nnz, "time_s": t["time_s"], "times_s": t["times_s"],
            "warmup_runs": t["warmup_runs"], "edges_per_s": g.m / t["time_s"] if t["time_s"] > 0 else None,
            "levels": len(res.levels), "modularity": float(res.modularity[-1]),
            "n_communities": res.n_communities,
            "wall_s": t["wall_s"],
        }
        if dev == "gpu":
            mem = gpu_peak_bytes(lambda g=g: louvain(g, device=dev), device_bytes(g.indptr, g.indices, g.weights))
            row["peak_bytes_per_nnz"] = mem["peak_bytes"] / max(g.nnz, 1)
            row["extra_bytes_per_nnz"] = mem["extra_bytes"] / max(g.nnz, 1)
        if plm is not None:
            peer = plm[1](name, times["plm"])
            row["ratio_vs"] = peer["impl"]
            row["speedup"] = peer["time_s"] / row["time_s"] if row["time_s"] > 0 else None
            row["modularity_diff"] = row["modularity"] - peer["modularity"]
            rows.extend([row, peer])
        else:
            rows.append(row)
        for k in partitions:
            if int(k) > 1:
                rows.append(_partitioned_row(louvain, name, g, dev, int(k), client, row, res.communities, repeats,
                                             timeout))
    return rows


def _partitioned_row(louvain, name, g, dev, parts, client, one, one_labels, repeats, timeout) -> dict:
    """One graph's row for ``parts`` partitions, beside the one-partition row ``one`` (whose
    result's labels are ``one_labels``)."""
    fn = {"mgmatch": lambda: louvain(g, device=dev, partitions=parts, client=client)}
    t = time_alternating(fn, repeats=repeats, block=BLOCK, warmup_s=WARMUP_S, block_warmup_s=BLOCK_WARMUP_S,
                         timeout=timeout)["mgmatch"]
    res = t["result"]
    summary = res.summary()
    return {
        "family": "louvain", "graph": name, "impl": "mgmatch", "device": dev, "partitions": parts,
        "on_cluster": client is not None, "n": g.n, "nnz": g.nnz, "time_s": t["time_s"], "times_s": t["times_s"],
        "warmup_runs": t["warmup_runs"], "edges_per_s": g.m / t["time_s"] if t["time_s"] > 0 else None,
        "levels": len(res.levels), "modularity": float(res.modularity[-1]), "n_communities": res.n_communities,
        "speedup_vs_one": one["time_s"] / t["time_s"] if t["time_s"] > 0 else None,
        "modularity_diff_vs_one": float(res.modularity[-1]) - one["modularity"],
        "same_labels_as_one": bool(np.array_equal(res.communities, one_labels)),
        "rounds": res.timings.get("rounds"),
        "per_level": [{k: lv.get(k) for k in ("level", "sweeps", "messages", "time_s", "modularity")}
                      for lv in summary["levels"]],
    }
