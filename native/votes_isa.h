/* The run walk of exact vote counting (see votes_runs.h), shared by every
 * instruction-set file, which defines before including this:
 *
 *   ISA     the name suffix of its entry point (portable, avx2, avx512),
 *   TGT     its function target attribute (empty for portable),
 *   bside1(biased, d, bias, len, vb, cb, mean) -> wins, always inline: for one
 *           bag per pair, the b-side of len pairs with decision values
 *           v[j] = d[j] + bias[j] (float32; biased a compile-time 0 or 1, 0
 *           meaning v[j] = d[j]): stores mean[j] = 0.0 + (double)v[j] (the bag
 *           mean of pair_rule.h for one bag; len <= VOTES_CHUNK, mean 64-byte
 *           aligned with room for VOTES_CHUNK values), subtracts it from cb[j],
 *           adds 1 to vb[j] where b wins (v[j] > 0 is false, NaN included),
 *           returns how many pairs a won.
 *
 * Samples go in tiles of VOTES_TILE rows: the a-side of a run is a chain of
 * dependent double additions (one per pair, in pair order), so the tile's
 * independent chains, one per sample, are interleaved to keep the adders busy.
 * Not a public header: cffi never sees it. */
#ifndef HSVM_VOTES_ISA_H
#define HSVM_VOTES_ISA_H
#include <string.h>
#include "pair_rule.h"

#define HSVM_VCAT_(a, b) a##b
#define HSVM_VCAT(a, b) HSVM_VCAT_(a, b)

/* Several bags per pair: the pair rule itself, pair by pair (no SIMD: the
 * bags of one pair are a short sequential double sum). */
static inline __attribute__((always_inline)) int32_t
bside_bags(const float *d, const float *bias, int64_t len, int32_t bags, int32_t *vb, double *cb,
           double *mean)
{
    int32_t wins = 0;
    for (int64_t j = 0; j < len; j++) {
        double m;
        const int w = pair_rule_a_wins_biased(d + j * bags, bias ? bias + j * bags : bias, bags, &m);
        mean[j] = m;
        cb[j] -= m;
        vb[j] += 1 - w;
        wins += w;
    }
    return wins;
}

/* S rows against all runs; S and biased are compile-time constants in every
 * instance. */
static inline __attribute__((always_inline)) TGT void
votes_tile(const int S, const int biased, const votes_run *runs, int64_t n_runs, const float *dec,
           const float *bias, int64_t ncols, int32_t bags, int64_t K, int32_t *votes, double *conf, int32_t fresh)
{
    /* Bag means of the current stretch of a run, per row, written by the
     * b-side and summed by the a-side while still in L1. */
    double mean[VOTES_TILE][VOTES_CHUNK] __attribute__((aligned(64)));
    if (!biased)
        bias = (const float *)0;
    /* fresh: the rows' counts start here; else they go on from the caller's */
    if (fresh) {
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) {
            memset(votes + s * K, 0, sizeof(int32_t) * (size_t)K);
            memset(conf + s * K, 0, sizeof(double) * (size_t)K);
        }
    }
    for (int64_t r = 0; r < n_runs; r++) {
        const votes_run R = runs[r];
        const int64_t a = R.a, b0 = R.b0, col = R.p0 * bags;
        if (__builtin_expect(R.self, 0)) {
            /* (a, a): the pair loop adds the mean, then subtracts it. */
#pragma GCC unroll 4
            for (int s = 0; s < S; s++) {
                double m;
                (void)pair_rule_a_wins_biased(dec + s * ncols + col, biased ? bias + col : bias,
                                              bags, &m);
                votes[s * K + a] += 1;
                conf[s * K + a] += m;
                conf[s * K + a] -= m;
            }
            continue;
        }
        double acc[VOTES_TILE];
        int32_t wins[VOTES_TILE];
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) {
            acc[s] = conf[s * K + a];
            wins[s] = 0;
        }
        for (int64_t c0 = 0; c0 < R.len; c0 += VOTES_CHUNK) {
            const int64_t len = R.len - c0 < VOTES_CHUNK ? R.len - c0 : VOTES_CHUNK;
            const float *bb = biased ? bias + col + c0 * bags : bias;
#pragma GCC unroll 4
            for (int s = 0; s < S; s++) {
                const float *d = dec + s * ncols + col + c0 * bags;
                int32_t *vb = votes + s * K + b0 + c0;
                double *cb = conf + s * K + b0 + c0;
                wins[s] += bags == 1 ? bside1(biased, d, bb, len, vb, cb, mean[s])
                                     : bside_bags(d, bb, len, bags, vb, cb, mean[s]);
            }
            for (int64_t j = 0; j < len; j++) {
#pragma GCC unroll 4
                for (int s = 0; s < S; s++)
                    acc[s] += mean[s][j];
            }
        }
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) {
            conf[s * K + a] = acc[s];
            votes[s * K + a] += wins[s];
        }
    }
}

#define VOTES_TILE_FN(S, B)                                                                \
    static TGT __attribute__((noinline)) void votes_tile_##S##_##B(                        \
        const votes_run *runs, int64_t n_runs, const float *dec, const float *bias,        \
        int64_t ncols, int32_t bags, int64_t K, int32_t *votes, double *conf,              \
        int32_t fresh)                                                                     \
    {                                                                                      \
        votes_tile(S, B, runs, n_runs, dec, bias, ncols, bags, K, votes, conf, fresh);     \
    }
#define VOTES_TILE_FNS(S) VOTES_TILE_FN(S, 0) VOTES_TILE_FN(S, 1)
VOTES_TILE_FNS(1)
VOTES_TILE_FNS(2)
VOTES_TILE_FNS(3)
VOTES_TILE_FNS(4)

void HSVM_VCAT(hsvm_votes_runs_, ISA)(const votes_run *runs, int64_t n_runs, const float *dec,
                                       const float *bias, int64_t n, int64_t ncols, int32_t bags,
                                       int32_t n_classes, int32_t *votes, double *conf, int32_t fresh)
{
    typedef void (*tile_fn)(const votes_run *, int64_t, const float *, const float *, int64_t,
                            int32_t, int64_t, int32_t *, double *, int32_t);
    /* [biased][rows] */
    static const tile_fn fns[2][5] = {
        {0, votes_tile_1_0, votes_tile_2_0, votes_tile_3_0, votes_tile_4_0},
        {0, votes_tile_1_1, votes_tile_2_1, votes_tile_3_1, votes_tile_4_1},
    };
    const int64_t K = n_classes;
    for (int64_t i = 0; i < n; i += VOTES_TILE) {
        const int S = n - i >= VOTES_TILE ? VOTES_TILE : (int)(n - i);
        fns[bias != 0][S](runs, n_runs, dec + i * ncols, bias, ncols, bags, K, votes + i * K,
                          conf + i * K, fresh);
    }
}

#endif
