"""GPU twins of :mod:`mgmatch.cpu.louvain`: CuPy launches of the kernels in ``kernels/louvain.cu``.

Same functions, signatures and results as the CPU twins; the arrays are CuPy arrays. The
thread mapping follows section 4.1 of Naim et al. (IPDPS 2017): blocks of 128 threads; for
computeMove groups of 4, 8, 16 and 32 threads of one warp per vertex for degrees up to 32, a
warp for [33, 84], a block with the hash table in shared memory for [85, 319] and a block
with it in global memory above; for mergeCommunity a warp for community degrees up to 127, a
block with a shared table for [128, 479] and a block with a global table above. A sweep
launches its kernels back to back; nothing is read back until its modularity.

Like the CPU twin, and unlike the paper's Algorithm 1 (which applies the moves once per
bucket), a sweep applies the moves after each of the ``s = slices[b]`` interleaved batches
``bucket[j::s]`` of bucket ``b`` (``MOVE_SLICES`` of :mod:`mgmatch.algorithms.louvain`, 1 for
buckets below its ``MOVE_SLICE_MIN``): on R-MAT graphs after aggregation most vertices share
one bucket, and moving them all from one snapshot overshoots. Each batch is one computeMove
launch (the bucket's kernel) and one apply_moves launch; the batches are contiguous copies
made once per level.
"""

from __future__ import annotations

import functools

import numpy as np

from ..cpu.louvain import move_batches, table_sizes
from ..errors import ResourceError

__all__ = ["check_memory", "make_move_workspace", "move_sweep", "internal_weight", "aggregate"]

BLOCK = 128
#: Bytes of global memory the global-table blocks may take (per phase).
GLOBAL_TABLE_BUDGET = 512 * 2**20
_SLOT_BYTES = 12  # int32 key + int64 weight

# (threads per vertex, table slots) of the sub-warp and warp buckets [1,4] .. [33,84]
_GROUP_CONFIG = ((4, 7), (8, 13), (16, 29), (32, 53), (32, 127))
_NAMES = tuple(f"compute_move_group<{g}, {t}>" for g, t in _GROUP_CONFIG) + (
    "compute_move_block<false>",
    "compute_move_block<true>",
    "merge_community_block<false>",
    "merge_community_block<true>",
)


def _cp():
    import cupy  # noqa: PLC0415

    return cupy


def _kernel(name: str):
    from .._kernels import get_kernel  # noqa: PLC0415

    return get_kernel("louvain", name, defines={"LOUVAIN_BLOCK": BLOCK}, name_expressions=_NAMES)


def _sm_count() -> int:
    cp = _cp()
    return _sm_count_of(int(cp.cuda.runtime.getDevice()))


@functools.cache
def _sm_count_of(device_id: int) -> int:
    cp = _cp()
    return int(cp.cuda.Device(device_id).attributes["MultiProcessorCount"])


