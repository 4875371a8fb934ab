// Louvain community detection on the GPU.
//
// After M. Naim, F. Manne, M. Halappanavar, A. Tumeo, "Community Detection on the GPU",
// IEEE IPDPS 2017: Algorithm 1 (modularity optimisation), Algorithm 2 (computeMove),
// Algorithm 3 (aggregation, mergeCommunity) and the thread mapping of section 4.1.
//
// Weights are 64-bit fixed-point integers, so every atomicAdd of a weight is exact and the
// sums do not depend on the order in which threads add them: a vertex's move is a function
// of the community state at the start of its batch alone (a batch is bucket[j::slices], see
// mgmatch/gpu/louvain.py; the paper moves a whole bucket at once). Hash tables use open addressing
// with double hashing; a table for degree d has the smallest prime above 1.5 d slots.
//
// The largest buckets (computeMove degree > 319, mergeCommunity community degree > 479) do not
// take a block per vertex with its table in global memory, as the paper does: on R-MAT graphs
// that bucket holds most of the edges on a few thousand vertices, and a block working through a
// hub's 10^5 edges leaves the GPU idle. They are edge-balanced instead (the kernels under
// "Edge-balanced kernels" below): every item (vertex or community) owns a table of its own in
// global memory, and warps take equal ranges of the items' edges, then of their table slots.
//
// Tunables (#defines set by the loader): LOUVAIN_BLOCK (threads per block, 128 in the paper),
// MOVE_SHARED_TABLE (slots of the block-per-vertex table in shared memory, bucket [85, 319]),
// MERGE_WARP_TABLE and MERGE_SHARED_TABLE (mergeCommunity tables for community degrees
// [1, 127] and [128, 479]), RANGE_STEPS (an edge-balanced warp takes 32 x RANGE_STEPS
// consecutive edges or slots).

#ifndef LOUVAIN_BLOCK
#define LOUVAIN_BLOCK 128
#endif
#ifndef MOVE_SHARED_TABLE
#define MOVE_SHARED_TABLE 479
#endif
#ifndef MERGE_WARP_TABLE
#define MERGE_WARP_TABLE 191
#endif
#ifndef MERGE_SHARED_TABLE
#define MERGE_SHARED_TABLE 719
#endif
#ifndef RANGE_STEPS
#define RANGE_STEPS 8
#endif

typedef long long i64;
typedef unsigned long long u64;

#define EMPTY_SLOT (-1)
#define NEG_INF (__longlong_as_double(0xfff0000000000000ULL))
#define FULL_MASK 0xffffffffu
#define NO_COMM 0x7fffffff

// Add weight w under key c: find c or claim an empty slot with CAS (Algorithm 2, lines 2-13).
__device__ __forceinline__ void hash_add(int* keys, i64* vals, unsigned int p, int c, i64 w) {
    unsigned int uc = (unsigned int)c;
    unsigned int pos = uc % p;
    unsigned int step = p > 2 ? 1u + uc % (p - 1u) : 1u;
    while (true) {
        int k = ((volatile int*)keys)[pos];
        if (k == c) {
            atomicAdd((u64*)&vals[pos], (u64)w);
            return;
        }
        if (k == EMPTY_SLOT) {
            int old = atomicCAS(&keys[pos], EMPTY_SLOT, c);
            if (old == EMPTY_SLOT || old == c) {
                atomicAdd((u64*)&vals[pos], (u64)w);
                return;
            }
        }
        pos += step;
        if (pos >= p) pos -= p;
    }
}

// The better of two candidate moves: higher score of Eq. (2), then the lower community id.
__device__ __forceinline__ void better(double& best, int& best_c, double s, int c) {
    if (s > best || (s == best && (unsigned int)c < (unsigned int)best_c)) {
        best = s;
        best_c = c;
    }
}

// Score of community c for vertex i without the terms common to all c: e_{i->c} - gk * a_c,
// with gk = gamma k_i / 2m. Rounded operations keep the result free of contraction, so the
// CPU twin computes the same bits.
__device__ __forceinline__ double move_score(i64 e, double gk, i64 a) {
    return __dsub_rn((double)e, __dmul_rn(gk, (double)a));
}

// Scan table slots lane, lane + stride, ...: the best admissible community and e_{i->C(i)}.
__device__ __forceinline__ void scan_table(const int* keys, const i64* vals, unsigned int p, int lane,
                                           int stride, int own, bool singleton, double gk,
                                           const int* csize, const i64* afix, double& best,
                                           int& best_c, i64& e_own) {
    for (unsigned int s = lane; s < p; s += stride) {
        int c = keys[s];
        if (c == EMPTY_SLOT) continue;
        i64 w = vals[s];
        if (c == own) {
            e_own = w;
            continue;
        }
        if (singleton && csize[c] == 1 && c > own) continue;  // singleton rule, section 4
        better(best, best_c, move_score(w, gk, afix[c]), c);
    }
}

