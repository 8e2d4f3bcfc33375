/* Fused Hamming range-query voting: the filter step of hsvm prediction.
 *
 * Samples and classifier normals are hashed to D-bit sign codes (bit j of a code
 * is bit j%64 of uint64 word j/64).  Classifier j approves sample i when
 * d_ij = popcount(x_i ^ c_j) over the first `words` words is < thr[j].
 * Classifier j belongs to one-vs-one pair p = j / bags; the pair's bags vote by
 * majority, an even split goes to class a when the summed distance D is below
 * the summed threshold T.  Outputs are integers so every SIMD path is
 * bit-identical to the numpy reference (hsvm_cli/hamming_ref.py).
 *
 * Classifier codes are repacked once into a plan (16 classifiers interleaved
 * word by word so one vector load holds the same word of many classifiers);
 * a plan is read-only and may be shared by threads that vote on disjoint
 * sample ranges.  This header is also fed to cffi's cdef after dropping lines
 * starting with '#', so it holds plain declarations only; multi-line macros
 * would leak into cdef. */
#ifndef HSVM_HAMMING_H
#define HSVM_HAMMING_H
#include <stdint.h>
#include "hsvm_cpu.h"

/* Return codes; a kernel that cannot run also returns hsvm_resolve_kernel's
 * HSVM_CPU_EBADNAME or HSVM_CPU_EUNAVAILABLE. */
enum {
    HSVM_HAMMING_OK = 0,
    HSVM_HAMMING_EINVAL = -1,       /* bad sizes, classes out of range, wrong plan kind */
    HSVM_HAMMING_ENOMEM = -2
};

enum {
    HSVM_HAMMING_LANES = 16,   /* classifiers (or pairs) per packed block */
    HSVM_PLAN_CODES = 1,       /* plan for plain distances */
    HSVM_PLAN_VOTES = 2,       /* plan for fused voting */
    HSVM_PLAN_NO_PACK = 1      /* flag: never use packed accumulation (testing) */
};

/* A maximal run of lanes inside one block whose pairs share class a and have
 * consecutive b (lane l has b0 + l - lo): its b-side updates are one vector
 * read-modify-write and its a-side is accumulated in registers. */
typedef struct hsvm_hamming_seg {
    int32_t a;
    int32_t b0;
    uint16_t mask;
    uint8_t lo;
    uint8_t pad;
} hsvm_hamming_seg;

/* A block whose 16 lanes are one segment (one class a, b = col .. col + 15):
 * the common case with many classes, voted without looking at segments.
 * col is -1 for every other block. */
typedef struct hsvm_hamming_whole {
    int32_t a;
    int32_t col;
} hsvm_hamming_whole;

/* Read-only after creation; build with hsvm_hamming_plan_codes/_votes, release
 * with hsvm_hamming_plan_free.  Vote plans hold the pairs sorted by (a, b)
 * (the sums are order-independent), which turns any complete pair set into
 * long segments. */
typedef struct hsvm_hamming_plan {
    int32_t kind;
    int32_t words;
    int32_t bags;
    int32_t n_classes;
    int64_t n_items;        /* classifiers (codes plan) or pairs (vote plan) */
    int64_t n_blocks;       /* ceil(n_items / 16) */
    int64_t bytes;          /* heap memory held by the plan */
    uint64_t *codes;        /* [n_blocks][bags][words][16], zero in padding lanes */
    int32_t *thr;           /* [n_blocks][bags][16] (vote plan) */
    int32_t *tsum;          /* [n_blocks][16] sum of thr over bags (vote plan) */
    int32_t *lane_a;        /* [n_blocks][16] (vote plan) */
    int32_t *lane_b;        /* [n_blocks][16] (vote plan) */
    uint16_t *valid;        /* [n_blocks] lanes holding a real item */
    int32_t *seg_first;     /* [n_blocks + 1]; first == next means a generic block */
    hsvm_hamming_seg *segs;
    hsvm_hamming_whole *whole;  /* [n_blocks] (vote plan) */
    /* Packed accumulation, when pack_shift > 0: pair p adds u = D + (a wins) *
     * 2^pack_shift to class a and subtracts it from class b, in the dsum array
     * alone, which halves the scattered read-modify-writes.  The dispatcher then
     * splits each total: votes = round(acc / 2^shift) + b_count, dsum = the
     * remainder.  Chosen only when every worst-case sum fits in int32. */
    int32_t pack_shift;
    int32_t *b_count;       /* [n_classes] pairs naming the class as b */
} hsvm_hamming_plan;

