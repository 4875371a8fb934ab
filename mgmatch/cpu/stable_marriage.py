"""CPU twins (Numba) of the stable-marriage kernels, in partition form.

A woman's state is one 64-bit key: ``wrank << 32 | man`` of her current suitor (``EMPTY`` when
she has none), where ``wrank`` is her rank of him. Smaller keys are better, so a proposal is
one minimum: the man wins when his key is below hers, and the key it replaces names the man he
displaces [1]_ (Algorithm 1, with the paper's enhancement: a man skips every woman whose
suitor she prefers to him, as such a proposal would be refused).

Slots as in :class:`~mgmatch.preferences.PreferencePartition`: ``slot[e] < n_wlocal`` is an
owned woman (``key`` holds her exact state), larger slots are remote women (``ghost_key``
holds an upper bound of their key, refreshed by their rejections: keys only decrease, so a man
whose key is above the bound would be refused, and skips her). A proposal to a remote woman
leaves the man *pending* on her (``pending[i]``: the list entry); the partition program sends
it as a message.

``nxt[i]`` is the list entry man ``i`` resumes from; every woman before it either refused him,
or holds a suitor she prefers to him (keys only decrease), so it is exact for a man at rest
and a safe place to resume for a displaced one.

Two orders of the same proposals, each returning the man-optimal stable matching [1]_:
Gale-Shapley takes free men from a queue (``queue=True``); McVitie-Wilson lets a displaced
man propose again at once (a stack). The parallel twins run one man per thread, each proposal
an atomic minimum on the woman's key, as the paper's OpenMP codes run a compare-and-swap.

References
----------
.. [1] F. Manne, M. Naim, H. Lerring, M. Halappanavar, "On stable marriages and greedy
   matchings", CSC 2016 (paper IV of the GPU Suitor thesis), sections 2 and 4.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._atomics import atomic_add
from ._atomics import atomic_umin as atomic_min  # (the keys are unsigned)
from ._atomics import load_relaxed as atomic_load

__all__ = ["PROPOSE", "REJECT", "EMPTY", "MAN_MASK", "sm_run", "sm_run_parallel", "sm_inbox", "rank_by_keys",
           "repeated_entries", "atomic_min", "atomic_add", "atomic_load"]

PROPOSE, REJECT = 0, 1
#: The key of a woman without a suitor.
EMPTY = np.uint64(2**64 - 1)
#: The man's id in a key.
MAN_MASK = np.uint64(2**32 - 1)
_NONE = -1


# ----------------------------------------------------------------------------- one man
@njit(cache=True, inline="always")
def _key(wrank, man):
    return (np.uint64(wrank) << np.uint64(32)) | np.uint64(man)


@njit(cache=True)
def _advance(i, lo, n_owned, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, atomic):
    """Man ``i`` (local index) proposes down his list from ``nxt[i]`` until a woman takes him,
    he is pending on a remote woman, or his list ends. Returns the local man he displaced, or
    -1 (nobody, or a remote man: the program finds those by their lost women)."""
    man = lo + i
    e = nxt[i]
    end = indptr[i + 1]
    while e < end:
        mine = _key(wrank[e], man)
        s = slot[e]
        if s < n_wlocal:
            current = atomic_load(key, s) if atomic else key[s]
            if current < mine:  # she holds a suitor she prefers: he would be refused
                e += 1
                continue
            nxt[i] = e + 1  # before the proposal: whoever displaces him resumes from here
            if atomic:
                old = atomic_min(key, s, mine)
                if old < mine:  # a better man took her first
                    e += 1
                    continue
            else:
                old = key[s]
                key[s] = mine
            if old == EMPTY:
                return _NONE
            x = np.int64(old & MAN_MASK) - lo
            return x if 0 <= x < n_owned else _NONE
        if ghost_key[s - n_wlocal] < mine:  # a remote woman known to hold a better suitor
            e += 1
            continue
        nxt[i] = e + 1
        pending[i] = e
        return _NONE
    nxt[i] = end
    return _NONE


# ------------------------------------------------------------------------------- drivers
@njit(cache=True)
def sm_run(lo, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, work, queue):
    """Sequential Gale-Shapley (``queue=True``: a queue of free men, [1]_ Algorithm 1) or
    McVitie-Wilson (``queue=False``: a displaced man proposes again at once) over the local
    men listed in ``work``, to local quiescence."""
    n_owned = indptr.shape[0] - 1
    if not queue:
        for t in range(work.shape[0]):
            i = work[t]
            while i >= 0:
                i = _advance(i, lo, n_owned, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, False)
        return
    # a free man is in the queue at most once, so a ring of n_owned + 1 places holds it
    cap = n_owned + 1
    ring = np.empty(cap, np.int64)
    head = 0
    tail = 0
    for t in range(work.shape[0]):
        ring[tail] = work[t]
        tail = (tail + 1) % cap
    while head != tail:
        i = ring[head]
        head = (head + 1) % cap
        x = _advance(i, lo, n_owned, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, False)
        if x >= 0:
            ring[tail] = x
            tail = (tail + 1) % cap


@njit(cache=True, parallel=True)
def _mw_parallel(lo, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, work):
    n_owned = indptr.shape[0] - 1
    for t in prange(work.shape[0]):
        i = work[t]
        while i >= 0:
            i = _advance(i, lo, n_owned, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, True)


@njit(cache=True, parallel=True)
def _gs_parallel(lo, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, work, n_chunks):
    """Gale-Shapley on threads as the paper's OpenMP code: the men are split among the
    threads, each runs the algorithm with a queue of its own, and a man displaced by a thread's
    man joins that thread's queue."""
    n_owned = indptr.shape[0] - 1
    size = work.shape[0]
    for c in prange(n_chunks):
        a = c * size // n_chunks
        count = (c + 1) * size // n_chunks - a
        cap = count + 16
        ring = np.empty(cap, np.int64)  # a growing ring: free men of this thread, in order
        ring[:count] = work[a:a + count]
        head = 0
        while count > 0:
            i = ring[head]
            head = (head + 1) % cap
            count -= 1
            x = _advance(i, lo, n_owned, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, True)
            if x < 0:
                continue
            if count == cap:
                grown = np.empty(2 * cap, np.int64)
                for j in range(count):
                    grown[j] = ring[(head + j) % cap]
                ring = grown
                head = 0
                cap = 2 * cap
            ring[(head + count) % cap] = x
            count += 1


