/* ptx-bench: speed of the PTX library on a large module made from real nvcc output.
 *   ptx-bench [--size BYTES] [--reps N] [--write FILE] FILE.ptx...
 * The input modules are copied, their module-scope names renamed per copy, until the module
 * reaches --size bytes (default 1 MiB). Reported: parse, print and parse+print throughput
 * (MB/s, median of reps) and the time to slice the module (ms, median; each rep slices a
 * freshly parsed copy), each by the wall clock and by the process CPU clock (less
 * sensitive to other jobs on shared cores). --write saves the sliced module. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernelet/ptx.h"
#include "ptx_internal.h"

#define MAX_REPS 101

typedef struct stamp {
    double wall, cpu;
} stamp;

static stamp now(void)
{
    struct timespec w, c;
    clock_gettime(CLOCK_MONOTONIC, &w);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
    return (stamp){(double)w.tv_sec + 1e-9 * (double)w.tv_nsec,
                   (double)c.tv_sec + 1e-9 * (double)c.tv_nsec};
}

/* Seconds between two stamps: [0] wall clock, [1] CPU clock. */
static void elapsed(stamp a, stamp b, double out[2][MAX_REPS], unsigned r)
{
    out[0][r] = b.wall - a.wall;
    out[1][r] = b.cpu - a.cpu;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    kptx_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        kptx_buf_put(&b, chunk, n);
    fclose(f);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$';
}

/* Appends text with every whole-word occurrence of the module-scope names of m renamed to
 * name_cK, and without the module header directives (one header is written first). */
static void append_copy(kptx_buf *out, const kptx_module *m, const char *text, unsigned k)
{
    const char *p = text;
    while (*p) {
        if (*p == '.' && (strncmp(p, ".version", 8) == 0 || strncmp(p, ".target", 7) == 0 ||
                          strncmp(p, ".address_size", 13) == 0)) {
            while (*p && *p != '\n')
                p++;
            continue;
        }
        if (!ident_char(*p) || (p > text && ident_char(p[-1]))) {
            kptx_buf_putc(out, *p++);
            continue;
        }
        size_t len = 0;
        while (ident_char(p[len]))
            len++;
        bool renamed = false;
        for (unsigned i = 0; i < m->n_items && !renamed; i++) {
            const kptx_item *it = &m->items[i];
            const char *name = it->kind == KPTX_ITEM_FUNCTION ? it->u.fn.name
                               : it->kind == KPTX_ITEM_VAR    ? it->u.var.name
                                                              : NULL;
            renamed = name && strlen(name) == len && memcmp(name, p, len) == 0;
        }
        kptx_buf_put(out, p, len);
        if (renamed)
            kptx_buf_printf(out, "_c%u", k);
        p += len;
    }
}

static char *build_module(char **texts, size_t *lens, kptx_module **mods, int n, size_t size,
                          size_t *out_len)
{
    kptx_buf out = {0};
    kptx_buf_puts(&out, ".version 9.0\n.target sm_75\n.address_size 64\n");
    for (unsigned k = 0; out.len < size && !out.oom; k++)
        for (int i = 0; i < n && out.len < size; i++)
            append_copy(&out, mods[i], texts[i], k);
    (void)lens;
    *out_len = out.len;
    return out.oom ? NULL : out.p;
}

static kptx_module *parse_or_die(const char *text, size_t len)
{
    kptx_module *m;
    kptx_error err = {0};
    if (kptx_parse(text, len, &m, &err)) {
        fprintf(stderr, "ptx-bench: %u:%u: %s\n", err.line, err.column, err.message);
        exit(1);
    }
    return m;
}

int main(int argc, char **argv)
{
    size_t size = 1 << 20;
    unsigned reps = 21;
    const char *write_path = NULL;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--size") == 0 && first + 1 < argc)
            size = strtoull(argv[++first], NULL, 0);
        else if (strcmp(argv[first], "--reps") == 0 && first + 1 < argc)
            reps = (unsigned)strtoul(argv[++first], NULL, 0);
        else if (strcmp(argv[first], "--write") == 0 && first + 1 < argc)
            write_path = argv[++first];
        else
            break;
    }
    if (first >= argc || reps < 1 || reps > MAX_REPS || size == 0) {
        fprintf(stderr, "usage: ptx-bench [--size BYTES] [--reps N<=%d] [--write FILE] FILE.ptx...\n",
                MAX_REPS);
        return 2;
    }
    int n = argc - first;
    char **texts = calloc((size_t)n, sizeof *texts);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    kptx_module **mods = calloc((size_t)n, sizeof *mods);
    for (int i = 0; i < n; i++) {
        texts[i] = read_file(argv[first + i], &lens[i]);
        if (!texts[i]) {
            fprintf(stderr, "ptx-bench: cannot read %s\n", argv[first + i]);
            return 1;
        }
        mods[i] = parse_or_die(texts[i], lens[i]);
    }
    size_t len;
    char *big = build_module(texts, lens, mods, n, size, &len);
    if (!big)
        return 1;

    static double t_parse[2][MAX_REPS], t_print[2][MAX_REPS], t_both[2][MAX_REPS],
        t_slice[2][MAX_REPS];
    unsigned entries = 0, sliced = 0;
    size_t out_len = 0;
    for (unsigned r = 0; r < reps; r++) {
        stamp t0 = now();
        kptx_module *m = parse_or_die(big, len);
        stamp t1 = now();
        char *text;
        if (kptx_print(m, &text, &out_len, NULL))
            return 1;
        stamp t2 = now();
        elapsed(t0, t1, t_parse, r);
        elapsed(t1, t2, t_print, r);
        elapsed(t0, t2, t_both, r);
        free(text);
        stamp t3 = now();
        if (kptx_slice_module(m, &sliced, NULL))
            return 1;
        elapsed(t3, now(), t_slice, r);
        entries = 0;
        for (unsigned i = 0; i < m->n_items; i++)
            entries += m->items[i].kind == KPTX_ITEM_FUNCTION && m->items[i].u.fn.is_entry;
        if (write_path && r == 0) {
            FILE *f = fopen(write_path, "w");
            char *s;
            size_t sl;
            if (!f || kptx_print(m, &s, &sl, NULL) || fwrite(s, 1, sl, f) != sl) {
                fprintf(stderr, "ptx-bench: cannot write %s\n", write_path);
                return 1;
            }
            free(s);
            fclose(f);
        }
        kptx_module_free(m);
    }
    double mb = (double)len / 1e6;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += big[i] == '\n';
    printf("module: %zu bytes (%.2f MB), %zu lines, %u entries after slicing (%u sliced), "
           "printed %zu bytes\n", len, mb, lines, entries, sliced, out_len);
    printf("medians of %u runs      wall clock             CPU clock\n", reps);
    const char *names[3] = {"parse", "print", "parse+print"};
    double (*rates[3])[MAX_REPS] = {t_parse, t_print, t_both};
    for (int i = 0; i < 3; i++) {
        double w = median(rates[i][0], reps), c = median(rates[i][1], reps);
        printf("%-12s %8.1f MB/s %7.2f ms %8.1f MB/s %7.2f ms\n", names[i], mb / w, 1e3 * w,
               mb / c, 1e3 * c);
    }
    printf("%-12s %24.2f ms %16.2f ms\n", "slice", 1e3 * median(t_slice[0], reps),
           1e3 * median(t_slice[1], reps));
    for (int i = 0; i < n; i++) {
        free(texts[i]);
        kptx_module_free(mods[i]);
    }
    free(texts);
    free(lens);
    free(mods);
    free(big);
    return 0;
}
