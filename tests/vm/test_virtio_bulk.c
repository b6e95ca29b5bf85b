/* libcuda's virtio transport: how messages become chains with bulk segments
 * (guest-driver/libcuda/virtio_bulk.c). Each batch is split and then executed by a small
 * model of the device (bulk streams, KVB_REGION_BULK offsets); the memory it leaves must
 * equal what the original records do when applied directly. */
#include <glib.h>
#include <string.h>

#include "virtio_bulk.h"

#define REGION_ID 7u
#define HOST_SIZE ((size_t)6 << 20)
#define DEV_SIZE ((size_t)6 << 20)

static uint8_t *host, *dev;

static void *region_fn(void *arg, uint32_t id, size_t *size)
{
    (void)arg;
    if (id != REGION_ID)
        return NULL;
    *size = HOST_SIZE;
    return host;
}

struct batch_builder {
    struct kproto_msg m;
    uint8_t buf[KERNELET_MAX_REQUEST];
    uint32_t count;
};

static void bb_begin(struct batch_builder *b)
{
    kproto_msg_begin(&b->m, b->buf, sizeof(b->buf), KERNELET_OP_LAUNCH_BATCH, 42, 0);
    kproto_msg_reserve(&b->m, sizeof(struct kernelet_batch));
    b->count = 0;
}

static void bb_copy(struct batch_builder *b, uint32_t kind, uint32_t region, uint64_t dst,
                    uint64_t src, uint64_t w, uint64_t h, uint64_t dp, uint64_t sp,
                    const void *inl)
{
    size_t tail = region == KERNELET_REGION_INLINE ? w * h : 0;
    struct kernelet_rec_copy r = {
        .h = {.op = KERNELET_REC_COPY, .length = (uint32_t)(sizeof(r) + ((tail + 7) & ~7u))},
        .kind = kind, .region = region, .dst = dst, .src = src, .width = w, .height = h,
        .dst_pitch = dp, .src_pitch = sp};
    g_assert_cmpint(kproto_msg_put(&b->m, &r, sizeof(r), 1), ==, 0);
    if (tail)
        g_assert_cmpint(kproto_msg_put(&b->m, inl, tail, 8), ==, 0);
    b->count++;
}

static void bb_memset(struct batch_builder *b, uint64_t dst, uint64_t n, uint8_t value)
{
    struct kernelet_rec_memset r = {
        .h = {.op = KERNELET_REC_MEMSET, .length = sizeof(r)},
        .dst = dst, .pitch = n, .width = n, .height = 1, .value = value, .elem_size = 1};
    g_assert_cmpint(kproto_msg_put(&b->m, &r, sizeof(r), 1), ==, 0);
    b->count++;
}

static size_t bb_end(struct batch_builder *b)
{
    struct kernelet_batch hdr = {.count = b->count};
    memcpy(b->buf + KERNELET_HDR_SIZE, &hdr, sizeof(hdr));
    return kproto_msg_end(&b->m);
}

static void rows_copy(uint8_t *dst, uint64_t dp, const uint8_t *src, uint64_t sp, uint64_t w,
                      uint64_t h)
{
    for (uint64_t i = 0; i < h; i++)
        memcpy(dst + i * dp, src + i * sp, w);
}

/* Runs the records of a batch payload. hmem: the host memory that (region, offset) means
 * for non-inline copies (the region itself, or a chunk's bulk stream). */
