/* libkernelet-proto: encoding, decoding and validation of every message kind. Each test
 * builds wire bytes by hand (independently of the decoder) and checks what it accepts
 * and what it refuses. */
#include <glib.h>
#include <string.h>

#include "kernelet/protocol.h"

static uint8_t buf[KERNELET_MAX_REQUEST];

/* Builds a request with payload p of n bytes into buf; returns the decoder's verdict. */
static int decode(uint16_t op, const void *p, uint32_t n, struct kproto_request *r)
{
    struct kernelet_req_hdr h;
    char err[256];

    kproto_hdr_put(buf, op, n, 42, 0);
    if (n)
        memcpy(buf + KERNELET_HDR_SIZE, p, n);
    g_assert_cmpint(kproto_hdr_get(buf, true, &h, err, sizeof err), ==, 0);
    g_assert_cmpuint(h.request_id, ==, 42);
    return kproto_request_decode(&h, buf + KERNELET_HDR_SIZE, r, err, sizeof err);
}

static void test_header(void)
{
    struct kernelet_req_hdr h;
    uint8_t raw[24] = {0};
    char err[128] = "";

    kproto_hdr_put(raw, KERNELET_OP_MEM_ALLOC, 16, 0x1122334455667788ull, 0);
    /* Little-endian layout, field by field. */
    g_assert_cmpuint(raw[0], ==, 0x01);
    g_assert_cmpuint(raw[1], ==, 0x01);
    g_assert_cmpuint(raw[4], ==, 16);
    g_assert_cmpuint(raw[8], ==, 0x88);
    g_assert_cmpuint(raw[15], ==, 0x11);
    g_assert_cmpint(kproto_hdr_get(raw, true, &h, err, sizeof err), ==, 0);
    g_assert_cmpuint(h.opcode, ==, KERNELET_OP_MEM_ALLOC);

    raw[2] = 1; /* flags */
    g_assert_cmpint(kproto_hdr_get(raw, true, &h, err, sizeof err), ==, KPROTO_EINVAL);
    g_assert_nonnull(strstr(err, "flags"));
    raw[2] = 0;
    raw[16] = 3; /* status in a request */
    g_assert_cmpint(kproto_hdr_get(raw, true, &h, err, sizeof err), ==, KPROTO_EINVAL);
    g_assert_cmpint(kproto_hdr_get(raw, false, &h, err, sizeof err), ==, 0);
    raw[16] = 0;
    raw[20] = 1; /* context: a request may name one, a response may not */
    g_assert_cmpint(kproto_hdr_get(raw, true, &h, err, sizeof err), ==, 0);
    g_assert_cmpuint(h.context, ==, 1);
    g_assert_cmpint(kproto_hdr_get(raw, false, &h, err, sizeof err), ==, KPROTO_EINVAL);
    g_assert_nonnull(strstr(err, "context"));
    raw[20] = 0;
    kproto_hdr_put(raw, KERNELET_OP_MEM_ALLOC, KERNELET_MAX_PAYLOAD + 1, 1, 0);
    g_assert_cmpint(kproto_hdr_get(raw, true, &h, err, sizeof err), ==, KPROTO_ERANGE);
    g_assert_cmpuint(h.request_id, ==, 1); /* filled for the refusal's answer */
}

/* A guest's request on a virtqueue: only the transfer flag, and no context (the device
 * stamps it on the socket). */
static void test_header_guest(void)
{
    struct kernelet_req_hdr h;
    uint8_t raw[24] = {0};

    kproto_hdr_put(raw, KERNELET_OP_MEM_ALLOC, 16, 7, 0);
    g_assert_cmpint(kproto_hdr_decode(raw, KPROTO_HOP_GUEST, &h, NULL, 0), ==, 0);
    raw[2] = KERNELET_REQ_F_XFER;
    g_assert_cmpint(kproto_hdr_decode(raw, KPROTO_HOP_GUEST, &h, NULL, 0), ==, 0);
    g_assert_cmpuint(h.flags, ==, KERNELET_REQ_F_XFER);
    g_assert_cmpint(kproto_hdr_decode(raw, KPROTO_HOP_REQUEST, &h, NULL, 0), ==, KPROTO_EINVAL);
    raw[2] = 2;
    g_assert_cmpint(kproto_hdr_decode(raw, KPROTO_HOP_GUEST, &h, NULL, 0), ==, KPROTO_EINVAL);
    raw[2] = 0;
    raw[20] = 1;
    g_assert_cmpint(kproto_hdr_decode(raw, KPROTO_HOP_GUEST, &h, NULL, 0), ==, KPROTO_EINVAL);
    raw[20] = 0;
    raw[16] = 1;
    g_assert_cmpint(kproto_hdr_decode(raw, KPROTO_HOP_GUEST, &h, NULL, 0), ==, KPROTO_EINVAL);
}

