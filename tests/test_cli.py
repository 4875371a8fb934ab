"""The command line: results and summaries written atomically, one-line errors with exit 2."""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from mgmatch import generators, verify
from mgmatch.cli import main
from mgmatch.io import read_graph


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def karate(tmp_path, data_dir):
    path = tmp_path / "karate.mtx"
    shutil.copy(data_dir / "karate.mtx", path)
    return path


@pytest.fixture
def weighted_csv(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "g.csv"
    rows = [f"{a},{b},{w:.6f}" for a, b, w in zip(rng.integers(0, 200, 800), rng.integers(0, 200, 800), rng.random(800) + 0.1)]
    path.write_text("# a weighted edge list\n" + "\n".join(rows) + "\n")
    return path


def _no_stray_files(directory):
    return [p.name for p in directory.iterdir() if p.name.startswith(".") or p.name.endswith(".partial")]


@pytest.mark.parametrize("algorithm", ["suitor", "ld", "handshake"])
def test_run_matching_writes_parquet_and_summary(runner, weighted_csv, tmp_path, algorithm):
    out = tmp_path / "out" / "m.parquet"
    res = runner.invoke(main, ["run", "--algorithm", algorithm, "--device", "cpu", "-q", str(weighted_csv), "--output", str(out)])
    assert res.exit_code == 0, res.output
    table = pq.read_table(out).to_pydict()
    assert list(table) == ["u", "v", "weight"]
    g = read_graph(weighted_csv)
    mate = np.full(g.n, -1)
    mate[table["u"]], mate[table["v"]] = table["v"], table["u"]
    np.testing.assert_array_equal(mate, verify.greedy_matching(g))
    summary = json.loads((tmp_path / "out" / "m.json").read_text())
    for key in ("algorithm", "parameters", "n", "m", "weight", "cardinality", "rounds", "time_s", "versions"):
        assert key in summary
    assert summary["cardinality"] == len(table["u"])
    assert not _no_stray_files(out.parent)


def test_run_bsuitor_csv_and_verify(runner, weighted_csv, tmp_path):
    out = tmp_path / "b.csv"
    res = runner.invoke(main, ["run", "-a", "bsuitor", "--b", "2", "--device", "cpu", "-q", "--partitions", "3",
                               str(weighted_csv), "-o", str(out)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["verify", "--b", "2", str(weighted_csv), str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["ok"] is True


def test_verify_catches_a_broken_result(runner, weighted_csv, tmp_path):
    out = tmp_path / "m.csv"
    assert runner.invoke(main, ["run", "--device", "cpu", "-q", str(weighted_csv), "-o", str(out)]).exit_code == 0
    lines = out.read_text().splitlines()
    u, v, w = lines[1].split(",")
    out.write_text("\n".join(lines + [f"{u},{v},{w}"]) + "\n")  # a vertex used twice
    res = runner.invoke(main, ["verify", str(weighted_csv), str(out)])
    assert res.exit_code == 1
    assert json.loads(res.output)["valid"] is False


@pytest.mark.parametrize("name", ["s.parquet", "s.csv", "s.html"])
def test_a_summary_named_as_another_format_is_refused(runner, tmp_path, karate, name):
    # the summary is JSON; under a table's or a page's name it misled whatever read it next
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", str(karate), "-o", str(tmp_path / "m.csv"),
                               "--summary", str(tmp_path / name)])
    assert res.exit_code == 2 and f"names a {name[1:]} file, but the summary is JSON" in res.output
    assert not (tmp_path / "m.csv").exists() and not (tmp_path / name).exists()
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", str(karate), "-o", str(tmp_path / "m.csv"),
                               "--summary", str(tmp_path / "s.summary")])
    assert res.exit_code == 0 and json.loads((tmp_path / "s.summary").read_text())


def test_zeros_drop_is_refused_for_a_cardinality_matching(runner, tmp_path):
    # the values are not read, so an explicit zero stays an entry and --zeros drop did nothing
    path = tmp_path / "z.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 0\n2 2 1\n")
    res = runner.invoke(main, ["run", "-a", "gpr", "--device", "cpu", "-q", "--zeros", "drop", str(path), "-o",
                               str(tmp_path / "m.csv")])
    assert res.exit_code == 2 and "--zeros drop does not apply to -a gpr" in res.output
    assert not (tmp_path / "m.csv").exists()
    res = runner.invoke(main, ["run", "-a", "gpr", "--device", "cpu", "-q", str(path), "-o", str(tmp_path / "m.csv")])
    assert res.exit_code == 0 and (tmp_path / "m.csv").read_text() == "row,col\n0,0\n1,1\n"


def test_value_options_are_noted_and_ignored_for_a_cardinality_matching(runner, tmp_path):
    # --negative abs and --duplicates change nothing when only the stored entries are read: the
    # run says so and gives the matching it gives without them
    path = tmp_path / "n.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n2 3 3\n1 1 -1\n2 2 1\n1 1 2\n")
    res = runner.invoke(main, ["run", "-a", "apfb", "--device", "cpu", "-q", str(path), "-o", str(tmp_path / "a.csv")])
    assert res.exit_code == 0 and "note" not in res.output
    res = runner.invoke(main, ["run", "-a", "apfb", "--device", "cpu", "-q", "--negative", "abs", "--duplicates", "sum",
                               str(path), "-o", str(tmp_path / "b.csv")])
    assert res.exit_code == 0, res.output
    assert "--negative abs and --duplicates sum change nothing for -a apfb" in res.output
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text() == "row,col\n0,0\n1,1\n"


