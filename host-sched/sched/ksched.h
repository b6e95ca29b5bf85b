/* The Kernelet scheduler (library kernelet-sched, host-sched/sched/).
 *
 * Tenants (a VM, or a host process) submit work in CUDA stream order; the scheduler runs
 * it on one GPU through an executor backend (executor.h), deciding which kernels run side
 * by side and how they are cut into slices. docs/SCHEDULER.md has the design.
 *
 * - Tenants have an id, a name, a policy the operator may change at any time (weight,
 *   priority, memory quota, most queued launches, slicing on/off) and statistics.
 * - Each tenant has streams (stream 0 always exists). An operation (launch, copy, memset,
 *   event record, event wait, host function) starts only after the previous operation of
 *   its stream has finished; streams and tenants are otherwise independent.
 * - Memory, modules, functions and events belong to a tenant; a tenant only reaches its own
 *   (copies to memory it did not allocate, or to module variables it did not look up with
 *   ksched_global_get, are refused). Removing a tenant cancels its queued
 *   work and frees everything it holds once its running work has drained.
 * - The policy (fifo, base, kernelet, opt, mc) picks what runs; it can be changed at run
 *   time. Kernel characteristics come from a profile cache, filled from files or by the
 *   backend's profiler on a kernel's first launch.
 *
 * Threads: every function is thread-safe (one lock inside). Work advances only while a
 * driver runs: ksched_run_until_idle / ksched_run_until in the caller's thread, or the
 * dispatcher thread of ksched_thread_start. Completion callbacks (ksched_done_fn) and host
 * functions run in the driver's thread without the lock held, so they may submit more work.
 * The trace callback runs with the lock held and must not call into the scheduler.
 *
 * Errors: functions return 0 or a negative KSCHED_E* code and describe failures in a
 * ksched_err (may be NULL). The library never prints and never aborts.
 */
#ifndef KERNELET_SCHED_SCHED_H
#define KERNELET_SCHED_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelet/executor.h"
#include "profile.h"
#include "sched_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ksched ksched;

/* A policy is an index of the policy table (policies/policy_table.c), 0 to
 * ksched_policy_count() - 1. The paper's five have names here; a policy added to the table
 * is reached by its name (ksched_policy_parse). */
typedef enum ksched_policy {
    KSCHED_FIFO = 0,   /* one kernel at a time, whole, in arrival order */
    KSCHED_BASE,       /* kernel consolidation: whole kernels on concurrent lanes */
    KSCHED_KERNELET,   /* the paper's Algorithm 1: pruned pairs, model CP, balanced ratio */
    KSCHED_OPT,        /* oracle: every pair and ratio measured by the backend's trial op */
    KSCHED_MC,         /* random pairs and ratios (seeded) */
} ksched_policy;

/* The most policies the table may hold (sets of policies fit in an unsigned). */
#define KSCHED_POLICY_MAX 16

/* How many policies there are. */
unsigned ksched_policy_count(void);
/* "fifo", "base", "kernelet", "opt", "mc", ...; NULL when out of range. */
const char *ksched_policy_name(ksched_policy p);
/* The policy named name (case-insensitive); KSCHED_EINVAL when unknown. */
int ksched_policy_parse(const char *name, ksched_policy *out);
/* Every policy's name, separated by sep, into buf (the names that fit in len); buf. */
const char *ksched_policy_list(char *buf, size_t len, const char *sep);

/* What happened, for tracing and tests (ksched_config.trace). */
typedef enum ksched_trace_kind {
    KSCHED_TRACE_DECISION,    /* a co-schedule was chosen */
    KSCHED_TRACE_SLICE,       /* a slice (or whole kernel) was handed to the backend */
    KSCHED_TRACE_SLICE_DONE,  /* and completed */
    KSCHED_TRACE_TUNED,       /* pair_tune kept a plan for a pair of kernel classes */
} ksched_trace_kind;

