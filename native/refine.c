#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dot32.h"
#include "hsvm_cpu.h"
#include "hsvm_refine.h"

int hsvm_sddmm_dense(const float *X, const float *W, const float *bias, int64_t d,
                     const int64_t *cx, const int64_t *cw, const int64_t *order, int64_t ncells,
                     float *out, int32_t kernel)
{
    dot32_fn dot;
    const int32_t rc = dot32_choose(kernel, &dot, NULL, NULL, NULL);
    if (rc < 0)
        return rc;
    for (int64_t j = 0; j < ncells; j++) {
        const int64_t c = order ? order[j] : j;
        const int64_t u = cw[c];
        out[c] = dot(X + cx[c] * d, W + u * d, d) + bias[u];
    }
    return 0;
}

void hsvm_sddmm_csr(const int64_t *indptr, const int32_t *indices, const float *data,
                    const float *W, const float *bias, int64_t d,
                    const int64_t *cx, const int64_t *cw, const int64_t *order, int64_t ncells, float *out)
{
    for (int64_t j = 0; j < ncells; j++) {
        const int64_t c = order ? order[j] : j;
        const int64_t u = cw[c];
        const float *w = W + u * d;
        float s = 0.0f;
        for (int64_t k = indptr[cx[c]]; k < indptr[cx[c] + 1]; k++)
            s += data[k] * w[indices[k]];
        out[c] = s + bias[u];
    }
}

int hsvm_group_by_key(const int64_t *key, int64_t n, int64_t n_keys, int64_t *order)
{
    int64_t *start = calloc((size_t)n_keys + 1, sizeof(int64_t));
    if (!start)
        return -2;
    for (int64_t i = 0; i < n; i++) {
        if (key[i] < 0 || key[i] >= n_keys) {
            free(start);
            return -1;
        }
        start[key[i] + 1]++;
    }
    for (int64_t k = 0; k < n_keys; k++)
        start[k + 1] += start[k];
    for (int64_t i = 0; i < n; i++)
        order[start[key[i]]++] = i;
    free(start);
    return 0;
}
