// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: PCI device, character device (open, release), sysfs,
 * module parameters.  Interfaces: exanet_iface.c; ioctls: exanet_ioctl.c;
 * mmap: exanet_mmap.c; RDMA contexts: exanet_ctx.c.
 *
 * The NI exposes 64 packetizer and 64 mailbox interfaces, one 4 KiB MMIO
 * page each (BAR1, BAR2), plus a privileged control page (BAR0).  The
 * driver hands interfaces to open files, stamps them with the file's
 * protection domain (PDID), and lets the owner map exactly its own pages.
 * Mappings are populated on fault and checked against the current owner,
 * so freeing an interface (zap, then free) revokes access even from a
 * mapping created concurrently.
 */

#include <linux/bitops.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "exanet_drv.h"
#include "exa_pci.h"

/* ------------------------------------------------------------ parameters */

static unsigned int default_pdid = EXA_DOMAIN_NONE;
static unsigned int max_user_percent = 50;
static unsigned int retx_timeout_us = EXANET_DEFAULT_RETX_TIMEOUT_US;
static unsigned int retx_max = EXANET_DEFAULT_RETX_MAX;

static int exanet_param_set_pdid(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, EXANET_PDID_NONE, EXANET_PDID_MAX);
}

static const struct kernel_param_ops exanet_pdid_param_ops = {
	.set = exanet_param_set_pdid,
	.get = param_get_uint,
};

static int exanet_param_set_timeout(const char *val,
				    const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, 10 * USEC_PER_SEC);
}

static const struct kernel_param_ops exanet_timeout_param_ops = {
	.set = exanet_param_set_timeout,
	.get = param_get_uint,
};

static int exanet_param_set_retries(const char *val,
				    const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, 255);
}

static const struct kernel_param_ops exanet_retries_param_ops = {
	.set = exanet_param_set_retries,
	.get = param_get_uint,
};

module_param_cb(default_pdid, &exanet_pdid_param_ops, &default_pdid, 0644);
MODULE_PARM_DESC(default_pdid,
		 "Opt-in PDID shared by all processes without a bound ancestor (closed single-user systems only); 0 = each user its own domain (default 0)");
module_param_cb(max_user_percent, &exa_percent_param_ops, &max_user_percent, 0644);
MODULE_PARM_DESC(max_user_percent,
		 "Share of each NI resource (interfaces, mailboxes, ranks, RDMA pages) one user without CAP_SYS_RESOURCE may hold, 1..100 % (default 50)");
module_param_cb(retx_timeout_us, &exanet_timeout_param_ops, &retx_timeout_us, 0444);
MODULE_PARM_DESC(retx_timeout_us,
		 "Initial retransmission timeout in microseconds, programmed at probe (default "
		 __stringify(EXANET_DEFAULT_RETX_TIMEOUT_US) ")");
module_param_cb(retx_max, &exanet_retries_param_ops, &retx_max, 0444);
MODULE_PARM_DESC(retx_max,
		 "Retransmissions before a channel reports TIMEOUT, programmed at probe (default "
		 __stringify(EXANET_DEFAULT_RETX_MAX) ")");

/* ---------------------------------------------------------------- globals */

/* Protects exanet_devices; nests outside exanet_drv_dev.lock. */
DEFINE_MUTEX(exanet_devices_lock);
LIST_HEAD(exanet_devices);

static DEFINE_IDA(exanet_minors);
static dev_t exanet_devt;

/* Reset the NI: every interface disabled, no DMA after the read-back. */
static void exanet_hw_reset(struct exanet_drv_dev *edev)
{
	exanet_wr(edev, EXANET_REG_CTRL, EXANET_CTRL_RESET);
	exanet_rd(edev, EXANET_REG_ID);
}

/* ------------------------------------------------------ limits */

static const char * const exanet_res_names[EXANET_NUM_RES] = {
	[EXANET_RES_PKT]	= "pkt",
	[EXANET_RES_MBOX]	= "mbox",
	[EXANET_RES_RANK]	= "rank",
	[EXANET_RES_RPAGE]	= "rdma_page",
};

/* ------------------------------------------------------- open / release */

