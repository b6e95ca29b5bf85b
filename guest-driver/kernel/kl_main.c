// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * virtio_kernelet: the guest driver of Kernelet's paravirtual GPU (virtio device 57).
 *
 * Binds each virtio-kernelet device, gives it a misc device /dev/kerneletN and keeps it
 * serviceable: a configuration change refreshes the cached configuration; a device that
 * declares itself broken (NEEDS_RESET) is reset, its in-flight requests failed with -EIO,
 * and brought back; a device that goes away (unbind, hot-unplug) fails everything with
 * -ENODEV while open files stay valid until they are closed. Modelled on
 * drivers/misc/nsm.c (a virtio driver exposing a misc device).
 */
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/virtio_config.h>

#include "kl.h"

atomic_long_t kl_total_pinned_pages = ATOMIC_LONG_INIT(0);
atomic_long_t kl_total_inflight = ATOMIC_LONG_INIT(0);
struct workqueue_struct *kl_wq;
static DEFINE_IDA(kl_ida);

/* Read-only module parameters: the counters across all devices, which outlive a
 * hot-unplugged device's sysfs directory. */
static int kl_param_get_counter(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%ld\n", atomic_long_read(kp->arg));
}

static const struct kernel_param_ops kl_counter_ops = { .get = kl_param_get_counter };
module_param_cb(pinned_pages, &kl_counter_ops, &kl_total_pinned_pages, 0444);
MODULE_PARM_DESC(pinned_pages, "user pages pinned for bulk data now (all devices)");
module_param_cb(inflight, &kl_counter_ops, &kl_total_inflight, 0444);
MODULE_PARM_DESC(inflight, "chains held by devices now (all devices)");

static void kl_dev_release(struct kref *ref)
{
	struct kl_dev *kd = container_of(ref, struct kl_dev, ref);

	mutex_destroy(&kd->cfg_lock);
	kfree(kd);
}

void kl_dev_put(struct kl_dev *kd)
{
	kref_put(&kd->ref, kl_dev_release);
}

/* NEEDS_RESET: freeze (fail what the device holds, drop the queues) and restore (reset,
 * renegotiate, new queues), as a suspend/resume cycle would. The device lock keeps this
 * apart from remove and from a real suspend; remove cancels this work, so it must never
 * sleep on that lock. */
static void kl_reset_work(struct work_struct *work)
{
	struct kl_dev *kd = container_of(to_delayed_work(work), struct kl_dev, reset_work);
	struct virtio_device *vdev = kd->vdev;
	int err = -EOPNOTSUPP;

	if (READ_ONCE(kd->removing))
		return;
	if (!device_trylock(&vdev->dev)) {
		queue_delayed_work(kl_wq, &kd->reset_work, msecs_to_jiffies(20));
		return;
	}
	if (vdev->config->get_status(vdev) & VIRTIO_CONFIG_S_NEEDS_RESET) {
		dev_warn(&vdev->dev, "%s: device needs a reset; failing %ld in-flight requests\n",
			 kd->name, atomic_long_read(&kd->n.inflight));
		atomic_long_inc(&kd->n.resets);
#ifdef CONFIG_PM_SLEEP
		err = virtio_device_freeze(vdev);
		if (!err)
			err = virtio_device_restore(vdev);
#endif
		if (err) {
			dev_err(&vdev->dev, "%s: reset failed (%d); requests fail with -EIO\n",
				kd->name, err);
			down_write(&kd->live);
			kl_vq_teardown(kd, KL_FAILED, -EIO);
			up_write(&kd->live);
		}
	}
	device_unlock(&vdev->dev);
}

/* Interrupt context: only look at the status and hand the work on. */
static void kl_config_changed(struct virtio_device *vdev)
{
	struct kl_dev *kd = vdev->priv;

	if (vdev->config->get_status(vdev) & VIRTIO_CONFIG_S_NEEDS_RESET)
		queue_delayed_work(kl_wq, &kd->reset_work, 0);
	else
		queue_work(kl_wq, &kd->config_work);
}

/* Brings the queues up and lets requests in. Caller holds kd->live for writing. */
static int kl_start(struct kl_dev *kd)
{
	unsigned long flags;
	int err;

	err = kl_vq_init(kd);
	if (err)
		return err;
	virtio_device_ready(kd->vdev);
	spin_lock_irqsave(&kd->lock, flags);
	kd->state = KL_LIVE;
	spin_unlock_irqrestore(&kd->lock, flags);
	wake_up_all(&kd->wait);
	return 0;
}

#ifdef CONFIG_PM_SLEEP
static int kl_freeze(struct virtio_device *vdev)
{
	struct kl_dev *kd = vdev->priv;

	down_write(&kd->live);
	kl_vq_teardown(kd, KL_RESETTING, -EIO);
	up_write(&kd->live);
	return 0;
}

static int kl_restore(struct virtio_device *vdev)
{
	struct kl_dev *kd = vdev->priv;
	int err;

	down_write(&kd->live);
	err = kl_start(kd);
	up_write(&kd->live);
	if (!err)
		queue_work(kl_wq, &kd->config_work);
	return err;
}
#endif

static struct kl_dev *kl_dev_alloc(struct virtio_device *vdev)
{
	struct kl_dev *kd = kzalloc(sizeof(*kd), GFP_KERNEL);

