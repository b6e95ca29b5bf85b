/* Decoders of control flow and synchronisation: bra, call, ret, exit, trap, bar/barrier,
 * membar/fence, and the warp-level shfl, vote, match, redux, activemask, elect. */
#include "emu_compile.h"

#include <string.h>

static int dec_bra(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    emu_mods_take(ml, ".uni");
    if (ki->n_ops != 1 || ki->ops[0].kind != KPTX_OPND_SYMBOL || ki->ops[0].value != 0)
        return emu_unsupported(cc, "indirect branch");
    in->kind = EMU_K_BRA;
    return emu_fixup_add(cc, cc->n_insns, ki->ops[0].name);
}

static int dec_ret(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    (void)ki;
    emu_mods_take(ml, ".uni");
    const emu_linked_fn *lf = &cc->fns[cc->cur_fn];
    bool entry = lf->fn->is_entry;
    in->kind = entry ? EMU_K_EXIT : EMU_K_RET;
    if (entry)
        in->flags |= EMU_F_ENTRY;
    if (lf->recursive && !entry) {
        in->flags |= EMU_F_SAVE;
        in->frame = cc->cur_fn;
    }
    return 0;
}

/* exit; trap and brkpt (both end the launch with KEMU_ETRAP) */
static int dec_stop(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    (void)cc;
    (void)ml;
    in->kind = strcmp(ki->opcode, "exit") == 0 ? EMU_K_EXIT : EMU_K_TRAP;
    return 0;
}

/* Call-frame offset of a .param variable named by a call argument or return value. */
static int frame_var(emu_cc *cc, const kptx_operand *op, uint32_t *off, uint64_t *bytes)
{
    emu_sym tmp;
    const emu_sym *s = op->kind == KPTX_OPND_SYMBOL || op->kind == KPTX_OPND_REG
                           ? emu_symtab_find(&cc->st, op->name, &tmp)
                           : NULL;
    if (!s || s->kind != EMU_SYM_VAR || s->space != EMU_SPACE_PARAM || s->addr < EMU_PFRAME_BASE)
        return emu_unsupported(cc, "call argument that is not a .param variable");
    *off = (uint32_t)(s->addr - EMU_PFRAME_BASE);
    *bytes = s->bytes;
    return 0;
}

static uint32_t min_bytes(uint64_t a, uint64_t b)
{
    return (uint32_t)(a < b ? a : b);
}

/* A call through a pointer: call (rets), %reg, (args){, prototype}. The CALL carries
 * (parameter index <- caller variable) copies, the instruction after it (caller variable <-
 * result index) copies; the target's offsets are looked up per lane at run time. */
static int dec_call_indirect(emu_cc *cc, const kptx_operand *rets, const kptx_operand *target,
                             const kptx_operand *args, emu_insn *in)
{
    uint32_t off = 0;
    uint64_t bytes = 0;
    int rc = emu_src(cc, target, EMU_T_U64, &in->src[0]);
    if (rc)
        return rc;
    in->n_src = 1;
    in->kind = EMU_K_CALL;
    in->flags |= EMU_F_INDIRECT | EMU_F_SAVE;
    unsigned n_args = args ? args->n_elems : 0, n_rets = rets ? rets->n_elems : 0;
    if ((rc = emu_copylist_new(cc, n_args, &in->aux)) != 0)
        return rc;
    for (unsigned k = 0; k < n_args; k++)
        if ((rc = frame_var(cc, &args->elems[k], &off, &bytes)) != 0 ||
            (rc = emu_copy_add(cc, k, off, (uint32_t)bytes)) != 0)
            return rc;
    emu_insn back = *in;
    back.kind = EMU_K_OP;
    back.fn = emu_op_misc("call.return");
    back.n_src = 0;
    back.src[0] = EMU_NO_SLOT;
    if ((rc = emu_copylist_new(cc, n_rets, &back.aux)) != 0)
        return rc;
    for (unsigned k = 0; k < n_rets; k++)
        if ((rc = frame_var(cc, &rets->elems[k], &off, &bytes)) != 0 ||
            (rc = emu_copy_add(cc, off, k, (uint32_t)bytes)) != 0)
            return rc;
    if ((rc = emu_emit(cc, in)) != 0 || (rc = emu_emit(cc, &back)) != 0)
        return rc;
    return EMU_DEC_EMITTED;
}

/* call{.uni} (rets), func, (args): CALL copies the arguments into the callee's frame and
 * jumps; the instruction after it copies the return values back. */
