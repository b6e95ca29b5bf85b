/* What the fencing pass can confine: which instructions touch global memory and how, and
 * whether a whole entry (with everything it calls) can be fenced. Anything that may reach
 * global memory in a way the pass does not rewrite makes the entry unfenceable: unknown
 * never means "run unfenced". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* The instructions whose address operands the pass masks. */
static bool fenceable_opcode(const char *op)
{
    return !strcmp(op, "ld") || !strcmp(op, "ldu") || !strcmp(op, "st") ||
           !strcmp(op, "atom") || !strcmp(op, "red");
}

static bool has_address(const kptx_instr *in)
{
    for (unsigned i = 0; i < in->n_ops; i++)
        if (in->ops[i].kind == KPTX_OPND_ADDRESS)
            return true;
    return false;
}

const kptx_var *kptx_symbol_var(const kptx_module *m, const kptx_function *fn, const char *sym)
{
    for (unsigned i = 0; i < fn->n_stmts; i++)
        if (fn->stmts[i].kind == KPTX_STMT_VAR && !strcmp(fn->stmts[i].u.var.name, sym))
            return &fn->stmts[i].u.var;
    for (unsigned i = 0; i < m->n_items; i++)
        if (m->items[i].kind == KPTX_ITEM_VAR && !strcmp(m->items[i].u.var.name, sym))
            return &m->items[i].u.var;
    return NULL;
}

kptx_space kptx_symbol_space(const kptx_module *m, const kptx_function *fn, const char *sym)
{
    const kptx_var *v = kptx_symbol_var(m, fn, sym);
    return v ? v->space : KPTX_SPACE_NONE;
}

/* Whether address o has a base the pass can rewrite: a register, a number, or a variable
 * whose address it can take (of space `space`: a .global one, or a .shared one for .shared
 * accesses; for generic accesses (NONE) also .shared, .local and .const ones, through
 * cvta). */
static bool base_known(const kptx_module *m, const kptx_function *fn, const kptx_operand *o,
                       kptx_space space)
{
    if (o->kind != KPTX_OPND_ADDRESS || o->n_elems != 1)
        return false;
    if (o->elems[0].kind != KPTX_OPND_SYMBOL)
        return true;
    kptx_space sp = kptx_symbol_space(m, fn, o->elems[0].name);
    return sp == space || (space == KPTX_SPACE_NONE &&
                           (sp == KPTX_SPACE_GLOBAL || sp == KPTX_SPACE_SHARED ||
                            sp == KPTX_SPACE_LOCAL || sp == KPTX_SPACE_CONST));
}

/* Whether every address of in has such a base. */
static bool bases_known(const kptx_module *m, const kptx_function *fn, const kptx_instr *in,
                        kptx_space space)
{
    for (unsigned i = 0; i < in->n_ops; i++)
        if (in->ops[i].kind == KPTX_OPND_ADDRESS && !base_known(m, fn, &in->ops[i], space))
            return false;
    return true;
}

/* Whether in is cp.async<mods[1]>..., e.g. ".ca" (cp.async.ca.shared.global). */
static bool is_cp_async(const kptx_instr *in, const char *form)
{
    return !strcmp(in->opcode, "cp") && in->n_mods >= 2 && !strcmp(in->mods[0], ".async") &&
           !strcmp(in->mods[1], form);
}

bool kptx_is_async_copy(const kptx_instr *in)
{
    return is_cp_async(in, ".ca") || is_cp_async(in, ".cg");
}

/* Whether in is one of the instructions besides ld/st/atom/red whose shared address the
 * pass clamps: ldmatrix, stmatrix, the mbarrier operations (and cp.async.mbarrier.arrive),
 * cp.async (its destination; its source is masked as a global access). */
static bool clamped_opcode(const kptx_instr *in)
{
    return !strcmp(in->opcode, "ldmatrix") || !strcmp(in->opcode, "stmatrix") ||
           !strcmp(in->opcode, "mbarrier") || is_cp_async(in, ".mbarrier") ||
           kptx_is_async_copy(in);
}

/* The bytes such an instruction touches at its shared address, which the GPU requires it
 * aligned to: a row of a matrix for ldmatrix and stmatrix (16 bytes, every shape: 8 16-bit
 * elements, 16 8-bit ones, or 16 packed 4- or 6-bit ones with their padding), an mbarrier
 * object (8), cp.async's cp-size (4, 8 or 16; also what it reads at its source). 0: none
 * the pass can tell. */
