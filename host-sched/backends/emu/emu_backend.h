/* kerneletd's emu backend: the executor interface over the PTX emulator (emu_backend.c).
 * The emulator itself is a library of its own (host-sched/emu/, include/kernelet/emu.h):
 * its tests and emu-bench use it without the executor interface. */
#ifndef KERNELET_EMU_BACKEND_H
#define KERNELET_EMU_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/executor.h"

/* 0, or -1 with a message in err. The backend's destroy frees it. A launch (one slice)
 * that runs longer than its kbackend_slice.time_limit_ns (the tenant's kernel time limit;
 * 0 = none) is stopped and fails with a message naming the limit. Each domain's memory
 * lives in an address window of window_bytes (0: KBACKEND_WINDOW_DEFAULT). */
int kd_emu_backend_open(kbackend *out, uint64_t window_bytes, char *err, size_t errlen);

#endif
