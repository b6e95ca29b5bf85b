/* Device memory of tenants: allocation against the quota, ownership checks, free. */
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

static int insert_alloc(sched_tenant *t, kexec_devptr ptr, uint64_t bytes)
{
    if (grow_array(&t->allocs, &t->cap_allocs, t->n_allocs + 1, sizeof(*t->allocs)))
        return -1;
    size_t i = upper(t, ptr);
    memmove(&t->allocs[i + 1], &t->allocs[i], (t->n_allocs - i) * sizeof(*t->allocs));
    t->allocs[i] = (sched_alloc){.ptr = ptr, .bytes = bytes};
    t->n_allocs++;
    return 0;
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
             : 0;
    if (!rc && t->pol.mem_quota &&
        (bytes > t->pol.mem_quota || t->st.mem_in_use > t->pol.mem_quota - bytes))
        rc = ksched_fail(err, KSCHED_EQUOTA, "tenant %u: %llu bytes in use, %llu asked, quota "
                         "%llu", tenant, (unsigned long long)t->st.mem_in_use,
                         (unsigned long long)bytes, (unsigned long long)t->pol.mem_quota);
    kexec_devptr ptr = 0;
    kexec_error e = {0};
    if (!rc && s->be.ops->mem_alloc(s->be.state, bytes, &ptr, &e))
        rc = sched_backend_fail(err, &e, "mem_alloc");
    if (!rc && insert_alloc(t, ptr, bytes)) {
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
    if (!rc && (!i || t->allocs[i - 1].ptr != ptr))
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