static int dec_call(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    emu_mods_take(ml, ".uni");
    if (emu_mods_left(ml))
        return emu_unsupported(cc, "modifier %s", emu_mods_left(ml));
    unsigned i = 0;
    const kptx_operand *rets = NULL, *args = NULL;
    if (i < ki->n_ops && ki->ops[i].kind == KPTX_OPND_LIST)
        rets = &ki->ops[i++];
    if (i >= ki->n_ops)
        return emu_unsupported(cc, "call without a target");
    const kptx_operand *target = &ki->ops[i++];
    if (i < ki->n_ops && ki->ops[i].kind == KPTX_OPND_LIST)
        args = &ki->ops[i++];
    if (target->kind == KPTX_OPND_REG) {
        if (i < ki->n_ops && ki->ops[i].kind == KPTX_OPND_SYMBOL)
            i++;   /* the prototype or target list: the run-time target decides */
        if (i != ki->n_ops)
            return emu_unsupported(cc, "this form of an indirect call");
        return dec_call_indirect(cc, rets, target, args, in);
    }
    if (target->kind != KPTX_OPND_SYMBOL || i != ki->n_ops)
        return emu_unsupported(cc, "this form of call");
    const char *name = target->name;
    int fidx = emu_linked_index(cc, name);
    if (fidx < 0)
        return emu_unsupported(cc, "call of %s, which has no body here (needs linking)", name);
    const emu_linked_fn *f = &cc->fns[fidx];
    unsigned n_args = args ? args->n_elems : 0, n_rets = rets ? rets->n_elems : 0;
    if (n_args != f->fn->n_params || n_rets != f->fn->n_rets)
        return emu_unsupported(cc, "call of %s with %u arguments and %u results", f->fn->name,
                               n_args, n_rets);
    uint32_t off = 0;
    uint64_t bytes = 0;
    int rc;
    in->kind = EMU_K_CALL;
    in->imm = fidx;   /* the callee's pc once all functions are placed */
    if (f->recursive) {
        in->flags |= EMU_F_SAVE;
        in->frame = (uint32_t)fidx;
    }
    if ((rc = emu_copylist_new(cc, n_args, &in->aux)) != 0)
        return rc;
    for (unsigned k = 0; k < n_args; k++) {
        if ((rc = frame_var(cc, &args->elems[k], &off, &bytes)) != 0)
            return rc;
        uint64_t want = emu_var_bytes(&f->fn->params[k]);
        if ((rc = emu_copy_add(cc, f->param_off[k], off, min_bytes(want, bytes))) != 0)
            return rc;
    }
    emu_insn back = *in;
    back.kind = EMU_K_OP;
    back.fn = emu_op_misc("call.return");
    back.imm = 0;
    if ((rc = emu_copylist_new(cc, n_rets, &back.aux)) != 0)
        return rc;
    for (unsigned k = 0; k < n_rets; k++) {
        if ((rc = frame_var(cc, &rets->elems[k], &off, &bytes)) != 0)
            return rc;
        uint64_t want = emu_var_bytes(&f->fn->rets[k]);
        if ((rc = emu_copy_add(cc, off, f->ret_off[k], min_bytes(want, bytes))) != 0)
            return rc;
    }
    if ((rc = emu_emit(cc, in)) != 0 || (rc = emu_emit(cc, &back)) != 0)
        return rc;
    return EMU_DEC_EMITTED;
}

/* bar{.cta}.sync / barrier{.cta}.sync{.aligned} a{, b}; bar.arrive a, b;
 * bar.red.popc.u32 d, a{, b}, {!}c; bar.red.{and,or}.pred p, a{, b}, {!}c;
 * bar.warp.sync membermask. */

