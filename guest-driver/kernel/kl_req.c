// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * virtio_kernelet: one request's life. Built from an ioctl (request copied in, transfer
 * descriptor added, bulk buffers pinned), finished by the device or by a teardown, its
 * answer checked against what was sent, and freed by its waiter or, when nobody waits
 * any more, by the reap work.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kl.h"

static u32 kl_max_request(const struct kl_dev *kd)
{
	return min_t(u32, kd->cfg.max_request, KERNELET_MAX_REQUEST);
}

static u32 kl_max_response(const struct kl_dev *kd)
{
	return min_t(u32, kd->cfg.max_response, KERNELET_MAX_RESPONSE);
}

static u32 kl_max_bulk(const struct kl_dev *kd)
{
	return kd->has_bulk ? min_t(u32, kd->cfg.max_bulk, KERNELET_MAX_BULK) : 0;
}

/* Checks the sizes and counts of a submission before anything is copied or pinned. */
static int kl_check_sizes(const struct kl_dev *kd, const struct kernelet_ioc_submit *s)
{
	if (s->queue >= KERNELET_VQ_COUNT || (s->flags & ~KERNELET_SUBMIT_F_KILLABLE))
		return -EINVAL;
	if (s->req_len < KL_HDR || s->resp_cap < KL_HDR)
		return -EINVAL;
	if (s->req_len > kl_max_request(kd) || s->resp_cap > kl_max_response(kd))
		return -E2BIG;
	if (s->h2d_count > KERNELET_IOC_MAX_BUFS || s->d2h_count > KERNELET_IOC_MAX_BUFS ||
	    s->h2d_count + s->d2h_count > KERNELET_IOC_MAX_BUFS)
		return -E2BIG;
	if (s->h2d_count + s->d2h_count > 0 && !kd->has_bulk)
		return -EINVAL;
	return 0;
}

/* Copies the buffer arrays in and checks each length and the total. */
static int kl_copy_bufs(const struct kl_dev *kd, const struct kernelet_ioc_submit *s,
			struct kernelet_ioc_buf *bufs, u32 *h2d, u32 *d2h)
{
	u64 total = 0;

	if (copy_from_user(bufs, u64_to_user_ptr(s->h2d_bufs), s->h2d_count * sizeof(*bufs)) ||
	    copy_from_user(bufs + s->h2d_count, u64_to_user_ptr(s->d2h_bufs),
			   s->d2h_count * sizeof(*bufs)))
		return -EFAULT;
	*h2d = *d2h = 0;
	for (unsigned int i = 0; i < s->h2d_count + s->d2h_count; i++) {
		if (bufs[i].len == 0)
			return -EINVAL;
		if (bufs[i].len > kl_max_bulk(kd))
			return -E2BIG;
		total += bufs[i].len;
		if (total > kl_max_bulk(kd))
			return -E2BIG;
		if (i < s->h2d_count)
			*h2d += (u32)bufs[i].len;
		else
			*d2h += (u32)bufs[i].len;
	}
	return 0;
}

/* Copies header and payload in, checks what the driver owns and adds the transfer
 * descriptor: readable part = header, xfer, payload. */
static int kl_copy_request(struct kl_req *r, const struct kernelet_ioc_submit *s, u32 context)
{
	struct kernelet_req_hdr *h;
	struct kernelet_xfer *x;
	size_t payload = s->req_len - KL_HDR;

	r->req_len = KL_HDR + KL_XFER + payload;
	r->req = kmalloc(r->req_len, GFP_KERNEL);
	if (!r->req)
		return -ENOMEM;
	h = r->req;
	x = (struct kernelet_xfer *)(h + 1);
	if (copy_from_user(h, u64_to_user_ptr(s->req_addr), KL_HDR) ||
	    copy_from_user(x + 1, u64_to_user_ptr(s->req_addr + KL_HDR), payload))
		return -EFAULT;
	if ((le16_to_cpu((__force __le16)h->flags) & KERNELET_REQ_F_XFER) ||
	    le32_to_cpu((__force __le32)h->length) != payload)
		return -EINVAL;
	h->flags = (__force u16)cpu_to_le16(le16_to_cpu((__force __le16)h->flags) |
					   KERNELET_REQ_F_XFER);
	x->context = (__force u32)cpu_to_le32(context);
	x->resp_bytes = (__force u32)cpu_to_le32((u32)r->resp_cap);
	x->h2d_bytes = (__force u32)cpu_to_le32(r->h2d_bytes);
	x->d2h_bytes = (__force u32)cpu_to_le32(r->d2h_bytes);
	sg_init_one(&r->req_sg, r->req, r->req_len);
	return 0;
}

