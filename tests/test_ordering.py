"""mgmatch.reorder: the same graph numbered so that ranges of ids cut few edges, with the map back."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import mgmatch
from mgmatch import Graph, ParameterError, generators, verify
from mgmatch.cli import main
from mgmatch.convert import GraphInput, as_graph, matching_as_pairs, to_pandas
from mgmatch.ordering import cut_fraction


@pytest.fixture(scope="module")
def drawn():
    return generators.rgg(14, seed=3)  # points numbered as drawn: half of the entries cross the middle


def _pairs(result) -> set:
    """The matched pairs in the input's ids, each as (smaller, larger)."""
    return {tuple(sorted(p)) for p in matching_as_pairs(result)}


def _edges_by_id(g: Graph, ids=None) -> dict:
    u, v, w = g.edges()
    if ids is not None:
        u, v = ids[u], ids[v]
    return {(min(a, b), max(a, b)): x for a, b, x in zip(u.tolist(), v.tolist(), w.tolist())}


def test_the_same_graph_numbered_anew(drawn):
    it = mgmatch.reorder(drawn)
    assert isinstance(it, GraphInput) and it.vertices.renumbered
    assert sorted(it.vertices.ids.tolist()) == list(range(drawn.n))
    assert _edges_by_id(it.graph, it.vertices.ids) == _edges_by_id(drawn)  # every edge with its weight
    assert it.graph.weighted and it.graph.weights.dtype == drawn.weights.dtype
    assert cut_fraction(drawn, 2) > 0.45 and cut_fraction(it.graph, 2) < 0.02
    assert cut_fraction(drawn, 4) > 0.7 and cut_fraction(it.graph, 4) < 0.05
    again = mgmatch.reorder(drawn)
    assert np.array_equal(again.vertices.ids, it.vertices.ids)  # deterministic
    unit = generators.rgg(10, seed=1, weights=None)
    assert not mgmatch.reorder(unit).graph.weighted


def test_matchings_and_communities_map_back(drawn):
    it = mgmatch.reorder(drawn)
    for run in (lambda g: mgmatch.suitor(g, device="cpu", partitions=2), lambda g: mgmatch.b_suitor(g, 2, device="cpu")):
        result = run(it)
        assert result.mapping is it
        # distinct random weights: one greedy (b-)matching, whatever the numbering
        assert _pairs(result) == _pairs(run(drawn))
    mate = np.full(drawn.n, -1)
    pairs = to_pandas(mgmatch.suitor(it, device="cpu"))
    mate[pairs["u"]], mate[pairs["v"]] = pairs["v"], pairs["u"]
    np.testing.assert_array_equal(mate, verify.greedy_matching(drawn))
    communities = mgmatch.louvain(it, device="cpu")
    table = to_pandas(communities)
    labels = np.empty(drawn.n, dtype=np.int64)
    labels[table["vertex"].to_numpy()] = table["community"].to_numpy()
    assert mgmatch.modularity(drawn, labels) == pytest.approx(communities.modularity[-1], abs=1e-9)


def test_labels_stay_labels():
    g = as_graph((["a", "b", "c", "d", "a"], ["c", "d", "b", "a", "d"], [5.0, 4.0, 3.0, 2.0, 1.0]))
    it = mgmatch.reorder(g)
    assert sorted(it.vertices.ids.tolist()) == ["a", "b", "c", "d"]
    pairs = _pairs(mgmatch.suitor(it, device="cpu"))
    assert pairs == _pairs(mgmatch.suitor(g, device="cpu")) == {("a", "c"), ("b", "d")}


