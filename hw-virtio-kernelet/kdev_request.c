/*
 * kdev_request: decodes and answers one virtio-kernelet request (see kdev_request.h).
 *
 * The guest is not trusted: every length is checked against what actually arrived, and
 * reserved fields must be zero so that later protocol versions can give them meaning.
 */
#include "kdev_request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/protocol.h"

#define HDR_SIZE ((size_t)sizeof(struct kernelet_req_hdr))
#define XFER_SIZE ((size_t)sizeof(struct kernelet_xfer))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

uint16_t kdev_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
uint32_t kdev_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}
uint64_t kdev_le64(const uint8_t *p)
{
    return (uint64_t)kdev_le32(p) | ((uint64_t)kdev_le32(p + 4) << 32);
}
void kdev_put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
void kdev_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
void kdev_put_le64(uint8_t *p, uint64_t v)
{
    kdev_put_le32(p, (uint32_t)v);
    kdev_put_le32(p + 4, (uint32_t)(v >> 32));
}

bool kdev_opcode_allowed(uint16_t opcode, unsigned vq)
{
    const struct kproto_opcode_row *row = kproto_opcode_find(opcode);
    bool launch = vq == KERNELET_VQ_LAUNCH;

    if (vq >= KERNELET_VQ_COUNT)
        return false;
    if (!row)
        return !launch;
    return (row->flags & KPROTO_OP_GUEST) && launch == !!(row->flags & KPROTO_OP_LAUNCH_RING);
}

void kdev_state_init(struct kdev_state *st)
{
    memset(st, 0, sizeof(*st));
    st->policy.weight = KDEV_WEIGHT_DEFAULT;
    st->policy.max_inflight = KDEV_INFLIGHT_DEFAULT;
    st->policy.slicing = true;
}

int kdev_policy_check(const struct kdev_policy *p, char *err, size_t errlen)
{
    if (p->weight < KDEV_WEIGHT_MIN || p->weight > KDEV_WEIGHT_MAX) {
        snprintf(err, errlen, "weight %u is outside %u..%u", p->weight, KDEV_WEIGHT_MIN,
                 KDEV_WEIGHT_MAX);
        return -EINVAL;
    }
    if (p->priority > KDEV_PRIORITY_MAX) {
        snprintf(err, errlen, "priority %u is outside 0..%u", p->priority, KDEV_PRIORITY_MAX);
        return -EINVAL;
    }
    if (p->max_inflight < 1 || p->max_inflight > KDEV_INFLIGHT_MAX) {
        snprintf(err, errlen, "max-inflight %u is outside 1..%u", p->max_inflight,
                 KDEV_INFLIGHT_MAX);
        return -EINVAL;
    }
    if (p->mem_quota > KDEV_MEM_QUOTA_MAX) {
        snprintf(err, errlen, "mem-quota %llu is above %llu (1 PiB); 0 means no quota",
                 (unsigned long long)p->mem_quota, (unsigned long long)KDEV_MEM_QUOTA_MAX);
        return -EINVAL;
    }
    if (p->kernel_time_limit_ms > KDEV_TIME_LIMIT_MAX_MS) {
        snprintf(err, errlen, "kernel-time-limit-ms %u is above %u (a day); 0 means "
                 "kerneletd's default", p->kernel_time_limit_ms, KDEV_TIME_LIMIT_MAX_MS);
        return -EINVAL;
    }
    return 0;
}

uint64_t kdev_offered_mem(const struct kdev_state *st)
{
    uint64_t q = st->policy.mem_quota;

    return (q != 0 && q < st->gpu.mem_bytes) ? q : st->gpu.mem_bytes;
}

static uint32_t info_flags(const struct kdev_state *st)
{
    return (st->backend ? KERNELET_INFO_BACKEND : 0) |
           (st->policy.slicing ? KERNELET_INFO_SLICING : 0);
}

