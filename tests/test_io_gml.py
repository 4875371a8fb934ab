"""Reading GML: a real graph against NetworkX, each rule of the format, each bad input, the CLI."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from mgmatch import Graph, InputError
from mgmatch.cli import main
from mgmatch.io import SUFFIXES, format_of, graph_info, read_graph


# ------------------------------------------------------------------------------ helpers
def write_gml(path, text: str, *, compress: bool = False) -> Path:
    data = text.encode()
    Path(path).write_bytes(gzip.compress(data) if compress else data)
    return Path(path)


def gml(nodes, edges=(), *, directed=None, weight_key="weight", extra="") -> str:
    """A GML text in Newman's layout: one key per line, brackets on their own lines."""
    lines = ['Creator "a test"', "Version 1", "graph", "["]
    if directed is not None:
        lines.append(f"  directed {directed}")
    lines.append(extra)
    for v in nodes:
        lines += ["  node", "  [", f"    id {v}", f'    label "v{v}"', "  ]"]
    for edge in edges:
        lines += ["  edge", "  [", f"    source {edge[0]}", f"    target {edge[1]}"]
        if len(edge) > 2:
            lines.append(f"    {weight_key} {edge[2]}")
        lines.append("  ]")
    lines.append("]")
    return "\n".join(lines) + "\n"


def edge_set(graph: Graph) -> dict:
    u, v, w = (np.asarray(a) for a in graph.edges())
    return {(int(a), int(b)): float(c) for a, b, c in zip(u, v, w)}


def error_of(path, **options) -> InputError:
    with pytest.raises(InputError) as info:
        read_graph(path, **options)
    assert info.value.path == str(path)
    assert str(path) in str(info.value)
    return info.value


# --------------------------------------------------------------------------- a real graph
def test_football_matches_networkx(data_dir):
    nx = pytest.importorskip("networkx")
    path = data_dir / "football.gml"
    got = read_graph(path)
    want = Graph.from_networkx(nx.read_gml(path, label="id"))
    assert (got.n, got.m, got.weighted) == (want.n, want.m, want.weighted) == (115, 613, False)
    assert edge_set(got) == edge_set(want)
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)


def test_football_and_its_suffixes(data_dir, tmp_path):
    path = data_dir / "football.gml"
    g = read_graph(path)
    assert (g.n, g.m, g.weighted, g.bipartite) == (115, 613, False, False)
    assert format_of(path) == "gml" and format_of("graphs/football.GML.gz") == "gml"
    assert ".gml" in SUFFIXES
    compressed = write_gml(tmp_path / "football.gml.gz", path.read_text(), compress=True)
    assert edge_set(read_graph(compressed)) == edge_set(g)
    renamed = write_gml(tmp_path / "football.txt", path.read_text())
    assert edge_set(read_graph(renamed, format="gml")) == edge_set(g)


def test_graph_info(data_dir):
    info = graph_info(data_dir / "football.gml")
    assert info["format"] == "gml"
    assert (info["n"], info["m"], info["nnz"], info["isolated"]) == (115, 613, 1226, 0)
    assert (info["degree"]["min"], info["degree"]["max"]) == (7, 12)
    assert info["one_based"] is False
    assert info["gml"] == {"directed": False, "nodes": 115, "edges": 613}


# ------------------------------------------------------------------------ rules of the format
def test_one_based_ids_shift_to_zero_based(tmp_path):
    path = write_gml(tmp_path / "g.gml", gml([1, 2, 3, 4], [(1, 2), (2, 3), (3, 4)]))
    g = read_graph(path)
    assert (g.n, g.m) == (4, 3)
    assert edge_set(g) == {(0, 1): 1.0, (1, 2): 1.0, (2, 3): 1.0}
    assert graph_info(path)["one_based"] is True
    zero_based = read_graph(path, one_based=False)  # id 0 is then a vertex no node names
    assert zero_based.n == 5 and edge_set(zero_based) == {(1, 2): 1.0, (2, 3): 1.0, (3, 4): 1.0}
    # Ids that start at 0 stay as they are, whatever order the nodes come in.
    g0 = read_graph(write_gml(tmp_path / "z.gml", gml([2, 0, 1], [(0, 2)])))
    assert g0.n == 3 and edge_set(g0) == {(0, 2): 1.0}


