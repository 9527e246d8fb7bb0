// SPDX-License-Identifier: GPL-2.0
/*
 * EXTOLL NIC driver: RMA2 memory registrations (RMA2_IOC_REGISTER,
 * RMA2_IOC_UNREGISTER) into the ATU, and what an endpoint's close or the
 * device's removal gives back.
 *
 * Registration: pin (drivers/common exa_umem: FOLL_LONGTERM, accounted
 * against RLIMIT_MEMLOCK) -> DMA map -> contiguous ATU range at a random
 * place, one entry per 4 KiB page, stamped with the owner VPID, the
 * endpoint's protection ID and the permission.  The NLA of ATU entry i is
 * extoll_hw_nla(i), so a region's NLA space is linear.  Entries count
 * against the user's share of the ATU (exa_quota) and each region is an
 * hca_object of the rdma cgroup.
 * Deregistration: invalidate the entries -> ATU fence (the device has no
 * access in flight that used them) -> DMA unmap -> unpin.
 */

#include <linux/bitmap.h>
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "extoll_drv.h"

/* ---------------------------------------------------------- registration */

static void extoll_region_unpin(struct extoll_drv_dev *xdev,
				struct extoll_drv_region *reg)
{
	atomic64_sub(reg->um.npages, &xdev->pinned_pages);
	exa_umem_release(&reg->um);
}

/*
 * A process may register the same memory any number of times (overlapping
 * regions), so several device-writable mappings of one page coexist.  The
 * DMA API does not support the cache maintenance of overlapping mappings:
 * the driver does it itself, once per region (dma_sync_sgtable_*() after
 * mapping and before unmapping), and maps with DMA_ATTR_SKIP_CPU_SYNC.
 */
static void extoll_region_dma_unmap(struct extoll_drv_dev *xdev,
				    struct extoll_drv_region *reg)
{
	enum dma_data_direction dir = reg->readonly ? DMA_TO_DEVICE :
						      DMA_BIDIRECTIONAL;

	dma_sync_sgtable_for_cpu(&xdev->pdev->dev, &reg->sgt, dir);
	dma_unmap_sgtable(&xdev->pdev->dev, &reg->sgt, dir,
			  DMA_ATTR_SKIP_CPU_SYNC);
}

static void extoll_region_unmap(struct extoll_drv_dev *xdev,
				struct extoll_drv_region *reg)
{
	extoll_region_dma_unmap(xdev, reg);
	sg_free_table(&reg->sgt);
	extoll_region_unpin(xdev, reg);
	kfree(reg);
}

/*
 * Invalidate the ATU entries of the regions on @list (already off their
 * endpoint) and fence.  Called with xdev->lock held.  On success the
 * entries are free again and no device access can reach the pages; if
 * the device does not answer the fence, the entries stay allocated and
 * the regions are marked so that extoll_regions_put() keeps the pages
 * pinned: leaking is better than DMA into memory that was given back.
 */
int extoll_regions_hw_drop(struct extoll_drv_dev *xdev, struct list_head *list)
{
	struct extoll_drv_region *reg;
	int ret = 0;
	u32 i;

	lockdep_assert_held(&xdev->lock);
	if (list_empty(list))
		return 0;
	if (!xdev->dead) {
		list_for_each_entry(reg, list, node)
			for (i = 0; i < reg->count; i++)
				extoll_hw_atu_clear(xdev, reg->atu_first + i);
		ret = extoll_hw_atu_fence(xdev);
	}
	list_for_each_entry(reg, list, node) {
		if (ret) {
			reg->leak = true;
			continue;
		}
		bitmap_clear(xdev->atu_map, reg->atu_first, reg->count);
		xdev->atu_used -= reg->count;
	}
	if (ret)
		dev_err(&xdev->pdev->dev,
			"ATU fence failed (%d): keeping registered pages pinned\n",
			ret);
	return ret;
}

/*
 * DMA unmap, unpin and free regions dropped by extoll_regions_hw_drop(),
 * and give their entries back to the owner's share (a leaked region's
 * entries stay allocated in the table, but are no longer the user's).
 */
void extoll_regions_put(struct extoll_drv_dev *xdev, struct list_head *list)
{
	struct extoll_drv_region *reg, *tmp;

	list_for_each_entry_safe(reg, tmp, list, node) {
		list_del(&reg->node);
		exa_cg_uncharge(&xdev->quota, &reg->cg,
				RDMACG_RESOURCE_HCA_OBJECT);
		exa_quota_uncharge(reg->qu, EXTOLL_RES_ATU, reg->count);
		if (!reg->leak)
			extoll_region_unmap(xdev, reg);
	}
}

