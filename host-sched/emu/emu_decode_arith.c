/* Decoders of arithmetic, bit and comparison instructions. Each takes the modifiers it
 * understands; any modifier left over makes the instruction unsupported (emu_decode). */
#include "emu_compile.h"

#include <stdio.h>
#include <string.h>

/* Destinations then sources, sources read as the given types. */
static int operands(emu_cc *cc, const kptx_instr *ki, emu_insn *in, unsigned n_dst,
                    unsigned n_src, const emu_type *src_types)
{
    if (ki->n_ops != n_dst + n_src)
        return emu_unsupported(cc, "%u operands, expected %u", ki->n_ops, n_dst + n_src);
    int rc;
    for (unsigned i = 0; i < n_dst; i++)
        if ((rc = emu_dst(cc, &ki->ops[i], &in->dst[i])) != 0)
            return rc;
    for (unsigned i = 0; i < n_src; i++)
        if ((rc = emu_src(cc, &ki->ops[n_dst + i], src_types[i], &in->src[i])) != 0)
            return rc;
    in->n_dst = (uint8_t)n_dst;
    in->n_src = (uint8_t)n_src;
    return 0;
}

static int same_type_operands(emu_cc *cc, const kptx_instr *ki, emu_insn *in, unsigned n_src,
                              emu_type t)
{
    const emu_type types[5] = {t, t, t, t, t};
    return operands(cc, ki, in, 1, n_src, types);
}

static bool is_float(emu_type t)
{
    return t == EMU_T_F32 || t == EMU_T_F64;
}

static bool is_half(emu_type t)
{
    return t == EMU_T_F16 || t == EMU_T_F16X2 || t == EMU_T_BF16 || t == EMU_T_BF16X2;
}

static bool is_int(emu_type t)
{
    return !emu_type_is_float(t) && t != EMU_T_PRED && t != EMU_T_NONE && t != EMU_T_B128;
}

/* The float modifiers: rounding, .ftz, .sat, .approx/.full, .NaN. */
static void float_mods(emu_mods *ml, emu_insn *in)
{
    in->rnd = (uint8_t)emu_mods_rounding(ml);
    if (emu_mods_take(ml, ".ftz"))
        in->flags |= EMU_F_FTZ;
    if (emu_mods_take(ml, ".sat"))
        in->flags |= EMU_F_SAT;
    if (emu_mods_take(ml, ".NaN"))
        in->flags |= EMU_F_NAN;
    emu_mods_take(ml, ".approx");   /* computed more accurately than asked: see EMULATOR.md */
    emu_mods_take(ml, ".full");
}

static int float_op(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in,
                    const char *name, unsigned n_src)
{
    float_mods(ml, in);
    if (is_half((emu_type)in->type)) {
        in->fn = emu_op_half(name, (emu_type)in->type, in->rnd, in->flags, &in->op);
    } else {
        in->fn = emu_op_float(name, (emu_type)in->type, in->rnd, in->flags);
        in->op = (uint8_t)emu_float_opcode(name);
    }
    if (!in->fn || in->rnd >= EMU_RND_RNA)
        return emu_unsupported(cc, "this form of %s", name);
    return same_type_operands(cc, ki, in, n_src, (emu_type)in->type);
}

/* add, sub, min, max, div, rem, sad, copysign; addc, subc. */
static int dec_binary(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    const char *op = ki->opcode;
    bool carry_in = strcmp(op, "addc") == 0 || strcmp(op, "subc") == 0;
    char base[16];
    snprintf(base, sizeof base, "%.3s", op);
    if (!carry_in)
        snprintf(base, sizeof base, "%s", op);
    in->type = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    unsigned n_src = strcmp(op, "sad") == 0 ? 3 : 2;
    if ((is_float(t) || is_half(t)) && !carry_in)
        return float_op(cc, ki, ml, in, base, n_src);
    if (!is_int(t))
        return emu_unsupported(cc, "type %s", emu_type_name(t));
    if (emu_mods_take(ml, ".sat"))
        in->flags |= EMU_F_SAT;
    if (emu_mods_take(ml, ".cc"))
        in->flags |= EMU_F_CC;
    if (carry_in)
        in->flags |= EMU_F_CARRY_IN;
    in->fn = emu_op_int_binary(base, t, in->flags);
    if (!in->fn)
        return emu_unsupported(cc, "this form of %s", op);
    return same_type_operands(cc, ki, in, n_src, t);
}