static unsigned clamped_op_width(const kptx_instr *in)
{
    if (!strcmp(in->opcode, "ldmatrix") || !strcmp(in->opcode, "stmatrix"))
        return 16;
    if (!kptx_is_async_copy(in))
        return 8;
    int64_t size = in->n_ops > 2 && in->ops[2].kind == KPTX_OPND_INT ? in->ops[2].value : 0;
    return size == 4 || size == 8 || size == 16 ? (unsigned)size : 0;
}

/* Whether in reads shared memory through matrix descriptors, 64-bit registers that encode
 * a start address (bits 0-13, in 16-byte units) and a layout (leading and stride byte
 * offsets, swizzle) rather than through an address operand: wgmma.mma_async (sm_90), whose
 * reach from the start depends on offsets known only at run time, and every tcgen05
 * instruction (sm_100: descriptors, tensor memory). */
static bool uses_descriptors(const kptx_instr *in)
{
    if (!strcmp(in->opcode, "tcgen05"))
        return true;
    return !strcmp(in->opcode, "wgmma") && in->n_mods &&
           !strncmp(in->mods[0], ".mma_async", 10);
}

/* Whether in may reach the shared memory of another block of its cluster (distributed
 * shared memory, sm_90): mapa, which makes such addresses, and any instruction on
 * .shared::cluster but isspacep and getctarank, which only look at an address. */
static bool reaches_cluster(const kptx_instr *in)
{
    if (!strcmp(in->opcode, "mapa"))
        return true;
    if (!strcmp(in->opcode, "isspacep") || !strcmp(in->opcode, "getctarank"))
        return false;
    for (unsigned i = 0; i < in->n_mods; i++)
        if (!strcmp(in->mods[i], ".shared::cluster"))
            return true;
    return false;
}

unsigned kptx_access_width(const kptx_instr *in)
{
    if (clamped_opcode(in))
        return clamped_op_width(in);
    unsigned size = 0, vec = 1;
    for (unsigned i = 0; i < in->n_mods; i++) {
        const char *mod = in->mods[i];
        if (!strcmp(mod, ".v2") || !strcmp(mod, ".v4") || !strcmp(mod, ".v8"))
            vec = (unsigned)(mod[2] - '0');
        else if (kptx_type_size(mod))
            size = kptx_type_size(mod);
    }
    unsigned width = size * vec;
    return width && width <= KPTX_ACCESS_MAX && !(width & (width - 1)) ? width : 0;
}

/* The kind of in, one of clamped_opcode's, on .shared (global: also on .global): cp.async
 * from global to shared memory, its destination clamped and its source masked (COPY); the
 * others clamped (SHARED). Generic forms (no state space; a generic address that is not
 * shared is undefined for them) and bases or widths the pass cannot tell are refused. */
static kptx_fence_kind clamped_kind(const kptx_module *m, const kptx_function *fn,
                                    const kptx_instr *in, bool global, bool shared)
{
    if (!shared || !kptx_access_width(in))
        return KPTX_FENCE_NEVER;
    if (!kptx_is_async_copy(in))
        return !global && bases_known(m, fn, in, KPTX_SPACE_SHARED) ? KPTX_FENCE_SHARED
                                                                  : KPTX_FENCE_NEVER;
    return global && in->n_ops >= 3 && base_known(m, fn, &in->ops[0], KPTX_SPACE_SHARED) &&
           base_known(m, fn, &in->ops[1], KPTX_SPACE_GLOBAL) ? KPTX_FENCE_COPY
                                                             : KPTX_FENCE_NEVER;
}

