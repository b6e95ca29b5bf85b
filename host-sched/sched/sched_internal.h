/* Internals of the scheduler, shared by its files. Everything here is protected by
 * ksched.lock unless it says otherwise. */
#ifndef KERNELET_SCHED_SCHED_INTERNAL_H
#define KERNELET_SCHED_SCHED_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "idmap.h"
#include "kernelet/range_table.h"
#include "ksched.h"

#define MSG_LEN 160

struct sched_tenant;
struct sched_stream;
struct sched_kernel;

/* The backend domain of one client context of a tenant (sched_domain.c): its address
 * window holds that context's allocations and module variables, and its kernels are
 * fenced into it, so that two guest processes of one VM reach each other's memory no
 * more than two VMs do. Made on the context's first use, released (its window given back)
 * once its context has closed and nothing holds it any more. */
typedef struct sched_domain {
    uint32_t id;                /* the backend's domain */
    uint32_t context;           /* the tenant's client context it belongs to */
    unsigned users;             /* allocations, PTX modules and launch ops holding it */
    int closed;                 /* its context closed: released with its last user */
    struct sched_domain *next;
} sched_domain;

typedef struct sched_event {
    uint32_t id;
    uint64_t recorded;      /* records submitted */
    uint64_t completed;     /* the latest record that has completed */
    uint64_t time_ns;
} sched_event;

typedef struct sched_op {
    uint64_t id;
    ksched_op op;               /* params point into owned_params for launches */
    void *owned_params;
    uint64_t event_gen;         /* record: its generation; wait: the one it waits for */
    ksched_done_fn done;
    void *user;
    struct sched_tenant *tenant;
    struct sched_stream *stream;
    struct sched_op *next;      /* stream order */
    uint64_t submit_ns, start_ns, end_ns;
    int started;
    int status;                 /* launches: set when the kernel failed or was canceled */
    int backend_status;
    char msg[MSG_LEN];
    struct sched_kernel *kernel; /* launches, once started */
    /* launches: the timing event recorded just before it on its stream, stamped anew by
       when this launch started on the device once it completes (restamp: 0 = none) */
    int restamp;
    uint32_t restamp_event;
    uint64_t restamp_gen;
    sched_domain *domain;       /* launches: the launching context's, held until finished */
} sched_op;

typedef struct sched_stream {
    uint32_t id;
    struct sched_tenant *tenant;
    sched_op *head, *tail;
    int destroyed;
    int on_worklist;
    unsigned priority;          /* 0 (default) .. KSCHED_STREAM_PRIORITY_MAX */
    uint64_t last_end_ns;       /* when its last completed operation ended (backend clock):
                                   an event recorded next is stamped no earlier */
    uint64_t launches_open;     /* its launch ops submitted and not finished */
    /* the stream's last completed op, when it was a record of a timing event: which, and
       when it was submitted (a launch submitted soon after restamps it) */
    struct {
        int set;
        uint32_t event;
        uint64_t gen, submit_ns;
    } timing_record;
    struct sched_stream *work_next;
} sched_stream;

/* Device memory a tenant may copy to and from: an allocation of its own, or a module
 * variable it looked up (ksched_global_get), which lives as long as its module. */
typedef struct sched_alloc {
    krange r;                   /* [ptr, ptr + bytes): first, for the range table */
    uint32_t module;            /* 0: an allocation; SCHED_ALLOC_RESERVED: a reservation of
                                   addresses (sched_vmm.c); else the module of the variable */
    sched_domain *domain;       /* an allocation: the domain it lies in, held until freed
                                   (NULL for the other kinds) */
} sched_alloc;

#define SCHED_ALLOC_RESERVED UINT32_MAX
/* In sched_alloc.module: host memory mapped for the tenant (ksched_host_adopt). */
#define SCHED_ALLOC_HOST (UINT32_MAX - 1)
/* In sched_alloc.module: an allocation being freed in the backend, the lock released
 * (ksched_mem_free): no longer the tenant's to copy to, nor to free again. */
#define SCHED_ALLOC_FREEING (UINT32_MAX - 2)

