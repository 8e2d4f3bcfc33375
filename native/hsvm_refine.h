/* Exact decision values for a sparse set of (sample, classifier) cells: the
 * refine step's sampled dense-dense product. */
#ifndef HSVM_REFINE_H
#define HSVM_REFINE_H
#include <stdint.h>

/* out[c] = X[cx[c]] . W[cw[c]] + bias[cw[c]] for c < ncells, X dense [*, d]
 * row-major, W [*, d] row-major.  Cells are visited in the order given by
 * `order` (NULL: 0, 1, ...); callers group them by cw so each classifier row
 * is streamed once per batch.  Every path (kernel: HSVM_KERNEL_* of
 * hsvm_cpu.h; AVX-512 runs the AVX2 dot product) sums in the same order -- 32
 * interleaved float partial sums of separately rounded products, then a fixed
 * tree -- so results are bit-identical on every CPU.
 * Returns 0, or hsvm_resolve_kernel's negative code if the kernel cannot run. */
int hsvm_sddmm_dense(const float *X, const float *W, const float *bias, int64_t d,
                     const int64_t *cx, const int64_t *cw, const int64_t *order, int64_t ncells,
                     float *out, int32_t kernel);

/* The refine step for dense samples X [n, d]: each sample i's kept classes
 * are S[i, 0..nv) (S [n, k] row-major, strictly increasing; nv = nvalid[i],
 * or k when nvalid is NULL), and its cells are the classifiers of the
 * canonical pairs (u, w), u < w < nv, of those positions: pair_id[a * K + b]
 * (-1: none) for classes a < b, rows pair_id * bags + g of W [n_rows, d].
 * dec [n, q, bags], q = k(k-1)/2 (optional; cells of unused pairs are left
 * as they are) receives X[i] . W[row] + bias[row] with the bits of
 * hsvm_sddmm_dense; votes and conf [n, K] (optional, both or neither) the
 * counts and sums hsvm_cell_votes gives for those cells, orientation from
 * pair_sign[a * K + b] (-1: the model's classifier is (b, a)); with
 * by_position they are [n, k] instead, entry u the count and sum of class
 * S[i, u] (0 from nv on): the same numbers without a row of K per sample,
 * which a caller after the winner alone does not need.  Returns 0,
 * -1 for a bad argument or S entry, -2 when a needed pair has no classifier,
 * -3 when out of memory, or hsvm_resolve_kernel's negative code.  The
 * samples refined are order[0..m) (distinct rows; NULL: all n, in row order),
 * taken in tiles of `tile` (1..128) in that order: samples that kept the
 * same classes next to each other share the reads of their classifier rows.
 * For a model whose classifier ids grow along the canonical pair order, all
 * tiles take their pairs among chunk_bytes of W's rows (0: a megabyte)
 * before the next, so W is read from memory about once.  Every order and tile gives the same
 * results for each sample; rows not in order are untouched. */
int hsvm_refine_kept(const float *X, int64_t n, int64_t d, const int64_t *order, int64_t m, int64_t tile,
                     const float *W, const float *bias, int64_t n_rows, const int64_t *S, int64_t k,
                     const int64_t *nvalid, const int64_t *pair_id,
                     const int8_t *pair_sign, int32_t bags, int32_t n_classes, int32_t *votes, double *conf,
                     int32_t by_position, float *dec, int64_t chunk_bytes, int32_t kernel);

/* The same with X in CSR form (indptr int64, indices int32, data float32). */
void hsvm_sddmm_csr(const int64_t *indptr, const int32_t *indices, const float *data,
                    const float *W, const float *bias, int64_t d,
                    const int64_t *cx, const int64_t *cw, const int64_t *order, int64_t ncells,
                    float *out);

/* A stable counting sort of cell indices by key (0 <= key < n_keys): order
 * receives the cell indices grouped by key in increasing key order.  Returns
 * 0, -1 for a key out of range, -2 when out of memory. */
int hsvm_group_by_key(const int64_t *key, int64_t n, int64_t n_keys, int64_t *order);

#endif