// Reduce (best, best_c, e_own) over a group of G lanes of one warp; all 32 lanes take part.
template <int G>
__device__ __forceinline__ void group_reduce(double& best, int& best_c, i64& e_own) {
#pragma unroll
    for (int off = G / 2; off > 0; off >>= 1) {
        double ob = __shfl_xor_sync(FULL_MASK, best, off, G);
        int oc = __shfl_xor_sync(FULL_MASK, best_c, off, G);
        i64 oe = __shfl_xor_sync(FULL_MASK, e_own, off, G);
        better(best, best_c, ob, oc);
        e_own += oe;
    }
}

// Block-wide reduce of (best, best_c, e_own); the result is valid in thread 0.
__device__ __forceinline__ void block_reduce(double& best, int& best_c, i64& e_own) {
    __shared__ double r_best[LOUVAIN_BLOCK / 32];
    __shared__ int r_c[LOUVAIN_BLOCK / 32];
    __shared__ i64 r_e[LOUVAIN_BLOCK / 32];
    group_reduce<32>(best, best_c, e_own);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        r_best[warp] = best;
        r_c[warp] = best_c;
        r_e[warp] = e_own;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < LOUVAIN_BLOCK / 32; ++w) {
            better(best, best_c, r_best[w], r_c[w]);
            e_own += r_e[w];
        }
    }
    __syncthreads();
}

// The move of vertex v once its table is reduced (Algorithm 2, lines 14-18).
__device__ __forceinline__ int decide(double best, int best_c, i64 e_own, int own, i64 kv, double gk,
                                      const i64* afix) {
    double stay = move_score(e_own, gk, afix[own] - kv);
    return (best_c >= 0 && best > stay) ? best_c : own;
}

// computeMove, Algorithm 2, buckets [1,4], [5,8], [9,16], [17,32] and [33,84]: a group of G
// threads of one warp per vertex (G = 4, 8, 16, 32; 32 for the last two buckets), each thread
// hashing edges lane, lane + G, ... into the group's table in shared memory (TABLE slots, the
// prime for the bucket's largest degree). Grid-stride over the bucket, warp-uniform trips.
template <int G, int TABLE>
__global__ void compute_move_group(const i64* __restrict__ indptr, const int* __restrict__ indices,
                                   const i64* __restrict__ wfix, const i64* __restrict__ kfix,
                                   const int* __restrict__ comm, const int* __restrict__ csize,
                                   const i64* __restrict__ afix, const int* __restrict__ verts, int nv,
                                   const int* __restrict__ table_sizes, double gamma_over_2m,
                                   int* __restrict__ new_comm) {
    constexpr int GROUPS_PER_WARP = 32 / G;
    constexpr int GROUPS = LOUVAIN_BLOCK / G;
    __shared__ int s_keys[GROUPS * TABLE];
    __shared__ i64 s_vals[GROUPS * TABLE];
    const int lane = threadIdx.x % G;
    const int group = threadIdx.x / G;
    int* keys = s_keys + group * TABLE;
    i64* vals = s_vals + group * TABLE;
    const i64 warp = (i64)blockIdx.x * (LOUVAIN_BLOCK / 32) + threadIdx.x / 32;
    const i64 warps = (i64)gridDim.x * (LOUVAIN_BLOCK / 32);
    for (i64 base = warp * GROUPS_PER_WARP; base < nv; base += warps * GROUPS_PER_WARP) {
        const i64 idx = base + (threadIdx.x % 32) / G;
        const bool active = idx < nv;
        int v = 0;
        i64 start = 0, stop = 0;
        unsigned int p = 2;
        if (active) {
            v = verts[idx];
            start = indptr[v];
            stop = indptr[v + 1];
            p = (unsigned int)table_sizes[stop - start];
        }
        for (unsigned int s = lane; s < p; s += G) {
            keys[s] = EMPTY_SLOT;
            vals[s] = 0;
        }
        __syncwarp();
        for (i64 e = start + lane; e < stop; e += G) hash_add(keys, vals, p, comm[indices[e]], wfix[e]);
        __syncwarp();
        double best = NEG_INF;
        int best_c = -1;
        i64 e_own = 0;
        int own = 0;
        i64 kv = 0;
        double gk = 0.0;
        if (active) {
            own = comm[v];
            kv = kfix[v];
            gk = __dmul_rn((double)kv, gamma_over_2m);
            scan_table(keys, vals, p, lane, G, own, csize[own] == 1, gk, csize, afix, best, best_c, e_own);
        }
        group_reduce<G>(best, best_c, e_own);
        if (active && lane == 0) new_comm[v] = decide(best, best_c, e_own, own, kv, gk, afix);
        __syncwarp();
    }
}

