/* Operands and modifiers while decoding: registers to slots, literals and special
 * registers to constant slots, addresses to (base slot, offset), modifier lists. */
#include "emu_compile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int emu_unsupported(emu_cc *cc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cc->note, sizeof cc->note, fmt, ap);
    va_end(ap);
    return EMU_DEC_UNSUPPORTED;
}

/* ---- Modifier lists --------------------------------------------------------------------- */

void emu_mods_init(emu_mods *ml, const kptx_instr *ki)
{
    ml->ki = ki;
    ml->used = ki->n_mods > 64 ? UINT64_MAX : 0;   /* > 64 modifiers: nothing is accepted */
}

static bool unused(const emu_mods *ml, unsigned i)
{
    return i < 64 && !(ml->used >> i & 1u);
}

bool emu_mods_take(emu_mods *ml, const char *mod)
{
    for (unsigned i = 0; i < ml->ki->n_mods; i++) {
        if (unused(ml, i) && strcmp(ml->ki->mods[i], mod) == 0) {
            ml->used |= 1ull << i;
            return true;
        }
    }
    return false;
}

emu_type emu_mods_type(emu_mods *ml)
{
    for (unsigned i = 0; i < ml->ki->n_mods; i++) {
        emu_type t = unused(ml, i) ? emu_type_parse(ml->ki->mods[i]) : EMU_T_NONE;
        if (t != EMU_T_NONE) {
            ml->used |= 1ull << i;
            return t;
        }
    }
    return EMU_T_NONE;
}

int emu_mods_pick(emu_mods *ml, const char *const *names, unsigned n)
{
    for (unsigned i = 0; i < ml->ki->n_mods; i++) {
        if (!unused(ml, i))
            continue;
        for (unsigned k = 0; k < n; k++) {
            if (strcmp(ml->ki->mods[i], names[k]) == 0) {
                ml->used |= 1ull << i;
                return (int)k;
            }
        }
    }
    return -1;
}

int emu_mods_rounding(emu_mods *ml)
{
    static const char *const names[] = {".rn", ".rz", ".rm", ".rp", ".rna",
                                        ".rni", ".rzi", ".rmi", ".rpi"};
    int k = emu_mods_pick(ml, names, 9);
    return k < 0 ? EMU_RND_NONE : EMU_RND_RN + k;
}

int emu_mods_compare(emu_mods *ml)
{
    static const char *const names[] = {".eq", ".ne", ".lt", ".le", ".gt", ".ge",
                                        ".lo", ".ls", ".hi", ".hs", ".equ", ".neu",
                                        ".ltu", ".leu", ".gtu", ".geu", ".num", ".nan"};
    int k = emu_mods_pick(ml, names, 18);
    return k < 0 ? 0 : EMU_CMP_EQ + k;
}

int emu_mods_bool(emu_mods *ml)
{
    static const char *const names[] = {".and", ".or", ".xor"};
    int k = emu_mods_pick(ml, names, 3);
    return k < 0 ? EMU_BOP_NONE : EMU_BOP_AND + k;
}

int emu_mods_space(emu_mods *ml)
{
    static const char *const names[] = {".global", ".shared", ".local", ".param", ".const",
                                        ".shared::cta", ".param::entry", ".param::func",
                                        ".shared::cluster"};
    static const int spaces[] = {EMU_SPACE_GLOBAL, EMU_SPACE_SHARED, EMU_SPACE_LOCAL,
                                 EMU_SPACE_PARAM, EMU_SPACE_CONST, EMU_SPACE_SHARED,
                                 EMU_SPACE_PARAM, EMU_SPACE_PARAM, -1};
    int k = emu_mods_pick(ml, names, 9);
    return k < 0 ? EMU_SPACE_GENERIC : spaces[k];
}

unsigned emu_mods_vec(emu_mods *ml)
{
    if (emu_mods_take(ml, ".v2"))
        return 2;
    if (emu_mods_take(ml, ".v4"))
        return 4;
    return 1;
}

void emu_mods_hints(emu_mods *ml)
{
    static const char *const names[] = {".weak", ".volatile", ".relaxed", ".acquire",
                                        ".release", ".acq_rel", ".sc", ".mmio", ".cta",
                                        ".gpu", ".sys", ".cluster", ".ca", ".cg", ".cs",
                                        ".lu", ".cv", ".wb", ".wt"};
    for (unsigned i = 0; i < ml->ki->n_mods; i++) {
        if (!unused(ml, i))
            continue;
        const char *m = ml->ki->mods[i];
        bool hint = strncmp(m, ".L1::", 5) == 0 || strncmp(m, ".L2::", 5) == 0 ||
                    strncmp(m, ".level::", 8) == 0;
        for (unsigned k = 0; !hint && k < sizeof names / sizeof names[0]; k++)
            hint = strcmp(m, names[k]) == 0;
        if (hint)
            ml->used |= 1ull << i;
    }
}

