/* Counted loops whose cancel poll can leave the iterations (kptx_find_counted_loops).
 *
 * The fencing pass polls the cancel word on every loop's back-edge, and counting
 * iterations there costs a tight loop up to two thirds of its time. A loop whose
 * back-edge tests an induction register against a bound that the loop never changes,
 *     HEAD:  ...  add i, i, s;  setp.lt p, i, X;  @p bra HEAD;
 * can instead be strip-mined: its back-edge tests i against an inner bound N that is
 * recomputed at HEAD so that the test against N holds only where the test against X
 * holds and fails within KPTX_CANCEL_POLL_PERIOD iterations; the original test then
 * decides between leaving the loop and polling before going round again. The loop's own
 * iterations pay nothing. This file finds such loops and proves what the rewrite needs:
 *   - i is written in the loop only by one unguarded add (or sub) of a constant, or of
 *     a register the loop never writes, in the straight code that ends at the back-edge,
 *     so that every test sees exactly one more step than the last;
 *   - the bound X is an immediate or a register the loop never writes;
 *   - the back-edge's predicate is read nowhere else in the loop (its value between the
 *     tests changes);
 *   - no branch from outside the loop enters it except at HEAD, where the inner bound is
 *     set, and no other branch inside goes back to HEAD (one loop per label).
 * Anything else keeps the counting poll. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* The largest constant step (in magnitude) an lt or gt loop may take: the inner bound's
 * distance, step times the poll period, must fit any width's positive immediates. */
#define MAX_STEP 65536

static int label_at_cmp(const void *a, const void *b)
{
    return strcmp(((const kptx_label_at *)a)->name, ((const kptx_label_at *)b)->name);
}

int kptx_label_index_build(kptx_label_index *ix, const kptx_function *fn)
{
    size_t n = 0;
    for (unsigned i = 0; i < fn->n_stmts; i++)
        n += fn->stmts[i].kind == KPTX_STMT_LABEL;
    ix->n = 0;
    ix->at = n ? malloc(n * sizeof *ix->at) : NULL;
    if (n && !ix->at)
        return KPTX_ENOMEM;
    for (unsigned i = 0; i < fn->n_stmts; i++)
        if (fn->stmts[i].kind == KPTX_STMT_LABEL)
            ix->at[ix->n++] = (kptx_label_at){fn->stmts[i].u.label, i};
    if (ix->n)          /* qsort and bsearch take no NULL array, even an empty one */
        qsort(ix->at, ix->n, sizeof *ix->at, label_at_cmp);
    return 0;
}

int kptx_label_index_find(const kptx_label_index *ix, const char *name)
{
    if (!ix->n)
        return -1;
    kptx_label_at key = {name, 0};
    const kptx_label_at *l = bsearch(&key, ix->at, ix->n, sizeof key, label_at_cmp);
    return l ? (int)l->index : -1;
}

void kptx_label_index_free(kptx_label_index *ix)
{
    free(ix->at);
    ix->at = NULL;
    ix->n = 0;
}

int kptx_branch_target(const kptx_label_index *ix, const kptx_stmt *s)
{
    const kptx_instr *in = &s->u.instr;
    if (s->kind != KPTX_STMT_INSTR || strcmp(in->opcode, "bra") || in->n_ops != 1 ||
        in->ops[0].kind != KPTX_OPND_SYMBOL)
        return -1;
    return kptx_label_index_find(ix, in->ops[0].name);
}

static bool operand_names(const kptx_operand *o, const char *reg)
{
    if (o->kind == KPTX_OPND_REG)
        return !strcmp(o->name, reg);
    if (o->kind == KPTX_OPND_VECTOR || o->kind == KPTX_OPND_PAIR || o->kind == KPTX_OPND_LIST ||
        o->kind == KPTX_OPND_ADDRESS)
        for (unsigned i = 0; i < o->n_elems; i++)
            if (operand_names(&o->elems[i], reg))
                return true;
    return false;
}

