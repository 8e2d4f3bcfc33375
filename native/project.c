#include <math.h>
#include "hsvm_project.h"

void hsvm_row_norms(const float *X, int64_t n, int64_t d, double *out)
{
    for (int64_t i = 0; i < n; i++) {
        const float *x = X + i * d;
        double s = 0.0;
        for (int64_t k = 0; k < d; k++)
            s += (double)x[k] * (double)x[k];
        out[i] = sqrt(s);
    }
}

/* The band of a row of `terms` non-zeros, 2 mu / (1 - mu) * |r| * |x|, is
 * row_factor(terms) * rn * xn, evaluated left to right: the factor (and its
 * division) once per row, the bits of the band as when it was one expression
 * per projection. */
static inline double row_factor(int64_t terms)
{
    const double u = 5.9604644775390625e-08;   /* 2^-24, float32 unit roundoff */
    const double mu = (double)terms * u;
    if (mu >= 0.5)
        return INFINITY;                       /* no useful bound: recompute all */
    return 2.0 * mu / (1.0 - mu);
}

static inline float sign_of(double s)
{
    return s > 0.0 ? 1.0f : (s < 0.0 ? -1.0f : 0.0f);
}

int64_t hsvm_fix_signs_dense(const float *X, int64_t n, int64_t d, const float *R, const double *rnorm,
                             int64_t D, float *proj)
{
    int64_t fixed = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *x = X + i * d;
        double xn = 0.0;
        int64_t nnz = 0;
        for (int64_t k = 0; k < d; k++) {
            xn += (double)x[k] * (double)x[k];
            nnz += x[k] != 0.0f;
        }
        xn = sqrt(xn);
        /* A zero of x adds an exact zero to any summation order, so the
         * rounding error of the float32 product grows with x's non-zeros,
         * not d: the bound stays useful for wide, sparse classifier normals. */
        const double factor = row_factor(nnz);
        float *p = proj + i * D;
        for (int64_t j = 0; j < D; j++) {
            if (isfinite(p[j]) && fabs((double)p[j]) > factor * rnorm[j] * xn)
                continue;
            const float *r = R + j * d;
            double s = 0.0;
            for (int64_t k = 0; k < d; k++)
                s += (double)x[k] * (double)r[k];
            p[j] = sign_of(s);
            fixed++;
        }
    }
    return fixed;
}

int64_t hsvm_fix_signs_csr(const int64_t *indptr, const int32_t *indices, const float *data, int64_t n,
                           int64_t d, const float *R, const double *rnorm, int64_t D, float *proj)
{
    int64_t fixed = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t b = indptr[i], e = indptr[i + 1];
        double xn = 0.0;
        for (int64_t k = b; k < e; k++)
            xn += (double)data[k] * (double)data[k];
        xn = sqrt(xn);
        const double factor = row_factor(e - b);
        float *p = proj + i * D;
        for (int64_t j = 0; j < D; j++) {
            if (isfinite(p[j]) && fabs((double)p[j]) > factor * rnorm[j] * xn)
                continue;
            const float *r = R + j * d;
            double s = 0.0;
            for (int64_t k = b; k < e; k++)
                s += (double)data[k] * (double)r[indices[k]];
            p[j] = sign_of(s);
            fixed++;
        }
    }
    return fixed;
}
