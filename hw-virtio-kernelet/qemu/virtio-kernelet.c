/*
 * virtio-kernelet: paravirtual GPU compute device of the Kernelet project.
 *
 * Two virtqueues: requests (each answered in place) and the launch ring. Every chain is
 * handed to the decoder in kdev_request.c as two byte streams read and written in guest
 * memory (bulk data is never copied whole); the decoder validates it and writes a
 * response header with a status. A diagnostic echo may ask to be held for a while before
 * it is served (a timer per held chain); reset and unplug drop held chains. The
 * run-time operator policy (weight, priority, mem-quota, max-inflight, slicing,
 * kernel-time-limit-ms) and the read-only statistics are QOM properties added in
 * instance_init, because static qdev properties cannot change after realize. Migration is
 * refused: the tenant's GPU state lives in kerneletd on this host and cannot move with the
 * VM. With the socket property, requests the device does not answer itself go to
 * kerneletd (kernelet-link.c).
 */
#include "qemu/osdep.h"

#include "hw/qdev-properties.h"
#include "hw/virtio/virtio.h"
#include "migration/blocker.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/cutils.h"
#include "qemu/iov.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "system/system.h"
#include "virtio-kernelet.h"

/* QEMU's virtio name table (grafted entry) and our header must agree on the id. */
QEMU_BUILD_BUG_ON(KERNELET_VIRTIO_ID > 63);

/* The decoder sees a chain as two byte streams; these read and write them in place. */
static size_t kernelet_chain_read(void *opaque, size_t offset, void *buf, size_t len)
{
    VirtQueueElement *elem = opaque;

    return iov_to_buf(elem->out_sg, elem->out_num, offset, buf, len);
}

static size_t kernelet_chain_write(void *opaque, size_t offset, const void *buf, size_t len)
{
    VirtQueueElement *elem = opaque;

    return iov_from_buf(elem->in_sg, elem->in_num, offset, buf, len);
}

struct kdev_chain kernelet_chain(VirtQueueElement *elem)
{
    return (struct kdev_chain){
        .out_len = iov_size(elem->out_sg, elem->out_num),
        .in_len = iov_size(elem->in_sg, elem->in_num),
        .read = kernelet_chain_read,
        .write = kernelet_chain_write,
        .opaque = elem,
    };
}

/* Serves one chain, decoded (r, status: kdev_decode_chain's; r->payload is freed), and
 * returns it to the guest, or, when the x-fault=broken test fault is pending, drops it and
 * marks the device broken (the guest must reset it). Returns whether a used entry was
 * added. */
static bool kernelet_complete(VirtIOKernelet *s, VirtQueue *vq, unsigned vq_index,
                              VirtQueueElement *elem, struct kdev_req *r, uint32_t status)
{
    struct kdev_chain chain = kernelet_chain(elem);
    size_t used;

    if (s->state.fault == KDEV_FAULT_BROKEN) {
        s->state.fault = KDEV_FAULT_NONE;
        free(r->payload);
        r->payload = NULL;
        virtqueue_detach_element(vq, elem, 0);
        g_free(elem);
        virtio_error(VIRTIO_DEVICE(s), "virtio-kernelet: x-fault=broken injected");
        return false;
    }
    used = kdev_serve_decoded(&s->state, vq_index, &chain, r, status);
    virtqueue_push(vq, elem, used);
    g_free(elem);
    return true;
}

/* ---- chains held before they are served (DIAG_ECHO_BULK with a delay) ---- */

static void kernelet_held_free(KerneletHeld *h, bool detach)
{
    QTAILQ_REMOVE(&h->dev->held, h, next);
    timer_free(h->timer);
    if (detach) {
        virtqueue_detach_element(h->vq, h->elem, 0);
        g_free(h->elem);
    }
    g_free(h);
}

