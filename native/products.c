/* Products w.x of samples and classifiers (exact prediction's scores, the
 * class-score first stage, one-vs-rest scores) with bits that depend on the
 * sample and the classifier only.
 *
 * A BLAS sgemm may round a product differently depending on where its row
 * falls in the call (OpenBLAS's Haswell kernels treat the last rows of a
 * block, and small calls, with other instruction sequences), so a sample's
 * scores -- and the labels and probabilities read from them -- would depend
 * on the chunk, the shard or the thread it was scored in.  Here every value
 * is one chain of fused multiply-adds, acc = fma(x[k], w[k], acc) for
 * k = 0 .. d-1 from acc = +0, on every path: AVX-512, AVX2 (with FMA) and
 * portable C (fmaf, correctly rounded by the C library).
 *
 * Dense rows follow the blocking of Goto & van de Geijn ("Anatomy of
 * High-Performance Matrix Multiplication", ACM TOMS 2008): classifiers are
 * packed into panels of NR columns for a block of KC features, and a
 * micro-kernel keeps an MR x NR tile of products in registers while it runs
 * over the block; the tile goes to `out` between feature blocks and is read
 * back, which leaves the chain as it is.  Sparse rows run the chain over
 * their stored entries with vectors of classifiers from W's transpose. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hsvm_cpu.h"
#include "hsvm_products.h"
#if defined(__x86_64__) || defined(__i386__)
#define PRODUCTS_X86 1
#include <immintrin.h>
#endif

#define KC 256              /* features per block: a packed panel stays in L1 */
#define NC 2048             /* classifiers packed at once (KC x NC floats, 2 MB) */
#define MC 128              /* sample rows per pass over the packed classifiers (L2) */
#define MAX_MR 8
#define MAX_NR 32

typedef void (*tile_fn)(const float *const *a, const float *bp, int64_t kc, float *tile, int first);

/* ------------------------------------------------------------------ portable */

#define P_MR 4
#define P_NR 8

static void tile_portable(const float *const *a, const float *bp, int64_t kc, float *tile, int first)
{
    float acc[P_MR][P_NR];
    for (int r = 0; r < P_MR; r++)
        for (int c = 0; c < P_NR; c++)
            acc[r][c] = first ? 0.0f : tile[r * P_NR + c];
    for (int64_t k = 0; k < kc; k++) {
        const float *b = bp + k * P_NR;
        for (int r = 0; r < P_MR; r++) {
            const float x = a[r][k];
            for (int c = 0; c < P_NR; c++)
                acc[r][c] = fmaf(x, b[c], acc[r][c]);
        }
    }
    for (int r = 0; r < P_MR; r++)
        for (int c = 0; c < P_NR; c++)
            tile[r * P_NR + c] = acc[r][c];
}

/* ------------------------------------------------------------------ AVX2 */

#ifdef PRODUCTS_X86
#define A2_MR 6
#define A2_NR 16

/* Twelve named accumulators (an array of them is kept in memory by gcc,
 * which stores the tile on every step): 12 of the 16 ymm registers, two for
 * the panel's row, one for the broadcast. */
__attribute__((target("avx2,fma")))
static void tile_avx2(const float *const *a, const float *bp, int64_t kc, float *tile, int first)
{
#define LOAD(r, h) (first ? _mm256_setzero_ps() : _mm256_loadu_ps(tile + (r) * A2_NR + 8 * (h)))
    __m256 c00 = LOAD(0, 0), c01 = LOAD(0, 1), c10 = LOAD(1, 0), c11 = LOAD(1, 1);
    __m256 c20 = LOAD(2, 0), c21 = LOAD(2, 1), c30 = LOAD(3, 0), c31 = LOAD(3, 1);
    __m256 c40 = LOAD(4, 0), c41 = LOAD(4, 1), c50 = LOAD(5, 0), c51 = LOAD(5, 1);
#undef LOAD
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
    for (int64_t k = 0; k < kc; k++) {
        const __m256 b0 = _mm256_loadu_ps(bp + k * A2_NR), b1 = _mm256_loadu_ps(bp + k * A2_NR + 8);
        __m256 x;
#define ROW(p, u, v)                                \
        x = _mm256_broadcast_ss(p + k);             \
        u = _mm256_fmadd_ps(x, b0, u);              \
        v = _mm256_fmadd_ps(x, b1, v);
        ROW(a0, c00, c01) ROW(a1, c10, c11) ROW(a2, c20, c21) ROW(a3, c30, c31) ROW(a4, c40, c41) ROW(a5, c50, c51)
#undef ROW
    }
#define STORE(r, u, v) _mm256_storeu_ps(tile + (r) * A2_NR, u); _mm256_storeu_ps(tile + (r) * A2_NR + 8, v);
    STORE(0, c00, c01) STORE(1, c10, c11) STORE(2, c20, c21) STORE(3, c30, c31) STORE(4, c40, c41)
    STORE(5, c50, c51)
#undef STORE
}

