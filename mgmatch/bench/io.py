"""Benchmark of the graph readers against the library route for each format, on the same files.

For each format a random undirected graph of ``edges`` edges (ids ``0..edges/10``, real weights)
is written once to a temporary folder: Matrix Market (``coordinate real symmetric``, one
triangle stored, as SuiteSparse stores undirected graphs), a CSV edge list and a Parquet table.
Each reader then reads the file into the graph's symmetric CSR:

* ``mgmatch read_graph``: :func:`mgmatch.io.read_graph`, with every check it makes;
* the library route: SciPy's ``mmread`` (and ``fast_matrix_market.mmread`` where that package
  is installed) or ``pyarrow.csv.read_csv`` or ``pyarrow.parquet.read_table``, then the CSR
  build by SciPy (``coo -> csr``, which sums duplicates; an edge list adds the mirrored
  entries first, as a symmetric Matrix Market file stores them). No validation: this is the
  floor a reader that checks its input can approach.

Every read runs in a fresh interpreter, after the modules it uses are imported and it has read
a small file of the same format once (compiled code and thread pools are warm, as in a
long-lived process), so that ``peak_bytes`` (the rise of the process's peak resident set during
the read: Linux's ``VmHWM``, reset before the read; elsewhere the maximum resident set size)
measures that read alone. ``time_s`` is the median wall time of ``repeats``
such reads; ``speedup`` is the best library route's time over ours (below 1: we are slower) and
``memory_ratio`` our peak over its peak.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ._common import announce

__all__ = ["run", "DEFAULT_EDGES", "QUICK_EDGES", "FORMATS"]

DEFAULT_EDGES = 10_000_000
QUICK_EDGES = 20_000
FORMATS = ("mtx", "csv", "parquet")
_OURS = "mgmatch read_graph"

# One read in a fresh interpreter: imports, one warm-up read of a small file, then the timed read.
_CHILD = r"""
import json, resource, sys, time
route, path, small = sys.argv[1], sys.argv[2], sys.argv[3]
import numpy as np
import scipy.sparse as sp

def symmetric(u, v, w, n):
    return sp.csr_array((np.concatenate([w, w]), (np.concatenate([u, v]), np.concatenate([v, u]))), shape=(n, n))

if route == "mgmatch":
    from mgmatch.io import read_graph
    def read(p):
        g = read_graph(p)
        return g.nnz
elif route == "scipy":
    import scipy.io
    def read(p):
        return sp.csr_array(scipy.io.mmread(p, spmatrix=False)).nnz
elif route == "fast_matrix_market":
    import fast_matrix_market as fmm
    def read(p):
        return sp.csr_array(fmm.mmread(p)).nnz
elif route == "pyarrow.csv":
    import pyarrow.csv as pacsv
    def read(p):
        t = pacsv.read_csv(p)
        u, v, w = (t.column(k).to_numpy() for k in ("src", "dst", "weight"))
        return symmetric(u, v, w, int(max(u.max(), v.max())) + 1).nnz
elif route == "pyarrow.parquet":
    import pyarrow.parquet as pq
    def read(p):
        t = pq.read_table(p)
        u, v, w = (t.column(k).to_numpy() for k in ("src", "dst", "weight"))
        return symmetric(u, v, w, int(max(u.max(), v.max())) + 1).nnz
def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))

read(small)
try:  # the peak of this process alone: ru_maxrss keeps the peak of the process it was forked from
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM back to VmRSS
    before = status("VmRSS")
    peak = lambda: status("VmHWM") - before
