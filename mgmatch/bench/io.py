"""Benchmark of the graph readers against the library route for each format, on the same files.

For each format a random undirected graph of ``edges`` edges (ids ``0..edges/10``, real weights)
is written once to a temporary folder: Matrix Market (``coordinate real symmetric``, one
triangle stored, as SuiteSparse stores undirected graphs), a CSV edge list, a Parquet table, a
METIS adjacency-list file (``fmt 001``: each edge listed from both ends with its weight, which
METIS needs to be an integer: the weight times 10^6) and a GML file (a ``node`` per vertex, an
``edge`` with its ``weight`` per edge). GML is read at most :data:`GML_EDGES` edges
(:data:`QUICK_GML_EDGES` with ``quick``): its library route, NetworkX, parses in Python, at about
10^4 edges a second. Each reader then reads the file into the graph's symmetric CSR:

* ``mgmatch read_graph``: :func:`mgmatch.io.read_graph`, with every check it makes;
* the library route: SciPy's ``mmread`` (and ``fast_matrix_market.mmread`` where that package
  is installed) or ``pyarrow.csv.read_csv`` or ``pyarrow.parquet.read_table``, then the CSR
  build by SciPy (``coo -> csr``, which sums duplicates; an edge list adds the mirrored
  entries first, as a symmetric Matrix Market file stores them); for METIS, which no library
  reads, NumPy: ``np.fromfile`` parses every number of the file, a byte scan counts the values on
  each line, and the adjacency lists are the CSR as they stand; for GML, ``networkx.read_gml``
  and ``networkx.to_scipy_sparse_array``. No validation: this is the floor a reader that checks
  its input can approach.

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
#: The most edges of the GML file (its library route parses in Python), and in quick mode.
GML_EDGES = 100_000
QUICK_GML_EDGES = 5_000
FORMATS = ("mtx", "csv", "parquet", "metis", "gml")
_SUFFIX = {"mtx": ".mtx", "csv": ".csv", "parquet": ".parquet", "metis": ".graph", "gml": ".gml"}
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
elif route == "numpy.metis":
    def read(p):
        values = np.fromfile(p, dtype=np.int64, sep=" ")  # every number; line breaks are blanks too
        n, header_values = int(values[0]), 3  # n m 001: no comment lines, no vertex weights
        text = np.fromfile(p, dtype=np.uint8)
        blank = (text == 32) | (text == 10)
        starts = np.flatnonzero(~blank & np.concatenate([[True], blank[:-1]]))  # first byte of each number
        per_line = np.bincount(np.searchsorted(np.flatnonzero(text == 10), starts), minlength=n + 1)
        indptr = np.concatenate([[0], np.cumsum(per_line[1:n + 1] // 2)])  # (neighbour, weight) pairs
        adjacency = values[header_values:]
        return sp.csr_array((adjacency[1::2].astype(np.float64), adjacency[0::2] - 1, indptr), shape=(n, n)).nnz
elif route == "networkx.gml":
    import networkx as nx
    def read(p):
        g = nx.read_gml(p, label="id")
        return nx.to_scipy_sparse_array(g, nodelist=sorted(g), weight="weight", format="csr").nnz
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
    if fmt == "metis":
        return [("numpy fromfile + csr", "numpy.metis")]
    if fmt == "gml":
        try:
            import networkx  # noqa: F401, PLC0415
        except ImportError:
            return []
        return [("networkx read_gml + scipy csr", "networkx.gml")]
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


def write_files(folder, edges: int, stem: str = "graph", formats=FORMATS) -> dict:
    """Write the benchmark graph of ``edges`` edges in each of ``formats`` under ``folder``;
    return ``{format: path}``."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.csv as pacsv  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    folder = Path(folder)
    n, u, v, w = _random_edges(edges)
    paths = {fmt: folder / f"{stem}{_SUFFIX[fmt]}" for fmt in formats}
    table = pa.table({"src": u, "dst": v, "weight": w})
    plain = pacsv.WriteOptions(include_header=False, quoting_style="none")
    for fmt, path in paths.items():
        if fmt == "mtx":
            body = pa.table({"i": u + 1, "j": v + 1, "w": w})
            with open(path, "wb") as out:
                out.write(f"%%MatrixMarket matrix coordinate real symmetric\n{n} {n} {edges}\n".encode())
                pacsv.write_csv(body, out, write_options=pacsv.WriteOptions(include_header=False, delimiter=" ",
                                                                            quoting_style="none"))
        elif fmt == "csv":
            pacsv.write_csv(table, path, write_options=pacsv.WriteOptions(quoting_style="none"))
        elif fmt == "parquet":
            pq.write_table(table, path)
        elif fmt == "metis":
            with open(path, "wb") as out:
                out.write(f"{n} {edges} 001\n".encode())
                pacsv.write_csv(pa.table({"line": _metis_lines(n, u, v, w)}), out, write_options=plain)
        elif fmt == "gml":
            with open(path, "wb") as out:
                out.write(b"graph [\n")
                nodes = pa.compute.binary_join_element_wise("  node [ id ", pa.array(np.arange(n)).cast(pa.string()),
                                                             " ]", "")
                pacsv.write_csv(pa.table({"line": nodes}), out, write_options=plain)
                edge_text = [pa.array(x).cast(pa.string()) for x in (u, v, w)]
                lines = pa.compute.binary_join_element_wise("  edge [ source ", edge_text[0], " target ", edge_text[1],
                                                            " weight ", edge_text[2], " ]", "")
                pacsv.write_csv(pa.table({"line": lines}), out, write_options=plain)
                out.write(b"]\n")
    return paths


