/*
 * Unit tests of the bulk-data chain format of virtio-kernelet (hw-virtio-kernelet/
 * kdev_request.c): the transfer descriptor checked against the chain, the diagnostic
 * DIAG_ECHO_BULK through scattered segments, hold times and the one-shot test faults.
 */
#include <glib.h>
#include <string.h>

#include "kdev_request.h"

#define HDR sizeof(struct kernelet_req_hdr)
#define XFER sizeof(struct kernelet_xfer)

/* A chain scattered over segments of random sizes, as a guest's scatter list would be:
 * readable and writable parts are flat arrays here, but every callback copies at most
 * one segment, so the decoder must cope with short copies by asking again. */
struct seg_chain {
    GByteArray *out;     /* readable bytes */
    GByteArray *in;      /* writable bytes */
    size_t seg;          /* segment size for copies */
    size_t fail_after;   /* readable offsets at or beyond this cannot be reached */
};

static size_t seg_read(void *opaque, size_t off, void *buf, size_t len)
{
    struct seg_chain *s = opaque;
    size_t done = 0;

    while (done < len && off + done < s->fail_after) {
        size_t n = MIN(MIN(s->seg, len - done), s->fail_after - (off + done));
        memcpy((uint8_t *)buf + done, s->out->data + off + done, n);
        done += n;
    }
    return done;
}

static size_t seg_write(void *opaque, size_t off, const void *buf, size_t len)
{
    struct seg_chain *s = opaque;

    for (size_t done = 0; done < len;) {
        size_t n = MIN(s->seg, len - done);
        memcpy(s->in->data + off + done, (const uint8_t *)buf + done, n);
        done += n;
    }
    return len;
}

static struct kdev_state state;

static void setup(void)
{
    kdev_state_init(&state);
    strcpy(state.gpu.name, "bulk gpu");
    state.gpu.sm_count = 8;
}

/* Builds a chain: header (with xfer when resp_bytes != 0), payload, h2d bulk; writable
 * part of resp_room + d2h bytes filled with 0xee. xfer fields are taken as given so that
 * tests can make them disagree with the chain. */
static struct seg_chain make_chain(uint16_t op, const void *payload, uint32_t plen,
                                   const struct kernelet_xfer *x, const uint8_t *h2d,
                                   size_t h2d_len, size_t resp_room, size_t d2h_room)
{
    struct seg_chain s = { g_byte_array_new(), g_byte_array_new(), 4093, SIZE_MAX };
    uint8_t h[HDR] = { 0 }, xb[XFER];

    kdev_put_le16(h, op);
    kdev_put_le16(h + 2, x ? KERNELET_REQ_F_XFER : 0);
    kdev_put_le32(h + 4, plen);
    kdev_put_le64(h + 8, 0x1234);
    g_byte_array_append(s.out, h, HDR);
    if (x) {
        kdev_put_le32(xb, x->context);
        kdev_put_le32(xb + 4, x->resp_bytes);
        kdev_put_le32(xb + 8, x->h2d_bytes);
        kdev_put_le32(xb + 12, x->d2h_bytes);
        g_byte_array_append(s.out, xb, XFER);
    }
    if (plen)
        g_byte_array_append(s.out, payload, plen);
    if (h2d_len)
        g_byte_array_append(s.out, h2d, (guint)h2d_len);
    g_byte_array_set_size(s.in, (guint)(resp_room + d2h_room));
    memset(s.in->data, 0xee, resp_room + d2h_room);
    return s;
}

static size_t serve(struct seg_chain *s, unsigned vq)
{
    struct kdev_chain c = { s->out->len, s->in->len, seg_read, seg_write, s };

    return kdev_serve(&state, vq, &c);
}

static uint32_t hold(struct seg_chain *s, unsigned vq)
{
    struct kdev_chain c = { s->out->len, s->in->len, seg_read, seg_write, s };

    return kdev_hold_ms(vq, &c);
}

