"""The Dask coordinator: the distributed result equals the greedy one for every algorithm and
partition count; task keys read like the algorithm; bad clusters fail clearly; a worker lost
mid-run does not change the result."""

from __future__ import annotations

import asyncio
import os
import time

import numpy as np
import pytest

import mgmatch
from mgmatch import generators, verify
from mgmatch.algorithms.matching import _Suitor, match
from mgmatch.errors import ClusterError

distributed = pytest.importorskip("distributed")

PARTITIONS = [1, 2, 3, 4, 8]


def tie_graph(n=300, m=1200, seed=0):
    rng = np.random.default_rng(seed)
    return mgmatch.Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(1, 4, m).astype(float), n=n)


@pytest.fixture(scope="module")
def graph():
    return tie_graph()


@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("algorithm", ["suitor", "ld", "handshake"])
def test_distributed_equals_greedy(dask_client, graph, algorithm, partitions):
    r = match(graph, algorithm, partitions=partitions, client=dask_client, device="cpu")
    np.testing.assert_array_equal(r.mate, verify.greedy_matching(graph))
    assert r.n_parts == partitions
    assert r.rounds.rounds >= 1 and r.rounds.messages[-1] == 0


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_distributed_b_suitor_equals_greedy(dask_client, graph, partitions):
    eu, ev, _ = verify.greedy_b_matching(graph, 3)
    r = mgmatch.b_suitor(graph, 3, partitions=partitions, client=dask_client, device="cpu")
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)


def test_empty_and_isolated_partitions(dask_client):
    # 8 partitions over a graph whose first 60 vertices are isolated and only 10 have edges
    g = mgmatch.Graph.from_edges(np.arange(60, 69), np.arange(61, 70), np.ones(9), n=70)
    bounds = [0, 30, 60, 62, 64, 66, 68, 70, 70]
    assert g.partition(bounds=bounds)[0].nnz == 0 and g.partition(bounds=bounds)[-1].n_owned == 0
    for alg in ["suitor", "ld", "handshake"]:
        r = match(g, alg, partitions=bounds, client=dask_client, device="cpu")
        np.testing.assert_array_equal(r.mate, verify.greedy_matching(g))
    r = match(g, "suitor", partitions=8, client=dask_client, device="cpu")
    np.testing.assert_array_equal(r.mate, verify.greedy_matching(g))


def test_default_partitions_one_per_worker(dask_client, graph):
    r = mgmatch.suitor(graph, client=dask_client, device="cpu")
    assert r.n_parts == len(dask_client.scheduler_info()["workers"])


def test_task_keys_name_algorithm_and_worker(dask_client, graph):
    from dask.utils import key_split

    with distributed.get_task_stream(client=dask_client) as ts:
        match(graph, "suitor", partitions=3, client=dask_client, device="cpu")
    keys = [t["key"] for t in ts.data]
    assert {key_split(k) for k in keys} == {"suitor-rounds"}
    # one long-lived task per worker, whatever the partition count
    assert sorted(k.rsplit("-", 1)[0] for k in keys) == ["suitor-rounds-w0", "suitor-rounds-w1"]


def test_task_mode_keys_name_algorithm_phase_round_partition(dask_client, graph):
    from dask.utils import key_split

    from mgmatch.engine import config_context

    with distributed.get_task_stream(client=dask_client) as ts, config_context(exchange="tasks"):
        r = match(graph, "suitor", partitions=3, client=dask_client, device="cpu")
    np.testing.assert_array_equal(r.mate, verify.greedy_matching(graph))
    assert r.rounds.transport == "tasks"
    keys = [t["key"] for t in ts.data]
    prefixes = {key_split(k) for k in keys}
    assert {"suitor-init", "suitor-propose", "suitor-route", "suitor-finish"} <= prefixes
    assert any(k.startswith("suitor-propose-r2-p1-") for k in keys)
    assert any(k.startswith("suitor-route-r1-p0-p") for k in keys)


@pytest.mark.parametrize("exchange", ["direct", "tasks"])
def test_progress_reports_rounds_messages_matched_fraction(dask_client, graph, exchange):
    from mgmatch.engine import config_context

    calls = []
    with config_context(exchange=exchange, progress_interval_s=1e-6):
        r = match(graph, "ld", partitions=2, client=dask_client, device="cpu", progress=lambda *a: calls.append(a))
    rounds = [c[0] for c in calls]
    assert rounds == sorted(set(rounds)) and rounds[-1] == r.rounds.rounds
    if exchange == "tasks":
        assert rounds == list(range(1, r.rounds.rounds + 1))
    assert calls[-1][1] == 0
    assert calls[-1][2] == pytest.approx(2 * r.cardinality / graph.n)


