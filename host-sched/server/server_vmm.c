/* Virtual memory management requests (VMM_*, protocol.h): CUDA's cuMemAddressReserve,
 * cuMemCreate and cuMemMap, which XLA's allocator and PyTorch's expandable segments use.
 * Only where the tenant's kernels are not fenced (a worker of the isolation tier, or a
 * daemon that does not fence): a fenced kernel reaches its tenant's window only, and a
 * reservation lies outside it. The scheduler does the work and keeps the ownership
 * (ksched_vmm_*); here a reservation joins the connection's memory table, so that its
 * copies and memsets pass the server's checks, and an unmapping waits for queued work.
 *
 * Creating physical memory (the cuda backend clears it), mapping, unmapping and releasing
 * it take time in proportion to the bytes: they run off the event loop (server_call.c),
 * the connection's later requests waiting for the answer, other connections served
 * meanwhile; the scheduler's side runs without its lock where the backend allows it
 * (sched_vmm.c). A connection closed meanwhile leaves what the call made to its tenant's
 * removal (the scheduler's tables hold it). Reserving and freeing addresses is quick, and
 * stays on the loop. */
#include <stdlib.h>

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

/* ---- calls: run on a worker with the request's kernelet_vmm (k->data), answered on
 * the loop ---- */

static void create_run(struct ks_call *k)
{
    const struct kernelet_vmm *v = k->data;
    uint32_t handle = 0;

    k->rc = ksched_vmm_create(k->sched, k->tenant, v->size, &handle, &k->err);
    k->result = handle;
}

static void release_run(struct ks_call *k)
{
    const struct kernelet_vmm *v = k->data;

    k->rc = v->arg > UINT32_MAX ? ksched_fail(&k->err, KSCHED_EINVAL, "no such handle")
                                : ksched_vmm_release(k->sched, k->tenant, (uint32_t)v->arg,
                                                     &k->err);
}

static void map_run(struct ks_call *k)
{
    const struct kernelet_vmm *v = k->data;

    k->rc = v->arg > UINT32_MAX ? ksched_fail(&k->err, KSCHED_EINVAL, "no such handle")
                                : ksched_vmm_map(k->sched, k->tenant, v->va, v->size,
                                                 (uint32_t)v->arg, v->offset, &k->err);
}

static void unmap_run(struct ks_call *k)
{
    const struct kernelet_vmm *v = k->data;

    k->rc = ksched_vmm_unmap(k->sched, k->tenant, v->va, v->size, &k->err);
}

/* The opcode each call answers, by its run. */
static uint16_t opcode_of(const struct ks_call *k)
{
    return k->run == create_run ? KERNELET_OP_VMM_CREATE
           : k->run == release_run ? KERNELET_OP_VMM_RELEASE
           : k->run == map_run ? KERNELET_OP_VMM_MAP : KERNELET_OP_VMM_UNMAP;
}

static void vmm_finish(struct ks_call *k)
{
    struct ks_conn *c = k->conn;
    uint16_t op = opcode_of(k);

    free(k->data);
    if (c->closing)
        return;
    if (k->rc) {
        ks_reply_cuda(c, op, k->id, ks_cuda_of(k->rc, k->err.msg), 0);
    } else if (op == KERNELET_OP_VMM_CREATE) {
        struct kernelet_handle ans = {.handle = (uint32_t)k->result};
        ks_reply(c, op, k->id, KERNELET_ST_OK, &ans, sizeof(ans));
    } else {
        ks_reply(c, op, k->id, KERNELET_ST_OK, NULL, 0);
    }
}

/* Request id's v, run by run off the loop. */
static void vmm_call(struct ks_conn *c, uint64_t id, uint16_t op, ks_call_fn *run,
                     const struct kernelet_vmm *v)
{
    struct kernelet_vmm *copy = malloc(sizeof(*copy));

    if (!copy) {
        ks_reply_cuda(c, op, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    *copy = *v;
    if (!ks_call_start_data(c, id, op, run, vmm_finish, copy))
        free(copy);
}

void ks_vmm_unmap_drained(struct ks_conn *c, uint64_t id, uint64_t va, uint64_t size)
{
    const struct kernelet_vmm v = {.va = va, .size = size};

    vmm_call(c, id, KERNELET_OP_VMM_UNMAP, unmap_run, &v);
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
    case KERNELET_OP_VMM_CREATE: vmm_call(c, id, r->opcode, create_run, v); break;
    case KERNELET_OP_VMM_RELEASE: vmm_call(c, id, r->opcode, release_run, v); break;
    case KERNELET_OP_VMM_MAP: vmm_call(c, id, r->opcode, map_run, v); break;
    case KERNELET_OP_VMM_UNMAP:
        /* kernels and copies queued before it may still use the range: then
         * ks_vmm_unmap_drained */
        ks_drain_then2(c, id, r->opcode, KS_AFTER_VMM_UNMAP, v->va, v->size);
        break;
    default: ks_reply_cuda(c, r->opcode, id, KS_CUDA_NOT_SUPPORTED, 0); break;
    }
}
