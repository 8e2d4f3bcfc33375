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

#endif
