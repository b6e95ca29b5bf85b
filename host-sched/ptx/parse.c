/* The PTX parser, module level: directives, module variables and function headers.
 * Bodies are parsed in parse_body.c, declarations in parse_var.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

#define MAX_PERF_DIRECTIVES 32
#define MAX_PARAMS 65536

int kptx_parse_fail(kptx_parser *ps, const kptx_token *t, int code, const char *fmt, ...)
{
    if (ps->code)
        return ps->code;
    if (t && t->kind == TK_ERROR) {
        ps->code = ps->lx.code;     /* the lexer has described it already */
        return ps->code;
    }
    ps->code = code;
    if (!ps->err)
        return code;
    char msg[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (t && t->kind == TK_EOF)
        kptx_fail(ps->err, code, t->line, t->col, "%s (found end of input)", msg);
    else if (t)
        kptx_fail(ps->err, code, t->line, t->col, "%s (found '%.*s')", msg,
                  (int)(t->len > 32 ? 32 : t->len), t->p);
    else
        kptx_fail(ps->err, code, 0, 0, "%s", msg);
    return code;
}

int kptx_expect_punct(kptx_parser *ps, char c, const char *what)
{
    kptx_token t = kptx_lex_next(&ps->lx);
    if (!kptx_tok_punct(&t, c))
        return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "expected %s", what);
    return 0;
}

/* Items are collected in a malloc'd vector and copied into the arena at the end. */
typedef struct item_vec {
    kptx_item *v;
    size_t n, cap;
} item_vec;

static kptx_item *item_add(kptx_parser *ps, item_vec *iv)
{
    if (!kptx_grow_array(&iv->v, &iv->cap, iv->n, sizeof *iv->v, 64)) {
        kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
        return NULL;
    }
    kptx_item *it = &iv->v[iv->n++];
    memset(it, 0, sizeof *it);
    return it;
}

/* "( param, param, ... )" of .param (or .reg for functions) declarations. */
static int parse_param_list(kptx_parser *ps, kptx_var **out, unsigned *n_out)
{
    int rc = kptx_expect_punct(ps, '(', "'('");
    if (rc)
        return rc;
    kptx_var *list = NULL;
    unsigned n = 0, cap = 0;
    if (kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), ')')) {
        kptx_lex_next(&ps->lx);
        *out = NULL;
        *n_out = 0;
        return 0;
    }
    for (;;) {
        if (n == cap) {
            if (cap >= MAX_PARAMS)
                return kptx_parse_fail(ps, kptx_lex_peek(&ps->lx, 0), KPTX_ELIMIT,
                                       "too many parameters");
            unsigned ncap = cap ? cap * 2 : 8;
            kptx_var *bigger = kptx_arena_alloc(ps->a, ncap * sizeof *bigger);
            if (!bigger)
                return kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
            if (n)
                memcpy(bigger, list, n * sizeof *bigger);
            list = bigger;
            cap = ncap;
        }
        const kptx_token *t = kptx_lex_peek(&ps->lx, 0);
        if (t->kind != TK_DOTWORD)
            return kptx_parse_fail(ps, t, KPTX_ESYNTAX, "expected a parameter declaration");
        rc = kptx_parse_param(ps, &list[n]);
        if (rc)
            return rc;
        if (list[n].space != KPTX_SPACE_PARAM && list[n].space != KPTX_SPACE_REG)
            return kptx_parse_fail(ps, t, KPTX_ESYNTAX, "parameters must be .param or .reg");
        n++;
        kptx_token sep = kptx_lex_next(&ps->lx);
        if (kptx_tok_punct(&sep, ')'))
            break;
        if (!kptx_tok_punct(&sep, ','))
            return kptx_parse_fail(ps, &sep, KPTX_ESYNTAX, "expected ',' or ')' in parameters");
    }
    *out = list;
    *n_out = n;
    return 0;
}

/* Performance directives between the parameters and the body: .maxntid 256, 1, 1 ... */
static int parse_perf(kptx_parser *ps, kptx_function *fn)
{
    kptx_directive tmp[MAX_PERF_DIRECTIVES];
    unsigned n = 0;
    while (kptx_lex_peek(&ps->lx, 0)->kind == TK_DOTWORD) {
        kptx_token t = kptx_lex_next(&ps->lx);
        if (n == MAX_PERF_DIRECTIVES)
            return kptx_parse_fail(ps, &t, KPTX_ELIMIT, "too many function directives");
        tmp[n].name = kptx_arena_strndup(ps->a, t.p, t.len);
        if (!tmp[n].name)
            return kptx_parse_fail(ps, &t, KPTX_ENOMEM, "out of memory");
        int rc = kptx_parse_directive_text(ps, tmp[n].name, &tmp[n].text);
        if (rc)
            return rc;
        n++;
    }
    fn->n_perf = n;
    fn->perf = kptx_arena_memdup(ps->a, tmp, n * sizeof tmp[0]);
    return n && !fn->perf ? kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory") : 0;
}

