/* Kernel profiles: the shipped H100 file against the measured figures of
 * docs/perf/bench.md (derivation redone here), the parser's checks, the cache. */
#include <math.h>
#include <unistd.h>

#include "sched_test.h"

#ifndef DATA_DIR
#define DATA_DIR "."
#endif

/* docs/perf/bench.md, "Results": ncu duration (ms), PUR, MUR, threads per block, blocks,
 * registers, shared memory; and the uncoalesced fraction the file assumes. */
static const struct {
    const char *entry;
    double t_ms, pur, mur;
    unsigned threads, blocks, regs, smem;
    double unc;
} measured[] = {
    {"pc_chase", 1.817, 0.006, 0.621, 256, 16384, 22, 0, 1.0},
    {"sad_search", 0.224, 0.799, 0.025, 32, 240 * 134, 30, 1664, 0.0},
    {"spmv_csr", 0.396, 0.066, 0.224, 256, 8192, 40, 0, 0.5},
    {"st_stencil7", 0.124, 0.529, 0.621, 128, 16 * 128 * 8, 30, 0, 0.0},
    {"mm_tiled", 0.658, 0.418, 0.004, 256, 128 * 128, 32, 2048, 0.0},
    {"mriq_computeq", 0.130, 0.853, 0.067, 256, 8192, 28, 0, 0.0},
    {"bs_sweep", 0.050, 0.827, 0.174, 128, 16384, 28, 0, 0.0},
    {"tea_encrypt", 0.071, 0.755, 0.215, 128, 32768, 16, 0, 0.0},
};

static void test_shipped_file(void)
{
    ksched_profile_cache *c;
    ksched_err e = {0};
    g_assert_cmpint(ksched_profile_cache_new(&c, NULL), ==, 0);
    if (ksched_profile_load_file(c, DATA_DIR "/h100-bench.profiles", &e))
        g_error("%s", e.msg);
    g_assert_cmpuint(ksched_profile_cache_count(c), ==, G_N_ELEMENTS(measured));
    for (size_t i = 0; i < G_N_ELEMENTS(measured); i++) {
        const kbackend_profile *p = ksched_profile_cache_get(c, 12345, measured[i].entry);
        g_assert_nonnull(p);
        /* the derivation of docs/SCHEDULER.md: instructions from PUR at the base clock of
         * ncu (1.59 GHz, 132 SMs, 4 per cycle), memory instructions from DRAM bytes */
        double insts = measured[i].pur * measured[i].t_ms * 1e-3 * 1.59e9 * 132 * 4;
        double warps = measured[i].blocks * ceil(measured[i].threads / 32.0);
        double bytes = measured[i].mur * measured[i].t_ms * 1e-3 * 3.35e12;
        double per_inst = 128 * (1 - measured[i].unc) + 1024 * measured[i].unc;
        double rm = bytes / per_inst / insts;
        g_assert_cmpfloat_with_epsilon(p->insts_per_warp, insts / warps,
                                       0.001 * insts / warps + 0.05);
        g_assert_cmpfloat_with_epsilon(p->rm, rm, 0.002 * rm + 0.00005);
        g_assert_cmpfloat(p->pur, ==, measured[i].pur);
        g_assert_cmpfloat(p->mur, ==, measured[i].mur);
        g_assert_cmpfloat(p->uncoalesced, ==, measured[i].unc);
        g_assert_cmpuint(p->regs_per_thread, ==, measured[i].regs);
        g_assert_cmpuint(p->smem_per_block, ==, measured[i].smem);
        g_assert_cmpuint(p->warps_per_block, ==, (unsigned)ceil(measured[i].threads / 32.0));
    }
    ksched_profile_cache_free(c);
}

static int parse(ksched_profile_cache *c, const char *text, ksched_err *e)
{
    return ksched_profile_parse(c, text, strlen(text), e);
}

