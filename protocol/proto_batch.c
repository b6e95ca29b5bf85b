/* libkernelet-proto: walking and validating the records of a LAUNCH_BATCH. */
#include <string.h>

#include "proto_internal.h"

#define FAIL(...) kproto_fail(err, errlen, KPROTO_EINVAL, __VA_ARGS__)

static uint64_t pad8(uint64_t n)
{
    return (n + 7) & ~(uint64_t)7;
}

/* Bytes covered by `height` rows of `width` bytes, rows `pitch` apart; -1 on overflow. */
static int span_of(uint64_t width, uint64_t height, uint64_t pitch, uint64_t *span)
{
    uint64_t rows;

    if (width == 0 || height == 0) {
        *span = 0;
        return 0;
    }
    if (height > 1 && pitch < width)
        return -1;
    if (__builtin_mul_overflow(pitch, height - 1, &rows) ||
        __builtin_add_overflow(rows, width, span))
        return -1;
    return 0;
}

int kproto_copy_spans(const struct kernelet_rec_copy *c, uint64_t *span_dst,
                      uint64_t *span_src, char *err, size_t errlen)
{
    if (span_of(c->width, c->height, c->dst_pitch, span_dst))
        return FAIL("copy: destination pitch %llu with width %llu and height %llu is invalid",
                    (unsigned long long)c->dst_pitch, (unsigned long long)c->width,
                    (unsigned long long)c->height);
    if (span_of(c->width, c->height, c->src_pitch, span_src))
        return FAIL("copy: source pitch %llu with width %llu and height %llu is invalid",
                    (unsigned long long)c->src_pitch, (unsigned long long)c->width,
                    (unsigned long long)c->height);
    return KPROTO_OK;
}

int kproto_memset_span(const struct kernelet_rec_memset *m, uint64_t *span, char *err,
                       size_t errlen)
{
    uint64_t row;

    if (m->elem_size != 1 && m->elem_size != 2 && m->elem_size != 4)
        return FAIL("memset: element size %u is not 1, 2 or 4", m->elem_size);
    if (__builtin_mul_overflow(m->width, (uint64_t)m->elem_size, &row) ||
        span_of(row, m->height, m->pitch, span))
        return FAIL("memset: pitch %llu with %llu elements and height %llu is invalid",
                    (unsigned long long)m->pitch, (unsigned long long)m->width,
                    (unsigned long long)m->height);
    return KPROTO_OK;
}

/* A LAUNCH_EX's attributes: clusters that tile the grid, known flags. */
static int check_launch_attrs(const struct kernelet_rec_launch_ex *x, char *err, size_t errlen)
{
    uint64_t blocks = 1;

    if (x->flags & ~KERNELET_LAUNCH_FLAGS)
        return FAIL("launch: unknown flags %#x", x->flags);
    for (int i = 0; i < 3; i++) {
        if (!x->cluster[i] || x->cluster[i] > KERNELET_MAX_CLUSTER_BLOCKS ||
            x->l.grid[i] % x->cluster[i])
            return FAIL("launch: cluster %ux%ux%u does not tile grid %ux%ux%u",
                        x->cluster[0], x->cluster[1], x->cluster[2], x->l.grid[0],
                        x->l.grid[1], x->l.grid[2]);
        blocks *= x->cluster[i];
    }
    if (blocks > KERNELET_MAX_CLUSTER_BLOCKS)
        return FAIL("launch: clusters of %llu blocks exceed %u", (unsigned long long)blocks,
                    KERNELET_MAX_CLUSTER_BLOCKS);
    return KPROTO_OK;
}

static int check_launch(const uint8_t *p, uint32_t len, struct kproto_record *r, char *err,
                        size_t errlen)
{
    struct kernelet_rec_launch *l = &r->u.launch.rec;
    size_t head = sizeof(*l);

    if (len < sizeof(*l))
        return FAIL("launch record of %u bytes is too short", len);
    memcpy(l, p, sizeof(*l));
    r->u.launch.cluster[0] = r->u.launch.cluster[1] = r->u.launch.cluster[2] = 1;
    if (r->op == KERNELET_REC_LAUNCH_EX) {
        struct kernelet_rec_launch_ex x;
        int rc;
        if (len < sizeof(x))
            return FAIL("launch record of %u bytes is too short", len);
        memcpy(&x, p, sizeof(x));
        if (x.l.grid[0] && x.l.grid[1] && x.l.grid[2] &&
            (rc = check_launch_attrs(&x, err, errlen)))
            return rc;
        memcpy(r->u.launch.cluster, x.cluster, sizeof(x.cluster));
        r->u.launch.flags = x.flags;
        head = sizeof(x);
    }
    if (l->param_bytes > KERNELET_MAX_PARAM_BYTES)
        return FAIL("launch: %u parameter bytes exceed %u", l->param_bytes,
                    KERNELET_MAX_PARAM_BYTES);
    if (len != head + pad8(l->param_bytes))
        return FAIL("launch: record length %u does not match %u parameter bytes", len,
                    l->param_bytes);
    for (int i = 0; i < 3; i++)
        if (l->grid[i] == 0 || l->block[i] == 0)
            return FAIL("launch: grid %ux%ux%u or block %ux%ux%u has a zero dimension",
                        l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                        l->block[2]);
    if (l->function == 0)
        return FAIL("launch: function handle 0");
    r->u.launch.params = p + head;
    return KPROTO_OK;
}

