/* The PTX parser, function bodies: statements, instructions and operands. */
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

#define MAX_BLOCK_DEPTH 256
#define MAX_OPERAND_DEPTH 4
#define MAX_STMTS (1u << 26)

static kptx_stmt *stmt_add(kptx_parser *ps, kptx_stmt_kind kind, unsigned line)
{
    if (ps->n_stmts >= MAX_STMTS) {
        kptx_parse_fail(ps, kptx_lex_peek(&ps->lx, 0), KPTX_ELIMIT,
                        "too many statements in one function");
        return NULL;
    }
    if (!kptx_grow_array(&ps->stmts, &ps->cap_stmts, ps->n_stmts, sizeof *ps->stmts, 256)) {
        kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
        return NULL;
    }
    kptx_stmt *s = &ps->stmts[ps->n_stmts++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->line = line;
    return s;
}

/* ---- operands ---- */

static int parse_operand(kptx_parser *ps, kptx_operand *o, unsigned depth);

static int name_operand(kptx_parser *ps, const kptx_token *t, kptx_operand *o)
{
    if (t->len == 1 && t->p[0] == '_') {
        o->kind = KPTX_OPND_SINK;
        return 0;
    }
    if (t->p[0] == '%')
        o->kind = kptx_is_sreg(t->p, t->len) ? KPTX_OPND_SREG : KPTX_OPND_REG;
    else
        o->kind = KPTX_OPND_SYMBOL; /* may become REG once declarations are known */
    o->name = kptx_intern(&ps->words, ps->a, t->p, t->len);
    return o->name ? 0 : kptx_parse_fail(ps, t, KPTX_ENOMEM, "out of memory");
}

/* "+ N", "- N", "+ -N" after a base; adds to o->value and sets o->has_offset. */
int kptx_parse_offsets(kptx_parser *ps, kptx_operand *o)
{
    int64_t *off = &o->value;
    for (;;) {
        const kptx_token *t = kptx_lex_peek(&ps->lx, 0);
        if (!kptx_tok_punct(t, '+') && !kptx_tok_punct(t, '-'))
            return 0;
        o->has_offset = true;
        bool neg = kptx_lex_next(&ps->lx).punct == '-';
        if (kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '-')) {
            kptx_lex_next(&ps->lx);
            neg = !neg;
        }
        kptx_token n = kptx_lex_next(&ps->lx);
        if (n.kind != TK_INT)
            return kptx_parse_fail(ps, &n, KPTX_ESYNTAX, "expected a number in an offset");
        uint64_t v = (uint64_t)n.ival;
        *off = (int64_t)((uint64_t)*off + (neg ? -v : v));
    }
}

/* Elements up to the closing character, pushed on the scratch stack and then copied. */
static int parse_group(kptx_parser *ps, kptx_operand *o, char close, unsigned depth)
{
    size_t base = ps->n_ops;
    int rc = 0;
    if (kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), close)) {
        kptx_lex_next(&ps->lx);
    } else {
        for (;;) {
            kptx_operand e = {0};
            if ((rc = parse_operand(ps, &e, depth + 1)) || (rc = kptx_push_operand(ps, &e)))
                return rc;
            kptx_token t = kptx_lex_next(&ps->lx);
            if (kptx_tok_punct(&t, close))
                break;
            if (!kptx_tok_punct(&t, ','))
                return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "expected ',' or '%c'", close);
        }
    }
    return kptx_pop_operands(ps, base, &o->elems, &o->n_elems);
}

