// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: the collective (allreduce) unit.
 *
 * A file that holds an RDMA page may map the page's collective page
 * (COLL_BIND) and create groups on it: slots of the NI's group table
 * stamped with the file's PDID, so that the NI takes collective packets
 * only from the members of the same job.  Groups die with their page
 * (free, close, process death).  ABI: uapi/exanet_coll.h.
 */
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <exanet_coll.h>

#include "exanet_drv.h"

static unsigned int max_coll_groups_per_file = 16;
module_param(max_coll_groups_per_file, uint, 0644);
MODULE_PARM_DESC(max_coll_groups_per_file,
		 "Collective groups one open file may hold (default 16)");

int exanet_coll_probe(struct exanet_drv_dev *edev)
{
	struct pci_dev *pdev = edev->pdev;
	u32 caps;
	int ret;

	edev->num_cgroups = 0;
	if (!edev->num_rpages ||
	    !(pci_resource_flags(pdev, EXANET_BAR_COLL) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, EXANET_BAR_COLL) < EXANET_BAR_COLL_SIZE) {
		dev_info(&pdev->dev, "no collective unit (BAR%d)\n",
			 EXANET_BAR_COLL);
		return 0;
	}
	ret = pci_request_region(pdev, EXANET_BAR_COLL, EXANET_DRV_NAME);
	if (ret)
		return ret;
	edev->coll_bar_phys = pci_resource_start(pdev, EXANET_BAR_COLL);
	caps = exanet_rd(edev, EXANET_REG_COLL_CAPS);
	edev->num_cgroups = min_t(u32, EXANET_COLL_CAPS_GROUPS(caps),
				  EXANET_COLL_GROUPS);
	dev_info(&pdev->dev, "collective unit: %u groups of up to %u members\n",
		 edev->num_cgroups, EXANET_COLL_CAPS_MEMBERS(caps));
	return 0;
}

/* Disable group g: its operation ends, no DMA for it afterwards. */
static void exanet_cgroup_release(struct exanet_drv_dev *edev, u32 g)
{
	struct exanet_drv_file *ef = edev->cgroup[g].owner;

	lockdep_assert_held(&edev->lock);
	exanet_wr(edev, EXANET_REG_COLL_SEL, g);
	exanet_wr(edev, EXANET_REG_COLL_G_CTRL, 0);
	exanet_wr(edev, EXANET_REG_COLL_G_PDID, 0);
	exanet_rd(edev, EXANET_REG_COLL_G_CTRL);
	edev->cgroup[g].owner = NULL;
	edev->cgroups_in_use--;
	ef->ncgroup--;
}

/* RDMA page p leaves its owner: so do the groups it drives. */
void exanet_coll_page_release(struct exanet_drv_dev *edev, u32 p)
{
	u32 g;

	lockdep_assert_held(&edev->lock);
	for (g = 0; g < edev->num_cgroups; g++)
		if (edev->cgroup[g].owner && edev->cgroup[g].page == p)
			exanet_cgroup_release(edev, g);
	exanet_zap(edev->rpage_owner[p], EXANET_MMAP_COLL, p,
		   EXANET_COLL_PAGE_SIZE);
}

static int exanet_ioctl_coll_bind(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct exanet_coll_bind req;
	int ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	if (req.flags) {
		exanet_dbg(edev, "unknown flags %#x\n", req.flags);
		return -EINVAL;
	}
	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
	} else if (!edev->num_cgroups) {
		exanet_dbg(edev, "no collective unit\n");
		ret = -ENODEV;
	} else if (req.page >= edev->num_rpages ||
		   edev->rpage_owner[req.page] != ef) {
		exanet_dbg(edev, "page %u not held\n", req.page);
		ret = -EINVAL;
	}
	mutex_unlock(&edev->lock);
	if (ret)
		return ret;
	req.mmap_offset = EXANET_MMAP_OFFSET(EXANET_MMAP_COLL, req.page);
	req.mmap_size = EXANET_COLL_PAGE_SIZE;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	return 0;
}

