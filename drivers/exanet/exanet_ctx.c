// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: the RDMA DMA contexts.  Each rank r (0..7) of a node
 * is a BAR-less PCI function "exanet-ctx" alone in its IOMMU group (see
 * exanet_rdma.c for how ranks are handed to files).  This file binds those
 * functions (the module's second pci_driver), gives each an unmanaged
 * IOMMU domain and keeps the table of ranks; exanet_rdma.c and
 * exanet_odp.c use it.
 */

#include <linux/module.h>
#include <linux/pci.h>
#include <linux/wait.h>

#include "exanet_drv.h"
#include "exa_umem.h"

/* ------------------------------------------------------ the rank table */

/* Protects exanet_ctxs[] (owner, removing, pdev) and exanet_ranks_in_use. */
DEFINE_MUTEX(exanet_ctx_lock);
DECLARE_WAIT_QUEUE_HEAD(exanet_ctx_wq);
struct exanet_drv_ctx exanet_ctxs[EXANET_RDMA_NUM_RANKS];

/* Disable rank r: when the write returns, nothing is DMAed through it. */
void exanet_ctx_disable(struct exanet_drv_dev *edev, u32 r)
{
	lockdep_assert_held(&edev->lock);
	exanet_wr(edev, EXANET_REG_CTX_BASE(r) + EXANET_CTX_ENABLE, 0);
	exanet_rd(edev, EXANET_REG_CTX_BASE(r) + EXANET_CTX_ENABLE);
	exanet_wr(edev, EXANET_REG_CTX_BASE(r) + EXANET_CTX_PDID, 0);
}

/* ------------------------------------------------- ctx PCI functions */

/*
 * Direct delivery's translation fence (uapi/exanet_rdma.h): after an IOMMU
 * unmap, the NI drops the translations of the rank it cached, so that no
 * peer reaches the pages any more, before they may be reused.
 */
void exanet_ctx_xlat_fence(struct exanet_drv_ctx *ctx)
{
	u8 rank;

	pci_read_config_byte(ctx->pdev, EXANET_CTX_CFG_RANK, &rank);
}

static void exanet_ctx_unmapped(struct exa_iospace *ios)
{
	exanet_ctx_xlat_fence(container_of(ios, struct exanet_drv_ctx, ios));
}

/* The rank's on-demand paging space starts empty (exanet_odp.c fills it). */
static void exanet_ctx_odp_init(struct exanet_drv_ctx *ctx)
{
	struct exanet_drv_odp_space *odp = &ctx->odp;

	mutex_init(&odp->lock);
	xa_init(&odp->pages);
	xa_init(&odp->thp);
	odp->mapped = 0;
	odp->thp_mapped = 0;
	odp->pinning = 0;
	atomic64_set(&odp->faults, 0);
	atomic64_set(&odp->refused, 0);
	atomic64_set(&odp->replays, 0);
	atomic64_set(&odp->invalidations, 0);
	atomic64_set(&odp->unmapped, 0);
	odp->fault_ef = NULL;
	init_waitqueue_head(&odp->fault_wq);
}

static int exanet_ctx_probe(struct pci_dev *pdev,
			    const struct pci_device_id *id)
{
	struct exanet_drv_ctx *ctx;
	u8 rank;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pci_read_config_byte(pdev, EXANET_CTX_CFG_RANK, &rank);
	if (ret)
		return -EIO;
	if (rank >= EXANET_RDMA_NUM_RANKS) {
		dev_err(&pdev->dev, "bad rank %u\n", rank);
		return -ENODEV;
	}

	mutex_lock(&exanet_ctx_lock);
	ctx = &exanet_ctxs[rank];
	if (ctx->pdev) {
		mutex_unlock(&exanet_ctx_lock);
		dev_err(&pdev->dev, "rank %u already has a DMA context\n", rank);
		return -EBUSY;
	}
	/* Own unmanaged domain: IOVA == user VA of the rank's owner. */
	ret = exa_iospace_init(&ctx->ios, &pdev->dev);
	if (ret) {
		mutex_unlock(&exanet_ctx_lock);
		dev_err(&pdev->dev,
			"rank %u: no IOMMU domain (%d): RDMA needs intel_iommu=on and the function alone in its IOMMU group\n",
			rank, ret);
		return ret;
	}
	ctx->ios.unmapped = exanet_ctx_unmapped;
	pci_set_master(pdev);
	exanet_ctx_odp_init(ctx);
	ctx->rank = rank;
	ctx->removing = false;
	ctx->pdev = pci_dev_get(pdev);
	mutex_unlock(&exanet_ctx_lock);
	pci_set_drvdata(pdev, ctx);
	dev_info(&pdev->dev, "RDMA DMA context, rank %u\n", rank);
	return 0;
}

static bool exanet_ctx_free(struct exanet_drv_ctx *ctx)
{
	bool ret;

	mutex_lock(&exanet_ctx_lock);
	ret = !ctx->owner;
	mutex_unlock(&exanet_ctx_lock);
	return ret;
}

static void exanet_ctx_remove(struct pci_dev *pdev)
{
	struct exanet_drv_ctx *ctx = pci_get_drvdata(pdev);
	struct exanet_drv_dev *edev = NULL;

	mutex_lock(&exanet_ctx_lock);
	ctx->removing = true;
	if (ctx->owner) {
		edev = ctx->owner->edev;
		get_device(&edev->dev);
	}
	mutex_unlock(&exanet_ctx_lock);

	if (edev) {
		/* Stop DMA through the context now, then wait for the owner. */
		mutex_lock(&edev->lock);
		mutex_lock(&exanet_ctx_lock);
		if (ctx->owner && !edev->dead)
			exanet_ctx_disable(edev, ctx->rank);
		mutex_unlock(&exanet_ctx_lock);
		mutex_unlock(&edev->lock);
		put_device(&edev->dev);
		dev_info(&pdev->dev, "rank %u in use: waiting for its owner to close\n",
			 ctx->rank);
		wait_event(exanet_ctx_wq, exanet_ctx_free(ctx));
	}

	pci_clear_master(pdev);
	mutex_lock(&exanet_ctx_lock);
	exa_iospace_destroy(&ctx->ios);
	ctx->pdev = NULL;
	mutex_unlock(&exanet_ctx_lock);
	pci_dev_put(pdev);
}

static void exanet_ctx_shutdown(struct pci_dev *pdev)
{
	pci_clear_master(pdev);
}

static const struct pci_device_id exanet_ctx_pci_ids[] = {
	{ PCI_DEVICE(EXANET_CTX_PCI_VENDOR_ID, EXANET_CTX_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, exanet_ctx_pci_ids);

static struct pci_driver exanet_ctx_pci_driver = {
	.name		= EXANET_DRV_NAME "-ctx",
	.id_table	= exanet_ctx_pci_ids,
	.probe		= exanet_ctx_probe,
	.remove		= exanet_ctx_remove,
	.shutdown	= exanet_ctx_shutdown,
	.driver_managed_dma = true,
};

int exanet_ctx_driver_register(void)
{
	return pci_register_driver(&exanet_ctx_pci_driver);
}

void exanet_ctx_driver_unregister(void)
{
	pci_unregister_driver(&exanet_ctx_pci_driver);
}
