/* What the sim reads of a module's PTX text: the names of its .entry directives and its
 * module-scope .global and .const variables with their sizes. It is a scanner, not a
 * parser: it skips comments, strings and every {...} block (function bodies, .section
 * contents), follows parentheses, and reads declarations only at module scope. Anything
 * else in the text is ignored, so the sim accepts PTX that ptxas would refuse. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sim_internal.h"

#define MAX_ENTRIES 4096
#define MAX_VARS 4096
#define MAX_DIMS 4
#define MAX_VAR_BYTES (1ull << 40)

typedef struct lexer {
    const char *text;
    size_t len, pos;
    unsigned line;
    const char *tok;    /* the current token; tok_len 0 at the end of the text */
    size_t tok_len;
    unsigned tok_line;
} lexer;

static int is_word(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '$' || ch == '%' || ch == '.';
}

static int scan_fail(const lexer *lx, kbackend_error *err, const char *what)
{
    return kbackend_fail(err, KBACKEND_EMODULE, "line %u: %s", lx->tok_line ? lx->tok_line : lx->line,
                      what);
}

/* Skips blanks and comments; KBACKEND_EMODULE for an unterminated comment. */
static int skip_space(lexer *lx, kbackend_error *err)
{
    while (lx->pos < lx->len) {
        char ch = lx->text[lx->pos];
        const char *rest = lx->text + lx->pos;
        size_t left = lx->len - lx->pos;
        if (ch == '\n') {
            lx->line++;
            lx->pos++;
        } else if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v') {
            lx->pos++;
        } else if (left >= 2 && rest[0] == '/' && rest[1] == '/') {
            while (lx->pos < lx->len && lx->text[lx->pos] != '\n')
                lx->pos++;
        } else if (left >= 2 && rest[0] == '/' && rest[1] == '*') {
            size_t i = 2;
            while (i + 1 < left && !(rest[i] == '*' && rest[i + 1] == '/'))
                lx->line += rest[i++] == '\n';
            if (i + 1 >= left)
                return scan_fail(lx, err, "unterminated comment");
            lx->pos += i + 2;
        } else {
            break;
        }
    }
    return 0;
}

/* Moves to the next token: a word (letters, digits, _ $ % .), a string, or one other
 * character. */
static int next(lexer *lx, kbackend_error *err)
{
    int rc = skip_space(lx, err);
    if (rc)
        return rc;
    lx->tok = lx->text + lx->pos;
    lx->tok_line = lx->line;
    size_t n = 0, left = lx->len - lx->pos;
    if (!left) {
        lx->tok_len = 0;
        return 0;
    }
    if (lx->tok[0] == '"') {
        for (n = 1; n < left && lx->tok[n] != '"' && lx->tok[n] != '\n'; n++)
            ;
        if (n == left || lx->tok[n] != '"')
            return scan_fail(lx, err, "unterminated string");
        n++;
    } else {
        while (n < left && is_word((unsigned char)lx->tok[n]))
            n++;
        if (!n)
            n = 1;
    }
    lx->pos += n;
    lx->tok_len = n;
    return 0;
}

static int is(const lexer *lx, const char *word)
{
    size_t n = strlen(word);
    return lx->tok_len == n && !memcmp(lx->tok, word, n);
}

/* Skips a {...} block whose '{' is the current token; ends on its '}'. */
static int skip_block(lexer *lx, kbackend_error *err)
{
    unsigned depth = 1;
    while (depth) {
        int rc = next(lx, err);
        if (rc)
            return rc;
        if (!lx->tok_len)
            return scan_fail(lx, err, "'{' without its '}'");
        depth += is(lx, "{");
        depth -= is(lx, "}");
    }
    return 0;
}

