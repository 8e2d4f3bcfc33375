/* The refine step for dense samples: exact votes among each sample's kept
 * classes, with no per-cell index lists.
 *
 * Samples go in tiles of up to 64.  A class's bit mask says which of the
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

#define TILE 64

static inline int64_t pair_offset(int64_t u, int64_t k)
{
    /* index of (u, u + 1) among the canonical pairs of k positions */
    return u * k - u * (u + 1) / 2;
}

static inline void prefetch_rows(const float *w, int64_t bytes)
{
    const char *p = (const char *)w;
    for (int64_t o = 0; o < bytes; o += 64)
        __builtin_prefetch(p + o, 0, 3);
}

/* Cells of one tile into its samples' rows of dec [*, q, bags] (sample t's:
 * tdec[t]); x[t] and S[t] the sample and its classes; 0, or -2 for a
 * missing pair. */
static int tile_cells(const float *const *x, int64_t d, const float *W, const float *bias, int64_t n_rows,
                      const int64_t *const *S, int64_t k, const int64_t *nv, int64_t nt,
                      const int64_t *pair_id, int32_t bags, int32_t K, uint64_t *mask, int32_t *uni,
                      float *const *tdec, dot32_fn dot, dot32x2_fn dot2, dot32x4_fn dot4)
{
    int32_t nu = 0;
    for (int64_t t = 0; t < nt; t++) {
        for (int64_t u = 0; u < nv[t]; u++)
            mask[S[t][u]] |= (uint64_t)1 << t;
    }
    for (int32_t c = 0; c < K; c++) {
        if (mask[c])
            uni[nu++] = c;
    }
    int64_t next_u[TILE] = {0}, cell[TILE];
    int rc = 0;
    for (int32_t ia = 0; ia < nu && rc == 0; ia++) {
        const int32_t a = uni[ia];
        const uint64_t ma = mask[a];
        for (uint64_t m = ma; m; m &= m - 1) {
            const int t = __builtin_ctzll(m);
            cell[t] = pair_offset(next_u[t]++, k);
        }
        const int64_t *ids = pair_id + (int64_t)a * K;
        /* the next pair with samples, its rows requested ahead of use */
        int32_t ib = ia + 1;
        while (ib < nu && !(ma & mask[uni[ib]]))
            ib++;
        while (ib < nu) {
            const int32_t b = uni[ib];
            const uint64_t mab = ma & mask[b];
            const int64_t id = ids[b];
            if (id < 0 || (id + 1) * bags > n_rows) {
                rc = -2;
                break;
            }
            int32_t nb = ib + 1;
            while (nb < nu && !(ma & mask[uni[nb]]))
                nb++;
            if (nb < nu && ids[uni[nb]] >= 0 && (ids[uni[nb]] + 1) * bags <= n_rows)
                prefetch_rows(W + ids[uni[nb]] * bags * d, (int64_t)sizeof(float) * bags * d);
            int ts[TILE], cnt = 0;
            for (uint64_t m = mab; m; m &= m - 1)
                ts[cnt++] = __builtin_ctzll(m);
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
            ib = nb;
        }
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

int hsvm_refine_kept(const float *X, int64_t n, int64_t d, const int64_t *order, int64_t m, const float *W,
                     const float *bias, int64_t n_rows, const int64_t *S, int64_t k, const int64_t *nvalid,
                     const int64_t *pair_id,
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
    if (n < 0 || m < 0 || k < 1 || bags < 1 || n_classes < 1 || d < 0)
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
    uint64_t *mask = calloc((size_t)n_classes, sizeof(uint64_t));
    int32_t *uni = malloc(sizeof(int32_t) * (size_t)n_classes);
    float *own = dec ? NULL : malloc(sizeof(float) * (size_t)(TILE * q * bags > 0 ? TILE * q * bags : 1));
    if (!mask || !uni || (!dec && !own)) {
        rc = -3;
        goto done;
    }
    for (int64_t t0 = 0; t0 < m; t0 += TILE) {
        const int64_t nt = m - t0 < TILE ? m - t0 : TILE;
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
