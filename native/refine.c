#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dot32.h"
#include "hsvm_cpu.h"
#include "hsvm_refine.h"
#include "radix_sort.h"

int hsvm_sddmm_dense(const float *X, const float *W, const float *bias, int64_t d,
                     const int64_t *cx, const int64_t *cw, const int64_t *order, int64_t ncells,
                     float *out, int32_t kernel)
{
    dot32_fn dot;
    const int32_t rc = dot32_choose(kernel, &dot, NULL, NULL);
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

static inline void prefetch_row(const float *w, int64_t d)
{
    const char *p = (const char *)w;
    for (size_t o = 0; o < sizeof(float) * (size_t)d; o += 64)
        __builtin_prefetch(p + o, 0, 3);
}

int hsvm_sddmm_tiled(const float *X, const float *W, const float *bias, int64_t d,
                     const int64_t *cx, const int64_t *cw, int64_t ncells, int64_t n_rows,
                     int64_t tile, float *out, int32_t kernel)
{
    dot32_fn dot;
    dot32x2_fn dot2;
    int32_t rc = dot32_choose(kernel, &dot, &dot2, NULL);
    if (rc < 0)
        return rc;
    if (ncells <= 0)
        return 0;
    if (tile < 1 || n_rows < 1)
        return -1;
    /* Validate, and find the largest tile's cell count. */
    int64_t most = 0, start = 0;
    for (int64_t c = 0; c < ncells; c++) {
        if (cw[c] < 0 || cw[c] >= n_rows || cx[c] < 0 || (c > 0 && cx[c] < cx[c - 1]))
            return -1;
        if (cx[c] / tile != cx[start] / tile) {
            most = c - start > most ? c - start : most;
            start = c;
        }
    }
    most = ncells - start > most ? ncells - start : most;
    int key_bits = 1;
    while (key_bits < 62 && ((int64_t)1 << key_bits) < n_rows)
        key_bits++;
    if (most > INT32_MAX)
        return -2;      /* the sort's positions within a tile are int32 */
    uint64_t *key0 = malloc(sizeof(uint64_t) * (size_t)most), *key1 = malloc(sizeof(uint64_t) * (size_t)most);
    int32_t *idx0 = malloc(sizeof(int32_t) * (size_t)most), *idx1 = malloc(sizeof(int32_t) * (size_t)most);
    int64_t *count = malloc(sizeof(int64_t) * RADIX_SORT_BUCKETS);
    if (!key0 || !key1 || !idx0 || !idx1 || !count) {
        rc = -2;
        goto done;
    }
    for (int64_t s = 0; s < ncells;) {
        int64_t e = s + 1;
        while (e < ncells && cx[e] / tile == cx[s] / tile)
            e++;
        const int64_t m = e - s;
        for (int64_t t = 0; t < m; t++) {
            key0[t] = (uint64_t)cw[s + t];
            idx0[t] = (int32_t)t;
        }
        uint64_t *key = key0, *ktmp = key1;
        int32_t *idx = idx0, *itmp = idx1;
        radix_sort(&key, &idx, &ktmp, &itmp, m, key_bits, count);
        const int64_t *tcx = cx + s;
        float *tout = out + s;
        /* The tile's samples stay in L2; each classifier row is read once
         * for all of the tile's cells that need it, the next row requested
         * while this one is used. */
        for (int64_t t = 0; t < m;) {
            int64_t g = t + 1;
            while (g < m && key[g] == key[t])
                g++;
            if (g < m)
                prefetch_row(W + (int64_t)key[g] * d, d);
            const int64_t u = key[t];
            const float *w = W + u * d;
            int64_t j = t;
            for (; j + 1 < g; j += 2) {
                float r0, r1;
                dot2(X + tcx[idx[j]] * d, X + tcx[idx[j + 1]] * d, w, d, &r0, &r1);
                tout[idx[j]] = r0 + bias[u];
                tout[idx[j + 1]] = r1 + bias[u];
            }
            if (j < g)
                tout[idx[j]] = dot(X + tcx[idx[j]] * d, w, d) + bias[u];
            t = g;
        }
        s = e;
    }
    rc = 0;
done:
    free(key0);
    free(key1);
    free(idx0);
    free(idx1);
    free(count);
    return rc;
}