/* Pins every bulk buffer and checks that the chain fits the device's descriptor limit. */
static int kl_pin_bufs(struct kl_dev *kd, struct kl_req *r,
		       const struct kernelet_ioc_buf *bufs)
{
	unsigned int segs = 2;
	int err;

	for (unsigned int i = 0; i < r->nh2d + r->nd2h; i++) {
		err = kl_buf_pin(kd, &r->bufs[i], bufs[i].addr, bufs[i].len, i >= r->nh2d);
		if (err)
			return err;
		r->npinned++;
		segs += r->bufs[i].sgt.orig_nents;
	}
	return segs > kd->max_segments ? -E2BIG : 0;
}

static struct kl_req *kl_req_alloc(struct kl_dev *kd, unsigned int queue, size_t resp_cap)
{
	struct kl_req *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (!r)
		return NULL;
	r->kd = kd;
	r->queue = queue;
	init_completion(&r->done);
	INIT_LIST_HEAD(&r->node);
	r->resp_cap = resp_cap;
	/* Zeroed: only bytes the device claims to have written go back, but a device may
	 * claim more than it wrote, and kernel memory must not leak to user space. */
	r->resp = kzalloc(resp_cap, GFP_KERNEL);
	if (!r->resp) {
		kfree(r);
		return NULL;
	}
	sg_init_one(&r->resp_sg, r->resp, resp_cap);
	return r;
}

struct kl_req *kl_req_build(struct kl_dev *kd, const struct kernelet_ioc_submit *s,
			    u32 context)
{
	struct kernelet_ioc_buf bufs[KERNELET_IOC_MAX_BUFS];
	struct kl_req *r;
	u32 h2d, d2h;
	int err;

	err = kl_check_sizes(kd, s);
	if (!err)
		err = kl_copy_bufs(kd, s, bufs, &h2d, &d2h);
	if (err)
		return ERR_PTR(err);
	/* The answer must have somewhere to go before the device acts on the request. */
	if (clear_user(u64_to_user_ptr(s->resp_addr), s->resp_cap))
		return ERR_PTR(-EFAULT);
	r = kl_req_alloc(kd, s->queue, s->resp_cap);
	if (!r)
		return ERR_PTR(-ENOMEM);
	r->h2d_bytes = h2d;
	r->d2h_bytes = d2h;
	r->nh2d = s->h2d_count;
	r->nd2h = s->d2h_count;
	err = kl_copy_request(r, s, context);
	if (!err)
		err = kl_pin_bufs(kd, r, bufs);
	if (err) {
		kl_req_free(r);
		return ERR_PTR(err);
	}
	return r;
}

/* Checks the device's answer against the request: used length within the chain, the
 * response header's id, opcode and length consistent with the used length. */
int kl_req_answer(const struct kl_req *r, u32 *resp_len, u64 *d2h_written)
{
	const struct kernelet_req_hdr *q = r->req, *a = r->resp;
	u32 used = r->used_len, len;

	if (r->result)
		return r->result;
	if (used < KL_HDR || used > r->resp_cap + r->d2h_bytes)
		return -EIO;
	len = le32_to_cpu((__force __le32)a->length);
	if (a->opcode != q->opcode || a->request_id != q->request_id)
		return -EIO;
	if (used <= r->resp_cap) {
		/* no bulk written: used = header + payload */
		if (len != used - KL_HDR)
			return -EIO;
		*d2h_written = 0;
	} else {
		/* bulk written: used = the whole response part + the bulk bytes */
		if (len > r->resp_cap - KL_HDR)
			return -EIO;
		*d2h_written = used - r->resp_cap;
	}
	*resp_len = KL_HDR + len;
	return 0;
}

