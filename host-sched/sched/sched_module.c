/* Modules and functions of tenants: PTX or cubins loaded through the backend, the kernel identity
 * (module hash, entry), each entry's sliced variant, and module variables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

#define MAX_PTX (64u << 20)

/* The backend's module for the bytes: PTX, or a cubin (none when the backend runs PTX
 * only: the module then has no code, ksched.h). Called with the lock held; where the
 * backend allows it (kbackend_device_info.module_unlocked: the cuda driver's JIT of a big
 * module takes 100 ms and more), the lock is released meanwhile and t paused, as for an
 * allocation (sched_unlocked_begin), so that the other tenants are decided and completed.
 * The lock is held again on return, and the backend's error (which may say the device is
 * lost) is noted under it. */
static int backend_load(ksched *s, sched_tenant *t, const void *data, size_t len, int cubin,
                        sched_module *m, ksched_err *err)
{
    kbackend_error e = {0};
    const kbackend_ops *o = s->be.ops;
    const int unlocked = s->dev.module_unlocked;
    int rc = 0;

    if (unlocked)
        sched_unlocked_begin(s, t);
    if (!cubin)
        rc = o->module_load_ptx(s->be.state, m->domain->id, data, len, &m->mod, &e);
    else if (o->module_load_cubin)
        rc = o->module_load_cubin(s->be.state, data, len, &m->mod, &e);
    if (unlocked)
        sched_unlocked_end(s, t);
    return rc ? sched_backend_fail_s(s, err, &e, cubin ? "module_load_cubin" : "module_load_ptx")
              : 0;
}

/* m, loaded, becomes t's (with the lock held): a tenant removed, or a device lost, while
 * the backend loaded it without the lock refuses it. */
static int module_register(ksched *s, sched_tenant *t, sched_module *m, uint32_t *module,
                           ksched_err *err)
{
    int rc = t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u was removed during the "
                                       "module load", t->id)
                         : sched_refuse_if_lost(s, err);
    if (rc)
        return rc;
    m->id = t->next_module++;
    if (idmap_put(&t->modules, m->id, m))
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    *module = m->id;
    return 0;
}

/* The module has no id until it is registered: nothing can unload it during the load, and
 * t is not reaped while the load is in the backend without the lock (its unlocked_calls). */