static int mul_mode(emu_mods *ml)
{
    if (emu_mods_take(ml, ".lo"))
        return EMU_MUL_LO;
    if (emu_mods_take(ml, ".hi"))
        return EMU_MUL_HI;
    if (emu_mods_take(ml, ".wide"))
        return EMU_MUL_WIDE;
    return 0;
}

/* mul, mad, madc, mul24, mad24 */
static int dec_mul(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    const char *op = ki->opcode;
    bool mad = op[1] == 'a';
    bool madc = strcmp(op, "madc") == 0;
    int mode = mul_mode(ml);
    in->type = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    if ((is_float(t) || is_half(t)) && !madc && strstr(op, "24") == NULL) {
        if (mode)
            return emu_unsupported(cc, "mode on a float multiply");
        return float_op(cc, ki, ml, in, mad ? "fma" : "mul", mad ? 3 : 2);
    }
    if (!is_int(t) || !mode)
        return emu_unsupported(cc, "this form of %s", op);
    if (emu_mods_take(ml, ".sat"))
        in->flags |= EMU_F_SAT;
    if (emu_mods_take(ml, ".cc"))
        in->flags |= EMU_F_CC;
    if (madc)
        in->flags |= EMU_F_CARRY_IN;
    in->op = (uint8_t)mode;
    in->fn = emu_op_int_mul(madc ? "mad" : op, t, (unsigned)mode, in->flags);
    if (!in->fn)
        return emu_unsupported(cc, "this form of %s", op);
    /* mad.wide: c and d are twice as wide */
    emu_type wide = emu_type_size(t) == 2 ? EMU_T_U32 : EMU_T_U64;
    const emu_type types[3] = {t, t, mode == EMU_MUL_WIDE ? wide : t};
    return operands(cc, ki, in, 1, mad ? 3 : 2, types);
}

/* abs, neg */
static int dec_unary_arith(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    in->type = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    if (is_float(t) || is_half(t))
        return float_op(cc, ki, ml, in, ki->opcode, 1);
    in->fn = emu_op_int_unary(ki->opcode, t);
    if (!in->fn)
        return emu_unsupported(cc, "type %s", emu_type_name(t));
    return same_type_operands(cc, ki, in, 1, t);
}

/* fma, rcp, sqrt, rsqrt, sin, cos, lg2, ex2, tanh */
static int dec_float(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    in->type = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    if (!is_float(t) && !(is_half(t) && strcmp(ki->opcode, "fma") == 0))
        return emu_unsupported(cc, "type %s", emu_type_name(t));
    return float_op(cc, ki, ml, in, ki->opcode, strcmp(ki->opcode, "fma") == 0 ? 3 : 1);
}

static int dec_testp(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    static const char *const kinds[] = {".finite", ".infinite", ".number", ".notanumber",
                                        ".normal", ".subnormal"};
    for (unsigned i = 0; i < 6 && !in->cmp; i++)
        if (emu_mods_take(ml, kinds[i]))
            in->cmp = (uint8_t)emu_testp_opcode(kinds[i]);
    in->type = (uint8_t)emu_mods_type(ml);
    if (!in->cmp || !is_float((emu_type)in->type))
        return emu_unsupported(cc, "this form of testp");
    in->fn = emu_op_float("testp", (emu_type)in->type, 0, 0);
    return same_type_operands(cc, ki, in, 1, (emu_type)in->type);
}

/* ---- Bit operations ------------------------------------------------------------------------ */

