/* Exact one-vs-one vote counting from decision values (see hsvm_votes.h and,
 * for the order of the sums, votes_runs.h). */
#include <stdlib.h>
#include <string.h>
#include "hsvm_votes.h"
#include "pair_rule.h"
#include "votes_runs.h"

VOTES_DECLARE_KERNEL(portable);
#if defined(__x86_64__) || defined(__i386__)
#define HSVM_X86 1
VOTES_DECLARE_KERNEL(avx2);
VOTES_DECLARE_KERNEL(avx512);
#endif

/* Cuts the pair list into runs (votes_runs.h); returns how many.  One pass
 * whose test, for a canonical order, fails only where a run ends, so the
 * branch predicts well. */
static int64_t cut_runs(const int32_t *pair_a, const int32_t *pair_b, int64_t n_pairs,
                        votes_run *runs)
{
    int64_t nr = 0;
    votes_run *r = runs;
    for (int64_t p = 0; p < n_pairs; p++) {
        const int32_t a = pair_a[p], b = pair_b[p];
        if (nr > 0 && !r->self && a == r->a && b != a && (int64_t)b == (int64_t)r->b0 + r->len) {
            r->len++;
            continue;
        }
        r = runs + nr++;
        r->p0 = p;
        r->len = 1;
        r->a = a;
        r->b0 = b;
        r->self = a == b;
        r->pad = 0;
    }
    return nr;
}

static int ovo_votes(const float *dec, const float *bias, int64_t n, int64_t n_pairs, int32_t bags,
                     const int32_t *pair_a, const int32_t *pair_b, int32_t n_classes, int32_t *votes, double *conf,
                     int32_t kernel, int32_t fresh)
{
    if (n < 0 || n_pairs < 0 || bags < 1 || n_classes < 1)
        return HSVM_VOTES_EINVAL;
    for (int64_t p = 0; p < n_pairs; p++) {
        if (pair_a[p] < 0 || pair_a[p] >= n_classes || pair_b[p] < 0 || pair_b[p] >= n_classes)
            return HSVM_VOTES_EINVAL;
    }
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    if (n == 0)
        return HSVM_VOTES_OK;
    votes_run *runs = malloc((size_t)(n_pairs > 0 ? n_pairs : 1) * sizeof(votes_run));
    if (!runs)
        return HSVM_VOTES_ENOMEM;
    const int64_t n_runs = cut_runs(pair_a, pair_b, n_pairs, runs);
    void (*fn)(const votes_run *, int64_t, const float *, const float *, int64_t, int64_t, int32_t,
               int32_t, int32_t *, double *, int32_t) = hsvm_votes_runs_portable;
#ifdef HSVM_X86
    if (k == HSVM_KERNEL_AVX512)
        fn = hsvm_votes_runs_avx512;
    else if (k == HSVM_KERNEL_AVX2)
        fn = hsvm_votes_runs_avx2;
#endif
    fn(runs, n_runs, dec, bias, n, n_pairs * (int64_t)bags, bags, n_classes, votes, conf, fresh);
    free(runs);
    return HSVM_VOTES_OK;
}

int hsvm_ovo_votes(const float *dec, const float *bias, int64_t n, int64_t n_pairs, int32_t bags,
                   const int32_t *pair_a, const int32_t *pair_b,
                   int32_t n_classes, int32_t *votes, double *conf, int32_t kernel)
{
    return ovo_votes(dec, bias, n, n_pairs, bags, pair_a, pair_b, n_classes, votes, conf, kernel, 1);
}

int hsvm_ovo_votes_add(const float *dec, const float *bias, int64_t n, int64_t n_pairs, int32_t bags,
                       const int32_t *pair_a, const int32_t *pair_b,
                       int32_t n_classes, int32_t *votes, double *conf, int32_t kernel)
{
    return ovo_votes(dec, bias, n, n_pairs, bags, pair_a, pair_b, n_classes, votes, conf, kernel, 0);
}

int hsvm_cell_votes(const float *dec, const int64_t *A, const int64_t *B, const uint8_t *pmask,
                    const int8_t *sign, int64_t n, int64_t q, int32_t bags, int32_t n_classes,
                    int32_t *votes, double *conf)
{
    memset(votes, 0, sizeof(int32_t) * (size_t)(n * n_classes));
    memset(conf, 0, sizeof(double) * (size_t)(n * n_classes));
    for (int64_t i = 0; i < n; i++) {
        int32_t *v = votes + i * (int64_t)n_classes;
        double *cf = conf + i * (int64_t)n_classes;
        for (int64_t j = i * q; j < (i + 1) * q; j++) {
            if (!pmask[j])
                continue;
            const int flipped = sign != NULL && sign[j] < 0;
            /* the model's own (first, second) classes of the pair */
            const int64_t a = flipped ? B[j] : A[j], b = flipped ? A[j] : B[j];
            if (a < 0 || a >= n_classes || b < 0 || b >= n_classes)
                return -1;
            double mean;
            v[pair_rule_a_wins(dec + j * bags, bags, &mean) ? a : b] += 1;
            cf[a] += mean;
            cf[b] -= mean;
        }
    }
    return 0;
}

