/* Decoders of data movement: mov, cvt, cvta, isspacep, ld, ldu, st, atom, red, and the
 * memory hints that do nothing here (prefetch, discard, applypriority, createpolicy). */
#include "emu_compile.h"

#include <string.h>

/* A bit type of the given size (pack/unpack parts). */
static emu_type bits_of_size(unsigned bytes)
{
    switch (bytes) {
    case 1: return EMU_T_B8;
    case 2: return EMU_T_B16;
    case 4: return EMU_T_B32;
    default: return EMU_T_B64;
    }
}

static int dec_mov(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    in->type = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    if (t == EMU_T_NONE || t == EMU_T_B128 || ki->n_ops != 2)
        return emu_unsupported(cc, "this form of mov");
    const kptx_operand *d = &ki->ops[0], *s = &ki->ops[1];
    int rc;
    if (d->kind == KPTX_OPND_VECTOR || s->kind == KPTX_OPND_VECTOR) {
        const kptx_operand *v = d->kind == KPTX_OPND_VECTOR ? d : s;
        unsigned n = v->n_elems;
        if ((n != 2 && n != 4) || emu_type_size(t) % n || d->kind == s->kind)
            return emu_unsupported(cc, "vector form of mov");
        emu_type part = bits_of_size(emu_type_size(t) / n);
        for (unsigned i = 0; i < n; i++) {
            rc = d == v ? emu_dst(cc, &v->elems[i], &in->dst[i])
                        : emu_src(cc, &v->elems[i], part, &in->src[i]);
            if (rc)
                return rc;
        }
        if (d == v) {
            in->n_dst = (uint8_t)n;
            in->n_src = 1;
            rc = emu_src(cc, s, t, &in->src[0]);
        } else {
            in->n_src = (uint8_t)n;
            in->n_dst = 1;
            rc = emu_dst(cc, d, &in->dst[0]);
        }
        in->fn = emu_op_move(d == v ? "mov.unpack" : "mov.pack", t);
        return rc;
    }
    in->n_dst = in->n_src = 1;
    if ((rc = emu_dst(cc, d, &in->dst[0])) != 0)
        return rc;
    if (s->kind == KPTX_OPND_SREG &&
        (strncmp(s->name, "%clock", 6) == 0 || strncmp(s->name, "%globaltimer", 12) == 0)) {
        if (strcmp(s->name, "%clock") && strcmp(s->name, "%clock64") &&
            strcmp(s->name, "%globaltimer"))
            return emu_unsupported(cc, "special register %s", s->name);
        in->op = s->name[1] == 'g';
        in->fn = emu_op_move("clock", t);
        in->n_src = 0;
        return 0;
    }
    in->fn = emu_op_move("mov", t);
    return emu_src(cc, s, t, &in->src[0]);
}

static int dec_cvt(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    in->rnd = (uint8_t)emu_mods_rounding(ml);
    if (emu_mods_take(ml, ".ftz"))
        in->flags |= EMU_F_FTZ;
    if (emu_mods_take(ml, ".sat"))
        in->flags |= EMU_F_SAT;
    in->type = (uint8_t)emu_mods_type(ml);
    in->type2 = (uint8_t)emu_mods_type(ml);
    in->fn = emu_op_cvt((emu_type)in->type, (emu_type)in->type2, in->rnd, in->flags);
    if (!in->fn)
        return emu_unsupported(cc, "conversion %s%s", emu_type_name((emu_type)in->type),
                               emu_type_name((emu_type)in->type2));
    bool pair = in->type == EMU_T_F16X2 || in->type == EMU_T_BF16X2;
    unsigned n_src = pair ? 2 : 1;
    if (ki->n_ops != 1 + n_src)
        return emu_unsupported(cc, "cvt operands");
    int rc = emu_dst(cc, &ki->ops[0], &in->dst[0]);
    for (unsigned i = 0; rc == 0 && i < n_src; i++)
        rc = emu_src(cc, &ki->ops[1 + i], (emu_type)in->type2, &in->src[i]);
    in->n_dst = 1;
    in->n_src = (uint8_t)n_src;
    return rc;
}

