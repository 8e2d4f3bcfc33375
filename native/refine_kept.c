/* The refine step for dense samples: exact votes among each sample's kept
 * classes, with no per-cell index lists.
 *
 * Samples go in tiles of up to 128.  A class's bit mask says which of the
 * tile's samples kept it, so the samples that need the pair (a, b) are
 * mask[a] & mask[b]: the pairs are visited in class order (the file order of
 * a model in canonical order), each needed classifier row is read once for
 * all of the tile's samples that need it, four samples at a time, and no
 * sort of cells is needed.  Visiting the classes in increasing order also
 * visits each sample's pairs in its own canonical order, so each sample's
 * next cell is a running counter.  The votes are then counted per sample in
 * canonical pair order, with the rule and the sums of hsvm_cell_votes. */
#include <stdlib.h>
#include <string.h>
#include "dot32.h"
#include "hsvm_refine.h"
#include "pair_rule.h"

#define TILE 128
typedef unsigned __int128 tile_mask;

static inline int mask_ctz(tile_mask m)
{
    const uint64_t lo = (uint64_t)m;
    return lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll((uint64_t)(m >> 64));
}

static inline int64_t pair_offset(int64_t u, int64_t k)
{
    /* index of (u, u + 1) among the canonical pairs of k positions */
    return u * k - u * (u + 1) / 2;
}

static inline void prefetch_rows(const float *w, int64_t bytes)
{
    const char *p = (const char *)w;
    for (int64_t o = 0; o < bytes; o += 64)
        __builtin_prefetch(p + o, 0, 2);
}

/* A walk over the pairs (uni[ia], uni[ib]), ia < ib, that some sample of the
 * tile needs, in class order. */
typedef struct {
    int32_t ia, ib;
} pair_walk;

/* Steps to the next needed pair; 0 at the end. */
static inline int next_pair(pair_walk *p, const tile_mask *mask, const int32_t *uni, int32_t nu)
{
    for (;;) {
        if (++p->ib >= nu) {
            p->ia++;
            p->ib = p->ia + 1;
            if (p->ib >= nu)
                return 0;
        }
        if (mask[uni[p->ia]] & mask[uni[p->ib]])
            return 1;
    }
}

/* Classifier rows requested this many pairs ahead of their use: a row
 * shared by few samples costs a trip to memory, and several trips must be
 * in flight to keep the memory busy. */
#define PREFETCH_PAIRS 4

/* Cells of one tile into its samples' rows of dec [*, q, bags] (sample t's:
 * tdec[t]); x[t] and S[t] the sample and its classes; 0, or -2 for a
 * missing pair. */
static int tile_cells(const float *const *x, int64_t d, const float *W, const float *bias, int64_t n_rows,
                      const int64_t *const *S, int64_t k, const int64_t *nv, int64_t nt,
                      const int64_t *pair_id, int32_t bags, int32_t K, tile_mask *mask, int32_t *uni,
                      float *const *tdec, dot32_fn dot, dot32x2_fn dot2, dot32x4_fn dot4)
{
    int32_t nu = 0;
    for (int64_t t = 0; t < nt; t++) {
        for (int64_t u = 0; u < nv[t]; u++)
            mask[S[t][u]] |= (tile_mask)1 << t;
    }
    for (int32_t c = 0; c < K; c++) {
        if (mask[c])
            uni[nu++] = c;
    }
    int64_t next_u[TILE] = {0}, cell[TILE];
    int rc = 0;
    pair_walk at = {0, 0}, ahead = {0, 0};
    int ahead_live = 1;
    for (int i = 0; i < PREFETCH_PAIRS && ahead_live; i++) {
        if ((ahead_live = next_pair(&ahead, mask, uni, nu))) {
            const int64_t id = pair_id[(int64_t)uni[ahead.ia] * K + uni[ahead.ib]];
            if (id >= 0 && (id + 1) * bags <= n_rows)
                prefetch_rows(W + id * bags * d, (int64_t)sizeof(float) * bags * d);
        }
    }
    int32_t started = -1;   /* classes uni[0..started] have given their samples a first cell */
    while (next_pair(&at, mask, uni, nu)) {
        if (ahead_live && (ahead_live = next_pair(&ahead, mask, uni, nu))) {
            const int64_t id = pair_id[(int64_t)uni[ahead.ia] * K + uni[ahead.ib]];
            if (id >= 0 && (id + 1) * bags <= n_rows)
                prefetch_rows(W + id * bags * d, (int64_t)sizeof(float) * bags * d);
        }
        /* Each class passed, in order, is its samples' next position u: their
         * cells continue from pair (u, u + 1). */
        for (; started < at.ia; started++) {
            for (tile_mask m = mask[uni[started + 1]]; m; m &= m - 1) {
                const int t = mask_ctz(m);
                cell[t] = pair_offset(next_u[t]++, k);
            }
        }
        const int32_t a = uni[at.ia], b = uni[at.ib];
        const tile_mask mab = mask[a] & mask[b];
        const int64_t id = pair_id[(int64_t)a * K + b];
        if (id < 0 || (id + 1) * bags > n_rows) {
            rc = -2;
            break;
        }
        int ts[TILE], cnt = 0;
        for (tile_mask m = mab; m; m &= m - 1)
            ts[cnt++] = mask_ctz(m);
        for (int32_t g = 0; g < bags; g++) {
            const int64_t row = id * bags + g;
            const float *w = W + row * d;
            const float bb = bias[row];
            int j = 0;
            for (; j + 4 <= cnt; j += 4) {
                const float *xs[4] = {x[ts[j]], x[ts[j + 1]], x[ts[j + 2]], x[ts[j + 3]]};
                float r[4];
                dot4(xs, w, d, r);
                for (int s = 0; s < 4; s++)
                    tdec[ts[j + s]][cell[ts[j + s]] * bags + g] = r[s] + bb;
            }
            if (j + 2 <= cnt) {
                float r0, r1;
                dot2(x[ts[j]], x[ts[j + 1]], w, d, &r0, &r1);
                tdec[ts[j]][cell[ts[j]] * bags + g] = r0 + bb;
                tdec[ts[j + 1]][cell[ts[j + 1]] * bags + g] = r1 + bb;
                j += 2;
            }
            if (j < cnt)
                tdec[ts[j]][cell[ts[j]] * bags + g] = dot(x[ts[j]], w, d) + bb;
        }
        for (int j = 0; j < cnt; j++)
            cell[ts[j]]++;
    }
    for (int32_t i = 0; i < nu; i++)
        mask[uni[i]] = 0;
    return rc;
}

