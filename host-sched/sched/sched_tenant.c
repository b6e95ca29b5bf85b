/* Tenants: policy, statistics, removal (cancel, drain, release), streams and events. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

void ksched_tenant_policy_default(ksched_tenant_policy *p)
{
    if (!p)
        return;
    *p = (ksched_tenant_policy){.weight = 1.0, .priority = 0, .mem_quota = 0,
                                .max_inflight = 1024, .slicing = 1};
}

static int policy_check(const ksched_tenant_policy *p, ksched_err *err)
{
    if (!(p->weight > 0) || !isfinite(p->weight) || p->weight > 1e6)
        return ksched_fail(err, KSCHED_EINVAL, "weight must be in (0, 1e6]");
    if (p->slicing != 0 && p->slicing != 1)
        return ksched_fail(err, KSCHED_EINVAL, "slicing must be 0 or 1");
    if (p->kernel_time_limit_ns > KSCHED_TIME_LIMIT_MAX_NS)
        return ksched_fail(err, KSCHED_EINVAL, "kernel time limit must be at most a day");
    return 0;
}

static int new_stream(sched_tenant *t, uint32_t id)
{
    sched_stream *st = calloc(1, sizeof(*st));
    if (!st)
        return KSCHED_ENOMEM;
    st->id = id;
    st->tenant = t;
    if (idmap_put(&t->streams, id, st)) {
        free(st);
        return KSCHED_ENOMEM;
    }
    return 0;
}

int ksched_tenant_add(ksched *s, const char *name, const ksched_tenant_policy *pol,
                      uint32_t *id, ksched_err *err)
{
    ksched_tenant_policy def;
    if (!s || !id)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    if (!pol) {
        ksched_tenant_policy_default(&def);
        pol = &def;
    }
    int rc = policy_check(pol, err);
    if (rc)
        return rc;
    if (!name || strlen(name) > 63)
        return ksched_fail(err, KSCHED_EINVAL, "tenant name missing or longer than 63 bytes");
    sched_tenant *t = calloc(1, sizeof(*t));
    if (!t)
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    strcpy(t->name, name);
    t->pol = *pol;
    krange_table_init(&t->allocs, sizeof(sched_alloc));
    t->next_stream = t->next_event = t->next_module = t->next_function = 1;
    pthread_mutex_lock(&s->lock);
    if (s->next_tenant >= SCHED_CONTEXT_DOMAIN_BASE) {  /* the contexts' domain ids */
        pthread_mutex_unlock(&s->lock);
        sched_tenant_release(s, t);
        return ksched_fail(err, KSCHED_ENOMEM, "no tenant ids left");
    }
    t->id = s->next_tenant++;
    if (new_stream(t, 0) || idmap_put(&s->tenant_ids, t->id, t)) {
        pthread_mutex_unlock(&s->lock);
        sched_tenant_release(s, t);
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    }
    t->next = s->tenants;
    s->tenants = t;
    *id = t->id;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* Cancels what has not started in st; started launches (the head, and launches pipelined
 * behind it) stop getting slices and complete when their slices in flight do. */
static void cancel_stream(uint32_t id, void *val, void *user)
{
    (void)id;
    ksched *s = user;
    sched_stream *st = val;
    sched_op *last_started = NULL;
    for (sched_op *op = st->head; op && op->started; op = op->next)
        last_started = op;
    sched_op *rest = last_started ? last_started->next : st->head;
    if (last_started) {
        last_started->next = NULL;
        st->tail = last_started;
    } else {
        st->head = st->tail = NULL;
    }
    while (rest) {
        sched_op *n = rest->next;
        sched_op_finish(s, rest, KSCHED_ECANCELED, "tenant removed");
        rest = n;
    }
    for (sched_op *op = st->head, *n; op; op = n) {
        n = op->next;       /* canceling may complete op and free it */
        if (op->op.kind == KSCHED_OP_LAUNCH && op->kernel)
            sched_kernel_cancel(s, op->kernel, KSCHED_ECANCELED, "tenant removed");
    }
}

int ksched_tenant_remove(ksched *s, uint32_t tenant, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    int rc = !t ? KSCHED_ENOTFOUND
             : t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u is being removed", tenant)
             : 0;
    if (!rc) {
        t->removing = 1;
        idmap_each(&t->streams, cancel_stream, s);
        s->dirty = 1;
    }
    pthread_mutex_unlock(&s->lock);
    if (!rc)
        sched_kick(s);
    return rc;
}

static void drop_from_worklist(ksched *s, const sched_tenant *t)
{
    sched_stream *keep_head = NULL, *keep_tail = NULL;
    for (sched_stream *st = s->work_head, *n; st; st = n) {
        n = st->work_next;
        st->work_next = NULL;
        if (st->tenant == t) {
            st->on_worklist = 0;
            continue;
        }
        if (keep_tail)
            keep_tail->work_next = st;
        else
            keep_head = st;
        keep_tail = st;
    }
    s->work_head = keep_head;
    s->work_tail = keep_tail;
}

