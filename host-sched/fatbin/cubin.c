/* Reading a cubin (kernelet/cubin.h): its architecture from the ELF header, kernels and
 * variables from the symbol table, each kernel's parameters from its .nv.info.<kernel>
 * section (nvinfo.c) and its register count from the module's .nv.info. */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "fatbin_internal.h"

#define EM_CUDA_MACHINE 190
#define STO_CUDA_ENTRY 0x10         /* st_other of a kernel's symbol (not a device function) */
#define SYM_SIZE 24                 /* Elf64_Sym */
/* From this ELF ABI version (CUDA 12.8 on) the SM is e_flags bits 8-15; before, bits 0-7. */
#define ABI_ARCH_IN_BYTE1 8

bool kcubin_is_cubin(const void *data, size_t size)
{
    const uint8_t *p = data;
    return p && size >= sizeof(Elf64_Ehdr) && memcmp(p, ELFMAG, SELFMAG) == 0 &&
           p[EI_CLASS] == ELFCLASS64 && p[EI_DATA] == ELFDATA2LSB &&
           kfb_le16(p + offsetof(Elf64_Ehdr, e_machine)) == EM_CUDA_MACHINE;
}

bool kcubin_runs_on(unsigned arch, unsigned target)
{
    return arch && arch / 10 == target / 10 && arch <= target;
}

static unsigned header_arch(const uint8_t *p)
{
    uint32_t flags = kfb_le32(p + offsetof(Elf64_Ehdr, e_flags));
    return p[EI_ABIVERSION] >= ABI_ARCH_IN_BYTE1 ? (flags >> 8) & 0xff : flags & 0xff;
}

void kcubin_free(kcubin *cb)
{
    if (!cb)
        return;
    for (unsigned i = 0; i < cb->n_kernels; i++) {
        free(cb->kernels[i].name);
        free(cb->kernels[i].params);
    }
    for (unsigned i = 0; i < cb->n_globals; i++)
        free(cb->globals[i].name);
    free(cb->kernels);
    free(cb->globals);
    free(cb);
}

const kcubin_kernel *kcubin_find_kernel(const kcubin *cb, const char *name)
{
    for (unsigned i = 0; cb && name && i < cb->n_kernels; i++)
        if (!strcmp(cb->kernels[i].name, name))
            return &cb->kernels[i];
    return NULL;
}

/* ---- the symbol table --------------------------------------------------------------------- */

typedef struct symtab {
    const uint8_t *syms;
    uint64_t count, entsize;        /* symbols are read at i * entsize (>= 24) */
    const char *names;
    size_t names_size;
} symtab;

static int find_symtab(const kfb_elf *e, symtab *st, kptx_error *err)
{
    kfb_shdr sh, str;
    int rc;
    for (uint64_t i = 1; i < e->count; i++) {
        if ((rc = kfb_elf_shdr(e, i, &sh, err)))
            return rc;
        if (sh.type != SHT_SYMTAB)
            continue;
        if ((rc = kfb_elf_shdr(e, sh.link, &str, err)))
            return rc;
        if (sh.entsize < SYM_SIZE || str.type != SHT_STRTAB)
            return kfb_fail(err, KPTX_ECORRUPT, "symbol table entries of %llu bytes, names "
                            "in a section of type %u", (unsigned long long)sh.entsize, str.type);
        *st = (symtab){e->bytes + sh.offset, sh.size / sh.entsize, sh.entsize,
                       (const char *)e->bytes + str.offset, str.size};
        return 0;
    }
    return kfb_fail(err, KPTX_ECORRUPT, "cubin without a symbol table");
}

/* Symbol i's fields, its name checked to end inside the name table. */
static int symbol(const symtab *st, uint64_t i, const char **name, Elf64_Sym *s,
                  kptx_error *err)
{
    const uint8_t *p = st->syms + i * st->entsize;
    s->st_name = kfb_le32(p);
    s->st_info = p[4];
    s->st_other = p[5];
    s->st_shndx = kfb_le16(p + 6);
    s->st_value = kfb_le64(p + 8);
    s->st_size = kfb_le64(p + 16);
    if (s->st_name >= st->names_size ||
        !memchr(st->names + s->st_name, '\0', st->names_size - s->st_name))
        return kfb_fail(err, KPTX_ECORRUPT, "symbol %llu name offset %u out of range",
                        (unsigned long long)i, s->st_name);
    *name = st->names + s->st_name;
    return 0;
}

