/*
 * virtio-kernelet's link to kerneletd (see kernelet-link.h): connecting and reconnecting,
 * relaying requests and answers, bulk data, the policy and the statistics.
 *
 * The handshake (HELLO, attaching staging and RAM, the policy) is a job for the worker
 * thread (kernelet-worker.c); once it is done the tenant socket is non-blocking and served
 * by main-loop handlers. Nothing here waits for the daemon.
 */
#include "qemu/osdep.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "exec/memory.h"
#include "exec/ramblock.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/iov.h"
#include "qemu/log.h"
#include "qemu/cutils.h"
#include "qemu/main-loop.h"
#include "qemu/sockets.h"
#include "qemu/memfd.h"
#include "kdev_relay.h"
#include "virtio-kernelet.h"

#define HDR_SIZE ((size_t)sizeof(struct kernelet_req_hdr))
#define STAGING_BYTES ((size_t)KERNELET_LINK_SLOTS * KERNELET_MAX_BULK)

static void link_try_connect(void *opaque);
static void link_readable(void *opaque);
static void link_writable(void *opaque);

/* ---- connection up and down ---- */

static void link_job_done(VirtIOKernelet *s, KerneletJob *j);

static KerneletJob *new_job(KerneletLink *l, KerneletJobKind kind)
{
    KerneletJob *j = g_new0(KerneletJob, 1);

    j->kind = kind;
    j->generation = l->generation;
    j->tenant_id = l->tenant_id;
    j->fd = -1;
    j->status = -1;
    QTAILQ_INIT(&j->waiters);
    return j;
}

/* Notes each shared, file-backed RAM block (memory-backend-memfd,share=on) for the
 * worker to attach. */
static int note_ram_block(RAMBlock *rb, void *opaque)
{
    KerneletJob *j = opaque;
    int mem_fd = qemu_ram_get_fd(rb);

    if (mem_fd < 0 || !qemu_ram_is_shared(rb) || j->n_ram >= KERNELET_LINK_MAX_RAM) {
        return 0;
    }
    j->ram_fd[j->n_ram] = mem_fd;
    j->ram_size[j->n_ram] = rb->fd_offset + qemu_ram_get_used_length(rb);
    j->ram[j->n_ram++] = (KerneletRam){ qemu_ram_get_host_addr(rb),
                                        qemu_ram_get_used_length(rb), rb->fd_offset, 0 };
    return 0;
}

/* Hands a connection attempt to the worker; the queues wait until it is done. */
static void link_try_connect(void *opaque)
{
    VirtIOKernelet *s = opaque;
    KerneletLink *l = &s->link;
    KerneletJob *j;

    if (l->connecting || l->fd >= 0) {
        return;
    }
    j = new_job(l, KERNELET_JOB_CONNECT);
    j->policy = s->state.policy;
    qemu_ram_foreach_block(note_ram_block, j);
    l->connecting = true;
    l->policy_pending = false;
    kernelet_worker_submit(&l->worker, j);
}

static void adopt_gpu(VirtIOKernelet *s, const struct kernelet_info *info)
{
    pstrcpy(s->state.gpu.name, sizeof(s->state.gpu.name), info->gpu_name);
    s->state.gpu.mem_bytes = info->gpu_mem_bytes;
    s->state.gpu.sm_count = info->gpu_sm_count;
    s->state.gpu.cc_major = info->gpu_cc_major;
    s->state.gpu.cc_minor = info->gpu_cc_minor;
}

static void set_backend(VirtIOKernelet *s, bool up)
{
    s->state.backend = up;
    virtio_notify_config(VIRTIO_DEVICE(s));
}

