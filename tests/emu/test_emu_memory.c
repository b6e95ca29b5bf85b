/* Device memory of the emulator: allocation handles and ranges, the memory limit, copies
 * and memsets with their bounds, and concurrent use from several threads: allocations,
 * copies and launches of one module at the same time, with results checked. */
#include <kernelet/emu.h>

#include <glib.h>
#include <pthread.h>
#include <string.h>

static kemu_device *new_device(uint64_t memory, unsigned workers)
{
    kemu_device_config cfg = {.memory_bytes = memory, .workers = workers};
    kemu_device *dev;
    kemu_error err = {0};
    g_assert_cmpint(kemu_device_create(&cfg, &dev, &err), ==, 0);
    return dev;
}

static void test_alloc_and_ranges(void)
{
    kemu_device *dev = new_device(0, 1);
    kemu_error err = {0};
    kemu_devptr a, b, base;
    size_t bytes;
    g_assert_cmpint(kemu_mem_alloc(dev, 1000, &a, &err), ==, 0);
    g_assert_cmpint(kemu_mem_alloc(dev, 1, &b, &err), ==, 0);
    g_assert_cmpuint(a % 256, ==, 0);
    g_assert_cmpuint(b % 256, ==, 0);
    g_assert_cmpuint(a, !=, 0);
    g_assert_true(b > a + 1000 || a > b + 1);
    g_assert_cmpint(kemu_mem_range(dev, a + 999, &base, &bytes, &err), ==, 0);
    g_assert_cmpuint(base, ==, a);
    g_assert_cmpuint(bytes, ==, 1000);
    g_assert_cmpint(kemu_mem_range(dev, a + 1000, &base, &bytes, &err), ==, KEMU_EINVAL);
    g_assert_cmpint(kemu_mem_alloc(dev, 0, &b, &err), ==, KEMU_EINVAL);
    g_assert_cmpint(kemu_mem_free(dev, a + 8, &err), ==, KEMU_EINVAL);   /* not the start */
    g_assert_cmpint(kemu_mem_free(dev, a, &err), ==, 0);
    g_assert_cmpint(kemu_mem_free(dev, a, &err), ==, KEMU_EINVAL);       /* twice */
    g_assert_cmpint(kemu_mem_range(dev, a, &base, &bytes, &err), ==, KEMU_EINVAL);
    /* freed addresses are not handed out again */
    for (int i = 0; i < 100; i++) {
        kemu_devptr c;
        g_assert_cmpint(kemu_mem_alloc(dev, 1000, &c, &err), ==, 0);
        g_assert_cmpuint(c, !=, a);
        g_assert_cmpint(kemu_mem_free(dev, c, &err), ==, 0);
    }
    kemu_device_destroy(dev);
}

/* Host memory mapped for kernels (kemu_host_map): reachable at its device address with
 * the caller's bytes in place, not counted against the device memory limit, never freed
 * by the emulator, and gone after kemu_host_unmap (which only takes the address it gave,
 * and does not free what kemu_mem_alloc gave). */
static void test_host_map(void)
{
    kemu_device *dev = new_device(1 << 20, 1);
    kemu_error err = {0};
    kemu_devptr d, a, base;
    size_t bytes;
    uint64_t free_bytes, total;
    static uint32_t host[4096];
    for (unsigned i = 0; i < 4096; i++)
        host[i] = i * 3u;
    g_assert_cmpint(kemu_host_map(dev, NULL, host, sizeof host, &d, &err), ==, 0);
    g_assert_cmpuint(d, !=, 0);
    kemu_mem_info(dev, &free_bytes, &total);
    g_assert_cmpuint(free_bytes, ==, 1 << 20);
    g_assert_cmpint(kemu_mem_range(dev, d + 100, &base, &bytes, &err), ==, 0);
    g_assert_cmpuint(base, ==, d);
    g_assert_cmpuint(bytes, ==, sizeof host);
    uint32_t out[4] = {0};
    g_assert_cmpint(kemu_memcpy_dtoh(dev, out, d + 40, sizeof out, &err), ==, 0);
    g_assert_cmpuint(out[0], ==, 30);
    host[10] = 777;     /* the caller's memory itself, not a copy */
    g_assert_cmpint(kemu_memcpy_dtoh(dev, out, d + 40, sizeof out, &err), ==, 0);
    g_assert_cmpuint(out[0], ==, 777);
    g_assert_cmpint(kemu_mem_free(dev, d, &err), ==, KEMU_EINVAL);  /* not device memory */
    g_assert_cmpint(kemu_mem_alloc(dev, 64, &a, &err), ==, 0);
    g_assert_cmpint(kemu_host_unmap(dev, a, &err), ==, KEMU_EINVAL); /* not host memory */
    g_assert_cmpint(kemu_host_unmap(dev, d, &err), ==, 0);
    g_assert_cmpint(kemu_mem_range(dev, d, &base, &bytes, &err), ==, KEMU_EINVAL);
    g_assert_cmpint(kemu_host_map(dev, NULL, NULL, 64, &d, &err), ==, KEMU_EINVAL);
    g_assert_cmpint(kemu_host_map(dev, NULL, host, 0, &d, &err), ==, KEMU_EINVAL);
    g_assert_cmpuint(host[4095], ==, 4095 * 3u);   /* still ours */
    kemu_device_destroy(dev);
}

