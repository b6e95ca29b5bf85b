/* Module-scope variables of PTX text (see ptx_vars.h). */
#include "ptx_vars.h"

#include <string.h>

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
