"""CPU twins of the Louvain kernels (``kernels/louvain.cu``), compiled with Numba.

Every function here has a GPU twin of the same name and signature in
:mod:`mgmatch.gpu.louvain` (the GPU twin's launch settings, ``tune``, are accepted here and
have no effect); both take and return plain arrays of one level graph:

* ``indptr`` (int64, ``n + 1``), ``indices`` (int32, neighbour ids, no self entries),
* ``wfix`` (int64, edge weights in fixed point, see :mod:`mgmatch.algorithms.louvain`),
* ``loop_fix`` (int64, per vertex: weight of the self-loop, counted as in the degree
  ``k_i``, i.e. the internal weight of the community the vertex stands for),
* ``comm`` (int32, community of every vertex), ``csize`` (int32, vertices per community),
  ``afix`` (int64, ``a_c``: summed strengths of each community's vertices).

All weights are integers, so sums do not depend on the order in which they are taken: a move
decided from a snapshot of the communities is the same on every thread count and on both
twins.

Every pass over a level runs on every Numba thread (:func:`numba.get_num_threads`) once it has
at least :data:`_SERIAL_BELOW` stored entries, and on the calling thread below, where waking
the thread pool would cost more than the work: a sweep (:func:`move_sweep`, one compiled call;
per batch, each thread decides a contiguous share balanced by edge count, with its own table,
and the moves are applied with atomic additions), the strengths, the internal weight, the
square sum of ``a_c``, the degree buckets and aggregation (:func:`aggregate`). What they
compute does not depend on the thread count: shares only change which thread decides a move,
never the state it reads, and every sum is of integers.

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
from .._numba_cache import serial_twin
from ._atomics import atomic_add
from .graph_build import balanced_cuts

__all__ = [
    "check_memory",
    "fixed_point",
    "strengths",
    "table_sizes",
    "degree_buckets",
    "make_move_workspace",
    "move_batches",
    "move_sweep",
    "decide_moves",
    "apply_move_rows",
    "square_sum",
    "compose_labels",
    "aggregate",
]


def check_memory(n: int, nnz: int, max_degree: int, *, tune=None) -> int:
    """Bytes a Louvain run on a graph of this size needs besides the input (an estimate).

    On the CPU this only reports the estimate; the GPU twin raises
    :class:`~mgmatch.errors.ResourceError` when it will not fit the device.
    """
    threads = numba.get_num_threads()
    # the level's arrays and aggregation's (12 bytes a stored entry, three graphs at most at
    # once), the sweep's per vertex (batches, moves, snapshots) and each thread's scratch
    return int(12 * nnz * 3 + 96 * max(n, 1) + threads * (32 * max(max_degree, 16) + 256))


def table_sizes(max_degree: int) -> np.ndarray:
    """Hash-table size for every degree ``0 .. max_degree``: the smallest prime above ``1.5 d``
    (the paper's computeMove tables, which the GPU kernels keep).

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
    if _batch_count(nv, slices) <= 1:
        return [verts] if nv else []
    xp = get_namespace(verts)
    return [xp.ascontiguousarray(verts[j::slices]) for j in range(min(slices, nv))]


def _batch_count(nv: int, slices: int) -> int:
    """How many batches :func:`move_batches` makes of a bucket of ``nv`` vertices."""
    return 0 if nv == 0 else 1 if slices <= 1 or nv <= 1 else min(slices, nv)


def degree_buckets(indptr, bounds) -> list:
    """The vertices of each computeMove bucket (Algorithm 1, line 5), ascending, as views of one
    array: bucket ``i`` holds the degrees in ``(bounds[i - 1], bounds[i]]`` (from 1), the last
    every larger degree, sorted by degree, largest first (a stable sort: ties by id).

    One pass on every thread counts each run of vertices per bucket, a second writes them.

    >>> [b.tolist() for b in degree_buckets(np.array([0, 1, 1, 6, 8]), (1, 4))]
    [[0], [3], [2]]
    """
    n = indptr.shape[0] - 1
    nb = len(bounds) + 1
    parts = numba.get_num_threads() if n >= _SERIAL_BELOW else 1
    cuts = np.linspace(0, max(n, 0), parts + 1).astype(np.int64)
    out = np.empty(max(n, 0), dtype=np.int32)
    ptr = np.zeros(nb + 1, dtype=np.int64)
    kernel = _bucket_fill if parts > 1 else _bucket_fill_serial
    kernel(indptr, np.asarray(bounds, dtype=np.int64), cuts, out, ptr)
    buckets = [out[ptr[i] : ptr[i + 1]] for i in range(nb)]
    big = buckets[-1]
    if big.shape[0] > 1:
        deg = indptr[big + 1] - indptr[big]
        big[:] = big[np.argsort(-deg, kind="stable")]
    return buckets


@njit(parallel=True, cache=True)
def _bucket_fill(indptr, bounds, cuts, out, ptr):  # pragma: no cover - compiled
    # A bucket's vertices in ascending order: each run of vertices counts its own per bucket,
    # then writes them after the runs before it.
    parts = cuts.shape[0] - 1
    nb = bounds.shape[0] + 1
    counts = np.zeros((parts, nb), dtype=np.int64)
    for ch in prange(parts):
        for v in range(cuts[ch], cuts[ch + 1]):
            b = _bucket_of(indptr[v + 1] - indptr[v], bounds)
            if b >= 0:
                counts[ch, b] += 1
    for b in range(nb):  # counts[ch, b] becomes where run ch starts writing bucket b
        at = ptr[b]
        for ch in range(parts):
            c = counts[ch, b]
            counts[ch, b] = at
            at += c
        ptr[b + 1] = at
    for ch in prange(parts):
        pos = counts[ch].copy()
        for v in range(cuts[ch], cuts[ch + 1]):
            b = _bucket_of(indptr[v + 1] - indptr[v], bounds)
            if b >= 0:
                out[pos[b]] = v
                pos[b] += 1


@njit(cache=True, inline="always")
def _bucket_of(d, bounds):  # pragma: no cover - compiled
    if d <= 0:
        return -1
    for i in range(bounds.shape[0]):
        if d <= bounds[i]:
            return i
    return bounds.shape[0]


_bucket_fill_serial = serial_twin(_bucket_fill)


def make_move_workspace(n: int, max_degree: int, buckets, *, slices, batches=None) -> dict:
    """Scratch for :func:`move_sweep` on a level graph of ``n`` vertices.

    Each thread gets a list of communities and their fixed-point weights, and a hash table for
    the larger degrees, large enough for the largest degree and reused vertex after vertex as
    in computeMove; the scratch of two threads never shares a cache line. Bucket ``b`` is split
    once per level into its ``slices[b]`` interleaved batches (:func:`move_batches`), stored one
    after another in ``order`` (batch ``k`` is ``order[batch_ptr[k]:batch_ptr[k + 1]]``). On
    first use, each batch is cut into contiguous shares balanced by edge count, one per thread,
    kept for the level's later sweeps. ``batches`` (a list of batch lists, one per bucket,
    empty batches allowed) replaces that split where the caller chose the batches itself: a
    partition of a larger graph moves its share of every batch of the whole graph's buckets.
    """
    threads = numba.get_num_threads()
    width = max(int(max_degree), _LINEAR_DEGREE)
    tab_size = 32
    while tab_size < 2 * width:
        tab_size *= 2
    if batches is None:  # move_batches(verts, k) of every bucket, written straight into ``order``
        split = [(verts, int(k)) for verts, k in zip(buckets, slices, strict=True)]
        shape = [_batch_count(int(verts.shape[0]), k) for verts, k in split]
        parts = [(verts, j, max(k, 1)) for (verts, k), nb in zip(split, shape) for j in range(nb)]
    else:
        parts = [(verts, 0, 1) for bs in batches for verts in bs]
        shape = [len(bs) for bs in batches]
    counts = [len(range(j, int(verts.shape[0]), k)) for verts, j, k in parts]
    batch_ptr = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(counts, out=batch_ptr[1:])
    order = np.empty(int(batch_ptr[-1]), dtype=np.int32)
    for i, (verts, j, k) in enumerate(parts):
        order[batch_ptr[i] : batch_ptr[i + 1]] = verts[j::k]
    views, k = [], 0
    for nb in shape:  # the batches as views of ``order``
        views.append([order[batch_ptr[k + j] : batch_ptr[k + j + 1]] for j in range(nb)])
        k += nb
    first = np.cumsum([0] + shape)[:-1].tolist()
    return {
        # per thread: the list of a vertex's communities and their weights, the hash table of
        # vertices above _LINEAR_DEGREE (communities, -1 when empty between vertices, and
        # weights) and the slots it used; rows padded by a cache line, so one thread's writes
        # never evict another's
        "keys": np.empty((threads, width + 16), dtype=np.int32),
        "vals": np.empty((threads, width + 8), dtype=np.int64),
        "tabs": np.full((threads, tab_size + 16), -1, dtype=np.int32),
        "sums": np.empty((threads, tab_size + 8), dtype=np.int64),
        "poss": np.empty((threads, width + 16), dtype=np.int32),
        "new_comm": np.empty(max(n, 1), dtype=np.int32),
        "threads": threads,
        "batches": views,
        "first_batch": first,
        "order": order,
        "batch_ptr": batch_ptr,
        "chunk_ptr": None,  # (batches, threads + 1) positions in ``order``, made on first use
        "batch_of": None,  # the batch of every vertex (-1: none), made with chunk_ptr
        "moves": None,  # move_sweep's record of a batch's moves and of its movers, made on first use
        "movers": None,
        "parallel": None,  # per batch: whether its moves are decided and applied by every thread
    }


def _plan(indptr, workspace) -> None:
    """The per-thread shares of every batch (by edge count) and which batches run in parallel."""
    if workspace["chunk_ptr"] is not None:
        return
    threads = workspace["threads"]
    nb = workspace["batch_ptr"].shape[0] - 1
    chunk_ptr = np.empty((nb, threads + 1), dtype=np.int64)
    edges = np.empty(nb, dtype=np.int64)
    batch_of = np.full(workspace["new_comm"].shape[0], -1, dtype=np.int32)
    _batch_chunks(indptr, workspace["order"], workspace["batch_ptr"], chunk_ptr, edges, batch_of)
    workspace["chunk_ptr"] = chunk_ptr
    workspace["batch_of"] = batch_of
    workspace["parallel"] = (edges >= _SERIAL_BELOW) & (threads > 1)


@njit(parallel=True, cache=True)
def _batch_chunks(indptr, order, batch_ptr, chunk_ptr, edges, batch_of):  # pragma: no cover - compiled
    # Cut each batch into len(chunk_ptr[k]) - 1 runs of about equal edge count: cut i is the
    # first position whose prefix of degrees reaches i / parts of the batch's edges. Also the
    # batch of every vertex (-1: in none).
    parts = chunk_ptr.shape[1] - 1
    for k in prange(batch_ptr.shape[0] - 1):
        lo = batch_ptr[k]
        hi = batch_ptr[k + 1]
        total = np.int64(0)
        for t in range(lo, hi):
            v = order[t]
            batch_of[v] = k
            total += indptr[v + 1] - indptr[v]
        edges[k] = total
        chunk_ptr[k, 0] = lo
        i = 1
        seen = np.int64(0)
        for t in range(lo, hi):
            while i < parts and seen * parts >= i * total:
                chunk_ptr[k, i] = t
                i += 1
            v = order[t]
            seen += indptr[v + 1] - indptr[v]
        while i <= parts:
            chunk_ptr[k, i] = hi
            i += 1


def move_sweep(indptr, indices, wfix, kfix, comm, csize, afix, buckets, gamma_over_2m, workspace, *,
               tune=None) -> int:
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

    The whole sweep is one compiled call. A batch of at least :data:`_SERIAL_BELOW` edges is
    decided by every thread (each its share of the batch, with its own table) and applied by
    every thread (atomic additions to ``a_c`` and the sizes: integers, so the result does not
    depend on their order); a smaller one runs on the calling thread.

    Returns the change of the internal weight (the first term of Eq. (1): over every vertex, its
    self-loop and its edges' weights into its own community, fixed point) over the sweep, exact:
    before a batch's moves are applied, each vertex that moves sums the change of its pairs with
    its neighbours. After the first sweeps few vertices move, and this costs a small part of a
    pass over every edge, which counting the weight anew would take.
    """
    _plan(indptr, workspace)
    ws = workspace
    if ws["moves"] is None:
        ws["moves"] = np.empty(ws["new_comm"].shape[0], dtype=np.int64)
        ws["movers"] = np.empty(ws["order"].shape[0], dtype=np.int32)
    return int(_sweep(indptr, indices, wfix, kfix, comm, csize, afix, ws["order"], ws["batch_ptr"], ws["chunk_ptr"],
                      ws["parallel"], float(gamma_over_2m), ws["new_comm"], ws["keys"], ws["vals"], ws["tabs"],
                      ws["sums"], ws["poss"], ws["moves"], ws["movers"], ws["batch_of"]))


def decide_moves(indptr, indices, wfix, kfix, comm, csize, afix, gamma_over_2m, workspace, b: int, j: int, *,
                 tune=None):
    """computeMove (Algorithm 2) for batch ``j`` of bucket ``b``: ``workspace["new_comm"][v]``
    becomes the community each vertex ``v`` of the batch moves to (its own if it stays).
    Nothing is applied; returns the batch's vertices."""
    verts = workspace["batches"][b][j]
    if verts.shape[0] == 0:
        return verts
    _plan(indptr, workspace)
    k = workspace["first_batch"][b] + j
    chunks = workspace["chunk_ptr"][k]
    decide = _decide_batch if workspace["parallel"][k] else _decide_batch_serial
    decide(indptr, indices, wfix, kfix, comm, csize, afix, workspace["order"], chunks, float(gamma_over_2m),
           workspace["new_comm"], workspace["keys"], workspace["vals"], workspace["tabs"], workspace["sums"],
           workspace["poss"])
    return verts


def apply_move_rows(rows, comm, csize, afix, kfix, *, tune=None, graph, workspace):
    """Apply the moves carried by message rows ``(kind, v, c, aux)`` (``rows[:, 1]`` moves to
    ``rows[:, 2]``; a vertex already in ``c`` stays), as the GPU twin does, and return the
    change of the internal weight that the moves of the vertices ``lo .. hi - 1`` make.

    ``graph = (indptr, indices, wfix, lo, hi)`` holds a partition's rows, indexed by level
    vertex, and ``workspace`` is the partition's move workspace. The change is counted from the
    movers' rows as :func:`move_sweep` counts a batch's: summed over the partitions, the change
    of the whole level's internal weight.
    """
    indptr, indices, wfix, lo, hi = graph
    n = comm.shape[0]
    if workspace.get("row_moves") is None or workspace["row_moves"].shape[0] != n or workspace["row_batch"] >= 2**31 - 2:
        workspace["row_moves"] = np.empty(n, dtype=np.int64)
        workspace["row_of"] = np.full(n, -1, dtype=np.int32)
        workspace["row_batch"] = 0
    if rows.shape[0] == 0:
        return 0
    workspace["row_batch"] += 1  # (a batch number of its own: the vertices of earlier ones are not of it)
    return int(_apply_move_rows_counted(rows, comm, csize, afix, kfix, indptr, indices, wfix, int(lo), int(hi),
                                        workspace["row_moves"], workspace["row_of"], workspace["row_batch"]))


@njit(cache=True, inline="always")
def _move_vertex(v, o, c, kv, comm, csize, afix):  # pragma: no cover - compiled
    # Vertex v (strength kv) moves from community o to c, on one thread (kernels/louvain.cu's
    # move_vertex with atomics where threads share the state).
    afix[o] -= kv
    afix[c] += kv
    csize[o] -= 1
    csize[c] += 1
    comm[v] = c


@njit(cache=True)
def _apply_move_rows(rows, comm, csize, afix, kfix):  # pragma: no cover - compiled
    for i in range(rows.shape[0]):
        v = rows[i, 1]
        c = rows[i, 2]
        o = comm[v]
        if c != o:
            _move_vertex(v, o, c, kfix[v], comm, csize, afix)


@njit(cache=True)
def _apply_move_rows_counted(rows, comm, csize, afix, kfix, indptr, indices, wfix, lo, hi, moves, batch_of,
                             k):  # pragma: no cover - compiled
    # The rows' vertices become batch k (moves[v] = old << 32 | new, as _apply_range reads them);
    # the owned movers count their pairs' change (_pair_change); then the moves are applied.
    for i in range(rows.shape[0]):
        v = rows[i, 1]
        moves[v] = (np.int64(comm[v]) << 32) | rows[i, 2]
        batch_of[v] = k
    total = np.int64(0)
    for i in range(rows.shape[0]):
        v = rows[i, 1]
        o = moves[v] >> 32
        c = moves[v] & 0xFFFFFFFF
        if c != o and lo <= v < hi:
            total += _pair_change(v, o, c, k, indptr, indices, wfix, comm, moves, batch_of)
    _apply_move_rows(rows, comm, csize, afix, kfix)
    return total


#: Batches and graphs of fewer stored entries run on one thread: waking the thread pool costs
#: more than the work. Results are the same.
_SERIAL_BELOW = 1 << 16

#: Up to this degree computeMove's table is a short list searched linearly (few entries fit
#: in registers and cache; the result is the same as hashing).
_LINEAR_DEGREE = 16


@njit(cache=True)
def _decide_range(order, lo, hi, indptr, indices, wfix, kfix, comm, csize, afix, gamma_over_2m, new_comm, hkeys,
                  hvals, htab, hsum, hpos):  # pragma: no cover - compiled
    # computeMove, Algorithm 2, for each vertex v of order[lo:hi], with one thread's scratch:
    # e_{v->c} summed by community into the list hkeys/hvals, then Eq. (2) with the tie and
    # singleton rules of section 4. The best community is the largest score, the smallest id
    # among equal scores: the same whatever order the list holds the communities in, so the
    # table need not be the paper's (open addressing, double hashing, a prime size above
    # 1.5 deg(v)). Up to _LINEAR_DEGREE the list is searched linearly; above, the communities
    # and weights go to htab/hsum (a power of two at least twice the degree, -1 for an empty
    # slot, linear probing, Fibonacci hashing: no division), then to the list through hpos, the
    # slots used, which are emptied again.
    # (The body is written out in the loop: inlining a per-vertex function made it slower.)
    for t in range(lo, hi):
        v = order[t]
        start = indptr[v]
        stop = indptr[v + 1]
        deg = stop - start
        p = 0
        if deg <= _LINEAR_DEGREE:
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
            bits = 5
            while (1 << bits) < 2 * deg:
                bits += 1
            mask = (1 << bits) - 1
            shift = 32 - bits
            for e in range(start, stop):
                c = comm[indices[e]]
                h = ((np.int64(c) * 2654435769) & 0xFFFFFFFF) >> shift
                while True:
                    k = htab[h]
                    if k == c:
                        hsum[h] += wfix[e]
                        break
                    if k == -1:
                        htab[h] = c
                        hsum[h] = wfix[e]
                        hpos[p] = h
                        p += 1
                        break
                    h = (h + 1) & mask
            for q in range(p):  # into the list, the table left empty
                h = hpos[q]
                hkeys[q] = htab[h]
                hvals[q] = hsum[h]
                htab[h] = -1
        own = comm[v]
        kv = kfix[v]
        gk = float(kv) * gamma_over_2m
        singleton = csize[own] == 1
        e_own = np.int64(0)
        best_c = -1
        best = -np.inf
        for q in range(p):
            c = hkeys[q]
            if c == own:
                e_own = hvals[q]
                continue
            if singleton and c > own and csize[c] == 1:
                continue
            s = float(hvals[q]) - gk * float(afix[c])
            if s > best or (s == best and c < best_c):
                best = s
                best_c = c
        score_own = float(e_own) - gk * float(afix[own] - kv)
        new_comm[v] = best_c if (best_c >= 0 and best > score_own) else own


@njit(cache=True, inline="always")
def _pair_change(v, o, c, k, indptr, indices, wfix, comm, moves, batch_of):  # pragma: no cover - compiled
    # The change of the internal weight I (the sum over ordered pairs of neighbours (v, u) in
    # one community of w(v, u)) from pairs of v, which moves from o to c in batch k. moves[u]
    # holds old << 32 | new for the vertices of the batch (batch_of[u] == k), read instead of
    # comm[u], which the batch's own moves may have overwritten; the other vertices stay. A pair
    # changes only if one end moves; a mover counts its pairs with movers once (the other mover
    # counts the reverse pair) and those with vertices that stay twice (for both directions).
    # Integers: exact in any order.
    total = np.int64(0)
    for e in range(indptr[v], indptr[v + 1]):
        u = indices[e]
        if batch_of[u] == k:
            mu = moves[u]
            before = mu >> 32
            after = mu & 0xFFFFFFFF
            twice = before == after
        else:
            before = comm[u]
            after = before
            twice = True
        d = (1 if after == c else 0) - (1 if before == o else 0)
        if d != 0:
            total += 2 * wfix[e] * d if twice else wfix[e] * d
    return total


@njit(cache=True)
def _apply_range(movers, lo, hi, k, indptr, indices, wfix, kfix, comm, csize, afix, moves, batch_of,
                 atomic):  # pragma: no cover - compiled
    # Algorithm 1, lines 8-11, for the vertices movers[lo:hi] of batch k: each move applied (a_c
    # and the sizes by atomic additions when other threads apply theirs at the same time), and
    # the change of the internal weight returned (_pair_change).
    total = np.int64(0)
    for t in range(lo, hi):
        v = movers[t]
        m = moves[v]
        o = m >> 32
        c = m & 0xFFFFFFFF
        if c == o:
            continue
        total += _pair_change(v, o, c, k, indptr, indices, wfix, comm, moves, batch_of)
        kv = kfix[v]
        if atomic:
            atomic_add(afix, o, -kv)
            atomic_add(afix, c, kv)
            atomic_add(csize, o, -1)
            atomic_add(csize, c, 1)
            comm[v] = c
        else:
            _move_vertex(v, o, c, kv, comm, csize, afix)
    return total


@njit(cache=True)
def _record_moves(order, lo, hi, indptr, comm, new_comm, moves, movers):  # pragma: no cover - compiled
    # old << 32 | new for the vertices order[lo:hi], as _apply_range reads them; the vertices
    # that move, from movers[lo] on. Returns their count and their edges.
    count = 0
    edges = np.int64(0)
    for t in range(lo, hi):
        v = order[t]
        o = comm[v]
        c = new_comm[v]
        moves[v] = (np.int64(o) << 32) | np.int64(c)
        if c != o:
            movers[lo + count] = v
            count += 1
            edges += indptr[v + 1] - indptr[v]
    return count, edges


@njit(parallel=True, cache=True)
def _decide_batch(indptr, indices, wfix, kfix, comm, csize, afix, order, chunks, gamma_over_2m, new_comm, keys,
                  vals, tabs, sums, poss):  # pragma: no cover - compiled
    # One batch's moves: one contiguous share of the batch per thread, each with its own table.
    for ch in prange(chunks.shape[0] - 1):
        _decide_range(order, chunks[ch], chunks[ch + 1], indptr, indices, wfix, kfix, comm, csize, afix,
                      gamma_over_2m, new_comm, keys[ch], vals[ch], tabs[ch], sums[ch], poss[ch])


_decide_batch_serial = serial_twin(_decide_batch)


@njit(parallel=True, cache=True)
def _sweep(indptr, indices, wfix, kfix, comm, csize, afix, order, batch_ptr, chunk_ptr, parallel, gamma_over_2m,
           new_comm, keys, vals, tabs, sums, poss, moves, movers, batch_of):  # pragma: no cover - compiled
    # Algorithm 1, lines 4-11: batch after batch, every move decided from the state at the
    # batch's start, then applied (lines 8-11) before the next batch decides. A parallel batch
    # is decided in one parallel region and applied in a second, or, when its movers have
    # fewer than _SERIAL_BELOW edges (most batches after the first sweeps), on this thread.
    # Returns the change of the internal weight (see _apply_range).
    change = np.int64(0)
    counts = np.zeros(chunk_ptr.shape[1], dtype=np.int64)
    for k in range(batch_ptr.shape[0] - 1):
        lo = batch_ptr[k]
        hi = batch_ptr[k + 1]
        if not parallel[k]:
            _decide_range(order, lo, hi, indptr, indices, wfix, kfix, comm, csize, afix, gamma_over_2m, new_comm,
                          keys[0], vals[0], tabs[0], sums[0], poss[0])
            count, _ = _record_moves(order, lo, hi, indptr, comm, new_comm, moves, movers)
            change += _apply_range(movers, lo, lo + count, k, indptr, indices, wfix, kfix, comm, csize, afix, moves,
                                   batch_of, False)
            continue
        chunks = chunk_ptr[k]
        moved_edges = np.int64(0)
        for ch in prange(chunks.shape[0] - 1):
            _decide_range(order, chunks[ch], chunks[ch + 1], indptr, indices, wfix, kfix, comm, csize, afix,
                          gamma_over_2m, new_comm, keys[ch], vals[ch], tabs[ch], sums[ch], poss[ch])
            count, edges = _record_moves(order, chunks[ch], chunks[ch + 1], indptr, comm, new_comm, moves, movers)
            counts[ch] = count
            moved_edges += edges
        if moved_edges < _SERIAL_BELOW:
            for ch in range(chunks.shape[0] - 1):
                change += _apply_range(movers, chunks[ch], chunks[ch] + counts[ch], k, indptr, indices, wfix, kfix,
                                       comm, csize, afix, moves, batch_of, False)
        else:
            for ch in prange(chunks.shape[0] - 1):
                change += _apply_range(movers, chunks[ch], chunks[ch] + counts[ch], k, indptr, indices, wfix, kfix,
                                       comm, csize, afix, moves, batch_of, True)
    return change


# ------------------------------------------------------------------------- whole-level passes
def _parts(work: int) -> int:
    """Threads for a pass over ``work`` stored entries (1 below :data:`_SERIAL_BELOW`)."""
    return numba.get_num_threads() if work >= _SERIAL_BELOW else 1


def fixed_point(weights, scale: float):
    """``rint(weights * scale)`` as int64: the fixed-point weights (``scale`` a power of two)."""
    w = np.asarray(weights, dtype=np.float64)
    out = np.empty(w.shape[0], dtype=np.int64)
    if w.shape[0] >= _SERIAL_BELOW and numba.get_num_threads() > 1:
        _fixed_point(w, float(scale), out)
    else:
        _fixed_point_serial(w, float(scale), out)
    return out


@njit(parallel=True, cache=True)
def _fixed_point(w, scale, out):  # pragma: no cover - compiled
    # (rint rounds half to even, as NumPy's does)
    for i in prange(w.shape[0]):
        out[i] = np.int64(np.rint(w[i] * scale))


_fixed_point_serial = serial_twin(_fixed_point)


def strengths(indptr, wfix, loop_fix, *, tune=None):
    """``k_i`` (Algorithm 1, line 2): each vertex's edge weights plus its self-loop, fixed point."""
    n = indptr.shape[0] - 1
    out = np.empty(max(n, 0), dtype=np.int64)
    if n > 0:
        parts = _parts(int(wfix.shape[0]))
        kernel = _vertex_sums if parts > 1 else _vertex_sums_serial
        kernel(indptr, wfix, loop_fix, balanced_cuts(indptr, parts), out)
    return out


@njit(parallel=True, cache=True)
def _vertex_sums(indptr, wfix, loop_fix, cuts, out):  # pragma: no cover - compiled
    for ch in prange(cuts.shape[0] - 1):
        for v in range(cuts[ch], cuts[ch + 1]):
            s = loop_fix[v]
            for e in range(indptr[v], indptr[v + 1]):
                s += wfix[e]
            out[v] = s


_vertex_sums_serial = serial_twin(_vertex_sums)


def square_sum(a, *, tune=None) -> int:
    """``sum(a**2)`` exactly, for non-negative int64 ``a`` whose sum is below ``2**60``.

    ``a = h 2^30 + l`` and ``l = p 2^15 + r``: every partial sum stays under ``2**62`` (``sum h
    <= 2**30`` bounds ``sum h^2`` and ``sum h l``), and so does any part of it, so each thread
    sums its share of the five in int64 and the shares add exactly.

    >>> square_sum(np.array([3, 2**40, 0], dtype=np.int64)) == 9 + 2**80
    True
    """
    n = int(a.shape[0])
    if n == 0:
        return 0
    parts = numba.get_num_threads() if n >= _SERIAL_BELOW else 1
    cuts = np.linspace(0, n, parts + 1).astype(np.int64)
    kernel = _square_sums if parts > 1 else _square_sums_serial
    hh, hl, pp, pr, rr = (int(x) for x in kernel(a, cuts).sum(axis=0))
    return (hh << 60) + (hl << 31) + (pp << 30) + (pr << 16) + rr


@njit(parallel=True, cache=True)
def _square_sums(a, cuts):  # pragma: no cover - compiled
    # the five partial sums of each run in its own row, added up by the caller: the loop has no
    # reduction (a sum kept across its inner loops fails some Numba versions' reduction analysis)
    out = np.zeros((cuts.shape[0] - 1, 5), dtype=np.int64)
    for ch in prange(cuts.shape[0] - 1):
        hh = np.int64(0)
        hl = np.int64(0)
        pp = np.int64(0)
        pr = np.int64(0)
        rr = np.int64(0)
        for i in range(cuts[ch], cuts[ch + 1]):
            x = a[i]
            h = x >> 30
            lo = x & ((1 << 30) - 1)
            p = lo >> 15
            r = lo & ((1 << 15) - 1)
            hh += h * h
            hl += h * lo
            pp += p * p
            pr += p * r
            rr += r * r
        out[ch, 0] = hh
        out[ch, 1] = hl
        out[ch, 2] = pp
        out[ch, 3] = pr
        out[ch, 4] = rr
    return out


_square_sums_serial = serial_twin(_square_sums)


def compose_labels(new_id, comm, labels):
    """``new_id[comm[labels]]``: each original vertex's vertex of the next level, by every thread."""
    out = np.empty(labels.shape[0], dtype=np.int32)
    kernel = _compose if labels.shape[0] >= _SERIAL_BELOW and numba.get_num_threads() > 1 else _compose_serial
    kernel(new_id, comm, labels, out)
    return out


@njit(parallel=True, cache=True)
def _compose(new_id, comm, labels, out):  # pragma: no cover - compiled
    for i in prange(labels.shape[0]):
        out[i] = new_id[comm[labels[i]]]


_compose_serial = serial_twin(_compose)


# --------------------------------------------------------------------------------- aggregation
def aggregate(indptr, indices, wfix, loop_fix, comm, *, tune=None):
    """Aggregation phase, Algorithm 3: one vertex per non-empty community.

    Returns ``(indptr, indices, wfix, loop_fix, new_id)`` of the aggregated graph, where
    ``new_id[c]`` is the new vertex of community ``c`` (``-1`` for empty communities);
    communities keep their order, so new ids follow the old community ids. Edges between two
    communities are merged into one edge carrying the summed weight; edges inside a
    community become its self-loop weight. A community's row lists its neighbours in the order
    its members (ascending) first reach them.

    For graphs of at least :data:`_SERIAL_BELOW` stored entries every pass but the prefix sums
    runs on every thread: the counts per community (atomic additions), the members of each
    community (placed by an atomic cursor, then sorted), mergeCommunity (a run of communities
    of about equal edge count per thread, each with its own hash table) and the compaction.
    """
    n = indptr.shape[0] - 1
    parts = _parts(int(indices.shape[0]))
    par = parts > 1
    com_size = np.zeros(max(n, 1), dtype=np.int64)
    com_degree = np.zeros(max(n, 1), dtype=np.int64)
    (_community_counts if par else _community_counts_serial)(indptr, comm, com_size, com_degree)
    new_id = np.empty(max(n, 0), dtype=np.int32)
    vertex_start = np.empty(n + 1, dtype=np.int64)
    edge_pos = np.empty(n + 1, dtype=np.int64)
    n_new = int(_community_offsets(com_size, com_degree, new_id, vertex_start, edge_pos))
    members = np.empty(max(n, 0), dtype=np.int32)
    cv = np.empty(max(n, 0), dtype=np.int32)  # new vertex of each vertex's community
    (_place_members if par else _place_members_serial)(comm, new_id, vertex_start, members, cv)
    ccuts = balanced_cuts(edge_pos, parts)  # a run of communities of about equal edge count per thread
    widest = int(min(int(com_degree.max(initial=0)), n_new))  # most distinct neighbours of one community
    tab_size = 2
    while tab_size < 2 * widest:
        tab_size *= 2
    tab = np.full((parts, tab_size + 16), -1, dtype=np.int32)
    row = np.empty((parts, tab_size + 16), dtype=np.int32)
    slot = np.empty((parts, widest + 16), dtype=np.int32)
    tmp_idx = np.empty(max(int(edge_pos[-1]), 1), dtype=np.int32)
    tmp_w = np.empty(max(int(edge_pos[-1]), 1), dtype=np.int64)
    counts = np.zeros(n_new, dtype=np.int64)
    new_loop = np.zeros(n_new, dtype=np.int64)
    (_merge_communities if par else _merge_communities_serial)(
        indptr, indices, wfix, loop_fix, cv, new_id, members, vertex_start, edge_pos, ccuts, tab, row, slot,
        tmp_idx, tmp_w, counts, new_loop,
    )
    new_indptr = np.zeros(n_new + 1, dtype=np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    new_indices = np.empty(int(new_indptr[-1]), dtype=np.int32)
    new_wfix = np.empty(int(new_indptr[-1]), dtype=np.int64)
    (_compact_edges if par else _compact_edges_serial)(ccuts, new_id, edge_pos, new_indptr, tmp_idx, tmp_w,
                                                       new_indices, new_wfix)
    return new_indptr, new_indices, new_wfix, new_loop, new_id


@njit(parallel=True, cache=True)
def _community_counts(indptr, comm, com_size, com_degree):  # pragma: no cover - compiled
    # Algorithm 3, lines 2-6: comSize and comDegree (atomic: integers, any order).
    for v in prange(indptr.shape[0] - 1):
        c = comm[v]
        atomic_add(com_size, c, 1)
        atomic_add(com_degree, c, indptr[v + 1] - indptr[v])


@njit(cache=True)
def _community_counts_serial(indptr, comm, com_size, com_degree):  # pragma: no cover - compiled
    for v in range(indptr.shape[0] - 1):
        c = comm[v]
        com_size[c] += 1
        com_degree[c] += indptr[v + 1] - indptr[v]


@njit(cache=True)
def _community_offsets(com_size, com_degree, new_id, vertex_start, edge_pos):  # pragma: no cover - compiled
    # Algorithm 3, lines 7-9: new ids (prefix sum of the non-empty communities) and the
    # exclusive prefix sums of comSize and comDegree, in one pass (on one thread: it reads two
    # values a community, little beside the passes over the edges).
    a = np.int64(0)
    b = np.int64(0)
    d = np.int64(0)
    for c in range(new_id.shape[0]):
        s = com_size[c]
        new_id[c] = a if s > 0 else -1
        a += 1 if s > 0 else 0
        vertex_start[c] = b
        b += s
        edge_pos[c] = d
        d += com_degree[c]
    vertex_start[new_id.shape[0]] = b
    edge_pos[new_id.shape[0]] = d
    return a


@njit(parallel=True, cache=True)
def _place_members(comm, new_id, vertex_start, members, cv):  # pragma: no cover - compiled
    # Each community's vertices, placed by an atomic cursor (in any order), then sorted: the
    # vertices of community c end up ascending in members[vertex_start[c]:vertex_start[c + 1]].
    n = comm.shape[0]
    cursor = vertex_start[:n].copy()
    for v in prange(n):
        c = comm[v]
        members[atomic_add(cursor, c, 1)] = v
        cv[v] = new_id[c]
    for c in prange(n):
        lo = vertex_start[c]
        hi = vertex_start[c + 1]
        if hi - lo > 1:
            _sort_ints(members, lo, hi)


@njit(cache=True)
def _place_members_serial(comm, new_id, vertex_start, members, cv):  # pragma: no cover - compiled
    # (vertices in ascending order: each community's members come out sorted)
    n = comm.shape[0]
    cursor = vertex_start[:n].copy()
    for v in range(n):
        c = comm[v]
        members[cursor[c]] = v
        cursor[c] += 1
        cv[v] = new_id[c]


@njit(cache=True)
def _sort_ints(a, lo, hi):  # pragma: no cover - compiled
    # a[lo:hi] ascending in place: insertion sort for short runs, else heapsort (no allocation,
    # safe on any thread).
    m = hi - lo
    if m <= 32:
        for i in range(lo + 1, hi):
            x = a[i]
            j = i - 1
            while j >= lo and a[j] > x:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = x
        return
    for start in range(m // 2 - 1, -1, -1):
        _sift_down(a, lo, start, m)
    for end in range(m - 1, 0, -1):
        x = a[lo]
        a[lo] = a[lo + end]
        a[lo + end] = x
        _sift_down(a, lo, 0, end)


@njit(cache=True)
def _sift_down(a, lo, root, size):  # pragma: no cover - compiled
    while True:
        child = 2 * root + 1
        if child >= size:
            return
        if child + 1 < size and a[lo + child + 1] > a[lo + child]:
            child += 1
        if a[lo + root] >= a[lo + child]:
            return
        x = a[lo + root]
        a[lo + root] = a[lo + child]
        a[lo + child] = x
        root = child


@njit(parallel=True, cache=True)
def _merge_communities(indptr, indices, wfix, loop_fix, cv, new_id, members, vertex_start, edge_pos, ccuts, tab,
                       row, slot, tmp_idx, tmp_w, counts, new_loop):  # pragma: no cover - compiled
    # mergeCommunity (Algorithm 3, line 23): all neighbours of a community's vertices are
    # accumulated by their new community id, in the order the members (ascending) first reach
    # them; the community's own id collects the self-loop. A run of communities per thread,
    # with its own table (open addressing, linear probing, a power of two at least twice the
    # distinct neighbours): tab[h] is the id hashed to h (-1: none), row[h] its row position.
    for ch in prange(ccuts.shape[0] - 1):
        htab = tab[ch]
        hrow = row[ch]
        hslot = slot[ch]
        for c in range(ccuts[ch], ccuts[ch + 1]):
            first = vertex_start[c]
            last = vertex_start[c + 1]
            if first == last:
                continue
            nc = new_id[c]
            base = edge_pos[c]
            span = edge_pos[c + 1] - base  # the community's stored entries: a bound on its row
            bits = 1
            while (1 << bits) < 2 * span and (1 << bits) < htab.shape[0] - 16:
                bits += 1
            mask = (1 << bits) - 1
            shift = 32 - bits
            cnt = 0
            loop = np.int64(0)
            for q in range(first, last):
                u = members[q]
                loop += loop_fix[u]
                for e in range(indptr[u], indptr[u + 1]):
                    d = cv[indices[e]]
                    if d == nc:
                        loop += wfix[e]
                        continue
                    h = ((np.int64(d) * 2654435769) & 0xFFFFFFFF) >> shift  # Fibonacci hashing
                    while True:
                        k = htab[h]
                        if k == d:
                            tmp_w[base + hrow[h]] += wfix[e]
                            break
                        if k == -1:
                            htab[h] = d
                            hrow[h] = cnt
                            hslot[cnt] = h
                            tmp_idx[base + cnt] = d
                            tmp_w[base + cnt] = wfix[e]
                            cnt += 1
                            break
                        h = (h + 1) & mask
            for r in range(cnt):
                htab[hslot[r]] = -1
            counts[nc] = cnt
            new_loop[nc] = loop


_merge_communities_serial = serial_twin(_merge_communities)


@njit(parallel=True, cache=True)
def _compact_edges(ccuts, new_id, edge_pos, new_indptr, tmp_idx, tmp_w, out_idx, out_w):  # pragma: no cover
    # Compaction after mergeCommunity: each community's edge list moves to consecutive slots.
    for ch in prange(ccuts.shape[0] - 1):
        for c in range(ccuts[ch], ccuts[ch + 1]):
            nc = new_id[c]
            if nc < 0:
                continue
            src = edge_pos[c]
            dst = new_indptr[nc]
            for q in range(new_indptr[nc + 1] - dst):
                out_idx[dst + q] = tmp_idx[src + q]
                out_w[dst + q] = tmp_w[src + q]


_compact_edges_serial = serial_twin(_compact_edges)
