// SPDX-License-Identifier: GPL-2.0
/*
 * EXTOLL NIC driver, RMA2 part: /dev/extoll/rma2 endpoints and their
 * ioctls (notification queue, its pointers).  Registrations:
 * extoll_rma2_reg.c; endpoints in general: extoll_ep.c.
 */

#include <linux/bitmap.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "extoll_drv.h"

/* ------------------------------------------------------------------ ioctl */

static int extoll_rma2_set_notiq_size(struct extoll_drv_ep *ep, unsigned long val)
{
	if (!extoll_queue_size_ok(val, RMA2_NOTIQ_MIN_SIZE,
				  RMA2_NOTIQ_MAX_SIZE)) {
		extoll_ep_dbg(ep, "notification queue of %lu bytes\n", val);
		return -EINVAL;
	}
	return extoll_ep_set_queue_size(ep, val);
}

static int extoll_rma2_set_seg_size(struct extoll_drv_ep *ep, unsigned long val)
{
	if (!val || val > RMA2_NOTIQ_MAX_SIZE || (val & (PAGE_SIZE - 1))) {
		extoll_ep_dbg(ep, "segment size %lu\n", val);
		return -EINVAL;
	}
	mutex_lock(&ep->lock);
	ep->seg_size = val;
	mutex_unlock(&ep->lock);
	return 0;
}

/* Read pointer (entries) as stored by the consumer in the RP page. */
u64 extoll_ep_get_rp(struct extoll_drv_ep *ep)
{
	u64 rp = 0;

	mutex_lock(&ep->lock);
	if (ep->q)
		rp = READ_ONCE(*(u64 *)ep->q);
	mutex_unlock(&ep->lock);
	return rp;
}

static u64 extoll_ep_entries(struct extoll_drv_ep *ep)
{
	return ep->unit == EXTOLL_UNIT_RMA ? ep->q_size / RMA2_NOTI_SIZE :
					     ep->q_size / EXTOLL_VELO_SLOT_SIZE;
}

int extoll_ep_set_rp(struct extoll_drv_ep *ep, unsigned long val)
{
	int ret = 0;

	mutex_lock(&ep->lock);
	if (val >= extoll_ep_entries(ep)) {
		extoll_ep_dbg(ep, "read pointer %lu beyond %llu entries\n",
			      val, extoll_ep_entries(ep));
		ret = -EINVAL;
	} else if (ep->q) {
		WRITE_ONCE(*(u64 *)ep->q, val);
	}
	mutex_unlock(&ep->lock);
	return ret;
}

u64 extoll_ep_get_wp(struct extoll_drv_ep *ep)
{
	struct extoll_drv_dev *xdev = ep->xdev;
	u64 wp = 0;

	mutex_lock(&ep->lock);
	if (ep->q) {
		mutex_lock(&xdev->lock);
		if (!xdev->dead)
			wp = extoll_hw_ep_read_wp(xdev, ep->unit, ep->vpid);
		mutex_unlock(&xdev->lock);
	}
	mutex_unlock(&ep->lock);
	return wp;
}

/*
 * The write pointer belongs to the device; the original library "resets"
 * it to 0 right after mapping.  Accept that as long as nothing has been
 * written yet.
 */
int extoll_ep_set_wp(struct extoll_drv_ep *ep, unsigned long val)
{
	if (val) {
		extoll_ep_dbg(ep, "write pointer set to %lu (only 0)\n", val);
		return -EINVAL;
	}
	if (extoll_ep_get_wp(ep)) {
		extoll_ep_dbg(ep, "write pointer reset after the device wrote\n");
		return -EBUSY;
	}
	return 0;
}

static int extoll_rma2_get_info(struct extoll_drv_ep *ep, void __user *uarg)
{
	struct extoll_drv_dev *xdev = ep->xdev;
	struct rma2_ioc_info info;

	memset(&info, 0, sizeof(info));
	info.abi_version = EXTOLL_ABI_VERSION;
	info.nodeid = xdev->node_id;
	info.vpid = ep->vpid;
	info.max_nodes = xdev->max_nodes;
	info.max_vpids = xdev->num_vpids[EXTOLL_UNIT_RMA];
	info.noti_size = RMA2_NOTI_SIZE;
	mutex_lock(&ep->lock);
	info.notiq_size = ep->q_size;
	mutex_unlock(&ep->lock);
	info.req_offset = RMA2_MMAP_REQ_OFFSET;
	info.req_size = RMA2_MMAP_REQ_SIZE;
	info.state_offset = RMA2_MMAP_STATE_OFFSET;
	info.notiq_offset = RMA2_MMAP_NOTIQ_OFFSET;
	if (copy_to_user(uarg, &info, sizeof(info))) {
		extoll_ep_dbg(ep, "bad user pointer\n");
		return -EFAULT;
	}
	return 0;
}

