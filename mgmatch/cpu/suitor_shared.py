"""Suitor on every CPU thread over one shared graph: the parallel Suitor of Manne and
Halappanavar [1]_ (Algorithm 3 of paper I of the GPU Suitor thesis [2]_ is its GPU form).

Every thread takes vertices from a shared cursor and lets each propose to its best eligible
neighbour; a vertex displaced from its target proposes next on the same thread. The two fields
of a vertex's threshold (its current suitor and that edge's weight) change together under the
vertex's lock; a proposer searches without locks and checks its choice again under the
target's lock, retrying its search when the target took a better suitor meanwhile. Thresholds
only rise, so a neighbour found ineligible in a search stays so, and a proposal that passes the
check under the lock is the one a sequential run would make at that moment. The result is
therefore the Suitor matching of the sequential algorithm, which is the greedy matching of the
total order on edges (weight, then the smaller pair of ids): the same on any number of threads,
in any interleaving, and the same as the partition program's (:func:`mgmatch.cpu.matching.suitor_local`)
and the GPU kernels'.

Reading a threshold without the lock reads two fields: the writer stores the suitor first and
then the weight with release ordering; the reader loads the weight with acquire ordering and
then the suitor. A suitor read that way belongs to the update whose weight was read or to a
later one, so a neighbour is never judged ineligible on a state older than the weight read,
and a stale state only makes a proposal fail its check under the lock.

References
----------
.. [1] F. Manne and M. Halappanavar, "New effective multithreaded matching algorithms",
   IPDPS 2014 (Algorithm 2, the parallel Suitor algorithm with a lock per vertex).
.. [2] M. Naim, F. Manne, M. Halappanavar, A. Tumeo, J. Langguth, "Optimizing approximate
   weighted matching on Nvidia Kepler K40", HiPC 2015.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._atomics import atomic_add, atomic_cas, load_acquire, store_release

__all__ = ["suitor_shared"]


def suitor_shared(indptr, indices, weights, threads: int, chunk: int = 256):
    """The Suitor matching of a CSR graph on ``threads`` threads: ``(mate, mate_w)``, where
    ``mate[u]`` is u's partner (-1: unmatched) and ``mate_w[u]`` the weight of their edge.

    ``indices`` are the neighbours of each row (no self-loops), ``weights`` their finite edge
    weights. Vertices are handed out ``chunk`` at a time from a shared cursor, so a thread that
    meets the hubs of a skewed graph does not hold the others up.
    """
    n = int(indptr.shape[0]) - 1
    if n <= 0:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    return _suitor_shared(indptr, indices, weights, np.int64(max(1, int(threads))), np.int64(max(1, int(chunk))))


@njit(cache=True, nogil=True)
def _propose(u, indptr, indices, weights, suitor, ws, lock, target, target_w):  # pragma: no cover - compiled
    # Vertex u proposes; so does, in turn, every suitor it displaces (Algorithm 2 of [1]).
    while u >= 0:
        # the ceiling: u's last proposal, refused or displaced; every edge ranking above it was
        # ineligible when u chose it, and stays so (as in mgmatch.cpu.matching.suitor_local)
        ceil_w = np.inf
        ceil_v = -1
        if target[u] <= -2:
            ceil_w = target_w[u]
            ceil_v = -2 - target[u]
        # the floor: u's suitors only improve, so an edge lighter than its current suitor's
        # can never be matched
        floor_w = load_acquire(ws, u)
        best_v = -1
        best_w = -np.inf
        for e in range(indptr[u], indptr[u + 1]):
            w = weights[e]
            if w < floor_w or w > ceil_w:
                continue
            v = indices[e]
            if w == ceil_w and v <= ceil_v:
                continue
            if best_v >= 0 and (w < best_w or (w == best_w and v > best_v)):
                continue  # not better than the best so far (weight, then the smaller id)
            tw = load_acquire(ws, v)
            if w < tw:
                continue
            if w == tw:
                ts = suitor[v]
                if 0 <= ts <= u:
                    continue  # on a tie, v keeps the suitor of smaller id
            best_v = v
            best_w = w
        if best_v < 0:
            return
        v = best_v
        while atomic_cas(lock, v, 0, 1) != 0:
            pass
        tw = ws[v]
        ts = suitor[v]
        if best_w > tw or (best_w == tw and (ts < 0 or u < ts)):
            suitor[v] = u
            store_release(ws, v, best_w)
            # u's proposal, and the displaced suitor's ceiling, are written before v is released:
            # the next thread to displace u from v finds them
            target[u] = v
            target_w[u] = best_w
            if ts >= 0:
                target[ts] = -2 - v  # (target_w[ts] is already tw, the weight it proposed with)
            atomic_cas(lock, v, 1, 0)
            u = ts  # the displaced suitor proposes next (none: -1)
        else:
            atomic_cas(lock, v, 1, 0)  # v took a better suitor meanwhile: search again


@njit(parallel=True, cache=True)
def _suitor_shared(indptr, indices, weights, threads, chunk):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    suitor = np.full(n, -1, np.int64)
    ws = np.full(n, -np.inf, np.float64)
    lock = np.zeros(n, np.int32)
    target = np.full(n, -1, np.int64)
    target_w = np.zeros(n, np.float64)
    cursor = np.zeros(1, np.int64)
    for _ in prange(threads):
        while True:
            start = atomic_add(cursor, 0, chunk)
            if start >= n:
                break
            for u in range(start, min(start + chunk, n)):
                _propose(u, indptr, indices, weights, suitor, ws, lock, target, target_w)
    mate = np.empty(n, np.int64)
    mate_w = np.empty(n, np.float64)
    for u in prange(n):
        s = suitor[u]
        if s >= 0 and suitor[s] == u:
            mate[u] = s
            mate_w[u] = ws[u]
        else:
            mate[u] = -1
            mate_w[u] = 0.0
    return mate, mate_w
