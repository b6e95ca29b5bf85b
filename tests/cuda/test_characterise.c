/* Unit tests of kprof_characterise: counters of one launch -> PUR, MUR, Rm, uncoalesced. */
#include "characterise.h"

#include <glib.h>
#include <math.h>

static const kmodel_gpu *h100(void)
{
    const kmodel_gpu *g = kmodel_gpu_lookup("H100");
    g_assert_nonnull(g);
    return g;
}

/* Counters of a launch that saturates both issue and DRAM for one millisecond. */
static kprof_counters saturated(const kmodel_gpu *g)
{
    kprof_counters c = {0};
    c.sm_cycles = 1e6;
    c.duration_ns = 1e6;
    c.warp_insts = c.sm_cycles * g->sms * g->peak_ipc;
    c.mem_insts = c.warp_insts / 4;
    c.dram_read_bytes = 0.75 * g->mem_bandwidth_gbs * c.duration_ns;
    c.dram_write_bytes = 0.25 * g->mem_bandwidth_gbs * c.duration_ns;
    c.global_requests = 1000;
    c.global_sectors = 4000;
    c.l2_miss_sectors = 4000;   /* every sector from DRAM */
    return c;
}

static void test_full_utilisation(void)
{
    const kmodel_gpu *g = h100();
    kprof_counters c = saturated(g);
    kprof_profile p;
    g_assert_cmpint(kprof_characterise(&c, g, &p), ==, KPROF_OK);
    g_assert_cmpfloat_with_epsilon(p.pur, 1.0, 1e-12);
    g_assert_cmpfloat_with_epsilon(p.ipc, g->peak_ipc, 1e-12);
    g_assert_cmpfloat_with_epsilon(p.mur, 1.0, 1e-12);
    g_assert_cmpfloat_with_epsilon(p.rm, 0.25, 1e-12);
    g_assert_cmpfloat_with_epsilon(p.uncoalesced, 0.0, 1e-12);
}

/* Halving the instructions halves PUR and IPC; doubling the time halves MUR. */
static void test_scaling(void)
{
    const kmodel_gpu *g = h100();
    kprof_counters c = saturated(g);
    c.warp_insts /= 2;
    c.mem_insts /= 2;
    c.duration_ns *= 2;
    kprof_profile p;
    g_assert_cmpint(kprof_characterise(&c, g, &p), ==, KPROF_OK);
    g_assert_cmpfloat_with_epsilon(p.pur, 0.5, 1e-12);
    g_assert_cmpfloat_with_epsilon(p.mur, 0.5, 1e-12);
    g_assert_cmpfloat_with_epsilon(p.rm, 0.25, 1e-12);
}

/* 4 sectors per request is coalesced, 32 fully uncoalesced, linear between, clamped. */
static void test_uncoalesced(void)
{
    const kmodel_gpu *g = h100();
    const struct { double sectors_per_request, expect; } cases[] = {
        {4, 0}, {32, 1}, {18, 0.5}, {11, 0.25}, {1, 0}, {64, 1},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        kprof_counters c = saturated(g);
        c.global_sectors = c.global_requests * cases[i].sectors_per_request;
        kprof_profile p;
        g_assert_cmpint(kprof_characterise(&c, g, &p), ==, KPROF_OK);
        g_assert_cmpfloat_with_epsilon(p.uncoalesced, cases[i].expect, 1e-12);
    }
    kprof_counters none = saturated(g);
    none.global_requests = none.global_sectors = 0;
    kprof_profile p;
    g_assert_cmpint(kprof_characterise(&none, g, &p), ==, KPROF_OK);
    g_assert_cmpfloat(p.uncoalesced, ==, 0);
}

/* The H100 counters of tea that Nsight Compute saved (tests/bench/data/ncu-tea-h100.csv)
 * give the PUR and MUR that docs/perf/bench.md reports for tea from the same CSV through
 * tests/gpu/bench/ncu_table.py (0.755 and 0.215; ncu's own peak bandwidth differs from the
 * GPU table's 3350 GB/s by 0.01%). */
