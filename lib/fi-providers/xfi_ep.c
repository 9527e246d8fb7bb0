// SPDX-License-Identifier: MIT
/*
 * RDM endpoints: open, close, bind, enable, the operation tables
 * (fi_ops_msg, fi_ops_tagged, fi_ops_ep, fi_ops_cm, fi_ops) and the
 * cancel and option calls.  FI_MSG and FI_TAGGED go over the packetizer
 * -> mailbox path:
 *
 * Send: an operation is cut into packets (xfi_proto.h) and handed to the
 * endpoint's four packetizer channels.  A packet stays in its channel slot
 * until the NI reports ACK; NACK FULL (the peer's mailbox is full) resends
 * it from the slot, so a flood never loses data.  At most
 * XFI_REORDER_WINDOW packets per peer are between the oldest unacknowledged
 * one and the newest, which bounds the receiver's reorder buffer.  The
 * send completes when all its packets are ACKed.
 *
 * Receive: packets of each (sender, receiver) pair are put back in
 * sequence order, then a START packet is matched against the posted
 * receives (or queued as unexpected, buffered in memory) and the CONT
 * packets fill it.  Matching happens in arrival order of START packets,
 * i.e. in send order per sender.
 *
 * Everything runs from the caller's calls (manual progress): posting and
 * reading a CQ make no system call.
 *
 * Sending: xfi_tx.c, xfi_peer.c; receiving: xfi_recv.c, xfi_rx.c,
 * xfi_msg.c, xfi_rndv.c; both run from xfi_progress.c.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfi.h"

/* ---- fi_ops_msg / fi_ops_tagged ---- */

static ssize_t xfi_send_buf(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest,
			    uint64_t tag, uint64_t data, uint64_t flags, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (len && !buf)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "%zu bytes from no buffer\n", len);
	return xfi_post_send(xfi_ep_of(fid), &iov, 1, dest, tag, data, flags, context);
}

static ssize_t xfi_recv_buf(struct fid_ep *fid, void *buf, size_t len, fi_addr_t src,
			    uint64_t tag, uint64_t ignore, uint64_t flags, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	if (len && !buf)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "%zu bytes into no buffer\n", len);
	return xfi_post_recv(xfi_ep_of(fid), &iov, 1, src, tag, ignore, flags, context);
}

/*
 * Flags of the calls that take none: the endpoint's op_flags.  Their
 * FI_COMPLETION matters only on a CQ bound with FI_SELECTIVE_COMPLETION
 * (Open MPI asks for it in op_flags and sends small messages with
 * fi_tinject); FI_DELIVERY_COMPLETE (tx), FI_MULTI_RECV (untagged rx).
 */
/* What fi_sendmsg / fi_tsendmsg take of their flags. */
#define XFI_SENDMSG_FLAGS (FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA | FI_DELIVERY_COMPLETE)
/*
 * And what they accept without passing it on (fi_msg(3), fi_tagged(3)):
 * FI_MORE is a hint; a completion when the NI took the data or the peer
 * acknowledged it is what every send gets anyway (FI_INJECT_COMPLETE,
 * FI_TRANSMIT_COMPLETE).  Refused with -FI_EBADFLAGS: FI_FENCE and
 * FI_MULTICAST (capabilities not offered), FI_MATCH_COMPLETE (a
 * delivery-complete send completes once the message is at the receiver,
 * matched or not), anything else.
 */
#define XFI_SEND_HINTS (FI_MORE | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE)
/* fi_recvmsg: FI_CLAIM and FI_DISCARD need FI_BUFFERED_RECV (not offered) */
#define XFI_RECVMSG_FLAGS (FI_COMPLETION | FI_MULTI_RECV)
#define XFI_TRECVMSG_FLAGS (FI_COMPLETION | FI_PEEK | FI_CLAIM | FI_DISCARD)

/* flags of an fi_*msg call outside allowed: refused, and said so */
#define XFI_CHECK_MSG_FLAGS(call, flags, allowed)					\
	do {										\
		if ((flags) & ~(uint64_t)(allowed))					\
			XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EBADFLAGS,			\
				       call ": flags %#" PRIx64 " not supported\n",	\
				       (uint64_t)((flags) & ~(uint64_t)(allowed)));	\
	} while (0)
