// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: packetizer and mailbox interfaces, taken and given back
 * by files (exanet_ioctl.c) or by the kernel's IP path (exanet_ip.c).
 * The PCI device and the file life cycle are in exanet_main.c, mmap in
 * exanet_mmap.c.
 */

#include <linux/bitops.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "exanet_drv.h"

/* ------------------------------------------------------------ parameters */

static unsigned int exanet_max_pkt_per_file = 8;
static unsigned int exanet_max_mbox_per_file = 8;

static int exanet_param_set_limit(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, EXANET_NUM_PKT_IFACES);
}

static const struct kernel_param_ops exanet_limit_param_ops = {
	.set = exanet_param_set_limit,
	.get = param_get_uint,
};

module_param_cb(max_pkt_per_file, &exanet_limit_param_ops,
		&exanet_max_pkt_per_file, 0644);
MODULE_PARM_DESC(max_pkt_per_file,
		 "Packetizer interfaces one open file may hold, 1..64 (default 8)");
module_param_cb(max_mbox_per_file, &exanet_limit_param_ops, &exanet_max_mbox_per_file,
		0644);
MODULE_PARM_DESC(max_mbox_per_file,
		 "Mailbox interfaces one open file may hold, 1..64 (default 8)");

/* ------------------------------------------------------------ interfaces */

void exanet_pkt_release(struct exanet_drv_dev *edev, u32 i)
{
	struct exanet_drv_file *ef = edev->pkt_owner[i];

	lockdep_assert_held(&edev->lock);
	/* Disabling aborts the channels; the read-back flushes the write. */
	exanet_wr(edev, EXANET_REG_PKT_BASE(i) + EXANET_PKT_ENABLE, 0);
	exanet_rd(edev, EXANET_REG_PKT_BASE(i) + EXANET_PKT_ENABLE);
	exanet_zap(ef, EXANET_MMAP_PKT, i, EXANET_IFACE_PAGE_SIZE);
	edev->pkt_owner[i] = NULL;
	edev->pkt_kernel[i] = false;
	edev->pkt_in_use--;
	ef->npkt--;
	exanet_uncharge(ef, EXANET_RES_PKT, &edev->pkt_cg[i]);
}

void exanet_mbox_release(struct exanet_drv_dev *edev, u32 m)
{
	struct exanet_drv_mbox *mb = &edev->mbox[m];
	struct exanet_drv_file *ef = mb->owner;

	lockdep_assert_held(&edev->lock);
	/* No DMA into the queue once ENABLE reads back clear. */
	exanet_wr(edev, EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_ENABLE, 0);
	exanet_rd(edev, EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_ENABLE);
	exanet_irq_mbox_forget(edev, m);
	exanet_zap(ef, EXANET_MMAP_MBOX_REGS, m, EXANET_IFACE_PAGE_SIZE);
	exanet_zap(ef, EXANET_MMAP_MBOX_QUEUE, m, mb->queue.size);
	exa_dma_buf_free(&mb->queue, &edev->pdev->dev);
	exanet_uncharge(ef, EXANET_RES_MBOX, &mb->cg);
	memset(mb, 0, sizeof(*mb));
	edev->mbox_in_use--;
	ef->nmbox--;
}

/*
 * Take a free packetizer interface for @ef, stamped with its PDID: for
 * user space (PKT_ALLOC) or for the kernel path (@kernel: never mapped or
 * freed by the file, exanet_ip.c).
 */
int exanet_pkt_take(struct exanet_drv_file *ef, bool kernel, u32 *iface)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct rdma_cgroup *cg = NULL;
	u32 i;
	int ret;

	ret = exanet_charge(ef, EXANET_RES_PKT, &cg);
	if (ret)
		return ret;

	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
		goto unlock;
	}
	if (!kernel && ef->npkt >= READ_ONCE(exanet_max_pkt_per_file)) {
		exanet_dbg(edev, "file holds max_pkt_per_file\n");
		ret = -ENOSPC;
		goto unlock;
	}
	for (i = 0; i < edev->num_pkt; i++)
		if (!edev->pkt_owner[i])
			break;
	if (i == edev->num_pkt) {
		exanet_dbg(edev, "no free interface\n");
		ret = -ENOSPC;
		goto unlock;
	}
	exanet_wr(edev, EXANET_REG_PKT_BASE(i) + EXANET_PKT_PDID, ef->pdid);
	exanet_wr(edev, EXANET_REG_PKT_BASE(i) + EXANET_PKT_ENABLE, 1);
	edev->pkt_owner[i] = ef;
	edev->pkt_kernel[i] = kernel;
	edev->pkt_cg[i] = cg;
	edev->pkt_in_use++;
	ef->npkt++;
	*iface = i;
