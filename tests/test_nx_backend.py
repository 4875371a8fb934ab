"""The NetworkX backend: NetworkX's semantics and return types, any node ids, the capability
checks, and dispatch through the entry points (in a subprocess that finds this checkout's)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

nx = pytest.importorskip("networkx")
from networkx.algorithms.community.quality import NotAPartition  # noqa: E402

import _mgmatch_nx  # noqa: E402
import mgmatch  # noqa: E402
from mgmatch import nx as backend  # noqa: E402
from mgmatch.nx.interface import backend_interface  # noqa: E402

from test_nx_backend_suite import backend_environment  # noqa: E402


def lfr_without_loops():
    G = nx.LFR_benchmark_graph(250, 3, 1.5, 0.009, average_degree=5, min_community=20, seed=10)
    G.remove_edges_from(list(nx.selfloop_edges(G)))
    return G


def named(G):
    return nx.relabel_nodes(G, {v: f"v{v}" for v in G})


# --------------------------------------------------------------------------- Louvain
def test_louvain_communities_are_mgmatch_louvain_in_node_ids():
    G = named(nx.karate_club_graph())
    parts = backend.louvain_communities(G, weight=None, device="cpu")
    assert isinstance(parts, list) and all(isinstance(c, set) for c in parts)
    assert nx.community.is_partition(G, parts)
    ref = mgmatch.louvain(mgmatch.Graph.from_networkx(G, weight=None), device="cpu")
    nodes = list(G)
    expected = {}
    for i, c in enumerate(ref.communities.tolist()):
        expected.setdefault(c, set()).add(nodes[i])
    assert sorted(map(sorted, parts)) == sorted(map(sorted, expected.values()))
    # NetworkX's modularity of the partition is mgmatch's own (an independent formula)
    assert nx.community.modularity(G, parts, weight=None) == pytest.approx(ref.modularity[-1], abs=1e-12)


def test_seed_does_not_change_the_result():
    G = lfr_without_loops()
    assert backend.louvain_communities(G, seed=1) == backend.louvain_communities(G, seed=99)


def test_louvain_partitions_end_with_louvain_communities_and_rise_in_modularity():
    G = lfr_without_loops()
    levels = list(backend.louvain_partitions(G))
    assert len(levels) > 1
    assert levels[-1] == backend.louvain_communities(G)
    q = [nx.community.modularity(G, p) for p in levels]
    assert all(b >= a - 1e-12 for a, b in zip(q, q[1:]))
    assert all(nx.community.is_partition(G, p) for p in levels)
    # each level's partition coarsens the one before
    for fine, coarse in zip(levels, levels[1:]):
        assert all(any(c <= d for d in coarse) for c in fine)


def test_max_level_as_networkx_tests_it():
    G = lfr_without_loops()
    for max_level, expected in enumerate(backend.louvain_partitions(G), 1):
        assert backend.louvain_communities(G, max_level=max_level) == expected
    assert backend.louvain_communities(G, max_level=max_level + 1) == expected
    with pytest.raises(ValueError, match="max_level argument must be a positive integer"):
        backend.louvain_communities(G, max_level=0)


def test_threshold_and_resolution_as_networkx_tests_them():
    G = lfr_without_loops()
    every = list(backend.louvain_partitions(G, threshold=0))
    q = [nx.community.modularity(G, p) for p in [[{v} for v in G], *every]]
    for threshold in (0.3, 0.05, 0.01):
        # NetworkX stops after the first level whose gain over the one before is at most threshold
        stop = next((k for k in range(1, len(q)) if q[k] - q[k - 1] <= threshold), len(every))
        assert list(backend.louvain_partitions(G, threshold=threshold)) == every[:stop]
    coarse = backend.louvain_communities(G, threshold=0.3)
    assert nx.community.modularity(G, coarse) <= nx.community.modularity(G, backend.louvain_communities(G))
    sizes = [len(backend.louvain_communities(G, resolution=r)) for r in (0.5, 1, 2)]
    assert sizes == sorted(sizes)


def test_louvain_uses_the_weight_attribute_and_sums_multigraph_edges():
    G = nx.karate_club_graph()
    H = nx.MultiGraph(G)
    H.add_edge(0, 1, weight=9)
    G2 = G.copy()
    G2[0][1]["weight"] += 9
    assert backend.louvain_communities(H) == backend.louvain_communities(G2)
    assert backend.louvain_communities(G, weight="weight") != backend.louvain_communities(G, weight=None)


def test_graph_without_edges_is_its_singletons():
    G = nx.Graph()
    G.add_nodes_from(["a", "b", "c"])
    assert backend.louvain_communities(G) == [{"a"}, {"b"}, {"c"}]
    assert list(backend.louvain_partitions(G)) == [[{"a"}, {"b"}, {"c"}]]


def test_max_level_and_resolution_reach_mgmatch_and_threshold_does_not(monkeypatch):
    """NetworkX's threshold ends levels only; mgmatch's would also end each level's sweeps."""
    seen = {}
    original = mgmatch.louvain

    def louvain(graph, resolution=1.0, **options):
        seen.update(options, resolution=resolution)
        return original(graph, resolution, **options)

    monkeypatch.setattr(mgmatch, "louvain", louvain)
    backend.louvain_communities(nx.karate_club_graph(), threshold=0.01, max_level=2, resolution=2, device="cpu")
    assert seen == {"max_level": 2, "resolution": 2.0, "device": "cpu"}


