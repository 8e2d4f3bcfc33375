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

/* The same stream cut into spans of uniform pairs, for filling it on several
 * threads: the values of pairs p0..p1-1 (the polar method keeps a pair with
 * probability pi/4 and makes two values of it), at most `count` of them,
 * returning how many were written; they follow the values of the pairs
 * before p0 in the stream. */
int64_t hsvm_standard_normal_span(uint64_t seed, uint64_t stream, uint64_t p0, uint64_t p1, double *out,
                                  int64_t count);
int64_t hsvm_standard_normal_span_f32(uint64_t seed, uint64_t stream, uint64_t p0, uint64_t p1, float *out,
                                      int64_t count);
#endif
