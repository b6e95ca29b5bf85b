/* Failures the emulator must report, never turn into wrong results or crashes: memory
 * faults (out of bounds, misaligned, freed memory), trap, unknown instructions and
 * modifiers (with the kernel and the instruction named), calls without a body, endless
 * recursion,
 * deadlocks at barriers and warp-synchronous instructions, endless kernels (instruction
 * budget, cancel flag), bad launch configurations, and malformed PTX. */
#include "emu_test_util.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

static const unsigned ONE[3] = {1, 1, 1};

static void assert_message(const kemu_error *err, const char *const *parts)
{
    for (; *parts; parts++)
        if (!strstr(err->message, *parts))
            g_error("message \"%s\" lacks \"%s\"", err->message, *parts);
}

/* ---- memory faults ------------------------------------------------------------------------------- */

static void test_out_of_bounds(void)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open(&f, "faults", 2);
    kemu_devptr p = emu_buf(&f, NULL, 64 * sizeof(int));
    kemu_devptr next = emu_buf(&f, NULL, 4096);   /* must stay untouched */
    emu_arg args[] = {ARG64(p), ARG32(32)};
    kemu_error err = {0};
    int rc = emu_launch_args(emu_fixture_fn(&f, "out_of_bounds"), ONE, (unsigned[3]){64, 1, 1},
                             0, args, 2, 0, &err);
    g_assert_cmpint(rc, ==, KEMU_EADDRESS);
    g_assert_cmpint(err.code, ==, KEMU_EADDRESS);
    g_assert_cmpint(kemu_cuda_result(rc), ==, 700);
    assert_message(&err, (const char *[]){"out_of_bounds", "st.global", "global access",
                                          "block (0,0,0)", "thread (", NULL});
    uint8_t buf[4096];
    emu_download(&f, buf, next, sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++)
        g_assert_cmpuint(buf[i], ==, 0);
    /* in bounds the same kernel works */
    emu_arg ok[] = {ARG64(p), ARG32(0)};
    g_assert_cmpint(emu_launch_args(emu_fixture_fn(&f, "out_of_bounds"), ONE,
                                    (unsigned[3]){64, 1, 1}, 0, ok, 2, 0, &err), ==, 0);
    emu_fixture_close(&f);
}

static void test_shared_out_of_bounds(void)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open(&f, "faults", 1);
    kemu_devptr p = emu_buf(&f, NULL, 64 * sizeof(int));
    emu_arg args[] = {ARG64(p), ARG32(40)};
    kemu_error err = {0};
    int rc = emu_launch_args(emu_fixture_fn(&f, "shared_oob"), ONE, (unsigned[3]){32, 1, 1}, 0,
                             args, 2, 0, &err);
    g_assert_cmpint(rc, ==, KEMU_EADDRESS);
    assert_message(&err, (const char *[]){"shared_oob", "ld.shared", "shared access", NULL});
    emu_fixture_close(&f);
}

static void test_misaligned(void)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open(&f, "faults", 1);
    kemu_devptr p = emu_buf(&f, NULL, 16);
    emu_arg args[] = {ARG64(p)};
    kemu_error err = {0};
    int rc = emu_launch_args(emu_fixture_fn(&f, "misaligned"), ONE, ONE, 0, args, 1, 0, &err);
    g_assert_cmpint(rc, ==, KEMU_EMISALIGNED);
    g_assert_cmpint(kemu_cuda_result(rc), ==, 716);
    assert_message(&err, (const char *[]){"misaligned", "st.global", NULL});
    emu_fixture_close(&f);
}

static void test_freed_memory(void)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open(&f, "faults", 1);
    kemu_devptr p = emu_buf(&f, NULL, 64 * sizeof(int));
    kemu_error err = {0};
    g_assert_cmpint(kemu_mem_free(f.dev, p, &err), ==, 0);
    kemu_devptr q = emu_buf(&f, NULL, 64 * sizeof(int));   /* never at p again */
    g_assert_cmpuint(q, !=, p);
    emu_arg args[] = {ARG64(p), ARG32(0)};
    int rc = emu_launch_args(emu_fixture_fn(&f, "out_of_bounds"), ONE, (unsigned[3]){8, 1, 1}, 0,
                             args, 2, 0, &err);
    g_assert_cmpint(rc, ==, KEMU_EADDRESS);
    emu_fixture_close(&f);
}

