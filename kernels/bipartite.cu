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
__global__ void fix_cols(I n_cols, const I* __restrict__ mu_row, I* mu_col) {
    for (I v = mgm_thread_id<I>(); v < n_cols; v += mgm_thread_count<I>()) {
        I mv = mu_col[v];
        if (mv == -2 || (mv >= 0 && mu_row[mv] != v)) mu_col[v] = -1;
    }
}

// FIXMATCHING, row side [APFB]: rmatch(r) <- -1 for every row with cmatch(rmatch(r)) != r (also
// clears the -2 marks of augmenting-path ends that were not alternated); thread per row.
template <typename I>
__global__ void fix_rows(I n_rows, I* mu_row, const I* __restrict__ mu_col) {
    for (I u = mgm_thread_id<I>(); u < n_rows; u += mgm_thread_count<I>()) {
        I mu = mu_row[u];
        if (mu < 0 || mu_col[mu] != u) mu_row[u] = -1;
    }
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
template <typename I>
__global__ void alternate(I n_rows, I* mu_row, I* mu_col, const I* __restrict__ pred,
                          const I* __restrict__ bfs, const I* __restrict__ root, I l0, int level_encoding) {
    for (I r = mgm_thread_id<I>(); r < n_rows; r += mgm_thread_count<I>()) {
        if (mu_row[r] != -2) continue;
        if (level_encoding) {
            I c = pred[r];
            I rt = root[c];
            I lc = (c == rt) ? l0 : bfs[c];
            if (bfs[rt] != -lc) continue;
        }
        I row = r;
        while (row != -1) {
            I matched_col = pred[row];
            I matched_row = mu_col[matched_col];
            if (matched_row > -1 && pred[matched_row] == matched_col) break;
            mu_col[matched_col] = row;
            mu_row[row] = matched_col;
            row = matched_row;
        }
    }
}
