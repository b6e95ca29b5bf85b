/* The CUPTI range profiler behind kprof_measure (see profiler.h).
 *
 * C++ only because CUDA 13's cupti_profiler_host.h includes <string>; the code is C in
 * style and exports a C API. One kprof holds the host-side configuration (metrics turned
 * into a config image once) and the range profiler enabled on its context; each
 * measurement initialises a fresh counter-data image, runs the launch as one auto range
 * with kernel replay (CUPTI replays it as many passes as the metrics need and restores
 * device memory in between), decodes and evaluates the metrics.
 */
#include "profiler.h"
#include "profiler_metrics.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

/* What the host side of CUPTI makes for a chip (the metrics' configuration), which needs
 * no context: kept between profiles it spares each one ~150 ms on the H100. */
struct kprof_setup {
    kprof_metric_choice choice;
    const char *names[KPROF_Q_COUNT];   /* the chosen names, packed */
    kprof_quantity quantity[KPROF_Q_COUNT]; /* names[i] measures quantity[i] */
    size_t n_names;
    CUpti_Profiler_Host_Object *host;
    uint8_t *config;
    size_t config_size;
    size_t passes;                      /* kernel replays per measurement, 0: unknown */
};

struct kprof {
    CUcontext ctx;
    kprof_setup *s;                     /* own_setup, or the caller's kept one */
    kprof_setup *own_setup;             /* freed with the profiler */
    CUpti_RangeProfiler_Object *range;
    double open_ms[KPROF_OPEN_STAGES];  /* how long each stage of kprof_open took */
    size_t counter_data_size;
};

