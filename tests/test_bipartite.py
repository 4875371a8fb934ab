"""Maximum cardinality bipartite matching: G-PR, APFB and APsB on every backend.

Invariants first (a valid matching, row_match/col_match consistent, a König vertex cover of the
same size), then the reference: the cardinality of SciPy's ``maximum_bipartite_matching``.
"""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numba
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import maximum_bipartite_matching

from mgmatch.algorithms.bipartite import (
    BipartiteConfig,
    BipartiteMatchingResult,
    bipartite_config,
    bipartite_matching,
    check_parameters,
    estimate_gpu_bytes,
    get_bipartite_config,
)
from mgmatch.errors import InputError, ParameterError, ResourceError
from mgmatch.graph import Graph

DATA = Path(__file__).parent / "data"

INITS = ("cheap", "karp-sipser", "none")
CONFIGS = (
    ("gpr", {"variant": "shrink"}),
    ("gpr", {"variant": "noshrink"}),
    ("gpr", {"variant": "first"}),
    ("gpr", {"variant": "shrink", "relabel": "fixed", "relabel_k": 3}),
    ("apfb", {"bfs": "gpubfs-wr", "launch": "ct"}),
    ("apfb", {"bfs": "gpubfs", "launch": "mt"}),
    ("apsb", {"bfs": "gpubfs-wr", "launch": "mt"}),
    ("apsb", {"bfs": "gpubfs", "launch": "ct"}),
)
PERSISTENT = (  # one cooperative launch; on the CPU the launch mode changes nothing, so GPU only
    ("apfb", {"bfs": "gpubfs-wr", "launch": "persistent"}),
    ("apfb", {"bfs": "gpubfs", "launch": "persistent"}),
    ("apsb", {"bfs": "gpubfs-wr", "launch": "persistent"}),
    ("apsb", {"bfs": "gpubfs", "launch": "persistent"}),
)
REAL = {  # file: (shape, structural rank)
    "lp_afiro.mtx": ((27, 51), 27),
    "ash219.mtx": ((219, 85), 85),
    "lp_e226.mtx": ((223, 472), 223),
    "west0479.mtx": ((479, 479), 479),
}


# ----------------------------------------------------------------------------- helpers
def scipy_rank(a) -> int:
    """Cardinality of SciPy's maximum matching (0 for empty shapes)."""
    a = sp.csr_array(a)
    if 0 in a.shape or a.nnz == 0:
        return 0
    return int((maximum_bipartite_matching(a, perm_type="column") >= 0).sum())


def check_result(r: BipartiteMatchingResult, a, expected: int, what: str = "") -> None:
    """A valid matching of ``a`` (pattern, stored zeros included) with ``expected`` pairs and a
    König cover of the same size."""
    a = sp.csr_array(a)
    nr, nc = a.shape
    pattern = sp.csr_array((np.ones(a.nnz), a.indices, a.indptr), shape=a.shape)
    rm, cm = r.row_match, r.col_match
    assert rm.shape == (nr,) and cm.shape == (nc,), what
    assert r.cardinality == expected, f"{what}: cardinality {r.cardinality} != {expected}"
    rows = np.flatnonzero(rm >= 0)
    cols = rm[rows]
    assert np.unique(cols).size == cols.size, f"{what}: a column is matched twice"
    assert (cm[cols] == rows).all(), f"{what}: row_match and col_match disagree"
    assert np.count_nonzero(cm >= 0) == rows.size, f"{what}: col_match has extra pairs"
    if rows.size:
        assert (pattern[rows, cols] != 0).all(), f"{what}: a matched pair is not an edge"
    # König certificate
    assert r.cover_rows.shape == (nr,) and r.cover_cols.shape == (nc,)
    assert int(r.cover_rows.sum() + r.cover_cols.sum()) == r.cardinality, f"{what}: cover size"
    coo = pattern.tocoo()
    assert (r.cover_rows[coo.row] | r.cover_cols[coo.col]).all(), f"{what}: cover misses an edge"
    table = r.to_table()
    assert table["row"].dtype == np.int64 and table["col"].dtype == np.int64
    assert (np.diff(table["row"]) > 0).all() and (rm[table["row"]] == table["col"]).all()


def run_all(graph, a, expected, device, inits=INITS, configs=None):
    if configs is None:
        configs = CONFIGS + (PERSISTENT if device == "gpu" else ())
    for init in inits:
        for algorithm, opts in configs:
            r = bipartite_matching(graph, algorithm, init, device=device, **opts)
            assert r.device == device
            check_result(r, a, expected, f"{algorithm} {init} {opts}")


def random_pattern(nr, nc, density, seed):
    """A random ``nr x nc`` 0/1 matrix (CSR) of about ``density`` filled entries."""
    a = sp.random_array((nr, nc), density=density, random_state=np.random.default_rng(seed), format="csr")
    a.data[:] = 1
    return a


def bip(a) -> Graph:
    a = sp.coo_array(a)
    return Graph.from_scipy(a, bipartite=True, negative="abs")


def mmread(path):
    """A Matrix Market file as a SciPy sparse array (no spmatrix, whatever the SciPy version)."""
    try:
        return sp.coo_array(scipy.io.mmread(path, spmatrix=False))
    except TypeError:  # SciPy without the spmatrix argument
        return sp.coo_array(scipy.io.mmread(path))


def layered_graph(levels: int):
    """The layered structure of SciPy issue 26147, which makes a Hopcroft-Karp DFS without dead-end
    marking exponential: every level has two rows and two columns, both columns of a level are
    adjacent to both rows of the next one, and a free column reaches the top level while the
    bottom level holds no free row. A chain of the same depth carries a real augmenting path.
    Maximum matching: every row."""
    rows, cols = [], []

    def col_of(i, a):
        return 2 * (levels - 1 - i) + a

    for i in range(levels):
        for a in range(2):
            rows.append(2 * i + a)
            cols.append(col_of(i, a))
            if i + 1 < levels:
                for b in range(2):
                    rows.append(2 * (i + 1) + b)
                    cols.append(col_of(i, a))
    rows += [0, 1]
    cols += [2 * levels, 2 * levels]
    r0, c0 = 2 * levels, 2 * levels + 1
    for i in range(levels + 1):
        rows += [r0 + i, r0 + i]
        cols += [c0 + i + 1, c0 + i]
    shape = (r0 + levels + 1, c0 + levels + 2)
    return sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=shape)


