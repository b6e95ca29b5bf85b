/* Running ptxas from tests, comparing cubins section by section, reading ptxas -v. */
#include "ptxas_util.h"

#include <elf.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

const char *ptxas_arg(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--ptxas") == 0)
            return argv[i + 1];
    return NULL;
}

void ptxas_assert_assembles(const char *ptxas, const char *ptx, size_t len, const char *arch,
                            bool extra_c)
{
    GBytes *cubin = NULL;
    char *log = NULL;
    if (!ptxas_run(ptxas, ptx, len, arch, extra_c, false, &cubin, &log))
        g_error("ptxas: %s\n%s", log, ptx);
    g_bytes_unref(cubin);
    g_free(log);
}

bool ptxas_run(const char *ptxas, const char *ptx, size_t len, const char *arch, bool extra_c,
               bool verbose, GBytes **cubin, char **log)
{
    GError *error = NULL;
    char *dir = g_dir_make_tmp("ptxtest-XXXXXX", &error);
    g_assert_no_error(error);
    char *in = g_build_filename(dir, "in.ptx", NULL);
    char *out = g_build_filename(dir, "out.cubin", NULL);
    g_assert_true(g_file_set_contents(in, ptx, (gssize)len, &error));
    char arch_arg[64];
    snprintf(arch_arg, sizeof arch_arg, "-arch=%s", arch);
    const char *argv[8];
    int n = 0;
    argv[n++] = ptxas;
    argv[n++] = arch_arg;
    if (extra_c)
        argv[n++] = "-c";
    if (verbose)
        argv[n++] = "-v";
    argv[n++] = in;
    argv[n++] = "-o";
    argv[n++] = out;
    argv[n] = NULL;
    char *out_text = NULL, *err_text = NULL;
    int status = 0;
    bool spawned = g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out_text,
                                &err_text, &status, &error);
    g_assert_no_error(error);
    bool ok = spawned && g_spawn_check_wait_status(status, NULL);
    *log = g_strconcat(out_text ? out_text : "", err_text ? err_text : "", NULL);
    g_free(out_text);
    g_free(err_text);
    *cubin = NULL;
    if (ok) {
        char *data;
        gsize size;
        g_assert_true(g_file_get_contents(out, &data, &size, &error));
        *cubin = g_bytes_new_take(data, size);
    }
    g_remove(in);
    g_remove(out);
    g_rmdir(dir);
    g_free(in);
    g_free(out);
    g_free(dir);
    return ok;
}

typedef struct section {
    const char *name;
    const Elf64_Shdr *hdr;
    const unsigned char *data;
} section;

/* The sections of an ELF64 image, checked against its size; NULL if malformed. */
static section *sections_of(GBytes *img, unsigned *n)
{
    gsize size;
    const unsigned char *p = g_bytes_get_data(img, &size);
    if (size < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) != 0)
        return NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > size ||
        (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum || eh->e_shstrndx >= eh->e_shnum)
        return NULL;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh->e_shoff);
    const Elf64_Shdr *strs = &sh[eh->e_shstrndx];
    section *s = g_new0(section, eh->e_shnum ? eh->e_shnum : 1);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        bool has_data = sh[i].sh_type != SHT_NOBITS;
        if ((has_data && (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset)) ||
            sh[i].sh_name >= strs->sh_size || strs->sh_offset + strs->sh_size > size) {
            g_free(s);
            return NULL;
        }
        s[i].name = (const char *)p + strs->sh_offset + sh[i].sh_name;
        s[i].hdr = &sh[i];
        s[i].data = has_data ? p + sh[i].sh_offset : NULL;
    }
    *n = eh->e_shnum;
    return s;
}

/* Sections that describe the PTX text itself: its copy, and maps from SASS to PTX lines
 * and PTX registers (whose encodings depend on the PTX line numbers). */
static bool is_ptx_text_section(const char *name)
{
    static const char *const prefixes[] = {".nv_debug_ptx_txt", ".nv_debug_line_sass",
                                           ".nv_debug_info_reg_sass", ".nv_debug_info_reg_type"};
    if (g_str_has_prefix(name, ".rel."))
        name += 4;
    else if (g_str_has_prefix(name, ".rela."))
        name += 5;
    for (size_t i = 0; i < G_N_ELEMENTS(prefixes); i++)
        if (g_str_has_prefix(name, prefixes[i]))
            return true;
    return false;
}

bool cubin_equal(GBytes *a, GBytes *b, char *why, size_t why_len)
{
    if (g_bytes_equal(a, b))
        return true;
    unsigned na = 0, nb = 0;
    section *sa = sections_of(a, &na), *sb = sections_of(b, &nb);
    bool ok = sa && sb && na == nb;
    bool has_ptx_text = false;
    if (!ok)
        snprintf(why, why_len, "section tables differ (%u vs %u sections)", na, nb);
    for (unsigned i = 0; ok && i < na; i++) {
        const Elf64_Shdr *x = sa[i].hdr, *y = sb[i].hdr;
        if (strcmp(sa[i].name, sb[i].name) != 0 || x->sh_type != y->sh_type ||
            x->sh_flags != y->sh_flags) {
            snprintf(why, why_len, "section %u: %s vs %s", i, sa[i].name, sb[i].name);
            ok = false;
        } else if (is_ptx_text_section(sa[i].name)) {
            has_ptx_text = true;
        } else if (x->sh_size != y->sh_size ||
                   (sa[i].data && memcmp(sa[i].data, sb[i].data, x->sh_size) != 0)) {
            snprintf(why, why_len, "section %s differs", sa[i].name);
            ok = false;
        }
    }
    if (ok && !has_ptx_text) {
        snprintf(why, why_len, "cubins differ outside the sections");
        ok = false;
    }
    g_free(sa);
    g_free(sb);
    return ok;
}

int ptxas_registers(const char *log, const char *name)
{
    char *key = g_strdup_printf("Compiling entry function '%s'", name);
    const char *p = strstr(log, key);
    g_free(key);
    if (!p)
        return -1;
    const char *used = strstr(p, "Used ");
    const char *next = strstr(p + 1, "Compiling entry function");
    if (!used || (next && used > next))
        return -1;
    int regs = -1;
    if (sscanf(used, "Used %d registers", &regs) != 1)
        return -1;
    return regs;
}
