// SPDX-License-Identifier: MIT
/*
 * The provider's NIC backend for ExaNet (xfi_nic.h): packets through the
 * packetizer into the peer's mailbox, RDMA on the RDMA engine, addresses
 * (node, rank, virtual address) checked by the NI against the protection
 * domain and the rank's IOMMU mappings.  A thin layer over libexanet.
 */
#include <errno.h>
#include <stdlib.h>

#include "xfi_nic.h"

struct xfi_nic {
	struct exanet_dev *dev;
};

struct xfi_nic_ep {
	struct exanet_pkt *pkt;
	struct exanet_mbox *mbox;
};

int xfi_nic_open(const char *path, struct xfi_nic **nicp)
{
	struct xfi_nic *nic = calloc(1, sizeof(*nic));
	int err;

	if (!nic)
		return -ENOMEM;
	err = exanet_open(path, &nic->dev);
	if (err) {
		free(nic);
		return err;
	}
	*nicp = nic;
	return 0;
}

void xfi_nic_close(struct xfi_nic *nic)
{
	exanet_close(nic->dev);
	free(nic);
}

uint32_t xfi_nic_node_id(const struct xfi_nic *nic)
{
	return exanet_node_id(nic->dev);
}

int xfi_nic_ep_open(struct xfi_nic *nic, unsigned int slots, struct xfi_nic_ep **epp)
{
	struct xfi_nic_ep *ep = calloc(1, sizeof(*ep));
	int err;

	if (!ep)
		return -ENOMEM;
	err = exanet_pkt_alloc(nic->dev, &ep->pkt);
	if (!err) {
		err = exanet_mbox_alloc(nic->dev, slots, &ep->mbox);
		if (err)
			exanet_pkt_free(ep->pkt);
	}
	if (err) {
		free(ep);
		return err;
	}
	*epp = ep;
	return 0;
}

void xfi_nic_ep_close(struct xfi_nic_ep *ep)
{
	exanet_pkt_free(ep->pkt);	/* aborts channels still ONGOING */
	exanet_mbox_free(ep->mbox);
	free(ep);
}

uint32_t xfi_nic_ep_mbox(const struct xfi_nic_ep *ep)
{
	return exanet_mbox_id(ep->mbox);
}

int xfi_nic_send(struct xfi_nic_ep *ep, unsigned int chan, uint32_t node, uint32_t mbox,
		 const void *pkt, size_t len)
{
	return exanet_send_on(ep->pkt, chan, node, mbox, pkt, len);
}

int xfi_nic_chan_status(struct xfi_nic_ep *ep, unsigned int chan)
{
	return exanet_status_errno(exanet_chan_status(ep->pkt, chan));
}

ssize_t xfi_nic_recv(struct xfi_nic_ep *ep, void *buf, size_t len, uint32_t *src_node)
{
	struct exanet_msg_info info;
	ssize_t n = exanet_recv(ep->mbox, buf, len, &info);

	if (n > 0)
		*src_node = info.src_node;
	return n;
}

static uint32_t xfi_exanet_access(uint32_t access)
{
	uint32_t a = 0;

	if (access & XFI_NIC_MR_NI_READS)
		a |= EXANET_MR_REMOTE_READ;
	if (access & XFI_NIC_MR_NI_WRITES)
		a |= EXANET_MR_LOCAL_WRITE | EXANET_MR_REMOTE_READ;
	if (access & XFI_NIC_MR_ON_DEMAND)
		a |= EXANET_MR_ON_DEMAND;
	return a;
}

/* key = handle << 8 | rank: the initiator needs the rank for the RDMA
 * address; the NI checks the rest (PDID, the rank's IOMMU mappings). */
int xfi_nic_reg_mr(struct xfi_nic *nic, void *addr, size_t len, uint32_t access,
		   struct xfi_nic_mr **mrp)
{
	struct xfi_nic_mr *mr = calloc(1, sizeof(*mr));
	struct exanet_mr *x;
	int err;

	if (!mr)
		return -ENOMEM;
	err = exanet_reg_mr(nic->dev, addr, len, xfi_exanet_access(access), &x);
	if (err) {
		free(mr);
		return err;
	}
	mr->addr = x->addr;
	mr->len = x->len;
	mr->key = (uint64_t)x->handle << 8 | x->rank;
	mr->hw = x;
	*mrp = mr;
	return 0;
}

void xfi_nic_dereg_mr(struct xfi_nic_mr *mr)
{
	exanet_dereg_mr(mr->hw);
	free(mr);
}

void xfi_nic_mr_remote(const struct xfi_nic_mr *mr, const void *buf, uint32_t *node,
		       uint32_t *rank, uint64_t *raddr)
{
	const struct exanet_mr *x = mr->hw;

	*node = x->node;
	*rank = x->rank;
	*raddr = (uintptr_t)buf;
}

int xfi_nic_key_raddr(uint64_t key, uint64_t va, uint32_t *rank, uint64_t *raddr)
{
	*rank = (uint32_t)(key & 0xff);
	*raddr = va;
	return 0;
}

int xfi_nic_rdma_alloc(struct xfi_nic *nic, struct xfi_nic_rdma **rdma)
{
	return exanet_rdma_alloc(nic->dev, (struct exanet_rdma **)rdma);
}

void xfi_nic_rdma_free(struct xfi_nic_rdma *rdma)
{
	exanet_rdma_free((struct exanet_rdma *)rdma);
}

int xfi_nic_rdma_post(struct xfi_nic_rdma *rdma, int is_read, void *buf,
		      const struct xfi_nic_mr *lmr, uint32_t node, uint32_t rank, uint64_t raddr,
		      size_t len)
{
	struct exanet_rdma *r = (struct exanet_rdma *)rdma;
	struct exanet_raddr ra;
	int err;

	(void)lmr;	/* the NI translates virtual addresses itself */
	err = exanet_raddr_make(node, rank, raddr, &ra);
	if (err)
		return err;
	return is_read ? exanet_rdma_post_read(r, buf, &ra, len, NULL) :
		exanet_rdma_post_write(r, buf, &ra, len, NULL);
}

int xfi_nic_rdma_poll(struct xfi_nic_rdma *rdma, unsigned int slot)
{
	return exanet_rdma_poll((struct exanet_rdma *)rdma, slot, NULL);
}