def _grid(work: int, per_block: int) -> int:
    return max(1, min(-(-work // per_block), _sm_count() * 32))


def free_bytes() -> int:
    """Device memory free for new arrays: the driver's free memory plus the pool's cached blocks."""
    cp = _cp()
    free, _total = cp.cuda.runtime.memGetInfo()
    pool = cp.get_default_memory_pool()
    return int(free + pool.free_bytes())


def estimate_bytes(n: int, nnz: int, max_degree: int) -> int:
    """Peak device bytes of a Louvain run besides the input graph.

    Level graph (indices, fixed-point weights: 12 bytes per entry), the aggregation's
    temporary and new edge lists (24 per entry), per-vertex state (about 80 bytes) and the
    global hash tables of the largest buckets.
    """
    table = _SLOT_BYTES * (3 * max(max_degree, 1) // 2 + 64)
    return int(36 * nnz + 80 * (n + 1) + min(GLOBAL_TABLE_BUDGET, 4 * table))


def check_memory(n: int, nnz: int, max_degree: int) -> int:
    """Raise :class:`~mgmatch.errors.ResourceError` unless a run of this size fits the device."""
    need = estimate_bytes(n, nnz, max_degree)
    have = free_bytes()
    if need > have:
        raise ResourceError(
            f"louvain on a graph with {n} vertices and {nnz} stored edges needs about "
            f"{need / 2**30:.2f} GiB of GPU memory; {have / 2**30:.2f} GiB is free"
        )
    return need


def make_move_workspace(n: int, max_degree: int, buckets, *, slices) -> dict:
    """Table sizes, the newComm array, the global hash tables of the > 319 bucket and the batches.

    The batches of every bucket (:func:`~mgmatch.cpu.louvain.move_batches`, the same as the
    CPU twin's) are copied to contiguous arrays once per level; their lengths are kept on the
    host so a sweep launches without reading anything back.
    """
    cp = _cp()
    sizes = table_sizes(max_degree)
    ws = {"table_sizes": cp.asarray(sizes), "new_comm": cp.empty(max(n, 1), dtype=cp.int32)}
    big = buckets[-1]
    nb = int(big.shape[0])
    if nb:
        stride = int(sizes[max_degree])  # the bucket is sorted by degree, largest first
        blocks = max(1, min(nb, _sm_count() * 4, GLOBAL_TABLE_BUDGET // (stride * _SLOT_BYTES)))
        ws["g_keys"] = cp.empty(blocks * stride, dtype=cp.int32)
        ws["g_vals"] = cp.empty(blocks * stride, dtype=cp.int64)
        ws["g_stride"] = stride
        ws["g_blocks"] = blocks
    ws["batches"] = [move_batches(verts, int(k)) for verts, k in zip(buckets, slices, strict=True)]
    ws["batch_sizes"] = [[int(v.shape[0]) for v in bs] for bs in ws["batches"]]
    ws["slices"] = [int(k) for k in slices]
    return ws


def move_sweep(indptr, indices, wfix, kfix, comm, csize, afix, buckets, gamma_over_2m, workspace) -> None:
    """One iteration of Algorithm 1 on the GPU: per batch of a bucket, computeMove then apply (no host sync).

    ``buckets`` are the buckets ``workspace`` was made for. Batch ``j`` of bucket ``b`` is
    ``bucket[j::slices[b]]``; its moves are decided from the state at the start of the batch and
    applied (``C``, community sizes, ``a_c``) before the next batch, in the same order as the
    CPU twin, so both take the same decisions. The paper applies them once per bucket; see the
    module notes for why we do not.
    """
    cp = _cp()
    ts, new_comm = workspace["table_sizes"], workspace["new_comm"]
    gm = np.float64(gamma_over_2m)
    apply = _kernel("apply_moves")
    dummy_i = dummy_l = None
    for b, batches in enumerate(workspace["batches"]):
        for verts, nv in zip(batches, workspace["batch_sizes"][b]):
            nv32 = np.int32(nv)
            common = (indptr, indices, wfix, kfix, comm, csize, afix, verts, nv32, ts, gm, new_comm)
            if b < len(_GROUP_CONFIG):
                g, t = _GROUP_CONFIG[b]
                _kernel(f"compute_move_group<{g}, {t}>")((_grid(nv, BLOCK // g),), (BLOCK,), common)
            elif b == len(_GROUP_CONFIG):
                if dummy_i is None:
                    dummy_i = cp.empty(1, dtype=cp.int32)
                    dummy_l = cp.empty(1, dtype=cp.int64)
                _kernel("compute_move_block<false>")(
                    (_grid(nv, 1),), (BLOCK,), common + (dummy_i, dummy_l, np.int64(0))
                )
            else:
                # the batch keeps the bucket's order (largest degree first); every block owns
                # g_stride slots of the global table, enough for the bucket's largest degree
                _kernel("compute_move_block<true>")(
                    (min(nv, workspace["g_blocks"]),), (BLOCK,),
                    common + (workspace["g_keys"], workspace["g_vals"], np.int64(workspace["g_stride"])),
                )
            apply((_grid(nv, BLOCK),), (BLOCK,), (verts, nv32, new_comm, comm, csize, afix, kfix))


def internal_weight(indptr, indices, wfix, loop_fix, comm) -> int:
    """Sum over vertices of the weight to their own community, self-loops included (fixed point)."""
    cp = _cp()
    n = int(indptr.shape[0]) - 1
    if n <= 0:
        return 0
    out = cp.empty(n, dtype=cp.int64)
    _kernel("internal_weight")(
        (_grid(n, BLOCK // 32),), (BLOCK,), (indptr, indices, wfix, loop_fix, comm, np.int32(n), out)
    )
    return int(out.sum())


def aggregate(indptr, indices, wfix, loop_fix, comm):
    """Aggregation phase, Algorithm 3, on the GPU; returns what the CPU twin returns."""
    cp = _cp()
    n = int(indptr.shape[0]) - 1
    com_size = cp.zeros(n, dtype=cp.int64)
    com_degree = cp.zeros(n, dtype=cp.int64)
    grid_n = _grid(n, BLOCK)
    _kernel("community_sizes")((grid_n,), (BLOCK,), (indptr, comm, np.int32(n), com_size, com_degree))
    nonempty = com_size > 0
    new_id = cp.where(nonempty, cp.cumsum(nonempty, dtype=cp.int64) - 1, -1).astype(cp.int32)  # prefixSum(newID)
    communities = cp.flatnonzero(nonempty).astype(cp.int32)
    n_new = int(communities.shape[0])
    edge_pos = cp.zeros(n + 1, dtype=cp.int64)
    cp.cumsum(com_degree, out=edge_pos[1:])  # prefixSum(edgePos)
    vertex_start = cp.zeros(n + 1, dtype=cp.int64)
    cp.cumsum(com_size, out=vertex_start[1:])  # prefixSum(vertexStart)
    cursor = vertex_start[:-1].copy()
    members = cp.empty(max(n, 1), dtype=cp.int32)
    _kernel("order_by_community")((grid_n,), (BLOCK,), (comm, np.int32(n), cursor, members))
    del cursor
    total = int(edge_pos[-1])
    tmp_idx = cp.empty(max(total, 1), dtype=cp.int32)
    tmp_w = cp.empty(max(total, 1), dtype=cp.int64)
    counts = cp.zeros(n_new, dtype=cp.int64)
    new_loop = cp.zeros(n_new, dtype=cp.int64)
    deg = com_degree[communities]
    # a community has at most n_new - 1 distinct neighbours, so its table never needs more
    cap = max(n_new, 1)
    sizes_all = cp.asarray(table_sizes(min(int(deg.max()) if n_new else 0, cap)))
    masks = (deg <= 127, (deg > 127) & (deg <= 479), deg > 479)  # buckets [1,127], [128,479], > 479
    for b, mask in enumerate(masks):
        comms = communities[mask]
        nb = int(comms.shape[0])
        if nb == 0:
            continue
        sizes = sizes_all[cp.minimum(deg[mask], sizes_all.shape[0] - 1)]
        args = (comms, np.int32(nb), indptr, indices, wfix, loop_fix, comm, new_id, members,
                vertex_start, edge_pos, sizes, tmp_idx, tmp_w, counts, new_loop)
        if b == 0:
            _kernel("merge_community_warp")((_grid(nb, BLOCK // 32),), (BLOCK,), args)
        elif b == 1:
            dummy_i = cp.empty(1, dtype=cp.int32)
            dummy_l = cp.empty(1, dtype=cp.int64)
            _kernel("merge_community_block<false>")(
                (_grid(nb, 1),), (BLOCK,), args + (dummy_i, dummy_l, np.int64(0))
            )
        else:
            stride = int(sizes.max())
            blocks = max(1, min(nb, _sm_count() * 4, GLOBAL_TABLE_BUDGET // (stride * _SLOT_BYTES)))
            g_keys = cp.empty(blocks * stride, dtype=cp.int32)
            g_vals = cp.empty(blocks * stride, dtype=cp.int64)
            _kernel("merge_community_block<true>")((blocks,), (BLOCK,), args + (g_keys, g_vals, np.int64(stride)))
            del g_keys, g_vals
    new_indptr = cp.zeros(n_new + 1, dtype=cp.int64)
    cp.cumsum(counts, out=new_indptr[1:])
    nnz_new = int(new_indptr[-1])
    new_indices = cp.empty(nnz_new, dtype=cp.int32)
    new_wfix = cp.empty(nnz_new, dtype=cp.int64)
    if n_new:
        _kernel("compact_edges")(
            (_grid(n_new, BLOCK // 32),), (BLOCK,),
            (communities, np.int32(n_new), new_id, edge_pos, new_indptr, tmp_idx, tmp_w, new_indices, new_wfix),
        )
    return new_indptr, new_indices, new_wfix, new_loop, new_id

