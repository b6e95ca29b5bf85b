/* The PTX lexer: turns text into tokens on demand, with a three-token lookahead.
 * Comments and whitespace are skipped; whether a line break preceded a token is kept,
 * because a few directives (.loc, .section contents) are line-structured. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* Character classes: 1 identifier start, 2 identifier character, 4 punctuation. */
#define L 3
#define D 2
#define P 4
static const unsigned char char_class[256] = {
    ['{'] = P, ['}'] = P, ['['] = P, [']'] = P, ['('] = P, [')'] = P, [','] = P, [';'] = P,
    [':'] = P, ['@'] = P, ['!'] = P, ['|'] = P, ['+'] = P, ['-'] = P, ['='] = P, ['<'] = P,
    ['>'] = P,
    ['0'] = D, ['1'] = D, ['2'] = D, ['3'] = D, ['4'] = D, ['5'] = D, ['6'] = D, ['7'] = D,
    ['8'] = D, ['9'] = D, ['_'] = L, ['$'] = L,
    ['a'] = L, ['b'] = L, ['c'] = L, ['d'] = L, ['e'] = L, ['f'] = L, ['g'] = L, ['h'] = L,
    ['i'] = L, ['j'] = L, ['k'] = L, ['l'] = L, ['m'] = L, ['n'] = L, ['o'] = L, ['p'] = L,
    ['q'] = L, ['r'] = L, ['s'] = L, ['t'] = L, ['u'] = L, ['v'] = L, ['w'] = L, ['x'] = L,
    ['y'] = L, ['z'] = L,
    ['A'] = L, ['B'] = L, ['C'] = L, ['D'] = L, ['E'] = L, ['F'] = L, ['G'] = L, ['H'] = L,
    ['I'] = L, ['J'] = L, ['K'] = L, ['L'] = L, ['M'] = L, ['N'] = L, ['O'] = L, ['P'] = L,
    ['Q'] = L, ['R'] = L, ['S'] = L, ['T'] = L, ['U'] = L, ['V'] = L, ['W'] = L, ['X'] = L,
    ['Y'] = L, ['Z'] = L,
};
#undef L
#undef D
#undef P

static inline bool is_ident_start(unsigned char c)
{
    return char_class[c] & 1;
}

static inline bool is_ident_char(unsigned char c)
{
    return char_class[c] & 2;
}

static int hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void kptx_lex_init(kptx_lexer *lx, const char *text, size_t len, kptx_error *err)
{
    memset(lx, 0, sizeof *lx);
    lx->cur = text;
    lx->end = text + len;
    lx->line_start = text;
    lx->line = 1;
    lx->err = err;
}

static void lex_error(kptx_lexer *lx, kptx_token *t, int code, const char *what)
{
    t->kind = TK_ERROR;
    if (!lx->code) {
        lx->code = code;
        kptx_fail(lx->err, code, t->line, t->col, "%s", what);
    }
    lx->cur = lx->end;  /* every later token is EOF-like: stop scanning */
}

/* Skips whitespace and comments; false (with t set to an error) on an open comment. */
static bool skip_space(kptx_lexer *lx, kptx_token *t)
{
    const char *p = lx->cur, *end = lx->end;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n') {
            t->nl_before = true;
            lx->line++;
            lx->line_start = ++p;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            p++;
        } else if (c == '/' && p + 1 < end && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
        } else if (c == '/' && p + 1 < end && p[1] == '*') {
            const char *q = p + 2;
            for (; q + 1 < end && !(q[0] == '*' && q[1] == '/'); q++) {
                if (*q == '\n') {
                    t->nl_before = true;
                    lx->line++;
                    lx->line_start = q + 1;
                }
            }
            if (q + 1 >= end) {
                t->line = lx->line;
                t->col = (unsigned)(p - lx->line_start) + 1;
                lx->cur = p;
                lex_error(lx, t, KPTX_ESYNTAX, "unterminated /* comment");
                return false;
            }
            p = q + 2;
        } else {
            break;
        }
    }
    lx->cur = p;
    return true;
}

