/* libkernelet-proto: decoding and validating request payloads (the daemon's side). */
#include <string.h>

#include "proto_internal.h"

#define FAIL(...) kproto_fail(err, errlen, KPROTO_EINVAL, __VA_ARGS__)

/* The payload must be exactly n bytes; then it is copied into dst. */
static int fixed(const struct kernelet_req_hdr *h, const uint8_t *p, void *dst, size_t n,
                 char *err, size_t errlen)
{
    if (h->length != n)
        return FAIL("%s payload is %u bytes, expected %zu", kproto_opcode_name(h->opcode),
                    h->length, n);
    if (n)
        memcpy(dst, p, n);
    return KPROTO_OK;
}

static int reserved_zero(uint32_t v, const char *what, char *err, size_t errlen)
{
    return v == 0 ? KPROTO_OK : FAIL("%s: reserved field is %u, not 0", what, v);
}

/* A NUL-terminated printable name in a fixed field, zero-padded after the NUL. */
static int check_name_field(const char *name, size_t n, char *err, size_t errlen)
{
    size_t len = strnlen(name, n);

    if (len == n)
        return FAIL("tenant name is not NUL-terminated");
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || (unsigned char)name[i] > 0x7e)
            return FAIL("tenant name has a non-printable byte at %zu", i);
    if (!kproto_all_zero(name + len, n - len))
        return FAIL("tenant name is not zero-padded");
    return KPROTO_OK;
}

static int decode_hello(const struct kernelet_req_hdr *h, const uint8_t *p,
                        struct kproto_request *r, char *err, size_t errlen)
{
    size_t base = sizeof(struct kernelet_hello);
    size_t full = base + sizeof(struct kernelet_hello_tenant);
    struct kernelet_hello_tenant *t = &r->u.hello.tenant;

    if (h->length != base && h->length != full)
        return FAIL("HELLO payload is %u bytes, expected %zu or %zu", h->length, base, full);
    memcpy(&r->u.hello.hello, p, base);
    if (r->u.hello.hello.reserved)
        return FAIL("HELLO: reserved field is not 0");
    r->u.hello.has_tenant = h->length == full;
    if (!r->u.hello.has_tenant)
        return KPROTO_OK;
    memcpy(t, p + base, sizeof(*t));
    if (t->flags & ~KERNELET_HELLO_FLAGS)
        return FAIL("HELLO: unknown flags %#x", t->flags);
    if (t->reserved)
        return FAIL("HELLO: tenant reserved field is not 0");
    return check_name_field(t->name, sizeof(t->name), err, errlen);
}

static int decode_module_load(const struct kernelet_req_hdr *h, const uint8_t *p,
                              struct kproto_request *r, char *err, size_t errlen)
{
    struct kernelet_module_load *m = &r->u.module_load.load;
    size_t base = sizeof(*m);

    if (h->length < base)
        return FAIL("MODULE_LOAD payload is %u bytes, less than %zu", h->length, base);
    memcpy(m, p, base);
    if (m->kind > KERNELET_IMAGE_CUBIN)
        return FAIL("MODULE_LOAD: unknown image kind %u", m->kind);
    if (m->size == 0 || m->size > KERNELET_MAX_IMAGE)
        return FAIL("MODULE_LOAD: image size %llu is outside 1..%llu",
                    (unsigned long long)m->size, (unsigned long long)KERNELET_MAX_IMAGE);
    r->u.module_load.inline_image = NULL;
    if (m->region != KERNELET_REGION_INLINE)
        return h->length == base ? KPROTO_OK
                                 : FAIL("MODULE_LOAD: %u stray bytes after the request",
                                        h->length - (uint32_t)base);
    if (m->offset != 0)
        return FAIL("MODULE_LOAD: inline image with offset %llu",
                    (unsigned long long)m->offset);
    if (m->size != h->length - base)
        return FAIL("MODULE_LOAD: inline image of %llu bytes but %zu follow",
                    (unsigned long long)m->size, h->length - base);
    r->u.module_load.inline_image = p + base;
    return KPROTO_OK;
}