#define XFI_TX_DEFAULT(fid) (xfi_ep_of(fid)->tx_op_flags)
#define XFI_RX_DEFAULT(fid) (xfi_ep_of(fid)->rx_op_flags)
#define XFI_MSG_RX_DEFAULT(fid) (xfi_ep_of(fid)->rx_op_flags | xfi_ep_of(fid)->rx_multi)

static ssize_t xfi_msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			    fi_addr_t src, void *context)
{
	(void)desc;
	return xfi_recv_buf(ep, buf, len, src, 0, 0, FI_MSG | XFI_MSG_RX_DEFAULT(ep), context);
}

static ssize_t xfi_msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t src, void *context)
{
	(void)desc;
	return xfi_post_recv(xfi_ep_of(ep), iov, count, src, 0, 0,
			     FI_MSG | XFI_MSG_RX_DEFAULT(ep), context);
}

static ssize_t xfi_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "no message\n");
	XFI_CHECK_MSG_FLAGS("fi_recvmsg", flags, XFI_RECVMSG_FLAGS | FI_MORE);
	return xfi_post_recv(xfi_ep_of(ep), msg->msg_iov, msg->iov_count, msg->addr, 0, 0,
			     (flags & XFI_RECVMSG_FLAGS) | FI_MSG, msg->context);
}

static ssize_t xfi_msg_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    fi_addr_t dest, void *context)
{
	(void)desc;
	return xfi_send_buf(ep, buf, len, dest, 0, 0, FI_MSG | XFI_TX_DEFAULT(ep), context);
}

static ssize_t xfi_msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t dest, void *context)
{
	(void)desc;
	return xfi_post_send(xfi_ep_of(ep), iov, count, dest, 0, 0, FI_MSG | XFI_TX_DEFAULT(ep),
			     context);
}

static ssize_t xfi_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "no message\n");
	XFI_CHECK_MSG_FLAGS("fi_sendmsg", flags, XFI_SENDMSG_FLAGS | XFI_SEND_HINTS);
	return xfi_post_send(xfi_ep_of(ep), msg->msg_iov, msg->iov_count, msg->addr, 0,
			     msg->data, (flags & XFI_SENDMSG_FLAGS) |
			     FI_MSG, msg->context);
}

static ssize_t xfi_msg_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{
	return xfi_send_buf(ep, buf, len, dest, 0, 0, FI_MSG | FI_INJECT | XFI_NO_COMPLETION,
			    NULL);
}

static ssize_t xfi_msg_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
				uint64_t data, fi_addr_t dest, void *context)
{
	(void)desc;
	return xfi_send_buf(ep, buf, len, dest, 0, data,
			    FI_MSG | FI_REMOTE_CQ_DATA | XFI_TX_DEFAULT(ep), context);
}

static ssize_t xfi_msg_injectdata(struct fid_ep *ep, const void *buf, size_t len,
				  uint64_t data, fi_addr_t dest)
{
	return xfi_send_buf(ep, buf, len, dest, 0, data, FI_MSG | FI_INJECT | FI_REMOTE_CQ_DATA |
			    XFI_NO_COMPLETION, NULL);
}

static struct fi_ops_msg xfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = xfi_msg_recv,
	.recvv = xfi_msg_recvv,
	.recvmsg = xfi_msg_recvmsg,
	.send = xfi_msg_send,
	.sendv = xfi_msg_sendv,
	.sendmsg = xfi_msg_sendmsg,
	.inject = xfi_msg_inject,
	.senddata = xfi_msg_senddata,
	.injectdata = xfi_msg_injectdata,
};

static ssize_t xfi_tag_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			    fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	(void)desc;
	return xfi_recv_buf(ep, buf, len, src, tag, ignore, FI_TAGGED | XFI_RX_DEFAULT(ep), context);
}

static ssize_t xfi_tag_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore,
			     void *context)
{
	(void)desc;
	return xfi_post_recv(xfi_ep_of(ep), iov, count, src, tag, ignore,
			     FI_TAGGED | XFI_RX_DEFAULT(ep), context);
}

static ssize_t xfi_tag_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			       uint64_t flags)
{
	if (!msg)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "no message\n");
	if (flags & FI_MULTI_RECV)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EBADFLAGS,
			       "FI_MULTI_RECV: untagged messages only\n");
	XFI_CHECK_MSG_FLAGS("fi_trecvmsg", flags, XFI_TRECVMSG_FLAGS | FI_MORE);
	/* FI_DISCARD goes with FI_PEEK or FI_CLAIM (fi_tagged(3)) */
	if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM)))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL,
			       "fi_trecvmsg: FI_DISCARD without FI_PEEK or FI_CLAIM\n");
	return xfi_post_recv(xfi_ep_of(ep), msg->msg_iov, msg->iov_count, msg->addr, msg->tag,
			     msg->ignore, (flags & XFI_TRECVMSG_FLAGS) | FI_TAGGED, msg->context);
}

