"""CuPy launch wrappers of ``kernels/matching.cu``; GPU twins of :mod:`mgmatch.cpu.matching`.

Every public function has the signature and semantics of its CPU twin: it works in place on the
CuPy state arrays of one partition and returns the outbox as CuPy arrays ``(ints (k, 4) int64,
w (k,) float64)``. Each call runs its partition to local quiescence on the device; the host
reads only the scalars that decide whether another sweep is needed and the outbox size.

Suitor and b-Suitor compare ``(edge weight, proposer id)`` pairs as one key, so that one atomic
operation decides a vertex's suitor [2]_. On sm_90 and newer GPU-Suitor uses 128-bit keys ``{~u,
bits(w)}`` claimed with a 128-bit compare-and-swap: the bit pattern of a non-negative float64
orders like the weight, so nothing is sorted and ids keep 64 bits (``tune.wide_keys``). Otherwise
(and in b-Suitor) the key is the 64-bit ``rank(w) << 32 | (2**32 - 1 - u)`` claimed with
``atomicMax``; ``rank`` is exact: when every weight of the partition is a float32 value it is read
from the float32 bit pattern, otherwise it is the dense rank of the weight among the partition's
distinct weights (one sort per call). State arrays keep the CPU twins' float form between calls;
keys are built at the start of a call and read back at its end.

Boundary messages (inboxes) are applied by one-thread kernels that follow the CPU twins' loops
message by message; outboxes are filled with an atomic counter.

Tunables arrive as ``tune``, an object with the fields of
:class:`mgmatch.algorithms.matching.MatchingConfig` (the one in force when the run started,
passed down by the matching programs; its defaults are the constants of
:mod:`mgmatch.gpu.tunables`): GPU-Suitor's vertices per warp and threads per block, the key
width, b-Suitor's proposals per row scan, and handshaking's variant (``"warp"``: a warp reduces
each row; ``"scan"``: the segmented max-scan and collate kernels of the handshaking
description, one stride per launch). Both variants give the same matching.

References
----------
.. [1] F. Manne and M. Halappanavar, "New effective multithreaded matching algorithms",
   IPDPS 2014.
.. [2] M. Naim, F. Manne, M. Halappanavar, A. Tumeo, J. Langguth, "Optimizing approximate
   weighted matching on Nvidia Kepler K40", HiPC 2015 (Algorithms 1, 3 and 4).
.. [3] A. Khan et al., "Efficient approximation algorithms for weighted b-matching",
   SIAM J. Sci. Comput. 38(5), 2016.
.. [4] One-way handshaking matching with a segmented max-scan (strongestNeighborScan_gpu and
   collateSegments_gpu).
"""

from __future__ import annotations

import functools

import numpy as np

from .._kernels import compute_capability, get_kernel
from ..cpu.matching import DISPLACE, MATCHED, POINT, PROPOSE  # noqa: F401  (message kinds)
from ..errors import ResourceError

__all__ = [
    "suitor_local", "bsuitor_local", "bsuitor_pairs", "ld_local", "handshake_local",
    "strongest_neighbour_all",
]

BLOCK = 256
_MAX_GRID = 65535 * 16
_ID_LIMIT = 2**32 - 1
_KEY_MAX = np.uint64(2**64 - 1)

_KERNELS = (
    "weight_ranks", "suitor_inbox", "suitor_inbox_wide", "suitor_pack_wide", "suitor_unpack_wide", "suitor_propose", "suitor_propose_wide", "bsuitor_inbox_grouped", "bsuitor_inbox_ghosts", "bsuitor_propose", "bsuitor_withdraw",
    "bsuitor_pairs_kernel", "pointer_inbox", "ld_candidates", "ld_match", "ld_settle", "hs_notify",
    "hs_scan_init", "strongest_neighbour_scan", "collate_segments", "strongest_neighbour_warp",
    "hs_collate",
)
_CTYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long",
           np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def _cp():
    import cupy  # noqa: PLC0415

    return cupy


class _Kernels:
    """The kernels of one (index, slot, weight) type combination, compiled once per device."""

    def __init__(self, idx_dtype, slot_dtype, w_dtype, tune):
        t = ",".join(_CTYPES[np.dtype(d)] for d in (idx_dtype, slot_dtype, w_dtype))
        self._names = {k: f"{k}<{t}>" for k in _KERNELS}
        self._exprs = tuple(self._names.values())
        # compile-time values: part of the kernel cache key
        self._defines = {"MGM_VERTICES_PER_WARP": int(tune.vertices_per_warp), "MGM_MAX_B": int(tune.max_b_per_scan)}

    def __getattr__(self, name):
        return get_kernel("matching", self._names[name], defines=self._defines, name_expressions=self._exprs)


def _kernels(indices, slot, weights, tune) -> _Kernels:
    return _Kernels(indices.dtype, slot.dtype, weights.dtype, tune)


