/* A lost device: the cuda backend's context died (a fault that no rewrite contained), and
 * with it every tenant's memory, modules and queued work. The scheduler already fails what
 * was pending (ksched_lost). Here the server ends every tenant connection, as a lost device
 * ends each CUDA program's context (a VM's device reconnects as a new tenant), stops taking
 * connections so that no new tenant lands on the lost scheduler, and once the old tenants
 * are gone has the daemon build a fresh scheduler on a new backend
 * (kserver_config.recover); then it serves again. Administration connections stay. */
#include <stdio.h>

#include "server_internal.h"

#define RECOVER_POLL_MS 20

static unsigned tenants_left(const struct ks_server *s)
{
    unsigned n = 0;
    for (const struct ks_conn *c = s->conns; c; c = c->next)
        n += !c->admin;
    return n;
}

static void end_tenants(struct ks_server *s)
{
    for (struct ks_conn *c = s->conns; c; c = c->next)
        if (!c->admin && c->fd >= 0)
            ks_conn_close(c);
}

static void begin(struct ks_server *s, const char *why)
{
    fprintf(stderr, "kerneletd: the device was lost (%s): ending %u tenant connection(s), "
            "then serving on a fresh device context\n", why, tenants_left(s));
    s->recovering = true;
    if (ks_listen_watch(s, false))
        fprintf(stderr, "kerneletd: cannot pause new connections during recovery\n");
    end_tenants(s);
}

static void finish(struct ks_server *s)
{
    char err[256] = "";
    ksched *fresh = NULL;
    if (s->cfg.recover(s->cfg.recover_user, s->cfg.sched, &fresh, err, sizeof(err)) != 0) {
        fprintf(stderr, "kerneletd: cannot recover from the lost device here: %s\n", err);
        kserver_stop((struct kserver *)s);
        return;
    }
    s->cfg.sched = fresh;
    s->recovering = false;
    if (ks_listen_watch(s, true)) {
        fprintf(stderr, "kerneletd: cannot take connections again after recovery\n");
        kserver_stop((struct kserver *)s);
        return;
    }
    fprintf(stderr, "kerneletd: serving again on a fresh device context\n");
}

int ks_recover_step(struct ks_server *s)
{
    char why[200];
    if (!s->cfg.recover || s->stopping)
        return -1;
    if (!s->recovering) {
        if (!ksched_lost(s->cfg.sched, why, sizeof(why)))
            return -1;
        begin(s, why);
    }
    if (tenants_left(s) || s->calls_detached)
        return RECOVER_POLL_MS;     /* their last operations are still completing (or what
                                       they left, their regions' unpinning, on a worker) */
    finish(s);
    return -1;
}
