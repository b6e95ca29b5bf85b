/* Helpers of the executor interface: errors, backend checks, device-to-model mapping. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernelet/executor.h"

const char *kbackend_strerror(int code)
{
    switch (code) {
    case KBACKEND_OK: return "success";
    case KBACKEND_EINVAL: return "invalid argument";
    case KBACKEND_ENOMEM: return "out of host memory";
    case KBACKEND_EDEVMEM: return "out of device memory";
    case KBACKEND_ENOTFOUND: return "function not found";
    case KBACKEND_ELAUNCH: return "kernel failed on the device";
    case KBACKEND_EUNSUPPORTED: return "operation not supported by the backend";
    case KBACKEND_EDEVICE: return "device error";
    case KBACKEND_EMODULE: return "module refused";
    case KBACKEND_ELOST: return "device context lost; recreate the backend";
    default: return "unknown error";
    }
}

int kbackend_fail(kbackend_error *err, int code, const char *fmt, ...)
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

int kbackend_validate(const kbackend *b, kbackend_error *err)
{
    if (!b || !b->ops)
        return kbackend_fail(err, KBACKEND_EINVAL, "no backend");
    const kbackend_ops *o = b->ops;
    const struct { const void *fn; const char *name; } need[] = {
        {(const void *)o->destroy, "destroy"},
        {(const void *)o->device_info, "device_info"},
        {(const void *)o->now_ns, "now_ns"},
        {(const void *)o->mem_alloc, "mem_alloc"},
        {(const void *)o->mem_free, "mem_free"},
        {(const void *)o->copy_h2d, "copy_h2d"},
        {(const void *)o->copy_d2h, "copy_d2h"},
        {(const void *)o->copy_d2d, "copy_d2d"},
        {(const void *)o->memset_d8, "memset_d8"},
        {(const void *)o->module_load_ptx, "module_load_ptx"},
        {(const void *)o->module_unload, "module_unload"},
        {(const void *)o->function_get, "function_get"},
        {(const void *)o->launch, "launch"},
    };
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
        if (!need[i].fn)
            return kbackend_fail(err, KBACKEND_EINVAL, "backend %s lacks the %s operation",
                              o->name ? o->name : "(unnamed)", need[i].name);
    return 0;
}

void kbackend_device_model_options(const kbackend_device_info *info, kmodel_options *opt)
{
    if (info && opt && info->a0 > 0 && info->a0 <= 1)
        opt->latency.a0 = info->a0;
}

uint64_t kbackend_grid_blocks(const unsigned grid[3])
{
    return (uint64_t)grid[0] * grid[1] * grid[2];
}

/* The built-in GPU whose compute capability matches, newest first. */
static const kmodel_gpu *gpu_of_capability(int major, int minor)
{
    static const struct { int major, minor; const char *name; } by_cc[] = {
        {9, 0, "H100"}, {3, 0, "GTX680"}, {2, 0, "C2050"},
    };
    for (size_t i = 0; i < sizeof(by_cc) / sizeof(by_cc[0]); i++)
        if (by_cc[i].major == major && by_cc[i].minor == minor)
            return kmodel_gpu_lookup(by_cc[i].name);
    return NULL;
}

int kbackend_device_gpu(const kbackend_device_info *info, kmodel_gpu *out, kbackend_error *err)
{
    if (!info || !out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    if (info->model_gpu) {
        *out = *info->model_gpu;
        return 0;
    }
    const kmodel_gpu *base = kmodel_gpu_lookup(info->name);
    if (!base)
        base = gpu_of_capability(info->cc_major, info->cc_minor);
    if (!base)
        return kbackend_fail(err, KBACKEND_EINVAL,
                          "no model parameters for device '%s' (compute capability %d.%d)",
                          info->name, info->cc_major, info->cc_minor);
    kmodel_gpu g = *base;
    g.name = info->name;
    if (info->sms) g.sms = info->sms;
    if (info->max_warps_per_sm) g.max_warps_per_sm = info->max_warps_per_sm;
    if (info->max_blocks_per_sm) g.max_blocks_per_sm = info->max_blocks_per_sm;
    if (info->max_threads_per_block) g.max_warps_per_block = info->max_threads_per_block / 32;
    if (info->regs_per_sm) g.regs_per_sm = info->regs_per_sm;
    if (info->max_regs_per_thread) g.max_regs_per_thread = info->max_regs_per_thread;
    if (info->smem_per_sm) g.smem_per_sm = info->smem_per_sm;
    if (info->max_smem_per_block) g.max_smem_per_block = info->max_smem_per_block;
    if (info->clock_mhz > 0) g.clock_mhz = info->clock_mhz;
    if (info->mem_bandwidth_gbs > 0) g.mem_bandwidth_gbs = info->mem_bandwidth_gbs;
    char msg[200];
    if (kmodel_gpu_validate(&g, msg, sizeof(msg)))
        return kbackend_fail(err, KBACKEND_EINVAL, "device '%s': %s", info->name, msg);
    *out = g;
    return 0;
}
