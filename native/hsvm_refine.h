/* Exact decision values for a sparse set of (sample, classifier) cells: the
 * refine step's sampled dense-dense product. */
#ifndef HSVM_REFINE_H
#define HSVM_REFINE_H
#include <stdint.h>

/* out[c] = X[cx[c]] . W[cw[c]] + bias[cw[c]] for c < ncells, X dense [*, d]
 * row-major, W [*, d] row-major.  Callers order cells by cw so each classifier
 * row is streamed once per batch.  Every path (kernel: 0 = best available or
 * as HSVM_KERNEL says, 1 = portable, 2 or 3 = AVX2) sums in the same order --
 * 8 interleaved float partial sums of separately rounded products, then a
 * fixed tree -- so results are bit-identical on every CPU.
 * Returns 0, or -4 if the requested kernel is not available on this CPU. */
int hsvm_sddmm_dense(const float *X, const float *W, const float *bias, int64_t d,
                     const int64_t *cx, const int64_t *cw, int64_t ncells, float *out, int kernel);

/* The same with X in CSR form (indptr int64, indices int32, data float32). */
void hsvm_sddmm_csr(const int64_t *indptr, const int32_t *indices, const float *data,
                    const float *W, const float *bias, int64_t d,
                    const int64_t *cx, const int64_t *cw, int64_t ncells, float *out);

#endif
