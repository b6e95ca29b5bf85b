/* Error codes, messages and their CUDA equivalents. */
#include "emu_internal.h"

#include <stdarg.h>
#include <stdio.h>

int emu_error_set(kemu_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *kemu_strerror(int code)
{
    switch (code) {
    case KEMU_OK: return "success";
    case KEMU_EINVAL: return "invalid argument";
    case KEMU_ENOMEM: return "out of memory";
    case KEMU_EPTX: return "malformed PTX";
    case KEMU_EUNSUPPORTED: return "unsupported instruction or feature";
    case KEMU_ENOTFOUND: return "not found";
    case KEMU_EADDRESS: return "illegal address";
    case KEMU_EMISALIGNED: return "misaligned address";
    case KEMU_ETRAP: return "trap";
    case KEMU_ERESOURCES: return "launch out of resources";
    case KEMU_EDEADLOCK: return "barrier or warp-synchronous deadlock";
    case KEMU_ELIMIT: return "instruction budget exhausted";
    case KEMU_ECANCELLED: return "launch cancelled";
    case KEMU_EPARAM: return "wrong parameter block";
    default: return "unknown error";
    }
}

/* CUresult values from the CUDA Driver API (cuda.h), as plain numbers so that this
 * library does not need CUDA headers. */
int kemu_cuda_result(int code)
{
    switch (code) {
    case KEMU_OK: return 0;                  /* CUDA_SUCCESS */
    case KEMU_EINVAL: return 1;              /* CUDA_ERROR_INVALID_VALUE */
    case KEMU_EPARAM: return 1;
    case KEMU_ENOMEM: return 2;              /* CUDA_ERROR_OUT_OF_MEMORY */
    case KEMU_EPTX: return 218;              /* CUDA_ERROR_INVALID_PTX */
    case KEMU_EUNSUPPORTED: return 715;      /* CUDA_ERROR_ILLEGAL_INSTRUCTION */
    case KEMU_ENOTFOUND: return 500;         /* CUDA_ERROR_NOT_FOUND */
    case KEMU_EADDRESS: return 700;          /* CUDA_ERROR_ILLEGAL_ADDRESS */
    case KEMU_EMISALIGNED: return 716;       /* CUDA_ERROR_MISALIGNED_ADDRESS */
    case KEMU_ETRAP: return 719;             /* CUDA_ERROR_LAUNCH_FAILED (as trap gives) */
    case KEMU_ERESOURCES: return 701;        /* CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES */
    case KEMU_EDEADLOCK: return 719;         /* CUDA_ERROR_LAUNCH_FAILED */
    case KEMU_ELIMIT: return 702;            /* CUDA_ERROR_LAUNCH_TIMEOUT */
    case KEMU_ECANCELLED: return 702;
    default: return 999;                     /* CUDA_ERROR_UNKNOWN */
    }
}
