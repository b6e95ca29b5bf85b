/* backend-check: the cuda executor backend (host-sched/backends/cuda/cuda_backend.h) on a
 * real GPU.
 *
 *   backend-check PTX_DIR PROFILES [OUT_DIR]
 *
 * PTX_DIR holds the benchmark kernels' PTX (build/bench), PROFILES is the scheduler's H100
 * data file (host-sched/profiles/h100-bench.profiles). Checks, in order:
 *  1. count_blocks (tests/cuda/kernels_ptx.h, sliced by the PTX library) on a 3-D grid run
 *     whole and as random slices over every lane: every block counted exactly twice; the
 *     same module text loaded again compiles nothing; bad PTX fails with the JIT's message.
 *  2. a profile with launches submitted behind it: they wait, then run (none starts before
 *     the profile ended); the profiled blocks are not run again.
 *     An unsliced launch profiled runs whole once (blocks_done = its blocks). Two loads
 *     of a text with a __device__ variable have separate variables.
 *  3. each benchmark kernel (backend_bench.c): whole, slices, profile, slicing overhead.
 *  4. tea and st side by side through the trial op; every pair of the eight kernels at the
 *     model's split, predicted against measured (backend_pairs.c).
 * BC_ONLY=pairs runs step 4's pairs alone.
 *  5. the scheduler on this backend, fifo and kernelet policies (backend_sched.c).
 *  6. a kernel storing to address 8: its launch completes with KBACKEND_ELOST naming the
 *     error, the backend says it is broken and refuses work, and a new backend works.
 * Tables go to standard output, figures to OUT_DIR/backend-check.csv. The calibration in
 * $KERNELET_CALIBRATION_DIR is used when set. Exit 0 when every check holds, 1 on a
 * failure, 77 without a usable GPU. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../cuda/kernels_ptx.h"
#include "backend_check.h"
#include "kw_cuda.h"

#define GRID_X 37
#define GRID_Y 11
#define GRID_Z 5

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int open_backend(kbackend *be, kbackend_error *e)
{
    kcuda_config cfg;
    kcuda_config_default(&cfg);
    cfg.lanes = BC_LANES;
    cfg.calibration_dir = getenv("KERNELET_CALIBRATION_DIR");
    kcuda *kc;
    int rc = kcuda_new(&kc, &cfg, e);
    if (!rc)
        kcuda_backend(kc, be);
    return rc;
}

/* count_blocks and fault, loaded once per backend. */
typedef struct test_kernels {
    kbackend_module *mod;
    kbackend_function *count, *count_sliced, *fault;
} test_kernels;

static int load_test_kernels(kbackend be, test_kernels *k, char *msg, size_t msglen)
{
    size_t len;
    char *text = bc_sliced_ptx(kcuda_test_ptx, strlen(kcuda_test_ptx), &len, msg, msglen);
    if (!text)
        return 1;
    kbackend_error e = {0};
    void *st = be.state;
    int rc = be.ops->module_load_ptx(st, 0, text, len, &k->mod, &e) ||
             be.ops->function_get(st, k->mod, "count_blocks", &k->count, NULL, &e) ||
             be.ops->function_get(st, k->mod, "count_blocks__kslice", &k->count_sliced, NULL,
                                  &e) ||
             be.ops->function_get(st, k->mod, "fault", &k->fault, NULL, &e);
    if (rc)
        snprintf(msg, msglen, "test kernels: %.200s", e.msg);
    free(text);
    return rc;
}

/* count_blocks' packed parameters: u64 counts, u32 tag, tail padding to 16. */
typedef struct count_params {
    uint64_t counts;
    uint32_t tag, pad;
} count_params;

static kbackend_slice count_launch(const test_kernels *k, const count_params *p, unsigned gx,
                                unsigned gy, unsigned gz)
{
    kbackend_slice s = {.fn = k->count, .grid = {gx, gy, gz}, .block = {64, 1, 1},
                     .count = (uint64_t)gx * gy * gz, .params = p, .params_size = sizeof(*p)};
    return s;
}

/* A zeroed device buffer of n counters. */
static int zeroed_counts(kbackend be, size_t n, kbackend_devptr *d)
{
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t = {.w = &w};
    kbackend_error e = {0};
    if (be.ops->mem_alloc(be.state, 0, n * 4, d, &e) ||
        be.ops->memset_d8(be.state, *d, 0, n * 4, bc_done, &t, &e)) {
        bc_fail("counters: %s", e.msg);
        return 1;
    }
    bc_wait(&w, 1);
    return t.status != 0;
}

