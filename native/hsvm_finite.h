/* Whether arrays of floats hold only finite values (the model container's
 * check of every floating-point array it reads; hsvm_cli/io/container.py). */
#ifndef HSVM_FINITE_H
#define HSVM_FINITE_H
#include <stdint.h>

/* 1 when none of the n values is NaN or infinite, 0 when one is; negative
 * HSVM_CPU_E* for a kernel that cannot run.  The values are read as bit
 * patterns (an all-ones exponent), so signalling NaNs count and no
 * floating-point exception is raised.  kernel: HSVM_KERNEL_* (hsvm_cpu.h);
 * every path gives the same answer. */
int32_t hsvm_all_finite_f32(const uint32_t *bits, int64_t n, int32_t kernel);
int32_t hsvm_all_finite_f64(const uint64_t *bits, int64_t n, int32_t kernel);

/* The same check of the rows rows[0..n_rows) of a matrix at base whose rows
 * hold row_len values (of 8 bytes when wide, else 4): n_rows when every row
 * is finite, else the position in rows of the first row that is not;
 * negative HSVM_CPU_E* for a kernel that cannot run.  One call for the few
 * thousand scattered rows a refine reads (io/container.py). */
int64_t hsvm_rows_finite(const void *base, int64_t row_len, const int64_t *rows, int64_t n_rows, int32_t wide,
                         int32_t kernel);

#endif
