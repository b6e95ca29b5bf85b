/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * virtio_kernelet: what the driver's files share.
 *
 * One kl_dev per virtio-kernelet device. Requests (kl_req) are built from an ioctl, handed
 * to a virtqueue and finished by the device (or by a reset or removal); whoever finishes a
 * request that nobody waits for any more puts it on the reap list, so that its pinned
 * pages are released in process context and only once the device has given them back.
 *
 * Locking: `live` (rw semaphore) is held for reading while a virtqueue is used and for
 * writing while the virtqueues are torn down or rebuilt; `lock` (spinlock, taken in the
 * virtqueue callback) serialises virtqueue add/get and the finished/orphan flags.
 */
#ifndef KL_H
#define KL_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <linux/virtio.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "kernelet/virtio_kernelet.h"
#include "kernelet/kernelet_ioctl.h"

#define KL_HDR  sizeof(struct kernelet_req_hdr)
#define KL_XFER sizeof(struct kernelet_xfer)

enum kl_state {
	KL_LIVE,       /* virtqueues up, requests accepted */
	KL_RESETTING,  /* the device is being reset: new requests wait */
	KL_FAILED,     /* a reset failed: requests get -EIO */
	KL_GONE,       /* removed: requests get -ENODEV */
};

/* Counters shown in sysfs; the leak tests read them. */
struct kl_counters {
	atomic_long_t inflight;      /* chains the device holds now */
	atomic_long_t orphans;       /* of those, chains whose caller stopped waiting */
	atomic_long_t pinned_pages;  /* user pages pinned now */
	atomic_long_t submitted;     /* chains handed to the device */
	atomic_long_t completed;     /* chains the device gave back */
	atomic_long_t failed;        /* requests failed by the driver: -EIO, -ENODEV */
	atomic_long_t resets;        /* device resets after NEEDS_RESET */
	atomic_long_t contexts;      /* open files */
};

struct kl_dev {
	struct kref ref;              /* the device binding and each open file */
	struct virtio_device *vdev;   /* NULL once removed */
	struct virtqueue *vqs[KERNELET_VQ_COUNT];
	bool vqs_up;
	struct rw_semaphore live;
	spinlock_t lock;
	enum kl_state state;          /* written under `live` (write) and `lock` */
	wait_queue_head_t wait;       /* ring space freed, state changed */
	u64 completions;              /* under `lock`: chains given back so far */
	struct list_head reap;        /* under `lock`: finished orphans to free */
	struct work_struct reap_work;
	struct list_head closing;     /* under `lock`: CONTEXT_CLOSE requests to send */
	struct work_struct close_work;
	struct work_struct config_work;
	struct delayed_work reset_work;
	bool removing;

	bool has_bulk;                /* KERNELET_F_BULK negotiated */
	unsigned int max_segments;    /* descriptors one chain may use */
	struct mutex cfg_lock;
	struct kernelet_ioc_config cfg;  /* cached device config (context 0) */

	atomic_t next_context;
	int index;
	char name[16];
	struct miscdevice misc;
	struct kl_counters n;
};

/* One pinned user buffer and the scatter list over its pages. */
struct kl_buf {
	struct page **pages;
	unsigned int npages;
	struct sg_table sgt;
	bool d2h;                     /* the device writes it: pages are dirtied on release */
};

struct kl_req {
	struct kl_dev *kd;
	struct list_head node;        /* on kd->reap or kd->closing */
	struct completion done;
	bool finished;                /* under kd->lock */
	bool orphan;                  /* under kd->lock: nobody waits for the answer */
	bool abandoned;               /* a caller stopped waiting (counted in orphans) */
	int result;                   /* 0: answered; -EIO: reset; -ENODEV: removed */
	u32 used_len;
	unsigned int queue;
	void *req;                    /* header, xfer, payload */
	size_t req_len;
	void *resp;                   /* response part */
	size_t resp_cap;
	u32 h2d_bytes, d2h_bytes;
	struct scatterlist req_sg, resp_sg;
	unsigned int nh2d, nd2h;      /* bufs[0..nh2d) h2d, then nd2h d2h */
	unsigned int npinned;         /* bufs[0..npinned) are pinned */
	struct kl_buf bufs[KERNELET_IOC_MAX_BUFS];
};

enum kl_wait { KL_WAIT_INTERRUPTIBLE, KL_WAIT_KILLABLE, KL_WAIT_IDLE };

/* kl_main.c: module-wide counters (all devices, removed ones included) and the
 * workqueue of every work item (destroyed, hence drained, at module exit). */
extern atomic_long_t kl_total_pinned_pages;
extern atomic_long_t kl_total_inflight;
extern struct workqueue_struct *kl_wq;
void kl_dev_put(struct kl_dev *kd);

/* kl_vq.c: virtqueues. */
int kl_vq_init(struct kl_dev *kd);
void kl_vq_teardown(struct kl_dev *kd, enum kl_state state, int result);
int kl_vq_submit(struct kl_dev *kd, struct kl_req *r, enum kl_wait how);
int kl_vq_wait(struct kl_dev *kd, struct kl_req *r, bool killable);

/* kl_req.c: requests. */
struct kl_req *kl_req_build(struct kl_dev *kd, const struct kernelet_ioc_submit *s,
			    u32 context);
int kl_req_answer(const struct kl_req *r, u32 *resp_len, u64 *d2h_written);
void kl_req_finish(struct kl_dev *kd, struct kl_req *r, int result, u32 used_len);
void kl_req_free(struct kl_req *r);
void kl_reap_work(struct work_struct *work);
void kl_context_close(struct kl_dev *kd, u32 context);
void kl_close_work(struct work_struct *work);

/* kl_pin.c: user buffers. */
int kl_buf_pin(struct kl_dev *kd, struct kl_buf *b, u64 addr, u64 len, bool d2h);
void kl_buf_unpin(struct kl_dev *kd, struct kl_buf *b);

/* kl_file.c: /dev/kerneletN. */
extern const struct file_operations kl_fops;

/* kl_sysfs.c: configuration cache and attributes. */
extern const struct attribute_group *kl_groups[];
void kl_config_read(struct kl_dev *kd);
void kl_config_work(struct work_struct *work);

#endif
