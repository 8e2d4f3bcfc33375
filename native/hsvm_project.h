/* Making sign random projections reproducible across machines. */
#ifndef HSVM_PROJECT_H
#define HSVM_PROJECT_H
#include <stdint.h>

/* Euclidean norms of the rows of a dense float32 matrix, summed in double in
 * index order (the same bits on every CPU, unlike SIMD reductions). */
void hsvm_row_norms(const float *X, int64_t n, int64_t d, double *out);

/* proj [n, D] holds X R^T as computed by some BLAS.  Any float32 summation
 * order is within gamma_m * |r_j| |x_i| of the exact value (m terms,
 * gamma_m = m u / (1 - m u), u = 2^-24), so only entries inside twice that band
 * can have a machine-dependent sign: those are recomputed in double, in index
 * order, and replaced by +1, -1 or 0; so are entries that overflowed
 * (inf, or NaN from inf - inf: the sum of samples near float32's limit,
 * whose sign depends on the order).  Every other sign is already the exact
 * one.  X dense [n, d] row-major; R [D, d] row-major; rnorm [D] the row norms
 * of R.  Returns the number of entries recomputed. */
int64_t hsvm_fix_signs_dense(const float *X, int64_t n, int64_t d, const float *R, const double *rnorm,
                             int64_t D, float *proj);

/* The same for X in CSR form (int64 indptr, int32 indices, float32 data). */
int64_t hsvm_fix_signs_csr(const int64_t *indptr, const int32_t *indices, const float *data, int64_t n,
                           int64_t d, const float *R, const double *rnorm, int64_t D, float *proj);

#endif
