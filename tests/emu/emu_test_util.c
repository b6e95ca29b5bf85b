/* Helpers for kernel-level emulator tests (emu_test_util.h). */
#include "emu_test_util.h"

#include <kernelet/ptx.h>

#include <string.h>

const char *emu_kernels_dir(void)
{
    const char *d = g_getenv("KERNELET_EMU_KERNELS_DIR");
    return d && *d ? d : NULL;
}

void emu_random_ints(int *v, size_t n, int lo, int hi, guint32 seed)
{
    GRand *r = g_rand_new_with_seed(seed);
    for (size_t i = 0; i < n; i++)
        v[i] = g_rand_int_range(r, lo, hi);
    g_rand_free(r);
}

/* Loads text as it is, or sliced (kptx_slice_module) into f->mod. */
static void load_module(emu_fixture *f, const char *path, const char *text, size_t len)
{
    kemu_error err = {0};
    if (!f->sliced) {
        if (kemu_module_load(f->dev, text, len, &f->mod, &err) != 0)
            g_error("%s: %s", path, err.message);
        return;
    }
    kptx_module *m;
    kptx_error perr = {0};
    if (kptx_parse(text, len, &m, &perr) != 0 || kptx_slice_module(m, NULL, &perr) != 0)
        g_error("%s: %s", path, perr.message);
    if (kemu_module_load_parsed(f->dev, m, &f->mod, &err) != 0)
        g_error("%s (sliced): %s", path, err.message);
    kptx_module_free(m);
}

void emu_fixture_open_as(emu_fixture *f, const char *file, unsigned workers, int sliced)
{
    kemu_device_config cfg = {.workers = workers};
    kemu_error err = {0};
    f->sliced = sliced;
    g_assert_cmpint(kemu_device_create(&cfg, &f->dev, &err), ==, 0);
    char *path = g_strdup_printf("%s/%s.ptx", emu_kernels_dir(), file);
    char *text;
    gsize len;
    GError *gerr = NULL;
    if (!g_file_get_contents(path, &text, &len, &gerr))
        g_error("%s", gerr->message);
    load_module(f, path, text, len);
    g_free(text);
    g_free(path);
}

void emu_fixture_open(emu_fixture *f, const char *file, unsigned workers)
{
    emu_fixture_open_as(f, file, workers, 0);
}

void emu_fixture_close(emu_fixture *f)
{
    kemu_device_destroy(f->dev);   /* unloads the module */
    f->dev = NULL;
    f->mod = NULL;
}

kemu_function *emu_fixture_fn(emu_fixture *f, const char *name)
{
    kemu_function *fn;
    kemu_error err = {0};
    char *wanted = f->sliced ? g_strconcat(name, KPTX_SLICE_SUFFIX, NULL) : g_strdup(name);
    if (kemu_module_get_function(f->mod, wanted, &fn, &err) != 0)
        g_error("%s", err.message);
    g_free(wanted);
    kemu_function_info info;
    kemu_function_info_get(fn, &info);
    if (info.unsupported)
        g_error("%s: %s", name, info.unsupported);
    return fn;
}

kemu_devptr emu_buf(emu_fixture *f, const void *host, size_t bytes)
{
    kemu_devptr p;
    kemu_error err = {0};
    g_assert_cmpint(kemu_mem_alloc(f->dev, bytes, &p, &err), ==, 0);
    if (host)
        g_assert_cmpint(kemu_memcpy_htod(f->dev, p, host, bytes, &err), ==, 0);
    return p;
}

void emu_download(emu_fixture *f, void *host, kemu_devptr src, size_t bytes)
{
    kemu_error err = {0};
    g_assert_cmpint(kemu_memcpy_dtoh(f->dev, host, src, bytes, &err), ==, 0);
}

static int is_sliced(const kemu_function_info *info)
{
    size_t n = strlen(info->name), k = strlen(KPTX_SLICE_SUFFIX);
    return n > k && strcmp(info->name + n - k, KPTX_SLICE_SUFFIX) == 0;
}

/* The grid as 1..6 slices of random sizes, launched in random order. */
static int launch_as_slices(kemu_function *fn, const kemu_launch_config *cfg, kemu_error *err)
{
    uint32_t total = cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
    uint32_t bounds[8] = {0};
    unsigned n = 1 + (unsigned)g_test_rand_int_range(0, 6);
    if (n > total)
        n = total ? total : 1;
    for (unsigned i = 1; i < n; i++)       /* distinct cut points, kept sorted */
        bounds[i] = bounds[i - 1] + 1 +
                    (uint32_t)g_test_rand_int_range(0, (gint32)(total - bounds[i - 1] - (n - i)));
    bounds[n] = total;
    unsigned order[8];
    for (unsigned i = 0; i < n; i++)
        order[i] = i;
    for (unsigned i = n; i > 1; i--) {
        unsigned j = (unsigned)g_test_rand_int_range(0, (gint32)i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (unsigned i = 0; i < n; i++) {
        unsigned s = order[i];
        int rc = kemu_launch_slice(fn, bounds[s], bounds[s + 1] - bounds[s], cfg, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int emu_launch_args(kemu_function *fn, const unsigned grid[3], const unsigned block[3],
                    uint32_t dyn_shared, const emu_arg *args, unsigned n_args,
                    uint64_t budget, kemu_error *err)
{
    kemu_function_info info;
    kemu_function_info_get(fn, &info);
    int sliced = is_sliced(&info);
    unsigned extra = sliced ? KPTX_SLICE_EXTRA_PARAMS : 0;
    g_assert_cmpuint(info.n_params, ==, n_args + extra);
    uint8_t params[512] = {0};
    g_assert_cmpuint(info.param_bytes, <=, sizeof params);
    for (unsigned i = 0; i < n_args; i++) {
        g_assert_cmpuint(info.params[i].size, ==, args[i].bytes);
        memcpy(params + info.params[i].offset, &args[i].value, args[i].bytes);
    }
    kemu_launch_config cfg = {.dynamic_shared_bytes = dyn_shared, .params = params,
                              .params_bytes = sliced ? info.params[n_args].offset
                                                     : info.param_bytes,
                              .max_warp_instructions = budget};
    memcpy(cfg.grid, grid, sizeof cfg.grid);
    memcpy(cfg.block, block, sizeof cfg.block);
    return sliced ? launch_as_slices(fn, &cfg, err) : kemu_launch(fn, &cfg, err);
}

void emu_launch_ok(kemu_function *fn, const unsigned grid[3], const unsigned block[3],
                   uint32_t dyn_shared, const emu_arg *args, unsigned n_args)
{
    kemu_error err = {0};
    if (emu_launch_args(fn, grid, block, dyn_shared, args, n_args, 0, &err) != 0)
        g_error("launch: %s", err.message);
}
