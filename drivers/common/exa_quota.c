// SPDX-License-Identifier: GPL-2.0
/*
 * Fair sharing of NI resources (exa_domain.h):
 *
 *  - per-user caps: a user without CAP_SYS_RESOURCE may hold at most
 *    percent % (a module parameter of the driver, default 50) of each
 *    resource of a device, whatever number of files and processes it
 *    uses, so another user always finds the rest;
 *  - the rdma cgroup controller: every open file is an hca_handle and
 *    every object it allocates an hca_object of the device, so a
 *    resource manager caps a job with rdma.max as for InfiniBand HCAs;
 *  - queue memory the NI writes into is charged to the memory cgroup of
 *    the process that asked for it (__GFP_ACCOUNT).
 */

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/error-injection.h>
#include <linux/gfp.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "exa_dbg.h"
#include "exa_isolation.h"

static int exa_percent_param_set(const char *val,
				 const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, 100);
}

/* For the drivers' max_user_percent parameters: 1..100. */
const struct kernel_param_ops exa_percent_param_ops = {
	.set = exa_percent_param_set,
	.get = param_get_uint,
};
EXPORT_SYMBOL_NS_GPL(exa_percent_param_ops, EXA_CORE);

int exa_quota_init(struct exa_quota *q, struct device *dev, const char *name,
		   const char *const *names, unsigned int nres,
		   const unsigned int *percent)
{
	if (WARN_ON(nres > EXA_QUOTA_MAX_RES))
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	q->names = names;
	q->nres = nres;
	q->percent = percent;
	q->dev = dev;
	mutex_init(&q->lock);
	xa_init(&q->users);
	q->cg.name = kstrdup(name, GFP_KERNEL);
	if (!q->cg.name)
		return -ENOMEM;
	rdmacg_register_device(&q->cg);
	q->cg_registered = true;
	return 0;
}
EXPORT_SYMBOL_NS_GPL(exa_quota_init, EXA_CORE);

/* After the last open file of the device is gone. */
void exa_quota_destroy(struct exa_quota *q)
{
	if (q->cg_registered)
		rdmacg_unregister_device(&q->cg);
	q->cg_registered = false;
	kfree(q->cg.name);
	q->cg.name = NULL;
	WARN_ON(!xa_empty(&q->users));
	xa_destroy(&q->users);
}
EXPORT_SYMBOL_NS_GPL(exa_quota_destroy, EXA_CORE);

/* The account of the caller's effective uid, created on first use. */
struct exa_quota_user *exa_quota_user_get(struct exa_quota *q)
{
	kuid_t uid = current_euid();
	unsigned long key = from_kuid(&init_user_ns, uid);
	struct exa_quota_user *qu, *old;

	mutex_lock(&q->lock);
	qu = xa_load(&q->users, key);
	if (qu) {
		refcount_inc(&qu->ref);
		goto unlock;
	}
	qu = kzalloc(sizeof(*qu), GFP_KERNEL_ACCOUNT);
	if (!qu) {
		qu = ERR_PTR(-ENOMEM);
		goto unlock;
	}
	qu->quota = q;
	qu->uid = uid;
	refcount_set(&qu->ref, 1);
	old = xa_store(&q->users, key, qu, GFP_KERNEL);
	if (xa_is_err(old)) {
		exa_dbg(q->dev, "uid %lu: account not stored (%d)\n", key,
			xa_err(old));
		kfree(qu);
		qu = ERR_PTR(xa_err(old));
	}
unlock:
	mutex_unlock(&q->lock);
	return qu;
}
EXPORT_SYMBOL_NS_GPL(exa_quota_user_get, EXA_CORE);
ALLOW_ERROR_INJECTION(exa_quota_user_get, ERRNO);

void exa_quota_user_put(struct exa_quota_user *qu)
{
	struct exa_quota *q;
	unsigned int r;

	if (!qu)
		return;
	q = qu->quota;
	mutex_lock(&q->lock);
	if (refcount_dec_and_test(&qu->ref)) {
		for (r = 0; r < q->nres; r++)
			WARN_ON(qu->used[r]);
		xa_erase(&q->users, from_kuid(&init_user_ns, qu->uid));
		kfree(qu);
	}
	mutex_unlock(&q->lock);
}
EXPORT_SYMBOL_NS_GPL(exa_quota_user_put, EXA_CORE);

/* The most one user without CAP_SYS_RESOURCE may hold of @res. */
u64 exa_quota_cap(struct exa_quota *q, unsigned int res)
{
	unsigned int pct = min(READ_ONCE(*q->percent), 100U);

	return div_u64(q->total[res] * pct, 100);
}
EXPORT_SYMBOL_NS_GPL(exa_quota_cap, EXA_CORE);

/**
 * exa_quota_charge - count @n more units of @res for the user of @qu
 * @qu: the account of the file's opener
 * @res: resource index of the device
 * @n: units (objects, entries or bytes)
 *
 * Called in the context of the process that asks (capable() checks it).
 *
 * Return: 0, or -EDQUOT when the user would exceed its cap.
 */