/* ---- what the symbols name ---------------------------------------------------------------- */

typedef struct reader {
    const kfb_elf *e;
    symtab st;
    uint32_t *kernel_of_sym;    /* symbol index -> kernel index + 1 (0: not a kernel) */
    uint64_t *info_of_text;     /* text section index -> its .nv.info.<k> section, 0: none */
    kcubin *cb;
    unsigned cap_kernels, cap_globals;
} reader;

/* Room for one more element in *arr (n used of *cap), doubling: the arrays grow with what
 * the cubin holds, not with its symbol count (a hostile one may list millions). */
static int grow(void **arr, unsigned n, unsigned *cap, size_t elem, kptx_error *err)
{
    if (n < *cap)
        return 0;
    unsigned want = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, (size_t)want * elem);
    if (!p)
        return kfb_fail(err, KPTX_ENOMEM, "out of memory");
    *arr = p;
    *cap = want;
    return 0;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int add_kernel(reader *r, uint64_t sym, const char *name, kptx_error *err)
{
    kcubin *cb = r->cb;
    if (cb->n_kernels >= KCUBIN_MAX_KERNELS)
        return kfb_fail(err, KPTX_ELIMIT, "more than %u kernels", KCUBIN_MAX_KERNELS);
    int rc = grow((void **)&cb->kernels, cb->n_kernels, &r->cap_kernels, sizeof(*cb->kernels),
                  err);
    if (rc)
        return rc;
    kcubin_kernel *k = &cb->kernels[cb->n_kernels];
    *k = (kcubin_kernel){.name = strdup(name)};
    if (!k->name)
        return kfb_fail(err, KPTX_ENOMEM, "out of memory");
    cb->n_kernels++;
    r->kernel_of_sym[sym] = cb->n_kernels;
    return 0;
}

static int add_global(reader *r, const char *name, uint64_t size, kptx_error *err)
{
    if (r->cb->n_globals >= KCUBIN_MAX_KERNELS)
        return kfb_fail(err, KPTX_ELIMIT, "more than %u variables", KCUBIN_MAX_KERNELS);
    int rc = grow((void **)&r->cb->globals, r->cb->n_globals, &r->cap_globals,
                  sizeof(*r->cb->globals), err);
    if (rc)
        return rc;
    kcubin_global *g = &r->cb->globals[r->cb->n_globals];
    if (!(g->name = strdup(name)))
        return kfb_fail(err, KPTX_ENOMEM, "out of memory");
    g->size = size;
    r->cb->n_globals++;
    return 0;
}

/* A variable: an object in a global or constant bank section (not parameters, bank 0). */
static int is_variable(const reader *r, const Elf64_Sym *s, const char *name, kptx_error *err,
                       bool *yes)
{
    kfb_shdr sh;
    *yes = false;
    if (ELF64_ST_TYPE(s->st_info) != STT_OBJECT || !*name || *name == '.' ||
        s->st_shndx == SHN_UNDEF || s->st_shndx >= r->e->count)
        return 0;
    int rc = kfb_elf_shdr(r->e, s->st_shndx, &sh, err);
    if (!rc)
        *yes = starts_with(sh.name, ".nv.global") ||
               (starts_with(sh.name, ".nv.constant") && !starts_with(sh.name, ".nv.constant0"));
    return rc;
}

