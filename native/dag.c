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
 * places ahead are prefetched while the current group is computed.  Over
 * all classes in class order a group's next pairs are known in advance, so
 * two steps share one read of each sample (advance_deep).  A sample's result
 * never depends on the grouping: the same dot products decide its pairs
 * whatever block or thread it runs in. */
#include <stdlib.h>
#include <string.h>
#include "dot32.h"
#include "pair_rule.h"
#include "radix_sort.h"
#include "hsvm_dag.h"

/* Groups whose rows are requested ahead of the one being computed.  A 4 KB
 * row takes longer to arrive from memory than a group of one or two samples
 * takes to compute; asking for all its lines at once, rather than letting
 * demand misses and the hardware streamer ramp up, cut a lone sample's
 * dependent chain of rows from ~1.2 to ~0.8 us per row here.  In a full
 * block the hardware streams the rows about as well on its own (neutral
 * within noise on the K = 1,000 benchmark). */
#define PREFETCH_GROUPS 2

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
    dot32x2_fn dot2;
    dot32x3_fn dot3;
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

static inline void prefetch_rows(const dag_t *g, int64_t pid)
{
    /* The pair's classes and biases are single random words of arrays as
     * long as W has rows: misses of their own. */
    __builtin_prefetch(g->pair_a + pid, 0, 3);
    __builtin_prefetch(g->pair_b + pid, 0, 3);
    __builtin_prefetch(g->bias + pid * g->bags, 0, 3);
    if (g->indptr)
        return;     /* sparse samples touch a few words of each row */
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

/* Per-call buffers, sized for the block. */
typedef struct {
    int32_t *first, *last, *act, *idx0, *idx1;
    uint64_t *key0, *key1;
    int64_t *run_start, *run_pid, *run_rows, *count;
    float *decs;
    int key_bits;
    int64_t evaluations, fetches;
} work_t;

/* The decision values of one step: decs[t * bags + bag] for the t-th sample
 * of the grouped order idx, run by run, each run's rows requested a few runs
 * ahead. */
static void step_decisions(const dag_t *g, work_t *w, const int32_t *idx, int64_t n_runs)
{
    const int32_t bags = g->bags;
    for (int64_t r = 0; r < n_runs && r < PREFETCH_GROUPS; r++)
        prefetch_rows(g, w->run_pid[r]);
    for (int64_t r = 0; r < n_runs; r++) {
        if (r + PREFETCH_GROUPS < n_runs)
            prefetch_rows(g, w->run_pid[r + PREFETCH_GROUPS]);
        const int64_t pid = w->run_pid[r];
        int64_t t = w->run_start[r];
        const int64_t end = w->run_start[r + 1];
        if (!g->indptr) {
            /* Two samples of the group at a time: the row's loads shared, twice
             * the independent sums in flight; the same bits as one at a time. */
            for (; t + 1 < end; t += 2) {
                const float *x0 = g->X + idx[t] * g->d, *x1 = g->X + idx[t + 1] * g->d;
                for (int32_t bag = 0; bag < bags; bag++) {
                    const int64_t row = pid * bags + bag;
                    float r0, r1;
                    g->dot2(x0, x1, g->W + row * g->d, g->d, &r0, &r1);
                    w->decs[t * bags + bag] = r0 + g->bias[row];
                    w->decs[(t + 1) * bags + bag] = r1 + g->bias[row];
                }
            }
        }
        for (; t < end; t++) {
            for (int32_t bag = 0; bag < bags; bag++)
                w->decs[t * bags + bag] = decision(g, idx[t], pid * bags + bag);
        }
    }
}

/* The m active samples act[] sorted by their current pair (key: the pair's
 * classes with candidate lists; the first class without, which fixes the
 * last in lockstep); *key and *idx point into w's buffers. */
static void group_samples(const dag_t *g, work_t *w, const int32_t *act, int64_t m, uint64_t **key, int32_t **idx)
{
    for (int64_t t = 0; t < m; t++) {
        const int64_t i = act[t];
        if (g->cand) {
            const int64_t u = g->cand[i * g->k + w->first[i]], v = g->cand[i * g->k + w->last[i]];
            w->key0[t] = u < v ? (uint64_t)(u * g->K + v) : (uint64_t)(v * g->K + u);
        } else {
            w->key0[t] = (uint64_t)w->first[i];
        }
        w->idx0[t] = (int32_t)i;
    }
    uint64_t *ktmp = w->key1;
    int32_t *itmp = w->idx1;
    *key = w->key0;
    *idx = w->idx0;
    radix_sort(key, idx, &ktmp, &itmp, m, w->key_bits, w->count);
}

/* Samples down to one class leave; the rest keep their order.  Returns how
 * many stay. */
static int64_t still_active(const work_t *w, int32_t *act, int64_t m)
{
    int64_t kept = 0;
    for (int64_t t = 0; t < m; t++) {
        if (w->first[act[t]] < w->last[act[t]])
            act[kept++] = act[t];
    }
    return kept;
}

/* One DAG step for the m active samples act[0..m): group them by their
 * current pair, decide each group's pair, drop the losers.  Returns the
 * number of samples still active (compacted to the front of act, order
 * kept), or -3 when the model lacks a pair. */
static int64_t advance(const dag_t *g, work_t *w, int32_t *act, int64_t m, int64_t s,
                       float *margins, int64_t steps)
{
    const int32_t *cand = g->cand;
    uint64_t *key;
    int32_t *idx;
    group_samples(g, w, act, m, &key, &idx);

    int64_t n_runs = 0;
    for (int64_t t = 0; t < m; t++) {
        if (t > 0 && key[t] == key[t - 1])
            continue;
        const int64_t i = idx[t];
        const int64_t u = list_class(g, i, w->first[i]), v = list_class(g, i, w->last[i]);
        const int64_t pid = u < v ? pair_id(g, u, v) : pair_id(g, v, u);
        if (pid < 0 || pid >= g->n_pairs)
            return -3;
        w->run_start[n_runs] = t;
        w->run_pid[n_runs++] = pid;
    }
    w->run_start[n_runs] = m;
    w->fetches += n_runs;
    w->evaluations += m;

    step_decisions(g, w, idx, n_runs);
    const int32_t bags = g->bags;
    for (int64_t r = 0; r < n_runs; r++) {
        const int64_t pid = w->run_pid[r];
        const int32_t ca = g->pair_a[pid], cb = g->pair_b[pid];
        for (int64_t t = w->run_start[r]; t < w->run_start[r + 1]; t++) {
            const int64_t i = idx[t];
            double mean;
            const int a_wins = pair_rule_a_wins(w->decs + t * bags, bags, &mean);
            const int32_t winner = a_wins ? ca : cb;
            if (margins)
                margins[i * steps + s] = (float)(a_wins ? mean : -mean);
            if (winner == list_class(g, i, w->first[i])) {
                int32_t l = w->last[i] - 1;
                while (cand && cand[i * g->k + l] < 0)
                    l--;
                w->last[i] = l;
            } else {
                int32_t f = w->first[i] + 1;
                while (cand && cand[i * g->k + f] < 0)
                    f++;
                w->first[i] = f;
            }
        }
    }
    return still_active(w, act, m);
}

/* Several DAG steps at once (DAG_DEPTH: two measured as fast as three on
 * omniglot-242, four slower -- the rows computed grow as depth^2 / 2) for
 * the m active samples of a list of all
 * classes in class order (no candidates, one bag, dense samples), with at
 * least depth + 1 classes left.  In lockstep every sample of a group (same
 * first class f, hence the same last class l) meets, at step j of the
 * `depth`, one of the j + 1 pairs (f + a, l - j + a), a = how often the first
 * class lost so far: depth (depth + 1) / 2 rows, the group's, all computed
 * while the sample's row is in L1 (dot3 over three rows at a time).  A
 * block's samples come from L3 and the group's rows from L1, so one pass
 * over the samples serves `depth` steps.  Every decision is the dot product
 * advance() would compute, bit for bit; the ones not on the path are
 * discarded. */
#define DAG_DEPTH 2
#define DAG_ROWS (DAG_DEPTH * (DAG_DEPTH + 1) / 2)

static int64_t advance_deep(const dag_t *g, work_t *w, int32_t *act, int64_t m, int64_t s, float *margins,
                            int64_t steps, int depth)
{
    const int nrows = depth * (depth + 1) / 2;
    uint64_t *key;
    int32_t *idx;
    group_samples(g, w, act, m, &key, &idx);
    int64_t n_runs = 0;
    for (int64_t t = 0; t < m; t++) {
        if (t > 0 && key[t] == key[t - 1])
            continue;
        const int64_t i = idx[t], f = w->first[i], l = w->last[i];
        int64_t *pids = w->run_rows + n_runs * DAG_ROWS;
        for (int j = 0, r = 0; j < depth; j++) {
            for (int a = 0; a <= j; a++, r++) {
                pids[r] = pair_id(g, f + a, l - j + a);
                if (pids[r] < 0 || pids[r] >= g->n_pairs)
                    return -3;
            }
        }
        w->run_start[n_runs++] = t;
    }
    w->run_start[n_runs] = m;
    w->fetches += (int64_t)nrows * n_runs;
    w->evaluations += (int64_t)depth * m;
    for (int64_t r = 0; r < n_runs; r++) {
        const int64_t *pids = w->run_rows + r * DAG_ROWS;
        const int64_t *ahead = w->run_rows + (r + PREFETCH_GROUPS) * DAG_ROWS;
        for (int q = 0; r + PREFETCH_GROUPS < n_runs && q < nrows; q++)
            prefetch_rows(g, ahead[q]);
        if (r == 0) {
            for (int64_t u = 0; u < n_runs && u < PREFETCH_GROUPS; u++)
                for (int q = 0; q < nrows; q++)
                    prefetch_rows(g, w->run_rows[u * DAG_ROWS + q]);
        }
        const float *rows[DAG_ROWS + 2];
        for (int q = 0; q < nrows; q++)
            rows[q] = g->W + pids[q] * g->d;
        for (int q = nrows; q < DAG_ROWS + 2; q++)
            rows[q] = rows[0];                      /* padding of the last triple, discarded */
        for (int64_t t = w->run_start[r]; t < w->run_start[r + 1]; t++) {
            const int64_t i = idx[t];
            const float *x = g->X + i * g->d;
            float dv[DAG_ROWS + 2];
            for (int q = 0; q < nrows; q += 3)
                g->dot3(x, rows[q], rows[q + 1], rows[q + 2], g->d, dv + q);
            int a = 0;
            for (int j = 0; j < depth; j++) {
                const int q = j * (j + 1) / 2 + a;
                const int64_t pid = pids[q];
                const float v = dv[q] + g->bias[pid];
                double mean;
                const int a_wins = pair_rule_a_wins(&v, 1, &mean);
                const int32_t winner = a_wins ? g->pair_a[pid] : g->pair_b[pid];
                if (margins)
                    margins[i * steps + s + j] = (float)(a_wins ? mean : -mean);
                if (winner == w->first[i]) {
                    w->last[i]--;
                } else {
                    w->first[i]++;
                    a++;
                }
            }
        }
    }
    return still_active(w, act, m);
}

int hsvm_dag_predict(const float *X, const int64_t *indptr, const int32_t *indices,
                     int64_t n, int64_t d,
                     const float *W, const float *bias, int32_t bags, int64_t n_pairs,
                     const int32_t *pair_a, const int32_t *pair_b, int32_t n_classes,
                     const int64_t *keys, const int32_t *key_pair,
                     const int32_t *cand, int64_t k,
                     int32_t *out, float *margins, int64_t *counters, int32_t kernel)
{
    dot32_fn dot;
    dot32x2_fn dot2;
    dot32x3_fn dot3;
    const int32_t kc = dot32_choose(kernel, &dot, &dot2, &dot3, NULL);
    if (kc < 0)
        return kc;
    dag_t g = {X, indptr, indices, d, W, bias, bags, n_pairs, pair_a, pair_b, n_classes,
               keys, key_pair, cand, cand ? k : n_classes, dot, dot2, dot3};
    if (n <= 0)
        return 0;
    if (bags < 1 || n_classes < 1 || g.k < 1)
        return -1;
    const int64_t steps = g.k - 1;

    work_t w = {0};
    /* Group key: with all classes in class order the pair at step s is fixed
     * by `first` alone (last = K - 1 - (s - first)): K keys.  With candidate
     * lists, the pair of classes itself: K^2 keys. */
    const uint64_t key_range = cand ? (uint64_t)g.K * (uint64_t)g.K : (uint64_t)g.K;
    w.key_bits = 1;
    while (w.key_bits < 64 && ((uint64_t)1 << w.key_bits) < key_range)
        w.key_bits++;

    int rc = 0;
    w.first = malloc(sizeof(int32_t) * (size_t)n);
    w.last = malloc(sizeof(int32_t) * (size_t)n);
    w.act = malloc(sizeof(int32_t) * (size_t)n);
    w.idx0 = malloc(sizeof(int32_t) * (size_t)n);
    w.idx1 = malloc(sizeof(int32_t) * (size_t)n);
    w.key0 = malloc(sizeof(uint64_t) * (size_t)n);
    w.key1 = malloc(sizeof(uint64_t) * (size_t)n);
    w.run_start = malloc(sizeof(int64_t) * (size_t)(n + 1));
    w.run_pid = malloc(sizeof(int64_t) * (size_t)n);
    /* the deep steps' rows, DAG_ROWS a group, and PREFETCH_GROUPS groups of
     * slack read (never used) by the look-ahead */
    w.run_rows = malloc(sizeof(int64_t) * (size_t)(n + PREFETCH_GROUPS) * DAG_ROWS);
    w.count = malloc(sizeof(int64_t) * RADIX_SORT_BUCKETS);
    w.decs = malloc(sizeof(float) * (size_t)n * (size_t)bags);
    if (!w.first || !w.last || !w.act || !w.idx0 || !w.idx1 || !w.key0 || !w.key1
        || !w.run_start || !w.run_pid || !w.run_rows || !w.count || !w.decs) {
        rc = -2;
        goto done;
    }

    int64_t m = 0;
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
        w.first[i] = (int32_t)f;
        w.last[i] = (int32_t)l;
        if (f < l)
            w.act[m++] = (int32_t)i;
    }

    for (int64_t s = 0; m > 0;) {
        /* Without candidates every active sample has K - s classes left. */
        const int64_t left = g.K - 1 - s;
        const int depth = (!cand && bags == 1 && !indptr) ? (int)(left < DAG_DEPTH ? left : DAG_DEPTH) : 1;
        m = depth > 1 ? advance_deep(&g, &w, w.act, m, s, margins, steps, depth)
                      : advance(&g, &w, w.act, m, s, margins, steps);
        if (m < 0) {
            rc = (int)m;
            goto done;
        }
        s += depth;
    }
    for (int64_t i = 0; i < n; i++)
        out[i] = list_class(&g, i, w.first[i]);
    if (counters) {
        counters[0] += w.evaluations;
        counters[1] += w.fetches;
    }

done:
    free(w.first);
    free(w.last);
    free(w.act);
    free(w.idx0);
    free(w.idx1);
    free(w.key0);
    free(w.key1);
    free(w.run_start);
    free(w.run_pid);
    free(w.run_rows);
    free(w.count);
    free(w.decs);
    return rc;
}
