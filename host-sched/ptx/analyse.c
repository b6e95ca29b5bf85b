/* The module analysis: for every function, what its body reads and calls, and anything
 * in it that rules slicing out. Computed once per module and kept with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* ---- names of functions ---- */

static unsigned hash_name(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int kptx_analysis_find(const kptx_analysis *an, const char *name)
{
    if (!an->n_slots)
        return -1;
    for (unsigned i = hash_name(name) & (an->n_slots - 1);; i = (i + 1) & (an->n_slots - 1)) {
        unsigned s = an->slots[i];
        if (!s)
            return -1;
        if (strcmp(an->facts[s - 1].fn->name, name) == 0)
            return (int)(s - 1);
    }
}

/* One facts entry per distinct name; the definition wins over prototypes. */
static int collect_functions(const kptx_module *m, kptx_analysis *an)
{
    unsigned n = 0;
    for (unsigned i = 0; i < m->n_items; i++)
        n += m->items[i].kind == KPTX_ITEM_FUNCTION;
    an->n_slots = 16;
    while (an->n_slots < 2 * n)
        an->n_slots *= 2;
    an->slots = calloc(an->n_slots, sizeof *an->slots);
    an->facts = calloc(n ? n : 1, sizeof *an->facts);
    if (!an->slots || !an->facts)
        return KPTX_ENOMEM;
    for (unsigned i = 0; i < m->n_items; i++) {
        if (m->items[i].kind != KPTX_ITEM_FUNCTION)
            continue;
        const kptx_function *fn = &m->items[i].u.fn;
        int k = kptx_analysis_find(an, fn->name);
        if (k >= 0) {
            if (fn->has_body && !an->facts[k].fn->has_body)
                an->facts[k].fn = fn;
            continue;
        }
        unsigned s = hash_name(fn->name) & (an->n_slots - 1);
        while (an->slots[s])
            s = (s + 1) & (an->n_slots - 1);
        an->facts[an->n_fns].fn = fn;
        an->slots[s] = ++an->n_fns;
    }
    return 0;
}

/* ---- bodies ---- */

typedef struct edge_vec {
    unsigned *v;
    size_t n, cap;
} edge_vec;

/* Opcodes and names are interned by the parser: whether an opcode is known, and whether a
 * name is a declared register of the function being scanned, are remembered by address. */
#define OPCODE_MEMO 256
#define REG_MEMO 1024

typedef struct scan {
    const char *memo_op[OPCODE_MEMO];
    bool memo_known[OPCODE_MEMO];
    const char *memo_reg[REG_MEMO];
    unsigned memo_reg_gen[REG_MEMO];
    bool memo_declared[REG_MEMO];
    unsigned gen;               /* the function being scanned; older memo entries are stale */
    kptx_analysis *an;
    kptx_fn_facts *f;
    const kptx_function *fn;
    kptx_reg_set regs;
    const kptx_instr *in;
    edge_vec *edges;
    bool in_prologue;           /* before fn's code_label: a transform's own statements */
    bool oom;
} scan;

static void why(kptx_fn_facts *f, const char *fmt, const char *name)
{
    if (!f->why_not[0])
        snprintf(f->why_not, sizeof f->why_not, fmt, name);
}

static bool add_edge(scan *sc, unsigned callee)
{
    edge_vec *e = sc->edges;
    if (!kptx_grow_array(&e->v, &e->cap, e->n, sizeof *e->v, 64))
        return false;
    e->v[e->n++] = callee;
    return true;
}

/* The width in bytes of the instruction's (last) type modifier, 0 without one. */
static unsigned instr_type_size(const kptx_instr *in)
{
    for (unsigned i = in->n_mods; i-- > 0;) {
        unsigned s = kptx_type_size(in->mods[i]);
        if (s)
            return s;
    }
    return 0;
}

static bool reg_declared(scan *sc, const char *name)
{
    unsigned k = (unsigned)(((uintptr_t)name >> 3) % REG_MEMO);
    if (sc->memo_reg[k] != name || sc->memo_reg_gen[k] != sc->gen) {
        sc->memo_reg[k] = name;
        sc->memo_reg_gen[k] = sc->gen;
        sc->memo_declared[k] = kptx_reg_set_has(&sc->regs, name);
    }
    return sc->memo_declared[k];
}

static void scan_sreg(scan *sc, const kptx_operand *o)
{
    kptx_fn_facts *f = sc->f;
    uint32_t cls = kptx_sreg_class(o->name);
    if (!cls) {
        f->sregs |= KPTX_SREG_OTHER;
        why(f, "reads %s, a special register or component this parser does not know", o->name);
        return;
    }
    f->sregs |= cls;
    if (cls == KPTX_SREG_GRIDID)
        why(f, "reads %s: each slice is a grid of its own", o->name);
    else if (cls == KPTX_SREG_ENVREG)
        why(f, "reads %s (driver environment: cooperative launch or grid-wide sync)", o->name);
    else if (cls == KPTX_SREG_CLUSTER)
        why(f, "reads the cluster register %s", o->name);
    else if (strcmp(o->name, "%current_graph_exec") == 0)
        why(f, "reads %s (device-side graph launch)", o->name);
    else if (!sc->in_prologue &&
             (strcmp(o->name, "%total_smem_size") == 0 || strcmp(o->name, "%aggr_smem_size") == 0))
        why(f, "reads %s, which the sliced variant's own shared memory would change", o->name);
    if (cls != KPTX_SREG_CTAID && cls != KPTX_SREG_NCTAID)
        return;
    int g = kptx_grid_value(o->name);
    if (g < 0)
        why(f, "reads the whole vector %s", o->name);
    else if (instr_type_size(sc->in) != 4)
        why(f, "reads %s in an instruction that is not 32-bit", o->name);
    else
        f->grid |= 1u << g;
}

static void scan_operand(scan *sc, const kptx_operand *o)
{
    switch (o->kind) {
    case KPTX_OPND_SREG:
        scan_sreg(sc, o);
        break;
    case KPTX_OPND_REG:
        if (!reg_declared(sc, o->name))
            why(sc->f, "uses %s, neither a declared register nor a known special register",
                o->name);
        break;
    case KPTX_OPND_SYMBOL: {
        int k = kptx_analysis_find(sc->an, o->name);
        if (k >= 0)
            sc->an->facts[k].address_taken = true;
        break;
    }
    default:
        break;
    }
    for (unsigned i = 0; i < o->n_elems; i++)
        scan_operand(sc, &o->elems[i]);
}

/* call [(rets),] target [, (args)] [, prototype]: the target is the first operand that is
 * not a list. */
static void scan_call(scan *sc, const kptx_instr *in)
{
    for (unsigned i = 0; i < in->n_ops; i++) {
        const kptx_operand *o = &in->ops[i];
        if (o->kind == KPTX_OPND_LIST) {
            scan_operand(sc, o);
            continue;
        }
        if (o->kind == KPTX_OPND_SYMBOL) {
            int k = kptx_analysis_find(sc->an, o->name);
            if (k < 0)
                why(sc->f, "calls %s, which the module does not declare", o->name);
            else if (!add_edge(sc, (unsigned)k))
                sc->oom = true;
        } else if (o->kind == KPTX_OPND_REG) {
            sc->f->indirect_calls = true;
            scan_operand(sc, o);
        } else {
            why(sc->f, "has a call this parser does not understand (%s)", "call");
        }
        /* what follows the target (arguments, prototype) is not a call target */
        for (unsigned k = i + 1; k < in->n_ops; k++)
            if (in->ops[k].kind != KPTX_OPND_SYMBOL)
                scan_operand(sc, &in->ops[k]);
        return;
    }
}

static bool known_opcode(scan *sc, const char *op)
{
    unsigned k = (unsigned)(((uintptr_t)op >> 3) % OPCODE_MEMO);
    if (sc->memo_op[k] != op) {
        sc->memo_op[k] = op;
        sc->memo_known[k] = kptx_known_opcode(op);
    }
    return sc->memo_known[k];
}

static void scan_body(scan *sc)
{
    const kptx_function *fn = sc->fn;
    /* The fence's scrub reads %total_smem_size knowing that the sliced variant's own
     * shared array counts in it (fence_scrub.c): only the function's own reads matter. */
    sc->in_prologue = fn->code_label != NULL;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *st = &fn->stmts[i];
        if (st->kind == KPTX_STMT_LABEL && fn->code_label && !strcmp(st->u.label, fn->code_label))
            sc->in_prologue = false;
        if (st->kind != KPTX_STMT_INSTR)
            continue;
        const kptx_instr *in = &fn->stmts[i].u.instr;
        sc->in = in;
        if (!known_opcode(sc, in->opcode))
            why(sc->f, "uses the instruction '%s', which this parser does not know", in->opcode);
        if (strcmp(in->opcode, "call") == 0) {
            scan_call(sc, in);
            continue;
        }
        for (unsigned k = 0; k < in->n_ops; k++)
            scan_operand(sc, &in->ops[k]);
    }
}

