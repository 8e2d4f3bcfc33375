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
 * next cell is a running counter, and its votes can be counted as its cells
 * come, with the rule and in the order of hsvm_cell_votes: the same sums.
 * The tiles' walks advance together, a chunk of W's rows at a time. */
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

/* Rows of W per chunk: all tiles take their pairs among a chunk's rows
 * before the next chunk, so that W comes from memory about once, and from the
 * cache for the other tiles, instead of once per tile.  A megabyte stays in
 * L2 beside a tile's samples on this project's machine (2 MB of L2; 4 MB and
 * 16 MB chunks, left to the shared L3, were 10-20% slower). */
#define CHUNK_BYTES ((int64_t)1 << 20)

/* Where a tile's walk over its pairs stands between chunks. */
typedef struct {
    tile_mask *mask;            /* [K]: which of the tile's samples kept each class */
    int32_t *uni, nu;           /* the classes some sample kept, increasing */
    pair_walk at, ahead;        /* the pending pair (when `pending`), the prefetch walk */
    int pending, ahead_live, done;
    int32_t started;            /* classes uni[0..started] have given their samples a first cell */
    int64_t nt;
    int64_t next_u[TILE], cell[TILE], row[TILE];
    const float *x[TILE];
    int32_t *lv;                /* [TILE, k]: votes of each sample's kept classes, by position */
    double *lc;                 /* [TILE, k]: their confidence sums */
} tile_state;

typedef struct {
    const float *W, *bias;
    int64_t d, n_rows, k, q;
    const int64_t *pair_id;
    const int8_t *pair_sign;
    int32_t bags, K;
    int32_t *votes;
    double *conf;
    float *dec, *vals;          /* vals [TILE, bags]: the current pair's values of each sample */
    dot32_fn dot;
    dot32x2_fn dot2;
    dot32x4_fn dot4;
} refine_job;

static inline int64_t pair_row(const refine_job *J, const tile_state *T, const pair_walk *p)
{
    return J->pair_id[(int64_t)T->uni[p->ia] * J->K + T->uni[p->ib]];
}

static inline void prefetch_ahead(const refine_job *J, tile_state *T)
{
    if (T->ahead_live && (T->ahead_live = next_pair(&T->ahead, T->mask, T->uni, T->nu))) {
        const int64_t id = pair_row(J, T, &T->ahead);
        if (id >= 0 && (id + 1) * J->bags <= J->n_rows)
            prefetch_rows(J->W + id * J->bags * J->d, (int64_t)sizeof(float) * J->bags * J->d);
    }
}

/* The exact values of pair `id` for the samples ts[0..cnt) of tile T, then
 * each sample's vote (in the sample's canonical pair order, with the rule
 * and sums of hsvm_cell_votes, kept by position among its classes so that a
 * tile's counts stay in the cache) and cell of dec. */
static void pair_cells(const refine_job *J, tile_state *T, int32_t a, int32_t b, int64_t id, const int *ts,
                       int cnt)
{
    const int32_t bags = J->bags;
    float *vals = J->vals;
    for (int32_t g = 0; g < bags; g++) {
        const int64_t row = id * bags + g;
        const float *w = J->W + row * J->d;
        const float bb = J->bias[row];
        int j = 0;
        for (; j + 4 <= cnt; j += 4) {
            const float *xs[4] = {T->x[ts[j]], T->x[ts[j + 1]], T->x[ts[j + 2]], T->x[ts[j + 3]]};
            float r[4];
            J->dot4(xs, w, J->d, r);
            for (int s = 0; s < 4; s++)
                vals[ts[j + s] * bags + g] = r[s] + bb;
        }
        if (j + 2 <= cnt) {
            float r0, r1;
            J->dot2(T->x[ts[j]], T->x[ts[j + 1]], w, J->d, &r0, &r1);
            vals[ts[j] * bags + g] = r0 + bb;
            vals[ts[j + 1] * bags + g] = r1 + bb;
            j += 2;
        }
        if (j < cnt)
            vals[ts[j] * bags + g] = J->dot(T->x[ts[j]], w, J->d) + bb;
    }
    const int flipped = J->pair_sign[(int64_t)a * J->K + b] < 0;
    for (int j = 0; j < cnt; j++) {
        const int t = ts[j];
        const float *v = vals + t * bags;
        if (J->dec)
            memcpy(J->dec + (T->row[t] * J->q + T->cell[t]) * bags, v, sizeof(float) * (size_t)bags);
        if (J->votes) {
            /* a and b sit at positions u and w of the sample's kept classes */
            const int64_t u = T->next_u[t] - 1, w = T->cell[t] - pair_offset(u, J->k) + u + 1;
            const int64_t first = flipped ? w : u, second = flipped ? u : w;
            int32_t *lv = T->lv + t * J->k;
            double *lc = T->lc + t * J->k, mean;
            lv[pair_rule_a_wins(v, bags, &mean) ? first : second] += 1;
            lc[first] += mean;
            lc[second] -= mean;
        }
        T->cell[t]++;
    }
}

