/* Cross-validated one-vs-one training over a path of C values (see hsvm_cvpath.h).
 *
 * Each pair's binary problem is LIBLINEAR's L2-regularised SVM with a bias
 * feature (Fan et al., JMLR 2008), solved in the dual by coordinate descent
 * (Hsieh, Chang, Lin, Keerthi & Sundararajan, "A Dual Coordinate Descent Method
 * for Large-scale Linear SVM", ICML 2008):
 *
 *     min_a  1/2 a^T (Q + D) a - e^T a,   0 <= a_i <= U,
 *     Q_ij = y_i y_j (x_i.x_j + bias^2),
 *
 * D_ii = 1/(2C), U = inf for the L2 (squared hinge) loss, D = 0, U = C for the
 * L1 (hinge) loss (C of each class under class weights: cvpath_dcd.h, dual_box);
 * w = sum_i a_i y_i (x_i, bias).  One coordinate step sets
 * a_i <- clip(a_i - G_i / (Q_ii + D_ii), 0, U) with G_i the i-th gradient; the
 * stopping rule is the paper's: the projected gradients of a pass span at most
 * eps.  Along a path of increasing C the previous solution stays feasible
 * (the constraints only widen) and warm-starts the next, as LIBLINEAR's -C
 * does for its primal solver (Chu, Hsieh & Lin, KDD 2015) -- here moved
 * along its ray to the multiple that minimises the new dual objective
 * (cvpath_dcd.h, ray_scale).
 *
 * Forms of the same iteration:
 * - kernel form, for problems of few rows: Q from a precomputed Gram matrix,
 *   the gradient vector maintained (O(l) per step) -- cheaper than the primal
 *   form when a pair has fewer training rows than a sample has nonzeros (the
 *   caller then forms the held-out decisions sum_i a_i y_i (x_i.x + bias^2)
 *   with BLAS from the Gram matrix's columns, which hold the bias term too);
 * - primal form (the paper's Algorithm 3, with its shrinking; cvpath_dcd.h):
 *   w kept, each gradient a product with a row, held-out decisions w.x; on
 *   sparse rows (cvpath_primal.h) or, for dense-ish data, dense rows (below);
 *   on sparse rows a pair's folds can also be solved together, one pass over
 *   its rows serving every fold (cvpath_folds.h).
 *
 * Every step is plain double arithmetic in a fixed order (the vector loops of
 * the primal form keep the portable order on every instruction set), the
 * random visiting order comes from SplitMix64 seeded per pair, and the
 * held-out confidences are summed in fixed point: the results do not depend
 * on threads or machine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hsvm_cpu.h"
#include "hsvm_cvpath.h"

#if defined(__x86_64__) || defined(__i386__)
#define CV_X86 1
#include <emmintrin.h>
#else
#define CV_X86 0
#endif

/* The instruction-set variant NAME_avx512 / NAME_avx2 / NAME_portable of a
 * kernel family of the including header (CV_NAME adds its index suffix) for
 * kernel id `kernel`: one selection rule for every family's *_for. */
