/* Does a module (PTX text or a cubin) define module variables? (host-sched/backends/cuda/, plain C, no Driver API)
 *
 * The backend shares one loaded module between loads of the same text only when the text
 * defines no module-scope variable: a .global or .const declaration at module scope that
 * is not .extern (CUDA's __device__ and __constant__; executor.h, global_get). Such a
 * variable lives in the loaded module, so sharing the module would share it between
 * tenants.
 */
#ifndef KERNELET_CUDA_PTX_VARS_H
#define KERNELET_CUDA_PTX_VARS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the len bytes of PTX define a module-scope .global or .const variable, 0 when
 * they define none; 1 as well when the PTX library cannot parse the text (the driver may
 * still accept it: a module that cannot be checked is not shared). */
int kcuda_ptx_defines_variables(const char *text, size_t len);

/* The same for a cubin of len bytes: 1 when its symbol table names a __device__ or
 * __constant__ variable, or when the cubin cannot be read (kernelet/cubin.h). */
int kcuda_cubin_defines_variables(const void *image, size_t len);

#ifdef __cplusplus
}
#endif

#endif
