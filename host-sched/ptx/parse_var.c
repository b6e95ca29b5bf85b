/* Declarations of variables, registers and parameters:
 *   [linkage] space [.attribute(...)] {.align N | .vN | type | .ptr [space] [.align N]}
 *   name [<N>] {[dim]} [= initialiser] {, name ...} ;
 * One declaration statement may declare several names; each becomes its own kptx_var. */
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

#define MAX_DECLARATORS 4096
#define MAX_INIT_DEPTH 5
#define MAX_REG_RANGE (1u << 24)

static const char *const linkages[] = {".visible", ".extern", ".weak", ".common"};

static const char *linkage_of(const char *seg, size_t len)
{
    for (size_t i = 0; i < sizeof linkages / sizeof linkages[0]; i++)
        if (strlen(linkages[i]) == len && memcmp(linkages[i], seg, len) == 0)
            return linkages[i];
    return NULL;
}

/* What may stand in an attribute list, as in .attribute(.managed) or
 * .attribute(.unified(0x1, 0x2)): words and numbers separated by ',' and parentheses. Two
 * words in a row would print as one, so they are refused, and so is anything else (a ';' or
 * '{' means the list never closed). */
static bool attribute_token(const kptx_token *t, bool after_word)
{
    bool word = t->kind == TK_WORD || t->kind == TK_DOTWORD || t->kind == TK_INT;
    return word ? !after_word
                : kptx_tok_punct(t, '(') || kptx_tok_punct(t, ')') || kptx_tok_punct(t, ',');
}

/* ".attribute(...)" as text, parentheses included. */
static int parse_attribute(kptx_parser *ps, kptx_var *v)
{
    kptx_buf b = {0};
    int depth = 0;
    bool after_word = false;
    do {
        kptx_token t = kptx_lex_next(&ps->lx);
        if (t.kind == TK_EOF || t.kind == TK_ERROR || (depth == 0 && !kptx_tok_punct(&t, '(')) ||
            !attribute_token(&t, after_word)) {
            free(b.p);
            return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "malformed .attribute");
        }
        after_word = t.kind != TK_PUNCT;
        if (kptx_tok_punct(&t, '('))
            depth++;
        else if (kptx_tok_punct(&t, ')'))
            depth--;
        kptx_buf_put(&b, t.p, t.len);
        if (kptx_tok_punct(&t, ','))
            kptx_buf_putc(&b, ' ');
    } while (depth > 0);
    v->attribute = kptx_arena_strndup(ps->a, b.p ? b.p : "", b.len);
    bool oom = b.oom || !v->attribute;
    free(b.p);
    return oom ? kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory") : 0;
}

static int parse_align(kptx_parser *ps, unsigned *align)
{
    kptx_token t = kptx_lex_next(&ps->lx);
    if (t.kind != TK_INT || t.ival <= 0 || t.ival > (1 << 20) || (t.ival & (t.ival - 1)))
        return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "expected a power of two after .align");
    *align = (unsigned)t.ival;
    return 0;
}

/* One ".word" of the prefix (a DOTWORD may hold several: ".v4.f32"). */
static int prefix_segment(kptx_parser *ps, kptx_var *v, const kptx_token *t, const char *seg,
                          size_t len)
{
    kptx_space sp = kptx_space_of(seg, len);
    const char *lk = linkage_of(seg, len);
    const char *type = kptx_type_canon(seg, len);
    bool last = seg + len == t->p + t->len;
    if (lk && !v->space && !v->linkage) {
        v->linkage = lk;
    } else if (sp && !v->space) {
        v->space = sp;
    } else if (sp && v->is_ptr && !v->ptr_space && !type) {
        v->ptr_space = sp;
    } else if (type && !v->type) {
        v->type = type;
    } else if (len == 3 && seg[1] == 'v' && (seg[2] == '2' || seg[2] == '4' || seg[2] == '8') &&
               !v->vec) {
        v->vec = (unsigned)(seg[2] - '0');
    } else if (len == 4 && memcmp(seg, ".ptr", 4) == 0 && !v->is_ptr) {
        v->is_ptr = true;
    } else if (len == 6 && memcmp(seg, ".align", 6) == 0 && last) {
        return parse_align(ps, v->is_ptr ? &v->ptr_align : &v->align);
    } else if (len == 10 && memcmp(seg, ".attribute", 10) == 0 && last && !v->attribute) {
        return parse_attribute(ps, v);
    } else {
        return kptx_parse_fail(ps, t, KPTX_ESYNTAX, "unexpected '%.*s' in a declaration",
                               (int)len, seg);
    }
    return 0;
}

