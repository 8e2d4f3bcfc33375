/* The primal form of the cross-validation path (cvpath.c), once per type of
 * the rows' column indices: cvpath.c defines CV_INDEX (uint16_t or int32_t)
 * and CV_NAME(x) (x with a suffix) and includes this file for each.  Rows
 * with fewer than 65,536 columns are read with 16-bit indices and, always,
 * float32 values: 6 bytes per non-zero instead of 12, which made a C step
 * on fashion-mnist-20k (784 columns, 390 non-zeros per row) about 10%
 * faster; the arithmetic stays double. */

/* Four partial sums (non-zero k of the row to sum k mod 4, then
 * (s0 + s1) + (s2 + s3)): one chain of additions waited on each addition's
 * latency, and this product is most of a pass and of the held-out votes.
 * A fixed order in plain C, so every machine gives the same bits. */
static inline double CV_NAME(sparse_dot)(const double *w, int64_t ws, const int64_t *indptr,
                                         const CV_INDEX *indices, const float *data, int64_t r)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t k = indptr[r];
    const int64_t end = indptr[r + 1];
    for (; k + 4 <= end; k += 4) {
        s0 += w[(int64_t)indices[k] * ws] * (double)data[k];
        s1 += w[(int64_t)indices[k + 1] * ws] * (double)data[k + 1];
        s2 += w[(int64_t)indices[k + 2] * ws] * (double)data[k + 2];
        s3 += w[(int64_t)indices[k + 3] * ws] * (double)data[k + 3];
    }
    if (k < end)
        s0 += w[(int64_t)indices[k] * ws] * (double)data[k];
    if (k + 1 < end)
        s1 += w[(int64_t)indices[k + 1] * ws] * (double)data[k + 1];
    if (k + 2 < end)
        s2 += w[(int64_t)indices[k + 2] * ws] * (double)data[k + 2];
    return (s0 + s1) + (s2 + s3);
}

static inline void CV_NAME(sparse_axpy)(double c, double *w, int64_t ws, const int64_t *indptr,
                                        const CV_INDEX *indices, const float *data, int64_t r)
{
    for (int64_t k = indptr[r]; k < indptr[r + 1]; k++)
        w[(int64_t)indices[k] * ws] += c * (double)data[k];
}

/* The sparse rows' operations for dcd_primal: w is a pair's lane of a
 * zeroed block of CV_LANES pairs' weights (w[j * CV_LANES], the bias
 * feature's at j = d).  Solved in place, the weights are where the held-out
 * products read them; copying them there would touch d + 1 cache lines per
 * pair -- as much as the products on sparse rows of many columns
 * (reuters-r52). */
typedef struct {
    const int64_t *indptr;
    const CV_INDEX *indices;
    const float *data;
} CV_NAME(csr_rows);

static inline double CV_NAME(lane_dot)(const void *rows, int64_t r, const double *w)
{
    const CV_NAME(csr_rows) *m = rows;
    return CV_NAME(sparse_dot)(w, CV_LANES, m->indptr, m->indices, m->data, r);
}

static inline void CV_NAME(lane_axpy)(const void *rows, int64_t r, double c, double *w)
{
    const CV_NAME(csr_rows) *m = rows;
    CV_NAME(sparse_axpy)(c, w, CV_LANES, m->indptr, m->indices, m->data, r);
}

static int64_t CV_NAME(solve_primal)(const CV_NAME(csr_rows) *m, int32_t d, const double *sqnorm, const int64_t *rows,
                                     const double *y, int64_t l, double *alpha, double *w, double *qd,
                                     int64_t *index, double bias, const dual_box *box, double eps,
                                     int32_t max_iter, double *wsq, uint64_t *rng, int64_t *capped)
{
    const row_ops ops = {m, CV_NAME(lane_dot), CV_NAME(lane_axpy), NULL};
    return dcd_primal(ops, sqnorm, rows, y, l, alpha, w, w + (int64_t)d * CV_LANES, 1, 0, wsq, qd, index, bias, box,
                      eps, max_iter, rng, capped);
}

