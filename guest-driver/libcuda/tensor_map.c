/* Tensor maps (cuTensorMapEncodeTiled, ...Im2col, ...Im2colWide, cuTensorMapReplaceAddress):
 * the opaque descriptors through which Hopper's tensor memory accelerator copies tiles,
 * made by XLA, Triton and CUTLASS on the host and passed to kernels. Only the driver knows
 * the encoding, so each call is a TENSOR_MAP_ENCODE request carrying the arguments. The
 * daemon serves it where the tenant's kernels are not fenced (an isolated tenant) and
 * answers CUDA's not-supported error elsewhere. */
#include <string.h>

#include "libcuda_internal.h"

#define MAX_RANK KERNELET_TENSOR_MAP_MAX_RANK

static CUresult request(struct kernelet_tensor_map *m, CUtensorMap *out)
{
    struct kernelet_tensor_map_ans ans;
    CUresult r = kcu_ready();

    if (r != CUDA_SUCCESS)
        return r;
    r = kcu_call(kcu.client, KERNELET_OP_TENSOR_MAP_ENCODE, m, sizeof(*m), NULL, 0, &ans,
                 sizeof(ans), NULL);
    if (r == CUDA_ERROR_NOT_SUPPORTED)
        kcu_unsupported("tensor maps (cuTensorMapEncode*: kernels fenced into device memory "
                        "here; KERNELET_ISOLATE=1 gives a context of its own)");
    if (r == CUDA_SUCCESS)
        memcpy(out, ans.map, sizeof(ans.map));
    return r;
}

/* The arguments every encoding shares, with the arrays the rank uses (global strides: one
 * fewer); false when one is missing or the rank is out of range. */
static bool common(struct kernelet_tensor_map *m, unsigned kind, CUtensorMapDataType type,
                   cuuint32_t rank, void *address, const cuuint64_t *dims,
                   const cuuint64_t *strides, const cuuint32_t *element_strides,
                   CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                   CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    if (rank < 1 || rank > MAX_RANK || !dims || (rank > 1 && !strides) || !element_strides)
        return false;
    *m = (struct kernelet_tensor_map){
        .kind = kind, .data_type = type, .rank = rank, .interleave = interleave,
        .swizzle = swizzle, .l2_promotion = l2, .oob_fill = oob,
        .global_address = (uintptr_t)address,
    };
    for (unsigned i = 0; i < rank; i++) {
        m->global_dim[i] = dims[i];
        m->element_strides[i] = element_strides[i];
        if (i + 1 < rank)
            m->global_strides[i] = strides[i];
    }
    return true;
}

CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type,
                                        cuuint32_t rank, void *address, const cuuint64_t *dims,
                                        const cuuint64_t *strides, const cuuint32_t *box,
                                        const cuuint32_t *element_strides,
                                        CUtensorMapInterleave interleave,
                                        CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                        CUtensorMapFloatOOBfill oob)
{
    struct kernelet_tensor_map m;

    if (!map || !box || !common(&m, KERNELET_TENSOR_MAP_TILED, type, rank, address, dims,
                                strides, element_strides, interleave, swizzle, l2, oob))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(m.box_dim, box, rank * sizeof(*box));
    return request(&m, map);
}

CUresult CUDAAPI cuTensorMapEncodeIm2col(CUtensorMap *map, CUtensorMapDataType type,
                                         cuuint32_t rank, void *address, const cuuint64_t *dims,
                                         const cuuint64_t *strides, const int *lower,
                                         const int *upper, cuuint32_t channels,
                                         cuuint32_t pixels, const cuuint32_t *element_strides,
                                         CUtensorMapInterleave interleave,
                                         CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                         CUtensorMapFloatOOBfill oob)
{
    struct kernelet_tensor_map m;

    /* the corners cover the spatial dimensions: all but the channels and the batch */
    if (!map || rank < 3 || !lower || !upper ||
        !common(&m, KERNELET_TENSOR_MAP_IM2COL, type, rank, address, dims, strides,
                element_strides, interleave, swizzle, l2, oob))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(m.lower_corner, lower, (rank - 2) * sizeof(*lower));
    memcpy(m.upper_corner, upper, (rank - 2) * sizeof(*upper));
    m.channels_per_pixel = channels;
    m.pixels_per_column = pixels;
    return request(&m, map);
}

CUresult CUDAAPI cuTensorMapEncodeIm2colWide(CUtensorMap *map, CUtensorMapDataType type,
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
    struct kernelet_tensor_map m;

    if (!map || !common(&m, KERNELET_TENSOR_MAP_IM2COL_WIDE, type, rank, address, dims,
                        strides, element_strides, interleave, swizzle, l2, oob))
        return CUDA_ERROR_INVALID_VALUE;
    m.lower_corner[0] = lower;
    m.upper_corner[0] = upper;
    m.channels_per_pixel = channels;
    m.pixels_per_column = pixels;
    m.wide_mode = mode;
    return request(&m, map);
}

CUresult CUDAAPI cuTensorMapReplaceAddress(CUtensorMap *map, void *address)
{
    struct kernelet_tensor_map m = {.kind = KERNELET_TENSOR_MAP_REPLACE_ADDRESS,
                                    .global_address = (uintptr_t)address};

    if (!map)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(m.map, map, sizeof(m.map));
    return request(&m, map);
}
