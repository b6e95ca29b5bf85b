/* Directives whose arguments are kept as text: each has a known shape, so that the parser
 * knows exactly where it ends (.loc and .file have no terminating ';'). The text keeps
 * every token; tokens are separated by one space, or a line break where the source had
 * one, with no space before , ; : ) ] or after ( [ and none around + and -. */
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

typedef struct text_builder {
    kptx_buf buf;
    char last;      /* the previous token's punctuation character, or 0 */
    bool any;
} text_builder;

static void tb_add(text_builder *tb, const kptx_token *t)
{
    char p = t->kind == TK_PUNCT ? t->punct : 0;
    if (tb->any) {
        if (t->nl_before)
            kptx_buf_putc(&tb->buf, '\n');
        else if (!(p && strchr(",;:)]+-", p)) && !(tb->last && strchr("([+-", tb->last)))
            kptx_buf_putc(&tb->buf, ' ');
    }
    kptx_buf_put(&tb->buf, t->p, t->len);
    tb->last = p;
    tb->any = true;
}

/* Consumes the next token into the text if it has kind k (any punctuation for TK_PUNCT
 * when c is 0); returns false (and records an error) otherwise. */
static bool take(kptx_parser *ps, text_builder *tb, kptx_tok_kind k, char c, const char *what)
{
    const kptx_token *t = kptx_lex_peek(&ps->lx, 0);
    if (t->kind != k || (k == TK_PUNCT && c && t->punct != c)) {
        kptx_parse_fail(ps, t, KPTX_ESYNTAX, "expected %s", what);
        return false;
    }
    kptx_token tok = kptx_lex_next(&ps->lx);
    tb_add(tb, &tok);
    return true;
}

static bool peek_punct(kptx_parser *ps, char c)
{
    return kptx_tok_punct(kptx_lex_peek(&ps->lx, 0), c);
}

/* .loc FILE LINE COL [, function_name LABEL[+N]] [, inlined_at FILE LINE COL] ... */
static bool parse_loc(kptx_parser *ps, text_builder *tb)
{
    for (int i = 0; i < 3; i++)
        if (!take(ps, tb, TK_INT, 0, "a number in .loc"))
            return false;
    while (peek_punct(ps, ',') && !kptx_lex_peek(&ps->lx, 0)->nl_before) {
        take(ps, tb, TK_PUNCT, ',', ",");
        const kptx_token *kw = kptx_lex_peek(&ps->lx, 0);
        if (kw->kind == TK_WORD && kptx_tok_is(kw, "function_name")) {
            if (!take(ps, tb, TK_WORD, 0, "function_name") ||
                !take(ps, tb, TK_WORD, 0, "a label after function_name"))
                return false;
            if (peek_punct(ps, '+') &&
                (!take(ps, tb, TK_PUNCT, '+', "+") || !take(ps, tb, TK_INT, 0, "an offset")))
                return false;
        } else if (kw->kind == TK_WORD && kptx_tok_is(kw, "inlined_at")) {
            take(ps, tb, TK_WORD, 0, "inlined_at");
            for (int i = 0; i < 3; i++)
                if (!take(ps, tb, TK_INT, 0, "a number after inlined_at"))
                    return false;
        } else {
            kptx_parse_fail(ps, kw, KPTX_ESYNTAX, "expected function_name or inlined_at");
            return false;
        }
    }
    return true;
}

/* .file N "name" [, timestamp, size] */
static bool parse_file(kptx_parser *ps, text_builder *tb)
{
    if (!take(ps, tb, TK_INT, 0, "a file number") || !take(ps, tb, TK_STRING, 0, "a file name"))
        return false;
    if (peek_punct(ps, ',') && !kptx_lex_peek(&ps->lx, 0)->nl_before)
        return take(ps, tb, TK_PUNCT, ',', ",") && take(ps, tb, TK_INT, 0, "a timestamp") &&
               take(ps, tb, TK_PUNCT, ',', ",") && take(ps, tb, TK_INT, 0, "a file size");
    return true;
}

/* .pragma "a" [, "b"]* ;   (the ';' is not part of the text) */
static bool parse_pragma(kptx_parser *ps, text_builder *tb)
{
    if (!take(ps, tb, TK_STRING, 0, "a string after .pragma"))
        return false;
    while (peek_punct(ps, ','))
        if (!take(ps, tb, TK_PUNCT, ',', ",") || !take(ps, tb, TK_STRING, 0, "a string"))
            return false;
    return kptx_expect_punct(ps, ';', "';' after .pragma") == 0;
}

