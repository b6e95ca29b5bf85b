// Grid-stride loops: correct only if gridDim is the original grid's in every slice.
extern "C" __global__ void saxpy_stride(float *y, const float *x, float a, unsigned n)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

// A 2-D grid-stride loop over rows and columns.
extern "C" __global__ void scale2d_stride(float *m, unsigned rows, unsigned cols, float s)
{
    for (unsigned r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += blockDim.y * gridDim.y)
        for (unsigned c = blockIdx.x * blockDim.x + threadIdx.x; c < cols;
             c += blockDim.x * gridDim.x)
            m[(size_t)r * cols + c] *= s;
}