typedef struct ksched_trace {
    ksched_trace_kind kind;
    uint64_t now_ns;          /* backend clock */
    /* DECISION: the kernels (launch op ids; op[1] = 0 when one kernel runs alone), their
     * blocks per SM (0 = no cap) and slice sizes, the CP the policy expected, how many
     * pairs it pruned and how often it widened the thresholds. */
    uint64_t op[2];
    const char *entry[2];
    unsigned blocks_per_sm[2];
    uint64_t slice_blocks[2];
    double cp;
    unsigned pairs_considered, pairs_pruned, widenings;
    /* SLICE, SLICE_DONE: the kernel (op[0]), its blocks and lane, the cap, the result. */
    uint64_t first, count;
    unsigned lane;
    uint64_t start_ns, end_ns;
    int status;
    uint32_t tenant;
    /* TUNED: entry[0], entry[1] the pair; `first` the plan kept (its name: tune_plans[i]);
     * tune_gain[i] the work each plan completed per time (1.0: as fast as one kernel after
     * the other), valid during the call. */
    const char *const *tune_plans;
    const double *tune_gain;
    unsigned n_tune_plans;
} ksched_trace;

typedef struct ksched_config {
    ksched_policy policy;       /* default KSCHED_KERNELET */
    double alpha_p, alpha_m;    /* pruning: a pair is pruned when |PUR1 - PUR2| < alpha_p
                                   or |MUR1 - MUR2| < alpha_m; default 0.4, 0.1 */
    double slice_overhead;      /* p of the minimum slice rule; default 0.02 */
    double min_cp;              /* co-schedule only when the expected CP exceeds this;
                                   default 0 */
    unsigned pipeline_depth;    /* launches queued per lane; default 2 */
    unsigned whole_depth;       /* the same for kernels that go out whole (fifo, base, and
                                   kernelet's whole and unsliced lone kernels); 0
                                   (default): pipeline_depth. A slice's depth stays
                                   pipeline_depth: deeper, a lone kernel's slices would all
                                   be committed before a partner could arrive */
    unsigned pair_split[2];     /* kernelet: {0, 0} (default) = the model chooses each pair's
                                   blocks per SM; else the blocks per SM of the pair's more
                                   compute-bound kernel (higher PUR) and of the other, for
                                   comparing the model's choice with measured splits
                                   (tests/gpu/tenants/pair_sweep) */
    unsigned pair_waves;        /* pair plans: each kernel's slices are this many waves at
                                   its blocks per SM, the two kernels' slices alternate in
                                   their lanes and each lane keeps at least its kernel's
                                   minimum slice queued (a GPU keeps two kernels resident
                                   only when their launches are small: docs/perf/
                                   scheduling.md); 0 (default) = slices of equal time,
                                   each at least the minimum slice (the paper's sizing,
                                   right where the backend holds the cap exactly: sim) */
    uint64_t pair_min_ns;       /* with pair_waves: a slice has at least as many waves as
                                   last this long by the model (each launch costs the GPU
                                   a gap of a few microseconds); default 0 */
    int pair_tune;              /* kernelet: 1 = each pair of kernel classes tries a few
                                   ways of slicing and launching (slice waves, the per-SM
                                   cap, not pairing at all) on its real work and keeps the
                                   one measured fastest (sched_tune.c); 0 (default) = the
                                   model's plan with pair_waves */
    unsigned base_lanes;        /* kernels base runs side by side; default 2 */
    uint64_t pair_short_ns;     /* kernelet: a kernel is paired (and sliced for it) only
                                   when it lasts at least this long by the model or more
                                   launches wait behind it on its stream; else the short
                                   kernels run whole, side by side, as base runs them: a
                                   program that waits for each short launch gains less from
                                   a partner than the slices cost it (the paper's MIX on
                                   the H100: 116 ms paired against 73.5 as base). Default
                                   0: any kernel may pair, the paper's policy (kerneletd's
                                   default is 1 ms, --pair-short-us) */
    uint64_t lone_slice_ns;     /* kernelet: a kernel with no partner on the only stream
                                   launching (no other stream has a launch open or made
                                   one within 5 times this) runs in slices of at least
                                   this long by the model, whole when it is shorter: each
                                   slice boundary costs the GPU its partial last wave (6%
                                   on the H100's bench kernels at the minimum slice), and
                                   a partner that comes joins at the next one. Default
                                   2 ms; 0 = the minimum slice, as when others launch */
    uint64_t seed;              /* mc's random choices; default 1 */
    uint64_t fairness_window_ns; /* weights: a tenant whose weighted GPU time runs this far
                                    ahead of the least-served backlogged tenant waits;
                                    default 5 ms */
    kmodel_options model;       /* options of the scheduler's model; default kmodel's */
    void (*trace)(void *user, const ksched_trace *t);   /* may be NULL */
    void *trace_user;
    double aging;               /* kernelet's bound on waiting: a pending kernel that has
                                   waited longer than aging times its time alone (the
                                   model's prediction) is scheduled next, beside its best
                                   partner or alone; 0 = no bound (the paper's policy);
                                   default 1000 */
    int device_a0;              /* 1 (default): model.latency.a0 is replaced by the a0 the
                                   backend's device_info reports (calibrated cuda, sim),
                                   when it reports one; 0: model's a0 as given */
    int lazy_pairs;             /* kernelet: 0 (default) = a class's pairs with the other
                                   profiled classes are evaluated by the model when it gets
                                   its profile, by the thread that drives the scheduler
                                   with the lock released, so that decisions find them
                                   cached (the paper's offline pre-execution); 1 = only
                                   when a decision first meets the pair. The same pairs
                                   and splits are chosen either way */
    unsigned max_contexts;      /* client contexts of one tenant that may hold a domain
                                   (memory, modules, launches) at once, each its own
                                   address window (ksched_mem_alloc_in); beyond it a new
                                   context's first use fails with KSCHED_ECONTEXTS, so
                                   that a tenant opening many contexts cannot take every
                                   window. 0: KSCHED_MAX_CONTEXTS_DEFAULT; at most
                                   KSCHED_MAX_CONTEXTS_LIMIT */
} ksched_config;

