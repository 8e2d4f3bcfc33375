/* A C twin of hsvm_cli/gaussian.py's standard_normal (same operations in the
 * same order, so the same bits), about fifty times faster: the KRSH projection
 * needs bits x landmarks normals, tens of millions. */
#include <math.h>
#include <stddef.h>
#include "hsvm_normals.h"

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
    uint64_t bits = splitmix64(counter + key) >> 11;
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
 * keeps it (0 < s = u^2 + v^2 < 1): one rule for the values and for the
 * count that places a span of them. */
static inline int polar_pair(uint64_t p, uint64_t key, double *u, double *v, double *s)
{
    *u = uniform_pm1(2 * p, key);
    *v = uniform_pm1(2 * p + 1, key);
    *s = *u * *u + *v * *v;
    return *s > 0.0 && *s < 1.0;
}

/* The stream's values from uniform pair p0 on, at most `count` of them and
 * no pair at or past p1 (the whole stream: p0 = 0, p1 = UINT64_MAX):
 * element i of a span is element (values of the pairs before p0) + i of the
 * stream, so spans whose starting offsets are known (hsvm_normal_pairs_kept)
 * can be filled side by side. */
static void normal_span(uint64_t key, uint64_t p0, uint64_t p1, double *out64, float *out32, int64_t count)
{
#define STORE(x) (out64 ? (void)(out64[filled++] = (x)) : (void)(out32[filled++] = (float)(x)))
    int64_t filled = 0;
    for (uint64_t p = p0; filled < count && p < p1; p++) {
        double u, v, s;
        if (!polar_pair(p, key, &u, &v, &s))
            continue;
        double f = sqrt(-2.0 * series_log(s) / s);
        STORE(u * f);
        if (filled < count)
            STORE(v * f);
    }
#undef STORE
}

static uint64_t stream_key(uint64_t seed, uint64_t stream)
{
    return splitmix64(seed ^ splitmix64(stream));
}

int64_t hsvm_normal_pairs_kept(uint64_t seed, uint64_t stream, uint64_t p0, uint64_t p1)
{
    const uint64_t key = stream_key(seed, stream);
    int64_t kept = 0;
    for (uint64_t p = p0; p < p1; p++) {
        double u, v, s;
        kept += polar_pair(p, key, &u, &v, &s);
    }
    return kept;
}

void hsvm_standard_normal_span(uint64_t seed, uint64_t stream, uint64_t p0, uint64_t p1, double *out, int64_t count)
{
    normal_span(stream_key(seed, stream), p0, p1, out, NULL, count);
}

void hsvm_standard_normal_span_f32(uint64_t seed, uint64_t stream, uint64_t p0, uint64_t p1, float *out,
                                   int64_t count)
{
    normal_span(stream_key(seed, stream), p0, p1, NULL, out, count);
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
