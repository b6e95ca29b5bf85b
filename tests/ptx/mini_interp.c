/* See mini_interp.h. */
#include "mini_interp.h"

#include <stdio.h>
#include <string.h>

void mi_init(mi_state *st, const kptx_module *m)
{
    memset(st, 0, sizeof *st);
    st->m = m;
    st->params = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    st->memory = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    st->regs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

void mi_clear(mi_state *st)
{
    g_hash_table_destroy(st->params);
    g_hash_table_destroy(st->memory);
    g_hash_table_destroy(st->regs);
}

void mi_set_param(mi_state *st, const char *name, uint32_t value)
{
    g_hash_table_insert(st->params, g_strdup(name), GUINT_TO_POINTER(value));
}

static bool fail(mi_state *st, const char *what, const kptx_instr *in)
{
    snprintf(st->error, sizeof st->error, "%s (%s)", what, in ? in->opcode : "-");
    return false;
}

static bool mod_is(const kptx_instr *in, unsigned i, const char *mod)
{
    return i < in->n_mods && strcmp(in->mods[i], mod) == 0;
}

static bool value_of(mi_state *st, const kptx_operand *o, uint32_t *v)
{
    gpointer p;
    switch (o->kind) {
    case KPTX_OPND_INT:
        *v = (uint32_t)o->value;
        return true;
    case KPTX_OPND_REG:
        if (!g_hash_table_lookup_extended(st->regs, o->name, NULL, &p))
            return fail(st, "register read before written", NULL);
        *v = GPOINTER_TO_UINT(p);
        return true;
    case KPTX_OPND_SREG: {
        const char *n = o->name;
        size_t len = strlen(n);
        unsigned c = (unsigned)(n[len - 1] - 'x');
        if (c > 2 || n[len - 2] != '.')
            return fail(st, "unsupported special register", NULL);
        if (strncmp(n, "%ctaid.", 7) == 0)
            *v = st->ctaid[c];
        else if (strncmp(n, "%nctaid.", 8) == 0)
            *v = st->nctaid[c];
        else
            return fail(st, "unsupported special register", NULL);
        return true;
    }
    default:
        return fail(st, "unsupported operand", NULL);
    }
}

static char *address_key(const kptx_operand *o)
{
    if (o->kind != KPTX_OPND_ADDRESS || o->n_elems != 1 || o->elems[0].kind != KPTX_OPND_SYMBOL)
        return NULL;
    return g_strdup_printf("%s+%lld", o->elems[0].name, (long long)(o->value + o->elems[0].value));
}

static void set_reg(mi_state *st, const kptx_operand *d, uint32_t v)
{
    g_hash_table_insert(st->regs, g_strdup(d->name), GUINT_TO_POINTER(v));
}

static bool arith(mi_state *st, const kptx_instr *in)
{
    uint32_t a, b, r;
    if (in->n_ops != 3 || in->ops[0].kind != KPTX_OPND_REG || !value_of(st, &in->ops[1], &a) ||
        !value_of(st, &in->ops[2], &b))
        return fail(st, "bad arithmetic operands", in);
    const char *op = in->opcode;
    if (strcmp(op, "add") == 0)
        r = a + b;
    else if (strcmp(op, "sub") == 0)
        r = a - b;
    else if (strcmp(op, "mul") == 0 && mod_is(in, 0, ".lo"))
        r = a * b;
    else if ((strcmp(op, "div") == 0 || strcmp(op, "rem") == 0) && mod_is(in, 0, ".u32")) {
        if (b == 0)
            return fail(st, "division by zero", in);
        r = op[0] == 'd' ? a / b : a % b;
    } else
        return fail(st, "unsupported arithmetic", in);
    set_reg(st, &in->ops[0], r);
    return true;
}

static bool load_store(mi_state *st, const kptx_instr *in)
{
    bool is_ld = strcmp(in->opcode, "ld") == 0;
    unsigned m = mod_is(in, 0, ".volatile") ? 1 : 0;
    if (in->n_ops != 2)
        return fail(st, "bad memory operands", in);
    if (is_ld && mod_is(in, 0, ".param")) {
        const kptx_operand *a = &in->ops[1];
        gpointer p;
        if (a->kind != KPTX_OPND_ADDRESS || a->value || a->elems[0].kind != KPTX_OPND_SYMBOL ||
            !g_hash_table_lookup_extended(st->params, a->elems[0].name, NULL, &p))
            return fail(st, "unknown parameter", in);
        set_reg(st, &in->ops[0], GPOINTER_TO_UINT(p));
        return true;
    }
    if (!(mod_is(in, m, ".global") || mod_is(in, m, ".shared")) || !mod_is(in, m + 1, ".u32"))
        return fail(st, "unsupported load or store", in);
    char *key = address_key(&in->ops[is_ld ? 1 : 0]);
    if (!key)
        return fail(st, "unsupported address", in);
    if (is_ld) {
        gpointer p;
        bool found = g_hash_table_lookup_extended(st->memory, key, NULL, &p);
        g_free(key);
        if (!found)
            return fail(st, "load of memory never stored", in);
        set_reg(st, &in->ops[0], GPOINTER_TO_UINT(p));
        return true;
    }
    uint32_t v;
    if (!value_of(st, &in->ops[1], &v)) {
        g_free(key);
        return false;
    }
    g_hash_table_insert(st->memory, key, GUINT_TO_POINTER(v));
    return true;
}

static bool setp(mi_state *st, const kptx_instr *in)
{
    uint32_t a, b;
    if (in->n_ops != 3 || in->ops[0].kind != KPTX_OPND_REG || !mod_is(in, 1, ".u32") ||
        !value_of(st, &in->ops[1], &a) || !value_of(st, &in->ops[2], &b))
        return fail(st, "bad setp", in);
    if (mod_is(in, 0, ".eq"))
        set_reg(st, &in->ops[0], a == b);
    else if (mod_is(in, 0, ".ne"))
        set_reg(st, &in->ops[0], a != b);
    else
        return fail(st, "unsupported comparison", in);
    return true;
}

/* Executes in; *jump gets a label to continue at (bra), *ret is set by ret. */
static bool step(mi_state *st, const kptx_instr *in, bool *ret, const char **jump)
{
    if (in->guard) {
        kptx_operand g = {.kind = KPTX_OPND_REG, .name = in->guard};
        uint32_t v;
        if (!value_of(st, &g, &v))
            return false;
        if ((v != 0) == in->guard_negated)
            return true;
    }
    const char *op = in->opcode;
    if (strcmp(op, "ret") == 0) {
        *ret = true;
        return true;
    }
    if (strcmp(op, "bra") == 0) {
        if (in->n_ops != 1 || in->ops[0].kind != KPTX_OPND_SYMBOL)
            return fail(st, "bad bra", in);
        *jump = in->ops[0].name;
        return true;
    }
    if (strcmp(op, "setp") == 0)
        return setp(st, in);
    if (strcmp(op, "mov") == 0) {
        uint32_t v;
        if (in->n_ops != 2 || in->ops[0].kind != KPTX_OPND_REG || !value_of(st, &in->ops[1], &v))
            return fail(st, "bad mov", in);
        set_reg(st, &in->ops[0], v);
        return true;
    }
    if (strcmp(op, "ld") == 0 || strcmp(op, "st") == 0)
        return load_store(st, in);
    if (strcmp(op, "call") == 0) {
        if (in->n_ops < 1 || in->ops[0].kind != KPTX_OPND_SYMBOL)
            return fail(st, "unsupported call", in);
        return mi_run(st, in->ops[0].name);
    }
    return arith(st, in);
}

bool mi_run(mi_state *st, const char *name)
{
    const kptx_function *fn = kptx_find_function(st->m, name);
    if (!fn || !fn->has_body || st->depth > 16)
        return fail(st, "no such function, or calls too deep", NULL);
    st->depth++;
    bool ok = true, ret = false;
    unsigned steps = 0;
    for (unsigned i = 0; ok && !ret && i < fn->n_stmts; i++) {
        if (fn->stmts[i].kind != KPTX_STMT_INSTR)
            continue;
        const char *jump = NULL;
        ok = step(st, &fn->stmts[i].u.instr, &ret, &jump);
        if (ok && jump) {
            unsigned k = 0;
            while (k < fn->n_stmts && !(fn->stmts[k].kind == KPTX_STMT_LABEL &&
                                        strcmp(fn->stmts[k].u.label, jump) == 0))
                k++;
            if (k == fn->n_stmts || ++steps > 100000)
                ok = fail(st, "branch to an unknown label, or endless loop", NULL);
            i = k;
        }
    }
    st->depth--;
    return ok;
}

uint32_t mi_load(mi_state *st, const char *symbol, int64_t offset)
{
    char *key = g_strdup_printf("%s+%lld", symbol, (long long)offset);
    gpointer p;
    bool found = g_hash_table_lookup_extended(st->memory, key, NULL, &p);
    if (!found)
        g_error("nothing stored at %s", key);
    g_free(key);
    return GPOINTER_TO_UINT(p);
}
