/*
 * virtio-kernelet: paravirtual GPU compute device of the Kernelet project.
 *
 * Two virtqueues: requests (each answered in place) and the launch ring. Every chain is
 * copied out of guest memory, bounded by KERNELET_MAX_REQUEST, and handed to the decoder
 * in kdev_request.c, which validates it and writes a response header with a status. The
 * run-time operator policy (weight, priority, mem-quota, max-inflight, slicing) and the
 * read-only statistics are QOM properties added in instance_init, because static qdev
 * properties cannot change after realize. Migration is refused: the tenant's GPU state
 * lives in kerneletd on this host and cannot move with the VM.
 */
#include "qemu/osdep.h"

#include "hw/qdev-properties.h"
#include "hw/virtio/virtio.h"
#include "migration/blocker.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/cutils.h"
#include "qemu/iov.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "virtio-kernelet.h"

/* QEMU's virtio name table (grafted entry) and our header must agree on the id. */
QEMU_BUILD_BUG_ON(KERNELET_VIRTIO_ID > 63);

/* Copies one chain out, lets the decoder answer it, and returns the answer's size. */
static size_t kernelet_serve(VirtIOKernelet *s, unsigned vq_index, VirtQueueElement *elem)
{
    size_t out_size = iov_size(elem->out_sg, elem->out_num);
    size_t in_size = iov_size(elem->in_sg, elem->in_num);
    /* One byte past the limit is enough for the decoder to reject an oversized chain. */
    size_t req_len = MIN(out_size, (size_t)KERNELET_MAX_REQUEST + 1);
    size_t resp_cap = MIN(in_size, (size_t)KERNELET_MAX_RESPONSE);
    g_autofree uint8_t *req = g_malloc(req_len ? req_len : 1);
    g_autofree uint8_t *resp = g_malloc0(resp_cap ? resp_cap : 1);
    size_t written;

    if (iov_to_buf(elem->out_sg, elem->out_num, 0, req, req_len) != req_len) {
        req_len = 0;  /* unreadable: decoded as a truncated header */
    }
    written = kdev_handle(&s->state, vq_index, req, req_len, resp, resp_cap);
    if (written && iov_from_buf(elem->in_sg, elem->in_num, 0, resp, written) != written) {
        written = 0;
    }
    return written;
}

static void kernelet_handle_vq(VirtIODevice *vdev, VirtQueue *vq)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(vdev);
    unsigned vq_index = vq == s->launch_vq ? KERNELET_VQ_LAUNCH : KERNELET_VQ_REQUEST;
    VirtQueueElement *elem;
    bool pushed = false;

    /* A flood is bounded by the queue size: each pop consumes one available chain. */
    while ((elem = virtqueue_pop(vq, sizeof(VirtQueueElement))) != NULL) {
        size_t written = kernelet_serve(s, vq_index, elem);

        virtqueue_push(vq, elem, written);
        g_free(elem);
        pushed = true;
    }
    if (pushed) {
        virtio_notify(vdev, vq);
    }
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
    return f;
}

/* ---- run-time policy properties ---- */

/* Applies a checked policy: records it and tells the guest that config changed. */
static bool kernelet_policy_commit(VirtIOKernelet *s, const struct kdev_policy *p,
                                   Error **errp)
{
    char why[128];

    if (kdev_policy_check(p, why, sizeof(why)) < 0) {
        error_setg(errp, "virtio-kernelet: %s", why);
        return false;
    }
    s->state.policy = *p;
    s->policy_generation++;
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

/* opaque: offset of a uint64_t counter inside struct kernelet_stats */
static void kernelet_get_stat(Object *obj, Visitor *v, const char *name, void *opaque,
                              Error **errp)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    uint64_t value = *(uint64_t *)((char *)&s->state.stats + (uintptr_t)opaque);

    visit_type_uint64(v, name, &value, errp);
}

static void kernelet_instance_init(Object *obj)
{
    VirtIOKernelet *s = VIRTIO_KERNELET(obj);
    static const struct { const char *name; size_t off; } u32_props[] = {
        { "weight", offsetof(struct kdev_policy, weight) },
        { "priority", offsetof(struct kdev_policy, priority) },
        { "max-inflight", offsetof(struct kdev_policy, max_inflight) },
    };
    static const struct { const char *name; size_t off; } stats[] = {
        { "requests", offsetof(struct kernelet_stats, requests) },
        { "errors", offsetof(struct kernelet_stats, errors) },
        { "kernels-launched", offsetof(struct kernelet_stats, kernels_launched) },
        { "gpu-time-ns", offsetof(struct kernelet_stats, gpu_time_ns) },
        { "bytes-copied", offsetof(struct kernelet_stats, bytes_copied) },
        { "mem-in-use", offsetof(struct kernelet_stats, mem_in_use) },
    };

    kdev_state_init(&s->state);
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
}

static void kernelet_unrealize(DeviceState *dev)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VirtIOKernelet *s = VIRTIO_KERNELET(dev);

    virtio_delete_queue(s->launch_vq);
    virtio_delete_queue(s->request_vq);
    virtio_cleanup(vdev);
    migrate_del_blocker(&s->migration_blocker);
}

static const Property virtio_kernelet_properties[] = {
    DEFINE_PROP_STRING("gpu-name", VirtIOKernelet, gpu_name),
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
