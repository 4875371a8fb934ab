"""The engine on GPU workers (``LocalCUDACluster``, one worker per GPU): every algorithm gives
the sequential greedy result, with partitions split over the GPUs and exchanging boundary
messages between them over NCCL."""

from __future__ import annotations

import numpy as np
import pytest

import mgmatch
from mgmatch import generators, verify
from mgmatch.algorithms.matching import match

pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def gpu_client():
    pytest.importorskip("dask_cuda")
    from mgmatch.distributed import cluster

    with cluster(device="gpu", dashboard=False) as client:
        yield client


@pytest.fixture(scope="module")
def skewed():
    return generators.kron(12, edge_factor=16, seed=4, weights="unit")  # heavy skew and ties


@pytest.mark.mgpu
@pytest.mark.parametrize("partitions", [2, 4])
@pytest.mark.parametrize("algorithm", ["suitor", "ld", "handshake"])
def test_gpu_workers_equal_greedy(gpu_client, skewed, algorithm, partitions):
    r = match(skewed, algorithm, partitions=partitions, client=gpu_client, device="gpu")
    assert r.device == "gpu" and r.rounds.rounds >= 2 and r.rounds.transport == "nccl"
    np.testing.assert_array_equal(r.mate, verify.greedy_matching(skewed))


@pytest.mark.mgpu
@pytest.mark.parametrize("partitions", [2, 3])
def test_gpu_workers_b_suitor_equals_greedy(gpu_client, skewed, partitions):
    eu, ev, _ = verify.greedy_b_matching(skewed, 3)
    r = mgmatch.b_suitor(skewed, 3, partitions=partitions, client=gpu_client, device="gpu")
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)


@pytest.mark.mgpu
def test_placed_graph_on_gpu_workers(gpu_client):
    from mgmatch.distributed import place

    g = generators.delaunay(14, seed=3)
    dg = place(gpu_client, g)
    assert dg.n_parts == len(gpu_client.scheduler_info()["workers"])
    for _ in range(2):  # the placed partitions serve several runs
        r = mgmatch.suitor(dg, client=gpu_client, device="gpu")
        np.testing.assert_array_equal(r.mate, verify.greedy_matching(g))


@pytest.mark.mgpu
def test_resident_partitions_serve_every_family(gpu_client, skewed):
    from mgmatch.distributed import place

    dg = place(gpu_client, skewed, resident=True)
    assert dg.resident
    for _ in range(2):
        r = mgmatch.suitor(dg, client=gpu_client, device="gpu")
        np.testing.assert_array_equal(r.mate, verify.greedy_matching(skewed))
    eu, ev, _ = verify.greedy_b_matching(skewed, 2)
    r = mgmatch.b_suitor(dg, 2, client=gpu_client, device="gpu")
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)


@pytest.mark.mgpu
def test_gpu_task_mode_equals_direct(gpu_client, skewed):
    from mgmatch.engine import config_context

    with config_context(exchange="tasks"):
        r = mgmatch.suitor(skewed, partitions=2, client=gpu_client, device="gpu")
    assert r.rounds.transport == "tasks"
    np.testing.assert_array_equal(r.mate, verify.greedy_matching(skewed))


@pytest.mark.mgpu
def test_bipartite_matching_on_a_gpu_worker(gpu_client):
    g = generators.random_bipartite(2000, 1500, avg_degree=4, seed=2)
    local = mgmatch.bipartite_matching(g, "apfb", device="gpu", deterministic=True)
    r = mgmatch.bipartite_matching(g, "apfb", device="gpu", deterministic=True, client=gpu_client)
    assert r.cardinality == local.cardinality
    np.testing.assert_array_equal(r.row_match, local.row_match)


@pytest.mark.gpu
def test_one_gpu_worker_equals_local():
    pytest.importorskip("dask_cuda")
    from mgmatch.distributed import cluster

    g = generators.kron(11, edge_factor=8, seed=9)
    local = mgmatch.suitor(g, device="gpu")
    with cluster(workers=1, device="gpu", dashboard=False) as client:
        assert len(client.scheduler_info()["workers"]) == 1
        r = mgmatch.suitor(g, client=client, device="gpu")
    np.testing.assert_array_equal(r.mate, local.mate)


@pytest.mark.gpu
def test_a_round_waits_for_its_device_then_copies_back():
    # the NCCL round's read of the gathered counts: the host waits for the stream (polling,
    # then sleeping) and gets what the kernels in flight wrote
    from types import SimpleNamespace

    from mgmatch._array import cupy_or_none
    from mgmatch.engine import EngineConfig
    from mgmatch.engine.transport import _wait_and_get

    cp = cupy_or_none()
    n = 1 << 24
    for spin in (0.05, 0.0):
        y = cp.cumsum(cp.arange(n, dtype=cp.float64))  # in flight when the wait starts
        mesh = SimpleNamespace(config=EngineConfig(spin_wait_s=spin), check=lambda: None)
        out = _wait_and_get(SimpleNamespace(mesh=mesh, abort=lambda: None), y[-2:], cp.cuda.get_current_stream())
        assert isinstance(out, np.ndarray)
        assert out.tolist() == [(n - 2) * (n - 1) / 2, (n - 1) * n / 2]


