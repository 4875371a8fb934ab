// Maximum cardinality bipartite matching: push-relabel (G-PR) and augmenting-path BFS (APFB/APsB).
//
// References
//   [GPR]  M. Deveci, K. Kaya, B. Ucar, U. V. Catalyurek, "A push-relabel-based maximum cardinality
//          bipartite matching algorithm on GPUs", ICPP 2013 (Algorithms 1 to 9).
//   [APFB] M. Deveci, K. Kaya, B. Ucar, U. V. Catalyurek, "GPU accelerated maximum cardinality
//          matching algorithms for bipartite graphs", Euro-Par 2013 (APFB, APsB, GPUBFS,
//          GPUBFS-WR, ALTERNATE, FIXMATCHING).
//
// Rows are V_R, columns are V_C, as in the papers. Index type I is int or long long, instantiated
// through name_expressions (e.g. "pr_push<int>"). Every kernel uses a grid-stride loop, so any
// launch configuration is valid; the launch wrappers pick one thread per vertex (or per active
// column) unless the constant-thread (CT) mode of [APFB] is asked for.
//
// Matching arrays: mu_row[u] is the column of row u or -1; mu_col[v] is the row of column v,
// -1 when unmatched, and in G-PR -2 when v cannot reach an unmatched row. G-PR's kernels are
// lock- and atomic-free and tolerate an inconsistent mu (mu(mu(v)) != v means v is unmatched);
// FIXMATCHING repairs it at the end. Flags are plain int stores (every writer stores 1).

#ifndef MGM_UNVISITED_OFFSET
#define MGM_UNVISITED_OFFSET 1  // [APFB]: an unvisited column has bfs level L0 - 1
#endif