/* The held-out decisions of a block of CV_LANES pairs on row r: Wb holds
 * their weights interleaved (Wb[j * CV_LANES + q] = w_q[j]), and lane q's
 * product is summed exactly as sparse_dot sums it (four partial sums by
 * non-zero position, then (s0 + s1) + (s2 + s3)), so the decisions are
 * bit-identical to one sparse_dot per pair on every code path -- but a
 * non-zero's value and index are read once for all the pairs, and the
 * pairs' weights of one column are one contiguous load. */
#define CV_BLOCK_DOT_BODY(COL)                                                       \
    int64_t k = indptr[r];                                                           \
    const int64_t end = indptr[r + 1];                                               \
    for (; k + 4 <= end; k += 4)                                                     \
        for (int q = 0; q < CV_LANES; q++) {                                         \
            s0[q] += Wb[COL(k) * CV_LANES + q] * (double)data[k];                    \
            s1[q] += Wb[COL(k + 1) * CV_LANES + q] * (double)data[k + 1];            \
            s2[q] += Wb[COL(k + 2) * CV_LANES + q] * (double)data[k + 2];            \
            s3[q] += Wb[COL(k + 3) * CV_LANES + q] * (double)data[k + 3];            \
        }                                                                            \
    for (int q = 0; q < CV_LANES; q++) {                                             \
        if (k < end)                                                                 \
            s0[q] += Wb[COL(k) * CV_LANES + q] * (double)data[k];                    \
        if (k + 1 < end)                                                             \
            s1[q] += Wb[COL(k + 1) * CV_LANES + q] * (double)data[k + 1];            \
        if (k + 2 < end)                                                             \
            s2[q] += Wb[COL(k + 2) * CV_LANES + q] * (double)data[k + 2];            \
        out[q] = (s0[q] + s1[q]) + (s2[q] + s3[q]);                                  \
    }

/* The column of non-zero k: its feature (block_dot), or the row its
 * feature was given in a block of a few columns (slot_dot, below). */
#define CV_PLAIN_COL(k) ((int64_t)indices[k])
#define CV_SLOT_COL(k) ((int64_t)slot[indices[k]])

static void CV_NAME(block_dot_portable)(const double *Wb, const int64_t *indptr, const CV_INDEX *indices,
                                         const float *data, int64_t r, double *out)
{
    double s0[CV_LANES] = {0}, s1[CV_LANES] = {0}, s2[CV_LANES] = {0}, s3[CV_LANES] = {0};
    CV_BLOCK_DOT_BODY(CV_PLAIN_COL)
}

#if CV_X86
/* The same loops compiled for wider registers: each lane's operations and
 * their order are the portable ones (no fused multiply-add: -ffp-contract=off),
 * only more lanes per instruction. */
__attribute__((target("avx2"))) static void CV_NAME(block_dot_avx2)(const double *Wb, const int64_t *indptr,
                                                                     const CV_INDEX *indices, const float *data,
                                                                     int64_t r, double *out)
{
    double s0[CV_LANES] = {0}, s1[CV_LANES] = {0}, s2[CV_LANES] = {0}, s3[CV_LANES] = {0};
    CV_BLOCK_DOT_BODY(CV_PLAIN_COL)
}

__attribute__((target("avx512f"))) static void CV_NAME(block_dot_avx512)(const double *Wb, const int64_t *indptr,
                                                                          const CV_INDEX *indices, const float *data,
                                                                          int64_t r, double *out)
{
    double s0[CV_LANES] = {0}, s1[CV_LANES] = {0}, s2[CV_LANES] = {0}, s3[CV_LANES] = {0};
    CV_BLOCK_DOT_BODY(CV_PLAIN_COL)
}
#endif

/* block_dot on blocks whose rows are the columns' slots (Wb[slot[j] *
 * CV_LANES + q]; absent columns at a zero row): the same products in the
 * same order, so the same bits. */
static void CV_NAME(slot_dot_portable)(const double *Wb, const int32_t *slot, const int64_t *indptr,
                                        const CV_INDEX *indices, const float *data, int64_t r, double *out)
{
    double s0[CV_LANES] = {0}, s1[CV_LANES] = {0}, s2[CV_LANES] = {0}, s3[CV_LANES] = {0};
    CV_BLOCK_DOT_BODY(CV_SLOT_COL)
}

