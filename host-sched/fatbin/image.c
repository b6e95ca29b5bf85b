/* Parsing fatbin images: the header, then the entries one after another.
 *
 * Layout (little-endian), established from nvcc/fatbinary 13.0 output (docs/FATBIN.md):
 *
 * Fatbin header, 16 bytes:
 *   0x00 u32 magic 0xBA55ED50
 *   0x04 u16 version, 1
 *   0x06 u16 header size, 16: the first entry starts there
 *   0x08 u64 payload size: bytes of entries after the header; the image ends there
 *
 * Entry header, header-size bytes (64 at least; 64, 72, 80, 96, 112, 128 seen), then the
 * payload; the next entry follows the payload directly:
 *   0x00 u16 kind: 1 PTX, 2 ELF (cubin), 8 LTO IR
 *   0x02 u16 version, 0x0101
 *   0x04 u32 header size
 *   0x08 u64 payload size as stored, padded with zeros to a multiple of 8
 *   0x10 u32 compressed size: the exact length of the compressed stream (0 when raw)
 *   0x14 u32 where, inside this header, an {u32 offset, u32 size} pair locates an options
 *            block (0: none). PTX: ptxas options as text ("--compile-only" with -rdc,
 *            " -g ..." with -G); sm_100+ cubins: 36 bytes of binary attributes
 *   0x18 u16 payload format minor version (PTX: ISA minor; cubin: 8)
 *   0x1a u16 payload format major version (PTX: ISA major; cubin: 1)
 *   0x1c u32 architecture: SM major * 10 + minor (75, 90, 100, 120)
 *   0x20 u32 offset inside this header of the identifier (source file name, with -G)
 *   0x24 u32 size of the identifier (0: none)
 *   0x28 u64 flags: 0x1 64-bit, 0x2 debug, 0x10 Linux host, 0x2000 LZ4, 0x8000 ZSTD,
 *            0x100000 arch-specific (sm_90a), 0x200000 family-specific (sm_100f),
 *            0x1000000 on every sm_100+ cubin, 0x10000 on LTO IR
 *   0x30 u64 0 (LTO IR: a nonzero value of unknown meaning)
 *   0x38 u64 uncompressed size (0 when raw)
 *   0x40 ... identifier, options pair and options, zero padding up to the header size
 *
 * Compressed payloads: ZSTD entries hold one ZSTD frame, LZ4 entries one raw LZ4 block
 * (no frame). Raw PTX payloads are the text followed by at least one NUL byte.
 */
#include <stdlib.h>
#include <string.h>

#include "fatbin_internal.h"

enum {
    HDR_MIN = 16,
    ENTRY_MIN = 0x40,
    E_KIND = 0x00, E_HDR_SIZE = 0x04, E_PAYLOAD = 0x08, E_COMPRESSED = 0x10, E_OPTIONS = 0x14,
    E_MINOR = 0x18, E_MAJOR = 0x1a, E_ARCH = 0x1c, E_NAME_OFF = 0x20, E_NAME_SIZE = 0x24,
    E_FLAGS = 0x28, E_UNCOMPRESSED = 0x38,
};

int kfatbin_image_size(const void *p, size_t avail, size_t *size, kptx_error *err)
{
    if (!p || !size)
        return kfb_fail(err, KPTX_EINVAL, "kfatbin_image_size: NULL argument");
    const uint8_t *h = p;
    if (avail < HDR_MIN)
        return kfb_fail(err, KPTX_ECORRUPT, "fatbin header truncated: %zu of 16 bytes", avail);
    if (kfb_le32(h) != KFATBIN_MAGIC)
        return kfb_fail(err, KPTX_ECORRUPT, "not a fatbin: magic 0x%08x", kfb_le32(h));
    if (kfb_le16(h + 4) != 1)
        return kfb_fail(err, KPTX_EUNSUPPORTED, "fatbin version %u (only 1 is known)",
                        kfb_le16(h + 4));
    size_t hdr = kfb_le16(h + 6);
    uint64_t payload = kfb_le64(h + 8);
    if (hdr < HDR_MIN)
        return kfb_fail(err, KPTX_ECORRUPT, "fatbin header size %zu below 16", hdr);
    if (payload > KFATBIN_MAX_IMAGE - hdr)
        return kfb_fail(err, KPTX_ELIMIT, "fatbin of %llu payload bytes exceeds the limit",
                        (unsigned long long)payload);
    size_t total = hdr + (size_t)payload;
    if (total > avail)
        return kfb_fail(err, KPTX_ECORRUPT, "fatbin truncated: %zu bytes declared, %zu present",
                        total, avail);
    *size = total;
    return kfb_ok(err);
}

