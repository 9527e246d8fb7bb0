// SPDX-License-Identifier: GPL-2.0
/*
 * EXTOLL NIC driver: endpoints (one open file of /dev/extoll/rma2 or
 * /dev/extoll/velo2 = one VPID of that unit): open, the queue, its
 * pointers, the common mmap/fault path, release, and what removal gives
 * back.  Locking: extoll_main.c.
 */

#include <linux/dma-mapping.h>
#include <linux/error-injection.h>
#include <linux/fs.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "extoll_drv.h"

/* ------------------------------------------------------------ parameters */

/*
 * Queues are DMA coherent kernel memory that any user can ask for (up to
 * 2 x 64 endpoints x 4 MiB): cap the total per device.
 */
static unsigned int queue_budget_mb = 64;

static int extoll_param_set_budget(const char *val,
				   const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, 4096);
}

static const struct kernel_param_ops extoll_budget_param_ops = {
	.set = extoll_param_set_budget,
	.get = param_get_uint,
};

module_param_cb(queue_budget_mb, &extoll_budget_param_ops, &queue_budget_mb,
		0644);
MODULE_PARM_DESC(queue_budget_mb,
		 "MiB of notification queues + VELO rings (with their read-pointer pages) all endpoints of a device may hold, 1..4096 (default 64)");

/* Bytes of queues all endpoints of a device may hold now. */
u64 extoll_queue_budget(void)
{
	return (u64)READ_ONCE(queue_budget_mb) << 20;
}

/* Opt-in shared domain for closed single-user systems; 0: per user. */
static unsigned int default_protid = EXA_DOMAIN_NONE;

static int extoll_param_set_protid(const char *val,
				   const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, EXA_DOMAIN_NONE, EXA_DOMAIN_MAX);
}

static const struct kernel_param_ops extoll_protid_param_ops = {
	.set = extoll_param_set_protid,
	.get = param_get_uint,
};

module_param_cb(default_protid, &extoll_protid_param_ops, &default_protid,
		0644);
MODULE_PARM_DESC(default_protid,
		 "Opt-in protection ID shared by all processes without a bound ancestor (closed single-user systems only); 0 = each user its own domain (default 0)");

/* ----------------------------------------------------------- endpoints */

/* Endpoints belong to the opener, not to inherited descriptors. */
int extoll_ep_check_caller(struct extoll_drv_ep *ep)
{
	if (current->mm != ep->mm) {
		extoll_ep_dbg(ep, "not the opener's address space (pid %d)\n",
			      task_pid_nr(current));
		return -EACCES;
	}
	if (READ_ONCE(ep->xdev->dead)) {
		extoll_ep_dbg(ep, "device removed\n");
		return -ENODEV;
	}
	return 0;
}

int extoll_ep_open(struct inode *inode, struct file *file,
		   enum extoll_unit unit)
{
	struct extoll_drv_cdev *xc = container_of(inode->i_cdev,
					      struct extoll_drv_cdev, cdev);
	struct extoll_drv_dev *xdev = xc->xdev;
	enum extoll_res res = unit == EXTOLL_UNIT_RMA ? EXTOLL_RES_RMA_VPID :
							 EXTOLL_RES_VELO_VPID;
	struct extoll_drv_ep *ep;
	u32 i, vpid = 0, prot;
	int ret = 0;

