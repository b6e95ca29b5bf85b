/* The fence's scrub of what earlier kernels left (kernelet/ptx.h, "Fencing";
 * docs/SECURITY.md, "What earlier kernels left"). A GPU clears neither a thread's local
 * memory nor a block's shared memory between kernels of one context: on an H100 a kernel
 * that read a local array it never wrote found, in every word, what another tenant's kernel
 * had left there, and one that read a shared array it never wrote, in 59% of its words
 * (bench/compat/residue.cu, docs/perf/isolation.md). All tenants' kernels share one
 * context, so
 *   - every fenced entry zeroes its whole frame as it starts, [stacksave, top) with the
 *     local clamp's top (fence_local.c): its .local variables and what ptxas adds there
 *     that PTX cannot name (spill slots, padding, inlined callees' frames), all that the
 *     clamp leaves its own accesses; what it reads there without writing is zero, as a
 *     tenant's fresh allocation is. An entry that cannot read local memory at all (no
 *     call, no .local or generic address) is left without it: what ptxas puts in its frame
 *     its own code writes before reading;
 *   - every fenced device function zeroes its top-level .local variables as it starts
 *     (and so does an entry where the top is unknown: 0, or a module that cannot
 *     stacksave). A callee's frame lies below its caller's, [its stacksave, the caller's
 *     stack pointer at the call), and PTX gives it only the first, so the unnamed words
 *     of a device function's frame that ptxas does not inline are not zeroed
 *     (docs/SECURITY.md says why the entry cannot zero them for it);
 *   - every fenced entry's block zeroes its shared memory, all that the fence's clamp lets
 *     it reach but the driver's reserved bytes below it, and waits for that (bar.sync 0)
 *     before its code runs.
 *
 * A variable is zeroed in stores as wide as its alignment allows (16 bytes at most, the
 * widest PTX store); more than KPTX_SCRUB_UNROLLED of them become a loop over the
 * variable, the rest single stores. A device function's variables of nested blocks are not
 * visible where it starts and are left alone, as are module-scope .local variables (nvcc
 * writes neither). Addresses below the running frame are the local clamp's to confine.
 *
 * A block's own shared memory ends at the fence's limit (fence_shared.c: where the dynamic
 * memory starts, plus its size) and holds %total_smem_size bytes of the tenant's, rounded
 * up to 128 on the H100 (docs/perf/isolation.md): so the scrub starts at limit minus that,
 * rounded up to a multiple of 128, which on the H100 is where the user's memory starts
 * (0x400, above the driver's reserved 0x120 bytes) and on the emulator 0. The block's
 * threads zero it 16 bytes each at a time, thread 0 the last few bytes. A block without
 * shared memory skips it all, the barrier too. */
#include <stdio.h>

#include "ptx_internal.h"

/* Stores of one width up to which a variable is zeroed without a loop. */
#define KPTX_SCRUB_UNROLLED 4u
/* Statements one variable may take: a loop of six, and a tail of four widths. */
#define KPTX_SCRUB_PER_VAR (6u + 4u)

void kptx_scrub_setup(kptx_rw *rw, kptx_local_scrub *ls, const char *prefix)
{
    ls->addr = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_lza"));
    ls->end = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_lze"));
    ls->zero = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_lz"));
    ls->zero16 = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_lzh"));
    ls->pred = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_lzp"));
    ls->label = kptx_rw_name(rw, prefix, "_lzloop");
    ls->n_vars = 0;
    ls->sreg = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_ss"));
    ls->slabel = kptx_rw_name(rw, prefix, "_ss");
    ls->shared = false;
    ls->frame_top = 0;
    ls->frame_read = false;
}

/* The .local variable statement s declares at the body's top level, or NULL. */
static const kptx_var *top_local(const kptx_stmt *s, int depth)
{
    return depth == 0 && s->kind == KPTX_STMT_VAR && s->u.var.space == KPTX_SPACE_LOCAL
               ? &s->u.var
               : NULL;
}

