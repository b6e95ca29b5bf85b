/* Compiling ("linking") one entry: the entry and every .func it can reach are decoded
 * into one instruction array with one register file. Each function gets its own slots and
 * its own call frame (parameters and return values) at fixed offsets; for the functions on
 * a cycle of the call graph (recursion) each call saves and each return restores what an
 * invocation owns (emu_frames.c). Afterwards constants and special registers get the slots
 * after the registers, and calls get their callee's pc. */
#include "emu_compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMU_MAX_SLOTS (1u << 20)

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return a > 1 ? (v + a - 1) / a * a : v;
}

/* The callee named by a call instruction, or NULL (indirect calls). */
static const char *callee_name(const kptx_instr *ki)
{
    unsigned i = 0;
    if (i < ki->n_ops && ki->ops[i].kind == KPTX_OPND_LIST)
        i++;
    return i < ki->n_ops && ki->ops[i].kind == KPTX_OPND_SYMBOL ? ki->ops[i].name : NULL;
}

static int add_linked(emu_cc *cc, const kptx_function *f, unsigned *index)
{
    int found = emu_linked_index(cc, f->name);
    if (found >= 0) {
        *index = (unsigned)found;
        return 0;
    }
    if (emu_grow((void **)&cc->fns, &cc->cap_fns, cc->n_fns, sizeof *cc->fns))
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    memset(&cc->fns[cc->n_fns], 0, sizeof cc->fns[0]);
    cc->fns[cc->n_fns].fn = f;
    *index = cc->n_fns++;
    return 0;
}

/* Depth-first over the call graph from function i: collects callees, marks the functions
 * on cycles as recursive, computes the deepest call chain of the acyclic rest. */
static int link_from(emu_cc *cc, unsigned i)
{
    if (emu_grow((void **)&cc->walk, &cc->cap_walk, cc->n_walk, sizeof *cc->walk))
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    cc->walk[cc->n_walk++] = i;
    cc->fns[i].visiting = true;
    const kptx_function *f = cc->fns[i].fn;
    for (unsigned s = 0; s < f->n_stmts; s++) {
        const kptx_stmt *st = &f->stmts[s];
        if (st->kind != KPTX_STMT_INSTR || strcmp(st->u.instr.opcode, "call") != 0)
            continue;
        const char *name = callee_name(&st->u.instr);
        if (!name) {
            cc->indirect = true;   /* any function might be called: all are linked */
            continue;
        }
        const kptx_function *g = kptx_find_function(cc->mod->ptx, name);
        if (!g || !g->has_body)
            continue;   /* decoded into a failing instruction that names it */
        unsigned j = 0;
        int rc = add_linked(cc, g, &j);
        if (rc)
            return rc;
        if (cc->fns[j].visiting) {   /* a cycle: every function on it since j */
            for (uint32_t k = cc->n_walk; k-- > 0;) {
                cc->fns[cc->walk[k]].recursive = true;
                if (cc->walk[k] == j)
                    break;
            }
            continue;
        }
        if (!cc->fns[j].done && (rc = link_from(cc, j)) != 0)
            return rc;
        if (cc->fns[j].depth + 1 > cc->fns[i].depth)
            cc->fns[i].depth = cc->fns[j].depth + 1;
    }
    cc->n_walk--;
    cc->fns[i].visiting = false;
    cc->fns[i].done = true;
    return 0;
}

/* With calls through pointers any .func of the module may be called, from anywhere, so
 * all are linked and all save their invocations (a cycle may go through a pointer). */
static int link_all(emu_cc *cc)
{
    const kptx_module *m = cc->mod->ptx;
    for (unsigned i = 0; i < m->n_items; i++) {
        const kptx_function *g = &m->items[i].u.fn;
        if (m->items[i].kind != KPTX_ITEM_FUNCTION || g->is_entry || !g->has_body)
            continue;
        unsigned j = 0;
        int rc = add_linked(cc, g, &j);
        if (rc == 0 && !cc->fns[j].done)
            rc = link_from(cc, j);
        if (rc)
            return rc;
    }
    for (unsigned i = 1; i < cc->n_fns; i++)
        cc->fns[i].recursive = true;
    return 0;
}