def _metis_lines(n: int, u, v, w):
    """Each vertex's METIS line, ``neighbour weight ...`` (1-based neighbours, integer weights:
    the weight times 10^6), as an Arrow string array."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415
    import scipy.sparse as sp  # noqa: PLC0415

    weights = np.round(np.concatenate([w, w]) * 1e6).astype(np.int64)
    csr = sp.csr_array((weights, (np.concatenate([u, v]), np.concatenate([v, u]))), shape=(n, n))
    pairs = pc.binary_join_element_wise(pa.array(csr.indices.astype(np.int64) + 1).cast(pa.string()),
                                        pa.array(csr.data).cast(pa.string()), " ")
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(csr.indptr.astype(np.int32)), pairs), " ")


def _format_edges(fmt: str, edges: int, quick: bool) -> int:
    """The edges of ``fmt``'s file: ``edges``, and for GML at most its cap."""
    return min(edges, QUICK_GML_EDGES if quick else GML_EDGES) if fmt == "gml" else edges


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

    ``graphs`` names formats to measure (``"mtx"``, ``"csv"``, ``"parquet"``, ``"metis"``,
    ``"gml"``; default all); ``edges`` the graph's size (default :data:`DEFAULT_EDGES`, or
    :data:`QUICK_EDGES` with ``quick``; GML at most :data:`GML_EDGES`, or :data:`QUICK_GML_EDGES`).
    ``device`` and ``timeout`` are accepted as every family takes them; readers run on the CPU.
    """
    from ..errors import ParameterError  # noqa: PLC0415

    formats = list(graphs) if graphs else list(FORMATS)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ParameterError(f"the io benchmark measures the formats {', '.join(FORMATS)}, not {', '.join(unknown)}")
    edges = int(edges or (QUICK_EDGES if quick else DEFAULT_EDGES))
    rows = []
    with tempfile.TemporaryDirectory(prefix="mgmatch-bench-io-") as tmp:
        small = write_files(tmp, 1_000, stem="warmup", formats=formats)
        for fmt in formats:
            size = _format_edges(fmt, edges, quick)
            path = write_files(tmp, size, formats=[fmt])[fmt]
            announce("io", f"{fmt} ({size:,} edges)")
            library = {name: _measure(route, path, small[fmt], repeats) for name, route in _library_routes(fmt)}
            ours = _measure("mgmatch", path, small[fmt], repeats)
            best = min(library, key=lambda name: library[name]["time_s"]) if library else None
            for name, rec in [(_OURS, ours), *library.items()]:
                row = {"family": "io", "graph": f"{fmt}:edges={size}", "impl": name, "device": "cpu",
                       "n": _vertices(size), "nnz": rec["nnz"], "file_bytes": path.stat().st_size,
                       "time_s": rec["time_s"], "times_s": rec["times_s"], "peak_bytes": rec["peak_bytes"],
                       "peaks_bytes": rec["peaks_bytes"]}
                if name == _OURS and best is not None:
                    row.update(ratio_vs=best, speedup=library[best]["time_s"] / rec["time_s"])
                    if library[best]["peak_bytes"] > 0:  # (a small file's read may not raise the peak)
                        row["memory_ratio"] = rec["peak_bytes"] / library[best]["peak_bytes"]
                rows.append(row)
            path.unlink()  # (the next format's file takes its place on disk)
    return rows
