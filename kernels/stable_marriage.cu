// Stable marriage (SM and SMI, men propose): Gale-Shapley and McVitie-Wilson as partition steps,
// the GPU twins of mgmatch/cpu/stable_marriage.py.
//
// References
//   [SM]  F. Manne, M. Naim, H. Lerring, M. Halappanavar, "On stable marriages and greedy
//         matchings", CSC 2016: Algorithm 1 (Gale-Shapley with a queue and the enhancement that a
//         man skips women holding a better suitor), section 4 (the OpenMP codes' compare-and-swap
//         on the woman's suitor, and the CUDA McVitie-Wilson with a thread per man).
//
// Template parameters: S is the type of the slot array (int or long long); WARP picks the thread
// mapping (false: a thread per man, the paper's kernel; true: a warp per man, its 32 lanes testing
// 32 list entries at once, for long lists where men skip many women); CHAIN picks the algorithm
// (true: McVitie-Wilson, the thread follows every man it displaces; false: one Gale-Shapley round,
// displaced men go to the next round's queue). Instantiated through name_expressions, e.g.
// "sm_propose<int,false,true>".
//
// A woman's state is one 64-bit key, wrank << 32 | man, of her current suitor (all ones: none),
// wrank being her rank of him: smaller is better, and atomicMin decides her suitor in one
// operation, its old value naming the man displaced. Slots below n_wlocal are owned women (exact
// keys in `key`); larger slots are remote women, whose `ghost_key` is an upper bound of their key
// (keys only decrease): a man above it would be refused and skips her, else he is left pending on
// her (pending[i] = the list entry) for the host to send as a message.
//
// nxt[i] is the list entry man i resumes from. It is written before each proposal, and fenced, so
// that whoever displaces him reads where he stood; a stale read is still safe (every woman before
// his true position holds a suitor she prefers to him), only slower.

#define MGM_FULL_MASK 0xffffffffu
#define MGM_SM_PROPOSE 0
#define MGM_SM_REJECT 1

typedef unsigned long long mgm_u64;

#define MGM_SM_EMPTY 0xffffffffffffffffull
#define MGM_SM_MAN 0xffffffffull

__device__ __forceinline__ long long mgm_sm_tid() {
    return (long long)blockIdx.x * (long long)blockDim.x + (long long)threadIdx.x;
}

__device__ __forceinline__ long long mgm_sm_nthreads() {
    return (long long)gridDim.x * (long long)blockDim.x;
}

__device__ __forceinline__ mgm_u64 mgm_sm_key(int wrank, long long man) {
    return ((mgm_u64)(unsigned int)wrank << 32) | (mgm_u64)man;
}

// Whether man `man` may propose to entry e: an owned woman whose suitor is worse than him, or a
// remote woman whose known bound is not below him.
template <typename S>
__device__ __forceinline__ bool mgm_sm_open(long long e, long long man, const int* __restrict__ wrank,
                                            const S* __restrict__ slot, long long n_wlocal, const mgm_u64* key,
                                            const mgm_u64* ghost_key) {
    const mgm_u64 mine = mgm_sm_key(wrank[e], man);
    const long long s = (long long)slot[e];
    if (s < n_wlocal) return __ldcg(key + s) > mine;
    return ghost_key[s - n_wlocal] >= mine;
}

// Man i proposes at entry e (open, as far as he saw). Returns 1 when he is done (taken, or
// pending on a remote woman), 0 when a better man took her first; *displaced is the owned man he
// displaced, or -1.
template <typename S>
__device__ __forceinline__ int mgm_sm_propose_at(long long i, long long e, long long lo, long long n_owned,
                                                 const int* __restrict__ wrank, const S* __restrict__ slot,
                                                 long long n_wlocal, mgm_u64* key, long long* nxt,
                                                 long long* pending, long long* displaced) {
    const long long man = lo + i;
    const mgm_u64 mine = mgm_sm_key(wrank[e], man);
    const long long s = (long long)slot[e];
    *displaced = -1;
    nxt[i] = e + 1;
    if (s >= n_wlocal) {  // a remote woman: the host sends the proposal
        pending[i] = e;
        return 1;
    }
    __threadfence();  // nxt[i] before the key that hands him to whoever displaces him
    const mgm_u64 old = atomicMin(key + s, mine);
    if (old < mine) return 0;  // [SM] sec. 4: the CAS failed to a better man; look further down
    if (old != MGM_SM_EMPTY) {
        const long long x = (long long)(old & MGM_SM_MAN) - lo;
        if (x >= 0 && x < n_owned) *displaced = x;  // a remote man is found by his lost woman
    }
    return 1;
}

// One man (a thread): propose down the list from nxt[i]; returns the owned man displaced, or -1.
template <typename S>
__device__ long long mgm_sm_advance_thread(long long i, long long lo, long long n_owned,
                                           const long long* __restrict__ indptr, const int* __restrict__ wrank,
                                           const S* __restrict__ slot, long long n_wlocal, mgm_u64* key,
                                           const mgm_u64* ghost_key, long long* nxt, long long* pending) {
    const long long man = lo + i;
    const long long end = indptr[i + 1];
    for (long long e = __ldcg(nxt + i); e < end; ++e) {
        if (!mgm_sm_open(e, man, wrank, slot, n_wlocal, key, ghost_key)) continue;  // Algorithm 1, line 5
        long long displaced;
        if (mgm_sm_propose_at(i, e, lo, n_owned, wrank, slot, n_wlocal, key, nxt, pending, &displaced))
            return displaced;
    }
    nxt[i] = end;
    return -1;
}