const char *emu_mods_left(const emu_mods *ml)
{
    for (unsigned i = 0; i < ml->ki->n_mods; i++)
        if (!(i < 64 && (ml->used >> i & 1u)))
            return ml->ki->mods[i];
    return NULL;
}

/* ---- Slots -------------------------------------------------------------------------------- */

int emu_new_slot(emu_cc *cc, emu_type t, uint32_t *slot)
{
    if (cc->n_regs >= (1u << 28))
        return emu_error_set(cc->err, KEMU_ENOMEM, "too many registers");
    if (emu_grow((void **)&cc->slot_types, &cc->cap_slots, cc->n_regs, sizeof *cc->slot_types))
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    cc->slot_types[cc->n_regs] = t;
    *slot = cc->n_regs++;
    return 0;
}

emu_type emu_slot_type(const emu_cc *cc, uint32_t slot)
{
    return (slot & EMU_TAG_MASK) || slot >= cc->n_regs ? EMU_T_NONE : cc->slot_types[slot];
}

int emu_const_slot(emu_cc *cc, uint64_t v, uint32_t *slot)
{
    for (uint32_t i = cc->n_consts; i-- > 0 && i + 64 >= cc->n_consts;) {
        if (cc->consts[i] == v) {   /* recent constants repeat; a short look-back suffices */
            *slot = EMU_TAG_CONST | i;
            return 0;
        }
    }
    if (cc->n_consts >= (1u << 24))
        return emu_error_set(cc->err, KEMU_ENOMEM, "too many constants");
    if (emu_grow((void **)&cc->consts, &cc->cap_consts, cc->n_consts, sizeof *cc->consts))
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    cc->consts[cc->n_consts] = v;
    *slot = EMU_TAG_CONST | cc->n_consts++;
    return 0;
}

static const struct {
    const char *name;
    emu_sreg sreg;
} sreg_names[] = {
    {"%tid.x", EMU_SR_TID_X}, {"%tid.y", EMU_SR_TID_Y}, {"%tid.z", EMU_SR_TID_Z},
    {"%ntid.x", EMU_SR_NTID_X}, {"%ntid.y", EMU_SR_NTID_Y}, {"%ntid.z", EMU_SR_NTID_Z},
    {"%ctaid.x", EMU_SR_CTAID_X}, {"%ctaid.y", EMU_SR_CTAID_Y}, {"%ctaid.z", EMU_SR_CTAID_Z},
    {"%nctaid.x", EMU_SR_NCTAID_X}, {"%nctaid.y", EMU_SR_NCTAID_Y},
    {"%nctaid.z", EMU_SR_NCTAID_Z}, {"%laneid", EMU_SR_LANEID}, {"%warpid", EMU_SR_WARPID},
    {"%nwarpid", EMU_SR_NWARPID}, {"%smid", EMU_SR_SMID}, {"%nsmid", EMU_SR_NSMID},
    {"%gridid", EMU_SR_GRIDID}, {"%lanemask_eq", EMU_SR_LANEMASK_EQ},
    {"%lanemask_lt", EMU_SR_LANEMASK_LT}, {"%lanemask_le", EMU_SR_LANEMASK_LE},
    {"%lanemask_gt", EMU_SR_LANEMASK_GT}, {"%lanemask_ge", EMU_SR_LANEMASK_GE},
    {"%dynamic_smem_size", EMU_SR_DYN_SMEM}, {"%total_smem_size", EMU_SR_TOTAL_SMEM},
};

int emu_sreg_slot(emu_cc *cc, const char *name, uint32_t *slot)
{
    for (size_t i = 0; i < sizeof sreg_names / sizeof sreg_names[0]; i++) {
        if (strcmp(name, sreg_names[i].name) == 0) {
            *slot = EMU_TAG_SREG | sreg_names[i].sreg;
            return 0;
        }
    }
    /* Environment registers and performance counters read as zero. */
    if (strncmp(name, "%envreg", 7) == 0 || (strncmp(name, "%pm", 3) == 0 && name[3] >= '0' &&
                                              name[3] <= '7')) {
        *slot = EMU_TAG_SREG | EMU_SR_ZERO;
        return 0;
    }
    return emu_unsupported(cc, "special register %s", name);
}

uint64_t emu_var_address(const emu_sym *var, unsigned space)
{
    if (space != EMU_SPACE_GENERIC)
        return var->addr;
    switch (var->space) {
    case EMU_SPACE_SHARED: return EMU_SHARED_WINDOW + var->addr;
    case EMU_SPACE_LOCAL: return EMU_LOCAL_WINDOW + var->addr;
    case EMU_SPACE_PARAM: return EMU_PARAM_WINDOW + var->addr;
    default: return var->addr;
    }
}

