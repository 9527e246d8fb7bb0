// SPDX-License-Identifier: GPL-2.0
/*
 * Generic user memory registration: pin + RLIMIT_MEMLOCK accounting, and
 * an unmanaged IOMMU domain per DMA context in which pinned pages are
 * mapped at their user virtual address.  See exa_umem.h.
 *
 * Built as its own module, exa_core.ko, on which exanet.ko and extoll.ko
 * depend; the helpers are exported in the EXA_CORE symbol namespace.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/error-injection.h>
#include <linux/iommu.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "exa_dbg.h"
#include "exa_umem.h"

/* Pages pinned per pin_user_pages_fast() call. */
#define EXA_UMEM_PIN_BATCH	(PAGE_SIZE / sizeof(struct page *))

static int exa_umem_account(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 pinned;

	pinned = atomic64_add_return(npages, &mm->pinned_vm);
	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		exa_pr_dbg("%lu more pages exceed RLIMIT_MEMLOCK (%lu pages, %lld pinned)\n",
			   npages, limit, pinned - npages);
		return -ENOMEM;
	}
	return 0;
}

/**
 * exa_umem_get() - pin a user range of the current process for DMA
 * @um: zero-initialised descriptor, filled on success
 * @addr: user address (any alignment)
 * @len: bytes, 1..EXA_UMEM_MAX_BYTES
 * @writable: the device may write the range (FOLL_WRITE)
 *
 * The pages stay pinned (FOLL_LONGTERM) and accounted in the caller's
 * mm->pinned_vm until exa_umem_release().
 *
 * Return: 0, -EINVAL (bad range), -EFAULT (not mapped or not writable),
 * -ENOMEM (RLIMIT_MEMLOCK or no memory), -EINTR (fatal signal).
 */
