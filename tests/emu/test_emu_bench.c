/* The benchmark kernels on the emulator: every kernel of kernelet-workloads at small size,
 * whole and sliced, with several seeds (a property test over random inputs). Whole runs
 * must verify against the CPU reference; sliced runs (kptx_slice_module, then the slices
 * of a random plan that covers the grid, in random order) must give the whole run's
 * outputs bit for bit. Runs also with several workers: results must not depend on them.
 * Needs KERNELET_BENCH_PTX_DIR (the PTX files nvcc built); skipped without it. */
#include "emu_workload.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

static const char *ptx_dir;

typedef struct outputs {
    void *data[KW_MAX_BUFFERS];
    size_t size[KW_MAX_BUFFERS];
} outputs;

static void outputs_take(outputs *o, const kw_instance *in)
{
    memset(o, 0, sizeof *o);
    for (unsigned b = 0; b < in->n_buffers; b++) {
        o->size[b] = in->buffers[b].copy_out ? in->buffers[b].size : 0;
        o->data[b] = o->size[b] ? g_memdup2(in->buffers[b].host, o->size[b]) : NULL;
    }
}

static void outputs_free(outputs *o)
{
    for (unsigned b = 0; b < KW_MAX_BUFFERS; b++)
        g_free(o->data[b]);
}

/* A random plan: 1..8 slices covering [0, total), as bounds. */
static unsigned random_plan(GRand *r, uint32_t total, uint32_t *bounds)
{
    unsigned n = (unsigned)g_rand_int_range(r, 1, 9);
    if (n > total)
        n = total;
    bounds[0] = 0;
    bounds[n] = total;
    /* n - 1 distinct cut points in (0, total) */
    for (unsigned i = 1; i < n; i++) {
        uint32_t c;
        bool dup;
        do {
            c = (uint32_t)g_rand_int_range(r, 1, (gint32)total);
            dup = false;
            for (unsigned k = 1; k < i; k++)
                dup |= bounds[k] == c;
        } while (dup);
        bounds[i] = c;
    }
    for (unsigned i = 1; i < n; i++)   /* sort the cuts */
        for (unsigned k = i + 1; k < n; k++)
            if (bounds[k] < bounds[i]) {
                uint32_t t = bounds[i];
                bounds[i] = bounds[k];
                bounds[k] = t;
            }
    return n;
}

