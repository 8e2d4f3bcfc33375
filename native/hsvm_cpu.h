/* Which code path a dispatching kernel runs: one CPU check and one reading of
 * the HSVM_KERNEL environment variable for every kernel (Hamming voting and
 * distances, the refine dot product).  This header is also fed to cffi's
 * cdef after dropping lines starting with '#', so it holds plain
 * declarations only. */
#ifndef HSVM_CPU_H
#define HSVM_CPU_H
#include <stdint.h>

enum {
    HSVM_KERNEL_AUTO = 0,      /* best the CPU has, unless HSVM_KERNEL says otherwise */
    HSVM_KERNEL_PORTABLE = 1,  /* plain C (with POPCNT on x86-64) */
    HSVM_KERNEL_AVX2 = 2,      /* AVX2 */
    HSVM_KERNEL_AVX512 = 3     /* AVX-512 F/BW/VL/DQ + VPOPCNTDQ */
};

/* Apart from every kernel's own return codes, so a caller can tell them apart. */
enum {
    HSVM_CPU_EINVAL = -100,       /* not a kernel id */
    HSVM_CPU_EBADNAME = -101,     /* HSVM_KERNEL is not avx512, avx2, portable or auto */
    HSVM_CPU_EUNAVAILABLE = -102  /* the requested kernel needs instructions this CPU lacks */
};

/* Bit mask of the kernels this CPU (and its OS) can run: bit k set = id k. */
int32_t hsvm_kernels_available(void);
/* Resolves a request (HSVM_KERNEL_*) to the kernel id that will run, reading
 * HSVM_KERNEL for HSVM_KERNEL_AUTO on every call (so a test or a driver can
 * switch paths without reloading the library); negative HSVM_CPU_E* on error. */
int32_t hsvm_resolve_kernel(int32_t requested);
/* Bytes of the level-1 data (level 1), level-2 (2) or level-3 (3) cache of
 * one core as the C library reports it (sysconf), or a typical value (32 KB,
 * 1 MB, 32 MB) where it reports none; kernels size their cache blocking with
 * it. */
int64_t hsvm_cache_bytes(int32_t level);
/* "portable", "avx2", "avx512", "auto", or "?" for an unknown id. */
const char *hsvm_kernel_name(int32_t kernel);

#endif
