"""Every public algorithm takes what a user has (NetworkX graphs, edge tables, arrays, SciPy
matrices) without building a Graph, and its result maps back to the user's ids by itself."""

import networkx as nx
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import mgmatch
from mgmatch.algorithms.matching import match
from mgmatch.convert import as_graph, communities_as_sets, matching_as_pairs, to_pandas
from mgmatch.errors import ParameterError


def _named(G):
    return nx.relabel_nodes(G, {v: f"v{v}" for v in G})


def test_louvain_takes_a_networkx_graph_and_gives_its_nodes_back():
    G = nx.karate_club_graph()
    direct = mgmatch.louvain(_named(G), device="cpu")
    built = mgmatch.louvain(as_graph(G).graph, device="cpu")
    np.testing.assert_array_equal(direct.communities, built.communities)
    sets = communities_as_sets(direct)
    assert set().union(*sets) == set(_named(G).nodes)
    # the weighted karate club reaches the modularity NetworkX, igraph and NetworKit report
    assert direct.modularity[-1] == pytest.approx(0.4449, abs=5e-4)
    assert nx.community.modularity(G, communities_as_sets(mgmatch.louvain(G, device="cpu"))) == pytest.approx(
        direct.modularity[-1])


@pytest.mark.parametrize("algorithm", ["suitor", "ld", "handshake"])
def test_matchings_take_an_edge_table_with_string_ids(algorithm):
    rng = np.random.default_rng(3)
    u, v = rng.integers(0, 60, 300), rng.integers(0, 60, 300)
    keep = u != v
    w = rng.random(keep.sum())
    df = pd.DataFrame({"src": [f"n{x}" for x in u[keep]], "dst": [f"n{x}" for x in v[keep]], "weight": w})
    res = match(df, algorithm, device="cpu")
    gi = as_graph(df)
    ref = match(gi.graph, algorithm, device="cpu")
    assert matching_as_pairs(res) == matching_as_pairs(ref, gi)
    table = to_pandas(res)
    assert table["u"].str.startswith("n").all()


def test_bipartite_matching_takes_an_edge_table_rows_from_sources():
    df = pd.DataFrame({"src": ["r1", "r2", "r3", "r3"], "dst": ["c1", "c1", "c2", "c1"]})
    res = mgmatch.bipartite_matching(df, device="cpu")
    rows, cols = zip(*sorted(matching_as_pairs(res)))
    assert res.cardinality == 2 and set(rows) <= {"r1", "r2", "r3"} and set(cols) == {"c1", "c2"}
    a = sp.csr_array(([1, 1, 1], ([0, 1, 1], [0, 0, 1])), shape=(2, 2))
    assert mgmatch.bipartite_matching(a, device="cpu").cardinality == 2


def test_arrays_and_modularity_take_user_input():
    res = mgmatch.suitor((["a", "b", "c"], ["b", "c", "d"], [1.0, 3.0, 1.0]), device="cpu")
    assert matching_as_pairs(res) == {("b", "c")}
    G = nx.karate_club_graph()
    labels = mgmatch.louvain(G, device="cpu").communities
    assert mgmatch.modularity(G, labels) == pytest.approx(
        nx.community.modularity(G, communities_as_sets(labels)))


@pytest.mark.parametrize("bad", [3, "graph.mtx", object()])
def test_what_is_not_a_graph_is_one_clear_error(bad):
    with pytest.raises(ParameterError, match="expected a graph"):
        mgmatch.louvain(bad, device="cpu")
