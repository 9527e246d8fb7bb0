// SPDX-License-Identifier: GPL-2.0
/*
 * EXTOLL NIC driver, core part: PCI probe/remove, the "extoll" class with
 * /dev/extoll/rma2 and /dev/extoll/velo2, endpoints (one open file = one
 * VPID), queue allocation, the common mmap/fault path and sysfs.
 *
 * Locking:
 *   ep->lock   per endpoint state (queue size, queue pointer, regions);
 *              never held while touching user memory (mmap() runs with
 *              mmap_lock held and takes it).
 *   xdev->lock VPID and ATU tables and every register access; nests inside
 *              ep->lock; never held while touching user memory (our fault
 *              handler takes it).
 */

#include <linux/bitmap.h>
#include <linux/dma-mapping.h>
#include <linux/error-injection.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "extoll_drv.h"

/* The table is one DMA coherent allocation: at most 4 MiB (512 Ki entries). */
#define EXTOLL_ATU_TABLE_MAX	(512 * 1024)

static unsigned int atu_entries = 65536;

static int extoll_param_set_atu(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 2, EXTOLL_ATU_TABLE_MAX);
}

static const struct kernel_param_ops extoll_atu_param_ops = {
	.set = extoll_param_set_atu,
	.get = param_get_uint,
};

module_param_cb(atu_entries, &extoll_atu_param_ops, &atu_entries, 0444);

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
MODULE_PARM_DESC(atu_entries,
		 "ATU entries per device = 4 KiB pages that can be registered at once, 2..524288 (default 65536 = 256 MiB)");

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

static unsigned int max_user_percent = 50;

module_param_cb(max_user_percent, &exa_percent_param_ops,
		&max_user_percent, 0644);
MODULE_PARM_DESC(max_user_percent,
		 "Share of each NIC resource (RMA and VELO VPIDs, ATU entries, queue budget) one user without CAP_SYS_RESOURCE may hold, 1..100 % (default 50)");

static const char * const extoll_res_names[EXTOLL_NUM_RES] = {
	[EXTOLL_RES_RMA_VPID]	= "rma_vpid",
	[EXTOLL_RES_VELO_VPID]	= "velo_vpid",
	[EXTOLL_RES_ATU]	= "atu_entries",
	[EXTOLL_RES_QUEUE]	= "queue_bytes",
};

static DEFINE_IDA(extoll_ids);
static dev_t extoll_devt;

/* ------------------------------------------------------------ lifetime */

static void extoll_dev_free(struct kref *ref)
{
	struct extoll_drv_dev *xdev = container_of(ref, struct extoll_drv_dev, ref);

	if (xdev->quota.names)
		exa_quota_destroy(&xdev->quota);
	if (xdev->atu)
		dma_free_coherent(&xdev->pdev->dev,
				  PAGE_ALIGN((size_t)xdev->atu_entries * 8),
				  xdev->atu, xdev->atu_dma);
	bitmap_free(xdev->atu_map);
	pci_dev_put(xdev->pdev);
	kfree(xdev);
}

void extoll_dev_put(struct extoll_drv_dev *xdev)
{
	kref_put(&xdev->ref, extoll_dev_free);
}

/* ----------------------------------------------------------- endpoints */

int extoll_put_u64(struct extoll_drv_ep *ep, unsigned long arg, u64 val)
{
	if (put_user(val, (u64 __user *)arg)) {
		extoll_ep_dbg(ep, "bad user pointer\n");
		return -EFAULT;
	}
	return 0;
}

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
	u64 budget = (u64)READ_ONCE(queue_budget_mb) << 20;
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

/* --------------------------------------------------------------- sysfs */

static struct extoll_drv_dev *to_xdev(struct device *dev)
{
	return container_of(dev, struct extoll_drv_cdev, dev)->xdev;
}

static ssize_t node_id_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", to_xdev(dev)->node_id);
}
static DEVICE_ATTR_RO(node_id);

static ssize_t vpids_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct extoll_drv_cdev *xc = container_of(dev, struct extoll_drv_cdev, dev);

	return sysfs_emit(buf, "%u\n", xc->xdev->num_vpids[xc->unit]);
}
static DEVICE_ATTR_RO(vpids);

static ssize_t vpids_in_use_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct extoll_drv_cdev *xc = container_of(dev, struct extoll_drv_cdev, dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(xc->xdev->in_use[xc->unit]));
}
static DEVICE_ATTR_RO(vpids_in_use);

