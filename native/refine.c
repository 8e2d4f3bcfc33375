#include "hsvm_refine.h"

static inline float dot_dense(const float *x, const float *w, int64_t d)
{
    /* Eight independent partial sums let the compiler keep two SSE vectors
     * busy without -ffast-math, and fix the order of the additions. */
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= d; i += 8) {
        for (int j = 0; j < 8; j++)
            s[j] += x[i + j] * w[i + j];
    }
    for (int j = 0; i < d; i++, j++)
        s[j] += x[i] * w[i];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

void hsvm_sddmm_dense(const float *X, const float *W, const float *bias, int64_t d,
                      const int64_t *cx, const int64_t *cw, int64_t ncells, float *out)
{
    for (int64_t c = 0; c < ncells; c++) {
        const int64_t u = cw[c];
        out[c] = dot_dense(X + cx[c] * d, W + u * d, d) + bias[u];
    }
}

void hsvm_sddmm_csr(const int64_t *indptr, const int32_t *indices, const float *data,
                    const float *W, const float *bias, int64_t d,
                    const int64_t *cx, const int64_t *cw, int64_t ncells, float *out)
{
    for (int64_t c = 0; c < ncells; c++) {
        const int64_t u = cw[c];
        const float *w = W + u * d;
        float s = 0.0f;
        for (int64_t k = indptr[cx[c]]; k < indptr[cx[c] + 1]; k++)
            s += data[k] * w[indices[k]];
        out[c] = s + bias[u];
    }
}
