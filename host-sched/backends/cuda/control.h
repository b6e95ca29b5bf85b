/* The control words of each domain's fenced kernels (kernelet/ptx.h, "Control"): a cancel
 * word in device memory, which the kernels' loops poll and the backend sets (a copy on a
 * stream of its own) to stop a runaway kernel without losing the context, and a fault
 * word in mapped pinned host memory, which a trap or an assert writes and the backend
 * reads when a launch completes. Both lie outside every
 * window, so no tenant kernel can reach them but through the fence's code.
 *
 * A cancel stays raised until the domain has no launch left on the device: every launch of
 * the domain that completes meanwhile may have been cut short, and is reported so. */
#ifndef KCUDA_CONTROL_H
#define KCUDA_CONTROL_H

#include <cuda.h>
#include <stdint.h>

#include "kernelet/executor.h"

typedef struct kcuda_control kcuda_control;

/* The control of a context's domains; the context must be current. */
int kcuda_control_new(kcuda_control **out, kbackend_error *err);
void kcuda_control_free(kcuda_control *c);

/* The device addresses of domain's cancel and fault words (made on first use). */
int kcuda_control_words(kcuda_control *c, uint32_t domain, uint64_t *cancel, uint64_t *fault,
                        kbackend_error *err);
/* For a launch that CUPTI replays (a profile), which restores device memory between its
 * passes: the device address of the host copy of domain's cancel word, to poll instead of
 * `cancel`, which must be the domain's device cancel word; 0 when it is not. */
uint64_t kcuda_control_replay_cancel(kcuda_control *c, uint32_t domain, uint64_t cancel);
/* A profile runs (on = 1) or ended (0): meanwhile a cancel sets the host copies only and
 * makes no driver call, which could wait for the replayed launch it is to stop. */
void kcuda_control_replaying(kcuda_control *c, int on);
/* The domain's words are no longer needed (its window is released). */
void kcuda_control_release(kcuda_control *c, uint32_t domain);

/* A launch of domain goes to the device. */
void kcuda_control_launch_begin(kcuda_control *c, uint32_t domain);
/* Whether a launch of domain is on the device or waiting to go there (begun, not ended). */
int kcuda_control_busy(kcuda_control *c, uint32_t domain);
/* Waits until no launch of domain is on the device, at most timeout_ns: 0 once none is,
 * -1 when some still are. Whoever waits must keep new launches of domain from starting. */
int kcuda_control_wait_idle(kcuda_control *c, uint32_t domain, uint64_t timeout_ns);
/* A launch of domain is done: *fault gets the fault code its kernels wrote (then cleared),
 * *cancelled whether a cancel was raised while it ran; the cancel word is cleared once no
 * launch of the domain is left. */
void kcuda_control_launch_end(kcuda_control *c, uint32_t domain, uint32_t *fault,
                              int *cancelled);
/* The fault code domain's kernels wrote since it was last read, then cleared (0: none): for
 * work that is not a counted launch (a trial). */
uint32_t kcuda_control_take_fault(kcuda_control *c, uint32_t domain);
/* Stops every running kernel of domain at its next poll; 0, or -1 when the domain has no
 * launch on the device (nothing to stop). Never blocks on the device. */
int kcuda_control_cancel(kcuda_control *c, uint32_t domain);
/* The same for every domain (the daemon stops). */
void kcuda_control_cancel_all(kcuda_control *c);

#endif
