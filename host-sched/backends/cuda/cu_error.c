/* Driver API results as executor errors (see cu_error.h). */
#include "cu_error.h"

#include <string.h>

int kcuda_error_is_kernel_fault(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
        return 1;
    default:
        return 0;
    }
}

int kcuda_error_is_sticky(CUresult r)
{
    if (kcuda_error_is_kernel_fault(r))
        return 1;
    switch (r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_EXTERNAL_DEVICE:
    case CUDA_ERROR_UNKNOWN:
        return 1;
    default:
        return 0;
    }
}

int kcuda_error_code(CUresult r)
{
    if (r == CUDA_SUCCESS)
        return KBACKEND_OK;
    if (kcuda_error_is_kernel_fault(r))
        return KBACKEND_ELAUNCH;
    switch (r) {
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    case CUDA_ERROR_INVALID_CLUSTER_SIZE:
        return KBACKEND_EINVAL;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return KBACKEND_EDEVMEM;
    case CUDA_ERROR_NOT_FOUND:
        return KBACKEND_ENOTFOUND;
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
        return KBACKEND_EMODULE;
    case CUDA_ERROR_NOT_SUPPORTED:
        return KBACKEND_EUNSUPPORTED;
    default:
        return KBACKEND_EDEVICE;
    }
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* [*b, *e) is the line starting at s (without its newline). */
static void line_at(const char *s, const char *end, const char **b, const char **e)
{
    *b = s;
    *e = memchr(s, '\n', (size_t)(end - s));
    if (!*e)
        *e = end;
}

static int mentions_error(const char *b, const char *e)
{
    for (const char *p = b; p + 5 <= e; p++)
        if (!strncmp(p, "error", 5) || !strncmp(p, "fatal", 5))
            return 1;
    return 0;
}

static int has_text(const char *b, const char *e)
{
    for (const char *p = b; p < e; p++)
        if (!blank(*p))
            return 1;
    return 0;
}

static void fold_blanks(const char *b, const char *e, char *out, size_t outlen)
{
    size_t n = 0;
    int gap = 0;
    for (const char *p = b; p < e && n + 1 < outlen; p++) {
        if (blank(*p)) {
            gap = n > 0;
            continue;
        }
        if (gap && n + 2 < outlen)
            out[n++] = ' ';
        gap = 0;
        out[n++] = (unsigned char)*p < 0x20 ? '?' : *p;
    }
    out[n] = '\0';
}

void kcuda_jit_summary(const char *log, size_t loglen, char *out, size_t outlen)
{
    if (!out || !outlen)
        return;
    out[0] = '\0';
    if (!log)
        return;
    size_t n = strnlen(log, loglen);
    const char *end = log + n, *first = NULL, *first_end = NULL, *b, *e;
    for (const char *s = log; s < end; s = e + 1) {
        line_at(s, end, &b, &e);
        if (!has_text(b, e))
            continue;
        if (mentions_error(b, e)) {
            fold_blanks(b, e, out, outlen);
            return;
        }
        if (!first) {
            first = b;
            first_end = e;
        }
    }
    if (first)
        fold_blanks(first, first_end, out, outlen);
}