static void free_stream_cb(uint32_t id, void *val, void *user)
{
    (void)id;
    sched_stream *st = val;
    for (sched_op *op = st->head; op; op = op->next)
        if (op->kernel)
            sched_kernel_unlink(user, op->kernel);
    sched_stream_free(st);
}

static void free_cb(uint32_t id, void *val, void *user)
{
    (void)id;
    (void)user;
    free(val);
}

static void unload_cb(uint32_t id, void *val, void *user)
{
    (void)id;
    ksched *s = user;
    sched_module *m = val;
    kbackend_error e;
    if (m->mod)
        s->be.ops->module_unload(s->be.state, m->mod, &e);
    free(m);
}

/* Frees everything of t (the tenant is already out of the lists or never was in them). */
void sched_tenant_release(ksched *s, sched_tenant *t)
{
    drop_from_worklist(s, t);
    idmap_each(&t->streams, free_stream_cb, s);
    idmap_free(&t->streams);
    idmap_each(&t->events, free_cb, NULL);
    idmap_free(&t->events);
    idmap_each(&t->functions, free_cb, NULL);
    idmap_free(&t->functions);
    idmap_each(&t->modules, unload_cb, s);
    idmap_free(&t->modules);
    sched_vmm_release_all(s, t);
    kbackend_error e;
    for (size_t i = 0; i < krange_count(&t->allocs); i++) {
        const sched_alloc *a = krange_at(&t->allocs, i);
        if (!a->module)             /* module variables went with their modules */
            s->be.ops->mem_free(s->be.state, a->r.base, &e);
    }
    krange_table_clear(&t->allocs);
    sched_domains_free(s, t);           /* their windows are empty now */
    free(t);
}

/* Releases the removed tenants whose running work has drained. */
void sched_tenants_reap(ksched *s)
{
    for (sched_tenant **pp = &s->tenants; *pp;) {
        sched_tenant *t = *pp;
        if (!t->removing || t->busy || t->st.queued || t->unlocked_calls) {
            pp = &t->next;
            continue;
        }
        *pp = t->next;
        idmap_del(&s->tenant_ids, t->id);
        sched_tenant_release(s, t);
    }
}

static void wake_stream(uint32_t id, void *val, void *user)
{
    (void)id;
    sched_stream *st = val;
    if (st->head || st->destroyed)     /* work held back, or a stream left to free */
        sched_stream_wake(user, st);
}

void sched_tenant_resume(ksched *s, sched_tenant *t)
{
    idmap_each(&t->streams, wake_stream, s);
    if (t->pending_kernels) {
        sched_tenant_level(s, t);
        s->dirty = 1;
    }
}

void sched_unlocked_begin(ksched *s, sched_tenant *t)
{
    t->unlocked_calls++;
    s->unlocked_calls++;
    if (t->pending_kernels)
        s->dirty = 1;       /* a plan that holds its kernels is decided anew */
    pthread_mutex_unlock(&s->lock);
}

void sched_unlocked_end(ksched *s, sched_tenant *t)
{
    pthread_mutex_lock(&s->lock);
    if (!--t->unlocked_calls)
        sched_tenant_resume(s, t);
    if (!--s->unlocked_calls)
        pthread_cond_broadcast(&s->unlocked_idle);
    sched_kick(s);
}

