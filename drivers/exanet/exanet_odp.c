// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: RDMA without page pinning (on-demand paging).
 *
 * An on-demand registration (EXANET_MR_ON_DEMAND, or the implicit one that
 * covers the whole address space) pins nothing and charges nothing to
 * RLIMIT_MEMLOCK.  Its pages are mapped in the rank's IOMMU domain (IOVA ==
 * user VA) only when the NI faults on them:
 *
 *  1. A DMA of a rank in on-demand mode (EXANET_CTX_EN_ODP) fails
 *     translation: the NI writes a struct exanet_rdma_fault into the fault
 *     queue (host memory, set up at probe), raises the fault interrupt and
 *     holds the block (source read) or answers it "retry later"
 *     (destination / notification write at the target).
 *  2. The interrupt handler queues fault_work.  The worker (process
 *     context) finds the registration of the rank's owner that covers the
 *     address, faults the pages in through the owner's mm with
 *     hmm_range_fault() under mmap_read_lock (mmget_not_zero() first: a
 *     dying process gets an error), honouring the VMA permissions (a write
 *     to read-only memory, PROT_NONE or an unmapped address fails), and
 *     maps them under the context's notifier lock after
 *     mmu_interval_read_retry() said that no invalidation ran meanwhile.
 *  3. It writes FQ_FAIL for refused faults (the transfer ends in
 *     EXANET_RDMA_E_LOCAL_FAULT / _REMOTE_FAULT), then moves FQ_HEAD past
 *     the entries it handled: the NI replays the blocks that waited for
 *     them through its reliable transport (and only those: a block whose
 *     fault is still queued stays held, so a burst of faults does not
 *     turn into a burst of replays that fault again).
 *
 * Invalidation: every on-demand registration has an mmu_interval_notifier.
 * Its invalidate callback, called by the kernel before it frees, migrates,
 * swaps out or copies-on-write pages of the range, unmaps them from the
 * IOMMU domain and flushes the IOTLB before returning, so the NI can no
 * longer reach them: its next access faults again and gets the new page.
 *
 * Locking: ef->mr_lock (the registrations; held by the worker while it
 * resolves a fault, so deregistration and close wait for it) ->
 * mmap_lock -> ctx->odp.lock (the notifier lock: the on-demand pages and
 * their IOMMU mappings; taken by the invalidate callbacks, so nothing
 * under it may sleep in reclaim: GFP_NOWAIT, iommu_map_atomic()).  The
 * worker finds the owner under exanet_ctx_lock, marks it in use
 * (odp.fault_ef; the release waits for it) and drops the lock before it
 * takes ef->mr_lock (mr_lock -> mmap_lock -> edev->lock -> exanet_ctx_lock
 * elsewhere), and takes edev->lock alone for the fault queue registers.
 *
 * Lifetime: close takes mr_lock (waits for the worker), removes the
 * registrations, clears the rank's owner, then waits until the worker no
 * longer uses the file (odp.fault_ef); removing a registration removes its
 * notifiers (waits for running invalidations), unmaps; device removal
 * resets the NI (no more fault entries), frees the vectors, then cancels
 * the worker before freeing the queue.  Pages mapped on demand are never
 * pinned: an invalidation is the only way the kernel takes them back, and
 * it unmaps them first.
 */

#include <linux/hmm.h>
#include <linux/iommu.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "exanet_drv.h"

static unsigned int fault_queue_entries = 4096;
module_param(fault_queue_entries, uint, 0444);
MODULE_PARM_DESC(fault_queue_entries,
		 "On-demand paging fault queue entries, power of two 16..65536 (default 4096)");

/*
 * Pages faulted in per fault entry: the access (at most one block) and
 * the rest of its transfer as far as the NI's hint (ahead) says, in the
 * same VMA and registration, up to this many pages (4 MiB: transfers are
 * sequential, the next blocks would fault right after; the NI holds the
 * blocks that follow on the pending fault instead of reporting each).
 * At least a huge-page frame plus a block: the range may start at the
 * huge page of the access.
 */
#define EXANET_ODP_MAX_PAGES	1024
/* Small pages per transparent huge page (one IOMMU superpage). */
#define EXANET_ODP_HUGE_PAGES	(1UL << (PMD_SHIFT - PAGE_SHIFT))
/* Fault entries the worker copies per round. */
#define EXANET_ODP_BATCH	32

