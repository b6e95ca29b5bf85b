/* Finding the vprintf calls the printf pass rewrites (kernelet/ptx.h, "Device printf"):
 * the call sequence nvcc writes, the format traced back to a module string in the same
 * function, and the argument words to copy, laid out from the format (printf_format.c). */
#include <string.h>

#include "ptx_internal.h"

static bool same(const char *a, const char *b)
{
    return a && b && (a == b || strcmp(a, b) == 0);
}

static bool has_mod(const kptx_instr *in, const char *mod)
{
    for (unsigned i = 0; i < in->n_mods; i++)
        if (strcmp(in->mods[i], mod) == 0)
            return true;
    return false;
}

static const kptx_instr *instr_at(const kptx_function *fn, int i)
{
    return fn->stmts[i].kind == KPTX_STMT_INSTR ? &fn->stmts[i].u.instr : NULL;
}

/* The module variable named name, or NULL. */
static const kptx_var *module_var(const kptx_module *m, const char *name)
{
    for (unsigned i = 0; i < m->n_items; i++)
        if (m->items[i].kind == KPTX_ITEM_VAR && same(m->items[i].u.var.name, name))
            return &m->items[i].u.var;
    return NULL;
}

bool kptx_printf_string_var(const kptx_var *v)
{
    if ((v->space != KPTX_SPACE_GLOBAL && v->space != KPTX_SPACE_CONST) || !v->has_init ||
        v->n_dims != 1 || v->vec || !v->type ||
        (strcmp(v->type, ".b8") && strcmp(v->type, ".u8") && strcmp(v->type, ".s8")))
        return false;
    for (unsigned i = 0; i < v->n_init; i++)
        if (v->init[i].kind != KPTX_OPND_INT)
            return false;
    return true;
}

/* The one instruction of fn that writes register reg, or NULL when none or several. */
static const kptx_instr *only_def(const kptx_function *fn, const char *reg)
{
    const kptx_instr *def = NULL;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_instr *in = instr_at(fn, (int)i);
        if (!in || !in->n_ops)
            continue;
        const kptx_operand *d = &in->ops[0];
        bool writes = d->kind == KPTX_OPND_REG && same(d->name, reg);
        /* vector and predicate-pair destinations, and a call's return list */
        for (unsigned k = 0; (d->kind == KPTX_OPND_VECTOR || d->kind == KPTX_OPND_PAIR ||
                              d->kind == KPTX_OPND_LIST) && k < d->n_elems; k++)
            writes |= same(d->elems[k].name, reg);
        if (writes && def)
            return NULL;
        if (writes)
            def = in;
    }
    return def;
}

/* The variable and byte offset the generic address in register reg comes from: mov of the
 * variable, cvta.global/.const of it or of a register holding it, plus constants added. */
static const char *trace_format(const kptx_function *fn, const char *reg, int64_t *off)
{
    *off = 0;
    for (unsigned depth = 0; depth < 8; depth++) {
        const kptx_instr *in = only_def(fn, reg);
        if (!in || in->guard)
            return NULL;
        bool mov = strcmp(in->opcode, "mov") == 0 && in->n_ops == 2;
        bool cvta = strcmp(in->opcode, "cvta") == 0 && in->n_ops == 2 && !has_mod(in, ".to") &&
                    (has_mod(in, ".global") || has_mod(in, ".const"));
        bool add = strcmp(in->opcode, "add") == 0 && in->n_ops == 3 &&
                   in->ops[2].kind == KPTX_OPND_INT && in->ops[2].value >= 0 &&
                   in->ops[2].value < (1 << 20);
        const kptx_operand *src = &in->ops[1];
        if (!mov && !cvta && !add)
            return NULL;
        if (add)
            *off += in->ops[2].value;
        if (src->kind == KPTX_OPND_SYMBOL && !add) {
            *off += src->value;
            return src->name;
        }
        if (src->kind != KPTX_OPND_REG)
            return NULL;
        reg = src->name;
    }
    return NULL;
}

/* The format text: v's initialiser from off up to its NUL, into buf. Elements past the
 * initialiser are zero (nvcc writes "$str[11] = {...10 values}"). */
static bool format_text(const kptx_var *v, int64_t off, char *buf, size_t cap, size_t *len)
{
    if (!kptx_printf_string_var(v) || off < 0)
        return false;
    uint64_t size = v->dims[0] ? v->dims[0] : v->n_init;
    for (size_t i = 0; (uint64_t)off + i < size && i < cap; i++) {
        uint64_t k = (uint64_t)off + i;
        buf[i] = k < v->n_init ? (char)v->init[k].value : '\0';
        if (!buf[i]) {
            *len = i;
            return true;
        }
    }
    return false;
}