def test_summary_records_rounds_and_phases(dask_client, graph):
    r = mgmatch.suitor(graph, partitions=2, client=dask_client, device="cpu")
    s = r.summary()
    assert len(s["messages_per_round"]) == s["rounds"]
    for phase in ("compute_s", "exchange_s", "idle_s"):
        assert s["time_s"][phase] >= 0


def test_async_client(graph):
    async def main():
        async with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, asynchronous=True,
                                            host="127.0.0.1", dashboard_address=None, silence_logs=50) as cluster:
            async with distributed.Client(cluster, asynchronous=True) as client:
                return await mgmatch.suitor(graph, partitions=3, client=client, device="cpu")

    r = asyncio.run(main())
    np.testing.assert_array_equal(r.mate, verify.greedy_matching(graph))


class SlowSuitor(_Suitor):
    """Suitor whose every step takes at least ``delay`` seconds, so that a fault lands mid-run."""

    def __init__(self, delay):
        super().__init__()
        self.delay = delay

    def step(self, st, inbox):
        time.sleep(self.delay)
        return super().step(st, inbox)


class OutOfMemoryError(Exception):
    """Named as CuPy's out-of-memory error, which the engine reports as one clear message."""


class ShortOfMemorySuitor(_Suitor):
    """Suitor whose partitions after the first run out of (device) memory in their first step."""

    def step(self, st, inbox):
        if st.part.lo > 0:
            raise OutOfMemoryError("Out of memory allocating 1,024 bytes")
        return super().step(st, inbox)


def test_worker_out_of_gpu_memory_is_one_clear_error(dask_client, graph):
    from mgmatch.engine import execute
    from mgmatch.errors import ResourceError

    with pytest.raises(ResourceError, match=r"suitor-rounds-w\d-\w+ ran out of GPU memory on its worker: Out of memory"):
        execute(ShortOfMemorySuitor(), graph, partitions=2, client=dask_client, device="cpu")
    r = mgmatch.suitor(graph, partitions=2, client=dask_client, device="cpu")  # the cluster serves the next job
    np.testing.assert_array_equal(r.mate, verify.greedy_matching(graph))


def test_a_send_to_a_peer_that_ended_is_a_lost_peer():
    # a rank whose task failed closes its connections; a peer sending its round to it must say
    # it lost that worker (so the client reports the first rank's own error), never raise the
    # socket's broken pipe, whether or not its reader saw the close first
    import socket

    from mgmatch.engine.config import EngineConfig
    from mgmatch.engine.transport import Mesh, PeerError

    for reader_first in (True, False):
        listener = socket.create_server(("127.0.0.1", 0))
        here = socket.create_connection(listener.getsockname())
        there, _ = listener.accept()
        listener.close()
        mesh = Mesh(0, ["tcp://w0", "tcp://w1"], None, EngineConfig())
        mesh._add(1, here)
        there.close()
        if reader_first:
            deadline = time.monotonic() + 10
            while not mesh.peers[1].closed and time.monotonic() < deadline:
                time.sleep(0.01)
            assert mesh.peers[1].closed
        with pytest.raises(PeerError, match="lost worker tcp://w1"):
            for _ in range(200):  # (the first sends may still reach the kernel's buffer)
                mesh.send(1, np.zeros(1 << 16, dtype=np.uint8))
        here.close()


def test_worker_lost_mid_run_gives_identical_matching(worker_fault):
    """A worker killed or stopped (SIGSTOP) mid-run: the run starts over on the other two and
    returns the identical matching, within a bounded time (the stopped one after the peer
    timeout), never a hang."""
    from mgmatch.engine import config_context, execute

    g = tie_graph(n=2000, m=12000, seed=3)
    t0 = time.perf_counter()
    with config_context(peer_timeout_s=3.0, heartbeat_s=0.2, progress_interval_s=1e-6):
        r = execute(SlowSuitor(0.08), g, partitions=6, client=worker_fault.client, device="cpu",
                    progress=worker_fault.progress)
    assert worker_fault.fired.is_set()
    assert time.perf_counter() - t0 < 60
    np.testing.assert_array_equal(r.mate, verify.greedy_matching(g))
    assert r.rounds.workers == 2  # the run that finished used the two workers left