#define KSCHED_MAX_CONTEXTS_DEFAULT 16
#define KSCHED_MAX_CONTEXTS_LIMIT 1024

/* Fills c with the defaults listed in ksched_config. */
void ksched_config_default(ksched_config *c);

/* Creates a scheduler on backend (copied; the caller keeps ownership and destroys it after
 * ksched_free). profiles may be NULL; else the scheduler copies its records into its own
 * cache. Fails when the backend lacks an op, its device cannot be mapped to the model, or
 * the configuration is out of range. */
int ksched_new(ksched **out, const kbackend *backend, const ksched_config *cfg,
               const ksched_profile_cache *profiles, ksched_err *err);

/* Stops the dispatcher thread, cancels everything queued (callbacks are not called),
 * frees tenants' memory and modules in the backend. In-flight backend work should have
 * drained first (ksched_run_until_idle). */
void ksched_free(ksched *s);

/* Switches the policy; the next decision uses it. KSCHED_EUNSUPPORTED for opt when the
 * backend has no trial op. */
int ksched_set_policy(ksched *s, ksched_policy p, ksched_err *err);
ksched_policy ksched_get_policy(ksched *s);

/* ---- tenants ---- */

typedef struct ksched_tenant_policy {
    double weight;          /* share of GPU time among tenants of equal priority; > 0;
                               default 1 */
    int priority;           /* higher runs first, strictly; default 0 */
    uint64_t mem_quota;     /* device bytes; 0 = unlimited (default) */
    unsigned max_inflight;  /* launches queued or running; 0 = unlimited; default 1024 */
    int slicing;            /* 1 (default): kernels may be sliced and paired; 0: whole */
    uint64_t kernel_time_limit_ns; /* each launch (one slice) of its kernels may run this
                               long, then the backend stops it (kbackend_slice); 0 = none
                               (default); at most KSCHED_TIME_LIMIT_MAX_NS */
} ksched_tenant_policy;

