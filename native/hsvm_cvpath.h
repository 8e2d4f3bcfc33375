/* Cross-validation of one-vs-one linear SVMs over a path of C values: every
 * pair's binary SVM solved by dual coordinate descent, warm-started from the
 * previous C, and the held-out fold voted on at once (train/cross_validation.py). */
#ifndef HSVM_CVPATH_H
#define HSVM_CVPATH_H
#include <stdint.h>

/* Rows are ordered by (fold, class): rows of fold f and class c are
 * [block[f*K + c], block[f*K + c + 1]), block has F*K + 1 entries, block[F*K] = n.
 * Pair p (p0 <= p < p1) opposes class pair_a[p] (label +1) to pair_b[p] (-1)
 * and is trained on their rows outside fold `fold`, extended by a constant
 * feature `bias` (LIBLINEAR's -B), with C = C * class_weight[c] for the
 * rows of class c (class_weight: K positive weights, NULL: all 1, as
 * LIBLINEAR's -wi): its dual variables are
 * alpha[alpha_off[p] .. alpha_off[p+1]), in row order, read as the warm start
 * and overwritten with the solution at C.  loss 2: L2-loss SVM (dual diagonal
 * 1/(2C), no upper bound), loss 1: L1-loss (upper bound C).  Coordinate
 * descent visits the variables in a random order per pass (SplitMix64 seeded
 * by seeds[p]) until the projected gradient spans at most eps, or max_iter
 * passes.  hsvm_cv_primal_path then gives every held-out row x (fold `fold`, all classes) the
 * decision f = w.x + w_bias*bias: votes[winner*nh + x - h0] += 1 (pair_a when
 * f > 0) and conf[a*nh + x - h0] += round(f * 2^24), conf[b*nh + ..] -= the same
 * (fixed point, so sums do not depend on the order of pairs), h0 the fold's
 * first row.  passes [2]: passes[0] receives the total passes, passes[1] the
 * number of solves the pass limit stopped before the tolerance was met (as
 * LIBLINEAR warns "reaching max number of iterations").  Returns 0, -1 for
 * bad arguments, -2 when out of memory.
 *
 * ray (NULL / 0: off): each pair's warm start moves along the ray s alpha to
 * the s that minimises the new C's dual objective (native/cvpath_dcd.h,
 * ray_scale).  The primal and dense forms need |w~|^2 of the incoming alpha
 * for it: ray[p] (n_pairs doubles for the fold, zero before the first call,
 * kept with alpha) holds the one their previous call saw, 0 when unknown. */

/* Kernel form: gram is the n x n matrix of x_i.x_j + bias^2 (float,
 * row-major: the constant feature's product folded in, so that each pair's
 * Q is gram's entries with the signs y_i y_j); only the solve (the caller
 * forms the held-out decisions from the dual variables). */
int hsvm_cv_gram_solve(const float *gram, int64_t n, const int64_t *block, int32_t n_folds, int32_t n_classes,
                       int32_t fold, const int32_t *pair_a, const int32_t *pair_b, int64_t p0, int64_t p1,
                       const int64_t *alpha_off, double *alpha, const uint64_t *seeds, double C,
                       const double *class_weight, int32_t loss, double eps, int32_t max_iter, int32_t ray,
                       int64_t *passes);

/* Whether CSR rows (indptr int64 [n+1], indices int32) are well formed with
 * d features: 0, or -1.  hsvm_cv_primal_path trusts rows that passed it. */
int hsvm_cv_check_rows(const int64_t *indptr, const int32_t *indices, int64_t n, int32_t d);

/* Primal form: rows as CSR (indptr int64 [n+1], indices of index_bytes 2
 * (uint16, only when d <= 65536) or 4 (int32), data float32; checked once
 * with hsvm_cv_check_rows), d features, sqnorm[i] = ||x_i||^2 (of the float32
 * values); w (d + 1 doubles) kept as sum alpha y x.  votes [K, nh] and conf
 * [K, nh] are class-major (and added to, not overwritten).  kernel
 * (HSVM_KERNEL_*, hsvm_cpu.h) is the code path of the held-out products;
 * every path gives the same bits.  Also returns hsvm_resolve_kernel's
 * HSVM_CPU_E* codes.  W_block (NULL: allocated per call): the caller's
 * (d + 1) * 8 doubles, 64-byte aligned and zero, left zero on return --
 * kept by the caller across calls, since a fresh block of a wide problem
 * cost its page faults at every call (a million columns: 64 MB, 80 times a C
 * step; the faults were most of the step's time). */
int hsvm_cv_primal_path(const int64_t *indptr, const void *indices, int32_t index_bytes, const float *data,
                        int64_t n, int32_t d, const double *sqnorm, const int64_t *block, int32_t n_folds,
                        int32_t n_classes, int32_t fold, const int32_t *pair_a, const int32_t *pair_b, int64_t p0,
                        int64_t p1, const int64_t *alpha_off, double *alpha, const uint64_t *seeds, double bias,
                        double C, const double *class_weight, int32_t loss, double eps, int32_t max_iter,
                        double *ray, double *W_block, int32_t kernel_request, int32_t *votes, int64_t *conf,
                        int64_t *passes);

