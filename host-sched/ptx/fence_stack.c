/* The stack guard of fenced recursion (kernelet/ptx.h, "Control"). A recursion that runs
 * too deep overflows its thread's call stack, and on the GPU that is an illegal address
 * that ends the context, and with it every tenant's work (an H100 lost it to a tenant's
 * runaway recursion, docs/perf/isolation.md). So every function on a cycle of calls reads
 * its stack pointer as it starts (stacksave, after its own frame is made) and ends its
 * thread with KPTX_FAULT_STACK when the pointer is below the guard.
 *
 * On the H100 each thread's stack is the top of its 16 MiB local window and grows down
 * (tests/gpu/ptx/stack_probe.c: a kernel without locals starts at 0xfffdc0, a frame of 64
 * local bytes takes 96); what the context's CU_LIMIT_STACK_SIZE of L bytes gives it ends
 * no higher than KPTX_STACK_TOP - L (a probe at 2 KiB ran past that end unharmed). The
 * guard lies a margin above that end: below a function that passed its check, its callees
 * make their frames, and a frame's register saves are written before the callee's own
 * check could run; the margin holds the larger of the cycle's largest frame and the
 * deepest chain of frames a call that leaves the cycle can make (bounded: it ends, or
 * enters a cycle that checks). Modules older than PTX ISA 7.3 or sm_52, which cannot use
 * stacksave, stay unguarded. ptxas decides the frames; each
 * is counted as its .local and .param declarations plus KPTX_FRAME_SLACK for what it
 * saves and spills. */
#include <stdlib.h>

#include "ptx_internal.h"

/* What a frame may hold beyond its declared variables: saved registers, spills. */
#define KPTX_FRAME_SLACK 256u

/* Bytes of .local and .param variables a body declares (call sequences' included). */
static uint64_t declared_frame_bytes(const kptx_function *fn)
{
    uint64_t bytes = 0;
    for (unsigned i = 0; i < fn->n_stmts; i++) {
        const kptx_stmt *s = &fn->stmts[i];
        if (s->kind != KPTX_STMT_VAR ||
            (s->u.var.space != KPTX_SPACE_LOCAL && s->u.var.space != KPTX_SPACE_PARAM))
            continue;
        uint64_t size = 0;
        unsigned align = 1;
        kptx_var_size_align(&s->u.var, &size, &align);
        bytes += size + align;
    }
    return bytes;
}

static uint64_t frame_bytes(const kptx_function *fn)
{
    return KPTX_FRAME_SLACK + (fn && fn->has_body ? declared_frame_bytes(fn) : 0);
}

/* The most stack that can be used below a recursive function that passed its check,
 * before the next check: the next call of its cycle makes a frame (at most the cycle's
 * largest) and saves registers in it before that call checks; a call that leaves the
 * cycle runs a chain of frames that ends, or that enters another cycle, whose first frame
 * is the last before a check. In the call graph's order (callees first), depth[f] is what
 * a call of f can take: its frame plus its deepest callee's, or for a recursive f its
 * frame alone. Functions no recursion calls do not count: a deep chain of them elsewhere
 * in the module must not leave the recursion no room. */
static int stack_margin(const kptx_analysis *an, uint64_t *margin)
{
    uint64_t *depth = calloc(an->n_fns ? an->n_fns : 1, sizeof *depth);
    unsigned *comp = calloc(an->n_fns ? an->n_fns : 1, sizeof *comp);
    if (!depth || !comp) {
        free(depth);
        free(comp);
        return KPTX_ENOMEM;
    }
    uint64_t need = 0;
    for (unsigned k = 0; k < an->n_fns; k = an->scc_end[k]) {
        unsigned end = an->scc_end[k];
        bool recursive = an->facts[an->order[k]].recursive;   /* the cycle's all are */
        uint64_t below = 0, largest = 0;
        for (unsigned j = k; j < end; j++)
            comp[an->order[j]] = k + 1;
        for (unsigned j = k; j < end; j++) {
            unsigned f = an->order[j];
            depth[f] = frame_bytes(an->facts[f].fn);    /* its frame; below comes after */
            largest = depth[f] > largest ? depth[f] : largest;
            for (unsigned e = an->edge_start[f]; e < an->edge_start[f + 1]; e++) {
                unsigned c = an->callee[e];     /* earlier components only: final */
                if (comp[c] != k + 1 && depth[c] > below)
                    below = depth[c];
            }
        }
        for (unsigned j = k; j < end && !recursive; j++)
            depth[an->order[j]] += below;
        if (recursive) {
            uint64_t here = below > largest ? below : largest;
            need = here > need ? here : need;
        }
    }
    free(depth);
    free(comp);
    *margin = need + KPTX_FRAME_SLACK;
    return 0;
}

/* Whether the module may use stacksave: PTX ISA 7.3 and a target of sm_52 or later. An
 * older module keeps its recursion unguarded rather than fail to load. */
static bool can_stacksave(const kptx_module *m)
{
    bool isa = m->version_major > 7 || (m->version_major == 7 && m->version_minor >= 3);
    return isa && kptx_target_sm(m) >= 52;
}

int kptx_stack_guard(const kptx_module *m, const kptx_analysis *an, uint64_t stack_bytes,
                     uint64_t top, uint64_t *guard)
{
    *guard = 0;
    if (!can_stacksave(m))
        return 0;
    bool recursion = false;
    for (unsigned i = 0; i < an->n_fns && !recursion; i++)
        recursion = an->facts[i].recursive;
    if (!stack_bytes || !recursion)
        return 0;
    uint64_t margin;
    int rc = stack_margin(an, &margin);
    if (rc)
        return rc;
    if (!top)
        top = KPTX_STACK_TOP;
    if (stack_bytes > top)
        stack_bytes = top;
    /* a stack smaller than the margin stops every recursive call at once */
    *guard = margin >= stack_bytes ? top : top - stack_bytes + margin;
    return 0;
}
