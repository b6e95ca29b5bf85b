/* libkernelet-proto: checking the size of answers (the client's side). */
#include <string.h>

#include "proto_internal.h"

#define FAIL(...) kproto_fail(err, errlen, KPROTO_EINVAL, __VA_ARGS__)

static int exact(uint16_t opcode, uint32_t len, size_t want, char *err, size_t errlen)
{
    return len == want ? KPROTO_OK
                       : FAIL("%s answer is %u bytes, expected %zu", kproto_opcode_name(opcode),
                              len, want);
}

static int check_function(const uint8_t *p, uint32_t len, char *err, size_t errlen)
{
    struct kernelet_function f;

    if (len < sizeof(f))
        return FAIL("FUNCTION_GET answer is %u bytes, less than %zu", len, sizeof(f));
    memcpy(&f, p, sizeof(f));
    if (f.n_params > KERNELET_MAX_PARAMS || f.param_bytes > KERNELET_MAX_PARAM_BYTES)
        return FAIL("FUNCTION_GET: %u parameters of %u bytes exceed the limits", f.n_params,
                    f.param_bytes);
    if (len != sizeof(f) + (size_t)f.n_params * sizeof(struct kernelet_param))
        return FAIL("FUNCTION_GET answer is %u bytes for %u parameters", len, f.n_params);
    for (uint32_t i = 0; i < f.n_params; i++) {
        struct kernelet_param prm;
        memcpy(&prm, p + sizeof(f) + i * sizeof(prm), sizeof(prm));
        if ((uint64_t)prm.offset + prm.size > f.param_bytes)
            return FAIL("FUNCTION_GET: parameter %u (%u+%u) lies outside %u bytes", i,
                        prm.offset, prm.size, f.param_bytes);
    }
    return KPROTO_OK;
}

static int check_admin_status(const uint8_t *p, uint32_t len, char *err, size_t errlen)
{
    struct kernelet_admin_status s;

    if (len < sizeof(s))
        return FAIL("ADMIN_STATUS answer is %u bytes, less than %zu", len, sizeof(s));
    memcpy(&s, p, sizeof(s));
    if (len != sizeof(s) + (size_t)s.n_tenants * sizeof(struct kernelet_tenant_status))
        return FAIL("ADMIN_STATUS answer is %u bytes for %u tenants", len, s.n_tenants);
    if (!memchr(s.policy, 0, sizeof(s.policy)) || !memchr(s.backend, 0, sizeof(s.backend)))
        return FAIL("ADMIN_STATUS: policy or backend name is not NUL-terminated");
    return KPROTO_OK;
}

int kproto_response_check(uint16_t opcode, const uint8_t *p, uint32_t len, char *err,
                          size_t errlen)
{
    switch (opcode) {
    case KERNELET_OP_HELLO:
        if (len != sizeof(struct kernelet_info) &&
            len != sizeof(struct kernelet_info) + sizeof(struct kernelet_session))
            return FAIL("HELLO answer is %u bytes", len);
        return KPROTO_OK;
    case KERNELET_OP_GET_INFO:
        return exact(opcode, len, sizeof(struct kernelet_info), err, errlen);
    case KERNELET_OP_GET_STATS:
        return exact(opcode, len, sizeof(struct kernelet_stats), err, errlen);
    case KERNELET_OP_SHM_ATTACH:
        return exact(opcode, len, sizeof(struct kernelet_shm_region), err, errlen);
    case KERNELET_OP_SHM_MAP_DEVICE:
        return exact(opcode, len, sizeof(struct kernelet_shm_device), err, errlen);
    case KERNELET_OP_DEVICE_GET: {
        struct kernelet_device d;
        int rc = exact(opcode, len, sizeof(d), err, errlen);
        if (rc)
            return rc;
        memcpy(&d, p, sizeof(d));
        if (d.n_attrs != KERNELET_DEVICE_ATTRS || !memchr(d.name, 0, sizeof(d.name)))
            return FAIL("DEVICE_GET: attribute count %u or name is invalid", d.n_attrs);
        return KPROTO_OK;
    }
    case KERNELET_OP_MEM_ALLOC:
    case KERNELET_OP_VMM_RESERVE:
        return exact(opcode, len, sizeof(struct kernelet_mem_ptr), err, errlen);
    case KERNELET_OP_VMM_CREATE:
        return exact(opcode, len, sizeof(struct kernelet_handle), err, errlen);
    case KERNELET_OP_TENSOR_MAP_ENCODE:
        return exact(opcode, len, sizeof(struct kernelet_tensor_map_ans), err, errlen);
    case KERNELET_OP_MEM_GET_INFO:
        return exact(opcode, len, sizeof(struct kernelet_mem_info), err, errlen);
    case KERNELET_OP_MODULE_LOAD:
        return exact(opcode, len, sizeof(struct kernelet_module), err, errlen);
    case KERNELET_OP_FUNCTION_GET:
        return check_function(p, len, err, errlen);
    case KERNELET_OP_GLOBAL_GET:
        return exact(opcode, len, sizeof(struct kernelet_global), err, errlen);
    case KERNELET_OP_STREAM_CREATE:
    case KERNELET_OP_EVENT_CREATE:
        return exact(opcode, len, sizeof(struct kernelet_handle), err, errlen);
    case KERNELET_OP_EVENT_ELAPSED:
        return exact(opcode, len, sizeof(struct kernelet_elapsed), err, errlen);
    case KERNELET_OP_ADMIN_STATUS:
        return check_admin_status(p, len, err, errlen);
    case KERNELET_OP_SHM_DETACH:
    case KERNELET_OP_MEM_FREE:
    case KERNELET_OP_VMM_FREE:
    case KERNELET_OP_VMM_RELEASE:
    case KERNELET_OP_VMM_MAP:
    case KERNELET_OP_VMM_UNMAP:
    case KERNELET_OP_MODULE_UNLOAD:
    case KERNELET_OP_LAUNCH_BATCH:
    case KERNELET_OP_STREAM_DESTROY:
    case KERNELET_OP_STREAM_SYNC:
    case KERNELET_OP_STREAM_QUERY:
    case KERNELET_OP_EVENT_DESTROY:
    case KERNELET_OP_EVENT_SYNC:
    case KERNELET_OP_EVENT_QUERY:
    case KERNELET_OP_CTX_SYNC:
    case KERNELET_OP_CONTEXT_CLOSE:
    case KERNELET_OP_ADMIN_SET:
    case KERNELET_OP_TENANT_NOTE:
        return exact(opcode, len, 0, err, errlen);
    default:
        return kproto_fail(err, errlen, KPROTO_EOPCODE, "unknown opcode %#06x", opcode);
    }
}
