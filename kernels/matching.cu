// Half-approximate weighted matching and b-matching: Suitor, b-Suitor, locally-dominant (LD) and
// one-way handshaking, as partition steps (the GPU twins of mgmatch/cpu/matching.py).
//
// References
//   [HS]  One-way handshaking matching with a segmented max-scan (strongestNeighborScan_gpu,
//         collateSegments_gpu; Sections 2.2 to 2.4).
//   [P1]  M. Naim, F. Manne, M. Halappanavar, A. Tumeo, J. Langguth, "Optimizing approximate
//         weighted matching on Nvidia Kepler K40", HiPC 2015: Algorithm 1 (LD) with ProcessVertex
//         (Algorithm 2), Algorithm 3 (Suitor), Algorithm 4 (GPU-Suitor).
//   [KH]  A. Khan, A. Pothen, M. M. A. Patwary, N. R. Satish, N. Sundaram, F. Manne,
//         M. Halappanavar, P. Dubey, "Efficient approximation algorithms for weighted b-matching",
//         SIAM J. Sci. Comput. 38(5), 2016 (b-Suitor).
//
// Template parameters: I is the index type of indptr/indices (int or long long), S that of the
// slot array (int or long long), W the weight type (float or double); instantiated through
// name_expressions, e.g. "suitor_propose<int,int,double>".
//
// Vertex state lives in slot arrays: slots 0..n_owned-1 are the owned vertices lo..hi-1, slots
// n_owned.. the ghosts in sorted order. Messages are rows (kind, dst, src, aux) of int64 and a
// float64 weight, exactly as in the CPU twins.
//
// Packed keys. Suitor and b-Suitor compare (edge weight, proposer id) pairs with one 64-bit
// integer so that a single atomicMax decides who is a vertex's suitor:
//     key(u -> v) = rank(w(u, v)) << 32 | (0xFFFFFFFF - u),      key 0 = "no suitor".
// rank() is an order-preserving map of weights to 32-bit integers, exact on the partition's own
// edge weights (even ranks) and strictly between them for any other weight (odd ranks). Seen
// from v, a larger key is a heavier edge or, on a tie, a smaller proposer id: the shared total
// order. rank() is either read from a per-edge array (the dense rank of the weight among the
// partition's distinct weights, computed once with a sort) or, when every weight is a float32
// value, computed from the float32 bit pattern (2 * bits + 2) with no preprocessing at all.

#ifndef MGM_VERTICES_PER_WARP
#define MGM_VERTICES_PER_WARP 8  // [P1] Sec. 5.3: vertices per warp of GPU-Suitor (best on Kepler; flat on H200)
#endif
#ifndef MGM_MAX_B
#define MGM_MAX_B 16  // b-Suitor: proposals chosen per row scan (a vertex with more rescans)
#endif

#define MGM_PROPOSE 0
#define MGM_DISPLACE 1
#define MGM_POINT 2
#define MGM_MATCHED 3
#define MGM_FULL_MASK 0xffffffffu

typedef unsigned long long mgm_u64;

__device__ __forceinline__ long long mgm_tid() {
    return (long long)blockIdx.x * (long long)blockDim.x + (long long)threadIdx.x;
}

__device__ __forceinline__ long long mgm_nthreads() {
    return (long long)gridDim.x * (long long)blockDim.x;
}

// ----------------------------------------------------------------------------- shared helpers
// Rank of CSR entry e: from the precomputed dense ranks, else from the float32 bit pattern
// (non-negative weights; the sign bit is cleared so that -0.0 ranks as 0.0).
template <typename W>
__device__ __forceinline__ unsigned int mgm_rank(const unsigned int* __restrict__ rank,
                                                 const W* __restrict__ weights, long long e) {
    if (rank != nullptr) return rank[e];
    float f = (float)weights[e];
    return 2u * (__float_as_uint(f) & 0x7fffffffu) + 2u;
}

// The weight of an even rank (an own edge weight), for messages that carry a threshold.
__device__ __forceinline__ double mgm_unrank(const double* __restrict__ table, unsigned int r) {
    unsigned int i = (r - 2u) >> 1;
    if (table != nullptr) return table[i];
    return (double)__uint_as_float(i);
}

__device__ __forceinline__ mgm_u64 mgm_pack(unsigned int r, long long id) {
    return ((mgm_u64)r << 32) | (mgm_u64)(0xffffffffu - (unsigned int)id);
}

__device__ __forceinline__ long long mgm_key_id(mgm_u64 key) {
    return (long long)(0xffffffffu - (unsigned int)(key & 0xffffffffull));
}

__device__ __forceinline__ mgm_u64 mgm_volatile_load(const mgm_u64* p) {
    return *(const volatile mgm_u64*)p;
}

// Slot of global vertex v: owned v - lo, else n_owned + its position among the sorted ghosts.
__device__ __forceinline__ long long mgm_slot_of(long long v, long long lo, long long hi,
                                                 const long long* __restrict__ ghosts, long long n_ghosts) {
    if (v >= lo && v < hi) return v - lo;
    long long a = 0, b = n_ghosts;
    while (a < b) {
        long long m = (a + b) >> 1;
        if (ghosts[m] < v) a = m + 1; else b = m;
    }
    return hi - lo + a;
}

// Append one message to the outbox (the host checks *count <= cap afterwards).
__device__ __forceinline__ void mgm_push(long long* ob_i, double* ob_w, unsigned long long* count,
                                         long long cap, long long kind, long long dst, long long src,
                                         double w, long long aux) {
    unsigned long long k = atomicAdd(count, 1ull);
    if ((long long)k < cap) {
        ob_i[4 * k + 0] = kind;
        ob_i[4 * k + 1] = dst;
        ob_i[4 * k + 2] = src;
        ob_i[4 * k + 3] = aux;
        ob_w[k] = w;
    }
}

// Edge (a1, b1) of weight w1 ranks strictly above (a2, b2) of weight w2: the shared total order.
__device__ __forceinline__ bool mgm_edge_beats(double w1, long long a1, long long b1, double w2,
                                               long long a2, long long b2) {
    if (w1 != w2) return w1 > w2;
    long long lo1 = a1 < b1 ? a1 : b1, hi1 = a1 < b1 ? b1 : a1;
    long long lo2 = a2 < b2 ? a2 : b2, hi2 = a2 < b2 ? b2 : a2;
    if (lo1 != lo2) return lo1 < lo2;
    return hi1 < hi2;
}

__device__ __forceinline__ bool mgm_beats_threshold(double w, long long u, long long v, double tw, long long ts) {
    if (ts < 0) return true;
    return mgm_edge_beats(w, u, v, tw, ts, v);
}

__device__ __forceinline__ void mgm_lock(int* lock) {
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    __threadfence();
}

