// SPDX-License-Identifier: GPL-2.0
/*
 * EXTOLL NIC driver, VELO2 part: /dev/extoll/velo2 endpoints.  Each open
 * file owns one VELO VPID: its requester page, its WC-state page and a
 * receive mailbox (DMA coherent ring of slots, read-pointer page first)
 * that is allocated and enabled by the first mmap of the mailbox area.
 */

#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/uaccess.h>

#include "extoll_drv.h"

static int extoll_velo2_set_mbox_size(struct extoll_drv_ep *ep, u64 __user *uarg)
{
	u64 val;

	if (get_user(val, uarg)) {
		extoll_ep_dbg(ep, "bad user pointer\n");
		return -EFAULT;
	}
	if (!extoll_queue_size_ok(val, VELO2_MBOX_MIN_SIZE,
				  VELO2_MBOX_MAX_SIZE)) {
		extoll_ep_dbg(ep, "mailbox of %llu bytes\n", val);
		return -EINVAL;
	}
	return extoll_ep_set_queue_size(ep, val);
}

static int extoll_velo2_set_seg_size(struct extoll_drv_ep *ep, u64 __user *uarg)
{
	u64 val;

	if (get_user(val, uarg)) {
		extoll_ep_dbg(ep, "bad user pointer\n");
		return -EFAULT;
	}
	if (!val || val > VELO2_MBOX_MAX_SIZE || (val & (PAGE_SIZE - 1))) {
		extoll_ep_dbg(ep, "segment size %llu\n", val);
		return -EINVAL;
	}
	mutex_lock(&ep->lock);
	ep->seg_size = val;
	mutex_unlock(&ep->lock);
	return 0;
}

static int extoll_velo2_set_prot(struct extoll_drv_ep *ep, u64 __user *uarg)
{
	u64 val;

	if (get_user(val, uarg)) {
		extoll_ep_dbg(ep, "bad user pointer\n");
		return -EFAULT;
	}
	return extoll_ep_set_prot(ep, val);
}

static int extoll_velo2_get_info(struct extoll_drv_ep *ep, void __user *uarg)
{
	struct extoll_drv_dev *xdev = ep->xdev;
	struct velo2_ioc_info info;

	memset(&info, 0, sizeof(info));
	info.abi_version = EXTOLL_ABI_VERSION;
	info.nodeid = xdev->node_id;
	info.vpid = ep->vpid;
	info.max_vpids = xdev->num_vpids[EXTOLL_UNIT_VELO];
	info.slot_size = EXTOLL_VELO_SLOT_SIZE;
	if (xdev->velo_win_phys)
		info.flags |= VELO2_INFO_SEND_WINDOW;
	mutex_lock(&ep->lock);
	info.mbox_size = ep->q_size;
	mutex_unlock(&ep->lock);
	info.req_offset = VELO2_MMAP_REQ_OFFSET;
	info.state_offset = VELO2_MMAP_STATE_OFFSET;
	info.mbox_offset = VELO2_MMAP_MBOX_OFFSET;
	if (copy_to_user(uarg, &info, sizeof(info))) {
		extoll_ep_dbg(ep, "bad user pointer\n");
		return -EFAULT;
	}
	return 0;
}

static long extoll_velo2_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	struct extoll_drv_ep *ep = file->private_data;
	struct extoll_drv_dev *xdev = ep->xdev;
	int ret;

	if (_IOC_TYPE(cmd) != VELO2_IOC_MAGIC) {
		extoll_ep_dbg(ep, "ioctl %#x: not a velo2 ioctl\n", cmd);
		return -ENOTTY;
	}
	ret = extoll_ep_check_caller(ep);
	if (ret)
		return ret;

	switch (cmd) {
	case VELO2_IOCG_GET_RP:
		return extoll_put_u64(ep, arg, extoll_ep_get_rp(ep));
	case VELO2_IOCT_SET_RP:
		return extoll_ep_set_rp(ep, arg);
	case VELO2_IOCG_GET_WP:
		return extoll_put_u64(ep, arg, extoll_ep_get_wp(ep));
	case VELO2_IOCT_SET_WP:
		return extoll_ep_set_wp(ep, arg);
	case VELO2_IOCG_GET_VPID:
		return extoll_put_u64(ep, arg, ep->vpid);
	case VELO2_IOCG_GET_MBOX_SIZE:
		return extoll_put_u64(ep, arg, READ_ONCE(ep->q_size));
	case VELO2_IOCG_SET_MBOX_SIZE:
		return extoll_velo2_set_mbox_size(ep, (u64 __user *)arg);
	case VELO2_IOCG_GET_SEGMENT_SIZE:
		return extoll_put_u64(ep, arg, READ_ONCE(ep->seg_size));
	case VELO2_IOCG_SET_SEGMENT_SIZE:
		return extoll_velo2_set_seg_size(ep, (u64 __user *)arg);
	case VELO2_IOCG_GET_NODEID:
		return extoll_put_u64(ep, arg, xdev->node_id);
	case VELO2_IOCG_GET_PROCNUM:
		return extoll_put_u64(ep, arg, xdev->num_vpids[EXTOLL_UNIT_VELO]);
	case VELO2_IOCG_GET_NODENUM:
		return extoll_put_u64(ep, arg, xdev->max_nodes);
	case VELO2_IOCG_GET_SLOT_SIZE:
		return extoll_put_u64(ep, arg, EXTOLL_VELO_SLOT_SIZE);
	case VELO2_IOCG_GET_INFO:
		return extoll_velo2_get_info(ep, (void __user *)arg);
	case VELO2_IOCG_SET_TX_PROTDESC:
	case VELO2_IOCG_SET_RX_PROTDESC:
		return extoll_velo2_set_prot(ep, (u64 __user *)arg);
	case VELO2_IOCG_GET_TX_PROTDESC:
	case VELO2_IOCG_GET_RX_PROTDESC:
		return extoll_put_u64(ep, arg, READ_ONCE(ep->prot));
	default:
		extoll_ep_dbg(ep, "unknown ioctl %#x\n", cmd);
		return -ENOTTY;
	}
}

static int extoll_velo2_open(struct inode *inode, struct file *file)
{
	return extoll_ep_open(inode, file, EXTOLL_UNIT_VELO);
}

static int extoll_velo2_mmap(struct file *file, struct vm_area_struct *vma)
{
	return extoll_mmap_common(file, vma,
				  VELO2_MMAP_MBOX_OFFSET >> PAGE_SHIFT);
}

const struct file_operations extoll_velo2_fops = {
	.owner		= THIS_MODULE,
	.open		= extoll_velo2_open,
	.release	= extoll_ep_release,
	.unlocked_ioctl	= extoll_velo2_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= extoll_velo2_mmap,
	.llseek		= no_llseek,
};
