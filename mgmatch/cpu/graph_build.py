"""Numba helpers for building CSR graphs in linear time."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._numba_cache import serial_twin

__all__ = ["sort_pairs", "row_pointer", "balanced_cuts", "transpose_csr", "transpose_chunks", "copy_parallel",
           "remote_ids", "ghost_lookup", "ghost_slots", "permute_csr", "top_edges"]


@njit(parallel=True, cache=True)
def copy_parallel(src, dst):  # pragma: no cover - compiled
    """``dst[:] = src`` (with the cast) by every thread: on new memory, whose first touch costs
    more than the copy, the page faults are taken in parallel too."""
    for i in prange(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True)
def _counting_sort(keys, n_keys, order):
    """Stable counting sort of the positions ``order`` by ``keys[order]``."""
    starts = np.zeros(n_keys + 1, np.int64)
    for i in range(order.shape[0]):
        starts[keys[order[i]] + 1] += 1
    for k in range(n_keys):
        starts[k + 1] += starts[k]
    out = np.empty_like(order)
    for i in range(order.shape[0]):
        k = keys[order[i]]
        out[starts[k]] = order[i]
        starts[k] += 1
    return out


def sort_pairs(u: np.ndarray, v: np.ndarray, n_rows: int, n_cols: int) -> np.ndarray:
    """Stable permutation sorting pairs by ``(u, v)``: two counting sorts (LSD radix), O(m + n).

    >>> sort_pairs(np.array([1, 0, 1]), np.array([0, 2, 0]), 2, 3).tolist()
    [1, 0, 2]
    """
    order = np.arange(u.shape[0], dtype=np.int64)
    if u.shape[0] == 0:
        return order
    order = _counting_sort(v, max(int(n_cols), 1), order)
    return _counting_sort(u, max(int(n_rows), 1), order)


@njit(cache=True)
def _row_counts(u, n_rows, indptr):
    for i in range(u.shape[0]):
        indptr[u[i] + 1] += 1
    for r in range(n_rows):
        indptr[r + 1] += indptr[r]
    return indptr


def row_pointer(u_sorted: np.ndarray, n_rows: int, dtype) -> np.ndarray:
    """CSR row pointer of row ids sorted ascending."""
    return _row_counts(u_sorted, int(n_rows), np.zeros(n_rows + 1, dtype=dtype))


@njit(cache=True)
def symmetric_csr(u, v, w, n, indptr, indices, weights):
    """Fill the symmetric CSR of canonical edges ``u < v`` sorted by ``(u, v)``, with no sort.

    Row ``r`` holds its lower neighbours (from edges ``(x, r)``, met in increasing ``x``) and
    then its higher ones (from ``(r, y)``, met in increasing ``y``), so every row comes out
    sorted.
    """
    for k in range(u.shape[0]):
        indptr[u[k] + 1] += 1
        indptr[v[k] + 1] += 1
    for r in range(n):
        indptr[r + 1] += indptr[r]
    fill = indptr[:-1].copy()
    for k in range(u.shape[0]):  # lower neighbours: x into row v
        p = fill[v[k]]
        indices[p] = u[k]
        weights[p] = w[k]
        fill[v[k]] = p + 1
    for k in range(u.shape[0]):  # higher neighbours: y into row u
        p = fill[u[k]]
        indices[p] = v[k]
        weights[p] = w[k]
        fill[u[k]] = p + 1


def balanced_cuts(prefix, parts: int) -> np.ndarray:
    """``parts + 1`` bounds ``0 = c_0 <= ... <= c_parts = len(prefix) - 1``: ``c_i`` the first
    index whose prefix sum reaches ``i / parts`` of the total (``prefix`` non-decreasing, from 0).
    Of ``indptr``: runs of vertices of about equal stored entries.

    >>> balanced_cuts(np.array([0, 2, 4, 6, 8]), 2).tolist()
    [0, 2, 4]
    """
    n = prefix.shape[0] - 1
    # integer targets: a float one would make searchsorted convert the whole array
    targets = np.arange(parts + 1, dtype=np.int64) * int(prefix[-1]) // parts
    cuts = np.minimum(np.searchsorted(prefix, targets, side="left"), n).astype(np.int64)
    cuts[0], cuts[-1] = 0, n
    return np.maximum.accumulate(cuts)


@njit(parallel=True, cache=True)
def _transpose_chunked(indptr, indices, n_cols, bounds, fill, col_ptr, col_rows):  # pragma: no cover - compiled
    """The transpose by row chunks ``bounds``: chunk ``t`` counts its entries per column in
    ``fill[t]``, the columns' starts are summed over the chunks in order, and each chunk places
    its rows from its own start in every column. Chunk ``t``'s rows precede chunk ``t + 1``'s
    in a column and each chunk walks its rows in order, so every column's rows come out
    ascending, as one thread writes them."""
    chunks = bounds.shape[0] - 1
    for t in prange(chunks):
        for e in range(indptr[bounds[t]], indptr[bounds[t + 1]]):
            fill[t, indices[e]] += 1
    for c in prange(n_cols):
        total = 0
        for t in range(chunks):
            total += fill[t, c]
        col_ptr[c + 1] = total
    for c in range(n_cols):
        col_ptr[c + 1] += col_ptr[c]
    for c in prange(n_cols):
        at = col_ptr[c]
        for t in range(chunks):
            k = fill[t, c]
            fill[t, c] = at
            at += k
    for t in prange(chunks):
        for r in range(bounds[t], bounds[t + 1]):
            for e in range(indptr[r], indptr[r + 1]):
                c = indices[e]
                col_rows[fill[t, c]] = r
                fill[t, c] += 1


_transpose_serial = serial_twin(_transpose_chunked)  # (one chunk, on this thread)


def transpose_chunks(nnz: int, n_cols: int, threads: int, min_edges: int = 1 << 16) -> int:
    """Row chunks for :func:`transpose_csr` on ``threads`` threads: one per thread, each of at
    least ``min_edges`` entries, and no more than keep the chunks' column counts (a chunk by
    column table) within the entries' own count."""
    return max(1, min(int(threads), int(nnz) // max(int(min_edges), 1), int(nnz) // max(int(n_cols), 1)))


def transpose_csr(indptr: np.ndarray, indices: np.ndarray, n_cols: int, chunks: int = 1):
    """CSC (column pointer, row ids) of a CSR pattern in linear time, rows ascending per column.

    ``chunks > 1`` splits the rows into that many chunks of about equal entries, processed in
    parallel (:func:`transpose_chunks` chooses it); the result is the same.

    >>> ptr, rows = transpose_csr(np.array([0, 2, 3]), np.array([0, 1, 1]), 2)
    >>> ptr.tolist(), rows.tolist()
    ([0, 1, 3], [0, 0, 1])
    >>> [a.tolist() for a in transpose_csr(np.array([0, 2, 3]), np.array([0, 1, 1]), 2, chunks=2)]
    [[0, 1, 3], [0, 0, 1]]
    """
    col_ptr = np.zeros(int(n_cols) + 1, dtype=indptr.dtype)
    col_rows = np.empty(indices.shape[0], dtype=indices.dtype)
    chunks = max(1, min(int(chunks), indptr.shape[0] - 1))
    fill = np.zeros((chunks, int(n_cols)), dtype=indptr.dtype)
    kernel = _transpose_chunked if chunks > 1 else _transpose_serial
    kernel(indptr, indices, int(n_cols), balanced_cuts(indptr, chunks), fill, col_ptr, col_rows)
    return col_ptr, col_rows


@njit(cache=True, nogil=True)
def _fill_lookup(lo, hi, ghosts, lookup):
    n_owned = hi - lo
    for k in range(ghosts.shape[0]):
        lookup[ghosts[k]] = n_owned + k


@njit(cache=True, nogil=True)
def _fill_slots(indices, lo, hi, lookup, slot):
    for e in range(indices.shape[0]):
        v = indices[e]
        slot[e] = v - lo if lo <= v < hi else lookup[v]


def _slot_dtype(lo: int, hi: int, ghosts: np.ndarray):
    """``int32`` while every slot fits (as the ids of a graph that small do): half the bytes a
    step reads per edge."""
    return np.int32 if int(hi) - int(lo) + ghosts.shape[0] <= np.iinfo(np.int32).max else np.int64


def ghost_lookup(lo: int, hi: int, ghosts: np.ndarray, n_global: int) -> np.ndarray:
    """An id-to-slot table of ``n_global`` entries: entry ``ghosts[k]`` is ``n_owned + k``.
    Only the ghosts' entries are written (and only they may be read), so building it costs a
    pass over the ghosts, not over every vertex; a message from a ghost then finds its slot in
    one read instead of a binary search.

    >>> ghost_lookup(1, 3, np.array([5, 9]), 10)[[5, 9]].tolist()
    [2, 3]
    """
    lookup = np.empty(int(n_global), dtype=_slot_dtype(lo, hi, ghosts))
    _fill_lookup(int(lo), int(hi), ghosts, lookup)
    return lookup


def ghost_slots(indices: np.ndarray, lo: int, hi: int, ghosts: np.ndarray, n_global: int,
                lookup: np.ndarray | None = None) -> np.ndarray:
    """Slot of every CSR entry's neighbour: ``v - lo`` for owned vertices, ``n_owned + k`` for
    the ghost ``ghosts[k]``. One pass through the :func:`ghost_lookup` table (given, or built
    here); ``int32`` while the slots fit.

    >>> ghost_slots(np.array([1, 5, 2, 9]), 1, 3, np.array([5, 9]), 10).tolist()
    [0, 2, 1, 3]
    """
    if lookup is None:
        lookup = ghost_lookup(lo, hi, ghosts, n_global)
    slot = np.empty(indices.shape[0], dtype=_slot_dtype(lo, hi, ghosts))
    _fill_slots(indices, int(lo), int(hi), lookup, slot)
    return slot


@njit(cache=True, nogil=True)
def _remote_ids(indices, lo, hi, seen):
    count = 0
    for e in range(indices.shape[0]):
        v = indices[e]
        if (v < lo or v >= hi) and not seen[v]:
            seen[v] = True
            count += 1
    out = np.empty(count, indices.dtype)
    k = 0
    for v in range(seen.shape[0]):
        if seen[v]:
            out[k] = v
            k += 1
    return out


def remote_ids(indices: np.ndarray, lo: int, hi: int, n: int) -> np.ndarray:
    """The sorted distinct ids in ``indices`` outside ``[lo, hi)`` (a partition's ghosts), in
    one pass over the entries and one over a mark per vertex: linear time, where sorting the
    remote entries took ``O(nnz log nnz)``. Releases the GIL, so partitions are built at once.

    >>> remote_ids(np.array([5, 1, 9, 5, 2]), 1, 3, 10).tolist()
    [5, 9]
    """
    return _remote_ids(indices, int(lo), int(hi), np.zeros(int(n), dtype=np.bool_))


def permute_csr(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray, order: np.ndarray):
    """The symmetric CSR ``(indptr, indices, weights)`` with vertex ``order[i]`` named ``i``:
    ``(indptr, indices, weights)`` of the same dtypes, ids ascending within each row.

    Every thread fills whole rows: row ``i`` is old row ``order[i]`` with its ids renamed, then
    sorted (a short row in place, a long one by an index sort).

    >>> ptr, ids, w = permute_csr(np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1]), np.array([1., 1., 2., 2.]),
    ...                           np.array([1, 2, 0]))  # the path 0-1-2 as 2-0-1
    >>> ptr.tolist(), ids.tolist(), w.tolist()
    ([0, 2, 3, 4], [1, 2, 0, 0], [2.0, 1.0, 2.0, 1.0])
    """
    n = order.shape[0]
    new_id = np.empty(n, dtype=indices.dtype)
    new_id[order] = np.arange(n, dtype=indices.dtype)
    new_ptr = np.zeros(n + 1, dtype=indptr.dtype)
    np.cumsum(np.diff(indptr)[order], out=new_ptr[1:])
    out_ids = np.empty_like(indices)
    out_w = np.empty_like(weights)
    _permute_rows(indptr, indices, weights, order, new_id, new_ptr, out_ids, out_w)
    return new_ptr, out_ids, out_w


@njit(parallel=True, cache=True, nogil=True)
def _permute_rows(indptr, indices, weights, order, new_id, new_ptr, out_ids, out_w):  # pragma: no cover - compiled
    for i in prange(order.shape[0]):
        lo, start = indptr[order[i]], new_ptr[i]
        k = new_ptr[i + 1] - start
        for j in range(k):
            out_ids[start + j] = new_id[indices[lo + j]]
            out_w[start + j] = weights[lo + j]
        if k <= 32:  # insertion sort: the rows of a mesh, a geometric graph
            for j in range(start + 1, start + k):
                key, w = out_ids[j], out_w[j]
                t = j - 1
                while t >= start and out_ids[t] > key:
                    out_ids[t + 1] = out_ids[t]
                    out_w[t + 1] = out_w[t]
                    t -= 1
                out_ids[t + 1] = key
                out_w[t + 1] = w
        else:
            by_id = np.argsort(out_ids[start:start + k])
            ids = out_ids[start:start + k][by_id]
            ws = out_w[start:start + k][by_id]
            out_ids[start:start + k] = ids
            out_w[start:start + k] = ws


def top_edges(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray, k: int) -> np.ndarray:
    """Each row's ``k`` highest-ranked entries, in rank order: ``(rows, k)`` entry positions,
    heaviest first and equal weights by ascending id (the order matchings rank a vertex's
    edges), ``-1`` after the last entry of a shorter row. One pass over each row, keeping its
    best ``k`` by insertion.

    >>> top_edges(np.array([0, 4, 5]), np.array([1, 2, 3, 4, 0]), np.array([1., 3., 3., 2., 1.]), 2).tolist()
    [[1, 2], [4, -1]]
    """
    out = np.full((indptr.shape[0] - 1, max(int(k), 1)), -1, dtype=np.int64)
    _top_edges(indptr, indices, weights, out)
    return out


@njit(parallel=True, cache=True, nogil=True)
def _top_edges(indptr, indices, weights, out):  # pragma: no cover - compiled
    k = out.shape[1]
    for r in prange(indptr.shape[0] - 1):
        n = 0
        for e in range(indptr[r], indptr[r + 1]):
            w, v = weights[e], indices[e]
            if n == k:  # full: e must outrank the last kept entry
                last = out[r, k - 1]
                if w < weights[last] or (w == weights[last] and v > indices[last]):
                    continue
                t = k - 1
            else:
                t = n
                n += 1
            while t > 0:
                prev = out[r, t - 1]
                if weights[prev] > w or (weights[prev] == w and indices[prev] < v):
                    break
                out[r, t] = prev
                t -= 1
            out[r, t] = e
