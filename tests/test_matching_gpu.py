"""GPU-only tests of the weighted-matching kernels: large ids, skewed degrees, ties, isolated
vertices, both handshaking variants, tunables and the memory guard. Every result is compared
with the sequential greedy reference, edge for edge."""

from __future__ import annotations

import numpy as np
import pytest

import mgmatch
from mgmatch import generators, verify
from mgmatch.algorithms.matching import match, matching_config

pytestmark = pytest.mark.gpu

ONE_MATCHINGS = ["suitor", "ld", "handshake"]


def _assert_greedy(graph, algorithm, partitions=1, b=2):
    r = match(graph, algorithm, b=b if algorithm == "bsuitor" else None, partitions=partitions, device="gpu")
    if algorithm == "bsuitor":
        eu, ev, _ = verify.greedy_b_matching(graph, b)
        np.testing.assert_array_equal(r.u, eu)
        np.testing.assert_array_equal(r.v, ev)
    else:
        np.testing.assert_array_equal(r.mate, verify.greedy_matching(graph))
    return r


def test_more_than_2_pow_24_vertices():
    # ids above 2**24 are not exact in float32: every id must stay an integer on the device
    n = 2**24 + 1000
    rng = np.random.default_rng(3)
    g = mgmatch.Graph.from_edges(np.arange(n - 1), np.arange(1, n), rng.random(n - 1) + 0.5, n=n)
    expected = verify.greedy_matching(g)
    for algorithm in ONE_MATCHINGS:
        r = match(g, algorithm, device="gpu")
        np.testing.assert_array_equal(r.mate, expected)
    assert (expected[n - 200 :] >= 0).any()


def test_more_than_2_pow_24_vertices_b_suitor_and_partitions():
    n = 2**24 + 64
    rng = np.random.default_rng(4)
    src = rng.integers(0, n, 200_000)
    g = mgmatch.Graph.from_edges(src, (src + rng.integers(1, 1000, src.size)) % n, rng.integers(1, 5, src.size) * 1.0, n=n)
    _assert_greedy(g, "suitor", partitions=3)
    _assert_greedy(g, "bsuitor", partitions=2, b=2)


@pytest.mark.parametrize("weights", ["random", "unit"])
@pytest.mark.parametrize("algorithm", ONE_MATCHINGS + ["bsuitor"])
@pytest.mark.parametrize("partitions", [1, 3])
def test_heavy_skew_kron(weights, algorithm, partitions):
    g = generators.kron(12, edge_factor=16, seed=2, weights=weights)
    _assert_greedy(g, algorithm, partitions=partitions, b=3)


