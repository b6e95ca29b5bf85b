/* The attribute stream of a cubin's .nv.info sections (docs/FATBIN.md, "Cubins").
 *
 * A section is a sequence of records: u8 format, u8 attribute, then by format either a u16
 * value (formats 1-3, 4 bytes in all) or a u16 length and that many bytes (format 4). Only
 * the attributes that describe a kernel's parameters and launch bounds are interpreted;
 * the rest are stepped over. Every record is checked against the section's end. */
#include <stdlib.h>
#include <string.h>

#include "fatbin_internal.h"

int kfb_nvinfo_next(const uint8_t *p, size_t n, size_t *pos, kfb_nvattr *a, kptx_error *err)
{
    size_t at = *pos;
    if (at >= n)
        return 0;
    if (n - at < 4)
        return kfb_fail(err, KPTX_ECORRUPT, ".nv.info record at %zu truncated", at);
    a->format = p[at];
    a->attr = p[at + 1];
    if (a->format >= KFB_EIFMT_NVAL && a->format <= KFB_EIFMT_HVAL) {
        a->value = kfb_le16(p + at + 2);
        a->data = NULL;
        a->size = 0;
        *pos = at + 4;
        return 1;
    }
    if (a->format != KFB_EIFMT_SVAL)
        return kfb_fail(err, KPTX_ECORRUPT, ".nv.info record at %zu has format %u", at,
                        a->format);
    a->size = kfb_le16(p + at + 2);
    if (a->size > n - at - 4)
        return kfb_fail(err, KPTX_ECORRUPT, ".nv.info record at %zu: %zu bytes past the end",
                        at, a->size);
    a->value = 0;
    a->data = p + at + 4;
    *pos = at + 4 + a->size;
    return 1;
}

/* One parameter record: u32 index, u16 ordinal, u16 offset, u32 with the size in bits
 * 18-31. Ordinals say where it goes in the kernel's declaration order; with one record per
 * parameter, an ordinal of `records` or more would leave a hole. */
static int kparam(const kfb_nvattr *a, kcubin_kernel *k, uint8_t *seen, unsigned records,
                  kptx_error *err)
{
    if (a->size < 12)
        return kfb_fail(err, KPTX_ECORRUPT, "parameter record of %zu bytes", a->size);
    unsigned ordinal = kfb_le16(a->data + 4);
    uint32_t offset = kfb_le16(a->data + 6), size = kfb_le32(a->data + 8) >> 18;
    if (ordinal >= records)
        return kfb_fail(err, KPTX_ECORRUPT, "parameter ordinal %u among %u parameter records",
                        ordinal, records);
    if (seen[ordinal])
        return kfb_fail(err, KPTX_ECORRUPT, "parameter %u described twice", ordinal);
    if (!size || offset > KCUBIN_MAX_PARAM_BYTES || size > KCUBIN_MAX_PARAM_BYTES - offset)
        return kfb_fail(err, KPTX_ECORRUPT, "parameter %u at %u+%u outside the %u-byte block",
                        ordinal, offset, size, KCUBIN_MAX_PARAM_BYTES);
    seen[ordinal] = 1;
    k->params[ordinal] = (kcubin_param){offset, size};
    if (ordinal + 1 > k->n_params)
        k->n_params = ordinal + 1;
    return 0;
}

/* Launch bounds: three u32 (x, y, z). */
static int max_threads(const kfb_nvattr *a, kcubin_kernel *k, kptx_error *err)
{
    if (a->size < 12)
        return kfb_fail(err, KPTX_ECORRUPT, "launch bounds record of %zu bytes", a->size);
    uint64_t t = (uint64_t)kfb_le32(a->data) * kfb_le32(a->data + 4) * kfb_le32(a->data + 8);
    k->max_threads = t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
    return 0;
}

/* Block size: CBANK_PARAM_SIZE, else PARAM_CBANK's size field (u32 symbol, u16 offset,
 * u16 size), else the end of the last parameter. */
