"""Fuzzing every reader: any bytes, given as any format, read to a graph or are refused with one
:class:`~mgmatch.errors.MgmatchError`; through the command line, exit status 0 or 2 with one
``mgmatch: error:`` line, never a traceback, and no file left behind either way.

Examples come from Hypothesis, derandomised so that CI runs the same ones every time: raw
bytes, and valid files of each format with a few bytes replaced, inserted or cut, which reach
further into each parser than noise does.
"""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mgmatch import Graph
from mgmatch.cli import main
from mgmatch.errors import MgmatchError
from mgmatch.io import read_graph, write_graph

FORMATS = ("mtx", "csv", "tsv", "edgelist", "metis", "gml", "parquet", "npz")
_SUFFIX = {"mtx": ".mtx", "csv": ".csv", "tsv": ".tsv", "edgelist": ".txt", "metis": ".graph", "gml": ".gml",
           "parquet": ".parquet", "npz": ".npz"}

_FUZZ = settings(max_examples=150, derandomize=True, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _seed_files(tmp_path_factory) -> dict:
    """One small valid file of each format, as bytes."""
    folder = tmp_path_factory.mktemp("seeds")
    graph = Graph.from_edges([0, 0, 1, 2], [1, 2, 3, 3], [0.5, 2.0, 1.0, 3.0])
    seeds = {
        "csv": b"src,dst,weight\n0,1,0.5\n0,2,2.0\n1,3,1.0\n2,3,3.0\n",
        "tsv": b"0\t1\t0.5\n0\t2\t2.0\n1\t3\t1\n",
        "edgelist": b"# comment\n1 2 0.5\n1 3 2.0\n2 4 1.0\n",
        "metis": b"4 4 1\n2 5 3 2\n1 5 4 1\n1 2 4 3\n2 1 3 3\n",
        "gml": b'graph [\n directed 0\n node [ id 0 ]\n node [ id 1 label "a" ]\n node [ id 2 ]\n'
               b" edge [ source 0 target 1 weight 0.5 ]\n edge [ source 1 target 2 value 2 ]\n]\n",
    }
    for fmt in ("mtx", "parquet", "npz"):
        path = folder / f"g{_SUFFIX[fmt]}"
        write_graph(path, graph)
        seeds[fmt] = path.read_bytes()
    return seeds


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    return _seed_files(tmp_path_factory)


def _mutated(seed: bytes):
    """``seed`` with a few bytes replaced, inserted or cut; the bytes put in lean to what the
    text formats are made of (digits, signs, separators, line breaks)."""
    piece = st.one_of(st.binary(min_size=1, max_size=4),
                      st.sampled_from([b"0", b"1", b"9", b"-", b"+", b".", b"e", b",", b"\t", b" ", b"\n", b"%",
                                       b"#", b"[", b"]", b'"', b"nan", b"inf", b"1e308", b"99999999999999999999",
                                       b"\x00", b"\xff"]))
    edit = st.tuples(st.sampled_from(["replace", "insert", "cut"]), st.integers(0, max(len(seed) - 1, 0)), piece)

    def apply(edits):
        data = bytearray(seed)
        for kind, at, bytes_ in edits:
            at = min(at, len(data))
            if kind == "replace":
                data[at:at + len(bytes_)] = bytes_
            elif kind == "insert":
                data[at:at] = bytes_
            else:
                del data[at:at + len(bytes_)]
        return bytes(data)

    return st.lists(edit, min_size=1, max_size=4).map(apply)


def _inputs(seed: bytes):
    return st.one_of(st.binary(max_size=300), _mutated(seed))


def _check_read(path, fmt) -> None:
    try:
        graph = read_graph(path, fmt)
    except MgmatchError as exc:
        assert str(exc) and "\n" not in str(exc).strip(), str(exc)
        return
    assert isinstance(graph, Graph)
    weights = np.asarray(graph.weights)
    assert np.isfinite(weights).all() and (weights >= 0).all()
    assert np.isfinite(weights.sum())


@pytest.mark.parametrize("fmt", FORMATS)
def test_any_bytes_read_as_a_graph_or_one_error(tmp_path_factory, seeds, fmt):
    folder = tmp_path_factory.mktemp(f"fuzz-{fmt}")
    path = folder / f"input{_SUFFIX[fmt]}"

    @_FUZZ
    @given(data=_inputs(seeds[fmt]))
    def check(data):
        path.write_bytes(data)
        _check_read(path, fmt)
        assert [p.name for p in folder.iterdir()] == [path.name]

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_any_bytes_through_the_command_line(tmp_path_factory, seeds, fmt):
    folder = tmp_path_factory.mktemp(f"cli-{fmt}")
    path = folder / f"input{_SUFFIX[fmt]}"
    out = folder / "m.csv"
    runner = CliRunner()

    @settings(_FUZZ, max_examples=25)
    @given(data=_inputs(seeds[fmt]))
    def check(data):
        path.write_bytes(data)
        res = runner.invoke(main, ["run", "-q", "--device", "cpu", "--negative", "abs", "--no-bipartite",
                                   "--format", fmt, str(path), "-o", str(out)])
        assert res.exit_code in (0, 2), (res.output, res.exception)
        assert "Traceback" not in res.output
        if res.exit_code == 2:
            errors = res.output.strip().splitlines()
            assert len(errors) == 1 and errors[0].startswith("mgmatch: error:"), res.output
            assert sorted(p.name for p in folder.iterdir()) == [path.name]
        else:
            assert sorted(p.name for p in folder.iterdir()) == sorted([path.name, "m.csv", "m.json"])
            out.unlink()
            (folder / "m.json").unlink()

    check()


@pytest.mark.parametrize("fmt", ["mtx", "csv", "edgelist", "metis", "gml", "npz"])
def test_any_bytes_from_a_stream(seeds, fmt, monkeypatch, tmp_path):
    """A stream (a pipe) is copied to a spool file first; the spool goes whatever the bytes."""
    import os
    import tempfile
    import threading

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    @settings(_FUZZ, max_examples=20)
    @given(data=_inputs(seeds[fmt]))
    def check(data):
        read_end, write_end = os.pipe()

        def feed():
            with open(write_end, "wb") as pipe:
                try:
                    pipe.write(data)
                except BrokenPipeError:  # the reader refused the stream early
                    pass

        writer = threading.Thread(target=feed)
        writer.start()
        try:
            _check_read(f"/dev/fd/{read_end}", fmt)
        finally:
            os.close(read_end)
            writer.join(timeout=30)
        assert list(tmp_path.iterdir()) == []

    check()


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
def test_any_bytes_read_as_a_preference_table_or_one_error(tmp_path_factory, suffix):
    """The stable-marriage reader: any bytes give a preference table or one MgmatchError."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mgmatch.io.preferences import read_preferences

    folder = tmp_path_factory.mktemp(f"prefs{suffix[1:]}")
    path = folder / f"prefs{suffix}"
    rows = {"man": [0, 0, 1, 1], "woman": [0, 1, 0, 1], "man_rank": [0, 1, 0, 1], "woman_rank": [1, 0, 0, 1]}
    if suffix == ".parquet":
        pq.write_table(pa.table(rows), path)
        seed = path.read_bytes()
    else:
        sep = "," if suffix == ".csv" else "\t"
        seed = (sep.join(rows) + "\n" + "".join(sep.join(str(rows[c][i]) for c in rows) + "\n"
                                                for i in range(4))).encode()

    @_FUZZ
    @given(data=_inputs(seed))
    def check(data):
        path.write_bytes(data)
        try:
            read_preferences(path)
        except MgmatchError as exc:
            assert str(exc) and "\n" not in str(exc).strip(), str(exc)
        assert [p.name for p in folder.iterdir()] == [path.name]

    check()
