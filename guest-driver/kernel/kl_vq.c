// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * virtio_kernelet: the two virtqueues. Adding a chain, the completion callback, waiting
 * for an answer, and taking the queues down (reset, removal) so that every chain the
 * device still held is finished exactly once.
 */
#include <linux/sched/signal.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "kl.h"

/* Virtqueue callback (interrupt context): finishes every chain the device gave back. */
static void kl_vq_done(struct virtqueue *vq)
{
	struct kl_dev *kd = vq->vdev->priv;
	unsigned long flags;
	struct kl_req *r;
	unsigned int len;
	bool any = false;

	spin_lock_irqsave(&kd->lock, flags);
	do {
		virtqueue_disable_cb(vq);
		while ((r = virtqueue_get_buf(vq, &len)) != NULL) {
			kl_req_finish(kd, r, 0, len);
			any = true;
		}
	} while (!virtqueue_enable_cb(vq));
	spin_unlock_irqrestore(&kd->lock, flags);
	if (any)
		wake_up_all(&kd->wait);
}

int kl_vq_init(struct kl_dev *kd)
{
	static vq_callback_t *callbacks[KERNELET_VQ_COUNT] = { kl_vq_done, kl_vq_done };
	static const char *const names[KERNELET_VQ_COUNT] = { "request", "launch" };
	struct virtio_device *vdev = kd->vdev;
	unsigned int ring;
	int err;

	err = virtio_find_vqs(vdev, KERNELET_VQ_COUNT, kd->vqs, callbacks, names, NULL);
	if (err)
		return err;
	/* Without indirect descriptors a chain must fit in the ring itself. */
	ring = min(virtqueue_get_vring_size(kd->vqs[0]), virtqueue_get_vring_size(kd->vqs[1]));
	if (virtio_has_feature(vdev, VIRTIO_RING_F_INDIRECT_DESC))
		kd->max_segments = KERNELET_MAX_SEGMENTS;
	else
		kd->max_segments = ring;
	kd->vqs_up = true;
	return 0;
}

/* Finishes, with `result`, every chain still on the queues. Caller holds kd->lock. */
static void kl_vq_fail_all(struct kl_dev *kd, int result)
{
	struct kl_req *r;
	unsigned int len;

	for (int i = 0; i < KERNELET_VQ_COUNT; i++) {
		/* Answers the device gave before it stopped are real answers. */
		while ((r = virtqueue_get_buf(kd->vqs[i], &len)) != NULL)
			kl_req_finish(kd, r, 0, len);
		while ((r = virtqueue_detach_unused_buf(kd->vqs[i])) != NULL)
			kl_req_finish(kd, r, result, 0);
	}
}

/* Stops the device and deletes the virtqueues; chains it held are finished with `result`
 * (their pages are released only now: the device can no longer write them). Caller holds
 * kd->live for writing. */
void kl_vq_teardown(struct kl_dev *kd, enum kl_state state, int result)
{
	unsigned long flags;

	spin_lock_irqsave(&kd->lock, flags);
	kd->state = state;
	spin_unlock_irqrestore(&kd->lock, flags);
	if (kd->vqs_up) {
		/* After the reset the device touches no buffer and raises no interrupt. A device
		 * that has left the bus reads as all ones and would never read back the 0 a
		 * reset waits for; it touches nothing either. */
		if (kd->vdev->config->get_status(kd->vdev) != 0xff)
			virtio_reset_device(kd->vdev);
		spin_lock_irqsave(&kd->lock, flags);
		kl_vq_fail_all(kd, result);
		spin_unlock_irqrestore(&kd->lock, flags);
		kd->vdev->config->del_vqs(kd->vdev);
		memset(kd->vqs, 0, sizeof(kd->vqs));
		kd->vqs_up = false;
	}
	wake_up_all(&kd->wait);
}

static int kl_state_errno(enum kl_state state)
{
	return state == KL_GONE ? -ENODEV : -EIO;
}