/* The current token as a NUL-terminated name that ksched_entry_validate accepts. */
static int take_name(lexer *lx, char buf[KSCHED_ENTRY_MAX + 1], const char *what,
                     kbackend_error *err)
{
    ksched_err e;
    if (!lx->tok_len)
        return kbackend_fail(err, KBACKEND_EMODULE, "line %u: %s without a name", lx->tok_line, what);
    size_t n = lx->tok_len <= KSCHED_ENTRY_MAX ? lx->tok_len : KSCHED_ENTRY_MAX;
    memcpy(buf, lx->tok, n);
    buf[n] = 0;
    if (lx->tok_len > KSCHED_ENTRY_MAX || ksched_entry_validate(buf, &e))
        return kbackend_fail(err, KBACKEND_EMODULE, "line %u: %s name '%s': %s", lx->tok_line, what,
                          buf, lx->tok_len > KSCHED_ENTRY_MAX ? "too long" : e.msg);
    return 0;
}

static int add_entry(sim_scan *sc, const char *name, kbackend_error *err)
{
    if (sc->n_entries == MAX_ENTRIES)
        return kbackend_fail(err, KBACKEND_EMODULE, "more than %d entries", MAX_ENTRIES);
    if (grow_array(&sc->entries, &sc->cap_entries, sc->n_entries + 1, sizeof(*sc->entries)) ||
        !(sc->entries[sc->n_entries] = strdup(name)))
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    sc->n_entries++;
    return 0;
}

/* ---- variable declarations ---- */

/* Bytes of one scalar of a PTX fundamental type, 0 for the opaque types (texture, sampler
 * and surface references hold no memory), -1 when the word is no type. */
static int type_bytes(const lexer *lx, int *is_float)
{
    static const struct { const char *name; int bytes; } types[] = {
        {".b8", 1}, {".u8", 1}, {".s8", 1}, {".b16", 2}, {".u16", 2}, {".s16", 2},
        {".f16", 2}, {".bf16", 2}, {".e4m3x2", 2}, {".e5m2x2", 2}, {".b32", 4}, {".u32", 4},
        {".s32", 4}, {".f32", 4}, {".f16x2", 4}, {".bf16x2", 4}, {".tf32", 4}, {".b64", 8},
        {".u64", 8}, {".s64", 8}, {".f64", 8}, {".b128", 16}, {".texref", 0},
        {".samplerref", 0}, {".surfref", 0},
    };
    *is_float = is(lx, ".f32") || is(lx, ".f64");
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (is(lx, types[i].name))
            return types[i].bytes;
    return -1;
}

/* An unsigned integer literal of n characters (decimal, 0x hex, 0b binary, 0 octal;
 * optional U suffix); -1 when it is none or does not fit 64 bits. */
static int number(const char *p, size_t n, uint64_t *out)
{
    if (n && (p[n - 1] == 'U' || p[n - 1] == 'u'))
        n--;
    unsigned base = 10;
    size_t i = 0;
    if (n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X' || p[1] == 'b' || p[1] == 'B')) {
        base = p[1] == 'x' || p[1] == 'X' ? 16 : 2;
        i = 2;
    } else if (n > 1 && p[0] == '0') {
        base = 8;
    }
    if (i >= n)
        return -1;
    uint64_t v = 0;
    for (; i < n; i++) {
        int ch = p[i], d = ch >= '0' && ch <= '9' ? ch - '0'
                         : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                         : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : 99;
        if ((unsigned)d >= base || v > (UINT64_MAX - (unsigned)d) / base)
            return -1;
        v = v * base + (unsigned)d;
    }
    *out = v;
    return 0;
}

/* The modifiers after the state space up to the type (.align N, .vN, .attribute(...)) and
 * the type: the shape's scalar and, for a vector, its width as the last dimension. */