static void run_records(const uint8_t *payload, uint32_t count, uint8_t *h2d, uint8_t *d2h,
                        bool bulk)
{
    const uint8_t *p = payload + sizeof(struct kernelet_batch);

    for (uint32_t i = 0; i < count; i++) {
        struct kernelet_rec_hdr h;
        memcpy(&h, p, sizeof(h));
        if (h.op == KERNELET_REC_MEMSET) {
            struct kernelet_rec_memset m;
            memcpy(&m, p, sizeof(m));
            memset(dev + m.dst, (int)m.value, m.width);
        } else if (h.op == KERNELET_REC_COPY) {
            struct kernelet_rec_copy c;
            memcpy(&c, p, sizeof(c));
            g_assert_true(!bulk || c.kind == KERNELET_COPY_DTOD || c.region == KVB_REGION_BULK ||
                          c.region == KERNELET_REGION_INLINE);
            if (c.kind == KERNELET_COPY_DTOD)
                memmove(dev + c.dst, dev + c.src, c.width);
            else if (c.kind == KERNELET_COPY_HTOD && c.region == KERNELET_REGION_INLINE)
                rows_copy(dev + c.dst, c.dst_pitch, p + sizeof(c), c.width, c.width, c.height);
            else if (c.kind == KERNELET_COPY_HTOD)
                rows_copy(dev + c.dst, c.dst_pitch, (bulk ? h2d : host) + c.src, c.src_pitch,
                          c.width, c.height);
            else
                rows_copy((bulk ? d2h : host) + c.dst, c.dst_pitch, dev + c.src, c.src_pitch,
                          c.width, c.height);
        }
        p += h.length;
    }
}

/* The device model: gathers the h2d stream, runs the records, scatters the d2h stream. */
static void run_chunk(const struct kvb_chunk *c)
{
    uint8_t *h2d = g_malloc(c->h2d_bytes + 1), *d2h = g_malloc0(c->d2h_bytes + 1);
    uint64_t off = 0;

    for (uint32_t i = 0; i < c->n_h2d; off += c->h2d[i].len, i++)
        memcpy(h2d + off, (void *)(uintptr_t)c->h2d[i].addr, c->h2d[i].len);
    run_records(c->msg + KERNELET_HDR_SIZE, c->n_records, h2d, d2h, true);
    off = 0;
    for (uint32_t i = 0; i < c->n_d2h; off += c->d2h[i].len, i++)
        memcpy((void *)(uintptr_t)c->d2h[i].addr, d2h + off, c->d2h[i].len);
    g_free(h2d);
    g_free(d2h);
}

static void fill_random(uint8_t *p, size_t n, GRand *rng)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)g_rand_int(rng);
}

