"""CPU twins of the Louvain kernels (``kernels/louvain.cu``), compiled with Numba.

Every function here has a GPU twin of the same name and signature in
:mod:`mgmatch.gpu.louvain`; both take and return plain arrays of one level graph:

* ``indptr`` (int64, ``n + 1``), ``indices`` (int32, neighbour ids, no self entries),
* ``wfix`` (int64, edge weights in fixed point, see :mod:`mgmatch.algorithms.louvain`),
* ``loop_fix`` (int64, per vertex: weight of the self-loop, counted as in the degree
  ``k_i``, i.e. the internal weight of the community the vertex stands for),
* ``comm`` (int32, community of every vertex), ``csize`` (int32, vertices per community),
  ``afix`` (int64, ``a_c``: summed strengths of each community's vertices).

All weights are integers, so sums do not depend on the order in which they are taken: a move
decided from a snapshot of the communities is the same on every thread count and on both
twins.

The move phase applies the moves after every batch of a bucket, not after every bucket as the
paper's Algorithm 1 does: each degree bucket is split into ``slices`` interleaved batches
``bucket[j::slices]`` (one count per bucket, chosen by :mod:`mgmatch.algorithms.louvain`:
``LouvainConfig.move_slices``, or 1 for buckets of fewer than its ``move_slice_min`` vertices). On R-MAT
graphs, after aggregation, most vertices share one bucket, and moving them all from one
snapshot overshoots and lowers modularity; see :func:`move_sweep`.

References
----------
.. [1] M. Naim, F. Manne, M. Halappanavar, A. Tumeo, "Community Detection on the GPU",
   IPDPS 2017. Algorithm 1 (modularity optimisation), Algorithm 2 (computeMove),
   Algorithm 3 (aggregation).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from .._array import get_namespace

__all__ = [
    "check_memory",
    "fixed_point",
    "strengths",
    "table_sizes",
    "make_move_workspace",
    "move_batches",
    "move_sweep",
    "decide_moves",
    "internal_weight",
    "aggregate",
]


def check_memory(n: int, nnz: int, max_degree: int) -> int:
    """Bytes a Louvain run on a graph of this size needs besides the input (an estimate).

    On the CPU this only reports the estimate; the GPU twin raises
    :class:`~mgmatch.errors.ResourceError` when it will not fit the device.
    """
    threads = numba.get_num_threads()
    return int(12 * nnz * 3 + (16 * threads + 64) * max(n, 1))


def table_sizes(max_degree: int) -> np.ndarray:
    """Hash-table size for every degree ``0 .. max_degree``: the smallest prime above ``1.5 d``.

    The sizes are computed once for a range that doubles as needed, and served as read-only
    views: every level of every run asks for them.

    >>> table_sizes(8).tolist()
    [2, 2, 5, 5, 7, 11, 11, 11, 13]
    """
    global _TABLE_SIZES
    max_degree = max(int(max_degree), 0)
    if _TABLE_SIZES.shape[0] <= max_degree:
        _TABLE_SIZES = _compute_table_sizes(max(max_degree, 2 * _TABLE_SIZES.shape[0], 1024))
        _TABLE_SIZES.flags.writeable = False
    return _TABLE_SIZES[: max_degree + 1]


def _compute_table_sizes(max_degree: int) -> np.ndarray:
    limit = max(3 * max_degree // 2 + 64, 16)
    while True:
        sieve = np.ones(limit + 1, dtype=bool)
        sieve[:2] = False
        sieve[4::2] = False
        for q in range(3, int(limit**0.5) + 1, 2):
            if sieve[q]:
                sieve[q * q :: 2 * q] = False
        primes = np.flatnonzero(sieve)
        # p > 1.5 d  <=>  p > floor(3d/2); floor(3d/2) is non-decreasing, so one merge-like search
        need = 3 * np.arange(max_degree + 1, dtype=np.int64) // 2
        pos = np.searchsorted(primes, need, side="right")
        if pos[-1] < primes.size:
            return primes[pos].astype(np.int32)
        limit *= 2


_TABLE_SIZES = np.empty(0, dtype=np.int32)


def move_batches(verts, slices: int) -> list:
    """The non-empty interleaved batches ``verts[j::slices]`` of one bucket, in the order they move.

    Shared by both twins (``verts`` may be a NumPy or a CuPy array), so they move the same
    vertices together. With ``slices == 1`` the bucket itself is the one batch.

    >>> [b.tolist() for b in move_batches(np.arange(7, dtype=np.int32), 3)]
    [[0, 3, 6], [1, 4], [2, 5]]
    >>> [b.tolist() for b in move_batches(np.arange(2, dtype=np.int32), 4)]
    [[0], [1]]
    """
    nv = int(verts.shape[0])
    if slices <= 1 or nv <= 1:
        return [verts] if nv else []
    xp = get_namespace(verts)
    return [xp.ascontiguousarray(verts[j::slices]) for j in range(min(slices, nv))]


def make_move_workspace(n: int, max_degree: int, buckets, *, slices, batches=None) -> dict:
    """Scratch for :func:`move_sweep` on a level graph of ``n`` vertices.

    Each thread gets one open-addressing hash table (community ids and fixed-point weights)
    large enough for the largest degree, reused vertex after vertex as in computeMove. Bucket
    ``b`` is split once per level into its ``slices[b]`` interleaved batches
    (:func:`move_batches`); each batch is cut into contiguous shares balanced by edge count,
    one per thread, on first use and kept for the level's later sweeps. ``batches`` (a list
    of batch lists, one per bucket, empty batches allowed) replaces that split where the
    caller chose the batches itself: a partition of a larger graph moves its share of every
    batch of the whole graph's buckets.
    """
    threads = numba.get_num_threads()
    sizes = table_sizes(max_degree)
    width = int(sizes[-1])
    if batches is None:
        batches = [move_batches(verts, int(k)) for verts, k in zip(buckets, slices, strict=True)]
    return {
        "table_sizes": sizes,
        "keys": np.empty((threads, width), dtype=np.int32),
        "vals": np.empty((threads, width), dtype=np.int64),
        "new_comm": np.empty(max(n, 1), dtype=np.int32),
        "threads": threads,
        "batches": batches,
        "chunks": [[None] * len(bs) for bs in batches],
    }


def _bucket_chunks(indptr, verts, threads):
    """``threads + 1`` offsets splitting a batch's vertices into runs of about equal edge count."""
    deg = (indptr[verts + 1] - indptr[verts]).astype(np.int64)
    cum = np.cumsum(deg)
    targets = cum[-1] * np.arange(1, threads, dtype=np.float64) / threads
    cuts = np.searchsorted(cum, targets, side="left")
    return np.concatenate([[0], cuts, [verts.shape[0]]]).astype(np.int64)


