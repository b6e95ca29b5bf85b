/* One PTX instruction into emu_insn(s): the guard, the family decoder, and the rule that
 * anything not understood (opcode, modifier, operand form) becomes an EMU_K_FAIL
 * instruction naming it, so a kernel never runs with a silently wrong instruction. */
#include "emu_compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int emu_code_note(emu_cc *cc, const char *text, const char **out)
{
    emu_code *c = cc->code;
    char **notes = realloc(c->notes, (c->n_notes + 1) * sizeof *notes);
    if (!notes)
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    c->notes = notes;
    char *copy = strdup(text);
    if (!copy)
        return emu_error_set(cc->err, KEMU_ENOMEM, "out of memory");
    c->notes[c->n_notes++] = copy;
    *out = copy;
    return 0;
}

/* An instruction that fails the launch when a thread reaches it. */
static int emit_fail(emu_cc *cc, const kptx_instr *ki, uint32_t guard, bool guard_neg,
                     const char *why)
{
    char text[96] = "", note[320];
    emu_insn in;
    emu_insn_init(cc, &in, ki);
    emu_insn_text(&in, text, sizeof text);
    snprintf(note, sizeof note, "unsupported instruction: %s", why);
    int rc = emu_code_note(cc, note, &in.note);
    if (rc)
        return rc;
    if (!cc->code->unsupported) {
        char first[384];
        snprintf(first, sizeof first, "%s (line %u): %s", text, cc->line, why);
        if ((rc = emu_code_note(cc, first, (const char **)&cc->code->unsupported)) != 0)
            return rc;
    }
    in.kind = EMU_K_FAIL;
    in.guard = guard;
    in.guard_neg = guard_neg;
    return emu_emit(cc, &in);
}

static emu_decoder find_decoder(const char *opcode)
{
    emu_decoder d = emu_decoder_arith(opcode);
    if (!d)
        d = emu_decoder_data(opcode);
    if (!d)
        d = emu_decoder_ctrl(opcode);
    return d;
}

int emu_decode(emu_cc *cc, const kptx_instr *ki)
{
    emu_insn in;
    emu_insn_init(cc, &in, ki);
    if (ki->guard) {
        emu_sym tmp;
        const emu_sym *g = emu_symtab_find(&cc->st, ki->guard, &tmp);
        if (!g || g->kind != EMU_SYM_REG)
            return emit_fail(cc, ki, EMU_NO_SLOT, false, "unknown guard predicate");
        in.guard = g->slot;
        in.guard_neg = ki->guard_negated;
    }
    emu_decoder dec = find_decoder(ki->opcode);
    if (!dec)
        return emit_fail(cc, ki, in.guard, in.guard_neg, "unknown opcode");
    uint32_t mark = cc->n_insns;
    unsigned mark_fixups = cc->n_fixups;
    emu_mods ml;
    emu_mods_init(&ml, ki);
    cc->note[0] = '\0';
    int rc = dec(cc, ki, &ml, &in);
    if (rc == 0 && emu_mods_left(&ml))
        rc = emu_unsupported(cc, "modifier %s", emu_mods_left(&ml));
    if (rc == 0 && !in.fn && (in.kind == EMU_K_OP || in.kind == EMU_K_WSYNC))
        rc = emu_unsupported(cc, "this form of %s", ki->opcode);
    if (rc == EMU_DEC_UNSUPPORTED) {
        /* drop what the decoder emitted before giving up (temporaries, a branch fixup) */
        cc->n_insns = mark;
        cc->n_fixups = mark_fixups;
        return emit_fail(cc, ki, in.guard, in.guard_neg, cc->note);
    }
    if (rc == EMU_DEC_EMITTED)
        return 0;
    if (rc < 0)
        return rc;
    return emu_emit(cc, &in);
}