#if CV_X86
__attribute__((target("avx2"))) static void CV_NAME(slot_dot_avx2)(const double *Wb, const int32_t *slot,
                                                                    const int64_t *indptr, const CV_INDEX *indices,
                                                                    const float *data, int64_t r, double *out)
{
    double s0[CV_LANES] = {0}, s1[CV_LANES] = {0}, s2[CV_LANES] = {0}, s3[CV_LANES] = {0};
    CV_BLOCK_DOT_BODY(CV_SLOT_COL)
}

__attribute__((target("avx512f"))) static void CV_NAME(slot_dot_avx512)(const double *Wb, const int32_t *slot,
                                                                         const int64_t *indptr,
                                                                         const CV_INDEX *indices, const float *data,
                                                                         int64_t r, double *out)
{
    double s0[CV_LANES] = {0}, s1[CV_LANES] = {0}, s2[CV_LANES] = {0}, s3[CV_LANES] = {0};
    CV_BLOCK_DOT_BODY(CV_SLOT_COL)
}
#endif
#undef CV_BLOCK_DOT_BODY
#undef CV_PLAIN_COL
#undef CV_SLOT_COL

typedef void (*CV_NAME(slot_dot_fn))(const double *, const int32_t *, const int64_t *, const CV_INDEX *,
                                      const float *, int64_t, double *);

static CV_NAME(slot_dot_fn) CV_NAME(slot_dot_for)(int32_t kernel)
{
    return CV_ISA_PICK(slot_dot, kernel);
}

typedef void (*CV_NAME(block_dot_fn))(const double *, const int64_t *, const CV_INDEX *, const float *, int64_t,
                                       double *);

static CV_NAME(block_dot_fn) CV_NAME(block_dot_for)(int32_t kernel)
{
    return CV_ISA_PICK(block_dot, kernel);
}

/* hsvm_cv_products (tests): out[(r - r0) * n_pairs + p] = W[p].x_r for the
 * n_pairs rows of W [n_pairs, d + 1], by blocks of lanes or pair by pair. */
static void CV_NAME(products)(const double *W, int64_t n_pairs, int32_t d, const int64_t *indptr,
                              const CV_INDEX *indices, const float *data, int64_t r0, int64_t r1, int32_t kernel,
                              int32_t blocked, double *Wb, double *out)
{
    const CV_NAME(block_dot_fn) dot = CV_NAME(block_dot_for)(kernel);
    for (int64_t q0 = 0; q0 < n_pairs; q0 += CV_LANES) {
        const int64_t nq = n_pairs - q0 < CV_LANES ? n_pairs - q0 : CV_LANES;
        memset(Wb, 0, sizeof(double) * ((size_t)d + 1) * CV_LANES);
        for (int64_t q = 0; q < nq; q++)
            for (int64_t j = 0; j <= d; j++)
                Wb[j * CV_LANES + q] = W[(q0 + q) * ((int64_t)d + 1) + j];
        double lanes[CV_LANES];
        for (int64_t r = r0; r < r1; r++) {
            if (blocked)
                dot(Wb, indptr, indices, data, r, lanes);
            for (int64_t q = 0; q < nq; q++)
                out[(r - r0) * n_pairs + q0 + q] =
                    blocked ? lanes[q]
                            : CV_NAME(sparse_dot)(W + (q0 + q) * ((int64_t)d + 1), 1, indptr, indices, data, r);
        }
    }
}

/* The non-zeros of rows[0..l). */
static int64_t CV_NAME(rows_nnz)(const int64_t *indptr, const int64_t *rows, int64_t l)
{
    int64_t nnz = 0;
    for (int64_t i = 0; i < l; i++)
        nnz += indptr[rows[i] + 1] - indptr[rows[i]];
    return nnz;
}

/* Zeroes the CV_LANES weights W[j * CV_LANES ..] of every column j of
 * rows[0..l): all a block's pairs can have written (their weights are sums of
 * their rows, the bias feature's apart).  On wide sparse rows clearing the
 * block this way instead of whole cost a fraction: at a million columns a
 * memset of the block was 64 MB per block of pairs and fold, 2 s a C step
 * whatever C was (K = 20). */
