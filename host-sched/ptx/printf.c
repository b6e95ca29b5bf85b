/* The device printf pass (kernelet/ptx.h, "Device printf"): every vprintf call whose format
 * is known at rewrite time becomes inline code that appends a record to a ring, an ordinary
 * .global variable of the module, so that the fencing pass (which runs after this one)
 * confines its stores to the tenant's window like any other, and the guest library reads
 * the ring back with ordinary copies. The call sequence nvcc writes is
 *     st.param.b64 [param0+0], %fmt;  st.param.b64 [param1+0], %args;
 *     call.uni (retval0), vprintf, (param0, param1);  ld.param.b32 %r, [retval0+0];
 * the two stores and the call are replaced by the record's code, the load of the result by
 * a mov of the argument count (or -1 when the ring was full). The argument bytes come from
 * the format string (printf_format.c), never from the buffer, so each record's size is a
 * constant of its call site. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

#define RING_CAP (KPTX_PRINTF_RING_BYTES - KPTX_PRINTF_RING_HEADER)
#define SITE_FIXED 16                            /* statements of a record besides the copy */

enum { D_REC, D_RING, D_TMP, N_D };
enum { W_OFF, W_TMP, W_RES, N_W };

typedef struct printer {
    kptx_module *m;
    kptx_rw rw;
    char prefix[32];
    const char *d[N_D], *w[N_W], *pred, *d_name, *w_name;
    const char *ring, *strings;     /* the variables' names, in the module's arena */
    unsigned flags;                 /* KPTX_PRINTF_* */
    unsigned label_no;
    const kptx_function *fn;
    kptx_printf_site *sites;
    unsigned n_sites;
} printer;

/* ---- writing the records' code ---------------------------------------------------------- */

static kptx_operand int_op(int64_t v)
{
    return (kptx_operand){.kind = KPTX_OPND_INT, .value = v};
}

static kptx_operand reg(const char *name)
{
    return kptx_reg_operand(name);
}

/* [base+off] for a register base. */
static kptx_operand reg_addr(printer *p, const char *base, int64_t off)
{
    kptx_operand *b = kptx_rw_alloc(&p->rw, sizeof *b);
    if (b)
        *b = reg(base);
    return (kptx_operand){.kind = KPTX_OPND_ADDRESS, .value = off, .has_offset = off != 0,
                          .n_elems = b ? 1 : 0, .elems = b};
}

static kptx_stmt *emit(printer *p, kptx_stmt_vec *sv, const char *op, const char *mods,
                       unsigned n, kptx_operand a, kptx_operand b, kptx_operand c)
{
    const kptx_operand ops[3] = {a, b, c};
    return kptx_rw_emit(&p->rw, sv, op, mods, n, ops);
}

static const char *label_name(printer *p, const char *what, unsigned no)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s_%s%u", p->prefix, what, no);
    return kptx_arena_strdup(p->rw.a, buf);
}

/* The argument words, from the caller's buffer into the record at D_REC. */
static void copy_args(printer *p, kptx_stmt_vec *sv, const kptx_printf_site *s)
{
    const int64_t base = KPTX_PRINTF_RING_HEADER + KPTX_PRINTF_RECORD_HEADER;
    for (unsigned i = 0; i < s->n_slots; i++) {
        bool wide = s->slots[i].size == 8;
        const char *t = wide ? p->d[D_TMP] : p->w[W_TMP];
        emit(p, sv, "ld", wide ? ".u64" : ".u32", 2, reg(t),
             reg_addr(p, s->args.name, s->slots[i].off), int_op(0));
        emit(p, sv, "st", wide ? ".global.u64" : ".global.u32", 2,
             reg_addr(p, p->d[D_REC], base + s->slots[i].off), reg(t), int_op(0));
    }
}