/* Physical memory of a tenant (ksched_vmm_create) and its mappings (sched_vmm.c). */
typedef struct sched_vmm_handle {
    uint32_t id;
    uint64_t backend;           /* the backend's handle */
    uint64_t bytes;             /* charged to the tenant's mem_in_use */
    unsigned maps;              /* mappings of it */
    bool released;              /* given back by the tenant: goes with its last mapping */
} sched_vmm_handle;

typedef struct sched_vmm_map {
    kbackend_devptr va;
    uint64_t bytes;
    uint32_t handle;
    bool busy;                  /* in the backend without the lock (being mapped or
                                   unmapped): no other call may unmap it */
} sched_vmm_map;

typedef struct sched_module {
    uint32_t id;
    kbackend_module *mod;       /* NULL: a cubin the backend cannot run (no code) */
    uint64_t hash;
    unsigned users;             /* functions handed out (freed with the module) */
    uint64_t charged;           /* device bytes of its variables counted in mem_in_use */
    sched_domain *domain;       /* PTX: the loading context's, where its variables lie;
                                   held until unloaded (a cubin: NULL) */
} sched_module;

typedef struct sched_function {
    uint32_t id;
    sched_module *module;
    char entry[KSCHED_ENTRY_MAX + 1];
    kbackend_function *fn, *sliced;
    kbackend_func_info attrs;
} sched_function;

typedef struct sched_tenant {
    uint32_t id;
    char name[64];
    ksched_tenant_policy pol;
    ksched_tenant_stats st;
    idmap streams, events, modules, functions;
    uint32_t next_stream, next_event, next_module, next_function;
    krange_table allocs;        /* sched_alloc: allocations, reservations, module variables */
    sched_domain *domains;      /* one per client context in use (and closed ones still
                                   held); at most cfg.max_contexts */
    unsigned n_domains;
    sched_vmm_handle *vmm_handles;
    size_t n_vmm_handles;
    uint32_t next_vmm_handle;
    sched_vmm_map *vmm_maps;
    size_t n_vmm_maps;
    uint64_t vmm_reserved;      /* bytes of its reservations (bounded: sched_vmm.c) */
    uint64_t launches_open;     /* launch ops submitted and not finished */
    uint64_t busy;              /* started ops not finished (drain before removal) */
    unsigned pending_kernels;   /* kernels in the pending set */
    unsigned pending_at[KSCHED_STREAM_PRIORITY_MAX + 1];  /* of them, by stream priority */
    double vtime;               /* weighted GPU time, ns / weight */
    int removing;
    unsigned unlocked_calls;    /* its allocations, frees and module loads in the backend,
                                   the lock released (sched_unlocked_begin): while any is,
                                   the tenant is paused, none of its work starts (its
                                   streams are not started, its kernels not eligible) and
                                   it is not reaped */
    int eligible;               /* scratch of the decision */
    int profile_faulted;        /* a kernel of its failed while profiled (a runaway, an
                                   assert): its other kernels are not profiled, since a
                                   profile holds the device for everyone */
    struct sched_tenant *next;
} sched_tenant;

typedef enum { K_PROFILING, K_PENDING, K_DRAINING } kernel_state;

/* A kernel class: one kernel identity with one launch shape; what the model sees. */
typedef struct sched_class {
    unsigned index;
    uint64_t module_hash;
    char entry[KSCHED_ENTRY_MAX + 1];
    unsigned block[3];
    unsigned smem;
    kbackend_func_info attrs;      /* of the function it was first seen with */
    int profiled;               /* 1: prof and k valid; -1: no profile to be had */
    int profiling;              /* a profile request is in flight */
    kbackend_profile prof;
    kmodel_kernel k;
    unsigned max_blocks;        /* blocks per SM alone */
    uint64_t min_slice;         /* blocks */
    double block_ns;            /* the model's time per block alone at full occupancy, over
                                   the whole GPU (a kernel of n blocks takes about n times
                                   this); 0 when the model has no rate */
    struct sched_kernel *head, *tail;  /* pending kernels of the class, oldest first */
    unsigned n_pending;
    int pairs_due;              /* profiled, and its pairs with the other profiled classes
                                   are still to be evaluated outside decisions
                                   (sched_precompute.c) */
    int pairs_evaluating;       /* ... and being evaluated now, the lock released: until
                                   they are stored a decision does not pair the class */
} sched_class;