/* Copies n counters back; the number of blocks in [from, to) not counted `want` times. */
static size_t wrong_counts(kbackend be, kbackend_devptr d, size_t n, uint32_t want,
                           size_t from, size_t to)
{
    uint32_t *h = calloc(n, 4);
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t = {.w = &w};
    kbackend_error e = {0};
    if (!h || be.ops->copy_d2h(be.state, h, d, n * 4, bc_done, &t, &e)) {
        free(h);
        return n;
    }
    bc_wait(&w, 1);
    size_t wrong = t.status ? n : 0;
    for (size_t i = from; !t.status && i < to && i < n; i++)
        wrong += h[i] != want;
    free(h);
    return wrong;
}

/* Launches s in lanes lane0.. with one ticket each; returns how many were accepted. */
static unsigned launch_all(kbackend be, kbackend_slice *s, bc_ticket *t, unsigned n)
{
    unsigned ok = 0;
    for (unsigned i = 0; i < n; i++) {
        kbackend_error e = {0};
        if (be.ops->launch(be.state, s, bc_done, &t[i], &e))
            bc_fail("launch refused: %s", e.msg);
        else
            ok++;
        s->lane = (s->lane + 1) % BC_LANES;
    }
    return ok;
}

static void check_count_blocks(kbackend be, const test_kernels *k)
{
    const size_t n = (size_t)GRID_X * GRID_Y * GRID_Z;
    kbackend_devptr d;
    if (zeroed_counts(be, n, &d))
        return;
    count_params p = {.counts = d, .tag = 1, .pad = 0xdeadbeef};
    kbackend_slice s = count_launch(k, &p, GRID_X, GRID_Y, GRID_Z);
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t[1 + 512];
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        t[i].w = &w;
    unsigned launched = launch_all(be, &s, t, 1);
    s.fn = k->count_sliced;
    s.sliced = 1;
    srand(11);
    for (uint64_t b = 0; b < n && launched < 513;) {
        s.first = b;
        s.count = 1 + (uint64_t)rand() % 40;
        s.count = s.count < n - b ? s.count : n - b;
        s.lane = (unsigned)rand() % BC_LANES;
        launched += launch_all(be, &s, &t[launched], 1);
        b += s.count;
    }
    bc_wait(&w, launched);
    if (w.failed)
        bc_fail("count_blocks: %u of %u launches failed", w.failed, launched);
    size_t wrong = wrong_counts(be, d, n, 2, 0, n);
    if (wrong)
        bc_fail("count_blocks: %zu of %zu blocks not counted twice", wrong, n);
    printf("count_blocks %ux%ux%u: whole + %u slices over %d lanes: %s\n", GRID_X, GRID_Y,
           GRID_Z, launched - 1, BC_LANES, wrong || w.failed ? "WRONG" : "every block twice");
    kbackend_error e;
    be.ops->mem_free(be.state, d, &e);
}

static void check_modules(kbackend be)
{
    size_t len;
    char msg[256];
    char *text = bc_sliced_ptx(kcuda_test_ptx, strlen(kcuda_test_ptx), &len, msg, sizeof(msg));
    kcuda_stats before, after;
    kcuda_get_stats(be.state, &before);
    kbackend_module *m = NULL;
    kbackend_error e = {0};
    if (!text || be.ops->module_load_ptx(be.state, 0, text, len, &m, &e))
        bc_fail("module reload: %s", text ? e.msg : msg);
    kcuda_get_stats(be.state, &after);
    if (m && (after.modules_compiled != before.modules_compiled ||
              after.module_cache_hits != before.module_cache_hits + 1))
        bc_fail("the same module text was compiled again");
    if (m)
        be.ops->module_unload(be.state, m, &e);
    free(text);
    const char bad[] = ".version 7.5\n.target sm_75\n.address_size 64\n"
                       ".visible .entry broken()\n{\n    mov.u32 %r1, 1;\n    ret;\n}\n";
    int rc = be.ops->module_load_ptx(be.state, 0, bad, strlen(bad), &m, &e);
    if (rc != KBACKEND_EMODULE)
        bc_fail("bad PTX: code %d, want KBACKEND_EMODULE", rc);
    printf("bad PTX refused: %s\n", e.msg);
}

