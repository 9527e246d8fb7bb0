// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: RDMA engine.
 *
 * DMA contexts.  Each rank r (0..7) of a node is a separate, BAR-less PCI
 * function "exanet-ctx" (device 0xe7a1) alone in its IOMMU group; the NI
 * issues every RDMA DMA of rank r as a bus-master access of that function
 * with the plain user virtual address.  This file binds those functions
 * (a second pci_driver in the module), gives each an unmanaged IOMMU domain
 * (drivers/common/exa_umem_pin.c) and hands ranks to open files: the first
 * RDMA_ALLOC or REG_MR of a file claims a free rank, programs the rank's
 * context with the file's PDID and enables it.  Registered pages are pinned,
 * accounted against RLIMIT_MEMLOCK and mapped in the rank's domain at
 * IOVA == user VA, so peers (and the NI on the caller's behalf) can reach
 * exactly the registered pages of exactly this process.
 *
 * Teardown order (deregistration, close, process death, device removal):
 * disable what can still start DMA (RDMA page: aborts its channels; rank
 * context: the MMIO write returns only when no DMA through the context can
 * happen any more, the model runs all DMA under the BQL), then unmap the
 * pages from the IOMMU domain (IOTLB flushed before return; DMA to them then
 * fails cleanly with an error completion), then unpin.  No DMA lands in
 * memory that was given back.
 *
 * The ctx functions of a node are assumed to belong to its (single) NI:
 * a rank is usable on NI n only if n reports the context PRESENT.
 *
 * Locking: edev->lock (outer) -> exanet_ctx_lock (inner).  ef->mr_lock is
 * taken without either and never while holding them.
 */

#include <linux/error-injection.h>
#include <linux/iommu.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "exanet_drv.h"
#include "exa_umem.h"

static unsigned int max_rdma_pages_per_file = 4;
module_param(max_rdma_pages_per_file, uint, 0644);
MODULE_PARM_DESC(max_rdma_pages_per_file,
		 "RDMA pages one open file may hold, 1..16 (default 4)");

static unsigned int rdma_window = 128;
module_param(rdma_window, uint, 0444);
MODULE_PARM_DESC(rdma_window,
		 "RDMA blocks (16 KiB) in flight per transfer, 1..256, programmed at probe (default 128)");

static unsigned int max_mr_per_file = 4096;
module_param(max_mr_per_file, uint, 0644);
MODULE_PARM_DESC(max_mr_per_file,
		 "Memory registrations one open file may hold (default 4096)");

static atomic_long_t exanet_reg_pages = ATOMIC_LONG_INIT(0);
static atomic_t exanet_nmr = ATOMIC_INIT(0);
static u32 exanet_ranks_in_use;		/* under exanet_ctx_lock */

/* ------------------------------------------------------------ NI side */

int exanet_rdma_probe(struct exanet_drv_dev *edev)
{
	struct pci_dev *pdev = edev->pdev;
	u32 caps;
	int ret;

	edev->num_rpages = 0;
	if (!(pci_resource_flags(pdev, EXANET_BAR_RDMA) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, EXANET_BAR_RDMA) < EXANET_BAR_RDMA_SIZE) {
		dev_info(&pdev->dev, "no RDMA engine (BAR%d)\n", EXANET_BAR_RDMA);
		return 0;
	}
	ret = pci_request_region(pdev, EXANET_BAR_RDMA, EXANET_DRV_NAME);
	if (ret)
		return ret;
	edev->rdma_bar_phys = pci_resource_start(pdev, EXANET_BAR_RDMA);
	caps = exanet_rd(edev, EXANET_REG_RDMA_CAPS);
	exanet_wr(edev, EXANET_REG_RDMA_WINDOW,
		  clamp_val(rdma_window, 1, EXANET_RDMA_MAX_WINDOW));
	edev->num_rpages = min_t(u32, EXANET_RDMA_CAPS_PAGES(caps),
				 EXANET_RDMA_PAGES);
	dev_info(&pdev->dev, "RDMA engine: %u pages, %u+%u channels, %u ranks\n",
		 edev->num_rpages, EXANET_RDMA_CAPS_WCHANS(caps),
		 EXANET_RDMA_CAPS_RCHANS(caps), EXANET_RDMA_CAPS_RANKS(caps));
	return 0;
}

/* Abort the page's channels; no DMA on its behalf after the read-back. */
static void exanet_rpage_release(struct exanet_drv_dev *edev, u32 p)
{
	struct exanet_drv_file *ef = edev->rpage_owner[p];

	lockdep_assert_held(&edev->lock);
	exanet_coll_page_release(edev, p);
	exanet_wr(edev, EXANET_REG_RPAGE_BASE(p) + EXANET_RPAGE_ENABLE, 0);
	exanet_rd(edev, EXANET_REG_RPAGE_BASE(p) + EXANET_RPAGE_ENABLE);
	exanet_wr(edev, EXANET_REG_RPAGE_BASE(p) + EXANET_RPAGE_PDID, 0);
	exanet_zap(ef, EXANET_MMAP_RDMA, p, EXANET_RDMA_PAGE_SIZE);
	edev->rpage_owner[p] = NULL;
	edev->rpages_in_use--;
	ef->nrpage--;
	exanet_uncharge(ef, EXANET_RES_RPAGE, &edev->rpage_cg[p]);
}

/* Device removal or shutdown, edev->lock held: stop every RDMA DMA. */
void exanet_rdma_quiesce(struct exanet_drv_dev *edev)
{
	u32 p;

	lockdep_assert_held(&edev->lock);
	for (p = 0; p < edev->num_rpages; p++)
		if (edev->rpage_owner[p])
			exanet_rpage_release(edev, p);
	mutex_lock(&exanet_ctx_lock);
	for (p = 0; p < EXANET_RDMA_NUM_RANKS; p++)
		if (exanet_ctxs[p].owner && exanet_ctxs[p].owner->edev == edev)
			exanet_ctx_disable(edev, p);
	mutex_unlock(&exanet_ctx_lock);
}

/* ---------------------------------------------------------- open files */

void exanet_rdma_file_init(struct exanet_drv_file *ef)
{
	mutex_init(&ef->mr_lock);
	xa_init_flags(&ef->mrs, XA_FLAGS_ALLOC1);
}

static void exanet_mr_destroy(struct exanet_drv_ctx *ctx, struct exanet_drv_mr *mr)
{
	if (mr->odp) {
		exanet_odp_dereg(mr);
		atomic_dec(&exanet_nmr);
		kfree(mr);
		return;
	}
	exa_iospace_unmap(&ctx->ios, &mr->um);
	atomic_long_sub(mr->um.npages, &exanet_reg_pages);
	atomic_dec(&exanet_nmr);
	exa_umem_release(&mr->um);
	kfree(mr);
}

/*
 * Close (also on process death): quiesce, unmap, unpin, free the rank.
 * Runs after the file's packetizer and mailbox interfaces were released.
 */
void exanet_rdma_file_release(struct exanet_drv_file *ef)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct exanet_drv_ctx *ctx;
	struct exanet_drv_mr *mr;
	unsigned long h;
	u32 p;

	mutex_lock(&edev->lock);
	if (!edev->dead)
		for (p = 0; p < edev->num_rpages; p++)
			if (edev->rpage_owner[p] == ef)
				exanet_rpage_release(edev, p);
	mutex_lock(&exanet_ctx_lock);
	ctx = ef->ctx;
	if (ctx && !edev->dead)
		exanet_ctx_disable(edev, ctx->rank);
	mutex_unlock(&exanet_ctx_lock);
	mutex_unlock(&edev->lock);

	/*
	 * Nothing can DMA through the context any more.  mr_lock: a fault
	 * worker looking at the registrations has finished with them.
	 */
	mutex_lock(&ef->mr_lock);
	xa_for_each(&ef->mrs, h, mr) {
		xa_erase(&ef->mrs, h);
		exanet_mr_destroy(ctx, mr);
		cond_resched();
	}
	xa_destroy(&ef->mrs);
	mutex_unlock(&ef->mr_lock);

	if (ctx) {
		exanet_odp_ctx_release(ctx);
		mutex_lock(&exanet_ctx_lock);
		ctx->owner = NULL;
		exanet_ranks_in_use--;
		mutex_unlock(&exanet_ctx_lock);
		/* No fault can find ef any more: wait for one that did. */
		exanet_odp_file_quiesce(ctx, ef);
		wake_up_all(&exanet_ctx_wq);
		exanet_uncharge(ef, EXANET_RES_RANK, &ef->rank_cg);
	}
}

