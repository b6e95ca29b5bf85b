/* Malformed input, made by mutating real nvcc output: every failure is a clean error code
 * with a message, and (under ASan in the sanitizer build) no read leaves the buffer. Each
 * input is copied into a buffer of exactly its size so that an over-read is caught. */
#include <elf.h>
#include <string.h>

#include "fixtures.h"

/* The entry header fields the mutations touch (docs/FATBIN.md). */
enum {
    E_HDR_SIZE = 0x04, E_PAYLOAD = 0x08, E_COMPRESSED = 0x10, E_OPTIONS = 0x14,
    E_NAME_OFF = 0x20, E_NAME_SIZE = 0x24, E_FLAGS = 0x28, E_UNCOMPRESSED = 0x38,
};

static void put16(guint8 *p, guint16 v)
{
    for (int i = 0; i < 2; i++)
        p[i] = (guint8)(v >> (8 * i));
}

static void put32(guint8 *p, guint32 v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (guint8)(v >> (8 * i));
}

static void put64(guint8 *p, guint64 v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (guint8)(v >> (8 * i));
}

static guint32 get32(const guint8 *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (guint32)p[3] << 24;
}

static guint64 get64(const guint8 *p)
{
    return get32(p) | (guint64)get32(p + 4) << 32;
}

/* Opens len bytes of data from an exact-size copy; asserts the result code. On success the
 * view is returned (else NULL). */
static kfatbin *open_exact(const guint8 *data, gsize len, int want)
{
    guint8 *copy = g_malloc(len ? len : 1);
    memcpy(copy, data, len);
    kfatbin *fb = (kfatbin *)copy;
    kptx_error err = {.code = 99};
    int rc = kfatbin_open(copy, len, &fb, &err);
    if (rc != want)
        g_error("open of %zu bytes: got %d (%s), expected %d", len, rc, err.message, want);
    g_assert_cmpint(err.code, ==, rc);
    if (rc) {
        g_assert_null(fb);
        g_assert_cmpuint(strlen(err.message), >, 0);
    }
    g_free(copy);
    return fb;
}

static void expect_open(const guint8 *data, gsize len, int want)
{
    kfatbin_free(open_exact(data, len, want));
}

/* Offsets of the entry headers of the single fatbin image at data, walked by the test. */
static GArray *entry_offsets(const guint8 *data, gsize size)
{
    GArray *offs = g_array_new(FALSE, FALSE, sizeof(gsize));
    gsize end = 16 + get64(data + 8);
    g_assert_cmpuint(end, ==, size);
    for (gsize e = data[6] | data[7] << 8; e < end; e += get32(data + e + E_HDR_SIZE) +
                                                     get64(data + e + E_PAYLOAD))
        g_array_append_val(offs, e);
    return offs;
}

static void test_prefixes(void)
{
    static const char *const names[] = {"single", "multi_zstd", "multi_lz4", "debug"};
    for (unsigned n = 0; n < G_N_ELEMENTS(names); n++) {
        gsize size;
        guint8 *data = fx_load(fx_path(names[n]), &size);
        for (gsize len = 0; len < size; len++) {
            expect_open(data, len, KPTX_ECORRUPT);
            guint8 *copy = g_memdup2(data, len ? len : 1);
            size_t declared;
            g_assert_cmpint(kfatbin_image_size(copy, len, &declared, NULL), ==, KPTX_ECORRUPT);
            g_free(copy);
        }
        expect_open(data, size, 0);
        g_free(data);
    }
}

/* ELF prefixes: a sample through the file and every prefix near its end, where the section
 * headers lie. */
static void test_elf_prefixes(void)
{
    gsize size;
    guint8 *data = fx_load(fx_path("so"), &size);
    for (gsize len = 0; len < size; len += len < size - 4096 ? 4099 : 1)
        expect_open(data, len, KPTX_ECORRUPT);
    expect_open(data, size, 0);
    g_free(data);
}

