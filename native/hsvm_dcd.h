/* Dual coordinate descent for linear SVMs on packed sign codes (Hash-SVM's
 * training step): the features of sample i are x_ij = +1/sqrt(k) where bit j
 * of its code is set and -1/sqrt(k) elsewhere, plus a bias feature 1. */
#ifndef HSVM_DCD_H
#define HSVM_DCD_H
#include <stdint.h>

typedef struct {
    int32_t iterations;      /* outer iterations run (LIBLINEAR's #iter) */
    int32_t n_sv;            /* alpha_i > 0 */
    double objective;        /* dual objective 1/2 a^T Qbar a - e^T a (LIBLINEAR's "Objective value") */
} hsvm_dcd_result;

/* glibc's rand() (TYPE_3 additive feedback generator) after srand(seed),
 * reimplemented so that the visiting order of the coordinates equals
 * LIBLINEAR's under glibc and is the same on every platform.  Writes the
 * first `count` values of the stream (tests compare them with libc). */
void hsvm_glibc_rand_stream(uint32_t seed, int32_t *out, int64_t count);

/* Solves LIBLINEAR's -s 1 (l1loss = 0: L2-loss, Cp/Cn bound nothing, the
 * diagonal gains 1/(2C)) or -s 3 (l1loss = 1: L1-loss, 0 <= alpha <= C) with
 * -B 1, by Hsieh et al.'s (ICML 2008) dual coordinate descent with
 * LIBLINEAR's random permutations (hsvm_glibc_rand_stream seeded by `seed`),
 * shrinking and stopping rule (projected-gradient gap <= eps), at most
 * max_iter outer iterations.
 *   codes  [*, stride] uint64 sign codes; the first `words` words of a row
 *          (bits = 64 * words) are its features;
 *   rows   [l] the rows of `codes` forming the problem (repeats allowed);
 *   y      [l] +1 / -1 labels;
 *   w      [64 * words] out: the weights; bias out: the bias weight;
 *   alpha  [l] out: the dual solution;
 *   kernel HSVM_KERNEL_PORTABLE, _AVX2 or _AVX512 (all give the same bits).
 * Returns 0, -1 for bad arguments, -2 when out of memory. */
int32_t hsvm_dcd_bits(const uint64_t *codes, int64_t stride, int64_t words, const int64_t *rows, const int8_t *y,
                      int64_t l, int32_t l1loss, double Cp, double Cn, double eps, int32_t max_iter, uint32_t seed,
                      int32_t kernel, double *w, double *bias, double *alpha, hsvm_dcd_result *result);

#endif
