/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Isolation between users and jobs, shared by exanet.ko and extoll.ko and
 * exported by exa_core.ko (symbol namespace EXA_CORE):
 *
 *  - protection domains (uapi/exa_domain.h): the administrator's binding
 *    table and the domain of a process opening a device (exa_domain.c);
 *  - per-user caps and the kernel's rdma cgroup controller on every NI
 *    resource a device hands out, and queue memory charged to the memory
 *    cgroup of its owner (exa_quota.c).
 */
#ifndef _EXA_ISOLATION_H
#define _EXA_ISOLATION_H

#include <linux/cgroup_rdma.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#include <exa_domain.h>

struct device;

/* ------------------------------------------------------------ domains */

u32 exa_domain_of_current(u32 shared_default);
int exa_domain_bind(pid_t nr, u32 domain);
int exa_domain_unbind(pid_t nr);
typedef int (*exa_domain_visit_t)(void *arg, pid_t nr, u32 domain);
int exa_domain_for_each(unsigned long *pos, exa_domain_visit_t visit,
			void *arg);

/* ------------------------------------------------------------- quotas */

#define EXA_QUOTA_MAX_RES	8

/*
 * One per device: what it has of each resource (@total, set by the
 * driver), and per user what that user holds.  A caller without
 * CAP_SYS_RESOURCE may hold at most *@percent % of any resource.
 */
struct exa_quota {
	const char *const *names;	/* resource names (sysfs, dev_dbg) */
	unsigned int nres;
	const unsigned int *percent;	/* the driver's module parameter */
	struct device *dev;		/* for dev_dbg */
	u64 total[EXA_QUOTA_MAX_RES];
	struct mutex lock;		/* protects users and every used[] */
	struct xarray users;		/* uid -> struct exa_quota_user */
	struct rdmacg_device cg;	/* rdma cgroup: hca_handle/hca_object */
	bool cg_registered;
};

/* What one user holds on one device; one reference per open file. */
struct exa_quota_user {
	struct exa_quota *quota;
	kuid_t uid;
	refcount_t ref;
	u64 used[EXA_QUOTA_MAX_RES];
};

extern const struct kernel_param_ops exa_percent_param_ops;

int exa_quota_init(struct exa_quota *q, struct device *dev, const char *name,
		   const char *const *names, unsigned int nres,
		   const unsigned int *percent);
void exa_quota_destroy(struct exa_quota *q);
struct exa_quota_user *exa_quota_user_get(struct exa_quota *q);
void exa_quota_user_put(struct exa_quota_user *qu);
int exa_quota_charge(struct exa_quota_user *qu, unsigned int res, u64 n);
void exa_quota_uncharge(struct exa_quota_user *qu, unsigned int res, u64 n);
u64 exa_quota_cap(struct exa_quota *q, unsigned int res);
ssize_t exa_quota_show(struct exa_quota *q, char *buf);

/* rdma cgroup: the cgroup charged is remembered for the uncharge */
int exa_cg_charge(struct exa_quota *q, struct rdma_cgroup **cg,
		  enum rdmacg_resource_type type);
void exa_cg_uncharge(struct exa_quota *q, struct rdma_cgroup **cg,
		     enum rdmacg_resource_type type);

/* ---------------------------------------------- queue memory (memcg) */

/*
 * Zeroed, physically contiguous kernel memory the device DMAs into (NI
 * queues that user space maps read-only), charged to the memory cgroup
 * of the caller (__GFP_ACCOUNT) and DMA mapped for @dev.
 */
struct exa_dma_buf {
	void *va;
	dma_addr_t dma;
	size_t size;			/* bytes, page aligned */
};

int exa_dma_buf_alloc(struct exa_dma_buf *buf, struct device *dev,
		      size_t size);
void exa_dma_buf_free(struct exa_dma_buf *buf, struct device *dev);

#endif /* _EXA_ISOLATION_H */