// One man (a warp, i the same in every lane): the lanes test 32 entries at a time and the first
// open one proposes. Returns the owned man displaced, or -1, in every lane.
template <typename S>
__device__ long long mgm_sm_advance_warp(long long i, long long lo, long long n_owned,
                                         const long long* __restrict__ indptr, const int* __restrict__ wrank,
                                         const S* __restrict__ slot, long long n_wlocal, mgm_u64* key,
                                         const mgm_u64* ghost_key, long long* nxt, long long* pending) {
    const int lane = threadIdx.x & 31;
    const long long man = lo + i;
    const long long end = indptr[i + 1];
    long long base = __shfl_sync(MGM_FULL_MASK, __ldcg(nxt + i), 0);
    while (base < end) {
        const long long e = base + lane;
        const bool open = e < end && mgm_sm_open(e, man, wrank, slot, n_wlocal, key, ghost_key);
        const unsigned int ballot = __ballot_sync(MGM_FULL_MASK, open);
        if (ballot == 0) {
            base += 32;
            continue;
        }
        const int leader = __ffs(ballot) - 1;
        int done = 0;
        long long displaced = -1;
        if (lane == leader)
            done = mgm_sm_propose_at(i, e, lo, n_owned, wrank, slot, n_wlocal, key, nxt, pending, &displaced);
        done = __shfl_sync(MGM_FULL_MASK, done, leader);
        displaced = __shfl_sync(MGM_FULL_MASK, displaced, leader);
        if (done) return displaced;
        base += leader + 1;
    }
    if (lane == 0) nxt[i] = end;
    return -1;
}

// McVitie-Wilson (CHAIN) or one Gale-Shapley round (!CHAIN) over the men in work[0..n_work):
// [SM] sec. 4, the CUDA McVitie-Wilson, a thread (or a warp) per man; atomicMin in place of the
// compare-and-swap loop. Gale-Shapley appends the men it displaces to following (*count of them).
template <typename S, bool WARP, bool CHAIN>
__global__ void sm_propose(long long lo, long long n_owned, const long long* __restrict__ indptr,
                           const int* __restrict__ wrank, const S* __restrict__ slot, long long n_wlocal,
                           mgm_u64* key, const mgm_u64* ghost_key, long long* nxt, long long* pending,
                           const long long* __restrict__ work, long long n_work, long long* following,
                           unsigned long long* count) {
    const long long per = WARP ? 32 : 1;
    const long long first = mgm_sm_tid() / per, stride = mgm_sm_nthreads() / per;
    for (long long t = first; t < n_work; t += stride) {
        long long i = work[t];
        while (i >= 0) {
            const long long x = WARP
                ? mgm_sm_advance_warp<S>(i, lo, n_owned, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt, pending)
                : mgm_sm_advance_thread<S>(i, lo, n_owned, indptr, wrank, slot, n_wlocal, key, ghost_key, nxt,
                                           pending);
            if (CHAIN) {
                i = x;
            } else {
                if (x >= 0 && (!WARP || (threadIdx.x & 31) == 0)) following[atomicAdd(count, 1ull)] = x;
                i = -1;
            }
        }
    }
}

// The partition's inbox, by one thread, message by message, exactly as sm_inbox of the CPU twin:
// PROPOSE (woman, man, key) from a remote man, REJECT (man, woman, her key) for an owned man.
// counts[0..3): owned men to run, REJECT rows, women now held by remote men.
__global__ void sm_inbox(long long lo, long long hi, long long wlo, const long long* __restrict__ ghosts,
                         long long n_ghosts, mgm_u64* key, mgm_u64* ghost_key, const long long* __restrict__ in_i,
                         long long n_in, long long* work, long long* rejects, long long* held_w, long long* held_m,
                         long long* counts) {
    if (mgm_sm_tid() != 0) return;
    long long n_work = 0, n_rej = 0, n_held = 0;
    for (long long k = 0; k < n_in; ++k) {
        const long long kind = in_i[4 * k], dst = in_i[4 * k + 1], src = in_i[4 * k + 2];
        const mgm_u64 mine = (mgm_u64)in_i[4 * k + 3];
        if (kind == MGM_SM_PROPOSE) {
            const long long s = dst - wlo;
            const mgm_u64 old = key[s];
            if (old < mine) {
                long long* row = rejects + 4 * n_rej++;
                row[0] = MGM_SM_REJECT;
                row[1] = src;
                row[2] = dst;
                row[3] = (long long)old;
                continue;
            }
            key[s] = mine;
            held_w[n_held] = s;
            held_m[n_held++] = src;
            if (old != MGM_SM_EMPTY) {
                const long long x = (long long)(old & MGM_SM_MAN);
                if (x >= lo && x < hi) work[n_work++] = x - lo;
            }
        } else {
            long long a = 0, b = n_ghosts;  // the ghost slot of woman src (lower bound)
            while (a < b) {
                const long long mid = (a + b) / 2;
                if (ghosts[mid] < src) a = mid + 1; else b = mid;
            }
            if (mine < ghost_key[a]) ghost_key[a] = mine;
            work[n_work++] = dst - lo;
        }
    }
    counts[0] = n_work;
    counts[1] = n_rej;
    counts[2] = n_held;
}