static int dec_bits(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    const char *op = ki->opcode;
    if (strcmp(op, "bfind") == 0 && emu_mods_take(ml, ".shiftamt"))
        in->op = 1;
    if (strcmp(op, "shf") == 0) {
        if (emu_mods_take(ml, ".r"))
            in->op |= 1;
        else if (!emu_mods_take(ml, ".l"))
            return emu_unsupported(cc, "shf needs .l or .r");
        if (emu_mods_take(ml, ".clamp"))
            in->op |= 2;
        else if (!emu_mods_take(ml, ".wrap"))
            return emu_unsupported(cc, "shf needs .wrap or .clamp");
    }
    if (strcmp(op, "prmt") == 0) {
        static const char *const modes[] = {".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"};
        for (unsigned i = 0; i < 6 && !in->op; i++)
            if (emu_mods_take(ml, modes[i]))
                in->op = (uint8_t)(i + 1);
    }
    bool dp = strncmp(op, "dp", 2) == 0;
    if (strcmp(op, "dp2a") == 0) {
        if (emu_mods_take(ml, ".hi"))
            in->op = 1;
        else if (!emu_mods_take(ml, ".lo"))
            return emu_unsupported(cc, "dp2a needs .lo or .hi");
    }
    in->type = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    if (dp) {
        in->type2 = (uint8_t)emu_mods_type(ml);
        bool ok = (t == EMU_T_U32 || t == EMU_T_S32) &&
                  (in->type2 == EMU_T_U32 || in->type2 == EMU_T_S32);
        if (!ok)
            return emu_unsupported(cc, "types of %s", op);
    }
    in->fn = emu_op_bits(op, t);
    if (!in->fn)
        return emu_unsupported(cc, "type %s", emu_type_name(t));
    const emu_type u = EMU_T_U32;
    if (strcmp(op, "shl") == 0 || strcmp(op, "shr") == 0) {
        const emu_type types[2] = {t, u};
        return operands(cc, ki, in, 1, 2, types);
    }
    if (strcmp(op, "bfe") == 0) {
        const emu_type types[3] = {t, u, u};
        return operands(cc, ki, in, 1, 3, types);
    }
    if (strcmp(op, "bfi") == 0) {
        const emu_type types[4] = {t, t, u, u};
        return operands(cc, ki, in, 1, 4, types);
    }
    unsigned n_src = strcmp(op, "not") == 0 || strcmp(op, "cnot") == 0 ||
                             strcmp(op, "popc") == 0 || strcmp(op, "clz") == 0 ||
                             strcmp(op, "brev") == 0 || strcmp(op, "bfind") == 0
                         ? 1
                     : strcmp(op, "lop3") == 0 ? 4
                     : strcmp(op, "shf") == 0 || strcmp(op, "prmt") == 0 || dp ? 3
                                                                                : 2;
    return same_type_operands(cc, ki, in, n_src, t);
}

/* ---- Comparison and selection ---------------------------------------------------------------- */

static int dec_setp(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    in->cmp = (uint8_t)emu_mods_compare(ml);
    in->bop = (uint8_t)emu_mods_bool(ml);
    if (emu_mods_take(ml, ".ftz"))
        in->flags |= EMU_F_FTZ;
    in->type = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    if (!in->cmp || !(is_int(t) || is_float(t)))
        return emu_unsupported(cc, "this form of setp");
    bool ordered_only = in->cmp >= EMU_CMP_EQU;
    if ((is_float(t) && in->cmp >= EMU_CMP_LO && in->cmp <= EMU_CMP_HS) ||
        (!is_float(t) && ordered_only))
        return emu_unsupported(cc, "comparison for type %s", emu_type_name(t));
    unsigned n_src = in->bop ? 3 : 2;
    if (ki->n_ops != 1 + n_src)
        return emu_unsupported(cc, "setp operands");
    const kptx_operand *d = &ki->ops[0];
    int rc;
    if (d->kind == KPTX_OPND_PAIR && d->n_elems == 2) {
        if ((rc = emu_dst(cc, &d->elems[0], &in->dst[0])) ||
            (rc = emu_dst(cc, &d->elems[1], &in->dst[1])))
            return rc;
        in->n_dst = 2;
    } else {
        if ((rc = emu_dst(cc, d, &in->dst[0])))
            return rc;
        in->n_dst = 1;
    }
    for (unsigned i = 0; i < n_src; i++)
        if ((rc = emu_src(cc, &ki->ops[1 + i], i < 2 ? t : EMU_T_PRED, &in->src[i])))
            return rc;
    in->n_src = (uint8_t)n_src;
    in->fn = NULL;
    if (!in->bop && in->n_dst == 1 && !(in->flags & EMU_F_FTZ))
        in->fn = emu_op_setp_fast(in->cmp, t);
    if (!in->fn)
        in->fn = emu_op_compare("setp", t);
    return 0;
}