/* ------------------------------------------------------------------ AVX-512 */

#define A5_MR 8
#define A5_NR 32

__attribute__((target("avx2,fma,avx512f")))
static void tile_avx512(const float *const *a, const float *bp, int64_t kc, float *tile, int first)
{
    __m512 c[A5_MR][2];
    for (int r = 0; r < A5_MR; r++) {
        c[r][0] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(tile + r * A5_NR);
        c[r][1] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(tile + r * A5_NR + 16);
    }
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    const float *a4 = a[4], *a5 = a[5], *a6 = a[6], *a7 = a[7];
    for (int64_t k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_loadu_ps(bp + k * A5_NR), b1 = _mm512_loadu_ps(bp + k * A5_NR + 16);
        __m512 x;
#define ROW(r, p)                                          \
        x = _mm512_set1_ps(p[k]);                           \
        c[r][0] = _mm512_fmadd_ps(x, b0, c[r][0]);          \
        c[r][1] = _mm512_fmadd_ps(x, b1, c[r][1]);
        ROW(0, a0) ROW(1, a1) ROW(2, a2) ROW(3, a3) ROW(4, a4) ROW(5, a5) ROW(6, a6) ROW(7, a7)
#undef ROW
    }
    for (int r = 0; r < A5_MR; r++) {
        _mm512_storeu_ps(tile + r * A5_NR, c[r][0]);
        _mm512_storeu_ps(tile + r * A5_NR + 16, c[r][1]);
    }
}
#endif

/* ------------------------------------------------------------------ driver */

typedef struct {
    tile_fn tile;
    int mr, nr;
} tile_kernel;

static int32_t choose(int32_t kernel, tile_kernel *t)
{
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    t->tile = tile_portable;
    t->mr = P_MR;
    t->nr = P_NR;
#ifdef PRODUCTS_X86
    /* Every AVX2 CPU hsvm meets has FMA; one without it takes the portable
     * chain, which gives the same bits. */
    if (k == HSVM_KERNEL_AVX512) {
        t->tile = tile_avx512;
        t->mr = A5_MR;
        t->nr = A5_NR;
    } else if (k == HSVM_KERNEL_AVX2 && __builtin_cpu_supports("fma")) {
        t->tile = tile_avx2;
        t->mr = A2_MR;
        t->nr = A2_NR;
    }
#endif
    return 0;
}

/* Classifiers j0 .. j0+nc-1, features k0 .. k0+kc-1, as panels of nr
 * classifiers: panel q holds kc rows of nr values (zeros past the last
 * classifier, whose products are never stored). */
static void pack(const float *W, int64_t d, int64_t j0, int64_t nc, int64_t k0, int64_t kc, int nr, float *bp)
{
    for (int64_t q = 0; q < nc; q += nr) {
        float *panel = bp + (q / nr) * kc * nr;
        const int64_t cols = nc - q < nr ? nc - q : nr;
        for (int64_t c = 0; c < cols; c++) {
            const float *w = W + (j0 + q + c) * d + k0;
            for (int64_t k = 0; k < kc; k++)
                panel[k * nr + c] = w[k];
        }
        for (int64_t c = cols; c < nr; c++)
            for (int64_t k = 0; k < kc; k++)
                panel[k * nr + c] = 0.0f;
    }
}