/* A (offset, size) range inside an entry header of hdr bytes, checked. */
static int header_range(uint32_t off, uint32_t len, size_t hdr, const char *what,
                        kptx_error *err)
{
    if (len == 0)
        return 0;
    if (off < ENTRY_MIN || off > hdr || len > hdr - off)
        return kfb_fail(err, KPTX_ECORRUPT, "entry %s at %u+%u lies outside its %zu-byte header",
                        what, off, len, hdr);
    return 0;
}

/* Copies the identifier and (PTX) options out of the entry header at e into e->strings. */
static int entry_strings(const uint8_t *h, size_t hdr, kfb_entry *e, kptx_error *err)
{
    uint32_t name_off = kfb_le32(h + E_NAME_OFF), name_len = kfb_le32(h + E_NAME_SIZE);
    uint32_t opt_off = 0, opt_len = 0, desc = kfb_le32(h + E_OPTIONS);
    int rc = header_range(name_off, name_len, hdr, "identifier", err);
    if (rc)
        return rc;
    if (desc) {
        if ((rc = header_range(desc, 8, hdr, "options descriptor", err)))
            return rc;
        opt_off = kfb_le32(h + desc);
        opt_len = kfb_le32(h + desc + 4);
        if ((rc = header_range(opt_off, opt_len, hdr, "options", err)))
            return rc;
    }
    if (e->pub.kind != KFATBIN_PTX)
        opt_len = 0;
    e->pub.name = e->pub.options = "";
    if (name_len == 0 && opt_len == 0)
        return 0;
    /* Both are shorter than the header (< 64 KiB by the checks above). */
    e->strings = malloc((size_t)name_len + opt_len + 2);
    if (!e->strings)
        return kfb_fail(err, KPTX_ENOMEM, "out of memory");
    char *name = e->strings, *opts = e->strings + name_len + 1;
    memcpy(name, h + name_off, name_len);
    name[name_len] = '\0';
    memcpy(opts, h + opt_off, opt_len);
    opts[opt_len] = '\0';
    e->pub.name = name;
    e->pub.options = opts;
    return 0;
}

/* Payload sizes and compression of the entry header at h; payload bytes are stored. */
static int entry_sizes(const uint8_t *h, uint64_t stored, kfb_entry *e, kptx_error *err)
{
    uint64_t flags = e->pub.flags;
    bool lz4 = flags & KFATBIN_FLAG_LZ4, zstd = flags & KFATBIN_FLAG_ZSTD;
    if (lz4 && zstd)
        return kfb_fail(err, KPTX_ECORRUPT, "entry flags 0x%llx claim both LZ4 and ZSTD",
                        (unsigned long long)flags);
    if (!lz4 && !zstd) {
        e->pub.compression = KFATBIN_RAW;
        e->pub.stored_size = e->pub.size = (size_t)stored;
        return 0;
    }
    uint32_t compressed = kfb_le32(h + E_COMPRESSED);
    uint64_t uncompressed = kfb_le64(h + E_UNCOMPRESSED);
    if (compressed == 0 || compressed > stored)
        return kfb_fail(err, KPTX_ECORRUPT, "compressed size %u outside the %llu-byte payload",
                        compressed, (unsigned long long)stored);
    if (uncompressed == 0 || uncompressed > SIZE_MAX)
        return kfb_fail(err, KPTX_ECORRUPT, "uncompressed size %llu is impossible",
                        (unsigned long long)uncompressed);
    e->pub.compression = lz4 ? KFATBIN_LZ4 : KFATBIN_ZSTD;
    e->pub.stored_size = compressed;
    e->pub.size = (size_t)uncompressed;
    return 0;
}

/* array, with room for element n (grown by doubling into *cap), or NULL when out of memory
 * (array is then left as it was). */
static void *room_for(void *array, unsigned n, unsigned *cap, size_t elem)
{
    if (n < *cap)
        return array;
    unsigned next = *cap ? *cap * 2 : 8;
    void *grown = next > *cap ? realloc(array, (size_t)next * elem) : NULL;
    if (grown)
        *cap = next;
    return grown;
}