static int dec_set(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    in->cmp = (uint8_t)emu_mods_compare(ml);
    in->bop = (uint8_t)emu_mods_bool(ml);
    if (emu_mods_take(ml, ".ftz"))
        in->flags |= EMU_F_FTZ;
    in->type = (uint8_t)emu_mods_type(ml);
    in->type2 = (uint8_t)emu_mods_type(ml);
    emu_type dt = (emu_type)in->type, st = (emu_type)in->type2;
    if (!in->cmp || !(dt == EMU_T_U32 || dt == EMU_T_S32 || dt == EMU_T_F32) ||
        !(is_int(st) || is_float(st)))
        return emu_unsupported(cc, "this form of set");
    in->fn = emu_op_compare("set", st);
    const emu_type types[3] = {st, st, EMU_T_PRED};
    return operands(cc, ki, in, 1, in->bop ? 3 : 2, types);
}

static int dec_selp(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    in->type = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    if (!is_int(t) && !is_float(t))
        return emu_unsupported(cc, "type %s", emu_type_name(t));
    in->fn = emu_op_compare("selp", t);
    const emu_type types[3] = {t, t, EMU_T_PRED};
    return operands(cc, ki, in, 1, 3, types);
}

static int dec_slct(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    if (emu_mods_take(ml, ".ftz"))
        in->flags |= EMU_F_FTZ;
    in->type = (uint8_t)emu_mods_type(ml);
    in->type2 = (uint8_t)emu_mods_type(ml);
    emu_type t = (emu_type)in->type;
    if ((!is_int(t) && !is_float(t)) || (in->type2 != EMU_T_S32 && in->type2 != EMU_T_F32))
        return emu_unsupported(cc, "types of slct");
    in->fn = emu_op_compare("slct", t);
    const emu_type types[3] = {t, t, (emu_type)in->type2};
    return operands(cc, ki, in, 1, 3, types);
}

emu_decoder emu_decoder_arith(const char *opcode)
{
    static const struct {
        const char *name;
        emu_decoder dec;
    } table[] = {
        {"add", dec_binary}, {"sub", dec_binary}, {"addc", dec_binary}, {"subc", dec_binary},
        {"min", dec_binary}, {"max", dec_binary}, {"div", dec_binary}, {"rem", dec_binary},
        {"sad", dec_binary}, {"copysign", dec_binary},
        {"mul", dec_mul}, {"mad", dec_mul}, {"madc", dec_mul}, {"mul24", dec_mul},
        {"mad24", dec_mul},
        {"abs", dec_unary_arith}, {"neg", dec_unary_arith},
        {"fma", dec_float}, {"rcp", dec_float}, {"sqrt", dec_float}, {"rsqrt", dec_float},
        {"sin", dec_float}, {"cos", dec_float}, {"lg2", dec_float}, {"ex2", dec_float},
        {"tanh", dec_float}, {"testp", dec_testp},
        {"and", dec_bits}, {"or", dec_bits}, {"xor", dec_bits}, {"not", dec_bits},
        {"cnot", dec_bits}, {"shl", dec_bits}, {"shr", dec_bits}, {"popc", dec_bits},
        {"clz", dec_bits}, {"brev", dec_bits}, {"bfe", dec_bits}, {"bfi", dec_bits},
        {"bfind", dec_bits}, {"lop3", dec_bits}, {"shf", dec_bits}, {"prmt", dec_bits},
        {"dp4a", dec_bits}, {"dp2a", dec_bits},
        {"setp", dec_setp}, {"set", dec_set}, {"selp", dec_selp}, {"slct", dec_slct},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(opcode, table[i].name) == 0)
            return table[i].dec;
    return NULL;
}