/* [linkage] .entry|.func [(rets)] name [(params)] perf* ( ';' | '{' body '}' ) */
static int parse_function(kptx_parser *ps, kptx_function *fn, const char *linkage)
{
    kptx_token kw = kptx_lex_next(&ps->lx);
    fn->is_entry = kptx_tok_is(&kw, ".entry");
    fn->linkage = linkage;
    fn->line = kw.line;
    int rc;
    if (!fn->is_entry && kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '(') &&
        (rc = parse_param_list(ps, &fn->rets, &fn->n_rets)))
        return rc;
    kptx_token name = kptx_lex_next(&ps->lx);
    if (name.kind != TK_WORD || memchr(name.p, '.', name.len))
        return kptx_parse_fail(ps, &name, KPTX_ESYNTAX, "expected a function name");
    fn->name = kptx_arena_strndup(ps->a, name.p, name.len);
    if (!fn->name)
        return kptx_parse_fail(ps, &name, KPTX_ENOMEM, "out of memory");
    if (kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), '(') &&
        (rc = parse_param_list(ps, &fn->params, &fn->n_params)))
        return rc;
    if ((rc = parse_perf(ps, fn)))
        return rc;
    if (fn->is_entry && (rc = kptx_layout_params(ps, fn)))
        return rc;
    kptx_token t = kptx_lex_next(&ps->lx);
    if (kptx_tok_punct(&t, ';'))
        return 0;
    if (!kptx_tok_punct(&t, '{'))
        return kptx_parse_fail(ps, &t, KPTX_ESYNTAX, "expected '{' or ';' after a function header");
    fn->has_body = true;
    return kptx_parse_body(ps, fn);
}

