"""GPU twins of :mod:`mgmatch.cpu.louvain`: CuPy launches of the kernels in ``kernels/louvain.cu``.

Same functions, signatures and results as the CPU twins; the arrays are CuPy arrays. The
thread mapping follows section 4.1 of Naim et al. (IPDPS 2017): blocks of 128 threads; for
computeMove groups of 4, 8, 16 and 32 threads of one warp per vertex for degrees up to 32, a
warp for [33, 84] and a block with the hash table in shared memory for [85, 319]; for
mergeCommunity a warp for community degrees up to 127 and a block with a shared table for
[128, 479]. The largest buckets (degree > 319, community degree > 479) are edge-balanced
instead of taking the paper's block per vertex with a table in global memory: each vertex or
community gets a table of its own in global memory, and warps take equal ranges of all their
edges, then of all their slots (``kernels/louvain.cu`` says how). On R-MAT graphs that bucket
holds three quarters of the edges on 4% of the vertices, and one block per hub left most of
the GPU idle, those two kernels taking most of the run (docs/performance.md, section "GPU
Louvain: the largest buckets"). Their
tables are filled chunk by chunk within ``tune.table_budget_bytes``. A sweep launches its
kernels back to back; nothing is read back until its modularity.

Like the CPU twin, and unlike the paper's Algorithm 1 (which applies the moves once per
bucket), a sweep applies the moves after each of the ``s = slices[b]`` interleaved batches
``bucket[j::s]`` of bucket ``b`` (``LouvainConfig.move_slices``, 1 for
buckets below its ``move_slice_min``): on R-MAT graphs after aggregation most vertices share
one bucket, and moving them all from one snapshot overshoots. Each batch is one computeMove
launch (the bucket's kernel), the count of the change of the internal weight that its movers
make (``mark_batch`` and ``moved_weight``: the sweep's modularity then needs no pass over every
edge) and one apply_moves launch; the batches are contiguous copies made once per level.

Tunables arrive as ``tune``, an object with the fields of
:class:`mgmatch.algorithms.louvain_program.LouvainConfig` (the one the run started with, passed
down by the Louvain program, to a cluster's workers too): the edge-balanced kernels' table budget
and range width, and the fused kernel's shape, thresholds and budgets. Their defaults are the
constants of :mod:`mgmatch.gpu.tunables`; the values that change compilation are part of the
kernels' cache key (their defines).
"""

from __future__ import annotations

import ctypes
import functools
import math
import threading

import numpy as np

from .._array import cupy_or_none
from .._kernels import compute_capability, sm_count
from ..cpu.louvain import move_batches, table_sizes
from ..errors import ResourceError

__all__ = [
    "check_memory", "fixed_point", "strengths", "make_move_workspace", "move_sweep", "decide_moves", "apply_move_rows",
    "square_sum",
    "aggregate",
    "fused_eligible", "run_fused",
]

BLOCK = 128
#: Upper community-degree bounds of the mergeCommunity buckets (warp, block, edge-balanced).
MERGE_BUCKETS = (127, 479)

_SLOT_BYTES = 12  # int32 key + int64 weight
_NO_COMM = 0x7FFFFFFF  # best_c before any candidate (atomicMin)

# (threads per vertex, table slots) of the sub-warp and warp buckets [1,4] .. [33,84]
_GROUP_CONFIG = ((4, 7), (8, 13), (16, 29), (32, 53), (32, 127))
_NAMES = tuple(f"compute_move_group<{g}, {t}>" for g, t in _GROUP_CONFIG)


def _cp():
    return cupy_or_none()  # (cached: an import statement would cost a fused run's host time on every call)


@functools.cache
def _driver():
    from cupy_backends.cuda.api import driver  # noqa: PLC0415

    return driver


def _kernel(name: str, tune):
    """Kernel ``name`` of the phase driver, compiled with ``tune.range_steps`` (a define: part of
    the kernel cache key)."""
    from .._kernels import get_kernel  # noqa: PLC0415

    return get_kernel(
        "louvain", name, defines={"LOUVAIN_BLOCK": BLOCK, "RANGE_STEPS": int(tune.range_steps)},
        name_expressions=_NAMES,
    )


