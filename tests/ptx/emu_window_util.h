/* The emulator device of the PTX tests that run fenced kernels: a tenant's window and
 * another range of addresses, both of window bytes, inside the emulator's span. */
#ifndef EMU_WINDOW_UTIL_H
#define EMU_WINDOW_UTIL_H

#include <glib.h>

#include "kernelet/emu.h"
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

#endif
