/* backend-check, the benchmark kernels: each run whole and as random slices over every lane
 * and verified against its CPU reference; profiled (the profiled wave's blocks are not run
 * again, and the output must still verify); its slicing overhead measured at slice sizes of
 * 1, 2, 4, ... waves of SMs against the profile's estimate of the minimum slice; and one
 * compute/memory pair through the trial op. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_check.h"
#include "profile.h"

#define OVERHEAD_REPS 5
#define OVERHEAD_BOUND 0.02

static unsigned device_sms(kbackend be)
{
    kbackend_device_info in;
    return be.ops->device_info(be.state, &in, NULL) ? 0 : in.sms;
}

int bc_run_whole(bc_run *r, char *msg, size_t msglen)
{
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t = {.w = &w};
    kbackend_slice s = bc_whole(r);
    kbackend_error e = {0};
    if (r->be.ops->launch(r->be.state, &s, bc_done, &t, &e)) {
        snprintf(msg, msglen, "whole launch refused: %.200s", e.msg);
        return 1;
    }
    bc_wait(&w, 1);
    if (t.status)
        snprintf(msg, msglen, "whole launch failed: %.200s", t.msg);
    return t.status != 0;
}

int bc_profile_and_finish(bc_run *r, kbackend_profile *p, double *ms, char *msg,
                          size_t msglen)
{
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t = {.w = &w};
    kbackend_slice s = bc_whole(r);
    s.fn = r->sliced;
    s.sliced = 1;
    kbackend_error e = {0};
    if (r->be.ops->profile(r->be.state, &s, p, bc_done, &t, &e)) {
        snprintf(msg, msglen, "profile refused: %.200s", e.msg);
        return 1;
    }
    bc_wait(&w, 1);
    *ms = (double)(t.end_ns - t.start_ns) / 1e6;
    if (t.status) {
        snprintf(msg, msglen, "profile failed: %.200s", t.msg);
        return 1;
    }
    ksched_err pe = {0};
    if (ksched_profile_validate(p, &pe)) {
        snprintf(msg, msglen, "profile not valid: %.200s", pe.msg);
        return 1;
    }
    if (!p->blocks_done || p->blocks_done > r->total) {
        snprintf(msg, msglen, "profile ran %llu of %llu blocks",
                 (unsigned long long)p->blocks_done, (unsigned long long)r->total);
        return 1;
    }
    if (p->blocks_done < r->total &&
        bc_run_random_slices(r, p->blocks_done, r->total / 8 + 1, 7, msg, msglen))
        return 1;
    return 0;
}

typedef struct overhead {
    double whole_ns;
    uint64_t measured_min;      /* smallest size with overhead <= 2%, 0 = none measured */
    double at_one_wave;         /* overhead with slices of one SM's worth of blocks each */
} overhead;

static int measure_overhead(bc_run *r, unsigned sms, FILE *csv, overhead *o, char *msg,
                            size_t msglen)
{
    kbackend_slice s = bc_whole(r);
    kbackend_error e = {0};
    memset(o, 0, sizeof(*o));
    o->at_one_wave = NAN;
    if (kcuda_time_launch(r->be.state, &s, 0, OVERHEAD_REPS, &o->whole_ns, &e)) {
        snprintf(msg, msglen, "timing whole: %.200s", e.msg);
        return 1;
    }
    for (uint64_t size = sms; size < r->total; size *= 2) {
        double t;
        if (kcuda_time_launch(r->be.state, &s, size, OVERHEAD_REPS, &t, &e)) {
            snprintf(msg, msglen, "timing slices of %llu: %.200s", (unsigned long long)size,
                     e.msg);
            return 1;
        }
        double over = t / o->whole_ns - 1;
        if (size == sms)
            o->at_one_wave = over;
        if (!o->measured_min && over <= OVERHEAD_BOUND)
            o->measured_min = size;
        if (csv)
            fprintf(csv, "overhead,%s,%llu,%.0f,%.0f,%.5f\n", r->k->name,
                    (unsigned long long)size, t, o->whole_ns, over);
    }
    return 0;
}