kptx_fence_kind kptx_fence_kind_of(const kptx_module *m, const kptx_function *fn,
                                   const kptx_instr *in)
{
    if (reaches_cluster(in) || uses_descriptors(in))
        return KPTX_FENCE_NEVER;
    if (!has_address(in))
        return KPTX_FENCE_NONE;
    bool global = false, shared = false, other = false;
    for (unsigned i = 0; i < in->n_mods; i++) {
        kptx_space sp = kptx_mod_space(in->mods[i]);  /* .shared::cluster: above */
        global |= sp == KPTX_SPACE_GLOBAL;
        shared |= sp == KPTX_SPACE_SHARED;
        other |= sp == KPTX_SPACE_SHARED || sp == KPTX_SPACE_LOCAL || sp == KPTX_SPACE_CONST ||
                 sp == KPTX_SPACE_PARAM;
    }
    if (clamped_opcode(in))
        return clamped_kind(m, fn, in, global, shared);
    /* any other instruction with a shared address (wmma.load/store .shared, whose stride
     * is a run-time value; tensormap.replace .shared::cta, st.bulk, ...) is refused: it
     * could reach past the block's shared memory and end the context */
    if (!fenceable_opcode(in->opcode))
        return global || shared || !other ? KPTX_FENCE_NEVER : KPTX_FENCE_NONE;
    if (other && !global && !shared)
        return KPTX_FENCE_NONE;
    kptx_space space = global ? KPTX_SPACE_GLOBAL : shared ? KPTX_SPACE_SHARED : KPTX_SPACE_NONE;
    /* the mask (or the clamp) aligns the address to the access's width: one it cannot
     * tell is refused */
    if (!bases_known(m, fn, in, space) || !kptx_access_width(in))
        return KPTX_FENCE_NEVER;
    return global ? KPTX_FENCE_GLOBAL : shared ? KPTX_FENCE_SHARED : KPTX_FENCE_GENERIC;
}

/* The first instruction of fn the pass cannot fence, or NULL; *touches gets whether fn
 * touches global memory at all (its .shared accesses are clamped wherever they are:
 * fence.c, fence_shared.c). */
static const kptx_stmt *first_unfenceable(const kptx_module *m, const kptx_function *fn,
                                          bool *touches)
{
    *touches = false;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        if (s->kind != KPTX_STMT_INSTR)
            continue;
        kptx_fence_kind k = kptx_fence_kind_of(m, fn, &s->u.instr);
        *touches |= k != KPTX_FENCE_NONE && k != KPTX_FENCE_SHARED;
        if (k == KPTX_FENCE_NEVER)
            return s;
    }
    return NULL;
}

/* The first instruction of fn that reads a special register whose name starts with
 * prefix, or NULL; its operand's name in *name. */
static const kptx_stmt *first_sreg(const kptx_function *fn, const char *prefix,
                                   const char **name)
{
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        if (s->kind != KPTX_STMT_INSTR)
            continue;
        for (unsigned j = 0; j < s->u.instr.n_ops; j++) {
            const kptx_operand *o = &s->u.instr.ops[j];
            if (o->kind == KPTX_OPND_SREG && o->name &&
                !strncmp(o->name, prefix, strlen(prefix))) {
                *name = o->name;
                return s;
            }
        }
    }
    return NULL;
}

/* Why fn may not read a special register: %envreg, where the driver puts its per-launch
 * workspace (cooperative groups' grid-wide barrier): memory outside every tenant's
 * window, which the mask would redirect and so break the barrier; %reserved_smem_offset_*,
 * addresses in the driver's reserved shared memory, which may lie past the block's own
 * and so be clamped (fence_shared.c). "" when it reads neither. */
static void judge_sregs(const kptx_function *fn, char *why, size_t len)
{
    const char *name;
    const kptx_stmt *s = first_sreg(fn, "%envreg", &name);
    if (s) {
        snprintf(why, len, "%%envreg (line %u): the driver's launch workspace (a grid-wide "
                 "barrier of cooperative groups) lies outside the tenant's window", s->line);
        return;
    }
    if ((s = first_sreg(fn, "%reserved_smem_offset", &name)))
        snprintf(why, len, "%s (line %u): the driver's reserved shared memory, which the "
                 "fence's clamp of shared addresses may not cover", name, s->line);
}

/* Whether in, an instruction the pass cannot fence (KPTX_FENCE_NEVER), stops it because of
 * shared memory (a cluster's, descriptors, or an instruction on .shared it cannot clamp)
 * rather than global memory. */
static bool shared_reason(const kptx_instr *in)
{
    if (reaches_cluster(in) || uses_descriptors(in))
        return true;
    bool shared = false;
    for (unsigned i = 0; i < in->n_mods; i++) {
        if (!strcmp(in->mods[i], ".global"))
            return false;
        shared |= !strncmp(in->mods[i], ".shared", 7);
    }
    return shared;
}

/* Whether fn has an access whose address the fence clamps into the block's shared
 * memory (.shared, generic), which needs %dynamic_smem_size: PTX ISA 4.1 (fence_shared.c). */
