/* Exact vote counting, b-side in AVX2 (enabled per function; votes.c checks
 * the CPU first): eight pairs per step, their float decision values widened
 * to two vectors of four doubles. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <stdint.h>
#include "votes_runs.h"

#define TGT __attribute__((target("avx2,popcnt")))
#define ISA avx2

VOTES_DECLARE_KERNEL(avx2);

static inline __attribute__((always_inline)) TGT int32_t
bside1(const int biased, const float *d, const float *bias, int64_t len, int32_t *vb, double *cb,
       double *mean)
{
    const __m256 zf = _mm256_setzero_ps();
    const __m256d zd = _mm256_setzero_pd();
    int32_t wins = 0;
    int64_t j = 0;
    for (; j + 8 <= len; j += 8) {
        __m256 f = _mm256_loadu_ps(d + j);
        if (biased)
            f = _mm256_add_ps(f, _mm256_loadu_ps(bias + j));
        const __m256d lo = _mm256_add_pd(zd, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
        const __m256d hi = _mm256_add_pd(zd, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
        _mm256_store_pd(mean + j, lo);
        _mm256_store_pd(mean + j + 4, hi);
        _mm256_storeu_pd(cb + j, _mm256_sub_pd(_mm256_loadu_pd(cb + j), lo));
        _mm256_storeu_pd(cb + j + 4, _mm256_sub_pd(_mm256_loadu_pd(cb + j + 4), hi));
        /* b wins where d > 0 is false (NaN too): all-ones lanes, i.e. -1. */
        const __m256i lose = _mm256_castps_si256(_mm256_cmp_ps(f, zf, _CMP_NGT_UQ));
        __m256i *v = (__m256i *)(vb + j);
        _mm256_storeu_si256(v, _mm256_sub_epi32(_mm256_loadu_si256(v), lose));
        wins += 8 - __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(lose)));
    }
    for (; j < len; j++) {
        const float x = biased ? d[j] + bias[j] : d[j];
        const double m = 0.0 + (double)x;
        const int32_t w = x > 0.0f;
        mean[j] = m;
        cb[j] -= m;
        vb[j] += 1 - w;
        wins += w;
    }
    return wins;
}

#include "votes_isa.h"

#endif
