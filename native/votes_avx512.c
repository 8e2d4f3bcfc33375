/* Exact vote counting, b-side in AVX-512 F (enabled per function; votes.c
 * checks the CPU first): sixteen pairs per step, their float decision values
 * widened to two vectors of eight doubles; the last partial step is masked. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <stdint.h>
#include "votes_runs.h"

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,popcnt")))
#define ISA avx512

VOTES_DECLARE_KERNEL(avx512);

/* Sixteen pairs (lanes where m is set; full: m is all ones, a compile-time
 * constant, and the loads and stores are plain): returns their a wins. */
static inline __attribute__((always_inline)) TGT int32_t
bside16(const int full, const int biased, const float *d, const float *bias, __mmask16 m,
        int32_t *vb, double *cb, double *mean)
{
    __m512 f = full ? _mm512_loadu_ps(d) : _mm512_maskz_loadu_ps(m, d);
    if (biased)
        f = _mm512_add_ps(f, full ? _mm512_loadu_ps(bias) : _mm512_maskz_loadu_ps(m, bias));
    const __m512d zd = _mm512_setzero_pd();
    const __m512d lo = _mm512_add_pd(zd, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
    const __m512d hi = _mm512_add_pd(
        zd, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1))));
    /* mean has room for a whole step (VOTES_CHUNK is a multiple of 16). */
    _mm512_store_pd(mean, lo);
    _mm512_store_pd(mean + 8, hi);
    const __m512i one = _mm512_set1_epi32(1);
    if (full) {
        _mm512_storeu_pd(cb, _mm512_sub_pd(_mm512_loadu_pd(cb), lo));
        _mm512_storeu_pd(cb + 8, _mm512_sub_pd(_mm512_loadu_pd(cb + 8), hi));
        const __mmask16 win = _mm512_cmp_ps_mask(f, _mm512_setzero_ps(), _CMP_GT_OQ);
        const __m512i v = _mm512_loadu_si512((const void *)vb);
        _mm512_storeu_si512((void *)vb, _mm512_mask_add_epi32(v, (__mmask16)~win, v, one));
        return __builtin_popcount((unsigned)win);
    }
    const __mmask8 mlo = (__mmask8)m, mhi = (__mmask8)(m >> 8);
    _mm512_mask_storeu_pd(cb, mlo, _mm512_sub_pd(_mm512_maskz_loadu_pd(mlo, cb), lo));
    _mm512_mask_storeu_pd(cb + 8, mhi, _mm512_sub_pd(_mm512_maskz_loadu_pd(mhi, cb + 8), hi));
    const __mmask16 win = _mm512_mask_cmp_ps_mask(m, f, _mm512_setzero_ps(), _CMP_GT_OQ);
    const __mmask16 lose = m & (__mmask16)~win;
    _mm512_mask_storeu_epi32(vb, lose, _mm512_add_epi32(_mm512_maskz_loadu_epi32(lose, vb), one));
    return __builtin_popcount((unsigned)win);
}

static inline __attribute__((always_inline)) TGT int32_t
bside1(const int biased, const float *d, const float *bias, int64_t len, int32_t *vb, double *cb,
       double *mean)
{
    int32_t wins = 0;
    int64_t j = 0;
    for (; j + 16 <= len; j += 16)
        wins += bside16(1, biased, d + j, biased ? bias + j : bias, 0xFFFF, vb + j, cb + j,
                        mean + j);
    if (j < len)
        wins += bside16(0, biased, d + j, biased ? bias + j : bias,
                        (__mmask16)((1u << (len - j)) - 1u), vb + j, cb + j, mean + j);
    return wins;
}

#include "votes_isa.h"

#endif
