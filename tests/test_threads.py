"""CPU threads: the engine's thread count, partitions stepped at once on a pool, the linear-time
partition and routing helpers, and the benchmark's scaling curve."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace

import numpy as np
import pytest

import mgmatch
from mgmatch import generators, verify
from mgmatch.engine import EngineConfig, Messages, available_threads, cpu_threads, run_local
from mgmatch.errors import ParameterError


# ------------------------------------------------------------------------ configuration
def test_available_threads_follow_the_affinity_and_numba(monkeypatch):
    import os

    import numba

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 16)
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    assert available_threads() == 16  # Numba's own thread count caps it
    monkeypatch.setenv("NUMBA_NUM_THREADS", "4")
    assert available_threads() == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 7}, raising=False)
    assert available_threads() == 2  # a job confined to 2 CPUs
    assert EngineConfig().thread_count() == 2 and EngineConfig(threads=5).thread_count() == 5


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_bad_thread_counts_are_refused(bad):
    with pytest.raises(ParameterError, match="threads"):
        EngineConfig(threads=bad)
    with pytest.raises(ParameterError, match="threads"):
        with cpu_threads(bad):
            pass
    with pytest.raises(ParameterError, match="min_partition_nnz"):
        EngineConfig(min_partition_nnz=bad)


def test_cpu_threads_sets_numba_and_the_engine_and_puts_them_back():
    import numba

    before = numba.get_num_threads()
    with cpu_threads(1) as config:
        assert numba.get_num_threads() == 1 and config.threads == 1
    assert numba.get_num_threads() == before
    with pytest.raises(ParameterError, match="NUMBA_NUM_THREADS"):
        with cpu_threads(numba.config.NUMBA_NUM_THREADS + 1):
            pass


# ---------------------------------------------------------------------------- the pool
class _Recorder:
    """A program that counts down a number of rounds per partition, sending one message to the
    next partition each round, and records which thread ran each step."""

    name = "recorder"
    phase = "test"

    def __init__(self, rounds, concurrent, fail_at=None):
        self.rounds, self.concurrent_steps, self.fail_at = rounds, concurrent, fail_at
        self.threads = set()
        self.barrier = threading.Barrier(2, timeout=10) if concurrent else None

    def init(self, part):
        return SimpleNamespace(part=part, left=self.rounds, received=[])

    def step(self, st, inbox):
        self.threads.add(threading.current_thread().name)
        if self.barrier is not None and st.left == self.rounds:
            self.barrier.wait()  # both partitions' first steps run at the same time, or this times out
        if self.fail_at is not None and st.part.index in self.fail_at and st.left == 1:
            raise ValueError(f"partition {st.part.index} failed")
        st.received.append(inbox.ints[:, 2].tolist())
        st.left -= 1
        if st.left < 0:
            return Messages.empty()
        dst = st.part.bounds[(st.part.index + 1) % st.part.n_parts]
        return Messages(np.array([[0, dst, st.part.index, 0]]), np.array([1.0]))

    def finish(self, st):
        return {"received": st.received, "thread": threading.current_thread().name}


def _parts(k=2):
    return mgmatch.Graph.from_edges(np.arange(7), np.arange(1, 8)).partition(k)


def test_concurrent_steps_run_on_the_pool_with_the_serial_rounds():
    parts = _parts()
    serial = _Recorder(3, concurrent=False)
    out_serial, log_serial = run_local(serial, parts, threads=2)
    assert serial.threads == {threading.current_thread().name}  # no declaration: the calling thread
    pooled = _Recorder(3, concurrent=True)
    out_pooled, log_pooled = run_local(pooled, parts, threads=2)
    assert len(pooled.threads) == 2 and threading.current_thread().name not in pooled.threads
    assert [o["received"] for o in out_pooled] == [o["received"] for o in out_serial]
    assert log_pooled.messages == log_serial.messages == [2, 2, 2, 0]


def test_a_failing_step_raises_after_every_step_ends():
    with pytest.raises(ValueError, match="partition 0 failed"):
        run_local(_Recorder(2, concurrent=True, fail_at={0, 1}), _parts(), threads=2)


def test_one_thread_or_one_partition_stays_on_the_calling_thread():
    for parts, threads in ((_parts(2), 1), (_parts(1), 4)):
        program = _Recorder(2, concurrent=True)
        program.barrier = None
        run_local(program, parts, threads=threads)
        assert program.threads == {threading.current_thread().name}


def test_a_run_inside_a_step_runs_serially():
    # a step that starts a run of its own must not wait on the pool it runs on
    inner_threads = []

    class Nested(_Recorder):
        def step(self, st, inbox):
            inner = _Recorder(1, concurrent=True)
            inner.barrier = None
            run_local(inner, _parts(2), threads=2)
            inner_threads.append(inner.threads)
            return super().step(st, inbox)

    outer = Nested(1, concurrent=True)
    run_local(outer, _parts(2), threads=2)
    assert inner_threads and all(len(t) == 1 and t <= outer.threads for t in inner_threads)


# ----------------------------------------------------------------- partitions and routing
@pytest.mark.parametrize("k", [1, 2, 5])
def test_partition_ghosts_equal_the_remote_neighbours(k):
    g = generators.parse_graph_spec("kron:k=9,seed=2")
    for p in g.partition(k):
        rows = g.indices[g.indptr[p.lo] : g.indptr[p.hi]]
        remote = np.unique(rows[(rows < p.lo) | (rows >= p.hi)])
        np.testing.assert_array_equal(p.ghosts, remote)
        assert p.ghosts.dtype == g.indices.dtype


def test_ghost_slots_index_owned_then_ghosts():
    from mgmatch.cpu.graph_build import ghost_lookup, ghost_slots

    g = generators.parse_graph_spec("delaunay:k=9,seed=2")
    p = g.partition(3)[1]
    slot = ghost_slots(p.indices, p.lo, p.hi, p.ghosts, p.n_global)
    expected = np.where((p.indices >= p.lo) & (p.indices < p.hi), p.indices - p.lo,
                        p.n_owned + np.searchsorted(p.ghosts, p.indices))
    np.testing.assert_array_equal(slot, expected)
    assert slot.dtype == np.int32
    np.testing.assert_array_equal(ghost_lookup(p.lo, p.hi, p.ghosts, p.n_global)[p.ghosts],
                                  p.n_owned + np.arange(p.ghosts.size))


def test_routing_keeps_the_send_order_within_each_receiver():
    rng = np.random.default_rng(3)
    ints = rng.integers(0, 100, size=(500, 4))
    w = rng.random(500)
    bounds = np.array([0, 10, 10, 60, 100])  # partition 1 owns nothing
    groups = Messages(ints, w).split(bounds)
    owner = np.searchsorted(bounds, ints[:, 1], side="right") - 1
    assert sorted(groups) == sorted(set(owner.tolist()))
    for p, batch in groups.items():
        np.testing.assert_array_equal(batch.ints, ints[owner == p])
        np.testing.assert_array_equal(batch.w, w[owner == p])


def test_partition_is_cheap_and_the_same_as_a_split_on_threads():
    # execute builds the partitions on the pool: the same ranges, rows and ghosts
    from mgmatch.engine.execute import _split

    g = generators.parse_graph_spec("rgg:k=10,seed=2")
    for a, b in zip(g.partition(4), _split(g, 4, workers=2)):
        assert (a.lo, a.hi) == (b.lo, b.hi)
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.ghosts, b.ghosts)


# ----------------------------------------------------------------------------- benchmark
def test_bench_runs_every_case_at_every_thread_count(monkeypatch):
    nk = pytest.importorskip("networkit")
    from mgmatch.bench import _common, run_family

    seen = []
    real = _common.networkit_graph

    def spy(graph, **kw):  # the peers are built inside a pass: record NetworKit's threads then
        seen.append(nk.getMaxNumberOfThreads())
        return real(graph, **kw)

    monkeypatch.setattr("mgmatch.bench.matching.networkit_graph", spy)
    before = nk.getMaxNumberOfThreads()
    rows = run_family("matching", graphs=["kron:k=9,seed=1"], device="cpu", repeats=1, threads=[1, 2])
    assert nk.getMaxNumberOfThreads() == before
    assert seen == [1, 2]
    by_threads = {t: [r for r in rows if r["threads"] == t] for t in (1, 2)}
    assert [r["impl"] for r in by_threads[1]] == [r["impl"] for r in by_threads[2]]
    assert len(by_threads[1]) == 6  # four of ours and two NetworKit matchers
    for a, b in zip(by_threads[1], by_threads[2]):  # ours exactly; NetworKit sums in parallel
        exact = a["impl"].startswith("mgmatch")
        assert a["weight"] == b["weight"] if exact else a["weight"] == pytest.approx(b["weight"])


def test_bench_thread_counts_are_checked():
    import numba

    from mgmatch.bench import run_family

    with pytest.raises(ParameterError, match="NUMBA_NUM_THREADS"):
        run_family("matching", graphs=["kron:k=6,seed=1"], device="cpu", threads=[numba.config.NUMBA_NUM_THREADS + 1])
    with pytest.raises(ParameterError, match="at least one"):
        run_family("matching", graphs=["kron:k=6,seed=1"], device="cpu", threads=[])


# ------------------------------------------------------------------------------ command line
@pytest.fixture
def runner():
    from click.testing import CliRunner

    return CliRunner()


def test_run_threads_gives_the_same_output(runner, tmp_path):
    from mgmatch.cli import main
    from mgmatch.io import read_graph

    graph = tmp_path / "g.mtx"
    assert runner.invoke(main, ["generate", "kron", "-p", "k=9,seed=1", "-o", str(graph)]).exit_code == 0
    tables = []
    for threads in ("1", "2"):
        out = tmp_path / f"m{threads}.csv"
        res = runner.invoke(main, ["run", str(graph), "-a", "bsuitor", "--b", "2", "--device", "cpu",
                                   "--threads", threads, "-o", str(out), "-q"])
        assert res.exit_code == 0, res.output
        tables.append(out.read_text())
    assert tables[0] == tables[1]
    g = read_graph(graph)
    eu, _, _ = verify.greedy_b_matching(g, 2)
    assert len(tables[0].splitlines()) == 1 + eu.size


@pytest.mark.parametrize("args, message", [
    (["--threads", "0"], "threads must be a positive integer"),
    (["--threads", "2", "--workers", "2"], "--threads sets the threads of a run in this process"),
])
def test_run_bad_threads_is_one_message(runner, tmp_path, args, message):
    from mgmatch.cli import main

    graph = tmp_path / "g.mtx"
    runner.invoke(main, ["generate", "kron", "-p", "k=5", "-o", str(graph)])
    res = runner.invoke(main, ["run", str(graph), "--device", "cpu", "-o", str(tmp_path / "m.csv"), *args])
    assert res.exit_code != 0 and message in res.output and "Traceback" not in res.output
    assert not (tmp_path / "m.csv").exists()


def test_bench_threads_option(runner, tmp_path):
    from mgmatch.cli import main

    out = tmp_path / "bench.json"
    res = runner.invoke(main, ["bench", "--family", "louvain", "--device", "cpu", "--graphs", "delaunay:k=8,seed=1",
                               "--repeats", "1", "--threads", "1,2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    ours = [r for r in json.loads(out.read_text())["rows"] if r["impl"] == "mgmatch"]
    assert [r["threads"] for r in ours] == [1, 2]
    res = runner.invoke(main, ["bench", "--threads", "1,x"])
    assert res.exit_code != 0 and "--threads takes comma-separated positive integers" in res.output
