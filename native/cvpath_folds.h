/* The primal form with the folds fused (hsvm_cv_primal_folds): each pair's F
 * fold problems solved together, fold f in lane f of an 8-lane weight vector
 * per feature (w[j * CV_LANES + f]), so that one pass over the pair's rows
 * serves every fold.  A row belongs to the training set of every fold but its
 * own; reading x.w for all folds is the same gather of one 64-byte line per
 * non-zero that one fold's product pays, and a row's updates in all folds are
 * one axpy over the same lines.  Per fold the iteration is cvpath_dcd.h's
 * (Hsieh et al.'s Algorithm 3 with its shrinking and stopping rule, the warm
 * start along the ray); what the folds share is the random order of a pass
 * (one permutation of the pair's rows, a row skipped in the folds where it is
 * held out or shrunk) and the passes themselves: a fold that has converged
 * stops updating while the others go on.  On reuters-r52 (sparse text, 52
 * classes, 5 folds) the per-fold solves read each training row four times a
 * pass, once per fold it trains; here once.
 *
 * Included by cvpath.c after cvpath_primal.h, once per index type (CV_INDEX,
 * CV_NAME as there). */

/* w[j * CV_LANES + f] += c[f] * x_rj for the lanes of one row: each lane's
 * product and sum as sparse_axpy forms them (a lane with c = 0 adds a zero,
 * which leaves it unchanged), compiled per instruction set as block_dot.
 * c copied to a local array and the line read and written through t: written
 * as wk[q] += c[q] * v the compiler could not rule out c in w and kept eight
 * scalar updates (the axpy was 32% of a C step; one vector op now, 13%). */
#define CV_LANE_AXPY_BODY()                                                     \
    double cl[CV_LANES];                                                        \
    for (int q = 0; q < CV_LANES; q++)                                          \
        cl[q] = c[q];                                                           \
    for (int64_t k = indptr[r]; k < indptr[r + 1]; k++) {                       \
        double *wk = w + (int64_t)indices[k] * CV_LANES, t[CV_LANES];           \
        const double v = (double)data[k];                                       \
        for (int q = 0; q < CV_LANES; q++)                                      \
            t[q] = wk[q] + cl[q] * v;                                           \
        for (int q = 0; q < CV_LANES; q++)                                      \
            wk[q] = t[q];                                                       \
    }

static void CV_NAME(lane_axpy_portable)(double *w, const int64_t *indptr, const CV_INDEX *indices,
                                         const float *data, int64_t r, const double *c)
{
    CV_LANE_AXPY_BODY()
}

#if CV_X86
__attribute__((target("avx2"))) static void CV_NAME(lane_axpy_avx2)(double *w, const int64_t *indptr,
                                                                     const CV_INDEX *indices, const float *data,
                                                                     int64_t r, const double *c)
{
    CV_LANE_AXPY_BODY()
}

__attribute__((target("avx512f"))) static void CV_NAME(lane_axpy_avx512)(double *w, const int64_t *indptr,
                                                                          const CV_INDEX *indices,
                                                                          const float *data, int64_t r,
                                                                          const double *c)
{
    CV_LANE_AXPY_BODY()
}
#endif
#undef CV_LANE_AXPY_BODY

typedef void (*CV_NAME(lane_axpy_fn))(double *, const int64_t *, const CV_INDEX *, const float *, int64_t,
                                       const double *);

static CV_NAME(lane_axpy_fn) CV_NAME(lane_axpy_for)(int32_t kernel)
{
    return CV_ISA_PICK(lane_axpy, kernel);
}

/* Solves the F fold problems of one pair.  rows[0..L) are all the pair's rows
 * (y their labels, fold_of their folds); alpha [L, CV_LANES] the dual
 * variables by row and fold (0 in a row's own fold), warm start in and
 * solution out; w [(d + 1) * CV_LANES] zero on entry, the folds' weights on
 * return (the bias feature's at j = d).  wsq[f] (NULL: no ray) as
 * dcd_primal's wsq for fold f; *capped counts the folds the pass limit
 * stopped.  Returns the passes made, summed over folds. */
