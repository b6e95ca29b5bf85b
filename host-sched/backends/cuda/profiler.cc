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

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

namespace {

/* Order matters: kprof_measure reads the values back by these indexes. */
enum metric_index {
    M_INST,
    M_GLD, M_GST, M_GRED, M_GATOM, M_LLD, M_LST,
    M_REQ_LD, M_REQ_ST, M_SEC_LD, M_SEC_ST, M_L2_MISS,
    M_DRAM_RD, M_DRAM_WR,
    M_CYCLES,
    M_DURATION,
    M_COUNT
};

const char *const metric_names[M_COUNT + 1] = {
    "sm__inst_executed.sum",
    "smsp__inst_executed_op_global_ld.sum",
    "smsp__inst_executed_op_global_st.sum",
    "smsp__inst_executed_op_global_red.sum",
    "smsp__inst_executed_op_global_atom.sum",
    "smsp__inst_executed_op_local_ld.sum",
    "smsp__inst_executed_op_local_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    /* sectors from L1 that missed L2: the DRAM-reaching share of the model's Rm */
    "lts__t_sectors_srcunit_tex_lookup_miss.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__cycles_elapsed.avg",
    "gpu__time_duration.sum",
    nullptr,
};

} // namespace

struct kprof {
    CUcontext ctx;
    CUpti_RangeProfiler_Object *range;
    CUpti_Profiler_Host_Object *host;
    uint8_t *config;
    size_t config_size;
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

/* Adds the metrics one by one so that an unknown name is reported by name. */
static int add_metrics(kprof *p, char *msg, size_t msglen)
{
    for (int i = 0; i < M_COUNT; i++) {
        CUpti_Profiler_Host_ConfigAddMetrics_Params a = {};
        a.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
        a.pHostObject = p->host;
        const char *name = metric_names[i];
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
    p->host = hi.pHostObject;

    int rc = add_metrics(p, msg, msglen);
    if (rc)
        return rc;
    CUpti_Profiler_Host_GetConfigImageSize_Params sz = {};
    sz.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    sz.pHostObject = p->host;
    CUPTI_TRY(cuptiProfilerHostGetConfigImageSize(&sz), "config image size");
    p->config = static_cast<uint8_t *>(malloc(sz.configImageSize));
    if (!p->config)
        return fail(msg, msglen, KPROF_ENOMEM, "out of memory");
    p->config_size = sz.configImageSize;
    CUpti_Profiler_Host_GetConfigImage_Params im = {};
    im.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    im.pHostObject = p->host;
    im.configImageSize = p->config_size;
    im.pConfigImage = p->config;
    CUPTI_TRY(cuptiProfilerHostGetConfigImage(&im), "config image");
    return KPROF_OK;
}

static int counter_data_size(kprof *p, char *msg, size_t msglen)
{
    CUpti_RangeProfiler_GetCounterDataSize_Params s = {};
    s.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
    s.pRangeProfilerObject = p->range;
    s.pMetricNames = const_cast<const char **>(metric_names);
    s.numMetrics = M_COUNT;
    s.maxNumOfRanges = 1;
    s.maxNumRangeTreeNodes = 1;
    CUPTI_TRY(cuptiRangeProfilerGetCounterDataSize(&s), "counter data size");
    p->counter_data_size = s.counterDataSize;
    return KPROF_OK;
}

static int enable_on_context(kprof *p, int device, char *msg, size_t msglen)
{
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

    uint8_t *avail = nullptr;
    int rc = counter_availability(p->ctx, &avail, msg, msglen);
    if (rc == KPROF_OK)
        rc = build_config(p, chip.pChipName, avail, msg, msglen);
    free(avail);
    if (rc == KPROF_OK)
        rc = counter_data_size(p, msg, msglen);
    return rc;
}

extern "C" int kprof_open(CUcontext ctx, int device, kprof **out, char *msg, size_t msglen)
{
    if (!ctx || !out)
        return fail(msg, msglen, KPROF_EINVAL, "NULL context or result pointer");
    *out = nullptr;
    kprof *p = static_cast<kprof *>(calloc(1, sizeof *p));
    if (!p)
        return fail(msg, msglen, KPROF_ENOMEM, "out of memory");
    p->ctx = ctx;
    int rc = enable_on_context(p, device, msg, msglen);
    if (rc) {
        kprof_close(p);
        return rc;
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
    sc.configSize = p->config_size;
    sc.pConfig = p->config;
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

static int evaluate(kprof *p, const uint8_t *counter_data, double values[M_COUNT], char *msg,
                    size_t msglen)
{
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {};
    ev.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    ev.pHostObject = p->host;
    ev.pCounterDataImage = counter_data;
    ev.counterDataImageSize = p->counter_data_size;
    ev.rangeIndex = 0;
    ev.ppMetricNames = const_cast<const char **>(metric_names);
    ev.numMetrics = M_COUNT;
    ev.pMetricValues = values;
    CUPTI_TRY(cuptiProfilerHostEvaluateToGpuValues(&ev), "evaluate");
    return KPROF_OK;
}

static void fill_counters(const double v[M_COUNT], kprof_counters *out)
{
    out->warp_insts = v[M_INST];
    out->mem_insts = v[M_GLD] + v[M_GST] + v[M_GRED] + v[M_GATOM] + v[M_LLD] + v[M_LST];
    out->global_requests = v[M_REQ_LD] + v[M_REQ_ST];
    out->global_sectors = v[M_SEC_LD] + v[M_SEC_ST];
    out->l2_miss_sectors = v[M_L2_MISS];
    out->dram_read_bytes = v[M_DRAM_RD];
    out->dram_write_bytes = v[M_DRAM_WR];
    out->sm_cycles = v[M_CYCLES];
    out->duration_ns = v[M_DURATION];
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
    double values[M_COUNT] = {0};
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

extern "C" const char *const *kprof_metric_names(void)
{
    return metric_names;
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
    if (p->host) {
        CUpti_Profiler_Host_Deinitialize_Params d = {};
        d.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
        d.pHostObject = p->host;
        cuptiProfilerHostDeinitialize(&d);
    }
    free(p->config);
    free(p);
}
