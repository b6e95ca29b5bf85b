/* The sim's modules: the entries and module variables read from the text (sim_scan.c),
 * functions bound to the kernels' truth, and each module variable placed in a sim
 * allocation of its own, holding its initial value, for as long as the module is loaded. */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

int sim_kernel_index(const ksim *s, const char *entry, size_t len)
{
    for (unsigned i = 0; i < s->n_kernels; i++)
        if (strlen(s->kernels[i].entry) == len && !memcmp(s->kernels[i].entry, entry, len))
            return (int)i;
    return -1;
}

/* Frees m and the allocations of its variables. */
static void module_free(ksim *s, struct kbackend_module *m)
{
    for (unsigned i = 0; i < m->text.n_vars; i++)
        if (m->text.vars[i].addr)
            sim_mem_free(s, m->text.vars[i].addr, NULL);
    sim_scan_free(&m->text);
    free(m->fns);
    free(m);
}

int sim_module_load(void *state, uint32_t domain, const char *ptx, size_t len,
                    kbackend_module **out, kbackend_error *err)
{
    ksim *s = state;
    if (s->lost)
        return sim_lost(err);
    if (!ptx || !out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    struct kbackend_module *m = calloc(1, sizeof(*m));
    if (!m)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    int rc = sim_scan_ptx(ptx, len, &m->text, err);
    if (!rc && m->text.n_entries && !(m->fns = calloc(m->text.n_entries, sizeof(*m->fns))))
        rc = kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    for (unsigned i = 0; !rc && i < m->text.n_vars; i++)
        rc = sim_mem_alloc(s, domain, m->text.vars[i].bytes, &m->text.vars[i].addr, err);
    for (unsigned i = 0; !rc && i < m->text.n_vars; i++) {
        /* initial values, once every variable has its address (generic(var) takes it) */
        sim_alloc *a = sim_find_alloc(s, m->text.vars[i].addr, m->text.vars[i].bytes);
        if (a && a->data)
            rc = sim_scan_init(ptx, len, &m->text, i, a->data, err);
    }
    if (rc) {
        module_free(s, m);
        return rc;
    }
    *out = m;
    return 0;
}

int sim_module_unload(void *state, kbackend_module *m, kbackend_error *err)
{
    if (!m)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL module");
    module_free(state, m);
    return 0;
}

int sim_function_get(void *state, kbackend_module *m, const char *entry, kbackend_function **out,
                     kbackend_func_info *info, kbackend_error *err)
{
    ksim *s = state;
    if (s->lost)
        return sim_lost(err);
    if (!m || !entry || !out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    unsigned i = 0;
    while (i < m->text.n_entries && strcmp(m->text.entries[i], entry))
        i++;
    if (i == m->text.n_entries)
        return kbackend_fail(err, KBACKEND_ENOTFOUND, "no entry '%s' in the module", entry);
    size_t len = strlen(entry), sfx = strlen(KBACKEND_SLICE_SUFFIX);
    int sliced = len > sfx && !strcmp(entry + len - sfx, KBACKEND_SLICE_SUFFIX);
    int k = sim_kernel_index(s, entry, sliced ? len - sfx : len);
    if (k < 0)
        return kbackend_fail(err, KBACKEND_ENOTFOUND, "the sim knows nothing about '%.*s' "
                          "(declare it with ksim_add_kernel or a profile file)",
                          (int)(sliced ? len - sfx : len), entry);
    m->fns[i] = (struct kbackend_function){.kernel = (unsigned)k, .sliced = sliced};
    if (info)
        *info = (kbackend_func_info){.regs_per_thread = s->kernels[k].p.regs_per_thread,
                                  .static_smem = s->kernels[k].p.smem_per_block,
                                  .max_threads_per_block = s->cfg.gpu.max_warps_per_block * 32};
    *out = &m->fns[i];
    return 0;
}

int sim_global_get(void *state, kbackend_module *m, const char *name, kbackend_devptr *addr,
                   uint64_t *bytes, kbackend_error *err)
{
    (void)state;
    if (!m || !name)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    for (unsigned i = 0; i < m->text.n_vars; i++) {
        const sim_var *v = &m->text.vars[i];
        if (strcmp(v->name, name))
            continue;
        if (addr)
            *addr = v->addr;
        if (bytes)
            *bytes = v->bytes;
        return 0;
    }
    return kbackend_fail(err, KBACKEND_ENOTFOUND, "no variable '%s' in the module", name);
}
