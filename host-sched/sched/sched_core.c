/* The scheduler object: configuration, creation and teardown, policy switch, statistics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policies/policy.h"
#include "sched_internal.h"

void ksched_config_default(ksched_config *c)
{
    if (!c)
        return;
    memset(c, 0, sizeof(*c));
    c->policy = KSCHED_KERNELET;
    c->alpha_p = 0.4;
    c->alpha_m = 0.1;
    c->slice_overhead = 0.02;
    c->min_cp = 0.0;
    c->pipeline_depth = 2;
    c->pair_waves = 0;
    c->base_lanes = 2;
    c->lone_slice_ns = 2000000;
    c->seed = 1;
    c->fairness_window_ns = 5000000;
    c->aging = 1000;
    kmodel_options_default(&c->model);
    c->device_a0 = 1;
}

static int config_check(const ksched_config *c, ksched_err *err)
{
    if ((unsigned)c->policy >= ksched_policy_count())
        return ksched_fail(err, KSCHED_EINVAL, "unknown policy %d", (int)c->policy);
    if (!(c->alpha_p >= 0 && c->alpha_p <= 1) || !(c->alpha_m >= 0 && c->alpha_m <= 1))
        return ksched_fail(err, KSCHED_EINVAL, "alpha_p and alpha_m must be in [0, 1]");
    if (!(c->slice_overhead > 0 && c->slice_overhead < 1))
        return ksched_fail(err, KSCHED_EINVAL, "slice_overhead must be in (0, 1)");
    if (!isfinite(c->min_cp) || c->min_cp < -1 || c->min_cp >= 1)
        return ksched_fail(err, KSCHED_EINVAL, "min_cp must be in [-1, 1)");
    if ((c->pair_split[0] || c->pair_split[1]) &&
        (!c->pair_split[0] || !c->pair_split[1] || c->pair_split[0] > 64 || c->pair_split[1] > 64))
        return ksched_fail(err, KSCHED_EINVAL, "pair_split must be two values in [1, 64] or none");
    if (!c->pipeline_depth || c->pipeline_depth > 64)
        return ksched_fail(err, KSCHED_EINVAL, "pipeline_depth must be in [1, 64]");
    if (c->whole_depth > 64)
        return ksched_fail(err, KSCHED_EINVAL, "whole_depth must be in [0, 64]");
    if (c->pair_min_ns > 1000000000ull)
        return ksched_fail(err, KSCHED_EINVAL, "pair_min_ns must be at most 1 s");
    if (c->pair_waves > 64)
        return ksched_fail(err, KSCHED_EINVAL, "pair_waves must be in [0, 64]");
    if (!(c->aging >= 0 && c->aging <= 1e9))
        return ksched_fail(err, KSCHED_EINVAL, "aging must be in [0, 1e9] (0: no bound)");
    if (c->pair_short_ns > 1000000000ull)
        return ksched_fail(err, KSCHED_EINVAL, "pair_short_ns must be at most 1 s");
    if (c->lone_slice_ns > 1000000000ull)
        return ksched_fail(err, KSCHED_EINVAL, "lone_slice_ns must be at most 1 s");
    if (!c->base_lanes || c->base_lanes > 64)
        return ksched_fail(err, KSCHED_EINVAL, "base_lanes must be in [1, 64]");
    if (c->max_contexts > KSCHED_MAX_CONTEXTS_LIMIT)
        return ksched_fail(err, KSCHED_EINVAL, "max_contexts must be in [0, %u]",
                           KSCHED_MAX_CONTEXTS_LIMIT);
    return 0;
}

int sched_backend_fail(ksched_err *err, const kbackend_error *e, const char *what)
{
    return ksched_fail(err, KSCHED_EBACKEND, "%s: %s", what,
                       e->msg[0] ? e->msg : kbackend_strerror(e->code));
}

/* Connects to the backend: device, model context, lanes. */
static int attach_backend(ksched *s, const kbackend *be, ksched_err *err)
{
    kbackend_error e = {0};
    if (kbackend_validate(be, &e))
        return ksched_fail(err, KSCHED_EINVAL, "%s", e.msg);
    s->be = *be;
    if (be->ops->device_info(be->state, &s->dev, &e))
        return sched_backend_fail(err, &e, "device_info");
    if (!s->dev.lanes)
        return ksched_fail(err, KSCHED_EINVAL, "backend offers no launch lanes");
    if (s->dev.virtual_time && !be->ops->progress)
        return ksched_fail(err, KSCHED_EINVAL, "virtual-time backend without progress");
    if (kbackend_device_gpu(&s->dev, &s->gpu, &e))
        return ksched_fail(err, KSCHED_EINVAL, "%s", e.msg);
    if (s->cfg.device_a0)
        kbackend_device_model_options(&s->dev, &s->cfg.model);
    char msg[256] = "";
    int rc = kmodel_ctx_new(&s->model, &s->gpu, &s->cfg.model, msg, sizeof(msg));
    if (rc)
        return ksched_fail(err, rc == KMODEL_ENOMEM ? KSCHED_ENOMEM : KSCHED_EINVAL,
                           "model: %s", msg);
    /* the evaluations made outside decisions get a context of their own (sched_precompute.c);
       without one, decisions make them all */
    if (kmodel_ctx_new(&s->pre_model, &s->gpu, &s->cfg.model, NULL, 0))
        s->pre_model = NULL;
    s->n_lanes = s->dev.lanes;
    s->lanes = calloc(s->n_lanes, sizeof(*s->lanes));
    return s->lanes ? 0 : ksched_fail(err, KSCHED_ENOMEM, "out of memory");
}