static void test_hello(void)
{
    struct kproto_request r;
    struct {
        struct kernelet_hello h;
        struct kernelet_hello_tenant t;
    } full;

    memset(&full, 0, sizeof full);
    full.h.proto_version = KERNELET_PROTO_VERSION;
    g_assert_cmpint(decode(KERNELET_OP_HELLO, &full, 8, &r), ==, 0);
    g_assert_false(r.u.hello.has_tenant);
    strcpy(full.t.name, "bench-tea");
    g_assert_cmpint(decode(KERNELET_OP_HELLO, &full, sizeof full, &r), ==, 0);
    g_assert_true(r.u.hello.has_tenant);
    g_assert_cmpstr(r.u.hello.tenant.name, ==, "bench-tea");

    full.t.name[12] = 'x'; /* garbage after the NUL */
    g_assert_cmpint(decode(KERNELET_OP_HELLO, &full, sizeof full, &r), ==, KPROTO_EINVAL);
    full.t.name[12] = 0;
    full.t.name[3] = '\n';
    g_assert_cmpint(decode(KERNELET_OP_HELLO, &full, sizeof full, &r), ==, KPROTO_EINVAL);
    memset(full.t.name, 'a', sizeof full.t.name); /* no NUL at all */
    g_assert_cmpint(decode(KERNELET_OP_HELLO, &full, sizeof full, &r), ==, KPROTO_EINVAL);
    memset(full.t.name, 0, sizeof full.t.name);
    full.t.flags = 0x80;
    g_assert_cmpint(decode(KERNELET_OP_HELLO, &full, sizeof full, &r), ==, KPROTO_EINVAL);
    full.t.flags = KERNELET_HELLO_ADMIN;
    g_assert_cmpint(decode(KERNELET_OP_HELLO, &full, sizeof full, &r), ==, 0);
    g_assert_cmpint(decode(KERNELET_OP_HELLO, &full, 12, &r), ==, KPROTO_EINVAL);
    full.h.reserved = 1;
    g_assert_cmpint(decode(KERNELET_OP_HELLO, &full, 8, &r), ==, KPROTO_EINVAL);
}

static void test_fixed_sizes(void)
{
    struct kproto_request r;
    uint8_t zero[64] = {0};
    struct kernelet_mem_alloc a = {.size = 4096};
    struct kernelet_shm_attach s = {.size = 1 << 20};

    g_assert_cmpint(decode(KERNELET_OP_GET_INFO, zero, 0, &r), ==, 0);
    g_assert_cmpint(decode(KERNELET_OP_GET_INFO, zero, 1, &r), ==, KPROTO_EINVAL);
    g_assert_cmpint(decode(KERNELET_OP_CTX_SYNC, zero, 0, &r), ==, 0);
    g_assert_cmpint(decode(KERNELET_OP_CONTEXT_CLOSE, zero, 0, &r), ==, 0);
    g_assert_cmpint(decode(KERNELET_OP_CONTEXT_CLOSE, zero, 4, &r), ==, KPROTO_EINVAL);
    g_assert_cmpint(decode(KERNELET_OP_MEM_ALLOC, &a, sizeof a, &r), ==, 0);
    g_assert_cmpuint(r.u.mem_alloc.size, ==, 4096);
    g_assert_cmpint(decode(KERNELET_OP_MEM_ALLOC, &a, sizeof a - 1, &r), ==, KPROTO_EINVAL);
    a.size = 0;
    g_assert_cmpint(decode(KERNELET_OP_MEM_ALLOC, &a, sizeof a, &r), ==, KPROTO_EINVAL);
    a.size = 1;
    a.flags = 2;
    g_assert_cmpint(decode(KERNELET_OP_MEM_ALLOC, &a, sizeof a, &r), ==, KPROTO_EINVAL);
    g_assert_cmpint(decode(KERNELET_OP_SHM_ATTACH, &s, sizeof s, &r), ==, 0);
    s.size = KERNELET_MAX_REGION_SIZE + 1;
    g_assert_cmpint(decode(KERNELET_OP_SHM_ATTACH, &s, sizeof s, &r), ==, KPROTO_EINVAL);
    g_assert_cmpint(decode(KERNELET_OP_STREAM_SYNC, zero, 8, &r), ==, 0);
    g_assert_cmpint(decode(KERNELET_OP_STREAM_SYNC, zero, 16, &r), ==, KPROTO_EINVAL);
    g_assert_cmpint(decode(0x7777, zero, 0, &r), ==, KPROTO_EOPCODE);
    g_assert_cmpint(decode(KERNELET_OP_GET_STATS, zero, 0, &r), ==, 0);
}

/* TENANT_NOTE: a known kind and 1..KERNELET_MAX_NOTE printable bytes, exactly. */
static void test_tenant_note(void)
{
    struct kproto_request r;
    struct {
        struct kernelet_note n;
        char text[KERNELET_MAX_NOTE + 8];
    } m = {{.kind = KERNELET_NOTE_UNSUPPORTED, .text_len = 9}, "cuFooBar2"};
    size_t base = sizeof(m.n);

    g_assert_cmpint(decode(KERNELET_OP_TENANT_NOTE, &m, base + 9, &r), ==, 0);
    g_assert_cmpuint(r.u.note.note.text_len, ==, 9);
    g_assert_cmpint(memcmp(r.u.note.text, "cuFooBar2", 9), ==, 0);
    g_assert_cmpint(decode(KERNELET_OP_TENANT_NOTE, &m, base + 8, &r), ==, KPROTO_EINVAL);
    g_assert_cmpint(decode(KERNELET_OP_TENANT_NOTE, &m, base - 1, &r), ==, KPROTO_EINVAL);
    m.text[3] = '\n';
    g_assert_cmpint(decode(KERNELET_OP_TENANT_NOTE, &m, base + 9, &r), ==, KPROTO_EINVAL);
    m.text[3] = 'o';
    m.n.kind = 2;
    g_assert_cmpint(decode(KERNELET_OP_TENANT_NOTE, &m, base + 9, &r), ==, KPROTO_EINVAL);
    m.n.kind = KERNELET_NOTE_UNSUPPORTED;
    m.n.text_len = 0;
    g_assert_cmpint(decode(KERNELET_OP_TENANT_NOTE, &m, base, &r), ==, KPROTO_EINVAL);
    memset(m.text, 'x', sizeof(m.text));
    m.n.text_len = KERNELET_MAX_NOTE + 1;
    g_assert_cmpint(decode(KERNELET_OP_TENANT_NOTE, &m, base + KERNELET_MAX_NOTE + 1, &r), ==,
                    KPROTO_EINVAL);
    m.n.text_len = KERNELET_MAX_NOTE;
    g_assert_cmpint(decode(KERNELET_OP_TENANT_NOTE, &m, base + KERNELET_MAX_NOTE, &r), ==, 0);
}

