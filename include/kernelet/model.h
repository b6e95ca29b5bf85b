/* Kernelet performance model (library kernelet-model, model/).
 *
 * The Markov-chain model of the Kernelet paper, section "Performance Model": an SM (or the
 * single-scheduler "virtual SM" derived from it) runs warps that are either ready or idle
 * (waiting on memory; with uncoalesced accesses idle splits into two states). One step of
 * the chain is a scheduling round in which every ready warp issues one instruction. The
 * steady state of the chain gives the IPC of one kernel alone (homogeneous workload) or of
 * each kernel in a mix (heterogeneous workload), from which follow the co-scheduling profit
 * CP and the balanced slice ratio that the scheduler uses. docs/MODEL.md has the equations.
 *
 * Usage: pick a GPU (kmodel_gpu_lookup("H100")), create a context with kmodel_ctx_new (it
 * holds the options, the derived latency parameters and the work buffers, so it is not
 * shared between threads without a lock; make one per thread), describe kernels with
 * kmodel_kernel and ask kmodel_ipc_single, kmodel_mix, kmodel_pair, kmodel_balanced or
 * kmodel_rank_pairs. Every function returns 0 or a negative KMODEL_E* code; on error the
 * context keeps a message (kmodel_ctx_error). The library never prints or aborts.
 *
 * IPC unit: warp instructions per cycle per SM, i.e. the model's issue utilisation in [0, 1]
 * times the GPU's peak_ipc. CP and slice ratios do not depend on that scale.
 */
#ifndef KERNELET_MODEL_H
#define KERNELET_MODEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (negative); 0 is success. */
enum {
    KMODEL_OK = 0,
    KMODEL_EINVAL = -1,     /* a parameter is out of range, NaN, or a pointer is NULL */
    KMODEL_ENOFIT = -2,     /* the requested blocks do not fit one SM (warps, blocks, regs, smem) */
    KMODEL_ENOMEM = -3,     /* allocation failed */
    KMODEL_ETOOBIG = -4,    /* the chain has more states than options.max_states */
    KMODEL_ENOCONV = -5,    /* the iterative solver did not reach options.tol in max_iter */
    KMODEL_ESINGULAR = -6,  /* the steady state could not be solved (numerically singular) */
    KMODEL_ENOTFOUND = -7,  /* unknown GPU name */
};

/* Most kernels in one mix (kmodel_mix); the scheduler uses pairs. */
#define KMODEL_MAX_KERNELS 4

/* One GPU as the model sees it. Per-SM limits as in the CUDA occupancy calculation. */
typedef struct kmodel_gpu {
    const char *name;             /* "C2050", "GTX680", "H100", "H200" for the built-ins */
    unsigned sms;                 /* streaming multiprocessors */
    unsigned max_warps_per_sm;    /* resident warps */
    unsigned max_blocks_per_sm;   /* resident thread blocks */
    unsigned max_warps_per_block; /* 1024 threads = 32 warps on all built-ins */
    unsigned regs_per_sm;         /* 32-bit registers */
    unsigned max_regs_per_thread;
    unsigned reg_alloc_unit;      /* registers are allocated per warp in multiples of this */
    unsigned smem_per_sm;         /* shared memory bytes usable by resident blocks */
    unsigned max_smem_per_block;  /* bytes */
    unsigned smem_alloc_unit;     /* bytes; a block's shared memory is rounded up to this */
    unsigned smem_reserved_per_block; /* bytes the system reserves per block (1 KiB on sm_80+) */
    unsigned schedulers_per_sm;   /* warp schedulers; the virtual SM is 1/schedulers of an SM */
    double peak_ipc;              /* warp instructions per cycle per SM at best */
    double clock_mhz;             /* core clock */
    double mem_bandwidth_gbs;     /* global memory bandwidth, GB/s (1e9 bytes/s) */
    double mem_latency_cycles;    /* base (unloaded) global memory latency L0, core cycles */
    unsigned txn_bytes;           /* memory transaction size: an uncoalesced warp access
                                     moves 32 transactions, a coalesced one 128 bytes */
} kmodel_gpu;

