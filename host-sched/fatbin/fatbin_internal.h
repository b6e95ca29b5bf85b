/* Internal declarations shared by the files of the fatbin reader. */
#ifndef KFATBIN_INTERNAL_H
#define KFATBIN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/cubin.h"
#include "kernelet/fatbin.h"

/* An entry as the view keeps it: the public part and where its payload lies. */
typedef struct kfb_entry {
    kfatbin_entry pub;
    size_t payload;             /* offset of the stored payload in kfatbin.bytes */
    char *strings;              /* malloc'd name and options (pub points into it), or NULL */
} kfb_entry;

/* One fatbin image inside kfatbin.bytes. */
typedef struct kfb_image {
    size_t offset;
    size_t size;
} kfb_image;

struct kfatbin {
    uint8_t *bytes;             /* the copied fatbin images */
    size_t n_bytes;
    kfb_image *images;
    unsigned n_images, cap_images;
    kfb_entry *entries;
    unsigned n_entries, cap_entries;
};

/* Little-endian loads from byte buffers (no alignment needed). */
static inline uint16_t kfb_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t kfb_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t kfb_le64(const uint8_t *p)
{
    return (uint64_t)kfb_le32(p) | (uint64_t)kfb_le32(p + 4) << 32;
}

/* Fills err (when not NULL) with code and a formatted message; returns code. */
int kfb_fail(kptx_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err to success; returns 0. */
int kfb_ok(kptx_error *err);

/* An empty view (NULL when out of memory). */
kfatbin *kfb_view_new(void);

/* Parses the fatbins lying back to back in fb->bytes[start, end) and appends their images
 * and entries; relocatable marks every entry found. */
int kfb_parse_images(kfatbin *fb, size_t start, size_t end, bool relocatable,
                     kptx_error *err);

/* Finds the section called name in a 64-bit little-endian ELF file of size bytes: its
 * offset and size in the file. KPTX_ENOTFOUND when there is none, KPTX_ECORRUPT when the
 * headers point outside the file. */
int kfb_elf_section(const uint8_t *elf, size_t size, const char *name, size_t *offset,
                    size_t *section_size, kptx_error *err);

/* ---- cubins (elf.c, nvinfo.c, cubin.c) ---- */

/* A section header as read, its range checked against the file. */
typedef struct kfb_shdr {
    const char *name;           /* NUL-terminated inside the file's name table */
    uint32_t type;
    uint64_t flags;
    size_t offset, size;        /* size 0 for SHT_NOBITS */
    uint32_t link, info;
    uint64_t entsize;
} kfb_shdr;

/* An ELF file's section header table, checked (header, table and name table in bounds). */
typedef struct kfb_elf {
    const uint8_t *bytes;
    size_t size;
    const uint8_t *table;
    size_t entsize;
    uint64_t count;
    size_t names, names_size;   /* the section name table's range */
} kfb_elf;

/* Reads and checks the section header table of a 64-bit little-endian ELF file. */
int kfb_elf_open(const uint8_t *elf, size_t size, kfb_elf *e, kptx_error *err);

/* Section i (< e->count), bounds-checked. */
int kfb_elf_shdr(const kfb_elf *e, uint64_t i, kfb_shdr *out, kptx_error *err);

/* .nv.info record formats and the attributes read (docs/FATBIN.md). */
enum {
    KFB_EIFMT_NVAL = 1,
    KFB_EIFMT_BVAL = 2,
    KFB_EIFMT_HVAL = 3,
    KFB_EIFMT_SVAL = 4,
    KFB_EIATTR_MAX_THREADS = 0x05,
    KFB_EIATTR_PARAM_CBANK = 0x0a,
    KFB_EIATTR_KPARAM_INFO = 0x17,
    KFB_EIATTR_CBANK_PARAM_SIZE = 0x19,
    KFB_EIATTR_REGCOUNT = 0x2f,
};

/* One .nv.info record: formats 1-3 carry value, format 4 carries size bytes at data. */
typedef struct kfb_nvattr {
    unsigned format, attr;
    uint32_t value;
    const uint8_t *data;
    size_t size;
} kfb_nvattr;

/* The record at *pos of the n bytes at p, advancing *pos: 1, 0 at the end, or an error. */
int kfb_nvinfo_next(const uint8_t *p, size_t n, size_t *pos, kfb_nvattr *a, kptx_error *err);

#endif