static void test_events_streams(void)
{
    struct kproto_request r;
    struct kernelet_event_create e = {.flags = KERNELET_EVENT_DISABLE_TIMING};
    struct kernelet_stream_create s = {.flags = KERNELET_STREAM_NON_BLOCKING, .priority = -1};

    g_assert_cmpint(decode(KERNELET_OP_EVENT_CREATE, &e, sizeof e, &r), ==, 0);
    e.flags = 4;
    g_assert_cmpint(decode(KERNELET_OP_EVENT_CREATE, &e, sizeof e, &r), ==, KPROTO_EINVAL);
    g_assert_cmpint(decode(KERNELET_OP_STREAM_CREATE, &s, sizeof s, &r), ==, 0);
    g_assert_cmpint(r.u.stream_create.priority, ==, -1);
    s.flags = 2;
    g_assert_cmpint(decode(KERNELET_OP_STREAM_CREATE, &s, sizeof s, &r), ==, KPROTO_EINVAL);
}

static void test_module_and_names(void)
{
    struct kproto_request r;
    uint8_t p[256] = {0};
    struct kernelet_module_load m = {.kind = KERNELET_IMAGE_PTX, .region = 3, .size = 100};
    struct kernelet_name_req n = {.module = 7, .name_len = 5};

    g_assert_cmpint(decode(KERNELET_OP_MODULE_LOAD, &m, sizeof m, &r), ==, 0);
    m.kind = 9;
    g_assert_cmpint(decode(KERNELET_OP_MODULE_LOAD, &m, sizeof m, &r), ==, KPROTO_EINVAL);
    m.kind = KERNELET_IMAGE_AUTO;
    m.size = 0;
    g_assert_cmpint(decode(KERNELET_OP_MODULE_LOAD, &m, sizeof m, &r), ==, KPROTO_EINVAL);
    /* Inline image: exactly size bytes follow. */
    m.region = KERNELET_REGION_INLINE;
    m.size = 10;
    memcpy(p, &m, sizeof m);
    memcpy(p + sizeof m, ".version 7", 10);
    g_assert_cmpint(decode(KERNELET_OP_MODULE_LOAD, p, sizeof m + 10, &r), ==, 0);
    g_assert_cmpmem(r.u.module_load.inline_image, 10, ".version 7", 10);
    g_assert_cmpint(decode(KERNELET_OP_MODULE_LOAD, p, sizeof m + 9, &r), ==, KPROTO_EINVAL);
    g_assert_cmpint(decode(KERNELET_OP_MODULE_LOAD, p, sizeof m + 11, &r), ==, KPROTO_EINVAL);

    memcpy(p, &n, sizeof n);
    memcpy(p + sizeof n, "saxpy", 5);
    g_assert_cmpint(decode(KERNELET_OP_FUNCTION_GET, p, sizeof n + 5, &r), ==, 0);
    g_assert_cmpmem(r.u.name.name, r.u.name.req.name_len, "saxpy", 5);
    g_assert_cmpint(decode(KERNELET_OP_GLOBAL_GET, p, sizeof n + 4, &r), ==, KPROTO_EINVAL);
    p[sizeof n + 2] = 0; /* NUL inside the name */
    g_assert_cmpint(decode(KERNELET_OP_FUNCTION_GET, p, sizeof n + 5, &r), ==, KPROTO_EINVAL);
    n.name_len = 0;
    memcpy(p, &n, sizeof n);
    g_assert_cmpint(decode(KERNELET_OP_FUNCTION_GET, p, sizeof n, &r), ==, KPROTO_EINVAL);
}

