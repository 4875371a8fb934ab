"""CPU twins (Numba) of the weighted-matching kernels, in partition form.

Every kernel works on one :class:`~mgmatch.graph.Partition`. Vertex state lives in *slot* arrays:
slots ``0 .. n_owned-1`` are the owned vertices ``lo .. hi-1`` (exact state) and slots
``n_owned ..`` are the ghosts in sorted order (a cached, conservative view of remote state that
messages refresh). ``slot[e]`` gives the slot of the neighbour in CSR entry ``e``; with one
partition it is simply ``indices``.

The twins take the GPU kernels' arguments and a few more of the CPU's own: ``ghost_slot``, the
ghosts' id-to-slot table, which finds a message sender's slot in one read (the GPU kernels search
the sorted ``ghosts``), and for b-Suitor the owned thresholds and ceilings it keeps between
steps. Every kernel runs without the GIL, so the engine steps partitions on threads at once.

Messages are rows of an ``int64`` array ``(kind, dst, src, aux)`` and a ``float64`` weight; the
receiver is the owner of ``dst``:

===========  ====================================================================================
PROPOSE      ``src`` (remote) proposes to ``dst`` with edge weight ``w``          (Suitor, b-Suitor)
DISPLACE     ``dst`` is no longer a suitor of ``src``, whose threshold is ``(w, aux)``  (Suitor, b-Suitor)
POINT        ``src`` (remote) now points at ``dst`` as its heaviest free neighbour     (LD, handshake)
MATCHED      ``src`` is matched; ``dst`` pointed at it                                    (LD, handshake)
===========  ====================================================================================

Total order on edges (the one every algorithm shares, so that all of them return the greedy
matching): edge ``(a, b)`` ranks above ``(c, d)`` when its weight is larger, or the weights are
equal and ``(min(a, b), max(a, b))`` is lexicographically smaller. Seen from one vertex ``u``, a
neighbour ``v`` beats ``v'`` when ``w(u, v) > w(u, v')``, or the weights tie and ``v < v'``.

References
----------
.. [1] F. Manne and M. Halappanavar, "New effective multithreaded matching algorithms",
   IPDPS 2014 (the Suitor algorithm).
.. [2] M. Naim, F. Manne, M. Halappanavar, A. Tumeo, J. Langguth, "Optimizing approximate
   weighted matching on Nvidia Kepler K40", HiPC 2015 (paper I of the GPU Suitor thesis:
   Algorithm 1, locally dominant matching; Algorithm 3, Suitor).
.. [3] A. Khan, A. Pothen, M. M. A. Patwary, N. R. Satish, N. Sundaram, F. Manne,
   M. Halappanavar, P. Dubey, "Efficient approximation algorithms for weighted b-matching",
   SIAM J. Sci. Comput. 38(5), 2016 (b-Suitor).
.. [4] One-way handshaking matching with a segmented max-scan for the strongest neighbour.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "PROPOSE", "DISPLACE", "POINT", "MATCHED",
    "suitor_local", "bsuitor_local", "bsuitor_pairs", "ld_local", "handshake_local",
    "strongest_neighbour", "greedy_matching", "greedy_b_matching",
]

PROPOSE, DISPLACE, POINT, MATCHED = 0, 1, 2, 3
NEG_INF = -np.inf


# --------------------------------------------------------------------------- order helpers
@njit(cache=True, nogil=True, inline="always")
def _edge_beats(w1, a1, b1, w2, a2, b2):
    """Edge (a1, b1) of weight w1 ranks strictly above edge (a2, b2) of weight w2."""
    if w1 != w2:
        return w1 > w2
    lo1, hi1 = min(a1, b1), max(a1, b1)
    lo2, hi2 = min(a2, b2), max(a2, b2)
    if lo1 != lo2:
        return lo1 < lo2
    return hi1 < hi2


@njit(cache=True, nogil=True, inline="always")
def _beats_threshold(w, u, v, tw, ts):
    """Edge (u, v) beats vertex v's threshold: its weakest kept suitor ``ts`` of weight ``tw``
    (``ts == -1`` means v still has room, so any edge beats it)."""
    if ts < 0:
        return True
    return _edge_beats(w, u, v, tw, ts, v)


@njit(cache=True, nogil=True, inline="always")
def _eligible(w, u, v, tw, ts):
    """Edge (u, v) of weight w beats v's suitor threshold ``(tw, ts)``: a proposal along it can
    stand (a heavier edge, or an equal one that wins the tie)."""
    return w > tw or (w == tw and _beats_threshold(w, u, v, tw, ts))


@njit(cache=True, nogil=True)
def _push(ob_i, ob_w, cnt, kind, dst, src, w, aux):
    if cnt == ob_i.shape[0]:
        cap = 2 * cnt + 64
        ni = np.empty((cap, 4), np.int64)
        nw = np.empty(cap, np.float64)
        ni[:cnt] = ob_i[:cnt]
        nw[:cnt] = ob_w[:cnt]
        ob_i, ob_w = ni, nw
    ob_i[cnt, 0] = kind
    ob_i[cnt, 1] = dst
    ob_i[cnt, 2] = src
    ob_i[cnt, 3] = aux
    ob_w[cnt] = w
    return ob_i, ob_w, cnt + 1


@njit(cache=True, nogil=True)
def _seed_work(queue, extra):
    """A work list holding ``queue``, with room for ``extra`` more vertices."""
    work = np.empty(queue.shape[0] + extra, np.int64)
    work[: queue.shape[0]] = queue
    return work, queue.shape[0]


@njit(cache=True, nogil=True, inline="always")
def _slot_of(v, lo, hi, ghost_slot):
    """Slot of vertex ``v``: ``v - lo`` when owned, else its entry in the ghosts' id-to-slot
    table (:func:`~mgmatch.cpu.graph_build.ghost_lookup`; one read, where a binary search of
    the sorted ghost list took a cache miss per step)."""
    if lo <= v < hi:
        return v - lo
    return ghost_slot[v]


# --------------------------------------------------------------------------------- Suitor
@njit(cache=True, nogil=True)
def suitor_local(lo, hi, indptr, indices, weights, slot, ghosts,
                 suitor, ws, target, target_w, queue, in_i, in_w, ghost_slot, top):
    """Suitor on one partition until local quiescence (paper I, Algorithm 3; [1]).

    ``suitor[s]``/``ws[s]`` hold, for every slot, the current suitor and its edge weight (exact
    for owned slots, a lower bound for ghosts). ``target[i]``/``target_w[i]`` hold the vertex an
    owned vertex currently proposes to (``-1``: none yet); when that proposal is refused or
    displaced, ``target[i]`` becomes ``-2 - v`` for its last target ``v`` (``target_w[i]`` keeps
    the weight). ``queue`` lists owned vertices (global ids) that must (re)propose; inbox
    messages are applied first. Returns the outbox ``(ints, w)``.

    A vertex picks the best *eligible* neighbour (its edge beats the neighbour's threshold), and
    thresholds only rise: every edge ranking above the one it proposed along was ineligible when
    it chose, so it stays so, and so does that edge once refused. A new search therefore looks
    only below the last proposal (the ceiling ``(target_w[i], -2 - target[i])``), a test on the
    row's own weights and ids; above it no threshold is read. This skips no eligible edge, so
    every proposal, and the result, is what a search of the whole row gives.

    ``top`` (:func:`~mgmatch.cpu.graph_build.top_edges`, or an empty ``(0, 1)`` array) lists
    each owned row's best entries in rank order. A search reads that list first and ends at the
    first eligible edge below the ceiling, or at u's own suitor, as the edges after it rank
    lower; only when the whole list is ineligible does it read the rest of the row, below the
    list's last entry. A search of the row alone reads it whole at every proposal, and on a
    skewed graph most of a run goes to the long rows of vertices that propose again and again.
    The same edge is chosen either way.

    Thread mapping of the GPU twin: a warp per vertex scanning its neighbourhood; here one
    sequential sweep in queue order.
    """
    n_owned = hi - lo
    ob_i = np.empty((64, 4), np.int64)
    ob_w = np.empty(64, np.float64)
    cnt = 0
    work, nwork = _seed_work(queue, in_i.shape[0])
    # -- inbox: proposals to owned vertices, displacements of owned proposers
    for k in range(in_i.shape[0]):
        kind, dst, src, aux = in_i[k, 0], in_i[k, 1], in_i[k, 2], in_i[k, 3]
        w = in_w[k]
        d = dst - lo
        if kind == PROPOSE:
            if _beats_threshold(w, src, dst, ws[d], suitor[d]):
                x = suitor[d]
                suitor[d] = src
                ws[d] = w
                if x >= 0:
                    if lo <= x < hi:
                        target[x - lo] = -2 - dst
                        work[nwork] = x
                        nwork += 1
                    else:
                        ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, DISPLACE, x, dst, w, src)
            else:  # rejected: tell the proposer v's current threshold
                ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, DISPLACE, src, dst, ws[d], suitor[d])
        else:  # DISPLACE: refresh the ghost's threshold, re-propose if it was our target
            g = _slot_of(src, lo, hi, ghost_slot)
            if _edge_beats(w, aux, src, ws[g], suitor[g], src) or suitor[g] < 0:
                ws[g] = w
                suitor[g] = aux
            if target[d] == src:
                target[d] = -2 - src
                work[nwork] = dst
                nwork += 1
    # -- local proposals to quiescence. As in the Suitor paper, a vertex's search starts from its
    # own current suitor x: only edges ranking above (u, x) are candidates, and u proposes back to
    # x when nothing better is eligible and x would still take u. Edges ranking below (u, x)
    # cannot end up matched (u's suitors only improve), so skipping them changes no result.
    for q in range(nwork):
        u = work[q]
        while u >= 0:
            i = u - lo
            if target[i] >= 0:
                break  # already proposing (queued twice)
            best_v = suitor[i]
            best_w = ws[i]
            best_s = -1
            ceil_w = np.inf  # the ceiling: u's last proposal, if it made one
            ceil_v = -1
            if target[i] <= -2:
                ceil_w = target_w[i]
                ceil_v = -2 - target[i]
            scan = True  # the row is read (whole, or below the top list)
            if top.shape[0] != 0:  # the row's best entries first, in rank order
                scan = False
                last = -1
                for j in range(top.shape[1]):
                    e = top[i, j]
                    if e < 0:
                        break
                    last = e
                    w = weights[e]
                    v = indices[e]
                    if w > ceil_w or (w == ceil_w and v <= ceil_v):
                        if j == top.shape[1] - 1:
                            scan = True
                        continue
                    if w < best_w:
                        break
                    if best_v >= 0 and w == best_w and v >= best_v:
                        if v == best_v:
                            best_s = slot[e]
                        break
                    s = slot[e]
                    if _eligible(w, u, v, ws[s], suitor[s]):
                        best_v, best_s, best_w = v, s, w
                        break
                    if j == top.shape[1] - 1:
                        scan = True  # every listed entry was ineligible
                if scan:
                    if indptr[i + 1] - indptr[i] <= top.shape[1]:
                        scan = False  # the list was the whole row
                    elif weights[last] < ceil_w or (weights[last] == ceil_w and indices[last] > ceil_v):
                        ceil_w = weights[last]  # the rest of the row: below the list
                        ceil_v = indices[last]
            end = indptr[i + 1] if scan else indptr[i]
            for e in range(indptr[i], end):
                w = weights[e]
                if w < best_w or w > ceil_w:
                    continue
                v = indices[e]
                if w == ceil_w and v <= ceil_v:
                    continue
                if best_v >= 0 and w == best_w and v >= best_v:
                    if v == best_v:
                        best_s = slot[e]  # the suitor itself: its eligibility is checked below
                    continue
                s = slot[e]
                if _eligible(w, u, v, ws[s], suitor[s]):
                    best_v, best_s, best_w = v, s, w
            if best_v < 0 or best_s < 0:
                break
            if best_v == suitor[i] and best_w == ws[i]:
                if not _beats_threshold(best_w, u, best_v, ws[best_s], suitor[best_s]):
                    break  # its suitor has a better suitor than u: nothing worth proposing
            target[i] = best_v
            target_w[i] = best_w
            x = suitor[best_s]
            suitor[best_s] = u
            ws[best_s] = best_w
            if best_s < n_owned:
                if x >= 0 and lo <= x < hi:
                    target[x - lo] = -2 - best_v
                    u = x  # the displaced local suitor proposes next
                    continue
                if x >= 0:
                    ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, DISPLACE, x, best_v, best_w, u)
            else:
                # remote target: the cached (best_w, u) stays a valid lower bound of its threshold
                ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, PROPOSE, best_v, u, best_w, -1)
            u = -1
    return ob_i[:cnt], ob_w[:cnt]


# ------------------------------------------------------------------------------- b-Suitor
@njit(cache=True, nogil=True, inline="always")
def _heap_less(hw, hs, a, b, v):
    # heap order: the weaker suitor (lower-ranked edge to v) sits nearer the root
    return _edge_beats(hw[b], hs[b], v, hw[a], hs[a], v)


@njit(cache=True, nogil=True)
def _heap_sift_down(hw, hs, base, size, pos, v):
    while True:
        left = 2 * pos + 1
        if left >= size:
            return
        c = left
        if left + 1 < size and _heap_less(hw, hs, base + left + 1, base + left, v):
            c = left + 1
        if _heap_less(hw, hs, base + c, base + pos, v):
            hw[base + c], hw[base + pos] = hw[base + pos], hw[base + c]
            hs[base + c], hs[base + pos] = hs[base + pos], hs[base + c]
            pos = c
        else:
            return


@njit(cache=True, nogil=True)
def _heap_sift_up(hw, hs, base, pos, v):
    while pos > 0:
        parent = (pos - 1) // 2
        if _heap_less(hw, hs, base + pos, base + parent, v):
            hw[base + pos], hw[base + parent] = hw[base + parent], hw[base + pos]
            hs[base + pos], hs[base + parent] = hs[base + parent], hs[base + pos]
            pos = parent
        else:
            return


@njit(cache=True, nogil=True)
def _heap_offer(hw, hs, hcnt, hoff, b, i, u, w, v):
    """Insert suitor u (weight w) into owned vertex i's heap. Returns the displaced suitor or -1."""
    base = hoff[i]
    cap = b[i]
    if hcnt[i] < cap:
        hw[base + hcnt[i]] = w
        hs[base + hcnt[i]] = u
        hcnt[i] += 1
        _heap_sift_up(hw, hs, base, hcnt[i] - 1, v)
        return -1
    x = hs[base]
    hw[base] = w
    hs[base] = u
    _heap_sift_down(hw, hs, base, cap, 0, v)
    return x


@njit(cache=True, nogil=True, inline="always")
def _threshold(hw, hs, hcnt, hoff, b, i):
    if hcnt[i] < b[i]:
        return NEG_INF, -1
    if b[i] == 0:
        return np.inf, -2  # takes nobody
    return hw[hoff[i]], hs[hoff[i]]


@njit(cache=True, nogil=True, inline="always")
def _refresh_threshold(own_w, own_s, hw, hs, hcnt, hoff, b, i):
    thw, ths = _threshold(hw, hs, hcnt, hoff, b, i)
    own_w[i] = thw
    own_s[i] = ths


@njit(cache=True, nogil=True, inline="always")
def _remove_target(tid, tcnt, toff, i, v):
    base = toff[i]
    for k in range(tcnt[i]):
        if tid[base + k] == v:
            tcnt[i] -= 1
            tid[base + k] = tid[base + tcnt[i]]
            return True
    return False


@njit(cache=True, nogil=True)
def _keep_best(buf_w, buf_v, buf_s, nb, r, w, v, s):
    """Insert eligible neighbour ``v`` (slot ``s``, edge weight ``w``) among the ``r`` best kept
    so far, best first (weight down, id up); returns how many are kept."""
    pos = nb if nb < r else r - 1
    while pos > 0 and (w > buf_w[pos - 1] or (w == buf_w[pos - 1] and v < buf_v[pos - 1])):
        if pos < r:
            buf_w[pos] = buf_w[pos - 1]
            buf_v[pos] = buf_v[pos - 1]
            buf_s[pos] = buf_s[pos - 1]
        pos -= 1
    buf_w[pos] = w
    buf_v[pos] = v
    buf_s[pos] = s
    return nb + 1 if nb < r else nb


@njit(cache=True, nogil=True)
def _lower_ceiling(ceil_w, ceil_v, i, nb, r, buf_w, buf_v):
    """After a scan: a scan that filled all ``r`` places moves the ceiling down to the last of
    them; one that filled fewer found every eligible edge, and none can become eligible again."""
    if nb < r:
        ceil_w[i] = -np.inf
    else:
        ceil_w[i] = buf_w[nb - 1]
        ceil_v[i] = buf_v[nb - 1]


@njit(cache=True, nogil=True)
def bsuitor_local(lo, hi, indptr, indices, weights, slot, ghosts, b,
                  hw, hs, hcnt, hoff, tw, ts, tid, tcnt, toff, queue, in_i, in_w,
                  own_w, own_s, ceil_w, ceil_v, ghost_slot):
    """b-Suitor on one partition until local quiescence (Khan et al. [3], Algorithm 2).

    Owned vertex ``i`` keeps a min-heap of its ``b[i]`` best suitors (``hw``/``hs`` at
    ``hoff[i]``, ``hcnt[i]`` used) and the list of vertices it proposes to (``tid`` at
    ``toff[i]``, ``tcnt[i]`` used). An active vertex with ``r`` free proposals scans its row
    once, keeping the ``r`` best eligible neighbours (edge beats the neighbour's weakest kept
    suitor, not proposed to already) in a small buffer, and proposes to all of them: a
    proposal changes only its target's heap, so the others stay eligible. ``tw``/``ts`` hold
    each ghost slot's cached threshold (a lower bound); ``ts == -2`` marks a vertex that takes
    nobody.

    ``own_w``/``own_s`` hold the owned vertices' thresholds (those of their heaps, kept up to
    date with every heap change, so that a row scan reads one array per edge and a step costs
    nothing per owned vertex). ``(ceil_w[i], ceil_v[i])`` is owned vertex ``i``'s ceiling: the
    lowest-ranked edge it has proposed along (``+inf`` before its first scan, ``-inf`` once no
    edge can be eligible again). Thresholds only rise, so every edge above the ceiling is a
    current target or out of reach for good, and a scan looks only below it: a test on the
    row's own weights and ids, with no threshold read and no search of the target list above
    it. A scan that fills all ``r`` places moves the ceiling down to the last of them; one that
    fills fewer found every eligible edge, and none can become eligible later. The proposals,
    and so the result, are those of a scan of the whole row.
    """
    n_owned = hi - lo
    ob_i = np.empty((64, 4), np.int64)
    ob_w = np.empty(64, np.float64)
    cnt = 0
    bmax = 1
    for i in range(n_owned):
        bmax = max(bmax, b[i])
    buf_v = np.empty(bmax, np.int64)
    buf_s = np.empty(bmax, np.int64)
    buf_w = np.empty(bmax, np.float64)
    work, nwork = _seed_work(queue, in_i.shape[0] + 16)
    for k in range(in_i.shape[0]):
        kind, dst, src, aux = in_i[k, 0], in_i[k, 1], in_i[k, 2], in_i[k, 3]
        w = in_w[k]
        d = dst - lo
        if kind == PROPOSE:
            thw, ths = _threshold(hw, hs, hcnt, hoff, b, d)
            if ths != -2 and _beats_threshold(w, src, dst, thw, ths):
                x = _heap_offer(hw, hs, hcnt, hoff, b, d, src, w, dst)
                _refresh_threshold(own_w, own_s, hw, hs, hcnt, hoff, b, d)
                if x >= 0:
                    nthw, nths = own_w[d], own_s[d]
                    if lo <= x < hi:
                        _remove_target(tid, tcnt, toff, x - lo, dst)
                        work[nwork] = x
                        nwork += 1
                    else:
                        ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, DISPLACE, x, dst, nthw, nths)
            else:
                ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, DISPLACE, src, dst, thw, ths)
        else:  # DISPLACE
            g = _slot_of(src, lo, hi, ghost_slot) - n_owned
            if aux == -2 or (ts[g] != -2 and (ts[g] < 0 or (aux >= 0 and _edge_beats(w, aux, src, tw[g], ts[g], src)))):
                tw[g] = w
                ts[g] = aux
            if _remove_target(tid, tcnt, toff, d, src):
                work[nwork] = dst
                nwork += 1
    q = 0
    while q < nwork:
        u = work[q]
        q += 1
        i = u - lo
        r = b[i] - tcnt[i]
        if r <= 0:
            continue
        # one scan below the ceiling: the r best eligible neighbours, best first (weight down, id up)
        cw, cv = ceil_w[i], ceil_v[i]
        nb = 0
        for e in range(indptr[i], indptr[i + 1]):
            w = weights[e]
            if w > cw:
                continue
            v = indices[e]
            if w == cw and v <= cv:
                continue
            if nb == r and (w < buf_w[nb - 1] or (w == buf_w[nb - 1] and v > buf_v[nb - 1])):
                continue
            s = slot[e]
            if s < n_owned:
                thw, ths = own_w[s], own_s[s]
            else:
                thw, ths = tw[s - n_owned], ts[s - n_owned]
            if w < thw or ths == -2 or (w == thw and not _beats_threshold(w, u, v, thw, ths)):
                continue
            nb = _keep_best(buf_w, buf_v, buf_s, nb, r, w, v, s)
        _lower_ceiling(ceil_w, ceil_v, i, nb, r, buf_w, buf_v)
        for c in range(nb):
            v, s, w = buf_v[c], buf_s[c], buf_w[c]
            tid[toff[i] + tcnt[i]] = v
            tcnt[i] += 1
            if s < n_owned:
                x = _heap_offer(hw, hs, hcnt, hoff, b, s, u, w, v)
                _refresh_threshold(own_w, own_s, hw, hs, hcnt, hoff, b, s)
                if x >= 0:
                    if lo <= x < hi:
                        _remove_target(tid, tcnt, toff, x - lo, v)
                        if nwork == work.shape[0]:
                            grown = np.empty(2 * nwork + 16, np.int64)
                            grown[:nwork] = work[:nwork]
                            work = grown
                        work[nwork] = x
                        nwork += 1
                    else:
                        ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, DISPLACE, x, v, own_w[s], own_s[s])
            else:
                ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, PROPOSE, v, u, w, -1)
    return ob_i[:cnt], ob_w[:cnt]


