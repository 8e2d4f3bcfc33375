/* Circulant projections: the canonical (machine-independent) value of an
 * entry, and the direct evaluation of sparse samples.
 *
 * A block is a circulant of size n with first column r (double copies of
 * float32 values), sign diagonal s (+-1, length d <= n) and an optional bias
 * per circulant row; x (length d) is zero-padded to n.  Row i of the product is
 *     y_i = bias_i + sum_{j<d} (s_j x_j) * r[(i - j) mod n].
 * Its *canonical value* is that sum evaluated in double precision starting
 * from bias_i (or +0) and adding the terms for j = 0, 1, ..., d-1 in order.
 * Every product is exact (a float32 times a float32 fits a double), so the
 * canonical value is the same bits on every IEEE machine compiled without
 * FMA contraction (-ffp-contract=off); its sign is what hsvm's circulant codes
 * are defined by.  Zero x_j may be skipped: they change the sum at most by the
 * sign of a zero. */
#ifndef HSVM_CIRCULANT_H
#define HSVM_CIRCULANT_H
#include <stdint.h>

/* Canonical values of `count` entries of dense float32 samples X [rows, d]:
 * entry e is circulant row row[e] of sample sample[e].  bias is indexed by the
 * circulant row (length n) or NULL.  Results to out[e]. */
void hsvm_circ_eval_dense(const float *X, int64_t d, const int64_t *sample, const int64_t *row, int64_t count,
                          const double *r, const double *s, int64_t n, const double *bias, double *out);

/* The same for CSR samples (int64 indptr, int32 column indices increasing
 * within a row, float32 data). */
void hsvm_circ_eval_csr(const int64_t *indptr, const int32_t *indices, const float *data, const int64_t *sample,
                        const int64_t *row, int64_t count, const double *r, const double *s, int64_t n,
                        const double *bias, double *out);

/* Direct evaluation of whole rows of a stride set for CSR samples, each output
 * its canonical value.  The stride set is the circulant rows Q*j', 0 <= j' < m
 * (m = n / Q); poly [Q, m] holds r in polyphase order, poly[b*m + i] =
 * r[(Q*i - b) mod n], so that output j' of a sample is
 *     bias_S[j'] + sum_k (s_jk x_jk) * poly[(j_k mod Q)*m + (j' - j_k div Q) mod m]
 * accumulated over the sample's nonzeros in column order (contiguous reads).
 * Outputs j' < m_out are computed (m_out <= m; natural row order uses Q = 1,
 * m = n, m_out = the rows wanted); bias_S has length m_out or is NULL.  Then
 * out[i*out_stride + t] = value of output sel[t], t < c.  scratch: m_out doubles. */
void hsvm_circ_direct_csr(const int64_t *indptr, const int32_t *indices, const float *data, int64_t rows,
                          const double *s, const double *poly, int64_t Q, int64_t m, int64_t m_out,
                          const double *bias_S, const int64_t *sel, int64_t c, double *scratch,
                          double *out, int64_t out_stride);

/* Z [rows, n] (double) = the samples times the signs, zero-padded to n: the
 * input of the forward FFT; sqnorm[i] = ||x_i||^2 (any summation order).
 * Dense X [rows, dx] (dx <= n), or CSR rows.  Returns 1 if a sample holds a
 * NaN or an infinity, else 0. */
int hsvm_circ_load_dense(const float *X, int64_t rows, int64_t dx, const double *s, int64_t n, double *Z,
                         double *sqnorm);
int hsvm_circ_load_csr(const int64_t *indptr, const int32_t *indices, const float *data, int64_t rows,
                       const double *s, int64_t n, double *Z, double *sqnorm);

/* The spectrum to invert: G = P . R (Q = 1; G may be P), or for a stride set
 * of Q > 1 the folded product G_k = sum_{a<Q} (P . R)_{k + a m}, m = n / Q --
 * subsampling rows Q j' in time is aliasing in frequency, so those rows are
 * the inverse DFT of length m of G.  P [rows, n/2 + 1], R [n/2 + 1] and G
 * [rows, m/2 + 1] are complex (interleaved re, im) half spectra of real
 * signals; the missing upper half is the conjugate mirror. */
void hsvm_circ_spectrum(const double *P, int64_t rows, int64_t n, const double *R, int64_t Q, int64_t m, double *G);

/* out[i*out_stride + t] = y[i*m + sel[t]] (+ bias[t]) for t < c, and the list
 * of entries inside the rounding band coef * (rnorm ||x_i|| + |bias_t|):
 * their (row, t) go to hit_row/hit_t (at most hit_cap stored).  bias and
 * abs_bias are both NULL or both length c.  Returns the number of entries in
 * the band (call again with a larger buffer if it exceeds hit_cap). */
int64_t hsvm_circ_finish(const double *y, int64_t rows, int64_t m, const int64_t *sel, int64_t c,
                         const double *bias, const double *abs_bias, const double *sqnorm,
                         double coef, double rnorm, double *out, int64_t out_stride,
                         int64_t *hit_row, int64_t *hit_t, int64_t hit_cap);

#endif
