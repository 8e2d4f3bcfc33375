/* C functions handed to other C libraries as callbacks.  A callback written in
 * Python runs Python code inside the foreign library, and a signal (Ctrl-C)
 * whose handler raises there is lost: ctypes prints and drops the exception.
 * Plain C callbacks leave the signal to be handled when control returns. */
#ifndef HSVM_CALLBACKS_H
#define HSVM_CALLBACKS_H
#include <stdint.h>

/* A print function that prints nothing (LIBLINEAR's set_print_string_function)
 * but counts, per thread, the messages saying a solve stopped at LIBLINEAR's
 * iteration limit (not one LIBLINEAR then finishes with another solver). */
void hsvm_print_nothing(const char *s);

/* The calling thread's count of those messages so far. */
int64_t hsvm_iteration_limits(void);

#endif