static int fail(char *msg, size_t msglen, int code, const char *fmt, ...)
{
    if (msg && msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static const char *cupti_text(CUptiResult r)
{
    const char *s = nullptr;
    cuptiGetResultString(r, &s);
    return s ? s : "unknown CUPTI error";
}

#define CUPTI_TRY(call, what)                                                              \
    do {                                                                                   \
        CUptiResult r_ = (call);                                                           \
        if (r_ != CUPTI_SUCCESS)                                                           \
            return fail(msg, msglen, KPROF_ECUPTI, "%s: %s", what, cupti_text(r_));        \
    } while (0)

/* Counter availability of the context: which counters this GPU and driver let us read. */
static int counter_availability(CUcontext ctx, uint8_t **image, char *msg, size_t msglen)
{
    CUpti_Profiler_GetCounterAvailability_Params p = {};
    p.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
    p.ctx = ctx;
    CUPTI_TRY(cuptiProfilerGetCounterAvailability(&p), "counter availability size");
    *image = static_cast<uint8_t *>(malloc(p.counterAvailabilityImageSize));
    if (!*image)
        return fail(msg, msglen, KPROF_ENOMEM, "out of memory");
    p.pCounterAvailabilityImage = *image;
    CUPTI_TRY(cuptiProfilerGetCounterAvailability(&p), "counter availability");
    return KPROF_OK;
}

/* CUPTI's answer for one name: a metric this chip lacks is INVALID_METRIC_NAME. */
static int metric_supported(const char *name, void *host)
{
    CUpti_Profiler_Host_GetMetricProperties_Params mp = {};
    mp.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
    mp.pHostObject = static_cast<CUpti_Profiler_Host_Object *>(host);
    mp.pMetricName = name;
    return cuptiProfilerHostGetMetricProperties(&mp) == CUPTI_SUCCESS;
}

/* Chooses the chip's names for every quantity and packs them for the calls below. */
static int choose_metrics(kprof *p, char *msg, size_t msglen)
{
    if (kprof_choose_metrics(metric_supported, p->s->host, &p->s->choice, msg, msglen))
        return KPROF_ECUPTI;
    p->s->n_names = 0;
    for (int q = 0; q < KPROF_Q_COUNT; q++)
        if (p->s->choice.name[q]) {
            p->s->names[p->s->n_names] = p->s->choice.name[q];
            p->s->quantity[p->s->n_names++] = static_cast<kprof_quantity>(q);
        }
    return KPROF_OK;
}

/* Adds the metrics one by one so that a name CUPTI still refuses is reported by name. */
static int add_metrics(kprof *p, char *msg, size_t msglen)
{
    for (size_t i = 0; i < p->s->n_names; i++) {
        CUpti_Profiler_Host_ConfigAddMetrics_Params a = {};
        a.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
        a.pHostObject = p->s->host;
        const char *name = p->s->names[i];
        a.ppMetricNames = &name;
        a.numMetrics = 1;
        CUptiResult r = cuptiProfilerHostConfigAddMetrics(&a);
        if (r != CUPTI_SUCCESS)
            return fail(msg, msglen, KPROF_ECUPTI, "metric %s: %s", name, cupti_text(r));
    }
    return KPROF_OK;
}

static int build_config(kprof *p, const char *chip, const uint8_t *avail, char *msg,
                        size_t msglen)
{
    CUpti_Profiler_Host_Initialize_Params hi = {};
    hi.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = chip;
    hi.pCounterAvailabilityImage = avail;
    CUPTI_TRY(cuptiProfilerHostInitialize(&hi), "host initialise");
    p->s->host = hi.pHostObject;

    int rc = choose_metrics(p, msg, msglen);
    if (rc == KPROF_OK)
        rc = add_metrics(p, msg, msglen);
    if (rc)
        return rc;
    CUpti_Profiler_Host_GetConfigImageSize_Params sz = {};
    sz.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    sz.pHostObject = p->s->host;
    CUPTI_TRY(cuptiProfilerHostGetConfigImageSize(&sz), "config image size");
    p->s->config = static_cast<uint8_t *>(malloc(sz.configImageSize));
    if (!p->s->config)
        return fail(msg, msglen, KPROF_ENOMEM, "out of memory");
    p->s->config_size = sz.configImageSize;
    CUpti_Profiler_Host_GetConfigImage_Params im = {};
    im.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    im.pHostObject = p->s->host;
    im.configImageSize = p->s->config_size;
    im.pConfigImage = p->s->config;
    CUPTI_TRY(cuptiProfilerHostGetConfigImage(&im), "config image");
    CUpti_Profiler_Host_GetNumOfPasses_Params np = {};
    np.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
    np.configImageSize = p->s->config_size;
    np.pConfigImage = p->s->config;
    p->s->passes = cuptiProfilerHostGetNumOfPasses(&np) == CUPTI_SUCCESS ? np.numOfPasses : 0;
    return KPROF_OK;
}

size_t kprof_passes(const kprof *p)
{
    return p && p->s ? p->s->passes : 0;
}

static int counter_data_size(kprof *p, char *msg, size_t msglen)
{
    CUpti_RangeProfiler_GetCounterDataSize_Params s = {};
    s.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
    s.pRangeProfilerObject = p->range;
    s.pMetricNames = p->s->names;
    s.numMetrics = p->s->n_names;
    s.maxNumOfRanges = 1;
    s.maxNumRangeTreeNodes = 1;
    CUPTI_TRY(cuptiRangeProfilerGetCounterDataSize(&s), "counter data size");
    p->counter_data_size = s.counterDataSize;
    return KPROF_OK;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* The range profiler on p's context; the host setup too unless p->s already has one. */
static int enable_on_context(kprof *p, int device, char *msg, size_t msglen)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CUpti_Profiler_Initialize_Params init = {};
    init.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
    CUPTI_TRY(cuptiProfilerInitialize(&init), "profiler initialise");

    CUpti_Device_GetChipName_Params chip = {};
    chip.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    chip.deviceIndex = static_cast<size_t>(device);
    CUPTI_TRY(cuptiDeviceGetChipName(&chip), "chip name");

    CUpti_RangeProfiler_Enable_Params en = {};
    en.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
    en.ctx = p->ctx;
    CUPTI_TRY(cuptiRangeProfilerEnable(&en), "range profiler enable");
    p->range = en.pRangeProfilerObject;
    p->open_ms[0] = ms_since(&t0);

    int rc = KPROF_OK;
    if (!p->s->config) {
        uint8_t *avail = nullptr;
        rc = counter_availability(p->ctx, &avail, msg, msglen);
        p->open_ms[1] = ms_since(&t0) - p->open_ms[0];
        if (rc == KPROF_OK)
            rc = build_config(p, chip.pChipName, avail, msg, msglen);
        free(avail);
        p->open_ms[2] = ms_since(&t0) - p->open_ms[0] - p->open_ms[1];
    }
    if (rc == KPROF_OK)
        rc = counter_data_size(p, msg, msglen);
    p->open_ms[3] = ms_since(&t0) - p->open_ms[0] - p->open_ms[1] - p->open_ms[2];
    return rc;
}

void kprof_open_stages(const kprof *p, double ms[KPROF_OPEN_STAGES])
{
    for (int i = 0; i < KPROF_OPEN_STAGES; i++)
        ms[i] = p ? p->open_ms[i] : 0;
}

extern "C" void kprof_setup_free(kprof_setup *s)
{
    if (!s)
        return;
    if (s->host) {
        CUpti_Profiler_Host_Deinitialize_Params d = {};
        d.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
        d.pHostObject = s->host;
        cuptiProfilerHostDeinitialize(&d);
    }
    free(s->config);
    free(s);
}

extern "C" int kprof_open(CUcontext ctx, int device, kprof_setup **keep, kprof **out,
                          char *msg, size_t msglen)
{
    if (!ctx || !out)
        return fail(msg, msglen, KPROF_EINVAL, "NULL context or result pointer");
    *out = nullptr;
    kprof *p = static_cast<kprof *>(calloc(1, sizeof *p));
    if (!p)
        return fail(msg, msglen, KPROF_ENOMEM, "out of memory");
    p->ctx = ctx;
    p->s = keep && *keep ? *keep : static_cast<kprof_setup *>(calloc(1, sizeof *p->s));
    if (!p->s) {
        free(p);
        return fail(msg, msglen, KPROF_ENOMEM, "out of memory");
    }
    bool fresh = !(keep && *keep);
    if (fresh)
        p->own_setup = p->s;
    int rc = enable_on_context(p, device, msg, msglen);
    if (rc) {
        kprof_close(p);
        return rc;
    }
    if (fresh && keep) {        /* the caller keeps it from now on */
        *keep = p->s;
        p->own_setup = nullptr;
    }
    *out = p;
    return KPROF_OK;
}

static int configure(kprof *p, uint8_t *counter_data, char *msg, size_t msglen)
{
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci = {};
    ci.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    ci.pRangeProfilerObject = p->range;
    ci.counterDataSize = p->counter_data_size;
    ci.pCounterData = counter_data;
    CUPTI_TRY(cuptiRangeProfilerCounterDataImageInitialize(&ci), "counter data init");

    CUpti_RangeProfiler_SetConfig_Params sc = {};
    sc.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    sc.pRangeProfilerObject = p->range;
    sc.configSize = p->s->config_size;
    sc.pConfig = p->s->config;
    sc.counterDataImageSize = p->counter_data_size;
    sc.pCounterDataImage = counter_data;
    sc.range = CUPTI_AutoRange;
    sc.replayMode = CUPTI_KernelReplay;
    sc.maxRangesPerPass = 1;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    CUPTI_TRY(cuptiRangeProfilerSetConfig(&sc), "set config");
    return KPROF_OK;
}

static int run_launch(kprof *p, CUfunction f, const unsigned grid[3], const unsigned block[3],
                      unsigned smem, void **params, void **extra, char *msg, size_t msglen)
{
    CUpti_RangeProfiler_Start_Params st = {};
    st.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
    st.pRangeProfilerObject = p->range;
    CUPTI_TRY(cuptiRangeProfilerStart(&st), "start");
    CUresult cr = cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                 smem, nullptr, params, extra);
    if (cr == CUDA_SUCCESS)
        cr = cuCtxSynchronize();
    CUpti_RangeProfiler_Stop_Params sp = {};
    sp.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
    sp.pRangeProfilerObject = p->range;
    CUptiResult stop = cuptiRangeProfilerStop(&sp);
    if (cr != CUDA_SUCCESS) {
        const char *name = "?";
        cuGetErrorName(cr, &name);
        return fail(msg, msglen, KPROF_ECUDA, "launch: %s", name);
    }
    if (stop != CUPTI_SUCCESS)
        return fail(msg, msglen, KPROF_ECUPTI, "stop: %s", cupti_text(stop));
    if (!sp.isAllPassSubmitted)
        return fail(msg, msglen, KPROF_ECUPTI, "kernel replay did not submit every pass");
    CUpti_RangeProfiler_DecodeData_Params dd = {};
    dd.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    dd.pRangeProfilerObject = p->range;
    CUPTI_TRY(cuptiRangeProfilerDecodeData(&dd), "decode");
    if (dd.numOfRangeDropped)
        return fail(msg, msglen, KPROF_ECUPTI, "%zu ranges dropped", dd.numOfRangeDropped);
    return KPROF_OK;
}

static int evaluate(kprof *p, const uint8_t *counter_data, double values[KPROF_Q_COUNT], char *msg,
                    size_t msglen)
{
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {};
    ev.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    ev.pHostObject = p->s->host;
    ev.pCounterDataImage = counter_data;
    ev.counterDataImageSize = p->counter_data_size;
    ev.rangeIndex = 0;
    ev.ppMetricNames = p->s->names;
    ev.numMetrics = p->s->n_names;
    double packed[KPROF_Q_COUNT] = {0};
    ev.pMetricValues = packed;
    CUPTI_TRY(cuptiProfilerHostEvaluateToGpuValues(&ev), "evaluate");
    for (size_t i = 0; i < p->s->n_names; i++)    /* quantities left out stay 0 */
        values[p->s->quantity[i]] = packed[i];
    return KPROF_OK;
}

static void fill_counters(const double v[KPROF_Q_COUNT], kprof_counters *out)
{
    out->warp_insts = v[KPROF_Q_INST];
    out->mem_insts = v[KPROF_Q_GLOBAL_LD] + v[KPROF_Q_GLOBAL_ST] + v[KPROF_Q_GLOBAL_RED] +
                     v[KPROF_Q_GLOBAL_ATOM] + v[KPROF_Q_LOCAL_LD] + v[KPROF_Q_LOCAL_ST];
    out->global_requests = v[KPROF_Q_REQUESTS_LD] + v[KPROF_Q_REQUESTS_ST];
    out->global_sectors = v[KPROF_Q_SECTORS_LD] + v[KPROF_Q_SECTORS_ST];
    out->l2_miss_sectors = v[KPROF_Q_L2_MISS_SECTORS];
    out->dram_read_bytes = v[KPROF_Q_DRAM_READ];
    out->dram_write_bytes = v[KPROF_Q_DRAM_WRITE];
    out->sm_cycles = v[KPROF_Q_CYCLES];
    out->duration_ns = v[KPROF_Q_DURATION];
}

extern "C" int kprof_measure(kprof *p, CUfunction f, const unsigned grid[3],
                             const unsigned block[3], unsigned smem_bytes, void **params,
                             void **extra, kprof_counters *out, char *msg, size_t msglen)
{
    if (!p || !f || !grid || !block || !out)
        return fail(msg, msglen, KPROF_EINVAL, "NULL argument");
    if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2])
        return fail(msg, msglen, KPROF_EINVAL, "empty grid or block");
    uint8_t *data = static_cast<uint8_t *>(calloc(1, p->counter_data_size));
    if (!data)
        return fail(msg, msglen, KPROF_ENOMEM, "out of memory");
    double values[KPROF_Q_COUNT] = {0};
    int rc = configure(p, data, msg, msglen);
    if (rc == KPROF_OK)
        rc = run_launch(p, f, grid, block, smem_bytes, params, extra, msg, msglen);
    if (rc == KPROF_OK)
        rc = evaluate(p, data, values, msg, msglen);
    if (rc == KPROF_OK)
        fill_counters(values, out);
    free(data);
    return rc;
}

