/* Administration (kernelet-ctl): the tenants with their policy and statistics, and changes
 * of a tenant's policy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"

static struct ks_conn *conn_of_tenant(struct ks_server *s, uint64_t tenant)
{
    for (struct ks_conn *c = s->conns; c; c = c->next)
        if (c->have_tenant && !c->closing && s->cfg.tenant_id_base + c->tenant == tenant)
            return c;
    return NULL;
}

static void count_stream(struct ks_obj *o, void *arg)
{
    if (o->kind == KS_STREAM)
        ++*(uint32_t *)arg;
}

void ks_admin_describe(struct ks_server *s, struct ks_conn *c, struct kernelet_tenant_status *t)
{
    ksched_tenant_policy pol;
    ksched_tenant_stats st;

    memset(t, 0, sizeof(*t));
    t->id = s->cfg.tenant_id_base + c->tenant;
    snprintf(t->name, sizeof(t->name), "%s", c->name);
    t->pid = (uint32_t)c->cred.pid;
    t->uid = (uint32_t)c->cred.uid;
    if (ksched_tenant_get_policy(s->cfg.sched, c->tenant, &pol, NULL) == 0) {
        t->weight = (uint32_t)lround(pol.weight * 100.0);
        t->priority = pol.priority < 0 ? 0 : (uint32_t)pol.priority;
        t->mem_quota = pol.mem_quota;
        t->max_inflight = pol.max_inflight;
        t->flags |= pol.slicing ? KERNELET_TENANT_SLICING : 0;
        t->kernel_time_limit_ms = (uint32_t)(pol.kernel_time_limit_ns / 1000000u);
    }
    if (ksched_tenant_get_stats(s->cfg.sched, c->tenant, &st, NULL) == 0) {
        t->mem_in_use = st.mem_in_use;
        t->queued = (uint32_t)st.queued;
        t->launches = st.launched;
        t->completed = st.completed;
        t->gpu_time_ns = st.gpu_time_ns;
        t->bytes_copied = st.bytes_copied;
    }
    t->coscheduled = kserver_tally_coscheduled(s->cfg.tally, c->tenant);
    t->flags |= ks_context_any_sticky(c) ? KERNELET_TENANT_STICKY : 0;
    t->flags |= c->vm ? KERNELET_TENANT_VM : 0;
    t->requests = c->requests;
    t->errors = c->errors;
    t->streams = 1; /* the legacy stream, and those it created */
    ks_handle_each(&c->handles, count_stream, &t->streams);
}

void ks_admin_status(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_server *s = c->srv;
    size_t max = (KERNELET_MAX_PAYLOAD - sizeof(struct kernelet_admin_status)) /
                 sizeof(struct kernelet_tenant_status);
    struct kernelet_tenant_status *list = calloc(max, sizeof(*list));
    struct kernelet_admin_status hdr = {0};
    uint32_t index = 0;

    if (!list) {
        ks_reply_cuda(c, KERNELET_OP_ADMIN_STATUS, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    for (struct ks_conn *t = s->conns; t; t = t->next) {
        if (!t->have_tenant || t->closing)
            continue;
        if (index >= r->u.admin_status.first && hdr.n_tenants < max)
            ks_admin_describe(s, t, &list[hdr.n_tenants++]);
        index++;
    }
    ks_isolated_describe(s, list, max, r->u.admin_status.first, &index, &hdr.n_tenants);
    hdr.total_tenants = index;
    snprintf(hdr.policy, sizeof(hdr.policy), "%s",
             ksched_policy_name(ksched_get_policy(s->cfg.sched)) ?: "?");
    snprintf(hdr.backend, sizeof(hdr.backend), "%s", s->cfg.backend_name ? s->cfg.backend_name : "?");
    hdr.uptime_ns = ks_now_ns() - s->start_ns;
    ksched_stats st;
    ksched_get_stats(s->cfg.sched, &st);
    hdr.decisions = st.decisions;
    hdr.coschedules = st.coschedules;
    hdr.solo = st.solo;
    hdr.slices = st.slices;
    hdr.kernels_completed = st.kernels_completed;
    struct iovec parts[2] = {{&hdr, sizeof(hdr)}, {list, hdr.n_tenants * sizeof(*list)}};
    ks_reply_parts(c, KERNELET_OP_ADMIN_STATUS, id, KERNELET_ST_OK, parts, hdr.n_tenants ? 2 : 1);
    free(list);
}

/* Applies q to tenant t's policy: 0 or a CUDA error code (nothing applied then). */
static uint32_t apply_set(struct ks_server *s, struct ks_conn *t,
                          const struct kernelet_admin_set *q)
{
    ksched_tenant_policy pol;
    ksched_err err;
    int rc;

    if (ksched_tenant_get_policy(s->cfg.sched, t->tenant, &pol, &err) != 0)
        return KS_CUDA_INVALID_VALUE;
    if (q->fields & KERNELET_SET_WEIGHT)
        pol.weight = q->weight / 100.0;
    if (q->fields & KERNELET_SET_PRIORITY)
        pol.priority = (int)q->priority;
    if ((q->fields & KERNELET_SET_MEM_QUOTA) && s->cfg.max_mem_quota &&
        q->mem_quota > s->cfg.max_mem_quota)
        return KS_CUDA_INVALID_VALUE; /* more than the tenant's window holds: refused whole */
    if (q->fields & KERNELET_SET_MEM_QUOTA) /* 0: no quota of its own, the default */
        pol.mem_quota = q->mem_quota ? q->mem_quota : s->cfg.default_mem_quota;
    if (q->fields & KERNELET_SET_MAX_INFLIGHT)
        pol.max_inflight = q->max_inflight;
    if (q->fields & KERNELET_SET_SLICING)
        pol.slicing = (int)q->slicing;
    if (q->fields & KERNELET_SET_TIME_LIMIT) /* 0: no limit of its own, the default */
        pol.kernel_time_limit_ns = q->kernel_time_limit_ms
                                       ? (uint64_t)q->kernel_time_limit_ms * 1000000u
                                       : s->cfg.default_kernel_time_limit_ns;
    rc = ksched_tenant_set_policy(s->cfg.sched, t->tenant, &pol, &err);
    return rc ? ks_cuda_of(rc, err.msg) : KS_CUDA_SUCCESS;
}

void ks_admin_set(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    const struct kernelet_admin_set *q = &r->u.admin_set;
    struct ks_server *s = c->srv;
    struct ks_conn *t = conn_of_tenant(s, q->tenant);
    uint32_t code;

    if (t)
        code = apply_set(s, t, q);
    else if (s->cfg.max_mem_quota && (q->fields & KERNELET_SET_MEM_QUOTA) &&
             q->mem_quota > s->cfg.max_mem_quota)
        code = KS_CUDA_INVALID_VALUE; /* the worker has the same windows: checked here */
    else
        code = ks_isolated_forward(s, q) == 0 ? KS_CUDA_SUCCESS : KS_CUDA_INVALID_VALUE;
    ks_reply_cuda(c, KERNELET_OP_ADMIN_SET, id, code, 0);
}

void ks_admin_apply_forwarded(struct ks_server *s, const struct kernelet_admin_set *q)
{
    /* a worker serves one tenant: the setting is its, whatever id the daemon knew it by */
    for (struct ks_conn *t = s->conns; t; t = t->next) {
        if (!t->have_tenant || t->closing)
            continue;
        uint32_t code = apply_set(s, t, q);
        if (code != KS_CUDA_SUCCESS)
            fprintf(stderr, "kerneletd: tenant '%s': a setting from the daemon was refused "
                    "(CUDA error %u)\n", t->name, code);
    }
}