template <typename I>
__device__ __forceinline__ I mgm_thread_id() {
    return (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;
}

template <typename I>
__device__ __forceinline__ I mgm_thread_count() {
    return (I)gridDim.x * (I)blockDim.x;
}

// Reads of data that other blocks may write inside the same launch go to L2 (ld.global.cg): in
// the persistent kernel an L1 line cached before a grid barrier is not refreshed by another
// multiprocessor's stores. The helpers shared with it read this way too.
template <typename I>
__device__ __forceinline__ I mgm_load(const I* p) {
    return __ldcg(p);
}

// A column v is matched when mu(v) names a row that names v back.
template <typename I>
__device__ __forceinline__ bool mgm_col_matched(const I* mu_row, I mv, I v) {
    return mv >= 0 && mu_row[mv] == v;
}

// ------------------------------------------------------------------ initial matching
// Cheap (greedy) matching [GPR Sec. IV, APFB Sec. 4], one proposal round; thread per column.
// Each unmatched column proposes to its first row that is still free by writing mu(u) <- v and
// mu(v) <- u; the last writer of mu(u) wins and fix_cols (FIXMATCHING) releases the losers, which
// propose again next round. A column that finds no free row is marked -3 (exhausted) for the
// rest of the rounds: rows never become free again. The host repeats rounds while *flag is set.
template <typename I>
__global__ void cheap_propose(I n_cols, const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                              I* mu_row, I* mu_col, int* flag) {
    for (I v = mgm_thread_id<I>(); v < n_cols; v += mgm_thread_count<I>()) {
        if (mu_col[v] != -1) continue;
        I found = -3;
        for (I j = col_ptr[v]; j < col_ptr[v + 1]; ++j) {
            I u = col_rows[j];
            if (mu_row[u] == -1) {
                mu_row[u] = v;
                found = u;
                *flag = 1;
                break;
            }
        }
        mu_col[v] = found;
    }
}

// Clears the -3 (exhausted) marks of cheap_propose; thread per column.
template <typename I>
__global__ void clear_exhausted(I n_cols, I* mu_col) {
    for (I v = mgm_thread_id<I>(); v < n_cols; v += mgm_thread_count<I>()) {
        if (mu_col[v] < -1) mu_col[v] = -1;
    }
}

// ------------------------------------------------------------------ FIXMATCHING
// FIXMATCHING [GPR Alg. 7 line 23; APFB]: mu(v) <- -1 for every column with mu(mu(v)) != v
// (also clears G-PR's -2 marks, and leaves cheap_propose's -3 marks); thread per column.
// Rows are taken as the truth.
template <typename I>
__device__ __forceinline__ void mgm_fix_col(I v, const I* mu_row, I* mu_col) {
    I mv = mgm_load<I>(mu_col + v);
    if (mv == -2 || (mv >= 0 && mgm_load<I>(mu_row + mv) != v)) mu_col[v] = -1;
}

template <typename I>
__global__ void fix_cols(I n_cols, const I* mu_row, I* mu_col) {
    for (I v = mgm_thread_id<I>(); v < n_cols; v += mgm_thread_count<I>()) mgm_fix_col<I>(v, mu_row, mu_col);
}

// FIXMATCHING, row side [APFB]: rmatch(r) <- -1 for every row with cmatch(rmatch(r)) != r (also
// clears the -2 marks of augmenting-path ends that were not alternated); thread per row.
template <typename I>
__device__ __forceinline__ void mgm_fix_row(I u, I* mu_row, const I* mu_col) {
    I mu = mgm_load<I>(mu_row + u);
    if (mu < 0 || mgm_load<I>(mu_col + mu) != u) mu_row[u] = -1;
}

template <typename I>
__global__ void fix_rows(I n_rows, I* mu_row, const I* mu_col) {
    for (I u = mgm_thread_id<I>(); u < n_rows; u += mgm_thread_count<I>()) mgm_fix_row<I>(u, mu_row, mu_col);
}

// ------------------------------------------------------------------ G-GR: global relabeling
// INITRELABEL [GPR Alg. 4 line 1]: psi(u) <- 0 for unmatched rows, m + n for every other vertex;
// thread per vertex (rows first, then columns).
template <typename I>
__global__ void gr_init(I n_rows, I n_cols, const I* __restrict__ mu_row, I* psi_row, I* psi_col, I inf) {
    for (I x = mgm_thread_id<I>(); x < n_rows + n_cols; x += mgm_thread_count<I>()) {
        if (x < n_rows) {
            psi_row[x] = (mu_row[x] == -1) ? (I)0 : inf;
        } else {
            psi_col[x - n_rows] = inf;
        }
    }
}

// G-GR-KRNL [GPR Alg. 5]: one level of the BFS from all unmatched rows; thread per row.
// Rows at level c_level label their unvisited columns c_level + 1 and the columns' mates
// c_level + 2. Concurrent writers store the same value, so no atomics are needed.
template <typename I>
__global__ void gr_level(I n_rows, const I* __restrict__ row_ptr, const I* __restrict__ row_cols,
                         const I* __restrict__ mu_row, const I* __restrict__ mu_col,
                         I* psi_row, I* psi_col, I c_level, I inf, int* u_added) {
    for (I u = mgm_thread_id<I>(); u < n_rows; u += mgm_thread_count<I>()) {
        if (psi_row[u] != c_level) continue;
        for (I j = row_ptr[u]; j < row_ptr[u + 1]; ++j) {
            I v = row_cols[j];
            if (psi_col[v] == inf) {
                psi_col[v] = c_level + 1;
                I w = mu_col[v];
                if (w > -1 && mu_row[w] == v) {
                    psi_row[w] = c_level + 2;
                    *u_added = 1;
                }
            }
        }
    }
}

// ------------------------------------------------------------------ G-PR push-relabel
// Lines 5-12 of [GPR Alg. 6 / Alg. 9]: the row of minimum psi in Gamma(v), stopping early at
// psi(v) - 1 (the neighbourhood invariant makes it the minimum).
template <typename I>
__device__ __forceinline__ I mgm_min_row(I v, const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                                         const I* psi_row, const I* psi_col, I inf, I* u_out) {
    I psi_min = inf;
    I u = -1;
    I target = psi_col[v] - 1;
    for (I j = col_ptr[v]; j < col_ptr[v + 1]; ++j) {
        I uu = col_rows[j];
        I p = psi_row[uu];
        if (p < psi_min) {
            psi_min = p;
            u = uu;
            if (psi_min == target) break;
        }
    }
    *u_out = u;
    return psi_min;
}

// G-PR-KRNL [GPR Alg. 6] (variant "first"): thread per column; every column with mu(v) = -1 or
// mu(mu(v)) != v is active and performs one push-relabel. Double pushes leave mu(w) stale on
// the displaced column w, which the next launch reads as active.
template <typename I>
__global__ void pr_push_all(I n_cols, const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                            I* mu_row, I* mu_col, I* psi_row, I* psi_col, I inf, int* act_exists) {
    for (I v = mgm_thread_id<I>(); v < n_cols; v += mgm_thread_count<I>()) {
        I mv = mu_col[v];
        if (!(mv == -1 || (mv >= 0 && mu_row[mv] != v))) continue;
        *act_exists = 1;
        I u;
        I psi_min = mgm_min_row<I>(v, col_ptr, col_rows, psi_row, psi_col, inf, &u);
        if (psi_min < inf) {
            mu_row[u] = v;
            mu_col[v] = u;
            psi_col[v] = psi_min + 1;
            psi_row[u] = psi_min + 2;
        } else {
            mu_col[v] = -2;
        }
    }
}

// G-PR-INITKRNL [GPR Alg. 8]: thread per slot of A_p (the columns processed by the previous
// push launch). A push that lost a race (mu(mu(v)) != v) is rolled back by putting v back in
// A_c; otherwise the column it displaced (already in A_c) becomes active. iA(v) <- loop marks
// this loop's active columns for the guard of G-PR-PUSHKRNL.
template <typename I>
__global__ void pr_init(I size, const I* __restrict__ mu_row, const I* __restrict__ mu_col, I loop,
                        I* a_c, const I* __restrict__ a_p, I* ia, int* act_exists) {
    for (I i = mgm_thread_id<I>(); i < size; i += mgm_thread_count<I>()) {
        I v = a_p[i];
        if (v == -1) continue;
        I mv = mu_col[v];
        if (mv == -2) {  // defensive: a dead column is never active again
            a_c[i] = -1;
            continue;
        }
        if (!mgm_col_matched<I>(mu_row, mv, v)) {
            a_c[i] = v;
        } else {
            v = a_c[i];
        }
        if (v != -1) {
            ia[v] = loop;
            *act_exists = 1;
        }
    }
}

// G-PR-SHRKRNL [GPR Alg. 7 line 12], pass 1: the fix of G-PR-INITKRNL, and each thread counts the
// active columns of its slots (grid-stride) into counts[thread]. The host takes an exclusive
// prefix sum of counts, then pass 2 (pr_shrink_write) writes each thread's columns to its
// private region. Both passes must run with the same launch configuration.
template <typename I>
__global__ void pr_shrink_count(I size, const I* __restrict__ mu_row, const I* __restrict__ mu_col, I loop,
                                I* a_c, const I* __restrict__ a_p, I* ia, I* counts) {
    I count = 0;
    for (I i = mgm_thread_id<I>(); i < size; i += mgm_thread_count<I>()) {
        I v = a_p[i];
        if (v != -1) {
            I mv = mu_col[v];
            if (mv == -2) {
                v = -1;
            } else if (!mgm_col_matched<I>(mu_row, mv, v)) {
                // rolled back: v stays active
            } else {
                v = a_c[i];
            }
        }
        a_c[i] = v;
        if (v != -1) {
            ia[v] = loop;
            ++count;
        }
    }
    counts[mgm_thread_id<I>()] = count;
}

// G-PR-SHRKRNL, pass 2: thread t writes the active columns of its slots, in slot order, to
// out[offsets[t] ...]; out becomes the new, exact-size A_c.
template <typename I>
__global__ void pr_shrink_write(I size, const I* __restrict__ a_c, const I* __restrict__ offsets, I* out) {
    I pos = offsets[mgm_thread_id<I>()];
    for (I i = mgm_thread_id<I>(); i < size; i += mgm_thread_count<I>()) {
        I v = a_c[i];
        if (v != -1) out[pos++] = v;
    }
}

// G-PR-PUSHKRNL [GPR Alg. 9]: thread per active column slot of A_c. One push-relabel per active
// column, no locks or atomics; the displaced column w = mu(u) is stored in A_p(i). The guard
// iA(mu(u)) != loop forbids displacing a column that is itself active in this loop (it could
// otherwise be processed by two threads after a rollback); such a push is retried next loop.
template <typename I>
__global__ void pr_push(I size, const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                        I* mu_row, I* mu_col, I* psi_row, I* psi_col, I loop,
                        I* a_c, I* a_p, const I* __restrict__ ia, I inf) {
    for (I i = mgm_thread_id<I>(); i < size; i += mgm_thread_count<I>()) {
        I v = a_c[i];
        if (v == -1) {
            a_p[i] = -1;
            continue;
        }
        I u;
        I psi_min = mgm_min_row<I>(v, col_ptr, col_rows, psi_row, psi_col, inf, &u);
        if (psi_min < inf) {
            I w = mu_row[u];
            if (w == -1 || ia[w] != loop) {
                mu_row[u] = v;
                mu_col[v] = u;
                psi_col[v] = psi_min + 1;
                psi_row[u] = psi_min + 2;
                a_p[i] = w;
            }
        } else {
            mu_col[v] = -2;
            a_c[i] = -1;
            a_p[i] = -1;
        }
    }
}

// ------------------------------------------------------------------ APFB / APsB
// INITBFSARRAY [APFB Alg. 1]: bfs(c) <- L0 for unmatched columns (the BFS roots), L0 - 1 for
// matched ones; root(c) <- c for roots (GPUBFS-WR); thread per column.
template <typename I>
__global__ void bfs_init(I n_cols, const I* __restrict__ mu_col, I* bfs, I* root, I l0) {
    for (I c = mgm_thread_id<I>(); c < n_cols; c += mgm_thread_count<I>()) {
        bool matched = mu_col[c] > -1;
        bfs[c] = matched ? l0 - MGM_UNVISITED_OFFSET : l0;
        root[c] = matched ? (I)-1 : c;
    }
}

// GPUBFS [APFB Alg. 2]: one BFS level from the columns at `level`; thread per column (MT) or a
// constant number of threads striding over the columns (CT). A matched row's mate joins the
// next level; an unmatched row ends an augmenting path: rmatch(r) <- -2, pred(r) <- c.
// flags[0] = vertex inserted, flags[1] = augmenting path found.
template <typename I>
__global__ void gpubfs(I level, I n_cols, const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                       I* mu_row, I* bfs, I* pred, int* flags, I l0) {
    const I unvisited = l0 - MGM_UNVISITED_OFFSET;
    for (I c = mgm_thread_id<I>(); c < n_cols; c += mgm_thread_count<I>()) {
        if (bfs[c] != level) continue;
        for (I j = col_ptr[c]; j < col_ptr[c + 1]; ++j) {
            I r = col_rows[j];
            I cm = mu_row[r];
            if (cm > -1) {
                if (bfs[cm] == unvisited) {
                    flags[0] = 1;
                    bfs[cm] = level + 1;
                    pred[r] = c;
                }
            } else if (cm == -1) {
                mu_row[r] = -2;
                pred[r] = c;
                flags[1] = 1;
            }
        }
    }
}

// GPUBFS-WR [APFB Alg. 4]: GPUBFS with the root array. root(c) carries the BFS root down the
// levels; once a path from a root is found, bfs(root) becomes negative and every column of that
// root stops expanding (early exit). With level_encoding (APsB-GPUBFS-WR, L0 = 2) the mark is
// -(level of the path's last column), which ALTERNATE uses to start only from matching ends.
template <typename I>
__global__ void gpubfs_wr(I level, I n_cols, const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                          I* mu_row, I* bfs, I* root, I* pred, int* flags, I l0, int level_encoding) {
    const I unvisited = l0 - MGM_UNVISITED_OFFSET;
    for (I c = mgm_thread_id<I>(); c < n_cols; c += mgm_thread_count<I>()) {
        if (bfs[c] != level) continue;
        I my_root = root[c];
        if (bfs[my_root] < 0) continue;
        for (I j = col_ptr[c]; j < col_ptr[c + 1]; ++j) {
            I r = col_rows[j];
            I cm = mu_row[r];
            if (cm > -1) {
                if (bfs[cm] == unvisited) {
                    flags[0] = 1;
                    bfs[cm] = level + 1;
                    root[cm] = my_root;
                    pred[r] = c;
                }
            } else if (cm == -1) {
                bfs[my_root] = level_encoding ? -level : (I)-1;
                mu_row[r] = -2;
                pred[r] = c;
                flags[1] = 1;
                break;
            }
        }
    }
}

// ALTERNATE [APFB Alg. 3]: thread per row; rows marked -2 end augmenting paths. Each walks its
// path back through pred and cmatch, swapping matched and unmatched edges. A column whose new
// mate's predecessor is that column was already alternated by another thread: stop there
// (prevents the infinite loop of [APFB Fig. 1]). Remaining inconsistencies are repaired by
// FIXMATCHING. With level_encoding, only ends whose last column's level equals the mark of
// their root start.
// The walk of ALTERNATE from the end row r of a path: swap matched and unmatched edges back
// through pred and mu_col to the root. Each hop's pred(matched_row) is both the stop test and
// the next hop's column, so a hop costs two dependent loads. The hop bound only guards against
// a corrupted pred; a path has fewer than n_cols columns.
template <typename I>
__device__ __forceinline__ void mgm_alternate_path(I r, I* mu_row, I* mu_col, const I* pred, I n_cols) {
    I row = r;
    I matched_col = mgm_load<I>(pred + row);
    for (I hops = 0; hops <= n_cols; ++hops) {
        const I matched_row = mgm_load<I>(mu_col + matched_col);
        const I next_col = matched_row > -1 ? mgm_load<I>(pred + matched_row) : (I)-1;
        if (matched_row > -1 && next_col == matched_col) break;  // already alternated by another path
        mu_col[matched_col] = row;
        mu_row[row] = matched_col;
        if (matched_row == -1) break;  // reached the root
        row = matched_row;
        matched_col = next_col;
    }
}

// The walk of ALTERNATE in the persistent kernel with the root array, whose paths are
// vertex-disjoint: parent(c) is the column whose expansion claimed c, i.e. pred(mu(c)), so a hop
// needs mu(c) (the next row) and parent(c) (the next column), two loads that overlap instead of
// two that depend on each other. The walk ends at the root, an unmatched column.
template <typename I>
__device__ __forceinline__ void mgm_alternate_parents(I r, I* mu_row, I* mu_col, const I* pred, const I* parent,
                                                      I n_cols) {
    I row = r;
    I col = mgm_load<I>(pred + row);
    for (I hops = 0; hops <= n_cols; ++hops) {
        const I next_row = mgm_load<I>(mu_col + col);
        const I next_col = mgm_load<I>(parent + col);
        mu_col[col] = row;
        mu_row[row] = col;
        if (next_row < 0) break;  // reached the root
        row = next_row;
        col = next_col;
    }
}

template <typename I>
__global__ void alternate(I n_rows, I n_cols, I* mu_row, I* mu_col, const I* __restrict__ pred,
                          const I* __restrict__ bfs, const I* __restrict__ root, I l0, int level_encoding) {
    for (I r = mgm_thread_id<I>(); r < n_rows; r += mgm_thread_count<I>()) {
        if (mu_row[r] != -2) continue;
        if (level_encoding) {
            I c = pred[r];
            I rt = root[c];
            I lc = (c == rt) ? l0 : bfs[c];
            if (bfs[rt] != -lc) continue;
        }
        mgm_alternate_path<I>(r, mu_row, mu_col, pred, n_cols);
    }
}

// ------------------------------------------------------------------ deterministic runs
// In the kernels above races decide which maximum matching a run returns: the last write of a
// cheap proposal, the first claim of a column by a BFS tree, the first tree to reach a free row.
// The kernels below resolve every such race by the smallest id (atomicMin), so the result
// depends on the graph alone, whatever the launch configuration and thread timing. The CPU twins
// in mgmatch/cpu/bipartite.py run the same rules sequentially and return the same matching.
// `none` is the largest value of I (no claim yet); counts are unsigned 64-bit counters.

// Cheap matching, one round, step 1 of 3: every unmatched column proposes to its first row that
// is free at the start of the round (cursor(v) keeps its place) by atomicMin on prop(u); a column
// with no free row left is marked -3 (exhausted). *flag <- 1 when a column proposed.
template <typename I>
__global__ void cheap_det_propose(I n_cols, const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                                  const I* __restrict__ mu_row, I* mu_col, I* cursor, I* prop, int* flag) {
    for (I v = mgm_thread_id<I>(); v < n_cols; v += mgm_thread_count<I>()) {
        if (mu_col[v] != -1) continue;
        I j = cursor[v];
        const I end = col_ptr[v + 1];
        while (j < end && mu_row[col_rows[j]] != -1) ++j;
        cursor[v] = j;
        if (j == end) {
            mu_col[v] = -3;
            continue;
        }
        atomicMin(prop + col_rows[j], v);
        *flag = 1;
    }
}

// Step 2 of 3: each row takes its smallest proposer; the others propose again next round.
template <typename I>
__global__ void cheap_det_accept(I n_cols, const I* __restrict__ col_rows, I* mu_row, I* mu_col,
                                 const I* __restrict__ cursor, const I* __restrict__ prop) {
    for (I v = mgm_thread_id<I>(); v < n_cols; v += mgm_thread_count<I>()) {
        if (mu_col[v] != -1) continue;
        const I u = col_rows[cursor[v]];
        if (prop[u] == v) {
            mu_row[u] = v;
            mu_col[v] = u;
        }
    }
}

// Step 3 of 3: prop back to none at every row a column's cursor points at.
template <typename I>
__global__ void cheap_det_reset(I n_cols, const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                                const I* __restrict__ cursor, I* prop, I none) {
    for (I v = mgm_thread_id<I>(); v < n_cols; v += mgm_thread_count<I>())
        if (cursor[v] < col_ptr[v + 1]) prop[col_rows[cursor[v]]] = none;
}

// Counters of one level of the deterministic search: new columns, claimed ends, paths, next
// frontier, frontier. A single thread starts the next level: the next frontier becomes the
// frontier and the other counters return to zero.
extern "C" __global__ void det_level_start(unsigned long long* counts) {
    counts[4] = counts[3];
    counts[0] = counts[1] = counts[2] = counts[3] = 0;
}

// One BFS level of the deterministic GPUBFS-WR search, step 1 of 4: every frontier column whose
// tree has not ended claims the unvisited mates of its rows (claim(c') <- min c) and the free
// rows (end_claim(r) <- min c). The first claim of each lands in new_cols (counts[0]) or ends
// (counts[1]); their order does not matter, only the minima do. A group of `group` lanes (a
// power of two up to 32) takes a column and strides over its adjacency, so hubs are shared.
template <typename I>
__global__ void det_expand(unsigned long long* counts, const I* __restrict__ frontier,
                           const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                           const I* __restrict__ mu_row, const I* __restrict__ bfs, const I* __restrict__ root,
                           I unvisited, I none, I* claim, I* end_claim, I* new_cols, I* ends, int group) {
    const I nf = (I)counts[4];
    const I lane = mgm_thread_id<I>() % group;
    for (I i = mgm_thread_id<I>() / group; i < nf; i += mgm_thread_count<I>() / group) {
        const I c = frontier[i];
        if (bfs[root[c]] < 0) continue;  // the tree ended at an earlier level
        for (I j = col_ptr[c] + lane; j < col_ptr[c + 1]; j += group) {
            const I r = col_rows[j];
            const I cm = mu_row[r];
            if (cm > -1) {
                if (bfs[cm] == unvisited && atomicMin(claim + cm, c) == none)
                    new_cols[atomicAdd(counts, 1ull)] = cm;
            } else if (cm == -1) {
                if (atomicMin(end_claim + r, c) == none) ends[atomicAdd(counts + 1, 1ull)] = r;
            }
        }
    }
}

// Step 2 of 4: each tree keeps the smallest of the free rows it claimed (best_end(root) <- min r).
template <typename I>
__global__ void det_pick_ends(const unsigned long long* __restrict__ counts, const I* __restrict__ ends,
                              const I* __restrict__ end_claim, const I* __restrict__ root, I* best_end) {
    const I n = (I)counts[1];
    for (I k = mgm_thread_id<I>(); k < n; k += mgm_thread_count<I>()) {
        const I r = ends[k];
        atomicMin(best_end + root[end_claim[r]], r);
    }
}

// Step 3 of 4: the row a tree kept ends its augmenting path (mu_row(r) <- -2, pred(r)) and the
// tree stops (bfs(root) <- -1); counts[2] counts the paths. Every end claim is released.
template <typename I>
__global__ void det_commit_ends(unsigned long long* counts, const I* __restrict__ ends, I* end_claim,
                                const I* __restrict__ root, const I* __restrict__ best_end, I* mu_row, I* pred,
                                I* bfs, I none) {
    const I n = (I)counts[1];
    for (I k = mgm_thread_id<I>(); k < n; k += mgm_thread_count<I>()) {
        const I r = ends[k];
        const I c = end_claim[r];
        const I rt = root[c];
        if (best_end[rt] == r) {
            mu_row[r] = -2;
            pred[r] = c;
            bfs[rt] = -1;
            atomicAdd(counts + 2, 1ull);
        }
        end_claim[r] = none;
    }
}

// Step 4 of 4: a claimed column of a tree still searching joins the next level (bfs, root, and
// pred of the row that leads to it) and the next frontier (counts[3]); one of a tree that ended
// at this level is released, free to be claimed by another tree later.
template <typename I>
__global__ void det_commit_cols(unsigned long long* counts, const I* __restrict__ new_cols, I* claim, I* root,
                                I* bfs, const I* __restrict__ mu_col, I* pred, I next_level, I none, I* next) {
    const I n = (I)counts[0];
    for (I k = mgm_thread_id<I>(); k < n; k += mgm_thread_count<I>()) {
        const I cm = new_cols[k];
        const I c = claim[cm];
        const I rt = root[c];
        if (bfs[rt] < 0) {
            claim[cm] = none;
            continue;
        }
        bfs[cm] = next_level;
        root[cm] = rt;
        pred[mu_col[cm]] = c;
        next[atomicAdd(counts + 3, 1ull)] = cm;
    }
}

// ------------------------------------------------------------------ persistent APFB / APsB
// The whole of APFB / APsB [APFB Alg. 1] in one launch: INITBFSARRAY, the BFS levels, ALTERNATE
// and FIXMATCHING of every phase, separated by grid-wide barriers instead of kernel launches and
// host round trips. Launched cooperatively (every block resident), so the barrier is safe.
//
// Frontiers are queues: a column enters a queue once per phase, by compare-and-swap on its
// bfs level, as an entry (column, adjacency begin, adjacency end, root) so that its expansion
// starts with one load. A group of 4 to 32 lanes expands one column, striding over its
// adjacency, so the work is that of the frontier, not of all columns. With int32 indices each
// lane takes two edges per step (MGM_EDGES_PER_LANE) and their loads overlap: a column of a mesh
// (degree about 6, 4 lanes) takes one dependent chain of loads, not two, for the same number of
// groups. A column's level is read before the compare-and-swap that claims it (MGM_CLAIM_TEST):
// most edges lead to columns already claimed, and a read costs less than a failed atomic and
// its adjacency loads. On one H200 the two took delaunay k=22 from 29.8 to 18.6 ms, kron k=20
// from 4.46 to 3.94 ms and delaunay k=20 from 5.92 to 5.73 ms (medians of 15 runs, interleaved).
//
// With queue_mode (APFB; the host sets it on sparse graphs) a phase's search is one FIFO work
// queue (mgm_queue_traverse): groups take entries as they are stored, with no barrier between
// levels. APFB needs every column reachable from a root that has no path yet, in any order: a
// column is still claimed once, the forest and the paths are the same kind, and a phase that
// finds no path has visited every column reachable from the roots, so the matching is then
// maximum. On a mesh most of a phase
// is hundreds of levels of a few hundred to a few thousand columns; level by level, each cost a
// grid barrier as long as its expansion.
//
// Without queue_mode (APsB, which stops at the first level that finds a path) the levels run
// one by one between grid barriers. While a frontier is small (at most `local_max` columns)
// block 0 runs the levels alone, with block barriers, and the other blocks wait at the next
// grid barrier: the long tails of a phase (few roots, long paths) then cost a block barrier
// per level instead of a grid barrier.
//
// With the root array (GPUBFS-WR) an end of an augmenting path is claimed twice by
// compare-and-swap: the unmatched row (-1 -> -2), then the root (bfs(root): L0 -> -1); when the
// root was already taken the row is released. So every tree yields at most one path and the
// paths of a phase are vertex-disjoint: ALTERNATE never meets another thread's path, and
// FIXMATCHING has nothing left to repair, so this kernel skips it (its two passes and their
// barrier) with the root array. Without the root array (GPUBFS) several ends may share a tree
// and the paper's ALTERNATE stop rule and FIXMATCHING resolve them.
//
// With the root array the entries carry each column's root, so the kernel keeps no root(c).
// Its array holds parent(c) instead, the column whose expansion claimed c (pred of c's mate):
// one store per claimed column instead of root(c) and pred(mate), and ALTERNATE's walk
// (mgm_alternate_parents) loads mu(c) and parent(c) side by side, one load's latency per hop
// instead of two. On one H200 (medians of 11 runs, interleaved) ALTERNATE went from 54.6 to
// 31.2 ms on a 2048 x 2048 grid with 10% of its edges deleted, whose 55 phases alternate paths
// of hundreds of hops, and the whole run from 276 to 244 ms; on delaunay k=20 and k=22 from 0.57
// to 0.50 and 1.32 to 1.23 ms (the runs the same within their spread). pred(r) is then stored
// for the ends of paths only.
//
// ctl (zeroed by the host): ctl[0..2] frontier lengths and ctl[3..5] "path found" flags of the
// grid-wide levels, rotating with the count g of grid-wide levels run (level g fills ctl[(g+1)%3]
// and ctl[3 + g%3] and zeroes the slots of level g + 1 and g + 2, which every thread has read
// by then); ctl[9..11] and ctl[13] block 0's report after a run of block-local levels (level,
// frontier length, found, levels run); ctl[14] the depth of the search. The queue traversal's
// counters are ctl[32], ctl[64], ctl[96] (head, tail, finished) and ctl[128] (the last phase
// done); ctl[64] also counts the roots of every phase. All threads read the same
// values after every barrier, so they all take the same branches and meet at every barrier.
// The launch's results go to stats (see the kernel): the host reads them with one copy.
#ifndef MGM_FULL_MASK
#define MGM_FULL_MASK 0xffffffffu
#endif
#define MGM_CTL_SIZE 160
// The queue traversal's counters, each in a line of its own (ctl holds MGM_CTL_SIZE indices).
#define MGM_CTL_HEAD 32
#define MGM_CTL_TAIL 64
#define MGM_CTL_FINISHED 96
#define MGM_CTL_DONE 128
#define MGM_CTL_DEPTH 14
// The longest pause of a waiting warp of the queue traversal between two polls: the time a
// stored entry can wait for its group.
#ifndef MGM_QUEUE_BACKOFF_NS
#define MGM_QUEUE_BACKOFF_NS 64
#endif
// Edges a lane takes per step of a column's expansion (int32; int64 takes one: two would spill).
#ifndef MGM_EDGES_PER_LANE
#define MGM_EDGES_PER_LANE 2
#endif
// 1: read a column's level before the compare-and-swap that claims it.
#ifndef MGM_CLAIM_TEST
#define MGM_CLAIM_TEST 1
#endif

__device__ __forceinline__ int mgm_atomic_add(int* p, int v) { return atomicAdd(p, v); }
__device__ __forceinline__ long long mgm_atomic_add(long long* p, long long v) {
    return (long long)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
__device__ __forceinline__ void mgm_atomic_max(int* p, int v) { atomicMax(p, v); }
__device__ __forceinline__ void mgm_atomic_max(long long* p, long long v) { atomicMax(p, v); }
__device__ __forceinline__ int mgm_cas(int* p, int cmp, int val) { return atomicCAS(p, cmp, val); }
__device__ __forceinline__ long long mgm_cas(long long* p, long long cmp, long long val) {
    return (long long)atomicCAS((unsigned long long*)p, (unsigned long long)cmp, (unsigned long long)val);
}

// Frontier entries: (column, adjacency begin, adjacency end, root), 4 indices each.
template <typename I>
struct mgm_entry {
    I c, beg, end, root;
};
// An entry is read from L2 (other multiprocessors store it inside the launch) with volatile
// loads, so a loop that waits for the entry to be stored (the queue traversal) reads it anew
// every time.
__device__ __forceinline__ mgm_entry<int> mgm_load_entry(const int* q, int i) {
    int4 v;
    asm volatile("ld.relaxed.gpu.global.v4.s32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"((const int4*)q + i) : "memory");
    return {v.x, v.y, v.z, v.w};
}
__device__ __forceinline__ mgm_entry<long long> mgm_load_entry(const long long* q, long long i) {
    longlong2 a, b;
    asm volatile("ld.relaxed.gpu.global.v2.s64 {%0, %1}, [%2];" : "=l"(a.x), "=l"(a.y) : "l"((const longlong2*)q + 2 * i) : "memory");
    asm volatile("ld.relaxed.gpu.global.v2.s64 {%0, %1}, [%2];" : "=l"(b.x), "=l"(b.y) : "l"((const longlong2*)q + 2 * i + 1) : "memory");
    return {a.x, a.y, b.x, b.y};
}
__device__ __forceinline__ void mgm_store_entry(int* q, int i, int c, int beg, int end, int root) {
    ((int4*)q)[i] = make_int4(c, beg, end, root);
}
__device__ __forceinline__ void mgm_store_entry(long long* q, long long i, long long c, long long beg,
                                                long long end, long long root) {
    ((longlong2*)q)[2 * i] = make_longlong2(c, beg);
    ((longlong2*)q)[2 * i + 1] = make_longlong2(end, root);
}

// Grid-wide barrier for a cooperative launch. *bar counts the arrivals of every barrier of the
// launch; a block's thread 0 keeps the number of barriers it has passed in `epoch`, so barrier
// k opens when the count reaches k * gridDim.x: one atomic and a polling load per block, no
// reset. The fences order each block's stores before its arrival and after its departure.
__device__ __forceinline__ void mgm_grid_sync(unsigned long long* bar, unsigned long long& epoch) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned long long target = ++epoch * gridDim.x;
        __threadfence();
        atomicAdd(bar, 1ull);
        while (*(volatile unsigned long long*)bar < target) {
        }
        __threadfence();
    }
    __syncthreads();
}

