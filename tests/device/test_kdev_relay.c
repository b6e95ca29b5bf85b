/*
 * Unit tests of kdev_relay (hw-virtio-kernelet/kdev_relay.c): how the device rewrites a
 * guest's references to its chain's bulk data before a request goes to kerneletd, and
 * what it refuses. The map used here places bulk data at known offsets of fake regions, so
 * every rewritten field can be computed independently.
 */
#include <glib.h>
#include <string.h>

#include "kdev_relay.h"
#include "kdev_request.h"
#include "kernelet/protocol.h"

#define H2D_REGION 11u
#define D2H_REGION 12u
#define H2D_BASE 4096u
#define D2H_BASE 8192u

struct calls {
    int n;
    bool d2h[8];
    uint64_t off[8], len[8];
    bool fail;
};

static int fake_map(void *opaque, bool d2h, uint64_t off, uint64_t len, uint32_t *region,
                    uint64_t *offset)
{
    struct calls *c = opaque;

    if (c->n < 8) {
        c->d2h[c->n] = d2h;
        c->off[c->n] = off;
        c->len[c->n] = len;
    }
    c->n++;
    if (c->fail)
        return -1;
    *region = d2h ? D2H_REGION : H2D_REGION;
    *offset = (d2h ? D2H_BASE : H2D_BASE) + off;
    return 0;
}

/* A batch of copy records: kinds[i], region, host offset, width, height, pitch. */
struct copy_spec {
    uint32_t kind, region;
    uint64_t host, width, height, pitch;
};

static GByteArray *batch(const struct copy_spec *specs, unsigned n, uint32_t flags)
{
    GByteArray *b = g_byte_array_new();
    struct kernelet_batch bh = { n, flags };

    g_byte_array_append(b, (const guint8 *)&bh, sizeof(bh));
    for (unsigned i = 0; i < n; i++) {
        struct kernelet_rec_copy r = { 0 };
        bool d2h = specs[i].kind == KERNELET_COPY_DTOH;

        r.h.op = KERNELET_REC_COPY;
        r.h.length = sizeof(r);
        r.kind = specs[i].kind;
        r.region = specs[i].region;
        r.dst = d2h ? specs[i].host : 0x7000000;
        r.src = d2h ? 0x7000000 : specs[i].host;
        r.width = specs[i].width;
        r.height = specs[i].height;
        r.dst_pitch = r.src_pitch = specs[i].pitch;
        g_byte_array_append(b, (const guint8 *)&r, sizeof(r));
    }
    return b;
}

static struct kernelet_rec_copy record(const GByteArray *b, unsigned i)
{
    struct kernelet_rec_copy r;

    memcpy(&r, b->data + sizeof(struct kernelet_batch) + i * sizeof(r), sizeof(r));
    return r;
}

static int rewrite(GByteArray *b, uint16_t op, uint32_t h2d, uint32_t d2h, struct calls *c,
                   bool *uses)
{
    char err[160];

    return kdev_relay_rewrite(op, b->data, b->len, h2d, d2h, fake_map, c, uses, err,
                              sizeof(err));
}

static void test_copies_rewritten(void)
{
    const struct copy_spec s[] = {
        { KERNELET_COPY_HTOD, KERNELET_REGION_BULK, 100, 10, 3, 20, },  /* span 50 */
        { KERNELET_COPY_DTOH, KERNELET_REGION_BULK, 0, 64, 1, 64 },
        { KERNELET_COPY_DTOD, 0, 0, 64, 1, 64 },
    };
    GByteArray *b = batch(s, 3, 0);
    struct calls c = { 0 };
    bool uses = false;

    g_assert_cmpint(rewrite(b, KERNELET_OP_LAUNCH_BATCH, 150, 64, &c, &uses), ==, 0);
    g_assert_true(uses);
    g_assert_cmpint(c.n, ==, 2);
    g_assert_false(c.d2h[0]);
    g_assert_cmpuint(c.off[0], ==, 100);
    g_assert_cmpuint(c.len[0], ==, 50);
    g_assert_true(c.d2h[1]);
    g_assert_cmpuint(c.len[1], ==, 64);
    g_assert_cmpuint(record(b, 0).region, ==, H2D_REGION);
    g_assert_cmpuint(record(b, 0).src, ==, H2D_BASE + 100);
    g_assert_cmpuint(record(b, 0).dst, ==, 0x7000000);
    g_assert_cmpuint(record(b, 1).region, ==, D2H_REGION);
    g_assert_cmpuint(record(b, 1).dst, ==, D2H_BASE);
    g_assert_cmpuint(record(b, 2).region, ==, 0);
    /* The guest's buffers may go back only when the copies have run. */
    g_assert_cmpuint(((struct kernelet_batch *)b->data)->flags, ==, KERNELET_BATCH_COMPLETE);
    g_byte_array_free(b, TRUE);
}