static ssize_t xfi_tag_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    fi_addr_t dest, uint64_t tag, void *context)
{
	(void)desc;
	return xfi_send_buf(ep, buf, len, dest, tag, 0, FI_TAGGED | XFI_TX_DEFAULT(ep), context);
}

static ssize_t xfi_tag_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t dest, uint64_t tag, void *context)
{
	(void)desc;
	return xfi_post_send(xfi_ep_of(ep), iov, count, dest, tag, 0, FI_TAGGED | XFI_TX_DEFAULT(ep),
			     context);
}

static ssize_t xfi_tag_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			       uint64_t flags)
{
	if (!msg)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "no message\n");
	XFI_CHECK_MSG_FLAGS("fi_tsendmsg", flags, XFI_SENDMSG_FLAGS | XFI_SEND_HINTS);
	return xfi_post_send(xfi_ep_of(ep), msg->msg_iov, msg->iov_count, msg->addr, msg->tag,
			     msg->data, (flags & XFI_SENDMSG_FLAGS) |
			     FI_TAGGED, msg->context);
}

static ssize_t xfi_tag_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			      uint64_t tag)
{
	return xfi_send_buf(ep, buf, len, dest, tag, 0,
			    FI_TAGGED | FI_INJECT | XFI_NO_COMPLETION, NULL);
}

static ssize_t xfi_tag_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
				uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	(void)desc;
	return xfi_send_buf(ep, buf, len, dest, tag, data,
			    FI_TAGGED | FI_REMOTE_CQ_DATA | XFI_TX_DEFAULT(ep), context);
}

static ssize_t xfi_tag_injectdata(struct fid_ep *ep, const void *buf, size_t len,
				  uint64_t data, fi_addr_t dest, uint64_t tag)
{
	return xfi_send_buf(ep, buf, len, dest, tag, data,
			    FI_TAGGED | FI_INJECT | FI_REMOTE_CQ_DATA | XFI_NO_COMPLETION, NULL);
}

static struct fi_ops_tagged xfi_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = xfi_tag_recv,
	.recvv = xfi_tag_recvv,
	.recvmsg = xfi_tag_recvmsg,
	.send = xfi_tag_send,
	.sendv = xfi_tag_sendv,
	.sendmsg = xfi_tag_sendmsg,
	.inject = xfi_tag_inject,
	.senddata = xfi_tag_senddata,
	.injectdata = xfi_tag_injectdata,
};

/* ---- fi_ops_ep ---- */

static ssize_t xfi_ep_cancel(fid_t fid, void *context)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);
	struct xfi_queue *queues[2] = { &ep->posted_tagged, &ep->posted_msg };
	unsigned int i;

	if (!context)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "fi_cancel: no context (an operation "
			       "posted without one cannot be cancelled)\n");
	xfi_dom_lock(ep->dom);
	for (i = 0; i < 2; i++) {
		struct xfi_link *prev = NULL, *cur;

		for (cur = queues[i]->head; cur; prev = cur, cur = cur->next) {
			struct xfi_rx_entry *rx = XFI_ITEM(cur, struct xfi_rx_entry);

			if (rx->context != context)
				continue;
			xfi_q_unlink(queues[i], prev, cur);
			if (rx->flags & FI_MULTI_RECV) {
				/* pieces in progress complete; the last says FI_MULTI_RECV */
				if (rx->pending)
					rx->released = 1;
				else
					xfi_rx_error(ep, rx, FI_RECV | FI_MSG | FI_MULTI_RECV,
						     FI_ECANCELED);
			} else {
				xfi_rx_error(ep, rx, FI_RECV | (rx->flags & (FI_MSG | FI_TAGGED)),
					     FI_ECANCELED);
			}
			xfi_dom_unlock(ep->dom);
			return 0;
		}
	}
	xfi_dom_unlock(ep->dom);
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOENT, "no posted receive with context %p\n",
		       context);
}