static int block_size(const kfb_nvattr *a, uint32_t *cbank, uint32_t *bank_size,
                      kptx_error *err)
{
    if (a->attr == KFB_EIATTR_CBANK_PARAM_SIZE) {
        *cbank = a->value;
        return 0;
    }
    if (a->size < 8)
        return kfb_fail(err, KPTX_ECORRUPT, "parameter bank record of %zu bytes", a->size);
    *bank_size = kfb_le16(a->data + 6);
    return 0;
}

static int check_layout(kcubin_kernel *k, const uint8_t *seen, uint32_t declared,
                        kptx_error *err)
{
    uint32_t end = 0;
    for (unsigned i = 0; i < k->n_params; i++) {
        if (!seen[i])
            return kfb_fail(err, KPTX_ECORRUPT, "parameter %u of %u not described", i,
                            k->n_params);
        if (k->params[i].offset + k->params[i].size > end)
            end = k->params[i].offset + k->params[i].size;
    }
    if (declared && declared < end)
        return kfb_fail(err, KPTX_ECORRUPT, "parameters end at %u, the block is %u bytes", end,
                        declared);
    if (declared > KCUBIN_MAX_PARAM_BYTES)
        return kfb_fail(err, KPTX_ELIMIT, "parameter block of %u bytes", declared);
    k->param_bytes = declared ? declared : end;
    return 0;
}

/* The number of parameter records: the most parameters the section can describe. */
static int count_params(const uint8_t *p, size_t n, unsigned *records, kptx_error *err)
{
    size_t pos = 0;
    kfb_nvattr a;
    int rc;
    *records = 0;
    while ((rc = kfb_nvinfo_next(p, n, &pos, &a, err)) == 1)
        if (a.attr == KFB_EIATTR_KPARAM_INFO && a.format == KFB_EIFMT_SVAL &&
            ++*records > KCUBIN_MAX_PARAMS)
            return kfb_fail(err, KPTX_ELIMIT, "more than %u parameters", KCUBIN_MAX_PARAMS);
    return rc;
}

static int decode_attr(const kfb_nvattr *a, kcubin_kernel *k, uint8_t *seen, unsigned records,
                       uint32_t *cbank, uint32_t *bank_size, kptx_error *err)
{
    switch (a->attr) {
    case KFB_EIATTR_KPARAM_INFO:
        return a->format == KFB_EIFMT_SVAL ? kparam(a, k, seen, records, err) : 0;
    case KFB_EIATTR_MAX_THREADS:
        return a->format == KFB_EIFMT_SVAL ? max_threads(a, k, err) : 0;
    case KFB_EIATTR_CBANK_PARAM_SIZE:
        return a->format == KFB_EIFMT_HVAL ? block_size(a, cbank, bank_size, err) : 0;
    case KFB_EIATTR_PARAM_CBANK:
        return a->format == KFB_EIFMT_SVAL ? block_size(a, cbank, bank_size, err) : 0;
    default:
        return 0;
    }
}

int kcubin_decode_kernel_info(const uint8_t *p, size_t n, kcubin_kernel *k, kptx_error *err)
{
    if (!k || (!p && n))
        return kfb_fail(err, KPTX_EINVAL, "kcubin_decode_kernel_info: NULL argument");
    unsigned records;
    int rc = count_params(p, n, &records, err);
    if (rc)
        return rc;
    uint8_t *seen = calloc(records + 1, 1);
    kcubin_param *params = calloc(records + 1, sizeof(*params));
    if (!seen || !params) {
        free(seen);
        free(params);
        return kfb_fail(err, KPTX_ENOMEM, "out of memory");
    }
    free(k->params);
    k->params = params;
    k->n_params = 0;
    k->param_bytes = k->max_threads = 0;
    uint32_t cbank = 0, bank_size = 0;
    size_t pos = 0;
    kfb_nvattr a;
    while ((rc = kfb_nvinfo_next(p, n, &pos, &a, err)) == 1)
        if ((rc = decode_attr(&a, k, seen, records, &cbank, &bank_size, err)))
            break;
    if (!rc)
        rc = check_layout(k, seen, cbank ? cbank : bank_size, err);
    free(seen);
    return rc ? rc : kfb_ok(err);
}