static int decl_type(lexer *lx, sim_var_shape *sh, unsigned *vec, kbackend_error *err)
{
    uint64_t v;
    *vec = 1;
    for (;;) {
        int rc = next(lx, err);
        if (rc)
            return rc;
        int bytes = type_bytes(lx, &sh->is_float);
        if (bytes >= 0) {
            sh->scalar = (unsigned)bytes;
            return 0;
        }
        if (is(lx, ".align")) {
            if ((rc = next(lx, err)))
                return rc;
            if (number(lx->tok, lx->tok_len, &v) || !v || (v & (v - 1)))
                return scan_fail(lx, err, ".align needs a power of two");
        } else if (is(lx, ".v2") || is(lx, ".v4") || is(lx, ".v8")) {
            *vec = (unsigned)(lx->tok[2] - '0');
        } else if (is(lx, ".attribute")) {
            if ((rc = next(lx, err)) || !is(lx, "("))
                return rc ? rc : scan_fail(lx, err, ".attribute without '('");
            while (!is(lx, ")"))
                if ((rc = next(lx, err)) || !lx->tok_len)
                    return rc ? rc : scan_fail(lx, err, ".attribute without ')'");
        } else {
            return scan_fail(lx, err, "a variable declaration without a type");
        }
    }
}

static uint64_t mul_capped(uint64_t a, uint64_t b)
{
    return a && b > MAX_VAR_BYTES / a ? MAX_VAR_BYTES + 1 : a * b;
}

/* Scalars in dims[from..]. */
static uint64_t scalars_from(const sim_var_shape *sh, unsigned from)
{
    uint64_t n = 1;
    for (unsigned i = from; i < sh->n_dims; i++)
        n = mul_capped(n, sh->dims[i]);
    return n;
}

/* ---- initialisers ---- */

/* Where an initialiser's scalars go: the first pass counts them (dst NULL), the second,
 * once the variables have addresses, writes them. */
typedef struct init_ctx {
    const sim_var_shape *sh;
    unsigned char *dst;
    uint64_t limit;             /* scalars the variable holds */
    const sim_scan *sc;         /* variables whose address an initialiser may take */
    uint64_t index;             /* the next scalar */
} init_ctx;

typedef enum { VAL_INT, VAL_F32_BITS, VAL_F64_BITS, VAL_REAL } val_kind;

/* One element as written: a number, or a variable's address (name or generic(name));
 * anything else (a function's address, an expression) counts as 0. */
static void value_of(const char *t, size_t n, const sim_scan *sc, val_kind *kind,
                     uint64_t *bits, double *real)
{
    *kind = VAL_INT;
    *bits = 0;
    size_t sign = n && (t[0] == '-' || t[0] == '+');
    const char *p = t + sign;
    size_t m = n - sign;
    int f32 = m == 10 && p[0] == '0' && (p[1] == 'f' || p[1] == 'F');
    int f64 = m == 18 && p[0] == '0' && (p[1] == 'd' || p[1] == 'D');
    if (f32 || f64) {           /* 0fXXXXXXXX, 0dXXXXXXXXXXXXXXXX: the bits in hex */
        char hex[20] = "0x";
        memcpy(hex + 2, p + 2, m - 2);
        if (!number(hex, m, bits)) {
            *kind = f32 ? VAL_F32_BITS : VAL_F64_BITS;
            return;
        }
    }
    if (!number(p, m, bits)) {
        *bits = sign && t[0] == '-' ? 0 - *bits : *bits;
        return;
    }
    char buf[64], *end;
    if (n < sizeof(buf) && (memchr(t, '.', n) || memchr(t, 'e', n) || memchr(t, 'E', n))) {
        memcpy(buf, t, n);
        buf[n] = 0;
        *real = strtod(buf, &end);
        if (end == buf + n) {
            *kind = VAL_REAL;
            return;
        }
    }
    static const char generic[] = "generic(";
    size_t gl = sizeof(generic) - 1;
    if (m > gl && !memcmp(p, generic, gl) && p[m - 1] == ')') {
        p += gl;
        m -= gl + 1;
    }
    for (unsigned i = 0; sc && !sign && i < sc->n_vars; i++)
        if (strlen(sc->vars[i].name) == m && !memcmp(sc->vars[i].name, p, m))
            *bits = sc->vars[i].addr;
}

