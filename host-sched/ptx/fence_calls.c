/* Device functions under the fencing pass's control (fence.c). A device function cannot see
 * its entry's parameters, so a loop in one could not poll the cancel word, nor a trap or
 * assert write the fault word. Every device function that a fenced entry reaches and that
 * loops, recurses, traps or asserts, or calls one that does, gets the addresses of the two
 * words as two more parameters, and every call of it passes them on: its loops poll and
 * its faults report as an entry's do. Which functions those are, and which entries cannot
 * keep their fence because an unfenced entry of the module calls the same function (its
 * calls would not pass the words), is decided here. */
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

bool kptx_needs_control(const kptx_function *fn)
{
    kptx_label_index ix;
    if (!fn->has_body)
        return false;
    if (kptx_label_index_build(&ix, fn))
        return true;                /* out of memory: the careful answer */
    bool needs = false;
    for (unsigned i = 0; i < fn->n_stmts && !needs; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        const kptx_instr *in = &s->u.instr;
        if (s->kind != KPTX_STMT_INSTR)
            continue;
        int target = kptx_branch_target(&ix, s);
        needs = (target >= 0 && (unsigned)target <= i) || !strcmp(in->opcode, "brx") ||
                !strcmp(in->opcode, "trap") || kptx_calls_assert(in);
    }
    kptx_label_index_free(&ix);
    return needs;
}

/* Whether device function i must be controlled for itself: its body loops, traps or
 * asserts, or a call that closes a cycle of calls enters it. A recursion runs as long as
 * a loop without any back-edge (ptxas may even make a tail call a jump), so every cycle
 * must poll somewhere; each passes through a head (callgraph.c), which polls (fence.c). */
bool kptx_controls_itself(const kptx_analysis *an, unsigned i)
{
    const kptx_fn_facts *f = &an->facts[i];
    return !f->fn->is_entry && (f->cycle_head || kptx_needs_control(f->fn));
}

/* needs[i]: function i controls itself (or faults[i]: KPTX_FENCE_TRAP's clamped shared
 * accesses write the fault word), or calls (directly or not) one that does. One
 * pass in the call graph's order, callees first, a cycle's functions sharing the answer
 * (each reaches every other): linear in functions and calls, where a fixpoint over the
 * edges took a pass per function of a tenant's chain. An entry is never marked; a call
 * of one (which ptxas refuses) only marks more. */
static void mark_needs(const kptx_analysis *an, const bool *faults, bool *needs)
{
    for (unsigned k = 0; k < an->n_fns; k = an->scc_end[k]) {
        unsigned end = an->scc_end[k];
        bool any = false;
        for (unsigned j = k; j < end && !any; j++) {
            unsigned f = an->order[j];
            any = kptx_controls_itself(an, f) || (faults && faults[f]);
            /* a callee in this component is not marked yet: its own answer is in any */
            for (unsigned e = an->edge_start[f]; e < an->edge_start[f + 1] && !any; e++)
                any = needs[an->callee[e]];
        }
        for (unsigned j = k; j < end; j++)
            needs[an->order[j]] = any;
    }
    for (unsigned i = 0; i < an->n_fns; i++)
        needs[i] &= !an->facts[i].fn->is_entry;
}

/* Into reach[], what the entries whose fence[] is `fenced` reach (their bodies' calls). */
static void reach_of(const kptx_analysis *an, const bool *fence, bool fenced, bool *reach,
                     bool *scratch)
{
    memset(reach, 0, an->n_fns * sizeof *reach);
    for (unsigned r = 0; r < an->n_fns; r++) {
        const kptx_function *fn = an->facts[r].fn;
        if (!fn->is_entry || !fn->has_body || fence[r] != fenced)
            continue;
        memset(scratch, 0, an->n_fns * sizeof *scratch);
        kptx_reachable(an, r, scratch);
        for (unsigned i = 0; i < an->n_fns; i++)
            reach[i] |= scratch[i];
    }
}

/* A fenced entry that reaches a function both marked and reached by an unfenced entry
 * loses its fence; true when one did. */
static bool drop_conflicts(const kptx_analysis *an, bool *fence, const bool *ctl,
                           const bool *unfenced_reach, bool *scratch)
{
    bool dropped = false;
    for (unsigned r = 0; r < an->n_fns; r++) {
        if (!fence[r])
            continue;
        memset(scratch, 0, an->n_fns * sizeof *scratch);
        kptx_reachable(an, r, scratch);
        for (unsigned i = 0; i < an->n_fns && fence[r]; i++)
            if (scratch[i] && ctl[i] && unfenced_reach[i]) {
                fence[r] = false;
                dropped = true;
            }
    }
    return dropped;
}

int kptx_plan_controlled(const kptx_analysis *an, const bool *faults, bool *fence, bool *ctl,
                         unsigned *n_fenced)
{
    size_t n = an->n_fns ? an->n_fns : 1;
    bool *needs = calloc(n, 1), *fenced = calloc(n, 1), *unfenced = calloc(n, 1),
         *scratch = calloc(n, 1);
    int rc = needs && fenced && unfenced && scratch ? 0 : KPTX_ENOMEM;
    memset(ctl, 0, n * sizeof *ctl);
    if (!rc)
        mark_needs(an, faults, needs);
    bool any = false;
    for (unsigned i = 0; !rc && i < an->n_fns; i++)
        any |= needs[i];
    for (bool again = any && !rc; again;) {
        reach_of(an, fence, true, fenced, scratch);
        reach_of(an, fence, false, unfenced, scratch);
        for (unsigned i = 0; i < an->n_fns; i++)
            ctl[i] = needs[i] && fenced[i] && an->facts[i].fn->has_body;
        again = drop_conflicts(an, fence, ctl, unfenced, scratch);
    }
    *n_fenced = 0;
    for (unsigned i = 0; i < an->n_fns; i++)
        *n_fenced += fence[i];
    free(needs);
    free(fenced);
    free(unfenced);
    free(scratch);
    return rc;
}

const char *kptx_call_target(const kptx_instr *in)
{
    if (strcmp(in->opcode, "call"))
        return NULL;
    for (unsigned i = 0; i < in->n_ops; i++)
        if (in->ops[i].kind != KPTX_OPND_LIST)
            return in->ops[i].kind == KPTX_OPND_SYMBOL ? in->ops[i].name : NULL;
    return NULL;
}
