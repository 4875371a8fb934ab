"""as_graph: every input type builds the graph Graph.from_edges builds; renumbering of ids that
are not dense integers, and results handed back in the user's ids."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_bipartite_matching

import mgmatch
from mgmatch.convert import (
    GraphInput,
    VertexMap,
    as_graph,
    communities_as_sets,
    matching_as_pairs,
    renumber_ids,
    to_arrow,
    to_pandas,
)
from mgmatch.errors import InputError, ParameterError

pd = pytest.importorskip("pandas")

SRC = np.array([0, 1, 2, 3, 4, 5, 2, 0])
DST = np.array([1, 2, 0, 4, 5, 3, 3, 5])
W = np.array([1.0, 2.0, 3.0, 1.5, 2.5, 0.5, 4.0, 1.0])


def same_graph(a: mgmatch.Graph, b: mgmatch.Graph) -> None:
    assert (a.n_rows, a.n_cols, a.bipartite, a.weighted) == (b.n_rows, b.n_cols, b.bipartite, b.weighted)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.weights, b.weights)


# ------------------------------------------------------------------- every input type
def _inputs():
    df = pd.DataFrame({"src": SRC, "dst": DST, "weight": W})
    return {
        "tuple of numpy": (SRC, DST, W),
        "list of lists": [SRC.tolist(), DST.tolist(), W.tolist()],
        "pyarrow arrays": (pa.array(SRC), pa.array(DST), pa.array(W)),
        "pandas series": (df["src"], df["dst"], df["weight"]),
        "pandas": df,
        "pyarrow table": pa.Table.from_pandas(df),
        "pyarrow batch": pa.RecordBatch.from_pandas(df),
        "scipy": sp.coo_array((W, (SRC, DST)), shape=(6, 6)),
    }


@pytest.mark.parametrize("name", list(_inputs()))
def test_every_input_type_builds_the_same_graph(name):
    ref = mgmatch.Graph.from_edges(SRC, DST, W)
    gi = as_graph(_inputs()[name])
    assert isinstance(gi, GraphInput)
    same_graph(gi.graph, ref)
    assert not gi.renumbered and gi.vertices.ids.tolist() == list(range(6))


def test_arrays_on_either_device_build_the_same_graph(device):
    xp = pytest.importorskip("cupy") if device == "gpu" else np
    gi = as_graph((xp.asarray(SRC), xp.asarray(DST), xp.asarray(W)))
    same_graph(gi.graph, mgmatch.Graph.from_edges(SRC, DST, W))
    big = xp.asarray(np.array([2**40, 3, 2**41]))
    gi = as_graph((big, xp.roll(big, 1)))
    assert gi.vertices.ids.tolist() == [3, 2**40, 2**41] and gi.graph.m == 3


@pytest.mark.gpu
def test_cudf_edge_table_builds_the_same_graph():
    cudf = pytest.importorskip("cudf")
    df = cudf.DataFrame({"src": SRC, "dst": DST, "weight": W})
    gi = as_graph(df)
    assert gi.source == "cudf"
    same_graph(gi.graph, mgmatch.Graph.from_edges(SRC, DST, W))
    names = cudf.DataFrame({"a": ["x", "y"], "b": ["y", "z"]})
    gi = as_graph(names, src="a", dst="b")
    assert gi.vertices.ids.tolist() == ["x", "y", "z"] and gi.graph.m == 2


def test_a_graph_is_returned_as_it_is():
    g = mgmatch.Graph.from_edges(SRC, DST, W)
    gi = as_graph(g)
    assert gi.graph is g and gi.source == "graph" and not gi.renumbered


def test_networkx_graph_matches_from_networkx_and_keeps_isolated_nodes():
    G = nx.Graph()
    G.add_nodes_from(["iso", "a"])
    G.add_weighted_edges_from([("a", "b", 2.0), ("b", "c", 1.0), ("c", "a", 3.0)])
    gi = as_graph(G)
    assert gi.vertices.renumbered and gi.vertices.ids.tolist() == ["iso", "a", "b", "c"]  # G.nodes order
    same_graph(gi.graph, mgmatch.Graph.from_networkx(G))
    assert gi.graph.n == 4 and gi.graph.degrees[0] == 0


def test_networkx_integer_nodes_in_order_are_not_renumbered():
    gi = as_graph(nx.path_graph(5))
    assert not gi.renumbered and gi.graph.m == 4


def test_networkx_multigraph_sums_parallel_edges():
    G = nx.MultiGraph()
    G.add_edge(0, 1, weight=2.0)
    G.add_edge(0, 1, weight=3.0)
    G.add_edge(1, 2, weight=1.0)
    g = as_graph(G).graph
    assert g.m == 2 and g.neighbours(0)[1].tolist() == [5.0]


def test_networkx_weight_attribute_and_none():
    G = nx.Graph()
    G.add_edge("x", "y", cost=7.0, weight=2.0)
    assert as_graph(G, weight="cost").graph.weights.tolist() == [7.0, 7.0]
    g = as_graph(G, weight=None).graph
    assert g.weights.tolist() == [1.0, 1.0] and not g.weighted


def test_networkx_bipartite_by_node_attribute():
    G = nx.Graph()
    G.add_nodes_from(["r1", "r2"], bipartite=0)
    G.add_nodes_from(["c1", "c2", "c3"], bipartite=1)
    G.add_edges_from([("r1", "c1"), ("c2", "r1"), ("r2", "c1")])
    gi = as_graph(G, bipartite=True)
    assert gi.graph.bipartite and gi.graph.shape == (2, 3)
    pairs = matching_as_pairs(mgmatch.bipartite_matching(gi.graph, device="cpu"), gi)
    assert len(pairs) == 2 and all(G.has_edge(r, c) and r.startswith("r") for r, c in pairs)
    G.add_node("loose")
    with pytest.raises(InputError, match="'bipartite' attribute"):
        as_graph(G, bipartite=True)


# ------------------------------------------------------------------------ renumbering
def test_string_ids_are_renumbered_sorted_and_map_back():
    s = np.array(["d", "b", "a", "d"], dtype=object)
    t = np.array(["b", "c", "c", "a"], dtype=object)
    gi = as_graph((s, t))
    assert gi.vertices.renumbered and gi.vertices.ids.tolist() == ["a", "b", "c", "d"]
    ref = mgmatch.Graph.from_edges([3, 1, 0, 3], [1, 2, 2, 0])
    same_graph(gi.graph, ref)
    assert gi.vertices.to_original(np.array([3, 0, -1])).tolist() == ["d", "a", None]
    assert gi.vertices.to_dense(["c", "a"]).tolist() == [2, 0]
    with pytest.raises(InputError, match="'zz' is not in the graph"):
        gi.vertices.to_dense(["zz"])


def test_sparse_64_bit_ids_are_renumbered_dense_ones_are_not():
    big = np.array([2**40, 5, 2**62], dtype=np.int64)
    gi = as_graph((big, np.roll(big, 1)))
    assert gi.vertices.renumbered and gi.vertices.ids.tolist() == sorted(big.tolist()) and gi.graph.n == 3
    small = as_graph((np.array([0, 7]), np.array([7, 9])))
    assert not small.renumbered and small.graph.n == 10  # ids kept: vertices 1..6, 8 isolated
    forced = as_graph((np.array([0, 7]), np.array([7, 9])), renumber=True)
    assert forced.renumbered and forced.graph.n == 3 and forced.vertices.ids.tolist() == [0, 7, 9]


def test_uint64_ids_beyond_int64_are_renumbered():
    ids = np.array([2**64 - 1, 3], dtype=np.uint64)
    gi = as_graph((ids, ids[::-1].copy()))
    assert gi.vertices.renumbered and gi.graph.n == 2 and gi.graph.m == 1


def test_negative_ids_are_renumbered_and_refused_without_renumbering():
    gi = as_graph((np.array([-5, 0]), np.array([0, 3])))
    assert gi.vertices.ids.tolist() == [-5, 0, 3]
    with pytest.raises(InputError, match="negative"):
        as_graph((np.array([-5, 0]), np.array([0, 3])), renumber=False)
    with pytest.raises(InputError, match="integer vertex ids"):
        as_graph((["a"], ["b"]), renumber=False)


def test_ids_of_mixed_types_keep_first_occurrence_order():
    vm, (a, b) = renumber_ids([np.array([1, "a"], dtype=object), np.array(["a", (2, 3)], dtype=object)])
    assert vm.ids.tolist() == [1, "a", (2, 3)] and a.tolist() == [0, 1] and b.tolist() == [1, 2]


def test_integral_float_ids_are_integers_fractional_ones_are_refused():
    gi = as_graph((np.array([0.0, 1.0]), np.array([1.0, 2.0])))
    assert gi.graph.n == 3 and not gi.renumbered
    with pytest.raises(InputError, match="1.5 is not an integer"):
        as_graph((np.array([0.0, 1.5]), np.array([1.0, 2.0])))


def test_bipartite_rows_and_columns_are_numbered_apart():
    df = pd.DataFrame({"user": ["u1", "u2", "u2", "u3"], "item": ["x", "x", "y", "y"]})
    gi = as_graph(df, src="user", dst="item", bipartite=True, weight=None)
    assert gi.graph.shape == (3, 2)
    assert gi.vertices.ids.tolist() == ["u1", "u2", "u3"] and gi.columns.ids.tolist() == ["x", "y"]
    res = mgmatch.bipartite_matching(gi.graph, device="cpu")
    ref = maximum_bipartite_matching(gi.graph.to_scipy(), perm_type="column")
    assert res.cardinality == int((ref >= 0).sum()) == 2
    edges = set(zip(df["user"], df["item"]))
    pairs = matching_as_pairs(res, gi)
    assert len(pairs) == 2 and pairs <= edges
    assert len({r for r, _ in pairs}) == len({c for _, c in pairs}) == 2
    table = to_pandas(res, gi)
    assert set(zip(table["row"], table["col"])) == pairs


# ---------------------------------------------------------------------- table columns
def test_table_column_names_are_chosen():
    df = pd.DataFrame({"a": SRC, "b": DST, "w": W, "t": np.arange(8)})
    same_graph(as_graph(df, src="a", dst="b", weight="w").graph, mgmatch.Graph.from_edges(SRC, DST, W))
    same_graph(as_graph(pa.Table.from_pandas(df), src="a", dst="b", weight="w").graph,
               mgmatch.Graph.from_edges(SRC, DST, W))


def test_table_without_weight_column():
    df = pd.DataFrame({"src": SRC, "dst": DST})
    g = as_graph(df).graph
    assert not g.weighted and g.m == 8
    with pytest.raises(InputError, match="no weight column 'w'"):
        as_graph(df, weight="w")
    with pytest.raises(InputError, match="no weight column 'weight'.*weight=None"):  # weights elsewhere
        as_graph(df.assign(score=W))
    assert not as_graph(df.assign(score=W), weight=None).graph.weighted


@pytest.mark.parametrize("make", [lambda df: df, pa.Table.from_pandas], ids=["pandas", "pyarrow"])
def test_table_errors_name_the_problem(make):
    df = pd.DataFrame({"src": ["a", None], "dst": ["b", "c"]})
    with pytest.raises(InputError, match="column 'src' has missing vertex ids"):
        as_graph(make(df))
    with pytest.raises(InputError, match="no src column 'from'"):
        as_graph(make(df), src="from")
    bad_w = pd.DataFrame({"src": [0], "dst": [1], "weight": ["heavy"]})
    with pytest.raises(InputError, match="not numeric"):
        as_graph(make(bad_w))
    nan_w = pd.DataFrame({"src": [0, 1], "dst": [1, 2], "weight": [1.0, np.nan]})
    with pytest.raises(InputError, match="weight column 'weight' has missing values"):
        as_graph(make(nan_w))
    null_w = pd.DataFrame({"src": [0, 1], "dst": [1, 2], "weight": pd.array([1, None], dtype="Int64")})
    with pytest.raises(InputError, match="weight column 'weight' has missing values"):
        as_graph(make(null_w))


def test_array_errors_name_the_problem():
    with pytest.raises(InputError, match="src has 2 entries but dst has 1"):
        as_graph(([0, 1], [1]))
    with pytest.raises(InputError, match=r"\(src, dst\) or \(src, dst, weight\)"):
        as_graph(([0], [1], [1.0], [2.0]))
    with pytest.raises(InputError, match="weight has shape"):
        as_graph(([0, 1], [1, 2], [1.0]))
    with pytest.raises(InputError, match="missing vertex ids"):
        as_graph((["a", None], ["b", "c"]))
    with pytest.raises(InputError, match="cannot make a graph from a builtins.dict"):
        as_graph({"src": [0]})
    with pytest.raises(InputError, match="1-D"):
        as_graph((np.zeros((2, 2), dtype=int), np.zeros((2, 2), dtype=int)))
    with pytest.raises(ParameterError, match="renumber"):
        as_graph(([0], [1]), renumber="yes")
    with pytest.raises(ParameterError, match="weight must be"):
        as_graph(([0], [1]), weight=3)


def test_empty_inputs():
    gi = as_graph((np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)))
    assert gi.graph.n == 0 and gi.graph.m == 0
    gi = as_graph(pd.DataFrame({"src": pd.Series([], dtype=object), "dst": pd.Series([], dtype=object)}))
    assert gi.graph.n == 0
    assert communities_as_sets(np.empty(0, dtype=np.int64)) == []
    gi = as_graph(nx.empty_graph(3))
    assert gi.graph.n == 3 and gi.graph.m == 0


def test_canonicalisation_options_pass_through():
    gi = as_graph(([0, 0, 1], [1, 1, 1], [1.0, 4.0, 2.0]), duplicates="sum")
    assert gi.graph.m == 1 and gi.graph.weights.tolist() == [5.0, 5.0]  # the self-loop dropped
    with pytest.raises(InputError, match="negative"):
        as_graph(([0], [1], [-1.0]))


# -------------------------------------------------------------------------- results out
def test_louvain_in_user_ids_equals_louvain_on_integer_ids():
    G = nx.karate_club_graph()
    names = {v: f"member-{v:02d}" for v in G}
    H = nx.relabel_nodes(G, names)
    gi = as_graph(H, weight=None)
    assert gi.vertices.renumbered
    res = mgmatch.louvain(gi.graph, device="cpu")
    ref = mgmatch.louvain(mgmatch.Graph.from_networkx(G, weight=None), device="cpu")
    assert communities_as_sets(res, gi) == [{names[v] for v in c} for c in communities_as_sets(ref)]
    parts = communities_as_sets(res, gi)
    assert nx.community.is_partition(H, parts)
    q = nx.community.modularity(H, parts, weight=None)
    assert q == pytest.approx(res.modularity[-1], abs=1e-12)
    df = to_pandas(res, gi)
    assert df["vertex"].tolist() == list(H.nodes) and df["community"].tolist() == res.communities.tolist()
    levels = to_arrow(res, gi, all_levels=True)
    assert levels.column_names == ["level", "vertex", "community"] and levels.num_rows == 34 * len(res.levels)


def test_matching_pairs_are_a_maximal_matching_of_the_user_graph():
    G = nx.relabel_nodes(nx.petersen_graph(), {v: f"p{v}" for v in range(10)})
    gi = as_graph(G, weight=None)
    pairs = matching_as_pairs(mgmatch.suitor(gi.graph, device="cpu"), gi)
    assert nx.is_maximal_matching(G, pairs)
    table = to_arrow(mgmatch.suitor(gi.graph, device="cpu"), gi)
    assert set(zip(table.column("u").to_pylist(), table.column("v").to_pylist())) == pairs
    assert table.column("weight").to_pylist() == [1.0] * len(pairs)


def test_results_without_a_map_keep_dense_ids():
    res = mgmatch.louvain(mgmatch.Graph.from_edges(SRC, DST), device="cpu")
    assert to_pandas(res)["vertex"].tolist() == list(range(6))
    assert communities_as_sets(res) == communities_as_sets(res.communities, VertexMap.identity(6))
    with pytest.raises(ParameterError, match="GraphInput or VertexMap"):
        communities_as_sets(res, {"a": 0})


def test_summary_says_what_happened():
    s = as_graph(pd.DataFrame({"src": ["a"], "dst": ["b"]})).summary()
    assert s == {"input": "pandas", "renumbered": True,
                 "vertices": {"renumbered": True, "vertices": 2, "id_type": "str"}}
    s = as_graph(sp.random(3, 4, density=0.5, format="csr", random_state=1)).summary()
    assert s["input"] == "scipy" and not s["renumbered"] and s["columns"]["vertices"] == 4


def test_string_ids_numbered_by_arrow_as_python_sorts_them():
    # the Arrow path (text ids) gives the order and the numbers np.unique gives on Python strings
    import pyarrow as pa

    rng = np.random.default_rng(4)
    words = np.array(["b", "a", "ä", "Z", "zz", "z", "", "日本", "a b", "éa", "e"], dtype=object)
    src, dst = words[rng.integers(0, words.size, 200)], words[rng.integers(0, words.size, 200)]
    ids, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
    for arrays in ([src, dst], [pa.array(src, type=pa.string()), pa.chunked_array([dst[:50], dst[50:]], type=pa.string())]):
        vm, (a, b) = renumber_ids(arrays)
        assert vm.renumbered and vm.ids.tolist() == ids.tolist()
        assert a.tolist() + b.tolist() == inverse.tolist()


def test_ids_kept_counts_distinct_ids_without_sorting():
    from mgmatch.convert import ids_kept

    assert ids_kept([np.arange(5000), np.arange(5000)[::-1]])
    spread = np.arange(0, 4000, 2)  # 2,000 distinct ids up to 3,998: within twice plus 1,024
    assert ids_kept([spread]) and not ids_kept([np.arange(0, 6000, 3)])  # 2,000 up to 5,997: not
    assert not ids_kept([np.array([-1, 2])]) and not ids_kept([np.array([2**63], dtype=np.uint64)])
    assert not ids_kept([np.array(["a"], dtype=object)]) and ids_kept([np.empty(0, dtype=np.int64)])
