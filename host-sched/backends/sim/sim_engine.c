/* The sim's time loop: launches in lanes, blocks handed to SMs in activation order, rates
 * from the model, time advanced event to event, completions delivered from progress(). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define EPS 1e-9

job *sim_job_new(ksim *s, job_kind kind, kbackend_done_fn done, void *user)
{
    job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->kind = kind;
    j->seq = s->seq++;
    j->done = done;
    j->user = user;
    j->submit_ns = s->now;
    j->slice_start_ns = -1;
    return j;
}

void sim_job_free(job *j)
{
    if (j)
        free(j->cohorts);
    free(j);
}

void sim_queue_push(job **head, job **tail, job *j)
{
    j->next = NULL;
    if (*tail)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
}

static int check_slice(const ksim *s, const kbackend_slice *sl, kbackend_error *err)
{
    uint64_t threads = (uint64_t)sl->block[0] * sl->block[1] * sl->block[2];
    if (!threads || threads > (uint64_t)s->cfg.gpu.max_warps_per_block * 32)
        return kbackend_fail(err, KBACKEND_EINVAL, "block of %llu threads", (unsigned long long)threads);
    uint64_t total = kbackend_grid_blocks(sl->grid);
    if (!total)
        return kbackend_fail(err, KBACKEND_EINVAL, "empty grid");
    if (!sl->count)
        return kbackend_fail(err, KBACKEND_EINVAL, "launch of 0 blocks");
    if (sl->sliced ? (sl->first >= total || sl->count > total - sl->first)
                   : (sl->first != 0 || sl->count != total))
        return kbackend_fail(err, KBACKEND_EINVAL, "blocks [%llu, +%llu) do not match the grid of %llu",
                          (unsigned long long)sl->first, (unsigned long long)sl->count,
                          (unsigned long long)total);
    if (sl->lane >= s->cfg.lanes)
        return kbackend_fail(err, KBACKEND_EINVAL, "lane %u of %u", sl->lane, s->cfg.lanes);
    if (sl->params_size && !sl->params)
        return kbackend_fail(err, KBACKEND_EINVAL, "parameter block missing");
    return 0;
}

/* An earlier wave of a slice ended: the slice's completion, its last wave's, starts
 * when the first wave did. */
static void wave_done(void *user, const kbackend_completion *c)
{
    job *last = user;
    if (last->slice_start_ns < 0)
        last->slice_start_ns = (double)c->start_ns;
    if (c->status && !last->status)
        last->status = c->status;
}

/* One launch of blocks [first, first + count) of sl, not yet queued. */
static job *new_launch(ksim *s, const kbackend_slice *sl, unsigned variant, uint64_t first,
                       uint64_t count, kbackend_done_fn done, void *user)
{
    job *j = sim_job_new(s, JOB_LAUNCH, done, user);
    if (!j)
        return NULL;
    j->variant = variant;
    j->cap = sl->max_blocks_per_sm;
    j->lane = sl->lane;
    j->first = first;
    j->count = j->unstarted = count;
    j->tag = sl->tag;
    j->status = s->kernels[sl->fn->kernel].failing ? KBACKEND_ELAUNCH : 0;
    return j;
}

static void queue_launch(ksim *s, job *j)
{
    lane *ln = &s->lanes[j->lane];
    if (!ln->head)
        j->ready_ns = s->now + (double)s->cfg.launch_latency_ns;
    else
        j->ready_ns = INFINITY;     /* set when its predecessor ends */
    sim_queue_push(&ln->head, &ln->tail, j);
    s->in_flight++;
    s->stats.launches++;
}

/* Blocks per launch: a wave of the slice's cap on every SM where the sim runs capped
 * slices as the cuda backend does (wave_launches), else the whole slice. */
static uint64_t launch_blocks(const ksim *s, const kbackend_slice *sl)
{
    uint64_t wave = (uint64_t)sl->max_blocks_per_sm * kmodel_ctx_gpu(s->model)->sms;
    return s->cfg.wave_launches && sl->sliced && wave ? wave : sl->count;
}