@njit(cache=True, nogil=True)
def bsuitor_pairs(lo, hoff, hcnt, hs, hw, tid, tcnt):
    """Edges of the b-matching seen from the owned vertices: ``(x, y)`` is matched when ``y``
    is among ``x``'s suitors and ``x`` proposes to ``y``."""
    n = hcnt.shape[0]
    total = 0
    for i in range(n):
        total += hcnt[i]
    us = np.empty(total, np.int64)
    vs = np.empty(total, np.int64)
    ws = np.empty(total, np.float64)
    k = 0
    for i in range(n):
        a = hoff[i]
        for p in range(hcnt[i]):
            y = hs[a + p]
            for t in range(tcnt[i]):
                if tid[a + t] == y:
                    us[k] = lo + i
                    vs[k] = y
                    ws[k] = hw[a + p]
                    k += 1
                    break
    return us[:k], vs[:k], ws[:k]


# ------------------------------------------------------------ locally dominant / handshake
@njit(cache=True, nogil=True, inline="always")
def _best_free(i, u, indptr, indices, weights, slot, matched):
    best_v = -1
    best_w = NEG_INF
    for e in range(indptr[i], indptr[i + 1]):
        if matched[slot[e]]:
            continue
        v = indices[e]
        w = weights[e]
        if best_v < 0 or w > best_w or (w == best_w and v < best_v):
            best_v, best_w = v, w
    return best_v, best_w


