#include <math.h>
#include "hsvm_circulant.h"

/* absolute slack of the band for underflow, never reached by float32 inputs */
#define HSVM_CIRC_TINY 1e-290

/* sum_{j<d} z_j r[(i - j) mod n] in the order j = 0..d-1, from `acc`: for
 * j <= i the index is i - j, above it n + i - j; two loops, no modulo. */
static double dense_row(const float *x, int64_t d, const double *s, const double *r, int64_t n, int64_t i, double acc)
{
    int64_t split = i + 1 < d ? i + 1 : d;
    for (int64_t j = 0; j < split; j++)
        acc += (s[j] * (double)x[j]) * r[i - j];
    for (int64_t j = split; j < d; j++)
        acc += (s[j] * (double)x[j]) * r[n + i - j];
    return acc;
}

void hsvm_circ_eval_dense(const float *X, int64_t d, const int64_t *sample, const int64_t *row, int64_t count,
                          const double *r, const double *s, int64_t n, const double *bias, double *out)
{
    for (int64_t e = 0; e < count; e++) {
        const int64_t i = row[e];
        out[e] = dense_row(X + sample[e] * d, d, s, r, n, i, bias ? bias[i] : 0.0);
    }
}

void hsvm_circ_eval_csr(const int64_t *indptr, const int32_t *indices, const float *data, const int64_t *sample,
                        const int64_t *row, int64_t count, const double *r, const double *s, int64_t n,
                        const double *bias, double *out)
{
    for (int64_t e = 0; e < count; e++) {
        const int64_t i = row[e];
        double acc = bias ? bias[i] : 0.0;
        for (int64_t k = indptr[sample[e]]; k < indptr[sample[e] + 1]; k++) {
            const int64_t j = indices[k];
            const int64_t t = i - j;
            acc += (s[j] * (double)data[k]) * r[t >= 0 ? t : t + n];
        }
        out[e] = acc;
    }
}

void hsvm_circ_direct_csr(const int64_t *indptr, const int32_t *indices, const float *data, int64_t rows,
                          const double *s, const double *poly, int64_t Q, int64_t m, int64_t m_out,
                          const double *bias_S, const int64_t *sel, int64_t c, double *scratch,
                          double *out, int64_t out_stride)
{
    for (int64_t row = 0; row < rows; row++) {
        double *acc = scratch;
        if (bias_S) {
            for (int64_t t = 0; t < m_out; t++)
                acc[t] = bias_S[t];
        } else {
            for (int64_t t = 0; t < m_out; t++)
                acc[t] = 0.0;
        }
        /* Each output accumulates its terms in column order, as the canonical
         * sum does; the loop over outputs is the vectorisable one. */
        for (int64_t k = indptr[row]; k < indptr[row + 1]; k++) {
            const int64_t j = indices[k];
            const double z = s[j] * (double)data[k];
            const int64_t a = j / Q;
            const double *base = poly + (j - a * Q) * m;
            /* outputs t < a read base[t - a + m], outputs t >= a read base[t - a] */
            const int64_t lo = a < m_out ? a : m_out;
            const double *wrap = base + m - a;
            for (int64_t t = 0; t < lo; t++)
                acc[t] += z * wrap[t];
            for (int64_t t = lo; t < m_out; t++)
                acc[t] += z * base[t - a];
        }
        double *o = out + row * out_stride;
        for (int64_t t = 0; t < c; t++)
            o[t] = acc[sel[t]];
    }
}

int hsvm_circ_load_dense(const float *restrict X, int64_t rows, int64_t dx, const double *restrict s, int64_t n,
                         double *restrict Z, double *restrict sqnorm)
{
    int bad = 0;
    for (int64_t i = 0; i < rows; i++) {
        const float *restrict x = X + i * dx;
        double *restrict z = Z + i * n;
        /* The norm only sizes the rounding band, so its summation order is
         * free: four partial sums let the compiler vectorise. */
        double q0 = 0.0, q1 = 0.0, q2 = 0.0, q3 = 0.0;
        int64_t j = 0;
        for (; j + 4 <= dx; j += 4) {
            const double a = x[j], b = x[j + 1], c = x[j + 2], e = x[j + 3];
            z[j] = s[j] * a;
            z[j + 1] = s[j + 1] * b;
            z[j + 2] = s[j + 2] * c;
            z[j + 3] = s[j + 3] * e;
            q0 += a * a;
            q1 += b * b;
            q2 += c * c;
            q3 += e * e;
        }
        for (; j < dx; j++) {
            const double a = x[j];
            z[j] = s[j] * a;
            q0 += a * a;
        }
        for (j = dx; j < n; j++)
            z[j] = 0.0;
        sqnorm[i] = (q0 + q1) + (q2 + q3);
        /* squares of float32 values cannot overflow a double: a non-finite
         * norm means a NaN or infinity in the sample */
        bad |= !isfinite(sqnorm[i]);
    }
    return bad;
}