/* Where calls through pointers find each function: handle, pc, parameters, results. */
static int callee_table(emu_cc *cc, emu_code *c)
{
    uint32_t n_vars = 0;
    for (uint32_t i = 0; i < cc->n_fns; i++)
        n_vars += cc->fns[i].fn->n_params + cc->fns[i].fn->n_rets;
    c->callees = calloc(cc->n_fns, sizeof *c->callees);
    c->callee_vars = calloc(n_vars + 1, sizeof *c->callee_vars);
    if (!c->callees || !c->callee_vars)
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    c->n_callees = cc->n_fns;
    uint32_t next = 0;
    for (uint32_t i = 0; i < cc->n_fns; i++) {
        const emu_linked_fn *lf = &cc->fns[i];
        const kptx_function *f = lf->fn;
        emu_callee *ce = &c->callees[i];
        ce->handle = i ? emu_function_handle(cc->mod->ptx, f->name) : 0;
        ce->pc = lf->start_pc;
        ce->n_params = f->n_params;
        ce->n_rets = f->n_rets;
        ce->first = next;
        for (unsigned k = 0; i && k < f->n_params + f->n_rets; k++) {
            const kptx_var *v = k < f->n_params ? &f->params[k] : &f->rets[k - f->n_params];
            uint32_t off = k < f->n_params ? lf->param_off[k] : lf->ret_off[k - f->n_params];
            c->callee_vars[next + k] = (emu_copy){off, 0, (uint32_t)emu_var_bytes(v)};
        }
        next += f->n_params + f->n_rets;
    }
    return 0;
}

/* Call frames of the .func parameters and results; the static shared memory size. */
static int layout(emu_cc *cc)
{
    for (unsigned i = 1; i < cc->n_fns; i++) {
        emu_linked_fn *lf = &cc->fns[i];
        const kptx_function *f = lf->fn;
        lf->param_off = calloc(f->n_params + 1, sizeof *lf->param_off);
        lf->ret_off = calloc(f->n_rets + 1, sizeof *lf->ret_off);
        if (!lf->param_off || !lf->ret_off)
            return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
        for (unsigned k = 0; k < f->n_params + f->n_rets; k++) {
            const kptx_var *v = k < f->n_params ? &f->params[k] : &f->rets[k - f->n_params];
            if (v->space != KPTX_SPACE_PARAM)
                return emu_error_set(cc->err, KEMU_EUNSUPPORTED,
                                     "kernel %s: function %s takes %s in registers, which is "
                                     "not supported",
                                     cc->code->name, f->name, v->name);
            uint64_t off = align_up(cc->pframe_bytes, emu_var_align(v));
            uint64_t end = off + emu_var_bytes(v);
            if (end > UINT32_MAX / 2)
                return emu_error_set(cc->err, KEMU_ERESOURCES, "call frames too large");
            (k < f->n_params ? lf->param_off : lf->ret_off)[k < f->n_params ? k : k - f->n_params] =
                (uint32_t)off;
            if (k == 0)
                lf->frame.formal_begin = (uint32_t)off;
            cc->pframe_bytes = (uint32_t)end;
        }
        lf->frame.formal_end = f->n_params + f->n_rets ? cc->pframe_bytes : lf->frame.formal_begin;
    }
    uint64_t shared = cc->mod->shared_bytes;
    uint32_t dyn_align = 16;
    for (unsigned i = 0; i < cc->mod->n_vars; i++) {
        const emu_var *v = &cc->mod->vars[i];
        if (v->space == KPTX_SPACE_SHARED && v->is_extern && v->align > dyn_align)
            dyn_align = v->align;
    }
    for (unsigned i = 0; i < cc->n_fns; i++) {
        const kptx_function *f = cc->fns[i].fn;
        for (unsigned s = 0; s < f->n_stmts; s++) {
            const kptx_var *v = &f->stmts[s].u.var;
            if (f->stmts[s].kind != KPTX_STMT_VAR || v->space != KPTX_SPACE_SHARED)
                continue;
            if (v->n_dims > 0 && v->dims[0] == 0) {
                if (emu_var_align(v) > dyn_align)
                    dyn_align = emu_var_align(v);
                continue;
            }
            shared = align_up(shared, emu_var_align(v)) + emu_var_bytes(v);
        }
    }
    if (shared > UINT32_MAX / 4 || dyn_align > 4096)
        return emu_error_set(cc->err, KEMU_ERESOURCES, "kernel %s: too much shared memory",
                             cc->code->name);
    cc->code->shared_static = (uint32_t)shared;
    cc->code->dyn_offset = (uint32_t)align_up(shared, dyn_align);
    cc->shared_bytes = cc->mod->shared_bytes;
    return 0;
}

