// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * virtio_kernelet: the device configuration, cached and refreshed on every
 * configuration-change interrupt, and the sysfs attributes of /sys/class/misc/kerneletN
 * (configuration values and the driver's counters).
 */
#include <linux/device.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/virtio_config.h>

#include "kl.h"

/* Reads the configuration space (process context: config reads may sleep). */
void kl_config_read(struct kl_dev *kd)
{
	struct kernelet_virtio_config raw = { 0 };
	struct kernelet_ioc_config *c = &kd->cfg;
	/* The bulk limits exist only on devices that offer bulk data. */
	size_t len = kd->has_bulk ? sizeof(raw) : offsetof(struct kernelet_virtio_config, max_bulk);

	virtio_cread_bytes(kd->vdev, 0, &raw, len);
	mutex_lock(&kd->cfg_lock);
	c->proto_version = le32_to_cpu((__force __le32)raw.proto_version);
	c->flags = le32_to_cpu((__force __le32)raw.flags);
	c->max_request = le32_to_cpu((__force __le32)raw.max_request);
	c->max_response = le32_to_cpu((__force __le32)raw.max_response);
	c->gpu_mem_bytes = le64_to_cpu((__force __le64)raw.gpu_mem_bytes);
	c->gpu_sm_count = le32_to_cpu((__force __le32)raw.gpu_sm_count);
	c->gpu_cc_major = le16_to_cpu((__force __le16)raw.gpu_cc_major);
	c->gpu_cc_minor = le16_to_cpu((__force __le16)raw.gpu_cc_minor);
	/* The device promises a NUL; a device that breaks the promise gets one anyway. */
	memcpy(c->gpu_name, raw.gpu_name, sizeof(c->gpu_name));
	c->gpu_name[sizeof(c->gpu_name) - 1] = '\0';
	c->max_bulk = kd->has_bulk ? min_t(u32, le32_to_cpu((__force __le32)raw.max_bulk),
					   KERNELET_MAX_BULK) : 0;
	c->max_bufs = KERNELET_IOC_MAX_BUFS;
	c->index = kd->index;
	c->config_generation++;
	mutex_unlock(&kd->cfg_lock);
}

void kl_config_work(struct work_struct *work)
{
	struct kl_dev *kd = container_of(work, struct kl_dev, config_work);

	kl_config_read(kd);
	if (kd->misc.this_device)
		sysfs_notify(&kd->misc.this_device->kobj, NULL, "config_generation");
}

static struct kl_dev *kl_from_dev(struct device *dev)
{
	struct miscdevice *misc = dev_get_drvdata(dev);

	return container_of(misc, struct kl_dev, misc);
}

/* Formats one cached configuration value under the lock. */
#define KL_CFG_ATTR(field, fmt, ...)						\
static ssize_t field##_show(struct device *dev, struct device_attribute *a, char *buf) \
{										\
	struct kl_dev *kd = kl_from_dev(dev);					\
	const struct kernelet_ioc_config *c = &kd->cfg;				\
	ssize_t n;								\
										\
	mutex_lock(&kd->cfg_lock);						\
	n = sysfs_emit(buf, fmt "\n", __VA_ARGS__);				\
	mutex_unlock(&kd->cfg_lock);						\
	return n;								\
}										\
static DEVICE_ATTR_RO(field)

KL_CFG_ATTR(gpu_name, "%s", c->gpu_name);
KL_CFG_ATTR(gpu_sm_count, "%u", c->gpu_sm_count);
KL_CFG_ATTR(gpu_mem_bytes, "%llu", (unsigned long long)c->gpu_mem_bytes);
KL_CFG_ATTR(gpu_cc, "%u.%u", c->gpu_cc_major, c->gpu_cc_minor);
KL_CFG_ATTR(proto_version, "%u.%u", c->proto_version >> 16, c->proto_version & 0xffff);
KL_CFG_ATTR(flags, "0x%x", c->flags);
KL_CFG_ATTR(max_request, "%u", c->max_request);
KL_CFG_ATTR(max_bulk, "%u", c->max_bulk);
KL_CFG_ATTR(config_generation, "%u", c->config_generation);

#define KL_COUNTER_ATTR(field)							\
static ssize_t field##_show(struct device *dev, struct device_attribute *a, char *buf) \
{										\
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&kl_from_dev(dev)->n.field)); \
}										\
static DEVICE_ATTR_RO(field)

KL_COUNTER_ATTR(inflight);
KL_COUNTER_ATTR(orphans);
KL_COUNTER_ATTR(pinned_pages);
KL_COUNTER_ATTR(submitted);
KL_COUNTER_ATTR(completed);
KL_COUNTER_ATTR(failed);
KL_COUNTER_ATTR(resets);
KL_COUNTER_ATTR(contexts);

static struct attribute *kl_attrs[] = {
	&dev_attr_gpu_name.attr,
	&dev_attr_gpu_sm_count.attr,
	&dev_attr_gpu_mem_bytes.attr,
	&dev_attr_gpu_cc.attr,
	&dev_attr_proto_version.attr,
	&dev_attr_flags.attr,
	&dev_attr_max_request.attr,
	&dev_attr_max_bulk.attr,
	&dev_attr_config_generation.attr,
	&dev_attr_inflight.attr,
	&dev_attr_orphans.attr,
	&dev_attr_pinned_pages.attr,
	&dev_attr_submitted.attr,
	&dev_attr_completed.attr,
	&dev_attr_failed.attr,
	&dev_attr_resets.attr,
	&dev_attr_contexts.attr,
	NULL,
};

static const struct attribute_group kl_group = { .attrs = kl_attrs };

const struct attribute_group *kl_groups[] = { &kl_group, NULL };
