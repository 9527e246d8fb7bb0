// SPDX-License-Identifier: MIT
/*
 * FI_RMA: fi_write / fi_read straight on the ExaNet RDMA engine.  The
 * target is (node of the AV address, rank carried in the key, virtual
 * address); the NI checks the protection domain and that the address is
 * registered in the target rank's IOMMU domain, and reports anything else
 * as an error completion (the target's memory is not touched).  The local
 * buffer must be registered: the descriptor of an RMA registration, or it
 * is registered for the operation (a system call).  Posting and polling
 * make no system call.  Completion = the RDMA channel is DONE (write: all
 * data acknowledged by the target; read: all data landed here); for
 * fi_writedata, the delivery of the notification that follows the write
 * in the message stream (xfi_tx_rma_data()).  fi_inject_write(data):
 * writes of at most inject_size bytes from a copy, without a completion.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "xfi.h"

static struct xfi_nic_mr *xfi_local_mr(void *desc, const void *buf, size_t len)
{
	const struct xfi_mr *mr = desc;
	struct xfi_nic_mr *x = mr ? mr->xmr : NULL;
	uintptr_t b = (uintptr_t)buf, s;

	if (!x)
		return NULL;
	s = (uintptr_t)x->addr;
	return b >= s && len <= x->len && b - s <= x->len - len ? x : NULL;
}

static ssize_t xfi_rma_post(struct fid_ep *fid, int is_read, void *buf, size_t len, void *desc,
			    fi_addr_t peer, uint64_t addr, uint64_t key, uint64_t flags,
			    uint64_t data, void *context)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid);
	struct xfi_rma_op *op;
	struct xfi_nic_rdma *rdma;
	struct xfi_nic_mr *lmr;
	const char *why = NULL;
	uint32_t peer_key, rank;
	uint64_t raddr;
	int err = 0, slot;

	if ((len && !buf) || len > XFI_NIC_RDMA_MAX_LEN)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "%zu bytes at %p (at most %llu)\n", len,
			       buf, (unsigned long long)XFI_NIC_RDMA_MAX_LEN);
	if ((flags & FI_INJECT) && (is_read || len > XFI_INJECT_SIZE))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, is_read ? -FI_EINVAL : -FI_EMSGSIZE,
			       "FI_INJECT: writes of at most %d bytes\n", (int)XFI_INJECT_SIZE);
	if (!(ep->caps & FI_RMA))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EOPNOTSUPP, "endpoint opened without FI_RMA\n");
	op = calloc(1, sizeof(*op));
	if (!op)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_ENOMEM, "no memory\n");
	op->context = context;
	op->flags = FI_RMA | (is_read ? FI_READ : FI_WRITE) |
		(flags & (FI_COMPLETION | XFI_NO_COMPLETION |
		  (is_read ? 0 : FI_REMOTE_CQ_DATA | FI_INJECT)));
	if (flags & FI_INJECT) {
		/* the caller may reuse buf at once: the NI reads a copy (its
		 * registration comes from the MR cache, like any buffer
		 * without a descriptor) */
		op->bounce = malloc(len ? len : 1);
		if (!op->bounce) {
			free(op);
			XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_ENOMEM, "no memory\n");
		}
		memcpy(op->bounce, buf, len);
		buf = op->bounce;
		desc = NULL;
	}
	op->data = data;
	op->len = len;
	op->slot = -1;
	xfi_dom_lock(ep->dom);
	if (!ep->enabled) {
		why = "endpoint not enabled";
		err = -FI_EOPBADSTATE;
	} else if (xfi_av_key(ep->av, peer, &peer_key)) {
		why = "no such peer";
		err = -FI_EINVAL;
	}
	op->peer_key = peer_key;
	if (err || !len)
		goto out;
	rdma = xfi_dom_rdma(ep->dom);
	if (!rdma) {
		why = "the domain has no RDMA page";
		err = -FI_ENODEV;
		goto out;
	}
	err = xfi_nic_key_raddr(key, addr, &rank, &raddr);
	if (err) {
		why = "bad remote address or key";
		goto out;
	}
	lmr = xfi_local_mr(desc, buf, len);
	if (!lmr) {
		err = xfi_mrc_get(ep->dom, buf, len, is_read ? XFI_MR_NI_WRITES : XFI_MR_NI_READS,
				  &op->tmp);
		if (err) {
			why = "local buffer not registered";
			goto out;
		}
		lmr = op->tmp.mr;
	}
	slot = xfi_nic_rdma_post(rdma, is_read, buf, lmr, xfi_key_node(peer_key), rank, raddr,
				 len);
	if (slot < 0) {
		err = slot == -EAGAIN ? -FI_EAGAIN : slot;	/* all channels busy: retry */
		why = "the RDMA engine refused the descriptor";
		goto out;
	}
	op->slot = slot;
