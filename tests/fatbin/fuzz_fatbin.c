/*
 * libFuzzer target: the fatbin reader on arbitrary bytes (a fatbin, fatbins back to back, or
 * an ELF file). Opens, lists, extracts every entry and selects for several targets; every
 * result must be consistent with what the view reported.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/fatbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_entries(const kfatbin *fb)
{
    for (unsigned i = 0; i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        if (!e || e->fatbin_index >= kfatbin_image_count(fb) || !e->name || !e->options)
            abort();
        uint8_t *out = NULL;
        size_t n = 0;
        kptx_error err;
        int rc = kfatbin_extract(fb, i, &out, &n, &err);
        if (rc == 0 && (out[n] != 0 || (e->kind == KFATBIN_ELF && n != e->size) || n > e->size))
            abort();
        if (rc != 0 && (out || err.code != rc || !err.message[0]))
            abort();
        free(out);
    }
}

static void check_select(const kfatbin *fb)
{
    static const unsigned targets[] = {75, 80, 86, 90, 100, 120};
    for (unsigned t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
        for (int ptx = 0; ptx < 2; ptx++) {
            unsigned idx;
            if (kfatbin_select(fb, targets[t], ptx, &idx, NULL) == 0 &&
                kfatbin_entry_at(fb, idx)->arch > targets[t])
                abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kfatbin *fb = NULL;
    kptx_error err;
    size_t image = 0;
    if (kfatbin_image_size(data, size, &image, NULL) == 0 && image > size)
        abort();
    if (kfatbin_open(data, size, &fb, &err) != 0) {
        if (fb || !err.message[0])
            abort();
        return 0;
    }
    for (unsigned i = 0; i < kfatbin_image_count(fb); i++) {
        size_t n = 0;
        if (!kfatbin_image_data(fb, i, &n) || n > size)
            abort();
    }
    check_entries(fb);
    check_select(fb);
    kfatbin_free(fb);
    return 0;
}
