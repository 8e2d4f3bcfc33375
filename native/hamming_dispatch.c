/* Plans (classifier repacking) and run-time choice of the Hamming kernels. */
#include <stdlib.h>
#include <string.h>
#include "hsvm_hamming.h"

HSVM_HAMMING_DECLARE_KERNEL(portable);
#if defined(__x86_64__) || defined(__i386__)
#define HSVM_X86 1
HSVM_HAMMING_DECLARE_KERNEL(avx2);
HSVM_HAMMING_DECLARE_KERNEL(avx512);
#endif

#define LANES HSVM_HAMMING_LANES

/* --------------------------------------------------------------------- plans */

static void *alloc_tracked(hsvm_hamming_plan *p, size_t bytes, int aligned)
{
    if (bytes == 0)
        bytes = 1;
    void *ptr;
    if (aligned) {
        /* 64-byte rows of the packed block are then cache-line aligned, so each
         * vector load touches one line. */
        bytes = (bytes + 63) & ~(size_t)63;
        ptr = aligned_alloc(64, bytes);
    } else {
        ptr = malloc(bytes);
    }
    if (ptr)
        p->bytes += (int64_t)bytes;
    return ptr;
}

void hsvm_hamming_plan_free(hsvm_hamming_plan *p)
{
    if (!p)
        return;
    free(p->codes);
    free(p->thr);
    free(p->tsum);
    free(p->lane_a);
    free(p->lane_b);
    free(p->valid);
    free(p->seg_first);
    free(p->segs);
    free(p->whole);
    free(p->b_count);
    free(p);
}

static hsvm_hamming_plan *plan_new(int32_t kind, int64_t n_items, int32_t bags, int32_t words)
{
    hsvm_hamming_plan *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->bytes = sizeof(*p);
    p->kind = kind;
    p->words = words;
    p->bags = bags;
    p->n_items = n_items;
    p->n_blocks = (n_items + LANES - 1) / LANES;
    size_t nb = (size_t)p->n_blocks;
    p->codes = alloc_tracked(p, nb * (size_t)bags * (size_t)words * LANES * sizeof(uint64_t), 1);
    p->valid = alloc_tracked(p, nb * sizeof(uint16_t), 0);
    if (!p->codes || !p->valid) {
        hsvm_hamming_plan_free(p);
        return NULL;
    }
    /* Only the last block has padding lanes; the packers overwrite the rest. */
    if (nb > 0)
        memset(p->codes + (nb - 1) * (size_t)bags * (size_t)words * LANES, 0,
               (size_t)bags * (size_t)words * LANES * sizeof(uint64_t));
    for (int64_t blk = 0; blk < p->n_blocks; blk++) {
        int64_t left = n_items - blk * LANES;
        p->valid[blk] = left >= LANES ? 0xFFFF : (uint16_t)((1u << left) - 1u);
    }
    return p;
}

static int words_ok(int64_t m, int64_t cwords, int32_t words)
{
    return m >= 0 && words >= 1 && cwords >= words;
}

int hsvm_hamming_plan_codes(const uint64_t *ccodes, int64_t m, int64_t cwords,
                            int32_t words, hsvm_hamming_plan **out)
{
    *out = NULL;
    if (!words_ok(m, cwords, words) || (m > 0 && !ccodes))
        return HSVM_HAMMING_EINVAL;
    hsvm_hamming_plan *p = plan_new(HSVM_PLAN_CODES, m, 1, words);
    if (!p)
        return HSVM_HAMMING_ENOMEM;
    for (int64_t j = 0; j < m; j++) {
        uint64_t *dst = p->codes + (j / LANES) * (int64_t)words * LANES + j % LANES;
        const uint64_t *src = ccodes + j * cwords;
        for (int32_t w = 0; w < words; w++)
            dst[(int64_t)w * LANES] = src[w];
    }
    *out = p;
    return HSVM_HAMMING_OK;
}

/* Pair order by (a, b), stable: two counting sorts (by b, then stably by a),
 * linear in pairs + classes whatever the input order. */