void kernelet_serve_chain(VirtIOKernelet *s, VirtQueue *vq, VirtQueueElement *elem)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(s);
    unsigned vq_index = vq == s->launch_vq ? KERNELET_VQ_LAUNCH : KERNELET_VQ_REQUEST;
    struct kdev_chain chain = kernelet_chain(elem);
    struct kdev_req r;
    uint32_t status;

    if (vdev->broken) {
        /* The guest resets a broken device, which drops the chain anyway. */
        virtqueue_detach_element(vq, elem, 0);
        g_free(elem);
        return;
    }
    /* Decoded again: its decoded payload was not kept while it waited. */
    status = kdev_decode_chain(&chain, &r);
    if (kernelet_complete(s, vq, vq_index, elem, &r, status)) {
        virtio_notify(vdev, vq);
    }
}

static void kernelet_held_expired(void *opaque)
{
    KerneletHeld *h = opaque;
    VirtIOKernelet *s = h->dev;
    VirtQueue *vq = h->vq;
    VirtQueueElement *elem = h->elem;

    kernelet_held_free(h, false);
    kernelet_serve_chain(s, vq, elem);
}

static void kernelet_hold(VirtIOKernelet *s, VirtQueue *vq, unsigned vq_index,
                          VirtQueueElement *elem, uint32_t ms)
{
    KerneletHeld *h = g_new0(KerneletHeld, 1);

    h->dev = s;
    h->vq = vq;
    h->vq_index = vq_index;
    h->elem = elem;
    h->timer = timer_new_ms(QEMU_CLOCK_VIRTUAL, kernelet_held_expired, h);
    QTAILQ_INSERT_TAIL(&s->held, h, next);
    timer_mod(h->timer, qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + ms);
}

/* Drops every held chain without answering it (device reset, unplug). */
static void kernelet_drop_held(VirtIOKernelet *s)
{
    while (!QTAILQ_EMPTY(&s->held)) {
        kernelet_held_free(QTAILQ_FIRST(&s->held), true);
    }
}

static void kernelet_handle_vq(VirtIODevice *vdev, VirtQueue *vq)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(vdev);
    unsigned vq_index = vq == s->launch_vq ? KERNELET_VQ_LAUNCH : KERNELET_VQ_REQUEST;
    VirtQueueElement *elem;
    bool pushed = false;

    /* A flood is bounded by the queue size: each pop consumes one available chain. While
     * the daemon link is saturated (output or staging full) the rest waits in the ring. */
    while (!vdev->broken && !kernelet_link_throttled(s) &&
           (elem = virtqueue_pop(vq, sizeof(VirtQueueElement))) != NULL) {
        struct kdev_chain chain = kernelet_chain(elem);
        struct kdev_req r;
        uint32_t status = kdev_decode_chain(&chain, &r);   /* once, for all below */
        uint32_t hold_ms;
        bool paused;

        if (kernelet_link_forward(s, vq, elem, &r, status, &paused)) {
            if (paused) {
                break;
            }
            continue;
        }
        hold_ms = kdev_hold_ms_decoded(vq_index, &r, status);

        if (hold_ms) {
            free(r.payload);
            kernelet_hold(s, vq, vq_index, elem, hold_ms);
            continue;
        }
        pushed |= kernelet_complete(s, vq, vq_index, elem, &r, status);
    }
    if (pushed) {
        virtio_notify(vdev, vq);
    }
}

static void kernelet_resume_bh(void *opaque)
{
    VirtIOKernelet *s = opaque;
    VirtIODevice *vdev = VIRTIO_DEVICE(s);

    kernelet_handle_vq(vdev, s->request_vq);
    kernelet_handle_vq(vdev, s->launch_vq);
}

void kernelet_resume_queues(VirtIOKernelet *s)
{
    qemu_bh_schedule(s->resume_bh);
}

static void kernelet_reset(VirtIODevice *vdev)
{
    kernelet_drop_held(VIRTIO_KERNELET(vdev));
    kernelet_link_reset(VIRTIO_KERNELET(vdev));
}

static void kernelet_get_config(VirtIODevice *vdev, uint8_t *config)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(vdev);
    struct kernelet_virtio_config cfg;

    kdev_fill_config(&s->state, &cfg);
    memcpy(config, &cfg, sizeof(cfg));
}

