// SPDX-License-Identifier: GPL-2.0
/*
 * EXTOLL NIC driver: register level access (uapi/extoll_hw.h).  Every
 * function here is called with xdev->lock held and the device not dead,
 * except extoll_hw_probe() (before the device is visible).
 */

#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/pci.h>

#include "extoll_drv.h"
#include "exa_pci.h"

static u32 extoll_rd(struct extoll_drv_dev *xdev, unsigned int reg)
{
	return ioread32(xdev->regs + reg);
}

static void extoll_wr(struct extoll_drv_dev *xdev, unsigned int reg, u32 val)
{
	iowrite32(val, xdev->regs + reg);
}

static void extoll_wr64(struct extoll_drv_dev *xdev, unsigned int reg, u64 val)
{
	lo_hi_writeq(val, xdev->regs + reg);
}

/* Map BAR0 for the kernel, reserve the user BARs, read the geometry. */
int extoll_hw_probe(struct extoll_drv_dev *xdev)
{
	struct pci_dev *pdev = xdev->pdev;
	u32 magic, version, vpids, slot;
	int ret;

	ret = exa_pci_check_bar(pdev, EXTOLL_BAR_CTRL, EXTOLL_BAR_CTRL_SIZE);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(EXTOLL_BAR_CTRL), EXTOLL_DRV_NAME);
	if (ret)
		return ret;
	xdev->regs = pcim_iomap_table(pdev)[EXTOLL_BAR_CTRL];

	magic = extoll_rd(xdev, EXTOLL_REG_ID);
	version = extoll_rd(xdev, EXTOLL_REG_VERSION);
	if (magic != EXTOLL_ID_MAGIC || version != EXTOLL_HW_VERSION) {
		dev_err(&pdev->dev, "unsupported device: id %#x version %u\n",
			magic, version);
		return -ENODEV;
	}
	vpids = extoll_rd(xdev, EXTOLL_REG_NUM_VPIDS);
	slot = extoll_rd(xdev, EXTOLL_REG_VELO_SLOT);
	if (!vpids || vpids > EXTOLL_DRV_MAX_VPIDS ||
	    slot != EXTOLL_VELO_SLOT_SIZE) {
		dev_err(&pdev->dev, "unsupported geometry: %u VPIDs, slot %u\n",
			vpids, slot);
		return -ENODEV;
	}
	/* The user BARs must hold every VPID's pages. */
	ret = exa_pci_check_bar(pdev, EXTOLL_BAR_VELO,
				(resource_size_t)vpids * EXTOLL_HW_PAGE_SIZE);
	if (ret)
		return ret;
	ret = exa_pci_check_bar(pdev, EXTOLL_BAR_RMA,
				(resource_size_t)vpids * EXTOLL_RMA_VPID_STRIDE);
	if (ret)
		return ret;
	/* Managed (pcim_enable_device): released on unbind. */
	ret = pci_request_region(pdev, EXTOLL_BAR_VELO, EXTOLL_DRV_NAME);
	if (ret)
		return ret;
	ret = pci_request_region(pdev, EXTOLL_BAR_RMA, EXTOLL_DRV_NAME);
	if (ret)
		return ret;
	xdev->velo_bar_phys = pci_resource_start(pdev, EXTOLL_BAR_VELO);
	/* VELO send windows (optional: devices before them lack BAR3) */
	xdev->velo_win_phys = 0;
	if ((pci_resource_flags(pdev, EXTOLL_BAR_VELO_WIN) & IORESOURCE_MEM) &&
	    pci_resource_len(pdev, EXTOLL_BAR_VELO_WIN) >=
	    (resource_size_t)vpids * EXTOLL_HW_PAGE_SIZE) {
		ret = pci_request_region(pdev, EXTOLL_BAR_VELO_WIN,
					 EXTOLL_DRV_NAME);
		if (ret)
			return ret;
		xdev->velo_win_phys =
			pci_resource_start(pdev, EXTOLL_BAR_VELO_WIN);
	}
	xdev->rma_bar_phys = pci_resource_start(pdev, EXTOLL_BAR_RMA);
	xdev->node_id = extoll_rd(xdev, EXTOLL_REG_NODE_ID);
	xdev->max_nodes = extoll_rd(xdev, EXTOLL_REG_NUM_NODES);
	xdev->num_vpids[EXTOLL_UNIT_RMA] = vpids;
	xdev->num_vpids[EXTOLL_UNIT_VELO] = vpids;
	xdev->atu_entries = EXTOLL_ATU_MAX_ENTRIES;
	exa_links_init(&xdev->links, &pdev->dev, xdev->regs, &xdev->lock,
		       &xdev->dead);
	return 0;
}

