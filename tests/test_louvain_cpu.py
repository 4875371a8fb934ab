"""The CPU twin of Louvain: its passes against NumPy references (its sweeps against one that
decides by the GPU kernels' rules, equal scores included), the labels it gave before its passes
ran on every thread, and the same results on one thread and on two (its decisions must not
depend on the thread count)."""

from __future__ import annotations

import contextlib
import hashlib

import networkx as nx
import numba
import numpy as np
import pytest

from mgmatch import Graph, generators
from mgmatch.algorithms import louvain_program as LP
from mgmatch.algorithms.louvain import louvain
from mgmatch.cpu import louvain as twin

two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                 reason="needs a Numba thread pool of two threads or more")


@contextlib.contextmanager
def threads(k: int):
    """Numba's thread count for this thread set to ``k`` for the block."""
    before = numba.get_num_threads()
    numba.set_num_threads(k)
    try:
        yield
    finally:
        numba.set_num_threads(before)


#: Graphs whose largest batches (above ``_SERIAL_BELOW`` stored entries) run on every thread,
#: with the labels the twin gave when it moved one batch at a time: levels, communities, the
#: last modularity and a SHA-256 (first 16 digits) of the levels as int64.
GOLDEN = {
    "kron-13": (3, 834, 0.07220067018958778, "f78e46c1646b7c5c"),
    "rgg-15": (5, 84, 0.9677643256333085, "36572691783ca76e"),
    "delaunay-15": (5, 51, 0.9444773783408812, "d718e025b7a230fc"),
}


@pytest.fixture(scope="module")
def graphs():
    out = {}
    for name in GOLDEN:
        kind, k = name.split("-")
        out[name] = getattr(generators, kind)(int(k), seed=1)
    return out


