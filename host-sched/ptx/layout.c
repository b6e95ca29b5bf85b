/* Sizes and alignments of declared variables, and the parameter block layout of entries
 * (PTX ABI: each parameter at the next multiple of its alignment, in declaration order). */
#include <string.h>

#include "ptx_internal.h"

void kptx_var_size_align(const kptx_var *v, uint64_t *size, unsigned *align)
{
    uint64_t elem = kptx_type_size(v->type) * (uint64_t)(v->vec ? v->vec : 1);
    uint64_t n = elem;
    for (unsigned i = 0; i < v->n_dims; i++) {
        if (v->dims[i] == 0 || v->dims[i] > (UINT64_MAX >> 1) / (n ? n : 1)) {
            n = 0;
            break;
        }
        n *= v->dims[i];
    }
    *size = n;
    *align = v->align ? v->align : (unsigned)elem;
    if (*align == 0)
        *align = 1;
}

int kptx_layout_params(kptx_parser *ps, kptx_function *fn)
{
    uint64_t off = 0;
    for (unsigned i = 0; i < fn->n_params; i++) {
        kptx_var *p = &fn->params[i];
        uint64_t size;
        unsigned align;
        kptx_var_size_align(p, &size, &align);
        if (p->space != KPTX_SPACE_PARAM || size == 0)
            return kptx_parse_fail(ps, NULL, KPTX_ESYNTAX,
                                   "entry parameter '%s' has no definite size in .param space",
                                   p->name);
        off = (off + align - 1) / align * align;
        if (off + size > UINT32_MAX)
            return kptx_parse_fail(ps, NULL, KPTX_ELIMIT, "parameter block of '%s' too large",
                                   fn->name);
        p->offset = (uint32_t)off;
        p->size = (uint32_t)size;
        off += size;
    }
    fn->param_bytes = (uint32_t)off;
    return 0;
}

uint64_t kptx_module_global_bytes(const kptx_module *m)
{
    uint64_t total = 0;

    for (unsigned i = 0; m && i < m->n_items; i++) {
        const kptx_var *v = &m->items[i].u.var;
        uint64_t size;
        unsigned align;
        if (m->items[i].kind != KPTX_ITEM_VAR || v->space != KPTX_SPACE_GLOBAL ||
            (v->linkage && !strcmp(v->linkage, ".extern")))
            continue;
        kptx_var_size_align(v, &size, &align);
        uint64_t at = (total + align - 1) / align * align;
        if (at < total || size > UINT64_MAX - at)
            return UINT64_MAX; /* no quota holds it */
        total = at + size;
    }
    return total;
}