// computeMove, Algorithm 2, bucket [85,319]: one block of LOUVAIN_BLOCK threads per vertex, the
// table in shared memory (MOVE_SHARED_TABLE slots, the prime for degree 319). Grid-stride over
// the batch.
extern "C" __global__ void compute_move_block(const i64* __restrict__ indptr, const int* __restrict__ indices,
                                              const i64* __restrict__ wfix, const i64* __restrict__ kfix,
                                              const int* __restrict__ comm, const int* __restrict__ csize,
                                              const i64* __restrict__ afix, const int* __restrict__ verts, int nv,
                                              const int* __restrict__ table_sizes, double gamma_over_2m,
                                              int* __restrict__ new_comm) {
    __shared__ int keys[MOVE_SHARED_TABLE];
    __shared__ i64 vals[MOVE_SHARED_TABLE];
    for (i64 idx = blockIdx.x; idx < nv; idx += gridDim.x) {
        const int v = verts[idx];
        const i64 start = indptr[v], stop = indptr[v + 1];
        const unsigned int p = (unsigned int)table_sizes[stop - start];
        for (unsigned int s = threadIdx.x; s < p; s += blockDim.x) {
            keys[s] = EMPTY_SLOT;
            vals[s] = 0;
        }
        __syncthreads();
        for (i64 e = start + threadIdx.x; e < stop; e += blockDim.x)
            hash_add(keys, vals, p, comm[indices[e]], wfix[e]);
        __syncthreads();
        const int own = comm[v];
        const i64 kv = kfix[v];
        const double gk = __dmul_rn((double)kv, gamma_over_2m);
        double best = NEG_INF;
        int best_c = -1;
        i64 e_own = 0;
        scan_table(keys, vals, p, threadIdx.x, blockDim.x, own, csize[own] == 1, gk, csize, afix, best,
                   best_c, e_own);
        block_reduce(best, best_c, e_own);
        if (threadIdx.x == 0) new_comm[v] = decide(best, best_c, e_own, own, kv, gk, afix);
        __syncthreads();
    }
}

// Algorithm 1, lines 8-11: commit a batch's moves, C[i] = newComm[i], and update a_c and the
// community sizes by the moved vertices' k_i (integer atomics: the same values as recomputing
// a_c from scratch). One thread per vertex of the batch, grid-stride.
extern "C" __global__ void apply_moves(const int* __restrict__ verts, int nv, const int* __restrict__ new_comm,
                                       int* __restrict__ comm, int* __restrict__ csize, i64* __restrict__ afix,
                                       const i64* __restrict__ kfix) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += (i64)gridDim.x * blockDim.x) {
        const int v = verts[i];
        const int c = new_comm[v], o = comm[v];
        if (c != o) {
            atomicAdd((u64*)&afix[c], (u64)kfix[v]);
            atomicAdd((u64*)&afix[o], (u64)(-kfix[v]));
            atomicAdd(&csize[c], 1);
            atomicSub(&csize[o], 1);
            comm[v] = c;
        }
    }
}

// Per vertex, its self-loop plus the weights of its edges: all of them (OWN_ONLY = false: k_i,
// Algorithm 1 line 2), or those into its own community (OWN_ONLY = true: the first term of
// Eq. (1)). One warp per vertex, grid-stride; lane 0 writes the vertex's sum. `comm` is not read
// when OWN_ONLY is false.
template <bool OWN_ONLY>
__global__ void vertex_weight(const i64* __restrict__ indptr, const int* __restrict__ indices,
                              const i64* __restrict__ wfix, const i64* __restrict__ loop_fix,
                              const int* __restrict__ comm, int n, i64* __restrict__ out) {
    const int lane = threadIdx.x % 32;
    const i64 warps = (i64)gridDim.x * (blockDim.x / 32);
    for (i64 v = (i64)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; v < n; v += warps) {
        const int cv = OWN_ONLY ? comm[v] : 0;
        i64 s = 0;
        for (i64 e = indptr[v] + lane; e < indptr[v + 1]; e += 32)
            if (!OWN_ONLY || comm[indices[e]] == cv) s += wfix[e];
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(FULL_MASK, s, off);
        if (lane == 0) out[v] = s + loop_fix[v];
    }
}