static int decode_note(const struct kernelet_req_hdr *h, const uint8_t *p,
                       struct kproto_request *r, char *err, size_t errlen)
{
    struct kernelet_note *n = &r->u.note.note;
    size_t base = sizeof(*n);

    if (h->length < base)
        return FAIL("TENANT_NOTE payload is %u bytes, less than %zu", h->length, base);
    memcpy(n, p, base);
    if (n->kind != KERNELET_NOTE_UNSUPPORTED)
        return FAIL("TENANT_NOTE: unknown kind %u", n->kind);
    if (n->text_len == 0 || n->text_len > KERNELET_MAX_NOTE || n->text_len != h->length - base)
        return FAIL("TENANT_NOTE: text length %u with %zu bytes following", n->text_len,
                    h->length - base);
    /* It goes into a log line: printable ASCII only. */
    for (uint32_t i = 0; i < n->text_len; i++)
        if (p[base + i] < 0x20 || p[base + i] > 0x7e)
            return FAIL("TENANT_NOTE: byte %u of the text is not printable", i);
    r->u.note.text = (const char *)p + base;
    return KPROTO_OK;
}

static int decode_name(const struct kernelet_req_hdr *h, const uint8_t *p,
                       struct kproto_request *r, char *err, size_t errlen)
{
    struct kernelet_name_req *n = &r->u.name.req;
    size_t base = sizeof(*n);

    if (h->length < base)
        return FAIL("%s payload is %u bytes, less than %zu", kproto_opcode_name(h->opcode),
                    h->length, base);
    memcpy(n, p, base);
    if (n->reserved)
        return FAIL("%s: reserved field is not 0", kproto_opcode_name(h->opcode));
    if (n->name_len == 0 || n->name_len > KERNELET_MAX_SYMBOL)
        return FAIL("%s: name length %u is outside 1..%u", kproto_opcode_name(h->opcode),
                    n->name_len, KERNELET_MAX_SYMBOL);
    if (n->name_len != h->length - base)
        return FAIL("%s: name length %u but %zu bytes follow", kproto_opcode_name(h->opcode),
                    n->name_len, h->length - base);
    if (memchr(p + base, 0, n->name_len))
        return FAIL("%s: name contains a NUL byte", kproto_opcode_name(h->opcode));
    r->u.name.name = (const char *)(p + base);
    return KPROTO_OK;
}

static int decode_batch(const struct kernelet_req_hdr *h, const uint8_t *p,
                        struct kproto_request *r, char *err, size_t errlen)
{
    struct kernelet_batch *b = &r->u.batch.batch;
    size_t base = sizeof(*b);

    if (h->length < base + sizeof(struct kernelet_rec_hdr))
        return FAIL("LAUNCH_BATCH payload is %u bytes: no room for a record", h->length);
    memcpy(b, p, base);
    if (b->count == 0)
        return FAIL("LAUNCH_BATCH: count is 0");
    if (b->flags & ~KERNELET_BATCH_FLAGS)
        return FAIL("LAUNCH_BATCH: unknown flags %#x", b->flags);
    if (b->count > (h->length - base) / sizeof(struct kernelet_rec_hdr))
        return FAIL("LAUNCH_BATCH: %u records cannot fit in %zu bytes", b->count,
                    h->length - base);
    r->u.batch.records = p + base;
    r->u.batch.records_len = h->length - base;
    return KPROTO_OK;
}

