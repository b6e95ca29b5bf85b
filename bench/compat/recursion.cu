/* Recursion in device code, with the stack size a program sets for it: a recursive sum
 * 40 calls deep in every thread, and a mutual recursion, after
 * cudaDeviceSetLimit(cudaLimitStackSize, 16 KiB) (read back unchanged). Through kerneletd
 * the kernels are fenced, so every call of a recursive function also checks the stack
 * guard (docs/PTX.md); the stack itself is kerneletd's, which the daemon's log says. */
#include "compat.h"

#define DEPTH 40

__device__ __noinline__ unsigned rsum(unsigned n, unsigned salt)
{
    return n == 0 ? salt : n + rsum(n - 1, salt);
}

__device__ __noinline__ unsigned odd_sum(unsigned n);

__device__ __noinline__ unsigned even_sum(unsigned n)
{
    return n == 0 ? 0 : 2 * n + odd_sum(n - 1);
}

__device__ __noinline__ unsigned odd_sum(unsigned n)
{
    return n == 0 ? 0 : n + even_sum(n - 1);
}

__global__ void sums(unsigned *out, unsigned depth)
{
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    out[2 * t] = rsum(depth, t);
    out[2 * t + 1] = even_sum(depth - (t & 1));
}

/* What even_sum(n) gives: 2k for the even k of n, n-1, ..., 1 counted from n, k for the odd. */
static unsigned even_sum_host(unsigned n)
{
    unsigned s = 0;
    for (unsigned k = n, even = 1; k > 0; k--, even ^= 1)
        s += even ? 2 * k : k;
    return s;
}

int main(void)
{
    const unsigned blocks = 8, threads = 64, n = blocks * threads;
    size_t stack = 0;
    CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 16384));
    CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
    EXPECT(stack >= 16384, "stack limit %zu after asking for 16384", stack);
    unsigned *d, *h = (unsigned *)malloc(2 * n * sizeof(unsigned));
    CHECK(cudaMalloc((void **)&d, 2 * n * sizeof(unsigned)));
    sums<<<blocks, threads>>>(d, DEPTH);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h, d, 2 * n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (unsigned t = 0; t < n; t++) {
        EXPECT(h[2 * t] == DEPTH * (DEPTH + 1) / 2 + t, "rsum in thread %u: %u", t, h[2 * t]);
        unsigned want = even_sum_host(DEPTH - (t & 1));
        EXPECT(h[2 * t + 1] == want, "even_sum in thread %u: %u, not %u", t, h[2 * t + 1], want);
    }
    CHECK(cudaFree(d));
    free(h);
    compat_pass("recursion");
    return 0;
}
