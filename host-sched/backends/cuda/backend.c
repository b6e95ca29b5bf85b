/* The cuda backend: creation, device description, teardown and the ops table
 * (see cuda_backend.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend_internal.h"
#include "device_attrs.h"

/* NAME's value when it is a number in [0, max], else dflt. */
static unsigned env_unsigned(const char *name, unsigned max, unsigned dflt)
{
    const char *v = getenv(name);
    char *end;
    long n = v ? strtol(v, &end, 10) : -1;
    return v && *v && !*end && n >= 0 && n <= (long)max ? (unsigned)n : dflt;
}

void kcuda_config_default(kcuda_config *c)
{
    if (!c)
        return;
    memset(c, 0, sizeof(*c));
    /* A program's streams run side by side natively (32 at once on the H100,
     * compat/streams_concurrent); 24 lanes and the backend's eight other streams (copy
     * queues, allocation, control, trials) fit the 32 hardware queues kerneletd asks for
     * (CUDA_DEVICE_MAX_CONNECTIONS), so that no lane waits behind another's work. */
    c->lanes = 24;
    c->measure_overhead = 1;
    c->slice_overhead_bound = 0.02;
    c->blocking_sync = 1;
    c->window_bytes = KBACKEND_WINDOW_DEFAULT;
    const char *waves = getenv("KERNELET_CUDA_WAVES");
    c->cap_by_waves = !(waves && !strcmp(waves, "0"));
    c->timed_events = getenv("KERNELET_CUDA_TIMELINE") != NULL;
    const char *carveout = getenv("KERNELET_CUDA_CARVEOUT");
    char *end;
    long pct = carveout ? strtol(carveout, &end, 10) : -1;
    c->carveout = carveout && (*end || pct < 0 || pct > 100) ? -1 : (int)pct;
    const char *prof = getenv("KERNELET_CUDA_PROFILER");
    c->keep_profiler = prof && !strcmp(prof, "keep");
    const char *latency = getenv("KERNELET_LATENCY");
    c->profile_times = latency && *latency && *latency != '0';    /* as the server reads it */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    c->spin_us = env_unsigned("KERNELET_CUDA_SPIN_US", 100000, cores >= 4 ? 1000 : 0);
    c->idle_spin_us = env_unsigned("KERNELET_CUDA_IDLE_SPIN_US", 100000, cores >= 4 ? 50 : 0);
    c->stack_bytes = env_unsigned("KERNELET_CUDA_STACK_BYTES", 1u << 20, 4096);
    c->shared_end_short_ns = 200000;
    c->shared_end_max = c->timed_events ? 1 : env_unsigned("KERNELET_CUDA_SHARED_ENDS", 1024, 16);
    c->max_spinners = env_unsigned("KERNELET_CUDA_SPINNERS", 1024,
                                   cores >= 4 ? (unsigned)(cores / 4) : 0);
}

uint64_t kcuda_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t op_now_ns(void *state)
{
    (void)state;
    return kcuda_now();
}

int kcuda_cu_fail_as(kbackend_error *err, int code, CUresult r, const char *what)
{
    const char *name = "CUDA_ERROR_?", *text = "";
    cuGetErrorName(r, &name);
    cuGetErrorString(r, &text);
    return kbackend_fail(err, code, "%s: %s (%s)", what, name, text);
}

int kcuda_cu_fail(kbackend_error *err, CUresult r, const char *what)
{
    return kcuda_cu_fail_as(err, kcuda_error_code(r), r, what);
}

int kcuda_bind(kcuda *kc, kbackend_error *err)
{
    CUresult r = cuCtxSetCurrent(kc->ctx);
    return r == CUDA_SUCCESS ? 0 : kcuda_cu_fail(err, r, "cuCtxSetCurrent");
}

int kcuda_refuse_if_broken(kcuda *kc, kbackend_error *err)
{
    if (kc->cancelled)
        return kbackend_fail(err, KBACKEND_ELAUNCH, "cancelled: the device is shutting down");
    if (!kc->broken)
        return 0;
    return kbackend_fail(err, KBACKEND_ELOST, "context lost after %s: recreate the backend",
                      kc->broken_msg);
}

static int check_config(const kcuda_config *c, kbackend_error *err)
{
    if (c->device < 0)
        return kbackend_fail(err, KBACKEND_EINVAL, "device ordinal %d", c->device);
    if (c->carveout < -1 || c->carveout > 100)
        return kbackend_fail(err, KBACKEND_EINVAL, "carveout must be -1 or a percent");
    if (!c->lanes || c->lanes > KCUDA_MAX_LANES)
        return kbackend_fail(err, KBACKEND_EINVAL, "lanes must be in [1, %d]", KCUDA_MAX_LANES);
    if (!(c->slice_overhead_bound > 0 && c->slice_overhead_bound <= 0.5))
        return kbackend_fail(err, KBACKEND_EINVAL, "slice overhead bound must be in (0, 0.5]");
    return 0;
}