/* A symbol as a variable: function scope first, then the module. */
static int find_var(emu_cc *cc, const char *name, emu_sym *out)
{
    emu_sym tmp;
    const emu_sym *s = emu_symtab_find(&cc->st, name, &tmp);
    if (s && s->kind == EMU_SYM_VAR) {
        *out = *s;
        return 0;
    }
    const emu_var *v = emu_module_var(cc->mod, name);
    if (!v)
        return emu_unsupported(cc, "unknown symbol %s", name);
    memset(out, 0, sizeof *out);
    out->name = v->name;
    out->kind = EMU_SYM_VAR;
    out->bytes = v->bytes;
    switch (v->space) {
    case KPTX_SPACE_GLOBAL: out->space = EMU_SPACE_GLOBAL; out->addr = v->addr; break;
    case KPTX_SPACE_CONST: out->space = EMU_SPACE_CONST; out->addr = v->addr; break;
    case KPTX_SPACE_SHARED:
        out->space = EMU_SPACE_SHARED;
        out->addr = v->is_extern ? cc->code->dyn_offset : v->addr;
        break;
    default:
        return emu_unsupported(cc, "variable %s in an unsupported state space", name);
    }
    return 0;
}

static int reg_slot(emu_cc *cc, const char *name, uint32_t *slot)
{
    emu_sym tmp;
    const emu_sym *s = emu_symtab_find(&cc->st, name, &tmp);
    if (!s || s->kind != EMU_SYM_REG)
        return emu_unsupported(cc, "unknown register %s", name);
    *slot = s->slot;
    return 0;
}

static uint64_t float_bits_as(const kptx_operand *op, emu_type t)
{
    if (t == EMU_T_F32 && op->width == 64) {
        double d;
        memcpy(&d, &op->bits, 8);
        float f = (float)d;
        uint32_t b;
        memcpy(&b, &f, 4);
        return b;
    }
    if (t == EMU_T_F64 && op->width == 32) {
        uint32_t b = (uint32_t)op->bits;
        float f;
        memcpy(&f, &b, 4);
        double d = f;
        uint64_t r;
        memcpy(&r, &d, 8);
        return r;
    }
    return op->bits;
}

static uint64_t int_as(int64_t v, emu_type t)
{
    if (t == EMU_T_F32) {
        float f = (float)v;
        uint32_t b;
        memcpy(&b, &f, 4);
        return b;
    }
    if (t == EMU_T_F64) {
        double d = (double)v;
        uint64_t b;
        memcpy(&b, &d, 8);
        return b;
    }
    return (uint64_t)v;
}

int emu_emit(emu_cc *cc, const emu_insn *in)
{
    if (cc->n_insns >= (1u << 28))
        return emu_error_set(cc->err, KEMU_ENOMEM, "function too long");
    if (emu_grow((void **)&cc->insns, &cc->cap_insns, cc->n_insns, sizeof *cc->insns))
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    cc->insns[cc->n_insns++] = *in;
    return 0;
}

void emu_insn_init(emu_cc *cc, emu_insn *in, const kptx_instr *ki)
{
    memset(in, 0, sizeof *in);
    in->guard = EMU_NO_SLOT;
    for (unsigned i = 0; i < 4; i++)
        in->dst[i] = EMU_NO_SLOT;
    for (unsigned i = 0; i < 5; i++)
        in->src[i] = EMU_NO_SLOT;
    in->vec = 1;
    in->line = cc->line;
    in->origin = ki;
}

/* not.pred of a negated predicate operand into a temporary, emitted before the user. */
static int negated_pred(emu_cc *cc, uint32_t reg, uint32_t *slot)
{
    uint32_t tmp;
    int rc = emu_new_slot(cc, EMU_T_PRED, &tmp);
    if (rc)
        return rc;
    emu_insn in;
    emu_insn_init(cc, &in, NULL);
    in.fn = emu_op_bits("not", EMU_T_PRED);
    in.type = EMU_T_PRED;
    in.dst[0] = tmp;
    in.src[0] = reg;
    in.n_dst = in.n_src = 1;
    if ((rc = emu_emit(cc, &in)) != 0)
        return rc;
    *slot = tmp;
    return 0;
}

