// SPDX-License-Identifier: MIT
/*
 * The receive path of every packet: the mailbox is polled (a budget per
 * progress call), each sender's packets are put back in sequence order,
 * and each packet is handed to what it is for: a START or SHORT is matched
 * (xfi_msg.c) or its rendezvous started (xfi_rndv.c), a CONT fills its
 * message, a FIN or atomic answer completes our operation (xfi_tx.c,
 * xfi_atomic.c), an atomic request is served, PING and RESET look after
 * the streams (xfi_peer.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfi.h"

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

/* An in-sequence packet (already validated by xfi_parse_hdr). */
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

void xfi_rx_poll(struct xfi_ep *ep)
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
