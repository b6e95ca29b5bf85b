/* The cuda executor backend of kerneletd (host-sched/backends/cuda/, library
 * kernelet-cuda-backend): executor.h on the CUDA Driver API, one GPU shared by every tenant.
 *
 * How it works (README.md in this folder has the reasons):
 * - One context, the primary context of the chosen device, for all tenants; every thread
 *   that calls an op gets it made current (cuCtxSetCurrent).
 * - Lanes are non-blocking streams, one each. A launch is put on its lane's stream at once
 *   (cuLaunchKernel with the packed parameter block as CU_LAUNCH_PARAM_BUFFER_POINTER),
 *   bracketed by two timing events. Each lane has a completion thread that sleeps in
 *   cuEventSynchronize on its oldest launch's end event (blocking-sync events: no polling)
 *   and calls done. Host functions (cuLaunchHostFunc) are not used: each one would hold its
 *   stream until the host ran it, a gap between slices of one lane, and they are never
 *   called after a device fault.
 * - Copies and memsets go to three copy queues (to device, to host, on device), each with
 *   a thread that issues them in order on its own stream and waits for them, so that
 *   pageable host memory (which makes cuMemcpy*Async wait) never blocks the caller.
 * - Memory comes from the device's stream-ordered pool (cuMemAllocAsync on a stream of its
 *   own, waited for at once; cuMemFreeAsync), because cuMemFree of ordinary memory may wait
 *   for the whole device. Every allocation is recorded, so that copies outside one and
 *   frees of unknown addresses are refused.
 * - Modules are JIT-compiled from PTX (cuModuleLoadDataEx; the JIT error log becomes the
 *   message) and cached by content: the same text loads once, unloads with its last holder.
 *   A text that defines module variables (__device__, __constant__: module-scope .global
 *   or .const) is loaded anew for every load, so that each tenant has its own variables;
 *   global_get (cuModuleGetGlobal) gives their ranges, which copies may then reach.
 * - Timestamps: now_ns is CLOCK_MONOTONIC; a completion's end is when its thread saw it
 *   end, its start the end minus the time between its two events (so a duration is GPU
 *   time; both are late by the wake-up of the completion thread).
 * - profile runs exclusively: submissions made meanwhile wait in the backend (the call
 *   returns at once), the device drains, one wave of the kernel's sliced variant runs under
 *   the CUPTI range profiler (kernel replay: its blocks' effects happen once; the scheduler
 *   skips them: blocks_done), then the waiting work is issued.
 * - trial runs exclusively and synchronously, re-running blocks of both kernels with their
 *   real parameters: only correct for kernels whose blocks may run twice (out = f(in)), as
 *   the benchmark kernels; the opt policy is an evaluation oracle.
 * - A device fault (illegal address, trap, ...) is sticky: the context is lost. The launches
 *   and copies in flight complete with KBACKEND_ELOST and the CUDA error name (which launch
 *   faulted cannot be told apart); the backend marks itself broken and refuses every later
 *   op that needs the device with KBACKEND_ELOST ("context lost"). kcuda_broken tells the
 *   daemon, which fails its tenants' work, destroys the backend (that resets the primary
 *   context) and makes a new one; the daemon stays up. Non-sticky errors (bad arguments,
 *   out of memory, JIT failures) only fail their call.
 * - A kernel that never ends holds its lane forever: there is no preemption. A launch
 *   that runs past its tenant's time limit (kbackend_slice.time_limit_ns) is detected by a
 *   watchdog thread, told to the operator at once (kcuda_config.note, naming the tenant)
 *   and completes, when it ends, with KBACKEND_ELAUNCH and a "time limit" message (CUDA's
 *   launch timeout to its tenant). Stopping it needs a cancel flag polled by the kernel,
 *   which the PTX rewriter does not insert yet (issue 15).
 */
#ifndef KERNELET_CUDA_BACKEND_H
#define KERNELET_CUDA_BACKEND_H

#include <stdint.h>

#include "calibration.h"
#include "kernelet/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kcuda kcuda;

/* Most lanes; hardware queues beyond CUDA_DEVICE_MAX_CONNECTIONS (default 8) are shared,
 * so more lanes than that need the variable set before the daemon starts. */