/* One bag, class x against the kept classes after it (s[u+1..nv)): the
 * pair's winner is the sign of its value, and x's sum is carried in a
 * register -- the same additions in the same order as the general loop of
 * hsvm_kept_votes, so the same bits.  ids and sg: x's row of the pair tables,
 * or NULL for a model in canonical order (pair (x, y) is classifier base + y,
 * stored as (x, y)); always inlined, so that each call is compiled for its
 * kind (one loop with both read 20% slower over every pair at K = 1,000).
 * Returns 0, -1 or -2 as hsvm_kept_votes does. */
static inline __attribute__((always_inline)) int
one_bag_row(const float *row, const float *bias, int64_t width, const int64_t *s, int64_t u, int64_t nv, int64_t x,
            const int64_t *ids, const int8_t *sg, int64_t base, int32_t n_classes, int32_t *v, double *cf)
{
    double cx = cf[x];
    int32_t vx = 0;
    for (int64_t w = u + 1; w < nv; w++) {
        const int64_t y = s[w];
        if (y <= x || y >= n_classes)
            return -1;
        const int64_t id = ids ? ids[y] : base + y;
        if (id < 0 || id + 1 > width)
            return -2;
        const float val = bias ? row[id] + bias[id] : row[id];
        const double d = 0.0 + (double)val;   /* as the bag sum: -0 becomes +0 */
        /* x wins when the value points to x in the stored orientation */
        const int x_first = sg ? sg[y] >= 0 : 1;
        const int x_wins = x_first ? (val > 0.0f) : !(val > 0.0f);
        vx += x_wins;
        v[y] += !x_wins;
        if (x_first) {
            cx += d;
            cf[y] -= d;
        } else {
            cf[y] += d;
            cx -= d;
        }
    }
    v[x] += vx;
    cf[x] = cx;
    return 0;
}

int hsvm_kept_votes(const float *dec, const float *bias, int64_t n, int64_t width, const int64_t *S, int64_t k,
                    const int64_t *nvalid, const int64_t *pair_id, const int8_t *pair_sign, int32_t bags,
                    int32_t n_classes, int32_t *votes, double *conf)
{
    memset(votes, 0, sizeof(int32_t) * (size_t)(n * n_classes));
    memset(conf, 0, sizeof(double) * (size_t)(n * n_classes));
    for (int64_t i = 0; i < n; i++) {
        const int64_t *s = S + i * k;
        const int64_t nv = nvalid ? nvalid[i] : k;
        const float *row = dec + i * width;
        int32_t *v = votes + i * (int64_t)n_classes;
        double *cf = conf + i * (int64_t)n_classes;
        for (int64_t u = 0; u < nv; u++) {
            const int64_t x = s[u];
            if (x < 0 || x >= n_classes)
                return -1;
            /* canonical order: pair (x, y) is classifier base + y */
            const int64_t base = x * (2 * (int64_t)n_classes - x - 1) / 2 - x - 1;
            if (bags == 1) {
                /* a canonical model's copy has its ids and orientation as constants */
                const int rc = pair_id ? one_bag_row(row, bias, width, s, u, nv, x, pair_id + x * n_classes,
                                                     pair_sign + x * n_classes, 0, n_classes, v, cf)
                                       : one_bag_row(row, bias, width, s, u, nv, x, NULL, NULL, base, n_classes, v,
                                                     cf);
                if (rc)
                    return rc;
                continue;
            }
            for (int64_t w = u + 1; w < nv; w++) {
                const int64_t y = s[w];
                if (y <= x || y >= n_classes)
                    return -1;
                const int64_t id = pair_id ? pair_id[x * n_classes + y] : base + y;
                if (id < 0 || (id + 1) * bags > width)
                    return -2;
                const int flipped = pair_id ? pair_sign[x * n_classes + y] < 0 : 0;
                const int64_t a = flipped ? y : x, b = flipped ? x : y;
                double mean;
                /* with a bias: (product + bias) rounded to float, the bits `dec += bias` stores */
                v[pair_rule_a_wins_biased(row + id * bags, bias ? bias + id * bags : NULL, bags, &mean) ? a : b] += 1;
                cf[a] += mean;
                cf[b] -= mean;
            }
        }
    }
    return 0;
}