static int copy_wait(kbackend be, int to_device, kbackend_devptr d, void *h, uint64_t n)
{
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t = {.w = &w};
    kbackend_error e = {0};
    int rc = to_device ? be.ops->copy_h2d(be.state, d, h, n, bc_done, &t, &e)
                       : be.ops->copy_d2h(be.state, h, d, n, bc_done, &t, &e);
    if (rc)
        return rc;
    bc_wait(&w, 1);
    return t.status;
}

/* Two loads of a text with a __device__ variable: two modules, two variables, each
 * holding what was copied to it (cuModuleGetGlobal per load). */
static void check_module_variables(kbackend be)
{
    const char *text = kcuda_test_vars_ptx;
    kbackend_module *m[2] = {NULL, NULL};
    kbackend_devptr v[2] = {0, 0};
    uint64_t bytes[2] = {0, 0};
    uint32_t in[2] = {0x1234u, 0x5678u}, out[2] = {0, 0};
    kbackend_error e = {0};
    int ok = 1;
    for (int i = 0; i < 2 && ok; i++)
        ok = !be.ops->module_load_ptx(be.state, 0, text, strlen(text), &m[i], &e) &&
             !be.ops->global_get(be.state, m[i], "counter", &v[i], &bytes[i], &e) &&
             !copy_wait(be, 1, v[i], &in[i], 4);
    for (int i = 0; i < 2 && ok; i++)
        ok = !copy_wait(be, 0, v[i], &out[i], 4);
    if (!ok)
        bc_fail("module variables: %s", e.msg);
    else if (m[0] == m[1] || v[0] == v[1] || bytes[0] != 4 || out[0] != in[0] ||
             out[1] != in[1])
        bc_fail("module variables shared or wrong: modules %p %p, counters 0x%llx 0x%llx "
                "(%llu bytes), read 0x%x 0x%x", (void *)m[0], (void *)m[1],
                (unsigned long long)v[0], (unsigned long long)v[1],
                (unsigned long long)bytes[0], out[0], out[1]);
    printf("module variables: two loads, counters at 0x%llx and 0x%llx: %s\n",
           (unsigned long long)v[0], (unsigned long long)v[1], ok ? "checked" : "FAILED");
    for (int i = 0; i < 2; i++)
        if (m[i])
            be.ops->module_unload(be.state, m[i], &e);
}

/* count_blocks on gx x 1 x 1 blocks run whole, median of 5 (ns); -1 on failure. Run
 * before the first profile and after the last one: does the range profiler, enabled on
 * the context from the first profile on, slow other kernels down? */
static double time_count_blocks(kbackend be, const test_kernels *k, unsigned gx)
{
    kbackend_devptr d;
    double ns = -1;
    kbackend_error e = {0};
    if (zeroed_counts(be, gx, &d))
        return -1;
    count_params p = {.counts = d};
    kbackend_slice s = count_launch(k, &p, gx, 1, 1);
    if (kcuda_time_launch(be.state, &s, 0, 5, &ns, &e))
        bc_fail("timing count_blocks: %s", e.msg);
    be.ops->mem_free(be.state, d, &e);
    return ns;
}

