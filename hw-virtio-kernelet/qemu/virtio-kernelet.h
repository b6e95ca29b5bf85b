/*
 * virtio-kernelet: paravirtual GPU compute device of the Kernelet project.
 *
 * The device half that lives inside QEMU. It owns two virtqueues (requests, launch ring),
 * the configuration space and the tenant's operator policy (QOM properties). Requests are
 * decoded by kdev_request.c, which has no QEMU dependencies.
 */
#ifndef QEMU_VIRTIO_KERNELET_H
#define QEMU_VIRTIO_KERNELET_H

#include "hw/virtio/virtio.h"
#include "qemu/queue.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "kdev_request.h"
#include "kernelet-link.h"

#define TYPE_VIRTIO_KERNELET "virtio-kernelet-device"
OBJECT_DECLARE_SIMPLE_TYPE(VirtIOKernelet, VIRTIO_KERNELET)

/* A chain popped but not yet answered: served when its timer fires. */
typedef struct KerneletHeld {
    VirtIOKernelet *dev;
    VirtQueue *vq;
    unsigned vq_index;
    VirtQueueElement *elem;
    QEMUTimer *timer;
    QTAILQ_ENTRY(KerneletHeld) next;
} KerneletHeld;

struct VirtIOKernelet {
    VirtIODevice parent_obj;

    VirtQueue *request_vq;
    VirtQueue *launch_vq;

    /* Policy, GPU description and counters; the request decoder reads and updates it. */
    struct kdev_state state;

    /* Static (creation-time) properties describing the GPU shown to the guest until
     * kerneletd supplies the real one. */
    char *gpu_name;
    uint64_t gpu_mem;
    uint32_t gpu_sms;
    uint16_t gpu_cc_major;
    uint16_t gpu_cc_minor;

    /* Chains held before they are served (diagnostic delays). */
    QTAILQ_HEAD(, KerneletHeld) held;

    Error *migration_blocker;

    /* The link to kerneletd (socket property); inactive without a socket. */
    KerneletLink link;
    char *vm_name;             /* vm-name property: the tenant's name at the daemon */
    QEMUBH *resume_bh;         /* serves the queues again after a pause */
};

/* A chain as the two byte streams kdev_request reads and writes. */
struct kdev_chain kernelet_chain(VirtQueueElement *elem);
/* Serves both queues again soon (from a bottom half), after the link paused them. */
void kernelet_resume_queues(VirtIOKernelet *s);
/* Serves a chain the device answers itself that waited (held, or for the statistics),
 * decoding it again, and notifies the guest; drops it when the device is broken. */
void kernelet_serve_chain(VirtIOKernelet *s, VirtQueue *vq, VirtQueueElement *elem);

#endif