static void run_kernel(const kw_kernel *k, uint64_t seed, unsigned workers)
{
    kemu_device_config cfg = {.workers = workers};
    kemu_device *dev;
    kemu_error err = {0};
    g_assert_cmpint(kemu_device_create(&cfg, &dev, &err), ==, 0);

    /* Whole: verify against the reference, keep the outputs. */
    kw_instance in;
    g_assert_cmpint(k->create(&in, KW_SIZE_SMALL, seed), ==, KW_OK);
    emu_wl w;
    int rc = emu_wl_prepare(&w, dev, ptx_dir, &in, true, &err);
    if (rc)
        g_error("%s: prepare: %s", k->name, err.message);
    kemu_launch_stats st = {0};
    if ((rc = emu_wl_launch(&w, &in, &st, &err)) != 0)
        g_error("%s: launch: %s", k->name, err.message);
    g_assert_cmpuint(st.thread_instructions, >, 0);
    g_assert_cmpint(emu_wl_copy_out(&w, &in, &err), ==, 0);
    char why[256] = "";
    if (k->verify(&in, why, sizeof why) != KW_OK)
        g_error("%s seed %llu: whole run does not verify: %s", k->name,
                (unsigned long long)seed, why);
    outputs whole;
    outputs_take(&whole, &in);

    /* Sliced: outputs zeroed on the device first, then a random plan. */
    GRand *r = g_rand_new_with_seed((guint32)(seed * 7919u + workers));
    uint32_t total = (uint32_t)kw_total_blocks(&in);
    for (int plan = 0; plan < 3; plan++) {
        for (unsigned b = 0; b < in.n_buffers; b++)
            if (in.buffers[b].copy_out)
                g_assert_cmpint(kemu_memset(dev, w.bufs[b], 0, 1, in.buffers[b].size, &err), ==, 0);
        uint32_t bounds[10];
        unsigned n = random_plan(r, total, bounds);
        /* run the slices in a random order: they are independent */
        unsigned order[9];
        for (unsigned i = 0; i < n; i++)
            order[i] = i;
        for (unsigned i = n; i > 1; i--) {
            unsigned j = (unsigned)g_rand_int_range(r, 0, (gint32)i), t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        for (unsigned i = 0; i < n; i++) {
            uint32_t one[2] = {bounds[order[i]], bounds[order[i] + 1]};
            if ((rc = emu_wl_launch_slices(&w, &in, one, 1, &err)) != 0)
                g_error("%s: slice launch: %s", k->name, err.message);
        }
        g_assert_cmpint(emu_wl_copy_out(&w, &in, &err), ==, 0);
        for (unsigned b = 0; b < in.n_buffers; b++) {
            if (!whole.size[b])
                continue;
            if (memcmp(whole.data[b], in.buffers[b].host, whole.size[b]) != 0)
                g_error("%s seed %llu: sliced run (%u slices) differs from the whole run in "
                        "buffer %u", k->name, (unsigned long long)seed, n, b);
        }
    }
    g_rand_free(r);
    outputs_free(&whole);
    emu_wl_release(&w);
    k->destroy(&in);
    kemu_device_destroy(dev);
}

static void test_kernel(gconstpointer data)
{
    if (!ptx_dir) {
        g_test_skip("KERNELET_BENCH_PTX_DIR is not set (no CUDA toolchain)");
        return;
    }
    const kw_kernel *k = data;
    for (uint64_t seed = 1; seed <= 4; seed++)
        run_kernel(k, seed, seed == 4 ? 3 : 1);
}

/* A corrupted output must not verify: the check above can fail. */
static void test_verify_catches_corruption(void)
{
    if (!ptx_dir) {
        g_test_skip("KERNELET_BENCH_PTX_DIR is not set (no CUDA toolchain)");
        return;
    }
    const kw_kernel *k = kw_find("tea");
    kemu_device *dev;
    kemu_error err;
    g_assert_cmpint(kemu_device_create(NULL, &dev, &err), ==, 0);
    kw_instance in;
    g_assert_cmpint(k->create(&in, KW_SIZE_SMALL, 9), ==, KW_OK);
    emu_wl w;
    g_assert_cmpint(emu_wl_prepare(&w, dev, ptx_dir, &in, false, &err), ==, 0);
    g_assert_cmpint(emu_wl_launch(&w, &in, NULL, &err), ==, 0);
    g_assert_cmpint(emu_wl_copy_out(&w, &in, &err), ==, 0);
    char why[256];
    g_assert_cmpint(k->verify(&in, why, sizeof why), ==, KW_OK);
    for (unsigned b = 0; b < in.n_buffers; b++)
        if (in.buffers[b].copy_out)
            ((uint8_t *)in.buffers[b].host)[in.buffers[b].size / 2] ^= 1;
    g_assert_cmpint(k->verify(&in, why, sizeof why), ==, KW_EVERIFY);
    emu_wl_release(&w);
    k->destroy(&in);
    kemu_device_destroy(dev);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    ptx_dir = g_getenv("KERNELET_BENCH_PTX_DIR");
    if (ptx_dir && !*ptx_dir)
        ptx_dir = NULL;
    size_t n;
    const kw_kernel *const *ks = kw_kernels(&n);
    for (size_t i = 0; i < n; i++) {
        char *path = g_strdup_printf("/emu/bench/%s", ks[i]->name);
        g_test_add_data_func(path, ks[i], test_kernel);
        g_free(path);
    }
    g_test_add_func("/emu/bench/verify-catches-corruption", test_verify_catches_corruption);
    return g_test_run();
}
