/*
 * libFuzzer target: the cubin reader on arbitrary bytes (kernelet/cubin.h), and the
 * .nv.info decoder on the same bytes as one kernel's section. Whatever it accepts must be
 * consistent: parameters inside the block, names present.
 */
#include <stdint.h>
#include <stdlib.h>

#include "kernelet/cubin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_kernel(const kcubin_kernel *k)
{
    if (k->n_params > KCUBIN_MAX_PARAMS || k->param_bytes > KCUBIN_MAX_PARAM_BYTES ||
        (k->n_params && !k->params))
        abort();
    for (unsigned p = 0; p < k->n_params; p++)
        if (!k->params[p].size || k->params[p].offset + k->params[p].size > k->param_bytes)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kcubin_kernel k = {0};
    kptx_error err;
    if (kcubin_decode_kernel_info(data, size, &k, &err) == 0)
        check_kernel(&k);
    free(k.params);

    kcubin *cb = NULL;
    if (kcubin_open(data, size, &cb, &err) != 0) {
        if (cb || !err.message[0])
            abort();
        return 0;
    }
    for (unsigned i = 0; i < cb->n_kernels; i++) {
        if (!cb->kernels[i].name)
            abort();
        check_kernel(&cb->kernels[i]);
    }
    for (unsigned i = 0; i < cb->n_globals; i++)
        if (!cb->globals[i].name)
            abort();
    kcubin_free(cb);
    return 0;
}