static uint64_t kernelet_get_features(VirtIODevice *vdev, uint64_t f, Error **errp)
{
    virtio_add_feature(&f, KERNELET_F_BULK);
    return f;
}

/* ---- run-time policy properties ---- */

/* Applies a policy once it is valid: records it, sends it to the daemon (when linked;
 * without waiting: a refusal there is logged) and tells the guest that config changed. An
 * invalid policy leaves the old one in force. */
static bool kernelet_policy_commit(VirtIOKernelet *s, const struct kdev_policy *p,
                                   Error **errp)
{
    char why[128];

    if (kdev_policy_check(p, why, sizeof(why)) < 0) {
        error_setg(errp, "virtio-kernelet: %s", why);
        return false;
    }
    kernelet_link_push_policy(s, p);
    s->state.policy = *p;
    virtio_notify_config(VIRTIO_DEVICE(s));
    return true;
}

/* opaque: offset of a uint32_t inside struct kdev_policy */
static void kernelet_get_u32(Object *obj, Visitor *v, const char *name, void *opaque,
                             Error **errp)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    uint32_t value = *(uint32_t *)((char *)&s->state.policy + (uintptr_t)opaque);

    visit_type_uint32(v, name, &value, errp);
}

static void kernelet_set_u32(Object *obj, Visitor *v, const char *name, void *opaque,
                             Error **errp)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    struct kdev_policy p = s->state.policy;
    uint32_t value;

    if (!visit_type_uint32(v, name, &value, errp)) {
        return;
    }
    *(uint32_t *)((char *)&p + (uintptr_t)opaque) = value;
    kernelet_policy_commit(s, &p, errp);
}

static void kernelet_get_quota(Object *obj, Visitor *v, const char *name, void *opaque,
                               Error **errp)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    uint64_t value = s->state.policy.mem_quota;

    visit_type_size(v, name, &value, errp);
}

static void kernelet_set_quota(Object *obj, Visitor *v, const char *name, void *opaque,
                               Error **errp)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    struct kdev_policy p = s->state.policy;

    if (!visit_type_size(v, name, &p.mem_quota, errp)) {
        return;
    }
    kernelet_policy_commit(s, &p, errp);
}

static void kernelet_get_slicing(Object *obj, Visitor *v, const char *name, void *opaque,
                                 Error **errp)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    bool value = s->state.policy.slicing;

    visit_type_bool(v, name, &value, errp);
}

static void kernelet_set_slicing(Object *obj, Visitor *v, const char *name, void *opaque,
                                 Error **errp)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    struct kdev_policy p = s->state.policy;

    if (!visit_type_bool(v, name, &p.slicing, errp)) {
        return;
    }
    kernelet_policy_commit(s, &p, errp);
}

/* x-fault: a one-shot misbehaviour for testing guest drivers (kdev_request.h). */
static char *kernelet_get_fault(Object *obj, Error **errp)
{
    return g_strdup(kdev_fault_name(VIRTIO_KERNELET(obj)->state.fault));
}

static void kernelet_set_fault(Object *obj, const char *value, Error **errp)
{
    enum kdev_fault fault;

    if (kdev_fault_parse(value, &fault) < 0) {
        error_setg(errp, "virtio-kernelet: x-fault '%s' is not one of none, short-used, "
                   "long-used, wrong-id, bad-length, broken", value);
        return;
    }
    VIRTIO_KERNELET(obj)->state.fault = fault;
}

/* opaque: offset of a uint64_t counter inside struct kernelet_stats */
static void kernelet_get_stat(Object *obj, Visitor *v, const char *name, void *opaque,
                              Error **errp)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    uint64_t value;

    if ((uintptr_t)opaque >= offsetof(struct kernelet_stats, kernels_launched)) {
        /* the daemon's counters as last read; a fresh read is asked for, not waited for */
        kernelet_link_request_stats(s);
    }
    value = *(uint64_t *)((char *)&s->state.stats + (uintptr_t)opaque);
    visit_type_uint64(v, name, &value, errp);
}

