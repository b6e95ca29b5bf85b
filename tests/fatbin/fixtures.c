/* Shared helpers of the fatbin tests (see fixtures.h). */
#include <string.h>

#include "fixtures.h"

static const char *env_of(const char *name, const char *suffix)
{
    char *key = g_strdup_printf("KFB_%s%s", name, suffix);
    const char *v = g_getenv(key);
    if (!v)
        g_error("%s is not set: run this test through meson test", key);
    g_free(key);
    return v;
}

const char *fx_path(const char *name)
{
    return env_of(name, "");
}

const char *fx_spec(const char *name)
{
    return env_of(name, "_SPEC");
}

guint8 *fx_load(const char *path, gsize *size)
{
    gchar *data = NULL;
    GError *error = NULL;
    if (!g_file_get_contents(path, &data, size, &error))
        g_error("cannot read %s: %s", path, error->message);
    return (guint8 *)data;
}

kfatbin *fx_open(const char *name)
{
    kfatbin *fb = NULL;
    kptx_error err;
    int rc = kfatbin_open_file(fx_path(name), &fb, &err);
    if (rc)
        g_error("kfatbin_open_file(%s): %d %s", fx_path(name), rc, err.message);
    g_assert_nonnull(fb);
    return fb;
}

static gint cmp_str(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join_sorted(GPtrArray *words)
{
    g_ptr_array_sort(words, cmp_str);
    g_ptr_array_add(words, NULL);
    char *s = g_strjoinv(" ", (char **)words->pdata);
    g_ptr_array_free(words, TRUE);
    return s;
}

char *fx_image_spec(const kfatbin *fb, unsigned image)
{
    GPtrArray *words = g_ptr_array_new_with_free_func(g_free);
    for (unsigned i = 0; i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        if (e->fatbin_index != image)
            continue;
        const char *suffix = (e->flags & KFATBIN_FLAG_ARCH_SPECIFIC) ? "a"
                           : (e->flags & KFATBIN_FLAG_FAMILY_SPECIFIC) ? "f" : "";
        const char *kind = e->kind == KFATBIN_PTX ? "PTX" : e->kind == KFATBIN_ELF ? "ELF"
                         : e->kind == KFATBIN_LTOIR ? "LTO" : "?";
        g_ptr_array_add(words, g_strdup_printf("%s%u%s", kind, e->arch, suffix));
    }
    return join_sorted(words);
}

char *fx_sorted_spec(const char *spec)
{
    char **parts = g_strsplit(spec, " ", -1);
    GPtrArray *words = g_ptr_array_new_with_free_func(g_free);
    for (char **p = parts; *p; p++)
        if (**p)
            g_ptr_array_add(words, g_strdup(*p));
    g_strfreev(parts);
    return join_sorted(words);
}

unsigned fx_find(const kfatbin *fb, unsigned image, kfatbin_kind kind, unsigned arch)
{
    for (unsigned i = 0; i < kfatbin_count(fb); i++) {
        const kfatbin_entry *e = kfatbin_entry_at(fb, i);
        if (e->fatbin_index == image && e->kind == kind && e->arch == arch)
            return i;
    }
    g_error("no entry of kind %d for arch %u in image %u", kind, arch, image);
}

guint8 *fx_extract(const kfatbin *fb, unsigned i, gsize *size)
{
    uint8_t *data = NULL;
    size_t n = 0;
    kptx_error err;
    int rc = kfatbin_extract(fb, i, &data, &n, &err);
    if (rc)
        g_error("kfatbin_extract(%u): %d %s", i, rc, err.message);
    g_assert_nonnull(data);
    g_assert_cmpint(data[n], ==, 0);
    /* copy into GLib's allocator so callers can g_free */
    guint8 *copy = g_memdup2(data, n + 1);
    free(data);
    *size = n;
    return copy;
}

char *fx_ptx_normalise(const char *text)
{
    GString *out = g_string_new(NULL);
    char **lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) {
        char *cut = strstr(*l, "//");
        if (cut)
            *cut = '\0';
        char **words = g_strsplit_set(g_strstrip(*l), " \t", -1);
        bool first = true;
        for (char **w = words; *w; w++) {
            if (!**w)
                continue;
            g_string_append_printf(out, "%s%s", first ? "" : " ", *w);
            first = false;
        }
        g_strfreev(words);
        g_string_append_c(out, '\n');
    }
    g_strfreev(lines);
    return g_string_free(out, FALSE);
}

char **fx_path_list(const char *name)
{
    return g_strsplit(fx_path(name), ":", -1);
}
