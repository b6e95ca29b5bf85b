// Test input of the fatbin reader: two small kernels, compiled by tests/fatbin/meson.build.
extern "C" __global__ void vec_add(float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        a[i] += b[i];
}

extern "C" __global__ void vec_scale(double *a, double s, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        a[i] *= s;
}
