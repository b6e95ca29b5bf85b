/* Which hardware metrics the profiler collects, chosen per GPU (host-sched/backends/cuda/).
 *
 * Metric names differ between GPU generations (Hopper has no
 * smsp__inst_executed_op_global_atom.sum, for one). Each quantity the model needs has a list
 * of candidate names, best first; the profiler asks CUPTI which of them the chip supports
 * and collects the first one found. A quantity with no supported name is left out and reads
 * as 0, which degrades one figure (the atomics' share of memory instructions, say) rather
 * than the whole profiler; only the three quantities without which no figure can be
 * computed (instructions, cycles, duration) are required. Plain C, tested without a GPU.
 */
#ifndef KERNELET_HOST_PROFILER_METRICS_H
#define KERNELET_HOST_PROFILER_METRICS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The quantities behind kprof_counters (characterise.h). */
typedef enum kprof_quantity {
    KPROF_Q_INST,
    KPROF_Q_GLOBAL_LD, KPROF_Q_GLOBAL_ST, KPROF_Q_GLOBAL_RED, KPROF_Q_GLOBAL_ATOM,
    KPROF_Q_LOCAL_LD, KPROF_Q_LOCAL_ST,
    KPROF_Q_REQUESTS_LD, KPROF_Q_REQUESTS_ST, KPROF_Q_SECTORS_LD, KPROF_Q_SECTORS_ST,
    KPROF_Q_L2_MISS_SECTORS,
    KPROF_Q_DRAM_READ, KPROF_Q_DRAM_WRITE,
    KPROF_Q_CYCLES,
    KPROF_Q_DURATION,
    KPROF_Q_COUNT
} kprof_quantity;

/* The names chosen for one chip: name[q] is NULL where no candidate is supported. */
typedef struct kprof_metric_choice {
    const char *name[KPROF_Q_COUNT];
    unsigned chosen;                      /* quantities with a name */
} kprof_metric_choice;

/* Answers whether the chip supports metric `name` (1) or not (0). */
typedef int (*kprof_supported_fn)(const char *name, void *ctx);

/* Short name of quantity q ("inst", "global_atom", ...); NULL when q is out of range. */
const char *kprof_quantity_name(kprof_quantity q);

/* The candidate names of q, best first, NULL-terminated; NULL when q is out of range. */
const char *const *kprof_quantity_candidates(kprof_quantity q);

/* Fills *out with the first supported candidate of every quantity. Returns 0, or -1 with
 * a message naming the quantity when a required one (instructions, cycles, duration) has
 * no supported name. */
int kprof_choose_metrics(kprof_supported_fn supported, void *ctx, kprof_metric_choice *out,
                         char *msg, size_t msglen);

/* Writes "quantity=name ..." and then "missing: quantity ..." into buf (always
 * NUL-terminated); returns the length it needed, as snprintf does. */
size_t kprof_describe_choice(const kprof_metric_choice *c, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