	if (!current->mm) {
		extoll_dbg(xdev, "%s: no user address space\n",
			   extoll_unit_name(unit));
		return -EINVAL;
	}
	prot = exa_domain_of_current(READ_ONCE(default_protid));
	if (prot == EXA_DOMAIN_NONE) {
		extoll_dbg(xdev, "%s: uid %u has no user domain and no bound ancestor\n",
			   extoll_unit_name(unit),
			   from_kuid(&init_user_ns, current_euid()));
		return -EACCES;
	}
	ep = kzalloc(sizeof(*ep), GFP_KERNEL);
	if (!ep)
		return -ENOMEM;
	/* The quota and cgroup helpers log their refusals. */
	ep->qu = exa_quota_user_get(&xdev->quota);
	if (IS_ERR(ep->qu)) {
		ret = PTR_ERR(ep->qu);
		kfree(ep);
		return ret;
	}
	ret = exa_quota_charge(ep->qu, res, 1);
	if (ret)
		goto put_user;
	ret = exa_cg_charge(&xdev->quota, &ep->cg, RDMACG_RESOURCE_HCA_HANDLE);
	if (ret)
		goto uncharge;
	ep->prot = prot;
	ep->unit = unit;
	ep->mm = current->mm;
	ep->mapping = file->f_mapping;
	ep->q_size = unit == EXTOLL_UNIT_RMA ? RMA2_NOTIQ_DEFAULT_SIZE :
					       VELO2_MBOX_DEFAULT_SIZE;
	ep->seg_size = ep->q_size;
	mutex_init(&ep->lock);
	INIT_LIST_HEAD(&ep->regions);
	refcount_set(&ep->users, 1);

	mutex_lock(&xdev->lock);
	if (xdev->dead) {
		extoll_dbg(xdev, "%s: device removed\n", extoll_unit_name(unit));
		ret = -ENODEV;
		goto unlock;
	}
	/*
	 * Next fit, not lowest free: a VPID number just given back is reused
	 * as late as possible, so late traffic of peers of a dead endpoint
	 * rarely meets a new owner.
	 */
	ret = -EBUSY;
	for (i = 0; i < xdev->num_vpids[unit]; i++) {
		vpid = (xdev->vpid_next[unit] + i) % xdev->num_vpids[unit];
		if (!xdev->owner[unit][vpid]) {
			ret = 0;
			break;
		}
	}
	if (ret) {
		extoll_dbg(xdev, "%s: every VPID is in use\n",
			   extoll_unit_name(unit));
		goto unlock;
	}
	xdev->vpid_next[unit] = (vpid + 1) % xdev->num_vpids[unit];
	ep->vpid = vpid;
	ep->xdev = xdev;
	xdev->owner[unit][vpid] = ep;
	xdev->in_use[unit]++;
	extoll_hw_ep_enable(xdev, unit, vpid, prot);
	kref_get(&xdev->ref);
unlock:
	mutex_unlock(&xdev->lock);
	if (!ret) {
		mmgrab(ep->mm);
		file->private_data = ep;
		return nonseekable_open(inode, file);
	}
	exa_cg_uncharge(&xdev->quota, &ep->cg, RDMACG_RESOURCE_HCA_HANDLE);
uncharge:
	exa_quota_uncharge(ep->qu, res, 1);
put_user:
	exa_quota_user_put(ep->qu);
	kfree(ep);
	return ret;
}

/*
 * Allocate and enable the queue of @ep with its current size (first mmap
 * of the queue area).  Called with ep->lock held.  Not inlined: the
 * fault-injection pass makes it fail (ALLOW_ERROR_INJECTION below).
 */
