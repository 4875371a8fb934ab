"""Graph generators: invariants of each family, determinism, canonical form, specs, errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.spatial import ConvexHull, Delaunay
from scipy.spatial.distance import pdist, squareform

import mgmatch.generators as gen
from mgmatch import Graph, ParameterError, ResourceError
from mgmatch.generators import (
    GENERATORS,
    builtin_demo_graph,
    delaunay,
    erdos_renyi,
    generate,
    grid2d,
    kron,
    parse_graph_spec,
    random_bipartite,
    rgg,
    rgg_radius,
    split_graph_spec,
)

# One small instance of every family, called with an explicit seed.
SMALL = {
    "delaunay": lambda seed, **kw: delaunay(10, seed=seed, **kw),
    "rgg": lambda seed, **kw: rgg(10, seed=seed, **kw),
    "kron": lambda seed, **kw: kron(10, edge_factor=16, seed=seed, **kw),
    "grid2d": lambda seed, **kw: grid2d(30, 20, seed=seed, delete_fraction=0.2, **kw),
    "random_bipartite": lambda seed, **kw: random_bipartite(
        200, 300, avg_degree=5, seed=seed, **kw
    ),
    "erdos_renyi": lambda seed, **kw: erdos_renyi(500, avg_degree=6, seed=seed, **kw),
}
FAMILIES = sorted(SMALL)


def same_graph(g: Graph, h: Graph) -> bool:
    return (
        g.shape == h.shape
        and g.bipartite == h.bipartite
        and g.weighted == h.weighted
        and all(
            a.dtype == b.dtype and np.array_equal(a, b)
            for a, b in ((g.indptr, h.indptr), (g.indices, h.indices), (g.weights, h.weights))
        )
    )


def points_of(k: int, seed: int) -> np.ndarray:
    """The points that delaunay(k, seed) and rgg(k, seed) are built on."""
    return gen._structure_rng(seed).random((1 << k, 2))


def edge_set(g: Graph) -> set:
    u, v, _ = g.edges()
    return set(zip(u.tolist(), v.tolist()))


def delaunay_reference_keys(points: np.ndarray) -> np.ndarray:
    n = len(points)
    tri = np.sort(Delaunay(points).simplices.astype(np.int64), axis=1)
    first, second, third = tri.T
    keys = np.concatenate([first * n + second, first * n + third, second * n + third])
    return np.unique(keys)


# ----------------------------------------------------------------------------- every family
@pytest.mark.parametrize("family", FAMILIES)
def test_same_seed_same_arrays(family):
    assert same_graph(SMALL[family](7), SMALL[family](7))


@pytest.mark.parametrize("family", FAMILIES)
def test_different_seeds_differ(family):
    g, h = SMALL[family](1), SMALL[family](2)
    structure_same = np.array_equal(g.indptr, h.indptr) and np.array_equal(g.indices, h.indices)
    assert not structure_same
    if family != "random_bipartite":  # unit weights by default
        assert not np.array_equal(g.weights[:50], h.weights[:50])


@pytest.mark.parametrize("family", FAMILIES)
def test_canonical_form_matches_from_edges(family):
    """Generators build CSR directly; the result is what Graph.from_edges gives for the edges."""
    g = SMALL[family](3, weights="random")
    u, v, _ = g.edges()
    if g.bipartite:
        ref = Graph.from_edges(u, v, bipartite=True, shape=g.shape, random_weights=3)
    else:
        ref = Graph.from_edges(u, v, n=g.n, random_weights=3)
    assert same_graph(g, ref)
    unit = SMALL[family](3, weights="unit")
    assert np.array_equal(unit.indices, g.indices)
    if g.bipartite:
        unit_ref = Graph.from_edges(u, v, bipartite=True, shape=g.shape)
    else:
        unit_ref = Graph.from_edges(u, v, n=g.n)
    assert same_graph(unit, unit_ref)


@pytest.mark.parametrize("family", FAMILIES)
def test_canonical_csr(family):
    g = SMALL[family](5)
    assert g.indices.dtype == np.int32 and g.indptr.dtype == np.int32
    assert g.weights.dtype == np.float64
    assert g.indptr[0] == 0 and g.indptr[-1] == g.nnz
    rows = g.row_ids()
    same_row = rows[1:] == rows[:-1]
    assert (np.diff(g.indices)[same_row] > 0).all()  # sorted, no duplicates
    if not g.bipartite:
        assert not (rows == g.indices).any()  # no self-loops
        assert np.array_equal(g.degrees, np.bincount(g.indices, minlength=g.n))  # symmetric
        assert (g.to_scipy() != g.to_scipy().T).nnz == 0


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("weights", ["random", "unit", None])
def test_weights(family, weights):
    g = SMALL[family](4, weights=weights)
    if weights == "random":
        assert g.weighted and g.summary.random_weights_seed == 4
        assert (g.weights > 0).all() and (g.weights <= 1).all()
        assert np.unique(g.weights).size > 0.99 * g.m
    else:
        assert not g.weighted and (g.weights == 1.0).all()


def test_default_weights():
    assert delaunay(5).weighted and rgg(5).weighted and kron(5).weighted
    assert grid2d(4).weighted and erdos_renyi(20, avg_degree=3).weighted
    assert not random_bipartite(5, 5, density=0.5).weighted


# ----------------------------------------------------------------------------- delaunay
@pytest.mark.parametrize("k", [1, 2, 3, 8, 12])
def test_delaunay_euler_count(k):
    g = delaunay(k, seed=11)
    n = 1 << k
    assert g.n == n
    if n >= 3:
        hull = len(ConvexHull(points_of(k, 11)).vertices)
        assert g.m == 3 * n - 3 - hull  # a triangulation with `hull` points on the hull
        assert g.m <= 3 * n - 6 or n < 3
    else:
        assert g.m == 1


def test_delaunay_average_degree_near_six():
    g = delaunay(14, seed=2)
    assert 5.9 < 2 * g.m / g.n < 6.0


def test_delaunay_matches_scipy_on_the_points():
    keys = delaunay_reference_keys(points_of(11, 5))
    g = delaunay(11, seed=5)
    u, v, _ = g.edges()
    assert np.array_equal(u.astype(np.int64) * g.n + v, keys)


def test_delaunay_tiles_agree_with_one_piece(monkeypatch):
    points = points_of(14, 9)
    tiles = gen._delaunay_triangles_tiled(points)  # default tile size: several tiles at n = 2**14
    assert tiles is not None
    monkeypatch.setattr(gen, "_TILE_POINTS", 256)
    small_tiles = gen._delaunay_triangles_tiled(points)
    assert small_tiles is not None
    reference = np.sort(Delaunay(points).simplices, axis=1)
    reference = reference[np.lexsort(reference.T[::-1])]
    for found in (tiles, small_tiles):
        found = np.stack(found, axis=1)
        found = found[np.lexsort(found.T[::-1])]
        assert np.array_equal(found, reference)
    monkeypatch.setattr(gen, "_TILE_MIN_POINTS", 1 << 12)
    u, v, _ = delaunay(14, seed=9).edges()
    assert np.array_equal(u.astype(np.int64) * (1 << 14) + v, delaunay_reference_keys(points))


def test_delaunay_falls_back_to_one_piece(monkeypatch):
    """Margins too thin to certify the interior: the count check fails, one piece is used."""
    points = points_of(12, 4)
    monkeypatch.setattr(gen, "_TILE_POINTS", 256)
    monkeypatch.setattr(gen, "_MARGIN_POINTS", 0.5)
    assert gen._delaunay_triangles_tiled(points) is None
    monkeypatch.setattr(gen, "_TILE_MIN_POINTS", 1 << 10)
    u, v, _ = delaunay(12, seed=4).edges()
    assert np.array_equal(u.astype(np.int64) * (1 << 12) + v, delaunay_reference_keys(points))


def test_demo_graph():
    g = builtin_demo_graph()
    assert g.n == 65536 and 5.9 < 2 * g.m / g.n < 6.0 and g.weighted
    assert same_graph(g, delaunay(16, seed=1))


# ----------------------------------------------------------------------------- rgg
def test_rgg_edges_are_exactly_the_close_pairs():
    k = 9
    g = rgg(k, seed=3)
    dist = squareform(pdist(points_of(k, 3)))
    close = np.argwhere(np.triu(dist < rgg_radius(1 << k), 1))
    assert edge_set(g) == set(map(tuple, close.tolist()))


def test_rgg_expected_degree():
    k = 15
    n = 1 << k
    r = rgg_radius(n)
    g = rgg(k, seed=8)
    # P(|p - q| < r) for two uniform points of the unit square (border effects included)
    p_close = math.pi * r**2 - 8 / 3 * r**3 + r**4 / 2
    expected = (n - 1) * p_close
    assert abs(2 * g.m / n - expected) < 0.02 * expected
    assert abs(expected / (n * math.pi * r**2) - 1) < 0.02  # close to n pi r^2 itself


@pytest.mark.parametrize("family", [delaunay, rgg])
def test_cell_order_numbers_the_same_points_cell_by_cell(family):
    """order='cells' is the graph of the same points numbered cell by cell, row by row: the
    graph of the order drawn relabelled, and a range of ids is a strip of the square (few
    edges cross the middle of the ids, where half of them cross it in the order drawn)."""
    k, seed = 12, 5
    n = 1 << k
    drawn = family(k, seed=seed, weights="unit")
    by_cell = family(k, seed=seed, weights="unit", order="cells")
    side = rgg_radius(n) if family is rgg else 1 / math.sqrt(n)
    cell = np.minimum(np.floor(points_of(k, seed) / side), math.ceil(1 / side) - 1)
    order = np.lexsort((cell[:, 0], cell[:, 1]))  # by row, then column; stable within a cell
    new_id = np.empty(n, dtype=np.int64)
    new_id[order] = np.arange(n)
    assert {tuple(sorted((int(new_id[u]), int(new_id[v])))) for u, v in edge_set(drawn)} == edge_set(by_cell)

    def crossing(g):
        u, v, _ = g.edges()
        return np.mean((u < n // 2) != (v < n // 2))

    assert crossing(by_cell) < 0.05 and crossing(drawn) > 0.4
    weighted = family(k, seed=seed, order="cells")
    assert np.array_equal(weighted.indptr, by_cell.indptr) and np.array_equal(weighted.indices, by_cell.indices)


def test_rgg_radius_formula():
    assert rgg_radius(1 << 20) == pytest.approx(0.55 * math.sqrt(math.log(2**20) / 2**20))
    assert rgg_radius(1) == 0.0


# ----------------------------------------------------------------------------- kron
def test_kron_counts_and_skew():
    k, ef = 14, 16
    g = kron(k, edge_factor=ef, seed=1)
    s = g.summary
    assert g.n == 1 << k
    assert s.input_entries == ef << k
    assert s.self_loops_dropped > 0 and s.duplicates_merged > 0
    assert g.m + s.self_loops_dropped + s.duplicates_merged == s.input_entries
    degrees = g.degrees
    assert degrees.max() > 20 * degrees.mean()
    assert (degrees == 0).sum() > 0.1 * g.n  # R-MAT leaves many vertices untouched


def test_kron_uniform_initiator_is_not_skewed():
    g = kron(12, edge_factor=8, a=0.25, b=0.25, c=0.25, seed=2)
    assert g.degrees.max() < 3 * g.degrees.mean()


def test_kron_all_mass_in_one_quadrant_gives_only_self_loops():
    g = kron(6, edge_factor=4, a=1.0, b=0.0, c=0.0, seed=0)
    assert g.m == 0 and g.summary.self_loops_dropped == 4 << 6


def test_rmat_quadrant_frequencies():
    rng = np.random.default_rng(0)
    a, b, c = 0.57, 0.19, 0.19
    src, dst = gen._rmat_block(rng, 1, 200_000, a, b, c)
    freq = np.bincount(2 * src.astype(np.int64) + dst, minlength=4) / src.size
    assert np.allclose(freq, [a, b, c, 1 - a - b - c], atol=0.005)
    # levels are independent: the top bit behaves as the bottom one
    src, dst = gen._rmat_block(rng, 8, 200_000, a, b, c)
    top = np.bincount(2 * (src >> 7).astype(np.int64) + (dst >> 7), minlength=4) / src.size
    assert np.allclose(top, [a, b, c, 1 - a - b - c], atol=0.005)


def test_kron_edge_factor_changes_density():
    assert kron(10, edge_factor=4, seed=1).m < kron(10, edge_factor=16, seed=1).m


# ----------------------------------------------------------------------------- grid2d
@pytest.mark.parametrize(("nx", "ny"), [(1, 1), (1, 7), (7, 1), (5, 3), (40, 25)])
def test_grid_edge_count_and_structure(nx, ny):
    g = grid2d(nx, ny, weights=None)
    assert g.n == nx * ny
    assert g.m == 2 * nx * ny - nx - ny
    expected = {(y * nx + x, y * nx + x + 1) for y in range(ny) for x in range(nx - 1)}
    expected |= {(y * nx + x, (y + 1) * nx + x) for y in range(ny - 1) for x in range(nx)}
    assert edge_set(g) == expected


def test_grid_square_by_default():
    assert grid2d(6).shape == (36, 36)


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.35, 0.9])
def test_grid_deletions(fraction):
    full = grid2d(60, 40, seed=3)
    g = grid2d(60, 40, seed=3, delete_fraction=fraction)
    assert g.m == full.m - round(fraction * full.m)
    assert edge_set(g) <= edge_set(full)


def test_grid_deletions_are_spread_out():
    g = grid2d(100, 100, delete_fraction=0.5, seed=1, weights=None)
    u, v, _ = g.edges()
    horizontal = (v - u == 1).sum()
    assert abs(horizontal / g.m - 0.5) < 0.03
    rows = u // 100
    assert abs((rows < 50).mean() - 0.5) < 0.03


# ----------------------------------------------------------------------------- bipartite
def test_bipartite_avg_degree_and_density():
    g = random_bipartite(300, 500, avg_degree=7, seed=2)
    assert g.bipartite and g.shape == (300, 500) and g.m == 2100
    assert g.n == 800
    h = random_bipartite(300, 500, density=0.01, seed=2)
    assert h.m == 1500
    dense = random_bipartite(40, 30, density=0.9, seed=2)  # the complement is sampled
    assert dense.m == 1080
    full = random_bipartite(7, 9, density=1.0)
    assert full.m == 63


def test_bipartite_edges_spread_over_rows_and_columns():
    g = random_bipartite(1000, 2000, avg_degree=10, seed=4)
    assert abs(g.degrees.mean() - 10) < 1e-9
    assert g.degrees.std() < 2 * math.sqrt(10)
    cols = np.bincount(g.indices, minlength=2000)
    assert abs(cols.mean() - 5) < 1e-9 and cols.std() < 2 * math.sqrt(5)


@pytest.mark.parametrize(("rows", "cols"), [(0, 0), (0, 5), (5, 0)])
def test_bipartite_empty_shapes(rows, cols):
    g = random_bipartite(rows, cols, density=0.5)
    assert g.shape == (rows, cols) and g.m == 0 and g.indptr.size == rows + 1


def test_bipartite_needs_exactly_one_size_parameter():
    with pytest.raises(ParameterError, match="exactly one"):
        random_bipartite(5, 5)
    with pytest.raises(ParameterError, match="exactly one"):
        random_bipartite(5, 5, avg_degree=1, density=0.1)
    with pytest.raises(ParameterError, match="avg_degree"):
        random_bipartite(5, 5, avg_degree=6)
    with pytest.raises(ParameterError, match="density"):
        random_bipartite(5, 5, density=1.5)


# ----------------------------------------------------------------------------- erdos_renyi
def test_erdos_renyi_counts():
    g = erdos_renyi(1000, avg_degree=8, seed=1)
    assert g.n == 1000 and g.m == 4000
    assert erdos_renyi(30, avg_degree=29).m == 435  # complete graph
    assert erdos_renyi(0, avg_degree=0).n == 0
    assert erdos_renyi(1, avg_degree=0).m == 0


def test_unrank_pairs_is_row_major_order():
    for n in range(2, 40):
        pairs = np.array(list(itertools.combinations(range(n), 2)))
        u, v = gen._unrank_pairs(np.arange(len(pairs)), n)
        assert np.array_equal(np.stack([u, v], axis=1), pairs)
    n = 3_000_000_000  # ranks near 2**62: the float estimate needs correcting
    ranks = np.array([0, n - 2, n - 1, n * (n - 1) // 2 - 1])
    u, v = gen._unrank_pairs(ranks, n)
    assert u.tolist() == [0, 0, 1, n - 2] and v.tolist() == [1, n - 1, 2, n - 1]


def test_sample_distinct_is_uniform():
    rng = np.random.default_rng(0)
    counts = np.zeros(10)
    for _ in range(2000):
        chosen = gen._sample_distinct(rng, 10, 3)
        assert chosen.size == 3 and np.unique(chosen).size == 3
        counts[chosen] += 1
    assert np.allclose(counts / 2000, 0.3, atol=0.04)
    assert gen._sample_distinct(rng, 5, 5).tolist() == [0, 1, 2, 3, 4]


# ----------------------------------------------------------------------------- specs
def test_spec_builds_the_same_graph():
    assert same_graph(parse_graph_spec("kron:k=9,seed=1"), kron(9, seed=1))
    assert same_graph(
        parse_graph_spec(" grid2d : nx = 12 , ny=5, delete_fraction=0.25, weights=unit "),
        grid2d(12, 5, delete_fraction=0.25, weights="unit"),
    )
    assert same_graph(
        parse_graph_spec("random_bipartite:n_rows=50,n_cols=60,density=1e-1,weights=none"),
        random_bipartite(50, 60, density=0.1),
    )


def test_split_spec_value_types():
    name, params = split_graph_spec("rgg:k=1_0,seed=0,weights=null")
    assert name == "rgg" and params == {"k": 10, "seed": 0, "weights": None}
    assert type(params["k"]) is int
    assert split_graph_spec("erdos_renyi:n=10,avg_degree=2.5")[1]["avg_degree"] == 2.5
    assert split_graph_spec("delaunay") == ("delaunay", {})
    assert split_graph_spec("delaunay:") == ("delaunay", {})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "no generator name"),
        (":k=3", "no generator name"),
        ("nope:k=3", "unknown generator 'nope'"),
        ("kron:k", "expected KEY=VALUE"),
        ("kron:k=", "expected KEY=VALUE"),
        ("kron:k=3,,seed=1", "expected KEY=VALUE"),
        ("kron:=3", "expected KEY=VALUE"),
        ("kron:k=3,k=4", "given twice"),
        ("kron:k=3,colour=red", "colour"),
        ("delaunay", "missing a required argument: 'k'"),
        ("kron:k=2.5", "k must be an integer"),
        ("kron:k=31", "k must be between 1 and 30"),
        ("grid2d:nx=5,delete_fraction=1", r"delete_fraction must lie in \[0, 1\)"),
        ("delaunay:k=4,weights=heavy", "weights must be"),
        ("rgg:k=4,order=hilbert", "order must be 'random' or 'cells'"),
    ],
)
def test_spec_errors(spec, message):
    with pytest.raises(ParameterError, match=message):
        parse_graph_spec(spec)


def test_spec_must_be_a_string():
    with pytest.raises(ParameterError, match="string"):
        parse_graph_spec(None)


def test_generate_by_name():
    assert same_graph(generate("delaunay", k=6, seed=2), delaunay(6, seed=2))
    assert set(GENERATORS) == set(FAMILIES)
    with pytest.raises(ParameterError, match="unknown graph generator"):
        generate("delaunay_n20", k=3)
    with pytest.raises(ParameterError, match="parameters: k, seed, weights"):
        generate("rgg", k=3, radius=0.1)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("bad_k", [0, 31, -1, 2.0, "8", True, None])
@pytest.mark.parametrize("family", [delaunay, rgg, kron])
def test_k_must_be_an_integer_in_range(family, bad_k):
    with pytest.raises(ParameterError, match="k must be"):
        family(bad_k)


def test_numpy_integers_are_accepted():
    assert same_graph(delaunay(np.int64(5), seed=np.int32(2)), delaunay(5, seed=2))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: delaunay(4, seed=-1), "seed must be"),
        (lambda: rgg(4, seed=1.5), "seed must be an integer"),
        (lambda: rgg(4, weights="Random"), "weights must be"),
        (lambda: kron(4, edge_factor=0), "edge_factor must be"),
        (lambda: kron(4, a=0.6, b=0.3, c=0.2), r"a \+ b \+ c must not exceed 1"),
        (lambda: kron(4, a=-0.1), "a must lie in"),
        (lambda: kron(4, c=float("nan")), "c must lie in"),
        (lambda: grid2d(0), "nx must be at least 1"),
        (lambda: grid2d(3, 0), "ny must be at least 1"),
        (lambda: grid2d(3, delete_fraction=-0.1), "delete_fraction"),
        (lambda: grid2d(3, delete_fraction=1.0), "delete_fraction"),
        (lambda: erdos_renyi(10, avg_degree=10), "avg_degree must lie in"),
        (lambda: erdos_renyi(-1, avg_degree=0), "n must be at least 0"),
        (lambda: random_bipartite(-1, 3, density=0.5), "n_rows must be"),
    ],
)
def test_bad_parameters(call, message):
    with pytest.raises(ParameterError, match=message):
        call()


def test_graphs_larger_than_memory_are_refused(monkeypatch):
    psutil = pytest.importorskip("psutil")

    class OneGiB:
        total = 2**30

    monkeypatch.setattr(psutil, "virtual_memory", lambda: OneGiB)
    message = r"kron\(k=22, edge_factor=48\) needs about [0-9]+ GiB"
    with pytest.raises(ResourceError, match=message):
        kron(22)
    with pytest.raises(ResourceError, match="delaunay"):
        delaunay(30)
    with pytest.raises(ResourceError, match="random_bipartite"):
        random_bipartite(10**6, 10**6, avg_degree=100)
    assert kron(8).n == 256  # small graphs are unaffected
    # an easy stable-marriage instance counts its women too, not only the pairs
    with pytest.raises(ResourceError, match="an easy instance of 5 men and 100000000 women needs about"):
        gen.sm_easy(5, n_women=10**8)
    assert gen.sm_easy(5, n_women=1000).n_women == 1000


def test_a_preference_table_with_one_large_id_is_refused_not_allocated(monkeypatch):
    # ids are dense, so a stray large id stood for that many people, allocated until the
    # process was killed
    psutil = pytest.importorskip("psutil")
    from mgmatch.preferences import Preferences

    class OneGiB:
        total = 2**30

    monkeypatch.setattr(psutil, "virtual_memory", lambda: OneGiB)
    table = {"man": np.array([0, 3 * 10**9]), "woman": np.array([0, 1]), "man_rank": np.array([0, 0]),
             "woman_rank": np.array([0, 0])}
    with pytest.raises(ResourceError, match="3,000,000,001 men and 2 women needs about 134 GiB"):
        Preferences.from_table(table)
    table["man"] = np.array([0, 1000])
    assert Preferences.from_table(table).n_men == 1001


def test_an_unknown_parameter_is_named_before_a_missing_one():
    # a misspelt parameter leaves its right name missing; the message names the misspelling
    with pytest.raises(ParameterError, match=r"random_bipartite: unknown parameter 'bogus' \(parameters: n_rows"):
        gen.generate("random_bipartite", bogus=1)
    with pytest.raises(ParameterError, match=r"random_bipartite: missing a required argument: 'n_rows'"):
        gen.generate("random_bipartite", n_cols=3)