/* A kernel's characteristics, from profiling a few blocks (paper: Rm = memory
 * instructions / instructions) and from its launch configuration. */
typedef struct kmodel_kernel {
    unsigned warps_per_block;     /* >= 1 */
    unsigned regs_per_thread;     /* 0 = not limiting */
    unsigned smem_per_block;      /* bytes, static + dynamic */
    double rm;                    /* memory instruction ratio, [0, 1] */
    double uncoalesced;           /* fraction of memory instructions that are uncoalesced, [0, 1] */
    double insts_per_warp;        /* warp instructions one warp executes; 0 = unknown (then
                                     the balanced ratio balances per-warp progress) */
} kmodel_kernel;

/* How memory latency L (cycles) grows with the memory traffic outstanding in a state. */
typedef enum kmodel_latency_form {
    KMODEL_LAT_LINEAR = 0,  /* default: L = L0 + b0 + Q / (a0 * B); Q = bytes outstanding,
                               B = bytes per cycle available to the (virtual) SM */
    KMODEL_LAT_CONSTANT,    /* L = L0 + b0, no contention */
    KMODEL_LAT_PAPER,       /* the paper's printed form L = L0 + B/(a0 * S) + b0, S = idle
                               warps (>= 1); kept for comparison, see docs/MODEL.md */
    KMODEL_LAT_CUSTOM,      /* L = custom(lat, Q, user) */
} kmodel_latency_form;

typedef struct kmodel_latency {
    kmodel_latency_form form;
    double l0;              /* base latency, cycles; < 0 = the GPU's mem_latency_cycles */
    double a0;              /* fraction of peak bandwidth achieved, (0, 1]; default 1 */
    double b0;              /* constant extra cycles, >= 0; default 0 */
    double bandwidth;       /* B, bytes per cycle per modelled SM; <= 0 = derived from the GPU
                               (bandwidth / clock / SMs, / schedulers for the virtual SM) */
    /* KMODEL_LAT_CUSTOM only: latency in cycles (finite, >= 1) for Q outstanding bytes. */
    double (*custom)(const struct kmodel_latency *lat, double outstanding_bytes, void *user);
    void *user;
} kmodel_latency;

typedef enum kmodel_granularity {
    KMODEL_GRAN_WARP = 0,   /* one chain dimension per warp count (the paper's base model) */
    KMODEL_GRAN_BLOCK,      /* a thread block's warps change state together: far fewer states
                               (units never hold less than one warp; see state_budget) */
} kmodel_granularity;

typedef enum kmodel_solver {
    KMODEL_SOLVER_AUTO = 0, /* the fastest robust choice measured: GTH */
    KMODEL_SOLVER_GTH,      /* Grassmann-Taksar-Heyman elimination (no subtractions) */
    KMODEL_SOLVER_LU,       /* GSL LU solve of (P^T - I) pi = 0 with sum(pi) = 1 */
    KMODEL_SOLVER_POWER,    /* power iteration until the L1 change < tol */
} kmodel_solver;

/* Which (b1, b2) block splits kmodel_balanced considers. */
typedef enum kmodel_ratio_scope {
    KMODEL_RATIO_FULL = 0,  /* default: both >= 1 and no block of either kernel can be added */
    KMODEL_RATIO_ALL,       /* every split with both >= 1 that fits the SM */
} kmodel_ratio_scope;

