/* Run-time choice of the code path, shared by every dispatching kernel. */
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>
#include "hsvm_cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#define HSVM_X86 1
#endif

static int32_t detect_kernels(void)
{
    int32_t mask = 1 << HSVM_KERNEL_PORTABLE;
#ifdef HSVM_X86
    /* libgcc's checks include the OS (XCR0) saving the wider registers, so a
     * kernel is only offered when its state survives context switches. */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        mask |= 1 << HSVM_KERNEL_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vpopcntdq"))
        mask |= 1 << HSVM_KERNEL_AVX512;
#endif
    return mask;
}

int32_t hsvm_kernels_available(void)
{
    /* Racing first calls compute the same value, so no lock is needed. */
    static volatile int32_t cached = 0;
    if (cached == 0)
        cached = detect_kernels();
    return cached;
}

static int64_t detect_cache_bytes(int32_t level)
{
    long v = -1;
    int64_t fallback = 0;
    switch (level) {
#ifdef _SC_LEVEL1_DCACHE_SIZE
    case 1: v = sysconf(_SC_LEVEL1_DCACHE_SIZE); break;
    case 2: v = sysconf(_SC_LEVEL2_CACHE_SIZE); break;
    case 3: v = sysconf(_SC_LEVEL3_CACHE_SIZE); break;
#endif
    default: break;
    }
    switch (level) {
    case 1: fallback = 32 << 10; break;
    case 2: fallback = 1 << 20; break;
    case 3: fallback = 32 << 20; break;
    default: return 0;
    }
    /* Some systems report 0 or nonsense (virtual machines, unknown CPUs). */
    if (v < 4096 || (int64_t)v > ((int64_t)1 << 34))
        return fallback;
    return (int64_t)v;
}

int64_t hsvm_cache_bytes(int32_t level)
{
    /* glibc answers with CPUID, which a virtual machine traps (tens of
     * microseconds): ask once.  Racing first calls store the same values. */
    static volatile int64_t cached[4];
    if (level < 1 || level > 3)
        return 0;
    if (cached[level] == 0)
        cached[level] = detect_cache_bytes(level);
    return cached[level];
}

const char *hsvm_kernel_name(int32_t kernel)
{
    switch (kernel) {
    case HSVM_KERNEL_AUTO: return "auto";
    case HSVM_KERNEL_PORTABLE: return "portable";
    case HSVM_KERNEL_AVX2: return "avx2";
    case HSVM_KERNEL_AVX512: return "avx512";
    default: return "?";
    }
}

static int32_t best_kernel(int32_t mask)
{
    for (int32_t k = HSVM_KERNEL_AVX512; k > HSVM_KERNEL_PORTABLE; k--)
        if (mask & (1 << k))
            return k;
    return HSVM_KERNEL_PORTABLE;
}

int32_t hsvm_resolve_kernel(int32_t requested)
{
    const int32_t mask = hsvm_kernels_available();
    if (requested == HSVM_KERNEL_AUTO) {
        const char *env = getenv("HSVM_KERNEL");
        if (env == NULL || env[0] == '\0' || strcasecmp(env, "auto") == 0)
            return best_kernel(mask);
        requested = -1;
        for (int32_t k = HSVM_KERNEL_PORTABLE; k <= HSVM_KERNEL_AVX512; k++)
            if (strcasecmp(env, hsvm_kernel_name(k)) == 0)
                requested = k;
        if (requested < 0)
            return HSVM_CPU_EBADNAME;
    }
    if (requested < HSVM_KERNEL_PORTABLE || requested > HSVM_KERNEL_AVX512)
        return HSVM_CPU_EINVAL;
    if (!(mask & (1 << requested)))
        return HSVM_CPU_EUNAVAILABLE;
    return requested;
}