@pytest.mark.parametrize("graph", [
    generators.kron(9, seed=2),  # hubs: rows longer than the in-place sort takes
    generators.delaunay(9, seed=1, weights=None),
    Graph.from_edges(np.zeros(300, np.int64), np.arange(1, 301), np.linspace(1, 2, 300), dtype="float32"),  # a star
])
def test_rows_renamed_and_sorted_as_from_edges_builds_them(graph):
    """The new graph's arrays are those Graph.from_edges builds from the renamed edges."""
    from mgmatch.ordering import _renumbered

    order = np.random.default_rng(5).permutation(graph.n)
    new_id = np.empty(graph.n, dtype=np.int64)
    new_id[order] = np.arange(graph.n)
    u, v, w = graph.edges()
    expected = Graph.from_edges(new_id[u], new_id[v], w if graph.weighted else None, n=graph.n,
                                dtype=graph.weights.dtype.name)
    got = _renumbered(graph, order)
    for a, b in ((got.indptr, expected.indptr), (got.indices, expected.indices), (got.weights, expected.weights)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert got.weighted == graph.weighted and got.n == graph.n


@pytest.mark.parametrize("n", [0, 1, 2])
def test_tiny_graphs(n):
    g = Graph.from_edges([0] if n == 2 else [], [1] if n == 2 else [], n=n)
    it = mgmatch.reorder(g)
    assert it.graph.n == n and it.graph.m == (1 if n == 2 else 0) and len(it.vertices.ids) == n


def test_refusals(drawn):
    with pytest.raises(ParameterError, match="method must be one of 'rcm'"):
        mgmatch.reorder(drawn, method="metis")
    bipartite = Graph.from_edges([0, 1], [1, 0], bipartite=True, shape=(2, 2))
    with pytest.raises(ParameterError, match="undirected"):
        mgmatch.reorder(bipartite)
    with pytest.raises(ParameterError, match="not a bipartite graph"):
        cut_fraction(bipartite, 2)
    assert cut_fraction(mgmatch.reorder(drawn), 2) == cut_fraction(mgmatch.reorder(drawn).graph, 2)


def test_bipartite_matching_of_a_reordered_graph_maps_rows_and_columns(drawn):
    """Bipartite matching takes an undirected graph as its double cover: rows and columns are the
    same vertices, so both map back through the one map."""
    it = mgmatch.reorder(drawn)
    table = to_pandas(mgmatch.bipartite_matching(it, device="cpu"))
    plain = mgmatch.bipartite_matching(drawn, device="cpu")
    assert len(table) == plain.cardinality
    edges = _edges_by_id(drawn)
    assert all((min(r, c), max(r, c)) in edges for r, c in zip(table["row"], table["col"]))


def test_placed_on_a_cluster(dask_client, drawn):
    """A reordered graph placed on the workers: the rounds carry a few hundred messages where the
    order drawn carried tens of thousands, and the result carries the map back."""
    from mgmatch.distributed import place

    it = mgmatch.reorder(drawn)
    placed = place(dask_client, it, partitions=2)
    assert placed.mapping is it
    result = mgmatch.suitor(placed, client=dask_client, device="cpu")
    assert result.mapping is it
    assert _pairs(result) == _pairs(mgmatch.suitor(drawn, device="cpu"))
    as_drawn = mgmatch.suitor(place(dask_client, drawn, partitions=2), client=dask_client, device="cpu")
    assert 10 * sum(result.rounds.messages) < sum(as_drawn.rounds.messages)


# --------------------------------------------------------------------------- command line
@pytest.fixture
def graph_file(tmp_path, drawn):
    from mgmatch.io import write_graph

    path = tmp_path / "g.parquet"
    write_graph(path, drawn)
    return path


def _run(*args):
    return CliRunner().invoke(main, ["run", "--device", "cpu", "-q", *map(str, args)])


def test_cli_reorder_writes_the_input_ids(graph_file, tmp_path):
    plain, ordered = tmp_path / "m0.parquet", tmp_path / "m1.parquet"
    assert _run(graph_file, "-a", "suitor", "-o", plain).exit_code == 0
    res = _run(graph_file, "-a", "suitor", "--reorder", "rcm", "-o", ordered)
    assert res.exit_code == 0, res.output
    assert pq.read_table(ordered).equals(pq.read_table(plain))  # the same rows in the same order
    summary = json.loads(ordered.with_suffix(".json").read_text())
    assert summary["reorder"] == "rcm" and summary["time_s"]["reorder"] > 0
    assert summary["renumbered"] is False  # the ids read were 0 .. n-1, and the table names them so
    communities = tmp_path / "c.parquet"
    assert _run(graph_file, "-a", "louvain", "--all-levels", "--reorder", "rcm", "-o", communities).exit_code == 0
    table = pq.read_table(communities).to_pydict()
    n = len(set(table["vertex"]))
    for level in set(table["level"]):
        rows = [v for lv, v in zip(table["level"], table["vertex"]) if lv == level]
        assert rows == list(range(n))


def test_cli_reorder_on_a_cluster(graph_file, tmp_path):
    """The same table from two CPU workers as from a plain run in this process."""
    plain, ordered = tmp_path / "m0.parquet", tmp_path / "m1.parquet"
    assert _run(graph_file, "-a", "bsuitor", "--b", "2", "-o", plain).exit_code == 0
    res = _run(graph_file, "-a", "bsuitor", "--b", "2", "--reorder", "rcm", "--workers", "2", "-o", ordered)
    assert res.exit_code == 0, res.output
    assert pq.read_table(ordered).equals(pq.read_table(plain))
    summary = json.loads(ordered.with_suffix(".json").read_text())
    assert summary["workers"] == 2 and summary["reorder"] == "rcm"


def test_cli_reorder_of_labelled_vertices(tmp_path):
    """Labels renumbered on reading, then the vertices numbered anew: the table is a plain run's,
    row for row, and the summary still says the ids were labels."""
    rng = np.random.default_rng(2)
    u, v = rng.integers(0, 400, 3000), rng.integers(0, 400, 3000)
    path = tmp_path / "labels.csv"
    path.write_text("".join(f"v{a},v{b},{w:.9f}\n" for a, b, w in zip(u, v, rng.random(3000)) if a != b))
    tables = []
    for extra in ((), ("--reorder", "rcm")):
        out = tmp_path / f"m{len(extra)}.parquet"
        res = _run(path, "-a", "bsuitor", "--b", "2", *extra, "-o", out)
        assert res.exit_code == 0, res.output
        tables.append(pq.read_table(out))
        assert json.loads(out.with_suffix(".json").read_text())["renumbered"] is True
    assert tables[1].equals(tables[0])


def test_cli_reorder_refusals(graph_file, tmp_path):
    out = tmp_path / "x.parquet"
    for args, message in [
        (("-a", "apfb", "--reorder", "rcm"), "--reorder does not apply to -a apfb"),
        (("-a", "suitor", "--reorder", "rcm", "--read-on-workers", "--workers", "1"), "--read-on-workers"),
        (("-a", "suitor", "--reorder", "bfs"), "'bfs' is not one of"),
    ]:
        res = _run(graph_file, *args, "-o", out)
        assert res.exit_code == 2 and message in res.output, res.output
        assert not out.exists()
    b_file = tmp_path / "b.txt"
    b_file.write_text("\n".join(["2"] * 16384) + "\n")
    res = _run(graph_file, "-a", "bsuitor", "--b", b_file, "--reorder", "rcm", "-o", out)
    assert res.exit_code == 2 and "give one b for all vertices" in res.output, res.output


def test_pipeline_reorder(graph_file, tmp_path):
    out = tmp_path / "p.parquet"
    spec = tmp_path / "jobs.yaml"
    spec.write_text(f"jobs:\n  - name: ordered\n    input: {graph_file}\n    output: {out}\n    algorithm: suitor\n"
                    f"    device: cpu\n    reorder: rcm\n")
    res = CliRunner().invoke(main, ["run", "-q", str(spec)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.with_suffix(".json").read_text())["reorder"] == "rcm"
    spec.write_text(spec.read_text().replace("reorder: rcm", "reorder: spectral"))
    res = CliRunner().invoke(main, ["run", "-q", str(spec)])
    assert res.exit_code == 2 and "reorder must be 'none' or one of 'rcm'" in res.output, res.output
