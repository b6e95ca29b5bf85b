/* driver-rates: what the CUDA driver itself charges for the calls kerneletd's cuda backend
 * makes per launch, measured natively with an empty kernel, so that the daemon's async
 * launch rate and sync round trip can be held against the driver's own floor
 * (docs/perf/transport.md). A tool for GPU rounds, not a test.
 *
 *   driver-rates [LAUNCHES]        one table row per way of launching, on stdout
 *
 * Async rows: LAUNCHES launches issued back to back, then one synchronize; the rate is
 * launches per second of host time. Sync rows: launch, then wait for that launch, repeated;
 * the median round trip. "polled" rows add a second thread that queries the oldest
 * outstanding end event a microsecond apart, as kerneletd's completion thread does. */
#include "kw_cuda.h"

#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call, what) kwc_or_exit((call), "driver-rates", (what))

#define RING 1024
#define REPEATS 3
#define SYNC_TRIPS 2000

static const char nop_ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                              ".visible .entry nop()\n{\n\tret;\n}\n";

typedef struct rates {
    CUfunction fn;
    CUstream streams[4];
    CUevent start[RING], end[RING];
    unsigned timing_flags;      /* CU_EVENT_DEFAULT or CU_EVENT_DISABLE_TIMING */
    volatile long issued;       /* launches issued so far (the poller reads it) */
    volatile int stop;
} rates;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The ways of launching one kernel; each is what one kerneletd configuration does. */
enum way { LAUNCH_ONLY, WITH_END, WITH_START_END };

static void launch_one(rates *R, enum way w, long i, int nstreams)
{
    CUstream s = R->streams[i % nstreams];
    if (w == WITH_START_END)
        CHECK(cuEventRecord(R->start[i % RING], s), "cuEventRecord");
    CHECK(cuLaunchKernel(R->fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL), "cuLaunchKernel");
    if (w != LAUNCH_ONLY)
        CHECK(cuEventRecord(R->end[i % RING], s), "cuEventRecord");
    __atomic_store_n(&R->issued, i + 1, __ATOMIC_RELEASE);
}

/* Queries the oldest end event not yet seen done, a microsecond between queries. */
static void *poller(void *arg)
{
    rates *R = arg;
    long done = 0;
    while (!__atomic_load_n(&R->stop, __ATOMIC_ACQUIRE)) {
        long issued = __atomic_load_n(&R->issued, __ATOMIC_ACQUIRE);
        if (done < issued && cuEventQuery(R->end[done % RING]) == CUDA_SUCCESS)
            done++;
        for (double until = now_s() + 1e-6; now_s() < until;) {
        }
    }
    return NULL;
}

