/* Connections: accepting, reading whole messages (and the file descriptors that travel
 * with SHM_ATTACH), queueing answers, closing, and freeing a connection once nothing it
 * submitted is still running. A header that cannot be trusted (reserved bits, a length
 * beyond the limit) ends the connection after an error answer: after it, message
 * boundaries are unknown. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server_internal.h"

void ks_conn_update_events(struct ks_conn *c)
{
    bool over = c->out_len - c->out_off > c->srv->cfg.max_output_bytes;
    bool want_in = !c->closing && !c->stalled && !c->call && !over;
    bool want_out = c->out_len > c->out_off;
    struct epoll_event ev = {.data.ptr = c};

    if (c->fd < 0 || (want_in == c->reading && want_out == c->writing))
        return;
    ev.events = (want_in ? EPOLLIN : 0) | (want_out ? EPOLLOUT : 0);
    if (epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0) {
        c->reading = want_in;
        c->writing = want_out;
    }
}

bool ks_privileged(const struct ks_server *s, uid_t uid)
{
    return uid == 0 || uid == s->cfg.admin_uid || uid == getuid();
}

/* Open connections of uid (closing ones whose work still drains do not count: their
 * sockets are gone). */
static unsigned open_of_user(const struct ks_server *s, uid_t uid)
{
    unsigned n = 0;

    for (const struct ks_conn *c = s->conns; c; c = c->next)
        n += c->fd >= 0 && c->cred.uid == uid;
    return n;
}

/* Whether a new connection from this peer may have a slot: the daemon's limit for all,
 * and each unprivileged user's share of it, so that one user's connections (idle or not)
 * cannot lock every other tenant out. Tenants handed to workers of their own keep their
 * slots (each worker holds a GPU context). */
static bool admissible(struct ks_server *s, const struct ucred *cred)
{
    if (s->n_conns + ks_isolated_count(s, NULL) >= s->cfg.max_connections)
        return false;
    return ks_privileged(s, cred->uid) ||
           open_of_user(s, cred->uid) + ks_isolated_count(s, &cred->uid) < s->cfg.max_per_user;
}

/* A new connection on fd, or NULL (fd closed) when it is refused or cannot be watched. */
static struct ks_conn *admit(struct ks_server *s, int fd)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    struct epoll_event ev = {.events = EPOLLIN};
    struct ks_conn *c;

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !admissible(s, &cred) ||
        !(c = calloc(1, sizeof(*c)))) {
        close(fd);
        return NULL;
    }
    ev.data.ptr = c;
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        close(fd);
        free(c);
        return NULL;
    }
    c->srv = s;
    c->fd = fd;
    c->cred = cred;
    c->hello_deadline_ns = ks_now_ns() + (uint64_t)s->cfg.hello_timeout_ms * 1000000u;
    return c;
}

static void add_conn(struct ks_server *s, struct ks_conn *c)
{
    c->reading = true;
    c->next_region = 1;
    c->next = s->conns;
    s->conns = c;
    s->n_conns++;
}

void ks_conn_accept(struct ks_server *s)
{
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct ks_conn *c;

        if (fd < 0)
            return;
        if ((c = admit(s, fd)))
            add_conn(s, c);
    }
}