@njit(cache=True, nogil=True)
def _ld_settle(lo, hi, indptr, indices, weights, slot, ghost_slot, matched, cand, mate, mate_w,
               fresh, nfresh, ob_i, ob_w, cnt):
    """Process newly matched owned vertices (a queue): neighbours that pointed at them pick new
    candidates (local: possibly matching at once; remote: told by a MATCHED message)."""
    n_owned = hi - lo
    q = 0
    while q < nfresh:
        y = fresh[q]
        q += 1
        j = y - lo
        for e in range(indptr[j], indptr[j + 1]):
            s = slot[e]
            if matched[s] or cand[s] != y:
                continue
            x = indices[e]
            if s >= n_owned:
                ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, MATCHED, x, y, 0.0, -1)
                continue
            v, w = _best_free(s, x, indptr, indices, weights, slot, matched)
            cand[s] = v
            if v < 0:
                continue
            sv = _slot_of(v, lo, hi, ghost_slot)
            if sv >= n_owned:
                ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, POINT, v, x, w, -1)
            if cand[sv] == x:  # mutual: locally dominant edge
                matched[s] = True
                matched[sv] = True
                mate[s] = v
                mate_w[s] = w
                if sv < n_owned:
                    mate[sv] = x
                    mate_w[sv] = w
                    if nfresh + 2 > fresh.shape[0]:
                        grown = np.empty(2 * fresh.shape[0] + 16, np.int64)
                        grown[:nfresh] = fresh[:nfresh]
                        fresh = grown
                    fresh[nfresh] = v
                    nfresh += 1
                if nfresh + 1 > fresh.shape[0]:
                    grown = np.empty(2 * fresh.shape[0] + 16, np.int64)
                    grown[:nfresh] = fresh[:nfresh]
                    fresh = grown
                fresh[nfresh] = x
                nfresh += 1
    return ob_i, ob_w, cnt