static int64_t *sort_pairs(const int32_t *pa, const int32_t *pb, int64_t n_pairs,
                           int32_t n_classes)
{
    const size_t np = (size_t)(n_pairs > 0 ? n_pairs : 1);
    int64_t *by_b = malloc(np * sizeof(int64_t));
    int64_t *order = malloc(np * sizeof(int64_t));
    int64_t *start = malloc(((size_t)n_classes + 1) * sizeof(int64_t));
    if (!by_b || !order || !start) {
        free(by_b);
        free(order);
        free(start);
        return NULL;
    }
    memset(start, 0, ((size_t)n_classes + 1) * sizeof(int64_t));
    for (int64_t p = 0; p < n_pairs; p++)
        start[pb[p] + 1]++;
    for (int32_t c = 0; c < n_classes; c++)
        start[c + 1] += start[c];
    for (int64_t p = 0; p < n_pairs; p++)
        by_b[start[pb[p]]++] = p;

    memset(start, 0, ((size_t)n_classes + 1) * sizeof(int64_t));
    for (int64_t p = 0; p < n_pairs; p++)
        start[pa[p] + 1]++;
    for (int32_t c = 0; c < n_classes; c++)
        start[c + 1] += start[c];
    for (int64_t s = 0; s < n_pairs; s++) {
        const int64_t p = by_b[s];
        order[start[pa[p]]++] = p;
    }
    free(by_b);
    free(start);
    return order;
}

/* Segments pay off while they average at least two lanes; a block cut into
 * more pieces is scattered lane by lane (the generic path). */
static int build_segments(hsvm_hamming_plan *p)
{
    const int64_t nb = p->n_blocks;
    p->seg_first = alloc_tracked(p, (size_t)(nb + 1) * sizeof(int32_t), 0);
    p->segs = alloc_tracked(p, (size_t)(p->n_items > 0 ? p->n_items : 1) * sizeof(hsvm_hamming_seg), 0);
    p->whole = alloc_tracked(p, (size_t)(nb > 0 ? nb : 1) * sizeof(hsvm_hamming_whole), 0);
    if (!p->seg_first || !p->segs || !p->whole)
        return HSVM_HAMMING_ENOMEM;
    int64_t ns = 0;
    for (int64_t blk = 0; blk < nb; blk++) {
        p->seg_first[blk] = (int32_t)ns;
        const int32_t *a = p->lane_a + blk * LANES, *b = p->lane_b + blk * LANES;
        const int nvalid = __builtin_popcount(p->valid[blk]);
        hsvm_hamming_seg tmp[LANES];
        int nseg = 0;
        for (int l = 0; l < nvalid; l++) {
            if (nseg > 0 && a[l] == tmp[nseg - 1].a && b[l] == b[l - 1] + 1) {
                tmp[nseg - 1].mask |= (uint16_t)(1u << l);
                continue;
            }
            tmp[nseg].a = a[l];
            tmp[nseg].b0 = b[l];
            tmp[nseg].mask = (uint16_t)(1u << l);
            tmp[nseg].lo = (uint8_t)l;
            tmp[nseg].pad = 0;
            nseg++;
        }
        if (2 * nseg <= nvalid) {
            memcpy(p->segs + ns, tmp, (size_t)nseg * sizeof(tmp[0]));
            ns += nseg;
        }
        p->whole[blk].a = tmp[0].a;
        p->whole[blk].col = nseg == 1 && tmp[0].mask == 0xFFFF ? tmp[0].b0 : -1;
    }
    p->seg_first[nb] = (int32_t)ns;
    return HSVM_HAMMING_OK;
}

