#if defined(__x86_64__) || defined(__i386__)
#define HSVM_REFINE_X86 1
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>
#include "hsvm_cpu.h"
#include "hsvm_refine.h"

/* The fixed summation order every path follows: 32 partial sums, lane j
 * accumulating products i = j (mod 32) left to right (each product rounded,
 * then added: no FMA), the tail elements going to lanes 0, 1, ... in order,
 * then a fixed pairwise tree.  32 lanes = 4 independent AVX2 accumulators,
 * enough to hide the latency of the additions. */
#define LANES 32

static inline float reduce32(const float *s)
{
    float t[8];
    for (int j = 0; j < 8; j++)
        t[j] = (s[j] + s[j + 8]) + (s[j + 16] + s[j + 24]);
    return ((t[0] + t[4]) + (t[1] + t[5])) + ((t[2] + t[6]) + (t[3] + t[7]));
}

static inline void tail32(float *s, const float *x, const float *w, int64_t i, int64_t d)
{
    for (int j = 0; i < d; i++, j++)
        s[j] += x[i] * w[i];
}

static float dot_portable(const float *x, const float *w, int64_t d)
{
    float s[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= d; i += LANES) {
        for (int j = 0; j < LANES; j++)
            s[j] += x[i + j] * w[i + j];
    }
    tail32(s, x, w, i, d);
    return reduce32(s);
}

#ifdef HSVM_REFINE_X86
__attribute__((target("avx2")))
static float dot_avx2(const float *x, const float *w, int64_t d)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + LANES <= d; i += LANES) {
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(w + i)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(w + i + 8)));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(w + i + 16)));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(w + i + 24)));
    }
    float s[LANES];
    _mm256_storeu_ps(s, a0);
    _mm256_storeu_ps(s + 8, a1);
    _mm256_storeu_ps(s + 16, a2);
    _mm256_storeu_ps(s + 24, a3);
    tail32(s, x, w, i, d);
    return reduce32(s);
}
#endif

typedef float (*dot_fn)(const float *, const float *, int64_t);

/* One dot product per instruction set, all in the same summation order: the
 * AVX-512 path has nothing to add to AVX2's here, so it runs AVX2's. */
static int32_t choose(int32_t kernel, dot_fn *dot)
{
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    *dot = dot_portable;
#ifdef HSVM_REFINE_X86
    if (k == HSVM_KERNEL_AVX2 || k == HSVM_KERNEL_AVX512)
        *dot = dot_avx2;
#endif
    return 0;
}

int hsvm_sddmm_dense(const float *X, const float *W, const float *bias, int64_t d,
                     const int64_t *cx, const int64_t *cw, const int64_t *order, int64_t ncells,
                     float *out, int32_t kernel)
{
    dot_fn dot;
    const int32_t rc = choose(kernel, &dot);
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
