#ifndef HSVM_COUPLING_H
#define HSVM_COUPLING_H
#include <stdint.h>

/* The denominators of pairwise coupling's block coordinate step
 * (hsvm_cli/proba/mass_coupling.py): for each of n rows of r [n, P]
 * (r_p = P(pair_a[p] | the pair)) and each class c,
 *     den[c] = sum_{p: a_p = c} (1 - r_p)^2  +  sum_{p: b_p = c} r_p^2,
 * each sum taken in pair order and the two then added: the bits of the
 * class-by-pair incidence products this replaces, in one pass over r
 * instead of two squared copies and two transposed sparse products.
 * Returns 0, or -1 for a class outside 0..K-1. */
int hsvm_coupling_den(const double *r, int64_t n, int64_t P, const int64_t *pair_a, const int64_t *pair_b,
                      int32_t K, double *den);

#endif
