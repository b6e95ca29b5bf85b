/* Device memory of tenants: allocation against the quota, ownership checks, free; module
 * variables that tenants looked up, as memory of theirs while the module is loaded. */
#include "sched_internal.h"

int sched_tenant_owns(const sched_tenant *t, kbackend_devptr ptr, uint64_t bytes)
{
    const sched_alloc *a = krange_find(&t->allocs, ptr, bytes);
    return a && a->module != SCHED_ALLOC_FREEING;
}

static int insert_alloc(sched_tenant *t, kbackend_devptr ptr, uint64_t bytes, uint32_t module,
                        sched_domain *domain)
{
    sched_alloc *a = krange_insert(&t->allocs, ptr, bytes);
    if (!a)
        return -1;
    a->module = module;
    a->domain = domain;
    return 0;
}

/* Whether t already has the variable [ptr, +bytes) of module (looked up before): the
 * entries starting at ptr are the last ones at or before it. */
static int registered(const sched_tenant *t, uint32_t module, kbackend_devptr ptr, uint64_t bytes)
{
    for (size_t i = krange_upper(&t->allocs, ptr); i; i--) {
        const sched_alloc *a = krange_at(&t->allocs, i - 1);
        if (a->r.base != ptr)
            break;
        if (a->module == module && a->r.size == bytes)
            return 1;
    }
    return 0;
}

int sched_global_register(ksched *s, sched_tenant *t, uint32_t module, kbackend_devptr ptr,
                          uint64_t bytes, ksched_err *err)
{
    if (!ptr || !bytes || ptr + bytes < ptr)
        return ksched_fail(err, KSCHED_EBACKEND, "the backend gave the invalid range "
                           "[0x%llx, +%llu)", (unsigned long long)ptr,
                           (unsigned long long)bytes);
    if (registered(t, module, ptr, bytes))
        return 0;
    /* The ranges of a tenant do not overlap one another (a variable seen through two
     * modules is the same range twice), so the table finds any overlap. */
    for (const sched_tenant *o = s->tenants; o; o = o->next) {
        const sched_alloc *a = krange_overlap(&o->allocs, ptr, bytes);
        /* the one overlap allowed: the same variable through another module of t */
        if (a && (o != t || !a->module || a->r.base != ptr || a->r.size != bytes))
            return ksched_fail(err, KSCHED_EBACKEND, "module variable [0x%llx, +%llu) "
                               "overlaps memory of tenant %u (does the backend share a "
                               "module's variables between loads?)", (unsigned long long)ptr,
                               (unsigned long long)bytes, o->id);
    }
    return insert_alloc(t, ptr, bytes, module, NULL)
               ? ksched_fail(err, KSCHED_ENOMEM, "out of memory") : 0;
}

static int of_module(const void *entry, void *module)
{
    return ((const sched_alloc *)entry)->module == *(const uint32_t *)module;
}

void sched_globals_drop(sched_tenant *t, uint32_t module)
{
    krange_remove_if(&t->allocs, of_module, &module);
}

int sched_quota_check(const sched_tenant *t, uint64_t bytes, const char *what, ksched_err *err)
{
    const uint64_t quota = t->pol.mem_quota;

    if (!quota || (bytes <= quota && t->st.mem_in_use <= quota - bytes))
        return 0;
    return ksched_fail(err, KSCHED_EQUOTA, "tenant %u: %llu bytes in use, %llu more for %s, "
                       "quota %llu", t->id, (unsigned long long)t->st.mem_in_use,
                       (unsigned long long)bytes, what, (unsigned long long)quota);
}

/* A memory call of t's into the backend (an allocation or a free, which on the cuda
 * backend map and unmap memory and the window's sink, and zero it: milliseconds and more
 * for GiBs). Where the backend allows it (kbackend_device_info.mem_unlocked), the lock is
 * released meanwhile and t paused (sched_unlocked_begin): none of its work starts, which
 * is what lets the cuda backend reuse a hole of the window's reach when none of t's
 * kernels is on the device. mem_call_end retakes the lock. */
static void mem_call_begin(ksched *s, sched_tenant *t)
{
    if (s->dev.mem_unlocked)
        sched_unlocked_begin(s, t);
}