typedef struct sched_kernel {
    sched_op *op;
    sched_tenant *tenant;
    sched_function *fn;
    sched_class *cls;
    kernel_state state;
    uint64_t seq;               /* arrival order */
    uint64_t pending_ns;        /* when it joined the pending set (backend clock) */
    uint64_t total, next;       /* blocks; [next, total) not yet handed out */
    uint64_t done_blocks;
    unsigned in_flight;         /* slices (and a profile request) outstanding */
    int lane;                   /* the lane of its slices in flight, else -1 */
    int lane_pin;               /* started before its stream predecessor completed: the lane
                                   the predecessor's slices still run in, where its own must
                                   queue behind them (sched_stream.c), else -1 */
    int whole_only;
    unsigned priority;          /* its stream's, when it joined the pending set */
    int in_class;               /* linked into its class's pending list */
    uint64_t first_start_ns, last_end_ns;
    kbackend_profile prof_out;     /* the backend's profile op writes here */
    struct sched_kernel *cls_prev, *cls_next;
} sched_kernel;

typedef struct sched_lane {
    unsigned in_flight;         /* launches queued or running in the lane */
} sched_lane;

/* One backend submission in flight: what its completion refers to. */
typedef enum { SUB_SLICE, SUB_COPY, SUB_PROFILE } sub_kind;

typedef struct sched_sub {
    sub_kind kind;
    struct ksched *s;
    sched_kernel *kernel;       /* slices, profiles */
    sched_op *op;               /* copies */
    uint64_t first, count;
    unsigned lane;
    /* filled by the completion callback (under cq_lock) */
    int status;
    char msg[MSG_LEN];
    uint64_t start_ns, end_ns;
    struct sched_sub *next;
} sched_sub;

/* The current co-schedule of the pair policies. */
typedef enum { PLAN_NONE, PLAN_PAIR, PLAN_SOLO, PLAN_WHOLE } plan_kind;

typedef struct sched_plan {
    plan_kind kind;
    sched_kernel *k[2];
    unsigned bps[2];            /* blocks per SM cap, 0 = none */
    uint64_t slice[2];          /* blocks per slice */
    unsigned lane[2];           /* the pair lanes (0, 1) the kernels queue in */
    uint64_t budget[2];         /* blocks each may still get under this plan */
    unsigned depth[2];          /* slices each may have queued in its lane (0: the
                                   configured pipeline depth) */
    int uncapped;               /* slices go to the backend without the bps cap: whole
                                   grids the GPU fills as it likes (a pair plan of tuning) */
} sched_plan;

/* Online tuning of one pair of classes (sched_tune.c): the pair runs under each candidate
 * plan in turn for a while, the work it completes per wall-clock time is measured, and the
 * best candidate stays. */
#define PAIR_TUNE_CANDIDATES 6

typedef struct pair_tune {
    int chosen;                 /* -1: still trying candidates; else the one kept */
    unsigned current;           /* the candidate being tried */
    double warm_ns;             /* time the current candidate ran before it is measured:
                                   work queued under the previous one still completes */
    double wall_ns[PAIR_TUNE_CANDIDATES];  /* time the pair ran under each */
    double work_ns[PAIR_TUNE_CANDIDATES];  /* and the work it completed meanwhile, as the
                                   time those blocks take alone (class block_ns) */
} pair_tune;

/* How a pair runs under one candidate. */
typedef struct tune_plan {
    unsigned index;
    int waves;                  /* slice waves; -1: the configuration's sizing */
    int uncapped;               /* whole slices without the per-SM cap */
    int even;                   /* each kernel gets half of what fits of it on an SM, not
                                   the model's split */
    int whole;                  /* no pairing: both run whole, side by side (base) */
} tune_plan;