__device__ __forceinline__ unsigned long long mgm_now() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

// Adds the time since `clock` to `acc` and restarts the clock (thread 0 only).
template <typename I>
__device__ __forceinline__ void mgm_lap(unsigned long long& acc, unsigned long long& clock, I tid) {
    if (tid == 0) {
        unsigned long long now = mgm_now();
        acc += now - clock;
        clock = now;
    }
}

// A slot for each lane with `push` at *len (one atomic per warp); every lane of the warp must
// call it. Returns the lane's slot, or -1.
template <typename I>
__device__ __forceinline__ I mgm_warp_slot(bool push, I* len, int lane) {
    unsigned int mask = __ballot_sync(MGM_FULL_MASK, push);
    if (!mask) return -1;
    int leader = __ffs(mask) - 1;
    I base = 0;
    if (lane == leader) base = mgm_atomic_add(len, (I)__popc(mask));
    base = __shfl_sync(MGM_FULL_MASK, base, leader);
    return push ? base + __popc(mask & ((1u << lane) - 1u)) : (I)-1;
}

// The lane layout of the frontier expansion: `group` lanes per column.
struct mgm_groups {
    int group, gid, glane, gbase, lane;
    unsigned int gmask;
};

// Expands one frontier entry per group of the warp [APFB Alg. 2 / Alg. 4]: the groups with
// `active` stride over the adjacency of their entry e, whose column is at BFS level `level`;
// they claim unvisited columns (level + 1) for the queue `nxt` (counted at *nxt_len) and ends
// of augmenting paths (*found <- 1). `depth` keeps the deepest level claimed, minus L0. Every
// lane of the warp calls it.
template <typename I>
__device__ __forceinline__ void mgm_expand_entry(mgm_entry<I> e, bool active, I level, I* nxt, I* nxt_len, I* found,
                                                 const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                                                 I* mu_row, I* bfs, I* parent, I* pred, I l0, I unvisited,
                                                 int with_root, const mgm_groups& lg, I& depth) {
    active = active && e.beg < e.end;
    constexpr int K = sizeof(I) == 4 ? MGM_EDGES_PER_LANE : 1;  // int64: two edges would spill
    const I step = (I)lg.group * K;
    for (I j0 = e.beg; __any_sync(MGM_FULL_MASK, active); j0 += step) {
        I r[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const I j = j0 + (I)(k * lg.group + lg.glane);
            r[k] = (active && j < e.end) ? col_rows[j] : (I)-1;
        }
        if (with_root) {  // early exit [APFB Alg. 4]: the root already has its path
            I state = (active && lg.glane == 0) ? mgm_load<I>(bfs + e.root) : (I)0;
            if (__shfl_sync(MGM_FULL_MASK, state, lg.gbase) < 0) {
                active = false;
#pragma unroll
                for (int k = 0; k < K; ++k) r[k] = -1;
            }
        }
        // The K edges of a lane go through each step together, so their loads overlap.
        I cm[K];
#pragma unroll
        for (int k = 0; k < K; ++k) cm[k] = r[k] >= 0 ? mgm_load<I>(mu_row + r[k]) : (I)-3;
        bool ended = false;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (cm[k] == -1 && mgm_cas(mu_row + r[k], (I)-1, (I)-2) == -1) {
                if (!with_root || mgm_cas(bfs + e.root, l0, (I)-1) == l0) {
                    pred[r[k]] = e.c;
                    ended = true;
                } else {
                    mu_row[r[k]] = -1;  // the root already has its path: give the row back
                }
            }
        }
        bool open[K];
#pragma unroll
        for (int k = 0; k < K; ++k) open[k] = cm[k] > -1 && (!MGM_CLAIM_TEST || mgm_load<I>(bfs + cm[k]) == unvisited);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            I cbeg = 0;
            I cend = 0;
            bool push = false;
            if (open[k]) {
                cbeg = col_ptr[cm[k]];  // loaded alongside the claim, for the entry
                cend = col_ptr[cm[k] + 1];
                push = mgm_cas(bfs + cm[k], unvisited, level + 1) == unvisited;
                if (push) {
                    // with the root array, parent(cm) <- c stands for pred(r) <- c (see
                    // mgm_alternate_parents); the entry carries the root
                    (with_root ? parent + cm[k] : pred + r[k])[0] = e.c;
                    depth = max(depth, level + 1 - l0);
                }
            }
            const I slot = mgm_warp_slot<I>(push, nxt_len, lg.lane);
            if (push) mgm_store_entry(nxt, slot, cm[k], cbeg, cend, with_root ? e.root : (I)-1);
        }
        if (__ballot_sync(MGM_FULL_MASK, ended) & lg.gmask) {
            if (lg.glane == 0) *found = 1;
            if (with_root) active = false;  // GPUBFS-WR: this root stops expanding
        }
        if (j0 + step >= e.end) active = false;
    }
}

