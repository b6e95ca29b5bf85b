/* Device memory of a tenant: allocations through the scheduler (which enforces the quota),
 * the table every copy and memset is checked against, and frees that wait for the
 * tenant's queued work as cuMemFree does. Allocations, and frees once that work has
 * drained, run off the event loop (server_call.c). */
#include "server_internal.h"

static struct ks_alloc *find(const struct ks_conn *c, uint64_t p)
{
    return krange_find(&c->allocs, p, 0);
}

/* Guest processes of one VM (contexts of one connection) are separate CUDA programs: each
 * reaches only the memory it allocated, as natively (host clients are all context 0).
 * Module variables belong to their module's context: they lie in its window, where only
 * its kernels reach them, so another context that borrows the module may launch its
 * functions (in its own window) but not copy to or from its variables. */
static bool visible_to(const struct ks_conn *c, const struct ks_alloc *a)
{
    if (!a->module)
        return a->owner == c->context;
    const struct ks_obj *mo = ks_handle_get(&c->handles, a->module, KS_MODULE);
    return mo && mo->owner == c->context;
}

bool ks_memory_owned(const struct ks_conn *c, uint64_t p, uint64_t len)
{
    const struct ks_alloc *a = find(c, p);

    return a && visible_to(c, a) && !a->freeing && len <= a->r.size - (p - a->r.base);
}

int ks_alloc_add(struct ks_conn *c, uint64_t base, uint64_t size, uint64_t module)
{
    struct ks_alloc *a;

    if (krange_exact(&c->allocs, base))
        return 0; /* a global asked for twice */
    if (krange_count(&c->allocs) >= KS_MAX_ALLOCS)
        return -1;
    if (!c->allocs.entry_size)
        krange_table_init(&c->allocs, sizeof(struct ks_alloc));
    if (!(a = krange_insert(&c->allocs, base, size)))
        return -1;
    a->module = module;
    a->owner = c->context;
    return 0;
}

void ks_alloc_mark_reserved(struct ks_conn *c, uint64_t base)
{
    struct ks_alloc *a = krange_exact(&c->allocs, base);

    if (a)
        a->reserved = true;
}

void ks_alloc_mark_host(struct ks_conn *c, uint64_t base)
{
    struct ks_alloc *a = krange_exact(&c->allocs, base);

    if (a)
        a->host = true;
}

bool ks_alloc_is_reservation(const struct ks_conn *c, uint64_t base)
{
    const struct ks_alloc *a = krange_exact((krange_table *)&c->allocs, base);

    return a && a->reserved && visible_to(c, a);
}

void ks_alloc_remove(struct ks_conn *c, uint64_t base)
{
    struct ks_alloc *a = krange_exact(&c->allocs, base);

    if (a)
        krange_remove(&c->allocs, a);
}

static int of_module(const void *entry, void *module)
{
    return ((const struct ks_alloc *)entry)->module == *(const uint64_t *)module;
}

void ks_alloc_remove_module(struct ks_conn *c, uint64_t module)
{
    krange_remove_if(&c->allocs, of_module, &module);
}

/* On a worker (server_call.c): the backend's part may take long. */
static void alloc_run(struct ks_call *k)
{
    kbackend_devptr p = 0;

    k->rc = ksched_mem_alloc_in(k->sched, k->tenant, k->context, k->arg, &p, &k->err);
    k->result = p;
}

/* Back on the server thread: the allocation into c's table, and the answer. A connection
 * closed meanwhile has no table to fill: its tenant's memory goes with the tenant (the
 * scheduler's table holds it, or it answered KSCHED_ESTATE and freed it so). */
