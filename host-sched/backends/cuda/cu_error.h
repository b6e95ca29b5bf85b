/* Driver API results as executor errors (host-sched/backends/cuda/, plain C: uses cuda.h's
 * enum only, never a driver function, so that it is tested without a GPU).
 *
 * A result maps to a KBACKEND_E* code by what it says about the request: bad arguments, memory,
 * module text, a kernel failing on the device, or the device itself. Some results are
 * *sticky*: after them the context is unusable (every later call fails the same way) and only
 * a new context helps; the backend then marks itself broken (cuda_backend.h).
 */
#ifndef KERNELET_CUDA_CU_ERROR_H
#define KERNELET_CUDA_CU_ERROR_H

#include <stddef.h>

#include <cuda.h>

#include "kernelet/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The KBACKEND_E* code of a result (0 for CUDA_SUCCESS). */
int kcuda_error_code(CUresult r);

/* 1 when r leaves the context unusable (device faults, ECC, lost device), else 0. */
int kcuda_error_is_sticky(CUresult r);

/* 1 when r is a kernel failing on the device (reported as KBACKEND_ELAUNCH), else 0. */
int kcuda_error_is_kernel_fault(CUresult r);

/* One line for a JIT log (CU_JIT_ERROR_LOG_BUFFER): its first line that reports an error,
 * else its first non-empty line, with runs of blanks folded; "" for an empty log. Writes at
 * most outlen bytes including the NUL. */
void kcuda_jit_summary(const char *log, size_t loglen, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif

#endif