@njit(cache=True, nogil=True, inline="always")
def _weight_to(i, v, indptr, indices, weights):
    """The weight of owned row ``i``'s entry for neighbour ``v`` (0.0 when there is none)."""
    for e in range(indptr[i], indptr[i + 1]):
        if indices[e] == v:
            return weights[e]
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def _tell_remote_pointers(y, lo, n_owned, indptr, indices, slot, matched, cand, ob_i, ob_w, cnt):
    """MATCHED to every free remote neighbour of owned vertex ``y`` that points at it: ``y`` is
    taken, and they choose again in their partition."""
    j = y - lo
    for e in range(indptr[j], indptr[j + 1]):
        s = slot[e]
        if s >= n_owned and not matched[s] and cand[s] == y:
            ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, MATCHED, indices[e], y, 0.0, -1)
    return ob_i, ob_w, cnt


@njit(cache=True, nogil=True)
def _apply_pointer_inbox(lo, hi, ghost_slot, matched, cand, mate, mate_w, in_i, in_w, fresh, ob_i, ob_w, cnt):
    nfresh = 0
    for k in range(in_i.shape[0]):
        kind, dst, src = in_i[k, 0], in_i[k, 1], in_i[k, 2]
        d = dst - lo
        g = _slot_of(src, lo, hi, ghost_slot)
        if kind == POINT:
            cand[g] = dst
            if matched[d]:
                if mate[d] != src:
                    ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, MATCHED, src, dst, 0.0, -1)
            elif cand[d] == src:  # both point at each other: match across the boundary
                matched[d] = True
                matched[g] = True
                mate[d] = src
                mate_w[d] = in_w[k]
                fresh[nfresh] = dst
                nfresh += 1
        else:  # MATCHED: src is taken; whoever pointed at it looks again
            matched[g] = True
            if not matched[d] and cand[d] == src:
                cand[d] = -2  # needs a new candidate
                fresh[nfresh] = -1 - dst
                nfresh += 1
    return nfresh, ob_i, ob_w, cnt


