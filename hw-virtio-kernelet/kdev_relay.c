/*
 * kdev_relay: prepares a guest request for kerneletd (see kdev_relay.h).
 *
 * Only the fields that name host memory are interpreted here; everything else is left to
 * the daemon, which validates every request again. Batches are walked with the daemon's
 * own framing (libkernelet-proto), so no record can reach the daemon without having been
 * seen.
 */
#include "kdev_relay.h"

#include <stdio.h>
#include <string.h>

#include "kdev_request.h"
#include "kernelet/protocol.h"

bool kdev_relay_local(uint16_t opcode, bool daemon_has_contexts)
{
    const struct kproto_opcode_row *row = kproto_opcode_find(opcode);

    if (!row)
        return false; /* unknown here, but a newer kerneletd may serve it */
    if (row->flags & KPROTO_OP_CONTEXT)
        return !daemon_has_contexts; /* else nothing of the context is held: OK */
    return (row->flags & KPROTO_OP_DEVICE) != 0;
}

struct relay {
    uint32_t h2d, d2h;
    kdev_bulk_map_fn map;
    void *opaque;
    bool uses_bulk;
    char *err;
    size_t errlen;
};

/* Bytes a pitched range covers: pitch * (rows - 1) + width; false on overflow. */
static bool span_of(uint64_t width, uint64_t rows, uint64_t pitch, uint64_t *span)
{
    uint64_t p;

    if (width == 0 || rows == 0) {
        *span = 0;
        return true;
    }
    if (pitch < width || __builtin_mul_overflow(pitch, rows - 1, &p) ||
        __builtin_add_overflow(p, width, span))
        return false;
    return true;
}

/* Rewrites one (region, offset) naming `span` bytes of host memory. */
static int place(struct relay *r, uint8_t *region_p, uint8_t *offset_p, uint64_t span,
                 bool d2h, bool inline_ok)
{
    uint32_t region = kdev_le32(region_p), new_region;
    uint64_t off = kdev_le64(offset_p), new_off;
    uint64_t limit = d2h ? r->d2h : r->h2d;

    if (region == KERNELET_REGION_INLINE && inline_ok)
        return KDEV_RELAY_OK;
    if (region != KERNELET_REGION_BULK) {
        snprintf(r->err, r->errlen, "region %#x: a guest may name only its bulk data", region);
        return KDEV_RELAY_BAD;
    }
    if (off > limit || span > limit - off) {
        snprintf(r->err, r->errlen, "%s bulk range %llu+%llu outside the chain's %llu bytes",
                 d2h ? "d2h" : "h2d", (unsigned long long)off, (unsigned long long)span,
                 (unsigned long long)limit);
        return KDEV_RELAY_BAD;
    }
    if (r->map(r->opaque, d2h, off, span, &new_region, &new_off) != 0) {
        snprintf(r->err, r->errlen, "bulk range %llu+%llu cannot be mapped",
                 (unsigned long long)off, (unsigned long long)span);
        return KDEV_RELAY_NOMAP;
    }
    kdev_put_le32(region_p, new_region);
    kdev_put_le64(offset_p, new_off);
    r->uses_bulk = true;
    return KDEV_RELAY_OK;
}

static int rewrite_copy(struct relay *r, uint8_t *rec, uint32_t len)
{
    uint32_t kind;
    uint64_t span;
    bool d2h;

    if (len < sizeof(struct kernelet_rec_copy)) {
        snprintf(r->err, r->errlen, "copy record of %u bytes", len);
        return KDEV_RELAY_BAD;
    }
    kind = kdev_le32(rec + offsetof(struct kernelet_rec_copy, kind));
    if (kind == KERNELET_COPY_DTOD)
        return KDEV_RELAY_OK; /* no host memory; the daemon checks the rest */
    if (kind != KERNELET_COPY_HTOD && kind != KERNELET_COPY_DTOH) {
        snprintf(r->err, r->errlen, "copy kind %u", kind);
        return KDEV_RELAY_BAD;
    }
    d2h = kind == KERNELET_COPY_DTOH;
    if (!span_of(kdev_le64(rec + offsetof(struct kernelet_rec_copy, width)),
                 kdev_le64(rec + offsetof(struct kernelet_rec_copy, height)),
                 kdev_le64(rec + (d2h ? offsetof(struct kernelet_rec_copy, dst_pitch)
                                      : offsetof(struct kernelet_rec_copy, src_pitch))),
                 &span)) {
        snprintf(r->err, r->errlen, "copy geometry overflows");
        return KDEV_RELAY_BAD;
    }
    return place(r, rec + offsetof(struct kernelet_rec_copy, region),
                 rec + (d2h ? offsetof(struct kernelet_rec_copy, dst)
                            : offsetof(struct kernelet_rec_copy, src)),
                 span, d2h, !d2h);
}

/* Walks the records with libkernelet-proto's framing (kerneletd's own), so that every
 * record the daemon will read has been seen here; their contents are the daemon's to
 * check, except the host memory that copies name. */
static int rewrite_batch(struct relay *r, uint8_t *p, uint32_t len)
{
    struct kernelet_batch b;
    struct kproto_batch_iter it;
    struct kernelet_rec_hdr h;
    const uint8_t *rec;
    int rc;

    if (len < sizeof(b)) {
        snprintf(r->err, r->errlen, "batch of %u bytes", len);
        return KDEV_RELAY_BAD;
    }
    memcpy(&b, p, sizeof(b));
    kproto_batch_walk(&it, p + sizeof(b), len - sizeof(b), b.count);
    while ((rc = kproto_batch_frame(&it, &h, &rec, r->err, r->errlen)) == 1) {
        /* rec points into p, which is ours to rewrite */
        if (h.op == KERNELET_REC_COPY &&
            (rc = rewrite_copy(r, p + (rec - p), h.length)) != KDEV_RELAY_OK)
            return rc;
    }
    if (rc != 0)
        return KDEV_RELAY_BAD;
    if (r->uses_bulk) {
        b.flags |= KERNELET_BATCH_COMPLETE;
        memcpy(p + offsetof(struct kernelet_batch, flags), &b.flags, sizeof(b.flags));
    }
    return KDEV_RELAY_OK;
}

static int rewrite_module(struct relay *r, uint8_t *p, uint32_t len)
{
    if (len < sizeof(struct kernelet_module_load)) {
        snprintf(r->err, r->errlen, "module load of %u bytes", len);
        return KDEV_RELAY_BAD;
    }
    return place(r, p + offsetof(struct kernelet_module_load, region),
                 p + offsetof(struct kernelet_module_load, offset),
                 kdev_le64(p + offsetof(struct kernelet_module_load, size)), false, true);
}

int kdev_relay_rewrite(uint16_t opcode, uint8_t *payload, uint32_t len, uint32_t h2d,
                       uint32_t d2h, kdev_bulk_map_fn map, void *opaque, bool *uses_bulk,
                       char *err, size_t errlen)
{
    struct relay r = { h2d, d2h, map, opaque, false, err, errlen };
    int rc = KDEV_RELAY_OK;

    if (opcode == KERNELET_OP_LAUNCH_BATCH)
        rc = rewrite_batch(&r, payload, len);
    else if (opcode == KERNELET_OP_MODULE_LOAD)
        rc = rewrite_module(&r, payload, len);
    *uses_bulk = r.uses_bulk;
    return rc;
}