/* ------------------------------------------------------------ mapping */

/*
 * Release of ef, its registrations gone and the rank's owner cleared (no
 * fault finds ef any more): wait until the fault worker no longer uses ef
 * (it found ef under exanet_ctx_lock and may not even have taken mr_lock
 * yet; it will find no registration there).
 */
void exanet_odp_file_quiesce(struct exanet_drv_ctx *ctx, struct exanet_drv_file *ef)
{
	wait_event(ctx->odp.fault_wq, READ_ONCE(ctx->odp.fault_ef) != ef);
}

/* odp->lock held: unmap the on-demand pages of [start, end), flush. */
static unsigned long exanet_odp_unmap(struct exanet_drv_ctx *ctx,
				      unsigned long start, unsigned long end)
{
	struct exanet_drv_odp_space *odp = &ctx->odp;
	struct iommu_iotlb_gather gather;
	unsigned long idx, n = 0;
	void *entry;

	lockdep_assert_held(&odp->lock);
	if (start >= end || !odp->mapped)
		return 0;
	iommu_iotlb_gather_init(&gather);
	xa_for_each_range(&odp->pages, idx, entry, start >> PAGE_SHIFT,
			  (end - 1) >> PAGE_SHIFT) {
		iommu_unmap_fast(ctx->ios.domain, idx << PAGE_SHIFT, PAGE_SIZE,
				 &gather);
		xa_erase(&odp->pages, idx);
		odp->mapped--;
		n++;
	}
	/* A huge page touched by the range goes whole: it faults again. */
	xa_for_each_range(&odp->thp, idx, entry, start >> PMD_SHIFT,
			  (end - 1) >> PMD_SHIFT) {
		iommu_unmap_fast(ctx->ios.domain, idx << PMD_SHIFT, PMD_SIZE,
				 &gather);
		xa_erase(&odp->thp, idx);
		odp->mapped -= EXANET_ODP_HUGE_PAGES;
		odp->thp_mapped--;
		n += EXANET_ODP_HUGE_PAGES;
	}
	if (n) {
		iommu_iotlb_sync(ctx->ios.domain, &gather);
		exanet_ctx_xlat_fence(ctx);
	}
	return n;
}

/* The rank's owner closed (nothing DMAs through it): drop every mapping. */
void exanet_odp_ctx_release(struct exanet_drv_ctx *ctx)
{
	mutex_lock(&ctx->odp.lock);
	exanet_odp_unmap(ctx, 0, ULONG_MAX & PAGE_MASK);
	WARN_ON(ctx->odp.mapped);
	xa_destroy(&ctx->odp.pages);
	xa_destroy(&ctx->odp.thp);
	mutex_unlock(&ctx->odp.lock);
}

/*
 * A pinned registration of [start, end) is about to be mapped in the same
 * domain: on-demand mappings there go, and none come back until
 * exanet_odp_pin_end() (faults meanwhile are simply replayed).
 */
void exanet_odp_pin_begin(struct exanet_drv_ctx *ctx, unsigned long start,
			  unsigned long end)
{
	mutex_lock(&ctx->odp.lock);
	ctx->odp.pinning++;
	exanet_odp_unmap(ctx, start, end);
	mutex_unlock(&ctx->odp.lock);
}

void exanet_odp_pin_end(struct exanet_drv_ctx *ctx)
{
	mutex_lock(&ctx->odp.lock);
	ctx->odp.pinning--;
	mutex_unlock(&ctx->odp.lock);
}

/*
 * odp->lock held, pfns fresh: may [va, va + PMD_SIZE) be mapped as one
 * IOMMU superpage?  Only when the process maps it with one transparent
 * huge page (hmm says so), with the same rights throughout, and nothing
 * else of this domain lies there: the IOMMU driver would drop the small
 * page tables under a superpage, so neither on-demand small pages nor a
 * pinned registration's pages may be in the range.
 */
