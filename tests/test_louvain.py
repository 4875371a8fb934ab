"""Louvain: invariants first (partitions, modularity, aggregation), then quality against
NetworkX, then edge cases, determinism and CPU/GPU agreement."""

from __future__ import annotations

import dataclasses
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.io

from mgmatch import generators
from mgmatch.algorithms import louvain as L
from mgmatch.algorithms import louvain_program as LP
from mgmatch.algorithms.louvain import LouvainConfig, get_louvain_config, louvain, louvain_config, modularity
from mgmatch.engine import Messages
from mgmatch.errors import InputError, ParameterError, ResourceError
from mgmatch.graph import Graph

KARATE_OPTIMUM = 0.4197896


# ------------------------------------------------------------------------------ helpers
@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu),
                        pytest.param("gpu-phases", marks=pytest.mark.gpu)])
def device(request):
    """``cpu``; ``gpu`` (small graphs take the fused kernel); ``gpu-phases`` (the fused path off,
    so every graph takes the phase-per-kernel driver)."""
    if request.param == "gpu-phases":
        with louvain_config(fused_max_edges=0):
            yield "gpu"
    else:
        yield request.param


def _program(config=None, **params):
    return LP.LouvainProgram(L.validate_louvain_params(**params), config or LouvainConfig())


def _run_steps(program, state):
    """Step one partition owning the whole graph to the end (it sends nothing)."""
    steps = 0
    while not state.done:
        assert program.step(state, Messages.empty()) == {}
        steps += 1
    return steps


def _read(data_dir, name: str) -> Graph:
    if name == "football":
        return Graph.from_networkx(nx.read_gml(data_dir / "football.gml", label="id"))
    path = data_dir / f"{name}.mtx"
    if not path.exists():
        pytest.skip(f"{path.name} is not in tests/data")
    with warnings.catch_warnings():  # newer SciPy warns about mmread's default return type
        warnings.simplefilter("ignore", DeprecationWarning)
        matrix = scipy.io.mmread(path)
    return Graph.from_scipy(matrix)


def _to_nx(g: Graph) -> nx.Graph:
    G = nx.Graph()
    G.add_nodes_from(range(g.n))
    u, v, w = (np.asarray(a) for a in g.to("cpu").edges())
    G.add_weighted_edges_from(zip(u.tolist(), v.tolist(), w.tolist()))
    return G


def _labels_to_sets(labels):
    out: dict = {}
    for v, c in enumerate(np.asarray(labels).tolist()):
        out.setdefault(c, set()).add(v)
    return list(out.values())


def _planted(n_blocks=8, size=40, p_in=0.3, p_out=0.01, seed=0) -> Graph:
    G = nx.planted_partition_graph(n_blocks, size, p_in, p_out, seed=seed)
    return Graph.from_networkx(G)


def _check_levels(g: Graph, res, resolution=1.0):
    assert len(res.levels) >= 1 and len(res.levels) == len(res.modularity)
    prev = -np.inf
    for lv, q in zip(res.levels, res.modularity):
        assert lv.shape == (g.n,) and lv.dtype == np.int64
        if g.n:
            k = int(lv.max()) + 1
            assert lv.min() == 0 and np.unique(lv).size == k  # a partition, labels 0..k-1
        assert q == pytest.approx(modularity(g, lv, resolution), abs=1e-9)
        assert q >= prev - 1e-12  # never decreases level to level
        prev = q
    assert np.array_equal(res.communities, res.levels[-1])
    assert res.n_communities == (int(res.communities.max()) + 1 if g.n else 0)


# --------------------------------------------------------------------------- invariants
@pytest.mark.parametrize("name", ["karate", "dolphins", "football"])
def test_modularity_matches_networkx(data_dir, name):
    g = _read(data_dir, name)
    G = _to_nx(g)
    rng = np.random.default_rng(3)
    for labels in (rng.integers(0, 5, g.n), np.arange(g.n), np.zeros(g.n, dtype=int)):
        for gamma in (1.0, 0.5, 2.0):
            ref = nx.community.modularity(G, _labels_to_sets(labels), resolution=gamma)
            assert modularity(g, labels, gamma) == pytest.approx(ref, abs=1e-12)


def test_levels_are_partitions_and_monotone(device, data_dir):
    for name in ("karate", "polbooks", "football"):
        g = _read(data_dir, name)
        _check_levels(g, louvain(g, device=device))


def test_aggregation_preserves_weight_and_modularity():
    g = _planted(seed=1)
    prog = _program()
    st = prog.init(g.partition(1)[0])
    while st.phase == "move":
        prog.step(st, Messages.empty())
    two_m, q_before, comm = st.two_m_fix, st.q_current, st.comm.copy()
    gr = st.graph
    from mgmatch.cpu import louvain as twin

    indptr, indices, wfix, loop, new_id = twin.aggregate(gr.indptr, gr.indices, gr.wfix, gr.loop_fix, comm)
    assert int(wfix.sum() + loop.sum()) == two_m  # 2m preserved exactly (fixed point)
    assert np.all(indices != np.repeat(np.arange(indptr.size - 1), np.diff(indptr)))  # no self entries
    # the aggregated graph with every vertex alone has the modularity of the induced partition
    agg = LP._LevelGraph(indptr, indices.astype(np.int32), wfix, loop)
    st2 = LP.LouvainState(part=st.part, params=st.params, config=st.config, device="cpu", twin=twin, xp=np,
                          n_parts=1, index=0, graph=agg)
    LP._start_local(st2)
    assert st2.two_m_fix == two_m
    assert st2.q_current == pytest.approx(q_before, abs=1e-12)
    # and symmetric: edge (a, b) has the weight of (b, a)
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    fwd = dict(zip(zip(rows.tolist(), indices.tolist()), wfix.tolist()))
    assert all(fwd[(b, a)] == w for (a, b), w in fwd.items())
    assert np.array_equal(np.sort(new_id[new_id >= 0]), np.arange(indptr.size - 1))


# ------------------------------------------------------------------------------ quality
def _nx_floor(G, seeds=4):
    return min(
        nx.community.modularity(G, nx.community.louvain_communities(G, seed=s)) for s in range(seeds)
    )


@pytest.mark.parametrize("name", ["karate", "dolphins", "polbooks", "football", "netscience"])
def test_quality_real_graphs(device, data_dir, name):
    g = _read(data_dir, name)
    res = louvain(g, device=device)
    q = res.modularity[-1]
    assert q >= _nx_floor(_to_nx(g)) - 0.01
    if name == "karate":
        assert q <= KARATE_OPTIMUM + 1e-9


@pytest.mark.parametrize("seed", [0, 1])
def test_quality_planted_partition(device, seed):
    g = _planted(seed=seed)
    res = louvain(g, device=device)
    _check_levels(g, res)
    assert res.modularity[-1] >= _nx_floor(_to_nx(g)) - 0.01


def test_quality_weighted(device):
    G = nx.planted_partition_graph(6, 30, 0.4, 0.05, seed=7)
    rng = np.random.default_rng(7)
    for a, b in G.edges:
        G[a][b]["weight"] = float(rng.uniform(0.1, 10.0))
    g = Graph.from_networkx(G)
    res = louvain(g, device=device)
    _check_levels(g, res)
    assert res.modularity[-1] >= _nx_floor(_to_nx(g)) - 0.01


# ------------------------------------------------------------------- R-MAT (Kronecker)
@pytest.fixture(scope="module")
def kron14():
    """``kron(14, seed=1)``: 16,384 vertices, about 545,000 edges, heavily skewed degrees."""
    g = generators.kron(14, seed=1)
    return g, _to_nx(g)


def test_quality_kron(kron14):
    # R-MAT graphs are where moving a whole degree bucket at once (the paper's order)
    # overshoots; the interleaved batches (move_slices) must keep us near NetworkX. Its
    # Louvain takes about 11 s per seed here, so two seeds.
    g, G = kron14
    res = louvain(g, device="cpu")
    _check_levels(g, res)
    assert res.modularity[-1] >= _nx_floor(G, seeds=2) - 0.01