void kdev_fill_config(const struct kdev_state *st, struct kernelet_virtio_config *cfg)
{
    uint8_t *b = (uint8_t *)cfg;

    memset(cfg, 0, sizeof(*cfg));
    kdev_put_le32(b + offsetof(struct kernelet_virtio_config, proto_version),
                  KERNELET_PROTO_VERSION);
    kdev_put_le32(b + offsetof(struct kernelet_virtio_config, flags), info_flags(st));
    kdev_put_le32(b + offsetof(struct kernelet_virtio_config, max_request),
                  KERNELET_MAX_REQUEST);
    kdev_put_le32(b + offsetof(struct kernelet_virtio_config, max_response),
                  KERNELET_MAX_RESPONSE);
    kdev_put_le64(b + offsetof(struct kernelet_virtio_config, gpu_mem_bytes),
                  kdev_offered_mem(st));
    kdev_put_le32(b + offsetof(struct kernelet_virtio_config, gpu_sm_count), st->gpu.sm_count);
    kdev_put_le16(b + offsetof(struct kernelet_virtio_config, gpu_cc_major), st->gpu.cc_major);
    kdev_put_le16(b + offsetof(struct kernelet_virtio_config, gpu_cc_minor), st->gpu.cc_minor);
    memcpy(cfg->gpu_name, st->gpu.name, sizeof(cfg->gpu_name) - 1);
    kdev_put_le32(b + offsetof(struct kernelet_virtio_config, max_bulk), KERNELET_MAX_BULK);
    kdev_put_le32(b + offsetof(struct kernelet_virtio_config, max_segments),
                  KERNELET_MAX_SEGMENTS);
}