static bool exanet_odp_huge_ok(struct exanet_drv_ctx *ctx, unsigned long va,
			       const unsigned long *pfns, unsigned long n)
{
	unsigned long idx = va >> PAGE_SHIFT, first = idx;
	unsigned long last = idx + EXANET_ODP_HUGE_PAGES - 1;
	unsigned long i;

	if (!IS_ALIGNED(va, PMD_SIZE) || n < EXANET_ODP_HUGE_PAGES ||
	    hmm_pfn_to_map_order(pfns[0]) < PMD_SHIFT - PAGE_SHIFT ||
	    !IS_ALIGNED(pfns[0] & ~HMM_PFN_FLAGS, EXANET_ODP_HUGE_PAGES))
		return false;
	/* pfn and flags in one word: the same flags, consecutive pfns */
	for (i = 1; i < EXANET_ODP_HUGE_PAGES; i++)
		if (pfns[i] != pfns[0] + i)
			return false;
	if (xa_find(&ctx->odp.pages, &first, last, XA_PRESENT))
		return false;
	first = idx;
	return !xa_find(&ctx->ios.pages, &first, last, XA_PRESENT);
}

/*
 * odp->lock held: [va, va + PMD_SIZE) is covered by a huge mapping.  True
 * when it grants prot; otherwise it is unmapped (the page became writable:
 * it is mapped again below).
 */
static bool exanet_odp_huge_covers(struct exanet_drv_ctx *ctx, unsigned long va,
				   int prot)
{
	void *old = xa_load(&ctx->odp.thp, va >> PMD_SHIFT);

	if (!old)
		return false;
	if ((xa_to_value(old) & prot) == prot)
		return true;
	exanet_odp_unmap(ctx, va & PMD_MASK, (va & PMD_MASK) + PMD_SIZE);
	return false;
}

/*
 * odp->lock held, pfns fresh (mmu_interval_read_retry() said so): map the
 * pages of [start, start + n pages).  A page mapped by a pinned
 * registration stays as it is; an on-demand page mapped read-only is
 * remapped when it has become writable.  A transparent huge page of the
 * process is mapped whole, with one IOMMU superpage: one map call and one
 * IOTLB entry instead of 512 (first-touch transfers fault huge pages in).
 */
static int exanet_odp_map(struct exanet_drv_ctx *ctx, unsigned long start,
			  const unsigned long *pfns, unsigned long n)
{
	struct exanet_drv_odp_space *odp = &ctx->odp;
	struct iommu_domain *dom = ctx->ios.domain;
	struct page *page;
	unsigned long i, step;
	int ret;

	lockdep_assert_held(&odp->lock);
	if (odp->pinning)
		return 0;	/* replayed; faults again after the pinning */
	for (i = 0; i < n; i += step) {
		unsigned long va = start + (i << PAGE_SHIFT);
		unsigned long idx = va >> PAGE_SHIFT;
		int prot = IOMMU_READ |
			   ((pfns[i] & HMM_PFN_WRITE) ? IOMMU_WRITE : 0);
		void *old;

		step = 1;
		if (exanet_odp_huge_covers(ctx, va, prot)) {
			/* to the end of the huge page */
			step = EXANET_ODP_HUGE_PAGES -
			       (idx & (EXANET_ODP_HUGE_PAGES - 1));
			continue;
		}
		if (exanet_odp_huge_ok(ctx, va, pfns + i, n - i)) {
			ret = xa_err(xa_store(&odp->thp, va >> PMD_SHIFT,
					      xa_mk_value(prot),
					      GFP_NOWAIT | __GFP_NOWARN));
			if (ret)
				return ret;
			page = hmm_pfn_to_page(pfns[i]);
			ret = iommu_map_atomic(dom, va, page_to_phys(page),
					       PMD_SIZE, prot);
			if (ret) {
				xa_erase(&odp->thp, va >> PMD_SHIFT);
				return ret;
			}
			if (prot & IOMMU_WRITE)
				set_page_dirty(page);	/* the whole folio */
			odp->mapped += EXANET_ODP_HUGE_PAGES;
			odp->thp_mapped++;
			step = EXANET_ODP_HUGE_PAGES;
			continue;
		}
		old = xa_load(&odp->pages, idx);
		if (old) {
			if ((xa_to_value(old) & prot) == prot)
				continue;
			/* Became writable (COW broken): map it again. */
			iommu_unmap(dom, va, PAGE_SIZE);
			exanet_ctx_xlat_fence(ctx);
			xa_erase(&odp->pages, idx);
			odp->mapped--;
		} else if (iommu_iova_to_phys(dom, va)) {
			continue;	/* a pinned registration's page */
		}
		ret = xa_err(xa_store(&odp->pages, idx, xa_mk_value(prot),
				      GFP_NOWAIT | __GFP_NOWARN));
		if (ret)
			return ret;
		page = hmm_pfn_to_page(pfns[i]);
		ret = iommu_map_atomic(dom, va, page_to_phys(page), PAGE_SIZE,
				       prot);
		if (ret) {
			xa_erase(&odp->pages, idx);
			return ret;
		}
		/*
		 * The NI's writes never dirty the PTE: count them now, or
		 * reclaim could drop a lazily freed (MADV_FREE) or clean
		 * swap-cached page the NI wrote.  The page is stable here
		 * (no invalidation ran since the fault, odp->lock held).
		 */
		if (prot & IOMMU_WRITE)
			set_page_dirty(page);
		odp->mapped++;
	}
	return 0;
}