/* The longest kernel time limit a tenant may be given: a day. */
#define KSCHED_TIME_LIMIT_MAX_NS (86400ull * 1000000000ull)

typedef struct ksched_tenant_stats {
    uint64_t launched;       /* launches submitted */
    uint64_t completed;      /* launches finished without error */
    uint64_t failed;         /* launches finished with an error (or canceled) */
    uint64_t gpu_time_ns;    /* sum of the durations of its slices */
    uint64_t bytes_copied;   /* by copies and memsets */
    uint64_t mem_in_use;     /* device bytes allocated */
    uint64_t errors;         /* operations that failed, of any kind */
    uint64_t queued;         /* operations submitted and not finished */
    int last_error;          /* code of the latest failed operation, 0 if none */
    char last_error_msg[160];
} ksched_tenant_stats;

/* Fills p with the defaults listed in ksched_tenant_policy. */
void ksched_tenant_policy_default(ksched_tenant_policy *p);

/* Adds a tenant (pol NULL = defaults); its id goes to *id. name: at most 63 bytes. */
int ksched_tenant_add(ksched *s, const char *name, const ksched_tenant_policy *pol,
                      uint32_t *id, ksched_err *err);
/* Cancels the tenant's queued work (KSCHED_ECANCELED to its callbacks); the tenant, its
 * memory and modules go once its running work has drained (while a driver runs). */
int ksched_tenant_remove(ksched *s, uint32_t tenant, ksched_err *err);
int ksched_tenant_set_policy(ksched *s, uint32_t tenant, const ksched_tenant_policy *pol,
                             ksched_err *err);
int ksched_tenant_get_policy(ksched *s, uint32_t tenant, ksched_tenant_policy *out,
                             ksched_err *err);
int ksched_tenant_get_stats(ksched *s, uint32_t tenant, ksched_tenant_stats *out,
                            ksched_err *err);
/* Ids of the tenants that still exist (removed ones vanish once drained), up to cap;
 * *n gets the total. */
int ksched_tenant_list(ksched *s, uint32_t *ids, size_t cap, size_t *n);

/* ---- streams and events ---- */

int ksched_stream_create(ksched *s, uint32_t tenant, uint32_t *stream, ksched_err *err);

/* Stream priorities: 0 (default) to KSCHED_STREAM_PRIORITY_MAX, higher first (CUDA's 0 to
 * -5 on an H100). A tenant's kernels on a stream of higher priority go before its kernels
 * on lower ones while they have blocks to hand out; other tenants are not affected. */
#define KSCHED_STREAM_PRIORITY_MAX 5

/* Sets the priority of the tenant's stream for the kernels submitted from now on. */
int ksched_stream_set_priority(ksched *s, uint32_t tenant, uint32_t stream, unsigned priority,
                               ksched_err *err);
/* The stream goes once its queued work has finished; stream 0 cannot be destroyed. */
int ksched_stream_destroy(ksched *s, uint32_t tenant, uint32_t stream, ksched_err *err);

int ksched_event_create(ksched *s, uint32_t tenant, uint32_t *event, ksched_err *err);
int ksched_event_destroy(ksched *s, uint32_t tenant, uint32_t event, ksched_err *err);
/* *done = 1 when the event's latest record has completed (or it was never recorded);
 * *time_ns (may be NULL) the backend time it completed. */
int ksched_event_query(ksched *s, uint32_t tenant, uint32_t event, int *done,
                       uint64_t *time_ns, ksched_err *err);

/* ---- client contexts ----
 * A tenant may have client contexts (a VM's guest processes: protocol header `context`).
 * Each context that uses memory, modules or launches has a backend domain of its own,
 * with its own address window where the backend has windows: its allocations and its
 * PTX modules' variables lie there, and its launches are fenced into it (the launching
 * context's, whoever loaded the function). Policy, quota, statistics and time limit stay
 * the tenant's. The calls without a context are those of context 0. */

/* Context of tenant has ended: its domain goes back to the backend (its window free for
 * reuse) once its allocations are freed, its modules unloaded and its launches finished;
 * a later use of the same number gets a new domain. Nothing when it has none. */
