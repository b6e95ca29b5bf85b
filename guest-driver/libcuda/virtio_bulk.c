/* Protocol messages as chains with bulk segments (virtio_bulk.h says what and why). */
#include <errno.h>
#include <string.h>

#include "virtio_bulk.h"

int kvb_begin(struct kvb_splitter *s, const void *msg, size_t len, uint32_t max_bulk,
              kvb_region_fn region, void *arg)
{
    struct kernelet_req_hdr h;

    if (len < KERNELET_HDR_SIZE || len > KERNELET_MAX_REQUEST)
        return -EINVAL;
    memcpy(&h, msg, sizeof(h));
    if (h.length != len - KERNELET_HDR_SIZE)
        return -EINVAL;
    *s = (struct kvb_splitter){.msg = msg, .len = len, .max_bulk = max_bulk,
                               .region = region, .arg = arg};
    if (h.opcode == KERNELET_OP_LAUNCH_BATCH) {
        struct kernelet_batch b;

        if (h.length < sizeof(b))
            return -EINVAL;
        memcpy(&b, s->msg + KERNELET_HDR_SIZE, sizeof(b));
        s->flags = b.flags;
        kproto_batch_walk(&s->it, s->msg + KERNELET_HDR_SIZE + sizeof(b),
                          h.length - sizeof(b), b.count);
    }
    return 0;
}

/* The host pointer of [offset, offset + span) in local region id, or NULL. */
static uint8_t *host_range(struct kvb_splitter *s, uint32_t id, uint64_t offset, uint64_t span)
{
    size_t size = 0;
    uint8_t *base = s->region(s->arg, id, &size);

    if (!base || offset > size || span > size - offset)
        return NULL;
    return base + offset;
}

static void add_buf(struct kvb_chunk *c, bool d2h, const uint8_t *p, uint64_t len)
{
    struct kernelet_ioc_buf b = {.addr = (uint64_t)(uintptr_t)p, .len = len};

    if (d2h) {
        c->d2h[c->n_d2h++] = b;
        c->d2h_bytes += len;
    } else {
        c->h2d[c->n_h2d++] = b;
        c->h2d_bytes += len;
    }
    c->has_bulk = true;
}

/* A message without records: copied; a module image in a region becomes h2d bulk. */
static int single(struct kvb_splitter *s, struct kvb_chunk *c)
{
    struct kernelet_req_hdr h;
    struct kernelet_module_load q;
    const uint8_t *p;

    memcpy(c->msg, s->msg, s->len);
    c->len = (uint32_t)s->len;
    memcpy(&h, s->msg, sizeof(h));
    if (h.opcode != KERNELET_OP_MODULE_LOAD || h.length < sizeof(q))
        return 1;
    memcpy(&q, s->msg + KERNELET_HDR_SIZE, sizeof(q));
    if (q.region == KERNELET_REGION_INLINE)
        return 1;
    if (q.size > s->max_bulk)
        return -E2BIG;
    if (q.size == 0 || !(p = host_range(s, q.region, q.offset, q.size)))
        return -EINVAL;
    add_buf(c, false, p, q.size);
    q.region = KVB_REGION_BULK;
    q.offset = 0;
    memcpy(c->msg + KERNELET_HDR_SIZE, &q, sizeof(q));
    return 1;
}

static uint64_t span_of(uint64_t rows, uint64_t cols, uint64_t pitch)
{
    return pitch * (rows - 1) + cols;
}

/* A piece of a copy: rows [row, row + rows) and bytes [col, col + cols) of each. */
struct piece {
    uint64_t rows, cols;
    uint64_t stream;        /* bytes it takes in the bulk stream */
    uint32_t bufs;          /* bulk buffers it takes */
};

/* Device-to-host rows go packed into the stream, one buffer per row unless the host rows
 * are contiguous: the bytes between host rows must not be overwritten, and the device
 * writes whole buffers. Host-to-device rows travel with the bytes between them (one
 * buffer; the device skips them, reading rows `pitch` apart). */
static void piece_cost(bool d2h, uint64_t rows, uint64_t cols, uint64_t pitch, struct piece *p)
{
    bool packed_rows = rows == 1 || pitch == cols;

    p->rows = rows;
    p->cols = cols;
    p->stream = d2h ? rows * cols : pitch * (rows - 1) + cols;
    p->bufs = d2h && !packed_rows ? (uint32_t)rows : 1;
}

/* The largest next piece of a copy that fits room bulk bytes and bufs buffers (>= 1). */
static void next_piece(const struct kvb_splitter *s, const struct kernelet_rec_copy *r,
                       bool d2h, uint64_t pitch, uint64_t room, uint32_t bufs, struct piece *p)
{
    uint64_t left = r->height - s->row;

    if (s->col == 0 && r->width <= room) {
        uint64_t step = d2h ? r->width : (pitch ? pitch : 1);
        uint64_t fit = (room - r->width) / step + 1;
        uint64_t rows = left < fit ? left : fit;
        if (d2h && pitch != r->width && rows > bufs)
            rows = bufs;
        piece_cost(d2h, rows, r->width, pitch, p);
    } else {
        uint64_t rest = r->width - s->col;
        piece_cost(d2h, 1, rest < room ? rest : room, pitch, p);
    }
}

