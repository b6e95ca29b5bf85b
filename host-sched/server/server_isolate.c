/* The isolation tier (issue 15, item 4): a tenant that asks for a GPU context of its own
 * (KERNELET_HELLO_ISOLATE), or that the operator's policy isolates, is handed at its HELLO
 * to a worker process that the daemon starts (kserver_config.isolate). The worker serves
 * the connection with a backend, and so an address space and context, of its own; the
 * server here keeps a row for it (status, connection limits) until the worker ends. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server_internal.h"

static void remember(struct ks_conn *c, pid_t worker, uint64_t id, int ctl_fd)
{
    struct ks_server *s = c->srv;
    struct ks_isolated *t = calloc(1, sizeof(*t));

    if (!t) {
        if (ctl_fd >= 0)
            close(ctl_fd);
        return; /* served all the same; only its row, its count and settings are missing */
    }
    snprintf(t->name, sizeof(t->name), "%s", c->name);
    t->cred = c->cred;
    t->worker = worker;
    t->id = id;
    t->ctl_fd = ctl_fd;
    t->vm = c->vm;
    pthread_mutex_lock(&s->iso_lock);
    t->next = s->isolated;
    s->isolated = t;
    pthread_mutex_unlock(&s->iso_lock);
}

static void refuse(struct ks_conn *c, uint64_t id, const char *why)
{
    fprintf(stderr, "kerneletd: tenant '%s' (pid %u): no context of its own: %s\n", c->name,
            (unsigned)c->cred.pid, why);
    ks_reply(c, KERNELET_OP_HELLO, id, KERNELET_ST_UNAVAILABLE, NULL, 0);
    ks_conn_close(c);
}

bool ks_isolate_offer(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct ks_server *s = c->srv;
    uint32_t flags = r->u.hello.has_tenant ? r->u.hello.tenant.flags : 0;
    struct kserver_handover h = {.fd = c->fd, .name = c->name, .hello_flags = flags,
                                 .pid = c->cred.pid, .uid = c->cred.uid, .input = c->in,
                                 .input_len = c->in_len};
    char err[160] = "";
    pid_t worker = 0;
    uint64_t tenant_id = UINT64_MAX;
    int rc, ctl_fd = -1;

    if (s->cfg.adopt)
        return false; /* a worker: its tenant is where it asked to be */
    if (!s->cfg.isolate) {
        if (flags & KERNELET_HELLO_ISOLATE)
            refuse(c, id, "this daemon has no isolation tier");
        return flags & KERNELET_HELLO_ISOLATE;
    }
    c->vm = flags & KERNELET_HELLO_VM;
    rc = s->cfg.isolate(s->cfg.isolate_user, &h, &worker, &tenant_id, &ctl_fd, err,
                        sizeof(err));
    if (rc == 0)
        return false;
    if (rc < 0) {
        refuse(c, id, err[0] ? err : strerror(-rc));
        return true;
    }
    /* The worker answers the HELLO and everything after it; this end only lets go. */
    remember(c, worker, tenant_id, ctl_fd);
    ks_conn_close(c);
    return true;
}

void kserver_isolated_ended(struct kserver *srv, pid_t worker)
{
    struct ks_server *s = (struct ks_server *)srv;

    pthread_mutex_lock(&s->iso_lock);
    for (struct ks_isolated **pt = &s->isolated; *pt; pt = &(*pt)->next)
        if ((*pt)->worker == worker) {
            struct ks_isolated *gone = *pt;
            *pt = gone->next;
            if (gone->ctl_fd >= 0)
                close(gone->ctl_fd);
            free(gone);
            break;
        }
    pthread_mutex_unlock(&s->iso_lock);
}

unsigned ks_isolated_count(struct ks_server *s, const uid_t *uid)
{
    unsigned n = 0;

    pthread_mutex_lock(&s->iso_lock);
    for (const struct ks_isolated *t = s->isolated; t; t = t->next)
        n += !uid || t->cred.uid == *uid;
    pthread_mutex_unlock(&s->iso_lock);
    return n;
}