__device__ __forceinline__ void mgm_unlock(int* lock) {
    __threadfence();
    atomicExch(lock, 0);
}

// Dense weight ranks: thread per CSR entry (grid-stride, coalesced); rank = 2 * (position of the
// weight among the sorted distinct weights `table`) + 2, found by binary search.
template <typename I, typename S, typename W>
__global__ void weight_ranks(const W* __restrict__ weights, long long nnz, const double* __restrict__ table,
                             long long n_table, unsigned int* rank) {
    for (long long e = mgm_tid(); e < nnz; e += mgm_nthreads()) {
        const double w = (double)weights[e];
        long long a = 0, b = n_table;
        while (a < b) {
            const long long m = (a + b) >> 1;
            if (table[m] < w) a = m + 1; else b = m;
        }
        rank[e] = 2u * (unsigned int)a + 2u;
    }
}

// =============================================================================== Suitor
// Suitor inbox, one thread (a sequential pass over the messages, the CPU twin's inbox loop):
// PROPOSE to an owned vertex replaces its suitor when the edge beats it (the displaced local
// suitor joins the work list, a displaced remote one gets DISPLACE), else the proposer is told
// the threshold; DISPLACE refreshes a ghost's cached threshold and re-queues its proposer.
template <typename I, typename S, typename W>
__global__ void suitor_inbox(long long lo, long long hi, const long long* __restrict__ ghosts, long long n_ghosts,
                             long long* suitor, double* ws, long long* target,
                             const long long* __restrict__ in_i, const double* __restrict__ in_w, long long n_in,
                             long long* work, unsigned long long* n_work,
                             long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    if (mgm_tid() != 0) return;
    for (long long k = 0; k < n_in; ++k) {
        long long kind = in_i[4 * k], dst = in_i[4 * k + 1], src = in_i[4 * k + 2], aux = in_i[4 * k + 3];
        double w = in_w[k];
        long long d = dst - lo;
        if (kind == MGM_PROPOSE) {
            if (mgm_beats_threshold(w, src, dst, ws[d], suitor[d])) {
                long long x = suitor[d];
                suitor[d] = src;
                ws[d] = w;
                if (x >= 0) {
                    if (x >= lo && x < hi) {
                        target[x - lo] = -1;
                        work[(*n_work)++] = x;
                    } else {
                        mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_DISPLACE, x, dst, w, src);
                    }
                }
            } else {
                mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_DISPLACE, src, dst, ws[d], suitor[d]);
            }
        } else {
            long long g = mgm_slot_of(src, lo, hi, ghosts, n_ghosts);
            if (suitor[g] < 0 || mgm_edge_beats(w, aux, src, ws[g], suitor[g], src)) {
                ws[g] = w;
                suitor[g] = aux;
            }
            if (target[d] == src) {
                target[d] = -1;
                work[(*n_work)++] = dst;
            }
        }
    }
}

// Key policies of GPU-Suitor. Both order proposals the same way (heavier edge, on a tie the
// smaller proposer id) and differ only in how a key is stored and claimed:
//   mgm_keys_narrow: the 64-bit key (rank(w) << 32 | ~u), claimed with one atomicMax; needs the
//                    weight ranks (a sort per call unless every weight is a float32 value).
//   mgm_keys_wide:   a 128-bit key {lo = ~u, hi = bit pattern of w}, claimed with a 128-bit
//                    atomicCAS loop (sm_90 and newer); the float64 bit pattern of a non-negative
//                    weight orders like the weight, so no ranks and no sort are needed, and ids
//                    keep 64 bits.
struct mgm_keys_narrow {
    typedef mgm_u64 key;
    const unsigned int* rank;
    mgm_u64* keys;

    template <typename W>
    __device__ __forceinline__ key make(const W* __restrict__ weights, long long e, long long id) const {
        return mgm_pack(mgm_rank(rank, weights, e), id);
    }
    __device__ __forceinline__ key with_id(key k, long long id) const {
        return mgm_pack((unsigned int)(k >> 32), id);
    }
    __device__ __forceinline__ static key none() { return 0; }
    __device__ __forceinline__ static bool greater(key a, key b) { return a > b; }
    __device__ __forceinline__ static key shfl_xor(key k, int off) { return __shfl_xor_sync(MGM_FULL_MASK, k, off); }
    __device__ __forceinline__ static long long id_of(key k) { return mgm_key_id(k); }
    __device__ __forceinline__ static bool is_none(key k) { return k == 0; }
    // k beats the current key of slot s (a stale read only ever errs towards "yes")
    __device__ __forceinline__ bool beats(key k, long long s) const { return k > mgm_volatile_load(keys + s); }
    // make k the key of slot s if it beats the current one; *old is the key it met
    __device__ __forceinline__ bool claim(long long s, key k, key* old) const {
        *old = atomicMax(keys + s, k);
        return *old < k;
    }
};

struct mgm_key128 {
    mgm_u64 lo, hi;  // lo = ~id, hi = weight bits; little-endian: lo at the lower address
};