@njit(cache=True, nogil=True)
def ld_local(lo, hi, indptr, indices, weights, slot, ghosts, matched, cand, mate, mate_w,
             first, in_i, in_w, ghost_slot):
    """Locally-dominant matching on one partition until local quiescence (paper I, Algorithm 1,
    with ProcessVertex): each free vertex points at its heaviest free neighbour; mutual pointers
    match; the vertices that pointed at a newly matched vertex look again.

    ``matched``/``cand`` are slot arrays (ghost entries cached from POINT/MATCHED messages);
    ``mate``/``mate_w`` hold owned vertices' partners. ``first`` runs the initial sweep.
    """
    n_owned = hi - lo
    ob_i = np.empty((64, 4), np.int64)
    ob_w = np.empty(64, np.float64)
    cnt = 0
    fresh = np.empty(n_owned + in_i.shape[0] + 16, np.int64)
    nfresh, ob_i, ob_w, cnt = _apply_pointer_inbox(lo, hi, ghost_slot, matched, cand, mate, mate_w,
                                                   in_i, in_w, fresh, ob_i, ob_w, cnt)
    # vertices whose remote candidate was taken: find a new candidate
    relook = np.empty(nfresh + (n_owned if first else 0), np.int64)
    nrelook = 0
    keep = 0
    for k in range(nfresh):
        if fresh[k] < 0:
            relook[nrelook] = -1 - fresh[k]
            nrelook += 1
        else:
            fresh[keep] = fresh[k]
            keep += 1
    nfresh = keep
    if first:
        for i in range(n_owned):
            if indptr[i + 1] > indptr[i]:
                relook[nrelook] = lo + i
                nrelook += 1
        # first sweep: all candidates, then mutual pairs
        for k in range(nrelook):
            i = relook[k] - lo
            v, w = _best_free(i, relook[k], indptr, indices, weights, slot, matched)
            cand[i] = v
    for k in range(nrelook):
        x = relook[k]
        i = x - lo
        if matched[i]:
            continue
        if not first:
            v, w = _best_free(i, x, indptr, indices, weights, slot, matched)
            cand[i] = v
        v = cand[i]
        if v < 0:
            continue
        sv = _slot_of(v, lo, hi, ghost_slot)
        w = _weight_to(i, v, indptr, indices, weights)
        if sv >= n_owned:
            ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, POINT, v, x, w, -1)
        if cand[sv] == x and not matched[sv]:
            matched[i] = True
            matched[sv] = True
            mate[i] = v
            mate_w[i] = w
            fresh[nfresh] = x
            nfresh += 1
            if sv < n_owned:
                mate[sv] = x
                mate_w[sv] = w
                fresh[nfresh] = v
                nfresh += 1
    ob_i, ob_w, cnt = _ld_settle(lo, hi, indptr, indices, weights, slot, ghost_slot, matched, cand,
                                 mate, mate_w, fresh, nfresh, ob_i, ob_w, cnt)
    return ob_i[:cnt], ob_w[:cnt]