static void mem_call_end(ksched *s, sched_tenant *t)
{
    if (s->dev.mem_unlocked)
        sched_unlocked_end(s, t);
}

/* The bytes are charged to the quota before the backend is called (so that two allocations
 * racing near the quota cannot both pass) and given back when it fails. A tenant removed,
 * or a device lost, while the backend allocated: the memory stays in the tenant's table,
 * to go with the tenant, and the call fails. */
int ksched_mem_alloc(ksched *s, uint32_t tenant, uint64_t bytes, kbackend_devptr *out,
                     ksched_err *err)
{
    return ksched_mem_alloc_in(s, tenant, 0, bytes, out, err);
}

/* The allocation holds its context's domain (the window it lies in) until it is freed. */
int ksched_mem_alloc_in(ksched *s, uint32_t tenant, uint32_t context, uint64_t bytes,
                        kbackend_devptr *out, ksched_err *err)
{
    if (!s || !out || !bytes)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument or 0 bytes");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    sched_domain *d = NULL;
    int rc = !t ? KSCHED_ENOTFOUND
             : t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u is being removed", tenant)
             : sched_refuse_if_lost(s, err);
    if (!rc)
        rc = sched_quota_check(t, bytes, "an allocation", err);
    if (!rc)
        rc = sched_domain_of(s, t, context, &d, err);
    if (rc) {
        pthread_mutex_unlock(&s->lock);
        return rc;
    }
    t->st.mem_in_use += bytes;
    sched_domain_hold(d);
    kbackend_devptr ptr = 0;
    kbackend_error e = {0};
    mem_call_begin(s, t);
    int brc = s->be.ops->mem_alloc(s->be.state, d->id, bytes, &ptr, &e);
    mem_call_end(s, t);
    int kept = 0;
    if (brc) {
        rc = sched_backend_fail_s(s, err, &e, "mem_alloc");
    } else if (insert_alloc(t, ptr, bytes, 0, d)) {
        s->be.ops->mem_free(s->be.state, ptr, &e);
        rc = ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    } else {
        kept = 1;
        rc = t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u was removed during the "
                                       "allocation", tenant)
                         : sched_refuse_if_lost(s, err);
    }
    if (!kept) {
        t->st.mem_in_use -= bytes;
        sched_domain_put(s, t, d);
    } else if (!rc)
        *out = ptr;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_mem_free(ksched *s, uint32_t tenant, kbackend_devptr ptr, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    int rc = t ? 0 : KSCHED_ENOTFOUND;
    sched_alloc *a = t ? krange_exact(&t->allocs, ptr) : NULL;
    if (!rc && (!a || a->module))
        rc = ksched_fail(err, KSCHED_EINVAL, "0x%llx is not an allocation of tenant %u",
                         (unsigned long long)ptr, tenant);
    if (rc) {
        pthread_mutex_unlock(&s->lock);
        return rc;
    }
    uint64_t bytes = a->r.size;
    a->module = SCHED_ALLOC_FREEING;    /* a's place in the table may move meanwhile */
    kbackend_error e = {0};
    mem_call_begin(s, t);
    int brc = s->be.ops->mem_free(s->be.state, ptr, &e);
    mem_call_end(s, t);
    a = krange_exact(&t->allocs, ptr);     /* still there: nothing else removes it */
    if (brc) {
        a->module = 0;
        rc = sched_backend_fail(err, &e, "mem_free");
    } else {
        sched_domain *d = a->domain;
        t->st.mem_in_use -= bytes;
        krange_remove(&t->allocs, a);
        sched_domain_put(s, t, d);     /* a closed context's last allocation */
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_tenant_window(ksched *s, uint32_t tenant, kbackend_window *out, ksched_err *err)
{
    return ksched_context_window(s, tenant, 0, out, err);
}

int ksched_context_window(ksched *s, uint32_t tenant, uint32_t context, kbackend_window *out,
                          ksched_err *err)
{
    if (!s || !out)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    if (!s->be.ops->domain_window)
        return ksched_fail(err, KSCHED_EUNSUPPORTED, "backend %s has no address windows",
                           s->be.ops->name);
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    kbackend_error e = {0};
    sched_domain *d = NULL;
    int rc = !t ? KSCHED_ENOTFOUND : sched_refuse_if_lost(s, err);
    if (!rc)
        rc = sched_domain_of(s, t, context, &d, err);
    if (!rc && s->be.ops->domain_window(s->be.state, d->id, out, &e))
        rc = sched_backend_fail_s(s, err, &e, "domain_window");
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* The backend, read under the lock (it is set when the scheduler is made; after a lost
 * device the daemon makes a new scheduler rather than swap it). */
static kbackend current_backend(ksched *s)
{
    pthread_mutex_lock(&s->lock);
    kbackend be = s->be;
    pthread_mutex_unlock(&s->lock);
    return be;
}

/* Without the scheduler's lock while the backend pins (which takes time in proportion to
 * the bytes). */
int ksched_host_register(ksched *s, void *base, uint64_t bytes, kbackend_devptr *device,
                         ksched_err *err)
{
    if (!s || !base || !bytes)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument or 0 bytes");
    pthread_mutex_lock(&s->lock);
    kbackend be = s->be;
    int rc = sched_refuse_if_lost(s, err);
    pthread_mutex_unlock(&s->lock);
    if (rc)
        return rc;
    if (!be.ops->host_register)
        return ksched_fail(err, KSCHED_EUNSUPPORTED, "backend %s cannot map host memory",
                           be.ops->name);
    kbackend_error e = {0};
    if (be.ops->host_register(be.state, base, bytes, device, &e)) {
        pthread_mutex_lock(&s->lock);
        rc = sched_backend_fail_s(s, err, &e, "host_register");
        pthread_mutex_unlock(&s->lock);
    }
    return rc;
}

void ksched_host_unregister(ksched *s, void *base)
{
    if (!s || !base)
        return;
    kbackend be = current_backend(s);
    if (be.ops->host_unregister)
        be.ops->host_unregister(be.state, base);
}

int ksched_host_adopt(ksched *s, uint32_t tenant, kbackend_devptr device, uint64_t bytes,
                      ksched_err *err)
{
    if (!s || !device || !bytes || device + bytes < device)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument or invalid range");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    int rc = t ? 0 : KSCHED_ENOTFOUND;
    if (!rc && krange_overlap(&t->allocs, device, bytes))
        rc = ksched_fail(err, KSCHED_EINVAL, "host memory at [0x%llx, +%llu) overlaps memory "
                         "of tenant %u", (unsigned long long)device,
                         (unsigned long long)bytes, tenant);
    if (!rc && insert_alloc(t, device, bytes, SCHED_ALLOC_HOST, NULL))
        rc = ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void ksched_host_disown(ksched *s, uint32_t tenant, kbackend_devptr device)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, NULL);
    sched_alloc *a = t ? krange_exact(&t->allocs, device) : NULL;
    if (a && a->module == SCHED_ALLOC_HOST)
        krange_remove(&t->allocs, a);
    pthread_mutex_unlock(&s->lock);
}

int ksched_tensor_map_encode(ksched *s, const struct kernelet_tensor_map *m, uint8_t *out,
                             ksched_err *err)
{
    if (!s || !m || !out)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    kbackend be = current_backend(s);
    if (!be.ops->tensor_map_encode)
        return ksched_fail(err, KSCHED_EUNSUPPORTED, "backend %s cannot encode tensor maps",
                           be.ops->name);
    kbackend_error e = {0};
    int brc = be.ops->tensor_map_encode(be.state, m, out, &e);
    if (brc == KBACKEND_EINVAL)     /* the driver refused the values: CUDA's INVALID_VALUE */
        return ksched_fail(err, KSCHED_EINVAL, "tensor map: %s", e.msg);
    if (brc) {
        pthread_mutex_lock(&s->lock);
        int rc = sched_backend_fail_s(s, err, &e, "tensor_map_encode");
        pthread_mutex_unlock(&s->lock);
        return rc;
    }
    return 0;
}

bool ksched_host_mappable(ksched *s)
{
    return current_backend(s).ops->host_register != NULL;
}

bool ksched_runs_cubins(ksched *s)
{
    return current_backend(s).ops->module_load_cubin != NULL;
}

bool ksched_has_vmm(ksched *s)
{
    return current_backend(s).ops->vmm_reserve != NULL;
}