/*
 * Give the file a rank (once).  Not inlined: the fault-injection pass makes
 * it fail (ALLOW_ERROR_INJECTION below).
 */
static noinline int exanet_rank_get(struct exanet_drv_file *ef)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct rdma_cgroup *cg = NULL;
	struct exanet_drv_ctx *ctx;
	bool any = false;
	u32 r, st;
	int ret;

	if (READ_ONCE(ef->ctx))
		return 0;
	ret = exanet_charge(ef, EXANET_RES_RANK, &cg);
	if (ret)
		return ret;
	ret = -EBUSY;
	mutex_lock(&edev->lock);
	if (edev->dead) {
		mutex_unlock(&edev->lock);
		exanet_uncharge(ef, EXANET_RES_RANK, &cg);
		exanet_dbg(edev, "device removed\n");
		return -ENODEV;
	}
	mutex_lock(&exanet_ctx_lock);
	if (ef->ctx) {
		ret = 0;
		goto unlock;
	}
	for (r = 0; r < EXANET_RDMA_NUM_RANKS; r++) {
		ctx = &exanet_ctxs[r];
		if (!ctx->pdev || ctx->removing)
			continue;
		st = exanet_rd(edev, EXANET_REG_CTX_BASE(r) + EXANET_CTX_STATUS);
		if (!(st & EXANET_CTX_ST_PRESENT))
			continue;
		any = true;
		if (ctx->owner)
			continue;
		ctx->owner = ef;
		ef->rank_cg = cg;
		cg = NULL;
		exanet_ranks_in_use++;
		exanet_wr(edev, EXANET_REG_CTX_BASE(r) + EXANET_CTX_PDID, ef->pdid);
		exanet_wr(edev, EXANET_REG_CTX_BASE(r) + EXANET_CTX_ENABLE, 1);
		WRITE_ONCE(ef->ctx, ctx);
		ret = 0;
		break;
	}
	/* No usable context at all (no IOMMU / no ctx functions): -ENODEV. */
	if (ret && !any)
		ret = -ENODEV;
	if (ret)
		exanet_dbg(edev, "%s\n",
			   any ? "every rank is taken" : "no DMA context");