def move_sweep(indptr, indices, wfix, kfix, comm, csize, afix, buckets, gamma_over_2m, workspace) -> None:
    """One iteration of Algorithm 1: every batch of every degree bucket in turn, moves decided, then applied.

    ``buckets`` are the buckets ``workspace`` was made for; bucket ``b`` is processed as its
    ``s = slices[b]`` interleaved batches ``bucket[j::s]``, ``j = 0, 1, ...``. Within a batch
    every vertex decides its move (computeMove, Algorithm 2) from the community state at the
    start of the batch; the moves are then applied and ``a_c`` and the community sizes
    updated before the next batch. ``comm``, ``csize`` and ``afix`` are updated in place.

    Naim et al. [1]_ apply the moves once per bucket (Algorithm 1, lines 8-11; ``s = 1``
    here). We apply them after each batch because on R-MAT graphs, after aggregation, most
    vertices share one bucket: moved all at once from the same snapshot, many of them join the
    same communities together and overshoot, the sweep lowers modularity and the level stops
    early. Smaller batches see the moves of the batches before them.
    """
    for b, batches in enumerate(workspace["batches"]):
        for j, verts in enumerate(batches):
            decide_moves(indptr, indices, wfix, kfix, comm, csize, afix, gamma_over_2m, workspace, b, j)
            _apply_moves(verts, workspace["new_comm"], comm, csize, afix, kfix)


def decide_moves(indptr, indices, wfix, kfix, comm, csize, afix, gamma_over_2m, workspace, b: int, j: int):
    """computeMove (Algorithm 2) for batch ``j`` of bucket ``b``: ``workspace["new_comm"][v]``
    becomes the community each vertex ``v`` of the batch moves to (its own if it stays).
    Nothing is applied; returns the batch's vertices."""
    verts = workspace["batches"][b][j]
    if verts.shape[0] == 0:
        return verts
    chunks = workspace["chunks"][b][j]
    if chunks is None:
        chunks = workspace["chunks"][b][j] = _bucket_chunks(indptr, verts, workspace["threads"])
    small = verts.shape[0] * 8 < _SERIAL_BELOW
    compute = _compute_moves_serial if small else _compute_moves
    compute(
        indptr, indices, wfix, kfix, comm, csize, afix, verts, chunks, float(gamma_over_2m),
        workspace["new_comm"], workspace["keys"], workspace["vals"], workspace["table_sizes"],
    )
    return verts


#: Buckets (vertex counts, weighted by a typical degree of 8) and graphs below this size run
#: on one thread: waking the thread pool costs more than the work. Results are the same.
_SERIAL_BELOW = 1 << 16

#: Up to this degree computeMove's table is a short list searched linearly (few entries fit
#: in registers and cache; the result is the same as hashing).
_LINEAR_DEGREE = 16


