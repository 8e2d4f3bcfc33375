/* Hamming kernels for AVX2 (enabled per function; the dispatcher checks the
 * CPU first).  AVX2 has no vector popcount: bytes are counted with a 16-entry
 * nibble table (VPSHUFB), summed as bytes for up to 31 words (8 * 31 < 256),
 * then folded into one 64-bit sum per classifier with VPSADBW.  A packed slice
 * of 16 classifiers is four vectors of four 64-bit lanes per code word. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include "hsvm_hamming.h"

#define TGT __attribute__((target("avx2,popcnt")))
#define INL static inline __attribute__((always_inline)) TGT
#define LANES HSVM_HAMMING_LANES
#define SMAX 2
#define BYTE_WORDS 31

HSVM_HAMMING_DECLARE_KERNEL(avx2);

/* [a0 a1 a2 a3] [b0 b1 b2 b3] (64-bit, values < 2^31) -> 8 x int32 in order. */
INL __m256i narrow(__m256i a, __m256i b)
{
    const __m256 t = _mm256_shuffle_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b),
                                       _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_permute4x64_epi64(_mm256_castps_si256(t), _MM_SHUFFLE(3, 1, 2, 0));
}

/* Distances of S samples to one slice [words][16]: lanes 0-7 in dlo[s],
 * lanes 8-15 in dhi[s], as int32. */
INL void slice_dist(const int S, const uint64_t *c, const int32_t words,
                    const uint64_t *const *xs, __m256i *dlo, __m256i *dhi)
{
    const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                         0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i nib = _mm256_set1_epi8(0x0f);
    const __m256i zero = _mm256_setzero_si256();
    __m256i q[SMAX][4];
#pragma GCC unroll 2
    for (int s = 0; s < S; s++)
        q[s][0] = q[s][1] = q[s][2] = q[s][3] = zero;
    for (int32_t w0 = 0; w0 < words; w0 += BYTE_WORDS) {
        const int32_t w1 = w0 + BYTE_WORDS < words ? w0 + BYTE_WORDS : words;
        __m256i b[SMAX][4];
#pragma GCC unroll 2
        for (int s = 0; s < S; s++)
            b[s][0] = b[s][1] = b[s][2] = b[s][3] = zero;
        for (int32_t w = w0; w < w1; w++) {
            __m256i xb[SMAX];
#pragma GCC unroll 2
            for (int s = 0; s < S; s++)
                xb[s] = _mm256_set1_epi64x((long long)xs[s][w]);
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++) {
                const __m256i cv = _mm256_load_si256((const __m256i *)(c + (int64_t)w * LANES + 4 * v));
#pragma GCC unroll 2
                for (int s = 0; s < S; s++) {
                    const __m256i t = _mm256_xor_si256(cv, xb[s]);
                    const __m256i lo = _mm256_and_si256(t, nib);
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(t, 4), nib);
                    const __m256i pc = _mm256_add_epi8(_mm256_shuffle_epi8(lut, lo),
                                                       _mm256_shuffle_epi8(lut, hi));
                    b[s][v] = _mm256_add_epi8(b[s][v], pc);
                }
            }
        }
#pragma GCC unroll 2
        for (int s = 0; s < S; s++)
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++)
                q[s][v] = _mm256_add_epi64(q[s][v], _mm256_sad_epu8(b[s][v], zero));
    }
#pragma GCC unroll 2
    for (int s = 0; s < S; s++) {
        dlo[s] = narrow(q[s][0], q[s][1]);
        dhi[s] = narrow(q[s][2], q[s][3]);
    }
}

INL unsigned lanes_set(__m256i m)
{
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m));
}

INL int32_t hsum(__m256i v)
{
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(t);
}

/* Adds the a-side totals gathered in registers for class cur_a, then clears them. */
INL void flush_run(const int S, const int packed, int32_t *votes, int32_t *dsum, int64_t K,
                   int32_t cur_a, int32_t *run_v, __m256i *run_d)
{
#pragma GCC unroll 2
    for (int s = 0; s < S; s++) {
        if (!packed)
            votes[s * K + cur_a] += run_v[s];
        dsum[s * K + cur_a] += hsum(run_d[s]);
        run_v[s] = 0;
        run_d[s] = _mm256_setzero_si256();
    }
}

/* The b-side of the 8 lanes of half h landing on columns off .. off + 7 of
 * each sample's rows, and their a-side into the run totals. */