static int declare_regs(emu_cc *cc, const kptx_var *v)
{
    emu_type t = emu_type_parse(v->type);
    unsigned n = v->reg_range ? v->reg_range : 1;
    if (v->vec || v->n_dims)
        return emu_error_set(cc->err, KEMU_EUNSUPPORTED,
                             "kernel %s: vector or array register %s (line %u)",
                             cc->code->name, v->name, cc->line);
    if (cc->n_regs + (uint64_t)n > EMU_MAX_SLOTS)
        return emu_error_set(cc->err, KEMU_ERESOURCES, "kernel %s: too many registers",
                             cc->code->name);
    emu_sym s = {.name = v->name, .kind = v->reg_range ? EMU_SYM_REGRANGE : EMU_SYM_REG,
                 .count = n, .type = t, .slot = cc->n_regs};
    for (unsigned i = 0; i < n; i++) {
        uint32_t slot;
        int rc = emu_new_slot(cc, t, &slot);
        if (rc)
            return rc;
    }
    return emu_symtab_add(&cc->st, &s) ? emu_error_set(cc->err, KEMU_ENOMEM, "out of memory") : 0;
}

/* A .local variable goes below those placed before it: the kernel's variables fill
 * [KEMU_LOCAL_TOP - cc->local_bytes, KEMU_LOCAL_TOP) downward, as a GPU's frames lie below
 * its stack pointer's start, so that addresses and stacksave agree as they do there. The
 * save stack of recursion must fit below them for stacksave not to wrap. */
static int place_local(emu_cc *cc, emu_sym *s, uint64_t align)
{
    uint64_t low = KEMU_LOCAL_TOP - cc->local_bytes;
    uint64_t addr = s->bytes > low ? 0 : (low - s->bytes) / align * align;
    if (addr < EMU_SAVE_STACK_BYTES)
        return emu_error_set(cc->err, KEMU_ERESOURCES, "kernel %s: too much local memory",
                             cc->code->name);
    s->space = EMU_SPACE_LOCAL;
    s->addr = addr;
    cc->local_bytes = (uint32_t)(KEMU_LOCAL_TOP - addr);
    return 0;
}

/* A variable declared in a body or at module scope (.local): its place in its space. */
static int declare_var(emu_cc *cc, const kptx_var *v)
{
    if (v->space == KPTX_SPACE_REG)
        return declare_regs(cc, v);
    emu_sym s = {.name = v->name, .kind = EMU_SYM_VAR, .type = emu_type_parse(v->type),
                 .bytes = emu_var_bytes(v)};
    uint64_t align = emu_var_align(v);
    switch (v->space) {
    case KPTX_SPACE_SHARED:
        s.space = EMU_SPACE_SHARED;
        if (v->n_dims > 0 && v->dims[0] == 0) {
            s.addr = cc->code->dyn_offset;
        } else {
            s.addr = align_up(cc->shared_bytes, align);
            cc->shared_bytes = (uint32_t)(s.addr + s.bytes);
        }
        break;
    case KPTX_SPACE_LOCAL: {
        int rc = place_local(cc, &s, align);
        if (rc)
            return rc;
        break;
    }
    case KPTX_SPACE_PARAM: {
        uint64_t off = align_up(cc->pframe_bytes, align);
        if (off + s.bytes > UINT32_MAX / 4)
            return emu_error_set(cc->err, KEMU_ERESOURCES, "kernel %s: call frames too large",
                                 cc->code->name);
        cc->pframe_bytes = (uint32_t)(off + s.bytes);
        s.space = EMU_SPACE_PARAM;
        s.addr = EMU_PFRAME_BASE + off;
        break;
    }
    default:
        return 0;   /* other spaces in bodies are not supported: uses fail to decode */
    }
    return emu_symtab_add(&cc->st, &s) ? emu_error_set(cc->err, KEMU_ENOMEM, "out of memory") : 0;
}