int hsvm_hamming_plan_votes(const uint64_t *ccodes, int64_t m, int64_t cwords,
                            int32_t words, const int32_t *thr,
                            const int32_t *pair_a, const int32_t *pair_b,
                            int64_t n_pairs, int32_t bags, int32_t n_classes,
                            int32_t flags, hsvm_hamming_plan **out)
{
    *out = NULL;
    if (bags < 1 || n_classes < 1 || n_pairs < 0 || !words_ok(m, cwords, words) ||
        m != n_pairs * (int64_t)bags || n_pairs > INT32_MAX)
        return HSVM_HAMMING_EINVAL;
    if (n_pairs > 0 && (!ccodes || !thr || !pair_a || !pair_b))
        return HSVM_HAMMING_EINVAL;
    const int64_t bits = 64 * (int64_t)words;
    for (int64_t j = 0; j < m; j++)
        if (thr[j] < 0 || thr[j] > bits + 1)
            return HSVM_HAMMING_EINVAL;
    /* Every int32 sum a kernel forms is bounded by what one class collects:
     * (pairs naming it) * bags * bits.  Refuse inputs that could wrap. */
    int64_t *per_class = calloc((size_t)n_classes, sizeof(int64_t));
    if (!per_class)
        return HSVM_HAMMING_ENOMEM;
    int bad = 0;
    for (int64_t q = 0; q < n_pairs && !bad; q++) {
        if (pair_a[q] < 0 || pair_a[q] >= n_classes || pair_b[q] < 0 || pair_b[q] >= n_classes) {
            bad = 1;
            break;
        }
        per_class[pair_a[q]]++;
        if (pair_b[q] != pair_a[q])
            per_class[pair_b[q]]++;
    }
    int64_t max_pc = 0;
    for (int32_t c = 0; c < n_classes; c++)
        max_pc = per_class[c] > max_pc ? per_class[c] : max_pc;
    free(per_class);
    const int64_t per_pair = (int64_t)bags * (bits + 1);
    if (bad || per_pair > INT32_MAX || max_pc * per_pair > INT32_MAX)
        return HSVM_HAMMING_EINVAL;
    /* Packing bound: |dsum| <= dmax must stay below half the vote unit, and
     * dmax + unit * (pairs of one class) + unit / 2 must fit in int32. */
    const int64_t dmax = max_pc * bags * bits;
    int32_t shift = 1;
    while (((int64_t)1 << shift) <= 2 * dmax)
        shift++;
    const int64_t unit = (int64_t)1 << shift;
    const int packed = !(flags & HSVM_PLAN_NO_PACK) && shift < 31 &&
                       dmax + unit * max_pc + unit / 2 <= INT32_MAX;

    hsvm_hamming_plan *p = plan_new(HSVM_PLAN_VOTES, n_pairs, bags, words);
    if (!p)
        return HSVM_HAMMING_ENOMEM;
    p->n_classes = n_classes;
    p->pack_shift = packed ? shift : 0;
    const size_t nb = (size_t)p->n_blocks;
    p->thr = alloc_tracked(p, nb * (size_t)bags * LANES * sizeof(int32_t), 1);
    p->tsum = alloc_tracked(p, nb * LANES * sizeof(int32_t), 1);
    p->lane_a = alloc_tracked(p, nb * LANES * sizeof(int32_t), 1);
    p->lane_b = alloc_tracked(p, nb * LANES * sizeof(int32_t), 1);
    p->b_count = alloc_tracked(p, (size_t)n_classes * sizeof(int32_t), 0);
    int64_t *order = sort_pairs(pair_a, pair_b, n_pairs, n_classes);
    if (!p->thr || !p->tsum || !p->lane_a || !p->lane_b || !p->b_count || !order) {
        free(order);
        hsvm_hamming_plan_free(p);
        return HSVM_HAMMING_ENOMEM;
    }
    /* Padding lanes: threshold 0 never approves, class 0 is never touched
     * because every kernel masks them out with `valid`. */
    memset(p->thr, 0, nb * (size_t)bags * LANES * sizeof(int32_t));
    memset(p->tsum, 0, nb * LANES * sizeof(int32_t));
    memset(p->lane_a, 0, nb * LANES * sizeof(int32_t));
    memset(p->lane_b, 0, nb * LANES * sizeof(int32_t));
    memset(p->b_count, 0, (size_t)n_classes * sizeof(int32_t));
    for (int64_t q = 0; q < n_pairs; q++)
        p->b_count[pair_b[q]]++;
    for (int64_t s = 0; s < n_pairs; s++) {
        const int64_t q = order[s], blk = s / LANES, l = s % LANES;
        p->lane_a[s] = pair_a[q];
        p->lane_b[s] = pair_b[q];
        int32_t t = 0;
        for (int32_t k = 0; k < bags; k++) {
            const int64_t j = q * bags + k;
            const uint64_t *src = ccodes + j * cwords;
            uint64_t *dst = p->codes + ((blk * bags + k) * (int64_t)words) * LANES + l;
            for (int32_t w = 0; w < words; w++)
                dst[(int64_t)w * LANES] = src[w];
            p->thr[(blk * bags + k) * LANES + l] = thr[j];
            t += thr[j];
        }
        p->tsum[s] = t;
    }
    free(order);
    int rc = build_segments(p);
    if (rc != HSVM_HAMMING_OK) {
        hsvm_hamming_plan_free(p);
        return rc;
    }
    *out = p;
    return HSVM_HAMMING_OK;
}

/* ----------------------------------------------------------------- entry points */

static int check_call(const hsvm_hamming_plan *p, int32_t kind, const uint64_t *x,
                      int64_t n, int64_t xwords)
{
    if (!p || p->kind != kind || n < 0 || xwords < p->words || (n > 0 && !x))
        return HSVM_HAMMING_EINVAL;
    return HSVM_HAMMING_OK;
}