unlock:
	mutex_unlock(&exanet_ctx_lock);
	mutex_unlock(&edev->lock);
	/* Not taken (error, or another thread gave the file a rank). */
	if (cg || ret)
		exanet_uncharge(ef, EXANET_RES_RANK, &cg);
	return ret;
}
ALLOW_ERROR_INJECTION(exanet_rank_get, ERRNO);

u32 exanet_file_rank(struct exanet_drv_file *ef)
{
	struct exanet_drv_ctx *ctx = READ_ONCE(ef->ctx);

	return ctx ? ctx->rank : EXANET_RDMA_NO_RANK;
}

/* -------------------------------------------------------------- ioctls */

static int exanet_ioctl_rdma_info(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct exanet_rdma_info info;
	u32 r;

	memset(&info, 0, sizeof(info));
	mutex_lock(&edev->lock);
	if (edev->dead) {
		mutex_unlock(&edev->lock);
		exanet_dbg(edev, "device removed\n");
		return -ENODEV;
	}
	info.node_id = edev->node_id;
	info.pdid = ef->pdid;
	info.num_pages = edev->num_rpages;
	info.pages_held = ef->nrpage;
	mutex_lock(&exanet_ctx_lock);
	for (r = 0; r < EXANET_RDMA_NUM_RANKS; r++)
		if (exanet_ctxs[r].pdev && !exanet_ctxs[r].removing &&
		    (exanet_rd(edev, EXANET_REG_CTX_BASE(r) + EXANET_CTX_STATUS) &
		     EXANET_CTX_ST_PRESENT))
			info.num_ranks++;
	mutex_unlock(&exanet_ctx_lock);
	mutex_unlock(&edev->lock);
	info.rank = exanet_file_rank(ef);
	info.max_mr_bytes = EXA_UMEM_MAX_BYTES;

	if (copy_to_user(uarg, &info, sizeof(info))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	return 0;
}

static int exanet_rpage_free(struct exanet_drv_file *ef, u32 p)
{
	struct exanet_drv_dev *edev = ef->edev;
	int ret = 0;

	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
	} else if (p >= edev->num_rpages || !edev->rpage_owner[p]) {
		exanet_dbg(edev, "RDMA page %u not allocated\n", p);
		ret = -EINVAL;
	} else if (edev->rpage_owner[p] != ef) {
		exanet_dbg(edev, "RDMA page %u is another file's\n", p);
		ret = -EACCES;
	} else {
		exanet_rpage_release(edev, p);
	}
	mutex_unlock(&edev->lock);
	return ret;
}

