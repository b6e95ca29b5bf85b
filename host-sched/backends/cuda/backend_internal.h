/* Inside the cuda backend: its state, jobs and queues (host-sched/backends/cuda/). */
#ifndef KERNELET_CUDA_BACKEND_INTERNAL_H
#define KERNELET_CUDA_BACKEND_INTERNAL_H

#include <pthread.h>
#include <stdio.h>
#include <stdint.h>

#include <cuda.h>

#include "alloc_table.h"
#include "control.h"
#include "vmm_windows.h"
#include "cu_error.h"
#include "cuda_backend.h"
#include "launch_shape.h"
#include "module_cache.h"
#include "param_block.h"
#include "profiler.h"

#define MSG_LEN 256     /* as kbackend_error.msg */

/* Queues after the lanes: copies to the device, to the host, on the device (and memsets);
 * then the exclusive queue (profiles). */
enum { QC_H2D, QC_D2H, QC_DEV, QC_EXCLUSIVE, QC_COUNT };

typedef enum job_kind {
    JOB_LAUNCH,
    JOB_H2D,
    JOB_D2H,
    JOB_D2D,
    JOB_MEMSET,
    JOB_PROFILE,
} job_kind;

struct kbackend_function {
    CUfunction f;
    struct kbackend_module *module;
    char *name;
    int sliced;                 /* a "<entry>__kslice" variant */
    kcuda_param_layout layout;
    kbackend_func_info info;
    unsigned dyn_smem_limit;    /* dynamic shared memory it is set up for */
    uint64_t recent_ns;         /* how long its last waited-for launch took (atomic; 0:
                                   none yet): short ones may share an end event */
    struct kbackend_function *next;
};

/* A module's .global variables, moved into its domain's window (module_reloc.c). */
typedef struct kcuda_reloc {
    CUdeviceptr block;          /* in the window; 0: none */
    unsigned n;
    char **names;
    uint64_t *offsets, *sizes;  /* in the block */
} kcuda_reloc;

/* With a domain and windows, allocates and fills the block for the variables of the ptx
 * text (len bytes) and puts the rewritten text in *text (malloc'ed; NULL when there is
 * nothing to move: load ptx as it is). */
int kcuda_reloc_text(kcuda *kc, uint32_t domain, const char *ptx, size_t len, kcuda_reloc *r,
                     char **text, kbackend_error *err);
/* 1 and the variable's address and size when r moved name, else 0. */
int kcuda_reloc_find(const kcuda_reloc *r, const char *name, CUdeviceptr *p, size_t *size);
/* Gives the block back to the window. */
void kcuda_reloc_free(kcuda *kc, kcuda_reloc *r);

struct kbackend_module {
    CUmodule mod;
    kcuda_reloc reloc;          /* its variables in the window, when it has a domain */
    struct kbackend_function *fns;
    int shared;                 /* 0: the text defines variables, this load is one tenant's */
    kbackend_devptr *vars;         /* variables looked up (global_get), registered in kc->vars */
    size_t n_vars;
};

/* Free events kept for the next jobs, all made alike. */
typedef struct kcuda_event_pool {
    CUevent *ev;
    size_t n, cap;
    int timing;                 /* made with timing: elapsed times between them are asked */
} kcuda_event_pool;

typedef struct kcuda_job {
    struct kcuda_job *next;
    job_kind kind;
    unsigned queue;
    kbackend_done_fn done;
    void *user;
    CUevent start, end;         /* start only from a timing pool (timed_events or a timed
                                   slice) */
    kcuda_event_pool *pool;     /* where start and end came from and go back to */
    int issued;                 /* on the device: its end event will complete */
    int shared_end;             /* issued without its end event: a later job's end, recorded
                                   when its lane's thread comes to wait, ends it too */
    uint64_t seq;               /* its place in its queue (from 1) */
    int status;                 /* a KBACKEND_E* code when it failed before reaching the device */
    char msg[MSG_LEN];
    uint64_t issued_ns;         /* when it went to the device (submission until then) */
    /* JOB_LAUNCH, JOB_PROFILE */
    const struct kbackend_function *fn;
    kcuda_launch_shape shape;
    unsigned smem;
    void *params;               /* owned: the block as the driver gets it */
    size_t params_size;
    kbackend_profile *profile_out;
    uint64_t time_limit_ns;     /* the tenant's kernel time limit (watchdog.c); 0 = none */
    uint32_t domain;            /* whose control words its kernel uses (control.h); 0: none */
    int polls_cancel;           /* its kernel polls the domain's cancel word (fenced) */
    size_t cancel_offset;       /* polls_cancel: where the word's address is in params */
    unsigned cluster[3];        /* blocks per cluster (1 1 1: none) */
    int cooperative;            /* cuLaunchKernelEx with these attributes */
    char tenant[64];            /* the tenant's name, for the operator's log */
    uint64_t total_blocks;
    uint64_t wave_blocks;       /* sliced with a residency cap: blocks per device launch */
    /* copies and memset */
    kbackend_devptr dst, src;
    void *host_dst;
    const void *host_src;
    uint64_t bytes;
    uint8_t value;
} kcuda_job;