static int get_attr(void *user, CUdevice_attribute a, int *v)
{
    return cuDeviceGetAttribute(v, a, *(const CUdevice *)user) != CUDA_SUCCESS;
}

/* Driver, device and its primary context. */
static int open_device(kcuda *kc, kbackend_error *err)
{
    /* Lazy loading (CUDA 12's default) loads each function at its first launch: a tenant's
     * first slice, a profile or a trial would then time the load, and a daemon wants its
     * cost at module load, where the tenant waits for it anyway. An isolated worker takes
     * no profiles: it keeps the driver's lazy loading, which spares a framework's start the
     * loading of every function of the modules it loads (cuDNN loads ~900). An operator's
     * own setting wins (KERNELET_LOADING_SET says the daemon set it, not the operator).
     * Set before the first cuInit, which reads it. */
    const char *set = getenv("CUDA_MODULE_LOADING");
    if (!set || getenv("KERNELET_LOADING_SET")) {
        setenv("CUDA_MODULE_LOADING", kc->cfg.lazy_loading ? "LAZY" : "EAGER", 1);
        setenv("KERNELET_LOADING_SET", "1", 1);
    }
    /* Each lane, copy queue and the control stream on a hardware queue of its own: a
     * cancel written while a runaway kernel runs must not wait behind it in a shared one
     * (control.c). */
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
    CUresult r = cuInit(0);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail_as(err, KBACKEND_EDEVICE, r, "cuInit");
    if ((r = cuDeviceGet(&kc->dev, kc->cfg.device)) != CUDA_SUCCESS)
        return kcuda_cu_fail_as(err, KBACKEND_EDEVICE, r, "cuDeviceGet");
    /* Waiting threads sleep instead of spinning; a context already active keeps its flags. */
    cuDevicePrimaryCtxSetFlags(kc->dev, kc->cfg.blocking_sync ? CU_CTX_SCHED_BLOCKING_SYNC
                                                              : CU_CTX_SCHED_SPIN);
    if ((r = cuDevicePrimaryCtxRetain(&kc->ctx, kc->dev)) != CUDA_SUCCESS)
        return kcuda_cu_fail_as(err, KBACKEND_EDEVICE, r, "cuDevicePrimaryCtxRetain");
    kc->ctx_retained = 1;
    return kcuda_bind(kc, err);
}

static int describe_device(kcuda *kc, kbackend_error *err)
{
    kbackend_device_info *in = &kc->info;
    CUresult r = cuDeviceGetName(in->name, sizeof(in->name), kc->dev);
    size_t total = 0;
    if (r == CUDA_SUCCESS)
        r = cuDeviceTotalMem(&total, kc->dev);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail(err, r, "device name and memory");
    in->total_mem = total;
    int rc = kcuda_device_attrs(get_attr, &kc->dev, in, &kc->limits, err);
    if (rc)
        return rc;
    in->lanes = kc->limits.lanes = kc->cfg.lanes;
    in->virtual_time = 0;
    int pools = 0;
    kc->use_pool = cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                        kc->dev) == CUDA_SUCCESS && pools;
    return 0;
}

/* The model's view of the device, with the calibrated L0 when there is a calibration. */
static int model_and_calibration(kcuda *kc, kbackend_error *err)
{
    if (kc->cfg.calibration_dir) {
        kbackend_error ce = {0};
        int rc = kcuda_calibration_load(kc->cfg.calibration_dir, kc->info.name, &kc->calib, &ce);
        if (rc && rc != KBACKEND_ENOTFOUND)
            return kbackend_fail(err, rc, "calibration: %s", ce.msg);
        kc->calibrated = rc == 0;
    }
    kc->info.wave_launches = kc->cfg.cap_by_waves;    /* launch_waves in launch.c */
    kbackend_error ge = {0};
    if (kbackend_device_gpu(&kc->info, &kc->gpu, &ge))
        return kc->calibrated ? kbackend_fail(err, KBACKEND_EINVAL, "%s", ge.msg) : 0;
    if (kc->calibrated) {
        kc->gpu.mem_latency_cycles = kc->calib.l0_cycles;
        kc->info.model_gpu = &kc->gpu;
        kc->info.slice_overhead_ns = kc->calib.slice_overhead_ns;
    }
    if (kc->calibrated)
        kc->info.a0 = kc->calib.a0;     /* the scheduler's model takes it (device_a0) */
    return 0;
}