int ksched_context_close(ksched *s, uint32_t tenant, uint32_t context, ksched_err *err);
/* How many domains tenant's contexts hold (closed ones not yet released included). */
int ksched_tenant_domains(ksched *s, uint32_t tenant, unsigned *n, ksched_err *err);

/* ---- memory and modules (synchronous) ---- */

/* Device memory of the tenant, charged to its quota (KSCHED_EQUOTA) from before the
 * backend is called until it is freed. Where the backend allows it
 * (kbackend_device_info.mem_unlocked: cuda) the backend's call runs without the
 * scheduler's lock, and the tenant is paused meanwhile: none of its queued work starts,
 * other tenants' work is decided and completes as usual. A tenant removed meanwhile gets
 * KSCHED_ESTATE (a lost device: KSCHED_ELOST), its memory going with it. */
int ksched_mem_alloc(ksched *s, uint32_t tenant, uint64_t bytes, kbackend_devptr *out,
                     ksched_err *err);
/* The same in the domain of the tenant's client context (KSCHED_ECONTEXTS when it would
 * be one context too many). */
int ksched_mem_alloc_in(ksched *s, uint32_t tenant, uint32_t context, uint64_t bytes,
                        kbackend_devptr *out, ksched_err *err);
/* Frees an allocation (the same pause as ksched_mem_alloc); copies queued to it fail when
 * they start. */
int ksched_mem_free(ksched *s, uint32_t tenant, kbackend_devptr ptr, ksched_err *err);
/* Pins bytes of the daemon's memory at base (page aligned) for the device through the
 * backend: copies to and from it need no staging, and kernels reach it at *device.
 * KSCHED_EUNSUPPORTED when the backend cannot. Ownership is the caller's business: the
 * range belongs to no tenant's device memory. */
int ksched_host_register(ksched *s, void *base, uint64_t bytes, kbackend_devptr *device,
                         ksched_err *err);
/* Undoes ksched_host_register; nothing in flight may use the range. */
void ksched_host_unregister(ksched *s, void *base);
/* Host memory registered above, mapped for tenant's kernels at [device, device + bytes):
 * its copies and memsets may name it (CUDA's mapped pinned memory), with no charge to its
 * quota; KSCHED_EINVAL when it overlaps the tenant's memory. ksched_host_disown undoes it
 * (nothing when the tenant is gone). */
int ksched_host_adopt(ksched *s, uint32_t tenant, kbackend_devptr device, uint64_t bytes,
                      ksched_err *err);
void ksched_host_disown(ksched *s, uint32_t tenant, kbackend_devptr device);
/* Virtual memory management (CUDA's cuMemAddressReserve, cuMemCreate, cuMemMap) of a
 * tenant, on a backend with the vmm_* ops (else KSCHED_EUNSUPPORTED); sizes, offsets and
 * addresses are multiples of KBACKEND_VMM_GRANULE. A reservation counts as the tenant's
 * memory for its copies and launches; physical memory counts against its quota from
 * create to its release (or its last unmapping after that). A reservation cannot be freed
 * while mapped, an unmapping may not cut a mapping, and all of it goes with the tenant.
 * A tenant holds at most four times the device's memory in reservations (KSCHED_ENOMEM).
 * Where the backend allows it (kbackend_device_info.vmm_unlocked: cuda), create, map,
 * unmap and release call it without the scheduler's lock, the tenant paused as for an
 * allocation; a tenant removed meanwhile gets KSCHED_ESTATE, what was made going with it. */
int ksched_vmm_reserve(ksched *s, uint32_t tenant, uint64_t bytes, uint64_t align,
                       kbackend_devptr *va, ksched_err *err);
int ksched_vmm_free(ksched *s, uint32_t tenant, kbackend_devptr va, ksched_err *err);
int ksched_vmm_create(ksched *s, uint32_t tenant, uint64_t bytes, uint32_t *handle,
                      ksched_err *err);
