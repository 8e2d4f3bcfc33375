/* Estimated cosine margins of an unnormalised model's hash filter
 * (predict/raw_filter.py): the per-sample thresholds of the range query,
 * applied to Hamming distances already computed. */
#ifndef HSVM_RAW_MARGINS_H
#define HSVM_RAW_MARGINS_H
#include <stdint.h>

/* mu[i*m + j] = (float)(cos_table[dist[i*m + j]] + b[j] / (x_norms[i] * w_norms[j]))
 * for samples i < n and classifiers j < m, in double precision, then rounded
 * once to float (the bits of numpy's cos_table[dist] + b / s, astype(float32));
 * where x_norms[i] * w_norms[j] is not positive the classifier is constant:
 * +1 when b[j] > 0, else -1.  dist holds values 0..bits and cos_table has
 * bits + 1 entries.  Returns 0, or -1 when a distance is outside 0..bits. */
int hsvm_raw_margins(const int32_t *dist, int64_t n, int64_t m, int32_t bits, const double *cos_table,
                     const double *x_norms, const double *w_norms, const double *b, float *mu);

#endif
