/* What the SIMD instruction-set files of the Hamming kernels share, so that
 * each file holds only what differs (its slice_dist, vote_rows and
 * dist_rows).  Include this at the end of such a file after defining
 *
 *   ISA       the name suffix of its entry points (avx2, avx512),
 *   TGT       its function target attribute,
 *   SMAX      samples per register tile, 1 to 4,
 *   vote_rows(S, one_bag, packed, plan, x0, xwords, blk0, blk1, votes, dsum)
 *   dist_rows(S, plan, x0, xwords, blk0, blk1, out)
 *
 * as always-inline functions.  It instantiates them out of line once per
 * tile height S <= SMAX, single bag or not, packed accumulation or not (so
 * every inner loop is fully unrolled with its accumulators in registers), and
 * defines the two entry points the dispatcher calls, which walk the samples
 * in tiles of SMAX.  Not a public header: cffi never sees it. */
#ifndef HSVM_HAMMING_ISA_H
#define HSVM_HAMMING_ISA_H

#define HSVM_CAT_(a, b) a##b
#define HSVM_CAT(a, b) HSVM_CAT_(a, b)

#define VOTE_FN(S, ONE, PACKED)                                                      \
    static TGT __attribute__((noinline)) void vote_##S##_##ONE##_##PACKED(           \
        const hsvm_hamming_plan *p, const uint64_t *x0, int64_t xwords, int64_t b0,  \
        int64_t b1, int32_t *v, int32_t *d)                                          \
    {                                                                                \
        vote_rows(S, ONE, PACKED, p, x0, xwords, b0, b1, v, d);                      \
    }
#define DIST_FN(S)                                                                   \
    static TGT __attribute__((noinline)) void dist_##S(                             \
        const hsvm_hamming_plan *p, const uint64_t *x0, int64_t xwords, int64_t b0,  \
        int64_t b1, int32_t *out)                                                    \
    {                                                                                \
        dist_rows(S, p, x0, xwords, b0, b1, out);                                    \
    }
#define TILE_FNS(S) VOTE_FN(S, 0, 0) VOTE_FN(S, 0, 1) VOTE_FN(S, 1, 0) VOTE_FN(S, 1, 1) DIST_FN(S)

/* Table entries for the tile heights this file has; 0 (never called) above SMAX. */
TILE_FNS(1)
#define VOTE_1(ONE, PACKED) vote_1_##ONE##_##PACKED
#define DIST_1 dist_1
#if SMAX >= 2
TILE_FNS(2)
#define VOTE_2(ONE, PACKED) vote_2_##ONE##_##PACKED
#define DIST_2 dist_2
#else
#define VOTE_2(ONE, PACKED) 0
#define DIST_2 0
#endif
#if SMAX >= 3
TILE_FNS(3)
#define VOTE_3(ONE, PACKED) vote_3_##ONE##_##PACKED
#define DIST_3 dist_3
#else
#define VOTE_3(ONE, PACKED) 0
#define DIST_3 0
#endif
#if SMAX >= 4
TILE_FNS(4)
#define VOTE_4(ONE, PACKED) vote_4_##ONE##_##PACKED
#define DIST_4 dist_4
#else
#define VOTE_4(ONE, PACKED) 0
#define DIST_4 0
#endif
#define VOTE_ROW(ONE, PACKED) {0, VOTE_1(ONE, PACKED), VOTE_2(ONE, PACKED), VOTE_3(ONE, PACKED), VOTE_4(ONE, PACKED)}

typedef void (*hsvm_vote_tile_fn)(const hsvm_hamming_plan *, const uint64_t *, int64_t, int64_t,
                                  int64_t, int32_t *, int32_t *);
typedef void (*hsvm_dist_tile_fn)(const hsvm_hamming_plan *, const uint64_t *, int64_t, int64_t,
                                  int64_t, int32_t *);

void HSVM_CAT(hsvm_hamming_vote_, ISA)(const hsvm_hamming_plan *p, const uint64_t *xcodes,
                                         int64_t n, int64_t xwords, int64_t blk0, int64_t blk1,
                                         int32_t *votes, int32_t *dsum)
{
    /* [single bag][packed][samples] */
    static const hsvm_vote_tile_fn table[2][2][5] = {
        {VOTE_ROW(0, 0), VOTE_ROW(0, 1)},
        {VOTE_ROW(1, 0), VOTE_ROW(1, 1)},
    };
    const hsvm_vote_tile_fn *fns = table[p->bags == 1][p->pack_shift > 0];
    const int64_t K = p->n_classes;
    for (int64_t i = 0; i < n; i += SMAX) {
        const int S = n - i >= SMAX ? SMAX : (int)(n - i);
        fns[S](p, xcodes + i * xwords, xwords, blk0, blk1, votes + i * K, dsum + i * K);
    }
}

void HSVM_CAT(hsvm_hamming_dist_, ISA)(const hsvm_hamming_plan *p, const uint64_t *xcodes,
                                         int64_t n, int64_t xwords, int64_t blk0, int64_t blk1,
                                         int32_t *out)
{
    static const hsvm_dist_tile_fn fns[5] = {0, DIST_1, DIST_2, DIST_3, DIST_4};
    const int64_t m = p->n_items;
    for (int64_t i = 0; i < n; i += SMAX) {
        const int S = n - i >= SMAX ? SMAX : (int)(n - i);
        fns[S](p, xcodes + i * xwords, xwords, blk0, blk1, out + i * m);
    }
}

#endif