/* Advances tile T through its pairs whose rows lie below `hi`; 0, or -2 for
 * a pair the model lacks. */
static int advance_tile(const refine_job *J, tile_state *T, int64_t hi)
{
    while (!T->done) {
        if (!T->pending && !(T->pending = next_pair(&T->at, T->mask, T->uni, T->nu))) {
            T->done = 1;
            break;
        }
        const int64_t id = pair_row(J, T, &T->at);
        if (id < 0 || (id + 1) * J->bags > J->n_rows)
            return -2;
        if (id * J->bags >= hi)
            return 0;
        T->pending = 0;
        prefetch_ahead(J, T);
        /* Each class passed, in order, is its samples' next position u: their
         * cells continue from pair (u, u + 1). */
        for (; T->started < T->at.ia; T->started++) {
            for (tile_mask m = T->mask[T->uni[T->started + 1]]; m; m &= m - 1) {
                const int t = mask_ctz(m);
                T->cell[t] = pair_offset(T->next_u[t]++, J->k);
            }
        }
        const int32_t a = T->uni[T->at.ia], b = T->uni[T->at.ib];
        int ts[TILE], cnt = 0;
        for (tile_mask m = T->mask[a] & T->mask[b]; m; m &= m - 1)
            ts[cnt++] = mask_ctz(m);
        pair_cells(J, T, a, b, id, ts, cnt);
    }
    return 0;
}

/* Whether the model's classifier ids grow along the canonical pair order
 * (a model as train-ovo writes it), so that every tile's walk meets the rows
 * in increasing order and the rows can be taken chunk by chunk. */
static int ids_in_walk_order(const int64_t *pair_id, int32_t K)
{
    int64_t last = -1;
    for (int64_t a = 0; a < K; a++) {
        for (int64_t b = a + 1; b < K; b++) {
            const int64_t id = pair_id[a * K + b];
            if (id < 0)
                continue;
            if (id <= last)
                return 0;
            last = id;
        }
    }
    return 1;
}

/* Whether the tiles need W's rows often enough for chunks to pay: the
 * pairs a tile needs are at most its samples' cells and at most all pairs
 * of its classes; when the tiles together need each row fewer than
 * CHUNK_SHARING times, rows are rarely shared between tiles and a tile's
 * walk is better left uninterrupted (its prefetches then run ahead within
 * one walk).  K = 1,000, k = 10: chunks made the refine 2.5x slower. */
#define CHUNK_SHARING 4
static int rows_shared_by_tiles(const tile_state *tiles, int64_t n_tiles, const int64_t *cells, int32_t bags,
                                int64_t n_rows)
{
    int64_t need = 0;
    for (int64_t ti = 0; ti < n_tiles; ti++) {
        const int64_t nu = tiles[ti].nu, pairs = nu * (nu - 1) / 2;
        need += pairs < cells[ti] ? pairs : cells[ti];
    }
    return need >= CHUNK_SHARING * (n_rows / bags);
}