/* The statement index of the last st.param to param before the call (in its block). */
static int param_store(const kptx_function *fn, unsigned call, const char *param)
{
    for (int i = (int)call - 1; i >= 0 && fn->stmts[i].kind != KPTX_STMT_BLOCK_BEGIN; i--) {
        const kptx_instr *in = instr_at(fn, i);
        if (in && strcmp(in->opcode, "st") == 0 && has_mod(in, ".param") && in->n_ops == 2 &&
            in->ops[0].kind == KPTX_OPND_ADDRESS && in->ops[0].value == 0 &&
            in->ops[0].n_elems && same(in->ops[0].elems[0].name, param))
            return in->guard ? -1 : i;
    }
    return -1;
}

/* The statement index of the ld.param of the result after the call (in its block). */
static int result_load(const kptx_function *fn, unsigned call, const char *ret)
{
    for (unsigned i = call + 1; ret && i < fn->n_stmts &&
                                fn->stmts[i].kind != KPTX_STMT_BLOCK_END; i++) {
        const kptx_instr *in = instr_at(fn, (int)i);
        if (in && strcmp(in->opcode, "ld") == 0 && has_mod(in, ".param") && in->n_ops == 2 &&
            in->ops[0].kind == KPTX_OPND_REG && in->ops[1].kind == KPTX_OPND_ADDRESS &&
            in->ops[1].n_elems && same(in->ops[1].elems[0].name, ret))
            return in->guard ? -1 : (int)i;
    }
    return -1;
}

/* The copies of a record's arguments, from the format's conversions. */
static bool plan_slots(kptx_printf_site *s, const char *fmt, size_t len)
{
    size_t pos = 0;
    uint32_t bytes = 0;
    kptx_printf_spec sp;
    int rc;
    if (kptx_printf_layout_of(fmt, len, &s->bytes, &s->n_args) != 0)
        return false;
    s->n_slots = 0;
    while ((rc = kptx_printf_next(fmt, len, &pos, &bytes, &sp)) == 1) {
        if (sp.star_width)
            s->slots[s->n_slots++] = (kptx_printf_slot){sp.width_off, 4};
        if (sp.star_prec)
            s->slots[s->n_slots++] = (kptx_printf_slot){sp.prec_off, 4};
        s->slots[s->n_slots++] = (kptx_printf_slot){sp.value_off, sp.size};
    }
    return rc == 0;
}

/* Whether statement i of fn is a vprintf call this pass can rewrite; fills s. */
static bool match_site(const kptx_module *m, const kptx_function *fn, unsigned i, kptx_printf_site *s)
{
    const kptx_instr *in = instr_at(fn, (int)i);
    if (!in || strcmp(in->opcode, "call") != 0 || in->guard)
        return false;
    unsigned t = 0;
    while (t < in->n_ops && in->ops[t].kind == KPTX_OPND_LIST)
        t++;
    if (t > 1 || t + 1 >= in->n_ops || !same(in->ops[t].name, "vprintf") ||
        in->ops[t + 1].kind != KPTX_OPND_LIST || in->ops[t + 1].n_elems != 2)
        return false;
    const kptx_operand *params = in->ops[t + 1].elems;
    memset(s, 0, sizeof *s);
    s->call = i;
    s->st_fmt = param_store(fn, i, params[0].name);
    s->st_args = param_store(fn, i, params[1].name);
    s->ld_ret = t == 1 && in->ops[0].n_elems == 1 ? result_load(fn, i, in->ops[0].elems[0].name)
                                                  : -1;
    if (s->st_fmt < 0 || s->st_args < 0)
        return false;
    s->fmt = fn->stmts[s->st_fmt].u.instr.ops[1];
    s->args = fn->stmts[s->st_args].u.instr.ops[1];
    int64_t off;
    char text[4096];
    size_t len;
    const kptx_var *v;
    if (s->fmt.kind != KPTX_OPND_REG || !(s->fmt_var = trace_format(fn, s->fmt.name, &off)) ||
        !(v = module_var(m, s->fmt_var)) || !format_text(v, off, text, sizeof text, &len) ||
        !plan_slots(s, text, len))
        return false;
    /* no buffer (nvcc passes 0) is fine only when the format takes no argument */
    return s->args.kind == KPTX_OPND_REG || (s->args.kind == KPTX_OPND_INT && s->bytes == 0);
}

int kptx_printf_find_sites(const kptx_module *m, const kptx_function *fn, kptx_printf_site **out,
                           unsigned *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    kptx_printf_site s;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        if (!match_site(m, fn, i, &s))
            continue;
        if (!kptx_grow_array(out, &cap, *n, sizeof s, 4))
            return KPTX_ENOMEM;
        (*out)[(*n)++] = s;
    }
    return 0;
}
