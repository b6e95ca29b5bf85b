/* Helpers for kernel-level emulator tests (emu_test_util.h). */
#include "emu_test_util.h"

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

void emu_fixture_open(emu_fixture *f, const char *file, unsigned workers)
{
    kemu_device_config cfg = {.workers = workers};
    kemu_error err = {0};
    g_assert_cmpint(kemu_device_create(&cfg, &f->dev, &err), ==, 0);
    char *path = g_strdup_printf("%s/%s.ptx", emu_kernels_dir(), file);
    char *text;
    gsize len;
    GError *gerr = NULL;
    if (!g_file_get_contents(path, &text, &len, &gerr))
        g_error("%s", gerr->message);
    if (kemu_module_load(f->dev, text, len, &f->mod, &err) != 0)
        g_error("%s: %s", path, err.message);
    g_free(text);
    g_free(path);
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
    if (kemu_module_get_function(f->mod, name, &fn, &err) != 0)
        g_error("%s", err.message);
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

int emu_launch_args(kemu_function *fn, const unsigned grid[3], const unsigned block[3],
                    uint32_t dyn_shared, const emu_arg *args, unsigned n_args,
                    uint64_t budget, kemu_error *err)
{
    kemu_function_info info;
    kemu_function_info_get(fn, &info);
    g_assert_cmpuint(info.n_params, ==, n_args);
    uint8_t params[512] = {0};
    g_assert_cmpuint(info.param_bytes, <=, sizeof params);
    for (unsigned i = 0; i < n_args; i++) {
        g_assert_cmpuint(info.params[i].size, ==, args[i].bytes);
        memcpy(params + info.params[i].offset, &args[i].value, args[i].bytes);
    }
    kemu_launch_config cfg = {.dynamic_shared_bytes = dyn_shared, .params = params,
                              .params_bytes = info.param_bytes,
                              .max_warp_instructions = budget};
    memcpy(cfg.grid, grid, sizeof cfg.grid);
    memcpy(cfg.block, block, sizeof cfg.block);
    return kemu_launch(fn, &cfg, err);
}

void emu_launch_ok(kemu_function *fn, const unsigned grid[3], const unsigned block[3],
                   uint32_t dyn_shared, const emu_arg *args, unsigned n_args)
{
    kemu_error err = {0};
    if (emu_launch_args(fn, grid, block, dyn_shared, args, n_args, 0, &err) != 0)
        g_error("launch: %s", err.message);
}