static void test_limit(void)
{
    kemu_device *dev = new_device(1 << 20, 1);
    kemu_error err = {0};
    kemu_devptr a, b;
    uint64_t free_bytes, total;
    kemu_mem_info(dev, &free_bytes, &total);
    g_assert_cmpuint(total, ==, 1 << 20);
    g_assert_cmpuint(free_bytes, ==, 1 << 20);
    g_assert_cmpint(kemu_mem_alloc(dev, 600 << 10, &a, &err), ==, 0);
    kemu_mem_info(dev, &free_bytes, &total);
    g_assert_cmpuint(free_bytes, ==, (1 << 20) - (600 << 10));
    g_assert_cmpint(kemu_mem_alloc(dev, 600 << 10, &b, &err), ==, KEMU_ENOMEM);
    g_assert_cmpint(kemu_mem_free(dev, a, &err), ==, 0);
    g_assert_cmpint(kemu_mem_alloc(dev, 600 << 10, &b, &err), ==, 0);
    kemu_device_destroy(dev);
}

static void test_copies_and_memset(void)
{
    kemu_device *dev = new_device(0, 1);
    kemu_error err = {0};
    kemu_devptr a, b;
    g_assert_cmpint(kemu_mem_alloc(dev, 4096, &a, &err), ==, 0);
    g_assert_cmpint(kemu_mem_alloc(dev, 4096, &b, &err), ==, 0);
    uint8_t src[4096], dst[4096];
    for (int i = 0; i < 4096; i++)
        src[i] = (uint8_t)(i * 7 + 3);
    /* allocations start zeroed */
    g_assert_cmpint(kemu_memcpy_dtoh(dev, dst, a, 4096, &err), ==, 0);
    for (int i = 0; i < 4096; i++)
        g_assert_cmpuint(dst[i], ==, 0);
    g_assert_cmpint(kemu_memcpy_htod(dev, a, src, 4096, &err), ==, 0);
    g_assert_cmpint(kemu_memcpy_dtod(dev, b + 100, a + 10, 1000, &err), ==, 0);
    g_assert_cmpint(kemu_memcpy_dtoh(dev, dst, b, 4096, &err), ==, 0);
    for (int i = 0; i < 1000; i++)
        g_assert_cmpuint(dst[100 + i], ==, src[10 + i]);
    g_assert_cmpuint(dst[99], ==, 0);
    g_assert_cmpuint(dst[1100], ==, 0);
    /* crossing the end of an allocation: refused, nothing written */
    g_assert_cmpint(kemu_memcpy_htod(dev, a + 4000, src, 200, &err), ==, KEMU_EINVAL);
    g_assert_cmpint(kemu_memcpy_dtoh(dev, dst, a + 4095, 2, &err), ==, KEMU_EINVAL);
    g_assert_cmpint(kemu_memcpy_htod(dev, 12345, src, 4, &err), ==, KEMU_EINVAL);
    g_assert_cmpint(kemu_memcpy_dtoh(dev, dst, a, 4096, &err), ==, 0);
    g_assert_cmpmem(dst, 4096, src, 4096);
    /* memsets of 1, 2 and 4 bytes */
    g_assert_cmpint(kemu_memset(dev, a, 0xab, 1, 10, &err), ==, 0);
    g_assert_cmpint(kemu_memset(dev, a + 10, 0x1234, 2, 5, &err), ==, 0);
    g_assert_cmpint(kemu_memset(dev, a + 20, 0xdeadbeef, 4, 3, &err), ==, 0);
    g_assert_cmpint(kemu_memset(dev, a + 21, 1, 4, 1, &err), ==, KEMU_EINVAL);   /* misaligned */
    g_assert_cmpint(kemu_memset(dev, a + 4094, 1, 4, 1, &err), ==, KEMU_EINVAL); /* past end */
    g_assert_cmpint(kemu_memset(dev, a, 1, 3, 1, &err), ==, KEMU_EINVAL);
    g_assert_cmpint(kemu_memcpy_dtoh(dev, dst, a, 40, &err), ==, 0);
    for (int i = 0; i < 10; i++)
        g_assert_cmpuint(dst[i], ==, 0xab);
    for (int i = 0; i < 5; i++) {
        g_assert_cmpuint(dst[10 + 2 * i], ==, 0x34);
        g_assert_cmpuint(dst[11 + 2 * i], ==, 0x12);
    }
    uint32_t w;
    memcpy(&w, dst + 28, 4);
    g_assert_cmphex(w, ==, 0xdeadbeef);
    g_assert_cmpuint(dst[32], ==, src[32]);
    kemu_device_destroy(dev);
}

