/* kernelet-ptx: inspect and slice PTX.
 *   kernelet-ptx info FILE [--index I]          kernels, parameters, special registers, sliceability
 *   kernelet-ptx slice FILE -o OUT [--index I]  writes the module with its sliced variants
 *   kernelet-ptx print FILE [-o OUT] [--index I] parses and prints back (normalised PTX)
 * With --fence, slice and print fence every kernel that can be fenced first (as the daemon
 * does by default); info always says whether each kernel can be fenced.
 * FILE is PTX text, or (when built with the fatbin reader) a fatbin or an executable whose
 * PTX entries are used; --index picks one PTX entry when there are several. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"
#ifdef KERNELET_HAVE_FATBIN
#include "kernelet/fatbin.h"
#endif

typedef struct options {
    const char *cmd, *file, *out;
    long index;         /* -1: not given */
    bool fence;         /* --fence */
    unsigned long stack; /* --stack-bytes: the fence's stack guard for this stack size */
    unsigned long local_top; /* --local-top: the fence's clamp of local addresses below it */
} options;

static int usage(void)
{
    fprintf(stderr, "usage: kernelet-ptx info FILE [--index I]\n"
                    "       kernelet-ptx slice FILE -o OUT [--index I] [--fence [--stack-bytes N]\n"
                    "                                                     [--local-top N]]\n"
                    "       kernelet-ptx print FILE [-o OUT] [--index I] [--fence [--stack-bytes N]\n"
                    "                                                     [--local-top N]]\n");
    return 2;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->index = -1;
    if (argc < 3)
        return -1;
    o->cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--fence") == 0) {
            o->fence = true;
        } else if (strcmp(argv[i], "--stack-bytes") == 0 && i + 1 < argc) {
            char *end;
            o->stack = strtoul(argv[++i], &end, 10);
            if (*end || argv[i][0] == '-')
                return -1;
        } else if (strcmp(argv[i], "--local-top") == 0 && i + 1 < argc) {
            char *end;
            o->local_top = strtoul(argv[++i], &end, 0);
            if (*end || argv[i][0] == '-')
                return -1;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            o->out = argv[++i];
        } else if (strcmp(argv[i], "--index") == 0 && i + 1 < argc) {
            char *end;
            o->index = strtol(argv[++i], &end, 10);
            if (*end || o->index < 0)
                return -1;
        } else if (!o->file && argv[i][0] != '-') {
            o->file = argv[i];
        } else {
            return -1;
        }
    }
    if (!o->file || (strcmp(o->cmd, "slice") == 0 && !o->out))
        return -1;
    if (strcmp(o->cmd, "info") != 0 && strcmp(o->cmd, "slice") != 0 && strcmp(o->cmd, "print") != 0)
        return -1;
    return 0;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static const char *sreg_names(uint32_t s, char *buf, size_t len)
{
    static const char *const names[] = {"tid", "ntid", "ctaid", "nctaid", "laneid", "warpid",
                                        "smid", "gridid", "cluster", "clock", "envreg",
                                        "lanemask", "smem", "other"};
    buf[0] = '\0';
    size_t used = 0;
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (s & (1u << i))
            used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s",
                                     used ? " " : "", names[i]);
    if (!buf[0])
        snprintf(buf, len, "none");
    return buf;
}

static int print_info(const kptx_module *m)
{
    int bad = 0;
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_item *it = &m->items[i];
        if (it->kind != KPTX_ITEM_FUNCTION || !it->u.fn.is_entry || !it->u.fn.has_body)
            continue;
        kptx_kernel_info info;
        kptx_error err = {0};
        if (kptx_kernel_info_get(m, it->u.fn.name, &info, &err)) {
            fprintf(stderr, "%s: %s\n", it->u.fn.name, err.message);
            bad = 1;
            continue;
        }
        char sregs[160];
        printf("kernel %s\n  parameters: %u, %u bytes\n", info.name, info.n_params,
               info.param_bytes);
        for (unsigned p = 0; p < info.n_params; p++)
            printf("    %-40s offset %5u  size %5u  align %3u\n", info.params[p].name,
                   info.params[p].offset, info.params[p].size, info.params[p].align);
        if (info.reqntid[0])
            printf("  reqntid: %u %u %u\n", info.reqntid[0], info.reqntid[1], info.reqntid[2]);
        if (info.maxntid[0])
            printf("  maxntid: %u %u %u\n", info.maxntid[0], info.maxntid[1], info.maxntid[2]);
        printf("  special registers: %s\n", sreg_names(info.sregs, sregs, sizeof sregs));
        if (info.sliceable)
            printf("  sliceable: yes\n");
        else
            printf("  sliceable: no: %s\n", info.why_not);
        char why[192];
        if (!kptx_fence_verdict(m, it->u.fn.name, 0, why, sizeof why, &err))
            printf("  fenceable: %s%s\n", why[0] ? "no: " : "yes", why);
        kptx_kernel_info_clear(&info);
    }
    return bad;
}

