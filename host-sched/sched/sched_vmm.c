/* Virtual memory management of tenants (ksched_vmm_*): reservations of device addresses
 * (owned like allocations: the tenant's copies and memsets may name them), physical memory
 * charged to the tenant's quota, and mappings of it into its reservations. Everything is
 * undone when the tenant goes (sched_vmm_release_all).
 *
 * Creating memory (the cuda backend clears it), mapping, unmapping and releasing it take time in
 * proportion to the bytes: where the backend allows it (kbackend_device_info.vmm_unlocked)
 * they run without the lock, the tenant paused as for an allocation (sched_unlocked_begin:
 * none of its work starts, and it is not released meanwhile). What the call works on is
 * marked first (a mapping busy, a handle's mapping counted), so that the tenant's other
 * calls leave it alone; tables may move meanwhile, so entries are found again after. */
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

/* The backend's VMM call of t's begins and ends: the lock released meanwhile where the
 * backend allows it. */
static void vmm_call_begin(ksched *s, sched_tenant *t)
{
    if (s->dev.vmm_unlocked)
        sched_unlocked_begin(s, t);
}

static void vmm_call_end(ksched *s, sched_tenant *t)
{
    if (s->dev.vmm_unlocked)
        sched_unlocked_end(s, t);
}

/* A tenant removed, or a device lost, while the backend worked without the lock. */
static int vmm_still(ksched *s, sched_tenant *t, ksched_err *err)
{
    return t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u was removed during the "
                                     "call", t->id)
                       : sched_refuse_if_lost(s, err);
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
        a->domain = NULL;           /* reservations are in no window (unfenced only) */
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

/* h, created in the backend, as t's new handle *handle; KSCHED_ENOMEM (h released) when
 * the table cannot grow. */
static int handle_add(ksched *s, sched_tenant *t, uint64_t h, uint64_t bytes, uint32_t *handle,
                      ksched_err *err)
{
    sched_vmm_handle *grown = realloc(t->vmm_handles, (t->n_vmm_handles + 1) * sizeof(*grown));
    if (!grown) {
        s->be.ops->vmm_release(s->be.state, h);
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    }
    t->vmm_handles = grown;
    *handle = ++t->next_vmm_handle;
    t->vmm_handles[t->n_vmm_handles++] = (sched_vmm_handle){.id = *handle, .backend = h,
                                                            .bytes = bytes};
    return 0;
}

/* The bytes are charged before the backend is called (two creations near the quota cannot
 * both pass) and given back when it fails. A tenant removed meanwhile: the memory joins its
 * table, to go with it, and the call fails. */
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
    if (rc) {
        pthread_mutex_unlock(&s->lock);
        return rc;
    }
    t->st.mem_in_use += bytes;
    kbackend_error e = {0};
    uint64_t h = 0;
    vmm_call_begin(s, t);
    int brc = s->be.ops->vmm_create(s->be.state, bytes, &h, &e);
    vmm_call_end(s, t);
    uint32_t id = 0;
    if (brc)
        rc = sched_backend_fail_s(s, err, &e, "vmm_create");
    else if (!(rc = handle_add(s, t, h, bytes, &id, err)))
        rc = vmm_still(s, t, err);
    if (brc || (rc && !id))
        t->st.mem_in_use -= bytes;
    else if (!rc)
        *handle = id;
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

/* A handle released with no mapping left leaves the table, then the backend gives its
 * memory back (without the lock where it may); its bytes stay charged until then. */