/* The scalar at c->index, converted to the variable's type, little endian as on the GPU. */
static void put_scalar(init_ctx *c, val_kind kind, uint64_t bits, double real)
{
    const sim_var_shape *sh = c->sh;
    if (sh->is_float) {
        uint32_t b32 = (uint32_t)bits;
        float f;
        double d;
        memcpy(&f, &b32, sizeof(f));
        memcpy(&d, &bits, sizeof(d));
        double v = kind == VAL_F32_BITS ? (double)f : kind == VAL_F64_BITS ? d
                 : kind == VAL_REAL ? real : (double)(int64_t)bits;
        if (sh->scalar == 4) {
            f = (float)v;
            memcpy(&b32, &f, sizeof(f));
            bits = b32;
        } else {
            memcpy(&bits, &v, sizeof(bits));
        }
    } else if (kind == VAL_REAL) {  /* a real number for an integer: its integer part */
        bits = real > -9.2e18 && real < 9.2e18 ? (uint64_t)(int64_t)real : 0;
    }
    unsigned char *at = c->dst + c->index * sh->scalar;
    for (unsigned i = 0; i < sh->scalar && i < 8; i++)
        at[i] = (unsigned char)(bits >> (8 * i));
}

/* One element; its first token is the current one. Ends on the ',', '}' or ';' after it. */
static int element(lexer *lx, init_ctx *c, kbackend_error *err)
{
    char buf[64];
    size_t n = 0;
    int long_text = 0;
    unsigned parens = 0;
    while (lx->tok_len && (parens || !(is(lx, ",") || is(lx, "}") || is(lx, ";")))) {
        parens += is(lx, "(");
        parens -= parens && is(lx, ")");
        if (n + lx->tok_len < sizeof(buf))
            memcpy(buf + n, lx->tok, lx->tok_len);
        else
            long_text = 1;
        n += lx->tok_len;
        int rc = next(lx, err);
        if (rc)
            return rc;
    }
    if (!n)
        return scan_fail(lx, err, "an empty element in an initialiser");
    if (c->index >= c->limit || c->index >= MAX_VAR_BYTES / c->sh->scalar)
        return scan_fail(lx, err, "more initialisers than the variable holds");
    if (c->dst) {
        val_kind kind = VAL_INT;
        uint64_t bits = 0;
        double real = 0;
        if (!long_text)
            value_of(buf, n, c->sc, &kind, &bits, &real);
        put_scalar(c, kind, bits, real);
    }
    c->index++;
    return 0;
}

/* An initialiser whose first token is the current one: one element, or braces that nest
 * at most as deep as the variable's dimensions (an inner group that is short is padded
 * with zeros). Ends on the ',' or ';' after it. */
static int initialiser(lexer *lx, init_ctx *c, kbackend_error *err)
{
    if (!is(lx, "{"))
        return element(lx, c, err);
    uint64_t start[8] = {0};
    unsigned depth = 1;
    int rc = next(lx, err), after_comma = 1;
    while (!rc) {
        if (!lx->tok_len)
            return scan_fail(lx, err, "initialiser without its '}'");
        if (is(lx, ",") && after_comma)
            return scan_fail(lx, err, "an empty element in an initialiser");
        after_comma = is(lx, ",") || is(lx, "{");
        if (is(lx, "{")) {
            if (depth >= c->sh->n_dims)
                return scan_fail(lx, err, "initialiser nested deeper than the array");
            uint64_t g = scalars_from(c->sh, depth++);
            c->index = (c->index + g - 1) / g * g;      /* a group starts a new element */
            start[depth] = c->index;
            rc = next(lx, err);
        } else if (is(lx, "}")) {
            if (depth == 1)
                return next(lx, err);
            uint64_t end = start[depth] + scalars_from(c->sh, depth - 1);
            if (c->index > end)
                return scan_fail(lx, err, "more initialisers than the array element holds");
            c->index = end;
            depth--;
            rc = next(lx, err);
        } else if (is(lx, ",")) {
            rc = next(lx, err);
        } else {
            rc = element(lx, c, err);
        }
    }
    return rc;
}

