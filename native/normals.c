/* A C twin of the numpy definition of hsvm_cli/hashing/generator.py's
 * standard_normal (tests/oracles/generator_ref.py: the same operations in the
 * same order, so the same bits), 5-11x faster: the KRSH projection
 * needs bits x landmarks normals, tens of millions, and a Gaussian projection
 * of wide data (a D x d matrix regenerated from its seed by every hashing
 * process) as many.
 *
 * The pairs are taken in batches: first the uniform pairs and which of them
 * the polar method keeps (no branch), then the kept pairs' factors
 * sqrt(-2 log(s) / s), whose log series is a long chain of dependent
 * operations -- independent from pair to pair, so they run side by side, four
 * to an AVX2 vector where the CPU has it (the same IEEE operations in the
 * same order: the same bits, whichever path, as tests check). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "hsvm_cpu.h"
#include "hsvm_normals.h"
#if defined(__x86_64__) || defined(__i386__)
#define HSVM_NORMALS_X86 1
#include <immintrin.h>
#endif

static const uint64_t GOLDEN = 0x9E3779B97F4A7C15ULL;
static const uint64_t M1 = 0xBF58476D1CE4E5B9ULL;
static const uint64_t M2 = 0x94D049BB133111EBULL;
static const double LN2 = 0.6931471805599453;
static const double SQRT_HALF = 0.7071067811865476;

static uint64_t splitmix64(uint64_t counter)
{
    uint64_t z = counter * GOLDEN + GOLDEN;
    z = (z ^ (z >> 30)) * M1;
    z = (z ^ (z >> 27)) * M2;
    return z ^ (z >> 31);
}

static double uniform_pm1(uint64_t counter, uint64_t key)
{
    /* bits < 2^53: a signed conversion, exact, without the unsigned one's branch */
    const int64_t bits = (int64_t)(splitmix64(counter + key) >> 11);
    return (double)bits * (2.0 / 9007199254740992.0) - 1.0;
}

static double series_log(double s)
{
    int e;
    double m = frexp(s, &e);
    double ed = (double)e;
    if (m < SQRT_HALF) {
        m = m * 2.0;
        ed = (double)(e - 1);
    }
    double z = (m - 1.0) / (m + 1.0);
    double z2 = z * z;
    double acc = 1.0 / 27.0;
    for (int k = 25; k > 0; k -= 2)
        acc = acc * z2 + 1.0 / (double)k;
    return 2.0 * z * acc + ed * LN2;
}

/* Uniform pair p of the stream keyed by `key`, and whether the polar method
 * keeps it (0 < s = u^2 + v^2 < 1). */
static inline int polar_pair(uint64_t p, uint64_t key, double *u, double *v, double *s)
{
    *u = uniform_pm1(2 * p, key);
    *v = uniform_pm1(2 * p + 1, key);
    *s = *u * *u + *v * *v;
    return *s > 0.0 && *s < 1.0;
}

/* f[j] = sqrt(-2 log(s[j]) / s[j]) for the kept pairs of a batch. */
static void factors_portable(const double *s, double *f, int n)
{
    for (int j = 0; j < n; j++)
        f[j] = sqrt(-2.0 * series_log(s[j]) / s[j]);
}

#ifdef HSVM_NORMALS_X86
/* factors_portable four lanes at a time, operation for operation.  frexp is
 * read from the bits (s is a positive normal double: s >= 2^-104): the
 * mantissa with the exponent of [0.5, 1), and the exponent field as a double,
 * exactly (2^52 + field built in the bits, minus 2^52). */