static unsigned count_top_locals(const kptx_function *fn)
{
    unsigned n = 0;
    int depth = 0;
    for (unsigned i = 0; fn->has_body && i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        n += top_local(s, depth) != NULL;
        depth += s->kind == KPTX_STMT_BLOCK_BEGIN;
        depth -= s->kind == KPTX_STMT_BLOCK_END;
    }
    return n;
}

/* Whether in names a memory operand in a space other than the thread's local memory
 * (global, shared, const, param): it cannot read the frame. */
static bool names_other_space(const kptx_instr *in)
{
    for (unsigned i = 0; i < in->n_mods; i++) {
        kptx_space sp = kptx_mod_space(in->mods[i]);
        if (sp == KPTX_SPACE_GLOBAL || sp == KPTX_SPACE_SHARED || sp == KPTX_SPACE_CONST ||
            sp == KPTX_SPACE_PARAM)
            return true;
    }
    return false;
}

/* Whether fn may read local memory: a call, or an instruction with an address operand
 * whose space is .local or generic. Reading its frame takes one; what ptxas itself adds
 * there (spills, saved registers) its own code writes before it reads. */
static bool may_read_local(const kptx_function *fn)
{
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        if (s->kind != KPTX_STMT_INSTR)
            continue;
        const kptx_instr *in = &s->u.instr;
        if (!strcmp(in->opcode, "call"))
            return true;
        for (unsigned k = 0; k < in->n_ops; k++)
            if (in->ops[k].kind == KPTX_OPND_ADDRESS && !names_other_space(in))
                return true;
    }
    return false;
}

void kptx_scrub_scan(kptx_local_scrub *ls, const kptx_function *fn, uint64_t local_top)
{
    ls->n_vars = count_top_locals(fn);
    ls->n_loops = 0;
    ls->shared = fn->is_entry;
    ls->frame_top = fn->is_entry ? local_top : 0;
    ls->frame_read = ls->frame_top && may_read_local(fn);
    if (ls->frame_top && !ls->frame_read)
        ls->n_vars = 0;     /* nothing there it could read: neither frame nor variables */
}

bool kptx_scrub_any(const kptx_function *fn)
{
    return count_top_locals(fn) != 0;
}

/* Statements the shared scrub adds (kptx_scrub_shared), and an entry's frame scrub
 * (zero_frame). */
#define KPTX_SCRUB_SHARED_STMTS 48u
#define KPTX_SCRUB_FRAME_STMTS 32u

size_t kptx_scrub_bound(const kptx_function *fn)
{
    unsigned n = count_top_locals(fn);
    return 7u + (size_t)n * (KPTX_SCRUB_PER_VAR + 2 * KPTX_SCRUB_UNROLLED) +
           (fn->is_entry ? KPTX_SCRUB_SHARED_STMTS + KPTX_SCRUB_FRAME_STMTS : 0);
}

/* The shared scrub's .b32 registers: sreg<k>. */
enum { S_LIM, S_LO, S_AT, S_STRIDE, S_TMP, S_END, S_TID, N_SREGS };

void kptx_scrub_declare(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls)
{
    if (!ls->n_vars && !ls->shared)
        return;
    kptx_rw_declare_reg(rw, sv, ".b64", ls->addr, 0);
    kptx_rw_declare_reg(rw, sv, ".b64", ls->end, 0);
    kptx_rw_declare_reg(rw, sv, ".b32", ls->zero, 0);
    kptx_rw_declare_reg(rw, sv, ".b16", ls->zero16, 0);
    kptx_rw_declare_reg(rw, sv, ".pred", ls->pred, 0);
    if (ls->shared)
        kptx_rw_declare_reg(rw, sv, ".b32", ls->sreg, N_SREGS);
}

/* The zero a store of width bytes writes: {z, z, z, z}, {z, z}, z, or the 16-bit z (PTX
 * stores single bytes from 16-bit registers). */