unlock:
	mutex_unlock(&edev->lock);
	if (ret)
		exanet_uncharge(ef, EXANET_RES_PKT, &cg);
	return ret;
}

/* Give back what exanet_pkt_take() or exanet_mbox_take() took. */
void exanet_pkt_put(struct exanet_drv_file *ef, u32 iface)
{
	struct exanet_drv_dev *edev = ef->edev;

	mutex_lock(&edev->lock);
	if (!edev->dead && edev->pkt_owner[iface] == ef)
		exanet_pkt_release(edev, iface);
	mutex_unlock(&edev->lock);
}

/* As exanet_pkt_take(), for a mailbox of @nslots slots. */
int exanet_mbox_take(struct exanet_drv_file *ef, u32 nslots, bool kernel,
		     u32 *mbox)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct rdma_cgroup *cg = NULL;
	struct exa_dma_buf queue;
	struct exanet_drv_mbox *mb;
	void __iomem *regs;
	int ret = 0;
	u32 m;

	if (nslots < EXANET_MBOX_MIN_SLOTS || nslots > EXANET_MBOX_MAX_SLOTS ||
	    !is_power_of_2(nslots)) {
		exanet_dbg(edev, "%u slots (a power of two in %u..%u)\n",
			   nslots, EXANET_MBOX_MIN_SLOTS, EXANET_MBOX_MAX_SLOTS);
		return -EINVAL;
	}
	ret = exanet_charge(ef, EXANET_RES_MBOX, &cg);
	if (ret)
		return ret;
	/*
	 * Zeroed, so every slot starts with phase 0 (not yet owned by SW);
	 * charged to the caller's memory cgroup.  Allocated before the lock:
	 * it may sleep for long.
	 */
	ret = exa_dma_buf_alloc(&queue, &edev->pdev->dev,
				(size_t)nslots * EXANET_MBOX_SLOT_SIZE);
	if (ret) {
		exanet_uncharge(ef, EXANET_RES_MBOX, &cg);
		return ret;
	}

	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
		goto unlock;
	}
	if (!kernel && ef->nmbox >= READ_ONCE(exanet_max_mbox_per_file)) {
		exanet_dbg(edev, "file holds max_mbox_per_file\n");
		ret = -ENOSPC;
		goto unlock;
	}
	for (m = 0; m < edev->num_mbox; m++)
		if (!edev->mbox[m].owner)
			break;
	if (m == edev->num_mbox) {
		exanet_dbg(edev, "no free mailbox\n");
		ret = -ENOSPC;
		goto unlock;
	}

	mb = &edev->mbox[m];
	mb->nslots = nslots;
	mb->queue_size = (size_t)nslots * EXANET_MBOX_SLOT_SIZE;
	mb->queue = queue;
	mb->cg = cg;
	mb->kernel = kernel;
	regs = edev->ctrl + EXANET_REG_MBOX_BASE(m);
	iowrite32(lower_32_bits(queue.dma), regs + EXANET_MBOX_QBASE_LO);
	iowrite32(upper_32_bits(queue.dma), regs + EXANET_MBOX_QBASE_HI);
	iowrite32(mb->nslots, regs + EXANET_MBOX_NSLOTS);
	iowrite32(ef->pdid, regs + EXANET_MBOX_PDID);
	iowrite32(1, regs + EXANET_MBOX_ENABLE);
	mb->owner = ef;
	edev->mbox_in_use++;
	ef->nmbox++;
	*mbox = m;
unlock:
	mutex_unlock(&edev->lock);
	if (ret) {
		exa_dma_buf_free(&queue, &edev->pdev->dev);
		exanet_uncharge(ef, EXANET_RES_MBOX, &cg);
	}
	return ret;
}

void exanet_mbox_put(struct exanet_drv_file *ef, u32 mbox)
{
	struct exanet_drv_dev *edev = ef->edev;

	mutex_lock(&edev->lock);
	if (!edev->dead && edev->mbox[mbox].owner == ef)
		exanet_mbox_release(edev, mbox);
	mutex_unlock(&edev->lock);
}
