#define _GNU_SOURCE /* strtod_l, newlocale */
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hsvm_svmparse.h"

/* Exactly representable powers of ten: 10^22 is the largest below 2^53 * 2^22,
 * i.e. the largest whose double value is exact, which is what makes the fast
 * path correctly rounded (one rounding in one IEEE multiply or divide). */
static const double POW10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

#define TWO53 9007199254740992ULL

/* hsvm stores samples and models as float32.  A double at or beyond
 * FLT_MAX + half an ulp (2^128 - 2^104) rounds to infinity in float32 (FLT_MAX
 * has an odd significand, so the tie goes up); anything below rounds to at
 * most FLT_MAX, so "3.4028235e38", FLT_MAX's shortest spelling, is kept.
 * The fused fast path needs no check: its values are below 2^53. */
#define F32_OVERFLOW 0x1.ffffffp+127

static inline int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static inline int is_digit(unsigned char c)
{
    return (unsigned)(c - '0') < 10u;
}

static inline const char *token_end(const char *p, const char *end)
{
    while (p < end && !is_space((unsigned char)*p) && *p != '#')
        p++;
    return p;
}

#ifdef __GLIBC__
/* strtod follows LC_NUMERIC, which an embedding program may have changed to a
 * locale with a decimal comma; the file format is always '.'. */
static locale_t c_locale(void)
{
    static locale_t cached = (locale_t)0;
    locale_t loc = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (loc)
        return loc;
    locale_t fresh = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!fresh)
        return (locale_t)0;
    locale_t expected = (locale_t)0;
    if (__atomic_compare_exchange_n(&cached, &expected, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return fresh;
    freelocale(fresh);
    return expected;
}
#endif

/* The decimal grammar of the format: [+-] (D+ [. D*] | . D+) [(e|E) [+-] D+].
 * strtod also takes hex floats, "inf", "nan(...)" and leading blanks, which the
 * format does not, so a token must pass this before strtod sees it. */
static int is_decimal(const char *p, const char *e)
{
    if (p < e && (*p == '-' || *p == '+'))
        p++;
    int digits = 0;
    while (p < e && is_digit((unsigned char)*p)) {
        p++;
        digits = 1;
    }
    if (p < e && *p == '.') {
        p++;
        while (p < e && is_digit((unsigned char)*p)) {
            p++;
            digits = 1;
        }
    }
    if (!digits)
        return 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '-' || *p == '+'))
            p++;
        if (p == e || !is_digit((unsigned char)*p))
            return 0;
        while (p < e && is_digit((unsigned char)*p))
            p++;
    }
    return p == e;
}

static int ascii_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static int same_word(const char *p, const char *e, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(e - p) != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (ascii_lower((unsigned char)p[i]) != word[i])
            return 0;
    return 1;
}

/* [+-] inf, infinity or nan in any case: a number, but not a finite one. */
static int is_nonfinite_word(const char *p, const char *e)
{
    if (p < e && (*p == '-' || *p == '+'))
        p++;
    return same_word(p, e, "inf") || same_word(p, e, "infinity") || same_word(p, e, "nan");
}

static int slow_double(const char *s, int64_t len, double *out)
{
    if (!is_decimal(s, s + len))
        return is_nonfinite_word(s, s + len) ? HSVM_NUM_NONFINITE : HSVM_NUM_BAD;
    char small[128];
    char *tmp = small;
    if (len >= (int64_t)sizeof(small)) {
        tmp = malloc((size_t)len + 1);
        if (!tmp)
            return HSVM_NUM_BAD;
    }
    memcpy(tmp, s, (size_t)len);
    tmp[len] = '\0';
    char *stop;
    double v;
#ifdef __GLIBC__
    locale_t loc = c_locale();
    v = loc ? strtod_l(tmp, &stop, loc) : strtod(tmp, &stop);
#else
    v = strtod(tmp, &stop);
#endif
    int status = HSVM_NUM_OK;
    if (stop != tmp + len)
        status = HSVM_NUM_BAD;
    else if (!isfinite(v))
        status = HSVM_NUM_RANGE; /* a decimal beyond the double range */
    if (tmp != small)
        free(tmp);
    *out = v;
    return status;
}

