/* Shared by the compatibility programs: fail loudly on an unexpected CUDA result. Each
 * program checks its own results and exits 0 on success, 1 on any failure. */
#ifndef BENCH_COMPAT_H
#define BENCH_COMPAT_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        cudaError_t compat_err_ = (call);                                                   \
        if (compat_err_ != cudaSuccess) {                                                   \
            fprintf(stderr, "FAIL %s:%d: %s: %s (%d)\n", __FILE__, __LINE__, #call,         \
                    cudaGetErrorName(compat_err_), (int)compat_err_);                       \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define EXPECT(cond, ...)                                                                   \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                 \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fputc('\n', stderr);                                                            \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static inline void compat_pass(const char *name)
{
    printf("PASS %s\n", name);
}

#endif