static int xfi_ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOPROTOOPT,
			       "level %d option %d: only FI_OPT_MIN_MULTI_RECV\n", level, optname);
	if (!optval || !optlen || *optlen < sizeof(size_t))
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ETOOSMALL, "no room for a size_t\n");
	xfi_dom_lock(ep->dom);
	*(size_t *)optval = ep->min_multi_recv;
	xfi_dom_unlock(ep->dom);
	*optlen = sizeof(size_t);
	return 0;
}

static int xfi_ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOPROTOOPT,
			       "level %d option %d: only FI_OPT_MIN_MULTI_RECV\n", level, optname);
	if (!optval || optlen != sizeof(size_t))
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "value of %zu bytes, not a size_t\n",
			       optlen);
	xfi_dom_lock(ep->dom);
	ep->min_multi_recv = *(const size_t *)optval;
	xfi_dom_unlock(ep->dom);
	return 0;
}

static int xfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
			 struct fid_ep **tx_ep, void *context)
{
	(void)sep; (void)index; (void)attr; (void)tx_ep; (void)context;
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "fi_tx_context: not supported\n");
}

static int xfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
			 struct fid_ep **rx_ep, void *context)
{
	(void)sep; (void)index; (void)attr; (void)rx_ep; (void)context;
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "fi_rx_context: not supported\n");
}

/* Queues grow on demand: report the advertised depth. */
static ssize_t xfi_ep_size_left(struct fid_ep *ep)
{
	(void)ep;
	return XFI_QUEUE_SIZE;
}

static struct fi_ops_ep xfi_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = xfi_ep_cancel,
	.getopt = xfi_ep_getopt,
	.setopt = xfi_ep_setopt,
	.tx_ctx = xfi_no_tx_ctx,
	.rx_ctx = xfi_no_rx_ctx,
	.rx_size_left = xfi_ep_size_left,
	.tx_size_left = xfi_ep_size_left,
};

/* ---- fi_ops_cm ---- */

static int xfi_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);
	struct xfi_addr a = xfi_addr_make(ep->dom->node_id, (uint8_t)ep->mbox_id);
	size_t room;

	if (!addrlen)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "no addrlen\n");
	room = *addrlen;
	*addrlen = sizeof(a);
	if (room < sizeof(a) || !addr)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ETOOSMALL, "room for %zu of %zu bytes\n",
			       addr ? room : 0, sizeof(a));
	memcpy(addr, &a, sizeof(a));
	return 0;
}

static int xfi_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void)fid; (void)addr; (void)addrlen;
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "fi_setname: not supported\n");
}

static int xfi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	(void)ep; (void)addr; (void)addrlen;
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "fi_getpeer: not supported (RDM)\n");
}

static int xfi_no_connect(struct fid_ep *ep, const void *addr, const void *param,
			  size_t paramlen)
{
	(void)ep; (void)addr; (void)param; (void)paramlen;
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "fi_connect: not supported (RDM)\n");
}

static int xfi_no_listen(struct fid_pep *pep)
{
	(void)pep;
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "fi_listen: not supported (RDM)\n");
}

static int xfi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	(void)ep; (void)param; (void)paramlen;
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "fi_accept: not supported (RDM)\n");
}

static int xfi_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	(void)pep; (void)handle; (void)param; (void)paramlen;
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "fi_reject: not supported (RDM)\n");
}

static int xfi_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	(void)ep; (void)flags;
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "fi_shutdown: not supported (RDM)\n");
}

static int xfi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		       void *context)
{
	(void)ep; (void)addr; (void)flags; (void)mc; (void)context;
	XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "fi_join: not supported (no multicast)\n");
}

static struct fi_ops_cm xfi_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = xfi_no_setname,
	.getname = xfi_ep_getname,
	.getpeer = xfi_no_getpeer,
	.connect = xfi_no_connect,
	.listen = xfi_no_listen,
	.accept = xfi_no_accept,
	.reject = xfi_no_reject,
	.shutdown = xfi_no_shutdown,
	.join = xfi_no_join,
};

/* ---- fi_ops (close, bind, control) ---- */

static void xfi_free_queue(struct xfi_queue *q, void (*fn)(struct xfi_link *))
{
	struct xfi_link *l, *next;

	for (l = q->head; l; l = next) {
		next = l->next;
		fn(l);
	}
	q->head = q->tail = NULL;
}

static void xfi_free_tx_link(struct xfi_link *l)
{
	xfi_tx_op_free(XFI_ITEM(l, struct xfi_tx_op));
}

