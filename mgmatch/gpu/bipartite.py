"""CuPy launch wrappers of ``kernels/bipartite.cu``; GPU twins of :mod:`mgmatch.cpu.bipartite`.

Every public function has the signature and semantics of its CPU twin. Arrays are CuPy
``int32`` or ``int64``; kernels are templates instantiated for both through ``name_expressions``
and compiled once per device by :func:`mgmatch._kernels.get_kernel`. With the papers' launches
the only host synchronisation inside a phase is the one scalar (flag or count) that decides
whether it goes on; :func:`augmenting_paths_persistent` runs all of APFB/APsB in one
cooperative launch and synchronises once.

Karp-Sipser's degree-one rule is inherently sequential; its GPU twin copies the matching and
the graph to the host, runs the CPU twin and copies the matching back.

The launches of the persistent kernel and of the deterministic search take their tunables from
``tune``, an object with the fields of :class:`mgmatch.algorithms.bipartite.BipartiteConfig`
(the one in force when the run started, passed down by the driver, to a cluster's worker too):
the persistent kernel's block size and blocks per multiprocessor, its lanes per frontier
column, the block-local levels, the work queue and its bounds, the kernel's compile-time
settings (defines, part of the kernel cache key), and the blocks of the deterministic
launches. Their defaults are the constants of :mod:`mgmatch.gpu.tunables`.
"""

from __future__ import annotations

import numpy as np

from .._kernels import cooperative_blocks, device_attribute, get_kernel, sm_count
from ..cpu import bipartite as _cpu

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
    "augmenting_paths_persistent",
    "persistent_supported",
    "cardinality",
    "unmatched_columns",
    "synchronize",
]

L0 = _cpu.L0
BLOCK = 256
_MAX_GRID = 65535 * 32  # grid-stride loops cover the rest
_CT_BLOCKS_PER_SM = 8  # constant-thread (CT) launches: this many blocks per multiprocessor
_CTL_SIZE = 160  # MGM_CTL_SIZE of kernels/bipartite.cu

def _queue_mode(n_cols: int, nnz: int, stop_at_first: bool, *, tune) -> bool:
    """Whether the persistent kernel runs APFB's search as one work queue: ``tune.persistent_queue``
    when set, else on sparse graphs (meshes, roads), whose phases are hundreds of levels with
    small frontiers. The queue is faster there and slower on graphs with hubs, whose levels are
    few and wide, hence the bound on the mean degree, ``tune.queue_max_mean_degree``
    (docs/performance.md, section "Bipartite matching on the GPU: launch modes and thresholds").
    APsB needs the levels."""
    if stop_at_first:
        return False
    if tune.persistent_queue is not None:
        return bool(tune.persistent_queue)
    return nnz <= tune.queue_max_mean_degree * n_cols


def _group_size(n_cols: int, nnz: int, queue_mode: bool = False, *, tune) -> int:
    """Lanes per frontier column of the persistent kernel: ``tune.persistent_group`` when set,
    else the mean column degree rounded up to a power of two, between 4 and 32 (a warp);
    ``tune.queue_group`` for the work queue, where more columns in flight hide the latency of
    each."""
    if tune.persistent_group is not None:
        return int(tune.persistent_group)
    if queue_mode:
        return int(tune.queue_group)
    mean = nnz / max(n_cols, 1)
    return next(g for g in (4, 8, 16, 32) if mean <= g or g == 32)


_KERNELS = (
    "cheap_propose", "clear_exhausted", "fix_cols", "fix_rows", "gr_init", "gr_level",
    "pr_push_all", "pr_init", "pr_shrink_count", "pr_shrink_write", "pr_push",
    "bfs_init", "gpubfs", "gpubfs_wr", "alternate",
    "cheap_det_propose", "cheap_det_accept", "cheap_det_reset",
    "det_expand", "det_pick_ends", "det_commit_ends", "det_commit_cols",
)
_CTYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}
_NAME_EXPRESSIONS = tuple(f"{k}<{t}>" for t in ("int", "long long") for k in _KERNELS)


def _kernel(name: str, dtype):
    return get_kernel("bipartite", f"{name}<{_CTYPES[np.dtype(dtype)]}>", name_expressions=_NAME_EXPRESSIONS)


def _cp():
    import cupy  # noqa: PLC0415

    return cupy


