/*
 * ExaNet NI model: interfaces between the device core (exanet-ni.c and its
 * parts exanet-pkt.c, exanet-mbox.c, private header exanet-ni.h), the RDMA
 * engine (exanet-rdma.c and its parts exanet-rdma-*.c, whose private
 * header is exanet-rdma-int.h) and the DMA context functions
 * (exanet-ctx.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef EXANET_INT_H
#define EXANET_INT_H

#include "hw/pci/pci.h"
#include "fabric-nic.h"

#define TYPE_EXANET     "exanet"
#define TYPE_EXANET_CTX "exanet-ctx"

typedef struct ExanetRdma ExanetRdma;

/* A guest programming error: LOG_GUEST_ERROR and the trace event 'event'. */
#define EXANET_GUEST_ERR(event, fmt, ...) \
    FABRIC_GUEST_ERR(event, "exanet: " fmt, ## __VA_ARGS__)

/*
 * DMA in progress by any exanet device (fabric_nic_dma_rw()); MMIO to
 * exanet devices is ignored while it is non-zero (fabric-nic.h).
 */
extern unsigned exanet_dma_depth;

/* exanet-ni.c: the RDMA engine of an exanet device, NULL if not one */
ExanetRdma *exanet_get_rdma(Object *ni);
/*
 * exanet-ni.c, interrupts: a kernel write val to the IRQ register *irq of a
 * source (what, src name it in the log); false if refused (stays
 * disarmed).  An event of rank's source *irq (a record written through
 * its context or a transfer of the rank completed): fires if armed.
 */
bool exanet_irq_arm(PCIDevice *ni, uint32_t *irq, uint32_t val,
                    const char *what, unsigned src);
void exanet_irq_rank_event(PCIDevice *ni, unsigned rank, uint32_t *irq);
/*
 * exanet-ni.c: software polls the NI for something done(opaque) tells: hand
 * it the waiting fabric packets, and park the vCPU while it keeps finding
 * nothing (fabric-park.h).  Returns done(opaque) afterwards.
 */
bool exanet_ni_poll(PCIDevice *ni, bool (*done)(void *opaque), void *opaque);

/* exanet-rdma.c (exanet_rdma_bulk_rx, _kick_work: exanet-rdma-rx.c) */
ExanetRdma *exanet_rdma_new(PCIDevice *ni, uint32_t node_id,
                            uint32_t num_nodes, const uint32_t *retx_max);
void exanet_rdma_free(ExanetRdma *r);
void exanet_rdma_set_fabric(ExanetRdma *r, FabricNic *nic);
/*
 * The driver read rank's EXANET_CTX_CFG_RANK (after an IOMMU unmap): no
 * peer reaches memory through a translation cached before, once it returns.
 */
void exanet_rdma_direct_fence(ExanetRdma *r, unsigned rank, const char *why);
void exanet_rdma_reset(ExanetRdma *r, uint32_t epoch);
MemoryRegion *exanet_rdma_bar(ExanetRdma *r);
/* BAR5 (uapi/exanet_coll.h): the collective unit's pages */
MemoryRegion *exanet_rdma_coll_bar(ExanetRdma *r);
/* Largest group (members) that takes the direct exchange, 0: never. */
void exanet_rdma_coll_direct(ExanetRdma *r, uint32_t members);
bool exanet_rdma_ctrl_owns(hwaddr off);
uint32_t exanet_rdma_ctrl_read(ExanetRdma *r, hwaddr off);
void exanet_rdma_ctrl_write(ExanetRdma *r, hwaddr off, uint32_t val);
void exanet_rdma_bulk_rx(void *opaque, uint32_t src, uint8_t type,
                         const void *hdr, size_t hlen,
                         const void *data, size_t dlen, bool data_ok);
void exanet_rdma_kick_work(void *opaque);
/*
 * Deliver up to budget packets queued to the own node; true if any was.
 * A polling vCPU takes EXANET_RDMA_LOOP_POLL_BUDGET (exanet_ni_poll()).
 */
bool exanet_rdma_loop_drain(ExanetRdma *r, int budget);
#define EXANET_RDMA_LOOP_POLL_BUDGET 16
bool exanet_rdma_attach_ctx(ExanetRdma *r, unsigned rank, PCIDevice *ctx,
                            Error **errp);
void exanet_rdma_detach_ctx(ExanetRdma *r, unsigned rank, PCIDevice *ctx);

#endif
