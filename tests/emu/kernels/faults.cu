// Kernels that must fail in defined ways (tests/emu/test_emu_errors.c).
#include <cstdio>

extern "C" __global__ void out_of_bounds(int *p, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    p[t + n] = t;   // t + n past the allocation for the last threads
}

extern "C" __global__ void shared_oob(int *out, int k)
{
    __shared__ int s[32];
    s[threadIdx.x % 32] = 1;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x + k];
}

extern "C" __global__ void misaligned(char *p)
{
    *(int *)(p + 1) = 5;
}

extern "C" __global__ void traps(int *p)
{
    if (threadIdx.x == 5)
        __trap();
    p[threadIdx.x] = 1;
}

extern "C" __global__ void prints(int x)
{
    printf("x = %d\n", x);
}

extern "C" __global__ void spins(volatile int *flag)
{
    while (*flag == 0)
        ;
}

// Half the block waits at a barrier the other half never reaches.
extern "C" __global__ void bad_barrier(int *out)
{
    if (threadIdx.x < 32) {
        __syncthreads();
        out[threadIdx.x] = 1;
    } else {
        while (out[0] == 0)
            ;
    }
}
