/* GPU check of the profiler (host-sched/backends/cuda/profiler.h): profiles each benchmark kernel
 * with CUPTI's range profiler, derives PUR, MUR, Rm and the uncoalesced fraction, and
 * compares them with Nsight Compute's figures for the same kernels (bench_h100.tsv):
 * the memory/compute class must match, PUR and MUR must agree within 0.1 or 30%.
 * The profiled launch's output must still verify (kernel replay restores memory between
 * passes), and the share of memory instructions (rm_all) measured on the small instance
 * must be close to the default one's: characterising a kernel from a small launch is what
 * kerneletd does. The model's Rm (DRAM-reaching) is printed beside it, not compared: a
 * small instance's data may fit L2, so fewer of its instructions reach DRAM.
 *   profile-kernels PTX_DIR REFERENCE.tsv [CSV_OUT]
 * Exit 0 when every check holds, 1 on a failure, 77 without a usable GPU. */
#include "characterise.h"
#include "kw_cuda.h"
#include "profiler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reference {
    char name[16];
    double pur, mur;
    char bound[16];
} reference;

static int load_reference(const char *path, reference *refs, int max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        reference *r = &refs[n];
        if (sscanf(line, "%15s %lf %lf %15s", r->name, &r->pur, &r->mur, r->bound) == 4)
            n++;
    }
    fclose(f);
    return n;
}

static const reference *find_reference(const reference *refs, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(refs[i].name, name) == 0)
            return &refs[i];
    return NULL;
}

static int close_enough(double measured, double expected)
{
    double diff = fabs(measured - expected);
    return diff <= 0.1 || diff <= 0.3 * fabs(expected);
}

/* Profiles one instance of k; returns 0 and fills *prof when profiling and verification
 * succeed. */
static int profile_one(kprof *kp, const kw_kernel *k, const char *dir, kw_size size,
                       kprof_profile *prof, char *msg, size_t msglen)
{
    kwc_run r;
    kprof_counters c;
    int bad = kwc_prepare(&r, k, dir, size, 1, msg, msglen) ||
              kwc_failed(kwc_launch(&r, NULL), "warm-up launch", msg, msglen) ||
              kwc_failed(cuCtxSynchronize(), "warm-up", msg, msglen) ||
              kwc_failed(kwc_clear_outputs(&r), "clear outputs", msg, msglen);
    if (!bad) {
        int rc = kprof_measure(kp, r.fn, r.in.grid, r.in.block, r.in.dynamic_shared_bytes,
                               r.params, NULL, &c, msg, msglen);
        bad = rc != KPROF_OK;
    }
    if (!bad && kprof_characterise(&c, kmodel_gpu_lookup("H100"), prof) != KPROF_OK) {
        snprintf(msg, msglen, "counters not usable");
        bad = 1;
    }
    if (!bad && kwc_verify(&r, msg, msglen)) {
        bad = 1;
    }
    /* The module stays loaded until the process ends: unloading modules while CUPTI's range
     * profiler is enabled crashed inside NVIDIA's libraries on the H100 at the third or
     * fourth kernel (docs/perf/scheduling.md), and kerneletd, which never crashed, keeps
     * profiled modules loaded too. */
    r.module = NULL;
    kwc_release(&r);
    return bad;
}

static int check_kernel(kprof *kp, const kw_kernel *k, const char *dir, const reference *ref,
                        FILE *csv)
{
    kprof_profile big, small;
    char msg[256] = "";
    if (profile_one(kp, k, dir, KW_SIZE_DEFAULT, &big, msg, sizeof msg) ||
        profile_one(kp, k, dir, KW_SIZE_SMALL, &small, msg, sizeof msg)) {
        printf("| %-5s | error: %s |\n", k->name, msg);
        return 1;
    }
    const char *bound = big.mur > big.pur ? "memory" : "compute";
    int ok_class = ref && strcmp(bound, ref->bound) == 0;
    int ok_pur = ref && close_enough(big.pur, ref->pur);
    int ok_mur = ref && close_enough(big.mur, ref->mur);
    int ok_rm = fabs(small.rm_all - big.rm_all) <= 0.02 + 0.2 * big.rm_all;
    printf("| %-5s | %.3f | %.3f (%.3f) | %.3f (%.3f) | %.3f / %.3f | %.3f / %.3f | %.3f | "
           "%s (%s) | %s |\n",
           k->name, big.ipc, big.pur, ref ? ref->pur : NAN, big.mur, ref ? ref->mur : NAN,
           big.rm, big.rm_all, small.rm, small.rm_all, big.uncoalesced, bound,
           ref ? ref->bound : "?",
           ok_class && ok_pur && ok_mur && ok_rm ? "ok" : "MISMATCH");
    if (csv)
        fprintf(csv, "%s,%.5f,%.5f,%.5f,%.5f,%.5f,%.5f,%.5f,%.5f,%s\n", k->name, big.ipc,
                big.pur, big.mur, big.rm, big.rm_all, small.rm, small.rm_all, big.uncoalesced,
                bound);
    return !(ok_class && ok_pur && ok_mur && ok_rm);
}

static void print_name(const char *name, void *ctx)
{
    fprintf(ctx, "%s\n", name);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);   /* what ran is on record even if a check crashes */
    kwc_crash_backtraces();
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s PTX_DIR REFERENCE.tsv [CSV_OUT]\n", argv[0]);
        return 2;
    }
    reference refs[16];
    int nref = load_reference(argv[2], refs, 16);
    if (nref <= 0) {
        fprintf(stderr, "cannot read %s\n", argv[2]);
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "no usable CUDA device\n");
        return 77;
    }
    kprof *kp;
    char msg[256];
    if (kprof_open(ctx, 0, NULL, &kp, msg, sizeof msg) != KPROF_OK) {
        fprintf(stderr, "profiler: %s\n", msg);
        return 1;
    }
    char chosen[4096];
    kprof_describe(kp, chosen, sizeof chosen);
    printf("metrics: %s\n", chosen);
    const char *list = getenv("KPROF_LIST_METRICS");   /* a file for every name the chip offers */
    FILE *lf = list ? fopen(list, "w") : NULL;
    if (lf) {
        if (kprof_each_base_metric(kp, print_name, lf, msg, sizeof msg) != KPROF_OK)
            fprintf(stderr, "base metrics: %s\n", msg);
        fclose(lf);
    }
    FILE *csv = argc > 3 ? fopen(argv[3], "w") : NULL;
    if (csv)
        fprintf(csv, "kernel,ipc,pur,mur,rm,rm_all,rm_small,rm_all_small,uncoalesced,bound\n");
    printf("| kernel | IPC | PUR (ncu) | MUR (ncu) | Rm / all | Rm / all small | uncoalesced | bound (ncu) | check |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    size_t n;
    const kw_kernel *const *all = kw_kernels(&n);
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= check_kernel(kp, all[i], argv[1], find_reference(refs, nref, all[i]->name), csv);
    if (csv)
        fclose(csv);
    kprof_close(kp);
    cuDevicePrimaryCtxRelease(dev);
    return bad;
}
