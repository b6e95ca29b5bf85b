/* The registers a function declares (".reg .b32 %r<10>", ".reg .pred p", .reg parameters)
 * and whether a name is one of them (and which). */
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

static const kptx_var *var_at(const kptx_function *fn, unsigned i)
{
    if (i < fn->n_stmts)
        return fn->stmts[i].kind == KPTX_STMT_VAR ? &fn->stmts[i].u.var : NULL;
    i -= fn->n_stmts;
    return i < fn->n_params ? &fn->params[i] : &fn->rets[i - fn->n_params];
}

int kptx_reg_set_build(const kptx_function *fn, kptx_reg_set *rs)
{
    memset(rs, 0, sizeof *rs);
    size_t cap = 0;
    for (unsigned i = 0; i < fn->n_stmts + fn->n_params + fn->n_rets; i++) {
        const kptx_var *v = var_at(fn, i);
        if (!v || v->space != KPTX_SPACE_REG)
            continue;
        if (!kptx_grow_array(&rs->v, &cap, rs->n, sizeof *rs->v, 16)) {
            kptx_reg_set_free(rs);
            return KPTX_ENOMEM;
        }
        rs->v[rs->n++] = v;
        rs->any_plain |= v->name[0] != '%';
    }
    return 0;
}

void kptx_reg_set_free(kptx_reg_set *rs)
{
    free(rs->v);
    memset(rs, 0, sizeof *rs);
}

bool kptx_reg_set_has(const kptx_reg_set *rs, const char *name)
{
    return kptx_reg_set_find(rs, name) != NULL;
}

const kptx_var *kptx_reg_set_find(const kptx_reg_set *rs, const char *name)
{
    size_t len = strlen(name), digits = 0;
    while (digits < len && name[len - 1 - digits] >= '0' && name[len - 1 - digits] <= '9')
        digits++;
    size_t plen = len - digits;
    /* %r<10> declares %r0..%r9: decimal without leading zeros */
    bool canonical = digits && digits < 10 && !(digits > 1 && name[plen] == '0');
    unsigned long idx = 0;
    for (size_t i = plen; canonical && i < len; i++)
        idx = idx * 10 + (unsigned long)(name[i] - '0');
    for (size_t i = 0; i < rs->n; i++) {
        const kptx_var *v = rs->v[i];
        if (v->reg_range ? canonical && idx < v->reg_range && strlen(v->name) == plen &&
                               memcmp(v->name, name, plen) == 0
                         : strcmp(v->name, name) == 0)
            return v;
    }
    return NULL;
}