/* Clinger's fast path for plain decimals; anything else (more than 19
 * significant digits, large exponents, hex, inf/nan, junk) goes to
 * slow_double, which decides what is malformed and leaves the rest to strtod. */
static inline int parse_double(const char *s, const char *e, double *out)
{
    const char *p = s;
    int neg = 0;
    if (p < e && (*p == '-' || *p == '+')) {
        neg = *p == '-';
        p++;
    }
    uint64_t m = 0;
    int nd = 0, any = 0;
    int64_t exp10 = 0;
    while (p < e && *p == '0') {
        p++;
        any = 1;
    }
    while (p < e && is_digit((unsigned char)*p)) {
        if (nd == 19)
            goto slow;
        m = m * 10 + (uint64_t)(*p - '0');
        nd++;
        p++;
        any = 1;
    }
    if (p < e && *p == '.') {
        p++;
        if (m == 0) {
            while (p < e && *p == '0') {
                p++;
                exp10--;
                any = 1;
            }
        }
        while (p < e && is_digit((unsigned char)*p)) {
            if (nd == 19)
                goto slow;
            m = m * 10 + (uint64_t)(*p - '0');
            nd++;
            exp10--;
            p++;
            any = 1;
        }
    }
    if (!any)
        goto slow;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0;
        if (p < e && (*p == '-' || *p == '+')) {
            eneg = *p == '-';
            p++;
        }
        if (p == e || !is_digit((unsigned char)*p))
            goto slow;
        int64_t x = 0;
        while (p < e && is_digit((unsigned char)*p)) {
            if (x < 100000)
                x = x * 10 + (*p - '0');
            p++;
        }
        exp10 += eneg ? -x : x;
    }
    if (p != e)
        goto slow;
    if (m == 0) {
        *out = neg ? -0.0 : 0.0;
        return HSVM_NUM_OK;
    }
    if (m <= TWO53 && exp10 >= -22 && exp10 <= 22) {
        double d = (double)m;
        d = exp10 < 0 ? d / POW10[-exp10] : d * POW10[exp10];
        *out = neg ? -d : d;
        return HSVM_NUM_OK;
    }
slow:
    return slow_double(s, (int64_t)(e - s), out);
}

int hsvm_svm_parse_double(const char *s, int64_t len, double *out)
{
    return parse_double(s, s + len, out);
}

/* Whether a decimal of parse_double's grammar is a whole number, from its
 * digits (no rounding): every non-zero digit sits at or above the units
 * place once the exponent has moved the point.  "1.0000000000000000001" is
 * not, though it reads as the double 1.0. */
static int decimal_is_whole(const char *s, const char *e)
{
    const char *p = s, *m = s;
    if (p < e && (*p == '-' || *p == '+'))
        p++;
    while (m < e && *m != 'e' && *m != 'E')
        m++;
    int64_t exp = 0;
    if (m < e) {
        const char *q = m + 1;
        int neg = 0;
        if (q < e && (*q == '-' || *q == '+'))
            neg = *q++ == '-';
        for (; q < e && is_digit((unsigned char)*q); q++)
            exp = exp < 100000000 ? exp * 10 + (*q - '0') : exp;     /* saturates: far beyond any digit */
        exp = neg ? -exp : exp;
    }
    int64_t before = 0;
    for (const char *q = p; q < m && is_digit((unsigned char)*q); q++)
        before++;
    int64_t place = before - 1 + exp;    /* power of ten of the first digit */
    for (const char *q = p; q < m; q++) {
        if (*q == '.')
            continue;
        if (place < 0 && *q != '0')
            return 0;
        place--;
    }
    return 1;
}

