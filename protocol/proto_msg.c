/* libkernelet-proto: headers, error texts and the message builder. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto_internal.h"

int kproto_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

int kproto_all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

const char *kproto_strerror(int code)
{
    switch (code) {
    case KPROTO_OK: return "success";
    case KPROTO_EINVAL: return "malformed message";
    case KPROTO_ERANGE: return "message too large";
    case KPROTO_EOPCODE: return "unknown opcode";
    case KPROTO_EAGAIN: return "incomplete message";
    default: return "unknown error";
    }
}

void kproto_hdr_put(void *buf, uint16_t opcode, uint32_t length, uint64_t request_id,
                    uint32_t status)
{
    struct kernelet_req_hdr h = {
        .opcode = opcode, .length = length, .request_id = request_id, .status = status,
    };
    memcpy(buf, &h, sizeof(h));
}

int kproto_hdr_decode(const void *buf, enum kproto_hop hop, struct kernelet_req_hdr *h,
                      char *err, size_t errlen)
{
    /* Only a guest's request may announce a transfer descriptor (the guest driver's). */
    uint16_t flags_ok = hop == KPROTO_HOP_GUEST ? KERNELET_REQ_F_XFER : 0;

    memcpy(h, buf, sizeof(*h));
    if (h->flags & ~flags_ok)
        return kproto_fail(err, errlen, KPROTO_EINVAL, "header flags %#x are not 0", h->flags);
    /* A context is stamped on kerneletd's socket only: by the device, or 0 from libcuda. */
    if (hop != KPROTO_HOP_REQUEST && h->context != 0)
        return kproto_fail(err, errlen, KPROTO_EINVAL, "header context field is not 0");
    if (hop != KPROTO_HOP_RESPONSE && h->status != 0)
        return kproto_fail(err, errlen, KPROTO_EINVAL, "request status %u is not 0",
                           h->status);
    if (h->length > KERNELET_MAX_PAYLOAD)
        return kproto_fail(err, errlen, KPROTO_ERANGE, "payload length %u exceeds %u",
                           h->length, KERNELET_MAX_PAYLOAD);
    return KPROTO_OK;
}

int kproto_hdr_get(const void *buf, bool is_request, struct kernelet_req_hdr *h, char *err,
                   size_t errlen)
{
    return kproto_hdr_decode(buf, is_request ? KPROTO_HOP_REQUEST : KPROTO_HOP_RESPONSE, h,
                             err, errlen);
}

void kproto_msg_begin(struct kproto_msg *m, void *buf, uint32_t cap, uint16_t opcode,
                      uint64_t request_id, uint32_t status)
{
    m->buf = buf;
    m->cap = cap > KERNELET_MAX_REQUEST ? KERNELET_MAX_REQUEST : cap;
    m->len = KERNELET_HDR_SIZE;
    kproto_hdr_put(buf, opcode, 0, request_id, status);
}

static size_t padded(size_t n, size_t align)
{
    return align > 1 ? (n + align - 1) / align * align : n;
}

int kproto_msg_put(struct kproto_msg *m, const void *data, size_t n, size_t align)
{
    size_t total = padded(n, align);

    if (total < n || total > (size_t)(m->cap - m->len))
        return KPROTO_ERANGE;
    if (n)
        memcpy(m->buf + m->len, data, n);
    memset(m->buf + m->len + n, 0, total - n);
    m->len += (uint32_t)total;
    return KPROTO_OK;
}

void *kproto_msg_reserve(struct kproto_msg *m, size_t n)
{
    uint8_t *p;

    if (n > (size_t)(m->cap - m->len))
        return NULL;
    p = m->buf + m->len;
    memset(p, 0, n);
    m->len += (uint32_t)n;
    return p;
}

uint32_t kproto_msg_end(struct kproto_msg *m)
{
    uint32_t payload = m->len - KERNELET_HDR_SIZE;

    memcpy(m->buf + offsetof(struct kernelet_req_hdr, length), &payload, sizeof(payload));
    return m->len;
}

uint32_t kproto_msg_room(const struct kproto_msg *m)
{
    return m->cap - m->len;
}