def _grid(work: int, per_block: int) -> int:
    return max(1, min(-(-work // per_block), sm_count() * 32))


def _ranged_grid(work: int, tune) -> int:
    """Blocks of an edge-balanced kernel over ``work`` indices (32 x ``tune.range_steps`` per warp)."""
    return _grid(work, BLOCK * int(tune.range_steps))


def _chunks(tpre, *also, tune) -> tuple[list, int]:
    """Cut items ``0 .. k-1`` into runs whose hash tables fit ``tune.table_budget_bytes``.

    ``tpre`` is the prefix sum of the items' table sizes (a device array of ``k + 1``). Returns
    ``[(lo, hi, slots, *spans)]`` (``spans`` the widths of ``[lo, hi)`` in each prefix array of
    ``also``) and the most slots one run needs: the budget plus at most one item's table.
    """
    cp = _cp()
    k = int(tpre.shape[0]) - 1
    if k <= 0:
        return [], 0
    budget = max(1, int(tune.table_budget_bytes) // _SLOT_BYTES)
    total = int(tpre[-1])
    starts = cp.searchsorted(tpre[:-1], cp.arange(max(1, -(-total // budget)), dtype=cp.int64) * budget)
    bounds = np.unique(np.append(cp.asnumpy(starts), k))
    at = cp.asarray(bounds)
    ends = [cp.asnumpy(pre[at]) for pre in (tpre, *also)]
    runs = [
        (int(bounds[r]), int(bounds[r + 1]), *(int(e[r + 1] - e[r]) for e in ends))
        for r in range(len(bounds) - 1)
        if bounds[r + 1] > bounds[r]
    ]
    return runs, max((run[2] for run in runs), default=0)


def _device_id(device: int | None = None) -> int:
    """``device``, or the current device's id when the caller does not have it."""
    return int(_cp().cuda.runtime.getDevice()) if device is None else device


def _device_table_sizes(max_degree: int):
    """:func:`~mgmatch.cpu.louvain.table_sizes` on the current device, copied once per size range."""
    return _device_table_array(max_degree)[: max_degree + 1]


def _device_table_array(max_degree: int, device: int | None = None):
    """The copy on ``device`` (default: the current one) of :func:`~mgmatch.cpu.louvain.table_sizes`,
    of more than ``max_degree`` entries (a kernel that reads it by degree needs no slice of it:
    making one costs as much as a small graph's level start)."""
    key = _device_id(device)
    dev = _TABLE_SIZES.get(key)
    if dev is None or dev.shape[0] <= max_degree:
        dev = _TABLE_SIZES[key] = _cp().asarray(table_sizes(max(2 * max_degree, 1024)))
    return dev


_TABLE_SIZES: dict = {}


def _prefix(values):
    """``[0, cumsum(values)]`` as int64 on the device."""
    cp = _cp()
    out = cp.zeros(int(values.shape[0]) + 1, dtype=cp.int64)
    if values.shape[0]:
        cp.cumsum(values, dtype=cp.int64, out=out[1:])
    return out


def free_bytes(need: int = 0) -> int:
    """Device memory free for new arrays: the pool's cached blocks, plus the driver's free memory
    unless the cached blocks alone hold ``need`` bytes (a repeated run of the same size; the
    driver's query costs tens of microseconds, as much as a level of a small graph)."""
    cp = _cp()
    cached = int(cp.get_default_memory_pool().free_bytes())
    if 0 < need <= cached:
        return cached
    free, _total = cp.cuda.runtime.memGetInfo()
    return int(free) + cached


def estimate_bytes(n: int, nnz: int, max_degree: int, *, tune) -> int:
    """Peak device bytes of a Louvain run besides the input graph.

    Level graph (indices, fixed-point weights: 12 bytes per entry), the aggregation's new
    edge lists (at most 12 per entry), per-vertex state (about 96 bytes) and the hash tables
    of the edge-balanced kernels (within ``tune.table_budget_bytes``).
    """
    table = _SLOT_BYTES * (3 * max(max_degree, 1) // 2 + 64)
    return int(24 * nnz + 96 * (n + 1) + min(int(tune.table_budget_bytes), 18 * nnz) + table)


def check_memory(n: int, nnz: int, max_degree: int, need: int | None = None, *, tune) -> int:
    """Raise :class:`~mgmatch.errors.ResourceError` unless a run of this size fits the device
    (``need`` bytes, by default :func:`estimate_bytes`)."""
    need = estimate_bytes(n, nnz, max_degree, tune=tune) if need is None else int(need)
    have = free_bytes(need)
    if need > have:
        raise ResourceError(
            f"louvain on a graph with {n} vertices and {nnz} stored edges needs about "
            f"{need / 2**30:.2f} GiB of GPU memory; {have / 2**30:.2f} GiB is free"
        )
    return need


def make_move_workspace(n: int, max_degree: int, buckets, *, slices, batches=None) -> dict:
    """Table sizes, the newComm array and the batches of every bucket.

    The batches (:func:`~mgmatch.cpu.louvain.move_batches`, the same as the CPU twin's) are
    copied to contiguous arrays once per level; ``batches`` replaces them where the caller chose
    them (a partition's share of a larger graph's batches; empty batches allowed). The
    edge-balanced plan of the last bucket (> 319) is made on the first sweep, which has the
    graph (:func:`_move_plan`).
    """
    cp = _cp()
    ws = {"table_sizes": _device_table_sizes(max_degree), "new_comm": cp.empty(max(n, 1), dtype=cp.int32),
          "pend": cp.full(max(n, 1), -1, dtype=cp.int32)}  # (moved_weight's marks; -1 outside a batch)
    if batches is None:
        batches = [move_batches(verts, int(k)) for verts, k in zip(buckets, slices, strict=True)]
    ws["batches"] = batches
    return ws


def _move_plan(indptr, workspace, tune) -> list:
    """Per batch of the > 319 bucket: prefix sums of its degrees and table sizes, and its chunks.

    Also allocates the tables (empty keys, zero weights) and the per-vertex scratch of the
    edge-balanced computeMove; the kernels leave both as they found them.
    """
    cp = _cp()
    plan = []
    slots = width = 0
    for verts in workspace["batches"][-1]:
        if int(verts.shape[0]) == 0:  # a partition's empty share of a batch
            plan.append(None)
            continue
        deg = indptr[verts + 1] - indptr[verts]
        vpre = _prefix(deg)
        tpre = _prefix(workspace["table_sizes"][deg])
        runs, most = _chunks(tpre, vpre, tune=tune)
        plan.append((verts, vpre, tpre, runs))
        slots = max(slots, most)
        width = max(width, max((hi - lo for lo, hi, *_ in runs), default=0))
    workspace["g_keys"] = cp.full(max(slots, 1), -1, dtype=cp.int32)
    workspace["g_vals"] = cp.zeros(max(slots, 1), dtype=cp.int64)
    workspace["best_key"] = cp.zeros(max(width, 1), dtype=cp.uint64)
    workspace["best_c"] = cp.full(max(width, 1), _NO_COMM, dtype=cp.int32)
    workspace["e_own"] = cp.zeros(max(width, 1), dtype=cp.int64)
    return plan


def move_sweep(indptr, indices, wfix, kfix, comm, csize, afix, buckets, gamma_over_2m, workspace, *, tune):
    """One iteration of Algorithm 1 on the GPU: per batch of a bucket, computeMove then apply (no host sync).

    ``buckets`` are the buckets ``workspace`` was made for. Batch ``j`` of bucket ``b`` is
    ``bucket[j::slices[b]]``; its moves are decided from the state at the start of the batch and
    applied (``C``, community sizes, ``a_c``) before the next batch, in the same order as the
    CPU twin, so both take the same decisions. The paper applies them once per bucket; see the
    module notes for why we do not.

    Returns the change of the internal weight over the sweep, as the CPU twin does, but as
    a 0-d int64 device array (reading it waits for the sweep): before a batch is applied, its
    movers count the change of their entries (``moved_weight`` in ``kernels/louvain.cu``).
    """
    cp = _cp()
    apply = _kernel("apply_moves", tune)
    change = cp.zeros((), dtype=cp.int64)
    n = int(indptr.shape[0]) - 1
    for b, batches in enumerate(workspace["batches"]):
        for j, verts in enumerate(batches):
            nv = int(verts.shape[0])  # host metadata: no read-back
            if nv:
                decide_moves(indptr, indices, wfix, kfix, comm, csize, afix, gamma_over_2m, workspace, b, j,
                             tune=tune)
                _count_batch(verts, None, nv, 0, n, indptr, indices, wfix, comm, workspace, change, tune)
                apply((_grid(nv, BLOCK),), (BLOCK,), (verts, np.int32(nv), workspace["new_comm"], comm, csize, afix, kfix))
                _mark(verts, None, nv, comm, workspace, False, tune)
    return change


def _batch_args(verts, rows) -> tuple:
    """A batch's vertices as the kernels take them: ``(verts, rows, stride)``, the unused array
    repeated (a stride of 0 reads ``verts``)."""
    if rows is None:
        return verts, verts, np.int32(0)
    return rows, rows, np.int32(rows.strides[0] // rows.itemsize)


def _mark(verts, rows, k: int, comm, workspace, set_: bool, tune) -> None:
    """``pend`` of a batch's vertices that move: their new communities (``set_``), or back to -1."""
    _kernel("mark_batch", tune)(
        (_grid(k, BLOCK),), (BLOCK,),
        (*_batch_args(verts, rows), np.int64(k), workspace["new_comm"], comm, workspace["pend"], np.int32(set_)),
    )


def _count_batch(verts, rows, k: int, lo: int, hi: int, indptr, indices, wfix, comm, workspace, acc, tune) -> None:
    """Add to ``acc`` the change of the internal weight that the batch's movers of ``[lo, hi)``
    make (marks set first, cleared by the caller once the batch is applied)."""
    _mark(verts, rows, k, comm, workspace, True, tune)
    _kernel("moved_weight", tune)(
        (_grid(k, BLOCK // 32),), (BLOCK,),
        (*_batch_args(verts, rows), np.int64(k), np.int32(lo), np.int32(hi), indptr, indices, wfix, comm,
         workspace["pend"], acc),
    )


def apply_move_rows(rows, comm, csize, afix, kfix, *, tune, graph, workspace):
    """Apply the moves carried by message rows ``(kind, v, c, aux)`` (``rows[:, 1]`` moves to
    ``rows[:, 2]``; a vertex already in ``c`` stays), nothing read back, and return the change
    of the internal weight that the moves of the vertices ``lo .. hi - 1`` of
    ``graph = (indptr, indices, wfix, lo, hi)`` (a partition's rows, indexed by level vertex)
    make: as the CPU twin does, but as a 0-d int64 device array (summed over the partitions: the
    change of the level's internal weight). ``workspace`` is the partition's move workspace.
    """
    cp = _cp()
    k = int(rows.shape[0])
    change = cp.zeros((), dtype=cp.int64)
    if k == 0:
        return change
    if rows.strides[1] != rows.itemsize or rows.strides[0] < 3 * rows.itemsize:  # (a stride of 0 means verts)
        rows = cp.ascontiguousarray(rows)
    indptr, indices, wfix, lo, hi = graph
    _count_batch(None, rows, k, int(lo), int(hi), indptr, indices, wfix, comm, workspace, change, tune)
    _kernel("apply_move_rows", tune)(
        (_grid(k, BLOCK),), (BLOCK,),
        (rows, np.int64(k), np.int32(rows.strides[0] // rows.itemsize), comm, csize, afix, kfix),
    )
    _mark(None, rows, k, comm, workspace, False, tune)
    return change


def decide_moves(indptr, indices, wfix, kfix, comm, csize, afix, gamma_over_2m, workspace, b: int, j: int, *,
                 tune):
    """computeMove (Algorithm 2) for batch ``j`` of bucket ``b`` (the bucket's kernel):
    ``workspace["new_comm"][v]`` becomes the community each vertex ``v`` of the batch moves to
    (its own if it stays). Nothing is applied; returns the batch's vertices."""
    verts = workspace["batches"][b][j]
    nv = int(verts.shape[0])
    if nv == 0:
        return verts
    last = len(workspace["batches"]) - 1
    if b == last and "plan" not in workspace:
        workspace["plan"] = _move_plan(indptr, workspace, tune)
    ts, new_comm = workspace["table_sizes"], workspace["new_comm"]
    gm = np.float64(gamma_over_2m)
    common = (indptr, indices, wfix, kfix, comm, csize, afix, verts, np.int32(nv), ts, gm, new_comm)
    if b < len(_GROUP_CONFIG):
        g, t = _GROUP_CONFIG[b]
        _kernel(f"compute_move_group<{g}, {t}>", tune)((_grid(nv, BLOCK // g),), (BLOCK,), common)
    elif b < last:
        _kernel("compute_move_block", tune)((_grid(nv, 1),), (BLOCK,), common)
    else:
        _move_edge_balanced(indptr, indices, wfix, kfix, comm, csize, afix, gm, workspace, j, tune)
    return verts


def _move_edge_balanced(indptr, indices, wfix, kfix, comm, csize, afix, gm, ws, j, tune) -> None:
    """computeMove for batch ``j`` of the > 319 bucket, chunk by chunk (see kernels/louvain.cu)."""
    verts, vpre, tpre, runs = ws["plan"][j]
    keys, vals = ws["g_keys"], ws["g_vals"]
    best_key, best_c, e_own = ws["best_key"], ws["best_c"], ws["e_own"]
    for lo, hi, slots, edges in runs:
        lo64, hi64 = np.int64(lo), np.int64(hi)
        _kernel("move_hash_edges", tune)(
            (_ranged_grid(edges, tune),), (BLOCK,),
            (indptr, indices, wfix, comm, verts, vpre, tpre, lo64, hi64, keys, vals),
        )
        slot_args = (verts, tpre, lo64, hi64, keys, vals, comm, csize, afix, kfix, gm)
        _kernel("move_best_score", tune)((_ranged_grid(slots, tune),), (BLOCK,), slot_args + (best_key, e_own))
        _kernel("move_best_comm", tune)((_ranged_grid(slots, tune),), (BLOCK,), slot_args + (best_key, best_c))
        _kernel("move_decide", tune)(
            (_grid(hi - lo, BLOCK),), (BLOCK,),
            (verts, lo64, hi64, comm, kfix, afix, gm, best_key, best_c, e_own, ws["new_comm"]),
        )


@functools.cache
def _fixed_point_kernel():
    cp = _cp()
    return cp.ElementwiseKernel("float64 w, float64 s", "int64 y", "y = (long long)rint(w * s)", "mgmatch_fixed_point")


def fixed_point(weights, scale: float):
    """``rint(weights * scale)`` as int64 in one pass (no float64 temporary of the edge count)."""
    return _fixed_point_kernel()(weights, np.float64(scale))


def strengths(indptr, wfix, loop_fix, *, tune):
    """``k_i`` (Algorithm 1, line 2), a warp per vertex (no prefix sum over the edges)."""
    cp = _cp()
    n = int(indptr.shape[0]) - 1
    out = cp.empty(max(n, 0), dtype=cp.int64)
    if n > 0:
        _kernel("vertex_strengths", tune)((_grid(n, BLOCK // 32),), (BLOCK,),
                                          (indptr, wfix, loop_fix, np.int32(n), out))
    return out


def square_sum(a, *, tune) -> int:
    """``sum(a**2)`` exactly, for non-negative int64 ``a`` whose sum is below ``2**60``: the CPU
    twin's five parts, in one pass (``square_sums``) and one read back."""
    cp = _cp()
    n = int(a.shape[0])
    if n == 0:
        return 0
    out = cp.zeros(5, dtype=cp.uint64)
    _kernel("square_sums", tune)((_grid(n, BLOCK),), (BLOCK,), (a, np.int64(n), out))
    hh, hl, pp, pr, rr = (int(x) for x in cp.asnumpy(out))
    return (hh << 60) + (hl << 31) + (pp << 30) + (pr << 16) + rr


def aggregate(indptr, indices, wfix, loop_fix, comm, *, tune):
    """Aggregation phase, Algorithm 3, on the GPU; returns what the CPU twin returns.

    mergeCommunity runs twice, counting and then writing (see ``kernels/louvain.cu``), so the
    new edge lists are allocated at their exact size and no temporary list of the old edge
    count (12 bytes per edge) is needed.
    """
    cp = _cp()
    n = int(indptr.shape[0]) - 1
    com_size = cp.zeros(n, dtype=cp.int32)
    com_degree = cp.zeros(n, dtype=cp.int64)
    grid_n = _grid(n, BLOCK)
    _kernel("community_sizes", tune)((grid_n,), (BLOCK,), (indptr, comm, np.int32(n), com_size, com_degree))
    nonempty = com_size > 0
    new_id = cp.where(nonempty, cp.cumsum(nonempty, dtype=cp.int64) - 1, -1).astype(cp.int32)  # prefixSum(newID)
    communities = cp.flatnonzero(nonempty).astype(cp.int32)
    n_new = int(communities.shape[0])
    edge_pos = _prefix(com_degree)  # prefixSum(edgePos)
    deg = com_degree[communities]
    del com_degree  # edge_pos[c + 1] - edge_pos[c] from here on
    vertex_start = _prefix(com_size)  # prefixSum(vertexStart)
    del nonempty
    members = cp.empty(max(n, 1), dtype=cp.int32)
    _kernel("order_by_community", tune)((grid_n,), (BLOCK,), (comm, np.int32(n), vertex_start, com_size, members))
    del com_size  # counted down to zero
    counts = cp.zeros(n_new, dtype=cp.int64)
    new_loop = cp.zeros(n_new, dtype=cp.int64)
    # a community has at most n_new - 1 distinct neighbours, so its table never needs more
    cap = max(n_new, 1)
    sizes_all = _device_table_sizes(min(int(deg.max()) if n_new else 0, cap))
    small, big = MERGE_BUCKETS
    buckets = []
    for b, mask in enumerate((deg <= small, (deg > small) & (deg <= big), deg > big)):
        comms = communities[mask]
        if comms.shape[0]:
            sizes = sizes_all[cp.minimum(deg[mask], sizes_all.shape[0] - 1)]
            plan = _merge_plan(deg[mask], sizes, n, indptr, members, tune) if b == 2 else None
            buckets.append((b, comms, sizes, plan))
    graph = (indptr, indices, wfix, comm, new_id, members, vertex_start)
    _merge_pass(buckets, graph, edge_pos, 0, None, None, None, counts, new_loop, tune)
    new_indptr = _prefix(counts)
    nnz_new = int(new_indptr[-1])
    new_indices = cp.empty(nnz_new, dtype=cp.int32)
    new_wfix = cp.empty(nnz_new, dtype=cp.int64)
    _merge_pass(buckets, graph, edge_pos, 1, new_indptr, new_indices, new_wfix, counts, new_loop, tune)
    if n:  # the members' own self-loops, for every community
        _kernel("merge_member_loops", tune)(
            (_grid(n, BLOCK),), (BLOCK,), (members, np.int32(n), comm, new_id, loop_fix, new_loop)
        )
    return new_indptr, new_indices, new_wfix, new_loop, new_id


def _merge_plan(deg, sizes, n, indptr, members, tune) -> dict:
    """Prefix sums, chunks and hash tables of the edge-balanced mergeCommunity (degree > 479)."""
    cp = _cp()
    plan = {"bep": _prefix(deg), "btp": _prefix(sizes)}
    plan["mpre"] = _prefix(indptr[1:][members[:n]] - indptr[:-1][members[:n]])
    plan["runs"], slots = _chunks(plan["btp"], plan["bep"], tune=tune)
    plan["keys"] = cp.full(max(slots, 1), -1, dtype=cp.int32)  # emptied again by every chunk
    plan["vals"] = cp.zeros(max(slots, 1), dtype=cp.int64)
    return plan


def _merge_pass(buckets, graph, edge_pos, write, out_pos, out_idx, out_w, counts, new_loop, tune) -> None:
    """One pass of mergeCommunity over the buckets: counting (``write = 0``) or writing (``1``)."""
    cp = _cp()
    if out_pos is None:  # the counting pass writes no edges
        out_pos, out_idx, out_w = counts, cp.empty(1, dtype=cp.int32), cp.empty(1, dtype=cp.int64)
    indptr, indices, wfix, comm, new_id, members, vertex_start = graph
    w32 = np.int32(write)
    for b, comms, sizes, plan in buckets:
        nb = int(comms.shape[0])
        if b < 2:
            args = (comms, np.int32(nb), *graph, sizes, w32, out_pos, out_idx, out_w, counts, new_loop)
            if b == 0:
                _kernel("merge_community_warp", tune)((_grid(nb, BLOCK // 32),), (BLOCK,), args)
            else:
                _kernel("merge_community_block", tune)((_grid(nb, 1),), (BLOCK,), args)
            continue
        bep, btp, keys, vals = plan["bep"], plan["btp"], plan["keys"], plan["vals"]
        for lo, hi, n_slots, edges in plan["runs"]:
            lo64, hi64 = np.int64(lo), np.int64(hi)
            _kernel("merge_hash_edges", tune)(
                (_ranged_grid(edges, tune),), (BLOCK,),
                (comms, bep, btp, lo64, hi64, indptr, indices, wfix, comm, new_id, members, vertex_start, edge_pos,
                 plan["mpre"], keys, vals, w32, new_loop),
            )
            _kernel("merge_write_tables", tune)(
                (_ranged_grid(n_slots, tune),), (BLOCK,),
                (comms, btp, lo64, hi64, new_id, keys, vals, w32, counts, out_pos, out_idx, out_w),
            )


# ------------------------------------------------------------------------ fused small graphs
# Graphs of at most ``LouvainConfig.fused_max_edges`` stored edges (and ``tune.fused_max_vertices``
# vertices) run as one fused kernel on a thread-block cluster (``louvain_fused`` in
# ``kernels/louvain.cu``) when the device has clusters (compute capability 9.0 or newer): on them
# the launches and read-backs of the phase-per-kernel driver cost more than the work.
#
_FUSED_MAX_RECORDS = 256  # levels processed, each with a record in the stats
_FUSED_BUCKETS = (4, 8, 16, 32, 84, 319)  # the kernel's computeMove buckets (its move_bucket)
_FUSED_MAX_BATCHES = 64
_FUSED_STAT_HEAD = 9
_FUSED_STAT_W = 8
_INT32, _INT64, _FLOAT64 = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float64)
_FUSED_HEAD_BYTES = 128  # the stats header's device copy, at the start of the scratch
_FUSED_PART = 8
#: (group size, table slots) of the kernel's computeMove buckets: its shared-memory tables
_FUSED_TABLES = _GROUP_CONFIG + ((BLOCK, 479),)
_NON_PORTABLE_CLUSTER = 14  # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
_FUSED_STATUS = {1: "done", 2: "handover", 3: "no_room"}  # 4 "solo", 5 "mid": never outlive the kernels after


def fused_eligible(n: int, nnz: int, *, move_buckets, slices: int, max_edges: int, tune) -> bool:
    """Whether :func:`run_fused` takes a graph of this size with these move parameters (at most
    ``max_edges`` stored edges: ``LouvainConfig.fused_max_edges``, and ``tune.fused_max_vertices``
    vertices)."""
    return (
        0 < nnz <= min(max_edges, (1 << 32) - 1)  # the kernel's 32-bit edge offsets (BatchVertex)
        # its 20-bit vertex ids (BatchVertex; the 40-bit limbs of sum a_c^2 take up to 2^23 - 1)
        and n <= min(int(tune.fused_max_vertices), 1 << 20)
        and tuple(move_buckets) == _FUSED_BUCKETS
        and (len(_FUSED_BUCKETS) + 1) * int(slices) <= _FUSED_MAX_BATCHES
        and compute_capability() >= 90
    )


def _fused_kernel(cluster: int, hubs: bool = False, device: int | None = None, *, tune):
    """``(driver handles of the cluster kernel, of the cluster kernel that goes on from its
    FUSED_MID handover (0: none) and of the one-block kernel; the one-block kernel's threads, its
    dynamic shared bytes, where its level copy starts and how many bytes it may take)``, built
    with code for hubs or without and the shape ``tune`` gives (``fused_threads``,
    ``fused_range_steps``, ``fused_solo_bytes``, ``fused_solo_threads``);
    the cluster kernel's dynamic shared memory is :func:`_fused_smem` of ``tune.fused_threads``;
    ``device`` the current device's id, if the caller has it."""
    threads = int(tune.fused_threads)
    solo = tune.fused_solo_bytes
    return _configured_fused_kernel(
        _device_id(device), cluster, threads, int(tune.fused_range_steps), None if solo is None else int(solo),
        int(tune.fused_solo_threads or threads), bool(hubs),
    )


@functools.cache
def _configured_fused_kernel(device_id: int, cluster: int, threads: int, range_steps: int, solo, solo_threads: int,
                             hubs: bool):
    """The fused kernels for one shape, with their shared-memory and cluster attributes set
    (once: every argument, the compile-time ones among them, is part of the cache key). The
    one-block kernel's dynamic shared memory is the computeMove tables, then the level copy
    (``solo`` bytes, or all the device lets a block have beside them and the static arrays)."""
    from .._kernels import get_kernel  # noqa: PLC0415

    cp = _cp()
    defines = {"FUSED_CLUSTER": cluster, "FUSED_THREADS": threads, "RANGE_STEPS": range_steps, "FUSED_HUBS": int(hubs)}
    kernel = get_kernel("louvain", "louvain_fused", defines=defines)
    # the second build: the one-block kernel, and the cluster kernel that goes on from the first's
    # FUSED_MID handover
    second = dict(defines, FUSED_THREADS=solo_threads, FUSED_RESUME=1)
    solo_kernel = get_kernel("louvain", "louvain_fused_solo", defines=second)
    mid_kernel = get_kernel("louvain", "louvain_fused", defines=second) if solo_threads < threads else None
    for k, t in ((kernel, threads), (mid_kernel, solo_threads)):
        if k is None:
            continue
        if k.max_dynamic_shared_size_bytes < _fused_smem(t):
            k.max_dynamic_shared_size_bytes = _fused_smem(t)
        if cluster > 8:
            from cupy_backends.cuda.api import driver  # noqa: PLC0415

            driver.funcSetAttribute(k.kernel.ptr, _NON_PORTABLE_CLUSTER, 1)
    solo_off = -(-_fused_smem(solo_threads) // 16) * 16
    room = int(cp.cuda.Device(device_id).attributes["MaxSharedMemoryPerBlockOptin"]) - solo_kernel.shared_size_bytes
    solo_cap = max(0, room - solo_off) if solo is None else max(0, min(int(solo), room - solo_off))
    solo_cap -= solo_cap % 16
    if solo_kernel.max_dynamic_shared_size_bytes < solo_off + solo_cap:
        solo_kernel.max_dynamic_shared_size_bytes = solo_off + solo_cap
    # launched through the driver with packed parameters (_fused_try)
    handles = tuple(k.kernel.ptr if k is not None else 0 for k in (kernel, mid_kernel, solo_kernel))
    return handles, solo_threads, solo_off + solo_cap, solo_off, solo_cap


#: (device, cluster size) pairs whose device refused that cluster size (they get the portable 8).
_CLUSTER_REFUSED: set = set()


def _fused_cluster(tune, device: int | None = None) -> int:
    """The cluster size of a fused launch on ``device`` (default: the current one):
    ``tune.fused_cluster``, or the portable 8 where the device refused it."""
    cluster = int(tune.fused_cluster)
    return min(cluster, 8) if (_device_id(device), cluster) in _CLUSTER_REFUSED else cluster


@functools.cache
def _fused_smem(threads: int) -> int:
    """Dynamic shared memory of the fused kernel's computeMove tables (the largest bucket's) at
    ``threads`` threads a block."""
    return max(threads // g * t for g, t in _FUSED_TABLES) * _SLOT_BYTES


def _fused_level_rows(n: int, tune) -> int:
    """Rows of the levels' buffer for a graph of ``n`` vertices: ``tune.fused_level_rows``, within
    ``tune.fused_level_bytes``, at least one.

    The kernel composes each written level's communities of the original vertices itself (the
    host, composing the levels' maps with NumPy, took a sizeable share of a small graph's run:
    docs/performance.md, section "Fused kernel: level rows"), and
    stops at a level without a row (the check comes before its sweeps, so the last level, which
    writes none, counts too). Runs write few levels: 4elt writes 5.
    """
    return max(1, min(int(tune.fused_level_rows), int(tune.fused_level_bytes) // (8 * max(n, 1))))


@functools.lru_cache(maxsize=64)
def _fused_table_cap(n: int, nnz: int) -> int:
    """Slots the aggregation's tables can need on any level of a graph of ``n`` vertices and
    ``nnz`` stored entries: the sum over communities of ``ts[min(d_c, n)]``, the table size of
    their degree ``d_c`` (the kernel counts only their edges to other communities), where the
    degrees sum to at most ``nnz`` over at most ``n`` communities.

    With ``G(d)``, the largest excess ``ts[d'] - 1.5 d'`` for ``d' <= d`` (non-decreasing), the
    sum is at most ``1.5 nnz + n G(0) + sum_{j >= 1} (G(j) - G(j - 1)) min(n, nnz // j)``, since
    at most ``nnz // j`` communities have degree ``j`` or more. (The bound ``1.5 nnz + n G(n)``
    is 4 to 5 times larger on sparse graphs: the large excesses belong to large degrees, which
    few communities can have.)
    """
    excess = np.maximum.accumulate(table_sizes(max(n, 320))[: n + 1] - 1.5 * np.arange(n + 1))
    j = np.arange(1, n + 1)
    tail = float(np.sum(np.diff(excess) * np.minimum(n, nnz // j)))
    return int(1.5 * nnz + n * excess[0] + tail) + 16


def _fused_table_first(n: int, nnz: int, tune) -> int:
    """Slots of the fused kernel's first try: ``tune.fused_table_slots`` per stored edge (at least
    ``tune.fused_table_min_slots``), or all that fit beside the aggregation's other arrays in the
    move phase's region, if more (on graphs of few edges per vertex); within the bound of every
    partition."""
    return _table_first(n, nnz, float(tune.fused_table_slots), int(tune.fused_table_min_slots))


@functools.lru_cache(maxsize=64)
def _table_first(n: int, nnz: int, per_edge: float, least: int) -> int:
    _, move, aggregate, _ = _fused_regions(n, 0, 8)
    free = max(0, move - aggregate - 32) // _SLOT_BYTES
    want = max(math.ceil(per_edge * nnz), least, free)
    return min(want, _fused_table_cap(n, nnz))


def _layout(sizes) -> tuple[list, int]:
    """Offsets of arrays of the given ``(count, dtype)`` in one allocation (each 256-byte
    aligned), and its size in bytes."""
    offsets, total = [], 0
    for count, dtype in sizes:
        offsets.append(total)
        total += -(-int(count) * np.dtype(dtype).itemsize // 256) * 256
    return offsets, total


def _fused_hub_slots(n: int, table_cap: int, cluster: int, need: int = 0, nnz: int = 0, *, tune) -> int:
    """Slots, all tables together, for the hubs (``tune.fused_hub_bytes`` a stored edge, at least
    ``tune.fused_hub_min_bytes``): 0 without ``need`` (the kernel without hub code), else twice
    ``need`` (the slots a level found too few) within the budget, or the room the aggregation's
    region leaves free beside the move phase's arrays if that is more; 0 when not even ``need``
    fits, when the graph has more than ``tune.fused_hub_max_edges`` stored edges, and always when
    ``tune.fused_hub_bytes`` is 0.
    """
    per_edge = float(tune.fused_hub_bytes)
    if per_edge <= 0 or not need or nnz > tune.fused_hub_max_edges:
        return 0
    _, move, aggregate, _ = _fused_regions(n, table_cap, cluster)
    free = max(0, aggregate - move - 32) // _SLOT_BYTES
    budget = max(free, int(max(per_edge * nnz, int(tune.fused_hub_min_bytes))) // _SLOT_BYTES)
    return max(free, min(2 * int(need), budget)) if need <= budget else 0


def _fused_regions(n: int, table_cap: int, cluster: int, hub_cap: int = 0) -> tuple[int, int, int, int]:
    """Bytes of the parts of the kernel's scratch, in the order it carves them (16-byte aligned
    arrays): those kept across kernels and phases (the stats header's copy first), the move
    phase's (the hub tables' ``hub_cap`` slots among them), the aggregation's (which share one
    region), and the community degrees after both."""
    part = 8 * 2 * cluster * _FUSED_PART

    def size(*sizes):
        return sum(-(-s // 16) * 16 for s in sizes)

    # the header's copy, partials, C and comSize (two each), vertex_of
    kept = size(_FUSED_HEAD_BYTES, part, part, 8 * n, 8 * n, 4 * n)
    # k_i, a_c, saved state, batch order, the hubs' tables
    move = size(8 * n, 16 * n, 16 * n, 8 * n, 8 * n, 8 * n, 4 * n, 4 * n, 8 * hub_cap, 4 * hub_cap)
    aggregate = size(8 * (n + 1), 8 * n, 4 * n, 8 * table_cap, 4 * table_cap)  # table offsets, counts, ids, tables
    return kept, move, aggregate, size(8 * n)


def _fused_work_bytes(n: int, table_cap: int, cluster: int, hub_cap: int = 0) -> int:
    """Bytes of the kernel's scratch (:func:`_fused_regions`)."""
    kept, move, aggregate, degrees = _fused_regions(n, table_cap, cluster, hub_cap)
    return kept + max(move, aggregate) + degrees


def run_fused(indptr, indices, weights, params: dict, *, slices: int, slice_min: int, bin_vertices: int,
              fixed_bits: int, tune) -> dict:
    """Louvain on one thread-block cluster, every level in one kernel launch (``louvain_fused``;
    from the first level after level 0 of at most ``tune.fused_mid_vertices`` vertices, the
    cluster's levels in a second build of it with fewer threads, and the last, small levels in a
    third launch on one block, ``louvain_fused_solo``).

    The first try gets :func:`_fused_table_first` slots of aggregation tables, on the kernel
    without hub code; a try that runs out of tables goes again with the bound of every
    partition, one that meets hubs on the kernel with them (:func:`_fused_hub_slots`) and the
    bound.

    Returns a dict: ``status`` (``"done"``, ``"handover"`` when a level's graph has a vertex of
    degree above 319 without room for its table or the levels' buffer has no row left,
    ``"no_room"``: the run did not fit even the tables' bound), ``levels`` (host int64 arrays,
    the rows of one array: the communities of the original vertices after each written level),
    ``modularity`` (per written level), ``level_timings`` (one dict per level processed, as the
    phase driver keeps, with ``blocks``: the cluster's size, or 1, and ``threads`` a block),
    ``kernel_s`` (all the kernels);
    after a handover also ``level`` (the level to go on with), ``graph`` (its ``indptr, indices,
    wfix, loop_fix`` on the device) and ``orig_to_level``.
    """
    cp = _cp()
    n = int(indptr.shape[0]) - 1
    nnz = int(indices.shape[0])
    # int32 offsets go as they are (the kernel widens them; a copy here costs more than the run's
    # level start on small graphs). (The host's work before the launch is the run's critical path
    # on small graphs: dtypes are compared with dtype objects, the device is asked once.)
    if indptr.dtype != _INT32 and indptr.dtype != _INT64:
        indptr = indptr.astype(cp.int64)
    if indices.dtype != _INT32:
        indices = indices.astype(cp.int32)
    if weights.dtype != _FLOAT64:
        weights = weights.astype(cp.float64)
    device = _device_id()
    record_cap = min(int(params["max_level"]), _FUSED_MAX_RECORDS)
    rows = _fused_level_rows(n, tune)
    ts = _device_table_array(max(n, 320), device)
    blocks = max(int(tune.fused_cluster), 8)  # the scratch has room for either cluster size
    table_cap, bound = _fused_table_first(n, nnz, tune), _fused_table_cap(n, nnz)
    hub_need = 0  # the kernel without hub code until a level meets hubs
    while True:
        hub_cap = _fused_hub_slots(n, table_cap, blocks, hub_need, nnz, tune=tune)
        out = None  # a try's memory goes back before the next takes its own
        out = _fused_try(indptr, indices, weights, params, n, nnz, ts, table_cap, hub_cap, record_cap, rows,
                         (slices, slice_min, bin_vertices, fixed_bits), device, tune=tune)
        need = int(out[1][8])  # the hub table slots a level found too few
        if out[0] == "no_room" and table_cap < bound:
            table_cap = bound
        elif out[0] == "handover" and need > hub_cap and _fused_hub_slots(n, table_cap, blocks, need, nnz, tune=tune):
            # A graph with hubs is one whose first levels leave most vertices alone, so that its
            # aggregations need nearly the tables' bound: with the first try's tables, small kron
            # graphs ran out of them only after a whole first level, a large share of their run
            # (docs/performance.md, section "Fused kernel: hubs").
            hub_need, table_cap = need, bound
        else:
            break
    status, st, recs, level_rows, level_graph_buffers = out
    written, level, n_at, nnz_at = st[1:5].tolist()
    q = recs[:, 3].view(np.float64).tolist()
    recs = recs.tolist()
    rows_written = level_rows[: written * n].reshape(written, n)
    # small rows stay in the pinned buffer, which the result then holds (tune.fused_view_bytes):
    # copying them out is a visible share of a small graph's run (docs/performance.md, section
    # "Fused kernel: level rows")
    levels = list(rows_written if level_rows.nbytes <= tune.fused_view_bytes else np.array(rows_written))
    out = {
        "status": status,
        "levels": levels,
        "modularity": [q[i] for i, r in enumerate(recs) if r[6]],
        "level_timings": [],
        "kernel_s": float(st[6]) * 1e-9,
        # the last written level's communities are the vertices of the level processed after it,
        # when there is one (the host need not count them in the row, which would add to every
        # run's time: docs/performance.md, section "Fused kernel: level rows")
        "n_communities": recs[-1][0] if status == "done" and recs and recs[-1][6] != 1 else None,
    }
    timings = out["level_timings"]
    for i, (n_l, nnz_l, sweeps, _, move_ns, aggregate_ns, aggregated, team) in enumerate(recs):
        rec = {"level": i, "n": n_l, "nnz": nnz_l, "move_s": move_ns * 1e-9, "iterations": sweeps,
               "aggregate_s": aggregate_ns * 1e-9, "blocks": team & 0xFFFFFFFF, "threads": team >> 32}
        if aggregated == 1:  # (2: the first level, written without aggregating, where nothing moved)
            rec["modularity"] = q[i]
        timings.append(rec)
    if status == "handover":
        out["level"] = level
        # copies: views would keep the whole allocation (levels, scratch) for the driver's levels
        bufs = level_graph_buffers()
        out["graph"] = (bufs[0][: n_at + 1].copy(), bufs[1][:nnz_at].copy(), bufs[2][:nnz_at].copy(),
                        bufs[3][:n_at].copy())
        out["orig_to_level"] = cp.asarray(levels[-1], dtype=cp.int32) if levels else cp.arange(n, dtype=cp.int32)
    return out


@functools.lru_cache(maxsize=64)
def _fused_allocation(n: int, nnz: int, table_cap: int, cluster: int, hub_cap: int) -> tuple:
    """``(level graph arrays, offsets, bytes in all, scratch bytes)`` of a fused try's one device
    allocation: the level graph, which each aggregation overwrites with the next, and its
    self-loops, then the kernel's scratch for a cluster of ``cluster`` blocks."""
    work_bytes = _fused_work_bytes(n, table_cap, cluster, hub_cap)
    level_graph = ((n + 1, np.int64), (nnz, np.int32), (nnz, np.int64), (max(n, 1), np.int64))
    offsets, total = _layout(level_graph + ((work_bytes, np.uint8),))
    return level_graph, offsets, total, work_bytes


@functools.cache
def _fused_params() -> tuple:
    """The fused kernels' parameters, ``(name, C type)`` in order, read from FUSED_ARGS in
    ``kernels/louvain.cu``. A launch passes them to the driver as 8-byte slots of one packed
    buffer (an integer parameter in its slot's low bytes, a ``double`` as its bits): through
    CuPy, whose launch converts each argument, the host spent much longer before the
    kernel could start (docs/performance.md, section "Fused kernel: launch on the host")."""
    import re  # noqa: PLC0415

    from .._kernels import kernel_source  # noqa: PLC0415

    body = re.search(r"#define FUSED_ARGS((?:.*\\\n)*.*)", kernel_source("louvain")).group(1)
    params = []
    for decl in body.replace("\\", " ").split(","):
        words = decl.replace("*", " * ").split()
        params.append((words[-1], " ".join(w for w in words[:-1] if w != "const")))
    return tuple(params)


#: The pointers a run sets (its arrays), in the order :func:`_fused_try` gives them.
_FUSED_POINTERS = ("indptr0", "indices0", "weights0", "indptr_l", "indices_l", "wfix_l", "loop_l", "ts", "work",
                   "level_rows", "stats")


@functools.cache
def _fused_pointer_slots() -> np.ndarray:
    names = [name for name, _ in _fused_params()]
    return np.array([names.index(k) for k in _FUSED_POINTERS], dtype=np.intp)


@functools.lru_cache(maxsize=64)
def _fused_slots(values: tuple) -> np.ndarray:
    """The packed parameters (:func:`_fused_params`) but the pointers (zero), from ``values``:
    ``(name, value)`` pairs, each encoded by its parameter's C type. Made once per shape, like
    :func:`_fused_allocation` (with both cached, the host's time from the call to the launch is
    shorter: docs/performance.md, section "Fused kernel: launch on the host"); the read-only
    result is copied into the launching
    thread's buffer (:func:`_fused_pack`)."""
    params = _fused_params()
    where = {name: (i, ctype) for i, (name, ctype) in enumerate(params)}
    slots = np.zeros(len(params), dtype=np.int64)
    doubles = slots.view(np.float64)
    for name, value in values:
        i, ctype = where[name]
        if ctype == "double":
            doubles[i] = float(value)
        else:
            slots[i] = int(value)
    slots.flags.writeable = False
    return slots.view(np.uint64)


class _LaunchBuffer(threading.local):
    """This thread's packed parameters of a launch (:func:`_fused_pack`): the slots, then their
    addresses, which the driver reads the values through."""

    def __init__(self):
        count = len(_fused_params())
        self.buf = np.zeros(2 * count, dtype=np.uint64)
        base = self.buf.__array_interface__["data"][0]
        self.buf[count:] = np.uint64(base) + np.uint64(8) * np.arange(count, dtype=np.uint64)
        self.slots = self.buf[:count]
        self.kp = base + 8 * count


_LAUNCH = _LaunchBuffer()


def _fused_pack(template: np.ndarray, pointers: tuple) -> int:
    """The address of the kernel parameters' array for a launch: the slots of ``template``
    (:func:`_fused_slots`) with the run's ``pointers`` set, in this thread's buffer. The driver
    copies the values when the launch is made, so the next launch on this thread may overwrite
    them; each thread has its own buffer. (Making the slots and their addresses as new arrays
    for each launch cost host time on every launch: docs/performance.md, section "Fused kernel:
    launch on the host".)"""
    buf = _LAUNCH
    np.copyto(buf.slots, template)
    buf.slots[_fused_pointer_slots()] = pointers
    return buf.kp


class _LaunchAttribute(ctypes.Structure):  # CUlaunchAttribute: an id, then a 64-byte union
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int), ("rest", ctypes.c_char * 60)]


class _LaunchConfig(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttribute)), ("n_attrs", ctypes.c_uint)]


_PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION


@functools.cache
def _launch_ex():
    """The driver's ``cuLaunchKernelEx`` (CUDA 12), or ``None`` where the library or the entry point
    is missing. CuPy's driver module launches without attributes."""
    try:
        fn = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(_LaunchConfig), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return fn


@functools.lru_cache(maxsize=64)
def _after_config(grid: int, threads: int, smem: int, stream: int) -> _LaunchConfig:
    """A launch configuration with programmatic stream serialization (``_launch_after``)."""
    attr = _LaunchAttribute(id=_PROGRAMMATIC_STREAM_SERIALIZATION, value=1)
    cfg = _LaunchConfig(grid=(ctypes.c_uint * 3)(grid, 1, 1), block=(ctypes.c_uint * 3)(threads, 1, 1),
                        shared=smem, stream=stream, attrs=ctypes.pointer(attr), n_attrs=1)
    cfg._attr = attr  # (kept alive with the configuration)
    return cfg


#: Devices that refused a launch with programmatic stream serialization (they get plain launches),
#: as :data:`_CLUSTER_REFUSED` keeps those that refused the cluster size.
_AFTER_REFUSED: set = set()


def _launch_after(handle: int, grid: int, threads: int, smem: int, stream: int, kp: int, device: int) -> None:
    """Launch a fused kernel that follows another on ``stream`` with programmatic stream
    serialization: its blocks may be placed on free SMs while the kernel before it runs, and
    wait in the kernel (``griddepcontrol.wait``, fused_head in ``kernels/louvain.cu``) for that one
    to end. This hides the gap between the two kernels. Where the driver lacks the entry point or
    refuses the attribute (``device``, the current one), a plain launch, which the kernel's wait
    then passes at once."""
    fn = None if device in _AFTER_REFUSED else _launch_ex()
    if fn is not None:
        if fn(_after_config(grid, threads, smem, stream), handle, kp, None) == 0:
            return
        _AFTER_REFUSED.add(device)
    _driver().launchKernel(handle, grid, 1, 1, threads, 1, 1, smem, stream, kp, 0)


def _fused_try(indptr, indices, weights, params, n, nnz, ts, table_cap, hub_cap, record_cap, rows, ints,
               device, *, tune) -> tuple:
    """One run of the fused kernels on ``device`` (the current one) with ``table_cap`` slots of
    aggregation tables, ``hub_cap`` for the hub tables (0: the kernel without hub code), ``rows``
    rows for the levels and the shape and thresholds of ``tune``: ``(status, stats header,
    records, the levels' rows (host, flat), a function giving the level graph's buffers)``."""
    driver = _driver()
    cp = _cp()
    # room for the fallback cluster size too
    level_graph, offsets, total, work_bytes = _fused_allocation(n, nnz, table_cap, max(int(tune.fused_cluster), 8),
                                                                hub_cap)
    # one allocation, passed as pointers (arrays over it cost more than a small graph's level);
    # the free memory is looked up only when it fails, for the message
    try:
        mem = cp.cuda.alloc(max(total, 1))
    except cp.cuda.memory.OutOfMemoryError:
        check_memory(n, nnz, 0, need=total, tune=tune)
        raise
    # the stats and the levels' rows in pinned host memory, which is mapped at the same address on
    # every device with unified addressing: the kernels write them, the host reads them in place
    head = _FUSED_STAT_HEAD + _FUSED_STAT_W * (record_cap + 1)
    host_mem = cp.cuda.alloc_pinned_memory(8 * (head + rows * n))
    host = np.ndarray((head + rows * n,), dtype=np.int64, buffer=host_mem)
    host[:_FUSED_STAT_HEAD] = 0  # (the host reads only the records that the header counts)
    slices, slice_min, bin_vertices, fixed_bits = ints
    values = (
        ("indptr0_bytes", indptr.dtype.itemsize), ("n0", n), ("nnz0", nnz), ("work_bytes", work_bytes),
        ("table_cap", table_cap), ("hub_cap", hub_cap), ("resolution", params["resolution"]),
        ("t_bin", params["t_bin"]), ("t_final", params["t_final"]), ("t_rel", params["t_rel"]),
        ("bin_vertices", bin_vertices),
        ("fixed_bits", fixed_bits), ("max_levels", params["max_level"]), ("max_iterations", params["max_iterations"]),
        ("slices", slices), ("slice_min", slice_min), ("record_cap", record_cap), ("row_cap", rows),
    )
    base, at = mem.ptr, host_mem.ptr
    pointers = (indptr.data.ptr, indices.data.ptr, weights.data.ptr, *(base + off for off in offsets[:4]),
                ts.data.ptr, base + offsets[4], at + 8 * head, at)
    stream = cp.cuda.get_current_stream()

    threads = int(tune.fused_threads)
    solo_edges, mid_vertices = int(tune.fused_solo_edges), int(tune.fused_mid_vertices)

    def launch(cluster):
        handles, solo_threads, solo_smem, solo_off, solo_cap = _fused_kernel(cluster, hub_cap > 0, device, tune=tune)
        solo = solo_edges if solo_cap > 0 and solo_edges > 0 else -1  # -1: none
        mid = mid_vertices if handles[1] and mid_vertices > 0 else -1  # -1: none
        kp = _fused_pack(_fused_slots(values + (("solo_off", solo_off), ("solo_cap", solo_cap),
                                                 ("solo_edges", solo), ("mid_vertices", mid))), pointers)
        driver.launchKernel(handles[0], cluster, 1, 1, threads, 1, 1, _fused_smem(threads), stream.ptr, kp, 0)
        # each of the next does nothing unless the kernel before it handed its levels over
        if mid >= 0:
            _launch_after(handles[1], cluster, solo_threads, _fused_smem(solo_threads), stream.ptr, kp, device)
        if solo >= 0:
            _launch_after(handles[2], 1, solo_threads, solo_smem, stream.ptr, kp, device)

    cluster = _fused_cluster(tune, device)
    try:
        launch(cluster)
    except Exception as exc:  # a device without non-portable clusters: the portable size
        if cluster <= 8 or "CLUSTER" not in str(exc).upper():
            raise
        _CLUSTER_REFUSED.add((device, int(tune.fused_cluster)))
        launch(8)
    stream.synchronize()
    records = int(host[5])
    st = host[: _FUSED_STAT_HEAD + _FUSED_STAT_W * records].copy()
    recs = st[_FUSED_STAT_HEAD: _FUSED_STAT_HEAD + _FUSED_STAT_W * records].reshape(records, _FUSED_STAT_W)

    def level_graph_buffers():
        return [cp.ndarray((int(count),), dtype=dtype, memptr=mem + off)
                for (count, dtype), off in zip(level_graph, offsets)]

    return _FUSED_STATUS.get(int(st[0]), "no_room"), st, recs, host[head:], level_graph_buffers