int exa_quota_charge(struct exa_quota_user *qu, unsigned int res, u64 n)
{
	struct exa_quota *q = qu->quota;
	u64 cap = exa_quota_cap(q, res);
	int ret = 0;

	mutex_lock(&q->lock);
	if (qu->used[res] + n > cap && !capable(CAP_SYS_RESOURCE)) {
		exa_dbg(q->dev,
			"uid %u: %s cap reached (holds %llu, asks %llu, cap %llu of %llu)\n",
			from_kuid(&init_user_ns, qu->uid), q->names[res],
			qu->used[res], n, cap, q->total[res]);
		ret = -EDQUOT;
	} else {
		qu->used[res] += n;
	}
	mutex_unlock(&q->lock);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(exa_quota_charge, EXA_CORE);
ALLOW_ERROR_INJECTION(exa_quota_charge, ERRNO);

void exa_quota_uncharge(struct exa_quota_user *qu, unsigned int res, u64 n)
{
	struct exa_quota *q = qu->quota;

	mutex_lock(&q->lock);
	if (WARN_ON(qu->used[res] < n))
		n = qu->used[res];
	qu->used[res] -= n;
	mutex_unlock(&q->lock);
}
EXPORT_SYMBOL_NS_GPL(exa_quota_uncharge, EXA_CORE);

/* sysfs "user_usage": one line per user holding anything, then the caps. */
ssize_t exa_quota_show(struct exa_quota *q, char *buf)
{
	struct exa_quota_user *qu;
	unsigned long key;
	ssize_t len = 0;
	unsigned int r;

	len += sysfs_emit_at(buf, len, "cap");
	for (r = 0; r < q->nres; r++)
		len += sysfs_emit_at(buf, len, " %s=%llu/%llu", q->names[r],
				     exa_quota_cap(q, r), q->total[r]);
	len += sysfs_emit_at(buf, len, "\n");
	mutex_lock(&q->lock);
	xa_for_each(&q->users, key, qu) {
		len += sysfs_emit_at(buf, len, "uid %lu", key);
		for (r = 0; r < q->nres; r++)
			len += sysfs_emit_at(buf, len, " %s=%llu", q->names[r],
					     qu->used[r]);
		len += sysfs_emit_at(buf, len, "\n");
	}
	mutex_unlock(&q->lock);
	return len;
}
EXPORT_SYMBOL_NS_GPL(exa_quota_show, EXA_CORE);

/* ---------------------------------------------------------- rdma cgroup */

/* Return: 0, or -EAGAIN when the caller's rdma cgroup is at its rdma.max. */
int exa_cg_charge(struct exa_quota *q, struct rdma_cgroup **cg,
		  enum rdmacg_resource_type type)
{
	int ret = rdmacg_try_charge(cg, &q->cg, type);

	if (ret)
		exa_dbg(q->dev, "rdma cgroup limit: %s refused (%d)\n",
			type == RDMACG_RESOURCE_HCA_HANDLE ? "hca_handle" :
							     "hca_object", ret);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(exa_cg_charge, EXA_CORE);
ALLOW_ERROR_INJECTION(exa_cg_charge, ERRNO);

void exa_cg_uncharge(struct exa_quota *q, struct rdma_cgroup **cg,
		     enum rdmacg_resource_type type)
{
	if (*cg)
		rdmacg_uncharge(*cg, &q->cg, type);
	*cg = NULL;
}
EXPORT_SYMBOL_NS_GPL(exa_cg_uncharge, EXA_CORE);

/* --------------------------------------------------------- queue memory */

int exa_dma_buf_alloc(struct exa_dma_buf *buf, struct device *dev,
		      size_t size)
{
	struct page *page;
	dma_addr_t dma;

	size = PAGE_ALIGN(size);
	if (!size || get_order(size) > MAX_ORDER - 1) {
		exa_dbg(dev, "%zu bytes: not one allocation\n", size);
		return -EINVAL;
	}
	page = alloc_pages(GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN,
			   get_order(size));
	if (!page) {
		/* __GFP_NOWARN: the memcg limit of the caller is the usual cause */
		exa_dbg(dev, "%zu bytes: no memory (memcg limit?)\n", size);
		return -ENOMEM;
	}
	dma = dma_map_page(dev, page, 0, size, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dev, dma)) {
		exa_dbg(dev, "%zu bytes: no DMA mapping\n", size);
		__free_pages(page, get_order(size));
		return -ENOMEM;
	}
	buf->va = page_address(page);
	buf->dma = dma;
	buf->size = size;
	return 0;
}
EXPORT_SYMBOL_NS_GPL(exa_dma_buf_alloc, EXA_CORE);
ALLOW_ERROR_INJECTION(exa_dma_buf_alloc, ERRNO);

/* The device must no longer access the buffer. */
void exa_dma_buf_free(struct exa_dma_buf *buf, struct device *dev)
{
	if (!buf->va)
		return;
	dma_unmap_page(dev, buf->dma, buf->size, DMA_BIDIRECTIONAL);
	__free_pages(virt_to_page(buf->va), get_order(buf->size));
	memset(buf, 0, sizeof(*buf));
}
EXPORT_SYMBOL_NS_GPL(exa_dma_buf_free, EXA_CORE);