static int check_admin_set(const struct kernelet_admin_set *s, char *err, size_t errlen)
{
    if (s->fields == 0 || (s->fields & ~KERNELET_SET_FIELDS))
        return FAIL("ADMIN_SET: field mask %#x is empty or unknown", s->fields);
    if ((s->fields & KERNELET_SET_WEIGHT) && (s->weight < 1 || s->weight > KERNELET_WEIGHT_MAX))
        return FAIL("weight %u is outside 1..%u", s->weight, KERNELET_WEIGHT_MAX);
    if ((s->fields & KERNELET_SET_PRIORITY) && s->priority > KERNELET_PRIORITY_MAX)
        return FAIL("priority %u is outside 0..%u", s->priority, KERNELET_PRIORITY_MAX);
    if ((s->fields & KERNELET_SET_MAX_INFLIGHT) &&
        (s->max_inflight < 1 || s->max_inflight > KERNELET_INFLIGHT_MAX))
        return FAIL("max-inflight %u is outside 1..%u", s->max_inflight, KERNELET_INFLIGHT_MAX);
    if ((s->fields & KERNELET_SET_MEM_QUOTA) && s->mem_quota > (1ull << 50))
        return FAIL("memory quota %llu is above 1 PiB", (unsigned long long)s->mem_quota);
    if ((s->fields & KERNELET_SET_SLICING) && s->slicing > 1)
        return FAIL("slicing %u is not 0 or 1", s->slicing);
    if ((s->fields & KERNELET_SET_TIME_LIMIT) &&
        s->kernel_time_limit_ms > KERNELET_TIME_LIMIT_MAX_MS)
        return FAIL("kernel time limit %u ms is above %u (a day); 0 means the default",
                    s->kernel_time_limit_ms, KERNELET_TIME_LIMIT_MAX_MS);
    return KPROTO_OK;
}

/* Requests whose payload is one fixed structure, checked after the copy. */
/* Which fields each VMM opcode uses (the others must be 0), and the granule. */
static int check_vmm(uint16_t op, const struct kernelet_vmm *v, char *err, size_t errlen)
{
    enum { VA = 1, SIZE = 2, OFFSET = 4, ARG = 8 };
    unsigned used = op == KERNELET_OP_VMM_RESERVE ? SIZE | ARG
                    : op == KERNELET_OP_VMM_FREE ? VA
                    : op == KERNELET_OP_VMM_CREATE ? SIZE
                    : op == KERNELET_OP_VMM_RELEASE ? ARG
                    : op == KERNELET_OP_VMM_MAP ? VA | SIZE | OFFSET | ARG
                                                : VA | SIZE;
    if ((!(used & VA) && v->va) || (!(used & SIZE) && v->size) ||
        (!(used & OFFSET) && v->offset) || (!(used & ARG) && v->arg))
        return FAIL("VMM request %#x: a field it does not use is not 0", op);
    if (v->va % KERNELET_VMM_GRANULE || v->size % KERNELET_VMM_GRANULE ||
        v->offset % KERNELET_VMM_GRANULE || ((used & SIZE) && !v->size))
        return FAIL("VMM request %#x: address, size or offset is not a positive multiple of "
                    "%llu", op, (unsigned long long)KERNELET_VMM_GRANULE);
    if (op == KERNELET_OP_VMM_RESERVE && (v->arg & (v->arg - 1)))
        return FAIL("VMM_RESERVE: alignment %llu is not a power of two",
                    (unsigned long long)v->arg);
    return KPROTO_OK;
}

/* Kind and rank known, and nothing past what the rank uses (whose entries the server and
 * backends never read) set; what the values mean the driver judges. */
static int check_tensor_map(const struct kernelet_tensor_map *m, char *err, size_t errlen)
{
    const unsigned max = KERNELET_TENSOR_MAP_MAX_RANK;
    unsigned rank = m->rank, corners = 0;

    if (m->kind < KERNELET_TENSOR_MAP_TILED || m->kind > KERNELET_TENSOR_MAP_REPLACE_ADDRESS)
        return FAIL("TENSOR_MAP_ENCODE: unknown kind %u", m->kind);
    if (m->kind == KERNELET_TENSOR_MAP_REPLACE_ADDRESS ? rank != 0 : rank < 1 || rank > max)
        return FAIL("TENSOR_MAP_ENCODE: rank %u outside 1..%u (0 to replace an address)",
                    rank, max);
    if (m->kind == KERNELET_TENSOR_MAP_IM2COL)
        corners = rank >= 3 ? rank - 2 : 0;
    else if (m->kind == KERNELET_TENSOR_MAP_IM2COL_WIDE)
        corners = 1;
    for (unsigned i = 0; i < max; i++)
        if ((i >= rank && (m->global_dim[i] || m->element_strides[i])) ||
            (i + 1 >= rank && i < max - 1 && m->global_strides[i]) ||
            ((i >= rank || m->kind != KERNELET_TENSOR_MAP_TILED) && m->box_dim[i]) ||
            (i >= corners && i < max - 2 && (m->lower_corner[i] || m->upper_corner[i])))
            return FAIL("TENSOR_MAP_ENCODE: entry %u of an array is past what rank %u and "
                        "kind %u use", i, rank, m->kind);
    return KPROTO_OK;
}

