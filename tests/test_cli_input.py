"""Edge tables as they come: chosen columns (--src, --dst, --weight, --columns), ids that are labels
or sparse 64-bit integers renumbered on the way in and written back in the input's ids, on the
command line, in pipeline files and through mgmatch.io.read_input."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
from click.testing import CliRunner
from scipy.sparse.csgraph import maximum_bipartite_matching

import mgmatch
from mgmatch.cli import main
from mgmatch.convert import to_pandas
from mgmatch.errors import InputError, ParameterError
from mgmatch.io import read_graph, read_input, read_table


@pytest.fixture
def runner():
    return CliRunner()


def _names(count, seed=0):
    """``count`` distinct labels that are not numbers, some of them non-ASCII."""
    rng = np.random.default_rng(seed)
    stems = ["ann", "bob", "çelik", "dana", "émile", "fu", "gus"]
    return [f"{stems[i % len(stems)]}-{i}-{rng.integers(1000)}" for i in rng.permutation(count)]


def _label_edges(n=60, m=240, seed=1):
    """Distinct labelled edges with distinct weights (no ties: one greedy matching)."""
    rng = np.random.default_rng(seed)
    names = _names(n, seed)
    pairs = set()
    while len(pairs) < m:
        a, b = rng.integers(0, n, 2)
        if a != b:
            pairs.add((min(a, b), max(a, b)))
    pairs = sorted(pairs)
    weights = rng.permutation(m) / m + 0.5
    return [(names[a], names[b], float(w)) for (a, b), w in zip(pairs, weights)]


def _greedy_pairs(edges):
    """The greedy matching of labelled edges (heaviest first): what Suitor returns, computed
    on the labels themselves."""
    used, pairs = set(), set()
    for a, b, _ in sorted(edges, key=lambda e: -e[2]):
        if a not in used and b not in used:
            used |= {a, b}
            pairs.add(frozenset((a, b)))
    return pairs


def _pairs(table, u="u", v="v"):
    return {frozenset(pair) for pair in zip(table[u].tolist(), table[v].tolist())}


def _run(runner, *args):
    return runner.invoke(main, ["run", "--device", "cpu", "-q", *map(str, args)])


# ------------------------------------------------------------------------ labels, columns
def test_labelled_csv_with_more_columns_keeps_its_weights_and_its_ids(runner, tmp_path):
    edges = _label_edges()
    path = tmp_path / "follows.csv"
    path.write_text("follower,followee,since,strength\n"
                    + "".join(f"{a},{b},{2000 + i % 20},{w!r}\n" for i, (a, b, w) in enumerate(edges)))
    out = tmp_path / "m.csv"
    res = _run(runner, path, "--src", "follower", "--dst", "followee", "--weight", "strength", "-o", out)
    assert res.exit_code == 0, res.output
    table = read_table(out)
    assert _pairs(table) == _greedy_pairs(edges)
    weights = {frozenset((a, b)): w for a, b, w in edges}
    assert [weights[frozenset(p)] for p in zip(table["u"].tolist(), table["v"].tolist())] == table["weight"].tolist()
    summary = json.loads((tmp_path / "m.json").read_text())
    assert summary["renumbered"] is True
    assert summary["vertex_ids"] == {"renumbered": True, "vertices": 60, "id_type": "str"}
    # the same columns by number, and all three at once
    for args in (["--columns", "1,2,4"], ["--src", "1", "--dst", "2", "--weight", "4"], ["--weight", "strength"]):
        again = tmp_path / "again.csv"
        res = _run(runner, path, *args, "-o", again)
        assert res.exit_code == 0, res.output
        assert again.read_text() == out.read_text()
    res = runner.invoke(main, ["verify", str(path), str(out), "--weight", "strength"])
    assert res.exit_code == 0 and json.loads(res.output)["ok"] is True, res.output


def test_a_wide_header_names_its_weight_column_without_options(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("src,note,dst,weight\n0,a,1,1.5\n1,b,2,2.5\n")
    g = read_graph(path)
    u, v, w = g.edges()
    assert (u.tolist(), v.tolist(), w.tolist()) == ([0, 1], [1, 2], [1.5, 2.5])
    plain = tmp_path / "plain.csv"
    plain.write_text("a,b,c\n0,1,1.5\n1,2,2.5\n")  # three fields: the third is the weight, as before
    assert read_graph(plain).edges()[2].tolist() == [1.5, 2.5]


def test_labelled_parquet_in_a_pipeline_and_on_the_command_line(runner, tmp_path):
    edges = _label_edges(seed=3)
    pq.write_table(pa.table({"who": [e[0] for e in edges], "whom": [e[1] for e in edges],
                             "score": [e[2] for e in edges], "day": np.arange(len(edges))}), tmp_path / "e.parquet")
    (tmp_path / "jobs.yaml").write_text(
        "defaults: {device: cpu, src: who, dst: whom}\n"
        "jobs:\n"
        "  - {input: e.parquet, output: out/m.parquet, weight: score}\n"
        "  - {input: e.parquet, output: out/c.parquet, algorithm: louvain, columns: [who, whom, score]}\n")
    res = runner.invoke(main, ["run", "-q", str(tmp_path / "jobs.yaml")])
    assert res.exit_code == 0, res.output
    table = pq.read_table(tmp_path / "out" / "m.parquet").to_pydict()
    assert {frozenset(p) for p in zip(table["u"], table["v"])} == _greedy_pairs(edges)
    assert pa.types.is_string(pq.read_table(tmp_path / "out" / "m.parquet").schema.field("u").type)
    # Louvain: every label once, in the communities Louvain finds on the dense graph
    read = read_input(tmp_path / "e.parquet", columns=("who", "whom", "score"))
    expected = to_pandas(mgmatch.louvain(read.graph, device="cpu"), read)
    found = pq.read_table(tmp_path / "out" / "c.parquet").to_pandas()
    assert sorted(found["vertex"]) == sorted({e[0] for e in edges} | {e[1] for e in edges})
    assert found.sort_values("vertex").reset_index(drop=True).equals(expected.sort_values("vertex").reset_index(drop=True))
    assert json.loads((tmp_path / "out" / "c.json").read_text())["renumbered"] is True
    out = tmp_path / "cli.parquet"
    res = _run(runner, tmp_path / "e.parquet", "--columns", "who,whom,score", "-o", out)
    assert res.exit_code == 0, res.output
    assert pq.read_table(out).equals(pq.read_table(tmp_path / "out" / "m.parquet"))


def test_labelled_bipartite_matching_is_maximum(runner, tmp_path):
    rng = np.random.default_rng(5)
    users, items = _names(40, 1), [f"item:{k}" for k in range(25)]
    pairs = sorted({(users[a], items[b]) for a, b in zip(rng.integers(0, 40, 90), rng.integers(0, 25, 90))})
    path = tmp_path / "likes.tsv"
    path.write_text("user\titem\n" + "".join(f"{a}\t{b}\n" for a, b in pairs))
    out = tmp_path / "b.csv"
    res = _run(runner, path, "-a", "apfb", "--bipartite", "--src", "user", "--dst", "item", "-o", out)
    assert res.exit_code == 0, res.output
    found = read_table(out)
    row_of = {u: i for i, u in enumerate(sorted({a for a, _ in pairs}))}
    col_of = {c: i for i, c in enumerate(sorted({b for _, b in pairs}))}
    matrix = sp.csr_array((np.ones(len(pairs)), ([row_of[a] for a, _ in pairs], [col_of[b] for _, b in pairs])),
                          shape=(len(row_of), len(col_of)))
    assert len(found["row"]) == int((maximum_bipartite_matching(matrix, perm_type="column") >= 0).sum())
    assert set(zip(found["row"].tolist(), found["col"].tolist())) <= set(pairs)
    assert len(set(found["row"].tolist())) == len(set(found["col"].tolist())) == len(found["row"])


@pytest.mark.parametrize("ids", [["alice", "bob", "carol"], [-5, 2**40, 7]], ids=["labels", "sparse"])
def test_a_double_cover_matching_names_both_columns_by_the_input_ids(runner, tmp_path, ids):
    # --no-bipartite matches the graph's double cover, whose columns are its vertices again: the
    # col column maps back through the same ids as the row column (it was left dense)
    a, b, c = ids
    path = tmp_path / "g.csv"
    path.write_text(f"src,dst\n{a},{b}\n{a},{c}\n{b},{c}\n")
    out = tmp_path / "m.csv"
    res = _run(runner, path, "-a", "apfb", "--no-bipartite", "-o", out)
    assert res.exit_code == 0, res.output
    found = read_table(out, text=("row", "col"))
    pairs = set(zip(found["row"].tolist(), found["col"].tolist()))
    edges = {(str(x), str(y)) for x, y in ((a, b), (a, c), (b, c))}
    assert len(pairs) == 3 and all((x, y) in edges or (y, x) in edges for x, y in pairs)
    res = runner.invoke(main, ["verify", "--no-bipartite", str(path), str(out)])
    assert res.exit_code == 0, res.output


def test_labels_that_need_quoting_survive_a_csv_result(runner, tmp_path):
    names = ['Smith, J', 'say "hi"', "plain", "x\ty"]
    pq.write_table(pa.table({"src": names[:2] + names[2:3], "dst": names[2:] + names[1:2], "weight": [3.0, 2.0, 1.0]}),
                   tmp_path / "q.parquet")
    out = tmp_path / "m.csv"
    res = _run(runner, tmp_path / "q.parquet", "-o", out)
    assert res.exit_code == 0, res.output
    assert _pairs(read_table(out)) == {frozenset(("Smith, J", "plain")), frozenset(('say "hi"', "x\ty"))}
    res = runner.invoke(main, ["verify", str(tmp_path / "q.parquet"), str(out)])
    assert res.exit_code == 0, res.output


def test_a_csv_edge_list_of_quoted_labels_reads_each_as_one_field(runner, tmp_path):
    # as a CSV writer (and run's own result) quotes a label that holds the delimiter: a quoted
    # field is one field, its commas, blanks, '#' and doubled quotes included; the result names
    # the labels as they were, and run's own quoted result reads back as the input's edges
    path = tmp_path / "q.csv"
    path.write_text('"Smith, J","Doe,  A",1.5\n"Doe,  A", "say ""hi"" # x" ,2.5 # a comment\n'
                    '"say ""hi"" # x",plain,1.0\n')
    out = tmp_path / "m.csv"
    res = _run(runner, path, "-o", out)
    assert res.exit_code == 0, res.output
    assert _pairs(read_table(out)) == {frozenset(("Doe,  A", 'say "hi" # x'))}
    summary = json.loads((tmp_path / "m.json").read_text())
    assert summary["n"] == 4 and summary["m"] == 3
    res = runner.invoke(main, ["verify", str(path), str(out)])
    assert res.exit_code == 0, res.output
    again = tmp_path / "again.csv"
    res = _run(runner, out, "-o", again)  # the result read as an edge list: its own quoting read back
    assert res.exit_code == 0, res.output
    assert _pairs(read_table(again)) == {frozenset(("Doe,  A", 'say "hi" # x'))}
    bad = tmp_path / "bad.csv"
    bad.write_text('"a","b",1\n"b,"c",2\n')  # a quote left open: its line named
    res = _run(runner, bad, "-o", tmp_path / "b.csv")
    assert res.exit_code == 2 and "line 2" in res.output and "Traceback" not in res.output


# ------------------------------------------------------------------------ integer ids
@pytest.mark.parametrize("ids", [[2**40, 7, 2**62, 3], [-5, 0, 4, -(2**50)]], ids=["sparse", "negative"])
def test_sparse_or_negative_integer_ids_are_renumbered(runner, tmp_path, ids):
    a, b, c, d = ids
    path = tmp_path / "g.csv"
    path.write_text(f"{a},{b},1.0\n{b},{c},3.0\n{c},{d},1.0\n{d},{a},2.0\n")
    out = tmp_path / "m.csv"
    res = _run(runner, path, "-o", out)
    assert res.exit_code == 0, res.output
    table = read_table(out)
    assert table["u"].dtype == np.int64
    assert _pairs(table) == {frozenset((b, c)), frozenset((d, a))}
    summary = json.loads((tmp_path / "m.json").read_text())
    assert summary["renumbered"] is True and summary["n"] == 4 and summary["id_offset"] == 0
    assert runner.invoke(main, ["verify", str(path), str(out)]).exit_code == 0


def test_dense_integer_ids_are_kept_and_said_so(runner, tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("0,1,1.0\n1,2,3.0\n2,3,1.0\n3,9,2.0\n")  # vertices 4..8 isolated
    out = tmp_path / "m.csv"
    res = _run(runner, path, "-o", out)
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "m.json").read_text())
    assert summary["renumbered"] is False and summary["n"] == 10 and "vertex_ids" not in summary
    assert _pairs(read_table(out)) == {frozenset((1, 2)), frozenset((3, 9))}


def test_read_input_maps_back_and_read_graph_still_refuses_labels(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("# comment\nb a 2.0\nc b 1.0\n")
    read = read_input(path)
    assert read.renumbered and read.vertices.ids.tolist() == ["a", "b", "c"]
    assert to_pandas(mgmatch.suitor(read.graph, device="cpu"), read).to_dict("list") == \
        {"u": ["a"], "v": ["b"], "weight": [2.0]}
    with pytest.raises(InputError, match="'b' is not a vertex id"):
        read_graph(path)
    with pytest.raises(InputError, match="is not a vertex id"):
        read_input(path, renumber=False)  # as read_graph reads
    # a typo among integer ids is refused as before, naming its line
    typo = tmp_path / "typo.txt"
    typo.write_text("0 1\n1 two\n")
    with pytest.raises(InputError, match=r"line 2: target id 'two'"):
        read_input(typo)


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("make", "args", "words"),
    [
        (lambda d: _csv(d, "a,b,w\nx,y,1.0\n"), ["--src", "q"], "has no column 'q'"),
        (lambda d: _parquet(d, {"a": ["x"], "b": ["y"], "w": [1.0]}), ["--columns", "a,z,w"], "has no column 'z'"),
        (lambda d: _parquet(d, {"a": ["x"], "b": ["y"], "w": [1.0]}), ["--columns", "a,b,zz"],
         "has no weight column 'zz'"),
        (lambda d: _parquet(d, {"a": ["x"], "b": ["y"], "w": ["heavy"]}), ["--columns", "a,b,w"],
         "column 'w' has type string; it must hold numbers"),
        (lambda d: _csv(d, "a,b,w\nx,y,heavy\n"), ["--weight", "w"], "weight 'heavy' is not a number"),
        (lambda d: _csv(d, "a,b,w\nx,y,nan\n"), [], "weights must be finite"),
        (lambda d: _parquet(d, {"src": ["x"], "dst": ["y"], "weight": [float("nan")]}), [], "must be finite"),
        (lambda d: _csv(d, "a,b,w\nx,y,-2\n"), [], "negative weight"),
        (lambda d: _parquet(d, {"src": ["x"], "dst": ["y"], "weight": [-2.0]}), [], "negative"),
        (lambda d: _csv(d, "x,y,1\ny,z,2\n"), ["--src", "from"], "no header line of names"),
        (lambda d: _csv(d, "x,y,1\n"), ["--weight", "5"], "field 5, but line 1 has 3 fields"),
        (lambda d: _csv(d, "a,b,w\nx,y,1\n"), ["--columns", "a,b", "--weight", "w"], "either with --columns"),
        (lambda d: _csv(d, "a,b,w\nx,y,1\n"), ["--weight", "w", "--unweighted"], "weights are not read"),
        (lambda d: _csv(d, "a,b,w\nx,y,1\n"), ["--columns", "a,a"], "chosen for two roles"),
        (lambda d: _csv(d, "a,b,w\nx,y,1\n"), ["-a", "bsuitor", "--b", "B_FILE"], "renumbered"),
        (lambda d: _mtx(d), ["--src", "1"], "not in mtx files"),
    ],
)
def test_bad_columns_are_one_error_exit_2(runner, tmp_path, make, args, words):
    path = make(tmp_path)
    (tmp_path / "b.txt").write_text("1\n1\n")
    out = tmp_path / "m.csv"
    res = _run(runner, path, *[str(tmp_path / "b.txt") if a == "B_FILE" else a for a in args], "-o", out)
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert line.startswith("mgmatch: error:") and "\n" not in line and words in line, line
    assert not out.exists()


def test_negative_weights_made_absolute_on_request(runner, tmp_path):
    path = _csv(tmp_path, "a,b,w\nx,y,-2\ny,z,-3\n")
    res = _run(runner, path, "--negative", "abs", "-o", tmp_path / "m.csv")
    assert res.exit_code == 0, res.output
    assert read_table(tmp_path / "m.csv")["weight"].tolist() == [3.0]


def test_column_options_apply_to_graph_algorithms_only(runner, tmp_path):
    path = _csv(tmp_path, "a,b,w\nx,y,1\n")
    res = _run(runner, path, "-a", "gpr", "--weight", "w", "-o", tmp_path / "m.csv")
    assert res.exit_code == 2 and "--weight does not apply to -a gpr" in res.output
    res = _run(runner, path, "-a", "gale-shapley", "--src", "a", "-o", tmp_path / "m.csv")
    assert res.exit_code == 2 and "--src does not apply" in res.output


def test_verify_refuses_an_id_the_graph_lacks(runner, tmp_path):
    path = _csv(tmp_path, "a,b,w\nx,y,1\ny,z,2\n")
    result = tmp_path / "m.csv"
    result.write_text("u,v,weight\ny,nobody,2.0\n")
    res = runner.invoke(main, ["verify", str(path), str(result)])
    assert res.exit_code == 2 and "column 'v'" in res.output and "'nobody' is not in the graph" in res.output


@pytest.mark.parametrize("algorithm, suffix", [("suitor", ".csv"), ("suitor", ".tsv"), ("suitor", ".parquet"),
                                               ("louvain", ".csv")])
def test_verify_accepts_labels_that_look_like_numbers(runner, tmp_path, algorithm, suffix):
    # "+1", "0x2", "007" are labels of a graph whose ids are text; read back with a guessed type
    # "+1" was the number 1 and the result named a vertex the graph lacks
    path = _csv(tmp_path, "a,b,w\n+0,+1,1\n+1,0x2,2\n0x2,007,1\n007,1e3,3\n")
    out = tmp_path / f"m{suffix}"
    res = _run(runner, path, "-a", algorithm, "-o", out)
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["verify", str(path), str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["ok"] is True


def test_column_choice_is_checked_in_python(tmp_path):
    path = _csv(tmp_path, "a,b,w\nx,y,1\n")
    for columns in (("a",), {"src": "a", "weights": "w"}, ("a", 0), ("a", True)):
        with pytest.raises(ParameterError):
            read_input(path, columns=columns)


def _csv(folder, text):
    path = folder / "g.csv"
    path.write_text(text)
    return path


def _parquet(folder, columns):
    path = folder / "g.parquet"
    pq.write_table(pa.table(columns), path)
    return path


def _mtx(folder):
    path = folder / "g.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n2 1 1.0\n")
    return path


def test_a_pipeline_job_that_gives_columns_twice_is_refused(runner, tmp_path):
    _csv(tmp_path, "a,b,w\nx,y,1\n")
    (tmp_path / "jobs.yaml").write_text("jobs:\n  - {input: g.csv, output: m.csv, src: a, columns: 'a,b'}\n")
    res = runner.invoke(main, ["run", "-q", str(tmp_path / "jobs.yaml")])
    assert res.exit_code == 2 and "job 1: give the columns either with --columns" in res.output, res.output
    (tmp_path / "jobs.yaml").write_text("jobs:\n  - {input: g.csv, output: m.csv, algorithm: gpr, weight: w}\n")
    res = runner.invoke(main, ["run", "-q", str(tmp_path / "jobs.yaml")])
    assert res.exit_code == 2 and "--weight does not apply to -a gpr" in res.output, res.output
    assert not (tmp_path / "m.csv").exists()


def test_a_file_named_dash_given_as_a_path_is_the_file(runner, tmp_path, monkeypatch):
    # '-' alone is standard input; './-' names a file (a path object made the two the same)
    (tmp_path / "-").write_text("0,1,2.5\n1,2,1\n")
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(main, ["run", "./-", "--format", "csv", "-o", "m.csv", "-a", "suitor", "--device", "cpu",
                               "-q"], input="")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "m.csv").read_text() == "u,v,weight\n0,1,2.5\n"
    res = runner.invoke(main, ["run", "-", "--format", "csv", "-o", "s.csv", "-a", "suitor", "--device", "cpu",
                               "-q"], input="")
    assert res.exit_code == 2 and "the input is empty" in res.output


def test_a_weight_column_that_is_also_an_id_column_by_default_is_refused(runner, tmp_path):
    # naming the weight column 'dst' left the dst role on its default, the same column: a
    # Parquet table's weights were its targets, a text file's targets another column
    pq.write_table(pa.table({"src": [0, 2], "dst": [1, 3], "weight": [1.5, 2.5]}), tmp_path / "e.parquet")
    (tmp_path / "e.csv").write_text("src,dst,weight\n0,1,2\n1,2,3\n")
    for name, role in (("e.parquet", "dst"), ("e.parquet", "src"), ("e.csv", "dst")):
        res = _run(runner, tmp_path / name, "-o", tmp_path / "m.csv", "-a", "suitor", "--weight", role)
        assert res.exit_code == 2, res.output
        assert f"the weight column is '{role}'" in res.output and f"(--{role})" in res.output
        assert not (tmp_path / "m.csv").exists()
    res = _run(runner, tmp_path / "e.parquet", "-o", tmp_path / "m.csv", "-a", "suitor", "--src", "weight")
    assert res.exit_code == 2 and "the column 'weight' is read as ids, and 'src' is not read" in res.output


def test_a_first_line_of_labels_read_as_a_header_is_noted(runner, tmp_path):
    # 'alice,bob' over labelled edges may be an edge or a header: read as a header, and said so
    # (under --quiet too); a header of column words is not mentioned
    (tmp_path / "a.csv").write_text("alice,bob\nbob,carol\ncarol,dave\n")
    (tmp_path / "b.csv").write_text("source,target\nalice,bob\nbob,carol\n")
    res = _run(runner, tmp_path / "a.csv", "-o", tmp_path / "a_m.csv", "-a", "suitor")
    assert res.exit_code == 0, res.output
    assert "line 1 (alice, bob) is read as a header of column names, not as an edge" in res.output
    res = _run(runner, tmp_path / "b.csv", "-o", tmp_path / "b_m.csv", "-a", "suitor")
    assert res.exit_code == 0 and res.output == "", res.output
    # column words that are vertices of the file too: 'a b' above 'b c' is noted all the same
    (tmp_path / "c.txt").write_text("a b\nb c\nc d\n")
    res = _run(runner, tmp_path / "c.txt", "-o", tmp_path / "c_m.csv", "-a", "suitor")
    assert res.exit_code == 0
    assert "line 1 (a, b) is read as a header of column names, not as an edge, though b is also a vertex" in res.output


@pytest.mark.parametrize("algorithm", ["suitor", "louvain", "apfb", "stable-marriage"])
def test_a_graph_without_vertices_is_refused(runner, tmp_path, algorithm):
    # a header may declare no vertices at all: an empty graph is bad input, as an empty file is
    path = tmp_path / "e.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n0 0 0\n")
    res = _run(runner, path, "-o", tmp_path / "m.csv", "-a", algorithm)
    assert res.exit_code == 2 and "is an empty" in res.output and "nothing to match or group" in res.output
    assert not (tmp_path / "m.csv").exists()
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 3 0\n")  # isolated vertices: a graph
    assert _run(runner, path, "-o", tmp_path / "m.csv", "-a", algorithm).exit_code == 0


def test_stable_marriage_inputs_are_read_as_the_other_algorithms_read_theirs(runner, tmp_path):
    # a 1-based edge list is noted (under --quiet too), as for the other algorithms; a preference
    # table without rows is refused, as an edge list without edges is (it gave an empty result)
    path = tmp_path / "g.txt"
    path.write_text("1 2 2\n2 3 3\n")
    res = _run(runner, path, "-a", "stable-marriage", "-o", tmp_path / "s.csv")
    assert res.exit_code == 0 and "ids read as 1-based (none is 0)" in res.output
    table = tmp_path / "p.csv"
    table.write_text("man,woman,man_rank,woman_rank\n")
    res = _run(runner, table, "-a", "stable-marriage", "-o", tmp_path / "t.csv")
    assert res.exit_code == 2 and "holds no one to match: the preference table has no rows" in res.output
    assert not (tmp_path / "t.csv").exists()