static double async_rate(rates *R, enum way w, long n, int nstreams, int polled)
{
    CUcontext ctx;
    CHECK(cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
    pthread_t th;
    R->issued = 0;
    R->stop = 0;
    if (polled && pthread_create(&th, NULL, poller, R) != 0)
        exit(1);
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        /* The ring's events are recorded again only after their previous launch ended. */
        if (i >= RING && w != LAUNCH_ONLY)
            CHECK(cuEventSynchronize(R->end[(i - RING) % RING]), "cuEventSynchronize");
        launch_one(R, w, i, nstreams);
    }
    CHECK(cuCtxSynchronize(), "cuCtxSynchronize");
    double t = now_s() - t0;
    __atomic_store_n(&R->stop, 1, __ATOMIC_RELEASE);
    if (polled)
        pthread_join(th, NULL);
    return (double)n / t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median round trip in microseconds: launch, then wait by SYNC (0 stream sync, 1 poll the
 * end event with cuEventQuery, 2 cuEventSynchronize). */
static double sync_trip_us(rates *R, enum way w, int how)
{
    static double t[SYNC_TRIPS];
    for (int i = 0; i < SYNC_TRIPS; i++) {
        double t0 = now_s();
        launch_one(R, w, i, 1);
        if (how == 0)
            CHECK(cuStreamSynchronize(R->streams[0]), "cuStreamSynchronize");
        else if (how == 1)
            while (cuEventQuery(R->end[i % RING]) == CUDA_ERROR_NOT_READY) {
            }
        else
            CHECK(cuEventSynchronize(R->end[i % RING]), "cuEventSynchronize");
        t[i] = (now_s() - t0) * 1e6;
    }
    qsort(t, SYNC_TRIPS, sizeof(t[0]), cmp_double);
    return t[SYNC_TRIPS / 2];
}

static void make_events(rates *R, unsigned flags)
{
    for (int i = 0; i < RING; i++) {
        if (R->start[i])
            cuEventDestroy(R->start[i]), cuEventDestroy(R->end[i]);
        CHECK(cuEventCreate(&R->start[i], flags), "cuEventCreate");
        CHECK(cuEventCreate(&R->end[i], flags), "cuEventCreate");
    }
    R->timing_flags = flags;
}

static void async_row(rates *R, const char *name, enum way w, long n, int nstreams, int polled)
{
    double best = 0, r[REPEATS];
    for (int k = 0; k < REPEATS; k++) {
        r[k] = async_rate(R, w, n, nstreams, polled);
        best = r[k] > best ? r[k] : best;
    }
    qsort(r, REPEATS, sizeof(r[0]), cmp_double);
    printf("| async | %s | %s | %d | %s | %.0f | %.0f |\n", name,
           R->timing_flags == CU_EVENT_DEFAULT ? "timing" : "no timing", nstreams,
           polled ? "yes" : "no", r[REPEATS / 2], best);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    static rates R;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CHECK(cuInit(0), "cuInit");
    CHECK(cuDeviceGet(&dev, 0), "cuDeviceGet");
    CHECK(cuDevicePrimaryCtxSetFlags(dev, CU_CTX_SCHED_SPIN), "cuDevicePrimaryCtxSetFlags");
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    CHECK(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    CHECK(cuModuleLoadData(&mod, nop_ptx), "cuModuleLoadData");
    CHECK(cuModuleGetFunction(&R.fn, mod, "nop"), "cuModuleGetFunction");
    for (int i = 0; i < 4; i++)
        CHECK(cuStreamCreate(&R.streams[i], CU_STREAM_NON_BLOCKING), "cuStreamCreate");

    printf("| kind | calls per launch | events | streams | polled | median /s | best /s |\n");
    printf("|---|---|---|---|---|---|---|\n");
    make_events(&R, CU_EVENT_DEFAULT);
    async_rate(&R, WITH_START_END, 2000, 1, 0);     /* warm-up */
    async_row(&R, "launch", LAUNCH_ONLY, n, 1, 0);
    async_row(&R, "launch + end event", WITH_END, n, 1, 0);
    async_row(&R, "start + launch + end", WITH_START_END, n, 1, 0);
    async_row(&R, "start + launch + end", WITH_START_END, n, 1, 1);
    async_row(&R, "start + launch + end", WITH_START_END, n, 4, 1);
    async_row(&R, "launch", LAUNCH_ONLY, n, 1, 1);
    make_events(&R, CU_EVENT_DISABLE_TIMING);
    async_row(&R, "launch + end event", WITH_END, n, 1, 0);
    async_row(&R, "launch + end event", WITH_END, n, 1, 1);

    printf("\n| kind | calls per launch | events | wait | median round trip us |\n");
    printf("|---|---|---|---|---|\n");
    static const char *waits[] = {"cuStreamSynchronize", "cuEventQuery spin",
                                  "cuEventSynchronize"};
    for (int timing = 0; timing < 2; timing++) {
        make_events(&R, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
        for (int how = 0; how < 3; how++)
            for (enum way w = LAUNCH_ONLY; w <= WITH_START_END; w++) {
                if (how && w == LAUNCH_ONLY)
                    continue;
                static const char *names[] = {"launch", "launch + end event",
                                              "start + launch + end"};
                printf("| sync | %s | %s | %s | %.1f |\n", names[w],
                       timing ? "timing" : "no timing", waits[how], sync_trip_us(&R, w, how));
            }
    }
    return 0;
}