static ssize_t registered_pages_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_xdev(dev)->atu_used));
}
static DEVICE_ATTR_RO(registered_pages);

/* Evidence for tests that deregistration and teardown unpin everything. */
static ssize_t pinned_pages_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  (long long)atomic64_read(&to_xdev(dev)->pinned_pages));
}
static DEVICE_ATTR_RO(pinned_pages);

static ssize_t atu_entries_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_xdev(dev)->atu_entries);
}
static DEVICE_ATTR_RO(atu_entries);

static ssize_t queue_bytes_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(to_xdev(dev)->q_bytes));
}
static DEVICE_ATTR_RO(queue_bytes);

static ssize_t user_usage_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return exa_quota_show(&to_xdev(dev)->quota, buf);
}
static DEVICE_ATTR_RO(user_usage);

static const char * const extoll_counter_names[EXTOLL_NUM_COUNTERS] = {
	EXTOLL_COUNTER_NAMES_INIT
};

static ssize_t counters_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct extoll_drv_dev *xdev = to_xdev(dev);
	ssize_t len = 0;
	unsigned int n;

	mutex_lock(&xdev->lock);
	if (xdev->dead) {
		mutex_unlock(&xdev->lock);
		extoll_dbg(xdev, "device removed\n");
		return -ENODEV;
	}
	for (n = 0; n < EXTOLL_NUM_COUNTERS; n++)
		len += sysfs_emit_at(buf, len, "%s %llu\n",
				     extoll_counter_names[n],
				     extoll_hw_read_counter(xdev, n));
	mutex_unlock(&xdev->lock);
	return len;
}
static DEVICE_ATTR_RO(counters);

static struct attribute *extoll_attrs[] = {
	&dev_attr_user_usage.attr,
	&dev_attr_counters.attr,
	&dev_attr_queue_bytes.attr,
	&dev_attr_node_id.attr,
	&dev_attr_vpids.attr,
	&dev_attr_vpids_in_use.attr,
	&dev_attr_registered_pages.attr,
	&dev_attr_pinned_pages.attr,
	&dev_attr_atu_entries.attr,
	NULL,
};
ATTRIBUTE_GROUPS(extoll);

/* /dev/extoll/rma2 for the first device, /dev/extoll/rma2.N for others. */
static char *extoll_devnode(struct device *dev, umode_t *mode)
{
	struct extoll_drv_cdev *xc = container_of(dev, struct extoll_drv_cdev, dev);

	if (mode)
		*mode = 0666;
	if (xc->xdev->index)
		return kasprintf(GFP_KERNEL, "extoll/%s.%u",
				 extoll_unit_name(xc->unit), xc->xdev->index);
	return kasprintf(GFP_KERNEL, "extoll/%s", extoll_unit_name(xc->unit));
}

static struct class extoll_class = {
	.name		= EXTOLL_DRV_NAME,
	.owner		= THIS_MODULE,
	.devnode	= extoll_devnode,
	.dev_groups	= extoll_groups,
};

/* ----------------------------------------------------------------- PCI */

static void extoll_cdev_release(struct device *dev)
{
	struct extoll_drv_cdev *xc = container_of(dev, struct extoll_drv_cdev, dev);

	extoll_dev_put(xc->xdev);
}

static const struct file_operations *extoll_unit_fops[EXTOLL_NUM_UNITS] = {
	[EXTOLL_UNIT_RMA]	= &extoll_rma2_fops,
	[EXTOLL_UNIT_VELO]	= &extoll_velo2_fops,
};

/* The links view first: its files read BAR0, unmapped after remove(). */
static void extoll_del_cdev(struct extoll_drv_cdev *xc)
{
	exa_links_sysfs_remove(&xc->links_sysfs);
	cdev_device_del(&xc->cdev, &xc->dev);
}