/* Called under kd->lock when the device (or a teardown) is done with the chain. */
void kl_req_finish(struct kl_dev *kd, struct kl_req *r, int result, u32 used_len)
{
	r->result = result;
	r->used_len = used_len;
	r->finished = true;
	kd->completions++;
	atomic_long_dec(&kd->n.inflight);
	atomic_long_dec(&kl_total_inflight);
	atomic_long_inc(&kd->n.completed);
	if (r->orphan) {
		list_add_tail(&r->node, &kd->reap);
		queue_work(kl_wq, &kd->reap_work);
	} else {
		complete(&r->done);
	}
}

void kl_req_free(struct kl_req *r)
{
	for (unsigned int i = 0; i < r->npinned; i++)
		kl_buf_unpin(r->kd, &r->bufs[i]);
	kfree(r->req);
	kfree(r->resp);
	kfree(r);
}

/* Frees orphans in process context: unpinning may sleep (dirty pages are locked). */
void kl_reap_work(struct work_struct *work)
{
	struct kl_dev *kd = container_of(work, struct kl_dev, reap_work);
	struct kl_req *r, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	spin_lock_irqsave(&kd->lock, flags);
	list_splice_init(&kd->reap, &list);
	spin_unlock_irqrestore(&kd->lock, flags);
	list_for_each_entry_safe(r, tmp, &list, node) {
		list_del(&r->node);
		if (r->abandoned)
			atomic_long_dec(&kd->n.orphans);
		kl_req_free(r);
	}
}

/* Tells the device that a context is gone. Called from release(), possibly in a dying
 * process: nothing may wait here, so the request is queued for close_work, which holds a
 * reference on the device until it has run. */
void kl_context_close(struct kl_dev *kd, u32 context)
{
	struct kernelet_req_hdr *h;
	struct kernelet_xfer *x;
	unsigned long flags;
	struct kl_req *r;

	if (READ_ONCE(kd->state) == KL_GONE)
		return;
	r = kl_req_alloc(kd, KERNELET_VQ_REQUEST, KL_HDR);
	if (!r)
		return;
	r->req_len = KL_HDR + KL_XFER;
	r->req = kzalloc(r->req_len, GFP_KERNEL);
	if (!r->req) {
		kl_req_free(r);
		return;
	}
	h = r->req;
	x = (struct kernelet_xfer *)(h + 1);
	h->opcode = (__force u16)cpu_to_le16(KERNELET_OP_CONTEXT_CLOSE);
	h->flags = (__force u16)cpu_to_le16(KERNELET_REQ_F_XFER);
	h->request_id = (__force u64)cpu_to_le64(context);
	x->context = (__force u32)cpu_to_le32(context);
	x->resp_bytes = (__force u32)cpu_to_le32(KL_HDR);
	sg_init_one(&r->req_sg, r->req, r->req_len);
	r->orphan = true;
	spin_lock_irqsave(&kd->lock, flags);
	list_add_tail(&r->node, &kd->closing);
	spin_unlock_irqrestore(&kd->lock, flags);
	kref_get(&kd->ref);
	if (!queue_work(kl_wq, &kd->close_work))
		kl_dev_put(kd);  /* already queued: that run holds a reference */
}

void kl_close_work(struct work_struct *work)
{
	struct kl_dev *kd = container_of(work, struct kl_dev, close_work);
	unsigned long flags;
	struct kl_req *r;

	for (;;) {
		spin_lock_irqsave(&kd->lock, flags);
		r = list_first_entry_or_null(&kd->closing, struct kl_req, node);
		if (r)
			list_del_init(&r->node);
		spin_unlock_irqrestore(&kd->lock, flags);
		if (!r)
			break;
		/* Submitted, the orphan is freed by the completion path; refused, here. */
		if (kl_vq_submit(kd, r, KL_WAIT_IDLE))
			kl_req_free(r);
	}
	kl_dev_put(kd);
}
