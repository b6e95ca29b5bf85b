/* The kernelet policy's first evaluation of each pair of kernel classes, made outside the
 * decisions. A decision that meets a new pair runs kmodel_balanced over its full splits
 * (15-220 us each), which on a short run added up to most of the decision time (docs/perf/
 * sched.md). The paper pre-executes its model offline; here a class's pairs with every
 * other profiled class are evaluated when it gets its profile, a rare event (a CUPTI
 * profile holds the GPU for ~0.3 s), by the thread that drives the scheduler, before it
 * decides and with the scheduler's lock released: other threads may submit and launch
 * meanwhile. Their decisions do not pair a class whose pairs are being evaluated (it runs
 * alone until they are stored: a decision never waits for the model), and a decision that
 * meets another missing pair (more pairs were due than one pass takes) evaluates it itself,
 * as before; the entry is the same either way (sched_pair_eval), so once stored the
 * choices are too. Where one thread drives the scheduler (the harness, the sim) no decision
 * falls in the window, and the schedule is exactly the lazy one. */
#include <stdlib.h>

#include "sched_internal.h"

/* Pairs evaluated per pass at most: bounds how long the driving thread is away from its
 * own decisions when many classes come at once (the rest wait for the next pass). */
#define PASS_MAX 256

typedef struct job {
    unsigned a, b;              /* class indices, a < b */
    kmodel_kernel ka, kb;       /* copies: the evaluation runs without the lock */
    pair_eval r;
} job;

static int wanted(const ksched *s)
{
    return s->cfg.policy == KSCHED_KERNELET && !s->cfg.lazy_pairs && s->pre_model;
}

void sched_precompute_mark(ksched *s, sched_class *c)
{
    if (!wanted(s) || c->profiled != 1 || c->pairs_due)
        return;
    c->pairs_due = 1;
    s->n_pairs_due++;
}

void sched_precompute_mark_all(ksched *s)
{
    for (unsigned i = 0; i < s->n_classes; i++)
        sched_precompute_mark(s, s->classes[i]);
}

/* Adds the missing pairs of due class c to jobs; 0 when all of them fit. A pair of two
 * due classes is taken with the one of lower index. */
static int collect_class(ksched *s, sched_class *c, job *jobs, unsigned *n)
{
    for (unsigned i = 0; i < s->n_classes; i++) {
        sched_class *o = s->classes[i];
        if (o == c || o->profiled != 1 || (o->pairs_due && o->index < c->index))
            continue;
        sched_class *a = c->index < o->index ? c : o, *b = a == c ? o : c;
        if (sched_pair_find(s, a->index, b->index, KSCHED_KERNELET))
            continue;
        if (*n == PASS_MAX)
            return -1;
        jobs[(*n)++] = (job){.a = a->index, .b = b->index, .ka = a->k, .kb = b->k};
    }
    return 0;
}

/* The due pairs, up to PASS_MAX; the classes whose pairs are all taken are no longer due. */
static unsigned collect(ksched *s, job *jobs)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->n_classes && s->n_pairs_due; i++) {
        sched_class *c = s->classes[i];
        if (!c->pairs_due || collect_class(s, c, jobs, &n))
            continue;
        c->pairs_due = 0;
        c->pairs_evaluating = 1;
        s->n_pairs_due--;
    }
    return n;
}

static void evaluate(ksched *s, job *jobs, unsigned n)
{
    sched_model_in in = sched_model_in_of(s);
    in.model = s->pre_model;
    for (unsigned i = 0; i < n; i++)
        sched_pair_eval(&in, &jobs[i].ka, &jobs[i].kb, &jobs[i].r);
}

static void store(ksched *s, const job *jobs, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (sched_pair_model_put(s, jobs[i].a, jobs[i].b, &jobs[i].r) > 0)
            s->stats.pairs_precomputed++;
    for (unsigned i = 0; i < s->n_classes; i++)
        s->classes[i]->pairs_evaluating = 0;
}

static void account(ksched *s, uint64_t locked_ns, uint64_t model_ns)
{
    s->stats.precompute_locked_ns += locked_ns;
    s->stats.precompute_ns_total += model_ns;
    if (model_ns > s->stats.precompute_ns_max)
        s->stats.precompute_ns_max = model_ns;
}

void sched_precompute(ksched *s)
{
    if (!s->n_pairs_due || pthread_mutex_trylock(&s->pre_lock))
        return;                 /* another thread is evaluating: decisions do the rest */
    job *jobs = malloc(PASS_MAX * sizeof(*jobs));
    uint64_t t0 = sched_mono_ns();
    unsigned n = jobs ? collect(s, jobs) : 0;
    uint64_t locked = sched_mono_ns() - t0, model = 0;
    if (n) {
        pthread_mutex_unlock(&s->lock);
        uint64_t m0 = sched_mono_ns();
        evaluate(s, jobs, n);
        model = sched_mono_ns() - m0;
        pthread_mutex_lock(&s->lock);
    }
    uint64_t t2 = sched_mono_ns();
    store(s, jobs, n);
    account(s, locked + (sched_mono_ns() - t2), model);
    free(jobs);
    pthread_mutex_unlock(&s->pre_lock);
}