def _digest(levels) -> str:
    h = hashlib.sha256()
    for lv in levels:
        h.update(np.ascontiguousarray(lv, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def _level0(g):
    """Level 0 of ``g`` as the program starts it: CSR, fixed-point weights, k_i, buckets."""
    indptr = g.indptr.astype(np.int64)
    wfix = twin.fixed_point(g.weights, 2.0**LP._shift(float(g.weights.max()), g.nnz))
    loop = np.zeros(g.n, dtype=np.int64)
    return indptr, g.indices.astype(np.int32), wfix, loop, twin.strengths(indptr, wfix, loop)


def _parallel_batches(g) -> int:
    """How many batches of level 0 of ``g`` are decided by every thread."""
    indptr = g.indptr.astype(np.int64)
    buckets = twin.degree_buckets(indptr, LP.MOVE_BUCKETS)
    ws = twin.make_move_workspace(g.n, int(np.diff(indptr).max()), buckets,
                                  slices=LP._move_slices(LP.LouvainConfig(), buckets))
    twin._plan(indptr, ws)
    return int(ws["parallel"].sum())


# ------------------------------------------------------------------------ whole runs
@two_threads
@pytest.mark.parametrize("name", list(GOLDEN))
def test_same_labels_on_one_and_two_threads_and_as_before(graphs, name):
    g = graphs[name]
    with threads(2):  # level 0 has batches on every thread
        assert _parallel_batches(g) > 0
    with threads(1):
        one = louvain(g, device="cpu")
    with threads(2):
        two = louvain(g, device="cpu")
    assert len(one.levels) == len(two.levels)
    for a, b in zip(one.levels, two.levels, strict=True):
        np.testing.assert_array_equal(a, b)
    assert one.modularity == two.modularity  # exact: the sums are integers
    assert [lv["iterations"] for lv in one.timings["levels"]] == [lv["iterations"] for lv in two.timings["levels"]]
    levels, communities, q, digest = GOLDEN[name]
    assert (len(one.levels), one.n_communities, one.modularity[-1], _digest(one.levels)) == (
        levels, communities, q, digest)


@two_threads
def test_two_partitions_on_two_threads_take_the_one_partition_labels(graphs):
    g = graphs["rgg-15"]
    with threads(1):
        one = louvain(g, device="cpu")
    with threads(2):
        two = louvain(g, device="cpu", partitions=2, config=LP.LouvainConfig(gather_edges=0))
    for a, b in zip(one.levels, two.levels, strict=True):
        np.testing.assert_array_equal(a, b)
    assert one.modularity == two.modularity


# --------------------------------------------------------------------------- one sweep
@pytest.mark.parametrize("k", [1, pytest.param(2, marks=two_threads)])
@pytest.mark.parametrize("name", ["kron-13", "rgg-15"])
def test_sweep_returns_the_change_of_the_internal_weight(graphs, name, k, internal_weight):
    g = graphs[name]
    indptr, indices, wfix, loop, kfix = _level0(g)
    comm = np.arange(g.n, dtype=np.int32)
    csize = np.ones(g.n, dtype=np.int32)
    afix = kfix.copy()
    with threads(k):
        buckets = twin.degree_buckets(indptr, LP.MOVE_BUCKETS)
        ws = twin.make_move_workspace(g.n, int(np.diff(indptr).max()), buckets,
                                      slices=LP._move_slices(LP.LouvainConfig(), buckets))
        before = internal_weight(indptr, indices, wfix, loop, comm)
        assert before == 0
        for _ in range(3):  # the first sweep moves most vertices, the later ones few
            prev = comm.copy()
            change = twin.move_sweep(indptr, indices, wfix, kfix, comm, csize, afix, buckets, 1.0 / kfix.sum(), ws)
            after = internal_weight(indptr, indices, wfix, loop, comm)
            assert change == after - before
            assert (comm != prev).any()
            before = after
    # a_c and the sizes are those of the communities
    a_c = np.zeros(g.n, dtype=np.int64)
    np.add.at(a_c, comm, kfix)  # (integers: a float bincount would round)
    np.testing.assert_array_equal(afix, a_c)
    np.testing.assert_array_equal(csize, np.bincount(comm, minlength=g.n))


def _sweep_reference(indptr, indices, wfix, kfix, comm, csize, afix, batches, gamma_over_2m):
    """One sweep of Algorithm 1 in NumPy, with the GPU kernels' rules: batch after batch, every
    vertex of the batch scores each neighbouring community from the state at the batch's start
    (``e_{v->c} - (gamma k_v / 2m) a_c``, a product then a difference, each rounded once), skips
    a singleton community of larger id when its own is a singleton (section 4), takes the
    largest score and among equal scores the smallest id, and moves if that beats staying
    (``e_{v->own} - (gamma k_v / 2m)(a_own - k_v)``); the batch's moves are then applied.
    Returns the new ``comm``, ``csize`` and ``afix``."""
    comm, csize, afix = comm.copy(), csize.copy(), afix.copy()
    n = comm.shape[0]
    for verts in batches:
        if verts.shape[0] == 0:
            continue
        verts = verts.astype(np.int64)
        deg = indptr[verts + 1] - indptr[verts]
        row = np.repeat(np.arange(verts.shape[0]), deg)
        pos = np.arange(int(deg.sum())) - np.repeat(np.cumsum(deg) - deg - indptr[verts], deg)
        key = row * n + comm[indices[pos]]
        uniq, inverse = np.unique(key, return_inverse=True)
        e = np.zeros(uniq.shape[0], dtype=np.int64)
        np.add.at(e, inverse, wfix[pos])  # e_{v->c} for every vertex and neighbouring community
        r, c = uniq // n, uniq % n
        own = comm[verts].astype(np.int64)
        kv = kfix[verts]
        gk = kv.astype(np.float64) * gamma_over_2m
        mine = c == own[r]
        e_own = np.zeros(verts.shape[0], dtype=np.int64)
        e_own[r[mine]] = e[mine]
        ok = ~mine & ~((csize[own[r]] == 1) & (c > own[r]) & (csize[c] == 1))
        r, c, score = r[ok], c[ok], e[ok].astype(np.float64) - gk[r[ok]] * afix[c[ok]].astype(np.float64)
        order = np.lexsort((c, -score, r))  # per vertex: the largest score, then the smallest id
        r, c, score = r[order], c[order], score[order]
        first = np.ones(r.shape[0], dtype=bool)
        first[1:] = r[1:] != r[:-1]
        r, c, score = r[first], c[first], score[first]
        stay = e_own.astype(np.float64) - gk * (afix[own] - kv).astype(np.float64)
        new = own.copy()
        go = score > stay[r]
        new[r[go]] = c[go]
        moved = new != own
        v = verts[moved]
        np.add.at(afix, own[moved], -kfix[v])
        np.add.at(afix, new[moved], kfix[v])
        np.add.at(csize, own[moved], -1)
        np.add.at(csize, new[moved], 1)
        comm[v] = new[moved]
    return comm, csize, afix


def _karate():
    return Graph.from_networkx(nx.karate_club_graph())  # (weights 1 to 7: many equal scores)


def _pairs():
    # 32 disjoint edges: at resolution 64 moving to the partner scores exactly what staying
    # does (e - gamma k_v a_c / 2m = 0), and a vertex moves only to a better score, so none moves
    return Graph.from_edges(np.arange(0, 64, 2), np.arange(1, 64, 2), n=64)


def _weighted_planted():
    # blocks of 40 with a few light edges between them; weights of three values: ties too
    p = nx.planted_partition_graph(12, 40, 0.25, 0.02, seed=4)
    a, b = np.array(p.edges()).T
    return Graph.from_edges(a, b, 1.0 + 2.0 * ((a + b) % 3 == 0) + 0.5 * ((a * b) % 5 == 0), n=480)


@pytest.mark.parametrize("k", [1, pytest.param(2, marks=two_threads)])
@pytest.mark.parametrize(("name", "slices", "resolution"), [
    ("karate", 1, 1.0), ("karate", 3, 0.5), ("planted", 2, 1.0), ("planted", 1, 2.0),
    ("kron-13", 2, 1.0), ("kron-13", 1, 1.0), ("rgg-15", 4, 1.0), ("pairs", 1, 64.0), ("pairs", 1, 1.0),
])
def test_sweeps_take_the_reference_decisions(graphs, name, slices, resolution, k, internal_weight):
    # every sweep of level 0 leaves the communities, a_c and the sizes of the NumPy reference,
    # on one thread and on two (kron-13's largest batches run on every thread); the later
    # sweeps decide among communities of several vertices, the first among singletons
    g = {"karate": _karate, "planted": _weighted_planted, "pairs": _pairs}.get(name, lambda: graphs[name])()
    indptr, indices, wfix, loop, kfix = _level0(g)
    comm = np.arange(g.n, dtype=np.int32)
    csize = np.ones(g.n, dtype=np.int32)
    afix = kfix.copy()
    gamma_over_2m = resolution / float(kfix.sum())
    with threads(k):
        buckets = twin.degree_buckets(indptr, LP.MOVE_BUCKETS)
        ws = twin.make_move_workspace(g.n, int(np.diff(indptr).max()), buckets,
                                      slices=LP._move_slices(LP.LouvainConfig(move_slices=slices), buckets))
        batches = [verts for bs in ws["batches"] for verts in bs]
        before = internal_weight(indptr, indices, wfix, loop, comm)
        for sweep in range(4):
            want = _sweep_reference(indptr, indices, wfix, kfix, comm, csize, afix, batches, gamma_over_2m)
            change = twin.move_sweep(indptr, indices, wfix, kfix, comm, csize, afix, buckets, gamma_over_2m, ws)
            for got, ref in zip((comm, csize, afix), want, strict=True):
                np.testing.assert_array_equal(got, ref, err_msg=f"sweep {sweep}")
            after = internal_weight(indptr, indices, wfix, loop, comm)
            assert change == after - before
            before = after
    merged = g.n - np.unique(comm).shape[0]
    assert merged == 0 if (name, resolution) == ("pairs", 64.0) else merged >= g.n // 2  # (as the reference)


# ---------------------------------------------------------------------- whole-level passes
def _aggregate_reference(indptr, indices, wfix, loop, comm):
    """Algorithm 3 in NumPy: new ids by community id; a row's neighbours in the order its
    members (ascending) first reach them; weights and self-loops summed."""
    n = indptr.shape[0] - 1
    present = np.zeros(n, dtype=bool)
    present[comm] = True
    new_id = np.where(present, np.cumsum(present) - 1, -1).astype(np.int32)
    n_new = int(present.sum())
    rows = np.repeat(np.arange(n), np.diff(indptr))
    src, dst = new_id[comm[rows]], new_id[comm[indices]]
    # entries in the order mergeCommunity visits them: by community, then member, then position
    order = np.lexsort((np.arange(rows.size), rows, src))
    src, dst, w = src[order], dst[order], wfix[order]
    inside = src == dst
    new_loop = np.zeros(n_new, dtype=np.int64)
    np.add.at(new_loop, new_id[comm], loop)
    np.add.at(new_loop, src[inside], w[inside])
    src, dst, w = src[~inside], dst[~inside], w[~inside]
    key = src.astype(np.int64) * max(n_new, 1) + dst
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    sums = np.zeros(uniq.size, dtype=np.int64)
    np.add.at(sums, inverse, w)
    by_first = np.argsort(first, kind="stable")  # first reached first, within each row
    s, d, ws = uniq[by_first] // max(n_new, 1), uniq[by_first] % max(n_new, 1), sums[by_first]
    o = np.argsort(s, kind="stable")
    counts = np.bincount(s, minlength=n_new)
    new_indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return new_indptr, d[o].astype(np.int32), ws[o], new_loop, new_id


@pytest.mark.parametrize("k", [1, pytest.param(2, marks=two_threads)])
@pytest.mark.parametrize("name", ["kron-13", "delaunay-15"])
def test_aggregate_matches_numpy(graphs, name, k):
    g = graphs[name]
    indptr, indices, wfix, _, _ = _level0(g)
    rng = np.random.default_rng(5)
    loop = rng.integers(0, 1000, g.n)
    # communities named by some of the ids, about 40 members each: short and long member lists
    comm = rng.choice(rng.choice(g.n, g.n // 40, replace=False), g.n).astype(np.int32)
    sizes = np.bincount(comm)
    assert sizes.max() > 32 and 1 < sizes[sizes > 0].min() <= 32
    with threads(k):
        got = twin.aggregate(indptr, indices, wfix, loop, comm)
    want = _aggregate_reference(indptr, indices, wfix, loop, comm)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


@pytest.mark.parametrize("k", [1, pytest.param(2, marks=two_threads)])
@pytest.mark.parametrize("n", [0, 1, 7, 70_000])
def test_degree_buckets_match_numpy(n, k):
    rng = np.random.default_rng(n)
    deg = rng.integers(0, 400, n) * (rng.random(n) < 0.9)  # some isolated vertices
    indptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    with threads(k):
        got = twin.degree_buckets(indptr, LP.MOVE_BUCKETS)
    want = LP._local_buckets(deg, np, 0)
    want[-1] = want[-1][np.argsort(-deg[want[-1]], kind="stable")]  # largest degree first, ties by id
    assert len(got) == len(want) == len(LP.MOVE_BUCKETS) + 1
    for a, b in zip(got, want, strict=True):
        assert a.dtype == np.int32
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("k", [1, pytest.param(2, marks=two_threads)])
def test_square_sum_fixed_point_and_strengths_match_numpy(k):
    rng = np.random.default_rng(11)
    n = 3 * twin._SERIAL_BELOW
    a = rng.integers(0, 2**60 // n, n)  # a_c summing below 2**60, as the fixed point keeps them
    a[:5] = [0, 1, 2**30 - 1, 2**30, 2**45 + 2**15 + 1]
    w = rng.random(n) * 7.5
    w[:4] = [0.5, 1.5, 2.5, 0.0]  # halves round to even, as NumPy's rint
    indptr = np.sort(rng.integers(0, n, 999))
    indptr = np.concatenate([[0], indptr, [n]]).astype(np.int64)
    loop = rng.integers(0, 10, indptr.size - 1)
    with threads(k):
        assert twin.square_sum(a) == sum(int(x) ** 2 for x in a)  # exact, beyond 64 bits
        assert twin.square_sum(a[:3]) == 1 + (2**30 - 1) ** 2
        fixed = twin.fixed_point(w, 2.0**20)
        kfix = twin.strengths(indptr, fixed, loop)
    np.testing.assert_array_equal(fixed, np.rint(w * 2.0**20).astype(np.int64))
    assert fixed[:4].tolist() == [2**19, 3 * 2**19, 5 * 2**19, 0]
    np.testing.assert_array_equal(kfix, np.add.reduceat(fixed, indptr[:-1]) * (np.diff(indptr) > 0) + loop)
