/* Dual coordinate descent (Hsieh, Chang, Lin, Keerthi & Sundararajan, ICML
 * 2008; LIBLINEAR's solve_l2r_l1l2_svc) on packed sign codes.
 *
 * Problem (LIBLINEAR -s 1 / -s 3 with -B 1): for x_i in R^(k+1), the k code
 * features +-1/sqrt(k) and a constant 1,
 *     min_alpha  f(alpha) = 1/2 alpha^T Qbar alpha - e^T alpha,
 *     0 <= alpha_i <= U,   Qbar = Q + D,   Q_ij = y_i y_j x_i.x_j,
 * with U = C, D = 0 for the L1 loss and U = inf, D_ii = 1/(2C) for the L2
 * loss; w = sum_i alpha_i y_i x_i.  One coordinate step needs w.x_i and
 * w += d x_i.  Writing the k code weights as w_j = u_j + s (u touched only
 * at set bits, s a shared offset) and keeping U = sum_j u_j,
 *     w.x_i = v (2 sum_{j set} u_j - U + (2 c_i - k) s) + w_bias,
 *     w += d x_i  <=>  s -= d v,  u_j += 2 d v (j set),  U += 2 d v c_i,
 * where v = 1/sqrt(k) and c_i is the number of set bits: each step reads and
 * writes only the set bits.  s is folded into u after every outer iteration
 * (and U recomputed) so no large offset builds up.
 *
 * Reproducibility: sums over set bits use 64 partial sums (partial p collects
 * bit positions p mod 64, words in order) added in index order at the end;
 * the AVX-512 and AVX2 paths keep exactly these partials, so every path gives
 * the same bits.  Coordinates are visited in LIBLINEAR's order: a random
 * permutation per outer iteration from rand() (glibc's generator, reproduced
 * here), so with the same seed as srand() before LIBLINEAR's train the two
 * solvers take the same steps up to rounding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hsvm_dcd.h"
#include "hsvm_cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HSVM_DCD_X86 1
#endif

/* ------------------------------------------------------------ glibc rand() */

typedef struct {
    int32_t r[34];
    int f, b;
} glibc_rand;

static void glibc_srand(glibc_rand *g, uint32_t seed)
{
    /* srandom_r for TYPE_3: degree 31, separation 3, 310 discarded outputs. */
    int32_t word = (int32_t)(seed == 0 ? 1 : seed);
    g->r[0] = word;
    for (int i = 1; i < 31; i++) {
        int64_t hi = word / 127773;
        int64_t lo = word % 127773;
        int64_t t = 16807 * lo - 2836 * hi;
        if (t < 0)
            t += 2147483647;
        word = (int32_t)t;
        g->r[i] = word;
    }
    g->f = 3;
    g->b = 0;
    for (int i = 0; i < 310; i++) {
        uint32_t val = (uint32_t)g->r[g->f] + (uint32_t)g->r[g->b];
        g->r[g->f] = (int32_t)val;
        g->f = g->f + 1 == 31 ? 0 : g->f + 1;
        g->b = g->b + 1 == 31 ? 0 : g->b + 1;
    }
}

static int32_t glibc_next(glibc_rand *g)
{
    uint32_t val = (uint32_t)g->r[g->f] + (uint32_t)g->r[g->b];
    g->r[g->f] = (int32_t)val;
    g->f = g->f + 1 == 31 ? 0 : g->f + 1;
    g->b = g->b + 1 == 31 ? 0 : g->b + 1;
    return (int32_t)(val >> 1);
}

void hsvm_glibc_rand_stream(uint32_t seed, int32_t *out, int64_t count)
{
    glibc_rand g;
    glibc_srand(&g, seed);
    for (int64_t i = 0; i < count; i++)
        out[i] = glibc_next(&g);
}

/* --------------------------------------------------- set-bit primitives */

static double sum_partials(const double *acc)
{
    double s = 0.0;
    for (int p = 0; p < 64; p++)
        s += acc[p];
    return s;
}

/* The accumulators never hold -0.0 (they start at +0.0, u never becomes -0.0:
 * +0 + -0 = +0 and x + -x = +0), so adding +0.0 where a bit is clear equals
 * skipping it: the masked and the and-masked SIMD forms agree bit for bit. */

static double dot_set_portable(const uint64_t *c, const double *u, int64_t words)
{
    double acc[64];
    for (int p = 0; p < 64; p++)
        acc[p] = 0.0;
    for (int64_t q = 0; q < words; q++) {
        uint64_t w = c[q];
        const double *uq = u + 64 * q;
        while (w) {
            int t = __builtin_ctzll(w);
            acc[t] += uq[t];
            w &= w - 1;
        }
    }
    return sum_partials(acc);
}

static void add_set_portable(const uint64_t *c, double *u, int64_t words, double delta)
{
    for (int64_t q = 0; q < words; q++) {
        uint64_t w = c[q];
        double *uq = u + 64 * q;
        while (w) {
            int t = __builtin_ctzll(w);
            uq[t] += delta;
            w &= w - 1;
        }
    }
}

