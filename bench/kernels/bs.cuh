/* Black-Scholes: one thread per option, priced under n_vol volatilities (mean call and put
 * stored). The normal CDF is the Abramowitz-Stegun polynomial of the CUDA samples. About
 * 70 instructions per volatility against 20 bytes of DRAM traffic per option: with the
 * default 4 volatilities, compute-bound (one alone would be memory-bound on an H100). */
#ifndef BENCH_KERNEL_BS_CUH
#define BENCH_KERNEL_BS_CUH

__device__ static float bs_cnd_poly(float d)
{
    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f,
                a4 = -1.821255978f, a5 = 1.330274429f, rsqrt2pi = 0.39894228040143267794f;
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float c = rsqrt2pi * expf(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
    return d > 0 ? 1.0f - c : c;
}

extern "C" __global__ void bs_sweep(const float *s, const float *x, const float *t, float *call,
                                    float *put, float r, float v0, float dv, unsigned n_vol,
                                    unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float si = s[i], xi = x[i], ti = t[i];
    float sq = sqrtf(ti), disc = xi * expf(-r * ti), lsx = logf(si / xi);
    float c = 0.0f, p = 0.0f;
    for (unsigned j = 0; j < n_vol; j++) {
        float v = v0 + (float)j * dv;
        float d1 = (lsx + (r + 0.5f * v * v) * ti) / (v * sq);
        float d2 = d1 - v * sq;
        float n1 = bs_cnd_poly(d1), n2 = bs_cnd_poly(d2);
        c += si * n1 - disc * n2;
        p += disc * (1.0f - n2) - si * (1.0f - n1);
    }
    call[i] = c / (float)n_vol;
    put[i] = p / (float)n_vol;
}

#endif
