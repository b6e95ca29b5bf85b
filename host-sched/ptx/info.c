/* Kernel information for the daemon: parameter layout (to marshal kernelParams), block
 * size directives, special registers read and whether the kernel can be sliced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* "256, 1, 1" -> {256, 1, 1}; missing components are 1. */
static void parse_dims(const char *text, unsigned out[3])
{
    out[0] = out[1] = out[2] = 1;
    const char *p = text;
    for (int i = 0; i < 3 && *p; i++) {
        char *end;
        unsigned long v = strtoul(p, &end, 0);
        if (end == p)
            break;
        out[i] = (unsigned)v;
        p = end;
        while (*p == ',' || *p == ' ')
            p++;
    }
}

static void perf_dims(const kptx_function *fn, kptx_kernel_info *info)
{
    for (unsigned i = 0; i < fn->n_perf; i++) {
        if (strcmp(fn->perf[i].name, ".reqntid") == 0)
            parse_dims(fn->perf[i].text, info->reqntid);
        else if (strcmp(fn->perf[i].name, ".maxntid") == 0)
            parse_dims(fn->perf[i].text, info->maxntid);
    }
}

int kptx_kernel_info_get(const kptx_module *m, const char *name, kptx_kernel_info *info,
                         kptx_error *err)
{
    if (!m || !name || !info)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "NULL argument");
    memset(info, 0, sizeof *info);
    const kptx_function *fn = kptx_find_function(m, name);
    if (!fn || !fn->is_entry)
        return kptx_fail(err, KPTX_ENOTFOUND, 0, 0, "no kernel named '%s'", name);
    const kptx_analysis *an = kptx_module_analysis(m, err);
    if (!an)
        return KPTX_ENOMEM;
    int root = kptx_analysis_find(an, name);
    info->name = fn->name;
    info->n_params = fn->n_params;
    info->param_bytes = fn->param_bytes;
    info->params = calloc(fn->n_params ? fn->n_params : 1, sizeof *info->params);
    if (!info->params || root < 0 ||
        kptx_entry_verdict(m, an, (unsigned)root, &info->sregs, info->why_not,
                           sizeof info->why_not)) {
        kptx_kernel_info_clear(info);
        return kptx_fail(err, KPTX_ENOMEM, 0, 0, "out of memory");
    }
    for (unsigned i = 0; i < fn->n_params; i++) {
        uint64_t size;
        unsigned align;
        kptx_var_size_align(&fn->params[i], &size, &align);
        info->params[i] = (kptx_param_info){fn->params[i].name, fn->params[i].offset,
                                            fn->params[i].size, align};
    }
    perf_dims(fn, info);
    info->sliceable = info->why_not[0] == '\0';
    return 0;
}

void kptx_kernel_info_clear(kptx_kernel_info *info)
{
    if (!info)
        return;
    free(info->params);
    memset(info, 0, sizeof *info);
}
