"""Reading graphs and writing results: invariants first, real graphs next, then each bad input."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.io
import scipy.sparse as sp

from mgmatch import Graph, InputError, ParameterError, ResourceError
from mgmatch.io import (
    SUFFIXES,
    atomic_path,
    graph_info,
    read_graph,
    read_table,
    summary_path_for,
    write_json,
    write_table,
)
from mgmatch.io import _cutter, edgelist, matrix_market, readers


# ------------------------------------------------------------------------------ helpers
def assert_same_graph(got: Graph, want: Graph) -> None:
    assert (got.shape, got.bipartite, got.weighted) == (want.shape, want.bipartite, want.weighted)
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.weights, want.weights)


def write_edge_text(path, src, dst, weight=None, *, sep=" ", base=0, preamble="", compress=False):
    lines = [preamble] if preamble else []
    for i, (u, v) in enumerate(zip(src, dst)):
        fields = [str(u + base), str(v + base)] + ([repr(float(weight[i]))] if weight is not None else [])
        lines.append(sep.join(fields))
    data = ("\n".join(lines) + "\n").encode()
    Path(path).write_bytes(gzip.compress(data) if compress else data)
    return path


def write_mtx(path, matrix, *, symmetry="general", field=None, compress=False):
    buffer = io.BytesIO()
    scipy.io.mmwrite(buffer, matrix, symmetry=symmetry, field=field)
    data = buffer.getvalue()
    Path(path).write_bytes(gzip.compress(data) if compress else data)
    return path


def write_metis(path, graph: Graph, *, weights=True, compress=False):
    rows = []
    for v in range(graph.n):
        nbrs, ws = graph.neighbours(v)
        if weights:
            rows.append(" ".join(f"{u + 1} {int(w)}" for u, w in zip(nbrs, ws)))
        else:
            rows.append(" ".join(str(u + 1) for u in nbrs))
    fmt = " 1" if weights else ""
    data = (f"% written by a test\n{graph.n} {graph.m}{fmt}\n" + "\n".join(rows) + "\n").encode()
    Path(path).write_bytes(gzip.compress(data) if compress else data)
    return path


def write_text(path, text: str) -> Path:
    Path(path).write_text(text)
    return Path(path)


def error_of(path, **options) -> InputError:
    with pytest.raises(InputError) as info:
        read_graph(path, **options)
    assert str(path) in str(info.value)
    assert info.value.path == str(path)
    return info.value


@pytest.fixture(scope="module")
def karate_weighted(data_dir) -> Graph:
    """Karate with integer weights 1..9, so that every format (METIS included) can hold them."""
    g = read_graph(data_dir / "karate.mtx")
    u, v, _ = g.edges()
    w = 1.0 + (u * 7 + v * 3) % 9
    return Graph.from_edges(u, v, w, n=g.n)


# ---------------------------------------------------------------- every format, one graph
def _write_in(fmt: str, tmp: Path, g: Graph) -> tuple[Path, dict]:
    u, v, w = (np.asarray(a) for a in g.edges())
    both_u, both_v = np.concatenate([u, v]), np.concatenate([v, u])
    both_w = np.concatenate([w, w])
    full = g.to_scipy()
    if fmt == "csv":
        return write_edge_text(tmp / "g.csv", u, v, w, sep=","), {}
    if fmt == "csv-header":
        return write_edge_text(tmp / "g.csv", u, v, w, sep=", ", preamble="src, dst, weight"), {}
    if fmt == "tsv":
        return write_edge_text(tmp / "g.tsv", both_u, both_v, both_w, sep="\t"), {}
    if fmt == "txt-snap":
        preamble = "# Undirected graph\n# Nodes: 34 Edges: 78\n# FromNodeId\tToNodeId"
        return write_edge_text(tmp / "g.txt", u, v, w, sep="\t", preamble=preamble), {}
    if fmt == "edges-1-based":
        return write_edge_text(tmp / "g.edges", v, u, w, sep="   ", base=1, preamble="% 1-based"), {}
    if fmt == "el-gz":
        return write_edge_text(tmp / "g.el.gz", u, v, w, compress=True), {}
    if fmt == "csv-gz":
        return write_edge_text(tmp / "g.csv.gz", u, v, w, sep=",", compress=True), {}
    if fmt == "txt-comma":
        return write_edge_text(tmp / "g.txt", u, v, w, sep=","), {}
    if fmt == "mtx-general":
        return write_mtx(tmp / "g.mtx", full, symmetry="general"), {}
    if fmt == "mtx-symmetric":
        return write_mtx(tmp / "g.mtx", full, symmetry="symmetric"), {}
    if fmt == "mtx-integer":
        return write_mtx(tmp / "g.mtx", full, symmetry="symmetric", field="integer"), {}
    if fmt == "mtx-upper-only":  # one triangle stored as a general matrix
        return write_mtx(tmp / "g.mtx", sp.triu(full).tocoo()), {}
    if fmt == "mtx-gz":
        return write_mtx(tmp / "g.mtx.gz", full, symmetry="symmetric", compress=True), {}
    if fmt == "metis":
        return write_metis(tmp / "g.graph", g), {}
    if fmt == "metis-gz":
        return write_metis(tmp / "g.graph.gz", g, compress=True), {}
    if fmt == "parquet":
        path = tmp / "g.parquet"
        pq.write_table(pa.table({"src": u.astype(np.int64), "dst": v.astype(np.int64), "weight": w}), path)
        return path, {}
    if fmt == "pq-1-based":
        path = tmp / "g.pq"
        pq.write_table(pa.table({"src": u + 1, "dst": v + 1, "weight": w.astype(np.float32)}), path)
        return path, {"one_based": True}
    if fmt == "npz-arrays":
        path = tmp / "g.npz"
        np.savez(path, src=u, dst=v, weight=w, n=np.int64(g.n))
        return path, {}
    if fmt == "npz-scipy":
        path = tmp / "g.npz"
        sp.save_npz(path, sp.csr_matrix(full))
        return path, {}
    if fmt == "txt-explicit":  # an unusual suffix, with the format named
        return write_edge_text(tmp / "g.dat", u, v, w), {"format": "edgelist"}
    raise AssertionError(fmt)


FORMATS = [
    "csv", "csv-header", "csv-gz", "tsv", "txt-snap", "edges-1-based", "el-gz", "txt-comma", "mtx-general",
    "mtx-symmetric", "mtx-integer", "mtx-upper-only", "mtx-gz", "metis", "metis-gz", "parquet",
    "pq-1-based", "npz-arrays", "npz-scipy", "txt-explicit",
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_reads_the_same_graph(fmt, tmp_path, karate_weighted):
    path, options = _write_in(fmt, tmp_path, karate_weighted)
    assert_same_graph(read_graph(path, **options), karate_weighted)


@pytest.mark.parametrize("fmt", ["csv", "mtx-symmetric", "metis", "parquet", "npz-arrays"])
def test_weighted_false_ignores_weights_in_every_format(fmt, tmp_path, karate_weighted):
    path, options = _write_in(fmt, tmp_path, karate_weighted)
    g = read_graph(path, weighted=False, **options)
    assert not g.weighted and (g.weights == 1.0).all()
    np.testing.assert_array_equal(g.indices, karate_weighted.indices)


def test_weighted_false_reads_an_edge_lists_first_two_fields_only(tmp_path, monkeypatch):
    plain = write_text(tmp_path / "plain.txt", "".join(f"{i} {i + 1}\n" for i in range(300)))
    labelled = write_text(tmp_path / "labelled.txt", "".join(f"{i} {i + 1} tag{i % 7}\n" for i in range(300)))
    assert "weight 'tag0' is not a number" in str(error_of(labelled))
    for chunk in (_cutter._CHUNK_BYTES, 200):  # one uniform block, and many cut ones
        monkeypatch.setattr(_cutter, "_CHUNK_BYTES", chunk)
        assert_same_graph(read_graph(labelled, weighted=False), read_graph(plain))
    wide = write_text(tmp_path / "wide.txt", "".join(f"{i}\t{i + 1}\t1\t{1700000000 + i}\n" for i in range(300)))
    assert "found 4 fields" in str(error_of(wide)) and "--unweighted" in str(error_of(wide))
    assert_same_graph(read_graph(wide, weighted=False), read_graph(plain))
    with pytest.raises(ParameterError, match="weighted must be True or False, not 'no'"):
        read_graph(plain, weighted="no")


@pytest.mark.parametrize("fmt", ["csv", "mtx-general", "metis", "npz-scipy"])
def test_canonicalisation_options_pass_through(fmt, tmp_path, karate_weighted):
    path, options = _write_in(fmt, tmp_path, karate_weighted)
    g = read_graph(path, dtype="float32", random_weights=3, **options)
    assert g.weights.dtype == np.float32
    assert g.m == karate_weighted.m


def test_small_chunks_give_the_same_graph_and_lines(tmp_path, data_dir, monkeypatch, karate_weighted):
    whole = read_graph(data_dir / "4elt.graph")
    text_path, _ = _write_in("txt-snap", tmp_path, karate_weighted)
    monkeypatch.setattr(_cutter, "_CHUNK_BYTES", 1000)
    assert_same_graph(read_graph(data_dir / "4elt.graph"), whole)
    assert_same_graph(read_graph(text_path), karate_weighted)
    lines = text_path.read_text().splitlines()
    lines[60] = lines[60] + "\t7"
    write_text(text_path, "\n".join(lines) + "\n")
    assert error_of(text_path).line == 61


# ---------------------------------------------------------------------------- real graphs
def test_karate(data_dir):
    g = read_graph(data_dir / "karate.mtx")
    assert (g.n, g.m, g.nnz, g.weighted, g.bipartite) == (34, 78, 156, False, False)
    assert g.summary.duplicates_merged == 0  # symmetric storage: a_ij and a_ji are one edge,
    assert g.summary.mirrored_pairs == 78  # counted as mirrored pairs, not as duplicates


def test_karate_as_a_square_bipartite_matrix(data_dir):
    g = read_graph(data_dir / "karate.mtx", bipartite=True)
    assert g.bipartite and g.shape == (34, 34) and g.m == 156


def test_netscience(data_dir):
    g = read_graph(data_dir / "netscience.mtx")
    assert (g.n, g.m, g.weighted) == (1589, 2742, True)
    assert int((np.diff(g.indptr) == 0).sum()) == 128
    assert (g.weights > 0).all()


def test_4elt_metis(data_dir):
    g = read_graph(data_dir / "4elt.graph")
    assert (g.n, g.m, g.weighted) == (15606, 45878, False)
    assert g.neighbours(0)[0].tolist() == [1, 2, 5, 6]  # the first line lists 2 3 6 7 (1-based)
    matrix = g.to_scipy()
    assert (matrix != matrix.T).nnz == 0


def test_4elt_as_edge_list_and_back(data_dir, tmp_path):
    g = read_graph(data_dir / "4elt.graph")
    u, v, _ = g.edges()
    path = write_edge_text(tmp_path / "4elt.el", np.asarray(u), np.asarray(v), base=1)
    assert_same_graph(read_graph(path), g)


def test_bcsstk13_negative_entries(data_dir):
    path = data_dir / "bcsstk13.mtx.gz"
    err = error_of(path)
    assert "negative" in str(err) and "negative='abs'" in str(err)
    g = read_graph(path, negative="abs")
    assert (g.n, g.m) == (2003, 40940)
    assert g.summary.self_loops_dropped == 2003  # the diagonal
    assert g.summary.negatives_made_absolute > 0 and (g.weights > 0).all()


def test_lp_afiro_is_bipartite(data_dir):
    g = read_graph(data_dir / "lp_afiro.mtx", negative="abs")
    assert g.bipartite and g.shape == (27, 51) and g.m == 102 and g.nnz == 102
    err = error_of(data_dir / "lp_afiro.mtx", negative="abs", bipartite=False)
    assert "27 x 51" in str(err)


def test_graph_info(data_dir):
    info = graph_info(data_dir / "netscience.mtx")
    assert (info["n"], info["m"], info["nnz"], info["isolated"]) == (1589, 2742, 5484, 128)
    assert info["weighted"] and not info["bipartite"]
    assert info["degree"]["min"] == 0 and info["degree"]["mean"] == pytest.approx(2 * 2742 / 1589)
    assert info["matrix_market"]["symmetry"] == "symmetric"
    json.dumps(info)  # plain Python values only

    bc = graph_info(data_dir / "bcsstk13.mtx.gz")
    assert bc["self_loops"] == 2003 and bc["negatives"] > 0
    elt = graph_info(data_dir / "4elt.graph")
    assert elt["metis"] == {"n": 15606, "m": 45878, "fmt": "000", "ncon": 1}
    assert elt["degree"]["min"] >= 1
    afiro = graph_info(data_dir / "lp_afiro.mtx")
    assert afiro["shape"] == [27, 51] and afiro["n"] == 78


# -------------------------------------------------------------------- Matrix Market rules
MM_GENERAL = "%%MatrixMarket matrix coordinate real general\n"


def test_matrix_market_sums_repeated_coordinates_then_merges_directions(tmp_path):
    path = write_text(tmp_path / "rep.mtx", MM_GENERAL + "3 3 4\n1 2 1.0\n1 2 2.0\n2 1 2.5\n2 3 1.0\n")
    g = read_graph(path)
    assert g.m == 2 and g.neighbours(0)[1].tolist() == [3.0]  # (1+2) beats 2.5 under "max"
    assert graph_info(path)["matrix_market"]["repeated_coordinates_summed"] == 1
    assert read_graph(path, duplicates="sum").neighbours(0)[1].tolist() == [5.5]


def test_matrix_market_repeated_coordinates_match_scipy(tmp_path):
    # many repeats, both orders, an explicit zero among them: the graph is SciPy's summed matrix
    import scipy.io
    import scipy.sparse as sp

    rng = np.random.default_rng(7)
    rows, cols = rng.integers(0, 40, 3000), rng.integers(0, 30, 3000)
    vals = rng.integers(0, 5, 3000).astype(np.float64)
    path = tmp_path / "many.mtx"
    scipy.io.mmwrite(path, sp.coo_array((vals, (rows, cols)), shape=(40, 30)))
    expect = sp.csr_array((vals, (rows, cols)), shape=(40, 30))  # CSR construction sums repeats
    expect.sort_indices()
    g = read_graph(path)
    got = g.to_scipy()
    assert g.bipartite and got.shape == (40, 30)
    assert np.array_equal(got.indptr, expect.indptr) and np.array_equal(got.indices, expect.indices)
    assert np.array_equal(got.data, expect.data)
    summed = 3000 - expect.nnz
    assert graph_info(path)["matrix_market"]["repeated_coordinates_summed"] == summed > 0


def test_matrix_market_explicit_zeros(tmp_path):
    path = write_text(tmp_path / "z.mtx", MM_GENERAL + "3 3 2\n1 2 0\n2 3 4.0\n")
    kept = read_graph(path)
    assert kept.m == 2 and kept.summary.zeros_kept == 1
    dropped = read_graph(path, zeros="drop")
    assert dropped.m == 1 and dropped.summary.zeros_dropped == 1


@pytest.mark.parametrize("value", ["1.5", "1e3", "0x10", "2.0", "nan"])
def test_matrix_market_integer_field_holds_whole_numbers(tmp_path, value):
    # SciPy's reader keeps an integer field's leading digits (1.5 -> 1, 1e3 -> 1, 0x10 -> 0)
    banner = "%%MatrixMarket matrix coordinate integer symmetric\n% comment\n"
    path = write_text(tmp_path / "i.mtx", banner + f"3 3 2\n2 1 4\n3 2 {value}\n")
    err = error_of(path)
    assert err.line == 5 and repr(value) in str(err) and "integer matrix" in str(err)
    with gzip.open(tmp_path / "i.mtx.gz", "wt") as out:  # compressed alike
        out.write(path.read_text())
    assert error_of(tmp_path / "i.mtx.gz").line == 5
    good = write_text(tmp_path / "g.mtx", banner + "3 3 2\n2 1 4\n3 2 -7\n")
    assert read_graph(good, negative="abs").neighbours(2)[1].tolist() == [7.0]


@pytest.mark.parametrize("value", ["1.0x", "1,5", "0x10", "1e", "--1", "1.2.3", ".", "e5", "infinite", "1d0"])
def test_matrix_market_real_field_holds_numbers(tmp_path, value):
    # SciPy's reader keeps what parses from the front of a field: '1.0x' is read as 1.0
    banner = "%%MatrixMarket matrix coordinate real symmetric\n% comment\n"
    path = write_text(tmp_path / "r.mtx", banner + f"3 3 2\n2 1 4\n3 2 {value}\n")
    err = error_of(path)
    assert err.line == 5 and f"{value!r} is not a number" in str(err) and "real matrix" in str(err)
    with gzip.open(tmp_path / "r.mtx.gz", "wt") as out:  # compressed alike
        out.write(path.read_text())
    assert error_of(tmp_path / "r.mtx.gz").line == 5


@pytest.mark.parametrize("value", ["1", "-2.5", ".5", "3.", "1e-3", "2E+4", "-0.0"])
def test_matrix_market_real_field_number_forms(tmp_path, value):
    path = write_text(tmp_path / "r.mtx", f"%%MatrixMarket matrix coordinate real general\n3 3 2\n2 1 4\n\n3 2 {value}\n")
    assert read_graph(path, negative="abs").neighbours(2)[1].tolist() == [abs(float(value))]
    for word in ("nan", "INF", "-Infinity"):  # numbers to the parser; then refused as weights
        bad = write_text(tmp_path / "w.mtx", f"%%MatrixMarket matrix coordinate real general\n3 3 1\n3 2 {word}\n")
        assert "finite" in str(error_of(bad))


@pytest.mark.parametrize(
    "header, line, fields, want",
    [
        ("coordinate real symmetric", "3 2 2.5 7", 4, 3),  # a complex value under a real header?
        ("coordinate real general", "3 2", 2, 3),
        ("coordinate integer general", "3 2 4 4", 4, 3),
        ("coordinate pattern general", "3 2 1", 3, 2),
        ("coordinate complex general", "3 2 1.0", 3, 4),
        ("array real general", "1.0 2.0", 2, 1),
    ],
)
def test_matrix_market_line_has_the_declared_fields(tmp_path, monkeypatch, header, line, fields, want):
    first = "1.0" if header.startswith("array") else "2 1" + {"real": " 1", "integer": " 1", "pattern": "",
                                                              "complex": " 1 0"}[header.split()[1]]
    size = "2 2" if header.startswith("array") else "3 3 2"
    text = f"%%MatrixMarket matrix {header}\n{size}\n" + "% note\n" * 40 + f"{first}\n{line}\n"
    path = write_text(tmp_path / "f.mtx", text)
    for piece in (1 << 20, 16, 5):  # the line found across the pieces the text is read in
        monkeypatch.setattr(_cutter, "_CHUNK_BYTES", piece)
        err = error_of(path)
        assert err.line == 44, (piece, err)
        assert f"{line!r} has {fields} fields" in str(err) and f"lines have {want}" in str(err)


def test_matrix_market_pattern_field_holds_whole_numbers(tmp_path, monkeypatch):
    banner = "%%MatrixMarket matrix coordinate pattern general\n"
    lines = [f"{1 + k % 9} {1 + (k * 7) % 9}" for k in range(500)]
    path = write_text(tmp_path / "p.mtx", banner + "9 9 501\n" + "\n".join(lines) + "\n4 5 0.5\n")
    for piece in (1 << 20, 64, 7):  # the line found across the pieces the text is read in
        monkeypatch.setattr(_cutter, "_CHUNK_BYTES", piece)
        err = error_of(path)
        assert err.line == 503 and "'0.5' is not a whole number" in str(err) and "pattern matrix" in str(err)
    control = write_text(tmp_path / "c.mtx", banner + "9 9 1\n2 1\x0c\n")  # a byte, not a field
    assert "'\\x0c' is not a whole number" in str(error_of(control))
    ok = write_text(tmp_path / "ok.mtx", banner + "9 9 500\n" + "\n".join(lines) + "\n")
    assert read_graph(ok).nnz == read_graph(ok, weighted=False).nnz > 0


@pytest.mark.parametrize("compress", [False, True])
def test_matrix_market_plus_signs_and_comments_among_the_entries(tmp_path, compress):
    # C's strtod and the format's reference reader take '+1'; SciPy's reader does not, nor a
    # comment line after the size line
    text = (MM_GENERAL + "% header comment\n4 4 4\n+1 2 +1.5\n% between entries\n2 3 2.5e+1\n\n"
            "3\t4\t+.5\n4 1 +2\n% at the end\n")
    path = tmp_path / ("p.mtx.gz" if compress else "p.mtx")
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    g = read_graph(path)
    assert (g.n, g.m) == (4, 4)
    assert g.neighbours(0)[1].tolist() == [1.5, 2.0] and g.neighbours(2)[1].tolist() == [25.0, 0.5]
    _, details = read_graph(path, with_details=True)
    assert details["matrix_market"]["stored_entries"] == 4
    # the errors found on the second reading name the file's own lines
    bad = write_text(tmp_path / "b.mtx", MM_GENERAL + "3 3 2\n1 2 +1\n% note\n4 1 1\n")
    err = error_of(bad)
    assert err.line == 5 and "out of bounds" in str(err)
    long = write_text(tmp_path / "l.mtx", MM_GENERAL + "3 3 1\n1 2 +1\n% note\n2 3 1\n")
    assert error_of(long).line == 5


def test_matrix_market_pattern_general(tmp_path):
    banner = "%%MatrixMarket matrix coordinate pattern general\n"
    path = write_text(tmp_path / "p.mtx", banner + "3 4 3\n1 1\n2 4\n3 2\n")
    g = read_graph(path)
    assert g.bipartite and g.shape == (3, 4) and not g.weighted and g.m == 3


def test_matrix_market_skew_symmetric_needs_abs(tmp_path):
    banner = "%%MatrixMarket matrix coordinate integer skew-symmetric\n"
    path = write_text(tmp_path / "s.mtx", banner + "3 3 2\n2 1 5\n3 2 -2\n")
    assert "negative" in str(error_of(path))
    g = read_graph(path, negative="abs")
    assert g.m == 2 and g.neighbours(1)[1].tolist() == [5.0, 2.0]


def test_matrix_market_complex_takes_modulus(tmp_path):
    banner = "%%MatrixMarket matrix coordinate complex hermitian\n"
    path = write_text(tmp_path / "c.mtx", banner + "2 2 1\n2 1 3.0 4.0\n")
    assert read_graph(path).neighbours(0)[1].tolist() == [5.0]


def test_matrix_market_dense_array(tmp_path):
    path = write_text(tmp_path / "d.mtx", "%%MatrixMarket matrix array real general\n2 3\n1\n0\n0\n2\n3\n0\n")
    g = read_graph(path)
    assert g.bipartite and g.shape == (2, 3) and g.m == 3


def test_matrix_market_without_entries_is_isolated_vertices(tmp_path):
    g = read_graph(write_text(tmp_path / "e.mtx", MM_GENERAL + "5 5 0\n"))
    assert (g.n, g.m) == (5, 0)


MM_HUGE_HEADERS = [
    # (name, text, words in the message)
    ("huge-dimensions", MM_GENERAL + "1000000000000 1000000000000 1\n1 2 1.0\n",
     "1,000,000,000,000 x 1,000,000,000,000 matrix with 1 entry, too large for this machine's memory"),
    ("huge-entry-count", MM_GENERAL + "3 3 99999999999\n1 2 1.0\n",
     "3 x 3 matrix with 99,999,999,999 entries, more than the file's 70 bytes can hold"),
    ("huge-dense", "%%MatrixMarket matrix array real general\n100000 100000\n1.0\n2.0\n",
     "100,000 x 100,000 matrix with 10,000,000,000 entries, more than the file's"),
]


@pytest.mark.parametrize("name, text, words", MM_HUGE_HEADERS, ids=[h[0] for h in MM_HUGE_HEADERS])
def test_matrix_market_header_sizes_are_checked_before_the_body(name, text, words, tmp_path):
    assert words in str(error_of(write_text(tmp_path / "h.mtx", text)))


def test_matrix_market_one_based_false_is_refused(data_dir):
    with pytest.raises(ParameterError):
        read_graph(data_dir / "karate.mtx", one_based=False)


# ------------------------------------------------------------------------ edge-list rules
MESSY_TRIANGLE = {
    "plain": b"0 1 0.5\n1 2 1.5\n2 0 2.5\n",
    "tabs": b"0\t1\t0.5\n1\t2\t1.5\n2\t0\t2.5",
    "crlf": b"0 1 0.5\r\n1 2 1.5\r\n2 0 2.5\r\n",
    "blank-lines": b"0 1 0.5\n\n1 2 1.5\n\n\n2 0 2.5\n\n",
    "comment-in-the-middle": b"0 1 0.5\n# the rest\n1 2 1.5\n% more\n2 0 2.5\n",
    "padding": b"  0 1 0.5  \n1   2\t1.5\n\t2 0   2.5\t\n",
    "mixed-separators": b"0\t1 0.5\n1 \t2 1.5\n2 0\t2.5\n",
    "lone-carriage-return": b"0 1 0.5\r\n1 2 1.5 \r\n2 0 2.5\r",
}


@pytest.mark.parametrize("layout", MESSY_TRIANGLE)
@pytest.mark.parametrize("taken_as_it_stands", [True, False])
def test_text_layouts_read_alike(layout, taken_as_it_stands, tmp_path, monkeypatch):
    if not taken_as_it_stands:
        monkeypatch.setattr(edgelist, "_uniform_block", lambda *args: None)
    path = tmp_path / "g.txt"
    path.write_bytes(MESSY_TRIANGLE[layout])
    want = Graph.from_edges([0, 1, 2], [1, 2, 0], [0.5, 1.5, 2.5])
    assert_same_graph(read_graph(path), want)


@pytest.mark.parametrize("taken_as_it_stands", [True, False])
def test_line_numbers_count_every_line(taken_as_it_stands, tmp_path, monkeypatch):
    if not taken_as_it_stands:
        monkeypatch.setattr(edgelist, "_uniform_block", lambda *args: None)
    path = tmp_path / "g.txt"
    path.write_bytes(b"# top\n0 1\n\n\r\n# middle\n1 2\n1 x\n")
    assert error_of(path).line == 7


def test_every_format_as_cut_text(tmp_path, monkeypatch, karate_weighted):
    monkeypatch.setattr(edgelist, "_uniform_block", lambda *args: None)
    for fmt in ("csv", "csv-header", "tsv", "txt-snap", "el-gz", "txt-comma"):
        path, options = _write_in(fmt, tmp_path, karate_weighted)
        assert_same_graph(read_graph(path, **options), karate_weighted)


def test_one_based_detection_and_override(tmp_path):
    path = write_text(tmp_path / "g.txt", "1 2\n2 3\n")
    assert read_graph(path).n == 3  # no id 0 and the smallest is 1: 1-based
    assert read_graph(path, one_based=False).n == 4  # vertex 0 isolated
    assert graph_info(path)["one_based"] is True
    zero_based = write_text(tmp_path / "z.txt", "0 1\n1 2\n")
    assert read_graph(zero_based).n == 3 and graph_info(zero_based)["one_based"] is False
    sparse_ids = write_text(tmp_path / "s.txt", "2 3\n")  # smallest id 2: 0-based
    assert read_graph(sparse_ids).n == 4


def test_one_based_true_rejects_id_zero_with_its_line(tmp_path):
    path = write_text(tmp_path / "g.csv", "# c\n1,2\n\n2,0\n")
    err = error_of(path, one_based=True)
    assert err.line == 4 and "id 0" in str(err)


def test_comments_blank_lines_crlf_and_padding(tmp_path):
    path = write_text(tmp_path / "g.txt", "")
    path.write_bytes(
        b"% top\r\n  0\t 1  2.5 \r\n\r\n# middle\r\n\t1 2 0.5\r\n   # indented comment\r\n2  0 1"
    )
    g = read_graph(path)
    assert (g.n, g.m) == (3, 3) and g.neighbours(0)[1].tolist() == [2.5, 1.0]


def test_csv_with_padding_and_quotes(tmp_path):
    g = read_graph(write_text(tmp_path / "g.csv", 'source,target\n"0", 1\n 1 ,2\n'))
    assert (g.n, g.m, g.weighted) == (3, 2, False)


def test_bipartite_edge_list(tmp_path):
    g = read_graph(write_text(tmp_path / "b.tsv", "0\t0\n0\t2\n1\t2\n"), bipartite=True)
    assert g.bipartite and g.shape == (2, 3) and g.m == 3


def test_edge_list_self_loops_and_duplicates_are_counted(tmp_path):
    info = graph_info(write_text(tmp_path / "g.el", "0 1 1\n1 0 3\n2 2 1\n1 2 2\n1 2 5\n"))
    assert (info["m"], info["self_loops"], info["duplicates"]) == (2, 1, 1)  # (1, 2) twice
    assert info["canonicalisation"]["mirrored_pairs"] == 1  # (0, 1) and (1, 0)


TRIANGLE = Graph.from_edges([0, 1, 2], [1, 2, 0], [0.5, 1.5, 2.5])
UNWEIGHTED_TRIANGLE = Graph.from_edges([0, 1, 2], [1, 2, 0])

# (name, file, text, the graph it holds); spreadsheets end every line with a delimiter
TRAILING_DELIMITERS = [
    ("tsv-weighted", "g.tsv", b"0\t1\t0.5\t\n1\t2\t1.5\t\n2\t0\t2.5\t\n", TRIANGLE),
    ("tsv-unweighted", "g.tsv", b"0\t1\t\n1\t2\t\n2\t0\t\n", UNWEIGHTED_TRIANGLE),
    ("tsv-crlf", "g.tsv", b"0\t1\t0.5\t\r\n1\t2\t1.5\t\r\n2\t0\t2.5\t\r\n", TRIANGLE),
    ("tsv-several", "g.tsv", b"0\t1\t0.5\t\t\n1\t2\t1.5\t \t\n2\t0\t2.5\t\n", TRIANGLE),
    ("tsv-on-some-lines", "g.tsv", b"0\t1\t0.5\n1\t2\t1.5\t\n2\t0\t2.5", TRIANGLE),
    ("csv", "g.csv", b"0,1,0.5,\n1,2,1.5,\n2,0,2.5,\n", TRIANGLE),
    ("csv-whitespace-after", "g.csv", b"0,1,0.5, \n1,2,1.5,\t\n2,0,2.5 , ,\n", TRIANGLE),
    ("csv-header", "g.csv", b"src,dst,weight,\n0,1,0.5,\n1,2,1.5,\n2,0,2.5,\n", TRIANGLE),
    ("txt-comma", "g.txt", b"0,1,0.5,\n1,2,1.5,\n2,0,2.5,\n", TRIANGLE),
    ("csv-gz", "g.csv.gz", gzip.compress(b"0,1,0.5,\n1,2,1.5,\n2,0,2.5,\n"), TRIANGLE),
]


@pytest.mark.parametrize("name, filename, data, want", TRAILING_DELIMITERS, ids=[t[0] for t in TRAILING_DELIMITERS])
@pytest.mark.parametrize("taken_as_it_stands", [True, False])
def test_trailing_delimiters_are_ignored(name, filename, data, want, taken_as_it_stands, tmp_path, monkeypatch):
    if not taken_as_it_stands:
        monkeypatch.setattr(edgelist, "_uniform_block", lambda *args: None)
    path = tmp_path / filename
    path.write_bytes(data)
    assert_same_graph(read_graph(path), want)


@pytest.mark.parametrize("taken_as_it_stands", [True, False])
def test_trailing_delimiters_may_end_a_line_short_of_fields(taken_as_it_stands, tmp_path, monkeypatch):
    # they stand for its last fields, empty: an unweighted read takes the edge, a weighted one
    # refuses the empty weight
    if not taken_as_it_stands:
        monkeypatch.setattr(edgelist, "_uniform_block", lambda *args: None)
    labelled = write_text(tmp_path / "labelled.csv", "0,1,friend\n1,2,\n2,0,colleague\n")
    assert_same_graph(read_graph(labelled, weighted=False), UNWEIGHTED_TRIANGLE)
    weighted = write_text(tmp_path / "weighted.csv", "0,1,0.5\n1,2,\n2,0,2.5\n")
    err = error_of(weighted)
    assert err.line == 2 and "weight '' is not a number" in str(err)
    first = write_text(tmp_path / "first.csv", "0,1,\n1,2,1.5\n2,0,2.5\n")  # the first line's weight empty
    err = error_of(first)
    assert err.line == 1 and "field 3 is empty, where line 2 has 3 fields" in str(err)
    headed = write_text(tmp_path / "headed.csv", "src,dst,weight\n0,1,,\n1,2,1.5\n")
    err = error_of(headed)
    assert err.line == 2 and "field 3 is empty, where line 3 has 3 fields" in str(err)


# (name, file, text); each holds TRIANGLE
INLINE_COMMENTS = [
    ("space", "g.txt", b"0 1 0.5 # first edge\n1 2 1.5# no space before it\n2 0 2.5\n"),
    ("tab", "g.tsv", b"0\t1\t0.5\t# note\n1\t2\t1.5 # a, b\n2\t0\t2.5\t#\n"),
    ("csv", "g.csv", b"0,1,0.5 # x, y\n1,2,1.5\n2,0,2.5,# z\n"),
    ("only-a-comment", "g.tsv", b"0\t1\t0.5\n   # only a comment\n\t # after a tab\n1\t2\t1.5\n2\t0\t2.5\n"),
    ("comma-only-in-comments", "g.txt", b"# from a, b\n0 1 0.5 # first, edge\n1 2 1.5\n2 0 2.5\n"),
    ("header", "g.csv", b"src,dst,weight # names\n0,1,0.5\n1,2,1.5\n2,0,2.5\n"),
    ("tsv-gz", "g.tsv.gz", gzip.compress(b"0\t1\t0.5\t# note\n1\t2\t1.5\n  # only a comment\n2\t0\t2.5\n")),
]


@pytest.mark.parametrize("name, filename, data", INLINE_COMMENTS, ids=[c[0] for c in INLINE_COMMENTS])
@pytest.mark.parametrize("taken_as_it_stands", [True, False])
def test_inline_comments_are_skipped(name, filename, data, taken_as_it_stands, tmp_path, monkeypatch):
    if not taken_as_it_stands:
        monkeypatch.setattr(edgelist, "_uniform_block", lambda *args: None)
    path = tmp_path / filename
    path.write_bytes(data)
    assert_same_graph(read_graph(path), TRIANGLE)


def test_an_unweighted_read_does_not_take_a_comment_for_fields(tmp_path):
    path = write_text(tmp_path / "g.txt", "0 1 # first edge\n1 2 # second\n2 0\n")
    assert_same_graph(read_graph(path, weighted=False), UNWEIGHTED_TRIANGLE)
    commented = write_text(tmp_path / "c.txt", "0 1 x # the edge\n1 2 y # and its tag\n2 0 z\n")
    assert_same_graph(read_graph(commented, weighted=False), UNWEIGHTED_TRIANGLE)


def test_lines_left_blank_by_a_comment_are_counted_as_skipped(tmp_path):
    path = write_text(tmp_path / "g.txt", "# top\n0 1 0.5 # first\n  # only a comment\n1 2 1.5\n2 0 2.5\n")
    assert graph_info(path)["skipped_lines"] == 2


@pytest.mark.parametrize("taken_as_it_stands", [True, False])
@pytest.mark.parametrize("text, line", [
    (b"0\t1\n1\t\t2\n", 2),
    (b"0\t\t1\n", 1),
    (b"0\t1\t0.5\t\n1\t\t1.5\t\n", 2),
    (b"0\t1\t0.5\n1\t \t1.5\t\n", 2),
])
def test_an_empty_field_in_the_middle_is_refused_with_its_line(text, line, taken_as_it_stands, tmp_path, monkeypatch):
    if not taken_as_it_stands:
        monkeypatch.setattr(edgelist, "_uniform_block", lambda *args: None)
    path = tmp_path / "g.tsv"
    path.write_bytes(text)
    err = error_of(path)
    assert err.line == line
    assert "target id ''" in str(err) or "found 3 fields, but line 1 has 2" in str(err)


@pytest.mark.parametrize("chunk_bytes", [_cutter._CHUNK_BYTES, 16])
@pytest.mark.parametrize("taken_as_it_stands", [True, False])
def test_line_numbers_count_lines_with_comments_and_trailing_delimiters(
    chunk_bytes, taken_as_it_stands, tmp_path, monkeypatch
):
    monkeypatch.setattr(_cutter, "_CHUNK_BYTES", chunk_bytes)
    if not taken_as_it_stands:
        monkeypatch.setattr(edgelist, "_uniform_block", lambda *args: None)
    path = tmp_path / "g.txt"
    path.write_bytes(b"# top\n0 1 # first\n   # only a comment\n\n1 2\t# second\n2 3\n1 x # bad\n")
    err = error_of(path)
    assert err.line == 7 and "target id 'x'" in str(err)
    path = tmp_path / "g.tsv"
    path.write_bytes(b"0\t1\t0.5\t\n# c\n1\t2\t1.5\t# two\n\t# none\n2\t0\t-1\t\n")
    err = error_of(path)
    assert err.line == 5 and "negative weight" in str(err)


def test_edge_chunks_of_a_file_with_comments_and_trailing_delimiters(tmp_path):
    data = b"src\tdst\tweight\t\n0\t1\t0.5\t# a\n  # b\n1\t2\t1.5\t\t\n2\t0\t2.5\t\n"
    path = tmp_path / "g.tsv"
    path.write_bytes(data)
    cut = len(data) // 2
    first = readers.read_edge_chunk(path, 0, cut, delimiter=ord("\t"))
    rest = readers.read_edge_chunk(path, cut, None, delimiter=ord("\t"), n_fields=first.n_fields)
    assert first.header and first.n_fields == 3
    assert np.concatenate([first.src, rest.src]).tolist() == [0, 1, 2]
    assert np.concatenate([first.weight, rest.weight]).tolist() == [0.5, 1.5, 2.5]


# ---------------------------------------------------------------- byte-order mark, .gz names
BOM = b"\xef\xbb\xbf"
TRIANGLE_TEXTS = {
    "g.csv": b"src,dst,weight\n0,1,0.5\n1,2,1.5\n2,0,2.5\n",
    "g.txt": b"# a comment\n0 1 0.5\n1 2 1.5\n2 0 2.5\n",
    "g.graph": b"3 3 1\n2 1 3 3\n1 1 3 2\n1 3 2 2\n",
    "g.mtx": MM_GENERAL.encode() + b"3 3 3\n1 2 0.5\n2 3 1.5\n3 1 2.5\n",
}


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("name", TRIANGLE_TEXTS)
def test_a_leading_byte_order_mark_is_skipped(name, compress, tmp_path):
    plain = tmp_path / name
    plain.write_bytes(TRIANGLE_TEXTS[name])
    marked = tmp_path / ("bom-" + name + (".gz" if compress else ""))
    data = BOM + TRIANGLE_TEXTS[name]
    marked.write_bytes(gzip.compress(data) if compress else data)
    assert_same_graph(read_graph(marked), read_graph(plain))


def test_a_byte_order_mark_keeps_line_numbers_and_chunks(tmp_path):
    path = tmp_path / "g.txt"
    path.write_bytes(BOM + b"# a comment\n0 1 1\n1 x 1\n")
    assert error_of(path).line == 3
    path.write_bytes(BOM + b"src dst\n0 1\n1 2\n")
    first = readers.read_edge_chunk(path, 0, 12, delimiter=None)
    rest = readers.read_edge_chunk(path, 12, None, delimiter=None, n_fields=first.n_fields)
    assert first.header and first.src.tolist() == [0] and rest.src.tolist() == [1]


@pytest.mark.parametrize("name", ["g.txt", "g.mtx"])
def test_a_gz_name_on_plain_text_reads_as_plain_text(name, tmp_path):
    plain = tmp_path / name
    plain.write_bytes(TRIANGLE_TEXTS[name])
    named_gz = tmp_path / (name + ".gz")
    named_gz.write_bytes(TRIANGLE_TEXTS[name])
    assert_same_graph(read_graph(named_gz), read_graph(plain))


def _long_matrix_market(final_newline=True) -> bytes:
    lines = [MM_GENERAL.strip(), "60 60 59", *(f"{i} {i + 1} {i}.5" for i in range(1, 60))]
    return "\n".join(lines).encode() + (b"\n" if final_newline else b"")


@pytest.mark.parametrize("final_newline", [True, False])
def test_matrix_market_read_from_a_stream_of_any_length(final_newline, tmp_path):
    # A byte-order mark, or a .gz name on plain text, sends a Matrix Market file to SciPy as a
    # stream; on files of more than about a hundred bytes its reader aborted the process (in a
    # child here, so that a regression fails this test alone).
    text = _long_matrix_market(final_newline)
    (tmp_path / "plain.mtx").write_bytes(text)
    (tmp_path / "marked.mtx").write_bytes(BOM + text)
    (tmp_path / "named.mtx.gz").write_bytes(text)
    (tmp_path / "packed.mtx.gz").write_bytes(gzip.compress(BOM + text))
    script = (
        "import sys, numpy as np\n"
        "from mgmatch.io import read_graph\n"
        "want = read_graph(sys.argv[1] + '/plain.mtx')\n"
        "for name in ('marked.mtx', 'named.mtx.gz', 'packed.mtx.gz'):\n"
        "    got = read_graph(sys.argv[1] + '/' + name)\n"
        "    assert got.n == want.n == 60 and got.m == want.m == 59, name\n"
        "    assert np.array_equal(got.indices, want.indices) and np.array_equal(got.weights, want.weights), name\n"
        "print('same')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "same"


def _zip_of(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("g.txt", data)
    return out.getvalue()


NOT_TEXT = [
    # (how the file was written, its bytes from the UTF-8 text, words in the message)
    ("utf-16", lambda t: t.decode().encode("utf-16"), "UTF-16 text"),
    ("utf-16-be", lambda t: b"\xfe\xff" + t.decode().encode("utf-16-be"), "UTF-16 text (big-endian"),
    ("utf-32", lambda t: t.decode().encode("utf-32"), "UTF-32 text"),
    ("bzip2", bz2.compress, "bzip2-compressed"),
    ("xz", lzma.compress, "xz-compressed"),
    ("zstd", lambda t: b"\x28\xb5\x2f\xfd" + t, "zstd-compressed"),
    ("zip", _zip_of, "a zip archive"),
    ("gzip-of-bzip2", lambda t: gzip.compress(bz2.compress(t)), "bzip2-compressed"),
]


@pytest.mark.parametrize("name", TRIANGLE_TEXTS)
@pytest.mark.parametrize("how, encode, words", NOT_TEXT, ids=[c[0] for c in NOT_TEXT])
def test_text_formats_refuse_other_encodings_and_compression(name, how, encode, words, tmp_path):
    path = tmp_path / name
    path.write_bytes(encode(TRIANGLE_TEXTS[name]))
    assert words in str(error_of(path))


# --------------------------------------------------------------------------- bad input
BAD_TEXT = [
    # (name, file, text, expected line, words in the message)
    ("mm-header", "h.mtx", "%%MatrixMarket matrix coordinat real general\n3 3 1\n1 2 1\n", 1, "header"),
    ("mm-banner", "b.mtx", "3 3 1\n1 2 1\n", 1, "banner"),
    ("mm-truncated", "t.mtx", MM_GENERAL + "3 3 3\n1 2 1.0\n2 3 2.0\n", None, "ends early"),
    ("mm-non-numeric", "n.mtx", MM_GENERAL + "3 3 2\n1 2 1.0\n2 x 2.0\n", 4, "integer"),
    ("mm-row-out-of-range", "r.mtx", MM_GENERAL + "3 3 2\n1 2 1.0\n4 2 2.0\n", 4, "3 x 3"),
    ("mm-column-out-of-range", "c.mtx", MM_GENERAL + "3 3 2\n1 2 1.0\n2 4 2.0\n", 4, "out of bounds"),
    ("mm-zero-id", "z.mtx", MM_GENERAL + "3 3 1\n0 2 1.0\n", 3, "ids start at 1"),
    ("mm-too-many-lines", "l.mtx", MM_GENERAL + "3 3 1\n1 2 1.0\n2 3 1.0\n", 4, "too many lines"),
    ("mm-nan", "nan.mtx", MM_GENERAL + "3 3 1\n1 2 nan\n", None, "entry (1, 2)"),
    ("el-non-numeric", "a.txt", "0 1\n1 two\n", 2, "'two'"),
    ("el-float-id", "f.csv", "0,1\n1.5,2\n", 2, "'1.5'"),
    ("el-one-column", "o.txt", "# c\n0\n1\n", 2, "1 field"),
    ("el-four-columns", "four.tsv", "0\t1\t1.0\t7\n", 1, "4 fields"),
    ("el-mixed-columns", "m.txt", "0 1\n1 2\n2 3 0.5\n", 3, "line 1 has 2"),
    ("el-truncated-last-line", "t.txt", "0 1 1.0\n1 2 1.0\n2", 3, "1 field"),
    ("el-negative-id", "neg.csv", "0,1\n-3,2\n", 2, "negative"),
    ("el-nan-weight", "w.txt", "0 1 1.0\n1 2 NaN\n", 2, "finite"),
    ("el-bad-weight", "bw.txt", "0 1 1.0\n1 2 heavy\n", 2, "'heavy'"),
    ("el-negative-weight", "nw.txt", "0 1 1.0\n1 2 -2\n", 2, "negative='abs'"),
    ("el-empty-field", "e.csv", "0,1,2.0\n1,,2.0\n", 2, "target id ''"),
    ("el-only-comments", "c.txt", "# nothing\n% here\n\n", None, "no edges"),
    ("el-header-only", "h.csv", "src,dst,weight\n", None, "no edges"),
    ("el-huge-id", "big.txt", "0 1\n1 99999999999999999999\n", 2, "not a vertex id"),
    ("el-space-inside-csv-field", "s.csv", "0,1\n1 2,3\n", 2, "'1 2'"),
    ("metis-m-mismatch", "m.graph", "3 3\n2\n1 3\n2\n", 1, "m=3, so 6 adjacency entries"),
    ("metis-one-sided", "o.graph", "3 2\n2\n1 3\n\n", 1, "vertex 2 lists 3, but vertex 3 does not list 2"),
    ("metis-self-loop", "s.graph", "3 2\n2\n1 2 3\n2\n", 1, "vertex 2 lists itself"),
    ("mm-vector", "v.mtx", "%%MatrixMarket vector coordinate real general\n3 2\n1 1.0\n2 1.0\n", 1, "'vector' object"),
    ("metis-out-of-range", "r.graph", "% c\n3 2\n2\n1 4\n2\n", 4, "outside 1..3"),
    ("metis-zero-id", "z.graph", "3 2\n2\n0 3\n2\n", 3, "outside 1..3"),
    ("metis-non-numeric", "n.graph", "3 2\n2\n1 x\n2\n", 3, "'x'"),
    ("metis-too-few-lines", "f.graph", "3 2\n2\n1 3\n", None, "only 2 vertex lines"),
    ("metis-too-many-lines", "t.graph", "2 1\n2\n1\n1\n", 4, "n=2"),
    ("metis-bad-header", "h.graph", "3 two\n", 1, "header"),
    ("metis-bad-fmt", "fmt.graph", "3 2 12\n2\n1 3\n2\n", 1, "fmt"),
    ("metis-not-symmetric", "a.graph", "3 2\n2\n3\n1 2\n", 1, "both ends"),
    ("metis-not-symmetric-named", "a2.graph", "3 2\n2\n3\n1 2\n", 1, "vertex 1 lists 2, but vertex 2 does not list 1"),
    ("metis-unpaired-weight", "p.graph", "3 2 1\n2 5\n1 5 3\n2 5\n", 3, "pairs"),
    ("metis-only-comments", "c.graph", "% nothing\n", None, "header"),
]


@pytest.mark.parametrize("name, filename, text, line, words", BAD_TEXT, ids=[b[0] for b in BAD_TEXT])
def test_bad_text_input(name, filename, text, line, words, tmp_path):
    err = error_of(write_text(tmp_path / filename, text))
    assert err.line == line
    assert words in str(err)


def test_non_utf8_bytes_in_an_edge_list(tmp_path):
    path = tmp_path / "u.txt"
    path.write_bytes(b"# caf\xc3\xa9 comments are fine\n0 1\n1 \xff\xfe\n")
    err = error_of(path)
    assert err.line == 3


@pytest.mark.parametrize("name", ["g.mtx", "g.csv", "g.graph", "g.parquet", "g.npz"])
def test_empty_file(name, tmp_path):
    path = tmp_path / name
    path.write_bytes(b"")
    assert "empty" in str(error_of(path))


def test_compressed_empty_edge_list(tmp_path):
    path = tmp_path / "g.csv.gz"
    path.write_bytes(gzip.compress(b""))
    assert "empty" in str(error_of(path))


def test_missing_file_and_directory(tmp_path):
    assert "no such file" in str(error_of(tmp_path / "absent.mtx"))
    folder = tmp_path / "folder.mtx"
    folder.mkdir()
    assert "directory" in str(error_of(folder))


def _fifo_fed(tmp_path, data: bytes, name="pipe"):
    """A named pipe that a thread writes ``data`` into once a reader opens it."""
    import os
    import threading

    fifo = tmp_path / name
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as w:
            w.write(data)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return fifo, thread


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize(("fmt", "data"), [
    ("edgelist", b"# a comment\n0 1 2.5\n1 2 1.0\n2 0 4.0\n2 3 1.5\n"),
    ("mtx", b"%%MatrixMarket matrix coordinate real symmetric\n4 4 3\n2 1 2.5\n3 2 1.0\n4 3 1.5\n"),
])
def test_read_graph_from_a_pipe(tmp_path, fmt, data):
    # a pipe cannot be sized, sought or reopened: it is read once into a temporary copy
    plain = tmp_path / f"g.{'txt' if fmt == 'edgelist' else 'mtx'}"
    plain.write_bytes(data)
    fifo, thread = _fifo_fed(tmp_path, gzip.compress(data) if fmt == "mtx" else data)
    g, want = read_graph(fifo, fmt), read_graph(plain)
    thread.join(5)
    np.testing.assert_array_equal(g.indptr, want.indptr)
    np.testing.assert_array_equal(g.indices, want.indices)
    np.testing.assert_array_equal(g.weights, want.weights)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs named pipes")
def test_errors_reading_a_pipe_name_the_pipe(tmp_path, monkeypatch):
    import tempfile

    spools = tmp_path / "spools"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    fifo, thread = _fifo_fed(tmp_path, b"0 1\n1 x\n")
    err = error_of(fifo, format="edgelist")
    thread.join(5)
    assert err.line == 2 and str(spools) not in str(err)
    fifo, thread = _fifo_fed(tmp_path, b"", name="empty")
    assert "empty" in str(error_of(fifo, format="edgelist"))
    thread.join(5)
    assert not list(spools.iterdir())  # the copies are gone


def test_unreadable_file(tmp_path, monkeypatch):
    path = write_text(tmp_path / "g.csv", "0,1\n")
    monkeypatch.setattr(readers.os, "access", lambda *args: False)
    assert "permission" in str(error_of(path))


def test_unknown_suffix(tmp_path):
    err = error_of(write_text(tmp_path / "g.xyz", "0 1\n"))
    assert "suffix" in str(err) and ".mtx" in str(err)
    assert "suffix" in str(error_of(write_text(tmp_path / "g.parquet.gz", "0 1\n")))


def test_truncated_gzip(tmp_path, karate_weighted):
    path, _ = _write_in("mtx-gz", tmp_path, karate_weighted)
    path.write_bytes(path.read_bytes()[:200])
    error_of(path)
    edges, _ = _write_in("el-gz", tmp_path, karate_weighted)
    edges.write_bytes(edges.read_bytes()[:100])
    assert "truncated" in str(error_of(edges))


def test_parquet_missing_column(tmp_path):
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"source": [0, 1], "weight": [1.0, 2.0]}), path)
    err = error_of(path)
    assert "'src', 'dst'" in str(err) and "source" in str(err)


def test_parquet_bad_values(tmp_path):
    nulls = tmp_path / "n.parquet"
    pq.write_table(pa.table({"src": [0, None, 2], "dst": [1, 2, 0]}), nulls)
    assert "missing values" in str(error_of(nulls))
    text = tmp_path / "t.parquet"
    pq.write_table(pa.table({"src": ["a", "b"], "dst": [1, 2]}), text)
    assert "integers" in str(error_of(text))
    nan = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "weight": [1.0, float("nan")]}), nan)
    assert "finite" in str(error_of(nan))
    empty = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": pa.array([], pa.int64()), "dst": pa.array([], pa.int64())}), empty)
    assert "no edges" in str(error_of(empty))


def test_parquet_weights_under_another_name_are_not_dropped(tmp_path):
    path = tmp_path / "w.parquet"
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "w": [1.5, 2.5], "label": ["a", "b"]}), path)
    err = error_of(path)
    assert "no column 'weight', and the column 'w' is not read" in str(err) and "label" not in str(err)
    assert "--unweighted on the command line, weighted=False in Python" in str(err)
    with pytest.raises(InputError, match="'w'"):
        readers.read_parquet_row_groups(path, [0])
    assert not read_graph(path, weighted=False).weighted
    assert readers.read_parquet_row_groups(path, [0], weighted=False).weight is None
    labelled = tmp_path / "l.parquet"
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2], "label": ["a", "b"]}), labelled)
    assert read_graph(labelled).m == 2


def test_parquet_uint64_ids_beyond_int64_are_named_as_they_are(tmp_path):
    path = tmp_path / "u.parquet"
    ids = pa.array([1, 2**63 + 5], pa.uint64())
    pq.write_table(pa.table({"src": pa.array([0, 1], pa.uint64()), "dst": ids}), path)
    want = "destination id 9223372036854775813 (entry 1) is too large"
    assert want in str(error_of(path))
    with pytest.raises(InputError, match=want.replace("(", r"\(").replace(")", r"\)")):
        readers.read_parquet_row_groups(path, [0])


def test_not_really_parquet_or_npz(tmp_path):
    error_of(write_text(tmp_path / "g.parquet", "0,1\n"))
    error_of(write_text(tmp_path / "g.npz", "0,1\n"))


def test_npz_problems(tmp_path):
    wrong = tmp_path / "w.npz"
    np.savez(wrong, a=np.arange(3))
    assert "'src', 'dst'" in str(error_of(wrong))
    out_of_range = tmp_path / "r.npz"
    np.savez(out_of_range, src=np.array([0, 5]), dst=np.array([1, 2]), n=np.int64(3))
    assert "outside" in str(error_of(out_of_range))
    isolated = tmp_path / "i.npz"
    np.savez(isolated, src=np.array([], np.int64), dst=np.array([], np.int64), n=np.int64(4))
    assert read_graph(isolated).n == 4
    float_ids = tmp_path / "f.npz"
    np.savez(float_ids, src=np.array([0.5, 1.0]), dst=np.array([1.0, 2.0]))
    assert "source id 0.5 (entry 0) is not an integer" in str(error_of(float_ids))


@pytest.mark.parametrize("indices, indptr, needle", [
    ([1, 0], [0, 5, 2], "non-decreasing"),  # offsets that fall (and overrun)
    ([1, 7], [0, 1, 2], "indices must be < 2"),  # a column outside the shape
])
def test_npz_sparse_matrix_that_is_not_well_formed_is_refused(tmp_path, indices, indptr, needle):
    # scipy.sparse.load_npz builds the matrix from the saved arrays as they are
    path = tmp_path / "m.npz"
    np.savez(path, format="csr", shape=np.array([2, 2]), data=np.array([1.0, 1.0]), indices=np.array(indices),
             indptr=np.array(indptr))
    err = str(error_of(path))
    assert "not well formed" in err and needle in err


def test_npz_vertex_count_bounds_a_bipartite_read(tmp_path):
    # n vertices read as rows x columns: an n x n matrix, as the undirected read bounds its ids
    path = tmp_path / "b.npz"
    np.savez(path, src=np.array([0, 1]), dst=np.array([1, 5]), n=np.int64(3))
    assert "outside the 3 x 3 shape" in str(error_of(path, bipartite=True))
    np.savez(path, src=np.array([0, 1]), dst=np.array([1, 2]), n=np.int64(4))
    assert read_graph(path, bipartite=True).shape == (4, 4)


def test_npz_holding_one_array_is_refused(tmp_path):
    path = tmp_path / "one.npz"
    with open(path, "wb") as fh:
        np.save(fh, np.arange(4))
    err = error_of(path)
    assert ".npy content" in str(err) and "src, dst" in str(err)


def test_npz_weights_under_another_name_are_not_dropped(tmp_path):
    path = tmp_path / "w.npz"
    np.savez(path, src=np.array([0, 1]), dst=np.array([1, 2]), weights=np.array([1.5, 2.5]), n=np.int64(3))
    assert "no array 'weight', and the array 'weights' is not read" in str(error_of(path))
    assert not read_graph(path, weighted=False).weighted


def test_metis_vertex_sizes_and_weights_are_skipped(tmp_path):
    # fmt 111 with ncon 2: size, two vertex weights, then (neighbour, edge weight) pairs.
    path = write_text(tmp_path / "w.graph", "3 2 111 2\n1 5 6 2 4\n1 5 6 1 4 3 7\n1 5 6 2 7\n")
    g = read_graph(path)
    assert g.weighted and g.neighbours(1)[1].tolist() == [4.0, 7.0]
    assert "before the neighbours" in str(error_of(write_text(tmp_path / "s.graph", "1 0 11\n\n")))


def test_metis_without_edges_and_bipartite_cover(tmp_path):
    g = read_graph(write_text(tmp_path / "i.graph", "3 0\n\n\n\n"))
    assert (g.n, g.m) == (3, 0)
    cover = read_graph(write_text(tmp_path / "p.graph", "2 1\n2\n1\n"), bipartite=True)
    assert cover.bipartite and cover.shape == (2, 2) and cover.m == 2


def test_parameter_errors(tmp_path):
    path = write_text(tmp_path / "g.csv", "0,1\n")
    with pytest.raises(ParameterError, match="unknown option"):
        read_graph(path, n=3)
    with pytest.raises(ParameterError, match="format"):
        read_graph(path, format="graphml")
    with pytest.raises(ParameterError, match="duplicates"):
        read_graph(path, duplicates="mean")


def test_suffixes_describe_every_reader():
    assert set(readers._FORMAT_OF_SUFFIX) == set(SUFFIXES)


# ------------------------------------------------------------------------------ writers
def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "deep" / "out.parquet"
    with pytest.raises(RuntimeError), atomic_path(target) as partial:
        partial.write_bytes(b"half a file")
        raise RuntimeError("crash in the middle")
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "m.parquet"
    write_table(target, {"mate": np.array([1, 0])})
    before = target.read_bytes()

    def half_write(table, where, **_):
        where.write(b"PAR1 partial")  # (the file mgmatch opened)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", half_write)
    with pytest.raises(ResourceError, match="No space left"):
        write_table(target, {"mate": np.array([0, 1])})
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.parquet"]


@pytest.mark.parametrize("name", ["m.parquet", "m.pq", "m.csv", "m.tsv"])
def test_table_round_trip(name, tmp_path):
    columns = {
        "vertex": np.arange(4, dtype=np.int64),
        "mate": np.array([2, -1, 0, -1], dtype=np.int64),
        "weight": np.array([2.0, 0.0, 0.1, 1e-300]),
    }
    back = read_table(write_table(tmp_path / "out" / name, columns))
    assert list(back) == list(columns)
    for key, values in columns.items():
        assert back[key].dtype == values.dtype
        np.testing.assert_array_equal(back[key], values)


def test_parquet_keeps_narrow_dtypes(tmp_path):
    columns = {"mate": np.array([1, 0], dtype=np.int32), "w": np.array([0.5, 1.5], dtype=np.float32)}
    back = read_table(write_table(tmp_path / "m.parquet", columns))
    assert back["mate"].dtype == np.int32 and back["w"].dtype == np.float32


def test_table_writer_errors(tmp_path):
    with pytest.raises(ParameterError, match="suffix"):
        write_table(tmp_path / "m.xlsx", {"a": np.arange(2)})
    with pytest.raises(ParameterError, match="differ in length"):
        write_table(tmp_path / "m.csv", {"a": np.arange(2), "b": np.arange(3)})
    with pytest.raises(ParameterError, match="1-D"):
        write_table(tmp_path / "m.csv", {"a": np.zeros((2, 2))})
    assert not any(tmp_path.iterdir())


def test_read_table_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_table(tmp_path / "absent.parquet")
    empty = tmp_path / "e.csv"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        read_table(empty)
    holes = write_text(tmp_path / "h.csv", "a,b\n1,\n2,3\n")
    with pytest.raises(InputError, match="missing values"):
        read_table(holes)
    with pytest.raises(InputError, match="cannot read"):
        read_table(write_text(tmp_path / "x.parquet", "not parquet"))


def test_write_json_converts_numpy(tmp_path):
    summary = {
        "cardinality": np.int64(13),
        "weight": np.float32(2.5),
        "mate": np.array([1, 0, -1]),
        "converged": np.bool_(True),
        "modularity": float("nan"),
        "path": tmp_path / "m.parquet",
        np.int64(3): "an integer key",
    }
    out = write_json(tmp_path / "run" / "m.json", summary)
    back = json.loads(out.read_text())
    assert back == {
        "cardinality": 13, "weight": 2.5, "mate": [1, 0, -1], "converged": True,
        "modularity": None, "path": str(tmp_path / "m.parquet"), "3": "an integer key",
    }
    assert out.read_text().startswith('{\n  "cardinality": 13')


def test_summary_path_for():
    assert summary_path_for(Path("out") / "m.parquet") == Path("out") / "m.json"
    assert summary_path_for("m.tsv") == Path("m.json")


def test_files_in_tests_data_are_documented(data_dir):
    readme = (data_dir / "README.md").read_text()
    for path in data_dir.iterdir():
        if path.name != "README.md":
            assert path.name in readme, f"{path.name} lacks provenance in tests/data/README.md"



# ------------------------------------------------------- matrices built without a full sort
def _canonical_matrix(rng, n_rows, n_cols, *, symmetric, kind):
    """A SciPy CSR matrix with sorted, distinct columns: random entries with self-loops, explicit
    zeros and negative values, mirrored into a symmetric one when asked."""
    import scipy.sparse as sp

    k = 4 * max(n_rows, n_cols)
    r, c = rng.integers(0, n_rows, k), rng.integers(0, n_cols, k)
    w = rng.choice([0.0, 1.5, -2.0, 3.25, 0.5], k)
    if kind == "int":
        w = np.round(w * 4).astype(np.int64)
    if symmetric:
        r, c, w = np.concatenate([r, c]), np.concatenate([c, r]), np.concatenate([w, -w if kind == "skew" else w])
    return sp.csr_array((w, (r, c)), shape=(n_rows, n_cols))


@pytest.mark.parametrize("duplicates", ["max", "sum", "min", "first"])
@pytest.mark.parametrize("zeros", ["keep", "drop"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape,symmetric,kind", [
    ((40, 40), True, "real"), ((40, 40), True, "skew"), ((40, 40), True, "int"), ((40, 40), False, "real"),
    ((30, 50), False, "real"), ((1, 1), True, "real"),
])
@pytest.mark.parametrize("weighted", [True, False])
def test_graph_from_a_matrix_equals_the_edge_build(duplicates, zeros, dtype, shape, symmetric, kind, weighted):
    # the reader builds a bipartite or symmetric matrix's graph from the CSR itself; the graph
    # and its summary must be those that Graph.from_scipy (every entry sorted and merged) gives
    import scipy.sparse as sp

    rng = np.random.default_rng(hash((duplicates, zeros, dtype, shape, symmetric, kind, weighted)) % 2**32)
    csr = _canonical_matrix(rng, *shape, symmetric=symmetric, kind=kind)
    canon = dict(duplicates=duplicates, zeros=zeros, dtype=dtype, negative="abs")
    req = readers._Request("m.mtx", None, None, True, canon)
    bipartite = shape[0] != shape[1]
    for told in (False, True) if symmetric else (False,):
        graph, _ = matrix_market._graph_from_matrix(csr, req, weighted=weighted, base=1, symmetric=told)
        # a symmetric file's mirror is the format's, one entry with a_ij: merged as equals, never
        # summed (the summary still names the rule asked for)
        rule = "max" if told and duplicates == "sum" else duplicates
        expect = Graph.from_scipy(sp.coo_array(csr), bipartite=bipartite, weighted=weighted,
                                  **{**canon, "duplicates": rule})
        expect.summary.duplicate_rule = duplicates
        assert graph.summary.as_dict() == expect.summary.as_dict()
        assert (graph.n_rows, graph.n_cols, graph.bipartite, graph.weighted) == (
            expect.n_rows, expect.n_cols, expect.bipartite, expect.weighted)
        for name in ("indptr", "indices", "weights"):
            got, want = getattr(graph, name), getattr(expect, name)
            assert got.dtype == want.dtype and np.array_equal(got, want), name


def test_graph_from_a_general_matrix_refuses_an_overflowing_sum():
    # a general matrix's a_ij and a_ji are two entries, summed under duplicates="sum"; a
    # symmetric file's mirror is not a second entry
    import scipy.sparse as sp

    csr = sp.csr_array(([1e308, 1e308], ([0, 1], [1, 0])), shape=(2, 2))
    req = readers._Request("m.mtx", None, None, True, {"duplicates": "sum"})
    with pytest.raises(InputError, match=r"edge \(0, 1\) overflows: merging its entries gives inf"):
        matrix_market._graph_from_matrix(csr, req, weighted=True, base=1, symmetric=False)
    csr = sp.csr_array(([8e307, 8e307], ([0, 1], [1, 0])), shape=(2, 2))
    graph, _ = matrix_market._graph_from_matrix(csr, req, weighted=True, base=1, symmetric=True)
    assert graph.weights.tolist() == [8e307, 8e307]


@pytest.mark.parametrize("duplicates", ["max", "sum", "min", "first"])
def test_a_format_implied_mirror_is_not_summed(tmp_path, duplicates):
    # a symmetric Matrix Market file stores one triangle and a METIS file lists every edge from
    # both ends: each edge has the file's weight under every duplicate rule; a general file
    # that stores a_ij and a_ji sums them under "sum"
    sym = write_text(tmp_path / "s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 1.5\n3 2 4\n")
    metis = write_text(tmp_path / "s.graph", "3 2 1\n2 3\n1 3 3 8\n2 8\n")
    gen = write_text(tmp_path / "g.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n2 1 1.5\n1 2 1.5\n")
    assert read_graph(sym, duplicates=duplicates).to_scipy().toarray().tolist() == [
        [0, 1.5, 0], [1.5, 0, 4], [0, 4, 0]]
    assert read_graph(metis, duplicates=duplicates).to_scipy().toarray().tolist() == [
        [0, 3, 0], [3, 0, 8], [0, 8, 0]]
    both = 3.0 if duplicates == "sum" else 1.5
    assert read_graph(gen, duplicates=duplicates).to_scipy().toarray()[0, 1] == both
    again = read_graph(sym, duplicates=duplicates, random_weights=4)  # (the edge build's path)
    assert again.m == 2 and again.summary.duplicate_rule == duplicates


@pytest.mark.parametrize("duplicates", ["max", "sum", "first"])
@pytest.mark.parametrize("zeros", ["keep", "drop"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layout", ["undirected", "undirected-n", "bipartite", "bipartite-shape"])
@pytest.mark.parametrize("repeats", [False, True])
@pytest.mark.parametrize("weighted", [True, False])
def test_graph_from_edge_arrays_equals_the_edge_build(duplicates, zeros, dtype, layout, repeats, weighted):
    # edge arrays that repeat no edge are built through SciPy's CSR conversion; the graph and its
    # summary must be those Graph.from_edges gives (which sorts and merges every entry)
    from mgmatch.io._build import graph_from_edge_arrays

    rng = np.random.default_rng(hash((duplicates, zeros, dtype, layout, repeats, weighted)) % 2**32)
    keys = rng.choice(60 * 60, 300, replace=False)  # distinct (src, dst): loops, but no repeat...
    src, dst = keys // 60, keys % 60
    if not layout.startswith("bipartite"):
        keep = ~np.isin(dst * 60 + src, keys) | (src == dst)  # ...nor a mirrored pair
        src, dst = src[keep], dst[keep]
    if repeats:  # edges given twice; for an undirected graph, in both directions too
        mirrored = not layout.startswith("bipartite")
        src, dst = (np.concatenate([src, src[:3], dst[3:6] if mirrored else src[3:6]]),
                    np.concatenate([dst, dst[:3], src[3:6] if mirrored else dst[3:6]]))
    weight = rng.choice([0.0, 1.5, -2.0, 3.25], src.size) if weighted else None
    canon = dict(duplicates=duplicates, zeros=zeros, dtype=dtype, negative="abs")
    shape = {"undirected-n": dict(n=70), "bipartite": dict(bipartite=True),
             "bipartite-shape": dict(bipartite=True, shape=(65, 61))}.get(layout, {})
    graph = graph_from_edge_arrays(src, dst, weight, canon, "e.csv", **shape)
    expect = Graph.from_edges(src, dst, weight, **shape, **canon)
    if repeats:
        assert graph is None  # left to from_edges, which merges by the rule
        return
    assert graph.summary.as_dict() == expect.summary.as_dict()
    assert (graph.n_rows, graph.n_cols, graph.bipartite, graph.weighted) == (
        expect.n_rows, expect.n_cols, expect.bipartite, expect.weighted)
    for name in ("indptr", "indices", "weights"):
        got, want = getattr(graph, name), getattr(expect, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name


@pytest.mark.parametrize("canon", [{}, {"duplicates": "sum"}, {"zeros": "drop"}, {"dtype": "float32"}])
def test_metis_lists_build_the_graph_from_edges_builds(tmp_path, data_dir, canon):
    # adjacency lists that give each edge from both ends are laid out as the symmetric matrix they
    # are; the graph and its canonicalisation summary are those of the full merge of from_edges
    rng = np.random.default_rng(5)
    g0 = read_graph(data_dir / "4elt.graph")
    u, v, _ = g0.edges()
    u, v = np.asarray(u), np.asarray(v)
    w = rng.integers(0, 4, u.size).astype(float)  # zeros among them
    adj = [[] for _ in range(g0.n)]
    for a, b, x in zip(u.tolist(), v.tolist(), w.tolist()):
        adj[a].append((b, x))
        adj[b].append((a, x))
    lines = [f"{g0.n} {u.size} 001"] + [" ".join(f"{b + 1} {x:g}" for b, x in reversed(row)) for row in adj]
    path = write_text(tmp_path / "w.graph", "\n".join(lines) + "\n")
    got = read_graph(path, **canon)
    src = np.concatenate([u, v])
    dst = np.concatenate([v, u])
    # (the two listings of an edge are one edge of the file: merged as equals under every rule)
    want = Graph.from_edges(src, dst, np.concatenate([w, w]), n=g0.n, **{**canon, "duplicates": "max"})
    want.summary.duplicate_rule = canon.get("duplicates", "max")
    assert_same_graph(got, want)
    assert got.summary.as_dict() == want.summary.as_dict()


def test_metis_lists_that_break_the_form_are_still_named(tmp_path):
    # a repeated entry, a self-loop, an edge listed from one end, an edge with two weights
    assert "vertex 1 lists 2 twice" in str(error_of(write_text(tmp_path / "r.graph", "2 2\n2 2\n1 1\n")))
    assert "vertex 1 lists 2 twice" in str(error_of(write_text(tmp_path / "r2.graph", "3 1\n2 2\n\n\n")))
    assert "vertex 1 lists 2 with weight 1, but vertex 2 lists 1 with weight 5" in str(error_of(
        write_text(tmp_path / "w.graph", "3 2 1\n2 1\n1 5 3 2\n2 2\n")))
    assert "lists itself" in str(error_of(write_text(tmp_path / "l.graph", "2 1\n1 2\n1\n")))
    assert "does not list" in str(error_of(write_text(tmp_path / "u.graph", "3 2\n2 3\n1\n\n")))


@pytest.mark.parametrize("header,body,words", [
    # a dense symmetric matrix that is not square: SciPy's reader wrote past its array
    ("array real symmetric\n2 3", "0\n1\n1\n0\n0\n0\n", "a symmetric matrix is square, but the header declares 2 rows"),
    ("array real skew-symmetric\n2 4", "1\n2\n3\n4\n5\n", "a skew-symmetric matrix is square"),
    ("coordinate real symmetric\n4 5 1", "2 1 1\n", "a symmetric matrix is square"),
    ("coordinate real hermitian\n3 3 1", "2 1 1\n", "a hermitian matrix has complex values"),
    ("coordinate pattern hermitian\n3 3 1", "2 1\n", "a hermitian matrix has complex values"),
    ("coordinate pattern skew-symmetric\n3 3 1", "2 1\n", "a skew-symmetric matrix has values"),
    # a symmetric file that stores both triangles would double every such weight
    ("coordinate real symmetric\n3 3 3", "2 1 2\n1 2 2\n3 1 1\n", r"entries \(2, 1\) and \(1, 2\) are both stored"),
    ("coordinate integer skew-symmetric\n3 3 2", "1 3 -2\n3 1 2\n", r"entries \(3, 1\) and \(1, 3\) are both"),
])
def test_matrix_market_headers_the_format_does_not_allow(tmp_path, header, body, words):
    path = write_text(tmp_path / "m.mtx", f"%%MatrixMarket matrix {header}\n{body}")
    assert re.search(words, str(error_of(path, negative="abs")))


def test_matrix_market_one_triangle_either_side_is_read(tmp_path):
    # one triangle, stored above or below the diagonal (or a mix of distinct pairs), is the file
    lower = write_text(tmp_path / "l.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 2\n3 1 1\n")
    upper = write_text(tmp_path / "u.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 2 2\n1 3 1\n")
    mixed = write_text(tmp_path / "x.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 2\n1 3 1\n")
    want = [[0, 2, 1], [2, 0, 0], [1, 0, 0]]
    for path in (lower, upper, mixed):
        assert read_graph(path).to_scipy().toarray().tolist() == want


def test_parquet_unsigned_ids_past_int64_are_refused(tmp_path):
    # they used to wrap to negative ids, renumbered as labels, and came out as other numbers
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "u.parquet"
    pq.write_table(pa.table({"src": pa.array([0, 5], pa.uint64()), "dst": pa.array([2**64 - 1, 6], pa.uint64())}),
                   path)
    assert "destination id 18446744073709551615 (entry 0) is too large" in str(error_of(path))
    pq.write_table(pa.table({"src": pa.array([0, 5], pa.uint64()), "dst": pa.array([2**63 - 1, 6], pa.uint64())}),
                   path)
    from mgmatch.io import read_input

    got = read_input(path)
    assert got.renumbered and got.graph.m == 2 and got.vertices.ids.tolist() == [0, 5, 6, 2**63 - 1]


@pytest.mark.parametrize("suffix, what", [(".bz2", "bzip2-compressed"), (".xz", "xz-compressed"),
                                          (".zip", "a zip archive")])
def test_a_suffix_of_other_compression_is_named(tmp_path, suffix, what):
    # the README promises these are refused with a message that says so, also by their name
    path = tmp_path / f"g.mtx{suffix}"
    path.write_bytes(b"not read")
    assert f"is {what} (by its suffix '{suffix}'), and only gzip is read" in str(error_of(path))


def test_a_number_past_float64_is_named_as_such(tmp_path):
    # 1e309 is a number in the file, read as infinite: the message says why it is refused
    path = write_text(tmp_path / "o.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1e309\n")
    assert "beyond float64's range" in str(error_of(path))


def test_a_short_size_line_is_named(tmp_path):
    path = write_text(tmp_path / "s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n4 4\n2 1 1\n")
    assert "invalid integer value in the size line" in str(error_of(path))


@pytest.mark.parametrize("name, text", [("c.csv", "0,1,2\r1,2,3\r"), ("c.graph", "3 2\r2\r1 3\r2\r"),
                                        ("c.mtx", "%%MatrixMarket matrix coordinate real general\r2 2 1\r1 2 3\r")])
def test_lines_ended_by_a_carriage_return_alone_are_named(tmp_path, name, text):
    # they failed on a field count or a premature end, never naming the line ends
    path = tmp_path / name
    path.write_bytes(text.encode())
    assert "carriage return alone" in str(error_of(path))
    path.write_bytes(text.replace("\r", "\r\n").encode())  # CR LF is read
    assert read_graph(path).m >= 1


@pytest.mark.parametrize("slice_entries", [1, 7, 1 << 22])
def test_one_triangle_check_in_slices(tmp_path, slice_entries):
    # the check of SciPy's order goes a slice at a time; every slice size tells the same
    import scipy.io
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    n = 300
    r, c = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    key = np.unique((r * n + c)[r >= c])  # (diagonal entries too)
    r, c = key // n, key % n
    lines = "".join(f"{a + 1} {b + 1} 1\n" for a, b in zip(r, c))
    off = int(np.flatnonzero(r > c)[5])
    for extra, refused in (("", False), (f"{c[off] + 1} {r[off] + 1} 1\n", True)):
        path = write_text(tmp_path / "s.mtx", f"%%MatrixMarket matrix coordinate real symmetric\n{n} {n} "
                                              f"{r.size + bool(extra)}\n{lines}{extra}")
        coo = sp.coo_array(scipy.io.mmread(path, spmatrix=False))
        if refused:
            with pytest.raises(InputError, match=rf"entries \({r[off] + 1}, {c[off] + 1}\) and"):
                matrix_market._check_one_triangle(coo, r.size + 1, 1, path, slice_entries=slice_entries)
        else:
            matrix_market._check_one_triangle(coo, r.size, 1, path, slice_entries=slice_entries)