static int exanet_ioctl_rdma_alloc(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct exanet_rdma_alloc req;
	struct rdma_cgroup *cg = NULL;
	int ret;
	u32 p;

	if (copy_from_user(&req, uarg, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	if (req.flags) {
		exanet_dbg(edev, "unknown flags %#x\n", req.flags);
		return -EINVAL;
	}
	if (!edev->num_rpages) {
		exanet_dbg(edev, "the NI has no RDMA engine\n");
		return -ENODEV;
	}
	ret = exanet_rank_get(ef);
	if (ret)
		return ret;
	ret = exanet_charge(ef, EXANET_RES_RPAGE, &cg);
	if (ret)
		return ret;

	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
		goto unlock;
	}
	if (ef->nrpage >= clamp_val(READ_ONCE(max_rdma_pages_per_file), 1,
				    EXANET_RDMA_PAGES)) {
		exanet_dbg(edev, "file holds max_rdma_pages_per_file\n");
		ret = -ENOSPC;
		goto unlock;
	}
	for (p = 0; p < edev->num_rpages; p++)
		if (!edev->rpage_owner[p])
			break;
	if (p == edev->num_rpages) {
		exanet_dbg(edev, "no free RDMA page\n");
		ret = -ENOSPC;
		goto unlock;
	}
	exanet_wr(edev, EXANET_REG_RPAGE_BASE(p) + EXANET_RPAGE_PDID, ef->pdid);
	exanet_wr(edev, EXANET_REG_RPAGE_BASE(p) + EXANET_RPAGE_RANK,
		  ef->ctx->rank);
	exanet_wr(edev, EXANET_REG_RPAGE_BASE(p) + EXANET_RPAGE_ENABLE, 1);
	edev->rpage_owner[p] = ef;
	edev->rpage_cg[p] = cg;
	edev->rpages_in_use++;
	ef->nrpage++;
	req.node_id = edev->node_id;
unlock:
	mutex_unlock(&edev->lock);
	if (ret) {
		exanet_uncharge(ef, EXANET_RES_RPAGE, &cg);
		return ret;
	}

	req.page = p;
	req.rank = ef->ctx->rank;
	req.mmap_offset = EXANET_MMAP_OFFSET(EXANET_MMAP_RDMA, p);
	req.mmap_size = EXANET_RDMA_PAGE_SIZE;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer: RDMA page %u freed\n", p);
		exanet_rpage_free(ef, p);
		return -EFAULT;
	}
	return 0;
}

static int exanet_dereg(struct exanet_drv_file *ef, u32 handle)
{
	struct exanet_drv_mr *mr;

	mutex_lock(&ef->mr_lock);
	mr = xa_erase(&ef->mrs, handle);
	if (mr)
		ef->nmr--;
	mutex_unlock(&ef->mr_lock);
	if (!mr) {
		exanet_dbg(ef->edev, "no registration %u\n", handle);
		return -EINVAL;
	}
	/*
	 * In-flight transfers that touch these pages fail in the IOMMU from
	 * the moment the unmap returns (error completion); then unpin.
	 */
	exanet_mr_destroy(ef->ctx, mr);
	return 0;
}

static int exanet_mr_room(struct exanet_drv_file *ef)
{
	lockdep_assert_held(&ef->mr_lock);
	if (ef->nmr < READ_ONCE(max_mr_per_file))
		return 0;
	exanet_dbg(ef->edev, "file holds max_mr_per_file\n");
	return -ENOSPC;
}