noinline int extoll_ep_alloc_queue(struct extoll_drv_ep *ep)
{
	struct extoll_drv_dev *xdev = ep->xdev;
	struct device *dmadev = &xdev->pdev->dev;
	size_t alloc = PAGE_SIZE + ep->q_size;
	u64 budget = extoll_queue_budget();
	struct exa_dma_buf rp = {}, qbuf = {};
	int ret = 0;

	lockdep_assert_held(&ep->lock);
	if (ep->q)
		return 0;
	/* The user's share first: a user at its cap learns that (EDQUOT). */
	mutex_lock(&xdev->lock);
	xdev->quota.total[EXTOLL_RES_QUEUE] = budget;
	mutex_unlock(&xdev->lock);
	ret = exa_quota_charge(ep->qu, EXTOLL_RES_QUEUE, alloc);
	if (ret)
		return ret;
	mutex_lock(&xdev->lock);
	if (xdev->dead) {
		extoll_ep_dbg(ep, "device removed\n");
		ret = -ENODEV;
	} else if (xdev->q_bytes + alloc > budget) {
		extoll_ep_dbg(ep, "%zu queue bytes: device budget (queue_budget_mb) used up\n",
			      alloc);
		ret = -ENOMEM;
	} else {
		xdev->q_bytes += alloc;
	}
	mutex_unlock(&xdev->lock);
	if (ret) {
		exa_quota_uncharge(ep->qu, EXTOLL_RES_QUEUE, alloc);
		return ret;
	}

	/* Zeroed: every notification/slot starts "not present". */
	ret = exa_dma_buf_alloc(&rp, dmadev, PAGE_SIZE) ?:
	      exa_dma_buf_alloc(&qbuf, dmadev, ep->q_size);
	if (ret)
		goto free;
	mutex_lock(&xdev->lock);
	if (xdev->dead) {
		extoll_ep_dbg(ep, "device removed\n");
		ret = -ENODEV;
	} else {
		extoll_hw_ep_set_queue(xdev, ep->unit, ep->vpid, rp.dma,
				       qbuf.dma, ep->q_size);
		ep->rp = rp;
		ep->qbuf = qbuf;
		ep->q_alloc = alloc;
		/* Published last: the fault handler reads it without ep->lock. */
		smp_store_release(&ep->q, rp.va);
	}
	mutex_unlock(&xdev->lock);
	if (!ret)
		return 0;
free:
	exa_dma_buf_free(&qbuf, dmadev);
	exa_dma_buf_free(&rp, dmadev);
	mutex_lock(&xdev->lock);
	xdev->q_bytes -= alloc;
	mutex_unlock(&xdev->lock);
	exa_quota_uncharge(ep->qu, EXTOLL_RES_QUEUE, alloc);
	return ret;
}
ALLOW_ERROR_INJECTION(extoll_ep_alloc_queue, ERRNO);

static void extoll_ep_put(struct extoll_drv_ep *ep)
{
	if (refcount_dec_and_test(&ep->users))
		kfree(ep);
}

/* Unmap and free the queue of @ep (no-op if remove() did it already). */
static void extoll_ep_free_queue(struct extoll_drv_ep *ep)
{
	struct device *dmadev = &ep->xdev->pdev->dev;

	mutex_lock(&ep->lock);
	exa_dma_buf_free(&ep->qbuf, dmadev);
	exa_dma_buf_free(&ep->rp, dmadev);
	mutex_unlock(&ep->lock);
}

/*
 * Close (also on process death): disable the VPID part (read-back: no
 * request, notification or ring DMA after it), invalidate and fence the
 * ATU entries of its regions, and only then give the VPID number back;
 * afterwards unmap and unpin the pages and free the queue.
 */
int extoll_ep_release(struct inode *inode, struct file *file)
{
	struct extoll_drv_ep *ep = file->private_data;
	struct extoll_drv_dev *xdev = ep->xdev;
	LIST_HEAD(regions);

	extoll_rma2_take_regions(ep, &regions);
	mutex_lock(&xdev->lock);
	if (!xdev->dead)
		extoll_hw_ep_disable(xdev, ep->unit, ep->vpid);
	extoll_regions_hw_drop(xdev, &regions);
	xdev->owner[ep->unit][ep->vpid] = NULL;
	xdev->in_use[ep->unit]--;
	xdev->q_bytes -= ep->q_alloc;
	mutex_unlock(&xdev->lock);

	extoll_regions_put(xdev, &regions);
	extoll_ep_free_queue(ep);
	exa_quota_uncharge(ep->qu, EXTOLL_RES_QUEUE, ep->q_alloc);
	exa_quota_uncharge(ep->qu, ep->unit == EXTOLL_UNIT_RMA ?
			   EXTOLL_RES_RMA_VPID : EXTOLL_RES_VELO_VPID, 1);
	exa_cg_uncharge(&xdev->quota, &ep->cg, RDMACG_RESOURCE_HCA_HANDLE);
	exa_quota_user_put(ep->qu);
	mmdrop(ep->mm);
	extoll_ep_put(ep);
	extoll_dev_put(xdev);
	return 0;
}

