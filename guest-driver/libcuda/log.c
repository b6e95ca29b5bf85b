/* Debug logging, on when KERNELET_DEBUG is set to anything but "0". The library stays
 * silent otherwise: a CUDA driver does not print. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entry_table.h"
#include "libcuda_internal.h"

bool kcu_debug(void)
{
    static int state = -1;

    if (state < 0) {
        const char *v = getenv("KERNELET_DEBUG");
        state = v && *v && strcmp(v, "0") != 0;
    }
    return state;
}

void kcu_log(const char *fmt, ...)
{
    va_list ap;

    if (!kcu_debug())
        return;
    va_start(ap, fmt);
    flockfile(stderr);
    fputs("[kernelet libcuda] ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    funlockfile(stderr);
    va_end(ap);
}

int kcu_unsupported(const char *name)
{
    kcu_log("%s: not supported", name);
    return CUDA_ERROR_NOT_SUPPORTED;
}