int sim_launch(void *state, const kbackend_slice *sl, kbackend_done_fn done, void *user,
               kbackend_error *err)
{
    ksim *s = state;
    if (s->lost)
        return sim_lost(err);
    if (!sl || !sl->fn || !done)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    int rc = check_slice(s, sl, err);
    if (rc)
        return rc;
    const struct kbackend_function *fn = sl->fn;
    if (fn->sliced != (sl->sliced != 0))
        return kbackend_fail(err, KBACKEND_EINVAL, "%s function launched as %s",
                          fn->sliced ? "sliced" : "unsliced", sl->sliced ? "a slice" : "whole");
    unsigned variant;
    if ((rc = sim_variant_of(s, fn->kernel, sl->block, sl->smem, &variant, err)))
        return rc;
    /* the slice's launches, made before any is queued (out of memory queues none); the
     * last completes the slice, the earlier ones report to it (wave_done) */
    uint64_t per = launch_blocks(s, sl), waves = (sl->count + per - 1) / per;
    job *head = NULL, **tail = &head, *last = NULL;
    for (uint64_t w = 0; w < waves; w++) {
        uint64_t first = sl->first + w * per, left = sl->count - w * per;
        job *j = new_launch(s, sl, variant, first, left < per ? left : per, done, user);
        if (!j) {
            while (head) {
                job *n = head->next;
                sim_job_free(head);
                head = n;
            }
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
        }
        *tail = last = j;
        tail = &j->next;
    }
    while (head) {
        job *j = head;
        head = j->next;
        if (j != last) {
            j->done = wave_done;
            j->user = last;
        }
        queue_launch(s, j);
    }
    if (kbackend_launch_has_attrs(sl->cluster, sl->cooperative))
        s->stats.attr_launches++;  /* timed as any whole launch */
    return 0;
}

static int is_active(const ksim *s, const job *j)
{
    for (unsigned i = 0; i < s->n_active; i++)
        if (s->active[i] == j)
            return 1;
    return 0;
}

static double next_event(const ksim *s)
{
    double t = INFINITY;
    for (unsigned l = 0; l < s->cfg.lanes; l++) {
        const job *h = s->lanes[l].head;
        if (h && h->ready_ns < t && !is_active(s, h))
            t = h->ready_ns;
    }
    for (unsigned e = 0; e < 3; e++)
        if (s->engine_head[e] && s->engine_head[e]->end_ns < t)
            t = s->engine_head[e]->end_ns;
    for (unsigned i = 0; i < s->n_active; i++) {
        const job *j = s->active[i];
        if (!j->resident)
            continue;
        double dt = (j->cohorts[j->c_head].end - j->progress) / j->rate;
        if (s->now + dt < t)
            t = s->now + dt;
    }
    return t < s->now ? s->now : t;
}

static void advance(ksim *s, double t)
{
    for (unsigned i = 0; i < s->n_active; i++) {
        job *j = s->active[i];
        if (j->resident)
            j->progress += j->rate * (t - s->now);
    }
    s->now = t;
}

/* A completion waiting to be delivered once the state is consistent again. */
typedef struct delivery {
    job *j;
    struct delivery *next;
} delivery;

static void finish(ksim *s, job *j, delivery **out)
{
    delivery *d = malloc(sizeof(*d));
    if (!d) {           /* cannot queue: deliver at once (state is consistent here) */
        kbackend_completion c = {.status = s->lost ? KBACKEND_ELOST : j->status, .msg = "", .start_ns = (uint64_t)j->start_ns,
                              .end_ns = (uint64_t)s->now};
        j->done(j->user, &c);
        sim_job_free(j);
    } else {
        d->j = j;
        d->next = *out;
        *out = d;
    }
    s->in_flight--;
}

static void finish_copies(ksim *s, delivery **out)
{
    for (unsigned e = 0; e < 3; e++) {
        job *j;
        while ((j = s->engine_head[e]) && j->end_ns <= s->now + EPS) {
            s->engine_head[e] = j->next;
            if (!j->next)
                s->engine_tail[e] = NULL;
            sim_copy_apply(s, j);
            finish(s, j, out);
            sim_engine_start(s, e);
        }
    }
}