static bool clamps_shared(const kptx_module *m, const kptx_function *fn)
{
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        kptx_fence_kind k = s->kind == KPTX_STMT_INSTR ? kptx_fence_kind_of(m, fn, &s->u.instr)
                                                       : KPTX_FENCE_NONE;
        if (k == KPTX_FENCE_SHARED || k == KPTX_FENCE_GENERIC || k == KPTX_FENCE_COPY)
            return true;
    }
    return false;
}

static bool before_isa_4_1(const kptx_module *m)
{
    return m->version_major < 4 || (m->version_major == 4 && m->version_minor < 1);
}

/* Why s, an instruction the pass cannot fence (KPTX_FENCE_NEVER), stops it. */
static void describe_instr(const kptx_stmt *s, char *why, size_t len)
{
    char name[96];
    const kptx_instr *in = &s->u.instr;
    size_t n = (size_t)snprintf(name, sizeof name, "%s", in->opcode);
    for (unsigned i = 0; i < in->n_mods && n < sizeof name; i++)
        n += (size_t)snprintf(name + n, sizeof name - n, "%s", in->mods[i]);
    if (reaches_cluster(in))
        snprintf(why, len, "%s (line %u) may reach the shared memory of another block of its "
                 "cluster (distributed shared memory), which the fence does not confine",
                 name, s->line);
    else if (uses_descriptors(in))
        snprintf(why, len, "%s (line %u) reaches shared (or tensor) memory through "
                 "descriptors whose layout only run time knows: the fence cannot bound it",
                 name, s->line);
    else if (clamped_opcode(in) && !kptx_is_async_copy(in))
        snprintf(why, len, "%s (line %u) takes an address the fence cannot clamp into the "
                 "block's shared memory (generic, or a base it cannot tell)", name, s->line);
    else if (shared_reason(in))
        snprintf(why, len, "%s (line %u) accesses shared memory in a way the fence does not "
                 "cover (an address or a width it cannot clamp)", name, s->line);
    else
        snprintf(why, len, "%s (line %u) may touch global memory in a way the fence does "
                 "not cover", name, s->line);
}

/* The module-scope declaration of sym, or NULL (also when fn declares sym itself). */
static const kptx_var *module_var(const kptx_module *m, const kptx_function *fn,
                                  const char *sym)
{
    for (unsigned i = 0; i < fn->n_stmts; i++)
        if (fn->stmts[i].kind == KPTX_STMT_VAR && !strcmp(fn->stmts[i].u.var.name, sym))
            return NULL;
    for (unsigned i = 0; i < m->n_items; i++)
        if (m->items[i].kind == KPTX_ITEM_VAR && !strcmp(m->items[i].u.var.name, sym))
            return &m->items[i].u.var;
    return NULL;
}

/* A module variable an operand of in names that the kernel cannot reach when module
 * variables lie outside the window: any use of a .global one (unless the backend
 * relocates it into the window: KPTX_FENCE_VARS_RELOCATED), and a .const one made a
 * generic pointer (cvta: generic accesses are fenced into the window, so it would read
 * something else). Its address in a register is fine: only ld.const uses such an address,
 * within the module's own constant bank (an indexed __constant__ array). NULL when none. */
static const char *outside_var(const kptx_module *m, const kptx_function *fn,
                               const kptx_operand *o, bool const_ok, unsigned flags)
{
    const kptx_var *v = o->kind == KPTX_OPND_SYMBOL ? module_var(m, fn, o->name) : NULL;
    if (v && v->space == KPTX_SPACE_GLOBAL &&
        (!(flags & KPTX_FENCE_VARS_RELOCATED) || !kptx_reloc_possible(m, v, NULL, 0)))
        return o->name;
    if (v && v->space == KPTX_SPACE_CONST && !const_ok)
        return o->name;
    for (unsigned i = 0; i < o->n_elems; i++) {
        const char *u = outside_var(m, fn, &o->elems[i], const_ok, flags);
        if (u)
            return u;
    }
    return NULL;
}

/* Whether a .const variable's address may appear in in: anywhere but in a conversion to a
 * generic pointer. */
static bool const_address_ok(const kptx_instr *in)
{
    return strcmp(in->opcode, "cvta") != 0;
}