def test_move_slices_tunable(kron14):
    g, G = kron14
    default = louvain(g, device="cpu")
    with louvain_config(move_slices=1):  # the paper's order: one batch per bucket
        paper = louvain(g, device="cpu")
    _check_levels(g, paper)
    q = nx.community.modularity(G, _labels_to_sets(paper.communities))
    assert paper.modularity[-1] == pytest.approx(q, abs=1e-9)
    assert not np.array_equal(paper.communities, default.communities)  # the tunable is read
    # deterministic, and on this graph the batches do better than whole buckets
    assert np.array_equal(louvain(g, device="cpu", config=LouvainConfig(move_slices=1)).communities,
                          paper.communities)
    assert default.modularity[-1] > paper.modularity[-1]


@pytest.mark.parametrize("slices", [1, 2, 3, 4])
@pytest.mark.parametrize("slice_min", [0, 64])
def test_move_batches_interleave_buckets(slices, slice_min):
    g = _planted(seed=4)
    st = _program(LouvainConfig(move_slices=slices, move_slice_min=slice_min)).init(g.partition(1)[0])
    batches = st.workspace["batches"]
    assert len(batches) == len(st.buckets) == len(LP.MOVE_BUCKETS) + 1
    assert any(b.shape[0] >= 64 for b in st.buckets) and any(0 < b.shape[0] < 64 for b in st.buckets)
    for bucket, bs in zip(st.buckets, batches):
        s = slices if bucket.shape[0] >= slice_min else 1  # small buckets move whole
        assert len(bs) == min(s, bucket.shape[0])
        for j, b in enumerate(bs):
            assert b.flags.c_contiguous and np.array_equal(b, bucket[j::s])
    for name, bad in (("move_slices", 0), ("move_slice_min", -1), ("gather_edges", 1.5), ("move_slices", True),
                      ("aggregate_entries", 0), ("aggregate_entries", 2.0)):
        with pytest.raises(ParameterError, match=name):
            LouvainConfig(**{name: bad})
        with pytest.raises(ParameterError, match=name):
            with louvain_config(**{name: bad}):
                pass


@pytest.mark.parametrize("bad", [
    {"table_budget_bytes": 0}, {"range_steps": 0}, {"range_steps": 2.0}, {"fused_max_vertices": -1},
    {"fused_cluster": 1}, {"fused_cluster": 17}, {"fused_threads": 128}, {"fused_threads": 320},
    {"fused_threads": 2048}, {"fused_range_steps": 0}, {"fused_solo_edges": -1}, {"fused_solo_threads": 200},
    {"fused_mid_vertices": None}, {"fused_solo_bytes": -16}, {"fused_level_bytes": -1}, {"fused_level_rows": 0},
    {"fused_view_bytes": 1.5}, {"fused_table_slots": -1.0}, {"fused_table_slots": float("nan")},
    {"fused_table_min_slots": -1}, {"fused_hub_bytes": float("inf")}, {"fused_hub_bytes": True},
    {"fused_hub_min_bytes": -1}, {"fused_hub_max_edges": "many"},
])
def test_louvain_config_refuses_bad_gpu_tunables(bad):
    name = next(iter(bad))
    with pytest.raises(ParameterError, match=name):
        LouvainConfig(**bad)
    with pytest.raises(ParameterError, match=name):
        with louvain_config(**bad):
            pass


def test_louvain_config_takes_the_gpu_tunables_at_their_bounds():
    # the smallest cluster and block, None where it means the default rule, 0 where it turns a
    # stage off; the defaults are those of mgmatch.gpu.tunables
    from mgmatch.gpu import tunables as gl

    LouvainConfig(fused_cluster=2, fused_threads=256, fused_solo_threads=None, fused_solo_bytes=0, fused_solo_edges=0,
                  fused_mid_vertices=0, fused_table_slots=0, fused_hub_bytes=0, fused_level_bytes=0)
    LouvainConfig(fused_cluster=16, fused_threads=1024, fused_solo_threads=1024, fused_table_slots=np.float32(0.5))
    default = LouvainConfig()
    assert (default.table_budget_bytes, default.range_steps, default.fused_threads, default.fused_solo_bytes) == (
        gl.GLOBAL_TABLE_BUDGET, gl.RANGE_STEPS, gl.FUSED_THREADS, gl.FUSED_SOLO_BYTES)


def test_a_program_carries_the_tunables_in_force_when_made(monkeypatch):
    # louvain() builds its program with the configuration in force; the workers of a cluster get
    # the program pickled, so the GPU tunables travel with it, and every twin call that reads
    # tunables is handed the run's configuration (the GPU twin uses it, the CPU twin ignores it)
    import pickle

    from mgmatch import engine
    from mgmatch.cpu import louvain as cl

    made, seen = [], []
    real_execute, real_strengths = engine.execute, cl.strengths
    monkeypatch.setattr(engine, "execute", lambda program, *args, **kwargs: (made.append(program),
                                                                             real_execute(program, *args, **kwargs))[1])
    monkeypatch.setattr(cl, "strengths", lambda *args, tune: (seen.append(tune), real_strengths(*args, tune=tune))[1])
    changes = {"range_steps": 4, "table_budget_bytes": 1 << 20, "fused_cluster": 8, "fused_threads": 512,
               "fused_solo_threads": None, "fused_solo_bytes": 0, "fused_table_slots": 0.5, "fused_hub_max_edges": 7}
    with louvain_config(**changes):
        louvain(_planted(seed=0), device="cpu")
    assert get_louvain_config() == LouvainConfig()
    (program,) = made
    config = pickle.loads(pickle.dumps(program)).config
    assert config == program.config and {k: getattr(config, k) for k in changes} == changes
    assert seen and all(t == config for t in seen)


def test_threshold_defaults():
    # large levels: 2.5e-3 of the modularity reached, at least 1e-6; small ones: 1e-6
    p = L.validate_louvain_params()
    assert (p["threshold"], p["t_bin"], p["t_rel"], p["t_final"]) == (None, 1e-6, 2.5e-3, 1e-6)
    assert louvain(_planted(seed=0), device="cpu").params["t_rel"] == 2.5e-3
    # a threshold given is absolute on every level, as in NetworkX and cuGraph
    p = L.validate_louvain_params(threshold=1e-4)
    assert (p["t_bin"], p["t_rel"], p["t_final"]) == (1e-4, 0.0, 1e-4)
    # the rule a state applies: relative above bin_vertices, with its floor; t_final below
    g = _planted(seed=0)
    for bin_vertices, q, want in ((0, 0.4, 1e-3), (0, 1e-5, 1e-6), (0, -0.2, 1e-6), (g.n, 0.4, 1e-6)):
        state = _program(LouvainConfig(bin_vertices=bin_vertices)).init(g.partition(1)[0])
        assert state.threshold(q) == pytest.approx(want, rel=1e-12), (bin_vertices, q)
    state = _program(LouvainConfig(bin_vertices=0), threshold=1e-4).init(g.partition(1)[0])
    assert state.threshold(0.9) == 1e-4


def test_relative_threshold_ends_the_sweeps(device):
    """With every level counted large (``bin_vertices=0``), a level's sweeps go on while each
    raises modularity by at least 2.5e-3 of the modularity reached, and the first that does not
    is the last: read from the progress of every sweep on the CPU. The GPU twins (the fused
    kernel and the phase driver) and several partitions take the same decisions."""
    g = generators.kron(12, seed=3)
    config = dataclasses.replace(get_louvain_config(), bin_vertices=0)  # (gpu-phases: no fused kernel)
    events = []
    ref = louvain(g, device="cpu", config=config, progress=lambda *e: events.append(e))
    by_level = {}
    for level, sweeps, q in events:
        by_level.setdefault(level, []).append((sweeps, q))
    assert len(ref.levels) >= 2
    for level in range(len(ref.levels)):
        seq = by_level[level]
        q_start = seq[0][1] if level else -np.inf  # (level 0 reports from its first sweep on)
        qs = [q for s, q in seq if s > 0]
        gains = np.diff([q_start, *qs])
        thresholds = [max(1e-6, 2.5e-3 * q) for q in qs]
        assert all(gn >= t for gn, t in zip(gains[:-1], thresholds[:-1])), (level, gains, thresholds)
        assert gains[-1] < thresholds[-1], (level, gains, thresholds)
    assert len(by_level[0]) > 4  # the rule took level 0 through several sweeps
    # the levels: each but the last raised modularity by at least the threshold at its end; the
    # last by less, or the level after it moved nothing
    level_gains = np.diff([-np.inf, *ref.modularity])  # (level 0's start is not reported: it counts)
    for level, gain in enumerate(level_gains[:-1]):
        assert gain >= max(1e-6, 2.5e-3 * ref.modularity[level]), (level, level_gains)
    last = len(ref.levels) - 1
    assert level_gains[-1] < max(1e-6, 2.5e-3 * ref.modularity[-1]) or (
        by_level.get(last + 1) and by_level[last + 1][-1][1] == ref.modularity[-1])
    res = louvain(g, device=device, config=config)
    assert len(res.levels) == len(ref.levels)
    for x, y in zip(res.levels, ref.levels):
        assert np.array_equal(x, y)
    assert np.array_equal(louvain(g, device="cpu", config=config, partitions=3).communities, ref.communities)


