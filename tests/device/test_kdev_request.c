/*
 * Unit tests of the virtio-kernelet request decoder (hw-virtio-kernelet/kdev_request.c):
 * the answers it gives by itself, and the error status for every kind of bad request.
 */
#include <glib.h>
#include <string.h>

#include "kdev_request.h"
#include "kdev_relay.h"
#include "kernelet/protocol.h"

#define HDR sizeof(struct kernelet_req_hdr)

static struct kdev_state state;
static uint8_t req[KERNELET_MAX_REQUEST + 64];
static uint8_t resp[KERNELET_MAX_RESPONSE];

static void setup(void)
{
    kdev_state_init(&state);
    strcpy(state.gpu.name, "test gpu");
    state.gpu.mem_bytes = 4ull << 30;
    state.gpu.sm_count = 132;
    state.gpu.cc_major = 9;
    state.gpu.cc_minor = 0;
    memset(req, 0, sizeof(req));
    memset(resp, 0xee, sizeof(resp));
}

/* Writes a request header into req and returns the total request length. */
static size_t make_req(uint16_t opcode, uint32_t length, uint64_t id)
{
    kdev_put_le16(req, opcode);
    kdev_put_le16(req + 2, 0);
    kdev_put_le32(req + 4, length);
    kdev_put_le64(req + 8, id);
    kdev_put_le32(req + 16, 0);
    kdev_put_le32(req + 20, 0);
    return HDR + length;
}

static uint32_t resp_status(void) { return kdev_le32(resp + 16); }
static uint32_t resp_length(void) { return kdev_le32(resp + 4); }

/* Sends a request and checks the response's framing; returns its status. */
static uint32_t roundtrip(unsigned vq, size_t req_len, size_t cap)
{
    size_t n = kdev_handle(&state, vq, req, req_len, resp, cap);

    g_assert_cmpuint(n, >=, HDR);
    g_assert_cmpuint(n, <=, cap);
    g_assert_cmpuint(n, ==, HDR + resp_length());
    return resp_status();
}

/* Without kerneletd the device serves exactly what the opcode table says it answers itself,
 * on the queue the table names; everything else is BAD_OPCODE (or, for a launch batch,
 * UNAVAILABLE). An empty payload is malformed for some, but never an unknown opcode. */
static void test_opcode_table(void)
{
    setup();
    for (uint32_t op = 0; op <= UINT16_MAX; op++) {
        const struct kproto_opcode_row *row = kproto_opcode_find((uint16_t)op);
        bool local = kdev_relay_local((uint16_t)op, false);
        bool launch = row && (row->flags & KPROTO_OP_LAUNCH_RING);
        uint32_t on_request, on_launch;

        on_request = roundtrip(KERNELET_VQ_REQUEST, make_req((uint16_t)op, 0, op), sizeof(resp));
        on_launch = roundtrip(KERNELET_VQ_LAUNCH, make_req((uint16_t)op, 0, op), sizeof(resp));
        if ((on_request != KERNELET_ST_BAD_OPCODE) != local ||
            (on_launch != KERNELET_ST_BAD_OPCODE) != launch)
            g_error("opcode %#06x: request queue %u, launch ring %u, table %#x", op,
                    on_request, on_launch, row ? row->flags : 0);
        g_assert_true(kdev_opcode_allowed((uint16_t)op, KERNELET_VQ_REQUEST) ==
                      (row ? (row->flags & KPROTO_OP_GUEST) && !launch : true));
        g_assert_false(kdev_opcode_allowed((uint16_t)op, KERNELET_VQ_COUNT));
    }
    /* CONTEXT_CLOSE goes to a daemon that keeps contexts apart. */
    g_assert_false(kdev_relay_local(KERNELET_OP_CONTEXT_CLOSE, true));
    g_assert_true(kdev_relay_local(KERNELET_OP_GET_STATS, true));
}