@pytest.mark.parametrize("algorithm", ONE_MATCHINGS + ["bsuitor"])
def test_ties_and_isolated_vertices(algorithm):
    rng = np.random.default_rng(8)
    n = 20_000
    src, dst = rng.integers(0, n // 4, 30_000), rng.integers(0, n // 4, 30_000)  # 3/4 isolated
    g = mgmatch.Graph.from_edges(src, dst, rng.integers(1, 3, src.size) * 1.0, n=n)
    _assert_greedy(g, algorithm, partitions=1)
    _assert_greedy(g, algorithm, partitions=4)


def test_float_weights_use_exact_ranks():
    # random float64 weights are not float32 values: the dense-rank path
    g = mgmatch.Graph.from_edges(*np.random.default_rng(1).integers(0, 3000, (2, 20_000)),
                                 np.random.default_rng(2).random(20_000), n=3000)
    for algorithm in ("suitor", "bsuitor"):
        _assert_greedy(g, algorithm, partitions=1)
        _assert_greedy(g, algorithm, partitions=5)


def test_float32_graph():
    g64 = mgmatch.Graph.from_edges(*np.random.default_rng(5).integers(0, 2000, (2, 10_000)),
                                   np.random.default_rng(6).random(10_000), n=2000)
    u, v, w = g64.edges()
    g32 = mgmatch.Graph.from_edges(u, v, w.astype(np.float32), n=g64.n, dtype="float32")
    for algorithm in ONE_MATCHINGS + ["bsuitor"]:
        _assert_greedy(g32, algorithm, partitions=2)


@pytest.mark.parametrize("partitions", [1, 3])
def test_handshake_variants_agree(partitions):
    g = generators.kron(11, edge_factor=8, seed=5, weights="unit")
    results = {}
    for variant in ("warp", "scan"):
        with matching_config(handshake_variant=variant):
            results[variant] = match(g, "handshake", partitions=partitions, device="gpu")
    np.testing.assert_array_equal(results["warp"].mate, results["scan"].mate)
    np.testing.assert_array_equal(results["warp"].mate, verify.greedy_matching(g))


def test_strongest_neighbour_variants():
    g = mgmatch.Graph.from_edges(*np.random.default_rng(9).integers(0, 500, (2, 3000)),
                                 np.random.default_rng(9).integers(1, 4, 3000) * 1.0, n=600)
    expected = mgmatch.strongest_neighbour(g, device="cpu")
    for variant in ("warp", "scan"):
        with matching_config(handshake_variant=variant):
            np.testing.assert_array_equal(mgmatch.strongest_neighbour(g, device="gpu"), expected)


@pytest.mark.parametrize("wide", [None, False])
@pytest.mark.parametrize("weights", ["random", "unit"])
@pytest.mark.parametrize("partitions", [1, 4])
def test_suitor_key_widths(wide, weights, partitions):
    # 128-bit (weight bits, id) keys where the GPU has them, 64-bit (rank, id) keys everywhere:
    # both are the greedy matching, ties included
    g = generators.kron(12, edge_factor=16, seed=11, weights=weights)
    zero = mgmatch.Graph.from_edges(np.array([0, 1, 2, 0]), np.array([1, 2, 3, 3]), np.array([0.0, -0.0, 0.0, 1.0]))
    with matching_config(wide_keys=wide):
        _assert_greedy(g, "suitor", partitions=partitions)
        _assert_greedy(zero, "suitor", partitions=partitions if partitions < 4 else 2)


@pytest.mark.parametrize("wide", [None, False])
@pytest.mark.parametrize("partitions", [2, 3])
def test_suitor_outbox_bound_on_all_boundary_graphs(wide, partitions):
    # every edge crosses partitions (complete bipartite halves, a star of remote leaves): each
    # step sends as many messages as the outbox bound allows for; an overflow raises
    rng = np.random.default_rng(3)
    left, right = np.meshgrid(np.arange(60), np.arange(60, 120), indexing="ij")
    kb = mgmatch.Graph.from_edges(left.ravel(), right.ravel(), rng.random(left.size))
    star = mgmatch.Graph.from_edges(np.zeros(299, np.int64), np.arange(1, 300), rng.random(299))
    with matching_config(wide_keys=wide):
        _assert_greedy(kb, "suitor", partitions=partitions)
        _assert_greedy(star, "suitor", partitions=partitions)


def test_to_device_pins_large_arrays_for_the_copy():
    import cupy as cp

    from mgmatch._array import PIN_MIN_BYTES, to_device

    def locked(a):
        return cp.cuda.runtime.pointerGetAttributes(a.ctypes.data).type == cp.cuda.runtime.memoryTypeHost

    a = np.random.default_rng(0).random(PIN_MIN_BYTES // 8 + 12345)
    np.testing.assert_array_equal(to_device(a).get(), a)
    assert not locked(a)  # locked for the copy only
    np.testing.assert_array_equal(to_device(a, keep_pinned=True).get(), a)
    assert locked(a)  # kept for the next copy, which finds it locked
    np.testing.assert_array_equal(to_device(a, keep_pinned=True).get(), a)
    small = np.arange(10.0)
    np.testing.assert_array_equal(to_device(small, keep_pinned=True).get(), small)
    assert not locked(small)
    view = a[::2]  # not contiguous: a locked contiguous copy is made and released
    np.testing.assert_array_equal(to_device(view).get(), view)


@pytest.mark.parametrize("vertices_per_warp", [1, 32])
def test_vertices_per_warp_does_not_change_the_result(vertices_per_warp):
    g = generators.kron(11, edge_factor=8, seed=7)
    with matching_config(vertices_per_warp=vertices_per_warp, threads_per_block=64):
        _assert_greedy(g, "suitor")


@pytest.mark.parametrize("partitions", [2, 5])
def test_many_rounds_across_partitions(partitions):
    # rgg in the order drawn: most entries cross between partitions, so the runs take many
    # rounds and every round's inbox meets heaps and keys that the earlier rounds left (the GPU
    # programs keep their keys between steps); per-vertex b with zeros
    g = generators.rgg(12, seed=3)
    b = np.random.default_rng(1).integers(0, 4, size=g.n)
    eu, ev, _ = verify.greedy_b_matching(g, b)
    r = mgmatch.b_suitor(g, b, partitions=partitions, device="gpu")
    assert r.rounds.rounds > 3
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)
    r = _assert_greedy(g, "suitor", partitions=partitions)
    assert r.rounds.rounds > 3


@pytest.mark.parametrize("max_b_per_scan", [16, 3])
def test_large_b_rescans(max_b_per_scan):
    # b above the per-scan buffer: vertices propose in several scans
    g = generators.kron(10, edge_factor=32, seed=3)
    eu, ev, _ = verify.greedy_b_matching(g, 40)
    with matching_config(max_b_per_scan=max_b_per_scan):
        r = mgmatch.b_suitor(g, 40, partitions=2, device="gpu")
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)


