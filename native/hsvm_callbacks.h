/* C functions handed to other C libraries as callbacks.  A callback written in
 * Python runs Python code inside the foreign library, and a signal (Ctrl-C)
 * whose handler raises there is lost: ctypes prints and drops the exception.
 * Plain C callbacks leave the signal to be handled when control returns. */
#ifndef HSVM_CALLBACKS_H
#define HSVM_CALLBACKS_H

/* A print function that prints nothing (LIBLINEAR's set_print_string_function). */
void hsvm_print_nothing(const char *s);

#endif