/* ------------------------------------------------------- registration */

static bool exanet_odp_invalidate(struct mmu_interval_notifier *mni,
				  const struct mmu_notifier_range *range,
				  unsigned long cur_seq)
{
	struct exanet_drv_mr *mr = container_of(mni, struct exanet_drv_mr, notifier);
	struct exanet_drv_odp_space *odp = &mr->ctx->odp;
	unsigned long n;

	if (mmu_notifier_range_blockable(range))
		mutex_lock(&odp->lock);
	else if (!mutex_trylock(&odp->lock))
		return false;
	mmu_interval_set_seq(mni, cur_seq);
	n = exanet_odp_unmap(mr->ctx, max(range->start, mr->start),
			     min(range->end, mr->end));
	mutex_unlock(&odp->lock);
	if (n) {
		atomic64_inc(&odp->invalidations);
		atomic64_add(n, &odp->unmapped);
	}
	return true;
}

static const struct mmu_interval_notifier_ops exanet_odp_mni_ops = {
	.invalidate = exanet_odp_invalidate,
};

/* Before mr_lock (lock order): the rank reports faults from now on. */
int exanet_odp_ctx_enable(struct exanet_drv_file *ef)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct exanet_drv_ctx *ctx = ef->ctx;
	int ret = 0;

	if (READ_ONCE(edev->dead)) {
		exanet_dbg(edev, "device removed\n");
		return -ENODEV;
	}
	if (!READ_ONCE(edev->fq_cpu)) {
		exanet_dbg(edev, "on demand needs the NI's fault queue (interrupts)\n");
		return -EOPNOTSUPP;
	}
	mutex_lock(&edev->lock);
	mutex_lock(&exanet_ctx_lock);
	if (edev->dead || ctx->removing || ctx->owner != ef)
		ret = -ENODEV;
	else
		exanet_wr(edev, EXANET_REG_CTX_BASE(ctx->rank) + EXANET_CTX_ENABLE,
			  EXANET_CTX_EN_ON | EXANET_CTX_EN_ODP);
	mutex_unlock(&exanet_ctx_lock);
	mutex_unlock(&edev->lock);
	if (ret)
		exanet_dbg(edev, "rank unusable (device or rank removed)\n");
	return ret;
}

/*
 * EXANET_IOC_REG_MR with EXANET_MR_ON_DEMAND, mr_lock held, the file's
 * rank in on-demand mode (exanet_odp_ctx_enable()).  Fills mr (ctx and
 * access set by the caller).
 */
int exanet_odp_reg(struct exanet_drv_file *ef, struct exanet_drv_mr *mr,
		   struct exanet_reg_mr *req)
{
	struct exanet_drv_dev *edev = ef->edev;
	unsigned long limit = min_t(unsigned long, TASK_SIZE_MAX,
				    1UL << EXANET_RDMA_VA_BITS) & PAGE_MASK;
	int ret;

	if (!req->addr && !req->len) {
		mr->start = 0;		/* implicit: the whole address space */
		mr->end = limit;
	} else {
		if (!req->len || req->addr + req->len < req->addr ||
		    req->addr + req->len > limit) {
			exanet_dbg(edev, "bad range %#llx+%#llx\n",
				   req->addr, req->len);
			return -EINVAL;
		}
		mr->start = req->addr & PAGE_MASK;
		mr->end = PAGE_ALIGN(req->addr + req->len);
	}
	lockdep_assert_held(&ef->mr_lock);
	mr->odp = true;
	/* current->mm == ef->mm (checked by the ioctl entry): alive. */
	ret = mmu_interval_notifier_insert(&mr->notifier, current->mm,
					   mr->start, mr->end - mr->start,
					   &exanet_odp_mni_ops);
	if (ret) {
		exanet_dbg(edev, "no interval notifier (%d)\n", ret);
		mr->odp = false;
	}
	return ret;
}