int ks_conn_adopt(struct ks_server *s, char *err, size_t errlen)
{
    int fd = s->cfg.adopt_fd;
    struct ks_conn *c;

    if (s->cfg.adopt_len > sizeof(c->in) || fcntl(fd, F_SETFL, O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 || !(c = admit(s, fd))) {
        snprintf(err, errlen, "the connection handed over (fd %d) cannot be served", fd);
        return -EINVAL;
    }
    add_conn(s, c);
    s->adopted = true;
    memcpy(c->in, s->cfg.adopt_input, s->cfg.adopt_len);
    c->in_len = s->cfg.adopt_len;
    ks_conn_process(c);
    ks_conn_update_events(c);
    return 0;
}

int ks_conn_expire(struct ks_server *s)
{
    uint64_t now = ks_now_ns(), next = UINT64_MAX;

    for (struct ks_conn *c = s->conns; c; c = c->next) {
        if (c->fd < 0 || c->hello)
            continue;
        if (c->hello_deadline_ns <= now)
            ks_conn_close(c); /* reaped by the loop, like any closed connection */
        else if (c->hello_deadline_ns < next)
            next = c->hello_deadline_ns;
    }
    if (next == UINT64_MAX)
        return -1;
    /* Rounded up, so that the loop does not wake just before the deadline and spin. */
    return (int)((next - now + 999999u) / 1000000u);
}

/* ---- answers -------------------------------------------------------------------------- */

static bool out_reserve(struct ks_conn *c, size_t n)
{
    if (c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (c->out_cap - c->out_len >= n)
        return true;
    if (c->out_off) { /* compact */
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
        if (c->out_cap - c->out_len >= n)
            return true;
    }
    size_t cap = c->out_cap ? c->out_cap : 65536;
    while (cap - c->out_len < n)
        cap *= 2;
    uint8_t *p = realloc(c->out, cap);
    if (!p)
        return false;
    c->out = p;
    c->out_cap = cap;
    return true;
}

static void flush_out(struct ks_conn *c)
{
    while (c->fd >= 0 && c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                ks_conn_close_why(c, strerror(errno));
            break;
        }
        c->out_off += (size_t)w;
    }
    ks_conn_update_events(c);
}

/* kerneletd --log-errors: one line per error answer, so that an operator (or a developer
 * porting a framework) sees which request of a tenant failed and with what. */
static void log_error(const struct ks_conn *c, uint16_t opcode, uint32_t status,
                      const struct iovec *first)
{
    struct kernelet_cuda_error e = {0};
    const char *op = kproto_opcode_name(opcode);

    if (status == KERNELET_ST_CUDA && first && first->iov_len >= sizeof(e))
        memcpy(&e, first->iov_base, sizeof(e));
    fprintf(stderr, "kerneletd: tenant %s (pid %u, context %u): %s answered status %u "
            "(CUDA error %u, record %u)\n", c->name[0] ? c->name : "?", (unsigned)c->cred.pid,
            c->context, op ? op : "?", status, e.code, e.index);
}

void ks_reply_parts(struct ks_conn *c, uint16_t opcode, uint64_t id, uint32_t status,
                    const struct iovec *parts, int n)
{
    size_t len = 0;

    if (c->fd < 0)
        return; /* nobody to tell */
    for (int i = 0; i < n; i++)
        len += parts[i].iov_len;
    if (len > KERNELET_MAX_PAYLOAD || !out_reserve(c, KERNELET_HDR_SIZE + len)) {
        ks_conn_close_why(c, len > KERNELET_MAX_PAYLOAD ? "an answer too large to send"
                                                         : "out of memory for its answers");
        return;
    }
    kproto_hdr_put(c->out + c->out_len, opcode, (uint32_t)len, id, status);
    c->out_len += KERNELET_HDR_SIZE;
    for (int i = 0; i < n; i++) {
        memcpy(c->out + c->out_len, parts[i].iov_base, parts[i].iov_len);
        c->out_len += parts[i].iov_len;
    }
    if (status != KERNELET_ST_OK) {
        c->errors++;
        if (c->srv->cfg.log_errors)
            log_error(c, opcode, status, n ? &parts[0] : NULL);
    }
    flush_out(c);
}

void ks_reply(struct ks_conn *c, uint16_t opcode, uint64_t id, uint32_t status,
              const void *payload, size_t len)
{
    struct iovec part = {(void *)payload, len};

    ks_reply_parts(c, opcode, id, status, &part, len ? 1 : 0);
}

void ks_reply_cuda(struct ks_conn *c, uint16_t opcode, uint64_t id, uint32_t code,
                   uint32_t index)
{
    struct kernelet_cuda_error e = {.code = code, .index = index};

    if (code == KS_CUDA_SUCCESS)
        ks_reply(c, opcode, id, KERNELET_ST_OK, NULL, 0);
    else
        ks_reply(c, opcode, id, KERNELET_ST_CUDA, &e, sizeof(e));
}

void ks_conn_writable(struct ks_conn *c)
{
    flush_out(c);
}

/* ---- reading ---------------------------------------------------------------------------- */

int ks_conn_take_fd(struct ks_conn *c)
{
    int fd;

    if (c->n_fds == 0)
        return -1;
    fd = c->fds[0];
    memmove(&c->fds[0], &c->fds[1], sizeof(c->fds[0]) * --c->n_fds);
    return fd;
}

/* Keeps the descriptors that arrived; more than KS_MAX_FDS waiting is a protocol
 * violation (nobody attaches that many regions without asking in between). */
static bool take_rights(struct ks_conn *c, struct msghdr *mh)
{
    bool ok = !(mh->msg_flags & MSG_CTRUNC);

    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (c->n_fds < KS_MAX_FDS)
                c->fds[c->n_fds++] = fd;
            else {
                close(fd);
                ok = false;
            }
        }
    }
    return ok;
}

