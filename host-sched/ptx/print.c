/* The PTX printer: writes a module back as text that ptxas assembles to the same cubin
 * as the parsed input. Layout follows nvcc's (tabs, one statement per line). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

static void put_int(kptx_buf *b, int64_t v)
{
    char tmp[24];
    char *p = tmp + sizeof tmp;
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    kptx_buf_put(b, p, (size_t)(tmp + sizeof tmp - p));
}

static void put_hex(kptx_buf *b, uint64_t v, unsigned digits)
{
    static const char hex[] = "0123456789ABCDEF";
    char tmp[16];
    for (unsigned i = 0; i < digits; i++)
        tmp[digits - 1 - i] = hex[(v >> (4 * i)) & 15];
    kptx_buf_put(b, tmp, digits);
}

static void put_elems(kptx_buf *b, const kptx_operand *o, char open, char close)
{
    kptx_buf_putc(b, open);
    for (unsigned i = 0; i < o->n_elems; i++) {
        if (i)
            kptx_buf_put(b, ", ", 2);
        kptx_print_operand(b, &o->elems[i]);
    }
    kptx_buf_putc(b, close);
}

void kptx_print_operand(kptx_buf *b, const kptx_operand *o)
{
    if (o->negated)
        kptx_buf_putc(b, '!');
    switch (o->kind) {
    case KPTX_OPND_REG:
    case KPTX_OPND_SREG:
        kptx_buf_puts(b, o->name);
        break;
    case KPTX_OPND_INT:
        put_int(b, o->value);
        break;
    case KPTX_OPND_FLOAT:
        kptx_buf_put(b, o->width == 32 ? "0f" : "0d", 2);
        put_hex(b, o->bits, o->width == 32 ? 8 : 16);
        break;
    case KPTX_OPND_SYMBOL:
        if (o->generic) {
            kptx_buf_puts(b, "generic(");
            kptx_buf_puts(b, o->name);
            kptx_buf_putc(b, ')');
        } else {
            kptx_buf_puts(b, o->name);
        }
        if (o->value || o->has_offset) {
            kptx_buf_putc(b, o->value >= 0 ? '+' : '-');
            put_int(b, o->value >= 0 ? o->value : (int64_t)(-(uint64_t)o->value));
        }
        break;
    case KPTX_OPND_ADDRESS:
        kptx_buf_putc(b, '[');
        for (unsigned i = 0; i < o->n_elems; i++) {
            if (i)
                kptx_buf_put(b, ", ", 2);
            kptx_print_operand(b, &o->elems[i]);
            if (i == 0 && (o->value || o->has_offset)) {
                kptx_buf_putc(b, '+');
                put_int(b, o->value);
            }
        }
        kptx_buf_putc(b, ']');
        break;
    case KPTX_OPND_VECTOR:
        put_elems(b, o, '{', '}');
        break;
    case KPTX_OPND_LIST:
        put_elems(b, o, '(', ')');
        break;
    case KPTX_OPND_PAIR:
        kptx_print_operand(b, &o->elems[0]);
        kptx_buf_putc(b, '|');
        kptx_print_operand(b, &o->elems[1]);
        break;
    case KPTX_OPND_SINK:
        kptx_buf_putc(b, '_');
        break;
    }
}

/* Initialiser elements, nested by the declared shape: one brace level per array dimension
 * and one for vector elements. */
static void put_init(kptx_buf *b, const kptx_var *v, unsigned level, unsigned levels,
                     const uint64_t *chunk, unsigned *next)
{
    if (level == levels) {
        kptx_print_operand(b, &v->init[(*next)++]);
        return;
    }
    kptx_buf_putc(b, '{');
    for (uint64_t i = 0; *next < v->n_init && (chunk[level] == 0 || i < chunk[level]); i++) {
        if (i)
            kptx_buf_put(b, ", ", 2);
        put_init(b, v, level + 1, levels, chunk, next);
    }
    kptx_buf_putc(b, '}');
}

static void put_initialiser(kptx_buf *b, const kptx_var *v)
{
    kptx_buf_put(b, " = ", 3);
    uint64_t chunk[sizeof v->dims / sizeof v->dims[0] + 1];   /* dimensions, a vector */
    unsigned levels = v->n_dims + (v->vec ? 1 : 0);
    if (levels == 0 || levels > sizeof chunk / sizeof chunk[0]) {  /* the parser allows 4 */
        kptx_print_operand(b, &v->init[0]);
        return;
    }
    for (unsigned i = 0; i < v->n_dims; i++)
        chunk[i] = i == 0 ? 0 : v->dims[i];   /* the outer level takes what is there */
    if (v->vec)
        chunk[v->n_dims] = v->vec;
    if (v->n_dims == 0)
        chunk[0] = 0;
    unsigned next = 0;
    put_init(b, v, 0, levels, chunk, &next);
}

void kptx_print_var(kptx_buf *b, const kptx_var *v)
{
    if (v->linkage) {
        kptx_buf_puts(b, v->linkage);
        kptx_buf_putc(b, ' ');
    }
    kptx_buf_puts(b, kptx_space_name(v->space));
    if (v->attribute) {
        kptx_buf_puts(b, " .attribute");
        kptx_buf_puts(b, v->attribute);
    }
    if (v->align) {
        kptx_buf_puts(b, " .align ");
        put_int(b, v->align);
    }
    if (v->vec) {
        kptx_buf_puts(b, " .v");
        put_int(b, v->vec);
    }
    kptx_buf_putc(b, ' ');
    kptx_buf_puts(b, v->type);
    if (v->is_ptr) {
        kptx_buf_puts(b, " .ptr");
        if (v->ptr_space) {
            kptx_buf_putc(b, ' ');
            kptx_buf_puts(b, kptx_space_name(v->ptr_space));
        }
        if (v->ptr_align) {
            kptx_buf_puts(b, " .align ");
            put_int(b, v->ptr_align);
        }
    }
    kptx_buf_putc(b, v->space == KPTX_SPACE_REG ? '\t' : ' ');
    kptx_buf_puts(b, v->name);
    if (v->reg_range) {
        kptx_buf_putc(b, '<');
        put_int(b, v->reg_range);
        kptx_buf_putc(b, '>');
    }
    for (unsigned i = 0; i < v->n_dims; i++) {
        kptx_buf_putc(b, '[');
        if (v->dims[i])
            put_int(b, (int64_t)v->dims[i]);
        kptx_buf_putc(b, ']');
    }
    if (v->has_init)
        put_initialiser(b, v);
}

