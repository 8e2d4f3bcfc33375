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

#endif
