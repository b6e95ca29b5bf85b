/* Virtual memory management of tenants (ksched_vmm_*): reservations of device addresses
 * (owned like allocations: the tenant's copies and memsets may name them), physical memory
 * charged to the tenant's quota, and mappings of it into its reservations. Everything is
 * undone when the tenant goes (sched_vmm_release_all). */
#include <stdlib.h>

#include "sched_internal.h"

/* The reservation of t that holds [va, va + bytes), or NULL. */
static sched_alloc *reservation_of(sched_tenant *t, kbackend_devptr va, uint64_t bytes)
{
    sched_alloc *a = krange_find(&t->allocs, va, bytes);
    return a && a->module == SCHED_ALLOC_RESERVED ? a : NULL;
}

static sched_vmm_handle *handle_of(sched_tenant *t, uint32_t id)
{
    for (size_t i = 0; i < t->n_vmm_handles; i++)
        if (t->vmm_handles[i].id == id)
            return &t->vmm_handles[i];
    return NULL;
}

static bool granular(uint64_t v)
{
    return v % KBACKEND_VMM_GRANULE == 0;
}

/* The tenant, with the lock held and the backend able to do VMM; NULL and *rc otherwise. */
static sched_tenant *vmm_tenant(ksched *s, uint32_t tenant, int *rc, ksched_err *err)
{
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    *rc = !t ? KSCHED_ENOTFOUND
          : t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u is being removed", tenant)
          : !s->be.ops->vmm_reserve ? ksched_fail(err, KSCHED_EUNSUPPORTED, "backend %s has no "
                                                  "virtual memory management", s->be.ops->name)
          : sched_refuse_if_lost(s, err);
    return *rc ? NULL : t;
}

/* Addresses a tenant may hold reserved: reservations cost the device (and the emulator's
 * host) address space, not memory, and a tenant must not use it up for the others. */
static uint64_t reserve_limit(const ksched *s)
{
    uint64_t mem = s->dev.total_mem ? s->dev.total_mem : (80ull << 30);
    return 4 * mem;
}

