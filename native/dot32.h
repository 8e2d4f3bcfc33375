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
/* The tail and the tree of dot_portable in vector form, operation for
 * operation: tail element i + j goes to lane j of the accumulators (a0 holds
 * lanes 0-7, a1 8-15, a2 16-23, a3 24-31), then t = (a0 + a1) + (a2 + a3)
 * lane by lane, then ((t0 + t4) + (t1 + t5)) + ((t2 + t6) + (t3 + t7)).
 * No scalar round trip through memory, the same roundings. */
__attribute__((target("avx2")))
static inline __m256 tail_mask(int64_t r)
{
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), lanes));
}

__attribute__((target("avx2")))
static inline __m256 tail_part(const float *x, const float *w, int64_t r)
{
    if (r <= 0)
        return _mm256_setzero_ps();
    const __m256i m = _mm256_castps_si256(tail_mask(r));
    return _mm256_mul_ps(_mm256_maskload_ps(x, m), _mm256_maskload_ps(w, m));
}

/* Adds the tail x[i..d) * w[i..d) (fewer than 32 elements) to the lanes.
 * The lanes past the tail get +0 (the masked loads read zeros), which
 * changes none of them: a lane is never -0 (it starts at +0, and rounding to
 * nearest gives -0 only for (-0) + (-0)), and v + 0 = v for every other v. */
__attribute__((target("avx2")))
static inline void tail_avx2(__m256 *a, const float *x, const float *w, int64_t i, int64_t d)
{
    for (int q = 0; q < 4 && d - i - 8 * q > 0; q++)
        a[q] = _mm256_add_ps(a[q], tail_part(x + i + 8 * q, w + i + 8 * q, d - i - 8 * q));
}

__attribute__((target("avx2")))
static inline float reduce_avx2(const __m256 *a)
{
    const __m256 t = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
    const __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));   /* t0+t4 .. t3+t7 */
    const __m128 v = _mm_add_ps(u, _mm_movehdup_ps(u));                                     /* u0+u1, _, u2+u3, _ */
    return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehl_ps(v, v)));
}

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
    __m256 a[4] = {a0, a1, a2, a3};
    tail_avx2(a, x, w, i, d);
    return reduce_avx2(a);
}

/* Two samples against one classifier row, each summed exactly as dot_avx2
 * sums it (same lanes, same order, same tree): the row's loads are shared and
 * the two samples' eight independent accumulators keep the adders busy where
 * one sample's four wait on their own latency. */
__attribute__((target("avx2")))
static void dot2_avx2(const float *x0, const float *x1, const float *w, int64_t d, float *r0, float *r1)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();
    __m256 b2 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + DOT32_LANES <= d; i += DOT32_LANES) {
        const __m256 w0 = _mm256_loadu_ps(w + i), w1 = _mm256_loadu_ps(w + i + 8);
        const __m256 w2 = _mm256_loadu_ps(w + i + 16), w3 = _mm256_loadu_ps(w + i + 24);
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_loadu_ps(x0 + i), w0));
        b0 = _mm256_add_ps(b0, _mm256_mul_ps(_mm256_loadu_ps(x1 + i), w0));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_loadu_ps(x0 + i + 8), w1));
        b1 = _mm256_add_ps(b1, _mm256_mul_ps(_mm256_loadu_ps(x1 + i + 8), w1));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_loadu_ps(x0 + i + 16), w2));
        b2 = _mm256_add_ps(b2, _mm256_mul_ps(_mm256_loadu_ps(x1 + i + 16), w2));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_loadu_ps(x0 + i + 24), w3));
        b3 = _mm256_add_ps(b3, _mm256_mul_ps(_mm256_loadu_ps(x1 + i + 24), w3));
    }
    __m256 a[4] = {a0, a1, a2, a3}, b[4] = {b0, b1, b2, b3};
    tail_avx2(a, x0, w, i, d);
    tail_avx2(b, x1, w, i, d);
    *r0 = reduce_avx2(a);
    *r1 = reduce_avx2(b);
}

/* One sample against three classifier rows (the decision DAG's pair and its
 * two possible successors), each summed exactly as dot_avx2 sums it: the
 * sample's loads are shared by the three. */
