/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ExaNet NI driver: internal definitions shared by the PCI/chardev part,
 * the PDID binding table and the generic netlink family.
 */
#ifndef _EXANET_DRV_H
#define _EXANET_DRV_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/types.h>

#include <linux/xarray.h>

#include <exanet.h>
#include <exanet_rdma.h>

#define EXANET_DRV_NAME		"exanet"
#define EXANET_MAX_DEVICES	32

struct exanet_file;

/* A mailbox interface and the host memory queue the NI writes into. */
struct exanet_mbox {
	struct exanet_file *owner;	/* NULL when free */
	void *queue;			/* slot array, dma_alloc_coherent() */
	dma_addr_t queue_dma;
	size_t queue_size;		/* nslots * EXANET_MBOX_SLOT_SIZE */
	size_t alloc_size;		/* queue_size rounded up to pages */
	u32 nslots;
};

/*
 * One ExaNet NI.  Lifetime is the embedded struct device: probe holds one
 * reference and every open file holds one, so the structure survives
 * unbind until the last file is closed.  After remove() it is "dead": the
 * hardware is gone and every operation fails with -ENODEV.
 */
struct exanet_dev {
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
	struct exanet_file *pkt_owner[EXANET_NUM_PKT_IFACES];
	struct exanet_mbox mbox[EXANET_NUM_MBOX_IFACES];

	/* RDMA engine (exanet_rdma.c); num_rpages == 0: no RDMA engine. */
	resource_size_t rdma_bar_phys;	/* BAR3 */
	u32 num_rpages;
	u32 rpages_in_use;
	struct exanet_file *rpage_owner[EXANET_RDMA_PAGES];

	struct list_head list;		/* on exanet_devices */
};

/* Per open file: the protection domain and what the file owns. */
struct exanet_file {
	struct exanet_dev *edev;
	struct address_space *mapping;	/* to zap user mappings on free */
	struct mm_struct *mm;		/* only the opener may use the file */
	u32 pdid;
	u32 npkt;			/* counts, protected by edev->lock */
	u32 nmbox;
	u32 nrpage;

	/* RDMA: rank context and registrations (exanet_rdma.c). */
	struct exanet_ctx *ctx;		/* set once, under exanet_ctx_lock */
	struct mutex mr_lock;		/* serialises REG/DEREG of this file */
	struct xarray mrs;		/* handle -> struct exanet_mr */
	u32 mr_next;
	u32 nmr;
};

/* exanet_main.c: the device list, used by the netlink family. */
extern struct mutex exanet_devices_lock;
extern struct list_head exanet_devices;

u64 exanet_read_counter(struct exanet_dev *edev, unsigned int n);

/* exanet_main.c helpers used by exanet_rdma.c */
u32 exanet_rd(struct exanet_dev *edev, unsigned int reg);
void exanet_wr(struct exanet_dev *edev, unsigned int reg, u32 val);
void exanet_zap(struct exanet_file *ef, u32 kind, u32 index, size_t len);

/* exanet_rdma.c */
int exanet_rdma_init(void);
void exanet_rdma_exit(void);
int exanet_rdma_probe(struct exanet_dev *edev);
void exanet_rdma_file_init(struct exanet_file *ef);
void exanet_rdma_file_release(struct exanet_file *ef);
void exanet_rdma_quiesce(struct exanet_dev *edev);
long exanet_rdma_ioctl(struct exanet_file *ef, unsigned int cmd,
		       void __user *uarg);
int exanet_rdma_mmap_check(struct exanet_file *ef, u32 index,
			   unsigned long len);
int exanet_rdma_fault_pfn(struct exanet_file *ef, u32 index,
			  unsigned long page, unsigned long *pfn);
extern const struct attribute_group exanet_rdma_group;

/* exanet_pdid.c */
u32 exanet_pdid_resolve(u32 default_pdid);
int exanet_pdid_bind(pid_t nr, u32 pdid);
int exanet_pdid_unbind(pid_t nr);
typedef int (*exanet_pdid_visit_t)(void *arg, pid_t nr, u32 pdid);
int exanet_pdid_for_each(unsigned long *pos, exanet_pdid_visit_t visit,
			 void *arg);
void exanet_pdid_exit(void);

/* exanet_genl.c */
int exanet_genl_init(void);
void exanet_genl_exit(void);

#endif /* _EXANET_DRV_H */