/* Deregistration (no fault worker uses mr any more): unmap, forget. */
void exanet_odp_dereg(struct exanet_drv_mr *mr)
{
	struct exanet_drv_ctx *ctx = mr->ctx;

	if (!mr->odp)
		return;
	/* Waits for invalidate callbacks that still run. */
	mmu_interval_notifier_remove(&mr->notifier);
	mutex_lock(&ctx->odp.lock);
	exanet_odp_unmap(ctx, mr->start, mr->end);
	mutex_unlock(&ctx->odp.lock);
	mr->odp = false;
}

/* ------------------------------------------------------- fault worker */

/*
 * Every page of [start, end) mapped on demand with prot (at least): an
 * earlier fault mapped it, typically by prefetching (the NI reports every
 * block of a window that hit the same unmapped range).
 */
static bool exanet_odp_mapped(struct exanet_drv_ctx *ctx, unsigned long start,
			      unsigned long end, int prot)
{
	struct exanet_drv_odp_space *odp = &ctx->odp;
	unsigned long idx;
	bool ret = true;
	void *e;

	mutex_lock(&odp->lock);
	for (idx = start >> PAGE_SHIFT; ret && idx < end >> PAGE_SHIFT; idx++) {
		e = xa_load(&odp->thp, idx >> (PMD_SHIFT - PAGE_SHIFT));
		if (!e)
			e = xa_load(&odp->pages, idx);
		ret = e && (xa_to_value(e) & prot) == prot;
	}
	mutex_unlock(&odp->lock);
	return ret;
}

/*
 * Fault in [va, va + len) of mr's process, and what follows up to hint_end
 * (prefetch), and map it.  mr_lock held (mr stays).  0, or -EFAULT (not
 * mapped / PROT_NONE / not a user page),
 * -EPERM (write to read-only memory), -ESRCH (the process is exiting),
 * -EBUSY (invalidations kept racing with us), -ENOMEM.
 */
static int exanet_odp_resolve(struct exanet_drv_mr *mr, u64 va, u32 len,
			      u64 hint_end, bool write)
{
	unsigned long *pfns;
	unsigned long start = va & PAGE_MASK, end = PAGE_ALIGN(va + len);
	unsigned long need = end, base = start, lo, hi;
	struct mm_struct *mm = mr->notifier.mm;
	struct vm_area_struct *vma;
	struct hmm_range range = {
		.notifier = &mr->notifier,
		.start = start,
		.end = end,
		.default_flags = HMM_PFN_REQ_FAULT |
				 (write ? HMM_PFN_REQ_WRITE : 0),
	};
	unsigned long timeout;
	int ret;

	if (end - start > PMD_SIZE)
		return -EINVAL;
	if (exanet_odp_mapped(mr->ctx, start, end,
			      IOMMU_READ | (write ? IOMMU_WRITE : 0)))
		return 0;
	pfns = kvmalloc_array(EXANET_ODP_MAX_PAGES, sizeof(*pfns), GFP_KERNEL);
	if (!pfns)
		return -ENOMEM;
	range.hmm_pfns = pfns;
	if (!mmget_not_zero(mm)) {
		kvfree(pfns);
		return -ESRCH;
	}
	timeout = jiffies + msecs_to_jiffies(HMM_RANGE_DEFAULT_TIMEOUT);
	for (;;) {
		if (time_after(jiffies, timeout)) {
			ret = -EBUSY;
			break;
		}
		range.notifier_seq = mmu_interval_read_begin(&mr->notifier);
		mmap_read_lock(mm);
		/*
		 * Prefetch within the VMA of the access, if it has one, as far
		 * as the NI's hint says, and stop on a huge-page frame
		 * boundary, so that the next fault starts on one and the
		 * process's transparent huge pages are mapped whole
		 * (exanet_odp_map()).
		 */
		vma = vma_lookup(mm, start);
		lo = vma ? max(vma->vm_start, mr->start) : start;
		if (base < lo)
			base = start;
		range.start = base;
		range.end = need;
		if (vma && vma->vm_end >= need) {
			hi = min(vma->vm_end, mr->end);
			end = min3(hi, (unsigned long)PAGE_ALIGN(hint_end),
				   base + (EXANET_ODP_MAX_PAGES << PAGE_SHIFT));
			if (end < hi && ALIGN_DOWN(end, PMD_SIZE) >= need)
				end = ALIGN_DOWN(end, PMD_SIZE);
			range.end = max(need, end);
		}
		ret = hmm_range_fault(&range);
		mmap_read_unlock(mm);
		if (ret == -EBUSY)
			continue;
		if (ret)
			break;
		/*
		 * The access is in a huge page that begins before it: again
		 * from the page's first small page (present: nothing new is
		 * faulted in), to map it whole.
		 */
		if (base == start && (start & PMD_MASK) >= lo &&
		    !IS_ALIGNED(start, PMD_SIZE) &&
		    hmm_pfn_to_map_order(pfns[0]) >= PMD_SHIFT - PAGE_SHIFT) {
			base = start & PMD_MASK;
			continue;
		}
		mutex_lock(&mr->ctx->odp.lock);
		if (mmu_interval_read_retry(&mr->notifier, range.notifier_seq)) {
			mutex_unlock(&mr->ctx->odp.lock);
			continue;
		}
		ret = exanet_odp_map(mr->ctx, range.start, pfns,
				     (range.end - range.start) >> PAGE_SHIFT);
		mutex_unlock(&mr->ctx->odp.lock);
		break;
	}
	mmput(mm);
	kvfree(pfns);
	return ret;
}

