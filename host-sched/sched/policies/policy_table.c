/* The policy table: every policy the scheduler knows, one row each. The first five rows are
 * ksched.h's KSCHED_FIFO .. KSCHED_MC, in that order; a policy added below them is reached
 * by its name (ksched_policy_parse) and needs no constant there. */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "policy.h"

extern const sched_policy sched_policy_fifo, sched_policy_base, sched_policy_kernelet,
    sched_policy_opt, sched_policy_mc;

static const sched_policy *const table[] = {
    &sched_policy_fifo,
    &sched_policy_base,
    &sched_policy_kernelet,
    &sched_policy_opt,
    &sched_policy_mc,
};

#define N_POLICIES (sizeof(table) / sizeof(table[0]))
_Static_assert(N_POLICIES <= KSCHED_POLICY_MAX, "raise KSCHED_POLICY_MAX");

unsigned ksched_policy_count(void)
{
    return N_POLICIES;
}

const sched_policy *sched_policy_get(ksched_policy p)
{
    return (unsigned)p < N_POLICIES ? table[p] : NULL;
}

const char *ksched_policy_name(ksched_policy p)
{
    const sched_policy *row = sched_policy_get(p);
    return row ? row->name : NULL;
}

int ksched_policy_parse(const char *name, ksched_policy *out)
{
    for (unsigned i = 0; name && out && i < N_POLICIES; i++) {
        if (!strcasecmp(name, table[i]->name)) {
            *out = (ksched_policy)i;
            return 0;
        }
    }
    return KSCHED_EINVAL;
}

const char *ksched_policy_list(char *buf, size_t len, const char *sep)
{
    size_t at = 0;
    for (unsigned i = 0; len && i < N_POLICIES; i++) {
        int n = snprintf(buf + at, len - at, "%s%s", i ? sep : "", table[i]->name);
        if (n < 0 || (size_t)n >= len - at) {
            buf[at] = 0;            /* whole names only */
            break;
        }
        at += (size_t)n;
    }
    return buf;
}

int sched_policy_states_new(ksched *s)
{
    s->policy_state = calloc(N_POLICIES, sizeof(*s->policy_state));
    if (!s->policy_state)
        return -1;
    for (unsigned i = 0; i < N_POLICIES; i++)
        if (table[i]->state_new && !(s->policy_state[i] = table[i]->state_new(&s->cfg)))
            return -1;
    return 0;
}

void sched_policy_states_free(ksched *s)
{
    if (!s->policy_state)
        return;
    for (unsigned i = 0; i < N_POLICIES; i++)
        if (table[i]->state_free)
            table[i]->state_free(s->policy_state[i]);
    free(s->policy_state);
    s->policy_state = NULL;
}
