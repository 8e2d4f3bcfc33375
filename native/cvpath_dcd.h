/* One pair's dual coordinate descent in the primal form (the paper's
 * Algorithm 3, with its shrinking; see cvpath.c), shared by the sparse-row
 * and dense-row forms, which differ only in how a row's product with the
 * weights and a row's multiple added to them are formed: row_ops.  The
 * solver is always inlined, so where a form passes its own static functions
 * the calls are direct (and inlined) in its copy.  Not a public header. */
#ifndef HSVM_CVPATH_DCD_H
#define HSVM_CVPATH_DCD_H
#include <math.h>
#include <stdint.h>

typedef struct {
    const void *rows;                                               /* the form's row storage */
    double (*dot)(const void *rows, int64_t r, const double *w);    /* x_r . w */
    void (*axpy)(const void *rows, int64_t r, double c, double *w); /* w += c x_r */
    void (*prefetch)(const void *rows, int64_t r);                  /* NULL: none */
} row_ops;

/* The warm start along the ray.  The previous C's solution alpha is feasible
 * for the next C but sits at the wrong scale: where C is small every
 * coordinate grows in proportion to C (the 1/(2C) diagonal dominates Q), where
 * it is large alpha tends to a limit.  The dual objective on the ray s alpha,
 *     D(s alpha) = s^2/2 (alpha^T Q alpha + diag |alpha|^2) - s sum(alpha),
 * is least at s = sum(alpha) / (|w~|^2 + diag |alpha|^2), with |w~|^2 =
 * alpha^T Q alpha the squared norm of the weights with the bias feature; s is
 * capped so that s alpha stays under the L1 loss's upper bound.  Starting
 * there instead of at alpha (s = 1) took 18-31% fewer passes along the
 * default grid on reuters-r52, fashion-mnist-20k and omniglot-242.  Returns
 * s (1: no better start known, as for a cold start or an unknown norm,
 * wsq = 0). */
static inline double ray_scale(const double *alpha, int64_t l, double wsq, double diag, double upper)
{
    double sum = 0.0, sq = 0.0, top = 0.0;
    for (int64_t i = 0; i < l; i++) {
        sum += alpha[i];
        sq += alpha[i] * alpha[i];
        top = alpha[i] > top ? alpha[i] : top;
    }
    if (!(sum > 0.0) || !(wsq > 0.0))
        return 1.0;
    double s = sum / (wsq + diag * sq);
    if (s * top > upper)
        s = upper / top;
    return s > 0.0 && isfinite(s) ? s : 1.0;
}

/* Solves pair rows[0..l) with labels y, warm-started from alpha (updated in
 * place).  w: the pair's weights and wb its bias feature's weight, kept
 * equal to sum alpha_i y_i (x_i, bias): rebuild 1, they are zero on entry
 * and rebuilt here from alpha; rebuild 0, they already hold that sum (kept
 * from the previous C; w contiguous, wlen values).  sqnorm[r] = |x_r|^2.
 * wsq (NULL: no ray): on entry |w~|^2 of the incoming alpha (0: unknown), the
 * start then moved along the ray (ray_scale); on return |w~|^2 of the
 * solution as the converged last pass saw it (sum_i alpha_i y_i w~.x~_i over
 * that pass, which visits every row and moves w by at most the tolerance's
 * worth; 0 when the pass limit stopped the solve).
 * Returns the passes made. */
static inline __attribute__((always_inline)) int64_t
dcd_primal(row_ops ops, const double *sqnorm, const int64_t *rows, const double *y, int64_t l, double *alpha,
           double *w, double *wb, int rebuild, int64_t wlen, double *wsq, double *qd, int64_t *index, double bias,
           double diag, double upper, double eps, int32_t max_iter, uint64_t *rng)
{
    const double s = wsq ? ray_scale(alpha, l, *wsq, diag, upper) : 1.0;
    if (s != 1.0) {
        for (int64_t i = 0; i < l; i++)
            alpha[i] *= s;
        if (!rebuild) {
            for (int64_t j = 0; j < wlen; j++)
                w[j] *= s;
            *wb *= s;
        }
    }
    for (int64_t i = 0; i < l; i++) {
        if (rebuild && alpha[i] != 0.0) {
            ops.axpy(ops.rows, rows[i], alpha[i] * y[i], w);
            *wb += alpha[i] * y[i] * bias;
        }
        qd[i] = sqnorm[rows[i]] + bias * bias + diag;
        index[i] = i;
    }
    /* Shrinking (Hsieh et al., Algorithm 3): a variable at a bound whose
     * gradient points outside the previous pass's projected-gradient range
     * leaves the active set; all return for a final check before stopping. */
    int64_t active = l, pass = 0;
    double pg_max_old = HUGE_VAL, pg_min_old = -HUGE_VAL, norm = 0.0;
    int converged = 0;
    while (pass < max_iter) {
        pass++;
        shuffle(index, active, rng);
        double pg_max = -HUGE_VAL, pg_min = HUGE_VAL;
        norm = 0.0;
        for (int64_t s = 0; s < active; s++) {
            const int64_t i = index[s];
            if (ops.prefetch && s + 1 < active)   /* rows come in random order: fetch the next early */
                ops.prefetch(ops.rows, rows[index[s + 1]]);
            const double G = y[i] * (ops.dot(ops.rows, rows[i], w) + *wb * bias) - 1.0 + diag * alpha[i];
            double pg = 0.0;
            if (alpha[i] == 0.0) {
                if (G > pg_max_old) {
                    active--;
                    index[s] = index[active];
                    index[active] = i;
                    s--;
                    continue;
                }
                if (G < 0.0)
                    pg = G;
            } else if (alpha[i] >= upper) {
                if (G < pg_min_old) {
                    active--;
                    index[s] = index[active];
                    index[active] = i;
                    s--;
                    continue;
                }
                if (G > 0.0)
                    pg = G;
            } else {
                pg = G;
            }
            norm += alpha[i] * (G + 1.0 - diag * alpha[i]);   /* alpha_i y_i w~.x~_i */
            if (pg > pg_max)
                pg_max = pg;
            if (pg < pg_min)
                pg_min = pg;
            if (fabs(pg) <= 1e-12)
                continue;
            double a_new = alpha[i] - G / qd[i];
            a_new = a_new < 0.0 ? 0.0 : (a_new > upper ? upper : a_new);
            const double step = (a_new - alpha[i]) * y[i];
            alpha[i] = a_new;
            ops.axpy(ops.rows, rows[i], step, w);
            *wb += step * bias;
        }
        if (l == 0)
            break;
        if (pg_max - pg_min <= eps) {
            if (active == l) {
                converged = 1;
                break;
            }
            active = l;
            pg_max_old = HUGE_VAL;
            pg_min_old = -HUGE_VAL;
            continue;
        }
        pg_max_old = pg_max > 0.0 ? pg_max : HUGE_VAL;
        pg_min_old = pg_min < 0.0 ? pg_min : -HUGE_VAL;
    }
    if (wsq)   /* at the pass limit w moved during the sum: unknown */
        *wsq = converged || l == 0 ? norm : 0.0;
    return pass;
}

#endif
