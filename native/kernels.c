/* Kernel evaluations and the incremental Cholesky factor used by KRSH
 * (Mu, Hua, Fan & Chang, "Hash-SVM", CVPR 2014, Algorithm 1).  Every sum runs
 * in double, in a fixed order, written as element-wise updates across
 * landmarks (which the compiler may vectorise without changing any single
 * sum's order); -ffp-contract=off keeps multiply-then-add unfused.  So a
 * fitted basis is the same on every machine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hsvm_kernels.h"

/* ln 2 split so that k * LN2_HI is exact for |k| < 2^11 (Cody & Waite). */
static const double LN2_HI = 6.93147180369123816490e-01;
static const double LN2_LO = 1.90821492927058770002e-10;
static const double INV_LN2 = 1.44269504088896338700e+00;

double hsvm_exp(double x)
{
    if (x != x)
        return x;
    if (x > 709.782712893384)
        return INFINITY;
    if (x < -745.2)
        return 0.0;
    /* k = round(x / ln 2), with ties away from zero, using only a cast. */
    double kd = x * INV_LN2;
    kd = (double)(int64_t)(kd + (kd < 0 ? -0.5 : 0.5));
    double r = (x - kd * LN2_HI) - kd * LN2_LO;    /* |r| <= 0.3466 */
    /* Taylor series to r^14/14!: the truncation error is below 4e-18. */
    double p = 1.0 / 87178291200.0;                 /* 1/14! */
    static const double inv_fact[14] = {
        1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
        1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};
    for (int i = 13; i >= 0; i--)
        p = p * r + inv_fact[i];
    return ldexp(p, (int)kd);
}

static void finish(int kind, double *acc, int64_t m, double gamma, double coef0, int degree)
{
    switch (kind) {
    case HSVM_K_POLY:
        for (int64_t l = 0; l < m; l++) {
            double base = gamma * acc[l] + coef0, v = base;
            for (int t = 1; t < degree; t++)
                v *= base;
            acc[l] = v;
        }
        break;
    case HSVM_K_RBF:
    case HSVM_K_CHI2:
        for (int64_t l = 0; l < m; l++)
            acc[l] = hsvm_exp(-gamma * acc[l]);
        break;
    default:
        break;
    }
}

/* acc[l] += term(x_j, z_l) for one feature j across m landmarks. */
static void accumulate(int kind, double xj, const float *z, int64_t m, double *acc)
{
    switch (kind) {
    case HSVM_K_LINEAR:
    case HSVM_K_POLY:
        for (int64_t l = 0; l < m; l++)
            acc[l] += xj * (double)z[l];
        break;
    case HSVM_K_RBF:
        for (int64_t l = 0; l < m; l++) {
            double t = xj - (double)z[l];
            acc[l] += t * t;
        }
        break;
    case HSVM_K_CHI2:
        for (int64_t l = 0; l < m; l++) {
            double s = xj + (double)z[l];
            double t = xj - (double)z[l];
            acc[l] += s > 0.0 ? t * t / s : 0.0;
        }
        break;
    case HSVM_K_INTERSECTION:
        for (int64_t l = 0; l < m; l++) {
            double zl = (double)z[l];
            acc[l] += xj < zl ? xj : zl;
        }
        break;
    }
}

static int known(int kind)
{
    return kind >= HSVM_K_LINEAR && kind <= HSVM_K_INTERSECTION;
}

/* One row against m landmarks.  A zero feature adds exactly +-0 to x.z and
 * min(0, z) = 0 to the intersection (inputs are non-negative there), so those
 * features are skipped without changing any bit of the result. */
static void kernel_row(int kind, const float *x, int64_t d, const float *ZT, int64_t ldz, int64_t m,
                       double gamma, double coef0, int degree, double *acc)
{
    const int skip_zero = kind == HSVM_K_LINEAR || kind == HSVM_K_POLY || kind == HSVM_K_INTERSECTION;
    for (int64_t l = 0; l < m; l++)
        acc[l] = 0.0;
    for (int64_t j = 0; j < d; j++) {
        double xj = (double)x[j];
        if (skip_zero && xj == 0.0)
            continue;
        accumulate(kind, xj, ZT + j * ldz, m, acc);
    }
    finish(kind, acc, m, gamma, coef0, degree);
}

/* Landmarks are taken in tiles so that a tile of ZT stays in cache across
 * the rows; every (i, l) sum still runs over the features in index order. */
enum { LANDMARK_TILE = 256 };

int hsvm_kernel_block(int kind, const float *X, int64_t n, int64_t d, const float *ZT, int64_t ldz, int64_t m,
                      double gamma, double coef0, int degree, double *out, int64_t ldo)
{
    if (!known(kind))
        return -1;
    for (int64_t l0 = 0; l0 < m; l0 += LANDMARK_TILE) {
        const int64_t mt = m - l0 < LANDMARK_TILE ? m - l0 : LANDMARK_TILE;
        for (int64_t i = 0; i < n; i++)
            kernel_row(kind, X + i * d, d, ZT + l0, ldz, mt, gamma, coef0, degree, out + i * ldo + l0);
    }
    return 0;
}

/* Panel of L columns applied to a block of candidates at a time: the panel
 * stays in cache while every candidate of the block uses it. */
enum { L_PANEL = 64 };

