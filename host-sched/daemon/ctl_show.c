/* kernelet-ctl status for people (a table, like nvidia-smi's process list) and for
 * programs (one JSON object; field names in docs/OPERATORS.md). */
#include <inttypes.h>
#include <string.h>

#include "ctl.h"

static void human_bytes(uint64_t b, char *out, size_t n)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;

    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, n, u ? "%.1f%s" : "%.0f%s", v, unit[u]);
}

static const char *kind(const struct kernelet_tenant_status *t)
{
    return (t->flags & KERNELET_TENANT_VM) ? "vm" : "process";
}

static void show_header(FILE *f, const struct ctl_snapshot *s)
{
    const struct kernelet_admin_status *d = &s->daemon;

    fprintf(f, "kerneletd: backend %s, policy %s, up %.1f s, %u tenant(s)\n", d->backend,
            d->policy, (double)d->uptime_ns / 1e9, s->n_tenants);
    fprintf(f, "scheduler: %" PRIu64 " decisions, %" PRIu64 " co-scheduled pairs, %" PRIu64
            " solo, %" PRIu64 " slices, %" PRIu64 " kernels completed\n",
            d->decisions, d->coschedules, d->solo, d->slices, d->kernels_completed);
}

static void show_row(FILE *f, const struct kernelet_tenant_status *t, double util)
{
    char used[16], quota[16], mem[40], copied[16], pct[16];

    human_bytes(t->mem_in_use, used, sizeof(used));
    if (t->mem_quota)
        human_bytes(t->mem_quota, quota, sizeof(quota));
    else
        strcpy(quota, "-");
    snprintf(mem, sizeof(mem), "%s/%s", used, quota);
    human_bytes(t->bytes_copied, copied, sizeof(copied));
    if (util < 0)
        strcpy(pct, "-");
    else
        snprintf(pct, sizeof(pct), "%.1f%%", util);
    char id[24], flags[40];

    snprintf(id, sizeof(id), "%" PRIu64, t->id);
    if (t->flags & KERNELET_TENANT_ISOLATED)
        snprintf(flags, sizeof(flags), "isolated:%u ", t->worker_pid);
    else
        flags[0] = 0;
    fprintf(f, "%-6s %-16s %-7s %7u %6s %-19s %6u %8" PRIu64 " %8" PRIu64 " %7" PRIu64
            " %6" PRIu64 " %9.3f %9s %6u %4u %8u %s%s%s\n",
            id, t->name, kind(t), t->pid, pct, mem, t->queued, t->launches, t->completed,
            t->coscheduled, t->errors, (double)t->gpu_time_ns / 1e9, copied, t->weight,
            t->priority, t->max_inflight, flags,
            (t->flags & KERNELET_TENANT_SLICING) ? "slicing " : "",
            (t->flags & KERNELET_TENANT_STICKY) ? "FAULTED" : "");
}

void ctl_show_table(FILE *f, const struct ctl_snapshot *before, const struct ctl_snapshot *now)
{
    show_header(f, now);
    fprintf(f, "%-6s %-16s %-7s %7s %6s %-19s %6s %8s %8s %7s %6s %9s %9s %6s %4s %8s %s\n",
            "ID", "NAME", "KIND", "PID", "UTIL", "MEMORY/QUOTA", "QUEUED", "LAUNCHED", "DONE",
            "PAIRED", "ERRORS", "GPU-S", "COPIED", "WEIGHT", "PRIO", "INFLIGHT", "FLAGS");
    for (uint32_t i = 0; i < now->n_tenants; i++)
        show_row(f, &now->tenants[i], ctl_tenant_util(before, now, &now->tenants[i]));
}

/* A JSON string. Tenant names are printable ASCII by the protocol; anything else is
 * escaped all the same, so that the output stays valid JSON whatever the daemon says. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c > 0x7e)
            fprintf(f, "\\u%04x", c < 0x80 ? c : 0xfffd);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_daemon(FILE *f, const struct ctl_snapshot *s, double interval)
{
    const struct kernelet_admin_status *d = &s->daemon;

    fprintf(f, "{\"daemon\": {\"backend\": ");
    json_string(f, d->backend);
    fprintf(f, ", \"policy\": ");
    json_string(f, d->policy);
    fprintf(f, ", \"uptime_s\": %.3f, \"tenants\": %u}", (double)d->uptime_ns / 1e9, s->n_tenants);
    fprintf(f, ", \"scheduler\": {\"decisions\": %" PRIu64 ", \"coscheduled_pairs\": %" PRIu64
            ", \"solo\": %" PRIu64 ", \"slices\": %" PRIu64 ", \"kernels_completed\": %" PRIu64 "}",
            d->decisions, d->coschedules, d->solo, d->slices, d->kernels_completed);
    if (interval > 0)
        fprintf(f, ", \"sample_interval_s\": %.3f", interval);
    else
        fprintf(f, ", \"sample_interval_s\": null");
}

static void json_tenant(FILE *f, const struct kernelet_tenant_status *t, double util)
{
    if (t->flags & KERNELET_TENANT_ISOLATED)
        fprintf(f, "{\"id\": %" PRIu64 ", \"isolated\": true, \"worker_pid\": %u, "
                "\"name\": ", t->id, t->worker_pid);
    else
        fprintf(f, "{\"id\": %" PRIu64 ", \"isolated\": false, \"name\": ", t->id);
    json_string(f, t->name);
    fprintf(f, ", \"kind\": \"%s\", \"pid\": %u, \"uid\": %u, ", kind(t), t->pid, t->uid);
    if (util < 0)
        fprintf(f, "\"utilisation_percent\": null, ");
    else
        fprintf(f, "\"utilisation_percent\": %.2f, ", util);
    fprintf(f, "\"gpu_time_ns\": %" PRIu64 ", \"memory_used_bytes\": %" PRIu64
            ", \"memory_quota_bytes\": %" PRIu64 ", \"queued\": %u, \"launched\": %" PRIu64
            ", \"completed\": %" PRIu64 ", \"coscheduled_slices\": %" PRIu64
            ", \"requests\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"faulted\": %s"
            ", \"streams\": %u, \"bytes_copied\": %" PRIu64,
            t->gpu_time_ns, t->mem_in_use, t->mem_quota, t->queued, t->launches, t->completed,
            t->coscheduled, t->requests, t->errors,
            (t->flags & KERNELET_TENANT_STICKY) ? "true" : "false", t->streams, t->bytes_copied);
    fprintf(f, ", \"policy\": {\"weight\": %u, \"priority\": %u, \"max_inflight\": %u"
            ", \"slicing\": %s, \"kernel_time_limit_s\": %.3f}}",
            t->weight, t->priority, t->max_inflight,
            (t->flags & KERNELET_TENANT_SLICING) ? "true" : "false",
            t->kernel_time_limit_ms / 1000.0);
}

void ctl_show_json(FILE *f, const struct ctl_snapshot *before, const struct ctl_snapshot *now)
{
    double interval = before ? (double)(now->taken_ns - before->taken_ns) / 1e9 : 0;

    json_daemon(f, now, interval);
    fprintf(f, ", \"tenants\": [");
    for (uint32_t i = 0; i < now->n_tenants; i++) {
        if (i)
            fputs(", ", f);
        json_tenant(f, &now->tenants[i], ctl_tenant_util(before, now, &now->tenants[i]));
    }
    fprintf(f, "]}\n");
}