typedef struct kcuda_queue {
    struct kcuda *kc;
    unsigned index;
    CUstream stream;
    pthread_t thread;
    int started;
    pthread_cond_t wake;
    kcuda_job *head, *tail;
    uint64_t last_end_ns;       /* when its thread saw its last job end (host clock) */
    uint64_t next_seq;          /* the next job's seq */
    uint64_t ended_until;       /* jobs up to this seq were seen ended by a shared end event */
    CUresult ended_r;           /* ... with this result (its thread's own, no lock) */
} kcuda_queue;

typedef struct kcuda_watchdog kcuda_watchdog;

/* A free waiting for the end of a profile or trial (kernel replay restores memory). */
typedef struct pending_free {
    struct pending_free *next;
    kbackend_devptr ptr;
} pending_free;

struct kcuda {
    kcuda_config cfg;
    CUdevice dev;
    CUcontext ctx;
    int ctx_retained;
    kbackend_device_info info;
    kcuda_limits limits;
    kmodel_gpu gpu;             /* the model's view: table, device figures, calibration */
    int calibrated;
    kcuda_calibration calib;
    CUstream alloc_stream;
    int use_pool;               /* stream-ordered allocation available */

    pthread_mutex_t lock;       /* everything below */
    pthread_cond_t idle;        /* in_flight fell to 0, or an exclusive operation ended */
    kcuda_queue *queues;        /* lanes, then QC_COUNT more */
    unsigned n_queues;
    unsigned in_flight;         /* jobs in the lane and copy queues */
    unsigned exclusive;         /* profiles queued or running, trials running */
    kcuda_job *deferred_head, *deferred_tail;
    pending_free *frees;
    int stopping;
    unsigned spinners;          /* completion threads polling an end now (atomic; wait_event) */
    kcuda_watchdog *watchdog;   /* the kernel time limits (watchdog.c) */
    int broken;
    int cancelled;              /* cancel_all: every submission is refused */
    char broken_msg[MSG_LEN];
    kcuda_event_pool events;    /* the jobs' (timing ones with timed_events) */
    kcuda_event_pool timing_events; /* timed slices' (kbackend_slice.timed) */
    kcuda_module_cache *modules;
    kcuda_alloc_table allocs;
    kcuda_alloc_table vars;     /* module variables looked up: copies may reach them */
    kcuda_alloc_table reserved; /* tenants' address reservations (vmm.c): copies may name them */
    kcuda_alloc_table host_mapped; /* host ranges registered for the device, at their device
                                      addresses (memory.c): copies may name them */
    kcuda_windows *windows;     /* per-domain address windows; NULL: none */
    kcuda_control *control;     /* the domains' control words (with windows) */
    kbackend_ops ops;           /* what kcuda_backend hands out (domain ops only with
                                   windows) */
    kcuda_stats stats;

    FILE *timeline;             /* KERNELET_CUDA_TIMELINE (timeline.c); NULL: off */
    CUevent timeline_base;

    /* used by trial and kcuda_time_launch only (the caller's thread) */
    CUstream trial_stream[3];   /* the two kernels' streams; [2] opens the gate */
    CUdeviceptr trial_gate;     /* 4 bytes the trial streams wait on (0 = no gate) */
    int trial_gate_failed;      /* stream memory operations refused: run without it */
    CUevent *trial_events;      /* [0]: the common start; then one per slice */
    size_t n_trial_events;
    struct alone_rate {
        const struct kbackend_function *fn;
        unsigned grid[3], block[3], smem;
        uint64_t params_hash;
        double bps;
    } alone[4];
    unsigned alone_next;

    /* used by the exclusive thread only */
    kprof *prof;
    kprof_setup *prof_setup;    /* the metrics' configuration, kept between profiles */
    int prof_failed;
    char prof_msg[MSG_LEN];
};

