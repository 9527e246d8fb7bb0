/* SPDX-License-Identifier: GPL-2.0 */
/*
 * EXTOLL NIC driver: internal definitions shared by the core (PCI, class,
 * character devices, VPIDs, ATU), the RMA2 part and the VELO2 part.
 */
#ifndef _EXTOLL_DRV_H
#define _EXTOLL_DRV_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/refcount.h>
#include <linux/scatterlist.h>
#include <linux/types.h>
#include <linux/uaccess.h>

#include <extoll.h>
#include <extoll_hw.h>

#include "exa_dbg.h"
#include "exa_isolation.h"
#include "exa_links.h"
#include "exa_umem.h"

#define EXTOLL_DRV_NAME		"extoll"
#define EXTOLL_MAX_DEVICES	8
#define EXTOLL_DRV_MAX_VPIDS	EXTOLL_SPEC_VPIDS

enum extoll_unit {
	EXTOLL_UNIT_RMA,
	EXTOLL_UNIT_VELO,
	EXTOLL_NUM_UNITS,
};

struct extoll_drv_dev;

/* Resources capped per user (exa_quota) on each device. */
enum extoll_res {
	EXTOLL_RES_RMA_VPID,		/* RMA endpoints */
	EXTOLL_RES_VELO_VPID,		/* VELO endpoints */
	EXTOLL_RES_ATU,			/* ATU entries (registered pages) */
	EXTOLL_RES_QUEUE,		/* queue bytes (notification queues, rings) */
	EXTOLL_NUM_RES
};

/* One class device + character device per unit (/dev/extoll/rma2, velo2). */
struct extoll_drv_cdev {
	struct device dev;
	struct cdev cdev;
	struct extoll_drv_dev *xdev;
	enum extoll_unit unit;
	struct exa_links_sysfs links_sysfs;	/* torus links, on both units */
};

/*
 * One EXTOLL NIC.  Reference counted: probe holds one reference, each
 * class device and each open endpoint one more, so the structure outlives
 * unbind until the last endpoint is closed.  After remove() it is "dead":
 * every operation fails with -ENODEV and faults get SIGBUS.
 */
struct extoll_drv_dev {
	struct kref ref;
	struct pci_dev *pdev;
	void __iomem *regs;		/* privileged BAR, kernel only */
	resource_size_t rma_bar_phys;	/* RMA requester pages */
	resource_size_t velo_bar_phys;	/* VELO requester pages */
	resource_size_t velo_win_phys;	/* VELO send windows, 0: none */
	unsigned int index;		/* device number, 0 -> /dev/extoll/rma2 */

	u32 node_id;
	u32 max_nodes;
	u32 num_vpids[EXTOLL_NUM_UNITS];	/* implemented VPIDs per unit */

	/* ATU table in DMA memory, programmed at probe. */
	__le64 *atu;
	dma_addr_t atu_dma;
	u32 atu_entries;

	struct extoll_drv_cdev cdevs[EXTOLL_NUM_UNITS];

	/* Protects everything below and all register access. */
	struct mutex lock;
	bool dead;
	struct extoll_drv_ep *owner[EXTOLL_NUM_UNITS][EXTOLL_DRV_MAX_VPIDS];
	u32 vpid_ctrl[EXTOLL_DRV_MAX_VPIDS];	/* shadow of EXTOLL_VPID_CTRL */
	u32 in_use[EXTOLL_NUM_UNITS];
	u32 vpid_next[EXTOLL_NUM_UNITS];	/* next-fit VPID allocation */
	unsigned long *atu_map;		/* allocated ATU entries; bit 0 reserved */
	u32 atu_used;			/* entries in use (registered pages) */
	atomic64_t pinned_pages;	/* pages pinned by registrations */
	u64 q_bytes;			/* queue memory held by endpoints */
	u64 atu_fences;

	/* Per-user caps and rdma cgroup device "extollN"; own lock. */
	struct exa_quota quota;

	/* Torus link block, read under lock (exa_links.h). */
	struct exa_links links;
};

/* A registered region of an RMA endpoint. */
struct extoll_drv_region {
	struct list_head node;		/* on extoll_drv_ep.regions */
	struct exa_umem um;		/* pinned pages, RLIMIT_MEMLOCK accounted */
	struct sg_table sgt;		/* DMA mapping of um.pages */
	u32 atu_first;			/* first ATU entry */
	u32 count;			/* entries == pages */
	u64 nla;
	bool readonly;
	bool leak;			/* fence failed: never unpin */
	struct rdma_cgroup *cg;		/* charged hca_object */
	struct exa_quota_user *qu;	/* whose share holds the entries */
};

/*
 * One open file = one endpoint = one VPID of one unit.  The queue area
 * (RMA notification queue or VELO receive mailbox) is the read-pointer
 * page followed by the queue bytes, two buffers charged to the opener's
 * memory cgroup.
 */
struct extoll_drv_ep {
	struct extoll_drv_dev *xdev;
	/* The file holds one; remove() one while it releases the DMA. */
	refcount_t users;
	enum extoll_unit unit;
	u32 vpid;
	u32 prot;			/* protection domain (uapi/exa_domain.h) */
	struct mm_struct *mm;		/* only the opener may use the file */
	struct address_space *mapping;
	struct exa_quota_user *qu;	/* the opener's per-user account */
	struct rdma_cgroup *cg;		/* charged hca_handle */