/* The reason a module variable v named by a kernel cannot be reached. */
static void describe_var(const kptx_module *m, const kptx_var *v, const char *name,
                         unsigned flags, char *why, size_t len)
{
    char no[128] = "";
    if (v && v->space == KPTX_SPACE_GLOBAL && (flags & KPTX_FENCE_VARS_RELOCATED))
        kptx_reloc_possible(m, v, no, sizeof no);
    if (no[0])
        snprintf(why, len, "uses the module variable %s, which cannot be moved into the "
                 "tenant's window: %s", name, no);
    else
        snprintf(why, len, "uses the module variable %s, which lies outside the tenant's "
                 "window on this backend", name);
}

static void judge_vars(const kptx_module *m, const kptx_function *fn, unsigned flags,
                       char *why, size_t len)
{
    for (unsigned i = 0; i < fn->n_stmts && !why[0]; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        for (unsigned k = 0; s->kind == KPTX_STMT_INSTR && k < s->u.instr.n_ops; k++) {
            const char *v = outside_var(m, fn, &s->u.instr.ops[k], const_address_ok(&s->u.instr),
                                        flags);
            if (v) {
                describe_var(m, module_var(m, fn, v), v, flags, why, len);
                return;
            }
        }
    }
}

/* Functions without a body that write no memory by address: printf and assert read their
 * strings (unfenced) but print them to the daemon's output, never to a tenant. free is not
 * one of them: with malloc refused it could only corrupt the shared device heap. */
static bool harmless_extern(const char *name)
{
    return !strcmp(name, "vprintf") || !strcmp(name, "__assertfail");
}

bool kptx_calls_assert(const kptx_instr *in)
{
    const char *target = kptx_call_target(in);
    return target && !strcmp(target, "__assertfail");
}

/* Whether a call through a function pointer can close a cycle of calls among what root
 * reaches: some reachable function whose address is taken reaches, by direct calls, one
 * that calls through a pointer (which may call it back). The stack guard and the cancel
 * polls see direct cycles only, so such a recursion would run unguarded past the stack.
 * One walk from all of them at once, linear in the module's calls; the name of the
 * function it started from goes to *via. Without memory: assumed. */
static bool may_recurse_indirectly(const kptx_analysis *an, const bool *reach,
                                   const char **via)
{
    unsigned *stack = malloc((an->n_fns + 1) * sizeof *stack);
    unsigned *from = malloc((an->n_fns + 1) * sizeof *from);
    bool *seen = calloc(an->n_fns + 1, sizeof *seen), found = false;
    *via = "a function";
    if (!stack || !from || !seen) {
        free(stack);
        free(from);
        free(seen);
        return true;
    }
    unsigned sp = 0;
    for (unsigned i = 0; i < an->n_fns; i++)
        if (reach[i] && an->facts[i].address_taken && !an->facts[i].fn->is_entry) {
            seen[i] = true;
            from[i] = i;
            stack[sp++] = i;
        }
    while (sp && !found) {
        unsigned f = stack[--sp];
        if (an->facts[f].indirect_calls) {
            found = true;
            *via = an->facts[from[f]].fn->name;
        }
        for (unsigned e = an->edge_start[f]; e < an->edge_start[f + 1]; e++) {
            unsigned c = an->callee[e];
            if (!seen[c]) {
                seen[c] = true;
                from[c] = from[f];
                stack[sp++] = c;
            }
        }
    }
    free(stack);
    free(from);
    free(seen);
    return found;
}

/* Everything root can call: a device function that touches global memory is not fenced
 * (the window would have to be passed to it), and an external one cannot be looked at. */