# ------------------------------------------------------------------------- modularity
def test_modularity_equals_networkx():
    G = named(nx.barbell_graph(5, 3))
    for parts in ([set(list(G)[:8]), set(list(G)[8:])], [{v} for v in G]):
        for gamma in (0.3, 1, 2.5):
            assert isinstance(backend.modularity(G, parts, resolution=gamma), float)
            assert backend.modularity(G, parts, resolution=gamma) == pytest.approx(
                nx.community.modularity(G, parts, resolution=gamma), abs=1e-12)


def test_modularity_counts_self_loops_as_networkx_does():
    G = nx.karate_club_graph()
    G.add_weighted_edges_from([(i, i, 3.0 * i) for i in range(0, 9, 2)])
    G.add_edge(33, 33)  # no weight attribute: 1
    parts = nx.community.louvain_communities(nx.karate_club_graph(), seed=1)
    for weight in ("weight", None):
        for gamma in (0.5, 1):
            assert backend.modularity(G, parts, weight=weight, resolution=gamma) == pytest.approx(
                nx.community.modularity(G, parts, weight=weight, resolution=gamma), abs=1e-12)
    M = nx.MultiGraph(G)
    M.add_edge(4, 4, weight=2.0)
    assert backend.modularity(M, parts) == pytest.approx(nx.community.modularity(M, parts), abs=1e-12)


def test_modularity_refuses_what_networkx_refuses():
    G = nx.path_graph(4)
    for bad in ([{0, 1}, {2}], [{0, 1}, {1, 2, 3}], [{0, 1}, {2, 3, 9}]):
        with pytest.raises(NotAPartition):
            backend.modularity(G, bad)


# -------------------------------------------------------------------------- matchings
def test_maximal_matching_is_a_maximal_matching_in_node_ids():
    for G in (named(nx.petersen_graph()), nx.les_miserables_graph(), nx.path_graph(7), nx.empty_graph(3)):
        m = backend.maximal_matching(G, device="cpu")
        assert isinstance(m, set) and nx.is_maximal_matching(G, m)


def test_self_loops_are_ignored_by_maximal_matching_as_by_networkx():
    G = nx.Graph([(0, 0), (0, 1), (1, 1), (1, 2)])
    assert nx.is_maximal_matching(G, backend.maximal_matching(G))


@pytest.mark.parametrize("function", [backend.hopcroft_karp_matching, backend.eppstein_matching])
def test_bipartite_matching_has_networkx_cardinality(function):
    rng = np.random.default_rng(3)
    for trial in range(5):
        G = nx.bipartite.random_graph(12, 9, 0.2, seed=int(rng.integers(1 << 30)))
        top = [v for v, d in G.nodes(data=True) if d["bipartite"] == 0]
        m = function(G, top)
        ref = nx.bipartite.hopcroft_karp_matching(G, top)
        assert len(m) == len(ref)  # both list every matched node once per direction
        assert all(m[m[u]] == u and G.has_edge(u, m[u]) for u in m)


def test_bipartite_sets_come_from_networkx():
    G = named(nx.complete_bipartite_graph(2, 3))
    m = backend.hopcroft_karp_matching(G)
    assert len(m) == 4
    with pytest.raises(nx.AmbiguousSolution):
        backend.hopcroft_karp_matching(nx.Graph([(0, 1), (2, 3)]))
    with pytest.raises(nx.NetworkXError, match="not bipartite"):
        backend.hopcroft_karp_matching(nx.complete_graph(3))


# --------------------------------------------------------------------------- devices
def test_every_device_gives_the_cpu_result(device):
    G = lfr_without_loops()
    assert backend.louvain_communities(G, device=device) == backend.louvain_communities(G, device="cpu")
    assert list(backend.louvain_partitions(G, device=device)) == list(backend.louvain_partitions(G, device="cpu"))
    P = named(nx.petersen_graph())
    assert backend.maximal_matching(P, device=device) == backend.maximal_matching(P, device="cpu")
    B = nx.bipartite.random_graph(30, 20, 0.15, seed=4)
    top = [v for v, d in B.nodes(data=True) if d["bipartite"] == 0]
    m = backend.hopcroft_karp_matching(B, top, device=device)
    assert len(m) == len(nx.bipartite.hopcroft_karp_matching(B, top))
    assert all(m[m[u]] == u and B.has_edge(u, m[u]) for u in m)


