/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Generic user memory registration helpers shared by the fabric drivers
 * (exanet.ko, extoll.ko), exported by exa_core.ko in the EXA_CORE symbol
 * namespace:
 *
 *  - exa_umem: pin a user range for DMA (FOLL_LONGTERM | FOLL_WRITE),
 *    accounted against RLIMIT_MEMLOCK through mm->pinned_vm, unpinned and
 *    unaccounted on release (from any context that may sleep, also after
 *    the owner's mm is gone).
 *  - exa_iospace: an unmanaged IOMMU domain attached to one device that is
 *    alone in its IOMMU group, in which pinned pages are mapped at their
 *    own user virtual address (IOVA == user VA).  Pages are reference
 *    counted, so registrations may overlap or share a page.
 *
 * Ordering rule for callers: the device must not be able to DMA into a
 * range once it is given back, so release is always
 *   quiesce device (if needed) -> exa_iospace_unmap() -> exa_umem_release().
 * exa_iospace_unmap() returns only after the IOTLB has been flushed.
 */
#ifndef _EXA_UMEM_H
#define _EXA_UMEM_H

#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/xarray.h>

struct device;
struct iommu_domain;
struct mm_struct;
struct page;

/* Largest registration, bytes (bounds the page array allocation). */
#define EXA_UMEM_MAX_BYTES	(1ULL << 32)

struct exa_umem {
	struct mm_struct *mm;		/* mmgrab()ed owner, for pinned_vm */
	unsigned long addr;		/* user address as given */
	size_t len;			/* bytes as given */
	unsigned long start;		/* addr rounded down to a page */
	unsigned long npages;		/* pinned pages */
	struct page **pages;
	bool writable;
};

int exa_umem_get(struct exa_umem *um, unsigned long addr, size_t len,
		 bool writable);
void exa_umem_release(struct exa_umem *um);

struct exa_iospace {
	struct device *dev;
	struct iommu_domain *domain;
	struct mutex lock;		/* protects pages and the domain */
	struct xarray pages;		/* user page number -> struct exa_iopage */
	unsigned long mapped;		/* pages currently mapped */
	/*
	 * Optional: called after the IOTLB flush of an unmap, for a device
	 * that caches translations besides the IOMMU (ExaNet's direct
	 * delivery): it drops them before the pages may be reused.
	 */
	void (*unmapped)(struct exa_iospace *ios);
};

int exa_iospace_init(struct exa_iospace *ios, struct device *dev);
void exa_iospace_destroy(struct exa_iospace *ios);
int exa_iospace_map(struct exa_iospace *ios, struct exa_umem *um, int prot);
void exa_iospace_unmap(struct exa_iospace *ios, struct exa_umem *um);

#endif /* _EXA_UMEM_H */