static const char *linkage_word(const kptx_token *t)
{
    static const char *const words[] = {".visible", ".extern", ".weak", ".common"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (kptx_tok_is(t, words[i]))
            return words[i];
    return NULL;
}

/* A module directive kept as an item; .version, .target and .address_size also fill the
 * module's fields. */
static int parse_module_directive(kptx_parser *ps, item_vec *iv, const kptx_token *t)
{
    kptx_item *it = item_add(ps, iv);
    if (!it)
        return ps->code;
    it->kind = KPTX_ITEM_DIRECTIVE;
    kptx_token kw = kptx_lex_next(&ps->lx);
    it->u.dir.name = kptx_arena_strndup(ps->a, kw.p, kw.len);
    if (!it->u.dir.name)
        return kptx_parse_fail(ps, t, KPTX_ENOMEM, "out of memory");
    int rc = kptx_parse_directive_text(ps, it->u.dir.name, &it->u.dir.text);
    if (rc)
        return rc;
    kptx_module *m = ps->m;
    const char *text = it->u.dir.text;
    if (strcmp(it->u.dir.name, ".version") == 0) {
        if (sscanf(text, "%u.%u", &m->version_major, &m->version_minor) != 2)
            return kptx_parse_fail(ps, t, KPTX_ESYNTAX, "malformed .version");
    } else if (strcmp(it->u.dir.name, ".target") == 0 && !m->target) {
        size_t n = strcspn(text, ", ");
        m->target = kptx_arena_strndup(ps->a, text, n);
        if (!m->target)
            return kptx_parse_fail(ps, t, KPTX_ENOMEM, "out of memory");
    } else if (strcmp(it->u.dir.name, ".address_size") == 0) {
        m->address_size = (unsigned)strtoul(text, NULL, 10);
        if (m->address_size != 32 && m->address_size != 64)
            return kptx_parse_fail(ps, t, KPTX_ESYNTAX, ".address_size must be 32 or 64");
    }
    return 0;
}

static bool is_module_directive(const kptx_token *t)
{
    static const char *const names[] = {".version", ".target", ".address_size", ".file",
                                        ".section", ".pragma", ".alias"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (kptx_tok_is(t, names[i]))
            return true;
    return false;
}

static int parse_module_vars(kptx_parser *ps, item_vec *iv)
{
    kptx_var *vars;
    unsigned n;
    int rc = kptx_parse_decl(ps, &vars, &n);
    if (rc)
        return rc;
    for (unsigned i = 0; i < n; i++) {
        kptx_item *it = item_add(ps, iv);
        if (!it)
            return ps->code;
        it->kind = KPTX_ITEM_VAR;
        it->u.var = vars[i];
        if (vars[i].space == KPTX_SPACE_REG || vars[i].space == KPTX_SPACE_PARAM)
            return kptx_parse_fail(ps, NULL, KPTX_ESYNTAX, "%s variable '%s' at module scope",
                                   kptx_space_name(vars[i].space), vars[i].name);
    }
    return 0;
}

static int parse_item(kptx_parser *ps, item_vec *iv)
{
    const kptx_token *t = kptx_lex_peek(&ps->lx, 0);
    if (t->kind != TK_DOTWORD)
        return kptx_parse_fail(ps, t, KPTX_ESYNTAX, "expected a directive at module scope");
    if (is_module_directive(t))
        return parse_module_directive(ps, iv, t);
    const char *linkage = linkage_word(t);
    const kptx_token *kw = kptx_lex_peek(&ps->lx, linkage ? 1 : 0);
    if (kptx_tok_is(kw, ".entry") || kptx_tok_is(kw, ".func")) {
        if (linkage)
            kptx_lex_next(&ps->lx);
        kptx_item *it = item_add(ps, iv);
        if (!it)
            return ps->code;
        it->kind = KPTX_ITEM_FUNCTION;
        return parse_function(ps, &it->u.fn, linkage);
    }
    if (linkage || kptx_space_of(t->p, t->len) != KPTX_SPACE_NONE)
        return parse_module_vars(ps, iv);
    return kptx_parse_fail(ps, t, KPTX_ESYNTAX, "unknown directive at module scope");
}

static int parse_module(kptx_parser *ps)
{
    item_vec iv = {0};
    while (kptx_lex_peek(&ps->lx, 0)->kind != TK_EOF) {
        if (parse_item(ps, &iv)) {
            free(iv.v);
            return ps->code;
        }
    }
    if (!ps->m->version_major || !ps->m->target) {
        free(iv.v);
        return kptx_parse_fail(ps, kptx_lex_peek(&ps->lx, 0), KPTX_ESYNTAX,
                               "module lacks .version or .target");
    }
    ps->m->n_items = (unsigned)iv.n;
    ps->m->items = kptx_arena_memdup(ps->a, iv.v, iv.n * sizeof *iv.v);
    free(iv.v);
    if (iv.n && !ps->m->items)
        return kptx_parse_fail(ps, NULL, KPTX_ENOMEM, "out of memory");
    return 0;
}

int kptx_parse(const char *text, size_t len, kptx_module **out, kptx_error *err)
{
    if (out)
        *out = NULL;
    if (!text || !out)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "NULL argument");
    if (len > KPTX_MAX_TEXT)
        return kptx_fail(err, KPTX_ELIMIT, 0, 0, "PTX text of %zu bytes exceeds the limit", len);
    kptx_module *m = calloc(1, sizeof *m);
    kptx_arena *a = kptx_arena_new();
    if (!m || !a) {
        free(m);
        kptx_arena_free(a);
        return kptx_fail(err, KPTX_ENOMEM, 0, 0, "out of memory");
    }
    m->arena = a;
    m->address_size = 32;   /* PTX default without .address_size */
    kptx_parser ps = {.m = m, .a = a, .err = err};
    kptx_lex_init(&ps.lx, text, len, err);
    int rc = parse_module(&ps);
    free(ps.ops);
    free(ps.stmts);
    kptx_intern_free(&ps.words);
    if (rc) {
        kptx_module_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void kptx_module_free(kptx_module *m)
{
    if (!m)
        return;
    kptx_arena_free(m->arena);
    free(m);
}

const kptx_function *kptx_find_function(const kptx_module *m, const char *name)
{
    if (!m || !name)
        return NULL;
    const kptx_function *proto = NULL;
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_item *it = &m->items[i];
        if (it->kind != KPTX_ITEM_FUNCTION || strcmp(it->u.fn.name, name) != 0)
            continue;
        if (it->u.fn.has_body)
            return &it->u.fn;
        if (!proto)
            proto = &it->u.fn;
    }
    return proto;
}
