/* Black-Scholes reference; see bs.h. */
#include "bs.h"
#include "bench_rng.h"

#include <math.h>

void bs_generate(float *s, float *x, float *t, size_t n, uint64_t seed)
{
    bench_rng r;
    bench_rng_init(&r, seed, 0x6273); /* "bs" */
    for (size_t i = 0; i < n; i++) {
        s[i] = bench_rng_float(&r, 5.0f, 30.0f);
        x[i] = bench_rng_float(&r, 1.0f, 100.0f);
        t[i] = bench_rng_float(&r, 0.25f, 10.0f);
    }
}

static double bs_cnd(double d)
{
    return 0.5 * erfc(-d / sqrt(2.0));
}

double bs_price(double s, double x, double t, double r, double v, double *put)
{
    double sq = sqrt(t);
    double d1 = (log(s / x) + (r + 0.5 * v * v) * t) / (v * sq);
    double d2 = d1 - v * sq;
    double disc = x * exp(-r * t);
    *put = disc * bs_cnd(-d2) - s * bs_cnd(-d1);
    return s * bs_cnd(d1) - disc * bs_cnd(d2);
}

void bs_reference(const float *s, const float *x, const float *t, float *call, float *put,
                  size_t n, float r, float v0, float dv, uint32_t n_vol)
{
    for (size_t i = 0; i < n; i++) {
        double c = 0, p = 0;
        for (uint32_t j = 0; j < n_vol; j++) {
            double pj;
            c += bs_price(s[i], x[i], t[i], r, (double)v0 + (double)j * dv, &pj);
            p += pj;
        }
        call[i] = (float)(c / n_vol);
        put[i] = (float)(p / n_vol);
    }
}