# ----------------------------------------------------------------------------- real matrices
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_matrices(name, device, data_dir):
    a = mmread(data_dir / name)
    shape, rank = REAL[name]
    assert a.shape == shape
    g = Graph.from_scipy(a, bipartite=True, negative="abs")
    assert scipy_rank(a) == rank
    run_all(g, a, rank, device)
    # the transpose has the same structural rank
    run_all(g.transpose(), sp.csr_array(a).T, rank, device, inits=("cheap",))


def test_karate_double_cover(device, data_dir):
    path = data_dir / "karate.mtx"
    if path.is_file():
        g = Graph.from_scipy(mmread(path))
    else:
        g = Graph.from_networkx(nx.karate_club_graph(), weight=None)
    assert not g.bipartite and g.n == 34
    a = g.to_scipy()
    assert scipy_rank(a) == 27
    run_all(g, a, 27, device)


@pytest.mark.parametrize("n", [5, 12])
def test_symmetric_graphs_as_double_covers(n, device):
    for nxg in (nx.path_graph(n), nx.cycle_graph(n), nx.star_graph(n - 1), nx.complete_graph(n)):
        g = Graph.from_networkx(nxg, weight=None)
        a = g.to_scipy()
        run_all(g, a, scipy_rank(a), device, inits=("cheap",))


# ----------------------------------------------------------------------------- SciPy edge cases
@pytest.mark.parametrize("shape", [(0, 0), (5, 0), (0, 5), (4, 6), (6, 4)])
def test_empty_shapes_and_no_edges(shape, device):
    a = sp.csr_array(shape)
    g = Graph.from_edges([], [], bipartite=True, shape=shape)
    run_all(g, a, 0, device)
    r = bipartite_matching(g, device=device)
    assert (r.row_match == -1).all() and (r.col_match == -1).all()
    assert r.summary()["cardinality"] == 0


def test_explicit_zeros_are_edges(device):
    a = sp.csr_array((np.array([0.0, 0.0, 2.0]), np.array([1, 0, 0]), np.array([0, 1, 2, 3])), shape=(3, 2))
    assert a.nnz == 3
    run_all(bip(a), a, scipy_rank(a), device)
    assert scipy_rank(a) == 2
    dropped = Graph.from_scipy(a, bipartite=True, zeros="drop")
    assert bipartite_matching(dropped, device=device).cardinality == 1


def test_duplicate_entries(device):
    a = sp.coo_array((np.ones(6), ([0, 0, 0, 1, 1, 2], [1, 1, 1, 1, 0, 1])), shape=(3, 3))
    g = bip(a)
    assert g.m == 4
    a = sp.csr_array(a)
    a.sum_duplicates()
    run_all(g, a, 2, device)


@pytest.mark.parametrize("shape", [(1, 7), (7, 1), (3, 10), (10, 3)])
def test_rectangular_both_ways(shape, device):
    rng = np.random.default_rng(sum(shape))
    a = sp.random_array(shape, density=0.5, random_state=rng, format="csr")
    a.data[:] = 1
    run_all(bip(a), a, scipy_rank(a), device)


def test_perfect_and_deficient(device):
    n = 64
    perm = np.random.default_rng(3).permutation(n)
    perfect = sp.csr_array((np.ones(2 * n), (np.r_[np.arange(n), np.arange(n)], np.r_[perm, (perm + 1) % n])),
                           shape=(n, n))
    run_all(bip(perfect), perfect, n, device)
    # deficient: two rows share a single column, two columns share a single row
    deficient = sp.csr_array((np.ones(6), ([0, 1, 2, 2, 3, 3], [0, 0, 1, 2, 3, 3])), shape=(4, 4))
    run_all(bip(deficient), deficient, scipy_rank(deficient), device)
    assert scipy_rank(deficient) == 3


def test_layered_graph(device):
    small = layered_graph(6)
    run_all(bip(small), small, scipy_rank(small), device, inits=("cheap", "none"))
    deep = layered_graph(400)  # depth far beyond what an unpruned DFS could enumerate
    run_all(bip(deep), deep, deep.shape[0], device, inits=("cheap", "none"))


def test_shrink_lists(device):
    """Large enough for G-PR-SHRKRNL (>= 512 active columns) and deep BFS trees."""
    rng = np.random.default_rng(7)
    n = 3000
    m = int(1.6 * n)
    a = sp.csr_array((np.ones(m), (rng.integers(0, n, m), rng.integers(0, n, m))), shape=(n, n))
    a.sum_duplicates()
    expected = scipy_rank(a)
    for init in ("none", "cheap"):
        r = bipartite_matching(bip(a), "gpr", init, variant="shrink", device=device)
        check_result(r, a, expected, f"shrink {init}")
        assert r.counts["shrinks"] >= 1
    run_all(bip(a), a, expected, device, inits=("karp-sipser",))


@settings(max_examples=40, deadline=None)
@given(
    nr=st.integers(0, 30),
    nc=st.integers(0, 30),
    density=st.floats(0.0, 0.4),
    seed=st.integers(0, 2**31 - 1),
)
def test_random_bipartite_cpu(nr, nc, density, seed):
    a = random_pattern(nr, nc, density, seed)
    run_all(bip(a), a, scipy_rank(a), "cpu", inits=("cheap", "none"))


@pytest.mark.gpu
@settings(max_examples=15, deadline=None)
@given(nr=st.integers(0, 40), nc=st.integers(0, 40), density=st.floats(0.0, 0.3), seed=st.integers(0, 2**31 - 1))
def test_random_bipartite_gpu(nr, nc, density, seed):
    a = random_pattern(nr, nc, density, seed)
    run_all(bip(a), a, scipy_rank(a), "gpu", inits=("cheap", "none"))


# ----------------------------------------------------------------------------- interface
def test_result_object_and_summary(device):
    a = mmread(DATA / "lp_afiro.mtx")
    r = bipartite_matching(bip(a), "apfb", "karp-sipser", device=device)
    s = r.summary()
    json.dumps(s)
    assert s["algorithm"] == "apfb" and s["parameters"]["init"] == "karp-sipser"
    assert (s["n_rows"], s["n_cols"], s["m"]) == (27, 51, a.nnz)
    assert s["cardinality"] == 27 and s["init_cardinality"] <= 27
    assert {"init", "match", "total"} <= set(s["time_s"])
    assert s["counts"]["iterations"] >= 1
    on_cpu = {"threads": numba.get_num_threads()} if device == "cpu" else {}
    assert r.params == {"init": "karp-sipser", "bfs": "gpubfs-wr", "launch": "persistent", "deterministic": False,
                        **on_cpu}
    g = bipartite_matching(bip(a), "gpr", device=device)
    assert g.params == {"init": "cheap", "variant": "shrink", "relabel": "adaptive", "relabel_k": 0.7, **on_cpu}
    assert g.global_relabels >= 1 or g.init_cardinality == 27