out:
	if (!err)
		xfi_q_push(&ep->rma_ops, &op->link);
	xfi_dom_unlock(ep->dom);
	if (err && err != -FI_EAGAIN)
		FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "%s of %zu bytes, peer %#" PRIx64 ": %s (%s)\n",
			is_read ? "read" : "write", len, peer, why, fi_strerror(-err));
	if (err) {
		xfi_mrc_put(ep->dom, &op->tmp);
		free(op->bounce);
		free(op);
	}
	return err;
}

void xfi_rma_progress(struct xfi_ep *ep)
{
	struct xfi_link *prev = NULL, *cur, *next;

	for (cur = ep->rma_ops.head; cur; cur = next) {
		struct xfi_rma_op *op = XFI_ITEM(cur, struct xfi_rma_op);
		struct xfi_cq_entry e = { .op_context = op->context,
			.flags = op->flags & (FI_RMA | FI_READ | FI_WRITE), .src = FI_ADDR_NOTAVAIL };
		int ret = 0;

		next = cur->next;
		if (op->slot >= 0)
			ret = xfi_nic_rdma_poll(ep->dom->rdma, (unsigned int)op->slot);
		if (ret == -EINPROGRESS) {
			prev = cur;
			continue;
		}
		xfi_q_unlink(&ep->rma_ops, prev, cur);
		if (ret)
			FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "RDMA %s of %zu bytes failed: %s\n",
				(op->flags & FI_READ) ? "read" : "write", op->len, strerror(-ret));
		/* fi_writedata: the data is in place, now its notification
		 * (which completes the operation) */
		if (!ret && (op->flags & FI_REMOTE_CQ_DATA)) {
			ret = xfi_tx_rma_data(ep, op->peer_key, op->data, op->flags, op->context);
			if (!ret) {
				xfi_mrc_put(ep->dom, &op->tmp);
				free(op->bounce);
				free(op);
				continue;
			}
			FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "fi_writedata: no memory for the "
				"notification\n");
		}
		xfi_cntr_count(ep, op->flags, ret);
		if (ep->tx_cq) {
			if (ret)
				xfi_cq_push_err(ep->tx_cq, &e, ret, 0);
			else if (xfi_tx_wants_completion(ep, op->flags))
				xfi_cq_push(ep->tx_cq, &e);
		}
		xfi_mrc_put(ep->dom, &op->tmp);
		free(op->bounce);
		free(op);
	}
}

/*
 * A read into memory the application registered itself (its own desc)
 * cannot be cut short by dropping a registration of ours: wait until the
 * NI is done with it, so that nothing lands in the buffer after fi_close()
 * returned.  The NI ends every transfer, with an error at the latest when
 * its retransmission budget toward the peer runs out.
 */
static void xfi_rma_wait_out(struct xfi_ep *ep, struct xfi_rma_op *op)
{
	unsigned long polls = 0;

	while (xfi_nic_rdma_poll(ep->dom->rdma, (unsigned int)op->slot) == -EINPROGRESS)
		if (++polls % 64 == 0)
			sched_yield();
	op->slot = -1;		/* released by the poll that saw it finish */
}

void xfi_rma_free_all(struct xfi_ep *ep)
{
	struct xfi_link *l, *next;

	for (l = ep->rma_ops.head; l; l = next) {
		struct xfi_rma_op *op = XFI_ITEM(l, struct xfi_rma_op);

		next = l->next;
		/* a transfer still in flight fails: its registration goes now,
		 * its slot drains in the domain (xfi_nic_rdma_abandon()) */
		if (op->slot >= 0 && (op->flags & FI_READ) && !op->tmp.mr)
			xfi_rma_wait_out(ep, op);
		if (op->slot >= 0)
			xfi_nic_rdma_abandon(ep->dom->rdma, (unsigned int)op->slot);
		xfi_mrc_put_drop(ep->dom, &op->tmp);
		free(op->bounce);
		free(op);
	}
	ep->rma_ops.head = ep->rma_ops.tail = NULL;
}

/* ---- fi_ops_rma ---- */