static void put_directive(kptx_buf *b, const kptx_directive *d)
{
    kptx_buf_puts(b, d->name);
    if (d->text[0]) {
        kptx_buf_putc(b, d->text[0] == '\n' ? '\n' : ' ');
        kptx_buf_puts(b, d->text);
    }
    if (kptx_directive_has_semicolon(d->name))
        kptx_buf_putc(b, ';');
    kptx_buf_putc(b, '\n');
}

static void put_instr(kptx_buf *b, const kptx_instr *in)
{
    kptx_buf_putc(b, '\t');
    if (in->guard) {
        kptx_buf_put(b, in->guard_negated ? "@!" : "@", in->guard_negated ? 2 : 1);
        kptx_buf_puts(b, in->guard);
        kptx_buf_putc(b, ' ');
    }
    kptx_buf_puts(b, in->opcode);
    for (unsigned i = 0; i < in->n_mods; i++)
        kptx_buf_puts(b, in->mods[i]);
    for (unsigned i = 0; i < in->n_ops; i++) {
        kptx_buf_put(b, i ? ", " : " \t", 2);
        kptx_print_operand(b, &in->ops[i]);
    }
    kptx_buf_put(b, ";\n", 2);
}

static void put_stmt(kptx_buf *b, const kptx_stmt *s)
{
    switch (s->kind) {
    case KPTX_STMT_INSTR:
        put_instr(b, &s->u.instr);
        break;
    case KPTX_STMT_LABEL:
        kptx_buf_puts(b, s->u.label);
        kptx_buf_put(b, ":\n", 2);
        break;
    case KPTX_STMT_VAR:
        kptx_buf_putc(b, '\t');
        kptx_print_var(b, &s->u.var);
        kptx_buf_put(b, ";\n", 2);
        break;
    case KPTX_STMT_DIRECTIVE:
        kptx_buf_putc(b, '\t');
        put_directive(b, &s->u.dir);
        break;
    case KPTX_STMT_BLOCK_BEGIN:
        kptx_buf_put(b, "\t{\n", 3);
        break;
    case KPTX_STMT_BLOCK_END:
        kptx_buf_put(b, "\t}\n", 3);
        break;
    }
}

static void put_params(kptx_buf *b, const kptx_var *p, unsigned n)
{
    kptx_buf_put(b, "(\n", 2);
    for (unsigned i = 0; i < n; i++) {
        kptx_buf_putc(b, '\t');
        kptx_print_var(b, &p[i]);
        kptx_buf_puts(b, i + 1 < n ? ",\n" : "\n");
    }
    kptx_buf_putc(b, ')');
}

static void put_function(kptx_buf *b, const kptx_function *fn)
{
    kptx_buf_putc(b, '\n');
    if (fn->linkage) {
        kptx_buf_puts(b, fn->linkage);
        kptx_buf_putc(b, ' ');
    }
    kptx_buf_puts(b, fn->is_entry ? ".entry " : ".func ");
    if (fn->rets) {
        kptx_buf_putc(b, '(');
        for (unsigned i = 0; i < fn->n_rets; i++) {
            if (i)
                kptx_buf_put(b, ", ", 2);
            kptx_print_var(b, &fn->rets[i]);
        }
        kptx_buf_put(b, ") ", 2);
    }
    kptx_buf_puts(b, fn->name);
    put_params(b, fn->params, fn->n_params);
    kptx_buf_putc(b, '\n');
    for (unsigned i = 0; i < fn->n_perf; i++)
        put_directive(b, &fn->perf[i]);
    if (!fn->has_body) {
        kptx_buf_put(b, ";\n", 2);
        return;
    }
    kptx_buf_put(b, "{\n", 2);
    for (unsigned i = 0; i < fn->n_stmts; i++)
        put_stmt(b, &fn->stmts[i]);
    kptx_buf_put(b, "}\n", 2);
}

int kptx_print(const kptx_module *m, char **text, size_t *len, kptx_error *err)
{
    if (text)
        *text = NULL;
    if (len)
        *len = 0;
    if (!m || !text)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "NULL argument");
    kptx_buf b = {0};
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_item *it = &m->items[i];
        switch (it->kind) {
        case KPTX_ITEM_DIRECTIVE:
            put_directive(&b, &it->u.dir);
            break;
        case KPTX_ITEM_VAR:
            kptx_print_var(&b, &it->u.var);
            kptx_buf_put(&b, ";\n", 2);
            break;
        case KPTX_ITEM_FUNCTION:
            put_function(&b, &it->u.fn);
            break;
        }
    }
    if (!b.p)
        kptx_buf_put(&b, "", 0);
    if (b.oom) {
        free(b.p);
        return kptx_fail(err, KPTX_ENOMEM, 0, 0, "out of memory while printing");
    }
    *text = b.p;
    if (len)
        *len = b.len;
    return 0;
}