/* A pair of classes evaluated once: the best split and its CP (model or trials). */
typedef struct pair_entry {
    unsigned a, b;              /* class indices, a < b */
    int policy;                 /* KSCHED_KERNELET or KSCHED_OPT */
    int fits;
    unsigned bps[2];            /* for class a, class b */
    double wave_ns[2];          /* how long one wave (bps blocks on every SM) takes */
    double cp;
    pair_tune tune;             /* kernelet with ksched_config.pair_tune */
    struct pair_entry *next;
} pair_entry;

/* A deferred call made after the lock is released. */
typedef struct notify {
    ksched_done_fn done;
    void *user;
    ksched_op_result r;
    char msg[MSG_LEN];
    void (*host_fn)(void *);    /* host ops: run this, then complete host_op */
    void *host_user;
    sched_op *host_op;
    struct notify *next;
} notify;

struct ksched {
    pthread_mutex_t lock;
    kbackend be;
    kbackend_device_info dev;
    kmodel_gpu gpu;
    kmodel_ctx *model;
    ksched_config cfg;
    ksched_profile_cache *profiles;
    sched_tenant *tenants;
    idmap tenant_ids;
    uint32_t next_tenant;
    uint32_t next_domain;       /* of contexts other than 0 (sched_domain.c) */
    uint64_t next_op, next_seq;
    sched_class **classes;
    unsigned n_classes;
    size_t cap_classes;
    pair_entry **pairs;         /* hash buckets by (a, b, policy) */
    unsigned n_pairs_due;       /* classes with pairs_due set */
    /* The model evaluations made outside decisions, with the lock released: their own
       model context (a context is one thread's), taken by one thread at a time. */
    pthread_mutex_t pre_lock;
    kmodel_ctx *pre_model;
    /* Inside a policy's decide (sched_decide.c): the backend's launch calls made there are
       timed apart, so that a decision's time is the deciding, as fifo's and base's are */
    int deciding;
    uint64_t decide_launch_ns;
    size_t n_pair_buckets;
    sched_lane *lanes;
    unsigned n_lanes;
    sched_plan plan;
    int dirty;                  /* the pending set changed since the last decision */
    uint64_t aging_next_ns;     /* when the next candidate passes the aging bound */
    unsigned n_pending;         /* kernels with blocks not handed out */
    sched_stream *work_head, *work_tail;   /* streams whose head may start */
    notify *notify_head, *notify_tail;
    unsigned host_running;      /* host functions being run outside the lock */
    uint64_t outstanding;       /* backend submissions in flight */
    uint64_t ops_pending;
    /* the stream that launched last (tenant << 32 | stream), when, and when another stream
       launched before it (sched_stream_alone) */
    struct {
        uint64_t stream, ns, other_ns;
        int any, other;
    } last_launch;
    void **policy_state;        /* each policy's private state, by table row (policy.h) */
    ksched_stats stats;
    /* the pair being measured for tuning since `since` (sched_tune.c); NULL: none */
    struct {
        pair_entry *e;
        unsigned cand;
        uint64_t since;
        double work_ns;
    } tune_now;
    /* completion queue: filled by backend callbacks from any thread */
    pthread_mutex_t cq_lock;
    pthread_cond_t cq_cond;
    sched_sub *cq_head, *cq_tail;
    int kicked;
    /* dispatcher thread */
    pthread_t thread;
    int thread_running, thread_stop;
    /* ksched_hold: submissions wait for ksched_release to be driven (held_work: some did) */
    unsigned held;
    int held_work;
    /* calls in the backend with the lock released (every tenant's unlocked_calls);
       ksched_free waits on unlocked_idle for them */
    unsigned unlocked_calls;
    pthread_cond_t unlocked_idle;
    /* the backend answered KBACKEND_ELOST: the device state is gone (ksched_lost) */
    int lost;
    char lost_msg[MSG_LEN];
};

/* sched_core.c */
sched_tenant *sched_tenant_find(ksched *s, uint32_t id, ksched_err *err);
void sched_kick(ksched *s);
/* With the lock held, after a submission in the caller's thread: 1 when the dispatcher
 * must be woken (sched_drive.c). */