def sm_run_parallel(lo, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, work, queue):
    """The parallel twins of :func:`sm_run`: each proposal an atomic minimum on the woman's
    key, as the compare-and-swap of the paper's OpenMP codes.

    McVitie-Wilson (``queue=False``): a man per loop iteration; the thread follows him and
    every man he displaces until nobody is displaced. Gale-Shapley (``queue=True``): the men
    split among the threads, each with a queue of its own."""
    import numba  # noqa: PLC0415

    args = (lo, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, work)
    if queue:
        _gs_parallel(*args, max(1, min(numba.get_num_threads(), work.shape[0])))
    else:
        _mw_parallel(*args)


# --------------------------------------------------------------------------------- inbox
@njit(cache=True, inline="always")
def _ghost_slot(ghosts, w):
    return np.searchsorted(ghosts, w)


@njit(cache=True)
def sm_inbox(lo, hi, wlo, ghosts, key, ghost_key, in_i):
    """Apply a partition's inbox, message by message.

    ``PROPOSE (dst woman, src man, aux key)``: a remote man proposes to an owned woman. She
    refuses him when she holds a better suitor (a REJECT goes back at once); else he becomes
    her suitor, the man she leaves (if owned) proposes again, and the pair is returned as
    *held by a remote man* (the program rejects him when he loses her later).
    ``REJECT (dst man, src woman, aux her key)``: an owned man was refused or displaced; her
    key bounds the ghost's, and he proposes again.

    Returns ``(work, rejects, held_w, held_m)``: local men to run, REJECT rows ``(kind, man,
    woman, key)``, and the owned women (local index) now held by remote men with those men.
    """
    k = in_i.shape[0]
    work = np.empty(k, np.int64)
    n_work = 0
    rejects = np.empty((k, 4), np.int64)
    n_rej = 0
    held_w = np.empty(k, np.int64)
    held_m = np.empty(k, np.int64)
    n_held = 0
    for j in range(k):
        kind = in_i[j, 0]
        dst = in_i[j, 1]
        src = in_i[j, 2]
        mine = np.uint64(in_i[j, 3])
        if kind == PROPOSE:
            s = dst - wlo
            old = key[s]
            if old < mine:
                rejects[n_rej, 0] = REJECT
                rejects[n_rej, 1] = src
                rejects[n_rej, 2] = dst
                rejects[n_rej, 3] = np.int64(old)
                n_rej += 1
                continue
            key[s] = mine
            held_w[n_held] = s
            held_m[n_held] = src
            n_held += 1
            if old != EMPTY:
                x = np.int64(old & MAN_MASK)
                if lo <= x < hi:  # an owned man displaced; a remote one is in the held list
                    work[n_work] = x - lo
                    n_work += 1
        else:
            g = _ghost_slot(ghosts, src)
            if mine < ghost_key[g]:
                ghost_key[g] = mine
            work[n_work] = dst - lo
            n_work += 1
    return work[:n_work], rejects[:n_rej], held_w[:n_held], held_m[:n_held]


