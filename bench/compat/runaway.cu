/* A kernel that never ends, for the kernel time limit (not a compatibility program: run
 * natively it never returns). Through kerneletd with a per-tenant kernel time limit the
 * launch must end with cudaErrorLaunchTimeout, soon after the limit:
 *   runaway [BLOCKS] [counted|function|recursion|deep]
 *                                         prints RESULT name=runaway status=NAME seconds=S
 * and exits 0 when the status is cudaErrorLaunchTimeout (deep: cudaErrorLaunchFailure). `counted` spins in a counted
 * loop (an induction variable stepped towards a bound it never meets), whose cancel poll
 * the fencing pass strip-mines, instead of a loop on a flag; `function` spins in such a
 * loop inside a device function that is not inlined (the pass passes it the cancel
 * word's address); `recursion` has no loop at all: a device function that calls itself
 * twice down to a depth of 30, 2^30 calls a thread (seconds natively), which the pass
 * makes poll where the recursion is entered. `deep` recurses without end, one call
 * deeper each time: natively the thread's stack overflows (the context is lost);
 * through kerneletd the fencing pass's stack guard ends it first, and the launch fails
 * as natively (cudaErrorLaunchFailure) with the context, and every other tenant, intact. */
#include <time.h>

#include "compat.h"

__global__ void spin(const volatile int *stop, int *count)
{
    int n = 0;
    while (!*stop)
        n++;
    count[blockIdx.x * blockDim.x + threadIdx.x] = n;
}

/* i steps by 2 from an even start towards an odd end: never equal. The volatile store
 * keeps the compiler from assuming the loop ends (and folding it away). */
__global__ void counted_spin(unsigned start, unsigned end, int *count)
{
    volatile unsigned sink = 0;
    for (unsigned i = start; i != end; i += 2)
        sink = i;
    count[blockIdx.x * blockDim.x + threadIdx.x] = (int)sink;
}

/* The same loop, in a function of its own. */
__device__ __noinline__ unsigned spin_function(unsigned start, unsigned end)
{
    volatile unsigned sink = 0;
    for (unsigned i = start; i != end; i += 2)
        sink = i;
    return sink;
}

__global__ void function_spin(unsigned start, unsigned end, int *count)
{
    count[blockIdx.x * blockDim.x + threadIdx.x] = (int)spin_function(start, end);
}

/* 2^depth calls and no loop; the result depends on every leaf so that none is folded. */
__device__ __noinline__ unsigned spin_tree(unsigned depth, unsigned seed)
{
    if (depth == 0)
        return seed * 2654435761u;
    return spin_tree(depth - 1, seed + 1) ^ spin_tree(depth - 1, seed * 3 + 7);
}

/* One call deeper each time, never returning (n comes back to 0 only after 2^32 calls
 * deep). Two calls, as in spin_tree: one call and an addition after it, the compiler
 * made a loop of (an accumulator) on the H100, which never touched the stack. */
__device__ __noinline__ unsigned dive(unsigned n, unsigned seed)
{
    if (n == 0)
        return seed;
    return dive(n + 1, seed * 3 + 1) ^ dive(n + 1, seed + 7);
}

__global__ void deep_spin(int *count)
{
    count[blockIdx.x * blockDim.x + threadIdx.x] = (int)dive(1, threadIdx.x);
}

__global__ void recursion_spin(unsigned depth, int *count)
{
    count[blockIdx.x * blockDim.x + threadIdx.x] = (int)spin_tree(depth, threadIdx.x);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int blocks = argc > 1 ? atoi(argv[1]) : 528;
    int *stop, *count;
    bool counted = argc > 2 && !strcmp(argv[2], "counted");
    bool function = argc > 2 && !strcmp(argv[2], "function");
    bool recursion = argc > 2 && !strcmp(argv[2], "recursion");
    bool deep = argc > 2 && !strcmp(argv[2], "deep");
    if (blocks < 1 || blocks > 1 << 20 ||
        (argc > 2 && !counted && !function && !recursion && !deep)) {
        fprintf(stderr, "usage: runaway [BLOCKS] [counted|function|recursion|deep]\n");
        return 2;
    }
    CHECK(cudaMalloc((void **)&stop, sizeof(int)));
    CHECK(cudaMemset(stop, 0, sizeof(int)));
    CHECK(cudaMalloc((void **)&count, (size_t)blocks * 128 * sizeof(int)));
    double t0 = now_s();
    if (counted)
        counted_spin<<<blocks, 128>>>(0, (unsigned)blocks | 1u, count);
    else if (function)
        function_spin<<<blocks, 128>>>(0, (unsigned)blocks | 1u, count);
    else if (recursion)
        recursion_spin<<<blocks, 128>>>(30, count);
    else if (deep)
        deep_spin<<<blocks, 128>>>(count);
    else
        spin<<<blocks, 128>>>(stop, count);
    cudaError_t sync = cudaDeviceSynchronize();
    printf("RESULT name=runaway status=%s seconds=%.3f\n", cudaGetErrorName(sync), now_s() - t0);
    return sync == (deep ? cudaErrorLaunchFailure : cudaErrorLaunchTimeout) ? 0 : 1;
}