/* Identifier characters, then ".suffix" and "::suffix" parts (an instruction's modifiers,
 * a special register's component). */
static const char *scan_word(const char *p, const char *end)
{
    while (p < end && is_ident_char((unsigned char)*p))
        p++;
    for (;;) {
        if (p + 1 < end && *p == '.' && is_ident_char((unsigned char)p[1]))
            p += 1;
        else if (p + 2 < end && p[0] == ':' && p[1] == ':' && is_ident_char((unsigned char)p[2]))
            p += 2;
        else
            break;
        while (p < end && is_ident_char((unsigned char)*p))
            p++;
    }
    return p;
}

static void lex_hex_float(kptx_lexer *lx, kptx_token *t, const char *p, unsigned digits)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < digits; i++) {
        int d = p + 2 + i < lx->end ? hex_digit((unsigned char)p[2 + i]) : -1;
        if (d < 0) {
            lex_error(lx, t, KPTX_ESYNTAX, "malformed hexadecimal float literal");
            return;
        }
        v = v << 4 | (uint64_t)d;
    }
    t->kind = TK_FLOAT;
    t->fbits = v;
    t->fwidth = digits == 8 ? 32 : 64;
    lx->cur = p + 2 + digits;
}

static void lex_decimal_float(kptx_lexer *lx, kptx_token *t, const char *p)
{
    const char *q = p;
    while (q < lx->end && (is_ident_char((unsigned char)*q) || *q == '.' ||
                           ((*q == '+' || *q == '-') && (q[-1] == 'e' || q[-1] == 'E'))))
        q++;
    char tmp[64];
    size_t n = (size_t)(q - p);
    if (n >= sizeof tmp) {
        lex_error(lx, t, KPTX_ESYNTAX, "malformed float literal");
        return;
    }
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    char *e;
    double d = strtod(tmp, &e);
    if (*e != '\0' || !isfinite(d)) {
        lex_error(lx, t, KPTX_ESYNTAX, "malformed float literal");
        return;
    }
    t->kind = TK_FLOAT;
    memcpy(&t->fbits, &d, sizeof d);
    t->fwidth = 64;
    lx->cur = q;
}

/* Integer literal: hex 0x, binary 0b, octal 0..., decimal; optional U suffix. Values that
 * do not fit 64 bits are errors; those above INT64_MAX wrap (two's complement). */
static void lex_int(kptx_lexer *lx, kptx_token *t, const char *p)
{
    unsigned base = 10;
    const char *q = p;
    if (q + 1 < lx->end && q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) {
        base = 16;
        q += 2;
    } else if (q + 1 < lx->end && q[0] == '0' && (q[1] == 'b' || q[1] == 'B')) {
        base = 2;
        q += 2;
    } else if (q[0] == '0' && q + 1 < lx->end && q[1] >= '0' && q[1] <= '9') {
        base = 8;
        q += 1;
    }
    const char *digits = q;
    uint64_t v = 0;
    bool overflow = false;
    for (; q < lx->end; q++) {
        int d = hex_digit((unsigned char)*q);
        if (d < 0 || (unsigned)d >= base)
            break;
        if (v > (UINT64_MAX - (uint64_t)d) / base)
            overflow = true;
        v = v * base + (uint64_t)d;
    }
    if (base != 10 && base != 8 && q == digits) {
        lex_error(lx, t, KPTX_ESYNTAX, "integer literal without digits");
        return;
    }
    if (q < lx->end && *q == 'U')
        q++;
    if (overflow || (q < lx->end && is_ident_char((unsigned char)*q))) {
        lex_error(lx, t, KPTX_ESYNTAX, overflow ? "integer literal does not fit 64 bits"
                                                : "malformed integer literal");
        return;
    }
    t->kind = TK_INT;
    t->ival = (int64_t)v;
    lx->cur = q;
}

