/* Hamming kernels in plain C (baseline x86-64 + POPCNT, or any other CPU).
 * Same packed layout and the same integer arithmetic as the SIMD files, so
 * every path produces identical outputs. */
#include <string.h>
#include "hsvm_hamming.h"

#define LANES HSVM_HAMMING_LANES

HSVM_HAMMING_DECLARE_KERNEL(portable);

/* Eight lanes at a time: one load of the sample word feeds eight popcounts
 * (loads of the classifier words fold into the XORs), and eight independent
 * sums keep every POPCNT unit busy. */
static inline void slice_dist(const uint64_t *c, int32_t words, const uint64_t *x, int32_t *d)
{
    for (int l0 = 0; l0 < LANES; l0 += 8) {
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
        const uint64_t *cw = c + l0;
        for (int32_t w = 0; w < words; w++, cw += LANES) {
            const uint64_t xw = x[w];
            s0 += (uint64_t)__builtin_popcountll(xw ^ cw[0]);
            s1 += (uint64_t)__builtin_popcountll(xw ^ cw[1]);
            s2 += (uint64_t)__builtin_popcountll(xw ^ cw[2]);
            s3 += (uint64_t)__builtin_popcountll(xw ^ cw[3]);
            s4 += (uint64_t)__builtin_popcountll(xw ^ cw[4]);
            s5 += (uint64_t)__builtin_popcountll(xw ^ cw[5]);
            s6 += (uint64_t)__builtin_popcountll(xw ^ cw[6]);
            s7 += (uint64_t)__builtin_popcountll(xw ^ cw[7]);
        }
        d[l0] = (int32_t)s0;
        d[l0 + 1] = (int32_t)s1;
        d[l0 + 2] = (int32_t)s2;
        d[l0 + 3] = (int32_t)s3;
        d[l0 + 4] = (int32_t)s4;
        d[l0 + 5] = (int32_t)s5;
        d[l0 + 6] = (int32_t)s6;
        d[l0 + 7] = (int32_t)s7;
    }
}

void hsvm_hamming_dist_portable(const hsvm_hamming_plan *p, const uint64_t *xcodes,
                                int64_t n, int64_t xwords, int64_t blk0, int64_t blk1,
                                int32_t *out)
{
    const int64_t m = p->n_items;
    const int32_t words = p->words;
    for (int64_t i = 0; i < n; i++) {
        const uint64_t *x = xcodes + i * xwords;
        int32_t *row = out + i * m;
        for (int64_t blk = blk0; blk < blk1; blk++) {
            const uint64_t *cb = p->codes + blk * words * LANES;
            if (p->valid[blk] == 0xFFFF) {
                slice_dist(cb, words, x, row + blk * LANES);
            } else {
                int32_t d[LANES];
                slice_dist(cb, words, x, d);
                memcpy(row + blk * LANES, d, sizeof(int32_t) * (size_t)(m - blk * LANES));
            }
        }
    }
}

/* One sample against packed blocks [blk0, blk1); one_bag and packed are
 * compile-time constants in every instance.  Lane loops are kept simple so
 * the compiler can vectorise them with whatever the baseline target has. */