int ksched_vmm_release(ksched *s, uint32_t tenant, uint32_t handle, ksched_err *err);
int ksched_vmm_map(ksched *s, uint32_t tenant, kbackend_devptr va, uint64_t bytes,
                   uint32_t handle, uint64_t offset, ksched_err *err);
int ksched_vmm_unmap(ksched *s, uint32_t tenant, kbackend_devptr va, uint64_t bytes,
                     ksched_err *err);
/* CUDA's tensor map encoding of m (protocol.h, checked by the decoder) into out
 * (KERNELET_TENSOR_MAP_BYTES), by the backend's driver; KSCHED_EUNSUPPORTED where the
 * backend has none. The caller decides whether the tenant's kernels may use one. */
int ksched_tensor_map_encode(ksched *s, const struct kernelet_tensor_map *m, uint8_t *out,
                             ksched_err *err);
/* Whether the backend has virtual memory management. */
bool ksched_has_vmm(ksched *s);

/* Whether the backend can pin and map host memory (ksched_host_register). */
bool ksched_host_mappable(ksched *s);
/* Whether the backend runs cubins (SASS) natively (ksched_module_load_cubin gives code). */
bool ksched_runs_cubins(ksched *s);
/* The address window that holds all of the tenant's memory and module variables (its
 * domain's, executor.h), for fencing its kernels: KSCHED_EUNSUPPORTED when the backend
 * has no windows. */
int ksched_tenant_window(ksched *s, uint32_t tenant, kbackend_window *out, ksched_err *err);
/* The window of the tenant's client context (made on first use, as by an allocation):
 * what a kernel that context launches is fenced into. */
int ksched_context_window(ksched *s, uint32_t tenant, uint32_t context, kbackend_window *out,
                          ksched_err *err);

/* Loads PTX (with the slicer's __kslice variants already added, see executor.h). */
int ksched_module_load(ksched *s, uint32_t tenant, const char *ptx, size_t len,
                       uint32_t *module, ksched_err *err);
/* The same with the module's variables in the domain of the tenant's client context. */
int ksched_module_load_in(ksched *s, uint32_t tenant, uint32_t context, const char *ptx,
                          size_t len, uint32_t *module, ksched_err *err);
/* Loads a cubin (SASS for the device; the caller checked its architecture): its kernels
 * run whole, never sliced or paired. A backend that runs PTX only (no module_load_cubin)
 * gets no code: the module is kept so that its functions can be looked up
 * (ksched_function_info.no_code) and every launch of them is refused with
 * KSCHED_EUNSUPPORTED. */
int ksched_module_load_cubin(ksched *s, uint32_t tenant, const void *image, size_t len,
                             uint32_t *module, ksched_err *err);
/* Counts bytes of device memory (the module's variables, which its backend placed in the
 * tenant's window) in the tenant's memory, against its quota, until the module is
 * unloaded: KSCHED_EQUOTA (nothing counted) when the quota has no room. Once a module. */
int ksched_module_charge(ksched *s, uint32_t tenant, uint32_t module, uint64_t bytes,
                         ksched_err *err);
int ksched_module_unload(ksched *s, uint32_t tenant, uint32_t module, ksched_err *err);

typedef struct ksched_function_info {
    int sliceable;          /* the module has the entry's sliced variant */
    int no_code;            /* a cubin's function on a backend that runs PTX only: its
                               launches are refused */
    uint64_t module_hash;   /* kernel identity: module hash and entry */
    kbackend_func_info attrs;
} ksched_function_info;

/* The function entry of module (and its sliced variant when present). */
int ksched_function_get(ksched *s, uint32_t tenant, uint32_t module, const char *entry,
                        uint32_t *function, ksched_function_info *info, ksched_err *err);

/* The device address and size of the module-scope variable name (.global or .const: CUDA's
 * __device__ and __constant__ variables, cuModuleGetGlobal) of the tenant's module; addr
 * and bytes may be NULL. From then on the tenant's copies and memsets may touch that range
 * (its module owns it) until the module is unloaded or the tenant removed; other tenants
 * may not. KSCHED_ENOTFOUND when the module has no such variable, KSCHED_EUNSUPPORTED when
 * the backend cannot look variables up, KSCHED_EBACKEND when the backend's range overlaps
 * memory of another tenant. */
