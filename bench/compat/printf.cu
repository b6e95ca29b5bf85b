/* Device printf: lines printed by several threads (ints, doubles, strings: literals, a
 * __device__ array and a string in cudaMalloc'd memory) must reach the program's own
 * stdout at the synchronisation after the kernel, between the host's lines printed before
 * and after it; printf's return value is the number of arguments. tests/libcuda checks
 * the output line by line (check_printf.py computes the expected lines itself). */
#include <string.h>

#include "compat.h"

#define THREADS 8

__device__ char dev_word[] = "kernelet";

/* Inlined by nvcc; a printf left in a function that is not inlined stays a vprintf call
 * while kerneletd fences kernels (docs/GUEST-DRIVER.md). */
__device__ int from_function(int t)
{
    return printf("func t=%d half=%.1f pct=100%%\n", t, t * 0.5);
}

__global__ void speak(const char *heap_word, int *ret)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    long long big = 1000000007LL * (t + 1);
    double d = t * 1.25 + 0.5;
    ret[t] = printf("dev t=%d neg=%d big=%lld u=%u hex=%#x c=%c d=%.3f e=%e g=%g w=[%5d] "
                    "l=[%-4d] s=%s lit=%s heap=%s\n",
                    t, -t, big, 4000000000u - t, 255 + t, 'a' + t, d, 1.0 / (t + 1),
                    d * 1000.0, t, t, dev_word, "literal", heap_word);
    ret[THREADS + t] = from_function(t);
}

__global__ void again(int *ret)
{
    int t = threadIdx.x;
    ret[t] = printf("again t=%d sq=%d\n", t, t * t);
}

int main(void)
{
    const char word[] = "on-the-heap";
    char *heap_word;
    int *dret, ret[2 * THREADS];

    setvbuf(stdout, NULL, _IOFBF, 1 << 16);     /* as when piped: the order must hold anyway */
    CHECK(cudaMalloc((void **)&heap_word, sizeof(word)));
    CHECK(cudaMalloc((void **)&dret, sizeof(ret)));
    CHECK(cudaMemcpy(heap_word, word, sizeof(word), cudaMemcpyHostToDevice));
    printf("host: before kernel\n");
    speak<<<2, THREADS / 2>>>(heap_word, dret);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    printf("host: after kernel\n");
    CHECK(cudaMemcpy(ret, dret, sizeof(ret), cudaMemcpyDeviceToHost));
    for (int t = 0; t < THREADS; t++) {
        EXPECT(ret[t] == 14, "thread %d: printf returned %d, want 14", t, ret[t]);
        EXPECT(ret[THREADS + t] == 2, "thread %d: printf in a function returned %d, want 2", t,
               ret[THREADS + t]);
    }
    /* a blocking copy is a synchronisation point too */
    again<<<1, THREADS>>>(dret);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(ret, dret, THREADS * sizeof(int), cudaMemcpyDeviceToHost));
    printf("host: after copy\n");
    for (int t = 0; t < THREADS; t++)
        EXPECT(ret[t] == 2, "again %d: printf returned %d, want 2", t, ret[t]);
    CHECK(cudaFree(heap_word));
    CHECK(cudaFree(dret));
    compat_pass("printf");
    return 0;
}