static void test_admin(void)
{
    struct kproto_request r;
    struct kernelet_admin_set s = {.tenant = 1, .fields = KERNELET_SET_WEIGHT, .weight = 300};

    g_assert_cmpint(decode(KERNELET_OP_ADMIN_SET, &s, sizeof s, &r), ==, 0);
    s.weight = 0;
    g_assert_cmpint(decode(KERNELET_OP_ADMIN_SET, &s, sizeof s, &r), ==, KPROTO_EINVAL);
    s.fields = KERNELET_SET_PRIORITY;
    s.priority = 8;
    g_assert_cmpint(decode(KERNELET_OP_ADMIN_SET, &s, sizeof s, &r), ==, KPROTO_EINVAL);
    s.priority = 7;
    g_assert_cmpint(decode(KERNELET_OP_ADMIN_SET, &s, sizeof s, &r), ==, 0);
    s.fields = 0;
    g_assert_cmpint(decode(KERNELET_OP_ADMIN_SET, &s, sizeof s, &r), ==, KPROTO_EINVAL);
    s.fields = 0x100;
    g_assert_cmpint(decode(KERNELET_OP_ADMIN_SET, &s, sizeof s, &r), ==, KPROTO_EINVAL);
    s.fields = KERNELET_SET_TIME_LIMIT;
    s.kernel_time_limit_ms = KERNELET_TIME_LIMIT_MAX_MS;
    g_assert_cmpint(decode(KERNELET_OP_ADMIN_SET, &s, sizeof s, &r), ==, 0);
    s.kernel_time_limit_ms = 0; /* the daemon's default */
    g_assert_cmpint(decode(KERNELET_OP_ADMIN_SET, &s, sizeof s, &r), ==, 0);
    s.kernel_time_limit_ms = KERNELET_TIME_LIMIT_MAX_MS + 1;
    g_assert_cmpint(decode(KERNELET_OP_ADMIN_SET, &s, sizeof s, &r), ==, KPROTO_EINVAL);
}

/* ---- batches ---- */

struct batch_builder {
    uint8_t data[4096];
    size_t len;
    uint32_t count;
};

static void bb_add(struct batch_builder *b, const void *rec, size_t n)
{
    memcpy(b->data + sizeof(struct kernelet_batch) + b->len, rec, n);
    b->len += n;
    b->count++;
}

static int bb_decode(struct batch_builder *b, struct kproto_request *r, uint32_t flags)
{
    struct kernelet_batch hdr = {.count = b->count, .flags = flags};
    memcpy(b->data, &hdr, sizeof hdr);
    return decode(KERNELET_OP_LAUNCH_BATCH, b->data, (uint32_t)(sizeof hdr + b->len), r);
}

/* Walks a decoded batch; returns the number of records read, or the error. */
static int walk(struct kproto_request *r, struct kproto_record *recs, int max)
{
    struct kproto_batch_iter it;
    char err[256];
    int n = 0, rc;

    kproto_batch_begin(&it, r);
    while ((rc = kproto_batch_next(&it, &recs[n < max ? n : max - 1], err, sizeof err)) == 1)
        n++;
    return rc < 0 ? rc : n;
}

/* The framing alone: lengths and count, whatever the records hold. */
static void test_batch_frames(void)
{
    uint8_t recs[64] = {0};
    struct kernelet_rec_hdr h = {.op = 77, .flags = 1, .length = 24};
    struct kproto_batch_iter it;
    const uint8_t *p;

    memcpy(recs, &h, sizeof h);
    h.length = 16;
    memcpy(recs + 24, &h, sizeof h);
    kproto_batch_walk(&it, recs, 40, 2);
    g_assert_cmpint(kproto_batch_frame(&it, &h, &p, NULL, 0), ==, 1);
    g_assert_true(p == recs);
    g_assert_cmpuint(h.length, ==, 24);
    g_assert_cmpint(kproto_batch_frame(&it, &h, &p, NULL, 0), ==, 1);
    g_assert_true(p == recs + 24);
    g_assert_cmpuint(it.index, ==, 1);
    g_assert_cmpint(kproto_batch_frame(&it, &h, &p, NULL, 0), ==, 0);
    kproto_batch_walk(&it, recs, 48, 2); /* 8 bytes after the last record */
    kproto_batch_frame(&it, &h, &p, NULL, 0);
    kproto_batch_frame(&it, &h, &p, NULL, 0);
    g_assert_cmpint(kproto_batch_frame(&it, &h, &p, NULL, 0), ==, KPROTO_EINVAL);
    kproto_batch_walk(&it, recs, 40, 3); /* a record short */
    kproto_batch_frame(&it, &h, &p, NULL, 0);
    kproto_batch_frame(&it, &h, &p, NULL, 0);
    g_assert_cmpint(kproto_batch_frame(&it, &h, &p, NULL, 0), ==, KPROTO_EINVAL);
    g_assert_cmpuint(it.index, ==, 2);
    kproto_batch_walk(&it, recs, 20, 1); /* length 24 beyond 20 bytes */
    g_assert_cmpint(kproto_batch_frame(&it, &h, &p, NULL, 0), ==, KPROTO_EINVAL);
}

static void launch_rec(uint8_t *out, size_t *n, uint32_t param_bytes)
{
    struct kernelet_rec_launch l = {
        .h = {.op = KERNELET_REC_LAUNCH, .stream = 5},
        .function = 99, .grid = {4, 1, 1}, .block = {128, 1, 1}, .param_bytes = param_bytes,
    };
    size_t total = sizeof l + ((param_bytes + 7) & ~7u);
    l.h.length = (uint32_t)total;
    memset(out, 0, total);
    memcpy(out, &l, sizeof l);
    for (uint32_t i = 0; i < param_bytes; i++)
        out[sizeof l + i] = (uint8_t)(i + 1);
    *n = total;
}

/* One LAUNCH_EX record of cluster and flags over grid 8x2x1 (12 parameter bytes): the
 * walk's result. */