except OSError:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
t0 = time.perf_counter()
nnz = read(path)
seconds = time.perf_counter() - t0
print(json.dumps({"time_s": seconds, "peak_bytes": peak(), "nnz": int(nnz)}))
"""


def _library_routes(fmt: str) -> list[tuple[str, str]]:
    """``(row name, child route)`` of the library routes for ``fmt`` that can run here."""
    if fmt == "csv":
        return [("pyarrow.csv + scipy csr", "pyarrow.csv")]
    if fmt == "parquet":
        return [("pyarrow.parquet + scipy csr", "pyarrow.parquet")]
    routes = [("scipy mmread + csr", "scipy")]
    try:
        import fast_matrix_market  # noqa: F401, PLC0415
    except ImportError:
        pass
    else:
        routes.append(("fast_matrix_market + scipy csr", "fast_matrix_market"))
    return routes


def _vertices(edges: int) -> int:
    """Vertices of the benchmark graph of ``edges`` edges: a tenth as many, and room for that
    many distinct pairs."""
    return max(edges // 10, int(np.sqrt(4 * edges)) + 2)


def _random_edges(edges: int, seed: int = 1):
    """``edges`` distinct random edges ``u > v`` on ``edges // 10`` vertices (so every format's
    rule for repeated entries gives the same graph), weights rounded to 6 digits as a text file
    would hold them."""
    rng = np.random.default_rng(seed)
    n = _vertices(edges)
    keys = np.empty(0, dtype=np.int64)
    while keys.size < edges:  # pairs u > v, numbered u (u - 1) / 2 + v
        keys = np.unique(np.concatenate([keys, rng.integers(0, n * (n - 1) // 2, edges - keys.size)]))
    keys = rng.permutation(keys)
    u = ((1 + np.sqrt(8 * keys + 1)) // 2).astype(np.int64)
    u -= u * (u - 1) // 2 > keys  # (the float square root may be one off)
    u += (u + 1) * u // 2 <= keys
    v = keys - u * (u - 1) // 2
    w = np.round(rng.random(edges) + 0.001, 6)
    return n, u, v, w


def write_files(folder, edges: int, stem: str = "graph") -> dict:
    """Write the benchmark graph of ``edges`` edges in every format under ``folder``; return
    ``{format: path}``."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.csv as pacsv  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    folder = Path(folder)
    n, u, v, w = _random_edges(edges)
    paths = {fmt: folder / f"{stem}.{fmt}" for fmt in FORMATS}
    body = pa.table({"i": u + 1, "j": v + 1, "w": w})
    with open(paths["mtx"], "wb") as out:
        out.write(f"%%MatrixMarket matrix coordinate real symmetric\n{n} {n} {edges}\n".encode())
        pacsv.write_csv(body, out, write_options=pacsv.WriteOptions(include_header=False, delimiter=" ",
                                                                    quoting_style="none"))
    table = pa.table({"src": u, "dst": v, "weight": w})
    pacsv.write_csv(table, paths["csv"], write_options=pacsv.WriteOptions(quoting_style="none"))
    pq.write_table(table, paths["parquet"])
    return paths


def _read_once(route: str, path: Path, small: Path) -> dict:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else package_root
    done = subprocess.run([sys.executable, "-c", _CHILD, route, str(path), str(small)], capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the {route} read of {path.name} failed:\n{done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _measure(route: str, path: Path, small: Path, repeats: int) -> dict:
    runs = [_read_once(route, path, small) for _ in range(repeats)]
    times = [r["time_s"] for r in runs]
    peaks = [r["peak_bytes"] for r in runs]
    return {"time_s": statistics.median(times), "times_s": times, "peak_bytes": int(statistics.median(peaks)),
            "peaks_bytes": peaks, "nnz": runs[-1]["nnz"]}


def run(graphs=None, device="auto", repeats=5, quick=False, timeout=None, edges=None) -> list[dict]:
    """Time each reader on each format; return benchmark rows (see :mod:`mgmatch.bench`).

    ``graphs`` names formats to measure (``"mtx"``, ``"csv"``, ``"parquet"``; default all);
    ``edges`` the graph's size (default :data:`DEFAULT_EDGES`, or :data:`QUICK_EDGES` with
    ``quick``). ``device`` and ``timeout`` are accepted as every family takes them; readers run on
    the CPU.
    """
    from ..errors import ParameterError  # noqa: PLC0415

    formats = list(graphs) if graphs else list(FORMATS)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ParameterError(f"the io benchmark measures the formats {', '.join(FORMATS)}, not {', '.join(unknown)}")
    edges = int(edges or (QUICK_EDGES if quick else DEFAULT_EDGES))
    rows = []
    with tempfile.TemporaryDirectory(prefix="mgmatch-bench-io-") as tmp:
        paths = write_files(tmp, edges)
        small = write_files(tmp, 1_000, stem="warmup")
        for fmt in formats:
            path = paths[fmt]
            announce("io", f"{fmt} ({edges:,} edges)")
            library = {name: _measure(route, path, small[fmt], repeats) for name, route in _library_routes(fmt)}
            best = min(library, key=lambda name: library[name]["time_s"])
            ours = _measure("mgmatch", path, small[fmt], repeats)
            for name, rec in [(_OURS, ours), *library.items()]:
                row = {"family": "io", "graph": f"{fmt}:edges={edges}", "impl": name, "device": "cpu",
                       "n": _vertices(edges), "nnz": rec["nnz"], "file_bytes": path.stat().st_size,
                       "time_s": rec["time_s"], "times_s": rec["times_s"], "peak_bytes": rec["peak_bytes"],
                       "peaks_bytes": rec["peaks_bytes"]}
                if name == _OURS:
                    row.update(ratio_vs=best, speedup=library[best]["time_s"] / rec["time_s"])
                    if library[best]["peak_bytes"] > 0:  # (a small file's read may not raise the peak)
                        row["memory_ratio"] = rec["peak_bytes"] / library[best]["peak_bytes"]
                rows.append(row)
    return rows
