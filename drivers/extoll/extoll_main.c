// SPDX-License-Identifier: GPL-2.0
/*
 * EXTOLL NIC driver, core part: PCI probe/remove, the "extoll" class with
 * /dev/extoll/rma2 and /dev/extoll/velo2, sysfs, module parameters of the
 * device.  Endpoints (one open file = one VPID), their queues and the
 * common mmap/fault path: extoll_ep.c; registrations: extoll_rma2_reg.c.
 *
 * Locking:
 *   ep->lock   per endpoint state (queue size, queue pointer, regions);
 *              never held while touching user memory (mmap() runs with
 *              mmap_lock held and takes it).
 *   xdev->lock VPID and ATU tables and every register access; nests inside
 *              ep->lock; never held while touching user memory (our fault
 *              handler takes it).
 */

#include <linux/bitmap.h>
#include <linux/dma-mapping.h>
#include <linux/error-injection.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "extoll_drv.h"

/* The table is one DMA coherent allocation: at most 4 MiB (512 Ki entries). */
#define EXTOLL_ATU_TABLE_MAX	(512 * 1024)

static unsigned int atu_entries = 65536;

static int extoll_param_set_atu(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 2, EXTOLL_ATU_TABLE_MAX);
}

static const struct kernel_param_ops extoll_atu_param_ops = {
	.set = extoll_param_set_atu,
	.get = param_get_uint,
};

module_param_cb(atu_entries, &extoll_atu_param_ops, &atu_entries, 0444);

MODULE_PARM_DESC(atu_entries,
		 "ATU entries per device = 4 KiB pages that can be registered at once, 2..524288 (default 65536 = 256 MiB)");

static unsigned int max_user_percent = 50;

module_param_cb(max_user_percent, &exa_percent_param_ops,
		&max_user_percent, 0644);
MODULE_PARM_DESC(max_user_percent,
		 "Share of each NIC resource (RMA and VELO VPIDs, ATU entries, queue budget) one user without CAP_SYS_RESOURCE may hold, 1..100 % (default 50)");

static const char * const extoll_res_names[EXTOLL_NUM_RES] = {
	[EXTOLL_RES_RMA_VPID]	= "rma_vpid",
	[EXTOLL_RES_VELO_VPID]	= "velo_vpid",
	[EXTOLL_RES_ATU]	= "atu_entries",
	[EXTOLL_RES_QUEUE]	= "queue_bytes",
};

static DEFINE_IDA(extoll_ids);
static dev_t extoll_devt;

/* --------------------------------------------------------------- sysfs */

static struct extoll_drv_dev *to_xdev(struct device *dev)
{
	return container_of(dev, struct extoll_drv_cdev, dev)->xdev;
}

static ssize_t node_id_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", to_xdev(dev)->node_id);
}
static DEVICE_ATTR_RO(node_id);

static ssize_t vpids_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct extoll_drv_cdev *xc = container_of(dev, struct extoll_drv_cdev, dev);

	return sysfs_emit(buf, "%u\n", xc->xdev->num_vpids[xc->unit]);
}
static DEVICE_ATTR_RO(vpids);

static ssize_t vpids_in_use_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct extoll_drv_cdev *xc = container_of(dev, struct extoll_drv_cdev, dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(xc->xdev->in_use[xc->unit]));
}
static DEVICE_ATTR_RO(vpids_in_use);

static ssize_t registered_pages_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_xdev(dev)->atu_used));
}
static DEVICE_ATTR_RO(registered_pages);

/* Evidence for tests that deregistration and teardown unpin everything. */
static ssize_t pinned_pages_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  (long long)atomic64_read(&to_xdev(dev)->pinned_pages));
}
static DEVICE_ATTR_RO(pinned_pages);

static ssize_t atu_entries_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_xdev(dev)->atu_entries);
}
static DEVICE_ATTR_RO(atu_entries);

static ssize_t queue_bytes_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(to_xdev(dev)->q_bytes));
}
static DEVICE_ATTR_RO(queue_bytes);

static ssize_t user_usage_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return exa_quota_show(&to_xdev(dev)->quota, buf);
}
static DEVICE_ATTR_RO(user_usage);

