"""Batch-job hardening, class by class, through the command line where a user meets each:
no silent wrong results, no clobbered or stray files, one message instead of a traceback, no
unbounded resource use, and options that do what they say or are refused."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from mgmatch import Graph
from mgmatch.cli import main
from mgmatch.errors import InputError
from mgmatch.io import read_graph, read_table


@pytest.fixture
def runner():
    return CliRunner()


def _run(runner, *args):
    return runner.invoke(main, [str(a) for a in args])


def _one_error(res, *needles):
    """Exit status 2, one ``mgmatch: error:`` line and no traceback."""
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("mgmatch: error:")]
    assert len(errors) == 1, res.output
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def _leftovers(folder, *keep):
    return sorted(p.name for p in folder.iterdir() if p.name not in {str(k) for k in keep})


# ------------------------------------------------------------- checks after canonicalisation
@pytest.mark.parametrize("algorithm", ["suitor", "louvain"])
def test_summed_duplicates_that_overflow_are_refused(runner, tmp_path, algorithm):
    """Each weight is finite, the merged one is not: refused after the merge, naming the edge."""
    graph = tmp_path / "g.txt"
    graph.write_text("0 1 1e308\n0 1 1e308\n1 2 1\n")
    out = tmp_path / "m.csv"
    res = _run(runner, "run", "-q", "--device", "cpu", "-a", algorithm, "--duplicates", "sum", graph, "-o", out)
    _one_error(res, "g.txt", "edge (0, 1)", "overflows")
    assert _leftovers(tmp_path) == ["g.txt"]
    # large weights merged by max are fine (their total, 2m, stays finite)
    graph.write_text("0 1 4e307\n0 1 4e307\n1 2 1\n")
    res = _run(runner, "run", "-q", "--device", "cpu", "-a", algorithm, graph, "-o", out)
    assert res.exit_code == 0, res.output
    assert res.output == ""  # no RuntimeWarning (an overflow in the merge) on a successful run


def test_weights_whose_total_overflows_are_refused(runner, tmp_path):
    graph = tmp_path / "g.txt"
    graph.write_text("0 1 1e308\n1 2 1e308\n")  # each finite, the sum (and Louvain's 2m) not
    res = _run(runner, "run", "-q", "--device", "cpu", "-a", "louvain", graph, "-o", tmp_path / "c.csv")
    _one_error(res, "sum to more than a float64 can hold")


def test_float32_cast_that_overflows_is_refused():
    with pytest.raises(InputError, match="as float32 it becomes inf"):
        Graph.from_edges([0], [1], [1e39], dtype="float32")
    assert np.isfinite(Graph.from_edges([0], [1], [1e38], dtype="float32").weights).all()


def test_verify_rejects_what_run_refuses(runner, tmp_path):
    graph = tmp_path / "g.txt"
    graph.write_text("0 1 1e308\n0 1 1e308\n1 2 1\n")
    result = tmp_path / "m.csv"
    result.write_text("u,v,weight\n0,1,inf\n")
    res = _run(runner, "verify", "--duplicates", "sum", graph, result)
    _one_error(res, "overflows")


@pytest.mark.parametrize("column, value", [("u", "0.9"), ("v", "1.5"), ("u", "nan")])
def test_verify_refuses_ids_that_are_not_whole_numbers(runner, tmp_path, column, value):
    graph = tmp_path / "g.txt"
    graph.write_text("0 1 1\n1 2 1\n")
    result = tmp_path / "m.csv"
    row = {"u": "0", "v": "1", column: value}
    result.write_text(f"u,v,weight\n{row['u']},{row['v']},1.0\n")
    res = _run(runner, "verify", graph, result)
    _one_error(res, "m.csv", f"column '{column}'", "not a vertex id")


def test_verify_refuses_fractional_community_labels(runner, tmp_path):
    graph = tmp_path / "g.txt"
    graph.write_text("0 1 1\n1 2 1\n")
    result = tmp_path / "c.csv"
    result.write_text("vertex,community\n0,0\n1,0.5\n2,1\n")
    _one_error(_run(runner, "verify", graph, result), "column 'community'")


# ------------------------------------------------------------------------- ids in the input
@pytest.mark.parametrize("text, line", [("0x10 1 1\n1 2 1\n", 1), ("0 1\n1 0X1f\n", 2), ("0,1\n0x2,3\n", 2)])
def test_hexadecimal_ids_are_refused(runner, tmp_path, text, line):
    graph = tmp_path / "g.txt"
    graph.write_text(text)
    res = _run(runner, "run", "-q", "--device", "cpu", graph, "-o", tmp_path / "m.csv")
    _one_error(res, f"line {line}", "is not a vertex id")


def test_an_x_in_a_field_left_unread_is_no_id(runner, tmp_path):
    graph = tmp_path / "g.csv"
    graph.write_text("src,dst,label\n0,1,x\n1,2,0x1\n")
    res = _run(runner, "run", "-q", "--device", "cpu", "--unweighted", graph, "-o", tmp_path / "m.csv")
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("text, offset", [("1 2\n2 3\n", 1), ("0 1\n1 2\n", 0)])
def test_reader_shows_its_choice_of_base_on_the_graph(tmp_path, text, offset):
    path = tmp_path / "g.txt"
    path.write_text(text)
    assert read_graph(path).id_offset == offset
    assert read_graph(path, one_based=False).id_offset == 0


def test_matrix_market_graphs_are_one_based(data_dir):
    assert read_graph(data_dir / "karate.mtx").id_offset == 1


# -------------------------------------------------------- valid inputs that crashed the reader
_BEYOND_INT64 = "99999999999999999999"


@pytest.mark.parametrize("body, line", [
    (f"%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 2 {_BEYOND_INT64}\n", "line 3"),
    (f"%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 2 -{_BEYOND_INT64}\n", "line 3"),
    (f"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 {_BEYOND_INT64} 1\n", "line 3"),
    (f"%%MatrixMarket matrix coordinate real general\n{_BEYOND_INT64} 2 1\n1 2 1\n", None),
    (f"%%MatrixMarket matrix array integer general\n1 1\n{_BEYOND_INT64}\n", "line 3"),
])
@pytest.mark.parametrize("command", ["run", "info"])
def test_matrix_market_integers_beyond_int64(runner, tmp_path, body, line, command):
    path = tmp_path / "g.mtx"
    path.write_text(body)
    args = ["run", "-q", "--negative", "abs", path, "-o", tmp_path / "m.csv"] if command == "run" else ["info", path]
    message = _one_error(_run(runner, *args), "g.mtx", "64-bit")
    assert line is None or line in message
    assert _leftovers(tmp_path) == ["g.mtx"]


@pytest.mark.parametrize("partitions", [1, 3])
def test_louvain_on_tiny_weights_equals_louvain_on_the_same_graph_scaled_up(partitions):
    """Modularity does not depend on the weights' scale, and 2**-990 scales a float exactly: the
    communities of the scaled graph are those of the graph."""
    import mgmatch
    from mgmatch.generators import parse_graph_spec

    u, v, w = parse_graph_spec("rgg:k=9,seed=1").edges()
    reference = mgmatch.louvain(Graph.from_edges(u, v, w), device="cpu", partitions=partitions)
    tiny = mgmatch.louvain(Graph.from_edges(u, v, w * 2.0**-990), device="cpu", partitions=partitions)
    np.testing.assert_array_equal(tiny.communities, reference.communities)
    assert tiny.modularity == reference.modularity


# ------------------------------------------------------------------ outputs that clobber inputs
@pytest.fixture
def small_graph(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 1 1\n1 2 2\n2 3 1\n")
    return path


def _clobber_cases(tmp_path, graph):
    b_file = tmp_path / "b.txt"
    b_file.write_text("1\n1\n1\n1\n")
    out = tmp_path / "m.csv"
    return {
        "report on the input": (["--workers", "1", "--report", graph], "is the input file"),
        "report on the output": (["--workers", "1", "--report", out], "are the same file"),
        "report on the summary": (["--workers", "1", "--report", tmp_path / "m.json"], "are the same file"),
        "summary on the input": (["--summary", graph], "is the input file"),
        "summary on the b file": (["-a", "bsuitor", "--b", b_file, "--summary", b_file], "is the --b file"),
        "summary on the output": (["--summary", out], "are the same file"),
        "report on the b file": (["-a", "bsuitor", "--b", b_file, "--workers", "1", "--report", b_file],
                                 "is the --b file"),
    }


@pytest.mark.parametrize("case", ["report on the input", "report on the output", "report on the summary",
                                  "summary on the input", "summary on the b file", "summary on the output",
                                  "report on the b file"])
def test_every_output_is_checked_against_every_input_and_output(runner, tmp_path, small_graph, case):
    args, needle = _clobber_cases(tmp_path, small_graph)[case]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    res = _run(runner, "run", "-q", "--device", "cpu", *args, small_graph, "-o", tmp_path / "m.csv")
    _one_error(res, needle)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing written, nothing replaced


def test_an_output_linked_to_the_input_is_caught(runner, tmp_path, small_graph):
    link = tmp_path / "link.csv"
    link.symlink_to(small_graph)
    res = _run(runner, "run", "-q", "--device", "cpu", small_graph, "-o", link)
    _one_error(res, "is the input file")
    assert small_graph.read_text() == "0 1 1\n1 2 2\n2 3 1\n"


@pytest.mark.parametrize("jobs, needle", [
    ("[{input: g.txt, output: a.csv}, {input: g.txt, output: a.csv, algorithm: ld}]", "are the same file"),
    ("[{input: g.txt, output: a.csv, summary: p.yaml}]", "is the pipeline file"),
    ("[{input: g.txt, output: a.csv, summary: g.txt}]", "is the job 1's input file"),
    ("[{input: g.txt, output: a.csv}, {input: g.txt, output: b.csv, summary: a.csv}]", "are the same file"),
])
def test_pipeline_outputs_are_checked_against_every_read_and_write(runner, tmp_path, small_graph, jobs, needle):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"jobs: {jobs}\n")
    _one_error(_run(runner, "run", "-q", pipeline), "p.yaml", needle)
    assert _leftovers(tmp_path) == ["g.txt", "p.yaml"]


@pytest.mark.parametrize("where", ["input", "output", "info", "verify"])
def test_symlink_loops_are_one_message(runner, tmp_path, small_graph, where):
    loop = tmp_path / ("loop.txt" if where in ("input", "info") else "loop.csv")
    loop.symlink_to(loop)
    args = {
        "input": ["run", "-q", loop, "-o", tmp_path / "m.csv"],
        "output": ["run", "-q", small_graph, "-o", loop],
        "info": ["info", loop],
        "verify": ["verify", small_graph, loop],
    }[where]
    _one_error(_run(runner, *args), "loop.", "is a loop of symbolic links")
    assert loop.is_symlink() and _leftovers(tmp_path) == ["g.txt", loop.name]


# ------------------------------------------------------------------- stopped jobs leave nothing
def _mgmatch_process(args, tmp_path, **kwargs):
    import os
    import subprocess
    import sys

    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"), PYTHONUNBUFFERED="1")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    # the job starts with the stop signals at their defaults, as from a terminal, whatever the
    # test run inherited (under nohup SIGHUP is ignored, and the job rightly leaves it so)
    start = ("import runpy, signal\n"
             "for s in (signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_DFL)\n"
             "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
             "runpy.run_module('mgmatch.cli', run_name='__main__', alter_sys=True)\n")
    return subprocess.Popen([sys.executable, "-c", start, *map(str, args)], env=env, cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _wait_for(condition, timeout=60.0):
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stopped_stream_job_leaves_no_spool_and_no_output(tmp_path, signame):
    """The job copies its standard input to a spool file; a stop signal while it waits for more
    removes the spool and writes nothing, as Ctrl-C does."""
    import signal
    import subprocess

    with _mgmatch_process(["run", "-q", "--device", "cpu", "-", "--format", "edgelist", "-o", "m.csv"],
                          tmp_path, stdin=subprocess.PIPE) as proc:
        proc.stdin.write("0 1 1\n1 2 1\n")
        proc.stdin.flush()  # the pipe stays open: the job waits inside the copy
        spool = tmp_path / "tmp"
        _wait_for(lambda: any(spool.iterdir()))  # the spool file is made: the copy has begun
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == (130 if signame == "SIGINT" else 128 + getattr(signal, signame)), err
    assert "Traceback" not in err and "no output written" in err, err
    assert list(spool.iterdir()) == []
    assert _leftovers(tmp_path, "tmp") == []


def test_a_stop_signal_removes_the_partial_files_of_a_result(tmp_path):
    """A result and its summary are written through one temporary file each, and a stop signal
    in the middle removes both."""
    import subprocess
    import sys

    code = (
        "import sys, time\n"
        "from mgmatch._signals import terminate_as_interrupt\n"
        "from mgmatch.io import writers\n"
        "def slow(path, table, fmt):\n"
        "    path.write_text('half')\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(60)\n"
        "writers._write_table_file = slow\n"
        "with terminate_as_interrupt():\n"
        "    try:\n"
        "        writers.write_result('out/m.csv', {'u': [0]}, 'out/m.json', {'n': 1})\n"
        "    except KeyboardInterrupt:\n"
        "        sys.exit(3)\n"
    )
    with subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline() == "ready\n"
        partials = list((tmp_path / "out").iterdir())
        assert len(partials) == 2 and all(p.name.startswith(".") and ".partial" in p.name for p in partials)
        proc.terminate()
        assert proc.wait(timeout=60) == 3
    assert list((tmp_path / "out").iterdir()) == []


def test_a_swallowed_stop_signal_still_stops_the_output(tmp_path):
    """Code that swallows the stop signal's exception (an extension clearing errors while it
    imports, a garbage-collector callback) does not let the job commit its output: the signal
    is raised again where the output would be moved into place, and its partial file goes."""
    import os
    import signal

    from mgmatch._signals import Terminated, terminate_as_interrupt
    from mgmatch.io.writers import atomic_path

    target = tmp_path / "out" / "m.csv"
    with terminate_as_interrupt():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except Terminated:
            pass  # swallowed on the way
        with pytest.raises(Terminated, match="15"), atomic_path(target) as partial:
            partial.write_text("0,1\n")
    assert list(target.parent.iterdir()) == []
    # a later job in the same process starts afresh
    with terminate_as_interrupt(), atomic_path(target) as partial:
        partial.write_text("0,1\n")
    assert target.read_text() == "0,1\n"


def test_a_stop_raised_where_python_drops_it_is_not_printed(capfd):
    # a stop signal that lands in a garbage-collector callback (Dask's client has one) is
    # printed by Python as "Exception ignored in ..." with its traceback; it is recorded and
    # raised again at the next commit instead, without the print
    import gc
    import os
    import signal

    from mgmatch._signals import Terminated, raise_if_stopped, terminate_as_interrupt

    def callback(phase, info):
        if phase == "start":
            gc.callbacks.remove(callback)
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # (the handler runs between two instructions here)
                pass

    with terminate_as_interrupt():
        gc.callbacks.append(callback)
        gc.collect()
        with pytest.raises(Terminated):
            raise_if_stopped()
    assert callback not in gc.callbacks
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("complete", [True, False])
def test_a_stop_after_outputs_says_what_was_written(tmp_path, capsys, complete):
    """A stop signal once the command's outputs are all written (an embedded cluster shutting
    down) lets the closing finish and ends well, saying so; one between two outputs (a pipeline's
    second job) names what the first wrote, never "no output written"."""
    import os
    import signal

    from mgmatch._signals import outputs_complete
    from mgmatch.cli import _friendly
    from mgmatch.io.writers import atomic_path

    closed = []

    @_friendly
    def command():
        with atomic_path(tmp_path / "a.csv") as partial:
            partial.write_text("u,v\n")
        if complete:
            outputs_complete()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            closed.append(True)  # (the cluster's shutdown)
        return "done"

    if complete:
        assert command() == "done"
        assert "SIGTERM came after the outputs were written; they are complete" in capsys.readouterr().err
    else:
        with pytest.raises(SystemExit) as end:
            command()
        assert end.value.code == 143
        assert f"stopped by SIGTERM; written before it: {tmp_path / 'a.csv'}; nothing after" in capsys.readouterr().err
    assert closed and (tmp_path / "a.csv").read_text() == "u,v\n"


def test_ctrl_c_is_a_stop_like_sigterm(tmp_path, capsys):
    # Ctrl-C after the outputs are complete: the command ends well, saying so (it said "no
    # output written" beside complete outputs); a Ctrl-C that code swallowed still stops the job
    # before its output is committed (it was lost, and the job ran to its end with status 0); an
    # error that follows a stop (a module an interrupted import left half made) is the stop
    import os
    import signal

    from mgmatch._signals import outputs_complete
    from mgmatch.cli import _friendly
    from mgmatch.io.writers import atomic_path

    @_friendly
    def after_outputs():
        with atomic_path(tmp_path / "a.csv") as partial:
            partial.write_text("u,v\n")
        outputs_complete()
        os.kill(os.getpid(), signal.SIGINT)
        return "done"

    assert after_outputs() == "done"
    assert "SIGINT came after the outputs were written; they are complete" in capsys.readouterr().err

    @_friendly
    def swallowed():
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            pass  # as an extension's import may
        with atomic_path(tmp_path / "b.csv") as partial:
            partial.write_text("u,v\n")

    @_friendly
    def broken_by_it():
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            pass
        raise AttributeError("partially initialized module")

    for command in (swallowed, broken_by_it):
        with pytest.raises(SystemExit) as end:
            command()
        assert end.value.code == 130
        assert capsys.readouterr().err.strip() == "mgmatch: interrupted; no output written"
    assert not (tmp_path / "b.csv").exists()


def test_a_finished_command_ends_well_when_stopped_while_it_winds_down():
    # after a command's end (exit status 0), a stop signal while the interpreter winds down
    # ends the process at once with status 0; it was killed with 143, its outputs complete
    import subprocess
    import sys

    code = ("import os, signal, time\nfrom mgmatch._signals import exit_at_once_on_stop\nexit_at_once_on_stop()\n"
            "print('ready', flush=True)\ntime.sleep(60)\n")
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline() == "ready\n"
        proc.terminate()
        assert proc.wait(timeout=30) == 0


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_failed_write_in_place_leaves_the_link(runner, tmp_path, small_graph, suffix):
    # an output that exists and is no regular file (here a link to a device that is always full)
    # is written in place; given a path, pyarrow deleted the link when its write failed
    import os

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    link = tmp_path / f"full{suffix}"
    link.symlink_to("/dev/full")
    _one_error(_run(runner, "run", "-q", "-a", "suitor", small_graph, "-o", link, "--summary", tmp_path / "s.json"),
               "No space left on device")
    assert link.is_symlink() and os.readlink(link) == "/dev/full"


@pytest.mark.parametrize("name", ["x" * 251 + ".csv", "é" * 121 + ".parquet", "x" * 245 + ".tsv"])
def test_an_output_name_that_fits_is_written(runner, tmp_path, small_graph, name):
    # the hidden temporary beside it (.NAME.TOKEN.partial.csv) was 18 bytes longer than the name:
    # a name of 238 to 255 bytes failed, after the whole computation
    assert len(name.encode()) <= 255
    res = _run(runner, "run", "-q", "-a", "suitor", small_graph, "-o", tmp_path / name,
               "--summary", tmp_path / "s.json")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([small_graph.name, name, "s.json"])
    assert read_table(tmp_path / name)["u"].tolist() == [1]


@pytest.mark.parametrize("command", ["info", "run input", "run output", "run summary", "verify", "generate",
                                     "report"])
def test_a_file_name_that_is_not_utf8_is_one_message(runner, tmp_path, small_graph, command):
    # a Linux name may hold any bytes (Python keeps them as surrogate escapes); the Arrow and
    # SciPy readers and writers failed on one with an encoding error or a type error
    odd = tmp_path / "m\udcff.csv"
    odd.write_bytes(small_graph.read_bytes())
    result = tmp_path / "r.csv"
    result.write_text("u,v\n0,1\n")
    args = {"info": ["info", odd], "run input": ["run", "-q", odd, "-o", result],
            "run output": ["run", "-q", small_graph, "-o", tmp_path / "o\udcfe.csv"],
            "run summary": ["run", "-q", small_graph, "-o", tmp_path / "o.csv", "--summary", tmp_path / "s\udcfe.json"],
            "verify": ["verify", small_graph, odd], "generate": ["generate", "kron", "-p", "k=4", "-o", tmp_path / "k\udcfe.mtx"],
            "report": ["report", tmp_path / "s\udcfe.json"]}[command]
    _one_error(_run(runner, *args), "\\x", "not UTF-8 text")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([small_graph.name, odd.name, "r.csv"])


@pytest.mark.parametrize("where", ["input", "output", "summary"])
def test_a_file_name_too_long_is_one_message(runner, tmp_path, small_graph, where):
    # the operating system's refusal (ENAMETOOLONG here, EACCES alike) names the path in one line
    long = tmp_path / ("x" * 300 + ".csv")
    args = {"input": ["info", long], "output": ["run", "-q", "-a", "suitor", small_graph, "-o", long],
            "summary": ["run", "-q", "-a", "suitor", small_graph, "-o", tmp_path / "m.csv", "--summary", long]}[where]
    _one_error(_run(runner, *args), "File name too long", "x" * 30 + ".csv")
    assert [p.name for p in tmp_path.iterdir() if p.name != small_graph.name] == []


@pytest.mark.parametrize("command", ["info", "suitor", "louvain"])
def test_id_columns_of_different_types_are_one_message(runner, tmp_path, command):
    # one id space, ids as numbers in one column and as text in the other: whether "1" is 1 is
    # a guess either way, so the reader says so (bipartite sides are separate id spaces)
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "mixed.parquet"
    pq.write_table(pa.table({"src": [0, 1], "dst": ["1", "2"]}), path)
    args = ["info", path] if command == "info" else ["run", "-q", "-a", command, path, "-o", tmp_path / "m.csv"]
    _one_error(_run(runner, *args), "mixed.parquet", "different types")
    assert not (tmp_path / "m.csv").exists()


# ------------------------------------------------------------------------- bounded spooling
@pytest.mark.parametrize("fmt, needle", [("edgelist", "NUL byte"), ("mtx", "NUL byte"), ("npz", "does not start as"),
                                         ("parquet", "does not start as")])
def test_an_endless_stream_is_refused_at_once(runner, tmp_path, fmt, needle):
    res = _run(runner, "run", "-q", "/dev/zero", "--format", fmt, "-o", tmp_path / "m.csv")
    _one_error(res, "/dev/zero", needle)


def test_stream_spooling_is_bounded(tmp_path):
    import os
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    text = b"0 1 1\n" * 10_000

    def feed():
        with open(fifo, "wb") as out:
            with _ignore_broken_pipe():  # the reader stops early, closing the pipe
                out.write(text)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        with pytest.raises(InputError, match="more than 1,000 bytes"):
            read_graph(fifo, "edgelist", spool_limit=1000)
    finally:
        writer.join(timeout=30)
    assert not any(p.name.startswith("mgmatch-input-") for p in tmp_path.iterdir())


class _ignore_broken_pipe:
    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        return kind is not None and issubclass(kind, BrokenPipeError)


# ------------------------------------------------------------------ one message, no traceback
@pytest.mark.parametrize("content, needle", [
    ("", "is empty"),
    ("{", "is not valid JSON"),
    ("\xff\xfe", "is not valid JSON"),
    ("[]", "holds no scheduler address"),
    ('{"address": 5}', "holds no scheduler address"),
    ('{"address": ""}', "holds no scheduler address"),
    ('{"address": "nonsense"}', "cannot use scheduler address 'nonsense'"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_a_garbage_scheduler_file_is_one_message(runner, tmp_path, small_graph, content, needle):
    sched = tmp_path / "sched.json"
    sched.write_text(content, encoding="latin-1")
    res = _run(runner, "run", "-q", small_graph, "-o", tmp_path / "m.csv", "--scheduler-file", sched)
    _one_error(res, needle, "sched.json")
    assert _leftovers(tmp_path) == ["g.txt", "sched.json"]


@pytest.mark.parametrize("answer", [None, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 2])
def test_a_service_that_is_no_scheduler_is_one_error_in_bounded_time(answer):
    # a server on the port that accepts and says nothing (Dask's connect reads the handshake
    # without a time limit) or says something else (read as a frame length of exabytes)
    import socket
    import threading
    import time

    from mgmatch.distributed.cluster import connect
    from mgmatch.errors import ClusterError

    pytest.importorskip("distributed")
    server = socket.create_server(("127.0.0.1", 0))
    held = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            if answer is not None:
                conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    try:
        t0 = time.monotonic()
        with pytest.raises(ClusterError, match="cannot reach the Dask scheduler"):
            connect(f"tcp://127.0.0.1:{server.getsockname()[1]}", timeout=2.0)
        assert time.monotonic() - t0 < 30
    finally:
        server.close()
        for conn in held:
            conn.close()


def test_a_port_where_nothing_listens_says_so():
    # Dask retries a refused connection until its timeout and then reports a time-out; the
    # refusal behind it is what the user can act on
    import socket

    from mgmatch.distributed.cluster import connect
    from mgmatch.errors import ClusterError

    pytest.importorskip("distributed")
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]  # free again once closed: nothing listens there
    with pytest.raises(ClusterError, match="nothing listens there .*refused for 1 s"):
        connect(f"tcp://127.0.0.1:{port}", timeout=1.0)


@pytest.mark.parametrize("command", ["bench", "demo"])
def test_bench_and_demo_outputs_are_checked_before_the_runs(runner, tmp_path, command, monkeypatch):
    # a directory for bench's JSON, a file for demo's directory: refused before any run starts
    from mgmatch import bench, generators

    def no_runs(*args, **kwargs):
        raise AssertionError("a run started")

    monkeypatch.setattr(bench, "run_family", no_runs)
    monkeypatch.setattr(generators, "builtin_demo_graph", no_runs)
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    args = ["bench", "--quick", "-o", tmp_path / "d"] if command == "bench" else ["demo", "-o", tmp_path / "f"]
    _one_error(_run(runner, *args), "is a directory" if command == "bench" else "is a file")


def test_an_empty_scheduler_address_is_refused(runner, tmp_path, small_graph):
    # an unset variable in a batch script (--scheduler "$ADDR") must not run the job elsewhere
    _one_error(_run(runner, "run", "-q", small_graph, "-o", tmp_path / "m.csv", "--scheduler", ""),
               "scheduler is empty")
    assert not (tmp_path / "m.csv").exists()


@pytest.mark.parametrize("command", ["run", "verify"])
def test_a_negative_b_is_a_parameter_error(runner, tmp_path, small_graph, command):
    result = tmp_path / "m.csv"
    assert _run(runner, "run", "-q", "-a", "bsuitor", "--b", "1", small_graph, "-o", result).exit_code == 0
    args = (["run", "-q", "-a", "bsuitor", "--b", "-1", small_graph, "-o", tmp_path / "n.csv"] if command == "run"
            else ["verify", "--b", "-1", small_graph, result])
    _one_error(_run(runner, *args), "--b must be a non-negative integer")


def test_a_missing_scheduler_file_is_one_message(runner, tmp_path, small_graph):
    res = _run(runner, "run", "-q", small_graph, "-o", tmp_path / "m.csv", "--scheduler-file", tmp_path / "no.json")
    _one_error(res, "no.json", "does not exist")


def _alias_bomb(levels=9, fan=10):
    """A job name of ``fan ** levels`` values in a few hundred bytes."""
    anchors = "&a0 [" + ", ".join(["x"] * fan) + "]"
    for i in range(1, levels):
        anchors = f"&a{i} [{anchors}, " + ", ".join([f"*a{i - 1}"] * (fan - 1)) + "]"
    return anchors


@pytest.mark.parametrize("text, needle", [
    ("jobs:\n  - input: g.txt\n    output: m.csv\n    name: " + _alias_bomb() + "\n", "expands to more than"),
    ("jobs: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ("jobs: " + "[" * 60 + "]" * 60 + "\n", "nested more than 50 levels"),
    ("jobs: &j [*j]\n", "refers to itself"),
    ("jobs: [{input: g.txt, output: m.csv, name: '" + "x" * (1 << 20) + "'}]\n", "larger than"),
])
def test_pipeline_files_are_bounded(runner, tmp_path, small_graph, text, needle):
    import time

    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(text)
    t0 = time.perf_counter()
    _one_error(_run(runner, "run", "-q", pipeline), "p.yaml", needle)
    assert time.perf_counter() - t0 < 30
    assert _leftovers(tmp_path) == ["g.txt", "p.yaml"]


def test_a_pipeline_may_share_values_through_aliases(runner, tmp_path, small_graph):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("defaults: {device: cpu}\njobs:\n  - &job {input: g.txt, output: a.csv, algorithm: ld}\n"
                        "  - {<<: *job, output: b.csv}\n")
    res = _run(runner, "run", "-q", pipeline)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()


@pytest.mark.parametrize("text, needle", [
    # PyYAML keeps the last of two equal keys: a mistyped second output would decide the file
    ("jobs:\n  - {input: g.txt, output: a.csv, output: b.csv}\n",
     "line 2: not valid YAML (the key 'output' appears twice"),
    ("defaults: {device: cpu}\ndefaults: {device: gpu}\njobs: [{input: g.txt, output: a.csv}]\n",
     "'defaults' appears twice"),
    # a string is not a switch: "false" read as on
    ("jobs: [{input: g.txt, output: a.csv, algorithm: louvain, all_levels: 'false'}]\n",
     "job 1: all_levels must be true or false, not 'false'"),
    ("jobs: [{input: g.txt, output: a.csv, algorithm: apfb, deterministic: 1}]\n",
     "deterministic must be true or false"),
    ("jobs: [{input: g.txt, output: a.csv, weighted: 'no'}]\n", "weighted must be true or false"),
    ("jobs: [{input: g.txt, output: a.csv, one_based: 'yes'}]\n", "one_based must be true or false"),
])
def test_pipeline_repeated_keys_and_switches_that_are_not_booleans_are_refused(runner, tmp_path, small_graph, text,
                                                                                needle):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(text)
    _one_error(_run(runner, "run", "-q", pipeline), "p.yaml", needle)
    assert _leftovers(tmp_path) == ["g.txt", "p.yaml"]


def test_bench_with_no_repeats_is_one_message(runner):
    _one_error(_run(runner, "bench", "--quick", "--repeats", "0"), "--repeats must be at least 1")


@pytest.mark.parametrize("command", ["run", "info", "verify"])
def test_an_unreadable_input_is_one_message(runner, tmp_path, small_graph, monkeypatch, command):
    """As a user without read permission meets it (the suite may run as root, who may read
    anything, so the permission check is what is denied)."""
    import os

    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(small_graph)
                        else real_access(p, mode, **kw))
    result = tmp_path / "r.csv"
    result.write_text("u,v\n0,1\n")
    args = {"run": ["run", "-q", small_graph, "-o", tmp_path / "m.csv"], "info": ["info", small_graph],
            "verify": ["verify", small_graph, result]}[command]
    res = _run(runner, *args)
    _one_error(res, "g.txt", "permission denied")
    assert "Usage:" not in res.output


@pytest.mark.parametrize("args, needles", [
    (["run", "--no-such-option"], ["No such option", "--no-such-option", "'mgmatch run --help'"]),
    (["run"], ["Missing argument 'INPUT'", "'mgmatch run --help'"]),
    (["frobnicate"], ["No such command 'frobnicate'", "'mgmatch --help'"]),
    (["run", "g.txt", "--device", "tpu"], ["'--device'", "'tpu' is not one of"]),
    (["bench", "--repeats", "many"], ["'--repeats'", "'many' is not a valid integer", "'mgmatch bench --help'"]),
    (["--log-level", "loud", "info", "g.txt"], ["'--log-level'", "'mgmatch --help'"]),
])
def test_a_usage_error_is_one_line(runner, args, needles):
    """click prints a usage block, a hint and the error; a batch log gets the one line every
    other error gives, with the help to read."""
    res = runner.invoke(main, args, prog_name="mgmatch")
    line = _one_error(res, *needles)
    assert res.output.strip() == line
    assert "Usage:" not in res.output


def test_a_bare_command_still_prints_its_help(runner):
    res = _run(runner)
    assert res.output.startswith("Usage: ")
    assert "mgmatch: error:" not in res.output


# ------------------------------------------------ batch jobs that do what was asked, or refuse
@pytest.mark.parametrize("algorithm, option", [
    ("apfb", ["--partitions", "2"]),
    ("suitor", ["--resolution", "2"]),
    ("ld", ["--all-levels"]),
    ("louvain", ["--b", "2"]),
    ("suitor", ["--init", "none"]),
    ("gpr", ["--deterministic"]),
    ("apsb", ["--random-weights", "1"]),
])
def test_options_that_do_not_apply_are_refused(runner, tmp_path, small_graph, algorithm, option):
    res = _run(runner, "run", "-q", "--device", "cpu", "-a", algorithm, *option, small_graph, "-o", tmp_path / "m.csv")
    _one_error(res, f"{option[0]} does not apply to -a {algorithm}")
    assert _leftovers(tmp_path) == ["g.txt"]


def test_options_that_apply_are_taken(runner, tmp_path, small_graph):
    res = _run(runner, "run", "-q", "--device", "cpu", "-a", "bsuitor", "--b", "1", "--partitions", "2", small_graph,
               "-o", tmp_path / "m.csv")
    assert res.exit_code == 0, res.output


def test_pipeline_job_options_that_do_not_apply_are_refused_before_any_job_runs(runner, tmp_path, small_graph):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("jobs:\n  - {input: g.txt, output: a.csv}\n"
                        "  - {input: g.txt, output: b.csv, algorithm: louvain, init: none}\n")
    _one_error(_run(runner, "run", "-q", pipeline), "job 2", "--init does not apply to -a louvain")
    assert _leftovers(tmp_path) == ["g.txt", "p.yaml"]


@pytest.mark.parametrize("job, needle", [
    ("algorithm: louvain, resolution: -3", "resolution must be a positive finite number"),
    ("algorithm: bsuitor, b: many", "--b must be an integer or an existing file, not"),
    ("algorithm: bsuitor", "--algorithm bsuitor needs --b"),
    ("partitions: 0", "partitions must be a positive integer"),
    ("device: tpu", "device must be 'auto', 'cpu' or 'gpu'"),
    ("algorithm: apfb, init: greedy", "init must be one of"),
    ("algorithm: apfb, zeros: drop", "--zeros drop does not apply to -a apfb"),
    ("algorithm: hopcroft", "unknown algorithm 'hopcroft'"),
    ("algorithm: louvain, reorder: random", "reorder must be 'none' or one of"),
])
def test_pipeline_job_values_are_checked_before_any_job_runs(runner, tmp_path, small_graph, job, needle):
    # a value that the second job would refuse only after the first job had run, maybe for hours:
    # the pipeline refuses it before it starts, naming its file and the job
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"jobs:\n  - {{input: g.txt, output: a.csv}}\n  - {{input: g.txt, output: b.csv, {job}}}\n")
    res = _run(runner, "run", "-q", pipeline)
    _one_error(res, "job 2", needle)
    assert "p.yaml" in res.output
    assert _leftovers(tmp_path) == ["g.txt", "p.yaml"]


@pytest.mark.parametrize("value", ["5", "{src: a}", "[a]", "true"])
def test_pipeline_columns_of_the_wrong_shape_are_one_message(runner, tmp_path, small_graph, value):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"jobs:\n  - {{input: g.txt, output: a.csv, columns: {value}}}\n")
    _one_error(_run(runner, "run", "-q", pipeline), "job 1", "--columns takes SRC,DST")
    assert _leftovers(tmp_path) == ["g.txt", "p.yaml"]


@pytest.mark.parametrize("option", [["--report", "r.html"], ["-a", "ld"], ["-o", "x.csv"], ["--partitions", "2"]])
def test_pipeline_with_job_options_on_the_command_line_is_refused(runner, tmp_path, small_graph, option):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("jobs:\n  - {input: g.txt, output: a.csv}\n")
    _one_error(_run(runner, "run", "-q", pipeline, *option), f"{option[0]}", "not apply to a pipeline file")
    assert _leftovers(tmp_path) == ["g.txt", "p.yaml"]


def test_pipeline_runs_on_the_cluster_the_command_line_names(runner, tmp_path, small_graph):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("jobs:\n  - {input: g.txt, output: a.csv}\n  - {input: g.txt, output: c.csv, "
                        "algorithm: louvain}\n")
    res = _run(runner, "run", "-q", "--workers", "2", pipeline)
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "a.json").read_text())["workers"] == 2
    assert json.loads((tmp_path / "c.json").read_text())["workers"] == 2  # every family runs on the cluster


def test_more_cpu_workers_than_cores_are_refused(runner, tmp_path, small_graph):
    from mgmatch.distributed.cluster import usable_cores

    many = usable_cores() + 1
    res = _run(runner, "run", "-q", "--device", "cpu", "--workers", many, small_graph, "-o", tmp_path / "m.csv")
    _one_error(res, f"{many} CPU workers", "--workers")


@pytest.mark.parametrize("args, needle", [
    (["--wait-for-workers", "2"], "need a Dask cluster"),
    (["--workers", "1", "--wait-for-workers", "2"], "cannot wait for 2"),
    (["--workers", "1", "--wait-for-workers", "0"], "wait_for_workers must be a positive integer"),
    (["--workers", "1", "--wait-for-workers", "1", "--wait-timeout", "-1"], "wait_timeout must be"),
])
def test_wait_for_workers_is_checked(runner, tmp_path, small_graph, args, needle):
    res = _run(runner, "run", "-q", "--device", "cpu", *args, small_graph, "-o", tmp_path / "m.csv")
    _one_error(res, needle)


def test_wait_for_workers_on_a_running_cluster(runner, tmp_path, small_graph):
    """A run waits for the workers it asks for, runs one partition on each and records how
    many; asking for more than ever join gives up after --wait-timeout."""
    import distributed

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as lc:
        out = tmp_path / "m.csv"
        res = _run(runner, "run", "-q", "--scheduler", lc.scheduler_address, "--wait-for-workers", "1", small_graph,
                   "-o", out)
        assert res.exit_code == 0, res.output
        assert json.loads((tmp_path / "m.json").read_text())["workers"] == 1
        res = _run(runner, "run", "-q", "--scheduler", lc.scheduler_address, "--wait-for-workers", "2",
                   "--wait-timeout", "2", small_graph, "-o", tmp_path / "n.csv")
        _one_error(res, "only 1 of the 2 workers", "within 2 s")
        assert not (tmp_path / "n.csv").exists()


def test_a_successful_cluster_run_says_nothing_on_stderr_under_quiet(tmp_path, small_graph):
    with _mgmatch_process(["run", "-q", "--device", "cpu", "--workers", "2", small_graph, "-o", "m.csv"],
                          tmp_path) as proc:
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert err == ""


def test_held_dask_logs_show_only_when_the_job_fails():
    import io
    import logging

    from mgmatch._dasklogs import held_dask_logs

    shown = io.StringIO()
    with held_dask_logs(shown):
        logging.getLogger("distributed.scheduler").error("worker tcp://x lost")
    assert shown.getvalue() == ""
    with pytest.raises(RuntimeError), held_dask_logs(shown):
        logging.getLogger("distributed.scheduler").error("worker tcp://x lost")
        raise RuntimeError
    assert shown.getvalue() == "distributed.scheduler - ERROR - worker tcp://x lost\n"


def test_a_scheduler_lost_mid_job_is_one_cluster_error():
    """Dask reports a lost scheduler connection as CommClosedError (an OSError) from whatever
    call was waiting on it; the job ends with one ClusterError."""
    from distributed.comm.core import CommClosedError

    from mgmatch.cli import _cluster_lost
    from mgmatch.errors import ClusterError

    with pytest.raises(ClusterError, match="lost the Dask cluster during the job.*CommClosedError"):
        with _cluster_lost():
            raise CommClosedError("in <TCP (closed) ConnectionPool.gather local=tcp://127.0.0.1:1>")


# ------------------------------------------------------------------------ resource exhaustion
@pytest.mark.parametrize("algorithm", ["suitor", "louvain"])
def test_partitions_far_above_the_vertex_count_are_refused_at_once(runner, tmp_path, small_graph, algorithm):
    """A million partitions of a small graph would take minutes and gigabytes of empty partitions."""
    import time

    t0 = time.perf_counter()
    res = _run(runner, "run", "-q", "--device", "cpu", "-a", algorithm, "--partitions", "1000000", small_graph,
               "-o", tmp_path / "m.csv")
    _one_error(res, "partitions=1000000", "vertices")
    assert time.perf_counter() - t0 < 30
    assert _leftovers(tmp_path) == ["g.txt"]


def test_messages_say_what_is_wrong_in_the_users_words(runner, tmp_path, small_graph):
    # an unknown Matrix Market field (SciPy's bare KeyError), a whole id too large for verify,
    # a fractional rank (NumPy's repr), a partition count beyond the graph (its vertex count)
    mtx = tmp_path / "d.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate double general\n3 3 1\n1 2 1\n")
    _one_error(_run(runner, "run", "-q", "--device", "cpu", mtx, "-o", tmp_path / "a.csv"),
               "line 1", "the banner's field is 'double', not one of real, integer, complex, pattern")
    result = tmp_path / "r.csv"
    result.write_text("u,v,weight\n99999999999999999999,1,1.0\n")
    _one_error(_run(runner, "verify", small_graph, result), "1e+20 is too large for a vertex id")
    prefs = tmp_path / "p.csv"
    prefs.write_text("man,woman,man_rank,woman_rank\n0,0,0.5,0\n")
    line = _one_error(_run(runner, "run", "-q", "-a", "stable-marriage", "--device", "cpu", prefs, "-o",
                           tmp_path / "s.csv"), "0.5 is not an integer")
    assert "np." not in line
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("jobs:\n  - {input: g.txt, output: a.csv, partitions: 99999999999999999999999}\n")
    _one_error(_run(runner, "run", "-q", pipeline), "is more than the graph's 4 vertices")
    assert _leftovers(tmp_path) == ["d.mtx", "g.txt", "p.csv", "p.yaml", "r.csv"]


def test_workers_with_a_running_cluster_are_refused(runner, tmp_path, small_graph):
    # --workers 2 beside --scheduler was dropped without a word: the run used the cluster's one
    res = _run(runner, "run", "-q", "--device", "cpu", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2",
               small_graph, "-o", tmp_path / "m.csv")
    _one_error(res, "(--workers) starts a cluster of its own here", "--wait-for-workers")
    assert _leftovers(tmp_path) == ["g.txt"]


def test_a_twice_compressed_file_and_verify_of_standard_input_are_named(runner, tmp_path, small_graph):
    import gzip

    twice = tmp_path / "g2.txt.gz"
    twice.write_bytes(gzip.compress(gzip.compress(small_graph.read_bytes())))
    _one_error(_run(runner, "run", "-q", "--device", "cpu", twice, "-o", tmp_path / "m.csv"),
               "gzip data inside gzip data (compressed twice)")
    assert runner.invoke(main, ["run", "-q", "--device", "cpu", str(small_graph), "-o",
                                str(tmp_path / "m.csv")]).exit_code == 0
    _one_error(runner.invoke(main, ["verify", "-", str(tmp_path / "m.csv")], input="0 1 1\n"),
               "verify reads GRAPH from a file; '-' (standard input) is read by run only")