static ssize_t xfi_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
			uint64_t addr, uint64_t key, void *context)
{
	return xfi_rma_post(ep, 1, buf, len, desc, src, addr, key, XFI_OP_FLAGS(ep), 0, context);
}

static ssize_t xfi_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	if (count != 1 || !iov)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "%zu iovs: one (rma_iov_limit)\n", count);
	return xfi_rma_post(ep, 1, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : NULL, src,
			    addr, key, XFI_OP_FLAGS(ep), 0, context);
}

/*
 * fi_rma(3) flags of fi_readmsg / fi_writemsg.  FI_MORE is a hint, and an
 * RMA completes when the target's NI has the data in place (write) or it
 * landed here (read): every completion level but FI_COMMIT_COMPLETE
 * (persistent memory) is met.  Refused with -FI_EBADFLAGS: that, FI_FENCE
 * (not offered), FI_INJECT and FI_REMOTE_CQ_DATA on a read, anything else.
 */
#define XFI_READMSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
#define XFI_WRITEMSG_FLAGS	(XFI_READMSG_FLAGS | FI_INJECT | FI_REMOTE_CQ_DATA)

static ssize_t xfi_rma_msg(struct fid_ep *ep, int is_read, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	if (!msg || msg->iov_count != 1 || msg->rma_iov_count != 1 || !msg->msg_iov ||
	    !msg->rma_iov || msg->msg_iov[0].iov_len != msg->rma_iov[0].len)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL,
			       "not one local and one remote iov of the same length\n");
	if (flags & ~(uint64_t)(is_read ? XFI_READMSG_FLAGS : XFI_WRITEMSG_FLAGS))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EBADFLAGS, "%s: flags %#" PRIx64
			       " not supported\n", is_read ? "fi_readmsg" : "fi_writemsg",
			       flags & ~(uint64_t)(is_read ? XFI_READMSG_FLAGS :
						   XFI_WRITEMSG_FLAGS));
	return xfi_rma_post(ep, is_read, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len,
			    msg->desc ? msg->desc[0] : NULL, msg->addr, msg->rma_iov[0].addr,
			    msg->rma_iov[0].key, flags, msg->data, msg->context);
}

static ssize_t xfi_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	return xfi_rma_msg(ep, 1, msg, flags);
}

static ssize_t xfi_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	return xfi_rma_post(ep, 0, (void *)buf, len, desc, dest, addr, key, XFI_OP_FLAGS(ep), 0,
			    context);
}

static ssize_t xfi_writev(struct fid_ep *ep, const struct iovec *iov, void **desc,
			  size_t count, fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	if (count != 1 || !iov)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "%zu iovs: one (rma_iov_limit)\n", count);
	return xfi_rma_post(ep, 0, iov[0].iov_base, iov[0].iov_len, desc ? desc[0] : NULL, dest,
			    addr, key, XFI_OP_FLAGS(ep), 0, context);
}

static ssize_t xfi_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	return xfi_rma_msg(ep, 0, msg, flags);
}

/* Writes of at most inject_size bytes from a copy; no completion. */
static ssize_t xfi_rma_inject(struct fid_ep *ep, const void *buf, size_t len,
			      fi_addr_t dest, uint64_t addr, uint64_t key)
{
	return xfi_rma_post(ep, 0, (void *)buf, len, NULL, dest, addr, key,
			    FI_INJECT | XFI_NO_COMPLETION, 0, NULL);
}

/* The write, then a notification that gives the target a completion with
 * the data (FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA); completes with it. */
static ssize_t xfi_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
			     void *context)
{
	return xfi_rma_post(ep, 0, (void *)buf, len, desc, dest, addr, key,
			    XFI_OP_FLAGS(ep) | FI_REMOTE_CQ_DATA, data, context);
}

static ssize_t xfi_rma_injectdata(struct fid_ep *ep, const void *buf, size_t len,
				  uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key)
{
	return xfi_rma_post(ep, 0, (void *)buf, len, NULL, dest, addr, key,
			    FI_INJECT | FI_REMOTE_CQ_DATA | XFI_NO_COMPLETION, data, NULL);
}

struct fi_ops_rma xfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = xfi_read,
	.readv = xfi_readv,
	.readmsg = xfi_readmsg,
	.write = xfi_write,
	.writev = xfi_writev,
	.writemsg = xfi_writemsg,
	.inject = xfi_rma_inject,
	.writedata = xfi_writedata,
	.injectdata = xfi_rma_injectdata,
};
