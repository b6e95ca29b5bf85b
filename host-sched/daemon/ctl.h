/* kernelet-ctl's parts: the administration connection, snapshots of the daemon's state,
 * and the ways of showing them (table, JSON, Prometheus text). */
#ifndef KERNELET_CTL_H
#define KERNELET_CTL_H

#include <stdint.h>
#include <stdio.h>

#include "kernelet/protocol.h"

/* ---- ctl_conn.c: the administration connection ---- */

/* Connects and says HELLO as an administrator; the socket, or -1 (said on stderr unless
 * quiet). */
int ctl_connect(const char *path, int quiet);
/* Sends one request and reads its answer; the status, or -1 on a transport failure. The
 * payload is copied to `out` (at most `cap` bytes); its length in *len. */
int ctl_call(int fd, uint16_t op, const void *payload, size_t n, void *out, size_t cap,
             size_t *len);

/* ---- ctl_snapshot.c: the daemon's state at one moment ---- */

struct ctl_snapshot {
    struct kernelet_admin_status daemon;
    struct kernelet_tenant_status *tenants;
    uint32_t n_tenants;
    uint64_t taken_ns;            /* CLOCK_MONOTONIC */
};

/* Reads every tenant (all pages of ADMIN_STATUS); 0, or -1 (said on stderr). */
int ctl_snapshot_take(int fd, struct ctl_snapshot *s);
void ctl_snapshot_free(struct ctl_snapshot *s);
/* Percent of one GPU's time that tenant `t` of `now` used since `before`, from its GPU-time
 * counter; negative when unknown (no earlier sample of that tenant). */
double ctl_tenant_util(const struct ctl_snapshot *before, const struct ctl_snapshot *now,
                       const struct kernelet_tenant_status *t);

/* ---- ctl_show.c: for people (table) and programs (JSON) ---- */

void ctl_show_table(FILE *f, const struct ctl_snapshot *before, const struct ctl_snapshot *now);
void ctl_show_json(FILE *f, const struct ctl_snapshot *before, const struct ctl_snapshot *now);

/* ---- ctl_metrics.c: Prometheus text exposition ---- */

/* Writes every metric of `s`; s == NULL writes only kernelet_up 0 (daemon unreachable). */
void ctl_metrics_write(FILE *f, const struct ctl_snapshot *s);
/* Serves GET /metrics on host:port until killed, asking the daemon at `socket` anew for
 * each scrape; returns only on a setup error (non-zero). */
int ctl_metrics_serve(const char *listen, const char *socket);

#endif