static void remove_active(ksim *s, unsigned i)
{
    memmove(&s->active[i], &s->active[i + 1], (s->n_active - i - 1) * sizeof(s->active[0]));
    s->n_active--;
}

/* A launch has run all its blocks: free its lane for the next one. */
static void end_launch(ksim *s, unsigned i, delivery **out)
{
    job *j = s->active[i];
    remove_active(s, i);
    lane *ln = &s->lanes[j->lane];
    ln->head = j->next;
    if (!ln->head)
        ln->tail = NULL;
    else {
        double gap = s->now + (double)s->cfg.stream_gap_ns;
        double cold = ln->head->submit_ns + (double)s->cfg.launch_latency_ns;
        ln->head->ready_ns = gap > cold ? gap : cold;
    }
    if (j->status)
        s->stats.failed_launches++;
    else {
        s->stats.blocks_run += j->count;
        if (s->cfg.track_coverage && sim_coverage_add(s, j->tag, j->first, j->count))
            j->status = KBACKEND_ENOMEM;
    }
    finish(s, j, out);
}

static void finish_blocks(ksim *s, delivery **out)
{
    for (unsigned i = 0; i < s->n_active;) {
        job *j = s->active[i];
        while (j->c_len && j->cohorts[j->c_head].end - j->progress <= EPS) {
            j->resident -= j->cohorts[j->c_head].n;
            j->c_head = (j->c_head + 1) % j->c_cap;
            j->c_len--;
        }
        if (!j->unstarted && !j->resident)
            end_launch(s, i, out);
        else
            i++;
    }
}

static int activate(ksim *s, kbackend_error *err)
{
    for (unsigned l = 0; l < s->cfg.lanes; l++) {
        job *h = s->lanes[l].head;
        if (!h || h->ready_ns > s->now + EPS || is_active(s, h))
            continue;
        if (s->n_active == s->cfg.lanes)
            return kbackend_fail(err, KBACKEND_EDEVICE, "sim: active list full");
        h->start_ns = s->now;
        s->active[s->n_active++] = h;
    }
    return 0;
}

static int push_cohort(job *j, uint64_t n)
{
    if (j->c_len == j->c_cap) {
        size_t cap = j->c_cap ? j->c_cap * 2 : 4;
        cohort *c = malloc(cap * sizeof(*c));
        if (!c)
            return -1;
        for (size_t i = 0; i < j->c_len; i++)
            c[i] = j->cohorts[(j->c_head + i) % j->c_cap];
        free(j->cohorts);
        j->cohorts = c;
        j->c_head = 0;
        j->c_cap = cap;
    }
    j->cohorts[(j->c_head + j->c_len++) % j->c_cap] = (cohort){.n = n, .end = j->progress + 1.0};
    return 0;
}

static unsigned per_sm(const ksim *s, uint64_t resident)
{
    return (unsigned)((resident + s->cfg.gpu.sms - 1) / s->cfg.gpu.sms);
}

/* Gathers the resident launches other than skip into v[], c[]; returns how many. */
static unsigned residents(const ksim *s, const job *skip, unsigned v[], unsigned c[])
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->n_active && n < KMODEL_MAX_KERNELS; i++) {
        const job *o = s->active[i];
        if (o == skip || !o->resident)
            continue;
        v[n] = o->variant;
        c[n++] = per_sm(s, o->resident);
    }
    return n;
}

/* Hands job j as many new blocks as fit beside the other resident launches. */
static int place_blocks(ksim *s, job *j)
{
    unsigned v[KMODEL_MAX_KERNELS + 1], c[KMODEL_MAX_KERNELS + 1];
    unsigned n = residents(s, j, v, c);
    if (n == KMODEL_MAX_KERNELS)
        return 0;
    unsigned cur = per_sm(s, j->resident), max = s->variants[j->variant].max_blocks;
    if (j->cap && j->cap < max)
        max = j->cap;
    v[n] = j->variant;
    unsigned per = cur;
    while (per < max) {
        c[n] = per + 1;
        if (!sim_fits(s, n + 1, v, c))
            break;
        per++;
    }
    uint64_t slots = (uint64_t)per * s->cfg.gpu.sms;
    if (slots <= j->resident)
        return 0;
    uint64_t take = slots - j->resident < j->unstarted ? slots - j->resident : j->unstarted;
    if (!j->resident) {
        j->progress = 0;
        j->c_len = 0;
    }
    if (push_cohort(j, take))
        return -1;
    j->unstarted -= take;
    j->resident += take;
    return 0;
}