int32_t hsvm_products_dense(const float *X, int64_t n, int64_t d, int64_t ldx, const float *W, int64_t P,
                            float *out, int64_t ldo, int32_t kernel)
{
    tile_kernel t;
    const int32_t rc = choose(kernel, &t);
    if (rc < 0)
        return rc;
    if (n <= 0 || P <= 0)
        return 0;
    if (d <= 0) {
        for (int64_t i = 0; i < n; i++)
            memset(out + i * ldo, 0, sizeof(float) * (size_t)P);
        return 0;
    }
    const int64_t nc_max = ((NC + t.nr - 1) / t.nr) * t.nr;
    float *bp = aligned_alloc(64, sizeof(float) * (size_t)(KC * nc_max));
    float *zeros = calloc((size_t)KC, sizeof(float));
    if (!bp || !zeros) {
        free(bp);
        free(zeros);
        return HSVM_PRODUCTS_ENOMEM;
    }
    float tile[MAX_MR * MAX_NR] __attribute__((aligned(64)));
    const float *a[MAX_MR];
    for (int64_t j0 = 0; j0 < P; j0 += NC) {
        const int64_t nc = P - j0 < NC ? P - j0 : NC;
        for (int64_t k0 = 0; k0 < d; k0 += KC) {
            const int64_t kc = d - k0 < KC ? d - k0 : KC;
            const int first = k0 == 0;
            pack(W, d, j0, nc, k0, kc, t.nr, bp);
            for (int64_t i0 = 0; i0 < n; i0 += MC) {
                const int64_t mc = n - i0 < MC ? n - i0 : MC;
                for (int64_t q = 0; q < nc; q += t.nr) {
                    const float *panel = bp + (q / t.nr) * kc * t.nr;
                    const int64_t cols = nc - q < t.nr ? nc - q : t.nr;
                    for (int64_t r0 = 0; r0 < mc; r0 += t.mr) {
                        const int64_t rows = mc - r0 < t.mr ? mc - r0 : t.mr;
                        for (int r = 0; r < t.mr; r++)
                            a[r] = r < rows ? X + (i0 + r0 + r) * ldx + k0 : zeros;
                        float *o = out + (i0 + r0) * ldo + j0 + q;
                        if (!first)
                            for (int64_t r = 0; r < rows; r++)
                                memcpy(tile + r * t.nr, o + r * ldo, sizeof(float) * (size_t)cols);
                        t.tile(a, panel, kc, tile, first);
                        for (int64_t r = 0; r < rows; r++)
                            memcpy(o + r * ldo, tile + r * t.nr, sizeof(float) * (size_t)cols);
                    }
                }
            }
        }
    }
    free(bp);
    free(zeros);
    return 0;
}

/* ------------------------------------------------------------------ sparse rows */

static void csr_row_portable(const int32_t *idx, const float *val, int64_t nnz, const float *WT, int64_t P,
                             float *o)
{
    for (int64_t j = 0; j < P; j++)
        o[j] = 0.0f;
    for (int64_t e = 0; e < nnz; e++) {
        const float v = val[e];
        const float *w = WT + (int64_t)idx[e] * P;
        for (int64_t j = 0; j < P; j++)
            o[j] = fmaf(v, w[j], o[j]);
    }
}

#ifdef PRODUCTS_X86
/* 128 classifiers at a time in registers, the row's entries in order. */
__attribute__((target("avx2,fma")))
static void csr_row_avx2(const int32_t *idx, const float *val, int64_t nnz, const float *WT, int64_t P, float *o)
{
    int64_t j = 0;
    for (; j + 64 <= P; j += 64) {
        __m256 c[8];
        for (int q = 0; q < 8; q++)
            c[q] = _mm256_setzero_ps();
        for (int64_t e = 0; e < nnz; e++) {
            const __m256 v = _mm256_set1_ps(val[e]);
            const float *w = WT + (int64_t)idx[e] * P + j;
            for (int q = 0; q < 8; q++)
                c[q] = _mm256_fmadd_ps(v, _mm256_loadu_ps(w + 8 * q), c[q]);
        }
        for (int q = 0; q < 8; q++)
            _mm256_storeu_ps(o + j + 8 * q, c[q]);
    }
    for (; j < P; j++) {
        float s = 0.0f;
        for (int64_t e = 0; e < nnz; e++)
            s = fmaf(val[e], WT[(int64_t)idx[e] * P + j], s);
        o[j] = s;
    }
}