INL void rmw8(const int S, const int packed, int32_t *votes, int32_t *dsum, int64_t K, int64_t off,
              int h, __m256i (*D)[2], __m256i (*W)[2], int32_t *run_v, __m256i *run_d)
{
    const __m256i ones = _mm256_set1_epi32(-1);
#pragma GCC unroll 2
    for (int s = 0; s < S; s++) {
        if (!packed) {
            __m256i *vb = (__m256i *)(votes + s * K + off);
            const __m256i lose = _mm256_xor_si256(W[s][h], ones);
            _mm256_storeu_si256(vb, _mm256_sub_epi32(_mm256_loadu_si256(vb), lose));
            run_v[s] += __builtin_popcount(lanes_set(W[s][h]));
        }
        __m256i *db = (__m256i *)(dsum + s * K + off);
        _mm256_storeu_si256(db, _mm256_sub_epi32(_mm256_loadu_si256(db), D[s][h]));
        run_d[s] = _mm256_add_epi32(run_d[s], D[s][h]);
    }
}

/* S samples against packed blocks [blk0, blk1); the 16 lanes of a block are
 * handled as two 8-lane halves.  one_bag and packed are compile-time
 * constants in every instance (see VOTE_FN). */
INL void vote_rows(const int S, const int one_bag, const int packed, const hsvm_hamming_plan *p,
                   const uint64_t *x0, int64_t xwords, int64_t blk0, int64_t blk1,
                   int32_t *votes, int32_t *dsum)
{
    const int64_t K = p->n_classes;
    const int32_t words = p->words, bags = p->bags;
    const uint64_t *const codes = p->codes;
    const int32_t *const thr = p->thr, *const tsum = p->tsum;
    const int32_t *const lane_a = p->lane_a, *const lane_b = p->lane_b;
    const int32_t *const seg_first = p->seg_first;
    const hsvm_hamming_seg *const segs = p->segs;
    const uint16_t *const valid = p->valid;
    const hsvm_hamming_whole *const whole = p->whole;
    const uint64_t *xs[SMAX];
    int32_t run_v[SMAX];
    __m256i run_d[SMAX];
#pragma GCC unroll 2
    for (int s = 0; s < S; s++) {
        xs[s] = x0 + s * xwords;
        run_v[s] = 0;
        run_d[s] = _mm256_setzero_si256();
    }
    const __m256i bagsv = _mm256_set1_epi32(bags);
    const __m256i unitv = _mm256_set1_epi32(packed ? (int32_t)1 << p->pack_shift : 0);
    int32_t cur_a = -1;

    for (int64_t blk = blk0; blk < blk1; blk++) {
        /* [s][half]: distances (or their bag sums; packed: u = D + win * unit)
         * and a-wins as all-ones lanes. */
        __m256i D[SMAX][2], W[SMAX][2];
        const uint64_t *cb = codes + blk * bags * words * LANES;
        const int32_t *tb = thr + blk * bags * LANES;
        if (one_bag) {
            __m256i dlo[SMAX], dhi[SMAX];
            slice_dist(S, cb, words, xs, dlo, dhi);
            const __m256i t0 = _mm256_load_si256((const __m256i *)tb);
            const __m256i t1 = _mm256_load_si256((const __m256i *)(tb + 8));
#pragma GCC unroll 2
            for (int s = 0; s < S; s++) {
                D[s][0] = dlo[s];
                D[s][1] = dhi[s];
                W[s][0] = _mm256_cmpgt_epi32(t0, dlo[s]);
                W[s][1] = _mm256_cmpgt_epi32(t1, dhi[s]);
            }
        } else {
            __m256i cnt[SMAX][2];
#pragma GCC unroll 2
            for (int s = 0; s < S; s++)
                cnt[s][0] = cnt[s][1] = D[s][0] = D[s][1] = _mm256_setzero_si256();
            for (int32_t k = 0; k < bags; k++) {
                __m256i dlo[SMAX], dhi[SMAX];
                slice_dist(S, cb + (int64_t)k * words * LANES, words, xs, dlo, dhi);
                const __m256i t0 = _mm256_load_si256((const __m256i *)(tb + k * LANES));
                const __m256i t1 = _mm256_load_si256((const __m256i *)(tb + k * LANES + 8));
#pragma GCC unroll 2
                for (int s = 0; s < S; s++) {
                    /* A true compare is -1, so subtracting it counts. */
                    cnt[s][0] = _mm256_sub_epi32(cnt[s][0], _mm256_cmpgt_epi32(t0, dlo[s]));
                    cnt[s][1] = _mm256_sub_epi32(cnt[s][1], _mm256_cmpgt_epi32(t1, dhi[s]));
                    D[s][0] = _mm256_add_epi32(D[s][0], dlo[s]);
                    D[s][1] = _mm256_add_epi32(D[s][1], dhi[s]);
                }
            }
            const __m256i *T = (const __m256i *)(tsum + blk * LANES);
#pragma GCC unroll 2
            for (int s = 0; s < S; s++)
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++) {
                    const __m256i c2 = _mm256_add_epi32(cnt[s][h], cnt[s][h]);
                    const __m256i tie = _mm256_and_si256(_mm256_cmpeq_epi32(c2, bagsv),
                                                         _mm256_cmpgt_epi32(_mm256_load_si256(T + h), D[s][h]));
                    W[s][h] = _mm256_or_si256(_mm256_cmpgt_epi32(c2, bagsv), tie);
                }
        }
        if (packed) {
#pragma GCC unroll 2
            for (int s = 0; s < S; s++) {
                D[s][0] = _mm256_add_epi32(D[s][0], _mm256_and_si256(W[s][0], unitv));
                D[s][1] = _mm256_add_epi32(D[s][1], _mm256_and_si256(W[s][1], unitv));
            }
        }

        const hsvm_hamming_whole wb = whole[blk];
        if (__builtin_expect(wb.col >= 0, 1)) {
            /* One segment filling the block: no segment table. */
            if (wb.a != cur_a) {
                if (cur_a >= 0)
                    flush_run(S, packed, votes, dsum, K, cur_a, run_v, run_d);
                cur_a = wb.a;
            }
            rmw8(S, packed, votes, dsum, K, wb.col, 0, D, W, run_v, run_d);
            rmw8(S, packed, votes, dsum, K, (int64_t)wb.col + 8, 1, D, W, run_v, run_d);
            continue;
        }
        const int32_t g0 = seg_first[blk], g1 = seg_first[blk + 1];
        /* Lanes scattered one by one: all of a fragmented block, and the part
         * of a segment that does not fill a whole 8-lane half. */
        unsigned scalar_lanes = g0 == g1 ? valid[blk] : 0;
        for (int32_t g = g0; g < g1; g++) {
            const hsvm_hamming_seg sg = segs[g];
            for (int h = 0; h < 2; h++) {
                const unsigned hm = (sg.mask >> (8 * h)) & 0xFFu;
                if (hm == 0)
                    continue;
                if (hm != 0xFFu) {
                    scalar_lanes |= hm << (8 * h);
                    continue;
                }
                if (sg.a != cur_a) {
                    if (cur_a >= 0)
                        flush_run(S, packed, votes, dsum, K, cur_a, run_v, run_d);
                    cur_a = sg.a;
                }
                rmw8(S, packed, votes, dsum, K, (int64_t)sg.b0 - sg.lo + 8 * h, h, D, W, run_v, run_d);
            }
        }
        if (scalar_lanes) {
            const int32_t *la = lane_a + blk * LANES, *lb = lane_b + blk * LANES;
#pragma GCC unroll 2
            for (int s = 0; s < S; s++) {
                int32_t dl[LANES];
                int32_t *vr = votes + s * K, *dr = dsum + s * K;
                _mm256_storeu_si256((__m256i *)dl, D[s][0]);
                _mm256_storeu_si256((__m256i *)(dl + 8), D[s][1]);
                const unsigned win = lanes_set(W[s][0]) | (lanes_set(W[s][1]) << 8);
                for (unsigned rest = scalar_lanes; rest; rest &= rest - 1) {
                    const int l = __builtin_ctz(rest);
                    if (!packed)
                        vr[(win >> l) & 1 ? la[l] : lb[l]] += 1;
                    dr[la[l]] += dl[l];
                    dr[lb[l]] -= dl[l];
                }
            }
        }
    }
    if (cur_a >= 0)
        flush_run(S, packed, votes, dsum, K, cur_a, run_v, run_d);
}

