#include "hsvm_rank.h"

/* True when class c (votes v, margin m) ranks before class d. */
static inline int better(int32_t v, double m, int32_t c, int32_t vd, double md, int32_t d)
{
    if (v != vd)
        return v > vd;
    if (m != md)
        return m > md;
    return c < d;
}

int hsvm_topk(const int32_t *votes, const double *margin, int64_t n, int32_t n_classes,
              int32_t k, int32_t *out)
{
    if (k < 1 || k > n_classes)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        const int32_t *v = votes + i * (int64_t)n_classes;
        const double *m = margin + i * (int64_t)n_classes;
        int32_t *top = out + i * (int64_t)k;
        int32_t filled = 0;
        /* Insertion into a sorted list of k: most classes lose against the
         * current k-th and cost one comparison, so this is ~O(K) per row. */
        for (int32_t c = 0; c < n_classes; c++) {
            if (filled == k) {
                int32_t last = top[k - 1];
                if (!better(v[c], m[c], c, v[last], m[last], last))
                    continue;
                filled--;
            }
            int32_t pos = filled;
            while (pos > 0) {
                int32_t prev = top[pos - 1];
                if (!better(v[c], m[c], c, v[prev], m[prev], prev))
                    break;
                top[pos] = prev;
                pos--;
            }
            top[pos] = c;
            filled++;
        }
    }
    return 0;
}