static void free_chain(struct seg_chain *s)
{
    g_byte_array_free(s->out, TRUE);
    g_byte_array_free(s->in, TRUE);
}

static uint32_t status_of(const struct seg_chain *s) { return kdev_le32(s->in->data + 16); }

/* FNV-1a written out from its definition, to check the device's checksum against. */
static uint64_t fnv_reference(const uint8_t *p, size_t n)
{
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static uint8_t *random_bytes(size_t n, guint32 seed)
{
    GRand *rng = g_rand_new_with_seed(seed);
    uint8_t *p = g_malloc(n ? n : 1);

    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)g_rand_int(rng);
    g_rand_free(rng);
    return p;
}

static void test_fnv_vectors(void)
{
    /* published FNV-1a 64-bit test vectors */
    g_assert_cmphex(kdev_fnv1a64(KDEV_FNV1A64_INIT, (const uint8_t *)"", 0), ==,
                    0xcbf29ce484222325ull);
    g_assert_cmphex(kdev_fnv1a64(KDEV_FNV1A64_INIT, (const uint8_t *)"a", 1), ==,
                    0xaf63dc4c8601ec8cull);
    g_assert_cmphex(kdev_fnv1a64(KDEV_FNV1A64_INIT, (const uint8_t *)"foobar", 6), ==,
                    0x85944171f73967e8ull);
}

/* Echo of `n` bytes into `d2h` bytes of room; checks every byte and the answer. */
static void check_echo(size_t n, size_t d2h, size_t resp_room)
{
    uint8_t *data = random_bytes(n, (guint32)(n + d2h));
    struct kernelet_diag_echo e = { 0, 0 };
    struct kernelet_xfer x = { 77, (uint32_t)resp_room, (uint32_t)n, (uint32_t)d2h };
    struct seg_chain s = make_chain(KERNELET_OP_DIAG_ECHO_BULK, &e, sizeof(e), &x, data, n,
                                    resp_room, d2h);
    size_t copied = MIN(n, d2h);
    size_t used = serve(&s, KERNELET_VQ_REQUEST);
    const uint8_t *res = s.in->data + HDR;

    g_assert_cmpuint(status_of(&s), ==, KERNELET_ST_OK);
    g_assert_cmpuint(kdev_le32(s.in->data + 4), ==, sizeof(struct kernelet_diag_echo_result));
    g_assert_cmpuint(used, ==, copied ? resp_room + copied : HDR + 32);
    g_assert_cmpuint(kdev_le64(res), ==, n);
    g_assert_cmpuint(kdev_le64(res + 8), ==, copied);
    g_assert_cmphex(kdev_le64(res + 16), ==, fnv_reference(data, n));
    g_assert_cmpuint(kdev_le32(res + 24), ==, 77);
    g_assert_true(memcmp(s.in->data + resp_room, data, copied) == 0);
    for (size_t i = copied; i < d2h; i++)
        g_assert_cmpuint(s.in->data[resp_room + i], ==, 0xee);
    /* the response part past the answer is left alone */
    for (size_t i = HDR + 32; i < resp_room; i++)
        g_assert_cmpuint(s.in->data[i], ==, 0xee);
    g_free(data);
    free_chain(&s);
}

static void test_echo(void)
{
    setup();
    check_echo(1000000, 1000000, 4096);
    check_echo(KERNELET_MAX_BULK / 2, KERNELET_MAX_BULK / 2, 64);  /* the limit */
    check_echo(70000, 5000, 56);   /* d2h room smaller: a prefix is copied */
    check_echo(3000, 0, 56);       /* checksum only */
    check_echo(0, 3000, 56);       /* nothing to copy: the d2h room stays untouched */
    check_echo(0, 0, 56);
    g_assert_cmpuint(state.stats.errors, ==, 0);
}