def test_placed_graph_serves_several_runs(dask_client, graph):
    from mgmatch.distributed import place

    dg = place(dask_client, graph, partitions=3)
    assert (dg.n, dg.m, dg.n_parts) == (graph.n, graph.m, 3) and dg.path == ""
    for algorithm in ("suitor", "ld", "suitor"):  # the second Suitor takes the tables the first built
        r = match(dg, algorithm, client=dask_client, device="cpu")
        np.testing.assert_array_equal(r.mate, verify.greedy_matching(graph))
        assert r.n_parts == 3
    # the slot tables and Suitor's lists of each row's best entries stay with the partitions on
    # their workers
    kept = dask_client.gather([dask_client.submit(lambda part: sorted(part._derived), f, pure=False,
                                                  workers=[dg.workers[p]], allow_other_workers=False)
                               for p, f in dg.parts.items()])
    assert all(k == ["matching.slots", "matching.top8"] for k in kept)
    eu, ev, _ = verify.greedy_b_matching(graph, 2)
    r = mgmatch.b_suitor(dg, 2, client=dask_client, device="cpu")
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)


def test_place_rejects_bad_input(dask_client, graph):
    from mgmatch.distributed import place

    with pytest.raises(mgmatch.ParameterError, match="partitions"):
        place(dask_client, graph, partitions=0)
    with pytest.raises(mgmatch.ParameterError, match="takes a Graph"):
        place(dask_client, "graph.csv")


def test_placed_graph_survives_a_lost_worker(worker_fault):
    from mgmatch.distributed import place
    from mgmatch.engine import config_context, execute

    g = tie_graph(n=2000, m=12000, seed=5)
    dg = place(worker_fault.client, g, partitions=6)
    with config_context(peer_timeout_s=3.0, heartbeat_s=0.2, progress_interval_s=1e-6):
        r = execute(SlowSuitor(0.08), dg, client=worker_fault.client, device="cpu", progress=worker_fault.progress)
    assert worker_fault.fired.is_set()
    np.testing.assert_array_equal(r.mate, verify.greedy_matching(g))
    assert dg.n_parts == 6 and worker_fault.victim not in set(dg.workers.values())


def test_distributed_benchmark_rows(tmp_path):
    from mgmatch.bench import distributed as bench

    rows = bench.run(graphs=["kron:k=8,seed=1"], device="cpu", repeats=1, workers=[1, 2])
    assert [(r["impl"], r["algorithm"]) for r in rows] == [
        ("local", "suitor"), ("local", "bsuitor"), ("dask-1w", "suitor"), ("dask-1w", "bsuitor"),
        ("read-on-1w", "read"), ("client-read-1w", "read"),
        ("dask-2w", "suitor"), ("dask-2w", "bsuitor"), ("read-on-2w", "read"), ("client-read-2w", "read")]
    assert all(r["identical"] for r in rows)
    read = rows[-2]
    assert read["ratio_vs"] == "client-read-2w" and read["speedup"] > 0 and read["file_bytes"] > 0
    rows = [r for r in rows if r["algorithm"] != "read"]
    two = rows[-2]
    assert two["transport"] == "tcp" and two["rounds"] >= 2 and two["messages"] > 0
    assert 0 <= two["exchange_share"] <= 1 and 0 < two["exchange_ms_per_round"] <= two["exchange_ms_max"]
    assert two["ratio_vs"] == "dask-1w" and two["speedup"] > 0 and rows[0]["dask_1w_over_local"] > 0
    from mgmatch.ordering import cut_fraction

    assert rows[2]["cut_fraction"] == 0.0  # one worker, one partition
    assert two["cut_fraction"] == cut_fraction(generators.kron(8, seed=1), 2) > 0.3  # ids at random


def test_distributed_benchmark_louvain_rows_hold_the_local_labels():
    from mgmatch.bench import distributed as bench

    rows = bench.run(graphs=["kron:k=8,seed=1"], device="cpu", repeats=1, workers=[2], algorithms=("louvain",),
                     read=False)
    assert [(r["impl"], r["algorithm"]) for r in rows] == [("local", "louvain"), ("dask-2w", "louvain")]
    assert all(r["identical"] for r in rows)  # the labels, not a modularity bound


# ----------------------------------------------------------------------------- bad clusters
def test_unreachable_scheduler():
    from mgmatch.distributed import cluster

    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        with cluster(scheduler="tcp://127.0.0.1:9", timeout=1):
            pass


def test_missing_scheduler_file(tmp_path):
    from mgmatch.distributed import cluster

    with pytest.raises(ClusterError, match="does not exist"):
        with cluster(scheduler_file=str(tmp_path / "nope.json")):
            pass