int ksched_global_get(ksched *s, uint32_t tenant, uint32_t module, const char *name,
                      kbackend_devptr *addr, uint64_t *bytes, ksched_err *err);

/* ---- operations ---- */

typedef enum ksched_op_kind {
    KSCHED_OP_LAUNCH,
    KSCHED_OP_COPY_H2D,
    KSCHED_OP_COPY_D2H,
    KSCHED_OP_COPY_D2D,
    KSCHED_OP_MEMSET,
    KSCHED_OP_EVENT_RECORD,
    KSCHED_OP_EVENT_WAIT,   /* waits for the event's latest record at submission time */
    KSCHED_OP_HOST,         /* runs fn(user) in the driver thread; also a sync marker */
} ksched_op_kind;

typedef struct ksched_op {
    ksched_op_kind kind;
    union {
        struct {
            uint32_t function;
            unsigned grid[3], block[3];
            unsigned smem;              /* dynamic shared memory bytes */
            const void *params;         /* packed parameter block; copied at submission */
            size_t params_size;         /* at most 32 KiB */
            int polls_cancel;           /* the kernel polls its tenant's cancel word
                                           (fenced): kbackend_slice.polls_cancel */
            unsigned cluster[3];        /* blocks per thread-block cluster (0 or 1 each:
                                           none); with cooperative, the launch runs whole */
            int cooperative;            /* every block resident at once (grid sync) */
            uint32_t context;           /* the launching client context: the kernel runs
                                           in its domain (its window, control words) */
        } launch;
        struct { kbackend_devptr dst; const void *src; uint64_t bytes; } h2d;
        struct { void *dst; kbackend_devptr src; uint64_t bytes; } d2h;
        struct { kbackend_devptr dst, src; uint64_t bytes; } d2d;
        struct { kbackend_devptr dst; uint8_t value; uint64_t bytes; } memset;
        uint32_t event;
        struct { void (*fn)(void *user); void *user; } host;
    } u;
    int timing;                 /* EVENT_RECORD of a timing event (its elapsed time may be
                                   asked): a launch submitted right behind it on the stream
                                   is timed on the device, and the event is stamped by when
                                   that launch started there, as a GPU stamps an event it
                                   reaches just before the kernel */
} ksched_op;

typedef struct ksched_op_result {
    uint64_t op_id;
    ksched_op_kind kind;
    uint32_t tenant, stream;
    int status;             /* 0 or a KSCHED_E* code */
    int backend_status;     /* with KSCHED_EBACKEND: the backend's KBACKEND_E* code (a kernel
                               that failed on the device: KBACKEND_ELAUNCH) */
    const char *msg;        /* "" on success; valid during the callback */
    uint64_t submit_ns;     /* backend clock when submitted */
    uint64_t start_ns;      /* when its work started on the device (first slice) */
    uint64_t end_ns;        /* when it finished */
} ksched_op_result;

typedef void (*ksched_done_fn)(void *user, const ksched_op_result *r);

/* Queues op on the tenant's stream. Host memory of copies must stay valid until done.
 * done may be NULL. *op_id (may be NULL) gets the operation's id (also the launch's tag in
 * the backend). KSCHED_EAGAIN when the tenant has max_inflight launches queued;
 * KSCHED_ECONTEXTS when a launch's context would be one context too many. */
int ksched_submit(ksched *s, uint32_t tenant, uint32_t stream, const ksched_op *op,
                  ksched_done_fn done, void *user, uint64_t *op_id, ksched_err *err);
/* Between ksched_hold and ksched_release (which nest), submissions are queued but not yet
 * scheduled: a batch of them is then decided on and launched in one round, by the
 * releasing thread where the dispatcher allows (a submission outside a hold is driven so
 * at once). */
void ksched_hold(ksched *s);
void ksched_release(ksched *s);

/* ---- a lost device ---- */

