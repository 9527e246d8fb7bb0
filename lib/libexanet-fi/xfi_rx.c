// SPDX-License-Identifier: MIT
/*
 * exanet provider, endpoints: the receive side: matching posted receives and unexpected
 * messages, the receive path of every packet, rendezvous receives by RDMA
 * read.
 * Endpoint state and what these files share: xfi_ep.c, xfi.h.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfi.h"

/* ---- matching ---- */

static int xfi_match(const struct xfi_rx_entry *rx, uint32_t src_key, uint64_t tag)
{
	if (rx->src_key != XFI_ANY_SRC && rx->src_key != src_key)
		return 0;
	if ((rx->flags & FI_TAGGED) && ((rx->tag ^ tag) & ~rx->ignore))
		return 0;
	return 1;
}

static struct xfi_rx_entry *xfi_take_posted(struct xfi_ep *ep, const struct xfi_rx_msg *msg)
{
	struct xfi_queue *q = (msg->flags & XFI_START_TAGGED) ? &ep->posted_tagged :
		&ep->posted_msg;
	struct xfi_link *prev = NULL, *cur;

	struct xfi_link *next;

	for (cur = q->head; cur; cur = next) {
		struct xfi_rx_entry *rx = XFI_ITEM(cur, struct xfi_rx_entry), *piece;

		next = cur->next;
		if (!xfi_match(rx, msg->src_key, msg->tag)) {
			prev = cur;
			continue;
		}
		if (!(rx->flags & FI_MULTI_RECV)) {
			xfi_q_unlink(q, prev, cur);
			return rx;
		}
		if (!xfi_multi_fits(rx, msg->len)) {
			/* the rest of this buffer is too small: the next one */
			xfi_q_unlink(q, prev, cur);
			xfi_multi_release(ep, rx);
			continue;
		}
		piece = xfi_multi_piece(ep, rx, msg->len);
		if (piece && rx->released)
			xfi_q_unlink(q, prev, cur);
		return piece;	/* NULL: no memory, the message waits unexpected */
	}
	return NULL;
}

/* First unexpected message rx matches; unlinked from its queue if take. */
struct xfi_rx_msg *xfi_find_unexp(struct xfi_ep *ep, const struct xfi_rx_entry *rx,
					 int take)
{
	struct xfi_queue *q = (rx->flags & FI_TAGGED) ? &ep->unexp_tagged : &ep->unexp_msg;
	struct xfi_link *prev = NULL, *cur;

	for (cur = q->head; cur; prev = cur, cur = cur->next) {
		struct xfi_rx_msg *msg = XFI_ITEM(cur, struct xfi_rx_msg);

		if (xfi_match(rx, msg->src_key, msg->tag)) {
			if (take) {
				xfi_q_unlink(q, prev, cur);
				msg->queued = 0;
			}
			return msg;
		}
	}
	return NULL;
}

/* ---- receive path ---- */

/* The whole message is here; a sender that asked for FI_DELIVERY_COMPLETE
 * learns it now (the message is in the receive buffer or queued as
 * unexpected), then the message completes. */
static void xfi_msg_arrived(struct xfi_ep *ep, struct xfi_rx_msg *msg)
{
	if (msg->flags & XFI_START_DC)
		xfi_send_fin(ep, msg->src_key, msg->dc_cookie, msg->dc_status);
	xfi_msg_done(ep, msg);
}

/* fi_writedata's notification: the write before it is in our memory. */
static void xfi_rx_rma_data(struct xfi_ep *ep, struct xfi_peer *peer, uint64_t data)
{
	struct xfi_cq_entry e = {
		.flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		.data = data,
		.src = xfi_peer_addr(ep, peer),
	};

	if (!(ep->caps & FI_RMA) || !(ep->caps & FI_REMOTE_WRITE) || !ep->rx_cq) {
		ep->rx_dropped++;	/* nobody asked for remote writes here */
		return;
	}
	xfi_cq_push(ep->rx_cq, &e);
}

