/* The sim backend: configuration, kernel truth, device, profile and trial ops, and the
 * executor ops table (modules are in sim_module.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sim_internal.h"

void ksim_config_default(ksim_config *c)
{
    if (!c)
        return;
    memset(c, 0, sizeof(*c));
    c->gpu = *kmodel_gpu_lookup("H100");
    kmodel_options_default(&c->model);
    c->launch_latency_ns = 5000;
    c->stream_gap_ns = 1000;
    c->h2d_gbs = 25;
    c->d2h_gbs = 25;
    c->copy_latency_ns = 2000;
    c->lanes = 32;
    c->mem_bytes = 80ull << 30;
    c->back_memory = 1;
    c->track_coverage = 1;
    c->window_bytes = KBACKEND_WINDOW_DEFAULT;
}

static int config_check(const ksim_config *c, ksched_err *err)
{
    char msg[200];
    if (kmodel_gpu_validate(&c->gpu, msg, sizeof(msg)))
        return ksched_fail(err, KSCHED_EINVAL, "sim GPU: %s", msg);
    if (!(c->h2d_gbs > 0) || !(c->d2h_gbs > 0) || !isfinite(c->h2d_gbs) ||
        !isfinite(c->d2h_gbs))
        return ksched_fail(err, KSCHED_EINVAL, "copy bandwidths must be > 0");
    if (!c->lanes || c->lanes > 1024)
        return ksched_fail(err, KSCHED_EINVAL, "lanes must be in [1, 1024]");
    if (!(c->profile_error >= 0 && c->profile_error < 1))
        return ksched_fail(err, KSCHED_EINVAL, "profile_error must be in [0, 1)");
    if (c->launch_latency_ns > 1000000000ull || c->stream_gap_ns > 1000000000ull ||
        c->copy_latency_ns > 1000000000ull)
        return ksched_fail(err, KSCHED_EINVAL, "latencies above 1 s");
    return 0;
}

int ksim_new(ksim **out, const ksim_config *cfg, ksched_err *err)
{
    if (!out)
        return ksched_fail(err, KSCHED_EINVAL, "NULL argument");
    *out = NULL;
    ksim_config def;
    if (!cfg) {
        ksim_config_default(&def);
        cfg = &def;
    }
    int rc = config_check(cfg, err);
    if (rc)
        return rc;
    ksim *s = calloc(1, sizeof(*s));
    if (!s)
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    s->cfg = *cfg;
    krange_table_init(&s->allocs, sizeof(sim_alloc));
    s->lanes = calloc(cfg->lanes, sizeof(*s->lanes));
    s->active = calloc(cfg->lanes, sizeof(*s->active));
    char msg[256] = "";
    kbackend_error we = {0};
    if (kbackend_windows_new(SIM_WINDOW_SPAN_BASE, SIM_WINDOW_SPAN, cfg->window_bytes,
                             &s->windows, &we)) {
        ksim_free(s);
        return ksched_fail(err, we.code == KBACKEND_ENOMEM ? KSCHED_ENOMEM : KSCHED_EINVAL,
                           "sim: %s", we.msg);
    }
    if (!s->lanes || !s->active ||
        kmodel_ctx_new(&s->model, &s->cfg.gpu, &s->cfg.model, msg, sizeof(msg))) {
        ksim_free(s);
        return *msg ? ksched_fail(err, KSCHED_EINVAL, "sim model: %s", msg)
                    : ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    }
    s->cfg.gpu.name = kmodel_ctx_gpu(s->model)->name;
    *out = s;
    return 0;
}

static void free_queue(job *j)
{
    while (j) {
        job *n = j->next;
        sim_job_free(j);
        j = n;
    }
}

void ksim_free(ksim *s)
{
    if (!s)
        return;
    if (s->lanes)
        for (unsigned l = 0; l < s->cfg.lanes; l++)
            free_queue(s->lanes[l].head);
    for (unsigned e = 0; e < 3; e++)
        free_queue(s->engine_head[e]);
    free_queue(s->profiles_head);
    for (unsigned i = 0; i < s->n_kernels; i++)
        free(s->kernels[i].entry);
    free(s->kernels);
    free(s->variants);
    free(s->rates);
    free(s->lanes);
    free(s->active);
    sim_mem_release_all(s);
    kbackend_windows_free(s->windows);
    sim_coverage_free(s);
    kmodel_ctx_free(s->model);
    free(s);
}

int ksim_add_kernel(ksim *s, const char *entry, const kbackend_profile *p, ksched_err *err)
{
    if (!s)
        return ksched_fail(err, KSCHED_EINVAL, "NULL sim");
    int rc = ksched_entry_validate(entry, err);
    if (!rc)
        rc = ksched_profile_validate(p, err);
    if (rc)
        return rc;
    int i = sim_kernel_index(s, entry, strlen(entry));
    if (i >= 0) {
        s->kernels[i].p = *p;
        kbackend_error e;
        if (sim_kernel_refresh(s, (unsigned)i, &e))
            return ksched_fail(err, KSCHED_EINVAL, "%s: %s", entry, e.msg);
        return 0;
    }
    if (grow_array(&s->kernels, &s->cap_kernels, s->n_kernels + 1, sizeof(*s->kernels)))
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    char *name = strdup(entry);
    if (!name)
        return ksched_fail(err, KSCHED_ENOMEM, "out of memory");
    s->kernels[s->n_kernels++] = (sim_kernel){.entry = name, .p = *p};
    return 0;
}

int ksim_add_kernels(ksim *s, const ksched_profile_cache *c, ksched_err *err)
{
    const char *entry;
    const kbackend_profile *p;
    for (size_t i = 0; (p = ksched_profile_cache_at(c, i, &entry, NULL)); i++) {
        int rc = ksim_add_kernel(s, entry, p, err);
        if (rc)
            return rc;
    }
    return 0;
}

int sim_lost(kbackend_error *err)
{
    return kbackend_fail(err, KBACKEND_ELOST, "sim: device lost (ksim_lose)");
}

void ksim_lose(ksim *s)
{
    if (s)
        s->lost = 1;
}

int ksim_set_failing(ksim *s, const char *entry, int fail, ksched_err *err)
{
    int i = s && entry ? sim_kernel_index(s, entry, strlen(entry)) : -1;
    if (i < 0)
        return ksched_fail(err, KSCHED_ENOTFOUND, "sim has no kernel '%s'", entry ? entry : "");
    s->kernels[i].failing = fail != 0;
    return 0;
}

void ksim_get_stats(const ksim *s, ksim_stats *out)
{
    if (s && out)
        *out = s->stats;
}

uint64_t ksim_now(const ksim *s)
{
    return s ? (uint64_t)llround(s->now) : 0;
}

static uint64_t sim_now_ns(void *state)
{
    return ksim_now(state);
}

static int sim_device_info(void *state, kbackend_device_info *out, kbackend_error *err)
{
    ksim *s = state;
    if (!out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    const kmodel_gpu *g = kmodel_ctx_gpu(s->model);
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "sim %s", g->name);
    out->sms = g->sms;
    out->max_warps_per_sm = g->max_warps_per_sm;
    out->max_blocks_per_sm = g->max_blocks_per_sm;
    out->max_threads_per_block = g->max_warps_per_block * 32;
    out->regs_per_sm = g->regs_per_sm;
    out->max_regs_per_thread = g->max_regs_per_thread;
    out->smem_per_sm = g->smem_per_sm;
    out->max_smem_per_block = g->max_smem_per_block;
    out->clock_mhz = g->clock_mhz;
    out->a0 = s->cfg.model.latency.a0;
    out->mem_bandwidth_gbs = g->mem_bandwidth_gbs;
    out->total_mem = s->cfg.mem_bytes;
    out->lanes = s->cfg.lanes;
    out->slice_overhead_ns = s->cfg.stream_gap_ns;
    out->wave_launches = s->cfg.wave_launches != 0;
    out->virtual_time = 1;
    out->model_gpu = g;
    return 0;
}

/* ---- profile and trial ---- */