static void lex_number(kptx_lexer *lx, kptx_token *t, const char *p)
{
    if (p + 1 < lx->end && p[0] == '0' && (p[1] == 'f' || p[1] == 'F')) {
        lex_hex_float(lx, t, p, 8);
        return;
    }
    if (p + 1 < lx->end && p[0] == '0' && (p[1] == 'd' || p[1] == 'D')) {
        lex_hex_float(lx, t, p, 16);
        return;
    }
    const char *q = p;
    while (q < lx->end && *q >= '0' && *q <= '9')
        q++;
    bool hexish = q - p == 1 && q < lx->end && (*q == 'x' || *q == 'X' || *q == 'b' || *q == 'B');
    if (!hexish && q < lx->end &&
        ((*q == '.' && q + 1 < lx->end && q[1] >= '0' && q[1] <= '9') ||
         *q == 'e' || *q == 'E')) {
        lex_decimal_float(lx, t, p);
        return;
    }
    lex_int(lx, t, p);
}

static void lex_string(kptx_lexer *lx, kptx_token *t, const char *p)
{
    const char *q = p + 1;
    /* A NUL would end the string when it is printed back: refuse it here. */
    while (q < lx->end && *q != '"' && *q != '\n' && *q != '\0') {
        if (*q == '\\' && q + 1 < lx->end && q[1] != '\n' && q[1] != '\0')
            q++;
        q++;
    }
    if (q < lx->end && *q == '\0') {
        lex_error(lx, t, KPTX_ESYNTAX, "NUL byte in a string");
        return;
    }
    if (q >= lx->end || *q != '"') {
        lex_error(lx, t, KPTX_ESYNTAX, "unterminated string");
        return;
    }
    t->kind = TK_STRING;
    lx->cur = q + 1;
}

static void lex_one(kptx_lexer *lx, kptx_token *t)
{
    t->punct = 0;
    t->nl_before = false;
    t->len = 0;
    t->fwidth = 0;
    t->ival = 0;
    t->p = lx->cur;
    t->line = lx->line;
    t->col = 0;
    if (lx->code) {
        t->kind = TK_ERROR;
        return;
    }
    if (!skip_space(lx, t))
        return;
    const char *p = lx->cur;
    t->p = p;
    t->line = lx->line;
    t->col = (unsigned)(p - lx->line_start) + 1;
    if (p >= lx->end) {
        t->kind = TK_EOF;
        return;
    }
    unsigned char c = (unsigned char)*p;
    if (is_ident_start(c) ||
        (c == '%' && p + 1 < lx->end && is_ident_start((unsigned char)p[1]))) {
        t->kind = TK_WORD;
        lx->cur = scan_word(p + 1, lx->end);
    } else if (c == '.' && p + 1 < lx->end && is_ident_start((unsigned char)p[1])) {
        t->kind = TK_DOTWORD;
        lx->cur = scan_word(p + 1, lx->end);
    } else if (c >= '0' && c <= '9') {
        lex_number(lx, t, p);
    } else if (c == '"') {
        lex_string(lx, t, p);
    } else if (char_class[c] & 4) {
        t->kind = TK_PUNCT;
        t->punct = (char)c;
        lx->cur = p + 1;
    } else {
        lex_error(lx, t, KPTX_ESYNTAX, c < 0x20 || c >= 0x7f ? "unexpected byte in PTX text"
                                                             : "unexpected character");
        return;
    }
    if (t->kind == TK_ERROR)
        return;
    size_t len = (size_t)(lx->cur - p);
    if (len > KPTX_MAX_TOKEN) {
        lex_error(lx, t, KPTX_ELIMIT, "token longer than 65536 bytes");
        return;
    }
    t->len = (uint32_t)len;
}

void kptx_lex_fill(kptx_lexer *lx, unsigned k)
{
    while (lx->n_la <= k) {
        lex_one(lx, &lx->la[(lx->la_head + lx->n_la) & 3]);
        lx->n_la++;
    }
}