uint64_t kdev_fnv1a64(uint64_t h, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static const char *const fault_names[KDEV_FAULT_COUNT] = {
    [KDEV_FAULT_NONE] = "none",
    [KDEV_FAULT_SHORT_USED] = "short-used",
    [KDEV_FAULT_LONG_USED] = "long-used",
    [KDEV_FAULT_WRONG_ID] = "wrong-id",
    [KDEV_FAULT_BAD_LENGTH] = "bad-length",
    [KDEV_FAULT_BROKEN] = "broken",
};

const char *kdev_fault_name(enum kdev_fault f)
{
    return (unsigned)f < KDEV_FAULT_COUNT ? fault_names[f] : "?";
}

int kdev_fault_parse(const char *name, enum kdev_fault *out)
{
    for (unsigned i = 0; i < KDEV_FAULT_COUNT; i++) {
        if (strcmp(name, fault_names[i]) == 0) {
            *out = (enum kdev_fault)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* Writes the info answer into out (sizeof(struct kernelet_info) bytes). */
static void put_info(const struct kdev_state *st, uint8_t *out)
{
    memset(out, 0, sizeof(struct kernelet_info));
    kdev_put_le32(out + offsetof(struct kernelet_info, proto_version), KERNELET_PROTO_VERSION);
    kdev_put_le32(out + offsetof(struct kernelet_info, flags), info_flags(st));
    kdev_put_le64(out + offsetof(struct kernelet_info, gpu_mem_bytes), kdev_offered_mem(st));
    kdev_put_le32(out + offsetof(struct kernelet_info, gpu_sm_count), st->gpu.sm_count);
    kdev_put_le16(out + offsetof(struct kernelet_info, gpu_cc_major), st->gpu.cc_major);
    kdev_put_le16(out + offsetof(struct kernelet_info, gpu_cc_minor), st->gpu.cc_minor);
    kdev_put_le32(out + offsetof(struct kernelet_info, weight), st->policy.weight);
    kdev_put_le32(out + offsetof(struct kernelet_info, priority), st->policy.priority);
    kdev_put_le32(out + offsetof(struct kernelet_info, max_inflight), st->policy.max_inflight);
    memcpy(out + offsetof(struct kernelet_info, gpu_name), st->gpu.name,
           sizeof(st->gpu.name) - 1);
}

static void put_stats(const struct kdev_state *st, uint8_t *out)
{
    const struct kernelet_stats *s = &st->stats;
    const uint64_t v[] = { s->requests, s->errors, s->kernels_launched, s->gpu_time_ns,
                           s->bytes_copied, s->mem_in_use };

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        kdev_put_le64(out + 8 * i, v[i]);
}


static bool read_all(const struct kdev_chain *c, size_t off, void *buf, size_t len)
{
    return len == 0 || (off <= c->out_len && len <= c->out_len - off &&
                        c->read(c->opaque, off, buf, len) == len);
}

static bool write_all(const struct kdev_chain *c, size_t off, const void *buf, size_t len)
{
    return len == 0 || (off <= c->in_len && len <= c->in_len - off &&
                        c->write(c->opaque, off, buf, len) == len);
}

/* Reads and checks the transfer descriptor against the chain's two parts. */
static uint32_t decode_xfer(const struct kdev_chain *c, struct kdev_req *r)
{
    uint8_t b[XFER_SIZE];

    if (!read_all(c, HDR_SIZE, b, XFER_SIZE))
        return KERNELET_ST_BAD_REQUEST;
    r->x.context = kdev_le32(b + offsetof(struct kernelet_xfer, context));
    r->x.resp_bytes = kdev_le32(b + offsetof(struct kernelet_xfer, resp_bytes));
    r->x.h2d_bytes = kdev_le32(b + offsetof(struct kernelet_xfer, h2d_bytes));
    r->x.d2h_bytes = kdev_le32(b + offsetof(struct kernelet_xfer, d2h_bytes));
    if (r->x.resp_bytes < HDR_SIZE ||
        (uint64_t)r->x.resp_bytes + r->x.d2h_bytes != (uint64_t)c->in_len ||
        (uint64_t)r->x.h2d_bytes + r->x.d2h_bytes > KERNELET_MAX_BULK)
        return KERNELET_ST_BAD_REQUEST;
    r->resp_bytes = r->x.resp_bytes;
    return KERNELET_ST_OK;
}

/* Checks header, transfer descriptor and lengths against the chain and copies the payload
 * out; returns a kernelet_status. r->id and r->opcode are set as soon as they are read. */
uint32_t kdev_decode(const struct kdev_chain *c, struct kdev_req *r)
{
    uint8_t raw[HDR_SIZE];
    struct kernelet_req_hdr h;
    uint64_t expect;
    uint32_t status;
    int rc;

    r->resp_bytes = c->in_len;
    if (!read_all(c, 0, raw, HDR_SIZE))
        return KERNELET_ST_BAD_REQUEST;
    rc = kproto_hdr_decode(raw, KPROTO_HOP_GUEST, &h, NULL, 0);
    r->opcode = h.opcode;
    r->id = h.request_id;
    r->length = h.length;
    if (rc != KPROTO_OK)
        return KERNELET_ST_BAD_REQUEST;
    expect = HDR_SIZE + (uint64_t)r->length;
    if (h.flags & KERNELET_REQ_F_XFER) {
        status = decode_xfer(c, r);
        if (status != KERNELET_ST_OK)
            return status;
        expect += XFER_SIZE + (uint64_t)r->x.h2d_bytes;
    }
    if (expect != (uint64_t)c->out_len)
        return KERNELET_ST_BAD_REQUEST;
    r->bulk_in = (size_t)expect - r->x.h2d_bytes;
    if (r->length) {
        r->payload = malloc(r->length);
        if (!r->payload)
            return KERNELET_ST_BUSY;
        if (!read_all(c, r->bulk_in - r->length, r->payload, r->length))
            return KERNELET_ST_BAD_REQUEST;
    }
    return KERNELET_ST_OK;
}

static bool has_bulk(const struct kdev_req *r)
{
    return r->x.h2d_bytes != 0 || r->x.d2h_bytes != 0;
}

static uint32_t reply_info(const struct kdev_state *st, uint8_t *out, size_t cap,
                           size_t *out_len)
{
    if (cap < sizeof(struct kernelet_info))
        return KERNELET_ST_TOO_SMALL;
    put_info(st, out);
    *out_len = sizeof(struct kernelet_info);
    return KERNELET_ST_OK;
}

/* Whether a DIAG_ECHO_BULK payload is valid: reserved 0, a delay within the limit. */
static bool echo_ok(const uint8_t *p)
{
    return kdev_le32(p + offsetof(struct kernelet_diag_echo, reserved)) == 0 &&
           kdev_le32(p + offsetof(struct kernelet_diag_echo, delay_ms)) <=
               KERNELET_DIAG_MAX_DELAY_MS;
}

/* DIAG_ECHO_BULK: streams the h2d bulk bytes through a checksum and copies the first
 * min(h2d, d2h) of them into the d2h bulk room. */
static uint32_t echo_bulk(const struct kdev_chain *c, const struct kdev_req *r, uint8_t *out,
                          size_t cap, size_t *out_len, size_t *d2h_written)
{
    uint8_t chunk[16384];
    uint64_t h = KDEV_FNV1A64_INIT;
    size_t copy = MIN(r->x.h2d_bytes, r->x.d2h_bytes);

    if (r->length != sizeof(struct kernelet_diag_echo) || !echo_ok(r->payload))
        return KERNELET_ST_BAD_REQUEST;
    if (cap < sizeof(struct kernelet_diag_echo_result))
        return KERNELET_ST_TOO_SMALL;
    for (size_t done = 0; done < r->x.h2d_bytes;) {
        size_t n = MIN(sizeof(chunk), r->x.h2d_bytes - done);
        size_t m = done < copy ? MIN(n, copy - done) : 0;

        if (!read_all(c, r->bulk_in + done, chunk, n) ||
            !write_all(c, r->resp_bytes + done, chunk, m))
            return KERNELET_ST_BAD_REQUEST;
        h = kdev_fnv1a64(h, chunk, n);
        done += n;
    }
    memset(out, 0, sizeof(struct kernelet_diag_echo_result));
    kdev_put_le64(out + offsetof(struct kernelet_diag_echo_result, h2d_bytes),
                  r->x.h2d_bytes);
    kdev_put_le64(out + offsetof(struct kernelet_diag_echo_result, d2h_bytes), copy);
    kdev_put_le64(out + offsetof(struct kernelet_diag_echo_result, fnv1a64), h);
    kdev_put_le32(out + offsetof(struct kernelet_diag_echo_result, context), r->x.context);
    *out_len = sizeof(struct kernelet_diag_echo_result);
    *d2h_written = copy;
    return KERNELET_ST_OK;
}

/* Answers a request on the request queue that the device serves itself (the opcode
 * table's KPROTO_OP_DEVICE and KPROTO_OP_CONTEXT rows); *out_len receives the payload size
 * written. What the device forwards is refused here: no kerneletd is linked. */
static uint32_t answer_control(struct kdev_state *st, const struct kdev_chain *c,
                               const struct kdev_req *r, uint8_t *out, size_t cap,
                               size_t *out_len, size_t *d2h_written)
{
    switch (r->opcode) {
    case KERNELET_OP_HELLO:
        if (r->length != sizeof(struct kernelet_hello) || has_bulk(r) ||
            kdev_le32(r->payload + offsetof(struct kernelet_hello, reserved)) != 0)
            return KERNELET_ST_BAD_REQUEST;
        if ((kdev_le32(r->payload + offsetof(struct kernelet_hello, proto_version)) >> 16) !=
            KERNELET_PROTO_MAJOR)
            return KERNELET_ST_VERSION;
        return reply_info(st, out, cap, out_len);
    case KERNELET_OP_GET_INFO:
        if (r->length != 0 || has_bulk(r))
            return KERNELET_ST_BAD_REQUEST;
        return reply_info(st, out, cap, out_len);
    case KERNELET_OP_GET_STATS:
        if (r->length != 0 || has_bulk(r))
            return KERNELET_ST_BAD_REQUEST;
        if (cap < sizeof(struct kernelet_stats))
            return KERNELET_ST_TOO_SMALL;
        put_stats(st, out);
        *out_len = sizeof(struct kernelet_stats);
        return KERNELET_ST_OK;
    case KERNELET_OP_CONTEXT_CLOSE:
        /* Nothing is held per context until kerneletd is connected. */
        return (r->length != 0 || has_bulk(r)) ? KERNELET_ST_BAD_REQUEST : KERNELET_ST_OK;
    case KERNELET_OP_DIAG_ECHO_BULK:
        return echo_bulk(c, r, out, cap, out_len, d2h_written);
    default:
        return KERNELET_ST_BAD_OPCODE;
    }
}

/* Launch ring (launch batches only, kdev_opcode_allowed): they need kerneletd to run. */
static uint32_t answer_launch(const struct kdev_state *st, const struct kdev_req *r)
{
    if (r->length == 0)
        return KERNELET_ST_BAD_REQUEST;
    return st->backend ? KERNELET_ST_BUSY : KERNELET_ST_UNAVAILABLE;
}

/* Writes the response header, bent by a pending test fault; returns the used length. */
size_t kdev_put_response(struct kdev_state *st, const struct kdev_chain *c,
                           const struct kdev_req *r, uint32_t status, size_t payload_len,
                           size_t used)
{
    uint8_t h[HDR_SIZE];
    uint64_t id = r->id;
    uint32_t length = (uint32_t)payload_len;
    enum kdev_fault fault = st->fault;

    if (fault != KDEV_FAULT_BROKEN)
        st->fault = KDEV_FAULT_NONE;
    if (fault == KDEV_FAULT_WRONG_ID)
        id ^= 0x5a5a5a5a5a5a5a5aull;
    if (fault == KDEV_FAULT_BAD_LENGTH)
        length += 4096;
    kproto_hdr_put(h, r->opcode, length, id, status);
    if (!write_all(c, 0, h, HDR_SIZE))
        return 0;
    if (fault == KDEV_FAULT_SHORT_USED)
        return 8;
    if (fault == KDEV_FAULT_LONG_USED)
        return c->in_len + 4096;
    return used;
}

uint32_t kdev_decode_chain(const struct kdev_chain *c, struct kdev_req *r)
{
    memset(r, 0, sizeof(*r));
    return c->in_len < HDR_SIZE ? KERNELET_ST_BAD_REQUEST : kdev_decode(c, r);
}

size_t kdev_serve_decoded(struct kdev_state *st, unsigned vq, const struct kdev_chain *c,
                          struct kdev_req *r, uint32_t status)
{
    uint8_t out[256];  /* the largest answer payload the device builds itself */
    size_t payload_len = 0, d2h_written = 0, cap, used;

    _Static_assert(sizeof(struct kernelet_info) <= sizeof(out), "answer buffer");
    st->stats.requests++;
    if (c->in_len < HDR_SIZE) {
        st->stats.errors++;
        free(r->payload);
        r->payload = NULL;
        return 0;
    }
    cap = MIN(r->resp_bytes, (size_t)KERNELET_MAX_RESPONSE) - HDR_SIZE;
    if (status == KERNELET_ST_OK && !kdev_opcode_allowed(r->opcode, vq))
        status = KERNELET_ST_BAD_OPCODE;
    else if (status == KERNELET_ST_OK && vq == KERNELET_VQ_LAUNCH)
        status = answer_launch(st, r);
    else if (status == KERNELET_ST_OK)
        status = answer_control(st, c, r, out, MIN(cap, sizeof(out)), &payload_len,
                                &d2h_written);
    free(r->payload);
    r->payload = NULL;
    if (status != KERNELET_ST_OK || !write_all(c, HDR_SIZE, out, payload_len)) {
        st->stats.errors++;
        payload_len = d2h_written = 0;
        if (status == KERNELET_ST_OK)
            status = KERNELET_ST_BAD_REQUEST;
    }
    used = d2h_written ? r->resp_bytes + d2h_written : HDR_SIZE + payload_len;
    return kdev_put_response(st, c, r, status, payload_len, used);
}

size_t kdev_serve(struct kdev_state *st, unsigned vq, const struct kdev_chain *c)
{
    struct kdev_req r;
    uint32_t status = kdev_decode_chain(c, &r);

    return kdev_serve_decoded(st, vq, c, &r, status);
}

uint32_t kdev_hold_ms_decoded(unsigned vq, const struct kdev_req *r, uint32_t status)
{
    if (vq != KERNELET_VQ_REQUEST || status != KERNELET_ST_OK ||
        r->opcode != KERNELET_OP_DIAG_ECHO_BULK ||
        r->length != sizeof(struct kernelet_diag_echo) || !echo_ok(r->payload))
        return 0;
    return kdev_le32(r->payload + offsetof(struct kernelet_diag_echo, delay_ms));
}

uint32_t kdev_hold_ms(unsigned vq, const struct kdev_chain *c)
{
    struct kdev_req r;
    uint32_t ms = kdev_hold_ms_decoded(vq, &r, kdev_decode_chain(c, &r));

    free(r.payload);
    return ms;
}

/* A chain held in two flat buffers (unit tests, the fuzzer). */
struct flat_chain {
    const uint8_t *req;
    uint8_t *resp;
};

static size_t flat_read(void *opaque, size_t off, void *buf, size_t len)
{
    memcpy(buf, ((struct flat_chain *)opaque)->req + off, len);
    return len;
}

static size_t flat_write(void *opaque, size_t off, const void *buf, size_t len)
{
    memcpy(((struct flat_chain *)opaque)->resp + off, buf, len);
    return len;
}

size_t kdev_handle(struct kdev_state *st, unsigned vq, const uint8_t *req, size_t req_len,
                   uint8_t *resp, size_t resp_cap)
{
    struct flat_chain f = { req, resp };
    struct kdev_chain c = { req_len, resp_cap, flat_read, flat_write, &f };

    return kdev_serve(st, vq, &c);
}