/* Freed memory stays in the pool for the next allocation instead of going back to the
 * driver at every synchronisation. */
static int setup_memory(kcuda *kc, kbackend_error *err)
{
    CUresult r = cuStreamCreate(&kc->alloc_stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS)
        return kcuda_cu_fail(err, r, "cuStreamCreate");
    CUmemoryPool pool;
    if (kc->use_pool && cuDeviceGetDefaultMemPool(&pool, kc->dev) == CUDA_SUCCESS) {
        cuuint64_t keep = UINT64_MAX;
        cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    }
    /* The driver puts module variables outside the windows; with windows, the backend
     * moves a tenant's .global ones into its window at load (module_reloc.c). */
    kc->info.module_vars_outside = 1;
    kc->info.module_vars_relocated = kc->cfg.window_bytes != 0;
    kc->info.launch_attrs = 1;
    /* allocations and frees take the backend's locks (kc->lock, the windows'): the
     * scheduler calls them without its own (memory.c) */
    kc->info.mem_unlocked = 1;
    /* so do module loads (module.c: the cache under kc->lock, a shared text loaded twice at
     * once kept once; module_reloc.c: the windows' lock; the driver's JIT is thread-safe
     * with the context current on the calling thread, kcuda_bind) */
    kc->info.module_unlocked = 1;
    /* and VMM's creations, mappings, unmappings and releases (vmm.c: the driver's calls, with the
     * context current on the calling thread; a new handle cleared on alloc_stream, as an
     * allocation's memory is; the reservations' table under kc->lock) */
    kc->info.vmm_unlocked = 1;
    if ((r = kcuda_stack_setup(kc)) != CUDA_SUCCESS)
        return kcuda_cu_fail(err, r, "cuCtxSetLimit (stack size)");
    if (!kc->cfg.window_bytes)
        return 0;
    int rc = kcuda_windows_new(kc->dev, kc->cfg.window_bytes, &kc->windows, err);
    return rc ? rc : kcuda_control_new(&kc->control, err);
}

static void destroy_events(kcuda_event_pool *pool)
{
    for (size_t i = 0; i < pool->n; i++)
        cuEventDestroy(pool->ev[i]);
}

static void kcuda_free_state(kcuda *kc)
{
    kcuda_queues_stop(kc);
    if (kc->prof)
        kprof_close(kc->prof);
    kprof_setup_free(kc->prof_setup);
    if (kc->ctx_retained) {
        cuCtxSetCurrent(kc->ctx);
        kcuda_measure_release(kc);
        kcuda_timeline_close(kc);
        kcuda_unload_all(kc);
        kcuda_free_all(kc);
        kcuda_windows_free(kc->windows);
        kcuda_control_free(kc->control);
        destroy_events(&kc->events);
        destroy_events(&kc->timing_events);
        if (kc->alloc_stream)
            cuStreamDestroy(kc->alloc_stream);
        cuDevicePrimaryCtxRelease(kc->dev);
        /* A lost context stays lost while anyone holds it: reset it for the next backend. */
        if (kc->broken)
            cuDevicePrimaryCtxReset(kc->dev);
    }
    kcuda_module_cache_free(kc->modules);
    kcuda_alloc_table_clear(&kc->allocs);
    kcuda_alloc_table_clear(&kc->vars);
    kcuda_alloc_table_clear(&kc->reserved);
    kcuda_alloc_table_clear(&kc->host_mapped);
    free(kc->events.ev);
    free(kc->timing_events.ev);
    pthread_cond_destroy(&kc->idle);
    pthread_mutex_destroy(&kc->lock);
    free(kc);
}

