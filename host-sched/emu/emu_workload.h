/* Running a kernelet-workloads instance (include/kernelet/workload.h) on the emulator:
 * load its PTX (optionally with sliced variants), allocate and fill device buffers, build
 * the parameter block, launch whole or as slices, copy the outputs back. Shared by the
 * emulator tests and emu-bench (library kernelet-emu-workload; not a public API). */
#ifndef KERNELET_EMU_WORKLOAD_H
#define KERNELET_EMU_WORKLOAD_H

#include <kernelet/emu.h>
#include <kernelet/workload.h>

#include <stdbool.h>

typedef struct emu_wl {
    kemu_device *dev;
    kemu_module *mod;
    kemu_function *fn;          /* the entry */
    kemu_function *sliced;      /* its __kslice variant (when prepared with slices) */
    kemu_devptr bufs[KW_MAX_BUFFERS];
    unsigned n_bufs;
    uint8_t params[256];
    size_t param_bytes;
} emu_wl;

/* Loads in's kernel from ptx_dir (with its sliced variant when sliced) and uploads its
 * buffers. */
int emu_wl_prepare(emu_wl *w, kemu_device *dev, const char *ptx_dir, const kw_instance *in,
                   bool sliced, kemu_error *err);

/* Launches the whole grid. */
int emu_wl_launch(emu_wl *w, const kw_instance *in, kemu_launch_stats *stats, kemu_error *err);

/* Launches the slices [bounds[i], bounds[i + 1]) for i < n_slices (bounds has n_slices + 1
 * entries, from 0 to the number of blocks). */
int emu_wl_launch_slices(emu_wl *w, const kw_instance *in, const uint32_t *bounds,
                         unsigned n_slices, kemu_error *err);

/* Copies the instance's copy_out buffers back into its host buffers. */
int emu_wl_copy_out(emu_wl *w, kw_instance *in, kemu_error *err);

/* Frees the device buffers and unloads the module. */
void emu_wl_release(emu_wl *w);

#endif
