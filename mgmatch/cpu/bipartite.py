"""CPU twins of the bipartite matching kernels (Numba), same signatures as :mod:`mgmatch.gpu.bipartite`.

Each public function here has a GPU twin with the same signature and semantics; the drivers in
:mod:`mgmatch.algorithms.bipartite` pick the twin from the device and never branch otherwise.
Arrays are NumPy ``int32`` or ``int64`` (one index type per call); matching arrays follow the
papers' conventions: ``mu_row[u]`` is the column of row ``u`` or -1, ``mu_col[v]`` the row of
column ``v`` or -1 (-2 marks a column that G-PR found unable to reach an unmatched row).

Design choice for the CPU
-------------------------
The G-PR twins keep the *kernel-shaped* loop of the paper (G-PR-INITKRNL, G-PR-PUSHKRNL and
G-PR-SHRKRNL over the active-column lists ``A_c``/``A_p``). A sequential execution of a kernel
is one of its valid interleavings, so the CPU runs exactly the algorithm that the GPU runs (same
loop count semantics, same relabeling schedule), and work per loop is bounded by the active
list, which is what a FIFO push-relabel queue processes too: a separate FIFO implementation
would duplicate the algorithm without a structural advantage. Level-synchronous BFS phases
(G-GR and GPUBFS/GPUBFS-WR), which on a GPU are one launch per level scanning every vertex, run
on the CPU over the frontier only; they produce the same labels (G-GR) or a valid outcome of the
same level-synchronous search (GPUBFS), in O(n + nnz) per phase instead of O(levels * n).

Threads
-------
On one Numba thread every twin is sequential, and the same input gives the same output on every
run. With more threads (see :func:`parallel`) the loops that the papers' kernels run over every
vertex at once are shared among them: each BFS level's frontier (GPUBFS/GPUBFS-WR, G-GR and the
deterministic search), ALTERNATE, the FIXMATCHING passes and the deterministic cheap matching's
rounds. A level whose frontier holds fewer edges than the threshold of :func:`parallel` runs on
the calling thread, as a parallel loop costs microseconds to start: on meshes most BFS levels
are small, and the small levels between two large ones run in one compiled call.

The races of the papers' kernels are resolved as on the GPU: a column joins the BFS tree that
claims it first (a compare-and-swap on its level), and an end of an augmenting path is claimed
by compare-and-swap on the row and then on the tree's root [2]_, so with GPUBFS-WR every tree
ends one path, the paths of a phase are vertex-disjoint and ALTERNATE walks them in parallel.
Which maximum matching APFB/APsB return may then depend on thread timing; the cardinality does
not. The deterministic twins (``*_deterministic``) resolve every race by the smallest id with
atomic minima, as their GPU twins do, so their result is the same for every thread count and on
the GPU. G-GR's labels are BFS distances, the same for any number of threads; G-PR's pushes and
the greedy cheap matching stay sequential (the notes above :func:`_pr_push_all` and
:func:`cheap_matching` say why), so G-PR's matching is the same for every thread count too.

The cheap matching is the sequential greedy matching (one proposal round of the GPU kernel,
serialised); Karp-Sipser is the sequential degree-1 rule with greedy choices when no vertex of
degree one is left. Both stay sequential on threads.

References
----------
.. [1] M. Deveci, K. Kaya, B. Ucar, U. V. Catalyurek, "A push-relabel-based maximum cardinality
   bipartite matching algorithm on GPUs", ICPP 2013.
.. [2] M. Deveci, K. Kaya, B. Ucar, U. V. Catalyurek, "GPU accelerated maximum cardinality
   matching algorithms for bipartite graphs", Euro-Par 2013.
"""

from __future__ import annotations

import contextlib
import contextvars
import math

import numba
import numpy as np
from numba import njit, prange

from ._atomics import atomic_add, atomic_cas, atomic_min, load_relaxed
from .graph_build import transpose_chunks, transpose_csr

__all__ = [
    "column_adjacency",
    "cheap_matching",
    "karp_sipser_matching",
    "fix_matching",
    "global_relabel",
    "pr_push_all",
    "pr_init",
    "pr_shrink",
    "pr_push",
    "augmenting_bfs",
    "alternate",
    "cheap_matching_deterministic",
    "augmenting_bfs_deterministic",
    "persistent_supported",
    "cardinality",
    "unmatched_columns",
    "synchronize",
    "parallel",
    "PARALLEL_MIN_EDGES",
]

L0 = 2  # [APFB]: the BFS start level; unvisited columns have level L0 - 1

#: The default of :func:`parallel`'s ``min_edges``: a BFS level whose frontier holds fewer edges
#: than this runs on the calling thread (see :func:`parallel`).
PARALLEL_MIN_EDGES = 32768
# A sweep over every vertex (INITBFSARRAY, FIXMATCHING, ALTERNATE's scan) costs about this many
# vertices per edge of a search: its reads are in order.
_SWEEP_VERTICES_PER_EDGE = 8
# A graph of fewer than this many times min_edges edges (2^22 by default) runs its searches as on
# one thread: its arrays stay mostly in cache, where an edge costs a few nanoseconds, and its
# levels seldom pay for starting a parallel loop (docs/performance.md, section "Bipartite
# matching on the CPU: threads", has a graph that ran slower on two threads than on one).
_SMALL_GRAPH_FACTOR = 128


# ----------------------------------------------------------------------------- threads
_MIN_EDGES = contextvars.ContextVar("mgmatch_cpu_bipartite_min_edges", default=PARALLEL_MIN_EDGES)


@contextlib.contextmanager
def parallel(threads: int | None = None, min_edges: int = PARALLEL_MIN_EDGES):
    """Run the twins called in the block on ``threads`` Numba threads (None: Numba's current
    count). Yields the number of threads.

    A parallel loop costs microseconds to start and end, so only loops with enough work share
    it: a BFS level whose frontier holds at least ``min_edges`` edges (its length times the
    graph's mean degree) and a sweep over at least ``8 * min_edges`` vertices. The searches of a
    graph of fewer than ``128 * min_edges`` edges run as on one thread. ``threads`` above Numba's
    pool (``NUMBA_NUM_THREADS``) takes the whole pool. Both values are restored on exit.

    >>> with parallel(threads=1) as n:
    ...     n, numba.get_num_threads()
    (1, 1)
    """
    before = numba.get_num_threads()
    token = _MIN_EDGES.set(max(1, int(min_edges)))
    try:
        if threads is not None:
            numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(before)
        _MIN_EDGES.reset(token)


def _threads() -> int:
    return numba.get_num_threads()


def column_adjacency(row_ptr, row_cols, n_cols: int):
    """The CSC (column pointer, row ids) of the rows' CSR, rows ascending per column: in row
    chunks on the threads of :func:`parallel`'s block when each chunk holds at least
    ``min_edges`` entries (:func:`mgmatch.cpu.graph_build.transpose_csr`; the same arrays on
    any thread count)."""
    chunks = transpose_chunks(row_cols.shape[0], n_cols, numba.get_num_threads(), _MIN_EDGES.get())
    return transpose_csr(row_ptr, row_cols, n_cols, chunks=chunks)


def _sweep_workers(n_vertices: int) -> int:
    """Threads for a sweep over ``n_vertices``: 1 when it is too small to share, or without
    threads."""
    threads = numba.get_num_threads()
    return threads if threads > 1 and n_vertices >= _SWEEP_VERTICES_PER_EDGE * _MIN_EDGES.get() else 1


def _level_limit(n_vertices: int, n_edges: int) -> int:
    """Frontiers of fewer vertices than this run on the calling thread: their edges (their
    length times the mean degree) are below the threshold. With one thread, or on a graph of
    fewer than ``128 * min_edges`` edges, the limit exceeds ``n_vertices``: the search runs as
    on one thread."""
    if numba.get_num_threads() == 1 or n_edges < _SMALL_GRAPH_FACTOR * _MIN_EDGES.get():
        return n_vertices + 1
    mean_degree = max(1.0, n_edges / max(n_vertices, 1))
    return max(1, math.ceil(_MIN_EDGES.get() / mean_degree))


