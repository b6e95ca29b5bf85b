/* The trial op for the oracle policy: two kernels side by side, each held to its blocks per
 * SM by running it as slices of blocks_per_sm x SMs blocks on a stream of its own, the two
 * streams fed in alternation; and each kernel alone, whole (see cuda_backend.h: the blocks
 * run again with their real parameters). Launch and timing helpers are in measure.c.
 *
 * What the measurement must not include, found on the H100: the first launch of a sliced
 * variant (the driver loads a function on first use), and the host's submission rate (a
 * slice of a short kernel runs faster than the host can queue the next one). So both
 * sliced variants run once before the clock starts, and the side-by-side slices are queued
 * behind a gate that opens when all are queued. A kernel cannot run faster beside another
 * than alone: a rate above its alone rate is timing noise and is clamped to it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_internal.h"
#include "profile.h"
#include "sizing.h"

/* Slices per side, all queued behind the closed gate: well below the driver's queue depth,
 * which would otherwise block the host with the gate still closed. */
#define MAX_TRIAL_SLICES 200
#define MIN_TRIAL_NS 1e6            /* at least 1 ms side by side */

/* One kernel of the trial as the device runs it. */
typedef struct side {
    const kbackend_slice *shape;       /* the caller's: fn, grid, block, smem, params */
    const struct kbackend_function *sliced;
    uint64_t total, size;           /* blocks of the grid, blocks per slice */
    unsigned n;                     /* slices to run */
    uint64_t *blocks;               /* per slice */
    double *end_ns;
} side;

static struct alone_rate *alone_cached(kcuda *kc, const kbackend_slice *s, uint64_t hash)
{
    for (unsigned i = 0; i < sizeof(kc->alone) / sizeof(kc->alone[0]); i++) {
        struct alone_rate *a = &kc->alone[i];
        if (a->fn == s->fn && a->smem == s->smem && a->params_hash == hash &&
            !memcmp(a->grid, s->grid, sizeof(a->grid)) &&
            !memcmp(a->block, s->block, sizeof(a->block)))
            return a;
    }
    return NULL;
}

/* Blocks per second of s run whole and alone (after one warm-up run; cached by shape). */
static int alone_rate(kcuda *kc, const side *sd, double *bps, kbackend_error *err)
{
    const kbackend_slice *s = sd->shape;
    uint64_t hash = ksched_hash(s->params, s->params_size);
    const struct alone_rate *hit = alone_cached(kc, s, hash);
    if (hit) {
        *bps = hit->bps;
        return 0;
    }
    const struct kbackend_function *fn = s->fn->sliced ? sd->sliced : s->fn;
    int whole = !fn->sliced;
    CUstream st = kc->trial_stream[0];
    CUevent *ev = kc->trial_events;
    int rc = kcuda_measure_launch(kc, s, fn, whole, 0, sd->total, st, err);
    CUresult r = rc ? CUDA_SUCCESS : cuEventRecord(ev[0], st);
    if (!rc && r == CUDA_SUCCESS && !(rc = kcuda_measure_launch(kc, s, fn, whole, 0, sd->total, st, err)))
        r = cuEventRecord(ev[1], st);
    if (!rc && r == CUDA_SUCCESS)
        r = cuStreamSynchronize(st);
    if (!rc && r != CUDA_SUCCESS)
        rc = kcuda_measure_fail(kc, err, r, "alone run");
    double t = rc ? -1 : kcuda_elapsed_ns(ev[0], ev[1]);
    if (!rc && !(t > 0))
        rc = kbackend_fail(err, KBACKEND_EDEVICE, "alone run of %s took no time", fn->name);
    if (rc)
        return rc;
    *bps = (double)sd->total / t * 1e9;
    struct alone_rate *slot = &kc->alone[kc->alone_next++ % 4];
    *slot = (struct alone_rate){.fn = s->fn, .smem = s->smem, .params_hash = hash, .bps = *bps};
    memcpy(slot->grid, s->grid, sizeof(slot->grid));
    memcpy(slot->block, s->block, sizeof(slot->block));
    return 0;
}

/* One slice of each sliced variant, so that loading it is not timed. */
static int warm_sliced(kcuda *kc, const side sd[2], kbackend_error *err)
{
    CUstream st = kc->trial_stream[0];
    int rc = 0;
    for (int k = 0; !rc && k < 2; k++)
        rc = kcuda_measure_launch(kc, sd[k].shape, sd[k].sliced, 0, 0, sd[k].size, st, err);
    CUresult r = rc ? CUDA_SUCCESS : cuStreamSynchronize(st);
    return rc ? rc : r == CUDA_SUCCESS ? 0 : kcuda_measure_fail(kc, err, r, "trial warm-up");
}