/* Add a registration to the file: its handle, or a negative error. */
static int exanet_mr_insert(struct exanet_drv_file *ef, struct exanet_drv_mr *mr,
			    u32 *h)
{
	int ret;

	lockdep_assert_held(&ef->mr_lock);
	ret = xa_alloc_cyclic(&ef->mrs, h, mr, xa_limit_31b, &ef->mr_next,
			      GFP_KERNEL);
	if (ret < 0) {
		exanet_dbg(ef->edev, "no handle (%d)\n", ret);
		return ret;
	}
	ef->nmr++;
	atomic_inc(&exanet_nmr);
	return 0;
}

static int exanet_ioctl_reg_odp(struct exanet_drv_file *ef, void __user *uarg,
				struct exanet_reg_mr *req)
{
	struct exanet_drv_mr *mr;
	int ret;
	u32 h;

	ret = exanet_rank_get(ef);
	if (ret)
		return ret;
	ret = exanet_odp_ctx_enable(ef);
	if (ret)
		return ret;
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return -ENOMEM;
	mr->access = (req->access & EXANET_MR_ACCESS_MASK) ?: EXANET_MR_ACCESS_MASK;
	mr->ctx = ef->ctx;
	mutex_lock(&ef->mr_lock);
	ret = exanet_mr_room(ef);
	if (ret)
		goto unlock;
	ret = exanet_odp_reg(ef, mr, req);
	if (ret)
		goto unlock;
	ret = exanet_mr_insert(ef, mr, &h);
	if (ret)
		exanet_odp_dereg(mr);
unlock:
	mutex_unlock(&ef->mr_lock);
	if (ret) {
		kfree(mr);
		return ret;
	}
	req->handle = h;
	req->rank = mr->ctx->rank;
	req->node_id = ef->edev->node_id;
	if (copy_to_user(uarg, req, sizeof(*req))) {
		exanet_dbg(ef->edev, "bad user pointer: registration %u dropped\n", h);
		exanet_dereg(ef, h);
		return -EFAULT;
	}
	return 0;
}

static int exanet_ioctl_reg_mr(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_reg_mr req;
	struct exanet_drv_ctx *ctx;
	struct exanet_drv_mr *mr;
	int ret;
	u32 h;

	if (copy_from_user(&req, uarg, sizeof(req))) {
		exanet_dbg(ef->edev, "bad user pointer\n");
		return -EFAULT;
	}
	if (req.access & ~EXANET_MR_FLAGS_MASK) {
		exanet_dbg(ef->edev, "unknown flags %#x\n", req.access);
		return -EINVAL;
	}
	if (req.access & EXANET_MR_ON_DEMAND)
		return exanet_ioctl_reg_odp(ef, uarg, &req);
	if (!req.len || req.len > EXA_UMEM_MAX_BYTES ||
	    req.addr + req.len < req.addr ||
	    req.addr + req.len > (1ULL << EXANET_RDMA_VA_BITS)) {
		exanet_dbg(ef->edev, "range %#llx+%#llx out of bounds\n",
			   req.addr, req.len);
		return -EINVAL;
	}
	ret = exanet_rank_get(ef);
	if (ret)
		return ret;
	ctx = ef->ctx;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return -ENOMEM;
	mr->access = req.access ?: EXANET_MR_ACCESS_MASK;

	mutex_lock(&ef->mr_lock);
	ret = exanet_mr_room(ef);
	if (ret)
		goto unlock;
	/* Always writable: the NI writes RDMA-read data and notifications. */
	ret = exa_umem_get(&mr->um, req.addr, req.len, true);
	if (ret) {
		/* exa_umem_get() says why ("module exa_core +p") */
		exanet_dbg(ef->edev, "range %#llx+%#llx not pinned (%d)\n",
			   req.addr, req.len, ret);
		goto unlock;
	}
	/* On-demand mappings of the range make room for the pinned pages. */
	exanet_odp_pin_begin(ctx, mr->um.start,
			     mr->um.start + (mr->um.npages << PAGE_SHIFT));
	ret = exa_iospace_map(&ctx->ios, &mr->um, IOMMU_READ | IOMMU_WRITE);
	exanet_odp_pin_end(ctx);
	if (ret) {
		exanet_dbg(ef->edev, "range %#llx+%#llx not mapped in rank %u (%d)\n",
			   req.addr, req.len, ctx->rank, ret);
		exa_umem_release(&mr->um);
		goto unlock;
	}
	ret = exanet_mr_insert(ef, mr, &h);
	if (ret) {
		exa_iospace_unmap(&ctx->ios, &mr->um);
		exa_umem_release(&mr->um);
		goto unlock;
	}
	atomic_long_add(mr->um.npages, &exanet_reg_pages);
unlock:
	mutex_unlock(&ef->mr_lock);
	if (ret) {
		kfree(mr);
		return ret;
	}

	req.handle = h;
	req.rank = ctx->rank;
	req.node_id = ef->edev->node_id;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		exanet_dbg(ef->edev, "bad user pointer: registration %u dropped\n", h);
		exanet_dereg(ef, h);
		return -EFAULT;
	}
	return 0;
}