/* Splits packed totals (see hsvm_hamming_plan.pack_shift) while the group's
 * rows are still cached.  Rounding to nearest recovers the vote part because
 * the plan guarantees |dsum| < unit / 2. */
static void unpack_rows(const hsvm_hamming_plan *p, int64_t n, int32_t *votes, int32_t *dsum)
{
    const int32_t shift = p->pack_shift, unit = (int32_t)1 << shift, half = unit / 2;
    const int64_t K = p->n_classes;
    const int32_t *bc = p->b_count;
    for (int64_t i = 0; i < n * K; i += K) {
        for (int64_t c = 0; c < K; c++) {
            const int32_t acc = dsum[i + c];
            /* Floor division by a power of two; the bias keeps the shifted
             * value non-negative, where >> is fully defined by C. */
            const int32_t q = (int32_t)((((int64_t)acc + half + ((int64_t)unit << 32)) >> shift) -
                                        ((int64_t)1 << 32));
            votes[i + c] = q + bc[c];
            dsum[i + c] = acc - q * unit;
        }
    }
}

/* Cache blocking, shared by every kernel.  Voting: a group of samples keeps
 * its code rows and the output rows the kernel updates (dsum alone with
 * packed accumulation, votes too without) in L2 while a chunk of packed
 * classifier blocks is reused by every register tile of the group; the output
 * rows are revisited once per chunk, so both must stay cached, and the larger
 * the group the fewer times the whole classifier set streams in from L3 or
 * memory (with thousands of classes the set is tens of MB, the rows several
 * KB each: K = 1,000 at 256 bits is 16 MB of codes and 4 KB of dsum per
 * sample, so a 1 MB L2 holds about 190 rows, a 2 MB one 380).  The group
 * takes GROUP_SHARE of the core's L2 (hsvm_cache_bytes), the rest being left
 * to the chunk and to what the L2 cannot keep apart; groups of a few hundred
 * samples measured best with 16 MB of codes on 2 MB and 1 MB L2s, chunks of
 * 16-256 KB alike.  Distances: the output is written once and is the largest
 * stream, so chunks are long to keep each row's writes sequential. */
#define VOTE_CHUNK_BYTES (64 * 1024)
#define DIST_CHUNK_BYTES (1024 * 1024)
#define GROUP_SHARE 0.75
#define GROUP_MIN 8
#define GROUP_MAX 1024

typedef struct {
    int64_t group;  /* samples */
    int64_t chunk;  /* packed blocks */
} blocking;

static blocking choose_blocking(const hsvm_hamming_plan *p, int64_t chunk_bytes, int64_t row_bytes)
{
    blocking b;
    const int64_t block_bytes = (int64_t)p->bags * p->words * LANES * (int64_t)sizeof(uint64_t);
    b.chunk = chunk_bytes / block_bytes;
    if (b.chunk < 1)
        b.chunk = 1;
    b.group = (int64_t)(GROUP_SHARE * (double)hsvm_cache_bytes(2)) / row_bytes;
    b.group = b.group < GROUP_MIN ? GROUP_MIN : b.group > GROUP_MAX ? GROUP_MAX : b.group;
    b.group &= ~(int64_t)7;
    return b;
}

static blocking vote_blocking(const hsvm_hamming_plan *p)
{
    const int64_t rows = p->pack_shift > 0 ? 1 : 2;
    return choose_blocking(p, VOTE_CHUNK_BYTES, p->words * (int64_t)sizeof(uint64_t) +
                                                    rows * p->n_classes * (int64_t)sizeof(int32_t));
}

int hsvm_hamming_vote_blocking(const hsvm_hamming_plan *plan, int64_t *group, int64_t *chunk)
{
    if (!plan || plan->kind != HSVM_PLAN_VOTES || !group || !chunk)
        return HSVM_HAMMING_EINVAL;
    const blocking b = vote_blocking(plan);
    *group = b.group;
    *chunk = b.chunk;
    return HSVM_HAMMING_OK;
}