#ifdef HSVM_DCD_X86
__attribute__((target("avx512f")))
static double dot_set_avx512(const uint64_t *c, const double *u, int64_t words)
{
    __m512d a[8];
    for (int k = 0; k < 8; k++)
        a[k] = _mm512_setzero_pd();
    for (int64_t q = 0; q < words; q++) {
        const uint64_t w = c[q];
        const double *uq = u + 64 * q;
        for (int k = 0; k < 8; k++)
            a[k] = _mm512_mask_add_pd(a[k], (__mmask8)(w >> (8 * k)), a[k], _mm512_loadu_pd(uq + 8 * k));
    }
    double acc[64];
    for (int k = 0; k < 8; k++)
        _mm512_storeu_pd(acc + 8 * k, a[k]);
    return sum_partials(acc);
}

__attribute__((target("avx512f")))
static void add_set_avx512(const uint64_t *c, double *u, int64_t words, double delta)
{
    const __m512d d = _mm512_set1_pd(delta);
    for (int64_t q = 0; q < words; q++) {
        const uint64_t w = c[q];
        if (!w)
            continue;
        double *uq = u + 64 * q;
        for (int k = 0; k < 8; k++) {
            const __mmask8 m = (__mmask8)(w >> (8 * k));
            __m512d x = _mm512_loadu_pd(uq + 8 * k);
            _mm512_mask_storeu_pd(uq + 8 * k, m, _mm512_add_pd(x, d));
        }
    }
}

/* Lane masks for 4 bits: all ones where the bit is set. */
static const uint64_t nibble_masks[16][4] __attribute__((aligned(32))) = {
#define B(x) ((x) ? ~0ULL : 0ULL)
#define ROW(n) {B((n) & 1), B((n) & 2), B((n) & 4), B((n) & 8)}
    ROW(0), ROW(1), ROW(2), ROW(3), ROW(4), ROW(5), ROW(6), ROW(7),
    ROW(8), ROW(9), ROW(10), ROW(11), ROW(12), ROW(13), ROW(14), ROW(15)
#undef ROW
#undef B
};

/* Two passes over the words (bit positions 0..31, then 32..63) so the eight
 * accumulators stay in registers; each partial still runs over the words in
 * order. */
__attribute__((target("avx2")))
static double dot_set_avx2(const uint64_t *c, const double *u, int64_t words)
{
    double acc[64];
    for (int half = 0; half < 2; half++) {
        __m256d a[8];
        for (int k = 0; k < 8; k++)
            a[k] = _mm256_setzero_pd();
        for (int64_t q = 0; q < words; q++) {
            const uint64_t w = c[q] >> (32 * half);
            const double *uq = u + 64 * q + 32 * half;
            for (int k = 0; k < 8; k++) {
                const __m256d m = _mm256_load_pd((const double *)nibble_masks[(w >> (4 * k)) & 15]);
                a[k] = _mm256_add_pd(a[k], _mm256_and_pd(m, _mm256_loadu_pd(uq + 4 * k)));
            }
        }
        for (int k = 0; k < 8; k++)
            _mm256_storeu_pd(acc + 32 * half + 4 * k, a[k]);
    }
    return sum_partials(acc);
}

__attribute__((target("avx2")))
static void add_set_avx2(const uint64_t *c, double *u, int64_t words, double delta)
{
    const __m256d d = _mm256_set1_pd(delta);
    for (int64_t q = 0; q < words; q++) {
        const uint64_t w = c[q];
        if (!w)
            continue;
        double *uq = u + 64 * q;
        for (int k = 0; k < 16; k++) {
            const __m256d m = _mm256_load_pd((const double *)nibble_masks[(w >> (4 * k)) & 15]);
            _mm256_storeu_pd(uq + 4 * k, _mm256_add_pd(_mm256_loadu_pd(uq + 4 * k), _mm256_and_pd(m, d)));
        }
    }
}
#endif

typedef double (*dot_fn)(const uint64_t *, const double *, int64_t);
typedef void (*add_fn)(const uint64_t *, double *, int64_t, double);

/* ------------------------------------------------------------------ solver */

#define DCD_INF HUGE_VAL

