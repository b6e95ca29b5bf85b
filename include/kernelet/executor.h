/* The executor interface: what the scheduler needs from a GPU (its helpers, executor.c,
 * are in library kernelet-sched, host-sched/sched/). Each backend (cuda, emu and sim, one
 * folder each under host-sched/backends/) fills a kbackend_ops table and hands the
 * scheduler a kbackend {ops, state}.
 *
 * Contract, for backend writers:
 *
 * - Threads. The scheduler calls the ops from one thread at a time (it holds its own lock
 *   while it does), so a backend needs no lock around its own bookkeeping unless it has
 *   threads of its own. Exceptions: host_register and tensor_map_encode are called without
 *   the lock, and so are mem_alloc and mem_free where the backend sets
 *   kbackend_device_info.mem_unlocked, and module_load_ptx and module_load_cubin where it
 *   sets module_unlocked, and vmm_create, vmm_map, vmm_unmap and vmm_release where it
 *   sets vmm_unlocked (they then run beside every other op, each other included; the
 *   scheduler starts none of the domain's work meanwhile). Ops never wait for the device:
 *   a submission (copy, memset, launch, profile) queues the work and returns; the result
 *   comes later through the done callback.
 *
 * - Completion. Every accepted submission (return value 0) ends in exactly one call of its
 *   done(user, completion), from any thread the backend likes (a driver callback thread, a
 *   worker thread, or the thread inside progress()), possibly before the submitting call has
 *   returned. done must not call back into the backend; the scheduler's done only queues the
 *   result and wakes its dispatcher. A submission that returns an error never calls done.
 *   Completions carry the start and end of the work in the backend's clock (now_ns).
 *   No busy polling: a real-time backend signals completions as they happen (CUDA host
 *   functions or events waited on by a thread).
 *
 * - Virtual time. A backend whose clock only moves when asked (the sim) sets
 *   kbackend_device_info.virtual_time and provides progress(): it runs the device up to the
 *   next event (or up to `until_ns`) and delivers the completions of that event from inside
 *   progress. Real-time backends leave progress NULL.
 *
 * - Lanes. Launches carry a lane in [0, kbackend_device_info.lanes). Launches in one lane run
 *   in submission order (a CUDA stream per lane, say); launches in different lanes may run
 *   concurrently. Copies and memsets have no lane; the scheduler orders them itself.
 *
 * - Slicing. A kernel's sliced variant is the PTX entry "<entry>__kslice" (KBACKEND_SLICE_SUFFIX,
 *   the slicer's KPTX_SLICE_SUFFIX in kernelet/ptx.h): the original parameters followed by
 *   four .u32 parameters — first linear block id, original grid x, y, z. The scheduler loads
 *   PTX that already holds these variants and asks for both functions. To run a slice of
 *   `count` blocks starting at linear block `first`, the backend launches the sliced function
 *   as a 1-D grid (count, 1, 1) with the original block dimensions and the parameter block
 *   extended by the four values (placed after the last original parameter at 4-byte
 *   alignment; the backend knows the parameter layout). A launch of the unsliced function
 *   runs the original 3-D grid, with first = 0 and count = the grid's block count.
 *
 * - Domains. Every allocation and module belongs to a domain: one client context of one of
 *   the scheduler's tenants (a VM's guest process; a host process's one context has its
 *   tenant's id as domain, the others ids from 0x80000000 on, host-sched/sched/
 *   sched_domain.c; 0: none, the backend's common memory); a launch runs in its launching
 *   context's domain. A backend sees only domain ids; the tenant's policy (its time limit
 *   included) reaches each domain of it. A backend with address windows
 *   (domain_window) places all memory of a domain, module variables included, in that
 *   domain's window: one power-of-two sized, size-aligned range of device addresses that
 *   nothing else uses, so that a kernel fenced by the PTX rewriter (kptx_fence_module in
 *   kernelet/ptx.h: the window's base and mask are two extra parameters its launcher
 *   appends) can reach no other domain's memory.
 *
 * - Errors. Functions return 0 or a negative KBACKEND_E* code, and on failure fill a
 *   kbackend_error (which may be NULL) with a message; they never print or abort. A kernel
 *   that fails on the device completes with status KBACKEND_ELAUNCH and a message; the backend
 *   must stay usable for other work if it can at all.
 *
 * - Lost device. When it cannot (a sticky fault: on CUDA an illegal address or a trap
 *   poisons the whole context, every tenant's), the backend marks itself lost: the work in
 *   flight at that moment completes with KBACKEND_ELOST (the faulting kernel cannot be told
 *   from the others; the message names the device's error), and from then on every op that
 *   needs the device is refused with KBACKEND_ELOST. Only destroy, mem_free and module_unload
 *   (which succeed, releasing host-side records) are still usable. The scheduler, on the
 *   first KBACKEND_ELOST, fails the work of every tenant and refuses new work (ksched.h,
 *   ksched_lost); whoever created the backend (the daemon) destroys the scheduler and the
 *   backend and creates new ones (docs/SCHEDULER.md, "Lost device").
 */