long exanet_rdma_ioctl(struct exanet_drv_file *ef, unsigned int cmd,
		       void __user *uarg)
{
	u32 v;

	switch (cmd) {
	case EXANET_IOC_RDMA_INFO:
		return exanet_ioctl_rdma_info(ef, uarg);
	case EXANET_IOC_RDMA_ALLOC:
		return exanet_ioctl_rdma_alloc(ef, uarg);
	case EXANET_IOC_RDMA_FREE:
		if (get_user(v, (u32 __user *)uarg)) {
			exanet_dbg(ef->edev, "RDMA_FREE: bad user pointer\n");
			return -EFAULT;
		}
		return exanet_rpage_free(ef, v);
	case EXANET_IOC_REG_MR:
		return exanet_ioctl_reg_mr(ef, uarg);
	case EXANET_IOC_DEREG_MR:
		if (get_user(v, (u32 __user *)uarg)) {
			exanet_dbg(ef->edev, "DEREG_MR: bad user pointer\n");
			return -EFAULT;
		}
		return exanet_dereg(ef, v);
	default:
		return exanet_coll_ioctl(ef, cmd, uarg);
	}
}

/* ---------------------------------------------------------------- mmap */

/* edev->lock held. */
int exanet_rdma_mmap_check(struct exanet_drv_file *ef, u32 index,
			   unsigned long len)
{
	struct exanet_drv_dev *edev = ef->edev;

	lockdep_assert_held(&edev->lock);
	if (index >= edev->num_rpages) {
		exanet_dbg(edev, "no RDMA page %u\n", index);
		return -EINVAL;
	}
	if (edev->rpage_owner[index] != ef) {
		exanet_dbg(edev, "RDMA page %u is not this file's\n", index);
		return -EACCES;
	}
	if (len != EXANET_RDMA_PAGE_SIZE) {
		exanet_dbg(edev, "RDMA page %u with length %lu\n", index, len);
		return -EINVAL;
	}
	return 0;
}

/* edev->lock held. */
int exanet_rdma_fault_pfn(struct exanet_drv_file *ef, u32 index,
			  unsigned long page, unsigned long *pfn)
{
	struct exanet_drv_dev *edev = ef->edev;

	lockdep_assert_held(&edev->lock);
	if (index >= edev->num_rpages || edev->rpage_owner[index] != ef || page) {
		exanet_dbg(edev, "RDMA page %u offset %lu not mapped for this file\n",
			   index, page);
		return -EACCES;
	}
	*pfn = PHYS_PFN(edev->rdma_bar_phys) +
	       index * (EXANET_RDMA_PAGE_SIZE >> PAGE_SHIFT);
	return 0;
}

/* --------------------------------------------------------------- sysfs */

static ssize_t rdma_pages_in_use_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(edev->rpages_in_use));
}
static DEVICE_ATTR_RO(rdma_pages_in_use);

static ssize_t rdma_ranks_in_use_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(exanet_ranks_in_use));
}
static DEVICE_ATTR_RO(rdma_ranks_in_use);

static ssize_t rdma_registered_pages_show(struct device *dev,
					  struct device_attribute *attr,
					  char *buf)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&exanet_reg_pages));
}
static DEVICE_ATTR_RO(rdma_registered_pages);

static ssize_t rdma_registrations_show(struct device *dev,
				       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&exanet_nmr));
}
static DEVICE_ATTR_RO(rdma_registrations);