@njit(cache=True, nogil=True)
def strongest_neighbour(n_rows, indptr, indices, weights, slot, matched, row_free):
    """Segmented max-scan: for each free row its strongest free neighbour (ties to the smaller
    id), or -1. The CPU twin of the handshaking scan kernel (one segment per row)."""
    out = np.full(n_rows, -1, np.int64)
    for i in range(n_rows):
        if not row_free[i]:
            continue
        best_v = -1
        best_w = NEG_INF
        for e in range(indptr[i], indptr[i + 1]):
            if matched[slot[e]]:
                continue
            v = indices[e]
            w = weights[e]
            if best_v < 0 or w > best_w or (w == best_w and v < best_v):
                best_v, best_w = v, w
        out[i] = best_v
    return out


@njit(cache=True, nogil=True)
def handshake_local(lo, hi, indptr, indices, weights, slot, ghosts, matched, cand, mate, mate_w,
                    sent, in_i, in_w, ghost_slot):
    """One-way handshaking on one partition until local quiescence [4].

    Repeated passes: every free owned vertex points at its strongest free neighbour (the
    segmented max-scan), then pairs that point at each other match (the collate step). A vertex
    pointing at a ghost sends POINT once per new target (``sent``). Returns the outbox and the
    number of passes made.
    """
    n_owned = hi - lo
    ob_i = np.empty((64, 4), np.int64)
    ob_w = np.empty(64, np.float64)
    cnt = 0
    fresh = np.empty(n_owned + in_i.shape[0] + 16, np.int64)
    nfresh, ob_i, ob_w, cnt = _apply_pointer_inbox(lo, hi, ghost_slot, matched, cand, mate, mate_w,
                                                   in_i, in_w, fresh, ob_i, ob_w, cnt)
    for k in range(nfresh):  # matches made across the boundary: tell remote pointers
        if fresh[k] >= 0:
            ob_i, ob_w, cnt = _tell_remote_pointers(fresh[k], lo, n_owned, indptr, indices, slot, matched, cand,
                                                    ob_i, ob_w, cnt)
    passes = 0
    row_free = np.empty(n_owned, np.bool_)
    while True:
        passes += 1
        for i in range(n_owned):
            row_free[i] = not matched[i]
        best = strongest_neighbour(n_owned, indptr, indices, weights, slot, matched, row_free)
        for i in range(n_owned):
            if row_free[i]:
                cand[i] = best[i]
        made = 0
        for i in range(n_owned):  # collate: mutual pointers match
            v = cand[i]
            if v < 0 or matched[i]:
                continue
            sv = _slot_of(v, lo, hi, ghost_slot)
            if sv >= n_owned:
                if sent[i] != v:
                    sent[i] = v
                    w = _weight_to(i, v, indptr, indices, weights)
                    ob_i, ob_w, cnt = _push(ob_i, ob_w, cnt, POINT, v, lo + i, w, -1)
                if cand[sv] != lo + i or matched[sv]:
                    continue
            elif cand[sv] != lo + i:
                continue
            w = _weight_to(i, v, indptr, indices, weights)
            matched[i] = True
            matched[sv] = True
            mate[i] = v
            mate_w[i] = w
            if sv < n_owned:
                mate[sv] = lo + i
                mate_w[sv] = w
            made += 1
            # remote vertices that pointed at the newly matched owned vertices must look again
            for y in (lo + i, v):
                if lo <= y < hi:
                    ob_i, ob_w, cnt = _tell_remote_pointers(y, lo, n_owned, indptr, indices, slot, matched, cand,
                                                            ob_i, ob_w, cnt)
        if made == 0:
            break
    return ob_i[:cnt], ob_w[:cnt], passes