static void CV_NAME(clear_rows)(double *W, const int64_t *indptr, const CV_INDEX *indices, const int64_t *rows,
                                int64_t l)
{
    for (int64_t i = 0; i < l; i++)
        for (int64_t k = indptr[rows[i]]; k < indptr[rows[i] + 1]; k++)
            memset(W + (int64_t)indices[k] * CV_LANES, 0, sizeof(double) * CV_LANES);
}

/* Pairs p0..p1 of one fold, CV_LANES at a time: each solved in its own lane
 * of the block Wb (zero on entry), then the held-out rows' votes and
 * fixed-point confidences of the block's pairs added class-major
 * (votes[c * nh + x - h0]); the block is zeroed again after, whole or by the
 * pairs' columns, whichever writes less, so it is zero on return. */
static int64_t CV_NAME(pairs)(const int64_t *indptr, const CV_INDEX *indices, const float *data, int32_t d,
                              const double *sqnorm, const int64_t *block, int32_t F, int32_t K, int32_t fold,
                              const int32_t *pair_a, const int32_t *pair_b, int64_t p0, int64_t p1,
                              const int64_t *alpha_off, double *alpha, const uint64_t *seeds, double bias,
                              double C, const double *class_weight, int32_t loss, double eps, int32_t max_iter,
                              int64_t *rows, double *y,
                              double *qd, int64_t *index, double *Wb, double *ray, int32_t kernel, int32_t *votes,
                              int64_t *conf, int64_t *capped)
{
    const int64_t h0 = block[(int64_t)fold * K], h1 = block[(int64_t)(fold + 1) * K], nh = h1 - h0;
    const CV_NAME(block_dot_fn) dot = CV_NAME(block_dot_for)(kernel);
    const CV_NAME(csr_rows) m = {indptr, indices, data};
    int64_t total = 0;
    for (int64_t q0 = p0; q0 < p1; q0 += CV_LANES) {
        const int64_t nq = p1 - q0 < CV_LANES ? p1 - q0 : CV_LANES;
        int64_t nnz = 0;
        for (int64_t q = 0; q < nq; q++) {
            const int64_t p = q0 + q;
            const int64_t l = pair_rows(block, F, K, fold, pair_a[p], pair_b[p], rows, y);
            nnz += CV_NAME(rows_nnz)(indptr, rows, l);
            uint64_t rng = seeds[p];
            const dual_box box = pair_box(C, loss, class_weight, pair_a[p], pair_b[p]);
            total += CV_NAME(solve_primal)(&m, d, sqnorm, rows, y, l, alpha + alpha_off[p], Wb + q, qd, index, bias,
                                           &box, eps, max_iter, ray ? ray + p : NULL, &rng, capped);
        }
        const double *wbias = Wb + (int64_t)d * CV_LANES;
        double out[CV_LANES];
        int live[CV_LANES];
        for (int64_t q = 0; q < nq; q++)
            live[q] = pair_trained(block, F, K, fold, pair_a[q0 + q], pair_b[q0 + q]);
        for (int64_t x = h0; x < h1; x++) {
            dot(Wb, indptr, indices, data, x, out);
            for (int64_t q = 0; q < nq; q++)
                if (live[q])
                    vote(out[q] + wbias[q] * bias, pair_a[q0 + q], pair_b[q0 + q], nh, votes + (x - h0),
                         conf + (x - h0));
        }
        if (2 * nnz < (int64_t)d + 1) {
            for (int64_t q = 0; q < nq; q++) {
                const int64_t l = pair_rows(block, F, K, fold, pair_a[q0 + q], pair_b[q0 + q], rows, y);
                CV_NAME(clear_rows)(Wb, indptr, indices, rows, l);
            }
            memset(Wb + (int64_t)d * CV_LANES, 0, sizeof(double) * CV_LANES);
        } else {
            memset(Wb, 0, sizeof(double) * ((size_t)d + 1) * CV_LANES);
        }
    }
    return total;
}