int sim_scan_init(const char *ptx, size_t len, const sim_scan *sc, unsigned i,
                  unsigned char *dst, kbackend_error *err)
{
    const sim_var *v = &sc->vars[i];
    if (!v->has_init)
        return 0;
    lexer lx = {.text = ptx, .len = len, .pos = v->init_pos, .line = v->init_line};
    init_ctx c = {.sh = &v->shape, .dst = dst, .limit = v->bytes / v->shape.scalar, .sc = sc};
    int rc = next(&lx, err);
    return rc ? rc : initialiser(&lx, &c, err);
}

static int add_var(sim_scan *sc, const sim_var *v, kbackend_error *err)
{
    for (unsigned i = 0; i < sc->n_vars; i++)
        if (!strcmp(sc->vars[i].name, v->name))
            return kbackend_fail(err, KBACKEND_EMODULE, "variable '%s' declared twice", v->name);
    if (sc->n_vars == MAX_VARS)
        return kbackend_fail(err, KBACKEND_EMODULE, "more than %d module variables", MAX_VARS);
    char *name = NULL;
    if (grow_array(&sc->vars, &sc->cap_vars, sc->n_vars + 1, sizeof(*sc->vars)) ||
        !(name = strdup(v->name)))
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    sc->vars[sc->n_vars] = *v;
    sc->vars[sc->n_vars++].name = name;
    return 0;
}

/* The initialiser of a texture, sampler or surface reference ({field = value, ...}), whose
 * first token is the current one; ends on the ',' or ';' after it. */
static int skip_opaque(lexer *lx, kbackend_error *err)
{
    int rc = is(lx, "{") ? skip_block(lx, err) : 0;
    while (!rc && lx->tok_len && !is(lx, ",") && !is(lx, ";"))
        rc = next(lx, err);
    return rc;
}

/* The array dimensions after a variable's name; the name is the current token, and the
 * token after the dimensions becomes current. */
static int dimensions(lexer *lx, sim_var_shape *sh, kbackend_error *err)
{
    int rc;
    while (!(rc = next(lx, err)) && is(lx, "[")) {
        if (sh->n_dims == MAX_DIMS)
            return scan_fail(lx, err, "more than 4 array dimensions");
        uint64_t *d = &sh->dims[sh->n_dims];
        *d = 0;
        if ((rc = next(lx, err)))
            return rc;
        if (!is(lx, "]") && (number(lx->tok, lx->tok_len, d) || !*d || (rc = next(lx, err)) ||
                             !is(lx, "]")))
            return rc ? rc : scan_fail(lx, err, "array size is not a positive integer");
        if (sh->n_dims++ && !*d)
            return scan_fail(lx, err, "only the first array dimension may be empty");
    }
    return rc;
}

