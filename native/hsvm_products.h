/* Products w.x of samples and classifiers, the same bits whatever the block,
 * the thread or the instruction set (products.c).  This header is also fed
 * to cffi's cdef after dropping lines starting with '#'. */
#ifndef HSVM_PRODUCTS_H
#define HSVM_PRODUCTS_H
#include <stdint.h>

/* Return codes besides 0 (and the HSVM_CPU_E* codes of a bad kernel id). */
enum {
    HSVM_PRODUCTS_ENOMEM = -1      /* the packing buffer could not be allocated */
};

/* out[i * ldo + j] = sum over k of X[i * ldx + k] * W[j * d + k] for the n
 * rows of X and the P rows of W (float32, d features).  Every value is one
 * chain of fused multiply-adds over k = 0, 1, ..., d - 1 from +0, so it does
 * not depend on n, on the other rows, on the kernel (HSVM_KERNEL_*) or on how
 * a caller splits the rows between threads. */
int32_t hsvm_products_dense(const float *X, int64_t n, int64_t d, int64_t ldx, const float *W, int64_t P,
                            float *out, int64_t ldo, int32_t kernel);

/* The same for CSR rows (indices increasing within a row, all below d) and
 * WT, the d x P transpose of W: the chain runs over a row's stored entries
 * in index order, which gives the bits of hsvm_products_dense on the dense
 * row (a zero term leaves a chain unchanged). */
int32_t hsvm_products_csr(const int64_t *indptr, const int32_t *indices, const float *data, int64_t n,
                          const float *WT, int64_t P, float *out, int64_t ldo, int32_t kernel);

/* The same products read from W itself (P rows of ldw floats), without its
 * transpose: each classifier's row gathered at the sample's indices, the
 * same chain term for term, hence the same bits.  For a few rows, where
 * transposing W would cost more than all their products. */
int32_t hsvm_products_csr_direct(const int64_t *indptr, const int32_t *indices, const float *data, int64_t n,
                                 const float *W, int64_t ldw, int64_t P, float *out, int64_t ldo, int32_t kernel);

#endif