static inline __attribute__((always_inline)) void
vote_row(const int one_bag, const int packed, const hsvm_hamming_plan *p, const uint64_t *x,
         int64_t blk0, int64_t blk1, int32_t *vr, int32_t *dr)
{
    const int32_t words = p->words, bags = p->bags;
    const int32_t unit = packed ? (int32_t)1 << p->pack_shift : 0;
    /* Pairs arrive sorted by class a: gather a's share in registers and write
     * it once per run instead of hammering one address, whose store-to-load
     * forwarding would serialise the loop. */
    int32_t cur_a = -1, run_v = 0, run_d = 0;
    for (int64_t blk = blk0; blk < blk1; blk++) {
        int32_t D[LANES], win[LANES];
        const int32_t *t = p->thr + blk * bags * LANES;
        slice_dist(p->codes + blk * bags * words * LANES, words, x, D);
        if (one_bag) {
            for (int l = 0; l < LANES; l++)
                win[l] = D[l] < t[l];
        } else {
            int32_t d[LANES], cnt[LANES];
            for (int l = 0; l < LANES; l++)
                cnt[l] = D[l] < t[l];
            for (int32_t k = 1; k < bags; k++) {
                const int64_t slice = blk * bags + k;
                slice_dist(p->codes + slice * words * LANES, words, x, d);
                t = p->thr + slice * LANES;
                for (int l = 0; l < LANES; l++) {
                    cnt[l] += d[l] < t[l];
                    D[l] += d[l];
                }
            }
            const int32_t *ts = p->tsum + blk * LANES;
            /* Bitwise, not short-circuit: the outcome is a coin flip that a
             * branch would mispredict half the time. */
            for (int l = 0; l < LANES; l++)
                win[l] = (2 * cnt[l] > bags) | ((2 * cnt[l] == bags) & (D[l] < ts[l]));
        }
        if (packed)
            for (int l = 0; l < LANES; l++)
                D[l] += win[l] * unit;

        const hsvm_hamming_whole wb = p->whole[blk];
        if (wb.col >= 0) {
            /* One segment filling the block: no segment table. */
            if (wb.a != cur_a) {
                if (cur_a >= 0) {
                    if (!packed)
                        vr[cur_a] += run_v;
                    dr[cur_a] += run_d;
                }
                cur_a = wb.a;
                run_v = run_d = 0;
            }
            int32_t *vb = vr + wb.col, *db = dr + wb.col;
            for (int j = 0; j < LANES; j++) {
                if (!packed) {
                    vb[j] += 1 - win[j];
                    run_v += win[j];
                }
                db[j] -= D[j];
                run_d += D[j];
            }
            continue;
        }
        const int32_t g0 = p->seg_first[blk], g1 = p->seg_first[blk + 1];
        if (g0 == g1) {
            const int32_t *la = p->lane_a + blk * LANES, *lb = p->lane_b + blk * LANES;
            const int nvalid = __builtin_popcount(p->valid[blk]);
            for (int l = 0; l < nvalid; l++) {
                if (!packed)
                    vr[win[l] ? la[l] : lb[l]] += 1;
                dr[la[l]] += D[l];
                dr[lb[l]] -= D[l];
            }
            continue;
        }
        for (int32_t g = g0; g < g1; g++) {
            const hsvm_hamming_seg sg = p->segs[g];
            if (sg.a != cur_a) {
                if (cur_a >= 0) {
                    if (!packed)
                        vr[cur_a] += run_v;
                    dr[cur_a] += run_d;
                }
                cur_a = sg.a;
                run_v = run_d = 0;
            }
            const int lo = sg.lo, len = __builtin_popcount(sg.mask);
            int32_t *vb = vr + sg.b0, *db = dr + sg.b0;
            for (int j = 0; j < len; j++) {
                if (!packed) {
                    vb[j] += 1 - win[lo + j];
                    run_v += win[lo + j];
                }
                db[j] -= D[lo + j];
                run_d += D[lo + j];
            }
        }
    }
    if (cur_a >= 0) {
        if (!packed)
            vr[cur_a] += run_v;
        dr[cur_a] += run_d;
    }
}

#define VOTE_FN(ONE, PACKED)                                                             \
    static void vote_##ONE##_##PACKED(const hsvm_hamming_plan *p, const uint64_t *x,      \
                                      int64_t b0, int64_t b1, int32_t *vr, int32_t *dr)   \
    {                                                                                    \
        vote_row(ONE, PACKED, p, x, b0, b1, vr, dr);                                     \
    }
VOTE_FN(0, 0)
VOTE_FN(0, 1)
VOTE_FN(1, 0)
VOTE_FN(1, 1)

typedef void (*vote_fn)(const hsvm_hamming_plan *, const uint64_t *, int64_t, int64_t,
                        int32_t *, int32_t *);

void hsvm_hamming_vote_portable(const hsvm_hamming_plan *p, const uint64_t *xcodes,
                                int64_t n, int64_t xwords, int64_t blk0, int64_t blk1,
                                int32_t *votes, int32_t *dsum)
{
    /* [single bag][packed] */
    static const vote_fn table[2][2] = {{vote_0_0, vote_0_1}, {vote_1_0, vote_1_1}};
    const vote_fn fn = table[p->bags == 1][p->pack_shift > 0];
    const int64_t K = p->n_classes;
    for (int64_t i = 0; i < n; i++)
        fn(p, xcodes + i * xwords, blk0, blk1, votes + i * K, dsum + i * K);
}