static int dec_bar(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    int rc;
    if (emu_mods_take(ml, ".warp")) {
        if (!emu_mods_take(ml, ".sync") || ki->n_ops != 1)
            return emu_unsupported(cc, "this form of bar.warp");
        in->kind = EMU_K_WSYNC;
        in->fn = emu_op_warp("bar.warp.sync", 0, EMU_T_B32);
        return emu_src(cc, &ki->ops[0], EMU_T_B32, &in->src[4]);
    }
    emu_mods_take(ml, ".cta");
    emu_mods_take(ml, ".aligned");
    unsigned n_fixed;
    if (emu_mods_take(ml, ".sync")) {
        in->op = EMU_BAR_SYNC;
        n_fixed = 0;
    } else if (emu_mods_take(ml, ".arrive")) {
        in->op = EMU_BAR_ARRIVE;
        n_fixed = 0;
    } else if (emu_mods_take(ml, ".red")) {
        if (emu_mods_take(ml, ".popc") && emu_mods_take(ml, ".u32"))
            in->op = EMU_BAR_RED_POPC;
        else if (emu_mods_take(ml, ".and") && emu_mods_take(ml, ".pred"))
            in->op = EMU_BAR_RED_AND;
        else if (emu_mods_take(ml, ".or") && emu_mods_take(ml, ".pred"))
            in->op = EMU_BAR_RED_OR;
        else
            return emu_unsupported(cc, "this form of bar.red");
        n_fixed = 2;   /* destination and predicate */
    } else {
        return emu_unsupported(cc, "this form of %s", ki->opcode);
    }
    unsigned n_ops = ki->n_ops;
    if (n_ops < 1 + n_fixed || n_ops > 2 + n_fixed || (in->op == EMU_BAR_ARRIVE && n_ops != 2))
        return emu_unsupported(cc, "%s operands", ki->opcode);
    unsigned first = in->op >= EMU_BAR_RED_POPC ? 1 : 0;
    if (first && (rc = emu_dst(cc, &ki->ops[0], &in->dst[0])) != 0)
        return rc;
    in->n_dst = (uint8_t)first;
    if ((rc = emu_src(cc, &ki->ops[first], EMU_T_U32, &in->src[0])) != 0)
        return rc;
    bool count = n_ops == 2 + n_fixed;
    if (count) {
        if ((rc = emu_src(cc, &ki->ops[first + 1], EMU_T_U32, &in->src[1])) != 0)
            return rc;
        in->flags |= EMU_F_COUNT;
    }
    if (in->op >= EMU_BAR_RED_POPC &&
        (rc = emu_src(cc, &ki->ops[n_ops - 1], EMU_T_PRED, &in->src[2])) != 0)
        return rc;
    in->n_src = 3;
    in->kind = EMU_K_BAR;
    return 0;
}

static int dec_fence(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    (void)cc;
    (void)ki;
    ml->used = UINT64_MAX;   /* every scope and proxy: a full host fence is stronger */
    in->fn = emu_op_misc("fence");
    return 0;
}

static int dec_nop(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    (void)cc;
    (void)ki;
    ml->used = UINT64_MAX;
    in->fn = emu_op_misc("nop");
    return 0;
}

/* base + the index of the first of names among the modifiers (consumed), or 0. */
static uint8_t pick_mode(emu_mods *ml, const char *const *names, unsigned n, unsigned base)
{
    int k = emu_mods_pick(ml, names, n);
    return k < 0 ? 0 : (uint8_t)(base + (unsigned)k);
}

/* The membermask operand of a .sync form (last operand), or the executing lanes. */
static int membermask(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in,
                      unsigned *n_ops)
{
    *n_ops = ki->n_ops;
    if (!emu_mods_take(ml, ".sync"))
        return 0;
    if (*n_ops == 0)
        return emu_unsupported(cc, "missing membermask");
    (*n_ops)--;
    return emu_src(cc, &ki->ops[*n_ops], EMU_T_B32, &in->src[4]);
}

/* d or d|p into dst[0], dst[1] */
static int dst_maybe_pair(emu_cc *cc, const kptx_operand *op, emu_insn *in, bool need_pair)
{
    int rc;
    if (op->kind == KPTX_OPND_PAIR && op->n_elems == 2) {
        if ((rc = emu_dst(cc, &op->elems[0], &in->dst[0])) ||
            (rc = emu_dst(cc, &op->elems[1], &in->dst[1])))
            return rc;
        in->flags |= EMU_F_PRED_OUT;
        in->n_dst = 2;
        return 0;
    }
    if (need_pair)
        return emu_unsupported(cc, "expected d|p");
    in->n_dst = 1;
    return emu_dst(cc, op, &in->dst[0]);
}

static int dec_shfl(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    static const char *const modes[] = {".up", ".down", ".bfly", ".idx"};
    unsigned n;
    int rc = membermask(cc, ki, ml, in, &n);
    if (rc)
        return rc;
    in->op = pick_mode(ml, modes, 4, EMU_WS_UP);
    if (!in->op || !emu_mods_take(ml, ".b32") || n != 4)
        return emu_unsupported(cc, "this form of shfl");
    if ((rc = dst_maybe_pair(cc, &ki->ops[0], in, false)) != 0)
        return rc;
    for (unsigned i = 0; i < 3; i++)
        if ((rc = emu_src(cc, &ki->ops[1 + i], EMU_T_B32, &in->src[i])) != 0)
            return rc;
    in->n_src = 3;
    in->kind = EMU_K_WSYNC;
    in->fn = emu_op_warp("shfl", in->op, EMU_T_B32);
    return 0;
}