static int exanet_open(struct inode *inode, struct file *file)
{
	struct exanet_drv_dev *edev = container_of(inode->i_cdev,
					       struct exanet_drv_dev, cdev);
	struct exanet_drv_file *ef;
	bool dead;
	u32 pdid;
	int ret;

	mutex_lock(&edev->lock);
	dead = edev->dead;
	mutex_unlock(&edev->lock);
	if (dead) {
		exanet_dbg(edev, "device removed\n");
		return -ENODEV;
	}
	if (!current->mm) {
		exanet_dbg(edev, "no user address space\n");
		return -EINVAL;
	}

	pdid = exa_domain_of_current(READ_ONCE(default_pdid));
	if (pdid == EXA_DOMAIN_NONE) {
		exanet_dbg(edev,
			   "uid %u has no user domain and no bound ancestor\n",
			   from_kuid(&init_user_ns, current_euid()));
		return -EACCES;
	}

	ef = kzalloc(sizeof(*ef), GFP_KERNEL);
	if (!ef)
		return -ENOMEM;
	ef->edev = edev;
	/* exa_quota_user_get() and exa_cg_charge() log their refusals. */
	ef->qu = exa_quota_user_get(&edev->quota);
	if (IS_ERR(ef->qu)) {
		ret = PTR_ERR(ef->qu);
		kfree(ef);
		return ret;
	}
	ret = exa_cg_charge(&edev->quota, &ef->cg, RDMACG_RESOURCE_HCA_HANDLE);
	if (ret) {
		exa_quota_user_put(ef->qu);
		kfree(ef);
		return ret;
	}
	ef->pdid = pdid;
	ef->mapping = file->f_mapping;
	ef->mm = current->mm;
	exanet_rdma_file_init(ef);
	exanet_irq_file_open(edev, ef);
	mmgrab(ef->mm);		/* keeps the pointer unique while we compare */
	get_device(&edev->dev);
	file->private_data = ef;
	return nonseekable_open(inode, file);
}

static int exanet_release(struct inode *inode, struct file *file)
{
	struct exanet_drv_file *ef = file->private_data;
	struct exanet_drv_dev *edev = ef->edev;
	u32 i;

	/* The kernel path of IP ends before its interfaces are released. */
	exanet_ip_file_release(ef);
	/* No interrupt reaches the file from here on. */
	exanet_irq_file_release(ef);
	mutex_lock(&edev->lock);
	if (!edev->dead) {
		for (i = 0; i < edev->num_pkt; i++)
			if (edev->pkt_owner[i] == ef)
				exanet_pkt_release(edev, i);
		for (i = 0; i < edev->num_mbox; i++)
			if (edev->mbox[i].owner == ef)
				exanet_mbox_release(edev, i);
	}
	mutex_unlock(&edev->lock);
	/* RDMA pages, rank context, registrations: quiesce, unmap, unpin. */
	exanet_rdma_file_release(ef);

	exa_cg_uncharge(&edev->quota, &ef->cg, RDMACG_RESOURCE_HCA_HANDLE);
	exa_quota_user_put(ef->qu);
	mmdrop(ef->mm);
	put_device(&edev->dev);
	kfree(ef);
	return 0;
}

static const struct file_operations exanet_fops = {
	.owner		= THIS_MODULE,
	.open		= exanet_open,
	.release	= exanet_release,
	.flush		= exanet_flush,
	.poll		= exanet_poll,
	.unlocked_ioctl	= exanet_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= exanet_mmap,
	.llseek		= no_llseek,
};

/* ----------------------------------------------------------------- sysfs */

static struct exanet_drv_dev *to_exanet_dev(struct device *dev)
{
	return container_of(dev, struct exanet_drv_dev, dev);
}

static ssize_t node_id_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", to_exanet_dev(dev)->node_id);
}
static DEVICE_ATTR_RO(node_id);

static ssize_t num_nodes_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_exanet_dev(dev)->num_nodes);
}
static DEVICE_ATTR_RO(num_nodes);

static ssize_t pkt_in_use_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_exanet_dev(dev)->pkt_in_use));
}
static DEVICE_ATTR_RO(pkt_in_use);

static ssize_t mbox_in_use_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_exanet_dev(dev)->mbox_in_use));
}
static DEVICE_ATTR_RO(mbox_in_use);

static ssize_t user_usage_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return exa_quota_show(&to_exanet_dev(dev)->quota, buf);
}
static DEVICE_ATTR_RO(user_usage);

