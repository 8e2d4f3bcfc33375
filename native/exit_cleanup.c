/* OpenBLAS ends the process with exit(1) when it cannot allocate its
 * buffers ("Memory allocation still failed after 10 retries, giving up"), a
 * ulimit -v a projection's threads run into: no Python `finally` runs then,
 * and the temporary file of the output being written stayed behind.  The
 * temporaries io/files.atomic_output is writing are listed here; a C atexit
 * handler removes those still listed.  (A normal exit finds the list empty;
 * os._exit and signals' exits do not run it, and need not: Python's own
 * cleanup has run before them.) */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hsvm_exit_cleanup.h"

#define MAX_PENDING 64

static char *pending[MAX_PENDING];
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static int handler_installed;

static void remove_pending(void)
{
    for (int i = 0; i < MAX_PENDING; i++) {
        if (pending[i])
            unlink(pending[i]);
    }
}

int hsvm_exit_cleanup_add(const char *path)
{
    int rc = -1;
    pthread_mutex_lock(&pending_lock);
    if (!handler_installed && atexit(remove_pending) == 0)
        handler_installed = 1;
    for (int i = 0; i < MAX_PENDING && rc != 0; i++) {
        if (!pending[i]) {
            pending[i] = strdup(path);
            rc = pending[i] ? 0 : -1;
        }
    }
    pthread_mutex_unlock(&pending_lock);
    return handler_installed ? rc : -1;
}

void hsvm_exit_cleanup_remove(const char *path)
{
    pthread_mutex_lock(&pending_lock);
    for (int i = 0; i < MAX_PENDING; i++) {
        if (pending[i] && strcmp(pending[i], path) == 0) {
            free(pending[i]);
            pending[i] = NULL;
            break;
        }
    }
    pthread_mutex_unlock(&pending_lock);
}
