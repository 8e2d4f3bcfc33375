/* Streaming svmlight / LIBSVM text parser filling CSR arrays.
 *
 * Python (hsvm_cli/io/svmlight.py) reads the file in blocks, cuts each block at
 * its last newline and hands the complete lines here; this parser never sees
 * a line split across two calls, so it keeps no state between lines beyond
 * what is in hsvm_svm_parse_state. */
#ifndef HSVM_SVMPARSE_H
#define HSVM_SVMPARSE_H
#include <stdint.h>

/* Return codes of hsvm_svm_parse.  Non-negative: the call stopped cleanly at a
 * line boundary; negative: a malformed line, described by err_* fields. */
enum hsvm_svm_status {
    HSVM_SVM_DONE = 0,          /* every line of the buffer was consumed */
    HSVM_SVM_ROWS_FULL = 1,     /* row_cap rows are stored; call again with room */
    HSVM_SVM_NNZ_FULL = 2,      /* the next line might not fit: need_nnz more slots */
    HSVM_SVM_INCOMPLETE = 3,    /* indices NULL and the next row lacks a column: call again with indices */
    HSVM_SVM_E_LABEL = -1,      /* label not an integer (or a whole decimal below 2^53) */
    HSVM_SVM_E_COLON = -2,      /* feature token without ':' */
    HSVM_SVM_E_INDEX = -3,      /* index not a decimal integer */
    HSVM_SVM_E_NEGATIVE = -4,   /* index starts with '-' */
    HSVM_SVM_E_ZERO = -5,       /* index 0 in a 1-based file */
    HSVM_SVM_E_UNSORTED = -6,   /* err_a after err_b (file numbering) */
    HSVM_SVM_E_REPEATED = -7,   /* err_a repeated */
    HSVM_SVM_E_EXTRA = -8,      /* index err_a with column >= n_features */
    HSVM_SVM_E_TOO_BIG = -9,    /* index whose column does not fit in int32 */
    HSVM_SVM_E_VALUE = -10,     /* value not a number; err_a = index */
    HSVM_SVM_E_NONFINITE = -11, /* nan or inf spelled out; err_a = index */
    HSVM_SVM_E_NO_VALUE = -12,  /* nothing after ':'; err_a = index */
    HSVM_SVM_E_QID = -13,       /* qid:N with N not an integer */
    HSVM_SVM_E_RANGE = -14      /* value that rounds to infinity in float32; err_a = index */
};

/* Return codes of hsvm_svm_parse_double. */
enum hsvm_num_status {
    HSVM_NUM_OK = 0,
    HSVM_NUM_BAD = 1,       /* not a decimal number (hex, junk, empty, blanks) */
    HSVM_NUM_NONFINITE = 2, /* inf, infinity or nan (any case, optional sign) */
    HSVM_NUM_RANGE = 3      /* a decimal beyond the double range */
};

typedef struct {
    /* in: how values are read, for tests (0 and 0: as the text calls for).
     * value_mode 1 + m reads every value in mode m (a FEATURE_* set of
     * svmparse.c: 0 the byte loop, 1 signs by arithmetic, 2 fractions by
     * words, 3 both); mode_sample > 0 chooses the mode after that many values
     * instead of 256.  Every mode gives the same results. */
    int64_t value_mode;
    int64_t mode_sample;
    /* in/out: fill level of the caller's arrays, carried across calls */
    int64_t rows;
    int64_t nnz;
    int64_t max_col;        /* largest stored 0-based column, -1 when none */
    /* out */
    int64_t consumed;       /* bytes of buf handled (always whole lines) */
    int64_t lines;          /* newlines within buf[0:consumed] */
    int64_t first_row_line; /* 0-based line in buf of this call's first row, -1 if none */
    int64_t need_nnz;       /* with HSVM_SVM_NNZ_FULL: free slots the next line may need */
    int64_t err_line;       /* 0-based line in buf of the error */
    int64_t err_offset;     /* byte offset in buf of the offending token */
    int64_t err_a;
    int64_t err_b;
} hsvm_svm_parse_state;

/* Parse the lines of buf[0:len] (the last may lack its '\n') into CSR arrays:
 * row r's columns are indices[indptr[r]:indptr[r+1]], values alike, label in
 * labels[r].  Rows are appended at st->rows / st->nnz; indptr[st->rows] must
 * already hold st->nnz.  Capacities: indptr row_cap+1, labels row_cap,
 * indices/values nnz_cap.  n_features < 0 means no fixed width: a column
 * >= max_width is an error (HSVM_SVM_E_TOO_BIG); otherwise (n_features <=
 * max_width) a column >= n_features is an error, or silently dropped when
 * drop_extra is nonzero.  Values are parsed as doubles and must stay finite
 * when rounded to float32; they are stored in values, or, when values32 is
 * not NULL, rounded to float32 in values32 instead (the bits of converting
 * the doubles afterwards, without that pass).  Blank and comment-only lines
 * are skipped but counted in st->lines.
 *
 * indices may be NULL when n_features >= 0: every row must then store all
 * n_features columns (0 .. n_features-1, so their indices need no array),
 * and the call stops with HSVM_SVM_INCOMPLETE, before the first row that
 * does not, for the caller to go on with an indices array.  A fully dense
 * file then writes half the bytes (its predictions need its values only). */
int hsvm_svm_parse(const char *buf, int64_t len, int32_t zero_based,
                   int64_t n_features, int64_t max_width, int32_t drop_extra,
                   int64_t row_cap, int64_t nnz_cap,
                   int64_t *indptr, int32_t *indices, double *values, float *values32,
                   int64_t *labels, hsvm_svm_parse_state *st);

/* The value parser on its own (for tests against strtod): parses s[0:len]
 * completely as a decimal number.  Returns HSVM_NUM_OK and sets *out, or
 * another hsvm_num_status. */
int hsvm_svm_parse_double(const char *s, int64_t len, double *out);

#endif
