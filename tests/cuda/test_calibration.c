/* Unit tests of the per-GPU calibration file (host-sched/backends/cuda/calibration.h). */
#include "calibration.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

/* What model-mem-probe prints (model/calibrate/mem_probe.cu), H100 figures of MODEL.md. */
static const char PROBE[] =
    "device=NVIDIA H100 80GB HBM3\n"
    "sms=132\n"
    "clock_mhz=1980\n"
    "l2_hit_latency_cycles=285.0\n"
    "dram_latency_cycles=418.4\n"
    "read_bandwidth_gbs=3070\n"
    "peak_bandwidth_gbs=3350\n"
    "a0=0.916\n";

static void test_probe_output(void)
{
    kcuda_calibration c;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_calibration_parse(PROBE, strlen(PROBE), &c, &e), ==, 0);
    g_assert_cmpstr(c.device, ==, "NVIDIA H100 80GB HBM3");
    g_assert_cmpfloat(c.l0_cycles, ==, 418.4);
    g_assert_cmpfloat(c.a0, ==, 0.916);
    g_assert_cmpuint(c.sms, ==, 132);
    g_assert_cmpfloat(c.clock_mhz, ==, 1980);
    g_assert_cmpfloat(c.l2_latency_cycles, ==, 285);
    g_assert_cmpfloat(c.read_bandwidth_gbs, ==, 3070);
    g_assert_cmpfloat(c.peak_bandwidth_gbs, ==, 3350);
    g_assert_cmpuint(c.slice_overhead_ns, ==, 0);
}

static void test_comments_blanks_unknown_keys(void)
{
    const char text[] = "# measured 2026-11-22\n\n  device = GPU X  \r\n"
                        "future_figure=12\n dram_latency_cycles=400\na0=1\n"
                        "slice_overhead_ns=3500";   /* no final newline */
    kcuda_calibration c;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_calibration_parse(text, strlen(text), &c, &e), ==, 0);
    g_assert_cmpstr(c.device, ==, "GPU X");
    g_assert_cmpfloat(c.a0, ==, 1);
    g_assert_cmpuint(c.slice_overhead_ns, ==, 3500);
}

static void expect_bad(const char *text, const char *words)
{
    kcuda_calibration c;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_calibration_parse(text, strlen(text), &c, &e), ==, KBACKEND_EINVAL);
    if (!strstr(e.msg, words))
        g_error("message '%s' lacks '%s'", e.msg, words);
}

static void test_refusals(void)
{
    expect_bad("device=X\na0=0.9\n", "no dram_latency_cycles");
    expect_bad("dram_latency_cycles=400\na0=0.9\n", "no device");
    expect_bad("device=X\ndram_latency_cycles=400\n", "no a0");
    expect_bad("device=X\ndram_latency_cycles=400\na0=1.2\n", "line 3: bad value for a0");
    expect_bad("device=X\ndram_latency_cycles=400\na0=0\n", "line 3");
    expect_bad("device=X\ndram_latency_cycles=-5\na0=0.5\n", "line 2");
    expect_bad("device=X\ndram_latency_cycles=nan\na0=0.5\n", "line 2");
    expect_bad("device=X\ndram_latency_cycles=400x\na0=0.5\n", "line 2");
    expect_bad("device=X\ndram_latency_cycles=400\na0=0.5\nsms=1.5\n", "line 4");
    expect_bad("device=X\ndram_latency_cycles=400\na0=0.5\nslice_overhead_ns=2e9\n", "line 4");
    expect_bad("device=X\ndevice=Y\ndram_latency_cycles=400\na0=0.5\n", "line 2: device given twice");
    expect_bad("device=X\njunk\n", "line 2: not key=value");
    expect_bad("device=\ndram_latency_cycles=400\na0=0.5\n", "line 1");
    expect_bad("device=0123456789012345678901234567890123456789012345678901234567890123\n",
               "line 1");
    GString *g = g_string_new("device=X\n# ");
    for (int i = 0; i < 600; i++)
        g_string_append_c(g, 'x');
    expect_bad(g->str, "line 2: longer");
    g_string_free(g, TRUE);
    const char nul[] = "device=X\0\ndram_latency_cycles=400\na0=0.5\n";
    kcuda_calibration c;
    g_assert_cmpint(kcuda_calibration_parse(nul, sizeof(nul) - 1, &c, NULL), ==, KBACKEND_EINVAL);
}

