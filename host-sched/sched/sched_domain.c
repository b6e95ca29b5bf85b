/* Backend domains of a tenant's client contexts (sched_internal.h, sched_domain). A VM is
 * one tenant for its policy, quota and statistics, but each of its guest processes (a
 * client context) gets a domain of its own: its own address window, into which its
 * allocations, its modules' variables and its kernels are fenced, so that one process's
 * kernel given another's pointer reaches only its own memory, as on a GPU of its own.
 * A domain lives while something holds it (an allocation, a PTX module, a launch not
 * finished) or its context is open; a closed context's domain goes back to the backend
 * with its last holder. */
#include <stdlib.h>

#include "sched_internal.h"

static unsigned max_contexts(const ksched *s)
{
    return s->cfg.max_contexts ? s->cfg.max_contexts : KSCHED_MAX_CONTEXTS_DEFAULT;
}

static int id_in_use(const ksched *s, uint32_t id)
{
    for (const sched_tenant *t = s->tenants; t; t = t->next)
        for (const sched_domain *d = t->domains; d; d = d->next)
            if (d->id == id)
                return 1;
    return 0;
}

/* A domain id for a context other than 0: the next one above the tenant ids, skipping
 * any still in use once the counter has wrapped. */
static uint32_t new_context_id(ksched *s)
{
    for (;;) {
        if (s->next_domain < SCHED_CONTEXT_DOMAIN_BASE || s->next_domain == UINT32_MAX)
            s->next_domain = SCHED_CONTEXT_DOMAIN_BASE;
        uint32_t id = s->next_domain++;
        if (!id_in_use(s, id))
            return id;
    }
}

int sched_domain_of(ksched *s, sched_tenant *t, uint32_t context, sched_domain **out,
                    ksched_err *err)
{
    for (sched_domain *d = t->domains; d; d = d->next)
        if (d->context == context && !d->closed) {
            *out = d;
            return 0;
        }
    if (t->n_domains >= max_contexts(s))
        return ksched_fail(err, KSCHED_ECONTEXTS, "tenant %u: %u client contexts hold memory "
                           "or work, the most one tenant may (context %u refused)", t->id,
                           t->n_domains, context);
    sched_domain *d = calloc(1, sizeof(*d));
    if (!d)
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    /* A closed domain of context 0 may still be held: the new one needs another id. */
    int zero_taken = 0;
    for (const sched_domain *o = t->domains; o; o = o->next)
        zero_taken |= o->id == t->id;
    d->id = context || zero_taken ? new_context_id(s) : t->id;
    d->context = context;
    d->next = t->domains;
    t->domains = d;
    t->n_domains++;
    *out = d;
    return 0;
}

static void unlink_domain(sched_tenant *t, sched_domain *d)
{
    for (sched_domain **pp = &t->domains; *pp; pp = &(*pp)->next)
        if (*pp == d) {
            *pp = d->next;
            t->n_domains--;
            return;
        }
}

static void release(ksched *s, sched_tenant *t, sched_domain *d)
{
    unlink_domain(t, d);
    if (s->be.ops->domain_release)      /* its window is empty now */
        s->be.ops->domain_release(s->be.state, d->id);
    free(d);
}

void sched_domain_put(ksched *s, sched_tenant *t, sched_domain *d)
{
    if (!d)
        return;
    if (d->users)
        d->users--;
    if (d->closed && !d->users)
        release(s, t, d);
}

void sched_domains_free(ksched *s, sched_tenant *t)
{
    while (t->domains)
        release(s, t, t->domains);
}

void sched_domains_time_limit(ksched *s, sched_tenant *t, uint64_t limit_ns)
{
    if (!s->be.ops->domain_time_limit)
        return;
    for (sched_domain *d = t->domains; d; d = d->next)
        s->be.ops->domain_time_limit(s->be.state, d->id, limit_ns);
}

int ksched_context_close(ksched *s, uint32_t tenant, uint32_t context, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    if (t)
        for (sched_domain *d = t->domains, *next; d; d = next) {
            next = d->next;
            if (d->context != context || d->closed)
                continue;
            d->closed = 1;
            if (!d->users)
                release(s, t, d);
        }
    pthread_mutex_unlock(&s->lock);
    return t ? 0 : KSCHED_ENOTFOUND;
}

int ksched_tenant_domains(ksched *s, uint32_t tenant, unsigned *n, ksched_err *err)
{
    if (!s || !n)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    sched_tenant *t = sched_tenant_find(s, tenant, err);
    if (t)
        *n = t->n_domains;
    pthread_mutex_unlock(&s->lock);
    return t ? 0 : KSCHED_ENOTFOUND;
}