int hsvm_hamming_dist(const hsvm_hamming_plan *plan, const uint64_t *xcodes,
                      int64_t n, int64_t xwords, int32_t *out, int32_t kernel)
{
    int rc = check_call(plan, HSVM_PLAN_CODES, xcodes, n, xwords);
    if (rc != HSVM_HAMMING_OK)
        return rc;
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    if (n == 0 || plan->n_items == 0)
        return HSVM_HAMMING_OK;
    if (!out)
        return HSVM_HAMMING_EINVAL;
    void (*fn)(const hsvm_hamming_plan *, const uint64_t *, int64_t, int64_t, int64_t,
               int64_t, int32_t *) = hsvm_hamming_dist_portable;
#ifdef HSVM_X86
    if (k == HSVM_KERNEL_AVX512)
        fn = hsvm_hamming_dist_avx512;
    else if (k == HSVM_KERNEL_AVX2)
        fn = hsvm_hamming_dist_avx2;
#endif
    const blocking b = choose_blocking(plan, DIST_CHUNK_BYTES, plan->words * (int64_t)sizeof(uint64_t));
    const int64_t m = plan->n_items, nb = plan->n_blocks;
    for (int64_t g0 = 0; g0 < n; g0 += b.group) {
        const int64_t gn = n - g0 < b.group ? n - g0 : b.group;
        for (int64_t c0 = 0; c0 < nb; c0 += b.chunk)
            fn(plan, xcodes + g0 * xwords, gn, xwords, c0, c0 + b.chunk < nb ? c0 + b.chunk : nb,
               out + g0 * m);
    }
    return HSVM_HAMMING_OK;
}

int hsvm_hamming_vote_blocked(const hsvm_hamming_plan *plan, const uint64_t *xcodes,
                              int64_t n, int64_t xwords, int32_t *votes, int32_t *dsum,
                              int32_t kernel, int64_t group, int64_t chunk)
{
    int rc = check_call(plan, HSVM_PLAN_VOTES, xcodes, n, xwords);
    if (rc != HSVM_HAMMING_OK)
        return rc;
    if (group < 0 || chunk < 0)
        return HSVM_HAMMING_EINVAL;
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    if (n == 0)
        return HSVM_HAMMING_OK;
    if (!votes || !dsum)
        return HSVM_HAMMING_EINVAL;
    const int64_t K = plan->n_classes, nb = plan->n_blocks;
    memset(votes, 0, (size_t)n * (size_t)K * sizeof(int32_t));
    memset(dsum, 0, (size_t)n * (size_t)K * sizeof(int32_t));
    void (*fn)(const hsvm_hamming_plan *, const uint64_t *, int64_t, int64_t, int64_t,
               int64_t, int32_t *, int32_t *) = hsvm_hamming_vote_portable;
#ifdef HSVM_X86
    if (k == HSVM_KERNEL_AVX512)
        fn = hsvm_hamming_vote_avx512;
    else if (k == HSVM_KERNEL_AVX2)
        fn = hsvm_hamming_vote_avx2;
#endif
    blocking b = vote_blocking(plan);
    if (group > 0)
        b.group = group;
    if (chunk > 0)
        b.chunk = chunk;
    for (int64_t g0 = 0; g0 < n; g0 += b.group) {
        const int64_t gn = n - g0 < b.group ? n - g0 : b.group;
        for (int64_t c0 = 0; c0 < nb; c0 += b.chunk)
            fn(plan, xcodes + g0 * xwords, gn, xwords, c0, c0 + b.chunk < nb ? c0 + b.chunk : nb,
               votes + g0 * K, dsum + g0 * K);
        if (plan->pack_shift)
            unpack_rows(plan, gn, votes + g0 * K, dsum + g0 * K);
    }
    return HSVM_HAMMING_OK;
}

int hsvm_hamming_vote(const hsvm_hamming_plan *plan, const uint64_t *xcodes,
                      int64_t n, int64_t xwords, int32_t *votes, int32_t *dsum,
                      int32_t kernel)
{
    return hsvm_hamming_vote_blocked(plan, xcodes, n, xwords, votes, dsum, kernel, 0, 0);
}

int hsvm_hamming_distances(const uint64_t *xcodes, int64_t n, int64_t xwords,
                           const uint64_t *ccodes, int64_t m, int64_t cwords,
                           int32_t words, int32_t *out, int32_t kernel)
{
    if (xwords < words)
        return HSVM_HAMMING_EINVAL;
    hsvm_hamming_plan *p;
    int rc = hsvm_hamming_plan_codes(ccodes, m, cwords, words, &p);
    if (rc != HSVM_HAMMING_OK)
        return rc;
    rc = hsvm_hamming_dist(p, xcodes, n, xwords, out, kernel);
    hsvm_hamming_plan_free(p);
    return rc;
}
