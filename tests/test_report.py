"""The run report: summary fields it draws on, the page (offline, escaped), ``mgmatch report``,
and the page as a browser draws it."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner

from mgmatch import Graph, generators
from mgmatch.cli import main
from mgmatch.io import read_graph, read_table, write_graph
from mgmatch.report import partition_load, render_run_report

#: Every chart's data source, by the summary key it shows.
MATCHING_SOURCES = ("messages_per_round", "time_per_round", "matched_fraction_per_round", "partition_load")
LOUVAIN_SOURCES = ("messages_per_round", "time_per_round", "modularity_per_level", "time_per_level",
                   "community_sizes", "partition_load")


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture(scope="module")
def mesh(tmp_path_factory):
    path = tmp_path_factory.mktemp("graphs") / "mesh.mtx"
    write_graph(path, generators.delaunay(k=9, seed=3))
    return path


def _run(runner, args):
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    return res


def _sources(page: str) -> set[str]:
    """The names of the page's ColumnDataSources (in the document's JSON)."""
    return {name for kind, name in re.findall(r'"type":"object","name":"(\w+)","id":"[^"]+","attributes":\{'
                                              r'"name":"(\w+)"', page) if kind == "ColumnDataSource"}


def _offline(page: str) -> None:
    """No script or stylesheet is fetched: every <script> is inline, no <link> names the web."""
    assert "cdn.bokeh.org" not in page
    assert not re.findall(r"<script[^>]*\bsrc=", page, re.IGNORECASE)
    assert not re.findall(r"<link[^>]*\bhref=[\"']?https?:", page, re.IGNORECASE)


def _reference_load(graph: Graph, k: int) -> dict:
    """Each partition's vertices, entries and cut entries, counted on the engine's own partitions."""
    parts = graph.partition(k)
    return {"lo": [p.lo for p in parts], "vertices": [p.hi - p.lo for p in parts], "entries": [p.nnz for p in parts],
            "cut_entries": [int(((p.indices < p.lo) | (p.indices >= p.hi)).sum()) for p in parts]}


# ----------------------------------------------------------------------- summary fields
def test_run_report_of_a_matching(runner, mesh, tmp_path):
    out, page_path = tmp_path / "m.csv", tmp_path / "m.html"
    args = ["run", str(mesh), "-a", "suitor", "--device", "cpu", "--partitions", "3", "-q", "-o", str(out),
            "--run-report", str(page_path)]
    _run(runner, args)
    summary = json.loads((tmp_path / "m.json").read_text())
    rounds = summary["rounds"]
    assert rounds >= 2 and len(summary["messages_per_round"]) == rounds
    for key in ("compute_s_per_round", "exchange_s_per_round", "idle_s_per_round"):
        assert len(summary[key]) == rounds and min(summary[key]) >= 0
    # the per-round seconds add up to the totals the summary has always had
    assert sum(summary["compute_s_per_round"]) == pytest.approx(summary["time_s"]["compute_s"])
    assert sum(summary["exchange_s_per_round"]) == pytest.approx(summary["time_s"]["exchange_s"])
    assert summary["transport"] == "local"
    assert summary["command"] == shlex.join(["mgmatch", *args])
    # in-process every round is heard: the matched share rises to the result's, 2 * pairs / n
    trace = summary["matched_fraction_per_round"]
    assert trace["round"] == list(range(1, rounds + 1))
    assert trace["fraction"] == sorted(trace["fraction"])
    assert trace["fraction"][-1] == pytest.approx(2 * summary["cardinality"] / summary["n"])
    graph = read_graph(mesh)
    assert summary["partition_load"] == _reference_load(graph, 3)
    assert sum(summary["partition_load"]["entries"]) == graph.nnz

    page = page_path.read_text()
    _offline(page)
    assert set(MATCHING_SOURCES) <= _sources(page)
    assert str(out) in page and "suitor" in page
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_run_report_of_louvain(runner, tmp_path, data_dir):
    out, page_path = tmp_path / "c.csv", tmp_path / "c.html"
    _run(runner, ["run", str(data_dir / "netscience.mtx"), "-a", "louvain", "--device", "cpu", "--partitions", "2",
                  "-q", "-o", str(out), "--run-report", str(page_path)])
    summary = json.loads((tmp_path / "c.json").read_text())
    # the community sizes, binned by doubling sizes, against the written communities
    sizes = np.bincount(read_table(out)["community"])
    sizes = sizes[sizes > 0]
    hist = summary["community_sizes"]
    expected = np.bincount([int(s).bit_length() - 1 for s in sizes])
    assert hist["communities"] == expected.tolist() and sum(hist["communities"]) == summary["n_communities"]
    assert hist["size_from"] == [2**k for k in range(len(expected))]
    assert hist["size_to"] == [2 ** (k + 1) - 1 for k in range(len(expected))]
    assert hist["largest"] == sizes.max()
    assert len(summary["messages_per_round"]) == len(summary["compute_s_per_round"]) == summary["time_s"]["rounds"]
    assert summary["m"] == read_graph(data_dir / "netscience.mtx").m
    page = page_path.read_text()
    _offline(page)
    assert set(LOUVAIN_SOURCES) <= _sources(page)


def test_run_report_of_stable_marriage_and_bipartite_matching(runner, tmp_path, data_dir):
    prefs = tmp_path / "sm.csv"
    _run(runner, ["generate", "sm_random", "-p", "n=40", "-p", "seed=2", "-o", str(prefs)])
    _run(runner, ["run", str(prefs), "-a", "gale-shapley", "--device", "cpu", "--partitions", "2", "-q",
                  "-o", str(tmp_path / "sm_out.csv"), "--run-report", str(tmp_path / "sm.html")])
    summary = json.loads((tmp_path / "sm_out.json").read_text())
    assert summary["matched_fraction_per_round"]["fraction"][-1] == pytest.approx(summary["matched"] / 40)
    assert "partition_load" not in summary  # a preference table is not split by vertex ranges here
    assert {"messages_per_round", "time_per_round", "matched_fraction_per_round"} <= _sources(
        (tmp_path / "sm.html").read_text())

    _run(runner, ["run", str(data_dir / "west0479.mtx"), "-a", "gpr", "--device", "cpu", "-q",
                  "-o", str(tmp_path / "b.csv"), "--run-report", str(tmp_path / "b.html")])
    page = (tmp_path / "b.html").read_text()
    _offline(page)
    assert "479 rows x 479 columns" in page and "No messages per round" not in page


def test_partition_load_of_an_empty_partition_and_one_partition():
    g = Graph.from_edges([0, 0], [1, 2], n=5)  # vertices 3 and 4 have no edges
    assert partition_load(g, 1) == {"lo": [0], "vertices": [5], "entries": [4], "cut_entries": [0]}
    assert partition_load(g, 4) == _reference_load(g, 4)
    assert partition_load(Graph.from_edges([0], [0], bipartite=True), 1) is None


# ----------------------------------------------------------------------------- the page
def test_page_escapes_the_summary_and_says_what_is_missing():
    summary = {"algorithm": "suitor", "input": "<script>alert(1)</script>.mtx", "n": 3,
               "command": "mgmatch run '<b>.mtx' -o m.csv", "messages_per_round": "not a list",
               "time_s": {"total": 0.5, "rounds": 3}}
    page = render_run_report(summary)
    _offline(page)
    # escaped for the header's HTML, and that again by Bokeh for the document's JSON in the page
    assert "<script>alert(1)" not in page and "&amp;lt;script&amp;gt;alert(1)" in page
    assert "&amp;lt;b&amp;gt;.mtx" in page and "&lt;b&gt;.mtx" not in page
    assert "No messages per round in this summary." in page
    assert _sources(page) == set()


def test_page_of_a_run_without_rounds_or_messages():
    page = render_run_report({"algorithm": "suitor", "n": 0, "m": 0, "rounds": 0, "messages_per_round": [],
                              "compute_s_per_round": [], "exchange_s_per_round": [], "idle_s_per_round": []})
    assert "The run had no rounds." in page and _sources(page) == set()
    page = render_run_report({"algorithm": "suitor", "n": 4, "m": 2, "rounds": 1, "partitions": 1,
                              "messages_per_round": [0], "compute_s_per_round": [0.5], "exchange_s_per_round": [0.0],
                              "idle_s_per_round": [0.0]})
    assert "No messages crossed partitions: the run had one partition." in page
    assert _sources(page) == {"time_per_round"}


# --------------------------------------------------------------------------- mgmatch report
def test_report_command_from_a_summary(runner, mesh, tmp_path):
    _run(runner, ["run", str(mesh), "--device", "cpu", "--partitions", "2", "-q", "-o", str(tmp_path / "m.csv")])
    summary = json.loads((tmp_path / "m.json").read_text())
    assert "matched_fraction_per_round" not in summary  # quiet and no run report: no round was watched
    res = _run(runner, ["report", str(tmp_path / "m.json")])
    assert res.output.strip() == f"wrote {tmp_path / 'm.html'}"
    page = (tmp_path / "m.html").read_text()
    assert {"messages_per_round", "time_per_round", "partition_load"} <= _sources(page)
    _run(runner, ["report", str(tmp_path / "m.json"), "-o", str(tmp_path / "sub" / "again.html")])
    assert (tmp_path / "sub" / "again.html").stat().st_size > 0


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ("{not json", "is not JSON"),
    ("[1, 2]", "is not an mgmatch summary"),
    ('{"n": 3}', "is not an mgmatch summary"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"algorithm": "suitor", "n": ' + "9" * 5000 + "}", "is not an mgmatch summary"),
])
def test_report_command_refuses_what_is_not_a_summary(runner, tmp_path, content, message):
    source = tmp_path / "s.json"
    if content is not None:
        source.write_text(content)
    res = runner.invoke(main, ["report", str(source), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and message in res.output and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("field", ["time_s", "versions"])
@pytest.mark.parametrize("value", ['"text"', "3", "[1, 2]", "NaN", "null"])
def test_report_command_takes_a_summary_whose_fields_have_other_types(runner, mesh, tmp_path, field, value):
    # a summary edited by hand, or of another version: a field that is not the object it should
    # be is left out of the page, not a traceback
    _run(runner, ["run", str(mesh), "--device", "cpu", "-q", "-o", str(tmp_path / "m.csv")])
    text = (tmp_path / "m.json").read_text()
    summary = json.loads(text)
    assert isinstance(summary[field], dict)
    summary[field] = "@"
    (tmp_path / "m.json").write_text(json.dumps(summary).replace('"@"', value))
    res = _run(runner, ["report", str(tmp_path / "m.json")])
    assert res.output.strip() == f"wrote {tmp_path / 'm.html'}"


def test_report_paths_are_checked_before_work(runner, mesh, tmp_path):
    res = runner.invoke(main, ["report", str(mesh), "-o", str(mesh)])
    assert res.exit_code == 2 and "is the summary file" in res.output
    res = runner.invoke(main, ["run", str(mesh), "-o", str(tmp_path / "m.csv"), "--run-report", str(mesh)])
    assert res.exit_code == 2 and "run report" in res.output and "input file" in res.output
    res = runner.invoke(main, ["run", str(mesh), "-o", str(tmp_path / "m.csv"), "--run-report", str(tmp_path)])
    assert res.exit_code == 2 and "is a directory" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_failed_job_writes_no_run_report(runner, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("0,1,2.0\n1,2,-3.0\n")  # a negative weight: refused
    res = runner.invoke(main, ["run", str(bad), "-o", str(tmp_path / "m.csv"), "--run-report",
                               str(tmp_path / "m.html")])
    assert res.exit_code == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


# ----------------------------------------------------------------------- in a browser
def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path is not None:
            return path
    return None


#: The page's colours (mgmatch.report): bars of messages and compute, bars of exchange, the matched line.
PALETTE = {"blue": (0x1F, 0x77, 0xB4), "orange": (0xFF, 0x7F, 0x0E), "green": (0x2C, 0xA0, 0x2C)}


def test_run_report_draws_in_a_headless_browser(runner, mesh, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium, chromium-browser or google-chrome on PATH to draw the page")
    from PIL import Image  # noqa: PLC0415  (bokeh requires Pillow)

    page = tmp_path / "m.html"
    _run(runner, ["run", str(mesh), "--device", "cpu", "--partitions", "2", "-q", "-o", str(tmp_path / "m.csv"),
                  "--run-report", str(page)])
    shot = tmp_path / "m.png"
    # offline: every request to the network goes to a proxy that is not there
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", "--proxy-server=127.0.0.1:9", "--window-size=1300,1200",
           "--virtual-time-budget=10000", f"--screenshot={shot}", page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert shot.exists(), done.stderr[-2000:]
    pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3)
    assert len(np.unique(pixels, axis=0)) > 300  # a blank page has one colour, a page of text a few hundred greys
    drawn = {name: int((pixels == rgb).all(axis=1).sum()) for name, rgb in PALETTE.items()}
    assert min(drawn.values()) > 200, drawn  # the charts' bars and lines, not only the header's text