static int exanet_coll_members_ok(struct exanet_drv_dev *edev,
				  const struct exanet_coll_group_create *req,
				  const u32 *nodes)
{
	u32 i;

	if (nodes[req->my_rank] != edev->node_id) {
		exanet_dbg(edev, "member %u is node %u, not us\n",
			   req->my_rank, nodes[req->my_rank]);
		return -EINVAL;
	}
	for (i = 0; i < req->size; i++) {
		if (nodes[i] >= edev->num_nodes) {
			exanet_dbg(edev, "member %u: no node %u\n",
				   i, nodes[i]);
			return -EINVAL;
		}
	}
	return 0;
}

/* edev->lock held: program slot g and enable it. */
static int exanet_cgroup_program(struct exanet_drv_dev *edev, u32 g,
				 struct exanet_drv_file *ef,
				 const struct exanet_coll_group_create *req,
				 const u32 *nodes)
{
	u32 i;

	exanet_wr(edev, EXANET_REG_COLL_SEL, g);
	exanet_wr(edev, EXANET_REG_COLL_G_CTRL, 0);
	exanet_wr(edev, EXANET_REG_COLL_G_PDID, ef->pdid);
	exanet_wr(edev, EXANET_REG_COLL_G_PAGE, req->page);
	exanet_wr(edev, EXANET_REG_COLL_G_KEY, req->key);
	exanet_wr(edev, EXANET_REG_COLL_G_SIZE, req->size);
	exanet_wr(edev, EXANET_REG_COLL_G_MYRANK, req->my_rank);
	exanet_wr(edev, EXANET_REG_COLL_G_MIDX, 0);
	for (i = 0; i < req->size; i++)
		exanet_wr(edev, EXANET_REG_COLL_G_MNODE, nodes[i]);
	exanet_wr(edev, EXANET_REG_COLL_G_CTRL, EXANET_COLL_G_ENABLE);
	if (!(exanet_rd(edev, EXANET_REG_COLL_G_CTRL) & EXANET_COLL_G_ENABLE)) {
		exanet_dbg(edev, "NI refused slot %u\n", g);
		return -EIO;
	}
	return 0;
}

static int exanet_ioctl_coll_create(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct exanet_coll_group_create req;
	u32 *nodes, g, free = U32_MAX;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	if (req.flags || !req.size || req.size > EXANET_COLL_MAX_MEMBERS ||
	    req.my_rank >= req.size) {
		exanet_dbg(edev, "flags %#x size %u rank %u (1..%u members)\n",
			   req.flags, req.size, req.my_rank,
			   EXANET_COLL_MAX_MEMBERS);
		return -EINVAL;
	}
	nodes = memdup_user(u64_to_user_ptr(req.members),
			    array_size(req.size, sizeof(*nodes)));
	if (IS_ERR(nodes)) {
		exanet_dbg(edev, "member list of %u not read (%ld)\n",
			   req.size, PTR_ERR(nodes));
		return PTR_ERR(nodes);
	}
	ret = exanet_coll_members_ok(edev, &req, nodes);
	if (ret)
		goto out;

	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
		goto unlock;
	}
	if (!edev->num_cgroups) {
		exanet_dbg(edev, "no collective unit\n");
		ret = -ENODEV;
		goto unlock;
	}
	if (req.page >= edev->num_rpages || edev->rpage_owner[req.page] != ef) {
		exanet_dbg(edev, "page %u not held\n", req.page);
		ret = -EINVAL;
		goto unlock;
	}
	if (ef->ncgroup >= READ_ONCE(max_coll_groups_per_file)) {
		exanet_dbg(edev, "file holds max_coll_groups_per_file\n");
		ret = -ENOSPC;
		goto unlock;
	}
	for (g = 0; g < edev->num_cgroups; g++) {
		struct exanet_drv_cgroup *cg = &edev->cgroup[g];

		if (!cg->owner) {
			free = min(free, g);
			continue;
		}
		/* Packets find a group by (PDID, key, rank): keep it unique. */
		if (cg->owner->pdid == ef->pdid && cg->key == req.key &&
		    cg->my_rank == req.my_rank) {
			exanet_dbg(edev, "key %#x rank %u exists\n",
				   req.key, req.my_rank);
			ret = -EEXIST;
			goto unlock;
		}
	}
	if (free == U32_MAX) {
		exanet_dbg(edev, "no free slot\n");
		ret = -ENOSPC;
		goto unlock;
	}
	ret = exanet_cgroup_program(edev, free, ef, &req, nodes);
	if (ret) {
		exanet_wr(edev, EXANET_REG_COLL_G_CTRL, 0);
		goto unlock;
	}
	edev->cgroup[free] = (struct exanet_drv_cgroup){
		.owner = ef, .page = req.page, .key = req.key,
		.my_rank = req.my_rank,
	};
	edev->cgroups_in_use++;
	ef->ncgroup++;
	req.group = free;