static void xfi_rx_start(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt,
			 size_t len, unsigned int type)
{
	struct xfi_start_info si;
	struct xfi_rx_msg m = { 0 }, *msg;

	if (peer->rx_cur) {	/* the previous message never finished */
		xfi_msg_abort(ep, peer->rx_cur);
		peer->rx_cur = NULL;
	}
	if (type == XFI_PKT_SHORT ? xfi_parse_short(pkt, len, xfi_params.max_msg_size, &si) :
	    xfi_parse_start(pkt, len, xfi_params.max_msg_size, &si)) {
		ep->rx_dropped++;
		return;
	}
	if (si.flags & XFI_START_RMA_DATA) {
		xfi_rx_rma_data(ep, peer, si.data);
		return;
	}
	m.src_key = peer->key;
	m.tag = si.tag;
	m.data = si.data;
	m.flags = si.flags;
	m.len = si.len;
	/* matched first (by source, tag and length alone) */
	m.rx = xfi_take_posted(ep, &m);
	if (m.rx && type == XFI_PKT_SHORT && !(si.flags & (XFI_START_DC | XFI_START_RNDV))) {
		/* the whole message, no FIN owed: into the posted receive
		 * without a message object (only a message that waits needs one) */
		xfi_msg_bytes(&m, si.payload, si.payload_len);
		xfi_complete_rx(ep, m.rx, &m);
		return;
	}
	msg = xfi_cache_get(&ep->dom->msg_cache, sizeof(*msg));
	if (!msg) {
		if (m.rx)	/* the receive fails rather than wait for data never kept */
			xfi_rx_error(ep, m.rx, xfi_rx_cq_flags(&m), FI_ENOMEM);
		ep->rx_dropped++;
		return;
	}
	*msg = m;
	if (si.flags & XFI_START_DC) {
		struct xfi_hdr h;

		memcpy(&h, pkt, sizeof(h));
		msg->dc_cookie = XFI_DC_COOKIE(h.seq);
	}
	if (si.flags & XFI_START_RNDV) {
		/* the data stays at the sender until a receive takes it */
		msg->rndv = 1;
		msg->rd = si.rndv;
		msg->received = msg->len;
		msg->complete = 1;
		if (msg->rx) {
			xfi_rndv_start(ep, msg, msg->rx);
		} else {
			xfi_q_push(xfi_unexp_queue(ep, msg->flags), &msg->link);
			msg->queued = 1;
		}
		return;
	}
	if (!msg->rx) {
		msg->buf = malloc(si.len ? si.len : 1);
		if (msg->buf) {
			xfi_q_push(xfi_unexp_queue(ep, msg->flags), &msg->link);
			msg->queued = 1;
		} else {
			msg->discard = 1;	/* out of memory: consume and drop */
			msg->dc_status = FI_ENOMEM;
			ep->rx_dropped++;
		}
	}
	xfi_msg_bytes(msg, si.payload, si.payload_len);
	if (msg->received == msg->len)
		xfi_msg_arrived(ep, msg);
	else
		peer->rx_cur = msg;
}

static void xfi_rx_cont(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt,
			size_t len)
{
	struct xfi_rx_msg *msg = peer->rx_cur;
	int n;

	if (!msg) {
		ep->rx_dropped++;
		return;
	}
	n = xfi_parse_cont(len, msg->len - msg->received);
	if (n < 0) {
		ep->rx_dropped++;
		xfi_msg_abort(ep, msg);
		peer->rx_cur = NULL;
		return;
	}
	xfi_msg_bytes(msg, pkt + XFI_HDR_SIZE, (size_t)n);
	if (msg->received == msg->len) {
		peer->rx_cur = NULL;
		xfi_msg_arrived(ep, msg);
	}
}

/* An in-sequence packet (already validated by xfi_parse_hdr). */

struct xfi_tx_op *xfi_take_reply_op(struct xfi_ep *ep, const struct xfi_peer *peer,
				    enum xfi_op_kind kind, uint64_t cookie, int *done)
{
	struct xfi_queue *queues[2] = { &ep->rndv_wait, &ep->tx_wait };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		struct xfi_link *prev = NULL, *cur;