/* Whether in may write reg: PTX instructions write only their first operand (a register,
 * or the registers of a vector or a d|p pair); an address there is a store's. */
static bool writes(const kptx_instr *in, const char *reg)
{
    return in->n_ops && in->ops[0].kind != KPTX_OPND_ADDRESS && operand_names(&in->ops[0], reg);
}

/* Whether in reads reg anywhere: its guard or any operand after the first, or inside the
 * first when that is an address. */
static bool reads(const kptx_instr *in, const char *reg)
{
    if (in->guard && !strcmp(in->guard, reg))
        return true;
    for (unsigned i = 0; i < in->n_ops; i++)
        if ((i || in->ops[0].kind == KPTX_OPND_ADDRESS) && operand_names(&in->ops[i], reg))
            return true;
    return false;
}

/* Whether s changes the flow of control (so straight code must not hold it). */
static bool is_control(const kptx_stmt *s)
{
    if (s->kind != KPTX_STMT_INSTR)
        return s->kind == KPTX_STMT_LABEL || s->kind == KPTX_STMT_BLOCK_BEGIN ||
               s->kind == KPTX_STMT_BLOCK_END;
    const char *op = s->u.instr.opcode;
    return !strcmp(op, "bra") || !strcmp(op, "brx") || !strcmp(op, "call") ||
           !strcmp(op, "ret") || !strcmp(op, "exit") || !strcmp(op, "trap");
}

/* The nearest instruction before index `before` and after `lo` that writes reg, with
 * only straight code (no label, branch or block) from it up to `before`; -1 if none. */
static int straight_writer(const kptx_function *fn, unsigned lo, unsigned before,
                           const char *reg)
{
    for (unsigned k = before; k-- > lo + 1;) {
        const kptx_stmt *s = &fn->stmts[k];
        if (s->kind == KPTX_STMT_INSTR && writes(&s->u.instr, reg))
            return (int)k;
        if (is_control(s))
            return -1;
    }
    return -1;
}

/* Whether any instruction of fn->stmts[lo..hi] other than the one at `except` writes reg. */
static bool written_in(const kptx_function *fn, unsigned lo, unsigned hi, const char *reg,
                       int except)
{
    for (unsigned k = lo; k <= hi; k++)
        if ((int)k != except && fn->stmts[k].kind == KPTX_STMT_INSTR &&
            writes(&fn->stmts[k].u.instr, reg))
            return true;
    return false;
}

/* The one modifier of in among set (NULL-terminated), NULL when none or several. */
static const char *one_mod(const kptx_instr *in, const char *const *set)
{
    const char *found = NULL;
    for (unsigned i = 0; i < in->n_mods; i++)
        for (const char *const *s = set; *s; s++)
            if (!strcmp(in->mods[i], *s)) {
                if (found)
                    return NULL;
                found = *s;
            }
    return found;
}

static const char *const int_types[] = {".s32", ".u32", ".b32", ".s64", ".u64", ".b64", NULL};
static const char *const compares[] = {".lt", ".le", ".gt", ".ge", ".ne", ".eq",
                                       ".lo", ".ls", ".hi", ".hs", NULL};

/* The comparison a test continues the loop on, once the guard's polarity and the order
 * of its sources are taken into account: "lt", "gt", "ne", or NULL for any other. */
static const char *continue_compare(const char *cmp, bool negated, bool iv_second)
{
    static const struct { const char *mod, *as, *inverse; } table[] = {
        {".lt", "lt", "ge"}, {".lo", "lt", "ge"}, {".le", "le", "gt"}, {".ls", "le", "gt"},
        {".gt", "gt", "le"}, {".hi", "gt", "le"}, {".ge", "ge", "lt"}, {".hs", "ge", "lt"},
        {".ne", "ne", "eq"}, {".eq", "eq", "ne"},
    };
    const char *c = NULL;
    for (unsigned i = 0; i < sizeof table / sizeof *table && !c; i++)
        if (!strcmp(cmp, table[i].mod))
            c = negated ? table[i].inverse : table[i].as;
    if (c && iv_second)     /* X < i is i > X */
        c = !strcmp(c, "lt") ? "gt" : !strcmp(c, "gt") ? "lt" : !strcmp(c, "le") ? "ge"
          : !strcmp(c, "ge") ? "le" : c;
    if (!c)
        return NULL;
    return !strcmp(c, "lt") || !strcmp(c, "gt") || !strcmp(c, "ne") ? c : NULL;
}