unlock:
	mutex_unlock(&edev->lock);
	if (!ret && copy_to_user(uarg, &req, sizeof(req))) {
		mutex_lock(&edev->lock);
		if (!edev->dead && edev->cgroup[free].owner == ef)
			exanet_cgroup_release(edev, free);
		mutex_unlock(&edev->lock);
		exanet_dbg(edev, "bad user pointer: group %u freed\n", free);
		ret = -EFAULT;
	}
out:
	kfree(nodes);
	return ret;
}

static int exanet_coll_destroy(struct exanet_drv_file *ef, u32 g)
{
	struct exanet_drv_dev *edev = ef->edev;
	int ret = 0;

	mutex_lock(&edev->lock);
	if (edev->dead) {
		exanet_dbg(edev, "device removed\n");
		ret = -ENODEV;
	} else if (g >= edev->num_cgroups || edev->cgroup[g].owner != ef) {
		exanet_dbg(edev, "group %u not held\n", g);
		ret = -EINVAL;
	} else {
		exanet_cgroup_release(edev, g);
	}
	mutex_unlock(&edev->lock);
	return ret;
}

long exanet_coll_ioctl(struct exanet_drv_file *ef, unsigned int cmd,
		       void __user *uarg)
{
	u32 v;

	switch (cmd) {
	case EXANET_IOC_COLL_BIND:
		return exanet_ioctl_coll_bind(ef, uarg);
	case EXANET_IOC_COLL_GROUP_CREATE:
		return exanet_ioctl_coll_create(ef, uarg);
	case EXANET_IOC_COLL_GROUP_DESTROY:
		if (get_user(v, (u32 __user *)uarg)) {
			exanet_dbg(ef->edev, "bad user pointer\n");
			return -EFAULT;
		}
		return exanet_coll_destroy(ef, v);
	default:
		exanet_dbg(ef->edev, "unknown ioctl %#x\n", cmd);
		return -ENOTTY;
	}
}

/* edev->lock held. */
int exanet_coll_mmap_check(struct exanet_drv_file *ef, u32 index,
			   unsigned long len)
{
	struct exanet_drv_dev *edev = ef->edev;

	lockdep_assert_held(&edev->lock);
	if (!edev->num_cgroups || index >= edev->num_rpages) {
		exanet_dbg(edev, "no collective page %u\n", index);
		return -EINVAL;
	}
	if (edev->rpage_owner[index] != ef) {
		exanet_dbg(edev, "collective page %u is not this file's\n", index);
		return -EACCES;
	}
	if (len != EXANET_COLL_PAGE_SIZE) {
		exanet_dbg(edev, "collective page %u with length %lu\n", index, len);
		return -EINVAL;
	}
	return 0;
}

/* edev->lock held. */
int exanet_coll_fault_pfn(struct exanet_drv_file *ef, u32 index,
			  unsigned long page, unsigned long *pfn)
{
	struct exanet_drv_dev *edev = ef->edev;

	lockdep_assert_held(&edev->lock);
	if (!edev->num_cgroups || index >= edev->num_rpages ||
	    edev->rpage_owner[index] != ef || page) {
		exanet_dbg(edev, "collective page %u offset %lu not mapped for this file\n",
			   index, page);
		return -EACCES;
	}
	*pfn = PHYS_PFN(edev->coll_bar_phys) +
	       index * (EXANET_COLL_PAGE_SIZE >> PAGE_SHIFT);
	return 0;
}

