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
// (The fused kernel for small graphs, below, gives such a vertex a block, as the paper does:
// there each edge-balanced step would add a barrier across the cluster to every batch.)
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
#define W_BIG ((i64)0x7FFFFFFFFFFFFFFFLL)  // (W_BIG - w: the largest of these is the smallest w)
#define FULL_MASK 0xffffffffu
#define NO_COMM 0x7fffffff

// a += x on a 64-bit integer in shared memory, by two native 32-bit atomics: the low word's, then
// the high word's with the carry out of the low word. (A 64-bit atomicAdd on shared memory is a
// load and a compare-and-swap loop on sm_90, ATOMS.CAST.SPIN.64, which every collision retries.)
// The carries of concurrent adds sum to the low word's overflow, so their total is exact; the
// word pair is read only after a barrier.
__device__ __forceinline__ void shared_add(i64* a, i64 x) {
    unsigned int* w = (unsigned int*)a;  // little-endian: w[0] is the low word
    const unsigned int lo = (unsigned int)(u64)x, hi = (unsigned int)((u64)x >> 32);
    const unsigned int old = atomicAdd(w, lo);
    atomicAdd(w + 1, hi + (old + lo < old ? 1u : 0u));
}

// a += x: by shared_add where SHARED says a is in shared memory, else by one 64-bit atomic.
template <bool SHARED>
__device__ __forceinline__ void add_i64(i64* a, i64 x) {
    if constexpr (SHARED)
        shared_add(a, x);
    else
        atomicAdd((u64*)a, (u64)x);
}

// Add weight w under key c: find c or claim an empty slot with CAS (Algorithm 2, lines 2-13).
// True when this call claimed the slot (c was not in the table yet).
//
// PEEK = false drops the load before the compare-and-swap, for tables in global memory that many
// keys share: each probe is one atomic round trip (the key's slot, or the first empty one,
// answers it) instead of a load and then an atomic. In the fused kernel's aggregation, where
// a warp's lanes wait for the longest of their probe chains, 4elt's aggregations took 61, 33,
// 24 and 14 us against 65, 35, 28 and 15 (H100), delaunay k=14's 96, 35 and 30 against 100, 37
// and 34, the same decisions. (The launch-per-phase kernels keep the load; the change was not
// measured there.) SHARED: the table is in shared memory (its weights added by shared_add).
template <bool PEEK = true, bool SHARED = false>
__device__ __forceinline__ bool hash_add(int* keys, i64* vals, unsigned int p, int c, i64 w) {
    unsigned int uc = (unsigned int)c;
    unsigned int pos = uc % p;
    unsigned int step = p > 2 ? 1u + uc % (p - 1u) : 1u;
    while (true) {
        const int k = PEEK ? ((volatile int*)keys)[pos] : EMPTY_SLOT;
        if (PEEK && k == c) {
            add_i64<SHARED>(&vals[pos], w);
            return false;
        }
        if (k == EMPTY_SLOT) {
            int old = atomicCAS(&keys[pos], EMPTY_SLOT, c);
            if (old == EMPTY_SLOT || old == c) {
                add_i64<SHARED>(&vals[pos], w);
                return old == EMPTY_SLOT;
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
        for (i64 e = start + lane; e < stop; e += G) hash_add<true, true>(keys, vals, p, comm[indices[e]], wfix[e]);
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
            hash_add<true, true>(keys, vals, p, comm[indices[e]], wfix[e]);
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

// Vertex v (strength kv) moves from community o to c in one community state: C[v], comSize and
// a_c (integer atomics: the same values as recomputing them from scratch).
// SHARED: the state is in shared memory (a_c added by shared_add).
template <bool SHARED = false>
__device__ __forceinline__ void move_vertex(int v, int o, int c, i64 kv, int* comm, int* csize, i64* afix) {
    add_i64<SHARED>(&afix[c], kv);
    add_i64<SHARED>(&afix[o], -kv);
    atomicAdd(&csize[c], 1);
    atomicSub(&csize[o], 1);
    comm[v] = c;
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
        if (c != o) move_vertex(v, o, c, kfix[v], comm, csize, afix);
    }
}

// The moves of a batch across partitions (Ghosh et al.'s community updates, one message per vertex
// of the batch): row i of `rows` (int64, `stride` words a row) holds the vertex in word 1 and the
// community it chose in word 2. A row whose community is the vertex's own changes nothing, so a
// sender need not select the vertices that moved. Every partition applies every row, so C,
// comSize and a_c stay the same on all of them. One thread per row, grid-stride.
extern "C" __global__ void apply_move_rows(const i64* __restrict__ rows, i64 k, int stride, int* __restrict__ comm,
                                           int* __restrict__ csize, i64* __restrict__ afix,
                                           const i64* __restrict__ kfix) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < k; i += (i64)gridDim.x * blockDim.x) {
        const int v = (int)rows[i * stride + 1];
        const int c = (int)rows[i * stride + 2], o = comm[v];
        if (c != o) move_vertex(v, o, c, kfix[v], comm, csize, afix);
    }
}

// A block's sum of one value per thread added to *out (one atomic per block; blockDim.x a multiple
// of 32, at most 1024). Unsigned, so a negative total wraps and the sum stays exact modulo 2^64.
__device__ __forceinline__ void block_add(i64 s, u64* out) {
    __shared__ i64 part[32];
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(FULL_MASK, s, off);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) part[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < (int)(blockDim.x / 32) ? part[lane] : 0;
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(FULL_MASK, s, off);
        if (lane == 0 && s != 0) atomicAdd(out, (u64)s);
    }
    __syncthreads();  // (part is reused by the next call)
}

// Vertex i of a batch: verts[i], or word 1 of row i of `rows` (`stride` words a row) when the
// batch comes as message rows (stride > 0), whose word 2 is the community it chose.
__device__ __forceinline__ int batch_vertex(const int* verts, const i64* rows, int stride, i64 i) {
    return stride ? (int)rows[i * stride + 1] : verts[i];
}

// pend[v] = the community vertex v of the batch moves to (new_comm[v], or word 2 of its row) when
// it moves (set = 1), or back to -1 (set = 0) once the batch is applied. One thread per vertex of
// the batch.
extern "C" __global__ void mark_batch(const int* __restrict__ verts, const i64* __restrict__ rows, int stride, i64 k,
                                      const int* __restrict__ new_comm, const int* __restrict__ comm,
                                      int* __restrict__ pend, int set) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < k; i += (i64)gridDim.x * blockDim.x) {
        const int v = batch_vertex(verts, rows, stride, i);
        if (!set) {
            if (pend[v] >= 0) pend[v] = -1;
            continue;
        }
        const int c = stride ? (int)rows[i * stride + 2] : new_comm[v];
        if (c != comm[v]) pend[v] = c;
    }
}

// The change of the internal weight (the first term of Eq. (1), over the stored entries of both
// directions) that a batch's moves make, before they are applied (comm still the old C, pend
// marked by mark_batch): for a vertex u that moves from o to c, each entry u -> x changes by
// w (delta(c, C'x) - delta(o, Cx)), C'x = pend[x] when x moves in the batch, else Cx; its twin
// entry x -> u changes alike and is counted here too when x does not move (a vertex that moves
// counts its own row). This spares a sweep the recount of every edge that the modularity
// would need (after the first sweeps few vertices move). Only the batch's vertices of
// [lo, hi) count (a partition's own rows; the others' partitions count theirs). One warp per
// vertex, grid-stride; the sum goes to *acc (block_add).
extern "C" __global__ void moved_weight(const int* __restrict__ verts, const i64* __restrict__ rows, int stride,
                                        i64 k, int lo, int hi, const i64* __restrict__ indptr,
                                        const int* __restrict__ indices, const i64* __restrict__ wfix,
                                        const int* __restrict__ comm, const int* __restrict__ pend,
                                        u64* __restrict__ acc) {
    const int lane = threadIdx.x % 32;
    const i64 warps = (i64)gridDim.x * (blockDim.x / 32);
    i64 s = 0;
    for (i64 i = (i64)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; i < k; i += warps) {
        const int u = batch_vertex(verts, rows, stride, i);
        if (u < lo || u >= hi) continue;
        const int o = comm[u], c = pend[u];
        if (c < 0) continue;  // (it stays)
        for (i64 e = indptr[u] + lane; e < indptr[u + 1]; e += 32) {
            const int x = indices[e];
            const int ox = comm[x], px = pend[x];
            const int d = (int)((px >= 0 ? px : ox) == c) - (int)(ox == o);
            if (d) s += (px >= 0 ? 1 : 2) * d * wfix[e];
        }
    }
    block_add(s, acc);
}

// sum(a^2) in five exact parts (mgmatch.cpu.louvain.square_sum): a = h 2^30 + l, l = p 2^15 + r;
// out[0..4] += sum h^2, h l, p^2, p r, r^2 (each total below 2^62 for sum(a) < 2^60).
extern "C" __global__ void square_sums(const i64* __restrict__ a, i64 n, u64* __restrict__ out) {
    i64 hh = 0, hl = 0, pp = 0, pr = 0, rr = 0;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
        const i64 x = a[i], h = x >> 30, l = x & ((1LL << 30) - 1), p = l >> 15, r = l & ((1LL << 15) - 1);
        hh += h * h;
        hl += h * l;
        pp += p * p;
        pr += p * r;
        rr += r * r;
    }
    block_add(hh, out);
    block_add(hl, out + 1);
    block_add(pp, out + 2);
    block_add(pr, out + 3);
    block_add(rr, out + 4);
}

