/* Decision DAG (DDAG) one-vs-one prediction: K-1 classifier evaluations per
 * sample instead of K(K-1)/2 (Platt, Cristianini & Shawe-Taylor, "Large
 * Margin DAGs for Multiclass Classification", NIPS 2000). */
#ifndef HSVM_DAG_H
#define HSVM_DAG_H
#include <stdint.h>

/* Per sample i, a candidate list L of classes: row i of cand [n, k] (entries
 * < 0 are padding and skipped; at least one entry must be a class), or, when
 * cand is NULL, all n_classes classes in class order (k is then ignored).
 * Repeat until one class remains: decide the pair (L[first], L[last]) with its
 * classifier and drop the loser from the list.  The survivor goes to out[i].
 *
 * A pair's decision is exact max-wins' rule (votes.c): classifier row
 * j = p * bags + bag gives W[j] . x + bias[j], positive towards pair_a[p];
 * class pair_a[p] wins iff 2 * positives > bags, or 2 * positives == bags and
 * the summed decision values are > 0; otherwise pair_b[p] wins.
 *
 * Samples: X dense row-major [n, d] float32 when indptr is NULL; otherwise CSR
 * rows, indptr[0..n] offsets into indices (int32 column < d) and X (values).
 * Dense dot products use the fixed 32-lane order of the refine step (dot32.h,
 * bit-identical on every kernel: HSVM_KERNEL_* of hsvm_cpu.h, AVX-512 running
 * the AVX2 dot product); CSR ones sum the row's nonzeros in order, as
 * hsvm_sddmm_csr does.
 *
 * Pairs: keys == NULL means the canonical model (pair p = the p-th pair a < b
 * in a-major order).  Otherwise keys [n_pairs] are the sorted values
 * min(a,b) * n_classes + max(a,b) of the model's pairs, key_pair[r] the pair
 * id of keys[r] (the first one when a pair repeats).
 *
 * margins (may be NULL): [n, steps] with steps = k - 1 (cand given) or
 * n_classes - 1; entry (i, t) receives the bag-mean decision value of the
 * t-th pair evaluated for sample i, signed towards that pair's winner.
 * Entries of steps a row does not take are left untouched.
 * counters (may be NULL): counters[0] += pair decisions evaluated (one per
 * sample and step), counters[1] += pair rows fetched (one per group of samples
 * sharing a pair at a step; each fetch reads the pair's bags rows of W).
 *
 * Returns 0, -1 for a row without candidates or a class out of range, -2
 * when out of memory, -3 when the model has no classifier for a pair met, or
 * hsvm_resolve_kernel's negative code when the kernel cannot run. */
int hsvm_dag_predict(const float *X, const int64_t *indptr, const int32_t *indices,
                     int64_t n, int64_t d,
                     const float *W, const float *bias, int32_t bags, int64_t n_pairs,
                     const int32_t *pair_a, const int32_t *pair_b, int32_t n_classes,
                     const int64_t *keys, const int32_t *key_pair,
                     const int32_t *cand, int64_t k,
                     int32_t *out, float *margins, int64_t *counters, int32_t kernel);

#endif