/* A profile holds the device: launches submitted behind it wait and start after it. */
static void check_deferral(kbackend be, const test_kernels *k, unsigned sms)
{
    const unsigned gx = sms * 32 * 4;   /* 4 waves of 32 blocks of 64 threads per SM */
    kbackend_devptr a, b;
    if (zeroed_counts(be, gx, &a) || zeroed_counts(be, gx, &b))
        return;
    count_params pa = {.counts = a}, pb = {.counts = b};
    kbackend_slice prof = count_launch(k, &pa, gx, 1, 1);
    prof.fn = k->count_sliced;
    prof.sliced = 1;
    kbackend_slice later = count_launch(k, &pb, gx, 1, 1);
    later.lane = 1;
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t[4] = {{.w = &w}, {.w = &w}, {.w = &w}, {.w = &w}};
    kbackend_profile p = {0};
    kcuda_stats before, after;
    kcuda_get_stats(be.state, &before);
    kbackend_error e = {0};
    if (be.ops->profile(be.state, &prof, &p, bc_done, &t[0], &e)) {
        bc_fail("profile of count_blocks refused: %s", e.msg);
        return;
    }
    unsigned n = 1 + launch_all(be, &later, &t[1], 3);
    bc_wait(&w, n);
    kcuda_get_stats(be.state, &after);
    if (t[0].status)
        bc_fail("profile of count_blocks: %s", t[0].msg);
    if (!t[0].status && after.deferred - before.deferred != n - 1)
        bc_fail("%llu of %u launches waited for the profile",
                (unsigned long long)(after.deferred - before.deferred), n - 1);
    for (unsigned i = 1; i < n; i++)
        if (t[i].status || t[i].start_ns + 1000 < t[0].end_ns)
            bc_fail("launch %u behind the profile: status %d, started %lld ns before its end",
                    i, t[i].status, (long long)(t[0].end_ns - t[i].start_ns));
    size_t wrong_b = wrong_counts(be, b, gx, 3, 0, gx);
    size_t wrong_a = t[0].status ? 0 : wrong_counts(be, a, gx, 1, 0, p.blocks_done) +
                                           wrong_counts(be, a, gx, 0, p.blocks_done, gx);
    if (wrong_a || wrong_b)
        bc_fail("deferral: %zu blocks of the profiled launch not run once in [0, %llu) and "
                "never after; %zu later blocks not run 3 times", wrong_a,
                (unsigned long long)p.blocks_done, wrong_b);
    printf("profile of count_blocks (%llu blocks profiled) with %u launches behind it: %s\n",
           (unsigned long long)p.blocks_done, n - 1, wrong_a || wrong_b ? "WRONG" : "ok");
    be.ops->mem_free(be.state, a, &e);
    be.ops->mem_free(be.state, b, &e);
}

/* An unsliced launch profiled runs whole, once, as its own profile: blocks_done = its
 * block count and every block counted exactly once (kernel replay restores memory). */
static void check_whole_profile(kbackend be, const test_kernels *k, unsigned sms)
{
    const unsigned gx = sms * 8, gy = 3;
    kbackend_devptr a;
    if (zeroed_counts(be, (size_t)gx * gy, &a))
        return;
    count_params pa = {.counts = a};
    kbackend_slice whole = count_launch(k, &pa, gx, gy, 1);
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t = {.w = &w};
    kbackend_profile p = {0};
    kbackend_error e = {0};
    if (be.ops->profile(be.state, &whole, &p, bc_done, &t, &e)) {
        bc_fail("whole profile of count_blocks refused: %s", e.msg);
        return;
    }
    bc_wait(&w, 1);
    size_t wrong = t.status ? 0 : wrong_counts(be, a, (size_t)gx * gy, 1, 0, (size_t)gx * gy);
    if (t.status)
        bc_fail("whole profile of count_blocks: %s", t.msg);
    else if (p.blocks_done != (uint64_t)gx * gy || wrong)
        bc_fail("whole profile: blocks_done %llu of %u, %zu blocks not run exactly once",
                (unsigned long long)p.blocks_done, gx * gy, wrong);
    printf("whole profile of count_blocks (%u x %u blocks): blocks_done %llu, rm %.4f: %s\n",
           gx, gy, (unsigned long long)p.blocks_done, p.rm, t.status || wrong ? "WRONG" : "ok");
    be.ops->mem_free(be.state, a, &e);
}