static void alloc_finish(struct ks_call *k)
{
    struct ks_conn *c = k->conn;
    uint64_t size = k->arg;
    kbackend_devptr p = k->result;
    int rc = k->rc;

    if (c->closing)
        return;
    if (rc == KSCHED_EQUOTA) {
        ks_reply(c, KERNELET_OP_MEM_ALLOC, k->id, KERNELET_ST_QUOTA, NULL, 0);
        return;
    }
    if (rc != 0) {
        /* The device had no room (or refused the size): what cuMemAlloc says then. */
        ks_reply_cuda(c, KERNELET_OP_MEM_ALLOC, k->id,
                      rc == KSCHED_EBACKEND || rc == KSCHED_ENOMEM
                          ? KS_CUDA_OUT_OF_MEMORY
                          : ks_context_cuda_of(c, k->context, rc, k->err.msg),
                      0);
        return;
    }
    if (ks_alloc_add(c, p, size, 0) != 0) {
        ksched_mem_free(c->srv->cfg.sched, c->tenant, p, NULL);
        ks_reply_cuda(c, KERNELET_OP_MEM_ALLOC, k->id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    c->mem_in_use += size;
    struct kernelet_mem_ptr ans = {.dptr = p};
    ks_reply(c, KERNELET_OP_MEM_ALLOC, k->id, KERNELET_ST_OK, &ans, sizeof(ans));
}

/* The allocation runs off the event loop (it may take many milliseconds, or wait for the
 * tenant's own kernels): other connections are served meanwhile, this one's later requests
 * wait for its answer. */
void ks_memory_alloc(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    ks_call_start(c, id, KERNELET_OP_MEM_ALLOC, alloc_run, alloc_finish, r->u.mem_alloc.size);
}

void ks_memory_free(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    uint64_t p = r->u.mem_ptr.dptr;
    struct ks_alloc *a = find(c, p);

    if (!a || a->r.base != p || a->module || a->reserved || a->host || a->freeing ||
        !visible_to(c, a)) {
        ks_reply_cuda(c, KERNELET_OP_MEM_FREE, id, KS_CUDA_INVALID_VALUE, 0);
        return;
    }
    a->freeing = true;
    /* then ks_memory_free_drained */
    ks_drain_then(c, id, KERNELET_OP_MEM_FREE, KS_AFTER_MEM_FREE, p);
}

/* The entry at base goes from c's table (what the scheduler said of its free). */
static void forget(struct ks_conn *c, uint64_t base)
{
    struct ks_alloc *a = krange_exact(&c->allocs, base);

    if (a) {
        c->mem_in_use -= a->r.size;
        krange_remove(&c->allocs, a);
    }
}

static uint32_t free_code(int rc, const ksched_err *err)
{
    return rc ? ks_cuda_of(rc, err->msg) : KS_CUDA_SUCCESS;
}

uint32_t ks_memory_release(struct ks_conn *c, uint64_t base)
{
    struct ks_alloc *a = find(c, base);
    ksched_err err;
    int rc;

    if (!a || a->r.base != base)
        return KS_CUDA_INVALID_VALUE;
    rc = ksched_mem_free(c->srv->cfg.sched, c->tenant, base, &err);
    forget(c, base);
    return free_code(rc, &err);
}

/* On a worker: the cuda backend unmaps the allocation and maps the window's sink back over
 * it, which takes long for a big one. */
static void free_run(struct ks_call *k)
{
    k->rc = ksched_mem_free(k->sched, k->tenant, k->arg, &k->err);
}

/* Back on the server thread: the entry goes whatever the scheduler said, and the answer. A
 * connection closed meanwhile has no table: the scheduler frees what is left with the
 * tenant (and marked this allocation as being freed, so it is freed once). */
static void free_finish(struct ks_call *k)
{
    struct ks_conn *c = k->conn;

    if (c->closing)
        return;
    forget(c, k->arg);
    ks_reply_cuda(c, KERNELET_OP_MEM_FREE, k->id, free_code(k->rc, &k->err), 0);
}

void ks_memory_free_drained(struct ks_conn *c, uint64_t id, uint64_t base)
{
    struct ks_alloc *a = find(c, base);

    if (!a || a->r.base != base) {
        ks_reply_cuda(c, KERNELET_OP_MEM_FREE, id, KS_CUDA_INVALID_VALUE, 0);
        return;
    }
    a->releasing = true; /* a context closed meanwhile leaves it to this call */
    if (!ks_call_start(c, id, KERNELET_OP_MEM_FREE, free_run, free_finish, base))
        a->freeing = a->releasing = false;  /* answered OUT_OF_MEMORY: still the tenant's */
}

void ks_memory_info(struct ks_conn *c, uint64_t id)
{
    ksched_tenant_policy pol;
    struct kernelet_mem_info info;
    uint64_t total = c->srv->device.total_mem;

    if (ksched_tenant_get_policy(c->srv->cfg.sched, c->tenant, &pol, NULL) == 0 && pol.mem_quota &&
        pol.mem_quota < total)
        total = pol.mem_quota;
    /* the scheduler's count also holds module variables and VMM memory */
    ksched_tenant_stats ts;
    uint64_t used = ksched_tenant_get_stats(c->srv->cfg.sched, c->tenant, &ts, NULL) == 0
                        ? ts.mem_in_use : c->mem_in_use;
    info.total = total;
    info.free = used < total ? total - used : 0;
    ks_reply(c, KERNELET_OP_MEM_GET_INFO, id, KERNELET_ST_OK, &info, sizeof(info));
}