static kptx_operand zero_of(kptx_rw *rw, const kptx_local_scrub *ls, unsigned width)
{
    if (width <= 2)
        return kptx_reg_operand(ls->zero16);
    if (width == 4)
        return kptx_reg_operand(ls->zero);
    unsigned n = width / 4;
    kptx_operand v = {.kind = KPTX_OPND_VECTOR, .n_elems = n};
    v.elems = kptx_rw_alloc(rw, n * sizeof *v.elems);
    for (unsigned i = 0; v.elems && i < n; i++)
        v.elems[i] = kptx_reg_operand(ls->zero);
    return v;
}

static const char *store_mods(unsigned width)
{
    switch (width) {
    case 16: return ".local.v4.b32";
    case 8: return ".local.v2.b32";
    case 4: return ".local.b32";
    case 2: return ".local.b16";
    default: return ".local.b8";
    }
}

/* The widest store (16 bytes at most) that var's alignment allows and its size holds. */
static unsigned widest_store(uint64_t size, unsigned align)
{
    unsigned w = 16;
    while (w > 1 && (w > align || w > size))
        w /= 2;
    return w;
}

static void store_at(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls,
                     kptx_operand addr, unsigned width)
{
    kptx_rw_emit3(rw, sv, "st", store_mods(width), addr, zero_of(rw, ls, width), (kptx_operand){0}, 2);
}

static void store_shared(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls,
                         kptx_operand addr, unsigned width)
{
    kptx_rw_emit3(rw, sv, "st", width == 16 ? ".shared.v4.b32" : ".shared.b8", addr,
         zero_of(rw, ls, width), (kptx_operand){0}, 2);
}

/* count stores of width bytes from var's start: one by one, or a loop over them. */
static void zero_run(kptx_rw *rw, kptx_stmt_vec *sv, kptx_local_scrub *ls, const char *var,
                     uint64_t count, unsigned width)
{
    if (count <= KPTX_SCRUB_UNROLLED) {
        for (uint64_t i = 0; i < count; i++)
            store_at(rw, sv, ls, kptx_rw_addr(rw, var, (int64_t)(i * width)), width);
        return;
    }
    kptx_operand a = kptx_reg_operand(ls->addr), e = kptx_reg_operand(ls->end), none = {0};
    char num[16];
    snprintf(num, sizeof num, "%u", ls->n_loops++);
    const char *label = kptx_rw_name(rw, ls->label, num);
    kptx_rw_emit3(rw, sv, "mov", ".u64", a, (kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = var}, none,
         2);
    kptx_rw_emit3(rw, sv, "add", ".u64", e, a, kptx_int_operand((int64_t)(count * width)), 3);
    kptx_rw_label(rw, sv, label);
    kptx_operand at = {.kind = KPTX_OPND_ADDRESS, .n_elems = 1};
    at.elems = kptx_rw_alloc(rw, sizeof *at.elems);
    if (at.elems)
        at.elems[0] = a;
    store_at(rw, sv, ls, at, width);
    kptx_rw_emit3(rw, sv, "add", ".u64", a, a, kptx_int_operand(width), 3);
    kptx_rw_emit3(rw, sv, "setp", ".lt.u64", kptx_reg_operand(ls->pred), a, e, 3);
    kptx_stmt *b = kptx_rw_emit(rw, sv, "bra", "", 1,
                                &(kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = label});
    if (b)
        b->u.instr.guard = ls->pred;
}

static void zero_var(kptx_rw *rw, kptx_stmt_vec *sv, kptx_local_scrub *ls, const kptx_var *v)
{
    uint64_t size = 0;
    unsigned align = 1;
    kptx_var_size_align(v, &size, &align);
    if (!size)
        return;
    unsigned w = widest_store(size, align ? align : 1);
    uint64_t n = size / w, off = n * w;
    zero_run(rw, sv, ls, v->name, n, w);
    for (unsigned t = w / 2; t >= 1 && off < size; t /= 2) {
        if (size - off >= t) {      /* off is a multiple of w, so of t: aligned */
            store_at(rw, sv, ls, kptx_rw_addr(rw, v->name, (int64_t)off), t);
            off += t;
        }
    }
}

