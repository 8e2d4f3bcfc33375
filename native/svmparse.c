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

/* The common shape "digits:plain-decimal" in one pass: up to 10 index digits,
 * then a value without exponent whose digits fit the exact fast path.
 * Returns 0, having read nothing that matters, for anything else, which then
 * takes the general path (and gets its precise error there). */
static inline int fast_feature(const char *p, const char *end, uint64_t *idx_out,
                               double *v_out, const char **next)
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
    if (c < end && *c == '-') {
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
    *v_out = neg ? -d : d;
    *idx_out = idx;
    *next = c;
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

int hsvm_svm_parse(const char *buf, int64_t len, int32_t zero_based,
                   int64_t n_features, int64_t max_width, int32_t drop_extra,
                   int64_t row_cap, int64_t nnz_cap,
                   int64_t *indptr, int32_t *indices, double *values, float *values32,
                   int64_t *labels, hsvm_svm_parse_state *st)
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
            if (fast_feature(p, end, &idx, &v, &te)) {
                p = te;
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
            indices[nnz] = (int32_t)col;
            if (values32)
                values32[nnz] = (float)v;
            else
                values[nnz] = v;
            nnz++;
        }
        if (nnz > row_start && (int64_t)indices[nnz - 1] > max_col)
            max_col = indices[nnz - 1];
        if (st->first_row_line < 0)
            st->first_row_line = nline;
        labels[rows] = label;
        rows++;
        indptr[rows] = nnz;
        line = next;
        nline++;
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
