/* The first rows of an svmlight file parsed on a thread of their own while
 * the interpreter is still loading modules (hsvm_cli/io/early_parse.py).
 *
 * `hsvm predict` spends its first ~0.1 s importing numpy, click and its own
 * modules on one core while the other idles; its input is then parsed on
 * both.  Started from the command line before those imports, this thread
 * parses the input's first lines with hsvm_svm_parse -- the parser the reader
 * uses -- into arrays the reader adopts when it opens the same file with the
 * same options: the rows, their file lines and every error are those of the
 * reader's own parse, which goes on where this one stopped.  Anything this
 * parse cannot settle (a malformed line, a row wider than the first) ends it,
 * and the reader then parses the file as if it had never run. */
#ifndef HSVM_SVMPARSE_EARLY_H
#define HSVM_SVMPARSE_EARLY_H
#include <stdint.h>
#include "hsvm_svmparse.h"

typedef struct {
    /* in */
    int32_t zero_based;
    int64_t chunk_rows;     /* the reader's rows per chunk: never more rows than that */
    int64_t max_text;       /* the most bytes of text to parse */
    int64_t block;          /* bytes read at a time (tests: small, to stop anywhere) */
    /* out, valid once hsvm_early_parse_stop has returned */
    int32_t usable;         /* 1: the arrays hold the rows of the file's first `consumed` bytes */
    int64_t dev, ino, size, mtime_s, mtime_ns;  /* the file read (fstat when opened); the change */
    int64_t ctime_s, ctime_ns;                  /* time too: any write moves it, and no one can set it */
    int64_t n_features;     /* the width parsed with: the first row's when complete, else -1 */
    int32_t complete;       /* indices is NULL: every row holds columns 0 .. n_features-1 */
    int64_t consumed;       /* bytes of the file parsed: whole lines */
    int64_t lines;          /* newlines within them */
    int64_t first_line;     /* 1-based file line of the first row, 0 when none */
    int64_t row_cap;
    int64_t nnz_cap;
    int64_t *indptr;        /* row_cap + 1 */
    int64_t *labels;        /* row_cap */
    int32_t *indices;       /* nnz_cap, or NULL when complete */
    float *values;          /* nnz_cap, 64-byte aligned (the reader prepares samples in place) */
    hsvm_svm_parse_state st;
    void *thread;           /* private */
} hsvm_early_parse;

/* Opens `path` and starts parsing it on a new thread, reading `block` bytes
 * at a time (0: 4 MB); NULL when the file is not a regular file or the
 * thread cannot be started (the reader then parses the whole file itself). */
hsvm_early_parse *hsvm_early_parse_start(const char *path, int32_t zero_based, int64_t chunk_rows,
                                         int64_t max_text, int64_t block);

/* Asks the thread to stop after the lines in hand and waits for it. */
void hsvm_early_parse_stop(hsvm_early_parse *ep);

/* Waits for the thread to stop on its own: at the file's end, max_text or
 * anything it leaves to the reader (tests). */
void hsvm_early_parse_join(hsvm_early_parse *ep);

/* Frees the parse and whichever of its arrays are not NULL: set a field to
 * NULL to keep that array (then released with hsvm_early_parse_release). */
void hsvm_early_parse_free(hsvm_early_parse *ep);

void hsvm_early_parse_release(void *array);

#endif