INL void dist_rows(const int S, const hsvm_hamming_plan *p, const uint64_t *x0,
                   int64_t xwords, int64_t blk0, int64_t blk1, int32_t *out)
{
    const int64_t m = p->n_items;
    const uint64_t *xs[SMAX];
#pragma GCC unroll 2
    for (int s = 0; s < S; s++)
        xs[s] = x0 + s * xwords;
    for (int64_t blk = blk0; blk < blk1; blk++) {
        __m256i dlo[SMAX], dhi[SMAX];
        slice_dist(S, p->codes + blk * p->words * LANES, p->words, xs, dlo, dhi);
        const int64_t nvalid = m - blk * LANES < LANES ? m - blk * LANES : LANES;
#pragma GCC unroll 2
        for (int s = 0; s < S; s++) {
            int32_t *dst = out + s * m + blk * LANES;
            if (nvalid == LANES) {
                _mm256_storeu_si256((__m256i *)dst, dlo[s]);
                _mm256_storeu_si256((__m256i *)(dst + 8), dhi[s]);
            } else {
                int32_t t[LANES];
                _mm256_storeu_si256((__m256i *)t, dlo[s]);
                _mm256_storeu_si256((__m256i *)(t + 8), dhi[s]);
                memcpy(dst, t, sizeof(int32_t) * (size_t)nvalid);
            }
        }
    }
}

#define ISA avx2
#include "hamming_isa.h"

#endif
