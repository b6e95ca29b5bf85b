/* The profile op: one wave of a kernel's sliced variant, or a whole unsliced launch, under
 * the CUPTI range profiler, with the device to itself (see cuda_backend.h and sizing.h). */
#include <stdio.h>
#include <string.h>

#include "backend_internal.h"
#include "sizing.h"

static double clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* Blocks of fn that fit one SM with this block shape and dynamic shared memory. */
static int blocks_per_sm(const struct kbackend_function *fn, const unsigned block[3],
                         unsigned smem, unsigned *out, kbackend_error *err)
{
    int n = 0;
    CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &n, fn->f, (int)(block[0] * block[1] * block[2]), smem);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail(err, r, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    if (n <= 0)
        return kbackend_fail(err, KBACKEND_EINVAL, "%s: no block fits an SM", fn->name);
    *out = (unsigned)n;
    return 0;
}

static int profiler_usable(kcuda *kc, kbackend_error *err)
{
    pthread_mutex_lock(&kc->lock);
    int rc = kc->prof_failed ? kbackend_fail(err, KBACKEND_EUNSUPPORTED, "profiler unavailable: %s",
                                          kc->prof_msg)
                             : kcuda_refuse_if_broken(kc, err);
    pthread_mutex_unlock(&kc->lock);
    if (!rc && !kc->gpu.sms)
        rc = kbackend_fail(err, KBACKEND_EUNSUPPORTED, "no model parameters for '%s'", kc->info.name);
    return rc;
}

int kcuda_profile(void *state, const kbackend_slice *launch, kbackend_profile *out,
                  kbackend_done_fn done, void *user, kbackend_error *err)
{
    kcuda *kc = state;
    if (!launch || !launch->fn || !out || !done || (launch->params_size && !launch->params))
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    if ((launch->sliced != 0) != (launch->fn->sliced != 0))
        return kbackend_fail(err, KBACKEND_EINVAL, "%s function profiled as %s",
                          launch->fn->sliced ? "sliced" : "unsliced",
                          launch->sliced ? "a slice" : "whole");
    if (launch->first != 0)
        return kbackend_fail(err, KBACKEND_EINVAL, "profile from block %llu: profiles start at 0",
                          (unsigned long long)launch->first);
    unsigned per_sm = 0;
    kcuda_job *job = NULL;
    int rc = profiler_usable(kc, err);
    if (!rc)
        rc = kcuda_bind(kc, err);
    if (!rc && launch->sliced)
        rc = blocks_per_sm(launch->fn, launch->block, launch->smem, &per_sm, err);
    if (!rc)
        rc = kcuda_job_new(kc, JOB_PROFILE, kc->cfg.lanes + QC_EXCLUSIVE, 0, done, user, &job,
                           err);
    if (rc)
        return rc;
    /* sliced: one wave from block 0; unsliced: the whole launch, once, as its own profile
     * (blocks_done = count: the scheduler does not run it again) */
    kbackend_slice sl = *launch;
    sl.lane = 0;
    sl.count = launch->sliced
                   ? kcuda_profile_blocks(kbackend_grid_blocks(launch->grid), kc->info.sms, per_sm)
                   : kbackend_grid_blocks(launch->grid);
    job->profile_out = out;
    rc = kcuda_prepare_launch(kc, &sl, job, err);
    if (!rc)
        rc = kcuda_submit(kc, job, err);
    if (rc)
        kcuda_job_free(kc, job);
    return rc;
}

/* Opens the profiler on first use; a failure is remembered (no counter access, say). */
static int open_profiler(kcuda *kc, char *msg, size_t msglen)
{
    if (kc->prof)
        return 0;
    if (kprof_open(kc->ctx, kc->cfg.device, &kc->prof_setup, &kc->prof, msg, msglen) == KPROF_OK)
        return 0;
    pthread_mutex_lock(&kc->lock);
    kc->prof_failed = 1;
    snprintf(kc->prof_msg, sizeof(kc->prof_msg), "%s", msg);
    pthread_mutex_unlock(&kc->lock);
    return KBACKEND_EUNSUPPORTED;
}

/* A failed profiled launch: a device fault loses the context like any other launch. */
static int launch_failure(kcuda *kc, const kcuda_job *job, char *msg, size_t msglen)
{
    CUresult r = cuCtxSynchronize();
    if (!kcuda_error_is_sticky(r))
        return KBACKEND_EDEVICE;
    kcuda_mark_broken(kc, r, job->fn->name);
    size_t n = strlen(msg);
    snprintf(msg + n, msglen - n, "; context lost");
    return KBACKEND_ELOST;
}

static void fill_profile(kcuda *kc, const kcuda_job *job, const kprof_counters *c,
                         const kprof_profile *p, kbackend_profile *out)
{
    const unsigned *b = job->shape.block;
    unsigned warps = (b[0] * b[1] * b[2] + 31) / 32;
    uint64_t blocks = kbackend_grid_blocks(job->shape.grid);  /* (count, 1, 1) when sliced */
    *out = (kbackend_profile){
        .pur = clamp01(p->pur),
        .mur = clamp01(p->mur),
        .rm = clamp01(p->rm),
        .uncoalesced = clamp01(p->uncoalesced),
        .warps_per_block = warps,
        .regs_per_thread = job->fn->info.regs_per_thread,
        .smem_per_block = job->fn->info.static_smem,
        .insts_per_warp = c->warp_insts / ((double)blocks * warps),
        .min_slice_blocks = kcuda_min_slice((double)kc->info.slice_overhead_ns, blocks,
                                            c->duration_ns, kc->info.sms,
                                            kc->cfg.slice_overhead_bound),
        .blocks_done = blocks,
    };
}

