"""Suitor and b-Suitor on every CPU thread over one shared graph: the parallel Suitor of Manne and
Halappanavar [1]_ (Algorithm 3 of paper I of the GPU Suitor thesis [2]_ is its GPU form) and the
multithreaded b-Suitor of Khan et al. (:func:`bsuitor_shared`).

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
and a stale state only makes a proposal fail its check under the lock. b-Suitor's thresholds
(the weakest suitor a full heap keeps, and that edge's weight) are published and read the same
way, and rise the same way.

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
from .matching import _beats_threshold, _heap_offer, _keep_best, _lower_ceiling, _threshold

__all__ = ["suitor_shared", "bsuitor_shared"]


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


# ------------------------------------------------------------------------------- b-Suitor
def bsuitor_shared(indptr, indices, weights, b, threads: int, chunk: int = 256):
    """The b-Suitor b-matching of a CSR graph on ``threads`` threads: its edges ``(u, v, w)``
    with ``u < v``, ascending by ``(u, v)``.

    ``b`` holds each vertex's capacity (int64, at most its degree). The algorithm is the
    multithreaded b-Suitor of Khan et al. [3]_: a vertex keeps its ``b`` best suitors in a heap
    changed only under its lock, and a vertex with free proposals scans its row once for the
    best eligible neighbours below its ceiling, as :func:`mgmatch.cpu.matching.bsuitor_local`
    does; a vertex it displaces is handed to the displacing thread, or, when another thread is
    working on it, marked so that thread runs it again. Its result is the greedy b-matching,
    whatever the interleaving.

    .. [3] A. Khan, A. Pothen, M. M. A. Patwary, N. R. Satish, N. Sundaram, F. Manne,
       M. Halappanavar, P. Dubey, "Efficient approximation algorithms for weighted b-matching",
       SIAM J. Sci. Comput. 38(5), 2016 (Algorithm 3).
    """
    n = int(indptr.shape[0]) - 1
    if n <= 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64)
    b = np.asarray(b, dtype=np.int64)
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(b, out=off[1:])
    return _bsuitor_shared(indptr, indices, weights, b, off, np.int64(max(1, int(threads))),
                           np.int64(max(1, int(chunk))))


@njit(cache=True, nogil=True)
def _claim(state, x):  # pragma: no cover - compiled
    # True: the caller now works on x. False: another thread is, and will run x once more.
    # state[x]: 0 idle, 1 in work, 2 in work and to be run again.
    while True:
        s = state[x]
        if s == 0:
            if atomic_cas(state, x, 0, 1) == 0:
                return True
        elif s == 1:
            if atomic_cas(state, x, 1, 2) == 1:
                return False
        else:
            return False


@njit(cache=True, nogil=True)
def _release(state, x):  # pragma: no cover - compiled
    # True: x is idle again. False: x was marked meanwhile; the caller runs it once more.
    if atomic_cas(state, x, 1, 0) == 1:
        return True
    atomic_cas(state, x, 2, 1)
    return False


@njit(cache=True, nogil=True)
def _push_vertex(stack, top, x):  # pragma: no cover - compiled
    if top == stack.shape[0]:
        grown = np.empty(2 * top + 64, np.int64)
        grown[:top] = stack[:top]
        stack = grown
    stack[top] = x
    return stack, top + 1


@njit(cache=True, nogil=True)
def _bpropose(u, indptr, indices, weights, b, hw, hs, hcnt, hoff, own_w, own_s, lock, tcnt, ceil_w, ceil_v,
              state, buf_v, buf_w, buf_s, stack, top):  # pragma: no cover - compiled
    # Vertex u fills its free proposals (Algorithm 3 of [3]); returns the thread's stack of
    # vertices to run, with those u displaced and this thread claimed.
    while True:
        r = b[u] - load_acquire(tcnt, u)
        cw = ceil_w[u]
        if r <= 0 or cw == -np.inf:
            return stack, top
        cv = ceil_v[u]
        nb = 0
        # The pruning tests are written out here as in bsuitor_local, not shared as a helper:
        # a call takes the neighbour's id before the weight test, which skips most entries.
        for e in range(indptr[u], indptr[u + 1]):
            w = weights[e]
            if w > cw:
                continue
            v = indices[e]
            if w == cw and v <= cv:
                continue
            if nb == r and (w < buf_w[nb - 1] or (w == buf_w[nb - 1] and v > buf_v[nb - 1])):
                continue
            thw = load_acquire(own_w, v)  # then the suitor: see the module notes
            ths = own_s[v]
            if w < thw or ths == -2 or (w == thw and not _beats_threshold(w, u, v, thw, ths)):
                continue
            nb = _keep_best(buf_w, buf_v, buf_s, nb, r, w, v, v)  # (one shared graph: a vertex's slot is its id)
        _lower_ceiling(ceil_w, ceil_v, u, nb, r, buf_w, buf_v)
        failed = 0
        for c in range(nb):
            v = buf_v[c]
            w = buf_w[c]
            while atomic_cas(lock, v, 0, 1) != 0:
                pass
            thw, ths = _threshold(hw, hs, hcnt, hoff, b, v)
            if ths != -2 and _beats_threshold(w, u, v, thw, ths):
                x = _heap_offer(hw, hs, hcnt, hoff, b, v, u, w, v)
                thw, ths = _threshold(hw, hs, hcnt, hoff, b, v)
                own_s[v] = ths
                store_release(own_w, v, thw)
                atomic_add(tcnt, u, 1)
                atomic_cas(lock, v, 1, 0)
                if x >= 0:  # x lost v: one more free proposal, and x must run again
                    atomic_add(tcnt, x, -1)
                    if _claim(state, x):
                        stack, top = _push_vertex(stack, top, x)
            else:
                atomic_cas(lock, v, 1, 0)
                failed += 1  # v took better suitors meanwhile: (u, v) is out of reach for good
        if failed == 0:
            return stack, top
        # some places stayed free: look again below the new ceiling


@njit(parallel=True, cache=True)
def _bsuitor_shared(indptr, indices, weights, b, off, threads, chunk):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    total = off[n]
    hw = np.zeros(total, np.float64)
    hs = np.full(total, -1, np.int64)
    hcnt = np.zeros(n, np.int64)
    hoff = off[:n]
    own_w = np.empty(n, np.float64)
    own_s = np.empty(n, np.int64)
    for v in prange(n):  # the empty heaps' thresholds: room for anyone, or (b = 0) for nobody
        own_w[v] = np.inf if b[v] == 0 else -np.inf
        own_s[v] = -2 if b[v] == 0 else -1
    lock = np.zeros(n, np.int32)
    state = np.zeros(n, np.int32)
    tcnt = np.zeros(n, np.int64)
    ceil_w = np.full(n, np.inf, np.float64)
    ceil_v = np.full(n, -1, np.int64)
    bmax = 1
    for v in range(n):
        bmax = max(bmax, b[v])
    cursor = np.zeros(1, np.int64)
    for _ in prange(threads):
        buf_v = np.empty(bmax, np.int64)
        buf_w = np.empty(bmax, np.float64)
        buf_s = np.empty(bmax, np.int64)
        stack = np.empty(64, np.int64)
        while True:
            start = atomic_add(cursor, 0, chunk)
            if start >= n:
                break
            for u0 in range(start, min(start + chunk, n)):
                if not _claim(state, u0):
                    continue
                top = 1
                stack[0] = u0
                while top > 0:
                    top -= 1
                    x = stack[top]
                    while True:
                        stack, top = _bpropose(x, indptr, indices, weights, b, hw, hs, hcnt, hoff, own_w, own_s,
                                               lock, tcnt, ceil_w, ceil_v, state, buf_v, buf_w, buf_s, stack, top)
                        if _release(state, x):
                            break
    # the b-matching: x and y are each other's suitors; each edge once, from its smaller end
    counts = np.zeros(n + 1, np.int64)
    for x in prange(n):
        k = 0
        for p in range(hcnt[x]):
            y = hs[off[x] + p]
            if y > x and _in_heap(hs, off, hcnt, y, x):
                k += 1
        counts[x + 1] = k
    for x in range(n):
        counts[x + 1] += counts[x]
    us = np.empty(counts[n], np.int64)
    vs = np.empty(counts[n], np.int64)
    ws = np.empty(counts[n], np.float64)
    for x in prange(n):
        k = counts[x]
        for p in range(hcnt[x]):
            y = hs[off[x] + p]
            if y > x and _in_heap(hs, off, hcnt, y, x):
                w = hw[off[x] + p]
                us[k] = x
                j = k  # insertion by y: each vertex's few edges ascending
                while j > counts[x] and vs[j - 1] > y:
                    vs[j] = vs[j - 1]
                    ws[j] = ws[j - 1]
                    j -= 1
                vs[j] = y
                ws[j] = w
                k += 1
    return us, vs, ws


@njit(cache=True, nogil=True, inline="always")
def _in_heap(hs, off, hcnt, y, x):  # pragma: no cover - compiled
    for p in range(hcnt[y]):
        if hs[off[y] + p] == x:
            return True
    return False
