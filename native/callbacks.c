#include <string.h>

#include "hsvm_callbacks.h"

/* Per thread: a solve and its messages run on the calling thread, so a
 * trainer reads its own count before and after each call, whatever other
 * threads train meanwhile. */
static _Thread_local int64_t iteration_limits;
static _Thread_local int last_was_limit;

void hsvm_print_nothing(const char *s)
{
    if (!s)
        return;
    /* LIBLINEAR's "WARNING: reaching max number of iterations" (dual
     * solvers) and "... of Newton iterations" (primal); not the primal's
     * inner conjugate-gradient limit, which the outer iteration corrects.
     * LIBLINEAR 2.4x's -s 1 follows its dual limit with "Switching to use
     * -s 2" and solves again by Newton's method (which converges, or says so
     * itself): that limit is not counted -- in the same message or the
     * next. */
    const int limit = strstr(s, "WARNING: reaching max number of") && !strstr(s, "inner");
    if (limit)
        iteration_limits++;
    if (strstr(s, "Switching to use") && (limit || last_was_limit))
        iteration_limits--;
    last_was_limit = limit && !strstr(s, "Switching to use");
}

int64_t hsvm_iteration_limits(void)
{
    return iteration_limits;
}