/* Everything up to ';' (not included): .callprototype, .calltargets, .branchtargets,
 * .alias. Braces are not allowed inside. */
static bool parse_to_semicolon(kptx_parser *ps, text_builder *tb)
{
    for (;;) {
        const kptx_token *t = kptx_lex_peek(&ps->lx, 0);
        if (t->kind == TK_EOF || t->kind == TK_ERROR || kptx_tok_punct(t, '{') ||
            kptx_tok_punct(t, '}')) {
            kptx_parse_fail(ps, t, KPTX_ESYNTAX, "expected ';' to end the directive");
            return false;
        }
        kptx_token tok = kptx_lex_next(&ps->lx);
        if (kptx_tok_punct(&tok, ';'))
            return true;
        tb_add(tb, &tok);
    }
}

/* .section NAME { contents } : the contents are label definitions and data lines. */
static bool parse_section(kptx_parser *ps, text_builder *tb)
{
    if (!take(ps, tb, TK_DOTWORD, 0, "a section name") ||
        !take(ps, tb, TK_PUNCT, '{', "'{' after the section name"))
        return false;
    for (;;) {
        const kptx_token *t = kptx_lex_peek(&ps->lx, 0);
        if (t->kind == TK_EOF || t->kind == TK_ERROR || kptx_tok_punct(t, '{')) {
            kptx_parse_fail(ps, t, KPTX_ESYNTAX, "unterminated .section");
            return false;
        }
        kptx_token tok = kptx_lex_next(&ps->lx);
        tb_add(tb, &tok);
        if (kptx_tok_punct(&tok, '}'))
            return true;
    }
}

/* A list of numbers, maybe empty: .maxntid 256, 1, 1   .noreturn   .maxnreg 32 */
static bool parse_numbers(kptx_parser *ps, text_builder *tb)
{
    if (kptx_lex_peek(&ps->lx, 0)->kind != TK_INT)
        return true;
    take(ps, tb, TK_INT, 0, "a number");
    while (peek_punct(ps, ','))
        if (!take(ps, tb, TK_PUNCT, ',', ",") || !take(ps, tb, TK_INT, 0, "a number"))
            return false;
    return true;
}

/* .target sm_90a, debug */
static bool parse_words(kptx_parser *ps, text_builder *tb)
{
    if (!take(ps, tb, TK_WORD, 0, "a target name"))
        return false;
    while (peek_punct(ps, ','))
        if (!take(ps, tb, TK_PUNCT, ',', ",") || !take(ps, tb, TK_WORD, 0, "a target name"))
            return false;
    return true;
}

int kptx_parse_directive_text(kptx_parser *ps, const char *name, const char **text)
{
    text_builder tb = {0};
    bool ok;
    if (strcmp(name, ".loc") == 0)
        ok = parse_loc(ps, &tb);
    else if (strcmp(name, ".file") == 0)
        ok = parse_file(ps, &tb);
    else if (strcmp(name, ".pragma") == 0)
        ok = parse_pragma(ps, &tb);
    else if (kptx_directive_has_semicolon(name))
        ok = parse_to_semicolon(ps, &tb);
    else if (strcmp(name, ".section") == 0)
        ok = parse_section(ps, &tb);
    else if (strcmp(name, ".version") == 0)
        ok = take(ps, &tb, TK_FLOAT, 0, "a version number");
    else if (strcmp(name, ".target") == 0)
        ok = parse_words(ps, &tb);
    else if (strcmp(name, ".address_size") == 0)
        ok = take(ps, &tb, TK_INT, 0, "an address size");
    else
        ok = parse_numbers(ps, &tb);
    if (!ok) {
        free(tb.buf.p);
        return ps->code;
    }
    *text = kptx_arena_strndup(ps->a, tb.buf.p ? tb.buf.p : "", tb.buf.len);
    bool oom = tb.buf.oom || !*text;
    free(tb.buf.p);
    return oom ? kptx_parse_fail(ps, kptx_lex_peek(&ps->lx, 0), KPTX_ENOMEM, "out of memory") : 0;
}
