"""``mgmatch bench --family io``: the readers and the library routes give rows on the same files
(a smoke test of the benchmark, not a timed test)."""

import json

import numpy as np
import pytest

from mgmatch.bench import io as bench_io
from mgmatch.cli import main
from mgmatch.errors import ParameterError
from mgmatch.io import read_graph


@pytest.fixture
def runner():
    from click.testing import CliRunner

    return CliRunner()


def test_bench_io_writes_rows_side_by_side(runner, tmp_path):
    # three of the formats, each read in a fresh process per route (all five: the next test)
    pytest.importorskip("networkx")
    out = tmp_path / "bench.json"
    res = runner.invoke(main, ["bench", "--family", "io", "--quick", "--repeats", "1", "--graphs", "parquet;metis;gml",
                               "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = json.loads(out.read_text())["rows"]
    assert [r["graph"].split(":")[0] for r in rows if r["impl"] == "mgmatch read_graph"] == ["parquet", "metis", "gml"]
    for fmt in ("parquet", "metis", "gml"):
        mine = [r for r in rows if r["graph"].startswith(f"{fmt}:")]
        ours = [r for r in mine if r["impl"] == "mgmatch read_graph"]
        library = [r for r in mine if r["impl"] != "mgmatch read_graph"]
        assert len(ours) == 1 and library
        # every route read the same graph: the same stored entries of the symmetric CSR
        assert {r["nnz"] for r in mine} == {ours[0]["nnz"]} == {2 * int(ours[0]["graph"].split("=")[1])}
        assert ours[0]["ratio_vs"] in {r["impl"] for r in library}
        for r in mine:
            assert len(r["times_s"]) == 1 and r["time_s"] > 0 and r["peak_bytes"] >= 0
    sizes = {r["graph"] for r in rows if r["graph"].startswith("gml:")}
    assert sizes == {f"gml:edges={bench_io.QUICK_GML_EDGES}"}  # GML's library route parses in Python
    assert {r["impl"] for r in rows if r["graph"].startswith("metis:")} == {"mgmatch read_graph",
                                                                             "numpy fromfile + csr"}


def test_every_format_has_a_library_route():
    pytest.importorskip("networkx")
    assert set(bench_io.FORMATS) == {"mtx", "csv", "parquet", "metis", "gml"}
    for fmt in bench_io.FORMATS:
        assert bench_io._library_routes(fmt), fmt
        assert f'route == "{bench_io._library_routes(fmt)[0][1]}"' in bench_io._CHILD


def test_bench_io_files_hold_the_same_graph(tmp_path):
    # the files the benchmark reads are one graph in five formats (METIS weights are integers: 10^6 times)
    paths = bench_io.write_files(tmp_path, 500)
    graphs = {fmt: read_graph(path) for fmt, path in paths.items()}
    ref = graphs["parquet"].to_scipy()
    for fmt in ("mtx", "csv", "gml"):
        other = graphs[fmt].to_scipy()
        assert other.shape == ref.shape and abs(other - ref).max() == 0
    metis = graphs["metis"].to_scipy()
    assert metis.shape == ref.shape
    np.testing.assert_array_equal(metis.indptr, ref.indptr)
    np.testing.assert_array_equal(metis.indices, ref.indices)
    np.testing.assert_array_equal(metis.data, np.round(ref.data * 1e6))


def test_metis_library_route_reads_the_adjacency_lists(tmp_path):
    # the NumPy route, run as the benchmark runs it, gives the CSR mgmatch reads
    paths = bench_io.write_files(tmp_path, 300, formats=["metis"])
    small = bench_io.write_files(tmp_path, 100, stem="small", formats=["metis"])
    rec = bench_io._read_once("numpy.metis", paths["metis"], small["metis"])
    assert rec["nnz"] == read_graph(paths["metis"]).nnz == 600


def test_bench_io_refuses_unknown_formats():
    with pytest.raises(ParameterError, match="npz"):
        bench_io.run(["npz"], quick=True, repeats=1)


def test_bench_all_families_include_io():
    from mgmatch.bench import FAMILIES
    from mgmatch.cli import ALL_FAMILIES

    assert set(ALL_FAMILIES) == set(FAMILIES) and "io" in ALL_FAMILIES