int64_t hsvm_krsh_offer(int kind, double gamma, double coef0, int degree, const float *C, int64_t nc, int64_t d,
                        float *ZT, double *Lc, double *diag, int64_t mcap, int64_t kept, double tol,
                        int8_t *taken, double *resid, double *work)
{
    (void)work;
    if (!known(kind))
        return -1;
    for (int64_t c = 0; c < nc; c++) {
        taken[c] = 0;
        resid[c] = NAN;
    }
    if (nc <= 0 || kept >= mcap)
        return kept;
    const int64_t kept0 = kept;
    /* W[c] holds k(Z, c) over all mcap slots, then is overwritten by l. */
    double *W = malloc((size_t)nc * (size_t)mcap * sizeof(double));
    double *kcc = malloc((size_t)nc * sizeof(double));
    int64_t *newc = malloc((size_t)nc * sizeof(int64_t));
    if (!W || !kcc || !newc) {
        free(W);
        free(kcc);
        free(newc);
        return -2;
    }
    hsvm_kernel_block(kind, C, nc, d, ZT, mcap, kept0, gamma, coef0, degree, W, mcap);
    for (int64_t c = 0; c < nc; c++) {
        const float *x = C + c * d;
        float *self = malloc((size_t)(d > 0 ? d : 1) * sizeof(float));
        if (!self) {
            free(W);
            free(kcc);
            free(newc);
            return -2;
        }
        memcpy(self, x, (size_t)d * sizeof(float));
        kernel_row(kind, x, d, self, 1, 1, gamma, coef0, degree, kcc + c);
        free(self);
    }
    /* Forward substitution L l = k(Z, c) over the landmarks kept before this
     * block, in axpy form: step j sets l_j = w_j / L_jj and subtracts
     * l_j L[i, j] from w_i for i > j.  Panels of columns, then candidates,
     * then steps: each w_i sees its updates in the order j = 0, 1, ... */
    for (int64_t j0 = 0; j0 < kept0; j0 += L_PANEL) {
        const int64_t j1 = j0 + L_PANEL < kept0 ? j0 + L_PANEL : kept0;
        for (int64_t c = 0; c < nc; c++) {
            double *w = W + c * mcap;
            for (int64_t j = j0; j < j1; j++) {
                const double *col = Lc + j * mcap;
                const double lj = w[j] / col[j];
                w[j] = lj;
                for (int64_t i = j + 1; i < kept0; i++)
                    w[i] -= lj * col[i];
            }
        }
    }
    /* Candidates in order: finish the substitution over the landmarks kept
     * earlier in this block (the same per-entry order as one candidate at a
     * time), decide, and append. */
    for (int64_t c = 0; c < nc; c++) {
        if (kept >= mcap)
            break;
        double *w = W + c * mcap;
        const float *x = C + c * d;
        if (kept > kept0) {
            kernel_row(kind, x, d, ZT + kept0, mcap, kept - kept0, gamma, coef0, degree, w + kept0);
            /* Updates from steps j < kept0 to the new entries, in order of j;
             * L[i, j] for a landmark i kept in this block is entry j of its
             * own substituted row W[newc[i - kept0]] (read there, not from
             * the strided columns of Lc). */
            const int64_t nnew = kept - kept0;
            for (int64_t j = 0; j < kept0; j++) {
                const double lj = w[j];
                for (int64_t t = 0; t < nnew; t++)
                    w[kept0 + t] -= lj * W[newc[t] * mcap + j];
            }
            for (int64_t j = kept0; j < kept; j++) {
                const double *col = Lc + j * mcap;
                const double lj = w[j] / col[j];
                w[j] = lj;
                for (int64_t i = j + 1; i < kept; i++)
                    w[i] -= lj * col[i];
            }
        }
        double r2 = kcc[c];
        for (int64_t j = 0; j < kept; j++)
            r2 -= w[j] * w[j];
        const double rel = kcc[c] > 0.0 ? r2 / kcc[c] : 0.0;
        resid[c] = rel;
        if (!(kcc[c] > 0.0) || !(rel > tol))
            continue;
        for (int64_t j = 0; j < kept; j++)
            Lc[j * mcap + kept] = w[j];
        Lc[kept * mcap + kept] = sqrt(r2);
        diag[kept] = kcc[c];
        for (int64_t j = 0; j < d; j++)
            ZT[j * mcap + kept] = x[j];
        taken[c] = 1;
        newc[kept - kept0] = c;
        kept++;
    }
    free(W);
    free(kcc);
    free(newc);
    return kept;
}

double hsvm_exact_dot(const float *a, const float *b, int64_t m)
{
    /* Eight interleaved partial sums (index mod 8), each in index order, then
     * added in order: a fixed order the compiler may vectorise as written. */
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t l = 0;
    for (; l + 8 <= m; l += 8)
        for (int p = 0; p < 8; p++)
            acc[p] += (double)a[l + p] * (double)b[l + p];
    for (int p = 0; l < m; l++, p++)
        acc[p] += (double)a[l] * (double)b[l];
    double s = 0.0;
    for (int p = 0; p < 8; p++)
        s += acc[p];
    return s;
}

void hsvm_exact_dots(const float *Y, int64_t ldy, const float *R, int64_t ldr, int64_t m, const int64_t *ii,
                     const int64_t *jj, int64_t count, double *out)
{
    for (int64_t t = 0; t < count; t++)
        out[t] = hsvm_exact_dot(Y + ii[t] * ldy, R + jj[t] * ldr, m);
}

int64_t hsvm_first_negative(const float *X, int64_t n, int64_t d)
{
    for (int64_t i = 0; i < n * d; i++) {
        float v = X[i];
        if (!(v >= 0.0f) || isinf(v))
            return i;
    }
    return -1;
}
