/* Concurrency of one program's streams (HyperQ): N streams (default 32), each launching one
 * one-block kernel that runs for T ms by the GPU's clock. Natively the GPU runs them side by
 * side, as many at once as it has hardware queues (8 unless CUDA_DEVICE_MAX_CONNECTIONS says
 * more); a remoting layer that serialises a program's streams takes N x T.
 *   streams_concurrent [STREAMS] [MS]
 * Checks that every kernel ran its time and wrote its stream's index, and prints
 *   RESULT name=streams_concurrent streams=N kernel_ms=T wall_ms=W concurrency=C
 * (C = N x T / W: how many ran at once on average) before PASS. */
#include <time.h>

#include "compat.h"

__device__ static unsigned long long global_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Runs for ns nanoseconds of the GPU's global timer, then records who it was and how long
 * it ran. */
__global__ void hold(unsigned long long ns, int index, int *who, unsigned long long *ran)
{
    unsigned long long t0 = global_ns(), t = t0;
    while (t - t0 < ns)
        t = global_ns();
    if (threadIdx.x == 0) {
        who[index] = index;
        ran[index] = t - t0;
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 32;
    double ms = argc > 2 ? atof(argv[2]) : 20.0;
    if (n < 1 || n > 256 || !(ms > 0 && ms <= 10000)) {
        fprintf(stderr, "usage: streams_concurrent [STREAMS (1-256)] [MS]\n");
        return 2;
    }
    unsigned long long ns = (unsigned long long)(ms * 1e6);
    cudaStream_t *streams = (cudaStream_t *)calloc(n, sizeof(*streams));
    int *who, *host_who = (int *)calloc(n, sizeof(int));
    unsigned long long *ran, *host_ran = (unsigned long long *)calloc(n, sizeof(*host_ran));
    EXPECT(streams && host_who && host_ran, "out of host memory");
    CHECK(cudaMalloc((void **)&who, n * sizeof(int)));
    CHECK(cudaMalloc((void **)&ran, n * sizeof(*ran)));
    CHECK(cudaMemset(who, 0xff, n * sizeof(int)));
    for (int i = 0; i < n; i++)
        CHECK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    hold<<<1, 32, 0, streams[0]>>>(1000, 0, who, ran);     /* warm up: module, context */
    CHECK(cudaDeviceSynchronize());
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
        hold<<<1, 32, 0, streams[i]>>>(ns, i, who, ran);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double wall = now_ms() - t0;
    CHECK(cudaMemcpy(host_who, who, n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(host_ran, ran, n * sizeof(*ran), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        EXPECT(host_who[i] == i, "stream %d: kernel wrote %d", i, host_who[i]);
        EXPECT(host_ran[i] >= ns, "stream %d: ran %llu ns of %llu", i, host_ran[i], ns);
    }
    printf("RESULT name=streams_concurrent streams=%d kernel_ms=%.3f wall_ms=%.3f "
           "concurrency=%.2f\n", n, ms, wall, n * ms / wall);
    for (int i = 0; i < n; i++)
        CHECK(cudaStreamDestroy(streams[i]));
    CHECK(cudaFree(who));
    CHECK(cudaFree(ran));
    compat_pass("streams_concurrent");
    return 0;
}
