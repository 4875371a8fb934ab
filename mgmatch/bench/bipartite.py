"""Benchmark of maximum cardinality bipartite matching (G-PR, APFB, APsB) against SciPy and igraph.

Each graph is read as its bipartite double cover (its symmetric matrix as rows x columns), as the
papers do with the SuiteSparse graphs. Every implementation starts from the common cheap
(greedy) matching and is timed after it (``timings["match"]``), as the papers report; SciPy's
``maximum_bipartite_matching`` (Hopcroft-Karp from an empty matching) runs once on the same host
in a separate process with a time limit (the child's own start-up is not timed). When it runs past the limit its time is recorded as the
limit and the row's ``speedup`` is a lower bound (``speedup_is_lower_bound``). igraph's
``maximum_bipartite_matching`` (push-relabel, one thread), where python-igraph is installed, runs
the same way and adds an ``igraph`` row; ours give ``igraph_time_s`` and ``speedup_vs_igraph``.

Rows follow :mod:`mgmatch.bench._common` and add ``init_size`` (cheap matching), ``max_size``
(the maximum matching) and ``scipy_time_s``; CPU rows add ``threads``, the Numba threads of the
run. ``threads=(1, 2, 4, 8, 16)`` times every implementation at each count: the scaling curve
of the CPU twins against the one SciPy run.
"""

from __future__ import annotations

import itertools
import json
import numbers
import statistics

from .._array import resolve_device
from ._common import announce, named_graph, time_call

__all__ = ["run", "DEFAULT_GRAPHS", "QUICK_GRAPHS", "IMPLEMENTATIONS"]

DEFAULT_GRAPHS = {
    "gpu": (
        "delaunay:k=20",
        "delaunay:k=22",
        "kron:k=20,edge_factor=48",
        "kron:k=21,edge_factor=48",
        "rgg:k=22",
        "grid2d:nx=2048,ny=2048,delete_fraction=0.1",
    ),
    "cpu": ("delaunay:k=18", "kron:k=18,edge_factor=48"),
}
QUICK_GRAPHS = (
    "delaunay:k=14",
    "kron:k=14,edge_factor=48",
    "rgg:k=14",
    "grid2d:nx=128,ny=128,delete_fraction=0.1",
)
IMPLEMENTATIONS = (  # (row name, algorithm, parameters); the CT rows launch per BFS level, as the papers
    ("gpr", "gpr", {"variant": "shrink", "relabel": "adaptive", "relabel_k": 0.7}),
    ("apfb", "apfb", {"bfs": "gpubfs-wr", "launch": "persistent"}),
    ("apsb", "apsb", {"bfs": "gpubfs-wr", "launch": "persistent"}),
    ("apfb-ct", "apfb", {"bfs": "gpubfs-wr", "launch": "ct"}),
    ("apfb-det", "apfb", {"deterministic": True}),  # the same pairs on every run (level by level)
)


_SCIPY_CHILD = """
import json, sys, time
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_bipartite_matching
z = np.load(sys.argv[1])
a = sp.csr_array((np.ones(z["indices"].size), z["indices"], z["indptr"]), shape=tuple(z["shape"]))
t0 = time.perf_counter()
match = maximum_bipartite_matching(a, perm_type="column")
print(json.dumps([time.perf_counter() - t0, int((match >= 0).sum())]))
"""


_IGRAPH_CHILD = """
import json, sys, time
import numpy as np
import igraph as ig
z = np.load(sys.argv[1])
indptr, indices = z["indptr"], z["indices"]
n_rows, n_cols = (int(x) for x in z["shape"])
rows = np.repeat(np.arange(n_rows), np.diff(indptr))
g = ig.Graph(n=n_rows + n_cols, edges=np.stack([rows, indices.astype(np.int64) + n_rows], axis=1))
types = [False] * n_rows + [True] * n_cols
t0 = time.perf_counter()
match = g.maximum_bipartite_matching(types)
print(json.dumps([time.perf_counter() - t0, len(match)]))
"""


def _peer_time(matrix, timeout: float, child: str, setup_s_per_entry: float) -> tuple[float, int | None, bool]:
    """A peer's matching time in a child process: ``(seconds, cardinality, timed_out)``.

    The child (the script ``child``) is a fresh interpreter reading the pattern from a temporary
    file and printing its own timing of the matching alone, so it can be killed at the time limit
    wherever this runs; its start-up and set-up (``setup_s_per_entry`` a stored entry, beyond
    5 s) are allowed on top of the limit, untimed.
    """
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/pattern.npz"
        np.savez(path, indptr=matrix.indptr, indices=matrix.indices, shape=np.array(matrix.shape))
        grace = 5.0 + matrix.nnz * setup_s_per_entry
        try:
            out = subprocess.run([sys.executable, "-c", child, path], capture_output=True, text=True,
                                 timeout=timeout + grace, check=True)
        except subprocess.TimeoutExpired:
            return float(timeout), None, True  # a lower bound of the peer's time
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"the peer's matching failed: {exc.stderr.strip()[-500:]}") from exc
    seconds, size = json.loads(out.stdout.strip().splitlines()[-1])
    if seconds > timeout:
        return float(timeout), None, True
    return float(seconds), int(size), False


def scipy_time(matrix, timeout: float) -> tuple[float, int | None, bool]:
    """SciPy's Hopcroft-Karp time, ``(seconds, cardinality, timed_out)`` (:func:`_peer_time`;
    loading the pattern is its set-up)."""
    return _peer_time(matrix, timeout, _SCIPY_CHILD, setup_s_per_entry=5e-8)


