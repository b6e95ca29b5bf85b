/*
 * How one protocol message becomes one or more /dev/kerneletN submissions (the virtio
 * transport, docs/GUEST-DRIVER.md "libcuda over /dev/kerneletN").
 *
 * On the socket, records name host memory by (region, offset) in a memfd the daemon maps.
 * Through the guest driver there is no such mapping: host memory travels as the chain's
 * bulk segments, which the driver pins in the caller's memory. So every host range a
 * message names in a transport-local region is rewritten to region KVB_REGION_BULK with
 * the offset of its bytes in the chain's host-to-device stream (HTOD copies, module
 * images) or device-to-host stream (DTOH copies), and becomes one bulk buffer. A chain
 * carries at most max_bulk bulk bytes in at most KERNELET_IOC_MAX_BUFS buffers: larger
 * batches are cut into several batches and larger copies into pieces (rows, or parts of a
 * row). This is the one place that knows the mapping; the device side must agree on it.
 */
#ifndef KCU_VIRTIO_BULK_H
#define KCU_VIRTIO_BULK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelet/kernelet_ioctl.h"
#include "kernelet/protocol.h"

/* Region id meaning "the bytes are the chain's bulk stream, at this offset": the device's
 * KERNELET_REGION_BULK (virtio_kernelet.h on branch vmlink, same value). */
#ifndef KERNELET_REGION_BULK
#define KERNELET_REGION_BULK 0xfffffffeu
#endif
#define KVB_REGION_BULK KERNELET_REGION_BULK

/* Records of one chunk at most (a record is at least 16 bytes). */
#define KVB_MAX_RECORDS (KERNELET_MAX_PAYLOAD / sizeof(struct kernelet_rec_hdr))

/* The base and size of a transport-local region, or NULL when id names none. */
typedef void *(*kvb_region_fn)(void *arg, uint32_t id, size_t *size);

/* One submission. */
struct kvb_chunk {
    uint8_t msg[KERNELET_MAX_REQUEST];   /* header + payload, request id of the original */
    uint32_t len;
    bool is_batch;
    bool has_bulk;
    struct kernelet_ioc_buf h2d[KERNELET_IOC_MAX_BUFS];
    struct kernelet_ioc_buf d2h[KERNELET_IOC_MAX_BUFS];
    uint32_t n_h2d, n_d2h;
    uint64_t h2d_bytes, d2h_bytes;
    uint32_t n_records;
    uint32_t orig_index[KVB_MAX_RECORDS]; /* batch: original index of each record */
};

/* Walks one message, chunk by chunk. */
struct kvb_splitter {
    const uint8_t *msg;
    size_t len;
    uint32_t max_bulk;
    kvb_region_fn region;
    void *arg;
    bool done;
    /* batches: the records (it stands before the next one) and how much of a copy record
     * earlier chunks took */
    uint32_t flags;
    struct kproto_batch_iter it;
    uint64_t row, col;
};

/* Starts splitting msg (len bytes: one whole message, header included). 0 or -EINVAL. */
int kvb_begin(struct kvb_splitter *s, const void *msg, size_t len, uint32_t max_bulk,
              kvb_region_fn region, void *arg);

/* The next submission into *out: 1, or 0 when the message is done, or -EINVAL for a
 * malformed message or an unknown region, -E2BIG for a module image above max_bulk. */
int kvb_next(struct kvb_splitter *s, struct kvb_chunk *out);

#endif