__attribute__((target("avx2")))
static void dot3_avx2(const float *x, const float *w0, const float *w1, const float *w2, int64_t d, float *r)
{
    __m256 a[4], b[4], c[4];
    for (int q = 0; q < 4; q++)
        a[q] = b[q] = c[q] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + DOT32_LANES <= d; i += DOT32_LANES) {
        for (int q = 0; q < 4; q++) {
            const __m256 xq = _mm256_loadu_ps(x + i + 8 * q);
            a[q] = _mm256_add_ps(a[q], _mm256_mul_ps(xq, _mm256_loadu_ps(w0 + i + 8 * q)));
            b[q] = _mm256_add_ps(b[q], _mm256_mul_ps(xq, _mm256_loadu_ps(w1 + i + 8 * q)));
            c[q] = _mm256_add_ps(c[q], _mm256_mul_ps(xq, _mm256_loadu_ps(w2 + i + 8 * q)));
        }
    }
    tail_avx2(a, x, w0, i, d);
    tail_avx2(b, x, w1, i, d);
    tail_avx2(c, x, w2, i, d);
    r[0] = reduce_avx2(a);
    r[1] = reduce_avx2(b);
    r[2] = reduce_avx2(c);
}
/* Four samples against one classifier row, each summed exactly as dot_avx2
 * sums it: the row's loads serve four samples, so a cell costs about one
 * load of its sample instead of one of each.  Its sixteen accumulators fit
 * the AVX-512 register file (32 ymm registers, the same AVX2 operations);
 * the AVX2 build spills a few of them and still gains on dot2_avx2. */
#define DOT32_DEFINE_DOT4(NAME, TARGET)                                                          \
    __attribute__((target(TARGET)))                                                              \
    static void NAME(const float *const *x, const float *w, int64_t d, float *r)                 \
    {                                                                                            \
        __m256 a[4][4];                                                                          \
        _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++)                                      \
        _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) a[s][q] = _mm256_setzero_ps();       \
        int64_t i = 0;                                                                           \
        for (; i + DOT32_LANES <= d; i += DOT32_LANES) {                                         \
            _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {                                \
                const __m256 wq = _mm256_loadu_ps(w + i + 8 * q);                                \
                _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++)                              \
                    a[s][q] = _mm256_add_ps(a[s][q], _mm256_mul_ps(_mm256_loadu_ps(x[s] + i + 8 * q), wq)); \
            }                                                                                    \
        }                                                                                        \
        _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) {                                    \
            tail_avx2(a[s], x[s], w, i, d);                                                      \
            r[s] = reduce_avx2(a[s]);                                                            \
        }                                                                                        \
    }
DOT32_DEFINE_DOT4(dot4_avx2, "avx2")
DOT32_DEFINE_DOT4(dot4_avx512, "avx2,avx512f,avx512vl")
#endif

static void dot4_portable(const float *const *x, const float *w, int64_t d, float *r)
{
    for (int s = 0; s < 4; s++)
        r[s] = dot_portable(x[s], w, d);
}

static void dot2_portable(const float *x0, const float *x1, const float *w, int64_t d, float *r0, float *r1)
{
    *r0 = dot_portable(x0, w, d);
    *r1 = dot_portable(x1, w, d);
}

static void dot3_portable(const float *x, const float *w0, const float *w1, const float *w2, int64_t d, float *r)
{
    r[0] = dot_portable(x, w0, d);
    r[1] = dot_portable(x, w1, d);
    r[2] = dot_portable(x, w2, d);
}

typedef float (*dot32_fn)(const float *, const float *, int64_t);
typedef void (*dot32x2_fn)(const float *, const float *, const float *, int64_t, float *, float *);
typedef void (*dot32x3_fn)(const float *, const float *, const float *, const float *, int64_t, float *);
typedef void (*dot32x4_fn)(const float *const *, const float *, int64_t, float *);

/* kernel: HSVM_KERNEL_* (hsvm_cpu.h), resolved by the one resolver; the
 * AVX-512 path runs AVX2's code, except dot4, whose accumulators fit its
 * larger register file.  Returns 0 and sets *dot and, when not NULL, *dot2
 * (two samples, one row), *dot3 (one sample, three rows) and *dot4 (four
 * samples, one row), the same path's bits, or returns the resolver's
 * negative code. */
static inline int32_t dot32_choose(int32_t kernel, dot32_fn *dot, dot32x2_fn *dot2, dot32x3_fn *dot3,
                                   dot32x4_fn *dot4)
{
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    *dot = dot_portable;
    if (dot2)
        *dot2 = dot2_portable;
    if (dot3)
        *dot3 = dot3_portable;
    if (dot4)
        *dot4 = dot4_portable;
#ifdef HSVM_DOT32_X86
    if (k == HSVM_KERNEL_AVX2 || k == HSVM_KERNEL_AVX512) {
        *dot = dot_avx2;
        if (dot2)
            *dot2 = dot2_avx2;
        if (dot3)
            *dot3 = dot3_avx2;
        if (dot4)
            *dot4 = k == HSVM_KERNEL_AVX512 ? dot4_avx512 : dot4_avx2;
    }
#endif
    return 0;
}

#endif