/* Both kernels' slices in alternation, one stream each, from one common start event. */
static int run_together(kcuda *kc, side sd[2], kbackend_error *err)
{
    CUevent *ev = kc->trial_events;
    CUstream st[2] = {kc->trial_stream[0], kc->trial_stream[1]};
    int gated = kcuda_gate_close(kc);
    CUresult r = cuEventRecord(ev[0], st[0]);
    if (r == CUDA_SUCCESS)
        r = cuStreamWaitEvent(st[1], ev[0], 0);
    int rc = r == CUDA_SUCCESS ? 0 : kcuda_measure_fail(kc, err, r, "trial start");
    unsigned most = sd[0].n > sd[1].n ? sd[0].n : sd[1].n;
    for (unsigned j = 0; !rc && j < most; j++)
        for (int k = 0; !rc && k < 2; k++) {
            if (j >= sd[k].n)
                continue;
            uint64_t first = j * sd[k].size % sd[k].total;
            uint64_t count = sd[k].total - first < sd[k].size ? sd[k].total - first : sd[k].size;
            sd[k].blocks[j] = count;
            rc = kcuda_measure_launch(kc, sd[k].shape, sd[k].sliced, 0, first, count, st[k], err);
            CUevent e = ev[1 + (k ? sd[0].n : 0) + j];
            if (!rc && (r = cuEventRecord(e, st[k])) != CUDA_SUCCESS)
                rc = kcuda_measure_fail(kc, err, r, "cuEventRecord");
        }
    if (gated)
        kcuda_gate_open(kc);    /* also after a failure: the streams must drain */
    for (int k = 0; k < 2; k++)
        if ((r = cuStreamSynchronize(st[k])) != CUDA_SUCCESS && !rc)
            rc = kcuda_measure_fail(kc, err, r, "trial run");
    for (int k = 0; !rc && k < 2; k++)
        for (unsigned j = 0; j < sd[k].n; j++)
            sd[k].end_ns[j] = kcuda_elapsed_ns(ev[0], ev[1 + (k ? sd[0].n : 0) + j]);
    return rc;
}

static int plan_side(kcuda *kc, const kbackend_trial *t, int k, side *sd, kbackend_error *err)
{
    const kbackend_slice *s = &t->kernel[k];
    sd->shape = s;
    sd->sliced = kcuda_sliced_sibling(kc, s->fn);
    if (!sd->sliced)
        return kbackend_fail(err, KBACKEND_EUNSUPPORTED, "%s has no sliced variant: a trial needs one",
                          s->fn->name);
    sd->total = kbackend_grid_blocks(s->grid);
    uint64_t size = (uint64_t)t->blocks_per_sm[k] * kc->info.sms;
    sd->size = size < sd->total ? size : sd->total;
    return 0;
}

static int measure(kcuda *kc, const kbackend_trial *t, kbackend_trial_result *out, kbackend_error *err)
{
    side sd[2] = {{0}};
    int rc = kcuda_measure_streams(kc, err);
    for (int k = 0; !rc && k < 2; k++)
        rc = plan_side(kc, t, k, &sd[k], err);
    if (!rc)
        rc = kcuda_measure_events(kc, 2, err);
    for (int k = 0; !rc && k < 2; k++)
        rc = alone_rate(kc, &sd[k], &out->alone_bps[k], err);
    if (rc)
        return rc;
    double target = MIN_TRIAL_NS;
    for (int k = 0; k < 2; k++) {
        double slice_ns = (double)sd[k].size / out->alone_bps[k] * 1e9;
        target = 8 * slice_ns > target ? 8 * slice_ns : target;
    }
    for (int k = 0; k < 2; k++) {
        sd[k].n = kcuda_trial_slices(out->alone_bps[k], sd[k].size, target, MAX_TRIAL_SLICES);
        sd[k].blocks = calloc(sd[k].n, sizeof(*sd[k].blocks));
        sd[k].end_ns = calloc(sd[k].n, sizeof(*sd[k].end_ns));
        if (!sd[k].blocks || !sd[k].end_ns)
            rc = kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    }
    if (!rc)
        rc = kcuda_measure_events(kc, 1 + (size_t)sd[0].n + sd[1].n, err);
    if (!rc)
        rc = warm_sliced(kc, sd, err);
    if (!rc)
        rc = run_together(kc, sd, err);
    kcuda_trial_run runs[2];
    for (int k = 0; k < 2; k++)
        runs[k] = (kcuda_trial_run){.n = sd[k].n, .blocks = sd[k].blocks, .end_ns = sd[k].end_ns};
    if (!rc && kcuda_trial_rates(runs, out->together_bps))
        rc = kbackend_fail(err, KBACKEND_EDEVICE, "trial timing not usable");
    for (int k = 0; !rc && k < 2; k++)
        if (out->together_bps[k] > out->alone_bps[k])
            out->together_bps[k] = out->alone_bps[k];
    for (int k = 0; k < 2; k++) {
        free(sd[k].blocks);
        free(sd[k].end_ns);
    }
    return rc;
}

int kcuda_trial(void *state, const kbackend_trial *t, kbackend_trial_result *out, kbackend_error *err)
{
    kcuda *kc = state;
    if (!t || !out || !t->kernel[0].fn || !t->kernel[1].fn)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    for (int k = 0; k < 2; k++)
        if (!t->blocks_per_sm[k] || t->blocks_per_sm[k] > kc->info.max_blocks_per_sm)
            return kbackend_fail(err, KBACKEND_EINVAL, "trial with %u blocks per SM",
                              t->blocks_per_sm[k]);
    pthread_mutex_lock(&kc->lock);
    int rc = kcuda_refuse_if_broken(kc, err);
    pthread_mutex_unlock(&kc->lock);
    if (rc || (rc = kcuda_bind(kc, err)))
        return rc;
    kcuda_exclusive_begin(kc);
    rc = measure(kc, t, out, err);
    /* a trap or assert in a trial's kernels is the trial's, not a later launch's */
    for (int k = 0; k < 2; k++)
        if (kcuda_control_take_fault(kc->control, t->kernel[k].domain) && !rc)
            rc = kbackend_fail(err, KBACKEND_ELAUNCH, "%s: a trap or assert during a trial",
                               t->kernel[k].fn->name);
    pthread_mutex_lock(&kc->lock);
    kc->stats.trials++;
    pthread_mutex_unlock(&kc->lock);
    kcuda_exclusive_end(kc);
    return rc;
}
