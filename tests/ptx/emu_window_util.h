/* The emulator device of the PTX tests that run fenced kernels: a tenant's window and
 * another range of addresses, both of window bytes, inside the emulator's span. */
#ifndef EMU_WINDOW_UTIL_H
#define EMU_WINDOW_UTIL_H

#include <glib.h>

#include "kernelet/emu.h"

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

#endif