static void check_split(uint32_t max_bulk)
{
    static struct batch_builder b;
    static struct kvb_chunk c;
    uint8_t inl[40];
    GRand *rng = g_rand_new_with_seed(max_bulk);
    uint8_t *host0 = g_malloc(HOST_SIZE), *dev0 = g_malloc(DEV_SIZE);
    uint8_t *ref_host = g_malloc(HOST_SIZE), *ref_dev = g_malloc(DEV_SIZE);
    struct kvb_splitter s;
    size_t len;
    unsigned chunks = 0, records_seen = 0;
    int rc;

    host = host0;
    dev = dev0;
    fill_random(host, HOST_SIZE, rng);
    fill_random(dev, DEV_SIZE, rng);
    fill_random(inl, sizeof(inl), rng);
    bb_begin(&b);
    bb_memset(&b, 5, 1000, 0xab);
    bb_copy(&b, KERNELET_COPY_HTOD, REGION_ID, 7, 100, (size_t)2 << 20, 1, 0, 0, NULL);
    bb_copy(&b, KERNELET_COPY_DTOH, REGION_ID, 3 << 20, 3000, 3000, 300, 3500, 4096, NULL);
    bb_copy(&b, KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, 4 << 20, 0, 40, 1, 40, 40, inl);
    bb_copy(&b, KERNELET_COPY_HTOD, REGION_ID, 5 << 20, 11, 150000, 3, 160000, 170000, NULL);
    bb_copy(&b, KERNELET_COPY_DTOH, REGION_ID, 12345, 5 << 20, 77, 1, 77, 77, NULL);
    bb_copy(&b, KERNELET_COPY_DTOD, 0, 100, 200, 50, 1, 50, 50, NULL);
    len = bb_end(&b);

    /* The reference: the original records applied directly. */
    memcpy(ref_host, host0, HOST_SIZE);
    memcpy(ref_dev, dev0, DEV_SIZE);
    host = ref_host;
    dev = ref_dev;
    run_records(b.buf + KERNELET_HDR_SIZE, b.count, NULL, NULL, false);
    host = host0;
    dev = dev0;

    g_assert_cmpint(kvb_begin(&s, b.buf, len, max_bulk, region_fn, NULL), ==, 0);
    while ((rc = kvb_next(&s, &c)) > 0) {
        struct kernelet_req_hdr h;
        struct kernelet_batch bh;
        memcpy(&h, c.msg, sizeof(h));
        memcpy(&bh, c.msg + KERNELET_HDR_SIZE, sizeof(bh));
        g_assert_true(c.is_batch);
        g_assert_cmpuint(h.opcode, ==, KERNELET_OP_LAUNCH_BATCH);
        g_assert_cmpuint(h.request_id, ==, 42);
        g_assert_cmpuint(h.length + KERNELET_HDR_SIZE, ==, c.len);
        g_assert_cmpuint(bh.count, ==, c.n_records);
        g_assert_cmpuint(c.h2d_bytes + c.d2h_bytes, <=, max_bulk);
        g_assert_cmpuint(c.n_h2d + c.n_d2h, <=, KERNELET_IOC_MAX_BUFS);
        g_assert_cmpuint(bh.flags, ==, c.has_bulk ? KERNELET_BATCH_COMPLETE : 0);
        for (uint32_t i = 0; i < c.n_records; i++) {
            g_assert_cmpuint(c.orig_index[i], <, b.count);
            g_assert_cmpuint(c.orig_index[i], >=, i ? c.orig_index[i - 1] : 0);
        }
        records_seen = c.orig_index[c.n_records - 1] + 1;
        run_chunk(&c);
        chunks++;
    }
    g_assert_cmpint(rc, ==, 0);
    g_assert_cmpuint(records_seen, ==, b.count);
    /* 2 MiB + ~1 MiB + 450 kB of bulk: at least one chunk per max_bulk bytes. */
    g_assert_cmpuint(chunks, >=, (2u << 20) / max_bulk);
    g_assert_true(memcmp(host0, ref_host, HOST_SIZE) == 0);
    g_assert_true(memcmp(dev0, ref_dev, DEV_SIZE) == 0);
    g_free(host0);
    g_free(dev0);
    g_free(ref_host);
    g_free(ref_dev);
    g_rand_free(rng);
}

static void test_split_2mib(void)
{
    check_split(KERNELET_MAX_BULK);
}

static void test_split_small(void)
{
    check_split(64 << 10);   /* rows and parts of rows (width 150000 > 64 KiB) */
}

static void test_split_tiny(void)
{
    check_split(4096);
}

static void test_module_image(void)
{
    static struct kvb_chunk c;
    uint8_t msg[KERNELET_HDR_SIZE + sizeof(struct kernelet_module_load)];
    struct kernelet_module_load q = {.kind = KERNELET_IMAGE_PTX, .region = REGION_ID,
                                     .offset = 4096, .size = 100000};
    struct kvb_splitter s;

    host = g_malloc0(HOST_SIZE);
    kproto_hdr_put(msg, KERNELET_OP_MODULE_LOAD, sizeof(q), 9, 0);
    memcpy(msg + KERNELET_HDR_SIZE, &q, sizeof(q));
    g_assert_cmpint(kvb_begin(&s, msg, sizeof(msg), KERNELET_MAX_BULK, region_fn, NULL), ==, 0);
    g_assert_cmpint(kvb_next(&s, &c), ==, 1);
    g_assert_cmpuint(c.n_h2d, ==, 1);
    g_assert_cmpuint(c.n_d2h, ==, 0);
    g_assert_true(c.h2d[0].addr == (uintptr_t)host + 4096);
    g_assert_cmpuint(c.h2d[0].len, ==, 100000);
    memcpy(&q, c.msg + KERNELET_HDR_SIZE, sizeof(q));
    g_assert_cmpuint(q.region, ==, KVB_REGION_BULK);
    g_assert_cmpuint(q.offset, ==, 0);
    g_assert_cmpint(kvb_next(&s, &c), ==, 0);

    /* Larger than one chain: refused, not truncated. */
    q = (struct kernelet_module_load){.kind = KERNELET_IMAGE_PTX, .region = REGION_ID,
                                      .size = KERNELET_MAX_BULK + 1};
    memcpy(msg + KERNELET_HDR_SIZE, &q, sizeof(q));
    g_assert_cmpint(kvb_begin(&s, msg, sizeof(msg), KERNELET_MAX_BULK, region_fn, NULL), ==, 0);
    g_assert_cmpint(kvb_next(&s, &c), ==, -E2BIG);
    /* Outside its region. */
    q = (struct kernelet_module_load){.kind = KERNELET_IMAGE_PTX, .region = REGION_ID,
                                      .offset = HOST_SIZE - 10, .size = 11};
    memcpy(msg + KERNELET_HDR_SIZE, &q, sizeof(q));
    g_assert_cmpint(kvb_begin(&s, msg, sizeof(msg), KERNELET_MAX_BULK, region_fn, NULL), ==, 0);
    g_assert_cmpint(kvb_next(&s, &c), ==, -EINVAL);
    g_free(host);
}

