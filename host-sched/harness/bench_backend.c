/* The executor backends the harness runs on. Only the sim is built into the harness so
 * far; a backend that computes real data (cuda, emu) plugs in here: it creates its
 * kbackend, gives the module text (the bench PTX with the slicer's variants) and
 * sets computes_data so that the harness verifies every output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "sim.h"

struct bench_backend {
    const char *name;
    ksim *sim;
};

static int sim_new(const bench_options *o, const ksched_profile_cache *profiles,
                   bench_backend *b, kbackend *be, char *msg, size_t len)
{
    ksim_config c;
    ksim_config_default(&c);
    const kmodel_gpu *g = kmodel_gpu_lookup(o->gpu);
    if (!g) {
        snprintf(msg, len, "unknown GPU '%s'", o->gpu);
        return -1;
    }
    c.gpu = *g;
    c.model.latency.a0 = o->a0;
    c.launch_latency_ns = o->launch_latency_ns;
    c.stream_gap_ns = o->stream_gap_ns;
    c.back_memory = 0;
    ksched_err e;
    if (ksim_new(&b->sim, &c, &e) || ksim_add_kernels(b->sim, profiles, &e)) {
        snprintf(msg, len, "sim: %s", e.msg);
        return -1;
    }
    ksim_backend(b->sim, be);
    return 0;
}

int bench_backend_new(const bench_options *o, const ksched_profile_cache *profiles,
                      bench_backend **out, kbackend *be, char *msg, size_t len)
{
    if (strcmp(o->backend, "sim")) {
        snprintf(msg, len, "backend '%s' is not built into kernelet-bench (available: sim)",
                 o->backend);
        return -1;
    }
    bench_backend *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(msg, len, "out of memory");
        return -1;
    }
    b->name = "sim";
    if (sim_new(o, profiles, b, be, msg, len)) {
        bench_backend_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

void bench_backend_free(bench_backend *b)
{
    if (!b)
        return;
    ksim_free(b->sim);
    free(b);
}

int bench_module_text(const bench_backend *b, const bench_kernel *k, char **text, size_t *len,
                      char *msg, size_t msglen)
{
    (void)b;
    /* the sim reads only the entry names */
    size_t cap = 2 * strlen(k->entry) + 64;
    char *t = malloc(cap);
    if (!t) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    int n = snprintf(t, cap, ".visible .entry %s()\n.visible .entry %s%s()\n", k->entry,
                     k->entry, KBACKEND_SLICE_SUFFIX);
    *text = t;
    *len = (size_t)n;
    return 0;
}

int bench_backend_blocks_once(const bench_backend *b, uint64_t tag, uint64_t total)
{
    if (!b->sim)
        return -1;
    ksim_coverage_result c;
    if (ksim_coverage(b->sim, tag, total, &c, NULL))
        return -1;
    return !c.missing && !c.duplicated && !c.outside;
}
