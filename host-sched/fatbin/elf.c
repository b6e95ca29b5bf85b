/* Finding a section by name in a 64-bit little-endian ELF file (executables, shared objects
 * and host objects keep their fatbins in .nv_fatbin). Every offset and count read from the
 * file is checked against the file's size before it is used. */
#include <elf.h>
#include <stddef.h>
#include <string.h>

#include "fatbin_internal.h"

/* Fields of a section header (Elf64_Word: 32 bits, Elf64_Off/Xword: 64 bits). */
#define SH32(p, f) kfb_le32((p) + offsetof(Elf64_Shdr, f))
#define SH64(p, f) kfb_le64((p) + offsetof(Elf64_Shdr, f))

/* A section's file range [offset, offset + size), checked against the file. */
static int section_range(const uint8_t *sh, size_t file_size, const char *what,
                         size_t *offset, size_t *size, kptx_error *err)
{
    uint64_t off = SH64(sh, sh_offset), len = SH64(sh, sh_size);
    if (SH32(sh, sh_type) == SHT_NOBITS)
        len = 0;
    if (off > file_size || len > file_size - off)
        return kfb_fail(err, KPTX_ECORRUPT, "ELF %s section at %llu+%llu lies outside the "
                        "%zu-byte file", what, (unsigned long long)off,
                        (unsigned long long)len, file_size);
    *offset = (size_t)off;
    *size = (size_t)len;
    return 0;
}

/* The section header table: where it is, how many entries of what size, which names them. */
typedef struct shdr_table {
    const uint8_t *base;
    size_t entsize;
    uint64_t count;
    uint64_t strndx;
} shdr_table;

static int read_table(const uint8_t *elf, size_t size, shdr_table *t, kptx_error *err)
{
    if (size < sizeof(Elf64_Ehdr))
        return kfb_fail(err, KPTX_ECORRUPT, "ELF header truncated: %zu bytes", size);
    if (elf[EI_CLASS] != ELFCLASS64 || elf[EI_DATA] != ELFDATA2LSB)
        return kfb_fail(err, KPTX_EUNSUPPORTED, "only 64-bit little-endian ELF files are read");
    uint64_t shoff = kfb_le64(elf + offsetof(Elf64_Ehdr, e_shoff));
    t->entsize = kfb_le16(elf + offsetof(Elf64_Ehdr, e_shentsize));
    t->count = kfb_le16(elf + offsetof(Elf64_Ehdr, e_shnum));
    t->strndx = kfb_le16(elf + offsetof(Elf64_Ehdr, e_shstrndx));
    if (shoff == 0)
        return kfb_fail(err, KPTX_ENOTFOUND, "ELF file without section headers");
    if (t->entsize < sizeof(Elf64_Shdr))
        return kfb_fail(err, KPTX_ECORRUPT, "ELF section header size %zu below %zu",
                        t->entsize, sizeof(Elf64_Shdr));
    if (shoff > size || size - shoff < t->entsize)
        return kfb_fail(err, KPTX_ECORRUPT, "ELF section headers at %llu lie outside the "
                        "%zu-byte file", (unsigned long long)shoff, size);
    t->base = elf + shoff;
    /* Extended numbering: section 0 holds the real count and string table index. */
    if (t->count == 0)
        t->count = SH64(t->base, sh_size);
    if (t->strndx == SHN_XINDEX)
        t->strndx = SH32(t->base, sh_link);
    if (t->count > (size - shoff) / t->entsize)
        return kfb_fail(err, KPTX_ECORRUPT, "%llu ELF section headers do not fit the file",
                        (unsigned long long)t->count);
    if (t->strndx >= t->count)
        return kfb_fail(err, KPTX_ECORRUPT, "ELF section name table index %llu out of range",
                        (unsigned long long)t->strndx);
    return 0;
}

int kfb_elf_section(const uint8_t *elf, size_t size, const char *name, size_t *offset,
                    size_t *section_size, kptx_error *err)
{
    shdr_table t = {0};
    size_t str_off = 0, str_size = 0;
    int rc = read_table(elf, size, &t, err);
    if (rc || (rc = section_range(t.base + t.strndx * t.entsize, size, "name table", &str_off,
                                  &str_size, err)))
        return rc;
    const char *strs = (const char *)elf + str_off;
    size_t want = strlen(name) + 1;
    for (uint64_t i = 1; i < t.count; i++) {
        const uint8_t *sh = t.base + i * t.entsize;
        uint64_t at = SH32(sh, sh_name);
        if (at >= str_size)
            return kfb_fail(err, KPTX_ECORRUPT, "ELF section %llu name offset %llu out of range",
                            (unsigned long long)i, (unsigned long long)at);
        if (str_size - at >= want && memcmp(strs + at, name, want) == 0)
            return section_range(sh, size, name, offset, section_size, err);
    }
    return kfb_fail(err, KPTX_ENOTFOUND, "ELF file has no %s section", name);
}
