/* The kfatbin view: opening a buffer (fatbins or an ELF file), accessors, freeing. */
#include <stdlib.h>
#include <string.h>

#include "fatbin_internal.h"

static const uint8_t elf_magic[4] = {0x7f, 'E', 'L', 'F'};

kfatbin *kfb_view_new(void)
{
    return calloc(1, sizeof(kfatbin));
}

void kfatbin_free(kfatbin *fb)
{
    if (!fb)
        return;
    for (unsigned i = 0; i < fb->n_entries; i++)
        free(fb->entries[i].strings);
    free(fb->entries);
    free(fb->images);
    free(fb->bytes);
    free(fb);
}

/* Where the fatbins of a buffer lie: the whole of it, or an ELF file's .nv_fatbin. */
static int locate_fatbins(const uint8_t *p, size_t size, size_t *offset, size_t *len,
                          kptx_error *err)
{
    if (size >= 4 && memcmp(p, elf_magic, 4) == 0)
        return kfb_elf_section(p, size, ".nv_fatbin", offset, len, err);
    if (size >= 4 && kfb_le32(p) == KFATBIN_WRAPPER_MAGIC)
        return kfb_fail(err, KPTX_EINVAL, "a fatbin wrapper holds pointers: open it in its "
                        "process with kfatbin_open_wrapper");
    if (size < 4 || kfb_le32(p) != KFATBIN_MAGIC)
        return kfb_fail(err, KPTX_ECORRUPT, "neither a fatbin nor an ELF file");
    *offset = 0;
    *len = size;
    return 0;
}

int kfatbin_open(const void *data, size_t size, kfatbin **out, kptx_error *err)
{
    if (!out)
        return kfb_fail(err, KPTX_EINVAL, "kfatbin_open: NULL result pointer");
    *out = NULL;
    if (!data && size)
        return kfb_fail(err, KPTX_EINVAL, "kfatbin_open: NULL data");
    size_t offset, len;
    int rc = locate_fatbins(data, size, &offset, &len, err);
    if (rc)
        return rc;
    kfatbin *fb = kfb_view_new();
    if (!fb || !(fb->bytes = malloc(len ? len : 1))) {
        kfatbin_free(fb);
        return kfb_fail(err, KPTX_ENOMEM, "out of memory for %zu bytes", len);
    }
    memcpy(fb->bytes, (const uint8_t *)data + offset, len);
    fb->n_bytes = len;
    if ((rc = kfb_parse_images(fb, 0, len, false, err))) {
        kfatbin_free(fb);
        return rc;
    }
    *out = fb;
    return kfb_ok(err);
}

unsigned kfatbin_count(const kfatbin *fb)
{
    return fb ? fb->n_entries : 0;
}

const kfatbin_entry *kfatbin_entry_at(const kfatbin *fb, unsigned i)
{
    return fb && i < fb->n_entries ? &fb->entries[i].pub : NULL;
}

unsigned kfatbin_image_count(const kfatbin *fb)
{
    return fb ? fb->n_images : 0;
}

const uint8_t *kfatbin_image_data(const kfatbin *fb, unsigned i, size_t *size)
{
    if (!fb || i >= fb->n_images)
        return NULL;
    if (size)
        *size = fb->images[i].size;
    return fb->bytes + fb->images[i].offset;
}
