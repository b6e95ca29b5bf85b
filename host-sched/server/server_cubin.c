/* Cubin modules (kernelet/cubin.h): SASS for the device, which cannot be sliced, so the
 * scheduler loads the image as it is and runs its kernels whole. Without PTX, each kernel's
 * parameter layout comes from the cubin's .nv.info records. A backend that runs PTX only
 * keeps the module without code: functions can be looked up, launches are refused here
 * with CUDA_ERROR_NO_BINARY_FOR_GPU and a line in the log naming the kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/cubin.h"
#include "server_internal.h"

static int describe_kernel(const kcubin_kernel *k, struct ks_entry *e)
{
    if (k->n_params > KERNELET_MAX_PARAMS || k->param_bytes > KERNELET_MAX_PARAM_BYTES)
        return -1;
    e->name = strdup(k->name);
    e->params = calloc(k->n_params ? k->n_params : 1, sizeof(*e->params));
    if (!e->name || !e->params)
        return -1;
    e->n_params = k->n_params;
    for (unsigned i = 0; i < k->n_params; i++)
        e->params[i] = (struct kernelet_param){k->params[i].offset, k->params[i].size};
    e->param_bytes = k->param_bytes;
    e->max_threads = k->max_threads;
    e->regs = k->regs;
    return 0;
}

static uint32_t describe_cubin(const kcubin *cb, struct ks_module *mod)
{
    mod->entries = calloc(cb->n_kernels ? cb->n_kernels : 1, sizeof(*mod->entries));
    if (!mod->entries)
        return KS_CUDA_OUT_OF_MEMORY;
    mod->cubin_arch = cb->arch;
    for (unsigned i = 0; i < cb->n_kernels; i++) {
        /* counted first: ks_module_free frees a partly described entry too */
        mod->n_entries++;
        if (describe_kernel(&cb->kernels[i], &mod->entries[i]) != 0)
            return KS_CUDA_INVALID_IMAGE;
    }
    return KS_CUDA_SUCCESS;
}

uint32_t ks_cubin_load(struct ks_load *l, const uint8_t *img, size_t size,
                       struct ks_module *mod)
{
    kcubin *cb = NULL;
    kptx_error perr;
    ksched_err err;
    uint32_t code;

    if (kcubin_open(img, size, &cb, &perr) != 0)
        return perr.code == KPTX_ENOMEM ? KS_CUDA_OUT_OF_MEMORY : KS_CUDA_INVALID_IMAGE;
    if (!kcubin_runs_on(cb->arch, ks_device_arch(l->srv)))
        code = KS_CUDA_NO_BINARY_FOR_GPU;   /* SASS of another architecture */
    else
        code = describe_cubin(cb, mod);
    uint64_t var_bytes = 0;     /* its __device__ and __constant__ variables */
    for (unsigned i = 0; i < cb->n_globals; i++)
        var_bytes += cb->globals[i].size;
    kcubin_free(cb);
    if (code)
        return code;
    uint64_t t0 = ks_now_ns();
    int rc = ksched_module_load_cubin(l->sched, l->tenant, img, size, &mod->sid, &err);
    ks_latency_load(l, KS_LOAD_BACKEND, t0);
    if (rc)
        return rc == KSCHED_EBACKEND ? KS_CUDA_INVALID_IMAGE : ks_cuda_of(rc, err.msg);
    return ks_module_charge(l, mod->sid, var_bytes);
}

uint32_t ks_cubin_refuse_launch(struct ks_conn *c, struct ks_function *f)
{
    const struct ks_obj *mo = ks_handle_get(&c->handles, f->module, KS_MODULE);
    const struct ks_module *m = mo ? &mo->u.module : NULL;
    const char *name = m && f->entry < m->n_entries ? m->entries[f->entry].name : "?";

    /* once per function: a program may retry in a loop */
    if (!f->refusal_logged)
        fprintf(stderr, "kerneletd: tenant %s (pid %u, context %u): launch of %s: SASS-only "
                "kernel (cubin for sm_%u) and backend %s runs PTX only: "
                "CUDA_ERROR_NO_BINARY_FOR_GPU\n", c->name, (unsigned)c->cred.pid, c->context,
                name, m ? m->cubin_arch : 0,
                c->srv->cfg.backend_name ? c->srv->cfg.backend_name : "?");
    f->refusal_logged = true;
    return KS_CUDA_NO_BINARY_FOR_GPU;
}
