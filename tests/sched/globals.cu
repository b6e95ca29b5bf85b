// Module variables as nvcc writes them into PTX, for tests/sched/test_sim_globals.c: the
// test reads the sizes and initial values below back through the sim's global_get.
struct pair {
    int a;
    double b;
};

__device__ int counter;
__constant__ float coeffs[16];
__device__ double table[3] = {1.0, 2.0, 3.0};
__device__ float4 vecs[2];
__device__ pair pairs[5];
__device__ __managed__ unsigned long long managed_total;
__device__ float scale = 1.5f;
__device__ int *target = &counter;
namespace ns {
__device__ short in_namespace[7] = {-1, 2};
}

extern "C" __global__ void comp(int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(target, 1);
        vecs[i & 1].x += coeffs[i & 15] * (float)table[i % 3] * scale;
        pairs[i % 5].a += ns::in_namespace[i % 7];
        atomicAdd(&managed_total, 1ull);
    }
}
