/* Exact vote counting in plain C (any CPU): the b-side of a run pair by pair,
 * written so the compiler may vectorise it with the baseline target. */
#include <stdint.h>
#include "votes_runs.h"

#define TGT
#define ISA portable

VOTES_DECLARE_KERNEL(portable);

static inline __attribute__((always_inline)) int32_t
bside1(const int biased, const float *d, const float *bias, int64_t len, int32_t *vb, double *cb,
       double *mean)
{
    int32_t wins = 0;
    for (int64_t j = 0; j < len; j++) {
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
