/* libcuda's walker of device printf records (guest-driver/libcuda/printf_records.c), alone:
 * each conversion formatted as the host's own printf formats the same value, records in
 * order, a record not yet complete, malformed records, and random rings (a tenant kernel
 * can write anything there) that must never make it read out of bounds or crash. */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"
#include "printf_records.h"

/* Device memory as the test sees it: a few texts at fixed addresses. */
typedef struct text_at {
    uint64_t addr;
    const char *text;
} text_at;

typedef struct memory {
    const text_at *t;
    size_t n;
    unsigned reads;
} memory;

static bool read_text(void *user, uint64_t addr, bool format, char *buf, size_t cap)
{
    memory *m = user;
    (void)format;
    m->reads++;
    for (size_t i = 0; i < m->n; i++)
        if (m->t[i].addr == addr) {
            g_strlcpy(buf, m->t[i].text, cap);
            return true;
        }
    return false;
}

/* An argument buffer built as nvcc packs it. */
typedef struct args {
    uint8_t b[256];
    uint32_t n;
} args;

static void put(args *a, const void *v, uint32_t size)
{
    a->n = (a->n + size - 1) & ~(size - 1);
    memcpy(a->b + a->n, v, size);
    a->n += size;
}

static void put_i(args *a, int32_t v) { put(a, &v, 4); }
static void put_l(args *a, int64_t v) { put(a, &v, 8); }
static void put_d(args *a, double v) { put(a, &v, 8); }

static char *format(const char *fmt, const args *a, memory *m)
{
    struct kcu_pf_out out = {0};
    kcu_pf_format(fmt, a->b, a->n, read_text, m, &out);
    g_assert_false(out.oom);
    return out.p ? out.p : g_malloc0(1);
}

static void expect(const char *fmt, const args *a, memory *m, const char *want)
{
    char *got = format(fmt, a, m);
    g_assert_cmpstr(got, ==, want);
    free(got);
}

static void test_conversions(void)
{
    static const text_at texts[] = {{0x5000, "device string"}};
    memory m = {texts, 1, 0};
    char want[512];
    args a = {0};

    put_i(&a, -42); put_i(&a, 42); put_i(&a, 0xbeef); put_i(&a, 8); put_i(&a, 'Z');
    snprintf(want, sizeof want, "%d|%5i|%#x|%o|%c|", -42, 42, 0xbeef, 8, 'Z');
    expect("%d|%5i|%#x|%o|%c|", &a, &m, want);

    a = (args){0};
    put_i(&a, 7); put_d(&a, 3.14159); put_l(&a, -1234567890123LL); put_l(&a, 0x5000);
    snprintf(want, sizeof want, "%-4d|%08.3f|%lld|%s|", 7, 3.14159, -1234567890123LL,
             "device string");
    expect("%-4d|%08.3f|%lld|%s|", &a, &m, want);

    a = (args){0};
    put_d(&a, 1e-7); put_d(&a, 12345.678); put_d(&a, 0.5); put_d(&a, -2.25);
    snprintf(want, sizeof want, "%e %g %a %+.2E", 1e-7, 12345.678, 0.5, -2.25);
    expect("%e %g %a %+.2E", &a, &m, want);

    a = (args){0};      /* h and hh cut the value as C does; u and X of 32 bits */
    put_i(&a, 70000); put_i(&a, 300); put_i(&a, -1); put_i(&a, -1);
    snprintf(want, sizeof want, "%hd %hhu %u %X", (short)70000, (unsigned char)300, 4294967295u,
             0xffffffffu);
    expect("%hd %hhu %u %X", &a, &m, want);

    a = (args){0};      /* '*' width and precision, a negative width meaning '-' */
    put_i(&a, 6); put_i(&a, 2); put_d(&a, 2.71828); put_i(&a, -5); put_i(&a, 3);
    put_i(&a, 3); put_l(&a, 0x5000);
    snprintf(want, sizeof want, "[%*.*f][%*d][%.*s]", 6, 2, 2.71828, -5, 3, 3, "device string");
    expect("[%*.*f][%*d][%.*s]", &a, &m, want);

    a = (args){0};
    put_l(&a, 0); put_l(&a, 0x9999); put_l(&a, (int64_t)0x1234abcdULL); put_l(&a, 18446744073709551615ULL);
    snprintf(want, sizeof want, "%s %s %p %zu 100%%", "(null)", "(unreadable)",
             (void *)(uintptr_t)0x1234abcdULL, (size_t)18446744073709551615ULL);
    expect("%s %s %p %zu 100%%", &a, &m, want);

    /* a huge width is clamped, not obeyed */
    a = (args){0};
    put_i(&a, 1);
    char *got = format("%999999999d", &a, &m);
    g_assert_cmpuint(strlen(got), ==, 4096);
    free(got);

    /* arguments missing from the record: the conversion is written as it stands */
    a = (args){0};
    put_i(&a, 5);
    expect("%d and %f and %d", &a, &m, "5 and %f and %d");
    /* a conversion the walker does not know ends the conversions; the text stays */
    expect("%d %n left", &a, &m, "5 %n left");
}