/* One declarator: the name is the current token; ends on the ',' or ';' after it. */
static int declarator(lexer *lx, sim_scan *sc, sim_var_shape sh, unsigned vec,
                      int is_extern, kbackend_error *err)
{
    char name[KSCHED_ENTRY_MAX + 1];
    sim_var v = {.name = name};
    int rc = take_name(lx, name, "variable", err);
    if (!rc)
        rc = dimensions(lx, &sh, err);
    if (!rc && vec > 1)
        sh.dims[sh.n_dims++] = vec;     /* a vector is an array of its scalars */
    if (!rc && is(lx, "=")) {
        v = (sim_var){.name = name, .has_init = 1, .init_pos = lx->pos, .init_line = lx->line};
        int unsized = sh.n_dims && !sh.dims[0];
        init_ctx c = {.sh = &sh, .limit = !sh.scalar || unsized ? UINT64_MAX
                                                                : scalars_from(&sh, 0)};
        if (!(rc = next(lx, err)))
            rc = sh.scalar ? initialiser(lx, &c, err) : skip_opaque(lx, err);
        if (!rc && unsized) {   /* [] takes its size from the initialiser */
            uint64_t inner = scalars_from(&sh, 1);
            sh.dims[0] = (c.index + inner - 1) / inner;
        }
    }
    if (rc)
        return rc;
    if (!is(lx, ",") && !is(lx, ";"))
        return scan_fail(lx, err, "variable declaration without ';'");
    if (is_extern || !sh.scalar)
        return 0;               /* defined elsewhere, or no memory */
    if (sh.n_dims && !sh.dims[0])
        return kbackend_fail(err, KBACKEND_EMODULE, "line %u: '%s[]' without a size or initialiser",
                          lx->tok_line, name);
    v.shape = sh;
    v.bytes = mul_capped(sh.scalar, scalars_from(&sh, 0));
    if (v.bytes > MAX_VAR_BYTES)
        return kbackend_fail(err, KBACKEND_EMODULE, "variable '%s' larger than 1 TiB", name);
    return add_var(sc, &v, err);
}

/* A declaration whose state space (.global or .const) is the current token. */
static int declaration(lexer *lx, sim_scan *sc, int is_extern, kbackend_error *err)
{
    sim_var_shape sh = {0};
    unsigned vec;
    int rc = decl_type(lx, &sh, &vec, err);
    while (!rc) {
        if ((rc = next(lx, err)) || (rc = declarator(lx, sc, sh, vec, is_extern, err)))
            return rc;
        if (is(lx, ";"))
            return 0;
    }
    return rc;
}

/* ---- the module ---- */

void sim_scan_free(sim_scan *sc)
{
    for (unsigned i = 0; i < sc->n_entries; i++)
        free(sc->entries[i]);
    for (unsigned i = 0; i < sc->n_vars; i++)
        free(sc->vars[i].name);
    free(sc->entries);
    free(sc->vars);
    memset(sc, 0, sizeof(*sc));
}

static int scan(lexer *lx, sim_scan *sc, kbackend_error *err)
{
    unsigned parens = 0;
    int is_extern = 0;
    char name[KSCHED_ENTRY_MAX + 1];
    for (;;) {
        int rc = next(lx, err);
        if (rc || !lx->tok_len)
            return rc;
        if (is(lx, ".entry")) {
            if (!(rc = next(lx, err)) && !(rc = take_name(lx, name, ".entry", err)))
                rc = add_entry(sc, name, err);
        } else if (is(lx, "(")) {
            parens++;
        } else if (is(lx, ")")) {
            if (!parens)
                return scan_fail(lx, err, "')' without its '('");
            parens--;
        } else if (parens) {
            continue;           /* parameter lists: .ptr .global is no variable */
        } else if (is(lx, ".extern")) {
            is_extern = 1;
        } else if (is(lx, ".global") || is(lx, ".const")) {
            rc = declaration(lx, sc, is_extern, err);
            is_extern = 0;
        } else if (is(lx, "{")) {
            rc = skip_block(lx, err);
            is_extern = 0;
        } else if (is(lx, ";")) {
            is_extern = 0;
        }
        if (rc)
            return rc;
    }
}

int sim_scan_ptx(const char *ptx, size_t len, sim_scan *out, kbackend_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!ptx)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL module text");
    lexer lx = {.text = ptx, .len = len, .line = 1};
    int rc = scan(&lx, out, err);
    if (!rc && lx.pos == len && !out->n_entries && !out->n_vars)
        rc = kbackend_fail(err, KBACKEND_EMODULE, "no .entry and no module variable in the module");
    if (rc)
        sim_scan_free(out);
    return rc;
}