__attribute__((target("avx2")))
static void factors_avx2(const double *s, double *f, int n)
{
    const __m256i mant = _mm256_set1_epi64x((long long)0x800FFFFFFFFFFFFFULL);
    const __m256i half = _mm256_set1_epi64x(0x3FE0000000000000LL);
    const __m256i field = _mm256_set1_epi64x(0x7FF);
    const __m256i magic = _mm256_set1_epi64x(0x4330000000000000LL);
    const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
    const __m256d one = _mm256_set1_pd(1.0), two = _mm256_set1_pd(2.0);
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        const __m256d sv = _mm256_loadu_pd(s + j);
        const __m256i b = _mm256_castpd_si256(sv);
        __m256d m = _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(b, mant), half));
        const __m256d e = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi64(b, 52), field), magic)), two52);
        /* frexp's exponent is the field - 1022 */
        __m256d ed = _mm256_sub_pd(e, _mm256_set1_pd(1022.0));
        const __m256d low = _mm256_cmp_pd(m, _mm256_set1_pd(SQRT_HALF), _CMP_LT_OQ);
        m = _mm256_blendv_pd(m, _mm256_mul_pd(m, two), low);
        ed = _mm256_blendv_pd(ed, _mm256_sub_pd(ed, one), low);
        const __m256d z = _mm256_div_pd(_mm256_sub_pd(m, one), _mm256_add_pd(m, one));
        const __m256d z2 = _mm256_mul_pd(z, z);
        __m256d acc = _mm256_set1_pd(1.0 / 27.0);
        for (int k = 25; k > 0; k -= 2)
            acc = _mm256_add_pd(_mm256_mul_pd(acc, z2), _mm256_set1_pd(1.0 / (double)k));
        const __m256d lg = _mm256_add_pd(_mm256_mul_pd(_mm256_mul_pd(two, z), acc),
                                         _mm256_mul_pd(ed, _mm256_set1_pd(LN2)));
        _mm256_storeu_pd(f + j, _mm256_sqrt_pd(_mm256_div_pd(_mm256_mul_pd(_mm256_set1_pd(-2.0), lg), sv)));
    }
    factors_portable(s + j, f + j, n - j);
}
#endif

/* Pairs per batch: their values fit in L1. */
#define BATCH 256

/* The stream's values from uniform pair p0 on, at most `count` of them and
 * no pair at or past p1 (the whole stream: p0 = 0, p1 = UINT64_MAX):
 * element i of a span is element (values of the pairs before p0) + i of the
 * stream, so spans can be made side by side and joined in order.  Returns
 * the number of values written. */
static int64_t normal_span(uint64_t key, uint64_t p0, uint64_t p1, double *out64, float *out32, int64_t count)
{
#define STORE(x) (out64 ? (void)(out64[filled++] = (x)) : (void)(out32[filled++] = (float)(x)))
    void (*factors)(const double *, double *, int) = factors_portable;
#ifdef HSVM_NORMALS_X86
    /* An unusable HSVM_KERNEL (negative) is reported by the kernels that
     * honour it; the stream is the same on every path. */
    if (hsvm_resolve_kernel(HSVM_KERNEL_AUTO) >= HSVM_KERNEL_AVX2)
        factors = factors_avx2;
#endif
    double U[BATCH], V[BATCH], S[BATCH], F[BATCH];
    int64_t filled = 0;
    for (uint64_t p = p0; filled < count && p < p1;) {
        const int n = p1 - p < BATCH ? (int)(p1 - p) : BATCH;
        int kept = 0;
        for (int i = 0; i < n; i++) {
            double u, v, s;
            const int keep = polar_pair(p + (uint64_t)i, key, &u, &v, &s);
            U[kept] = u;
            V[kept] = v;
            S[kept] = s;
            kept += keep;
        }
        p += (uint64_t)n;
        factors(S, F, kept);
        for (int j = 0; j < kept && filled < count; j++) {
            STORE(U[j] * F[j]);
            if (filled < count)
                STORE(V[j] * F[j]);
        }
    }
    return filled;
#undef STORE
}

static uint64_t stream_key(uint64_t seed, uint64_t stream)
{
    return splitmix64(seed ^ splitmix64(stream));
}

int64_t hsvm_standard_normal_span(uint64_t seed, uint64_t stream, uint64_t p0, uint64_t p1, double *out,
                                  int64_t count)
{
    return normal_span(stream_key(seed, stream), p0, p1, out, NULL, count);
}

int64_t hsvm_standard_normal_span_f32(uint64_t seed, uint64_t stream, uint64_t p0, uint64_t p1, float *out,
                                      int64_t count)
{
    return normal_span(stream_key(seed, stream), p0, p1, NULL, out, count);
}

/* The stream into doubles (out64) or rounded to float32 (out32: the bits of
 * (float) of each double, as numpy's astype gives them, without the double
 * array -- 8 bytes an entry at the peak of a D x d projection). */
static void standard_normal_into(uint64_t seed, uint64_t stream, double *out64, float *out32, int64_t count)
{
    normal_span(stream_key(seed, stream), 0, UINT64_MAX, out64, out32, count);
}

void hsvm_standard_normal(uint64_t seed, uint64_t stream, double *out, int64_t count)
{
    standard_normal_into(seed, stream, out, NULL, count);
}

void hsvm_standard_normal_f32(uint64_t seed, uint64_t stream, float *out, int64_t count)
{
    standard_normal_into(seed, stream, NULL, out, count);
}