static int launch_ex_walk(const uint32_t cluster[3], uint32_t flags, struct kproto_record *rec)
{
    struct batch_builder b = {0};
    struct kproto_request r;
    struct kernelet_rec_launch_ex x = {
        .l = {.h = {.op = KERNELET_REC_LAUNCH_EX, .length = sizeof x + 16, .stream = 2},
              .function = 7, .grid = {8, 2, 1}, .block = {64, 1, 1}, .param_bytes = 12},
        .cluster = {cluster[0], cluster[1], cluster[2]}, .flags = flags,
    };
    uint8_t rec_bytes[sizeof x + 16] = {0};

    memcpy(rec_bytes, &x, sizeof x);
    rec_bytes[sizeof x + 11] = 0x5a;
    bb_add(&b, rec_bytes, sizeof rec_bytes);
    g_assert_cmpint(bb_decode(&b, &r, 0), ==, 0);
    return walk(&r, rec, 1);
}

/* VMM requests: each opcode's own fields, multiples of the granule, and a power-of-two
 * alignment; anything else is refused before the daemon sees it. */
static void test_vmm_requests(void)
{
    const uint64_t g = KERNELET_VMM_GRANULE;
    struct {
        uint16_t op;
        struct kernelet_vmm v;
        int ok;
    } cases[] = {
        {KERNELET_OP_VMM_RESERVE, {0, 4 * g, 0, g}, 1},
        {KERNELET_OP_VMM_RESERVE, {0, 4 * g, 0, 3 * g}, 0},     /* alignment */
        {KERNELET_OP_VMM_RESERVE, {0, 4 * g + 1, 0, 0}, 0},     /* granule */
        {KERNELET_OP_VMM_RESERVE, {g, 4 * g, 0, 0}, 0},         /* va unused */
        {KERNELET_OP_VMM_CREATE, {0, g, 0, 0}, 1},
        {KERNELET_OP_VMM_CREATE, {0, 0, 0, 0}, 0},
        {KERNELET_OP_VMM_CREATE, {0, g, 0, 7}, 0},
        {KERNELET_OP_VMM_MAP, {16 * g, g, g, 3}, 1},
        {KERNELET_OP_VMM_MAP, {16 * g + 4096, g, 0, 3}, 0},
        {KERNELET_OP_VMM_UNMAP, {16 * g, g, 0, 0}, 1},
        {KERNELET_OP_VMM_UNMAP, {16 * g, g, g, 0}, 0},
        {KERNELET_OP_VMM_RELEASE, {0, 0, 0, 3}, 1},
        {KERNELET_OP_VMM_FREE, {16 * g, 0, 0, 0}, 1},
        {KERNELET_OP_VMM_FREE, {16 * g, g, 0, 0}, 0},
    };
    struct kproto_request r;

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        g_assert_cmpint(decode(cases[i].op, &cases[i].v, sizeof cases[i].v, &r), ==,
                        cases[i].ok ? 0 : KPROTO_EINVAL);
    g_assert_cmpint(decode(KERNELET_OP_VMM_CREATE, &cases[4].v, 24, &r), ==, KPROTO_EINVAL);
}

/* TENSOR_MAP_ENCODE: known kinds and ranks, and no entry past what the rank and kind use
 * (the daemon hands the arrays to the driver as they are). */
static void test_tensor_map_request(void)
{
    const struct kernelet_tensor_map tiled = {
        .kind = KERNELET_TENSOR_MAP_TILED, .rank = 2, .global_address = 0x10000,
        .global_dim = {64, 64}, .global_strides = {256}, .box_dim = {32, 32},
        .element_strides = {1, 1},
    };
    struct kernelet_tensor_map m;
    struct kproto_request r;

    g_assert_cmpint(decode(KERNELET_OP_TENSOR_MAP_ENCODE, &tiled, sizeof tiled, &r), ==, 0);
    g_assert_cmpuint(r.u.tensor_map.global_dim[1], ==, 64);
    m = tiled, m.kind = 0;
    g_assert_cmpint(decode(KERNELET_OP_TENSOR_MAP_ENCODE, &m, sizeof m, &r), ==, KPROTO_EINVAL);
    m = tiled, m.rank = 6;
    g_assert_cmpint(decode(KERNELET_OP_TENSOR_MAP_ENCODE, &m, sizeof m, &r), ==, KPROTO_EINVAL);
    m = tiled, m.global_dim[2] = 1;                 /* past rank 2 */
    g_assert_cmpint(decode(KERNELET_OP_TENSOR_MAP_ENCODE, &m, sizeof m, &r), ==, KPROTO_EINVAL);
    m = tiled, m.global_strides[1] = 1;             /* a rank-2 map has one stride */
    g_assert_cmpint(decode(KERNELET_OP_TENSOR_MAP_ENCODE, &m, sizeof m, &r), ==, KPROTO_EINVAL);
    m = tiled, m.kind = KERNELET_TENSOR_MAP_IM2COL; /* boxes are for tiled maps only */
    g_assert_cmpint(decode(KERNELET_OP_TENSOR_MAP_ENCODE, &m, sizeof m, &r), ==, KPROTO_EINVAL);
    m = tiled, m.kind = KERNELET_TENSOR_MAP_REPLACE_ADDRESS;
    g_assert_cmpint(decode(KERNELET_OP_TENSOR_MAP_ENCODE, &m, sizeof m, &r), ==, KPROTO_EINVAL);
    m = (struct kernelet_tensor_map){.kind = KERNELET_TENSOR_MAP_REPLACE_ADDRESS,
                                     .global_address = 0x20000};
    g_assert_cmpint(decode(KERNELET_OP_TENSOR_MAP_ENCODE, &m, sizeof m, &r), ==, 0);
    g_assert_cmpint(decode(KERNELET_OP_TENSOR_MAP_ENCODE, &tiled, sizeof tiled - 1, &r), ==,
                    KPROTO_EINVAL);
}