/* Fills sgs[] with the chain's parts in order: request, h2d bulk, response, d2h bulk. */
static unsigned int kl_vq_sgs(struct kl_req *r, struct scatterlist **sgs, unsigned int *out)
{
	unsigned int n = 0, i;

	sgs[n++] = &r->req_sg;
	for (i = 0; i < r->nh2d; i++)
		sgs[n++] = r->bufs[i].sgt.sgl;
	*out = n;
	sgs[n++] = &r->resp_sg;
	for (; i < r->nh2d + r->nd2h; i++)
		sgs[n++] = r->bufs[i].sgt.sgl;
	return n;
}

/* One attempt to add the chain; returns 0, -ENOSPC (ring full), -EAGAIN (resetting) or a
 * final error. *seen and *state say what to wait for before trying again. */
static int kl_vq_try_add(struct kl_dev *kd, struct kl_req *r, u64 *seen,
			 enum kl_state *state)
{
	struct scatterlist *sgs[2 + KERNELET_IOC_MAX_BUFS];
	unsigned int out, total = kl_vq_sgs(r, sgs, &out);
	struct virtqueue *vq = NULL;
	unsigned long flags;
	bool kick = false;
	int err;

	down_read(&kd->live);
	spin_lock_irqsave(&kd->lock, flags);
	*seen = kd->completions;
	*state = kd->state;
	if (kd->state == KL_RESETTING) {
		err = -EAGAIN;
	} else if (kd->state != KL_LIVE) {
		err = kl_state_errno(kd->state);
	} else {
		vq = kd->vqs[r->queue];
		err = virtqueue_add_sgs(vq, sgs, out, total - out, r, GFP_ATOMIC);
		if (!err) {
			atomic_long_inc(&kd->n.inflight);
			atomic_long_inc(&kl_total_inflight);
			atomic_long_inc(&kd->n.submitted);
			kick = virtqueue_kick_prepare(vq);
		} else if (err == -ENOSPC && atomic_long_read(&kd->n.inflight) == 0) {
			/* Nothing will free ring space: the indirect table could not be had. */
			err = -ENOMEM;
		}
	}
	spin_unlock_irqrestore(&kd->lock, flags);
	/* Notify outside the spinlock but under `live`, so the queue cannot vanish. */
	if (kick)
		virtqueue_notify(vq);
	up_read(&kd->live);
	return err;
}

/* Hands the chain to the device, waiting for ring space or the end of a reset. Before it
 * is added nothing has happened, so an interrupted wait restarts the system call. */
int kl_vq_submit(struct kl_dev *kd, struct kl_req *r, enum kl_wait how)
{
	enum kl_state state;
	u64 seen;
	int err;

	for (;;) {
		err = kl_vq_try_add(kd, r, &seen, &state);
		if (err != -ENOSPC && err != -EAGAIN)
			return err;
#define KL_MOVED (READ_ONCE(kd->completions) != seen || READ_ONCE(kd->state) != state)
		if (how == KL_WAIT_IDLE)
			wait_event_idle(kd->wait, KL_MOVED);
		else if (how == KL_WAIT_KILLABLE ? wait_event_killable(kd->wait, KL_MOVED) :
			 wait_event_interruptible(kd->wait, KL_MOVED))
			return -ERESTARTSYS;
#undef KL_MOVED
	}
}

/* Waits for the device to finish the chain. Interrupted, the chain is left to the device:
 * it becomes an orphan that the completion path frees, and -EINTR is returned (the caller
 * must not touch r again). */
int kl_vq_wait(struct kl_dev *kd, struct kl_req *r, bool killable)
{
	unsigned long flags;
	int err;

	err = killable ? wait_for_completion_killable(&r->done) :
			 wait_for_completion_interruptible(&r->done);
	if (!err)
		return 0;
	spin_lock_irqsave(&kd->lock, flags);
	if (r->finished) {
		/* The answer arrived together with the signal: take it. */
		spin_unlock_irqrestore(&kd->lock, flags);
		return 0;
	}
	r->orphan = true;
	r->abandoned = true;
	atomic_long_inc(&kd->n.orphans);
	spin_unlock_irqrestore(&kd->lock, flags);
	return -EINTR;
}
