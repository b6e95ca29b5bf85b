/* Session requests: HELLO (a tenant, or an administration connection), information and
 * statistics, shared-memory regions, device properties. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
    ks_reply(c, KERNELET_OP_DEVICE_GET, id, KERNELET_ST_OK, &c->srv->device, sizeof(c->srv->device));
}

/* ---- regions ------------------------------------------------------------------------------ */

struct ks_region *ks_region_find(struct ks_conn *c, uint32_t id)
{
    for (unsigned i = 0; i < KERNELET_MAX_REGIONS; i++)
        if (c->regions[i].used && !c->regions[i].detached && c->regions[i].id == id)
            return &c->regions[i];
    return NULL;
}

static void region_unmap(struct ks_region *r)
{
    r->conn->n_regions--;
    r->conn->region_bytes -= r->size;
    r->conn->srv->mapped_bytes -= r->size;
    munmap(r->base, r->size);
    memset(r, 0, sizeof(*r));
}

void ks_region_put(struct ks_region *r)
{
    if (--r->refs == 0 && r->detached)
        region_unmap(r);
}

void ks_regions_release(struct ks_conn *c)
{
    for (unsigned i = 0; i < KERNELET_MAX_REGIONS; i++)
        if (c->regions[i].used)
            region_unmap(&c->regions[i]);
}

/* A descriptor the daemon may map: a memfd sealed against shrinking (so the mapping can
 * never fault) holding at least size bytes. */
static bool region_acceptable(int fd, uint64_t size)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);

    return seals >= 0 && (seals & F_SEAL_SHRINK) && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
           (uint64_t)st.st_size >= size;
}

/* Whether c may map size more bytes: within the operator's count and bytes for one
 * connection and the daemon's total, so that sparse memfds cannot use up its address
 * space (issue 15). */
static bool region_room(const struct ks_conn *c, uint64_t size)
{
    const struct ks_server *s = c->srv;

    return c->n_regions < s->cfg.max_regions && size <= s->cfg.max_region_bytes - c->region_bytes &&
           size <= KSERVER_MAX_MAPPED - s->mapped_bytes;
}

void ks_session_shm_attach(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    int fd = ks_conn_take_fd(c);
    uint64_t size = r->u.shm_attach.size;
    struct ks_region *slot = NULL;
    void *base;

    if (fd < 0) {
        ks_reply(c, KERNELET_OP_SHM_ATTACH, id, KERNELET_ST_BAD_REQUEST, NULL, 0);
        return;
    }
    for (unsigned i = 0; i < KERNELET_MAX_REGIONS && !slot; i++)
        if (!c->regions[i].used)
            slot = &c->regions[i];
    if (!slot || !region_room(c, size) || !region_acceptable(fd, size)) {
        close(fd);
        ks_reply_cuda(c, KERNELET_OP_SHM_ATTACH, id,
                      slot && region_room(c, size) ? KS_CUDA_INVALID_VALUE
                                                   : KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        ks_reply_cuda(c, KERNELET_OP_SHM_ATTACH, id, KS_CUDA_OUT_OF_MEMORY, 0);
        return;
    }
    *slot = (struct ks_region){.conn = c, .used = true, .id = c->next_region++, .base = base,
                               .size = size};
    c->n_regions++;
    c->region_bytes += size;
    c->srv->mapped_bytes += size;
    if (c->next_region == KERNELET_REGION_INLINE)
        c->next_region = 1;
    struct kernelet_shm_region ans = {.region = slot->id};
    ks_reply(c, KERNELET_OP_SHM_ATTACH, id, KERNELET_ST_OK, &ans, sizeof(ans));
}

void ks_session_shm_detach(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_region *reg = ks_region_find(c, r->u.shm_region.region);

    if (!reg) {
        ks_reply_cuda(c, KERNELET_OP_SHM_DETACH, id, KS_CUDA_INVALID_VALUE, 0);
        return;
    }
    reg->detached = true;
    if (reg->refs == 0)
        region_unmap(reg);
    ks_reply(c, KERNELET_OP_SHM_DETACH, id, KERNELET_ST_OK, NULL, 0);
}
