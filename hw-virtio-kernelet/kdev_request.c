/*
 * kdev_request: decodes and answers one virtio-kernelet request (see kdev_request.h).
 *
 * The guest is not trusted: every length is checked against what actually arrived, and
 * reserved fields must be zero so that later protocol versions can give them meaning.
 */
#include "kdev_request.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define HDR_SIZE ((size_t)sizeof(struct kernelet_req_hdr))

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

/* The decoded request header plus where its payload lies. */
struct request {
    uint16_t opcode;
    uint64_t id;
    const uint8_t *payload;
    uint32_t length;
};

/* Checks the header against the bytes that arrived; returns a kernelet_status. */
static uint32_t decode_header(const uint8_t *req, size_t req_len, struct request *r)
{
    if (req_len < HDR_SIZE || req_len > KERNELET_MAX_REQUEST)
        return KERNELET_ST_BAD_REQUEST;
    r->opcode = kdev_le16(req + offsetof(struct kernelet_req_hdr, opcode));
    r->id = kdev_le64(req + offsetof(struct kernelet_req_hdr, request_id));
    r->length = kdev_le32(req + offsetof(struct kernelet_req_hdr, length));
    r->payload = req + HDR_SIZE;
    if (kdev_le16(req + offsetof(struct kernelet_req_hdr, flags)) != 0 ||
        kdev_le32(req + offsetof(struct kernelet_req_hdr, status)) != 0 ||
        kdev_le32(req + offsetof(struct kernelet_req_hdr, reserved)) != 0)
        return KERNELET_ST_BAD_REQUEST;
    if ((size_t)r->length != req_len - HDR_SIZE)
        return KERNELET_ST_BAD_REQUEST;
    return KERNELET_ST_OK;
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

/* Answers a request on the request queue; *out_len receives the payload size written. */
static uint32_t answer_control(struct kdev_state *st, const struct request *r, uint8_t *out,
                               size_t cap, size_t *out_len)
{
    switch (r->opcode) {
    case KERNELET_OP_HELLO:
        if (r->length != sizeof(struct kernelet_hello) || kdev_le32(r->payload + 4) != 0)
            return KERNELET_ST_BAD_REQUEST;
        if ((kdev_le32(r->payload) >> 16) != KERNELET_PROTO_MAJOR)
            return KERNELET_ST_VERSION;
        return reply_info(st, out, cap, out_len);
    case KERNELET_OP_GET_INFO:
        if (r->length != 0)
            return KERNELET_ST_BAD_REQUEST;
        return reply_info(st, out, cap, out_len);
    case KERNELET_OP_GET_STATS:
        if (r->length != 0)
            return KERNELET_ST_BAD_REQUEST;
        if (cap < sizeof(struct kernelet_stats))
            return KERNELET_ST_TOO_SMALL;
        put_stats(st, out);
        *out_len = sizeof(struct kernelet_stats);
        return KERNELET_ST_OK;
    default:
        return KERNELET_ST_BAD_OPCODE;
    }
}

/* Launch ring: only launch batches; they need kerneletd to run. */
static uint32_t answer_launch(const struct kdev_state *st, const struct request *r)
{
    if (r->opcode != KERNELET_OP_LAUNCH_BATCH)
        return KERNELET_ST_BAD_OPCODE;
    if (r->length == 0)
        return KERNELET_ST_BAD_REQUEST;
    return st->backend ? KERNELET_ST_BUSY : KERNELET_ST_UNAVAILABLE;
}

size_t kdev_handle(struct kdev_state *st, unsigned vq, const uint8_t *req, size_t req_len,
                   uint8_t *resp, size_t resp_cap)
{
    struct request r = { 0 };
    size_t payload_len = 0;
    uint32_t status;

    st->stats.requests++;
    if (resp_cap < HDR_SIZE) {
        st->stats.errors++;
        return 0;
    }
    status = decode_header(req, req_len, &r);
    if (status == KERNELET_ST_OK) {
        if (vq == KERNELET_VQ_REQUEST)
            status = answer_control(st, &r, resp + HDR_SIZE, resp_cap - HDR_SIZE,
                                    &payload_len);
        else if (vq == KERNELET_VQ_LAUNCH)
            status = answer_launch(st, &r);
        else
            status = KERNELET_ST_BAD_OPCODE;
    }
    if (status != KERNELET_ST_OK) {
        st->stats.errors++;
        payload_len = 0;
    }
    memset(resp, 0, HDR_SIZE);
    kdev_put_le16(resp + offsetof(struct kernelet_req_hdr, opcode), r.opcode);
    kdev_put_le32(resp + offsetof(struct kernelet_req_hdr, length), (uint32_t)payload_len);
    kdev_put_le64(resp + offsetof(struct kernelet_req_hdr, request_id), r.id);
    kdev_put_le32(resp + offsetof(struct kernelet_req_hdr, status), status);
    return HDR_SIZE + payload_len;
}
