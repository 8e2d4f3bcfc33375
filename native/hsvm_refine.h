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

/* The same for cells sorted by sample (cx nondecreasing; cw < n_rows), in
 * tiles of `tile` consecutive samples: within a tile the cells are grouped by
 * classifier row, so a tile small enough for the cache keeps its samples there
 * while the rows it needs stream past, and a row shared by two cells is read
 * once for both.  Same bits as hsvm_sddmm_dense for every cell and tile.
 * Returns 0, -1 for cells out of order or range, -2 when out of memory, or
 * hsvm_resolve_kernel's negative code. */
int hsvm_sddmm_tiled(const float *X, const float *W, const float *bias, int64_t d,
                     const int64_t *cx, const int64_t *cw, int64_t ncells, int64_t n_rows,
                     int64_t tile, float *out, int32_t kernel);

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