def test_cluster_without_workers():
    from mgmatch.distributed import cluster

    with distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1", dashboard_address=None) as lc:
        with pytest.raises(ClusterError, match="no workers"):
            with cluster(scheduler=lc.scheduler_address, timeout=1):
                pass


def test_gpu_asked_on_cpu_workers(dask_client, graph):
    from mgmatch._array import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ClusterError, match="has no GPU"):
        mgmatch.suitor(graph, partitions=2, client=dask_client, device="gpu")


def test_bad_worker_count():
    from mgmatch.distributed import cluster

    with pytest.raises(mgmatch.ParameterError, match="workers"):
        with cluster(workers=0):
            pass


# ------------------------------------------------------------------- every family, one engine
def test_bipartite_matching_runs_on_a_worker(dask_client):
    g = generators.random_bipartite(300, 200, avg_degree=3, seed=4)
    local = mgmatch.bipartite_matching(g, "apfb", device="cpu")
    for algorithm in ("apfb", "apsb", "gpr"):
        r = mgmatch.bipartite_matching(g, algorithm, device="cpu", client=dask_client)
        ref = mgmatch.bipartite_matching(g, algorithm, device="cpu")
        assert r.cardinality == local.cardinality
        np.testing.assert_array_equal(r.row_match, ref.row_match)


def test_bipartite_matching_refuses_several_partitions():
    from mgmatch.algorithms.bipartite import _BipartiteProgram
    from mgmatch.engine import execute

    g = generators.random_bipartite(30, 20, avg_degree=3, seed=4)
    with pytest.raises(mgmatch.ParameterError, match="at most 1 partition"):
        execute(_BipartiteProgram("apfb", {"init": "cheap", "bfs": "gpubfs-wr", "launch": "persistent",
                                           "deterministic": False}), g, partitions=2, device="cpu")


def test_two_jobs_at_once_share_no_session(dask_client, graph):
    """Two jobs submitted together from two threads: the multi-lock runs them one after the other."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(match, graph, alg, partitions=2, client=dask_client, device="cpu")
                for alg in ("suitor", "handshake")]
        results = [f.result(timeout=120) for f in runs]
    for r in results:
        np.testing.assert_array_equal(r.mate, verify.greedy_matching(graph))


def test_engine_config_is_validated():
    from mgmatch.engine import EngineConfig, config_context

    with pytest.raises(mgmatch.ParameterError, match="exchange"):
        EngineConfig(exchange="pigeons")
    with pytest.raises(mgmatch.ParameterError, match="peer_timeout_s"):
        with config_context(peer_timeout_s=-1):
            pass
    with pytest.raises(mgmatch.ParameterError, match="heartbeat_s"):
        EngineConfig(peer_timeout_s=1.0, heartbeat_s=2.0)
    for bad in (-0.1, float("nan"), float("inf"), True):
        with pytest.raises(mgmatch.ParameterError, match="spin_wait_s"):
            EngineConfig(spin_wait_s=bad)
    assert EngineConfig(spin_wait_s=0).spin_wait_s == 0


class _WaitingSession:
    """What :func:`~mgmatch.engine.transport.wait_for` uses of a session: its mesh (a check
    that may raise, the configuration) and ``abort``."""

    def __init__(self, config, fail_after=None):
        from types import SimpleNamespace

        self.checks = 0
        self.aborted = False
        self.fail_after = fail_after
        self.mesh = SimpleNamespace(config=config, check=self._check)

    def _check(self):
        from mgmatch.engine.transport import PeerError

        self.checks += 1
        if self.fail_after is not None and self.checks > self.fail_after:
            raise PeerError("worker tcp://w1 sent nothing for 1 s", "tcp://w1", stopped=True)

    def abort(self):
        self.aborted = True


def test_a_device_wait_polls_without_sleeping_then_sleeps(monkeypatch):
    # a round's wait for its device polls without a pause for spin_wait_s (a sleep overshoots
    # each round by a fifth of a millisecond), then sleeps between polls; the peers are checked
    # all along
    from mgmatch.engine import EngineConfig
    from mgmatch.engine import transport

    sleeps = []
    real_sleep = time.sleep
    monkeypatch.setattr(transport.time, "sleep", lambda s: (sleeps.append(s), real_sleep(s)))
    end = time.monotonic() + 0.05
    session = _WaitingSession(EngineConfig(spin_wait_s=1.0))
    transport.wait_for(session, lambda: time.monotonic() > end)
    assert sleeps == [] and session.checks >= 1 and not session.aborted
    end = time.monotonic() + 0.05
    session = _WaitingSession(EngineConfig(spin_wait_s=0))
    transport.wait_for(session, lambda: time.monotonic() > end)
    assert sleeps and all(s <= 0.002 for s in sleeps) and session.checks >= 1
    transport.wait_for(session, lambda: True)  # done at once: no check, no sleep


def test_a_device_wait_aborts_on_a_lost_peer():
    # a collective whose peer stopped never completes: the wait must give up with the peer's
    # error and abort the communicator, whether it is still polling or already sleeping
    from mgmatch.engine import EngineConfig
    from mgmatch.engine.transport import PeerError, wait_for

    for spin in (10.0, 0.0):
        session = _WaitingSession(EngineConfig(spin_wait_s=spin), fail_after=2)
        t0 = time.monotonic()
        with pytest.raises(PeerError, match="tcp://w1"):
            wait_for(session, lambda: False)
        assert session.aborted and session.checks == 3 and time.monotonic() - t0 < 5


def test_partition_keeps_derived_tables_on_the_cpu_only_where_it_lives():
    import pickle

    from mgmatch.graph import Partition, partition_bounds

    g = generators.kron(8, seed=1)
    part = Partition.from_graph(g, 1, partition_bounds(g.indptr, 2))
    calls = []
    first = part.derived("t", lambda: calls.append(1) or np.arange(3))
    assert part.derived("t", lambda: calls.append(1) or np.arange(3)) is first and calls == [1]
    moved = pickle.loads(pickle.dumps(part))  # sent to another process: rebuilt there
    assert moved._derived == {} and moved.nnz == part.nnz
    assert part.to("cpu")._derived == {}  # a copy starts without them


def _run_folders() -> set:
    import glob

    from mgmatch.engine import handback

    return set(glob.glob(os.path.join(handback.FOLDER, handback.RUN_PREFIX + "*")))


def _handback_or_skip(client=None) -> None:
    """The test skips where results cannot come back through shared memory: no memory file
    system here, or workers that do not find this client's run folders as their own."""
    from mgmatch.engine import handback

    route = handback.open_run(0)
    if route is None:
        pytest.skip("this host has no memory file system to hand results back through")
    try:
        if client is not None and not all(client.run(handback._ours, route.folder).values()):
            pytest.skip("the workers do not share this client's memory file system")
    finally:
        handback.close_run(route)


