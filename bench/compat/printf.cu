/* Device printf: lines printed by several threads (ints, doubles, strings: literals, a
 * __device__ array and a string in cudaMalloc'd memory) must reach the program's own
 * stdout at the synchronisation after the kernel (the context's, a blocking copy, a
 * stream's, an event's, or the exit), between the host's lines printed before and after
 * it; printf's return value is the number of arguments. tests/libcuda checks the output
 * line by line (check_printf.py computes the expected lines itself). */
#include <cuda.h>
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

/* Phases 2 to 5: each line names its phase. */
__global__ void tagged(int phase, int *ret)
{
    int t = threadIdx.x;
    ret[t] = printf("phase %d t=%d v=%d\n", phase, t, t * t + phase);
}

/* Under kerneletd the ring is a variable of the kernel's module that its own kernels
 * fill; a kernel (or the host) may write anything there, and the library must neither
 * crash nor print it: one record with a format at an address of nothing, then one with
 * an impossible size. Natively there is no such variable: nothing to do. */
static void scribble_on_ring(void)
{
    cudaFunction_t f;
    CUmodule mod;
    CUdeviceptr ring;
    size_t size;
    uint32_t junk[16] = {48, 0, 0, 0,                    /* header: 48 bytes used */
                         16, 0, 0xdead0000u, 0x7fu,      /* a format at no memory */
                         0xfffffff8u, 4, 1, 2};          /* a size beyond the ring */

    CHECK(cudaGetFuncBySymbol(&f, (const void *)tagged));
    EXPECT(cuFuncGetModule(&mod, (CUfunction)f) == CUDA_SUCCESS, "cuFuncGetModule");
    if (cuModuleGetGlobal(&ring, &size, mod, "__kernelet_printf") != CUDA_SUCCESS)
        return;
    EXPECT(cuMemcpyHtoD(ring, junk, sizeof(junk)) == CUDA_SUCCESS, "writing the ring");
}

static void check_tagged(int *dret, int phase)
{
    int ret[THREADS];
    CHECK(cudaMemcpy(ret, dret, sizeof(ret), cudaMemcpyDeviceToHost));
    for (int t = 0; t < THREADS; t++)
        EXPECT(ret[t] == 3, "phase %d thread %d: printf returned %d, want 3", phase, t, ret[t]);
}

int main(void)
{
    const char word[] = "on-the-heap";
    char *heap_word;
    int *dret, ret[2 * THREADS];
    cudaStream_t s;
    cudaEvent_t ev;

    setvbuf(stdout, NULL, _IOFBF, 1 << 16);     /* as when piped: the order must hold anyway */
    CHECK(cudaMalloc((void **)&heap_word, sizeof(word)));
    CHECK(cudaMalloc((void **)&dret, sizeof(ret)));
    CHECK(cudaMemcpy(heap_word, word, sizeof(word), cudaMemcpyHostToDevice));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&ev));

    /* 1: the context's synchronisation */
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
    /* a ring with garbage in it (just cleared by the synchronisation above, so this is
     * what is read next): nothing printed, and it is cleared again */
    scribble_on_ring();
    CHECK(cudaDeviceSynchronize());
    printf("host: after garbage\n");
    /* 2: a blocking copy; 3: a stream's synchronisation; 4: an event's (the ring is not
     * cleared at these: each must print only what is new) */
    tagged<<<1, THREADS>>>(2, dret);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(ret, dret, THREADS * sizeof(int), cudaMemcpyDeviceToHost));
    printf("host: after copy\n");
    check_tagged(dret, 2);
    tagged<<<1, THREADS, 0, s>>>(3, dret);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));
    printf("host: after stream sync\n");
    check_tagged(dret, 3);
    tagged<<<1, THREADS, 0, s>>>(4, dret);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev, s));
    CHECK(cudaEventSynchronize(ev));
    printf("host: after event sync\n");
    check_tagged(dret, 4);
    /* 5: no synchronisation at all: the lines come at exit */
    tagged<<<1, THREADS>>>(5, dret);
    CHECK(cudaGetLastError());
    compat_pass("printf");
    printf("host: before exit\n");
    return 0;
}