	/* Protects the fields below (not the hardware: xdev->lock). */
	struct mutex lock;
	u64 q_size;			/* queue bytes (without the RP page) */
	u64 seg_size;			/* accepted for compatibility only */
	void *q;			/* read-pointer page; NULL until mapped */
	struct exa_dma_buf rp;		/* read-pointer page */
	struct exa_dma_buf qbuf;	/* the queue */
	size_t q_alloc;			/* PAGE_SIZE + q_size once allocated */

	/* RMA registrations, protected by lock. */
	struct list_head regions;
	u64 reg_pages;
};

/* Also the name of the unit's character device, /dev/extoll/<name>. */
static inline const char *extoll_unit_name(enum extoll_unit unit)
{
	return unit == EXTOLL_UNIT_RMA ? "rma2" : "velo2";
}

/*
 * Why a request to the NIC, or of endpoint ep, was refused (exa_dbg.h:
 * dynamic debug only).
 */
#define extoll_dbg(xdev, fmt, ...)					\
	exa_dbg(&(xdev)->pdev->dev, fmt, ##__VA_ARGS__)
#define extoll_ep_dbg(ep, fmt, ...)					\
	extoll_dbg((ep)->xdev, "%s vpid %u: " fmt,			\
		   extoll_unit_name((ep)->unit), (ep)->vpid, ##__VA_ARGS__)

/*
 * Copy a 64-bit result to user space; a bad pointer is the caller's
 * error, logged like every refusal.
 */
static inline int extoll_put_u64(struct extoll_drv_ep *ep, unsigned long arg,
				 u64 val)
{
	if (put_user(val, (u64 __user *)arg)) {
		extoll_ep_dbg(ep, "bad user pointer\n");
		return -EFAULT;
	}
	return 0;
}

/* extoll_dev.c */
void extoll_dev_put(struct extoll_drv_dev *xdev);

/* extoll_ep.c */
int extoll_ep_open(struct inode *inode, struct file *file,
		   enum extoll_unit unit);
int extoll_ep_release(struct inode *inode, struct file *file);
int extoll_ep_check_caller(struct extoll_drv_ep *ep);
int extoll_ep_alloc_queue(struct extoll_drv_ep *ep);
int extoll_mmap_common(struct file *file, struct vm_area_struct *vma,
		       unsigned long mmio_pages);
unsigned long extoll_queue_pfn(struct extoll_drv_ep *ep, unsigned long page);
int extoll_ep_set_prot(struct extoll_drv_ep *ep, u64 prot);
bool extoll_queue_size_ok(u64 size, u64 min, u64 max);
int extoll_ep_set_queue_size(struct extoll_drv_ep *ep, u64 size);
void extoll_eps_release_dma(struct extoll_drv_dev *xdev);
u64 extoll_queue_budget(void);

/* extoll_hw.c: register level, callers hold xdev->lock and !dead */
int extoll_hw_probe(struct extoll_drv_dev *xdev);
void extoll_hw_reset(struct extoll_drv_dev *xdev);
void extoll_hw_atu_program(struct extoll_drv_dev *xdev);
void extoll_hw_ep_enable(struct extoll_drv_dev *xdev, enum extoll_unit unit,
			 u32 vpid, u32 prot);
void extoll_hw_ep_set_prot(struct extoll_drv_dev *xdev, enum extoll_unit unit,
			   u32 vpid, u32 prot);
u64 extoll_hw_read_counter(struct extoll_drv_dev *xdev, unsigned int n);
void extoll_hw_ep_set_queue(struct extoll_drv_dev *xdev, enum extoll_unit unit,
			    u32 vpid, dma_addr_t rp_dma, dma_addr_t q_dma,
			    u64 q_size);
void extoll_hw_ep_disable(struct extoll_drv_dev *xdev, enum extoll_unit unit,
			  u32 vpid);
u64 extoll_hw_ep_read_wp(struct extoll_drv_dev *xdev, enum extoll_unit unit,
			 u32 vpid);
void extoll_hw_atu_set(struct extoll_drv_dev *xdev, u32 idx, dma_addr_t addr,
		       u32 vpid, u32 prot, bool readonly);
void extoll_hw_atu_clear(struct extoll_drv_dev *xdev, u32 idx);
int extoll_hw_atu_fence(struct extoll_drv_dev *xdev);
u64 extoll_hw_nla(u32 idx);
unsigned long extoll_hw_mmio_pfn(struct extoll_drv_dev *xdev,
				 enum extoll_unit unit, u32 vpid,
				 unsigned long page);

/* extoll_rma2_reg.c */
int extoll_rma2_register(struct extoll_drv_ep *ep, void __user *uarg);
int extoll_rma2_unregister(struct extoll_drv_ep *ep, void __user *uarg);
void extoll_rma2_take_regions(struct extoll_drv_ep *ep, struct list_head *list);
int extoll_regions_hw_drop(struct extoll_drv_dev *xdev, struct list_head *list);
void extoll_regions_put(struct extoll_drv_dev *xdev, struct list_head *list);

/* extoll_rma2.c */
extern const struct file_operations extoll_rma2_fops;
u64 extoll_ep_get_rp(struct extoll_drv_ep *ep);
int extoll_ep_set_rp(struct extoll_drv_ep *ep, unsigned long val);
u64 extoll_ep_get_wp(struct extoll_drv_ep *ep);
int extoll_ep_set_wp(struct extoll_drv_ep *ep, unsigned long val);

/* extoll_velo2.c */
extern const struct file_operations extoll_velo2_fops;

#endif /* _EXTOLL_DRV_H */