@pytest.mark.parametrize("exchange", ["direct", "tasks"])
def test_results_come_back_through_shared_memory(dask_client, graph, exchange):
    """With every array handed back through the host's memory file system, every family's
    result is the one that came through Dask, the log counts the bytes, and no file is left."""
    from mgmatch.engine import config_context

    _handback_or_skip(dask_client)
    before = _run_folders()
    out = {}
    for bytes_ in (0, None):
        with config_context(exchange=exchange, handback_bytes=bytes_):
            out[bytes_] = (match(graph, "suitor", partitions=2, client=dask_client, device="cpu"),
                           mgmatch.b_suitor(graph, 3, partitions=3, client=dask_client, device="cpu"),
                           mgmatch.louvain(graph, partitions=2, client=dask_client, device="cpu"))
    (s0, b0, l0), (s1, b1, l1) = out[0], out[None]
    np.testing.assert_array_equal(s0.mate, verify.greedy_matching(graph))
    np.testing.assert_array_equal(s0.mate, s1.mate)
    np.testing.assert_array_equal(s0.w, s1.w)
    eu, ev, _ = verify.greedy_b_matching(graph, 3)
    np.testing.assert_array_equal(b0.u, eu)
    np.testing.assert_array_equal(b0.v, ev)
    np.testing.assert_array_equal(b0.w, b1.w)
    np.testing.assert_array_equal(l0.communities, l1.communities)
    np.testing.assert_array_equal(l0.communities, mgmatch.louvain(graph, partitions=2, device="cpu").communities)
    assert s0.rounds.handback_bytes >= s0.u.nbytes // 2 > 0 and b0.rounds.handback_bytes > 0
    assert l0.summary()["handback_bytes"] > 0 and l1.summary()["handback_bytes"] == 0
    assert s1.rounds.handback_bytes == 0 and b1.rounds.handback_bytes == 0
    assert s0.summary()["handback_bytes"] == s0.rounds.handback_bytes
    assert _run_folders() <= before