int hsvm_refine_kept(const float *X, int64_t n, int64_t d, const int64_t *order, int64_t m, int64_t tile,
                     const float *W, const float *bias, int64_t n_rows, const int64_t *S, int64_t k,
                     const int64_t *nvalid, const int64_t *pair_id,
                     const int8_t *pair_sign, int32_t bags, int32_t n_classes, int32_t *votes, double *conf,
                     int32_t by_position, float *dec, int64_t chunk_bytes, int32_t kernel)
{
    refine_job J = {W, bias, d, n_rows, k, k * (k - 1) / 2, pair_id, pair_sign, bags, n_classes, votes, conf, dec,
                    NULL, NULL, NULL, NULL};
    int32_t rc = dot32_choose(kernel, &J.dot, &J.dot2, NULL, &J.dot4);
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
    if (m == 0)
        return 0;
    const int64_t n_tiles = (m + tile - 1) / tile;
    tile_state *tiles = calloc((size_t)n_tiles, sizeof(tile_state));
    tile_mask *masks = calloc((size_t)(n_tiles * n_classes), sizeof(tile_mask));
    int32_t *unis = malloc(sizeof(int32_t) * (size_t)(n_tiles * n_classes));
    J.vals = malloc(sizeof(float) * (size_t)(TILE * bags));
    int64_t *cells = calloc((size_t)n_tiles, sizeof(int64_t));
    int32_t *lvs = votes ? calloc((size_t)(n_tiles * tile * k), sizeof(int32_t)) : NULL;
    double *lcs = votes ? calloc((size_t)(n_tiles * tile * k), sizeof(double)) : NULL;
    if (!tiles || !masks || !unis || !J.vals || !cells || (votes && (!lvs || !lcs))) {
        rc = -3;
        goto done;
    }
    for (int64_t ti = 0; ti < n_tiles; ti++) {
        tile_state *T = tiles + ti;
        const int64_t t0 = ti * tile;
        T->nt = m - t0 < tile ? m - t0 : tile;
        T->mask = masks + ti * n_classes;
        T->uni = unis + ti * n_classes;
        if (votes) {
            T->lv = lvs + ti * tile * k;
            T->lc = lcs + ti * tile * k;
        }
        for (int64_t t = 0; t < T->nt; t++) {
            const int64_t i = T->row[t] = order ? order[t0 + t] : t0 + t;
            const int64_t nv = nvalid ? nvalid[i] : k;
            cells[ti] += nv * (nv - 1) / 2;
            T->x[t] = X + i * d;
            for (int64_t u = 0; u < nv; u++)
                T->mask[S[i * k + u]] |= (tile_mask)1 << t;
        }
        for (int32_t c = 0; c < n_classes; c++) {
            if (T->mask[c])
                T->uni[T->nu++] = c;
        }
        T->started = -1;
        T->ahead_live = 1;
    }
    const int64_t row_bytes = (int64_t)sizeof(float) * (d > 0 ? d : 1) * bags;
    if (chunk_bytes <= 0)
        chunk_bytes = CHUNK_BYTES;
    const int chunked = ids_in_walk_order(pair_id, n_classes) && rows_shared_by_tiles(tiles, n_tiles, cells, bags,
                                                                                        n_rows);
    const int64_t chunk = chunked ? (chunk_bytes / row_bytes > 0 ? chunk_bytes / row_bytes : 1) * bags : n_rows;
    for (int64_t hi = chunk; rc == 0; hi += chunk) {
        for (int64_t ti = 0; ti < n_tiles && rc == 0; ti++) {
            tile_state *T = tiles + ti;
            if (hi == chunk) {
                for (int p = 0; p < PREFETCH_PAIRS; p++)
                    prefetch_ahead(&J, T);
            }
            rc = advance_tile(&J, T, hi);
        }
        if (hi >= n_rows)
            break;
    }
    if (rc == 0 && votes) {
        /* Each sample's counts to its classes; the other classes have none. */
        for (int64_t ti = 0; ti < n_tiles; ti++) {
            const tile_state *T = tiles + ti;
            for (int64_t t = 0; t < T->nt; t++) {
                const int64_t i = T->row[t], nv = nvalid ? nvalid[i] : k;
                if (by_position) {
                    /* the tile's counts are already by position, 0 past nv */
                    memcpy(votes + i * k, T->lv + t * k, sizeof(int32_t) * (size_t)k);
                    memcpy(conf + i * k, T->lc + t * k, sizeof(double) * (size_t)k);
                    continue;
                }
                int32_t *v = votes + i * n_classes;
                double *c = conf + i * n_classes;
                memset(v, 0, sizeof(int32_t) * (size_t)n_classes);
                memset(c, 0, sizeof(double) * (size_t)n_classes);
                for (int64_t u = 0; u < nv; u++) {
                    v[S[i * k + u]] = T->lv[t * k + u];
                    c[S[i * k + u]] = T->lc[t * k + u];
                }
            }
        }
    }
done:
    free(tiles);
    free(masks);
    free(unis);
    free(J.vals);
    free(cells);
    free(lvs);
    free(lcs);
    return rc;
}