/* The access right a fault needs: who reads or writes the memory. */
static u32 exanet_odp_need(const struct exanet_rdma_fault *f)
{
	bool local = f->op != EXANET_RDMA_OP_READ;	/* we initiated a write */

	switch (f->kind) {
	case EXANET_FAULT_K_SRC:	/* our write's source, or a peer reads */
		return local ? EXANET_MR_ACCESS_MASK : EXANET_MR_REMOTE_READ;
	case EXANET_FAULT_K_DST:	/* a peer writes, or our read lands */
	case EXANET_FAULT_K_NOTIFY:
		return local ? EXANET_MR_REMOTE_WRITE : EXANET_MR_LOCAL_WRITE;
	default:			/* our completion record */
		return EXANET_MR_LOCAL_WRITE;
	}
}

/* What a refused fault entry met, for the debug line. */
static const char *exanet_odp_why(int ret, bool found)
{
	if (!found)
		return "no on-demand registration with the access right";
	switch (ret) {
	case -EINVAL:
		return "wider than a huge page";
	case -EFAULT:
		return "not mapped, PROT_NONE or not user memory";
	case -EPERM:
		return "write to read-only memory";
	case -ESRCH:
		return "the process is exiting";
	case -EBUSY:
		return "invalidations kept racing";
	case -ENOMEM:
		return "no memory";
	default:
		return "IOMMU map failed";
	}
}

/* The on-demand registration of ef covering the access, mr_lock held. */
static struct exanet_drv_mr *exanet_odp_find(struct exanet_drv_file *ef,
					     u64 va, u32 len, u32 need)
{
	struct exanet_drv_mr *mr;
	unsigned long h;

	lockdep_assert_held(&ef->mr_lock);
	xa_for_each(&ef->mrs, h, mr)
		if (mr->odp && va >= mr->start && va + len <= mr->end &&
		    (mr->access & need))
			return mr;
	return NULL;
}