# ------------------------------------------------------------------------ instance building
@njit(cache=True, parallel=True)
def repeated_entries(indptr, women):
    """Mask of the list entries naming a woman already named earlier in the same list."""
    out = np.zeros(women.shape[0], np.bool_)
    for m in prange(indptr.shape[0] - 1):
        for e in range(indptr[m] + 1, indptr[m + 1]):
            for f in range(indptr[m], e):
                if women[f] == women[e]:
                    out[e] = True
                    break
    return out


@njit(cache=True)
def _group_by_woman(women, n_women):
    """Entries grouped by woman, a counting sort: ``(wptr, order)`` (one pass of scattered
    writes; on threads, their atomic counters contend for the same cache lines)."""
    nnz = women.shape[0]
    wptr = np.zeros(n_women + 1, np.int64)
    for e in range(nnz):
        wptr[women[e] + 1] += 1
    for w in range(n_women):
        wptr[w + 1] += wptr[w]
    fill = wptr[:-1].copy()
    order = np.empty(nnz, np.int64)
    for e in range(nnz):
        w = women[e]
        order[fill[w]] = e
        fill[w] += 1
    return wptr, order


@njit(cache=True, parallel=True)
def _rank_groups(wptr, order, keys, wrank, longest):
    n_women = wptr.shape[0] - 1
    n_chunks = min(n_women, 1024)
    for c in prange(n_chunks):
        entry = np.empty(longest, np.int64)  # one group at a time, sorted in cache
        key = np.empty(longest, keys.dtype)
        for w in range(c * n_women // n_chunks, (c + 1) * n_women // n_chunks):
            a = wptr[w]
            k = wptr[w + 1] - a
            for j in range(k):
                entry[j] = order[a + j]
                key[j] = keys[entry[j]]
            for j in range(1, k):  # insertion sort: the groups are short (about ln n)
                e = entry[j]
                v = key[j]
                i = j - 1
                while i >= 0 and (key[i] > v or (key[i] == v and entry[i] > e)):
                    entry[i + 1] = entry[i]
                    key[i + 1] = key[i]
                    i -= 1
                entry[i + 1] = e
                key[i + 1] = v
            for j in range(k):
                wrank[entry[j]] = j


def rank_by_keys(women, keys, n_women):
    """Each woman's dense rank of the men listing her, in the order of ``(keys[e], e)`` over
    her entries ``e``: ``wrank`` as int32 (each group sorted on its own thread)."""
    wptr, order = _group_by_woman(women, n_women)
    wrank = np.empty(women.shape[0], np.int32)
    if women.shape[0]:
        _rank_groups(wptr, order, keys, wrank, int(np.diff(wptr).max()))
    return wrank