def test_declared_nodes_without_edges_are_isolated_vertices(tmp_path):
    path = write_gml(tmp_path / "g.gml", gml([0, 1, 2, 3, 4], [(0, 1), (1, 2)]))
    g = read_graph(path)
    assert (g.n, g.m) == (5, 2)
    info = graph_info(path)
    assert (info["n"], info["m"], info["isolated"]) == (5, 2, 2)
    no_edges = read_graph(write_gml(tmp_path / "e.gml", gml([0, 1, 2])))
    assert (no_edges.n, no_edges.m) == (3, 0)


@pytest.mark.parametrize("key", ["weight", "value"])
def test_weights_from_weight_or_value(tmp_path, key):
    path = write_gml(tmp_path / "g.gml", gml([0, 1, 2], [(0, 1, 1.5), (1, 2, 3)], weight_key=key))
    g = read_graph(path)
    assert g.weighted and edge_set(g) == {(0, 1): 1.5, (1, 2): 3.0}
    unweighted = read_graph(path, weighted=False)
    assert not unweighted.weighted and edge_set(unweighted) == {(0, 1): 1.0, (1, 2): 1.0}


def test_weight_wins_over_value_and_reals_in_every_form(tmp_path):
    text = (
        "graph [\n"
        "  node [ id 0 ] node [ id 1 ] node [ id 2 ] node [ id 3 ] node [ id 4 ]\n"
        "  edge [ source 0 target 1 value 9 weight 2.5 ]\n"
        "  edge [ source 1 target 2 weight .5 ]\n"
        "  edge [ source 2 target 3 weight 3E2 ]\n"
        "  edge [ source 3 target 4 weight -2e-1 ]\n"
        "]\n"
    )
    path = write_gml(tmp_path / "g.gml", text)
    g = read_graph(path, negative="abs")
    assert edge_set(g) == {(0, 1): 2.5, (1, 2): 0.5, (2, 3): 300.0, (3, 4): 0.2}
    err = error_of(path)
    assert "negative weight" in str(err) and err.line == 6


@pytest.mark.parametrize("rule, expected", [("sum", 9.0), ("max", 4.0), ("min", 2.0), ("first", 2.0)])
def test_repeated_edges_merge_by_the_duplicate_rule(tmp_path, rule, expected):
    # NetworkX's reader refuses such a file; the duplicate rule merges the repeats.
    path = write_gml(tmp_path / "g.gml", gml([0, 1, 2], [(0, 1, 2), (1, 0, 3), (0, 1, 4), (1, 2, 1)]))
    g = read_graph(path, duplicates=rule)
    assert edge_set(g) == {(0, 1): expected, (1, 2): 1.0}
    # (0, 1) repeated in the same direction, and (1, 0) naming the same edge from the other end
    assert (g.summary.duplicates_merged, g.summary.mirrored_pairs) == (1, 1)


def test_directed_arcs_become_undirected_edges(tmp_path):
    path = write_gml(tmp_path / "g.gml", gml([0, 1, 2], [(0, 1, 1), (1, 0, 5), (2, 1, 2)], directed=1))
    g = read_graph(path)
    assert (g.n, g.m) == (3, 2)
    assert edge_set(g) == {(0, 1): 5.0, (1, 2): 2.0}
    assert edge_set(read_graph(path, duplicates="sum")) == {(0, 1): 6.0, (1, 2): 2.0}
    assert graph_info(path)["gml"]["directed"] is True
    undirected = write_gml(tmp_path / "u.gml", gml([0, 1], [(0, 1)], directed=0))
    assert graph_info(undirected)["gml"]["directed"] is False