static const char * const extoll_counter_names[EXTOLL_NUM_COUNTERS] = {
	EXTOLL_COUNTER_NAMES_INIT
};

static ssize_t counters_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct extoll_drv_dev *xdev = to_xdev(dev);
	ssize_t len = 0;
	unsigned int n;

	mutex_lock(&xdev->lock);
	if (xdev->dead) {
		mutex_unlock(&xdev->lock);
		extoll_dbg(xdev, "device removed\n");
		return -ENODEV;
	}
	for (n = 0; n < EXTOLL_NUM_COUNTERS; n++)
		len += sysfs_emit_at(buf, len, "%s %llu\n",
				     extoll_counter_names[n],
				     extoll_hw_read_counter(xdev, n));
	mutex_unlock(&xdev->lock);
	return len;
}
static DEVICE_ATTR_RO(counters);

static struct attribute *extoll_attrs[] = {
	&dev_attr_user_usage.attr,
	&dev_attr_counters.attr,
	&dev_attr_queue_bytes.attr,
	&dev_attr_node_id.attr,
	&dev_attr_vpids.attr,
	&dev_attr_vpids_in_use.attr,
	&dev_attr_registered_pages.attr,
	&dev_attr_pinned_pages.attr,
	&dev_attr_atu_entries.attr,
	NULL,
};
ATTRIBUTE_GROUPS(extoll);

/* /dev/extoll/rma2 for the first device, /dev/extoll/rma2.N for others. */
static char *extoll_devnode(struct device *dev, umode_t *mode)
{
	struct extoll_drv_cdev *xc = container_of(dev, struct extoll_drv_cdev, dev);

	if (mode)
		*mode = 0666;
	if (xc->xdev->index)
		return kasprintf(GFP_KERNEL, "extoll/%s.%u",
				 extoll_unit_name(xc->unit), xc->xdev->index);
	return kasprintf(GFP_KERNEL, "extoll/%s", extoll_unit_name(xc->unit));
}

static struct class extoll_class = {
	.name		= EXTOLL_DRV_NAME,
	.owner		= THIS_MODULE,
	.devnode	= extoll_devnode,
	.dev_groups	= extoll_groups,
};

/* ----------------------------------------------------------------- PCI */

static void extoll_cdev_release(struct device *dev)
{
	struct extoll_drv_cdev *xc = container_of(dev, struct extoll_drv_cdev, dev);

	extoll_dev_put(xc->xdev);
}

static const struct file_operations *extoll_unit_fops[EXTOLL_NUM_UNITS] = {
	[EXTOLL_UNIT_RMA]	= &extoll_rma2_fops,
	[EXTOLL_UNIT_VELO]	= &extoll_velo2_fops,
};

/* The links view first: its files read BAR0, unmapped after remove(). */
static void extoll_del_cdev(struct extoll_drv_cdev *xc)
{
	exa_links_sysfs_remove(&xc->links_sysfs);
	cdev_device_del(&xc->cdev, &xc->dev);
}

static int extoll_add_cdevs(struct extoll_drv_dev *xdev)
{
	int u, ret;

	for (u = 0; u < EXTOLL_NUM_UNITS; u++) {
		struct extoll_drv_cdev *xc = &xdev->cdevs[u];

		xc->xdev = xdev;
		xc->unit = u;
		kref_get(&xdev->ref);
		device_initialize(&xc->dev);
		xc->dev.class = &extoll_class;
		xc->dev.parent = &xdev->pdev->dev;
		xc->dev.devt = MKDEV(MAJOR(extoll_devt),
				     xdev->index * EXTOLL_NUM_UNITS + u);
		xc->dev.release = extoll_cdev_release;
		ret = dev_set_name(&xc->dev, "%s%u-%s", EXTOLL_DRV_NAME,
				   xdev->index, extoll_unit_name(u));
		if (!ret) {
			cdev_init(&xc->cdev, extoll_unit_fops[u]);
			xc->cdev.owner = THIS_MODULE;
			ret = cdev_device_add(&xc->cdev, &xc->dev);
		}
		if (!ret) {
			ret = exa_links_sysfs_add(&xc->links_sysfs, &xdev->links,
						  &xc->dev);
			if (ret)
				cdev_device_del(&xc->cdev, &xc->dev);
		}
		if (ret) {
			put_device(&xc->dev);
			while (--u >= 0) {
				extoll_del_cdev(&xdev->cdevs[u]);
				put_device(&xdev->cdevs[u].dev);
			}
			return ret;
		}
	}
	return 0;
}