/* cvta{.to}.space.size d, a; isspacep.space p, a */
static int dec_cvta(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    bool isspace = strcmp(ki->opcode, "isspacep") == 0;
    if (!isspace && emu_mods_take(ml, ".to"))
        in->op = 1;
    int space = emu_mods_space(ml);
    if (space <= 0)
        return emu_unsupported(cc, "state space of %s", ki->opcode);
    in->space = (uint8_t)space;
    in->type = isspace ? EMU_T_PRED : (uint8_t)emu_mods_type(ml);
    if (!isspace && in->type != EMU_T_U32 && in->type != EMU_T_U64)
        return emu_unsupported(cc, "cvta size");
    if (ki->n_ops != 2)
        return emu_unsupported(cc, "%s operands", ki->opcode);
    in->fn = emu_op_move(ki->opcode, (emu_type)in->type);
    in->n_dst = in->n_src = 1;
    int rc = emu_dst(cc, &ki->ops[0], &in->dst[0]);
    return rc ? rc : emu_src(cc, &ki->ops[1], EMU_T_U64, &in->src[0]);
}

/* The registers of a vector operand {a, b, ...} or of a single one. */
static int value_list(emu_cc *cc, const kptx_operand *op, unsigned vec, emu_type t, bool dst,
                      uint32_t *slots)
{
    if (vec == 1 && op->kind != KPTX_OPND_VECTOR)
        return dst ? emu_dst(cc, op, &slots[0]) : emu_src(cc, op, t, &slots[0]);
    if (op->kind != KPTX_OPND_VECTOR || op->n_elems != vec)
        return emu_unsupported(cc, "expected a vector of %u", vec);
    for (unsigned i = 0; i < vec; i++) {
        int rc = dst ? emu_dst(cc, &op->elems[i], &slots[i])
                     : emu_src(cc, &op->elems[i], t, &slots[i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* ld, ldu, st: {space} {hints} {.vec} .type; an optional trailing cache-policy operand. */
static int dec_ldst(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    bool store = strcmp(ki->opcode, "st") == 0;
    int space = emu_mods_space(ml);
    if (space < 0)
        return emu_unsupported(cc, "state space");
    if (!store)
        emu_mods_take(ml, ".nc");
    emu_mods_hints(ml);
    in->space = (uint8_t)space;
    in->vec = (uint8_t)emu_mods_vec(ml);
    in->type = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    if (ki->n_ops != 2 && ki->n_ops != 3)
        return emu_unsupported(cc, "%s operands", ki->opcode);
    const kptx_operand *addr = &ki->ops[store ? 0 : 1], *val = &ki->ops[store ? 1 : 0];
    bool addr32;
    int rc = emu_addr(cc, addr, in->space, &in->src[0], &in->imm, &addr32);
    if (rc)
        return rc;
    if (addr32)
        in->flags |= EMU_F_ADDR32;
    if (store) {
        rc = value_list(cc, val, in->vec, t, false, &in->src[1]);
        in->n_src = (uint8_t)(1 + in->vec);
    } else {
        rc = value_list(cc, val, in->vec, t, true, in->dst);
        in->n_src = 1;
        in->n_dst = in->vec;
    }
    if (rc)
        return rc;
    in->fn = emu_op_mem(store ? "st" : "ld", in->space, t, in->vec, in->flags);
    return in->fn ? 0 : emu_unsupported(cc, "type %s", emu_type_name(t));
}

static int dec_atom(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    static const char *const ops[] = {".add", ".min", ".max", ".inc", ".dec", ".cas",
                                      ".exch", ".and", ".or", ".xor"};
    bool red = strcmp(ki->opcode, "red") == 0;
    int space = emu_mods_space(ml);
    if (space < 0)
        return emu_unsupported(cc, "state space");
    emu_mods_hints(ml);
    for (unsigned i = 0; i < 10 && !in->op; i++)
        if (emu_mods_take(ml, ops[i]))
            in->op = (uint8_t)(EMU_AOP_ADD + i);
    in->space = (uint8_t)space;
    in->type = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    in->fn = in->op ? emu_op_atom(in->space, in->op, t, !red) : NULL;
    if (!in->fn)
        return emu_unsupported(cc, "this form of %s", ki->opcode);
    unsigned n_val = in->op == EMU_AOP_CAS ? 2 : 1, first = red ? 0 : 1;
    if (ki->n_ops != first + 1 + n_val && ki->n_ops != first + 2 + n_val)
        return emu_unsupported(cc, "%s operands", ki->opcode);
    int rc = 0;
    if (!red) {
        rc = emu_dst(cc, &ki->ops[0], &in->dst[0]);
        in->n_dst = 1;
    }
    bool addr32;
    if (rc == 0)
        rc = emu_addr(cc, &ki->ops[first], in->space, &in->src[0], &in->imm, &addr32);
    if (rc)
        return rc;
    if (addr32)
        in->flags |= EMU_F_ADDR32;
    for (unsigned i = 0; i < n_val && rc == 0; i++)
        rc = emu_src(cc, &ki->ops[first + 1 + i], t, &in->src[1 + i]);
    in->n_src = (uint8_t)(1 + n_val);
    return rc;
}

/* cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size}{, policy}: an
 * immediate copy; commit_group / wait_group / wait_all: nothing left to wait for. */
static int dec_cp(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    if (!emu_mods_take(ml, ".async"))
        return emu_unsupported(cc, "this form of cp");
    if (emu_mods_take(ml, ".commit_group") || emu_mods_take(ml, ".wait_group") ||
        emu_mods_take(ml, ".wait_all")) {
        in->fn = emu_op_misc("nop");
        return 0;
    }
    int dst_space = emu_mods_space(ml), src_space = emu_mods_space(ml);
    if (!emu_mods_take(ml, ".ca"))
        emu_mods_take(ml, ".cg");
    unsigned extra = ki->n_ops - 3 - (emu_mods_take(ml, ".L2::cache_hint") ? 1u : 0u);
    emu_mods_hints(ml);
    if (dst_space != EMU_SPACE_SHARED || src_space != EMU_SPACE_GLOBAL || ki->n_ops < 3 ||
        extra > 1 || ki->ops[2].kind != KPTX_OPND_INT)
        return emu_unsupported(cc, "this form of cp.async");
    int64_t size = ki->ops[2].value, soff = 0;
    if (size != 4 && size != 8 && size != 16)
        return emu_unsupported(cc, "cp.async of %lld bytes", (long long)size);
    bool a32, b32;
    int rc = emu_addr(cc, &ki->ops[0], EMU_SPACE_SHARED, &in->src[0], &in->imm, &a32);
    if (rc == 0)
        rc = emu_addr(cc, &ki->ops[1], EMU_SPACE_GLOBAL, &in->src[1], &soff, &b32);
    if (rc == 0)
        rc = emu_const_slot(cc, (uint64_t)soff, &in->src[2]);
    if (rc == 0 && extra) {   /* src-size, or the predicate ignore-src */
        rc = emu_src(cc, &ki->ops[3], EMU_T_U32, &in->src[3]);
        in->type2 = (uint8_t)emu_slot_type(cc, in->src[3]);
    }
    if (rc)
        return rc;
    if (a32)
        in->flags |= EMU_F_ADDR32;
    in->op = (uint8_t)size;
    in->n_src = 4;
    in->fn = emu_op_mem("cp.async", EMU_SPACE_SHARED, EMU_T_B8, 1, in->flags);
    return 0;
}

/* Cache and prefetch hints: no effect on results. All modifiers are accepted. */
static int dec_hint(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    (void)cc;
    (void)ki;
    ml->used = UINT64_MAX;
    in->fn = emu_op_misc("nop");
    return 0;
}

/* createpolicy: the policy value is opaque to everything but cache hints: 0. */
static int dec_createpolicy(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    ml->used = UINT64_MAX;
    if (ki->n_ops < 1)
        return emu_unsupported(cc, "createpolicy operands");
    in->fn = emu_op_misc("zero");
    in->n_dst = 1;
    return emu_dst(cc, &ki->ops[0], &in->dst[0]);
}

/* stacksave: the stack pointer of the lane's call depth (emu_ops_move.c). */
static int dec_stacksave(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    in->type = (uint8_t)emu_mods_type(ml);
    if (ki->n_ops != 1 || (in->type != EMU_T_U64 && in->type != EMU_T_U32))
        return emu_unsupported(cc, "this form of stacksave");
    in->fn = emu_op_move("stacksave", (emu_type)in->type);
    in->n_dst = 1;
    return emu_dst(cc, &ki->ops[0], &in->dst[0]);
}

emu_decoder emu_decoder_data(const char *opcode)
{
    static const struct {
        const char *name;
        emu_decoder dec;
    } table[] = {
        {"mov", dec_mov}, {"cvt", dec_cvt}, {"cvta", dec_cvta}, {"isspacep", dec_cvta},
        {"ld", dec_ldst}, {"ldu", dec_ldst}, {"st", dec_ldst}, {"atom", dec_atom},
        {"red", dec_atom}, {"prefetch", dec_hint}, {"prefetchu", dec_hint},
        {"discard", dec_hint}, {"applypriority", dec_hint},
        {"createpolicy", dec_createpolicy}, {"cp", dec_cp}, {"stacksave", dec_stacksave},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(opcode, table[i].name) == 0)
            return table[i].dec;
    return NULL;
}
