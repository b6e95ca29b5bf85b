/* Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess),
 * as XLA's allocator and PyTorch's expandable segments use it: two pieces of physical
 * memory mapped side by side into one reservation make one contiguous buffer; a kernel
 * writes across the seam, copies read it back, and everything is undone in order. Where
 * the device does not offer it (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED 0:
 * a tenant whose kernels are fenced) cuMemCreate must fail with CUDA_ERROR_NOT_SUPPORTED,
 * and the program says so with its own line and exit code 3 (not a pass). */
#include <cuda.h>

#include "compat.h"

#define CU(call)                                                                            \
    do {                                                                                    \
        CUresult cu_ = (call);                                                              \
        if (cu_ != CUDA_SUCCESS) {                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: %d\n", __FILE__, __LINE__, #call, (int)cu_);   \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

__global__ void stamp(unsigned *p, size_t first, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[first + i] = (unsigned)(first + i) * 2654435761u;
}

int main(void)
{
    int vmm_ok = 0;
    CUdevice dev;
    CHECK(cudaFree(0)); /* the runtime's context, which the driver calls below share */
    CU(cuCtxGetDevice(&dev));
    CU(cuDeviceGetAttribute(&vmm_ok, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                            dev));
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t g = 0;
    CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT(g > 0 && (g & (g - 1)) == 0, "granularity %zu", g);

    CUmemGenericAllocationHandle h[2];
    CUresult r = cuMemCreate(&h[0], g, &prop, 0);
    if (!vmm_ok) {
        EXPECT(r == CUDA_ERROR_NOT_SUPPORTED, "cuMemCreate on a device without VMM: %d", (int)r);
        printf("UNSUPPORTED vmm: the device offers no virtual memory management\n");
        return 3;
    }
    CU(r);
    CU(cuMemCreate(&h[1], g, &prop, 0));
    CUdeviceptr va = 0;
    CU(cuMemAddressReserve(&va, 3 * g, 0, 0, 0));
    CU(cuMemMap(va, g, 0, h[0], 0));
    CU(cuMemMap(va + g, g, 0, h[1], 0));
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cuMemSetAccess(va, 2 * g, &access, 1));
    CUmemAllocationProp got = {};
    CU(cuMemGetAllocationPropertiesFromHandle(&got, h[1]));
    EXPECT(got.location.id == dev && got.type == CU_MEM_ALLOCATION_TYPE_PINNED, "properties");
    CUmemGenericAllocationHandle again;
    CU(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + g + 4096)));
    EXPECT(again == h[1], "retained handle %llu, mapped %llu", (unsigned long long)again,
           (unsigned long long)h[1]);
    CU(cuMemRelease(again));

    /* new memory reads as zeros; a kernel writes 128 KiB across the seam */
    unsigned *p = (unsigned *)(uintptr_t)va, words = 32768;
    size_t first = g / 4 - words / 2;
    unsigned *host = (unsigned *)malloc(words * sizeof(unsigned));
    CHECK(cudaMemcpy(host, p + first, words * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < words; i++)
        EXPECT(host[i] == 0, "new memory word %u = %u", i, host[i]);
    stamp<<<words / 256, 256>>>(p, first, words);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(host, p + first, words * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < words; i++)
        EXPECT(host[i] == (unsigned)(first + i) * 2654435761u, "word %zu = %u", first + i,
               host[i]);
    /* a copy across the seam, device to device, and a memset of the whole buffer */
    CHECK(cudaMemcpy(p, p + first, words * sizeof(unsigned), cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(host, p, words * sizeof(unsigned), cudaMemcpyDeviceToHost));
    EXPECT(host[words - 1] == (unsigned)(first + words - 1) * 2654435761u, "copied word");
    CHECK(cudaMemset(p, 0xab, 2 * g));
    CHECK(cudaMemcpy(host, p + first, words * sizeof(unsigned), cudaMemcpyDeviceToHost));
    EXPECT(host[0] == 0xabababab && host[words - 1] == 0xabababab, "memset across the seam");

    CU(cuMemUnmap(va, 2 * g));
    CU(cuMemRelease(h[0]));
    CU(cuMemRelease(h[1]));
    CU(cuMemAddressFree(va, 3 * g));
    EXPECT(cuMemRelease(h[0]) != CUDA_SUCCESS, "a handle released twice");
    free(host);
    compat_pass("vmm");
    return 0;
}