/* backend.c */
uint64_t kcuda_now(void);
int kcuda_cu_fail(kbackend_error *err, CUresult r, const char *what);     /* code from r */
int kcuda_cu_fail_as(kbackend_error *err, int code, CUresult r, const char *what);
int kcuda_bind(kcuda *kc, kbackend_error *err);
/* Raises each thread's stack to cfg.stack_bytes and says its size and top in kc->info
 * (stack.c); the driver's error when the size cannot be set. */
CUresult kcuda_stack_setup(kcuda *kc);
int kcuda_refuse_if_broken(kcuda *kc, kbackend_error *err);   /* call with the lock held */

/* queue.c */
/* A job with its events: an end event, and a start event too when timed (a timed slice:
 * timing events around its work) or with timed_events. */
int kcuda_job_new(kcuda *kc, job_kind kind, unsigned queue, int timed, kbackend_done_fn done,
                  void *user, kcuda_job **out, kbackend_error *err);
void kcuda_job_free(kcuda *kc, kcuda_job *job);
int kcuda_submit(kcuda *kc, kcuda_job *job, kbackend_error *err);
int kcuda_queues_start(kcuda *kc, kbackend_error *err);
void kcuda_queues_stop(kcuda *kc);
void kcuda_mark_broken(kcuda *kc, CUresult r, const char *what);
void kcuda_mark_broken_locked(kcuda *kc, CUresult r, const char *what);
void kcuda_exclusive_begin(kcuda *kc);          /* waits until nothing else runs */
void kcuda_exclusive_end(kcuda *kc);            /* issues what waited meanwhile */
void kcuda_wait_idle_locked(kcuda *kc);
/* A launch or profile of job ended with status (its message in msg): counts its end with
 * the control words (control.h) and returns its status, which becomes KBACKEND_ELAUNCH
 * with the message rewritten when it had none and its kernel wrote a fault code, or its
 * domain was cancelled meanwhile and its kernel polls the word (one that does not ran to
 * its end). fired: the watchdog stopped this very launch (its time-limit message is the
 * caller's). */
int kcuda_control_settle(kcuda *kc, const kcuda_job *job, int fired, int status, char *msg,
                         size_t len);
void kcuda_complete(kcuda *kc, kcuda_job *job, int counted, int status, const char *msg,
                    uint64_t start_ns, uint64_t end_ns);

/* launch.c */
CUresult kcuda_allow_smem_locked(struct kbackend_function *fn, unsigned smem);
int kcuda_issue_launch(kcuda *kc, kcuda_job *job, CUstream stream, kbackend_error *err);
int kcuda_prepare_launch(kcuda *kc, const kbackend_slice *s, kcuda_job *job, kbackend_error *err);

/* memory.c */
void kcuda_issue_copy(kcuda *kc, kcuda_job *job, CUstream stream);
void kcuda_flush_frees_locked(kcuda *kc);
void kcuda_free_all(kcuda *kc);

/* module.c */
void kcuda_unload_all(kcuda *kc);
const struct kbackend_function *kcuda_sliced_sibling(kcuda *kc, const struct kbackend_function *fn);

/* measure.c: launches and timing with the device to themselves */
int kcuda_measure_fail(kcuda *kc, kbackend_error *err, CUresult r, const char *what);
int kcuda_measure_launch(kcuda *kc, const kbackend_slice *s, const struct kbackend_function *fn,
                         int whole, uint64_t first, uint64_t count, CUstream st,
                         kbackend_error *err);
int kcuda_measure_events(kcuda *kc, size_t n, kbackend_error *err);
int kcuda_measure_streams(kcuda *kc, kbackend_error *err);
/* Holds both trial streams until kcuda_gate_open: the work queued behind it then runs as
 * fast as the GPU goes, not as fast as the host submits. Returns 1 when the gate is in
 * place, 0 when the driver refuses stream memory operations (then nothing waits). */
int kcuda_gate_close(kcuda *kc);
void kcuda_gate_open(kcuda *kc);
double kcuda_elapsed_ns(CUevent a, CUevent b);
void kcuda_measure_release(kcuda *kc);

/* timeline.c: opened at start when KERNELET_CUDA_TIMELINE names a file; a no-op otherwise */
void kcuda_timeline_open(kcuda *kc);
void kcuda_timeline_note(kcuda *kc, const kcuda_job *job);
void kcuda_timeline_close(kcuda *kc);