static void test_refusals(void)
{
    static struct batch_builder b;
    static struct kvb_chunk c;
    struct kvb_splitter s;
    size_t len;

    host = g_malloc0(HOST_SIZE);
    /* Unknown region. */
    bb_begin(&b);
    bb_copy(&b, KERNELET_COPY_HTOD, REGION_ID + 1, 0, 0, 10, 1, 10, 10, NULL);
    len = bb_end(&b);
    g_assert_cmpint(kvb_begin(&s, b.buf, len, KERNELET_MAX_BULK, region_fn, NULL), ==, 0);
    g_assert_cmpint(kvb_next(&s, &c), ==, -EINVAL);
    /* A range past the region's end. */
    bb_begin(&b);
    bb_copy(&b, KERNELET_COPY_DTOH, REGION_ID, HOST_SIZE - 5, 0, 10, 1, 10, 10, NULL);
    len = bb_end(&b);
    g_assert_cmpint(kvb_begin(&s, b.buf, len, KERNELET_MAX_BULK, region_fn, NULL), ==, 0);
    g_assert_cmpint(kvb_next(&s, &c), ==, -EINVAL);
    /* A record longer than the message, and a header length that disagrees. */
    bb_begin(&b);
    bb_memset(&b, 0, 8, 1);
    len = bb_end(&b);
    ((struct kernelet_rec_hdr *)(void *)(b.buf + KERNELET_HDR_SIZE + 8))->length = 64;
    g_assert_cmpint(kvb_begin(&s, b.buf, len, KERNELET_MAX_BULK, region_fn, NULL), ==, 0);
    g_assert_cmpint(kvb_next(&s, &c), ==, -EINVAL);
    g_assert_cmpint(kvb_begin(&s, b.buf, len - 8, KERNELET_MAX_BULK, region_fn, NULL), ==, -EINVAL);
    /* Without bulk support nothing with host memory can go. */
    bb_begin(&b);
    bb_copy(&b, KERNELET_COPY_HTOD, REGION_ID, 0, 0, 10, 1, 10, 10, NULL);
    len = bb_end(&b);
    g_assert_cmpint(kvb_begin(&s, b.buf, len, 0, region_fn, NULL), ==, 0);
    g_assert_cmpint(kvb_next(&s, &c), ==, -EINVAL);
    g_free(host);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/virtio_bulk/split_2mib", test_split_2mib);
    g_test_add_func("/virtio_bulk/split_64k", test_split_small);
    g_test_add_func("/virtio_bulk/split_4k", test_split_tiny);
    g_test_add_func("/virtio_bulk/module_image", test_module_image);
    g_test_add_func("/virtio_bulk/refusals", test_refusals);
    return g_test_run();
}
