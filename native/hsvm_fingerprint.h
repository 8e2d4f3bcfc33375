/* Sample fingerprints of a codes file (hsvm_cli/models/codes.py,
 * docs/formats.md "Sample fingerprints"): per CSR row, the sum mod 2^64 of
 * mix(index, float32 bits) over its nonzero values, plus their count times a
 * constant. */
#ifndef HSVM_FINGERPRINT_H
#define HSVM_FINGERPRINT_H
#include <stdint.h>

/* Rows [0, n) of CSR arrays indptr (int64 [n+1], absolute offsets into
 * indices and values), indices (int32, 0-based), values (float32); out
 * uint64 [n].  A value of 0 or -0 is no feature. */
void hsvm_row_fingerprints(const int64_t *indptr, int64_t n, const int32_t *indices, const float *values,
                           uint64_t *out);

#endif
