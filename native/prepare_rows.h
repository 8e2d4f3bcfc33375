/* Internal template of native/prepare.c (included once per value type with
 * VALUE_T and NAME defined; no include guard on purpose). */
static int64_t NAME(const int64_t *indptr, const int32_t *indices, const VALUE_T *values, int64_t n,
                    int64_t d, int32_t l2, int32_t canonical, float *dense, float *data)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t b = indptr[i], e = indptr[i + 1];
        float scale = 1.0f, pre = 1.0f;
        if (l2) {
            double s = 0.0;
            for (int64_t k = b; k < e; k++) {
                const double v = (double)(float)values[k];
                s += v * v;
            }
            row_scale(s, &pre, &scale);
        }
        float *row = dense ? dense + i * d : NULL;
        if (row && canonical && e - b == d) {
            /* A fully dense row (d increasing indices below d: 0 .. d-1):
             * stored in place, no zeroing first, a loop the compiler
             * vectorises. */
            const VALUE_T *x = values + b;
            for (int64_t k = 0; k < d; k++) {
                const float f = (float)x[k];
                const float v = l2 ? (f * pre) * scale : f;
                bad += !(fabsf(v) <= FLT_MAX);
                row[k] = v;
            }
            continue;
        }
        if (row)
            memset(row, 0, sizeof(float) * (size_t)d);
        for (int64_t k = b; k < e; k++) {
            const float f = (float)values[k];
            const float v = l2 ? (f * pre) * scale : f;
            bad += !(fabsf(v) <= FLT_MAX);
            if (row)
                row[indices[k]] = v;
            else
                data[k] = v;
        }
    }
    return bad;
}
