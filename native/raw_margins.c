/* Cosine margins of the unnormalised model's hash filter (hsvm_raw_margins.h).
 * One pass over the distance matrix in place of numpy's gather, product,
 * division and sum over [n, m] float64 temporaries, which cost ten times the
 * Hamming distances themselves.  What remains is the float64 division per
 * cell that the bits are defined by (~1.3 ns per cell per core here); an
 * AVX2 version of this loop was only 10% faster (the divider is the limit),
 * so there is one path, in plain C. */
#include <float.h>

#include "hsvm_raw_margins.h"

int hsvm_raw_margins(const int32_t *dist, int64_t n, int64_t m, int32_t bits, const double *cos_table,
                     const double *x_norms, const double *w_norms, const double *b, float *mu)
{
    if (n < 0 || m < 0 || bits < 1)
        return -1;
    /* the distances are checked first, so that the loop below has no exit */
    uint32_t worst = 0;
    for (int64_t c = 0; c < n * m; c++)
        worst = (uint32_t)dist[c] > worst ? (uint32_t)dist[c] : worst;
    if (worst > (uint32_t)bits)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        const int32_t *d = dist + i * m;
        float *out = mu + i * m;
        const double xn = x_norms[i];
        for (int64_t j = 0; j < m; j++) {
            const double s = xn * w_norms[j];
            /* !(s > 0): zero norms, and NaN, as raw_filter.cosine_margins;
             * beyond float32's range (a sample of norm 1e-41: b / s ~ 1e40)
             * the largest float of the same sign, not an infinity, which the
             * probabilities' margin sums refused with a traceback */
            const double v = s > 0.0 ? cos_table[d[j]] + b[j] / s : (b[j] > 0.0 ? 1.0 : -1.0);
            out[j] = v > FLT_MAX ? FLT_MAX : (v < -FLT_MAX ? -FLT_MAX : (float)v);
        }
    }
    return 0;
}
