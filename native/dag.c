/* Decision DAG (DDAG) prediction for one-vs-one models (Platt, Cristianini &
 * Shawe-Taylor, "Large Margin DAGs for Multiclass Classification", NIPS 2000).
 *
 * Each sample keeps a list of candidate classes; at every step the pair
 * (first, last) is decided by its classifier(s) and the loser leaves the list,
 * so a list of k classes costs k - 1 pair decisions instead of max-wins'
 * k(k-1)/2.  The cost is one classifier row per sample and step, read from a
 * W that is usually far larger than the caches (K = 1,000, d = 1,024: 2 GB).
 * So a block of samples advances in lockstep: at each step the samples are
 * grouped by their current pair (an LSD radix sort by the pair's key),
 * each group's rows are read once for all its members -- the first steps are
 * shared by most samples of the block -- and the rows of the groups a few
 * places ahead are prefetched while the current group is computed.  A
 * sample's result never depends on the grouping: the same dot products decide
 * its pairs whatever block or thread it runs in. */
#include <stdlib.h>
#include <string.h>
#include "dot32.h"
#include "pair_rule.h"
#include "hsvm_dag.h"

/* Groups whose rows are prefetched ahead of the one being computed: a 4 KB
 * row takes longer to arrive from memory than one group of a few samples
 * takes to compute, so the next rows must already be on their way. */
#define PREFETCH_GROUPS 3
#define RADIX_BITS 11
#define RADIX (1 << RADIX_BITS)

typedef struct {
    const float *X;
    const int64_t *indptr;
    const int32_t *indices;
    int64_t d;
    const float *W;
    const float *bias;
    int32_t bags;
    int64_t n_pairs;
    const int32_t *pair_a;
    const int32_t *pair_b;
    int64_t K;
    const int64_t *keys;
    const int32_t *key_pair;
    const int32_t *cand;
    int64_t k;
    dot32_fn dot;
} dag_t;

static inline int32_t list_class(const dag_t *g, int64_t i, int64_t pos)
{
    return g->cand ? g->cand[i * g->k + pos] : (int32_t)pos;
}

/* Pair id of the classes lo < hi, or -1 when the model has none. */
static int64_t pair_id(const dag_t *g, int64_t lo, int64_t hi)
{
    if (!g->keys)
        return lo * g->K - lo * (lo + 1) / 2 + (hi - lo - 1);
    const int64_t q = lo * g->K + hi;
    int64_t a = 0, b = g->n_pairs;
    while (a < b) {
        const int64_t m = a + (b - a) / 2;
        if (g->keys[m] < q)
            a = m + 1;
        else
            b = m;
    }
    return (a < g->n_pairs && g->keys[a] == q) ? g->key_pair[a] : -1;
}

/* Stable LSD radix sort of (key, idx) by key < 2^key_bits; the result ends in
 * *key / *idx (the buffers may be swapped).  Digits on which all keys agree
 * are skipped, which makes the shared first steps free. */
static void radix_sort(uint64_t **key, int32_t **idx, uint64_t **key_tmp, int32_t **idx_tmp,
                       int64_t m, int key_bits, int64_t *count)
{
    for (int shift = 0; shift < key_bits; shift += RADIX_BITS) {
        uint64_t *ks = *key, *kd = *key_tmp;
        int32_t *is = *idx, *id = *idx_tmp;
        memset(count, 0, sizeof(int64_t) * RADIX);
        for (int64_t t = 0; t < m; t++)
            count[(ks[t] >> shift) & (RADIX - 1)]++;
        if (count[(ks[0] >> shift) & (RADIX - 1)] == m)
            continue;
        int64_t sum = 0;
        for (int r = 0; r < RADIX; r++) {
            const int64_t c = count[r];
            count[r] = sum;
            sum += c;
        }
        for (int64_t t = 0; t < m; t++) {
            const int64_t pos = count[(ks[t] >> shift) & (RADIX - 1)]++;
            kd[pos] = ks[t];
            id[pos] = is[t];
        }
        *key = kd;
        *key_tmp = ks;
        *idx = id;
        *idx_tmp = is;
    }
}

static inline void prefetch_rows(const dag_t *g, int64_t pid)
{
    const char *p = (const char *)(g->W + pid * g->bags * g->d);
    const size_t bytes = sizeof(float) * (size_t)(g->bags * g->d);
    for (size_t o = 0; o < bytes; o += 64)
        __builtin_prefetch(p + o, 0, 3);
}

static inline float decision(const dag_t *g, int64_t i, int64_t row)
{
    const float *w = g->W + row * g->d;
    if (!g->indptr)
        return g->dot(g->X + i * g->d, w, g->d) + g->bias[row];
    float s = 0.0f;
    for (int64_t t = g->indptr[i]; t < g->indptr[i + 1]; t++)
        s += g->X[t] * w[g->indices[t]];
    return s + g->bias[row];
}