/* Channels ONGOING right now, summed over the allocated RDMA pages. */
static ssize_t rdma_active_channels_show(struct device *dev,
					 struct device_attribute *attr,
					 char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);
	u32 p, n = 0;

	mutex_lock(&edev->lock);
	if (edev->dead) {
		mutex_unlock(&edev->lock);
		exanet_dbg(edev, "device removed\n");
		return -ENODEV;
	}
	for (p = 0; p < edev->num_rpages; p++)
		if (edev->rpage_owner[p])
			n += exanet_rd(edev, EXANET_REG_RPAGE_BASE(p) +
					     EXANET_RPAGE_BUSY);
	mutex_unlock(&edev->lock);
	return sysfs_emit(buf, "%u\n", n);
}
static DEVICE_ATTR_RO(rdma_active_channels);

static const char * const exanet_rdma_counter_names[EXANET_RDMA_NUM_COUNTERS] = {
	[EXANET_RCNT_TX_WRITES]		= "tx_writes",
	[EXANET_RCNT_TX_READS]		= "tx_reads",
	[EXANET_RCNT_TX_DONE]		= "tx_done",
	[EXANET_RCNT_TX_ERRORS]		= "tx_errors",
	[EXANET_RCNT_TX_BLOCKS]		= "tx_blocks",
	[EXANET_RCNT_TX_BYTES]		= "tx_bytes",
	[EXANET_RCNT_TX_RETRANSMITS]	= "tx_retransmits",
	[EXANET_RCNT_TX_NACK_RETRY]	= "tx_nack_retry",
	[EXANET_RCNT_TX_TIMEOUTS]	= "tx_timeouts",
	[EXANET_RCNT_RX_BLOCKS]		= "rx_blocks",
	[EXANET_RCNT_RX_BYTES]		= "rx_bytes",
	[EXANET_RCNT_RX_DUPLICATES]	= "rx_duplicates",
	[EXANET_RCNT_RX_CORRUPT]	= "rx_corrupt",
	[EXANET_RCNT_RX_NACK_PDID]	= "rx_nack_pdid",
	[EXANET_RCNT_RX_NACK_CTX]	= "rx_nack_ctx",
	[EXANET_RCNT_RX_DMA_ERRORS]	= "rx_dma_errors",
	[EXANET_RCNT_RX_BAD]		= "rx_bad",
	[EXANET_RCNT_NOTIFICATIONS]	= "notifications",
	[EXANET_RCNT_READS_SERVED]	= "reads_served",
	[EXANET_RCNT_RING_FULL]		= "ring_full",
	[EXANET_RCNT_DESC_BUSY]		= "desc_busy",
	[EXANET_RCNT_FAULTS]		= "faults",
	[EXANET_RCNT_FAULT_QFULL]	= "fault_qfull",
	[EXANET_RCNT_FAULT_HOLDS]	= "fault_holds",
	[EXANET_RCNT_FAULT_REPLAYS]	= "fault_replays",
	[EXANET_RCNT_FAULT_FAILS]	= "fault_fails",
};

static ssize_t rdma_counters_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);
	ssize_t len = 0;
	unsigned int n;

	mutex_lock(&edev->lock);
	if (edev->dead || !edev->num_rpages) {
		exanet_dbg(edev, "%s\n", edev->dead ? "device removed" :
			   "the NI has no RDMA engine");
		mutex_unlock(&edev->lock);
		return -ENODEV;
	}
	for (n = 0; n < EXANET_RDMA_NUM_COUNTERS; n++)
		len += sysfs_emit_at(buf, len, "%s %llu\n",
				     exanet_rdma_counter_names[n],
				     lo_hi_readq(edev->ctrl +
						 EXANET_REG_RDMA_COUNTER(n)));
	mutex_unlock(&edev->lock);
	return len;
}
static DEVICE_ATTR_RO(rdma_counters);

static struct attribute *exanet_rdma_attrs[] = {
	&dev_attr_rdma_pages_in_use.attr,
	&dev_attr_rdma_ranks_in_use.attr,
	&dev_attr_rdma_registered_pages.attr,
	&dev_attr_rdma_registrations.attr,
	&dev_attr_rdma_active_channels.attr,
	&dev_attr_rdma_counters.attr,
	NULL,
};

const struct attribute_group exanet_rdma_group = {
	.attrs = exanet_rdma_attrs,
};