static void test_format_round_trip(void)
{
    kcuda_calibration c, back;
    g_assert_cmpint(kcuda_calibration_parse(PROBE, strlen(PROBE), &c, NULL), ==, 0);
    c.slice_overhead_ns = 4200;
    char buf[1024];
    int n = kcuda_calibration_format(&c, buf, sizeof(buf));
    g_assert_cmpint(n, >, 0);
    g_assert_cmpint(n, <, (int)sizeof(buf));
    g_assert_cmpint(kcuda_calibration_parse(buf, (size_t)n, &back, NULL), ==, 0);
    g_assert_cmpstr(back.device, ==, c.device);
    g_assert_cmpfloat_with_epsilon(back.l0_cycles, c.l0_cycles, 0.05);
    g_assert_cmpfloat_with_epsilon(back.a0, c.a0, 0.0005);
    g_assert_cmpuint(back.sms, ==, 132);
    g_assert_cmpuint(back.slice_overhead_ns, ==, 4200);
    char small[16];
    g_assert_cmpint(kcuda_calibration_format(&c, small, sizeof(small)), ==, n);
    g_assert_cmpuint(strlen(small), ==, sizeof(small) - 1);
}

static void test_file_name(void)
{
    char buf[64];
    g_assert_cmpint(kcuda_calibration_file_name("NVIDIA H100 80GB HBM3", buf, sizeof(buf),
                                                NULL), ==, 0);
    g_assert_cmpstr(buf, ==, "NVIDIA_H100_80GB_HBM3.calib");
    g_assert_cmpint(kcuda_calibration_file_name("  a/../b--c  ", buf, sizeof(buf), NULL), ==, 0);
    g_assert_cmpstr(buf, ==, "a_b_c.calib");
    g_assert_cmpint(kcuda_calibration_file_name("../..", buf, sizeof(buf), NULL), ==,
                    KBACKEND_EINVAL);
    char tiny[8];
    g_assert_cmpint(kcuda_calibration_file_name("abcdef", tiny, sizeof(tiny), NULL), ==,
                    KBACKEND_EINVAL);
    g_assert_cmpint(kcuda_calibration_file_name("a", tiny, sizeof(tiny), NULL), ==, 0);
    g_assert_cmpstr(tiny, ==, "a.calib");
}

static void test_load(void)
{
    gchar *dir = g_dir_make_tmp("kcuda-calib-XXXXXX", NULL);
    g_assert_nonnull(dir);
    kcuda_calibration c;
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_calibration_load(dir, "NVIDIA H100 80GB HBM3", &c, &e), ==,
                    KBACKEND_ENOTFOUND);
    gchar *path = g_build_filename(dir, "NVIDIA_H100_80GB_HBM3.calib", NULL);
    g_assert_true(g_file_set_contents(path, PROBE, -1, NULL));
    g_assert_cmpint(kcuda_calibration_load(dir, "NVIDIA H100 80GB HBM3", &c, &e), ==, 0);
    g_assert_cmpfloat(c.l0_cycles, ==, 418.4);
    /* the same file name, another device inside */
    g_assert_cmpint(kcuda_calibration_load(dir, "NVIDIA/H100 80GB HBM3", &c, &e), ==,
                    KBACKEND_EINVAL);
    g_assert_nonnull(strstr(e.msg, "not 'NVIDIA/H100"));
    g_assert_true(g_file_set_contents(path, "device=NVIDIA H100 80GB HBM3\na0=2\n", -1, NULL));
    g_assert_cmpint(kcuda_calibration_load(dir, "NVIDIA H100 80GB HBM3", &c, &e), ==,
                    KBACKEND_EINVAL);
    g_assert_nonnull(strstr(e.msg, "line 2"));
    g_remove(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
}

/* The calibration committed for the project's H100 reads back under its device name. */
static void test_committed_h100(void)
{
    const char *dir = g_getenv("KCUDA_CALIBRATION_DIR");    /* set by meson test */
    g_assert_nonnull(dir);
    kcuda_calibration c;
    kbackend_error e = {0};
    if (kcuda_calibration_load(dir, "NVIDIA H100 80GB HBM3", &c, &e))
        g_error("%s", e.msg);
    g_assert_cmpuint(c.sms, ==, 132);
    g_assert_cmpfloat(c.l0_cycles, >, c.l2_latency_cycles);
    g_assert_cmpfloat_with_epsilon(c.a0, c.read_bandwidth_gbs / c.peak_bandwidth_gbs, 0.001);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/calibration/probe-output", test_probe_output);
    g_test_add_func("/cuda/calibration/comments-unknown-keys", test_comments_blanks_unknown_keys);
    g_test_add_func("/cuda/calibration/refusals", test_refusals);
    g_test_add_func("/cuda/calibration/format-round-trip", test_format_round_trip);
    g_test_add_func("/cuda/calibration/file-name", test_file_name);
    g_test_add_func("/cuda/calibration/load", test_load);
    g_test_add_func("/cuda/calibration/committed-h100", test_committed_h100);
    return g_test_run();
}
