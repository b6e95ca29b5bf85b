/* Unit tests of the device description from attributes (host-sched/backends/cuda/device_attrs.h),
 * with the attribute values an H100 SXM reports (fake/fake_h100.c). */
#include "device_attrs.h"

#include <glib.h>

#include "fake/fake_driver.h"

typedef struct fake {
    CUdevice_attribute missing;     /* answer "unavailable" for this one */
} fake;

static int h100_attr(void *user, CUdevice_attribute a, int *v)
{
    const fake *f = user;
    return f && a == f->missing ? 1 : fake_h100_attribute(a, v);
}

static void test_h100(void)
{
    kbackend_device_info in = {0};
    kcuda_limits lim = {0};
    g_assert_cmpint(kcuda_device_attrs(h100_attr, NULL, &in, &lim, NULL), ==, 0);
    g_assert_cmpint(in.cc_major, ==, 9);
    g_assert_cmpint(in.cc_minor, ==, 0);
    g_assert_cmpuint(in.sms, ==, 132);
    g_assert_cmpuint(in.max_warps_per_sm, ==, 64);
    g_assert_cmpuint(in.max_blocks_per_sm, ==, 32);
    g_assert_cmpuint(in.max_threads_per_block, ==, 1024);
    g_assert_cmpuint(in.regs_per_sm, ==, 65536);
    g_assert_cmpuint(in.max_regs_per_thread, ==, 255);
    g_assert_cmpuint(in.smem_per_sm, ==, 233472);
    g_assert_cmpuint(in.max_smem_per_block, ==, 232448);
    g_assert_cmpfloat_with_epsilon(in.clock_mhz, 1980, 1e-9);
    /* 2 x 2.619e9 /s x 640 bytes = 3352.32 GB/s: the H100 SXM's 3.35 TB/s */
    g_assert_cmpfloat_with_epsilon(in.mem_bandwidth_gbs, 3352.32, 1e-6);
    g_assert_cmpuint(lim.max_threads_per_block, ==, 1024);
    g_assert_cmpuint(lim.max_block[2], ==, 64);
    g_assert_cmpuint(lim.max_grid[0], ==, 2147483647u);
    g_assert_cmpuint(lim.max_grid[1], ==, 65535);
    /* its place on the PCI bus, bus 0x18 of domain 0 (0 is a valid domain) */
    g_assert_cmpint(in.pci_known, ==, 1);
    g_assert_cmpuint(in.pci_domain, ==, 0);
    g_assert_cmpuint(in.pci_bus, ==, 0x18);
    /* the model accepts this description as an H100 */
    kmodel_gpu g;
    g_strlcpy(in.name, "NVIDIA H100 80GB HBM3", sizeof(in.name));
    g_assert_cmpint(kbackend_device_gpu(&in, &g, NULL), ==, 0);
    g_assert_cmpuint(g.sms, ==, 132);
    g_assert_cmpfloat(g.peak_ipc, ==, kmodel_gpu_lookup("H100")->peak_ipc);
}

/* A driver without PCI attributes: the device still opens, with no PCI place. */
static void test_no_pci(void)
{
    fake f = {.missing = CU_DEVICE_ATTRIBUTE_PCI_BUS_ID};
    kbackend_device_info in = {0};
    kcuda_limits lim = {0};
    g_assert_cmpint(kcuda_device_attrs(h100_attr, &f, &in, &lim, NULL), ==, 0);
    g_assert_cmpint(in.pci_known, ==, 0);
}

static void test_missing_attribute(void)
{
    fake f = {.missing = CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH};
    kbackend_device_info in = {0};
    kcuda_limits lim = {0};
    kbackend_error e = {0};
    g_assert_cmpint(kcuda_device_attrs(h100_attr, &f, &in, &lim, &e), ==, KBACKEND_EDEVICE);
    g_assert_nonnull(g_strstr_len(e.msg, -1, "bus width"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/device-attrs/h100", test_h100);
    g_test_add_func("/cuda/device-attrs/missing", test_missing_attribute);
    g_test_add_func("/cuda/device-attrs/no-pci", test_no_pci);
    return g_test_run();
}
