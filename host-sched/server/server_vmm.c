/* Virtual memory management requests (VMM_*, protocol.h): CUDA's cuMemAddressReserve,
 * cuMemCreate and cuMemMap, which XLA's allocator and PyTorch's expandable segments use.
 * Only where the tenant's kernels are not fenced (a worker of the isolation tier, or a
 * daemon that does not fence): a fenced kernel reaches its tenant's window only, and a
 * reservation lies outside it. The scheduler does the work and keeps the ownership
 * (ksched_vmm_*); here a reservation joins the connection's memory table, so that its
 * copies and memsets pass the server's checks, and an unmapping waits for queued work. */
#include "server_internal.h"

bool ks_vmm_allowed(const struct ks_conn *c)
{
    return ks_kernels_unconfined(c) && c->srv->has_vmm;
}

static void reserve(struct ks_conn *c, uint64_t id, const struct kernelet_vmm *v)
{
    kbackend_devptr va = 0;
    ksched_err err;
    int rc = ksched_vmm_reserve(c->srv->cfg.sched, c->tenant, v->size, v->arg, &va, &err);

    if (rc) {
        ks_reply_cuda(c, KERNELET_OP_VMM_RESERVE, id, ks_cuda_of(rc, err.msg), 0);
        return;
    }
    if (ks_alloc_add(c, va, v->size, 0) != 0) {
        ksched_vmm_free(c->srv->cfg.sched, c->tenant, va, NULL);
        ks_reply_cuda(c, KERNELET_OP_VMM_RESERVE, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    ks_alloc_mark_reserved(c, va);
    struct kernelet_mem_ptr ans = {.dptr = va};
    ks_reply(c, KERNELET_OP_VMM_RESERVE, id, KERNELET_ST_OK, &ans, sizeof(ans));
}

static void free_reservation(struct ks_conn *c, uint64_t id, const struct kernelet_vmm *v)
{
    ksched_err err;
    int rc = ks_alloc_is_reservation(c, v->va)
                 ? ksched_vmm_free(c->srv->cfg.sched, c->tenant, v->va, &err)
                 : ksched_fail(&err, KSCHED_EINVAL, "not a reservation");

    if (rc) {
        ks_reply_cuda(c, KERNELET_OP_VMM_FREE, id, ks_cuda_of(rc, err.msg), 0);
        return;
    }
    ks_alloc_remove(c, v->va);
    ks_reply(c, KERNELET_OP_VMM_FREE, id, KERNELET_ST_OK, NULL, 0);
}

static void create(struct ks_conn *c, uint64_t id, const struct kernelet_vmm *v)
{
    uint32_t handle = 0;
    ksched_err err;
    int rc = ksched_vmm_create(c->srv->cfg.sched, c->tenant, v->size, &handle, &err);

    if (rc) {
        ks_reply_cuda(c, KERNELET_OP_VMM_CREATE, id, ks_cuda_of(rc, err.msg), 0);
        return;
    }
    struct kernelet_handle ans = {.handle = handle};
    ks_reply(c, KERNELET_OP_VMM_CREATE, id, KERNELET_ST_OK, &ans, sizeof(ans));
}

/* RELEASE and MAP: done by the scheduler at once. */
static void direct(struct ks_conn *c, uint64_t id, uint16_t op, const struct kernelet_vmm *v)
{
    ksched *s = c->srv->cfg.sched;
    ksched_err err;
    int rc = v->arg > UINT32_MAX ? ksched_fail(&err, KSCHED_EINVAL, "no such handle")
             : op == KERNELET_OP_VMM_RELEASE
                 ? ksched_vmm_release(s, c->tenant, (uint32_t)v->arg, &err)
                 : ksched_vmm_map(s, c->tenant, v->va, v->size, (uint32_t)v->arg, v->offset,
                                  &err);

    if (rc)
        ks_reply_cuda(c, op, id, ks_cuda_of(rc, err.msg), 0);
    else
        ks_reply(c, op, id, KERNELET_ST_OK, NULL, 0);
}

uint32_t ks_vmm_unmap_now(struct ks_conn *c, uint64_t va, uint64_t size)
{
    ksched_err err;
    int rc = ksched_vmm_unmap(c->srv->cfg.sched, c->tenant, va, size, &err);

    return rc ? ks_cuda_of(rc, err.msg) : KS_CUDA_SUCCESS;
}

void ks_vmm_request(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    const struct kernelet_vmm *v = &r->u.vmm;

    if (!ks_vmm_allowed(c)) {
        ks_reply_cuda(c, r->opcode, id, KS_CUDA_NOT_SUPPORTED, 0);
        return;
    }
    switch (r->opcode) {
    case KERNELET_OP_VMM_RESERVE: reserve(c, id, v); break;
    case KERNELET_OP_VMM_FREE: free_reservation(c, id, v); break;
    case KERNELET_OP_VMM_CREATE: create(c, id, v); break;
    case KERNELET_OP_VMM_UNMAP:
        /* kernels and copies queued before it may still use the range */
        ks_drain_then2(c, id, r->opcode, KS_AFTER_VMM_UNMAP, v->va, v->size);
        break;
    default: direct(c, id, r->opcode, v); break;
    }
}
