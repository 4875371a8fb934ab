"""Louvain over several partitions (in-process): the one-partition labels, level for level, on
every graph; repeat identity; partitions that own nothing, only isolated vertices, or a share
of a hub's leaves; the summary's per-level exchange figures."""

from __future__ import annotations

import importlib.util
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.io

from mgmatch import generators
from mgmatch.algorithms.louvain import LouvainConfig, louvain, modularity
from mgmatch.graph import Graph

DISTRIBUTED = LouvainConfig(gather_edges=0)  # every level across the partitions, none gathered


def _read(data_dir, name: str) -> Graph:
    if name == "football":
        return Graph.from_networkx(nx.read_gml(data_dir / "football.gml", label="id"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return Graph.from_scipy(scipy.io.mmread(data_dir / f"{name}.mtx"))


def _graph(data_dir, name: str) -> Graph:
    if name == "karate_weighted":
        return Graph.from_networkx(nx.karate_club_graph())
    if name == "4elt":
        from mgmatch.io import read_graph

        return read_graph(data_dir / "4elt.graph")
    if name.startswith(("kron", "rgg", "delaunay")):
        kind, k = name.split("-")
        return getattr(generators, kind)(int(k), seed=1)
    return _read(data_dir, name)


def _check_levels(g: Graph, res):
    assert len(res.levels) >= 1 and len(res.levels) == len(res.modularity)
    prev = -np.inf
    for lv, q in zip(res.levels, res.modularity):
        assert lv.shape == (g.n,) and lv.dtype == np.int64
        if g.n:
            assert lv.min() == 0 and np.unique(lv).size == int(lv.max()) + 1
        assert q == pytest.approx(modularity(g, lv), abs=1e-9)
        assert q >= prev - 1e-12
        prev = q


def _assert_same_levels(a, b):
    assert len(a.levels) == len(b.levels)
    for x, y in zip(a.levels, b.levels):
        np.testing.assert_array_equal(x, y)
    assert a.modularity == b.modularity


GRAPHS = ["karate", "karate_weighted", "dolphins", "polbooks", "football", "netscience", "4elt", "kron-11",
          "rgg-12", "delaunay-12"]


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("config", [DISTRIBUTED, LouvainConfig()], ids=["distributed", "gathered"])
def test_partitions_take_the_one_partition_decisions(device, data_dir, name, config):
    # the same batches, exact integer totals and the all-reduced modularity (exact sums, so
    # rounded alike): every partition count decides as one partition does, hence the same
    # labels on every level, and the bound (at least one partition's Q - 0.01) follows
    g = _graph(data_dir, name)
    one = louvain(g, device=device, config=config)
    for parts in (2, 4, 8):
        res = louvain(g, device=device, partitions=parts, config=config)
        _check_levels(g, res)
        assert res.modularity[-1] >= one.modularity[-1] - 0.01
        _assert_same_levels(res, one)


@pytest.mark.parametrize(("name", "entries"), [("karate_weighted", 1), ("polbooks", 3), ("kron-11", 700),
                                              ("delaunay-12", 2000)])
def test_aggregation_in_slices_changes_nothing(device, data_dir, name, entries):
    # a level's boundary, its coarse entries and the moved rows a few entries a round: the
    # coarse graph, and so every level, is the one of the whole level at once
    g = _graph(data_dir, name)
    one = louvain(g, device=device)
    sliced = LouvainConfig(gather_edges=0, aggregate_entries=entries)
    for parts in (2, 3):
        res = louvain(g, device=device, partitions=parts, config=sliced)
        _check_levels(g, res)
        _assert_same_levels(res, one)
    whole = louvain(g, device=device, partitions=3, config=DISTRIBUTED)
    assert res.timings["rounds"] > whole.timings["rounds"]  # the slices took rounds of their own


@pytest.mark.parametrize("size", [10**9, 500])
def test_coarse_slices_hashed_and_sorted_agree(device, size):
    # a partition's slice of rows mapped to coarse entries by the twin's aggregation (the CPU's
    # way) and by sorting the entries' keys (the GPU's): the same keys and weights, but for the
    # self-loops of zero weight that only the sort lists
    import types

    from mgmatch._array import to_numpy
    from mgmatch.algorithms import louvain_program as LP

    xp = np if device == "cpu" else pytest.importorskip("cupy")
    g = generators.kron(10, seed=4)
    n = g.n
    rng = np.random.default_rng(3)
    lo, hi = n // 3, n
    indptr = (g.indptr[lo : hi + 1] - g.indptr[lo]).astype(np.int64)
    e_lo, e_hi = int(g.indptr[lo]), int(g.indptr[hi])
    comm = rng.integers(0, n // 4, n).astype(np.int32) * 3  # some communities empty, ids up to n
    comm[rng.random(n) < 0.2] = comm[0]  # and one large: its members' entries merge
    below = np.concatenate([[0], np.cumsum(np.bincount(comm, minlength=n) > 0)])
    nid = below[1:] - 1
    state = types.SimpleNamespace(
        xp=xp, twin=LP._twin(device), config=LouvainConfig(), n_new=int(below[-1]), n_level=n,
        bounds=np.asarray([0, lo, hi]), index=1, comm=xp.asarray(comm), nid_g=xp.asarray(nid),
        src=xp.asarray(nid[comm[lo:hi]]),
        graph=LP._LevelGraph(indptr=xp.asarray(indptr), indices=xp.asarray(g.indices[e_lo:e_hi].astype(np.int32)),
                             wfix=xp.asarray(rng.integers(1, 1000, e_hi - e_lo)),
                             loop_fix=xp.asarray(rng.integers(0, 3, hi - lo) * (rng.random(hi - lo) < 0.5))))
    cuts = LP._row_slices(state.graph.indptr, size)
    assert len(cuts) == 1 if size > g.nnz else len(cuts) > 3
    for cut in cuts:
        k_sort, w_sort = (to_numpy(x) for x in LP._coarse_slice_sorted(state, *cut))
        k_hash, w_hash = (to_numpy(x) for x in LP._coarse_slice_hashed(state, *cut))
        keep = w_sort != 0
        assert (w_sort[~keep] == 0).all() and (k_sort[~keep] // state.n_new == k_sort[~keep] % state.n_new).all()
        np.testing.assert_array_equal(k_hash, k_sort[keep])
        np.testing.assert_array_equal(w_hash, w_sort[keep])


def test_cpu_hashes_only_slices_of_at_least_a_level_of_entries(monkeypatch):
    # the twin's aggregation goes over every vertex of the level: a CPU partition hashes a slice
    # only when it holds at least as many entries as the level has vertices, so that small
    # slices (aggregate_entries) keep the aggregation's time and memory in proportion to them
    from mgmatch.algorithms import louvain_program as LP

    calls = []
    real_hashed, real_sorted = LP._coarse_slice_hashed, LP._coarse_slice_sorted
    monkeypatch.setattr(LP, "_coarse_slice_hashed", lambda state, *cut: calls.append(
        ("hashed", cut[3] - cut[2], state.n_level)) or real_hashed(state, *cut))
    monkeypatch.setattr(LP, "_coarse_slice_sorted", lambda state, *cut: calls.append(
        ("sorted", cut[3] - cut[2], state.n_level)) or real_sorted(state, *cut))
    g = generators.kron(10, seed=4)
    one = louvain(g, device="cpu")
    for config in (LouvainConfig(gather_edges=0, aggregate_entries=50), DISTRIBUTED):
        calls.clear()
        _assert_same_levels(louvain(g, device="cpu", partitions=2, config=config), one)
        assert all((how == "hashed") == (entries >= n) for how, entries, n in calls)
        level0 = [how for how, _, n in calls if n == g.n]
        assert level0 == (["sorted"] * len(level0) if config.aggregate_entries == 50 else ["hashed", "hashed"])
        assert len(level0) > (10 if config.aggregate_entries == 50 else 1)


@pytest.mark.parametrize("name", ["kron-13", "rgg-14", "delaunay-14"])
def test_partitions_on_larger_generated_graphs(device, data_dir, name):
    # several levels across the partitions, hubs in the last bucket (kron), long chains of
    # small communities (rgg, delaunay)
    g = _graph(data_dir, name)
    one = louvain(g, device=device)
    assert len(one.levels) >= 2
    for parts in (2, 4, 8):
        res = louvain(g, device=device, partitions=parts, config=DISTRIBUTED)
        assert res.modularity[-1] >= one.modularity[-1] - 0.01
        _assert_same_levels(res, one)


def test_partitions_repeat(device, data_dir):
    g = generators.kron(11, seed=2)
    for parts in (3, 8):
        a = louvain(g, device=device, partitions=parts, config=DISTRIBUTED)
        b = louvain(g, device=device, partitions=parts, config=DISTRIBUTED)
        _assert_same_levels(a, b)


def test_empty_partitions(device, data_dir):
    # explicit bounds with empty ranges: partitions that own nothing take part in every round
    g = _read(data_dir, "polbooks")
    one = louvain(g, device=device)
    n = g.n
    for bounds in ([0, 0, 40, 40, n], [0, n, n, n], [0, 0, 0, n], [0, 10, 10, 60, 60, n]):
        res = louvain(g, device=device, partitions=bounds, config=DISTRIBUTED)
        _check_levels(g, res)
        _assert_same_levels(res, one)


def test_partition_of_isolated_vertices(device):
    # two planted communities on vertices 0..79, then 40 isolated vertices in a partition of their own
    G = nx.planted_partition_graph(2, 40, 0.4, 0.02, seed=5)
    G.add_nodes_from(range(80, 120))
    g = Graph.from_networkx(G)
    one = louvain(g, device=device)
    for bounds in ([0, 40, 80, 120], [0, 80, 100, 120]):
        res = louvain(g, device=device, partitions=bounds, config=DISTRIBUTED)
        _check_levels(g, res)
        _assert_same_levels(res, one)
        assert len(set(res.communities[80:].tolist())) == 40  # each isolated vertex alone


def test_star_whose_leaves_sit_in_every_partition(device):
    leaves = 2000
    g = Graph.from_edges(np.zeros(leaves, dtype=np.int64), np.arange(1, leaves + 1), n=leaves + 1)
    one = louvain(g, device=device)
    for parts in (2, 8):
        res = louvain(g, device=device, partitions=parts, config=DISTRIBUTED)
        _assert_same_levels(res, one)
        assert res.n_communities == 1 and res.modularity[-1] == pytest.approx(0.0, abs=1e-9)


def test_hubs_and_communities_across_partitions(device):
    # planted communities, plus two hubs of degree > 319 joined to everything: the last
    # bucket's global order (largest degree first) spans the partitions
    G = nx.planted_partition_graph(10, 50, 0.3, 0.01, seed=11)
    n = G.number_of_nodes()
    for hub in (n, n + 1):
        G.add_edges_from((hub, v) for v in range(0, n, 1))
    g = Graph.from_networkx(G)
    one = louvain(g, device=device)
    for parts in (2, 5):
        _assert_same_levels(louvain(g, device=device, partitions=parts, config=DISTRIBUTED), one)


def test_weighted_karate_reaches_the_peers():
    # NetworkX, igraph and NetworKit give 0.4449 on Zachary's club with its weights (the best
    # partition known for it); so must every partition count
    G = nx.karate_club_graph()
    g = Graph.from_networkx(G)
    best = max(nx.community.modularity(G, nx.community.louvain_communities(G, seed=s)) for s in range(6))
    for parts in (1, 2, 4):
        res = louvain(g, device="cpu", partitions=parts)
        q = res.modularity[-1]
        labels = {}
        for v, c in enumerate(res.communities.tolist()):
            labels.setdefault(c, set()).add(v)
        assert q == pytest.approx(nx.community.modularity(G, list(labels.values())), abs=1e-9)
        assert q >= best - 1e-6
        assert q == pytest.approx(0.4449, abs=5e-5)


def test_progress_is_the_same_for_every_partition_count(data_dir):
    g = _read(data_dir, "netscience")
    calls = {}
    for parts, cfg in ((1, LouvainConfig()), (4, DISTRIBUTED), (4, LouvainConfig())):
        seen = []
        louvain(g, device="cpu", partitions=parts, config=cfg, progress=lambda *a, s=seen: s.append(a))
        calls[(parts, cfg.gather_edges)] = seen
    first = calls[(1, LouvainConfig().gather_edges)]
    assert len(first) > 3
    for seen in calls.values():
        assert seen == first


def test_summary_reports_rounds_messages_and_times(data_dir):
    import json

    g = _read(data_dir, "football")
    res = louvain(g, device="cpu", partitions=4, config=DISTRIBUTED)
    s = json.loads(json.dumps(res.summary()))
    assert len(s["levels"]) == len(res.levels)
    for lv, rec in zip(s["levels"], res.timings["levels"]):
        assert lv["sweeps"] == rec["iterations"] >= 1
        assert lv["messages"] > 0  # strengths, moves and coarse edges between partitions
        assert set(lv["time_s"]) == {"moves", "exchange", "aggregation"}
        assert all(t >= 0 for t in lv["time_s"].values())
    assert res.timings["partitions"] == 4
    assert sum(rec["rounds"] for rec in res.timings["levels"]) <= res.timings["rounds"]
    one = louvain(g, device="cpu").summary()
    assert all(lv["messages"] == 0 for lv in one["levels"])  # one partition sends nothing


def test_fork_leaves_the_state_it_copies(data_dir):
    # the per-round task mode steps a copy of each state; the copy must not share what a step
    # changes, and stepping copies all the way gives the same result
    from mgmatch.algorithms import louvain_program as LP
    from mgmatch.engine import run_local

    class Forking(LP.LouvainProgram):
        def step(self, state, inbox):
            new = self.fork(state)
            before = {k: getattr(state, k).copy() for k in ("comm", "afix", "csize")
                      if getattr(state, k) is not None}
            out = super().step(new, inbox)
            for k, v in before.items():
                np.testing.assert_array_equal(getattr(state, k), v)
            state.__dict__.update(new.__dict__)
            return out

    g = _read(data_dir, "dolphins")
    params = louvain(g, device="cpu").params
    want = louvain(g, device="cpu", partitions=3, config=DISTRIBUTED)
    prog = Forking(params, DISTRIBUTED)
    pieces, log = run_local(prog, g.partition(3))
    from mgmatch.engine.execute import RunInfo

    got = prog.assemble(g, pieces, RunInfo(log=log, device="cpu", n_parts=3))
    _assert_same_levels(got, want)


def test_partitions_release_their_input_after_the_first_aggregation(data_dir):
    # the first level's graph shares the input's indices; once the coarse entries are merged
    # neither is needed, and a device copy of the input made for the run can then be freed
    from mgmatch.algorithms import louvain_program as LP
    from mgmatch.engine import run_local

    held = []

    class Spy(LP.LouvainProgram):
        def finish(self, state):
            held.append((state.level, state.part))
            return super().finish(state)

    g = _read(data_dir, "football")
    params = louvain(g, device="cpu").params
    pieces, log = run_local(Spy(params, DISTRIBUTED), g.partition(3))
    assert len(held) == 3 and all(level >= 1 and part is None for level, part in held)
    from mgmatch.engine.execute import RunInfo

    res = Spy(params, DISTRIBUTED).assemble(g, pieces, RunInfo(log=log, device="cpu", n_parts=3))
    _assert_same_levels(res, louvain(g, device="cpu"))


@pytest.mark.skipif(importlib.util.find_spec("mgmatch.engine.cluster_runner") is None,
                    reason="the engine's cluster runner is not in this tree")
@pytest.mark.parametrize("exchange", ["direct", "tasks"])
def test_on_a_cluster_as_in_process(dask_client, data_dir, exchange):
    # the same program on a Dask cluster's workers (one partition per worker, then 3), in the
    # direct exchange and the per-round task mode: the in-process labels
    from mgmatch.engine import config_context

    g = _read(data_dir, "football")
    one = louvain(g, device="cpu")
    for parts in (None, 3):
        with config_context(exchange=exchange):
            res = louvain(g, device="cpu", client=dask_client, partitions=parts, config=DISTRIBUTED)
        _check_levels(g, res)
        _assert_same_levels(res, one)


@pytest.mark.parametrize("seed", range(8))
def test_random_graphs_and_bounds(seed):
    # random multigraphs (weighted or not, sometimes with hubs), resolutions, batch counts,
    # gather thresholds and partition bounds (empty ranges included): the one-partition labels
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    m = int(rng.integers(n, n * 6))
    u, v = rng.integers(0, n, m), rng.integers(0, n, m)
    if seed % 3 == 0:  # two hubs joined to everything
        h = rng.integers(0, n, 2)
        u, v = np.concatenate([u, np.repeat(h, n)]), np.concatenate([v, np.tile(np.arange(n), 2)])
    weights = rng.uniform(1e-3, 10.0, u.shape[0]) if seed % 2 else None
    g = Graph.from_edges(u, v, weights, n=n) if weights is not None else Graph.from_edges(u, v, n=n)
    cfg = LouvainConfig(gather_edges=[0, 50, 1 << 18][seed % 3], move_slices=1 + seed % 3,
                        aggregate_entries=[1 << 25, 5, 97][seed // 3 % 3])
    gamma = [0.5, 1.0, 2.0][seed % 3]
    one = louvain(g, gamma, device="cpu", config=cfg)
    cuts = np.sort(rng.integers(0, n + 1, 4)).tolist()
    for parts in (int(rng.integers(2, 9)), [0, *cuts, n]):
        _assert_same_levels(louvain(g, gamma, device="cpu", partitions=parts, config=cfg), one)


@pytest.mark.gpu
def test_partitions_never_take_the_fused_kernel(data_dir, monkeypatch):
    # the fused single-GPU path sits behind the one-partition hook only
    from mgmatch.gpu import louvain as gl

    one = louvain(_read(data_dir, "netscience"), device="gpu", config=LouvainConfig(fused_max_edges=0))

    def refuse(*args, **kwargs):
        raise AssertionError("a run over several partitions called the fused kernel")

    monkeypatch.setattr(gl, "run_fused", refuse)
    res = louvain(_read(data_dir, "netscience"), device="gpu", partitions=3, config=DISTRIBUTED)
    _assert_same_levels(res, one)
    assert res.device == "gpu"


@pytest.mark.parametrize("size", [1, 7, 50, 10_000])
@pytest.mark.parametrize("unique", [False, True])
def test_merge_keys_in_key_ranges(size, unique):
    # sorted pieces (repeated keys within and across pieces unless unique), merged a key range at
    # a time: the same keys and sums as one sort of everything
    from mgmatch.algorithms.louvain_program import _merge_keys

    rng = np.random.default_rng(size)
    pool = rng.choice(10**6, 900, replace=False)
    keys, weights = [], []
    for start in range(0, 900, 150) if unique else range(6):
        k = np.sort(pool[start : start + 150]) if unique else np.sort(rng.choice(pool[:300], int(rng.integers(0, 200))))
        keys.append(k.astype(np.int64))
        weights.append(rng.integers(1, 1000, k.shape[0]).astype(np.int64))
    all_k, all_w = np.concatenate(keys), np.concatenate(weights)
    want_k, inverse = np.unique(all_k, return_inverse=True)
    want_w = np.bincount(inverse, weights=all_w).astype(np.int64)
    k, w = _merge_keys(keys, weights, np, size, unique=unique)
    assert keys == [] and weights == []
    np.testing.assert_array_equal(k, want_k)
    np.testing.assert_array_equal(w, want_w)


def test_out_of_memory_in_a_sort_is_the_memory_error():
    from mgmatch.algorithms.louvain_program import _reraise_oom
    from mgmatch.errors import ResourceError

    with pytest.raises(ResourceError, match="ran out of memory running louvain on a graph with 5 vertices"):
        _reraise_oom(MemoryError("std::bad_alloc"), 5, 8)
    assert _reraise_oom(MemoryError("host"), 5, 8) is None  # not the GPU's: raised as it is
    assert _reraise_oom(ValueError("bad_alloc"), 5, 8) is None


def test_every_runner_names_a_sort_out_of_gpu_memory():
    # the engine's in-process and cluster runners and the bipartite wrapper share the one test
    # of a GPU out-of-memory error, Thrust's from a sort among them
    from mgmatch.errors import out_of_device_memory

    OutOfMemoryError = type("OutOfMemoryError", (Exception,), {})
    assert out_of_device_memory(OutOfMemoryError("Out of memory allocating 1,024 bytes"))
    assert out_of_device_memory(MemoryError("std::bad_alloc: cudaErrorMemoryAllocation: out of memory"))
    assert out_of_device_memory(RuntimeError("cudaErrorMemoryAllocation: out of memory"))
    assert not out_of_device_memory(MemoryError("Unable to allocate 8.00 GiB for an array"))
    assert not out_of_device_memory(ValueError("bad_alloc"))


def test_move_rows_keep_the_community_totals(device):
    # every partition applies every batch's MOVE rows (vertices that stay included): C, the sizes
    # and a_c must equal those recomputed from the final C, in either twin, from strided rows too
    from mgmatch.algorithms.louvain_program import _twin
    from mgmatch.engine.program import Messages
    from mgmatch._array import to_numpy

    xp = np if device == "cpu" else pytest.importorskip("cupy")
    twin = _twin(device)
    rng = np.random.default_rng(5)
    n = 500
    kfix = rng.integers(1, 1 << 40, n, dtype=np.int64)
    comm, csize, afix = np.arange(n, dtype=np.int32), np.ones(n, dtype=np.int32), kfix.copy()
    d_comm, d_csize, d_afix, d_k = (xp.array(a, copy=True) for a in (comm, csize, afix, kfix))
    # (no edges: the totals alone; test_move_rows_count_the_change_of_the_internal_weight counts)
    graph = (xp.zeros(n + 1, dtype=xp.int64), xp.zeros(0, dtype=xp.int32), xp.zeros(0, dtype=xp.int64), 0, n)
    ws = twin.make_move_workspace(n, 0, [], slices=[], batches=[])
    for batch in range(6):
        verts = rng.choice(n, size=120, replace=False)
        new = np.where(rng.random(120) < 0.5, comm[verts], rng.integers(0, n, 120)).astype(np.int64)
        comm[verts] = new
        rows = np.zeros((120, 4), dtype=np.int64)
        rows[:, 1], rows[:, 2] = verts, new
        msg = Messages(xp.asarray(rows), xp.zeros(120))
        if batch % 2:
            msg = Messages.from_words(msg.to_words())  # the rows as a transport delivers them
        twin.apply_move_rows(msg.ints, d_comm, d_csize, d_afix, d_k, tune=LouvainConfig(), graph=graph, workspace=ws)
    np.testing.assert_array_equal(to_numpy(d_comm), comm)
    np.testing.assert_array_equal(to_numpy(d_csize), np.bincount(comm, minlength=n))
    np.testing.assert_array_equal(to_numpy(d_afix), [int(kfix[comm == c].sum()) for c in range(n)])


def test_bench_rows_compare_the_partitions_labels_with_one():
    # the benchmark's partitioned rows say whether the labels equal the one-partition labels,
    # which they must (a modularity within a bound would let a wrong decision pass)
    from mgmatch.bench import louvain as bench

    rows = bench.run(graphs=["kron:k=9,seed=1"], device="cpu", repeats=1, partitions=[2, 3])
    parted = [r for r in rows if r.get("partitions")]
    assert [r["partitions"] for r in parted] == [2, 3]
    assert all(r["same_labels_as_one"] and r["modularity_diff_vs_one"] == 0.0 for r in parted)


def test_move_rows_count_the_change_of_the_internal_weight(device, internal_weight):
    # each twin counts each partition's share of a batch's change of the internal weight from
    # its own movers' rows; over the partitions the shares add up to the change itself (the GPU
    # twin's shares are device scalars, the CPU twin's ints)
    from mgmatch._array import to_numpy
    from mgmatch.algorithms.louvain_program import _twin
    from mgmatch.cpu import louvain as CL
    from mgmatch.engine.program import Messages

    xp = np if device == "cpu" else pytest.importorskip("cupy")
    tw = _twin(device)
    g = generators.kron(9, seed=3)
    n = g.n
    indptr, indices = g.indptr.astype(np.int64), g.indices.astype(np.int32)
    wfix = np.rint(g.weights * 1000).astype(np.int64)
    loops = np.zeros(n, dtype=np.int64)
    kfix = CL.strengths(indptr, wfix, loops)
    d_indptr, d_indices, d_wfix, d_kfix = (xp.asarray(a) for a in (indptr, indices, wfix, kfix))
    rng = np.random.default_rng(9)
    cuts = [0, n // 3, n // 2, n]
    max_degree = int(np.diff(indptr).max())
    states = [[xp.arange(n, dtype=xp.int32), xp.ones(n, dtype=xp.int32), d_kfix.copy(),
               tw.make_move_workspace(n, max_degree, [], slices=[], batches=[])] for _ in cuts[1:]]
    for batch in range(8):
        comm = to_numpy(states[0][0])
        before = internal_weight(indptr, indices, wfix, loops, comm)
        verts = rng.choice(n, size=n // 4, replace=False)
        # a batch: some stay, some join a neighbour's community, some a random one
        nbr = indices[indptr[verts]] if indices.shape[0] else verts
        new = np.where(rng.random(verts.shape[0]) < 0.5, comm[nbr], rng.integers(0, n, verts.shape[0]))
        new = np.where(rng.random(verts.shape[0]) < 0.2, comm[verts], new)
        rows = np.zeros((verts.shape[0], 4), dtype=np.int64)
        rows[:, 1], rows[:, 2] = verts, new
        msg = Messages(xp.asarray(rows), xp.zeros(rows.shape[0]))
        if batch % 2:
            msg = Messages.from_words(msg.to_words())  # the rows as a transport delivers them (strided)
        total = 0
        for (c, s, a, ws), lo, hi in zip(states, cuts[:-1], cuts[1:]):
            total += int(tw.apply_move_rows(msg.ints, c, s, a, d_kfix, tune=LouvainConfig(),
                                            graph=(d_indptr, d_indices, d_wfix, lo, hi), workspace=ws))
        for c, s, a, ws in states[1:]:
            np.testing.assert_array_equal(to_numpy(c), to_numpy(states[0][0]))
            np.testing.assert_array_equal(to_numpy(a), to_numpy(states[0][2]))
        assert total == internal_weight(indptr, indices, wfix, loops, to_numpy(states[0][0])) - before
        if device == "gpu":  # the marks of the batch are cleared once it is applied
            assert all(int((ws["pend"] >= 0).sum()) == 0 for *_, ws in states)