static int64_t CV_NAME(solve_folds)(const CV_NAME(csr_rows) *m, CV_NAME(block_dot_fn) dot,
                                    CV_NAME(lane_axpy_fn) axpy, int32_t d, const double *sqnorm,
                                    const int64_t *rows, const double *y, const uint8_t *fold_of, int64_t L,
                                    int32_t F, double *alpha, double *w, double *qd, int64_t *index, uint8_t *mask,
                                    double bias, const dual_box *box, double eps, int32_t max_iter,
                                    double *const *wsq, uint64_t *rng, int64_t *capped)
{
    double *wb = w + (int64_t)d * CV_LANES;
    const double diag_pos = box->diag[0], diag_neg = box->diag[1], upper_pos = box->upper[0],
                 upper_neg = box->upper[1];
    int64_t l[CV_LANES] = {0}, act[CV_LANES] = {0}, passes[CV_LANES] = {0};
    for (int64_t i = 0; i < L; i++)
        for (int f = 0; f < F; f++)
            l[f] += fold_of[i] != f;
    if (wsq)
        for (int f = 0; f < F; f++) {
            const double s = ray_scale(alpha + f, CV_LANES, y, L, *wsq[f], box);
            if (s != 1.0)
                for (int64_t i = 0; i < L; i++)
                    alpha[i * CV_LANES + f] *= s;
        }
    const unsigned all = (1u << F) - 1u;
    for (int64_t i = 0; i < L; i++) {
        double c[CV_LANES];
        int any = 0;
        for (int f = 0; f < CV_LANES; f++) {
            c[f] = alpha[i * CV_LANES + f] * y[i];
            any |= alpha[i * CV_LANES + f] != 0.0;
        }
        if (any) {
            axpy(w, m->indptr, m->indices, m->data, rows[i], c);
            for (int f = 0; f < CV_LANES; f++)
                wb[f] += c[f] * bias;
        }
        qd[i] = sqnorm[rows[i]] + bias * bias + (y[i] < 0.0 ? diag_neg : diag_pos);
        mask[i] = (uint8_t)(all & ~(1u << fold_of[i]));
        index[i] = i;
    }
    unsigned live = 0;
    double pg_max_old[CV_LANES], pg_min_old[CV_LANES], norm[CV_LANES], pg_max[CV_LANES], pg_min[CV_LANES];
    for (int f = 0; f < F; f++) {
        act[f] = l[f];
        pg_max_old[f] = HUGE_VAL;
        pg_min_old[f] = -HUGE_VAL;
        norm[f] = 0.0;
        if (l[f] > 0)
            live |= 1u << f;
        else {
            passes[f] = 1;          /* as dcd_primal counts an empty problem */
            if (wsq)
                *wsq[f] = 0.0;
        }
    }
    int64_t active = L;
    while (live) {
        for (int f = 0; f < F; f++)
            if (live >> f & 1u) {
                if (passes[f] >= max_iter) {    /* the pass limit: |w~|^2 unknown */
                    live &= ~(1u << f);
                    ++*capped;
                    if (wsq)
                        *wsq[f] = 0.0;
                    continue;
                }
                passes[f]++;
                pg_max[f] = -HUGE_VAL;
                pg_min[f] = HUGE_VAL;
                norm[f] = 0.0;
            }
        if (!live)
            break;
        shuffle(index, active, rng);
        for (int64_t s = 0; s < active; s++) {
            const int64_t i = index[s];
            unsigned lanes = mask[i] & live;
            if (!lanes) {
                active--;
                index[s] = index[active];
                index[active] = i;
                s--;
                continue;
            }
            double dots[CV_LANES], step[CV_LANES] = {0.0};
            dot(w, m->indptr, m->indices, m->data, rows[i], dots);
            const int neg = y[i] < 0.0;
            const double yi = y[i], diag = neg ? diag_neg : diag_pos, upper = neg ? upper_neg : upper_pos;
            int moved = 0;
            for (; lanes; lanes &= lanes - 1) {
                const int f = __builtin_ctz(lanes);
                double *a = alpha + i * CV_LANES + f;
                const double G = yi * (dots[f] + wb[f] * bias) - 1.0 + diag * *a;
                double pg = 0.0;
                if (*a == 0.0) {
                    if (G > pg_max_old[f]) {
                        mask[i] &= (uint8_t)~(1u << f);
                        act[f]--;
                        continue;
                    }
                    if (G < 0.0)
                        pg = G;
                } else if (*a >= upper) {
                    if (G < pg_min_old[f]) {
                        mask[i] &= (uint8_t)~(1u << f);
                        act[f]--;
                        continue;
                    }
                    if (G > 0.0)
                        pg = G;
                } else {
                    pg = G;
                }
                norm[f] += *a * (G + 1.0 - diag * *a);
                if (pg > pg_max[f])
                    pg_max[f] = pg;
                if (pg < pg_min[f])
                    pg_min[f] = pg;
                if (fabs(pg) <= 1e-12)
                    continue;
                double a_new = *a - G / qd[i];
                a_new = a_new < 0.0 ? 0.0 : (a_new > upper ? upper : a_new);
                step[f] = (a_new - *a) * yi;
                *a = a_new;
                moved = 1;
            }
            if (moved) {
                axpy(w, m->indptr, m->indices, m->data, rows[i], step);
                for (int f = 0; f < CV_LANES; f++)
                    wb[f] += step[f] * bias;
            }
            if (!(mask[i] & live)) {
                active--;
                index[s] = index[active];
                index[active] = i;
                s--;
            }
        }
        int back = 0;
        for (int f = 0; f < F; f++) {
            if (!(live >> f & 1u))
                continue;
            if (pg_max[f] - pg_min[f] <= eps) {
                if (act[f] == l[f]) {       /* converged */
                    live &= ~(1u << f);
                    if (wsq)
                        *wsq[f] = norm[f];
                    continue;
                }
                for (int64_t i = 0; i < L; i++)   /* all return for a final check */
                    if (fold_of[i] != f)
                        mask[i] |= (uint8_t)(1u << f);
                act[f] = l[f];
                pg_max_old[f] = HUGE_VAL;
                pg_min_old[f] = -HUGE_VAL;
                back = 1;
                continue;
            }
            pg_max_old[f] = pg_max[f] > 0.0 ? pg_max[f] : HUGE_VAL;
            pg_min_old[f] = pg_min[f] < 0.0 ? pg_min[f] : -HUGE_VAL;
        }
        if (back)       /* rows set aside that a fold needs again */
            for (int64_t t = active; t < L; t++)
                if (mask[index[t]] & live) {
                    const int64_t i = index[t];
                    index[t] = index[active];
                    index[active] = i;
                    active++;
                }
    }
    int64_t total = 0;
    for (int f = 0; f < F; f++)
        total += passes[f];
    return total;
}