def igraph_time(matrix, timeout: float):
    """igraph's push-relabel time as :func:`scipy_time` gives SciPy's (building igraph's graph,
    edge list to C structures, is its set-up); ``None`` without python-igraph."""
    import importlib.util  # noqa: PLC0415

    if importlib.util.find_spec("igraph") is None:
        return None
    return _peer_time(matrix, timeout, _IGRAPH_CHILD, setup_s_per_entry=2e-7)


def run(graphs=None, device: str = "auto", repeats: int = 5, timeout: float = 60.0, quick: bool = False,
        threads=None) -> list[dict]:
    """Time G-PR, APFB and APsB on each graph and compare with SciPy.

    Parameters
    ----------
    graphs : sequence, optional
        Graph specs for :func:`mgmatch.generators.parse_graph_spec` or ``(name, Graph)`` pairs.
        Defaults to :data:`DEFAULT_GRAPHS` of the device (:data:`QUICK_GRAPHS` with ``quick=True``).
    device : {"auto", "cpu", "gpu"}
        Where the matchings run.
    repeats : int
        Timed repeats per implementation (after one warm-up run).
    timeout : float
        Seconds allowed to each implementation's repeats, and to SciPy's single run.
    quick : bool
        Small graphs (k=14) for a smoke test.
    threads : int or sequence of int, optional
        CPU runs: the Numba thread counts to time each implementation at (one row per count);
        ``None``: all of Numba's threads. No effect on the GPU.

    Returns
    -------
    list of dict
        One row per (graph, implementation, thread count), and SciPy's per graph.

    Examples
    --------
    >>> from mgmatch.graph import Graph
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0])
    >>> rows = run([("triangle", g)], device="cpu", repeats=1, timeout=30)
    >>> [(r["impl"], r["max_size"]) for r in rows if r["impl"] != "igraph"]
    [('gpr', 3), ('apfb', 3), ('apsb', 3), ('apfb-det', 3), ('scipy', 3)]
    """
    from ..algorithms.bipartite import bipartite_matching, check_parameters  # noqa: PLC0415

    dev = resolve_device(device)
    counts = [None] if threads is None or dev != "cpu" else (
        [threads] if isinstance(threads, numbers.Integral) else list(threads))
    for t in counts:
        check_parameters(threads=t)
    specs = graphs if graphs is not None else (QUICK_GRAPHS if quick else DEFAULT_GRAPHS[dev])
    rows = []
    for spec in specs:
        announce("bipartite", spec)
        name, graph = named_graph(spec)
        graph = graph.bipartite_double_cover() if not graph.bipartite else graph
        if dev == "gpu":
            graph = graph.to("gpu")
        matrix = graph.to_scipy()
        s_time, s_size, s_timed_out = scipy_time(matrix, timeout)
        peer_ig = igraph_time(matrix, timeout)
        ours = []
        for (impl, algorithm, opts), n_threads in itertools.product(IMPLEMENTATIONS, counts):
            if dev == "cpu" and opts.get("launch", "persistent") != "persistent":
                continue  # launch modes only change GPU launches
            match_times = []

            def once(algorithm=algorithm, opts=opts, match_times=match_times, n_threads=n_threads):
                result = bipartite_matching(graph, algorithm, "cheap", device=dev, threads=n_threads, **opts)
                match_times.append(result.timings["match"])
                return result

            timed = time_call(once, repeats=repeats, warmup=1, timeout=timeout)
            result = timed["result"]
            times = match_times[1:] or match_times  # drop the warm-up
            t = statistics.median(times)
            row = {
                "family": "bipartite",
                "graph": name,
                "impl": impl,
                "device": dev,
                "n": graph.n_rows,
                "nnz": graph.nnz,
                "time_s": t,
                "times_s": times,
                "total_time_s": timed["time_s"],
                "init_size": result.init_cardinality,
                "max_size": result.cardinality,
                "params": dict(result.params),
                "iterations": result.iterations,
                "global_relabels": result.global_relabels,
                "bfs_levels": result.bfs_levels,
                "scipy_time_s": s_time,
                "ratio_vs": "scipy",
                "speedup": (s_time / t) if t > 0 else None,
                "speedup_end_to_end": (s_time / timed["time_s"]) if timed["time_s"] > 0 else None,
                "speedup_is_lower_bound": s_timed_out,
            }
            if dev == "cpu":
                row["threads"] = result.params["threads"]
            if peer_ig is not None:
                row.update(igraph_time_s=peer_ig[0], speedup_vs_igraph=(peer_ig[0] / t) if t > 0 else None,
                           speedup_vs_igraph_is_lower_bound=peer_ig[2])
                if peer_ig[1] is not None and peer_ig[1] != result.cardinality:
                    row["error"] = f"cardinality {result.cardinality} differs from igraph's {peer_ig[1]}"
            if s_size is not None and s_size != result.cardinality:
                row["error"] = f"cardinality {result.cardinality} differs from SciPy's {s_size}"
            ours.append(row)
        rows.extend(ours)
        rows.append({
            "family": "bipartite",
            "graph": name,
            "impl": "scipy",
            "device": "cpu",
            "n": graph.n_rows,
            "nnz": graph.nnz,
            "time_s": s_time,
            "times_s": [s_time],
            "init_size": 0,
            "max_size": s_size,
            "timed_out": s_timed_out,
        })
        if peer_ig is not None:
            rows.append({"family": "bipartite", "graph": name, "impl": "igraph", "device": "cpu", "n": graph.n_rows,
                         "nnz": graph.nnz, "time_s": peer_ig[0], "times_s": [peer_ig[0]], "init_size": 0,
                         "max_size": peer_ig[1], "timed_out": peer_ig[2]})
    return rows