/*
 * An entry freed with its endpoint: the last piece of a buffer that is off
 * the posted queue frees the buffer (xfi_free_rx_link()).
 */
static void xfi_rx_free_closing(struct xfi_rx_entry *rx)
{
	struct xfi_rx_entry *m = rx ? rx->multi : NULL;

	free(rx);
	if (m && !--m->pending && m->released)
		free(m);
}

static void xfi_free_rndv_link(struct xfi_link *l)
{
	struct xfi_rndv_rx *r = XFI_ITEM(l, struct xfi_rndv_rx);
	unsigned int i;

	/* reads still in flight: their slots drain in the domain, and the
	 * registrations go so that what is left of them fails */
	for (i = 0; i < r->nseg; i++) {
		if (r->slot[i] >= 0 && !r->seg_done[i])
			xfi_nic_rdma_abandon(r->dom->rdma, (unsigned int)r->slot[i]);
		xfi_mrc_put_drop(r->dom, &r->mrh[i]);
	}
	xfi_rx_free_closing(r->rx);
	free(r);
}

static void xfi_free_rx_link(struct xfi_link *l)
{
	struct xfi_rx_entry *rx = XFI_ITEM(l, struct xfi_rx_entry);

	if ((rx->flags & FI_MULTI_RECV) && rx->pending)
		rx->released = 1;	/* its last piece frees it */
	else
		free(rx);
}

static void xfi_free_msg_link(struct xfi_link *l)
{
	free(XFI_ITEM(l, struct xfi_rx_msg)->buf);
	free(XFI_ITEM(l, struct xfi_rx_msg));
}

static int xfi_ep_close(struct fid *fid)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);
	struct xfi_domain *dom = ep->dom;
	struct xfi_ep **pp;
	unsigned int b;

	xfi_dom_lock(dom);
	for (pp = &dom->eps; *pp; pp = &(*pp)->dom_next) {
		if (*pp == ep) {
			*pp = ep->dom_next;
			break;
		}
	}
	if (ep->av)
		ep->av->refs--;
	if (ep->tx_cq)
		ep->tx_cq->refs--;
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
		ep->rx_cq->refs--;
	xfi_cntr_unbind_all(ep);
	dom->refs--;
	xfi_free_queue(&ep->txq, xfi_free_tx_link);
	xfi_free_queue(&ep->tx_wait, xfi_free_tx_link);
	xfi_free_queue(&ep->tx_done, xfi_free_tx_link);
	xfi_free_queue(&ep->rndv_wait, xfi_free_tx_link);
	xfi_free_queue(&ep->rndv_rx, xfi_free_rndv_link);
	xfi_rma_free_all(ep);
	xfi_free_queue(&ep->posted_tagged, xfi_free_rx_link);
	xfi_free_queue(&ep->posted_msg, xfi_free_rx_link);
	xfi_free_queue(&ep->unexp_tagged, xfi_free_msg_link);
	xfi_free_queue(&ep->unexp_msg, xfi_free_msg_link);
	for (b = 0; b < XFI_PEER_BUCKETS; b++) {
		struct xfi_peer *p, *next;

		for (p = ep->peers[b]; p; p = next) {
			next = p->hnext;
			/* a message in progress that is not queued belongs to nobody else */
			if (p->rx_cur && !p->rx_cur->queued) {
				xfi_rx_free_closing(p->rx_cur->rx);
				xfi_msg_free(dom, p->rx_cur);
			}
			free(p);
		}
	}
	xfi_nic_ep_close(ep->nep);	/* aborts channels still ONGOING */
	xfi_dom_unlock(dom);
	free(ep);
	return 0;
}

