/* Hamming kernels for AVX-512 F/BW/VL/DQ + VPOPCNTDQ, enabled per function so
 * the library still loads on CPUs without them (the dispatcher checks first).
 *
 * Register tile: S samples x one packed slice of 16 classifiers.  Per code word
 * two aligned loads bring that word of the 16 classifiers; each sample word is
 * broadcast, XORed, VPOPCNTQ'd and added into 64-bit lanes.  The two halves are
 * then narrowed into one vector of 16 int32 distances, which is also the width
 * of the vote logic and of the vector adds into the votes / dsum rows. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include "hsvm_hamming.h"

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vpopcntdq,popcnt")))
#define INL static inline __attribute__((always_inline)) TGT
#define LANES HSVM_HAMMING_LANES
#define SMAX 4

HSVM_HAMMING_DECLARE_KERNEL(avx512);

/* Distances of S samples to one slice [words][16]: d[s] = 16 x int32. */
INL void slice_dist(const int S, const uint64_t *c, const int32_t words,
                    const uint64_t *const *xs, __m512i *d)
{
    __m512i lo[SMAX], hi[SMAX];
    {
        /* First word peeled: it sets the sums instead of adding to zero. */
        const __m512i c0 = _mm512_load_si512((const void *)c);
        const __m512i c1 = _mm512_load_si512((const void *)(c + 8));
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) {
            const __m512i xb = _mm512_set1_epi64((long long)xs[s][0]);
            lo[s] = _mm512_popcnt_epi64(_mm512_xor_si512(c0, xb));
            hi[s] = _mm512_popcnt_epi64(_mm512_xor_si512(c1, xb));
        }
    }
    for (int32_t w = 1; w < words; w++) {
        const __m512i c0 = _mm512_load_si512((const void *)(c + (int64_t)w * LANES));
        const __m512i c1 = _mm512_load_si512((const void *)(c + (int64_t)w * LANES + 8));
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) {
            const __m512i xb = _mm512_set1_epi64((long long)xs[s][w]);
            lo[s] = _mm512_add_epi64(lo[s], _mm512_popcnt_epi64(_mm512_xor_si512(c0, xb)));
            hi[s] = _mm512_add_epi64(hi[s], _mm512_popcnt_epi64(_mm512_xor_si512(c1, xb)));
        }
    }
    /* Low dword of every 64-bit sum, lo's eight lanes then hi's. */
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14,
                                           16, 18, 20, 22, 24, 26, 28, 30);
#pragma GCC unroll 4
    for (int s = 0; s < S; s++)
        d[s] = _mm512_permutex2var_epi32(lo[s], even, hi[s]);
}

/* Rows shifted by a lane offset: segment lane l maps to column b0 + l - lo,
 * so the vector is addressed from column b0 - lo (masked-off lanes before the
 * row start are never touched, AVX-512 suppresses their faults). */
INL int32_t *shifted(int32_t *row, int64_t off)
{
    return (int32_t *)((intptr_t)row + (intptr_t)off * (intptr_t)sizeof(int32_t));
}

/* Adds the a-side totals gathered in registers for class cur_a, then clears them. */
INL void flush_run(const int S, const int packed, int32_t *votes, int32_t *dsum, int64_t K,
                   int32_t cur_a, __m512i *run_v, __m512i *run_d)
{
#pragma GCC unroll 4
    for (int s = 0; s < S; s++) {
        if (!packed)
            votes[s * K + cur_a] += _mm512_reduce_add_epi32(run_v[s]);
        dsum[s * K + cur_a] += _mm512_reduce_add_epi32(run_d[s]);
        run_v[s] = run_d[s] = _mm512_setzero_si512();
    }
}

/* The b-side of 16 lanes landing on columns vb/db .. + 15 of each sample's
 * rows, and their a-side into the run totals. */
