/* One request: decoded and validated by libkernelet-proto, then handed to the handler of
 * its opcode. Before HELLO only HELLO is accepted; administration connections may only
 * administer, tenants may not. */
#include <stdio.h>
#include <string.h>

#include "server_internal.h"

static bool tenant_only(uint16_t op)
{
    return op != KERNELET_OP_HELLO && op != KERNELET_OP_GET_INFO && op != KERNELET_OP_GET_STATS &&
           op != KERNELET_OP_ADMIN_STATUS && op != KERNELET_OP_ADMIN_SET;
}

static void route(struct ks_conn *c, const struct kernelet_req_hdr *h, const struct kproto_request *r)
{
    uint64_t id = h->request_id;

    switch (h->opcode) {
    case KERNELET_OP_HELLO: ks_session_hello(c, id, r); return;
    case KERNELET_OP_GET_INFO:
    case KERNELET_OP_GET_STATS: ks_session_info(c, h->opcode, id); return;
    case KERNELET_OP_SHM_ATTACH: ks_session_shm_attach(c, id, r); return;
    case KERNELET_OP_SHM_DETACH: ks_session_shm_detach(c, id, r); return;
    case KERNELET_OP_DEVICE_GET: ks_session_device(c, id, r); return;
    case KERNELET_OP_MEM_ALLOC: ks_memory_alloc(c, id, r); return;
    case KERNELET_OP_MEM_FREE: ks_memory_free(c, id, r); return;
    case KERNELET_OP_MEM_GET_INFO: ks_memory_info(c, id); return;
    case KERNELET_OP_MODULE_LOAD: ks_module_load(c, id, r); return;
    case KERNELET_OP_MODULE_UNLOAD: ks_module_unload(c, id, r); return;
    case KERNELET_OP_FUNCTION_GET: ks_function_get(c, id, r); return;
    case KERNELET_OP_GLOBAL_GET: ks_global_get(c, id, r); return;
    case KERNELET_OP_LAUNCH_BATCH: ks_batch(c, id, h, r); return;
    case KERNELET_OP_STREAM_CREATE: ks_stream_create(c, id, r); return;
    case KERNELET_OP_STREAM_DESTROY: ks_stream_destroy(c, id, r); return;
    case KERNELET_OP_STREAM_SYNC: ks_stream_sync(c, id, r); return;
    case KERNELET_OP_STREAM_QUERY: ks_stream_query(c, id, r); return;
    case KERNELET_OP_EVENT_CREATE: ks_event_create(c, id, r); return;
    case KERNELET_OP_EVENT_DESTROY: ks_event_destroy(c, id, r); return;
    case KERNELET_OP_EVENT_SYNC: ks_event_sync(c, id, r); return;
    case KERNELET_OP_EVENT_QUERY: ks_event_query(c, id, r); return;
    case KERNELET_OP_EVENT_ELAPSED: ks_event_elapsed(c, id, r); return;
    case KERNELET_OP_CTX_SYNC: ks_ctx_sync(c, id); return;
    case KERNELET_OP_CONTEXT_CLOSE: ks_context_close(c, id, h->context); return;
    case KERNELET_OP_ADMIN_STATUS: ks_admin_status(c, id, r); return;
    case KERNELET_OP_ADMIN_SET: ks_admin_set(c, id, r); return;
    default: ks_reply(c, h->opcode, id, KERNELET_ST_BAD_OPCODE, NULL, 0); return;
    }
}

void ks_dispatch(struct ks_conn *c, size_t len)
{
    struct kernelet_req_hdr h;
    struct kproto_request r;
    char err[256];
    int rc;

    (void)len;
    kproto_hdr_get(c->in, true, &h, err, sizeof(err)); /* checked by the caller */
    c->requests++;
    rc = kproto_request_decode(&h, c->in + KERNELET_HDR_SIZE, &r, err, sizeof(err));
    if (rc == KPROTO_EOPCODE) {
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
    if ((c->admin && tenant_only(h.opcode)) ||
        (!c->admin && (h.opcode == KERNELET_OP_ADMIN_STATUS || h.opcode == KERNELET_OP_ADMIN_SET))) {
        ks_reply(c, h.opcode, h.request_id, KERNELET_ST_BAD_OPCODE, NULL, 0);
        return;
    }
    /* After a sticky error every request of that context fails with it, except HELLO-level
     * queries and teardown (destroying things is still allowed). */
    uint32_t sticky = ks_context_sticky(c, h.context);
    if (sticky && tenant_only(h.opcode) && h.opcode != KERNELET_OP_SHM_DETACH &&
        h.opcode != KERNELET_OP_STREAM_DESTROY && h.opcode != KERNELET_OP_EVENT_DESTROY &&
        h.opcode != KERNELET_OP_CONTEXT_CLOSE && h.opcode != KERNELET_OP_DEVICE_GET) {
        ks_reply_cuda(c, h.opcode, h.request_id, sticky, 0);
        return;
    }
    c->context = h.context;
    route(c, &h, &r);
}