# ---------------------------------------------------------------------------- edge cases
def test_empty_graph(device):
    g = Graph.from_edges([], [], n=0)
    res = louvain(g, device=device)
    assert res.communities.shape == (0,) and res.n_communities == 0
    assert res.modularity == [0.0]


def test_no_edges_and_isolated_vertices(device):
    g = Graph.from_edges([], [], n=5)
    res = louvain(g, device=device)
    assert res.communities.tolist() == [0, 1, 2, 3, 4] and res.modularity == [0.0]
    # two triangles and three isolated vertices
    g = Graph.from_edges([0, 1, 2, 5, 6, 7], [1, 2, 0, 6, 7, 5], n=10)
    res = louvain(g, device=device)
    _check_levels(g, res)
    c = res.communities
    assert c[0] == c[1] == c[2] != c[5] == c[6] == c[7]
    assert len({c[3], c[4], c[8], c[9], c[0], c[5]}) == 6


def test_one_clique(device):
    g = Graph.from_networkx(nx.complete_graph(12))
    res = louvain(g, device=device)
    _check_levels(g, res)
    assert res.n_communities == 1 and res.modularity[-1] == pytest.approx(0.0, abs=1e-12)


def test_disconnected_components(device):
    G = nx.disjoint_union_all([nx.complete_graph(6) for _ in range(5)])
    g = Graph.from_networkx(G)
    res = louvain(g, device=device)
    _check_levels(g, res)
    assert res.n_communities == 5
    assert res.modularity[-1] == pytest.approx(nx.community.modularity(G, _labels_to_sets(res.communities)))
    assert res.modularity[-1] == pytest.approx(0.8, abs=1e-12)


def _star(leaves: int) -> Graph:
    return Graph.from_edges(np.zeros(leaves, dtype=np.int64), np.arange(1, leaves + 1), n=leaves + 1)


def test_star_hub(device):
    g = _star(100_000)
    res = louvain(g, device=device)
    assert res.n_communities == 1 and res.modularity[-1] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.slow
def test_star_hub_million(device):
    g = _star(1_000_000)
    res = louvain(g, device=device)
    assert res.n_communities == 1 and res.modularity[-1] == pytest.approx(0.0, abs=1e-9)


def test_hubs_with_communities(device):
    # planted communities plus two hubs of degree > 319 joined to everything
    g = _planted_with_hubs()
    res = louvain(g, device=device)
    _check_levels(g, res)
    assert res.modularity[-1] >= _nx_floor(_to_nx(g), seeds=2) - 0.02


def test_weights_of_very_different_magnitude(device):
    # two cliques joined strongly by tiny-weight edges: the heavy cliques must stay apart
    G = nx.disjoint_union(nx.complete_graph(5), nx.complete_graph(5))
    for a, b in G.edges:
        G[a][b]["weight"] = 1e9
    G.add_edge(0, 5, weight=1e-9)
    G.add_edge(1, 6, weight=1e-9)
    g = Graph.from_networkx(G)
    res = louvain(g, device=device)
    _check_levels(g, res)
    assert res.n_communities == 2
    # and the reverse: light cliques, one heavy bridge pulls its endpoints together
    G = nx.disjoint_union(nx.complete_graph(5), nx.complete_graph(5))
    for a, b in G.edges:
        G[a][b]["weight"] = 1e-6
    G.add_edge(0, 5, weight=1e6)
    g = Graph.from_networkx(G)
    res = louvain(g, device=device)
    _check_levels(g, res)
    assert res.communities[0] == res.communities[5]


def test_resolution(device, data_dir):
    g = _read(data_dir, "football")
    low = louvain(g, 0.3, device=device)
    high = louvain(g, 3.0, device=device)
    _check_levels(g, low, 0.3)
    _check_levels(g, high, 3.0)
    assert low.n_communities < high.n_communities


def test_determinism(device, data_dir):
    g = _read(data_dir, "netscience")
    a, b = louvain(g, device=device), louvain(g, device=device)
    assert len(a.levels) == len(b.levels)
    for x, y in zip(a.levels, b.levels):
        assert np.array_equal(x, y)
    assert a.modularity == b.modularity


@pytest.mark.gpu
def test_cpu_and_gpu_agree(data_dir):
    for g in (_read(data_dir, "polbooks"), _planted(seed=2)):
        c, d = louvain(g, device="cpu"), louvain(g, device="gpu")
        assert d.device == "gpu"
        assert d.modularity[-1] == pytest.approx(c.modularity[-1], abs=1e-9)


@pytest.mark.gpu
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("slices", [2, 4, 1])
def test_cpu_and_gpu_agree_kron(slices, fused):
    # the same batches, moved in the same order from the same integer state: the same labels,
    # from the fused kernel (hubs a block each) and from the phase driver (hubs edge-balanced)
    cfg = LouvainConfig(move_slices=slices, **({} if fused else {"fused_max_edges": 0}))
    g = generators.kron(14, seed=1)
    c, d = louvain(g, device="cpu", config=cfg), louvain(g, device="gpu", config=cfg)
    assert d.device == "gpu" and len(c.levels) == len(d.levels)
    for x, y in zip(c.levels, d.levels):
        assert np.array_equal(x, y)
    assert d.modularity == pytest.approx(c.modularity, abs=1e-9)


@pytest.mark.gpu
def test_gpu_sweep_counts_the_change_of_the_internal_weight(internal_weight):
    # the GPU sweep returns the change of the internal weight (counted by its movers before each
    # batch is applied) as a device scalar: the change the CPU sweep returns for the same
    # decisions, and the difference of the internal weights counted anew; hubs included
    import cupy as cp

    from mgmatch.cpu import louvain as cl
    from mgmatch.gpu import louvain as gl

    cfg = LouvainConfig()
    g = generators.kron(13, seed=4)
    n = g.n
    indptr, indices = g.indptr.astype(np.int64), g.indices.astype(np.int32)
    wfix = np.rint(g.weights * 2**20).astype(np.int64)
    loop = np.zeros(n, dtype=np.int64)
    kfix = cl.strengths(indptr, wfix, loop)
    buckets = cl.degree_buckets(indptr, LP.MOVE_BUCKETS)
    slices = LP._move_slices(cfg, buckets)
    max_degree = int(np.diff(indptr).max())
    assert max_degree > LP.MOVE_BUCKETS[-1]
    host = [np.arange(n, dtype=np.int32), np.ones(n, dtype=np.int32), kfix.copy()]
    dev = [cp.asarray(a) for a in host]
    d_graph = [cp.asarray(a) for a in (indptr, indices, wfix)]
    d_kfix = cp.asarray(kfix)
    ws_c = cl.make_move_workspace(n, max_degree, buckets, slices=slices)
    ws_g = gl.make_move_workspace(n, max_degree, [cp.asarray(b) for b in buckets], slices=slices)
    gm = 1.0 / float(kfix.sum())
    before = 0
    for _ in range(3):
        want = cl.move_sweep(indptr, indices, wfix, kfix, *host, buckets, gm, ws_c)
        got = gl.move_sweep(*d_graph, d_kfix, *dev, [cp.asarray(b) for b in buckets], gm, ws_g, tune=cfg)
        after = internal_weight(indptr, indices, wfix, loop, cp.asnumpy(dev[0]))
        assert got.shape == () and int(got) == want == after - before
        np.testing.assert_array_equal(cp.asnumpy(dev[0]), host[0])
        assert gl.square_sum(dev[2], tune=cfg) == cl.square_sum(host[2])
        before = after
    assert int((ws_g["pend"] >= 0).sum()) == 0