static int parse_prefix(kptx_parser *ps, kptx_var *v)
{
    memset(v, 0, sizeof *v);
    while (kptx_lex_peek(&ps->lx, 0)->kind == TK_DOTWORD) {
        kptx_token t = kptx_lex_next(&ps->lx);
        const char *end = t.p + t.len;
        for (const char *seg = t.p; seg < end;) {
            const char *next = seg + 1;
            while (next < end && *next != '.')
                next++;
            int rc = prefix_segment(ps, v, &t, seg, (size_t)(next - seg));
            if (rc)
                return rc;
            seg = next;
        }
    }
    const kptx_token *t = kptx_lex_peek(&ps->lx, 0);
    if (!v->space)
        return kptx_parse_fail(ps, t, KPTX_ESYNTAX, "declaration without a state space");
    if (!v->type)
        return kptx_parse_fail(ps, t, KPTX_ESYNTAX, "declaration without a type");
    return 0;
}

/* One initialiser element: number, symbol[+n], generic(symbol[+n])[+n], or a braced
 * list (flattened). */
static int parse_init_elems(kptx_parser *ps, unsigned depth);

static int push_op(kptx_parser *ps, const kptx_operand *o)
{
    if (!kptx_grow_array(&ps->ops, &ps->cap_ops, ps->n_ops, sizeof *ps->ops, 64))
        return kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
    ps->ops[ps->n_ops++] = *o;
    return 0;
}

int kptx_push_operand(kptx_parser *ps, const kptx_operand *o)
{
    return push_op(ps, o);
}

int kptx_pop_operands(kptx_parser *ps, size_t base, kptx_operand **out, unsigned *n)
{
    *n = (unsigned)(ps->n_ops - base);
    *out = NULL;
    if (*n) {
        *out = kptx_arena_memdup(ps->a, ps->ops + base, *n * sizeof **out);
        ps->n_ops = base;
        if (!*out)
            return kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
    }
    return 0;
}

static int parse_init_symbol(kptx_parser *ps, kptx_operand *o)
{
    kptx_token w = kptx_lex_next(&ps->lx);
    if (kptx_tok_is(&w, "generic") && kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '(')) {
        kptx_lex_next(&ps->lx);
        o->generic = true;
        w = kptx_lex_next(&ps->lx);
        if (w.kind != TK_WORD)
            return kptx_parse_fail(ps, &w, KPTX_ESYNTAX, "expected a name in generic()");
        int rc = kptx_parse_offsets(ps, o);
        if (rc || (rc = kptx_expect_punct(ps, ')', "')' after generic(")))
            return rc;
    }
    o->kind = KPTX_OPND_SYMBOL;
    o->name = kptx_arena_strndup(ps->a, w.p, w.len);
    if (!o->name)
        return kptx_parse_fail(ps, &w, KPTX_ENOMEM, "out of memory");
    return kptx_parse_offsets(ps, o);
}

static int parse_init_elem(kptx_parser *ps, unsigned depth)
{
    const kptx_token *t = kptx_lex_peek(&ps->lx, 0);
    kptx_operand o = {0};
    if (kptx_tok_punct(t, '{'))
        return parse_init_elems(ps, depth + 1);
    if (t->kind == TK_WORD) {
        int rc = parse_init_symbol(ps, &o);
        return rc ? rc : push_op(ps, &o);
    }
    bool neg = false;
    if (kptx_tok_punct(t, '-')) {
        kptx_lex_next(&ps->lx);
        neg = true;
    }
    kptx_token n = kptx_lex_next(&ps->lx);
    if (n.kind == TK_INT) {
        o.kind = KPTX_OPND_INT;
        o.value = neg ? (int64_t)(-(uint64_t)n.ival) : n.ival;
    } else if (n.kind == TK_FLOAT) {
        o.kind = KPTX_OPND_FLOAT;
        o.width = n.fwidth;
        o.bits = n.fbits ^ (neg ? (n.fwidth == 32 ? 0x80000000ull : 0x8000000000000000ull) : 0);
    } else {
        return kptx_parse_fail(ps, &n, KPTX_ESYNTAX, "expected an initialiser value");
    }
    return push_op(ps, &o);
}