@pytest.mark.parametrize(
    "kwargs",
    [
        {"algorithm": "hk"},
        {"init": "random"},
        {"variant": "tiny"},
        {"relabel": "sometimes"},
        {"relabel_k": 0},
        {"relabel_k": -1.0},
        {"relabel_k": float("nan")},
        {"relabel_k": "0.7"},
        {"bfs": "dfs"},
        {"launch": "warp"},
        {"device": "tpu"},
        {"deterministic": "yes"},
        {"deterministic": 1},
        {"algorithm": "gpr", "deterministic": True},
        {"bfs": "gpubfs", "deterministic": True},
        {"threads": 0},
        {"threads": True},
        {"threads": 1.5},
        {"threads": "2"},
    ],
)
def test_bad_parameters(kwargs):
    g = Graph.from_edges([0], [0], bipartite=True)
    with pytest.raises(ParameterError):
        bipartite_matching(g, **kwargs)
    with pytest.raises(ParameterError):
        check_parameters(**kwargs)


def test_bad_input():
    with pytest.raises(InputError):
        bipartite_matching(np.eye(3), device="cpu")


def test_scipy_matrix_input():
    a = sp.csr_array(np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0]]))
    assert bipartite_matching(a, device="cpu").cardinality == 2


def test_memory_estimate_grows():
    small = estimate_gpu_bytes(10, 10, 100)
    assert estimate_gpu_bytes(10, 10, 1000) > small
    assert estimate_gpu_bytes(10, 10, 100, itemsize=8) > small


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1 << 20, 1 << 20, 8), (1 << 20, 1 << 8, 2), (1 << 8, 1 << 20, 1024)])
def test_gpu_memory_estimate_bounds_the_peak(shape):
    # the estimate is what the run is refused by: it must not undercount (CuPy's bincount once
    # made a square graph's run take 14 times the estimate)
    from mgmatch import generators
    from mgmatch.bench._common import device_bytes, gpu_peak_bytes

    n_rows, n_cols, degree = shape
    g = generators.random_bipartite(n_rows, n_cols, avg_degree=degree, seed=1).to("gpu")
    peak = gpu_peak_bytes(lambda: bipartite_matching(g, "apfb", device="gpu"),
                          device_bytes(g.indptr, g.indices, g.weights))["peak_bytes"]
    assert peak <= estimate_gpu_bytes(n_rows, n_cols, g.nnz, g.indices.dtype.itemsize)


@pytest.mark.gpu
def test_gpu_memory_error_names_estimate(monkeypatch):
    import cupy as cp

    monkeypatch.setattr(cp.cuda.runtime, "memGetInfo", lambda: (16, 16))
    monkeypatch.setattr(cp, "get_default_memory_pool", lambda: type("P", (), {"free_bytes": lambda self: 0})())
    with pytest.raises(ResourceError, match="GiB"):
        bipartite_matching(Graph.from_edges([0, 1], [1, 0], bipartite=True), device="gpu")


def test_int64_indices(monkeypatch, device):
    """The int64 instantiation (kernels and Numba twins) gives the same result."""
    import mgmatch.algorithms.bipartite as mod

    monkeypatch.setattr(mod, "_index_dtype", lambda graph: np.dtype(np.int64))
    a = mmread(DATA / "west0479.mtx")
    run_all(bip(a), a, 479, device, inits=("cheap",))


@pytest.mark.gpu
@pytest.mark.parametrize(
    "spec",
    [
        "delaunay:k=15",
        "rgg:k=15",
        "kron:k=13,edge_factor=48",
        "grid2d:nx=80,ny=80,delete_fraction=0.1",  # SciPy slows down sharply on larger grids
        "random_bipartite:n_rows=30000,n_cols=20000,avg_degree=2",
    ],
)
def test_persistent_on_generated_graphs_gpu(spec):
    """The persistent kernel on graphs that take many blocks, phases and BFS levels, and on the
    skewed degrees of R-MAT (a warp strides over a hub's adjacency), against SciPy."""
    from mgmatch.generators import parse_graph_spec

    g = parse_graph_spec(spec)
    g = g if g.bipartite else g.bipartite_double_cover()
    a = g.to_scipy()
    expected = scipy_rank(a)
    for algorithm, opts in PERSISTENT:
        for init in ("cheap", "none"):
            r = bipartite_matching(g, algorithm, init, device="gpu", **opts)
            check_result(r, a, expected, f"{spec} {algorithm} {init} {opts}")
            assert r.bfs_levels >= r.iterations >= 1
            c = r.counts
            assert c["grid_levels"] + c["block_levels"] + c["queue_levels"] == r.bfs_levels
            if c["queue_traversal"]:
                assert algorithm == "apfb" and c["queue_phases"] >= 1
            else:
                assert c["queue_phases"] == c["queue_levels"] == 0
            assert 0 < r.timings["match_bfs"] + r.timings["match_alternate"] <= r.timings["match"]