# ------------------------------------------------------------------ the interface itself
def test_can_run_says_why_not():
    can = backend_interface.can_run
    assert can("louvain_communities", (nx.karate_club_graph(),), {}) is True
    assert "undirected" in can("louvain_communities", (nx.DiGraph([(0, 1)]),), {})
    assert "self-loops" in can("louvain_partitions", (nx.Graph([(0, 0), (0, 1)]),), {})
    assert can("modularity", (nx.Graph([(0, 0), (0, 1)]), [{0, 1}]), {}) is True
    assert can("maximal_matching", (nx.Graph([(0, 0), (0, 1)]),), {}) is True
    assert "positive resolution" in can("louvain_communities", (nx.path_graph(3), "weight", 0), {})
    assert "positive resolution" in can("modularity", (nx.path_graph(3), [{0, 1, 2}]), {"resolution": -1})


def test_negative_weights_are_left_to_networkx():
    G = nx.Graph()
    G.add_edge(0, 1, weight=-1.0)
    with pytest.raises(NotImplementedError, match="negative"):
        backend.louvain_communities(G)


def test_conversions():
    G = nx.path_graph(3)
    bg = backend_interface.convert_from_nx(G, edge_attrs={"weight": 1}, name="louvain_communities")
    assert bg.__networkx_backend__ == "mgmatch" and bg.graph is G and len(bg) == 3
    assert backend_interface.convert_to_nx(bg) is G
    assert backend_interface.convert_to_nx([{0}]) == [{0}]


def test_backend_info_names_functions_the_backend_has():
    info = _mgmatch_nx.get_info()
    assert info["backend_name"] == "mgmatch"
    for name in info["functions"]:
        assert callable(getattr(backend_interface, name))
        nx_function = nx.utils.backends._registered_algorithms[name]
        ours = inspect.signature(getattr(backend_interface, name)).parameters
        for param in inspect.signature(nx_function.orig_func).parameters:  # NetworkX's signature, and more
            assert param in ours


# ---------------------------------------------------------------- dispatch by entry point
def test_networkx_dispatches_to_mgmatch(tmp_path):
    script = textwrap.dedent('''
        import json, networkx as nx
        G = nx.relabel_nodes(nx.karate_club_graph(), lambda v: f"m{v}")
        parts = nx.community.louvain_communities(G, backend="mgmatch", device="cpu")
        q = nx.community.modularity(G, parts, backend="mgmatch")
        matching = nx.maximal_matching(G, backend="mgmatch")
        B = nx.complete_bipartite_graph(2, 3)
        hk = nx.bipartite.maximum_matching(B, backend="mgmatch")
        try:
            nx.community.louvain_communities(nx.DiGraph([(0, 1)]), backend="mgmatch")
            directed = "ran"
        except NotImplementedError as exc:
            directed = str(exc)
        nx.config.backend_priority.algos = ["mgmatch"]
        by_priority = nx.community.louvain_communities(G)
        print(json.dumps({
            "backends": sorted(nx.utils.backends.backends),
            "parts": sorted(sorted(c) for c in parts), "q": q,
            "matching": sorted(map(sorted, matching)), "hk": len(hk), "directed": directed,
            "by_priority": sorted(sorted(c) for c in by_priority),
            "doc": "mgmatch" in nx.community.louvain_communities.__doc__,
        }))
    ''')
    env = backend_environment(tmp_path)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    G = nx.relabel_nodes(nx.karate_club_graph(), lambda v: f"m{v}")
    expected = backend.louvain_communities(G, device="cpu")
    assert "mgmatch" in out["backends"] and out["doc"]
    assert out["parts"] == sorted(sorted(c) for c in expected) == out["by_priority"]
    assert out["q"] == pytest.approx(nx.community.modularity(G, expected), abs=1e-12)
    assert nx.is_maximal_matching(G, {tuple(p) for p in out["matching"]})
    assert out["hk"] == 4 and "not implemented by 'mgmatch'" in out["directed"]


def test_called_directly_the_functions_refuse_what_can_run_refuses():
    with pytest.raises(NotImplementedError, match="undirected"):
        backend.louvain_communities(nx.DiGraph([(0, 1)]))
    with pytest.raises(NotImplementedError, match="self-loops"):
        list(backend.louvain_partitions(nx.Graph([(0, 0), (0, 1)])))
    with pytest.raises(NotImplementedError, match="positive resolution"):
        backend.modularity(nx.path_graph(3), [{0, 1, 2}], resolution=0)
    with pytest.raises(NotImplementedError, match="undirected"):
        backend.hopcroft_karp_matching(nx.DiGraph([(0, 1)]))
