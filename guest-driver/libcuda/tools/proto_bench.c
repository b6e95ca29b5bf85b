/* kernelet-proto-bench: what the path from a CUDA program to the GPU costs, through the
 * Driver API. Run it against the real driver and against our libcuda (LD_LIBRARY_PATH)
 * with kerneletd, and compare (docs/perf/transport.md; tests/gpu/libcuda/run_proto_bench.sh).
 *
 *   sync launch round trip   an empty kernel launched and waited for, one at a time, on
 *                            the legacy default stream and on a stream of its own
 *   query round trip         cuStreamQuery of an idle stream: the transport and the daemon
 *                            without GPU work
 *   async launch rate        empty kernels launched back to back, then one wait
 *   H2D / D2H bandwidth      64 MiB copies from/to pageable memory (cuMemcpyHtoD/DtoH),
 *                            and from/to pinned memory (cuMemAllocHost)
 * Each figure is the median of --repeat runs after a warm-up. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        CUresult r_ = (call);                                                               \
        if (r_ != CUDA_SUCCESS) {                                                           \
            const char *n_ = "?";                                                           \
            cuGetErrorName(r_, &n_);                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, n_);              \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)

static const char empty_ptx[] = ".version 7.0\n.target sm_52\n.address_size 64\n"
                                ".visible .entry empty()\n{\n    ret;\n}\n";

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Microseconds per launch-and-wait on stream s, median over repeats of `iters` each. */
static double sync_round_trip(CUfunction f, CUstream s, int repeat, int iters)
{
    double *t = calloc((size_t)repeat, sizeof(*t));
    double m;

    for (int r = 0; r < repeat; r++) {
        double t0 = now_s();
        for (int i = 0; i < iters; i++) {
            CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
            CHECK(cuStreamSynchronize(s));
        }
        t[r] = (now_s() - t0) / iters * 1e6;
    }
    m = median(t, repeat);
    free(t);
    return m;
}

/* Microseconds per query of an idle stream: a request's round trip through the transport
 * and the daemon, with no GPU work (natively the driver answers it alone). */
static double query_round_trip(CUstream s, int repeat, int iters)
{
    double *t = calloc((size_t)repeat, sizeof(*t));
    double m;

    for (int r = 0; r < repeat; r++) {
        double t0 = now_s();
        for (int i = 0; i < iters; i++)
            CHECK(cuStreamQuery(s));
        t[r] = (now_s() - t0) / iters * 1e6;
    }
    m = median(t, repeat);
    free(t);
    return m;
}

/* Launches per second, median over repeats of `iters` launches then one wait. */
static double async_rate(CUfunction f, int repeat, int iters, double *submit_rate)
{
    double *t = calloc((size_t)repeat, sizeof(*t)), *s = calloc((size_t)repeat, sizeof(*s));
    double m;

    for (int r = 0; r < repeat; r++) {
        double t0 = now_s(), t1;
        for (int i = 0; i < iters; i++)
            CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        t1 = now_s();
        CHECK(cuCtxSynchronize());
        t[r] = iters / (now_s() - t0);
        s[r] = iters / (t1 - t0);
    }
    m = median(t, repeat);
    *submit_rate = median(s, repeat);
    free(t);
    free(s);
    return m;
}

/* GB/s (1e9 bytes) of `bytes` copies in one direction, median over repeats. */
static double bandwidth(CUdeviceptr d, void *host, size_t bytes, int to_device, int repeat)
{
    double *t = calloc((size_t)repeat, sizeof(*t));
    double m;

    for (int r = 0; r <= repeat; r++) { /* run 0 warms up */
        double t0 = now_s();
        if (to_device)
            CHECK(cuMemcpyHtoD(d, host, bytes));
        else
            CHECK(cuMemcpyDtoH(host, d, bytes));
        if (r)
            t[r - 1] = (double)bytes / (now_s() - t0) / 1e9;
    }
    m = median(t, repeat);
    free(t);
    return m;
}

int main(int argc, char **argv)
{
    const char *label = "run";
    int repeat = 11, iters = 2000, async_iters = 100000;
    size_t bytes = 64u << 20;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUdeviceptr d;
    char name[256];
    int driver = 0;

    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--label=", 8))
            label = argv[i] + 8;
        else if (!strncmp(argv[i], "--repeat=", 9))
            repeat = atoi(argv[i] + 9);
        else if (!strncmp(argv[i], "--iterations=", 13))
            iters = atoi(argv[i] + 13);
        else if (!strncmp(argv[i], "--launches=", 11))
            async_iters = atoi(argv[i] + 11);
        else if (!strncmp(argv[i], "--mib=", 6))
            bytes = (size_t)atoi(argv[i] + 6) << 20;
        else {
            fprintf(stderr, "usage: kernelet-proto-bench [--label=NAME] [--repeat=N] "
                            "[--iterations=N] [--launches=N] [--mib=N]\n");
            return 2;
        }
    }
    if (repeat < 1 || iters < 1 || async_iters < 1 || bytes == 0) {
        fprintf(stderr, "kernelet-proto-bench: counts must be positive\n");
        return 2;
    }
    CHECK(cuInit(0));
    CHECK(cuDriverGetVersion(&driver));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDeviceGetName(name, sizeof(name), dev));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, empty_ptx));
    CHECK(cuModuleGetFunction(&f, mod, "empty"));
    CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL)); /* warm-up */
    CHECK(cuCtxSynchronize());

    CUstream own;
    CHECK(cuStreamCreate(&own, CU_STREAM_NON_BLOCKING));
    double rt = sync_round_trip(f, NULL, repeat, iters), submit;
    double rt_own = sync_round_trip(f, own, repeat, iters);
    double query = query_round_trip(own, repeat, iters);
    double rate = async_rate(f, repeat, async_iters, &submit);

    void *pageable = malloc(bytes), *pinned;
    CHECK(cuMemAlloc(&d, bytes));
    CHECK(cuMemAllocHost(&pinned, bytes));
    memset(pageable, 1, bytes);
    memset(pinned, 1, bytes);
    double h2d = bandwidth(d, pageable, bytes, 1, repeat), d2h = bandwidth(d, pageable, bytes, 0, repeat);
    double h2d_p = bandwidth(d, pinned, bytes, 1, repeat), d2h_p = bandwidth(d, pinned, bytes, 0, repeat);

    printf("# kernelet-proto-bench %s: %s, driver %d, median of %d\n", label, name, driver, repeat);
    printf("RESULT label=%s sync_launch_us=%.2f async_launches_per_s=%.0f "
           "async_submits_per_s=%.0f h2d_pageable_gbs=%.2f d2h_pageable_gbs=%.2f "
           "h2d_pinned_gbs=%.2f d2h_pinned_gbs=%.2f copy_mib=%zu sync_launch_stream_us=%.2f "
           "query_us=%.2f\n",
           label, rt, rate, submit, h2d, d2h, h2d_p, d2h_p, bytes >> 20, rt_own, query);
    CHECK(cuStreamDestroy(own));
    CHECK(cuMemFreeHost(pinned));
    CHECK(cuMemFree(d));
    free(pageable);
    CHECK(cuModuleUnload(mod));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
