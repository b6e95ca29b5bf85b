/* Per-tenant metrics in Prometheus' text exposition format (version 0.0.4), for the
 * monitoring operators already run: printed once (node_exporter's textfile collector) or
 * served on GET /metrics by ctl_http.c (a Prometheus scrape). Counters stay counters:
 * utilisation is rate(kernelet_tenant_gpu_seconds_total[1m]) on Prometheus' side. */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "ctl.h"

/* One per-tenant metric: a field of kernelet_tenant_status (u32 or u64), scaled, or one
 * of its flags as 0/1. */
struct tenant_metric {
    const char *name, *type, *help;
    size_t offset, size;
    double scale;
    uint32_t flag;
};

#define FIELD(f) offsetof(struct kernelet_tenant_status, f), \
                 sizeof(((struct kernelet_tenant_status *)0)->f)

static const struct tenant_metric tenant_metrics[] = {
    {"kernelet_tenant_gpu_seconds_total", "counter",
     "GPU time used by the tenant's kernels; rate() of it is the tenant's utilisation.",
     FIELD(gpu_time_ns), 1e-9, 0},
    {"kernelet_tenant_memory_used_bytes", "gauge", "Device memory the tenant holds.",
     FIELD(mem_in_use), 1, 0},
    {"kernelet_tenant_memory_quota_bytes", "gauge",
     "Device memory the tenant may hold; 0 means no quota.", FIELD(mem_quota), 1, 0},
    {"kernelet_tenant_queued_launches", "gauge", "Work items waiting in the tenant's queues.",
     FIELD(queued), 1, 0},
    {"kernelet_tenant_kernels_launched_total", "counter", "Kernels the tenant submitted.",
     FIELD(launches), 1, 0},
    {"kernelet_tenant_kernels_completed_total", "counter", "Kernels of the tenant completed.",
     FIELD(completed), 1, 0},
    {"kernelet_tenant_coscheduled_slices_total", "counter",
     "Slices of the tenant that started while another tenant's were running.",
     FIELD(coscheduled), 1, 0},
    {"kernelet_tenant_copied_bytes_total", "counter",
     "Bytes copied between host or guest memory and the device for the tenant.",
     FIELD(bytes_copied), 1, 0},
    {"kernelet_tenant_requests_total", "counter", "Protocol requests the tenant sent.",
     FIELD(requests), 1, 0},
    {"kernelet_tenant_errors_total", "counter", "Requests of the tenant answered with an error.",
     FIELD(errors), 1, 0},
    {"kernelet_tenant_faulted", "gauge",
     "1 when a sticky error (a GPU fault) ended one of the tenant's contexts.",
     FIELD(flags), 1, KERNELET_TENANT_STICKY},
    {"kernelet_tenant_streams", "gauge", "Streams the tenant has.", FIELD(streams), 1, 0},
    {"kernelet_tenant_weight", "gauge", "The tenant's scheduling weight (100 is the default).",
     FIELD(weight), 1, 0},
    {"kernelet_tenant_priority", "gauge", "The tenant's priority (0..7, higher runs first).",
     FIELD(priority), 1, 0},
    {"kernelet_tenant_max_inflight", "gauge", "Launches the tenant may have queued.",
     FIELD(max_inflight), 1, 0},
    {"kernelet_tenant_slicing", "gauge", "1 when the tenant's kernels may be sliced.",
     FIELD(flags), 1, KERNELET_TENANT_SLICING},
    {"kernelet_tenant_kernel_time_limit_seconds", "gauge",
     "How long one launch of the tenant may run before it is stopped; 0 means no limit.",
     FIELD(kernel_time_limit_ms), 1e-3, 0},
};

/* Writes a sample's value: counts as integers, exactly; nanoseconds as seconds with all
 * nine decimals. */
static void value(FILE *f, uint64_t v, double scale)
{
    if (scale == 1)
        fprintf(f, " %" PRIu64 "\n", v);
    else
        fprintf(f, " %.9f\n", (double)v * scale);
}

static void tenant_value(FILE *f, const struct kernelet_tenant_status *t,
                         const struct tenant_metric *m)
{
    const uint8_t *p = (const uint8_t *)t + m->offset;
    uint64_t v;

    if (m->size == sizeof(uint32_t)) {
        uint32_t v32;
        memcpy(&v32, p, sizeof(v32));
        v = v32;
    } else {
        memcpy(&v, p, sizeof(v));
    }
    if (m->flag)
        v = (v & m->flag) ? 1 : 0;
    value(f, v, m->scale);
}