#define KCUDA_MAX_LANES 64

typedef struct kcuda_config {
    int device;                  /* device ordinal; default 0 */
    unsigned lanes;              /* launch lanes; default 24 */
    const char *calibration_dir; /* where <device>.calib files are (calibration.h); NULL =
                                    none: L0 and a0 from the model's table */
    int measure_overhead;        /* 1 (default): measure the launch overhead at start when
                                    the calibration does not give it (about 50 ms) */
    double slice_overhead_bound; /* the p of the minimum slice rule; default 0.02 */
    int lazy_loading;            /* 0 (default): modules load whole (CUDA_MODULE_LOADING=
                                    EAGER unless the operator set it) so that no profile or
                                    trial times a function's load; 1 (an isolated worker,
                                    which neither profiles nor pairs): the driver's lazy
                                    loading, as the tenant would have natively */
    int blocking_sync;           /* 1 (default): completion threads sleep while they wait;
                                    0: they spin (less latency, a core each) */
    int cap_by_waves;            /* 1 (default; KERNELET_CUDA_WAVES=0 in the environment
                                    turns it off, for comparisons): a slice with a residency
                                    cap (kbackend_slice.max_blocks_per_sm) goes to the device as
                                    launches of one wave each (cap x SMs blocks) queued back
                                    to back, so that the hardware cannot give the slice more
                                    of an SM than the cap while its partner waits */
    int timed_events;            /* 0 (default): a job's completion is an event without
                                    timing and its times are the host's (start: when it
                                    was issued or its lane's previous job ended, end: when
                                    its end was seen); 1 (and with KERNELET_CUDA_TIMELINE):
                                    timing events before and after every job. Timing
                                    events between two slices of a pair cost the pair
                                    most of its gain on an H100 (docs/perf/scheduling.md) */
    unsigned shared_end_max;     /* at most this many launches of one tenant queued in a
                                    lane share one end event (1: each has its own). A
                                    short kernel (its last run took at most
                                    shared_end_short_ns) is issued without one; its lane's
                                    thread records one when it comes to wait, after the
                                    lane's last launch, and that event ends them all: the
                                    driver's floor for a launch with an event is half its
                                    rate without (docs/perf/transport.md). Default 16 (1
                                    with timed_events); KERNELET_CUDA_SHARED_ENDS=N sets it */
    uint64_t shared_end_short_ns; /* "short" above: default 200 us */
    int carveout;                /* every function's preferred shared-memory carveout, in
                                    percent; -1 (default): the driver's choice per kernel.
                                    KERNELET_CUDA_CARVEOUT=N in the environment sets it */
    uint64_t window_bytes;       /* address window of each domain (tenant), with the virtual
                                    memory management API; default KBACKEND_WINDOW_DEFAULT;
                                    0: none (every allocation from cuMemAlloc; kernels
                                    cannot be fenced) */
    int profile_times;           /* 1 (KERNELET_LATENCY=1 in the environment): each profile
                                    tells cfg.note how long opening the profiler, the
                                    profiled launch and closing it took */
    int keep_profiler;           /* 0 (default): the profiler is closed after each profile
                                    and opened afresh for the next; 1
                                    (KERNELET_CUDA_PROFILER=keep): the range profiler stays
                                    enabled on the context, which crashed kerneletd inside
                                    NVIDIA's libraries once other modules had been unloaded
                                    (H100, driver 580) */
    unsigned spin_us;            /* a completion thread polls its job's end this long before
                                    it sleeps in the driver (blocking_sync), as NVIDIA's
                                    driver spins in a native program's synchronize: the
                                    driver's wake-up after a sleeping wait cost 11 us of
                                    each launch on the H100 (docs/perf/scheduling.md).
                                    Default 1000 with 4 cores or more (longer kernels pay
                                    the wake-up, under 1.1%), else 0;
                                    KERNELET_CUDA_SPIN_US=N sets it */
    unsigned max_spinners;       /* at most this many completion threads poll at once; the
                                    others sleep in the driver. Default a quarter of the
                                    host's cores; KERNELET_CUDA_SPINNERS=N sets it */
    unsigned stack_bytes;        /* each thread's call stack (CU_LIMIT_STACK_SIZE) when the
                                    driver's is smaller: fenced recursion stops a margin
                                    short of its end (kptx_fence_opts), and the fence's two
                                    extra parameters make frames larger than natively.
                                    Default 4096 (the driver's is 1024), reserving 4 KiB
                                    for every thread the GPU can hold (1.1 GB on an H100);
                                    KERNELET_CUDA_STACK_BYTES=N sets it */
    unsigned idle_spin_us;       /* a completion thread polls for its next job this long
                                    after one before it sleeps: its wake-up after a launch
                                    cost 15-20 us of a launch's round trip on the H100
                                    (KERNELET_LATENCY); one of max_spinners (24 lanes must
                                    not keep 24 cores busy). Default 50 with 4 cores or
                                    more, else 0; KERNELET_CUDA_IDLE_SPIN_US=N sets it */
    void (*note)(void *user, const char *msg); /* tells the operator of a launch past its
                                    time limit, from the watchdog's thread, while it runs
                                    (the daemon logs it); NULL: not told */
    void *note_user;
    void (*unstoppable)(void *user, const char *tenant); /* after the note, from the
                                    watchdog's thread, when that launch's kernel cannot be
                                    cancelled (it does not poll a cancel word: unfenced).
                                    Only the end of its context stops it: an isolated
                                    worker ends itself here. NULL: it runs on */
    void *unstoppable_user;
} kcuda_config;