static void check_kernel(kbackend be, const kw_kernel *k, const char *dir, unsigned sms,
                         FILE *csv)
{
    bc_run r;
    char msg[256] = "";
    kbackend_profile p = {0};
    overhead o = {0};
    double profile_ms = 0;
    const char *step = "prepare";
    int bad = bc_prepare(&r, be, k, dir, KW_SIZE_DEFAULT, msg, sizeof(msg));
    if (!bad) {
        step = "whole";
        bad = bc_zero_outputs(&r, msg, sizeof(msg)) || bc_run_whole(&r, msg, sizeof(msg)) ||
              bc_verify(&r, msg, sizeof(msg));
    }
    if (!bad) {
        step = "slices";
        bad = bc_zero_outputs(&r, msg, sizeof(msg)) ||
              bc_run_random_slices(&r, 0, r.total / 16 + 1, 3, msg, sizeof(msg)) ||
              bc_verify(&r, msg, sizeof(msg));
    }
    if (!bad) {
        step = "profile";
        bad = bc_zero_outputs(&r, msg, sizeof(msg)) ||
              bc_profile_and_finish(&r, &p, &profile_ms, msg, sizeof(msg)) ||
              bc_verify(&r, msg, sizeof(msg));
    }
    if (!bad) {
        step = "overhead";
        bad = measure_overhead(&r, sms, csv, &o, msg, sizeof(msg));
    }
    if (bad)
        bc_fail("%s: %s: %s", k->name, step, msg);
    printf("| %-5s | %llu | %.1f | %.3f | %.3f | %.4f | %.1f | %llu | %.0f | %llu | %llu | "
           "%.3f | %s |\n", k->name, (unsigned long long)r.total, o.whole_ns / 1e3, p.pur,
           p.mur, p.rm, p.insts_per_warp, (unsigned long long)p.blocks_done, profile_ms,
           (unsigned long long)p.min_slice_blocks, (unsigned long long)o.measured_min,
           o.at_one_wave, bad ? "FAILED" : "ok");
    if (csv)
        fprintf(csv, "kernel,%s,%llu,%.0f,%.5f,%.5f,%.5f,%.5f,%.2f,%llu,%.1f,%llu,%llu,%.5f\n",
                k->name, (unsigned long long)r.total, o.whole_ns, p.pur, p.mur, p.rm,
                p.uncoalesced, p.insts_per_warp, (unsigned long long)p.blocks_done, profile_ms,
                (unsigned long long)p.min_slice_blocks, (unsigned long long)o.measured_min,
                o.at_one_wave);
    fflush(stdout);
    bc_release(&r);
}

void bc_check_bench_kernels(kbackend be, const char *dir, FILE *csv)
{
    unsigned sms = device_sms(be);
    printf("\n| kernel | blocks | whole µs | PUR | MUR | Rm | insts/warp | profiled blocks | "
           "profile ms | min slice (estimate) | min slice (measured) | overhead at %u blocks | "
           "check |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", sms);
    size_t n;
    const kw_kernel *const *all = kw_kernels(&n);
    for (size_t i = 0; i < n; i++)
        check_kernel(be, all[i], dir, sms, csv);
}

static void trial_row(kbackend be, bc_run r[2], unsigned b0, unsigned b1, FILE *csv)
{
    kbackend_trial t = {.blocks_per_sm = {b0, b1}};
    t.kernel[0] = bc_whole(&r[0]);
    t.kernel[1] = bc_whole(&r[1]);
    kbackend_trial_result res;
    kbackend_error e = {0};
    int rc = be.ops->trial(be.state, &t, &res, &e);
    if (rc == KBACKEND_EINVAL) {
        printf("| %u:%u | does not fit: %s |\n", b0, b1, e.msg);
        return;
    }
    if (rc) {
        bc_fail("trial %u:%u: %s", b0, b1, e.msg);
        return;
    }
    double share = 0;
    for (int i = 0; i < 2; i++) {
        share += res.together_bps[i] / res.alone_bps[i];
        if (!(res.alone_bps[i] > 0) || !(res.together_bps[i] > 0) ||
            res.together_bps[i] > 1.1 * res.alone_bps[i])
            bc_fail("trial %u:%u: kernel %d at %.3g blocks/s together, %.3g alone", b0, b1, i,
                    res.together_bps[i], res.alone_bps[i]);
    }
    double cp = 1 - 1 / share;
    printf("| %u:%u | %.4g | %.4g | %.4g | %.4g | %.3f |\n", b0, b1, res.together_bps[0],
           res.alone_bps[0], res.together_bps[1], res.alone_bps[1], cp);
    if (csv)
        fprintf(csv, "trial,%u,%u,%.6g,%.6g,%.6g,%.6g,%.5f\n", b0, b1, res.together_bps[0],
                res.alone_bps[0], res.together_bps[1], res.alone_bps[1], cp);
}

void bc_check_trial(kbackend be, const char *dir, FILE *csv)
{
    const char *names[2] = {"tea", "st"};   /* compute and memory bound on the H100 */
    bc_run r[2];
    char msg[256] = "";
    memset(r, 0, sizeof(r));
    for (int i = 0; i < 2; i++)
        if (bc_prepare(&r[i], be, kw_find(names[i]), dir, KW_SIZE_DEFAULT, msg, sizeof(msg)) ||
            bc_run_whole(&r[i], msg, sizeof(msg))) {
            bc_fail("trial: %s", msg);
            bc_release(&r[0]);
            bc_release(&r[1]);
            return;
        }
    printf("\n| tea:st blocks per SM | tea together (blocks/s) | tea alone | st together | "
           "st alone | CP |\n|---|---|---|---|---|---|\n");
    static const unsigned splits[][2] = {{1, 1}, {2, 2}, {4, 4}, {2, 6}, {6, 2}};
    for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++)
        trial_row(be, r, splits[i][0], splits[i][1], csv);
    /* the trial re-ran blocks with the real parameters: outputs must still be right */
    for (int i = 0; i < 2; i++)
        if (bc_verify(&r[i], msg, sizeof(msg)))
            bc_fail("after the trial, %s: %s", names[i], msg);
    bc_release(&r[0]);
    bc_release(&r[1]);
}
