/* Helpers for the emulator tests that run kernels compiled from tests/emu/kernels/ (CUDA sources):
 * one device per test, modules by file name, buffers, launches with packed parameters.
 * Every helper asserts success; tests that expect failure call the library directly. */
#ifndef KERNELET_TESTS_EMU_TEST_UTIL_H
#define KERNELET_TESTS_EMU_TEST_UTIL_H

#include <kernelet/emu.h>

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

typedef struct emu_fixture {
    kemu_device *dev;
    kemu_module *mod;
    int sliced;         /* functions are the slicer's variants, launched as slices */
} emu_fixture;

/* The directory of the kernels' PTX (KERNELET_EMU_KERNELS_DIR), or NULL: tests skip. */
const char *emu_kernels_dir(void);

#define SKIP_WITHOUT_KERNELS()                                                           \
    do {                                                                                 \
        if (!emu_kernels_dir()) {                                                        \
            g_test_skip("KERNELET_EMU_KERNELS_DIR is not set (no CUDA toolchain)");      \
            return;                                                                      \
        }                                                                                \
    } while (0)

/* n seeded random ints in [lo, hi). */
void emu_random_ints(int *v, size_t n, int lo, int hi, guint32 seed);

/* Device with `workers` threads and the module built from kernels/<file>.cu. */
void emu_fixture_open(emu_fixture *f, const char *file, unsigned workers);

/* Same; with sliced != 0 the module goes through kptx_slice_module first, emu_fixture_fn
 * returns each entry's "<entry>__kslice" variant, and launches of it (emu_launch_args,
 * emu_launch_ok) run the grid as a random plan of slices in random order (GLib's test
 * random numbers: reproducible with --seed). The same test then proves a sliced kernel
 * computes what the whole one does. */
void emu_fixture_open_as(emu_fixture *f, const char *file, unsigned workers, int sliced);
void emu_fixture_close(emu_fixture *f);

kemu_function *emu_fixture_fn(emu_fixture *f, const char *name);

/* Device buffer of bytes, filled from host when non-NULL, else zeroed. */
kemu_devptr emu_buf(emu_fixture *f, const void *host, size_t bytes);
void emu_download(emu_fixture *f, void *host, kemu_devptr src, size_t bytes);

/* Launch argument: a value of 4 or 8 bytes. */
typedef struct emu_arg {
    uint64_t value;
    unsigned bytes;
} emu_arg;
#define ARG64(v) ((emu_arg){(uint64_t)(v), 8})
#define ARG32(v) ((emu_arg){(uint64_t)(uint32_t)(v), 4})

/* Packs args by the function's parameter layout and launches (as slices when fn is a
 * sliced variant); returns the result code with the error in *err (which may be NULL). */
int emu_launch_args(kemu_function *fn, const unsigned grid[3], const unsigned block[3],
                    uint32_t dyn_shared, const emu_arg *args, unsigned n_args,
                    uint64_t budget, kemu_error *err);

/* Same, asserting success. */
void emu_launch_ok(kemu_function *fn, const unsigned grid[3], const unsigned block[3],
                   uint32_t dyn_shared, const emu_arg *args, unsigned n_args);

#endif