// k_i (Algorithm 1, line 2): per vertex, its self-loop plus the weights of its edges. One warp
// per vertex, grid-stride; lane 0 writes the vertex's sum.
extern "C" __global__ void vertex_strengths(const i64* __restrict__ indptr, const i64* __restrict__ wfix,
                                            const i64* __restrict__ loop_fix, int n, i64* __restrict__ out) {
    const int lane = threadIdx.x % 32;
    const i64 warps = (i64)gridDim.x * (blockDim.x / 32);
    for (i64 v = (i64)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; v < n; v += warps) {
        i64 s = 0;
        for (i64 e = indptr[v] + lane; e < indptr[v + 1]; e += 32) s += wfix[e];
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

// find_item by the whole warp (every lane calls it with the same lo, hi and j): a 32-ary search,
// each step one load per lane, all in flight together, so log32 dependent loads, not log2. The
// fused kernel's ranges (`even` below) take it: its few warps each start one range per pass, on
// offsets in global memory. 4elt's aggregations took 56, 29 and 24 us against 59, 32 and 25,
// delaunay k=14's 90, 32 and 30 against 95, 35 and 31, kron k=12's 134 and 55 against 138 and 57
// (H200, the same decisions).
__device__ __forceinline__ i64 find_item_warp(const i64* pre, i64 lo, i64 hi, i64 j) {
    const int lane = threadIdx.x % 32;
    while (hi - lo > 1) {
        const i64 step = (hi - lo + 31) / 32;
        const i64 at = lo + (i64)lane * step;  // lane 0 probes lo, where pre[lo] <= j
        const unsigned int le = __ballot_sync(FULL_MASK, at < hi && pre[at] <= j);
        lo += (i64)(31 - __clz(le)) * step;
        hi = lo + step < hi ? lo + step : hi;
    }
    return lo;
}

// Run body(ok, i, j) for every index j of [pre[lo], pre[hi]) with its item i, warp-synchronously:
// every lane calls body at every step, `ok` false for lanes past the end. Those lanes' i is a
// valid item but may repeat an earlier lane's: warp-wide reductions key them apart (-1).
//
// for_each_index_of takes the warps' numbering from the caller, warp `warp` of `warps` (the
// fused kernel numbers them across its blocks first, so that few ranges still reach every
// block), and the width of a range: 32 x RANGE_STEPS, or with `even` the indices split evenly
// among the warps (one range each, of at least that width). A range starts with a binary search
// for its item, a chain of dependent loads; the fused kernel has few warps for its indices, and
// there those searches cost more than the walk (4elt, level 0: four of them per warp and pass).
// for_each_index numbers the grid's warps block by block; its grid has about a range per warp.
template <typename Body>
__device__ __forceinline__ void for_each_index_of(const i64* pre, i64 lo, i64 hi, i64 warp, i64 warps, bool even,
                                                  Body body) {
    const i64 begin = pre[lo], end = pre[hi];
    i64 W = 32 * RANGE_STEPS;
    if (even) {
        const i64 per = ((end - begin + warps - 1) / warps + 31) / 32 * 32;
        W = per > W ? per : W;
    }
    const int lane = threadIdx.x % 32;
    for (i64 r0 = begin + warp * W; r0 < end; r0 += warps * W) {
        i64 item = even ? find_item_warp(pre, lo, hi, r0) : find_item(pre, lo, hi, r0);
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

template <typename Body>
__device__ __forceinline__ void for_each_index(const i64* pre, i64 lo, i64 hi, Body body) {
    const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    for_each_index_of(pre, lo, hi, warp, ((i64)gridDim.x * blockDim.x) / 32, false, body);
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

// One table slot per lane of a warp-synchronous walk over items' tables (every lane calls it;
// `ok` false past the end, `key` EMPTY_SLOT for an empty slot, `nc` the item's new vertex). With
// write = 0 the filled slots are counted into counts[nc]; with write = 1 they are written from
// out_pos[nc] on, counts[nc] counted back down to hand out the places. One atomic per run of
// lanes of one item.
__device__ __forceinline__ void emit_table_slot(bool ok, i64 item, int nc, int key, i64 w, int write, i64* counts,
                                                const i64* out_pos, int* out_idx, i64* out_w) {
    const int lane = threadIdx.x % 32;
    i64 rank = key != EMPTY_SLOT;  // becomes the inclusive count within the run
    const bool last = run_scan(ok ? item : -1, rank, Sum());
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
        emit_table_slot(ok, i, new_id[comms[i]], key, w, write, counts, out_pos, out_idx, out_w);
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

// ============================================================== Fused small-graph Louvain
// A whole Louvain run in one kernel, for graphs small enough that launching a kernel per batch
// costs more than the batch's work (4elt: 176 batches, 38 sweeps and 5 aggregations over 6
// levels). The measurements in this kernel's comments that count 4elt's batches (9 a sweep on
// levels 0 and 2, 288 in all) were taken with 4 batches a bucket (LouvainConfig.move_slices in
// algorithms/louvain_program.py), the default until 2 replaced it. One thread-block cluster of FUSED_CLUSTER blocks of FUSED_THREADS threads runs every
// phase of Algorithms 1 to 3, level after level, and separates the phases with the cluster's
// hardware barrier (barrier.cluster, release/acquire) instead of kernel boundaries; the last,
// small levels go on in a second kernel on one block (louvain_fused_solo, see fused_levels). Its
// decisions are those of the launch-per-phase kernels above and of the CPU twin: the same
// degree buckets and interleaved batches, the moves of a batch decided from the state at its
// start (computeMove with the same group sizes; the same (community, weight) pairs, summed
// across the lanes of a group where each lane holds one edge, else in the same shared-memory
// tables), exact fixed-point sums.
//
// One barrier per batch: the community state (C, comSize, a_c) is double-buffered. Batch p
// reads buffer p & 1 and writes the other, which holds the state before batch p - 1; so it
// applies the moves of batch p - 1 (read off the two buffers' C) and its own. After the last
// batch the sweep's modularity is reduced from the written buffer while the other catches up.
// (Splitting that barrier, to load the next batch's vertices and first edges, which a level never
// changes, between its arrive and its wait, made the batches slower, not faster: on an H200
// 4elt's level 0 moved in 525 us against 503, rgg k=14's in 948 against 903, and the cluster
// kernel's spill stores rose from 444 to 516 bytes.)
// What a batch costs, on an H200 (4elt's level 0, 15,606 vertices, 11 sweeps of 9 batches, 503
// us): the barrier is not most of it. A second barrier after each batch's added 32 us (0.32 us
// a batch); the same barrier without its release (not a valid program, timed only) saved 35
// us; a release by one warp after __syncthreads, the others arriving relaxed, saved nothing
// (the release waits for the batch's writes to reach L2, however many warps ask). Staging each
// block's share of every batch (vertex, offset, degree, neighbours) in its shared memory at the
// level's start, instead of reading them from L2 after every barrier, saved 8 us here and made
// kron k=14 17% slower (less L1 left for the spills). Summing a group's weights as a count
// (__popc of the peers) where level 0's weights are all equal saved 18 us there, and the branch
// cost the weighted levels more (rgg k=14's kernel 1,419 us against 1,389). The rest is each group's own chain: about
// 300 instructions a round for the [5, 8] bucket, most of them waiting on the one before or on
// the round's loads of C and a_c (Nsight Compute, H100: 28% of the warps' cycles on L2 loads,
// 27% at the barrier waiting for other warps, 9% in the release).
//
// Modularity is exact too: the first term of Eq. (1) is an integer sum, and sum_c a_c^2 is
// accumulated in three 40-bit limbs of the 120-bit squares (order-free, no overflow below 2^23
// vertices), so every block derives the same Q from the same partial sums and the
// termination decisions are uniform across the cluster.
//
// The aggregation (Algorithm 3) hashes each edge into its community's table in global memory,
// edge-balanced over warps (for_each_index, as the kernels for the largest buckets do), then
// counts the filled slots, takes prefix sums across the cluster, and writes the new CSR.
// Vertices of degree > 319 take a block each with its table in global memory (the paper's last
// bucket, fused_move_hub), and the passes over every vertex's row share such rows out among a
// block's warps (for_vertices); that code is built only with FUSED_HUBS. A level whose hubs need
// more table room than the host gave (hub_cap slots in all), or that has no row left for its
// communities, stops the kernel ("handover"); the host goes again with more room or continues
// from that level's graph with the launch-per-phase kernels.
//
// Needs thread-block clusters (sm_90). Tunables: FUSED_CLUSTER (blocks, 8 is portable),
// FUSED_THREADS (threads per block; the one-block kernel is compiled with its own).

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

#ifndef FUSED_THREADS
#define FUSED_THREADS 1024
#endif
#ifndef FUSED_CLUSTER
#define FUSED_CLUSTER 8
#endif
#ifndef FUSED_HUBS
#define FUSED_HUBS 1
#endif
#define FUSED_MOVE_BUCKETS (FUSED_HUBS ? 7 : 6)  // the buckets placed by the level start's scan
#define FUSED_WARPS (FUSED_THREADS / 32)
#define FUSED_MAX_DEGREE 319
#define FUSED_MAX_BATCHES 64
#define FUSED_PART 8
static_assert(FUSED_WARPS >= FUSED_PART, "a block reduces or scans each of its FUSED_PART values in a warp of its own");
#define FUSED_STAT_HEAD 9
#define FUSED_STAT_W 8
#define FUSED_HEAD_BYTES 128  // the stats header's device copy at the start of work (fused_stats)
#define FUSED_DONE 1
#define FUSED_HANDOVER 2
#define FUSED_NO_ROOM 3
#define FUSED_SOLO 4  // the cluster kernel's levels are done; louvain_fused_solo goes on
#define FUSED_MID 5   // the first cluster kernel's levels are done; the one built with FUSED_RESUME goes on
#ifndef FUSED_RESUME
#define FUSED_RESUME 0
#endif
// Whether the build reads level 0's one weight from shared memory where every stored entry has it
// (an unweighted graph's): the first cluster kernel without hubs, the one build that runs level 0
// of the graphs it takes (the others would only carry the test).
#define FUSED_UNIFORM (!FUSED_RESUME && !FUSED_HUBS)

// The fused kernels' phases run on a team of NB blocks, the whole grid: the cluster (NB =
// FUSED_CLUSTER) or the one block of louvain_fused_solo (NB = 1); a block's rank is blockIdx.x.

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ u64 global_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// x^2 (x >= 0, below 2^60) added to three 40-bit limbs at acc[0..2].
__device__ __forceinline__ void add_square(i64* acc, i64 x) {
    const u64 u = (u64)x, lo = u * u, hi = __umul64hi(u, u);
    const u64 M = (1ULL << 40) - 1;
    acc[0] += (i64)(lo & M);
    acc[1] += (i64)((lo >> 40) | ((hi & 0xffffULL) << 24));
    acc[2] += (i64)(hi >> 16);
}

// Q of Eq. (1) from the internal weight and the limbs of sum_c a_c^2 (all fixed point).
__device__ __forceinline__ double fused_modularity(i64 internal, const i64* limbs, i64 two_m, double gamma) {
    if (two_m <= 0) return 0.0;
    const double t = (double)two_m;
    const double sq = ((double)limbs[2] * 1099511627776.0 + (double)limbs[1]) * 1099511627776.0 + (double)limbs[0];
    return (double)internal / t - gamma * (sq / t / t);
}

// The warp's sum (or maximum) of x >= 0, the sum below 2^63, by 32-bit warp reductions (one
// instruction each; a 64-bit shuffle tree is ten shuffles and five adds): the sum in three
// 22-bit pieces, whose sums over 32 lanes cannot overflow; the maximum by its high word, then
// the low word among the lanes that have that high word.
__device__ __forceinline__ i64 warp_reduce(i64 x, bool is_max) {
    const u64 u = (u64)x;
    if (is_max) {
        const unsigned int hi = __reduce_max_sync(FULL_MASK, (unsigned int)(u >> 32));
        const unsigned int lo = __reduce_max_sync(FULL_MASK, (unsigned int)(u >> 32) == hi ? (unsigned int)u : 0u);
        return (i64)(((u64)hi << 32) | lo);
    }
    constexpr u64 M = (1ULL << 22) - 1;
    const u64 a = __reduce_add_sync(FULL_MASK, (unsigned int)(u & M));
    const u64 b = __reduce_add_sync(FULL_MASK, (unsigned int)((u >> 22) & M));
    const u64 c = __reduce_add_sync(FULL_MASK, (unsigned int)(u >> 44));
    return (i64)(a + (b << 22) + (c << 44));
}

// Block-wide sums of v[0..K) (slots in max_mask take the maximum; every value >= 0); the block's
// values go to part_out[blockIdx.x * FUSED_PART + k]. A warp whose values are all 0 skips its
// reductions. The second stage gives each value a warp of its own (as block_scan's does): warp 0
// had taken them one after another, a chain of K reductions that every level start, sweep end
// and aggregation waited for. H100, the same decisions: 4elt's kernels took 846 to 850 us against
// 865 to 870, delaunay k=14 (unit weights) 1,104 against 1,119 to 1,126, rgg k=14 1,184 to 1,186
// against 1,197 to 1,205, most of it on the levels of one block.
template <int K>
__device__ __forceinline__ void block_partials(i64 (&v)[FUSED_PART], unsigned int max_mask, i64* part_out,
                                               i64 (*s_red)[FUSED_PART]) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    bool any = false;
#pragma unroll
    for (int k = 0; k < K; ++k) any |= v[k] != 0;
    any = __any_sync(FULL_MASK, any);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const bool is_max = (max_mask >> k) & 1;
        const i64 x = any ? warp_reduce(v[k], is_max) : 0;
        if (lane == 0) s_red[warp][k] = x;
    }
    __syncthreads();
    if (warp < K) {  // value k across the warps, in the lanes of warp k (0 is the identity of both)
        const i64 x = warp_reduce(lane < FUSED_WARPS ? s_red[lane][warp] : 0, (max_mask >> warp) & 1);
        if (lane == 0) part_out[blockIdx.x * FUSED_PART + warp] = x;
    }
    __syncthreads();
}

// Team-wide value k of the partials written by block_partials (sum, or maximum).
template <int NB>
__device__ __forceinline__ i64 cluster_value(const i64* part, int k, bool is_max) {
    i64 acc = part[k];
#pragma unroll  // the blocks' loads in flight together: one round trip, not NB
    for (int b = 1; b < NB; ++b) {
        const i64 o = part[b * FUSED_PART + k];
        acc = is_max ? (o > acc ? o : acc) : acc + o;
    }
    return acc;
}

// Team-wide exclusive scan of K values per item over items [0, n), in two passes around a
// barrier. Each thread owns the contiguous chunk [lo, hi) of ceil(n / (NB FUSED_THREADS)) items.
// Pass 1 (scan_local) sums the chunk, scans the sums across the block into the thread's offset
// `pre` and writes the block's totals to part_out; pass 2 (scan_offsets, then a walk of the
// chunk) adds the totals of the blocks before it.
template <int NB>
__device__ __forceinline__ void scan_chunk(i64 n, i64& lo, i64& hi) {
    constexpr i64 T = (i64)FUSED_THREADS * NB;
    const i64 chunk = (n + T - 1) / T;
    const i64 t = (i64)blockIdx.x * FUSED_THREADS + threadIdx.x;
    lo = t * chunk < n ? t * chunk : n;
    hi = lo + chunk < n ? lo + chunk : n;
}

// Block-wide exclusive scan of s[0..K): pre[k] = sum of s[k] over the block's earlier threads;
// the block's totals to part_out.
template <int K>
__device__ __forceinline__ void block_scan(const i64 (&s)[K], i64 (&pre)[K], i64* part_out, i64 (*s_red)[FUSED_PART]) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        i64 inc = s[k];
        for (int off = 1; off < 32; off <<= 1) {
            const i64 o = __shfl_up_sync(FULL_MASK, inc, off);
            if (lane >= off) inc += o;
        }
        pre[k] = inc - s[k];
        if (lane == 31) s_red[warp][k] = inc;
    }
    __syncthreads();
    if (warp < K) {  // value k's scan across the warps, in the lanes of warp k
        i64 w = lane < FUSED_WARPS ? s_red[lane][warp] : 0;
        for (int off = 1; off < 32; off <<= 1) {
            const i64 o = __shfl_up_sync(FULL_MASK, w, off);
            if (lane >= off) w += o;
        }
        if (lane < FUSED_WARPS) s_red[lane][warp] = w;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < K; ++k) pre[k] += warp ? s_red[warp - 1][k] : 0;
    if (threadIdx.x == FUSED_THREADS - 1) {
#pragma unroll
        for (int k = 0; k < K; ++k) part_out[blockIdx.x * FUSED_PART + k] = s_red[FUSED_WARPS - 1][k];
    }
    __syncthreads();
}

template <int K, int NB, typename Get>
__device__ __forceinline__ void scan_local(i64 n, Get get, i64 (&pre)[K], i64* part_out, i64 (*s_red)[FUSED_PART]) {
    i64 lo, hi;
    scan_chunk<NB>(n, lo, hi);
    i64 s[K], x[K];
#pragma unroll
    for (int k = 0; k < K; ++k) s[k] = 0;
    for (i64 i = lo; i < hi; ++i) {
        get(i, x);
#pragma unroll
        for (int k = 0; k < K; ++k) s[k] += x[k];
    }
    block_scan<K>(s, pre, part_out, s_red);
}

// Pass 2, first half: `pre` becomes the thread's cluster-wide offset; `total` the scan's totals.
template <int K, int NB>
__device__ __forceinline__ void scan_offsets(const i64* part, i64 (&pre)[K], i64 (&total)[K]) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
        total[k] = 0;
#pragma unroll
        for (int b = 0; b < NB; ++b) {
            const i64 o = part[b * FUSED_PART + k];
            if (b < (int)blockIdx.x) pre[k] += o;
            total[k] += o;
        }
    }
}