static void test_magic_and_header(void)
{
    gsize size;
    guint8 *data = fx_load(fx_path("multi"), &size);
    for (int i = 0; i < 4; i++) {
        data[i] ^= 0x20;
        expect_open(data, size, KPTX_ECORRUPT);
        data[i] ^= 0x20;
    }
    static const guint16 small_headers[] = {0, 8, 15};
    for (unsigned i = 0; i < G_N_ELEMENTS(small_headers); i++) {
        put16(data + 6, small_headers[i]);
        expect_open(data, size, KPTX_ECORRUPT);
    }
    put16(data + 6, 0xffff);
    expect_open(data, size, KPTX_ECORRUPT);
    put16(data + 6, 16);
    guint64 payload = get64(data + 8);
    put64(data + 8, payload + 8);       /* longer than the buffer */
    expect_open(data, size, KPTX_ECORRUPT);
    put64(data + 8, payload - 8);       /* the last entry runs past the image's end */
    expect_open(data, size, KPTX_ECORRUPT);
    put64(data + 8, UINT64_MAX - 8);
    expect_open(data, size, KPTX_ELIMIT);
    size_t declared;
    g_assert_cmpint(kfatbin_image_size(data, SIZE_MAX, &declared, NULL), ==, KPTX_ELIMIT);
    put64(data + 8, payload);
    /* an unknown fatbin version */
    put16(data + 4, 2);
    expect_open(data, size, KPTX_EUNSUPPORTED);
    put16(data + 4, 1);
    expect_open(data, size, 0);
    g_free(data);
}

/* Garbage after a fatbin, or a second fatbin with a broken magic, is not skipped. */
static void test_trailing_data(void)
{
    gsize size;
    guint8 *data = fx_load(fx_path("single"), &size);
    guint8 *two = g_malloc(2 * size + 8);
    memcpy(two, data, size);
    memset(two + size, 0, 8);
    memcpy(two + size + 8, data, size);
    expect_open(two, 2 * size + 8, 0);
    two[size + 8] ^= 1;
    expect_open(two, 2 * size + 8, KPTX_ECORRUPT);
    two[size] = 1;
    expect_open(two, size + 1, KPTX_ECORRUPT);
    g_free(two);
    g_free(data);
}

/* Lying entry header and payload sizes. */
static void test_entry_sizes(void)
{
    gsize size;
    guint8 *data = fx_load(fx_path("multi_zstd"), &size);
    GArray *offs = entry_offsets(data, size);
    for (guint k = 0; k < offs->len; k++) {
        guint8 *e = data + g_array_index(offs, gsize, k);
        guint32 hdr = get32(e + E_HDR_SIZE);
        guint64 payload = get64(e + E_PAYLOAD);
        static const guint32 bad_headers[] = {0, 16, 63, 0xffffffffu};
        for (unsigned i = 0; i < G_N_ELEMENTS(bad_headers); i++) {
            put32(e + E_HDR_SIZE, bad_headers[i]);
            expect_open(data, size, KPTX_ECORRUPT);
        }
        put32(e + E_HDR_SIZE, hdr);
        put64(e + E_PAYLOAD, UINT64_MAX / 2);
        expect_open(data, size, KPTX_ECORRUPT);
        put64(e + E_PAYLOAD, size);
        expect_open(data, size, KPTX_ECORRUPT);
        if (k + 1 == offs->len) {
            put64(e + E_PAYLOAD, payload + 8);
            expect_open(data, size, KPTX_ECORRUPT);
        }
        put64(e + E_PAYLOAD, payload);
    }
    expect_open(data, size, 0);
    g_array_free(offs, TRUE);
    g_free(data);
}

/* Extracts entry k of data after a mutation; asserts the open succeeds and the extract
 * gives want. */
