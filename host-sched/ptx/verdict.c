/* Whether an entry can be sliced: everything it can reach is looked at, and any feature
 * whose meaning would change when the grid is cut into slices rules slicing out. What
 * the analysis does not know also rules it out: unknown never means "slice anyway". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* Kernel parameter space: 4 KiB for old targets, 32764 bytes from PTX 8.1 on sm_70+. */
#define PARAM_LIMIT_OLD 4096u
#define PARAM_LIMIT_NEW 32764u

void kptx_reachable(const kptx_analysis *an, unsigned root, bool *reach)
{
    unsigned *stack = malloc((an->n_fns + 1) * sizeof *stack);
    bool indirect = false, any_pass = true;
    if (!stack) {
        /* Without memory for the walk, claim everything is reachable: the verdict then
         * errs on the side of "not sliceable". */
        for (unsigned i = 0; i < an->n_fns; i++)
            reach[i] = true;
        return;
    }
    unsigned sp = 0;
    reach[root] = true;
    stack[sp++] = root;
    while (any_pass) {
        while (sp) {
            unsigned f = stack[--sp];
            indirect |= an->facts[f].indirect_calls;
            for (unsigned e = an->edge_start[f]; e < an->edge_start[f + 1]; e++) {
                unsigned c = an->callee[e];
                if (!reach[c]) {
                    reach[c] = true;
                    stack[sp++] = c;
                }
            }
        }
        /* An indirect call may reach any function whose address is taken. */
        any_pass = false;
        for (unsigned i = 0; indirect && i < an->n_fns; i++)
            if (an->facts[i].address_taken && !reach[i]) {
                reach[i] = true;
                stack[sp++] = i;
                any_pass = true;
            }
    }
    free(stack);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Performance directives of the entry: cluster ones and unknown ones rule slicing out. */
static void judge_perf(const kptx_function *fn, char *why, size_t len)
{
    static const char *const safe[] = {".maxntid", ".reqntid", ".minnctapersm",
                                       ".maxnctapersm", ".maxnreg", ".noreturn", ".pragma"};
    for (unsigned i = 0; i < fn->n_perf && !why[0]; i++) {
        const char *name = fn->perf[i].name;
        bool ok = false;
        for (size_t k = 0; k < sizeof safe / sizeof safe[0]; k++)
            ok |= strcmp(name, safe[k]) == 0;
        if (ok)
            continue;
        if (strstr(name, "cluster"))
            snprintf(why, len, "cluster launch (%s)", name);
        else
            snprintf(why, len, "has the directive %s, which this parser does not know", name);
    }
}

unsigned kptx_target_sm(const kptx_module *m)
{
    if (m->target && strncmp(m->target, "sm_", 3) == 0)
        return (unsigned)strtoul(m->target + 3, NULL, 10);
    return 0;
}

uint32_t kptx_param_limit(const kptx_module *m)
{
    unsigned arch = kptx_target_sm(m);
    bool big = arch >= 70 && (m->version_major > 8 || (m->version_major == 8 && m->version_minor >= 1));
    return big ? PARAM_LIMIT_NEW : PARAM_LIMIT_OLD;
}

/* The four extra .u32 parameters must fit the target's parameter space. */
static void judge_param_space(const kptx_module *m, const kptx_function *fn, char *why,
                              size_t len)
{
    uint64_t need = ((uint64_t)fn->param_bytes + 3) / 4 * 4 + 4 * KPTX_SLICE_EXTRA_PARAMS;
    if (need > kptx_param_limit(m))
        snprintf(why, len, "parameters (%u bytes) leave no room for the slice parameters",
                 fn->param_bytes);
}

static void judge_reachable(const kptx_analysis *an, unsigned root, const bool *reach,
                            uint32_t *sregs, char *why, size_t len)
{
    bool indirect = false;
    for (unsigned i = 0; i < an->n_fns; i++) {
        if (!reach[i])
            continue;
        const kptx_fn_facts *f = &an->facts[i];
        *sregs |= f->sregs;
        indirect |= f->indirect_calls;
        if (!why[0] && f->why_not[0]) {
            if (i == root || !f->fn->has_body)
                snprintf(why, len, "%s", f->why_not);
            else
                snprintf(why, len, "%s (in %s)", f->why_not, f->fn->name);
        }
    }
    /* Functions reading the grid are cloned for the sliced entry; a call through a
     * pointer would still reach the original. */
    for (unsigned i = 0; indirect && !why[0] && i < an->n_fns; i++)
        if (reach[i] && i != root && an->facts[i].address_taken && an->facts[i].grid_reach)
            snprintf(why, len, "%s is called through a pointer and reads %%ctaid or %%nctaid",
                     an->facts[i].fn->name);
}

int kptx_entry_verdict(const kptx_module *m, const kptx_analysis *an, unsigned root,
                       uint32_t *sregs, char *why, size_t why_len)
{
    const kptx_function *fn = an->facts[root].fn;
    why[0] = '\0';
    *sregs = 0;
    bool *reach = calloc(an->n_fns, sizeof *reach);
    if (!reach)
        return KPTX_ENOMEM;
    kptx_reachable(an, root, reach);
    judge_reachable(an, root, reach, sregs, why, why_len);
    free(reach);
    if (!fn->is_entry || !fn->has_body)
        snprintf(why, why_len, "%s is not a kernel with a body", fn->name);
    else if (ends_with(fn->name, KPTX_SLICE_SUFFIX))
        snprintf(why, why_len, "%s is a sliced variant itself", fn->name);
    if (!why[0])
        judge_perf(fn, why, why_len);
    if (!why[0])
        judge_param_space(m, fn, why, why_len);
    return 0;
}
