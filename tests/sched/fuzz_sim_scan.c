/*
 * libFuzzer target: the sim's PTX scanner (entries, module variables, initialisers) on
 * arbitrary bytes. What it accepts must give every variable a size, and writing the
 * initial values of the variables it accepted must succeed within their bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WRITE (1u << 20)    /* larger variables are only sized, not written */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sim_scan sc;
    kbackend_error err = {0};
    const char *text = (const char *)data;
    if (sim_scan_ptx(text, size, &sc, &err)) {
        if (!memchr(err.msg, 0, sizeof(err.msg)) || !err.msg[0])
            abort();            /* a failure always says why */
        return 0;
    }
    if (!sc.n_entries && !sc.n_vars)
        abort();
    for (unsigned i = 0; i < sc.n_vars; i++) {
        const sim_var *v = &sc.vars[i];
        sc.vars[i].addr = 0x100000000ull + i * 256ull;
        if (!v->bytes || v->bytes % v->shape.scalar)
            abort();
        if (v->bytes > MAX_WRITE)
            continue;
        unsigned char *buf = calloc(1, v->bytes);
        if (!buf || sim_scan_init(text, size, &sc, i, buf, &err))
            abort();
        free(buf);
    }
    sim_scan_free(&sc);
    return 0;
}