// Algorithm 3, lines 2-6: comSize and comDegree with atomics. One thread per vertex.
extern "C" __global__ void community_sizes(const i64* __restrict__ indptr, const int* __restrict__ comm, int n,
                                           int* __restrict__ com_size, i64* __restrict__ com_degree) {
    for (i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += (i64)gridDim.x * blockDim.x) {
        const int c = comm[v];
        atomicAdd(&com_size[c], 1);
        atomicAdd((u64*)&com_degree[c], (u64)(indptr[v + 1] - indptr[v]));
    }
}

// Algorithm 3, lines 17-19: vertices ordered by community. The paper's cursor is vertexStart[c]
// counted up; here comSize[c] is counted down instead (it is not needed once vertexStart is
// known), which spares a copy of vertexStart: com[vertexStart[c] + atomicSub(comSize[c], 1) - 1] = i.
extern "C" __global__ void order_by_community(const int* __restrict__ comm, int n,
                                              const i64* __restrict__ vertex_start, int* __restrict__ com_size,
                                              int* __restrict__ members) {
    for (i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += (i64)gridDim.x * blockDim.x) {
        const int c = comm[v];
        members[vertex_start[c] + atomicSub(&com_size[c], 1) - 1] = (int)v;
    }
}

// mergeCommunity runs twice (Algorithm 3, line 23, split in two so that no temporary edge list
// of the old edge count is needed): a counting pass (write = 0) stores each community's number
// of distinct neighbour communities in counts[new id] and adds the weight of its internal edges
// to new_loop[new id] (its members' own self-loops are added by merge_member_loops); the
// writing pass (write = 1) hashes the same edges again and writes the table's entries from
// out_pos[new id] (the new CSR's offsets, a prefix sum of counts) on.
//
// Body shared by the warp and block variants: the group (lanes 0..G-1 of stride G) hashes the
// neighbours of every member of community c, one member after another, by their new community
// id; edges inside c add to the self-loop.
template <int G>
__device__ __forceinline__ void merge_one(int c, int* keys, i64* vals, unsigned int p, int lane,
                                          const i64* indptr, const int* indices, const i64* wfix,
                                          const int* comm, const int* new_id,
                                          const int* members, const i64* vertex_start, int write,
                                          const i64* out_pos, int* out_idx, i64* out_w, i64* counts,
                                          i64* new_loop, int* s_count, i64* s_loop) {
    const int nc = new_id[c];
    i64 loop = 0;
    for (i64 q = vertex_start[c]; q < vertex_start[c + 1]; ++q) {
        const int u = members[q];
        for (i64 e = indptr[u] + lane; e < indptr[u + 1]; e += G) {
            const int d = new_id[comm[indices[e]]];
            if (d == nc)
                loop += wfix[e];
            else
                hash_add(keys, vals, p, d, wfix[e]);
        }
    }
    if (G == 32) __syncwarp(); else __syncthreads();
    if (write) {
        const i64 base = out_pos[nc];
        for (unsigned int s = lane; s < p; s += G) {
            if (keys[s] != EMPTY_SLOT) {
                const int at = atomicAdd(s_count, 1);
                out_idx[base + at] = keys[s];
                out_w[base + at] = vals[s];
            }
        }
    } else {
        int filled = 0;
        for (unsigned int s = lane; s < p; s += G) filled += keys[s] != EMPTY_SLOT;
        atomicAdd(s_count, filled);
        atomicAdd((u64*)s_loop, (u64)loop);
        if (G == 32) __syncwarp(); else __syncthreads();
        if (lane == 0) {
            counts[nc] = *s_count;
            if (*s_loop) atomicAdd((u64*)&new_loop[nc], (u64)*s_loop);
        }
    }
}