static void extoll_regions_free(struct extoll_drv_dev *xdev, struct list_head *list)
{
	if (list_empty(list))
		return;
	mutex_lock(&xdev->lock);
	extoll_regions_hw_drop(xdev, list);
	mutex_unlock(&xdev->lock);
	extoll_regions_put(xdev, list);
}

/* Close: move every region of @ep to @list. */
void extoll_rma2_take_regions(struct extoll_drv_ep *ep, struct list_head *list)
{
	mutex_lock(&ep->lock);
	list_splice_init(&ep->regions, list);
	ep->reg_pages = 0;
	mutex_unlock(&ep->lock);
}

int extoll_rma2_register(struct extoll_drv_ep *ep, void __user *uarg)
{
	struct extoll_drv_dev *xdev = ep->xdev;
	struct rma2_ioc_region r;
	struct extoll_drv_region *reg, *it;
	struct sg_dma_page_iter iter;
	unsigned long idx, start, align, npages;
	LIST_HEAD(undo);
	u32 i;
	int ret;

	if (copy_from_user(&r, uarg, sizeof(r))) {
		extoll_ep_dbg(ep, "bad user pointer\n");
		return -EFAULT;
	}
	if ((r.flags & ~RMA2_REGION_FLAGS) || r.reserved) {
		extoll_ep_dbg(ep, "unknown flags %#x or reserved fields\n", r.flags);
		return -EINVAL;
	}
	if (!r.len || r.len > RMA2_REGION_MAX_BYTES || r.addr + r.len < r.addr) {
		extoll_ep_dbg(ep, "range %#llx+%#llx out of bounds\n",
			      (u64)r.addr, (u64)r.len);
		return -EINVAL;
	}

	reg = kzalloc(sizeof(*reg), GFP_KERNEL);
	if (!reg)
		return -ENOMEM;
	reg->readonly = r.flags & RMA2_REGION_READONLY;
	reg->qu = ep->qu;
	npages = (PAGE_ALIGN(r.addr + r.len) - (r.addr & PAGE_MASK)) >>
		 PAGE_SHIFT;
	/* The quota, cgroup and pinning helpers log their refusals. */
	ret = exa_quota_charge(ep->qu, EXTOLL_RES_ATU, npages);
	if (ret)
		goto free;
	ret = exa_cg_charge(&xdev->quota, &reg->cg, RDMACG_RESOURCE_HCA_OBJECT);
	if (ret)
		goto uncharge;
	ret = exa_umem_get(&reg->um, r.addr, r.len, !reg->readonly);
	if (ret) {
		extoll_ep_dbg(ep, "range %#llx+%#llx not pinned (%d)\n",
			      (u64)r.addr, (u64)r.len, ret);
		goto uncharge_cg;
	}
	if (WARN_ON(reg->um.npages != npages)) {
		ret = -EINVAL;
		goto unpin;
	}
	atomic64_add(reg->um.npages, &xdev->pinned_pages);
	reg->count = reg->um.npages;
	ret = sg_alloc_table_from_pages(&reg->sgt, reg->um.pages,
					reg->um.npages, 0,
					reg->um.npages << PAGE_SHIFT,
					GFP_KERNEL);
	if (ret) {
		extoll_ep_dbg(ep, "no scatterlist for %u pages (%d)\n",
			      reg->count, ret);
		goto unpin;
	}
	ret = dma_map_sgtable(&xdev->pdev->dev, &reg->sgt,
			      reg->readonly ? DMA_TO_DEVICE :
					      DMA_BIDIRECTIONAL,
			      DMA_ATTR_SKIP_CPU_SYNC);
	if (ret) {
		extoll_ep_dbg(ep, "%u pages not DMA mapped (%d)\n",
			      reg->count, ret);
		goto free_sgt;
	}
	dma_sync_sgtable_for_device(&xdev->pdev->dev, &reg->sgt,
				    reg->readonly ? DMA_TO_DEVICE :
						    DMA_BIDIRECTIONAL);

	mutex_lock(&xdev->lock);
	if (xdev->dead) {
		extoll_ep_dbg(ep, "device removed\n");
		ret = -ENODEV;
		goto unlock;
	}
	/*
	 * First free range from a random start: the NLA of a new region
	 * tells nothing about where other users' regions are, and an NLA
	 * just given back is rarely handed out again at once.  Ranges are
	 * aligned to their size rounded up to a power of two, so regions of
	 * one size tile the table instead of fragmenting it; the unaligned
	 * search is the last resort.
	 */
	align = roundup_pow_of_two(reg->count) - 1;
	start = (get_random_u32() % xdev->atu_entries) & ~align;
	idx = bitmap_find_next_zero_area(xdev->atu_map, xdev->atu_entries,
					 start, reg->count, align);
	if (idx >= xdev->atu_entries)
		idx = bitmap_find_next_zero_area(xdev->atu_map,
						 xdev->atu_entries, 0,
						 reg->count, align);
	if (idx >= xdev->atu_entries)
		idx = bitmap_find_next_zero_area(xdev->atu_map,
						 xdev->atu_entries, 1,
						 reg->count, 0);
	if (idx >= xdev->atu_entries) {
		extoll_ep_dbg(ep, "no %u free ATU entries in a row\n",
			      reg->count);
		ret = -ENOSPC;
		goto unlock;
	}
	bitmap_set(xdev->atu_map, idx, reg->count);
	xdev->atu_used += reg->count;
	reg->atu_first = idx;
	reg->nla = extoll_hw_nla(idx);
	i = 0;
	for_each_sgtable_dma_page(&reg->sgt, &iter, 0) {
		if (WARN_ON(i >= reg->count))
			break;
		extoll_hw_atu_set(xdev, idx + i, sg_page_iter_dma_address(&iter),
				  ep->vpid, READ_ONCE(ep->prot), reg->readonly);
		i++;
	}
unlock:
	mutex_unlock(&xdev->lock);
	if (ret)
		goto unmap;

	mutex_lock(&ep->lock);
	list_add_tail(&reg->node, &ep->regions);
	ep->reg_pages += reg->count;
	mutex_unlock(&ep->lock);

	r.start = reg->um.start;
	r.offset = r.addr - reg->um.start;
	r.count = reg->count;
	r.size = (u64)reg->count << PAGE_SHIFT;
	r.nla = reg->nla;
	if (!copy_to_user(uarg, &r, sizeof(r)))
		return 0;

	/* The caller never learnt the NLA: undo, unless already undone. */
	mutex_lock(&ep->lock);
	list_for_each_entry(it, &ep->regions, node) {
		if (it == reg) {
			list_move(&reg->node, &undo);
			ep->reg_pages -= reg->count;
			break;
		}
	}
	mutex_unlock(&ep->lock);
	extoll_regions_free(xdev, &undo);
	extoll_ep_dbg(ep, "bad user pointer: region NLA %#llx dropped\n",
		      (u64)reg->nla);
	return -EFAULT;

unmap:
	extoll_region_dma_unmap(xdev, reg);
free_sgt:
	sg_free_table(&reg->sgt);
unpin:
	extoll_region_unpin(xdev, reg);
uncharge_cg:
	exa_cg_uncharge(&xdev->quota, &reg->cg, RDMACG_RESOURCE_HCA_OBJECT);
uncharge:
	exa_quota_uncharge(ep->qu, EXTOLL_RES_ATU, npages);
free:
	kfree(reg);
	return ret;
}

int extoll_rma2_unregister(struct extoll_drv_ep *ep, void __user *uarg)
{
	struct rma2_ioc_region r;
	struct extoll_drv_region *reg;
	LIST_HEAD(list);
	int ret = -EINVAL;

	if (copy_from_user(&r, uarg, sizeof(r))) {
		extoll_ep_dbg(ep, "bad user pointer\n");
		return -EFAULT;
	}
	mutex_lock(&ep->lock);
	list_for_each_entry(reg, &ep->regions, node) {
		if (reg->nla == r.nla &&
		    ((u64)reg->count << PAGE_SHIFT) == r.size) {
			list_move(&reg->node, &list);
			ep->reg_pages -= reg->count;
			ret = 0;
			break;
		}
	}
	mutex_unlock(&ep->lock);
	extoll_regions_free(ep->xdev, &list);
	if (ret)
		extoll_ep_dbg(ep, "no region at NLA %#llx of %#llx bytes\n",
			      (u64)r.nla, (u64)r.size);
	return ret;
}