/* Every VPID part disabled, ATU off; no DMA after the read-back. */
void extoll_hw_reset(struct extoll_drv_dev *xdev)
{
	extoll_wr(xdev, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
	extoll_rd(xdev, EXTOLL_REG_ID);
	memset(xdev->vpid_ctrl, 0, sizeof(xdev->vpid_ctrl));
}

/* Program the ATU table allocated at probe (after a reset). */
void extoll_hw_atu_program(struct extoll_drv_dev *xdev)
{
	extoll_wr64(xdev, EXTOLL_REG_ATU_BASE, xdev->atu_dma);
	extoll_wr(xdev, EXTOLL_REG_ATU_ENTRIES, xdev->atu_entries);
	extoll_rd(xdev, EXTOLL_REG_ATU_ENTRIES);
}

static void extoll_hw_vpid_ctrl(struct extoll_drv_dev *xdev, u32 vpid, u32 set,
				u32 clear)
{
	unsigned int reg = EXTOLL_REG_VPID(vpid) + EXTOLL_VPID_CTRL;

	xdev->vpid_ctrl[vpid] = (xdev->vpid_ctrl[vpid] & ~clear) | set;
	extoll_wr(xdev, reg, xdev->vpid_ctrl[vpid]);
	/* The read-back orders the write before anything that follows. */
	extoll_rd(xdev, reg);
}

/* The protection ID the part stamps on what it sends and accepts. */
void extoll_hw_ep_set_prot(struct extoll_drv_dev *xdev, enum extoll_unit unit,
			   u32 vpid, u32 prot)
{
	unsigned int reg = EXTOLL_REG_VPID(vpid) +
		(unit == EXTOLL_UNIT_VELO ? EXTOLL_VPID_VELO_PROT :
					    EXTOLL_VPID_RMA_PROT);

	extoll_wr(xdev, reg, prot & EXTOLL_PROT_MASK);
	extoll_rd(xdev, reg);
}

/*
 * Open: the part gets its owner's protection ID first, then the VELO
 * requester page accepts messages (RMA waits for its queue).
 */
void extoll_hw_ep_enable(struct extoll_drv_dev *xdev, enum extoll_unit unit,
			 u32 vpid, u32 prot)
{
	extoll_hw_ep_set_prot(xdev, unit, vpid, prot);
	if (unit == EXTOLL_UNIT_VELO)
		extoll_hw_vpid_ctrl(xdev, vpid, EXTOLL_VPID_VELO_TX, 0);
}

/*
 * Program the (zeroed) queue and enable the part that uses it: VELO
 * reception, or the whole RMA part (requester pages, notifications,
 * target side).  The device keeps no read pointer: @rp_dma is unused.
 */
void extoll_hw_ep_set_queue(struct extoll_drv_dev *xdev, enum extoll_unit unit,
			    u32 vpid, dma_addr_t rp_dma, dma_addr_t q_dma,
			    u64 q_size)
{
	unsigned int base = EXTOLL_REG_VPID(vpid);

	if (unit == EXTOLL_UNIT_VELO) {
		extoll_hw_vpid_ctrl(xdev, vpid, 0, EXTOLL_VPID_VELO_RX);
		extoll_wr64(xdev, base + EXTOLL_VPID_VELO_RING, q_dma);
		extoll_wr(xdev, base + EXTOLL_VPID_VELO_SLOTS,
			  q_size / EXTOLL_VELO_SLOT_SIZE);
		extoll_hw_vpid_ctrl(xdev, vpid, EXTOLL_VPID_VELO_RX, 0);
	} else {
		extoll_hw_vpid_ctrl(xdev, vpid, 0,
				    EXTOLL_VPID_RMA | EXTOLL_VPID_RMA_PHYS);
		extoll_wr64(xdev, base + EXTOLL_VPID_NOTIQ, q_dma);
		extoll_wr(xdev, base + EXTOLL_VPID_NOTIQ_ENTRIES,
			  q_size / EXTOLL_NOTI_SIZE);
		extoll_hw_vpid_ctrl(xdev, vpid, EXTOLL_VPID_RMA, 0);
	}
}

/* Close: after the read-back the part does no DMA to its ring/queue. */
void extoll_hw_ep_disable(struct extoll_drv_dev *xdev, enum extoll_unit unit,
			  u32 vpid)
{
	if (unit == EXTOLL_UNIT_VELO)
		extoll_hw_vpid_ctrl(xdev, vpid, 0,
				    EXTOLL_VPID_VELO_RX | EXTOLL_VPID_VELO_TX);
	else
		extoll_hw_vpid_ctrl(xdev, vpid, 0,
				    EXTOLL_VPID_RMA | EXTOLL_VPID_RMA_PHYS);
}

u64 extoll_hw_ep_read_wp(struct extoll_drv_dev *xdev, enum extoll_unit unit,
			 u32 vpid)
{
	return extoll_rd(xdev, EXTOLL_REG_VPID(vpid) +
			 (unit == EXTOLL_UNIT_VELO ? EXTOLL_VPID_VELO_WP :
						     EXTOLL_VPID_NOTIQ_WP));
}

u64 extoll_hw_read_counter(struct extoll_drv_dev *xdev, unsigned int n)
{
	return lo_hi_readq(xdev->regs + EXTOLL_REG_COUNTER(n));
}

void extoll_hw_atu_set(struct extoll_drv_dev *xdev, u32 idx, dma_addr_t addr,
		       u32 vpid, u32 prot, bool readonly)
{
	u64 perm = EXTOLL_ATU_READ | (readonly ? 0 : EXTOLL_ATU_WRITE);

	/* Entry first, NLA handed out after the ioctl's unlock. */
	WRITE_ONCE(xdev->atu[idx],
		   cpu_to_le64(EXTOLL_ATU_ENTRY(addr, vpid, perm, prot)));
	dma_wmb();
}

void extoll_hw_atu_clear(struct extoll_drv_dev *xdev, u32 idx)
{
	WRITE_ONCE(xdev->atu[idx], 0);
}

/*
 * After the cleared entries are visible, a read of a BAR0 register
 * guarantees that no access starting later uses them (extoll_hw.h 7).
 */
int extoll_hw_atu_fence(struct extoll_drv_dev *xdev)
{
	/* Cleared entries reach memory before the BAR0 read. */
	wmb();
	if (extoll_rd(xdev, EXTOLL_REG_ID) != EXTOLL_ID_MAGIC)
		return -EIO;
	xdev->atu_fences++;
	return 0;
}

u64 extoll_hw_nla(u32 idx)
{
	return (u64)idx * EXTOLL_HW_PAGE_SIZE;
}

/*
 * MMIO page @page of the endpoint's file: RMA pages 0..31 are the VPID's
 * requester pages, page 32 (WC-state page of the original layout) aliases
 * requester page 0, whose CMD_FREE/CMD_DROPS registers are the flow
 * control state; VELO page 0 is the VPID's requester page, page 1 is
 * its send window (BAR3) or, on a device without one, aliases page 0
 * (CREDITS/DROPS).  0: no such page.
 */
unsigned long extoll_hw_mmio_pfn(struct extoll_drv_dev *xdev,
				 enum extoll_unit unit, u32 vpid,
				 unsigned long page)
{
	if (unit == EXTOLL_UNIT_VELO) {
		if (page > 1)
			return 0;
		if (page == 1 && xdev->velo_win_phys)
			return PHYS_PFN(xdev->velo_win_phys +
					EXTOLL_VELO_WIN_PAGE(vpid));
		return PHYS_PFN(xdev->velo_bar_phys + EXTOLL_VELO_PAGE(vpid));
	}
	if (page > EXTOLL_RMA_PAGES_PER_VPID)
		return 0;
	if (page == EXTOLL_RMA_PAGES_PER_VPID)
		page = 0;
	return PHYS_PFN(xdev->rma_bar_phys +
			EXTOLL_RMA_PAGE((resource_size_t)vpid, page));
}