__device__ __forceinline__ mgm_u64 mgm_ld_acquire(const mgm_u64* p) {
    mgm_u64 v;
    asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ mgm_u64 mgm_ld_relaxed(const mgm_u64* p) {
    mgm_u64 v;
    asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// atom.cas.b128 (PTX ISA 8.3, sm_90): one atomic compare-and-swap of 16 aligned bytes.
__device__ __forceinline__ mgm_key128 mgm_cas128(mgm_u64* p, mgm_key128 expect, mgm_key128 val) {
    mgm_key128 old;
    asm volatile(
        "{\n\t.reg .b128 c, v, d;\n\t"
        "mov.b128 c, {%2, %3};\n\t"
        "mov.b128 v, {%4, %5};\n\t"
        "atom.acq_rel.gpu.cas.b128 d, [%6], c, v;\n\t"
        "mov.b128 {%0, %1}, d;\n\t}"
        : "=l"(old.lo), "=l"(old.hi)
        : "l"(expect.lo), "l"(expect.hi), "l"(val.lo), "l"(val.hi), "l"(p)
        : "memory");
    return old;
}
#endif

struct mgm_keys_wide {
    typedef mgm_key128 key;
    mgm_u64* keys;  // two words per slot

    __device__ __forceinline__ static mgm_u64 bits(double w) {
        return (mgm_u64)__double_as_longlong(w + 0.0);  // + 0.0 turns -0.0 into 0.0
    }
    template <typename W>
    __device__ __forceinline__ key make(const W* __restrict__ weights, long long e, long long id) const {
        key k;
        k.lo = ~(mgm_u64)id;
        k.hi = bits((double)weights[e]);
        return k;
    }
    __device__ __forceinline__ key with_id(key k, long long id) const {
        k.lo = ~(mgm_u64)id;
        return k;
    }
    __device__ __forceinline__ static key none() {
        key k;
        k.lo = 0;
        k.hi = 0;
        return k;
    }
    __device__ __forceinline__ static bool greater(key a, key b) { return a.hi != b.hi ? a.hi > b.hi : a.lo > b.lo; }
    __device__ __forceinline__ static key shfl_xor(key k, int off) {
        k.lo = __shfl_xor_sync(MGM_FULL_MASK, k.lo, off);
        k.hi = __shfl_xor_sync(MGM_FULL_MASK, k.hi, off);
        return k;
    }
    __device__ __forceinline__ static long long id_of(key k) { return (long long)(~k.lo); }
    __device__ __forceinline__ static bool is_none(key k) { return k.lo == 0 && k.hi == 0; }
    // Keys only grow. Reading the weight word first and, on an equal weight, the id word after
    // it (acquire orders the two reads) gives a value no larger than the key at the second
    // read, so "does not beat" is always final; "beats" may be stale and is settled by claim().
    __device__ __forceinline__ bool beats(key k, long long s) const {
        const mgm_u64* p = keys + 2 * s;
        const mgm_u64 hi = mgm_volatile_load(p + 1);
        if (k.hi != hi) return k.hi > hi;
        key cur;
        cur.hi = mgm_ld_acquire(p + 1);
        cur.lo = mgm_ld_relaxed(p);
        return greater(k, cur);
    }
    __device__ __forceinline__ bool claim(long long s, key k, key* old) const {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
        mgm_u64* p = keys + 2 * s;
        key expect = none();
        while (true) {
            const key seen = mgm_cas128(p, expect, k);
            if (seen.lo == expect.lo && seen.hi == expect.hi) {
                *old = seen;
                return true;
            }
            if (!greater(k, seen)) {
                *old = seen;
                return false;
            }
            expect = seen;
        }
#else
        __trap();  // the host never selects wide keys below sm_90
        return false;
#endif
    }
};

// GPU-Suitor, [P1] Algorithm 4 (NoSync variant); thread mapping: one warp per chunk of
// MGM_VERTICES_PER_WARP vertices of the work list (grid-stride over chunks).
//   Line 5-7: the warp takes its vertices one after another; its 32 lanes read the vertex's row
//             together (coalesced) and keep their best eligible neighbour, then a butterfly
//             reduction (__shfl_xor_sync) gives the warp's best candidate. Eligible: the key of
//             (u -> v) beats v's current key. Choice: heavier edge, ties to smaller v.
//   Line 8:   lane j then makes vertex j the suitor of its candidate with one atomic claim on
//             the candidate's key (the paper's lock-protected test "heaviest > ws[partner]").
//   Line 9:   a lane whose claim lost (a better suitor came first) keeps its vertex; a lane
//             that displaced an owned vertex takes the displaced vertex; the warp repeats until
//             every lane is idle, with no host round trip. Displacing a remote suitor sends
//             DISPLACE; proposing to a ghost updates its cached key and sends PROPOSE.
// target[] is written before the claim (and fenced), so a displaced vertex re-processed by
// another warp always overwrites it later.
template <typename I, typename S, typename W, typename K>
__device__ void suitor_propose_body(const K keys, long long lo, long long n_owned, const I* __restrict__ indptr,
                                    const I* __restrict__ indices, const W* __restrict__ weights,
                                    const S* __restrict__ slot, long long* target, double* target_w,
                                    const long long* __restrict__ work, long long n_work,
                                    long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    typedef typename K::key key;
    const int lane = threadIdx.x & 31;
    const long long warp = mgm_tid() >> 5;
    const long long n_warps = mgm_nthreads() >> 5;
    for (long long chunk = warp * MGM_VERTICES_PER_WARP; chunk < n_work; chunk += n_warps * MGM_VERTICES_PER_WARP) {
        long long mine = -1;
        if (lane < MGM_VERTICES_PER_WARP && chunk + lane < n_work) mine = work[chunk + lane];
        while (true) {
            unsigned int active = __ballot_sync(MGM_FULL_MASK, mine >= 0);
            if (active == 0) break;
            key my_best = K::none();
            long long my_best_e = -1;
            unsigned int todo = active;
            while (todo) {
                const int j = __ffs(todo) - 1;
                todo &= todo - 1;
                const long long u = __shfl_sync(MGM_FULL_MASK, mine, j);
                const long long i = u - lo;
                const long long a = (long long)indptr[i], b = (long long)indptr[i + 1];
                key best = K::none();
                long long best_e = -1;
                for (long long e = a + lane; e < b; e += 32) {
                    const key k = keys.make(weights, e, u);
                    if (keys.beats(k, (long long)slot[e])) {
                        const key c = keys.with_id(k, (long long)indices[e]);
                        if (K::greater(c, best)) {
                            best = c;
                            best_e = e;
                        }
                    }
                }
                for (int off = 16; off > 0; off >>= 1) {
                    const key ob = K::shfl_xor(best, off);
                    const long long oe = __shfl_xor_sync(MGM_FULL_MASK, best_e, off);
                    if (K::greater(ob, best)) {
                        best = ob;
                        best_e = oe;
                    }
                }
                if (lane == j) {
                    my_best = best;
                    my_best_e = best_e;
                }
            }
            long long next = -1;
            if (mine >= 0) {
                const long long i = mine - lo;
                if (my_best_e < 0) {
                    target[i] = -1;
                } else {
                    const long long e = my_best_e;
                    const long long v = (long long)indices[e];
                    const long long s = (long long)slot[e];
                    const key k = keys.with_id(my_best, mine);
                    const double w = (double)weights[e];
                    target[i] = v;
                    target_w[i] = w;
                    __threadfence();
                    key old;
                    const bool won = keys.claim(s, k, &old);
                    __threadfence();
                    if (!won) {
                        next = mine;  // lost: look again
                    } else if (s >= n_owned) {
                        mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_PROPOSE, v, mine, w, -1);
                    } else if (!K::is_none(old)) {
                        const long long x = K::id_of(old);
                        if (x >= lo && x < lo + n_owned) {
                            next = x;
                        } else {
                            mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_DISPLACE, x, v, w, mine);
                        }
                    }
                }
            }
            mine = next;
        }
    }
}

template <typename I, typename S, typename W>
__global__ void suitor_propose(long long lo, long long n_owned, const I* __restrict__ indptr,
                               const I* __restrict__ indices, const W* __restrict__ weights,
                               const unsigned int* __restrict__ rank, const double* __restrict__ table,
                               const S* __restrict__ slot, mgm_u64* key, long long* target, double* target_w,
                               const long long* __restrict__ work, long long n_work,
                               long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    mgm_keys_narrow keys;
    keys.rank = rank;
    keys.keys = key;
    suitor_propose_body<I, S, W>(keys, lo, n_owned, indptr, indices, weights, slot, target, target_w, work, n_work,
                                 ob_i, ob_w, ob_count, ob_cap);
}

