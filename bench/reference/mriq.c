/* MRI-Q reference; see mriq.h. */
#include "mriq.h"
#include "bench_rng.h"

#include <math.h>

void mriq_generate(const mriq_inputs *in, uint32_t num_x, uint32_t num_k, uint64_t seed)
{
    bench_rng r;
    bench_rng_init(&r, seed, 0x6d726971); /* "mriq" */
    for (uint32_t i = 0; i < num_x; i++) {
        in->x[i] = bench_rng_float(&r, -0.5f, 0.5f);
        in->y[i] = bench_rng_float(&r, -0.5f, 0.5f);
        in->z[i] = bench_rng_float(&r, -0.5f, 0.5f);
    }
    for (uint32_t k = 0; k < num_k; k++) {
        float *kv = in->kv + (size_t)k * MRIQ_KV_FLOATS;
        kv[0] = bench_rng_float(&r, -8.0f, 8.0f);
        kv[1] = bench_rng_float(&r, -8.0f, 8.0f);
        kv[2] = bench_rng_float(&r, -8.0f, 8.0f);
        kv[3] = bench_rng_float(&r, 0.0f, 1.0f);
    }
}

void mriq_reference(const mriq_inputs *in, uint32_t num_x, uint32_t num_k, float *qr,
                    float *qi)
{
    const double two_pi = 6.283185307179586476925;
    for (uint32_t i = 0; i < num_x; i++) {
        double re = 0, im = 0;
        for (uint32_t k = 0; k < num_k; k++) {
            /* Phase in turns, reduced to [0, 1) in double, so float sin/cos get a small
             * argument and stay accurate (and fast). */
            const float *kv = in->kv + (size_t)k * MRIQ_KV_FLOATS;
            double t = (double)kv[0] * in->x[i] + (double)kv[1] * in->y[i] +
                       (double)kv[2] * in->z[i];
            float a = (float)(two_pi * (t - floor(t)));
            re += kv[3] * cosf(a);
            im += kv[3] * sinf(a);
        }
        qr[i] = (float)re;
        qi[i] = (float)im;
    }
}

double mriq_tolerance(const mriq_inputs *in, uint32_t num_k)
{
    double s = 0;
    for (uint32_t k = 0; k < num_k; k++)
        s += in->kv[(size_t)k * MRIQ_KV_FLOATS + 3];
    return MRIQ_TOL * s;
}
