// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * virtio_kernelet: /dev/kerneletN. Each open file is a context of the tenant with its own
 * id; the ioctls read the configuration and submit requests (kernelet_ioctl.h).
 */
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kl.h"

struct kl_file {
	struct kl_dev *kd;
	u32 context;
};

static int kl_open(struct inode *inode, struct file *file)
{
	/* misc_open() left our miscdevice here, under the lock misc_deregister() takes. */
	struct kl_dev *kd = container_of(file->private_data, struct kl_dev, misc);
	struct kl_file *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return -ENOMEM;
	kref_get(&kd->ref);
	f->kd = kd;
	do {
		f->context = (u32)atomic_inc_return(&kd->next_context);
	} while (f->context == 0);
	atomic_long_inc(&kd->n.contexts);
	file->private_data = f;
	return nonseekable_open(inode, file);
}

/* Last reference to the file: the process closed it, exited or was killed. Requests it
 * abandoned stay with the device and are freed when the device gives them back. */
static int kl_release(struct inode *inode, struct file *file)
{
	struct kl_file *f = file->private_data;

	kl_context_close(f->kd, f->context);
	atomic_long_dec(&f->kd->n.contexts);
	kl_dev_put(f->kd);
	kfree(f);
	return 0;
}

static long kl_get_config(struct kl_file *f, void __user *arg)
{
	struct kl_dev *kd = f->kd;
	struct kernelet_ioc_config c;

	if (READ_ONCE(kd->state) == KL_GONE)
		return -ENODEV;
	mutex_lock(&kd->cfg_lock);
	c = kd->cfg;
	mutex_unlock(&kd->cfg_lock);
	c.context = f->context;
	return copy_to_user(arg, &c, sizeof(c)) ? -EFAULT : 0;
}

static long kl_submit(struct kl_file *f, struct kernelet_ioc_submit __user *arg)
{
	struct kl_dev *kd = f->kd;
	struct kernelet_ioc_submit s;
	bool killable;
	struct kl_req *r;
	u32 resp_len = 0;
	u64 d2h = 0;
	int err;

	if (copy_from_user(&s, arg, sizeof(s)))
		return -EFAULT;
	/* The results must have somewhere to go before the device acts on the request. */
	if (put_user(0u, &arg->resp_len))
		return -EFAULT;
	r = kl_req_build(kd, &s, f->context);
	if (IS_ERR(r))
		return PTR_ERR(r);
	killable = s.flags & KERNELET_SUBMIT_F_KILLABLE;
	err = kl_vq_submit(kd, r, killable ? KL_WAIT_KILLABLE : KL_WAIT_INTERRUPTIBLE);
	if (err) {
		kl_req_free(r);
		goto out;
	}
	err = kl_vq_wait(kd, r, killable);
	if (err)
		goto out;  /* r now belongs to the completion path */
	err = kl_req_answer(r, &resp_len, &d2h);
	if (!err) {
		s.resp_len = resp_len;
		s.status = le32_to_cpu(((struct kernelet_req_hdr *)r->resp)->status);
		s.d2h_written = d2h;
		if (copy_to_user(u64_to_user_ptr(s.resp_addr), r->resp, resp_len) ||
		    copy_to_user(arg, &s, sizeof(s)))
			err = -EFAULT;
	}
	kl_req_free(r);
out:
	if (err == -EIO || err == -ENODEV)
		atomic_long_inc(&kd->n.failed);
	return err;
}

static long kl_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct kl_file *f = file->private_data;

	switch (cmd) {
	case KERNELET_IOC_GET_CONFIG:
		return kl_get_config(f, (void __user *)arg);
	case KERNELET_IOC_SUBMIT:
		return kl_submit(f, (struct kernelet_ioc_submit __user *)arg);
	default:
		return -ENOTTY;
	}
}

const struct file_operations kl_fops = {
	.owner = THIS_MODULE,
	.open = kl_open,
	.release = kl_release,
	.unlocked_ioctl = kl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};