// 128-bit keys from the CPU twin's state (suitor id, its weight) and back, thread per slot; a
// slot without a suitor has key 0 (the weight -inf). Keys are built in place of nothing else
// and decoded over the state arrays, so a call needs no copy of them.
template <typename I, typename S, typename W>
__global__ void suitor_pack_wide(const long long* __restrict__ suitor, const double* __restrict__ ws, long long n,
                                 mgm_u64* key) {
    for (long long i = mgm_tid(); i < n; i += mgm_nthreads()) {
        const long long x = suitor[i];
        key[2 * i] = x >= 0 ? ~(mgm_u64)x : 0ull;
        key[2 * i + 1] = x >= 0 ? mgm_keys_wide::bits(ws[i]) : 0ull;
    }
}

template <typename I, typename S, typename W>
__global__ void suitor_unpack_wide(const mgm_u64* __restrict__ key, long long n, long long* suitor, double* ws) {
    for (long long i = mgm_tid(); i < n; i += mgm_nthreads()) {
        const mgm_u64 lo = key[2 * i], hi = key[2 * i + 1];
        const bool none = lo == 0 && hi == 0;
        suitor[i] = none ? -1 : (long long)(~lo);
        ws[i] = none ? -1.0 / 0.0 : __longlong_as_double((long long)hi);
    }
}

// Suitor inbox with 128-bit keys, thread per message (grid-stride). Each message is applied with
// the same atomic claim the proposals use, so the messages of a round are handled in parallel:
// PROPOSE claims the owned vertex's key; the claimer that overwrites a suitor is the only one to
// see it, and re-queues it (owned) or sends it DISPLACE (remote); a proposal that loses is told
// the key that beat it. DISPLACE raises a ghost's cached key (keys only grow) and re-queues its
// proposer if the proposer still targets that ghost (one compare-and-swap on target, so it is
// queued once). Suitor's result does not depend on the order in which proposals meet ([P1],
// Sec. 3), so this gives the matching of the sequential inbox (suitor_inbox).
template <typename I, typename S, typename W>
__global__ void suitor_inbox_wide(long long lo, long long hi, const long long* __restrict__ ghosts,
                                  long long n_ghosts, mgm_u64* key, long long* target,
                                  const long long* __restrict__ in_i, const double* __restrict__ in_w, long long n_in,
                                  long long* work, unsigned long long* n_work,
                                  long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    mgm_keys_wide keys;
    keys.keys = key;
    for (long long k = mgm_tid(); k < n_in; k += mgm_nthreads()) {
        const long long kind = in_i[4 * k], dst = in_i[4 * k + 1], src = in_i[4 * k + 2], aux = in_i[4 * k + 3];
        const double w = in_w[k];
        const long long d = dst - lo;
        mgm_key128 mine, old;
        mine.hi = mgm_keys_wide::bits(w);
        if (kind == MGM_PROPOSE) {
            mine.lo = ~(mgm_u64)src;
            if (keys.claim(d, mine, &old)) {
                if (!mgm_keys_wide::is_none(old)) {
                    const long long x = mgm_keys_wide::id_of(old);
                    if (x >= lo && x < hi) {
                        target[x - lo] = -1;
                        work[atomicAdd(n_work, 1ull)] = x;
                    } else {
                        mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_DISPLACE, x, dst, w, src);
                    }
                }
            } else {
                mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_DISPLACE, src, dst, __longlong_as_double((long long)old.hi),
                         mgm_keys_wide::id_of(old));
            }
        } else {
            mine.lo = ~(mgm_u64)aux;
            keys.claim(mgm_slot_of(src, lo, hi, ghosts, n_ghosts), mine, &old);
            if (atomicCAS((unsigned long long*)(target + d), (unsigned long long)src, (unsigned long long)-1) ==
                (unsigned long long)src) {
                work[atomicAdd(n_work, 1ull)] = dst;
            }
        }
    }
}

// suitor_propose with 128-bit keys (two words per slot, see mgm_keys_wide); sm_90 and newer.
template <typename I, typename S, typename W>
__global__ void suitor_propose_wide(long long lo, long long n_owned, const I* __restrict__ indptr,
                                    const I* __restrict__ indices, const W* __restrict__ weights,
                                    const S* __restrict__ slot, mgm_u64* key, long long* target, double* target_w,
                                    const long long* __restrict__ work, long long n_work,
                                    long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    mgm_keys_wide keys;
    keys.keys = key;
    suitor_propose_body<I, S, W>(keys, lo, n_owned, indptr, indices, weights, slot, target, target_w, work, n_work,
                                 ob_i, ob_w, ob_count, ob_cap);
}

// ============================================================================= b-Suitor
// Heap helpers of the inbox (float domain, the CPU twin's heap order: weaker suitor at the root).
__device__ __forceinline__ bool mgm_heap_less(const double* hw, const long long* hs, long long a, long long b, long long v) {
    return mgm_edge_beats(hw[b], hs[b], v, hw[a], hs[a], v);
}

__device__ void mgm_heap_swap(double* hw, long long* hs, long long a, long long b) {
    double tw = hw[a];
    hw[a] = hw[b];
    hw[b] = tw;
    long long ts = hs[a];
    hs[a] = hs[b];
    hs[b] = ts;
}

__device__ long long mgm_heap_offer(double* hw, long long* hs, long long* hcnt, const long long* hoff,
                                    const long long* b, long long i, long long u, double w, long long v) {
    long long base = hoff[i], cap = b[i];
    if (hcnt[i] < cap) {
        long long pos = hcnt[i];
        hw[base + pos] = w;
        hs[base + pos] = u;
        hcnt[i] += 1;
        while (pos > 0) {
            long long parent = (pos - 1) >> 1;
            if (!mgm_heap_less(hw, hs, base + pos, base + parent, v)) break;
            mgm_heap_swap(hw, hs, base + pos, base + parent);
            pos = parent;
        }
        return -1;
    }
    long long x = hs[base];
    hw[base] = w;
    hs[base] = u;
    long long pos = 0;
    while (true) {
        long long left = 2 * pos + 1;
        if (left >= cap) break;
        long long c = left;
        if (left + 1 < cap && mgm_heap_less(hw, hs, base + left + 1, base + left, v)) c = left + 1;
        if (!mgm_heap_less(hw, hs, base + c, base + pos, v)) break;
        mgm_heap_swap(hw, hs, base + c, base + pos);
        pos = c;
    }
    return x;
}