static int xfi_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);
	int err = 0;

	if (!bfid)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "nothing to bind\n");
	/* fi_endpoint(3): flags of a CQ binding; none for an AV or an EQ
	 * (counters: xfi_cntr_bind) */
	if (bfid->fclass == FI_CLASS_CQ &&
	    (flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)))
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EBADFLAGS, "completion queue with flags %#"
			       PRIx64 ": FI_TRANSMIT, FI_RECV, FI_SELECTIVE_COMPLETION only\n",
			       flags);
	if ((bfid->fclass == FI_CLASS_AV || bfid->fclass == FI_CLASS_EQ) && flags)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EBADFLAGS, "%s with flags %#" PRIx64
			       " (none are defined)\n", bfid->fclass == FI_CLASS_AV ?
			       "address vector" : "event queue", flags);
	xfi_dom_lock(ep->dom);
	switch (bfid->fclass) {
	case FI_CLASS_AV: {
		struct xfi_av *av = XFI_CONTAINER(bfid, struct xfi_av, av_fid.fid);

		if (ep->av || av->dom != ep->dom) {
			FI_WARN(&xfi_prov, FI_LOG_EP_CTRL, "address vector: %s\n", ep->av ?
				"the endpoint has one" : "of another domain");
			err = -FI_EINVAL;
			break;
		}
		ep->av = av;
		av->refs++;
		break;
	}
	case FI_CLASS_CQ: {
		struct xfi_cq *cq = XFI_CONTAINER(bfid, struct xfi_cq, cq_fid.fid);

		if (cq->dom != ep->dom || !(flags & (FI_TRANSMIT | FI_RECV)) ||
		    ((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq)) {
			FI_WARN(&xfi_prov, FI_LOG_EP_CTRL, "completion queue with flags %#" PRIx64
				": %s\n", flags, cq->dom != ep->dom ? "of another domain" :
				!(flags & (FI_TRANSMIT | FI_RECV)) ? "neither FI_TRANSMIT nor FI_RECV" :
				"that direction has one");
			err = -FI_EINVAL;
			break;
		}
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
		}
		cq->refs++;
		break;
	}
	case FI_CLASS_CNTR:
		err = xfi_cntr_bind(ep, XFI_CONTAINER(bfid, struct xfi_cntr, cntr_fid.fid),
				    flags);
		break;
	case FI_CLASS_EQ:
		break;		/* RDM endpoints report no events */
	default:
		FI_WARN(&xfi_prov, FI_LOG_EP_CTRL, "class %zu: not supported\n", bfid->fclass);
		err = -FI_ENOSYS;
	}
	xfi_dom_unlock(ep->dom);
	return err;
}

/* The default flags of the calls that take none, per direction. */
#define XFI_TX_OPS_FLAGS	(FI_COMPLETION | FI_DELIVERY_COMPLETE)
#define XFI_RX_OPS_FLAGS	(FI_COMPLETION | FI_MULTI_RECV)

/*
 * FI_GETOPSFLAG / FI_SETOPSFLAG (fi_endpoint(3)): *flags names one
 * direction, FI_TRANSMIT or FI_RECV; set replaces that direction's
 * defaults.  Transmit also accepts the completion levels every operation
 * meets (FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE), keeping none of them.
 */
static int xfi_ep_ops_flags(struct xfi_ep *ep, int set, uint64_t *flags)
{
	uint64_t dir, f;

	if (!flags)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "ops flags: no argument\n");
	dir = *flags & (FI_TRANSMIT | FI_RECV);
	f = *flags & ~dir;
	if (dir != FI_TRANSMIT && dir != FI_RECV)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "ops flags %#" PRIx64 ": FI_TRANSMIT "
			       "or FI_RECV, one of them\n", *flags);
	if (set && (f & ~(uint64_t)(dir == FI_TRANSMIT ? XFI_TX_OPS_FLAGS | FI_INJECT_COMPLETE |
				    FI_TRANSMIT_COMPLETE : XFI_RX_OPS_FLAGS)))
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EBADFLAGS, "FI_SETOPSFLAG %#" PRIx64
			       ": not supported for %s\n", f, dir == FI_TRANSMIT ? "FI_TRANSMIT" :
			       "FI_RECV");
	xfi_dom_lock(ep->dom);
	if (set && dir == FI_TRANSMIT) {
		ep->tx_op_flags = f & XFI_TX_OPS_FLAGS;
	} else if (set) {
		ep->rx_op_flags = f & FI_COMPLETION;
		ep->rx_multi = f & FI_MULTI_RECV;
	} else {
		*flags = dir == FI_TRANSMIT ? ep->tx_op_flags : ep->rx_op_flags | ep->rx_multi;
	}
	xfi_dom_unlock(ep->dom);
	return 0;
}

