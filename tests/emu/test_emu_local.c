/* The emulator's local memory is laid out as an H100's: a thread's .local variables lie
 * just below KEMU_LOCAL_TOP (the stack pointer's start there), stacksave reads at or below
 * every one of them, and accesses outside [KEMU_LOCAL_TOP - local bytes, KEMU_LOCAL_TOP)
 * fault, directly or through generic addresses; a recursive function's locals survive
 * its calls. The fencing pass relies on that layout to confine local accesses. */
#include "emu_test_util.h"

#include <string.h>

static const unsigned ONE[3] = {1, 1, 1};

/* addrs: the stack pointer and two variables' addresses of the entry (to out) and of a
 * device function it calls (to seen; no parameters, so no call frames count in the
 * function's local bytes). probe and gprobe load a word at a local address, directly
 * and generically. generic round-trips a variable's address through cvta per thread. */
static const char layout_ptx[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".global .align 8 .u64 seen[3];\n"
    ".func leaf()\n{\n"
    "  .local .align 16 .b8 c[32];\n  .local .b8 d[5];\n  .reg .u64 %sp, %a, %b;\n"
    "  stacksave.u64 %sp;\n  mov.u64 %a, c;\n  mov.u64 %b, d;\n"
    "  st.global.u64 [seen], %sp;\n  st.global.u64 [seen+8], %a;\n"
    "  st.global.u64 [seen+16], %b;\n  ret;\n}\n"
    ".visible .entry addrs(.param .u64 out)\n{\n"
    "  .local .align 8 .b8 a[24];\n  .local .align 4 .u32 b[3];\n"
    "  .reg .u64 %o, %sp, %a, %b;\n  ld.param.u64 %o, [out];\n  stacksave.u64 %sp;\n"
    "  mov.u64 %a, a;\n  mov.u64 %b, b;\n  st.global.u64 [%o], %sp;\n"
    "  st.global.u64 [%o+8], %a;\n  st.global.u64 [%o+16], %b;\n  call.uni leaf;\n  ret;\n}\n"
    ".visible .entry probe(.param .u64 addr)\n{\n"
    "  .local .align 8 .b8 a[24];\n  .local .align 4 .u32 b[3];\n"
    "  .reg .u64 %p;\n  .reg .u32 %v;\n  ld.param.u64 %p, [addr];\n"
    "  ld.local.u32 %v, [%p];\n  ret;\n}\n"
    ".visible .entry gprobe(.param .u64 addr)\n{\n"
    "  .local .align 8 .b8 a[24];\n  .local .align 4 .u32 b[3];\n"
    "  .reg .u64 %p, %g;\n  .reg .u32 %v;\n  ld.param.u64 %p, [addr];\n"
    "  cvta.local.u64 %g, %p;\n  ld.u32 %v, [%g];\n  ret;\n}\n"
    ".visible .entry generic(.param .u64 out)\n{\n"
    "  .local .align 4 .u32 b[3];\n"
    "  .reg .u64 %o, %l, %g, %g2, %back;\n  .reg .u32 %t, %w, %v;\n"
    "  ld.param.u64 %o, [out];\n  mov.u32 %t, %tid.x;\n  mad.wide.u32 %o, %t, 32, %o;\n"
    "  add.u32 %w, %t, 100;\n  st.local.u32 [b+8], %w;\n"
    "  mov.u64 %l, b;\n  cvta.local.u64 %g, %l;\n  cvta.local.u64 %g2, b;\n"
    "  ld.u32 %v, [%g+8];\n  cvta.to.local.u64 %back, %g;\n"
    "  st.global.u32 [%o], %v;\n  st.global.u64 [%o+8], %l;\n"
    "  st.global.u64 [%o+16], %back;\n  st.global.u64 [%o+24], %g2;\n  ret;\n}\n";

static void open_ptx(emu_fixture *f, const char *ptx)
{
    kemu_error err = {0};
    kemu_device_config cfg = {.workers = 2};
    memset(f, 0, sizeof *f);
    g_assert_cmpint(kemu_device_create(&cfg, &f->dev, &err), ==, 0);
    if (kemu_module_load(f->dev, ptx, strlen(ptx), &f->mod, &err) != 0)
        g_error("load: %s", err.message);
}

static uint32_t local_bytes(emu_fixture *f, const char *name)
{
    kemu_function_info info;
    kemu_function_info_get(emu_fixture_fn(f, name), &info);
    return info.local_bytes;
}

/* [addr, addr + bytes) lies in [lo, KEMU_LOCAL_TOP), aligned to align. */
static void assert_local(uint64_t addr, uint64_t bytes, uint64_t align, uint64_t lo)
{
    g_assert_cmphex(addr, >=, lo);
    g_assert_cmphex(addr + bytes, <=, KEMU_LOCAL_TOP);
    g_assert_cmphex(addr % align, ==, 0);
}

/* Every variable of the kernel, the entry's and its callee's, lies in the top-anchored
 * range, none overlaps another, and stacksave reads the range's bottom in both: the
 * lowest variable's address, below all of them as the GPU's stack pointer is. */
static void test_layout(void)
{
    emu_fixture f;
    open_ptx(&f, layout_ptx);
    uint32_t bytes = local_bytes(&f, "addrs");
    g_assert_cmpuint(bytes, >=, 24 + 12 + 32 + 5);
    uint64_t lo = KEMU_LOCAL_TOP - bytes, out[3], seen[3];
    kemu_devptr dout = emu_buf(&f, NULL, sizeof out), dseen;
    emu_arg args[] = {ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "addrs"), ONE, ONE, 0, args, 1);
    emu_download(&f, out, dout, sizeof out);
    kemu_error err = {0};
    size_t n;
    g_assert_cmpint(kemu_module_get_global(f.mod, "seen", &dseen, &n, &err), ==, 0);
    emu_download(&f, seen, dseen, sizeof seen);
    const uint64_t addr[4] = {out[1], out[2], seen[1], seen[2]};
    const uint64_t size[4] = {24, 12, 32, 5}, align[4] = {8, 4, 16, 1};
    uint64_t lowest = KEMU_LOCAL_TOP;
    for (unsigned i = 0; i < 4; i++) {
        assert_local(addr[i], size[i], align[i], lo);
        lowest = addr[i] < lowest ? addr[i] : lowest;
        for (unsigned j = 0; j < i; j++)
            g_assert_true(addr[i] + size[i] <= addr[j] || addr[j] + size[j] <= addr[i]);
    }
    g_assert_cmphex(lowest, ==, lo);
    g_assert_cmphex(out[0], ==, lo);    /* stacksave in the entry */
    g_assert_cmphex(seen[0], ==, lo);   /* and in the function it calls */
    emu_fixture_close(&f);
}