/* One chain that breaks a rule of the transfer descriptor, and the answer expected. */
static void expect_status(uint16_t op, const void *payload, uint32_t plen,
                          struct kernelet_xfer x, size_t h2d_present, size_t resp_room,
                          size_t d2h_room, unsigned vq, uint32_t want)
{
    uint8_t *data = random_bytes(h2d_present, 1);
    struct seg_chain s = make_chain(op, payload, plen, &x, data, h2d_present, resp_room,
                                    d2h_room);
    size_t used = serve(&s, vq);

    g_assert_cmpuint(status_of(&s), ==, want);
    if (want != KERNELET_ST_OK)
        g_assert_cmpuint(used, ==, HDR);
    g_assert_cmpuint(kdev_le64(s.in->data + 8), ==, 0x1234);
    g_free(data);
    free_chain(&s);
}

static void test_xfer_rules(void)
{
    struct kernelet_diag_echo e = { 0, 0 }, slow = { KERNELET_DIAG_MAX_DELAY_MS + 1, 0 };
    struct kernelet_diag_echo res = { 0, 5 };
    const uint32_t bad = KERNELET_ST_BAD_REQUEST, ok = KERNELET_ST_OK;
    const uint16_t echo = KERNELET_OP_DIAG_ECHO_BULK, info = KERNELET_OP_GET_INFO;
    const unsigned rq = KERNELET_VQ_REQUEST;

    setup();
    /* consistent: accepted */
    expect_status(echo, &e, 8, (struct kernelet_xfer){ 1, 64, 100, 100 }, 100, 64, 100, rq, ok);
    /* h2d declared larger or smaller than what the chain holds */
    expect_status(echo, &e, 8, (struct kernelet_xfer){ 1, 64, 101, 100 }, 100, 64, 100, rq, bad);
    expect_status(echo, &e, 8, (struct kernelet_xfer){ 1, 64, 99, 100 }, 100, 64, 100, rq, bad);
    /* writable part != resp_bytes + d2h_bytes */
    expect_status(echo, &e, 8, (struct kernelet_xfer){ 1, 64, 100, 100 }, 100, 64, 101, rq, bad);
    expect_status(echo, &e, 8, (struct kernelet_xfer){ 1, 64, 100, 100 }, 100, 64, 99, rq, bad);
    /* response part below a header */
    expect_status(echo, &e, 8, (struct kernelet_xfer){ 1, 23, 0, 41 }, 0, 23, 41, rq, bad);
    /* more bulk than the device takes in one chain */
    expect_status(echo, &e, 8, (struct kernelet_xfer){ 1, 64, 0, KERNELET_MAX_BULK + 1 }, 0, 64,
                  KERNELET_MAX_BULK + 1, rq, bad);
    expect_status(echo, &e, 8,
                  (struct kernelet_xfer){ 1, 64, KERNELET_MAX_BULK, 1 }, KERNELET_MAX_BULK, 64, 1,
                  rq, bad);
    /* sizes whose sum overflows 32 bits */
    expect_status(echo, &e, 8, (struct kernelet_xfer){ 1, 0xffffffffu, 0, 2 }, 0, 64, 0, rq, bad);
    /* bulk data on an opcode that takes none */
    expect_status(info, NULL, 0, (struct kernelet_xfer){ 1, 200, 8, 0 }, 8, 200, 0, rq, bad);
    expect_status(KERNELET_OP_CONTEXT_CLOSE, NULL, 0, (struct kernelet_xfer){ 1, 64, 0, 8 }, 0,
                  64, 8, rq, bad);
    /* xfer without bulk is a plain request with a context */
    expect_status(info, NULL, 0, (struct kernelet_xfer){ 9, 200, 0, 0 }, 0, 200, 0, rq, ok);
    expect_status(KERNELET_OP_CONTEXT_CLOSE, NULL, 0, (struct kernelet_xfer){ 9, 64, 0, 0 }, 0,
                  64, 0, rq, ok);
    /* echo: wrong payload, too long a delay, reserved bits, wrong queue, small answer room */
    expect_status(echo, &e, 4, (struct kernelet_xfer){ 1, 64, 0, 0 }, 0, 64, 0, rq, bad);
    expect_status(echo, &slow, 8, (struct kernelet_xfer){ 1, 64, 0, 0 }, 0, 64, 0, rq, bad);
    expect_status(echo, &res, 8, (struct kernelet_xfer){ 1, 64, 0, 0 }, 0, 64, 0, rq, bad);
    expect_status(echo, &e, 8, (struct kernelet_xfer){ 1, 64, 0, 0 }, 0, 64, 0,
                  KERNELET_VQ_LAUNCH, KERNELET_ST_BAD_OPCODE);
    expect_status(echo, &e, 8, (struct kernelet_xfer){ 1, 40, 0, 0 }, 0, 40, 0, rq,
                  KERNELET_ST_TOO_SMALL);
    /* a launch batch may carry bulk data; it is refused for want of kerneletd */
    expect_status(KERNELET_OP_LAUNCH_BATCH, &e, 8, (struct kernelet_xfer){ 1, 64, 16, 16 }, 16,
                  64, 16, KERNELET_VQ_LAUNCH, KERNELET_ST_UNAVAILABLE);
}