# ----------------------------------------------------------------- sequential references
@njit(cache=True, nogil=True)
def _greedy_scan(order, u, v, n, mate):
    for k in range(order.shape[0]):
        e = order[k]
        a, b = u[e], v[e]
        if mate[a] < 0 and mate[b] < 0:
            mate[a] = b
            mate[b] = a
    return mate


def greedy_matching(u, v, w, n):
    """Sequential greedy matching under the shared total order (the reference result)."""
    lo_, hi_ = np.minimum(u, v), np.maximum(u, v)
    order = np.lexsort((hi_, lo_, -np.asarray(w, dtype=np.float64)))
    mate = np.full(n, -1, np.int64)
    return _greedy_scan(order, lo_.astype(np.int64), hi_.astype(np.int64), n, mate)


@njit(cache=True, nogil=True)
def _greedy_b_scan(order, u, v, b, chosen):
    deg = np.zeros(b.shape[0], np.int64)
    for k in range(order.shape[0]):
        e = order[k]
        if deg[u[e]] < b[u[e]] and deg[v[e]] < b[v[e]]:
            deg[u[e]] += 1
            deg[v[e]] += 1
            chosen[e] = True
    return chosen


def greedy_b_matching(u, v, w, b):
    """Sequential greedy b-matching under the shared total order: a boolean mask of edges."""
    lo_, hi_ = np.minimum(u, v), np.maximum(u, v)
    order = np.lexsort((hi_, lo_, -np.asarray(w, dtype=np.float64)))
    chosen = np.zeros(lo_.shape[0], np.bool_)
    return _greedy_b_scan(order, lo_.astype(np.int64), hi_.astype(np.int64), np.asarray(b, np.int64), chosen)
