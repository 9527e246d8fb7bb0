// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: mmap of interface pages.  Mappings are populated on
 * fault and checked against the current owner, so freeing an interface
 * (zap, then free) revokes access even from a mapping created concurrently.
 */

#include <linux/bitops.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "exanet_drv.h"

/* ------------------------------------------------------ mmap offset code */

#define EXANET_MMAP_INDEX_MASK	0xffull
#define EXANET_MMAP_INNER_MASK	((1ull << EXANET_MMAP_INDEX_SHIFT) - 1)

/* ------------------------------------------------------------------ mmap */

/*
 * Decode a file page offset into kind, index and page within the object.
 * Works for split VMAs too, because every page carries its full offset.
 */
static bool exanet_decode_pgoff(unsigned long pgoff, u32 *kind, u32 *index,
				unsigned long *page)
{
	u64 off = (u64)pgoff << PAGE_SHIFT;

	*kind = off >> EXANET_MMAP_KIND_SHIFT;
	*index = (off >> EXANET_MMAP_INDEX_SHIFT) & EXANET_MMAP_INDEX_MASK;
	*page = (off & EXANET_MMAP_INNER_MASK) >> PAGE_SHIFT;
	return off == EXANET_MMAP_OFFSET(*kind, *index) +
		      ((u64)*page << PAGE_SHIFT);
}

static vm_fault_t exanet_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct exanet_drv_file *ef = vma->vm_file->private_data;
	struct exanet_drv_dev *edev = ef->edev;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	unsigned long page, pfn = 0;
	struct exanet_drv_mbox *mb;
	u32 kind, index;

	if (!exanet_decode_pgoff(vmf->pgoff, &kind, &index, &page)) {
		exanet_dbg(edev, "offset %#lx names no mapping\n", vmf->pgoff);
		return VM_FAULT_SIGBUS;
	}

	mutex_lock(&edev->lock);
	if (edev->dead)
		goto out;
	switch (kind) {
	case EXANET_MMAP_PKT:
		if (index >= edev->num_pkt || edev->pkt_owner[index] != ef ||
		    edev->pkt_kernel[index] || page)
			goto out;
		pfn = PHYS_PFN(edev->pkt_bar_phys) +
		      index * (EXANET_IFACE_PAGE_SIZE >> PAGE_SHIFT);
		break;
	case EXANET_MMAP_MBOX_REGS:
		if (index >= edev->num_mbox || edev->mbox[index].owner != ef ||
		    edev->mbox[index].kernel || page)
			goto out;
		pfn = PHYS_PFN(edev->mbox_bar_phys) +
		      index * (EXANET_IFACE_PAGE_SIZE >> PAGE_SHIFT);
		break;
	case EXANET_MMAP_MBOX_QUEUE:
		if (index >= edev->num_mbox)
			goto out;
		mb = &edev->mbox[index];
		if (mb->owner != ef || mb->kernel ||
		    page >= mb->queue.size >> PAGE_SHIFT)
			goto out;
		pfn = PHYS_PFN(virt_to_phys(mb->queue.va +
					    (page << PAGE_SHIFT)));
		break;
	case EXANET_MMAP_RDMA:
		if (exanet_rdma_fault_pfn(ef, index, page, &pfn))
			goto out;
		break;
	case EXANET_MMAP_COLL:
		if (exanet_coll_fault_pfn(ef, index, page, &pfn))
			goto out;
		break;
	default:
		goto out;
	}
	ret = vmf_insert_pfn(vma, vmf->address, pfn);
out:
	mutex_unlock(&edev->lock);
	if (ret & VM_FAULT_SIGBUS)
		exanet_dbg(edev, "SIGBUS: kind %u index %u page %lu%s\n", kind,
			   index, page, edev->dead ? " (device removed)" : "");
	return ret;
}

/*
 * The checks of an interface page or mailbox queue at mmap(): @owned is
 * false when @index >= @n too.
 */
