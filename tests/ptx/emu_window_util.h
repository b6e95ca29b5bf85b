/* The emulator device of the PTX tests that run fenced kernels: a tenant's window and
 * another range of addresses, both of window bytes, inside the emulator's span; and one
 * launch of a kernel on a device of its own, fenced or not. */
#ifndef EMU_WINDOW_UTIL_H
#define EMU_WINDOW_UTIL_H

#include <glib.h>
#include <string.h>

#include "kernelet/emu.h"
#include "kernelet/ptx.h"
#include "ptx_test_util.h"

static inline kemu_device *test_emu_windows(uint64_t window, kemu_range *win,
                                            kemu_range *other)
{
    uint64_t base, size;
    kemu_device *dev;
    kemu_error e = {0};
    kemu_device_config cfg = {.workers = 1};
    g_assert_cmpint(kemu_device_create(&cfg, &dev, &e), ==, 0);
    kemu_mem_span(&base, &size);
    *win = (kemu_range){base + 4 * window, base + 5 * window};
    *other = (kemu_range){base + 8 * window, base + 9 * window};
    return dev;
}

/* Loads into dev, at addresses in range r, the module m as printed (freed) or, when m is
 * NULL, the text ptx. */
static inline kemu_module *test_emu_load(kemu_device *dev, const kemu_range *r, kptx_module *m,
                                         const char *ptx)
{
    kemu_module *mod;
    kemu_error e = {0};
    char *text = m ? test_print(m, NULL) : NULL;
    const char *src = m ? text : ptx;
    g_assert_cmpint(kemu_module_load_in(dev, r, src, strlen(src), &mod, &e), ==, 0);
    free(text);
    if (m)
        kptx_module_free(m);
    return mod;
}

/* Launches kernel k of the module text ptx once, one block of threads, on a fresh device
 * of one worker whose blocks start with residue in shared and local memory (0: zeroed).
 * params holds the kernel's own parameter block of params_bytes, whose first 8 bytes the
 * address of out_bytes of device memory take (written here); fenced: the fence's window
 * (all device memory) and control words follow it. The launch's status; out gets what the
 * kernel wrote. */
static inline int test_emu_run_once(const char *ptx, uint32_t residue, unsigned threads,
                                    uint8_t *params, size_t params_bytes, bool fenced,
                                    void *out, size_t out_bytes)
{
    kemu_device *dev;
    kemu_module *mod;
    kemu_function *fn;
    kemu_devptr d, ctl;
    kemu_error e = {0};
    kemu_device_config cfg = {.workers = 1, .residue_word = residue};
    g_assert_cmpint(kemu_device_create(&cfg, &dev, &e), ==, 0);
    g_assert_cmpint(kemu_module_load(dev, ptx, strlen(ptx), &mod, &e), ==, 0);
    g_assert_cmpint(kemu_module_get_function(mod, "k", &fn, &e), ==, 0);
    g_assert_cmpint(kemu_mem_alloc(dev, out_bytes, &d, &e), ==, 0);
    g_assert_cmpint(kemu_mem_alloc(dev, 8, &ctl, &e), ==, 0);
    uint64_t base, size;
    kemu_mem_span(&base, &size);
    uint32_t at = kptx_fence_param_offset((uint32_t)params_bytes);
    uint8_t *all = g_malloc0(at + 8 * KPTX_FENCE_EXTRA_PARAMS);
    uint64_t window[KPTX_FENCE_EXTRA_PARAMS] = {base, size - 1, ctl, ctl + 4};
    memcpy(params, &d, 8);
    memcpy(all, params, params_bytes);
    memcpy(all + at, window, sizeof window);
    kemu_launch_config lc = {.grid = {1, 1, 1}, .block = {threads, 1, 1}, .params = all,
                             .params_bytes = fenced ? at + sizeof window : params_bytes};
    int rc = kemu_launch(fn, &lc, &e);
    g_assert_cmpint(kemu_memcpy_dtoh(dev, out, d, out_bytes, &e), ==, 0);
    g_free(all);
    kemu_device_destroy(dev);
    return rc;
}

#endif
