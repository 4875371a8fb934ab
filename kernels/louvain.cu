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
// Tunables (#defines set by the loader): LOUVAIN_BLOCK (threads per block, 128 in the paper),
// MOVE_SHARED_TABLE (slots of the block-per-vertex table in shared memory, bucket [85, 319]),
// MERGE_WARP_TABLE and MERGE_SHARED_TABLE (mergeCommunity tables for community degrees
// [1, 127] and [128, 479]).

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

typedef long long i64;
typedef unsigned long long u64;

#define EMPTY_SLOT (-1)
#define NEG_INF (__longlong_as_double(0xfff0000000000000ULL))
#define FULL_MASK 0xffffffffu

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

// computeMove, Algorithm 2, buckets [85,319] (GLOBAL_TABLE = false: the table in shared
// memory) and > 319 (GLOBAL_TABLE = true: each block owns `stride` slots of global scratch and
// takes vertices blockIdx.x, blockIdx.x + gridDim.x, ... of the bucket, which is sorted by
// degree, largest first). One block of LOUVAIN_BLOCK threads per vertex.
template <bool GLOBAL_TABLE>
__global__ void compute_move_block(const i64* __restrict__ indptr, const int* __restrict__ indices,
                                   const i64* __restrict__ wfix, const i64* __restrict__ kfix,
                                   const int* __restrict__ comm, const int* __restrict__ csize,
                                   const i64* __restrict__ afix, const int* __restrict__ verts, int nv,
                                   const int* __restrict__ table_sizes, double gamma_over_2m,
                                   int* __restrict__ new_comm, int* __restrict__ g_keys,
                                   i64* __restrict__ g_vals, i64 stride) {
    constexpr int SHARED = GLOBAL_TABLE ? 1 : MOVE_SHARED_TABLE;
    __shared__ int s_keys[SHARED];
    __shared__ i64 s_vals[SHARED];
    int* keys = GLOBAL_TABLE ? g_keys + (i64)blockIdx.x * stride : s_keys;
    i64* vals = GLOBAL_TABLE ? g_vals + (i64)blockIdx.x * stride : s_vals;
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

// Eq. (1), first term: per vertex, the weight to its own community plus its self-loop. One
// warp per vertex, grid-stride; lane 0 writes the vertex's sum.
extern "C" __global__ void internal_weight(const i64* __restrict__ indptr, const int* __restrict__ indices,
                                           const i64* __restrict__ wfix, const i64* __restrict__ loop_fix,
                                           const int* __restrict__ comm, int n, i64* __restrict__ out) {
    const int lane = threadIdx.x % 32;
    const i64 warps = (i64)gridDim.x * (blockDim.x / 32);
    for (i64 v = (i64)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; v < n; v += warps) {
        const int cv = comm[v];
        i64 s = 0;
        for (i64 e = indptr[v] + lane; e < indptr[v + 1]; e += 32)
            if (comm[indices[e]] == cv) s += wfix[e];
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(FULL_MASK, s, off);
        if (lane == 0) out[v] = s + loop_fix[v];
    }
}

// Algorithm 3, lines 2-6: comSize and comDegree with atomics. One thread per vertex.
extern "C" __global__ void community_sizes(const i64* __restrict__ indptr, const int* __restrict__ comm, int n,
                                           i64* __restrict__ com_size, i64* __restrict__ com_degree) {
    for (i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += (i64)gridDim.x * blockDim.x) {
        const int c = comm[v];
        atomicAdd((u64*)&com_size[c], 1ull);
        atomicAdd((u64*)&com_degree[c], (u64)(indptr[v + 1] - indptr[v]));
    }
}

// Algorithm 3, lines 17-19: vertices ordered by community, com[atomicAdd(vertexStart[c], 1)] = i.
extern "C" __global__ void order_by_community(const int* __restrict__ comm, int n, i64* __restrict__ cursor,
                                              int* __restrict__ members) {
    for (i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += (i64)gridDim.x * blockDim.x) {
        const i64 pos = (i64)atomicAdd((u64*)&cursor[comm[v]], 1ull);
        members[pos] = (int)v;
    }
}

// mergeCommunity body shared by the warp and block variants: the group (lanes 0..G-1 of
// stride G) hashes the neighbours of every member of community c, one member after another,
// by their new community id; edges inside c add to the self-loop. The group then writes its
// table's entries to the community's slice of the temporary edge list.
template <int G>
__device__ __forceinline__ void merge_one(int c, int* keys, i64* vals, unsigned int p, int lane,
                                          const i64* indptr, const int* indices, const i64* wfix,
                                          const i64* loop_fix, const int* comm, const int* new_id,
                                          const int* members, const i64* vertex_start, const i64* edge_pos,
                                          int* tmp_idx, i64* tmp_w, i64* counts, i64* new_loop,
                                          int* s_count, i64* s_loop) {
    const int nc = new_id[c];
    i64 loop = 0;
    for (i64 q = vertex_start[c]; q < vertex_start[c + 1]; ++q) {
        const int u = members[q];
        if (lane == 0) loop += loop_fix[u];
        for (i64 e = indptr[u] + lane; e < indptr[u + 1]; e += G) {
            const int d = new_id[comm[indices[e]]];
            if (d == nc)
                loop += wfix[e];
            else
                hash_add(keys, vals, p, d, wfix[e]);
        }
    }
    atomicAdd((u64*)s_loop, (u64)loop);
    if (G == 32) __syncwarp(); else __syncthreads();
    const i64 base = edge_pos[c];
    for (unsigned int s = lane; s < p; s += G) {
        if (keys[s] != EMPTY_SLOT) {
            const int at = atomicAdd(s_count, 1);
            tmp_idx[base + at] = keys[s];
            tmp_w[base + at] = vals[s];
        }
    }
    if (G == 32) __syncwarp(); else __syncthreads();
    if (lane == 0) {
        counts[nc] = *s_count;
        new_loop[nc] = *s_loop;
    }
}

// mergeCommunity, Algorithm 3 line 23, communities of degree [1,127] (and those without
// edges): one warp per community, table of MERGE_WARP_TABLE slots in shared memory.
// sizes[i] is the table size of comms[i]: the smallest prime above 1.5 times its degree
// (or its possible neighbour count, when smaller).
extern "C" __global__ void merge_community_warp(const int* __restrict__ comms, int nc_bucket,
                                                const i64* __restrict__ indptr, const int* __restrict__ indices,
                                                const i64* __restrict__ wfix, const i64* __restrict__ loop_fix,
                                                const int* __restrict__ comm, const int* __restrict__ new_id,
                                                const int* __restrict__ members, const i64* __restrict__ vertex_start,
                                                const i64* __restrict__ edge_pos, const int* __restrict__ sizes,
                                                int* __restrict__ tmp_idx,
                                                i64* __restrict__ tmp_w, i64* __restrict__ counts,
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
        merge_one<32>(c, keys, vals, p, lane, indptr, indices, wfix, loop_fix, comm, new_id, members,
                      vertex_start, edge_pos, tmp_idx, tmp_w, counts, new_loop, &s_count[w], &s_loop[w]);
        __syncwarp();
    }
}

