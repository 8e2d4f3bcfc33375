#include <immintrin.h>
#include <stdlib.h>
#include <string.h>
#include "hsvm_refine.h"

static inline float reduce8(const float *s)
{
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

static inline void tail8(float *s, const float *x, const float *w, int64_t i, int64_t d)
{
    for (int j = 0; i < d; i++, j++)
        s[j] += x[i] * w[i];
}

static float dot_portable(const float *x, const float *w, int64_t d)
{
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= d; i += 8) {
        for (int j = 0; j < 8; j++)
            s[j] += x[i + j] * w[i + j];
    }
    tail8(s, x, w, i, d);
    return reduce8(s);
}

/* Same lanes and rounding as dot_portable (multiply, round, add, round; no FMA,
 * which would round once and change the results). */
__attribute__((target("avx2")))
static float dot_avx2(const float *x, const float *w, int64_t d)
{
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= d; i += 8)
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(w + i)));
    float s[8];
    _mm256_storeu_ps(s, acc);
    tail8(s, x, w, i, d);
    return reduce8(s);
}

typedef float (*dot_fn)(const float *, const float *, int64_t);

static int have_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

static dot_fn choose(int kernel)
{
    if (kernel == 0) {
        const char *env = getenv("HSVM_KERNEL");
        if (env && strcmp(env, "portable") == 0)
            return dot_portable;
        return have_avx2() ? dot_avx2 : dot_portable;
    }
    if (kernel == 1)
        return dot_portable;
    return have_avx2() ? dot_avx2 : NULL;
}

int hsvm_sddmm_dense(const float *X, const float *W, const float *bias, int64_t d,
                     const int64_t *cx, const int64_t *cw, int64_t ncells, float *out, int kernel)
{
    dot_fn dot = choose(kernel);
    if (!dot)
        return -4;
    for (int64_t c = 0; c < ncells; c++) {
        const int64_t u = cw[c];
        out[c] = dot(X + cx[c] * d, W + u * d, d) + bias[u];
    }
    return 0;
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