static void fail_branch(emu_cc *cc, emu_insn *in, const char *label)
{
    char note[200];
    snprintf(note, sizeof note, "branch to unknown label %s", label);
    if (emu_code_note(cc, note, &in->note) != 0)
        in->note = "branch to an unknown label";
    in->kind = EMU_K_FAIL;
}

/* Resolves the branches of the scope being closed; unresolved ones move outwards. */
static void close_scope_fixups(emu_cc *cc, bool last)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < cc->n_fixups; i++) {
        emu_fixup f = cc->fixups[i];
        if (f.depth < cc->st.depth) {
            cc->fixups[kept++] = f;
            continue;
        }
        const emu_sym *l = emu_symtab_find_label(&cc->st, f.label);
        if (l) {
            cc->insns[f.insn].imm = l->pc;
        } else if (last) {
            fail_branch(cc, &cc->insns[f.insn], f.label);
        } else {
            f.depth = cc->st.depth - 1;
            cc->fixups[kept++] = f;
        }
    }
    cc->n_fixups = kept;
}

static int declare_params(emu_cc *cc, const emu_linked_fn *lf)
{
    const kptx_function *f = lf->fn;
    for (unsigned k = 0; k < f->n_params + f->n_rets; k++) {
        const kptx_var *v = k < f->n_params ? &f->params[k] : &f->rets[k - f->n_params];
        emu_sym s = {.name = v->name, .kind = EMU_SYM_VAR, .space = EMU_SPACE_PARAM,
                     .type = emu_type_parse(v->type)};
        if (f->is_entry) {
            s.addr = v->offset;
            s.bytes = v->size;
        } else {
            s.addr = EMU_PFRAME_BASE + (k < f->n_params ? lf->param_off[k]
                                                         : lf->ret_off[k - f->n_params]);
            s.bytes = emu_var_bytes(v);
        }
        if (emu_symtab_add(&cc->st, &s))
            return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    }
    return 0;
}

static int decode_function(emu_cc *cc, unsigned index)
{
    emu_linked_fn *lf = &cc->fns[index];
    const kptx_function *f = lf->fn;
    cc->cur_fn = index;
    lf->start_pc = cc->n_insns;
    lf->frame.slot_begin = cc->n_regs;
    lf->frame.local_end = (uint32_t)(KEMU_LOCAL_TOP - cc->local_bytes);   /* grows down */
    lf->frame.body_begin = cc->pframe_bytes;
    emu_symtab_push(&cc->st);
    unsigned scope = cc->st.depth;
    int rc = declare_params(cc, lf);
    for (unsigned s = 0; rc == 0 && s < f->n_stmts; s++) {
        const kptx_stmt *st = &f->stmts[s];
        cc->line = st->line;
        switch (st->kind) {
        case KPTX_STMT_VAR:
            rc = declare_var(cc, &st->u.var);
            break;
        case KPTX_STMT_LABEL: {
            emu_sym l = {.name = st->u.label, .kind = EMU_SYM_LABEL, .pc = cc->n_insns};
            if (emu_symtab_add(&cc->st, &l))
                rc = emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
            break;
        }
        case KPTX_STMT_BLOCK_BEGIN:
            emu_symtab_push(&cc->st);
            break;
        case KPTX_STMT_BLOCK_END:
            if (cc->st.depth > scope) {
                close_scope_fixups(cc, false);
                emu_symtab_pop(&cc->st);
            }
            break;
        case KPTX_STMT_INSTR:
            rc = emu_decode(cc, &st->u.instr);
            break;
        default:
            break;
        }
    }
    if (rc)
        return rc;
    /* Falling off the end returns (or exits the entry). */
    emu_insn end;
    emu_insn_init(cc, &end, NULL);
    end.kind = f->is_entry ? EMU_K_EXIT : EMU_K_RET;
    if (lf->recursive && !f->is_entry) {
        end.flags |= EMU_F_SAVE;
        end.frame = index;
    }
    if ((rc = emu_emit(cc, &end)) != 0)
        return rc;
    lf->frame.slot_end = cc->n_regs;
    lf->frame.local_begin = (uint32_t)(KEMU_LOCAL_TOP - cc->local_bytes);
    lf->frame.body_end = cc->pframe_bytes;
    while (cc->st.depth > scope) {
        close_scope_fixups(cc, false);
        emu_symtab_pop(&cc->st);
    }
    close_scope_fixups(cc, true);
    emu_symtab_pop(&cc->st);
    return 0;
}