		for (cur = queues[i]->head; cur; prev = cur, cur = cur->next) {
			struct xfi_tx_op *op = XFI_ITEM(cur, struct xfi_tx_op);

			if (!xfi_op_awaits_reply(op) || op->kind != kind || op->fin_received ||
			    op->cookie != cookie || op->key != peer->key)
				continue;
			*done = i == 0;
			if (*done)
				xfi_q_unlink(queues[i], prev, cur);
			return op;
		}
	}
	return NULL;
}

/* The rendezvous send with this cookie to peer is over (receiver's FIN). */
static void xfi_rx_fin(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt, size_t len)
{
	struct xfi_tx_op *op;
	uint64_t cookie;
	int32_t status;
	int done;

	if (xfi_parse_fin(pkt, len, &cookie, &status)) {
		ep->rx_dropped++;
		return;
	}
	op = xfi_take_reply_op(ep, peer, XFI_OP_SEND, cookie, &done);
	if (!op) {
		ep->rx_dropped++;	/* unknown or repeated cookie */
		return;
	}
	xfi_reply_done(ep, op, status, done);
}

void xfi_reply_done(struct xfi_ep *ep, struct xfi_tx_op *op, int32_t status, int done)
{
	op->fin_received = 1;
	if (status && !op->err)
		op->err = -status;
	if (done)
		xfi_complete_tx(ep, op);	/* else: completes with the request's ACK */
}

static void xfi_rx_deliver(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt,
			   size_t len)
{
	unsigned int type = pkt[0] & XFI_PKT_TYPE_MASK;

	if (type == XFI_PKT_START || type == XFI_PKT_SHORT)
		xfi_rx_start(ep, peer, pkt, len, type);
	else if (type == XFI_PKT_ATOMIC)
		xfi_atomic_serve(ep, peer, pkt, len);
	else if (type == XFI_PKT_ATOMIC_RESP)
		xfi_atomic_answer(ep, peer, pkt, len);
	else
		xfi_rx_cont(ep, peer, pkt, len);
}

static void xfi_peer_rx_reset(struct xfi_ep *ep, struct xfi_peer *peer, uint16_t epoch)
{
	if (peer->rx_cur) {
		xfi_msg_abort(ep, peer->rx_cur);
		peer->rx_cur = NULL;
	}
	memset(peer->reorder_len, 0, sizeof(peer->reorder_len));
	peer->rx_known = 1;
	peer->rx_epoch = epoch;
	peer->rx_seq = 0;
}

static void xfi_rx_packet(struct xfi_ep *ep, uint32_t src_node, const uint8_t *pkt, size_t len)
{
	struct xfi_hdr h;
	struct xfi_peer *peer;
	uint16_t stream_epoch;
	int32_t d;
	int type;

	if (src_node >= XFI_NODE_LIMIT || (type = xfi_parse_hdr(pkt, len, &h)) < 0) {
		ep->rx_dropped++;
		return;
	}
	peer = xfi_peer_get(ep, xfi_key(src_node, h.src_mbox));
	if (!peer) {
		ep->rx_dropped++;
		return;
	}
	if (type == XFI_PKT_PING) {	/* out of sequence */
		if (xfi_parse_ping(len))
			ep->rx_dropped++;
		else if (!peer->rx_known || peer->rx_epoch != h.epoch)
			xfi_send_ctrl(ep, peer, XFI_OP_RESET, h.epoch);
		return;
	}
	if (type == XFI_PKT_FIN) {	/* out of sequence: the cookie names the send */
		xfi_rx_fin(ep, peer, pkt, len);
		return;
	}
	if (type == XFI_PKT_RESET) {	/* out of sequence */
		if (xfi_parse_reset(pkt, len, &stream_epoch))
			ep->rx_dropped++;
		else if (stream_epoch == peer->tx_epoch)
			xfi_peer_tx_broken(ep, peer, -FI_ECONNRESET);
		return;
	}
	if (!peer->rx_known || peer->rx_epoch != h.epoch) {
		/* a new incarnation of that endpoint starts at sequence 0; its
		 * first packets may arrive slightly out of order */
		if (h.seq >= XFI_REORDER_WINDOW) {
			ep->rx_dropped++;
			return;
		}
		xfi_peer_rx_reset(ep, peer, h.epoch);
	}
	d = xfi_seq_diff(h.seq, peer->rx_seq);
	if (d < 0 || d >= XFI_REORDER_WINDOW) {
		ep->rx_dropped++;
		return;
	}
	if (d > 0) {
		unsigned int slot = h.seq % XFI_REORDER_WINDOW;

		if (peer->reorder_len[slot]) {
			ep->rx_dropped++;	/* duplicate */
			return;
		}
		memcpy(peer->reorder[slot], pkt, len);
		peer->reorder_len[slot] = (uint8_t)len;
		return;
	}
	xfi_rx_deliver(ep, peer, pkt, len);
	peer->rx_seq++;
	for (;;) {
		unsigned int slot = peer->rx_seq % XFI_REORDER_WINDOW;
		size_t l = peer->reorder_len[slot];

		if (!l)
			break;
		peer->reorder_len[slot] = 0;
		xfi_rx_deliver(ep, peer, peer->reorder[slot], l);
		peer->rx_seq++;
	}
}