__device__ __forceinline__ void mgm_threshold(const double* hw, const long long* hs, const long long* hcnt,
                                              const long long* hoff, const long long* b, long long i,
                                              double* tw, long long* ts) {
    if (hcnt[i] < b[i]) {
        *tw = -1.0 / 0.0;
        *ts = -1;
    } else if (b[i] == 0) {
        *tw = 1.0 / 0.0;
        *ts = -2;
    } else {
        *tw = hw[hoff[i]];
        *ts = hs[hoff[i]];
    }
}

__device__ bool mgm_remove_target(long long* tid, long long* tcnt, const long long* toff, long long i, long long v) {
    long long base = toff[i];
    for (long long k = 0; k < tcnt[i]; ++k) {
        if (tid[base + k] == v) {
            tcnt[i] -= 1;
            tid[base + k] = tid[base + tcnt[i]];
            return true;
        }
    }
    return false;
}

// b-Suitor inbox, thread per receiving owned vertex ([KH] Algorithm 2 on boundary messages): the
// host sorts the messages by receiving vertex, keeping inbox order within each vertex (order,
// seg: one segment per vertex), so each thread applies its vertex's messages in turn, exactly as
// the CPU twin's sequential inbox loop does. PROPOSE offers the remote proposer to the vertex's heap; a
// displaced owned suitor x is recorded as (x, v) for bsuitor_withdraw, since x's target list is
// another thread's; DISPLACE withdraws the proposal it names (its ghost threshold is raised by
// bsuitor_inbox_ghosts). b-Suitor's result does not depend on the order in which proposals to
// different vertices meet, so this gives the b-matching of the sequential inbox.
template <typename I, typename S, typename W>
__global__ void bsuitor_inbox_grouped(long long lo, long long hi, const long long* b, double* hw, long long* hs,
                                      long long* hcnt, const long long* hoff, long long* tid, long long* tcnt,
                                      const long long* toff, const long long* __restrict__ in_i,
                                      const double* __restrict__ in_w, const long long* __restrict__ order,
                                      const long long* __restrict__ seg, long long n_seg,
                                      long long* work, unsigned long long* n_work,
                                      long long* removed, unsigned long long* n_removed,
                                      long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    for (long long s = mgm_tid(); s < n_seg; s += mgm_nthreads()) {
        for (long long j = seg[s]; j < seg[s + 1]; ++j) {
            const long long k = order[j];
            const long long kind = in_i[4 * k], dst = in_i[4 * k + 1], src = in_i[4 * k + 2];
            const double w = in_w[k];
            const long long d = dst - lo;
            if (kind == MGM_PROPOSE) {
                double thw;
                long long ths;
                mgm_threshold(hw, hs, hcnt, hoff, b, d, &thw, &ths);
                if (ths != -2 && mgm_beats_threshold(w, src, dst, thw, ths)) {
                    long long x = mgm_heap_offer(hw, hs, hcnt, hoff, b, d, src, w, dst);
                    if (x >= 0) {
                        double nthw;
                        long long nths;
                        mgm_threshold(hw, hs, hcnt, hoff, b, d, &nthw, &nths);
                        if (x >= lo && x < hi) {
                            const unsigned long long r = atomicAdd(n_removed, 1ull);
                            removed[2 * r] = x;
                            removed[2 * r + 1] = dst;
                        } else {
                            mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_DISPLACE, x, dst, nthw, nths);
                        }
                    }
                } else {
                    mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_DISPLACE, src, dst, thw, ths);
                }
            } else if (mgm_remove_target(tid, tcnt, toff, d, src)) {
                work[atomicAdd(n_work, 1ull)] = dst;
            }
        }
    }
}

// The ghost half of a DISPLACE: raise the ghost's cached threshold, thread per ghost over its
// DISPLACE messages in inbox order (order, seg as above, grouped by ghost slot g).
template <typename I, typename S, typename W>
__global__ void bsuitor_inbox_ghosts(double* tw, long long* ts, const long long* __restrict__ in_i,
                                     const double* __restrict__ in_w, const long long* __restrict__ order,
                                     const long long* __restrict__ seg, const long long* __restrict__ slot_of,
                                     long long n_seg) {
    for (long long s = mgm_tid(); s < n_seg; s += mgm_nthreads()) {
        for (long long j = seg[s]; j < seg[s + 1]; ++j) {
            const long long k = order[j];
            const long long g = slot_of[j];
            const long long src = in_i[4 * k + 2], aux = in_i[4 * k + 3];
            const double w = in_w[k];
            if (aux == -2 || (ts[g] != -2 && (ts[g] < 0 || (aux >= 0 && mgm_edge_beats(w, aux, src, tw[g], ts[g], src))))) {
                tw[g] = w;
                ts[g] = aux;
            }
        }
    }
}

// Heap of packed keys (min at the root) in global memory, touched only under the vertex's lock.
__device__ void mgm_kheap_offer(volatile mgm_u64* hk, long long base, long long cnt, long long cap, mgm_u64 k,
                                mgm_u64* displaced) {
    *displaced = 0;
    if (cnt < cap) {
        long long pos = cnt;
        hk[base + pos] = k;
        while (pos > 0) {
            long long parent = (pos - 1) >> 1;
            mgm_u64 pk = hk[base + parent];
            if (pk <= k) break;
            hk[base + pos] = pk;
            hk[base + parent] = k;
            pos = parent;
        }
        return;
    }
    *displaced = hk[base];
    long long pos = 0;
    hk[base] = k;
    while (true) {
        long long left = 2 * pos + 1;
        if (left >= cap) break;
        long long c = left;
        mgm_u64 ck = hk[base + left];
        if (left + 1 < cap) {
            mgm_u64 rk = hk[base + left + 1];
            if (rk < ck) {
                c = left + 1;
                ck = rk;
            }
        }
        if (ck >= k) break;
        hk[base + pos] = ck;
        hk[base + c] = k;
        pos = c;
    }
}