static void test_ncu_tea(void)
{
    kprof_counters c = {
        .warp_insts = 44826624, .mem_insts = 0, /* not in that CSV */
        .global_requests = 0, .global_sectors = 0,
        .dram_read_bytes = 33569024, .dram_write_bytes = 17342208,
        .sm_cycles = 112818.20, .duration_ns = 70432,
    };
    kprof_profile p;
    g_assert_cmpint(kprof_characterise(&c, h100(), &p), ==, KPROF_OK);
    g_assert_cmpfloat(fabs(p.pur - 0.755), <, 0.005);
    g_assert_cmpfloat(fabs(p.mur - 0.215), <, 0.002);
}

/* Rm counts the memory instructions that reach DRAM: those whose sectors hit L2 (or L1) do
 * not; rm_all counts them all. Without global traffic it comes from DRAM bytes. */
static void test_rm_reaches_dram(void)
{
    const kmodel_gpu *g = h100();
    kprof_counters c = saturated(g);
    kprof_profile p;
    const struct { double miss, rm; } cases[] = {
        {4000, 0.25}, {1000, 0.0625}, {0, 0}, {8000, 0.25},     /* clamped at rm_all */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        c.l2_miss_sectors = cases[i].miss;
        g_assert_cmpint(kprof_characterise(&c, g, &p), ==, KPROF_OK);
        g_assert_cmpfloat_with_epsilon(p.rm, cases[i].rm, 1e-12);
        g_assert_cmpfloat_with_epsilon(p.rm_all, 0.25, 1e-12);
    }
    /* local memory only: DRAM bytes / 128 per coalesced instruction, at most rm_all */
    c = saturated(g);
    c.global_requests = c.global_sectors = c.l2_miss_sectors = 0;
    c.dram_read_bytes = 128.0 * c.warp_insts / 100;
    c.dram_write_bytes = 0;
    g_assert_cmpint(kprof_characterise(&c, g, &p), ==, KPROF_OK);
    g_assert_cmpfloat_with_epsilon(p.rm, 0.01, 1e-12);
    c.dram_read_bytes = 128.0 * c.warp_insts;               /* more than 1 per instruction */
    g_assert_cmpint(kprof_characterise(&c, g, &p), ==, KPROF_OK);
    g_assert_cmpfloat_with_epsilon(p.rm, 0.25, 1e-12);
}

static void test_rejects_unusable(void)
{
    const kmodel_gpu *g = h100();
    kprof_profile p;
    kprof_counters base = saturated(g);
    double *fields[] = {&base.warp_insts, &base.mem_insts, &base.dram_read_bytes,
                        &base.sm_cycles, &base.duration_ns, &base.global_sectors,
                        &base.l2_miss_sectors};
    for (size_t i = 0; i < G_N_ELEMENTS(fields); i++) {
        double keep = *fields[i];
        *fields[i] = NAN;
        g_assert_cmpint(kprof_characterise(&base, g, &p), ==, KPROF_EINVAL);
        *fields[i] = -1;
        g_assert_cmpint(kprof_characterise(&base, g, &p), ==, KPROF_EINVAL);
        *fields[i] = keep;
    }
    kprof_counters c = saturated(g);
    c.warp_insts = 0;
    g_assert_cmpint(kprof_characterise(&c, g, &p), ==, KPROF_EINVAL);
    c = saturated(g);
    c.mem_insts = c.warp_insts + 1;
    g_assert_cmpint(kprof_characterise(&c, g, &p), ==, KPROF_EINVAL);
    c = saturated(g);
    c.duration_ns = 0;
    g_assert_cmpint(kprof_characterise(&c, g, &p), ==, KPROF_EINVAL);
    g_assert_cmpint(kprof_characterise(NULL, g, &p), ==, KPROF_EINVAL);
    g_assert_cmpint(kprof_characterise(&c, NULL, &p), ==, KPROF_EINVAL);
    kmodel_gpu broken = *g;
    broken.sms = 0;
    c = saturated(g);
    g_assert_cmpint(kprof_characterise(&c, &broken, &p), ==, KPROF_EINVAL);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/characterise/full-utilisation", test_full_utilisation);
    g_test_add_func("/characterise/scaling", test_scaling);
    g_test_add_func("/characterise/uncoalesced", test_uncoalesced);
    g_test_add_func("/characterise/ncu-tea", test_ncu_tea);
    g_test_add_func("/characterise/rm-reaches-dram", test_rm_reaches_dram);
    g_test_add_func("/characterise/rejects-unusable", test_rejects_unusable);
    return g_test_run();
}