/* Zeroes the CV_LANES weights W[j * CV_LANES ..] of every column j of class
 * c's rows (cols[col_ptr[c] .. col_ptr[c + 1]), each column once). */
static void CV_NAME(clear_cols)(double *W, const int64_t *col_ptr, const CV_INDEX *cols, int32_t c)
{
    for (int64_t t = col_ptr[c]; t < col_ptr[c + 1]; t++)
        memset(W + (int64_t)cols[t] * CV_LANES, 0, sizeof(double) * CV_LANES);
}

/* Pairs p0..p1, CV_LANES at a time, every fold at once: each pair's folds
 * solved in the lanes of the scratch weights w, then copied into its lane of
 * fold f's block Wf[f] (the per-fold path's blocks, but a row per column of
 * the block's classes, found through b->slot, not per feature: ~6% less time
 * over reuters-r52's first twelve C steps, the same bits), and the held-out
 * rows of every fold voted on from those blocks as the per-fold path votes,
 * but sample-major (votes and conf [n, K], all rows: a row's votes from a
 * block of pairs fall on a few cache lines, where class-major arrays for
 * every row left L2).  col_ptr and cols list each class's columns (those of
 * its rows in every fold), the weights a pair can write. */
static int64_t CV_NAME(fold_pairs)(const int64_t *indptr, const CV_INDEX *indices, const float *data, int32_t d,
                                   const double *sqnorm, const int64_t *block, int32_t F, int32_t K, int64_t P,
                                   const int32_t *pair_a, const int32_t *pair_b, int64_t p0, int64_t p1,
                                   const int64_t *const *alpha_off, double *const *alpha, const uint64_t *seeds,
                                   double bias, double C, const double *class_weight, int32_t loss, double eps,
                                   int32_t max_iter, double *ray, const int64_t *col_ptr, const CV_INDEX *cols,
                                   fold_work *b, int32_t kernel, int32_t *votes, int64_t *conf, int64_t *capped)
{
    const int64_t wlen = ((int64_t)d + 1) * CV_LANES;
    const CV_NAME(block_dot_fn) dot = CV_NAME(block_dot_for)(kernel);
    const CV_NAME(slot_dot_fn) held = CV_NAME(slot_dot_for)(kernel);
    const CV_NAME(lane_axpy_fn) axpy = CV_NAME(lane_axpy_for)(kernel);
    const CV_NAME(csr_rows) m = {indptr, indices, data};
    int32_t *slot = b->slot, *used = b->used;
    int64_t total = 0;      /* b->w and b->Wf are zero on entry and on return, b->slot all d */
    for (int64_t q0 = p0; q0 < p1; q0 += CV_LANES) {
        const int64_t nq = p1 - q0 < CV_LANES ? p1 - q0 : CV_LANES;
        /* The fold blocks hold only the columns of the block's classes, each
         * in a row of its own (slot), in the order first met: the held-out
         * products and the clears touch those rows, not all d (on
         * reuters-r52 41% of them on average); other columns read row d,
         * which stays zero. */
        int32_t nused = 0;
        for (int64_t q = 0; q < nq; q++)
            for (int side = 0; side < 2; side++) {
                const int32_t c = side ? pair_b[q0 + q] : pair_a[q0 + q];
                for (int64_t t = col_ptr[c]; t < col_ptr[c + 1]; t++)
                    if (slot[cols[t]] == d) {
                        slot[cols[t]] = nused;
                        used[nused++] = (int32_t)cols[t];
                    }
            }
        double wbias[CV_LANES][CV_LANES];       /* [fold][pair]: the bias feature's weights */
        memset(wbias, 0, sizeof wbias);
        for (int64_t q = 0; q < nq; q++) {
            const int64_t p = q0 + q;
            const int64_t L = fold_pair_rows(block, F, K, pair_a[p], pair_b[p], b->rows, b->y, b->fold_of);
            fold_alpha(alpha, alpha_off, F, p, b->fold_of, L, b->alpha, 0);
            double *wsq[CV_LANES];
            for (int32_t f = 0; f < F; f++)
                wsq[f] = ray ? ray + (int64_t)f * P + p : NULL;
            uint64_t rng = seeds[p];
            const dual_box box = pair_box(C, loss, class_weight, pair_a[p], pair_b[p]);
            total += CV_NAME(solve_folds)(&m, dot, axpy, d, sqnorm, b->rows, b->y, b->fold_of, L, F, b->alpha, b->w,
                                          b->qd, b->index, b->mask, bias, &box, eps, max_iter, ray ? wsq : NULL,
                                          &rng, capped);
            fold_alpha(alpha, alpha_off, F, p, b->fold_of, L, b->alpha, 1);
            /* Into the fold blocks, then the scratch cleared, over the
             * columns of the pair's two classes (the only ones its weights
             * use; a column of both is copied twice) and the bias feature's.
             * Over the rows' non-zeros instead (a column once per row that
             * has it: five times as many on reuters-r52) this was a fifth
             * of a C step. */
            const double *wd = b->w + (int64_t)d * CV_LANES;
            for (int32_t f = 0; f < F; f++)
                wbias[f][q] = wd[f];
            for (int side = 0; side < 2; side++) {
                const int32_t c = side ? pair_b[p] : pair_a[p];
                for (int64_t t = col_ptr[c]; t < col_ptr[c + 1]; t++) {
                    const int64_t j = (int64_t)cols[t] * CV_LANES, at = (int64_t)slot[cols[t]] * CV_LANES;
                    for (int32_t f = 0; f < F; f++)
                        b->Wf[f * wlen + at + q] = b->w[j + f];
                }
            }
            CV_NAME(clear_cols)(b->w, col_ptr, cols, pair_a[p]);
            CV_NAME(clear_cols)(b->w, col_ptr, cols, pair_b[p]);
            memset(b->w + (int64_t)d * CV_LANES, 0, sizeof(double) * CV_LANES);
        }
        for (int32_t f = 0; f < F; f++) {
            const double *Wb = b->Wf + f * wlen;
            int live[CV_LANES], any = 0;
            for (int64_t q = 0; q < nq; q++)
                any |= live[q] = pair_trained(block, F, K, f, pair_a[q0 + q], pair_b[q0 + q]);
            if (!any)
                continue;
            /* A run: a full block of pairs (a, b0 + q), every one trained
             * here -- most blocks, pairs being in (a, b) order. */
            const int32_t a0 = pair_a[q0], b0 = pair_b[q0];
            int run = nq == CV_LANES;
            for (int64_t q = 0; q < nq; q++)
                run &= live[q] && pair_a[q0 + q] == a0 && pair_b[q0 + q] == b0 + q;
            double out[CV_LANES];
            for (int64_t x = block[(int64_t)f * K]; x < block[(int64_t)(f + 1) * K]; x++) {
                held(Wb, slot, indptr, indices, data, x, out);
                if (run) {
                    vote_run(out, wbias[f], bias, a0, b0, votes + x * K, conf + x * K);
                    continue;
                }
                for (int64_t q = 0; q < nq; q++)
                    if (live[q])
                        vote(out[q] + wbias[f][q] * bias, pair_a[q0 + q], pair_b[q0 + q], 1, votes + x * K,
                             conf + x * K);
            }
        }
        /* the rows used zeroed again (contiguous), the slots handed back */
        for (int32_t f = 0; f < F; f++)
            memset(b->Wf + f * wlen, 0, sizeof(double) * CV_LANES * (size_t)nused);
        for (int32_t u = 0; u < nused; u++)
            slot[used[u]] = d;
    }
    return total;
}