static unsigned type_width(const char *type)
{
    return type[2] == '6' ? 64 : 32;
}

/* v as a width-bit two's complement value. */
static int64_t sign_extend(int64_t v, unsigned width)
{
    return width == 32 ? (int64_t)(int32_t)(uint32_t)v : v;
}

/* The step of the add (or sub) at a on iv into loop, when it is one the rewrite can use
 * for loop's kind of test; false otherwise. */
static bool take_step(const kptx_function *fn, unsigned head, unsigned edge,
                      const kptx_instr *a, const char *iv, kptx_counted_loop *loop)
{
    bool sub = !strcmp(a->opcode, "sub");
    if ((!sub && strcmp(a->opcode, "add")) || a->guard || a->n_ops != 3 || a->n_mods != 1 ||
        a->mods[0][1] == 'b' || !one_mod(a, int_types) ||
        type_width(a->mods[0]) != loop->width)
        return false;
    const kptx_operand *o = a->ops;
    if (o[0].kind != KPTX_OPND_REG || strcmp(o[0].name, iv))
        return false;
    const kptx_operand *step = o[1].kind == KPTX_OPND_REG && !strcmp(o[1].name, iv) ? &o[2]
                             : !sub && o[2].kind == KPTX_OPND_REG && !strcmp(o[2].name, iv)
                                 ? &o[1] : NULL;
    if (!step)
        return false;
    if (step->kind == KPTX_OPND_REG) {  /* a register step: grid-stride loops, lt only */
        if (sub || loop->kind != KPTX_LOOP_LT || !strcmp(step->name, iv) ||
            written_in(fn, head, edge, step->name, -1))
            return false;
        loop->step_reg = step->name;
        return true;
    }
    if (step->kind != KPTX_OPND_INT)
        return false;
    int64_t s = sign_extend(step->value, loop->width);
    if (sub)
        s = -s;
    uint64_t bits = (uint64_t)s & (loop->width == 32 ? UINT32_MAX : UINT64_MAX);
    bool ok = loop->kind == KPTX_LOOP_LT   ? s >= 1 && s <= MAX_STEP
            : loop->kind == KPTX_LOOP_GT   ? s <= -1 && s >= -MAX_STEP
            : bits && (unsigned)__builtin_ctzll(bits) + 11 <= loop->width;
    loop->step = s;
    return ok;
}

/* The largest and the smallest value of the test's type (as int64_t bits). */
static int64_t type_max(const kptx_counted_loop *l)
{
    if (l->width == 32)
        return l->is_signed ? INT32_MAX : (int64_t)UINT32_MAX;
    return l->is_signed ? INT64_MAX : -1;
}

static int64_t type_min(const kptx_counted_loop *l)
{
    return !l->is_signed ? 0 : l->width == 32 ? INT32_MIN : INT64_MIN;
}

/* a <= b in the test's order. */
static bool ordered(const kptx_counted_loop *l, int64_t a, int64_t b)
{
    if (l->is_signed)
        return sign_extend(a, l->width) <= sign_extend(b, l->width);
    uint64_t mask = l->width == 32 ? UINT32_MAX : UINT64_MAX;
    return ((uint64_t)a & mask) <= ((uint64_t)b & mask);
}

/* The bound X may be used as the inner bound only when the step that passes it cannot
 * wrap around: X <= MAX - (s - 1) for lt, X >= MIN + (-s - 1) for gt. The limit, for a
 * constant step; whether the test is needed at all (not with a step of one). */
