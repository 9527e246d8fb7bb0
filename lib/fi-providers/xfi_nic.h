/* SPDX-License-Identifier: MIT */
/*
 * The NIC below the provider's protocol engine.  The engine (xfi_*.c) calls
 * only these functions; one backend file implements them per NIC and the
 * engine is built once per backend (lib/fabric.mk):
 *
 *   xfi_nic_exanet.c  libexanet: packetizer + mailbox, RDMA engine
 *                     -> libexanet-fi.so, provider "exanet"
 *   xfi_nic_extoll.c  libvelo2 (packets) + librma2 (puts/gets)
 *                     -> libextoll-fi.so, provider "extoll"
 *
 * The build passes -DXFI_NIC_IMPL="xfi_nic_<nic>.h": names, limits and
 * capabilities of the NIC as constants.  Design: Documentation/exanet/libfabric.md
 * ("NIC backends").
 *
 * Addresses: a peer endpoint is (node, mailbox) packed in a 32-bit key
 * (xfi_proto.h); RDMA targets are (node, rank, address) where rank and
 * address are what the owner's registration says (xfi_nic_mr_remote) or
 * what an RMA key and a virtual address give (xfi_nic_key_raddr).
 * Errors are negative errno values.
 */
#ifndef XFI_NIC_H
#define XFI_NIC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include XFI_NIC_IMPL

struct xfi_nic;		/* an open device (one per domain) */
struct xfi_nic_ep;	/* packet send channels + receive mailbox (one per endpoint) */
struct xfi_nic_rdma;	/* RDMA context of a domain */

/* A registration: addr/len as registered, key for FI_RMA (xfi_nic_key_raddr). */
struct xfi_nic_mr {
	void *addr;
	size_t len;
	uint64_t key;
	void *hw;		/* the backend's */
};

/* What the NI does with the memory (on-demand registrations are held to it). */
#define XFI_NIC_MR_NI_READS	0x1u	/* send buffer, RDMA write source */
#define XFI_NIC_MR_NI_WRITES	0x2u	/* receive buffer, RDMA read destination */
#define XFI_NIC_MR_ON_DEMAND	0x4u	/* not pinned; -EOPNOTSUPP where unsupported */

int xfi_nic_open(const char *path, struct xfi_nic **nic);
void xfi_nic_close(struct xfi_nic *nic);
uint32_t xfi_nic_node_id(const struct xfi_nic *nic);

/* Endpoint: XFI_NIC_CHANNELS send channels and a mailbox of about slots
 * packets; its address is (node, xfi_nic_ep_mbox). */
int xfi_nic_ep_open(struct xfi_nic *nic, unsigned int slots, struct xfi_nic_ep **ep);
void xfi_nic_ep_close(struct xfi_nic_ep *ep);	/* aborts channels in flight */
uint32_t xfi_nic_ep_mbox(const struct xfi_nic_ep *ep);
/* Send len (<= XFI_PKT_MAX) bytes on channel chan, whose outcome the engine
 * read since its last send (the engine's busy bit: no status check here). */
int xfi_nic_send(struct xfi_nic_ep *ep, unsigned int chan, uint32_t node, uint32_t mbox,
		 const void *pkt, size_t len);
/* Outcome of the channel's last send: 0 delivered, -EINPROGRESS, -ENOBUFS
 * (nothing delivered, the receiver was full: send again), else failed. */
int xfi_nic_chan_status(struct xfi_nic_ep *ep, unsigned int chan);
/* Next packet: its length (and the sender's node), 0 if none, -EIO for a
 * bad one (consumed), another negative errno if the mailbox is unusable. */
ssize_t xfi_nic_recv(struct xfi_nic_ep *ep, void *buf, size_t len, uint32_t *src_node);

/* Registrations (access: XFI_NIC_MR_*; 0: pinned for FI_RMA). */
int xfi_nic_reg_mr(struct xfi_nic *nic, void *addr, size_t len, uint32_t access,
		   struct xfi_nic_mr **mr);
void xfi_nic_dereg_mr(struct xfi_nic_mr *mr);
/* Where a peer finds buf (inside mr) for an RDMA read. */
void xfi_nic_mr_remote(const struct xfi_nic_mr *mr, const void *buf, uint32_t *node,
		       uint32_t *rank, uint64_t *raddr);
/* Remote address of virtual address va under RMA key: rank and address. */
int xfi_nic_key_raddr(uint64_t key, uint64_t va, uint32_t *rank, uint64_t *raddr);

/* RDMA (len <= XFI_NIC_RDMA_MAX_LEN).  The local buffer lies in lmr.  Post
 * returns a slot, -EAGAIN when all are busy; poll gives 0 done,
 * -EINPROGRESS, else the error (the slot is free again once it is not
 * -EINPROGRESS). */
int xfi_nic_rdma_alloc(struct xfi_nic *nic, struct xfi_nic_rdma **rdma);
void xfi_nic_rdma_free(struct xfi_nic_rdma *rdma);
int xfi_nic_rdma_post(struct xfi_nic_rdma *rdma, int is_read, void *buf,
		      const struct xfi_nic_mr *lmr, uint32_t node, uint32_t rank, uint64_t raddr,
		      size_t len);
int xfi_nic_rdma_poll(struct xfi_nic_rdma *rdma, unsigned int slot);
/* The owner of a posted slot is gone (endpoint closed) and will not poll
 * it again: the slot drains, i.e. stays taken until the engine reports the
 * operation finished (so late data or notifications are never credited to
 * a new operation on the slot), and is freed by a later post or poll on
 * the same context. */
void xfi_nic_rdma_abandon(struct xfi_nic_rdma *rdma, unsigned int slot);

#endif