// mergeCommunity, Algorithm 3 line 23, community degree [128,479] (GLOBAL_TABLE = false, the
// table in shared memory) and > 479 (GLOBAL_TABLE = true, `stride` slots of global scratch per
// block). One block per community; the members are processed one after another by all threads.
template <bool GLOBAL_TABLE>
__global__ void merge_community_block(const int* __restrict__ comms, int nc_bucket,
                                      const i64* __restrict__ indptr, const int* __restrict__ indices,
                                      const i64* __restrict__ wfix, const i64* __restrict__ loop_fix,
                                      const int* __restrict__ comm, const int* __restrict__ new_id,
                                      const int* __restrict__ members, const i64* __restrict__ vertex_start,
                                      const i64* __restrict__ edge_pos, const int* __restrict__ sizes,
                                      int* __restrict__ tmp_idx,
                                      i64* __restrict__ tmp_w, i64* __restrict__ counts, i64* __restrict__ new_loop,
                                      int* __restrict__ g_keys, i64* __restrict__ g_vals, i64 stride) {
    constexpr int SHARED = GLOBAL_TABLE ? 1 : MERGE_SHARED_TABLE;
    __shared__ int s_keys[SHARED];
    __shared__ i64 s_vals[SHARED];
    __shared__ int s_count;
    __shared__ i64 s_loop;
    int* keys = GLOBAL_TABLE ? g_keys + (i64)blockIdx.x * stride : s_keys;
    i64* vals = GLOBAL_TABLE ? g_vals + (i64)blockIdx.x * stride : s_vals;
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
        merge_one<LOUVAIN_BLOCK>(c, keys, vals, p, threadIdx.x, indptr, indices, wfix, loop_fix, comm, new_id,
                                 members, vertex_start, edge_pos, tmp_idx, tmp_w, counts, new_loop, &s_count,
                                 &s_loop);
        __syncthreads();
    }
}

// Compaction after mergeCommunity: each community's edges move from its slice of the
// temporary list (edgePos) to consecutive slots of the new CSR. One warp per community.
extern "C" __global__ void compact_edges(const int* __restrict__ comms, int n_comms, const int* __restrict__ new_id,
                                         const i64* __restrict__ edge_pos, const i64* __restrict__ new_indptr,
                                         const int* __restrict__ tmp_idx, const i64* __restrict__ tmp_w,
                                         int* __restrict__ out_idx, i64* __restrict__ out_w) {
    const int lane = threadIdx.x % 32;
    const i64 warps = (i64)gridDim.x * (blockDim.x / 32);
    for (i64 i = (i64)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; i < n_comms; i += warps) {
        const int c = comms[i];
        const int nc = new_id[c];
        const i64 src = edge_pos[c], dst = new_indptr[nc], len = new_indptr[nc + 1] - dst;
        for (i64 q = lane; q < len; q += 32) {
            out_idx[dst + q] = tmp_idx[src + q];
            out_w[dst + q] = tmp_w[src + q];
        }
    }
}