/* Module-scope .local variables: one place per thread for the whole entry. */
static int declare_module_locals(emu_cc *cc)
{
    const kptx_module *m = cc->mod->ptx;
    for (unsigned i = 0; i < m->n_items; i++) {
        if (m->items[i].kind == KPTX_ITEM_VAR && m->items[i].u.var.space == KPTX_SPACE_LOCAL) {
            int rc = declare_var(cc, &m->items[i].u.var);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static uint32_t final_slot(emu_code *c, uint32_t slot, uint32_t *next_sreg)
{
    if (slot == EMU_NO_SLOT || !(slot & EMU_TAG_MASK))
        return slot;
    if ((slot & EMU_TAG_MASK) == EMU_TAG_CONST)
        return c->const_base + (slot & ~EMU_TAG_MASK);
    unsigned id = slot & ~EMU_TAG_MASK;
    if (c->sreg_slot[id] == EMU_NO_SLOT)
        c->sreg_slot[id] = (*next_sreg)++;
    return c->sreg_slot[id];
}

/* The thread limit from .maxntid / .reqntid ("256, 1, 1"). */
static uint32_t thread_limit(const kptx_function *f)
{
    uint32_t limit = EMU_MAX_BLOCK_THREADS;
    for (unsigned i = 0; i < f->n_perf; i++) {
        if (strcmp(f->perf[i].name, ".maxntid") && strcmp(f->perf[i].name, ".reqntid"))
            continue;
        uint64_t prod = 1;
        const char *p = f->perf[i].text;
        while (p && *p) {
            char *end;
            unsigned long v = strtoul(p, &end, 10);
            if (end == p) {
                p++;
                continue;
            }
            prod *= v ? v : 1;
            p = end;
        }
        if (prod < limit)
            limit = (uint32_t)prod;
    }
    return limit;
}

static int finish(emu_cc *cc, const kptx_function *entry)
{
    emu_code *c = cc->code;
    for (uint32_t i = 0; i < cc->n_insns; i++)
        if (cc->insns[i].kind == EMU_K_CALL && !(cc->insns[i].flags & EMU_F_INDIRECT))
            cc->insns[i].imm = cc->fns[cc->insns[i].imm].start_pc;
    c->n_regs = cc->n_regs;
    c->const_base = cc->n_regs;
    c->n_consts = cc->n_consts;
    for (unsigned s = 0; s < EMU_SR_COUNT; s++)
        c->sreg_slot[s] = EMU_NO_SLOT;
    uint32_t next = c->const_base + c->n_consts;
    for (uint32_t i = 0; i < cc->n_insns; i++) {
        emu_insn *in = &cc->insns[i];
        in->guard = final_slot(c, in->guard, &next);
        for (unsigned k = 0; k < 4; k++)
            in->dst[k] = final_slot(c, in->dst[k], &next);
        for (unsigned k = 0; k < 5; k++)
            in->src[k] = final_slot(c, in->src[k], &next);
    }
    c->n_slots = next > 0 ? next : 1;
    if (c->n_slots > EMU_MAX_SLOTS)
        return emu_error_set(cc->err, KEMU_ERESOURCES, "kernel %s: too many registers", c->name);
    c->insns = cc->insns;
    c->n_insns = cc->n_insns;
    cc->insns = NULL;
    c->const_values = cc->consts;
    cc->consts = NULL;
    c->copylists = cc->copylists;
    c->n_copylists = cc->n_copylists;
    cc->copylists = NULL;
    c->copies = cc->copies;
    c->n_copies = cc->n_copies;
    cc->copies = NULL;
    c->local_bytes = cc->local_bytes;
    c->pframe_bytes = cc->pframe_bytes;
    c->max_depth = cc->fns[0].depth;
    c->frames = calloc(cc->n_fns, sizeof *c->frames);
    if (!c->frames)
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    c->n_frames = cc->n_fns;
    for (uint32_t i = 0; i < cc->n_fns; i++) {
        const emu_linked_fn *lf = &cc->fns[i];
        c->frames[i] = lf->frame;
        if (!lf->recursive)
            continue;
        uint32_t results = lf->frame.formal_end - lf->frame.formal_begin;
        if (emu_frame_bytes(&lf->frame) > EMU_SAVE_STACK_BYTES)
            return emu_error_set(cc->err, KEMU_ERESOURCES,
                                 "kernel %s: recursive function %s keeps %u bytes per call, "
                                 "more than the emulator's %u-byte stack",
                                 c->name, lf->fn->name, emu_frame_bytes(&lf->frame),
                                 EMU_SAVE_STACK_BYTES);
        c->save_bytes = EMU_SAVE_STACK_BYTES;
        c->max_depth = EMU_MAX_RECURSION;
        if (results > c->retbuf_bytes)
            c->retbuf_bytes = results;
    }
    if (cc->indirect) {
        int rc = callee_table(cc, c);
        if (rc)
            return rc;
    }
    c->param_bytes = entry->param_bytes;
    c->max_threads = thread_limit(entry);
    return 0;
}

static void cc_free(emu_cc *cc)
{
    for (unsigned i = 0; i < cc->n_fns; i++) {
        free(cc->fns[i].param_off);
        free(cc->fns[i].ret_off);
    }
    free(cc->fns);
    free(cc->walk);
    free(cc->insns);
    free(cc->slot_types);
    free(cc->consts);
    free(cc->fixups);
    free(cc->copylists);
    free(cc->copies);
    emu_symtab_free(&cc->st);
}

void emu_code_free(emu_code *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->insns);
    free(c->const_values);
    free(c->copylists);
    free(c->copies);
    free(c->frames);
    free(c->callees);
    free(c->callee_vars);
    for (uint32_t i = 0; i < c->n_notes; i++)
        free(c->notes[i]);
    free(c->notes);
    free(c);
}

int emu_compile(const kemu_module *mod, const kptx_function *fn, emu_code **out,
                kemu_error *err)
{
    *out = NULL;
    emu_cc cc;
    memset(&cc, 0, sizeof cc);
    cc.mod = mod;
    cc.err = err;
    cc.sink_slot = EMU_NO_SLOT;
    cc.code = calloc(1, sizeof *cc.code);
    if (!cc.code || !(cc.code->name = strdup(fn->name)) || emu_symtab_init(&cc.st) != 0) {
        emu_code_free(cc.code);
        return emu_error_set(err, KEMU_ENOMEM, "out of memory");
    }
    unsigned idx;
    int rc = add_linked(&cc, fn, &idx);
    if (rc == 0)
        rc = link_from(&cc, 0);
    if (rc == 0 && cc.indirect)
        rc = link_all(&cc);
    if (rc == 0)
        rc = layout(&cc);
    if (rc == 0)
        rc = declare_module_locals(&cc);
    for (unsigned i = 0; rc == 0 && i < cc.n_fns; i++)
        rc = decode_function(&cc, i);
    if (rc == 0)
        rc = finish(&cc, fn);
    if (rc) {
        emu_code_free(cc.code);
    } else {
        *out = cc.code;
    }
    cc_free(&cc);
    return rc;
}
