"""CPU twins of the bipartite matching kernels (Numba), same signatures as :mod:`mgmatch.gpu.bipartite`.

Each public function here has a GPU twin with the same signature and semantics; the drivers in
:mod:`mgmatch.algorithms.bipartite` pick the twin from the device and never branch otherwise.
Arrays are NumPy ``int32`` or ``int64`` (one index type per call); matching arrays follow the
papers' conventions: ``mu_row[u]`` is the column of row ``u`` or -1, ``mu_col[v]`` the row of
column ``v`` or -1 (-2 marks a column that G-PR found unable to reach an unmatched row).

Design choice for the CPU
-------------------------
The G-PR twins keep the *kernel-shaped* loop of the paper (G-PR-INITKRNL, G-PR-PUSHKRNL and
G-PR-SHRKRNL over the active-column lists ``A_c``/``A_p``), executed sequentially. A sequential
execution of a kernel is one of its valid interleavings, so the CPU runs exactly the
algorithm that the GPU runs (same loop count semantics, same relabeling schedule), and work per
loop is bounded by the active list, which is what a FIFO push-relabel queue processes too: a
separate FIFO implementation would duplicate the algorithm without a structural advantage.
Level-synchronous BFS phases (G-GR and GPUBFS/GPUBFS-WR), which on a GPU are one launch per
level scanning every vertex, run on the CPU as queue-based BFS over the frontier only; they
produce the same labels (G-GR) or a valid outcome of the same level-synchronous search
(GPUBFS), in O(n + nnz) per phase instead of O(levels * n).

The cheap matching is the sequential greedy matching (one proposal round of the GPU kernel,
serialised); Karp-Sipser is the sequential degree-1 rule with greedy choices when no vertex of
degree one is left.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
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
]

L0 = 2  # [APFB]: the BFS start level; unvisited columns have level L0 - 1


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


def cheap_matching(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col) -> None:
    """Cheap (greedy) matching: each unmatched column takes its first free row, in place.

    >>> import numpy as np
    >>> mr, mc = np.full(2, -1), np.full(2, -1)
    >>> cheap_matching(2, 2, np.array([0, 2, 3]), np.array([0, 1, 0]), mr, mc)
    >>> mr.tolist(), mc.tolist()
    ([0, -1], [0, -1])
    """
    if n_cols:
        _cheap(n_cols, col_ptr, col_rows, mu_row, mu_col)


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


def fix_matching(mu_row, mu_col, rows_are_truth: bool = True) -> None:
    """FIXMATCHING: make ``mu_row`` and ``mu_col`` one consistent matching, in place.

    With ``rows_are_truth`` (G-PR) columns whose row does not name them back are released
    first; otherwise (APFB/APsB) rows are released first.
    """
    if rows_are_truth:
        _fix_cols(mu_row, mu_col)
        _fix_rows(mu_row, mu_col)
    else:
        _fix_rows(mu_row, mu_col)
        _fix_cols(mu_row, mu_col)


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


def global_relabel(n_rows, n_cols, row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col) -> int:
    """G-GR: exact distance labels ``psi`` from the unmatched rows; returns ``maxLevel``.

    ``psi(u)`` (rows, even) and ``psi(v)`` (columns, odd) are alternating-path distances to the
    nearest unmatched row, ``n_rows + n_cols`` where none is reachable. ``maxLevel`` is the level
    at which the level-synchronous BFS of [GPR Alg. 4] stops: the deepest row level plus 2.
    """
    return int(_global_relabel(n_rows, n_cols, row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col))


# ----------------------------------------------------------------------------- G-PR
@njit(cache=True)
def _min_row(v, col_ptr, col_rows, psi_row, psi_col, inf):
    psi_min = inf
    u = -1
    target = psi_col[v] - 1
    for j in range(col_ptr[v], col_ptr[v + 1]):
        uu = col_rows[j]
        p = psi_row[uu]
        if p < psi_min:
            psi_min = p
            u = uu
            if psi_min == target:
                break
    return psi_min, u


@njit(cache=True)
def _pr_push_all(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col):
    inf = n_rows + n_cols
    act = False
    for v in range(n_cols):
        mv = mu_col[v]
        if not (mv == -1 or (mv >= 0 and mu_row[mv] != v)):
            continue
        act = True
        psi_min, u = _min_row(v, col_ptr, col_rows, psi_row, psi_col, inf)
        if psi_min < inf:
            mu_row[u] = v
            mu_col[v] = u
            psi_col[v] = psi_min + 1
            psi_row[u] = psi_min + 2
        else:
            mu_col[v] = -2
    return act


def pr_push_all(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col) -> bool:
    """G-PR-KRNL [GPR Alg. 6]: one push-relabel for every active column; returns actExists."""
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
        psi_min, u = _min_row(v, col_ptr, col_rows, psi_row, psi_col, inf)
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
    """G-PR-PUSHKRNL [GPR Alg. 9]: one push-relabel per active column of ``A_c``."""
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


def augmenting_bfs(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, *,
                   stop_at_first: bool, with_root: bool, level_encoding: bool, launch: str = "ct"):
    """INITBFSARRAY and the BFS levels of GPUBFS / GPUBFS-WR from all unmatched columns.

    Ends of augmenting paths get ``mu_row[r] = -2`` and ``pred[r]`` their column. With
    ``stop_at_first`` (APsB) the search stops after the first level that found one; otherwise
    (APFB) it runs until no column is inserted. ``launch`` has no effect on the CPU. Returns
    ``(found, levels)``.
    """
    found, levels = _augmenting_bfs(n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred,
                                    bool(stop_at_first), bool(with_root), bool(level_encoding))
    return bool(found), int(levels)


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


def alternate(n_rows, mu_row, mu_col, pred, bfs, root, *, level_encoding: bool, launch: str = "ct") -> None:
    """ALTERNATE [APFB Alg. 3]: flip the edges of the augmenting paths found by the BFS."""
    if n_rows:
        _alternate(n_rows, mu_row, mu_col, pred, bfs, root, bool(level_encoding))


# ----------------------------------------------------------------------------- deterministic runs
# The same rules as the GPU twins' deterministic kernels, executed sequentially: every race of the
# papers' kernels is resolved by the smallest id instead of by arrival order, so the result does not
# depend on the order in which the vertices are taken, and the CPU and GPU twins agree pair for pair.


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


def cheap_matching_deterministic(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col) -> None:
    """Cheap matching by proposal rounds whose outcome does not depend on thread timing, in place.

    In each round every unmatched column proposes to its first row that was free when the round
    began, and each row takes its smallest proposer; the others try again in the next round. The
    result is maximal (no edge joins two free vertices), like the sequential greedy matching, but
    not always the same one. The GPU twin takes the same decisions.

    >>> mr, mc = np.full(2, -1, np.int64), np.full(2, -1, np.int64)
    >>> cheap_matching_deterministic(2, 2, np.array([0, 1, 2]), np.array([0, 0]), mr, mc)
    >>> mr.tolist(), mc.tolist()
    ([0, -1], [0, -1])
    """
    if n_cols:
        none = np.iinfo(mu_row.dtype).max
        cursor = np.empty(n_cols, dtype=mu_row.dtype)
        prop = np.full(n_rows, none, dtype=mu_row.dtype)
        _cheap_deterministic(n_cols, col_ptr, col_rows, mu_row, mu_col, cursor, prop, mu_row.dtype.type(none))


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


def augmenting_bfs_deterministic(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, *,
                                 stop_at_first: bool):
    """One phase's search of APFB/APsB with GPUBFS-WR, every race resolved by the smallest id.

    Level by level from all unmatched columns: a column reached by several frontier columns
    joins the tree of the smallest of them; an unmatched row reached by several is claimed by the
    smallest, and a tree that claims rows keeps its smallest one as its path's end (``mu_row[r] =
    -2``, ``pred[r]``) and stops; the columns it claimed at that level are released. So the paths
    are vertex-disjoint and ``alternate`` needs no stop rule. With ``stop_at_first`` (APsB) the
    search ends after the first level that ends a path. Returns ``(found, levels)``.
    """
    if not n_cols:
        return False, 0
    none = np.iinfo(mu_row.dtype).max
    dt = mu_row.dtype
    end_claim = np.full(n_rows, none, dtype=dt)
    work = [np.empty(n_cols, dtype=dt) for _ in range(5)]
    found, levels = _bfs_deterministic(n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred,
                                       bool(stop_at_first), work[0], end_claim, work[1], work[2], work[3], work[4],
                                       np.empty(n_rows, dtype=dt), dt.type(none))
    return bool(found), int(levels)


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