/* Packs the first `words` words of ccodes [m][cwords] for hsvm_hamming_dist. */
int hsvm_hamming_plan_codes(const uint64_t *ccodes, int64_t m, int64_t cwords,
                            int32_t words, hsvm_hamming_plan **out);
/* Packs classifiers j = p*bags + k (codes ccodes [n_pairs*bags][cwords],
 * thresholds thr [n_pairs*bags] in [0, 64*words + 1]) with their pairs
 * (classes in [0, n_classes)) for hsvm_hamming_vote.  EINVAL also when the
 * distance sums one class collects could exceed int32.  flags: 0 or
 * HSVM_PLAN_NO_PACK. */
int hsvm_hamming_plan_votes(const uint64_t *ccodes, int64_t m, int64_t cwords,
                            int32_t words, const int32_t *thr,
                            const int32_t *pair_a, const int32_t *pair_b,
                            int64_t n_pairs, int32_t bags, int32_t n_classes,
                            int32_t flags, hsvm_hamming_plan **out);
void hsvm_hamming_plan_free(hsvm_hamming_plan *plan);

/* out [n][plan->n_items] int32: distances of xcodes [n][xwords] (first
 * plan->words words) to every packed classifier, in the original order.
 * kernel: HSVM_KERNEL_* (see hsvm_cpu.h). */
int hsvm_hamming_dist(const hsvm_hamming_plan *plan, const uint64_t *xcodes,
                      int64_t n, int64_t xwords, int32_t *out, int32_t kernel);
/* votes, dsum [n][plan->n_classes] int32, overwritten. */
int hsvm_hamming_vote(const hsvm_hamming_plan *plan, const uint64_t *xcodes,
                      int64_t n, int64_t xwords, int32_t *votes, int32_t *dsum,
                      int32_t kernel);
/* hsvm_hamming_vote with the cache blocking forced: groups of `group`
 * samples, chunks of `chunk` packed blocks, 0 meaning the automatic choice
 * (testing and benchmarks; the results never depend on it). */
int hsvm_hamming_vote_blocked(const hsvm_hamming_plan *plan, const uint64_t *xcodes,
                              int64_t n, int64_t xwords, int32_t *votes, int32_t *dsum,
                              int32_t kernel, int64_t group, int64_t chunk);
/* The automatic blocking of hsvm_hamming_vote for this plan on this machine:
 * samples per group, packed blocks per chunk. */
int hsvm_hamming_vote_blocking(const hsvm_hamming_plan *plan, int64_t *group, int64_t *chunk);
/* One-shot distances for C callers (packs, computes, frees). */
int hsvm_hamming_distances(const uint64_t *xcodes, int64_t n, int64_t xwords,
                           const uint64_t *ccodes, int64_t m, int64_t cwords,
                           int32_t words, int32_t *out, int32_t kernel);

/* Entry points every instruction-set file defines: samples [0, n) against
 * packed blocks [blk0, blk1), adding into already-zeroed outputs.  The
 * dispatcher alone calls them (never exposed to Python: on the wrong CPU they
 * raise SIGILL) and chooses the cache blocking. */
#define HSVM_HAMMING_DECLARE_KERNEL(isa) void hsvm_hamming_vote_##isa(const hsvm_hamming_plan *plan, const uint64_t *xcodes, int64_t n, int64_t xwords, int64_t blk0, int64_t blk1, int32_t *votes, int32_t *dsum); void hsvm_hamming_dist_##isa(const hsvm_hamming_plan *plan, const uint64_t *xcodes, int64_t n, int64_t xwords, int64_t blk0, int64_t blk1, int32_t *out)

#endif