static void test_trap(void)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open(&f, "faults", 1);
    kemu_devptr p = emu_buf(&f, NULL, 64 * sizeof(int));
    emu_arg args[] = {ARG64(p)};
    kemu_error err = {0};
    int rc = emu_launch_args(emu_fixture_fn(&f, "traps"), ONE, (unsigned[3]){32, 1, 1}, 0, args,
                             1, 0, &err);
    g_assert_cmpint(rc, ==, KEMU_ETRAP);
    assert_message(&err, (const char *[]){"traps", "trap", "thread (5,0,0)", NULL});
    emu_fixture_close(&f);
}

/* ---- unsupported instructions -------------------------------------------------------------------- */

static void test_printf_is_unsupported(void)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open(&f, "faults", 1);
    kemu_function *fn;
    kemu_error err = {0};
    g_assert_cmpint(kemu_module_get_function(f.mod, "prints", &fn, &err), ==, 0);
    kemu_function_info info;
    kemu_function_info_get(fn, &info);
    g_assert_nonnull(info.unsupported);
    g_assert_nonnull(strstr(info.unsupported, "vprintf"));
    emu_arg args[] = {ARG32(3)};
    int rc = emu_launch_args(fn, ONE, ONE, 0, args, 1, 0, &err);
    g_assert_cmpint(rc, ==, KEMU_EUNSUPPORTED);
    assert_message(&err, (const char *[]){"prints", "call", "vprintf", NULL});
    emu_fixture_close(&f);
}

static const char ptx_head[] = ".version 8.0\n.target sm_80\n.address_size 64\n";

/* Loads PTX text (after ptx_head) into a fresh device; returns the function `k`. */
static kemu_function *load_text(kemu_device **dev, kemu_module **mod, const char *body)
{
    kemu_error err = {0};
    g_assert_cmpint(kemu_device_create(NULL, dev, &err), ==, 0);
    char *text = g_strconcat(ptx_head, body, NULL);
    if (kemu_module_load(*dev, text, strlen(text), mod, &err) != 0)
        g_error("load: %s", err.message);
    g_free(text);
    kemu_function *fn;
    g_assert_cmpint(kemu_module_get_function(*mod, "k", &fn, &err), ==, 0);
    return fn;
}

static void test_unknown_instruction(void)
{
    kemu_device *dev;
    kemu_module *mod;
    /* The unknown instruction sits on a path no thread takes unless p says so. */
    kemu_function *fn = load_text(&dev, &mod,
        ".visible .entry k(.param .u32 go)\n{\n"
        "\t.reg .b32 %r<4>;\n\t.reg .pred %p;\n"
        "\tld.param.u32 %r1, [go];\n\tsetp.ne.u32 %p, %r1, 0;\n"
        "\t@%p frobnicate.u32 %r2, %r1;\n\tret;\n}\n");
    kemu_function_info info;
    kemu_function_info_get(fn, &info);
    g_assert_nonnull(strstr(info.unsupported, "frobnicate.u32"));
    g_assert_nonnull(strstr(info.unsupported, "line 10"));
    kemu_error err = {0};
    emu_arg off[] = {ARG32(0)}, on[] = {ARG32(1)};
    g_assert_cmpint(emu_launch_args(fn, ONE, (unsigned[3]){40, 1, 1}, 0, off, 1, 0, &err), ==, 0);
    int rc = emu_launch_args(fn, ONE, (unsigned[3]){40, 1, 1}, 0, on, 1, 0, &err);
    g_assert_cmpint(rc, ==, KEMU_EUNSUPPORTED);
    g_assert_cmpint(kemu_cuda_result(rc), ==, 715);
    assert_message(&err, (const char *[]){"kernel k", "frobnicate.u32", "line 10",
                                          "unknown opcode", NULL});
    kemu_device_destroy(dev);
}