/* Integer labels directly (they need no rounding); anything else must be a
 * decimal holding a whole number below 2^53 in magnitude: from 2^53 on, the
 * double the decimal is read as may be a neighbouring integer, so that
 * "12345678901234567.0" would become another class than "12345678901234567". */
static int parse_label(const char *s, const char *e, int64_t *out)
{
    const char *p = s;
    int neg = 0;
    if (p < e && (*p == '-' || *p == '+')) {
        neg = *p == '-';
        p++;
    }
    if (p < e) {
        uint64_t m = 0;
        const char *q = p;
        int overflow = 0;
        while (q < e && is_digit((unsigned char)*q)) {
            uint64_t d = (uint64_t)(*q - '0');
            if (m > (UINT64_MAX - d) / 10)
                overflow = 1;
            else
                m = m * 10 + d;
            q++;
        }
        if (q == e && !overflow) {
            if (!neg && m <= (uint64_t)INT64_MAX) {
                *out = (int64_t)m;
                return 0;
            }
            if (neg && m <= (uint64_t)INT64_MAX + 1) {
                *out = (int64_t)(0 - m);
                return 0;
            }
            return 1;
        }
    }
    double v;
    if (parse_double(s, e, &v) != 0)
        return 1;
    /* a whole decimal of 2^53 or more reads as a double of 2^53 or more */
    if (!decimal_is_whole(s, e) || !(fabs(v) < 9007199254740992.0))
        return 1;
    *out = (int64_t)v;
    return 0;
}

/* Index digits, saturating far above any valid index so overflow can never
 * wrap around into range. */
#define INDEX_SATURATE 100000000000000000ULL

/* Fraction digits eight bytes at a time (SWAR; little-endian, as on x86-64
 * and aarch64: the first byte is the lowest). */
static const uint64_t POW10_U64[17] = {
    1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL,
    1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL,
    100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
};