static int extoll_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct extoll_drv_dev *xdev;
	char cg_name[16];
	size_t atu_bytes;
	int index, ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	/* ATU entries carry 48-bit bus addresses. */
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(48));
	if (ret) {
		dev_err(&pdev->dev, "no usable DMA configuration\n");
		return ret;
	}
	/*
	 * The ATU takes one entry per 4 KiB page of a region (the driver
	 * walks the mapped region page by page): DMA segments of any length.
	 */
	ret = dma_set_max_seg_size(&pdev->dev, UINT_MAX);
	if (ret)
		return ret;
	index = ida_alloc_max(&extoll_ids, EXTOLL_MAX_DEVICES - 1, GFP_KERNEL);
	if (index < 0)
		return index;
	xdev = kzalloc(sizeof(*xdev), GFP_KERNEL);
	if (!xdev) {
		ida_free(&extoll_ids, index);
		return -ENOMEM;
	}
	kref_init(&xdev->ref);
	xdev->pdev = pci_dev_get(pdev);
	xdev->index = index;
	mutex_init(&xdev->lock);

	/* Maps the privileged BAR, checks the id, reads geometry. */
	ret = extoll_hw_probe(xdev);
	if (ret)
		goto put;

	xdev->atu_entries = min_t(u32, xdev->atu_entries, atu_entries);
	if (xdev->atu_entries < 2) {
		dev_err(&pdev->dev, "ATU too small (%u entries)\n",
			xdev->atu_entries);
		ret = -ENODEV;
		goto put;
	}
	atu_bytes = PAGE_ALIGN((size_t)xdev->atu_entries * 8);
	xdev->atu = dma_alloc_coherent(&pdev->dev, atu_bytes, &xdev->atu_dma,
				       GFP_KERNEL);
	xdev->atu_map = bitmap_zalloc(xdev->atu_entries, GFP_KERNEL);
	if (!xdev->atu || !xdev->atu_map) {
		ret = -ENOMEM;
		goto put;
	}
	set_bit(0, xdev->atu_map);	/* NLA 0 is never valid */

	snprintf(cg_name, sizeof(cg_name), EXTOLL_DRV_NAME "%d", index);
	ret = exa_quota_init(&xdev->quota, &pdev->dev, cg_name,
			     extoll_res_names, EXTOLL_NUM_RES,
			     &max_user_percent);
	if (ret)
		goto put;
	xdev->quota.total[EXTOLL_RES_RMA_VPID] = xdev->num_vpids[EXTOLL_UNIT_RMA];
	xdev->quota.total[EXTOLL_RES_VELO_VPID] = xdev->num_vpids[EXTOLL_UNIT_VELO];
	xdev->quota.total[EXTOLL_RES_ATU] = xdev->atu_entries - 1;
	xdev->quota.total[EXTOLL_RES_QUEUE] = extoll_queue_budget();

	mutex_lock(&xdev->lock);
	extoll_hw_reset(xdev);
	extoll_hw_atu_program(xdev);
	mutex_unlock(&xdev->lock);
	pci_set_master(pdev);

	ret = extoll_add_cdevs(xdev);
	if (ret)
		goto reset;
	pci_set_drvdata(pdev, xdev);
	dev_info(&pdev->dev,
		 "extoll%u: node %u, %u RMA VPIDs, %u VELO VPIDs, %u ATU entries\n",
		 index, xdev->node_id, xdev->num_vpids[EXTOLL_UNIT_RMA],
		 xdev->num_vpids[EXTOLL_UNIT_VELO], xdev->atu_entries);
	return 0;

reset:
	mutex_lock(&xdev->lock);
	xdev->dead = true;
	extoll_hw_reset(xdev);
	mutex_unlock(&xdev->lock);
	pci_clear_master(pdev);
put:
	ida_free(&extoll_ids, index);
	extoll_dev_put(xdev);
	return ret;
}

/*
 * Stop the device (no DMA after the reset's read-back), mark it dead and
 * revoke every user mapping.  Memory is freed when the files are closed.
 */