// One BFS level over the frontier entries cur[0 .. n): the groups with slots first,
// first + stride, ... expand their columns (level `level`) into `nxt`.
template <typename I>
__device__ __forceinline__ void mgm_expand(const I* cur, I n, I* nxt, I* nxt_len, I* found, I first, I stride,
                                           const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                                           I* mu_row, I* bfs, I* parent, I* pred, I level, I l0, I unvisited,
                                           int with_root, const mgm_groups& lg, I& depth) {
    for (I base = first; base < n; base += stride) {
        const I i = base + lg.gid;
        mgm_entry<I> e = {-1, 0, 0, -1};
        if (i < n) e = mgm_load_entry(cur, i);
        mgm_expand_entry<I>(e, i < n, level, nxt, nxt_len, found, col_ptr, col_rows, mu_row, bfs, parent, pred, l0,
                            unvisited, with_root, lg, depth);
    }
}

// The traversal of a phase as one FIFO work queue, without levels: queue[0 .. *tail) holds the
// entries pushed so far (the roots first), every slot -1 until its entry is stored. Each warp
// reserves a slot per group at *head, waits until its entries are stored, expands them
// (children are pushed at *tail), empties the slots again and counts them at *finished. An
// entry's children are counted at *tail before the entry is counted at *finished, so when a
// warp's count makes *finished equal *tail no entry is left and none can come: that warp stores
// `phase` at *done. Warp 0 of each block polls *done for its block (s_done), so the waiting
// warps do not all poll one address. Reserved slots at or beyond the final *tail are never
// stored; their groups leave with the others.
template <typename I>
__device__ __forceinline__ void mgm_queue_traverse(I* queue, I n_cols, I* head, I* tail, I* finished, I* done,
                                                   I phase, volatile int* s_done, I* found,
                                                   const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                                                   I* mu_row, I* bfs, I* parent, I* pred, I l0, I unvisited,
                                                   int with_root, const mgm_groups& lg, I& depth) {
    const I per_warp = 32 / lg.group;
    const bool poller = (threadIdx.x >> 5) == 0;
    I slot = -1;
    unsigned int idle = 0;
    for (;;) {
        if (__all_sync(MGM_FULL_MASK, slot < 0)) {
            I base = 0;
            if (lg.lane == 0) base = mgm_atomic_add(head, per_warp);
            slot = __shfl_sync(MGM_FULL_MASK, base, 0) + lg.gid;
        }
        mgm_entry<I> e = {-1, -1, -1, -1};
        if (slot >= 0 && slot < n_cols) e = mgm_load_entry(queue, slot);
        const bool ready = e.c >= 0 && e.end >= 0;  // both halves stored (int64 entries take two)
        if (__any_sync(MGM_FULL_MASK, ready)) {
            idle = 0;
            // e.c's level, stored by the compare-and-swap that pushed it (at least L0 if that store
            // is not seen yet; a taken root reads -1 and stops at once, by the early exit)
            const I level = ready ? max(mgm_load<I>(bfs + e.c), l0) : (I)0;
            if (ready && lg.glane == 0) mgm_store_entry(queue, slot, (I)-1, (I)-1, (I)-1, (I)-1);
            mgm_expand_entry<I>(e, ready, level, queue, tail, found, col_ptr, col_rows, mu_row, bfs, parent, pred, l0,
                                unvisited, with_root, lg, depth);
            if (ready) slot = -1;
            __threadfence();  // the children (tail, entries) before the count below
            const unsigned int mine = __ballot_sync(MGM_FULL_MASK, ready && lg.glane == 0);
            if (lg.lane == 0) {
                __threadfence();
                const I k = (I)__popc(mine);
                const I f = mgm_atomic_add(finished, k) + k;
                __threadfence();
                if (f == *(volatile I*)tail) {
                    *(volatile I*)done = phase;
                    __threadfence();
                }
            }
            continue;
        }
        if (poller && lg.lane == 0) *s_done = *(volatile I*)done == phase ? 1 : 0;
        __syncwarp();
        if (__shfl_sync(MGM_FULL_MASK, *s_done, 0)) break;
        if (MGM_QUEUE_BACKOFF_NS) __nanosleep(min(32u << min(idle, 16u), (unsigned int)MGM_QUEUE_BACKOFF_NS));
        ++idle;
    }
}