// Pass 2, second half: put(i, prefix) for every item of the thread's chunk.
template <int K, int NB, typename Get, typename Put>
__device__ __forceinline__ void scan_walk(i64 n, Get get, Put put, i64 (&pre)[K]) {
    i64 lo, hi, x[K];
    scan_chunk<NB>(n, lo, hi);
    for (i64 i = lo; i < hi; ++i) {
        get(i, x);
        put(i, pre);
#pragma unroll
        for (int k = 0; k < K; ++k) pre[k] += x[k];
    }
}

// f(C(j), w) for the entries e = first + i stride (i < J) below end, of far end j and weight w:
// their J loads all in flight before the community lookups that depend on them (a weight f does
// not read is not loaded).
template <int J, class F>
__device__ __forceinline__ void entry_communities(const int* indices, const i64* wfix, const int* comm, i64 first,
                                                  i64 stride, i64 end, F f) {
    int x[J];
    i64 w[J];
#pragma unroll
    for (int i = 0; i < J; ++i) {
        const i64 e = first + i * stride;
        x[i] = e < end ? indices[e] : -1;
        w[i] = e < end ? wfix[e] : 0;
    }
#pragma unroll
    for (int i = 0; i < J; ++i) x[i] = x[i] >= 0 ? comm[x[i]] : -1;
#pragma unroll
    for (int i = 0; i < J; ++i)
        if (x[i] >= 0) f(x[i], w[i]);
}

// f(C(j), w) for every edge (v, j) of weight w, eight at a time.
template <class F>
__device__ __forceinline__ void row_communities(const i64* indptr, const int* indices, const i64* wfix,
                                                const int* comm, i64 v, F f) {
    const i64 s1 = indptr[v + 1];
    for (i64 e0 = indptr[v]; e0 < s1; e0 += 8) entry_communities<8>(indices, wfix, comm, e0, 1, s1, f);
}

// The internal weight of the rows of a warp's 32 consecutive vertices (all lanes call it, each
// with its own row [s0, s1) and community cv; lanes past the last vertex with an empty row at its
// end): the sum of w over their edges (u, j, w) with C(j) = C(u). The warp takes the rows' edges
// 32 consecutive at a time, J steps in flight, each lane finding its edge's row by a search over
// the lanes' row starts: coalesced loads, and a long row shared out among the lanes. The sweep's
// end takes it in the kernel built for hubs, on levels without them: there a row a thread left
// the warps waiting for their longest rows (H100, the same decisions: kron k=12's level 1 moved
// in 1,122 to 1,131 us against 1,495 to 1,505, its kernels took 5.21 to 5.25 ms against 5.53 to
// 5.57; kron k=13's level 1 in 560 against 767 us, its kernels 11.46 against 11.56 ms). In the
// kernel without hub code it made 4elt's level 0 move 35 us slower, its registers allocated
// otherwise, even where no warp took it (rows of more than 32 entries only).
template <int J>
__device__ __forceinline__ i64 warp_rows_internal(const int* indices, const i64* wfix, const int* comm, i64 s0,
                                                  i64 s1, int cv) {
    const int lane = threadIdx.x % 32;
    const i64 e_end = __shfl_sync(FULL_MASK, s1, 31);
    i64 sum = 0;
    for (i64 base = __shfl_sync(FULL_MASK, s0, 0); base < e_end; base += 32 * J) {
        int x[J], cu[J];
        i64 w[J];
#pragma unroll
        for (int j = 0; j < J; ++j) {
            const i64 e = base + j * 32 + lane;
            int at = 0;  // the last lane whose row starts at or before e
#pragma unroll
            for (int step = 16; step > 0; step >>= 1)
                if (__shfl_sync(FULL_MASK, s0, at + step) <= e) at += step;
            cu[j] = __shfl_sync(FULL_MASK, cv, at);
            x[j] = e < e_end ? indices[e] : -1;
            w[j] = e < e_end ? wfix[e] : 0;
        }
#pragma unroll
        for (int j = 0; j < J; ++j) x[j] = x[j] >= 0 ? comm[x[j]] : -1;
#pragma unroll
        for (int j = 0; j < J; ++j)
            if (x[j] >= 0 && x[j] == cu[j]) sum += w[j];
    }
    return sum;
}

// The team's vertices [0, n) in grid-stride order, a warp's 32 consecutive vertices at a time
// (warp-uniform trips): vertex(v, light) for each of this thread's vertices, light when its row
// has at most FUSED_MAX_DEGREE entries and the thread reads the row itself. A heavier row would
// hold the team up at the next barrier for as many round trips as it has groups of entries, so
// it goes to the block's queue instead, and after the loop the block's warps share the queued
// rows out in pieces of FUSED_PIECE entries: piece(v, e0, e1, acc), called on all 32 lanes of a
// warp (lane l reads entries e0 + l, e0 + l + 32, ..., eight loads in flight), may add to the
// row's two accumulators acc (shared memory, zero at first); once every piece is done,
// finish(v, acc) runs on one thread per row. Rows the queue has no room for go piece by piece
// to the warp that met them. Every thread of the block calls for_vertices.
#define FUSED_PIECE 256
#define FUSED_HEAVY_QUEUE 128
static_assert(FUSED_HEAVY_QUEUE == 4 * 32, "for_vertices scans the queue four rows a lane");
struct HeavyQueue {
    i64 start[FUSED_HEAVY_QUEUE], end[FUSED_HEAVY_QUEUE], acc[FUSED_HEAVY_QUEUE][2], wacc[FUSED_WARPS][2];
    int v[FUSED_HEAVY_QUEUE], pre[FUSED_HEAVY_QUEUE + 1], count;
};

template <class Vertex, class Piece, class Finish>
__device__ __forceinline__ void for_vertices(const i64* indptr, i64 n, i64 gtid, i64 T, HeavyQueue& hq, Vertex vertex,
                                             Piece piece, Finish finish) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (threadIdx.x == 0) hq.count = 0;
    __syncthreads();
    for (i64 base = gtid - lane; base < n; base += T) {
        const i64 v = base + lane;
        bool heavy = false;
        i64 s0 = 0, s1 = 0;
        if (v < n) {
            s0 = indptr[v];
            s1 = indptr[v + 1];
            heavy = s1 - s0 > FUSED_MAX_DEGREE;
            vertex(v, !heavy);
        }
        if (!__any_sync(FULL_MASK, heavy)) continue;
        int slot = FUSED_HEAVY_QUEUE;
        if (heavy) {
            slot = atomicAdd(&hq.count, 1);
            if (slot < FUSED_HEAVY_QUEUE) {
                hq.v[slot] = (int)v;
                hq.start[slot] = s0;
                hq.end[slot] = s1;
                hq.acc[slot][0] = hq.acc[slot][1] = 0;
            }
        }
        for (unsigned int m = __ballot_sync(FULL_MASK, heavy && slot >= FUSED_HEAVY_QUEUE); m; m &= m - 1) {
            const int j = __ffs(m) - 1;
            const i64 e0 = __shfl_sync(FULL_MASK, s0, j), e1 = __shfl_sync(FULL_MASK, s1, j);
            if (lane == 0) hq.wacc[warp][0] = hq.wacc[warp][1] = 0;
            __syncwarp();
            for (i64 e = e0; e < e1; e += FUSED_PIECE) piece(base + j, e, e + FUSED_PIECE < e1 ? e + FUSED_PIECE : e1, hq.wacc[warp]);
            __syncwarp();
            if (lane == 0) finish(base + j, hq.wacc[warp]);
            __syncwarp();
        }
    }
    __syncthreads();
    const int q = hq.count < FUSED_HEAVY_QUEUE ? hq.count : FUSED_HEAVY_QUEUE;
    if (q == 0) return;  // (block-uniform)
    if (warp == 0) {  // the queued rows' first pieces: a scan over 4 rows a lane
        int c[4], t = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int i = lane * 4 + k;
            c[k] = i < q ? (int)((hq.end[i] - hq.start[i] + FUSED_PIECE - 1) / FUSED_PIECE) : 0;
            t += c[k];
        }
        int inc = t;
        for (int off = 1; off < 32; off <<= 1) {
            const int o = __shfl_up_sync(FULL_MASK, inc, off);
            if (lane >= off) inc += o;
        }
        int at = inc - t;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if (lane * 4 + k <= q) hq.pre[lane * 4 + k] = at;
            at += c[k];
        }
        if (lane == 31) hq.pre[FUSED_HEAVY_QUEUE] = inc;
    }
    __syncthreads();
    const int total = hq.pre[FUSED_HEAVY_QUEUE];
    for (int pc = warp; pc < total; pc += FUSED_WARPS) {
        int lo = 0, hi = q;  // the row: the last with pre <= pc
        while (hi - lo > 1) {
            const int mid = (lo + hi) / 2;
            if (hq.pre[mid] <= pc)
                lo = mid;
            else
                hi = mid;
        }
        const i64 e = hq.start[lo] + (i64)(pc - hq.pre[lo]) * FUSED_PIECE;
        piece((i64)hq.v[lo], e, e + FUSED_PIECE < hq.end[lo] ? e + FUSED_PIECE : hq.end[lo], hq.acc[lo]);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < q; i += FUSED_THREADS) finish((i64)hq.v[i], hq.acc[i]);
    __syncthreads();  // the queue is free again
}

// f(C(j), w) for the entries of a piece [e0, e1) of a row that this lane reads (for_vertices).
template <class F>
__device__ __forceinline__ void piece_communities(const int* indices, const i64* wfix, const int* comm, i64 e0, i64 e1,
                                                  F f) {
    entry_communities<FUSED_PIECE / 32>(indices, wfix, comm, e0 + threadIdx.x % 32, 32, e1, f);
}

// computeMove bucket of a degree (MOVE_BUCKETS of mgmatch/algorithms/louvain.py; 6: > 319).
__device__ __forceinline__ int move_bucket(i64 d) {
    return d <= 4 ? 0 : d <= 8 ? 1 : d <= 16 ? 2 : d <= 32 ? 3 : d <= 84 ? 4 : d <= 319 ? 5 : 6;
}

template <int G>
__device__ __forceinline__ void group_sync() {
    if (G <= 32)
        __syncwarp();
    else
        __syncthreads();
}

// The lanes of this lane's group of G lanes (G <= 32) in its warp.
template <int G>
__device__ __forceinline__ unsigned int group_lanes() {
    if constexpr (G >= 32)
        return FULL_MASK;
    else
        return ((1u << G) - 1u) << (threadIdx.x % 32 / G * G);
}

// group_reduce over G lanes; a group larger than a warp combines its warps through shared memory
// (the result is valid in the group's first thread). Only (best, best_c) go down the shuffle
// tree: e_{i->C(i)} is in one slot of the vertex's table (or one lane's sum), so one lane of the
// group holds it, and a ballot and a shuffle take it from there (the tree's shuffles are what
// bounds this step, every warp of the block doing the same).
template <int G>
__device__ __forceinline__ void fused_group_reduce(double& best, int& best_c, i64& e_own, double* s_best, int* s_bc,
                                                   i64* s_eo) {
    constexpr int W = G < 32 ? G : 32;
    const unsigned int holder = __ballot_sync(FULL_MASK, e_own != 0) & group_lanes<W>();
    const i64 e = __shfl_sync(FULL_MASK, e_own, holder ? __ffs(holder) - 1 : 0);
    e_own = holder ? e : 0;
#pragma unroll
    for (int off = W / 2; off > 0; off >>= 1) {
        const double ob = __shfl_xor_sync(FULL_MASK, best, off, W);
        const int oc = __shfl_xor_sync(FULL_MASK, best_c, off, W);
        better(best, best_c, ob, oc);
    }
    if constexpr (G > 32) {
        const int warp = threadIdx.x / 32;
        if (threadIdx.x % 32 == 0) {
            s_best[warp] = best;
            s_bc[warp] = best_c;
            s_eo[warp] = e_own;
        }
        __syncthreads();
        if (threadIdx.x % G == 0) {
            for (int w = 1; w < G / 32; ++w) {
                better(best, best_c, s_best[warp + w], s_bc[warp + w]);
                e_own += s_eo[warp + w];
            }
        }
        __syncthreads();
    }
}