static int check_copy(const uint8_t *p, uint32_t len, struct kproto_record *r, char *err,
                      size_t errlen)
{
    struct kernelet_rec_copy *c = &r->u.copy.rec;
    uint64_t span_dst, span_src, bytes;
    int rc;

    if (len < sizeof(*c))
        return FAIL("copy record of %u bytes is too short", len);
    memcpy(c, p, sizeof(*c));
    if (c->kind < KERNELET_COPY_HTOD || c->kind > KERNELET_COPY_DTOD)
        return FAIL("copy: unknown kind %u", c->kind);
    if ((rc = kproto_copy_spans(c, &span_dst, &span_src, err, errlen)))
        return rc;
    r->u.copy.inline_data = NULL;
    if (c->kind == KERNELET_COPY_DTOD && c->region != 0)
        return FAIL("copy: device-to-device copy names region %u", c->region);
    if (c->region != KERNELET_REGION_INLINE)
        return len == sizeof(*c) ? KPROTO_OK
                                 : FAIL("copy: record length %u, expected %zu", len, sizeof(*c));
    if (c->kind != KERNELET_COPY_HTOD)
        return FAIL("copy: inline data is only for host-to-device copies");
    if (c->src != 0 || c->src_pitch != c->width)
        return FAIL("copy: inline rows must be packed (source offset 0, pitch = width)");
    if (__builtin_mul_overflow(c->width, c->height, &bytes) || bytes > KERNELET_MAX_PAYLOAD ||
        len != sizeof(*c) + pad8(bytes))
        return FAIL("copy: record length %u does not hold %llu x %llu inline bytes", len,
                    (unsigned long long)c->width, (unsigned long long)c->height);
    r->u.copy.inline_data = p + sizeof(*c);
    return KPROTO_OK;
}

static int check_memset(const uint8_t *p, uint32_t len, struct kproto_record *r, char *err,
                        size_t errlen)
{
    struct kernelet_rec_memset *m = &r->u.memset;
    uint64_t span;
    int rc;

    if (len != sizeof(*m))
        return FAIL("memset record length %u, expected %zu", len, sizeof(*m));
    memcpy(m, p, sizeof(*m));
    if ((rc = kproto_memset_span(m, &span, err, errlen)))
        return rc;
    if (m->elem_size < 4 && (m->value >> (8 * m->elem_size)) != 0)
        return FAIL("memset: value %#x does not fit %u byte(s)", m->value, m->elem_size);
    return KPROTO_OK;
}

static int check_event(const uint8_t *p, uint32_t len, struct kproto_record *r, char *err,
                       size_t errlen)
{
    if (len != sizeof(r->u.event))
        return FAIL("event record length %u, expected %zu", len, sizeof(r->u.event));
    memcpy(&r->u.event, p, sizeof(r->u.event));
    if (r->u.event.event == 0)
        return FAIL("event record with event handle 0");
    return KPROTO_OK;
}

void kproto_batch_walk(struct kproto_batch_iter *it, const uint8_t *records, size_t len,
                       uint32_t count)
{
    it->next = records;
    it->left = len;
    it->remaining = count;
    it->index = UINT32_MAX;
}

void kproto_batch_begin(struct kproto_batch_iter *it, const struct kproto_request *req)
{
    kproto_batch_walk(it, req->u.batch.records, req->u.batch.records_len,
                      req->u.batch.batch.count);
}

int kproto_batch_frame(struct kproto_batch_iter *it, struct kernelet_rec_hdr *h,
                       const uint8_t **rec, char *err, size_t errlen)
{
    if (it->remaining == 0)
        return it->left == 0 ? 0 : FAIL("%zu bytes after the last record", it->left);
    it->index++;
    if (it->left < sizeof(*h))
        return FAIL("record %u: only %zu bytes left", it->index, it->left);
    memcpy(h, it->next, sizeof(*h));
    if (h->length < sizeof(*h) || h->length % 8 || h->length > it->left)
        return FAIL("record %u: length %u is invalid (%zu bytes left)", it->index, h->length,
                    it->left);
    *rec = it->next;
    it->next += h->length;
    it->left -= h->length;
    it->remaining--;
    return 1;
}

/* Checks the contents of one framed record of h->length bytes at p. */
static int check_record(const struct kernelet_rec_hdr *h, const uint8_t *p, uint32_t index,
                        struct kproto_record *rec, char *err, size_t errlen)
{
    if (h->flags)
        return FAIL("record %u: flags %#x are not 0", index, h->flags);
    memset(rec, 0, sizeof(*rec));
    rec->op = h->op;
    rec->stream = h->stream;
    switch (h->op) {
    case KERNELET_REC_LAUNCH:
    case KERNELET_REC_LAUNCH_EX:
        return check_launch(p, h->length, rec, err, errlen);
    case KERNELET_REC_COPY:
        return check_copy(p, h->length, rec, err, errlen);
    case KERNELET_REC_MEMSET:
        return check_memset(p, h->length, rec, err, errlen);
    case KERNELET_REC_EVENT_RECORD:
    case KERNELET_REC_STREAM_WAIT:
        return check_event(p, h->length, rec, err, errlen);
    default:
        return FAIL("record %u: unknown operation %u", index, h->op);
    }
}

int kproto_batch_next(struct kproto_batch_iter *it, struct kproto_record *rec, char *err,
                      size_t errlen)
{
    /* The iterator moves on only past a valid record (a malformed one ends the batch, and
     * its index names the record that failed). */
    struct kproto_batch_iter at = *it;
    struct kernelet_rec_hdr h;
    const uint8_t *p;
    int rc = kproto_batch_frame(&at, &h, &p, err, errlen);

    if (rc <= 0) {
        it->index = at.index;
        return rc;
    }
    if ((rc = check_record(&h, p, at.index, rec, err, errlen))) {
        it->index = at.index;
        return rc;
    }
    *it = at;
    return 1;
}
