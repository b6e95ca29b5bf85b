/* Where a launch's round trip goes, a diagnostic (KERNELET_LATENCY=1 in kerneletd's
 * environment; also the totals of module loads' stages): for each launch submitted while
 * its tenant had no other launch in flight,
 * the stages between the server's submission and the server seeing it done, and when
 * the tenant's connection closes, their medians in the log. The stages: submit to start
 * (the scheduler's decision and the backend's launch), start to end (the kernel, and the
 * backend noticing its end), end to callback (the scheduler taking the completion), and
 * callback to server (the server thread waking for it). */
#include <stdio.h>
#include <stdlib.h>

#include "server_internal.h"

#define KS_LATENCY_SAMPLES 4096

struct ks_latency {
    uint32_t stage[KS_LAT_STAGES][KS_LATENCY_SAMPLES]; /* ns, capped at 4 s */
    unsigned n;
    uint64_t load_ns[KS_LOAD_STAGES];   /* module loads: totals per stage */
    unsigned loads;
};

static const char *const load_names[KS_LOAD_STAGES] = {
    "copy", "unpack", "rewrite", "backend", "all",
};

static const char *const stage_names[KS_LAT_STAGES] = {
    "submit->start", "start->end", "end->callback", "callback->server",
};

bool ks_latency_wanted(void)
{
    static int state = -1;

    if (state < 0) {
        const char *v = getenv("KERNELET_LATENCY");
        state = v && *v && *v != '0';
    }
    return state;
}

static uint32_t span(uint64_t from, uint64_t to)
{
    uint64_t d = to > from ? to - from : 0;
    return d > 4000000000ull ? 4000000000u : (uint32_t)d;
}

static struct ks_latency *latency_of(struct ks_conn *c)
{
    if (!c->latency)
        c->latency = calloc(1, sizeof(*c->latency));
    return c->latency;
}

/* On the load's worker: its own totals, not the connection's (the loop uses those). */
void ks_latency_load(struct ks_load *ld, enum ks_load_stage stage, uint64_t since_ns)
{
    if (ks_latency_wanted())
        ld->ns[stage] += ks_now_ns() - since_ns;
}

/* Back on the loop, the load answered. */
void ks_latency_add_load(struct ks_conn *c, const struct ks_load *ld)
{
    struct ks_latency *l;

    if (!ks_latency_wanted() || !(l = latency_of(c)))
        return;
    for (int s = 0; s < KS_LOAD_STAGES; s++)
        l->load_ns[s] += ld->ns[s];
    l->loads++;
}

void ks_latency_note(struct ks_conn *c, const struct ks_op *kop, uint64_t server_ns)
{
    struct ks_latency *l;

    if (!kop->lone || !kop->launch || kop->status || !(l = latency_of(c)))
        return;
    unsigned i = l->n++ % KS_LATENCY_SAMPLES;
    l->stage[0][i] = span(kop->t.submit_ns, kop->t.start_ns);
    l->stage[1][i] = span(kop->t.start_ns, kop->t.end_ns);
    l->stage[2][i] = span(kop->t.end_ns, kop->t.callback_ns);
    l->stage[3][i] = span(kop->t.callback_ns, server_ns);
}

static int by_value(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* The lone launches' stage medians (the samples are sorted in place). */
static void report_launches(const struct ks_conn *c, struct ks_latency *l)
{
    unsigned n = l->n < KS_LATENCY_SAMPLES ? l->n : KS_LATENCY_SAMPLES;

    fprintf(stderr, "kerneletd: tenant %s (pid %u): %u lone launches, median us:",
            c->name[0] ? c->name : "?", (unsigned)c->cred.pid, l->n);
    for (int s = 0; s < KS_LAT_STAGES; s++) {
        qsort(l->stage[s], n, sizeof(uint32_t), by_value);
        fprintf(stderr, " %s %.1f", stage_names[s], l->stage[s][n / 2] / 1e3);
    }
    fputc('\n', stderr);
}

static void report_loads(const struct ks_conn *c, const struct ks_latency *l)
{
    fprintf(stderr, "kerneletd: tenant %s (pid %u): %u module loads, ms in all:",
            c->name[0] ? c->name : "?", (unsigned)c->cred.pid, l->loads);
    for (int s = 0; s < KS_LOAD_STAGES; s++)
        fprintf(stderr, " %s %.1f", load_names[s], l->load_ns[s] / 1e6);
    fputc('\n', stderr);
}

void ks_latency_report(struct ks_conn *c)
{
    struct ks_latency *l = c->latency;

    if (!l)
        return;
    if (l->loads)
        report_loads(c, l);
    if (l->n)
        report_launches(c, l);
    free(l);
    c->latency = NULL;
}
