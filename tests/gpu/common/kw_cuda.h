/* Benchmark workloads (include/kernelet/workload.h) on a real GPU through the Driver API:
 * the steps every GPU check repeats — load the kernel's PTX, allocate and fill its buffers,
 * build kernelParams, launch, copy back and verify. Used by the programs in tests/gpu/. */
#ifndef KERNELET_TESTS_KW_CUDA_H
#define KERNELET_TESTS_KW_CUDA_H

#include "kernelet/workload.h"

#include <cuda.h>
#include <stddef.h>

typedef struct kwc_run {
    kw_instance in;
    int have_instance;
    CUmodule module;
    CUfunction fn;
    CUdeviceptr dev[KW_MAX_BUFFERS];
    union {
        uint64_t u64;
        uint32_t u32;
        float f32;
        double f64;
    } vals[KW_MAX_ARGS];
    void *params[KW_MAX_ARGS];
} kwc_run;

/* Creates the instance, loads PTX_DIR/<ptx_file>, allocates, copies inputs in and zeroes
 * outputs. On failure writes a reason into msg and returns non-zero (call kwc_release). */
int kwc_prepare(kwc_run *r, const kw_kernel *k, const char *ptx_dir, kw_size size,
                uint64_t seed, char *msg, size_t msglen);

/* Launches the whole grid on stream s (asynchronous). */
CUresult kwc_launch(kwc_run *r, CUstream s);

/* Zeroes the outputs again (between runs whose outputs are compared). */
CUresult kwc_clear_outputs(kwc_run *r);

/* On SIGSEGV, SIGBUS or SIGABRT prints the signal and a backtrace (function names where
 * the program was linked with -rdynamic, library+offset otherwise) to stderr before dying:
 * the GPU machine has no debugger, and a crash inside the driver or CUPTI must say so. */
void kwc_crash_backtraces(void);

/* Copies outputs back and verifies them against the CPU reference; 0 when they match. */
int kwc_verify(kwc_run *r, char *why, size_t whylen);

/* Frees device memory, module and instance. */
void kwc_release(kwc_run *r);

/* "name: what: CUDA_ERROR_X" into msg; returns 1 when r is an error, else 0. */
int kwc_failed(CUresult r, const char *what, char *msg, size_t msglen);

/* For the GPU tools: prints "prog: what: CUDA_ERROR_X" and exits 1 when r is an error. */
void kwc_or_exit(CUresult r, const char *prog, const char *what);

#endif
