/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ExaNet NI driver: internal definitions shared by the PCI/chardev part,
 * the PDID binding table and the generic netlink family.
 */
#ifndef _EXANET_DRV_H
#define _EXANET_DRV_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/lockdep.h>
#include <linux/list.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <exanet.h>
#include <exanet_rdma.h>
#include <exanet_coll.h>
#include <exanet_ip.h>

#include "exa_dbg.h"
#include "exa_isolation.h"
#include "exa_links.h"
#include "exa_umem.h"

#define EXANET_DRV_NAME		"exanet"
#define EXANET_MAX_DEVICES	32

/* Why a request to exanetN was refused (exa_dbg.h: dynamic debug only). */
#define exanet_dbg(edev, fmt, ...)					\
	exa_dbg(&(edev)->dev, fmt, ##__VA_ARGS__)

struct exanet_drv_file;
struct exanet_ip;

/* Resources capped per user (exa_quota) on each device. */
enum exanet_res {
	EXANET_RES_PKT,			/* packetizer interfaces */
	EXANET_RES_MBOX,		/* mailboxes */
	EXANET_RES_RANK,		/* RDMA ranks (DMA contexts) */
	EXANET_RES_RPAGE,		/* RDMA descriptor pages */
	EXANET_NUM_RES
};

/* A mailbox interface and the host memory queue the NI writes into. */
struct exanet_drv_mbox {
	struct exanet_drv_file *owner;	/* NULL when free */
	struct exa_dma_buf queue;	/* slot array, charged to the owner's memcg */
	size_t queue_size;		/* nslots * EXANET_MBOX_SLOT_SIZE */
	u32 nslots;
	struct rdma_cgroup *cg;		/* charged hca_object */
	bool kernel;			/* the kernel path of IP's (exanet_ip.c) */
};

/* A group slot of the collective unit (exanet_coll.c). */
struct exanet_drv_cgroup {
	struct exanet_drv_file *owner;	/* NULL when free */
	u32 page;			/* the RDMA page that drives it */
	u32 key;
	u32 my_rank;
};

/*
 * One ExaNet NI.  Lifetime is the embedded struct device: probe holds one
 * reference and every open file holds one, so the structure survives
 * unbind until the last file is closed.  After remove() it is "dead": the
 * hardware is gone and every operation fails with -ENODEV.
 */
struct exanet_drv_dev {
	struct device dev;
	struct cdev cdev;
	struct pci_dev *pdev;
	void __iomem *ctrl;		/* BAR0, kernel only */
	resource_size_t pkt_bar_phys;	/* BAR1 */
	resource_size_t mbox_bar_phys;	/* BAR2 */
	unsigned int index;		/* N of /dev/exanetN */

	u32 node_id;
	u32 num_nodes;
	u32 num_pkt;			/* packetizer interfaces present */
	u32 num_mbox;			/* mailbox interfaces present */
	u32 pkt_channels;

	/* Protects everything below, and all hardware access. */
	struct mutex lock;
	bool dead;
	u32 pkt_in_use;
	u32 mbox_in_use;
	struct exanet_drv_file *pkt_owner[EXANET_NUM_PKT_IFACES];
	bool pkt_kernel[EXANET_NUM_PKT_IFACES];	/* the kernel path of IP's */
	struct rdma_cgroup *pkt_cg[EXANET_NUM_PKT_IFACES];
	struct exanet_drv_mbox mbox[EXANET_NUM_MBOX_IFACES];

	/* Per-user caps and rdma cgroup device "exanetN"; own lock. */
	struct exa_quota quota;

	/* Torus link block: registers under lock, sysfs view (links/). */
	struct exa_links links;
	struct exa_links_sysfs links_sysfs;

	/* RDMA engine (exanet_rdma.c); num_rpages == 0: no RDMA engine. */
	resource_size_t rdma_bar_phys;	/* BAR3 */
	u32 num_rpages;
	u32 rpages_in_use;
	struct exanet_drv_file *rpage_owner[EXANET_RDMA_PAGES];
	struct rdma_cgroup *rpage_cg[EXANET_RDMA_PAGES];

	/* Collective unit (exanet_coll.c); num_cgroups == 0: none. */
	resource_size_t coll_bar_phys;	/* BAR5 */
	u32 num_cgroups;
	u32 cgroups_in_use;
	struct exanet_drv_cgroup cgroup[EXANET_COLL_GROUPS];

	/* Interrupts (exanet_irq.c); nvec == 0: the NI has none. */
	u32 nvec;			/* MSI-X vectors requested */
	char irq_name[EXANET_NUM_IRQ_VECTORS][24];
	atomic_t next_vec;		/* round robin of the files' vectors */
	atomic64_t irq_count;		/* handler runs */
	atomic64_t irq_wakeups;		/* files signalled */
	/*
	 * Protects the file that armed each source last (NULL: none),
	 * every exanet_drv_file.ev_count and the list of open files.  Taken in
	 * the interrupt handler; inside edev->lock.
	 */
	spinlock_t irq_lock;
	struct exanet_drv_file *mbox_armed[EXANET_NUM_MBOX_IFACES];
	struct exanet_drv_file *rank_armed[EXANET_RDMA_NUM_RANKS];
	struct list_head files;

	/* On-demand paging fault queue (exanet_odp.c); fq_cpu NULL: none. */
	struct exanet_rdma_fault *fq_cpu;
	dma_addr_t fq_dma;
	u32 fq_size;			/* entries */
	u32 fq_head;			/* under lock */
	struct work_struct fault_work;
	atomic64_t fq_entries;		/* fault entries handled */
	atomic64_t fq_refused;		/* of which failed (FQ_FAIL) */

	/* Kernel path of IP (exanet_ip.c), NULL = none: under rtnl and irq_lock. */
	struct exanet_ip *ip;

	struct list_head list;		/* on exanet_devices */
};

/* Per open file: the protection domain and what the file owns. */
struct exanet_drv_file {
	struct exanet_drv_dev *edev;
	struct address_space *mapping;	/* to zap user mappings on free */
	struct mm_struct *mm;		/* only the opener may use the file */
	u32 pdid;
	struct exa_quota_user *qu;	/* the opener's per-user account */
	struct rdma_cgroup *cg;		/* charged hca_handle */
	struct rdma_cgroup *rank_cg;	/* charged hca_object of the rank */
	u32 npkt;			/* counts, protected by edev->lock */
	u32 nmbox;
	u32 nrpage;
	u32 ncgroup;			/* collective groups */

	/* RDMA: rank context and registrations (exanet_rdma.c). */
	struct exanet_drv_ctx *ctx;		/* set once, under exanet_ctx_lock */
	struct mutex mr_lock;		/* serialises REG/DEREG of this file */
	struct xarray mrs;		/* handle -> struct exanet_drv_mr */
	u32 mr_next;
	u32 nmr;

	/* Events (exanet_irq.c). */
	wait_queue_head_t ev_wq;	/* poll() sleeps here */
	u32 ev_count;			/* sources fired since the last arm */
	u32 vec;			/* the file's MSI-X vector */
	struct list_head irq_node;	/* on edev->files */
};

/*
 * On-demand paging state of a DMA context (exanet_odp.c).  lock is the
 * "notifier lock": taken by the mmu_interval_notifier invalidate callbacks,
 * so nothing that may enter reclaim (GFP_KERNEL allocation, mmap_lock) is
 * done under it.
 */
struct exanet_drv_odp_space {
	struct mutex lock;		/* the notifier lock, see above */
	struct xarray pages;		/* user page number -> xa_mk_value(prot) */
	/*
	 * Transparent huge pages mapped whole as one IOMMU superpage:
	 * user VA >> PMD_SHIFT -> xa_mk_value(prot).  Never overlaps 'pages'.
	 */
	struct xarray thp;
	unsigned long mapped;		/* pages mapped, those of 'thp' included */
	unsigned long thp_mapped;	/* entries of 'thp' */
	u32 pinning;			/* pinned registrations being mapped */
	atomic64_t faults;		/* fault entries resolved for the rank */
	atomic64_t refused;		/* fault entries refused (error completion) */
	atomic64_t replays;		/* FQ_RESUME writes for the rank */
	atomic64_t invalidations;	/* invalidations that unmapped pages */
	atomic64_t unmapped;		/* pages unmapped by invalidations */
	/* The owner the fault worker is using (under exanet_ctx_lock). */
	struct exanet_drv_file *fault_ef;
	wait_queue_head_t fault_wq;	/* fault_ef cleared */
};

/* One DMA context (rank).  Entries are static; pdev is NULL when unbound. */
struct exanet_drv_ctx {
	struct pci_dev *pdev;
	struct exa_iospace ios;
	struct exanet_drv_odp_space odp;
	struct exanet_drv_file *owner;	/* NULL when free */
	u32 rank;
	bool removing;			/* unbind in progress: not handed out */
};

/* A registration: pinned (um) or on demand (notifier). */
struct exanet_drv_mr {
	struct exa_umem um;
	u32 access;
	bool odp;
	struct exanet_drv_ctx *ctx;
	unsigned long start, end;	/* on demand: page aligned user range */
	struct mmu_interval_notifier notifier;
};

/* exanet_ctx.c: the contexts, under exanet_ctx_lock */
extern struct mutex exanet_ctx_lock;
extern struct wait_queue_head exanet_ctx_wq;
extern struct exanet_drv_ctx exanet_ctxs[EXANET_RDMA_NUM_RANKS];
void exanet_ctx_xlat_fence(struct exanet_drv_ctx *ctx);
void exanet_ctx_disable(struct exanet_drv_dev *edev, u32 r);
int exanet_ctx_driver_register(void);
void exanet_ctx_driver_unregister(void);

/* exanet_main.c: the device list, used by the netlink family. */
extern struct mutex exanet_devices_lock;
extern struct list_head exanet_devices;

/* The NI's control registers (BAR0) */
static inline u32 exanet_rd(struct exanet_drv_dev *edev, unsigned int reg)
{
	return ioread32(edev->ctrl + reg);
}

static inline void exanet_wr(struct exanet_drv_dev *edev, unsigned int reg,
			     u32 val)
{
	iowrite32(val, edev->ctrl + reg);
}

/* Caller holds edev->lock and has checked !edev->dead. */
static inline u64 exanet_read_counter(struct exanet_drv_dev *edev,
				      unsigned int n)
{
	lockdep_assert_held(&edev->lock);
	return lo_hi_readq(edev->ctrl + EXANET_REG_COUNTER(n));
}

/* Resource accounting */
/*
 * Count one object of @res for the file's user (per-user cap) and its
 * rdma cgroup (hca_object, remembered in @cg).  Not under edev->lock:
 * the cgroup code sleeps on its own mutex.
 */
static inline int exanet_charge(struct exanet_drv_file *ef,
				enum exanet_res res, struct rdma_cgroup **cg)
{
	struct exanet_drv_dev *edev = ef->edev;
	int ret;

	ret = exa_quota_charge(ef->qu, res, 1);
	if (ret)
		return ret;
	ret = exa_cg_charge(&edev->quota, cg, RDMACG_RESOURCE_HCA_OBJECT);
	if (ret)
		exa_quota_uncharge(ef->qu, res, 1);
	return ret;
}

static inline void exanet_uncharge(struct exanet_drv_file *ef,
				   enum exanet_res res,
				   struct rdma_cgroup **cg)
{
	exa_cg_uncharge(&ef->edev->quota, cg, RDMACG_RESOURCE_HCA_OBJECT);
	exa_quota_uncharge(ef->qu, res, 1);
}

/*
 * Revoke every user mapping of one object of @ef; pages fault in again
 * only while the file still owns it (exanet_mmap.c).
 */
static inline void exanet_zap(struct exanet_drv_file *ef, u32 kind, u32 index,
			      size_t len)
{
	unmap_mapping_range(ef->mapping, EXANET_MMAP_OFFSET(kind, index),
			    PAGE_ALIGN(len), 1);
}

/* exanet_iface.c: interfaces; exanet_ioctl.c: the ioctls */
void exanet_pkt_release(struct exanet_drv_dev *edev, u32 i);
void exanet_mbox_release(struct exanet_drv_dev *edev, u32 m);
long exanet_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* exanet_mmap.c */
int exanet_mmap(struct file *file, struct vm_area_struct *vma);

/* exanet_rdma.c */
int exanet_rdma_probe(struct exanet_drv_dev *edev);
void exanet_rdma_file_init(struct exanet_drv_file *ef);
void exanet_rdma_file_release(struct exanet_drv_file *ef);
void exanet_rdma_quiesce(struct exanet_drv_dev *edev);
long exanet_rdma_ioctl(struct exanet_drv_file *ef, unsigned int cmd,
		       void __user *uarg);
int exanet_rdma_mmap_check(struct exanet_drv_file *ef, u32 index,
			   unsigned long len);
int exanet_rdma_fault_pfn(struct exanet_drv_file *ef, u32 index,
			  unsigned long page, unsigned long *pfn);
u32 exanet_file_rank(struct exanet_drv_file *ef);
extern const struct attribute_group exanet_rdma_group;

/* exanet_coll.c */
int exanet_coll_probe(struct exanet_drv_dev *edev);
void exanet_coll_page_release(struct exanet_drv_dev *edev, u32 p);
long exanet_coll_ioctl(struct exanet_drv_file *ef, unsigned int cmd,
		       void __user *uarg);
int exanet_coll_mmap_check(struct exanet_drv_file *ef, u32 index,
			   unsigned long len);
int exanet_coll_fault_pfn(struct exanet_drv_file *ef, u32 index,
			  unsigned long page, unsigned long *pfn);
extern const struct attribute_group exanet_coll_group;

/* exanet_irq.c */
void exanet_irq_probe(struct exanet_drv_dev *edev);
void exanet_irq_remove(struct exanet_drv_dev *edev);
void exanet_irq_quiesce(struct exanet_drv_dev *edev);
void exanet_irq_file_open(struct exanet_drv_dev *edev, struct exanet_drv_file *ef);
void exanet_irq_file_release(struct exanet_drv_file *ef);
void exanet_irq_mbox_forget(struct exanet_drv_dev *edev, u32 m);
int exanet_ioctl_event_arm(struct exanet_drv_file *ef, void __user *uarg);
__poll_t exanet_poll(struct file *file, poll_table *wait);
int exanet_flush(struct file *file, fl_owner_t id);
extern const struct attribute_group exanet_irq_group;

/* exanet_odp.c */
void exanet_odp_probe(struct exanet_drv_dev *edev);
void exanet_odp_remove(struct exanet_drv_dev *edev);
void exanet_odp_work(struct work_struct *work);
void exanet_odp_ctx_release(struct exanet_drv_ctx *ctx);
int exanet_odp_ctx_enable(struct exanet_drv_file *ef);
int exanet_odp_reg(struct exanet_drv_file *ef, struct exanet_drv_mr *mr,
		   struct exanet_reg_mr *req);
void exanet_odp_dereg(struct exanet_drv_mr *mr);
void exanet_odp_file_quiesce(struct exanet_drv_ctx *ctx, struct exanet_drv_file *ef);
void exanet_odp_pin_begin(struct exanet_drv_ctx *ctx, unsigned long start,
			  unsigned long end);
void exanet_odp_pin_end(struct exanet_drv_ctx *ctx);
extern const struct attribute_group exanet_odp_group;

/* exanet_iface.c: interfaces for user space or the kernel path */
int exanet_pkt_take(struct exanet_drv_file *ef, bool kernel, u32 *iface);
void exanet_pkt_put(struct exanet_drv_file *ef, u32 iface);
int exanet_mbox_take(struct exanet_drv_file *ef, u32 nslots, bool kernel,
		     u32 *mbox);
void exanet_mbox_put(struct exanet_drv_file *ef, u32 mbox);

/* exanet_ip.c */
int exanet_ip_init(void);
void exanet_ip_exit(void);
long exanet_ip_ioctl_attach(struct exanet_drv_file *ef, void __user *uarg);
long exanet_ip_ioctl_peers(struct exanet_drv_file *ef, void __user *uarg);
void exanet_ip_file_release(struct exanet_drv_file *ef);
void exanet_ip_irq(struct exanet_drv_dev *edev, u64 mbox_pending);
void exanet_ip_quiesce(struct exanet_drv_dev *edev);
extern const struct attribute_group exanet_ip_group;

/* exanet_genl.c */
int exanet_genl_init(void);
void exanet_genl_exit(void);

#endif /* _EXANET_DRV_H */