static void test_inline_untouched(void)
{
    const struct copy_spec s[] = { { KERNELET_COPY_HTOD, KERNELET_REGION_INLINE, 0, 8, 1, 8 } };
    GByteArray *b = batch(s, 1, 0);
    struct calls c = { 0 };
    bool uses = true;
    g_autofree uint8_t *before = g_memdup2(b->data, b->len);

    g_byte_array_append(b, (const guint8 *)"abcdefgh", 8);
    ((struct kernelet_rec_copy *)(b->data + 8))->h.length += 8;
    memcpy(before, b->data, 8); /* only the batch header is compared below */
    g_assert_cmpint(rewrite(b, KERNELET_OP_LAUNCH_BATCH, 0, 0, &c, &uses), ==, 0);
    g_assert_false(uses);
    g_assert_cmpint(c.n, ==, 0);
    g_assert_cmpmem(b->data, 8, before, 8); /* no BATCH_COMPLETE forced */
    g_byte_array_free(b, TRUE);
}

static void expect_bad(const struct copy_spec *s, unsigned n, uint32_t h2d, uint32_t d2h)
{
    GByteArray *b = batch(s, n, 0);
    struct calls c = { 0 };
    bool uses;

    g_assert_cmpint(rewrite(b, KERNELET_OP_LAUNCH_BATCH, h2d, d2h, &c, &uses), ==,
                    KDEV_RELAY_BAD);
    g_byte_array_free(b, TRUE);
}

static void test_refusals(void)
{
    /* One byte beyond the h2d bulk; pitched span 10*2+10 = 30 > 29. */
    expect_bad((struct copy_spec[]){ { KERNELET_COPY_HTOD, KERNELET_REGION_BULK, 1, 100, 1,
                                       100 } }, 1, 100, 0);
    expect_bad((struct copy_spec[]){ { KERNELET_COPY_HTOD, KERNELET_REGION_BULK, 0, 10, 3,
                                       10 } }, 1, 29, 0);
    /* A d2h copy counts against the d2h bytes, not the h2d ones. */
    expect_bad((struct copy_spec[]){ { KERNELET_COPY_DTOH, KERNELET_REGION_BULK, 0, 64, 1,
                                       64 } }, 1, 4096, 0);
    /* Regions of the device's connection (staging, RAM) are not the guest's to name. */
    expect_bad((struct copy_spec[]){ { KERNELET_COPY_HTOD, 1, 0, 8, 1, 8 } }, 1, 8, 0);
    /* Inline bytes make no sense for a device-to-host copy. */
    expect_bad((struct copy_spec[]){ { KERNELET_COPY_DTOH, KERNELET_REGION_INLINE, 0, 8, 1,
                                       8 } }, 1, 0, 8);
    /* Offsets that overflow; a pitch below the width. */
    expect_bad((struct copy_spec[]){ { KERNELET_COPY_HTOD, KERNELET_REGION_BULK, UINT64_MAX,
                                       8, 1, 8 } }, 1, 100, 0);
    expect_bad((struct copy_spec[]){ { KERNELET_COPY_HTOD, KERNELET_REGION_BULK, 0,
                                       UINT64_MAX / 2, 4, UINT64_MAX / 2 } }, 1, 100, 0);
    expect_bad((struct copy_spec[]){ { KERNELET_COPY_HTOD, KERNELET_REGION_BULK, 0, 8, 2,
                                       4 } }, 1, 100, 0);
    expect_bad((struct copy_spec[]){ { 9, KERNELET_REGION_BULK, 0, 8, 1, 8 } }, 1, 100, 0);
}