/* ---- concurrency ------------------------------------------------------------------------------- */

static const char saxpy_ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry saxpy(.param .u64 x, .param .u64 y, .param .f32 a, .param .u32 n)\n{\n"
    "\t.reg .b32 %r<6>;\n\t.reg .b64 %rd<8>;\n\t.reg .f32 %f<5>;\n\t.reg .pred %p;\n"
    "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, %ctaid.x;\n\tmov.u32 %r3, %ntid.x;\n"
    "\tmad.lo.s32 %r4, %r2, %r3, %r1;\n\tld.param.u32 %r5, [n];\n"
    "\tsetp.ge.u32 %p, %r4, %r5;\n\t@%p bra DONE;\n"
    "\tld.param.u64 %rd1, [x];\n\tld.param.u64 %rd2, [y];\n\tld.param.f32 %f1, [a];\n"
    "\tmul.wide.u32 %rd3, %r4, 4;\n\tadd.s64 %rd4, %rd1, %rd3;\n\tadd.s64 %rd5, %rd2, %rd3;\n"
    "\tld.global.f32 %f2, [%rd4];\n\tld.global.f32 %f3, [%rd5];\n"
    "\tfma.rn.f32 %f4, %f1, %f2, %f3;\n\tst.global.f32 [%rd5], %f4;\n"
    "DONE:\n\tret;\n}\n";

typedef struct worker {
    kemu_device *dev;
    kemu_function *fn;
    unsigned seed;
    int failures;
} worker;

static void *hammer(void *arg)
{
    worker *w = arg;
    kemu_error err = {0};
    enum { N = 1000 };
    float x[N], y[N], out[N];
    for (int round = 0; round < 40; round++) {
        kemu_devptr dx, dy, junk;
        for (int i = 0; i < N; i++) {
            x[i] = (float)(i + (int)w->seed);
            y[i] = (float)(round - i);
        }
        if (kemu_mem_alloc(w->dev, sizeof x, &dx, &err) || kemu_mem_alloc(w->dev, sizeof y, &dy, &err) ||
            kemu_mem_alloc(w->dev, 777 + round, &junk, &err) ||
            kemu_memcpy_htod(w->dev, dx, x, sizeof x, &err) ||
            kemu_memcpy_htod(w->dev, dy, y, sizeof y, &err)) {
            w->failures++;
            continue;
        }
        float a = 2.0f;
        uint32_t n = N;
        uint8_t params[24];
        memcpy(params, &dx, 8);
        memcpy(params + 8, &dy, 8);
        memcpy(params + 16, &a, 4);
        memcpy(params + 20, &n, 4);
        kemu_launch_config cfg = {.grid = {8, 1, 1}, .block = {128, 1, 1}, .params = params,
                                  .params_bytes = sizeof params};
        kemu_mem_free(w->dev, junk, &err);   /* frees while others launch */
        if (kemu_launch(w->fn, &cfg, &err) || kemu_memcpy_dtoh(w->dev, out, dy, sizeof out, &err))
            w->failures++;
        for (int i = 0; i < N; i++)
            if (out[i] != 2.0f * x[i] + y[i])
                w->failures++;
        kemu_mem_free(w->dev, dx, &err);
        kemu_mem_free(w->dev, dy, &err);
    }
    return NULL;
}

static void test_concurrent_use(void)
{
    kemu_device *dev = new_device(0, 3);
    kemu_error err = {0};
    kemu_module *mod;
    g_assert_cmpint(kemu_module_load(dev, saxpy_ptx, strlen(saxpy_ptx), &mod, &err), ==, 0);
    kemu_function *fn;
    g_assert_cmpint(kemu_module_get_function(mod, "saxpy", &fn, &err), ==, 0);
    enum { T = 4 };
    pthread_t th[T];
    worker w[T];
    for (int i = 0; i < T; i++) {
        w[i] = (worker){dev, fn, (unsigned)i * 1000, 0};
        pthread_create(&th[i], NULL, hammer, &w[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        g_assert_cmpint(w[i].failures, ==, 0);
    }
    uint64_t free_bytes, total;
    kemu_mem_info(dev, &free_bytes, &total);
    g_assert_cmpuint(free_bytes, ==, total);   /* everything was freed */
    kemu_device_destroy(dev);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/emu/memory/alloc-ranges", test_alloc_and_ranges);
    g_test_add_func("/emu/memory/limit", test_limit);
    g_test_add_func("/emu/memory/host-map", test_host_map);
    g_test_add_func("/emu/memory/copies-memset", test_copies_and_memset);
    g_test_add_func("/emu/memory/concurrent", test_concurrent_use);
    return g_test_run();
}
