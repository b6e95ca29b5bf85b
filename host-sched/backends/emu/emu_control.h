/* The control words of each domain's fenced kernels on the emulator (kernelet/ptx.h,
 * "Control"): a cancel word and a fault word per domain, in the emulator's common memory
 * (the lower half, outside every window). The emulator stops a runaway launch with its own
 * cancel flag, so the cancel word stays clear here; the fault word is read after every
 * launch, so that a trap or an assert ends only its launch, reported to its tenant. */
#ifndef EMU_CONTROL_H
#define EMU_CONTROL_H

#include <stdint.h>

#include "kernelet/emu.h"
#include "kernelet/executor.h"

typedef struct emu_control emu_control;

/* The words of domains in dev's memory range common (outside the windows). */
emu_control *emu_control_new(kemu_device *dev, kemu_range common);
void emu_control_free(emu_control *c);

/* The device addresses of domain's cancel and fault words (made on first use). */
int emu_control_words(emu_control *c, uint32_t domain, uint64_t *cancel, uint64_t *fault,
                      kbackend_error *err);
/* The fault code domain's kernels wrote since the last call (KPTX_FAULT_*), then clear. */
uint32_t emu_control_take_fault(emu_control *c, uint32_t domain);
/* domain's words are no longer needed. */
void emu_control_release(emu_control *c, uint32_t domain);

#endif