/* The record of site s: reserve, fill, complete; or count it dropped. */
static void write_record(printer *p, kptx_stmt_vec *sv, const kptx_printf_site *s)
{
    uint32_t total = KPTX_PRINTF_RECORD_HEADER + ((s->bytes + 7u) & ~7u);
    unsigned no = p->label_no++;
    const char *drop = label_name(p, "drop", no), *done = label_name(p, "done", no);
    kptx_operand ring = {.kind = KPTX_OPND_SYMBOL, .name = p->ring};
    const int64_t h = KPTX_PRINTF_RING_HEADER;

    emit(p, sv, "atom", ".global.add.u32", 3, reg(p->w[W_OFF]),
         kptx_rw_addr(&p->rw, p->ring, 0), int_op(total));
    emit(p, sv, "setp", ".gt.u32", 3, reg(p->pred), reg(p->w[W_OFF]),
         int_op(RING_CAP - total));
    kptx_stmt *br = emit(p, sv, "bra", "", 1, (kptx_operand){.kind = KPTX_OPND_SYMBOL,
                                                             .name = drop}, int_op(0), int_op(0));
    if (br)
        br->u.instr.guard = p->pred;
    emit(p, sv, "cvt", ".u64.u32", 2, reg(p->d[D_REC]), reg(p->w[W_OFF]), int_op(0));
    emit(p, sv, "mov", ".u64", 2, reg(p->d[D_RING]), ring, int_op(0));
    emit(p, sv, "add", ".s64", 3, reg(p->d[D_REC]), reg(p->d[D_REC]), reg(p->d[D_RING]));
    emit(p, sv, "st", ".global.u32", 2, reg_addr(p, p->d[D_REC], h + 4), int_op(s->bytes),
         int_op(0));
    emit(p, sv, "st", ".global.u64", 2, reg_addr(p, p->d[D_REC], h + 8), s->fmt, int_op(0));
    copy_args(p, sv, s);
    /* the reader takes a non-zero total as "complete": it must be the last word seen */
    emit(p, sv, "membar", ".gl", 0, int_op(0), int_op(0), int_op(0));
    emit(p, sv, "st", ".global.u32", 2, reg_addr(p, p->d[D_REC], h), int_op(total), int_op(0));
    emit(p, sv, "mov", ".u32", 2, reg(p->w[W_RES]), int_op(s->n_args), int_op(0));
    emit(p, sv, "bra", "", 1, (kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = done},
         int_op(0), int_op(0));
    kptx_rw_label(&p->rw, sv, drop);
    emit(p, sv, "atom", ".global.add.u32", 3, reg(p->w[W_TMP]),
         kptx_rw_addr(&p->rw, p->ring, 4), int_op(1));
    emit(p, sv, "mov", ".u32", 2, reg(p->w[W_RES]), int_op(0xffffffff), int_op(0));
    kptx_rw_label(&p->rw, sv, done);
}

static const kptx_printf_site *site_at(const printer *p, unsigned i, bool *skip, bool *result)
{
    *skip = *result = false;
    for (unsigned k = 0; k < p->n_sites; k++) {
        const kptx_printf_site *s = &p->sites[k];
        *skip |= (int)i == s->st_fmt || (int)i == s->st_args;
        if ((int)i == s->ld_ret) {
            *result = true;
            return s;
        }
        if (i == s->call)
            return s;
    }
    return NULL;
}

static void hook_instr(void *user, kptx_stmt_vec *sv, const kptx_stmt *st)
{
    printer *p = user;
    bool skip, result;
    const kptx_printf_site *s = site_at(p, (unsigned)(st - p->fn->stmts), &skip, &result);
    if (result) {
        const kptx_instr *ld = &st->u.instr;
        emit(p, sv, "mov", ".b32", 2, ld->ops[0], reg(p->w[W_RES]), int_op(0));
    } else if (s) {
        write_record(p, sv, s);
    } else if (!skip) {
        kptx_rw_push(&p->rw, sv, st);
    }
}

static void declare_range(printer *p, kptx_stmt_vec *sv, const char *type, const char *name,
                          unsigned n)
{
    kptx_stmt *r = kptx_rw_push(&p->rw, sv, NULL);
    if (!r)
        return;
    r->kind = KPTX_STMT_VAR;
    r->u.var = (kptx_var){.space = KPTX_SPACE_REG, .type = type, .name = name, .reg_range = n};
}