// b-Suitor proposals ([KH] Algorithm 2, lines "while u has free proposals"); thread per active
// vertex (grid-stride over the active list), per-vertex spin locks on the suitor heaps.
// An active vertex u with r = b(u) - |targets(u)| free proposals scans its row once, keeping the
// min(r, MGM_MAX_B) best eligible neighbours (key(u -> v) beats v's threshold thr[v], the key of
// its weakest kept suitor or 0 while it has room; v not proposed to already), then offers itself
// to each under v's lock, re-checking the threshold there. It rescans until r = 0 or nothing is
// eligible. A displaced owned suitor x is recorded as (x, v) for bsuitor_withdraw; a displaced
// remote suitor gets DISPLACE with v's new threshold; a ghost target gets PROPOSE (ghost
// thresholds gthr[] are the cached lower bounds, read only here).
template <typename I, typename S, typename W>
__global__ void bsuitor_propose(long long lo, long long n_owned, const I* __restrict__ indptr,
                                const I* __restrict__ indices, const W* __restrict__ weights,
                                const unsigned int* __restrict__ rank, const double* __restrict__ table,
                                const S* __restrict__ slot, const long long* __restrict__ b,
                                mgm_u64* hk, long long* hcnt, const long long* __restrict__ hoff,
                                mgm_u64* thr, const mgm_u64* __restrict__ gthr, int* lock,
                                long long* tid, long long* tcnt, const long long* __restrict__ toff,
                                const long long* __restrict__ active, long long n_active,
                                long long* removed, unsigned long long* n_removed, long long removed_cap,
                                long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    for (long long q = mgm_tid(); q < n_active; q += mgm_nthreads()) {
        const long long u = active[q];
        const long long i = u - lo;
        const long long tb = toff[i];
        while (true) {
            long long r = b[i] - tcnt[i];
            if (r <= 0) break;
            if (r > MGM_MAX_B) r = MGM_MAX_B;
            mgm_u64 buf_c[MGM_MAX_B];
            long long buf_e[MGM_MAX_B];
            int nb = 0;
            for (long long e = (long long)indptr[i]; e < (long long)indptr[i + 1]; ++e) {
                const unsigned int rk = mgm_rank(rank, weights, e);
                const long long v = (long long)indices[e];
                const mgm_u64 c = mgm_pack(rk, v);
                if (nb == r && c < buf_c[nb - 1]) continue;
                const long long s = (long long)slot[e];
                const mgm_u64 th = s < n_owned ? mgm_volatile_load(thr + s) : gthr[s - n_owned];
                if (mgm_pack(rk, u) <= th) continue;
                bool already = false;
                for (long long t = 0; t < tcnt[i]; ++t) {
                    if (tid[tb + t] == v) {
                        already = true;
                        break;
                    }
                }
                if (already) continue;
                int pos = nb < r ? nb : (int)r - 1;
                while (pos > 0 && c > buf_c[pos - 1]) {
                    if (pos < r) {
                        buf_c[pos] = buf_c[pos - 1];
                        buf_e[pos] = buf_e[pos - 1];
                    }
                    --pos;
                }
                buf_c[pos] = c;
                buf_e[pos] = e;
                if (nb < r) ++nb;
            }
            if (nb == 0) break;
            for (int c = 0; c < nb; ++c) {
                const long long e = buf_e[c];
                const long long v = (long long)indices[e];
                const long long s = (long long)slot[e];
                const unsigned int rk = (unsigned int)(buf_c[c] >> 32);
                const mgm_u64 k = mgm_pack(rk, u);
                const double w = (double)weights[e];
                if (s >= n_owned) {
                    tid[tb + tcnt[i]] = v;
                    tcnt[i] += 1;
                    mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_PROPOSE, v, u, w, -1);
                    continue;
                }
                mgm_lock(lock + s);
                volatile mgm_u64* vthr = thr + s;
                volatile long long* vcnt = hcnt + s;
                bool ok = k > *vthr;
                mgm_u64 displaced = 0;
                mgm_u64 new_thr = 0;
                if (ok) {
                    const long long cnt = *vcnt;
                    const long long cap = b[s];
                    mgm_kheap_offer((volatile mgm_u64*)hk, hoff[s], cnt, cap, k, &displaced);
                    if (cnt < cap) *vcnt = cnt + 1;
                    new_thr = (cnt + 1 >= cap) ? ((volatile mgm_u64*)hk)[hoff[s]] : 0;
                    *vthr = new_thr;
                }
                mgm_unlock(lock + s);
                if (!ok) continue;
                tid[tb + tcnt[i]] = v;
                tcnt[i] += 1;
                if (displaced != 0) {
                    const long long x = mgm_key_id(displaced);
                    if (x >= lo && x < lo + n_owned) {
                        unsigned long long p = atomicAdd(n_removed, 1ull);
                        if ((long long)p < removed_cap) {
                            removed[2 * p] = x;
                            removed[2 * p + 1] = v;
                        }
                    } else {
                        mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_DISPLACE, x, v,
                                 mgm_unrank(table, (unsigned int)(new_thr >> 32)), mgm_key_id(new_thr));
                    }
                }
            }
        }
    }
}

// b-Suitor withdrawals: thread per (x, v) displacement; under x's lock, v leaves x's target list
// and x becomes active again (flag), so that it proposes anew in the next sweep.
template <typename I, typename S, typename W>
__global__ void bsuitor_withdraw(long long lo, const long long* __restrict__ removed, long long n_removed,
                                 long long* tid, long long* tcnt, const long long* __restrict__ toff,
                                 int* lock, int* flag) {
    for (long long q = mgm_tid(); q < n_removed; q += mgm_nthreads()) {
        const long long x = removed[2 * q] - lo, v = removed[2 * q + 1];
        mgm_lock(lock + x);
        volatile long long* vt = tid;
        volatile long long* vc = tcnt;
        const long long base = toff[x];
        const long long n = vc[x];
        for (long long k = 0; k < n; ++k) {
            if (vt[base + k] == v) {
                vt[base + k] = vt[base + n - 1];
                vc[x] = n - 1;
                flag[x] = 1;
                break;
            }
        }
        mgm_unlock(lock + x);
    }
}

// Matched edges of a b-matching: thread per owned vertex x; (x, y) is matched when y is among
// x's suitors and x proposes to y. Output order is arbitrary (the caller sorts).
template <typename I, typename S, typename W>
__global__ void bsuitor_pairs_kernel(long long lo, long long n, const long long* __restrict__ hoff,
                                     const long long* __restrict__ hcnt, const long long* __restrict__ hs,
                                     const double* __restrict__ hw, const long long* __restrict__ tid,
                                     const long long* __restrict__ tcnt, long long* us, long long* vs, double* ws,
                                     unsigned long long* count) {
    for (long long i = mgm_tid(); i < n; i += mgm_nthreads()) {
        const long long a = hoff[i];
        for (long long p = 0; p < hcnt[i]; ++p) {
            const long long y = hs[a + p];
            for (long long t = 0; t < tcnt[i]; ++t) {
                if (tid[a + t] == y) {
                    unsigned long long k = atomicAdd(count, 1ull);
                    us[k] = lo + i;
                    vs[k] = y;
                    ws[k] = hw[a + p];
                    break;
                }
            }
        }
    }
}

