/* libFuzzer target: any input is parsed; what parses is printed, parsed again and
 * printed again (both prints must agree), its kernels are inspected and the module is
 * given printf records, fenced, sliced and printed and parsed once more. Nothing may
 * crash or leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/ptx.h"

static char *print_or_die(const kptx_module *m, size_t *len)
{
    char *text;
    if (kptx_print(m, &text, len, NULL) != 0)
        abort();
    return text;
}

static kptx_module *reparse_or_die(const char *text, size_t len)
{
    kptx_module *m;
    kptx_error err;
    if (kptx_parse(text, len, &m, &err) != 0) {
        fprintf(stderr, "printed text does not parse: %u:%u: %s\n", err.line, err.column,
                err.message);
        abort();
    }
    return m;
}

/* What the cuda backend does before the JIT: the variables' block (initial bytes
 * written into a buffer of the planned size), the rewrite; the result must parse again. */
static void relocate(kptx_module *m)
{
    kptx_reloc_plan p;
    if (kptx_reloc_plan_make(m, &p, NULL) != 0)
        return;
    void *img = p.bytes ? malloc(p.bytes) : NULL;
    if (img || !p.bytes)
        (void)kptx_reloc_image(&p, img, p.bytes, NULL);
    free(img);
    if (p.n && kptx_reloc_apply(m, &p, 0x7f0000000000ull, NULL) == 0) {
        size_t len;
        char *t = print_or_die(m, &len);
        kptx_module_free(reparse_or_die(t, len));
        free(t);
    }
    kptx_reloc_plan_clear(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kptx_module *m;
    if (kptx_parse((const char *)data, size, &m, NULL) != 0)
        return 0;
    size_t len1, len2;
    char *t1 = print_or_die(m, &len1);
    kptx_module *m2 = reparse_or_die(t1, len1);
    char *t2 = print_or_die(m2, &len2);
    if (len1 != len2 || memcmp(t1, t2, len1) != 0)
        abort();
    for (unsigned i = 0; i < m->n_items; i++) {
        if (m->items[i].kind != KPTX_ITEM_FUNCTION || !m->items[i].u.fn.is_entry)
            continue;
        kptx_kernel_info info;
        if (kptx_kernel_info_get(m, m->items[i].u.fn.name, &info, NULL) == 0)
            kptx_kernel_info_clear(&info);
    }
    /* what the daemon does: printf records, fence, then slice; the result must parse
     * again (the printf pass refuses nothing here that it did not refuse before) */
    (void)kptx_printf_module(m2, KPTX_PRINTF_ENTRIES_ONLY, NULL, NULL);
    const kptx_fence_opts cuda = {.flags = KPTX_FENCE_VARS_OUTSIDE | KPTX_FENCE_VARS_RELOCATED,
                                  .stack_bytes = 4096};   /* the cuda backend's default */
    (void)kptx_fence_module_opts(m2, &cuda, NULL, NULL);
    relocate(m2);
    (void)kptx_printf_module(m, 0, NULL, NULL);
    (void)kptx_fence_module(m, 0, NULL, NULL);
    if (kptx_slice_module(m, NULL, NULL) == 0) {
        size_t len3;
        char *t3 = print_or_die(m, &len3);
        kptx_module *m3 = reparse_or_die(t3, len3);
        kptx_module_free(m3);
        free(t3);
    }
    free(t1);
    free(t2);
    kptx_module_free(m);
    kptx_module_free(m2);
    return 0;
}
