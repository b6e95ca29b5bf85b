/* kerneletd --cpus: the CPUs the daemon's threads may run on. */
#ifndef KERNELETD_CPUS_H
#define KERNELETD_CPUS_H

/* cpu_set_t: includers define _GNU_SOURCE before their first system header */
#include <sched.h>
#include <stddef.h>

/* Parses a CPU list as Linux writes one ("0-7", "0,2,4-6"): ascending or not, each CPU
 * below CPU_SETSIZE, at least one. 0, or -1 with the reason in err. */
int kd_cpus_parse(const char *list, cpu_set_t *set, char *err, size_t errlen);

/* Confines the calling thread, and so every thread it starts later, to set; 0, or -1 with
 * the reason in err (a CPU the process may not use, say). */
int kd_cpus_apply(const cpu_set_t *set, char *err, size_t errlen);

#endif