static int decode_fixed(const struct kernelet_req_hdr *h, const uint8_t *p,
                        struct kproto_request *r, char *err, size_t errlen)
{
    int rc;

    switch (h->opcode) {
    case KERNELET_OP_GET_INFO:
    case KERNELET_OP_GET_STATS:
    case KERNELET_OP_MEM_GET_INFO:
    case KERNELET_OP_CTX_SYNC:
    case KERNELET_OP_CONTEXT_CLOSE:
        return fixed(h, p, NULL, 0, err, errlen);
    case KERNELET_OP_SHM_ATTACH:
        if ((rc = fixed(h, p, &r->u.shm_attach, sizeof(r->u.shm_attach), err, errlen)))
            return rc;
        if (r->u.shm_attach.size == 0 || r->u.shm_attach.size > KERNELET_MAX_REGION_SIZE)
            return FAIL("SHM_ATTACH: size %llu is outside 1..%llu",
                        (unsigned long long)r->u.shm_attach.size,
                        (unsigned long long)KERNELET_MAX_REGION_SIZE);
        if (r->u.shm_attach.flags)
            return FAIL("SHM_ATTACH: unknown flags %#x", r->u.shm_attach.flags);
        return reserved_zero(r->u.shm_attach.reserved, "SHM_ATTACH", err, errlen);
    case KERNELET_OP_SHM_DETACH:
        if ((rc = fixed(h, p, &r->u.shm_region, sizeof(r->u.shm_region), err, errlen)))
            return rc;
        return reserved_zero(r->u.shm_region.reserved, "SHM_DETACH", err, errlen);
    case KERNELET_OP_SHM_MAP_DEVICE:
        if ((rc = fixed(h, p, &r->u.shm_map_device, sizeof(r->u.shm_map_device), err, errlen)))
            return rc;
        if (r->u.shm_map_device.flags)
            return FAIL("SHM_MAP_DEVICE: unknown flags %#x", r->u.shm_map_device.flags);
        if (r->u.shm_map_device.address % 4096)
            return FAIL("SHM_MAP_DEVICE: address %#llx is not page aligned",
                        (unsigned long long)r->u.shm_map_device.address);
        return KPROTO_OK;
    case KERNELET_OP_DEVICE_GET:
        if ((rc = fixed(h, p, &r->u.device_get, sizeof(r->u.device_get), err, errlen)))
            return rc;
        return reserved_zero(r->u.device_get.reserved, "DEVICE_GET", err, errlen);
    case KERNELET_OP_MEM_ALLOC:
        if ((rc = fixed(h, p, &r->u.mem_alloc, sizeof(r->u.mem_alloc), err, errlen)))
            return rc;
        if (r->u.mem_alloc.size == 0)
            return FAIL("MEM_ALLOC: size 0");
        if (r->u.mem_alloc.flags)
            return FAIL("MEM_ALLOC: unknown flags %#x", r->u.mem_alloc.flags);
        return reserved_zero(r->u.mem_alloc.reserved, "MEM_ALLOC", err, errlen);
    case KERNELET_OP_MEM_FREE:
        return fixed(h, p, &r->u.mem_ptr, sizeof(r->u.mem_ptr), err, errlen);
    case KERNELET_OP_VMM_RESERVE:
    case KERNELET_OP_VMM_FREE:
    case KERNELET_OP_VMM_CREATE:
    case KERNELET_OP_VMM_RELEASE:
    case KERNELET_OP_VMM_MAP:
    case KERNELET_OP_VMM_UNMAP:
        if ((rc = fixed(h, p, &r->u.vmm, sizeof(r->u.vmm), err, errlen)))
            return rc;
        return check_vmm(h->opcode, &r->u.vmm, err, errlen);
    case KERNELET_OP_TENSOR_MAP_ENCODE:
        if ((rc = fixed(h, p, &r->u.tensor_map, sizeof(r->u.tensor_map), err, errlen)))
            return rc;
        return check_tensor_map(&r->u.tensor_map, err, errlen);
    case KERNELET_OP_MODULE_UNLOAD:
    case KERNELET_OP_STREAM_DESTROY:
    case KERNELET_OP_STREAM_SYNC:
    case KERNELET_OP_STREAM_QUERY:
    case KERNELET_OP_EVENT_DESTROY:
    case KERNELET_OP_EVENT_SYNC:
    case KERNELET_OP_EVENT_QUERY:
        return fixed(h, p, &r->u.handle, sizeof(r->u.handle), err, errlen);
    case KERNELET_OP_STREAM_CREATE:
        if ((rc = fixed(h, p, &r->u.stream_create, sizeof(r->u.stream_create), err, errlen)))
            return rc;
        if (r->u.stream_create.flags & ~KERNELET_STREAM_NON_BLOCKING)
            return FAIL("STREAM_CREATE: unknown flags %#x", r->u.stream_create.flags);
        return KPROTO_OK;
    case KERNELET_OP_EVENT_CREATE:
        if ((rc = fixed(h, p, &r->u.event_create, sizeof(r->u.event_create), err, errlen)))
            return rc;
        if (r->u.event_create.flags & ~KERNELET_EVENT_FLAGS)
            return FAIL("EVENT_CREATE: unknown flags %#x", r->u.event_create.flags);
        return reserved_zero(r->u.event_create.reserved, "EVENT_CREATE", err, errlen);
    case KERNELET_OP_EVENT_ELAPSED:
        return fixed(h, p, &r->u.event_pair, sizeof(r->u.event_pair), err, errlen);
    case KERNELET_OP_ADMIN_STATUS:
        if ((rc = fixed(h, p, &r->u.admin_status, sizeof(r->u.admin_status), err, errlen)))
            return rc;
        return reserved_zero(r->u.admin_status.reserved, "ADMIN_STATUS", err, errlen);
    case KERNELET_OP_ADMIN_SET:
        if ((rc = fixed(h, p, &r->u.admin_set, sizeof(r->u.admin_set), err, errlen)))
            return rc;
        return check_admin_set(&r->u.admin_set, err, errlen);
    default:
        return kproto_fail(err, errlen, KPROTO_EOPCODE, "unknown opcode %#06x", h->opcode);
    }
}

int kproto_request_decode(const struct kernelet_req_hdr *h, const uint8_t *payload,
                          struct kproto_request *req, char *err, size_t errlen)
{
    memset(req, 0, sizeof(*req));
    req->opcode = h->opcode;
    if (h->length > KERNELET_MAX_PAYLOAD)
        return kproto_fail(err, errlen, KPROTO_ERANGE, "payload length %u exceeds %u",
                           h->length, KERNELET_MAX_PAYLOAD);
    switch (h->opcode) {
    case KERNELET_OP_HELLO:
        return decode_hello(h, payload, req, err, errlen);
    case KERNELET_OP_MODULE_LOAD:
        return decode_module_load(h, payload, req, err, errlen);
    case KERNELET_OP_FUNCTION_GET:
    case KERNELET_OP_GLOBAL_GET:
        return decode_name(h, payload, req, err, errlen);
    case KERNELET_OP_LAUNCH_BATCH:
        return decode_batch(h, payload, req, err, errlen);
    case KERNELET_OP_TENANT_NOTE:
        return decode_note(h, payload, req, err, errlen);
    default:
        return decode_fixed(h, payload, req, err, errlen);
    }
}