@pytest.mark.parametrize("exchange", ["direct", "tasks"])
def test_bipartite_and_stable_marriage_come_back_through_shared_memory(dask_client, exchange):
    """The two other families' results through the host's memory file system: the in-process ones."""
    from mgmatch.engine import config_context

    _handback_or_skip(dask_client)
    before = _run_folders()
    g = generators.random_bipartite(300, 200, avg_degree=3, seed=4)
    rng = np.random.default_rng(31)
    n_men, n_women = 60, 70
    man, woman = np.nonzero(rng.random((n_men, n_women)) < 0.3)
    table = {"man": man, "woman": woman, "man_rank": rng.permutation(man.size),
             "woman_rank": rng.permutation(man.size)}
    with config_context(exchange=exchange, handback_bytes=0):
        bm = mgmatch.bipartite_matching(g, "apfb", device="cpu", client=dask_client)
        sm = mgmatch.stable_marriage(table, n_men=n_men, n_women=n_women, partitions=3, client=dask_client,
                                     device="cpu")
    np.testing.assert_array_equal(bm.row_match, mgmatch.bipartite_matching(g, "apfb", device="cpu").row_match)
    np.testing.assert_array_equal(sm.wife, mgmatch.stable_marriage(table, n_men=n_men, n_women=n_women,
                                                                   device="cpu").wife)
    assert sm.summary()["handback_bytes"] > 0
    assert _run_folders() <= before


def test_handback_files():
    """pack writes only for a client of this memory file system and into the run's folder,
    unpack gives the arrays back, dtype and shape included, and close_run removes the folder
    with what nobody read; a worker that comes after that keeps its arrays."""
    from mgmatch.engine import handback
    from mgmatch.errors import ClusterError

    _handback_or_skip()
    values = {"u": np.arange(1000, dtype=np.int32), "w": np.linspace(0, 1, 300), "none": np.empty(0, np.int64),
              "one": np.array(7.5), "rows": np.arange(12, dtype=np.int64).reshape(3, 4), "n": 5, "small": np.ones(1),
              "levels": [np.arange(50, dtype=np.int64), np.arange(3, dtype=np.int32)],
              "when": np.arange(10).astype("datetime64[s]"), "big_endian": np.arange(20, dtype=">f8"),
              "fortran": np.asfortranarray(np.arange(30.0).reshape(5, 6)), "strided": np.arange(100)[::3],
              "records": np.array([(1, 2.5), (3, 4.5)] * 4, dtype=[("id", "i4"), ("x", "f8")])}
    route = handback.open_run(0)
    folder = route.folder
    assert route.buses == () and os.path.isdir(folder) and os.stat(folder).st_mode & 0o777 == 0o700
    try:
        elsewhere = os.path.join(handback.FOLDER, f"{handback.RUN_PREFIX}not-made-here")  # another host's
        assert _as_they_are(handback.pack(values, handback.Route(elsewhere), 0), values)
        assert not os.path.exists(elsewhere)
        assert _as_they_are(handback.pack(values, route, None), values)
        assert _as_they_are(handback.pack(values, None, 0), values)
        packed = handback.pack(values, route, 16)
        shared = {k for k, v in packed.items() if isinstance(v, handback.Shared)}
        assert shared == {"u", "w", "rows", "when", "big_endian", "fortran", "strided", "records"}
        assert packed["small"] is values["small"] and packed["n"] == 5 and packed["one"] is values["one"]
        assert isinstance(packed["levels"][0], handback.Shared) and packed["levels"][1] is values["levels"][1]
        assert handback.shared_bytes(packed) == sum(values[k].nbytes for k in shared) + 400
        assert len(os.listdir(folder)) == len(shared) + 1
        back = handback.unpack(packed)
        assert not os.listdir(folder)
        for k, v in values.items():
            for a, b in zip(back[k], v) if k == "levels" else [(back[k], v)]:
                np.testing.assert_array_equal(a, b)
                assert getattr(a, "dtype", None) == getattr(b, "dtype", None) and np.shape(a) == np.shape(b)
        assert isinstance(back["levels"], list) and back["records"]["x"][1] == 4.5
        assert back["u"].base is None and back["rows"].base is None  # arrays of their own, not on the files
        back["u"][0] = -1
        assert back["u"][0] == -1 and values["u"][0] == 0
        unread = handback.pack(values, route, 0)
        assert len(os.listdir(folder)) == 12  # every array but the empty one
    finally:
        handback.close_run(route)
    assert not os.path.exists(folder)
    with pytest.raises(ClusterError, match="could not be read back"):
        handback.unpack(unread)
    late = handback.pack(values, route, 0)  # the client gave up on the run
    assert _as_they_are(late, values) and not os.path.exists(folder)