static int xfi_ep_control(struct fid *fid, int command, void *arg)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);

	if (command == FI_GETOPSFLAG || command == FI_SETOPSFLAG)
		return xfi_ep_ops_flags(ep, command == FI_SETOPSFLAG, arg);
	if (command != FI_ENABLE)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOSYS, "command %d: FI_ENABLE, FI_GETOPSFLAG "
			       "and FI_SETOPSFLAG only\n", command);
	xfi_dom_lock(ep->dom);
	if (!ep->av) {
		xfi_dom_unlock(ep->dom);
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOAV, "no address vector bound\n");
	}
	/* each direction reports to a CQ, a counter or both */
	if ((!ep->tx_cq && !ep->cntr_send) || (!ep->rx_cq && !ep->cntr_recv)) {
		xfi_dom_unlock(ep->dom);
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOCQ, "no %s completion queue or counter "
			       "bound\n", ep->tx_cq || ep->cntr_send ? "receive" : "transmit");
	}
	ep->enabled = 1;
	xfi_dom_unlock(ep->dom);
	return 0;
}

static struct fi_ops xfi_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xfi_ep_close,
	.bind = xfi_ep_bind,
	.control = xfi_ep_control,
	.ops_open = xfi_no_ops_open,
	.tostr = xfi_no_tostr,
	.ops_set = xfi_no_ops_set,
};

int xfi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **epp,
		void *context)
{
	struct xfi_domain *dom = XFI_CONTAINER(domain, struct xfi_domain, domain_fid);
	struct xfi_ep *ep;
	int err;

	if (!info || !epp)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "no info or no result pointer\n");
	if (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "endpoint type %d: FI_EP_RDM only\n",
			       (int)info->ep_attr->type);
	if (info->caps & ~(uint64_t)XFI_CAPS)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "capabilities not offered: %#" PRIx64
			       "\n", info->caps & ~(uint64_t)XFI_CAPS);
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_ENOMEM, "no memory\n");
	ep->dom = dom;
	ep->caps = info->caps ? info->caps : XFI_CAPS;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags & XFI_TX_OPS_FLAGS : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags & FI_COMPLETION : 0;
	ep->rx_multi = info->rx_attr ? info->rx_attr->op_flags & FI_MULTI_RECV : 0;
	/* RMA or atomics without any of the four access bits imply all four */
	if ((ep->caps & (FI_RMA | FI_ATOMIC)) &&
	    !(ep->caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		ep->caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	err = xfi_nic_ep_open(dom->dev, (unsigned int)xfi_params.mbox_slots, &ep->nep);
	if (err) {
		FI_WARN(&xfi_prov, FI_LOG_EP_CTRL, "no send channels or no mailbox of %zu slots: "
			"%s\n", xfi_params.mbox_slots, strerror(-err));
		free(ep);
		return err;
	}
	ep->mbox_id = xfi_nic_ep_mbox(ep->nep);
	/* an address asked for (src_addr) is one this endpoint has, or none */
	if (info->src_addr) {
		struct xfi_addr want;

		if (!xfi_addr_from(info->src_addr, info->src_addrlen, 1, &want) &&
		    want.mbox != XFI_MBOX_ANY &&
		    (want.mbox != ep->mbox_id || want.node != xfi_nic_node_id(dom->dev))) {
			FI_WARN(&xfi_prov, FI_LOG_EP_CTRL, "src_addr node %u mailbox %u: this "
				"endpoint got node %u mailbox %u (a mailbox cannot be chosen)\n",
				want.node, want.mbox, xfi_nic_node_id(dom->dev), ep->mbox_id);
			xfi_nic_ep_close(ep->nep);
			free(ep);
			return -FI_EADDRNOTAVAIL;
		}
	}
	ep->min_multi_recv = XFI_MIN_MULTI_RECV;
	/* a restarted endpoint on the same mailbox is told apart by its epoch */
	ep->epoch = (uint16_t)((uint64_t)exa_clock_ns() ^ ((uint64_t)getpid() << 4));
	xfi_fid_init(&ep->ep_fid.fid, FI_CLASS_EP, context, &xfi_ep_fi_ops);
	ep->ep_fid.ops = &xfi_ep_ops;
	ep->ep_fid.cm = &xfi_cm_ops;
	ep->ep_fid.msg = &xfi_msg_ops;
	ep->ep_fid.tagged = &xfi_tagged_ops;
	ep->ep_fid.rma = &xfi_rma_ops;
	ep->ep_fid.atomic = &xfi_atomic_ops;
	xfi_dom_lock(dom);
	ep->dom_next = dom->eps;
	dom->eps = ep;
	dom->refs++;
	xfi_dom_unlock(dom);
	*epp = &ep->ep_fid;
	return 0;
}