/* ---- records ---- */

typedef struct ring {
    uint8_t b[1024];
    size_t n;
} ring;

static void record(ring *r, uint64_t fmt, const args *a, uint32_t total_override)
{
    uint32_t total = KPTX_PRINTF_RECORD_HEADER + ((a->n + 7) & ~7u);
    uint32_t argb = a->n;
    memset(r->b + r->n, 0, total);
    uint32_t t = total_override ? total_override : total;
    memcpy(r->b + r->n, &t, 4);
    memcpy(r->b + r->n + 4, &argb, 4);
    memcpy(r->b + r->n + 8, &fmt, 8);
    memcpy(r->b + r->n + 16, a->b, a->n);
    r->n += total;
}

static const text_at fmts[] = {{0x100, "a=%d\n"}, {0x200, "b=%f s=%s\n"}, {0x300, "plain\n"},
                               {0x400, "str"}};

static void walk(const ring *r, size_t len, struct kcu_pf_walk *res, char **text)
{
    memory m = {fmts, G_N_ELEMENTS(fmts), 0};
    struct kcu_pf_out out = {0};
    kcu_pf_walk_records(r->b, len, read_text, &m, &out, res);
    *text = out.p ? out.p : g_malloc0(1);
}

static void three(ring *r)
{
    args a = {0}, b = {0}, none = {0};
    put_i(&a, 1);
    put_d(&b, 0.5);
    put_l(&b, 0x400);
    *r = (ring){0};
    record(r, 0x100, &a, 0);
    record(r, 0x200, &b, 0);
    record(r, 0x300, &none, 0);
}

static void test_walk(void)
{
    ring r;
    struct kcu_pf_walk res;
    char *text;

    three(&r);
    walk(&r, r.n, &res, &text);
    g_assert_cmpstr(text, ==, "a=1\nb=0.500000 s=str\nplain\n");
    g_assert_cmpuint(res.consumed, ==, r.n);
    g_assert_cmpuint(res.records, ==, 3);
    g_assert_false(res.malformed);
    free(text);

    /* the second record reserved but not yet written (total 0): stop before it */
    three(&r);
    memset(r.b + 24, 0, 4);
    walk(&r, r.n, &res, &text);
    g_assert_cmpstr(text, ==, "a=1\n");
    g_assert_cmpuint(res.consumed, ==, 24);
    g_assert_false(res.malformed);
    free(text);

    /* a buffer ending inside a record: only the whole ones */
    three(&r);
    walk(&r, r.n - 8, &res, &text);
    g_assert_cmpstr(text, ==, "a=1\nb=0.500000 s=str\n");
    g_assert_cmpuint(res.consumed, ==, 24 + 32);
    free(text);

    /* an unknown format address: the record is skipped, counted, and the walk goes on */
    three(&r);
    uint64_t bad = 0xdead;
    memcpy(r.b + 8, &bad, 8);
    walk(&r, r.n, &res, &text);
    g_assert_cmpstr(text, ==, "b=0.500000 s=str\nplain\n");
    g_assert_cmpuint(res.unreadable, ==, 1);
    free(text);
}