int sched_submitted(ksched *s);
uint64_t sched_now(ksched *s);
int sched_backend_fail(ksched_err *err, const kbackend_error *e, const char *what);
/* As sched_backend_fail, noting a lost device first (KBACKEND_ELOST). */
int sched_backend_fail_s(ksched *s, ksched_err *err, const kbackend_error *e, const char *what);
/* Notes a backend answer: KBACKEND_ELOST makes the scheduler lost (sched_lost.c). */
void sched_note_backend(ksched *s, int code, const char *msg);
/* With the lock held: KSCHED_ELOST when lost, else 0. */
int sched_refuse_if_lost(ksched *s, ksched_err *err);
/* Lost: every kernel of the pending set fails (KSCHED_EBACKEND, backend KBACKEND_ELOST). */
void sched_fail_pending_lost(ksched *s);

/* sched_stream.c: operations in stream order */
void sched_stream_wake(ksched *s, sched_stream *st);
int sched_streams_start(ksched *s);
void sched_op_complete(ksched *s, sched_op *op, int status, const char *msg);
/* A launch starting: restamps (at its end) the timing event recorded just before it on its
 * stream, when it was submitted together with that record (ksched_op.timing). */
void sched_restamp_arm(sched_op *launch);
/* A launch completing: its restamped event now says when the launch started on the device. */
void sched_restamp_apply(ksched *s, const sched_op *launch);
void sched_op_finish(ksched *s, sched_op *op, int status, const char *msg);
void sched_backend_done(void *user, const kbackend_completion *c);
void sched_events_changed(ksched *s, sched_tenant *t);
void sched_notify_push(ksched *s, notify *n);
void sched_stream_free(sched_stream *st);

/* sched_tenant.c */
void sched_tenant_release(ksched *s, sched_tenant *t);
void sched_tenants_reap(ksched *s);
/* Whether t's work may start now: not while a call of its runs in the backend without the
 * lock. */
static inline int sched_tenant_paused(const sched_tenant *t)
{
    return t->unlocked_calls != 0;
}
/* t's last such call returned: its streams go on, and its kernels are decided on again,
 * its weighted time level with the least-served backlogged tenant as after an idle time. */
void sched_tenant_resume(ksched *s, sched_tenant *t);
/* A call of t's into the backend that may take long (an allocation, a free, a module's
 * JIT), where the backend allows it beside its other ops: begin releases the lock (held
 * by the caller) with t paused, so that the other tenants are decided and completed
 * meanwhile and none of t's work starts; t is not reaped, and ksched_free waits, until
 * end retakes the lock, resumes t after its last such call and kicks the scheduler (under
 * the lock: once the caller unlocks, ksched_free may go on). */
void sched_unlocked_begin(ksched *s, sched_tenant *t);
void sched_unlocked_end(ksched *s, sched_tenant *t);

/* sched_memory.c */
/* 0 when t's memory quota has room for bytes more (allocations, module variables), else
 * KSCHED_EQUOTA with what the bytes are for in err. */
int sched_quota_check(const sched_tenant *t, uint64_t bytes, const char *what, ksched_err *err);
int sched_tenant_owns(const sched_tenant *t, kbackend_devptr ptr, uint64_t bytes);
int sched_global_register(ksched *s, sched_tenant *t, uint32_t module, kbackend_devptr ptr,
                          uint64_t bytes, ksched_err *err);
void sched_globals_drop(sched_tenant *t, uint32_t module);

/* sched_kernel.c: launches as kernels in the pending set */
int sched_kernel_start(ksched *s, sched_op *op);
void sched_kernel_cancel(ksched *s, sched_kernel *k, int status, const char *msg);
/* The lane k must use now: its slices' lane while some are in flight, else the lane its
 * stream predecessor runs in (lane_pin), else -1 (any). */
int sched_kernel_lane(const sched_kernel *k);
int sched_kernel_launch(ksched *s, sched_kernel *k, uint64_t count, unsigned lane,
                        unsigned cap);