static const char * const exanet_counter_names[EXANET_NUM_COUNTERS] = {
	EXANET_COUNTER_NAMES_INIT
};

static ssize_t counters_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct exanet_drv_dev *edev = to_exanet_dev(dev);
	ssize_t len = 0;
	unsigned int n;

	mutex_lock(&edev->lock);
	if (edev->dead) {
		mutex_unlock(&edev->lock);
		exanet_dbg(edev, "device removed\n");
		return -ENODEV;
	}
	for (n = 0; n < EXANET_NUM_COUNTERS; n++)
		len += sysfs_emit_at(buf, len, "%s %llu\n",
				     exanet_counter_names[n],
				     exanet_read_counter(edev, n));
	mutex_unlock(&edev->lock);
	return len;
}
static DEVICE_ATTR_RO(counters);

static struct attribute *exanet_attrs[] = {
	&dev_attr_node_id.attr,
	&dev_attr_num_nodes.attr,
	&dev_attr_pkt_in_use.attr,
	&dev_attr_mbox_in_use.attr,
	&dev_attr_counters.attr,
	&dev_attr_user_usage.attr,
	NULL,
};

static const struct attribute_group exanet_group = {
	.attrs = exanet_attrs,
};

static const struct attribute_group *exanet_groups[] = {
	&exanet_group,
	&exanet_rdma_group,
	&exanet_irq_group,
	&exanet_odp_group,
	&exanet_coll_group,
	&exanet_ip_group,
	NULL,
};

/* Protection is by PDID, not by file mode (udev rule agrees). */
static char *exanet_devnode(struct device *dev, umode_t *mode)
{
	if (mode)
		*mode = 0666;
	return NULL;
}

static struct class exanet_class = {
	.name		= EXANET_DRV_NAME,
	.owner		= THIS_MODULE,
	.devnode	= exanet_devnode,
	.dev_groups	= exanet_groups,
};

/* ------------------------------------------------------------------- PCI */

static void exanet_dev_release(struct device *dev)
{
	struct exanet_drv_dev *edev = to_exanet_dev(dev);

	if (edev->quota.names)
		exa_quota_destroy(&edev->quota);
	pci_dev_put(edev->pdev);
	kfree(edev);
}

/*
 * Reset the NI, revoke and free every interface, and mark the device dead
 * so that open files only get -ENODEV (ioctl, mmap) or SIGBUS (faults).
 */
static void exanet_quiesce(struct exanet_drv_dev *edev)
{
	u32 i;

	/* Before the interfaces it holds go. */
	exanet_ip_quiesce(edev);
	mutex_lock(&edev->lock);
	if (edev->dead)
		goto unlock;
	WRITE_ONCE(edev->dead, true);
	/* Every interrupt source disarmed; sleepers see a dead device. */
	exanet_hw_reset(edev);
	exanet_irq_quiesce(edev);
	for (i = 0; i < edev->num_pkt; i++)
		if (edev->pkt_owner[i])
			exanet_pkt_release(edev, i);
	for (i = 0; i < edev->num_mbox; i++)
		if (edev->mbox[i].owner)
			exanet_mbox_release(edev, i);
	exanet_rdma_quiesce(edev);
unlock:
	mutex_unlock(&edev->lock);
}