/* ---- the block's shared memory ---- */

static kptx_operand sreg(kptx_rw *rw, const kptx_local_scrub *ls, unsigned k)
{
    char num[8];
    snprintf(num, sizeof num, "%u", k);
    return kptx_reg_operand(kptx_rw_name(rw, ls->sreg, num));
}

static kptx_operand special(const char *name)
{
    return (kptx_operand){.kind = KPTX_OPND_SREG, .name = name};
}

static const char *slabel(kptx_rw *rw, const kptx_local_scrub *ls, const char *what)
{
    return kptx_rw_name(rw, ls->slabel, what);
}

static void branch(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls,
                   const char *label, bool when)
{
    kptx_stmt *b = kptx_rw_emit(rw, sv, "bra", "", 1,
                                &(kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = label});
    if (b) {
        b->u.instr.guard = ls->pred;
        b->u.instr.guard_negated = !when;
    }
}

static void jump(kptx_rw *rw, kptx_stmt_vec *sv, const char *label)
{
    kptx_rw_emit(rw, sv, "bra", "", 1, &(kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = label});
}

static kptx_operand at_reg(kptx_rw *rw, kptx_operand reg)
{
    kptx_operand at = {.kind = KPTX_OPND_ADDRESS, .n_elems = 1};
    at.elems = kptx_rw_alloc(rw, sizeof *at.elems);
    if (at.elems)
        at.elems[0] = reg;
    return at;
}

/* S_LIM: the end of the block's shared memory; S_LO: where the user's starts. */
static void shared_bounds(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls,
                          const char *dyn_var)
{
    kptx_operand lim = sreg(rw, ls, S_LIM), lo = sreg(rw, ls, S_LO), t = sreg(rw, ls, S_TMP);
    kptx_operand none = {0};
    kptx_rw_emit3(rw, sv, "mov", ".u32", lim, (kptx_operand){.kind = KPTX_OPND_SYMBOL, .name = dyn_var},
         none, 2);
    kptx_rw_emit3(rw, sv, "mov", ".u32", t, special("%dynamic_smem_size"), none, 2);
    kptx_rw_emit3(rw, sv, "add", ".u32", lim, lim, t, 3);
    kptx_rw_emit3(rw, sv, "mov", ".u32", t, special("%total_smem_size"), none, 2);
    kptx_rw_emit3(rw, sv, "min", ".u32", t, t, lim, 3);
    kptx_rw_emit3(rw, sv, "sub", ".u32", lo, lim, t, 3);
    kptx_rw_emit3(rw, sv, "add", ".u32", lo, lo, kptx_int_operand(127), 3);
    kptx_rw_emit3(rw, sv, "and", ".b32", lo, lo, kptx_int_operand(-128), 3);
}

/* S_TID: the thread's linear index in its block; S_STRIDE: 16 bytes per thread. */
static void thread_index(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls)
{
    kptx_operand id = sreg(rw, ls, S_TID), n = sreg(rw, ls, S_STRIDE), t = sreg(rw, ls, S_TMP);
    kptx_operand none = {0};
    static const char *const ntid[3] = {"%ntid.x", "%ntid.y", "%ntid.z"};
    static const char *const tid[3] = {"%tid.x", "%tid.y", "%tid.z"};
    kptx_rw_emit3(rw, sv, "mov", ".u32", id, special(tid[2]), none, 2);
    for (int k = 1; k >= 0; k--) {      /* id = (tid.z * ntid.y + tid.y) * ntid.x + tid.x */
        kptx_rw_emit3(rw, sv, "mov", ".u32", t, special(ntid[k]), none, 2);
        kptx_rw_emit3(rw, sv, "mul", ".lo.u32", id, id, t, 3);
        kptx_rw_emit3(rw, sv, "mov", ".u32", t, special(tid[k]), none, 2);
        kptx_rw_emit3(rw, sv, "add", ".u32", id, id, t, 3);
    }
    kptx_rw_emit3(rw, sv, "mov", ".u32", n, special(ntid[0]), none, 2);
    for (unsigned k = 1; k < 3; k++) {
        kptx_rw_emit3(rw, sv, "mov", ".u32", t, special(ntid[k]), none, 2);
        kptx_rw_emit3(rw, sv, "mul", ".lo.u32", n, n, t, 3);
    }
    kptx_rw_emit3(rw, sv, "shl", ".b32", n, n, kptx_int_operand(4), 3);
}

