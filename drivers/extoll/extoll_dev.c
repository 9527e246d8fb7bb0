// SPDX-License-Identifier: GPL-2.0
/*
 * EXTOLL NIC driver: the device object's lifetime.  Probe holds one
 * reference and every open endpoint one; the last put frees the quota
 * table, the ATU table and the PCI device reference.
 */

#include <linux/bitmap.h>
#include <linux/dma-mapping.h>
#include <linux/slab.h>

#include "extoll_drv.h"

/* ------------------------------------------------------------ lifetime */

static void extoll_dev_free(struct kref *ref)
{
	struct extoll_drv_dev *xdev = container_of(ref, struct extoll_drv_dev, ref);

	if (xdev->quota.names)
		exa_quota_destroy(&xdev->quota);
	if (xdev->atu)
		dma_free_coherent(&xdev->pdev->dev,
				  PAGE_ALIGN((size_t)xdev->atu_entries * 8),
				  xdev->atu, xdev->atu_dma);
	bitmap_free(xdev->atu_map);
	pci_dev_put(xdev->pdev);
	kfree(xdev);
}

void extoll_dev_put(struct extoll_drv_dev *xdev)
{
	kref_put(&xdev->ref, extoll_dev_free);
}