static int parse_init_elems(kptx_parser *ps, unsigned depth)
{
    if (depth > MAX_INIT_DEPTH)
        return kptx_parse_fail(ps, kptx_lex_peek(&ps->lx, 0), KPTX_ELIMIT,
                               "initialiser nested too deeply");
    kptx_lex_next(&ps->lx); /* '{' */
    if (kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '}')) {
        kptx_lex_next(&ps->lx);
        return 0;
    }
    for (;;) {
        int rc = parse_init_elem(ps, depth);
        if (rc)
            return rc;
        kptx_token t = kptx_lex_next(&ps->lx);
        if (kptx_tok_punct(&t, '}'))
            return 0;
        if (!kptx_tok_punct(&t, ','))
            return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "expected ',' or '}' in an initialiser");
    }
}

static int parse_init(kptx_parser *ps, kptx_var *v)
{
    size_t base = ps->n_ops;
    int rc = kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '{') ? parse_init_elems(ps, 1)
                                                             : parse_init_elem(ps, 1);
    if (rc)
        return rc;
    v->has_init = true;
    return kptx_pop_operands(ps, base, &v->init, &v->n_init);
}

/* name [<N>] {[dim]} [= init] */
static int parse_declarator(kptx_parser *ps, kptx_var *v, bool in_params)
{
    kptx_token name = kptx_lex_next(&ps->lx);
    if (name.kind != TK_WORD)
        return kptx_parse_fail(ps, &name, KPTX_ESYNTAX, "expected a name in a declaration");
    v->name = kptx_arena_strndup(ps->a, name.p, name.len);
    if (!v->name)
        return kptx_parse_fail(ps, &name, KPTX_ENOMEM, "out of memory");
    if (kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '<')) {
        kptx_lex_next(&ps->lx);
        kptx_token n = kptx_lex_next(&ps->lx);
        if (v->space != KPTX_SPACE_REG || n.kind != TK_INT || n.ival <= 0 ||
            n.ival > MAX_REG_RANGE)
            return kptx_parse_fail(ps, &n, KPTX_ESYNTAX, "bad register range");
        v->reg_range = (unsigned)n.ival;
        int rc = kptx_expect_punct(ps, '>', "'>' after a register count");
        if (rc)
            return rc;
    }
    while (kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '[')) {
        kptx_token open = kptx_lex_next(&ps->lx);
        if (v->n_dims == 4)
            return kptx_parse_fail(ps, &open, KPTX_ELIMIT, "more than 4 array dimensions");
        const kptx_token *n = kptx_lex_peek(&ps->lx, 0);
        uint64_t dim = 0;
        if (n->kind == TK_INT) {
            if (n->ival <= 0)
                return kptx_parse_fail(ps, n, KPTX_ESYNTAX, "bad array size");
            dim = (uint64_t)n->ival;
            kptx_lex_next(&ps->lx);
        }
        v->dims[v->n_dims++] = dim;
        int rc = kptx_expect_punct(ps, ']', "']' after an array size");
        if (rc)
            return rc;
    }
    if (!in_params && kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '=')) {
        kptx_lex_next(&ps->lx);
        return parse_init(ps, v);
    }
    return 0;
}

int kptx_parse_param(kptx_parser *ps, kptx_var *v)
{
    int rc = parse_prefix(ps, v);
    return rc ? rc : parse_declarator(ps, v, true);
}

int kptx_parse_decl(kptx_parser *ps, kptx_var **vars, unsigned *n)
{
    kptx_var first, tmp[16];
    int rc = parse_prefix(ps, &first);
    if (rc)
        return rc;
    kptx_var *list = tmp;
    unsigned count = 0, cap = 16;
    for (;;) {
        if (count == cap) {
            if (cap >= MAX_DECLARATORS)
                return kptx_parse_fail(ps, kptx_lex_peek(&ps->lx, 0), KPTX_ELIMIT,
                                       "too many names in one declaration");
            kptx_var *bigger = kptx_arena_alloc(ps->a, 2 * cap * sizeof *bigger);
            if (!bigger)
                return kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
            memcpy(bigger, list, count * sizeof *bigger);
            list = bigger;
            cap *= 2;
        }
        list[count] = first;
        rc = parse_declarator(ps, &list[count], false);
        if (rc)
            return rc;
        count++;
        kptx_token t = kptx_lex_next(&ps->lx);
        if (kptx_tok_punct(&t, ';'))
            break;
        if (!kptx_tok_punct(&t, ','))
            return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "expected ';' after a declaration");
    }
    *vars = list == tmp ? kptx_arena_memdup(ps->a, tmp, count * sizeof *list) : list;
    *n = count;
    return *vars ? 0 : kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
}