static int dec_vote(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    static const char *const modes[] = {".all", ".any", ".uni", ".ballot"};
    unsigned n;
    int rc = membermask(cc, ki, ml, in, &n);
    if (rc)
        return rc;
    in->op = pick_mode(ml, modes, 4, EMU_WS_ALL);
    bool ballot = in->op == EMU_WS_BALLOT;
    if (!in->op || !emu_mods_take(ml, ballot ? ".b32" : ".pred") || n != 2)
        return emu_unsupported(cc, "this form of vote");
    if ((rc = emu_dst(cc, &ki->ops[0], &in->dst[0])) != 0 ||
        (rc = emu_src(cc, &ki->ops[1], EMU_T_PRED, &in->src[0])) != 0)
        return rc;
    in->n_dst = in->n_src = 1;
    in->kind = EMU_K_WSYNC;
    in->fn = emu_op_warp("vote", in->op, EMU_T_PRED);
    return 0;
}

static int dec_match(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    unsigned n;
    int rc = membermask(cc, ki, ml, in, &n);
    if (rc)
        return rc;
    if (emu_mods_take(ml, ".any"))
        in->op = EMU_WS_MATCH_ANY;
    else if (emu_mods_take(ml, ".all"))
        in->op = EMU_WS_MATCH_ALL;
    in->type = (uint8_t)emu_mods_type(ml);
    if (!in->op || (in->type != EMU_T_B32 && in->type != EMU_T_B64) || n != 2 ||
        in->src[4] == EMU_NO_SLOT)
        return emu_unsupported(cc, "this form of match");
    if ((rc = dst_maybe_pair(cc, &ki->ops[0], in, false)) != 0 ||
        (rc = emu_src(cc, &ki->ops[1], (emu_type)in->type, &in->src[0])) != 0)
        return rc;
    in->n_src = 1;
    in->kind = EMU_K_WSYNC;
    in->fn = emu_op_warp("match", in->op, (emu_type)in->type);
    return 0;
}

static int dec_redux(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    static const char *const ops[] = {".add", ".min", ".max", ".and", ".or", ".xor"};
    unsigned n;
    int rc = membermask(cc, ki, ml, in, &n);
    if (rc)
        return rc;
    in->op = pick_mode(ml, ops, 6, EMU_WS_RED_ADD);
    in->type = (uint8_t)emu_mods_type(ml);
    bool arith = in->op >= EMU_WS_RED_ADD && in->op <= EMU_WS_RED_MAX;
    bool ok = arith ? (in->type == EMU_T_U32 || in->type == EMU_T_S32) : in->type == EMU_T_B32;
    if (!in->op || !ok || n != 2 || in->src[4] == EMU_NO_SLOT)
        return emu_unsupported(cc, "this form of redux");
    if ((rc = emu_dst(cc, &ki->ops[0], &in->dst[0])) != 0 ||
        (rc = emu_src(cc, &ki->ops[1], (emu_type)in->type, &in->src[0])) != 0)
        return rc;
    in->n_dst = in->n_src = 1;
    in->kind = EMU_K_WSYNC;
    in->fn = emu_op_warp("redux", in->op, (emu_type)in->type);
    return 0;
}

static int dec_activemask(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    if (!emu_mods_take(ml, ".b32") || ki->n_ops != 1)
        return emu_unsupported(cc, "this form of activemask");
    in->kind = EMU_K_WSYNC;
    in->fn = emu_op_warp("activemask", 0, EMU_T_B32);
    in->n_dst = 1;
    return emu_dst(cc, &ki->ops[0], &in->dst[0]);
}

static int dec_elect(emu_cc *cc, const kptx_instr *ki, emu_mods *ml, emu_insn *in)
{
    unsigned n;
    int rc = membermask(cc, ki, ml, in, &n);
    if (rc || n != 1 || in->src[4] == EMU_NO_SLOT)
        return rc ? rc : emu_unsupported(cc, "this form of elect");
    in->kind = EMU_K_WSYNC;
    in->fn = emu_op_warp("elect", 0, EMU_T_B32);
    return dst_maybe_pair(cc, &ki->ops[0], in, true);
}

emu_decoder emu_decoder_ctrl(const char *opcode)
{
    static const struct {
        const char *name;
        emu_decoder dec;
    } table[] = {
        {"bra", dec_bra}, {"call", dec_call}, {"ret", dec_ret}, {"exit", dec_stop},
        {"trap", dec_stop}, {"brkpt", dec_stop}, {"bar", dec_bar}, {"barrier", dec_bar},
        {"membar", dec_fence}, {"fence", dec_fence}, {"shfl", dec_shfl}, {"vote", dec_vote},
        {"match", dec_match}, {"redux", dec_redux}, {"activemask", dec_activemask},
        {"elect", dec_elect}, {"nanosleep", dec_nop}, {"pmevent", dec_nop},
        {"griddepcontrol", dec_nop}, {"setmaxnreg", dec_nop},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(opcode, table[i].name) == 0)
            return table[i].dec;
    return NULL;
}
