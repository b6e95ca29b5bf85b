/* One request: decoded and validated by libkernelet-proto, checked against the opcode
 * table (who may send it, whether a sticky error refuses it), then handed to the handler
 * of its opcode. Before HELLO only HELLO is accepted. */
#include <stdio.h>
#include <string.h>

#include "server_internal.h"

/* Handlers whose signature differs from the table's. */
static void info(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    ks_session_info(c, r->opcode, id);
}

static void mem_info(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    (void)r;
    ks_memory_info(c, id);
}

static void ctx_sync(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    (void)r;
    ks_ctx_sync(c, id);
}

static void context_close(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    (void)r;
    ks_context_close(c, id, c->context);
}

/* The handler of each opcode kerneletd serves; who may call it is the opcode table's
 * business (protocol.h). */
static ks_handler *const handlers[] = {
    [KERNELET_OP_HELLO] = ks_session_hello,
    [KERNELET_OP_GET_INFO] = info,
    [KERNELET_OP_GET_STATS] = info,
    [KERNELET_OP_CONTEXT_CLOSE] = context_close,
    [KERNELET_OP_SHM_ATTACH] = ks_session_shm_attach,
    [KERNELET_OP_SHM_DETACH] = ks_session_shm_detach,
    [KERNELET_OP_SHM_MAP_DEVICE] = ks_region_map_device,
    [KERNELET_OP_DEVICE_GET] = ks_session_device,
    [KERNELET_OP_TENANT_NOTE] = ks_tenant_note,
    [KERNELET_OP_MEM_ALLOC] = ks_memory_alloc,
    [KERNELET_OP_MEM_FREE] = ks_memory_free,
    [KERNELET_OP_MEM_GET_INFO] = mem_info,
    [KERNELET_OP_VMM_RESERVE] = ks_vmm_request,
    [KERNELET_OP_VMM_FREE] = ks_vmm_request,
    [KERNELET_OP_VMM_CREATE] = ks_vmm_request,
    [KERNELET_OP_VMM_RELEASE] = ks_vmm_request,
    [KERNELET_OP_VMM_MAP] = ks_vmm_request,
    [KERNELET_OP_VMM_UNMAP] = ks_vmm_request,
    [KERNELET_OP_TENSOR_MAP_ENCODE] = ks_tensor_map_encode,
    [KERNELET_OP_MODULE_LOAD] = ks_module_load,
    [KERNELET_OP_MODULE_UNLOAD] = ks_module_unload,
    [KERNELET_OP_FUNCTION_GET] = ks_function_get,
    [KERNELET_OP_GLOBAL_GET] = ks_global_get,
    [KERNELET_OP_LAUNCH_BATCH] = ks_batch,
    [KERNELET_OP_STREAM_CREATE] = ks_stream_create,
    [KERNELET_OP_STREAM_DESTROY] = ks_stream_destroy,
    [KERNELET_OP_STREAM_SYNC] = ks_stream_sync,
    [KERNELET_OP_STREAM_QUERY] = ks_stream_query,
    [KERNELET_OP_EVENT_CREATE] = ks_event_create,
    [KERNELET_OP_EVENT_DESTROY] = ks_event_destroy,
    [KERNELET_OP_EVENT_SYNC] = ks_event_sync,
    [KERNELET_OP_EVENT_QUERY] = ks_event_query,
    [KERNELET_OP_EVENT_ELAPSED] = ks_event_elapsed,
    [KERNELET_OP_CTX_SYNC] = ctx_sync,
    [KERNELET_OP_ADMIN_STATUS] = ks_admin_status,
    [KERNELET_OP_ADMIN_SET] = ks_admin_set,
};

ks_handler *ks_handler_of(uint16_t opcode)
{
    return opcode < sizeof(handlers) / sizeof(handlers[0]) ? handlers[opcode] : NULL;
}

void ks_dispatch(struct ks_conn *c, size_t len)
{
    struct kernelet_req_hdr h;
    struct kproto_request r;
    uint32_t sender = 0, sticky;
    char err[256];
    int rc;

    (void)len;
    kproto_hdr_get(c->in, true, &h, err, sizeof(err)); /* checked by the caller */
    c->requests++;
    rc = kproto_request_decode(&h, c->in + KERNELET_HDR_SIZE, &r, err, sizeof(err));
    if (rc == KPROTO_EOPCODE || (rc == 0 && !ks_handler_of(h.opcode))) {
        ks_reply(c, h.opcode, h.request_id, KERNELET_ST_BAD_OPCODE, NULL, 0);
        return;
    }
    if (rc != 0) {
        ks_reply(c, h.opcode, h.request_id, KERNELET_ST_BAD_REQUEST, NULL, 0);
        return;
    }
    if (!c->hello && h.opcode != KERNELET_OP_HELLO) {
        /* Nothing but HELLO before HELLO; a client that does not know that is not ours. */
        ks_reply(c, h.opcode, h.request_id, KERNELET_ST_BAD_REQUEST, NULL, 0);
        ks_conn_close(c);
        return;
    }
    sender = c->admin ? KPROTO_OP_ADMIN : KPROTO_OP_TENANT;
    if (!kproto_opcode_has(h.opcode, sender)) {
        ks_reply(c, h.opcode, h.request_id, KERNELET_ST_BAD_OPCODE, NULL, 0);
        return;
    }
    /* After a sticky error every request of that context fails with it, except queries
     * and teardown (the opcode table says which). */
    sticky = ks_context_sticky(c, h.context);
    if (sticky && !kproto_opcode_has(h.opcode, KPROTO_OP_AFTER_STICKY)) {
        ks_reply_cuda(c, h.opcode, h.request_id, sticky, 0);
        return;
    }
    c->context = h.context;
    ks_handler_of(h.opcode)(c, h.request_id, &r);
}