static int extoll_add_cdevs(struct extoll_drv_dev *xdev)
{
	int u, ret;

	for (u = 0; u < EXTOLL_NUM_UNITS; u++) {
		struct extoll_drv_cdev *xc = &xdev->cdevs[u];

		xc->xdev = xdev;
		xc->unit = u;
		kref_get(&xdev->ref);
		device_initialize(&xc->dev);
		xc->dev.class = &extoll_class;
		xc->dev.parent = &xdev->pdev->dev;
		xc->dev.devt = MKDEV(MAJOR(extoll_devt),
				     xdev->index * EXTOLL_NUM_UNITS + u);
		xc->dev.release = extoll_cdev_release;
		ret = dev_set_name(&xc->dev, "%s%u-%s", EXTOLL_DRV_NAME,
				   xdev->index, extoll_unit_name(u));
		if (!ret) {
			cdev_init(&xc->cdev, extoll_unit_fops[u]);
			xc->cdev.owner = THIS_MODULE;
			ret = cdev_device_add(&xc->cdev, &xc->dev);
		}
		if (!ret) {
			ret = exa_links_sysfs_add(&xc->links_sysfs, &xdev->links,
						  &xc->dev);
			if (ret)
				cdev_device_del(&xc->cdev, &xc->dev);
		}
		if (ret) {
			put_device(&xc->dev);
			while (--u >= 0) {
				extoll_del_cdev(&xdev->cdevs[u]);
				put_device(&xdev->cdevs[u].dev);
			}
			return ret;
		}
	}
	return 0;
}

static int extoll_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct extoll_drv_dev *xdev;
	char cg_name[16];
	size_t atu_bytes;
	int index, ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	/* ATU entries carry 48-bit bus addresses. */
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(48));
	if (ret) {
		dev_err(&pdev->dev, "no usable DMA configuration\n");
		return ret;
	}
	/*
	 * The ATU takes one entry per 4 KiB page of a region (the driver
	 * walks the mapped region page by page): DMA segments of any length.
	 */
	ret = dma_set_max_seg_size(&pdev->dev, UINT_MAX);
	if (ret)
		return ret;
	index = ida_alloc_max(&extoll_ids, EXTOLL_MAX_DEVICES - 1, GFP_KERNEL);
	if (index < 0)
		return index;
	xdev = kzalloc(sizeof(*xdev), GFP_KERNEL);
	if (!xdev) {
		ida_free(&extoll_ids, index);
		return -ENOMEM;
	}
	kref_init(&xdev->ref);
	xdev->pdev = pci_dev_get(pdev);
	xdev->index = index;
	mutex_init(&xdev->lock);

	/* Maps the privileged BAR, checks the id, reads geometry. */
	ret = extoll_hw_probe(xdev);
	if (ret)
		goto put;

	xdev->atu_entries = min_t(u32, xdev->atu_entries, atu_entries);
	if (xdev->atu_entries < 2) {
		dev_err(&pdev->dev, "ATU too small (%u entries)\n",
			xdev->atu_entries);
		ret = -ENODEV;
		goto put;
	}
	atu_bytes = PAGE_ALIGN((size_t)xdev->atu_entries * 8);
	xdev->atu = dma_alloc_coherent(&pdev->dev, atu_bytes, &xdev->atu_dma,
				       GFP_KERNEL);
	xdev->atu_map = bitmap_zalloc(xdev->atu_entries, GFP_KERNEL);
	if (!xdev->atu || !xdev->atu_map) {
		ret = -ENOMEM;
		goto put;
	}
	set_bit(0, xdev->atu_map);	/* NLA 0 is never valid */

	snprintf(cg_name, sizeof(cg_name), EXTOLL_DRV_NAME "%d", index);
	ret = exa_quota_init(&xdev->quota, &pdev->dev, cg_name,
			     extoll_res_names, EXTOLL_NUM_RES,
			     &max_user_percent);
	if (ret)
		goto put;
	xdev->quota.total[EXTOLL_RES_RMA_VPID] = xdev->num_vpids[EXTOLL_UNIT_RMA];
	xdev->quota.total[EXTOLL_RES_VELO_VPID] = xdev->num_vpids[EXTOLL_UNIT_VELO];
	xdev->quota.total[EXTOLL_RES_ATU] = xdev->atu_entries - 1;
	xdev->quota.total[EXTOLL_RES_QUEUE] = (u64)queue_budget_mb << 20;

	mutex_lock(&xdev->lock);
	extoll_hw_reset(xdev);
	extoll_hw_atu_program(xdev);
	mutex_unlock(&xdev->lock);
	pci_set_master(pdev);

	ret = extoll_add_cdevs(xdev);
	if (ret)
		goto reset;
	pci_set_drvdata(pdev, xdev);
	dev_info(&pdev->dev,
		 "extoll%u: node %u, %u RMA VPIDs, %u VELO VPIDs, %u ATU entries\n",
		 index, xdev->node_id, xdev->num_vpids[EXTOLL_UNIT_RMA],
		 xdev->num_vpids[EXTOLL_UNIT_VELO], xdev->atu_entries);
	return 0;

reset:
	mutex_lock(&xdev->lock);
	xdev->dead = true;
	extoll_hw_reset(xdev);
	mutex_unlock(&xdev->lock);
	pci_clear_master(pdev);
