/* Device memory of a tenant: allocations through the scheduler (which enforces the quota),
 * the table every copy and memset is checked against, and frees that wait for the
 * tenant's queued work as cuMemFree does. */
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"

/* Index of the first allocation starting above p. */
static size_t upper(const struct ks_conn *c, uint64_t p)
{
    size_t lo = 0, hi = c->n_allocs;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->allocs[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct ks_alloc *find(const struct ks_conn *c, uint64_t p)
{
    size_t i = upper(c, p);

    if (i == 0)
        return NULL;
    struct ks_alloc *a = &c->allocs[i - 1];
    return p - a->base < a->size ? a : NULL;
}

bool ks_memory_owned(const struct ks_conn *c, uint64_t p, uint64_t len)
{
    const struct ks_alloc *a = find(c, p);

    return a && !a->freeing && len <= a->size - (p - a->base);
}

int ks_alloc_add(struct ks_conn *c, uint64_t base, uint64_t size, uint64_t module)
{
    size_t i = upper(c, base);

    if (i > 0 && c->allocs[i - 1].base == base)
        return 0; /* a global asked for twice */
    if (c->n_allocs >= KS_MAX_ALLOCS)
        return -1;
    if (c->n_allocs == c->cap_allocs) {
        size_t cap = c->cap_allocs ? c->cap_allocs * 2 : 32;
        struct ks_alloc *a = realloc(c->allocs, cap * sizeof(*a));
        if (!a)
            return -1;
        c->allocs = a;
        c->cap_allocs = cap;
    }
    memmove(&c->allocs[i + 1], &c->allocs[i], (c->n_allocs - i) * sizeof(*c->allocs));
    c->allocs[i] = (struct ks_alloc){.base = base, .size = size, .module = module,
                                     .owner = c->context};
    c->n_allocs++;
    return 0;
}

void ks_alloc_remove(struct ks_conn *c, uint64_t base)
{
    size_t i = upper(c, base);

    if (i > 0 && c->allocs[i - 1].base == base) {
        memmove(&c->allocs[i - 1], &c->allocs[i], (c->n_allocs - i) * sizeof(*c->allocs));
        c->n_allocs--;
    }
}

void ks_alloc_remove_module(struct ks_conn *c, uint64_t module)
{
    size_t kept = 0;

    for (size_t i = 0; i < c->n_allocs; i++)
        if (c->allocs[i].module != module)
            c->allocs[kept++] = c->allocs[i];
    c->n_allocs = kept;
}

void ks_memory_alloc(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    uint64_t size = r->u.mem_alloc.size;
    kexec_devptr p;
    ksched_err err;
    int rc;

    rc = ksched_mem_alloc(c->srv->cfg.sched, c->tenant, size, &p, &err);
    if (rc == KSCHED_EQUOTA) {
        ks_reply(c, KERNELET_OP_MEM_ALLOC, id, KERNELET_ST_QUOTA, NULL, 0);
        return;
    }
    if (rc != 0) {
        /* The device had no room (or refused the size): what cuMemAlloc says then. */
        ks_reply_cuda(c, KERNELET_OP_MEM_ALLOC, id,
                      rc == KSCHED_EBACKEND || rc == KSCHED_ENOMEM ? KS_CUDA_OUT_OF_MEMORY
                                                                   : ks_cuda_of(rc, err.msg), 0);
        return;
    }
    if (ks_alloc_add(c, p, size, 0) != 0) {
        ksched_mem_free(c->srv->cfg.sched, c->tenant, p, NULL);
        ks_reply_cuda(c, KERNELET_OP_MEM_ALLOC, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    c->mem_in_use += size;
    struct kernelet_mem_ptr ans = {.dptr = p};
    ks_reply(c, KERNELET_OP_MEM_ALLOC, id, KERNELET_ST_OK, &ans, sizeof(ans));
}

void ks_memory_free(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    uint64_t p = r->u.mem_ptr.dptr;
    struct ks_alloc *a = find(c, p);

    if (!a || a->base != p || a->module || a->freeing) {
        ks_reply_cuda(c, KERNELET_OP_MEM_FREE, id, KS_CUDA_INVALID_VALUE, 0);
        return;
    }
    a->freeing = true;
    ks_drain_then(c, id, KERNELET_OP_MEM_FREE, KS_AFTER_MEM_FREE, p);
}

uint32_t ks_memory_release(struct ks_conn *c, uint64_t base)
{
    struct ks_alloc *a = find(c, base);
    ksched_err err;
    uint64_t size;
    int rc;

    if (!a || a->base != base)
        return KS_CUDA_INVALID_VALUE;
    size = a->size;
    rc = ksched_mem_free(c->srv->cfg.sched, c->tenant, base, &err);
    ks_alloc_remove(c, base);
    c->mem_in_use -= size;
    return rc ? ks_cuda_of(rc, err.msg) : KS_CUDA_SUCCESS;
}

void ks_memory_info(struct ks_conn *c, uint64_t id)
{
    ksched_tenant_policy pol;
    struct kernelet_mem_info info;
    uint64_t total = c->srv->device.total_mem;

    if (ksched_tenant_get_policy(c->srv->cfg.sched, c->tenant, &pol, NULL) == 0 && pol.mem_quota &&
        pol.mem_quota < total)
        total = pol.mem_quota;
    info.total = total;
    info.free = c->mem_in_use < total ? total - c->mem_in_use : 0;
    ks_reply(c, KERNELET_OP_MEM_GET_INFO, id, KERNELET_ST_OK, &info, sizeof(info));
}