static void test_malformed(void)
{
    /* totals a kernel could write over the first record's: each stops the walk at once */
    static const uint32_t totals[] = {8, 20, 15, 1024, 0xfffffff8u};
    for (size_t i = 0; i < G_N_ELEMENTS(totals); i++) {
        ring r;
        struct kcu_pf_walk res;
        char *text;
        three(&r);
        memcpy(r.b, &totals[i], 4);
        walk(&r, r.n, &res, &text);
        g_assert_true(res.malformed);
        g_assert_cmpuint(res.consumed, ==, 0);
        g_assert_cmpstr(text, ==, "");
        free(text);
    }
    /* argument bytes larger than the record */
    ring r;
    struct kcu_pf_walk res;
    char *text;
    three(&r);
    uint32_t argb = 9;
    memcpy(r.b + 4, &argb, 4);
    walk(&r, r.n, &res, &text);
    g_assert_true(res.malformed);
    free(text);
}

/* Random rings and random formats: nothing may crash or read past what it was given (the
 * sanitizer build runs this too). Records are placed in exactly-sized heap buffers. */
static void test_fuzz(void)
{
    static const char alphabet[] = "%%%%dsfxXlhz*.-+ #0123456789cgeaApnLjtiuo\n";
    GRand *rnd = g_rand_new_with_seed(14);
    unsigned formatted = 0;
    text_at t[4];
    char fmtbuf[4][64];
    for (unsigned iter = 0; iter < 20000; iter++) {
        for (unsigned k = 0; k < 4; k++) {
            unsigned len = g_rand_int_range(rnd, 0, 63);
            for (unsigned i = 0; i < len; i++)
                fmtbuf[k][i] = alphabet[g_rand_int_range(rnd, 0, sizeof alphabet - 1)];
            fmtbuf[k][len] = '\0';
            t[k] = (text_at){0x100 * (k + 1), fmtbuf[k]};
        }
        size_t n = g_rand_int_range(rnd, 0, 512);
        uint8_t *buf = g_malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)g_rand_int(rnd);
        /* plausible headers now and then, so that formatting is reached */
        for (size_t o = 0; o + 16 <= n && g_rand_boolean(rnd); o += 16) {
            uint32_t total = 16 * g_rand_int_range(rnd, 1, 4), argb = g_rand_int_range(rnd, 0, 40);
            uint64_t fmt = 0x100 * g_rand_int_range(rnd, 0, 6);
            memcpy(buf + o, &total, 4);
            memcpy(buf + o + 4, &argb, 4);
            memcpy(buf + o + 8, &fmt, 8);
        }
        memory m = {t, 4, 0};
        struct kcu_pf_out out = {0};
        struct kcu_pf_walk res;
        kcu_pf_walk_records(buf, n, read_text, &m, &out, &res);
        g_assert_cmpuint(res.consumed, <=, n);
        g_assert_cmpuint(res.consumed % 8, ==, 0);
        formatted += res.records;
        free(out.p);
        g_free(buf);
    }
    g_rand_free(rnd);
    g_assert_cmpuint(formatted, >, 1000);  /* the formatting was reached, not only headers */
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/libcuda/printf/conversions", test_conversions);
    g_test_add_func("/libcuda/printf/walk", test_walk);
    g_test_add_func("/libcuda/printf/malformed", test_malformed);
    g_test_add_func("/libcuda/printf/fuzz", test_fuzz);
    return g_test_run();
}