/* LAUNCH_EX: clusters that tile the grid and the cooperative flag are decoded into the
 * launch; clusters that do not tile it, empty or too large ones, and unknown flags are
 * refused. A plain LAUNCH decodes as clusters of one block. */
static void test_launch_ex(void)
{
    struct kproto_record rec;

    g_assert_cmpint(launch_ex_walk((uint32_t[3]){2, 2, 1}, KERNELET_LAUNCH_COOPERATIVE, &rec),
                    ==, 1);
    g_assert_cmpuint(rec.op, ==, KERNELET_REC_LAUNCH_EX);
    g_assert_cmpuint(rec.u.launch.cluster[0], ==, 2);
    g_assert_cmpuint(rec.u.launch.cluster[1], ==, 2);
    g_assert_cmpuint(rec.u.launch.flags, ==, KERNELET_LAUNCH_COOPERATIVE);
    g_assert_cmpuint(rec.u.launch.rec.function, ==, 7);
    g_assert_cmpuint(rec.u.launch.params[11], ==, 0x5a);
    g_assert_cmpint(launch_ex_walk((uint32_t[3]){3, 1, 1}, 0, &rec), ==, KPROTO_EINVAL);
    g_assert_cmpint(launch_ex_walk((uint32_t[3]){0, 1, 1}, 0, &rec), ==, KPROTO_EINVAL);
    g_assert_cmpint(launch_ex_walk((uint32_t[3]){8, 2, 2}, 0, &rec), ==, KPROTO_EINVAL);
    g_assert_cmpint(launch_ex_walk((uint32_t[3]){1, 1, 1}, 0x2, &rec), ==, KPROTO_EINVAL);

    struct batch_builder b = {0};
    struct kproto_request r;
    uint8_t plain[128];
    size_t n;
    launch_rec(plain, &n, 8);
    bb_add(&b, plain, n);
    g_assert_cmpint(bb_decode(&b, &r, 0), ==, 0);
    g_assert_cmpint(walk(&r, &rec, 1), ==, 1);
    g_assert_cmpuint(rec.u.launch.cluster[0] * rec.u.launch.cluster[1] * rec.u.launch.cluster[2],
                     ==, 1);
    g_assert_cmpuint(rec.u.launch.flags, ==, 0);
}

static void test_batch_records(void)
{
    struct batch_builder b = {0};
    struct kproto_request r;
    struct kproto_record recs[8];
    uint8_t rec[256];
    size_t n;

    launch_rec(rec, &n, 20);
    g_assert_cmpuint(n, ==, 56 + 24);
    bb_add(&b, rec, n);
    struct kernelet_rec_copy c = {
        .h = {.op = KERNELET_REC_COPY, .length = sizeof c, .stream = 5},
        .kind = KERNELET_COPY_HTOD, .region = 1, .dst = 0x1000, .src = 64, .width = 256,
        .height = 1, .dst_pitch = 256, .src_pitch = 256,
    };
    bb_add(&b, &c, sizeof c);
    struct kernelet_rec_memset m = {
        .h = {.op = KERNELET_REC_MEMSET, .length = sizeof m}, .dst = 0x2000, .pitch = 64,
        .width = 16, .height = 2, .value = 0xabcd, .elem_size = 2,
    };
    bb_add(&b, &m, sizeof m);
    struct kernelet_rec_event e = {.h = {.op = KERNELET_REC_EVENT_RECORD, .length = sizeof e},
                                   .event = 3};
    bb_add(&b, &e, sizeof e);
    g_assert_cmpint(bb_decode(&b, &r, 0), ==, 0);
    g_assert_cmpint(walk(&r, recs, 8), ==, 4);
    g_assert_cmpuint(recs[0].op, ==, KERNELET_REC_LAUNCH);
    g_assert_cmpuint(recs[0].stream, ==, 5);
    g_assert_cmpuint(recs[0].u.launch.rec.param_bytes, ==, 20);
    g_assert_cmpuint(recs[0].u.launch.params[19], ==, 20);
    g_assert_cmpuint(recs[1].u.copy.rec.dst, ==, 0x1000);
    g_assert_cmpuint(recs[2].u.memset.value, ==, 0xabcd);
    g_assert_cmpuint(recs[3].u.event.event, ==, 3);

    /* The count must match the records exactly. */
    b.count = 5; /* one record missing */
    g_assert_cmpint(bb_decode(&b, &r, 0), ==, 0);
    g_assert_cmpint(walk(&r, recs, 8), ==, KPROTO_EINVAL);
    b.count = 100; /* cannot fit in the payload at all: refused before walking */
    g_assert_cmpint(bb_decode(&b, &r, 0), ==, KPROTO_EINVAL);
    b.count = 3;
    g_assert_cmpint(bb_decode(&b, &r, 0), ==, 0);
    g_assert_cmpint(walk(&r, recs, 8), ==, KPROTO_EINVAL); /* trailing record */
    b.count = 4;
    g_assert_cmpint(bb_decode(&b, &r, 0x10), ==, KPROTO_EINVAL); /* unknown flag */
    g_assert_cmpint(bb_decode(&b, &r, KERNELET_BATCH_COMPLETE), ==, 0);
}