static bool needs_wrap_test(const kptx_counted_loop *l)
{
    return l->kind != KPTX_LOOP_NE && (l->step_reg || (l->step != 1 && l->step != -1));
}

static int64_t wrap_limit(const kptx_counted_loop *l)
{
    return l->kind == KPTX_LOOP_LT ? (int64_t)((uint64_t)type_max(l) - (uint64_t)(l->step - 1))
                                   : (int64_t)((uint64_t)type_min(l) + (uint64_t)(-l->step - 1));
}

/* An immediate bound too close to the end of the type for a constant step: such a loop
 * keeps the counting poll rather than an inner bound that could be stepped over. */
static bool immediate_bound_wraps(const kptx_counted_loop *l)
{
    if (l->bound.kind != KPTX_OPND_INT || l->step_reg || !needs_wrap_test(l))
        return false;
    return l->kind == KPTX_LOOP_LT ? !ordered(l, l->bound.value, wrap_limit(l))
                                   : !ordered(l, wrap_limit(l), l->bound.value);
}

/* Whether the predicate the back-edge tests is read in the loop by anything but it. */
static bool predicate_read_elsewhere(const kptx_function *fn, unsigned head, unsigned edge,
                                     const char *pred)
{
    for (unsigned k = head; k < edge; k++)
        if (fn->stmts[k].kind == KPTX_STMT_INSTR && reads(&fn->stmts[k].u.instr, pred))
            return true;
    return false;
}

/* Whether a branch from outside [head, edge] enters it after head, or a branch inside
 * other than edge goes back to head. */
static bool entered_elsewhere(const kptx_function *fn, const kptx_label_index *ix,
                              unsigned head, unsigned edge)
{
    for (unsigned k = 0; k < fn->n_stmts; k++) {
        int t = kptx_branch_target(ix, &fn->stmts[k]);
        if (t < 0 || k == edge)
            continue;
        bool inside = k >= head && k <= edge;
        if ((!inside && (unsigned)t > head && (unsigned)t <= edge) ||
            (inside && (unsigned)t == head))
            return true;
    }
    return false;
}

static bool has_blocks(const kptx_function *fn, unsigned head, unsigned edge)
{
    for (unsigned k = head; k <= edge; k++)
        if (fn->stmts[k].kind == KPTX_STMT_BLOCK_BEGIN || fn->stmts[k].kind == KPTX_STMT_BLOCK_END)
            return true;
    return false;
}

/* The test at t of the back-edge at edge (to head) as a counted loop's, trying the
 * induction register in either source. */
static bool take_test(const kptx_function *fn, unsigned head, unsigned edge, unsigned t,
                      kptx_counted_loop *loop)
{
    const kptx_instr *in = &fn->stmts[t].u.instr;
    const kptx_instr *br = &fn->stmts[edge].u.instr;
    const char *cmp = one_mod(in, compares), *type = one_mod(in, int_types);
    if (strcmp(in->opcode, "setp") || in->guard || in->n_ops != 3 || in->n_mods != 2 ||
        !cmp || !type || in->ops[0].kind != KPTX_OPND_REG)
        return false;
    loop->width = type_width(type);
    loop->is_signed = type[1] == 's';
    for (unsigned iv_at = 1; iv_at <= 2; iv_at++) {
        const kptx_operand *iv = &in->ops[iv_at], *bound = &in->ops[3 - iv_at];
        const char *c = continue_compare(cmp, br->guard_negated, iv_at == 2);
        if (!c || iv->kind != KPTX_OPND_REG ||
            (bound->kind != KPTX_OPND_INT && bound->kind != KPTX_OPND_REG) ||
            (bound->kind == KPTX_OPND_REG &&
             (!strcmp(bound->name, iv->name) || written_in(fn, head, edge, bound->name, -1))))
            continue;
        loop->kind = c[0] == 'l' ? KPTX_LOOP_LT : c[0] == 'g' ? KPTX_LOOP_GT : KPTX_LOOP_NE;
        if (loop->kind != KPTX_LOOP_NE && type[1] == 'b')
            continue;
        int a = straight_writer(fn, head, t, iv->name);
        if (a < 0 || written_in(fn, head, edge, iv->name, a) ||
            !take_step(fn, head, edge, &fn->stmts[a].u.instr, iv->name, loop))
            continue;
        loop->iv = iv->name;
        loop->bound = *bound;
        loop->bound_first = iv_at == 2;
        loop->update = (unsigned)a;
        if (!immediate_bound_wraps(loop))
            return true;
    }
    return false;
}

