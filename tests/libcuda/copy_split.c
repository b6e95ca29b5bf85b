/* Pageable device-to-host copies larger than a staging slot, checked byte for byte: the
 * library unpacks large pieces on KERNELET_COPY_THREADS threads (copy_threads.c), each an
 * equal share of the slot's bytes, so the pieces here are sized so that the shares end
 * inside rows and the last share is longer than the others.
 *   1-D: two full 8 MiB pieces and one of 3 MiB + 3 bytes
 *   2-D: rows of 1001 bytes (8380 to a slot) at a host pitch of 1024, 20001 rows; the
 *        bytes between rows must stay as they were
 * Prints "PASS copy_split" or what differed; run by run_with_kerneletd.sh. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        CUresult r_ = (call);                                                               \
        if (r_ != CUDA_SUCCESS) {                                                           \
            fprintf(stderr, "%s:%d: %s: %d\n", __FILE__, __LINE__, #call, (int)r_);         \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)

#define MIB ((size_t)1 << 20)
#define SENTINEL 0xa5

static unsigned char pattern(size_t i)
{
    uint32_t x = (uint32_t)i * 2654435761u;

    return (unsigned char)((x >> 13) ^ (x >> 24) ^ i);
}

/* The device gets the pattern (a host-to-device copy), comes back into a pageable buffer. */
static int check_1d(size_t size)
{
    unsigned char *src = malloc(size), *dst = malloc(size);
    CUdeviceptr d;

    for (size_t i = 0; i < size; i++)
        src[i] = pattern(i);
    memset(dst, SENTINEL, size);
    CHECK(cuMemAlloc(&d, size));
    CHECK(cuMemcpyHtoD(d, src, size));
    CHECK(cuMemcpyDtoH(dst, d, size));
    for (size_t i = 0; i < size; i++)
        if (dst[i] != src[i]) {
            printf("FAIL copy_split 1-D of %zu bytes: byte %zu is %u, want %u\n", size, i,
                   dst[i], src[i]);
            return 1;
        }
    CHECK(cuMemFree(d));
    free(src);
    free(dst);
    return 0;
}

static int check_2d(size_t width, size_t height, size_t host_pitch)
{
    size_t size = width * height;
    unsigned char *src = malloc(size), *dst = malloc(host_pitch * height);
    CUdeviceptr d;

    for (size_t i = 0; i < size; i++)
        src[i] = pattern(i);
    memset(dst, SENTINEL, host_pitch * height);
    CHECK(cuMemAlloc(&d, size));
    CHECK(cuMemcpyHtoD(d, src, size));
    CUDA_MEMCPY2D m = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = d, .srcPitch = width,
                       .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = dst,
                       .dstPitch = host_pitch, .WidthInBytes = width, .Height = height};
    CHECK(cuMemcpy2D(&m));
    for (size_t r = 0; r < height; r++)
        for (size_t b = 0; b < host_pitch; b++) {
            unsigned want = b < width ? src[r * width + b] : SENTINEL;
            if (dst[r * host_pitch + b] != want) {
                printf("FAIL copy_split 2-D %zux%zu: row %zu byte %zu is %u, want %u\n", width,
                       height, r, b, dst[r * host_pitch + b], want);
                return 1;
            }
        }
    CHECK(cuMemFree(d));
    free(src);
    free(dst);
    return 0;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    int failed = 0;

    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    failed |= check_1d(2 * 8 * MIB + 3 * MIB + 3);
    failed |= check_2d(1001, 20001, 1024);
    failed |= check_1d(MIB - 5); /* below the split: one thread */
    if (!failed)
        printf("PASS copy_split (KERNELET_COPY_THREADS=%s)\n",
               getenv("KERNELET_COPY_THREADS") ? getenv("KERNELET_COPY_THREADS") : "unset");
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return failed;
}
