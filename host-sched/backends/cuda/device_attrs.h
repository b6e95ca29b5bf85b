/* The device as the executor reports it, from Driver API attributes (host-sched/backends/cuda/,
 * plain C: the attributes come through a callback, so this is tested without a GPU). */
#ifndef KERNELET_CUDA_DEVICE_ATTRS_H
#define KERNELET_CUDA_DEVICE_ATTRS_H

#include <cuda.h>

#include "kernelet/executor.h"
#include "launch_shape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads one attribute (cuDeviceGetAttribute): 0, or non-zero when the device has none. */
typedef int (*kcuda_attr_fn)(void *user, CUdevice_attribute attr, int *value);

/* Fills the device figures of info (not name, total_mem, lanes, overhead), its PCI location
 * where the driver gives one, and the launch limits in lim (not lanes). Memory bandwidth is 2 x memory clock x bus width (DDR/HBM).
 * KBACKEND_EDEVICE names an attribute that is missing or not positive. */
int kcuda_device_attrs(kcuda_attr_fn get, void *user, kbackend_device_info *info,
                       kcuda_limits *lim, kbackend_error *err);

#ifdef __cplusplus
}
#endif

#endif