/* --------------------------------------------------------------- sysfs */

static ssize_t coll_groups_in_use_show(struct device *dev,
				       struct device_attribute *attr, char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(edev->cgroups_in_use));
}
static DEVICE_ATTR_RO(coll_groups_in_use);

/* coll/<counter>: one file per NI counter, var = its index. */
static ssize_t coll_counter_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(dev);
	unsigned long n = (unsigned long)container_of(attr,
				struct dev_ext_attribute, attr)->var;
	u64 v;

	mutex_lock(&edev->lock);
	if (edev->dead || !edev->num_cgroups) {
		mutex_unlock(&edev->lock);
		return -ENODEV;
	}
	v = lo_hi_readq(edev->ctrl + EXANET_REG_COLL_COUNTER(n));
	mutex_unlock(&edev->lock);
	return sysfs_emit(buf, "%llu\n", v);
}

#define COLL_COUNTER(_name, _n)						\
	static struct dev_ext_attribute coll_cnt_##_name = {		\
		__ATTR(_name, 0444, coll_counter_show, NULL),		\
		(void *)(_n) }
COLL_COUNTER(ops, EXANET_CCNT_OPS);
COLL_COUNTER(done, EXANET_CCNT_DONE);
COLL_COUNTER(errors, EXANET_CCNT_ERRORS);
COLL_COUNTER(tx_blocks, EXANET_CCNT_TX_BLOCKS);
COLL_COUNTER(tx_bytes, EXANET_CCNT_TX_BYTES);
COLL_COUNTER(retransmits, EXANET_CCNT_RETRANSMITS);
COLL_COUNTER(rx_blocks, EXANET_CCNT_RX_BLOCKS);
COLL_COUNTER(rx_bytes, EXANET_CCNT_RX_BYTES);
COLL_COUNTER(rx_duplicates, EXANET_CCNT_RX_DUPLICATES);
COLL_COUNTER(rx_early, EXANET_CCNT_RX_EARLY);
COLL_COUNTER(rx_corrupt, EXANET_CCNT_RX_CORRUPT);
COLL_COUNTER(rx_refused, EXANET_CCNT_RX_REFUSED);
COLL_COUNTER(rx_bad, EXANET_CCNT_RX_BAD);
COLL_COUNTER(probes, EXANET_CCNT_PROBES);
COLL_COUNTER(timeouts, EXANET_CCNT_TIMEOUTS);

static struct attribute *exanet_coll_counter_attrs[] = {
	&coll_cnt_ops.attr.attr,
	&coll_cnt_done.attr.attr,
	&coll_cnt_errors.attr.attr,
	&coll_cnt_tx_blocks.attr.attr,
	&coll_cnt_tx_bytes.attr.attr,
	&coll_cnt_retransmits.attr.attr,
	&coll_cnt_rx_blocks.attr.attr,
	&coll_cnt_rx_bytes.attr.attr,
	&coll_cnt_rx_duplicates.attr.attr,
	&coll_cnt_rx_early.attr.attr,
	&coll_cnt_rx_corrupt.attr.attr,
	&coll_cnt_rx_refused.attr.attr,
	&coll_cnt_rx_bad.attr.attr,
	&coll_cnt_probes.attr.attr,
	&coll_cnt_timeouts.attr.attr,
	&dev_attr_coll_groups_in_use.attr,
	NULL,
};

static umode_t exanet_coll_visible(struct kobject *kobj, struct attribute *a,
				   int n)
{
	struct exanet_drv_dev *edev = dev_get_drvdata(kobj_to_dev(kobj));

	return edev && edev->num_cgroups ? a->mode : 0;
}

const struct attribute_group exanet_coll_group = {
	.name = "coll",
	.attrs = exanet_coll_counter_attrs,
	.is_visible = exanet_coll_visible,
};