def test_memory_guard_raises_resource_error(monkeypatch):
    from mgmatch.algorithms import matching as alg

    g = generators.kron(8, seed=1)
    assert alg.gpu_memory_estimate(g, "suitor") > g.nnz * 12
    monkeypatch.setattr(alg, "gpu_memory_estimate", lambda *args: 2**60)  # an exabyte: never fits
    with pytest.raises(mgmatch.ResourceError, match="GiB of GPU memory"):
        mgmatch.suitor(g, device="gpu")


@pytest.mark.parametrize("receivers", [[1], [0, 2, 3], [0, 1, 2, 3]])
def test_device_split_matches_host_split(receivers):
    # the engine groups a GPU outbox by receiver with one read back; the groups and the order
    # within each must be the host's
    import cupy as cp

    from mgmatch.engine.program import Messages

    rng = np.random.default_rng(5)
    bounds = np.array([0, 10, 20, 30, 40], dtype=np.int64)
    k = 1000
    dst = rng.choice(np.concatenate([np.arange(bounds[p], bounds[p + 1]) for p in receivers]), size=k)
    ints = np.stack([rng.integers(0, 3, k), dst, rng.integers(0, 40, k), np.arange(k)], axis=1).astype(np.int64)
    w = rng.random(k)
    host = Messages(ints, w).split(bounds)
    device = Messages(cp.asarray(ints), cp.asarray(w)).split(bounds)
    assert sorted(device) == sorted(host) == receivers
    for p in receivers:
        np.testing.assert_array_equal(device[p].ints.get(), host[p].ints)
        np.testing.assert_array_equal(device[p].w.get(), host[p].w)


def test_outbox_grows_and_keeps_what_it_holds():
    import cupy as cp

    from mgmatch.gpu.matching import _Outbox

    out = _Outbox(4)
    out.ints[:] = cp.arange(16).reshape(4, 4)
    out.w[:] = cp.arange(4) / 2
    out.count[0] = 3
    out.reserve(3, 1000)  # room enough: the same buffers
    assert out.cap == 4
    out.reserve(5, 1000)
    assert out.cap == 8  # at least doubled
    ints, w = out.result()
    np.testing.assert_array_equal(ints.get(), np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(w.get(), [0.0, 0.5, 1.0])
    out.reserve(100, 12)
    assert out.cap == 12 and out.result()[0].shape == (3, 4)  # never past the bound
    out.count[0] = 13  # a count past the room (a broken bound) is not hidden by a growth
    with pytest.raises(RuntimeError, match="outbox overflow"):
        out.reserve(20, 30)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
def test_neighbour_slots_match_the_host_table(idx_dtype):
    # owned neighbours at v - lo, ghosts after the owned ones in sorted order, in 32 bits
    import cupy as cp

    from mgmatch.cpu.graph_build import ghost_lookup, ghost_slots
    from mgmatch.gpu.matching import neighbour_slots

    rng = np.random.default_rng(8)
    n, lo, hi = 5000, 1200, 3100
    indices = rng.integers(0, n, 40000).astype(idx_dtype)
    ghosts = np.unique(indices[(indices < lo) | (indices >= hi)]).astype(np.int64)
    expect = ghost_slots(indices, lo, hi, ghosts, n, ghost_lookup(lo, hi, ghosts, n))
    got = neighbour_slots(cp.asarray(indices), lo, hi, ghosts)
    assert got.dtype == cp.int32
    np.testing.assert_array_equal(got.get(), expect)


def test_tunables_reach_the_launches(monkeypatch):
    # the values in force when a run starts are the ones its launches use
    from mgmatch._kernels import compute_capability
    from mgmatch.algorithms.matching import _Suitor
    from mgmatch.gpu import matching as gm

    seen = []
    real = gm._strongest_free
    monkeypatch.setattr(gm, "_strongest_free", lambda *a: (seen.append(a[-1]), real(*a))[1])
    g = generators.kron(8, seed=1)
    with matching_config(handshake_variant="scan"):
        _assert_greedy(g, "handshake", partitions=2)
    assert seen and set(seen) == {"scan"}
    part = g.to("gpu").partition(1)[0]
    with matching_config(wide_keys=False):
        assert _Suitor().init(part).key is None  # 64-bit keys: built in each step
    assert (_Suitor().init(part).key is not None) == (compute_capability() >= 90)