static void test_unknown_modifier_and_texture(void)
{
    kemu_device *dev;
    kemu_module *mod;
    kemu_function *fn = load_text(&dev, &mod,
        ".global .texref tex;\n"
        ".visible .entry k(.param .u32 which)\n{\n"
        "\t.reg .b32 %r<6>;\n\t.reg .f32 %f<5>;\n\t.reg .pred %p;\n"
        "\tld.param.u32 %r1, [which];\n\tsetp.eq.u32 %p, %r1, 0;\n"
        "\t@%p add.wobbly.u32 %r2, %r1, 1;\n"
        "\t@!%p tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tex, {%r1}];\n\tret;\n}\n");
    kemu_error err = {0};
    emu_arg zero[] = {ARG32(0)}, one[] = {ARG32(1)};
    g_assert_cmpint(emu_launch_args(fn, ONE, ONE, 0, zero, 1, 0, &err), ==, KEMU_EUNSUPPORTED);
    assert_message(&err, (const char *[]){"add.wobbly.u32", "modifier .wobbly", NULL});
    g_assert_cmpint(emu_launch_args(fn, ONE, ONE, 0, one, 1, 0, &err), ==, KEMU_EUNSUPPORTED);
    assert_message(&err, (const char *[]){"tex.1d.v4.f32.s32", "unknown opcode", NULL});
    kemu_device_destroy(dev);
}

static void test_endless_recursion(void)
{
    kemu_device *dev;
    kemu_module *mod;
    kemu_function *fn = load_text(&dev, &mod,
        ".func (.param .b32 r) f(.param .b32 x)\n{\n\t.reg .b32 %r<3>;\n"
        "\tld.param.u32 %r1, [x];\n"
        "\t{\n\t.param .b32 a;\n\t.param .b32 b;\n\tst.param.b32 [a], %r1;\n"
        "\tcall.uni (b), f, (a);\n\tld.param.b32 %r2, [b];\n\t}\n"
        "\tst.param.b32 [r], %r2;\n\tret;\n}\n"
        ".visible .entry k()\n{\n\t.reg .b32 %r<3>;\n"
        "\t{\n\t.param .b32 a;\n\t.param .b32 b;\n\tst.param.b32 [a], 1;\n"
        "\tcall.uni (b), f, (a);\n\t}\n\tret;\n}\n");
    kemu_function_info info;
    kemu_function_info_get(fn, &info);
    g_assert_null(info.unsupported);
    kemu_error err = {0};
    g_assert_cmpint(emu_launch_args(fn, ONE, (unsigned[3]){40, 1, 1}, 0, NULL, 0, 0, &err), ==,
                    KEMU_ERESOURCES);
    assert_message(&err, (const char *[]){"call stack overflow", "call.uni", NULL});
    kemu_device_destroy(dev);
}

/* ---- deadlocks, endless kernels ------------------------------------------------------------------- */

static void test_barrier_deadlock(void)
{
    kemu_device *dev;
    kemu_module *mod;
    /* 32 threads wait for 64 at barrier 1: no thread can ever run again. */
    kemu_function *fn = load_text(&dev, &mod,
        ".visible .entry k()\n{\n\tbar.sync 1, 64;\n\tret;\n}\n");
    kemu_error err = {0};
    int rc = emu_launch_args(fn, ONE, (unsigned[3]){32, 1, 1}, 0, NULL, 0, 0, &err);
    g_assert_cmpint(rc, ==, KEMU_EDEADLOCK);
    assert_message(&err, (const char *[]){"bar.sync", "barrier 1", "32 of 64", NULL});
    kemu_device_destroy(dev);
}

