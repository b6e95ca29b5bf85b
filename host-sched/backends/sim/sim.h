/* The sim backend: a deterministic discrete-event GPU driven by the performance model
 * (library kernelet-sched). It implements executor.h with virtual time, so the scheduler
 * and the harness run anywhere and every result is a pure function of the inputs.
 *
 * What it models (docs/SCHEDULER.md, "The sim backend", has the details):
 * - SMs are alike (SPMD, as the model assumes): a launch holds the same number of resident
 *   blocks on every SM, ceil(resident / SMs), for resource and rate purposes.
 * - Up to KMODEL_MAX_KERNELS launches hold blocks at once. Blocks are handed out in launch
 *   activation order while they fit (warps, blocks, registers, shared memory, and the
 *   launch's max_blocks_per_sm cap), like the hardware's in-order block dispatcher.
 * - Every resident block of launch i progresses at ipc_i / (blocks_i * instructions per
 *   block) blocks per cycle, ipc_i from kmodel_mix of the resident launches; blocks started
 *   together finish together. Rates change only at events (a group of blocks finishing, a
 *   launch activating), so time advances event to event.
 * - A launch into an idle lane may start launch_latency_ns after submission; one queued
 *   behind another starts stream_gap_ns after its predecessor ends.
 * - Copies take latency + bytes / bandwidth on one of three engines (to device, to host,
 *   on device), concurrently with kernels; with back_memory they really move the bytes.
 * The truth about each kernel (rm, instructions, registers...) comes from ksim_add_kernel
 * or a profile file; the sim's profile op answers with it (optionally perturbed).
 */
#ifndef KERNELET_SCHED_SIM_H
#define KERNELET_SCHED_SIM_H

#include <stdint.h>

#include "kernelet/executor.h"
#include "profile.h"
#include "sched_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ksim ksim;

typedef struct ksim_config {
    kmodel_gpu gpu;              /* the simulated GPU; default the model's H100 */
    kmodel_options model;        /* model options of the truth; default kmodel defaults */
    uint64_t launch_latency_ns;  /* default 5000 */
    uint64_t stream_gap_ns;      /* default 1000 */
    double h2d_gbs, d2h_gbs;     /* host-device copy bandwidth; default 25 each */
    uint64_t copy_latency_ns;    /* per copy; default 2000 */
    unsigned lanes;              /* default 32 */
    uint64_t mem_bytes;          /* device memory; default 80 GiB */
    int back_memory;             /* 1 (default): allocations hold data */
    int track_coverage;          /* 1 (default): remember which blocks of each tag ran */
    double profile_error;        /* the profile op scales rm and insts by a factor in
                                    [1 - e, 1 + e], fixed per entry; default 0 */
    uint64_t profile_blocks;     /* the profile op runs (and reports) the first this many
                                    blocks of a sliced launch, like a profiler measuring a
                                    small slice; default 0 (it runs none) */
    int profile_whole;           /* 1: the profile op of an unsliced launch runs it whole,
                                    as its own profile (blocks_done = count), like the cuda
                                    backend; the profile takes no simulated time; default 0
                                    (it runs none) */
    uint64_t seed;               /* for profile_error */
    uint64_t window_bytes;       /* address window of each domain (tenant), a power of two;
                                    default KBACKEND_WINDOW_DEFAULT */
    int wave_launches;           /* 1: a slice held to max_blocks_per_sm runs as one launch
                                    per wave, each behind the last with stream_gap_ns, as
                                    the cuda backend runs it; default 0 (one launch) */
} ksim_config;

/* Which blocks of one launch (tag) ran, from ksim_coverage. */
typedef struct ksim_coverage_result {
    uint64_t ran;          /* blocks run at least once, within [0, total) */
    uint64_t missing;      /* blocks of [0, total) never run */
    uint64_t duplicated;   /* block runs beyond the first */
    uint64_t outside;      /* block runs at ids >= total */
    uint64_t slices;       /* successful launches recorded for the tag */
} ksim_coverage_result;

typedef struct ksim_stats {
    uint64_t events;          /* time steps taken */
    uint64_t launches;        /* launches accepted */
    uint64_t failed_launches; /* launches completed with an error */
    uint64_t blocks_run;      /* blocks of successful launches */
    uint64_t copies;          /* copies and memsets completed */
    uint64_t bytes_copied;
    uint64_t mem_in_use;      /* device bytes allocated now */
    uint64_t model_evals;     /* kmodel_mix calls (rate cache misses) */
    uint64_t max_concurrent;  /* most launches holding blocks at once */
    uint64_t attr_launches;   /* launches with clusters or cooperative (run as whole ones) */
} ksim_stats;

/* Fills c with the defaults listed in ksim_config. */
void ksim_config_default(ksim_config *c);

/* Creates a sim (cfg copied; NULL = defaults). */
int ksim_new(ksim **out, const ksim_config *cfg, ksched_err *err);

/* The executor backend of s; the backend's destroy frees s. */
void ksim_backend(ksim *s, kbackend *out);

/* Frees s (same as the backend's destroy). */
void ksim_free(ksim *s);

/* Declares the truth about the kernel entry (its sliced variant shares it); replaces an
 * earlier declaration. warps_per_block in p is ignored (launches give it). */
int ksim_add_kernel(ksim *s, const char *entry, const kbackend_profile *p, ksched_err *err);

/* Declares every profile of c (module hashes ignored). */
int ksim_add_kernels(ksim *s, const ksched_profile_cache *c, ksched_err *err);

/* From now on, launches of entry (and its sliced variant) complete with KBACKEND_ELAUNCH
 * when fail is 1, normally when 0. The entry must have been declared. */
int ksim_set_failing(ksim *s, const char *entry, int fail, ksched_err *err);

/* Loses the device, as a sticky fault on a GPU does (executor.h, "Lost device"): work in
 * flight completes with KBACKEND_ELOST when its time comes, and every later op that needs the
 * device (allocation, copies, modules, functions, launches, profiles, trials) is refused
 * with KBACKEND_ELOST; mem_free, module_unload, progress and destroy still work. */
void ksim_lose(ksim *s);

/* Which blocks of the launch tagged tag ran, against a grid of total blocks. */
int ksim_coverage(const ksim *s, uint64_t tag, uint64_t total, ksim_coverage_result *out,
                  ksched_err *err);

void ksim_get_stats(const ksim *s, ksim_stats *out);

/* The virtual clock, ns. */
uint64_t ksim_now(const ksim *s);

#ifdef __cplusplus
}
#endif

#endif
