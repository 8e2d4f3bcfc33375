/* Temporary output files that a C-level exit() must not leave behind. */
#ifndef HSVM_EXIT_CLEANUP_H
#define HSVM_EXIT_CLEANUP_H

/* List ``path`` (a temporary output being written) for removal should the
 * process end through C's exit() before it is renamed or removed; 0, or -1
 * when the list is full (the file is then simply not covered). */
int hsvm_exit_cleanup_add(const char *path);

/* Take ``path`` off the list (renamed into place, or removed). */
void hsvm_exit_cleanup_remove(const char *path);

#endif