static int exanet_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct exanet_drv_dev *edev;
	void __iomem *ctrl;
	u32 magic, version, caps;
	int index, ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = exa_pci_check_bar(pdev, EXANET_BAR_CTRL, EXANET_BAR_CTRL_SIZE) ?:
	      exa_pci_check_bar(pdev, EXANET_BAR_PKT, EXANET_BAR_PKT_SIZE) ?:
	      exa_pci_check_bar(pdev, EXANET_BAR_MBOX, EXANET_BAR_MBOX_SIZE);
	if (ret)
		return ret;
	/* BAR0 is mapped for the kernel; BAR1/2 are only reserved. */
	ret = pcim_iomap_regions(pdev, BIT(EXANET_BAR_CTRL), EXANET_DRV_NAME);
	if (ret)
		return ret;
	ret = pci_request_region(pdev, EXANET_BAR_PKT, EXANET_DRV_NAME);
	if (ret)
		return ret;
	ret = pci_request_region(pdev, EXANET_BAR_MBOX, EXANET_DRV_NAME);
	if (ret)
		return ret;
	ctrl = pcim_iomap_table(pdev)[EXANET_BAR_CTRL];

	magic = ioread32(ctrl + EXANET_REG_ID);
	version = ioread32(ctrl + EXANET_REG_VERSION);
	if (magic != EXANET_ID_MAGIC || version != EXANET_HW_VERSION) {
		dev_err(&pdev->dev, "unsupported device: id %#x version %u\n",
			magic, version);
		return -ENODEV;
	}

	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret) {
		dev_err(&pdev->dev, "no usable DMA configuration\n");
		return ret;
	}

	index = ida_alloc_max(&exanet_minors, EXANET_MAX_DEVICES - 1,
			      GFP_KERNEL);
	if (index < 0)
		return index;
	edev = kzalloc(sizeof(*edev), GFP_KERNEL);
	if (!edev) {
		ida_free(&exanet_minors, index);
		return -ENOMEM;
	}
	edev->pdev = pci_dev_get(pdev);
	edev->ctrl = ctrl;
	edev->index = index;
	edev->pkt_bar_phys = pci_resource_start(pdev, EXANET_BAR_PKT);
	edev->mbox_bar_phys = pci_resource_start(pdev, EXANET_BAR_MBOX);
	mutex_init(&edev->lock);
	INIT_LIST_HEAD(&edev->list);
	spin_lock_init(&edev->irq_lock);
	INIT_LIST_HEAD(&edev->files);
	INIT_WORK(&edev->fault_work, exanet_odp_work);

	/* From here on, edev is freed by exanet_dev_release(). */
	device_initialize(&edev->dev);
	edev->dev.class = &exanet_class;
	edev->dev.parent = &pdev->dev;
	edev->dev.devt = MKDEV(MAJOR(exanet_devt), index);
	edev->dev.release = exanet_dev_release;
	dev_set_drvdata(&edev->dev, edev);
	ret = dev_set_name(&edev->dev, EXANET_DRV_NAME "%d", index);
	if (ret)
		goto put;

	exanet_hw_reset(edev);
	exanet_wr(edev, EXANET_REG_RETX_TIMEOUT_US, retx_timeout_us);
	exanet_wr(edev, EXANET_REG_RETX_MAX, retx_max);
	edev->node_id = exanet_rd(edev, EXANET_REG_NODE_ID);
	edev->num_nodes = exanet_rd(edev, EXANET_REG_NUM_NODES);
	caps = exanet_rd(edev, EXANET_REG_CAPS);
	edev->num_pkt = min_t(u32, EXANET_CAPS_PKT_IFACES(caps),
			      EXANET_NUM_PKT_IFACES);
	edev->num_mbox = min_t(u32, EXANET_CAPS_MBOX_IFACES(caps),
			       EXANET_NUM_MBOX_IFACES);
	edev->pkt_channels = EXANET_CAPS_PKT_CHANNELS(caps);
	if (!edev->num_pkt || !edev->num_mbox) {
		dev_err(&pdev->dev, "device reports no interfaces (caps %#x)\n",
			caps);
		ret = -ENODEV;
		goto put;
	}
	exa_links_init(&edev->links, &pdev->dev, ctrl, &edev->lock,
		       &edev->dead);

	ret = exanet_rdma_probe(edev);
	if (ret)
		goto put;
	ret = exanet_coll_probe(edev);
	if (ret)
		goto put;
	exanet_irq_probe(edev);
	exanet_odp_probe(edev);
	ret = exa_quota_init(&edev->quota, &edev->dev, dev_name(&edev->dev),
			     exanet_res_names, EXANET_NUM_RES,
			     &max_user_percent);
	if (ret)
		goto put;
	edev->quota.total[EXANET_RES_PKT] = edev->num_pkt;
	edev->quota.total[EXANET_RES_MBOX] = edev->num_mbox;
	edev->quota.total[EXANET_RES_RANK] = EXANET_RDMA_NUM_RANKS;
	edev->quota.total[EXANET_RES_RPAGE] = edev->num_rpages;

	pci_set_master(pdev);

	cdev_init(&edev->cdev, &exanet_fops);
	edev->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&edev->cdev, &edev->dev);
	if (ret)
		goto put;
	ret = exa_links_sysfs_add(&edev->links_sysfs, &edev->links, &edev->dev);
	if (ret)
		goto del;
	pci_set_drvdata(pdev, edev);

	mutex_lock(&exanet_devices_lock);
	list_add_tail(&edev->list, &exanet_devices);
	mutex_unlock(&exanet_devices_lock);

	dev_info(&pdev->dev,
		 "%s: node %u of %u, %u packetizer x %u channels, %u mailboxes\n",
		 dev_name(&edev->dev), edev->node_id, edev->num_nodes,
		 edev->num_pkt, edev->pkt_channels, edev->num_mbox);
	return 0;