static void test_framing(void)
{
    const struct copy_spec s[] = { { KERNELET_COPY_HTOD, KERNELET_REGION_BULK, 0, 8, 1, 8 } };
    GByteArray *b = batch(s, 1, 0);
    struct calls c = { 0 };
    bool uses;

    ((struct kernelet_batch *)b->data)->count = 2; /* one record missing */
    g_assert_cmpint(rewrite(b, KERNELET_OP_LAUNCH_BATCH, 8, 0, &c, &uses), ==, KDEV_RELAY_BAD);
    ((struct kernelet_batch *)b->data)->count = 1;
    ((struct kernelet_rec_copy *)(b->data + 8))->h.length = 68; /* not a multiple of 8 */
    g_assert_cmpint(rewrite(b, KERNELET_OP_LAUNCH_BATCH, 8, 0, &c, &uses), ==, KDEV_RELAY_BAD);
    ((struct kernelet_rec_copy *)(b->data + 8))->h.length = 16; /* too short for a copy */
    g_byte_array_set_size(b, 8 + 16);
    g_assert_cmpint(rewrite(b, KERNELET_OP_LAUNCH_BATCH, 8, 0, &c, &uses), ==, KDEV_RELAY_BAD);
    g_byte_array_append(b, (const guint8 *)"12345678", 8); /* bytes after the records */
    ((struct kernelet_rec_copy *)(b->data + 8))->h.op = KERNELET_REC_MEMSET;
    g_assert_cmpint(rewrite(b, KERNELET_OP_LAUNCH_BATCH, 8, 0, &c, &uses), ==, KDEV_RELAY_BAD);
    g_byte_array_set_size(b, 4);
    g_assert_cmpint(rewrite(b, KERNELET_OP_LAUNCH_BATCH, 8, 0, &c, &uses), ==, KDEV_RELAY_BAD);
    g_byte_array_free(b, TRUE);
}

static void test_map_failure(void)
{
    const struct copy_spec s[] = { { KERNELET_COPY_HTOD, KERNELET_REGION_BULK, 0, 8, 1, 8 } };
    GByteArray *b = batch(s, 1, 0);
    struct calls c = { .fail = true };
    bool uses;

    g_assert_cmpint(rewrite(b, KERNELET_OP_LAUNCH_BATCH, 8, 0, &c, &uses), ==,
                    KDEV_RELAY_NOMAP);
    g_byte_array_free(b, TRUE);
}

static void test_module_image(void)
{
    struct kernelet_module_load m = { KERNELET_IMAGE_PTX, KERNELET_REGION_BULK, 8, 92 };
    GByteArray *b = g_byte_array_new();
    struct calls c = { 0 };
    bool uses;

    g_byte_array_append(b, (const guint8 *)&m, sizeof(m));
    g_assert_cmpint(rewrite(b, KERNELET_OP_MODULE_LOAD, 100, 0, &c, &uses), ==, 0);
    g_assert_true(uses);
    memcpy(&m, b->data, sizeof(m));
    g_assert_cmpuint(m.region, ==, H2D_REGION);
    g_assert_cmpuint(m.offset, ==, H2D_BASE + 8);
    m = (struct kernelet_module_load){ KERNELET_IMAGE_PTX, KERNELET_REGION_BULK, 8, 93 };
    memcpy(b->data, &m, sizeof(m));
    g_assert_cmpint(rewrite(b, KERNELET_OP_MODULE_LOAD, 100, 0, &c, &uses), ==, KDEV_RELAY_BAD);
    /* Other opcodes pass as they are. */
    g_assert_cmpint(rewrite(b, KERNELET_OP_MEM_ALLOC, 0, 0, &c, &uses), ==, 0);
    g_assert_false(uses);
    g_assert_true(kdev_relay_local(KERNELET_OP_DIAG_ECHO_BULK, true));
    g_assert_true(kdev_relay_local(KERNELET_OP_HELLO, true));
    /* CONTEXT_CLOSE goes to a daemon that keeps contexts apart (it frees what the context
     * created); without one the device answers it. */
    g_assert_false(kdev_relay_local(KERNELET_OP_CONTEXT_CLOSE, true));
    g_assert_true(kdev_relay_local(KERNELET_OP_CONTEXT_CLOSE, false));
    g_assert_false(kdev_relay_local(KERNELET_OP_MEM_ALLOC, true));
    g_assert_false(kdev_relay_local(KERNELET_OP_MEM_ALLOC, false));
    g_byte_array_free(b, TRUE);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kdev_relay/copies_rewritten", test_copies_rewritten);
    g_test_add_func("/kdev_relay/inline_untouched", test_inline_untouched);
    g_test_add_func("/kdev_relay/refusals", test_refusals);
    g_test_add_func("/kdev_relay/framing", test_framing);
    g_test_add_func("/kdev_relay/map_failure", test_map_failure);
    g_test_add_func("/kdev_relay/module_image", test_module_image);
    return g_test_run();
}
