#include <math.h>
#include <stdlib.h>
#include "hsvm_circulant_svm.h"

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* uniform in [0, k) by the multiply-shift reduction */
static int64_t below(uint64_t *state, int64_t k)
{
    return (int64_t)(((unsigned __int128)splitmix64(state) * (uint64_t)k) >> 64);
}

/* w^T P_l x over the nonzeros of x: index (j - l) mod d */
static double shifted_dot(const int32_t *idx, const double *val, int64_t nnz, const double *w, int64_t d, int64_t l)
{
    double s = 0.0;
    for (int64_t k = 0; k < nnz; k++) {
        int64_t j = (int64_t)idx[k] - l;
        s += val[k] * w[j >= 0 ? j : j + d];
    }
    return s;
}

static void shifted_axpy(const int32_t *idx, const double *val, int64_t nnz, double a, double *w, int64_t d, int64_t l)
{
    for (int64_t k = 0; k < nnz; k++) {
        int64_t j = (int64_t)idx[k] - l;
        w[j >= 0 ? j : j + d] += a * val[k];
    }
}

int hsvm_circsvm_train(const int64_t *indptr, const int32_t *indices, const double *data, int64_t N, int64_t d,
                       const int8_t *Z, int64_t L, const int64_t *shift, double C, int32_t loss, double beta,
                       double eps, int64_t max_iter, uint64_t seed, double *w, double *b, double *alpha,
                       int64_t *stats)
{
    const int64_t l_all = N * L;
    /* dual of the squared hinge: D_ii = 1/(2C), no upper bound; hinge: D_ii = 0, U = C */
    const double diag = loss == 2 ? 0.5 / C : 0.0;
    const double upper = loss == 2 ? INFINITY : C;
    int64_t *index = malloc((size_t)(l_all > 0 ? l_all : 1) * sizeof(int64_t));
    double *xsq = malloc((size_t)(N > 0 ? N : 1) * sizeof(double));
    if (!index || !xsq) {
        free(index);
        free(xsq);
        return -1;
    }
    for (int64_t n = 0; n < N; n++) {
        double s = 0.0;
        for (int64_t k = indptr[n]; k < indptr[n + 1]; k++)
            s += data[k] * data[k];
        xsq[n] = s;
    }
    for (int64_t j = 0; j < d; j++)
        w[j] = 0.0;
    for (int64_t l = 0; l < L; l++)
        b[l] = 0.0;
    for (int64_t i = 0; i < l_all; i++) {
        alpha[i] = 0.0;
        index[i] = i;
    }
    uint64_t rng = seed;
    int64_t active = l_all, iter = 0, updates = 0;
    int converged = 0;
    double pg_max_old = INFINITY, pg_min_old = -INFINITY;
    const double beta2 = beta * beta;
    while (iter < max_iter) {
        double pg_max_new = -INFINITY, pg_min_new = INFINITY;
        for (int64_t s = 0; s < active; s++) {
            const int64_t j = s + below(&rng, active - s);
            const int64_t t = index[s];
            index[s] = index[j];
            index[j] = t;
        }
        for (int64_t s = 0; s < active; s++) {
            const int64_t i = index[s];
            const int64_t n = i / L, l = i - n * L;
            const double yi = (double)Z[i];
            const int32_t *idx = indices + indptr[n];
            const double *val = data + indptr[n];
            const int64_t nnz = indptr[n + 1] - indptr[n];
            const double G = yi * (shifted_dot(idx, val, nnz, w, d, shift[l]) + beta * b[l]) - 1.0 + diag * alpha[i];
            double PG = 0.0;
            if (alpha[i] == 0.0) {
                if (G > pg_max_old) {
                    /* shrink: at the lower bound with a gradient pointing out */
                    active--;
                    index[s] = index[active];
                    index[active] = i;
                    s--;
                    continue;
                } else if (G < 0.0) {
                    PG = G;
                }
            } else if (alpha[i] == upper) {
                if (G < pg_min_old) {
                    active--;
                    index[s] = index[active];
                    index[active] = i;
                    s--;
                    continue;
                } else if (G > 0.0) {
                    PG = G;
                }
            } else {
                PG = G;
            }
            if (PG > pg_max_new)
                pg_max_new = PG;
            if (PG < pg_min_new)
                pg_min_new = PG;
            if (fabs(PG) > 1.0e-12) {
                const double old = alpha[i];
                const double qd = xsq[n] + beta2 + diag;
                double a = old - G / qd;
                a = a < 0.0 ? 0.0 : (a > upper ? upper : a);
                alpha[i] = a;
                const double delta = (a - old) * yi;
                shifted_axpy(idx, val, nnz, delta, w, d, shift[l]);
                b[l] += delta * beta;
                updates++;
            }
        }
        iter++;
        if (pg_max_new - pg_min_new <= eps) {
            if (active == l_all) {
                converged = 1;
                break;
            }
            /* converged on the shrunken set: check every coordinate again */
            active = l_all;
            pg_max_old = INFINITY;
            pg_min_old = -INFINITY;
            continue;
        }
        pg_max_old = pg_max_new <= 0.0 ? INFINITY : pg_max_new;
        pg_min_old = pg_min_new >= 0.0 ? -INFINITY : pg_min_new;
    }
    stats[0] = iter;
    stats[1] = updates;
    stats[2] = converged;
    free(index);
    free(xsq);
    return 0;
}

void hsvm_circsvm_decisions(const int64_t *indptr, const int32_t *indices, const double *data, int64_t N,
                            int64_t d, const double *w, const double *b, int64_t L, const int64_t *shift, double beta,
                            double *out)
{
    for (int64_t n = 0; n < N; n++) {
        const int32_t *idx = indices + indptr[n];
        const double *val = data + indptr[n];
        const int64_t nnz = indptr[n + 1] - indptr[n];
        for (int64_t l = 0; l < L; l++)
            out[n * L + l] = shifted_dot(idx, val, nnz, w, d, shift[l]) + beta * b[l];
    }
}