int ksched_tenant_set_policy(ksched *s, uint32_t tenant, const ksched_tenant_policy *pol,
                             ksched_err *err)
{
    if (!s || !pol)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    int rc = policy_check(pol, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    if (t) {
        /* a lowered limit stops a runaway kernel that is running now, not only the next */
        if (pol->kernel_time_limit_ns != t->pol.kernel_time_limit_ns)
            sched_domains_time_limit(s, t, pol->kernel_time_limit_ns);
        t->pol = *pol;
        s->dirty = 1;
    }
    pthread_mutex_unlock(&s->lock);
    if (t)
        sched_kick(s);
    return t ? 0 : KSCHED_ENOTFOUND;
}

/* Copies size bytes at offset off of the tenant's record to out, under the lock. */
static int tenant_read(ksched *s, uint32_t tenant, void *out, size_t off, size_t size,
                       ksched_err *err)
{
    if (!s || !out)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    if (t)
        memcpy(out, (const char *)t + off, size);
    pthread_mutex_unlock(&s->lock);
    return t ? 0 : KSCHED_ENOTFOUND;
}

int ksched_tenant_get_policy(ksched *s, uint32_t tenant, ksched_tenant_policy *out,
                             ksched_err *err)
{
    return tenant_read(s, tenant, out, offsetof(sched_tenant, pol), sizeof(*out), err);
}

int ksched_tenant_get_stats(ksched *s, uint32_t tenant, ksched_tenant_stats *out,
                            ksched_err *err)
{
    return tenant_read(s, tenant, out, offsetof(sched_tenant, st), sizeof(*out), err);
}

int ksched_tenant_list(ksched *s, uint32_t *ids, size_t cap, size_t *n)
{
    if (!s || !n || (cap && !ids))
        return KSCHED_EINVAL;
    pthread_mutex_lock(&s->lock);
    size_t k = 0;
    for (sched_tenant *t = s->tenants; t; t = t->next, k++)
        if (k < cap)
            ids[k] = t->id;
    *n = k;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* ---- streams and events ---- */

/* Looks up the tenant and takes the lock for the calls below; unlocks on failure. */
static int lock_tenant(ksched *s, uint32_t tenant, sched_tenant **out, ksched_err *err)
{
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    int rc = !t ? KSCHED_ENOTFOUND
             : t->removing ? ksched_fail(err, KSCHED_ESTATE, "tenant %u is being removed", tenant)
             : 0;
    if (rc)
        pthread_mutex_unlock(&s->lock);
    *out = t;
    return rc;
}

int ksched_stream_create(ksched *s, uint32_t tenant, uint32_t *stream, ksched_err *err)
{
    if (!s || !stream)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    sched_tenant *t;
    int rc = lock_tenant(s, tenant, &t, err);
    if (rc)
        return rc;
    uint32_t id = t->next_stream++;
    rc = new_stream(t, id);
    if (!rc)
        *stream = id;
    pthread_mutex_unlock(&s->lock);
    return rc ? ksched_fail(err, rc, "out of memory") : 0;
}

int ksched_stream_set_priority(ksched *s, uint32_t tenant, uint32_t stream, unsigned priority,
                               ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    if (priority > KSCHED_STREAM_PRIORITY_MAX)
        return ksched_fail(err, KSCHED_EINVAL, "stream priority %u is outside 0..%d", priority,
                           KSCHED_STREAM_PRIORITY_MAX);
    sched_tenant *t;
    int rc = lock_tenant(s, tenant, &t, err);
    if (rc)
        return rc;
    sched_stream *st = stream ? idmap_get(&t->streams, stream) : NULL;
    if (!st || st->destroyed)
        rc = ksched_fail(err, KSCHED_ENOTFOUND, "no stream %u (the legacy stream 0 keeps the "
                         "default priority)", stream);
    else
        st->priority = priority;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_stream_destroy(ksched *s, uint32_t tenant, uint32_t stream, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    sched_tenant *t;
    int rc = lock_tenant(s, tenant, &t, err);
    if (rc)
        return rc;
    sched_stream *st = stream ? idmap_get(&t->streams, stream) : NULL;
    rc = !st || st->destroyed ? ksched_fail(err, KSCHED_ENOTFOUND, "no stream %u (stream 0 "
                                                "cannot be destroyed)", stream) : 0;
    if (!rc) {
        st->destroyed = 1;
        sched_stream_wake(s, st);   /* freed by the driver once empty */
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_event_create(ksched *s, uint32_t tenant, uint32_t *event, ksched_err *err)
{
    if (!s || !event)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    sched_tenant *t;
    int rc = lock_tenant(s, tenant, &t, err);
    if (rc)
        return rc;
    sched_event *ev = calloc(1, sizeof(*ev));
    if (!ev || idmap_put(&t->events, (ev->id = t->next_event++), ev)) {
        free(ev);
        rc = ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    } else {
        *event = ev->id;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Takes the lock and finds the tenant's event; unlocks on failure. */
static int lock_event(ksched *s, uint32_t tenant, uint32_t event, sched_tenant **t,
                      sched_event **ev, ksched_err *err)
{
    int rc = lock_tenant(s, tenant, t, err);
    if (rc)
        return rc;
    if ((*ev = idmap_get(&(*t)->events, event)))
        return 0;
    pthread_mutex_unlock(&s->lock);
    return ksched_fail(err, KSCHED_ENOTFOUND, "no event %u", event);
}

int ksched_event_destroy(ksched *s, uint32_t tenant, uint32_t event, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    sched_tenant *t;
    sched_event *ev;
    int rc = lock_event(s, tenant, event, &t, &ev, err);
    if (rc)
        return rc;
    idmap_del(&t->events, event);
    free(ev);
    sched_events_changed(s, t);     /* waits on it no longer wait */
    pthread_mutex_unlock(&s->lock);
    return 0;
}

int ksched_event_query(ksched *s, uint32_t tenant, uint32_t event, int *done,
                       uint64_t *time_ns, ksched_err *err)
{
    if (!s || !done)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    sched_tenant *t;
    sched_event *ev;
    int rc = lock_event(s, tenant, event, &t, &ev, err);
    if (rc)
        return rc;
    *done = ev->completed >= ev->recorded;
    if (time_ns)
        *time_ns = ev->time_ns;
    pthread_mutex_unlock(&s->lock);
    return 0;
}