int hsvm_dag_predict(const float *X, const int64_t *indptr, const int32_t *indices,
                     int64_t n, int64_t d,
                     const float *W, const float *bias, int32_t bags, int64_t n_pairs,
                     const int32_t *pair_a, const int32_t *pair_b, int32_t n_classes,
                     const int64_t *keys, const int32_t *key_pair,
                     const int32_t *cand, int64_t k,
                     int32_t *out, float *margins, int64_t *counters, int kernel)
{
    dag_t g = {X, indptr, indices, d, W, bias, bags, n_pairs, pair_a, pair_b, n_classes,
               keys, key_pair, cand, cand ? k : n_classes, dot32_choose(kernel)};
    if (!g.dot)
        return -4;
    if (n <= 0)
        return 0;
    if (bags < 1 || n_classes < 1 || g.k < 1)
        return -1;
    const int64_t steps = g.k - 1;
    /* Group key: with all classes in class order the pair at step s is fixed
     * by `first` alone (last = K - 1 - (s - first)): K keys.  With candidate
     * lists, the pair of classes itself: K^2 keys. */
    const uint64_t key_range = cand ? (uint64_t)g.K * (uint64_t)g.K : (uint64_t)g.K;
    int key_bits = 1;
    while (key_bits < 64 && ((uint64_t)1 << key_bits) < key_range)
        key_bits++;

    int rc = 0;
    int32_t *first = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *last = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *act = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *idx0 = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *idx1 = malloc(sizeof(int32_t) * (size_t)n);
    uint64_t *key0 = malloc(sizeof(uint64_t) * (size_t)n);
    uint64_t *key1 = malloc(sizeof(uint64_t) * (size_t)n);
    int64_t *run_start = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *run_pid = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *count = malloc(sizeof(int64_t) * RADIX);
    float *dec = malloc(sizeof(float) * (size_t)bags);
    if (!first || !last || !act || !idx0 || !idx1 || !key0 || !key1 || !run_start || !run_pid
        || !count || !dec) {
        rc = -2;
        goto done;
    }

    int64_t n_act = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t f = 0, l = g.k - 1;
        if (cand) {
            const int32_t *row = cand + i * g.k;
            for (int64_t t = 0; t < g.k; t++) {
                if (row[t] >= n_classes) {
                    rc = -1;
                    goto done;
                }
            }
            while (f < g.k && row[f] < 0)
                f++;
            if (f == g.k) {
                rc = -1;
                goto done;
            }
            while (row[l] < 0)
                l--;
        }
        first[i] = (int32_t)f;
        last[i] = (int32_t)l;
        if (f < l)
            act[n_act++] = (int32_t)i;
    }

    int64_t evaluations = 0, fetches = 0;
    for (int64_t s = 0; n_act > 0; s++) {
        /* Key every active sample by its current pair of classes. */
        for (int64_t t = 0; t < n_act; t++) {
            const int64_t i = act[t];
            if (cand) {
                const int64_t u = cand[i * g.k + first[i]], v = cand[i * g.k + last[i]];
                key0[t] = u < v ? (uint64_t)(u * g.K + v) : (uint64_t)(v * g.K + u);
            } else {
                key0[t] = (uint64_t)first[i];
            }
            idx0[t] = (int32_t)i;
        }
        uint64_t *key = key0, *ktmp = key1;
        int32_t *idx = idx0, *itmp = idx1;
        radix_sort(&key, &idx, &ktmp, &itmp, n_act, key_bits, count);

        int64_t n_runs = 0;
        for (int64_t t = 0; t < n_act; t++) {
            if (t > 0 && key[t] == key[t - 1])
                continue;
            const int64_t i = idx[t];
            const int64_t u = list_class(&g, i, first[i]), v = list_class(&g, i, last[i]);
            const int64_t pid = u < v ? pair_id(&g, u, v) : pair_id(&g, v, u);
            if (pid < 0 || pid >= n_pairs) {
                rc = -3;
                goto done;
            }
            run_start[n_runs] = t;
            run_pid[n_runs++] = pid;
        }
        run_start[n_runs] = n_act;
        fetches += n_runs;
        evaluations += n_act;

        if (!indptr) {
            for (int64_t r = 0; r < n_runs && r < PREFETCH_GROUPS; r++)
                prefetch_rows(&g, run_pid[r]);
        }
        for (int64_t r = 0; r < n_runs; r++) {
            if (!indptr && r + PREFETCH_GROUPS < n_runs)
                prefetch_rows(&g, run_pid[r + PREFETCH_GROUPS]);
            const int64_t pid = run_pid[r];
            const int32_t ca = pair_a[pid], cb = pair_b[pid];
            for (int64_t t = run_start[r]; t < run_start[r + 1]; t++) {
                const int64_t i = idx[t];
                for (int32_t bag = 0; bag < bags; bag++)
                    dec[bag] = decision(&g, i, pid * bags + bag);
                double mean;
                const int a_wins = pair_rule_a_wins(dec, bags, &mean);
                const int32_t winner = a_wins ? ca : cb;
                if (margins)
                    margins[i * steps + s] = (float)(a_wins ? mean : -mean);
                if (winner == list_class(&g, i, first[i])) {
                    int32_t l = last[i] - 1;
                    while (cand && cand[i * g.k + l] < 0)
                        l--;
                    last[i] = l;
                } else {
                    int32_t f = first[i] + 1;
                    while (cand && cand[i * g.k + f] < 0)
                        f++;
                    first[i] = f;
                }
            }
        }
        /* Samples down to one class leave; the rest keep their order. */
        int64_t m = 0;
        for (int64_t t = 0; t < n_act; t++) {
            if (first[act[t]] < last[act[t]])
                act[m++] = act[t];
        }
        n_act = m;
    }
    for (int64_t i = 0; i < n; i++)
        out[i] = list_class(&g, i, first[i]);
    if (counters) {
        counters[0] += evaluations;
        counters[1] += fetches;
    }

done:
    free(first);
    free(last);
    free(act);
    free(idx0);
    free(idx1);
    free(key0);
    free(key1);
    free(run_start);
    free(run_pid);
    free(count);
    free(dec);
    return rc;
}
