/* Finite-value checks over bit patterns, run over each slice of a model
 * array right after its checksum has read it (so from cache): the loops OR a
 * flag per vector instead of leaving at the first hit, and the vector paths
 * keep four independent accumulators so the pass runs at load speed. */
#include <immintrin.h>

#include "hsvm_cpu.h"
#include "hsvm_finite.h"

#define F32_EXP 0x7f800000u
#define F64_EXP 0x7ff0000000000000ull

static int32_t finite32_portable(const uint32_t *x, int64_t n)
{
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad |= (x[i] & F32_EXP) == F32_EXP;
    return !bad;
}

static int32_t finite64_portable(const uint64_t *x, int64_t n)
{
    uint64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad |= (x[i] & F64_EXP) == F64_EXP;
    return !bad;
}

__attribute__((target("avx2")))
static int32_t finite_avx2(const uint8_t *p, int64_t bytes, int wide)
{
    const __m256i exp = wide ? _mm256_set1_epi64x((long long)F64_EXP) : _mm256_set1_epi32((int)F32_EXP);
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
#define HIT(off) (wide ? _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_loadu_si256((const __m256i *)(p + i + (off))), exp), exp) \
                       : _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_loadu_si256((const __m256i *)(p + i + (off))), exp), exp))
    for (; i + 128 <= bytes; i += 128) {
        a0 = _mm256_or_si256(a0, HIT(0));
        a1 = _mm256_or_si256(a1, HIT(32));
        a2 = _mm256_or_si256(a2, HIT(64));
        a3 = _mm256_or_si256(a3, HIT(96));
    }
    for (; i + 32 <= bytes; i += 32)
        a0 = _mm256_or_si256(a0, HIT(0));
#undef HIT
    __m256i any = _mm256_or_si256(_mm256_or_si256(a0, a1), _mm256_or_si256(a2, a3));
    return _mm256_testz_si256(any, any) ? (int32_t)(bytes - i) : -1;
}

__attribute__((target("avx512f")))
static int32_t finite_avx512(const uint8_t *p, int64_t bytes, int wide)
{
    const __m512i e32 = _mm512_set1_epi32((int)F32_EXP), e64 = _mm512_set1_epi64((long long)F64_EXP);
    __mmask16 m0 = 0, m1 = 0, m2 = 0, m3 = 0;
    int64_t i = 0;
#define HIT(off) (wide ? (__mmask16)_mm512_cmpeq_epi64_mask(_mm512_and_si512(_mm512_loadu_si512(p + i + (off)), e64), e64) \
                       : _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_loadu_si512(p + i + (off)), e32), e32))
    for (; i + 256 <= bytes; i += 256) {
        m0 |= HIT(0);
        m1 |= HIT(64);
        m2 |= HIT(128);
        m3 |= HIT(192);
    }
    for (; i + 64 <= bytes; i += 64)
        m0 |= HIT(0);
#undef HIT
    return (m0 | m1 | m2 | m3) ? -1 : (int32_t)(bytes - i);
}

/* The vector paths check whole vectors and return the bytes left for the
 * portable loop (or -1 on a hit). */
static int32_t finite_any(const void *x, int64_t n, int32_t kernel, int wide)
{
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    const int64_t size = wide ? 8 : 4, bytes = n * size;
    int64_t done = 0;
    int32_t left = -2;
    if (k == HSVM_KERNEL_AVX512)
        left = finite_avx512((const uint8_t *)x, bytes, wide);
    else if (k == HSVM_KERNEL_AVX2)
        left = finite_avx2((const uint8_t *)x, bytes, wide);
    if (left == -1)
        return 0;
    if (left >= 0)
        done = (bytes - left) / size;
    return wide ? finite64_portable((const uint64_t *)x + done, n - done)
                : finite32_portable((const uint32_t *)x + done, n - done);
}

int32_t hsvm_all_finite_f32(const uint32_t *bits, int64_t n, int32_t kernel)
{
    return finite_any(bits, n, kernel, 0);
}

int32_t hsvm_all_finite_f64(const uint64_t *bits, int64_t n, int32_t kernel)
{
    return finite_any(bits, n, kernel, 1);
}

int64_t hsvm_rows_finite(const void *base, int64_t row_len, const int64_t *rows, int64_t n_rows, int32_t wide,
                         int32_t kernel)
{
    const int32_t k = hsvm_resolve_kernel(kernel);
    if (k < 0)
        return k;
    const int64_t row_bytes = row_len * (wide ? 8 : 4);
    for (int64_t i = 0; i < n_rows; i++)
        if (finite_any((const uint8_t *)base + rows[i] * row_bytes, row_len, k, wide) == 0)
            return i;
    return n_rows;
}
