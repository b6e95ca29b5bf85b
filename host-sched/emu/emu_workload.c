/* kernelet-workloads instances on the emulator (see emu_workload.h). */
#include "emu_workload.h"

#include <kernelet/ptx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load_module(emu_wl *w, const char *text, size_t len, bool sliced, kemu_error *err)
{
    if (!sliced)
        return kemu_module_load(w->dev, text, len, &w->mod, err);
    kptx_module *m = NULL;
    kptx_error pe = {0};
    int rc = kptx_parse(text, len, &m, &pe);
    if (rc == 0)
        rc = kptx_slice_module(m, NULL, &pe);
    if (rc) {
        kptx_module_free(m);
        snprintf(err->message, sizeof err->message, "PTX: %s", pe.message);
        return err->code = KEMU_EPTX;
    }
    rc = kemu_module_load_parsed(w->dev, m, &w->mod, err);
    kptx_module_free(m);
    return rc;
}

static int build_params(emu_wl *w, const kw_instance *in, kemu_error *err)
{
    kemu_function_info info;
    kemu_function_info_get(w->fn, &info);
    if (info.n_params != in->n_args || info.param_bytes > sizeof w->params) {
        snprintf(err->message, sizeof err->message, "%s: %u parameters, instance has %u",
                 info.name, info.n_params, in->n_args);
        return err->code = KEMU_EPARAM;
    }
    memset(w->params, 0, sizeof w->params);
    for (unsigned a = 0; a < in->n_args; a++) {
        const kw_arg *arg = &in->args[a];
        uint8_t *p = w->params + info.params[a].offset;
        switch (arg->kind) {
        case KW_ARG_BUFFER: memcpy(p, &w->bufs[arg->value.buffer], 8); break;
        case KW_ARG_U32: memcpy(p, &arg->value.u32, 4); break;
        case KW_ARG_U64: memcpy(p, &arg->value.u64, 8); break;
        case KW_ARG_F32: memcpy(p, &arg->value.f32, 4); break;
        case KW_ARG_F64: memcpy(p, &arg->value.f64, 8); break;
        }
    }
    w->param_bytes = info.param_bytes;
    return 0;
}

int emu_wl_prepare(emu_wl *w, kemu_device *dev, const char *ptx_dir, const kw_instance *in,
                   bool sliced, kemu_error *err)
{
    memset(w, 0, sizeof *w);
    w->dev = dev;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", ptx_dir, in->kernel->ptx_file);
    size_t len = 0;
    char *text = kw_read_file(path, &len);
    if (!text) {
        snprintf(err->message, sizeof err->message, "cannot read %.300s", path);
        return err->code = KEMU_EINVAL;
    }
    int rc = load_module(w, text, len, sliced, err);
    free(text);
    if (rc == 0)
        rc = kemu_module_get_function(w->mod, in->kernel->entry, &w->fn, err);
    if (rc == 0 && sliced) {
        char name[256];
        kptx_slice_name(in->kernel->entry, name, sizeof name);
        rc = kemu_module_get_function(w->mod, name, &w->sliced, err);
    }
    for (unsigned b = 0; rc == 0 && b < in->n_buffers; b++) {
        rc = kemu_mem_alloc(dev, in->buffers[b].size, &w->bufs[b], err);
        if (rc == 0)
            w->n_bufs++;
        if (rc == 0 && in->buffers[b].copy_in)
            rc = kemu_memcpy_htod(dev, w->bufs[b], in->buffers[b].host, in->buffers[b].size, err);
    }
    if (rc == 0)
        rc = build_params(w, in, err);
    if (rc)
        emu_wl_release(w);
    return rc;
}

static kemu_launch_config config_of(const emu_wl *w, const kw_instance *in)
{
    kemu_launch_config cfg = {0};
    memcpy(cfg.grid, in->grid, sizeof cfg.grid);
    memcpy(cfg.block, in->block, sizeof cfg.block);
    cfg.dynamic_shared_bytes = in->dynamic_shared_bytes;
    cfg.params = w->params;
    cfg.params_bytes = w->param_bytes;
    return cfg;
}

int emu_wl_launch(emu_wl *w, const kw_instance *in, kemu_launch_stats *stats, kemu_error *err)
{
    kemu_launch_config cfg = config_of(w, in);
    cfg.stats = stats;
    return kemu_launch(w->fn, &cfg, err);
}

int emu_wl_launch_slices(emu_wl *w, const kw_instance *in, const uint32_t *bounds,
                         unsigned n_slices, kemu_error *err)
{
    kemu_launch_config cfg = config_of(w, in);
    for (unsigned i = 0; i < n_slices; i++) {
        int rc = kemu_launch_slice(w->sliced, bounds[i], bounds[i + 1] - bounds[i], &cfg, err);
        if (rc)
            return rc;
    }
    return 0;
}

int emu_wl_copy_out(emu_wl *w, kw_instance *in, kemu_error *err)
{
    for (unsigned b = 0; b < in->n_buffers; b++) {
        if (!in->buffers[b].copy_out)
            continue;
        int rc = kemu_memcpy_dtoh(w->dev, in->buffers[b].host, w->bufs[b], in->buffers[b].size, err);
        if (rc)
            return rc;
    }
    return 0;
}

void emu_wl_release(emu_wl *w)
{
    for (unsigned b = 0; b < w->n_bufs; b++)
        kemu_mem_free(w->dev, w->bufs[b], NULL);
    w->n_bufs = 0;
    kemu_module_unload(w->mod);
    w->mod = NULL;
}
