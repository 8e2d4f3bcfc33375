#include <stdlib.h>
#include <string.h>
#include "hsvm_rank.h"

/* True when class c (votes v, margin m) ranks before class d. */
static inline int better(int32_t v, double m, int32_t c, int32_t vd, double md, int32_t d)
{
    if (v != vd)
        return v > vd;
    if (m != md)
        return m > md;
    return c < d;
}

static void insert_sorted(int32_t *top, int32_t filled, int32_t c, const int32_t *v, const double *m)
{
    int32_t pos = filled;
    while (pos > 0) {
        int32_t prev = top[pos - 1];
        if (!better(v[c], m[c], c, v[prev], m[prev], prev))
            break;
        top[pos] = prev;
        pos--;
    }
    top[pos] = c;
}

/* The `need` best of classes cand[0..ncand) into tail, in rank order. */
static void take_best(int32_t *tail, int32_t need, const int32_t *cand, int32_t ncand, const int32_t *v,
                      const double *m)
{
    int32_t taken = 0;
    for (int32_t j = 0; j < ncand; j++) {
        const int32_t c = cand[j];
        if (taken == need) {
            const int32_t last = tail[need - 1];
            if (!better(v[c], m[c], c, v[last], m[last], last))
                continue;
            taken--;
        }
        insert_sorted(tail, taken++, c, v, m);
    }
}

int hsvm_topk(const int32_t *votes, const double *margin, int64_t n, int32_t n_classes,
              int32_t k, int32_t *out)
{
    if (k < 1 || k > n_classes)
        return -1;
    int32_t *hist = NULL, hist_len = 0;
    int32_t *cand = malloc(sizeof(int32_t) * (size_t)n_classes);
    if (!cand)
        return -2;
    for (int64_t i = 0; i < n; i++) {
        const int32_t *v = votes + i * (int64_t)n_classes;
        const double *m = margin + i * (int64_t)n_classes;
        int32_t *top = out + i * (int64_t)k;
        /* Vote counts are small integers: a histogram finds the k-th largest
         * count in O(K); classes above it are in, classes at it compete on
         * margin and index.  Only the k winners are then sorted. */
        int32_t vmin = v[0], vmax = v[0];
        for (int32_t c = 1; c < n_classes; c++) {
            if (v[c] > vmax) vmax = v[c];
            if (v[c] < vmin) vmin = v[c];
        }
        int32_t span = vmax - vmin + 1;
        if (span > hist_len) {
            free(hist);
            hist = malloc(sizeof(int32_t) * (size_t)span);
            if (!hist) {
                free(cand);
                return -2;
            }
            hist_len = span;
        }
        memset(hist, 0, sizeof(int32_t) * (size_t)span);
        for (int32_t c = 0; c < n_classes; c++)
            hist[v[c] - vmin]++;
        int32_t above = 0, cut = vmax;
        while (above + hist[cut - vmin] < k) {
            above += hist[cut - vmin];
            cut--;
        }
        int32_t filled = 0, ncand = 0;
        for (int32_t c = 0; c < n_classes; c++) {
            if (v[c] > cut)
                insert_sorted(top, filled++, c, v, m);
            else if (v[c] == cut)
                cand[ncand++] = c;
        }
        /* The best (k - above) of the tied candidates, in rank order, after the
         * classes with more votes (which all rank before them). */
        take_best(top + above, k - above, cand, ncand, v, m);
    }
    free(hist);
    free(cand);
    return 0;
}

int hsvm_topk_scores(const float *scores, const double *beta, int64_t n, int32_t n_classes, int32_t k,
                     int32_t *out)
{
    if (k < 1 || k > n_classes)
        return -1;
    /* a row's sums, zero votes and every class a candidate, so that the
     * comparisons are hsvm_topk's */
    double *m = malloc(sizeof(double) * (size_t)n_classes);
    int32_t *v = calloc((size_t)n_classes, sizeof(int32_t));
    int32_t *all = malloc(sizeof(int32_t) * (size_t)n_classes);
    if (!m || !v || !all) {
        free(m);
        free(v);
        free(all);
        return -2;
    }
    for (int32_t c = 0; c < n_classes; c++)
        all[c] = c;
    for (int64_t i = 0; i < n; i++) {
        const float *s = scores + i * (int64_t)n_classes;
        for (int32_t c = 0; c < n_classes; c++)
            m[c] = (double)s[c] + beta[c];
        take_best(out + i * (int64_t)k, k, all, n_classes, v, m);
    }
    free(m);
    free(v);
    free(all);
    return 0;
}