/* opaque: offset of a uint64_t counter inside KerneletLink */
static void kernelet_get_link_count(Object *obj, Visitor *v, const char *name, void *opaque,
                                    Error **errp)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    uint64_t value = *(uint64_t *)((char *)&s->link + (uintptr_t)opaque);

    visit_type_uint64(v, name, &value, errp);
}

static void kernelet_instance_init(Object *obj)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    static const struct { const char *name; size_t off; } u32_props[] = {
        { "weight", offsetof(struct kdev_policy, weight) },
        { "priority", offsetof(struct kdev_policy, priority) },
        { "max-inflight", offsetof(struct kdev_policy, max_inflight) },
        { "kernel-time-limit-ms", offsetof(struct kdev_policy, kernel_time_limit_ms) },
    };
    static const struct { const char *name; size_t off; } stats[] = {
        { "requests", offsetof(struct kernelet_stats, requests) },
        { "errors", offsetof(struct kernelet_stats, errors) },
        { "kernels-launched", offsetof(struct kernelet_stats, kernels_launched) },
        { "gpu-time-ns", offsetof(struct kernelet_stats, gpu_time_ns) },
        { "bytes-copied", offsetof(struct kernelet_stats, bytes_copied) },
        { "mem-in-use", offsetof(struct kernelet_stats, mem_in_use) },
    };
    static const struct { const char *name; size_t off; } link_counts[] = {
        { "quota-hits", offsetof(KerneletLink, quota_hits) },
        { "bulk-zero-copy", offsetof(KerneletLink, bulk_zero_copy) },
        { "bulk-staged", offsetof(KerneletLink, bulk_staged) },
    };

    kdev_state_init(&s->state);
    QTAILQ_INIT(&s->held);
    object_property_add_str(obj, "x-fault", kernelet_get_fault, kernelet_set_fault);
    for (size_t i = 0; i < ARRAY_SIZE(u32_props); i++) {
        object_property_add(obj, u32_props[i].name, "uint32", kernelet_get_u32,
                            kernelet_set_u32, NULL, (void *)(uintptr_t)u32_props[i].off);
    }
    object_property_add(obj, "mem-quota", "size", kernelet_get_quota, kernelet_set_quota,
                        NULL, NULL);
    object_property_add(obj, "slicing", "bool", kernelet_get_slicing, kernelet_set_slicing,
                        NULL, NULL);
    for (size_t i = 0; i < ARRAY_SIZE(stats); i++) {
        object_property_add(obj, stats[i].name, "uint64", kernelet_get_stat, NULL, NULL,
                            (void *)(uintptr_t)stats[i].off);
    }
    for (size_t i = 0; i < ARRAY_SIZE(link_counts); i++) {
        object_property_add(obj, link_counts[i].name, "uint64", kernelet_get_link_count, NULL,
                            NULL, (void *)(uintptr_t)link_counts[i].off);
    }
}

/* The tenant's name at the daemon: vm-name, else -name, else the proxy's id. Printable
 * ASCII only (the daemon's rule); other characters become '_'. */
static char *kernelet_tenant_name(VirtIOKernelet *s)
{
    DeviceState *dev = DEVICE(s);
    BusState *bus = qdev_get_parent_bus(dev);
    const char *name = s->vm_name;
    char *out;

    if (!name || !*name) {
        name = qemu_get_vm_name();
    }
    if ((!name || !*name) && bus && bus->parent && bus->parent->id) {
        name = bus->parent->id;
    }
    out = g_strndup(name && *name ? name : "vm", KERNELET_NAME_MAX - 1);
    for (char *c = out; *c; c++) {
        if (*c < 0x21 || *c > 0x7e) {
            *c = '_';
        }
    }
    return out;
}

/* ---- lifecycle ---- */

