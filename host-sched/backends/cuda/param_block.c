/* Kernel parameter layouts and launch blocks (see param_block.h). */
#include "param_block.h"

#include <stdlib.h>
#include <string.h>

#define EXTRA KBACKEND_SLICE_EXTRA_PARAMS

static size_t align4(size_t v)
{
    return (v + 3) & ~(size_t)3;
}

/* Offsets must grow, sizes be non-zero, and nothing may pass the parameter limit. */
static int check_params(const size_t *offsets, const size_t *sizes, size_t n, kbackend_error *err)
{
    size_t end = 0;
    for (size_t i = 0; i < n; i++) {
        if (!sizes[i] || offsets[i] < end || sizes[i] > KCUDA_MAX_PARAM_BYTES ||
            offsets[i] > KCUDA_MAX_PARAM_BYTES - sizes[i])
            return kbackend_fail(err, KBACKEND_EINVAL,
                              "parameter %zu: offset %zu size %zu does not fit the layout", i,
                              offsets[i], sizes[i]);
        end = offsets[i] + sizes[i];
    }
    return 0;
}

int kcuda_param_layout_from(const size_t *offsets, const size_t *sizes, size_t n, int sliced,
                            kcuda_param_layout *out, kbackend_error *err)
{
    if (!out || (n && (!offsets || !sizes)))
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    int rc = check_params(offsets, sizes, n, err);
    if (rc)
        return rc;
    if (sliced && n < EXTRA)
        return kbackend_fail(err, KBACKEND_EINVAL, "sliced variant with %zu parameters (at least %d)",
                          n, EXTRA);
    size_t orig = sliced ? n - EXTRA : n;   /* number of original parameters */
    *out = (kcuda_param_layout){.known = 1, .sliced = sliced != 0};
    out->orig_bytes = orig ? offsets[orig - 1] + sizes[orig - 1] : 0;
    if (!sliced)
        return 0;
    out->extra_offset = offsets[orig];
    for (size_t i = 0; i < EXTRA; i++)
        if (sizes[orig + i] != 4 || offsets[orig + i] != out->extra_offset + 4 * i ||
            out->extra_offset % 4)
            return kbackend_fail(err, KBACKEND_EINVAL, "sliced variant: parameter %zu is not the "
                              "slice's .u32 number %zu", orig + i, i);
    return 0;
}

size_t kcuda_param_extra_offset(const kcuda_param_layout *layout, size_t size)
{
    return layout->known ? layout->extra_offset : size - 4 * EXTRA;
}

void kcuda_param_layout_unknown(int sliced, kcuda_param_layout *out)
{
    if (out)
        *out = (kcuda_param_layout){.known = 0, .sliced = sliced != 0};
}

int kcuda_param_block(const kcuda_param_layout *layout, const void *params, size_t size,
                      const uint32_t extra[KBACKEND_SLICE_EXTRA_PARAMS], void **out,
                      size_t *out_size, kbackend_error *err)
{
    if (!layout || !out || !out_size || (size && !params))
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    *out = NULL;
    *out_size = 0;
    if (layout->sliced != (extra != NULL))
        return kbackend_fail(err, KBACKEND_EINVAL, layout->sliced
                          ? "a sliced variant needs the slice's first block and grid"
                          : "slice values given for a function that is not a sliced variant");
    size_t orig = layout->known ? layout->orig_bytes : size;
    if (size < orig)
        return kbackend_fail(err, KBACKEND_EINVAL, "parameter block of %zu bytes, the kernel takes %zu",
                          size, orig);
    size_t extra_at = layout->known ? layout->extra_offset : align4(orig);
    size_t total = layout->sliced ? extra_at + 4 * EXTRA : orig;
    if (total > KCUDA_MAX_PARAM_BYTES)
        return kbackend_fail(err, KBACKEND_EINVAL, "parameter block of %zu bytes (limit %u)", total,
                          KCUDA_MAX_PARAM_BYTES);
    if (!total)
        return 0;
    unsigned char *b = calloc(1, total);  /* zeroed: padding before the extras is defined */
    if (!b)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    if (orig)
        memcpy(b, params, orig);
    if (layout->sliced)
        memcpy(b + extra_at, extra, 4 * EXTRA);
    *out = b;
    *out_size = total;
    return 0;
}