static inline uint64_t load8(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* How many of the eight bytes of v, from the lowest, are ASCII digits before
 * the first that is not.  After x = v ^ '0'..., a digit byte is below 10:
 * adding 0x76 to its low seven bits sets bit 7 exactly when it is 10 or more
 * (no carry leaves the byte), and a byte with bit 7 already set is no digit. */
static inline int leading_digits8(uint64_t v)
{
    const uint64_t x = v ^ 0x3030303030303030ULL;
    const uint64_t stop = (x | ((x & 0x7F7F7F7F7F7F7F7FULL) + 0x7676767676767676ULL)) & 0x8080808080808080ULL;
    return stop ? __builtin_ctzll(stop) >> 3 : 8;
}

/* The number written by the n (0..8) digits at the low end of v: shifted to
 * the top, the bytes below read as leading zeros (n = 0 keeps nothing; a
 * shift by 64 would be undefined, hence the mask); then pairs of digits,
 * pairs of pairs and the two halves, by three multiplications. */
static inline uint64_t digits8_value(uint64_t v, int n)
{
    uint64_t x = ((v - 0x3030303030303030ULL) << ((8 * (8 - n)) & 63)) & -(uint64_t)(n != 0);
    x = (x * 10) + (x >> 8);
    x = (((x & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
         (((x >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
    return x;
}

/* How fast_feature reads a value's sign and fraction.  A byte loop with
 * branches is fastest while the branches are predicted: values of one sign,
 * fractions of one length ("0.004", "0.341": fashion-mnist, 8.5 ns a value).
 * Text written from floats has random signs and lengths ("-0.113583185",
 * "0.07997374"), and then a branch misses about once a value at each: the
 * sign read and applied by arithmetic, and the fraction read in two words of
 * eight bytes without a branch on its length, took a value from 18.6 to 12.5
 * ns (synthetic K = 300 test file), where they cost 8.5 -> 11.2 ns on
 * fashion-mnist's.  The parser picks per call from the first values it reads
 * (feature_mode); both ways give the same integer of digits and the same
 * division, so the same bits. */
enum {
    FEATURE_SIGN_ARITH = 1,   /* the sign without branches */
    FEATURE_FRAC_WORDS = 2,   /* the fraction's digits by words */
};

/* Values read before the mode may leave the byte loop, and the rules: signs
 * by arithmetic when the rarer sign is at least 1/8 of the values (a missed
 * branch costs about five times the arithmetic); fractions by words when they
 * average six digits or more.  Shorter ones stay with the byte loop even when
 * their length varies: reuters-r52's (5.4 digits, the length changing at 42%
 * of values) and digits' (2.7, 70%) read as fast or faster by bytes. */
#define FEATURE_MODE_SAMPLE 256

static inline int feature_mode(int64_t values, int64_t negative, int64_t frac_digits, int64_t sample)
{
    if (values < sample)
        return 0;
    int mode = 0;
    const int64_t rare = negative < values - negative ? negative : values - negative;
    if (8 * rare >= values)
        mode |= FEATURE_SIGN_ARITH;
    if (frac_digits >= 6 * values)
        mode |= FEATURE_FRAC_WORDS;
    return mode;
}

/* The common shape "digits:plain-decimal" in one pass: up to 10 index digits,
 * then a value without exponent whose digits fit the exact fast path.
 * Returns 0, having read nothing that matters, for anything else, which then
 * takes the general path (and gets its precise error there).  safe_end: the
 * end of the text, up to which the fraction's words may read past the line;
 * mode: FEATURE_*; *neg_out and *frac_out: the value's sign and fraction
 * length, for feature_mode. */
static inline int fast_feature(const char *p, const char *end, const char *safe_end, int mode, uint64_t *idx_out,
                               double *v_out, const char **next, int *neg_out, int *frac_out)
{
    const char *c = p;
    const char *lim = end - p > 10 ? p + 10 : end;
    uint64_t idx = 0;
    while (c < lim && is_digit((unsigned char)*c)) {
        idx = idx * 10 + (uint64_t)(*c - '0');
        c++;
    }
    if (c == p || c == end || *c != ':')
        return 0;
    c++;
    int neg = 0;
    if (mode & FEATURE_SIGN_ARITH) {
        neg = c < end && *c == '-';
        c += neg;
    } else if (c < end && *c == '-') {
        neg = 1;
        c++;
    }
    /* unsigned wrap-around on very long digit runs is harmless: such
     * values are rejected by the digit count below */
    uint64_t m = 0;
    const char *ds = c;
    while (c < end && is_digit((unsigned char)*c)) {
        m = m * 10 + (uint64_t)(*c - '0');
        c++;
    }
    int64_t nd = c - ds, frac = 0;
    if (c < end && *c == '.') {
        c++;
        const char *fs = c;
        int read = 0;
        if ((mode & FEATURE_FRAC_WORDS) && safe_end - c >= 16) {
            /* A run stops at the first byte that is no digit, at the latest
             * the line's '\n' (or the text's end, at least 16 bytes away). */
            const uint64_t w1 = load8(c), w2 = load8(c + 8);
            const int f1 = leading_digits8(w1);
            const int f2 = leading_digits8(w2) & -(int)(f1 == 8);   /* the second word only after a full first */
            if (f2 < 8) {
                m = m * POW10_U64[f1 + f2] + (digits8_value(w1, f1) * POW10_U64[f2] + digits8_value(w2, f2));
                c += f1 + f2;
                read = 1;
            }
        }
        if (!read)   /* sixteen digits or more, or near the text's end */
            while (c < end && is_digit((unsigned char)*c)) {
                m = m * 10 + (uint64_t)(*c - '0');
                c++;
            }
        frac = c - fs;
        nd += frac;
    }
    if (nd == 0 || nd > 19 || frac > 22 || m > TWO53)
        return 0;
    if (c < end && !is_space((unsigned char)*c) && *c != '#')
        return 0;
    double d = (double)m;
    if (frac)
        d /= POW10[frac];
    if (mode & FEATURE_SIGN_ARITH) {
        /* d >= 0 here: setting the sign bit is negating it */
        uint64_t bits;
        memcpy(&bits, &d, 8);
        bits |= (uint64_t)neg << 63;
        memcpy(&d, &bits, 8);
        *v_out = d;
    } else {
        *v_out = neg ? -d : d;
    }
    *idx_out = idx;
    *next = c;
    *neg_out = neg;
    *frac_out = (int)frac;
    return 1;
}

/* Index checks shared by both paths; 0 when the column is acceptable. */
static inline int check_index(uint64_t idx, uint64_t base, int64_t prev, uint64_t keep_limit,
                              uint64_t max_width, int64_t n_features, int32_t drop_extra, hsvm_svm_parse_state *st)
{
    if (idx < base)
        return HSVM_SVM_E_ZERO;
    const uint64_t col = idx - base;
    st->err_a = (int64_t)idx;
    if ((int64_t)col <= prev) {
        st->err_b = prev + (int64_t)base;
        return (int64_t)col == prev ? HSVM_SVM_E_REPEATED : HSVM_SVM_E_UNSORTED;
    }
    if (col >= keep_limit) {
        /* Beyond the model's features: dropped when asked; beyond what any
         * file may hold: refused even then, as when there is no model (an
         * index past 2^31 had been dropped silently, and one past 2^64
         * saturated). */
        if (n_features >= 0 && col < max_width && drop_extra)
            return 0;
        st->err_b = n_features;
        return n_features >= 0 && col < max_width ? HSVM_SVM_E_EXTRA : HSVM_SVM_E_TOO_BIG;
    }
    return 0;
}

/* What parse_lines counts of the values it reads while sampling (sample > 0). */
typedef struct {
    int64_t values, negative, frac_digits;
} value_counts;

/* Stopped after `sample` values, at a line's end (parse_lines only). */
#define SAMPLED 100

/* hsvm_svm_parse's loop, in the given fast_feature mode; with sample > 0 it
 * counts the values it reads and stops once it has read `sample` of them,
 * at the end of a row, returning SAMPLED.  Always inlined with constant
 * mode and sample, so that each use compiles to its own loop: the mode's
 * tests and the counting cost nothing where they are not used (in one loop
 * testing them they cost 6-8% on fashion-mnist's text). */
static inline __attribute__((always_inline)) int
parse_lines(const char *buf, int64_t len, int32_t zero_based, int64_t n_features, int64_t max_width,
            int32_t drop_extra, int64_t row_cap, int64_t nnz_cap, int64_t *indptr, int32_t *indices,
            double *values, float *values32, int64_t *labels, hsvm_svm_parse_state *st, const int mode,
            const int64_t sample, value_counts *counts)
{
    const char *const end_all = buf + len;
    const char *line = buf;
    int64_t rows = st->rows, nnz = st->nnz, max_col = st->max_col;
    int64_t nline = 0;
    const uint64_t base = zero_based ? 0 : 1;
    const uint64_t keep_limit = (uint64_t)(n_features >= 0 ? n_features : max_width);
    int status = HSVM_SVM_DONE;
    const char *tok = NULL;

    st->first_row_line = -1;
    st->need_nnz = 0;

    while (line < end_all) {
        const char *nl = memchr(line, '\n', (size_t)(end_all - line));
        const char *end = nl ? nl : end_all;
        const char *next = nl ? nl + 1 : end_all;
        const char *p = line;

        while (p < end && is_space((unsigned char)*p))
            p++;
        if (p == end || *p == '#') {
            line = next;
            nline++;
            continue;
        }
        if (rows >= row_cap) {
            status = HSVM_SVM_ROWS_FULL;
            break;
        }
        /* a feature takes at least 4 bytes ("i:v" and a separator) */
        int64_t bound = (int64_t)(end - line) / 4 + 1;
        if (nnz + bound > nnz_cap) {
            st->need_nnz = bound;
            status = HSVM_SVM_NNZ_FULL;
            break;
        }

        tok = p;
        const char *te = token_end(p, end);
        int64_t label;
        if (parse_label(tok, te, &label) != 0) {
            status = HSVM_SVM_E_LABEL;
            goto fail;
        }
        p = te;

        const int64_t row_start = nnz;
        int64_t prev = -1; /* previous column, stored or dropped */
        int first = 1;
        for (;;) {
            while (p < end && is_space((unsigned char)*p))
                p++;
            if (p == end || *p == '#')
                break;
            tok = p;
            uint64_t idx;
            double v;
            int vneg, vfrac;
            if (fast_feature(p, end, end_all, mode, &idx, &v, &te, &vneg, &vfrac)) {
                p = te;
                if (sample > 0) {
                    counts->values++;
                    counts->negative += vneg;
                    counts->frac_digits += vfrac;
                }
                status = check_index(idx, base, prev, keep_limit, (uint64_t)max_width, n_features, drop_extra, st);
                if (status)
                    goto fail;
            } else {
                te = token_end(p, end);
                p = te;
                if (first && te - tok >= 4 && memcmp(tok, "qid:", 4) == 0) {
                    const char *q = tok + 4;
                    if (q < te && (*q == '-' || *q == '+'))
                        q++;
                    if (q == te)
                        goto bad_qid;
                    while (q < te && is_digit((unsigned char)*q))
                        q++;
                    if (q != te)
                        goto bad_qid;
                    first = 0;
                    continue;
                }
                const char *c = tok;
                idx = 0;
                while (c < te && is_digit((unsigned char)*c)) {
                    if (idx < INDEX_SATURATE)
                        idx = idx * 10 + (uint64_t)(*c - '0');
                    c++;
                }
                if (c == te || *c != ':' || c == tok) {
                    const char *colon = memchr(tok, ':', (size_t)(te - tok));
                    if (!colon) {
                        status = HSVM_SVM_E_COLON;
                        goto fail;
                    }
                    if (*tok == '-' && colon - tok > 1) {
                        const char *q = tok + 1;
                        while (q < colon && is_digit((unsigned char)*q))
                            q++;
                        if (q == colon) {
                            status = HSVM_SVM_E_NEGATIVE;
                            goto fail;
                        }
                    }
                    status = HSVM_SVM_E_INDEX;
                    goto fail;
                }
                status = check_index(idx, base, prev, keep_limit, (uint64_t)max_width, n_features, drop_extra, st);
                if (status)
                    goto fail;
                const char *vs = c + 1;
                if (vs == te) {
                    status = HSVM_SVM_E_NO_VALUE;
                    goto fail;
                }
                int vst = parse_double(vs, te, &v);
                if (vst != HSVM_NUM_OK || fabs(v) >= F32_OVERFLOW) {
                    status = vst == HSVM_NUM_BAD ? HSVM_SVM_E_VALUE
                           : vst == HSVM_NUM_NONFINITE ? HSVM_SVM_E_NONFINITE : HSVM_SVM_E_RANGE;
                    goto fail;
                }
            }
            first = 0;
            const uint64_t col = idx - base;
            prev = (int64_t)col;
            if (col >= keep_limit)
                continue; /* extra feature, drop_extra set */
            if (indices)
                indices[nnz] = (int32_t)col;
            if (values32)
                values32[nnz] = (float)v;
            else
                values[nnz] = v;
            nnz++;
        }
        if (!indices) {
            /* columns increase and stay below n_features: as many as it means all of them */
            if (nnz - row_start != n_features) {
                nnz = row_start;
                status = HSVM_SVM_INCOMPLETE;
                break;
            }
            if (n_features - 1 > max_col)
                max_col = n_features - 1;
        } else if (nnz > row_start && (int64_t)indices[nnz - 1] > max_col) {
            max_col = indices[nnz - 1];
        }
        if (st->first_row_line < 0)
            st->first_row_line = nline;
        labels[rows] = label;
        rows++;
        indptr[rows] = nnz;
        line = next;
        nline++;
        if (sample > 0 && counts->values >= sample) {
            status = SAMPLED;
            break;
        }
    }
    st->rows = rows;
    st->nnz = nnz;
    st->max_col = max_col;
    st->consumed = (int64_t)(line - buf);
    st->lines = nline;
    return status;

bad_qid:
    status = HSVM_SVM_E_QID;
fail:
    st->err_line = nline;
    st->err_offset = (int64_t)(tok - buf);
    st->consumed = (int64_t)(line - buf);
    st->lines = nline;
    return status;
}

/* A call starts in the byte-loop mode and reads FEATURE_MODE_SAMPLE values
 * (st->mode_sample); the rest of its lines are read in the mode they call for
 * (feature_mode), or all in the mode st->value_mode forces.  The parts report
 * as one call. */
int hsvm_svm_parse(const char *buf, int64_t len, int32_t zero_based,
                   int64_t n_features, int64_t max_width, int32_t drop_extra,
                   int64_t row_cap, int64_t nnz_cap,
                   int64_t *indptr, int32_t *indices, double *values, float *values32,
                   int64_t *labels, hsvm_svm_parse_state *st)
{
    int status, mode;
    int64_t done = 0, done_lines = 0, first_row = -1;
    if (!indices && n_features < 0) {
        /* without a width no row is known to be complete */
        st->consumed = st->lines = 0;
        st->first_row_line = -1;
        return HSVM_SVM_INCOMPLETE;
    }
    if (st->value_mode > 0) {
        mode = (int)((st->value_mode - 1) & (FEATURE_SIGN_ARITH | FEATURE_FRAC_WORDS));
    } else {
        value_counts counts = {0, 0, 0};
        const int64_t sample = st->mode_sample > 0 ? st->mode_sample : FEATURE_MODE_SAMPLE;
        status = parse_lines(buf, len, zero_based, n_features, max_width, drop_extra, row_cap, nnz_cap, indptr,
                             indices, values, values32, labels, st, 0, sample, &counts);
        if (status != SAMPLED)
            return status;
        done = st->consumed;
        done_lines = st->lines;
        first_row = st->first_row_line;
        mode = feature_mode(counts.values, counts.negative, counts.frac_digits, sample);
    }
    const char *rest = buf + done;
    const int64_t left = len - done;
#define HSVM_PARSE_REST(m)                                                                                      \
    parse_lines(rest, left, zero_based, n_features, max_width, drop_extra, row_cap, nnz_cap, indptr, indices,  \
                values, values32, labels, st, (m), 0, NULL)
    switch (mode) {
    case FEATURE_SIGN_ARITH:
        status = HSVM_PARSE_REST(FEATURE_SIGN_ARITH);
        break;
    case FEATURE_FRAC_WORDS:
        status = HSVM_PARSE_REST(FEATURE_FRAC_WORDS);
        break;
    case FEATURE_SIGN_ARITH | FEATURE_FRAC_WORDS:
        status = HSVM_PARSE_REST(FEATURE_SIGN_ARITH | FEATURE_FRAC_WORDS);
        break;
    default:
        status = HSVM_PARSE_REST(0);
    }
#undef HSVM_PARSE_REST
    st->consumed += done;
    st->lines += done_lines;
    if (first_row >= 0)
        st->first_row_line = first_row;
    else if (st->first_row_line >= 0)
        st->first_row_line += done_lines;
    if (status < 0) {
        st->err_line += done_lines;
        st->err_offset += done;
    }
    return status;
}