def _grid(n: int) -> int:
    """Blocks for one thread per item (MT), capped; grid-stride loops take any excess."""
    return max(1, min((int(n) + BLOCK - 1) // BLOCK, _MAX_GRID))


def _ct_grid() -> int:
    """Blocks of a constant-thread (CT) launch: fixed per device, independent of n."""
    return sm_count() * _CT_BLOCKS_PER_SM


def _launch(name, dtype, n, args, *, launch="mt"):
    grid = _ct_grid() if launch == "ct" else _grid(n)
    _kernel(name, dtype)((grid,), (BLOCK,), args)


def _flags(n=2):
    return _cp().zeros(n, dtype=np.int32)


# ----------------------------------------------------------------------------- initial matchings
def cheap_matching(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col) -> None:
    """Cheap matching by proposal rounds (see ``cheap_propose``), in place; maximal on return."""
    if not n_cols:
        return
    t = mu_row.dtype.type
    flag = _flags(1)
    while True:
        flag.fill(0)
        _launch("cheap_propose", mu_row.dtype, n_cols, (t(n_cols), col_ptr, col_rows, mu_row, mu_col, flag))
        _launch("fix_cols", mu_row.dtype, n_cols, (t(n_cols), mu_row, mu_col))
        if not int(flag.get()[0]):  # the one scalar that decides termination
            break
    _launch("clear_exhausted", mu_row.dtype, n_cols, (t(n_cols), mu_col))


def karp_sipser_matching(n_rows, n_cols, row_ptr, row_cols, col_ptr, col_rows, mu_row, mu_col) -> None:
    """Karp-Sipser on the host (sequential degree-one rule), result copied back, in place."""
    mr, mc = mu_row.get(), mu_col.get()
    _cpu.karp_sipser_matching(n_rows, n_cols, row_ptr.get(), row_cols.get(), col_ptr.get(), col_rows.get(), mr, mc)
    mu_row.set(mr)
    mu_col.set(mc)


# ----------------------------------------------------------------------------- FIXMATCHING
def fix_matching(mu_row, mu_col, rows_are_truth: bool = True) -> None:
    """FIXMATCHING on both sides; see the CPU twin."""
    t = mu_row.dtype.type
    n_rows, n_cols = mu_row.size, mu_col.size
    cols = ("fix_cols", mu_row.dtype, n_cols, (t(n_cols), mu_row, mu_col))
    rows = ("fix_rows", mu_row.dtype, n_rows, (t(n_rows), mu_row, mu_col))
    for step in ((cols, rows) if rows_are_truth else (rows, cols)):
        if step[2]:
            _launch(*step)


# ----------------------------------------------------------------------------- G-GR
def global_relabel(n_rows, n_cols, row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col) -> int:
    """G-GR [GPR Alg. 4]: INITRELABEL, then one G-GR-KRNL launch per BFS level; returns maxLevel."""
    t = mu_row.dtype.type
    inf = t(n_rows + n_cols)
    if n_rows + n_cols:
        _launch("gr_init", mu_row.dtype, n_rows + n_cols, (t(n_rows), t(n_cols), mu_row, psi_row, psi_col, inf))
    c_level = 0
    if not n_rows:
        return 2
    added = _flags(1)
    while True:
        added.fill(0)
        _launch("gr_level", mu_row.dtype, n_rows,
                (t(n_rows), row_ptr, row_cols, mu_row, mu_col, psi_row, psi_col, t(c_level), inf, added))
        c_level += 2
        if not int(added.get()[0]):
            break
    return c_level


# ----------------------------------------------------------------------------- G-PR
def pr_push_all(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col) -> bool:
    """G-PR-KRNL [GPR Alg. 6]; returns actExists."""
    if not n_cols:
        return False
    t = mu_row.dtype.type
    act = _flags(1)
    _launch("pr_push_all", mu_row.dtype, n_cols,
            (t(n_cols), col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col, t(n_rows + n_cols), act))
    return bool(int(act.get()[0]))


def pr_init(size, mu_row, mu_col, loop, a_c, a_p, ia) -> bool:
    """G-PR-INITKRNL [GPR Alg. 8]; returns actExists."""
    if not size:
        return False
    t = mu_row.dtype.type
    act = _flags(1)
    _launch("pr_init", mu_row.dtype, size, (t(size), mu_row, mu_col, t(loop), a_c, a_p, ia, act))
    return bool(int(act.get()[0]))


def pr_shrink(size, mu_row, mu_col, loop, a_c, a_p, ia) -> int:
    """G-PR-SHRKRNL: count pass, exclusive prefix sum, write pass into ``a_p``; returns the count."""
    if not size:
        return 0
    cp = _cp()
    t = mu_row.dtype.type
    grid = _grid(size)
    threads = grid * BLOCK
    counts = cp.empty(threads, dtype=mu_row.dtype)
    _kernel("pr_shrink_count", mu_row.dtype)((grid,), (BLOCK,), (t(size), mu_row, mu_col, t(loop), a_c, a_p, ia, counts))
    ends = cp.cumsum(counts, dtype=mu_row.dtype)
    offsets = ends - counts
    _kernel("pr_shrink_write", mu_row.dtype)((grid,), (BLOCK,), (t(size), a_c, offsets, a_p))
    return int(ends[-1].get())


def pr_push(size, n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col, loop, a_c, a_p, ia) -> None:
    """G-PR-PUSHKRNL [GPR Alg. 9]: thread per slot of ``A_c``."""
    if not size:
        return
    t = mu_row.dtype.type
    _launch("pr_push", mu_row.dtype, size,
            (t(size), col_ptr, col_rows, mu_row, mu_col, psi_row, psi_col, t(loop), a_c, a_p, ia, t(n_rows + n_cols)))


# ----------------------------------------------------------------------------- APFB / APsB
def augmenting_bfs(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, *,
                   stop_at_first: bool, with_root: bool, level_encoding: bool, launch: str = "ct"):
    """INITBFSARRAY, then one GPUBFS (or GPUBFS-WR) launch per level; returns ``(found, levels)``."""
    if not n_cols:
        return False, 0
    t = mu_row.dtype.type
    dt = mu_row.dtype
    _launch("bfs_init", dt, n_cols, (t(n_cols), mu_col, bfs, root, t(L0)), launch=launch)
    flags = _flags(2)
    level = L0
    found = False
    levels = 0
    while True:
        flags.fill(0)
        if with_root:
            _launch("gpubfs_wr", dt, n_cols,
                    (t(level), t(n_cols), col_ptr, col_rows, mu_row, bfs, root, pred, flags, t(L0),
                     np.int32(bool(level_encoding))), launch=launch)
        else:
            _launch("gpubfs", dt, n_cols,
                    (t(level), t(n_cols), col_ptr, col_rows, mu_row, bfs, pred, flags, t(L0)), launch=launch)
        levels += 1
        inserted, hit = (int(x) for x in flags.get())  # the scalars that decide termination
        found = found or bool(hit)
        if (found and stop_at_first) or not inserted:
            break
        level += 1
    return found, levels


def alternate(n_rows, mu_row, mu_col, pred, bfs, root, *, level_encoding: bool, launch: str = "ct") -> None:
    """ALTERNATE [APFB Alg. 3]: thread per row."""
    if not n_rows:
        return
    t = mu_row.dtype.type
    _launch("alternate", mu_row.dtype, n_rows,
            (t(n_rows), t(mu_col.size), mu_row, mu_col, pred, bfs, root, t(L0), np.int32(bool(level_encoding))),
            launch=launch)


# ----------------------------------------------------------------------------- deterministic runs
def _det_launch(name, dtype, n, args, *, tune) -> None:
    """Launch a deterministic kernel over ``n`` items (None: a count only the device knows) on
    ``tune.deterministic_blocks`` blocks, or a constant-thread grid when that is None."""
    if tune.deterministic_blocks is not None:
        grid = int(tune.deterministic_blocks)
    else:
        grid = _ct_grid() if n is None else min(_ct_grid(), _grid(n))
    _kernel(name, dtype)((grid,), (BLOCK,), args)


def cheap_matching_deterministic(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, *, tune) -> None:
    """Cheap matching by proposal rounds, every race resolved by the smallest column; see the CPU
    twin. ``tune`` gives the launches' blocks."""
    if not n_cols:
        return
    cp = _cp()
    dt = mu_row.dtype
    t = dt.type
    none = t(np.iinfo(dt).max)
    cursor = col_ptr[:-1].copy()
    prop = cp.full(max(n_rows, 1), none, dtype=dt)
    flag = _flags(1)
    while True:
        flag.fill(0)
        _det_launch("cheap_det_propose", dt, n_cols, (t(n_cols), col_ptr, col_rows, mu_row, mu_col, cursor, prop, flag),
                    tune=tune)
        if not int(flag.get()[0]):  # the one scalar that decides termination
            break
        _det_launch("cheap_det_accept", dt, n_cols, (t(n_cols), col_rows, mu_row, mu_col, cursor, prop), tune=tune)
        _det_launch("cheap_det_reset", dt, n_cols, (t(n_cols), col_ptr, col_rows, cursor, prop, none), tune=tune)
    _det_launch("clear_exhausted", dt, n_cols, (t(n_cols), mu_col), tune=tune)


def augmenting_bfs_deterministic(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, *,
                                 stop_at_first: bool, tune):
    """One phase's deterministic GPUBFS-WR search (see the CPU twin for the rules): per level one
    single-thread launch that resets the counters, four over the frontier and the claims it made
    (a group of lanes per frontier column, as in the persistent kernel), and one read-back of
    two counters. ``tune`` gives the launches' blocks and the lanes per frontier column."""
    if not n_cols:
        return False, 0
    cp = _cp()
    dt = mu_row.dtype
    t = dt.type
    none = t(np.iinfo(dt).max)
    _det_launch("bfs_init", dt, n_cols, (t(n_cols), mu_col, bfs, root, t(L0)), tune=tune)
    roots = unmatched_columns(mu_col)
    cur, nxt = cp.empty(n_cols, dtype=dt), cp.empty(n_cols, dtype=dt)
    cur[: roots.shape[0]] = roots
    nf = int(roots.shape[0])
    del roots
    claim = cp.full(n_cols, none, dtype=dt)
    best_end = cp.full(n_cols, none, dtype=dt)
    end_claim = cp.full(max(n_rows, 1), none, dtype=dt)
    new_cols = cp.empty(n_cols, dtype=dt)
    ends = cp.empty(max(n_rows, 1), dtype=dt)
    counts = cp.zeros(5, dtype=np.uint64)  # new columns, claimed ends, paths, next frontier, frontier
    counts[3] = nf
    group = _group_size(n_cols, int(col_rows.shape[0]), tune=tune)
    start = get_kernel("bipartite", "det_level_start", name_expressions=_NAME_EXPRESSIONS)
    level, levels, found = L0, 0, False
    while nf:
        levels += 1
        start((1,), (1,), (counts,))
        _det_launch("det_expand", dt, nf * group, (counts, cur, col_ptr, col_rows, mu_row, bfs, root, t(L0 - 1),
                                                   none, claim, end_claim, new_cols, ends, np.int32(group)), tune=tune)
        _det_launch("det_pick_ends", dt, None, (counts, ends, end_claim, root, best_end), tune=tune)
        _det_launch("det_commit_ends", dt, None, (counts, ends, end_claim, root, best_end, mu_row, pred, bfs, none),
                    tune=tune)
        _det_launch("det_commit_cols", dt, None, (counts, new_cols, claim, root, bfs, mu_col, pred, t(level + 1),
                                                  none, nxt), tune=tune)
        paths, nf = (int(x) for x in counts[2:4].get())  # the scalars that decide termination
        found = found or paths > 0
        if found and stop_at_first:
            break
        cur, nxt = nxt, cur
        level += 1
    return found, levels


def persistent_supported() -> bool:
    """Whether the current device takes cooperative launches (the persistent kernel needs them)."""
    return bool(device_attribute("CooperativeLaunch"))


def augmenting_paths_persistent(n_rows, n_cols, col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, *,
                                stop_at_first: bool, with_root: bool, max_phases: int, tune):
    """APFB / APsB in one cooperative launch (``apfb_persistent``): every phase's traversal,
    ALTERNATE and FIXMATCHING (GPUBFS only; with the root array the paths are vertex-disjoint)
    run on the device, separated by grid-wide barriers, with a group of lanes per frontier column.
    With the root array (GPUBFS-WR) the frontier entries carry the roots, and ``root`` holds each
    claimed column's parent column instead, for ALTERNATE's walk; ``pred`` is then set for the
    ends of the paths only.

    On sparse graphs APFB's search is one FIFO work queue per phase (:func:`_queue_mode`): no
    barrier between BFS levels. Otherwise, and for APsB (which stops at the first level that
    finds a path), the levels run one by one, with a barrier per level. With
    ``tune.queue_max_roots`` the work queue takes only the phases that start with at most that
    many roots, and the wide first phases run level by level.

    ``tune`` gives the launch: its threads per block (``persistent_block``), resident blocks per
    multiprocessor (``persistent_blocks_per_sm``), the lanes per frontier column, the
    block-local levels (``persistent_local``), the work queue's choice and bounds, and the
    kernel's compile-time settings (``persistent_defines``, part of the kernel cache key).

    Returns ``(phases, levels, capped, timings, counts)``: ``levels`` sums, over the phases, the
    depth of the search (the levels a level-synchronous BFS runs); ``capped`` is True when
    ``max_phases`` phases ran and a path was still found; ``timings`` holds the device-measured
    seconds of the traversals (``bfs``) and of ALTERNATE and FIXMATCHING (``alternate``);
    ``counts`` the traversal (``queue_traversal`` 1 when the work queue is on; the phases it
    searched and their levels, ``queue_phases`` and ``queue_levels``; the levels run grid-wide
    and by block 0 alone), the lanes per frontier column and the blocks of the launch. The host
    synchronises once, to read them."""
    if not n_cols:
        return 0, 0, False, {}, {}
    cp = _cp()
    t = mu_row.dtype.type
    name = f"apfb_persistent<{_CTYPES[np.dtype(mu_row.dtype)]}>"
    kernel = get_kernel("bipartite", name, defines=dict(tune.persistent_defines) or None,
                        name_expressions=(name,), cooperative=True)
    queue_mode = _queue_mode(n_cols, int(col_rows.shape[0]), stop_at_first, tune=tune)
    queue_roots = n_cols if tune.queue_max_roots is None else min(int(tune.queue_max_roots), n_cols)
    # (column, begin, end, root) entries: the work queue's slots, or the two halves (frontier and
    # next) of the levels; the work queue's slots start empty (-1)
    levels_too = not queue_mode or queue_roots < n_cols
    queue = cp.empty((8 if levels_too else 4) * n_cols, dtype=mu_row.dtype)
    if queue_mode:
        queue[: 4 * n_cols] = -1
    words = _CTL_SIZE * mu_row.dtype.itemsize // 8  # ctl, the barrier count and stats: one zeroed buffer
    scratch = cp.zeros(words + 12, dtype=np.uint64)
    ctl, bar, stats = scratch[:words].view(mu_row.dtype), scratch[words : words + 1], scratch[words + 1 :]
    block = int(tune.persistent_block)
    grid = cooperative_blocks(kernel, block, int(tune.persistent_blocks_per_sm))
    group = _group_size(n_cols, int(col_rows.shape[0]), queue_mode, tune=tune)
    # a frontier never exceeds n_cols, so the cap keeps the kernel's choices and the index type
    local_max = min(int(tune.persistent_local) * (block // group), n_cols)
    kernel((grid,), (block,), (t(n_rows), t(n_cols), col_ptr, col_rows, mu_row, mu_col, bfs, root, pred, queue,
                               ctl, bar, t(L0), np.int32(bool(with_root)), np.int32(bool(stop_at_first)),
                               t(max_phases), np.int32(group), t(local_max), np.int32(queue_mode), t(queue_roots),
                               stats))
    st = [int(x) for x in stats.get()]
    timings = {"bfs": (st[0] + st[1] + st[2]) * 1e-9, "alternate": st[3] * 1e-9}
    counts = {"queue_traversal": int(queue_mode), "lanes_per_column": group, "blocks": grid,
              "grid_levels": st[4], "block_runs": st[5], "block_levels": st[6], "queue_phases": st[7],
              "queue_levels": st[8]}
    levels = st[4] + st[6] + st[8]  # every level is run grid-wide, by block 0 alone, or in a queue phase
    return st[9], levels, bool(st[10]), timings, counts


# ----------------------------------------------------------------------------- helpers
def cardinality(mu_row) -> int:
    """Number of matched rows."""
    return int(_cp().count_nonzero(mu_row >= 0))


def unmatched_columns(mu_col):
    """Ids of the columns with ``mu_col == -1``, in the index dtype."""
    return _cp().flatnonzero(mu_col == -1).astype(mu_col.dtype)


def synchronize() -> None:
    """Wait for the queued kernels."""
    _cp().cuda.get_current_stream().synchronize()