static int exanet_mmap_check_iface(struct exanet_drv_dev *edev,
				   const char *what, u32 index, u32 n,
				   bool owned, unsigned long len,
				   unsigned long want_len)
{
	if (index >= n) {
		exanet_dbg(edev, "no %s %u\n", what, index);
		return -EINVAL;
	}
	if (!owned) {
		exanet_dbg(edev, "%s %u is not this file's\n", what, index);
		return -EACCES;
	}
	if (len != want_len) {
		exanet_dbg(edev, "%s %u with length %lu (not %lu)\n", what,
			   index, len, want_len);
		return -EINVAL;
	}
	return 0;
}

static const struct vm_operations_struct exanet_vm_ops = {
	.fault = exanet_vm_fault,
};

int exanet_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct exanet_drv_file *ef = file->private_data;
	struct exanet_drv_dev *edev = ef->edev;
	unsigned long len = vma->vm_end - vma->vm_start;
	unsigned long page;
	bool mmio = true;
	u32 kind, index;
	int ret = 0;

	if (current->mm != ef->mm) {
		exanet_dbg(edev, "not the opener's address space (pid %d)\n",
			   task_pid_nr(current));
		return -EACCES;
	}
	if (!exanet_decode_pgoff(vma->vm_pgoff, &kind, &index, &page) || page) {
		exanet_dbg(edev, "offset %#lx names no mapping\n", vma->vm_pgoff);
		return -EINVAL;
	}

	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
		goto unlock;
	}
	switch (kind) {
	case EXANET_MMAP_PKT:
		ret = exanet_mmap_check_iface(edev, "packetizer", index,
					      edev->num_pkt,
					      index < edev->num_pkt &&
					      edev->pkt_owner[index] == ef &&
					      !edev->pkt_kernel[index],
					      len, EXANET_IFACE_PAGE_SIZE);
		break;
	case EXANET_MMAP_MBOX_REGS:
		ret = exanet_mmap_check_iface(edev, "mailbox", index,
					      edev->num_mbox,
					      index < edev->num_mbox &&
					      edev->mbox[index].owner == ef &&
					      !edev->mbox[index].kernel,
					      len, EXANET_IFACE_PAGE_SIZE);
		break;
	case EXANET_MMAP_MBOX_QUEUE:
		mmio = false;
		ret = exanet_mmap_check_iface(edev, "mailbox queue", index,
					      edev->num_mbox,
					      index < edev->num_mbox &&
					      edev->mbox[index].owner == ef &&
					      !edev->mbox[index].kernel,
					      len, index < edev->num_mbox ?
					      edev->mbox[index].queue.size : 0);
		if (!ret && (vma->vm_flags & VM_WRITE)) {
			exanet_dbg(edev, "mailbox queue %u mapped writable\n",
				   index);
			ret = -EPERM;
		}
		break;
	case EXANET_MMAP_RDMA:
		ret = exanet_rdma_mmap_check(ef, index, len);
		break;
	case EXANET_MMAP_COLL:
		ret = exanet_coll_mmap_check(ef, index, len);
		break;
	default:
		exanet_dbg(edev, "offset %#lx: no mapping kind %u\n",
			   vma->vm_pgoff, kind);
		ret = -EINVAL;
	}
unlock:
	mutex_unlock(&edev->lock);
	if (ret)
		return ret;

	if (mmio) {
		/* A private writable PFN mapping would be a COW mapping. */
		if (!(vma->vm_flags & VM_SHARED)) {
			exanet_dbg(edev, "MAP_PRIVATE of device memory\n");
			return -EINVAL;
		}
		vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	} else {
		/* The NI writes the queue; user space only reads it. */
		vma->vm_flags &= ~VM_MAYWRITE;
	}
	/*
	 * Pages are inserted on fault after an ownership check.  VM_IO keeps
	 * madvise(MADV_DOFORK) from clearing VM_DONTCOPY, so children never
	 * inherit the mapping.
	 */
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTCOPY | VM_DONTEXPAND |
			 VM_DONTDUMP;
	vma->vm_ops = &exanet_vm_ops;
	return 0;
}
