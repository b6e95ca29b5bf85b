#include <cstdio>
#include <cuda_fp16.h>

// Assorted code generation: printf (only when asked), math library calls with local
// memory, vector loads, half precision.
extern "C" __global__ void misc_math(float *out, const float4 *in4, double *d, unsigned n,
                                     int verbose)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (verbose)
        printf("block %u thread %u\n", blockIdx.x, threadIdx.x);
    if (i >= n)
        return;
    float4 v = in4[i];
    float s = sinf(v.x) + expf(v.y * 0.001f) + sqrtf(fabsf(v.z)) + v.w;
    out[i] = s;
    d[i] = pow(fabs(d[i]) + 1.0, 0.5) + (double)blockIdx.x;
}

extern "C" __global__ void half_axpy(__half *y, const __half *x, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __float2half(a * __half2float(x[i]) + __half2float(y[i]));
}