/* [base(+off)?, more...]: the base's offset becomes the address's value. */
static int parse_address(kptx_parser *ps, kptx_operand *o, unsigned depth)
{
    o->kind = KPTX_OPND_ADDRESS;
    size_t base = ps->n_ops;
    kptx_operand b = {0};
    kptx_token t = kptx_lex_next(&ps->lx);
    int rc;
    if (t.kind == TK_WORD) {
        if ((rc = name_operand(ps, &t, &b)))
            return rc;
        if (b.kind == KPTX_OPND_SINK)
            return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "'_' as an address");
    } else if (t.kind == TK_INT) {
        b.kind = KPTX_OPND_INT;
        b.value = t.ival;
    } else {
        return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "expected an address");
    }
    if ((rc = kptx_parse_offsets(ps, o)) || (rc = kptx_push_operand(ps, &b)))
        return rc;
    for (;;) {
        kptx_token sep = kptx_lex_next(&ps->lx);
        if (kptx_tok_punct(&sep, ']'))
            break;
        if (!kptx_tok_punct(&sep, ','))
            return kptx_parse_fail(ps, &sep, KPTX_ESYNTAX, "expected ']' after an address");
        kptx_operand e = {0};
        if ((rc = parse_operand(ps, &e, depth + 1)) || (rc = kptx_push_operand(ps, &e)))
            return rc;
    }
    return kptx_pop_operands(ps, base, &o->elems, &o->n_elems);
}

static int parse_number(kptx_parser *ps, kptx_operand *o)
{
    bool neg = false;
    if (kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '-')) {
        kptx_lex_next(&ps->lx);
        neg = true;
    }
    kptx_token n = kptx_lex_next(&ps->lx);
    if (n.kind == TK_INT) {
        o->kind = KPTX_OPND_INT;
        o->value = neg ? (int64_t)(-(uint64_t)n.ival) : n.ival;
        return 0;
    }
    if (n.kind == TK_FLOAT) {
        o->kind = KPTX_OPND_FLOAT;
        o->width = n.fwidth;
        o->bits = n.fbits;
        if (neg)
            o->bits ^= n.fwidth == 32 ? 0x80000000ull : 0x8000000000000000ull;
        return 0;
    }
    return kptx_parse_fail(ps, &n, KPTX_ESYNTAX, "expected an operand");
}

static int parse_simple(kptx_parser *ps, kptx_operand *o, unsigned depth)
{
    if (depth > MAX_OPERAND_DEPTH)
        return kptx_parse_fail(ps, kptx_lex_peek(&ps->lx, 0), KPTX_ELIMIT,
                               "operands nested too deeply");
    const kptx_token *t = kptx_lex_peek(&ps->lx, 0);
    if (t->kind == TK_WORD) {
        kptx_token w = kptx_lex_next(&ps->lx);
        int rc = name_operand(ps, &w, o);
        if (rc || o->kind != KPTX_OPND_SYMBOL)
            return rc;
        return kptx_parse_offsets(ps, o);
    }
    if (t->kind == TK_PUNCT) {
        switch (t->punct) {
        case '[':
            kptx_lex_next(&ps->lx);
            return parse_address(ps, o, depth);
        case '{':
            kptx_lex_next(&ps->lx);
            o->kind = KPTX_OPND_VECTOR;
            return parse_group(ps, o, '}', depth);
        case '(':
            kptx_lex_next(&ps->lx);
            o->kind = KPTX_OPND_LIST;
            return parse_group(ps, o, ')', depth);
        default:
            break;
        }
    }
    return parse_number(ps, o);
}

/* ['!'] simple ['|' simple] */
static int parse_operand(kptx_parser *ps, kptx_operand *o, unsigned depth)
{
    bool neg = false;
    if (kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '!')) {
        kptx_lex_next(&ps->lx);
        neg = true;
    }
    int rc = parse_simple(ps, o, depth);
    if (rc)
        return rc;
    o->negated = neg;
    if (!kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '|'))
        return 0;
    kptx_lex_next(&ps->lx);
    kptx_operand pair[2] = {*o, {0}};
    if ((rc = parse_simple(ps, &pair[1], depth + 1)))
        return rc;
    memset(o, 0, sizeof *o);
    o->kind = KPTX_OPND_PAIR;
    o->n_elems = 2;
    o->elems = kptx_arena_memdup(ps->a, pair, sizeof pair);
    return o->elems ? 0 : kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
}

/* ---- instructions ---- */

