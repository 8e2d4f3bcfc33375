/* The class-score summaries of a one-vs-one model (hsvm_cli/models/
 * class_weights.py): u_c = (1/B) sum over the classifiers j of c's pairs of
 * +-w_j/||w_j||, beta_c the same of +-b_j/||w_j|| (+ where c is the pair's
 * first class). */
#ifndef HSVM_CLASS_WEIGHTS_H
#define HSVM_CLASS_WEIGHTS_H
#include <stdint.h>

/* Adds the contributions of n consecutive classifier rows W [n][d], b [n],
 * the first of them being classifier row `first` of the model (pair
 * row / bags), to U [K][d] and beta [K] (double, running sums).  Every value
 * follows one order, so the result is the same on every machine and
 * however the rows are split into calls: ||w|| = sqrt of the sum of the
 * squares of w's float32 values in double, in index order; scale =
 * (1/||w||)/bags (0 for w = 0); then, row after row, U[a][k] += w[k]*scale
 * and U[b][k] -= w[k]*scale (each product rounded to double first),
 * beta[a] += b*scale, beta[b] -= b*scale.  Returns 0, or -1 when a row's
 * pair names a class outside 0..K-1. */
int hsvm_class_weights_add(const float *W, const float *b, int64_t n, int64_t d, int64_t first, int32_t bags,
                           const int32_t *pair_a, const int32_t *pair_b, int64_t K, double *U, double *beta);

#endif