@pytest.mark.gpu
def test_gpu_square_sum_is_exact():
    import cupy as cp

    from mgmatch.gpu import louvain as gl

    rng = np.random.default_rng(12)
    n = 300_001
    a = rng.integers(0, 2**60 // n, n)  # a_c summing below 2**60, as the fixed point keeps them
    a[:5] = [0, 1, 2**30 - 1, 2**30, 2**45 + 2**15 + 1]
    cfg = LouvainConfig()
    assert gl.square_sum(cp.asarray(a), tune=cfg) == sum(int(x) ** 2 for x in a)  # beyond 64 bits
    assert gl.square_sum(cp.asarray(a[:3]), tune=cfg) == 1 + (2**30 - 1) ** 2
    assert gl.square_sum(cp.zeros(0, dtype=cp.int64), tune=cfg) == 0


@pytest.mark.gpu
@pytest.mark.parametrize(("budget", "steps"), [(None, None), (4096, None), (64 * 2**10, 1)])
def test_cpu_and_gpu_agree_edge_balanced(budget, steps, monkeypatch):
    # hubs of degree > 319 and communities of degree > 479 take the edge-balanced kernels; a
    # small table budget cuts them into many chunks (4 KiB: one item per chunk)
    from mgmatch.gpu import louvain as gl

    tunables = {}
    if budget is not None:
        tunables["table_budget_bytes"] = budget
    if steps is not None:
        tunables["range_steps"] = steps
    calls = {"move": 0, "merge": 0}
    for name, key in (("_move_edge_balanced", "move"), ("_merge_plan", "merge")):
        def spy(*args, _f=getattr(gl, name), _k=key):
            calls[_k] += 1
            return _f(*args)
        monkeypatch.setattr(gl, name, spy)
    u, v, _ = generators.kron(15, seed=2).edges()
    u, v = np.asarray(u), np.asarray(v)
    g = Graph.from_edges(u, v, 1.0 + 2.5 * ((u + v) % 7 == 0), n=2**15)  # weighted
    with louvain_config(fused_max_edges=0, **tunables):  # the phase driver's kernels
        c, d = louvain(g, device="cpu"), louvain(g, device="gpu")
    assert calls["move"] > 0 and calls["merge"] > 0
    assert len(c.levels) == len(d.levels) >= 2
    for x, y in zip(c.levels, d.levels):
        assert np.array_equal(x, y)
    assert d.modularity == pytest.approx(c.modularity, abs=1e-9)


def _hub_graph(cliques=600) -> Graph:
    """A 5-clique joined by light edges to ``cliques`` heavy triangles: after the first level the
    clique's community has one neighbour per triangle (degree above 319)."""
    u, v, w = [], [], []
    for a in range(5):
        for b in range(a + 1, 5):
            u.append(a), v.append(b), w.append(1.0)
    for i in range(cliques):
        x = 5 + 3 * i
        u += [x, x, x + 1, x]
        v += [x + 1, x + 2, x + 2, i % 5]
        w += [3.0, 3.0, 3.0, 0.01]
    return Graph.from_edges(np.array(u), np.array(v), np.array(w))


def _fused_graphs(data_dir) -> dict:
    from mgmatch.io import read_graph

    u, v, _ = generators.delaunay(10, seed=3).edges()
    u, v = np.asarray(u), np.asarray(v)
    graphs = {name: _read(data_dir, name) for name in ("karate", "dolphins", "polbooks", "football", "netscience")}
    graphs["4elt"] = read_graph(data_dir / "4elt.graph")
    graphs["planted"] = _planted(seed=3)
    graphs["delaunay"] = generators.delaunay(12, seed=1)
    graphs["weighted"] = Graph.from_edges(u, v, 1.0 + 1000.0 * ((u * 7 + v) % 5 == 0), n=2**10)
    # one weight on every edge, not 1 (level 0 of the cluster kernel then reads it once), and the
    # same but for one edge (which must not be taken for it)
    graphs["uniform"] = Graph.from_edges(u, v, np.full(u.shape[0], 0.375), n=2**10)
    graphs["one heavier"] = Graph.from_edges(u, v, np.where(np.arange(u.shape[0]) == 17, 4.0, 1.0), n=2**10)
    # degrees of about 13, weights of three magnitudes: the cluster kernel sums buckets [5, 8] and
    # [9, 16] two edges a lane, where one lane's two edges and another's meet in one community
    p = nx.planted_partition_graph(32, 64, 0.16, 0.0015, seed=7)
    a, b = np.array(p.edges()).T
    graphs["weighted13"] = Graph.from_edges(a, b, 1.0 + 999.0 * ((a * 3 + b) % 7 == 0) + 0.5 * ((a + b) % 3), n=2048)
    # degrees of about 45 and 100: the buckets [33, 84] and [85, 319], whose lanes hold several
    # edges and fill shared-memory tables (the smaller buckets sum across lanes instead)
    graphs["dense45"] = _planted(10, 50, 0.9, 0.01, seed=5)
    graphs["dense100"] = _planted(6, 120, 0.8, 0.02, seed=6)
    return graphs


def _assert_same(c, d):
    assert len(c.levels) == len(d.levels)
    for x, y in zip(c.levels, d.levels):
        assert np.array_equal(x, y)
    assert d.modularity == pytest.approx(c.modularity, abs=1e-12)
    assert d.n_communities == c.n_communities == (int(c.communities.max()) + 1 if c.communities.size else 0)
    # the rest of the result as well, whichever way it was made (the fused kernel's or finish())
    assert np.array_equal(c.communities, d.communities) and d.communities.dtype == c.communities.dtype == np.int64
    assert all(type(q) is float for q in c.modularity + d.modularity)
    assert {k: v for k, v in c.params.items() if k != "device"} == {k: v for k, v in d.params.items() if k != "device"}
    assert d.timings["total_s"] > 0 and len(d.timings["levels"]) >= len(d.levels)


def _fused_blocks(d) -> list:
    return [lv["blocks"] for lv in d.timings["levels"]]


@pytest.mark.parametrize(("n", "nnz"), [(1, 0), (34, 156), (500, 9000), (1589, 5484), (15606, 91756), (3000, 3000)])
def test_fused_table_cap_bounds_every_partition(n, nnz):
    # the aggregation's tables take ts[min(d_c, n)] slots per community of degree d_c, the degrees
    # summing to at most nnz over at most n communities; the fused kernel's bound covers the
    # worst cases: k communities of one degree d (k = min(n, nnz // d)), the rest of degree 0,
    # and random splits of nnz
    from mgmatch.cpu.louvain import table_sizes
    from mgmatch.gpu import louvain as gl

    ts = table_sizes(max(n, 320)).astype(np.int64)
    cap = gl._fused_table_cap(n, nnz)
    d = np.arange(1, n + 1)
    k = np.minimum(n, nnz // d)
    worst = int(np.max(k * ts[np.minimum(d, n)] + (n - k) * ts[0])) if n else 0
    assert worst <= cap
    rng = np.random.default_rng(n)
    for _ in range(20):
        degrees = np.bincount(rng.integers(0, n, nnz), minlength=n) if n else np.zeros(0, int)
        assert int(ts[np.minimum(degrees, n)].sum()) <= cap
    assert cap <= 1.5 * nnz + 8 * n + 64  # and stays near 1.5 nnz on sparse graphs (4elt: 28 bytes a stored edge)


@pytest.mark.gpu
@pytest.mark.parametrize("slices", [2, 4, 1, 3])
@pytest.mark.parametrize("solo", [None, 0])
def test_fused_equals_cpu(data_dir, slices, solo):
    # one cluster running every phase in one kernel decides as the CPU twin does, move for move;
    # so does one block on the last, small levels (solo None), or with every level kept on the
    # cluster (solo 0)
    from mgmatch.gpu import louvain as gl

    cfg = LouvainConfig(move_slices=slices, fused_solo_bytes=solo)
    cluster = gl._fused_cluster(cfg)
    for name, g in _fused_graphs(data_dir).items():
        for resolution in ((1.0, 0.5, 2.0) if name == "netscience" else (1.0,)):
            c, d = louvain(g, resolution, device="cpu", config=cfg), louvain(g, resolution, device="gpu", config=cfg)
            assert "fused_kernel_s" in d.timings, name
            assert len(d.timings["levels"]) == len(c.timings["levels"]), name
            _assert_same(c, d)
            blocks = _fused_blocks(d)
            if solo == 0:
                assert set(blocks) == {cluster}, name
            else:  # the last level is small enough; once on one block, the run stays there
                assert blocks[-1] == 1 and blocks == sorted(blocks, reverse=True), (name, blocks)
    if solo is None:  # 4elt's first level (15,606 vertices) is the cluster's
        assert _fused_blocks(louvain(_fused_graphs(data_dir)["4elt"], device="gpu"))[0] == cluster


@pytest.mark.gpu
def test_fused_memory_under_48_bytes_a_stored_edge(data_dir, monkeypatch):
    # the fused run's peak device memory with the input's: one level graph, which each
    # aggregation overwrites with the next; tables sized by the communities' outside edges, in
    # the region of the move phase's arrays; the level maps in host memory (47 bytes a stored
    # edge on 4elt; with tables for every partition's worst case and the maps on the device, 67)
    from mgmatch.bench._common import device_bytes, gpu_peak_bytes
    from mgmatch.gpu import louvain as gl

    g = _fused_graphs(data_dir)["4elt"].to("gpu")
    louvain(g, device="gpu")  # the kernels and the cached table sizes outside the measured call
    tries = _spy_fused_tries(gl, monkeypatch)
    peak = gpu_peak_bytes(lambda: louvain(g, device="gpu"), device_bytes(g.indptr, g.indices, g.weights))
    assert tries == [(gl._fused_table_first(g.n, g.nnz, LouvainConfig()), "done")]  # one run, within the first tables
    assert peak["peak_bytes"] / g.nnz < 48


def _spy_fused_tries(gl, monkeypatch) -> list:
    """(table slots, status) of each run of the fused kernels from now on, in order."""
    tries = []
    real = gl._fused_try

    def spy(*args, **kw):
        out = real(*args, **kw)
        tries.append((args[7], out[0]))
        return out

    monkeypatch.setattr(gl, "_fused_try", spy)
    return tries


@pytest.mark.gpu
def test_fused_reruns_with_the_bound_when_tables_overflow(data_dir, monkeypatch):
    # first tables far too small for the first level's communities: the kernel stops at the
    # aggregation, the run goes again with the bound of every partition, and decides as the
    # CPU twin does
    from mgmatch.gpu import louvain as gl

    monkeypatch.setattr(gl, "_fused_table_first", lambda n, nnz, tune: 16)
    graphs = _fused_graphs(data_dir)
    tries = _spy_fused_tries(gl, monkeypatch)
    for name in ("4elt", "dense100", "netscience"):
        g = graphs[name]
        tries.clear()
        c, d = louvain(g, device="cpu"), louvain(g, device="gpu")
        assert tries == [(16, "no_room"), (gl._fused_table_cap(g.n, g.nnz), "done")]
        assert "fused_kernel_s" in d.timings
        _assert_same(c, d)


def test_fused_first_tables_stay_within_the_bound():
    # a stored edge's worth of slots, or what fits in the move phase's region for free, if more;
    # never above the bound of every partition
    from mgmatch.gpu import louvain as gl

    tune = LouvainConfig()
    least = tune.fused_table_min_slots
    for n, nnz in [(1, 0), (34, 156), (1589, 5484), (15606, 91756), (16384, 1090896), (10**6, 25 * 10**5)]:
        first, cap = gl._fused_table_first(n, nnz, tune), gl._fused_table_cap(n, nnz)
        assert min(max(nnz, least), cap) <= first <= cap
        if first > max(nnz, least) and first < cap:  # the free room: no more scratch
            assert gl._fused_work_bytes(n, first, 16) == gl._fused_work_bytes(n, 0, 16)
    assert gl._fused_table_first(10**6, 25 * 10**5, tune) > 25 * 10**5  # 2.5 edges per vertex: room to spare


@pytest.mark.gpu
def test_fused_takes_either_offset_width(data_dir):
    # int32 offsets go to the kernel as they are (it widens them itself); int64 ones are read directly
    g = _fused_graphs(data_dir)["4elt"]
    c = louvain(g, device="cpu")
    for dtype in (np.int32, np.int64):
        h = Graph(np.asarray(g.indptr).astype(dtype), g.indices, g.weights, g.n_rows, g.n_cols)
        d = louvain(h, device="gpu")
        assert "fused_kernel_s" in d.timings
        assert str(h.to("gpu").indptr.dtype) == np.dtype(dtype).name
        _assert_same(c, d)


@pytest.mark.gpu
@pytest.mark.parametrize("solo", [16 << 10, 64 << 10])
def test_fused_one_block_takes_over(data_dir, solo):
    # with the shared memory alone deciding (no bound on the edges), one block takes over at a
    # later level for less of it, the cluster's state handed on through global memory; the
    # communities stay the CPU twin's
    graphs = _fused_graphs(data_dir)
    graphs["delaunay14"] = generators.delaunay(14, seed=4)
    switched = 0
    for name in ("4elt", "delaunay", "weighted", "dense100", "delaunay14", "netscience"):
        with louvain_config(fused_solo_bytes=solo, fused_solo_edges=1 << 30):
            c, d = louvain(graphs[name], device="cpu"), louvain(graphs[name], device="gpu")
        _assert_same(c, d)
        blocks = _fused_blocks(d)
        assert blocks == sorted(blocks, reverse=True), (name, blocks)
        switched += blocks[0] > 1 and blocks[-1] == 1
    assert switched >= 3


@pytest.mark.gpu
@pytest.mark.parametrize("mid", [None, 10**9])
def test_fused_second_cluster_kernel_takes_over(data_dir, mid):
    # after level 0, the first level of at most fused_mid_vertices vertices that one block does
    # not take goes on in the cluster kernel of fused_solo_threads threads, the run's state handed
    # on through global memory: 4elt's level 1 (3,187 vertices) by default, every level after the
    # first that one block does not take with no bound; the communities stay the CPU twin's
    from mgmatch.gpu import louvain as gl

    cfg = LouvainConfig() if mid is None else LouvainConfig(fused_mid_vertices=mid)
    cluster, big, small = gl._fused_cluster(cfg), cfg.fused_threads, cfg.fused_solo_threads
    assert small < big
    graphs = _fused_graphs(data_dir)
    graphs["kron14"] = generators.kron(14, seed=1)  # hubs: the kernels built with their code
    for name in ("4elt", "delaunay", "netscience", "dense100", "kron14"):
        c, d = louvain(graphs[name], device="cpu"), louvain(graphs[name], device="gpu", config=cfg)
        _assert_same(c, d)
        fused = [lv for lv in d.timings["levels"] if "blocks" in lv]  # (not the phase driver's)
        teams = [(lv["blocks"], lv["threads"]) for lv in fused]
        assert teams[0] == (cluster, big), name
        cut = cfg.fused_mid_vertices
        for lv, team in zip(fused[1:], teams[1:]):
            if team[0] > 1:  # on a cluster: the second kernel from the first level it may take
                assert team == ((cluster, small) if lv["n"] <= cut else (cluster, big)), (name, teams)
        assert teams == sorted(teams, key=lambda t: (-t[0], -t[1])), (name, teams)  # no way back
        if name == "4elt":
            assert teams[:2] == [(cluster, big), (cluster, small)] and teams[-1] == (1, small)
    with louvain_config(fused_mid_vertices=0):  # 0: the first kernel keeps the cluster's levels
        d = louvain(graphs["4elt"], device="gpu")
    assert {(lv["blocks"], lv["threads"]) for lv in d.timings["levels"]} == {(cluster, big), (1, small)}


@pytest.mark.gpu
@pytest.mark.parametrize("mid", [None, 0])
def test_fused_kernels_after_the_first_launch_early_or_plain(data_dir, mid, monkeypatch):
    # the second and third kernels go with programmatic stream serialization where the driver has
    # cuLaunchKernelEx (they wait in the kernel for the one before), else as plain launches; both
    # ways decide as the CPU twin, with the mid kernel launched or not, and the header each reads
    # is the one the kernel before it wrote (not a stale one in scratch from an earlier run)
    from mgmatch.gpu import louvain as gl

    cfg = LouvainConfig() if mid is None else LouvainConfig(fused_mid_vertices=mid)
    graphs = _fused_graphs(data_dir)
    cpu = {name: louvain(graphs[name], device="cpu") for name in ("4elt", "delaunay", "karate")}
    for name, c in cpu.items():
        _assert_same(c, louvain(graphs[name], device="gpu", config=cfg))
    if gl._launch_ex() is not None:  # the early launches were taken, not refused
        assert not gl._AFTER_REFUSED
    plain = []
    real = gl._driver().launchKernel
    monkeypatch.setattr(gl, "_launch_ex", lambda: None)
    monkeypatch.setattr(gl, "_driver", lambda: type("D", (), {"launchKernel": staticmethod(
        lambda h, *a: plain.append(h) or real(h, *a))}))
    for name, c in cpu.items():
        plain.clear()
        _assert_same(c, louvain(graphs[name], device="gpu", config=cfg))
        assert len(plain) == (3 if mid is None else 2), name  # every kernel, now by the plain path


@pytest.mark.gpu
def test_fused_early_launch_refused_goes_plain_on_that_device(data_dir, monkeypatch):
    # a device that refuses the early launch's attribute gets plain launches, that call and after
    # (the refusal is kept for that device only), with the same decisions
    import cupy

    from mgmatch.gpu import louvain as gl

    monkeypatch.setattr(gl, "_AFTER_REFUSED", set())
    tries = []
    monkeypatch.setattr(gl, "_launch_ex", lambda: lambda *a: tries.append(a) or 1)  # CUDA error 1: refused
    g = _fused_graphs(data_dir)["4elt"]
    c = louvain(g, device="cpu")
    _assert_same(c, louvain(g, device="gpu"))
    assert len(tries) == 1 and gl._AFTER_REFUSED == {cupy.cuda.runtime.getDevice()}
    _assert_same(c, louvain(g, device="gpu"))
    assert len(tries) == 1  # not asked again on that device


@pytest.mark.gpu
@pytest.mark.parametrize(("cluster", "threads"), [(8, 1024), (16, 1024), (16, 512), (8, 256)])
def test_fused_cluster_shapes(data_dir, cluster, threads):
    cfg = LouvainConfig(fused_cluster=cluster, fused_threads=threads,
                        fused_solo_threads=threads)  # the one-block kernel's shape too
    graphs = _fused_graphs(data_dir)
    # delaunay k=15: batches of several rounds per group, whose later moves are read back
    graphs["delaunay15"] = generators.delaunay(15, seed=2)
    for name in ("netscience", "4elt", "weighted", "weighted13", "delaunay15"):
        c, d = louvain(graphs[name], device="cpu"), louvain(graphs[name], device="gpu", config=cfg)
        assert "fused_kernel_s" in d.timings
        _assert_same(c, d)
        assert _fused_blocks(d)[-1] == 1


@pytest.mark.gpu
def test_fused_small_rows_stay_in_the_pinned_buffer(data_dir):
    # 4elt's rows (32 of 15,606 vertices: 4.0 MB) are views of the buffer the kernel wrote, which
    # goes back to the pinned pool with the result; with a smaller limit they are copies
    import cupy as cp

    from mgmatch.io import read_graph

    g = read_graph(data_dir / "4elt.graph").to("gpu")
    pool = cp.get_default_pinned_memory_pool()
    kept = louvain(g, device="gpu")
    buffer = kept.levels[0].base  # the pinned array, over memory it does not own
    assert len(kept.levels) > 1 and all(x.base is buffer for x in kept.levels) and not buffer.flags.owndata
    del buffer
    free = pool.n_free_blocks()
    del kept
    assert pool.n_free_blocks() == free + 1
    with louvain_config(fused_view_bytes=32 * 8 * g.n - 1):
        copied = louvain(g, device="gpu")
    assert all(x.base is copied.levels[0].base for x in copied.levels) and copied.levels[0].base.flags.owndata
    _assert_same(louvain(g, device="cpu"), copied)


@pytest.mark.gpu
@pytest.mark.parametrize("why", ["degree", "levels"])
def test_fused_hands_over_to_the_phase_driver(data_dir, why, monkeypatch):
    # a level the fused kernel cannot take (a vertex of degree > 319 without room for its
    # table, or no room for its map) goes on in the phase-per-kernel driver from that level's graph
    from mgmatch.gpu import louvain as gl
    from mgmatch.io import read_graph

    calls = []
    real = gl.move_sweep
    monkeypatch.setattr(gl, "move_sweep", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    if why == "degree":
        g = _hub_graph()
        cfg = LouvainConfig(fused_hub_bytes=0)  # no tables for hubs
    else:
        g = read_graph(data_dir / "4elt.graph")
        cfg = LouvainConfig(fused_level_bytes=8 * g.n)  # a row for one level
    c, d = louvain(g, device="cpu"), louvain(g, device="gpu", config=cfg)
    assert "fused_kernel_s" in d.timings and calls
    assert [lv["n"] for lv in d.timings["levels"]] == [lv["n"] for lv in c.timings["levels"]]
    _assert_same(c, d)


def _hub_graphs() -> dict:
    """Graphs with vertices of degree > 319 from the first level on, or from a later one."""
    u, v, _ = generators.kron(13, seed=2).edges()
    u, v = np.asarray(u), np.asarray(v)
    return {
        "kron12": generators.kron(12, seed=1),
        "kron13 weighted": Graph.from_edges(u, v, 1.0 + 2.5 * ((u + v) % 7 == 0), n=2**13),
        "hubs and communities": _planted_with_hubs(),
        "hub at level 1": _hub_graph(),
        "star": _star(3000),  # a hub alone in its batch: one table
    }


def _planted_with_hubs() -> Graph:
    G = nx.planted_partition_graph(10, 60, 0.2, 0.002, seed=5)
    for h in (G.number_of_nodes(), G.number_of_nodes() + 1):
        G.add_edges_from((h, v) for v in range(0, 600, 1))
    return Graph.from_networkx(G)


@pytest.mark.gpu
def test_fused_takes_hubs(monkeypatch):
    # vertices of degree > 319 take a block each, with its table in global memory: the whole
    # run stays in the fused kernel (no sweep of the phase driver) and decides as the CPU twin
    from mgmatch.gpu import louvain as gl

    calls = []
    real = gl.move_sweep
    monkeypatch.setattr(gl, "move_sweep", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    for name, g in _hub_graphs().items():
        assert int(np.diff(np.asarray(g.indptr)).max()) > 319 or name == "hub at level 1"
        c, d = louvain(g, device="cpu"), louvain(g, device="gpu")
        assert "fused_kernel_s" in d.timings and not calls, name
        _assert_same(c, d)


@pytest.mark.gpu
def test_fused_goes_again_with_room_for_hubs(monkeypatch):
    # the first try's kernel has no hub code: it stops at the first level that has a hub, and
    # the run goes again on the kernel with hub code, twice the tables that level needed and
    # the aggregation tables' bound (no third try for want of them); the same communities
    from mgmatch.gpu import louvain as gl

    tries = []
    real_try = gl._fused_try

    def spy(*a, **kw):
        out = real_try(*a, **kw)
        tries.append((a[8], out[0], int(out[1][8]), a[7]))  # hub slots, status, the slots a level needed, tables
        return out

    monkeypatch.setattr(gl, "_fused_try", spy)
    graphs = _hub_graphs()
    for name in ("kron12", "hub at level 1"):
        g = graphs[name]
        tries.clear()
        c, d = louvain(g, device="cpu"), louvain(g, device="gpu")
        (hub0, status0, need, _), *rest = tries
        assert hub0 == 0 and status0 == "handover" and need > 0, (name, tries)
        assert len(rest) == 1 and rest[0][0] >= 2 * need and rest[0][1] == "done", (name, tries)
        assert rest[0][3] == gl._fused_table_cap(g.n, g.nnz), (name, tries)
        assert "fused_kernel_s" in d.timings
        _assert_same(c, d)
        assert [lv["n"] for lv in d.timings["levels"]] == [lv["n"] for lv in c.timings["levels"]]


def test_fused_layout_constants_follow_the_kernel():
    # the host sizes the scratch, reads the stats header and names the statuses by constants that
    # the kernel defines too: a mismatch would carve the scratch or read the header wrongly
    import re

    from mgmatch._kernels import kernel_source
    from mgmatch.gpu import louvain as gl

    src = kernel_source("louvain")
    define = {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define (FUSED_\w+) (\d+)\b", src, re.M)}
    for name in ("STAT_HEAD", "STAT_W", "HEAD_BYTES", "PART", "MAX_BATCHES"):
        assert getattr(gl, f"_FUSED_{name}") == define[f"FUSED_{name}"], name
    assert gl._FUSED_STATUS == {define["FUSED_DONE"]: "done", define["FUSED_HANDOVER"]: "handover",
                                define["FUSED_NO_ROOM"]: "no_room"}


def test_fused_packed_parameters_follow_the_kernel():
    # a launch packs the fused kernels' parameters in the order of FUSED_ARGS, 8 bytes each, an
    # int parameter in its slot's low bytes and a double's bits in its slot, as the kernel declares them
    import re

    from mgmatch._kernels import kernel_source
    from mgmatch.gpu import louvain as gl

    src = kernel_source("louvain")
    args = re.search(r"#define FUSED_ARGS(.*?)\n#define", src, re.S).group(1).replace("\\", " ")
    names = [re.split(r"[\s*]+", a.strip())[-1] for a in args.split(",")]
    assert [name for name, _ in gl._fused_params()] == names
    slots = gl._fused_slots((("n0", 15606), ("solo_edges", -1), ("t_final", 1e-6), ("nnz0", 1 << 40), ("resolution", 2)))
    assert not slots.flags.writeable and slots.dtype == np.uint64 and slots.shape == (len(names),)
    assert slots.view(np.int32)[2 * names.index("n0")] == 15606
    assert slots.view(np.int32)[2 * names.index("solo_edges")] == -1
    assert slots.view(np.int64)[names.index("solo_edges")] == -1
    assert slots.view(np.float64)[names.index("t_final")] == 1e-6
    assert slots.view(np.int64)[names.index("nnz0")] == 1 << 40
    assert slots.view(np.float64)[names.index("resolution")] == 2.0  # by the parameter's type, not the value's
    assert [names[i] for i in gl._fused_pointer_slots()] == [
        "indptr0", "indices0", "weights0", "indptr_l", "indices_l", "wfix_l", "loop_l", "ts", "work", "level_rows",
        "stats"]
    assert not slots[gl._fused_pointer_slots()].any()


def test_fused_takes_no_graph_beyond_its_packed_ids(monkeypatch):
    # the fused kernel packs a vertex id in 20 bits and an edge offset in 32 (BatchVertex in
    # kernels/louvain.cu): larger graphs go to the phase driver whatever the tunables say
    from mgmatch.gpu import louvain as gl

    monkeypatch.setattr(gl, "compute_capability", lambda: 90)  # a device with clusters
    kw = {"move_buckets": LP.MOVE_BUCKETS, "slices": 2, "max_edges": 1 << 40,
          "tune": LouvainConfig(fused_max_vertices=1 << 30)}
    assert gl.fused_eligible(1 << 20, (1 << 32) - 1, **kw)
    assert not gl.fused_eligible((1 << 20) + 1, 1 << 21, **kw)
    assert not gl.fused_eligible(1 << 20, 1 << 32, **kw)
    assert not gl.fused_eligible(1 << 20, 0, **kw)
    assert not gl.fused_eligible(1 << 10, 1 << 12, **dict(kw, max_edges=(1 << 12) - 1))


def test_fused_pack_fills_this_threads_buffer():
    # a launch's parameter array: the template's slots with the run's pointers set, and the address
    # of each slot after them; each thread has a buffer of its own
    import ctypes
    import threading

    from mgmatch.gpu import louvain as gl

    names = [name for name, _ in gl._fused_params()]
    template = gl._fused_slots((("n0", 15606), ("t_final", 1e-6)))
    pointers = tuple(0x7F0000001000 + 256 * i for i in range(len(gl._FUSED_POINTERS)))
    kp = gl._fused_pack(template, pointers)
    addresses = np.ctypeslib.as_array((ctypes.c_uint64 * len(names)).from_address(kp))
    values = np.array([ctypes.c_uint64.from_address(int(a)).value for a in addresses], dtype=np.uint64)
    want = template.copy()
    want[gl._fused_pointer_slots()] = pointers
    assert np.array_equal(values, want)
    assert values.view(np.int32)[2 * names.index("n0")] == 15606
    assert values.view(np.float64)[names.index("t_final")] == 1e-6
    assert gl._fused_pack(template, pointers) == kp  # the same buffer again on this thread
    other = []
    t = threading.Thread(target=lambda: other.append(gl._fused_pack(template, pointers)))
    t.start()
    t.join()
    assert other and other[0] != kp


def test_fused_level_rows_within_their_budget():
    # a row of 8 bytes per input vertex for each written level: fused_level_rows of them within
    # fused_level_bytes, and always one (the first level's)
    from mgmatch.gpu import louvain as gl

    tune = LouvainConfig()
    assert gl._fused_level_rows(15606, tune) == tune.fused_level_rows
    assert gl._fused_level_rows(tune.fused_level_bytes // 8 // 5, tune) == 5
    assert gl._fused_level_rows(tune.fused_level_bytes, tune) == 1
    tune = LouvainConfig(fused_level_bytes=8 * 1000)
    assert gl._fused_level_rows(1000, tune) == 1 and gl._fused_level_rows(100, tune) == 10


def test_fused_hub_tables_within_their_budget():
    # twice the need, within the budget; nothing when not even the need fits
    from mgmatch.gpu import louvain as gl

    tune = LouvainConfig(fused_hub_min_bytes=0)
    n, nnz, table_cap = 3001, 6000, 16  # no free room beside the move phase's arrays
    assert gl._fused_hub_slots(n, table_cap, 16, tune=tune) == 0  # no hubs met: the kernel without hub code
    assert gl._fused_work_bytes(n, table_cap, 16, 1) > gl._fused_work_bytes(n, table_cap, 16)
    budget = int(tune.fused_hub_bytes * nnz) // 12
    assert gl._fused_hub_slots(n, table_cap, 16, 1000, nnz, tune=tune) == min(2000, budget)
    assert gl._fused_hub_slots(n, table_cap, 16, budget, nnz, tune=tune) == budget
    assert gl._fused_hub_slots(n, table_cap, 16, budget + 1, nnz, tune=tune) == 0
    # the bound's tables leave the move phase's arrays room to spare: at least that much
    bound = gl._fused_table_cap(n, nnz)
    _, move, aggregate, _ = gl._fused_regions(n, bound, 16)
    assert gl._fused_hub_slots(n, bound, 16, 10, nnz, tune=tune) == (aggregate - move - 32) // 12 > 20
    assert gl._fused_hub_slots(n, bound, 16, 10, tune.fused_hub_max_edges + 1, tune=tune) == 0  # the driver's
    tune = dataclasses.replace(tune, fused_hub_bytes=0)
    assert gl._fused_hub_slots(n, table_cap, 16, 10, nnz, tune=tune) == 0


@pytest.mark.gpu
def test_fused_hands_hubs_over_past_their_budget():
    # a hub whose table would pass the budget: the phase driver runs the graph
    g = _star(3000)  # a table of 4,507 slots (54 KB) for 6,000 stored edges (48 KB at 8 B each)
    with louvain_config(fused_hub_min_bytes=0):
        c, d = louvain(g, device="cpu"), louvain(g, device="gpu")
    assert "fused_kernel_s" not in d.timings
    _assert_same(c, d)


@pytest.mark.gpu
def test_tunables_reach_the_launches(monkeypatch):
    # the values in force when a run starts are the ones its launches use: the phase driver's
    # kernels are compiled with range_steps, the fused kernels in the shape asked for
    import mgmatch._kernels
    from mgmatch.gpu import louvain as gl

    defines = []
    real_get = mgmatch._kernels.get_kernel

    def get_kernel(family, name, **kw):
        defines.append((family, kw.get("defines") or {}))
        return real_get(family, name, **kw)

    monkeypatch.setattr(mgmatch._kernels, "get_kernel", get_kernel)
    shapes = []
    real_fused = gl._configured_fused_kernel
    monkeypatch.setattr(gl, "_configured_fused_kernel", lambda *a: shapes.append(a) or real_fused(*a))
    g = generators.kron(12, seed=3)  # hubs: the phase driver's edge-balanced kernels too
    c = louvain(g, device="cpu")
    with louvain_config(fused_max_edges=0, range_steps=3, table_budget_bytes=64 * 2**10):
        d = louvain(g, device="gpu")
    _assert_same(c, d)
    assert {found["RANGE_STEPS"] for family, found in defines if family == "louvain"} == {3} and not shapes
    with louvain_config(fused_cluster=8, fused_threads=512, fused_solo_threads=256, fused_range_steps=2):
        d = louvain(g, device="gpu")
    assert "fused_kernel_s" in d.timings
    _assert_same(c, d)
    # (device, cluster, threads, range steps, solo bytes, solo threads, hubs)
    assert shapes and {a[1:6] for a in shapes} == {(8, 512, 2, None, 256)}
    teams = {(lv["blocks"], lv["threads"]) for lv in d.timings["levels"] if "blocks" in lv}
    assert (8, 512) in teams and teams <= {(8, 512), (8, 256), (1, 256)}


@pytest.mark.gpu
@pytest.mark.parametrize("fused", [True, False])
def test_gpu_memory_estimate_raises(fused, monkeypatch):
    # a run that does not fit is refused with the bytes it needs and those free: the phase
    # driver checks before it allocates, the fused kernel's one allocation when it fails
    import cupy as cp

    from mgmatch.gpu import louvain as gl

    monkeypatch.setattr(gl, "free_bytes", lambda need=0: 1000)
    if fused:
        def refuse(size):
            raise cp.cuda.memory.OutOfMemoryError(size, 0)

        monkeypatch.setattr(cp.cuda, "alloc", refuse)
    with pytest.raises(ResourceError, match="GiB"):
        louvain(_planted(), device="gpu", config=LouvainConfig(fused_max_edges=0 if not fused else 1 << 22))


# ------------------------------------------------------------------- parameters, outputs
@pytest.mark.parametrize(
    "kwargs",
    [
        {"resolution": 0.0},
        {"resolution": float("nan")},
        {"threshold": -1.0},
        {"threshold": "x"},
        {"max_level": 0},
        {"config": {"move_slices": 2}},
        {"partitions": 0},
        {"max_iterations": 1.5},
        {"device": "tpu"},
        {"progress": "yes"},
    ],
)
def test_bad_parameters(kwargs):
    g = Graph.from_edges([0, 1], [1, 2])
    with pytest.raises(ParameterError):
        louvain(g, **kwargs)


@pytest.mark.parametrize("where", ["host", pytest.param("device", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("parallel", [False, True])
def test_levels_to_host(where, parallel, monkeypatch):
    from mgmatch import _array

    if parallel:
        monkeypatch.setattr(_array, "ROW_PIECE", 1024)  # pieces of 1024 entries, the last one short
    xp = np
    if where == "device":
        import cupy as xp
    rng = np.random.default_rng(3)
    want = [rng.integers(0, 1 << 30, 5000) for _ in range(3)]
    levels = [xp.asarray(w, dtype=xp.int32) for w in want[:2]] + [want[2].astype(np.int32)]
    got = _array.to_numpy_rows(levels)
    assert all(isinstance(x, np.ndarray) and x.dtype == np.int64 for x in got)
    for x, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(x, w)
    ready = [w.astype(np.int64) for w in want]  # int64 host levels are taken as they are
    assert all(x is w for x, w in zip(_array.to_numpy_rows(ready), ready, strict=True))


def test_progress_reports_every_sweep_and_aggregation():
    g = generators.delaunay(10, seed=2)
    calls = []
    res = louvain(g, device="cpu", progress=lambda *args: calls.append(args))
    levels = res.timings["levels"]
    # one call per sweep, one per aggregation (the last level's ends the run)
    assert len(calls) == sum(lv["iterations"] for lv in levels) + len(levels)
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)
    assert [c[2] for c in calls] == sorted(c[2] for c in calls)  # modularity never decreases
    for level, lv in enumerate(levels):
        assert max(c[1] for c in calls if c[0] == level) == lv["iterations"]
    assert calls[-1][2] == res.modularity[-1]
    from mgmatch.cli import _progress

    assert _progress("louvain", True).describe_levels(2, 1, 0.5) == "louvain: level 2, 1 sweep, modularity 0.500000"


def test_bad_input():
    with pytest.raises(InputError):
        louvain(Graph.from_edges([0, 1], [1, 2], bipartite=True))
    g = Graph.from_edges([0, 1], [1, 2])
    with pytest.raises(InputError):
        modularity(g, [0, 1])
    with pytest.raises(InputError):
        modularity(g, [0, -1, 0])


def test_limits_respected(device, data_dir):
    g = _read(data_dir, "netscience")
    res = louvain(g, max_level=1, max_iterations=1, device=device)
    assert len(res.levels) == 1
    assert res.timings["levels"][0]["iterations"] == 1


def test_table_and_summary(device, data_dir):
    import json

    g = _read(data_dir, "karate")
    res = louvain(g, device=device)
    t = res.to_table()
    assert t["vertex"].dtype == np.int64 and t["community"].dtype == np.int64
    assert np.array_equal(t["community"], res.communities)
    t = res.to_table(all_levels=True)
    assert t["level"].size == g.n * len(res.levels)
    s = json.loads(json.dumps(res.summary()))
    assert s["device"] == device and len(s["levels"]) == len(res.levels)
    assert s["modularity"] == pytest.approx(res.modularity[-1])


def test_partition_program_single_partition():
    g = _planted(seed=3)
    prog = _program()
    st = prog.init(g.partition(1)[0])
    steps = _run_steps(prog, st)
    piece = prog.finish(st)
    assert steps > 1 and not prog.active(st)
    assert np.array_equal(piece["levels"][-1], louvain(g, device="cpu").communities)


def test_threshold_and_max_level_names():
    # NetworkX's and cuGraph's names; the former ones still work this release, with a warning
    g = _read_planted_small()
    new = louvain(g, device="cpu", threshold=1e-2, max_level=2)
    assert new.params["t_bin"] == new.params["t_final"] == 1e-2 and new.params["max_level"] == 2
    with pytest.warns(FutureWarning, match="t_bin|t_final"):
        old = louvain(g, device="cpu", t_bin=1e-2, t_final=1e-2)
    assert np.array_equal(old.communities, louvain(g, device="cpu", threshold=1e-2).communities)
    with pytest.warns(FutureWarning, match="max_levels is deprecated"):
        assert len(louvain(g, device="cpu", max_levels=1).levels) == 1
    with pytest.raises(ParameterError, match="not both"):
        louvain(g, device="cpu", threshold=1e-2, t_bin=1e-2)
    with pytest.raises(ParameterError, match="not both"):
        louvain(g, device="cpu", max_level=2, max_levels=2)
    # the default keeps the two thresholds by level size
    p = L.validate_louvain_params()
    assert (p["threshold"], p["t_bin"], p["t_final"]) == (None, 1e-6, 1e-6) and p["t_rel"] > 0
    with pytest.warns(FutureWarning, match="t_bin"):
        assert L.validate_louvain_params(t_bin=1e-2)["t_rel"] == 0.0  # the former names: absolute
    with pytest.warns(FutureWarning, match="t_final"):
        p = L.validate_louvain_params(t_final=1e-5)
    assert (p["t_bin"], p["t_rel"], p["t_final"]) == (1e-3, 0.0, 1e-5)  # and the former 1e-3


def _read_planted_small() -> Graph:
    return _planted(n_blocks=4, size=20, seed=9)


def test_config_is_read_once_and_passed_down():
    g = _planted(seed=4)
    with louvain_config(move_slices=1, move_slice_min=64):
        inside = louvain(g, device="cpu")
    explicit = louvain(g, device="cpu", config=LouvainConfig(move_slices=1, move_slice_min=64))
    assert np.array_equal(inside.communities, explicit.communities)
    assert LouvainConfig().gather_edges is None and LouvainConfig(gather_edges=0).gather_edges == 0
