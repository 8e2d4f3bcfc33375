/* The exact circulant SVM: L binary linear SVMs whose weight vectors are the
 * rows of circ(w), solved as one SVM by dual coordinate descent. */
#ifndef HSVM_CIRCULANT_SVM_H
#define HSVM_CIRCULANT_SVM_H
#include <stdint.h>

/* Row l of circ(w) is w^T P_l with (P_l x)_k = x_{(k + l) mod d}, so
 *     w^T P_l x = sum_j x_j w_{(j - l) mod d}.
 * The problem, over the N L virtual rows xhat_{nl} = [P_l x_n ; beta e_l]
 * (index n L + l) with labels y_{nl} = Z[n L + l] in {-1, +1}:
 *     min_{w, b} 1/2 (||w||^2 + ||b||^2) + C sum_{n,l} loss(y_{nl} (w^T P_l x_n + beta b_l)),
 * loss 1: hinge max(0, 1 - m) (LIBLINEAR -s 3), loss 2: its square (-s 1).
 * Solved in the dual by coordinate descent with shrinking (Hsieh, Chang, Lin,
 * Keerthi & Sundararajan, ICML 2008), each row formed on the fly from x_n in
 * O(nnz(x_n)): nothing of size N L d is ever built.  Coordinates are visited
 * in a random order per pass from a SplitMix64 stream of `seed`; the solver
 * stops when the projected gradient's spread is <= eps (LIBLINEAR's rule) or
 * after max_iter passes.
 * X: CSR (int64 indptr, int32 indices < d, double data).  Outputs: w [d],
 * b [L] (the weights of the beta e_l features: bit l's bias is beta b_l) and
 * alpha [N L], all overwritten.  stats[0] = passes, stats[1] = coordinate
 * updates, stats[2] = 1 if it stopped by eps.  Returns 0, or -1 when memory
 * runs out. */
int hsvm_circsvm_train(const int64_t *indptr, const int32_t *indices, const double *data, int64_t N, int64_t d,
                       const int8_t *Z, int64_t L, const int64_t *shift, double C, int32_t loss, double beta,
                       double eps, int64_t max_iter, uint64_t seed, double *w, double *b, double *alpha,
                       int64_t *stats);

/* Decision values out[n L + l] = w^T P_{shift[l]} x_n + beta b_l, directly (O(N L nnz)). */
void hsvm_circsvm_decisions(const int64_t *indptr, const int32_t *indices, const double *data, int64_t N,
                            int64_t d, const double *w, const double *b, int64_t L, const int64_t *shift, double beta,
                            double *out);

#endif