/* Functions without a body here: safe when their behaviour is known. */
static void judge_external(kptx_fn_facts *f)
{
    static const char *const safe[] = {"vprintf", "malloc", "free", "__assertfail"};
    const char *name = f->fn->name;
    for (size_t i = 0; i < sizeof safe / sizeof safe[0]; i++)
        if (strcmp(name, safe[i]) == 0)
            return;
    if (strstr(name, "cudaCG"))
        why(f, "calls %s (grid-wide synchronisation)", name);
    else if (strstr(name, "LaunchDevice") || strstr(name, "GetParameterBuffer") ||
             strstr(name, "cudaCDP") || strstr(name, "cudaGraph"))
        why(f, "calls %s (device-side launch)", name);
    else
        why(f, "calls %s, whose body is not in this module", name);
}

static void mark_init_symbols(kptx_analysis *an, const kptx_var *v)
{
    for (unsigned i = 0; i < v->n_init; i++) {
        if (v->init[i].kind != KPTX_OPND_SYMBOL)
            continue;
        int k = kptx_analysis_find(an, v->init[i].name);
        if (k >= 0)
            an->facts[k].address_taken = true;
    }
}

/* grid_reach: what a function or anything it calls, directly or not, reads. One pass in
 * the call graph's order (callees first), the functions of a cycle sharing their union: a
 * fixpoint over the edges took a pass per function of a chain, quadratic time that a
 * tenant's module could make minutes long. */