/* Takes what the handshake learnt: the daemon's GPU, the session, the regions. */
static void adopt_session(VirtIOKernelet *s, const KerneletJob *j)
{
    KerneletLink *l = &s->link;
    const struct kernelet_info *info = (const struct kernelet_info *)j->hello;
    struct kernelet_session sess;

    memcpy(&sess, j->hello + sizeof(struct kernelet_info), sizeof(sess));
    l->tenant_id = sess.tenant_id;
    adopt_gpu(s, info);
    /* An older daemon refuses a context in the header and has no CONTEXT_CLOSE. */
    l->contexts = (info->proto_version & 0xffff) >= KERNELET_PROTO_MINOR_CONTEXTS;
    l->staging_region = j->staging_region;
    l->n_ram = 0;
    for (unsigned i = 0; i < j->n_ram; i++) {
        if (j->ram[i].region) {
            l->ram[l->n_ram++] = j->ram[i];
        }
    }
    if (!l->said_mode) {
        l->said_mode = true;
        if (l->n_ram) {
            info_report("virtio-kernelet: zero-copy: %u guest RAM block(s) shared with "
                        "kerneletd", l->n_ram);
        } else {
            info_report("virtio-kernelet: guest RAM is not a shared memfd backend "
                        "(-object memory-backend-memfd,share=on): bulk data is copied "
                        "through the device's staging region");
        }
    }
}

/* A connection attempt failed: try again later. */
static void connect_failed(VirtIOKernelet *s, const KerneletJob *j)
{
    KerneletLink *l = &s->link;

    /* A daemon that accepts but does not answer (stopped, overloaded) costs the worker a
     * handshake timeout per try: back off to at most 32 periods. */
    l->retry_periods = !j->reached ? 1 : MIN(MAX(l->retry_periods, 1) * 2, 32);
    if (!l->warned_down) {
        l->warned_down = true;
        warn_report("virtio-kernelet: kerneletd is not reachable at %s; retrying every "
                    "%d ms", l->path, KERNELET_LINK_RETRY_MS);
    }
    timer_mod(l->retry, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                        (int64_t)KERNELET_LINK_RETRY_MS * l->retry_periods);
}

static void connect_done(VirtIOKernelet *s, KerneletJob *j)
{
    KerneletLink *l = &s->link;

    if (j->generation != l->generation) {
        if (j->fd >= 0) {
            close(j->fd);   /* reset meanwhile: a newer attempt is out */
        }
        return;
    }
    l->connecting = false;
    kernelet_resume_queues(s);
    if (j->fd < 0) {
        connect_failed(s, j);
        return;
    }
    adopt_session(s, j);
    l->retry_periods = 1;
    qemu_socket_set_nonblock(j->fd);
    l->fd = j->fd;
    l->in_len = 0;
    l->warned_down = false;
    l->admin = j->admin;
    if (!j->admin) {
        warn_report("virtio-kernelet: kerneletd refused an administration connection: "
                    "the VM's policy and statistics cannot reach it (run QEMU as root or "
                    "as the daemon's user)");
    } else if (j->status != KERNELET_ST_OK) {
        warn_report("virtio-kernelet: kerneletd refused the policy (status %d)", j->status);
    }
    if (l->policy_pending) {
        kernelet_link_push_policy(s, &s->state.policy);
    }
    qemu_set_fd_handler(l->fd, link_readable, NULL, s);
    set_backend(s, true);
}

/* Answers a chain with a status and no payload. */
static void answer_status(VirtIOKernelet *s, VirtQueue *vq, VirtQueueElement *elem,
                          const struct kdev_req *r, uint32_t status)
{
    struct kdev_chain c = kernelet_chain(elem);

    s->state.stats.errors++;
    virtqueue_push(vq, elem, kdev_put_response(&s->state, &c, r, status, 0, HDR_SIZE));
    g_free(elem);
    virtio_notify(VIRTIO_DEVICE(s), vq);
}

static void pending_free(KerneletLink *l, KerneletPending *p)
{
    QTAILQ_REMOVE(&l->pending, p, next);
    if (p->slot >= 0) {
        l->slots_busy &= ~(1u << p->slot);
    }
    g_free(p);
}

/* Closes the tenant connection and forgets unsent output; what the worker was asked for
 * the old connection is dropped when it comes back (the administration connection is
 * replaced at the next connection). */