void ks_conn_process(struct ks_conn *c)
{
    while (!c->closing && !c->stalled && !c->call && c->in_len >= KERNELET_HDR_SIZE) {
        struct kernelet_req_hdr h;
        char err[160];
        size_t len;

        if (kproto_hdr_get(c->in, true, &h, err, sizeof(err)) != 0) {
            ks_reply(c, h.opcode, h.request_id, KERNELET_ST_BAD_REQUEST, NULL, 0);
            ks_conn_close_why(c, err);
            return;
        }
        len = KERNELET_HDR_SIZE + h.length;
        if (c->in_len < len)
            return; /* the rest of the message is still on its way */
        ks_dispatch(c, len);
        if (c->stalled) {
            c->stalled_msg_len = len; /* the message stays until its batch resumes */
            return;
        }
        memmove(c->in, c->in + len, c->in_len - len);
        c->in_len -= len;
    }
}

void ks_conn_readable(struct ks_conn *c)
{
    while (c->fd >= 0 && !c->closing && !c->stalled && !c->call && c->in_len < sizeof(c->in)) {
        union {
            char buf[CMSG_SPACE(sizeof(int) * KS_MAX_FDS)];
            struct cmsghdr align;
        } ctl;
        struct iovec iov = {c->in + c->in_len, sizeof(c->in) - c->in_len};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                            .msg_controllen = sizeof(ctl.buf)};
        ssize_t r = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                ks_conn_close_why(c, strerror(errno));
            break;
        }
        if (!take_rights(c, &mh)) {
            ks_conn_close_why(c, "file descriptors it sent could not be taken");
            break;
        }
        if (r == 0) {
            ks_conn_close(c);
            break;
        }
        c->in_len += (size_t)r;
        ks_conn_process(c);
        if (c->out_len - c->out_off > c->srv->cfg.max_output_bytes)
            break; /* it does not read its answers: stop reading its requests */
    }
    ks_conn_update_events(c);
}

/* ---- closing ---------------------------------------------------------------------------- */

void ks_conn_close_why(struct ks_conn *c, const char *why)
{
    if (c->fd >= 0 && !c->closing)
        fprintf(stderr, "kerneletd: tenant %s (pid %u): connection closed: %s\n",
                c->name[0] ? c->name : "?", (unsigned)c->cred.pid, why);
    ks_conn_close(c);
}

void ks_conn_close(struct ks_conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(c->srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    if (c->closing)
        return;
    c->closing = true;
    ks_latency_report(c);
    while (c->n_fds)
        close(ks_conn_take_fd(c));
    ks_call_cancel(c);
    if (c->stalled) {
        struct ks_tracker *t = c->stalled_tracker;
        c->stalled = false;
        c->stalled_tracker = NULL;
        if (t)
            ks_tracker_done(t);
    }
    /* Queued work is cancelled (its completions still come); memory and modules go with
     * the tenant once its running work has drained. */
    if (c->have_tenant)
        ksched_tenant_remove(c->srv->cfg.sched, c->tenant, NULL);
}

static void free_object(struct ks_obj *o, void *arg)
{
    (void)arg;
    if (o->kind == KS_MODULE)
        ks_module_free(o);
}

bool ks_conn_reap(struct ks_conn *c)
{
    struct ks_server *s = c->srv;

    if (!c->closing || c->ops_inflight > 0 || c->call)
        return false;
    ks_regions_release(c);
    ks_handle_each(&c->handles, free_object, NULL);
    ks_handles_free(&c->handles);
    krange_table_clear(&c->allocs);
    free(c->ctx_errors);
    free(c->out);
    for (struct ks_conn **pc = &s->conns; *pc; pc = &(*pc)->next)
        if (*pc == c) {
            *pc = c->next;
            break;
        }
    s->n_conns--;
    free(c);
    return true;
}
