/* Top-k class selection for the hash filter. */
#ifndef HSVM_RANK_H
#define HSVM_RANK_H
#include <stdint.h>

/* For each row i < n, writes to out[i*k ..] the k best class indices, best
 * first, ranking by votes (higher first), then margin (higher first), then
 * class index (lower first) -- the same order as ranking.rank_classes.
 * votes: int32 [n, K]; margin: double [n, K]; 1 <= k <= K.  Returns 0, or -1
 * for bad sizes, -2 when out of memory. */
int hsvm_topk(const int32_t *votes, const double *margin, int64_t n, int32_t n_classes,
              int32_t k, int32_t *out);

/* The same order for class scores alone (every class with equal votes): the
 * k best of scores[i, c] + beta[c], summed in double, then the lower class
 * index -- what hsvm_topk gives for zero votes and that sum as the margin,
 * without an [n, K] array of doubles.  scores: float [n, K]; beta: double
 * [K].  Returns 0, -1 for bad sizes, -2 when out of memory. */
int hsvm_topk_scores(const float *scores, const double *beta, int64_t n, int32_t n_classes, int32_t k,
                     int32_t *out);

#endif