static void test_unknown_flag_and_truncated_xfer(void)
{
    struct kernelet_xfer x = { 1, 64, 0, 0 };
    struct seg_chain s;

    setup();
    s = make_chain(KERNELET_OP_GET_INFO, NULL, 0, &x, NULL, 0, 64, 0);
    s.out->data[2] |= 2;  /* a flag this version does not define */
    serve(&s, KERNELET_VQ_REQUEST);
    g_assert_cmpuint(status_of(&s), ==, KERNELET_ST_BAD_REQUEST);
    free_chain(&s);
    s = make_chain(KERNELET_OP_GET_INFO, NULL, 0, &x, NULL, 0, 64, 0);
    g_byte_array_set_size(s.out, HDR + 10);  /* flag set, descriptor cut short */
    serve(&s, KERNELET_VQ_REQUEST);
    g_assert_cmpuint(status_of(&s), ==, KERNELET_ST_BAD_REQUEST);
    free_chain(&s);
}

/* Guest memory that cannot be reached in the middle of the bulk data: an error status,
 * no crash, nothing claimed as written. */
static void test_unreachable_bulk(void)
{
    uint8_t *data = random_bytes(50000, 3);
    struct kernelet_diag_echo e = { 0, 0 };
    struct kernelet_xfer x = { 1, 64, 50000, 50000 };
    struct seg_chain s = make_chain(KERNELET_OP_DIAG_ECHO_BULK, &e, 8, &x, data, 50000, 64,
                                    50000);

    setup();
    s.fail_after = HDR + XFER + 8 + 30000;
    g_assert_cmpuint(serve(&s, KERNELET_VQ_REQUEST), ==, HDR);
    g_assert_cmpuint(status_of(&s), ==, KERNELET_ST_BAD_REQUEST);
    g_assert_cmpuint(state.stats.errors, ==, 1);
    g_free(data);
    free_chain(&s);
}

static void test_hold(void)
{
    struct kernelet_diag_echo e = { 250, 0 }, slow = { KERNELET_DIAG_MAX_DELAY_MS + 1, 0 };
    struct kernelet_xfer x = { 1, 64, 0, 0 };
    struct seg_chain s;

    setup();
    s = make_chain(KERNELET_OP_DIAG_ECHO_BULK, &e, 8, &x, NULL, 0, 64, 0);
    g_assert_cmpuint(hold(&s, KERNELET_VQ_REQUEST), ==, 250);
    g_assert_cmpuint(hold(&s, KERNELET_VQ_LAUNCH), ==, 0);
    free_chain(&s);
    s = make_chain(KERNELET_OP_DIAG_ECHO_BULK, &slow, 8, &x, NULL, 0, 64, 0);
    g_assert_cmpuint(hold(&s, KERNELET_VQ_REQUEST), ==, 0);
    free_chain(&s);
    s = make_chain(KERNELET_OP_GET_INFO, NULL, 0, &x, NULL, 0, 64, 0);
    g_assert_cmpuint(hold(&s, KERNELET_VQ_REQUEST), ==, 0);
    free_chain(&s);
    /* holding decides nothing and counts nothing */
    g_assert_cmpuint(state.stats.requests, ==, 0);
}