@njit(parallel=True, cache=True)
def _compute_moves(indptr, indices, wfix, kfix, comm, csize, afix, verts, chunks, gamma_over_2m,
                   new_comm, keys, vals, table_sizes):  # pragma: no cover - compiled
    # computeMove, Algorithm 2, for every vertex of one bucket: e_{i->c} hashed by community
    # (open addressing, double hashing, table size the smallest prime > 1.5 deg(i)), then
    # Eq. (2) with the tie and singleton rules of section 4. One contiguous run of the batch
    # per thread, each with its own table.
    for ch in prange(chunks.shape[0] - 1):
        hkeys = keys[ch]
        hvals = vals[ch]
        for t in range(chunks[ch], chunks[ch + 1]):
            v = verts[t]
            start = indptr[v]
            stop = indptr[v + 1]
            deg = stop - start
            if deg <= _LINEAR_DEGREE:
                p = 0
                for e in range(start, stop):
                    c = comm[indices[e]]
                    w = wfix[e]
                    found = False
                    for q in range(p):
                        if hkeys[q] == c:
                            hvals[q] += w
                            found = True
                            break
                    if not found:
                        hkeys[p] = c
                        hvals[p] = w
                        p += 1
            else:
                p = table_sizes[deg]
                for q in range(p):
                    hkeys[q] = -1
                up = np.uint32(p)
                for e in range(start, stop):
                    c = comm[indices[e]]
                    uc = np.uint32(c)
                    pos = uc % up
                    step = np.uint32(1) + uc % (up - np.uint32(1))
                    while True:
                        k = hkeys[pos]
                        if k == c:
                            hvals[pos] += wfix[e]
                            break
                        if k == -1:
                            hkeys[pos] = c
                            hvals[pos] = wfix[e]
                            break
                        pos += step
                        if pos >= up:
                            pos -= up
            own = comm[v]
            kv = kfix[v]
            gk = float(kv) * gamma_over_2m
            singleton = csize[own] == 1
            e_own = np.int64(0)
            best_c = -1
            best = -np.inf
            for q in range(p):
                c = hkeys[q]
                if c < 0:
                    continue
                if c == own:
                    e_own = hvals[q]
                    continue
                if singleton and csize[c] == 1 and c > own:
                    continue
                s = float(hvals[q]) - gk * float(afix[c])
                if s > best or (s == best and c < best_c):
                    best = s
                    best_c = c
            score_own = float(e_own) - gk * float(afix[own] - kv)
            new_comm[v] = best_c if (best_c >= 0 and best > score_own) else own


_compute_moves_serial = njit(cache=True)(_compute_moves.py_func)


@njit(cache=True)
def _apply_moves(verts, new_comm, comm, csize, afix, kfix):  # pragma: no cover - compiled
    # Algorithm 1, lines 8-11: commit the batch's moves and update a_c.
    moved = 0
    for t in range(verts.shape[0]):
        v = verts[t]
        c = new_comm[v]
        o = comm[v]
        if c != o:
            afix[o] -= kfix[v]
            afix[c] += kfix[v]
            csize[o] -= 1
            csize[c] += 1
            comm[v] = c
            moved += 1
    return moved


def fixed_point(weights, scale: float):
    """``rint(weights * scale)`` as int64: the fixed-point weights (``scale`` a power of two)."""
    return np.rint(np.asarray(weights, dtype=np.float64) * scale).astype(np.int64)


def strengths(indptr, wfix, loop_fix):
    """``k_i`` (Algorithm 1, line 2): each vertex's edge weights plus its self-loop, fixed point."""
    cs = np.zeros(wfix.shape[0] + 1, dtype=np.int64)
    np.cumsum(wfix, out=cs[1:])
    return cs[indptr[1:]] - cs[indptr[:-1]] + loop_fix


def internal_weight(indptr, indices, wfix, loop_fix, comm) -> int:
    """Sum over vertices of the weight to their own community, self-loops included (fixed point).

    This is ``sum_i e_{i -> C(i)}`` of Eq. (1), with both directions of every edge counted.
    """
    n = indptr.shape[0] - 1
    if n <= 0:
        return 0
    out = np.empty(n, dtype=np.int64)
    kernel = _internal_weight_serial if indices.shape[0] < _SERIAL_BELOW else _internal_weight
    kernel(indptr, indices, wfix, loop_fix, comm, out)
    return int(out.sum())


@njit(parallel=True, cache=True)
def _internal_weight(indptr, indices, wfix, loop_fix, comm, out):  # pragma: no cover - compiled
    # Eq. (1), first term, per vertex (integers: the total is exact in any order).
    for v in prange(indptr.shape[0] - 1):
        cv = comm[v]
        s = loop_fix[v]
        for e in range(indptr[v], indptr[v + 1]):
            if comm[indices[e]] == cv:
                s += wfix[e]
        out[v] = s


