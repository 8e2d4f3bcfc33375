#include <math.h>
#include "hsvm_class_weights.h"
#include "sum_squares.h"

/* Rows whose norms are summed together (sum_squares.h); the updates of U
 * still go row after row, so the sums' order is the definition's. */
#define NORM_ROWS SUM_SQUARES_MAX_ROWS

int hsvm_class_weights_add(const float *W, const float *b, int64_t n, int64_t d, int64_t first, int32_t bags,
                           const int32_t *pair_a, const int32_t *pair_b, int64_t K, double *U, double *beta)
{
    for (int64_t j0 = 0; j0 < n; j0 += NORM_ROWS) {
        const int64_t m = n - j0 < NORM_ROWS ? n - j0 : NORM_ROWS;
        double norm[NORM_ROWS];
        sum_squares_rows(W + j0 * d, d, (int)m, norm);
        for (int r = 0; r < m; r++)
            norm[r] = sqrt(norm[r]);
        for (int r = 0; r < m; r++) {
            const int64_t j = j0 + r, p = (first + j) / bags;
            const int64_t a = pair_a[p], c = pair_b[p];
            if (a < 0 || a >= K || c < 0 || c >= K)
                return -1;
            const double scale = norm[r] > 0.0 ? (1.0 / norm[r]) / (double)bags : 0.0;
            const float *w = W + j * d;
            double *ua = U + a * d, *uc = U + c * d;
            for (int64_t k = 0; k < d; k++) {
                const double v = (double)w[k] * scale;
                ua[k] += v;
                uc[k] -= v;
            }
            const double bv = (double)b[j] * scale;
            beta[a] += bv;
            beta[c] -= bv;
        }
    }
    return 0;
}