static void close_link(KerneletLink *l)
{
    l->generation++;
    l->connecting = false;
    if (l->fd >= 0) {
        qemu_set_fd_handler(l->fd, NULL, NULL, NULL);
        close(l->fd);
        l->fd = -1;
    }
    if (l->out) {
        g_byte_array_set_size(l->out, 0);
    }
    l->throttled = false;
}

/* The daemon went away: every pending chain fails UNAVAILABLE, the guest sees the backend
 * flag drop, and the timer tries again. */
static void link_down(VirtIOKernelet *s, const char *why)
{
    KerneletLink *l = &s->link;
    KerneletPending *p;
    bool was_throttled = l->throttled;

    close_link(l);
    while ((p = QTAILQ_FIRST(&l->pending)) != NULL) {
        VirtQueue *vq = p->vq;
        VirtQueueElement *elem = p->elem;
        struct kdev_req r = p->req;

        pending_free(l, p);
        answer_status(s, vq, elem, &r, KERNELET_ST_UNAVAILABLE);
    }
    l->n_ram = 0;
    if (!l->warned_down) {
        l->warned_down = true;
        warn_report("virtio-kernelet: lost kerneletd (%s); retrying every %d ms", why,
                    KERNELET_LINK_RETRY_MS);
    }
    set_backend(s, false);
    timer_mod(l->retry, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + KERNELET_LINK_RETRY_MS);
    if (was_throttled) {
        kernelet_resume_queues(s);
    }
}

/* ---- answers ---- */

static void complete(VirtIOKernelet *s, KerneletPending *p, uint32_t status,
                     const uint8_t *payload, uint32_t len)
{
    KerneletLink *l = &s->link;
    struct kdev_chain c = kernelet_chain(p->elem);
    size_t cap = MIN(p->req.resp_bytes, (size_t)KERNELET_MAX_RESPONSE) - HDR_SIZE;
    size_t used, d2h = p->req.x.d2h_bytes;
    VirtQueue *vq = p->vq;
    VirtQueueElement *elem = p->elem;
    struct kdev_req r = p->req;

    if (len > cap) {
        status = KERNELET_ST_TOO_SMALL;
        len = 0;
    }
    if (status == KERNELET_ST_QUOTA && l->quota_hits++ == 0) {
        warn_report("virtio-kernelet: tenant '%s' reached its memory quota", l->name);
    }
    if (status != KERNELET_ST_OK) {
        s->state.stats.errors++;
    }
    iov_from_buf(elem->in_sg, elem->in_num, HDR_SIZE, payload, len);
    used = HDR_SIZE + len;
    if (status == KERNELET_ST_OK && p->bulk && d2h) {
        if (p->slot >= 0) {
            iov_from_buf(elem->in_sg, elem->in_num, r.resp_bytes,
                         l->staging + (size_t)p->slot * KERNELET_MAX_BULK + r.x.h2d_bytes, d2h);
        }
        used = r.resp_bytes + d2h;
    }
    pending_free(l, p);
    virtqueue_push(vq, elem, kdev_put_response(&s->state, &c, &r, status, len, used));
    g_free(elem);
    virtio_notify(VIRTIO_DEVICE(s), vq);
    if (l->throttled && !kernelet_link_throttled(s)) {
        l->throttled = false;
        kernelet_resume_queues(s);
    }
}

static void dispatch_answers(VirtIOKernelet *s)
{
    KerneletLink *l = &s->link;
    size_t off = 0;

    while (l->in_len - off >= HDR_SIZE) {
        struct kernelet_req_hdr h;
        KerneletPending *p;

        if (kproto_hdr_get(l->in + off, false, &h, NULL, 0) != KPROTO_OK) {
            link_down(s, "malformed answer");
            return;
        }
        if (l->in_len - off < HDR_SIZE + h.length) {
            break;
        }
        QTAILQ_FOREACH(p, &l->pending, next) {
            if (p->wire_id == h.request_id) {
                complete(s, p, h.status, l->in + off + HDR_SIZE, h.length);
                break;
            }
        }
        off += HDR_SIZE + h.length;
    }
    memmove(l->in, l->in + off, l->in_len - off);
    l->in_len -= off;
}

