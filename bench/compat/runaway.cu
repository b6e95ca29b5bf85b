/* A kernel that never ends, for the kernel time limit (not a compatibility program: run
 * natively it never returns). Through kerneletd with a per-tenant kernel time limit the
 * launch must end with cudaErrorLaunchTimeout, soon after the limit:
 *   runaway [BLOCKS]        prints RESULT name=runaway status=NAME seconds=S
 * and exits 0 when the status is cudaErrorLaunchTimeout. */
#include <time.h>

#include "compat.h"

__global__ void spin(const volatile int *stop, int *count)
{
    int n = 0;
    while (!*stop)
        n++;
    count[blockIdx.x * blockDim.x + threadIdx.x] = n;
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
    if (blocks < 1 || blocks > 1 << 20) {
        fprintf(stderr, "usage: runaway [BLOCKS]\n");
        return 2;
    }
    CHECK(cudaMalloc((void **)&stop, sizeof(int)));
    CHECK(cudaMemset(stop, 0, sizeof(int)));
    CHECK(cudaMalloc((void **)&count, (size_t)blocks * 128 * sizeof(int)));
    double t0 = now_s();
    spin<<<blocks, 128>>>(stop, count);
    cudaError_t sync = cudaDeviceSynchronize();
    printf("RESULT name=runaway status=%s seconds=%.3f\n", cudaGetErrorName(sync), now_s() - t0);
    return sync == cudaErrorLaunchTimeout ? 0 : 1;
}