static void test_warp_sync_deadlock(void)
{
    kemu_device *dev;
    kemu_module *mod;
    /* Half the warp shuffles with the whole warp while the other half waits at a barrier
     * for every thread of the block. */
    kemu_function *fn = load_text(&dev, &mod,
        ".visible .entry k()\n{\n\t.reg .b32 %r<4>;\n\t.reg .pred %p;\n"
        "\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p, %r1, 16;\n\t@%p bra L;\n"
        "\tbar.sync 0;\n\tret;\n"
        "L:\n\tshfl.sync.idx.b32 %r2, %r1, 0, 31, 0xffffffff;\n\tret;\n}\n");
    kemu_error err = {0};
    int rc = emu_launch_args(fn, ONE, (unsigned[3]){32, 1, 1}, 0, NULL, 0, 0, &err);
    g_assert_cmpint(rc, ==, KEMU_EDEADLOCK);
    kemu_device_destroy(dev);
}

static void test_instruction_budget(void)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open(&f, "faults", 2);
    kemu_devptr flag = emu_buf(&f, NULL, sizeof(int));
    emu_arg args[] = {ARG64(flag)};
    kemu_error err = {0};
    int rc = emu_launch_args(emu_fixture_fn(&f, "spins"), (unsigned[3]){4, 1, 1},
                             (unsigned[3]){64, 1, 1}, 0, args, 1, 200000, &err);
    g_assert_cmpint(rc, ==, KEMU_ELIMIT);
    assert_message(&err, (const char *[]){"spins", "budget", NULL});
    emu_fixture_close(&f);
}

typedef struct cancel_ctx {
    volatile int flag;
} cancel_ctx;

static void *set_cancel_later(void *arg)
{
    cancel_ctx *c = arg;
    usleep(50 * 1000);
    c->flag = 1;
    return NULL;
}

static void test_cancel(void)
{
    SKIP_WITHOUT_KERNELS();
    emu_fixture f;
    emu_fixture_open(&f, "faults", 2);
    kemu_devptr flag = emu_buf(&f, NULL, sizeof(int));
    kemu_function_info info;
    kemu_function *fn = emu_fixture_fn(&f, "spins");
    kemu_function_info_get(fn, &info);
    uint8_t params[8];
    memcpy(params, &flag, 8);
    cancel_ctx c = {0};
    kemu_launch_config cfg = {.grid = {2, 1, 1}, .block = {32, 1, 1}, .params = params,
                              .params_bytes = info.param_bytes, .cancel = &c.flag};
    pthread_t th;
    pthread_create(&th, NULL, set_cancel_later, &c);
    kemu_error err = {0};
    int rc = kemu_launch(fn, &cfg, &err);
    pthread_join(th, NULL);
    g_assert_cmpint(rc, ==, KEMU_ECANCELLED);
    emu_fixture_close(&f);
}

/* ---- launch configuration ----------------------------------------------------------------------- */

static void test_bad_configurations(void)
{
    kemu_device *dev;
    kemu_module *mod;
    kemu_function *fn = load_text(&dev, &mod,
        ".visible .entry k(.param .u64 p)\n{\n\t.shared .align 4 .b8 s[1024];\n\tret;\n}\n");
    uint8_t params[8] = {0};
    kemu_error err = {0};
    kemu_launch_config cfg = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .params = params,
                              .params_bytes = 8};
    g_assert_cmpint(kemu_launch(fn, &cfg, &err), ==, 0);
    cfg.params_bytes = 4;
    g_assert_cmpint(kemu_launch(fn, &cfg, &err), ==, KEMU_EPARAM);
    cfg.params_bytes = 8;
    cfg.grid[1] = 0;
    g_assert_cmpint(kemu_launch(fn, &cfg, &err), ==, KEMU_EINVAL);
    cfg.grid[1] = 1;
    cfg.block[0] = 1025;
    g_assert_cmpint(kemu_launch(fn, &cfg, &err), ==, KEMU_EINVAL);
    cfg.block[0] = 32;
    cfg.dynamic_shared_bytes = 227 * 1024;
    g_assert_cmpint(kemu_launch(fn, &cfg, &err), ==, KEMU_ERESOURCES);
    g_assert_cmpint(kemu_launch(NULL, &cfg, &err), ==, KEMU_EINVAL);
    kemu_function *none;
    g_assert_cmpint(kemu_module_get_function(mod, "nope", &none, &err), ==, KEMU_ENOTFOUND);
    kemu_device_destroy(dev);

    /* 300000 registers: fine for one warp, too much emulator state for 1024 threads */
    fn = load_text(&dev, &mod,
        ".visible .entry k()\n{\n\t.reg .b32 %r<300000>;\n\tmov.u32 %r299999, 1;\n\tret;\n}\n");
    g_assert_cmpint(emu_launch_args(fn, ONE, (unsigned[3]){32, 1, 1}, 0, NULL, 0, 0, &err), ==, 0);
    g_assert_cmpint(emu_launch_args(fn, ONE, (unsigned[3]){1024, 1, 1}, 0, NULL, 0, 0, &err), ==,
                    KEMU_ERESOURCES);
    assert_message(&err, (const char *[]){"emulator state", NULL});
    kemu_device_destroy(dev);
}