static int probe(emu_fixture *f, const char *entry, uint64_t addr, kemu_error *err)
{
    emu_arg args[] = {ARG64(addr)};
    return emu_launch_args(emu_fixture_fn(f, entry), ONE, (unsigned[3]){33, 1, 1}, 0, args, 1,
                           0, err);
}

/* Loads reach [KEMU_LOCAL_TOP - local bytes, KEMU_LOCAL_TOP) and nothing else, directly
 * and through generic addresses; outside they fault as local accesses. */
static void test_bounds(void)
{
    static const char *const entries[] = {"probe", "gprobe"};
    emu_fixture f;
    open_ptx(&f, layout_ptx);
    for (unsigned e = 0; e < 2; e++) {
        uint64_t lo = KEMU_LOCAL_TOP - local_bytes(&f, entries[e]);
        const uint64_t ok[] = {lo, KEMU_LOCAL_TOP - 4};
        const uint64_t bad[] = {lo - 4, KEMU_LOCAL_TOP, 0};
        kemu_error err = {0};
        for (unsigned i = 0; i < 2; i++)
            if (probe(&f, entries[e], ok[i], &err) != 0)
                g_error("%s at %#llx: %s", entries[e], (unsigned long long)ok[i], err.message);
        for (unsigned i = 0; i < 3; i++) {
            g_assert_cmpint(probe(&f, entries[e], bad[i], &err), ==, KEMU_EADDRESS);
            g_assert_nonnull(strstr(err.message, "local"));
        }
    }
    emu_fixture_close(&f);
}

/* A generic address made from a local one reads what the thread stored there and turns
 * back into it; cvta of the variable itself gives the same generic address. */
static void test_generic(void)
{
    enum { T = 40 };
    emu_fixture f;
    open_ptx(&f, layout_ptx);
    uint64_t lo = KEMU_LOCAL_TOP - local_bytes(&f, "generic");
    struct {
        uint32_t value, pad;
        uint64_t local, back, generic;
    } out[T];
    kemu_devptr dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(dout)};
    emu_launch_ok(emu_fixture_fn(&f, "generic"), ONE, (unsigned[3]){T, 1, 1}, 0, args, 1);
    emu_download(&f, out, dout, sizeof out);
    for (unsigned t = 0; t < T; t++) {
        g_assert_cmpuint(out[t].value, ==, t + 100);
        assert_local(out[t].local, 12, 4, lo);
        g_assert_cmphex(out[t].back, ==, out[t].local);
        g_assert_cmphex(out[t].generic, !=, out[t].local);
    }
    emu_fixture_close(&f);
}