static void link_readable(void *opaque)
{
    VirtIOKernelet *s = opaque;
    KerneletLink *l = &s->link;

    for (;;) {
        ssize_t n = recv(l->fd, l->in + l->in_len, KERNELET_MAX_REQUEST - l->in_len,
                         MSG_DONTWAIT);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        }
        if (n <= 0) {
            link_down(s, n == 0 ? "connection closed" : strerror(errno));
            return;
        }
        l->in_len += n;
        dispatch_answers(s);
        if (l->fd < 0) {
            return;
        }
    }
}

static void flush_out(VirtIOKernelet *s)
{
    KerneletLink *l = &s->link;

    while (l->out->len) {
        ssize_t n = send(l->fd, l->out->data, l->out->len, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        if (n <= 0) {
            link_down(s, strerror(errno));
            return;
        }
        g_byte_array_remove_range(l->out, 0, n);
    }
    qemu_set_fd_handler(l->fd, link_readable, l->out->len ? link_writable : NULL, s);
    if (l->throttled && !kernelet_link_throttled(s)) {
        l->throttled = false;
        kernelet_resume_queues(s);
    }
}

static void link_writable(void *opaque)
{
    flush_out(opaque);
}

/* ---- forwarding ---- */

typedef struct {
    KerneletLink *l;
    VirtQueueElement *elem;
    const struct kdev_req *r;
    int slot;                  /* staging: the slot; -1: zero-copy */
} BulkMap;

/* The host range of `len` bytes at `off` of a scatter list, if it is contiguous. */
static uint8_t *iov_range(const struct iovec *iov, unsigned n, size_t off, uint64_t len)
{
    uint8_t *start = NULL, *end = NULL;

    for (unsigned i = 0; i < n && len; i++) {
        if (!start) {
            if (off >= iov[i].iov_len) {
                off -= iov[i].iov_len;
                continue;
            }
            start = (uint8_t *)iov[i].iov_base + off;
            end = (uint8_t *)iov[i].iov_base + iov[i].iov_len;
        } else if (iov[i].iov_base == end) {
            end += iov[i].iov_len;
        } else {
            break;
        }
        if ((uint64_t)(end - start) >= len) {
            return start;
        }
    }
    return NULL;
}

static int map_bulk(void *opaque, bool d2h, uint64_t off, uint64_t len, uint32_t *region,
                    uint64_t *offset)
{
    BulkMap *m = opaque;
    const struct kdev_req *r = m->r;
    uint8_t *host;

    if (m->slot >= 0) {
        *region = m->l->staging_region;
        *offset = (uint64_t)m->slot * KERNELET_MAX_BULK + (d2h ? r->x.h2d_bytes : 0) + off;
        return 0;
    }
    host = d2h ? iov_range(m->elem->in_sg, m->elem->in_num, r->resp_bytes + off, len)
               : iov_range(m->elem->out_sg, m->elem->out_num, r->bulk_in + off, len);
    for (unsigned i = 0; host && i < m->l->n_ram; i++) {
        const KerneletRam *ram = &m->l->ram[i];

        if (host >= ram->host && len <= ram->len && host - ram->host <= ram->len - len) {
            *region = ram->region;
            *offset = ram->fd_offset + (uint64_t)(host - ram->host);
            return 0;
        }
    }
    return len == 0 ? (*region = m->l->staging_region, *offset = 0, 0) : -1;
}

static int free_slot(KerneletLink *l)
{
    for (int i = 0; i < KERNELET_LINK_SLOTS; i++) {
        if (!(l->slots_busy & (1u << i))) {
            return i;
        }
    }
    return -1;
}

bool kernelet_link_throttled(VirtIOKernelet *s)
{
    KerneletLink *l = &s->link;

    return l->path && (l->connecting || (l->fd >= 0 &&
           (l->out->len > KERNELET_LINK_OUT_MAX || free_slot(l) < 0)));
}

/* Rewrites the payload's bulk references: zero-copy when every range lies in shared RAM,
 * else through a staging slot (*slot set). Returns a kernelet_status. */
static uint32_t prepare(VirtIOKernelet *s, VirtQueueElement *elem, struct kdev_req *r,
                        int *slot, bool *bulk)
{
    KerneletLink *l = &s->link;
    g_autofree uint8_t *copy = g_memdup2(r->payload, r->length);
    BulkMap m = { l, elem, r, -1 };
    char why[160];
    int rc = KDEV_RELAY_NOMAP;

    *slot = -1;
    if (l->n_ram) {
        rc = kdev_relay_rewrite(r->opcode, copy, r->length, r->x.h2d_bytes, r->x.d2h_bytes,
                                map_bulk, &m, bulk, why, sizeof(why));
    }
    if (rc == KDEV_RELAY_NOMAP) {
        m.slot = free_slot(l);
        if (m.slot < 0) {
            return KERNELET_ST_BUSY; /* cannot happen: the queue pauses first */
        }
        rc = kdev_relay_rewrite(r->opcode, r->payload, r->length, r->x.h2d_bytes,
                                r->x.d2h_bytes, map_bulk, &m, bulk, why, sizeof(why));
        if (rc == KDEV_RELAY_OK && *bulk) {
            *slot = m.slot;
        }
    } else if (rc == KDEV_RELAY_OK && r->length) {
        memcpy(r->payload, copy, r->length);
    }
    if (rc != KDEV_RELAY_OK) {
        qemu_log_mask(LOG_GUEST_ERROR, "virtio-kernelet: request %#x refused: %s\n",
                      r->opcode, why);
        return KERNELET_ST_BAD_REQUEST;
    }
    if (!*bulk && (r->x.h2d_bytes || r->x.d2h_bytes)) {
        return KERNELET_ST_BAD_REQUEST; /* bulk data that no record uses */
    }
    return KERNELET_ST_OK;
}

static void send_request(VirtIOKernelet *s, KerneletPending *p, const uint8_t *payload)
{
    KerneletLink *l = &s->link;
    struct kernelet_req_hdr h = {
        .opcode = p->req.opcode, .length = p->req.length, .request_id = p->wire_id,
        /* An older daemon refuses a context in the header. */
        .context = l->contexts ? p->req.x.context : 0,
    };

    g_byte_array_append(l->out, (const uint8_t *)&h, HDR_SIZE);
    g_byte_array_append(l->out, payload, p->req.length);
    flush_out(s);
}

/* ---- policy and statistics, through the worker ---- */

static void submit_stats(VirtIOKernelet *s)
{
    KerneletLink *l = &s->link;
    KerneletJob *j = new_job(l, KERNELET_JOB_STATS);
    KerneletWaiting *w;

    while ((w = QTAILQ_FIRST(&l->stats_waiting)) != NULL) {
        QTAILQ_REMOVE(&l->stats_waiting, w, next);
        QTAILQ_INSERT_TAIL(&j->waiters, w, next);
    }
    l->stats_job = j;
    kernelet_worker_submit(&l->worker, j);
}

/* GET_STATS waits for a statistics job asked for after it arrived. */
static void wait_for_stats(VirtIOKernelet *s, VirtQueue *vq, VirtQueueElement *elem)
{
    KerneletLink *l = &s->link;
    KerneletWaiting *w = g_new0(KerneletWaiting, 1);

    w->vq = vq;
    w->elem = elem;
    QTAILQ_INSERT_TAIL(&l->stats_waiting, w, next);
    if (!l->stats_job) {
        submit_stats(s);
    }
}

/* Drops waiting chains unanswered (reset, unplug). */
static void drop_waiting(KerneletWaitList *list)
{
    KerneletWaiting *w;

    while ((w = QTAILQ_FIRST(list)) != NULL) {
        QTAILQ_REMOVE(list, w, next);
        virtqueue_detach_element(w->vq, w->elem, 0);
        g_free(w->elem);
        g_free(w);
    }
}

static void stats_done(VirtIOKernelet *s, KerneletJob *j)
{
    KerneletLink *l = &s->link;
    KerneletWaiting *w;

    if (l->stats_job == j) {
        l->stats_job = NULL;
    }
    if (j->ok && j->generation == l->generation) {
        s->state.stats.kernels_launched = j->row.launches;
        s->state.stats.gpu_time_ns = j->row.gpu_time_ns;
        s->state.stats.bytes_copied = j->row.bytes_copied;
        s->state.stats.mem_in_use = j->row.mem_in_use;
    }
    while ((w = QTAILQ_FIRST(&j->waiters)) != NULL) {
        QTAILQ_REMOVE(&j->waiters, w, next);
        kernelet_serve_chain(s, w->vq, w->elem);
        g_free(w);
    }
    if (!l->stats_job && !QTAILQ_EMPTY(&l->stats_waiting)) {
        submit_stats(s);
    }
}

void kernelet_link_request_stats(VirtIOKernelet *s)
{
    KerneletLink *l = &s->link;

    if (l->path && l->fd >= 0 && l->admin && !l->stats_job) {
        submit_stats(s);
    }
}

void kernelet_link_push_policy(VirtIOKernelet *s, const struct kdev_policy *pol)
{
    KerneletLink *l = &s->link;
    KerneletJob *j;

    if (!l->path) {
        return;
    }
    if (l->connecting) {
        l->policy_pending = true;   /* the attempt out may carry an older one */
        return;
    }
    if (l->fd < 0 || !l->admin) {
        return; /* sent when the link connects (refused: said once then) */
    }
    j = new_job(l, KERNELET_JOB_POLICY);
    j->policy = *pol;
    kernelet_worker_submit(&l->worker, j);
}

static void link_job_done(VirtIOKernelet *s, KerneletJob *j)
{
    switch (j->kind) {
    case KERNELET_JOB_CONNECT:
        connect_done(s, j);
        break;
    case KERNELET_JOB_POLICY:
        if (j->generation == s->link.generation && j->status != KERNELET_ST_OK) {
            warn_report("virtio-kernelet: kerneletd refused the policy (status %d); it "
                        "stays in the device and is sent again at the next connection",
                        j->status);
        }
        break;
    case KERNELET_JOB_STATS:
        stats_done(s, j);
        break;
    }
    g_free(j);
}

bool kernelet_link_forward(VirtIOKernelet *s, VirtQueue *vq, VirtQueueElement *elem,
                           struct kdev_req *req, uint32_t status, bool *paused)
{
    KerneletLink *l = &s->link;
    struct kdev_chain c = kernelet_chain(elem);
    struct kdev_req r;
    KerneletPending *p;
    int slot = -1;
    bool bulk = false;

    *paused = false;
    if (!l->path || c.in_len < HDR_SIZE || s->state.fault == KDEV_FAULT_BROKEN) {
        return false; /* the device answers (or, for x-fault=broken, breaks) itself */
    }
    if (status == KERNELET_ST_OK && kdev_relay_local(req->opcode, l->fd >= 0 && l->contexts)) {
        if (req->opcode == KERNELET_OP_GET_STATS && l->fd >= 0 && l->admin) {
            /* the device answers with the daemon's counters, once the worker has them */
            free(req->payload);
            req->payload = NULL;
            wait_for_stats(s, vq, elem);
            return true;
        }
        return false;
    }
    r = *req;               /* the request is the link's from here on */
    req->payload = NULL;
    s->state.stats.requests++;
    if (status == KERNELET_ST_OK) {
        unsigned ring = vq == s->launch_vq ? KERNELET_VQ_LAUNCH : KERNELET_VQ_REQUEST;

        if (!kdev_opcode_allowed(r.opcode, ring)) {
            status = KERNELET_ST_BAD_OPCODE;
        } else if (l->fd < 0) {
            status = KERNELET_ST_UNAVAILABLE;
        } else {
            status = prepare(s, elem, &r, &slot, &bulk);
        }
    }
    if (status != KERNELET_ST_OK) {
        free(r.payload);
        answer_status(s, vq, elem, &r, status);
        return true;
    }
    if (bulk) {
        *(slot >= 0 ? &l->bulk_staged : &l->bulk_zero_copy) += 1;
    }
    if (slot >= 0) {
        iov_to_buf(elem->out_sg, elem->out_num, r.bulk_in,
                   l->staging + (size_t)slot * KERNELET_MAX_BULK, r.x.h2d_bytes);
        l->slots_busy |= 1u << slot;
    }
    p = g_new0(KerneletPending, 1);
    p->wire_id = ++l->next_id;
    p->vq = vq;
    p->elem = elem;
    p->req = r;
    p->req.payload = NULL;
    p->slot = slot;
    p->bulk = bulk;
    QTAILQ_INSERT_TAIL(&l->pending, p, next);
    send_request(s, p, r.payload);
    free(r.payload);
    if (kernelet_link_throttled(s)) {
        l->throttled = true;
        *paused = true;
    }
    return true;
}

/* ---- lifecycle ---- */

bool kernelet_link_start(VirtIOKernelet *s, Error **errp)
{
    KerneletLink *l = &s->link;

    l->fd = l->staging_fd = -1;
    QTAILQ_INIT(&l->pending);
    QTAILQ_INIT(&l->stats_waiting);
    if (!l->path) {
        return true;
    }
    l->out = g_byte_array_new();
    l->in = g_malloc(KERNELET_MAX_REQUEST);
    l->staging_fd = qemu_memfd_create("virtio-kernelet-staging", STAGING_BYTES, false, 0,
                                      F_SEAL_SHRINK | F_SEAL_GROW, errp);
    if (l->staging_fd < 0) {
        return false;
    }
    l->staging = mmap(NULL, STAGING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                      l->staging_fd, 0);
    if (l->staging == MAP_FAILED) {
        l->staging = NULL;
        error_setg_errno(errp, errno, "virtio-kernelet: cannot map the staging region");
        return false;
    }
    l->retry = timer_new_ms(QEMU_CLOCK_REALTIME, link_try_connect, s);
    l->worker.path = l->path;
    l->worker.name = l->name;
    l->worker.staging_fd = l->staging_fd;
    kernelet_worker_start(&l->worker, s, link_job_done);
    link_try_connect(s);
    return true;
}

/* Drops every pending chain unanswered (reset, unplug). */
static void drop_pending(KerneletLink *l)
{
    KerneletPending *p;

    while ((p = QTAILQ_FIRST(&l->pending)) != NULL) {
        virtqueue_detach_element(p->vq, p->elem, 0);
        g_free(p->elem);
        pending_free(l, p);
    }
}


void kernelet_link_reset(VirtIOKernelet *s)
{
    KerneletLink *l = &s->link;

    if (!l->path) {
        return;
    }
    drop_pending(l);
    drop_waiting(&l->stats_waiting);
    if (l->stats_job) {
        drop_waiting(&l->stats_job->waiters);
    }
    if (l->fd >= 0 || l->connecting) {
        close_link(l);
        link_try_connect(s);
    }
}

void kernelet_link_stop(VirtIOKernelet *s)
{
    KerneletLink *l = &s->link;

    if (!l->path) {
        return;
    }
    drop_pending(l);
    drop_waiting(&l->stats_waiting);
    if (l->stats_job) {
        drop_waiting(&l->stats_job->waiters);
        l->stats_job = NULL;
    }
    close_link(l);
    kernelet_worker_stop(&l->worker);
    if (l->retry) {
        timer_free(l->retry);
        l->retry = NULL;
    }
    if (l->staging) {
        munmap(l->staging, STAGING_BYTES);
    }
    if (l->staging_fd >= 0) {
        close(l->staging_fd);
    }
    g_free(l->in);
    if (l->out) {
        g_byte_array_free(l->out, true);
    }
}
