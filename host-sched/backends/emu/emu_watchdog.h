/* The emu backend's kernel time limits: a thread that watches the launch that is running
 * and, when it runs past its deadline (its tenant's limit, kbackend_slice.time_limit_ns),
 * sets that launch's stop flag (the emulator polls it every time slice and ends the launch
 * with KEMU_ECANCELLED). One launch runs at a time (the backend's worker), so one deadline
 * suffices. */
#ifndef KERNELET_EMU_WATCHDOG_H
#define KERNELET_EMU_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

struct emu_watchdog;

/* A watchdog and its thread. 0, or -1 (no memory, no thread). */
int emu_watchdog_new(struct emu_watchdog **out);
/* A launch starts: *flag is set to 1 if it is still running limit_ns (> 0) from now. */
void emu_watchdog_arm(struct emu_watchdog *w, volatile int *flag, uint64_t limit_ns);
/* The launch ended; true when the watchdog stopped it. */
bool emu_watchdog_disarm(struct emu_watchdog *w);
/* Stops the thread and frees w (NULL: nothing). */
void emu_watchdog_free(struct emu_watchdog *w);

#endif
