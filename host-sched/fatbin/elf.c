/* Sections of a 64-bit little-endian ELF file: finding one by name (executables, shared
 * objects and host objects keep their fatbins in .nv_fatbin) and reading every header (a
 * cubin's symbols and .nv.info sections). Every offset and count read from the
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

int kfb_elf_open(const uint8_t *elf, size_t size, kfb_elf *e, kptx_error *err)
{
    shdr_table t = {0};
    int rc = read_table(elf, size, &t, err);
    if (rc || (rc = section_range(t.base + t.strndx * t.entsize, size, "name table", &e->names,
                                  &e->names_size, err)))
        return rc;
    e->bytes = elf;
    e->size = size;
    e->table = t.base;
    e->entsize = t.entsize;
    e->count = t.count;
    return 0;
}

int kfb_elf_shdr(const kfb_elf *e, uint64_t i, kfb_shdr *out, kptx_error *err)
{
    if (i >= e->count)
        return kfb_fail(err, KPTX_ECORRUPT, "ELF section %llu out of range",
                        (unsigned long long)i);
    const uint8_t *sh = e->table + i * e->entsize;
    uint64_t at = SH32(sh, sh_name);
    const char *names = (const char *)e->bytes + e->names;
    /* The name must end inside the table: a name running off its end is corrupt. */
    if (at >= e->names_size || !memchr(names + at, '\0', e->names_size - at))
        return kfb_fail(err, KPTX_ECORRUPT, "ELF section %llu name offset %llu out of range",
                        (unsigned long long)i, (unsigned long long)at);
    out->name = names + at;
    out->type = SH32(sh, sh_type);
    out->flags = SH64(sh, sh_flags);
    out->link = SH32(sh, sh_link);
    out->info = SH32(sh, sh_info);
    out->entsize = SH64(sh, sh_entsize);
    return section_range(sh, e->size, out->name, &out->offset, &out->size, err);
}

int kfb_elf_section(const uint8_t *elf, size_t size, const char *name, size_t *offset,
                    size_t *section_size, kptx_error *err)
{
    kfb_elf e;
    kfb_shdr sh;
    int rc = kfb_elf_open(elf, size, &e, err);
    if (rc)
        return rc;
    for (uint64_t i = 1; i < e.count; i++) {
        const uint8_t *raw = e.table + i * e.entsize;
        uint64_t at = SH32(raw, sh_name);
        /* Sections that are not asked for are not checked further (as before). */
        if (at >= e.names_size)
            return kfb_fail(err, KPTX_ECORRUPT, "ELF section %llu name offset %llu out of range",
                            (unsigned long long)i, (unsigned long long)at);
        size_t want = strlen(name) + 1;
        if (e.names_size - at < want ||
            memcmp(elf + e.names + at, name, want) != 0)
            continue;
        if ((rc = kfb_elf_shdr(&e, i, &sh, err)))
            return rc;
        *offset = sh.offset;
        *section_size = sh.size;
        return 0;
    }
    return kfb_fail(err, KPTX_ENOTFOUND, "ELF file has no %s section", name);
}