/* A profiled launch polls the host copy of its cancel word: CUPTI's replay restores device
 * memory between passes, and would clear a cancel set during the first (control.c). */
static void poll_replay_cancel(kcuda *kc, kcuda_job *job)
{
    uint64_t cancel;
    if (!job->polls_cancel || job->cancel_offset + sizeof(cancel) > job->params_size)
        return;
    unsigned char *slot = (unsigned char *)job->params + job->cancel_offset;
    memcpy(&cancel, slot, sizeof(cancel));
    uint64_t host = kcuda_control_replay_cancel(kc->control, job->domain, cancel);
    if (host)
        memcpy(slot, &host, sizeof(host));
}

/* Where a profile's time went (kcuda_config.profile_times): t = start, profiler open,
 * launch measured, end. */
static void note_times(kcuda *kc, const kcuda_job *job, size_t passes,
                       const double stages[KPROF_OPEN_STAGES], const uint64_t t[4])
{
    if (!kc->cfg.profile_times || !kc->cfg.note)
        return;
    char note[MSG_LEN + 256];
    snprintf(note, sizeof(note), "profile of %.120s: open %.1f ms (enable %.1f, counters "
             "%.1f, configuration %.1f, counter data %.1f), profiled launch %.1f ms (%zu "
             "passes), the rest %.1f ms", job->fn->name, (double)(t[1] - t[0]) / 1e6,
             stages[0], stages[1], stages[2], stages[3], (double)(t[2] - t[1]) / 1e6, passes,
             (double)(t[3] - t[2]) / 1e6);
    kc->cfg.note(kc->cfg.note_user, note);
}

/* On the exclusive thread: wait for the device to drain, measure, let the rest go. */
void kcuda_run_profile(kcuda *kc, kcuda_job *job)
{
    pthread_mutex_lock(&kc->lock);
    kcuda_wait_idle_locked(kc);
    int status = kc->broken ? KBACKEND_ELOST : 0;
    pthread_mutex_unlock(&kc->lock);
    uint64_t start = kcuda_now();
    char msg[2 * MSG_LEN] = "";
    if (status)
        snprintf(msg, sizeof(msg), "context lost before the profile ran");
    if (!status)
        status = open_profiler(kc, msg, sizeof(msg));
    uint64_t opened = kcuda_now();
    kprof_counters c;
    if (!status) {
        pthread_mutex_lock(&kc->lock);
        CUresult r = kcuda_allow_smem_locked((struct kbackend_function *)job->fn, job->smem);
        pthread_mutex_unlock(&kc->lock);
        if (r != CUDA_SUCCESS) {
            kbackend_error e = {0};
            status = kcuda_cu_fail(&e, r, "dynamic shared memory");
            snprintf(msg, sizeof(msg), "%s", e.msg);
        }
    }
    if (!status) {
        poll_replay_cancel(kc, job);
        kcuda_control_replaying(kc->control, 1);
        size_t size = job->params_size;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, job->params,
                         CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
        /* the profiled launch is the tenant's launch: under its time limit, like any */
        kcuda_watchdog_arm(kc, job->queue, job, kcuda_now());
        if (kprof_measure(kc->prof, job->fn->f, job->shape.grid, job->shape.block, job->smem,
                          NULL, size ? extra : NULL, &c, msg, sizeof(msg)) != KPROF_OK)
            status = launch_failure(kc, job, msg, sizeof(msg));
        kcuda_control_replaying(kc->control, 0);
        uint64_t limit_ns = job->time_limit_ns;
        int fired = kcuda_watchdog_disarm(kc, job->queue, &limit_ns);
        if (fired && !status) {
            status = KBACKEND_ELAUNCH; /* the server answers CUDA's launch timeout */
            snprintf(msg, sizeof(msg), "%s: ran past its tenant's time limit of %.3g s per "
                     "launch (while profiled)", job->fn->name, (double)limit_ns / 1e9);
        }
    }
    uint64_t measured = kcuda_now();
    size_t passes = kprof_passes(kc->prof);     /* before the profiler is closed */
    double stages[KPROF_OPEN_STAGES];
    kprof_open_stages(kc->prof, stages);
    status = kcuda_control_settle(kc, job, 0, status, msg, sizeof(msg));
    kprof_profile p;
    if (!status && kprof_characterise(&c, &kc->gpu, &p) != KPROF_OK) {
        status = KBACKEND_EDEVICE;
        snprintf(msg, sizeof(msg), "%s: the profiler's counters are not usable", job->fn->name);
    }
    if (!status)
        fill_profile(kc, job, &c, &p, job->profile_out);
    if (!kc->cfg.keep_profiler && kc->prof) {
        kprof_close(kc->prof);      /* the other kernels run without CUPTI on the context */
        kc->prof = NULL;
    }
    uint64_t end = kcuda_now();
    note_times(kc, job, passes, stages, (uint64_t[]){start, opened, measured, end});
    pthread_mutex_lock(&kc->lock);
    kc->stats.profiles += status == 0;
    pthread_mutex_unlock(&kc->lock);
    kcuda_exclusive_end(kc);
    kcuda_complete(kc, job, 0, status, msg, start, end);
}