/* The back-edge at edge (to head) as a counted loop, if it is one. */
static bool counted_loop_at(const kptx_function *fn, const kptx_label_index *ix,
                            unsigned head, unsigned edge, kptx_counted_loop *loop)
{
    const kptx_instr *br = &fn->stmts[edge].u.instr;
    *loop = (kptx_counted_loop){.head = head, .edge = edge, .step_reg = NULL};
    if (!br->guard || has_blocks(fn, head, edge) || entered_elsewhere(fn, ix, head, edge) ||
        predicate_read_elsewhere(fn, head, edge, br->guard))
        return false;
    int t = straight_writer(fn, head, edge, br->guard);
    if (t < 0 || !take_test(fn, head, edge, (unsigned)t, loop))
        return false;
    loop->test = (unsigned)t;
    return true;
}

static bool has_indirect_branch(const kptx_function *fn)
{
    for (unsigned k = 0; k < fn->n_stmts; k++)
        if (fn->stmts[k].kind == KPTX_STMT_INSTR && !strcmp(fn->stmts[k].u.instr.opcode, "brx"))
            return true;
    return false;
}

int kptx_find_counted_loops(const kptx_function *fn, const kptx_label_index *ix,
                            kptx_counted_loop **out, unsigned *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (has_indirect_branch(fn))
        return 0;
    size_t cap = 0;
    for (unsigned k = 0; k < fn->n_stmts; k++) {
        int head = kptx_branch_target(ix, &fn->stmts[k]);
        kptx_counted_loop loop;
        if (head < 0 || (unsigned)head >= k || !counted_loop_at(fn, ix, (unsigned)head, k, &loop))
            continue;
        if (!kptx_grow_array(out, &cap, *n_out, sizeof **out, 8)) {
            free(*out);
            *out = NULL;
            *n_out = 0;
            return KPTX_ENOMEM;
        }
        (*out)[(*n_out)++] = loop;
    }
    return 0;
}

/* ---- the rewrite ---- */

static kptx_operand reg(const char *name)
{
    return kptx_reg_operand(name);
}

static kptx_operand imm(int64_t v)
{
    return kptx_int_operand(v);
}

/* op with modifiers: base (".lt"), then the type letter and the loop's width (".s32"). */
static const char *mods(char *buf, size_t len, const char *base, char type, unsigned width)
{
    snprintf(buf, len, "%s.%c%u", base, type, width);
    return buf;
}

static void emit(kptx_rw *rw, kptx_stmt_vec *sv, const char *op, const char *m, unsigned n,
                 const kptx_operand *ops)
{
    kptx_rw_emit(rw, sv, op, m, n, ops);
}

/* The inner bound of an lt loop at the head, for the step s (K = 1024 s):
 *   inside = i < X            (else the first test fails anyway: inner = MIN fails it too)
 *   far    = inside && X - i > K           -> inner = i + K, reached in exactly 1024 steps
 *   else   = inside && X cannot be stepped over -> inner = X, reached within 1024 steps
 *   else                                   -> inner = MIN: every test leaves the strip.
 * A register step must lie in [1, MAX_STEP] or every test leaves the strip. gt mirrors it. */