static void propagate_grid(kptx_analysis *an)
{
    for (unsigned k = 0; k < an->n_fns; k = an->scc_end[k]) {
        unsigned end = an->scc_end[k], reach = 0;
        for (unsigned j = k; j < end; j++) {
            unsigned f = an->order[j];
            reach |= an->facts[f].grid;
            /* a callee of this component has no grid_reach yet: its grid is in reach */
            for (unsigned e = an->edge_start[f]; e < an->edge_start[f + 1]; e++)
                reach |= an->facts[an->callee[e]].grid_reach;
        }
        for (unsigned j = k; j < end; j++)
            an->facts[an->order[j]].grid_reach = reach;
    }
}

static int build(const kptx_module *m, kptx_analysis *an)
{
    int rc = collect_functions(m, an);
    if (rc)
        return rc;
    an->edge_start = calloc(an->n_fns + 1, sizeof *an->edge_start);
    if (!an->edge_start)
        return KPTX_ENOMEM;
    edge_vec edges = {0};
    scan *sc = calloc(1, sizeof *sc);
    if (!sc)
        return KPTX_ENOMEM;
    sc->an = an;
    sc->edges = &edges;
    for (unsigned i = 0; i < an->n_fns; i++) {
        kptx_fn_facts *f = &an->facts[i];
        an->edge_start[i] = (unsigned)edges.n;
        if (!f->fn->has_body) {
            judge_external(f);
            continue;
        }
        sc->f = f;
        sc->fn = f->fn;
        sc->gen++;
        if (kptx_reg_set_build(f->fn, &sc->regs))
            sc->oom = true;
        else
            scan_body(sc);
        kptx_reg_set_free(&sc->regs);
        if (sc->oom) {
            free(edges.v);
            free(sc);
            return KPTX_ENOMEM;
        }
    }
    free(sc);
    an->edge_start[an->n_fns] = (unsigned)edges.n;
    an->callee = edges.v;
    for (unsigned i = 0; i < m->n_items; i++)
        if (m->items[i].kind == KPTX_ITEM_VAR)
            mark_init_symbols(an, &m->items[i].u.var);
    rc = kptx_find_cycles(an);
    if (!rc)
        propagate_grid(an);
    return rc;
}

static void analysis_free(void *p)
{
    kptx_analysis *an = p;
    if (!an)
        return;
    free(an->facts);
    free(an->edge_start);
    free(an->callee);
    free(an->order);
    free(an->scc_end);
    free(an->slots);
    free(an->init_names);
    free(an);
}

const kptx_analysis *kptx_module_analysis(const kptx_module *m, kptx_error *err)
{
    kptx_analysis *an = kptx_arena_cache(m->arena);
    if (an)
        return an;
    an = calloc(1, sizeof *an);
    if (!an || build(m, an) || kptx_collect_init_names(m, &an->init_names, &an->n_init_names)) {
        analysis_free(an);
        kptx_fail(err, KPTX_ENOMEM, 0, 0, "out of memory analysing the module");
        return NULL;
    }
    kptx_arena_set_cache(m->arena, an, analysis_free);
    return an;
}

void kptx_module_forget_analysis(kptx_module *m)
{
    kptx_arena_set_cache(m->arena, NULL, NULL);
}

int kptx_grid_value(const char *sreg)
{
    int base;
    if (strncmp(sreg, "%ctaid.", 7) == 0)
        base = 0;
    else if (strncmp(sreg, "%nctaid.", 8) == 0)
        base = 3;
    else
        return -1;
    const char *c = sreg + (base ? 8 : 7);
    if (c[1] != '\0' || c[0] < 'x' || c[0] > 'z')
        return -1;
    return base + (c[0] - 'x');
}