int32_t hsvm_dcd_bits(const uint64_t *codes, int64_t stride, int64_t words, const int64_t *rows, const int8_t *y,
                      int64_t l, int32_t l1loss, double Cp, double Cn, double eps, int32_t max_iter, uint32_t seed,
                      int32_t kernel, double *w, double *bias, double *alpha, hsvm_dcd_result *result)
{
    if (words <= 0 || stride < words || l < 0 || l > 2147483647 || !(Cp > 0) || !(Cn > 0) || !(eps > 0))
        return -1;
    dot_fn dot = dot_set_portable;
    add_fn add = add_set_portable;
#ifdef HSVM_DCD_X86
    if (kernel == HSVM_KERNEL_AVX512) {
        dot = dot_set_avx512;
        add = add_set_avx512;
    } else if (kernel == HSVM_KERNEL_AVX2) {
        dot = dot_set_avx2;
        add = add_set_avx2;
    }
#endif
    const int64_t k = 64 * words;
    const double v = 1.0 / sqrt((double)k);
    double *u = calloc((size_t)k, sizeof(double));
    int32_t *index = malloc((size_t)(l > 0 ? l : 1) * sizeof(int32_t));
    int32_t *setbits = malloc((size_t)(l > 0 ? l : 1) * sizeof(int32_t));
    if (!u || !index || !setbits) {
        free(u);
        free(index);
        free(setbits);
        return -2;
    }

    double diag[3] = {0.5 / Cn, 0, 0.5 / Cp};
    double upper[3] = {DCD_INF, 0, DCD_INF};
    if (l1loss) {
        diag[0] = diag[2] = 0;
        upper[0] = Cn;
        upper[2] = Cp;
    }
    /* ||x_i||^2 as LIBLINEAR sums it over its feature nodes: k times v*v, then
     * the bias node's 1*1; the same for every sample. */
    double xnorm2 = 0.0;
    for (int64_t j = 0; j < k; j++)
        xnorm2 += v * v;
    xnorm2 += 1.0;
    for (int64_t i = 0; i < l; i++) {
        const uint64_t *ci = codes + rows[i] * stride;
        int32_t c = 0;
        for (int64_t q = 0; q < words; q++)
            c += __builtin_popcountll(ci[q]);
        setbits[i] = c;
        alpha[i] = 0.0;
        index[i] = (int32_t)i;
    }
    double s = 0.0, U = 0.0, wb = 0.0;
    glibc_rand g;
    glibc_srand(&g, seed);

    int64_t active = l;
    double PGmax_old = DCD_INF, PGmin_old = -DCD_INF;
    int32_t iter = 0;
    while (iter < max_iter) {
        double PGmax_new = -DCD_INF, PGmin_new = DCD_INF;
        for (int64_t i = 0; i < active; i++) {
            int64_t j = i + glibc_next(&g) % (active - i);
            int32_t t = index[i];
            index[i] = index[j];
            index[j] = t;
        }
        for (int64_t sidx = 0; sidx < active; sidx++) {
            const int32_t i = index[sidx];
            const double yi = y[i] > 0 ? 1.0 : -1.0;
            const int gi = y[i] > 0 ? 2 : 0;
            const uint64_t *ci = codes + rows[i] * stride;
            const double S = dot(ci, u, words);
            const double wx = v * (2.0 * S - U + (double)(2 * (int64_t)setbits[i] - k) * s) + wb;
            double G = yi * wx - 1.0;
            const double C = upper[gi];
            G += alpha[i] * diag[gi];
            double PG = 0.0;
            if (alpha[i] == 0) {
                if (G > PGmax_old) {
                    active--;
                    index[sidx] = index[active];
                    index[active] = i;
                    sidx--;
                    continue;
                } else if (G < 0)
                    PG = G;
            } else if (alpha[i] == C) {
                if (G < PGmin_old) {
                    active--;
                    index[sidx] = index[active];
                    index[active] = i;
                    sidx--;
                    continue;
                } else if (G > 0)
                    PG = G;
            } else
                PG = G;
            if (PG > PGmax_new)
                PGmax_new = PG;
            if (PG < PGmin_new)
                PGmin_new = PG;
            if (fabs(PG) > 1.0e-12) {
                const double old = alpha[i];
                double a = old - G / (diag[gi] + xnorm2);
                a = a < 0.0 ? 0.0 : a;
                alpha[i] = a < C ? a : C;
                const double d = (alpha[i] - old) * yi;
                const double dv = d * v;
                s -= dv;
                add(ci, u, words, 2.0 * dv);
                U += 2.0 * dv * (double)setbits[i];
                wb += d;
            }
        }
        /* Fold the shared offset into u and recompute U in index order. */
        U = 0.0;
        for (int64_t j = 0; j < k; j++) {
            u[j] += s;
            U += u[j];
        }
        s = 0.0;

        iter++;
        if (PGmax_new - PGmin_new <= eps && fabs(PGmax_new) <= eps && fabs(PGmin_new) <= eps) {
            if (active == l)
                break;
            active = l;
            PGmax_old = DCD_INF;
            PGmin_old = -DCD_INF;
            continue;
        }
        PGmax_old = PGmax_new;
        PGmin_old = PGmin_new;
        if (PGmax_old <= 0)
            PGmax_old = DCD_INF;
        if (PGmin_old >= 0)
            PGmin_old = -DCD_INF;
    }

    double obj = 0.0;
    int32_t nsv = 0;
    for (int64_t j = 0; j < k; j++) {
        w[j] = u[j] + s;
        obj += w[j] * w[j];
    }
    obj += wb * wb;
    for (int64_t i = 0; i < l; i++) {
        const int gi = y[i] > 0 ? 2 : 0;
        obj += alpha[i] * (alpha[i] * diag[gi] - 2.0);
        if (alpha[i] > 0)
            nsv++;
    }
    *bias = wb;
    result->iterations = iter;
    result->n_sv = nsv;
    result->objective = obj / 2.0;
    free(u);
    free(index);
    free(setbits);
    return 0;
}