def _grid(n: int, block: int = BLOCK) -> int:
    return max(1, min((int(n) + block - 1) // block, _MAX_GRID))


def _i64(x):
    return np.int64(x)


_NULL = np.uint64(0)


def _ptr(a):
    """An array, or a null pointer for ``None``."""
    return _NULL if a is None else a


def _as_device(a, dtype):
    cp = _cp()
    return cp.ascontiguousarray(cp.asarray(a, dtype=dtype))


class _Outbox:
    """Device outbox with an atomic counter; ``cap`` is an upper bound of one call's messages."""

    def __init__(self, cap: int):
        cp = _cp()
        self.cap = int(cap)
        self.ints = cp.empty((self.cap, 4), dtype=cp.int64)
        self.w = cp.empty(self.cap, dtype=cp.float64)
        self.count = cp.zeros(1, dtype=cp.uint64)

    def args(self):
        return (self.ints, self.w, self.count, _i64(self.cap))

    def reserve(self, need: int, limit: int) -> None:
        """Room for ``need`` messages in all (the ones written so far included), never more than
        ``limit`` (a proven bound of what the call sends): a larger buffer, at least twice the
        size, with the present one copied in. The caller passes a bound it knows on the host, so
        that only a growth reads the count back, to check that no message was dropped, which a
        larger buffer would otherwise hide."""
        need = min(int(need), int(limit))
        if need <= self.cap:
            return
        self._written()
        cp = _cp()
        cap = _grown_cap(self.cap, need, limit)
        ints, w = cp.empty((cap, 4), dtype=cp.int64), cp.empty(cap, dtype=cp.float64)
        ints[: self.cap] = self.ints
        w[: self.cap] = self.w
        self.ints, self.w, self.cap = ints, w, cap

    def _written(self) -> int:
        """The messages written so far; an error if the kernels counted more than the room."""
        k = int(self.count.get()[0])
        if k > self.cap:  # the caps are proven bounds; this guards against a broken one
            raise RuntimeError(f"outbox overflow ({k} messages, room for {self.cap})")
        return k

    def result(self):
        k = self._written()
        return self.ints[:k], self.w[:k]


def _grown_cap(cap: int, need: int, limit: int) -> int:
    """The size a buffer of ``cap`` entries grows to for ``need <= limit``: at least twice
    ``cap`` (few growths in a step), never past ``limit``."""
    return int(min(max(need, 2 * cap), limit))


@functools.cache
def _slot_kernel():
    # an entry's neighbour: owned v at v - lo, a ghost after the owned ones at its rank in the
    # sorted ghost list (binary search), in one pass with no temporaries
    return _cp().ElementwiseKernel(
        "I v, int64 lo, int64 hi, raw int64 ghosts, int64 n_ghosts", "S slot",
        """
        long long x = (long long)v;
        if (x >= lo && x < hi) {
            slot = (S)(x - lo);
        } else {
            long long a = 0, b = n_ghosts;
            while (a < b) { long long m = (a + b) >> 1; if (ghosts[m] < x) a = m + 1; else b = m; }
            slot = (S)(hi - lo + a);
        }
        """, "mgmatch_neighbour_slots")


def neighbour_slots(indices, lo: int, hi: int, ghosts):
    """Slot of each CSR entry's neighbour in a partition owning ``[lo, hi)`` (owned ``v - lo``,
    ghosts after the owned ones in the order of the sorted ``ghosts``), in 32 bits where the
    slots fit: a partition's one array per stored entry besides the graph's own, so that the
    share of a graph that one GPU takes on a cluster is not bounded by this array's
    temporaries."""
    cp = _cp()
    ghosts_d = _as_device(ghosts, cp.int64)
    n_slots = hi - lo + int(ghosts_d.size)
    out = cp.empty(indices.shape[0], dtype=cp.int32 if n_slots < 2**31 else cp.int64)
    if out.size:
        _slot_kernel()(indices, cp.int64(lo), cp.int64(hi), ghosts_d, cp.int64(ghosts_d.size), out)
    return out


def _boundary_entries(slot, n_owned: int, n_ghosts: int) -> int:
    """CSR entries whose neighbour is a ghost (each boundary edge carries at most a few messages)."""
    if n_ghosts == 0:
        return 0
    return int((slot >= n_owned).sum())


def _suitor_outbox_cap(boundary: int, n_owned: int, n_ghosts: int, n_in: int) -> int:
    """A bound on the messages of one Suitor step. An owned vertex that proposes to a ghost waits
    for the answer, so it sends at most one proposal per step (at most ``min(n_owned,
    boundary)``). A displacement or rejection goes to a remote suitor: one held at the start of
    the step (a ghost is the suitor of at most one vertex: at most ``min(n_owned, n_ghosts)``)
    or one that arrived in the inbox (``n_in``)."""
    if n_ghosts == 0:
        return n_in + 64
    return min(n_owned, boundary) + min(n_owned, n_ghosts) + 2 * n_in + 64


def _inbox(in_i, in_w):
    cp = _cp()
    return _as_device(in_i, cp.int64).reshape(-1, 4), _as_device(in_w, cp.float64)


def _check_ids(n_global_hint: int):
    if n_global_hint >= _ID_LIMIT:
        raise ResourceError(
            f"the GPU Suitor packs vertex ids into 32 bits; a graph with {n_global_hint} vertices needs "
            "the CPU (device='cpu')"
        )


# --------------------------------------------------------------------------- weight ranks
class _Ranks:
    """Order-preserving 32-bit ranks of weights, exact on the partition's own edge weights.

    ``rank`` is the per-edge array (or None in float32 mode, where kernels compute it from the
    weight), ``table`` the sorted distinct weights (None in float32 mode).
    """

    def __init__(self, weights, kernels):
        cp = _cp()
        self.rank = None
        self.table = None
        if weights.size == 0 or weights.dtype == cp.float32:
            return
        as32 = weights.astype(cp.float32)
        if bool((as32.astype(cp.float64) == weights).all()):
            return  # every weight is a float32 value: ranks from the bit pattern
        del as32
        table = cp.unique(weights)
        if 2 * table.size + 3 >= 2**32:
            raise ResourceError(
                f"{table.size} distinct edge weights exceed the GPU Suitor's 32-bit weight ranks; "
                "use device='cpu' or float32 weights"
            )
        self.table = table.astype(cp.float64, copy=False)
        self.rank = cp.empty(weights.size, dtype=cp.uint32)
        kernels.weight_ranks((_grid(weights.size),), (BLOCK,), (weights, _i64(weights.size), self.table,
                                                                _i64(self.table.size), self.rank))

    def of(self, w):
        """Ranks of arbitrary float64 weights: even for own weights, odd strictly between them."""
        cp = _cp()
        w = cp.asarray(w, dtype=cp.float64)
        if self.table is None:
            f = w.astype(cp.float32)
            down = cp.where(f.astype(cp.float64) > w, cp.nextafter(f, cp.float32(-np.inf)), f)
            exact = down.astype(cp.float64) == w
            bits = down.view(cp.uint32) & cp.uint32(0x7FFFFFFF)
            return 2 * bits.astype(cp.uint64) + cp.where(exact, 2, 3).astype(cp.uint64)
        size = self.table.size
        pos = cp.searchsorted(self.table, w)
        found = (pos < size) & (self.table[cp.minimum(pos, max(size - 1, 0))] == w) if size else cp.zeros(w.shape, bool)
        return 2 * pos.astype(cp.uint64) + cp.where(found, 2, 1).astype(cp.uint64)

    def weight_of(self, r):
        """The weight of even ranks ``r`` (own weights)."""
        cp = _cp()
        idx = (r - cp.uint64(2)) // cp.uint64(2)
        if self.table is None:
            return idx.astype(cp.uint32).view(cp.float32).astype(cp.float64)
        return self.table[cp.minimum(idx, self.table.size - 1).astype(cp.int64)]

    def encode(self, w, ids):
        """Packed keys of ``(w, ids)``; key 0 where ``ids < 0`` (nobody)."""
        cp = _cp()
        ids = cp.asarray(ids)
        none = ids < 0
        r = self.of(cp.where(none, 0.0, w))
        key = (r << cp.uint64(32)) | (cp.uint64(_ID_LIMIT) - cp.where(none, 0, ids).astype(cp.uint64))
        return cp.where(none, cp.uint64(0), key)

    def decode(self, key):
        """``(ids, w)`` of packed keys of own weights (-1 and -inf for key 0)."""
        cp = _cp()
        none = key == 0
        ids = (cp.uint64(_ID_LIMIT) - (key & cp.uint64(_ID_LIMIT))).astype(cp.int64)
        w = self.weight_of(cp.where(none, cp.uint64(2), key >> cp.uint64(32)))
        return cp.where(none, -1, ids), cp.where(none, -np.inf, w)


# --------------------------------------------------------------------------------- Suitor
def suitor_local(lo, hi, indptr, indices, weights, slot, ghosts,
                 suitor, ws, target, target_w, queue, in_i, in_w, *, boundary=None, ranks=None, key=None,
                 tune):
    """Suitor on one partition until local quiescence (paper I, Algorithms 3 and 4 [2]_).

    GPU twin of :func:`mgmatch.cpu.matching.suitor_local`: same arguments, same state arrays
    (updated in place), same final matching. The inbox is applied by a thread per message with
    128-bit keys (by one thread, message by message, with 64-bit rank keys); then GPU-Suitor
    (``suitor_propose``, a warp per ``tune.vertices_per_warp`` vertices) runs every queued vertex
    and every vertex it displaces to quiescence in one launch.

    ``boundary``, the number of CSR entries whose neighbour is a ghost, sizes the outbox, and
    ``ranks`` are the 64-bit keys' weight ranks; both are made here when not given (a
    partition's program makes them once, :func:`suitor_prepare`). ``key``, with 128-bit keys,
    is the partition's key array kept between calls (:func:`suitor_keys`): the call then works
    on it alone and leaves ``suitor`` and ``ws`` as they were, to be read back once at the end
    (:func:`suitor_unpack`). Without it each call builds the keys from ``suitor`` and ``ws``
    and writes them back, two passes over every slot that a run of many short rounds would
    pay in every round.

    Returns
    -------
    ints, w : cupy.ndarray
        The outbox, ``(k, 4)`` int64 rows ``(kind, dst, src, aux)`` and ``(k,)`` float64.
    """
    cp = _cp()
    lo, hi = int(lo), int(hi)
    n_owned = hi - lo
    wide = _wide_keys(tune)
    if not wide:
        _check_ids(max(hi, int(ghosts[-1]) + 1 if len(ghosts) else 0))
    in_i, in_w = _inbox(in_i, in_w)
    n_in = int(in_i.shape[0])
    ghosts_d = _as_device(ghosts, cp.int64)
    k = _kernels(indices, slot, weights, tune)
    if boundary is None:
        boundary = _boundary_entries(slot, n_owned, ghosts_d.size)
    out = _Outbox(_suitor_outbox_cap(boundary, n_owned, ghosts_d.size, n_in))
    queue = _as_device(queue, cp.int64)
    if n_in:
        work = cp.empty(queue.size + n_in, dtype=cp.int64)
        work[: queue.size] = queue
    else:
        work = queue  # read only: no copy
    n_work = queue.size
    threads = int(tune.threads_per_block)
    per_block = (threads // 32) * int(tune.vertices_per_warp)
    if wide:  # keys first: the inbox claims them in parallel
        n_slots = suitor.size
        kept = key is not None
        if not kept:
            key = cp.empty(2 * n_slots, dtype=cp.uint64)
            k.suitor_pack_wide((_grid(n_slots),), (BLOCK,), (suitor, ws, _i64(n_slots), key))
        if n_in:
            counter = cp.array([queue.size], dtype=cp.uint64)
            k.suitor_inbox_wide((_grid(n_in),), (BLOCK,), (
                _i64(lo), _i64(hi), ghosts_d, _i64(ghosts_d.size), key, target, in_i, in_w, _i64(n_in),
                work, counter, *out.args()))
            n_work = int(counter.get()[0])
        if n_work:
            k.suitor_propose_wide((_grid(n_work, per_block),), (threads,), (
                _i64(lo), _i64(n_owned), indptr, indices, weights, slot,
                key, target, target_w, work, _i64(n_work), *out.args()))
        if not kept:
            k.suitor_unpack_wide((_grid(n_slots),), (BLOCK,), (key, _i64(n_slots), suitor, ws))
        return out.result()
    if n_in:
        counter = cp.array([queue.size], dtype=cp.uint64)
        k.suitor_inbox((1,), (1,), (_i64(lo), _i64(hi), ghosts_d, _i64(ghosts_d.size), suitor, ws, target,
                                   in_i, in_w, _i64(n_in), work, counter, *out.args()))
        n_work = int(counter.get()[0])
    if n_work == 0:
        return out.result()
    if ranks is None:
        ranks = _Ranks(weights, k)
    key = ranks.encode(ws, suitor)
    before = key.copy()
    k.suitor_propose((_grid(n_work, per_block),), (threads,), (
        _i64(lo), _i64(n_owned), indptr, indices, weights, _ptr(ranks.rank), _ptr(ranks.table), slot,
        key, target, target_w, work, _i64(n_work), *out.args()))
    changed = cp.flatnonzero(key != before)
    if changed.size:
        ids, w = ranks.decode(key[changed])
        suitor[changed] = ids
        ws[changed] = w
    return out.result()


def suitor_prepare(indices, slot, weights, n_owned: int, n_ghosts: int, tune) -> dict:
    """What every :func:`suitor_local` call on a partition shares, made once per partition: the
    boundary entry count (sizes the outbox) and, with 64-bit keys, the weight ranks (a sort of
    the partition's distinct weights unless every weight is a float32 value)."""
    out = {"boundary": _boundary_entries(slot, n_owned, n_ghosts)}
    if not _wide_keys(tune):
        out["ranks"] = _Ranks(weights, _kernels(indices, slot, weights, tune))
    return out


def suitor_keys(n_slots: int, tune):
    """A partition's 128-bit Suitor keys with no suitor anywhere (``key`` of :func:`suitor_local`),
    or ``None`` where GPU-Suitor uses 64-bit keys, which are built in each call."""
    if not _wide_keys(tune):
        return None
    cp = _cp()
    return cp.zeros(2 * int(n_slots), dtype=cp.uint64)


def suitor_unpack(key, suitor, ws, kernels_of, tune) -> None:
    """Write kept 128-bit keys back to ``suitor`` and ``ws`` (no-op for ``key=None``);
    ``kernels_of``, the partition's ``(indices, slot, weights)``, picks the kernels its steps
    compiled."""
    if key is None:
        return
    n = int(suitor.size)
    k = _kernels(*kernels_of, tune)
    k.suitor_unpack_wide((_grid(n),), (BLOCK,), (key, _i64(n), suitor, ws))


def _wide_keys(tune) -> bool:
    """Whether GPU-Suitor uses 128-bit keys on the current device: ``tune.wide_keys``, where
    the device has them (compute capability 9.0 and newer); ``None`` there means yes."""
    if tune.wide_keys is not None:
        return bool(tune.wide_keys) and compute_capability() >= 90
    return compute_capability() >= 90


# ------------------------------------------------------------------------------- b-Suitor
def bsuitor_prepare(indices, slot, weights, n_owned: int, n_ghosts: int, tune) -> dict:
    """What every :func:`bsuitor_local` call on a partition shares, made once per partition:
    the boundary entry count (sizes the outbox) and the weight ranks (a sort of the partition's
    distinct weights: made per call, it was most of a multi-round run's time)."""
    return {"boundary": _boundary_entries(slot, n_owned, n_ghosts),
            "ranks": _Ranks(weights, _kernels(indices, slot, weights, tune))}


def bsuitor_keys(b, n_ghosts: int, total: int) -> list:
    """A partition's b-Suitor keys with every heap empty, kept between :func:`bsuitor_local`
    calls (its ``keys``): ``[heap keys, owned thresholds, ghost thresholds, locks]``. A vertex
    with ``b = 0`` takes no suitor (threshold all ones); the others take any (0)."""
    cp = _cp()
    n_owned = int(b.shape[0])
    return [cp.zeros(int(total), dtype=cp.uint64),
            cp.where(b == 0, _KEY_MAX, cp.uint64(0)).astype(cp.uint64),
            cp.zeros(int(n_ghosts), dtype=cp.uint64),
            cp.zeros(max(n_owned, 1), dtype=cp.int32)]


def bsuitor_unpack(keys, hw, hs, ranks) -> None:
    """Write kept heap keys back to the CPU twin's heaps ``hw`` and ``hs`` (no-op for ``None``)."""
    if keys is None or keys[0].size == 0:
        return
    ids, w = ranks.decode(keys[0])
    hs[...] = ids
    hw[...] = _cp().where(ids < 0, 0.0, w)


def _heap_slots(vertices, hoff, b):
    """Heap positions of the owned ``vertices`` (local ids), every one of their ``b`` slots."""
    cp = _cp()
    cnt = b[vertices]
    ends = cp.cumsum(cnt)
    total = int(ends[-1]) if ends.size else 0
    pos = cp.arange(total, dtype=cp.int64)
    owner = cp.searchsorted(ends, pos, side="right")
    return hoff[vertices][owner] + pos - (ends - cnt)[owner]


def bsuitor_local(lo, hi, indptr, indices, weights, slot, ghosts, b,
                  hw, hs, hcnt, hoff, tw, ts, tid, tcnt, toff, queue, in_i, in_w, *, boundary=None, ranks=None,
                  keys=None, b_max=None, tune):
    """b-Suitor on one partition until local quiescence (Khan et al. [3]_, Algorithm 2).

    GPU twin of :func:`mgmatch.cpu.matching.bsuitor_local`. Each owned vertex keeps a min-heap
    of its ``b(v)`` best suitors in global memory, updated under a per-vertex spin lock; thread
    per active vertex. Sweeps repeat while a sweep displaced owned suitors (the count is the one
    scalar read per sweep). ``boundary`` and ``ranks`` are :func:`bsuitor_prepare`'s, made here
    when not given.

    ``keys`` (:func:`bsuitor_keys`) keeps the heaps as packed keys between calls, with the
    thresholds read from them. The call then touches only what its messages and proposals
    touch: the heaps of the vertices that receive messages go to ``hw``/``hs`` for the inbox
    and back, and the heaps stay keys otherwise, to be written back once at the end
    (:func:`bsuitor_unpack`). Without it each call builds every key and threshold from
    ``hw``/``hs``/``tw``/``ts`` and writes the heaps back, passes over the whole partition that a
    run of many short rounds would pay in every round.

    The outbox grows with the sweeps rather than being sized for the step's worst case at
    once: a sweep's active vertex sends at most one message per proposal that succeeds (a
    proposal to a ghost, or the displacement of a ghost suitor), so at most ``b(v)`` of them,
    with ``b_max`` (the partition's largest ``b``, given or read here) bounding them on the
    host. The bound over the whole step, two messages per boundary entry and per inbox
    message, stays the ceiling; sized to it, the outbox of a partition that shares half its
    entries with others would take 40 bytes per stored entry.
    """
    cp = _cp()
    lo, hi = int(lo), int(hi)
    n_owned = hi - lo
    _check_ids(max(hi, int(ghosts[-1]) + 1 if len(ghosts) else 0))
    in_i, in_w = _inbox(in_i, in_w)
    n_in = int(in_i.shape[0])
    ghosts_d = _as_device(ghosts, cp.int64)
    k = _kernels(indices, slot, weights, tune)
    if boundary is None:
        boundary = _boundary_entries(slot, n_owned, ghosts_d.size)
    if ranks is None:
        ranks = _Ranks(weights, k)
    if b_max is None:
        b_max = int(b.max()) if n_owned else 0
    ceiling = 2 * boundary + 2 * n_in + 64
    sent = 2 * n_in + 64  # a bound on the messages written so far, known on the host
    out = _Outbox(min(ceiling, sent))
    queue = _as_device(queue, cp.int64)
    work = cp.empty(queue.size + n_in, dtype=cp.int64)
    work[: queue.size] = queue
    n_work = queue.size
    if n_in:
        if keys is not None:  # the receivers' heaps as the inbox reads them
            hk, thr, gthr, _ = keys
            receivers = cp.unique(in_i[:, 1]) - lo
            at = _heap_slots(receivers, hoff, b)
            if at.size:
                ids, w = ranks.decode(hk[at])
                hs[at] = ids
                hw[at] = cp.where(ids < 0, 0.0, w)
        n_work, touched = _bsuitor_inbox(k, lo, hi, n_owned, ghosts_d, b, hw, hs, hcnt, hoff, tw, ts, tid, tcnt,
                                         toff, in_i, in_w, work, queue.size, out)
        if keys is not None:  # and back, with the thresholds they and the ghosts' messages moved
            if at.size:
                hk[at] = ranks.encode(hw[at], hs[at])
                root = hk[cp.minimum(hoff[receivers], hk.size - 1)]
                rb = b[receivers]
                thr[receivers] = cp.where(rb == 0, _KEY_MAX, cp.where(hcnt[receivers] >= rb, root, cp.uint64(0)))
            if touched is not None:
                gthr[touched] = cp.where(ts[touched] == -2, _KEY_MAX, ranks.encode(tw[touched], ts[touched]))
        active = cp.unique(work[:n_work])
    else:
        active = work[:n_work]
    if not active.size:
        return out.result()
    if keys is None:
        hk = ranks.encode(hw, hs)
        root = hk[cp.minimum(hoff, hk.size - 1)] if hk.size else cp.zeros(n_owned, dtype=cp.uint64)
        thr = cp.where(b == 0, _KEY_MAX, cp.where(hcnt >= b, root, cp.uint64(0))).astype(cp.uint64)
        gthr = cp.where(ts == -2, _KEY_MAX, ranks.encode(tw, ts)).astype(cp.uint64)
        lock = cp.zeros(max(n_owned, 1), dtype=cp.int32)
    else:
        hk, thr, gthr, lock = keys
    removed_cap = int(hk.size) + 16
    removed = cp.empty(2 * removed_cap, dtype=cp.int64)
    n_removed = cp.zeros(1, dtype=cp.uint64)
    flag = cp.zeros(n_owned, dtype=cp.int32)
    while active.size:
        if boundary:
            sent += int(active.size) * int(b_max)
            out.reserve(sent, ceiling)
        n_removed.fill(0)
        k.bsuitor_propose((_grid(active.size),), (BLOCK,), (
            _i64(lo), _i64(n_owned), indptr, indices, weights, _ptr(ranks.rank), _ptr(ranks.table), slot, b,
            hk, hcnt, hoff, thr, gthr, lock, tid, tcnt, toff, active, _i64(active.size),
            removed, n_removed, _i64(removed_cap), *out.args()))
        nr = int(n_removed.get()[0])
        if nr == 0:
            break
        if nr > removed_cap:
            raise RuntimeError(f"b-Suitor displacement list overflow ({nr} > {removed_cap})")
        k.bsuitor_withdraw((_grid(nr),), (BLOCK,), (_i64(lo), removed, _i64(nr), tid, tcnt, toff, lock, flag))
        active = _withdrawn(removed, nr, flag, lo)
    if keys is None:
        bsuitor_unpack([hk], hw, hs, ranks)
    return out.result()


def _withdrawn(removed, nr: int, flag, lo: int):
    """The owned suitors that ``bsuitor_withdraw`` flagged (their proposal was withdrawn), in
    ascending order, with their flags cleared for the next sweep. It reads the ``nr``
    displacements alone, not every owned vertex's flag: after the first round a step's sweeps
    displace a few vertices of a large partition."""
    cp = _cp()
    xs = cp.unique(removed[0 : 2 * nr : 2]) - lo
    hit = xs[flag[xs] != 0]
    flag[xs] = 0
    return hit + lo


def _segments(keys):
    """Start of each run of equal values in the sorted ``keys``, and the end."""
    cp = _cp()
    n = int(keys.shape[0])
    cuts = cp.flatnonzero(keys[1:] != keys[:-1]) + 1
    return cp.concatenate([cp.zeros(1, dtype=cp.int64), cuts.astype(cp.int64), cp.full(1, n, dtype=cp.int64)])


def _bsuitor_inbox(k, lo, hi, n_owned, ghosts_d, b, hw, hs, hcnt, hoff, tw, ts, tid, tcnt, toff, in_i, in_w,
                   work, n_queued, out):
    """Apply a round's boundary messages (bsuitor_inbox_grouped and bsuitor_inbox_ghosts: one
    thread per receiving vertex and per ghost, each over its messages in inbox order); the new
    length of ``work`` and the ghost slots whose thresholds the messages raised (``None``: no
    ghost's)."""
    cp = _cp()
    n_in = int(in_i.shape[0])
    position = cp.arange(n_in, dtype=cp.int64)
    # by receiving vertex, inbox order within one: the key (vertex, position) fits in 64 bits
    order = cp.argsort((in_i[:, 1] - lo) * n_in + position)
    seg = _segments(in_i[order, 1])
    counter = cp.array([n_queued], dtype=cp.uint64)
    removed = cp.empty(2 * n_in, dtype=cp.int64)
    n_removed = cp.zeros(1, dtype=cp.uint64)
    n_seg = int(seg.shape[0]) - 1
    k.bsuitor_inbox_grouped((_grid(n_seg),), (BLOCK,), (
        _i64(lo), _i64(hi), b, hw, hs, hcnt, hoff, tid, tcnt, toff, in_i, in_w, order, seg, _i64(n_seg),
        work, counter, removed, n_removed, *out.args()))
    displace = cp.flatnonzero(in_i[:, 0] == DISPLACE)
    touched = None
    if displace.size:
        g = cp.searchsorted(ghosts_d, in_i[displace, 2]).astype(cp.int64)
        by_ghost = cp.argsort(g * n_in + displace)
        g_sorted = g[by_ghost]
        gseg = _segments(g_sorted)
        k.bsuitor_inbox_ghosts((_grid(int(gseg.shape[0]) - 1),), (BLOCK,), (
            tw, ts, in_i, in_w, displace[by_ghost], gseg, g_sorted, _i64(int(gseg.shape[0]) - 1)))
        touched = g_sorted[gseg[:-1]]
    nr = int(n_removed.get()[0])
    if nr:
        lock = cp.zeros(max(n_owned, 1), dtype=cp.int32)
        flag = cp.zeros(n_owned, dtype=cp.int32)
        k.bsuitor_withdraw((_grid(nr),), (BLOCK,), (_i64(lo), removed, _i64(nr), tid, tcnt, toff, lock, flag))
        again = _withdrawn(removed, nr, flag, lo)
    n_work = int(counter.get()[0])
    if nr and again.size:
        work[n_work : n_work + again.size] = again
        n_work += int(again.size)
    return n_work, touched


def bsuitor_pairs(lo, hoff, hcnt, hs, hw, tid, tcnt, *, tune):
    """Edges of the b-matching seen from the owned vertices (GPU twin of
    :func:`mgmatch.cpu.matching.bsuitor_pairs`); thread per owned vertex, arbitrary order."""
    cp = _cp()
    n = int(hcnt.shape[0])
    total = int(hcnt.sum()) if n else 0
    us = cp.empty(total, dtype=cp.int64)
    vs = cp.empty(total, dtype=cp.int64)
    ws = cp.empty(total, dtype=cp.float64)
    if total == 0:
        return us, vs, ws
    count = cp.zeros(1, dtype=cp.uint64)
    k = _Kernels(np.int64, np.int64, np.float64, tune)
    k.bsuitor_pairs_kernel((_grid(n),), (BLOCK,), (_i64(lo), _i64(n), hoff, hcnt, hs, hw, tid, tcnt, us, vs, ws, count))
    m = int(count.get()[0])
    return us[:m], vs[:m], ws[:m]


# ------------------------------------------------------------ locally dominant / handshake
def _pointer_inbox(k, lo, hi, ghosts_d, matched, cand, mate, mate_w, in_i, in_w, out):
    cp = _cp()
    n_in = int(in_i.shape[0])
    fresh = cp.empty(n_in + 1, dtype=cp.int64)
    relook = cp.empty(n_in + 1, dtype=cp.int64)
    counts = cp.zeros(2, dtype=cp.uint64)
    if n_in:
        k.pointer_inbox((1,), (1,), (_i64(lo), _i64(hi), ghosts_d, _i64(ghosts_d.size), matched, cand, mate, mate_w,
                                     in_i, in_w, _i64(n_in), fresh, counts[0:1], relook, counts[1:2], *out.args()))
    nf, nr = (int(x) for x in counts.get())
    return fresh[:nf], relook[:nr]


def ld_local(lo, hi, indptr, indices, weights, slot, ghosts, matched, cand, mate, mate_w,
             first, in_i, in_w, *, tune):
    """Locally-dominant matching on one partition until local quiescence (GPU-LD: paper I,
    Algorithm 1 with ProcessVertex [2]_; thread per vertex, queues of newly matched vertices).

    GPU twin of :func:`mgmatch.cpu.matching.ld_local`. Each sweep: the queued vertices pick
    their heaviest free neighbour (``ld_candidates``), mutual pairs match (``ld_match``), and the
    free neighbours that pointed at a newly matched vertex form the next queue (``ld_settle``).
    """
    cp = _cp()
    lo, hi = int(lo), int(hi)
    n_owned = hi - lo
    in_i, in_w = _inbox(in_i, in_w)
    n_in = int(in_i.shape[0])
    ghosts_d = _as_device(ghosts, cp.int64)
    k = _kernels(indices, slot, weights, tune)
    out = _Outbox(2 * _boundary_entries(slot, n_owned, ghosts_d.size) + 2 * n_in + 64)
    fresh, queue = _pointer_inbox(k, lo, hi, ghosts_d, matched, cand, mate, mate_w, in_i, in_w, out)
    if first and n_owned:
        deg = indptr[1:] - indptr[:-1]
        queue = cp.concatenate([queue, cp.flatnonzero(deg > 0).astype(cp.int64) + lo])
    cand_w = cp.zeros(max(n_owned, 1), dtype=cp.float64)
    stamp = cp.zeros(max(n_owned, 1), dtype=cp.int32)
    next_queue = cp.empty(max(n_owned, 1), dtype=cp.int64)
    counter = cp.zeros(1, dtype=cp.uint64)
    sweep = 0
    while True:
        if queue.size:
            sweep += 1
            k.ld_candidates((_grid(queue.size),), (BLOCK,), (_i64(lo), indptr, indices, weights, slot, matched, cand,
                                                             cand_w, stamp, np.int32(sweep), queue, _i64(queue.size)))
            new_fresh = cp.empty(2 * queue.size, dtype=cp.int64)
            counter.fill(0)
            k.ld_match((_grid(queue.size),), (BLOCK,), (
                _i64(lo), _i64(hi), ghosts_d, _i64(ghosts_d.size), matched, cand, cand_w, mate, mate_w, stamp,
                np.int32(sweep), queue, _i64(queue.size), new_fresh, counter, *out.args()))
            fresh = cp.concatenate([fresh, new_fresh[: int(counter.get()[0])]])
        if fresh.size == 0:
            break
        counter.fill(0)
        k.ld_settle((_grid(fresh.size),), (BLOCK,), (_i64(lo), _i64(n_owned), indptr, indices, slot, matched, cand,
                                                     fresh, _i64(fresh.size), next_queue, counter, *out.args()))
        queue = next_queue[: int(counter.get()[0])].copy()
        fresh = fresh[:0]
    return out.result()


def _strongest_free(k, n_rows, indptr, indices, weights, slot, matched, cand_out, variant):
    """Strongest free neighbour of every free row, written to ``cand_out`` (-1: none)."""
    cp = _cp()
    if n_rows == 0:
        return
    if variant == "warp":
        warps_per_block = BLOCK // 32
        k.strongest_neighbour_warp((_grid(n_rows, warps_per_block),), (BLOCK,), (
            _i64(n_rows), indptr, indices, weights, slot, _ptr(matched), cand_out))
        return
    if variant != "scan":
        raise ValueError(f"handshake variant must be 'warp' or 'scan', not {variant!r}")
    nnz = int(indices.shape[0])
    free = None if matched is None else ~matched[:n_rows]
    if free is None:
        cand_out[:] = -1
    else:
        cand_out[free] = -1
    if nnz == 0:
        return
    src = cp.empty(nnz, dtype=indices.dtype)
    dst = [cp.empty(nnz, dtype=indices.dtype), cp.empty(nnz, dtype=indices.dtype)]
    w = [cp.empty(nnz, dtype=weights.dtype), cp.empty(nnz, dtype=weights.dtype)]
    k.hs_scan_init((_grid(n_rows),), (BLOCK,), (_i64(n_rows), indptr, indices, weights, slot, _ptr(matched),
                                                src, dst[0], w[0]))
    made = cp.zeros(1, dtype=cp.int32)
    distance, cur = 1, 0
    while True:
        made.fill(0)
        k.strongest_neighbour_scan((_grid(nnz),), (BLOCK,), (src, dst[cur], dst[1 - cur], w[cur], w[1 - cur], made,
                                                              _i64(distance), _i64(nnz)))
        cur = 1 - cur
        if not int(made.get()[0]) or distance >= nnz:
            break
        distance *= 2
    k.collate_segments((_grid(nnz),), (BLOCK,), (src, dst[cur], cand_out, _ptr(matched), _i64(nnz)))


def handshake_local(lo, hi, indptr, indices, weights, slot, ghosts, matched, cand, mate, mate_w,
                    sent, in_i, in_w, *, tune):
    """One-way handshaking on one partition until local quiescence [4]_.

    GPU twin of :func:`mgmatch.cpu.matching.handshake_local`. Each pass finds every free
    vertex's strongest free neighbour (``tune.handshake_variant``) and matches mutual pointers
    (``hs_collate``); the count of new matches is the one scalar read per pass.

    Returns
    -------
    ints, w : cupy.ndarray
        The outbox.
    passes : int
        Passes made.
    """
    cp = _cp()
    lo, hi = int(lo), int(hi)
    n_owned = hi - lo
    in_i, in_w = _inbox(in_i, in_w)
    n_in = int(in_i.shape[0])
    ghosts_d = _as_device(ghosts, cp.int64)
    k = _kernels(indices, slot, weights, tune)
    out = _Outbox(3 * _boundary_entries(slot, n_owned, ghosts_d.size) + 2 * n_in + 64)
    fresh, _ = _pointer_inbox(k, lo, hi, ghosts_d, matched, cand, mate, mate_w, in_i, in_w, out)
    if fresh.size:
        k.hs_notify((_grid(fresh.size),), (BLOCK,), (_i64(lo), _i64(n_owned), indptr, indices, slot, matched, cand,
                                                     fresh, _i64(fresh.size), *out.args()))
    passes = 0
    made = cp.zeros(1, dtype=cp.uint64)
    variant = tune.handshake_variant
    while True:
        passes += 1
        if n_owned == 0:
            break
        row_free = ~matched[:n_owned]
        _strongest_free(k, n_owned, indptr, indices, weights, slot, matched, cand[:n_owned], variant)
        made.fill(0)
        k.hs_collate((_grid(n_owned),), (BLOCK,), (
            _i64(lo), _i64(hi), indptr, indices, weights, slot, ghosts_d, _i64(ghosts_d.size), matched, cand,
            row_free, mate, mate_w, sent, made, *out.args()))
        if int(made.get()[0]) == 0:
            break
        if ghosts_d.size:
            newly = cp.flatnonzero(matched[:n_owned] & row_free).astype(cp.int64) + lo
            k.hs_notify((_grid(newly.size),), (BLOCK,), (_i64(lo), _i64(n_owned), indptr, indices, slot, matched,
                                                         cand, newly, _i64(newly.size), *out.args()))
    ints, w = out.result()
    return ints, w, passes


def strongest_neighbour_all(graph, variant: str | None = None, *, tune):
    """Every vertex's strongest neighbour (heaviest edge, ties to the smaller id; -1 when
    isolated) on the GPU: one handshaking scan over the whole graph [4]_.

    Parameters
    ----------
    graph : Graph
        A graph whose arrays are CuPy arrays.
    variant : {"warp", "scan"}, optional
        Defaults to ``tune.handshake_variant``.
    tune : optional
        The matching tunables (see the module notes).

    Returns
    -------
    cupy.ndarray
        ``int64`` array of ``graph.n`` entries.
    """
    cp = _cp()
    n = int(graph.n_rows)
    out = cp.full(n, -1, dtype=cp.int64)
    if n == 0:
        return out
    k = _kernels(graph.indices, graph.indices, graph.weights, tune)
    _strongest_free(k, n, graph.indptr, graph.indices, graph.weights, graph.indices, None, out,
                    variant or tune.handshake_variant)
    return out