static void hook_declare(void *user, kptx_stmt_vec *sv)
{
    printer *p = user;
    declare_range(p, sv, ".b64", p->d_name, N_D);
    declare_range(p, sv, ".b32", p->w_name, N_W);
    declare_range(p, sv, ".pred", p->pred, 0);
}

static void hook_prologue(void *user, kptx_stmt_vec *sv)
{
    (void)user;
    (void)sv;
}

static size_t body_bound(const kptx_function *fn, const kptx_printf_site *s, unsigned n)
{
    size_t b = fn->n_stmts + 3;
    for (unsigned i = 0; i < n; i++)
        b += SITE_FIXED + 2 * s[i].n_slots;
    return b;
}

static void rewrite_function(printer *p, kptx_function *fn)
{
    const kptx_body_hooks h = {hook_declare, hook_prologue, hook_instr, p, NULL};
    kptx_function out = *fn;
    p->fn = fn;
    kptx_rw_body(&p->rw, body_bound(fn, p->sites, p->n_sites), fn, &out, &h);
    if (!p->rw.oom)
        *fn = out;
}

/* ---- the module's new variables ------------------------------------------------------- */

static int setup_names(printer *p)
{
    int rc = kptx_unused_prefix(p->m, "__kprintf", p->prefix, sizeof p->prefix);
    if (rc)
        return rc;
    p->ring = kptx_arena_strdup(p->rw.a, KPTX_PRINTF_RING);
    p->strings = kptx_arena_strdup(p->rw.a, KPTX_PRINTF_STRINGS);
    if (!p->ring || !p->strings)
        return KPTX_ENOMEM;
    p->d_name = kptx_rw_name(&p->rw, "%", kptx_rw_name(&p->rw, p->prefix, "_d"));
    p->w_name = kptx_rw_name(&p->rw, "%", kptx_rw_name(&p->rw, p->prefix, "_w"));
    p->pred = kptx_rw_name(&p->rw, "%", kptx_rw_name(&p->rw, p->prefix, "_p"));
    for (unsigned i = 0; i < N_D || i < N_W; i++) {
        char num[8];
        snprintf(num, sizeof num, "%u", i);
        if (i < N_D && p->d_name)
            p->d[i] = kptx_rw_name(&p->rw, p->d_name, num);
        if (i < N_W && p->w_name)
            p->w[i] = kptx_rw_name(&p->rw, p->w_name, num);
    }
    return p->rw.oom ? KPTX_ENOMEM : 0;
}

/* Appends name and its NUL to the table unless it is there already or the table is full. */
static void table_add(kptx_buf *t, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < t->len; i += strlen(t->p + i) + 1)
        if (strcmp(t->p + i, name) == 0)
            return;
    if (t->len + len + 2 > KPTX_PRINTF_STRINGS_MAX)
        return;
    kptx_buf_put(t, name, len);
    kptx_buf_putc(t, '\0');
}

/* The strings table: the formats rewritten (names), then every other string variable. */
static int strings_table(const kptx_module *m, const char **formats, unsigned n, kptx_buf *t)
{
    for (unsigned i = 0; i < n; i++)
        table_add(t, formats[i]);
    for (unsigned i = 0; i < m->n_items; i++)
        if (m->items[i].kind == KPTX_ITEM_VAR && kptx_printf_string_var(&m->items[i].u.var))
            table_add(t, m->items[i].u.var.name);
    kptx_buf_putc(t, '\0');
    return t->oom ? KPTX_ENOMEM : 0;
}

static kptx_var strings_var(printer *p, const kptx_buf *t)
{
    kptx_var v = {.space = KPTX_SPACE_GLOBAL, .type = ".b8", .name = p->strings,
                  .align = 1, .n_dims = 1, .dims = {t->len}, .has_init = true,
                  .n_init = (unsigned)t->len};
    v.init = kptx_rw_alloc(&p->rw, t->len * sizeof *v.init);
    for (size_t i = 0; v.init && i < t->len; i++)
        v.init[i] = int_op((uint8_t)t->p[i]);
    return v;
}