static void test_get_info(void)
{
    setup();
    state.policy.weight = 250;
    state.policy.priority = 3;
    size_t len = make_req(KERNELET_OP_GET_INFO, 0, 0x1122334455667788ull);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp)), ==, KERNELET_ST_OK);
    g_assert_cmpuint(kdev_le16(resp), ==, KERNELET_OP_GET_INFO);
    g_assert_cmpuint(kdev_le64(resp + 8), ==, 0x1122334455667788ull);
    g_assert_cmpuint(resp_length(), ==, sizeof(struct kernelet_info));
    const uint8_t *info = resp + HDR;
    g_assert_cmpuint(kdev_le32(info + offsetof(struct kernelet_info, proto_version)), ==,
                     KERNELET_PROTO_VERSION);
    g_assert_cmpuint(kdev_le32(info + offsetof(struct kernelet_info, flags)), ==,
                     KERNELET_INFO_SLICING);
    g_assert_cmpuint(kdev_le64(info + offsetof(struct kernelet_info, gpu_mem_bytes)), ==,
                     4ull << 30);
    g_assert_cmpuint(kdev_le32(info + offsetof(struct kernelet_info, gpu_sm_count)), ==, 132);
    g_assert_cmpuint(kdev_le16(info + offsetof(struct kernelet_info, gpu_cc_major)), ==, 9);
    g_assert_cmpuint(kdev_le32(info + offsetof(struct kernelet_info, weight)), ==, 250);
    g_assert_cmpuint(kdev_le32(info + offsetof(struct kernelet_info, priority)), ==, 3);
    g_assert_cmpuint(kdev_le32(info + offsetof(struct kernelet_info, max_inflight)), ==,
                     KDEV_INFLIGHT_DEFAULT);
    g_assert_cmpstr((const char *)info + offsetof(struct kernelet_info, gpu_name), ==,
                    "test gpu");
    g_assert_cmpuint(state.stats.requests, ==, 1);
    g_assert_cmpuint(state.stats.errors, ==, 0);
}

static void test_hello(void)
{
    setup();
    size_t len = make_req(KERNELET_OP_HELLO, sizeof(struct kernelet_hello), 7);
    kdev_put_le32(req + HDR, KERNELET_PROTO_VERSION);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp)), ==, KERNELET_ST_OK);
    g_assert_cmpuint(resp_length(), ==, sizeof(struct kernelet_info));

    /* a guest speaking another major version is told so */
    kdev_put_le32(req + HDR, (KERNELET_PROTO_MAJOR + 1) << 16);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp)), ==, KERNELET_ST_VERSION);
    g_assert_cmpuint(resp_length(), ==, 0);

    /* reserved word of the payload must be zero, and the payload must have its size */
    kdev_put_le32(req + HDR, KERNELET_PROTO_VERSION);
    kdev_put_le32(req + HDR + 4, 1);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp)), ==,
                     KERNELET_ST_BAD_REQUEST);
    len = make_req(KERNELET_OP_HELLO, 4, 7);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp)), ==,
                     KERNELET_ST_BAD_REQUEST);
    g_assert_cmpuint(state.stats.errors, ==, 3);
}

static void test_get_stats(void)
{
    setup();
    state.stats.bytes_copied = 4096;
    size_t len = make_req(0x7777, 0, 1);
    roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp));  /* one error */
    len = make_req(KERNELET_OP_GET_STATS, 0, 2);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp)), ==, KERNELET_ST_OK);
    g_assert_cmpuint(resp_length(), ==, sizeof(struct kernelet_stats));
    g_assert_cmpuint(kdev_le64(resp + HDR + 0), ==, 2);   /* requests, this one included */
    g_assert_cmpuint(kdev_le64(resp + HDR + 8), ==, 1);   /* errors */
    g_assert_cmpuint(kdev_le64(resp + HDR + 32), ==, 4096);
}

static void test_unknown_opcode(void)
{
    setup();
    for (unsigned op = 0; op < 0x400; op += (op < 0x10 ? 1 : 0x11)) {
        size_t len = make_req((uint16_t)op, 0, op);
        uint32_t st = roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp));
        if (op == KERNELET_OP_GET_INFO || op == KERNELET_OP_GET_STATS ||
            op == KERNELET_OP_CONTEXT_CLOSE)
            g_assert_cmpuint(st, ==, KERNELET_ST_OK);
        else if (op == KERNELET_OP_HELLO)
            g_assert_cmpuint(st, ==, KERNELET_ST_BAD_REQUEST);
        else
            g_assert_cmpuint(st, ==, KERNELET_ST_BAD_OPCODE);
        g_assert_cmpuint(kdev_le64(resp + 8), ==, op);
    }
    /* a queue index the device does not have */
    size_t len = make_req(KERNELET_OP_GET_INFO, 0, 1);
    g_assert_cmpuint(roundtrip(5, len, sizeof(resp)), ==, KERNELET_ST_BAD_OPCODE);
}