/* A label value: backslash, double quote and line feed escaped as the format requires;
 * names are printable ASCII by the protocol, any other byte becomes '?' all the same. */
static void label_value(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\' || c == '"')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else
            fputc(c < 0x20 || c > 0x7e ? '?' : c, f);
    }
    fputc('"', f);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The tenant label: the daemon's tenant id, or "worker-PID" for an isolated tenant (its id
 * is the worker's, not listed). */
static void tenant_key(FILE *f, const struct kernelet_tenant_status *t)
{
    if (t->flags & KERNELET_TENANT_ISOLATED)
        fprintf(f, "tenant=\"worker-%u\"", t->worker_pid);
    else
        fprintf(f, "tenant=\"%" PRIu64 "\"", t->id);
}

static void tenant_labels(FILE *f, const struct kernelet_tenant_status *t)
{
    fputc('{', f);
    tenant_key(f, t);
    fprintf(f, ",name=");
    label_value(f, t->name);
    fprintf(f, ",kind=\"%s\"}", (t->flags & KERNELET_TENANT_VM) ? "vm" : "process");
}

static void daemon_metrics(FILE *f, const struct kernelet_admin_status *d, uint32_t tenants)
{
    const struct {
        const char *name, *type, *help;
        uint64_t value;
        double scale;
    } rows[] = {
        {"kernelet_uptime_seconds", "gauge", "Seconds since kerneletd started.", d->uptime_ns,
         1e-9},
        {"kernelet_tenants", "gauge", "Tenants connected (VMs and host processes).", tenants, 1},
        {"kernelet_scheduler_decisions_total", "counter", "Scheduling decisions made.",
         d->decisions, 1},
        {"kernelet_scheduler_coscheduled_pairs_total", "counter",
         "Decisions that ran slices of two kernels side by side.", d->coschedules, 1},
        {"kernelet_scheduler_solo_total", "counter", "Decisions that ran one kernel alone.",
         d->solo, 1},
        {"kernelet_scheduler_slices_total", "counter", "Launches (slices) handed to the GPU.",
         d->slices, 1},
        {"kernelet_kernels_completed_total", "counter", "Kernels completed, all tenants.",
         d->kernels_completed, 1},
    };

    family(f, "kernelet_info", "gauge", "The daemon's executor backend and policy (always 1).");
    fprintf(f, "kernelet_info{backend=");
    label_value(f, d->backend);
    fprintf(f, ",policy=");
    label_value(f, d->policy);
    fprintf(f, "} 1\n");
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        family(f, rows[i].name, rows[i].type, rows[i].help);
        fputs(rows[i].name, f);
        value(f, rows[i].value, rows[i].scale);
    }
}

static void tenant_info(FILE *f, const struct ctl_snapshot *s)
{
    family(f, "kernelet_tenant_info", "gauge",
           "A connected tenant with its process id and user id, and whether a worker with a GPU "
           "context of its own serves it (always 1).");
    for (uint32_t i = 0; i < s->n_tenants; i++) {
        const struct kernelet_tenant_status *t = &s->tenants[i];
        fprintf(f, "kernelet_tenant_info{");
        tenant_key(f, t);
        fprintf(f, ",name=");
        label_value(f, t->name);
        fprintf(f, ",kind=\"%s\",pid=\"%u\",uid=\"%u\",isolated=\"%s\"} 1\n",
                (t->flags & KERNELET_TENANT_VM) ? "vm" : "process", t->pid, t->uid,
                (t->flags & KERNELET_TENANT_ISOLATED) ? "true" : "false");
    }
}

void ctl_metrics_write(FILE *f, const struct ctl_snapshot *s)
{
    family(f, "kernelet_up", "gauge", "1 when kerneletd answered this scrape.");
    fprintf(f, "kernelet_up %d\n", s ? 1 : 0);
    if (!s)
        return;
    daemon_metrics(f, &s->daemon, s->n_tenants);
    tenant_info(f, s);
    for (size_t m = 0; m < sizeof(tenant_metrics) / sizeof(tenant_metrics[0]); m++) {
        const struct tenant_metric *tm = &tenant_metrics[m];
        family(f, tm->name, tm->type, tm->help);
        for (uint32_t i = 0; i < s->n_tenants; i++) {
            fputs(tm->name, f);
            tenant_labels(f, &s->tenants[i]);
            tenant_value(f, &s->tenants[i], tm);
        }
    }
}