def test_run_bipartite_and_louvain(runner, tmp_path, data_dir, karate):
    out = tmp_path / "bm.parquet"
    res = runner.invoke(main, ["run", "-a", "apfb", "--device", "cpu", "-q", "--negative", "abs",
                               str(data_dir / "lp_afiro.mtx"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert list(pq.read_table(out).column_names) == ["row", "col"]
    assert pq.read_table(out).num_rows == 27
    assert json.loads((tmp_path / "bm.json").read_text())["parameters"]["deterministic"] is False
    det = tmp_path / "det.csv"
    res = runner.invoke(main, ["run", "-a", "apsb", "--deterministic", "--device", "cpu", "-q", "--negative", "abs",
                               str(data_dir / "lp_afiro.mtx"), "-o", str(det)])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "det.json").read_text())["parameters"]["deterministic"] is True
    assert len(det.read_text().splitlines()) == 1 + 27
    out = tmp_path / "c.parquet"
    res = runner.invoke(main, ["run", "-a", "louvain", "--device", "cpu", "-q", "--all-levels", str(karate), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert {"vertex", "community", "level"} <= set(pq.read_table(out).column_names)
    summary = json.loads((tmp_path / "c.json").read_text())
    assert summary["modularity"] > 0.4
    assert len(summary["modularity_per_level"]) == len(summary["levels"]) >= 1


def test_run_louvain_on_a_spreadsheet_export(runner, tmp_path, karate):
    # tabs ending every line and notes after the fields, as exported from a spreadsheet
    u, v, w = read_graph(karate).edges()
    plain = tmp_path / "plain.tsv"
    plain.write_text("".join(f"{a}\t{b}\t{c}\n" for a, b, c in zip(u, v, w)))
    exported = tmp_path / "exported.tsv"
    exported.write_text("".join(f"{a}\t{b}\t{c}\t{'# tie' if a % 3 == 0 else ''}\n" for a, b, c in zip(u, v, w)))
    for path in (plain, exported):
        res = runner.invoke(main, ["run", "-a", "louvain", "--device", "cpu", "-q", str(path),
                                   "--output", str(tmp_path / f"{path.stem}.csv")])
        assert res.exit_code == 0, res.output
    assert (tmp_path / "exported.csv").read_text() == (tmp_path / "plain.csv").read_text()


def test_run_on_embedded_cluster(runner, weighted_csv, tmp_path):
    out = tmp_path / "m.parquet"
    report, run_report = tmp_path / "report.html", tmp_path / "run.html"
    args = ["run", "--device", "cpu", "--workers", "2", "--report", str(report), "--run-report", str(run_report),
            str(weighted_csv), "-o", str(out)]
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "m.json").read_text())
    assert summary["partitions"] == 2 and summary["rounds"] >= 1
    assert summary["workers"] == 2 and summary["transport"] == "tcp"
    assert len(summary["compute_s_per_round"]) == len(summary["idle_s_per_round"]) == summary["rounds"]
    assert summary["matched_fraction_per_round"]["round"][-1] == summary["rounds"]  # the last round is always heard
    assert sum(summary["partition_load"]["entries"]) == read_graph(weighted_csv).nnz
    # Dask's report reads offline (Bokeh inline, no favicon from the web) and shows the command, not mgmatch's code
    page = report.read_text()
    assert "cdn.bokeh.org" not in page and not re.findall(r"<script[^>]*\bsrc=|<link[^>]*https?:", page)
    command = shlex.join(["mgmatch", *args])
    assert f"<title>{html.escape(command)}: Dask performance report</title>" in page
    assert html.escape(html.escape(f"$ {command}")) in page  # the Calling Code, escaped again inside Bokeh's JSON
    assert "_maybe_cluster" not in page and "cli.py" not in page
    assert "cdn.bokeh.org" not in run_report.read_text()
    g = read_graph(weighted_csv)
    table = pq.read_table(out).to_pydict()
    assert len(table["u"]) == int((verify.greedy_matching(g) >= 0).sum() // 2)


# ----------------------------------------------------------------------------- bad input
BAD_FILES = {
    "missing.mtx": None,
    "empty.csv": "",
    "nan.csv": "0,1,1.0\n1,2,nan\n",
    "negative.csv": "0,1,1.0\n1,2,-3\n",
    "text.csv": "0,1,1.0\n1,x,2.0\n",
    "columns.csv": "0,1,1.0,7,8\n",
    "header.mtx": "%%MatrixMarket matrix nonsense real general\n2 2 1\n1 2 1.0\n",
    "truncated.mtx": "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 2 1.0\n",
    "range.mtx": "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 9 1.0\n",
    "junk.mtx": "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 1.0x\n",
    "fields.mtx": "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 1.0 2.0\n",
    "metis.graph": "3 5\n2 3\n1\n1\n",
    # (negative and sparse 64-bit ids are renumbered: tests/test_cli_input.py)
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_input_one_line_exit_2_no_output(runner, tmp_path, name):
    path = tmp_path / name
    if BAD_FILES[name] is not None:
        path.write_text(BAD_FILES[name])
    out = tmp_path / "out" / "m.parquet"
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", str(path), "-o", str(out)])
    assert res.exit_code == 2, res.output
    message = res.output.strip()
    assert message.startswith("mgmatch: error:") and "\n" not in message, message
    assert name in message
    assert "Traceback" not in res.output
    assert not out.exists() and not (tmp_path / "out" / "m.json").exists()


def test_directory_as_input(runner, tmp_path):
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", str(tmp_path), "-o", str(tmp_path / "m.parquet")])
    assert res.exit_code == 2 and "mgmatch: error:" in res.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["-a", "bsuitor"], "needs --b"),
        (["-a", "bsuitor", "--b", "-2"], "b must"),
        (["-a", "bsuitor", "--b", "99999999999999999999"], "below 2^63"),
        (["--random-weights", "-5"], "non-negative integer seed"),
        (["--partitions", "0"], "partitions"),
        (["-a", "apfb", "--partitions", "2"], "--partitions does not apply to -a apfb"),
        (["--report", "r.html"], "--report needs"),
        (["-a", "gpr", "--deterministic"], "--deterministic does not apply to -a gpr"),
    ],
)
def test_bad_parameters_exit_2(runner, weighted_csv, tmp_path, args, message):
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", *args, str(weighted_csv), "-o", str(tmp_path / "m.csv")])
    assert res.exit_code == 2, res.output
    assert message in res.output


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "holds 0 b values"),
        ("# none\n", "holds 0 b values"),
        ("1 1\n1 1\n", "one b value per line"),
        ("2\n-1\n", "b value -1 of vertex 1 is negative"),
        ("2\nx\n", "must be integers"),
    ],
)
def test_bad_b_file_exit_2(runner, tmp_path, content, message):
    graph = tmp_path / "p.txt"
    graph.write_text("0 1 1\n")
    bfile = tmp_path / "b.txt"
    bfile.write_text(content)
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", "-a", "bsuitor", "--b", str(bfile), str(graph),
                               "-o", str(tmp_path / "m.csv")])
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert line.startswith("mgmatch: error:") and "\n" not in line and message in line and "b.txt" in line