static void test_bad_headers(void)
{
    setup();
    /* shorter than a header: answered, with id 0 since none could be read */
    make_req(KERNELET_OP_GET_INFO, 0, 99);
    for (size_t n = 0; n < HDR; n++) {
        g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, n, sizeof(resp)), ==,
                         KERNELET_ST_BAD_REQUEST);
        g_assert_cmpuint(kdev_le64(resp + 8), ==, 0);
    }
    /* length field disagreeing with the bytes that arrived, both ways */
    size_t len = make_req(KERNELET_OP_GET_INFO, 8, 1);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len - 1, sizeof(resp)), ==,
                     KERNELET_ST_BAD_REQUEST);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len + 1, sizeof(resp)), ==,
                     KERNELET_ST_BAD_REQUEST);
    make_req(KERNELET_OP_GET_INFO, 0xffffffffu, 1);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, HDR, sizeof(resp)), ==,
                     KERNELET_ST_BAD_REQUEST);
    /* GET_INFO with a payload */
    len = make_req(KERNELET_OP_GET_INFO, 8, 1);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp)), ==,
                     KERNELET_ST_BAD_REQUEST);
    /* flags, status and reserved must be zero */
    const size_t fields[] = { 2, 16, 20 };
    for (size_t i = 0; i < G_N_ELEMENTS(fields); i++) {
        len = make_req(KERNELET_OP_GET_INFO, 0, 1);
        req[fields[i]] = 1;
        g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp)), ==,
                         KERNELET_ST_BAD_REQUEST);
    }
    /* more than the device accepts in one request */
    len = make_req(KERNELET_OP_GET_INFO, KERNELET_MAX_REQUEST, 1);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp)), ==,
                     KERNELET_ST_BAD_REQUEST);
}

static void test_small_response(void)
{
    setup();
    size_t len = make_req(KERNELET_OP_GET_INFO, 0, 3);
    /* no room for a header: nothing is written, the error is counted */
    g_assert_cmpuint(kdev_handle(&state, KERNELET_VQ_REQUEST, req, len, resp, HDR - 1), ==, 0);
    g_assert_cmpuint(resp[0], ==, 0xee);
    g_assert_cmpuint(state.stats.errors, ==, 1);
    /* room for the header only */
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, HDR + 10), ==, KERNELET_ST_TOO_SMALL);
    g_assert_cmpuint(resp[HDR], ==, 0xee);
    len = make_req(KERNELET_OP_GET_STATS, 0, 3);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, HDR), ==, KERNELET_ST_TOO_SMALL);
}

static void test_launch_ring(void)
{
    setup();
    size_t len = make_req(KERNELET_OP_LAUNCH_BATCH, 64, 10);
    /* without kerneletd there is nobody to run a launch */
    g_assert_cmpuint(roundtrip(KERNELET_VQ_LAUNCH, len, sizeof(resp)), ==,
                     KERNELET_ST_UNAVAILABLE);
    /* launches belong on the launch ring only, control requests on the request queue */
    g_assert_cmpuint(roundtrip(KERNELET_VQ_REQUEST, len, sizeof(resp)), ==,
                     KERNELET_ST_BAD_OPCODE);
    len = make_req(KERNELET_OP_GET_INFO, 0, 11);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_LAUNCH, len, sizeof(resp)), ==,
                     KERNELET_ST_BAD_OPCODE);
    len = make_req(KERNELET_OP_LAUNCH_BATCH, 0, 12);
    g_assert_cmpuint(roundtrip(KERNELET_VQ_LAUNCH, len, sizeof(resp)), ==,
                     KERNELET_ST_BAD_REQUEST);
    g_assert_cmpuint(state.stats.errors, ==, 4);
}