def _as_they_are(packed: dict, values: dict) -> bool:
    """``packed`` holds ``values``' own objects (host arrays are not copied), none in a file."""
    return packed.keys() == values.keys() and all(
        type(packed[k]) is type(v) and all(a is b for a, b in zip(packed[k], v)) if type(v) is list
        else packed[k] is v for k, v in values.items())


@pytest.mark.gpu
def test_handback_device_arrays():
    """Device arrays go from the GPU into the run's files and come back equal, whether their
    size is whole words or not, contiguous or not, longer than one staging piece or not; the
    small ones come back as host arrays."""
    import cupy as cp

    from mgmatch._array import ROW_PIECE
    from mgmatch.engine import handback

    _handback_or_skip()
    values = {"long": cp.arange(3 * ROW_PIECE + 5, dtype=cp.int64), "odd": cp.arange(1001, dtype=cp.int8),
              "rows": cp.arange(24, dtype=cp.float32).reshape(4, 6), "strided": cp.arange(999, dtype=cp.int32)[::2],
              "small": cp.ones(2), "levels": [cp.arange(77, dtype=cp.int64)], "n": 3}
    route = handback.open_run(64)
    try:
        packed = handback.pack(values, route, 64)
        assert {k for k, v in packed.items() if isinstance(v, handback.Shared)} == {"long", "odd", "rows", "strided"}
        assert isinstance(packed["levels"][0], handback.Shared) and type(packed["small"]) is np.ndarray
        back = handback.unpack(packed)
        assert back["n"] == 3
        for k, v in values.items():
            for a, b in zip(back[k], v) if k == "levels" else [] if k == "n" else [(back[k], v)]:
                assert type(a) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape
                np.testing.assert_array_equal(a, cp.asnumpy(b))
    finally:
        handback.close_run(route)


@pytest.mark.gpu
def test_handback_device_copies():
    """On a route that names this GPU, device arrays stay on it as copies of their own, kept
    until release, and come back equal; a route naming another GPU gets files; what the client
    cannot map comes back again through files (repack); the copies of a run whose folder is
    gone are freed the next time results are packed."""
    import cupy as cp

    from mgmatch.engine import handback

    _handback_or_skip()
    values = {"u": cp.arange(10_001, dtype=cp.int64), "rows": cp.arange(24.0).reshape(4, 6)[:, ::2],
              "host": np.arange(100, dtype=np.int32), "small": cp.ones(2), "levels": [cp.arange(77, dtype=cp.int32)]}
    route = handback.open_run(64, device=True)
    here = cp.cuda.runtime.deviceGetPCIBusId(cp.cuda.Device().id)
    try:
        assert here in route.buses
        packed = handback.pack(values, route, 64)
        on_device = {k for k, v in packed.items() if isinstance(v, handback.DeviceShared)}
        assert on_device == {"u", "rows"} and isinstance(packed["host"], handback.Shared)
        assert isinstance(packed["levels"][0], handback.DeviceShared) and type(packed["small"]) is np.ndarray
        assert len(handback.unmapped(packed)) == 3 and len(handback._HELD[route.folder]) == 3
        assert handback.shared_bytes(packed) == sum(a.nbytes for a in (values["u"], values["rows"], values["host"],
                                                                       values["levels"][0]))
        values["u"][0] = -5  # the copy was taken when packed
        back = handback.unpack(packed)
        assert back["u"][0] == 0 and not handback.unmapped(back)
        values["u"][0] = 0
        for k, v in values.items():
            for a, b in zip(back[k], v) if k == "levels" else [(back[k], v)]:
                assert type(a) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape
                np.testing.assert_array_equal(a, cp.asnumpy(b) if isinstance(b, cp.ndarray) else b)
        keys = [d.key for d in handback.unmapped(packed)]
        again = handback.repack(route.folder, keys, 64)
        assert set(again) == set(keys) and all(isinstance(v, handback.Shared) for v in again.values())
        redone = handback.unpack({k: packed[k] for k in ("u", "rows", "levels")}, again)  # (the file was read)
        np.testing.assert_array_equal(redone["rows"], cp.asnumpy(values["rows"]))
        np.testing.assert_array_equal(redone["levels"][0], cp.asnumpy(values["levels"][0]))
        handback.release(route.folder)
        assert route.folder not in handback._HELD
        elsewhere = handback.Route(route.folder, ("0000:FF:1F.0",))  # a GPU this process does not have
        assert not handback.unmapped(handback.pack(values, elsewhere, 64))
        handback.pack(values, route, 64)
        assert len(handback._HELD[route.folder]) == 3
    finally:
        handback.close_run(route)
    handback.pack({}, None, 64)  # the client is gone: the next pack frees its copies
    assert route.folder not in handback._HELD


