// SPDX-License-Identifier: MIT
/*
 * Rendezvous receives: a message above the threshold stays at its sender
 * until a receive takes it, then RDMA reads copy it straight into the
 * receive buffer (registered through the MR cache), and a FIN tells the
 * sender that its buffer is free.
 */
#include <stdlib.h>
#include <string.h>

#include "xfi.h"

void xfi_rndv_start(struct xfi_ep *ep, struct xfi_rx_msg *msg, struct xfi_rx_entry *rx)
{
	struct xfi_rndv_rx *r = calloc(1, sizeof(*r));
	uint64_t want;
	size_t i;

	if (!r) {
		xfi_rx_error(ep, rx, xfi_rx_cq_flags(msg), FI_ENOMEM);
		xfi_send_fin(ep, msg->src_key, msg->rd.cookie, FI_ENOMEM);
		xfi_msg_free(ep->dom, msg);
		return;
	}
	r->rx = rx;
	r->dom = ep->dom;
	r->src_key = msg->src_key;
	r->tag = msg->tag;
	r->data = msg->data;
	r->len = msg->len;
	r->flags = msg->flags;
	r->rd = msg->rd;
	xfi_msg_free(ep->dom, msg);
	want = r->len < rx->capacity ? r->len : rx->capacity;
	if (want && !xfi_dom_rdma(ep->dom))
		r->err = -FI_ENODEV;
	/* register the part of each receive segment the message fills (the
	 * MR cache: a system call only the first time) */
	for (i = 0; i < rx->iov_count && want && !r->err; i++) {
		size_t seg = rx->iov[i].iov_len < want ? rx->iov[i].iov_len : (size_t)want;

		if (!seg)
			continue;
		r->err = xfi_mrc_get(ep->dom, rx->iov[i].iov_base, seg, XFI_MR_NI_WRITES,
				     &r->mrh[r->nseg]);
		if (r->err)
			break;
		r->seg_base[r->nseg] = rx->iov[i].iov_base;
		r->seg_len[r->nseg] = seg;
		r->slot[r->nseg] = -1;
		r->nseg++;
		want -= seg;
	}
	xfi_q_push(&ep->rndv_rx, &r->link);
}

/* Post and poll the reads of r; 1 when nothing is in flight any more. */
static int xfi_rndv_advance(struct xfi_ep *ep, struct xfi_rndv_rx *r)
{
	struct xfi_nic_rdma *rdma = ep->dom->rdma;
	uint64_t off = 0;
	int busy = 0;
	unsigned int i;

	for (i = 0; i < r->nseg; off += r->seg_len[i], i++) {
		int ret;

		if (r->seg_done[i])
			continue;
		if (r->slot[i] < 0) {
			if (r->err) {
				r->seg_done[i] = 1;	/* never posted */
				continue;
			}
			/* the sender's address: a wrap past 2^64 is refused, not
			 * read from (the backends check only the sum) */
			ret = r->rd.va + off < r->rd.va ? -EINVAL :
				xfi_nic_rdma_post(rdma, 1, r->seg_base[i], r->mrh[i].mr, r->rd.node,
						  r->rd.rank, r->rd.va + off, r->seg_len[i]);
			if (ret == -EAGAIN) {	/* all read channels busy: later */
				busy = 1;
				continue;
			}
			if (ret < 0) {
				r->err = ret;
				r->seg_done[i] = 1;
				continue;
			}
			r->slot[i] = ret;
		}
		ret = xfi_nic_rdma_poll(rdma, (unsigned int)r->slot[i]);
		if (ret == -EINPROGRESS) {
			busy = 1;
			continue;
		}
		r->seg_done[i] = 1;
		if (ret && !r->err)
			r->err = ret;
	}
	return !busy;
}

static void xfi_rndv_finish(struct xfi_ep *ep, struct xfi_rndv_rx *r)
{
	struct xfi_rx_msg m = {
		.src_key = r->src_key, .tag = r->tag, .data = r->data, .flags = r->flags,
		.len = r->len,
	};
	unsigned int i;

	for (i = 0; i < r->nseg; i++)
		xfi_mrc_put(ep->dom, &r->mrh[i]);
	if (r->err)
		FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "rendezvous read of %" PRIu64
			" bytes from node %u rank %u (key %#x, tag %#" PRIx64 ") failed: %s\n",
			(uint64_t)r->len, r->rd.node, r->rd.rank, r->src_key, r->tag,
			strerror(r->err < 0 ? -r->err : r->err));
	if (r->err)
		xfi_rx_error(ep, r->rx, xfi_rx_cq_flags(&m), -r->err);
	else
		xfi_complete_rx(ep, r->rx, &m);
	xfi_send_fin(ep, r->src_key, r->rd.cookie, r->err);
	free(r);
}

void xfi_rndv_progress(struct xfi_ep *ep)
{
	struct xfi_link *prev = NULL, *cur, *next;

	for (cur = ep->rndv_rx.head; cur; cur = next) {
		struct xfi_rndv_rx *r = XFI_ITEM(cur, struct xfi_rndv_rx);

		next = cur->next;
		if (!xfi_rndv_advance(ep, r)) {
			prev = cur;
			continue;
		}
		xfi_q_unlink(&ep->rndv_rx, prev, cur);
		xfi_rndv_finish(ep, r);
	}
}