// mergeCommunity, Algorithm 3 line 23, communities of degree [1,127] (and those without
// edges): one warp per community, table of MERGE_WARP_TABLE slots in shared memory.
// sizes[i] is the table size of comms[i]: the smallest prime above 1.5 times its degree
// (or its possible neighbour count, when smaller).
extern "C" __global__ void merge_community_warp(const int* __restrict__ comms, int nc_bucket,
                                                const i64* __restrict__ indptr, const int* __restrict__ indices,
                                                const i64* __restrict__ wfix,
                                                const int* __restrict__ comm, const int* __restrict__ new_id,
                                                const int* __restrict__ members, const i64* __restrict__ vertex_start,
                                                const int* __restrict__ sizes, int write,
                                                const i64* __restrict__ out_pos, int* __restrict__ out_idx,
                                                i64* __restrict__ out_w, i64* __restrict__ counts,
                                                i64* __restrict__ new_loop) {
    constexpr int WARPS = LOUVAIN_BLOCK / 32;
    __shared__ int s_keys[WARPS * MERGE_WARP_TABLE];
    __shared__ i64 s_vals[WARPS * MERGE_WARP_TABLE];
    __shared__ int s_count[WARPS];
    __shared__ i64 s_loop[WARPS];
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    int* keys = s_keys + w * MERGE_WARP_TABLE;
    i64* vals = s_vals + w * MERGE_WARP_TABLE;
    const i64 warps = (i64)gridDim.x * WARPS;
    for (i64 i = (i64)blockIdx.x * WARPS + w; i < nc_bucket; i += warps) {  // warp-uniform
        const int c = comms[i];
        const unsigned int p = (unsigned int)sizes[i];
        for (unsigned int s = lane; s < p; s += 32) {
            keys[s] = EMPTY_SLOT;
            vals[s] = 0;
        }
        if (lane == 0) {
            s_count[w] = 0;
            s_loop[w] = 0;
        }
        __syncwarp();
        merge_one<32>(c, keys, vals, p, lane, indptr, indices, wfix, comm, new_id, members, vertex_start,
                      write, out_pos, out_idx, out_w, counts, new_loop, &s_count[w], &s_loop[w]);
        __syncwarp();
    }
}

// mergeCommunity, Algorithm 3 line 23, community degree [128,479]: one block per community, the
// table in shared memory (MERGE_SHARED_TABLE slots); the members are processed one after another
// by all threads.
extern "C" __global__ void merge_community_block(const int* __restrict__ comms, int nc_bucket,
                                                 const i64* __restrict__ indptr, const int* __restrict__ indices,
                                                 const i64* __restrict__ wfix,
                                                 const int* __restrict__ comm, const int* __restrict__ new_id,
                                                 const int* __restrict__ members,
                                                 const i64* __restrict__ vertex_start, const int* __restrict__ sizes,
                                                 int write, const i64* __restrict__ out_pos,
                                                 int* __restrict__ out_idx, i64* __restrict__ out_w,
                                                 i64* __restrict__ counts, i64* __restrict__ new_loop) {
    __shared__ int keys[MERGE_SHARED_TABLE];
    __shared__ i64 vals[MERGE_SHARED_TABLE];
    __shared__ int s_count;
    __shared__ i64 s_loop;
    for (i64 i = blockIdx.x; i < nc_bucket; i += gridDim.x) {
        const int c = comms[i];
        const unsigned int p = (unsigned int)sizes[i];
        for (unsigned int s = threadIdx.x; s < p; s += blockDim.x) {
            keys[s] = EMPTY_SLOT;
            vals[s] = 0;
        }
        if (threadIdx.x == 0) {
            s_count = 0;
            s_loop = 0;
        }
        __syncthreads();
        merge_one<LOUVAIN_BLOCK>(c, keys, vals, p, threadIdx.x, indptr, indices, wfix, comm, new_id,
                                 members, vertex_start, write, out_pos, out_idx, out_w, counts, new_loop, &s_count,
                                 &s_loop);
        __syncthreads();
    }
}

// ------------------------------------------------------------------ Edge-balanced kernels
// Items (the vertices of a computeMove batch, the communities of a mergeCommunity bucket) own
// consecutive ranges pre[i] .. pre[i + 1] of an index space (their edges, or their table
// slots). A warp takes 32 x RANGE_STEPS consecutive indices, finds the item of the first by
// binary search, and its lanes walk forward from there; so a hub's edges spread over many
// warps. Each item's table lives in global memory at its own offset (a prefix sum of the table
// sizes); the slot-wise kernels leave the tables empty again for the next chunk of items.