static double unit_noise(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;                       /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (double)(x >> 11) / (double)(1ull << 53) * 2 - 1;
}

static int sim_profile(void *state, const kbackend_slice *launch, kbackend_profile *out,
                       kbackend_done_fn done, void *user, kbackend_error *err)
{
    ksim *s = state;
    if (s->lost)
        return sim_lost(err);
    if (!launch || !launch->fn || !out || !done)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    const sim_kernel *k = &s->kernels[launch->fn->kernel];
    unsigned variant;
    int rc = sim_variant_of(s, launch->fn->kernel, launch->block, launch->smem, &variant, err);
    if (rc)
        return rc;
    job *j = sim_job_new(s, JOB_PROFILE, done, user);
    if (!j)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    j->variant = variant;
    /* a kernel that faults faults under the profiler too: nothing of it ran */
    j->status = k->failing ? KBACKEND_ELAUNCH : 0;
    *out = k->p;
    if (s->cfg.profile_error > 0) {
        uint64_t h = ksched_hash(k->entry, strlen(k->entry)) ^ s->cfg.seed;
        out->rm *= 1 + s->cfg.profile_error * unit_noise(h);
        out->rm = out->rm > 1 ? 1 : out->rm;
        out->insts_per_warp *= 1 + s->cfg.profile_error * unit_noise(h * 31 + 7);
    }
    uint64_t threads = (uint64_t)launch->block[0] * launch->block[1] * launch->block[2];
    out->warps_per_block = (unsigned)((threads + 31) / 32);
    out->blocks_done = 0;
    if (launch->sliced && s->cfg.profile_blocks) {
        uint64_t n = s->cfg.profile_blocks < launch->count ? s->cfg.profile_blocks
                                                            : launch->count;
        if (s->cfg.track_coverage && sim_coverage_add(s, launch->tag, launch->first, n)) {
            sim_job_free(j);
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
        }
        out->blocks_done = n;
    } else if (!launch->sliced && s->cfg.profile_whole) {
        if (s->cfg.track_coverage && sim_coverage_add(s, launch->tag, 0, launch->count)) {
            sim_job_free(j);
            return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
        }
        out->blocks_done = launch->count;
    }
    sim_queue_push(&s->profiles_head, &s->profiles_tail, j);
    s->in_flight++;
    return 0;
}