void sched_slice_done(ksched *s, sched_sub *sub);
void sched_profile_done(ksched *s, sched_sub *sub);
void sched_kernel_unlink(ksched *s, sched_kernel *k);
/* A tenant back from idle (or a pause) starts level with the least-served other backlogged
 * tenant, so that idling banks no credit (start-time fair queuing). */
void sched_tenant_level(ksched *s, sched_tenant *t);

/* sched_class.c */
sched_class *sched_class_of(ksched *s, sched_function *f, const ksched_op *op,
                            ksched_err *err);
void sched_class_set_profile(ksched *s, sched_class *c, const kbackend_profile *p);
void sched_classes_free(ksched *s);
uint64_t sched_class_min_slice(ksched *s, const sched_class *c);
double sched_class_block_ns(ksched *s, const sched_class *c);

/* sched_pairs.c: pair evaluations cached per pair of classes */
/* What the model's evaluation of a pair of classes reads besides the two kernels. */
typedef struct sched_model_in {
    kmodel_ctx *model;
    const kbackend_device_info *dev;
    const kmodel_gpu *gpu;
} sched_model_in;

/* The model's verdict on a pair: whether it fits, its balanced split, CP, wave times. */
typedef struct pair_eval {
    int fits;
    unsigned bps[2];
    double wave_ns[2];
    double cp;
} pair_eval;

sched_model_in sched_model_in_of(ksched *s);
/* Evaluates kernels a, b at their balanced split (kmodel_balanced, CP as the backend runs
 * the pair); reads nothing of the scheduler, so it may run without its lock. */
void sched_pair_eval(const sched_model_in *in, const kmodel_kernel *a,
                     const kmodel_kernel *b, pair_eval *out);
/* The cached entry of (a, b, policy), class indices a < b; NULL when none. */
pair_entry *sched_pair_find(const ksched *s, unsigned a, unsigned b, int policy);
/* The kernelet entry of a pair of classes, evaluated now when missing (in a decision:
 * counted in stats.pairs_evaluated); NULL while another thread evaluates the class's pairs
 * outside decisions (sched_precompute.c), or out of memory. */
pair_entry *sched_pair_model(ksched *s, sched_class *a, sched_class *b);
/* Caches r as the kernelet entry of classes a < b unless one exists: 1 when stored, 0 when
 * one existed, -1 out of memory. */
int sched_pair_model_put(ksched *s, unsigned a, unsigned b, const pair_eval *r);
const pair_entry *sched_pair_trial(ksched *s, sched_kernel *a, sched_kernel *b);
int sched_full_splits(ksched *s, const sched_class *a, const sched_class *b,
                      unsigned (*out)[2], unsigned cap);
void sched_pairs_free(ksched *s);

/* sched_decide.c: eligibility and the dispatch loop shared by the policies */
/* CLOCK_MONOTONIC in ns: what decisions (and evaluations outside them) are timed with. */
uint64_t sched_mono_ns(void);
void sched_dispatch(ksched *s);
unsigned sched_backlogged_tenants(const ksched *s);
sched_kernel *sched_oldest_eligible(ksched *s, int need_profile);
unsigned sched_pair_candidates(ksched *s, sched_kernel **out, unsigned cap);
void sched_plan_whole(ksched *s, sched_kernel *k);
void sched_plan_solo(ksched *s, sched_kernel *k);
/* sched_plan_solo for a kernel on the only stream launching: slices of at least
 * cfg.lone_slice_ns by the model, whole when unpredicted or shorter. */
void sched_plan_lone(ksched *s, sched_kernel *k);
/* Whether st is the only stream launching: no other stream (of any tenant) has a launch
 * open or made one within 5 x cfg.lone_slice_ns (kernelet gives its unpaired kernels
 * long slices: sched_plan_lone). */
int sched_stream_alone(ksched *s, const sched_stream *st);
/* Notes a launch submitted on st, for sched_stream_alone. */
void sched_note_launch(ksched *s, const sched_stream *st);
void sched_plan_pair(ksched *s, sched_kernel *a, sched_kernel *b, const unsigned bps[2],
                     const double wave_ns[2]);