_internal_weight_serial = njit(cache=True)(_internal_weight.py_func)


def aggregate(indptr, indices, wfix, loop_fix, comm):
    """Aggregation phase, Algorithm 3: one vertex per non-empty community.

    Returns ``(indptr, indices, wfix, loop_fix, new_id)`` of the aggregated graph, where
    ``new_id[c]`` is the new vertex of community ``c`` (``-1`` for empty communities);
    communities keep their order, so new ids follow the old community ids. Edges between two
    communities are merged into one edge carrying the summed weight; edges inside a
    community become its self-loop weight.
    """
    n = indptr.shape[0] - 1
    com_size, com_degree = _community_sizes(indptr, comm, n)
    new_id = np.cumsum(com_size > 0, dtype=np.int64) - 1
    new_id = np.where(com_size > 0, new_id, -1).astype(np.int32)
    n_new = int(new_id.max(initial=-1)) + 1
    vertex_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(com_size, out=vertex_start[1:])
    edge_pos = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(com_degree, out=edge_pos[1:])
    members = np.argsort(comm, kind="stable").astype(np.int32)  # vertices ordered by community
    communities = np.flatnonzero(com_size > 0).astype(np.int32)
    threads = numba.get_num_threads()
    tmp_idx = np.empty(max(int(edge_pos[-1]), 1), dtype=np.int32)
    tmp_w = np.empty(max(int(edge_pos[-1]), 1), dtype=np.int64)
    counts = np.zeros(n_new, dtype=np.int64)
    new_loop = np.zeros(n_new, dtype=np.int64)
    acc = np.zeros((threads, max(n_new, 1)), dtype=np.int64)
    mark = np.full((threads, max(n_new, 1)), -1, dtype=np.int64)
    _merge_communities(
        indptr, indices, wfix, loop_fix, comm, new_id, members, vertex_start, edge_pos,
        communities, tmp_idx, tmp_w, counts, new_loop, acc, mark,
    )
    new_indptr = np.zeros(n_new + 1, dtype=np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    new_indices = np.empty(int(new_indptr[-1]), dtype=np.int32)
    new_wfix = np.empty(int(new_indptr[-1]), dtype=np.int64)
    _compact_edges(communities, new_id, edge_pos, new_indptr, tmp_idx, tmp_w, new_indices, new_wfix)
    return new_indptr, new_indices, new_wfix, new_loop, new_id


@njit(cache=True)
def _community_sizes(indptr, comm, n):  # pragma: no cover - compiled
    # Algorithm 3, lines 2-6: comSize and comDegree.
    com_size = np.zeros(n, dtype=np.int64)
    com_degree = np.zeros(n, dtype=np.int64)
    for v in range(n):
        com_size[comm[v]] += 1
        com_degree[comm[v]] += indptr[v + 1] - indptr[v]
    return com_size, com_degree


@njit(parallel=True, cache=True)
def _merge_communities(indptr, indices, wfix, loop_fix, comm, new_id, members, vertex_start,
                       edge_pos, communities, tmp_idx, tmp_w, counts, new_loop, acc, mark):  # pragma: no cover
    # mergeCommunity (Algorithm 3, line 23): all neighbours of a community's vertices are
    # accumulated by their new community id; the community's own id collects the self-loop.
    for t in prange(communities.shape[0]):
        tid = numba.get_thread_id()
        c = communities[t]
        nc = new_id[c]
        base = edge_pos[c]
        cnt = 0
        loop = np.int64(0)
        for q in range(vertex_start[c], vertex_start[c + 1]):
            u = members[q]
            loop += loop_fix[u]
            for e in range(indptr[u], indptr[u + 1]):
                d = new_id[comm[indices[e]]]
                if d == nc:
                    loop += wfix[e]
                elif mark[tid, d] != nc:
                    mark[tid, d] = nc
                    acc[tid, d] = cnt
                    tmp_idx[base + cnt] = d
                    tmp_w[base + cnt] = wfix[e]
                    cnt += 1
                else:
                    tmp_w[base + acc[tid, d]] += wfix[e]
        counts[nc] = cnt
        new_loop[nc] = loop


@njit(parallel=True, cache=True)
def _compact_edges(communities, new_id, edge_pos, new_indptr, tmp_idx, tmp_w, out_idx, out_w):  # pragma: no cover
    # Compaction after mergeCommunity: each community's edge list moves to consecutive slots.
    for t in prange(communities.shape[0]):
        c = communities[t]
        nc = new_id[c]
        src = edge_pos[c]
        dst = new_indptr[nc]
        for q in range(new_indptr[nc + 1] - dst):
            out_idx[dst + q] = tmp_idx[src + q]
            out_w[dst + q] = tmp_w[src + q]
