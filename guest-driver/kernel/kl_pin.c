// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * virtio_kernelet: pinning user buffers for bulk data. The pages stay pinned until the
 * device has given the chain back (or can no longer touch it), whatever happens to the
 * process meanwhile; d2h pages are marked dirty when they are released.
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "kl.h"

static void kl_count_pinned(struct kl_dev *kd, long pages)
{
	atomic_long_add(pages, &kd->n.pinned_pages);
	atomic_long_add(pages, &kl_total_pinned_pages);
}

int kl_buf_pin(struct kl_dev *kd, struct kl_buf *b, u64 addr, u64 len, bool d2h)
{
	unsigned long offset = addr & ~PAGE_MASK;
	unsigned long npages;
	int pinned, err;

	if (addr + len < addr)
		return -EFAULT;
	npages = DIV_ROUND_UP(offset + len, PAGE_SIZE);
	b->pages = kvmalloc_array(npages, sizeof(*b->pages), GFP_KERNEL);
	if (!b->pages)
		return -ENOMEM;
	b->d2h = d2h;
	/* Fails (-EFAULT) on unmapped or kernel addresses and, with FOLL_WRITE, on pages the
	 * process may not write. */
	pinned = pin_user_pages_fast(addr & PAGE_MASK, npages, d2h ? FOLL_WRITE : 0, b->pages);
	if (pinned < 0 || (unsigned long)pinned < npages) {
		if (pinned > 0)
			unpin_user_pages(b->pages, pinned);
		kvfree(b->pages);
		return pinned == -ENOMEM ? -ENOMEM : -EFAULT;
	}
	b->npages = npages;
	err = sg_alloc_table_from_pages(&b->sgt, b->pages, npages, offset, len, GFP_KERNEL);
	if (err) {
		unpin_user_pages(b->pages, npages);
		kvfree(b->pages);
		return err;
	}
	kl_count_pinned(kd, npages);
	return 0;
}

void kl_buf_unpin(struct kl_dev *kd, struct kl_buf *b)
{
	sg_free_table(&b->sgt);
	unpin_user_pages_dirty_lock(b->pages, b->npages, b->d2h);
	kl_count_pinned(kd, -(long)b->npages);
	kvfree(b->pages);
}