@pytest.mark.parametrize("case", ["summary_is_directory", "summary_is_output", "output_is_input", "summary_is_input"])
def test_outputs_that_would_clobber_refused(runner, weighted_csv, tmp_path, case):
    out = tmp_path / "m.csv"
    args = {
        "summary_is_directory": ["-o", str(out), "--summary", str(tmp_path / "d")],
        "summary_is_output": ["-o", str(out), "--summary", str(out)],
        "output_is_input": ["-o", str(weighted_csv)],
        "summary_is_input": ["-o", str(out), "--summary", str(weighted_csv)],
    }[case]
    (tmp_path / "d").mkdir()
    before = weighted_csv.read_text()
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", str(weighted_csv), *args])
    assert res.exit_code == 2, res.output
    assert res.output.startswith("mgmatch: error:") and "Traceback" not in res.output
    assert weighted_csv.read_text() == before and not out.exists() and not _no_stray_files(tmp_path)


@pytest.mark.parametrize("what", ["output", "summary"])
def test_output_under_a_file_refused_before_the_run(runner, weighted_csv, tmp_path, monkeypatch, what):
    (tmp_path / "f").write_text("a file\n")
    target = tmp_path / "f" / "sub" / ("m.json" if what == "summary" else "m.csv")
    args = ["-o", str(tmp_path / "m.csv"), "--summary", str(target)] if what == "summary" else ["-o", str(target)]

    def no_read(*args, **kwargs):
        raise AssertionError("the input was read")

    monkeypatch.setattr("mgmatch.jobs._read", no_read)
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", str(weighted_csv), *args])
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert line.startswith("mgmatch: error:") and "\n" not in line
    assert f"{what} {target}" in line and f"{tmp_path / 'f'} is a file, not a directory" in line
    assert (tmp_path / "f").read_text() == "a file\n" and not (tmp_path / "m.csv").exists()


def test_unwritable_output_folder_refused_before_the_run(runner, weighted_csv, tmp_path, monkeypatch):
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        if os.access(locked, os.W_OK):  # root may write anywhere: deny it as the folder's mode would
            access = os.access
            monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if os.path.abspath(p) == str(locked)
                                and mode & os.W_OK else access(p, mode, **kw))

        def no_read(*args, **kwargs):
            raise AssertionError("the input was read")

        monkeypatch.setattr("mgmatch.jobs._read", no_read)
        out = locked / "d" / "m.csv"
        res = runner.invoke(main, ["run", "--device", "cpu", "-q", str(weighted_csv), "-o", str(out)])
        assert res.exit_code == 2, res.output
        assert "permission denied" in res.output and str(locked) in res.output and "\n" not in res.output.strip()
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o755)


def test_summary_directory_found_at_the_default_path(runner, weighted_csv, tmp_path):
    (tmp_path / "m.json").mkdir()  # where the summary of m.csv goes by default
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", str(weighted_csv), "-o", str(tmp_path / "m.csv")])
    assert res.exit_code == 2 and "is a directory" in res.output, res.output
    assert not (tmp_path / "m.csv").exists()


def test_summary_to_a_device_is_written_in_place(runner, weighted_csv, tmp_path):
    import os

    if not os.path.exists(os.devnull) or os.path.isfile(os.devnull):
        pytest.skip("no null device")
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", str(weighted_csv), "-o", str(tmp_path / "m.csv"),
                               "--summary", os.devnull])
    assert res.exit_code == 0, res.output
    assert not os.path.isfile(os.devnull) and (tmp_path / "m.csv").is_file()


@pytest.mark.parametrize("algorithm", ["suitor", "louvain"])
def test_bipartite_graph_to_an_undirected_algorithm(runner, data_dir, tmp_path, algorithm):
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", "-a", algorithm, "--negative", "abs",
                               str(data_dir / "lp_afiro.mtx"), "-o", str(tmp_path / "m.csv")])
    assert res.exit_code == 2, res.output
    assert "lp_afiro.mtx" in res.output and "27 rows x 51 columns" in res.output and "-a gpr, apfb or apsb" in res.output
    assert not (tmp_path / "m.csv").exists()


@pytest.mark.parametrize("flag", [None, "--one-based", "--quiet"])
def test_detected_one_based_ids_are_noted_and_recorded(runner, tmp_path, flag):
    path = tmp_path / "p.txt"
    path.write_text("1 2 5\n2 3 1\n3 4 5\n")
    out = tmp_path / "m.csv"
    res = runner.invoke(main, ["run", "--device", "cpu", str(path), "-o", str(out), *([flag] if flag else [])])
    assert res.exit_code == 0, res.output
    # said when detected, under --quiet too (a batch job needs it most); not when asked for
    assert ("ids read as 1-based" in res.output) == (flag != "--one-based")
    assert out.read_text().splitlines()[1:] == ["0,1,5.0", "2,3,5.0"]  # vertices from 0
    record = json.loads((tmp_path / "m.json").read_text())
    assert record["reading"]["format"] == "edgelist" and record["reading"]["one_based"] is True
    assert record["id_offset"] == 1


def test_bad_output_suffix(runner, weighted_csv, tmp_path):
    res = runner.invoke(main, ["run", "--device", "cpu", str(weighted_csv), "-o", str(tmp_path / "m.txt")])
    assert res.exit_code == 2 and ".parquet" in res.output


