/*
 * /dev/kerneletN: the user-space interface of the guest driver virtio_kernelet.ko.
 *
 * One character device per virtio-kernelet device (/dev/kernelet0, 1, ...). Each open file
 * is a separate context of the tenant: the driver gives it a context id and stamps that
 * id on every request it sends (kernelet_xfer.context, see virtio_kernelet.h); closing
 * the file (or the death of the process) tells the device with CONTEXT_CLOSE.
 *
 * The driver does not interpret requests. KERNELET_IOC_SUBMIT takes a request exactly as
 * the wire protocol defines it (struct kernelet_req_hdr + payload), sends it on the
 * chosen virtqueue together with optional bulk data buffers in the caller's memory, sleeps
 * until the device answers and copies the answer (response header + payload) back.
 * Bulk buffers are pinned, not copied: host-to-device (h2d) buffers are read by the
 * device, device-to-host (d2h) buffers are written by it, in the order given.
 *
 * Errors: the ioctl returns 0 when the device answered, whatever the answer's status
 * (kernelet_status, also copied into `status`); -1 with errno for everything else:
 *   EFAULT  a pointer (request, response, buffer array or a buffer) is not accessible
 *           with the needed rights (d2h buffers must be writable)
 *   EINVAL  malformed call: unknown queue or flags, request shorter than a header, header
 *           length disagreeing with req_len, the driver-owned KERNELET_REQ_F_XFER flag
 *           set, response room below a header, a zero-length buffer, bulk without
 *           KERNELET_F_BULK
 *   E2BIG   request above max_request, response room above max_response, more than
 *           KERNELET_IOC_MAX_BUFS buffers, bulk above max_bulk in total
 *   EINTR   a signal arrived while waiting (without KERNELET_SUBMIT_F_KILLABLE); the
 *           device may still execute the request, its answer is discarded; the pinned
 *           buffers stay pinned until the device gives them back
 *   ENODEV  the device is gone (hot-unplugged, driver unbound); permanent for this file
 *   EIO     the device misbehaved (used length or response header inconsistent with the
 *           request) or was reset while holding the request; later requests may succeed
 *   ENOMEM  out of memory
 * A d2h buffer's content is undefined after an error.
 *
 * Both queues may be used concurrently from several threads; each call waits for its own
 * answer. The structures have the same layout for 32- and 64-bit callers.
 */
#ifndef KERNELET_KERNELET_IOCTL_H
#define KERNELET_KERNELET_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define KERNELET_IOC_MAGIC     0xE7   /* private to /dev/kerneletN */
#define KERNELET_IOC_MAX_BUFS  16     /* h2d + d2h buffers per submission */

/* What the device offers (its configuration space) plus what the driver adds. */
struct kernelet_ioc_config {
    __u32 proto_version;      /* major << 16 | minor */
    __u32 flags;              /* KERNELET_INFO_* (backend connected, slicing allowed) */
    __u32 max_request;        /* request header + payload, bytes */
    __u32 max_response;       /* response header + payload, bytes */
    __u64 gpu_mem_bytes;      /* device memory offered (mem-quota applied) */
    __u32 gpu_sm_count;
    __u16 gpu_cc_major;
    __u16 gpu_cc_minor;
    char  gpu_name[64];       /* NUL-terminated */
    __u32 max_bulk;           /* h2d + d2h bulk bytes per submission; 0: no bulk */
    __u32 max_bufs;           /* KERNELET_IOC_MAX_BUFS */
    __u32 context;            /* this open file's context id (never 0) */
    __u32 config_generation;  /* bumped on every configuration change the device signals */
    __u32 index;              /* N of /dev/kerneletN */
    __u32 reserved[3];
};

/* One bulk buffer in the caller's memory. */
struct kernelet_ioc_buf {
    __u64 addr;  /* user pointer */
    __u64 len;   /* bytes, > 0 */
};

/* Submission flags. */
#define KERNELET_SUBMIT_F_KILLABLE  (1u << 0)  /* wait through signals other than fatal ones */

/* One request and its answer. Fields marked "out" are written by the driver. */
struct kernelet_ioc_submit {
    __u32 queue;        /* KERNELET_VQ_REQUEST or KERNELET_VQ_LAUNCH */
    __u32 flags;        /* KERNELET_SUBMIT_F_* */
    __u64 req_addr;     /* struct kernelet_req_hdr + payload (flags without F_XFER) */
    __u64 resp_addr;    /* room for the response header + payload */
    __u32 req_len;      /* 24 + header.length, at most max_request */
    __u32 resp_cap;     /* 24 .. max_response */
    __u64 h2d_bufs;     /* array of h2d_count struct kernelet_ioc_buf (device reads) */
    __u64 d2h_bufs;     /* array of d2h_count struct kernelet_ioc_buf (device writes) */
    __u32 h2d_count;
    __u32 d2h_count;
    __u32 resp_len;     /* out: response bytes copied to resp_addr (>= 24) */
    __u32 status;       /* out: the response header's status (kernelet_status) */
    __u64 d2h_written;  /* out: bulk bytes the device wrote, filling the d2h buffers in order */
};

/* Reads the device configuration (and this file's context id). */
#define KERNELET_IOC_GET_CONFIG  _IOR(KERNELET_IOC_MAGIC, 0x00, struct kernelet_ioc_config)
/* Sends one request and waits for its answer. */
#define KERNELET_IOC_SUBMIT      _IOWR(KERNELET_IOC_MAGIC, 0x01, struct kernelet_ioc_submit)

#endif
