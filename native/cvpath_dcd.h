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

/* A pair's dual box by label (index 0: rows of y = +1, 1: y = -1): the
 * diagonal D_ii and the upper bound U_i.  Class weights (LIBSVM's and
 * LIBLINEAR's -wi) give the pair's two classes their own C, C_a = C w_a and
 * C_b = C w_b: D_ii = 1/(2 C_i), U = inf for the L2 loss, D = 0, U_i = C_i
 * for the L1 loss.  Without weights both sides are equal and every step does
 * the arithmetic it did before weights existed. */
typedef struct {
    double diag[2], upper[2];
} dual_box;

static inline dual_box pair_box(double C, int32_t loss, const double *class_weight, int32_t a, int32_t b)
{
    dual_box box;
    for (int k = 0; k < 2; k++) {
        const double c = class_weight ? C * class_weight[k ? b : a] : C;
        box.diag[k] = loss == 2 ? 0.5 / c : 0.0;
        box.upper[k] = loss == 2 ? HUGE_VAL : c;
    }
    return box;
}

/* The warm start along the ray.  The previous C's solution alpha is feasible
 * for the next C but sits at the wrong scale: where C is small every
 * coordinate grows in proportion to C (the 1/(2C) diagonal dominates Q), where
 * it is large alpha tends to a limit.  The dual objective on the ray s alpha,
 *     D(s alpha) = s^2/2 (alpha^T Q alpha + diag |alpha|^2) - s sum(alpha),
 * is least at s = sum(alpha) / (|w~|^2 + diag |alpha|^2), with |w~|^2 =
 * alpha^T Q alpha the squared norm of the weights with the bias feature (the
 * diagonal term summed by label under class weights); s is capped so that
 * s alpha stays under the L1 loss's upper bounds.  Starting
 * there instead of at alpha (s = 1) took 18-31% fewer passes along the
 * default grid on reuters-r52, fashion-mnist-20k and omniglot-242.  Returns
 * s (1: no better start known, as for a cold start or an unknown norm,
 * wsq = 0). */
static inline double ray_scale(const double *alpha, int64_t stride, const double *y, int64_t l, double wsq,
                               const dual_box *box)
{
    /* sq sums every alpha^2 in one chain, as before class weights existed, so
     * that a box of one diagonal and one bound gives the same bits; by_label
     * serves a weighted pair. */
    double sum = 0.0, sq = 0.0, by_label[2] = {0.0, 0.0}, top[2] = {0.0, 0.0};
    for (int64_t i = 0; i < l; i++) {
        const int k = y[i] < 0.0;
        const double a = alpha[i * stride];
        sum += a;
        sq += a * a;
        by_label[k] += a * a;
        top[k] = a > top[k] ? a : top[k];
    }
    if (!(sum > 0.0) || !(wsq > 0.0))
        return 1.0;
    const int one_box = box->diag[0] == box->diag[1] && box->upper[0] == box->upper[1];
    double s = sum / (wsq + (one_box ? box->diag[0] * sq : box->diag[0] * by_label[0] + box->diag[1] * by_label[1]));
    if (one_box) {
        const double t = top[0] > top[1] ? top[0] : top[1];
        if (s * t > box->upper[0])
            s = box->upper[0] / t;
    } else {
        for (int k = 0; k < 2; k++)
            if (top[k] > 0.0 && s * top[k] > box->upper[k])
                s = box->upper[k] / top[k];
    }
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
 * worth; 0 when the pass limit stopped the solve).  *capped counts a solve
 * the pass limit stopped.  Returns the passes made. */
static inline __attribute__((always_inline)) int64_t
dcd_primal(row_ops ops, const double *sqnorm, const int64_t *rows, const double *y, int64_t l, double *alpha,
           double *w, double *wb, int rebuild, int64_t wlen, double *wsq, double *qd, int64_t *index, double bias,
           const dual_box *box, double eps, int32_t max_iter, uint64_t *rng, int64_t *capped)
{
    const double diag_pos = box->diag[0], diag_neg = box->diag[1], upper_pos = box->upper[0],
                 upper_neg = box->upper[1];
    const double s = wsq ? ray_scale(alpha, 1, y, l, *wsq, box) : 1.0;
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
        qd[i] = sqnorm[rows[i]] + bias * bias + (y[i] < 0.0 ? diag_neg : diag_pos);
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
            const int neg = y[i] < 0.0;
            const double diag = neg ? diag_neg : diag_pos, upper = neg ? upper_neg : upper_pos;
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
    if (!converged && l > 0)
        ++*capped;
    return pass;
}

#endif