static void kernelet_realize(DeviceState *dev, Error **errp)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VirtIOKernelet *s = VIRTIO_KERNELET(dev);
    const char *name = s->gpu_name ? s->gpu_name : "Kernelet virtual GPU";

    if (strlen(name) >= sizeof(s->state.gpu.name)) {
        error_setg(errp, "virtio-kernelet: gpu-name is longer than %zu characters",
                   sizeof(s->state.gpu.name) - 1);
        return;
    }
    pstrcpy(s->state.gpu.name, sizeof(s->state.gpu.name), name);
    s->state.gpu.mem_bytes = s->gpu_mem;
    s->state.gpu.sm_count = s->gpu_sms;
    s->state.gpu.cc_major = s->gpu_cc_major;
    s->state.gpu.cc_minor = s->gpu_cc_minor;

    error_setg(&s->migration_blocker,
               "virtio-kernelet does not support migration: the VM's GPU memory, modules "
               "and queued kernels live in kerneletd on this host");
    if (migrate_add_blocker(&s->migration_blocker, errp) < 0) {
        return;
    }

    virtio_init(vdev, KERNELET_VIRTIO_ID, sizeof(struct kernelet_virtio_config));
    s->request_vq = virtio_add_queue(vdev, KERNELET_QUEUE_SIZE, kernelet_handle_vq);
    s->launch_vq = virtio_add_queue(vdev, KERNELET_QUEUE_SIZE, kernelet_handle_vq);
    s->resume_bh = qemu_bh_new(kernelet_resume_bh, s);
    s->link.name = kernelet_tenant_name(s);
    if (!kernelet_link_start(s, errp)) {
        kernelet_link_stop(s);
        qemu_bh_delete(s->resume_bh);
        virtio_delete_queue(s->launch_vq);
        virtio_delete_queue(s->request_vq);
        virtio_cleanup(vdev);
        migrate_del_blocker(&s->migration_blocker);
    }
}

static void kernelet_unrealize(DeviceState *dev)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VirtIOKernelet *s = VIRTIO_KERNELET(dev);

    kernelet_drop_held(s);
    kernelet_link_stop(s);
    qemu_bh_delete(s->resume_bh);
    g_free(s->link.name);
    virtio_delete_queue(s->launch_vq);
    virtio_delete_queue(s->request_vq);
    virtio_cleanup(vdev);
    migrate_del_blocker(&s->migration_blocker);
}

static const Property virtio_kernelet_properties[] = {
    DEFINE_PROP_STRING("gpu-name", VirtIOKernelet, gpu_name),
    DEFINE_PROP_STRING("socket", VirtIOKernelet, link.path),
    DEFINE_PROP_STRING("vm-name", VirtIOKernelet, vm_name),
    DEFINE_PROP_SIZE("gpu-mem", VirtIOKernelet, gpu_mem, 1 * GiB),
    DEFINE_PROP_UINT32("gpu-sms", VirtIOKernelet, gpu_sms, 1),
    DEFINE_PROP_UINT16("gpu-cc-major", VirtIOKernelet, gpu_cc_major, 7),
    DEFINE_PROP_UINT16("gpu-cc-minor", VirtIOKernelet, gpu_cc_minor, 5),
};

static void virtio_kernelet_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    VirtioDeviceClass *vdc = VIRTIO_DEVICE_CLASS(klass);

    device_class_set_props(dc, virtio_kernelet_properties);
    dc->desc = "Kernelet paravirtual GPU compute device";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
    vdc->realize = kernelet_realize;
    vdc->unrealize = kernelet_unrealize;
    vdc->get_features = kernelet_get_features;
    vdc->get_config = kernelet_get_config;
    vdc->reset = kernelet_reset;
}

static const TypeInfo virtio_kernelet_info = {
    .name = TYPE_VIRTIO_KERNELET,
    .parent = TYPE_VIRTIO_DEVICE,
    .instance_size = sizeof(VirtIOKernelet),
    .instance_init = kernelet_instance_init,
    .class_init = virtio_kernelet_class_init,
};

static void virtio_kernelet_register_types(void)
{
    type_register_static(&virtio_kernelet_info);
}

type_init(virtio_kernelet_register_types)