def test_handback_without_room_goes_through_dask(monkeypatch):
    """A memory file system without room for twice the array (a container's 64 MB) is not used."""
    from mgmatch.engine import handback

    _handback_or_skip()
    route = handback.open_run(0)
    try:
        full = os.statvfs(route.folder)
        monkeypatch.setattr(handback.os, "statvfs",
                            lambda path: type("Full", (), {"f_bavail": 1, "f_frsize": full.f_frsize})())
        values = {"u": np.arange(10_000, dtype=np.int64)}
        packed = handback.pack(values, route, 0)
        assert packed["u"] is values["u"] and not os.listdir(route.folder)
    finally:
        monkeypatch.undo()
        handback.close_run(route)


def test_an_embedded_cluster_holds_all_its_workers_when_the_job_starts(monkeypatch):
    # on a loaded machine a worker could register after the job began (the demo printed
    # "0 workers"), and the partitions went to the workers already there: the cluster waits for
    # every worker it started
    import importlib

    module = importlib.import_module("mgmatch.distributed.cluster")  # (the package's `cluster` is the function)
    waited = []
    real = module._wait_for_workers
    monkeypatch.setattr(module, "_wait_for_workers", lambda client, n, timeout: (waited.append(n),
                                                                                 real(client, n, timeout)))
    with module.cluster(workers=2, device="cpu", dashboard=False) as client:
        assert waited == [2]
        assert len(client.scheduler_info()["workers"]) == 2


def test_a_stop_signal_while_the_local_cluster_starts_closes_it():
    """SIGTERM inside the cluster's start (here as its constructor ends) used to escape before
    ``cluster()`` held the cluster: nothing closed it, and Dask's exit hook failed with a
    traceback on workers still starting. The signal now waits for the start, then unwinds
    through the code that closes the cluster."""
    import subprocess
    import sys

    code = ("import os, signal, distributed\n"
            "from distributed.deploy.spec import SpecCluster\n"
            "from mgmatch._signals import Terminated, terminate_as_interrupt\n"
            "from mgmatch.distributed.cluster import cluster\n"
            "class Stopped(distributed.LocalCluster):\n"
            "    def __init__(self, *args, **kwargs):\n"
            "        super().__init__(*args, **kwargs)\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n"
            "distributed.LocalCluster = Stopped\n"
            "try:\n"
            "    with terminate_as_interrupt(), cluster(workers=1, device='cpu', check_cores=False):\n"
            "        print('ran', flush=True)\n"
            "except Terminated as stop:\n"
            "    print('stopped by', stop.name, flush=True)\n"
            "print('open:', sum(c.status.name != 'closed' for c in list(SpecCluster._instances)), flush=True)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split("\n")[:2] == ["stopped by SIGTERM", "open: 0"], done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_handback_device_is_a_switch_and_needs_a_gpu():
    """``handback_device`` is True or False; without a GPU here a device route names none."""
    from mgmatch._array import gpu_available
    from mgmatch.engine import EngineConfig, handback

    assert EngineConfig().handback_device is True and EngineConfig(handback_device=np.False_).handback_device is False
    with pytest.raises(mgmatch.errors.ParameterError, match="handback_device must be True or False"):
        EngineConfig(handback_device="no")
    _handback_or_skip()
    routes = [handback.open_run(0, device=True), handback.open_run(0, device=False)]
    try:
        assert bool(routes[0].buses) == gpu_available() and routes[1].buses == ()
    finally:
        for route in routes:
            handback.close_run(route)


def test_handback_folder_goes_when_the_client_exits_mid_run():
    """A client that ends while it waits for a run (a job stopped by SIGTERM unwinds and exits)
    removes the run's folder on its way out, and a worker that finishes later keeps its arrays."""
    import subprocess
    import sys

    _handback_or_skip()
    code = ("import numpy as np, os, signal, sys\n"
            "from mgmatch._signals import terminate_as_interrupt\n"
            "from mgmatch.engine import handback\n"
            "route = handback.open_run(0)\n"
            "handback.pack({'u': np.arange(1000)}, route, 0)\n"
            "assert len(os.listdir(route.folder)) == 1\n"
            "print(route.folder, flush=True)\n"
            "with terminate_as_interrupt():\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "Terminated" in done.stderr and "AssertionError" not in done.stderr
    folder = done.stdout.strip()
    assert folder and not os.path.exists(folder)
