/* Kernel parameter blocks of the CUDA backend (host-sched/backends/cuda/, plain C, no Driver API).
 *
 * The scheduler hands the backend a kernel's parameters as one packed block with natural
 * alignment (the form of CU_LAUNCH_PARAM_BUFFER_POINTER). The driver wants the block exactly
 * as long as the kernel's parameter list, without tail padding, so the backend learns each
 * function's layout once (cuFuncGetParamInfo: offset and size of every parameter) and builds
 * the block of every launch from it. A sliced variant ("<entry>__kslice") takes the original
 * parameters followed by four .u32 (first linear block, grid x, y, z); they go where the
 * layout puts them, which is the first 4-byte boundary after the original parameters.
 */
#ifndef KERNELET_CUDA_PARAM_BLOCK_H
#define KERNELET_CUDA_PARAM_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest parameter block a kernel may take (bytes; CUDA 12.1+ on Volta and newer). */
#define KCUDA_MAX_PARAM_BYTES 32764u

/* Where a function's parameters lie. */
typedef struct kcuda_param_layout {
    int known;              /* 0: the driver could not say; the block is taken as given */
    int sliced;             /* 1: the last KBACKEND_SLICE_EXTRA_PARAMS parameters are the
                               slice's (first block, grid x, y, z) */
    size_t orig_bytes;      /* end of the last original parameter (0 when there is none) */
    size_t extra_offset;    /* sliced: offset of the first extra .u32 */
} kcuda_param_layout;

/* The layout from the n parameters' offsets and sizes (driver order). A sliced layout needs
 * at least four parameters, the last four being .u32 at consecutive 4-byte offsets.
 * KBACKEND_EINVAL with the reason when the figures are inconsistent. */
int kcuda_param_layout_from(const size_t *offsets, const size_t *sizes, size_t n, int sliced,
                            kcuda_param_layout *out, kbackend_error *err);

/* The layout assumed when the driver cannot report one: the block as given, the extra
 * parameters at the next 4-byte boundary. */
void kcuda_param_layout_unknown(int sliced, kcuda_param_layout *out);

/* Builds the block the driver gets for one launch into a malloc'd buffer (*out; NULL when
 * the block is empty). params/size: the caller's packed original parameters (tail padding
 * beyond the layout's orig_bytes is dropped; a shorter block is KBACKEND_EINVAL). extra: the
 * four slice values for a sliced layout, NULL otherwise. */
int kcuda_param_block(const kcuda_param_layout *layout, const void *params, size_t size,
                      const uint32_t extra[KBACKEND_SLICE_EXTRA_PARAMS], void **out,
                      size_t *out_size, kbackend_error *err);

/* Where the four slice values begin in a block built by kcuda_param_block for a sliced
 * layout (size: the block's size, for a layout the driver did not report). */
size_t kcuda_param_extra_offset(const kcuda_param_layout *layout, size_t size);

#ifdef __cplusplus
}
#endif

#endif
