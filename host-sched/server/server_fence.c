/* Memory fencing of tenants' kernels (docs/SECURITY.md): every PTX module is rewritten by
 * the fencing pass (kptx_fence_module) before it is sliced, so that its kernels reach
 * only their tenant's address window; each launch of a fenced kernel gets the window as
 * two more parameters. A kernel the pass cannot fence, and a SASS-only kernel (a cubin,
 * which has no PTX to rewrite), are refused with CUDA_ERROR_NOT_SUPPORTED unless the
 * operator turned fencing off (kerneletd --no-fence) or the server is a worker of the
 * isolation tier (one tenant alone in its context: it runs them unfenced). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"
#include "server_internal.h"

/* Whether the tenant's text already has entry's sliced variant: the scheduler would
 * launch that one in its place, and the slicer leaves it as the tenant wrote it. */
static bool has_own_variant(const kptx_module *m, const char *entry)
{
    char name[KERNELET_MAX_SYMBOL + sizeof(KPTX_SLICE_SUFFIX)];

    return kptx_slice_name(entry, name, sizeof(name)) != 0 || kptx_find_function(m, name);
}

int ks_fence_module(const struct ks_server *s, kptx_module *m, struct ks_module *mod)
{
    kptx_error perr;
    char why[192];
    const kbackend_device_info *dev = &s->cfg.device;
    unsigned flags = dev->module_vars_outside ? KPTX_FENCE_VARS_OUTSIDE : 0;

    if (dev->module_vars_outside && dev->module_vars_relocated)
        flags |= KPTX_FENCE_VARS_RELOCATED;
    if (s->cfg.fence_faults)
        flags |= KPTX_FENCE_TRAP;

    for (unsigned i = 0; i < mod->n_entries; i++) {
        if (kptx_fence_verdict(m, mod->entries[i].name, flags, why, sizeof(why), &perr) != 0)
            return -1;
        if (!why[0] && has_own_variant(m, mod->entries[i].name))
            snprintf(why, sizeof(why), "the module brings its own %s%s, which would run in "
                     "its place unfenced", mod->entries[i].name, KPTX_SLICE_SUFFIX);
        if (why[0] && !(mod->entries[i].unfenced = strdup(why)))
            return -1;
    }
    kptx_fence_opts opts = {.flags = flags, .stack_bytes = dev->stack_bytes,
                            .stack_top = dev->stack_top, .local_top = dev->local_top};
    return kptx_fence_module_opts(m, &opts, NULL, &perr) == 0 ? 0 : -1;
}

/* Why f cannot run fenced, or NULL when it can. */
static const char *unfenced_reason(const struct ks_conn *c, const struct ks_function *f)
{
    const struct ks_obj *mo = ks_handle_get(&c->handles, f->module, KS_MODULE);
    const struct ks_module *m = mo ? &mo->u.module : NULL;

    if (!m || f->entry >= m->n_entries)
        return "its module is gone";
    if (m->cubin_arch)
        return "SASS-only kernel (a cubin without PTX)";
    return m->entries[f->entry].unfenced;
}

void ks_fence_function(const struct ks_conn *c, struct ks_function *f)
{
    f->fenced = !c->srv->cfg.no_fence && !unfenced_reason(c, f);
    /* Alone in its context (a worker of the isolation tier), an unfenced kernel can reach
     * only its own tenant's memory. */
    f->fence_refused = !c->srv->cfg.no_fence && !f->fenced && !c->srv->cfg.adopt;
}

bool ks_kernels_unconfined(const struct ks_conn *c)
{
    return c->srv->cfg.no_fence || c->srv->cfg.adopt;
}

uint32_t ks_fence_refuse_launch(struct ks_conn *c, struct ks_function *f)
{
    const struct ks_obj *mo = ks_handle_get(&c->handles, f->module, KS_MODULE);
    const struct ks_module *m = mo ? &mo->u.module : NULL;
    const char *name = m && f->entry < m->n_entries ? m->entries[f->entry].name : "?";
    const char *why = unfenced_reason(c, f);

    /* once per function: a program may retry in a loop */
    if (!f->refusal_logged)
        fprintf(stderr, "kerneletd: tenant %s (pid %u, context %u): launch of %s refused: it "
                "cannot be fenced: %s: CUDA_ERROR_NOT_SUPPORTED (a tenant with a GPU "
                "context of its own runs it: KERNELET_ISOLATE=1 in its environment, or "
                "kerneletd --isolate %s)\n", c->name, (unsigned)c->cred.pid, c->context, name,
                why ? why : "?", c->name);
    f->refusal_logged = true;
    return KS_CUDA_NOT_SUPPORTED;
}

uint32_t ks_fence_params(struct ks_conn *c, const void *params, uint32_t size, void **out,
                         uint32_t *out_size)
{
    kbackend_window w;
    ksched_err err;
    uint32_t off = kptx_fence_param_offset(size);
    uint64_t fence[KPTX_FENCE_EXTRA_PARAMS];
    uint8_t *p;
    /* the launching context's window, whoever loaded the function: a guest process's
     * kernel reaches only its own memory, not its neighbours' in the same VM */
    int rc = ksched_context_window(c->srv->cfg.sched, c->tenant, c->context, &w, &err);

    if (rc == KSCHED_EUNSUPPORTED)
        return KS_CUDA_NOT_SUPPORTED;
    if (rc)
        return ks_context_cuda_of(c, c->context, rc, err.msg);
    if (!(p = calloc(1, off + sizeof(fence))))
        return KS_CUDA_OUT_OF_MEMORY;
    memcpy(p, params, size);
    fence[0] = w.base;
    /* the part of the window that is mapped (a hole would be a fault in the shared
     * context): it only grows, so a kernel launched with it stays inside */
    fence[1] = kbackend_window_mask(&w);
    if (ks_kernels_unconfined(c)) {
        /* Alone in its context, the tenant's kernels keep the fence's control words but
         * not its window: they may reach all that the context holds, which is the
         * tenant's own (its mapped host memory too: server_region.c). */
        fence[0] = 0;
        fence[1] = UINT64_MAX;
    }
    fence[2] = w.cancel;
    fence[3] = w.fault;
    memcpy(p + off, fence, sizeof(fence));
    *out = p;
    *out_size = off + (uint32_t)sizeof(fence);
    return KS_CUDA_SUCCESS;
}