int hsvm_circ_load_csr(const int64_t *indptr, const int32_t *indices, const float *data, int64_t rows,
                       const double *restrict s, int64_t n, double *restrict Z, double *restrict sqnorm)
{
    int bad = 0;
    for (int64_t i = 0; i < rows; i++) {
        double *restrict z = Z + i * n;
        double q = 0.0;
        for (int64_t j = 0; j < n; j++)
            z[j] = 0.0;
        for (int64_t k = indptr[i]; k < indptr[i + 1]; k++) {
            const double a = data[k];
            z[indices[k]] = s[indices[k]] * a;
            q += a * a;
        }
        sqnorm[i] = q;
        bad |= !isfinite(q);
    }
    return bad;
}

void hsvm_circ_spectrum(const double *P, int64_t rows, int64_t n, const double *restrict R, int64_t Q, int64_t m,
                        double *G)
{
    const int64_t h = n / 2 + 1, hm = m / 2 + 1;
    for (int64_t i = 0; i < rows; i++) {
        const double *p = P + 2 * i * h;
        double *g = G + 2 * i * hm;
        if (Q == 1) {
            /* G may be P itself: each entry is read before it is written. */
            for (int64_t k = 0; k < h; k++) {
                const double pr = p[2 * k], pi = p[2 * k + 1], rr = R[2 * k], ri = R[2 * k + 1];
                g[2 * k] = pr * rr - pi * ri;
                g[2 * k + 1] = pr * ri + pi * rr;
            }
            continue;
        }
        /* Terms added in the order a = 0..Q-1 for every k, as contiguous runs:
         * indices k + a m below h read P directly, the others mirror. */
        for (int64_t k = 0; k < 2 * hm; k++)
            g[k] = 0.0;
        for (int64_t a = 0; a < Q; a++) {
            const int64_t base = a * m;
            int64_t straight = h - base;                 /* k < straight: idx < h */
            straight = straight < 0 ? 0 : (straight > hm ? hm : straight);
            for (int64_t k = 0; k < straight; k++) {
                const int64_t idx = k + base;
                const double pr = p[2 * idx], pi = p[2 * idx + 1], rr = R[2 * idx], ri = R[2 * idx + 1];
                g[2 * k] += pr * rr - pi * ri;
                g[2 * k + 1] += pr * ri + pi * rr;
            }
            /* the upper half of a real signal's spectrum mirrors the lower:
             * P_idx R_idx = conj(P_{n-idx} R_{n-idx}) */
            for (int64_t k = straight; k < hm; k++) {
                const int64_t o = n - (k + base);
                const double pr = p[2 * o], pi = p[2 * o + 1], rr = R[2 * o], ri = R[2 * o + 1];
                g[2 * k] += pr * rr - pi * ri;
                g[2 * k + 1] -= pr * ri + pi * rr;
            }
        }
    }
}

int64_t hsvm_circ_finish(const double *restrict y, int64_t rows, int64_t m, const int64_t *restrict sel, int64_t c,
                         const double *restrict bias, const double *restrict abs_bias, const double *restrict sqnorm,
                         double coef, double rnorm, double *restrict out, int64_t out_stride,
                         int64_t *restrict hit_row, int64_t *restrict hit_t, int64_t hit_cap)
{
    int64_t hits = 0;
    for (int64_t i = 0; i < rows; i++) {
        const double *yi = y + i * m;
        double *o = out + i * out_stride;
        const double base = rnorm * sqrt(sqnorm[i]);
        if (!bias) {
            const double band = coef * base + HSVM_CIRC_TINY;
            for (int64_t t = 0; t < c; t++) {
                const double v = yi[sel[t]];
                o[t] = v;
                if (fabs(v) <= band) {
                    if (hits < hit_cap) {
                        hit_row[hits] = i;
                        hit_t[hits] = t;
                    }
                    hits++;
                }
            }
        } else {
            for (int64_t t = 0; t < c; t++) {
                const double v = yi[sel[t]] + bias[t];
                o[t] = v;
                if (fabs(v) <= coef * (base + abs_bias[t]) + HSVM_CIRC_TINY) {
                    if (hits < hit_cap) {
                        hit_row[hits] = i;
                        hit_t[hits] = t;
                    }
                    hits++;
                }
            }
        }
    }
    return hits;
}