/* Reads the entry header at offset at (avail bytes left in its image) into a new entry;
 * *next is where the following entry starts. */
static int parse_entry(kfatbin *fb, size_t at, size_t avail, unsigned image, bool relocatable,
                       size_t *next, kptx_error *err)
{
    const uint8_t *h = fb->bytes + at;
    if (avail < ENTRY_MIN)
        return kfb_fail(err, KPTX_ECORRUPT, "entry header truncated at %zu: %zu of 64 bytes",
                        at, avail);
    size_t hdr = kfb_le32(h + E_HDR_SIZE);
    uint64_t stored = kfb_le64(h + E_PAYLOAD);
    if (hdr < ENTRY_MIN || hdr > avail)
        return kfb_fail(err, KPTX_ECORRUPT, "entry header size %zu at %zu (64 to %zu allowed)",
                        hdr, at, avail);
    if (stored > avail - hdr)
        return kfb_fail(err, KPTX_ECORRUPT, "entry payload of %llu bytes at %zu runs past the "
                        "fatbin's end", (unsigned long long)stored, at);
    kfb_entry *entries = room_for(fb->entries, fb->n_entries, &fb->cap_entries, sizeof(*entries));
    if (!entries)
        return kfb_fail(err, KPTX_ENOMEM, "out of memory for %u entries", fb->n_entries + 1);
    fb->entries = entries;
    kfb_entry *e = &entries[fb->n_entries];
    memset(e, 0, sizeof(*e));
    e->payload = at + hdr;
    e->pub.kind = (kfatbin_kind)kfb_le16(h + E_KIND);
    e->pub.arch = kfb_le32(h + E_ARCH);
    e->pub.flags = kfb_le64(h + E_FLAGS);
    e->pub.fatbin_index = image;
    e->pub.version_major = kfb_le16(h + E_MAJOR);
    e->pub.version_minor = kfb_le16(h + E_MINOR);
    e->pub.relocatable = relocatable;
    int rc;
    if ((rc = entry_sizes(h, stored, e, err)) || (rc = entry_strings(h, hdr, e, err)))
        return rc;
    fb->n_entries++;
    *next = at + hdr + (size_t)stored;
    return 0;
}

static int push_image(kfatbin *fb, size_t offset, size_t size, kptx_error *err)
{
    kfb_image *images = room_for(fb->images, fb->n_images, &fb->cap_images, sizeof(*images));
    if (!images)
        return kfb_fail(err, KPTX_ENOMEM, "out of memory for %u images", fb->n_images + 1);
    fb->images = images;
    images[fb->n_images++] = (kfb_image){offset, size};
    return 0;
}

/* Parses the one image at offset at, of at most avail bytes; *size is its length. */
static int parse_image(kfatbin *fb, size_t at, size_t avail, bool relocatable, size_t *size,
                       kptx_error *err)
{
    int rc = kfatbin_image_size(fb->bytes + at, avail, size, err);
    if (rc)
        return rc;
    unsigned image = fb->n_images;
    if ((rc = push_image(fb, at, *size, err)))
        return rc;
    size_t end = at + *size;
    for (size_t e = at + kfb_le16(fb->bytes + at + 6); e < end;) {
        if (fb->n_entries == UINT32_MAX)
            return kfb_fail(err, KPTX_ELIMIT, "too many entries");
        if ((rc = parse_entry(fb, e, end - e, image, relocatable, &e, err)))
            return rc;
    }
    return 0;
}

/* Where the fatbin after one that ended at at starts: the linker aligns each fatbin of a
 * section to 8 bytes and fills the gaps with zeros, so zero bytes are skipped (a fatbin
 * starts with its nonzero magic). end when only zeros remain. */
static size_t next_image(const uint8_t *bytes, size_t at, size_t end)
{
    while (at < end && bytes[at] == 0)
        at++;
    return at;
}

int kfb_parse_images(kfatbin *fb, size_t start, size_t end, bool relocatable,
                     kptx_error *err)
{
    size_t at = start;
    while (at < end) {
        size_t size;
        if (at > start && (at = next_image(fb->bytes, at, end)) == end)
            break;
        if (fb->n_images == UINT32_MAX)
            return kfb_fail(err, KPTX_ELIMIT, "too many fatbins");
        int rc = parse_image(fb, at, end - at, relocatable, &size, err);
        if (rc)
            return rc;
        at += size;
    }
    return kfb_ok(err);
}
