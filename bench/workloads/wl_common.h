/* Helpers the eight workload files share to fill a kw_instance: host buffers, the argument
 * list in PTX parameter order, launch geometry, and teardown. Internal to
 * kernelet-workloads. */
#ifndef KERNELET_WL_COMMON_H
#define KERNELET_WL_COMMON_H

#include "kernelet/workload.h"

#include <stdint.h>

/* Resets inst and ties it to kernel k; every later helper assumes this was called. */
void wl_begin(kw_instance *inst, const kw_kernel *k);

/* Adds a zeroed host buffer; returns its index, or KW_ENOMEM. */
int wl_buffer(kw_instance *inst, size_t size, int copy_in, int copy_out);

/* Host pointer of buffer i. */
static inline void *wl_host(const kw_instance *inst, unsigned i)
{
    return inst->buffers[i].host;
}

void wl_arg_buffer(kw_instance *inst, unsigned buffer);
void wl_arg_u32(kw_instance *inst, uint32_t v);
void wl_arg_f32(kw_instance *inst, float v);

void wl_geometry(kw_instance *inst, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                 unsigned by, unsigned bz);

/* Frees every buffer and priv (with free()) and clears inst. */
void wl_release(kw_instance *inst);

/* Common checks of create's arguments. */
int wl_check_create(const kw_instance *inst, kw_size size);

/* Writes a verify failure reason; returns KW_EVERIFY. */
int wl_fail(char *why, size_t why_len, const char *kernel, size_t bad, const char *first);

#endif