// Largest i in [lo, hi) with pre[i] <= j (pre non-decreasing and pre[lo] <= j).
__device__ __forceinline__ i64 find_item(const i64* pre, i64 lo, i64 hi, i64 j) {
    while (hi - lo > 1) {
        const i64 mid = lo + (hi - lo) / 2;
        if (pre[mid] <= j)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// Run body(ok, i, j) for every index j of [pre[lo], pre[hi]) with its item i, warp-synchronously:
// every lane calls body at every step, `ok` false for lanes past the end. Those lanes' i is a
// valid item but may repeat an earlier lane's: warp-wide reductions key them apart (-1).
template <typename Body>
__device__ __forceinline__ void for_each_index(const i64* pre, i64 lo, i64 hi, Body body) {
    constexpr i64 W = 32 * RANGE_STEPS;
    const i64 begin = pre[lo], end = pre[hi];
    const int lane = threadIdx.x % 32;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 warps = ((i64)gridDim.x * blockDim.x) / 32;
    for (i64 r0 = begin + warp * W; r0 < end; r0 += warps * W) {
        i64 item = find_item(pre, lo, hi, r0);
        const i64 r1 = r0 + W < end ? r0 + W : end;
        for (i64 j0 = r0; j0 < r1; j0 += 32) {
            const i64 j = j0 + lane;
            const bool ok = j < r1;
            i64 mine = item;
            if (ok)
                while (pre[mine + 1] <= j) ++mine;
            item = __shfl_sync(FULL_MASK, mine, 31);
            body(ok, mine, j);
        }
    }
}

// Inclusive scan of `value` by `op` over runs of equal `key` (equal keys on consecutive lanes
// only); returns true in the last lane of each run, which then holds the run's total.
template <typename T, typename Op>
__device__ __forceinline__ bool run_scan(i64 key, T& value, Op op) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const i64 k = __shfl_up_sync(FULL_MASK, key, off);
        const T v = __shfl_up_sync(FULL_MASK, value, off);
        if (lane >= off && k == key) value = op(value, v);
    }
    const i64 next = __shfl_down_sync(FULL_MASK, key, 1);
    return lane == 31 || next != key;
}
struct Sum {
    __device__ i64 operator()(i64 a, i64 b) const { return a + b; }
};
struct Max {
    __device__ u64 operator()(u64 a, u64 b) const { return a > b ? a : b; }
};

// Doubles mapped to unsigned integers of the same order, so atomicMax finds the best score;
// 0 stands below every score (no candidate).
__device__ __forceinline__ u64 order_key(double x) {
    const u64 b = (u64)__double_as_longlong(x);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ULL);
}
__device__ __forceinline__ double from_order_key(u64 k) {
    const u64 b = (k >> 63) ? (k & 0x7fffffffffffffffULL) : ~k;
    return __longlong_as_double((long long)b);
}

// May a vertex of community own (of size 1 when singleton) move to community c? The singleton
// rule of section 4: not from one lone vertex to another of larger id.
__device__ __forceinline__ bool admissible(int c, int own, const int* csize) {
    return !(csize[own] == 1 && csize[c] == 1 && c > own);
}

// computeMove, bucket > 319, step 1 of 4: hash every edge of the batch's vertices [lo, hi) into
// its vertex's table (Algorithm 2, lines 2-13). vpre: prefix of the batch's degrees; tpre:
// prefix of their table sizes (the tables of [lo, hi) start at keys, vals).
extern "C" __global__ void move_hash_edges(const i64* __restrict__ indptr, const int* __restrict__ indices,
                                           const i64* __restrict__ wfix, const int* __restrict__ comm,
                                           const int* __restrict__ verts, const i64* __restrict__ vpre,
                                           const i64* __restrict__ tpre, i64 lo, i64 hi, int* __restrict__ keys,
                                           i64* __restrict__ vals) {
    const i64 slot0 = tpre[lo];
    for_each_index(vpre, lo, hi, [&](bool ok, i64 i, i64 j) {
        if (!ok) return;
        const i64 e = indptr[verts[i]] + (j - vpre[i]);
        const i64 t = tpre[i] - slot0;
        hash_add(keys + t, vals + t, (unsigned int)(tpre[i + 1] - tpre[i]), comm[indices[e]], wfix[e]);
    });
}

// computeMove, bucket > 319, step 2 of 4: every filled slot's score; the best per vertex by
// atomicMax on its order key (one atomic per run of a warp's lanes), and e_{i->C(i)}.
extern "C" __global__ void move_best_score(const int* __restrict__ verts, const i64* __restrict__ tpre, i64 lo,
                                           i64 hi, const int* __restrict__ keys, const i64* __restrict__ vals,
                                           const int* __restrict__ comm, const int* __restrict__ csize,
                                           const i64* __restrict__ afix, const i64* __restrict__ kfix,
                                           double gamma_over_2m, u64* __restrict__ best_key,
                                           i64* __restrict__ e_own) {
    const i64 slot0 = tpre[lo];
    for_each_index(tpre, lo, hi, [&](bool ok, i64 i, i64 s) {
        u64 k = 0;
        if (ok) {
            const int c = keys[s - slot0];
            if (c != EMPTY_SLOT) {
                const int v = verts[i];
                const int own = comm[v];
                if (c == own)
                    e_own[i - lo] = vals[s - slot0];
                else if (admissible(c, own, csize))
                    k = order_key(move_score(vals[s - slot0], __dmul_rn((double)kfix[v], gamma_over_2m), afix[c]));
            }
        }
        if (run_scan(ok ? i : -1, k, Max()) && k) atomicMax(&best_key[i - lo], k);
    });
}

