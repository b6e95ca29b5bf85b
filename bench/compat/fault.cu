/* A kernel fault is reported at synchronisation, not at launch: the launch returns
 * success, cudaDeviceSynchronize returns cudaErrorIllegalAddress (the driver may report it
 * as cudaErrorLaunchFailure), and the error is sticky: later calls fail with it too. */
#include "compat.h"

__global__ void store_to(int *p)
{
    *p = 1;
}

int main(void)
{
    int *ok;
    CHECK(cudaMalloc((void **)&ok, sizeof(int)));
    store_to<<<1, 1>>>(ok);
    CHECK(cudaDeviceSynchronize());

    store_to<<<1, 1>>>((int *)(uintptr_t)0x8);
    cudaError_t launch = cudaGetLastError();
    EXPECT(launch == cudaSuccess, "launch itself reported %s", cudaGetErrorName(launch));
    cudaError_t sync = cudaDeviceSynchronize();
    EXPECT(sync == cudaErrorIllegalAddress || sync == cudaErrorLaunchFailure,
           "cudaDeviceSynchronize returned %s (%d)", cudaGetErrorName(sync), (int)sync);
    void *p = NULL;
    cudaError_t later = cudaMalloc(&p, 16);
    EXPECT(later == sync, "the error is not sticky: cudaMalloc returned %s",
           cudaGetErrorName(later));
    printf("fault reported as %s\n", cudaGetErrorName(sync));
    compat_pass("fault");
    return 0;
}