static void test_faults(void)
{
    struct kernelet_xfer x = { 1, 200, 0, 0 };
    enum kdev_fault f;

    setup();
    for (unsigned i = 0; i < KDEV_FAULT_COUNT; i++) {
        g_assert_cmpint(kdev_fault_parse(kdev_fault_name((enum kdev_fault)i), &f), ==, 0);
        g_assert_cmpuint(f, ==, i);
    }
    g_assert_cmpint(kdev_fault_parse("explode", &f), ==, -EINVAL);

    const struct { enum kdev_fault f; size_t used; uint64_t id; uint32_t len; } cases[] = {
        { KDEV_FAULT_SHORT_USED, 8, 0x1234, 104 },
        { KDEV_FAULT_LONG_USED, 200 + 4096, 0x1234, 104 },
        { KDEV_FAULT_WRONG_ID, HDR + 104, 0x1234 ^ 0x5a5a5a5a5a5a5a5aull, 104 },
        { KDEV_FAULT_BAD_LENGTH, HDR + 104, 0x1234, 104 + 4096 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        struct seg_chain s = make_chain(KERNELET_OP_GET_INFO, NULL, 0, &x, NULL, 0, 200, 0);

        state.fault = cases[i].f;
        g_assert_cmpuint(serve(&s, KERNELET_VQ_REQUEST), ==, cases[i].used);
        g_assert_cmphex(kdev_le64(s.in->data + 8), ==, cases[i].id);
        g_assert_cmpuint(kdev_le32(s.in->data + 4), ==, cases[i].len);
        g_assert_cmpuint(state.fault, ==, KDEV_FAULT_NONE);  /* one-shot */
        /* the next request is answered normally */
        g_assert_cmpuint(serve(&s, KERNELET_VQ_REQUEST), ==, HDR + 104);
        g_assert_cmphex(kdev_le64(s.in->data + 8), ==, 0x1234);
        free_chain(&s);
    }
    /* BROKEN is the QEMU side's to consume */
    struct seg_chain s = make_chain(KERNELET_OP_GET_INFO, NULL, 0, &x, NULL, 0, 200, 0);
    state.fault = KDEV_FAULT_BROKEN;
    g_assert_cmpuint(serve(&s, KERNELET_VQ_REQUEST), ==, HDR + 104);
    g_assert_cmpuint(state.fault, ==, KDEV_FAULT_BROKEN);
    free_chain(&s);
}

static void test_config_bulk_limits(void)
{
    struct kernelet_virtio_config cfg;
    const uint8_t *b = (const uint8_t *)&cfg;

    setup();
    kdev_fill_config(&state, &cfg);
    g_assert_cmpuint(kdev_le32(b + 96), ==, 2u << 20);
    g_assert_cmpuint(kdev_le32(b + 100), ==, 1024);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kdev-bulk/fnv_vectors", test_fnv_vectors);
    g_test_add_func("/kdev-bulk/echo", test_echo);
    g_test_add_func("/kdev-bulk/xfer_rules", test_xfer_rules);
    g_test_add_func("/kdev-bulk/unknown_flag_and_truncated_xfer",
                    test_unknown_flag_and_truncated_xfer);
    g_test_add_func("/kdev-bulk/unreachable_bulk", test_unreachable_bulk);
    g_test_add_func("/kdev-bulk/hold", test_hold);
    g_test_add_func("/kdev-bulk/faults", test_faults);
    g_test_add_func("/kdev-bulk/config_bulk_limits", test_config_bulk_limits);
    return g_test_run();
}