// computeMove, bucket > 319, step 3 of 4: among the slots of the best score, the lowest community
// id (atomicMin); every slot is emptied for the next chunk.
extern "C" __global__ void move_best_comm(const int* __restrict__ verts, const i64* __restrict__ tpre, i64 lo,
                                          i64 hi, int* __restrict__ keys, i64* __restrict__ vals,
                                          const int* __restrict__ comm, const int* __restrict__ csize,
                                          const i64* __restrict__ afix, const i64* __restrict__ kfix,
                                          double gamma_over_2m, const u64* __restrict__ best_key,
                                          int* __restrict__ best_c) {
    const i64 slot0 = tpre[lo];
    for_each_index(tpre, lo, hi, [&](bool ok, i64 i, i64 s) {
        if (!ok) return;
        const i64 t = s - slot0;
        const int c = keys[t];
        if (c == EMPTY_SLOT) return;
        const int v = verts[i];
        const int own = comm[v];
        if (c != own && admissible(c, own, csize) &&
            order_key(move_score(vals[t], __dmul_rn((double)kfix[v], gamma_over_2m), afix[c])) == best_key[i - lo])
            atomicMin(&best_c[i - lo], c);
        keys[t] = EMPTY_SLOT;
        vals[t] = 0;
    });
}

// computeMove, bucket > 319, step 4 of 4: each vertex's move (Algorithm 2, lines 14-18), as
// decide() takes it for the other buckets; the per-vertex scratch is reset for the next chunk.
extern "C" __global__ void move_decide(const int* __restrict__ verts, i64 lo, i64 hi, const int* __restrict__ comm,
                                       const i64* __restrict__ kfix, const i64* __restrict__ afix,
                                       double gamma_over_2m, u64* __restrict__ best_key, int* __restrict__ best_c,
                                       i64* __restrict__ e_own, int* __restrict__ new_comm) {
    for (i64 i = lo + (i64)blockIdx.x * blockDim.x + threadIdx.x; i < hi; i += (i64)gridDim.x * blockDim.x) {
        const int v = verts[i];
        const i64 kv = kfix[v];
        const u64 k = best_key[i - lo];
        new_comm[v] = decide(k ? from_order_key(k) : NEG_INF, k ? best_c[i - lo] : -1, e_own[i - lo], comm[v], kv,
                             __dmul_rn((double)kv, gamma_over_2m), afix);
        best_key[i - lo] = 0;
        best_c[i - lo] = NO_COMM;
        e_own[i - lo] = 0;
    }
}

// mergeCommunity, community degree > 479, step 1 of 2 (of each pass): hash every edge of the
// members of the bucket's communities [lo, hi) by the new id of its far end's community. In
// the counting pass (write = 0) edges inside a community add to its self-loop (summed over
// runs of lanes, then one atomicAdd). bep: prefix of the communities' degrees; btp: of their
// table sizes; mpre: prefix of the degrees of `members` (so community c's edges are
// mpre[vertex_start[c]] = edge_pos[c] onwards).
extern "C" __global__ void merge_hash_edges(const int* __restrict__ comms, const i64* __restrict__ bep,
                                            const i64* __restrict__ btp, i64 lo, i64 hi,
                                            const i64* __restrict__ indptr, const int* __restrict__ indices,
                                            const i64* __restrict__ wfix, const int* __restrict__ comm,
                                            const int* __restrict__ new_id, const int* __restrict__ members,
                                            const i64* __restrict__ vertex_start, const i64* __restrict__ edge_pos,
                                            const i64* __restrict__ mpre, int* __restrict__ keys,
                                            i64* __restrict__ vals, int write, i64* __restrict__ new_loop) {
    constexpr i64 W = 32 * RANGE_STEPS;
    const i64 begin = bep[lo], end = bep[hi], slot0 = btp[lo];
    const int lane = threadIdx.x % 32;
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const i64 warps = ((i64)gridDim.x * blockDim.x) / 32;
    for (i64 r0 = begin + warp * W; r0 < end; r0 += warps * W) {
        // warp-uniform (community, member) of the range's first edge
        i64 item = find_item(bep, lo, hi, r0);
        const int c0 = comms[item];
        i64 member = find_item(mpre, vertex_start[c0], vertex_start[c0 + 1], edge_pos[c0] + (r0 - bep[item]));
        const i64 r1 = r0 + W < end ? r0 + W : end;
        for (i64 j0 = r0; j0 < r1; j0 += 32) {
            const i64 j = j0 + lane;
            const bool ok = j < r1;
            i64 mi = item, mq = member;
            i64 loop = 0;
            if (ok) {
                bool moved = false;
                while (bep[mi + 1] <= j) {
                    ++mi;
                    moved = true;
                }
                const int mc = comms[mi];
                const i64 g = edge_pos[mc] + (j - bep[mi]);
                if (moved)
                    mq = find_item(mpre, vertex_start[mc], vertex_start[mc + 1], g);
                else
                    while (mpre[mq + 1] <= g) ++mq;
                const i64 e = indptr[members[mq]] + (g - mpre[mq]);
                const int d = new_id[comm[indices[e]]];
                const i64 t = btp[mi] - slot0;
                if (d == new_id[mc])
                    loop = write ? 0 : wfix[e];
                else
                    hash_add(keys + t, vals + t, (unsigned int)(btp[mi + 1] - btp[mi]), d, wfix[e]);
            }
            item = __shfl_sync(FULL_MASK, mi, 31);
            member = __shfl_sync(FULL_MASK, mq, 31);
            if (run_scan(ok ? mi : -1, loop, Sum()) && loop) atomicAdd((u64*)&new_loop[new_id[comms[mi]]], (u64)loop);
        }
    }
}