static long extoll_rma2_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	struct extoll_drv_ep *ep = file->private_data;
	struct extoll_drv_dev *xdev = ep->xdev;
	void __user *uarg = (void __user *)arg;
	int ret;

	if (_IOC_TYPE(cmd) != RMA2_IOC_MAGIC) {
		extoll_ep_dbg(ep, "ioctl %#x: not an rma2 ioctl\n", cmd);
		return -ENOTTY;
	}
	ret = extoll_ep_check_caller(ep);
	if (ret)
		return ret;

	switch (cmd) {
	case RMA2_IOCTL_GET_NOTIQ_SIZE:
		return extoll_put_u64(ep, arg, READ_ONCE(ep->q_size));
	case RMA2_IOCTL_SET_NOTIQ_SIZE:
		return extoll_rma2_set_notiq_size(ep, arg);
	case RMA2_IOCTL_SET_NOTIQ_SEGMENT_SIZE:
		return extoll_rma2_set_seg_size(ep, arg);
	case RMA2_IOCTL_GET_NOTIQ_SEGMENT_SIZE:
		return extoll_put_u64(ep, arg, READ_ONCE(ep->seg_size));
	case RMA2_IOCTL_SET_NOTIQ_WP:
		return extoll_ep_set_wp(ep, arg);
	case RMA2_IOCTL_SET_NOTIQ_RP:
		return extoll_ep_set_rp(ep, arg);
	case RMA2_IOCTL_GET_NOTIQ_WP:
		return extoll_put_u64(ep, arg, extoll_ep_get_wp(ep));
	case RMA2_IOCTL_GET_NOTIQ_RP:
		return extoll_put_u64(ep, arg, extoll_ep_get_rp(ep));
	case RMA2_IOCTL_GET_NODEID:
		return extoll_put_u64(ep, arg, xdev->node_id);
	case RMA2_IOCTL_GET_VPID:
		return extoll_put_u64(ep, arg, ep->vpid);
	case RMA2_IOCTL_REGISTER_REGION:
		return extoll_rma2_register(ep, uarg);
	case RMA2_IOCTL_UNREGISTER_REGION:
		return extoll_rma2_unregister(ep, uarg);
	case RMA2_IOCTL_GET_MAXNODEID:
		return extoll_put_u64(ep, arg, RMA2_NODES);
	case RMA2_IOCTL_GET_MAXVPID:
		return extoll_put_u64(ep, arg, xdev->num_vpids[EXTOLL_UNIT_RMA]);
	case RMA2_IOCTL_GET_INFO:
		return extoll_rma2_get_info(ep, uarg);
	case RMA2_IOCTL_SET_PROTDESC:
		return extoll_ep_set_prot(ep, arg);
	case RMA2_IOCTL_GET_PROTDESC:
		return extoll_put_u64(ep, arg, READ_ONCE(ep->prot));
	default:
		extoll_ep_dbg(ep, "unknown ioctl %#x\n", cmd);
		return -ENOTTY;
	}
}

static int extoll_rma2_open(struct inode *inode, struct file *file)
{
	return extoll_ep_open(inode, file, EXTOLL_UNIT_RMA);
}

static int extoll_rma2_mmap(struct file *file, struct vm_area_struct *vma)
{
	return extoll_mmap_common(file, vma,
				  RMA2_MMAP_NOTIQ_OFFSET >> PAGE_SHIFT);
}

const struct file_operations extoll_rma2_fops = {
	.owner		= THIS_MODULE,
	.open		= extoll_rma2_open,
	.release	= extoll_ep_release,
	.unlocked_ioctl	= extoll_rma2_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= extoll_rma2_mmap,
	.llseek		= no_llseek,
};
