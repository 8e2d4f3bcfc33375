/* Sample fingerprints (see hsvm_fingerprint.h; the sums are defined in
 * docs/formats.md).  A numpy form of the same sums took 0.8 s for 8.4 M
 * values on a loaded machine (its uint64 temporaries, 67 MB each, faulting
 * in fresh pages); this loop is one pass, and the only implementation. */
#include <string.h>

#include "hsvm_fingerprint.h"

#define FP_INDEX 0x9E3779B97F4A7C15ULL
#define FP_VALUE 0xC2B2AE3D27D4EB4FULL
#define FP_MIX 0x165667B19E3779F9ULL
#define FP_COUNT 0xD6E8FEB86659FD93ULL

void hsvm_row_fingerprints(const int64_t *indptr, int64_t n, const int32_t *indices, const float *values,
                           uint64_t *out)
{
    for (int64_t r = 0; r < n; r++) {
        uint64_t sum = 0, count = 0;
        for (int64_t k = indptr[r]; k < indptr[r + 1]; k++) {
            uint32_t bits;
            memcpy(&bits, &values[k], sizeof bits);
            if ((bits & 0x7FFFFFFFu) == 0)          /* 0 and -0: no feature */
                continue;
            uint64_t m = ((uint64_t)(uint32_t)indices[k] + 1) * FP_INDEX ^ ((uint64_t)bits + 1) * FP_VALUE;
            m ^= m >> 32;
            m *= FP_MIX;
            m ^= m >> 29;
            sum += m;
            count++;
        }
        out[r] = sum + count * FP_COUNT;
    }
}
