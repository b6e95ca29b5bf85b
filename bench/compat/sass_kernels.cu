/* Device code of sass_module.cu, built with `nvcc -cubin -arch=sm_90` into SASS only (no
 * PTX), as frameworks and NVRTC ship kernels, and embedded in the program. */
__device__ int sass_calls;

extern "C" __global__ void saxpy_sass(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
    if (i == 0)
        atomicAdd(&sass_calls, 1);
}