/* ---------------------------------------------------------------- mmap */

/* Page @page of the queue area: 0 the read-pointer page, then the queue. */
unsigned long extoll_queue_pfn(struct extoll_drv_ep *ep, unsigned long page)
{
	/* Pairs with smp_store_release() in extoll_ep_alloc_queue(). */
	void *q = smp_load_acquire(&ep->q);

	if (!q || page >= ep->q_alloc >> PAGE_SHIFT)
		return 0;
	if (!page)
		return PHYS_PFN(virt_to_phys(q));
	return PHYS_PFN(virt_to_phys(ep->qbuf.va +
				     ((page - 1) << PAGE_SHIFT)));
}

/*
 * PROTDESC ioctls: an endpoint's protection ID is its opener's domain.
 * Only CAP_NET_ADMIN may move it to another one, and only while it has
 * no registered memory (the ATU entries carry the ID).
 */
int extoll_ep_set_prot(struct extoll_drv_ep *ep, u64 prot)
{
	struct extoll_drv_dev *xdev = ep->xdev;
	int ret = 0;

	if (prot == EXA_DOMAIN_NONE || prot > EXA_DOMAIN_MAX) {
		extoll_ep_dbg(ep, "protection id %llu out of range\n", prot);
		return -EINVAL;
	}
	mutex_lock(&ep->lock);
	if (prot == ep->prot)
		goto unlock;
	if (!capable(CAP_NET_ADMIN)) {
		extoll_ep_dbg(ep, "protection id %llu refused (no CAP_NET_ADMIN)\n",
			      prot);
		ret = -EPERM;
	} else if (!list_empty(&ep->regions)) {
		extoll_ep_dbg(ep, "protection id %llu: the endpoint has registrations\n",
			      prot);
		ret = -EBUSY;
	} else {
		mutex_lock(&xdev->lock);
		if (xdev->dead) {
			extoll_ep_dbg(ep, "device removed\n");
			ret = -ENODEV;
		} else {
			extoll_hw_ep_set_prot(xdev, ep->unit, ep->vpid, prot);
			ep->prot = prot;
		}
		mutex_unlock(&xdev->lock);
	}
unlock:
	mutex_unlock(&ep->lock);
	return ret;
}

/*
 * File page p of an endpoint: p < mmio_pages is an MMIO page of the VPID
 * (extoll_hw_mmio_pfn), p >= mmio_pages is page p - mmio_pages of the
 * queue buffer (read-pointer page, then the queue).
 */
static vm_fault_t extoll_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct extoll_drv_ep *ep = vma->vm_file->private_data;
	struct extoll_drv_dev *xdev = ep->xdev;
	unsigned long mmio_pages = (unsigned long)vma->vm_private_data;
	unsigned long pfn = 0;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	mutex_lock(&xdev->lock);
	if (xdev->dead)
		goto out;
	if (vmf->pgoff < mmio_pages)
		pfn = extoll_hw_mmio_pfn(xdev, ep->unit, ep->vpid, vmf->pgoff);
	else
		pfn = extoll_queue_pfn(ep, vmf->pgoff - mmio_pages);
	if (pfn)
		ret = vmf_insert_pfn(vma, vmf->address, pfn);
out:
	mutex_unlock(&xdev->lock);
	if (ret & VM_FAULT_SIGBUS)
		extoll_ep_dbg(ep, "SIGBUS: page %lu (%lu register pages)%s\n",
			      vmf->pgoff, mmio_pages, xdev->dead ?
			      " (device removed)" : pfn ? "" : " not mapped");
	return ret;
}

static const struct vm_operations_struct extoll_vm_ops = {
	.fault = extoll_vm_fault,
};

/*
 * Common mmap: the file offset space is [0, mmio_pages) MMIO pages of the
 * endpoint's VPID, then the queue area (read-pointer page + queue).  A
 * mapping must lie inside one area.  Mapping the queue area allocates and
 * enables the queue.
 */