@pytest.mark.gpu
@pytest.mark.parametrize("queue", [True, False, "after 64 roots"])
@pytest.mark.parametrize(("group", "local"), [(4, 2), (8, 2), (16, 2), (32, 2), (None, 0), (None, 10**6)])
def test_persistent_tunables_gpu(group, local, queue):
    """Every width of the lane groups that expand a frontier column gives the maximum, with
    APFB's search as a work queue, level by level, and level by level until a phase starts with
    at most 64 roots; level by level with the block-local levels off (local 0), on for small
    frontiers, and used for every level."""
    from mgmatch.generators import parse_graph_spec

    tunables = {"persistent_group": group, "persistent_local": local, "persistent_queue": bool(queue)}
    if isinstance(queue, str):
        tunables["queue_max_roots"] = 64
    for spec in ("kron:k=12,edge_factor=16", "delaunay:k=13"):
        g = parse_graph_spec(spec).bipartite_double_cover()
        a = g.to_scipy()
        expected = scipy_rank(a)
        for algorithm, opts in PERSISTENT:
            with bipartite_config(**tunables):
                r = bipartite_matching(g, algorithm, "cheap", device="gpu", **opts)
            check_result(r, a, expected, f"{spec} group {group} local {local} {queue} {algorithm} {opts}")
            if queue == "after 64 roots" and algorithm == "apfb" and spec.startswith("delaunay"):
                # a perfect matching: the first phase has hundreds of roots, the last none
                assert 0 < r.counts["queue_phases"] < r.iterations - 1
                assert r.counts["grid_levels"] + r.counts["block_levels"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("queue", [True, False])
@pytest.mark.parametrize(
    "defines", [{"MGM_EDGES_PER_LANE": 1}, {"MGM_EDGES_PER_LANE": 3}, {"MGM_CLAIM_TEST": 0}, {"MGM_QUEUE_BACKOFF_NS": 0}]
)
def test_persistent_compile_time_settings_gpu(monkeypatch, defines, queue):
    """The kernel's compile-time settings other than the defaults (one or three edges per lane
    and step, the compare-and-swap without the read before it, no back-off while the work queue
    is empty) give the maximum, with int32 and int64 indices."""
    import mgmatch.algorithms.bipartite as mod
    from mgmatch.generators import parse_graph_spec

    for spec in ("kron:k=12,edge_factor=16", "delaunay:k=13"):
        g = parse_graph_spec(spec).bipartite_double_cover()
        a = g.to_scipy()
        expected = scipy_rank(a)
        for idx in (np.int32, np.int64):
            monkeypatch.setattr(mod, "_index_dtype", lambda graph, idx=idx: np.dtype(idx))
            for algorithm, opts in PERSISTENT:
                with bipartite_config(persistent_defines=defines, persistent_queue=queue):
                    r = bipartite_matching(g, algorithm, "cheap", device="gpu", **opts)
                check_result(r, a, expected, f"{spec} {defines} {np.dtype(idx)} {algorithm} {opts}")


def test_persistent_search_mode_follows_the_mean_degree():
    """APFB searches as a work queue on sparse graphs (groups of queue_group lanes), level by
    level on graphs with a larger mean degree; APsB always by levels; the tunable overrides."""
    import mgmatch.gpu.bipartite as gpu_ops

    tune = BipartiteConfig()
    sparse, dense = (1000, 1000 * tune.queue_max_mean_degree), (1000, 1000 * tune.queue_max_mean_degree + 1)
    assert gpu_ops._queue_mode(*sparse, stop_at_first=False, tune=tune)
    assert not gpu_ops._queue_mode(*dense, stop_at_first=False, tune=tune)
    assert not gpu_ops._queue_mode(*sparse, stop_at_first=True, tune=tune)
    assert gpu_ops._group_size(*sparse, queue_mode=True, tune=tune) == tune.queue_group
    assert gpu_ops._group_size(1000, 48000, tune=tune) == 32
    with bipartite_config(persistent_queue=True) as tune:
        assert gpu_ops._queue_mode(*dense, stop_at_first=False, tune=tune)
        assert not gpu_ops._queue_mode(*dense, stop_at_first=True, tune=tune)
    with bipartite_config(persistent_queue=False) as tune:
        assert not gpu_ops._queue_mode(*sparse, stop_at_first=False, tune=tune)


@pytest.mark.parametrize("bad", [
    {"persistent_block": 100}, {"persistent_block": 2048}, {"persistent_block": 0}, {"persistent_block": 512.0},
    {"persistent_blocks_per_sm": 0}, {"persistent_group": 3}, {"persistent_group": 64}, {"persistent_group": True},
    {"persistent_local": -1}, {"persistent_local": None}, {"persistent_queue": 1}, {"persistent_queue": "auto"},
    {"queue_max_mean_degree": -1}, {"queue_max_mean_degree": float("nan")}, {"queue_max_mean_degree": True},
    {"queue_group": None}, {"queue_group": 2}, {"queue_max_roots": 0}, {"queue_max_roots": 1.5},
    {"persistent_defines": {"MGM_CTL_SIZE": 80}}, {"persistent_defines": {"MGM_EDGES_PER_LANE": 0}},
    {"persistent_defines": {"MGM_EDGES_PER_LANE": 9}},
    {"persistent_defines": {"MGM_CLAIM_TEST": 2}}, {"persistent_defines": {"MGM_QUEUE_BACKOFF_NS": 1.5}},
    {"persistent_defines": "MGM_CLAIM_TEST"}, {"persistent_defines": (("MGM_CLAIM_TEST",),)},
    {"persistent_defines": (("MGM_CLAIM_TEST", 0), ("MGM_CLAIM_TEST", 1))}, {"persistent_defines": 1},
    {"deterministic_blocks": 0}, {"deterministic_blocks": 2**31}, {"deterministic_blocks": "ct"},
])
def test_bipartite_config_refuses_bad_tunables(bad):
    """A bad GPU tunable is refused when the block is entered, by a ParameterError naming it."""
    with pytest.raises(ParameterError, match=next(iter(bad))):
        with bipartite_config(**bad):
            pass
    with pytest.raises(ParameterError, match=next(iter(bad))):
        BipartiteConfig(**bad)


def test_bipartite_config_takes_every_meaningful_value():
    """The bounds of each GPU tunable are accepted, None where it means "choose", and the
    compile-time settings are kept as sorted pairs, whichever way they were given."""
    for group in (None, 4, 8, 16, 32):
        assert BipartiteConfig(persistent_group=group).persistent_group == group
    for block in (32, 1024):
        assert BipartiteConfig(persistent_block=block).persistent_block == block
    c = BipartiteConfig(persistent_local=0, persistent_queue=False, queue_max_mean_degree=2.5, queue_group=32,
                        queue_max_roots=1, deterministic_blocks=1)
    assert (c.persistent_local, c.persistent_queue, c.queue_max_mean_degree, c.queue_group, c.queue_max_roots,
            c.deterministic_blocks) == (0, False, 2.5, 32, 1, 1)
    settings = {"MGM_QUEUE_BACKOFF_NS": 0, "MGM_EDGES_PER_LANE": 3, "MGM_CLAIM_TEST": 0}
    by_dict = BipartiteConfig(persistent_defines=settings)
    by_pairs = BipartiteConfig(persistent_defines=list(settings.items()))
    assert by_dict.persistent_defines == (("MGM_CLAIM_TEST", 0), ("MGM_EDGES_PER_LANE", 3), ("MGM_QUEUE_BACKOFF_NS", 0))
    assert by_dict == by_pairs and hash(by_dict) == hash(by_pairs)  # a value, as the kernel cache key needs
    assert BipartiteConfig().persistent_defines == ()


def test_a_bipartite_program_carries_the_tunables_in_force_when_made(monkeypatch):
    """A run takes the configuration in force when it is called, GPU tunables included, and a
    pickled program (what a cluster's worker gets) or configuration keeps them; on the CPU they
    change nothing."""
    import pickle

    import mgmatch.algorithms.bipartite as mod

    programs = []
    real = mod.execute
    monkeypatch.setattr(mod, "execute", lambda program, *a, **k: programs.append(program) or real(program, *a, **k))
    tunables = {"persistent_block": 256, "persistent_blocks_per_sm": 1, "persistent_group": 8, "persistent_local": 0,
                "persistent_queue": True, "queue_max_mean_degree": 3, "queue_group": 16, "queue_max_roots": 64,
                "persistent_defines": {"MGM_EDGES_PER_LANE": 1}, "deterministic_blocks": 7}
    a = layered_graph(20)
    with bipartite_config(**tunables):
        for opts in ({}, {"deterministic": True}):
            check_result(bipartite_matching(bip(a), "apfb", device="cpu", **opts), a, a.shape[0], f"{opts}")
    assert get_bipartite_config() == BipartiteConfig()  # the block's values are gone after it
    assert len(programs) == 2
    for program in programs:
        config = pickle.loads(pickle.dumps(program)).config
        assert config == pickle.loads(pickle.dumps(program.config)) == BipartiteConfig(**tunables)
        assert config.persistent_defines == (("MGM_EDGES_PER_LANE", 1),)
        assert (config.persistent_block, config.queue_max_roots, config.deterministic_blocks) == (256, 64, 7)


@pytest.mark.gpu
def test_tunables_reach_the_launches_gpu(monkeypatch):
    """The values in force when a run starts are the ones its launches use: the persistent
    kernel's compile-time settings (in the kernel's cache key), block size, blocks per
    multiprocessor, lanes per column and search mode, and the deterministic launches' blocks."""
    import mgmatch.gpu.bipartite as gb

    if not gb.persistent_supported():
        pytest.skip("the device takes no cooperative launches")
    defines, persistent, grids = [], [], []
    real_get, real_blocks, real_kernel = gb.get_kernel, gb.cooperative_blocks, gb._kernel
    monkeypatch.setattr(gb, "get_kernel", lambda *a, **k: defines.append(k.get("defines")) or real_get(*a, **k))
    monkeypatch.setattr(gb, "cooperative_blocks",
                        lambda kernel, *size: persistent.append(size) or real_blocks(kernel, *size))

    def kernel(name, dtype):
        launch = real_kernel(name, dtype)
        return lambda grid, block, args: grids.append((name, grid)) or launch(grid, block, args)

    monkeypatch.setattr(gb, "_kernel", kernel)
    a = layered_graph(60)
    g = bip(a)
    with bipartite_config(persistent_block=256, persistent_blocks_per_sm=1, persistent_group=8, persistent_queue=False,
                          persistent_defines={"MGM_EDGES_PER_LANE": 1}, deterministic_blocks=3):
        r = bipartite_matching(g, "apfb", device="gpu")
        det = bipartite_matching(g, "apfb", device="gpu", deterministic=True)
    assert r.cardinality == det.cardinality == a.shape[0]
    assert persistent == [(256, 1)]
    assert {"MGM_EDGES_PER_LANE": 1} in defines
    assert (r.counts["lanes_per_column"], r.counts["queue_traversal"]) == (8, 0)
    det_grids = {grid for name, grid in grids if name.startswith(("cheap_det", "det_"))}
    assert det_grids == {(3,)}
    # outside the block, the defaults again
    persistent.clear()
    defines.clear()
    r = bipartite_matching(g, "apfb", device="gpu")
    default = BipartiteConfig()
    assert persistent == [(default.persistent_block, default.persistent_blocks_per_sm)] and r.cardinality == a.shape[0]
    assert {"MGM_EDGES_PER_LANE": 1} not in defines


@pytest.mark.gpu
def test_persistent_falls_back_without_cooperative_launches(monkeypatch):
    import mgmatch.gpu.bipartite as gpu_ops

    monkeypatch.setattr(gpu_ops, "persistent_supported", lambda: False)
    a = layered_graph(50)
    r = bipartite_matching(bip(a), device="gpu")
    assert r.cardinality == a.shape[0] and "grid_levels" not in r.counts


@pytest.mark.gpu
def test_persistent_is_the_gpu_default_and_agrees_with_ct():
    a = layered_graph(300)
    g = bip(a)
    r = bipartite_matching(g, device="gpu")
    assert r.params["launch"] == "persistent" and r.cardinality == a.shape[0]
    ct = bipartite_matching(g, launch="ct", device="gpu")
    assert ct.cardinality == r.cardinality


def test_default_algorithm_is_apfb():
    r = bipartite_matching(Graph.from_edges([0, 1], [1, 0], bipartite=True), device="cpu")
    assert r.algorithm == "apfb" and r.cardinality == 2


# ----------------------------------------------------------------------------- deterministic runs
DETERMINISTIC = (("apfb", {"deterministic": True}), ("apsb", {"deterministic": True}))


def deterministic_cases():
    """(name, graph, matrix) for the deterministic runs: real matrices both ways, a symmetric graph's
    double cover, SciPy's layered graph, and generated graphs with many phases and levels."""
    from mgmatch.generators import parse_graph_spec

    cases = []
    for name in sorted(REAL):
        a = mmread(DATA / name)
        cases.append((name, bip(a), sp.csr_array(a)))
        cases.append((name + ".T", bip(sp.csr_array(a).T), sp.csr_array(a).T))
    cases.append(("layered", bip(layered_graph(12)), layered_graph(12)))
    for spec in ("delaunay:k=11", "kron:k=10,edge_factor=16", "grid2d:nx=40,ny=40,delete_fraction=0.1",
                 "random_bipartite:n_rows=3000,n_cols=2000,avg_degree=2"):
        g = parse_graph_spec(spec)
        g = g if g.bipartite else g.bipartite_double_cover()
        cases.append((spec, g, g.to_scipy()))
    return cases


def test_deterministic_runs_are_maximum(device):
    """deterministic=True keeps every invariant and the maximum cardinality, for every initial matching."""
    for name, g, a in deterministic_cases():
        run_all(g, a, scipy_rank(a), device, configs=DETERMINISTIC)


def test_deterministic_cheap_matching_is_maximal():
    """The deterministic cheap rounds give a maximal matching: no edge joins two free vertices."""
    from mgmatch.cpu.bipartite import cheap_matching_deterministic

    for name, g, a in deterministic_cases():
        csc = sp.csc_array(a)
        csc.sort_indices()
        mr = np.full(a.shape[0], -1, dtype=np.int64)
        mc = np.full(a.shape[1], -1, dtype=np.int64)
        cheap_matching_deterministic(a.shape[0], a.shape[1], csc.indptr.astype(np.int64),
                                     csc.indices.astype(np.int64), mr, mc)
        rows = np.flatnonzero(mr >= 0)
        assert (mc[mr[rows]] == rows).all(), name
        coo = csc.tocoo()
        assert not ((mr[coo.row] < 0) & (mc[coo.col] < 0)).any(), f"{name}: an edge joins two free vertices"


@pytest.mark.gpu
@pytest.mark.parametrize("blocks", [None, 1, 7])
@pytest.mark.parametrize("index", ["int32", "int64"])
def test_deterministic_gpu_equals_cpu_pair_for_pair(monkeypatch, blocks, index):
    """The deterministic GPU kernels return the CPU twin's matching, whatever the launch size (one
    block, seven, or the default grid) and the index type; the default kernels need not."""
    import mgmatch.algorithms.bipartite as mod

    if index == "int64":
        monkeypatch.setattr(mod, "_index_dtype", lambda graph: np.dtype(np.int64))
    for name, g, a in deterministic_cases():
        for algorithm, opts in DETERMINISTIC:
            for init in INITS:
                cpu = bipartite_matching(g, algorithm, init, device="cpu", **opts)
                with bipartite_config(deterministic_blocks=blocks):
                    gpu = bipartite_matching(g, algorithm, init, device="gpu", **opts)
                what = f"{name} {algorithm} {init} blocks={blocks} {index}"
                check_result(gpu, a, scipy_rank(a), what)
                assert gpu.init_cardinality == cpu.init_cardinality, what
                assert np.array_equal(gpu.row_match, cpu.row_match), f"{what}: the pairs differ"
                assert np.array_equal(gpu.cover_rows, cpu.cover_rows) and np.array_equal(gpu.cover_cols, cpu.cover_cols)
                assert (gpu.iterations, gpu.bfs_levels) == (cpu.iterations, cpu.bfs_levels), what


@pytest.mark.gpu
@settings(max_examples=25, deadline=None)
@given(nr=st.integers(0, 60), nc=st.integers(0, 60), density=st.floats(0.0, 0.3), seed=st.integers(0, 2**31 - 1))
def test_deterministic_gpu_equals_cpu_random(nr, nc, density, seed):
    a = random_pattern(nr, nc, density, seed)
    g = bip(a)
    for algorithm, opts in DETERMINISTIC:
        cpu = bipartite_matching(g, algorithm, "cheap", device="cpu", **opts)
        gpu = bipartite_matching(g, algorithm, "cheap", device="gpu", **opts)
        check_result(gpu, a, scipy_rank(a), f"{algorithm} {nr}x{nc}")
        assert np.array_equal(gpu.row_match, cpu.row_match)


# ----------------------------------------------------------------------------- CPU threads
# Two threads, and every loop shared among them however small (cpu_parallel_min_edges=1), so the
# parallel kernels run on these small graphs; one thread is the sequential reference run.
THREADS = (1, 2)
TWO = min(2, numba.config.NUMBA_NUM_THREADS)
# one configuration per set of threaded kernels: G-GR (G-PR), GPUBFS-WR and GPUBFS, each search
# run to the end (APFB) and stopped at the first path (APsB)
THREAD_CONFIGS = (
    ("gpr", {"variant": "shrink"}),
    ("apfb", {"bfs": "gpubfs-wr"}),
    ("apfb", {"bfs": "gpubfs"}),
    ("apsb", {"bfs": "gpubfs-wr"}),
    ("apsb", {"bfs": "gpubfs"}),
)


def thread_cases():
    """(name, graph, matrix): structured graphs (SciPy's layered graph, a perfect and a deficient
    pattern, generated meshes, R-MAT, random geometric, a grid with holes, unbalanced random) and
    real matrices both ways."""
    from mgmatch.generators import parse_graph_spec

    cases = [("layered", bip(layered_graph(40)), layered_graph(40))]
    for spec in ("delaunay:k=11", "kron:k=10,edge_factor=16", "rgg:k=11", "grid2d:nx=40,ny=40,delete_fraction=0.1",
                 "random_bipartite:n_rows=3000,n_cols=2000,avg_degree=2"):
        g = parse_graph_spec(spec)
        g = g if g.bipartite else g.bipartite_double_cover()
        cases.append((spec, g, g.to_scipy()))
    for name in ("west0479.mtx", "lp_e226.mtx"):
        a = sp.csr_array(mmread(DATA / name))
        cases += [(name, bip(a), a), (name + ".T", bip(a.T), a.T)]
    return cases


@pytest.mark.parametrize("threads", THREADS)
def test_threads_give_the_maximum(threads):
    """Every search and initial matching reaches SciPy's cardinality on one thread and with
    every loop shared among two, and the run reports its threads."""
    with bipartite_config(cpu_parallel_min_edges=1):
        for name, g, a in thread_cases():
            expected = scipy_rank(a)
            for init in INITS:
                for algorithm, opts in THREAD_CONFIGS:
                    r = bipartite_matching(g, algorithm, init, device="cpu", threads=threads, **opts)
                    check_result(r, a, expected, f"{name} {algorithm} {init} {opts} threads={threads}")
                    assert r.params["threads"] == min(threads, TWO)


@settings(max_examples=20, deadline=None)
@given(nr=st.integers(0, 40), nc=st.integers(0, 40), density=st.floats(0.0, 0.4), seed=st.integers(0, 2**31 - 1))
def test_threads_random_bipartite(nr, nc, density, seed):
    a = random_pattern(nr, nc, density, seed)
    with bipartite_config(cpu_parallel_min_edges=1):
        for algorithm, opts in THREAD_CONFIGS + DETERMINISTIC:
            r = bipartite_matching(bip(a), algorithm, "cheap", device="cpu", threads=2, **opts)
            check_result(r, a, scipy_rank(a), f"{algorithm} {opts} {nr}x{nc}")


@pytest.mark.parametrize("parallel_min", [1, 40])
def test_deterministic_runs_are_the_same_on_every_thread_count(parallel_min):
    """deterministic=True, and G-PR (sequential pushes, distance labels), return the same pairs,
    cover, phases and levels on one thread and on two, with every level shared (1) or levels
    of fewer than 40 edges run on the calling thread between shared ones."""
    for name, g, a in deterministic_cases():
        for algorithm, opts in DETERMINISTIC + (("gpr", {"variant": "shrink"}),):
            for init in INITS:
                one = bipartite_matching(g, algorithm, init, device="cpu", threads=1, **opts)
                with bipartite_config(cpu_parallel_min_edges=parallel_min):
                    two = bipartite_matching(g, algorithm, init, device="cpu", threads=2, **opts)
                what = f"{name} {algorithm} {init} parallel_min={parallel_min}"
                check_result(two, a, scipy_rank(a), what)
                assert two.init_cardinality == one.init_cardinality, what
                assert np.array_equal(two.row_match, one.row_match), f"{what}: the pairs differ"
                assert np.array_equal(two.cover_rows, one.cover_rows) and np.array_equal(two.cover_cols, one.cover_cols)
                assert (two.iterations, two.bfs_levels, two.global_relabels) == (
                    one.iterations, one.bfs_levels, one.global_relabels), what


def test_threads_with_int64_indices(monkeypatch):
    """The threaded kernels' int64 instantiation (atomics included) gives the maximum, and the
    deterministic matching of one thread."""
    import mgmatch.algorithms.bipartite as mod
    from mgmatch.generators import parse_graph_spec

    monkeypatch.setattr(mod, "_index_dtype", lambda graph: np.dtype(np.int64))
    g = parse_graph_spec("delaunay:k=10").bipartite_double_cover()
    a = g.to_scipy()
    expected = scipy_rank(a)
    with bipartite_config(cpu_parallel_min_edges=1):
        for algorithm, opts in (("apfb", {}), ("gpr", {}), ("apfb", {"deterministic": True})):
            r = bipartite_matching(g, algorithm, "cheap", device="cpu", threads=2, **opts)
            check_result(r, a, expected, f"int64 {algorithm} {opts}")
        one = bipartite_matching(g, "apfb", "cheap", device="cpu", threads=1, deterministic=True)
        assert np.array_equal(r.row_match, one.row_match)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_double_cover_takes_its_columns_from_its_rows(device, monkeypatch):
    """A double cover is symmetric: its column adjacency is its rows' (no transpose is made),
    and the matchings are those the transposed rows give, pair for pair where the algorithm is
    deterministic."""
    import dataclasses

    from mgmatch.cpu import bipartite as ops
    from mgmatch.generators import parse_graph_spec

    transposed = []
    real = ops.column_adjacency
    monkeypatch.setattr(ops, "column_adjacency", lambda *a: transposed.append(1) or real(*a))

    for spec in ("delaunay:k=10", "kron:k=9,edge_factor=8", "rgg:k=10"):
        g = parse_graph_spec(spec)
        cover = g.bipartite_double_cover()
        assert cover.symmetric and not g.symmetric
        plain = dataclasses.replace(cover, symmetric=False)
        expected = scipy_rank(cover.to_scipy())
        for algorithm, opts in (("gpr", {}), ("apfb", {"deterministic": True}), ("apsb", {})):
            one = {"threads": 1} if device == "cpu" else {}  # one thread: every algorithm repeats itself
            a = bipartite_matching(cover, algorithm, "cheap", device=device, **one, **opts)
            assert not transposed
            b = bipartite_matching(plain, algorithm, "cheap", device=device, **one, **opts)
            assert len(transposed) == (device == "cpu")
            transposed.clear()
            check_result(a, cover.to_scipy(), expected, f"{spec} {algorithm}")
            if device == "cpu" or opts:  # (on the GPU only the deterministic search repeats its pairs)
                assert np.array_equal(a.row_match, b.row_match) and np.array_equal(a.col_match, b.col_match)
    assert bipartite_matching(g, "apfb", device=device).cardinality == expected  # through the cover


def test_shared_cheap_matching_is_the_sequential_one(monkeypatch):
    """On threads the cheap matching is claimed on a shared table, and it is the sequential
    greedy matching, pair for pair, also when some pairs are matched before it starts."""
    from mgmatch.cpu import bipartite as ops

    shared = []
    real = ops._cheap_shared
    monkeypatch.setattr(ops, "_cheap_shared", lambda *a: shared.append(1) or real(*a))
    rng = np.random.default_rng(11)
    for seed in range(12):
        n_rows, n_cols = int(rng.integers(50, 400)), int(rng.integers(50, 400))
        m = sp.random(n_rows, n_cols, density=float(rng.uniform(0.01, 0.1)), random_state=seed, format="csc")
        m.sort_indices()
        col_ptr, col_rows = m.indptr.astype(np.int64), m.indices.astype(np.int64)
        for before in (0, 5):
            mu_row, mu_col = np.full(n_rows, -1), np.full(n_cols, -1)
            for v in range(0, n_cols, 7) if before else ():  # a few pairs matched beforehand
                if col_ptr[v + 1] > col_ptr[v] and mu_row[col_rows[col_ptr[v]]] == -1:
                    mu_row[col_rows[col_ptr[v]]], mu_col[v] = v, col_rows[col_ptr[v]]
            want_r, want_c = mu_row.copy(), mu_col.copy()
            ops._cheap(n_cols, col_ptr, col_rows, want_r, want_c)
            rows_before, cols_before = mu_row.copy(), mu_col.copy()
            with ops.parallel(threads=2, min_edges=1):
                ops.cheap_matching(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col)
            assert np.array_equal(mu_row, want_r) and np.array_equal(mu_col, want_c), (seed, before)
            # the claims in the worst order for them, last columns first: displacements settle it
            holder = np.where(rows_before == -1, n_cols, -1)
            cursor = np.where(cols_before == -1, col_ptr[:-1], -1)
            for start in range(n_cols - 1, -1, -3):
                ops._cheap_claims(max(start - 2, 0), start + 1, col_ptr, col_rows, holder, cursor, n_cols)
            ops._cheap_settle(holder, rows_before, cols_before, n_cols)
            assert np.array_equal(rows_before, want_r) and np.array_equal(cols_before, want_c), (seed, before)
    assert len(shared) == 24  # every one took the shared table


def test_transpose_in_chunks_is_the_transpose():
    """The CSC of row chunks placed in parallel is SciPy's, rows ascending per column, for every
    chunk count (empty chunks, a chunk per row and more among them), and the run's threads
    choose the chunks."""
    from mgmatch.cpu.bipartite import column_adjacency, parallel
    from mgmatch.cpu.graph_build import transpose_chunks, transpose_csr

    rng = np.random.default_rng(4)
    for seed in range(6):
        shape = (int(rng.integers(1, 400)), int(rng.integers(1, 300)))
        m = sp.random(*shape, density=float(rng.uniform(0, 0.08)), random_state=seed, format="csr")
        m.sort_indices()
        ref = m.tocsc()
        ref.sort_indices()
        for dtype in (np.int32, np.int64):
            ptr, idx = m.indptr.astype(dtype), m.indices.astype(dtype)
            for chunks in (1, 2, 3, 8, shape[0], shape[0] + 5):
                col_ptr, col_rows = transpose_csr(ptr, idx, shape[1], chunks=chunks)
                assert col_ptr.dtype == dtype and col_rows.dtype == dtype
                assert np.array_equal(col_ptr, ref.indptr) and np.array_equal(col_rows, ref.indices), (seed, chunks)
            with parallel(threads=2, min_edges=1):
                col_ptr, col_rows = column_adjacency(ptr, idx, shape[1])
            assert np.array_equal(col_ptr, ref.indptr) and np.array_equal(col_rows, ref.indices)
    # one chunk per thread, each of at least min_edges entries, the counts' table within nnz
    assert transpose_chunks(10**6, 1000, 16) == 15
    assert transpose_chunks(10**6, 1000, 4) == 4
    assert transpose_chunks(10**6, 400_000, 16) == 2
    assert transpose_chunks(1000, 10, 16) == 1


def _twin_inputs(g):
    from mgmatch.cpu.graph_build import transpose_csr

    row_ptr, row_cols = g.indptr.astype(np.int32), g.indices.astype(np.int32)
    col_ptr, col_rows = transpose_csr(row_ptr, row_cols, g.n_cols)
    return row_ptr, row_cols, col_ptr, col_rows


@pytest.mark.parametrize("spec", ["delaunay:k=11", "kron:k=10,edge_factor=16", "random_bipartite:n_rows=900,n_cols=700,avg_degree=2"])
def test_threaded_twins_keep_their_guarantees(spec):
    """The twins on two threads, every loop shared: G-GR's labels are the BFS distances of one
    thread (and maxLevel with them); the cheap matchings are maximal, and the deterministic one
    is the one-thread matching."""
    from mgmatch.cpu import bipartite as ops
    from mgmatch.generators import parse_graph_spec

    g = parse_graph_spec(spec)
    g = g if g.bipartite else g.bipartite_double_cover()
    nr, nc = g.n_rows, g.n_cols
    row_ptr, row_cols, col_ptr, col_rows = _twin_inputs(g)
    coo = g.to_scipy().tocoo()

    def cheap(threads, fn):
        mr, mc = np.full(nr, -1, np.int32), np.full(nc, -1, np.int32)
        with ops.parallel(threads, min_edges=1):
            fn(nr, nc, col_ptr, col_rows, mr, mc)
        rows = np.flatnonzero(mr >= 0)
        assert (mc[mr[rows]] == rows).all() and np.count_nonzero(mc >= 0) == rows.size
        assert not ((mr[coo.row] < 0) & (mc[coo.col] < 0)).any(), "an edge joins two free vertices"
        return mr, mc

    mr, mc = cheap(2, ops.cheap_matching)
    det = [cheap(t, ops.cheap_matching_deterministic) for t in THREADS]
    assert np.array_equal(det[0][0], det[1][0]) and np.array_equal(det[0][1], det[1][1])

    # labels from a half-built matching: the unmatched rows are the sources
    mr[::3] = -1
    ops.fix_matching(mr, mc, rows_are_truth=True)
    labels = []
    for threads in THREADS:
        psi_row, psi_col = np.empty(nr, np.int32), np.empty(nc, np.int32)
        with ops.parallel(threads, min_edges=1):
            max_level = ops.global_relabel(nr, nc, row_ptr, row_cols, mr, mc, psi_row, psi_col)
        labels.append((max_level, psi_row, psi_col))
    assert labels[0][0] == labels[1][0]
    assert np.array_equal(labels[0][1], labels[1][1]) and np.array_equal(labels[0][2], labels[1][2])
    assert (labels[1][1][mr == -1] == 0).all()


def test_threads_setting_is_restored_and_bounded():
    """A run on one thread leaves Numba's thread count as it was; more threads than Numba's pool
    take the pool; the threshold is a positive integer."""
    before = numba.get_num_threads()
    g = Graph.from_edges([0, 1], [1, 0], bipartite=True)
    assert bipartite_matching(g, device="cpu", threads=1).params["threads"] == 1
    assert numba.get_num_threads() == before
    big = numba.config.NUMBA_NUM_THREADS + 3
    assert bipartite_matching(g, device="cpu", threads=big).params["threads"] == numba.config.NUMBA_NUM_THREADS
    for bad in (0, -1, 1.5, True, None):
        with pytest.raises(ParameterError, match="cpu_parallel_min_edges"):
            with bipartite_config(cpu_parallel_min_edges=bad):
                pass


def test_bench_times_each_thread_count():
    """The benchmark gives a row per implementation and thread count (the scaling curve), each
    with SciPy's cardinality, and refuses a thread count that is not one."""
    from mgmatch.bench import bipartite as bench

    g = Graph.from_edges([0, 1, 2], [1, 2, 0])
    rows = bench.run([("triangle", g)], device="cpu", repeats=1, timeout=30, threads=(1, 2))
    ours = [r for r in rows if r["impl"] != "scipy"]
    assert sorted(r["threads"] for r in ours if r["impl"] == "apfb") == [1, TWO]
    assert {r["max_size"] for r in rows} == {3} and not any("error" in r for r in rows)
    with pytest.raises(ParameterError, match="threads"):
        bench.run([("triangle", g)], device="cpu", repeats=1, timeout=30, threads=0)


def test_bench_igraph_peer_finds_the_same_cardinality():
    """igraph's push-relabel runs beside SciPy when installed: a row of its own with the same
    maximum cardinality, and our rows carry the ratio to it."""
    pytest.importorskip("igraph")
    from mgmatch.bench import bipartite as bench

    rows = bench.run(["kron:k=10,seed=3,edge_factor=8"], device="cpu", repeats=1, timeout=60)
    peer = [r for r in rows if r["impl"] == "igraph"]
    assert len(peer) == 1 and not peer[0]["timed_out"]
    scipy_size = next(r["max_size"] for r in rows if r["impl"] == "scipy")
    assert peer[0]["max_size"] == scipy_size > 0
    ours = [r for r in rows if r["impl"] not in ("scipy", "igraph")]
    assert ours and all(r["max_size"] == scipy_size and r["speedup_vs_igraph"] > 0 and "error" not in r for r in ours)