/* watchdog.c: the tenants' kernel time limits on the lanes */
int kcuda_watchdog_start(kcuda *kc, kbackend_error *err);
void kcuda_watchdog_stop(kcuda *kc);
/* Lane's completion thread waits for job, which could start at start_ns: the operator is
 * told if it still runs job->time_limit_ns later (none when that is 0, until a new limit
 * comes). */
void kcuda_watchdog_arm(kcuda *kc, unsigned lane, const kcuda_job *job, uint64_t start_ns);
/* executor.h's domain_time_limit: the limit of domain's launches is now limit_ns (0:
 * none), from each one's start. */
void kcuda_domain_time_limit(void *state, uint32_t domain, uint64_t limit_ns);
/* The lane's wait ended; 1 when its launch ran past the limit and was reported
 * (*limit_ns: the limit it was held to at the end, when it was watched). */
int kcuda_watchdog_disarm(kcuda *kc, unsigned lane, uint64_t *limit_ns);

/* profile_op.c */
void kcuda_run_profile(kcuda *kc, kcuda_job *job);

/* ops */
int kcuda_mem_alloc(void *state, uint32_t domain, uint64_t bytes, kbackend_devptr *out,
                    kbackend_error *err);
int kcuda_mem_free(void *state, kbackend_devptr ptr, kbackend_error *err);
int kcuda_domain_window(void *state, uint32_t domain, kbackend_window *out,
                        kbackend_error *err);
void kcuda_domain_release(void *state, uint32_t domain);
int kcuda_host_register(void *state, void *base, uint64_t bytes, kbackend_devptr *device,
                        kbackend_error *err);
/* Zeroes bytes at p on the allocation stream and waits for it (memory.c). */
CUresult kcuda_zero_now(kcuda *kc, CUdeviceptr p, uint64_t bytes);
/* vmm.c: executor.h's vmm_* ops */
int kcuda_vmm_reserve(void *state, uint64_t bytes, uint64_t align, kbackend_devptr *va,
                      kbackend_error *err);
void kcuda_vmm_free(void *state, kbackend_devptr va, uint64_t bytes);
int kcuda_vmm_create(void *state, uint64_t bytes, uint64_t *handle, kbackend_error *err);
void kcuda_vmm_release(void *state, uint64_t handle);
int kcuda_vmm_map(void *state, kbackend_devptr va, uint64_t bytes, uint64_t handle,
                  uint64_t offset, kbackend_error *err);
void kcuda_vmm_unmap(void *state, kbackend_devptr va, uint64_t bytes);
/* tensor_map.c: executor.h's tensor_map_encode */
int kcuda_tensor_map_encode(void *state, const struct kernelet_tensor_map *m, uint8_t *out,
                            kbackend_error *err);
void kcuda_host_unregister(void *state, void *base);
int kcuda_copy_h2d(void *state, kbackend_devptr dst, const void *src, uint64_t bytes,
                   kbackend_done_fn done, void *user, kbackend_error *err);
int kcuda_copy_d2h(void *state, void *dst, kbackend_devptr src, uint64_t bytes,
                   kbackend_done_fn done, void *user, kbackend_error *err);
int kcuda_copy_d2d(void *state, kbackend_devptr dst, kbackend_devptr src, uint64_t bytes,
                   kbackend_done_fn done, void *user, kbackend_error *err);
int kcuda_memset_d8(void *state, kbackend_devptr dst, uint8_t value, uint64_t bytes,
                    kbackend_done_fn done, void *user, kbackend_error *err);
int kcuda_module_load_ptx(void *state, uint32_t domain, const char *ptx, size_t len,
                          kbackend_module **out, kbackend_error *err);
int kcuda_module_load_cubin(void *state, const void *image, size_t len, kbackend_module **out,
                            kbackend_error *err);
int kcuda_module_unload(void *state, kbackend_module *m, kbackend_error *err);
int kcuda_function_get(void *state, kbackend_module *m, const char *entry, kbackend_function **out,
                       kbackend_func_info *info, kbackend_error *err);
int kcuda_global_get(void *state, kbackend_module *m, const char *name, kbackend_devptr *addr,
                     uint64_t *bytes, kbackend_error *err);
int kcuda_launch(void *state, const kbackend_slice *s, kbackend_done_fn done, void *user,
                 kbackend_error *err);
int kcuda_profile(void *state, const kbackend_slice *launch, kbackend_profile *out,
                  kbackend_done_fn done, void *user, kbackend_error *err);
int kcuda_trial(void *state, const kbackend_trial *t, kbackend_trial_result *out, kbackend_error *err);

#endif
