#include <string.h>
#include "hsvm_votes.h"
#include "pair_rule.h"

int hsvm_ovo_votes(const float *dec, int64_t n, int64_t n_pairs, int32_t bags,
                   const int32_t *pair_a, const int32_t *pair_b,
                   int32_t n_classes, int32_t *votes, double *conf)
{
    for (int64_t p = 0; p < n_pairs; p++) {
        if (pair_a[p] < 0 || pair_a[p] >= n_classes || pair_b[p] < 0 || pair_b[p] >= n_classes)
            return -1;
    }
    const int64_t ncols = n_pairs * (int64_t)bags;
    for (int64_t i = 0; i < n; i++) {
        int32_t *v = votes + i * (int64_t)n_classes;
        double *cf = conf + i * (int64_t)n_classes;
        memset(v, 0, sizeof(int32_t) * (size_t)n_classes);
        memset(cf, 0, sizeof(double) * (size_t)n_classes);
        const float *row = dec + i * ncols;
        for (int64_t p = 0; p < n_pairs; p++) {
            double mean;
            const int a_wins = pair_rule_a_wins(row + p * bags, bags, &mean);
            const int32_t a = pair_a[p], b = pair_b[p];
            v[a_wins ? a : b] += 1;
            cf[a] += mean;
            cf[b] -= mean;
        }
    }
    return 0;
}

int hsvm_cell_votes(const float *dec, const int64_t *A, const int64_t *B, const uint8_t *pmask,
                    const int8_t *sign, int64_t n, int64_t q, int32_t bags, int32_t n_classes,
                    int32_t *votes, double *conf)
{
    memset(votes, 0, sizeof(int32_t) * (size_t)(n * n_classes));
    memset(conf, 0, sizeof(double) * (size_t)(n * n_classes));
    for (int64_t i = 0; i < n; i++) {
        int32_t *v = votes + i * (int64_t)n_classes;
        double *cf = conf + i * (int64_t)n_classes;
        for (int64_t j = i * q; j < (i + 1) * q; j++) {
            if (!pmask[j])
                continue;
            const int flipped = sign != NULL && sign[j] < 0;
            /* the model's own (first, second) classes of the pair */
            const int64_t a = flipped ? B[j] : A[j], b = flipped ? A[j] : B[j];
            if (a < 0 || a >= n_classes || b < 0 || b >= n_classes)
                return -1;
            double mean;
            v[pair_rule_a_wins(dec + j * bags, bags, &mean) ? a : b] += 1;
            cf[a] += mean;
            cf[b] -= mean;
        }
    }
    return 0;
}