def test_unreachable_scheduler_exit_2(runner, weighted_csv, tmp_path):
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", "--scheduler", "tcp://127.0.0.1:9",
                               str(weighted_csv), "-o", str(tmp_path / "m.csv")])
    assert res.exit_code == 2 and "cannot reach the Dask scheduler" in res.output
    assert not (tmp_path / "m.csv").exists()


# ------------------------------------------------------------------- info / generate / bench
def test_info(runner, karate):
    res = runner.invoke(main, ["info", "--json", str(karate)])
    assert res.exit_code == 0, res.output
    facts = json.loads(res.output)
    assert facts["n"] == 34 and facts["m"] == 78


@pytest.mark.parametrize("suffix", [".mtx", ".parquet", ".npz", ".csv"])
def test_generate_round_trip(runner, tmp_path, suffix):
    out = tmp_path / f"g{suffix}"
    res = runner.invoke(main, ["generate", "delaunay", "-p", "k=8", "-p", "seed=3", "-o", str(out)])
    assert res.exit_code == 0, res.output
    g = read_graph(out)
    ref = generators.delaunay(8, seed=3)
    assert (g.n, g.m) == (ref.n, ref.m)
    np.testing.assert_allclose(g.weights, ref.weights, rtol=1e-6)


def test_generate_bad_suffix_names_the_graph_formats(runner, tmp_path):
    res = runner.invoke(main, ["generate", "kron", "-p", "k=4", "-o", str(tmp_path / "g.txt")])
    assert res.exit_code == 2, res.output
    assert "'.txt'" in res.output and ".mtx" in res.output and ".npz" in res.output
    assert not (tmp_path / "g.txt").exists() and not _no_stray_files(tmp_path)


def test_generate_bad_family(runner, tmp_path):
    res = runner.invoke(main, ["generate", "nosuch", "-o", str(tmp_path / "g.mtx")])
    assert res.exit_code == 2 and "mgmatch: error:" in res.output


def test_bench_quick_writes_stable_json(runner, tmp_path):
    pytest.importorskip("networkit")
    out = tmp_path / "bench.json"
    res = runner.invoke(main, ["bench", "--family", "matching", "--device", "cpu", "--quick", "--repeats", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["mgmatch_bench"] == 1 and doc["rows"]
    ours = [r for r in doc["rows"] if r["impl"] == "mgmatch suitor"]
    assert ours and all(r["weight_rel_diff"] < 1e-9 for r in ours)


@pytest.mark.parametrize("args", [["--family", "matching"], ["--family", "louvain"],
                                  ["--family", "distributed", "--device", "cpu"],
                                  ["--family", "distributed", "--device", "cpu", "--workers", "1"],
                                  ["--family", "distributed", "--threads", "1"]])
def test_bench_fill_gpus_needs_gpu_clusters(runner, args):
    res = runner.invoke(main, ["bench", "--fill-gpus", "--quick", "--repeats", "1", *args])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert "--fill-gpus" in res.output or "fill GPUs" in res.output


def test_bench_reads_graph_files(runner, tmp_path, karate):
    out = tmp_path / "bench.json"
    res = runner.invoke(
        main,
        ["bench", "--family", "louvain", "--device", "cpu", "--repeats", "1",
         "--graphs", f"file:{karate};{karate}", "-o", str(out)],
    )
    assert res.exit_code == 0, res.output
    ours = [r for r in json.loads(out.read_text())["rows"] if r["impl"] == "mgmatch"]
    assert [r["graph"] for r in ours] == ["karate.mtx", "karate.mtx"]
    assert all(r["n"] == 34 and r["modularity"] > 0.38 for r in ours)
    res = runner.invoke(main, ["bench", "--family", "louvain", "--device", "cpu", "--graphs", "file:nope.mtx"])
    assert res.exit_code != 0 and "nope.mtx" in res.output and "Traceback" not in res.output


def test_bench_louvain_times_both_sides_alike(tmp_path, karate, monkeypatch):
    # mgmatch and PLM each get the same untimed warm-up, then their timed repeats in alternating
    # blocks: the ratio compares warm runs on both sides, made under the same host conditions
    pytest.importorskip("networkit")
    from mgmatch.bench import _common, louvain as bench_louvain

    calls, order = [], []

    def spy(fns, **kw):
        calls.append(kw)
        logged = {k: (lambda k=k, f=f: order.append(k) or f()) for k, f in fns.items()}
        return _common.time_alternating(logged, **kw)

    monkeypatch.setattr(bench_louvain, "WARMUP_S", 0.05)
    monkeypatch.setattr(bench_louvain, "BLOCK", 2)
    monkeypatch.setattr(bench_louvain, "BLOCK_WARMUP_S", 0.0)  # one untimed run a block (see below)
    monkeypatch.setattr(bench_louvain, "time_alternating", spy)
    rows = bench_louvain.run([f"file:{karate}"], device="cpu", repeats=3)
    assert [r["impl"] for r in rows] == ["mgmatch", "networkit-plm"]
    assert [(c["warmup_s"], c["block_warmup_s"], c["repeats"], c["block"]) for c in calls] == [(0.05, 0.0, 3, 2)]
    assert all(len(r["times_s"]) == 3 and r["warmup_runs"] >= 1 for r in rows)
    # after the warm-ups: (untimed + 2 timed) of each side, then (untimed + 1 timed) of each
    timed = order[len(order) - 10:]
    assert timed == ["mgmatch"] * 3 + ["plm"] * 3 + ["mgmatch"] * 2 + ["plm"] * 2


def test_host_threads_follows_the_affinity(monkeypatch):
    # a job confined to 2 of a host's 16 CPUs gives its CPU peers 2 threads, not 16
    import os

    from mgmatch.bench._common import host_threads

    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 5}, raising=False)
    assert host_threads() == 2
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # a platform without affinity
    assert host_threads() == 16
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert host_threads() == 1


