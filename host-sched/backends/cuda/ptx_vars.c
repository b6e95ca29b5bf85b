/* Module-scope variables of PTX text and of cubins (see ptx_vars.h). */
#include "ptx_vars.h"

#include <string.h>

#include "kernelet/cubin.h"
#include "kernelet/ptx.h"

static int defines_memory(const kptx_var *v)
{
    if (v->space != KPTX_SPACE_GLOBAL && v->space != KPTX_SPACE_CONST)
        return 0;
    return !v->linkage || strcmp(v->linkage, ".extern");
}

int kcuda_ptx_defines_variables(const char *text, size_t len)
{
    kptx_module *m;
    kptx_error e;
    if (!text || kptx_parse(text, len, &m, &e))
        return 1;
    int found = 0;
    for (unsigned i = 0; i < m->n_items && !found; i++)
        found = m->items[i].kind == KPTX_ITEM_VAR && defines_memory(&m->items[i].u.var);
    kptx_module_free(m);
    return found;
}

int kcuda_cubin_defines_variables(const void *image, size_t len)
{
    kcubin *cb;
    if (!image || kcubin_open(image, len, &cb, NULL))
        return 1;
    int found = cb->n_globals > 0;
    kcubin_free(cb);
    return found;
}