static void expect_extract(const guint8 *data, gsize size, unsigned k, int want)
{
    kfatbin *fb = open_exact(data, size, 0);
    uint8_t *out = NULL;
    size_t n = 0;
    kptx_error err;
    int rc = kfatbin_extract(fb, k, &out, &n, &err);
    if (rc != want)
        g_error("extract %u: got %d (%s), expected %d", k, rc, err.message, want);
    if (rc) {
        g_assert_null(out);
        g_assert_cmpuint(strlen(err.message), >, 0);
    }
    free(out);
    kfatbin_free(fb);
}

/* Lying compressed and uncompressed sizes, contradictory flags. */
static void test_compressed_sizes(void)
{
    static const char *const names[] = {"multi_zstd", "multi_lz4"};
    for (unsigned n = 0; n < G_N_ELEMENTS(names); n++) {
        gsize size;
        guint8 *data = fx_load(fx_path(names[n]), &size);
        GArray *offs = entry_offsets(data, size);
        for (guint k = 0; k < offs->len; k++) {
            guint8 *e = data + g_array_index(offs, gsize, k);
            guint32 csize = get32(e + E_COMPRESSED);
            guint64 usize = get64(e + E_UNCOMPRESSED), flags = get64(e + E_FLAGS);
            put32(e + E_COMPRESSED, 0);
            expect_open(data, size, KPTX_ECORRUPT);
            put32(e + E_COMPRESSED, get64(e + E_PAYLOAD) + 1);
            expect_open(data, size, KPTX_ECORRUPT);
            put32(e + E_COMPRESSED, csize - 1);
            expect_extract(data, size, k, KPTX_ECORRUPT);
            put32(e + E_COMPRESSED, csize / 2);
            expect_extract(data, size, k, KPTX_ECORRUPT);
            put32(e + E_COMPRESSED, csize);
            put64(e + E_UNCOMPRESSED, 0);
            expect_open(data, size, KPTX_ECORRUPT);
            put64(e + E_UNCOMPRESSED, (guint64)1 << 40);
            expect_extract(data, size, k, KPTX_ELIMIT);
            put64(e + E_UNCOMPRESSED, KFATBIN_MAX_PAYLOAD);
            expect_extract(data, size, k, KPTX_ECORRUPT);
            put64(e + E_UNCOMPRESSED, usize + 1);
            expect_extract(data, size, k, KPTX_ECORRUPT);
            put64(e + E_UNCOMPRESSED, usize - 1);
            expect_extract(data, size, k, KPTX_ECORRUPT);
            put64(e + E_UNCOMPRESSED, usize);
            put64(e + E_FLAGS, flags | KFATBIN_FLAG_LZ4 | KFATBIN_FLAG_ZSTD);
            expect_open(data, size, KPTX_ECORRUPT);
            put64(e + E_FLAGS, flags);
            expect_extract(data, size, k, 0);
        }
        g_array_free(offs, TRUE);
        g_free(data);
    }
}

/* Every byte of every compressed stream flipped in turn: the payload either still
 * decompresses to exactly its declared size or gets KPTX_ECORRUPT. The stream's own
 * format markers must be caught. */
static void test_corrupt_streams(void)
{
    static const char *const names[] = {"multi_zstd", "multi_lz4"};
    for (unsigned n = 0; n < G_N_ELEMENTS(names); n++) {
        gsize size;
        guint8 *data = fx_load(fx_path(names[n]), &size);
        GArray *offs = entry_offsets(data, size);
        kfatbin *fb = open_exact(data, size, 0);
        for (guint k = 0; k < offs->len; k++) {
            guint8 *e = data + g_array_index(offs, gsize, k);
            guint8 *stream = e + get32(e + E_HDR_SIZE);
            guint32 csize = get32(e + E_COMPRESSED);
            gsize declared = kfatbin_entry_at(fb, k)->size;
            for (guint32 b = 0; b < csize; b++) {
                stream[b] ^= 0xa5;
                kfatbin *bad = open_exact(data, size, 0);
                uint8_t *out = NULL;
                size_t got = 0;
                int rc = kfatbin_extract(bad, k, &out, &got, NULL);
                g_assert_true(rc == 0 || rc == KPTX_ECORRUPT);
                if (rc == 0 && kfatbin_entry_at(bad, k)->kind == KFATBIN_ELF)
                    g_assert_cmpuint(got, ==, declared);
                free(out);
                kfatbin_free(bad);
                stream[b] ^= 0xa5;
            }
        }
        kfatbin_free(fb);
        g_array_free(offs, TRUE);
        g_free(data);
    }
    /* a ZSTD payload whose frame magic is broken */
    gsize size;
    guint8 *data = fx_load(fx_path("multi_zstd"), &size);
    guint8 *e = data + 16;
    e[get32(e + E_HDR_SIZE)] ^= 0xff;
    expect_extract(data, size, 0, KPTX_ECORRUPT);
    g_free(data);
}