	if (!kd)
		return NULL;
	kref_init(&kd->ref);
	kd->vdev = vdev;
	kd->state = KL_RESETTING;
	init_rwsem(&kd->live);
	spin_lock_init(&kd->lock);
	init_waitqueue_head(&kd->wait);
	INIT_LIST_HEAD(&kd->reap);
	INIT_LIST_HEAD(&kd->closing);
	INIT_WORK(&kd->reap_work, kl_reap_work);
	INIT_WORK(&kd->close_work, kl_close_work);
	INIT_WORK(&kd->config_work, kl_config_work);
	INIT_DELAYED_WORK(&kd->reset_work, kl_reset_work);
	mutex_init(&kd->cfg_lock);
	kd->has_bulk = virtio_has_feature(vdev, KERNELET_F_BULK);
	return kd;
}

static int kl_probe(struct virtio_device *vdev)
{
	struct kl_dev *kd = kl_dev_alloc(vdev);
	int err;

	if (!kd)
		return -ENOMEM;
	vdev->priv = kd;
	kd->index = ida_alloc(&kl_ida, GFP_KERNEL);
	if (kd->index < 0) {
		err = kd->index;
		goto free;
	}
	snprintf(kd->name, sizeof(kd->name), "kernelet%d", kd->index);
	kl_config_read(kd);
	down_write(&kd->live);
	err = kl_start(kd);
	up_write(&kd->live);
	if (err)
		goto free_index;
	kd->misc.minor = MISC_DYNAMIC_MINOR;
	kd->misc.mode = 0666;  /* any guest user may run CUDA programs, as with /dev/nvidia* */
	kd->misc.name = kd->name;
	kd->misc.fops = &kl_fops;
	kd->misc.groups = kl_groups;
	kd->misc.parent = &vdev->dev;
	err = misc_register(&kd->misc);
	if (err)
		goto stop;
	dev_info(&vdev->dev, "%s: \"%s\", %u SMs, %llu MiB, cc %u.%u, protocol %u.%u, bulk %u KiB\n",
		 kd->name, kd->cfg.gpu_name, kd->cfg.gpu_sm_count,
		 (unsigned long long)(kd->cfg.gpu_mem_bytes >> 20), kd->cfg.gpu_cc_major,
		 kd->cfg.gpu_cc_minor, kd->cfg.proto_version >> 16,
		 kd->cfg.proto_version & 0xffff, kd->cfg.max_bulk >> 10);
	return 0;

stop:
	down_write(&kd->live);
	kl_vq_teardown(kd, KL_GONE, -ENODEV);
	up_write(&kd->live);
free_index:
	ida_free(&kl_ida, kd->index);
free:
	vdev->priv = NULL;
	kl_dev_put(kd);
	return err;
}

/* Unbind or hot-unplug. Open files keep the kl_dev alive and get -ENODEV from now on. */
static void kl_remove(struct virtio_device *vdev)
{
	struct kl_dev *kd = vdev->priv;
	long open_files = atomic_long_read(&kd->n.contexts);

	WRITE_ONCE(kd->removing, true);
	cancel_delayed_work_sync(&kd->reset_work);
	cancel_work_sync(&kd->config_work);
	misc_deregister(&kd->misc);
	down_write(&kd->live);
	kl_vq_teardown(kd, KL_GONE, -ENODEV);
	kd->vdev = NULL;
	up_write(&kd->live);
	/* Queued CONTEXT_CLOSEs now fail at once; orphans finished above get freed. */
	flush_work(&kd->close_work);
	flush_work(&kd->reap_work);
	dev_info(&vdev->dev, "%s: removed with %ld files open; they get -ENODEV\n", kd->name,
		 open_files);
	ida_free(&kl_ida, kd->index);
	vdev->priv = NULL;
	kl_dev_put(kd);
}

static const struct virtio_device_id kl_id_table[] = {
	{ KERNELET_VIRTIO_ID, VIRTIO_DEV_ANY_ID },
	{ 0 },
};

static const unsigned int kl_features[] = { KERNELET_F_BULK };

static struct virtio_driver kl_driver = {
	.driver.name = KBUILD_MODNAME,
	.driver.owner = THIS_MODULE,
	.id_table = kl_id_table,
	.feature_table = kl_features,
	.feature_table_size = ARRAY_SIZE(kl_features),
	.probe = kl_probe,
	.remove = kl_remove,
	.config_changed = kl_config_changed,
#ifdef CONFIG_PM_SLEEP
	.freeze = kl_freeze,
	.restore = kl_restore,
#endif
};

static int __init kl_init(void)
{
	int err;

	kl_wq = alloc_workqueue("virtio_kernelet", WQ_UNBOUND, 0);
	if (!kl_wq)
		return -ENOMEM;
	err = register_virtio_driver(&kl_driver);
	if (err)
		destroy_workqueue(kl_wq);
	return err;
}

static void __exit kl_exit(void)
{
	unregister_virtio_driver(&kl_driver);
	destroy_workqueue(kl_wq);  /* drains close and reap work of removed devices */
	ida_destroy(&kl_ida);
}

module_init(kl_init);
module_exit(kl_exit);

MODULE_DEVICE_TABLE(virtio, kl_id_table);
MODULE_DESCRIPTION("Kernelet paravirtual GPU (virtio-kernelet) guest driver");
MODULE_LICENSE("Dual MIT/GPL");
