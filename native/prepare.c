#include <float.h>
#include <math.h>
#include <string.h>
#include "hsvm_prepare.h"
#include "sum_squares.h"

/* x / ||x|| as (x * pre) * scale in float32, from the row's sum of squares
 * s.  pre is 1 for every row whose 1/||x|| fits in float32; a row so small
 * that it does not (||x|| below about 2.9e-39: subnormal values) is first
 * multiplied by 2^64, which is exact, so that it is normalised like any other
 * rather than becoming infinite.  Rows of zeros stay zero. */
static inline void row_scale(double s, float *pre, float *scale)
{
    const double norm = sqrt(s);
    const double inv = norm > 0.0 ? 1.0 / norm : 0.0;
    *pre = inv > FLT_MAX ? 0x1p64f : 1.0f;
    *scale = (float)(inv / (double)*pre);
}

/* The one pass, for values parsed as double or already rounded to float32
 * (the same bits: every value is rounded to float32 before anything else). */
#define VALUE_T double
#define NAME prepare_csr64
#include "prepare_rows.h"
#undef VALUE_T
#undef NAME
#define VALUE_T float
#define NAME prepare_csr32
#include "prepare_rows.h"
#undef VALUE_T
#undef NAME

int64_t hsvm_prepare_csr(const int64_t *indptr, const int32_t *indices, const double *values, int64_t n,
                         int64_t d, int32_t l2, int32_t canonical, float *dense, float *data)
{
    return prepare_csr64(indptr, indices, values, n, d, l2, canonical, dense, data);
}

/* Fully dense rows normalised where they are: one pointer, so the loop
 * vectorises (with two that alias exactly the compiler's overlap check would
 * fall back to scalar code).  The same operations as prepare_rows.h.  A
 * row's norm is a chain of dependent double additions in index order (what
 * makes it machine-independent); eight rows' chains advance together
 * (sum_squares.h). */
#define NORM_ROWS SUM_SQUARES_MAX_ROWS

static void scale_row(float *x, int64_t d, double s, int32_t l2, int64_t *bad)
{
    float pre = 1.0f, scale = 1.0f;
    row_scale(s, &pre, &scale);
    int64_t b = 0;
    for (int64_t k = 0; k < d; k++) {
        const float v = l2 ? (x[k] * pre) * scale : x[k];
        b += !(fabsf(v) <= FLT_MAX);
        x[k] = v;
    }
    *bad += b;
}

static int64_t prepare_dense32_in_place(float *rows, int64_t n, int64_t d, int32_t l2)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i += NORM_ROWS) {
        const int m = n - i < NORM_ROWS ? (int)(n - i) : NORM_ROWS;
        double s[NORM_ROWS] = {0.0};
        if (l2)
            sum_squares_rows(rows + i * d, d, m, s);
        for (int j = 0; j < m; j++)
            scale_row(rows + (i + j) * d, d, s[j], l2, &bad);
    }
    return bad;
}

int64_t hsvm_prepare_csr32(const int64_t *indptr, const int32_t *indices, const float *values, int64_t n,
                           int64_t d, int32_t l2, int32_t canonical, float *dense, float *data)
{
    if (dense && dense == values + indptr[0]) {
        if (!canonical)
            return -1;
        for (int64_t i = 0; i < n; i++) {
            if (indptr[i + 1] - indptr[i] != d)
                return -1;
        }
        return prepare_dense32_in_place(dense, n, d, l2);
    }
    return prepare_csr32(indptr, indices, values, n, d, l2, canonical, dense, data);
}