/* Identifier and options descriptors pointing outside the entry header. */
static void test_header_strings(void)
{
    gsize size;
    guint8 *data = fx_load(fx_path("debug"), &size);
    GArray *offs = entry_offsets(data, size);
    for (guint k = 0; k < offs->len; k++) {
        guint8 *e = data + g_array_index(offs, gsize, k);
        guint32 hdr = get32(e + E_HDR_SIZE);
        guint32 name_off = get32(e + E_NAME_OFF), name_len = get32(e + E_NAME_SIZE);
        g_assert_cmpuint(name_len, >, 0);
        put32(e + E_NAME_OFF, hdr);
        expect_open(data, size, KPTX_ECORRUPT);
        put32(e + E_NAME_OFF, 0xfffffffcu);
        expect_open(data, size, KPTX_ECORRUPT);
        put32(e + E_NAME_OFF, name_off);
        put32(e + E_NAME_SIZE, hdr);
        expect_open(data, size, KPTX_ECORRUPT);
        put32(e + E_NAME_SIZE, name_len);
        guint32 desc = get32(e + E_OPTIONS);
        if (desc) {
            put32(e + E_OPTIONS, hdr - 4);
            expect_open(data, size, KPTX_ECORRUPT);
            put32(e + E_OPTIONS, desc);
            guint32 opt_len = get32(e + desc + 4);
            put32(e + desc + 4, 0x7fffffffu);
            expect_open(data, size, KPTX_ECORRUPT);
            put32(e + desc + 4, opt_len);
        }
    }
    expect_open(data, size, 0);
    g_array_free(offs, TRUE);
    g_free(data);
}

/* The section header of the named section in an ELF file, located by the test. */
static guint8 *shdr_of(guint8 *elf, const char *name)
{
    Elf64_Ehdr eh;
    memcpy(&eh, elf, sizeof(eh));
    Elf64_Shdr strtab;
    memcpy(&strtab, elf + eh.e_shoff + eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof(strtab));
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        guint8 *sh = elf + eh.e_shoff + i * sizeof(Elf64_Shdr);
        if (strcmp((char *)elf + strtab.sh_offset + get32(sh), name) == 0)
            return sh;
    }
    g_error("no section %s", name);
}

