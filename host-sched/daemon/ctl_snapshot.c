/* The daemon's state at one moment: its ADMIN_STATUS header and every tenant, read page
 * by page (one answer holds as many tenants as fit in a message), and the utilisation
 * derived from two such moments: the daemon keeps only cumulative GPU time per tenant, so
 * a rate needs two samples, as `rate()` does in Prometheus. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int have_tenant(const struct ctl_snapshot *s, uint64_t id)
{
    for (uint32_t i = 0; i < s->n_tenants; i++)
        if (s->tenants[i].id == id)
            return 1;
    return 0;
}

/* Appends the tenants of one answer, skipping any that an earlier page already had (the
 * list may shift while it is paged). */
static int add_page(struct ctl_snapshot *s, const uint8_t *body, uint32_t n)
{
    struct kernelet_tenant_status *grown =
        realloc(s->tenants, (s->n_tenants + n + 1) * sizeof(*grown));

    if (!grown)
        return -1;
    s->tenants = grown;
    for (uint32_t i = 0; i < n; i++) {
        struct kernelet_tenant_status t;
        memcpy(&t, body + i * sizeof(t), sizeof(t));
        t.name[sizeof(t.name) - 1] = 0;
        if (!have_tenant(s, t.id))
            s->tenants[s->n_tenants++] = t;
    }
    return 0;
}

int ctl_snapshot_take(int fd, struct ctl_snapshot *s)
{
    static uint8_t body[KERNELET_MAX_PAYLOAD];
    struct kernelet_admin_status_req q = {0};
    size_t len;
    int st;

    memset(s, 0, sizeof(*s));
    s->taken_ns = now_ns();
    do {
        st = ctl_call(fd, KERNELET_OP_ADMIN_STATUS, &q, sizeof(q), body, sizeof(body), &len);
        if (st != KERNELET_ST_OK) {
            fprintf(stderr, "kernelet-ctl: status failed (%d)\n", st);
            ctl_snapshot_free(s);
            return -1;
        }
        memcpy(&s->daemon, body, sizeof(s->daemon));
        if (add_page(s, body + sizeof(s->daemon), s->daemon.n_tenants) != 0) {
            ctl_snapshot_free(s);
            return -1;
        }
        q.first += s->daemon.n_tenants;
    } while (s->daemon.n_tenants && q.first < s->daemon.total_tenants);
    s->daemon.n_tenants = s->n_tenants;
    return 0;
}

void ctl_snapshot_free(struct ctl_snapshot *s)
{
    free(s->tenants);
    s->tenants = NULL;
    s->n_tenants = 0;
}

double ctl_tenant_util(const struct ctl_snapshot *before, const struct ctl_snapshot *now,
                       const struct kernelet_tenant_status *t)
{
    if (!before || now->taken_ns <= before->taken_ns)
        return -1;
    for (uint32_t i = 0; i < before->n_tenants; i++) {
        const struct kernelet_tenant_status *b = &before->tenants[i];
        if (b->id != t->id)
            continue;
        if (t->gpu_time_ns < b->gpu_time_ns)
            return -1; /* a new tenant under a reused id */
        return 100.0 * (double)(t->gpu_time_ns - b->gpu_time_ns) /
               (double)(now->taken_ns - before->taken_ns);
    }
    return -1;
}
