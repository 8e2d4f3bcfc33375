#include <string.h>

#include "hsvm_callbacks.h"

/* Per thread: a solve and its messages run on the calling thread, so a
 * trainer reads its own count before and after each call, whatever other
 * threads train meanwhile. */
static _Thread_local int64_t iteration_limits;

void hsvm_print_nothing(const char *s)
{
    /* LIBLINEAR's "WARNING: reaching max number of iterations" (dual
     * solvers) and "... of Newton iterations" (primal); not the primal's
     * inner conjugate-gradient limit, which the outer iteration corrects. */
    if (s && strstr(s, "WARNING: reaching max number of") && !strstr(s, "inner"))
        iteration_limits++;
}

int64_t hsvm_iteration_limits(void)
{
    return iteration_limits;
}
