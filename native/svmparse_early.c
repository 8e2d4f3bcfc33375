/* The input's first lines parsed while the interpreter loads its modules
 * (hsvm_svmparse_early.h).  The thread reads the file in blocks as the
 * reader does, hands the complete lines of each to hsvm_svm_parse and stops
 * at the first thing the reader would have to decide with information this
 * thread lacks: a malformed line (the reader reports it), a row incomplete or
 * wider than the first (the model's width decides), a line longer than a
 * block, full arrays, or the stop request. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "hsvm_svmparse.h"
#include "hsvm_svmparse_early.h"

#define BLOCK (4 << 20)         /* as the reader's blocks */
#define MAX_WIDTH ((int64_t)2147483646)     /* io/svmlight.py MAX_FEATURES */
#define HUGE_PAGE (2 << 20)
#define MAX_ROWS ((int64_t)1 << 22)

typedef struct {
    pthread_t id;
    atomic_int stop;
    int fd;
} early_thread;

static void *aligned_block(size_t bytes, size_t align)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 1;
    if (posix_memalign(&p, align, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* as numpy asks for its large arrays: a fresh 34 MB chunk faults in
     * 2 MB pages, twice as fast as in 4 kB ones on this kind of VM */
    if (bytes >= (4u << 20))
        madvise(p, bytes & ~(size_t)(HUGE_PAGE - 1), MADV_HUGEPAGE);
#endif
    return p;
}

/* The first data row of buf[0:len] parsed with indices: its width when it
 * holds every column from 0 up to its last (a dense file), else -1. */
static int64_t first_row_width(const char *buf, int64_t len, int32_t zero_based, int64_t max_nnz)
{
    hsvm_svm_parse_state st;
    memset(&st, 0, sizeof st);
    st.max_col = -1;
    int64_t indptr[2] = {0, 0}, label;
    int32_t *indices = malloc(sizeof(int32_t) * (size_t)(max_nnz > 0 ? max_nnz : 1));
    float *values = malloc(sizeof(float) * (size_t)(max_nnz > 0 ? max_nnz : 1));
    int64_t width = -1;
    if (indices && values) {
        int status = hsvm_svm_parse(buf, len, zero_based, -1, MAX_WIDTH, 0, 1, max_nnz, indptr, indices, NULL,
                                    values, &label, &st);
        if (status >= 0 && st.rows == 1 && st.nnz > 0 && st.max_col + 1 == st.nnz)
            width = st.nnz;
    }
    free(indices);
    free(values);
    return width;
}

static void *run(void *arg)
{
    hsvm_early_parse *ep = arg;
    early_thread *t = ep->thread;
    const int64_t block = ep->block;
    char *buf = malloc((size_t)block);
    int64_t have = 0, consumed = 0, lines = 0, first_line = 0;
    int usable = 0, started = 0, end = 0;
    if (!buf)
        goto done;
    while (!end && !atomic_load_explicit(&t->stop, memory_order_relaxed)) {
        ssize_t got = read(t->fd, buf + have, (size_t)(block - have));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;      /* the end (the reader parses a last line without newline) or a failing read */
        have += got;
        int64_t cut = have - 1;
        while (cut >= 0 && buf[cut] != '\n')
            cut--;
        if (cut < 0) {
            if (have == block)
                break;  /* a line longer than a block */
            continue;
        }
        if (!started) {
            /* the arrays' sizes: a line takes at least 2 bytes ("1\n"), a value 4 (" 1:1");
             * the parse goes on to the end of the block in which it reaches max_text */
            int64_t text = ep->max_text + block < ep->size ? ep->max_text + block : ep->size;
            ep->row_cap = ep->chunk_rows < text / 2 + 1 ? ep->chunk_rows : text / 2 + 1;
            if (ep->row_cap > MAX_ROWS)
                ep->row_cap = MAX_ROWS;     /* a chunk of more rows is finished by the reader */
            ep->nnz_cap = text / 4 + 16;
            /* room at the first block's density (a value per ':'), and a quarter more:
             * the address space reserved stays near what the values take */
            int64_t colons = 0;
            for (const char *c = buf; (c = memchr(c, ':', (size_t)(buf + cut + 1 - c))) != NULL; c++)
                colons++;
            int64_t at_density = (int64_t)((double)colons * (double)text / (double)(cut + 1) * 1.25) + 1024;
            if (at_density < ep->nnz_cap)
                ep->nnz_cap = at_density;
            ep->n_features = first_row_width(buf, cut + 1, ep->zero_based, (cut + 1) / 4 + 16);
            ep->complete = ep->n_features > 0;
            /* a full chunk of complete rows, and the room the parser asks to
             * find free before a line (its bytes / 4 + 1: a line is at most a block) */
            if (ep->complete && ep->row_cap * ep->n_features + block / 4 + 1 < ep->nnz_cap)
                ep->nnz_cap = ep->row_cap * ep->n_features + block / 4 + 1;
            ep->indptr = malloc(sizeof(int64_t) * (size_t)(ep->row_cap + 1));
            ep->labels = malloc(sizeof(int64_t) * (size_t)ep->row_cap);
            ep->values = aligned_block(sizeof(float) * (size_t)ep->nnz_cap,
                                       ep->nnz_cap >= (1 << 20) ? HUGE_PAGE : 64);
            if (!ep->complete)
                ep->indices = aligned_block(sizeof(int32_t) * (size_t)ep->nnz_cap,
                                            ep->nnz_cap >= (1 << 20) ? HUGE_PAGE : 64);
            if (!ep->indptr || !ep->labels || !ep->values || (!ep->complete && !ep->indices))
                break;
            ep->indptr[0] = 0;
            ep->st.max_col = -1;
            started = usable = 1;
        }
        hsvm_svm_parse_state *st = &ep->st;
        int64_t pos = 0, stop_at = cut + 1;
        while (pos < stop_at) {
            int status = hsvm_svm_parse(buf + pos, stop_at - pos, ep->zero_based, ep->complete ? ep->n_features : -1,
                                        MAX_WIDTH, 0, ep->row_cap, ep->nnz_cap, ep->indptr, ep->indices, NULL,
                                        ep->values, ep->labels, st);
            if (status < 0) {
                /* the reader reports it, with the line it counts itself */
                usable = 0;
                end = 1;
                break;
            }
            if (st->first_row_line >= 0 && first_line == 0)
                first_line = lines + st->first_row_line + 1;
            pos += st->consumed;
            lines += st->lines;
            if (status != HSVM_SVM_DONE) {
                /* a full chunk, full arrays or an incomplete row: the reader goes on from here */
                end = 1;
                break;
            }
        }
        consumed += pos;
        memmove(buf, buf + pos, (size_t)(have - pos));
        have -= pos;
        if (consumed >= ep->max_text)
            break;
    }
done:
    free(buf);
    close(t->fd);
    t->fd = -1;
    ep->consumed = consumed;
    ep->lines = lines;
    ep->first_line = first_line;
    ep->usable = usable;
    return NULL;
}

hsvm_early_parse *hsvm_early_parse_start(const char *path, int32_t zero_based, int64_t chunk_rows, int64_t max_text,
                                         int64_t block)
{
    if (chunk_rows < 1 || max_text < 1 || block < 0)
        return NULL;
    /* Under an address-space limit (ulimit -v, -d) the arrays reserved here
     * could be what the command then lacks: no early parse. */
    struct rlimit lim;
    if ((getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) ||
        (getrlimit(RLIMIT_DATA, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY))
        return NULL;
    /* Only a regular file is opened: opening a FIFO would wait for its
     * writer (and, closed again, cut that writer off), a device may act on
     * being opened.  O_NONBLOCK in case the name changes in between. */
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return NULL;
    }
    hsvm_early_parse *ep = calloc(1, sizeof *ep);
    early_thread *t = calloc(1, sizeof *t);
    if (!ep || !t) {
        free(ep);
        free(t);
        close(fd);
        return NULL;
    }
    ep->zero_based = zero_based;
    ep->chunk_rows = chunk_rows;
    ep->max_text = max_text;
    ep->block = block ? block : BLOCK;
    ep->dev = (int64_t)sb.st_dev;
    ep->ino = (int64_t)sb.st_ino;
    ep->size = (int64_t)sb.st_size;
    ep->mtime_s = (int64_t)sb.st_mtim.tv_sec;
    ep->mtime_ns = (int64_t)sb.st_mtim.tv_nsec;
    ep->ctime_s = (int64_t)sb.st_ctim.tv_sec;
    ep->ctime_ns = (int64_t)sb.st_ctim.tv_nsec;
    ep->n_features = -1;
    ep->thread = t;
    t->fd = fd;
    atomic_init(&t->stop, 0);
    /* the thread starts with every signal blocked: Ctrl-C and the rest go
     * to the interpreter's threads, and never cut its reads short */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int failed = pthread_create(&t->id, NULL, run, ep);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (failed) {
        close(fd);
        free(t);
        free(ep);
        return NULL;
    }
    return ep;
}

void hsvm_early_parse_stop(hsvm_early_parse *ep)
{
    if (ep->thread)
        atomic_store(&((early_thread *)ep->thread)->stop, 1);
    hsvm_early_parse_join(ep);
}

void hsvm_early_parse_join(hsvm_early_parse *ep)
{
    early_thread *t = ep->thread;
    if (!t)
        return;
    pthread_join(t->id, NULL);
    free(t);
    ep->thread = NULL;
}

void hsvm_early_parse_free(hsvm_early_parse *ep)
{
    if (!ep)
        return;
    hsvm_early_parse_stop(ep);
    free(ep->indptr);
    free(ep->labels);
    free(ep->indices);
    free(ep->values);
    free(ep);
}

void hsvm_early_parse_release(void *array)
{
    free(array);
}
