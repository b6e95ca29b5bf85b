/* Error reporting into kptx_error: the library never prints. */
#include <stdarg.h>
#include <stdio.h>

#include "fatbin_internal.h"

int kfb_fail(kptx_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    err->line = 0;
    err->column = 0;
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    return code;
}

int kfb_ok(kptx_error *err)
{
    if (err) {
        err->code = KPTX_OK;
        err->line = 0;
        err->column = 0;
        err->message[0] = '\0';
    }
    return KPTX_OK;
}