/* Takes the rows waiting on every worker's socket (the iso lock held). */
static void take_rows_locked(struct ks_server *s)
{
    struct kernelet_tenant_status row;

    for (struct ks_isolated *t = s->isolated; t; t = t->next) {
        ssize_t n;
        while (t->ctl_fd >= 0 &&
               (n = recv(t->ctl_fd, &row, sizeof(row), MSG_DONTWAIT)) > 0)
            if (n == (ssize_t)sizeof(row)) {
                t->row = row;
                t->have_row = true;
            }
    }
}

void ks_isolated_describe(struct ks_server *s, struct kernelet_tenant_status *list, size_t max,
                          uint32_t first, uint32_t *index, uint32_t *n)
{
    pthread_mutex_lock(&s->iso_lock);
    take_rows_locked(s);
    for (const struct ks_isolated *t = s->isolated; t; t = t->next, ++*index) {
        if (*index < first || *n >= max)
            continue;
        struct kernelet_tenant_status *row = &list[(*n)++];
        /* its worker's figures when it has sent them; who it is, from what is known here */
        if (t->have_row)
            *row = t->row;
        else
            memset(row, 0, sizeof(*row));
        snprintf(row->name, sizeof(row->name), "%s", t->name);
        row->id = t->id;  /* its worker's, beyond this server's own ids */
        row->pid = (uint32_t)t->cred.pid;
        row->uid = (uint32_t)t->cred.uid;
        row->worker_pid = (uint32_t)t->worker;
        row->flags = (row->flags & (KERNELET_TENANT_SLICING | KERNELET_TENANT_STICKY)) |
                     KERNELET_TENANT_ISOLATED | (t->vm ? KERNELET_TENANT_VM : 0);
    }
    pthread_mutex_unlock(&s->iso_lock);
}

void ks_isolated_free(struct ks_server *s)
{
    while (s->isolated) {
        struct ks_isolated *t = s->isolated;
        s->isolated = t->next;
        if (t->ctl_fd >= 0)
            close(t->ctl_fd);
        free(t);
    }
}

int ks_isolated_forward(struct ks_server *s, const struct kernelet_admin_set *q)
{
    int rc = -1;

    pthread_mutex_lock(&s->iso_lock);
    for (const struct ks_isolated *t = s->isolated; t; t = t->next)
        if (t->id == q->tenant && t->ctl_fd >= 0) {
            /* never waits: a worker that does not read its settings misses this one */
            rc = send(t->ctl_fd, q, sizeof(*q), MSG_DONTWAIT | MSG_NOSIGNAL) ==
                         (ssize_t)sizeof(*q) ? 0 : -1;
            break;
        }
    pthread_mutex_unlock(&s->iso_lock);
    return rc;
}

void ks_isolated_read_settings(struct ks_server *s)
{
    struct kernelet_admin_set q;
    ssize_t n;

    while ((n = recv(s->cfg.adopt_ctl_fd, &q, sizeof(q), MSG_DONTWAIT)) > 0)
        if (n == (ssize_t)sizeof(q)) /* from the daemon, which validated it */
            ks_admin_apply_forwarded(s, &q);
}

int ks_isolated_push_status(struct ks_server *s)
{
    uint64_t now = ks_now_ns();

    if (!s->adopted || s->cfg.adopt_ctl_fd <= 0)
        return -1;
    if (now >= s->next_push_ns) {
        for (struct ks_conn *c = s->conns; c; c = c->next)
            if (c->have_tenant && !c->closing) {
                struct kernelet_tenant_status row;
                ks_admin_describe(s, c, &row);
                /* never waits: a daemon that is not reading misses one row */
                (void)!send(s->cfg.adopt_ctl_fd, &row, sizeof(row), MSG_DONTWAIT | MSG_NOSIGNAL);
            }
        s->next_push_ns = now + 1000000000ull;
    }
    return (int)((s->next_push_ns - now + 999999u) / 1000000u);
}

void ks_isolated_take_rows(struct ks_server *s)
{
    uint64_t now = ks_now_ns();

    /* once a second, as they are sent (a status request takes them at once) */
    if (now < s->next_take_ns)
        return;
    s->next_take_ns = now + 1000000000ull;
    pthread_mutex_lock(&s->iso_lock);
    take_rows_locked(s);
    pthread_mutex_unlock(&s->iso_lock);
}