// One vertex of the batch order, as a group of computeMove loads it at the start of a round: one
// 16-byte load, where a vertex, its edge offset, its degree and k_i had been four loads (each
// a round trip to L2 that all lanes of the round wait for, and on level 0 of 4elt the [5, 8]
// batches' rounds are bound by the SMs' L2 traffic). The id takes the low 20 bits of v_deg
// (the fused kernel takes at most 2^20 vertices, FUSED_MAX_VERTICES), the degree the high 12,
// saturated at 4095 (fused_move_hub, the only taker of degrees above 319, reads it off indptr);
// the edge offset fits 32 bits (at most LouvainConfig.fused_max_edges, 2^22 stored edges by
// default). On an H100, with
// the lazy singleton loads of score_slots and the staged scan totals (scan_partials), 4elt's
// kernels took 905 to 908 us against 948, delaunay k=14's 911 against 943, rgg k=14's 1,216
// against 1,266 and kron k=12's 5,550 against 5,664, the same decisions; the three separate
// arrays alone (vertex, offset and degree) in one load took 4elt to 918 us.
struct __align__(16) BatchVertex {
    i64 k;  // k_i (fixed point)
    unsigned int start, v_deg;
    __device__ int v() const { return (int)(v_deg & 0xFFFFFu); }
    __device__ int deg() const { return (int)(v_deg >> 20); }
};
__device__ __forceinline__ BatchVertex batch_vertex(i64 k, i64 start, i64 v, i64 d) {
    return BatchVertex{k, (unsigned int)start, (unsigned int)v | ((unsigned int)(d < 4095 ? d : 4095) << 20)};
}

// Moves of the previous batch that the other buffer still lacks. A thread holds the moves it
// decided in its first FUSED_PENDING rounds in registers and applies them with atomics alone;
// the moves of later rounds (batch positions from `from` on) are read back off the buffers.
#ifndef FUSED_PENDING
#define FUSED_PENDING 2
#endif
struct Pending {
    int v[FUSED_PENDING], o[FUSED_PENDING], c[FUSED_PENDING];  // c < 0: no move held
    i64 k[FUSED_PENDING];
    const BatchVertex* verts;
    int from, nv;
};

// Apply the held (and the read-back) moves to buffer (comm_old, csize_old, afix_old); comm_new is
// the buffer that has them.
template <int NB>
__device__ __forceinline__ void fused_catch_up(Pending& pend, const int* comm_new, int* comm_old, int* csize_old,
                                               i64* afix_old) {
#pragma unroll
    for (int j = 0; j < FUSED_PENDING; ++j) {
        if (pend.c[j] >= 0) move_vertex<NB == 1>(pend.v[j], pend.o[j], pend.c[j], pend.k[j], comm_old, csize_old, afix_old);
        pend.c[j] = -1;
    }
    for (i64 i = pend.from + (i64)blockIdx.x * FUSED_THREADS + threadIdx.x; i < pend.nv;
         i += (i64)FUSED_THREADS * NB) {
        const BatchVertex bv = pend.verts[i];
        const int v = bv.v();
        const int c = comm_new[v], o = comm_old[v];
        if (c != o) move_vertex<NB == 1>(v, o, c, bv.k, comm_old, csize_old, afix_old);
    }
    pend.nv = 0;
}

// Slots first, first + stride, ... (N of them) of a table of p slots into kc, kw (EMPTY_SLOT past
// p); with CLEAR, each left empty after it is read.
template <bool CLEAR, int N>
__device__ __forceinline__ void load_slots(int* keys, i64* vals, unsigned int p, unsigned int first,
                                           unsigned int stride, int (&kc)[N], i64 (&kw)[N]) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
        const unsigned int s = first + j * stride;
        kc[j] = EMPTY_SLOT;
        kw[j] = 0;
        if (s < p) {
            kc[j] = keys[s];
            kw[j] = vals[s];
            if (CLEAR) {
                keys[s] = EMPTY_SLOT;
                vals[s] = 0;
            }
        }
    }
}

// The candidates of N table slots (community kc[j] >= 0, weight kw[j]) into this lane's best
// move (Algorithm 2, lines 14-17): the state of every community in them loaded at once, then
// e_{i->C(i)} from the vertex's own community, the best score of the others by the singleton rule.
template <int N>
__device__ __forceinline__ void score_slots(const int (&kc)[N], const i64 (&kw)[N], int own, bool singleton, double gk,
                                            const int* csize, const i64* afix, double& best, int& best_c, i64& e_own) {
    int ks[N];
    i64 ka[N];
#pragma unroll
    for (int j = 0; j < N; ++j) {
        ks[j] = 0;
        ka[j] = 0;
        if (kc[j] >= 0 && kc[j] != own) {
            if (singleton && kc[j] > own) ks[j] = csize[kc[j]];  // read only by the singleton rule
            ka[j] = afix[kc[j]];
        }
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if (kc[j] < 0) continue;
        if (kc[j] == own) {
            e_own = kw[j];
            continue;
        }
        if (singleton && ks[j] == 1 && kc[j] > own) continue;  // singleton rule, section 4
        better(best, best_c, move_score(kw[j], gk, ka[j]), kc[j]);
    }
}

// decide() on the reduced candidates, in the group's first thread: a move goes to buffer w at
// once, and is held in `pend` (slot `round`) for the other buffer.
template <int NB>
__device__ __forceinline__ void fused_decide(int v, int own, i64 kv, i64 a_own, double gk, double best, int best_c,
                                             i64 e_own, int round, int* comm_w, int* csize_w, i64* afix_w,
                                             Pending& pend) {
    const double stay = move_score(e_own, gk, a_own - kv);
    const int c = (best_c >= 0 && best > stay) ? best_c : own;
    if (c == own) return;
    move_vertex<NB == 1>(v, own, c, kv, comm_w, csize_w, afix_w);
#pragma unroll
    for (int j = 0; j < FUSED_PENDING; ++j) {
        if (j == round) {
            pend.v[j] = v;
            pend.o[j] = own;
            pend.c[j] = c;
            pend.k[j] = kv;
        }
    }
}

