"""Weighted matching family: invariants first, then equality with the sequential greedy
reference, edge for edge, for every algorithm, partition count and backend."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mgmatch
from mgmatch import generators, verify
from mgmatch.algorithms.matching import match

ONE_MATCHINGS = ["suitor", "ld", "handshake"]
PARTITIONS = [1, 2, 3, 7]


def random_graph(n, m, *, seed, weights="ties"):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if weights == "ties":
        w = rng.integers(1, 4, m).astype(float)  # many equal weights
    elif weights == "unit":
        w = None
    else:
        w = rng.random(m) + 0.01
    return mgmatch.Graph.from_edges(src, dst, w, n=n)


def star(leaves, *, seed=0):
    rng = np.random.default_rng(seed)
    return mgmatch.Graph.from_edges(np.zeros(leaves, int), np.arange(1, leaves + 1), rng.random(leaves))


GRAPHS = {
    "ties": lambda: random_graph(400, 2000, seed=1),
    "unweighted": lambda: random_graph(300, 1200, seed=2, weights="unit"),
    "float": lambda: random_graph(500, 3000, seed=3, weights="float"),
    "isolated": lambda: random_graph(1000, 300, seed=4),  # most vertices isolated
    "star": lambda: star(500),
    "kron-like": lambda: mgmatch.Graph.from_edges(
        *np.divmod(np.random.default_rng(5).zipf(1.6, 4000) % 60000, 300), n=300
    ),
    "path": lambda: mgmatch.Graph.from_edges(np.arange(99), np.arange(1, 100), np.ones(99)),
}


@pytest.fixture(scope="module", params=sorted(GRAPHS))
def graph(request):
    return GRAPHS[request.param]()


# ----------------------------------------------------------------------------- invariants
@pytest.mark.parametrize("algorithm", ONE_MATCHINGS)
def test_result_is_a_maximal_matching(graph, algorithm, device):
    r = match(graph, algorithm, device=device)
    assert verify.is_matching(graph, r.u, r.v)
    assert verify.is_maximal_matching(graph, r.u, r.v)
    assert r.cardinality == len(r.u)
    assert r.weight == pytest.approx(verify.matching_weight(graph, r.u, r.v))
    mate = r.mate
    assert ((mate == -1) | (mate[np.maximum(mate, 0)] == np.arange(graph.n))).all()


# ------------------------------------------------------------ equality with the reference
@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("algorithm", ONE_MATCHINGS)
def test_equals_greedy(graph, algorithm, partitions, device):
    expected = verify.greedy_matching(graph)
    r = match(graph, algorithm, partitions=partitions, device=device)
    np.testing.assert_array_equal(r.mate, expected)


@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("b", [1, 2, 3])
def test_b_suitor_equals_greedy_b_matching(graph, b, partitions, device):
    eu, ev, ew = verify.greedy_b_matching(graph, b)
    r = mgmatch.b_suitor(graph, b, partitions=partitions, device=device)
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)
    np.testing.assert_allclose(r.w, ew)
    assert verify.is_b_matching(graph, r.u, r.v, b)


@pytest.mark.parametrize("partitions", [1, 3])
def test_b_suitor_per_vertex_b(graph, partitions, device):
    b = np.random.default_rng(7).integers(0, 4, graph.n)  # zeros included: such vertices take nobody
    eu, ev, _ = verify.greedy_b_matching(graph, b)
    r = mgmatch.b_suitor(graph, b, partitions=partitions, device=device)
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)
    assert verify.is_b_matching(graph, r.u, r.v, b)


def test_gpu_outbox_growth_doubles_within_its_bound():
    # (host arithmetic of the GPU b-Suitor outbox, which grows before each sweep)
    from mgmatch.gpu.matching import _grown_cap

    assert _grown_cap(4, 5, 100) == 8  # at least doubled: few growths in a step
    assert _grown_cap(4, 30, 100) == 30
    assert _grown_cap(60, 80, 100) == 100  # never past the step's proven bound
    assert _grown_cap(4, 100, 100) == 100


def test_b_suitor_with_b_one_is_suitor(graph):
    r1 = mgmatch.suitor(graph, device="cpu")
    rb = mgmatch.b_suitor(graph, 1, device="cpu")
    np.testing.assert_array_equal(r1.u, rb.u)
    np.testing.assert_array_equal(r1.v, rb.v)


# --------------------------------------------------------------------------- edge cases
EDGE_CASES = {
    "no vertices": lambda: mgmatch.Graph.from_edges([], []),
    "no edges": lambda: mgmatch.Graph.from_edges([], [], n=5),
    "one edge": lambda: mgmatch.Graph.from_edges([3], [1], [2.5], n=6),
    "self-loops only": lambda: mgmatch.Graph.from_edges([0, 1], [0, 1], n=3),
    "zero weights": lambda: mgmatch.Graph.from_edges([0, 1, 2], [1, 2, 3], [0.0, 0.0, 0.0]),
    "clique of ties": lambda: mgmatch.Graph.from_networkx(nx.complete_graph(9)),
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
@pytest.mark.parametrize("partitions", [1, 2, 8])
@pytest.mark.parametrize("algorithm", ONE_MATCHINGS + ["bsuitor"])
def test_edge_cases(case, algorithm, partitions, device):
    g = EDGE_CASES[case]()
    r = match(g, algorithm, b=2 if algorithm == "bsuitor" else None, partitions=partitions, device=device)
    if algorithm == "bsuitor":
        eu, ev, _ = verify.greedy_b_matching(g, 2)
        np.testing.assert_array_equal(r.u, eu)
        np.testing.assert_array_equal(r.v, ev)
    else:
        np.testing.assert_array_equal(r.mate, verify.greedy_matching(g))


def test_partition_owning_only_isolated_vertices(device):
    # vertices 0..49 are isolated; with 4 partitions the first ones own no edge at all
    g = mgmatch.Graph.from_edges(np.arange(50, 99), np.arange(51, 100), np.arange(49) % 3 + 1.0, n=100)
    bounds = [0, 50, 70, 85, 100]
    assert g.partition(bounds=bounds)[0].nnz == 0
    for alg in ONE_MATCHINGS:
        np.testing.assert_array_equal(match(g, alg, partitions=bounds, device=device).mate, verify.greedy_matching(g))
    eu, ev, _ = verify.greedy_b_matching(g, 2)
    r = mgmatch.b_suitor(g, 2, partitions=bounds, device=device)
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)


def test_more_partitions_than_vertices(device):
    g = mgmatch.Graph.from_edges([0, 1], [1, 2], [1.0, 2.0])
    for alg in ONE_MATCHINGS:
        np.testing.assert_array_equal(match(g, alg, partitions=8, device=device).mate, [-1, 2, 1])


# --------------------------------------------------------------------- approximation
@pytest.mark.parametrize("seed", range(3))
def test_half_approximation_against_exact(seed):
    g = random_graph(40, 120, seed=seed, weights="float")
    r = mgmatch.suitor(g, device="cpu")
    weight, optimum = verify.check_half_approximation(g, r.u, r.v)
    assert optimum / 2 <= weight <= optimum + 1e-9


def test_strongest_neighbour_matches_brute_force(device):
    g = random_graph(200, 800, seed=9)
    sn = mgmatch.strongest_neighbour(g, device=device)
    for v in range(g.n):
        nbrs, w = g.neighbours(v)
        if nbrs.size == 0:
            assert sn[v] == -1
        else:
            best = nbrs[np.lexsort((nbrs, -w))[0]]
            assert sn[v] == best


# ------------------------------------------------------------------------- property test
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 40),
    edges=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 39), st.integers(0, 3)), max_size=120),
    partitions=st.integers(1, 6),
    b=st.integers(1, 3),
)
def test_property_all_algorithms_equal_greedy(n, edges, partitions, b):
    edges = [(a % n, c % n, float(w)) for a, c, w in edges]
    src, dst, w = (np.array(x) for x in zip(*edges)) if edges else ([], [], None)
    g = mgmatch.Graph.from_edges(src, dst, w, n=n)
    expected = verify.greedy_matching(g)
    for alg in ONE_MATCHINGS:
        np.testing.assert_array_equal(match(g, alg, partitions=partitions, device="cpu").mate, expected)
    eu, ev, _ = verify.greedy_b_matching(g, b)
    r = mgmatch.b_suitor(g, b, partitions=partitions, device="cpu")
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda g: mgmatch.suitor(g, partitions=0, device="cpu"), "partitions"),
        (lambda g: mgmatch.suitor(g, device="tpu"), "device"),
        (lambda g: mgmatch.b_suitor(g, -1, device="cpu"), "b must"),
        (lambda g: mgmatch.b_suitor(g, np.ones(3, int), device="cpu"), "b must"),
        (lambda g: mgmatch.b_suitor(g, 1.5, device="cpu"), "b must"),
        (lambda g: match(g, "greedy", device="cpu"), "unknown matching algorithm"),
        (lambda g: mgmatch.suitor("not a graph", device="cpu"), "mgmatch.Graph"),
    ],
)
def test_bad_parameters(call, message):
    g = random_graph(10, 20, seed=0)
    with pytest.raises(mgmatch.ParameterError, match=message):
        call(g)


def test_bipartite_graph_rejected():
    g = mgmatch.Graph.from_edges([0], [1], bipartite=True)
    with pytest.raises(mgmatch.ParameterError, match="bipartite"):
        mgmatch.suitor(g, device="cpu")


def test_float32_weights_give_the_same_matching():
    g64 = random_graph(300, 1500, seed=11, weights="float")
    g32 = mgmatch.Graph.from_edges(*g64.edges()[:2], g64.edges()[2].astype(np.float32), n=g64.n, dtype="float32")
    np.testing.assert_array_equal(mgmatch.suitor(g32, device="cpu").mate, verify.greedy_matching(g32))


def test_summary_is_json_ready():
    import json

    r = mgmatch.suitor(random_graph(50, 100, seed=1), partitions=2, device="cpu")
    s = json.loads(json.dumps(r.summary()))
    assert s["algorithm"] == "suitor" and s["cardinality"] == r.cardinality and s["rounds"] >= 1


# ------------------------------------------------------------------- real and generated graphs
def _real(name):
    from pathlib import Path

    from mgmatch.io import read_graph

    data = Path(__file__).parent / "data"
    if name == "football":
        return mgmatch.Graph.from_networkx(nx.read_gml(data / "football.gml", label="id"))
    options = {"bcsstk13.mtx.gz": {"negative": "abs"}}.get(name, {})
    return read_graph(data / name, **options)


REAL = ["karate.mtx", "dolphins.mtx", "netscience.mtx", "4elt.graph", "bcsstk13.mtx.gz", "football"]
GENERATED = ["delaunay:k=12,seed=2", "rgg:k=12,seed=2", "kron:k=11,seed=2", "kron:k=10,seed=2,weights=unit",
             "grid2d:nx=40,ny=30,seed=2"]


@pytest.fixture(scope="module", params=REAL + GENERATED)
def named_graph(request):
    name = request.param
    return _real(name) if name in REAL else generators.parse_graph_spec(name)


@pytest.mark.parametrize("partitions", [1, 2, 3, 7])
def test_real_and_generated_graphs_equal_greedy(named_graph, partitions, device):
    expected = verify.greedy_matching(named_graph)
    for alg in ONE_MATCHINGS:
        np.testing.assert_array_equal(match(named_graph, alg, partitions=partitions, device=device).mate, expected)
    eu, ev, _ = verify.greedy_b_matching(named_graph, 3)
    r = mgmatch.b_suitor(named_graph, 3, partitions=partitions, device=device)
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)


def test_weights_equal_networkit_on_tie_free_graphs():
    nk = pytest.importorskip("networkit")
    from mgmatch.bench._common import networkit_graph

    for spec in ("delaunay:k=12,seed=4", "kron:k=11,seed=4"):
        g = generators.parse_graph_spec(spec)
        G = networkit_graph(g)
        m = nk.matching.SuitorMatcher(G, False, False)
        m.run()
        assert mgmatch.suitor(g, device="cpu").weight == pytest.approx(m.getMatching().weight(G), rel=1e-9)
        bm = nk.matching.BSuitorMatcher(G, 3)
        bm.run()
        assert mgmatch.b_suitor(g, 3, device="cpu").weight == pytest.approx(bm.getBMatching().weight(), rel=1e-9)


# ------------------------------------------------------------------------------- threads
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("spec", ["kron:k=11,seed=3", "delaunay:k=12,seed=3"])
def test_default_partitions_follow_the_threads(spec, threads):
    # a CPU run given no partition count is split into one partition per thread (the floor on
    # partition size lowered so these small graphs split); every thread count gives the greedy
    # matching, edge for edge, and the same rounds as that many partitions stepped one by one.
    # Suitor and b-Suitor are not split: their threads share one state
    # (test_suitor_shares_the_graph_on_threads).
    from mgmatch.engine import config_context

    g = generators.parse_graph_spec(spec)
    expected = verify.greedy_matching(g)
    split = [alg for alg in ONE_MATCHINGS if alg != "suitor"]
    with config_context(threads=threads, min_partition_nnz=1):
        results = {alg: match(g, alg, b=3 if alg == "bsuitor" else None, device="cpu") for alg in split}
    with config_context(threads=1):
        serial = {alg: match(g, alg, b=3 if alg == "bsuitor" else None, partitions=threads, device="cpu")
                  for alg in split}
    for alg, r in results.items():
        assert r.n_parts == threads
        assert r.rounds.messages == serial[alg].rounds.messages
        np.testing.assert_array_equal(r.mate, expected)


def test_small_graphs_stay_one_partition():
    # below the floor on partition size a split costs more than a thread gives
    from mgmatch.engine import config_context

    g = random_graph(400, 2000, seed=1)
    with config_context(threads=2):
        assert mgmatch.handshake(g, device="cpu").n_parts == 1
    with config_context(threads=2, min_partition_nnz=g.nnz // 2):
        assert mgmatch.handshake(g, device="cpu").n_parts == 2
    with config_context(threads=8, min_partition_nnz=g.nnz // 3):
        assert mgmatch.handshake(g, device="cpu").n_parts == 3


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("spec", ["kron:k=11,seed=3", "delaunay:k=12,seed=3", "rgg:k=12,seed=2"])
def test_suitor_shares_the_graph_on_threads(spec, threads):
    # in-process on the CPU Suitor's and b-Suitor's threads propose into one shared state, one
    # lock per vertex: one partition, no messages, and the greedy (b-)matching on every thread count
    from mgmatch.engine import config_context

    g = generators.parse_graph_spec(spec)
    with config_context(threads=threads, min_partition_nnz=1):
        r = mgmatch.suitor(g, device="cpu")
        rb = mgmatch.b_suitor(g, 3, device="cpu")
    assert (r.n_parts, r.params["threads"], r.rounds.messages) == (1, threads, [0])
    np.testing.assert_array_equal(r.mate, verify.greedy_matching(g))
    keep = r.mate > np.arange(g.n)
    np.testing.assert_array_equal(r.u, np.flatnonzero(keep))
    np.testing.assert_array_equal(r.v, r.mate[keep])
    assert r.weight == pytest.approx(verify.matching_weight(g, r.u, r.v))
    assert (rb.n_parts, rb.params["threads"], rb.params["b"], rb.rounds.messages) == (1, threads, 3, [0])
    eu, ev, _ = verify.greedy_b_matching(g, 3)
    np.testing.assert_array_equal(rb.u, eu)
    np.testing.assert_array_equal(rb.v, ev)
    assert rb.weight == pytest.approx(verify.matching_weight(g, rb.u, rb.v))


@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_shared_suitor_kernel_on_ties_and_threads(chunk):
    # integer weights in {1, 2, 3} tie everywhere: the id order decides, and any interleaving of
    # the threads (a chunk of one vertex interleaves most) gives the greedy matching
    from mgmatch.cpu.suitor_shared import suitor_shared

    rng = np.random.default_rng(chunk)
    for trial in range(40):
        n = int(rng.integers(2, 200))
        m = int(rng.integers(1, 4 * n))
        w = rng.integers(1, 4, m).astype(float) if trial % 2 else rng.random(m)
        g = mgmatch.Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), w, n=n)
        mate, mate_w = suitor_shared(g.indptr, g.indices, g.weights, 2, chunk)
        expected = verify.greedy_matching(g)
        np.testing.assert_array_equal(mate, expected)
        rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
        weight = {(int(a), int(b)): float(x) for a, b, x in zip(rows, g.indices, g.weights)}
        for a in np.flatnonzero(mate >= 0):
            assert mate_w[a] == weight[(int(a), int(mate[a]))]
        assert (mate_w[mate < 0] == 0).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_explicit_partitions_stepped_on_threads_equal_greedy(graph, threads):
    from mgmatch.engine import config_context

    with config_context(threads=threads, min_partition_nnz=1):  # partitions of any size on threads
        for alg in ONE_MATCHINGS:
            np.testing.assert_array_equal(match(graph, alg, partitions=5, device="cpu").mate,
                                          verify.greedy_matching(graph))
        eu, ev, _ = verify.greedy_b_matching(graph, 2)
        r = mgmatch.b_suitor(graph, 2, partitions=5, device="cpu")
    np.testing.assert_array_equal(r.u, eu)
    np.testing.assert_array_equal(r.v, ev)


@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_shared_bsuitor_kernel_on_ties_capacities_and_threads(chunk):
    # integer weights tie everywhere, capacities differ per vertex (zeros among them), and a
    # chunk of one vertex interleaves the threads most: always the greedy b-matching
    from mgmatch.cpu.suitor_shared import bsuitor_shared

    rng = np.random.default_rng(10 + chunk)
    for trial in range(40):
        n = int(rng.integers(2, 200))
        m = int(rng.integers(1, 4 * n))
        w = rng.integers(1, 4, m).astype(float) if trial % 2 else rng.random(m)
        g = mgmatch.Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), w, n=n)
        b = np.minimum(rng.integers(0, 5, g.n), np.diff(g.indptr))
        u, v, ws = bsuitor_shared(g.indptr, g.indices, g.weights, b, 2, chunk)
        eu, ev, ew = verify.greedy_b_matching(g, b)
        np.testing.assert_array_equal(u, eu)
        np.testing.assert_array_equal(v, ev)
        np.testing.assert_array_equal(ws, ew)


@pytest.mark.parametrize("bad", [{"threads_per_block": 100}, {"threads_per_block": 2048}, {"vertices_per_warp": 0},
                                 {"vertices_per_warp": 33},
                                 {"handshake_variant": "tree"}, {"wide_keys": 1}, {"max_b_per_scan": 65}])
def test_matching_config_refuses_bad_tunables(bad):
    from mgmatch.algorithms.matching import matching_config
    from mgmatch.errors import ParameterError

    with pytest.raises(ParameterError, match=next(iter(bad))):
        with matching_config(**bad):
            pass


def test_a_program_carries_the_tunables_in_force_when_made():
    # the workers of a cluster get the program pickled: its tunables travel with it
    import pickle

    from mgmatch.algorithms.matching import _BSuitor, _Suitor, get_matching_config, matching_config

    with matching_config(vertices_per_warp=4, max_b_per_scan=8):
        made = [_Suitor(), _BSuitor(2)]
    assert get_matching_config().vertices_per_warp != 4
    for program in made:
        tune = pickle.loads(pickle.dumps(program)).tune
        assert (tune.vertices_per_warp, tune.max_b_per_scan) == (4, 8)


@pytest.mark.parametrize("k", [1, 3, 8])
@pytest.mark.parametrize("weights", ["random", "unit", "few"])
def test_suitor_on_placed_partitions_reads_each_rows_best_entries_first(k, weights):
    # a partition placed on a worker keeps each row's k best entries in rank order, and Suitor's
    # searches read them first: the result is still the greedy matching, ties included (unit
    # weights: every edge ties; "few": three weights)
    from dataclasses import replace

    from mgmatch.algorithms.matching import _assemble, _Suitor, matching_config
    from mgmatch.engine.local import run_local

    if weights == "few":
        rng = np.random.default_rng(8)
        g = mgmatch.Graph.from_edges(*rng.integers(0, 700, (2, 9000)), rng.integers(1, 4, 9000) * 1.0, n=720)
    else:
        g = generators.kron(11, edge_factor=16, seed=4, weights=weights)
    expected = verify.greedy_matching(g)
    for parts in (1, 3):
        placed = [replace(p, placed=True) for p in g.partition(parts)]
        with matching_config(top_edges=k):
            program = _Suitor()
        for _ in range(2):  # the second run finds the lists the first one made
            pieces, log = run_local(program, placed)
            np.testing.assert_array_equal(_assemble(g, "suitor", pieces, log).mate, expected)
        assert all(f"matching.top{k}" in p._derived for p in placed)