/* One fault entry: 0 = resolved (replay), else refused (error). */
static int exanet_odp_fault(struct exanet_drv_dev *edev,
			    const struct exanet_rdma_fault *f)
{
	u64 va = f->va;
	u32 len = f->len;
	bool write = f->access == EXANET_FAULT_WRITE;
	struct exanet_drv_file *ef;
	struct exanet_drv_ctx *ctx;
	struct exanet_drv_mr *mr;
	int ret;

	if (f->rank >= EXANET_RDMA_NUM_RANKS || !len ||
	    len > EXANET_RDMA_BLOCK_SIZE || va >= (1ULL << EXANET_RDMA_VA_BITS) ||
	    va + len > (1ULL << EXANET_RDMA_VA_BITS)) {
		exanet_dbg(edev, "malformed entry (rank %u va %#llx len %u)\n",
			   f->rank, va, len);
		return -EINVAL;
	}
	ctx = &exanet_ctxs[f->rank];
	mutex_lock(&exanet_ctx_lock);
	ef = ctx->owner;
	if (!ef || ef->edev != edev) {
		mutex_unlock(&exanet_ctx_lock);
		exanet_dbg(edev, "rank %u has no owner\n", f->rank);
		return -ENOENT;
	}
	/*
	 * mr_lock is never taken under exanet_ctx_lock (it nests outside
	 * mmap_lock, which nests outside edev->lock -> exanet_ctx_lock):
	 * mark ef in use instead, its release waits for us
	 * (exanet_odp_file_quiesce()).  A release that got mr_lock first
	 * leaves no registration to find.
	 */
	ctx->odp.fault_ef = ef;
	mutex_unlock(&exanet_ctx_lock);
	mutex_lock(&ef->mr_lock);
	mr = exanet_odp_find(ef, va, len, exanet_odp_need(f));
	if (!mr)
		ret = -EFAULT;
	else
		ret = exanet_odp_resolve(mr, va, len,
					 va + len + (u64)f->ahead * EXANET_RDMA_BLOCK_SIZE,
					 write);
	mutex_unlock(&ef->mr_lock);
	mutex_lock(&exanet_ctx_lock);
	ctx->odp.fault_ef = NULL;
	mutex_unlock(&exanet_ctx_lock);
	wake_up_all(&ctx->odp.fault_wq);
	if (ret) {
		atomic64_inc(&ctx->odp.refused);
		exanet_dbg(edev, "rank %u %s va %#llx len %u kind %u refused (%d: %s)\n",
			   f->rank, write ? "write" : "read", va, len, f->kind, ret,
			   exanet_odp_why(ret, mr));
	} else {
		atomic64_inc(&ctx->odp.faults);
	}
	return ret;
}

void exanet_odp_work(struct work_struct *work)
{
	struct exanet_drv_dev *edev = container_of(work, struct exanet_drv_dev,
					       fault_work);
	struct exanet_rdma_fault batch[EXANET_ODP_BATCH];
	u32 failed[EXANET_ODP_BATCH];
	u32 head, tail, n, i, nfail, resume;

	for (;;) {
		mutex_lock(&edev->lock);
		if (edev->dead) {
			mutex_unlock(&edev->lock);
			return;
		}
		head = edev->fq_head;
		tail = exanet_rd(edev, EXANET_REG_RDMA_FQ_TAIL);
		n = min_t(u32, tail - head, EXANET_ODP_BATCH);
		if (tail - head > edev->fq_size) {
			dev_warn_ratelimited(&edev->dev, "fault queue: bad tail %u (head %u)\n",
					     tail, head);
			n = 0;
		}
		for (i = 0; i < n; i++)
			batch[i] = edev->fq_cpu[(head + i) & (edev->fq_size - 1)];
		if (!n)
			/* Fires at once if an entry came after our read. */
			exanet_wr(edev, EXANET_REG_RDMA_FQ_IRQ, EXANET_IRQ_ARM(0));
		mutex_unlock(&edev->lock);
		if (!n)
			return;

		nfail = 0;
		resume = 0;
		for (i = 0; i < n; i++) {
			if (exanet_odp_fault(edev, &batch[i]))
				failed[nfail++] = batch[i].id;
			else
				resume |= BIT(batch[i].rank);
		}
		atomic64_add(n, &edev->fq_entries);
		atomic64_add(nfail, &edev->fq_refused);

		mutex_lock(&edev->lock);
		if (!edev->dead) {
			/* Failures first: a resume would replay them. */
			for (i = 0; i < nfail; i++)
				exanet_wr(edev, EXANET_REG_RDMA_FQ_FAIL, failed[i]);
			/* Consumed: the NI replays what waited for them. */
			edev->fq_head = head + n;
			exanet_wr(edev, EXANET_REG_RDMA_FQ_HEAD, edev->fq_head);
		}
		mutex_unlock(&edev->lock);
		for (i = 0; i < EXANET_RDMA_NUM_RANKS; i++)
			if (resume & BIT(i))
				atomic64_inc(&exanet_ctxs[i].odp.replays);
		cond_resched();
	}
}