/* sched_plan_pair with slices of `waves` waves (-1: the configuration's sizing), uncapped
 * when asked. */
void sched_plan_pair_as(ksched *s, sched_kernel *a, sched_kernel *b, const unsigned bps[2],
                        const double wave_ns[2], int waves, int uncapped);

/* sched_tune.c: online tuning of pair plans (ksched_config.pair_tune) */
/* The plan pair e runs under now: the candidate being tried, or the one kept. */
tune_plan sched_tune_plan(const pair_entry *e);
/* Whether tuning found that pair e gains nothing over running its kernels whole. */
int sched_tune_no_gain(const pair_entry *e);
/* Ends the current measurement interval (at every decision); may move e to its next
 * candidate or keep the best. */
void sched_tune_close(ksched *s);
/* From now on, completed work of e's classes counts for candidate cand of e. */
void sched_tune_begin(ksched *s, pair_entry *e, unsigned cand);
/* A slice of k completed `blocks` blocks. */
void sched_tune_note(ksched *s, const sched_kernel *k, uint64_t blocks);
int sched_model_waves(ksched *s, const sched_class *a, const sched_class *b,
                      const unsigned bps[2], double wave_ns[2], double *cp);
void sched_trace_decision(ksched *s, double cp, unsigned considered, unsigned pruned,
                          unsigned widenings);
int sched_solo_or_whole(ksched *s);
/* Launches whole kernels, oldest first, on the least busy of the first `lanes` lanes until
 * they are full (the whole-kernel policies' decision, policies/whole.c). */
void sched_run_whole(ksched *s, unsigned lanes);

/* sched_domain.c: the backend domains of a tenant's client contexts. Context 0 (a host
 * client's one context) has the tenant's id as its domain; the others get ids from
 * SCHED_CONTEXT_DOMAIN_BASE on, which tenant ids never reach. */
#define SCHED_CONTEXT_DOMAIN_BASE 0x80000000u
/* The open domain of t's context, made on its first use: KSCHED_ECONTEXTS when t holds
 * cfg.max_contexts domains already. With the lock held. */
int sched_domain_of(ksched *s, sched_tenant *t, uint32_t context, sched_domain **out,
                    ksched_err *err);
static inline void sched_domain_hold(sched_domain *d)
{
    d->users++;
}
/* Drops one hold of d (NULL: nothing); a closed domain's last goes back to the backend. */
void sched_domain_put(ksched *s, sched_tenant *t, sched_domain *d);
/* Every domain of t goes back to the backend (t is released: its memory is gone). */
void sched_domains_free(ksched *s, sched_tenant *t);
/* The backend's running launches of every domain of t are held to limit_ns. */
void sched_domains_time_limit(ksched *s, sched_tenant *t, uint64_t limit_ns);

/* sched_vmm.c: unmaps, releases and frees all the tenant's virtual memory. */
void sched_vmm_release_all(ksched *s, sched_tenant *t);

/* sched_kernel.c: whether the policy pairs kernels and so profiles new ones first. */
int sched_profiles_wanted(const ksched *s);

/* sched_aging.c: the bound on waiting of the kernelet policy */
sched_kernel *sched_overdue(ksched *s, sched_kernel **c, unsigned n);


/* sched_precompute.c: the kernelet policy's pair evaluations made when a class gets its
 * profile, outside decisions and with the lock released */
/* Class c was just profiled: its pairs are due (under the kernelet policy, unless
 * cfg.lazy_pairs). */
void sched_precompute_mark(ksched *s, sched_class *c);
/* Every profiled class's pairs are due (the policy became kernelet). */
void sched_precompute_mark_all(ksched *s);
/* Evaluates the due pairs; called with the lock held, releases it while the model runs. */
void sched_precompute(ksched *s);

/* sched_drive.c */
/* With the lock held: completions, stream heads, decisions, launches, removals. With
 * may_unlock, due pair evaluations run first with the lock released; without it, a round
 * that has some returns 1 before deciding, for the dispatcher to take over. */
int sched_pump(ksched *s, ksched_err *err, int may_unlock);

#endif
