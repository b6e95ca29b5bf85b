/* kerneletd's emu backend: the executor interface over the PTX emulator (emu_backend.c).
 * The emulator itself is a library of its own (host-sched/emu/, include/kernelet/emu.h):
 * its tests and emu-bench use it without the executor interface. */
#ifndef KERNELET_EMU_BACKEND_H
#define KERNELET_EMU_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/executor.h"

/* Told, from the backend's thread, of a fenced kernel's trap, assert, stray address or
 * stack overflow, one line naming the tenant and the kernel, as the cuda backend tells. */
typedef void (*kd_emu_note_fn)(void *user, const char *msg);

/* 0, or -1 with a message in err. The backend's destroy frees it. A launch (one slice)
 * that runs longer than its kbackend_slice.time_limit_ns (the tenant's kernel time limit;
 * 0 = none) is stopped and fails with a message naming the limit. Each domain's memory
 * lives in an address window of window_bytes (0: KBACKEND_WINDOW_DEFAULT). note may be
 * NULL (not told). */
int kd_emu_backend_open(kbackend *out, uint64_t window_bytes, kd_emu_note_fn note,
                        void *note_user, char *err, size_t errlen);

#endif
