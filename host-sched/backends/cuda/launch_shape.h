/* Launch geometry of the CUDA backend (host-sched/backends/cuda/, plain C, no Driver API).
 *
 * Turns one kbackend_slice into what cuLaunchKernel gets: a whole kernel keeps its 3-D grid;
 * a slice of `count` blocks from linear block `first` runs the sliced variant as the 1-D
 * grid (count, 1, 1) with the four slice values (first, grid x, y, z) appended to its
 * parameters (executor.h, "Slicing"). Everything the driver would refuse later, or worse,
 * run out of range, is refused here with a message.
 */
#ifndef KERNELET_CUDA_LAUNCH_SHAPE_H
#define KERNELET_CUDA_LAUNCH_SHAPE_H

#include <stdint.h>

#include "kernelet/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device's launch limits (cuDeviceGetAttribute). */
typedef struct kcuda_limits {
    unsigned lanes;
    unsigned max_threads_per_block;
    unsigned max_block[3];
    unsigned max_grid[3];
} kcuda_limits;

typedef struct kcuda_launch_shape {
    unsigned grid[3];           /* grid of the launch itself */
    unsigned block[3];
    int sliced;
    uint32_t extra[KBACKEND_SLICE_EXTRA_PARAMS]; /* sliced: first block, grid x, y, z */
} kcuda_launch_shape;

/* Checks s against the limits and the function (fn_sliced: it is a sliced variant;
 * fn_max_threads: its thread limit, 0 = unknown) and fills *out. KBACKEND_EINVAL says why. */
int kcuda_launch_shape_of(const kbackend_slice *s, int fn_sliced, unsigned fn_max_threads,
                          const kcuda_limits *lim, kcuda_launch_shape *out, kbackend_error *err);

#ifdef __cplusplus
}
#endif

#endif