// mergeCommunity, community degree > 479, step 2 of 2 (of each pass): the filled slots of each
// community's table are counted into counts[new id] (write = 0), or written from
// out_pos[new id] on (write = 1; counts[new id] is counted back down to hand out the places).
// One atomic per run of a warp's lanes; every slot is emptied for the next chunk.
extern "C" __global__ void merge_write_tables(const int* __restrict__ comms, const i64* __restrict__ btp, i64 lo,
                                              i64 hi, const int* __restrict__ new_id, int* __restrict__ keys,
                                              i64* __restrict__ vals, int write, i64* __restrict__ counts,
                                              const i64* __restrict__ out_pos, int* __restrict__ out_idx,
                                              i64* __restrict__ out_w) {
    const i64 slot0 = btp[lo];
    const int lane = threadIdx.x % 32;
    for_each_index(btp, lo, hi, [&](bool ok, i64 i, i64 s) {
        int key = EMPTY_SLOT;
        i64 w = 0;
        if (ok) {
            key = keys[s - slot0];
            if (key != EMPTY_SLOT) {
                w = vals[s - slot0];
                keys[s - slot0] = EMPTY_SLOT;
                vals[s - slot0] = 0;
            }
        }
        i64 rank = key != EMPTY_SLOT;  // becomes the inclusive count within the run
        const int nc = new_id[comms[i]];
        const bool last = run_scan(ok ? i : -1, rank, Sum());
        if (!write) {
            if (last && rank) atomicAdd((u64*)&counts[nc], (u64)rank);
            return;
        }
        i64 base = 0;
        if (last && rank) base = (i64)atomicAdd((u64*)&counts[nc], (u64)(-rank)) - rank;
        const unsigned int ends = __ballot_sync(FULL_MASK, last);
        base = __shfl_sync(FULL_MASK, base, __ffs(ends & (FULL_MASK << lane)) - 1);
        if (key != EMPTY_SLOT) {
            const i64 pos = out_pos[nc] + base + rank - 1;
            out_idx[pos] = key;
            out_w[pos] = w;
        }
    });
}

// Every member's own self-loop, added to its community's new self-loop (Algorithm 3: a
// community's self-loop carries its internal weight). members is ordered by community, so a
// warp's lanes sum runs of equal community before one atomicAdd.
extern "C" __global__ void merge_member_loops(const int* __restrict__ members, int n, const int* __restrict__ comm,
                                              const int* __restrict__ new_id, const i64* __restrict__ loop_fix,
                                              i64* __restrict__ new_loop) {
    const i64 stride = (i64)gridDim.x * blockDim.x;
    const i64 rounds = (n + stride - 1) / stride;  // warp-uniform trip count
    for (i64 r = 0; r < rounds; ++r) {
        const i64 q = r * stride + (i64)blockIdx.x * blockDim.x + threadIdx.x;
        int c = -1;
        i64 loop = 0;
        if (q < n) {
            const int u = members[q];
            c = comm[u];
            loop = loop_fix[u];
        }
        if (run_scan(c, loop, Sum()) && loop) atomicAdd((u64*)&new_loop[new_id[c]], (u64)loop);
    }
}
