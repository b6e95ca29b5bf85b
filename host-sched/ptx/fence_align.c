/* The fence's alignment (kernelet/ptx.h, "Fencing"). The GPU requires the address of
 * every access to be a multiple of the bytes it moves (its type's size times its vector
 * count); a misaligned one raises a sticky "misaligned address" error that ends the shared
 * context, and with it every tenant's work. So the fence folds the alignment into the
 * window mask: an access of w bytes is masked with mask & ~(w - 1), and
 * (addr & mask_w) | base is aligned and inside the window (its base is a multiple of its
 * size, at least 16 MiB, far above any width).
 *
 * An entry computes one mask per width its accesses use, once as it starts (an and.b64
 * each), into registers of the pass's prefix; each access then costs what it did (an and
 * and an or), whatever its width. An immediate `and` after the window mask would cost an
 * instruction per access instead; a register costs ptxas one more 32-bit register per
 * width at most, the high half being the window mask's. */
#include <stdio.h>

#include "ptx_internal.h"

unsigned kptx_width_slot(unsigned width)
{
    unsigned k = 0;
    while (width > 1u) {
        width >>= 1;
        k++;
    }
    return k;
}

void kptx_align_setup(kptx_rw *rw, kptx_align_masks *am, const char *prefix,
                      const char *window_mask)
{
    const char *base = kptx_rw_name(rw, "%", kptx_rw_name(rw, prefix, "_m"));
    am->reg[0] = window_mask;
    for (unsigned k = 1; k < KPTX_ALIGN_SLOTS && base; k++) {
        char num[16];
        snprintf(num, sizeof num, "%u", 1u << k);
        am->reg[k] = kptx_rw_name(rw, base, num);
    }
    am->used = 0;
}

void kptx_align_scan(kptx_align_masks *am, const kptx_module *m, const kptx_function *fn)
{
    am->used = 0;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        if (s->kind != KPTX_STMT_INSTR)
            continue;
        kptx_fence_kind k = kptx_fence_kind_of(m, fn, &s->u.instr);
        unsigned width = kptx_access_width(&s->u.instr);
        if ((k == KPTX_FENCE_GLOBAL || k == KPTX_FENCE_GENERIC || k == KPTX_FENCE_COPY) &&
            width > 1)
            am->used |= 1u << kptx_width_slot(width);
    }
}

const char *kptx_align_mask(const kptx_align_masks *am, unsigned width)
{
    return am->reg[width > 1 ? kptx_width_slot(width) : 0];
}

void kptx_align_declare(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_align_masks *am)
{
    for (unsigned k = 1; k < KPTX_ALIGN_SLOTS; k++) {
        kptx_stmt *r = (am->used >> k) & 1u ? kptx_rw_push(rw, sv, NULL) : NULL;
        if (!r)
            continue;
        r->kind = KPTX_STMT_VAR;
        r->u.var = (kptx_var){.space = KPTX_SPACE_REG, .type = ".b64", .name = am->reg[k]};
    }
}

void kptx_align_prologue(kptx_rw *rw, kptx_stmt_vec *sv, const kptx_align_masks *am)
{
    for (unsigned k = 1; k < KPTX_ALIGN_SLOTS; k++) {
        if (!((am->used >> k) & 1u))
            continue;
        const kptx_operand ops[3] = {kptx_reg_operand(am->reg[k]),
                                     kptx_reg_operand(am->reg[0]),
                                     kptx_int_operand(-(int64_t)(1u << k))};
        kptx_rw_emit(rw, sv, "and", ".b64", 3, ops);
    }
}