typedef struct kmodel_options {
    kmodel_granularity granularity; /* default KMODEL_GRAN_BLOCK */
    int virtual_sm;         /* 1 (default): model one scheduler with 1/schedulers of the SM's
                               warps and bandwidth; 0: one scheduler issuing for the whole SM */
    kmodel_solver solver;   /* default KMODEL_SOLVER_AUTO */
    kmodel_ratio_scope ratio_scope;
    kmodel_latency latency;
    double tol;             /* power iteration: stop when the L1 change is below; default 1e-12 */
    unsigned max_iter;      /* power iteration cap; default 100000 */
    size_t max_states;      /* refuse bigger chains with KMODEL_ETOOBIG; default 4096 */
    size_t state_budget;    /* block granularity: merge blocks into bigger units (fewer,
                               larger) until the chain has at most this many states;
                               default 64; 0 = never merge */
} kmodel_options;

/* Per-kernel and total IPC of one mix of kernels on one SM. */
typedef struct kmodel_mix_result {
    size_t n;                       /* kernels in the mix */
    double ipc[KMODEL_MAX_KERNELS]; /* each kernel's IPC in the mix */
    double total_ipc;               /* sum of ipc[] (the paper's C) */
    double idle_fraction;           /* fraction of cycles in which no warp is ready */
    size_t states;                  /* states of the chain that was solved */
} kmodel_mix_result;

/* One co-schedule of two kernels: b1 and b2 blocks per SM. */
typedef struct kmodel_pair_result {
    unsigned k1, k2;        /* indices into the kernel array (kmodel_rank_pairs); else 0, 1 */
    unsigned blocks[2];     /* blocks per SM of each kernel (the slice size per SM) */
    double ipc[2];          /* cIPC of each kernel in the mix */
    double cipc;            /* ipc[0] + ipc[1] */
    double single_ipc[2];   /* IPC of each kernel alone at its full occupancy */
    double cp;              /* co-scheduling profit, 1 - 1/sum(cIPC_i/IPC_i) */
    double dt;              /* |T1 - T2| in cycles, T_i = I_i * b_i / cIPC_i (eq. executiontime) */
    double dt_rel;          /* dt / max(T1, T2), what the balanced ratio minimises */
} kmodel_pair_result;

typedef struct kmodel_ctx kmodel_ctx;

/* Built-in GPU table: number of entries, entry i (NULL if out of range), and lookup by
 * name (case-insensitive; also "H100-SXM", "Tesla C2050"); NULL if unknown. */
size_t kmodel_gpu_count(void);
const kmodel_gpu *kmodel_gpu_at(size_t i);
const kmodel_gpu *kmodel_gpu_lookup(const char *name);

/* Checks a GPU description; 0 or KMODEL_EINVAL with a message in msg (may be NULL). */
int kmodel_gpu_validate(const kmodel_gpu *gpu, char *msg, size_t msglen);

/* Fills opt with the defaults listed in kmodel_options. */
void kmodel_options_default(kmodel_options *opt);

/* Static description of an error code ("invalid parameter", ...). */
const char *kmodel_strerror(int err);

/* Creates a context for gpu (copied) and opt (copied; NULL = defaults). On failure returns
 * a KMODEL_E* code, *out = NULL and, when msg is not NULL, a message in msg. */
int kmodel_ctx_new(kmodel_ctx **out, const kmodel_gpu *gpu, const kmodel_options *opt,
                   char *msg, size_t msglen);
void kmodel_ctx_free(kmodel_ctx *ctx);

/* The message of the last failed call on ctx ("" after success). */
const char *kmodel_ctx_error(const kmodel_ctx *ctx);

/* The context's GPU and options (after defaults were applied). */
const kmodel_gpu *kmodel_ctx_gpu(const kmodel_ctx *ctx);
const kmodel_options *kmodel_ctx_options(const kmodel_ctx *ctx);

/* Bytes per cycle and base latency the latency model uses on the modelled SM. */
double kmodel_ctx_bandwidth(const kmodel_ctx *ctx);
double kmodel_ctx_base_latency(const kmodel_ctx *ctx);