int kcuda_new(kcuda **out, const kcuda_config *cfg, kbackend_error *err)
{
    if (!out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    *out = NULL;
    kcuda_config def;
    if (!cfg) {
        kcuda_config_default(&def);
        cfg = &def;
    }
    int rc = check_config(cfg, err);
    if (rc)
        return rc;
    kcuda *kc = calloc(1, sizeof(*kc));
    if (!kc)
        return kbackend_fail(err, KBACKEND_ENOMEM, "out of host memory");
    kc->cfg = *cfg;
    kc->events.timing = cfg->timed_events;
    kc->timing_events.timing = 1;
    pthread_mutex_init(&kc->lock, NULL);
    pthread_cond_init(&kc->idle, NULL);
    rc = kcuda_module_cache_new(&kc->modules, err);
    if (!rc)
        rc = open_device(kc, err);
    if (!rc)
        rc = describe_device(kc, err);
    if (!rc)
        rc = model_and_calibration(kc, err);
    kc->cfg.calibration_dir = NULL;     /* read only here; the string is the caller's */
    if (!rc)
        rc = setup_memory(kc, err);
    if (!rc)
        kcuda_timeline_open(kc);
    if (!rc)
        rc = kcuda_queues_start(kc, err);
    if (!rc && !kc->info.slice_overhead_ns && kc->cfg.measure_overhead)
        rc = kcuda_measure_launch_overhead(kc, &kc->info.slice_overhead_ns, err);
    if (rc) {
        kcuda_free_state(kc);
        return rc;
    }
    *out = kc;
    return 0;
}

static void op_destroy(void *state)
{
    if (state)
        kcuda_free_state(state);
}

static int op_device_info(void *state, kbackend_device_info *out, kbackend_error *err)
{
    kcuda *kc = state;
    if (!out)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    *out = kc->info;
    return 0;
}

int kcuda_broken(kcuda *kc, char *msg, size_t msglen)
{
    if (!kc)
        return 0;
    pthread_mutex_lock(&kc->lock);
    int broken = kc->broken;
    if (broken && msg && msglen)
        snprintf(msg, msglen, "%s", kc->broken_msg);
    pthread_mutex_unlock(&kc->lock);
    return broken;
}

const kcuda_calibration *kcuda_calibration_of(const kcuda *kc)
{
    return kc && kc->calibrated ? &kc->calib : NULL;
}

void kcuda_get_stats(kcuda *kc, kcuda_stats *out)
{
    if (!kc || !out)
        return;
    pthread_mutex_lock(&kc->lock);
    *out = kc->stats;
    out->mem_in_use = kc->allocs.in_use;
    pthread_mutex_unlock(&kc->lock);
}

/* The daemon stops: every fenced kernel of every domain ends at its next poll, then the
 * device is waited for (briefly: an unfenced kernel that never ends cannot be stopped). */
static void op_cancel_all(void *state)
{
    kcuda *kc = state;
    pthread_mutex_lock(&kc->lock);
    kc->cancelled = 1;          /* new work is refused from now on */
    pthread_mutex_unlock(&kc->lock);
    if (kcuda_bind(kc, NULL))
        return;
    kcuda_control_cancel_all(kc->control);
    struct timespec until;      /* kc->idle keeps the default clock */
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&kc->lock);
    while (kc->in_flight && pthread_cond_timedwait(&kc->idle, &kc->lock, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&kc->lock);
}

static const kbackend_ops cuda_ops = {
    .name = "cuda",
    .destroy = op_destroy,
    .device_info = op_device_info,
    .now_ns = op_now_ns,
    .mem_alloc = kcuda_mem_alloc,
    .mem_free = kcuda_mem_free,
    .copy_h2d = kcuda_copy_h2d,
    .copy_d2h = kcuda_copy_d2h,
    .copy_d2d = kcuda_copy_d2d,
    .memset_d8 = kcuda_memset_d8,
    .module_load_ptx = kcuda_module_load_ptx,
    .module_unload = kcuda_module_unload,
    .function_get = kcuda_function_get,
    .launch = kcuda_launch,
    .profile = kcuda_profile,
    .trial = kcuda_trial,
    .progress = NULL,
    .global_get = kcuda_global_get,
    .module_load_cubin = kcuda_module_load_cubin,
    .domain_window = kcuda_domain_window,
    .domain_release = kcuda_domain_release,
    .domain_time_limit = kcuda_domain_time_limit,
    .host_register = kcuda_host_register,
    .host_unregister = kcuda_host_unregister,
    .vmm_reserve = kcuda_vmm_reserve,
    .vmm_free = kcuda_vmm_free,
    .vmm_create = kcuda_vmm_create,
    .vmm_release = kcuda_vmm_release,
    .vmm_map = kcuda_vmm_map,
    .vmm_unmap = kcuda_vmm_unmap,
    .tensor_map_encode = kcuda_tensor_map_encode,
    .cancel_all = op_cancel_all,
};

/* Without windows (window_bytes 0) the backend offers no domain_window: kernels cannot be
 * fenced on it. */
void kcuda_backend(kcuda *kc, kbackend *out)
{
    kc->ops = cuda_ops;
    if (!kc->windows) {
        kc->ops.domain_window = NULL;
        kc->ops.domain_release = NULL;
    }
    if (out)
        *out = (kbackend){.ops = &kc->ops, .state = kc};
}