/* Primal form with the folds fused: pairs p0..p1 of n_pairs solved in every
 * fold at once (fold f in lane f; 2 <= n_folds <= 8), each pass over a
 * pair's rows shared by its folds; the same problems, stopping rule and
 * warm start as hsvm_cv_primal_path, one visiting order per pair and pass
 * (seeds[p]).  alpha[f] and alpha_off[f] are fold f's arrays as
 * hsvm_cv_primal_path takes them; ray NULL or [n_folds, n_pairs]; votes
 * and conf as hsvm_cv_primal_path's but sample-major, [n, K], for every row
 * (each held out in its own fold), added to; W_blocks NULL or (n_folds + 1)
 * blocks as hsvm_cv_primal_path's W_block, zero and left zero;
 * class_cols[class_col_ptr[c] .. class_col_ptr[c + 1]) the columns of class
 * c's rows (every fold's; indices as index_bytes says; each at least once),
 * the weights a pair of c can write. */
int hsvm_cv_primal_folds(const int64_t *indptr, const void *indices, int32_t index_bytes, const float *data,
                         int64_t n, int32_t d, const double *sqnorm, const int64_t *block, int32_t n_folds,
                         int32_t n_classes, int64_t n_pairs, const int32_t *pair_a, const int32_t *pair_b, int64_t p0,
                         int64_t p1, const int64_t *const *alpha_off, double *const *alpha, const uint64_t *seeds,
                         double bias, double C, const double *class_weight, int32_t loss, double eps,
                         int32_t max_iter, double *ray, const int64_t *class_col_ptr, const void *class_cols,
                         double *W_blocks, int32_t kernel_request, int32_t *votes, int64_t *conf, int64_t *passes);

/* The primal form's held-out products, exposed for tests: out[(r - r0) *
 * n_pairs + p] = sum over row r's non-zeros of W[p][column] * value, for
 * the rows [r0, r1) (checked by the caller) and W [n_pairs, d + 1]; blocked
 * 1: eight pairs at once on the kernel's code path, 0: pair by pair.  Every
 * choice gives the same bits.  Returns 0, -1, -2 (memory) or HSVM_CPU_E*. */
int hsvm_cv_products(const double *W, int64_t n_pairs, int32_t d, const int64_t *indptr, const void *indices,
                     int32_t index_bytes, const float *data, int64_t r0, int64_t r1, int32_t kernel_request,
                     int32_t blocked, double *out);

/* Dense form: the primal form's iteration on rows stored as a dense float32
 * matrix X [n, dp], dp a multiple of 32 (columns zero-padded), sqnorm as
 * for the primal form; votes and conf as hsvm_cv_primal_path's.  W_kept
 * (NULL: none) [n_pairs, dp + 8], 64-byte aligned, keeps pair p's weights
 * between calls (the bias feature's at column dp; zero before the first
 * call, with alpha), so that they are not rebuilt from alpha at every C;
 * without it they are.  kept_valid 0: W_kept does not hold alpha's weights
 * (the path went back to an earlier point): rebuilt into it from alpha. */
int hsvm_cv_dense_path(const float *X, int64_t n, int64_t dp, const double *sqnorm, const int64_t *block,
                       int32_t n_folds, int32_t n_classes, int32_t fold, const int32_t *pair_a, const int32_t *pair_b,
                       int64_t p0, int64_t p1, const int64_t *alpha_off, double *alpha, const uint64_t *seeds,
                       double bias, double C, const double *class_weight, int32_t loss, double eps,
                       int32_t max_iter, double *W_kept, int32_t kept_valid, double *ray, int32_t kernel_request,
                       int32_t *votes, int64_t *conf, int64_t *passes);

/* The dense form's product w.x (w double, x float32, dp a multiple of 32)
 * on a code path (tests): *out; returns 0, -1 or HSVM_CPU_E*. */
int hsvm_cv_dense_dot(const double *w, const float *x, int64_t dp, int32_t kernel_request, double *out);

/* The kernel form's held-out votes: pair p's decision on held-out sample x < nh
 * is rows[row_a[p]*stride + x] + rows[row_b[p]*stride + x] (the contributions of
 * its two classes' training rows, the bias term included through the Gram
 * matrix); pair_a[p] wins when it is > 0.  votes and conf [nh, K] are overwritten: the winner counts and the
 * decisions summed signed towards each class, in pair order.  Returns 0,
 * -1 for a class out of range or stride < nh, -2 when out of memory. */
int hsvm_cv_vote_rows(const float *rows, int64_t stride, int64_t nh, const int64_t *row_a, const int64_t *row_b,
                      const int32_t *pair_a, const int32_t *pair_b, int64_t n_pairs, int32_t n_classes,
                      int32_t *votes, double *conf);

#endif