def test_strings_comments_and_other_keys_are_skipped(tmp_path):
    text = (
        "# a comment line\n"
        '   # an indented comment with "a quote and a [ bracket\n'
        'Creator "someone ] # not a comment"\n'
        "Version 2.3\n"
        "graph\n"
        "[\n"
        "  directed 0\n"
        "  multigraph 1\n"
        '  label "a [ graph ] with # in its name"\n'
        "  node\n"
        "  [\n"
        "    id 1\n"
        '    label "one ]"\n'
        "    graphics [ x 1.0 y -2.5 fill \"#ff0000\" Line [ point [ x 1 y 2 ] ] ]\n"
        "  ]\n"
        "  # a comment between nodes\n"
        '  node [ id 2 label "a label\n'
        'across two lines, with [ and ]" value 7 ]\n'
        '  node [ id 3 label "" ]\n'
        '  edge [ source 1 target 2 label "e ]" graphics [ type "line" arrow "last" ] weight 4 ]\n'
        "  edge [ source 2 target 3 id 17 weight 6 ]  # a comment after a pair\n"
        "]\n"
        "# trailing comment\n"
    )
    g = read_graph(write_gml(tmp_path / "g.gml", text))
    assert (g.n, g.m, g.weighted) == (3, 2, True)
    assert edge_set(g) == {(0, 1): 4.0, (1, 2): 6.0}


def test_gzip_compressed(tmp_path):
    text = gml([1, 2, 3], [(1, 2, 0.5), (2, 3, 1.5)], weight_key="value")
    plain = read_graph(write_gml(tmp_path / "g.gml", text))
    packed = read_graph(write_gml(tmp_path / "g.gml.gz", text, compress=True))
    assert edge_set(packed) == edge_set(plain) == {(0, 1): 0.5, (1, 2): 1.5}


@pytest.mark.parametrize("compress", [False, True])
def test_a_leading_byte_order_mark_is_skipped(tmp_path, compress):
    text = gml([1, 2, 3], [(1, 2, 0.5), (2, 3, 1.5)])
    path = tmp_path / ("g.gml.gz" if compress else "g.gml")
    data = b"\xef\xbb\xbf" + text.encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    assert edge_set(read_graph(path)) == edge_set(read_graph(write_gml(tmp_path / "plain.gml", text)))


def test_bipartite_reads_the_double_cover(tmp_path):
    g = read_graph(write_gml(tmp_path / "g.gml", gml([0, 1, 2], [(0, 1), (1, 2)])), bipartite=True)
    assert g.bipartite and g.shape == (3, 3) and g.m == 4


# ------------------------------------------------------------------------------ bad input
def _nodes(*ids) -> str:
    return "".join(f"  node [ id {v} ]\n" for v in ids)


