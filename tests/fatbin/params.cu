/* Kernels of known parameter layouts for the cubin reader's tests (test_cubin.c): the
 * layouts the .nv.info sections must give, compared with the PTX of the same source. */
struct twelve {
    char c[12];
};

struct aligned16 {
    float4 v;
    int tail;
};

__device__ int counter;
__device__ float table[7];
__constant__ float coeffs[4];

__device__ __noinline__ int helper(int x)
{
    return x * 3 + (int)coeffs[x & 3];
}

extern "C" __global__ void scale(float *out, const float *in, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * in[i];
    if (i == 0)
        atomicAdd(&counter, 1);
}

extern "C" __global__ void mixed(char c, double d, twelve s, short h, int *p)
{
    if (p)
        *p = c + (int)d + s.c[3] + h + (int)table[1];
}

extern "C" __global__ void noargs() {}

extern "C" __global__ void __launch_bounds__(128) bounded(int *p)
{
    *p = helper(*p);
}

extern "C" __global__ void wide(aligned16 a, char b, aligned16 c, long long d)
{
    if (a.tail == b)
        table[0] = c.v.x + (float)d;
}

template <typename T>
__global__ void templated(T *p, T v)
{
    *p = v;
}

template __global__ void templated<double>(double *, double);
