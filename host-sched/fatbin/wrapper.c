/* Opening the host stub's fatbin wrapper inside the process that holds it.
 *
 * nvcc 13 emits (fatbinary_section.h, section .nvFatBinSegment) the 24-byte struct
 * {int magic 0x466243B1; int version; const unsigned long long *data; void *p}:
 * version 1 for each whole-program translation unit (data: its fatbin in .nv_fatbin;
 * p: NULL), version 2 for the device-link stub of -rdc programs (data: the linked fatbin;
 * p: a NULL-terminated array of pointers to the prelinked fatbins, in __nv_relfatbin). */
#include <stdlib.h>
#include <string.h>

#include "fatbin_internal.h"

typedef struct stub_wrapper {
    int magic;
    int version;
    const void *data;
    const void *const *prelinked;
} stub_wrapper;

/* The fatbins a wrapper names: data first, then the prelinked ones (version 2). */
static int wrapper_images(const stub_wrapper *w, const uint8_t ***images, unsigned *n,
                          kptx_error *err)
{
    unsigned count = 1;
    if ((uint32_t)w->magic != KFATBIN_WRAPPER_MAGIC)
        return kfb_fail(err, KPTX_ECORRUPT, "not a fatbin wrapper: magic 0x%08x",
                        (uint32_t)w->magic);
    if (w->version != 1 && w->version != 2)
        return kfb_fail(err, KPTX_EUNSUPPORTED, "fatbin wrapper version %d (1 and 2 are known)",
                        w->version);
    if (!w->data)
        return kfb_fail(err, KPTX_ECORRUPT, "fatbin wrapper without a fatbin");
    if (w->version == 2 && w->prelinked) {
        while (w->prelinked[count - 1]) {
            if (count > KFATBIN_MAX_PRELINKED)
                return kfb_fail(err, KPTX_ELIMIT, "more than %u prelinked fatbins",
                                KFATBIN_MAX_PRELINKED);
            count++;
        }
    }
    *images = malloc(count * sizeof(**images));
    if (!*images)
        return kfb_fail(err, KPTX_ENOMEM, "out of memory");
    (*images)[0] = w->data;
    for (unsigned i = 1; i < count; i++)
        (*images)[i] = w->prelinked[i - 1];
    *n = count;
    return 0;
}

/* Copies the fatbins into one buffer, each at an 8-byte aligned offset, and parses them. */
static int copy_and_parse(kfatbin *fb, const uint8_t **images, unsigned n, kptx_error *err)
{
    size_t *sizes = malloc(n * sizeof(*sizes)), total = 0;
    int rc = sizes ? 0 : kfb_fail(err, KPTX_ENOMEM, "out of memory");
    for (unsigned i = 0; !rc && i < n; i++) {
        if ((rc = kfatbin_image_size(images[i], SIZE_MAX, &sizes[i], err)))
            break;
        if (sizes[i] > SIZE_MAX - 8 - total)
            rc = kfb_fail(err, KPTX_ELIMIT, "fatbins too large together");
        total = (total + sizes[i] + 7) & ~(size_t)7;
    }
    if (!rc && !(fb->bytes = malloc(total ? total : 1)))
        rc = kfb_fail(err, KPTX_ENOMEM, "out of memory for %zu bytes", total);
    size_t at = 0;
    for (unsigned i = 0; !rc && i < n; i++) {
        memcpy(fb->bytes + at, images[i], sizes[i]);
        fb->n_bytes = at + sizes[i];
        rc = kfb_parse_images(fb, at, at + sizes[i], i > 0, err);
        at = (at + sizes[i] + 7) & ~(size_t)7;
    }
    free(sizes);
    return rc;
}

int kfatbin_open_wrapper(const void *wrapper, kfatbin **out, kptx_error *err)
{
    if (!out || !wrapper)
        return kfb_fail(err, KPTX_EINVAL, "kfatbin_open_wrapper: NULL argument");
    *out = NULL;
    stub_wrapper w;
    memcpy(&w, wrapper, sizeof(w));
    const uint8_t **images = NULL;
    unsigned n = 0;
    int rc = wrapper_images(&w, &images, &n, err);
    if (rc)
        return rc;
    kfatbin *fb = kfb_view_new();
    rc = fb ? copy_and_parse(fb, images, n, err) : kfb_fail(err, KPTX_ENOMEM, "out of memory");
    free(images);
    if (rc) {
        kfatbin_free(fb);
        return rc;
    }
    *out = fb;
    return kfb_ok(err);
}
