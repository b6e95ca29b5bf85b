/* The cuda backend as a module (kerneletd-cuda.so, built with kerneletd): programs that
 * must start on machines without NVIDIA's driver (kerneletd, kernelet-bench) load it only
 * when asked for the cuda backend. */
#ifndef KERNELET_CUDA_MODULE_H
#define KERNELET_CUDA_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelet/executor.h"

/* Loads kerneletd-cuda.so from $KERNELETD_CUDA_MODULE, else next to the running program,
 * else from the install's module folder, else next to kerneletd in the build tree, and
 * opens the backend (calibration_dir NULL: the built-in calibrations). 0, or -1 with the
 * reason in err (no module, NVIDIA's driver missing, no GPU). The module stays loaded. */
int kbackend_cuda_module_open(kbackend *out, const char *calibration_dir,
                              uint64_t window_bytes, bool end_on_unstoppable, char *err,
                              size_t errlen);

#endif