void kptx_scrub_shared(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls,
                       const char *dyn_var)
{
    kptx_operand lim = sreg(rw, ls, S_LIM), lo = sreg(rw, ls, S_LO), at = sreg(rw, ls, S_AT);
    kptx_operand end = sreg(rw, ls, S_END), id = sreg(rw, ls, S_TID), p = kptx_reg_operand(ls->pred);
    const char *done = slabel(rw, ls, "done"), *body = slabel(rw, ls, "body");
    const char *tail = slabel(rw, ls, "tail"), *bytes = slabel(rw, ls, "bytes");
    const char *wait = slabel(rw, ls, "wait");
    shared_bounds(rw, sv, ls, dyn_var);
    kptx_rw_emit3(rw, sv, "setp", ".ge.u32", p, lo, lim, 3);
    branch(rw, sv, ls, done, true);             /* no shared memory: the same for the block */
    thread_index(rw, sv, ls);
    kptx_rw_emit3(rw, sv, "shl", ".b32", at, id, kptx_int_operand(4), 3);
    kptx_rw_emit3(rw, sv, "add", ".u32", at, at, lo, 3);
    kptx_rw_emit3(rw, sv, "and", ".b32", end, lim, kptx_int_operand(-16), 3);
    kptx_rw_label(rw, sv, body);
    kptx_rw_emit3(rw, sv, "setp", ".lt.u32", p, at, end, 3);
    branch(rw, sv, ls, tail, false);
    store_shared(rw, sv, ls, at_reg(rw, at), 16);
    kptx_rw_emit3(rw, sv, "add", ".u32", at, at, sreg(rw, ls, S_STRIDE), 3);
    jump(rw, sv, body);
    kptx_rw_label(rw, sv, tail);                /* thread 0: the bytes past the last 16 */
    kptx_rw_emit3(rw, sv, "setp", ".ne.u32", p, id, kptx_int_operand(0), 3);
    branch(rw, sv, ls, wait, true);
    kptx_rw_emit3(rw, sv, "max", ".u32", at, end, lo, 3);
    kptx_rw_label(rw, sv, bytes);
    kptx_rw_emit3(rw, sv, "setp", ".lt.u32", p, at, lim, 3);
    branch(rw, sv, ls, wait, false);
    store_shared(rw, sv, ls, at_reg(rw, at), 1);
    kptx_rw_emit3(rw, sv, "add", ".u32", at, at, kptx_int_operand(1), 3);
    jump(rw, sv, bytes);
    kptx_rw_label(rw, sv, wait);
    kptx_rw_emit(rw, sv, "bar", ".sync", 1, &(kptx_operand){.kind = KPTX_OPND_INT, .value = 0});
    kptx_rw_label(rw, sv, done);
}

/* ---- an entry's frame ---- */

static const char *frame_label(kptx_rw *rw, const kptx_local_scrub *ls, const char *what)
{
    return kptx_rw_name(rw, ls->label, what);
}

/* Single bytes from addr while addr < end (and, with align, while addr is not a multiple
 * of 16): the frame's ends where they are not 16-byte aligned. */