__attribute__((target("avx2,fma,avx512f")))
static void csr_row_avx512(const int32_t *idx, const float *val, int64_t nnz, const float *WT, int64_t P, float *o)
{
    int64_t j = 0;
    for (; j + 128 <= P; j += 128) {
        __m512 c[8];
        for (int q = 0; q < 8; q++)
            c[q] = _mm512_setzero_ps();
        for (int64_t e = 0; e < nnz; e++) {
            const __m512 v = _mm512_set1_ps(val[e]);
            const float *w = WT + (int64_t)idx[e] * P + j;
            for (int q = 0; q < 8; q++)
                c[q] = _mm512_fmadd_ps(v, _mm512_loadu_ps(w + 16 * q), c[q]);
        }
        for (int q = 0; q < 8; q++)
            _mm512_storeu_ps(o + j + 16 * q, c[q]);
    }
    for (; j < P; j += 16) {
        const __mmask16 m = P - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (P - j)) - 1u);
        __m512 c = _mm512_setzero_ps();
        for (int64_t e = 0; e < nnz; e++)
            c = _mm512_fmadd_ps(_mm512_set1_ps(val[e]),
                                _mm512_maskz_loadu_ps(m, WT + (int64_t)idx[e] * P + j), c);
        _mm512_mask_storeu_ps(o + j, m, c);
    }
}
#endif

int32_t hsvm_products_csr(const int64_t *indptr, const int32_t *indices, const float *data, int64_t n,
                          const float *WT, int64_t P, float *out, int64_t ldo, int32_t kernel)
{
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    void (*row)(const int32_t *, const float *, int64_t, const float *, int64_t, float *) = csr_row_portable;
#ifdef PRODUCTS_X86
    if (k == HSVM_KERNEL_AVX512)
        row = csr_row_avx512;
    else if (k == HSVM_KERNEL_AVX2 && __builtin_cpu_supports("fma"))
        row = csr_row_avx2;
#endif
    for (int64_t i = 0; i < n; i++) {
        const int64_t b = indptr[i], e = indptr[i + 1];
        row(indices + b, data + b, e - b, WT, P, out + i * ldo);
    }
    return 0;
}

/* hsvm_products_csr_direct's row: classifier j's chain over the row's entries
 * in order, fmaf (correctly rounded, as every FMA instruction is) term by
 * term; compiled with FMA where the CPU has it, a single instruction then. */
#define CSR_DIRECT_ROW()                                                        \
    for (int64_t j = 0; j < P; j++) {                                           \
        const float *w = W + j * ldw;                                           \
        float s = 0.0f;                                                         \
        for (int64_t e = 0; e < nnz; e++)                                       \
            s = fmaf(val[e], w[idx[e]], s);                                     \
        o[j] = s;                                                               \
    }

static void csr_direct_portable(const int32_t *idx, const float *val, int64_t nnz, const float *W, int64_t ldw,
                                int64_t P, float *o)
{
    CSR_DIRECT_ROW()
}

#ifdef PRODUCTS_X86
__attribute__((target("avx2,fma")))
static void csr_direct_fma(const int32_t *idx, const float *val, int64_t nnz, const float *W, int64_t ldw,
                           int64_t P, float *o)
{
    CSR_DIRECT_ROW()
}
#endif
#undef CSR_DIRECT_ROW

int32_t hsvm_products_csr_direct(const int64_t *indptr, const int32_t *indices, const float *data, int64_t n,
                                 const float *W, int64_t ldw, int64_t P, float *out, int64_t ldo, int32_t kernel)
{
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    void (*row)(const int32_t *, const float *, int64_t, const float *, int64_t, int64_t, float *) =
        csr_direct_portable;
#ifdef PRODUCTS_X86
    if ((k == HSVM_KERNEL_AVX512 || k == HSVM_KERNEL_AVX2) && __builtin_cpu_supports("fma"))
        row = csr_direct_fma;
#endif
    for (int64_t i = 0; i < n; i++) {
        const int64_t b = indptr[i], e = indptr[i + 1];
        row(indices + b, data + b, e - b, W, ldw, P, out + i * ldo);
    }
    return 0;
}