/* ----------------------------------------------------- probe / remove */

/* After exanet_irq_probe(): the fault queue, if the NI has interrupts. */
void exanet_odp_probe(struct exanet_drv_dev *edev)
{
	struct device *dma = &edev->pdev->dev;
	u32 n = fault_queue_entries;

	edev->fq_cpu = NULL;
	if (!edev->nvec || !edev->num_rpages)
		return;
	if (!is_power_of_2(n) || n < EXANET_RDMA_FQ_MIN || n > EXANET_RDMA_FQ_MAX)
		n = 4096;
	edev->fq_cpu = dma_alloc_coherent(dma, n * sizeof(*edev->fq_cpu),
					  &edev->fq_dma, GFP_KERNEL);
	if (!edev->fq_cpu)
		return;		/* no on-demand paging (the allocator said why) */
	edev->fq_size = n;
	edev->fq_head = 0;
	exanet_wr(edev, EXANET_REG_RDMA_FQ_BASE_LO, lower_32_bits(edev->fq_dma));
	exanet_wr(edev, EXANET_REG_RDMA_FQ_BASE_HI, upper_32_bits(edev->fq_dma));
	exanet_wr(edev, EXANET_REG_RDMA_FQ_SIZE, n);
	if (exanet_rd(edev, EXANET_REG_RDMA_FQ_SIZE) != n) {
		dev_info(&edev->dev, "NI without a fault queue: no on-demand paging\n");
		dma_free_coherent(dma, n * sizeof(*edev->fq_cpu), edev->fq_cpu,
				  edev->fq_dma);
		edev->fq_cpu = NULL;
		return;
	}
	exanet_wr(edev, EXANET_REG_RDMA_FQ_IRQ, EXANET_IRQ_ARM(0));
	dev_info(&edev->dev, "on-demand paging: fault queue of %u entries\n", n);
}

/*
 * Removal, after the NI reset (no more entries) and exanet_irq_remove()
 * (no more interrupts), or a failed probe.
 */
void exanet_odp_remove(struct exanet_drv_dev *edev)
{
	cancel_work_sync(&edev->fault_work);
	if (!edev->fq_cpu)
		return;
	dma_free_coherent(&edev->pdev->dev, edev->fq_size * sizeof(*edev->fq_cpu),
			  edev->fq_cpu, edev->fq_dma);
	WRITE_ONCE(edev->fq_cpu, NULL);
}

/* --------------------------------------------------------------- sysfs */

/* One line per rank of this NI: faults, replays, invalidations, pages. */
static ssize_t rdma_odp_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);
	ssize_t len;
	u32 r;

	len = sysfs_emit(buf, "fault_queue %u entries %lld refused %lld\n",
			 READ_ONCE(edev->fq_cpu) ? edev->fq_size : 0,
			 atomic64_read(&edev->fq_entries),
			 atomic64_read(&edev->fq_refused));
	mutex_lock(&exanet_ctx_lock);
	for (r = 0; r < EXANET_RDMA_NUM_RANKS; r++) {
		struct exanet_drv_ctx *ctx = &exanet_ctxs[r];

		if (!ctx->pdev)
			continue;
		len += sysfs_emit_at(buf, len,
				     "rank %u faults %lld refused %lld replays %lld invalidations %lld unmapped %lld mapped %lu huge %lu\n",
				     r, atomic64_read(&ctx->odp.faults),
				     atomic64_read(&ctx->odp.refused),
				     atomic64_read(&ctx->odp.replays),
				     atomic64_read(&ctx->odp.invalidations),
				     atomic64_read(&ctx->odp.unmapped),
				     READ_ONCE(ctx->odp.mapped),
				     READ_ONCE(ctx->odp.thp_mapped));
	}
	mutex_unlock(&exanet_ctx_lock);
	return len;
}
static DEVICE_ATTR_RO(rdma_odp);

static struct attribute *exanet_odp_attrs[] = {
	&dev_attr_rdma_odp.attr,
	NULL,
};

const struct attribute_group exanet_odp_group = {
	.attrs = exanet_odp_attrs,
};