int ksched_vmm_reserve(ksched *s, uint32_t tenant, uint64_t bytes, uint64_t align,
                       kbackend_devptr *va, ksched_err *err)
{
    if (!s || !va || !bytes || !granular(bytes) || (align & (align - 1)))
        return ksched_fail(err, KSCHED_EINVAL, "a reservation of %llu bytes aligned to %llu",
                           (unsigned long long)bytes, (unsigned long long)align);
    int rc;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = vmm_tenant(s, tenant, &rc, err);
    if (t && (bytes > reserve_limit(s) || t->vmm_reserved > reserve_limit(s) - bytes))
        rc = ksched_fail(err, KSCHED_ENOMEM, "tenant %u: %llu bytes reserved, %llu more exceed "
                         "four times the device's memory", tenant,
                         (unsigned long long)t->vmm_reserved, (unsigned long long)bytes);
    kbackend_error e = {0};
    kbackend_devptr p = 0;
    if (t && s->be.ops->vmm_reserve(s->be.state, bytes, align, &p, &e))
        rc = sched_backend_fail_s(s, err, &e, "vmm_reserve");
    sched_alloc *a = NULL;
    if (!rc && !(a = krange_insert(&t->allocs, p, bytes))) {
        s->be.ops->vmm_free(s->be.state, p, bytes);
        rc = ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    }
    if (!rc) {
        a->module = SCHED_ALLOC_RESERVED;
        t->vmm_reserved += bytes;
        *va = p;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_vmm_free(ksched *s, uint32_t tenant, kbackend_devptr va, ksched_err *err)
{
    int rc;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = vmm_tenant(s, tenant, &rc, err);
    sched_alloc *a = t ? krange_exact(&t->allocs, va) : NULL;
    if (t && (!a || a->module != SCHED_ALLOC_RESERVED))
        rc = ksched_fail(err, KSCHED_EINVAL, "0x%llx is not a reservation of tenant %u",
                         (unsigned long long)va, tenant);
    for (size_t i = 0; !rc && i < t->n_vmm_maps; i++)
        if (t->vmm_maps[i].va - a->r.base < a->r.size)
            rc = ksched_fail(err, KSCHED_ESTATE, "the reservation at 0x%llx is still mapped",
                             (unsigned long long)va);
    if (!rc) {
        s->be.ops->vmm_free(s->be.state, a->r.base, a->r.size);
        t->vmm_reserved -= a->r.size;
        krange_remove(&t->allocs, a);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_vmm_create(ksched *s, uint32_t tenant, uint64_t bytes, uint32_t *handle,
                      ksched_err *err)
{
    if (!s || !handle || !bytes || !granular(bytes))
        return ksched_fail(err, KSCHED_EINVAL, "physical memory of %llu bytes",
                           (unsigned long long)bytes);
    int rc;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = vmm_tenant(s, tenant, &rc, err);
    if (!rc)
        rc = sched_quota_check(t, bytes, "virtual memory", err);
    sched_vmm_handle *grown = NULL;
    if (!rc && !(grown = realloc(t->vmm_handles, (t->n_vmm_handles + 1) * sizeof(*grown))))
        rc = ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    kbackend_error e = {0};
    uint64_t h = 0;
    if (!rc) {
        t->vmm_handles = grown;
        if (s->be.ops->vmm_create(s->be.state, bytes, &h, &e))
            rc = sched_backend_fail_s(s, err, &e, "vmm_create");
    }
    if (!rc) {
        *handle = ++t->next_vmm_handle;
        t->vmm_handles[t->n_vmm_handles++] = (sched_vmm_handle){.id = *handle, .backend = h,
                                                                .bytes = bytes};
        t->st.mem_in_use += bytes;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Gives h's memory back once it is released and no longer mapped. */
static void handle_settle(ksched *s, sched_tenant *t, sched_vmm_handle *h)
{
    if (!h->released || h->maps)
        return;
    s->be.ops->vmm_release(s->be.state, h->backend);
    t->st.mem_in_use -= h->bytes;
    *h = t->vmm_handles[--t->n_vmm_handles];
}

int ksched_vmm_release(ksched *s, uint32_t tenant, uint32_t handle, ksched_err *err)
{
    int rc;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = vmm_tenant(s, tenant, &rc, err);
    sched_vmm_handle *h = t ? handle_of(t, handle) : NULL;
    if (t && (!h || h->released))
        rc = ksched_fail(err, KSCHED_EINVAL, "no memory handle %u", handle);
    if (!rc) {
        h->released = true;     /* as in CUDA: its mappings keep it until they go */
        handle_settle(s, t, h);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static bool overlaps_mapping(const sched_tenant *t, kbackend_devptr va, uint64_t bytes)
{
    for (size_t i = 0; i < t->n_vmm_maps; i++)
        if (va < t->vmm_maps[i].va + t->vmm_maps[i].bytes && t->vmm_maps[i].va < va + bytes)
            return true;
    return false;
}

int ksched_vmm_map(ksched *s, uint32_t tenant, kbackend_devptr va, uint64_t bytes,
                   uint32_t handle, uint64_t offset, ksched_err *err)
{
    if (!s || !bytes || !granular(va) || !granular(bytes) || !granular(offset))
        return ksched_fail(err, KSCHED_EINVAL, "a mapping of %llu bytes at 0x%llx",
                           (unsigned long long)bytes, (unsigned long long)va);
    int rc;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = vmm_tenant(s, tenant, &rc, err);
    sched_vmm_handle *h = t ? handle_of(t, handle) : NULL;
    if (t && (!h || h->released || offset > h->bytes || bytes > h->bytes - offset))
        rc = ksched_fail(err, KSCHED_EINVAL, "memory handle %u has no %llu bytes at %llu",
                         handle, (unsigned long long)bytes, (unsigned long long)offset);
    else if (t && (!reservation_of(t, va, bytes) || overlaps_mapping(t, va, bytes)))
        rc = ksched_fail(err, KSCHED_EINVAL, "[0x%llx, +%llu) is not a free part of a "
                         "reservation", (unsigned long long)va, (unsigned long long)bytes);
    sched_vmm_map *grown = NULL;
    if (!rc && !(grown = realloc(t->vmm_maps, (t->n_vmm_maps + 1) * sizeof(*grown))))
        rc = ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    kbackend_error e = {0};
    if (!rc) {
        t->vmm_maps = grown;
        if (s->be.ops->vmm_map(s->be.state, va, bytes, h->backend, offset, &e))
            rc = sched_backend_fail_s(s, err, &e, "vmm_map");
    }
    if (!rc) {
        t->vmm_maps[t->n_vmm_maps++] = (sched_vmm_map){.va = va, .bytes = bytes,
                                                       .handle = handle};
        h->maps++;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Undoes mapping i of t. */
static void unmap_at(ksched *s, sched_tenant *t, size_t i)
{
    sched_vmm_map m = t->vmm_maps[i];
    s->be.ops->vmm_unmap(s->be.state, m.va, m.bytes);
    t->vmm_maps[i] = t->vmm_maps[--t->n_vmm_maps];
    sched_vmm_handle *h = handle_of(t, m.handle);
    if (h) {
        h->maps--;
        handle_settle(s, t, h);
    }
}

int ksched_vmm_unmap(ksched *s, uint32_t tenant, kbackend_devptr va, uint64_t bytes,
                     ksched_err *err)
{
    int rc;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = vmm_tenant(s, tenant, &rc, err);
    /* every mapping the range touches must lie inside it: no mapping is cut in two */
    size_t found = 0;
    for (size_t i = 0; !rc && i < t->n_vmm_maps; i++) {
        const sched_vmm_map *m = &t->vmm_maps[i];
        if (!(va < m->va + m->bytes && m->va < va + bytes))
            continue;
        if (m->va < va || m->va + m->bytes > va + bytes)
            rc = ksched_fail(err, KSCHED_EINVAL, "[0x%llx, +%llu) cuts a mapping",
                             (unsigned long long)va, (unsigned long long)bytes);
        found++;
    }
    if (!rc && !found)
        rc = ksched_fail(err, KSCHED_EINVAL, "nothing is mapped at 0x%llx",
                         (unsigned long long)va);
    for (size_t i = 0; !rc && i < t->n_vmm_maps;) {
        const sched_vmm_map *m = &t->vmm_maps[i];
        if (va < m->va + m->bytes && m->va < va + bytes)
            unmap_at(s, t, i);
        else
            i++;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void sched_vmm_release_all(ksched *s, sched_tenant *t)
{
    while (t->n_vmm_maps)
        unmap_at(s, t, t->n_vmm_maps - 1);
    for (size_t i = 0; i < t->n_vmm_handles; i++) {
        s->be.ops->vmm_release(s->be.state, t->vmm_handles[i].backend);
        t->st.mem_in_use -= t->vmm_handles[i].bytes;
    }
    free(t->vmm_handles);
    free(t->vmm_maps);
    t->vmm_handles = NULL;
    t->vmm_maps = NULL;
    t->n_vmm_handles = 0;
    for (size_t i = 0; i < krange_count(&t->allocs); i++) {
        const sched_alloc *a = krange_at(&t->allocs, i);
        if (a->module == SCHED_ALLOC_RESERVED)
            s->be.ops->vmm_free(s->be.state, a->r.base, a->r.size);
    }
}