/* A new cache in *to with every record of from (from may be NULL: empty). */
static int copy_cache(ksched_profile_cache **to, const ksched_profile_cache *from,
                      ksched_err *err)
{
    int rc = ksched_profile_cache_new(to, err);
    const char *entry;
    uint64_t hash;
    const kbackend_profile *p;
    for (size_t i = 0; !rc && from && (p = ksched_profile_cache_at(from, i, &entry, &hash)); i++)
        rc = ksched_profile_cache_put(*to, hash, entry, p, err);
    return rc;
}

int ksched_profiles_snapshot(ksched *s, ksched_profile_cache **out, ksched_err *err)
{
    if (!s || !out)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    int rc = copy_cache(out, s->profiles, err);
    pthread_mutex_unlock(&s->lock);
    if (rc) {
        ksched_profile_cache_free(*out);
        *out = NULL;
    }
    return rc;
}

/* KSCHED_EUNSUPPORTED when policy p measures pairs and the backend cannot. */
static int policy_usable(const ksched *s, ksched_policy p, ksched_err *err)
{
    const sched_policy *row = sched_policy_get(p);
    if (row->needs_trial && !s->be.ops->trial)
        return ksched_fail(err, KSCHED_EUNSUPPORTED, "policy %s needs the backend's trial op",
                           row->name);
    return 0;
}

int ksched_new(ksched **out, const kbackend *backend, const ksched_config *cfg,
               const ksched_profile_cache *profiles, ksched_err *err)
{
    if (!out)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    *out = NULL;
    ksched_config def;
    if (!cfg) {
        ksched_config_default(&def);
        cfg = &def;
    }
    int rc = config_check(cfg, err);
    if (rc)
        return rc;
    ksched *s = calloc(1, sizeof(*s));
    if (!s)
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    s->cfg = *cfg;
    s->next_tenant = 1;
    s->next_op = 1;
    s->aging_next_ns = UINT64_MAX;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->cq_lock, NULL);
    pthread_mutex_init(&s->pre_lock, NULL);
    pthread_cond_init(&s->unlocked_idle, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* deadlines are backend ns */
    pthread_cond_init(&s->cq_cond, &ca);
    pthread_condattr_destroy(&ca);
    if ((rc = attach_backend(s, backend, err)) || (rc = copy_cache(&s->profiles, profiles, err)) ||
        (rc = policy_usable(s, cfg->policy, err))) {
        ksched_free(s);
        return rc;
    }
    if (sched_policy_states_new(s) != 0) {
        ksched_free(s);
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    }
    *out = s;
    return 0;
}