def test_bench_louvain_gives_plm_the_usable_threads(karate, monkeypatch):
    nk = pytest.importorskip("networkit")
    from mgmatch.bench import _common, louvain as bench_louvain

    before = nk.getMaxNumberOfThreads()
    monkeypatch.setattr(bench_louvain, "WARMUP_S", 0.0)
    monkeypatch.setattr(_common, "host_threads", lambda: 1)
    try:
        rows = bench_louvain.run([f"file:{karate}"], device="cpu", repeats=1)
    finally:
        nk.setNumberOfThreads(before)
    assert [r["threads"] for r in rows if r["impl"] == "networkit-plm"] == [1]


def test_bench_report_written_before_the_table(tmp_path):
    # a run stopped while its table prints (or whose console fails) keeps its rows
    from mgmatch.bench import write_report

    class Stopped:
        def print(self, *args, **kwargs):
            raise KeyboardInterrupt

    rows = [{"family": "louvain", "graph": "g", "impl": "mgmatch", "device": "cpu", "n": 3, "nnz": 4, "time_s": 0.5}]
    with pytest.raises(KeyboardInterrupt):
        write_report(rows, tmp_path / "r.json", console=Stopped())
    assert json.loads((tmp_path / "r.json").read_text())["rows"] == rows


def test_run_help_names_every_format():
    # --format lists the formats the readers take, --output the table suffixes the writers take
    from mgmatch import cli
    from mgmatch.io import readers, writers

    listed = cli._FORMAT_HELP.split(":", 1)[1].split("(")[0].replace(" or ", ", ").replace(".", "")
    assert sorted(f.strip() for f in listed.split(",")) == sorted(readers._FORMATS)
    out_help = next(p.help for p in cli.run.params if p.name == "output")
    assert all(suffix in out_help for suffix in writers.TABLE_FORMATS)


@pytest.mark.parametrize("value", ["-1", "0", "nan"])
def test_louvain_parameters_checked_before_the_read(runner, weighted_csv, tmp_path, monkeypatch, value):
    def no_read(*args, **kwargs):
        raise AssertionError("the input was read")

    monkeypatch.setattr("mgmatch.jobs._read", no_read)
    out = tmp_path / "c.csv"
    res = runner.invoke(main, ["run", "-a", "louvain", "--device", "cpu", "-q", "--resolution", value,
                               str(weighted_csv), "-o", str(out)])
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert line.startswith("mgmatch: error:") and "resolution" in line and "\n" not in line
    assert not out.exists()


def test_time_alternating_stops_each_side_at_its_timeout():
    from mgmatch.bench._common import time_alternating

    def slow():
        time.sleep(0.02)
        return "slow"

    out = time_alternating({"fast": lambda: "fast", "slow": slow}, repeats=6, block=2, timeout=0.03)
    assert len(out["fast"]["times_s"]) == 6
    assert 2 <= len(out["slow"]["times_s"]) < 6  # stopped once its timed runs passed the timeout
    assert out["slow"]["result"] == "slow" and out["fast"]["time_s"] < out["slow"]["time_s"]
    with pytest.raises(ValueError):
        time_alternating({"a": lambda: 1}, repeats=0)


def test_time_alternating_warms_each_block_up_for_a_time():
    # each block opens with untimed runs for block_warmup_s (at least one), on both sides alike
    from mgmatch.bench._common import time_alternating

    def run():
        time.sleep(0.005)
        return 1

    fns = {"a": run, "b": run}
    plain = time_alternating(fns, repeats=4, block=2)
    assert [plain[k]["warmup_runs"] for k in "ab"] == [3, 3]  # the first run, then one a block
    warm = time_alternating(fns, repeats=4, block=2, block_warmup_s=0.03)
    for k in "ab":
        # each of the two blocks: its first untimed run, then more until 30 ms have passed (5 ms
        # runs: five more where sleeps keep time, at least one however late they wake)
        assert warm[k]["warmup_runs"] >= 1 + 2 * 2, warm[k]["warmup_runs"]
        assert len(warm[k]["times_s"]) == 4


def test_time_call_warms_up_for_a_time():
    """Short runs get untimed runs until the warm-up time has passed since the first (which may
    load kernels for seconds); long ones the given count; the timed runs are the repeats alone."""
    from mgmatch.bench._common import time_call

    calls = []

    def run():
        calls.append(time.perf_counter())
        time.sleep(0.2 if len(calls) == 1 else 0.01)
        return len(calls)

    t = time_call(run, repeats=3, warmup=1, warmup_s=0.05)
    # the first run alone outlasts the warm-up time; after it, 0.05 s of 10 ms runs is five
    assert t["warmup_runs"] >= 6
    assert len(calls) == t["warmup_runs"] + 3 and len(t["times_s"]) == 3
    assert t["result"] == len(calls) and all(0.01 <= x < 0.2 for x in t["times_s"])
    calls.clear()
    t = time_call(run, repeats=2, warmup=2)  # no warm-up time: the count alone
    assert t["warmup_runs"] == 2 and len(calls) == 4