int extoll_mmap_common(struct file *file, struct vm_area_struct *vma,
		       unsigned long mmio_pages)
{
	struct extoll_drv_ep *ep = file->private_data;
	unsigned long npages = vma_pages(vma);
	unsigned long first = vma->vm_pgoff;
	int ret;

	ret = extoll_ep_check_caller(ep);
	if (ret)
		return ret;
	if (!(vma->vm_flags & VM_SHARED)) {
		extoll_ep_dbg(ep, "MAP_PRIVATE\n");
		return -EINVAL;
	}
	if (!npages || first + npages < first) {
		extoll_ep_dbg(ep, "%lu pages at %lu\n", npages, first);
		return -EINVAL;
	}

	if (first < mmio_pages) {
		if (first + npages > mmio_pages) {
			extoll_ep_dbg(ep, "pages %lu..%lu cross the end of the registers\n",
				      first, first + npages - 1);
			return -EINVAL;
		}
		vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	} else {
		mutex_lock(&ep->lock);
		/* Checked before allocating: a failed mmap changes nothing. */
		if (first - mmio_pages + npages >
		    (PAGE_SIZE + ep->q_size) >> PAGE_SHIFT) {
			extoll_ep_dbg(ep, "pages %lu..%lu beyond the queue area (%llu bytes + the read-pointer page)\n",
				      first, first + npages - 1, ep->q_size);
			ret = -EINVAL;
		} else {
			ret = extoll_ep_alloc_queue(ep);
		}
		mutex_unlock(&ep->lock);
		if (ret)
			return ret;
	}
	/*
	 * Pages are inserted on fault.  VM_DONTCOPY (kept by VM_IO): a child
	 * never inherits the endpoint's pages.
	 */
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTCOPY | VM_DONTEXPAND |
			 VM_DONTDUMP;
	vma->vm_private_data = (void *)mmio_pages;
	vma->vm_ops = &extoll_vm_ops;
	return 0;
}

/* --------------------------------------------------- queue size, pointers */

bool extoll_queue_size_ok(u64 size, u64 min, u64 max)
{
	return size >= min && size <= max && is_power_of_2(size) &&
	       !(size & (PAGE_SIZE - 1));
}

/* A valid queue size: fixed once the queue is mapped. */
int extoll_ep_set_queue_size(struct extoll_drv_ep *ep, u64 size)
{
	int ret = 0;

	mutex_lock(&ep->lock);
	if (ep->q && size != ep->q_size) {
		extoll_ep_dbg(ep, "queue of %llu bytes: already mapped with %llu\n",
			      size, ep->q_size);
		ret = -EBUSY;
	} else {
		ep->q_size = size;
	}
	mutex_unlock(&ep->lock);
	return ret;
}

/* --------------------------------------------------------------- removal */

/*
 * Device removal, after the NIC reset: give back the DMA mappings and
 * allocations of every endpoint still open (its file closes later).
 */
void extoll_eps_release_dma(struct extoll_drv_dev *xdev)
{
	int u;
	u32 v;

	for (u = 0; u < EXTOLL_NUM_UNITS; u++) {
		for (v = 0; v < xdev->num_vpids[u]; v++) {
			struct extoll_drv_ep *ep;
			LIST_HEAD(regions);

			mutex_lock(&xdev->lock);
			ep = xdev->owner[u][v];
			if (ep)
				refcount_inc(&ep->users);
			mutex_unlock(&xdev->lock);
			if (!ep)
				continue;
			extoll_ep_dbg(ep, "open at removal: DMA released\n");
			extoll_rma2_take_regions(ep, &regions);
			mutex_lock(&xdev->lock);
			extoll_regions_hw_drop(xdev, &regions);
			mutex_unlock(&xdev->lock);
			extoll_regions_put(xdev, &regions);
			extoll_ep_free_queue(ep);
			extoll_ep_put(ep);
		}
	}
}