// ======================================================== locally dominant and handshaking
// Pointer inbox (POINT / MATCHED), one thread, the CPU twin's _apply_pointer_inbox: a POINT
// records the remote vertex's candidate and matches a mutual pair across the boundary (owned
// endpoint -> fresh), or answers MATCHED when the receiver is already taken; a MATCHED marks the
// ghost taken and sends the receiver that pointed at it back to look again (relook).
template <typename I, typename S, typename W>
__global__ void pointer_inbox(long long lo, long long hi, const long long* __restrict__ ghosts, long long n_ghosts,
                              bool* matched, long long* cand, long long* mate, double* mate_w,
                              const long long* __restrict__ in_i, const double* __restrict__ in_w, long long n_in,
                              long long* fresh, unsigned long long* n_fresh, long long* relook,
                              unsigned long long* n_relook,
                              long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    if (mgm_tid() != 0) return;
    for (long long k = 0; k < n_in; ++k) {
        long long kind = in_i[4 * k], dst = in_i[4 * k + 1], src = in_i[4 * k + 2];
        long long d = dst - lo;
        long long g = mgm_slot_of(src, lo, hi, ghosts, n_ghosts);
        if (kind == MGM_POINT) {
            cand[g] = dst;
            if (matched[d]) {
                if (mate[d] != src) mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_MATCHED, src, dst, 0.0, -1);
            } else if (cand[d] == src) {
                matched[d] = true;
                matched[g] = true;
                mate[d] = src;
                mate_w[d] = in_w[k];
                fresh[(*n_fresh)++] = dst;
            }
        } else {
            matched[g] = true;
            if (!matched[d] && cand[d] == src) {
                cand[d] = -2;
                relook[(*n_relook)++] = dst;
            }
        }
    }
}

// Heaviest free neighbour of row i (ties to the smaller id); one thread reads the whole row.
template <typename I, typename S, typename W>
__device__ __forceinline__ void mgm_best_free(long long i, const I* indptr, const I* indices, const W* weights,
                                              const S* slot, const bool* matched, long long* best_v, double* best_w) {
    long long bv = -1;
    double bw = -1.0 / 0.0;
    for (long long e = (long long)indptr[i]; e < (long long)indptr[i + 1]; ++e) {
        if (matched[(long long)slot[e]]) continue;
        const long long v = (long long)indices[e];
        const double w = (double)weights[e];
        if (bv < 0 || w > bw || (w == bw && v < bv)) {
            bv = v;
            bw = w;
        }
    }
    *best_v = bv;
    *best_w = bw;
}

// GPU-LD ([P1] Algorithm 1, ProcessVertex lines 2-8): thread per vertex of the relook queue;
// each free vertex points at its heaviest free neighbour. stamp[] marks this sweep's queue.
template <typename I, typename S, typename W>
__global__ void ld_candidates(long long lo, const I* __restrict__ indptr, const I* __restrict__ indices,
                              const W* __restrict__ weights, const S* __restrict__ slot, const bool* matched,
                              long long* cand, double* cand_w, int* stamp, int sweep,
                              const long long* __restrict__ queue, long long n_queue) {
    for (long long q = mgm_tid(); q < n_queue; q += mgm_nthreads()) {
        const long long i = queue[q] - lo;
        stamp[i] = sweep;
        if (matched[i]) continue;
        long long v;
        double w;
        mgm_best_free<I, S, W>(i, indptr, indices, weights, slot, matched, &v, &w);
        cand[i] = v;
        cand_w[i] = w;
    }
}

// GPU-LD ([P1] ProcessVertex lines 9-12): thread per queued vertex x; candidate[candidate[x]] = x
// is a locally dominant edge and matches. Of a mutual pair queued in the same sweep only the
// smaller id acts; the newly matched owned endpoints enter the fresh queue QN. A ghost candidate
// gets POINT.
template <typename I, typename S, typename W>
__global__ void ld_match(long long lo, long long hi, const long long* __restrict__ ghosts, long long n_ghosts,
                         bool* matched, const long long* cand, const double* cand_w, long long* mate,
                         double* mate_w, const int* stamp, int sweep,
                         const long long* __restrict__ queue, long long n_queue,
                         long long* fresh, unsigned long long* n_fresh,
                         long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    const long long n_owned = hi - lo;
    for (long long q = mgm_tid(); q < n_queue; q += mgm_nthreads()) {
        const long long x = queue[q];
        const long long i = x - lo;
        if (matched[i]) continue;
        const long long v = cand[i];
        if (v < 0) continue;
        const long long sv = mgm_slot_of(v, lo, hi, ghosts, n_ghosts);
        const double w = cand_w[i];
        if (sv >= n_owned) mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_POINT, v, x, w, -1);
        if (cand[sv] != x || matched[sv]) continue;
        if (sv < n_owned && stamp[sv] == sweep && v < x) continue;  // the partner acts
        matched[i] = true;
        matched[sv] = true;
        mate[i] = v;
        mate_w[i] = w;
        unsigned long long f = atomicAdd(n_fresh, sv < n_owned ? 2ull : 1ull);
        fresh[f] = x;
        if (sv < n_owned) {
            mate[sv] = x;
            mate_w[sv] = w;
            fresh[f + 1] = v;
        }
    }
}

// GPU-LD ([P1] Algorithm 1, lines 8-12): thread per newly matched vertex u of QC; every free
// neighbour whose candidate was u must look again (owned: next sweep's queue; ghost: MATCHED).
template <typename I, typename S, typename W>
__global__ void ld_settle(long long lo, long long n_owned, const I* __restrict__ indptr,
                          const I* __restrict__ indices, const S* __restrict__ slot, const bool* matched,
                          long long* cand, const long long* __restrict__ fresh, long long n_fresh,
                          long long* queue, unsigned long long* n_queue,
                          long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    for (long long q = mgm_tid(); q < n_fresh; q += mgm_nthreads()) {
        const long long y = fresh[q];
        const long long j = y - lo;
        for (long long e = (long long)indptr[j]; e < (long long)indptr[j + 1]; ++e) {
            const long long s = (long long)slot[e];
            if (matched[s] || cand[s] != y) continue;
            const long long x = (long long)indices[e];
            if (s >= n_owned) {
                mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_MATCHED, x, y, 0.0, -1);
                continue;
            }
            cand[s] = -2;
            queue[atomicAdd(n_queue, 1ull)] = x;
        }
    }
}

// Handshaking: remote vertices that point at a newly matched owned vertex y get MATCHED; thread
// per vertex of the list (only rows of owned vertices).
template <typename I, typename S, typename W>
__global__ void hs_notify(long long lo, long long n_owned, const I* __restrict__ indptr,
                          const I* __restrict__ indices, const S* __restrict__ slot, const bool* matched,
                          const long long* cand, const long long* __restrict__ list, long long n_list,
                          long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    for (long long q = mgm_tid(); q < n_list; q += mgm_nthreads()) {
        const long long y = list[q];
        if (y < lo || y >= lo + n_owned) continue;
        const long long j = y - lo;
        for (long long e = (long long)indptr[j]; e < (long long)indptr[j + 1]; ++e) {
            const long long s = (long long)slot[e];
            if (s >= n_owned && !matched[s] && cand[s] == y)
                mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_MATCHED, (long long)indices[e], y, 0.0, -1);
        }
    }
}

