/* Tensor maps (executor.h, the tensor_map_encode op): the driver encodes what the tenant
 * asked, unchanged; the tenant's kernels then use the opaque map. Its values (alignment,
 * sizes, the combination of swizzle and box) are the driver's to judge. */
#include <string.h>

#include "kernelet/protocol.h"
#include "backend_internal.h"

static CUresult encode(const struct kernelet_tensor_map *m, CUtensorMap *map)
{
    void *address = (void *)(uintptr_t)m->global_address;
    const cuuint64_t *dims = (const cuuint64_t *)m->global_dim;
    const cuuint64_t *strides = (const cuuint64_t *)m->global_strides;

    switch (m->kind) {
    case KERNELET_TENSOR_MAP_TILED:
        return cuTensorMapEncodeTiled(map, m->data_type, m->rank, address, dims, strides,
                                      m->box_dim, m->element_strides, m->interleave,
                                      m->swizzle, m->l2_promotion, m->oob_fill);
    case KERNELET_TENSOR_MAP_IM2COL:
        return cuTensorMapEncodeIm2col(map, m->data_type, m->rank, address, dims, strides,
                                       m->lower_corner, m->upper_corner,
                                       m->channels_per_pixel, m->pixels_per_column,
                                       m->element_strides, m->interleave, m->swizzle,
                                       m->l2_promotion, m->oob_fill);
    case KERNELET_TENSOR_MAP_IM2COL_WIDE:
        return cuTensorMapEncodeIm2colWide(map, m->data_type, m->rank, address, dims, strides,
                                           m->lower_corner[0], m->upper_corner[0],
                                           m->channels_per_pixel, m->pixels_per_column,
                                           m->element_strides, m->interleave, m->wide_mode,
                                           m->swizzle, m->l2_promotion, m->oob_fill);
    case KERNELET_TENSOR_MAP_REPLACE_ADDRESS:
        memcpy(map, m->map, sizeof(*map));
        return cuTensorMapReplaceAddress(map, address);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

int kcuda_tensor_map_encode(void *state, const struct kernelet_tensor_map *m, uint8_t *out,
                            kbackend_error *err)
{
    _Static_assert(sizeof(CUtensorMap) == KERNELET_TENSOR_MAP_BYTES, "tensor map size");
    kcuda *kc = state;
    int rc = kcuda_bind(kc, err);
    if (rc)
        return rc;
    CUtensorMap map;
    memset(&map, 0, sizeof(map));
    CUresult r = encode(m, &map);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail_as(err, KBACKEND_EINVAL, r, "cuTensorMapEncode");
    memcpy(out, &map, sizeof(map));
    return 0;
}