// computeMove (Algorithm 2) for one batch: a group of G threads per vertex with a TABLE-slot
// table in shared memory, as compute_move_group (G <= 32) and compute_move_block (G = 128, the
// paper's block per vertex for [85, 319]) do; where 2G covers the bucket's degrees (one or two
// edges per lane: degrees up to 32) the lanes sum their weights per community by shuffles instead. The
// vertices of the batch go round-robin to the cluster's blocks, so a small batch occupies a warp
// or two of every block and the other warps skip the round. Decisions read buffer r (comm_r,
// csize_r, afix_r); a move is written at once to buffer w, which nothing reads during the
// batch, and held in `pend` for the other buffer.
//
// The same decisions as scan_table and decide, with the global loads of a round issued in as
// few dependent steps as possible (each step is a round trip to L2): the batch's vertices with
// their edge offsets, degrees and k_i (verts, one BatchVertex each, in batch order); the edges of a lane
// (at most MAXDEG / G) and the vertex's own state; their communities; then, after hashing, the
// state of every community in the lane's table slots (or its sums) at once.
template <int NB, int G, int TABLE, int MAXDEG>
__device__ __forceinline__ void fused_move(const int* indices, const i64* wfix, const int* comm_r,
                                           const int* csize_r, const i64* afix_r, int* comm_w, int* csize_w,
                                           i64* afix_w, const BatchVertex* verts, int nv,
                                           const int* s_ts, double gamma_over_2m, char* s_tables, double* s_best,
                                           int* s_bc, i64* s_eo, Pending& pend, const i64 uw) {
    constexpr int GROUPS = FUSED_THREADS / G;
    constexpr int EDGES = (MAXDEG + G - 1) / G;
    constexpr bool LANE_SUMS = EDGES <= 2;  // at most two edges per lane: no table (see below)
    constexpr int SLOTS = LANE_SUMS ? EDGES : (TABLE + G - 1) / G;
    i64* vals = (i64*)s_tables + (threadIdx.x / G) * TABLE;
    int* keys = (int*)((i64*)s_tables + GROUPS * TABLE) + (threadIdx.x / G) * TABLE;
    const int lane = threadIdx.x % G;
    const int rank = blockIdx.x;
    const int stride = GROUPS * NB;
    // A warp's groups take consecutive vertices of the batch, and consecutive warps go to different
    // blocks (so that a small batch still spreads over the team). Before, consecutive groups went
    // to different blocks, and a warp's groups read eight lines for what is now one or two: the
    // batch vertices, their own communities and, on graphs numbered with locality, their rows.
    // H100, the same decisions: 4elt's kernels took 892 us against 909 to 910, delaunay k=14's
    // 904 against 916, rgg k=14's 1,208 against 1,219, kron k=12's 5,226 against 5,239.
    constexpr int GPW = G < 32 ? 32 / G : 1;  // groups a warp
    const int first = G < 32 ? ((int)(threadIdx.x / 32) * NB + rank) * GPW + (int)(threadIdx.x % 32) / G
                             : (int)(threadIdx.x / G) * NB + rank;
    const int rounds = (nv + stride - 1) / stride;
    for (int round = 0; round < rounds; ++round) {
        const int idx = round * stride + first;
        const bool active = idx < nv;
        // A warp (a block, for G = 128) none of whose groups has a vertex skips the round: on a
        // small level most have none, and their idle instructions held up the working warps.
        if (G <= 32 ? round * stride + ((int)(threadIdx.x / 32) * NB + rank) * GPW >= nv
                    : round * stride + rank >= nv)
            continue;
        int v = 0, deg = 0, own = 0;
        i64 start = 0, kv = 0;
        if (active) {
            const BatchVertex bv = verts[idx];
            v = bv.v();
            deg = bv.deg();
            start = bv.start;
            kv = bv.k;
        }
        if (active) own = comm_r[v];
        int cu[EDGES];
        i64 wu[EDGES];
#pragma unroll
        for (int j = 0; j < EDGES; ++j) {
            const int e = lane + j * G;
            cu[j] = -1;
            wu[j] = 0;
            if (e < deg) {
                cu[j] = indices[start + e];
                wu[j] = uw ? uw : wfix[start + e];
            }
        }
#pragma unroll
        for (int j = 0; j < EDGES; ++j)
            if (cu[j] >= 0) cu[j] = comm_r[cu[j]];
        int cs_own = 0;
        i64 a_own = 0;
        if (active) {
            cs_own = csize_r[own];
            a_own = afix_r[own];
        }
        int kc[SLOTS];
        i64 kw[SLOTS];
        if constexpr (LANE_SUMS && EDGES == 1) {
            // The group's lanes with edges into one community (__match_any_sync, within the group)
            // sum their weights by shuffles, and the first of them holds (community, weight) as
            // a table slot would: the same (community, weight) pairs as the table, without its
            // shared-memory compare-and-swap loops, which cost more than the whole sum.
            const int wl = threadIdx.x % 32, base = wl / G * G;
            const unsigned int peers = __match_any_sync(FULL_MASK, (unsigned int)cu[0]) & group_lanes<G>();
            i64 sum = 0;
#pragma unroll
            for (int k = 0; k < G; ++k) {
                const i64 w = __shfl_sync(FULL_MASK, wu[0], base + k);
                if ((peers >> (base + k)) & 1) sum += w;
            }
            kc[0] = cu[0] >= 0 && __ffs(peers) - 1 == wl ? cu[0] : EMPTY_SLOT;
            kw[0] = sum;
        } else if constexpr (LANE_SUMS) {
            // Two edges a lane (lane and lane + G): the group's edges are broadcast one after
            // another, each lane sums those into its own edges' communities, and the edge of
            // lowest index into a community holds (community, weight), as above. A group of half
            // the lanes per vertex: bucket [5, 8] in groups of 4, whose rounds take twice the
            // vertices of groups of 8.
            const int base = threadIdx.x % 32 / G * G;
            bool head[EDGES];
#pragma unroll
            for (int i = 0; i < EDGES; ++i) {
                head[i] = cu[i] >= 0;
                kw[i] = 0;
            }
#pragma unroll
            for (int k = 0; k < G; ++k) {
#pragma unroll
                for (int j = 0; j < EDGES; ++j) {
                    const int c = __shfl_sync(FULL_MASK, cu[j], base + k);
                    const i64 w = __shfl_sync(FULL_MASK, wu[j], base + k);
#pragma unroll
                    for (int i = 0; i < EDGES; ++i) {
                        if (c == cu[i]) {
                            kw[i] += w;
                            if (k + j * G < lane + i * G) head[i] = false;
                        }
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < EDGES; ++i) kc[i] = head[i] ? cu[i] : EMPTY_SLOT;
        } else {
            const unsigned int p = active ? (unsigned int)s_ts[deg] : 2u;
            for (unsigned int s = lane; s < p; s += G) {
                keys[s] = EMPTY_SLOT;
                vals[s] = 0;
            }
            group_sync<G>();
#pragma unroll
            // (shared_add on one block and in the hub builds; the cluster builds without hubs keep
            // the 64-bit atomic, since shared_add there moved their register allocation and slowed
            // their level-0 aggregation: rgg k=14 121 against 107 us, delaunay k=18 1.32 against
            // 1.18 ms on an H200)
            for (int j = 0; j < EDGES; ++j)
                if (cu[j] >= 0) hash_add<true, NB == 1 || FUSED_HUBS>(keys, vals, p, cu[j], wu[j]);
            group_sync<G>();
            load_slots<false>(keys, vals, p, lane, G, kc, kw);
        }
        const double gk = __dmul_rn((double)kv, gamma_over_2m);
        double best = NEG_INF;
        int best_c = -1;
        i64 e_own = 0;
        score_slots(kc, kw, own, cs_own == 1, gk, csize_r, afix_r, best, best_c, e_own);
        fused_group_reduce<G>(best, best_c, e_own, s_best, s_bc, s_eo);
        if (active && lane == 0)
            fused_decide<NB>(v, own, kv, a_own, gk, best, best_c, e_own, round, comm_w, csize_w, afix_w, pend);
        group_sync<G>();
    }
    pend.verts = verts;
    pend.from = FUSED_PENDING * stride;
    pend.nv = nv;
}

// computeMove for a batch of the bucket > 319: a block per vertex with its table in global memory
// (section 4.1), the batch's vertices round-robin over the team's blocks. Each block has a table
// (hkeys, hvals) of ts[the level's largest degree] slots, empty between vertices: the level start
// clears it, and the block clears the slots it scans (the reduction's barrier orders that before
// the next vertex's hashing). The same decisions as fused_move (the same sums, the same rules).
template <int NB>
__device__ __forceinline__ void fused_move_hub(const i64* indptr, const int* indices, const i64* wfix, const int* comm_r,
                                               const int* csize_r, const i64* afix_r, int* comm_w, int* csize_w,
                                               i64* afix_w, const BatchVertex* verts,
                                               int nv, i64 n, const int* ts, int* hkeys, i64* hvals,
                                               double gamma_over_2m, double* s_best, int* s_bc, i64* s_eo,
                                               Pending& pend) {
    constexpr int K = 4;  // loads in flight per thread
    for (int round = 0, idx = blockIdx.x; idx < nv; ++round, idx += NB) {
        const BatchVertex bv = verts[idx];
        const int v = bv.v();
        const i64 start = bv.start, end = indptr[v + 1];
        const i64 deg = end - start;
        const int own = comm_r[v];
        const unsigned int p = (unsigned int)ts[deg < n ? deg : n];
        for (i64 e0 = start + threadIdx.x; e0 < end; e0 += K * FUSED_THREADS)
            entry_communities<K>(indices, wfix, comm_r, e0, FUSED_THREADS, end,
                                 [&](int c, i64 w) { hash_add(hkeys, hvals, p, c, w); });
        __syncthreads();
        const i64 kv = bv.k;
        const bool singleton = csize_r[own] == 1;
        const double gk = __dmul_rn((double)kv, gamma_over_2m);
        double best = NEG_INF;
        int best_c = -1;
        i64 e_own = 0;
        for (unsigned int s0 = threadIdx.x; s0 < p; s0 += K * FUSED_THREADS) {
            int kc[K];
            i64 kw[K];
            load_slots<true>(hkeys, hvals, p, s0, FUSED_THREADS, kc, kw);
            score_slots(kc, kw, own, singleton, gk, csize_r, afix_r, best, best_c, e_own);
        }
        fused_group_reduce<FUSED_THREADS>(best, best_c, e_own, s_best, s_bc, s_eo);
        if (threadIdx.x == 0)
            fused_decide<NB>(v, own, kv, afix_r[own], gk, best, best_c, e_own, round, comm_w, csize_w, afix_w, pend);
    }
    pend.verts = verts;
    pend.from = FUSED_PENDING * NB;
    pend.nv = nv;
}

// The whole Louvain method (Algorithms 1 to 3, level after level) on one cluster; see above.
//
// Input: the level-0 CSR (indptr0, indices0, float64 weights0) of n0 vertices and nnz0 entries;
// indptr0 has entries of indptr0_bytes bytes (4: the cluster's kernel widens it into indptr_l).
// One level-graph buffer (indptr_l, indices_l, wfix_l) holds the level's graph, and each
// aggregation writes the next level's over it (level 0's edge lists are the input's, its
// fixed-point weights the buffer's); loop_l holds the level's self-loops. ts: table sizes by
// degree (the smallest prime above 1.5 d, at least max(n0, 320) + 1 entries).
// work: scratch of work_bytes bytes: a copy of the stats header (FUSED_HEAD_BYTES), for the next
// kernel to read on the device, then the arrays carved below; table_cap: slots of the aggregation's tables;
// hub_cap: slots of the hub tables (fused_move_hub).
// Output, in pinned host memory (the host reads it there once the kernels are done):
// level_rows, a row of n0 entries for each written level, the community of every original vertex
// after that level (a level that would need more than row_cap rows, or whose record would pass
// record_cap, is handed over); stats, zero at first: a header (status, levels written, the
// level/n/nnz of a handover, the records written, nanoseconds, the weight scale, the hub table
// slots a handed-over level needed) and one record per level processed (n, nnz, sweeps,
// modularity bits, nanoseconds moving and aggregating, 1 if the level was aggregated and
// written, 2 if it was written without aggregating: the first level, when nothing moved; and the
// team that ran it, its blocks in the low 32 bits and their threads in the high).
// solo_off, solo_cap, solo_edges: see louvain_fused_solo and fused_levels; mid_vertices: see
// fused_levels. (The host launches the kernels through the driver with these 32 parameters
// packed as 8-byte slots, _fused_slots in mgmatch/gpu/louvain.py: a launch through CuPy took
// about 18 us of host time before the kernel could start. With that and the run's buffers
// allocated without array objects, a 4elt call's host time fell from 111-115 to 92-94 us on
// an H200 host, its kernels' 1,002 us unchanged. The kernels taking them as one struct instead
// moved 4elt's level 0 in 513 us against 502 and rgg k=14's in 928 against 903, their registers
// allocated otherwise.)
#define FUSED_ARGS                                                                                         \
    const void *indptr0, int indptr0_bytes, const int *indices0, const double *weights0, int n0, i64 nnz0, \
        i64 *indptr_l, int *indices_l, i64 *wfix_l, i64 *loop_l, const int *ts, char *work,                \
        i64 work_bytes, i64 table_cap, i64 hub_cap, double resolution, double t_bin, double t_final,       \
        double t_rel, int bin_vertices, int fixed_bits, int max_levels, int max_iterations, int slices, int slice_min,   \
        int record_cap, int row_cap, i64 *level_rows, i64 *stats, i64 solo_off, i64 solo_cap, i64 solo_edges, \
        i64 mid_vertices
#define FUSED_ARG_NAMES                                                                                    \
    indptr0, indptr0_bytes, indices0, weights0, n0, nnz0, indptr_l, indices_l, wfix_l, loop_l, ts,         \
        work, work_bytes, table_cap, hub_cap, resolution, t_bin, t_final, t_rel, bin_vertices, fixed_bits, \
        max_levels, max_iterations, slices, slice_min, record_cap, row_cap, level_rows, stats, solo_off,   \
        solo_cap, solo_edges, mid_vertices

// The run's state carried from the cluster's levels to block 0's.
struct FusedRun {
    double scale;
    i64 nnz, hub_need;
    int level, written, records, status, n;
};

// The kernel's static shared memory (one set, whichever team runs).
struct FusedShared {
    i64 red[FUSED_WARPS][FUSED_PART];
    i64 part[FUSED_CLUSTER * FUSED_PART];
    i64 spart[FUSED_CLUSTER * FUSED_PART];
    i64 eo[FUSED_WARPS];
    double best[FUSED_WARPS];
    int bc[FUSED_WARPS];
    int ts[FUSED_MAX_DEGREE + 1];
    int bstart[FUSED_MAX_BATCHES + 1];
    int bbucket[FUSED_MAX_BATCHES];
    int bfirst[7], beff[7], batches;
    // the level's vertices of degree > 319 and this block's table for them (kept here rather than
    // in registers through the sweeps, which most levels spend without them)
    i64 hubs;
    i64 uw;  // the level's one weight when every stored entry has it (level 0 of an unweighted graph), else 0
    int *hub_keys, *hub_keys0;  // (0: the tables' start)
    i64 *hub_vals, *hub_vals0;
#if FUSED_HUBS
    HeavyQueue hq;
#endif
};

// Where one level's arrays lie in the one-block kernel's shared memory, after its partials
// (each array 16-byte aligned): the CSR with fixed-point weights and self-loops, then k_i (which the
// level start packs into the batch order) and the state a batch reads (the two buffers of C,
// comSize and a_c, the batch order). Returns the bytes in
// all. (The aggregation's arrays stay in global memory: on 4elt's level 2 its hashing took 46,000
// cycles with its tables in shared memory against 33,000 in global memory, and 35,000 with only
// its offsets, counts and new ids in shared memory.)
enum { SOLO_INDPTR, SOLO_INDICES, SOLO_WFIX, SOLO_LOOP, SOLO_KFIX, SOLO_COMM, SOLO_CSIZE, SOLO_AFIX, SOLO_ORDER,
       SOLO_ARRAYS };
__device__ __forceinline__ i64 solo_layout(i64 n, i64 nnz, i64 (&off)[SOLO_ARRAYS]) {
    const i64 bytes[SOLO_ARRAYS] = {8 * (n + 1), 4 * nnz, 8 * nnz, 8 * n, 8 * n, 8 * n, 8 * n, 16 * n, 16 * n};
    i64 at = 2 * 16 * FUSED_PART;  // part and spart, two slots each
#pragma unroll
    for (int k = 0; k < SOLO_ARRAYS; ++k) {
        off[k] = at;
        at += (bytes[k] + 15) / 16 * 16;
    }
    return at;
}

// The level loop on a team of NB blocks. The cluster's team (NB = FUSED_CLUSTER) returns true
// at the first level of at most solo_edges stored edges whose graph fits one block's shared
// memory (solo_layout <= solo_cap); louvain_fused_solo runs the remaining levels on one block
// (NB = 1), the level's CSR and the state a batch reads in shared memory and its barriers
// __syncthreads. The last levels of a run are small (4elt: 458 vertices and fewer from level 2
// on, 8 sweeps of 9 batches on level 2): on the cluster each batch waits on round trips
// to L2 and a cluster barrier, which one block does in shared memory. On larger levels one
// block is slower: its batches have several rounds, and the aggregation one SM's atomics.
// Before that, a cluster kernel built without FUSED_RESUME stops with status FUSED_MID before
// the first level after level 0 of at most mid_vertices vertices (none if negative) that one
// block does not take, for the one built with it (and fewer threads) to go on from. (The test
// sits at the end of the aggregation: as a second return at the top of the loop, beside the one
// above, it took 4elt's level 0 from 505 to 535 us, the kernel's registers allocated otherwise.)
template <int NB>
__device__ __forceinline__ bool fused_levels(FUSED_ARGS, FusedRun& run, FusedShared& sh, char* s_dyn) {
    char* s_tables = s_dyn;  // computeMove's tables; block 0's level copy from s_dyn + solo_off
    auto& s_red = sh.red;
    int* s_ts = sh.ts;
    int* s_bstart = sh.bstart;
    int* s_bbucket = sh.bbucket;
    int* s_bfirst = sh.bfirst;
    int* s_beff = sh.beff;
    int& s_batches = sh.batches;
    double* s_best = sh.best;
    int* s_bc = sh.bc;
    i64* s_eo = sh.eo;
    i64* s_part = sh.part;
    constexpr i64 T = (i64)FUSED_THREADS * NB;

    // Loops over vertices, edges and slots stride over the team's threads in warp-interleaved
    // order (warp w of block b is the team's warp w * NB + b): a small level's items spread over
    // every block, a warp or two each, instead of filling block 0 alone while the others wait
    // at the barrier.
    const i64 gtid = ((i64)(threadIdx.x / 32) * NB + blockIdx.x) * 32 + threadIdx.x % 32;
    const bool leader = gtid == 0;

    // ---- scratch (the host sizes `work` by the same rule: 16-byte aligned arrays in this order).
    // The move phase's arrays and the aggregation's share one region: neither outlives its phase
    // (the level start writes the first, the aggregation's first pass the second, in full).
    char* at = work + FUSED_HEAD_BYTES;  // (after the header's device copy, fused_stats)
    auto take = [&](i64 bytes) {
        char* p = at;
        at += (bytes + 15) / 16 * 16;
        return p;
    };
    const i64 N = n0;
    i64 S = N;  // the stride of the buffer pairs (n on block 0's copy of a level)
    i64* part = (i64*)take(8 * 2 * FUSED_CLUSTER * FUSED_PART);
    i64* spart = (i64*)take(8 * 2 * FUSED_CLUSTER * FUSED_PART);
    int* comm_base = (int*)take(4 * 2 * N);
    int* csize_base = (int*)take(4 * 2 * N);
    int* vertex_of = (int*)take(4 * N);  // the current level's vertex of each original vertex
    char* const phase_region = at;
    i64* kfix = (i64*)take(8 * N);
    i64* afix_base = (i64*)take(8 * 2 * N);  // two buffers of N (buffer r at afix_base + r * N)
    i64* sav_afix_base = (i64*)take(8 * 2 * N);
    int* sav_comm_base = (int*)take(4 * 2 * N);
    int* sav_csize_base = (int*)take(4 * 2 * N);
    BatchVertex* order = (BatchVertex*)take(16 * N);  // the batches' vertices, in batch order
    // computeMove's tables for the bucket > 319 (fused_move_hub), hub_cap slots in all
    {
        i64* hub_vals = (i64*)take(8 * hub_cap);
        int* hub_keys = (int*)take(4 * hub_cap);
        if (threadIdx.x == 0) {  // (kept in registers through the sweeps, they cost spills there)
            sh.hub_vals0 = hub_vals;
            sh.hub_keys0 = hub_keys;
        }
    }
    char* const move_end = at;
    at = phase_region;
    i64* tpos = (i64*)take(8 * (N + 1));
    i64* counts = (i64*)take(8 * N);
    int* new_id = (int*)take(4 * N);
    i64* tvals = (i64*)take(8 * table_cap);
    int* tkeys = (int*)take(4 * table_cap);
    if (move_end > at) at = move_end;
    // past both phases' arrays, so that each level start can zero it: the communities' degrees
    // (their edges that leave them) for the aggregation's table sizes, then their new self-loops
    i64* com_degree = (i64*)take(8 * N);
    // buffer r of each pair (indexed arithmetically: an array of pointers would live on the stack)
    auto comm = [&](int r) { return comm_base + r * S; };
    auto csize = [&](int r) { return csize_base + r * S; };
    auto afix = [&](int r) { return afix_base + r * S; };
    auto sav_comm = [&](int r) { return sav_comm_base + r * S; };
    auto sav_csize = [&](int r) { return sav_csize_base + r * S; };
    auto sav_afix = [&](int r) { return sav_afix_base + r * S; };
    if (at - work > work_bytes) {
        run.status = FUSED_NO_ROOM;
        return false;
    }
    if constexpr (NB == 1) {  // the partials in shared memory too
        part = (i64*)(s_dyn + solo_off);
        spart = part + 2 * FUSED_PART;
    }

    // Partial sums written in one phase are read in the next; two slots, by the phase's parity.
    int phase = 0;
    auto sync = [&]() {
        if constexpr (NB == 1)
            __syncthreads();
        else
            cluster_sync();
        ++phase;
    };
    auto part_w = [&](i64* base) { return base + (phase & 1) * (NB * FUSED_PART); };
    auto part_r = [&](i64* base) { return base + ((phase + 1) & 1) * (NB * FUSED_PART); };
    // the blocks' partials of the last phase (slots `base`), staged in shared memory `into`: one
    // round trip for them all
    auto staged = [&](i64* base, i64* into) {
        if (threadIdx.x < NB * FUSED_PART) into[threadIdx.x] = part_r(base)[threadIdx.x];
        __syncthreads();
        return (const i64*)into;
    };
    auto partials = [&]() { return staged(part, s_part); };
    // the block totals of a scan (scan_offsets reads every block's, in every thread); on one
    // block they lie in shared memory already
    auto scan_partials = [&]() {
        if constexpr (NB == 1)
            return (const i64*)part_r(spart);
        else
            return staged(spart, sh.spart);
    };
    i64 v8[FUSED_PART];
    auto zero8 = [&]() {
#pragma unroll
        for (int k = 0; k < FUSED_PART; ++k) v8[k] = 0;
    };

    // ---- fixed-point scale (algorithms/louvain.py init): 2^(fixed_bits - exponent(wmax) - bits(nnz))
    if constexpr (NB > 1 && !FUSED_RESUME) {
        zero8();
        for (i64 e = gtid; e < nnz0; e += T) {
            const i64 b = __double_as_longlong(weights0[e]);  // weights >= 0: the bits order as the values
            v8[0] = b > v8[0] ? b : v8[0];
        }
        if (indptr0_bytes == 4)  // level 0's offsets, widened (read after the barrier below)
            for (i64 v = gtid; v <= n0; v += T) indptr_l[v] = ((const int*)indptr0)[v];
        block_partials<1>(v8, 1u, part_w(part), s_red);
        sync();
        run.scale = 0.0;
        const double wmax = __longlong_as_double(cluster_value<NB>(partials(), 0, true));
        if (wmax > 0) {
            int ex;
            frexp(wmax, &ex);
            run.scale = ldexp(1.0, fixed_bits - ex - (64 - __clzll((u64)nnz0)));
        }
    }
    const double scale = run.scale;

    // the run's state in locals (the optimiser keeps them in registers), saved back on return
    int level = run.level, written = run.written, records = run.records, status = run.status, n = run.n;
    i64 nnz = run.nnz;
    auto save = [&]() {
        run.level = level;
        run.written = written;
        run.records = records;
        run.status = status;
        run.n = n;
        run.nnz = nnz;
    };
    while (true) {
        if constexpr (NB > 1) {
            i64 off[SOLO_ARRAYS];
            if (nnz <= solo_edges && solo_layout(n, nnz, off) <= solo_cap) {  // one block goes on
                save();
                return true;
            }
        }
        i64* indptr = level == 0 && indptr0_bytes == 8 ? (i64*)indptr0 : indptr_l;
        int* indices = level == 0 ? (int*)indices0 : indices_l;
        i64* wfix = wfix_l;
        i64* loop = loop_l;
        const u64 t_level = global_ns();
        if constexpr (NB == 1) {  // the level's CSR and batch state to shared memory
            i64 off[SOLO_ARRAYS];
            solo_layout(n, nnz, off);
            char* base = s_dyn + solo_off;
            i64* s_indptr = (i64*)(base + off[SOLO_INDPTR]);
            int* s_indices = (int*)(base + off[SOLO_INDICES]);
            i64* s_wfix = (i64*)(base + off[SOLO_WFIX]);
            kfix = (i64*)(base + off[SOLO_KFIX]);
            comm_base = (int*)(base + off[SOLO_COMM]);
            csize_base = (int*)(base + off[SOLO_CSIZE]);
            afix_base = (i64*)(base + off[SOLO_AFIX]);
            order = (BatchVertex*)(base + off[SOLO_ORDER]);
            loop = (i64*)(base + off[SOLO_LOOP]);  // (the global copy stays as it is, for a handover)
            S = n;
            for (i64 i = threadIdx.x; i <= n; i += FUSED_THREADS) {
                s_indptr[i] = indptr[i];
                if (i < n && level > 0) loop[i] = loop_l[i];  // (level 0: start_vertex zeroes it)
            }
            for (i64 e = threadIdx.x; e < nnz; e += FUSED_THREADS) {
                s_indices[e] = indices[e];
                if (level > 0) s_wfix[e] = wfix[e];
            }
            __syncthreads();
            indptr = s_indptr;
            indices = s_indices;
            wfix = s_wfix;
        }

        // ---- level start (algorithms/louvain.py _start_level): k_i, every vertex alone, buckets
        zero8();  // 0: 2m, 1: internal weight, 2-4: limbs of sum k_i^2, 5: largest degree
        auto vertex_alone = [&](i64 v, i64 k, i64 self) {
            kfix[v] = k;
            afix(0)[v] = afix(1)[v] = sav_afix(1)[v] = k;
            v8[0] += k;
            v8[1] += self;
            add_square(v8 + 2, k);
        };
        auto start_vertex = [&](i64 v, bool light) {
            const i64 s0 = indptr[v], s1 = indptr[v + 1];
            comm(0)[v] = comm(1)[v] = sav_comm(1)[v] = (int)v;
            csize(0)[v] = csize(1)[v] = sav_csize(1)[v] = 1;
            com_degree[v] = 0;
            v8[5] = s1 - s0 > v8[5] ? s1 - s0 : v8[5];
            if constexpr (!FUSED_HUBS) v8[6] += !light;
            if (level == 0) loop[v] = 0;
            if (!light) return;
            i64 k = 0, self = 0;
            if (level == 0) {
                for (i64 e = s0; e < s1; ++e) {
                    const i64 w = (i64)rint(weights0[e] * scale);
                    wfix[e] = w;
                    k += w;
                    if (indices[e] == v) self += w;
                    if constexpr (FUSED_UNIFORM) v8[7] = W_BIG - w > v8[7] ? W_BIG - w : v8[7];
                }
            } else {
                k = self = loop[v];
                for (i64 e = s0; e < s1; ++e) {
                    k += wfix[e];
                    if (indices[e] == v) self += wfix[e];
                }
            }
            vertex_alone(v, k, self);
        };
#if FUSED_HUBS
        for_vertices(indptr, n, gtid, T, sh.hq, start_vertex, [&](i64 u, i64 e0, i64 e1, i64* acc) {
            // a piece of a heavy row: k_i and the self-loop
            i64 k = 0, self = 0;
#pragma unroll
            for (int j = 0; j < FUSED_PIECE / 32; ++j) {
                const i64 e = e0 + threadIdx.x % 32 + 32 * j;
                if (e >= e1) continue;
                i64 w;
                if (level == 0) {
                    w = (i64)rint(weights0[e] * scale);
                    wfix[e] = w;
                } else {
                    w = wfix[e];
                }
                k += w;
                if (indices[e] == u) self += w;
            }
            k = warp_reduce(k, false);
            self = warp_reduce(self, false);
            if (threadIdx.x % 32 == 0) {
                atomicAdd((u64*)&acc[0], (u64)k);
                atomicAdd((u64*)&acc[1], (u64)self);
            }
        }, [&](i64 u, const i64* acc) {
            const i64 lp = level > 0 ? loop[u] : 0;
            vertex_alone(u, acc[0] + lp, acc[1] + lp);
        });
        block_partials<6>(v8, 1u << 5, part_w(part), s_red);
#else
        // (a row of more than FUSED_MAX_DEGREE entries sends the level back to the host, so its
        // sums are not needed: the thread skips it)
        for (i64 v = gtid; v < n; v += T) start_vertex(v, indptr[v + 1] - indptr[v] <= FUSED_MAX_DEGREE);
        if constexpr (FUSED_UNIFORM)  // 7: the largest W_BIG - w (level 0)
            block_partials<8>(v8, (1u << 5) | (1u << 7), part_w(part), s_red);
        else
            block_partials<7>(v8, 1u << 5, part_w(part), s_red);
#endif
        constexpr int MB = FUSED_MOVE_BUCKETS;
        auto bucket_of = [&](i64 v, i64 (&x)[MB]) {
            const i64 d = indptr[v + 1] - indptr[v];
            const int b = d > 0 ? move_bucket(d) : -1;
#pragma unroll
            for (int k = 0; k < MB; ++k) x[k] = b == k;
        };
        i64 pre_b[MB], tot_b[MB];
        scan_local<MB, NB>(n, bucket_of, pre_b, part_w(spart), s_red);
        sync();

        const i64* pv = partials();
        const i64 two_m = cluster_value<NB>(pv, 0, false);
        scan_offsets<MB, NB>(scan_partials(), pre_b, tot_b);
        // The vertices of degree > 319 (fused_move_hub): a block takes one at a time, with a table
        // of ts[largest degree] slots (a community has fewer than n neighbours), so as many tables
        // as a batch has of them, up to one a block. The host may go again with more room
        // (hub_cap slots in all) when they do not fit (hub_need); a kernel built without
        // FUSED_HUBS has no room for them.
        const i64 dmax = cluster_value<NB>(pv, 5, true), hubs = FUSED_HUBS ? tot_b[MB - 1] : cluster_value<NB>(pv, 6, false);
        const i64 hub_room = FUSED_HUBS ? hub_cap : 0;
        const i64 hub_eff = hubs >= slice_min && hubs > 1 && slices > 1 ? (slices < hubs ? slices : hubs) : 1;
        const i64 hub_tables = (hubs + hub_eff - 1) / hub_eff < NB ? (hubs + hub_eff - 1) / hub_eff : NB;
        const i64 hub_slots = hubs ? (i64)ts[dmax < n ? dmax : n] : 0;
        if (hub_tables * hub_slots > hub_room || records >= record_cap || written >= row_cap) {
            status = FUSED_HANDOVER;
            run.hub_need = hub_tables * hub_slots > hub_room ? hub_tables * hub_slots : 0;
            break;
        }
        if (FUSED_HUBS && blockIdx.x < hub_tables) {  // block b's table, empty (see fused_move_hub)
            int* keys = sh.hub_keys0 + blockIdx.x * hub_slots;
            i64* vals = sh.hub_vals0 + blockIdx.x * hub_slots;
            for (i64 s = threadIdx.x; s < hub_slots; s += FUSED_THREADS) {
                keys[s] = EMPTY_SLOT;
                vals[s] = 0;
            }
            if (threadIdx.x == 0) {
                sh.hub_keys = keys;
                sh.hub_vals = vals;
            }
        }
        if (threadIdx.x == 0) sh.hubs = hubs;
#if FUSED_UNIFORM  // (the other builds never read sh.uw)
        {
            // Level 0's entries all have one weight when the smallest times nnz is their sum, 2m
            // (level 0 has no self-loop weights beside them; wmin nnz <= 2m cannot overflow).
            // Then computeMove, the sweeps' internal weight and mergeCommunity take it from here,
            // not from wfix: on an H100, 4elt's kernels took 866 to 867 us against 887, its
            // level 0 moving in 342 us against 363 to 364 (the same decisions). Weighted graphs
            // pay for the test: delaunay k=14 896 against 900 us, but delaunay k=18 6.36 to 6.40
            // ms against 6.33 to 6.36 (its level 0 3.61 against 3.56). A second form of
            // computeMove for one weight, in place of the test, slowed every graph (4elt 877 us
            // against 865, delaunay k=18 6.40 ms against 6.37).
            const i64 wmin = level == 0 ? W_BIG - cluster_value<NB>(pv, 7, true) : 0;
            if (threadIdx.x == 0) sh.uw = level == 0 && nnz > 0 && wmin * nnz == two_m ? wmin : 0;
        }
#endif
        i64 limbs[3];
        for (int k = 0; k < 3; ++k) limbs[k] = cluster_value<NB>(pv, 2 + k, false);
        // the threshold at modularity q (LouvainState.threshold): relative on large levels
        const bool large = n > bin_vertices;
        auto threshold = [&](double q) { return large ? fmax(t_bin, t_rel * q) : t_final; };
        double q_current = fused_modularity(cluster_value<NB>(pv, 1, false), limbs, two_m, resolution);
        const double q_level_start = q_current;
        const double gamma_over_2m = two_m > 0 ? resolution / (double)two_m : 0.0;
        // the batches bucket[j::s] of every bucket, in order (cpu/louvain.py move_batches)
        if (threadIdx.x == 0) {
            int P = 0, off = 0;
#pragma unroll 1
            for (int b = 0; b < MB; ++b) {
                const int cnt = (int)tot_b[b];
                s_bfirst[b] = P;
                s_beff[b] = 1;
                if (cnt == 0) continue;
                const int eff = (cnt >= slice_min && cnt > 1 && slices > 1) ? (slices < cnt ? slices : cnt) : 1;
                s_beff[b] = eff;
#pragma unroll 1
                for (int j = 0; j < eff; ++j) {
                    s_bstart[P] = off;
                    s_bbucket[P] = b;
                    off += (cnt - j + eff - 1) / eff;
                    ++P;
                }
            }
            s_bstart[P] = off;
            s_batches = P;
        }
        __syncthreads();
        scan_walk<MB, NB>(n, bucket_of, [&](i64 v, i64 (&rank)[MB]) {
            const i64 d = indptr[v + 1] - indptr[v];
            if (d == 0) return;
            const int b = move_bucket(d);
            int r = 0;  // rank[b] by selects: an index into it would put the scan's offsets on the stack
#pragma unroll
            for (int k = 0; k < MB; ++k) r = k == b ? (int)rank[k] : r;
            if (b == 6) {  // placed below, by degree
                if (FUSED_HUBS) com_degree[r] = (d << 32) | (i64)(0x7fffffff - (int)v);
                return;
            }
            const int eff = s_beff[b];
            const int pos = s_bstart[s_bfirst[b] + r % eff] + r / eff;
            order[pos] = batch_vertex(kfix[v], indptr[v], v, d);
        }, pre_b);
        const int P = s_batches;
        sync();
        if (FUSED_HUBS && hubs) {
            // The bucket > 319 goes in order of degree, largest first, ties by id (as the twins'
            // _degree_buckets sort it): each hub's rank is the number of keys (degree, -id) above
            // its own, which the walk above left in com_degree[0 .. hubs); then com_degree is
            // zeroed again for the aggregation.
            for (i64 i = gtid; i < hubs; i += T) {
                const i64 key = com_degree[i];
                i64 r = 0;
                for (i64 j = 0; j < hubs; ++j) r += com_degree[j] > key;
                const int v = 0x7fffffff - (int)(key & 0xffffffff), eff = s_beff[6];
                const i64 pos = s_bstart[s_bfirst[6] + r % eff] + r / eff;
                order[pos] = batch_vertex(kfix[v], indptr[v], v, key >> 32);
            }
            sync();
            for (i64 i = gtid; i < hubs; i += T) com_degree[i] = 0;
        }

        // ---- modularity optimisation (Algorithm 1), sweep after sweep
        int iter = 0;
        i64 changed = 0;  // vertices outside their own community in the kept state
        bool undo = false;
        bool moving = nnz > 0 && two_m > 0;
        Pending pend;  // nothing pending before the level's first batch
        for (int j = 0; j < FUSED_PENDING; ++j) pend.c[j] = -1;
        pend.verts = order;
        pend.from = pend.nv = 0;
        while (moving) {
            for (int p = 0; p < P; ++p) {
                const int r = p & 1, w = r ^ 1;
                fused_catch_up<NB>(pend, comm(r), comm(w), csize(w), afix(w));
                const int b0 = s_bstart[p];
                const int nv = s_bstart[p + 1] - b0;
#define FUSED_MOVE(G, TABLE, MAXDEG)                                                                                \
    fused_move<NB, G, TABLE, MAXDEG>(indices, wfix, comm(r), csize(r), afix(r), comm(w), csize(w), afix(w), order + b0, \
                                     nv, s_ts, gamma_over_2m, s_tables, s_best, s_bc, s_eo, pend, FUSED_UNIFORM ? sh.uw : 0)
                // Group sizes per bucket. The cluster kernel of FUSED_THREADS >= 1024 takes [5, 8] in
                // groups of 4 and [9, 16] in groups of 8, two edges a lane: on an H200, against
                // groups of 8 and 16 (one edge a lane), 4elt's whole kernel took 1,176 us against
                // 1,195, delaunay k=18 6.27 ms against 6.65, rgg k=16 3.51 against 3.76 and
                // kron k=12 7.26 against 7.21, the same decisions. A [5, 8] batch of 4elt's level 0
                // (3,666 vertices) then takes one round of the cluster's 4,096 groups, not two.
                // Groups of 2, four edges a lane, for [5, 8] (two batches a bucket, whole calls,
                // two alternating rounds, the same decisions) were no faster: 4elt 1.111 to
                // 1.113 ms against 1.115 to 1.138, delaunay k=14 1.078 against 1.074 to 1.086,
                // rgg k=14 1.416 to 1.468 against 1.411 to 1.417, kron k=12 5.93 to 6.02 against
                // 5.92 to 5.95; not kept.
                // The one block takes [1, 8] in groups of 4 and [9, 16] in groups of 8, two edges
                // a lane, as the cluster kernel of 1,024 threads does (its [1, 4] in groups of 4,
                // one edge a lane, was no faster there). The cluster kernel of 512 threads
                // (FUSED_MID) takes a [5, 8] batch in groups of 4, two edges a lane, where groups
                // of 8 (one edge a lane) would need more than one round, else in groups of 8; it
                // takes [9, 16] in groups of 16. With two batches a bucket, 4elt's level 2 on
                // one block (9 sweeps, batches of 17 to 108 vertices, two rounds each in groups
                // of 8) moved in 96 us against 127 in groups of 8 up to degree 8 and of 32 up to
                // 32 (H100, the same decisions), and its level 1 on the cluster of 512 threads
                // (batches of 1,212 vertices in [5, 8]) in 221 us against 244. With four batches
                // a bucket the narrower groups had not paid: they had seldom saved a round.
                // Groups of 4 for every [5, 8] batch of that cluster, not only the large ones,
                // cost delaunay k=14 and rgg k=14 4 to 5 us each on that level (the choice by
                // batch size leaves them within 2 us of groups of 8 throughout), and groups of 8
                // for [9, 16] up to 3 us more.
                constexpr bool pairs = NB == 1 || FUSED_THREADS >= 1024;
                switch (s_bbucket[p]) {
                    case 0:
                        if constexpr (NB > 1) {
                            FUSED_MOVE(4, 7, 4);
                            break;
                        }
                        [[fallthrough]];
                    case 1:
                        if (pairs || nv > FUSED_THREADS / 8 * NB) {
                            FUSED_MOVE(4, 7, 8);
                            break;
                        }
                        FUSED_MOVE(8, 13, 8);
                        break;
                    case 2:
                        if constexpr (pairs) {
                            FUSED_MOVE(8, 13, 16);
                            break;
                        }
                        if constexpr (NB > 1) {
                            FUSED_MOVE(16, 29, 16);
                            break;
                        }
                        [[fallthrough]];
                    case 3: FUSED_MOVE(32, 53, 32); break;
                    case 4: FUSED_MOVE(32, 127, 84); break;
#if FUSED_HUBS
                    case 5: FUSED_MOVE(128, MOVE_SHARED_TABLE, FUSED_MAX_DEGREE); break;
                    default:
                        fused_move_hub<NB>(indptr, indices, wfix, comm(r), csize(r), afix(r), comm(w), csize(w), afix(w),
                                           order + b0, nv, n, ts, sh.hub_keys, sh.hub_vals, gamma_over_2m, s_best,
                                           s_bc, s_eo, pend);
                        break;
#else
                    default: FUSED_MOVE(128, MOVE_SHARED_TABLE, FUSED_MAX_DEGREE); break;
#endif
                }
#undef FUSED_MOVE
                sync();
            }
            // the sweep's modularity from the written buffer; the other catches up; the state is
            // saved (slot iter & 1) in case the next sweep has to be undone. (On an H200 this pass
            // and its barrier took 82 of 472 us of 4elt's level 0 and 50 of 287 of its level 1.
            // Summing it instead in the phase of the next sweep's first batch, which reads only
            // the state this sweep leaves, and taking that batch back when the sum ends the phase,
            // saved 13 us on level 0 but cost 3 to 5 us on each later level: 4elt's kernel took
            // 1,184 us against 1,175, delaunay k=18's 6.21 ms against 6.26, the same decisions.
            // The pass's loads cost about as much inside a batch's phase as in a phase of their own.)
            const int wl = ((P - 1) & 1) ^ 1, rl = wl ^ 1, slot = iter & 1;
            fused_catch_up<NB>(pend, comm(wl), comm(rl), csize(rl), afix(rl));
            zero8();  // 0: internal weight, 1-3: limbs of sum a_c^2, 4: vertices moved
            auto sweep_vertex = [&](i64 v, bool light) {
                const int cv = comm(wl)[v];
                const i64 a = afix(wl)[v];
                const int cs = csize(wl)[v];
                i64 s = loop[v];
                const i64 uw = FUSED_UNIFORM ? sh.uw : 0;
                if (light && uw)
                    row_communities(indptr, indices, wfix, comm(wl), v, [&](int c, i64) {
                        if (c == cv) s += uw;
                    });
                else if (light)
                    row_communities(indptr, indices, wfix, comm(wl), v, [&](int c, i64 w) {
                        if (c == cv) s += w;
                    });
                v8[0] += s;
                v8[4] += cv != v;
                add_square(v8 + 1, a);
                sav_comm(slot)[v] = cv;
                sav_csize(slot)[v] = cs;
                sav_afix(slot)[v] = a;
            };
#if FUSED_HUBS
            if (sh.hubs) {
                for_vertices(indptr, n, gtid, T, sh.hq, sweep_vertex, [&](i64 u, i64 e0, i64 e1, i64*) {
                    const int cu = comm(wl)[u];
                    piece_communities(indices, wfix, comm(wl), e0, e1, [&](int c, i64 w) {
                        if (c == cu) v8[0] += w;
                    });
                }, [](i64, const i64*) {});
            } else {
                // the rows of a graph with hubs have degrees up to 319 here: the warp takes its
                // 32 rows' edges together rather than a row a thread
                for (i64 v0 = gtid - threadIdx.x % 32; v0 < n; v0 += T) {  // warp-uniform trips
                    const i64 v = v0 + threadIdx.x % 32, at = v < n ? v : n;
                    const i64 s0 = indptr[at], s1 = v < n ? indptr[v + 1] : s0;
                    int cv = -1;
                    if (v < n) {
                        cv = comm(wl)[v];
                        sweep_vertex(v, false);
                    }
                    v8[0] += warp_rows_internal<4>(indices, wfix, comm(wl), s0, s1, cv);
                }
            }
#else
            for (i64 v = gtid; v < n; v += T) sweep_vertex(v, true);
#endif
            block_partials<5>(v8, 0u, part_w(part), s_red);
            sync();
            const i64* pv = partials();
            for (int k = 0; k < 3; ++k) limbs[k] = cluster_value<NB>(pv, 1 + k, false);
            const double q = fused_modularity(cluster_value<NB>(pv, 0, false), limbs, two_m, resolution);
            ++iter;
            const double gain = q - q_current;
            if (gain < 0) {  // the sweep lowered Q: undo it and end the phase
                undo = true;
                break;
            }
            q_current = q;
            changed = cluster_value<NB>(pv, 4, false);
            if (gain < threshold(q) || iter >= max_iterations) break;
        }
        if (undo) {  // back to the state saved before the last sweep
            const int slot = iter & 1;
            for (i64 v = gtid; v < n; v += T) {
                comm(0)[v] = comm(1)[v] = sav_comm(slot)[v];
                csize(0)[v] = csize(1)[v] = sav_csize(slot)[v];
                afix(0)[v] = afix(1)[v] = sav_afix(slot)[v];
            }
            sync();
        }
        const u64 t_aggregate = global_ns();
        i64* rec = stats + FUSED_STAT_HEAD + (i64)records * FUSED_STAT_W;
        if (leader) {
            rec[0] = n;
            rec[1] = nnz;
            rec[2] = iter;
            rec[3] = __double_as_longlong(q_current);
            rec[4] = (i64)(t_aggregate - t_level);
            rec[5] = 0;
            rec[6] = 0;
            rec[7] = NB | ((i64)FUSED_THREADS << 32);  // the team: blocks, threads a block
        }
        ++records;
        if (changed == 0) {  // nothing moved: the level loop ends
            if (written == 0) {  // every vertex is its own community (level 0: n = n0)
                for (i64 v = gtid; v < n; v += T) level_rows[v] = v;
                if (leader) rec[6] = 2;
                written = 1;
            }
            break;
        }

        // ---- aggregation (Algorithm 3): community degrees, then new ids and table offsets. A
        // community's table holds its edges to other communities: its degree counts only those
        // (Algorithm 3 line 6 counts them all; on 4elt's first level that needs 1.8 times the slots)
        auto outside_edges = [&](i64 v, bool light) {
            if (!light) return;
            const int cv = comm(0)[v];
            i64 out = 0;
            row_communities(indptr, indices, wfix, comm(0), v, [&](int c, i64) { out += c != cv; });
            if (out) atomicAdd((u64*)&com_degree[cv], (u64)out);
        };
#if FUSED_HUBS
        if (sh.hubs) {
            for_vertices(indptr, n, gtid, T, sh.hq, outside_edges, [&](i64 u, i64 e0, i64 e1, i64* acc) {
                const int cu = comm(0)[u];
                i64 out = 0;
                piece_communities(indices, wfix, comm(0), e0, e1, [&](int c, i64) { out += c != cu; });
                out = warp_reduce(out, false);
                if (threadIdx.x % 32 == 0 && out) atomicAdd((u64*)&acc[0], (u64)out);
            }, [&](i64 u, const i64* acc) {
                if (acc[0]) atomicAdd((u64*)&com_degree[comm(0)[u]], (u64)acc[0]);
            });
        } else
#endif
            for (i64 v = gtid; v < n; v += T) outside_edges(v, true);
        sync();
        auto nonempty_tables = [&](i64 c, i64 (&x)[2]) {
            const bool used = csize(0)[c] > 0;
            const i64 d = com_degree[c];
            x[0] = used;
            x[1] = used && d > 0 ? ts[d < n ? d : n] : 0;  // a community has fewer than n neighbours
        };
        i64 pre2[2], tot2[2];
        scan_local<2, NB>(n, nonempty_tables, pre2, part_w(spart), s_red);
        sync();
        scan_offsets<2, NB>(scan_partials(), pre2, tot2);
        const int n_new = (int)tot2[0];
        const i64 slots = tot2[1];
        if (slots > table_cap) {
            status = FUSED_NO_ROOM;
            break;
        }
        // the new self-loops add up by old community id in com_degree, each entry zeroed by the
        // thread that has just read it
        i64* new_loop = com_degree;
        scan_walk<2, NB>(n, nonempty_tables, [&](i64 c, i64 (&x)[2]) {
            new_id[c] = csize(0)[c] > 0 ? (int)x[0] : -1;
            tpos[c] = x[1];
            new_loop[c] = 0;
        }, pre2);
        if (leader) tpos[n] = slots;
        // the new graph goes over the level's own (whose edges are all hashed before the new offsets
        // are written), and the new self-loops over the old once the old are read
        i64* new_indptr = indptr_l;
        int* new_indices = indices_l;
        i64* new_wfix = wfix_l;
        for (i64 s = gtid; s < slots; s += T) {
            tkeys[s] = EMPTY_SLOT;
            tvals[s] = 0;
        }
        for (i64 c = gtid; c < n_new; c += T) counts[c] = 0;
        sync();
        // mergeCommunity: every edge into its community's table, by the far end's new community
        // (edges inside the community add to its self-loop; the edge that claims a slot counts
        // it into counts[new id], the new vertex's degree)
        const i64 uw = FUSED_UNIFORM ? sh.uw : 0;
        for_each_index_of(indptr, 0, n, gtid / 32, T / 32, true, [&](bool ok, i64 u, i64 e) {
            i64 lp = 0;
            int c = 0;
            if (ok) {
                c = comm(0)[u];
                const int nc = new_id[c];
                const int d = new_id[comm(0)[indices[e]]];
                const i64 we = uw ? uw : wfix[e];
                if (d == nc)
                    lp = we;
                else if (hash_add<false>(tkeys + tpos[c], tvals + tpos[c], (unsigned int)(tpos[c + 1] - tpos[c]), d, we))
                    atomicAdd((u64*)&counts[nc], 1ULL);
            }
            if (run_scan(ok ? u : -1, lp, Sum()) && lp) atomicAdd((u64*)&new_loop[c], (u64)lp);
        });
        // every member's self-loop into its community's
        for (i64 u = gtid; u < n; u += T)
            if (loop[u]) atomicAdd((u64*)&new_loop[comm(0)[u]], (u64)loop[u]);
        // the level's row: each original vertex's vertex of this level, its community, that
        // community's new id (which is the vertex of the next level); J vertices a thread at a
        // time, their loads in flight together (one block goes over every original vertex)
        constexpr int J = NB == 1 ? 16 : 8;
        for (i64 v0 = gtid; v0 < n0; v0 += J * T) {
            int x[J];
#pragma unroll
            for (int j = 0; j < J; ++j) {
                const i64 v = v0 + j * T;
                x[j] = v >= n0 ? -1 : level == 0 ? (int)v : vertex_of[v];
            }
#pragma unroll
            for (int j = 0; j < J; ++j) x[j] = x[j] >= 0 ? comm(0)[x[j]] : -1;
#pragma unroll
            for (int j = 0; j < J; ++j) x[j] = x[j] >= 0 ? new_id[x[j]] : -1;
#pragma unroll
            for (int j = 0; j < J; ++j) {
                const i64 v = v0 + j * T;
                if (v < n0) {
                    vertex_of[v] = x[j];
                    level_rows[(i64)written * n0 + v] = x[j];
                }
            }
        }
        sync();
        // the filled slots of each table (counted above) are the new vertex's edges
        i64 pre1[1], tot1[1];
        auto count_of = [&](i64 c, i64 (&x)[1]) { x[0] = counts[c]; };
        scan_local<1, NB>(n_new, count_of, pre1, part_w(spart), s_red);
        sync();
        scan_offsets<1, NB>(scan_partials(), pre1, tot1);
        const i64 nnz_new = tot1[0];
        scan_walk<1, NB>(n_new, count_of, [&](i64 c, i64 (&x)[1]) { new_indptr[c] = x[0]; }, pre1);
        if (leader) new_indptr[n_new] = nnz_new;
        sync();
        // compaction: each table's entries to its new vertex's edge list; the new self-loops
        for (i64 c = gtid; c < n; c += T)
            if (new_id[c] >= 0) loop_l[new_id[c]] = new_loop[c];
        for_each_index_of(tpos, 0, n, gtid / 32, T / 32, true, [&](bool ok, i64 c, i64 s) {
            const int key = ok ? tkeys[s] : EMPTY_SLOT;
            emit_table_slot(ok, c, new_id[c], key, key != EMPTY_SLOT ? tvals[s] : 0, 1, counts, new_indptr,
                            new_indices, new_wfix);
        });
        sync();
        if (leader) {
            rec[5] = (i64)(global_ns() - t_aggregate);
            rec[6] = 1;
        }
        ++written;
        ++level;
        if (level >= max_levels || q_current - q_level_start < threshold(q_current)) break;
        n = n_new;
        nnz = nnz_new;
        if (NB > 1 && !FUSED_RESUME && n <= mid_vertices) {  // the cluster with fewer threads goes on
            i64 off[SOLO_ARRAYS];
            if (!(nnz <= solo_edges && solo_layout(n, nnz, off) <= solo_cap)) {  // (unless one block does)
                status = FUSED_MID;
                break;
            }
        }
    }
    save();
    return false;
}

__device__ __forceinline__ void fused_stats(i64* stats, char* work, const FusedRun& run, int status, i64 ns) {
    const i64 head[FUSED_STAT_HEAD] = {status, run.written, run.level, run.n, run.nnz, run.records, ns,
                                       __double_as_longlong(run.scale), run.hub_need};
    i64* copy = (i64*)work;  // the next kernel's (see fused_head)
#pragma unroll
    for (int k = 0; k < FUSED_STAT_HEAD; ++k) stats[k] = copy[k] = head[k];
}

// The kernels after the first are launched with programmatic stream serialization where the host
// can (its _launch_after): each may start on SMs of its own while the kernel before it runs, and
// waits here, once it has loaded what no kernel writes, for that kernel to end and its writes to
// be visible (griddepcontrol.wait; without that launch attribute it returns at once). It then
// reads the header from the copy that fused_stats left in device memory, not from the host's
// (a round trip over the bus). With both, 4elt's kernels took 847 us against 852 to 854 on one
// H100 host, 844 to 845 against 845 to 850 on another, and 814 against 824 on an H200;
// delaunay k=14 1,066 against 1,071 and rgg k=14 996 against 1,000 (H100); the same decisions.
__device__ __forceinline__ void fused_head(const char* work, i64* head) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (threadIdx.x < 8) head[threadIdx.x] = ((const i64*)work)[threadIdx.x];
}

// Lets the next kernel be launched (see fused_head): from the start, since it waits for this one
// to end before it reads anything this one writes.
__device__ __forceinline__ void fused_launch_next() { asm volatile("griddepcontrol.launch_dependents;"); }

// The run's state from the stats header of a handover (fused_stats); returns the start time.
__device__ __forceinline__ u64 fused_resume(FusedRun& run, const i64* head) {
    run.status = FUSED_DONE;
    run.written = (int)head[1];
    run.level = (int)head[2];
    run.n = (int)head[3];
    run.nnz = head[4];
    run.records = (int)head[5];
    run.scale = __longlong_as_double(head[7]);
    run.hub_need = 0;
    return (u64)head[6];
}

// The cluster's levels. When a level is for the next kernel (see fused_levels), the run's state
// goes to the stats header with status FUSED_MID or FUSED_SOLO and the start time in place of
// the duration, for the next kernel to go on from: this kernel built with FUSED_RESUME (with
// fewer threads a block: on 4elt's level 1, 3,187 vertices, 512 threads moved in 278 us where
// 1,024 took 322, their registers spilling less; level 0, 15,606 vertices, took 573 against
// 505), then louvain_fused_solo. Built with FUSED_RESUME, it does nothing unless the first
// handed over with FUSED_MID.
extern "C" __global__ void __cluster_dims__(FUSED_CLUSTER, 1, 1) __launch_bounds__(FUSED_THREADS, 1)
    louvain_fused(FUSED_ARGS) {
    extern __shared__ __align__(16) char s_dyn[];
    __shared__ FusedShared sh;
    fused_launch_next();
    for (int d = threadIdx.x; d <= FUSED_MAX_DEGREE; d += FUSED_THREADS) sh.ts[d] = ts[d];
    FusedRun run;
#if FUSED_RESUME
    __shared__ i64 head[8];
    fused_head(work, head);
    cluster_sync();  // (every block has read the header before block 0 may write it)
    if (head[0] != FUSED_MID) return;
    const u64 t_start = fused_resume(run, head);
#else
    const u64 t_start = global_ns();
    run.level = run.written = run.records = 0;
    run.status = FUSED_DONE;
    run.n = n0;
    run.nnz = nnz0;
    run.hub_need = 0;
#endif
    const bool solo = fused_levels<FUSED_CLUSTER>(FUSED_ARG_NAMES, run, sh, s_dyn);
    const int status = solo ? FUSED_SOLO : run.status;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        fused_stats(stats, work, run, status,
                    solo || status == FUSED_MID ? (i64)t_start : (i64)(global_ns() - t_start));
}

// The remaining levels on one block, its shared memory large enough for them (a kernel of its
// own: the cluster's kernel keeps the smaller shared memory, and so the larger L1 cache, that
// its levels run faster with). Does nothing unless the cluster's kernel handed over.
extern "C" __global__ void __launch_bounds__(FUSED_THREADS, 1) louvain_fused_solo(FUSED_ARGS) {
    extern __shared__ __align__(16) char s_dyn[];
    __shared__ FusedShared sh;
    __shared__ i64 head[8];
    for (int d = threadIdx.x; d <= FUSED_MAX_DEGREE; d += FUSED_THREADS) sh.ts[d] = ts[d];
    fused_head(work, head);
    __syncthreads();
    if (head[0] != FUSED_SOLO) return;
    FusedRun run;
    const u64 t_start = fused_resume(run, head);
    fused_levels<1>(FUSED_ARG_NAMES, run, sh, s_dyn);
    if (threadIdx.x == 0) fused_stats(stats, work, run, run.status, (i64)(global_ns() - t_start));
}

#endif  // __CUDA_ARCH__ >= 900
