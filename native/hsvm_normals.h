/* hsvm's reproducible Gaussian stream (hsvm_cli/hashing/generator.py) in C. */
#ifndef HSVM_NORMALS_H
#define HSVM_NORMALS_H
#include <stdint.h>

/* The first `count` normals of hsvm_cli.hashing.generator.standard_normal(count,
 * seed=seed, stream=stream), bit for bit: SplitMix64 uniforms keyed by
 * (seed, stream), Marsaglia's polar method, and the same atanh-series log,
 * all in exactly rounded double operations evaluated in the same order. */
void hsvm_standard_normal(uint64_t seed, uint64_t stream, double *out, int64_t count);
/* The same values rounded to float32 as they are made (no double array). */
void hsvm_standard_normal_f32(uint64_t seed, uint64_t stream, float *out, int64_t count);

#endif
