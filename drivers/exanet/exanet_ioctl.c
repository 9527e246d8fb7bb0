// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: the character device's ioctls.  Each checks its
 * arguments and calls the part that owns the object: interfaces
 * (exanet_iface.c), interrupts (exanet_irq.c), the kernel IP path
 * (exanet_ip.c), RDMA (exanet_rdma.c).
 */

#include <linux/fs.h>
#include <linux/uaccess.h>

#include "exanet_drv.h"

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