static int sim_trial(void *state, const kbackend_trial *t, kbackend_trial_result *out,
                     kbackend_error *err)
{
    ksim *s = state;
    if (s->lost)
        return sim_lost(err);
    if (!t || !out || !t->kernel[0].fn || !t->kernel[1].fn)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    unsigned v[2];
    for (int i = 0; i < 2; i++) {
        int rc = sim_variant_of(s, t->kernel[i].fn->kernel, t->kernel[i].block,
                                t->kernel[i].smem, &v[i], err);
        if (rc)
            return rc;
        if (!t->blocks_per_sm[i])
            return kbackend_fail(err, KBACKEND_EINVAL, "trial with 0 blocks per SM");
    }
    if (!sim_fits(s, 2, v, t->blocks_per_sm))
        return kbackend_fail(err, KBACKEND_EINVAL, "trial blocks do not fit one SM");
    double ipc[2];
    int rc = sim_rates(s, 2, v, t->blocks_per_sm, ipc, err);
    if (rc)
        return rc;
    double hz = s->cfg.gpu.clock_mhz * 1e6;
    for (int i = 0; i < 2; i++) {
        const sim_variant *var = &s->variants[v[i]];
        out->together_bps[i] = s->cfg.gpu.sms * ipc[i] / var->block_insts * hz;
        out->alone_bps[i] = s->cfg.gpu.sms * var->alone_ipc / var->block_insts * hz;
    }
    return 0;
}

static void sim_destroy(void *state)
{
    ksim_free(state);
}

static const kbackend_ops sim_ops = {
    .name = "sim",
    .destroy = sim_destroy,
    .device_info = sim_device_info,
    .now_ns = sim_now_ns,
    .mem_alloc = sim_mem_alloc,
    .mem_free = sim_mem_free,
    .copy_h2d = sim_copy_h2d,
    .copy_d2h = sim_copy_d2h,
    .copy_d2d = sim_copy_d2d,
    .memset_d8 = sim_memset_d8,
    .module_load_ptx = sim_module_load,
    .module_unload = sim_module_unload,
    .function_get = sim_function_get,
    .launch = sim_launch,
    .profile = sim_profile,
    .trial = sim_trial,
    .progress = sim_progress,
    .global_get = sim_global_get,
    .domain_window = sim_domain_window,
    .domain_release = sim_domain_release,
};

void ksim_backend(ksim *s, kbackend *out)
{
    if (out)
        *out = (kbackend){.ops = &sim_ops, .state = s};
}
