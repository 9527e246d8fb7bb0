// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: packetizer and mailbox interfaces (taken and given back
 * by files or by the kernel's IP path) and the character device's ioctls.
 * The PCI device and the file life cycle are in exanet_main.c, mmap in
 * exanet_mmap.c.
 */

#include <linux/bitops.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "exanet_drv.h"

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

static int exanet_ioctl_get_info(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct exanet_info info;

	memset(&info, 0, sizeof(info));
	mutex_lock(&edev->lock);
	if (edev->dead) {
		mutex_unlock(&edev->lock);
		exanet_dbg(edev, "device removed\n");
		return -ENODEV;
	}
	info.abi_version = EXANET_ABI_VERSION;
	info.node_id = edev->node_id;
	info.num_nodes = edev->num_nodes;
	info.pdid = ef->pdid;
	info.num_pkt_ifaces = edev->num_pkt;
	info.num_mbox_ifaces = edev->num_mbox;
	info.pkt_channels = edev->pkt_channels;
	info.max_payload = EXANET_MAX_PAYLOAD;
	mutex_unlock(&edev->lock);

	if (copy_to_user(uarg, &info, sizeof(info))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	return 0;
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

/*
 * User memory is never touched with edev->lock held: the user buffer may
 * be one of our own mappings, whose fault handler takes the lock.
 */
static int exanet_ioctl_pkt_alloc(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct exanet_pkt_alloc req;
	u32 i;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	if (req.flags) {
		exanet_dbg(edev, "unknown flags %#x\n", req.flags);
		return -EINVAL;
	}
	ret = exanet_pkt_take(ef, false, &i);
	if (ret)
		return ret;

	req.iface = i;
	req.mmap_offset = EXANET_MMAP_OFFSET(EXANET_MMAP_PKT, i);
	if (copy_to_user(uarg, &req, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer: interface %u freed\n", i);
		exanet_pkt_put(ef, i);
		return -EFAULT;
	}
	return 0;
}

static int exanet_ioctl_pkt_free(struct exanet_drv_file *ef, u32 __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	int ret = 0;
	u32 i;

	if (get_user(i, uarg)) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}

	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
	} else if (i >= edev->num_pkt || !edev->pkt_owner[i]) {
		exanet_dbg(edev, "interface %u not allocated\n", i);
		ret = -EINVAL;
	} else if (edev->pkt_owner[i] != ef) {
		exanet_dbg(edev, "interface %u is another file's\n", i);
		ret = -EACCES;
	} else if (edev->pkt_kernel[i]) {
		exanet_dbg(edev, "interface %u is the kernel path's\n", i);
		ret = -EBUSY;
	} else {
		exanet_pkt_release(edev, i);
	}
	mutex_unlock(&edev->lock);
	return ret;
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

static int exanet_ioctl_mbox_alloc(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct exanet_mbox_alloc req;
	int ret;
	u32 m;

	if (copy_from_user(&req, uarg, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	ret = exanet_mbox_take(ef, req.nslots, false, &m);
	if (ret)
		return ret;

	req.mbox = m;
	req.regs_offset = EXANET_MMAP_OFFSET(EXANET_MMAP_MBOX_REGS, m);
	req.queue_offset = EXANET_MMAP_OFFSET(EXANET_MMAP_MBOX_QUEUE, m);
	req.queue_size = (u64)req.nslots * EXANET_MBOX_SLOT_SIZE;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer: mailbox %u freed\n", m);
		exanet_mbox_put(ef, m);
		return -EFAULT;
	}
	return 0;
}

static int exanet_ioctl_mbox_free(struct exanet_drv_file *ef, u32 __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	int ret = 0;
	u32 m;

	if (get_user(m, uarg)) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}

	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
	} else if (m >= edev->num_mbox || !edev->mbox[m].owner) {
		exanet_dbg(edev, "mailbox %u not allocated\n", m);
		ret = -EINVAL;
	} else if (edev->mbox[m].owner != ef) {
		exanet_dbg(edev, "mailbox %u is another file's\n", m);
		ret = -EACCES;
	} else if (edev->mbox[m].kernel) {
		exanet_dbg(edev, "mailbox %u is the kernel path's\n", m);
		ret = -EBUSY;
	} else {
		exanet_mbox_release(edev, m);
	}
	mutex_unlock(&edev->lock);
	return ret;
}

long exanet_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct exanet_drv_file *ef = file->private_data;
	void __user *uarg = (void __user *)arg;

	if (_IOC_TYPE(cmd) != EXANET_IOC_MAGIC) {
		exanet_dbg(ef->edev, "ioctl %#x: not an exanet ioctl\n", cmd);
		return -ENOTTY;
	}
	/* Interfaces belong to the opener, not to inherited descriptors. */
	if (current->mm != ef->mm) {
		exanet_dbg(ef->edev, "ioctl %#x: not the opener's address space (pid %d)\n",
			   cmd, task_pid_nr(current));
		return -EACCES;
	}

	switch (cmd) {
	case EXANET_IOC_GET_INFO:
		return exanet_ioctl_get_info(ef, uarg);
	case EXANET_IOC_PKT_ALLOC:
		return exanet_ioctl_pkt_alloc(ef, uarg);
	case EXANET_IOC_PKT_FREE:
		return exanet_ioctl_pkt_free(ef, uarg);
	case EXANET_IOC_MBOX_ALLOC:
		return exanet_ioctl_mbox_alloc(ef, uarg);
	case EXANET_IOC_MBOX_FREE:
		return exanet_ioctl_mbox_free(ef, uarg);
	case EXANET_IOC_EVENT_ARM:
		return exanet_ioctl_event_arm(ef, uarg);
	case EXANET_IOC_IP_ATTACH:
		return exanet_ip_ioctl_attach(ef, uarg);
	case EXANET_IOC_IP_PEERS:
		return exanet_ip_ioctl_peers(ef, uarg);
	default:
		return exanet_rdma_ioctl(ef, cmd, uarg);
	}
}
