"""CuPy launch wrappers of ``kernels/stable_marriage.cu``; GPU twins of
:mod:`mgmatch.cpu.stable_marriage`.

Every function has the signature and semantics of its CPU twin and works in place on the CuPy
state arrays of one partition. McVitie-Wilson is one launch per thread mapping: a thread (or a
warp) per man, following every man it displaces [1]_ (section 4). Gale-Shapley runs in rounds, one launch each,
the men displaced in a round forming the next round's queue; the host reads one scalar per
round, the queue's length.

References
----------
.. [1] F. Manne, M. Naim, H. Lerring, M. Halappanavar, "On stable marriages and greedy
   matchings", CSC 2016.
"""

from __future__ import annotations

import numpy as np

from .._kernels import get_kernel

__all__ = ["sm_run", "sm_inbox", "use_warps"]

BLOCK = 256
_MAX_GRID = 65535 * 16
_CTYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}


def _cp():
    import cupy  # noqa: PLC0415

    return cupy


def _grid(n: int, per_block: int) -> int:
    return max(1, min((int(n) + per_block - 1) // per_block, _MAX_GRID))


#: Every kernel of the family, compiled together once per device.
_EXPRESSIONS = ("sm_inbox",) + tuple(f"sm_propose<{t},{w},{c}>" for t in ("int", "long long")
                                     for w in ("false", "true") for c in ("false", "true"))


def _kernel(name: str):
    return get_kernel("stable_marriage", name, name_expressions=_EXPRESSIONS)


def _propose_kernel(slot_dtype, warp: bool, chain: bool):
    return _kernel(f"sm_propose<{_CTYPES[np.dtype(slot_dtype)]},{str(warp).lower()},{str(chain).lower()}>")


def use_warps(indptr, mapping: str, warp_min_length: int = 64) -> bool:
    """Whether a Gale-Shapley round maps a warp to each man: asked for, or (``auto``) when the
    lists hold ``warp_min_length`` women or more on average, where a thread per man would scan
    long runs of women it may skip while its warp's other lanes wait."""
    if mapping != "auto":
        return mapping == "warp"
    n = int(indptr.shape[0]) - 1
    return n > 0 and int(indptr[-1]) >= warp_min_length * n


def sm_run(lo, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending, work, queue, *, mapping="auto",
           warp_min_length=64):
    """Gale-Shapley (``queue``) or McVitie-Wilson over the men in ``work``, to local
    quiescence; GPU twin of :func:`mgmatch.cpu.stable_marriage.sm_run`.

    ``mapping``: ``thread`` (a thread per man), ``warp`` (a warp per man) or ``auto``. For
    McVitie-Wilson ``auto`` gives a warp to each man whose list holds ``warp_min_length`` women
    or more and a thread to each other man (two launches, the warps' first: lists of very
    different lengths); for Gale-Shapley's rounds it picks one mapping by :func:`use_warps`."""
    cp = _cp()
    n_owned = int(indptr.shape[0]) - 1
    args = (np.int64(lo), np.int64(n_owned), indptr, wrank, slot, np.int64(n_wlocal), key, ghost_key, nxt, pending)
    work = cp.ascontiguousarray(work, dtype=cp.int64)
    count = cp.zeros(1, dtype=cp.uint64)
    if not queue:
        if mapping == "auto":
            long_list = (indptr[work + 1] - indptr[work]) >= warp_min_length
            groups = ((True, work[long_list]), (False, work[~long_list]))
        else:
            groups = ((mapping == "warp", work),)
        for warp, men in groups:
            if men.size:
                _propose_kernel(slot.dtype, warp, True)((_grid(men.size, BLOCK // 32 if warp else BLOCK),), (BLOCK,),
                                                        args + (men, np.int64(men.size), men, count))
        return
    warp = use_warps(indptr, mapping, warp_min_length)
    per_block = BLOCK // 32 if warp else BLOCK
    following = cp.empty(max(n_owned, 1), dtype=cp.int64)
    current, n_current = work, int(work.size)
    round_kernel = _propose_kernel(slot.dtype, warp, False)
    while n_current:
        count.fill(0)
        round_kernel((_grid(n_current, per_block),), (BLOCK,),
                     args + (current, np.int64(n_current), following, count))
        n_current = int(count.get()[0])  # the one scalar a round reads
        current = following[:n_current].copy()


def sm_inbox(lo, hi, wlo, ghosts, key, ghost_key, in_i):
    """Apply an inbox message by message; GPU twin of
    :func:`mgmatch.cpu.stable_marriage.sm_inbox` (same returns, as CuPy arrays)."""
    cp = _cp()
    in_i = cp.ascontiguousarray(cp.asarray(in_i, dtype=cp.int64))
    k = int(in_i.shape[0])
    ghosts = cp.ascontiguousarray(cp.asarray(ghosts, dtype=cp.int64))
    work = cp.empty(max(k, 1), dtype=cp.int64)
    rejects = cp.empty((max(k, 1), 4), dtype=cp.int64)
    held_w = cp.empty(max(k, 1), dtype=cp.int64)
    held_m = cp.empty(max(k, 1), dtype=cp.int64)
    counts = cp.zeros(3, dtype=cp.int64)
    _kernel("sm_inbox")((1,), (1,), (
        np.int64(lo), np.int64(hi), np.int64(wlo), ghosts, np.int64(ghosts.size), key, ghost_key, in_i,
        np.int64(k), work, rejects, held_w, held_m, counts))
    n_work, n_rej, n_held = (int(c) for c in counts.get())
    return work[:n_work], rejects[:n_rej], held_w[:n_held], held_m[:n_held]
