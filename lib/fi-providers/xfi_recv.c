// SPDX-License-Identifier: MIT
/*
 * Posting receives (fi_recv, fi_trecv and their forms): a new receive takes
 * the first unexpected message it matches, or waits on the posted queue;
 * FI_PEEK, FI_CLAIM and FI_DISCARD; FI_MULTI_RECV buffers.
 */
#include <stdlib.h>
#include <string.h>

#include "xfi.h"

/* Hand a (possibly incomplete) unexpected message to the receive rx. */
static void xfi_msg_attach(struct xfi_ep *ep, struct xfi_rx_msg *msg, struct xfi_rx_entry *rx)
{
	if (msg->rndv) {
		xfi_rndv_start(ep, msg, rx);
		return;
	}
	if (msg->buf && msg->received)
		xfi_iov_copy_in(rx, 0, msg->buf, msg->received);
	free(msg->buf);
	msg->buf = NULL;
	msg->rx = rx;
	if (msg->complete) {
		xfi_complete_rx(ep, rx, msg);
		xfi_msg_free(ep->dom, msg);
	}
}

static void xfi_peek(struct xfi_ep *ep, struct xfi_rx_entry *rx)
{
	struct xfi_rx_msg *msg = xfi_find_unexp(ep, rx, !!(rx->flags & (FI_CLAIM | FI_DISCARD)));
	struct xfi_cq_entry e = { .op_context = rx->context, .flags = FI_RECV |
		((rx->flags & FI_TAGGED) ? FI_TAGGED : FI_MSG), .src = FI_ADDR_NOTAVAIL };

	if (!msg) {
		if (ep->rx_cq)
			xfi_cq_push_err(ep->rx_cq, &e, FI_ENOMSG, 0);
		free(rx);
		return;
	}
	e.flags = xfi_rx_cq_flags(msg);
	e.len = msg->len;
	e.tag = msg->tag;
	e.data = msg->data;
	{
		struct xfi_peer *p = xfi_peer_get(ep, msg->src_key);

		e.src = p ? xfi_peer_addr(ep, p) : FI_ADDR_NOTAVAIL;
	}
	if (rx->flags & FI_DISCARD) {
		xfi_msg_discard(ep, msg);
	} else if (rx->flags & FI_CLAIM) {
		((struct fi_context *)rx->context)->internal[0] = msg;
	}
	if (ep->rx_cq)
		xfi_cq_push(ep->rx_cq, &e);
	free(rx);
}

/*
 * A new FI_MULTI_RECV buffer takes the unexpected messages that fit, then
 * waits on the posted queue unless it is full already.
 */
static void xfi_multi_post(struct xfi_ep *ep, struct xfi_rx_entry *m)
{
	struct xfi_rx_msg *msg;

	while ((msg = xfi_find_unexp(ep, m, 0))) {
		struct xfi_rx_entry *piece;
		int last;

		if (!xfi_multi_fits(m, msg->len)) {
			xfi_multi_release(ep, m);
			return;
		}
		piece = xfi_multi_piece(ep, m, msg->len);
		if (!piece)
			break;
		last = m->released;	/* m may be gone once the piece completes */
		xfi_msg_attach(ep, xfi_find_unexp(ep, m, 1), piece);
		if (last)
			return;
	}
	xfi_q_push(&ep->posted_msg, &m->link);
}

ssize_t xfi_post_recv(struct xfi_ep *ep, const struct iovec *iov, size_t count, fi_addr_t src,
		      uint64_t tag, uint64_t ignore, uint64_t flags, void *context)
{
	struct xfi_rx_entry *rx;
	struct xfi_rx_msg *msg;
	uint32_t key = XFI_ANY_SRC;

	if (count > XFI_IOV_LIMIT || (count && !iov))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "%zu iovs (at most %d)\n", count,
			       XFI_IOV_LIMIT);
	if ((flags & (FI_CLAIM | FI_PEEK)) && !context)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "FI_PEEK or FI_CLAIM without a context\n");
	/* one buffer of untagged messages */
	if ((flags & FI_MULTI_RECV) &&
	    (count != 1 || (flags & (FI_TAGGED | FI_PEEK | FI_CLAIM | FI_DISCARD))))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL,
			       "FI_MULTI_RECV: one untagged buffer, no peek/claim/discard\n");
	xfi_dom_lock(ep->dom);
	rx = xfi_cache_get(&ep->dom->rx_cache, sizeof(*rx));
	if (!rx) {
		xfi_dom_unlock(ep->dom);
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_ENOMEM, "no memory\n");
	}
	rx->context = context;
	if (count)
		memcpy(rx->iov, iov, count * sizeof(*iov));
	rx->iov_count = count;
	rx->capacity = xfi_iov_total(iov, count);
	rx->tag = tag;
	rx->ignore = ignore;
	rx->flags = flags;
	if (!ep->enabled) {
		xfi_dom_unlock(ep->dom);
		free(rx);
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EOPBADSTATE, "endpoint not enabled\n");
	}
	if ((ep->caps & FI_DIRECTED_RECV) && src != FI_ADDR_UNSPEC &&
	    xfi_av_key(ep->av, src, &key)) {
		xfi_dom_unlock(ep->dom);
		free(rx);
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "no such source %#" PRIx64 "\n", src);
	}
	rx->src_key = key;
	if (flags & FI_PEEK) {
		xfi_ep_progress(ep);
		xfi_peek(ep, rx);
		xfi_dom_unlock(ep->dom);
		return 0;
	}
	if (flags & FI_CLAIM) {
		msg = ((struct fi_context *)context)->internal[0];
		if (!msg) {
			xfi_dom_unlock(ep->dom);
			free(rx);
			XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL,
				       "FI_CLAIM of a context that FI_PEEK did not fill\n");
		}
		((struct fi_context *)context)->internal[0] = NULL;
		if (flags & FI_DISCARD) {
			struct xfi_cq_entry e = { .op_context = context, .flags = xfi_rx_cq_flags(msg),
				.tag = msg->tag, .src = FI_ADDR_NOTAVAIL };

			xfi_msg_discard(ep, msg);
			xfi_cntr_count(ep, FI_RECV, 0);
			if (ep->rx_cq)
				xfi_cq_push(ep->rx_cq, &e);
			free(rx);
		} else {
			xfi_msg_attach(ep, msg, rx);
		}
		xfi_dom_unlock(ep->dom);
		return 0;
	}
	if (flags & FI_MULTI_RECV) {
		xfi_multi_post(ep, rx);
		xfi_dom_unlock(ep->dom);
		return 0;
	}
	msg = xfi_find_unexp(ep, rx, 1);
	if (msg)
		xfi_msg_attach(ep, msg, rx);
	else
		xfi_q_push((flags & FI_TAGGED) ? &ep->posted_tagged : &ep->posted_msg, &rx->link);
	xfi_dom_unlock(ep->dom);
	return 0;
}