int ksched_vmm_release(ksched *s, uint32_t tenant, uint32_t handle, ksched_err *err)
{
    int rc;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = vmm_tenant(s, tenant, &rc, err);
    sched_vmm_handle *h = t ? handle_of(t, handle) : NULL;
    if (t && (!h || h->released))
        rc = ksched_fail(err, KSCHED_EINVAL, "no memory handle %u", handle);
    if (!rc && h->maps) {
        h->released = true;     /* as in CUDA: its mappings keep it until they go */
    } else if (!rc) {
        sched_vmm_handle gone = *h;
        *h = t->vmm_handles[--t->n_vmm_handles];
        vmm_call_begin(s, t);
        s->be.ops->vmm_release(s->be.state, gone.backend);
        vmm_call_end(s, t);
        t->st.mem_in_use -= gone.bytes;
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

static size_t map_index(const sched_tenant *t, kbackend_devptr va)
{
    size_t i = 0;
    while (t->vmm_maps[i].va != va)
        i++;
    return i;
}

/* The mapping is in t's table, busy, and counted in its handle's maps before the backend
 * maps it (no other call may take its range or unmap it, nor its handle go); it leaves
 * the table when the backend fails. */
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
    if (rc) {
        pthread_mutex_unlock(&s->lock);
        return rc;
    }
    t->vmm_maps = grown;
    t->vmm_maps[t->n_vmm_maps++] = (sched_vmm_map){.va = va, .bytes = bytes, .handle = handle,
                                                   .busy = true};
    h->maps++;
    uint64_t backend = h->backend;
    kbackend_error e = {0};
    vmm_call_begin(s, t);
    int brc = s->be.ops->vmm_map(s->be.state, va, bytes, backend, offset, &e);
    vmm_call_end(s, t);
    size_t i = map_index(t, va);
    t->vmm_maps[i].busy = false;
    if (brc) {
        rc = sched_backend_fail_s(s, err, &e, "vmm_map");
        t->vmm_maps[i] = t->vmm_maps[--t->n_vmm_maps];
        h = handle_of(t, handle);
        h->maps--;
        handle_settle(s, t, h);
    } else {
        rc = vmm_still(s, t, err); /* a removed tenant's mapping goes with it */
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Mapping i of t leaves the table (the backend has unmapped it). */
static void forget_at(ksched *s, sched_tenant *t, size_t i)
{
    sched_vmm_map m = t->vmm_maps[i];
    t->vmm_maps[i] = t->vmm_maps[--t->n_vmm_maps];
    sched_vmm_handle *h = handle_of(t, m.handle);
    if (h) {
        h->maps--;
        handle_settle(s, t, h);
    }
}

/* Undoes mapping i of t. */
static void unmap_at(ksched *s, sched_tenant *t, size_t i)
{
    s->be.ops->vmm_unmap(s->be.state, t->vmm_maps[i].va, t->vmm_maps[i].bytes);
    forget_at(s, t, i);
}

static bool touches(const sched_vmm_map *m, kbackend_devptr va, uint64_t bytes)
{
    return va < m->va + m->bytes && m->va < va + bytes;
}

/* How many mappings of t [va, +bytes) holds; 0 and *rc when it cuts one, holds none, or
 * one is busy in another call. */
static size_t unmap_check(const sched_tenant *t, kbackend_devptr va, uint64_t bytes, int *rc,
                          ksched_err *err)
{
    size_t found = 0;
    for (size_t i = 0; !*rc && i < t->n_vmm_maps; i++) {
        const sched_vmm_map *m = &t->vmm_maps[i];
        if (!touches(m, va, bytes))
            continue;
        if (m->va < va || m->va + m->bytes > va + bytes)
            *rc = ksched_fail(err, KSCHED_EINVAL, "[0x%llx, +%llu) cuts a mapping",
                              (unsigned long long)va, (unsigned long long)bytes);
        else if (m->busy)
            *rc = ksched_fail(err, KSCHED_EINVAL, "the mapping at 0x%llx is being mapped "
                              "or unmapped", (unsigned long long)m->va);
        found++;
    }
    if (!*rc && !found)
        *rc = ksched_fail(err, KSCHED_EINVAL, "nothing is mapped at 0x%llx",
                          (unsigned long long)va);
    return *rc ? 0 : found;
}

/* The mappings [va, +bytes) holds, unmapped by the backend without the lock (vmm_unlocked):
 * busy meanwhile, their ranges copied out (the table may move); under the lock when there
 * is no memory for the copy. */
static void unmap_unlocked(ksched *s, sched_tenant *t, kbackend_devptr va, uint64_t bytes,
                           size_t n)
{
    sched_vmm_map *v = malloc(n * sizeof(*v));
    size_t k = 0;
    for (size_t i = 0; v && i < t->n_vmm_maps; i++)
        if (touches(&t->vmm_maps[i], va, bytes)) {
            t->vmm_maps[i].busy = true;
            v[k++] = t->vmm_maps[i];
        }
    if (v) {
        vmm_call_begin(s, t);
        for (size_t j = 0; j < k; j++)
            s->be.ops->vmm_unmap(s->be.state, v[j].va, v[j].bytes);
        vmm_call_end(s, t);
        for (size_t j = 0; j < k; j++)
            forget_at(s, t, map_index(t, v[j].va));
        free(v);
        return;
    }
    for (size_t i = 0; i < t->n_vmm_maps;)
        if (touches(&t->vmm_maps[i], va, bytes))
            unmap_at(s, t, i);
        else
            i++;
}

/* Every mapping the range touches must lie inside it: no mapping is cut in two. */
int ksched_vmm_unmap(ksched *s, uint32_t tenant, kbackend_devptr va, uint64_t bytes,
                     ksched_err *err)
{
    int rc;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = vmm_tenant(s, tenant, &rc, err);
    size_t n = t ? unmap_check(t, va, bytes, &rc, err) : 0;
    if (n)
        unmap_unlocked(s, t, va, bytes, n);
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
