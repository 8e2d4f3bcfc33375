/* Internal (not a public hsvm_*.h header, so cffi never reads it): how exact
 * one-vs-one vote counting (votes.c) walks a model's pairs, shared by its
 * instruction-set files (votes_portable.c, votes_avx2.c, votes_avx512.c).
 *
 * Pairs are cut into runs: maximal stretches of consecutive pairs that share
 * class a and whose b are consecutive (b0, b0 + 1, ...), a outside them.
 * Within a run every class b is touched once and class a many times, so the
 * b-side updates (conf[b] -= mean, votes[b] += b wins) are one vector
 * read-modify-write over a contiguous stretch of the output row, while the
 * a-side (conf[a] += mean, in pair order) stays one sequential scalar sum
 * held in a register.  Since no class is both a and b in a run, every class
 * still receives its additions in exactly the order of the pair list, so the
 * double sums are bit-identical to the pair-by-pair loop.  A model in
 * train-ovo's canonical order (all a < b, a-major) is K - 1 runs; a shuffled
 * one degrades to runs of one pair, still exact.  A pair opposing a class to
 * itself is a run of its own, done in the pair loop's order. */
#ifndef HSVM_VOTES_RUNS_H
#define HSVM_VOTES_RUNS_H
#include <stdint.h>

typedef struct votes_run {
    int64_t p0;    /* first pair */
    int64_t len;   /* pairs */
    int32_t a;     /* the class every pair of the run decides for on a positive value */
    int32_t b0;    /* pair p0 + j opposes class b0 + j */
    int32_t self;  /* 1: a single pair (a, a) */
    int32_t pad;
} votes_run;

/* Rows whose a-side chains are interleaved (votes_isa.h), and the pairs of
 * a run handled per b-side pass, whose bag means wait in an L1 buffer of
 * VOTES_TILE * VOTES_CHUNK doubles (8 KB) for the a-side.  A multiple of 16. */
#define VOTES_TILE 4
#define VOTES_CHUNK 256

/* Entry points every instruction-set file defines: samples [0, n) of the
 * decision matrix dec [n][ncols] (ncols = pairs * bags) plus bias [ncols]
 * (NULL: none), rows of votes and conf [n][n_classes] overwritten.  Only votes.c calls them, after checking
 * the CPU. */
#define VOTES_DECLARE_KERNEL(isa) void hsvm_votes_runs_##isa(const votes_run *runs, int64_t n_runs, const float *dec, const float *bias, int64_t n, int64_t ncols, int32_t bags, int32_t n_classes, int32_t *votes, double *conf, int32_t fresh)

#endif