/* ---- malformed PTX ------------------------------------------------------------------------------- */

static void test_malformed_ptx(void)
{
    kemu_device *dev;
    kemu_error err = {0};
    g_assert_cmpint(kemu_device_create(NULL, &dev, &err), ==, 0);
    const char *const bad[] = {
        "",
        "garbage",
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(\n",
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { add.u32 %r1, ; }",
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { ld.global.u32 %r1, [; }",
        "\xff\xfe\x00\x01\x02",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        kemu_module *mod = NULL;
        int rc = kemu_module_load(dev, bad[i], strlen(bad[i]) + (i == 5 ? 5 : 0), &mod, &err);
        g_assert_cmpint(rc, ==, KEMU_EPTX);
        g_assert_null(mod);
        g_assert_nonnull(strstr(err.message, "PTX line"));
    }
    /* Parses, but uses a register that is not declared: the instruction fails, the load
     * does not. */
    kemu_module *mod = NULL;
    const char *undeclared = ".version 8.0\n.target sm_80\n.address_size 64\n"
                             ".visible .entry k() { add.u32 %r1, %r2, 1; ret; }";
    g_assert_cmpint(kemu_module_load(dev, undeclared, strlen(undeclared), &mod, &err), ==, 0);
    kemu_function *fn;
    g_assert_cmpint(kemu_module_get_function(mod, "k", &fn, &err), ==, 0);
    g_assert_cmpint(emu_launch_args(fn, ONE, ONE, 0, NULL, 0, 0, &err), ==, KEMU_EUNSUPPORTED);
    assert_message(&err, (const char *[]){"unknown register", NULL});
    kemu_device_destroy(dev);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/emu/errors/out-of-bounds", test_out_of_bounds);
    g_test_add_func("/emu/errors/shared-out-of-bounds", test_shared_out_of_bounds);
    g_test_add_func("/emu/errors/misaligned", test_misaligned);
    g_test_add_func("/emu/errors/freed-memory", test_freed_memory);
    g_test_add_func("/emu/errors/trap", test_trap);
    g_test_add_func("/emu/errors/printf-unsupported", test_printf_is_unsupported);
    g_test_add_func("/emu/errors/unknown-instruction", test_unknown_instruction);
    g_test_add_func("/emu/errors/unknown-modifier-texture", test_unknown_modifier_and_texture);
    g_test_add_func("/emu/errors/endless-recursion", test_endless_recursion);
    g_test_add_func("/emu/errors/barrier-deadlock", test_barrier_deadlock);
    g_test_add_func("/emu/errors/warp-sync-deadlock", test_warp_sync_deadlock);
    g_test_add_func("/emu/errors/instruction-budget", test_instruction_budget);
    g_test_add_func("/emu/errors/cancel", test_cancel);
    g_test_add_func("/emu/errors/bad-configurations", test_bad_configurations);
    g_test_add_func("/emu/errors/malformed-ptx", test_malformed_ptx);
    return g_test_run();
}