#if CV_X86
#define CV_ISA_PICK(NAME, kernel)                                                             \
    ((kernel) == HSVM_KERNEL_AVX512 ? CV_NAME(NAME##_avx512)                                   \
     : (kernel) == HSVM_KERNEL_AVX2 ? CV_NAME(NAME##_avx2) : CV_NAME(NAME##_portable))
#else
#define CV_ISA_PICK(NAME, kernel) ((void)(kernel), CV_NAME(NAME##_portable))
#endif

/* Pairs whose held-out decisions are formed together (cvpath_primal.h). */
#define CV_LANES 8

/* Fixed point of the confidence sums: 2^24 steps per unit, clamped far above
 * any useful decision value so that K sums of them cannot overflow. */
#define CONF_SCALE 16777216.0
#define CONF_CLAMP 274877906944.0   /* 2^38 */

static inline uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A uniform index below n (multiply-shift on the top 32 bits). */
static inline int64_t below(uint64_t *state, int64_t n)
{
    return (int64_t)(((splitmix64(state) >> 32) * (uint64_t)n) >> 32);
}

static void shuffle(int64_t *index, int64_t m, uint64_t *state)
{
    for (int64_t i = m - 1; i > 0; i--) {
        int64_t j = below(state, i + 1);
        int64_t t = index[i];
        index[i] = index[j];
        index[j] = t;
    }
}

#include "cvpath_dcd.h"   /* after shuffle, which it uses */

/* Class c's training rows: its rows outside `fold`. */
static int64_t class_rows(const int64_t *block, int32_t F, int32_t K, int32_t fold, int32_t c)
{
    int64_t l = 0;
    for (int32_t f = 0; f < F; f++)
        if (f != fold)
            l += block[(int64_t)f * K + c + 1] - block[(int64_t)f * K + c];
    return l;
}

static int64_t train_rows(const int64_t *block, int32_t F, int32_t K, int32_t fold, int32_t a, int32_t b)
{
    return class_rows(block, F, K, fold, a) + class_rows(block, F, K, fold, b);
}

/* Whether both classes of a pair have training rows outside `fold`.  A class
 * whose only samples are held out is absent from that fold's problem, as
 * from a LIBSVM sub-model of svm-train -v: its pairs, trained on one class,
 * do not vote (they could vote for the absent class, and a sample of it
 * would count as right). */
static int pair_trained(const int64_t *block, int32_t F, int32_t K, int32_t fold, int32_t a, int32_t b)
{
    return class_rows(block, F, K, fold, a) > 0 && class_rows(block, F, K, fold, b) > 0;
}

/* The pair's training rows: class a's (label +1), then class b's (-1), each
 * in row order over the folds other than `fold`. */
static int64_t pair_rows(const int64_t *block, int32_t F, int32_t K, int32_t fold, int32_t a, int32_t b,
                         int64_t *rows, double *y)
{
    int64_t l = 0;
    for (int side = 0; side < 2; side++) {
        const int32_t c = side ? b : a;
        const double label = side ? -1.0 : 1.0;
        for (int32_t f = 0; f < F; f++) {
            if (f == fold)
                continue;
            for (int64_t r = block[(int64_t)f * K + c]; r < block[(int64_t)f * K + c + 1]; r++) {
                rows[l] = r;
                y[l] = label;
                l++;
            }
        }
    }
    return l;
}

/* The fused-fold form's buffers (cvpath_folds.h): a pair's rows over every
 * fold (lmax of them), its dual variables by row and fold, the scratch
 * weights of its folds and the F blocks of CV_LANES pairs' weights the
 * held-out rows are voted on from. */
typedef struct {
    int64_t *rows, *index;
    double *y, *qd, *alpha, *w, *Wf;
    uint8_t *fold_of, *mask;
    int32_t *slot;      /* [d]: a column's row in the fold blocks, or the zero row */
    int32_t *used;      /* the columns given a row, in order */
    int kept;           /* w (and Wf, its tail) is the caller's */
} fold_work;

/* On a 64-byte boundary (a cache line), or NULL. */
static void *aligned_block(size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, 64, bytes > 0 ? bytes : 64) == 0 ? p : NULL;
}

/* kept: the caller's zeroed (F + 1) blocks of weights, the scratch then the
 * F fold blocks, not freed (NULL: made here, zeroed). */
static int fold_work_alloc(fold_work *b, int64_t lmax, int32_t d, int32_t F, double *kept)
{
    const int64_t wlen = ((int64_t)d + 1) * CV_LANES;
    b->rows = malloc(sizeof(int64_t) * (size_t)lmax);
    b->index = malloc(sizeof(int64_t) * (size_t)lmax);
    b->y = malloc(sizeof(double) * (size_t)lmax);
    b->qd = malloc(sizeof(double) * (size_t)lmax);
    b->alpha = malloc(sizeof(double) * (size_t)lmax * CV_LANES);
    b->fold_of = malloc((size_t)lmax);
    b->mask = malloc((size_t)lmax);
    b->kept = kept != NULL;
    b->w = kept ? kept : aligned_block(sizeof(double) * (size_t)wlen * ((size_t)F + 1));
    b->Wf = b->w ? b->w + wlen : NULL;
    if (b->w && !kept)
        memset(b->w, 0, sizeof(double) * (size_t)wlen * ((size_t)F + 1));
    b->slot = malloc(sizeof(int32_t) * ((size_t)d + 1));
    b->used = malloc(sizeof(int32_t) * ((size_t)d + 1));
    if (b->slot)
        for (int32_t j = 0; j < d; j++)
            b->slot[j] = d;     /* the zero row */
    return b->rows && b->index && b->y && b->qd && b->alpha && b->fold_of && b->mask && b->w && b->Wf &&
                   b->slot && b->used ? 0 : -2;
}

static void fold_work_free(fold_work *b)
{
    free(b->rows);
    free(b->index);
    free(b->y);
    free(b->qd);
    free(b->alpha);
    free(b->fold_of);
    free(b->mask);
    free(b->slot);
    free(b->used);
    if (!b->kept)
        free(b->w);       /* Wf is its tail */
}

/* Every row of the pair, class a's (+1) then class b's (-1), each over the
 * folds in row order, with its fold: without fold f's rows, the order of
 * pair_rows(fold f). */
static int64_t fold_pair_rows(const int64_t *block, int32_t F, int32_t K, int32_t a, int32_t b, int64_t *rows,
                              double *y, uint8_t *fold_of)
{
    int64_t l = 0;
    for (int side = 0; side < 2; side++) {
        const int32_t c = side ? b : a;
        for (int32_t f = 0; f < F; f++)
            for (int64_t r = block[(int64_t)f * K + c]; r < block[(int64_t)f * K + c + 1]; r++) {
                rows[l] = r;
                y[l] = side ? -1.0 : 1.0;
                fold_of[l] = (uint8_t)f;
                l++;
            }
    }
    return l;
}

/* Pair p's dual variables between the per-fold arrays (alpha[f] at
 * alpha_off[f][p], pair_rows order) and the row-by-fold block a [L,
 * CV_LANES] (0 in a row's own fold and in unused lanes): back 0 gathers,
 * 1 scatters. */
static void fold_alpha(double *const *alpha, const int64_t *const *alpha_off, int32_t F, int64_t p,
                       const uint8_t *fold_of, int64_t L, double *a, int back)
{
    for (int32_t f = 0; f < CV_LANES; f++) {
        double *src = f < F ? alpha[f] + alpha_off[f][p] : NULL;
        int64_t k = 0;
        for (int64_t i = 0; i < L; i++) {
            const int own = f >= F || fold_of[i] == f;
            if (back) {
                if (!own)
                    src[k++] = a[i * CV_LANES + f];
            } else {
                a[i * CV_LANES + f] = own ? 0.0 : src[k++];
            }
        }
    }
}

static int check_args(int64_t n, const int64_t *block, int32_t F, int32_t K, int32_t fold,
                      const int32_t *pair_a, const int32_t *pair_b, int64_t p0, int64_t p1,
                      const int64_t *alpha_off, double C, const double *class_weight, int32_t loss,
                      int32_t max_iter)
{
    if (F < 2 || K < 2 || fold < 0 || fold >= F || p0 < 0 || p1 < p0 || !(C > 0.0) || max_iter < 1)
        return -1;
    if (class_weight)
        for (int32_t k = 0; k < K; k++)
            if (!(class_weight[k] > 0.0) || !isfinite(class_weight[k]) || !isfinite(C * class_weight[k]))
                return -1;
    if ((loss != 1 && loss != 2) || block[0] != 0 || block[(int64_t)F * K] != n)
        return -1;
    for (int64_t i = 0; i < (int64_t)F * K; i++)
        if (block[i + 1] < block[i])
            return -1;
    for (int64_t p = p0; p < p1; p++) {
        if (pair_a[p] < 0 || pair_a[p] >= K || pair_b[p] < 0 || pair_b[p] >= K || pair_a[p] == pair_b[p])
            return -1;
        if (alpha_off[p + 1] - alpha_off[p] != train_rows(block, F, K, fold, pair_a[p], pair_b[p]))
            return -1;
    }
    return 0;
}

static int64_t max_pair_rows(const int64_t *block, int32_t F, int32_t K, int32_t fold,
                             const int32_t *pair_a, const int32_t *pair_b, int64_t p0, int64_t p1)
{
    int64_t m = 1;
    for (int64_t p = p0; p < p1; p++) {
        int64_t l = train_rows(block, F, K, fold, pair_a[p], pair_b[p]);
        if (l > m)
            m = l;
    }
    return m;
}

/* A solve's per-pair buffers (lmax rows each) and weights (wlen doubles). */
typedef struct {
    int64_t *rows, *index;
    double *y, *qd, *w;
    int kept;           /* w is the caller's */
} pair_work;

/* kept: the caller's zeroed weights, used for w and not freed (NULL: made
 * here, zeroed, freed with the rest). */
static int pair_work_alloc(pair_work *b, int64_t lmax, int64_t wlen, double *kept)
{
    b->rows = malloc(sizeof(int64_t) * (size_t)lmax);
    b->index = malloc(sizeof(int64_t) * (size_t)lmax);
    b->y = malloc(sizeof(double) * (size_t)lmax);
    b->qd = malloc(sizeof(double) * (size_t)lmax);
    /* On a cache line: the primal form reads a feature's CV_LANES weights
     * (64 bytes) together, one line instead of two; malloc's alignment
     * varied with the heap's history, and the search's speed with it (5-7%
     * on reuters-r52 from one build to the next). */
    b->kept = kept != NULL;
    b->w = kept ? kept : aligned_block(sizeof(double) * (size_t)(wlen > 0 ? wlen : 1));
    if (b->w && !kept)
        memset(b->w, 0, sizeof(double) * (size_t)(wlen > 0 ? wlen : 1));
    return b->rows && b->index && b->y && b->qd && b->w ? 0 : -2;
}

static void pair_work_free(pair_work *b)
{
    free(b->rows);
    free(b->index);
    free(b->y);
    free(b->qd);
    if (!b->kept)
        free(b->w);
}

/* A held-out decision in fixed point: llrint's rounding (to nearest, ties to
 * even, the default mode), inlined on x86 where the call cost as much as
 * the rest of a vote. */
static inline int64_t conf_fixed(double f)
{
    const double c = (f > CONF_CLAMP ? CONF_CLAMP : (f < -CONF_CLAMP ? -CONF_CLAMP : f)) * CONF_SCALE;
#if defined(__x86_64__)
    return _mm_cvtsd_si64(_mm_set_sd(c));
#else
    return (int64_t)llrint(c);
#endif
}

/* One held-out decision into the votes and fixed-point confidences of row x,
 * held class-major: v and cf point at row x's entry of class 0, stride nh. */
static inline void vote(double f, int32_t a, int32_t b, int64_t nh, int32_t *v, int64_t *cf)
{
    const int64_t q = conf_fixed(f);
    v[(f > 0.0 ? a : b) * nh] += 1;
    cf[a * nh] += q;
    cf[b * nh] -= q;
}

/* vote() for the CV_LANES pairs (a, b0 + q) of a sample-major row (nh 1),
 * out[q] + wbias[q] * bias their decisions: class a's votes and confidence
 * summed in registers and written once, where eight read-modify-writes of
 * one location waited on each other; integer sums, so the same totals. */
static inline void vote_run(const double *out, const double *wbias, double bias, int32_t a, int32_t b0, int32_t *v,
                            int64_t *cf)
{
    int64_t q_of[CV_LANES];
    uint64_t sum = 0;       /* wraps as the eight additions to cf[a] did */
    int32_t wins = 0;
    for (int q = 0; q < CV_LANES; q++) {
        const double f = out[q] + wbias[q] * bias;
        const int32_t won = f > 0.0;
        q_of[q] = conf_fixed(f);
        sum += (uint64_t)q_of[q];
        wins += won;
        v[b0 + q] += 1 - won;
    }
    v[a] += wins;
    cf[a] = (int64_t)((uint64_t)cf[a] + sum);
    for (int q = 0; q < CV_LANES; q++)
        cf[b0 + q] -= q_of[q];
}

/* ------------------------------------------------------------------ kernel form */

/* ray: start along the ray (cvpath_dcd.h, ray_scale); Q alpha is in the
 * gradient, so |w~|^2 = alpha^T Q alpha costs O(l) here. */
static int64_t solve_kernel(const float *gram, int64_t n, const int64_t *rows, const double *y, int64_t l,
                            double *alpha, float *Q, double *grad, double *qd, int64_t *index,
                            const dual_box *box, double eps, int32_t max_iter, int ray, uint64_t *rng,
                            int64_t *capped)
{
    const double diag_pos = box->diag[0], diag_neg = box->diag[1], upper_pos = box->upper[0],
                 upper_neg = box->upper[1];
    for (int64_t i = 0; i < l; i++) {
        /* gram already holds x_i.x_j + bias^2: Q is its entries with the signs y_i y_j */
        const float *g = gram + rows[i] * n;
        float *q = Q + i * l;
        const double yi = y[i];
        for (int64_t j = 0; j < l; j++)
            q[j] = y[j] == yi ? g[rows[j]] : -g[rows[j]];
        const double diag = yi < 0.0 ? diag_neg : diag_pos;
        qd[i] = (double)q[i] + diag;
        grad[i] = -1.0 + diag * alpha[i];
        index[i] = i;
    }
    for (int64_t j = 0; j < l; j++) {
        if (alpha[j] == 0.0)
            continue;
        const float *q = Q + j * l;   /* Q is symmetric: row j is column j */
        for (int64_t i = 0; i < l; i++)
            grad[i] += alpha[j] * (double)q[i];
    }
    if (ray) {
        double wsq = 0.0;
        for (int64_t i = 0; i < l; i++)
            wsq += alpha[i] * (grad[i] + 1.0 - (y[i] < 0.0 ? diag_neg : diag_pos) * alpha[i]);
        const double s = ray_scale(alpha, 1, y, l, wsq, box);
        if (s != 1.0)
            for (int64_t i = 0; i < l; i++) {
                const double diag = y[i] < 0.0 ? diag_neg : diag_pos;
                const double qa = grad[i] + 1.0 - diag * alpha[i];   /* (Q alpha)_i */
                alpha[i] *= s;
                grad[i] = s * qa - 1.0 + diag * alpha[i];
            }
    }
    int64_t pass = 0;
    while (pass < max_iter) {
        pass++;
        shuffle(index, l, rng);
        double pg_max = -HUGE_VAL, pg_min = HUGE_VAL;
        for (int64_t s = 0; s < l; s++) {
            const int64_t i = index[s];
            const int neg = y[i] < 0.0;
            const double upper = neg ? upper_neg : upper_pos;
            const double G = grad[i];
            double pg = G;
            if (alpha[i] == 0.0)
                pg = G < 0.0 ? G : 0.0;
            else if (alpha[i] >= upper)
                pg = G > 0.0 ? G : 0.0;
            if (pg > pg_max)
                pg_max = pg;
            if (pg < pg_min)
                pg_min = pg;
            if (fabs(pg) <= 1e-12)
                continue;
            double a_new = alpha[i] - G / qd[i];
            a_new = a_new < 0.0 ? 0.0 : (a_new > upper ? upper : a_new);
            const double d = a_new - alpha[i];
            if (d == 0.0)
                continue;
            alpha[i] = a_new;
            const float *q = Q + i * l;
            for (int64_t j = 0; j < l; j++)
                grad[j] += d * (double)q[j];
            grad[i] += d * (neg ? diag_neg : diag_pos);
        }
        if (l == 0 || pg_max - pg_min <= eps)
            return pass;
    }
    ++*capped;      /* stopped by the pass limit */
    return pass;
}

int hsvm_cv_gram_solve(const float *gram, int64_t n, const int64_t *block, int32_t n_folds, int32_t n_classes,
                       int32_t fold, const int32_t *pair_a, const int32_t *pair_b, int64_t p0, int64_t p1,
                       const int64_t *alpha_off, double *alpha, const uint64_t *seeds, double C,
                       const double *class_weight, int32_t loss, double eps, int32_t max_iter, int32_t ray,
                       int64_t *passes)
{
    const int32_t F = n_folds, K = n_classes;
    if (check_args(n, block, F, K, fold, pair_a, pair_b, p0, p1, alpha_off, C, class_weight, loss, max_iter))
        return -1;
    const int64_t lmax = max_pair_rows(block, F, K, fold, pair_a, pair_b, p0, p1);
    pair_work b;
    int rc = pair_work_alloc(&b, lmax, lmax, NULL);   /* w: the gradient */
    float *Q = malloc(sizeof(float) * (size_t)lmax * (size_t)lmax);
    if (rc || !Q) {
        rc = -2;
        goto done;
    }
    int64_t total = 0;
    passes[1] = 0;
    for (int64_t p = p0; p < p1; p++) {
        const int64_t l = pair_rows(block, F, K, fold, pair_a[p], pair_b[p], b.rows, b.y);
        uint64_t rng = seeds[p];
        const dual_box box = pair_box(C, loss, class_weight, pair_a[p], pair_b[p]);
        total += solve_kernel(gram, n, b.rows, b.y, l, alpha + alpha_off[p], Q, b.w, b.qd, b.index, &box, eps,
                              max_iter, ray, &rng, &passes[1]);
    }
    passes[0] = total;
done:
    pair_work_free(&b);
    free(Q);
    return rc;
}

/* ------------------------------------------------------------------ primal form */

#define CV_INDEX uint16_t
#define CV_NAME(x) x##_u16
#include "cvpath_primal.h"
#include "cvpath_folds.h"
#undef CV_INDEX
#undef CV_NAME
#define CV_INDEX int32_t
#define CV_NAME(x) x##_i32
#include "cvpath_primal.h"
#include "cvpath_folds.h"
#undef CV_INDEX
#undef CV_NAME

/* Whether rows of d columns can be read with index_bytes-byte indices. */
static inline int index_width_ok(int32_t d, int32_t index_bytes)
{
    return d >= 0 && (index_bytes == 4 || (index_bytes == 2 && d <= 65536));
}

int hsvm_cv_check_rows(const int64_t *indptr, const int32_t *indices, int64_t n, int32_t d)
{
    if (n < 0 || d < 0 || indptr[0] != 0)
        return -1;
    for (int64_t i = 0; i < n; i++)
        if (indptr[i + 1] < indptr[i])
            return -1;
    for (int64_t k = 0; k < indptr[n]; k++)
        if (indices[k] < 0 || indices[k] >= d)
            return -1;
    return 0;
}

int hsvm_cv_primal_path(const int64_t *indptr, const void *indices, int32_t index_bytes, const float *data,
                        int64_t n, int32_t d, const double *sqnorm, const int64_t *block, int32_t n_folds,
                        int32_t n_classes, int32_t fold, const int32_t *pair_a, const int32_t *pair_b, int64_t p0,
                        int64_t p1, const int64_t *alpha_off, double *alpha, const uint64_t *seeds, double bias,
                        double C, const double *class_weight, int32_t loss, double eps, int32_t max_iter,
                        double *ray, double *W_block, int32_t kernel_request, int32_t *votes, int64_t *conf,
                        int64_t *passes)
{
    const int32_t F = n_folds, K = n_classes;
    /* The rows' indices are checked once by the caller (hsvm_cv_check_rows),
     * not here: this runs once per block of pairs, fold and C, and a pass
     * over every non-zero each time cost more than the solves at small C. */
    if (!index_width_ok(d, index_bytes))
        return -1;
    if (check_args(n, block, F, K, fold, pair_a, pair_b, p0, p1, alpha_off, C, class_weight, loss, max_iter))
        return -1;
    const int64_t lmax = max_pair_rows(block, F, K, fold, pair_a, pair_b, p0, p1);
    const int32_t kernel = hsvm_resolve_kernel(kernel_request);
    if (kernel < 0)
        return kernel;
    pair_work b;   /* w: the block of CV_LANES pairs' weights */
    const int rc = pair_work_alloc(&b, lmax, ((int64_t)d + 1) * CV_LANES, W_block);
    passes[1] = 0;
    if (rc == 0 && index_bytes == 2)
        *passes = pairs_u16(indptr, indices, data, d, sqnorm, block, F, K, fold, pair_a, pair_b, p0, p1, alpha_off,
                            alpha, seeds, bias, C, class_weight, loss, eps, max_iter, b.rows, b.y, b.qd, b.index, b.w,
                            ray, kernel, votes, conf, &passes[1]);
    else if (rc == 0)
        *passes = pairs_i32(indptr, indices, data, d, sqnorm, block, F, K, fold, pair_a, pair_b, p0, p1, alpha_off,
                            alpha, seeds, bias, C, class_weight, loss, eps, max_iter, b.rows, b.y, b.qd, b.index, b.w,
                            ray, kernel, votes, conf, &passes[1]);
    pair_work_free(&b);
    return rc;
}

/* Whether the classes' column lists (hsvm_cv_primal_folds) fail to be
 * ascending offsets from 0 to columns below d: checked at every call, being
 * a list per class, not per non-zero. */
static int class_columns_bad(const int64_t *col_ptr, const void *cols, int32_t index_bytes, int32_t K, int32_t d)
{
    if (col_ptr[0] != 0)
        return 1;
    for (int32_t c = 0; c < K; c++)
        if (col_ptr[c + 1] < col_ptr[c])
            return 1;
    for (int64_t t = 0; t < col_ptr[K]; t++) {
        const int64_t j = index_bytes == 2 ? ((const uint16_t *)cols)[t] : ((const int32_t *)cols)[t];
        if (j < 0 || j >= d)
            return 1;
    }
    return 0;
}

int hsvm_cv_primal_folds(const int64_t *indptr, const void *indices, int32_t index_bytes, const float *data,
                         int64_t n, int32_t d, const double *sqnorm, const int64_t *block, int32_t n_folds,
                         int32_t n_classes, int64_t n_pairs, const int32_t *pair_a, const int32_t *pair_b, int64_t p0,
                         int64_t p1, const int64_t *const *alpha_off, double *const *alpha, const uint64_t *seeds,
                         double bias, double C, const double *class_weight, int32_t loss, double eps,
                         int32_t max_iter, double *ray, const int64_t *class_col_ptr, const void *class_cols,
                         double *W_blocks, int32_t kernel_request, int32_t *votes, int64_t *conf, int64_t *passes)
{
    const int32_t F = n_folds, K = n_classes;
    if (!index_width_ok(d, index_bytes) || F < 2 || F > CV_LANES || p1 > n_pairs ||
        class_columns_bad(class_col_ptr, class_cols, index_bytes, K, d))
        return -1;
    for (int32_t f = 0; f < F; f++)
        if (check_args(n, block, F, K, f, pair_a, pair_b, p0, p1, alpha_off[f], C, class_weight, loss, max_iter))
            return -1;
    int64_t lmax = 1;
    for (int64_t p = p0; p < p1; p++) {
        const int64_t l = train_rows(block, F, K, -1, pair_a[p], pair_b[p]);
        lmax = l > lmax ? l : lmax;
    }
    const int32_t kernel = hsvm_resolve_kernel(kernel_request);
    if (kernel < 0)
        return kernel;
    fold_work b;
    const int rc = fold_work_alloc(&b, lmax, d, F, W_blocks);
    passes[1] = 0;
    if (rc == 0 && index_bytes == 2)
        *passes = fold_pairs_u16(indptr, indices, data, d, sqnorm, block, F, K, n_pairs, pair_a, pair_b, p0, p1,
                                 alpha_off, alpha, seeds, bias, C, class_weight, loss, eps, max_iter, ray,
                                 class_col_ptr, class_cols, &b, kernel, votes, conf, &passes[1]);
    else if (rc == 0)
        *passes = fold_pairs_i32(indptr, indices, data, d, sqnorm, block, F, K, n_pairs, pair_a, pair_b, p0, p1,
                                 alpha_off, alpha, seeds, bias, C, class_weight, loss, eps, max_iter, ray,
                                 class_col_ptr, class_cols, &b, kernel, votes, conf, &passes[1]);
    fold_work_free(&b);
    return rc;
}

int hsvm_cv_products(const double *W, int64_t n_pairs, int32_t d, const int64_t *indptr, const void *indices,
                     int32_t index_bytes, const float *data, int64_t r0, int64_t r1, int32_t kernel_request,
                     int32_t blocked, double *out)
{
    if (!index_width_ok(d, index_bytes) || n_pairs < 0 || r0 < 0 || r1 < r0)
        return -1;
    const int32_t kernel = hsvm_resolve_kernel(kernel_request);
    if (kernel < 0)
        return kernel;
    double *Wb = malloc(sizeof(double) * ((size_t)d + 1) * CV_LANES);
    if (!Wb)
        return -2;
    if (index_bytes == 2)
        products_u16(W, n_pairs, d, indptr, indices, data, r0, r1, kernel, blocked, Wb, out);
    else
        products_i32(W, n_pairs, d, indptr, indices, data, r0, r1, kernel, blocked, Wb, out);
    free(Wb);
    return 0;
}

/* ------------------------------------------------------------------ dense form */

/* Rows as a dense float32 matrix [n, dp], dp a multiple of CV_DENSE_LANES
 * (zero-padded): for dense-ish data (a quarter of the entries or more) the
 * primal iteration's products become vector loops instead of gathers.
 * x.w is summed in CV_DENSE_LANES partial sums (column j to sum j mod 32),
 * then halved pairwise (s[t] += s[t + 16], + 8, + 4, + 2, + 1); the loops
 * are written once and compiled for each instruction set with target
 * attributes, so every path does the same operations in the same order
 * (-ffp-contract=off: no fused multiply-add) and gives the same bits. */
#define CV_DENSE_LANES 32
/* Kept weights are rows of dp + CV_KEPT_PAD doubles (the bias feature's
 * weight first in the pad): with the rows 64-byte aligned, pairs updated on
 * different threads never write the same cache line -- with rows of dp + 1
 * they did, and two threads were slower than without keeping. */
#define CV_KEPT_PAD 8

/* The dense rows' storage for dcd_primal's row_ops (w contiguous, [dp + 1]). */
typedef struct {
    const float *X;
    int64_t dp;
} dense_rows;

#define CV_DENSE_ROW()                                                        \
    const dense_rows *m = rows;                                               \
    const int64_t dp = m->dp;                                                 \
    const float *x = m->X + r * dp;

#define CV_DENSE_DOT_BODY()                                                   \
    CV_DENSE_ROW()                                                            \
    double s[CV_DENSE_LANES] = {0};                                           \
    for (int64_t j = 0; j < dp; j += CV_DENSE_LANES)                          \
        for (int t = 0; t < CV_DENSE_LANES; t++)                              \
            s[t] += w[j + t] * (double)x[j + t];                              \
    for (int width = CV_DENSE_LANES / 2; width > 0; width /= 2)               \
        for (int t = 0; t < width; t++)                                       \
            s[t] += s[t + width];                                             \
    return s[0];

#define CV_DENSE_AXPY_BODY()                                                  \
    CV_DENSE_ROW()                                                            \
    for (int64_t j = 0; j < dp; j++)                                          \
        w[j] += c * (double)x[j];

static double dense_dot_portable(const void *rows, int64_t r, const double *w) { CV_DENSE_DOT_BODY() }
static void dense_axpy_portable(const void *rows, int64_t r, double c, double *w) { CV_DENSE_AXPY_BODY() }
#if CV_X86
__attribute__((target("avx2"))) static double dense_dot_avx2(const void *rows, int64_t r, const double *w)
{
    CV_DENSE_DOT_BODY()
}
__attribute__((target("avx2"))) static void dense_axpy_avx2(const void *rows, int64_t r, double c, double *w)
{
    CV_DENSE_AXPY_BODY()
}
__attribute__((target("avx512f"))) static double dense_dot_avx512(const void *rows, int64_t r, const double *w)
{
    CV_DENSE_DOT_BODY()
}
__attribute__((target("avx512f"))) static void dense_axpy_avx512(const void *rows, int64_t r, double c, double *w)
{
    CV_DENSE_AXPY_BODY()
}
#endif
#undef CV_DENSE_ROW
#undef CV_DENSE_DOT_BODY
#undef CV_DENSE_AXPY_BODY

/* The rows come in the solver's random order: the next one is fetched while
 * the current one runs. */
static void dense_prefetch(const void *rows, int64_t r)
{
    const dense_rows *m = rows;
    const char *x = (const char *)(m->X + r * m->dp);
    for (int64_t o = 0; o < m->dp * (int64_t)sizeof(float); o += 64)
        __builtin_prefetch(x + o);
}

static row_ops dense_ops(const dense_rows *m, int32_t kernel)
{
    row_ops ops = {m, dense_dot_portable, dense_axpy_portable, dense_prefetch};
#if CV_X86
    if (kernel == HSVM_KERNEL_AVX512) {
        ops.dot = dense_dot_avx512;
        ops.axpy = dense_axpy_avx512;
    } else if (kernel == HSVM_KERNEL_AVX2) {
        ops.dot = dense_dot_avx2;
        ops.axpy = dense_axpy_avx2;
    }
#endif
    (void)kernel;
    return ops;
}

/* dcd_primal for dense rows, in a function of its own: inlined into the
 * path's loop it ran about 6% slower on fashion-mnist-20k.  kept: w holds
 * the pair's weights from the previous C (else they are rebuilt). */
static __attribute__((noinline)) int64_t solve_dense(row_ops ops, int64_t dp, const double *sqnorm,
                                                     const int64_t *rows, const double *y, int64_t l, double *alpha,
                                                     double *w, int kept, double *qd, int64_t *index, double bias,
                                                     const dual_box *box, double eps, int32_t max_iter,
                                                     double *wsq, uint64_t *rng, int64_t *capped)
{
    if (!kept)
        memset(w, 0, sizeof(double) * ((size_t)dp + 1));
    return dcd_primal(ops, sqnorm, rows, y, l, alpha, w, w + dp, !kept, dp, wsq, qd, index, bias, box, eps,
                      max_iter, rng, capped);
}

int hsvm_cv_dense_path(const float *X, int64_t n, int64_t dp, const double *sqnorm, const int64_t *block,
                       int32_t n_folds, int32_t n_classes, int32_t fold, const int32_t *pair_a, const int32_t *pair_b,
                       int64_t p0, int64_t p1, const int64_t *alpha_off, double *alpha, const uint64_t *seeds,
                       double bias, double C, const double *class_weight, int32_t loss, double eps,
                       int32_t max_iter, double *W_kept, int32_t kept_valid, double *ray, int32_t kernel_request,
                       int32_t *votes, int64_t *conf, int64_t *passes)
{
    const int32_t F = n_folds, K = n_classes;
    if (dp < 0 || dp % CV_DENSE_LANES != 0)
        return -1;
    if (check_args(n, block, F, K, fold, pair_a, pair_b, p0, p1, alpha_off, C, class_weight, loss, max_iter))
        return -1;
    const int32_t kernel = hsvm_resolve_kernel(kernel_request);
    if (kernel < 0)
        return kernel;
    const dense_rows m = {X, dp};
    const row_ops ops = dense_ops(&m, kernel);
    const int64_t h0 = block[(int64_t)fold * K], h1 = block[(int64_t)(fold + 1) * K], nh = h1 - h0;
    const int64_t lmax = max_pair_rows(block, F, K, fold, pair_a, pair_b, p0, p1);
    pair_work b;
    const int rc = pair_work_alloc(&b, lmax, dp + 1, NULL);
    int64_t total = 0;
    passes[1] = 0;
    for (int64_t p = p0; p < p1 && rc == 0; p++) {
        const int64_t l = pair_rows(block, F, K, fold, pair_a[p], pair_b[p], b.rows, b.y);
        uint64_t rng = seeds[p];
        double *w = W_kept ? W_kept + p * (dp + CV_KEPT_PAD) : b.w;
        const dual_box box = pair_box(C, loss, class_weight, pair_a[p], pair_b[p]);
        total += solve_dense(ops, dp, sqnorm, b.rows, b.y, l, alpha + alpha_off[p], w, W_kept && kept_valid, b.qd,
                             b.index, bias, &box, eps, max_iter, ray ? ray + p : NULL, &rng, &passes[1]);
        if (pair_trained(block, F, K, fold, pair_a[p], pair_b[p]))
            for (int64_t x = h0; x < h1; x++)
                vote(ops.dot(&m, x, w) + w[dp] * bias, pair_a[p], pair_b[p], nh, votes + (x - h0),
                     conf + (x - h0));
    }
    passes[0] = total;
    pair_work_free(&b);
    return rc;
}

int hsvm_cv_dense_dot(const double *w, const float *x, int64_t dp, int32_t kernel_request, double *out)
{
    if (dp < 0 || dp % CV_DENSE_LANES != 0)
        return -1;
    const int32_t kernel = hsvm_resolve_kernel(kernel_request);
    if (kernel < 0)
        return kernel;
    const dense_rows one = {x, dp};
    *out = dense_ops(&one, kernel).dot(&one, 0, w);
    return 0;
}

/* ------------------------------------------------------------------ held-out votes of the kernel form */

int hsvm_cv_vote_rows(const float *rows, int64_t stride, int64_t nh, const int64_t *row_a, const int64_t *row_b,
                      const int32_t *pair_a, const int32_t *pair_b, int64_t n_pairs, int32_t n_classes,
                      int32_t *votes, double *conf)
{
    const int32_t K = n_classes;
    if (stride < nh)
        return -1;
    for (int64_t p = 0; p < n_pairs; p++)
        if (pair_a[p] < 0 || pair_a[p] >= K || pair_b[p] < 0 || pair_b[p] >= K)
            return -1;
    /* Counted class-major ([K, nh]: a pair adds to two contiguous rows, with
     * no branch) and transposed at the end; written sample-major, each of
     * the pair's writes went to a different cache line for every sample. */
    int32_t *vk = calloc((size_t)(nh * K) + 1, sizeof(int32_t));
    double *ck = calloc((size_t)(nh * K) + 1, sizeof(double));
    if (!vk || !ck) {
        free(vk);
        free(ck);
        return -2;
    }
    for (int64_t p = 0; p < n_pairs; p++) {
        const float *ra = rows + row_a[p] * stride, *rb = rows + row_b[p] * stride;
        int32_t *va = vk + pair_a[p] * nh, *vb = vk + pair_b[p] * nh;
        double *ca = ck + pair_a[p] * nh, *cb = ck + pair_b[p] * nh;
        for (int64_t x = 0; x < nh; x++) {
            const double f = (double)ra[x] + (double)rb[x];
            const int32_t win = f > 0.0;
            va[x] += win;
            vb[x] += 1 - win;
            ca[x] += f;
            cb[x] -= f;
        }
    }
    for (int64_t x = 0; x < nh; x++)
        for (int32_t k = 0; k < K; k++) {
            votes[x * K + k] = vk[k * nh + x];
            conf[x * K + k] = ck[k * nh + x];
        }
    free(vk);
    free(ck);
    return 0;
}