static void test_elf_headers(void)
{
    gsize size;
    guint8 *elf = fx_load(fx_path("so"), &size);
    Elf64_Ehdr eh;
    memcpy(&eh, elf, sizeof(eh));
    guint8 *shoff = elf + offsetof(Elf64_Ehdr, e_shoff);
    put64(shoff, size);
    expect_open(elf, size, KPTX_ECORRUPT);
    put64(shoff, size - 10);
    expect_open(elf, size, KPTX_ECORRUPT);
    put64(shoff, UINT64_MAX - 8);
    expect_open(elf, size, KPTX_ECORRUPT);
    put64(shoff, 0);
    expect_open(elf, size, KPTX_ENOTFOUND);
    put64(shoff, eh.e_shoff);
    put16(elf + offsetof(Elf64_Ehdr, e_shnum), 0xfff0);
    expect_open(elf, size, KPTX_ECORRUPT);
    put16(elf + offsetof(Elf64_Ehdr, e_shnum), eh.e_shnum);
    put16(elf + offsetof(Elf64_Ehdr, e_shentsize), 10);
    expect_open(elf, size, KPTX_ECORRUPT);
    put16(elf + offsetof(Elf64_Ehdr, e_shentsize), eh.e_shentsize);
    put16(elf + offsetof(Elf64_Ehdr, e_shstrndx), eh.e_shnum);
    expect_open(elf, size, KPTX_ECORRUPT);
    put16(elf + offsetof(Elf64_Ehdr, e_shstrndx), eh.e_shstrndx);
    elf[EI_CLASS] = ELFCLASS32;
    expect_open(elf, size, KPTX_EUNSUPPORTED);
    elf[EI_CLASS] = ELFCLASS64;
    expect_open(elf, size, 0);

    guint8 *strtab = elf + eh.e_shoff + eh.e_shstrndx * sizeof(Elf64_Shdr);
    guint64 str_off = get64(strtab + offsetof(Elf64_Shdr, sh_offset));
    put64(strtab + offsetof(Elf64_Shdr, sh_offset), size);
    expect_open(elf, size, KPTX_ECORRUPT);
    put64(strtab + offsetof(Elf64_Shdr, sh_offset), str_off);

    guint8 *sh = shdr_of(elf, ".nv_fatbin");
    guint64 off = get64(sh + offsetof(Elf64_Shdr, sh_offset));
    guint64 len = get64(sh + offsetof(Elf64_Shdr, sh_size));
    guint32 name = get32(sh + offsetof(Elf64_Shdr, sh_name));
    put64(sh + offsetof(Elf64_Shdr, sh_offset), size);
    expect_open(elf, size, KPTX_ECORRUPT);
    put64(sh + offsetof(Elf64_Shdr, sh_offset), UINT64_MAX - 4);
    expect_open(elf, size, KPTX_ECORRUPT);
    put64(sh + offsetof(Elf64_Shdr, sh_offset), off);
    put64(sh + offsetof(Elf64_Shdr, sh_size), size - off + 1);
    expect_open(elf, size, KPTX_ECORRUPT);
    put64(sh + offsetof(Elf64_Shdr, sh_size), len - 1);
    expect_open(elf, size, KPTX_ECORRUPT);
    put64(sh + offsetof(Elf64_Shdr, sh_size), len);
    put32(sh + offsetof(Elf64_Shdr, sh_name), 0xffffff00u);
    expect_open(elf, size, KPTX_ECORRUPT);
    put32(sh + offsetof(Elf64_Shdr, sh_name), name + 1);    /* "nv_fatbin" */
    expect_open(elf, size, KPTX_ENOTFOUND);
    put32(sh + offsetof(Elf64_Shdr, sh_name), name);
    elf[off] ^= 1;                                          /* the first fatbin's magic */
    expect_open(elf, size, KPTX_ECORRUPT);
    elf[off] ^= 1;
    expect_open(elf, size, 0);
    g_free(elf);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fatbin/malformed/prefixes", test_prefixes);
    g_test_add_func("/fatbin/malformed/elf-prefixes", test_elf_prefixes);
    g_test_add_func("/fatbin/malformed/magic-and-header", test_magic_and_header);
    g_test_add_func("/fatbin/malformed/trailing-data", test_trailing_data);
    g_test_add_func("/fatbin/malformed/entry-sizes", test_entry_sizes);
    g_test_add_func("/fatbin/malformed/compressed-sizes", test_compressed_sizes);
    g_test_add_func("/fatbin/malformed/corrupt-streams", test_corrupt_streams);
    g_test_add_func("/fatbin/malformed/header-strings", test_header_strings);
    g_test_add_func("/fatbin/malformed/elf-headers", test_elf_headers);
    return g_test_run();
}
