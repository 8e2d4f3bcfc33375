/* Internal (not a public hsvm_*.h header, so cffi never reads it): the dense
 * float32 dot product every exact decision value in hsvm's native code uses,
 * shared by the refine step (refine.c) and the decision DAG (dag.c) so that
 * both give the same bits for the same (sample, classifier).
 *
 * The fixed summation order every path follows: 32 partial sums, lane j
 * accumulating products i = j (mod 32) left to right (each product rounded,
 * then added: no FMA), the tail elements going to lanes 0, 1, ... in order,
 * then a fixed pairwise tree.  32 lanes = 4 independent AVX2 accumulators,
 * enough to hide the latency of the additions. */
#ifndef HSVM_DOT32_H
#define HSVM_DOT32_H
#if defined(__x86_64__) || defined(__i386__)
#define HSVM_DOT32_X86 1
#include <immintrin.h>
#endif
#include <stdint.h>
#include "hsvm_cpu.h"

#define DOT32_LANES 32

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
    float s[DOT32_LANES] = {0};
    int64_t i = 0;
    for (; i + DOT32_LANES <= d; i += DOT32_LANES) {
        for (int j = 0; j < DOT32_LANES; j++)
            s[j] += x[i + j] * w[i + j];
    }
    tail32(s, x, w, i, d);
    return reduce32(s);
}

#ifdef HSVM_DOT32_X86
__attribute__((target("avx2")))
static float dot_avx2(const float *x, const float *w, int64_t d)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + DOT32_LANES <= d; i += DOT32_LANES) {
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(w + i)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(w + i + 8)));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(w + i + 16)));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(w + i + 24)));
    }
    float s[DOT32_LANES];
    _mm256_storeu_ps(s, a0);
    _mm256_storeu_ps(s + 8, a1);
    _mm256_storeu_ps(s + 16, a2);
    _mm256_storeu_ps(s + 24, a3);
    tail32(s, x, w, i, d);
    return reduce32(s);
}
#endif

typedef float (*dot32_fn)(const float *, const float *, int64_t);

/* kernel: HSVM_KERNEL_* (hsvm_cpu.h), resolved by the one resolver; the
 * AVX-512 path has nothing to add to AVX2's here, so it runs AVX2's.
 * Returns 0 and sets *dot, or the resolver's negative code. */
static inline int32_t dot32_choose(int32_t kernel, dot32_fn *dot)
{
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    *dot = dot_portable;
#ifdef HSVM_DOT32_X86
    if (k == HSVM_KERNEL_AVX2 || k == HSVM_KERNEL_AVX512)
        *dot = dot_avx2;
#endif
    return 0;
}

#endif