BAD = {
    # name: (text, distinctive part of the message, line or None)
    "no_graph": ('Creator "x"\nVersion 1\n', "no graph [ ... ]", None),
    "only_comments": ("# nothing\n  # here\n", "no graph [ ... ]", None),
    "unclosed_bracket": ('Creator "x"\ngraph [\n' + _nodes(0, 1) + "  edge [ source 0 target 1 ]\n",
                         "never closed", 2),
    "extra_bracket": ("graph [\n" + _nodes(0, 1) + "]\n]\n", "closes no list", 5),
    "node_without_id": ("graph [\n" + _nodes(0) + '  node [\n    label "b"\n  ]\n]\n', "node has no id", 3),
    "duplicate_node_id": ("graph [\n" + _nodes(0, 1, 2, 1) + "]\n", "node id 1 is declared twice (first on line 3)",
                          5),
    "undeclared_node": ("graph [\n" + _nodes(0, 1) + "  edge [ source 0 target 1 ]\n  edge [ source 1 target 5 ]\n"
                        "  edge [ source 6 target 0 ]\n]\n", "edge (1, 5) names node 5, which no node declares", 5),
    "mixed_weights": ("graph [\n" + _nodes(0, 1, 2) + "  edge [ source 0 target 1 value 2 ]\n"
                      "  edge [ source 1 target 2 ]\n]\n", "has no weight", 6),
    "negative_id": ("graph [\n" + _nodes(0) + "  node [\n    id -3\n  ]\n]\n", "node id -3 is negative", 4),
    "nan_weight": ("graph [\n" + _nodes(0, 1) + "  edge [ source 0 target 1 weight NaN ]\n]\n",
                   "weights must be finite", 4),
    "inf_weight": ("graph [\n" + _nodes(0, 1) + "  edge [ source 0 target 1 weight -INF ]\n]\n",
                   "weights must be finite", 4),
    "text_weight": ("graph [\n" + _nodes(0, 1) + '  edge [ source 0 target 1\n    weight "heavy" ]\n]\n',
                    "is not a number", 5),
    "real_id": ("graph [\n  node [ id 1.5 ]\n]\n", "node id '1.5' is not an integer", 2),
    "edge_without_target": ("graph [\n" + _nodes(0, 1) + "  edge [ source 0 ]\n]\n", "edge has no target", 4),
    "key_without_value": ("graph [\n  node [ id 0 label ]\n]\n", "key 'label' has no value", 2),
    "value_without_key": ("graph [\n" + _nodes(0) + "  7\n]\n", "expected a key, found '7'", 3),
    "not_a_token": ("graph [\n" + _nodes(0) + "  node [ id 1x ]\n]\n", "'1x' is not a GML token", 3),
    "unterminated_string": ('graph [\n  node [ id 0 label "zero ]\n]\n', "never closed (no closing", 2),
    "two_graphs": ("graph [\n" + _nodes(0) + "]\ngraph [\n" + _nodes(0) + "]\n", "a second graph", 4),
    "no_nodes": ("graph [\n  directed 0\n]\n", "declares no nodes", None),
    "bad_directed": ("graph [\n  directed 2\n" + _nodes(0) + "]\n", "directed must be 0 or 1", 2),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input(tmp_path, name):
    text, message, line = BAD[name]
    err = error_of(write_gml(tmp_path / f"{name}.gml", text))
    assert message in err.message, err.message
    assert err.line == line
    if line is not None:
        assert f"line {line}:" in str(err)


def test_mixed_weights_are_fine_when_weights_are_ignored(tmp_path):
    text = BAD["mixed_weights"][0]
    g = read_graph(write_gml(tmp_path / "g.gml", text), weighted=False)
    assert (g.n, g.m, g.weighted) == (3, 2, False)


def test_id_zero_under_one_based(tmp_path):
    path = write_gml(tmp_path / "g.gml", "graph [\n" + _nodes(1, 0) + "  edge [ source 0 target 1 ]\n]\n")
    err = error_of(path, one_based=True)
    assert "vertex id 0" in err.message and err.line == 3


@pytest.mark.parametrize("compress", [False, True])
def test_empty_file(tmp_path, compress):
    path = write_gml(tmp_path / ("e.gml.gz" if compress else "e.gml"), "", compress=compress)
    assert "empty" in error_of(path).message


# ------------------------------------------------------------------------------ command line
def test_cli_louvain_on_gml(tmp_path, data_dir):
    out = tmp_path / "c.parquet"
    res = CliRunner().invoke(main, ["run", "--algorithm", "louvain", "--device", "cpu", "-q",
                                    str(data_dir / "football.gml"), "--output", str(out)])
    assert res.exit_code == 0, res.output
    table = pq.read_table(out)
    assert table.column_names == ["vertex", "community"]
    assert table.num_rows == 115
    assert json.loads((tmp_path / "c.json").read_text())["modularity"] > 0.5


def test_cli_malformed_gml_one_line_error_no_output(tmp_path):
    path = write_gml(tmp_path / "bad.gml", BAD["duplicate_node_id"][0])
    out = tmp_path / "out" / "c.parquet"
    res = CliRunner().invoke(main, ["run", "--algorithm", "louvain", "--device", "cpu", "-q", str(path),
                                    "--output", str(out)])
    assert res.exit_code == 2, res.output
    message = res.output.strip()
    assert message.startswith("mgmatch: error:") and "\n" not in message, message
    assert "bad.gml, line 5: node id 1 is declared twice" in message
    assert "Traceback" not in res.output
    assert not out.exists() and not (tmp_path / "out" / "c.json").exists()


def test_cli_info_on_gml(data_dir):
    res = CliRunner().invoke(main, ["info", "--json", str(data_dir / "football.gml")])
    assert res.exit_code == 0, res.output
    facts = json.loads(res.output)
    assert (facts["format"], facts["n"], facts["m"]) == ("gml", 115, 613)