#ifndef KERNELET_EXECUTOR_H
#define KERNELET_EXECUTOR_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/model.h"

struct kernelet_tensor_map; /* protocol.h */

#ifdef __cplusplus
extern "C" {
#endif

/* Name suffix of a kernel's sliced variant (equal to KPTX_SLICE_SUFFIX). */
#define KBACKEND_SLICE_SUFFIX "__kslice"
/* Extra .u32 parameters of a sliced variant: first block, grid x, grid y, grid z. */
#define KBACKEND_SLICE_EXTRA_PARAMS 4

/* Error codes (negative); 0 is success. */
enum {
    KBACKEND_OK = 0,
    KBACKEND_EINVAL = -1,       /* bad argument: NULL, out of range, unknown device pointer */
    KBACKEND_ENOMEM = -2,       /* host memory exhausted */
    KBACKEND_EDEVMEM = -3,      /* device memory exhausted */
    KBACKEND_ENOTFOUND = -4,    /* no such function in the module */
    KBACKEND_ELAUNCH = -5,      /* a kernel failed on the device (fault, trap, timeout) */
    KBACKEND_EUNSUPPORTED = -6, /* the backend does not offer this operation */
    KBACKEND_EDEVICE = -7,      /* any other device or driver failure */
    KBACKEND_EMODULE = -8,      /* the module text was refused (PTX syntax, JIT failure) */
    KBACKEND_ELOST = -9,        /* the device context was lost: every allocation, module and
                                queued work of this backend is gone; recreate it */
};

/* A device address. 0 is never a valid allocation. */
typedef uint64_t kbackend_devptr;

/* A domain's address window: [base, base + size), size a power of two, base a multiple of
 * it. A fenced kernel's addresses become (addr & (reach - 1)) | base, with reach the
 * power of two (at most size) below which every address is mapped now (the backend's
 * allocations, and where it has none a sink of the domain's own: an unmapped address
 * would be a device fault), or size where reach is 0. cancel and fault are
 * the device addresses of the domain's control words (.u32 each, outside every window,
 * kernelet/ptx.h "Control"), which its fenced kernels take as parameters too; 0 where the
 * backend runs no kernel code (sim). */
typedef struct kbackend_window {
    uint64_t base, size;
    uint64_t reach;               /* 0: size */
    uint64_t cancel, fault;
} kbackend_window;

/* Backend-defined handles; the scheduler only passes them back. */
typedef struct kbackend_module kbackend_module;
typedef struct kbackend_function kbackend_function;

typedef struct kbackend_error {
    int code;          /* the KBACKEND_E* code returned */
    char msg[256];     /* what went wrong, one line */
} kbackend_error;

/* The device as the backend reports it. */
typedef struct kbackend_device_info {
    char name[64];              /* "NVIDIA H100 80GB HBM3", "sim H100" */
    int cc_major, cc_minor;     /* compute capability (9, 0 for Hopper) */
    unsigned sms;
    unsigned max_warps_per_sm;
    unsigned max_blocks_per_sm;
    unsigned max_threads_per_block;
    unsigned regs_per_sm;
    unsigned max_regs_per_thread;
    unsigned smem_per_sm;        /* bytes usable by resident blocks */
    unsigned max_smem_per_block; /* bytes, with the opt-in maximum */
    double clock_mhz;            /* SM clock */
    double mem_bandwidth_gbs;    /* device memory bandwidth, 1e9 bytes/s */
    uint64_t total_mem;          /* device memory bytes */
    unsigned lanes;              /* launch lanes offered, >= 1 */
    uint64_t slice_overhead_ns;  /* extra time one more launch in a busy lane costs (for
                                    the minimum slice size rule); 0 = unknown */
    int pci_known;               /* 1: pci_* say where the GPU sits on the host's PCI bus
                                    (tenants on the host find it there with NVML, as NCCL
                                    does); 0: a device of no PCI location (emu, sim) */
    unsigned pci_domain, pci_bus, pci_device;
    int wave_launches;           /* 1: a slice held to max_blocks_per_sm runs as one launch
                                    per wave of that many blocks on every SM, each paying
                                    slice_overhead_ns (what a pair's co-run rate loses to
                                    its launches, kmodel_launch_cp) */
    int virtual_time;            /* 1: time moves only in progress() */
    const kmodel_gpu *model_gpu; /* the model's parameters when the backend knows them
                                    exactly (the sim; valid while the backend lives), else
                                    NULL */
    int module_vars_outside;     /* 1: module variables do not lie in their domain's window
                                    (the driver places them): a fenced kernel cannot reach
                                    them, so kernels that use them cannot be fenced */
    int module_vars_relocated;   /* with module_vars_outside: module_load_ptx moves a
                                    domain's relocatable .global variables into its window
                                    (kptx_reloc_* in kernelet/ptx.h), so kernels using
                                    those can be fenced (KPTX_FENCE_VARS_RELOCATED) */
    uint64_t stack_bytes;        /* each thread's call stack (CU_LIMIT_STACK_SIZE): fenced
                                    recursion ends its thread a margin before it would
                                    overflow it (kptx_fence_opts); 0 = no such guard */
    uint64_t stack_top;          /* where a thread's stack starts, as the guard counts it
                                    (kptx_fence_opts.stack_top); 0 = KPTX_STACK_TOP */
    uint64_t local_top;          /* the stack pointer of an entry without locals, exactly:
                                    fenced kernels' local accesses stay below it
                                    (kptx_fence_opts.local_top); 0 = left alone */
    int launch_attrs;            /* 1: runs thread-block cluster and cooperative launches
                                    (kbackend_slice.cluster, .cooperative) */
    int mem_unlocked;            /* 1: mem_alloc and mem_free may run beside the other ops
                                    (the backend's own locks guard them): the scheduler
                                    calls them without its lock, with nothing of the
                                    domain started meanwhile, so that a slow allocation
                                    (mapping and zeroing GiBs) holds up no other domain */
    int module_unlocked;         /* 1: module_load_ptx and module_load_cubin may run beside
                                    the other ops, each other included (the backend's own
                                    locks guard them), as mem_unlocked says: a big module's
                                    JIT holds up no other domain */
    int vmm_unlocked;            /* 1: vmm_create, vmm_map, vmm_unmap and vmm_release may
                                    run beside the other ops, each other included (the
                                    backend's own locks guard them), as mem_unlocked says:
                                    creating (and clearing) GiBs of memory or mapping it
                                    holds up no other domain */
    double a0;                   /* the model's bandwidth factor a0 (measured / peak
                                    bandwidth, (0, 1]; docs/MODEL.md "Calibration"): the
                                    cuda backend's calibration file, the sim's truth;
                                    0 = unknown (kbackend_device_model_options) */
} kbackend_device_info;

/* What a function handle is, from function_get. */
typedef struct kbackend_func_info {
    unsigned regs_per_thread;       /* 0 = unknown */
    unsigned static_smem;           /* bytes of static shared memory */
    unsigned max_threads_per_block; /* 0 = unknown */
} kbackend_func_info;

/* One launch: a slice of a kernel, or a whole kernel. */
typedef struct kbackend_slice {
    const kbackend_function *fn;   /* the sliced variant when sliced, else the entry itself */
    int sliced;                 /* 1: run blocks [first, first + count) as a 1-D grid */
    uint64_t first;             /* first linear block id (0 when not sliced) */
    uint64_t count;             /* blocks (the grid's block count when not sliced) */
    unsigned grid[3];           /* the original launch's grid */
    unsigned block[3];          /* threads per block */
    unsigned smem;              /* dynamic shared memory bytes per block */
    const void *params;         /* original parameter block, packed with natural alignment
                                   (as CU_LAUNCH_PARAM_BUFFER_POINTER); valid only during
                                   the call: copy it */
    size_t params_size;
    unsigned lane;              /* < kbackend_device_info.lanes */
    unsigned max_blocks_per_sm; /* residency cap hint for co-scheduling, 0 = none: keep at
                                   most this many blocks of this launch on one SM (sim:
                                   exact; a real GPU may approximate it or ignore it) */
    uint64_t tag;               /* the original launch's id, the same for all its slices */
    uint64_t time_limit_ns;     /* the tenant's kernel time limit: a launch running longer
                                   completes with KBACKEND_ELAUNCH and a message that says
                                   "time limit" (the server answers CUDA's launch timeout);
                                   the backend stops it where it can (emu) and at least
                                   reports it (cuda). 0 = none */
    const char *tenant;         /* the tenant's name, for the operator's log; valid only
                                   during the call; may be NULL */
    uint32_t domain;            /* the launching context's domain (0: none): whose window
                                   it was fenced into and whose control words a
                                   fenced kernel uses. A launch whose kernel wrote a fault
                                   code completes with KBACKEND_ELAUNCH and a message that
                                   says "device assert" or "device trap" */
    int polls_cancel;           /* 1: the kernel polls its domain's cancel word (the fencing
                                   pass made it so): raising the word stops it. 0: nothing
                                   stops it on a GPU but its end (or its context's) */
    unsigned cluster[3];        /* blocks per thread-block cluster, 0 or 1 each: none.
                                   Such a launch (and a cooperative one) is never sliced;
                                   a backend that cannot run it fails with
                                   KBACKEND_EUNSUPPORTED */
    int cooperative;            /* 1: every block must be resident at once (grid-wide
                                   synchronisation: cuLaunchCooperativeKernel) */
    int timed;                  /* 1: a tenant's timing event is stamped by when this slice
                                   started: report start_ns as the device saw it (cuda:
                                   timing events around it), not when it could start */
} kbackend_slice;

/* Whether a launch of these clusters (blocks per cluster, 0 or 1 each: none) and
 * cooperative flag needs launch attributes: such a launch runs whole. */
static inline int kbackend_launch_has_attrs(const unsigned cluster[3], int cooperative)
{
    return cooperative || cluster[0] > 1 || cluster[1] > 1 || cluster[2] > 1;
}

/* The result of one submission. */
typedef struct kbackend_completion {
    int status;                 /* 0 or a KBACKEND_E* code */
    const char *msg;            /* "" on success; valid only during the callback */
    uint64_t start_ns, end_ns;  /* when the work ran, backend clock */
} kbackend_completion;

typedef void (*kbackend_done_fn)(void *user, const kbackend_completion *c);

/* A kernel's characteristics (paper: PUR, MUR, Rm from a profiled slice). A backend that
 * can profile fills this from counters; the sim from its data file. */
typedef struct kbackend_profile {
    double pur;                 /* pipeline utilisation ratio, [0, 1] */
    double mur;                 /* memory-bandwidth utilisation ratio, [0, 1] */
    double rm;                  /* memory instructions that reach DRAM / instructions,
                                   [0, 1] (docs/MODEL.md, "Kernel characteristics") */
    double uncoalesced;         /* fraction of memory instructions uncoalesced, [0, 1] */
    unsigned warps_per_block;   /* of the profiled launch (the scheduler uses its own) */
    unsigned regs_per_thread;   /* 0 = unknown */
    unsigned smem_per_block;    /* static shared memory bytes */
    double insts_per_warp;      /* warp instructions one warp executes, > 0 */
    uint64_t min_slice_blocks;  /* smallest slice with <= 2% overhead; 0 = not measured */
    uint64_t blocks_done;       /* blocks [0, blocks_done) of the launch were run while
                                   profiling and must not run again (0 when none ran); for
                                   an unsliced launch 0 or its whole count (the launch ran
                                   as its own profile and is complete) */
} kbackend_profile;

/* A co-scheduling trial for the oracle policy: two kernels side by side with a fixed number
 * of blocks per SM each, measured apart from the real work's completions.
 *
 * Data: the launches carry the tenants' real parameters, and the backend cannot know which
 * memory a kernel writes or how large its buffers are, so it cannot make scratch copies. A
 * backend may therefore rerun real blocks on the real data (the cuda backend does; the sim
 * computes and touches nothing). The trial, and so the opt policy, is valid only for kernels
 * whose outputs are a function of their inputs (a block run again writes the same values:
 * out = f(in), no accumulation in place, no atomics on outputs), as all eight benchmark
 * kernels are. opt is an evaluation oracle; do not use it with arbitrary tenant kernels. */
typedef struct kbackend_trial {
    kbackend_slice kernel[2];      /* launch shapes; first/count/lane/tag are ignored */
    unsigned blocks_per_sm[2];  /* >= 1 each */
} kbackend_trial;

typedef struct kbackend_trial_result {
    double together_bps[2];     /* blocks per second of each kernel while side by side */
    double alone_bps[2];        /* blocks per second of each kernel alone, full occupancy */
} kbackend_trial_result;

typedef struct kbackend_ops {
    const char *name;           /* "sim", "cuda", "emu" */
    /* Releases the backend; nothing may be in flight. */
    void (*destroy)(void *state);
    int (*device_info)(void *state, kbackend_device_info *out, kbackend_error *err);
    /* The backend's clock in ns (virtual for the sim, CLOCK_MONOTONIC for real devices). */
    uint64_t (*now_ns)(void *state);

    /* bytes of device memory for domain (inside its window when the backend has windows:
     * KBACKEND_EDEVMEM when the window is full). */
    int (*mem_alloc)(void *state, uint32_t domain, uint64_t bytes, kbackend_devptr *out,
                     kbackend_error *err);
    int (*mem_free)(void *state, kbackend_devptr ptr, kbackend_error *err);
    /* Asynchronous copies and fill; host memory must stay valid until done. */
    int (*copy_h2d)(void *state, kbackend_devptr dst, const void *src, uint64_t bytes,
                    kbackend_done_fn done, void *user, kbackend_error *err);
    int (*copy_d2h)(void *state, void *dst, kbackend_devptr src, uint64_t bytes,
                    kbackend_done_fn done, void *user, kbackend_error *err);
    int (*copy_d2d)(void *state, kbackend_devptr dst, kbackend_devptr src, uint64_t bytes,
                    kbackend_done_fn done, void *user, kbackend_error *err);
    int (*memset_d8)(void *state, kbackend_devptr dst, uint8_t value, uint64_t bytes,
                     kbackend_done_fn done, void *user, kbackend_error *err);

    /* Loads PTX text (len bytes, need not be NUL-terminated) and compiles it for the device;
     * its module variables belong to domain. */
    int (*module_load_ptx)(void *state, uint32_t domain, const char *ptx, size_t len,
                           kbackend_module **out, kbackend_error *err);
    /* Unloads; no launch of its functions may be in flight. */
    int (*module_unload)(void *state, kbackend_module *m, kbackend_error *err);
    /* The function named entry; KBACKEND_ENOTFOUND when the module has none. info may be NULL. */
    int (*function_get)(void *state, kbackend_module *m, const char *entry, kbackend_function **out,
                        kbackend_func_info *info, kbackend_error *err);
    /* Launches one slice (or whole kernel). */
    int (*launch)(void *state, const kbackend_slice *s, kbackend_done_fn done, void *user,
                  kbackend_error *err);

    /* Optional (NULL when unsupported). Characterises the kernel of launch (the whole
     * launch; fn is the sliced variant when launch->sliced) and fills *out before done is
     * called. With launch->sliced it may run blocks [0, n) of the real launch to measure
     * them (the paper profiles a small slice) and report n in out->blocks_done: the
     * scheduler then runs only [n, count). Without it (a kernel that must run whole) it
     * either runs no block (blocks_done = 0) or runs the whole launch exactly once as its
     * own profile (blocks_done = count): the launch is then complete and the scheduler
     * does not run it again, so an unsliceable kernel is profiled without running twice.
     * Blocks count as run only when done reports status 0. */
    int (*profile)(void *state, const kbackend_slice *launch, kbackend_profile *out,
                   kbackend_done_fn done, void *user, kbackend_error *err);
    /* Optional. Measures a co-schedule synchronously (the oracle policy needs it); may rerun
     * real blocks on real data: see kbackend_trial. */
    int (*trial)(void *state, const kbackend_trial *t, kbackend_trial_result *out, kbackend_error *err);
    /* Virtual-time backends only: advance to the next event, but not past until_ns, and
     * deliver its completions. Returns 1 when it delivered completions, 0 when nothing
     * completes by until_ns (the clock then stands at until_ns, or stays where it is when
     * nothing is in flight and until_ns is UINT64_MAX), or a KBACKEND_E* code. */
    int (*progress)(void *state, uint64_t until_ns, kbackend_error *err);

    /* Optional (NULL: the scheduler answers KBACKEND_EUNSUPPORTED / KSCHED_EUNSUPPORTED).
     * The device address and size in bytes of the module-scope variable name of m (a
     * .global or .const variable: CUDA's __device__ and __constant__, cuModuleGetGlobal);
     * addr and bytes may each be NULL. KBACKEND_ENOTFOUND when m defines no such variable
     * (an .extern declaration defines none). The range must stay valid until m is
     * unloaded, and it must belong to this load of the module alone: a backend that
     * shares compiled code between loads of the same text must not share variables
     * between them (each load is one tenant's; the scheduler refuses a range that
     * overlaps memory of another tenant). */
    int (*global_get)(void *state, kbackend_module *m, const char *name, kbackend_devptr *addr,
                      uint64_t *bytes, kbackend_error *err);

    /* Optional (NULL: work in flight always ends by itself). For a daemon that stops: from
     * now on every submission completes at once with KBACKEND_ELAUNCH, and the kernel
     * running now stops soon with the same status, so that a kernel that never ends cannot
     * hold up the stop. Returns once nothing runs or waits in the backend; calling it again
     * waits for what was submitted since. destroy may follow. */
    void (*cancel_all)(void *state);

    /* Optional (NULL: the backend runs PTX only, as the emu and sim do). Loads a cubin (len
     * bytes of ELF: SASS for this device, checked by the caller to fit its architecture)
     * as it is, natively: no sliced variants, so its kernels always run whole. The module
     * is unloaded, and its functions and variables looked up, with the ops above. */
    int (*module_load_cubin)(void *state, const void *image, size_t len, kbackend_module **out,
                             kbackend_error *err);

    /* Optional (NULL: the backend has no address windows, and kernels cannot be fenced).
     * The window of domain (> 0), made on first use: base is a multiple of size, size a
     * power of two, and no other domain's memory lies in it. */
    int (*domain_window)(void *state, uint32_t domain, kbackend_window *out,
                         kbackend_error *err);
    /* Optional. domain has no memory or module left (its context closed, or its tenant
     * went): its window and control words may be reused. */
    void (*domain_release)(void *state, uint32_t domain);
    /* Optional. The kernel time limit of domain's tenant is now limit_ns (0: none; called
     * for each domain of the tenant): its
     * launches running now are held to it, counted from their start (one that has run
     * longer is stopped at once, as at its limit). Without it a new limit applies to the
     * launches that start after it. */
    void (*domain_time_limit)(void *state, uint32_t domain, uint64_t limit_ns);

    /* Optional (NULL: host memory is only ever copied). Pins [base, base + bytes) of the
     * daemon's memory (page aligned) for the device: copies from and to it need no staging,
     * and kernels reach it at *device (the same address where the device shares the host's
     * address space). KBACKEND_EUNSUPPORTED when the device cannot map host memory. */
    int (*host_register)(void *state, void *base, uint64_t bytes, kbackend_devptr *device,
                         kbackend_error *err);
    /* Optional. Undoes host_register of base; nothing in flight may use the range. */
    void (*host_unregister)(void *state, void *base);

    /* Optional, all six or none (NULL: KBACKEND_EUNSUPPORTED): virtual memory management
     * as CUDA's (cuMemAddressReserve, cuMemCreate, cuMemMap), for tenants whose kernels
     * are not fenced. Sizes, offsets and addresses are multiples of KBACKEND_VMM_GRANULE.
     * vmm_reserve: bytes of device addresses aligned to align (a power of two, 0: the
     * granule) in *va; copies and kernels may name any byte of a reservation (what is not
     * mapped fails on the device). vmm_create: bytes of physical memory, *handle.
     * vmm_map: bytes of handle from offset at va, inside a reservation, readable and
     * writable by the device. Unmap, release and free undo them; nothing in flight may use
     * what they undo. */
    int (*vmm_reserve)(void *state, uint64_t bytes, uint64_t align, kbackend_devptr *va,
                       kbackend_error *err);
    void (*vmm_free)(void *state, kbackend_devptr va, uint64_t bytes);
    int (*vmm_create)(void *state, uint64_t bytes, uint64_t *handle, kbackend_error *err);
    void (*vmm_release)(void *state, uint64_t handle);
    int (*vmm_map)(void *state, kbackend_devptr va, uint64_t bytes, uint64_t handle,
                   uint64_t offset, kbackend_error *err);
    void (*vmm_unmap)(void *state, kbackend_devptr va, uint64_t bytes);

    /* Optional (NULL: KBACKEND_EUNSUPPORTED). CUDA's tensor map encoding
     * (cuTensorMapEncodeTiled, ...Im2col, ...Im2colWide, cuTensorMapReplaceAddress) of m,
     * whose shape the protocol decoder checked, into out (KERNELET_TENSOR_MAP_BYTES); the
     * driver judges the values (KBACKEND_EINVAL). For kernels that are not fenced. */
    int (*tensor_map_encode)(void *state, const struct kernelet_tensor_map *m, uint8_t *out,
                             kbackend_error *err);
} kbackend_ops;

/* The unit of virtual memory management: CUDA's allocation granularity on the GPUs
 * Kernelet runs on. */
#define KBACKEND_VMM_GRANULE (2ull << 20)

typedef struct kbackend {
    const kbackend_ops *ops;
    void *state;
} kbackend;

/* Static description of an error code. */
const char *kbackend_strerror(int code);

/* Fills err (may be NULL) with code and a printf-style message; returns code. */
int kbackend_fail(kbackend_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks that a backend has every mandatory op; 0 or KBACKEND_EINVAL naming the missing one. */
int kbackend_validate(const kbackend *b, kbackend_error *err);

/* The model's view of a device: info->model_gpu when set; else the built-in GPU of the
 * same name or compute capability (for what a device cannot report: schedulers, peak IPC,
 * latency) with every figure the device did report; name then points into info. KBACKEND_EINVAL when the figures are inconsistent or no built-in GPU matches. */
int kbackend_device_gpu(const kbackend_device_info *info, kmodel_gpu *out, kbackend_error *err);

/* The device's share of the model options: opt->latency.a0 = info->a0 when the device
 * reports one in (0, 1]; everything else of opt unchanged. */
void kbackend_device_model_options(const kbackend_device_info *info, kmodel_options *opt);

/* Blocks in a grid (product of the three dimensions). */
uint64_t kbackend_grid_blocks(const unsigned grid[3]);

/* ---- Address windows (windows.c): for backends that carve one span of device addresses
 * into equal windows, one per domain ---- */

/* Default size of a domain's window: 64 GiB of addresses (not of memory). */
#define KBACKEND_WINDOW_DEFAULT (64ull << 30)
/* Smallest and largest window sizes a backend accepts. */
#define KBACKEND_WINDOW_MIN (16ull << 20)
#define KBACKEND_WINDOW_MAX (1ull << 40)

typedef struct kbackend_windows kbackend_windows;

/* Windows of window_size bytes (a power of two in [KBACKEND_WINDOW_MIN,
 * KBACKEND_WINDOW_MAX]) in [span_base, span_base + span_size); span_base must be a
 * multiple of window_size. KBACKEND_EINVAL when the sizes do not fit. */
int kbackend_windows_new(uint64_t span_base, uint64_t span_size, uint64_t window_size,
                         kbackend_windows **out, kbackend_error *err);
void kbackend_windows_free(kbackend_windows *w);
/* The window of domain, given to it on first use. KBACKEND_EDEVMEM when every window is
 * taken. */
int kbackend_windows_get(kbackend_windows *w, uint32_t domain, kbackend_window *out,
                         kbackend_error *err);
/* The window of domain (if it has one) is free again. */
void kbackend_windows_release(kbackend_windows *w, uint32_t domain);
/* Whether size is a window size kbackend_windows_new accepts. */
int kbackend_window_size_valid(uint64_t size);
/* The mask a fenced kernel of w's domain gets: its reach's (the part of the window that is
 * mapped) when the backend gives one, a power of two no larger than the window, else the
 * whole window's. */
uint64_t kbackend_window_mask(const kbackend_window *w);

#ifdef __cplusplus
}
#endif

#endif