static int set_rates(ksim *s, kbackend_error *err)
{
    unsigned v[KMODEL_MAX_KERNELS], c[KMODEL_MAX_KERNELS];
    job *who[KMODEL_MAX_KERNELS];
    unsigned n = 0;
    for (unsigned i = 0; i < s->n_active; i++) {
        job *j = s->active[i];
        j->rate = 0;
        if (!j->resident || n == KMODEL_MAX_KERNELS)
            continue;
        who[n] = j;
        v[n] = j->variant;
        c[n++] = per_sm(s, j->resident);
    }
    if (!n)
        return 0;
    if (n > s->stats.max_concurrent)
        s->stats.max_concurrent = n;
    double ipc[KMODEL_MAX_KERNELS];
    int rc = sim_rates(s, n, v, c, ipc, err);
    if (rc)
        return rc;
    for (unsigned i = 0; i < n; i++) {
        double cycles_rate = ipc[i] / (c[i] * s->variants[v[i]].block_insts);
        double rate = cycles_rate * s->cfg.gpu.clock_mhz / 1000.0;
        who[i]->rate = rate > 1e-15 ? rate : 1e-15;   /* never stall time */
    }
    return 0;
}

static int dispatch(ksim *s, kbackend_error *err)
{
    int rc = activate(s, err);
    if (rc)
        return rc;
    for (unsigned i = 0; i < s->n_active; i++)
        if (s->active[i]->unstarted && place_blocks(s, s->active[i]))
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    return set_rates(s, err);
}

static const char *kernel_name(const ksim *s, const job *j)
{
    return s->kernels[s->variants[j->variant].kernel].entry;
}

static void deliver(ksim *s, delivery *list)
{
    /* the list is newest first: reverse it so that callbacks run in completion order */
    delivery *rev = NULL;
    while (list) {
        delivery *n = list->next;
        list->next = rev;
        rev = list;
        list = n;
    }
    while (rev) {
        job *j = rev->j;
        char msg[160] = "";
        if (s->lost)
            j->status = KBACKEND_ELOST;
        if (j->status == KBACKEND_ELAUNCH)
            snprintf(msg, sizeof(msg), "simulated fault in %s", kernel_name(s, j));
        else if (j->status)
            snprintf(msg, sizeof(msg), "%s", kbackend_strerror(j->status));
        double start = j->slice_start_ns >= 0 ? j->slice_start_ns : j->start_ns;
        kbackend_completion c = {.status = j->status, .msg = msg,
                              .start_ns = (uint64_t)llround(start),
                              .end_ns = (uint64_t)llround(s->now)};
        j->done(j->user, &c);
        delivery *n = rev->next;
        sim_job_free(j);
        free(rev);
        rev = n;
    }
}

static int deliver_profiles(ksim *s)
{
    delivery *list = NULL;
    job *j;
    while ((j = s->profiles_head)) {
        s->profiles_head = j->next;
        j->start_ns = s->now;
        finish(s, j, &list);
    }
    s->profiles_tail = NULL;
    deliver(s, list);
    return 1;
}

int sim_progress(void *state, uint64_t until_ns, kbackend_error *err)
{
    ksim *s = state;
    double until = until_ns == UINT64_MAX ? INFINITY : (double)until_ns;
    for (;;) {
        if (s->profiles_head)
            return deliver_profiles(s);
        double t = next_event(s);
        if (isinf(t) || t > until) {
            if (isfinite(until) && until > s->now)
                advance(s, until);
            return 0;
        }
        advance(s, t);
        s->stats.events++;
        delivery *list = NULL;
        finish_copies(s, &list);
        finish_blocks(s, &list);
        int rc = dispatch(s, err), delivered = list != NULL;
        deliver(s, list);
        if (rc)
            return rc;
        if (delivered)
            return 1;
    }
}