static void test_policy_check(void)
{
    char err[128];
    struct kdev_policy p;

    setup();
    p = state.policy;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), ==, 0);
    p.weight = 0;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), <, 0);
    g_assert_nonnull(strstr(err, "weight"));
    p.weight = KDEV_WEIGHT_MAX + 1;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), <, 0);
    p.weight = KDEV_WEIGHT_MAX;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), ==, 0);
    p.priority = KDEV_PRIORITY_MAX + 1;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), <, 0);
    g_assert_nonnull(strstr(err, "priority"));
    p.priority = KDEV_PRIORITY_MAX;
    p.max_inflight = 0;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), <, 0);
    g_assert_nonnull(strstr(err, "max-inflight"));
    p.max_inflight = KDEV_INFLIGHT_MAX + 1;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), <, 0);
    p.max_inflight = 1;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), ==, 0);
    p.mem_quota = KDEV_MEM_QUOTA_MAX + 1;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), <, 0);
    g_assert_nonnull(strstr(err, "mem-quota"));
    p.mem_quota = KDEV_MEM_QUOTA_MAX;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), ==, 0);
    p.kernel_time_limit_ms = KDEV_TIME_LIMIT_MAX_MS + 1;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), <, 0);
    g_assert_nonnull(strstr(err, "kernel-time-limit-ms"));
    p.kernel_time_limit_ms = KDEV_TIME_LIMIT_MAX_MS;
    g_assert_cmpint(kdev_policy_check(&p, err, sizeof(err)), ==, 0);
}

static void test_config_and_quota(void)
{
    struct kernelet_virtio_config cfg;
    const uint8_t *b = (const uint8_t *)&cfg;

    setup();
    kdev_fill_config(&state, &cfg);
    g_assert_cmpuint(kdev_le32(b), ==, KERNELET_PROTO_VERSION);
    g_assert_cmpuint(kdev_le32(b + 8), ==, KERNELET_MAX_REQUEST);
    g_assert_cmpuint(kdev_le64(b + 16), ==, 4ull << 30);
    g_assert_cmpuint(kdev_le32(b + 24), ==, 132);
    g_assert_cmpstr(cfg.gpu_name, ==, "test gpu");
    /* a quota below the GPU's memory is what the guest is offered */
    state.policy.mem_quota = 1ull << 30;
    state.policy.slicing = false;
    kdev_fill_config(&state, &cfg);
    g_assert_cmpuint(kdev_le64(b + 16), ==, 1ull << 30);
    g_assert_cmpuint(kdev_le32(b + 4) & KERNELET_INFO_SLICING, ==, 0);
    /* a quota above it changes nothing */
    state.policy.mem_quota = 64ull << 30;
    g_assert_cmpuint(kdev_offered_mem(&state), ==, 4ull << 30);
}

/* Random bytes, random lengths and capacities: the decoder must stay inside its buffers
 * (checked by ASan in the sanitizer build) and always frame its answer correctly. */
static void test_random_requests(void)
{
    GRand *rng = g_rand_new_with_seed(20261122);

    setup();
    for (int i = 0; i < 20000; i++) {
        size_t len = (size_t)g_rand_int_range(rng, 0, 200);
        for (size_t j = 0; j < len; j++)
            req[j] = (uint8_t)g_rand_int(rng);
        if (len >= HDR && g_rand_boolean(rng)) {
            /* make the header plausible half of the time so deeper paths run */
            kdev_put_le16(req, (uint16_t)g_rand_int_range(rng, 0, 4));
            kdev_put_le16(req + 2, 0);
            kdev_put_le32(req + 4, (uint32_t)(len - HDR));
            memset(req + 16, 0, 8);
        }
        size_t cap = (size_t)g_rand_int_range(rng, 0, 300);
        unsigned vq = (unsigned)g_rand_int_range(rng, 0, 3);
        size_t n = kdev_handle(&state, vq, req, len, resp, cap);
        if (cap < HDR) {
            g_assert_cmpuint(n, ==, 0);
        } else {
            g_assert_cmpuint(n, ==, HDR + resp_length());
            g_assert_cmpuint(n, <=, cap);
            g_assert_cmpuint(resp_status(), <=, KERNELET_ST_QUOTA);
        }
    }
    g_assert_cmpuint(state.stats.requests, ==, 20000);
    g_rand_free(rng);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kdev/get_info", test_get_info);
    g_test_add_func("/kdev/hello", test_hello);
    g_test_add_func("/kdev/get_stats", test_get_stats);
    g_test_add_func("/kdev/unknown_opcode", test_unknown_opcode);
    g_test_add_func("/kdev/bad_headers", test_bad_headers);
    g_test_add_func("/kdev/small_response", test_small_response);
    g_test_add_func("/kdev/launch_ring", test_launch_ring);
    g_test_add_func("/kdev/policy_check", test_policy_check);
    g_test_add_func("/kdev/config_and_quota", test_config_and_quota);
    g_test_add_func("/kdev/random_requests", test_random_requests);
    g_test_add_func("/kdev/opcode_table", test_opcode_table);
    return g_test_run();
}
