/* A kernelet-workloads instance on the device: buffers, parameter block from the PTX
 * layout, reset (inputs copied, outputs zeroed) and copy-back. */
#ifndef PTX_GPU_BENCH_INSTANCE_H
#define PTX_GPU_BENCH_INSTANCE_H

#include "gpu_slices.h"
#include "kernelet/workload.h"

typedef struct bench_instance {
    const kw_kernel *k;
    kw_instance in;
    bool created;
    CUdeviceptr dev[KW_MAX_BUFFERS];
    void *initial[KW_MAX_BUFFERS];  /* inputs that are also outputs, as created */
    uint8_t *params;        /* info.param_bytes */
    launch_shape shape;
} bench_instance;

bool bench_instance_setup(bench_instance *b, const kw_kernel *k, const kernel_pair *kp,
                          kw_size size, uint64_t seed);
bool bench_instance_reset(bench_instance *b);
bool bench_instance_copy_out(bench_instance *b);
void bench_instance_free(bench_instance *b);

#endif
