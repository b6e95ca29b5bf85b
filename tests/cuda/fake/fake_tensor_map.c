/* The fake driver's tensor maps (see fake_driver.h): the encoding is the fake's own, in
 * 64-bit words a test can read back, and the checks are a few of the driver's (address
 * 16-byte aligned, rank 1..5, box sides 1..256). */
#include "fake_driver.h"

#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static CUresult fill(CUtensorMap *map, unsigned kind, CUtensorMapDataType type, cuuint32_t rank,
                     void *address, const cuuint64_t *dims)
{
    uint64_t w[16] = {0};

    if ((uintptr_t)address % 16 || rank < 1 || rank > 5 || !dims)
        return CUDA_ERROR_INVALID_VALUE;
    w[FAKE_TMAP_ADDRESS] = (uintptr_t)address;
    w[FAKE_TMAP_SHAPE] = (uint64_t)kind << 16 | (uint64_t)rank << 8 | (uint64_t)type;
    for (unsigned i = 0; i < rank; i++)
        w[FAKE_TMAP_DIMS + i] = dims[i];
    memcpy(map, w, sizeof(w));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                       void *address, const cuuint64_t *dims,
                                       const cuuint64_t *strides, const cuuint32_t *box,
                                       const cuuint32_t *element_strides,
                                       CUtensorMapInterleave interleave,
                                       CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                       CUtensorMapFloatOOBfill oob)
{
    (void)strides, (void)element_strides, (void)interleave, (void)swizzle, (void)l2, (void)oob;
    for (unsigned i = 0; box && i < rank && i < 5; i++)
        if (box[i] < 1 || box[i] > 256)
            return CUDA_ERROR_INVALID_VALUE;
    return fill(map, 1, type, rank, address, dims);
}

EXPORT CUresult cuTensorMapEncodeIm2col(CUtensorMap *map, CUtensorMapDataType type,
                                        cuuint32_t rank, void *address, const cuuint64_t *dims,
                                        const cuuint64_t *strides, const int *lower,
                                        const int *upper, cuuint32_t channels,
                                        cuuint32_t pixels, const cuuint32_t *element_strides,
                                        CUtensorMapInterleave interleave,
                                        CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                        CUtensorMapFloatOOBfill oob)
{
    (void)strides, (void)lower, (void)upper, (void)channels, (void)pixels;
    (void)element_strides, (void)interleave, (void)swizzle, (void)l2, (void)oob;
    return rank < 3 ? CUDA_ERROR_INVALID_VALUE : fill(map, 2, type, rank, address, dims);
}

EXPORT CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *map, CUtensorMapDataType type,
                                            cuuint32_t rank, void *address,
                                            const cuuint64_t *dims, const cuuint64_t *strides,
                                            int lower, int upper, cuuint32_t channels,
                                            cuuint32_t pixels,
                                            const cuuint32_t *element_strides,
                                            CUtensorMapInterleave interleave,
                                            CUtensorMapIm2ColWideMode mode,
                                            CUtensorMapSwizzle swizzle,
                                            CUtensorMapL2promotion l2,
                                            CUtensorMapFloatOOBfill oob)
{
    (void)strides, (void)lower, (void)upper, (void)channels, (void)pixels;
    (void)element_strides, (void)interleave, (void)mode, (void)swizzle, (void)l2, (void)oob;
    return rank < 3 ? CUDA_ERROR_INVALID_VALUE : fill(map, 3, type, rank, address, dims);
}

EXPORT CUresult cuTensorMapReplaceAddress(CUtensorMap *map, void *address)
{
    uint64_t a = (uintptr_t)address;

    if (a % 16)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy((char *)map + FAKE_TMAP_ADDRESS * 8, &a, sizeof(a));
    return CUDA_SUCCESS;
}
