/* A tenant's module variables in its window (kernelet/ptx.h, "Relocating module
 * variables"). The driver would place a module's .global variables outside every window,
 * where a fenced kernel cannot reach them; so before the JIT the backend allocates one
 * block for them in the loading domain's window, writes their initial values there, and
 * rewrites the PTX so that each use of a variable is its address in the block. The
 * fencing pass has already masked every access, so they stay fenced; global_get then
 * answers the block's addresses, so host copies reach the same storage. */
#include <stdlib.h>
#include <string.h>

#include "backend_internal.h"
#include "kernelet/ptx.h"

/* What global_get needs after the PTX module is gone: names, offsets, sizes. */
static int keep_layout(kcuda_reloc *r, const kptx_reloc_plan *p, kbackend_error *err)
{
    r->names = calloc(p->n, sizeof *r->names);
    r->offsets = calloc(p->n, sizeof *r->offsets);
    r->sizes = calloc(p->n, sizeof *r->sizes);
    if (!r->names || !r->offsets || !r->sizes)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    for (unsigned i = 0; i < p->n; i++, r->n++) {
        if (!(r->names[i] = strdup(p->vars[i].name)))
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
        r->offsets[i] = p->vars[i].offset;
        r->sizes[i] = p->vars[i].size;
    }
    return 0;
}

/* bytes for a module's variables in domain's window: past the reach while a kernel of the
 * domain runs, else anywhere. It does not wait for them as an allocation does (memory.c):
 * where only a hole has room it still takes one (docs/SECURITY.md). (It could wait now: a
 * load runs without the scheduler's lock, its domain paused, module_unlocked; untried on
 * the device, so the behaviour is kept.) */
static int window_block(kcuda *kc, uint32_t domain, uint64_t bytes, CUdeviceptr *block,
                        kbackend_error *err)
{
    int rc = kcuda_windows_alloc(kc->windows, domain, bytes,
                                 !kcuda_control_busy(kc->control, domain), block, err);
    return rc == KCUDA_WINDOWS_ONLY_HOLES
               ? kcuda_windows_alloc(kc->windows, domain, bytes, 1, block, err) : rc;
}

/* The block in domain's window, holding the variables' initial values and zeros up to
 * the end of its mapping. */
static int fill_block(kcuda *kc, uint32_t domain, const kptx_reloc_plan *p, kcuda_reloc *r,
                      kbackend_error *err)
{
    void *img = malloc(p->bytes);
    kptx_error pe = {0};
    if (!img)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    int rc = kptx_reloc_image(p, img, p->bytes, &pe)
                 ? kbackend_fail(err, KBACKEND_EMODULE, "module variables: %s", pe.message)
                 : window_block(kc, domain, p->bytes, &r->block, err);
    if (!rc) {
        /* all of the mapped span is the tenant's to read: none of the memory's past. On
         * the allocation stream and waited for: the lanes' streams are not ordered with
         * the legacy one, and the tenant's kernels run there. */
        CUresult cr = cuMemsetD8Async(r->block, 0, kcuda_windows_span(kc->windows, p->bytes),
                                      kc->alloc_stream);
        if (cr == CUDA_SUCCESS)
            cr = cuMemcpyHtoDAsync(r->block, img, p->bytes, kc->alloc_stream);
        if (cr == CUDA_SUCCESS)
            cr = cuStreamSynchronize(kc->alloc_stream);
        if (cr != CUDA_SUCCESS) {
            kcuda_windows_release_ptr(kc->windows, r->block);
            r->block = 0;
            rc = kcuda_cu_fail(err, cr, "cuMemcpyHtoD of module variables");
        }
    }
    free(img);
    return rc;
}

/* Plans, fills and rewrites; *text gets the rewritten PTX (NULL: nothing to relocate). */
static int relocate(kcuda *kc, uint32_t domain, kptx_module *pm, kcuda_reloc *r, char **text,
                    kbackend_error *err)
{
    kptx_reloc_plan p;
    kptx_error pe = {0};
    size_t len;
    if (kptx_reloc_plan_make(pm, &p, &pe))
        return kbackend_fail(err, KBACKEND_EMODULE, "module variables: %s", pe.message);
    int rc = 0;
    if (p.n) {
        rc = keep_layout(r, &p, err);
        if (!rc)
            rc = fill_block(kc, domain, &p, r, err);
        if (!rc && (kptx_reloc_apply(pm, &p, r->block, &pe) || kptx_print(pm, text, &len, &pe)))
            rc = kbackend_fail(err, pe.code == KPTX_ENOMEM ? KBACKEND_ENOMEM : KBACKEND_EMODULE,
                               "relocating module variables: %s", pe.message);
    }
    kptx_reloc_plan_clear(&p);
    return rc;
}

int kcuda_reloc_text(kcuda *kc, uint32_t domain, const char *ptx, size_t len, kcuda_reloc *r,
                     char **text, kbackend_error *err)
{
    kptx_module *pm;
    kptx_error pe = {0};
    *text = NULL;
    memset(r, 0, sizeof *r);
    if (!domain || !kc->windows)
        return 0;           /* no window: the driver places the variables */
    if (kptx_parse(ptx, len, &pm, &pe))
        return 0;           /* the JIT reports what is wrong with the text */
    int rc = relocate(kc, domain, pm, r, text, err);
    kptx_module_free(pm);
    if (rc)
        kcuda_reloc_free(kc, r);
    return rc;
}

int kcuda_reloc_find(const kcuda_reloc *r, const char *name, CUdeviceptr *p, size_t *size)
{
    for (unsigned i = 0; i < r->n; i++)
        if (!strcmp(r->names[i], name)) {
            *p = r->block + r->offsets[i];
            *size = (size_t)r->sizes[i];
            return 1;
        }
    return 0;
}

void kcuda_reloc_free(kcuda *kc, kcuda_reloc *r)
{
    if (r->block && kc->windows)
        kcuda_windows_release_ptr(kc->windows, r->block);
    for (unsigned i = 0; r->names && i < r->n; i++)
        free(r->names[i]);
    free(r->names);
    free(r->offsets);
    free(r->sizes);
    memset(r, 0, sizeof *r);
}
