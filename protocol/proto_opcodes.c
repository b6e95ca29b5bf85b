/* libkernelet-proto: the opcode table (protocol.h, "The opcode table").
 *
 * Every component asks this table what an opcode may do instead of keeping its own list,
 * so that adding an opcode is one row here plus its handler where it is served. */
#include <stddef.h>

#include "proto_internal.h"

/* Most of the CUDA work: a tenant on the socket or a guest through the device sends it,
 * kerneletd serves it, and a sticky error refuses it. */
#define WORK (KPROTO_OP_GUEST | KPROTO_OP_TENANT)
/* Questions about the session that every sender may ask, even after a sticky error. */
#define QUERY (KPROTO_OP_GUEST | KPROTO_OP_TENANT | KPROTO_OP_ADMIN | KPROTO_OP_DEVICE | \
               KPROTO_OP_AFTER_STICKY)
/* Teardown stays possible after a sticky error: the client frees what it held. */
#define TEARDOWN (WORK | KPROTO_OP_AFTER_STICKY)

/* Sorted by opcode (kproto_opcode_find searches it in halves). */
const struct kproto_opcode_row kproto_opcodes[] = {
    { KERNELET_OP_HELLO,          QUERY, "HELLO" },
    { KERNELET_OP_GET_INFO,       QUERY, "GET_INFO" },
    { KERNELET_OP_GET_STATS,      QUERY, "GET_STATS" },
    { KERNELET_OP_CONTEXT_CLOSE,  TEARDOWN | KPROTO_OP_CONTEXT, "CONTEXT_CLOSE" },
    /* Regions on the socket are memfds of the sender; a guest's bulk data travels in its
     * chains instead (libcuda's virtio transport answers these itself). */
    { KERNELET_OP_SHM_ATTACH,     KPROTO_OP_TENANT, "SHM_ATTACH" },
    { KERNELET_OP_SHM_DETACH,     KPROTO_OP_TENANT | KPROTO_OP_AFTER_STICKY, "SHM_DETACH" },
    { KERNELET_OP_SHM_MAP_DEVICE, KPROTO_OP_TENANT, "SHM_MAP_DEVICE" },
    /* The GPU's properties: CUDA answers device queries without a working context. */
    { KERNELET_OP_DEVICE_GET,     WORK | KPROTO_OP_AFTER_STICKY, "DEVICE_GET" },
    /* A line for kerneletd's log (an entry point the program called is unsupported):
     * worth having after a sticky error too. */
    { KERNELET_OP_TENANT_NOTE,    WORK | KPROTO_OP_AFTER_STICKY, "TENANT_NOTE" },
    { KERNELET_OP_DIAG_ECHO_BULK, KPROTO_OP_GUEST | KPROTO_OP_DEVICE, "DIAG_ECHO_BULK" },
    { KERNELET_OP_MEM_ALLOC,      WORK, "MEM_ALLOC" },
    { KERNELET_OP_MEM_FREE,       WORK, "MEM_FREE" },
    { KERNELET_OP_MEM_GET_INFO,   WORK, "MEM_GET_INFO" },
    { KERNELET_OP_VMM_RESERVE,    WORK, "VMM_RESERVE" },
    { KERNELET_OP_VMM_FREE,       TEARDOWN, "VMM_FREE" },
    { KERNELET_OP_VMM_CREATE,     WORK, "VMM_CREATE" },
    { KERNELET_OP_VMM_RELEASE,    TEARDOWN, "VMM_RELEASE" },
    { KERNELET_OP_VMM_MAP,        WORK, "VMM_MAP" },
    { KERNELET_OP_VMM_UNMAP,      TEARDOWN, "VMM_UNMAP" },
    { KERNELET_OP_TENSOR_MAP_ENCODE, WORK, "TENSOR_MAP_ENCODE" },
    { KERNELET_OP_MODULE_LOAD,    WORK, "MODULE_LOAD" },
    { KERNELET_OP_MODULE_UNLOAD,  WORK, "MODULE_UNLOAD" },
    { KERNELET_OP_FUNCTION_GET,   WORK, "FUNCTION_GET" },
    { KERNELET_OP_GLOBAL_GET,     WORK, "GLOBAL_GET" },
    { KERNELET_OP_LAUNCH_BATCH,   WORK | KPROTO_OP_LAUNCH_RING, "LAUNCH_BATCH" },
    { KERNELET_OP_STREAM_CREATE,  WORK, "STREAM_CREATE" },
    { KERNELET_OP_STREAM_DESTROY, TEARDOWN, "STREAM_DESTROY" },
    { KERNELET_OP_STREAM_SYNC,    WORK, "STREAM_SYNC" },
    { KERNELET_OP_STREAM_QUERY,   WORK, "STREAM_QUERY" },
    { KERNELET_OP_EVENT_CREATE,   WORK, "EVENT_CREATE" },
    { KERNELET_OP_EVENT_DESTROY,  TEARDOWN, "EVENT_DESTROY" },
    { KERNELET_OP_EVENT_SYNC,     WORK, "EVENT_SYNC" },
    { KERNELET_OP_EVENT_QUERY,    WORK, "EVENT_QUERY" },
    { KERNELET_OP_EVENT_ELAPSED,  WORK, "EVENT_ELAPSED" },
    { KERNELET_OP_CTX_SYNC,       WORK, "CTX_SYNC" },
    /* The operator's, never a tenant's or a guest's: policy of every tenant. */
    { KERNELET_OP_ADMIN_STATUS,   KPROTO_OP_ADMIN | KPROTO_OP_AFTER_STICKY, "ADMIN_STATUS" },
    { KERNELET_OP_ADMIN_SET,      KPROTO_OP_ADMIN | KPROTO_OP_AFTER_STICKY, "ADMIN_SET" },
};

const size_t kproto_opcode_count = sizeof(kproto_opcodes) / sizeof(kproto_opcodes[0]);

const struct kproto_opcode_row *kproto_opcode_find(uint16_t opcode)
{
    size_t lo = 0, hi = kproto_opcode_count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (kproto_opcodes[mid].opcode == opcode)
            return &kproto_opcodes[mid];
        if (kproto_opcodes[mid].opcode < opcode)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool kproto_opcode_has(uint16_t opcode, uint32_t flags)
{
    const struct kproto_opcode_row *row = kproto_opcode_find(opcode);

    return row && (row->flags & flags) == flags;
}

const char *kproto_opcode_name(uint16_t opcode)
{
    const struct kproto_opcode_row *row = kproto_opcode_find(opcode);

    return row ? row->name : NULL;
}