/* Each malformed record, alone in a batch, must be refused. */
static void expect_bad_record(const void *rec, size_t n)
{
    struct batch_builder b = {0};
    struct kproto_request r;
    struct kproto_record recs[2];

    bb_add(&b, rec, n);
    if (bb_decode(&b, &r, 0) == 0)
        g_assert_cmpint(walk(&r, recs, 2), ==, KPROTO_EINVAL);
}

static void test_bad_records(void)
{
    uint8_t rec[256];
    size_t n;
    struct kernelet_rec_launch *l = (void *)rec;

    launch_rec(rec, &n, 12);
    l->h.length = 60; /* not a multiple of 8 */
    expect_bad_record(rec, n);
    launch_rec(rec, &n, 12);
    l->param_bytes = 40; /* more than the record holds */
    expect_bad_record(rec, n);
    launch_rec(rec, &n, 12);
    l->grid[1] = 0;
    expect_bad_record(rec, n);
    launch_rec(rec, &n, 12);
    l->h.flags = 1;
    expect_bad_record(rec, n);
    launch_rec(rec, &n, 12);
    l->h.op = 77;
    expect_bad_record(rec, n);
    launch_rec(rec, &n, 12);
    l->function = 0;
    expect_bad_record(rec, n);
    launch_rec(rec, &n, 12);
    l->h.length = 4096; /* beyond the payload */
    expect_bad_record(rec, n);

    struct kernelet_rec_copy c = {
        .h = {.op = KERNELET_REC_COPY, .length = sizeof c}, .kind = KERNELET_COPY_DTOD,
        .dst = 0, .src = 0, .width = 100, .height = 3, .dst_pitch = 50, .src_pitch = 100,
    };
    expect_bad_record(&c, sizeof c); /* pitch below width */
    c.dst_pitch = 100;
    c.width = UINT64_MAX / 2;
    c.dst_pitch = c.src_pitch = UINT64_MAX / 2;
    expect_bad_record(&c, sizeof c); /* overflowing span */
    c.width = 10;
    c.dst_pitch = c.src_pitch = 10;
    c.region = 4;
    expect_bad_record(&c, sizeof c); /* DTOD naming a region */
    c.region = 0;
    c.kind = 9;
    expect_bad_record(&c, sizeof c);
    c.kind = KERNELET_COPY_DTOH;
    c.region = KERNELET_REGION_INLINE;
    expect_bad_record(&c, sizeof c); /* inline data only for HTOD */

    struct kernelet_rec_memset m = {
        .h = {.op = KERNELET_REC_MEMSET, .length = sizeof m}, .dst = 1, .pitch = 8, .width = 8,
        .height = 1, .value = 0x100, .elem_size = 1,
    };
    expect_bad_record(&m, sizeof m); /* value too wide */
    m.value = 1;
    m.elem_size = 3;
    expect_bad_record(&m, sizeof m);
    struct kernelet_rec_event e = {.h = {.op = KERNELET_REC_STREAM_WAIT, .length = sizeof e}};
    expect_bad_record(&e, sizeof e); /* event 0 */
}

static void test_inline_copy(void)
{
    struct batch_builder b = {0};
    struct kproto_request r;
    struct kproto_record recs[2];
    uint8_t rec[128] = {0};
    struct kernelet_rec_copy c = {
        .h = {.op = KERNELET_REC_COPY, .length = sizeof c + 16}, .kind = KERNELET_COPY_HTOD,
        .region = KERNELET_REGION_INLINE, .dst = 0x40, .width = 5, .height = 2,
        .dst_pitch = 8, .src_pitch = 5,
    };
    memcpy(rec, &c, sizeof c);
    memcpy(rec + sizeof c, "abcdefghij", 10);
    bb_add(&b, rec, sizeof c + 16);
    g_assert_cmpint(bb_decode(&b, &r, 0), ==, 0);
    g_assert_cmpint(walk(&r, recs, 2), ==, 1);
    g_assert_cmpmem(recs[0].u.copy.inline_data, 10, "abcdefghij", 10);

    uint64_t sd, ss;
    g_assert_cmpint(kproto_copy_spans(&recs[0].u.copy.rec, &sd, &ss, NULL, 0), ==, 0);
    g_assert_cmpuint(sd, ==, 8 + 5);  /* pitch * (height - 1) + width */
    g_assert_cmpuint(ss, ==, 10);

    c.src_pitch = 6; /* inline rows must be packed */
    memcpy(rec, &c, sizeof c);
    expect_bad_record(rec, sizeof c + 16);
}

