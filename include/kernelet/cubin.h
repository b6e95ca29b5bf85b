/* Cubins: ELF files of SASS for one SM architecture (library kernelet-fatbin,
 * host-sched/fatbin/; layout in docs/FATBIN.md, "Cubins").
 *
 * Frameworks (PyTorch, CuPy through NVRTC) ship kernels as cubins with no PTX, so Kernelet
 * cannot slice them; it runs them whole, natively. What it must still know without PTX is
 * each kernel's parameter layout (to marshal kernelParams and check launches), which the
 * cubin keeps in its .nv.info.<kernel> sections, and the module variables
 * (cuModuleGetGlobal), which its symbol table names.
 *
 * A cubin is hostile input: every offset, count and size read from it is checked against
 * the bytes present; malformed input gets KPTX_ECORRUPT, never a read out of bounds.
 * Errors use the codes and kptx_error of ptx.h.
 */
#ifndef KERNELET_CUBIN_H
#define KERNELET_CUBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelet/ptx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of what kcubin_open accepts (KPTX_ELIMIT beyond): CUDA's own parameter limits;
 * at most KCUBIN_MAX_KERNELS kernels and as many variables. */
#define KCUBIN_MAX_PARAMS 4096u
#define KCUBIN_MAX_PARAM_BYTES 32764u
#define KCUBIN_MAX_KERNELS 65536u

typedef struct kcubin_param {
    uint32_t offset;            /* bytes from the start of the parameter block */
    uint32_t size;              /* bytes */
} kcubin_param;

typedef struct kcubin_kernel {
    char *name;                 /* the entry's symbol (mangled as the ELF names it) */
    unsigned n_params;
    kcubin_param *params;       /* in declaration order (ordinal 0 first) */
    uint32_t param_bytes;       /* size of the parameter block */
    uint32_t max_threads;       /* __launch_bounds__ (x * y * z), 0 = none */
    uint32_t regs;              /* registers per thread, 0 = not recorded */
} kcubin_kernel;

typedef struct kcubin_global {
    char *name;                 /* a __device__ or __constant__ variable */
    uint64_t size;              /* bytes */
} kcubin_global;

typedef struct kcubin {
    unsigned arch;              /* SM architecture times 10 + minor: 90 for sm_90 */
    bool relocatable;           /* ET_REL (nvcc -rdc -cubin): needs linking */
    unsigned n_kernels;
    kcubin_kernel *kernels;
    unsigned n_globals;
    kcubin_global *globals;
} kcubin;

/* True when data starts like a cubin (64-bit little-endian ELF for EM_CUDA); size is the
 * number of bytes available. */
bool kcubin_is_cubin(const void *data, size_t size);

/* Reads the cubin of size bytes at data: its architecture, each kernel (a function symbol
 * marked as an entry) with its parameter layout, and its module variables. The result is
 * a copy; data may go away afterwards. */
int kcubin_open(const void *data, size_t size, kcubin **out, kptx_error *err);

/* Frees what kcubin_open made; NULL is allowed. */
void kcubin_free(kcubin *cb);

/* The kernel called name, or NULL. */
const kcubin_kernel *kcubin_find_kernel(const kcubin *cb, const char *name);

/* Whether SASS of architecture arch runs on an SM of architecture target by CUDA's rules:
 * same major version, minor not above the target's. */
bool kcubin_runs_on(unsigned arch, unsigned target);

/* Decodes one .nv.info.<kernel> section (n bytes at p) into k's parameter layout,
 * parameter block size and launch bounds (k->name is left alone). Exposed for the fuzzer
 * and the tests; kcubin_open calls it. */
int kcubin_decode_kernel_info(const uint8_t *p, size_t n, kcubin_kernel *k, kptx_error *err);

#ifdef __cplusplus
}
#endif

#endif
