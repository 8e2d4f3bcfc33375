/* Kernel evaluations and the incremental Cholesky factor of KRSH
 * (kernelized random subspace hashing), in double precision and a fixed
 * summation order, so that a fitted kernel hash is the same on every machine. */
#ifndef HSVM_KERNELS_H
#define HSVM_KERNELS_H
#include <stdint.h>

/* Kernel kinds (hsvm_cli.krsh.KERNEL_IDS). */
enum { HSVM_K_LINEAR = 0, HSVM_K_POLY = 1, HSVM_K_RBF = 2, HSVM_K_CHI2 = 3, HSVM_K_INTERSECTION = 4 };

/* exp(x) from exactly rounded operations only (Cody-Waite reduction, Taylor
 * polynomial, exact scaling by 2^k): the same bits on every IEEE machine,
 * unlike libm builds.  Relative error below 2e-16 on [-745, 709]. */
double hsvm_exp(double x);

/* out[i*ldo + l] = k(x_i, z_l) for i < n, l < m.  X is [n, d] row-major
 * float32; ZT holds the landmarks transposed, [d, ldz] row-major (landmark l
 * in column l), float32.  Sums run over the features in index order, in
 * double, independently for every (i, l), so each value is a fixed function
 * of its two float32 rows:
 *   linear        x.z
 *   poly          (gamma x.z + coef0)^degree   (degree >= 1, repeated products)
 *   rbf           exp(-gamma sum (x_j - z_j)^2)
 *   chi2          exp(-gamma sum (x_j - z_j)^2 / (x_j + z_j)), terms with x_j + z_j = 0 are 0
 *   intersection  sum min(x_j, z_j)
 * Returns 0, or -1 for an unknown kind. */
int hsvm_kernel_block(int kind, const float *X, int64_t n, int64_t d, const float *ZT, int64_t ldz, int64_t m,
                      double gamma, double coef0, int degree, double *out, int64_t ldo);

/* Offers candidate landmarks to the incremental Cholesky factor of the
 * landmark Gram matrix K_ZZ = L L^T (kernel Gram-Schmidt in feature space).
 *   C      [nc, d] float32 candidate rows, tried in order;
 *   ZT     [d, mcap] float32, landmarks kept so far in columns 0..*kept-1;
 *          a kept candidate is copied into the next column;
 *   Lc     [mcap, mcap] double, L stored column-major (Lc[j*mcap + i] = L_ij);
 *   diag   [mcap] double, k(z, z) of the kept landmarks (recorded);
 *   taken  [nc] int8 out: 1 where the candidate was kept;
 *   resid  [nc] double out: squared residual over k(c, c) (relative), or NaN
 *          where the candidate was not examined because mcap were kept;
 *   work   unused (kept for the signature).
 * Candidates are processed as a block (panels of L reused across the block)
 * in exactly the per-entry operation order of offering them one at a time,
 * so the result does not depend on how candidates are split into calls.
 * A candidate c is kept when its squared residual r^2 = k(c,c) - |l|^2, with
 * L l = k(Z, c), exceeds tol * k(c,c); the new row of L is (l^T, r).
 * Returns the new number kept, -1 for an unknown kind, -2 out of memory. */
int64_t hsvm_krsh_offer(int kind, double gamma, double coef0, int degree, const float *C, int64_t nc, int64_t d,
                        float *ZT, double *Lc, double *diag, int64_t mcap, int64_t kept, double tol,
                        int8_t *taken, double *resid, double *work);

/* sum_l a_l b_l of float32 vectors in double (products exact) in a fixed
 * order: eight partial sums over l mod 8, each in index order, added in
 * order.  The canonical value behind a KRSH code bit. */
double hsvm_exact_dot(const float *a, const float *b, int64_t m);

/* out[t] = hsvm_exact_dot(Y + ii[t]*ldy, R + jj[t]*ldr, m) for t < count. */
void hsvm_exact_dots(const float *Y, int64_t ldy, const float *R, int64_t ldr, int64_t m, const int64_t *ii,
                     const int64_t *jj, int64_t count, double *out);

/* Index (row-major order) of the first negative or non-finite entry of X [n, d], or
 * -1 when every entry is finite and >= 0 (chi2 and intersection need that). */
int64_t hsvm_first_negative(const float *X, int64_t n, int64_t d);

#endif