# ------------------------------------------------------------------------------ pipelines
def test_unweighted_ignores_the_weights(runner, weighted_csv, tmp_path):
    """--unweighted reads the file as its first two fields, and verify and info take it too."""
    plain = tmp_path / "plain.csv"
    plain.write_text("".join(line.rsplit(",", 1)[0] + "\n" for line in weighted_csv.read_text().splitlines()))
    labelled = tmp_path / "labelled.csv"  # a third field that is not a weight at all
    labelled.write_text("".join(line.rsplit(",", 1)[0] + ",x\n" for line in weighted_csv.read_text().splitlines()))
    for algorithm in ("suitor", "louvain"):
        tables = []
        for path, extra in ((plain, []), (weighted_csv, ["--unweighted"]), (labelled, ["--unweighted"])):
            out = tmp_path / f"{algorithm}-{path.stem}.csv"
            args = ["run", "-a", algorithm, "--device", "cpu", "-q", str(path), "-o", str(out), *extra]
            res = runner.invoke(main, args)
            assert res.exit_code == 0, res.output
            tables.append(out.read_text())
        assert tables[0] == tables[1] == tables[2]
    refused = runner.invoke(main, ["run", "-q", str(labelled), "-o", str(tmp_path / "x.csv")])
    assert "weight 'x' is not a number" in refused.output
    result = str(tmp_path / "suitor-labelled.csv")
    assert runner.invoke(main, ["verify", str(weighted_csv), result, "--unweighted"]).exit_code == 0
    assert runner.invoke(main, ["verify", str(weighted_csv), result]).exit_code == 1  # weights 1 against the file's
    res = runner.invoke(main, ["info", "--json", "--unweighted", str(labelled)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["weighted"] is False


def test_pipeline_runs_every_job(runner, tmp_path, karate):
    spec = tmp_path / "jobs.yaml"
    spec.write_text(
        "defaults:\n  device: cpu\njobs:\n"
        "  - {input: karate.mtx, algorithm: suitor, output: out/s.parquet}\n"
        "  - {input: karate.mtx, algorithm: bsuitor, b: 2, partitions: 3, output: out/b.csv}\n"
        "  - {input: karate.mtx, algorithm: louvain, all-levels: true, output: out/c.parquet}\n"
    )
    res = runner.invoke(main, ["run", "-q", str(spec)])
    assert res.exit_code == 0, res.output
    for name in ("s.parquet", "s.json", "b.csv", "b.json", "c.parquet", "c.json"):
        assert (tmp_path / "out" / name).is_file()
    g = read_graph(karate)
    table = pq.read_table(tmp_path / "out" / "s.parquet").to_pydict()
    assert len(table["u"]) == int((verify.greedy_matching(g) >= 0).sum() // 2)


def test_pipeline_on_a_cluster(runner, tmp_path, karate):
    spec = tmp_path / "jobs.yaml"
    spec.write_text("cluster: {workers: 2, device: cpu}\ndefaults: {device: cpu}\njobs:\n"
                    "  - {input: karate.mtx, algorithm: ld, output: out/ld.parquet}\n")
    res = runner.invoke(main, ["run", "-q", str(spec)])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "out" / "ld.json").read_text())["partitions"] == 2


def test_pipeline_b_file_is_relative_to_the_pipeline(runner, tmp_path, monkeypatch):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "p.txt").write_text("0 1 3\n1 2 2\n2 3 1\n")
    (jobs / "b.txt").write_text("1\n2\n2\n1\n")
    (jobs / "run.yaml").write_text("jobs:\n  - {input: p.txt, output: out/b.csv, algorithm: bsuitor, b: b.txt}\n")
    (tmp_path / "b.txt").write_text("1\n1\n1\n1\n")  # a decoy in the working directory (weight 4)
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(main, ["run", "-q", str(jobs / "run.yaml")])
    assert res.exit_code == 0, res.output
    summary = json.loads((jobs / "out" / "b.json").read_text())
    assert summary["weight"] == 6.0  # vertices 1 and 2 take both of their edges


def test_pipeline_reads_unweighted(runner, tmp_path):
    (tmp_path / "p.txt").write_text("0 1 3\n1 2 9\n2 3 1\n")
    (tmp_path / "run.yaml").write_text("defaults: {device: cpu}\njobs:\n"
                                       "  - {input: p.txt, output: w.csv}\n"
                                       "  - {input: p.txt, output: u.csv, weighted: false}\n")
    res = runner.invoke(main, ["run", "-q", str(tmp_path / "run.yaml")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "w.json").read_text())["weight"] == 9.0  # the heaviest edge alone
    assert json.loads((tmp_path / "u.json").read_text())["weight"] == 2.0  # the greedy order of equal weights


@pytest.mark.parametrize(
    "text, message",
    [
        ("jobs: [\n", "not valid YAML"),
        ("jobs: []\n", "non-empty 'jobs'"),
        ("jobz: [{input: karate.mtx}]\n", "unknown top-level key"),
        ("jobs:\n  - {input: karate.mtx}\n", "missing 'output'"),
        ("jobs:\n  - {input: karate.mtx, output: o.csv, colour: red}\n", "unknown option 'colour'"),
        ("jobs:\n  - {input: nowhere.mtx, output: o.csv}\n", "job 1"),
        ("cluster: {nodes: 3}\njobs:\n  - {input: karate.mtx, output: o.csv}\n", "unknown cluster key"),
        ("jobs:\n  - {input: karate.mtx, output: o.csv, algorithm: bsuitor, b: [1, 2]}\n", "b must be an integer"),
        ("jobs:\n  - {input: karate.mtx, output: o.csv, random_weights: abc}\n", "non-negative integer seed"),
        ("jobs:\n  - {input: karate.mtx, output: o.csv, weighted: maybe}\n", "weighted must be true or false"),
    ],
)
def test_bad_pipeline_exit_2(runner, tmp_path, karate, text, message):
    spec = tmp_path / "jobs.yaml"
    spec.write_text(text)
    res = runner.invoke(main, ["run", "-q", str(spec)])
    assert res.exit_code == 2, res.output
    assert message in res.output and res.output.startswith("mgmatch: error:")
    assert not (tmp_path / "o.csv").exists()


