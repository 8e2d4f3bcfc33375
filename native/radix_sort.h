/* Internal (not a public hsvm_*.h header, so cffi never reads it): the
 * stable LSD radix sort the decision DAG (dag.c) groups its samples with and
 * the tiled refine product (refine.c) groups its cells with. */
#ifndef HSVM_RADIX_SORT_H
#define HSVM_RADIX_SORT_H
#include <stdint.h>
#include <string.h>

#define RADIX_SORT_BITS 11
#define RADIX_SORT_BUCKETS (1 << RADIX_SORT_BITS)

/* Stable LSD radix sort of (key, idx) by key < 2^key_bits; the result ends in
 * *key / *idx (the buffers may be swapped with the tmp ones).  Digits on
 * which all keys agree are skipped (keys shared by every item cost one
 * counting pass a digit).  count: RADIX_SORT_BUCKETS words of scratch. */
static void radix_sort(uint64_t **key, int32_t **idx, uint64_t **key_tmp, int32_t **idx_tmp,
                       int64_t m, int key_bits, int64_t *count)
{
    if (m <= 32) {
        /* Few items: a stable insertion sort beats clearing the counts
         * for every digit. */
        uint64_t *ks = *key;
        int32_t *is = *idx;
        for (int64_t t = 1; t < m; t++) {
            const uint64_t kv = ks[t];
            const int32_t iv = is[t];
            int64_t u = t;
            for (; u > 0 && ks[u - 1] > kv; u--) {
                ks[u] = ks[u - 1];
                is[u] = is[u - 1];
            }
            ks[u] = kv;
            is[u] = iv;
        }
        return;
    }
    for (int shift = 0; shift < key_bits; shift += RADIX_SORT_BITS) {
        /* The last digit may be narrower: count only the buckets it has. */
        const int bits = key_bits - shift < RADIX_SORT_BITS ? key_bits - shift : RADIX_SORT_BITS;
        const uint64_t mask = ((uint64_t)1 << bits) - 1;
        uint64_t *ks = *key, *kd = *key_tmp;
        int32_t *is = *idx, *id = *idx_tmp;
        memset(count, 0, sizeof(int64_t) << bits);
        for (int64_t t = 0; t < m; t++)
            count[(ks[t] >> shift) & mask]++;
        if (count[(ks[0] >> shift) & mask] == (int64_t)m)
            continue;
        int64_t sum = 0;
        for (int r = 0; r < (1 << bits); r++) {
            const int64_t c = count[r];
            count[r] = sum;
            sum += c;
        }
        for (int64_t t = 0; t < m; t++) {
            const int64_t pos = count[(ks[t] >> shift) & mask]++;
            kd[pos] = ks[t];
            id[pos] = is[t];
        }
        *key = kd;
        *key_tmp = ks;
        *idx = id;
        *idx_tmp = is;
    }
}

#endif