/* "ld.param.u64" -> opcode "ld", modifiers ".param" ".u64" (interned words). */
static int split_opcode(kptx_parser *ps, kptx_instr *in, const kptx_token *w)
{
    unsigned n_mods = in->n_mods;
    const char *p = w->p, *end = w->p + w->len;
    while (p < end) {
        const char *q = p + 1;
        while (q < end && *q != '.')
            q++;
        const char *word = kptx_intern(&ps->words, ps->a, p, (size_t)(q - p));
        if (!word)
            return kptx_parse_fail(ps, w, KPTX_ENOMEM, "out of memory");
        if (!in->opcode) {
            in->opcode = word;
        } else {
            if (n_mods == sizeof ps->mods / sizeof ps->mods[0])
                return kptx_parse_fail(ps, w, KPTX_ELIMIT, "too many instruction modifiers");
            ps->mods[n_mods++] = word;
        }
        p = q;
    }
    in->n_mods = n_mods;
    return 0;
}

static int parse_instr(kptx_parser *ps, kptx_instr *in)
{
    kptx_token t = kptx_lex_next(&ps->lx);
    int rc;
    if (kptx_tok_punct(&t, '@')) {
        t = kptx_lex_next(&ps->lx);
        if (kptx_tok_punct(&t, '!')) {
            in->guard_negated = true;
            t = kptx_lex_next(&ps->lx);
        }
        if (t.kind != TK_WORD)
            return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "expected a predicate after '@'");
        in->guard = kptx_arena_strndup(ps->a, t.p, t.len);
        if (!in->guard)
            return kptx_parse_fail(ps, &t, KPTX_ENOMEM, "out of memory");
        t = kptx_lex_next(&ps->lx);
    }
    if (t.kind != TK_WORD || t.p[0] == '%')
        return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "expected an instruction");
    if ((rc = split_opcode(ps, in, &t)))
        return rc;
    while (kptx_lex_peek(&ps->lx, 0)->kind == TK_DOTWORD) {
        kptx_token m = kptx_lex_next(&ps->lx);
        if ((rc = split_opcode(ps, in, &m)))
            return rc;
    }
    in->mods = kptx_arena_memdup(ps->a, ps->mods, in->n_mods * sizeof *in->mods);
    if (in->n_mods && !in->mods)
        return kptx_parse_fail(ps, &t, KPTX_ENOMEM, "out of memory");
    kptx_operand list = {0};
    if (kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), ';')) {
        kptx_lex_next(&ps->lx);
    } else if ((rc = parse_group(ps, &list, ';', 0))) {
        return rc;
    }
    in->n_ops = list.n_elems;
    in->ops = list.elems;
    return 0;
}

/* ---- statements ---- */

static bool is_body_directive(const kptx_token *t)
{
    return kptx_tok_is(t, ".loc") || kptx_tok_is(t, ".pragma") ||
           kptx_tok_is(t, ".callprototype") || kptx_tok_is(t, ".calltargets") ||
           kptx_tok_is(t, ".branchtargets");
}

static int parse_body_decl(kptx_parser *ps, unsigned line)
{
    kptx_var *vars;
    unsigned n;
    int rc = kptx_parse_decl(ps, &vars, &n);
    if (rc)
        return rc;
    for (unsigned i = 0; i < n; i++) {
        if (vars[i].linkage && vars[i].space != KPTX_SPACE_SHARED)
            return kptx_parse_fail(ps, NULL, KPTX_ESYNTAX, "linkage on '%s' inside a function",
                                   vars[i].name);
        kptx_stmt *s = stmt_add(ps, KPTX_STMT_VAR, line);
        if (!s)
            return ps->code;
        s->u.var = vars[i];
    }
    return 0;
}

static int parse_directive_stmt(kptx_parser *ps, unsigned line)
{
    kptx_token kw = kptx_lex_next(&ps->lx);
    const char *name = kptx_arena_strndup(ps->a, kw.p, kw.len);
    if (!name)
        return kptx_parse_fail(ps, &kw, KPTX_ENOMEM, "out of memory");
    const char *text;
    int rc = kptx_parse_directive_text(ps, name, &text);
    if (rc)
        return rc;
    kptx_stmt *s = stmt_add(ps, KPTX_STMT_DIRECTIVE, line);
    if (!s)
        return ps->code;
    s->u.dir.name = name;
    s->u.dir.text = text;
    return 0;
}

