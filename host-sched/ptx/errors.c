/* Error codes and messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

const char *kptx_strerror(int code)
{
    switch (code) {
    case KPTX_OK: return "success";
    case KPTX_EINVAL: return "invalid argument";
    case KPTX_ESYNTAX: return "PTX syntax error";
    case KPTX_ENOMEM: return "out of memory";
    case KPTX_EUNSUPPORTED: return "unsupported feature";
    case KPTX_ENOTFOUND: return "not found";
    case KPTX_ELIMIT: return "input exceeds a limit";
    case KPTX_ECORRUPT: return "malformed binary input";
    case KPTX_EIO: return "I/O error";
    default: return "unknown error";
    }
}

int kptx_fail(kptx_error *err, int code, unsigned line, unsigned column, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        err->line = line;
        err->column = column;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}
