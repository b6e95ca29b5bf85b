/* Session requests: HELLO (a tenant, or an administration connection), information and
 * statistics, device properties (shared-memory regions: server_region.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server_internal.h"

static void fill_info(struct ks_conn *c, struct kernelet_info *info)
{
    const struct ks_server *s = c->srv;
    ksched_tenant_policy pol;

    memset(info, 0, sizeof(*info));
    ksched_tenant_policy_default(&pol);
    if (c->have_tenant)
        ksched_tenant_get_policy(s->cfg.sched, c->tenant, &pol, NULL);
    info->proto_version = KERNELET_PROTO_VERSION;
    info->flags = KERNELET_INFO_BACKEND | (pol.slicing ? KERNELET_INFO_SLICING : 0);
    info->gpu_mem_bytes = (pol.mem_quota && pol.mem_quota < s->device.total_mem)
                              ? pol.mem_quota : s->device.total_mem;
    info->gpu_sm_count = (uint32_t)s->device.attrs[16 /* MULTIPROCESSOR_COUNT */];
    info->gpu_cc_major = (uint16_t)s->device.attrs[75 /* COMPUTE_CAPABILITY_MAJOR */];
    info->gpu_cc_minor = (uint16_t)s->device.attrs[76 /* COMPUTE_CAPABILITY_MINOR */];
    info->weight = (uint32_t)lround(pol.weight * 100.0);
    info->priority = pol.priority < 0 ? 0 : (uint32_t)pol.priority;
    info->max_inflight = pol.max_inflight;
    memcpy(info->gpu_name, s->device.name, sizeof(info->gpu_name) - 1); /* truncated */
}

void ks_session_hello(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct {
        struct kernelet_info info;
        struct kernelet_session session;
    } answer;
    ksched_err err;

    if (c->hello) {
        ks_reply(c, KERNELET_OP_HELLO, id, KERNELET_ST_BAD_REQUEST, NULL, 0);
        return;
    }
    if ((r->u.hello.hello.proto_version >> 16) != KERNELET_PROTO_MAJOR) {
        ks_reply(c, KERNELET_OP_HELLO, id, KERNELET_ST_VERSION, NULL, 0);
        return;
    }
    if (r->u.hello.has_tenant && r->u.hello.tenant.name[0])
        snprintf(c->name, sizeof(c->name), "%s", r->u.hello.tenant.name);
    else
        snprintf(c->name, sizeof(c->name), "pid%u", (unsigned)c->cred.pid);
    if (r->u.hello.has_tenant && (r->u.hello.tenant.flags & KERNELET_HELLO_ADMIN)) {
        if (!ks_privileged(c->srv, c->cred.uid)) {
            ks_reply(c, KERNELET_OP_HELLO, id, KERNELET_ST_BAD_REQUEST, NULL, 0);
            ks_conn_close(c);
            return;
        }
        c->admin = true;
    } else if (ks_isolate_offer(c, id, r)) {
        return; /* handed to a worker of its own, or refused */
    } else {
        ksched_tenant_policy pol;
        ksched_tenant_policy_default(&pol);
        pol.mem_quota = c->srv->cfg.default_mem_quota; /* until the operator sets one */
        pol.kernel_time_limit_ns = c->srv->cfg.default_kernel_time_limit_ns; /* likewise */
        if (ksched_tenant_add(c->srv->cfg.sched, c->name, &pol, &c->tenant, &err) != 0) {
            ks_reply(c, KERNELET_OP_HELLO, id, KERNELET_ST_UNAVAILABLE, NULL, 0);
            ks_conn_close(c);
            return;
        }
        c->have_tenant = true;
        c->vm = r->u.hello.has_tenant && (r->u.hello.tenant.flags & KERNELET_HELLO_VM);
    }
    c->hello = true;
    fill_info(c, &answer.info);
    memset(&answer.session, 0, sizeof(answer.session));
    answer.session.tenant_id = c->srv->cfg.tenant_id_base + c->tenant;
    answer.session.mem_quota = answer.info.gpu_mem_bytes == c->srv->device.total_mem
                                   ? 0 : answer.info.gpu_mem_bytes;
    answer.session.device_count = 1;
    answer.session.max_regions = c->srv->cfg.max_regions;
    answer.session.max_message = KERNELET_MAX_REQUEST;
    ks_reply(c, KERNELET_OP_HELLO, id, KERNELET_ST_OK, &answer, sizeof(answer));
}

void ks_session_info(struct ks_conn *c, uint16_t op, uint64_t id)
{
    if (op == KERNELET_OP_GET_INFO) {
        struct kernelet_info info;
        fill_info(c, &info);
        ks_reply(c, op, id, KERNELET_ST_OK, &info, sizeof(info));
        return;
    }
    struct kernelet_stats st = {.requests = c->requests, .errors = c->errors,
                                .kernels_launched = c->launches, .bytes_copied = c->bytes_copied,
                                .mem_in_use = c->mem_in_use};
    ksched_tenant_stats ts;
    if (c->have_tenant && ksched_tenant_get_stats(c->srv->cfg.sched, c->tenant, &ts, NULL) == 0) {
        st.gpu_time_ns = ts.gpu_time_ns;
        st.bytes_copied = ts.bytes_copied;
        st.mem_in_use = ts.mem_in_use;
    }
    ks_reply(c, op, id, KERNELET_ST_OK, &st, sizeof(st));
}

void ks_session_device(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    if (r->u.device_get.ordinal != 0) {
        ks_reply_cuda(c, KERNELET_OP_DEVICE_GET, id, KS_CUDA_INVALID_DEVICE, 0);
        return;
    }
    struct kernelet_device d = c->srv->device;

    /* whether this tenant's kernels may read its pinned host memory (server_region.c) */
    d.attrs[19 /* CAN_MAP_HOST_MEMORY */] = ks_region_can_map_device(c);
    d.attrs[102 /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */] = ks_vmm_allowed(c);
    ks_reply(c, KERNELET_OP_DEVICE_GET, id, KERNELET_ST_OK, &d, sizeof(d));
}
