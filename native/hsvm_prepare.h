/* Samples as prediction wants them, in one pass over a parsed chunk: float32,
 * L2-normalised with machine-independent norms, dense where dense enough
 * (hsvm_cli/preprocess.py says when). */
#ifndef HSVM_PREPARE_H
#define HSVM_PREPARE_H
#include <stdint.h>

/* CSR rows (indptr [n+1], indices int32 < d, values double as parsed) to
 * float32.  Each value is first rounded to float32; with l2 != 0 a row is
 * then multiplied by the float32 rounding of 1/norm, norm = the square root
 * of the sum, in double and in index order, of the squares of its float32
 * values (all-zero rows stay zero) -- the bits hsvm_cli.preprocess gives.
 * Output: dense rows when dense != NULL (dense [n][d], zero-filled here),
 * else the new values in data [nnz] (same indptr and indices).  canonical
 * != 0 promises strictly increasing indices in every row (as the svmlight
 * reader gives them).  indptr holds offsets into indices and values (a
 * caller may pass a slice of rows); dense and data are addressed the same
 * way (dense from the first row passed, data by those offsets).  Returns the
 * number of non-finite results (values beyond float32 range), 0 normally. */
int64_t hsvm_prepare_csr(const int64_t *indptr, const int32_t *indices, const double *values, int64_t n,
                         int64_t d, int32_t l2, int32_t canonical, float *dense, float *data);

/* The same for values already rounded to float32 (the reader's float32
 * chunks), with the same results.  dense may be values itself (at
 * indptr[0]) when every row passed is fully dense (d values, canonical): the
 * rows are then normalised in place; -1 when they are not. */
int64_t hsvm_prepare_csr32(const int64_t *indptr, const int32_t *indices, const float *values, int64_t n,
                           int64_t d, int32_t l2, int32_t canonical, float *dense, float *data);

#endif
