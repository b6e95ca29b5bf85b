/*
 * kdev_relay: prepares a guest request for kerneletd (plain C, no QEMU types).
 *
 * A request the device forwards names its bulk data as region KERNELET_REGION_BULK
 * (virtio_kernelet.h): offsets into the chain's h2d or d2h bulk bytes. Before the message
 * goes to the daemon every such reference is checked against the chain's bulk sizes and
 * rewritten through a caller-supplied map to a region the daemon has attached (the VM's
 * RAM, zero-copy, or the device's staging region). Other region ids are refused: the
 * connection's regions belong to the device, not to the guest. A batch that uses bulk data
 * is forced to KERNELET_BATCH_COMPLETE, because the guest's buffers (or the staging slot)
 * may be given back only once the copies have run.
 */
#ifndef KDEV_RELAY_H
#define KDEV_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Maps `len` bulk bytes at `off` of the h2d (d2h = false) or d2h bulk data to a daemon
 * region; returns 0 and sets *region and *offset, or -1 when they cannot be reached as
 * one contiguous range there (the caller then retries with staging). */
typedef int (*kdev_bulk_map_fn)(void *opaque, bool d2h, uint64_t off, uint64_t len,
                                uint32_t *region, uint64_t *offset);

/* Results of kdev_relay_rewrite. */
enum {
    KDEV_RELAY_OK = 0,
    KDEV_RELAY_BAD = -1,     /* malformed, a range outside the chain's bulk, a foreign region */
    KDEV_RELAY_NOMAP = -2,   /* the map could not place a range */
};

/* Rewrites the payload of a request with `opcode` (len bytes, modified in place) whose
 * chain carries h2d and d2h bulk bytes. *uses_bulk tells whether any record named the
 * chain's bulk data. Only MODULE_LOAD and LAUNCH_BATCH may name regions; other opcodes
 * pass unchanged. Malformed batches the daemon would refuse anyway pass as they are when
 * they name no region (the daemon answers them); err gets a reason (errlen bytes). */
int kdev_relay_rewrite(uint16_t opcode, uint8_t *payload, uint32_t len, uint32_t h2d,
                       uint32_t d2h, kdev_bulk_map_fn map, void *opaque, bool *uses_bulk,
                       char *err, size_t errlen);

/* Whether the device answers opcode itself rather than relaying it to kerneletd (the
 * opcode table's KPROTO_OP_DEVICE and KPROTO_OP_CONTEXT). daemon_has_contexts: a daemon is
 * connected and keeps guest contexts apart (protocol 0.2+); only then does CONTEXT_CLOSE
 * go to it. */
bool kdev_relay_local(uint16_t opcode, bool daemon_has_contexts);

#endif
