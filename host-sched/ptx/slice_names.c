/* Names for what the slicer and the fencing pass add: a prefix that no identifier of the module starts with,
 * so that new parameters, registers and variables cannot clash with existing ones. */
#include <stdio.h>
#include <string.h>

#include "ptx_internal.h"

static bool starts(const char *name, const char *prefix, size_t n)
{
    if (!name)
        return false;
    if (name[0] == '%')
        name++;
    return name[0] == prefix[0] && strncmp(name, prefix, n) == 0;
}

static bool operand_uses(const kptx_operand *o, const char *prefix, size_t n)
{
    if (starts(o->name, prefix, n))
        return true;
    for (unsigned i = 0; i < o->n_elems; i++)
        if (operand_uses(&o->elems[i], prefix, n))
            return true;
    return false;
}

static bool var_uses(const kptx_var *v, const char *prefix, size_t n)
{
    if (starts(v->name, prefix, n))
        return true;
    for (unsigned i = 0; i < v->n_init; i++)
        if (operand_uses(&v->init[i], prefix, n))
            return true;
    return false;
}

static bool stmt_uses(const kptx_stmt *s, const char *prefix, size_t n)
{
    switch (s->kind) {
    case KPTX_STMT_LABEL:
        return starts(s->u.label, prefix, n);
    case KPTX_STMT_VAR:
        return var_uses(&s->u.var, prefix, n);
    case KPTX_STMT_INSTR:
        for (unsigned k = 0; k < s->u.instr.n_ops; k++)
            if (operand_uses(&s->u.instr.ops[k], prefix, n))
                return true;
        return starts(s->u.instr.guard, prefix, n);
    default:
        return false;
    }
}

static bool function_uses(const kptx_function *fn, const char *prefix, size_t n)
{
    for (unsigned i = 0; i < fn->n_params; i++)
        if (var_uses(&fn->params[i], prefix, n))
            return true;
    for (unsigned i = 0; i < fn->n_rets; i++)
        if (var_uses(&fn->rets[i], prefix, n))
            return true;
    for (unsigned i = 0; i < fn->n_stmts; i++)
        if (stmt_uses(&fn->stmts[i], prefix, n))
            return true;
    return false;
}

/* Whether any identifier of m (with or without its '%') starts with prefix. Function names
 * are not looked at: the sliced variants' names end in the suffix instead. */
static bool module_uses(const kptx_module *m, const char *prefix)
{
    size_t n = strlen(prefix);
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_item *it = &m->items[i];
        if (it->kind == KPTX_ITEM_VAR && var_uses(&it->u.var, prefix, n))
            return true;
        if (it->kind == KPTX_ITEM_FUNCTION && function_uses(&it->u.fn, prefix, n))
            return true;
    }
    return false;
}

int kptx_unused_prefix(const kptx_module *m, const char *base, char *buf, size_t len)
{
    snprintf(buf, len, "%s", base);
    for (unsigned k = 1; module_uses(m, buf); k++) {
        if (k > 1000)
            return KPTX_ELIMIT;
        snprintf(buf, len, "%s%u_", base, k);
    }
    return 0;
}

int kptx_slice_name(const char *entry, char *buf, size_t buflen)
{
    if (!entry || !buf)
        return KPTX_EINVAL;
    int n = snprintf(buf, buflen, "%s%s", entry, KPTX_SLICE_SUFFIX);
    return n < 0 || (size_t)n >= buflen ? KPTX_ELIMIT : 0;
}
