/* The emu backend's kernel time limit: a thread that watches the launch that is running
 * and, when it runs past its deadline, sets that launch's stop flag (the emulator polls it
 * every time slice and ends the launch with KEMU_ECANCELLED). One launch runs at a time
 * (the backend's worker), so one deadline suffices. */
#ifndef KERNELET_EMU_WATCHDOG_H
#define KERNELET_EMU_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

struct emu_watchdog;

/* A watchdog for launches of at most limit_ns (> 0). 0, or -1 (no memory, no thread). */
int emu_watchdog_new(struct emu_watchdog **out, uint64_t limit_ns);
/* A launch starts: *flag is set to 1 if it is still running limit_ns from now. */
void emu_watchdog_arm(struct emu_watchdog *w, volatile int *flag);
/* The launch ended; true when the watchdog stopped it. */
bool emu_watchdog_disarm(struct emu_watchdog *w);
/* The limit, in nanoseconds. */
uint64_t emu_watchdog_limit(const struct emu_watchdog *w);
/* Stops the thread and frees w (NULL: nothing). */
void emu_watchdog_free(struct emu_watchdog *w);

#endif
