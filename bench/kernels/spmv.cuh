/* Sparse matrix-vector multiplication, CSR scalar kernel: one thread per row. The matrix
 * streams from DRAM once and is used once (two flops per 8 bytes): memory-bound. */
#ifndef BENCH_KERNEL_SPMV_CUH
#define BENCH_KERNEL_SPMV_CUH

extern "C" __global__ void spmv_csr(const unsigned *row_ptr, const unsigned *col_idx,
                                    const float *vals, const float *x, float *y, unsigned rows)
{
    unsigned r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    float acc = 0.0f;
    for (unsigned j = row_ptr[r]; j < row_ptr[r + 1]; j++)
        acc += vals[j] * x[col_idx[j]];
    y[r] = acc;
}

#endif