static void test_parser_rejects(void)
{
    const struct { const char *text; const char *why; } bad[] = {
        {"profil entry=a rm=0.1 insts=5\n", "unknown record"},
        {"profile entry=a rm=0.1\n", "required"},
        {"profile entry=a insts=5\n", "required"},
        {"profile rm=0.1 insts=5\n", "required"},
        {"profile entry=a rm=1.5 insts=5\n", "rm"},
        {"profile entry=a rm=nan insts=5\n", "rm"},
        {"profile entry=a rm=0.1 insts=-5\n", "instructions"},
        {"profile entry=a rm=0.1 insts=5 regs=-1\n", "regs"},
        {"profile entry=a rm=0.1 insts=5 wpb=99\n", "warps"},
        {"profile entry=a rm=0.1 insts=5 pur=2\n", "pur"},
        {"profile entry=a rm=0.1 insts=5 color=red\n", "unknown key"},
        {"profile entry=a rm=0.1x insts=5\n", "bad value"},
        {"profile entry=9a rm=0.1 insts=5\n", "bad value"},
        {"profile entry=a rm=0.1 insts=5 min_slice=1e3\n", "bad value"},
        {"profile entry=a rm=0.1 insts=5 junk\n", "key=value"},
        {"profile entry=a module=0 rm=0.1 insts=5\n", "bad value for module"},
        {"profile entry=a module=12345678123456789 rm=0.1 insts=5\n", "bad value for module"},
        {"profile entry=a module=-12 rm=0.1 insts=5\n", "bad value for module"},
        {"profile entry=a module=0x12 rm=0.1 insts=5\n", "bad value for module"},
        {"# fine\nprofile entry=a rm=0.1 insts=5\nprofile entry=b rm=2 insts=5\n", "line 3"},
    };
    ksched_profile_cache *c;
    g_assert_cmpint(ksched_profile_cache_new(&c, NULL), ==, 0);
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        ksched_err e = {0};
        g_assert_cmpint(parse(c, bad[i].text, &e), ==, KSCHED_EINVAL);
        if (!strstr(e.msg, bad[i].why))
            g_error("case %zu: '%s' does not mention '%s'", i, e.msg, bad[i].why);
        g_assert_cmpuint(ksched_profile_cache_count(c), ==, 0);   /* all or nothing */
    }
    char longline[2048];
    memset(longline, 'x', sizeof(longline) - 1);
    longline[sizeof(longline) - 1] = 0;
    ksched_err e;
    g_assert_cmpint(parse(c, longline, &e), ==, KSCHED_EINVAL);
    const char nul[] = "profile entry=a rm=0.1 insts=5\0 x\n";
    g_assert_cmpint(ksched_profile_parse(c, nul, sizeof(nul) - 1, &e), ==, KSCHED_EINVAL);
    g_assert_cmpint(ksched_profile_load_file(c, "/nonexistent/file", &e), ==, KSCHED_EIO);
    ksched_profile_cache_free(c);
}

static void test_round_trip(void)
{
    kbackend_profile p = {.pur = 0.25, .mur = 0.5, .rm = 0.125, .uncoalesced = 0.75,
                       .warps_per_block = 4, .regs_per_thread = 40, .smem_per_block = 4096,
                       .insts_per_warp = 1234.5, .min_slice_blocks = 264};
    char line[512];
    int n = ksched_profile_format(0, "k_1$", &p, line, sizeof(line));
    g_assert_cmpint(n, >, 0);
    g_assert_cmpint(n, <, (int)sizeof(line));
    ksched_profile_cache *c;
    g_assert_cmpint(ksched_profile_cache_new(&c, NULL), ==, 0);
    g_assert_cmpint(parse(c, line, NULL), ==, 0);
    const kbackend_profile *q = ksched_profile_cache_get(c, 0, "k_1$");
    g_assert_nonnull(q);
    g_assert_cmpfloat(q->pur, ==, p.pur);
    g_assert_cmpfloat(q->mur, ==, p.mur);
    g_assert_cmpfloat(q->rm, ==, p.rm);
    g_assert_cmpfloat(q->uncoalesced, ==, p.uncoalesced);
    g_assert_cmpfloat(q->insts_per_warp, ==, p.insts_per_warp);
    g_assert_cmpuint(q->warps_per_block, ==, p.warps_per_block);
    g_assert_cmpuint(q->regs_per_thread, ==, p.regs_per_thread);
    g_assert_cmpuint(q->smem_per_block, ==, p.smem_per_block);
    g_assert_cmpuint(q->min_slice_blocks, ==, p.min_slice_blocks);
    ksched_profile_cache_free(c);
}

/* What kerneletd learned (profiles per module) survives a save and a load: the same
 * entry in two modules keeps two profiles, and an entry without a module still matches any. */