static int parse_stmt(kptx_parser *ps, unsigned *depth, bool *done)
{
    const kptx_token *t = kptx_lex_peek(&ps->lx, 0);
    unsigned line = t->line;
    if (kptx_tok_punct(t, '{') || kptx_tok_punct(t, '}')) {
        kptx_token b = kptx_lex_next(&ps->lx);
        if (b.punct == '}' && *depth == 0) {
            *done = true;
            return 0;
        }
        if (b.punct == '{' && *depth == MAX_BLOCK_DEPTH)
            return kptx_parse_fail(ps, &b, KPTX_ELIMIT, "blocks nested too deeply");
        *depth += b.punct == '{' ? 1 : -1u;
        return stmt_add(ps, b.punct == '{' ? KPTX_STMT_BLOCK_BEGIN : KPTX_STMT_BLOCK_END, line)
                   ? 0 : ps->code;
    }
    if (t->kind == TK_DOTWORD) {
        if (is_body_directive(t))
            return parse_directive_stmt(ps, line);
        return parse_body_decl(ps, line);
    }
    if (t->kind == TK_WORD && kptx_tok_punct(kptx_lex_peek(&ps->lx, 1), ':')) {
        kptx_token l = kptx_lex_next(&ps->lx);
        kptx_lex_next(&ps->lx);
        if (memchr(l.p, '.', l.len) || l.p[0] == '%')
            return kptx_parse_fail(ps, &l, KPTX_ESYNTAX, "bad label name");
        kptx_stmt *s = stmt_add(ps, KPTX_STMT_LABEL, line);
        if (!s)
            return ps->code;
        s->u.label = kptx_arena_strndup(ps->a, l.p, l.len);
        return s->u.label ? 0 : kptx_parse_fail(ps, &l, KPTX_ENOMEM, "out of memory");
    }
    if (t->kind == TK_EOF)
        return kptx_parse_fail(ps, t, KPTX_ESYNTAX, "unterminated function body");
    kptx_instr in = {0};
    int rc = parse_instr(ps, &in);
    if (rc)
        return rc;
    kptx_stmt *s = stmt_add(ps, KPTX_STMT_INSTR, line);
    if (!s)
        return ps->code;
    s->u.instr = in;
    return 0;
}

/* ---- register names without '%' ---- */

static void reclassify(kptx_operand *o, const kptx_reg_set *rs)
{
    if (o->kind == KPTX_OPND_SYMBOL && !o->has_offset && kptx_reg_set_has(rs, o->name))
        o->kind = KPTX_OPND_REG;
    for (unsigned i = 0; i < o->n_elems; i++)
        reclassify(&o->elems[i], rs);
}

/* Names of registers may lack the '%': operands that name a declared register are
 * registers, not symbols. Only done when such declarations exist (rare). */
static int classify_plain_registers(kptx_parser *ps, kptx_function *fn)
{
    kptx_reg_set rs;
    if (kptx_reg_set_build(fn, &rs))
        return kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
    for (unsigned i = 0; rs.any_plain && i < fn->n_stmts; i++) {
        if (fn->stmts[i].kind != KPTX_STMT_INSTR)
            continue;
        kptx_instr *in = &fn->stmts[i].u.instr;
        for (unsigned k = 0; k < in->n_ops; k++)
            reclassify(&in->ops[k], &rs);
    }
    kptx_reg_set_free(&rs);
    return 0;
}

int kptx_parse_body(kptx_parser *ps, kptx_function *fn)
{
    ps->n_stmts = 0;
    unsigned depth = 0;
    bool done = false;
    while (!done) {
        int rc = parse_stmt(ps, &depth, &done);
        if (rc)
            return rc;
    }
    fn->n_stmts = (unsigned)ps->n_stmts;
    fn->stmts = kptx_arena_memdup(ps->a, ps->stmts, ps->n_stmts * sizeof *fn->stmts);
    if (ps->n_stmts && !fn->stmts)
        return kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
    return classify_plain_registers(ps, fn);
}