/* The fault, then a new backend. Consumes *be. */
static void check_fault(kbackend *be, const test_kernels *k)
{
    uint32_t value = 1;
    kbackend_slice s = {.fn = k->fault, .grid = {1, 1, 1}, .block = {1, 1, 1}, .count = 1,
                     .params = &value, .params_size = 4, .lane = 1};
    bc_waiter w;
    bc_waiter_init(&w);
    bc_ticket t = {.w = &w};
    kbackend_error e = {0};
    if (be->ops->launch(be->state, &s, bc_done, &t, &e)) {
        bc_fail("fault launch refused: %s", e.msg);
        return;
    }
    bc_wait(&w, 1);
    char why[256] = "";
    printf("fault kernel: status %d: %s\n", t.status, t.msg);
    if (t.status != KBACKEND_ELOST || !strstr(t.msg, "CUDA_ERROR_ILLEGAL_ADDRESS"))
        bc_fail("fault: status %d (%s), want KBACKEND_ELOST with the error name", t.status, t.msg);
    if (!kcuda_broken(be->state, why, sizeof(why)))
        bc_fail("fault: the backend does not say it is broken");
    count_params p = {0};
    kbackend_slice c = count_launch(k, &p, 1, 1, 1);
    if (be->ops->launch(be->state, &c, bc_done, &t, &e) != KBACKEND_ELOST)
        bc_fail("fault: a launch after it was not refused with KBACKEND_ELOST");
    be->ops->destroy(be->state);
    double t0 = seconds();
    test_kernels k2;
    char msg[256];
    kbackend_devptr d;
    if (open_backend(be, &e) || load_test_kernels(*be, &k2, msg, sizeof(msg)) ||
        zeroed_counts(*be, 100, &d)) {
        bc_fail("no new backend after the fault: %s", e.msg);
        be->ops = NULL;
        return;
    }
    p.counts = d;
    c = count_launch(&k2, &p, 100, 1, 1);
    bc_waiter_init(&w);
    unsigned ok = launch_all(*be, &c, &t, 1);
    bc_wait(&w, ok);
    if (!ok || t.status || wrong_counts(*be, d, 100, 1, 0, 100))
        bc_fail("the new backend does not run count_blocks right");
    printf("after the fault: broken (%s); a new backend in %.2f s runs kernels again\n", why,
           seconds() - t0);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);   /* what ran is on record even if a check crashes */
    kwc_crash_backtraces();
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s PTX_DIR PROFILES [OUT_DIR]\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t0 = seconds();
    kbackend be;
    kbackend_error e = {0};
    int rc = open_backend(&be, &e);
    if (rc) {
        fprintf(stderr, "backend-check: %s\n", e.msg);
        return rc == KBACKEND_EDEVICE ? 77 : 1;
    }
    kbackend_device_info in;
    be.ops->device_info(be.state, &in, &e);
    printf("device: %s, %u SMs, cc %d.%d, %.0f GB/s; %u lanes; launch overhead %llu ns%s "
           "(backend up in %.2f s)\n", in.name, in.sms, in.cc_major, in.cc_minor,
           in.mem_bandwidth_gbs, in.lanes, (unsigned long long)in.slice_overhead_ns,
           kcuda_calibration_of(be.state) ? " (calibration file)" : " (measured)",
           seconds() - t0);
    FILE *csv = NULL;
    if (argc > 3) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/backend-check.csv", argv[3]);
        if (!(csv = fopen(path, "w")))
            fprintf(stderr, "backend-check: cannot write %s\n", path);
        else
            fprintf(csv, "device,%s,%u,%llu\n", in.name, in.sms,
                    (unsigned long long)in.slice_overhead_ns);
    }
    test_kernels k;
    char msg[256];
    const char *only = getenv("BC_ONLY");
    if (only && !strcmp(only, "pairs")) {
        bc_check_pair_model(be, argv[1], csv);
    } else if (load_test_kernels(be, &k, msg, sizeof(msg))) {
        bc_fail("%s", msg);
    } else {
        check_count_blocks(be, &k);
        check_modules(be);
        check_module_variables(be);
        double before = time_count_blocks(be, &k, in.sms * 512);
        check_deferral(be, &k, in.sms);
        check_whole_profile(be, &k, in.sms);
        double t1 = seconds();
        bc_check_bench_kernels(be, argv[1], csv);
        bc_check_trial(be, argv[1], csv);
        bc_check_pair_model(be, argv[1], csv);
        bc_check_sched(be, argv[1], argv[2], csv);
        printf("\nbenchmark kernels, trial and scheduler: %.1f s\n", seconds() - t1);
        double after = time_count_blocks(be, &k, in.sms * 512);
        printf("count_blocks of %u blocks: %.1f us before the first profile, %.1f us after "
               "(x%.3f with the range profiler enabled)\n", in.sms * 512, before / 1e3,
               after / 1e3, after / before);
        if (csv)
            fprintf(csv, "profiler_enabled,%.0f,%.0f\n", before, after);
        check_fault(&be, &k);
    }
    if (be.ops)
        be.ops->destroy(be.state);
    if (csv)
        fclose(csv);
    printf("\nbackend-check: %d failed checks, %.1f s\n", bc_failures, seconds() - t0);
    return bc_failures ? 1 : 0;
}