/* 1 when the backend reported the device lost (KBACKEND_ELOST; msg, may be NULL, gets its
 * message), else 0. From then on every kernel not yet handed out fails with
 * KSCHED_EBACKEND (backend_status KBACKEND_ELOST), work in flight completes with the backend's
 * KBACKEND_ELOST, and ksched_submit, ksched_mem_alloc, ksched_module_load and
 * ksched_global_get answer KSCHED_ELOST. Nothing comes back: the caller (the daemon)
 * removes the tenants or frees the scheduler, destroys the backend and creates both anew. */
int ksched_lost(ksched *s, char *msg, size_t msglen);

/* ---- driving ---- */

/* Runs until nothing can advance: all queues empty, or blocked on events never recorded.
 * With a virtual-time backend it simulates; with a real one it waits for completions. */
int ksched_run_until_idle(ksched *s, ksched_err *err);
/* Runs until the backend clock reaches t_ns (virtual: simulated; real: waits). */
int ksched_run_until(ksched *s, uint64_t t_ns, ksched_err *err);
/* Starts / stops a dispatcher thread that drives the scheduler (daemon mode). */
int ksched_thread_start(ksched *s, ksched_err *err);
void ksched_thread_stop(ksched *s);

/* The backend's clock, ns. */
uint64_t ksched_now(ksched *s);

typedef struct ksched_stats {
    uint64_t decisions;           /* policy decisions taken */
    uint64_t decision_ns_total;   /* wall time spent in them (CLOCK_MONOTONIC) */
    uint64_t decision_ns_max;
    uint64_t pairs_evaluated;     /* model or trial evaluations inside decisions (cache
                                     misses), counted in decision_ns_total */
    uint64_t pairs_precomputed;   /* model evaluations of pairs of classes made outside
                                     decisions, when a class got its profile */
    uint64_t precompute_ns_total; /* wall time of those, the lock released, ... */
    uint64_t precompute_ns_max;   /* ... the longest pass (its pairs together) ... */
    uint64_t precompute_locked_ns; /* ... and the time the passes held the lock (finding
                                     the due pairs, storing the results) */
    uint64_t pairs_pruned;        /* over all decisions */
    uint64_t widenings;           /* decisions that had to widen alpha_p, alpha_m */
    uint64_t coschedules;         /* decisions that paired two kernels */
    uint64_t solo;                /* decisions that ran one kernel alone */
    uint64_t slices;              /* launches handed to the backend */
    uint64_t kernels_completed;   /* launch operations finished, any status */
    uint64_t profiles;            /* profile requests to the backend */
    uint64_t unprofiled;          /* kernels run whole for lack of a profile */
    uint64_t ops_pending;         /* operations queued or running, all tenants */
    uint64_t aged;                /* kernelet decisions for a kernel past the aging bound */
    uint64_t pairs_tuned;         /* pairs of classes whose tuning chose a plan */
    uint64_t pairs_not_gaining;   /* of them, the pairs that run better unpaired */
} ksched_stats;

void ksched_get_stats(ksched *s, ksched_stats *out);

/* The model options the scheduler uses: the configuration's, with the device's a0 when
 * ksched_config.device_a0 took it. */
void ksched_model_options(ksched *s, kmodel_options *out);

/* A copy of every profile the scheduler holds (loaded and learned), in a new cache for the
 * caller to free: what a scheduler made after a lost device starts with. */
int ksched_profiles_snapshot(ksched *s, ksched_profile_cache **out, ksched_err *err);

/* Writes every profile the scheduler holds (loaded and learned, with module hashes) to the
 * file at path, for a later start to load (kerneletd --profile-cache). */
int ksched_profiles_save(ksched *s, const char *path, ksched_err *err);

/* The profile the scheduler uses for (module_hash, entry), copied to *out; KSCHED_ENOTFOUND
 * when it has none. */
int ksched_profile_lookup(ksched *s, uint64_t module_hash, const char *entry,
                          kbackend_profile *out);

#ifdef __cplusplus
}
#endif

#endif