INL void rmw16(const int S, const int packed, int32_t *vb, int32_t *db, int64_t K,
               const __mmask16 *win, const __m512i *D, __m512i *run_v, __m512i *run_d)
{
    const __m512i one = _mm512_set1_epi32(1);
#pragma GCC unroll 4
    for (int s = 0; s < S; s++) {
        if (!packed) {
            const __m512i v = _mm512_loadu_si512((const void *)(vb + s * K));
            _mm512_storeu_si512((void *)(vb + s * K),
                                _mm512_mask_add_epi32(v, (__mmask16)~win[s], v, one));
            run_v[s] = _mm512_mask_add_epi32(run_v[s], win[s], run_v[s], one);
        }
        const __m512i d = _mm512_loadu_si512((const void *)(db + s * K));
        _mm512_storeu_si512((void *)(db + s * K), _mm512_sub_epi32(d, D[s]));
        run_d[s] = _mm512_add_epi32(run_d[s], D[s]);
    }
}

/* S samples against packed blocks [blk0, blk1).  one_bag and packed are
 * compile-time constants in every instance (see VOTE_FN). */
INL void vote_rows(const int S, const int one_bag, const int packed, const hsvm_hamming_plan *p,
                   const uint64_t *x0, int64_t xwords, int64_t blk0, int64_t blk1,
                   int32_t *votes, int32_t *dsum)
{
    /* Plan fields in locals: the output stores could alias the plan for all
     * the compiler knows, which would reload them on every segment. */
    const int64_t K = p->n_classes;
    const int32_t words = p->words, bags = p->bags;
    const int32_t unit = packed ? (int32_t)1 << p->pack_shift : 0;
    const uint64_t *const codes = p->codes;
    const int32_t *const thr = p->thr, *const tsum = p->tsum;
    const int32_t *const lane_a = p->lane_a, *const lane_b = p->lane_b;
    const int32_t *const seg_first = p->seg_first;
    const hsvm_hamming_seg *const segs = p->segs;
    const uint16_t *const valid = p->valid;
    const hsvm_hamming_whole *const whole = p->whole;
    const uint64_t *xs[SMAX];
    /* a-side totals of the current run of class cur_a: wins (unpacked plans
     * only) and distance sums (packed: u = D + win * unit). */
    __m512i run_v[SMAX], run_d[SMAX];
#pragma GCC unroll 4
    for (int s = 0; s < S; s++) {
        xs[s] = x0 + s * xwords;
        run_v[s] = run_d[s] = _mm512_setzero_si512();
    }
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i unitv = _mm512_set1_epi32(unit);
    const __m512i bagsv = _mm512_set1_epi32(bags);
    int32_t cur_a = -1;

    for (int64_t blk = blk0; blk < blk1; blk++) {
        __m512i D[SMAX];
        __mmask16 win[SMAX];
        const uint64_t *cb = codes + blk * bags * words * LANES;
        const int32_t *tb = thr + blk * bags * LANES;
        if (one_bag) {
            slice_dist(S, cb, words, xs, D);
            const __m512i t = _mm512_load_si512((const void *)tb);
#pragma GCC unroll 4
            for (int s = 0; s < S; s++)
                win[s] = _mm512_cmplt_epi32_mask(D[s], t);
        } else {
            __m512i cnt[SMAX], d[SMAX];
#pragma GCC unroll 4
            for (int s = 0; s < S; s++)
                cnt[s] = D[s] = _mm512_setzero_si512();
            for (int32_t k = 0; k < bags; k++) {
                slice_dist(S, cb + (int64_t)k * words * LANES, words, xs, d);
                const __m512i t = _mm512_load_si512((const void *)(tb + k * LANES));
#pragma GCC unroll 4
                for (int s = 0; s < S; s++) {
                    cnt[s] = _mm512_mask_add_epi32(cnt[s], _mm512_cmplt_epi32_mask(d[s], t), cnt[s], one);
                    D[s] = _mm512_add_epi32(D[s], d[s]);
                }
            }
            const __m512i T = _mm512_load_si512((const void *)(tsum + blk * LANES));
#pragma GCC unroll 4
            for (int s = 0; s < S; s++) {
                const __m512i c2 = _mm512_add_epi32(cnt[s], cnt[s]);
                win[s] = _mm512_cmpgt_epi32_mask(c2, bagsv) |
                         (_mm512_cmpeq_epi32_mask(c2, bagsv) & _mm512_cmplt_epi32_mask(D[s], T));
            }
        }
        if (packed) {
#pragma GCC unroll 4
            for (int s = 0; s < S; s++)
                D[s] = _mm512_mask_add_epi32(D[s], win[s], D[s], unitv);
        }

        const hsvm_hamming_whole wb = whole[blk];
        if (__builtin_expect(wb.col >= 0, 1)) {
            /* One segment filling the block: no segment table. */
            if (wb.a != cur_a) {
                if (cur_a >= 0)
                    flush_run(S, packed, votes, dsum, K, cur_a, run_v, run_d);
                cur_a = wb.a;
            }
            rmw16(S, packed, votes + wb.col, dsum + wb.col, K, win, D, run_v, run_d);
            continue;
        }
        const int32_t g0 = seg_first[blk], g1 = seg_first[blk + 1];
        if (__builtin_expect(g0 == g1, 0)) {
            /* Fragmented pair order: lane by lane. */
            const int32_t *la = lane_a + blk * LANES, *lb = lane_b + blk * LANES;
            const int nvalid = __builtin_popcount(valid[blk]);
#pragma GCC unroll 4
            for (int s = 0; s < S; s++) {
                int32_t dl[LANES];
                int32_t *vr = votes + s * K, *dr = dsum + s * K;
                _mm512_storeu_si512((void *)dl, D[s]);
                for (int l = 0; l < nvalid; l++) {
                    if (!packed)
                        vr[(win[s] >> l) & 1 ? la[l] : lb[l]] += 1;
                    dr[la[l]] += dl[l];
                    dr[lb[l]] -= dl[l];
                }
            }
            continue;
        }
        for (int32_t g = g0; g < g1; g++) {
            const hsvm_hamming_seg sg = segs[g];
            if (sg.a != cur_a) {
                if (cur_a >= 0)
                    flush_run(S, packed, votes, dsum, K, cur_a, run_v, run_d);
                cur_a = sg.a;
            }
            const int64_t off = (int64_t)sg.b0 - sg.lo;
            if (sg.mask == 0xFFFF) {
                rmw16(S, packed, votes + off, dsum + off, K, win, D, run_v, run_d);
                continue;
            }
            const __mmask16 M = sg.mask;
#pragma GCC unroll 4
            for (int s = 0; s < S; s++) {
                if (!packed) {
                    int32_t *vb = shifted(votes + s * K, off);
                    const __mmask16 lose = M & (__mmask16)~win[s];
                    _mm512_mask_storeu_epi32(vb, lose, _mm512_add_epi32(_mm512_maskz_loadu_epi32(lose, vb), one));
                    run_v[s] = _mm512_mask_add_epi32(run_v[s], M & win[s], run_v[s], one);
                }
                int32_t *db = shifted(dsum + s * K, off);
                _mm512_mask_storeu_epi32(db, M, _mm512_sub_epi32(_mm512_maskz_loadu_epi32(M, db), D[s]));
                run_d[s] = _mm512_mask_add_epi32(run_d[s], M, run_d[s], D[s]);
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
#pragma GCC unroll 4
    for (int s = 0; s < S; s++)
        xs[s] = x0 + s * xwords;
    for (int64_t blk = blk0; blk < blk1; blk++) {
        __m512i d[SMAX];
        slice_dist(S, p->codes + blk * p->words * LANES, p->words, xs, d);
        const __mmask16 valid = p->valid[blk];
#pragma GCC unroll 4
        for (int s = 0; s < S; s++)
            _mm512_mask_storeu_epi32(out + s * m + blk * LANES, valid, d[s]);
    }
}

#define ISA avx512
#include "hamming_isa.h"

#endif