def _chunk(n_items: int, workers: int) -> int:
    """Items a worker takes at a time from a loop of dynamically shared chunks: about 16 chunks
    per worker, so that skewed degrees even out, and at most 1024."""
    return max(1, min(1024, n_items // (16 * workers)))


# Counters shared by the workers of a parallel loop, each on a cache line of its own (int64).
_PAD = 16
_TAIL = 0  # entries appended to the first output list
_NEXT = _PAD  # the next chunk to take
_FOUND = 2 * _PAD  # augmenting paths found, or any other count
_TAIL2 = 3 * _PAD  # entries appended to the second output list
_BUF = 256  # entries a worker gathers before it reserves room in a shared list


def _counters():
    return np.zeros(4 * _PAD, dtype=np.int64)


# A worker appends to a shared list through a buffer of _BUF entries: a full buffer moves to the
# list at a place reserved by one atomic addition on the list's counter, so the workers contend
# once per _BUF entries. (The appends are written out in each loop: an array-taking helper called
# per vertex costs reference counting on every array at every call.)
@njit(cache=True)
def _flush(buf, nb, out, ctl, slot):
    """Move the first ``nb`` entries of a worker's buffer to ``out`` (counter ``ctl[slot]``)."""
    if nb:
        base = atomic_add(ctl, slot, nb)
        for t in range(nb):
            out[base + t] = buf[t]


def _indices_equal(values, target, out) -> int:
    """Write the indices ``i`` with ``values[i] == target``, ascending, to ``out``; return how many."""
    found = np.flatnonzero(values == target)
    out[: found.shape[0]] = found
    return int(found.shape[0])


# ----------------------------------------------------------------------------- initial matchings
@njit(cache=True)
def _cheap(n_cols, col_ptr, col_rows, mu_row, mu_col):
    for v in range(n_cols):
        if mu_col[v] != -1:
            continue
        for j in range(col_ptr[v], col_ptr[v + 1]):
            u = col_rows[j]
            if mu_row[u] == -1:
                mu_row[u] = v
                mu_col[v] = u
                break


# The sequential greedy matching is the unique stable matching of the columns proposing down
# their lists, each row preferring the smaller column (preferences with one master list on the
# rows' side have exactly one stable matching): every column takes the first row that no
# smaller column holds, as in the sequential loop. Deferred acceptance reaches it in any order,
# so the threads run it on one shared table: a column claims its next row by an atomic minimum
# on the row's holder; a column it displaces goes on, from that row, on the displacing thread
# (as a displaced suitor proposes next in the shared-state Suitor). A column's cursor only moves
# forward, so the work is that of the sequential loop plus the displacements.
@njit(cache=True, nogil=True)
def _cheap_claims(start, stop, col_ptr, col_rows, holder, cursor, free):  # pragma: no cover - compiled
    for v0 in range(start, stop):
        v = v0
        if cursor[v] < 0:  # matched before: holds its row already
            continue
        while v >= 0:
            j = cursor[v]
            end = col_ptr[v + 1]
            nxt = -1
            while j < end:
                u = col_rows[j]
                if load_relaxed(holder, u) > v:  # free, or held by a larger column (holders only fall)
                    cursor[v] = j  # (before the claim: a thread that displaces v resumes it here)
                    old = atomic_min(holder, u, v)
                    if old > v:
                        if old != free:
                            nxt = old
                        break
                j += 1
            if j == end:
                cursor[v] = end  # no row left: v stays unmatched
            v = nxt


@njit(cache=True, parallel=True)
def _cheap_shared(n_cols, col_ptr, col_rows, holder, cursor, free, ctl, chunk, workers):  # pragma: no cover
    for _w in prange(workers):
        while True:
            start = atomic_add(ctl, _NEXT, chunk)
            if start >= n_cols:
                break
            _cheap_claims(start, min(start + chunk, n_cols), col_ptr, col_rows, holder, cursor, free)


@njit(cache=True, parallel=True)
def _cheap_settle(holder, mu_row, mu_col, free):  # pragma: no cover - compiled
    for u in prange(holder.shape[0]):
        v = holder[u]
        if 0 <= v < free:
            mu_row[u] = v
            mu_col[v] = u


def cheap_matching(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col) -> None:
    """Cheap (greedy) matching: each unmatched column, in order, takes its first free row, in
    place.

    On threads (a graph large enough to share its loops, :func:`parallel`) the same matching
    comes from deferred acceptance on a shared table (see the notes above ``_cheap_claims``),
    whatever the thread count and timing. Sharing the columns out among threads, each taking
    rows as it goes, would give another matching, with seams where two threads' columns
    compete, from which APFB takes more phases and many more BFS levels (docs/performance.md,
    section "Bipartite matching on the CPU: threads").

    >>> import numpy as np
    >>> mr, mc = np.full(2, -1), np.full(2, -1)
    >>> cheap_matching(2, 2, np.array([0, 2, 3]), np.array([0, 1, 0]), mr, mc)
    >>> mr.tolist(), mc.tolist()
    ([0, -1], [0, -1])
    """
    if not n_cols:
        return
    if _level_limit(n_cols, int(col_ptr[-1])) > n_cols:  # too small to share, or one thread
        _cheap(n_cols, col_ptr, col_rows, mu_row, mu_col)
        return
    dt = mu_col.dtype
    free = dt.type(n_cols)
    holder = np.where(mu_row == -1, free, dt.type(-1)).astype(dt)  # -1: matched before, taken
    cursor = np.where(mu_col == -1, col_ptr[:-1], -1).astype(col_ptr.dtype)
    workers = _threads()
    _cheap_shared(n_cols, col_ptr, col_rows, holder, cursor, free, _counters(), _chunk(n_cols, workers), workers)
    _cheap_settle(holder, mu_row, mu_col, free)


@njit(cache=True)
def _karp_sipser(n_rows, n_cols, row_ptr, row_cols, col_ptr, col_rows, mu_row, mu_col):
    n = n_rows + n_cols
    deg = np.zeros(n, dtype=np.int64)  # residual degree; rows 0..n_rows-1, columns n_rows..
    for u in range(n_rows):
        if mu_row[u] != -1:
            continue
        for j in range(row_ptr[u], row_ptr[u + 1]):
            if mu_col[row_cols[j]] == -1:
                deg[u] += 1
    for v in range(n_cols):
        if mu_col[v] != -1:
            continue
        for j in range(col_ptr[v], col_ptr[v + 1]):
            if mu_row[col_rows[j]] == -1:
                deg[n_rows + v] += 1
    queue = np.empty(n + 1, dtype=np.int64)  # degrees only fall, so a vertex reaches 1 once
    head = 0
    tail = 0
    in_queue = np.zeros(n, dtype=np.bool_)
    for x in range(n):
        if deg[x] == 1:
            queue[tail] = x
            tail += 1
            in_queue[x] = True
    next_col = 0
    while True:
        if head < tail:
            x = queue[head]
            head += 1
            in_queue[x] = False
            if deg[x] != 1:
                continue
            if x < n_rows:
                if mu_row[x] != -1:
                    continue
                u = x
                v = -1
                for j in range(row_ptr[u], row_ptr[u + 1]):
                    if mu_col[row_cols[j]] == -1:
                        v = row_cols[j]
                        break
            else:
                v = x - n_rows
                if mu_col[v] != -1:
                    continue
                u = -1
                for j in range(col_ptr[v], col_ptr[v + 1]):
                    if mu_row[col_rows[j]] == -1:
                        u = col_rows[j]
                        break
            if u == -1 or v == -1:
                continue
        else:
            # no degree-one vertex: match the next free column with its first free row
            u = -1
            v = -1
            while next_col < n_cols:
                c = next_col
                if mu_col[c] == -1 and deg[n_rows + c] > 0:
                    for j in range(col_ptr[c], col_ptr[c + 1]):
                        if mu_row[col_rows[j]] == -1:
                            u = col_rows[j]
                            v = c
                            break
                    if v != -1:
                        break
                next_col += 1
            if v == -1:
                break
        mu_row[u] = v
        mu_col[v] = u
        deg[u] = 0
        deg[n_rows + v] = 0
        # the free neighbours of u and v lose one residual neighbour each
        for j in range(row_ptr[u], row_ptr[u + 1]):
            c = row_cols[j]
            if mu_col[c] == -1:
                deg[n_rows + c] -= 1
                if deg[n_rows + c] == 1 and not in_queue[n_rows + c]:
                    queue[tail] = n_rows + c
                    tail += 1
                    in_queue[n_rows + c] = True
        for j in range(col_ptr[v], col_ptr[v + 1]):
            r = col_rows[j]
            if mu_row[r] == -1:
                deg[r] -= 1
                if deg[r] == 1 and not in_queue[r]:
                    queue[tail] = r
                    tail += 1
                    in_queue[r] = True


def karp_sipser_matching(n_rows, n_cols, row_ptr, row_cols, col_ptr, col_rows, mu_row, mu_col) -> None:
    """Karp-Sipser initial matching, in place: degree-one vertices first, else greedy.

    >>> import numpy as np
    >>> mr, mc = np.full(2, -1), np.full(2, -1)
    >>> karp_sipser_matching(2, 2, np.array([0, 2, 3]), np.array([0, 1, 0]),
    ...                      np.array([0, 2, 3]), np.array([0, 1, 0]), mr, mc)
    >>> mr.tolist(), mc.tolist()
    ([1, 0], [1, 0])
    """
    if n_rows and n_cols:
        _karp_sipser(n_rows, n_cols, row_ptr, row_cols, col_ptr, col_rows, mu_row, mu_col)


# ----------------------------------------------------------------------------- FIXMATCHING
@njit(cache=True)
def _fix_cols(mu_row, mu_col):
    for v in range(mu_col.size):
        mv = mu_col[v]
        if mv == -2 or (mv >= 0 and mu_row[mv] != v):
            mu_col[v] = -1


@njit(cache=True)
def _fix_rows(mu_row, mu_col):
    for u in range(mu_row.size):
        mu = mu_row[u]
        if mu < 0 or mu_col[mu] != u:
            mu_row[u] = -1


@njit(cache=True, parallel=True)
def _fix_cols_parallel(mu_row, mu_col):
    for v in prange(mu_col.size):  # writes mu_col[v] only, reads mu_row
        mv = mu_col[v]
        if mv == -2 or (mv >= 0 and mu_row[mv] != v):
            mu_col[v] = -1


@njit(cache=True, parallel=True)
def _fix_rows_parallel(mu_row, mu_col):
    for u in prange(mu_row.size):  # writes mu_row[u] only, reads mu_col
        mu = mu_row[u]
        if mu < 0 or mu_col[mu] != u:
            mu_row[u] = -1


def fix_matching(mu_row, mu_col, rows_are_truth: bool = True) -> None:
    """FIXMATCHING: make ``mu_row`` and ``mu_col`` one consistent matching, in place.

    With ``rows_are_truth`` (G-PR) columns whose row does not name them back are released
    first; otherwise (APFB/APsB) rows are released first. Each pass writes one side from the
    other, so on threads it gives the same result.
    """
    parallel_passes = _sweep_workers(mu_row.size + mu_col.size) > 1
    fix_cols = _fix_cols_parallel if parallel_passes else _fix_cols
    fix_rows = _fix_rows_parallel if parallel_passes else _fix_rows
    if rows_are_truth:
        fix_cols(mu_row, mu_col)
        fix_rows(mu_row, mu_col)
    else:
        fix_rows(mu_row, mu_col)
        fix_cols(mu_row, mu_col)


# ----------------------------------------------------------------------------- G-GR
@njit(cache=True)
def _global_relabel(n_rows, n_cols, row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col):
    inf = n_rows + n_cols
    queue = np.empty(max(n_rows, 1), dtype=np.int64)
    tail = 0
    for u in range(n_rows):
        if mu_row[u] == -1:
            psi_row[u] = 0
            queue[tail] = u
            tail += 1
        else:
            psi_row[u] = inf
    for v in range(n_cols):
        psi_col[v] = inf
    head = 0
    deepest = 0
    while head < tail:
        u = queue[head]
        head += 1
        level = psi_row[u]
        if level > deepest:
            deepest = level
        for j in range(row_ptr[u], row_ptr[u + 1]):
            v = row_cols[j]
            if psi_col[v] == inf:
                psi_col[v] = level + 1
                w = mu_col[v]
                if w > -1 and mu_row[w] == v and psi_row[w] == inf:
                    psi_row[w] = level + 2
                    queue[tail] = w
                    tail += 1
    return deepest + 2


@njit(cache=True, parallel=True)
def _gr_init_parallel(mu_row, psi_row, psi_col, inf):
    for u in prange(psi_row.size):
        psi_row[u] = 0 if mu_row[u] == -1 else inf
    for v in prange(psi_col.size):
        psi_col[v] = inf


@njit(cache=True)
def _gr_expand(frontier, lo, hi, level, row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col, inf, buf, nb, out, ctl):
    """G-GR-KRNL [GPR Alg. 4] for the rows ``frontier[lo:hi]`` of level ``level`` on threads:
    their unlabelled columns get ``level + 1``, the mates of those ``level + 2`` (claimed by
    compare-and-swap, so a row enters once) and a place in ``out`` through the worker's buffer
    of ``nb`` entries. Returns ``nb``."""
    for k in range(lo, hi):
        u = frontier[k]
        for j in range(row_ptr[u], row_ptr[u + 1]):
            v = row_cols[j]
            if psi_col[v] != inf:
                continue
            psi_col[v] = level + 1  # every writer of this level writes the same label
            w = mu_col[v]
            if w > -1 and mu_row[w] == v and psi_row[w] == inf and atomic_cas(psi_row, w, inf, level + 2) == inf:
                buf[nb] = w
                nb += 1
                if nb == _BUF:
                    base = atomic_add(ctl, _TAIL, nb)
                    for t in range(nb):
                        out[base + t] = buf[t]
                    nb = 0
    return nb


@njit(cache=True, parallel=True)
def _gr_level_parallel(frontier, nf, nxt, ctl, chunk, workers, row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col,
                       level, inf):
    for _w in prange(workers):
        buf = np.empty(_BUF, dtype=frontier.dtype)
        nb = np.int64(0)  # not a literal 0: Numba would compile the callee once more for it
        while True:
            start = atomic_add(ctl, _NEXT, chunk)
            if start >= nf:
                break
            nb = _gr_expand(frontier, start, min(start + chunk, nf), level, row_ptr, row_cols, mu_row, mu_col, psi_row,
                            psi_col, inf, buf, nb, nxt, ctl)
        _flush(buf, nb, nxt, ctl, _TAIL)


@njit(cache=True)
def _gr_levels(frontier, nf, nxt, ctl, row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col, level, inf, limit):
    """G-GR levels on the calling thread (one worker of :func:`_gr_expand`) while the frontier
    has fewer than ``limit`` rows. Returns ``(frontier length, level, swapped)``: ``swapped``
    when the frontier is in ``nxt``."""
    swapped = False
    buf = np.empty(_BUF, dtype=frontier.dtype)
    zero = np.int64(0)  # the buffer's start length; a literal 0 would get a compilation of its own
    while 0 < nf < limit:
        ctl[_TAIL] = 0
        nb = _gr_expand(frontier, 0, nf, level, row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col, inf, buf, zero,
                        nxt, ctl)
        _flush(buf, nb, nxt, ctl, _TAIL)
        nf = ctl[_TAIL]
        frontier, nxt = nxt, frontier
        swapped = not swapped
        level += 2
    return nf, level, swapped


def global_relabel(n_rows, n_cols, row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col) -> int:
    """G-GR: exact distance labels ``psi`` from the unmatched rows; returns ``maxLevel``.

    ``psi(u)`` (rows, even) and ``psi(v)`` (columns, odd) are alternating-path distances to the
    nearest unmatched row, ``n_rows + n_cols`` where none is reachable. ``maxLevel`` is the level
    at which the level-synchronous BFS of [GPR Alg. 4] stops: the deepest row level plus 2. The
    labels are distances, so threads give the same ones.
    """
    limit = _level_limit(n_rows, int(row_ptr[-1]) if n_rows else 0)
    if limit > n_rows:  # one thread, or no level could be shared
        return int(_global_relabel(n_rows, n_cols, row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col))
    inf = n_rows + n_cols
    dt = psi_row.dtype
    _gr_init_parallel(mu_row, psi_row, psi_col, dt.type(inf))
    frontier = np.empty(max(n_rows, 1), dtype=dt)
    nxt = np.empty(max(n_rows, 1), dtype=dt)
    nf = _indices_equal(mu_row, -1, frontier)
    ctl = _counters()
    level = 0
    deepest = 0
    while nf > 0:
        deepest = level
        if nf < limit:
            ctl[:] = 0
            nf, reached, swapped = _gr_levels(frontier, nf, nxt, ctl, row_ptr, row_cols, mu_row, mu_col, psi_row,
                                              psi_col, level, inf, limit)
            # the levels before `reached` all had rows; the last of them is the deepest so far
            deepest = reached - 2
            level = reached
            if swapped:
                frontier, nxt = nxt, frontier
            continue
        workers = _threads()
        ctl[:] = 0
        _gr_level_parallel(frontier, nf, nxt, ctl, _chunk(nf, workers), workers, row_ptr, row_cols, mu_row, mu_col,
                           psi_row, psi_col, level, inf)
        nf = int(ctl[_TAIL])
        frontier, nxt = nxt, frontier
        level += 2
    return deepest + 2


# ----------------------------------------------------------------------------- G-PR
# The pushes stay sequential on threads. The paper's lock-free pushes race on a GPU, and on
# threads they did too, but they are a few percent of G-PR's time on one thread (the global
# relabelings take the rest, and run on threads) and the races changed the run's course, up to
# several times the push loops of the sequential pushes (docs/performance.md, section
# "Bipartite matching on the CPU: threads").
# Sequential pushes and G-GR's distance labels make G-PR's matching the same on every thread
# count. The search for a column's lowest-labelled row is written inside each kernel's loop.
@njit(cache=True)
def _pr_push_all(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col):
    inf = n_rows + n_cols
    act = False
    for v in range(n_cols):
        mv = mu_col[v]
        if not (mv == -1 or (mv >= 0 and mu_row[mv] != v)):
            continue
        act = True
        psi_min = inf  # the row of smallest label; psi(v) - 1 is the least there can be
        u = -1
        target = psi_col[v] - 1
        for j in range(col_ptr[v], col_ptr[v + 1]):
            p = psi_row[col_rows[j]]
            if p < psi_min:
                psi_min = p
                u = col_rows[j]
                if psi_min == target:
                    break
        if psi_min < inf:
            mu_row[u] = v
            mu_col[v] = u
            psi_col[v] = psi_min + 1
            psi_row[u] = psi_min + 2
        else:
            mu_col[v] = -2
    return act


def pr_push_all(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col) -> bool:
    """G-PR-KRNL [GPR Alg. 6]: one push-relabel for every active column; returns actExists.
    Sequential on threads too (see the notes above :func:`_pr_push_all`)."""
    return bool(_pr_push_all(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col))


@njit(cache=True)
def _pr_init(size, mu_row, mu_col, loop, a_c, a_p, ia):
    act = False
    for i in range(size):
        v = a_p[i]
        if v == -1:
            continue
        mv = mu_col[v]
        if mv == -2:
            a_c[i] = -1
            continue
        if mv < 0 or mu_row[mv] != v:
            a_c[i] = v
        else:
            v = a_c[i]
        if v != -1:
            ia[v] = loop
            act = True
    return act


def pr_init(size, mu_row, mu_col, loop, a_c, a_p, ia) -> bool:
    """G-PR-INITKRNL [GPR Alg. 8]: fix ``A_c`` from ``A_p``, mark ``iA``; returns actExists."""
    return bool(_pr_init(size, mu_row, mu_col, loop, a_c, a_p, ia))


@njit(cache=True)
def _pr_shrink(size, mu_row, mu_col, loop, a_c, a_p, ia):
    count = 0
    for i in range(size):
        v = a_p[i]
        if v != -1:
            mv = mu_col[v]
            if mv == -2:
                v = -1
            elif mv < 0 or mu_row[mv] != v:
                pass
            else:
                v = a_c[i]
        a_c[i] = v
        if v != -1:
            ia[v] = loop
            a_p[count] = v  # count <= i, and a_p[i] has been read already
            count += 1
    return count


def pr_shrink(size, mu_row, mu_col, loop, a_c, a_p, ia) -> int:
    """G-PR-SHRKRNL: the fix of G-PR-INITKRNL, with the active columns compacted into ``a_p``.

    Returns their number; the caller swaps ``a_c`` and ``a_p`` so the compacted list is the new
    ``A_c``.
    """
    return int(_pr_shrink(size, mu_row, mu_col, loop, a_c, a_p, ia))


@njit(cache=True)
def _pr_push(size, n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col, loop, a_c, a_p, ia):
    inf = n_rows + n_cols
    for i in range(size):
        v = a_c[i]
        if v == -1:
            a_p[i] = -1
            continue
        psi_min = inf
        u = -1
        target = psi_col[v] - 1
        for j in range(col_ptr[v], col_ptr[v + 1]):
            p = psi_row[col_rows[j]]
            if p < psi_min:
                psi_min = p
                u = col_rows[j]
                if psi_min == target:
                    break
        if psi_min < inf:
            w = mu_row[u]
            if w == -1 or ia[w] != loop:
                mu_row[u] = v
                mu_col[v] = u
                psi_col[v] = psi_min + 1
                psi_row[u] = psi_min + 2
                a_p[i] = w
        else:
            mu_col[v] = -2
            a_c[i] = -1
            a_p[i] = -1


def pr_push(size, n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col, loop, a_c, a_p, ia) -> None:
    """G-PR-PUSHKRNL [GPR Alg. 9]: one push-relabel per active column of ``A_c``. Sequential on
    threads too (see the notes above :func:`_pr_push_all`)."""
    if size:
        _pr_push(size, n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col, loop, a_c, a_p, ia)


# ----------------------------------------------------------------------------- APFB / APsB
@njit(cache=True)
def _augmenting_bfs(n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred,
                    stop_at_first, with_root, level_encoding):
    unvisited = L0 - 1
    frontier = np.empty(max(n_cols, 1), dtype=np.int64)
    size = 0
    for c in range(n_cols):
        if mu_col[c] > -1:
            bfs[c] = unvisited
            root[c] = -1
        else:
            bfs[c] = L0
            root[c] = c
            frontier[size] = c
            size += 1
    nxt = np.empty(max(n_cols, 1), dtype=np.int64)
    level = L0
    found = False
    launches = 0
    while size > 0:
        launches += 1
        nsize = 0
        for k in range(size):
            c = frontier[k]
            if bfs[c] != level:  # a root already marked (GPUBFS-WR)
                continue
            my_root = root[c]
            if with_root and bfs[my_root] < 0:
                continue
            for j in range(col_ptr[c], col_ptr[c + 1]):
                r = col_rows[j]
                cm = mu_row[r]
                if cm > -1:
                    if bfs[cm] == unvisited:
                        bfs[cm] = level + 1
                        root[cm] = my_root
                        pred[r] = c
                        nxt[nsize] = cm
                        nsize += 1
                elif cm == -1:
                    mu_row[r] = -2
                    pred[r] = c
                    found = True
                    if with_root:
                        bfs[my_root] = -level if level_encoding else -1
                        break
        if found and stop_at_first:
            break
        frontier, nxt = nxt, frontier
        size = nsize
        level += 1
    return found, launches


@njit(cache=True, parallel=True)
def _bfs_init_parallel(mu_col, bfs, root):
    """INITBFSARRAY [APFB Alg. 1]: unmatched columns are the roots (level L0), the others
    unvisited."""
    unvisited = L0 - 1
    for c in prange(mu_col.size):
        if mu_col[c] > -1:
            bfs[c] = unvisited
            root[c] = -1
        else:
            bfs[c] = L0
            root[c] = c


@njit(cache=True)
def _bfs_expand(frontier, lo, hi, level, col_ptr, col_rows, mu_row, bfs, root, pred, with_root, end_mark, buf, nb, out,
                ctl):
    """GPUBFS / GPUBFS-WR [APFB Alg. 2 and 4] on threads for the frontier columns
    ``frontier[lo:hi]`` at ``level``.

    The mates of a column's rows that no tree has claimed join its tree at ``level + 1``: the
    first compare-and-swap on the mate's level claims it, and the mate goes to ``out`` through
    the worker's buffer of ``nb`` entries. An unmatched row ends an augmenting path (``mu_row =
    -2``, ``pred``) when a compare-and-swap claims it; with the root array the tree's root is
    claimed next (``bfs[root] <- end_mark``), and a tree whose root was taken gives the row back
    and stops, so every tree ends one path, as the persistent GPU kernel does. Returns ``(nb,
    paths ended)``.
    """
    unvisited = L0 - 1
    paths = 0
    for k in range(lo, hi):
        c = frontier[k]
        my_root = root[c]
        if with_root and bfs[my_root] < 0:  # early exit: the tree already has its path
            continue
        for j in range(col_ptr[c], col_ptr[c + 1]):
            r = col_rows[j]
            cm = mu_row[r]
            if cm > -1:
                if bfs[cm] != unvisited or atomic_cas(bfs, cm, unvisited, level + 1) != unvisited:
                    continue  # visited, or another tree claimed it first
                root[cm] = my_root
                pred[r] = c
                buf[nb] = cm
                nb += 1
                if nb == _BUF:
                    base = atomic_add(ctl, _TAIL, nb)
                    for t in range(nb):
                        out[base + t] = buf[t]
                    nb = 0
            elif cm == -1:
                if atomic_cas(mu_row, r, -1, -2) != -1:
                    continue  # another column ended its path here
                if with_root and atomic_cas(bfs, my_root, L0, end_mark) != L0:
                    mu_row[r] = -1  # the tree ended its path elsewhere: give the row back
                    break
                pred[r] = c
                paths += 1
                if with_root:
                    break
    return nb, paths


@njit(cache=True)
def _bfs_levels(frontier, nf, nxt, ctl, col_ptr, col_rows, mu_row, bfs, root, pred, level, with_root, level_encoding,
                stop_at_first, limit):
    """BFS levels on the calling thread (one worker of :func:`_bfs_expand`) while the frontier
    has fewer than ``limit`` columns, until none is left, or (``stop_at_first``) after a level
    that ended a path. Returns ``(frontier length, next level, levels run, paths ended,
    swapped)``; ``swapped`` when the frontier is in ``nxt``."""
    levels = 0
    paths = 0
    swapped = False
    buf = np.empty(_BUF, dtype=frontier.dtype)
    zero = np.int64(0)  # the buffer's start length; a literal 0 would get a compilation of its own
    while 0 < nf < limit:
        levels += 1
        ctl[_TAIL] = 0
        nb, p = _bfs_expand(frontier, 0, nf, level, col_ptr, col_rows, mu_row, bfs, root, pred, with_root,
                            -level if level_encoding else -1, buf, zero, nxt, ctl)
        _flush(buf, nb, nxt, ctl, _TAIL)
        paths += p
        nf = ctl[_TAIL]
        frontier, nxt = nxt, frontier
        swapped = not swapped
        level += 1
        if paths and stop_at_first:
            break
    return nf, level, levels, paths, swapped


@njit(cache=True, parallel=True)
def _bfs_level_parallel(frontier, nf, nxt, ctl, chunk, workers, col_ptr, col_rows, mu_row, bfs, root, pred, level,
                        with_root, end_mark):
    for _w in prange(workers):
        buf = np.empty(_BUF, dtype=frontier.dtype)
        nb = np.int64(0)  # not a literal 0: Numba would compile the callee once more for it
        paths = 0
        while True:
            start = atomic_add(ctl, _NEXT, chunk)
            if start >= nf:
                break
            nb, p = _bfs_expand(frontier, start, min(start + chunk, nf), level, col_ptr, col_rows, mu_row, bfs, root,
                                pred, with_root, end_mark, buf, nb, nxt, ctl)
            paths += p
        _flush(buf, nb, nxt, ctl, _TAIL)
        if paths:
            atomic_add(ctl, _FOUND, paths)


def augmenting_bfs(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, *,
                   stop_at_first: bool, with_root: bool, level_encoding: bool, launch: str = "ct"):
    """INITBFSARRAY and the BFS levels of GPUBFS / GPUBFS-WR from all unmatched columns.

    Ends of augmenting paths get ``mu_row[r] = -2`` and ``pred[r]`` their column. With
    ``stop_at_first`` (APsB) the search stops after the first level that found one; otherwise
    (APFB) it runs until no column is inserted. ``launch`` has no effect on the CPU. Returns
    ``(found, levels)``.

    On threads a level of at least the threshold of :func:`parallel` columns is shared among
    them (smaller ones run on the calling thread); a column joins the tree whose claim comes
    first, and every tree ends at most one path, as on one thread.
    """
    stop_at_first, with_root, level_encoding = bool(stop_at_first), bool(with_root), bool(level_encoding)
    limit = _level_limit(n_cols, int(col_ptr[-1]) if n_cols else 0)
    if limit > n_cols:  # one thread, or no level could be shared
        found, levels = _augmenting_bfs(n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, stop_at_first,
                                        with_root, level_encoding)
        return bool(found), int(levels)
    dt = mu_col.dtype
    frontier = np.empty(n_cols, dtype=dt)
    nxt = np.empty(n_cols, dtype=dt)
    _bfs_init_parallel(mu_col, bfs, root)
    nf = _indices_equal(mu_col, -1, frontier)
    ctl = _counters()
    level = L0
    levels = 0
    found = False
    while nf > 0 and not (found and stop_at_first):
        if nf < limit:
            nf, level, run, paths, swapped = _bfs_levels(frontier, nf, nxt, ctl, col_ptr, col_rows, mu_row, bfs, root,
                                                          pred, level, with_root, level_encoding, stop_at_first,
                                                          limit)
            levels += int(run)
            found = found or paths > 0
            if swapped:
                frontier, nxt = nxt, frontier
            continue
        workers = _threads()
        ctl[:] = 0
        _bfs_level_parallel(frontier, nf, nxt, ctl, _chunk(nf, workers), workers, col_ptr, col_rows, mu_row, bfs,
                            root, pred, level, with_root, -level if level_encoding else -1)
        levels += 1
        found = found or ctl[_FOUND] > 0
        nf = int(ctl[_TAIL])
        frontier, nxt = nxt, frontier
        level += 1
    return found, levels


@njit(cache=True)
def _alternate(n_rows, mu_row, mu_col, pred, bfs, root, level_encoding):
    for r in range(n_rows):
        if mu_row[r] != -2:
            continue
        if level_encoding:
            c = pred[r]
            rt = root[c]
            lc = L0 if c == rt else bfs[c]
            if bfs[rt] != -lc:
                continue
        row = r
        while row != -1:
            matched_col = pred[row]
            matched_row = mu_col[matched_col]
            if matched_row > -1 and pred[matched_row] == matched_col:
                break
            mu_col[matched_col] = row
            mu_row[row] = matched_col
            row = matched_row


@njit(cache=True)
def _alternate_own_trees_range(lo, hi, mu_row, mu_col, pred, bfs, root, level_encoding):
    """ALTERNATE [APFB Alg. 3] from the end rows among ``lo .. hi - 1`` whose tree root claimed
    them (``bfs[root] < 0``). Returns the number of other ends, left to :func:`_alternate`."""
    others = 0
    for r in range(lo, hi):
        if mu_row[r] != -2:
            continue
        if bfs[root[pred[r]]] >= 0:
            others += 1
            continue
        if level_encoding:
            c = pred[r]
            rt = root[c]
            lc = L0 if c == rt else bfs[c]
            if bfs[rt] != -lc:
                continue
        row = r
        while row != -1:
            matched_col = pred[row]
            matched_row = mu_col[matched_col]
            if matched_row > -1 and pred[matched_row] == matched_col:
                break
            mu_col[matched_col] = row
            mu_row[row] = matched_col
            row = matched_row
    return others


@njit(cache=True, parallel=True)
def _alternate_own_trees(n_rows, mu_row, mu_col, pred, bfs, root, level_encoding, n_chunks):
    # A path whose tree root claimed it (bfs[root] < 0) is the only path of its tree, and trees
    # share no column: such paths are vertex-disjoint, so their walks touch disjoint entries.
    others = 0
    for k in prange(n_chunks):
        others += _alternate_own_trees_range(k * n_rows // n_chunks, (k + 1) * n_rows // n_chunks, mu_row, mu_col,
                                             pred, bfs, root, level_encoding)
    return others


def alternate(n_rows, mu_row, mu_col, pred, bfs, root, *, level_encoding: bool, launch: str = "ct") -> None:
    """ALTERNATE [APFB Alg. 3]: flip the edges of the augmenting paths found by the BFS.

    On threads the paths of trees whose root claimed them (GPUBFS-WR, the deterministic search)
    are flipped in parallel; the others (GPUBFS, where a tree may end several paths that share
    columns) then one after another, as on one thread.
    """
    if not n_rows:
        return
    workers = _sweep_workers(n_rows)
    if workers == 1 or _alternate_own_trees(n_rows, mu_row, mu_col, pred, bfs, root, bool(level_encoding),
                                            16 * workers):
        _alternate(n_rows, mu_row, mu_col, pred, bfs, root, bool(level_encoding))


# ----------------------------------------------------------------------------- deterministic runs
# The same rules as the GPU twins' deterministic kernels: every race of the papers' kernels is
# resolved by the smallest id instead of by arrival order, so the result does not depend on the
# order in which the vertices are taken, and the CPU and GPU twins agree pair for pair. On one
# thread the rules run sequentially; on threads as the GPU runs them, with atomic minima. Lists
# built on threads (proposers, claims, the next frontier) come out in an order that depends on
# timing, but no decision depends on that order, so every thread count gives the same result.


@njit(cache=True)
def _cheap_deterministic(n_cols, col_ptr, col_rows, mu_row, mu_col, cursor, prop, none):
    for v in range(n_cols):
        cursor[v] = col_ptr[v]
    while True:
        proposed = False
        for v in range(n_cols):  # propose: the first row free at the start of the round
            if mu_col[v] != -1:
                continue
            j = cursor[v]
            end = col_ptr[v + 1]
            while j < end and mu_row[col_rows[j]] != -1:
                j += 1
            cursor[v] = j
            if j == end:
                mu_col[v] = -3  # exhausted: rows never become free again
                continue
            u = col_rows[j]
            if v < prop[u]:
                prop[u] = v
            proposed = True
        if not proposed:
            break
        for v in range(n_cols):  # accept: a row takes its smallest proposer
            if mu_col[v] != -1:
                continue
            u = col_rows[cursor[v]]
            if prop[u] == v:
                mu_row[u] = v
                mu_col[v] = u
        for v in range(n_cols):
            if cursor[v] < col_ptr[v + 1]:
                prop[col_rows[cursor[v]]] = none
    for v in range(n_cols):
        if mu_col[v] == -3:
            mu_col[v] = -1


@njit(cache=True)
def _cheap_det_propose(active, lo, hi, col_ptr, col_rows, mu_row, mu_col, cursor, prop, rnd, stride, big):
    """Propose step of round ``rnd`` on threads, for the columns ``active[lo:hi]``: each
    proposes to its first row that is free (``cursor`` keeps its place) with the key ``(big -
    rnd) * stride + v``, and the row keeps the smallest key by an atomic minimum. The keys of a
    later round are below every key of an earlier one, so no reset pass between rounds is
    needed. A column with no free row left gets ``mu_col = -3`` (rows never become free again).
    Returns whether a column proposed."""
    proposed = False
    key0 = (big - rnd) * stride
    for k in range(lo, hi):
        v = active[k]
        j = cursor[v]
        end = col_ptr[v + 1]
        while j < end and mu_row[col_rows[j]] != -1:
            j += 1
        cursor[v] = j
        if j == end:
            mu_col[v] = -3
            continue
        u = col_rows[j]
        key = key0 + v
        if key < prop[u]:
            atomic_min(prop, u, key)
        proposed = True
    return proposed


@njit(cache=True)
def _cheap_det_accept(active, lo, hi, col_rows, mu_row, mu_col, cursor, prop, rnd, stride, big, buf, nb, out, ctl):
    """Accept step of round ``rnd`` for ``active[lo:hi]``: a row takes its smallest proposer;
    the columns still unmatched go to ``out`` through the worker's buffer of ``nb`` entries.
    Returns ``nb``."""
    key0 = (big - rnd) * stride
    for k in range(lo, hi):
        v = active[k]
        if mu_col[v] != -1:
            continue  # exhausted
        u = col_rows[cursor[v]]
        if prop[u] == key0 + v:
            mu_row[u] = v
            mu_col[v] = u
            continue
        buf[nb] = v
        nb += 1
        if nb == _BUF:
            base = atomic_add(ctl, _TAIL, nb)
            for t in range(nb):
                out[base + t] = buf[t]
            nb = 0
    return nb


@njit(cache=True)
def _cheap_det_rounds(active, na, nxt, ctl, col_ptr, col_rows, mu_row, mu_col, cursor, prop, rnd, stride, big, limit):
    """Proposal rounds on the calling thread (one worker of the steps above) while fewer than
    ``limit`` columns are active. Returns ``(active columns, next round, swapped)``;
    ``swapped`` when they are in ``nxt``."""
    swapped = False
    buf = np.empty(_BUF, dtype=active.dtype)
    zero = np.int64(0)  # the buffer's start length; a literal 0 would get a compilation of its own
    while 0 < na < limit:
        if not _cheap_det_propose(active, 0, na, col_ptr, col_rows, mu_row, mu_col, cursor, prop, rnd, stride, big):
            return 0, rnd, swapped
        ctl[_TAIL] = 0
        nb = _cheap_det_accept(active, 0, na, col_rows, mu_row, mu_col, cursor, prop, rnd, stride, big, buf, zero, nxt,
                               ctl)
        _flush(buf, nb, nxt, ctl, _TAIL)
        na = ctl[_TAIL]
        active, nxt = nxt, active
        swapped = not swapped
        rnd += 1
    return na, rnd, swapped


@njit(cache=True, parallel=True)
def _cheap_det_propose_parallel(active, na, col_ptr, col_rows, mu_row, mu_col, cursor, prop, rnd, stride, big, ctl,
                                chunk, workers):
    for _w in prange(workers):
        proposed = False
        while True:
            start = atomic_add(ctl, _NEXT, chunk)
            if start >= na:
                break
            if _cheap_det_propose(active, start, min(start + chunk, na), col_ptr, col_rows, mu_row, mu_col, cursor,
                                  prop, rnd, stride, big):
                proposed = True
        if proposed:
            atomic_add(ctl, _FOUND, 1)


@njit(cache=True, parallel=True)
def _cheap_det_accept_parallel(active, na, nxt, col_rows, mu_row, mu_col, cursor, prop, rnd, stride, big, ctl, chunk,
                               workers):
    for _w in prange(workers):
        buf = np.empty(_BUF, dtype=active.dtype)
        nb = np.int64(0)  # not a literal 0: Numba would compile the callee once more for it
        while True:
            start = atomic_add(ctl, _NEXT, chunk)
            if start >= na:
                break
            nb = _cheap_det_accept(active, start, min(start + chunk, na), col_rows, mu_row, mu_col, cursor, prop, rnd,
                                   stride, big, buf, nb, nxt, ctl)
        _flush(buf, nb, nxt, ctl, _TAIL)


def cheap_matching_deterministic(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, *, tune=None) -> None:
    """Cheap matching by proposal rounds whose outcome does not depend on thread timing, in place.

    In each round every unmatched column proposes to its first row that was free when the round
    began, and each row takes its smallest proposer; the others try again in the next round. The
    result is maximal (no edge joins two free vertices), like the sequential greedy matching, but
    not always the same one. The GPU twin takes the same decisions, and so does any number of
    threads (a row's smallest proposer is an atomic minimum; on threads the rounds go over the
    columns still unmatched only). ``tune`` (the GPU twin's launch settings) has no effect on
    the CPU.

    >>> mr, mc = np.full(2, -1, np.int64), np.full(2, -1, np.int64)
    >>> cheap_matching_deterministic(2, 2, np.array([0, 1, 2]), np.array([0, 0]), mr, mc)
    >>> mr.tolist(), mc.tolist()
    ([0, -1], [0, -1])
    """
    if not n_cols:
        return
    dt = mu_col.dtype
    limit = _level_limit(n_cols, int(col_ptr[-1]))
    if limit > n_cols:
        none = np.iinfo(dt).max
        cursor = np.empty(n_cols, dtype=dt)
        prop = np.full(n_rows, none, dtype=dt)
        _cheap_deterministic(n_cols, col_ptr, col_rows, mu_row, mu_col, cursor, prop, dt.type(none))
        return
    active = np.empty(n_cols, dtype=dt)
    na = _indices_equal(mu_col, -1, active)  # the columns that propose, in any order
    nxt = np.empty(n_cols, dtype=dt)
    cursor = col_ptr[:-1].astype(dt)
    stride = int(n_cols)
    big = (np.iinfo(np.int64).max - stride) // stride  # rounds before the keys run out
    prop = np.full(max(n_rows, 1), np.iinfo(np.int64).max, dtype=np.int64)  # smallest key per row
    ctl = _counters()
    rnd = 0
    while na > 0:
        if na < limit:
            na, rnd, swapped = _cheap_det_rounds(active, na, nxt, ctl, col_ptr, col_rows, mu_row, mu_col, cursor, prop,
                                                 rnd, stride, big, limit)
            na, rnd = int(na), int(rnd)
            if swapped:
                active, nxt = nxt, active
            continue
        workers = _threads()
        ctl[:] = 0
        _cheap_det_propose_parallel(active, na, col_ptr, col_rows, mu_row, mu_col, cursor, prop, rnd, stride, big, ctl,
                                    _chunk(na, workers), workers)
        if not ctl[_FOUND]:
            break
        ctl[:] = 0
        _cheap_det_accept_parallel(active, na, nxt, col_rows, mu_row, mu_col, cursor, prop, rnd, stride, big, ctl,
                                   _chunk(na, workers), workers)
        na = int(ctl[_TAIL])
        active, nxt = nxt, active
        rnd += 1
    mu_col[mu_col == -3] = -1


@njit(cache=True)
def _bfs_deterministic(n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, stop_at_first, claim, end_claim,
                       best_end, frontier, nxt, new, ends, none):
    unvisited = L0 - 1
    nf = 0
    for c in range(n_cols):  # INITBFSARRAY
        claim[c] = none
        best_end[c] = none
        if mu_col[c] == -1:
            bfs[c] = L0
            root[c] = c
            frontier[nf] = c
            nf += 1
        else:
            bfs[c] = unvisited
            root[c] = -1
    level = L0
    levels = 0
    found = False
    while nf > 0:
        levels += 1
        n_new = 0
        n_end = 0
        for i in range(nf):  # expand: claims keep the smallest parent column
            c = frontier[i]
            if bfs[root[c]] < 0:
                continue  # this tree ended at an earlier level
            for j in range(col_ptr[c], col_ptr[c + 1]):
                r = col_rows[j]
                cm = mu_row[r]
                if cm > -1:
                    if bfs[cm] == unvisited:
                        if claim[cm] == none:
                            new[n_new] = cm
                            n_new += 1
                        if c < claim[cm]:
                            claim[cm] = c
                elif cm == -1:
                    if end_claim[r] == none:
                        ends[n_end] = r
                        n_end += 1
                    if c < end_claim[r]:
                        end_claim[r] = c
        for k in range(n_end):  # each tree keeps its smallest end row
            r = ends[k]
            rt = root[end_claim[r]]
            if r < best_end[rt]:
                best_end[rt] = r
        for k in range(n_end):
            r = ends[k]
            c = end_claim[r]
            rt = root[c]
            if best_end[rt] == r:
                mu_row[r] = -2
                pred[r] = c
                bfs[rt] = -1
                found = True
            end_claim[r] = none
        nn = 0
        for k in range(n_new):  # commit the claims of trees still searching
            cm = new[k]
            c = claim[cm]
            rt = root[c]
            if bfs[rt] < 0:
                claim[cm] = none  # its tree ended at this level: cm stays free for others
                continue
            bfs[cm] = level + 1
            root[cm] = rt
            pred[mu_col[cm]] = c
            nxt[nn] = cm
            nn += 1
        if found and stop_at_first:
            break
        frontier, nxt = nxt, frontier
        nf = nn
        level += 1
    return found, levels


@njit(cache=True, parallel=True)
def _det_init_parallel(mu_col, bfs, root, claim, best_end, none):
    """INITBFSARRAY of the deterministic search, and no claims."""
    unvisited = L0 - 1
    for c in prange(mu_col.size):
        claim[c] = none
        best_end[c] = none
        if mu_col[c] == -1:
            bfs[c] = L0
            root[c] = c
        else:
            bfs[c] = unvisited
            root[c] = -1


@njit(cache=True)
def _det_expand(frontier, lo, hi, col_ptr, col_rows, mu_row, bfs, root, claim, end_claim, none, buf_new, n_new, new,
                buf_end, n_end, ends, ctl):
    """Step 1 of a deterministic level on threads, for the frontier columns ``frontier[lo:hi]``:
    a column whose tree is still searching claims the unvisited mates of its rows (``claim <-
    min c``, an atomic minimum) and the free rows (``end_claim <- min c``); the first claim of
    each goes to ``new`` or ``ends`` through the worker's buffers. Returns ``(n_new, n_end)``,
    the buffers' lengths."""
    unvisited = L0 - 1
    for k in range(lo, hi):
        c = frontier[k]
        if bfs[root[c]] < 0:
            continue  # the tree ended at an earlier level
        for j in range(col_ptr[c], col_ptr[c + 1]):
            r = col_rows[j]
            cm = mu_row[r]
            if cm > -1:
                if bfs[cm] != unvisited or claim[cm] <= c or atomic_min(claim, cm, c) != none:
                    continue  # visited, claimed by a smaller column, or claimed before
                buf_new[n_new] = cm
                n_new += 1
                if n_new == _BUF:
                    base = atomic_add(ctl, _TAIL, n_new)
                    for t in range(n_new):
                        new[base + t] = buf_new[t]
                    n_new = 0
            elif cm == -1:
                if end_claim[r] <= c or atomic_min(end_claim, r, c) != none:
                    continue
                buf_end[n_end] = r
                n_end += 1
                if n_end == _BUF:
                    base = atomic_add(ctl, _TAIL2, n_end)
                    for t in range(n_end):
                        ends[base + t] = buf_end[t]
                    n_end = 0
    return n_new, n_end


@njit(cache=True)
def _det_pick_ends(ends, lo, hi, end_claim, root, best_end):
    """Step 2: each tree keeps the smallest of the free rows it claimed (``best_end[root]``, an
    atomic minimum)."""
    for k in range(lo, hi):
        r = ends[k]
        rt = root[end_claim[r]]
        if r < best_end[rt]:
            atomic_min(best_end, rt, r)


@njit(cache=True)
def _det_commit(ends, new, lo, hi, n_end, mu_row, mu_col, bfs, root, pred, claim, end_claim, best_end, level, none,
                buf, nb, out, ctl):
    """Steps 3 and 4 for the items ``lo .. hi - 1`` of the list of ends followed by the list of
    claimed columns. Step 3: the row a tree kept ends the tree's path (``mu_row = -2``,
    ``pred``) and the tree stops (``bfs[root] = -1``); every end claim is released. Step 4: a
    claimed column joins its claimer's tree at ``level + 1`` and the next frontier (``out``,
    through the worker's buffer), unless that tree kept an end at this level (``best_end`` set;
    trees that ended earlier claimed nothing): then it is released, free for another tree later.
    The two steps write disjoint entries, and step 4 reads ``best_end`` where the sequential
    order reads the root's ``bfs`` that step 3 writes, so they run together. Returns ``(nb,
    paths)``."""
    paths = 0
    for k in range(lo, hi):
        if k < n_end:
            r = ends[k]
            c = end_claim[r]
            rt = root[c]
            if best_end[rt] == r:
                mu_row[r] = -2
                pred[r] = c
                bfs[rt] = -1
                paths += 1
            end_claim[r] = none
            continue
        cm = new[k - n_end]
        c = claim[cm]
        rt = root[c]
        if best_end[rt] != none:
            claim[cm] = none
            continue
        bfs[cm] = level + 1
        root[cm] = rt
        pred[mu_col[cm]] = c
        buf[nb] = cm
        nb += 1
        if nb == _BUF:
            base = atomic_add(ctl, _TAIL, nb)
            for t in range(nb):
                out[base + t] = buf[t]
            nb = 0
    return nb, paths


@njit(cache=True)
def _det_levels(frontier, nf, nxt, new, ends, ctl, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, claim,
                end_claim, best_end, none, level, stop_at_first, limit):
    """Deterministic levels on the calling thread (one worker of the steps above) while the
    frontier has fewer than ``limit`` columns; returns ``(frontier length, next level, levels
    run, paths, swapped)`` as :func:`_bfs_levels` does."""
    levels = 0
    paths = 0
    swapped = False
    buf_a = np.empty(_BUF, dtype=frontier.dtype)
    buf_b = np.empty(_BUF, dtype=frontier.dtype)
    zero = np.int64(0)  # the buffers' start length; a literal 0 would get a compilation of its own
    while 0 < nf < limit:
        levels += 1
        ctl[_TAIL] = 0
        ctl[_TAIL2] = 0
        n_new, n_end = _det_expand(frontier, 0, nf, col_ptr, col_rows, mu_row, bfs, root, claim, end_claim, none, buf_a,
                                   zero, new, buf_b, zero, ends, ctl)
        _flush(buf_a, n_new, new, ctl, _TAIL)
        _flush(buf_b, n_end, ends, ctl, _TAIL2)
        n_new, n_end = ctl[_TAIL], ctl[_TAIL2]
        _det_pick_ends(ends, 0, n_end, end_claim, root, best_end)
        ctl[_TAIL] = 0
        nb, p = _det_commit(ends, new, 0, n_end + n_new, n_end, mu_row, mu_col, bfs, root, pred, claim, end_claim,
                            best_end, level, none, buf_a, zero, nxt, ctl)
        _flush(buf_a, nb, nxt, ctl, _TAIL)
        paths += p
        nf = ctl[_TAIL]
        frontier, nxt = nxt, frontier
        swapped = not swapped
        level += 1
        if paths and stop_at_first:
            break
    return nf, level, levels, paths, swapped


@njit(cache=True, parallel=True)
def _det_expand_parallel(frontier, nf, new, ends, ctl, chunk, workers, col_ptr, col_rows, mu_row, bfs, root, claim,
                         end_claim, none):
    for _w in prange(workers):
        buf_new = np.empty(_BUF, dtype=frontier.dtype)
        buf_end = np.empty(_BUF, dtype=frontier.dtype)
        n_new = np.int64(0)  # not literal zeros: Numba would compile the callee once more for them
        n_end = np.int64(0)
        while True:
            start = atomic_add(ctl, _NEXT, chunk)
            if start >= nf:
                break
            n_new, n_end = _det_expand(frontier, start, min(start + chunk, nf), col_ptr, col_rows, mu_row, bfs, root,
                                       claim, end_claim, none, buf_new, n_new, new, buf_end, n_end, ends, ctl)
        _flush(buf_new, n_new, new, ctl, _TAIL)
        _flush(buf_end, n_end, ends, ctl, _TAIL2)


@njit(cache=True, parallel=True)
def _det_pick_ends_parallel(ends, n_end, end_claim, root, best_end, n_chunks):
    for k in prange(n_chunks):
        _det_pick_ends(ends, k * n_end // n_chunks, (k + 1) * n_end // n_chunks, end_claim, root, best_end)


@njit(cache=True, parallel=True)
def _det_commit_parallel(ends, n_end, new, n_new, nxt, ctl, chunk, workers, mu_row, mu_col, bfs, root, pred, claim,
                         end_claim, best_end, level, none):
    total = n_end + n_new
    for _w in prange(workers):
        buf = np.empty(_BUF, dtype=new.dtype)
        nb = np.int64(0)  # not a literal 0: Numba would compile the callee once more for it
        paths = 0
        while True:
            start = atomic_add(ctl, _NEXT, chunk)
            if start >= total:
                break
            nb, p = _det_commit(ends, new, start, min(start + chunk, total), n_end, mu_row, mu_col, bfs, root, pred,
                                claim, end_claim, best_end, level, none, buf, nb, nxt, ctl)
            paths += p
        _flush(buf, nb, nxt, ctl, _TAIL)
        if paths:
            atomic_add(ctl, _FOUND, paths)


def augmenting_bfs_deterministic(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, *,
                                 stop_at_first: bool, tune=None):
    """One phase's search of APFB/APsB with GPUBFS-WR, every race resolved by the smallest id.

    Level by level from all unmatched columns: a column reached by several frontier columns
    joins the tree of the smallest of them; an unmatched row reached by several is claimed by the
    smallest, and a tree that claims rows keeps its smallest one as its path's end (``mu_row[r] =
    -2``, ``pred[r]``) and stops; the columns it claimed at that level are released. So the paths
    are vertex-disjoint and ``alternate`` needs no stop rule. With ``stop_at_first`` (APsB) the
    search ends after the first level that ends a path. Returns ``(found, levels)``. On threads
    a level of at least the threshold of :func:`parallel` columns runs each step over all its
    items at once (the GPU twin's four kernels), with the same outcome. ``tune`` (the GPU
    twin's launch settings) has no effect on the CPU.
    """
    if not n_cols:
        return False, 0
    dt = mu_row.dtype
    none = dt.type(np.iinfo(dt).max)
    stop_at_first = bool(stop_at_first)
    end_claim = np.full(max(n_rows, 1), none, dtype=dt)
    work = [np.empty(n_cols, dtype=dt) for _ in range(5)]
    claim, best_end, frontier, nxt, new = work
    ends = np.empty(max(n_rows, 1), dtype=dt)
    limit = _level_limit(n_cols, int(col_ptr[-1]))
    if limit > n_cols:
        found, levels = _bfs_deterministic(n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, stop_at_first,
                                           claim, end_claim, best_end, frontier, nxt, new, ends, none)
        return bool(found), int(levels)
    _det_init_parallel(mu_col, bfs, root, claim, best_end, none)
    nf = _indices_equal(mu_col, -1, frontier)
    ctl = _counters()
    level = L0
    levels = 0
    found = False
    while nf > 0 and not (found and stop_at_first):
        if nf < limit:
            nf, level, run, paths, swapped = _det_levels(frontier, nf, nxt, new, ends, ctl, col_ptr, col_rows, mu_row,
                                                         mu_col, bfs, root, pred, claim, end_claim, best_end, none,
                                                         level, stop_at_first, limit)
            levels += int(run)
            found = found or paths > 0
            if swapped:
                frontier, nxt = nxt, frontier
            continue
        workers = _threads()
        levels += 1
        ctl[:] = 0
        _det_expand_parallel(frontier, nf, new, ends, ctl, _chunk(nf, workers), workers, col_ptr, col_rows, mu_row,
                             bfs, root, claim, end_claim, none)
        n_new, n_end = int(ctl[_TAIL]), int(ctl[_TAIL2])
        if _sweep_workers(n_end) > 1:
            _det_pick_ends_parallel(ends, n_end, end_claim, root, best_end, 4 * workers)
        else:
            _det_pick_ends(ends, 0, n_end, end_claim, root, best_end)
        ctl[:] = 0
        _det_commit_parallel(ends, n_end, new, n_new, nxt, ctl, _chunk(n_end + n_new, workers), workers, mu_row, mu_col,
                             bfs, root, pred, claim, end_claim, best_end, level, none)
        found = found or ctl[_FOUND] > 0
        nf = int(ctl[_TAIL])
        frontier, nxt = nxt, frontier
        level += 1
    return found, levels


def persistent_supported() -> bool:
    """The CPU has no persistent kernel: APFB/APsB run phase by phase (the GPU twin's is one launch)."""
    return False


# ----------------------------------------------------------------------------- helpers
def cardinality(mu_row) -> int:
    """Number of matched rows."""
    return int(np.count_nonzero(mu_row >= 0))


def unmatched_columns(mu_col):
    """Ids of the columns with ``mu_col == -1``, in the index dtype."""
    return np.flatnonzero(mu_col == -1).astype(mu_col.dtype)


def synchronize() -> None:
    """Nothing to wait for on the CPU."""