/* Memory latency in cycles with outstanding_bytes in flight on the modelled SM. */
double kmodel_latency_at(const kmodel_ctx *ctx, double outstanding_bytes);

/* Checks a kernel description against the context's GPU; 0 or KMODEL_EINVAL. */
int kmodel_kernel_validate(kmodel_ctx *ctx, const kmodel_kernel *k);

/* Most blocks of k alone on one SM (occupancy limit), >= 1 on success. */
int kmodel_max_blocks(kmodel_ctx *ctx, const kmodel_kernel *k, unsigned *blocks);

/* 0 if blocks[i] blocks of each kernels[i] fit one SM together, else KMODEL_ENOFIT
 * (message says which resource) or KMODEL_EINVAL. */
int kmodel_fits(kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
                const unsigned blocks[]);

/* IPC of k alone with blocks per SM (0 = its full occupancy). */
int kmodel_ipc_single(kmodel_ctx *ctx, const kmodel_kernel *k, unsigned blocks, double *ipc);

/* IPCs of n (1..KMODEL_MAX_KERNELS) kernels running together, blocks[i] of kernels[i] per
 * SM (each >= 1). */
int kmodel_mix(kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
               const unsigned blocks[], kmodel_mix_result *res);

/* CP of n kernels at blocks[] per SM against each running alone at full occupancy. */
int kmodel_cp(kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
              const unsigned blocks[], double *cp);

/* Everything about one co-schedule of k1 (b1 blocks per SM) with k2 (b2). */
int kmodel_pair(kmodel_ctx *ctx, const kmodel_kernel *k1, unsigned b1,
                const kmodel_kernel *k2, unsigned b2, kmodel_pair_result *res);

/* CP of the co-schedule r of k1 and k2 (kmodel_pair, kmodel_balanced) run as it runs on a
 * GPU: as launches of one wave each (r->blocks[i] blocks on every SM), one after another on
 * a stream per kernel, every launch costing launch_ns beyond its blocks' time. A kernel's
 * share of its alone rate, ipc/single_ipc, shrinks by wave / (wave + launch_ns); short
 * waves can make the pair slower than running the two one after the other (cp < 0). A
 * wave's time comes from block_ns[i], kernel i's measured time per block alone over the
 * whole GPU, where block_ns is not NULL and block_ns[i] > 0, else from the model. */
int kmodel_launch_cp(kmodel_ctx *ctx, const kmodel_kernel *k1, const kmodel_kernel *k2,
                     const kmodel_pair_result *r, double launch_ns, const double *block_ns,
                     double *cp);

/* The balanced slice ratio of k1 and k2: among the splits of options.ratio_scope, the one
 * with the smallest dt_rel (ties: higher cipc). KMODEL_ENOFIT if no split with one block of
 * each fits. */
int kmodel_balanced(kmodel_ctx *ctx, const kmodel_kernel *k1, const kmodel_kernel *k2,
                    kmodel_pair_result *best);

/* All n*(n-1)/2 pairs of kernels[] (n <= 1024) at their balanced ratio, sorted by CP, best
 * first, into out (room for n*(n-1)/2). Pairs that cannot share an SM are left out;
 * *count gets how many were written. */
int kmodel_rank_pairs(kmodel_ctx *ctx, size_t n, const kmodel_kernel kernels[],
                      kmodel_pair_result out[], size_t *count);

/* Low-level access for tests and tools: the homogeneous chain of W warps (W+1 states,
 * state i = i idle warps, one scheduler, latency from ctx with every idle warp holding one
 * coalesced request). Writes the row-stochastic transition matrix (row-major, (W+1)^2,
 * may be NULL) and the steady state pi (W+1, may be NULL), and the IPC as utilisation in
 * [0, 1] (may be NULL). */
int kmodel_homogeneous(kmodel_ctx *ctx, unsigned warps, double rm, double *P, double *pi,
                       double *util);

#ifdef __cplusplus
}
#endif

#endif