static void emit_ordered_head(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_counted_loop *l,
                              const kptx_loop_names *nm)
{
    bool lt = l->kind == KPTX_LOOP_LT;
    char m[24], s_[24], b[24];
    unsigned w = l->width;
    mods(s_, sizeof s_, "", l->is_signed ? 's' : 'u', w);   /* adds of the test's type */
    mods(b, sizeof b, "", 'b', w);
    kptx_operand i = reg(l->iv), x = l->bound, pa = reg(nm->pa), pb = reg(nm->pb);
    kptx_operand d = reg(nm->dist), in = reg(nm->inner);
    kptx_operand k = imm(lt ? l->step * KPTX_CANCEL_POLL_PERIOD
                            : -l->step * KPTX_CANCEL_POLL_PERIOD);
    emit(rw, sv, "setp", mods(m, sizeof m, lt ? ".lt" : ".gt", l->is_signed ? 's' : 'u', w),
         3, (kptx_operand[]){pa, i, x});
    if (l->step_reg) {
        kptx_operand st = reg(l->step_reg);
        emit(rw, sv, "setp", mods(m, sizeof m, ".ge.and", 's', w), 4,
             (kptx_operand[]){pa, st, imm(1), pa});
        emit(rw, sv, "setp", mods(m, sizeof m, ".le.and", 's', w), 4,
             (kptx_operand[]){pa, st, imm(MAX_STEP), pa});
        emit(rw, sv, "shl", b, 3, (kptx_operand[]){in, st, imm(10)});
        k = in;
    }
    emit(rw, sv, "sub", s_, 3, lt ? (kptx_operand[]){d, x, i} : (kptx_operand[]){d, i, x});
    emit(rw, sv, "setp", mods(m, sizeof m, ".gt.and", 'u', w), 4, (kptx_operand[]){pb, d, k, pa});
    emit(rw, sv, lt ? "add" : "sub", s_, 3, (kptx_operand[]){d, i, k});
    if (needs_wrap_test(l) && l->bound.kind == KPTX_OPND_REG) {
        kptx_operand lim = imm(wrap_limit(l));
        if (l->step_reg) {      /* MAX - (s - 1), into in (K is used up) */
            emit(rw, sv, "sub", s_, 3, (kptx_operand[]){in, imm(type_max(l)), reg(l->step_reg)});
            emit(rw, sv, "add", s_, 3, (kptx_operand[]){in, in, imm(1)});
            lim = in;
        }
        emit(rw, sv, "setp", mods(m, sizeof m, lt ? ".le.and" : ".ge.and",
                                  l->is_signed ? 's' : 'u', w), 4, (kptx_operand[]){pa, x, lim, pa});
    }
    emit(rw, sv, "selp", b, 4,
         (kptx_operand[]){in, x, imm(lt ? type_min(l) : type_max(l)), pa});
    emit(rw, sv, "selp", b, 4, (kptx_operand[]){in, d, in, pb});
}

/* An ne loop of step s = 2^k o (o odd, k <= width - 11) meets X after j steps, j >= 1,
 * when j s = d (mod 2^width) for d = X - i: when 2^k divides d, at the one j below
 * 2^(width-k) that is (d >> k) / o. The inner bound is X itself when that j lies in
 * [1, 1024] (reached within a strip), else i + 1024 s, which the loop reaches in exactly
 * 1024 steps (2^(width-k) > 1024) without meeting X on the way. */
