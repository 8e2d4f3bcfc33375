/* Pairwise coupling's per-class sums over every pair (see hsvm_coupling.h). */
#include <stdlib.h>
#include <string.h>

#include "hsvm_coupling.h"

int hsvm_coupling_den(const double *r, int64_t n, int64_t P, const int64_t *pair_a, const int64_t *pair_b,
                      int32_t K, double *den)
{
    for (int64_t p = 0; p < P; p++)
        if (pair_a[p] < 0 || pair_a[p] >= K || pair_b[p] < 0 || pair_b[p] >= K)
            return -1;
    double *from_b = malloc(sizeof(double) * (size_t)(K > 0 ? K : 1));
    if (!from_b)
        return -2;
    /* train-ovo's canonical order (0,1), (0,2), .., (K-2,K-1): class a's
     * sum runs in a register and class b's terms are a contiguous run of
     * from_b -- the same additions in the same order as the general loop */
    int canonical = P == (int64_t)K * (K - 1) / 2;
    for (int64_t p = 0, a = 0, b = 1; canonical && p < P; p++) {
        canonical = pair_a[p] == a && pair_b[p] == b;
        if (++b == K) {
            a++;
            b = a + 1;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        const double *x = r + i * P;
        double *da = den + i * (int64_t)K;
        memset(da, 0, sizeof(double) * (size_t)K);
        memset(from_b, 0, sizeof(double) * (size_t)K);
        if (canonical) {
            for (int32_t a = 0; a + 1 < K; a++) {
                const int64_t run = K - 1 - a;
                double acc = 0.0;
                for (int64_t t = 0; t < run; t++) {
                    const double q = 1.0 - x[t];
                    acc += q * q;
                }
                double *fb = from_b + a + 1;
                for (int64_t t = 0; t < run; t++)
                    fb[t] += x[t] * x[t];
                da[a] = acc;
                x += run;
            }
            for (int32_t c = 0; c < K; c++)
                da[c] += from_b[c];
            continue;
        }
        for (int64_t p = 0; p < P; p++) {
            const double q = 1.0 - x[p];
            da[pair_a[p]] += q * q;
            from_b[pair_b[p]] += x[p] * x[p];
        }
        for (int32_t c = 0; c < K; c++)
            da[c] += from_b[c];
    }
    free(from_b);
    return 0;
}
