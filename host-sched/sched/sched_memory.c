/* Device memory of tenants: allocation against the quota, ownership checks, free; module
 * variables that tenants looked up, as memory of theirs while the module is loaded. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sched_internal.h"

/* Index of the first allocation of t starting above ptr. */
static size_t upper(const sched_tenant *t, kexec_devptr ptr)
{
    size_t lo = 0, hi = t->n_allocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->allocs[mid].ptr <= ptr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int sched_tenant_owns(const sched_tenant *t, kexec_devptr ptr, uint64_t bytes)
{
    size_t i = upper(t, ptr);
    if (!i)
        return 0;
    const sched_alloc *a = &t->allocs[i - 1];
    uint64_t off = ptr - a->ptr;
    return off < a->bytes && bytes <= a->bytes - off;
}

static int insert_alloc(sched_tenant *t, kexec_devptr ptr, uint64_t bytes, uint32_t module)
{
    if (grow_array(&t->allocs, &t->cap_allocs, t->n_allocs + 1, sizeof(*t->allocs)))
        return -1;
    size_t i = upper(t, ptr);
    memmove(&t->allocs[i + 1], &t->allocs[i], (t->n_allocs - i) * sizeof(*t->allocs));
    t->allocs[i] = (sched_alloc){.ptr = ptr, .bytes = bytes, .module = module};
    t->n_allocs++;
    return 0;
}

/* The range of t that overlaps [ptr, ptr + bytes), or NULL. The ranges of a tenant do not
 * overlap one another (a variable seen through two modules is the same range twice), so
 * only the last one starting within the range can. */
static const sched_alloc *overlap(const sched_tenant *t, kexec_devptr ptr, uint64_t bytes)
{
    size_t i = upper(t, ptr + bytes - 1);
    return i && t->allocs[i - 1].ptr + t->allocs[i - 1].bytes > ptr ? &t->allocs[i - 1] : NULL;
}

/* Whether t already has the variable [ptr, +bytes) of module (looked up before). */
static int registered(const sched_tenant *t, uint32_t module, kexec_devptr ptr, uint64_t bytes)
{
    for (size_t i = upper(t, ptr); i && t->allocs[i - 1].ptr == ptr; i--)
        if (t->allocs[i - 1].module == module && t->allocs[i - 1].bytes == bytes)
            return 1;
    return 0;
}

int sched_global_register(ksched *s, sched_tenant *t, uint32_t module, kexec_devptr ptr,
                          uint64_t bytes, ksched_err *err)
{
    if (!ptr || !bytes || ptr + bytes < ptr)
        return ksched_fail(err, KSCHED_EBACKEND, "the backend gave the invalid range "
                           "[0x%llx, +%llu)", (unsigned long long)ptr,
                           (unsigned long long)bytes);
    if (registered(t, module, ptr, bytes))
        return 0;
    for (const sched_tenant *o = s->tenants; o; o = o->next) {
        const sched_alloc *a = overlap(o, ptr, bytes);
        /* the one overlap allowed: the same variable through another module of t */
        if (a && (o != t || !a->module || a->ptr != ptr || a->bytes != bytes))
            return ksched_fail(err, KSCHED_EBACKEND, "module variable [0x%llx, +%llu) "
                               "overlaps memory of tenant %u (does the backend share a "
                               "module's variables between loads?)", (unsigned long long)ptr,
                               (unsigned long long)bytes, o->id);
    }
    return insert_alloc(t, ptr, bytes, module)
               ? ksched_fail(err, KSCHED_ENOMEM, "out of memory") : 0;
}

void sched_globals_drop(sched_tenant *t, uint32_t module)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n_allocs; i++)
        if (t->allocs[i].module != module)
            t->allocs[k++] = t->allocs[i];
    t->n_allocs = k;
}

int ksched_mem_alloc(ksched *s, uint32_t tenant, uint64_t bytes, kexec_devptr *out,
                     ksched_err *err)
{
    if (!s || !out || !bytes)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument or 0 bytes");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    int rc = !t ? KSCHED_ENOTFOUND
             : t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u is being removed", tenant)
             : sched_refuse_if_lost(s, err);
    if (!rc && t->pol.mem_quota &&
        (bytes > t->pol.mem_quota || t->st.mem_in_use > t->pol.mem_quota - bytes))
        rc = ksched_fail(err, KSCHED_EQUOTA, "tenant %u: %llu bytes in use, %llu asked, quota "
                         "%llu", tenant, (unsigned long long)t->st.mem_in_use,
                         (unsigned long long)bytes, (unsigned long long)t->pol.mem_quota);
    kexec_devptr ptr = 0;
    kexec_error e = {0};
    if (!rc && s->be.ops->mem_alloc(s->be.state, bytes, &ptr, &e))
        rc = sched_backend_fail_s(s, err, &e, "mem_alloc");
    if (!rc && insert_alloc(t, ptr, bytes, 0)) {
        s->be.ops->mem_free(s->be.state, ptr, &e);
        rc = ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    }
    if (!rc) {
        t->st.mem_in_use += bytes;
        *out = ptr;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_mem_free(ksched *s, uint32_t tenant, kexec_devptr ptr, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    int rc = t ? 0 : KSCHED_ENOTFOUND;
    size_t i = t ? upper(t, ptr) : 0;
    if (!rc && (!i || t->allocs[i - 1].ptr != ptr || t->allocs[i - 1].module))
        rc = ksched_fail(err, KSCHED_EINVAL, "0x%llx is not an allocation of tenant %u",
                         (unsigned long long)ptr, tenant);
    kexec_error e = {0};
    if (!rc && s->be.ops->mem_free(s->be.state, ptr, &e))
        rc = sched_backend_fail(err, &e, "mem_free");
    if (!rc) {
        t->st.mem_in_use -= t->allocs[i - 1].bytes;
        memmove(&t->allocs[i - 1], &t->allocs[i], (t->n_allocs - i) * sizeof(*t->allocs));
        t->n_allocs--;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}