int exa_umem_get(struct exa_umem *um, unsigned long addr, size_t len,
		 bool writable)
{
	struct mm_struct *mm = current->mm;
	unsigned int gup = FOLL_LONGTERM | (writable ? FOLL_WRITE : 0);
	unsigned long start, end, npages, done = 0;
	int ret;

	if (!mm) {
		exa_pr_dbg("no user address space\n");
		return -EINVAL;
	}
	if (!len || len > EXA_UMEM_MAX_BYTES || addr + len < addr) {
		exa_pr_dbg("range %#lx+%#zx out of bounds\n", addr, len);
		return -EINVAL;
	}
	if (!access_ok((void __user *)addr, len)) {
		exa_pr_dbg("range %#lx+%#zx not user memory\n", addr, len);
		return -EFAULT;
	}
	start = addr & PAGE_MASK;
	end = PAGE_ALIGN(addr + len);
	if (end < start + 1) {
		exa_pr_dbg("range %#lx+%#zx wraps when page aligned\n", addr, len);
		return -EINVAL;
	}
	npages = (end - start) >> PAGE_SHIFT;

	ret = exa_umem_account(mm, npages);
	if (ret)
		return ret;
	um->pages = kvcalloc(npages, sizeof(*um->pages), GFP_KERNEL_ACCOUNT);
	if (!um->pages) {
		ret = -ENOMEM;
		goto unaccount;
	}

	while (done < npages) {
		int n = min_t(unsigned long, npages - done, EXA_UMEM_PIN_BATCH);

		if (fatal_signal_pending(current)) {
			exa_pr_dbg("fatal signal after %lu of %lu pages\n", done, npages);
			ret = -EINTR;
			goto unpin;
		}
		ret = pin_user_pages_fast(start + (done << PAGE_SHIFT), n, gup,
					  um->pages + done);
		if (ret <= 0) {
			ret = ret ?: -EFAULT;
			exa_pr_dbg("%#lx: page %lu of %lu not pinned%s (%d)\n", addr,
				   done, npages, writable ? " writable" : "", ret);
			goto unpin;
		}
		done += ret;
		cond_resched();
	}

	mmgrab(mm);
	um->mm = mm;
	um->addr = addr;
	um->len = len;
	um->start = start;
	um->npages = npages;
	um->writable = writable;
	return 0;

unpin:
	unpin_user_pages(um->pages, done);
	kvfree(um->pages);
	um->pages = NULL;
unaccount:
	atomic64_sub(npages, &mm->pinned_vm);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(exa_umem_get, EXA_CORE);
ALLOW_ERROR_INJECTION(exa_umem_get, ERRNO);

/**
 * exa_umem_release() - unpin and unaccount a range pinned by exa_umem_get()
 * @um: the descriptor; zeroed on return
 *
 * The caller guarantees that no device can reach the pages any more.
 */
void exa_umem_release(struct exa_umem *um)
{
	if (!um->pages)
		return;
	unpin_user_pages_dirty_lock(um->pages, um->npages, um->writable);
	atomic64_sub(um->npages, &um->mm->pinned_vm);
	mmdrop(um->mm);
	kvfree(um->pages);
	memset(um, 0, sizeof(*um));
}
EXPORT_SYMBOL_NS_GPL(exa_umem_release, EXA_CORE);

/* ------------------------------------------------------------- iospace */

struct exa_iopage {
	struct page *page;
	unsigned int refs;
};

/**
 * exa_iospace_init() - give @dev its own unmanaged IOMMU domain
 * @ios: descriptor to initialise
 * @dev: a device alone in its IOMMU group
 *
 * Return: 0, -ENODEV (no IOMMU translation for @dev), -ENOMEM, or the
 * error of iommu_attach_device() (-EINVAL: the group has other devices).
 */
int exa_iospace_init(struct exa_iospace *ios, struct device *dev)
{
	struct iommu_group *group;
	int ret;

	group = iommu_group_get(dev);
	if (!group)
		return -ENODEV;
	iommu_group_put(group);

	ios->domain = iommu_domain_alloc(dev->bus);
	if (!ios->domain)
		return -ENOMEM;
	ret = iommu_attach_device(ios->domain, dev);
	if (ret) {
		iommu_domain_free(ios->domain);
		ios->domain = NULL;
		return ret;
	}
	ios->dev = dev;
	ios->mapped = 0;
	ios->unmapped = NULL;
	mutex_init(&ios->lock);
	xa_init(&ios->pages);
	return 0;
}
EXPORT_SYMBOL_NS_GPL(exa_iospace_init, EXA_CORE);

/* Every registration must have been unmapped before. */
void exa_iospace_destroy(struct exa_iospace *ios)
{
	if (!ios->domain)
		return;
	WARN_ON(ios->mapped || !xa_empty(&ios->pages));
	iommu_detach_device(ios->domain, ios->dev);
	iommu_domain_free(ios->domain);
	xa_destroy(&ios->pages);
	ios->domain = NULL;
}
EXPORT_SYMBOL_NS_GPL(exa_iospace_destroy, EXA_CORE);

/* Drop one reference on pages [0, n) of @um; flush before returning. */
static void exa_iospace_put(struct exa_iospace *ios, struct exa_umem *um,
			    unsigned long n)
{
	struct iommu_iotlb_gather gather;
	unsigned long i, pfn = um->start >> PAGE_SHIFT;
	bool flush = false;

	lockdep_assert_held(&ios->lock);
	iommu_iotlb_gather_init(&gather);
	for (i = 0; i < n; i++) {
		struct exa_iopage *ip = xa_load(&ios->pages, pfn + i);

		if (WARN_ON(!ip))
			continue;
		if (--ip->refs)
			continue;
		iommu_unmap_fast(ios->domain, (pfn + i) << PAGE_SHIFT,
				 PAGE_SIZE, &gather);
		xa_erase(&ios->pages, pfn + i);
		kfree(ip);
		ios->mapped--;
		flush = true;
	}
	if (flush) {
		iommu_iotlb_sync(ios->domain, &gather);
		if (ios->unmapped)
			ios->unmapped(ios);
	}
}

/**
 * exa_iospace_map() - map pinned pages at IOVA == user VA
 * @ios: the DMA context
 * @um: pinned range
 * @prot: IOMMU_READ and/or IOMMU_WRITE
 *
 * A page already mapped by an overlapping registration is shared (its
 * reference count goes up) when it is the same physical page; a different
 * page at the same address (the user remapped the range while the old
 * registration lives) is refused with -EBUSY.
 */
int exa_iospace_map(struct exa_iospace *ios, struct exa_umem *um, int prot)
{
	unsigned long i, pfn = um->start >> PAGE_SHIFT;
	int ret = 0;

	mutex_lock(&ios->lock);
	for (i = 0; i < um->npages; i++) {
		struct exa_iopage *ip = xa_load(&ios->pages, pfn + i);

		if (ip) {
			if (ip->page != um->pages[i]) {
				exa_dbg(ios->dev, "IOVA %#lx maps another page (range remapped under a registration)\n",
					(pfn + i) << PAGE_SHIFT);
				ret = -EBUSY;
				break;
			}
			ip->refs++;
			continue;
		}
		ip = kmalloc(sizeof(*ip), GFP_KERNEL_ACCOUNT);
		if (!ip) {
			ret = -ENOMEM;
			break;
		}
		ip->page = um->pages[i];
		ip->refs = 1;
		ret = xa_err(xa_store(&ios->pages, pfn + i, ip, GFP_KERNEL_ACCOUNT));
		if (ret) {
			kfree(ip);
			break;
		}
		ret = iommu_map(ios->domain, (pfn + i) << PAGE_SHIFT,
				page_to_phys(um->pages[i]), PAGE_SIZE, prot);
		if (ret) {
			xa_erase(&ios->pages, pfn + i);
			kfree(ip);
			break;
		}
		ios->mapped++;
		if (!(i & 255))
			cond_resched();
	}
	if (ret) {
		if (ret != -EBUSY)
			exa_dbg(ios->dev, "IOVA %#lx not mapped (%d)\n",
				(pfn + i) << PAGE_SHIFT, ret);
		exa_iospace_put(ios, um, i);
	}
	mutex_unlock(&ios->lock);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(exa_iospace_map, EXA_CORE);
ALLOW_ERROR_INJECTION(exa_iospace_map, ERRNO);

/**
 * exa_iospace_unmap() - undo exa_iospace_map()
 * @ios: the DMA context
 * @um: the range given to exa_iospace_map()
 *
 * On return the device can no longer reach pages of @um that no other
 * registration maps (the IOTLB is flushed); DMA to them fails in the
 * IOMMU.  The caller may then exa_umem_release() the range.
 */
void exa_iospace_unmap(struct exa_iospace *ios, struct exa_umem *um)
{
	mutex_lock(&ios->lock);
	exa_iospace_put(ios, um, um->npages);
	mutex_unlock(&ios->lock);
}
EXPORT_SYMBOL_NS_GPL(exa_iospace_unmap, EXA_CORE);