/* Inserts the ring and the strings table before the first function (PTX declares before
 * use). */
static int add_variables(printer *p, const kptx_buf *t)
{
    const kptx_var vars[2] = {
        {.space = KPTX_SPACE_GLOBAL, .type = ".b8", .name = p->ring, .align = 8, .n_dims = 1,
         .dims = {KPTX_PRINTF_RING_BYTES}},
        strings_var(p, t),
    };
    if (p->rw.oom)
        return KPTX_ENOMEM;
    return kptx_rw_add_vars(&p->rw, p->m, vars, 2);
}

/* ---- the pass ------------------------------------------------------------------------- */

static bool defines_reserved(const kptx_module *m)
{
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_item *it = &m->items[i];
        const char *name = it->kind == KPTX_ITEM_VAR ? it->u.var.name
                           : it->kind == KPTX_ITEM_FUNCTION ? it->u.fn.name : NULL;
        if (name && (!strcmp(name, KPTX_PRINTF_RING) || !strcmp(name, KPTX_PRINTF_STRINGS)))
            return true;
    }
    return false;
}

/* Rewrites every function; the names of the formats used go to *formats. */
static int rewrite_all(printer *p, const char ***formats, unsigned *n_formats)
{
    size_t cap = 0;
    for (unsigned i = 0; i < p->m->n_items && !p->rw.oom; i++) {
        kptx_item *it = &p->m->items[i];
        if (it->kind != KPTX_ITEM_FUNCTION || !it->u.fn.has_body ||
            (!it->u.fn.is_entry && (p->flags & KPTX_PRINTF_ENTRIES_ONLY)))
            continue;
        int rc = kptx_printf_find_sites(p->m, &it->u.fn, &p->sites, &p->n_sites);
        for (unsigned k = 0; !rc && k < p->n_sites; k++) {
            if (!kptx_grow_array(formats, &cap, *n_formats, sizeof **formats, 8))
                rc = KPTX_ENOMEM;
            else
                (*formats)[(*n_formats)++] = p->sites[k].fmt_var;
        }
        if (!rc && p->n_sites && !p->prefix[0])
            rc = setup_names(p);
        if (!rc && p->n_sites)
            rewrite_function(p, &it->u.fn);
        free(p->sites);
        p->sites = NULL;
        if (rc)
            return rc;
    }
    return p->rw.oom ? KPTX_ENOMEM : 0;
}

int kptx_printf_module(kptx_module *m, unsigned flags, unsigned *n_rewritten,
                       kptx_error *err)
{
    if (n_rewritten)
        *n_rewritten = 0;
    if (!m)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "NULL module");
    if (defines_reserved(m))
        return kptx_fail(err, KPTX_EUNSUPPORTED, 0, 0,
                         "the module defines %s or %s, names reserved for device printf",
                         KPTX_PRINTF_RING, KPTX_PRINTF_STRINGS);
    if (m->address_size != 64)
        return 0;   /* 32-bit code packs pointers in 4 bytes: left as it is */
    printer p = {.m = m, .rw = {.a = m->arena}, .flags = flags};
    const char **formats = NULL;
    unsigned n = 0;
    kptx_buf table = {0};
    int rc = rewrite_all(&p, &formats, &n);
    if (!rc && n)
        rc = strings_table(m, formats, n, &table);
    if (!rc && n)
        rc = add_variables(&p, &table);
    free(formats);
    free(table.p);
    if (n)
        kptx_module_forget_analysis(m);
    if (rc)
        return kptx_fail(err, rc, 0, 0, rc == KPTX_ENOMEM ? "out of memory in the printf pass"
                                                          : "no unused name prefix for printf");
    if (n_rewritten)
        *n_rewritten = n;
    return 0;
}