put:
	ida_free(&extoll_ids, index);
	extoll_dev_put(xdev);
	return ret;
}

/*
 * Stop the device (no DMA after the reset's read-back), mark it dead and
 * revoke every user mapping.  Memory is freed when the files are closed.
 */
static void extoll_quiesce(struct extoll_drv_dev *xdev)
{
	int u;
	u32 v;

	mutex_lock(&xdev->lock);
	if (xdev->dead)
		goto unlock;
	WRITE_ONCE(xdev->dead, true);
	extoll_hw_reset(xdev);
	for (u = 0; u < EXTOLL_NUM_UNITS; u++)
		for (v = 0; v < xdev->num_vpids[u]; v++)
			if (xdev->owner[u][v])
				unmap_mapping_range(xdev->owner[u][v]->mapping,
						    0, 0, 1);
unlock:
	mutex_unlock(&xdev->lock);
}

/*
 * After extoll_quiesce() (the NIC reset, the users' mappings zapped, faults
 * answered SIGBUS): give back every DMA mapping and allocation of the
 * endpoints still open, and the ATU table, before the driver lets go of
 * the device (another driver may bind it next; DMA-API debugging reports
 * mappings left behind).  The endpoints' files close later and find
 * nothing left to unmap.
 */
static void extoll_release_dma(struct extoll_drv_dev *xdev)
{
	struct device *dmadev = &xdev->pdev->dev;
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
	mutex_lock(&xdev->lock);
	if (xdev->atu) {
		dma_free_coherent(dmadev, PAGE_ALIGN((size_t)xdev->atu_entries * 8),
				  xdev->atu, xdev->atu_dma);
		xdev->atu = NULL;
	}
	mutex_unlock(&xdev->lock);
}

static void extoll_remove(struct pci_dev *pdev)
{
	struct extoll_drv_dev *xdev = pci_get_drvdata(pdev);
	int u;

	for (u = 0; u < EXTOLL_NUM_UNITS; u++)
		extoll_del_cdev(&xdev->cdevs[u]);
	extoll_quiesce(xdev);
	pci_clear_master(pdev);
	extoll_release_dma(xdev);
	for (u = 0; u < EXTOLL_NUM_UNITS; u++)
		put_device(&xdev->cdevs[u].dev);
	ida_free(&extoll_ids, xdev->index);
	dev_info(&pdev->dev, "extoll%u removed\n", xdev->index);
	extoll_dev_put(xdev);
}

static void extoll_shutdown(struct pci_dev *pdev)
{
	struct extoll_drv_dev *xdev = pci_get_drvdata(pdev);

	if (xdev)
		extoll_quiesce(xdev);
	pci_clear_master(pdev);
}

static const struct pci_device_id extoll_pci_ids[] = {
	{ PCI_DEVICE(EXTOLL_PCI_VENDOR_ID, EXTOLL_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, extoll_pci_ids);

static struct pci_driver extoll_pci_driver = {
	.name		= EXTOLL_DRV_NAME,
	.id_table	= extoll_pci_ids,
	.probe		= extoll_probe,
	.remove		= extoll_remove,
	.shutdown	= extoll_shutdown,
};

/* -------------------------------------------------------------- module */

static int __init extoll_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&extoll_devt, 0,
				  EXTOLL_MAX_DEVICES * EXTOLL_NUM_UNITS,
				  EXTOLL_DRV_NAME);
	if (ret)
		return ret;
	ret = class_register(&extoll_class);
	if (ret)
		goto unregister_chrdev;
	ret = pci_register_driver(&extoll_pci_driver);
	if (ret)
		goto unregister_class;
	return 0;

unregister_class:
	class_unregister(&extoll_class);
unregister_chrdev:
	unregister_chrdev_region(extoll_devt,
				 EXTOLL_MAX_DEVICES * EXTOLL_NUM_UNITS);
	return ret;
}

static void __exit extoll_exit(void)
{
	pci_unregister_driver(&extoll_pci_driver);
	class_unregister(&extoll_class);
	unregister_chrdev_region(extoll_devt,
				 EXTOLL_MAX_DEVICES * EXTOLL_NUM_UNITS);
}

module_init(extoll_init);
module_exit(extoll_exit);

MODULE_DESCRIPTION("EXTOLL NIC: RMA2 and VELO2 user-level endpoints, ATU");
MODULE_AUTHOR("ExaNet fabric stack developers");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXA_CORE);