static void test_save_load(void)
{
    ksched_profile_cache *c, *d;
    g_assert_cmpint(ksched_profile_cache_new(&c, NULL), ==, 0);
    g_assert_cmpint(ksched_profile_cache_new(&d, NULL), ==, 0);
    kbackend_profile a = test_profile(0.1, 100, 0.5, 0.5), b = test_profile(0.2, 200, 0.25, 0.75);
    kbackend_profile any = test_profile(0.3, 300, 0.5, 0.5);
    const uint64_t ha = 0x8000000000000001ull, hb = 0x42;
    g_assert_cmpint(ksched_profile_cache_put(c, ha, "k", &a, NULL), ==, 0);
    g_assert_cmpint(ksched_profile_cache_put(c, hb, "k", &b, NULL), ==, 0);
    g_assert_cmpint(ksched_profile_cache_put(c, 0, "other", &any, NULL), ==, 0);
    char path[] = "/tmp/kprof-XXXXXX";
    int fd = g_mkstemp(path);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    ksched_err e;
    g_assert_cmpint(ksched_profile_cache_save(c, path, &e), ==, 0);
    g_assert_cmpint(ksched_profile_load_file(d, path, &e), ==, 0);
    g_assert_cmpuint(ksched_profile_cache_count(d), ==, 3);
    g_assert_cmpfloat(ksched_profile_cache_get(d, ha, "k")->rm, ==, 0.1);
    g_assert_cmpfloat(ksched_profile_cache_get(d, hb, "k")->rm, ==, 0.2);
    g_assert_cmpfloat(ksched_profile_cache_get(d, hb, "k")->mur, ==, 0.75);
    g_assert_null(ksched_profile_cache_get(d, 7, "k"));          /* learned for its module only */
    g_assert_cmpfloat(ksched_profile_cache_get(d, 7, "other")->rm, ==, 0.3);
    g_assert_cmpint(ksched_profile_cache_save(c, "/nonexistent/dir/p", &e), ==, KSCHED_EIO);
    unlink(path);
    ksched_profile_cache_free(c);
    ksched_profile_cache_free(d);
}

static void test_cache(void)
{
    ksched_profile_cache *c;
    g_assert_cmpint(ksched_profile_cache_new(&c, NULL), ==, 0);
    kbackend_profile a = test_profile(0.1, 100, 0.5, 0.5), b = test_profile(0.2, 200, 0.5, 0.5);
    g_assert_cmpint(ksched_profile_cache_put(c, 0, "k", &a, NULL), ==, 0);
    g_assert_cmpint(ksched_profile_cache_put(c, 77, "k", &b, NULL), ==, 0);
    g_assert_cmpfloat(ksched_profile_cache_get(c, 77, "k")->rm, ==, 0.2);
    g_assert_cmpfloat(ksched_profile_cache_get(c, 78, "k")->rm, ==, 0.1);   /* any module */
    g_assert_null(ksched_profile_cache_get(c, 77, "other"));
    g_assert_cmpint(ksched_profile_cache_put(c, 77, "k", &a, NULL), ==, 0);  /* replaces */
    g_assert_cmpfloat(ksched_profile_cache_get(c, 77, "k")->rm, ==, 0.1);
    g_assert_cmpuint(ksched_profile_cache_count(c), ==, 2);
    for (unsigned i = 0; i < 1000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "k%u", i);
        kbackend_profile p = test_profile(i / 1000.0, i + 1, 0, 0);
        g_assert_cmpint(ksched_profile_cache_put(c, i % 7, name, &p, NULL), ==, 0);
    }
    for (unsigned i = 0; i < 1000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "k%u", i);
        const kbackend_profile *p = ksched_profile_cache_get(c, i % 7, name);
        g_assert_nonnull(p);
        g_assert_cmpfloat(p->insts_per_warp, ==, i + 1);
    }
    kbackend_profile bad = test_profile(0.1, 0, 0, 0);
    g_assert_cmpint(ksched_profile_cache_put(c, 0, "x", &bad, NULL), ==, KSCHED_EINVAL);
    g_assert_cmpint(ksched_profile_cache_put(c, 0, "a b", &a, NULL), ==, KSCHED_EINVAL);
    ksched_profile_cache_free(c);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/profile/shipped-file", test_shipped_file);
    g_test_add_func("/profile/parser-rejects", test_parser_rejects);
    g_test_add_func("/profile/round-trip", test_round_trip);
    g_test_add_func("/profile/cache", test_cache);
    g_test_add_func("/profile/save-load", test_save_load);
    return g_test_run();
}