static void xfi_rx_poll(struct xfi_ep *ep)
{
	uint8_t pkt[XFI_PKT_MAX];
	uint32_t src_node = 0;
	uint64_t completions = ep->dom->completions;
	unsigned int i;

	/*
	 * Stop at the first packet that completed something: the caller is
	 * waiting for it, and looking at an empty mailbox once more would be
	 * one more MMIO poll of the NI before the caller sees it.  What else
	 * waits is taken by the next progress call.
	 */
	for (i = 0; i < XFI_RX_BUDGET && ep->dom->completions == completions; i++) {
		ssize_t n = xfi_nic_recv(ep->nep, pkt, sizeof(pkt), &src_node);

		if (n == 0)
			break;
		if (n < 0) {
			ep->rx_dropped++;
			if (n == -EIO)
				continue;	/* bad slot, consumed */
			break;
		}
		xfi_rx_packet(ep, src_node, pkt, (size_t)n);
	}
}

/* ---- rendezvous receive: RDMA reads straight into the receive buffer ---- */

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

static void xfi_rndv_progress(struct xfi_ep *ep)
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

/*
 * Rendezvous sends waiting for a FIN longer than FI_EXANET_PROBE_MS probe
 * their receiver once per period with an out-of-sequence PING: a receiver
 * that is gone fails it at the NI (mailbox disabled: ECONNREFUSED, or
 * TIMEOUT), a new incarnation on its mailbox answers RESET; either breaks
 * the stream and fails the waiting sends.  A live receiver that is only
 * slow ignores the PING: nothing fails, however long it takes.  Only reads
 * the clock while rendezvous sends wait (the eager path stays free of
 * system calls even where the clock is not in the vDSO).
 */
static void xfi_probe_peers(struct xfi_ep *ep)
{
	int64_t now = exa_clock_ns(), period = (int64_t)xfi_params.probe_ms * 1000000;
	struct xfi_link *cur;

	for (cur = ep->rndv_wait.head; cur; cur = cur->next) {
		struct xfi_tx_op *op = XFI_ITEM(cur, struct xfi_tx_op);
		struct xfi_peer *peer = op->peer;

		if (now - op->wait_since < period || now - peer->last_probe_ns < period ||
		    peer->tx_error)
			continue;
		peer->last_probe_ns = now;
		xfi_send_ctrl(ep, peer, XFI_OP_PING, 0);
	}
}

void xfi_ep_progress(struct xfi_ep *ep)
{
	if (!ep->enabled)
		return;
	/* the tests inline: a poll that finds nothing calls little else */
	if (ep->chans_busy)
		xfi_tx_reap(ep);
	xfi_rx_poll(ep);
	if (ep->rndv_wait.head)
		xfi_probe_peers(ep);
	if (ep->rndv_rx.head)
		xfi_rndv_progress(ep);
	if (ep->rma_ops.head)
		xfi_rma_progress(ep);
	if (ep->txq.head)
		xfi_tx_fill(ep);
}

void xfi_domain_progress(struct xfi_domain *dom)
{
	struct xfi_ep *ep;

	for (ep = dom->eps; ep; ep = ep->dom_next)
		xfi_ep_progress(ep);
}