static void emit_ne_head(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_counted_loop *l,
                         const kptx_loop_names *nm)
{
    char m[24], s_[24], b[24];
    unsigned w = l->width;
    mods(s_, sizeof s_, "", 's', w);
    mods(b, sizeof b, "", 'b', w);
    uint64_t step = (uint64_t)l->step & (w == 32 ? UINT32_MAX : UINT64_MAX);
    unsigned k = (unsigned)__builtin_ctzll(step);
    uint64_t odd = step >> k, inv = odd;
    for (unsigned n = 0; n < 6; n++)    /* Newton: each round doubles the correct bits */
        inv *= 2 - odd * inv;
    kptx_operand i = reg(l->iv), x = l->bound, pa = reg(nm->pa), pb = reg(nm->pb);
    kptx_operand d = reg(nm->dist), in = reg(nm->inner);
    emit(rw, sv, "sub", s_, 3, (kptx_operand[]){d, x, i});
    if (k) {
        emit(rw, sv, "and", b, 3, (kptx_operand[]){in, d, imm((int64_t)((1ull << k) - 1))});
        emit(rw, sv, "setp", mods(m, sizeof m, ".eq", 'u', w), 3, (kptx_operand[]){pb, in, imm(0)});
        emit(rw, sv, "shr", mods(m, sizeof m, "", 'u', w), 3, (kptx_operand[]){d, d, imm(k)});
    }
    if (odd != 1)
        emit(rw, sv, "mul", mods(m, sizeof m, ".lo", 's', w), 3,
             (kptx_operand[]){d, d, imm(sign_extend((int64_t)inv, w))});
    if (k)
        emit(rw, sv, "and", b, 3, (kptx_operand[]){d, d, imm((int64_t)((1ull << (w - k)) - 1))});
    emit(rw, sv, "add", s_, 3, (kptx_operand[]){d, d, imm(-1)});
    if (k)
        emit(rw, sv, "setp", mods(m, sizeof m, ".lt.and", 'u', w), 4,
             (kptx_operand[]){pa, d, imm(KPTX_CANCEL_POLL_PERIOD), pb});
    else
        emit(rw, sv, "setp", mods(m, sizeof m, ".lt", 'u', w), 3,
             (kptx_operand[]){pa, d, imm(KPTX_CANCEL_POLL_PERIOD)});
    emit(rw, sv, "add", s_, 3,
         (kptx_operand[]){d, i, imm(sign_extend((int64_t)(step * KPTX_CANCEL_POLL_PERIOD), w))});
    emit(rw, sv, "selp", b, 4, (kptx_operand[]){in, x, d, pa});
}

void kptx_loop_emit_head(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_counted_loop *l,
                         const kptx_loop_names *nm)
{
    if (l->kind == KPTX_LOOP_NE)
        emit_ne_head(rw, sv, l, nm);
    else
        emit_ordered_head(rw, sv, l, nm);
    kptx_rw_label(rw, sv, nm->head2);
}

void kptx_loop_emit_test(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_stmt *test,
                         const kptx_counted_loop *l, const kptx_loop_names *nm)
{
    kptx_stmt *c = kptx_rw_push(rw, sv, test);
    kptx_operand *ops = kptx_rw_alloc(rw, 3 * sizeof *ops);
    if (!c || !ops)
        return;
    memcpy(ops, test->u.instr.ops, 3 * sizeof *ops);
    ops[l->bound_first ? 1 : 2] = reg(nm->inner);
    c->line = 0;
    c->u.instr.ops = ops;
}

void kptx_loop_emit_edge(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_stmt *edge,
                         const kptx_stmt *test, const kptx_loop_names *nm)
{
    const kptx_instr *br = &edge->u.instr;
    kptx_operand target = {.kind = KPTX_OPND_SYMBOL, .name = nm->head2};
    kptx_stmt *inner = kptx_rw_emit(rw, sv, "bra", "", 1, &target);
    kptx_rw_push(rw, sv, test);
    target.name = nm->leave;
    kptx_stmt *leave = kptx_rw_emit(rw, sv, "bra", "", 1, &target);
    if (!inner || !leave)
        return;
    inner->u.instr.guard = leave->u.instr.guard = br->guard;
    inner->u.instr.guard_negated = br->guard_negated;
    leave->u.instr.guard_negated = !br->guard_negated;
}

void kptx_loop_emit_tail(kptx_rw *rw, kptx_stmt_vec *sv, const char *head_label,
                         const kptx_loop_names *nm)
{
    kptx_operand target = {.kind = KPTX_OPND_SYMBOL, .name = head_label};
    kptx_rw_emit(rw, sv, "bra", "", 1, &target);
    kptx_rw_label(rw, sv, nm->leave);
}