static void extoll_quiesce(struct extoll_drv_dev *xdev)
{
	int u;
	u32 v;

	mutex_lock(&xdev->lock);
	if (xdev->dead)
		goto unlock;
	WRITE_ONCE(xdev->dead, true);
	extoll_hw_reset(xdev);
	for (u = 0; u < EXTOLL_NUM_UNITS; u++)
		for (v = 0; v < xdev->num_vpids[u]; v++)
			if (xdev->owner[u][v])
				unmap_mapping_range(xdev->owner[u][v]->mapping,
						    0, 0, 1);
unlock:
	mutex_unlock(&xdev->lock);
}

/*
 * After extoll_quiesce() (the NIC reset, the users' mappings zapped, faults
 * answered SIGBUS): give back every DMA mapping and allocation of the
 * endpoints still open, and the ATU table, before the driver lets go of
 * the device (another driver may bind it next; DMA-API debugging reports
 * mappings left behind).  The endpoints' files close later and find
 * nothing left to unmap.
 */
static void extoll_release_dma(struct extoll_drv_dev *xdev)
{
	struct device *dmadev = &xdev->pdev->dev;

	extoll_eps_release_dma(xdev);
	mutex_lock(&xdev->lock);
	if (xdev->atu) {
		dma_free_coherent(dmadev, PAGE_ALIGN((size_t)xdev->atu_entries * 8),
				  xdev->atu, xdev->atu_dma);
		xdev->atu = NULL;
	}
	mutex_unlock(&xdev->lock);
}

static void extoll_remove(struct pci_dev *pdev)
{
	struct extoll_drv_dev *xdev = pci_get_drvdata(pdev);
	int u;

	for (u = 0; u < EXTOLL_NUM_UNITS; u++)
		extoll_del_cdev(&xdev->cdevs[u]);
	extoll_quiesce(xdev);
	pci_clear_master(pdev);
	extoll_release_dma(xdev);
	for (u = 0; u < EXTOLL_NUM_UNITS; u++)
		put_device(&xdev->cdevs[u].dev);
	ida_free(&extoll_ids, xdev->index);
	dev_info(&pdev->dev, "extoll%u removed\n", xdev->index);
	extoll_dev_put(xdev);
}

static void extoll_shutdown(struct pci_dev *pdev)
{
	struct extoll_drv_dev *xdev = pci_get_drvdata(pdev);

	if (xdev)
		extoll_quiesce(xdev);
	pci_clear_master(pdev);
}

static const struct pci_device_id extoll_pci_ids[] = {
	{ PCI_DEVICE(EXTOLL_PCI_VENDOR_ID, EXTOLL_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, extoll_pci_ids);

static struct pci_driver extoll_pci_driver = {
	.name		= EXTOLL_DRV_NAME,
	.id_table	= extoll_pci_ids,
	.probe		= extoll_probe,
	.remove		= extoll_remove,
	.shutdown	= extoll_shutdown,
};

/* -------------------------------------------------------------- module */

static int __init extoll_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&extoll_devt, 0,
				  EXTOLL_MAX_DEVICES * EXTOLL_NUM_UNITS,
				  EXTOLL_DRV_NAME);
	if (ret)
		return ret;
	ret = class_register(&extoll_class);
	if (ret)
		goto unregister_chrdev;
	ret = pci_register_driver(&extoll_pci_driver);
	if (ret)
		goto unregister_class;
	return 0;

unregister_class:
	class_unregister(&extoll_class);
unregister_chrdev:
	unregister_chrdev_region(extoll_devt,
				 EXTOLL_MAX_DEVICES * EXTOLL_NUM_UNITS);
	return ret;
}

static void __exit extoll_exit(void)
{
	pci_unregister_driver(&extoll_pci_driver);
	class_unregister(&extoll_class);
	unregister_chrdev_region(extoll_devt,
				 EXTOLL_MAX_DEVICES * EXTOLL_NUM_UNITS);
}

module_init(extoll_init);
module_exit(extoll_exit);

MODULE_DESCRIPTION("EXTOLL NIC: RMA2 and VELO2 user-level endpoints, ATU");
MODULE_AUTHOR("ExaNet fabric stack developers");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXA_CORE);