/* Appends the next piece of copy record `index`, or nothing (0) when the chunk is full. */
static int copy_piece(struct kvb_splitter *s, struct kvb_chunk *c, struct kproto_msg *m,
                      const struct kernelet_rec_copy *r, uint32_t index)
{
    bool d2h = r->kind == KERNELET_COPY_DTOH;
    uint64_t host_pitch = d2h ? r->dst_pitch : r->src_pitch;
    uint64_t dev_pitch = d2h ? r->src_pitch : r->dst_pitch;
    uint64_t host_off = d2h ? r->dst : r->src;
    uint64_t used = c->h2d_bytes + c->d2h_bytes, skip;
    uint32_t bufs_left = KERNELET_IOC_MAX_BUFS - c->n_h2d - c->n_d2h;
    struct kernelet_rec_copy p = *r;
    struct piece pc;
    const uint8_t *host;

    if (r->width == 0 || r->height == 0 || (r->height > 1 && (host_pitch < r->width ||
                                                               dev_pitch < r->width)))
        return -EINVAL;
    if (!host_range(s, r->region, host_off, span_of(r->height, r->width, host_pitch)))
        return -EINVAL;
    if (bufs_left == 0 || used >= s->max_bulk || kproto_msg_room(m) < sizeof(p))
        return 0;
    next_piece(s, r, d2h, host_pitch, s->max_bulk - used, bufs_left, &pc);
    /* Rather a fresh chunk than a small piece: a copy is cut only where it must be. */
    if (used > 0 && (s->col > 0 || pc.rows < r->height - s->row || pc.cols < r->width))
        return 0;
    skip = s->row * host_pitch + s->col;
    host = host_range(s, r->region, host_off + skip, span_of(pc.rows, pc.cols, host_pitch));
    p.width = pc.cols;
    p.height = pc.rows;
    p.region = KVB_REGION_BULK;
    if (d2h) {
        p.src = r->src + s->row * dev_pitch + s->col;
        p.dst = c->d2h_bytes;
        p.dst_pitch = pc.cols;
        for (uint64_t i = 0; i < pc.bufs; i++)
            add_buf(c, true, host + i * host_pitch, pc.stream / pc.bufs);
    } else {
        p.dst = r->dst + s->row * dev_pitch + s->col;
        p.src = c->h2d_bytes;
        add_buf(c, false, host, pc.stream);
    }
    p.h.length = sizeof(p);
    kproto_msg_put(m, &p, sizeof(p), 1);
    c->orig_index[c->n_records++] = index;
    if (pc.cols < r->width - s->col) {
        s->col += pc.cols;
    } else {
        s->col = 0;
        s->row += pc.rows;
    }
    return 1;
}

/* Whether a record names host memory of a local region. */
static bool is_bulk_copy(const struct kernelet_rec_copy *r)
{
    return (r->kind == KERNELET_COPY_HTOD || r->kind == KERNELET_COPY_DTOH) &&
           r->region != KERNELET_REGION_INLINE;
}

/* Appends the next record, or its next piece; 0 when the chunk is full. Records are framed
 * by libkernelet-proto, as kerneletd frames them; s->it moves past a record only once all
 * of it is in a chunk. */
static int add_record(struct kvb_splitter *s, struct kvb_chunk *c, struct kproto_msg *m)
{
    struct kproto_batch_iter at = s->it;
    struct kernelet_rec_hdr h;
    struct kernelet_rec_copy r;
    const uint8_t *rec;
    int rc;

    if (kproto_batch_frame(&at, &h, &rec, NULL, 0) != 1)
        return -EINVAL;
    if (h.op == KERNELET_REC_COPY && h.length >= sizeof(r)) {
        memcpy(&r, rec, sizeof(r));
        if (is_bulk_copy(&r)) {
            if ((rc = copy_piece(s, c, m, &r, at.index)) <= 0)
                return rc;
            if (s->row == r.height) {
                s->it = at;
                s->row = 0;
            }
            return 1;
        }
    }
    if (kproto_msg_room(m) < h.length)
        return 0;
    kproto_msg_put(m, rec, h.length, 1);
    c->orig_index[c->n_records++] = at.index;
    s->it = at;
    return 1;
}

static int batch_chunk(struct kvb_splitter *s, struct kvb_chunk *c)
{
    struct kernelet_req_hdr h;
    struct kernelet_rec_hdr rh;
    struct kernelet_batch b;
    struct kproto_msg m;
    const uint8_t *rest;
    int rc = 1;

    memcpy(&h, s->msg, sizeof(h));
    kproto_msg_begin(&m, c->msg, sizeof(c->msg), h.opcode, h.request_id, 0);
    kproto_msg_reserve(&m, sizeof(b));
    while (s->it.remaining > 0 && (rc = add_record(s, c, &m)) > 0)
        ;
    if (rc < 0)
        return rc;
    if (c->n_records == 0)
        return -EINVAL; /* not even one record fits an empty chunk: cannot happen */
    /* Bulk pages are pinned only while the chain is held: the device must have moved the
     * bytes before it answers, so a batch with bulk data is answered once it has run. */
    b = (struct kernelet_batch){.count = c->n_records,
                                .flags = s->flags | (c->has_bulk ? KERNELET_BATCH_COMPLETE : 0)};
    memcpy(c->msg + KERNELET_HDR_SIZE, &b, sizeof(b));
    c->len = kproto_msg_end(&m);
    if (s->it.remaining == 0 && kproto_batch_frame(&s->it, &rh, &rest, NULL, 0) != 0)
        return -EINVAL; /* bytes after the last record */
    return 1;
}

int kvb_next(struct kvb_splitter *s, struct kvb_chunk *out)
{
    struct kernelet_req_hdr h;
    int rc;

    if (s->done)
        return 0;
    memset(out, 0, offsetof(struct kvb_chunk, orig_index));
    memcpy(&h, s->msg, sizeof(h));
    out->is_batch = h.opcode == KERNELET_OP_LAUNCH_BATCH;
    rc = out->is_batch ? batch_chunk(s, out) : single(s, out);
    if (rc < 0 || !out->is_batch || s->it.remaining == 0)
        s->done = true;
    return rc;
}