// Handshaking scan set-up: thread per CSR entry (grid-stride); src[e] is the entry's row (the
// segment id P of [HS] Sec. 2.2), dst[e]/w[e] the neighbour and weight, -1/-inf when the
// neighbour is matched (matched == nullptr: nothing is). Row ids come from the row pointer
// (thread per row writes its segment).
template <typename I, typename S, typename W>
__global__ void hs_scan_init(long long n_rows, const I* __restrict__ indptr, const I* __restrict__ indices,
                             const W* __restrict__ weights, const S* __restrict__ slot, const bool* matched,
                             I* src, I* dst, W* w) {
    for (long long i = mgm_tid(); i < n_rows; i += mgm_nthreads()) {
        for (long long e = (long long)indptr[i]; e < (long long)indptr[i + 1]; ++e) {
            src[e] = (I)i;
            const bool taken = matched != nullptr && matched[(long long)slot[e]];
            dst[e] = taken ? (I)-1 : indices[e];
            w[e] = weights[e];
        }
    }
}

// [HS] Sec. 2.2, strongestNeighborScan_gpu: one step of the segmented max-scan with stride
// `distance`; thread per edge in the grid-stride mapping of Sec. 2.4 (thread t handles edges
// t, t + T, t + 2T, ...: coalesced). Entry i takes the stronger of itself and entry i - distance
// when both lie in the same segment (heavier, ties to the smaller destination; -1 is "none").
// *made_changes is set when any destination changed; the host doubles the stride until none.
template <typename I, typename S, typename W>
__global__ void strongest_neighbour_scan(const I* __restrict__ src, const I* __restrict__ old_dst, I* new_dst,
                                         const W* __restrict__ old_w, W* new_w, int* made_changes,
                                         long long distance, long long n_edges) {
    for (long long i = mgm_tid(); i < n_edges; i += mgm_nthreads()) {
        I d = old_dst[i];
        W w = old_w[i];
        const long long j = i - distance;
        if (j >= 0 && src[j] == src[i]) {
            const I dj = old_dst[j];
            const W wj = old_w[j];
            if (dj >= 0 && (d < 0 || wj > w || (wj == w && dj < d))) {
                d = dj;
                w = wj;
            }
        }
        new_dst[i] = d;
        new_w[i] = w;
        if (d != old_dst[i]) *made_changes = 1;
    }
}

// [HS] Sec. 2.3, collateSegments_gpu: thread per edge (grid-stride); the last entry of each
// segment holds the segment's maximum and is packed into output[src]. Only free rows take it.
template <typename I, typename S, typename W>
__global__ void collate_segments(const I* __restrict__ src, const I* __restrict__ scan_result, long long* output,
                                 const bool* matched, long long n_edges) {
    for (long long i = mgm_tid(); i < n_edges; i += mgm_nthreads()) {
        if (i == n_edges - 1 || src[i] != src[i + 1]) {
            const long long r = (long long)src[i];
            if (matched == nullptr || !matched[r]) output[r] = (long long)scan_result[i];
        }
    }
}

// Strongest free neighbour, the fast variant: warp per row (grid-stride over rows); lanes read
// the row together (coalesced) and a butterfly reduction keeps the heaviest free neighbour, ties
// to the smaller id. Rows of matched vertices are skipped; -1 for a row with no free neighbour.
// matched == nullptr means no vertex is matched (all rows free).
template <typename I, typename S, typename W>
__global__ void strongest_neighbour_warp(long long n_rows, const I* __restrict__ indptr,
                                         const I* __restrict__ indices, const W* __restrict__ weights,
                                         const S* __restrict__ slot, const bool* matched, long long* out) {
    const int lane = threadIdx.x & 31;
    const long long warp = mgm_tid() >> 5;
    const long long n_warps = mgm_nthreads() >> 5;
    for (long long i = warp; i < n_rows; i += n_warps) {
        if (matched != nullptr && matched[i]) continue;
        long long bv = -1;
        double bw = -1.0 / 0.0;
        for (long long e = (long long)indptr[i] + lane; e < (long long)indptr[i + 1]; e += 32) {
            if (matched != nullptr && matched[(long long)slot[e]]) continue;
            const long long v = (long long)indices[e];
            const double w = (double)weights[e];
            if (bv < 0 || w > bw || (w == bw && v < bv)) {
                bv = v;
                bw = w;
            }
        }
        for (int off = 16; off > 0; off >>= 1) {
            const long long ov = __shfl_xor_sync(MGM_FULL_MASK, bv, off);
            const double ow = __shfl_xor_sync(MGM_FULL_MASK, bw, off);
            if (ov >= 0 && (bv < 0 || ow > bw || (ow == bw && ov < bv))) {
                bv = ov;
                bw = ow;
            }
        }
        if (lane == 0) out[i] = bv;
    }
}

// Handshaking collate (the matching step of a pass): thread per owned vertex i with a candidate.
// Mutual pointers match; of an owned pair the smaller id acts. A ghost candidate gets POINT once
// per new target (sent[]); remote vertices pointing at newly matched owned vertices get MATCHED.
template <typename I, typename S, typename W>
__global__ void hs_collate(long long lo, long long hi, const I* __restrict__ indptr, const I* __restrict__ indices,
                           const W* __restrict__ weights, const S* __restrict__ slot,
                           const long long* __restrict__ ghosts, long long n_ghosts, bool* matched,
                           const long long* cand, const bool* row_free, long long* mate, double* mate_w,
                           long long* sent, unsigned long long* made,
                           long long* ob_i, double* ob_w, unsigned long long* ob_count, long long ob_cap) {
    const long long n_owned = hi - lo;
    for (long long i = mgm_tid(); i < n_owned; i += mgm_nthreads()) {
        if (!row_free[i]) continue;
        const long long v = cand[i];
        const long long x = lo + i;
        if (v < 0) continue;
        const long long sv = mgm_slot_of(v, lo, hi, ghosts, n_ghosts);
        double w = 0.0;
        for (long long e = (long long)indptr[i]; e < (long long)indptr[i + 1]; ++e) {
            if ((long long)indices[e] == v) {
                w = (double)weights[e];
                break;
            }
        }
        if (sv >= n_owned) {
            if (sent[i] != v) {
                sent[i] = v;
                mgm_push(ob_i, ob_w, ob_count, ob_cap, MGM_POINT, v, x, w, -1);
            }
            if (cand[sv] != x || matched[sv]) continue;
        } else {
            if (cand[sv] != x || v < x) continue;  // not mutual, or the partner acts
        }
        matched[i] = true;
        matched[sv] = true;
        mate[i] = v;
        mate_w[i] = w;
        if (sv < n_owned) {
            mate[sv] = x;
            mate_w[sv] = w;
        }
        atomicAdd(made, 1ull);
    }
}
