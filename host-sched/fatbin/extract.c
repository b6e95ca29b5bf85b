/* Extracting an entry's payload: copied as it is, or decompressed (one LZ4 block or a ZSTD
 * frame) to exactly the size its header declares. */
#include <limits.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "fatbin_internal.h"

/* An LZ4 sequence expands at most 255-fold (each length byte adds 255 to a match). */
#define LZ4_MAX_RATIO 255

static int inflate_lz4(const uint8_t *src, size_t n, uint8_t *dst, size_t size,
                       kptx_error *err)
{
    if (size / LZ4_MAX_RATIO > n + 16)
        return kfb_fail(err, KPTX_ECORRUPT, "LZ4 payload of %zu bytes cannot hold %zu", n,
                        size);
    /* Both fit an int: n is below KFATBIN_MAX_IMAGE, size below KFATBIN_MAX_PAYLOAD. */
    int got = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)size);
    if (got < 0 || (size_t)got != size)
        return kfb_fail(err, KPTX_ECORRUPT, "LZ4 payload is corrupt (gave %d of %zu bytes)",
                        got, size);
    return 0;
}

static int inflate_zstd(const uint8_t *src, size_t n, uint8_t *dst, size_t size,
                        kptx_error *err)
{
    unsigned long long declared = ZSTD_getFrameContentSize(src, n);
    if (declared == ZSTD_CONTENTSIZE_ERROR)
        return kfb_fail(err, KPTX_ECORRUPT, "ZSTD payload is not a valid frame");
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != size)
        return kfb_fail(err, KPTX_ECORRUPT, "ZSTD frame holds %llu bytes, the entry declares %zu",
                        declared, size);
    size_t got = ZSTD_decompress(dst, size, src, n);
    if (ZSTD_isError(got))
        return kfb_fail(err, KPTX_ECORRUPT, "ZSTD payload is corrupt: %s",
                        ZSTD_getErrorName(got));
    if (got != size)
        return kfb_fail(err, KPTX_ECORRUPT, "ZSTD payload gave %zu of %zu bytes", got, size);
    return 0;
}

static int check_extractable(const kfatbin *fb, unsigned i, uint8_t **data, size_t *size,
                             kptx_error *err)
{
    if (!fb || !data || !size)
        return kfb_fail(err, KPTX_EINVAL, "kfatbin_extract: NULL argument");
    if (i >= fb->n_entries)
        return kfb_fail(err, KPTX_EINVAL, "no entry %u (the view has %u)", i, fb->n_entries);
    const kfatbin_entry *e = &fb->entries[i].pub;
    if (e->kind != KFATBIN_PTX && e->kind != KFATBIN_ELF)
        return kfb_fail(err, KPTX_EUNSUPPORTED, "entry %u is of kind %u, neither PTX nor ELF",
                        i, (unsigned)e->kind);
    if (e->size > KFATBIN_MAX_PAYLOAD)
        return kfb_fail(err, KPTX_ELIMIT, "entry %u of %zu bytes exceeds the %zu-byte limit", i,
                        e->size, KFATBIN_MAX_PAYLOAD);
    return 0;
}

int kfatbin_extract(const kfatbin *fb, unsigned i, uint8_t **data, size_t *size,
                    kptx_error *err)
{
    int rc = check_extractable(fb, i, data, size, err);
    if (rc)
        return rc;
    const kfb_entry *e = &fb->entries[i];
    const uint8_t *src = fb->bytes + e->payload;
    size_t n = e->pub.size;
    uint8_t *out = malloc(n + 1);
    if (!out)
        return kfb_fail(err, KPTX_ENOMEM, "out of memory for %zu bytes", n + 1);
    if (e->pub.compression == KFATBIN_LZ4)
        rc = inflate_lz4(src, e->pub.stored_size, out, n, err);
    else if (e->pub.compression == KFATBIN_ZSTD)
        rc = inflate_zstd(src, e->pub.stored_size, out, n, err);
    else
        memcpy(out, src, n);
    if (rc) {
        free(out);
        return rc;
    }
    out[n] = '\0';
    if (e->pub.kind == KFATBIN_PTX)
        n = strlen((const char *)out);
    *data = out;
    *size = n;
    return kfb_ok(err);
}
