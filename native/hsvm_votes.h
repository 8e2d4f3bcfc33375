/* Exact one-vs-one vote counting from decision values. */
#ifndef HSVM_VOTES_H
#define HSVM_VOTES_H
#include <stdint.h>
#include "hsvm_cpu.h"

enum {
    HSVM_VOTES_OK = 0,
    HSVM_VOTES_EINVAL = -1,   /* a pair names a class outside [0, n_classes), bad sizes */
    HSVM_VOTES_ENOMEM = -2
};

/* dec: n x (n_pairs * bags) row-major decision values w.x + b, classifier
 * j = pair * bags + bag; or, with bias not NULL, the products w.x, bias
 * [n_pairs * bags] holding b (added in float32 first, as numpy's dec += b,
 * which saves a pass over dec).  Pair p opposes class pair_a[p] (wins on a positive
 * decision) and class pair_b[p].  The pair's winner is the majority of its bags;
 * an even split goes to the sign of the summed decision values (a on > 0).
 * votes[i*K + c] receives the number of pairs class c won; conf[i*K + c] the
 * sum over c's pairs of the mean bag decision value, signed towards c
 * (scikit-learn's OvO confidence), added in pair order.  Both outputs are
 * overwritten.  Any pair order is exact; train-ovo's canonical one (a < b,
 * a-major) is the fast one.  kernel: HSVM_KERNEL_* (hsvm_cpu.h); every path
 * gives the same bits.  Returns HSVM_VOTES_OK, HSVM_VOTES_EINVAL (e.g. a pair
 * names a class outside [0, n_classes)), HSVM_VOTES_ENOMEM, or
 * hsvm_resolve_kernel's HSVM_CPU_E* code. */
int hsvm_ovo_votes(const float *dec, const float *bias, int64_t n, int64_t n_pairs, int32_t bags,
                   const int32_t *pair_a, const int32_t *pair_b,
                   int32_t n_classes, int32_t *votes, double *conf, int32_t kernel);

/* hsvm_ovo_votes adding to votes and conf instead of overwriting them: the
 * pairs of a model taken in consecutive ranges, each range's call after the
 * previous one's, give the bits of one call over all of them (every sum runs
 * on in pair order).  For exact prediction of models too large for one block
 * of decision values per block of samples. */
int hsvm_ovo_votes_add(const float *dec, const float *bias, int64_t n, int64_t n_pairs, int32_t bags,
                       const int32_t *pair_a, const int32_t *pair_b,
                       int32_t n_classes, int32_t *votes, double *conf, int32_t kernel);

/* The same rule for per-sample pair lists (the refine step): row i has q
 * candidate pairs (A[i*q+j], B[i*q+j]) with decisions dec[(i*q+j)*bags ..],
 * used where pmask[i*q+j] is nonzero.  The decisions are in the model's
 * orientation of the pair: positive towards A where sign is NULL or
 * sign[i*q+j] > 0, towards B where sign[i*q+j] < 0 (a model may store a pair
 * as (b, a)); the rule is applied in that orientation, so an exact-zero
 * decision goes where exact voting sends it.  votes and conf [n, n_classes]
 * are overwritten.  Returns 0, or -1 for a class out of range. */
int hsvm_cell_votes(const float *dec, const int64_t *A, const int64_t *B, const uint8_t *pmask,
                    const int8_t *sign, int64_t n, int64_t q, int32_t bags, int32_t n_classes,
                    int32_t *votes, double *conf);

/* The same votes read from the decision values of every classifier, dec
 * [n, width] (classifier p's bags at columns p*bags ..), for the pairs among
 * each row's kept classes: S [n, k] sorted ascending, the first nvalid[i]
 * in use (nvalid NULL: all k).  pair_id and pair_sign [n_classes^2] give,
 * for a < b at a*n_classes + b, the model's classifier of the pair (-1:
 * none) and its orientation (+1: stored as (a, b), -1: as (b, a)); both
 * NULL for a model in canonical pair order (id computed, orientation +1:
 * no n_classes^2 tables to read, 8 MB of them at K = 1,000).  Pairs
 * are visited in the order hsvm_cell_votes visits the canonical pairs of
 * S, so votes and conf are bit-identical to it.  bias (NULL: none) [width]:
 * dec then holds products and a cell's value is dec + bias rounded to float,
 * the bits `dec += bias` would store.  Returns 0, -1 for a class out of
 * range, -2 for a pair the model lacks. */
int hsvm_kept_votes(const float *dec, const float *bias, int64_t n, int64_t width, const int64_t *S, int64_t k,
                    const int64_t *nvalid, const int64_t *pair_id, const int8_t *pair_sign, int32_t bags,
                    int32_t n_classes, int32_t *votes, double *conf);

#endif
