/* kerneletd's emu backend: the executor interface over the PTX emulator (backend_emu.c).
 * It lives with the daemon until the emulator ships an adapter of its own. */
#ifndef KERNELETD_BACKEND_EMU_H
#define KERNELETD_BACKEND_EMU_H

#include <stddef.h>

#include "kernelet/executor.h"

/* 0, or -1 with a message in err. The backend's destroy frees it. */
int kd_emu_backend_open(kexec_backend *out, char *err, size_t errlen);

#endif
