/* Internal (not a public hsvm_*.h header, so cffi never reads it): the sums
 * of squares behind hsvm's machine-independent norms -- each row's float32
 * values squared in double and added in index order -- for `rows`
 * consecutive rows of d values (stride d) at once: their chains of dependent
 * additions advance together, so the adder is not idle waiting on one, and
 * each row's sum is exactly the one-row loop's. */
#ifndef HSVM_SUM_SQUARES_H
#define HSVM_SUM_SQUARES_H
#include <stdint.h>

#define SUM_SQUARES_MAX_ROWS 8

static inline void sum_squares_rows(const float *x, int64_t d, int rows, double *s)
{
    double acc[SUM_SQUARES_MAX_ROWS] = {0.0};
    if (rows == SUM_SQUARES_MAX_ROWS) {
        for (int64_t k = 0; k < d; k++) {
            for (int r = 0; r < SUM_SQUARES_MAX_ROWS; r++) {
                const double v = (double)x[r * d + k];
                acc[r] += v * v;
            }
        }
    } else {
        for (int64_t k = 0; k < d; k++) {
            for (int r = 0; r < rows; r++) {
                const double v = (double)x[r * d + k];
                acc[r] += v * v;
            }
        }
    }
    for (int r = 0; r < rows; r++)
        s[r] = acc[r];
}

#endif
