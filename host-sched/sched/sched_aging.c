/* The kernelet policy's bound on waiting (docs/SCHEDULER.md, "Aging"). Kernelet runs the
 * pair of highest CP, so a class that pairs badly waits as long as better pairs remain,
 * and under a steady stream of those, for ever. A candidate that has been pending longer
 * than `aging` times its time alone (the model's prediction) is overdue; the most overdue
 * one, the highest ratio of wait to time alone, is scheduled next. */
#include "sched_internal.h"

/* The most overdue of the candidates c, or NULL. Also sets when the first of the others
 * passes its bound, so that the dispatcher decides again then, even if nothing else
 * changes. */
sched_kernel *sched_overdue(ksched *s, sched_kernel **c, unsigned n)
{
    s->aging_next_ns = UINT64_MAX;
    if (!(s->cfg.aging > 0))
        return NULL;
    uint64_t now = sched_now(s);
    sched_kernel *worst = NULL;
    double worst_ratio = 0, next = (double)UINT64_MAX;
    for (unsigned i = 0; i < n; i++) {
        double alone = (double)c[i]->total * c[i]->cls->block_ns;
        if (!(alone > 0))
            continue;           /* no prediction: the bound cannot be known */
        double bound = s->cfg.aging * alone;
        double waited = now > c[i]->pending_ns ? (double)(now - c[i]->pending_ns) : 0;
        if (waited <= bound) {
            double at = (double)c[i]->pending_ns + bound + 1;
            next = at < next ? at : next;
        } else if (!worst || waited / alone > worst_ratio) {
            worst = c[i];
            worst_ratio = waited / alone;
        }
    }
    if (next < (double)UINT64_MAX)
        s->aging_next_ns = (uint64_t)next;
    return worst;
}