del:
	/* The device node was visible: a file may be open already. */
	cdev_device_del(&edev->cdev, &edev->dev);
	exanet_quiesce(edev);
	pci_clear_master(pdev);
put:
	exanet_hw_reset(edev);
	exanet_irq_remove(edev);
	exanet_odp_remove(edev);
	put_device(&edev->dev);
	ida_free(&exanet_minors, index);
	return ret;
}

static void exanet_remove(struct pci_dev *pdev)
{
	struct exanet_drv_dev *edev = pci_get_drvdata(pdev);

	mutex_lock(&exanet_devices_lock);
	list_del_init(&edev->list);
	mutex_unlock(&exanet_devices_lock);

	/* Its files read BAR0, which is unmapped after remove() returns. */
	exa_links_sysfs_remove(&edev->links_sysfs);
	/*
	 * No new opens; open files keep edev alive but see it dead.  The
	 * minor is free for a new device right away: stale files reach edev
	 * through their private data, never through the device number.
	 */
	cdev_device_del(&edev->cdev, &edev->dev);
	ida_free(&exanet_minors, edev->index);
	exanet_quiesce(edev);
	/* After the quiesce: waits for a handler still running. */
	exanet_irq_remove(edev);
	/* No entries (reset), no interrupts: the fault worker ends. */
	exanet_odp_remove(edev);
	pci_clear_master(pdev);
	dev_info(&pdev->dev, "%s removed\n", dev_name(&edev->dev));
	put_device(&edev->dev);
}

/* Reboot or kexec: no DMA into memory the next kernel owns. */
static void exanet_shutdown(struct pci_dev *pdev)
{
	struct exanet_drv_dev *edev = pci_get_drvdata(pdev);

	if (edev)
		exanet_quiesce(edev);
	pci_clear_master(pdev);
}

static const struct pci_device_id exanet_pci_ids[] = {
	{ PCI_DEVICE(EXANET_PCI_VENDOR_ID, EXANET_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, exanet_pci_ids);

static struct pci_driver exanet_pci_driver = {
	.name		= EXANET_DRV_NAME,
	.id_table	= exanet_pci_ids,
	.probe		= exanet_probe,
	.remove		= exanet_remove,
	.shutdown	= exanet_shutdown,
};

/* ---------------------------------------------------------------- module */

static int __init exanet_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&exanet_devt, 0, EXANET_MAX_DEVICES,
				  EXANET_DRV_NAME);
	if (ret)
		return ret;
	ret = class_register(&exanet_class);
	if (ret)
		goto unregister_chrdev;
	ret = exanet_genl_init();
	if (ret)
		goto unregister_class;
	ret = exanet_ctx_driver_register();
	if (ret)
		goto unregister_genl;
	ret = exanet_ip_init();
	if (ret)
		goto exit_rdma;
	ret = pci_register_driver(&exanet_pci_driver);
	if (ret)
		goto exit_ip;
	return 0;

exit_ip:
	exanet_ip_exit();
exit_rdma:
	exanet_ctx_driver_unregister();
unregister_genl:
	exanet_genl_exit();
unregister_class:
	class_unregister(&exanet_class);
unregister_chrdev:
	unregister_chrdev_region(exanet_devt, EXANET_MAX_DEVICES);
	return ret;
}

static void __exit exanet_exit(void)
{
	pci_unregister_driver(&exanet_pci_driver);
	exanet_ip_exit();
	exanet_ctx_driver_unregister();
	exanet_genl_exit();
	class_unregister(&exanet_class);
	unregister_chrdev_region(exanet_devt, EXANET_MAX_DEVICES);
}

module_init(exanet_init);
module_exit(exanet_exit);

MODULE_DESCRIPTION("ExaNet NI: user-level packetizer and mailbox interfaces");
MODULE_AUTHOR("ExaNet fabric stack developers");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXA_CORE);