int emu_src(emu_cc *cc, const kptx_operand *op, emu_type t, uint32_t *slot)
{
    int rc;
    switch (op->kind) {
    case KPTX_OPND_REG:
        if ((rc = reg_slot(cc, op->name, slot)) != 0)
            return rc;
        return op->negated ? negated_pred(cc, *slot, slot) : 0;
    case KPTX_OPND_SREG:
        return emu_sreg_slot(cc, op->name, slot);
    case KPTX_OPND_INT:
        return emu_const_slot(cc, int_as(op->value, t), slot);
    case KPTX_OPND_FLOAT:
        return emu_const_slot(cc, float_bits_as(op, t), slot);
    case KPTX_OPND_SYMBOL: {
        emu_sym tmp;
        const emu_sym *s = emu_symtab_find(&cc->st, op->name, &tmp);
        if (s && s->kind == EMU_SYM_REG && op->value == 0) {
            *slot = s->slot;
            return op->negated ? negated_pred(cc, *slot, slot) : 0;
        }
        uint64_t fn = emu_function_handle(cc->mod->ptx, op->name);
        if (fn)   /* the address of a function: a handle that only indirect calls use */
            return emu_const_slot(cc, fn, slot);
        emu_sym var;
        if ((rc = find_var(cc, op->name, &var)) != 0)
            return rc;
        return emu_const_slot(cc, var.addr + (uint64_t)op->value, slot);
    }
    default:
        return emu_unsupported(cc, "unsupported operand form");
    }
}

int emu_dst(emu_cc *cc, const kptx_operand *op, uint32_t *slot)
{
    if (op->kind == KPTX_OPND_SINK) {
        if (cc->sink_slot == EMU_NO_SLOT) {
            int rc = emu_new_slot(cc, EMU_T_B64, &cc->sink_slot);
            if (rc)
                return rc;
        }
        *slot = cc->sink_slot;
        return 0;
    }
    if ((op->kind == KPTX_OPND_REG || op->kind == KPTX_OPND_SYMBOL) && !op->negated &&
        op->value == 0)
        return reg_slot(cc, op->name, slot);
    return emu_unsupported(cc, "destination is not a register");
}

int emu_addr(emu_cc *cc, const kptx_operand *op, unsigned space, uint32_t *base,
             int64_t *offset, bool *addr32)
{
    *addr32 = false;
    if (op->kind != KPTX_OPND_ADDRESS || op->n_elems != 1)
        return emu_unsupported(cc, "expected an address [reg+offset]");
    const kptx_operand *b = &op->elems[0];
    *offset = op->value;
    switch (b->kind) {
    case KPTX_OPND_INT:
        *offset += b->value;
        *base = EMU_TAG_SREG | EMU_SR_ZERO;   /* absolute address: base 0 */
        return 0;
    case KPTX_OPND_REG:
    case KPTX_OPND_SYMBOL: {
        emu_sym tmp;
        const emu_sym *s = emu_symtab_find(&cc->st, b->name, &tmp);
        if (s && s->kind == EMU_SYM_REG && b->value == 0) {
            *base = s->slot;
            emu_type t = s->type;
            *addr32 = emu_type_size(t) < 8;
            return 0;
        }
        emu_sym var;
        int rc = find_var(cc, b->name, &var);
        if (rc)
            return rc;
        *offset += (int64_t)emu_var_address(&var, space) + b->value;
        *base = EMU_TAG_SREG | EMU_SR_ZERO;
        return 0;
    }
    default:
        return emu_unsupported(cc, "unsupported address form");
    }
}

/* ---- Side tables ------------------------------------------------------------------------ */

int emu_copylist_new(emu_cc *cc, uint32_t n, uint32_t *list)
{
    (void)n;
    if (emu_grow((void **)&cc->copylists, &cc->cap_copylists, cc->n_copylists,
                 sizeof *cc->copylists))
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    cc->copylists[cc->n_copylists].first = cc->n_copies;
    cc->copylists[cc->n_copylists].count = 0;
    *list = cc->n_copylists++;
    return 0;
}

/* Appends a copy to the newest copy list. */
int emu_copy_add(emu_cc *cc, uint32_t dst, uint32_t src, uint32_t bytes)
{
    if (emu_grow((void **)&cc->copies, &cc->cap_copies, cc->n_copies, sizeof *cc->copies))
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    cc->copies[cc->n_copies++] = (emu_copy){dst, src, bytes};
    cc->copylists[cc->n_copylists - 1].count++;
    return 0;
}

int emu_fixup_add(emu_cc *cc, uint32_t insn, const char *label)
{
    if (emu_grow((void **)&cc->fixups, &cc->cap_fixups, cc->n_fixups, sizeof *cc->fixups))
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    cc->fixups[cc->n_fixups++] = (emu_fixup){insn, label, cc->st.depth};
    return 0;
}

int emu_linked_index(const emu_cc *cc, const char *name)
{
    for (unsigned i = 0; i < cc->n_fns; i++)
        if (strcmp(cc->fns[i].fn->name, name) == 0)
            return (int)i;
    return -1;
}
