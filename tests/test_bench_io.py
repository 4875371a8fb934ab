"""``mgmatch bench --family io``: the readers and the library routes give rows on the same files
(a smoke test of the benchmark, not a timed test)."""

import json

import pytest

from mgmatch.bench import io as bench_io
from mgmatch.cli import main
from mgmatch.errors import ParameterError
from mgmatch.io import read_graph


@pytest.fixture
def runner():
    from click.testing import CliRunner

    return CliRunner()


def test_bench_io_writes_rows_for_every_format(runner, tmp_path):
    out = tmp_path / "bench.json"
    res = runner.invoke(main, ["bench", "--family", "io", "--quick", "--repeats", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = json.loads(out.read_text())["rows"]
    assert {r["graph"].split(":")[0] for r in rows} == set(bench_io.FORMATS)
    for fmt in bench_io.FORMATS:
        mine = [r for r in rows if r["graph"].startswith(f"{fmt}:")]
        ours = [r for r in mine if r["impl"] == "mgmatch read_graph"]
        library = [r for r in mine if r["impl"] != "mgmatch read_graph"]
        assert len(ours) == 1 and library
        # every route read the same graph: the same stored entries of the symmetric CSR
        assert {r["nnz"] for r in mine} == {ours[0]["nnz"]}
        assert ours[0]["ratio_vs"] in {r["impl"] for r in library}
        for r in mine:
            assert len(r["times_s"]) == 1 and r["time_s"] > 0 and r["peak_bytes"] >= 0


def test_bench_io_files_hold_the_same_graph(tmp_path):
    # the files the benchmark reads are one graph in three formats
    paths = bench_io.write_files(tmp_path, 500)
    graphs = {fmt: read_graph(path) for fmt, path in paths.items()}
    ref = graphs["parquet"].to_scipy()
    for fmt in ("mtx", "csv"):
        other = graphs[fmt].to_scipy()
        assert other.shape == ref.shape and abs(other - ref).max() == 0


def test_bench_io_refuses_unknown_formats():
    with pytest.raises(ParameterError, match="gml"):
        bench_io.run(["gml"], quick=True, repeats=1)
