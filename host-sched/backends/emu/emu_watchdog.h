/* The emu backend's kernel time limits: a thread that watches the launch that is running
 * and, when it runs past its deadline (its tenant's limit, kbackend_slice.time_limit_ns),
 * sets that launch's stop flag (the emulator polls it every time slice and ends the launch
 * with KEMU_ECANCELLED). One launch runs at a time (the backend's worker), so one deadline
 * suffices. An operator's new limit applies to the running launch too. */
#ifndef KERNELET_EMU_WATCHDOG_H
#define KERNELET_EMU_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

struct emu_watchdog;

/* A watchdog and its thread. 0, or -1 (no memory, no thread). */
int emu_watchdog_new(struct emu_watchdog **out);
/* A launch of domain starts: *flag is set to 1 if it is still running limit_ns from now
 * (0: no limit, until emu_watchdog_relimit gives one). */
void emu_watchdog_arm(struct emu_watchdog *w, volatile int *flag, uint32_t domain,
                      uint64_t limit_ns);
/* The limit of domain's launches is now limit_ns (0: none), counted from the running
 * launch's start: one past it is stopped at once. */
void emu_watchdog_relimit(struct emu_watchdog *w, uint32_t domain, uint64_t limit_ns);
/* The launch ended; true when the watchdog stopped it (*limit_ns, may be NULL: the limit
 * it was held to). */
bool emu_watchdog_disarm(struct emu_watchdog *w, uint64_t *limit_ns);
/* Stops the thread and frees w (NULL: nothing). */
void emu_watchdog_free(struct emu_watchdog *w);

#endif