@pytest.mark.gpu
def test_more_gpu_workers_than_gpus_is_one_clear_error():
    pytest.importorskip("dask_cuda")
    from mgmatch._array import cupy_or_none
    from mgmatch.distributed import cluster

    visible = cupy_or_none().cuda.runtime.getDeviceCount()
    with pytest.raises(mgmatch.errors.ClusterError, match=f"{visible + 1} GPU workers"):
        with cluster(workers=visible + 1, device="gpu", dashboard=False):
            pass


@pytest.mark.mgpu
def test_gpu_workers_allocate_from_the_default_pool(gpu_client):
    # a run's memory check counts the default pool's cached blocks as free, and the capacity
    # bench gives them back between runs: a worker's arrays must come from that pool
    def grows():
        import cupy as cp

        pool = cp.get_default_memory_pool()
        before = pool.used_bytes()
        a = cp.empty(1 << 20, dtype=cp.uint8)
        return pool.used_bytes() - before >= a.nbytes

    assert all(gpu_client.run(grows).values())


@pytest.mark.mgpu
def test_capacity_rows_refuse_locally_and_finish_on_two_gpus():
    # each GPU filled until less than the single-GPU estimate is free: the local run refuses with
    # the memory message, two workers (half the graph each) finish with the local result
    from mgmatch.bench.distributed import run

    rows = run(["kron:k=21,seed=1"], device="gpu", repeats=2, workers=[2], algorithms=("suitor", "louvain"),
               read=False, fill_gpus=True)
    assert [row["algorithm"] for row in rows] == ["suitor", "louvain"]
    for row in rows:  # (two timed runs each: the first run's cached blocks must not crowd out the second)
        assert row["impl"] == "filled-2w" and row["workers"] == 2
        assert row["local_refused"], row
        assert "GPU memory" in row["local_error"]
        assert all(free < row["single_gpu_estimate_bytes"] for free in row["free_bytes_per_gpu"])
        assert row["identical"] and row["rounds"] >= 2, row


@pytest.mark.gpu
@pytest.mark.parametrize("exchange", ["direct", "tasks"])
def test_a_gpu_worker_hands_results_back_from_its_device(monkeypatch, exchange):
    """A GPU worker on the client's host hands every family's large arrays back as device copies
    that the client maps (CUDA IPC): the results equal those through Dask and in-process, and
    the worker frees its copies. Where the client cannot map them, they come back through files."""
    pytest.importorskip("dask_cuda")
    from mgmatch.distributed import cluster, place
    from mgmatch.engine import config_context, handback

    g = generators.kron(12, edge_factor=16, seed=4)
    local = (mgmatch.suitor(g, device="gpu"), mgmatch.b_suitor(g, 3, device="gpu"), mgmatch.louvain(g, device="gpu"))
    mapped = []
    real = handback._map
    monkeypatch.setattr(handback, "_map", lambda s: (mapped.append(s.nbytes), real(s))[1])

    def held():
        return sum(len(run) for run in handback._HELD.values())

    with cluster(workers=1, device="gpu", dashboard=False) as client:
        if not all(client.run(handback._ours, handback.FOLDER).values()):
            pytest.skip("the worker does not share this client's memory file system")
        dg = place(client, g, resident=True)
        for bytes_ in (0, None):
            with config_context(exchange=exchange, handback_bytes=bytes_):
                got = (mgmatch.suitor(dg, client=client, device="gpu"),
                       mgmatch.b_suitor(dg, 3, client=client, device="gpu"),
                       mgmatch.louvain(dg, client=client, device="gpu"))
            np.testing.assert_array_equal(got[0].mate, local[0].mate)
            np.testing.assert_array_equal(got[1].u, local[1].u)
            np.testing.assert_array_equal(got[1].v, local[1].v)
            np.testing.assert_array_equal(got[2].communities, local[2].communities)
            assert (got[0].rounds.handback_bytes > 0) == (bytes_ == 0)
        assert mapped  # (the arrays of the runs with handback_bytes=0 came from the worker's device)
        assert sum(client.run(held).values()) == 0
        mapped.clear()
        cp = pytest.importorskip("cupy")

        def refuse(handle):
            raise cp.cuda.runtime.CUDARuntimeError(201)  # (an invalid context: no mapping to be had)

        monkeypatch.setattr(handback, "_UNMAPPABLE", set())
        monkeypatch.setattr(cp.cuda.runtime, "ipcOpenMemHandle", refuse)  # (in this process only)
        with config_context(exchange=exchange, handback_bytes=0):
            r = mgmatch.suitor(dg, client=client, device="gpu")
        np.testing.assert_array_equal(r.mate, local[0].mate)
        assert mapped and handback._UNMAPPABLE and r.rounds.handback_bytes > 0
        assert sum(client.run(held).values()) == 0