def test_auto_picks_the_fastest_algorithm_for_the_device(runner, weighted_csv, tmp_path, device):
    out = tmp_path / "m.parquet"
    res = runner.invoke(main, ["run", "--device", device, "-q", str(weighted_csv), "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "m.json").read_text())
    assert summary["algorithm"] == "suitor"


@pytest.mark.parametrize(
    "name, cardinality",
    [("west0479.mtx", 479), ("lp_afiro.mtx", 27), ("ash219.mtx", 85), ("karate.mtx", 27), ("4elt.graph", 15606)],
)
def test_bipartite_algorithms_read_the_matrix_as_rows_by_columns(runner, tmp_path, data_dir, name, cardinality):
    # square unsymmetric matrices stay rows x columns (not symmetrised), symmetric ones give
    # their double cover, and stored values (negative ones included) do not matter
    import scipy.io
    from scipy.sparse.csgraph import maximum_bipartite_matching

    out = tmp_path / "bm.csv"
    res = runner.invoke(main, ["run", "-a", "apfb", "--device", "cpu", "-q", str(data_dir / name), "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = out.read_text().strip().splitlines()[1:]
    assert len(rows) == cardinality
    if name.endswith(".mtx"):
        import scipy.sparse as sp

        a = sp.csr_array(scipy.io.mmread(data_dir / name, spmatrix=False))
        assert int((maximum_bipartite_matching(a, perm_type="column") >= 0).sum()) == cardinality


def test_verify_bipartite_and_community_results(runner, tmp_path, data_dir, karate):
    out = tmp_path / "bm.parquet"
    assert runner.invoke(main, ["run", "-a", "gpr", "--device", "cpu", "-q", str(data_dir / "west0479.mtx"),
                                "-o", str(out)]).exit_code == 0
    res = runner.invoke(main, ["verify", str(data_dir / "west0479.mtx"), str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["maximum"] and report["maximum_cardinality"] == 479
    # drop a pair: still valid, no longer maximum
    bad = tmp_path / "bad.csv"
    t = pq.read_table(out).to_pydict()
    bad.write_text("row,col\n" + "\n".join(f"{r},{c}" for r, c in list(zip(t["row"], t["col"]))[1:]) + "\n")
    res = runner.invoke(main, ["verify", str(data_dir / "west0479.mtx"), str(bad)])
    assert res.exit_code == 1 and json.loads(res.output)["valid"] is True
    out = tmp_path / "c.parquet"
    assert runner.invoke(main, ["run", "-a", "louvain", "--device", "cpu", "-q", "--all-levels", str(karate),
                                "-o", str(out)]).exit_code == 0
    res = runner.invoke(main, ["verify", str(karate), str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["every_vertex_once"] and report["modularity"] > 0.4


def test_verify_catches_what_it_used_to_pass(runner, tmp_path, weighted_csv, karate):
    # a b-matching that is not maximal, a level of --all-levels communities that misses or
    # repeats a vertex or is numbered out of order, and a weight left empty in a CSV result
    out = tmp_path / "b.csv"
    assert runner.invoke(main, ["run", "-a", "bsuitor", "--b", "2", "--device", "cpu", "-q", str(weighted_csv),
                                "-o", str(out)]).exit_code == 0
    lines = out.read_text().splitlines()
    for kept, code in ((lines, 0), (lines[:-1], 1), (lines[:1], 1)):  # whole, one edge fewer, none
        (tmp_path / "b2.csv").write_text("\n".join(kept) + "\n")
        res = runner.invoke(main, ["verify", "--b", "2", str(weighted_csv), str(tmp_path / "b2.csv")])
        assert res.exit_code == code, res.output
        assert json.loads(res.output)["maximal"] is (code == 0) and json.loads(res.output)["valid"] is True
    out = tmp_path / "c.csv"
    assert runner.invoke(main, ["run", "-a", "louvain", "--device", "cpu", "-q", "--all-levels", str(karate),
                                "-o", str(out)]).exit_code == 0
    header, *rows = out.read_text().splitlines()
    assert header == "level,vertex,community" and rows[0].startswith("0,") and any(r.startswith("1,") for r in rows)
    broken = {"missing": [r for r in rows if not r.startswith("0,5,")], "twice": rows + ["0,5,0"],
              "renamed": [("7," + r[2:]) if r.startswith("1,") else r for r in rows]}
    for name, kept in broken.items():
        (tmp_path / "c2.csv").write_text("\n".join([header, *kept]) + "\n")
        res = runner.invoke(main, ["verify", str(karate), str(tmp_path / "c2.csv")])
        assert res.exit_code == 1, (name, res.output)
    assert runner.invoke(main, ["run", "--device", "cpu", "-q", str(weighted_csv), "-o",
                                str(tmp_path / "m.csv")]).exit_code == 0
    lines = (tmp_path / "m.csv").read_text().splitlines()
    (tmp_path / "m2.csv").write_text(lines[0] + "\n" + lines[1].rsplit(",", 1)[0] + ",\n")
    res = runner.invoke(main, ["verify", str(weighted_csv), str(tmp_path / "m2.csv")])
    assert res.exit_code == 2 and "column 'weight' has 1 missing values" in res.output


def test_verify_unknown_result_columns(runner, tmp_path, karate):
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b\n1,2\n")
    res = runner.invoke(main, ["verify", str(karate), str(odd)])
    assert res.exit_code == 2 and "expected u, v" in res.output


def test_verify_result_of_unknown_suffix_names_the_file_once(runner, tmp_path, karate):
    res = runner.invoke(main, ["verify", str(karate), str(karate)])
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert line.count(str(karate)) == 1 and "'.mtx'" in line and ".parquet" in line, line


def _mgmatch(*args, stdin: bytes):
    """The command in a process of its own, ``stdin`` on its standard input."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "mgmatch.cli", *map(str, args)], input=stdin, capture_output=True,
                          timeout=600)


def test_run_reads_standard_input(runner, weighted_csv, tmp_path):
    # INPUT "-" is standard input, whose format --format names (it has no suffix)
    res = _mgmatch("run", "-a", "louvain", "--device", "cpu", "-q", "-", "--format", "csv", "-o", tmp_path / "s.csv",
                   stdin=weighted_csv.read_bytes())
    assert res.returncode == 0, res.stderr
    want = runner.invoke(main, ["run", "-a", "louvain", "--device", "cpu", "-q", str(weighted_csv), "-o",
                                str(tmp_path / "f.csv")])
    assert want.exit_code == 0, want.output
    assert (tmp_path / "s.csv").read_text() == (tmp_path / "f.csv").read_text()
    assert json.loads((tmp_path / "s.json").read_text())["input"] == "/dev/stdin"


def test_standard_input_errors(tmp_path):
    out = tmp_path / "s.csv"
    res = _mgmatch("run", "-a", "louvain", "--device", "cpu", "-", "-o", out, stdin=b"0 1\n")
    assert res.returncode == 2 and "--format" in res.stderr.decode() and b"Traceback" not in res.stderr
    res = _mgmatch("run", "-a", "louvain", "--device", "cpu", "-", "--format", "edgelist", "-o", out, stdin=b"")
    assert res.returncode == 2 and "empty" in res.stderr.decode() and b"Traceback" not in res.stderr
    res = _mgmatch("run", "-a", "suitor", "--workers", "1", "--read-on-workers", "-", "--format", "edgelist", "-o",
                   out, stdin=b"0 1 1.0\n")
    assert res.returncode == 2 and "stream" in res.stderr.decode() and b"Traceback" not in res.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize("algorithm, extra", [("louvain", ["--partitions", "2"]), ("apfb", [])])
def test_every_family_runs_on_a_cluster_as_in_process(runner, tmp_path, data_dir, algorithm, extra):
    """Louvain and bipartite matching run through the engine on Dask workers, and give what an
    in-process run gives (Louvain over the same partition count)."""
    src = data_dir / ("polbooks.mtx" if algorithm == "louvain" else "west0479.mtx")
    outs = []
    for cluster_args in ([], ["--workers", "2"]):
        out = tmp_path / f"{algorithm}-{len(cluster_args)}.parquet"
        res = runner.invoke(main, ["run", "-a", algorithm, "--device", "cpu", "-q", *extra, *cluster_args,
                                   str(src), "-o", str(out)])
        assert res.exit_code == 0, res.output
        outs.append(pq.read_table(out).to_pydict())
    assert outs[0] == outs[1]


def test_progress_is_logged_when_stderr_is_not_a_terminal(tmp_path, data_dir):
    """A batch job (stderr to a file) gets a log line per round on the 'mgmatch' logger; -q none."""
    import subprocess
    import sys

    out = tmp_path / "m.parquet"
    cmd = [sys.executable, "-m", "mgmatch.cli", "run", "--device", "cpu", "--partitions", "3",
           str(data_dir / "netscience.mtx"), "-o", str(out)]
    logged = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    rounds = [line for line in logged.splitlines() if "mgmatch.progress INFO: suitor: round" in line]
    assert len(rounds) >= 2 and "0 messages in flight" in rounds[-1]
    quiet = subprocess.run([*cmd[:4], "-q", *cmd[4:]], capture_output=True, text=True, check=True).stderr
    assert "mgmatch.progress" not in quiet
    warned = subprocess.run([sys.executable, "-m", "mgmatch.cli", "--log-level", "warning", *cmd[3:]],
                            capture_output=True, text=True, check=True).stderr
    assert "mgmatch.progress" not in warned


def test_louvain_summary_counts_are_not_shown_as_seconds(runner, tmp_path, karate):
    # the summary's time_s held the partition and round counts, printed as 'time rounds 10.000 s'
    out = tmp_path / "c.csv"
    res = runner.invoke(main, ["run", "-a", "louvain", "--device", "cpu", str(karate), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "time rounds" not in res.output and "time partitions" not in res.output
    summary = json.loads((tmp_path / "c.json").read_text())
    assert summary["rounds"] == summary["time_s"]["rounds"] >= 1 and summary["partitions"] == 1


def test_random_weights_on_a_weighted_input_are_noted(runner, tmp_path):
    # the input's weights stay (only an unweighted read draws new ones), which went without a word
    path = tmp_path / "g.txt"
    path.write_text("0 1 1\n1 2 2\n2 3 1\n")
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", "--random-weights", "1", str(path), "-o",
                               str(tmp_path / "a.csv")])
    assert res.exit_code == 0 and "has weights, which --random-weights does not replace" in res.output
    assert json.loads((tmp_path / "a.json").read_text())["canonicalisation"]["random_weights_seed"] is None
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", "--unweighted", "--random-weights", "1", str(path),
                               "-o", str(tmp_path / "b.csv")])
    assert res.exit_code == 0 and res.output == ""
    assert json.loads((tmp_path / "b.json").read_text())["canonicalisation"]["random_weights_seed"] == 1


def test_tables_off_a_terminal_are_printed_whole(capsys):
    # bench's and demo's tables were cut to 120 columns in a log, their cells to 'fami…'
    from rich.table import Table

    from mgmatch.jobs import print_table

    table = Table(title="wide")
    for k in range(20):
        table.add_column(f"column_{k}")
    table.add_row(*[f"value_number_{k}" for k in range(20)])
    print_table(table, stderr=False)
    out = capsys.readouterr().out
    assert "…" not in out and "column_19" in out and "value_number_19" in out


@pytest.mark.parametrize("option", ["--summary", "--run-report"])
def test_a_dash_for_an_output_file_is_refused(runner, tmp_path, monkeypatch, option):
    # '-' made a file of that name (the input's '-' reads standard input)
    path = tmp_path / "g.txt"
    path.write_text("0 1 1\n1 2 2\n")
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(main, ["run", "--device", "cpu", "-q", str(path), "-o", "m.csv", option, "-"])
    assert res.exit_code == 2 and f"{option} takes a file's path; '-' (standard output) is not one" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]


def test_verify_refuses_b_for_a_result_that_is_not_a_matching(runner, tmp_path, karate):
    # --b was accepted and ignored for communities and marriages
    out = tmp_path / "c.csv"
    assert runner.invoke(main, ["run", "-a", "louvain", "--device", "cpu", "-q", str(karate), "-o",
                                str(out)]).exit_code == 0
    res = runner.invoke(main, ["verify", "--b", "3", str(karate), str(out)])
    assert res.exit_code == 2 and "--b is the capacity of a b-matching" in res.output
    assert runner.invoke(main, ["verify", str(karate), str(out)]).exit_code == 0


def test_bench_refuses_worker_counts_for_a_family_that_runs_in_process(runner):
    res = runner.invoke(main, ["bench", "--quick", "--device", "cpu", "--workers", "2", "--family", "matching"])
    assert res.exit_code == 2 and "--family matching runs in this process" in res.output
