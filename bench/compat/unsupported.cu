/* Something that cannot work across a VM (IPC memory handles between processes), and a
 * private driver table nobody offers: each call fails with an error, never a crash, and
 * the program goes on to use the GPU normally. (Its tests also check that kerneletd's log
 * names the entry point and the table.) */
#include "compat.h"

__global__ void negate(int *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        v[i] = -v[i];
}

int main(void)
{
    const int n = 4096;
    int h[n], *d;
    cudaIpcMemHandle_t handle;

    for (int i = 0; i < n; i++)
        h[i] = i;
    CHECK(cudaMalloc((void **)&d, n * sizeof(int)));
    cudaError_t e = cudaIpcGetMemHandle(&handle, d);
    EXPECT(e != cudaSuccess, "an IPC handle for memory of a shared GPU");
    printf("cudaIpcGetMemHandle: %s\n", cudaGetErrorName(e));
    (void)cudaGetLastError();
    /* a table of the driver's that does not exist anywhere */
    const cudaUUID_t made_up = {{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, (char)0x88,
                                 (char)0x99, (char)0xaa, (char)0xbb, (char)0xcc, (char)0xdd,
                                 (char)0xee, (char)0xff}};
    const void *table = NULL;
    e = cudaGetExportTable(&table, &made_up);
    EXPECT(e != cudaSuccess && !table, "a made-up export table");
    printf("cudaGetExportTable: %s\n", cudaGetErrorName(e));
    (void)cudaGetLastError();

    CHECK(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
    negate<<<(n + 255) / 256, 256>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        EXPECT(h[i] == -i, "element %d = %d", i, h[i]);
    CHECK(cudaFree(d));
    compat_pass("unsupported");
    return 0;
}