template <typename I>
__global__ void __launch_bounds__(1024) apfb_persistent(I n_rows, I n_cols, const I* __restrict__ col_ptr, const I* __restrict__ col_rows,
                                I* mu_row, I* mu_col, I* bfs, I* parent, I* pred, I* queue, I* ctl,
                                unsigned long long* bar, I l0, int with_root, int stop_at_first, I max_phases,
                                int group, I local_max, int queue_mode, I queue_roots, unsigned long long* stats) {
    __shared__ I s_len[3];
    __shared__ I s_found[3];
    __shared__ int s_done;
    const I unvisited = l0 - MGM_UNVISITED_OFFSET;
    const I tid = mgm_thread_id<I>();
    const I nthreads = mgm_thread_count<I>();
    const int lane = threadIdx.x & 31;
    const I warp = tid >> 5;
    const I nwarps = nthreads >> 5;
    const I per_warp = 32 / group;  // group: 4, 8, 16 or 32 lanes per column (the host picks it)
    mgm_groups lg;
    lg.group = group;
    lg.lane = lane;
    lg.gid = lane / group;
    lg.glane = lane % group;
    lg.gbase = lg.gid * group;
    lg.gmask = group == 32 ? MGM_FULL_MASK : ((1u << group) - 1u) << lg.gbase;
    I* const half[2] = {queue, queue + (size_t)4 * (size_t)n_cols};  // 4 n_cols may not fit in int
    // stats[0..8], kept by thread 0: nanoseconds in INITBFSARRAY, grid-wide levels and queue
    // traversals, block-local runs, ALTERNATE and FIXMATCHING (each up to the barrier that ends
    // it); grid-wide levels, block-local runs, block-local levels, queue traversals and their
    // levels. At the end stats[9..10]: phases, and 1 when max_phases was reached.
    unsigned long long st[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    unsigned long long clock = mgm_now();
    unsigned long long epoch = 0;
    I g = 0;  // grid-wide levels run: picks the ctl slots
    I phases = 0;
    bool capped = false;
    I* const roots_len = ctl + MGM_CTL_TAIL;
    for (;;) {
        if (threadIdx.x == 0) s_done = 0;
        // INITBFSARRAY; the unmatched columns (roots) form the first frontier, in half[0].
        for (I base = tid - lane; base < n_cols; base += nthreads) {
            const I c = base + lane;
            bool root_col = false;
            if (c < n_cols) {
                root_col = mgm_load<I>(mu_col + c) < 0;
                bfs[c] = root_col ? l0 : unvisited;
            }
            const I slot = mgm_warp_slot<I>(root_col, roots_len, lane);
            if (root_col) mgm_store_entry(half[0], slot, c, col_ptr[c], col_ptr[c + 1], with_root ? c : (I)-1);
        }
        mgm_grid_sync(bar, epoch);
        mgm_lap(st[0], clock, tid);
        ++phases;
        bool found = false;
        I t = 0;  // BFS level, minus L0
        I n = mgm_load<I>(roots_len);
        I depth = 0;  // deepest level claimed, minus L0
        // The work queue takes the phases that start with at most queue_roots roots; the wide
        // phases before them run level by level.
        const bool qm = queue_mode && n <= queue_roots;
        if (qm && n > 0) {  // no roots: nothing to search
            mgm_queue_traverse<I>(queue, n_cols, ctl + MGM_CTL_HEAD, ctl + MGM_CTL_TAIL, ctl + MGM_CTL_FINISHED,
                                  ctl + MGM_CTL_DONE, phases, &s_done, ctl + 3, col_ptr, col_rows, mu_row, bfs, parent,
                                  pred, l0, unvisited, with_root, lg, depth);
            for (int d = 16; d > 0; d >>= 1) depth = max(depth, __shfl_xor_sync(MGM_FULL_MASK, depth, d));
            if (lane == 0 && depth > 0) mgm_atomic_max(ctl + MGM_CTL_DEPTH, depth);
            mgm_grid_sync(bar, epoch);
            found = mgm_load<I>(ctl + 3) != 0;
            mgm_lap(st[1], clock, tid);
            st[7] += 1;
            st[8] += (unsigned long long)mgm_load<I>(ctl + MGM_CTL_DEPTH) + 1;
        }
        if (qm) n = 0;  // the level loop below has nothing to do
        for (;;) {
            if (n == 0 || (stop_at_first && found)) break;
            if (n <= local_max) {
                // A run of levels by block 0 alone; the others wait at the grid barrier below.
                if (blockIdx.x == 0) {
                    if (threadIdx.x < 3) {
                        s_len[threadIdx.x] = 0;
                        s_found[threadIdx.x] = 0;
                    }
                    __syncthreads();
                    I u = 0;
                    bool local_found = false;
                    for (;;) {
                        if (threadIdx.x == 0) {
                            s_len[(u + 2) % 3] = 0;
                            s_found[(u + 1) % 3] = 0;
                        }
                        mgm_expand<I>(half[t & 1], n, half[(t + 1) & 1], s_len + (u + 1) % 3, s_found + u % 3,
                                      (I)(threadIdx.x >> 5) * per_warp, (I)(blockDim.x >> 5) * per_warp, col_ptr,
                                      col_rows, mu_row, bfs, parent, pred, l0 + t, l0, unvisited, with_root, lg,
                                      depth);
                        __syncthreads();
                        n = s_len[(u + 1) % 3];
                        local_found = local_found || s_found[u % 3] != 0;
                        ++t;
                        ++u;
                        if (n == 0 || n > local_max || (stop_at_first && local_found)) break;
                    }
                    if (threadIdx.x == 0) {
                        ctl[9] = t;
                        ctl[10] = n;
                        ctl[11] = local_found ? 1 : 0;
                        ctl[13] = u;
                    }
                }
                mgm_grid_sync(bar, epoch);
                t = mgm_load<I>(ctl + 9);
                n = mgm_load<I>(ctl + 10);
                found = found || mgm_load<I>(ctl + 11) != 0;
                mgm_lap(st[2], clock, tid);
                st[5] += 1;
                st[6] += (unsigned long long)mgm_load<I>(ctl + 13);
                continue;
            }
            // A grid-wide level.
            I* nxt_len = ctl + (g + 1) % 3;
            I* level_found = ctl + 3 + g % 3;
            if (tid == 0) {
                ctl[(g + 2) % 3] = 0;
                ctl[3 + (g + 1) % 3] = 0;
            }
            mgm_expand<I>(half[t & 1], n, half[(t + 1) & 1], nxt_len, level_found, warp * per_warp,
                          nwarps * per_warp, col_ptr, col_rows, mu_row, bfs, parent, pred, l0 + t, l0, unvisited,
                          with_root, lg, depth);
            mgm_grid_sync(bar, epoch);
            n = mgm_load<I>(nxt_len);
            found = found || mgm_load<I>(level_found) != 0;
            ++t;
            ++g;
            mgm_lap(st[1], clock, tid);
            st[4] += 1;
        }
        if (!found) break;  // no augmenting path: the matching is maximum
        // ALTERNATE [APFB Alg. 3], from every claimed end of a path.
        for (I r = tid; r < n_rows; r += nthreads) {
            if (mgm_load<I>(mu_row + r) != -2) continue;
            if (with_root) {
                mgm_alternate_parents<I>(r, mu_row, mu_col, pred, parent, n_cols);
            } else {
                mgm_alternate_path<I>(r, mu_row, mu_col, pred, n_cols);
            }
        }
        mgm_grid_sync(bar, epoch);
        // FIXMATCHING, rows against columns, then columns against rows (GPUBFS only: with the
        // root array the paths are vertex-disjoint and nothing needs repair).
        if (!with_root) {
            for (I r = tid; r < n_rows; r += nthreads) mgm_fix_row<I>(r, mu_row, mu_col);
            mgm_grid_sync(bar, epoch);
            for (I c = tid; c < n_cols; c += nthreads) mgm_fix_col<I>(c, mu_row, mu_col);
        }
        if (queue_mode && !qm) {  // the levels used the queue's slots: empty them for the work queue
            for (size_t i = (size_t)tid; i < (size_t)4 * (size_t)n_cols; i += (size_t)nthreads) queue[i] = -1;
        }
        if (tid == 0) {
            for (int k = 0; k < 6; ++k) ctl[k] = 0;
            ctl[MGM_CTL_DEPTH] = 0;
            ctl[MGM_CTL_HEAD] = 0;
            ctl[MGM_CTL_TAIL] = 0;
            ctl[MGM_CTL_FINISHED] = 0;
        }
        mgm_grid_sync(bar, epoch);
        mgm_lap(st[3], clock, tid);
        if (phases >= max_phases) {
            capped = true;
            break;
        }
    }
    if (tid == 0) {
        for (int k = 0; k < 9; ++k) stats[k] = st[k];
        stats[9] = (unsigned long long)phases;
        stats[10] = capped ? 1ull : 0ull;
    }
}