static void test_builder_and_responses(void)
{
    struct kproto_msg m;
    static uint8_t out[KERNELET_MAX_REQUEST];
    struct kernelet_function f = {.function = 1, .n_params = 2, .param_bytes = 16};
    struct kernelet_param prm[2] = {{0, 8}, {8, 4}};
    char err[128];

    kproto_msg_begin(&m, out, sizeof out, KERNELET_OP_FUNCTION_GET, 9, KERNELET_ST_OK);
    g_assert_cmpint(kproto_msg_put(&m, &f, sizeof f, 1), ==, 0);
    g_assert_cmpint(kproto_msg_put(&m, prm, sizeof prm, 8), ==, 0);
    g_assert_cmpuint(kproto_msg_end(&m), ==, KERNELET_HDR_SIZE + sizeof f + sizeof prm);
    g_assert_cmpint(kproto_response_check(KERNELET_OP_FUNCTION_GET, out + KERNELET_HDR_SIZE,
                                          m.len - KERNELET_HDR_SIZE, err, sizeof err), ==, 0);
    prm[1].offset = 14; /* 14 + 4 > 16 */
    memcpy(out + KERNELET_HDR_SIZE + sizeof f, prm, sizeof prm);
    g_assert_cmpint(kproto_response_check(KERNELET_OP_FUNCTION_GET, out + KERNELET_HDR_SIZE,
                                          m.len - KERNELET_HDR_SIZE, err, sizeof err),
                    ==, KPROTO_EINVAL);
    g_assert_cmpint(kproto_response_check(KERNELET_OP_MEM_ALLOC, out, 8, err, sizeof err),
                    ==, 0);
    g_assert_cmpint(kproto_response_check(KERNELET_OP_MEM_ALLOC, out, 9, err, sizeof err),
                    ==, KPROTO_EINVAL);
    g_assert_cmpint(kproto_response_check(KERNELET_OP_CTX_SYNC, out, 0, err, sizeof err),
                    ==, 0);

    /* Padding and overflow of the builder. */
    kproto_msg_begin(&m, out, 40, KERNELET_OP_MEM_ALLOC, 1, 0);
    g_assert_cmpint(kproto_msg_put(&m, "abc", 3, 8), ==, 0);
    g_assert_cmpuint(m.len, ==, 32);
    g_assert_cmpuint(out[27], ==, 0);
    g_assert_cmpint(kproto_msg_put(&m, "abcdefghi", 9, 1), ==, KPROTO_ERANGE);
    g_assert_cmpuint(m.len, ==, 32);
    g_assert_nonnull(kproto_msg_reserve(&m, 8));
    g_assert_null(kproto_msg_reserve(&m, 1));
    g_assert_cmpuint(kproto_msg_room(&m), ==, 0);
    g_assert_cmpstr(kproto_opcode_name(KERNELET_OP_LAUNCH_BATCH), ==, "LAUNCH_BATCH");
    g_assert_null(kproto_opcode_name(0x0999));
}

/* Every seed of the fuzz corpus is a well-formed request (so the fuzzer starts from the
 * accepting paths), and every record of a seed batch decodes. */
static void test_corpus_seeds(void)
{
    const char *dir = g_getenv("KPROTO_CORPUS");
    const char *seeds[] = {"hello", "hello_tenant", "mem_alloc", "module_load_inline",
                           "function_get", "batch", "admin_set", "event_elapsed",
                           "batch_launch_ex", "shm_map_device", "vmm_reserve", "vmm_free",
                           "vmm_create", "vmm_release", "vmm_map", "vmm_unmap"};

    g_assert_nonnull(dir);
    for (size_t i = 0; i < G_N_ELEMENTS(seeds); i++) {
        g_autofree char *path = g_build_filename(dir, seeds[i], NULL);
        g_autofree char *data = NULL;
        gsize len = 0;
        struct kernelet_req_hdr h;
        struct kproto_request r;
        char err[256] = "";

        g_assert_true(g_file_get_contents(path, &data, &len, NULL));
        g_assert_cmpuint(len, >=, KERNELET_HDR_SIZE);
        g_assert_cmpint(kproto_hdr_get(data, true, &h, err, sizeof err), ==, 0);
        g_assert_cmpuint(h.length, ==, len - KERNELET_HDR_SIZE);
        if (kproto_request_decode(&h, (uint8_t *)data + KERNELET_HDR_SIZE, &r, err,
                                  sizeof err) != 0)
            g_error("seed %s: %s", seeds[i], err);
        if (h.opcode == KERNELET_OP_LAUNCH_BATCH) {
            struct kproto_record recs[8];
            g_assert_cmpint(walk(&r, recs, 8), ==, strcmp(seeds[i], "batch") ? 2 : 7);
        }
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/proto/header", test_header);
    g_test_add_func("/proto/header-guest", test_header_guest);
    g_test_add_func("/proto/batch-frames", test_batch_frames);
    g_test_add_func("/proto/hello", test_hello);
    g_test_add_func("/proto/fixed-sizes", test_fixed_sizes);
    g_test_add_func("/proto/events-streams", test_events_streams);
    g_test_add_func("/proto/tenant-note", test_tenant_note);
    g_test_add_func("/proto/module-and-names", test_module_and_names);
    g_test_add_func("/proto/admin", test_admin);
    g_test_add_func("/proto/batch-records", test_batch_records);
    g_test_add_func("/proto/launch-ex", test_launch_ex);
    g_test_add_func("/proto/vmm-requests", test_vmm_requests);
    g_test_add_func("/proto/tensor-map-request", test_tensor_map_request);
    g_test_add_func("/proto/bad-records", test_bad_records);
    g_test_add_func("/proto/inline-copy", test_inline_copy);
    g_test_add_func("/proto/builder-and-responses", test_builder_and_responses);
    g_test_add_func("/proto/corpus-seeds", test_corpus_seeds);
    return g_test_run();
}
