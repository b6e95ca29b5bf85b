/* Comparison of outputs with references; see bench_compare.h. */
#include "bench_compare.h"

#include <math.h>
#include <stdio.h>

size_t bench_compare_f32(const float *got, const float *want, size_t n, double atol,
                         double rtol, char *why, size_t why_len)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        double tol = atol + rtol * fabs(w);
        if (fabs(g - w) <= tol) /* false for NaN */
            continue;
        if (bad == 0 && why && why_len)
            snprintf(why, why_len, "element %zu: got %.9g, want %.9g (tolerance %.3g)", i, g, w,
                     tol);
        bad++;
    }
    return bad;
}

size_t bench_compare_u32(const uint32_t *got, const uint32_t *want, size_t n, char *why,
                         size_t why_len)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] == want[i])
            continue;
        if (bad == 0 && why && why_len)
            snprintf(why, why_len, "element %zu: got 0x%08x, want 0x%08x", i, (unsigned)got[i],
                     (unsigned)want[i]);
        bad++;
    }
    return bad;
}