static int write_text(const char *path, const char *text, size_t len)
{
    FILE *f = path ? fopen(path, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "kernelet-ptx: %s: %s\n", path, strerror(errno));
        return 1;
    }
    bool ok = fwrite(text, 1, len, f) == len;
    if (path)
        ok &= fclose(f) == 0;
    else
        ok &= fflush(f) == 0;
    if (!ok)
        fprintf(stderr, "kernelet-ptx: cannot write %s\n", path ? path : "output");
    return ok ? 0 : 1;
}

/* One PTX module: info, slice or print. */
static int run_ptx(const options *o, const char *text, size_t len, const char *what)
{
    kptx_module *m;
    kptx_error err = {0};
    if (kptx_parse(text, len, &m, &err)) {
        fprintf(stderr, "%s:%u:%u: %s\n", what, err.line, err.column, err.message);
        return 1;
    }
    int rc = 0;
    if (strcmp(o->cmd, "info") == 0) {
        rc = print_info(m);
    } else {
        unsigned n = 0, fenced = 0;
        const kptx_fence_opts fo = {.stack_bytes = o->stack, .local_top = o->local_top};
        if (o->fence && kptx_fence_module_opts(m, &fo, &fenced, &err)) {
            fprintf(stderr, "%s: %s\n", what, err.message);
            rc = 1;
        }
        if (o->fence && !rc)
            fprintf(stderr, "%s: %u kernel%s fenced\n", what, fenced, fenced == 1 ? "" : "s");
        if (!rc && strcmp(o->cmd, "slice") == 0 && kptx_slice_module(m, &n, &err)) {
            fprintf(stderr, "%s: %s\n", what, err.message);
            rc = 1;
        }
        char *out;
        size_t out_len;
        if (!rc && kptx_print(m, &out, &out_len, &err)) {
            fprintf(stderr, "%s: %s\n", what, err.message);
            rc = 1;
        }
        if (!rc) {
            rc = write_text(o->out, out, out_len);
            free(out);
        }
        if (!rc && strcmp(o->cmd, "slice") == 0)
            fprintf(stderr, "%s: %u sliced kernel%s added\n", what, n, n == 1 ? "" : "s");
    }
    kptx_module_free(m);
    return rc;
}

static bool is_binary(const char *data, size_t len)
{
    static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
    static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba};
    return len >= 4 && (memcmp(data, elf, 4) == 0 || memcmp(data, fatbin, 4) == 0);
}

#ifdef KERNELET_HAVE_FATBIN
/* The PTX entries of a fatbin or executable; with several, --index picks one (info shows
 * all of them). */
static int run_fatbin(const options *o, const char *data, size_t len)
{
    kfatbin *fb;
    kptx_error err = {0};
    if (kfatbin_open(data, len, &fb, &err)) {
        fprintf(stderr, "%s: %s\n", o->file, err.message);
        return 1;
    }
    unsigned n_ptx = 0;
    for (unsigned i = 0; i < kfatbin_count(fb); i++)
        n_ptx += kfatbin_entry_at(fb, i)->kind == KFATBIN_PTX;
    int rc = 0;
    if (n_ptx == 0) {
        fprintf(stderr, "%s: no PTX in this file\n", o->file);
        rc = 1;
    } else if (n_ptx > 1 && o->index < 0 && strcmp(o->cmd, "info") != 0) {
        fprintf(stderr, "%s: %u PTX entries; choose one with --index (see info)\n", o->file, n_ptx);
        rc = 1;
    }
    for (unsigned i = 0; !rc && i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        if (e->kind != KFATBIN_PTX || (o->index >= 0 && (long)i != o->index))
            continue;
        uint8_t *ptx;
        size_t size;
        if (kfatbin_extract(fb, i, &ptx, &size, &err)) {
            fprintf(stderr, "%s: entry %u: %s\n", o->file, i, err.message);
            rc = 1;
            break;
        }
        char what[64];
        snprintf(what, sizeof what, "entry %u (fatbin %u, compute_%u)", i, e->fatbin_index, e->arch);
        if (strcmp(o->cmd, "info") == 0)
            printf("== %s\n", what);
        rc = run_ptx(o, (const char *)ptx, size, what);
        free(ptx);
    }
    kfatbin_free(fb);
    return rc;
}
#endif

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o))
        return usage();
    size_t len;
    char *data = read_all(o.file, &len);
    if (!data) {
        fprintf(stderr, "kernelet-ptx: cannot read %s: %s\n", o.file, strerror(errno));
        return 1;
    }
    int rc;
    if (is_binary(data, len)) {
#ifdef KERNELET_HAVE_FATBIN
        rc = run_fatbin(&o, data, len);
#else
        fprintf(stderr, "%s: fatbins and executables need the fatbin reader, not built in\n",
                o.file);
        rc = 1;
#endif
    } else {
        rc = run_ptx(&o, data, len, o.file);
    }
    free(data);
    return rc;
}