void ksched_free(ksched *s)
{
    if (!s)
        return;
    ksched_thread_stop(s);
    /* an allocation, free or module load in the backend, the lock released, comes back to
     * its tenant */
    pthread_mutex_lock(&s->lock);
    while (s->unlocked_calls)
        pthread_cond_wait(&s->unlocked_idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
    while (s->tenants) {
        sched_tenant *t = s->tenants;
        s->tenants = t->next;
        sched_tenant_release(s, t);
    }
    idmap_free(&s->tenant_ids);
    sched_policy_states_free(s);
    sched_pairs_free(s);
    sched_classes_free(s);
    while (s->cq_head) {
        sched_sub *n = s->cq_head->next;
        free(s->cq_head);
        s->cq_head = n;
    }
    while (s->notify_head) {
        notify *n = s->notify_head->next;
        free(s->notify_head);
        s->notify_head = n;
    }
    ksched_profile_cache_free(s->profiles);
    kmodel_ctx_free(s->model);
    kmodel_ctx_free(s->pre_model);
    free(s->lanes);
    pthread_cond_destroy(&s->cq_cond);
    pthread_mutex_destroy(&s->cq_lock);
    pthread_mutex_destroy(&s->pre_lock);
    pthread_cond_destroy(&s->unlocked_idle);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

int ksched_set_policy(ksched *s, ksched_policy p, ksched_err *err)
{
    if (!s || !sched_policy_get(p))
        return ksched_fail(err, KSCHED_EINVAL, "unknown policy");
    int rc = policy_usable(s, p, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->lock);
    s->cfg.policy = p;
    s->plan.kind = PLAN_NONE;
    s->dirty = 1;
    sched_precompute_mark_all(s);   /* kernelet's pairs, evaluated before it decides */
    pthread_mutex_unlock(&s->lock);
    sched_kick(s);
    return 0;
}

ksched_policy ksched_get_policy(ksched *s)
{
    pthread_mutex_lock(&s->lock);
    ksched_policy p = s->cfg.policy;
    pthread_mutex_unlock(&s->lock);
    return p;
}

sched_tenant *sched_tenant_find(ksched *s, uint32_t id, ksched_err *err)
{
    sched_tenant *t = idmap_get(&s->tenant_ids, id);
    if (!t)
        ksched_fail(err, KSCHED_ENOTFOUND, "no tenant %u", id);
    return t;
}

void sched_kick(ksched *s)
{
    pthread_mutex_lock(&s->cq_lock);
    s->kicked = 1;
    pthread_cond_broadcast(&s->cq_cond);
    pthread_mutex_unlock(&s->cq_lock);
}

uint64_t sched_now(ksched *s)
{
    return s->be.ops->now_ns(s->be.state);
}

uint64_t ksched_now(ksched *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t t = sched_now(s);
    pthread_mutex_unlock(&s->lock);
    return t;
}

void ksched_get_stats(ksched *s, ksched_stats *out)
{
    if (!s || !out)
        return;
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    out->ops_pending = s->ops_pending;
    pthread_mutex_unlock(&s->lock);
}

int ksched_profiles_save(ksched *s, const char *path, ksched_err *err)
{
    if (!s || !path)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->lock);
    int rc = ksched_profile_cache_save(s->profiles, path, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ksched_profile_lookup(ksched *s, uint64_t module_hash, const char *entry,
                          kbackend_profile *out)
{
    if (!s || !entry || !out)
        return KSCHED_EINVAL;
    pthread_mutex_lock(&s->lock);
    const kbackend_profile *p = ksched_profile_cache_get(s->profiles, module_hash, entry);
    if (p)
        *out = *p;
    pthread_mutex_unlock(&s->lock);
    return p ? 0 : KSCHED_ENOTFOUND;
}

void ksched_model_options(ksched *s, kmodel_options *out)
{
    if (!s || !out)
        return;
    pthread_mutex_lock(&s->lock);
    *out = s->cfg.model;
    pthread_mutex_unlock(&s->lock);
}
