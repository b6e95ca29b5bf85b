/* Error codes and messages of the scheduler library. */
#include <stdarg.h>
#include <stdio.h>

#include "sched_error.h"

const char *ksched_strerror(int code)
{
    switch (code) {
    case KSCHED_OK: return "success";
    case KSCHED_EINVAL: return "invalid argument";
    case KSCHED_ENOMEM: return "out of memory";
    case KSCHED_ENOTFOUND: return "not found";
    case KSCHED_EQUOTA: return "memory quota exceeded";
    case KSCHED_EAGAIN: return "too many launches in flight";
    case KSCHED_EBACKEND: return "backend failure";
    case KSCHED_ECANCELED: return "canceled";
    case KSCHED_ESTATE: return "not possible in the current state";
    case KSCHED_EUNSUPPORTED: return "not supported by the backend";
    case KSCHED_EIO: return "input/output error";
    case KSCHED_ELOST: return "device lost; the scheduler and backend must be recreated";
    case KSCHED_ECONTEXTS: return "too many client contexts of one tenant";
    default: return "unknown error";
    }
}

int ksched_fail(ksched_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return code;
}