static void zero_bytes(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls,
                       int64_t end, bool align, const char *loop, const char *done)
{
    kptx_operand a = kptx_reg_operand(ls->addr), t = kptx_reg_operand(ls->end);
    kptx_operand p = kptx_reg_operand(ls->pred);
    kptx_rw_label(rw, sv, loop);
    if (align) {
        kptx_rw_emit3(rw, sv, "and", ".b64", t, a, kptx_int_operand(15), 3);
        kptx_rw_emit3(rw, sv, "setp", ".eq.u64", p, t, kptx_int_operand(0), 3);
        branch(rw, sv, ls, done, true);
    }
    kptx_rw_emit3(rw, sv, "setp", ".ge.u64", p, a, kptx_int_operand(end), 3);
    branch(rw, sv, ls, done, true);
    store_at(rw, sv, ls, at_reg(rw, a), 1);
    kptx_rw_emit3(rw, sv, "add", ".u64", a, a, kptx_int_operand(1), 3);
    jump(rw, sv, loop);
    kptx_rw_label(rw, sv, done);
}

/* Zeroes the entry's whole frame, [stacksave as it starts, top): its variables and the
 * words ptxas adds and PTX cannot name (spill slots, saved registers, padding), all the
 * clamp leaves the entry's own accesses (fence_local.c). The bytes up to a 16-byte
 * boundary one by one (the frame's bottom need not be aligned: the emulator's is not, and
 * below it may be no memory), then 16 bytes a store, then the bytes past top's last
 * boundary (none where top is a multiple of 16, as 0xfffdc0 is). */
static void zero_frame(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_local_scrub *ls)
{
    kptx_operand a = kptx_reg_operand(ls->addr), e = kptx_reg_operand(ls->end);
    kptx_operand p = kptx_reg_operand(ls->pred), none = {0};
    int64_t top = (int64_t)ls->frame_top, top16 = top & -16;
    const char *loop = frame_label(rw, ls, "f16"), *done = frame_label(rw, ls, "f16end");
    kptx_rw_emit(rw, sv, "stacksave", ".u64", 1, &a);
    zero_bytes(rw, sv, ls, top, true, frame_label(rw, ls, "fhead"),
               frame_label(rw, ls, "fheadend"));
    kptx_rw_emit3(rw, sv, "mov", ".u64", e, kptx_int_operand(top16), none, 2);
    kptx_rw_emit3(rw, sv, "setp", ".ge.u64", p, a, e, 3);
    branch(rw, sv, ls, done, true);
    kptx_rw_label(rw, sv, loop);
    store_at(rw, sv, ls, at_reg(rw, a), 16);
    kptx_rw_emit3(rw, sv, "add", ".u64", a, a, kptx_int_operand(16), 3);
    kptx_rw_emit3(rw, sv, "setp", ".lt.u64", p, a, e, 3);
    branch(rw, sv, ls, loop, true);
    kptx_rw_label(rw, sv, done);
    if (top != top16)
        zero_bytes(rw, sv, ls, top, false, frame_label(rw, ls, "ftail"),
                   frame_label(rw, ls, "ftailend"));
}

const char *kptx_scrub_done_label(kptx_rw *rw, const kptx_local_scrub *ls)
{
    return slabel(rw, ls, "done");
}

void kptx_scrub_prologue(kptx_rw *rw, kptx_stmt_vec *sv, kptx_local_scrub *ls,
                         const kptx_function *fn)
{
    if (!ls->n_vars && !ls->shared)
        return;
    kptx_operand none = {0};
    kptx_rw_emit3(rw, sv, "mov", ".b32", kptx_reg_operand(ls->zero), kptx_int_operand(0), none, 2);
    kptx_rw_emit3(rw, sv, "mov", ".b16", kptx_reg_operand(ls->zero16), kptx_int_operand(0), none, 2);
    if (ls->frame_top) {        /* its variables lie in its frame */
        if (ls->frame_read)
            zero_frame(rw, sv, ls);
        return;
    }
    int depth = 0;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        const kptx_var *v = top_local(s, depth);
        if (v)
            zero_var(rw, sv, ls, v);
        depth += s->kind == KPTX_STMT_BLOCK_BEGIN;
        depth -= s->kind == KPTX_STMT_BLOCK_END;
    }
}