static int read_symbols(reader *r, kptx_error *err)
{
    for (uint64_t i = 1; i < r->st.count; i++) {
        const char *name = "";
        Elf64_Sym s = {0};
        bool var;
        int rc = symbol(&r->st, i, &name, &s, err);
        if (!rc && ELF64_ST_TYPE(s.st_info) == STT_FUNC && (s.st_other & STO_CUDA_ENTRY) && *name)
            rc = add_kernel(r, i, name, err);
        else if (!rc && !(rc = is_variable(r, &s, name, err, &var)) && var)
            rc = add_global(r, name, s.st_size, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- .nv.info sections ---------------------------------------------------------------------- */

/* The module's .nv.info: register counts by symbol (u32 symbol, u32 registers). */
static int module_info(reader *r, const kfb_shdr *sh, kptx_error *err)
{
    const uint8_t *p = r->e->bytes + sh->offset;
    size_t pos = 0;
    kfb_nvattr a;
    int rc;
    while ((rc = kfb_nvinfo_next(p, sh->size, &pos, &a, err)) == 1) {
        if (a.attr != KFB_EIATTR_REGCOUNT || a.format != KFB_EIFMT_SVAL || a.size < 8)
            continue;
        uint32_t sym = kfb_le32(a.data);
        if (sym < r->st.count && r->kernel_of_sym[sym])
            r->cb->kernels[r->kernel_of_sym[sym] - 1].regs = kfb_le32(a.data + 4);
    }
    return rc;
}

/* Finds the module's .nv.info and each kernel's (its sh_info names the kernel's code). */
static int index_info(reader *r, kptx_error *err)
{
    kfb_shdr sh;
    for (uint64_t i = 1; i < r->e->count; i++) {
        int rc = kfb_elf_shdr(r->e, i, &sh, err);
        if (rc)
            return rc;
        if (!strcmp(sh.name, ".nv.info") && (rc = module_info(r, &sh, err)))
            return rc;
        if (starts_with(sh.name, ".nv.info.") && sh.info < r->e->count)
            r->info_of_text[sh.info] = i;
    }
    return 0;
}

static int kernel_info(reader *r, kptx_error *err)
{
    for (uint64_t i = 1; i < r->st.count; i++) {
        if (!r->kernel_of_sym[i])
            continue;
        kcubin_kernel *k = &r->cb->kernels[r->kernel_of_sym[i] - 1];
        uint16_t shndx = kfb_le16(r->st.syms + i * r->st.entsize + 6);
        kfb_shdr sh = {0};
        uint64_t at = shndx < r->e->count ? r->info_of_text[shndx] : 0;
        int rc = at ? kfb_elf_shdr(r->e, at, &sh, err) : 0;
        /* No .nv.info.<k>: a kernel without parameters. */
        kptx_error why = {0};
        if (!rc)
            rc = kcubin_decode_kernel_info(r->e->bytes + sh.offset, sh.size, k, &why);
        if (rc)
            return kfb_fail(err, rc, "kernel %.100s: %.140s", k->name,
                            why.code ? why.message : "bad section header");
    }
    return 0;
}

/* ---- opening ------------------------------------------------------------------------------- */

static int open_parts(const kfb_elf *e, kcubin *cb, kptx_error *err)
{
    reader r = {.e = e, .cb = cb};
    int rc = find_symtab(e, &r.st, err);
    size_t n = r.st.count ? (size_t)r.st.count : 1;
    if (!rc) {
        r.kernel_of_sym = calloc(n, sizeof(*r.kernel_of_sym));
        r.info_of_text = calloc((size_t)e->count, sizeof(*r.info_of_text));
        if (!r.kernel_of_sym || !r.info_of_text)
            rc = kfb_fail(err, KPTX_ENOMEM, "out of memory");
    }
    if (!rc)
        rc = read_symbols(&r, err);
    if (!rc)
        rc = index_info(&r, err);
    if (!rc)
        rc = kernel_info(&r, err);
    free(r.kernel_of_sym);
    free(r.info_of_text);
    return rc;
}

int kcubin_open(const void *data, size_t size, kcubin **out, kptx_error *err)
{
    if (!data || !out)
        return kfb_fail(err, KPTX_EINVAL, "kcubin_open: NULL argument");
    if (!kcubin_is_cubin(data, size))
        return kfb_fail(err, KPTX_ECORRUPT, "not a cubin (64-bit little-endian ELF for CUDA)");
    kfb_elf e;
    int rc = kfb_elf_open(data, size, &e, err);
    kcubin *cb = rc ? NULL : calloc(1, sizeof(*cb));
    if (!rc && !cb)
        rc = kfb_fail(err, KPTX_ENOMEM, "out of memory");
    if (!rc) {
        cb->arch = header_arch(data);
        cb->relocatable = kfb_le16((const uint8_t *)data + offsetof(Elf64_Ehdr, e_type)) == ET_REL;
        rc = open_parts(&e, cb, err);
    }
    if (rc) {
        kcubin_free(cb);
        return rc;
    }
    *out = cb;
    return kfb_ok(err);
}
