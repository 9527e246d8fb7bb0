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
	return exanet_send_on_idle(ep->pkt, chan, node, mbox, pkt, len);
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

/* The domain's RDMA page, and the channels abandoned by closed endpoints. */
struct xfi_nic_rdma {
	struct exanet_rdma *r;
	uint64_t draining;		/* bit per channel (EXANET_RDMA_CHANS) */
};
_Static_assert(EXANET_RDMA_CHANS <= 64, "a bit per channel in draining");

int xfi_nic_rdma_alloc(struct xfi_nic *nic, struct xfi_nic_rdma **rdmap)
{
	struct xfi_nic_rdma *rdma = calloc(1, sizeof(*rdma));
	int err;

	if (!rdma)
		return -ENOMEM;
	err = exanet_rdma_alloc(nic->dev, &rdma->r);
	if (err) {
		free(rdma);
		return err;
	}
	*rdmap = rdma;
	return 0;
}

void xfi_nic_rdma_free(struct xfi_nic_rdma *rdma)
{
	exanet_rdma_free(rdma->r);	/* aborts the channels still draining */
	free(rdma);
}

/* A claimed channel is released only by the poll that sees it finished:
 * poll the abandoned ones (a register read each). */
static void xfi_exa_reclaim(struct xfi_nic_rdma *rdma)
{
	uint64_t m = rdma->draining;

	while (m) {
		unsigned int slot = (unsigned int)__builtin_ctzll(m);

		m &= m - 1;
		if (exanet_rdma_poll(rdma->r, slot, NULL) != -EINPROGRESS)
			rdma->draining &= ~(1ull << slot);
	}
}

int xfi_nic_rdma_post(struct xfi_nic_rdma *rdma, int is_read, void *buf,
		      const struct xfi_nic_mr *lmr, uint32_t node, uint32_t rank, uint64_t raddr,
		      size_t len)
{
	struct exanet_rdma *r = rdma->r;
	struct exanet_raddr ra;
	int err;

	(void)lmr;	/* the NI translates virtual addresses itself */
	err = exanet_raddr_make(node, rank, raddr, &ra);
	if (err)
		return err;
	if (rdma->draining)
		xfi_exa_reclaim(rdma);
	return is_read ? exanet_rdma_post_read(r, buf, &ra, len, NULL) :
		exanet_rdma_post_write(r, buf, &ra, len, NULL);
}

int xfi_nic_rdma_poll(struct xfi_nic_rdma *rdma, unsigned int slot)
{
	return exanet_rdma_poll(rdma->r, slot, NULL);
}

/*
 * The channel stays claimed until the NI reports it DONE or ERROR: a new
 * transfer on it could otherwise be reported finished by the old one's
 * status.  The owner dropped the buffer's registration, so the NI fails
 * what is left of the transfer rather than writing into memory the
 * application got back (exanet_dereg_mr()).  Reclaimed by the next post.
 */
void xfi_nic_rdma_abandon(struct xfi_nic_rdma *rdma, unsigned int slot)
{
	if (slot < EXANET_RDMA_CHANS)
		rdma->draining |= 1ull << slot;
}