/* Votes of one sample from its cells, in canonical pair order: what
 * hsvm_cell_votes counts for the same cells, bit for bit. */
static void sample_votes(const float *sdec, const int64_t *s, int64_t k, int64_t nv, const int8_t *pair_sign,
                         int32_t bags, int32_t K, int32_t *v, double *cf)
{
    memset(v, 0, sizeof(int32_t) * (size_t)K);
    memset(cf, 0, sizeof(double) * (size_t)K);
    for (int64_t u = 0; u < nv; u++) {
        const float *d = sdec + pair_offset(u, k) * bags;
        for (int64_t w = u + 1; w < nv; w++, d += bags) {
            const int flipped = pair_sign[s[u] * K + s[w]] < 0;
            const int64_t a = flipped ? s[w] : s[u], b = flipped ? s[u] : s[w];
            double mean;
            v[pair_rule_a_wins(d, bags, &mean) ? a : b] += 1;
            cf[a] += mean;
            cf[b] -= mean;
        }
    }
}

int hsvm_refine_kept(const float *X, int64_t n, int64_t d, const int64_t *order, int64_t m, int64_t tile,
                     const float *W, const float *bias, int64_t n_rows, const int64_t *S, int64_t k,
                     const int64_t *nvalid, const int64_t *pair_id,
                     const int8_t *pair_sign, int32_t bags, int32_t n_classes, int32_t *votes, double *conf,
                     float *dec, int32_t kernel)
{
    dot32_fn dot;
    dot32x2_fn dot2;
    dot32x4_fn dot4;
    int32_t rc = dot32_choose(kernel, &dot, &dot2, NULL);
    if (rc == 0)
        rc = dot32_choose4(kernel, &dot4);
    if (rc < 0)
        return rc;
    if (!order)
        m = n;
    if (n < 0 || m < 0 || k < 1 || bags < 1 || n_classes < 1 || d < 0 || tile < 1 || tile > TILE)
        return -1;
    for (int64_t j = 0; j < m; j++) {
        const int64_t i = order ? order[j] : j;
        if (i < 0 || i >= n)
            return -1;
        const int64_t nv = nvalid ? nvalid[i] : k;
        if (nv < 0 || nv > k)
            return -1;
        for (int64_t u = 0; u < nv; u++) {
            const int64_t c = S[i * k + u];
            if (c < 0 || c >= n_classes || (u > 0 && c <= S[i * k + u - 1]))
                return -1;
        }
    }
    const int64_t q = k * (k - 1) / 2;
    tile_mask *mask = calloc((size_t)n_classes, sizeof(tile_mask));
    int32_t *uni = malloc(sizeof(int32_t) * (size_t)n_classes);
    float *own = dec ? NULL : malloc(sizeof(float) * (size_t)(TILE * q * bags > 0 ? TILE * q * bags : 1));
    if (!mask || !uni || (!dec && !own)) {
        rc = -3;
        goto done;
    }
    for (int64_t t0 = 0; t0 < m; t0 += tile) {
        const int64_t nt = m - t0 < tile ? m - t0 : tile;
        int64_t nv[TILE], row[TILE];
        const float *x[TILE];
        const int64_t *s[TILE];
        float *tdec[TILE];
        for (int64_t t = 0; t < nt; t++) {
            const int64_t i = row[t] = order ? order[t0 + t] : t0 + t;
            nv[t] = nvalid ? nvalid[i] : k;
            x[t] = X + i * d;
            s[t] = S + i * k;
            tdec[t] = dec ? dec + i * q * bags : own + t * q * bags;
        }
        rc = tile_cells(x, d, W, bias, n_rows, s, k, nv, nt, pair_id, bags, n_classes, mask, uni, tdec,
                        dot, dot2, dot4);
        if (rc != 0)
            goto done;
        if (votes) {
            for (int64_t t = 0; t < nt; t++)
                sample_votes(tdec[t], s[t], k, nv[t], pair_sign, bags, n_classes, votes + row[t] * n_classes,
                             conf + row[t] * n_classes);
        }
    }
    rc = 0;
done:
    free(mask);
    free(uni);
    free(own);
    return rc;
}