/* Counters for tests and the daemon's statistics. */
typedef struct kcuda_stats {
    uint64_t modules_compiled;   /* cuModuleLoadDataEx calls that succeeded */
    uint64_t module_cache_hits;  /* module_load_ptx answered from the cache */
    uint64_t modules_private;    /* loads of a text with module variables (never shared) */
    uint64_t launches;           /* launches issued to the device */
    uint64_t deferred;           /* submissions that waited for a profile or trial */
    uint64_t profiles;           /* profiles completed */
    uint64_t trials;             /* trials run */
    uint64_t mem_in_use;         /* bytes allocated now */
} kcuda_stats;

/* Fills c with the defaults listed in kcuda_config. */
void kcuda_config_default(kcuda_config *c);

/* Initialises the driver, retains the device's primary context, starts the lane and copy
 * threads, reads the calibration and measures the launch overhead. KBACKEND_EDEVICE when
 * there is no usable device (the message gives the driver's error). */
int kcuda_new(kcuda **out, const kcuda_config *cfg, kbackend_error *err);

/* The executor backend of kc; its destroy frees kc (nothing may be in flight). When the
 * context was lost, destroy resets the primary context so that kcuda_new gets a fresh one. */
void kcuda_backend(kcuda *kc, kbackend *out);

/* 1 when a sticky error lost the context (msg, may be NULL, says which), else 0. */
int kcuda_broken(kcuda *kc, char *msg, size_t msglen);

/* The calibration read at start, or NULL when there was none. */
const kcuda_calibration *kcuda_calibration_of(const kcuda *kc);

void kcuda_get_stats(kcuda *kc, kcuda_stats *out);

/* Measures the launch overhead now (ns one more launch costs in a busy lane): a kernel of
 * 16 waves of equal blocks run whole and as 16 one-wave slices, median of 7 pairs. Runs on
 * the caller's thread with nothing else in flight. */
int kcuda_measure_launch_overhead(kcuda *kc, uint64_t *ns, kbackend_error *err);

/* Times launch (a whole kernel: its unsliced function) run whole (slice_blocks 0) or as
 * consecutive slices of slice_blocks blocks of its sliced variant, on one stream with the
 * device to itself: reps runs after one warm-up, *median_ns their median (events around
 * each run). The paper's slicing overhead is T(slices) / T(whole) - 1. The blocks run
 * reps + 1 more times with the real parameters: only for kernels whose blocks may run
 * again (out = f(in)); synchronous. */
int kcuda_time_launch(kcuda *kc, const kbackend_slice *launch, uint64_t slice_blocks,
                      unsigned reps, double *median_ns, kbackend_error *err);

#ifdef __cplusplus
}
#endif

#endif