extern "C" size_t kprof_describe(const kprof *p, char *buf, size_t len)
{
    return kprof_describe_choice(p && p->s ? &p->s->choice : nullptr, buf, len);
}

extern "C" int kprof_each_base_metric(kprof *p, void (*fn)(const char *name, void *ctx),
                                      void *ctx, char *msg, size_t msglen)
{
    if (!p || !p->s || !p->s->host || !fn)
        return fail(msg, msglen, KPROF_EINVAL, "NULL argument");
    for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; t++) {
        CUpti_Profiler_Host_GetBaseMetrics_Params bm = {};
        bm.structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE;
        bm.pHostObject = p->s->host;
        bm.metricType = static_cast<CUpti_MetricType>(t);
        CUPTI_TRY(cuptiProfilerHostGetBaseMetrics(&bm), "base metrics");
        for (size_t i = 0; i < bm.numMetrics; i++)
            fn(bm.ppMetricNames[i], ctx);
    }
    return KPROF_OK;
}

extern "C" void kprof_close(kprof *p)
{
    if (!p)
        return;
    if (p->range) {
        CUpti_RangeProfiler_Disable_Params d = {};
        d.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
        d.pRangeProfilerObject = p->range;
        cuptiRangeProfilerDisable(&d);
    }
    kprof_setup_free(p->own_setup);
    free(p);
}
