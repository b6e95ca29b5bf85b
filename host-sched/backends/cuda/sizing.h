/* Slice sizes and measurement arithmetic of the CUDA backend (host-sched/backends/cuda/, plain C).
 *
 * - The profiled slice: kerneletd characterises a kernel from one full wave of its blocks
 *   (every SM at its occupancy), or the whole grid when that is smaller.
 * - The minimum slice (paper, "Kernel Slicing": the smallest slice whose overhead is at
 *   most p of its run time, p = 2%). Running a kernel as slices costs about one launch gap
 *   o per extra launch (the backend measures o once per device); a slice of s blocks runs
 *   for s / r at the kernel's throughput r (blocks per ns, from the profiled wave), so
 *   o / (s / r) <= p gives s >= o r / p, rounded up to whole multiples of the SM count as
 *   in the paper's experiments. docs/perf/cuda-backend.md compares this estimate with the
 *   overhead measured per kernel.
 * - The trial (oracle policy): how many slices each kernel runs, and blocks per second of
 *   each while both were running.
 */
#ifndef KERNELET_CUDA_SIZING_H
#define KERNELET_CUDA_SIZING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The median of n values (sorts v in place; the upper middle one for even n); NaN when
 * n is 0. */
double kcuda_median(double *v, size_t n);

/* Blocks of the profiled slice: min(total, sms x blocks_per_sm), at least 1. */
uint64_t kcuda_profile_blocks(uint64_t total, unsigned sms, unsigned blocks_per_sm);

/* The minimum slice in blocks from the launch overhead (ns), a measured run of `blocks`
 * blocks taking duration_ns, the SM count and the overhead bound p (0.02); 0 when an input
 * is unknown or not positive. At most 2^40. */
uint64_t kcuda_min_slice(double overhead_ns, uint64_t blocks, double duration_ns,
                         unsigned sms, double p);

/* Slices of `size` blocks a kernel running alone at alone_bps needs to last target_ns,
 * clamped to [2, max_slices]. */
unsigned kcuda_trial_slices(double alone_bps, uint64_t size, double target_ns,
                            unsigned max_slices);

/* One kernel's side of a trial: its slices' block counts and end times (ns after the
 * common start, non-decreasing, as a stream runs them in order). */
typedef struct kcuda_trial_run {
    size_t n;
    const uint64_t *blocks;
    const double *end_ns;
} kcuda_trial_run;

/* Blocks per second of each kernel while both ran: slices ending by the time the first of
 * the two finished, over the time their last one ended (a kernel none of whose slices ended
 * by then is counted by its first slice). -1 when a run is empty or a time not positive. */
int kcuda_trial_rates(const kcuda_trial_run run[2], double bps[2]);

#ifdef __cplusplus
}
#endif

#endif