/* rec(n) keeps n and 3n in its local buf across its call of rec(n - 1) and returns the
 * sum of both over n .. 0, 2n(n + 1); each invocation records its stack pointer and buf's
 * address (16 bytes at out + 16 n, each thread's out 1 KiB apart). Thread t recurses
 * n0 + t deep. */
static const char recursion_ptx[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".func (.param .u32 r) rec(.param .u32 n, .param .u64 o)\n{\n"
    "  .local .align 4 .b8 buf[8];\n"
    "  .reg .u32 %n, %n1, %t, %r, %x;\n  .reg .u64 %o, %sp, %p, %a;\n  .reg .pred %q;\n"
    "  ld.param.u32 %n, [n];\n  ld.param.u64 %o, [o];\n  stacksave.u64 %sp;\n"
    "  mov.u64 %a, buf;\n  mad.wide.u32 %p, %n, 16, %o;\n"
    "  st.global.u64 [%p], %sp;\n  st.global.u64 [%p+8], %a;\n"
    "  st.local.u32 [buf], %n;\n  mul.lo.u32 %t, %n, 3;\n  st.local.u32 [buf+4], %t;\n"
    "  mov.u32 %r, 0;\n  setp.eq.u32 %q, %n, 0;\n  @%q bra done;\n  sub.u32 %n1, %n, 1;\n"
    "  {\n  .param .u32 a0;\n  .param .u64 a1;\n  .param .u32 rv;\n"
    "  st.param.u32 [a0], %n1;\n  st.param.u64 [a1], %o;\n"
    "  call (rv), rec, (a0, a1);\n  ld.param.u32 %r, [rv];\n  }\n"
    "done:\n  ld.local.u32 %x, [buf];\n  add.u32 %r, %r, %x;\n"
    "  ld.local.u32 %x, [buf+4];\n  add.u32 %r, %r, %x;\n  st.param.u32 [r], %r;\n  ret;\n}\n"
    ".visible .entry recurse(.param .u64 out, .param .u32 n0)\n{\n"
    "  .reg .u64 %o;\n  .reg .u32 %n, %t, %r;\n"
    "  ld.param.u64 %o, [out];\n  ld.param.u32 %n, [n0];\n  mov.u32 %t, %tid.x;\n"
    "  add.u32 %n, %n, %t;\n  mad.wide.u32 %o, %t, 1024, %o;\n"
    "  {\n  .param .u32 a0;\n  .param .u64 a1;\n  .param .u32 rv;\n"
    "  st.param.u32 [a0], %n;\n  st.param.u64 [a1], %o;\n"
    "  call (rv), rec, (a0, a1);\n  ld.param.u32 %r, [rv];\n  }\n"
    "  st.global.u32 [%o+1000], %r;\n  ret;\n}\n";

/* Each thread's sum proves its locals were restored after every call; the stack pointer
 * starts below the kernel's locals and falls by one saved invocation (buf among it) per
 * call, while buf stays where the compiler put it (its values are what move). */
static void test_recursion(void)
{
    enum { T = 8, N0 = 20, WORDS = 1024 / 8 };
    emu_fixture f;
    open_ptx(&f, recursion_ptx);
    kemu_function_info info;
    kemu_function_info_get(emu_fixture_fn(&f, "recurse"), &info);
    static uint64_t out[T * WORDS];
    kemu_devptr dout = emu_buf(&f, NULL, sizeof out);
    emu_arg args[] = {ARG64(dout), ARG32(N0)};
    emu_launch_ok(emu_fixture_fn(&f, "recurse"), ONE, (unsigned[3]){T, 1, 1}, 0, args, 2);
    emu_download(&f, out, dout, sizeof out);
    for (unsigned t = 0; t < T; t++) {
        const uint64_t *o = out + t * WORDS;
        unsigned n = N0 + t;
        g_assert_cmpuint((uint32_t)o[1000 / 8], ==, 2u * n * (n + 1));
        uint64_t buf = o[2 * n + 1];
        assert_local(buf, 8, 4, KEMU_LOCAL_TOP - info.local_bytes);
        uint64_t step = o[2 * n] - o[2 * n - 2];   /* one invocation saved */
        g_assert_cmpuint(step, >=, 8);
        g_assert_cmphex(o[2 * n], ==, buf - step);   /* buf is the kernel's lowest local */
        for (unsigned k = 0; k < n; k++) {
            g_assert_cmphex(o[2 * k + 1], ==, buf);
            g_assert_cmphex(o[2 * k + 2] - o[2 * k], ==, step);
        }
    }
    emu_fixture_close(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/emu/local/layout", test_layout);
    g_test_add_func("/emu/local/bounds", test_bounds);
    g_test_add_func("/emu/local/generic", test_generic);
    g_test_add_func("/emu/local/recursion", test_recursion);
    return g_test_run();
}