static void judge_callees(const kptx_module *m, const kptx_analysis *an, unsigned root,
                          const bool *reach, unsigned flags, char *why, size_t len)
{
    bool indirect = false;      /* some call may go through a function pointer */
    for (unsigned i = 0; i < an->n_fns; i++)
        indirect |= (reach[i] || i == root) && an->facts[i].indirect_calls;
    const char *via;
    if (indirect && may_recurse_indirectly(an, reach, &via)) {
        snprintf(why, len, "may recurse through function pointers (%s can be called through "
                 "one and reaches a call through one): the stack guard sees direct calls "
                 "only", via);
        return;
    }
    for (unsigned i = 0; i < an->n_fns && !why[0]; i++) {
        const kptx_function *f = an->facts[i].fn;
        bool touches = false;
        char inner[192] = "";
        if (!reach[i] || i == root)
            continue;
        const kptx_stmt *bad = f->has_body ? first_unfenceable(m, f, &touches) : NULL;
        if (bad && shared_reason(&bad->u.instr))
            describe_instr(bad, inner, sizeof inner);
        else if (f->has_body && !bad && !touches)
            judge_sregs(f, inner, sizeof inner);
        if (!strcmp(f->name, "malloc") || !strcmp(f->name, "free"))
            snprintf(why, len, "calls %s: the device heap lies outside the tenant's window",
                     f->name);
        else if (!f->has_body && !harmless_extern(f->name))
            snprintf(why, len, "calls the external function %s", f->name);
        else if (inner[0])
            snprintf(why, len, "calls %s: %s", f->name, inner);
        else if (f->has_body && before_isa_4_1(m) && clamps_shared(m, f))
            snprintf(why, len, "calls %s, which accesses shared memory: its clamp needs PTX "
                     "ISA 4.1 (%%dynamic_smem_size)", f->name);
        else if (bad || touches)
            snprintf(why, len, "calls %s, which touches global memory (device functions "
                     "are not fenced)", f->name);
        else if (indirect && (kptx_needs_control(f) || an->facts[i].recursive))
            snprintf(why, len, "calls %s, which loops, recurses, traps or asserts, and makes "
                     "calls through function pointers: only direct calls pass a device "
                     "function its tenant's control words", f->name);
        else if (indirect && (flags & KPTX_FENCE_TRAP) && kptx_smem_clamps_any(m, f))
            snprintf(why, len, "calls %s, which accesses shared memory (whose faults it "
                     "reports), and makes calls through function pointers: only direct calls "
                     "pass a device function its tenant's fault word", f->name);
        else if (f->has_body && (flags & KPTX_FENCE_VARS_OUTSIDE))
            judge_vars(m, f, flags, why, len);
    }
}

void kptx_fence_judge(const kptx_module *m, const kptx_analysis *an, unsigned root,
                      unsigned flags, char *why, size_t len)
{
    const kptx_function *fn = an->facts[root].fn;
    bool touches;
    why[0] = '\0';
    if (!fn->is_entry || !fn->has_body) {
        snprintf(why, len, "%s is not a kernel with a body", fn->name);
        return;
    }
    if (m->address_size != 64) {
        snprintf(why, len, "32-bit addresses (.address_size %u)", m->address_size);
        return;
    }
    const kptx_stmt *bad = first_unfenceable(m, fn, &touches);
    if (bad) {
        describe_instr(bad, why, len);
        return;
    }
    judge_sregs(fn, why, len);
    if (why[0])
        return;
    if (before_isa_4_1(m) && clamps_shared(m, fn)) {
        snprintf(why, len, "PTX ISA %u.%u: the clamp of shared and generic addresses needs "
                 "4.1 (%%dynamic_smem_size)", m->version_major, m->version_minor);
        return;
    }
    if ((uint64_t)kptx_fence_param_offset(fn->param_bytes) + 8 * KPTX_FENCE_EXTRA_PARAMS >
        kptx_param_limit(m)) {
        snprintf(why, len, "parameters (%u bytes) leave no room for the window parameters",
                 fn->param_bytes);
        return;
    }
    if (flags & KPTX_FENCE_VARS_OUTSIDE)
        judge_vars(m, fn, flags, why, len);
    if (why[0])
        return;
    bool *reach = calloc(an->n_fns, sizeof *reach);
    if (!reach) {
        snprintf(why, len, "out of memory while checking what it calls");
        return;
    }
    kptx_reachable(an, root, reach);
    judge_callees(m, an, root, reach, flags, why, len);
    free(reach);
}

int kptx_fence_verdict(const kptx_module *m, const char *name, unsigned flags, char *why,
                       size_t len, kptx_error *err)
{
    if (!m || !name || !why || !len)
        return kptx_fail(err, KPTX_EINVAL, 0, 0, "NULL argument");
    const kptx_analysis *an = kptx_module_analysis(m, err);
    if (!an)
        return KPTX_ENOMEM;
    int k = kptx_analysis_find(an, name);
    if (k < 0)
        return kptx_fail(err, KPTX_ENOTFOUND, 0, 0, "no function %s", name);
    kptx_fence_judge(m, an, (unsigned)k, flags, why, len);
    return 0;
}