static int module_load(ksched *s, uint32_t tenant, uint32_t context, const void *data,
                       size_t len, int cubin, uint32_t *module, ksched_err *err)
{
    if (!s || !data || !module || !len)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument or empty module");
    if (len > MAX_PTX)
        return ksched_fail(err, KSCHED_EINVAL, "module of %zu bytes (at most %u)", len, MAX_PTX);
    sched_module *m = calloc(1, sizeof(*m));
    if (!m)
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    m->hash = ksched_hash(data, len);   /* outside the lock: it reads the whole image */
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    int rc = !t ? KSCHED_ENOTFOUND
             : t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u is being removed", tenant)
             : sched_refuse_if_lost(s, err);
    /* PTX's variables lie in its context's window; a cubin's are the driver's (the
     * backend takes no domain for it) */
    if (!rc && !cubin && !(rc = sched_domain_of(s, t, context, &m->domain, err)))
        sched_domain_hold(m->domain);
    if (!rc)
        rc = backend_load(s, t, data, len, cubin, m, err);
    if (!rc && (rc = module_register(s, t, m, module, err)) && m->mod) {
        kbackend_error e = {0};
        s->be.ops->module_unload(s->be.state, m->mod, &e);
    }
    if (rc) {
        if (t)
            sched_domain_put(s, t, m->domain);
        free(m);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_module_load(ksched *s, uint32_t tenant, const char *ptx, size_t len,
                       uint32_t *module, ksched_err *err)
{
    return module_load(s, tenant, 0, ptx, len, 0, module, err);
}

int ksched_module_load_in(ksched *s, uint32_t tenant, uint32_t context, const char *ptx,
                          size_t len, uint32_t *module, ksched_err *err)
{
    return module_load(s, tenant, context, ptx, len, 0, module, err);
}

int ksched_module_load_cubin(ksched *s, uint32_t tenant, const void *image, size_t len,
                             uint32_t *module, ksched_err *err)
{
    return module_load(s, tenant, 0, image, len, 1, module, err);
}

/* The tenant's module (called with the lock held): *t and the module, or NULL with *rc set
 * to KSCHED_ENOTFOUND (err says which is missing). */
static sched_module *module_of(ksched *s, uint32_t tenant, uint32_t module, sched_tenant **t,
                               int *rc, ksched_err *err)
{
    sched_module *m = (*t = sched_tenant_find(s, tenant, err)) ? idmap_get(&(*t)->modules, module)
                                                               : NULL;
    *rc = !*t ? KSCHED_ENOTFOUND
          : !m ? ksched_fail(err, KSCHED_ENOTFOUND, "no module %u", module)
          : 0;
    return m;
}

int ksched_module_charge(ksched *s, uint32_t tenant, uint32_t module, uint64_t bytes,
                         ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t;
    int rc;
    sched_module *m = module_of(s, tenant, module, &t, &rc, err);
    if (!rc && m->charged)
        rc = ksched_fail(err, KSCHED_ESTATE, "module %u is charged", module);
    if (!rc)
        rc = sched_quota_check(t, bytes, "module variables", err);
    if (!rc) {
        m->charged = bytes;
        t->st.mem_in_use += bytes;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

typedef struct {
    const sched_module *m;
    const char *entry;
    sched_function *found;
    uint32_t ids[64];
    unsigned n_ids;
} fn_search;

static void find_fn(uint32_t id, void *val, void *user)
{
    fn_search *q = user;
    sched_function *f = val;
    if (f->module != q->m)
        return;
    if (q->entry && !strcmp(f->entry, q->entry))
        q->found = f;
    if (!q->entry && q->n_ids < 64)
        q->ids[q->n_ids++] = id;
}

int ksched_module_unload(ksched *s, uint32_t tenant, uint32_t module, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t;
    int rc;
    sched_module *m = module_of(s, tenant, module, &t, &rc, err);
    if (!rc && m->users)
        rc = ksched_fail(err, KSCHED_ESTATE, "module %u has %u launches queued", module,
                         m->users);
    if (!rc) {
        fn_search q = {.m = m};
        do {        /* drop its functions, 64 at a time */
            q.n_ids = 0;
            idmap_each(&t->functions, find_fn, &q);
            for (unsigned i = 0; i < q.n_ids; i++) {
                free(idmap_get(&t->functions, q.ids[i]));
                idmap_del(&t->functions, q.ids[i]);
            }
        } while (q.n_ids == 64);
        kbackend_error e = {0};
        if (m->mod && s->be.ops->module_unload(s->be.state, m->mod, &e))
            rc = sched_backend_fail(err, &e, "module_unload");
        sched_globals_drop(t, module);
        t->st.mem_in_use -= m->charged;
        idmap_del(&t->modules, module);
        sched_domain_put(s, t, m->domain);     /* a closed context's last module */
        free(m);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Looks up entry and entry__kslice in the backend. A module without code has neither:
 * the function is a name whose launches check_launch refuses. */
static int resolve(ksched *s, sched_function *f, const char *entry, ksched_err *err)
{
    kbackend_error e = {0};
    const kbackend_ops *o = s->be.ops;
    if (!f->module->mod)
        return 0;
    if (o->function_get(s->be.state, f->module->mod, entry, &f->fn, &f->attrs, &e))
        return e.code == KBACKEND_ENOTFOUND
                   ? ksched_fail(err, KSCHED_ENOTFOUND, "%s", e.msg)
                   : sched_backend_fail(err, &e, "function_get");
    char sliced[KSCHED_ENTRY_MAX + sizeof(KBACKEND_SLICE_SUFFIX)];
    snprintf(sliced, sizeof(sliced), "%s%s", entry, KBACKEND_SLICE_SUFFIX);
    e = (kbackend_error){0};
    if (o->function_get(s->be.state, f->module->mod, sliced, &f->sliced, NULL, &e)) {
        f->sliced = NULL;
        if (e.code != KBACKEND_ENOTFOUND)
            return sched_backend_fail(err, &e, "function_get (sliced variant)");
    }
    return 0;
}

static void fill_info(const sched_function *f, ksched_function_info *info)
{
    if (info)
        *info = (ksched_function_info){.sliceable = f->sliced != NULL, .no_code = !f->fn,
                                       .module_hash = f->module->hash, .attrs = f->attrs};
}

int ksched_function_get(ksched *s, uint32_t tenant, uint32_t module, const char *entry,
                        uint32_t *function, ksched_function_info *info, ksched_err *err)
{
    if (!s || !function)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    int rc = ksched_entry_validate(entry, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t;
    sched_module *m = module_of(s, tenant, module, &t, &rc, err);
    fn_search q = {.m = m, .entry = entry};
    if (!rc)
        idmap_each(&t->functions, find_fn, &q);
    if (!rc && q.found) {
        *function = q.found->id;
        fill_info(q.found, info);
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    sched_function *f = rc ? NULL : calloc(1, sizeof(*f));
    if (!rc && !f)
        rc = ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    if (!rc) {
        f->module = m;
        strcpy(f->entry, entry);
        rc = resolve(s, f, entry, err);
    }
    if (!rc) {
        f->id = t->next_function++;
        if (idmap_put(&t->functions, f->id, f))
            rc = ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    }
    if (rc) {
        free(f);
    } else {
        *function = f->id;
        fill_info(f, info);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_global_get(ksched *s, uint32_t tenant, uint32_t module, const char *name,
                      kbackend_devptr *addr, uint64_t *bytes, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    ksched_err e = {0};
    if (ksched_entry_validate(name, &e))
        return ksched_fail(err, KSCHED_EINVAL, "variable name: %s", e.msg);
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    sched_module *m = t ? idmap_get(&t->modules, module) : NULL;
    int rc = !t ? KSCHED_ENOTFOUND
             : t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u is being removed", tenant)
             : !m ? ksched_fail(err, KSCHED_ENOTFOUND, "no module %u", module)
             : sched_refuse_if_lost(s, err) ? KSCHED_ELOST
             : !s->be.ops->global_get || !m->mod
                 ? ksched_fail(err, KSCHED_EUNSUPPORTED, "backend %s has no module variables%s",
                               s->be.ops->name ? s->be.ops->name : "?",
                               m->mod ? "" : " for a cubin")
             : 0;
    kbackend_devptr p = 0;
    uint64_t n = 0;
    kbackend_error be = {0};
    if (!rc && s->be.ops->global_get(s->be.state, m->mod, name, &p, &n, &be))
        rc = be.code == KBACKEND_ENOTFOUND ? ksched_fail(err, KSCHED_ENOTFOUND, "%s", be.msg)
                                        : sched_backend_fail_s(s, err, &be, "global_get");
    if (!rc)
        rc = sched_global_register(s, t, module, p, n, err);
    if (!rc && addr)
        *addr = p;
    if (!rc && bytes)
        *bytes = n;
    pthread_mutex_unlock(&s->lock);
    return rc;
}
