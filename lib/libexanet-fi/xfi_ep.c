// SPDX-License-Identifier: MIT
/*
 * RDM endpoints: FI_MSG and FI_TAGGED over the packetizer -> mailbox path.
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
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfi.h"

#define XFI_ANY_SRC UINT32_MAX

static struct xfi_ep *xfi_ep_of(struct fid_ep *fid)
{
	return XFI_CONTAINER(fid, struct xfi_ep, ep_fid);
}

/* ---- peers ---- */

static struct xfi_peer *xfi_peer_get(struct xfi_ep *ep, uint32_t key)
{
	unsigned int b = (key ^ (key >> 8) ^ (key >> 16)) & (XFI_PEER_BUCKETS - 1);
	struct xfi_peer *p;

	for (p = ep->peers[b]; p; p = p->hnext)
		if (p->key == key)
			return p;
	if (ep->npeers >= XFI_MAX_PEERS)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->key = key;
	p->tx_epoch = ep->epoch;
	p->fi_addr = FI_ADDR_NOTAVAIL;
	p->av_gen = UINT64_MAX;
	p->hnext = ep->peers[b];
	ep->peers[b] = p;
	ep->npeers++;
	return p;
}

static fi_addr_t xfi_peer_addr(struct xfi_ep *ep, struct xfi_peer *p)
{
	if (!ep->av)
		return FI_ADDR_NOTAVAIL;
	if (p->av_gen != ep->av->gen) {
		p->fi_addr = xfi_av_addr(ep->av, p->key);
		p->av_gen = ep->av->gen;
	}
	return p->fi_addr;
}

/* ---- completions ---- */

static void xfi_tx_op_free(struct xfi_tx_op *op)
{
	if (op->mrh.mr)
		xfi_mrc_put(op->dom, &op->mrh);
	if (op->bounce != op->inline_data)
		free(op->bounce);
	xfi_cache_put(&op->dom->op_cache, op);
}

/*
 * A stream that failed (a packet to the peer ended in TIMEOUT, NACK
 * DISABLED, ...) is restarted once everything queued to the peer has
 * completed: a new epoch and sequence 0, which the peer (or a new
 * incarnation of it on the same mailbox) takes as a new sender.  Operations
 * posted after the stream broke belong to the next stream: they wait (at
 * the head of the transmit queue) until the old one has drained, instead of
 * failing with it; the old stream's packets may need NI timeouts to end on
 * a lossy fabric, and a new incarnation of the peer must not see the
 * survivor's first sends fail with the old incarnation's error.
 */
static void xfi_peer_tx_restart(struct xfi_ep *ep, struct xfi_peer *peer)
{
	uint16_t e = (uint16_t)(exanet_now_ns() >> 10);

	if (e == peer->tx_epoch)
		e++;
	peer->tx_epoch = e;
	peer->tx_seq = 0;
	peer->tx_error = 0;
	peer->last_probe_ns = 0;
	peer->tx_stream++;
	peer->tx_ops += peer->tx_next_ops;
	peer->tx_next_ops = 0;
	ep->stream_resets++;
}

/*
 * PING, RESET and FIN packets carry no sequence number: they are not part
 * of the stream, so they do not wait for it, restart it or fail with it.
 */
static int xfi_op_out_of_sequence(const struct xfi_tx_op *op)
{
	return op->kind == XFI_OP_PING || op->kind == XFI_OP_RESET || op->kind == XFI_OP_FIN;
}

/* Queue an operation to op->peer (set). */
static void xfi_tx_enqueue(struct xfi_ep *ep, struct xfi_tx_op *op)
{
	struct xfi_peer *peer = op->peer;

	op->dom = ep->dom;
	if (xfi_op_out_of_sequence(op)) {
		/* needs no stream: neither restarts nor waits for one */
		xfi_q_push(&ep->txq, &op->link);
		return;
	}
	if (peer->tx_error && !peer->tx_ops)
		xfi_peer_tx_restart(ep, peer);
	op->counted = 1;
	if (peer->tx_error) {
		op->stream = peer->tx_stream + 1;
		peer->tx_next_ops++;
	} else {
		op->stream = peer->tx_stream;
		peer->tx_ops++;
	}
	xfi_q_push(&ep->txq, &op->link);
}

static void xfi_complete_tx(struct xfi_ep *ep, struct xfi_tx_op *op)
{
	struct xfi_cq_entry e = {
		.op_context = op->context,
		.flags = op->flags & (FI_SEND | FI_MSG | FI_TAGGED),
		.src = FI_ADDR_NOTAVAIL,
	};

	if (op->err)
		FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "send of %zu bytes (tag %#" PRIx64
			", peer key %#x) failed: %s\n", op->len, op->tag, op->key,
			fi_strerror(op->err));
	if (op->counted && op->stream != op->peer->tx_stream) {
		op->peer->tx_next_ops--;
	} else if (op->counted && !--op->peer->tx_ops && op->peer->tx_error &&
		   op->peer->tx_next_ops) {
		xfi_peer_tx_restart(ep, op->peer);	/* the held operations go now */
	}
	if (ep->tx_cq && op->kind == XFI_OP_SEND) {
		if (op->err)
			xfi_cq_push_err(ep->tx_cq, &e, op->err, 0);
		else if (!(op->flags & FI_INJECT) &&
			 (!ep->tx_selective || (op->flags & FI_COMPLETION)))
			xfi_cq_push(ep->tx_cq, &e);
	}
	xfi_tx_op_free(op);
}

static size_t xfi_iov_copy_in(const struct xfi_rx_entry *rx, size_t off, const uint8_t *src,
			      size_t n)
{
	size_t i, done = 0;

	for (i = 0; i < rx->iov_count && n; i++) {
		size_t l = rx->iov[i].iov_len, k;

		if (off >= l) {
			off -= l;
			continue;
		}
		k = l - off < n ? l - off : n;
		memcpy((uint8_t *)rx->iov[i].iov_base + off, src, k);
		src += k;
		n -= k;
		done += k;
		off = 0;
	}
	return done;
}

static uint64_t xfi_rx_cq_flags(const struct xfi_rx_msg *msg)
{
	uint64_t f = FI_RECV | ((msg->flags & XFI_START_TAGGED) ? FI_TAGGED : FI_MSG);

	if (msg->flags & XFI_START_DATA)
		f |= FI_REMOTE_CQ_DATA;
	return f;
}

/*
 * A receive completes: if it is a piece of an FI_MULTI_RECV buffer that
 * takes no more messages, and the last piece to complete, the buffer is
 * free again and the completion says so (1).
 */
static int xfi_multi_piece_done(struct xfi_ep *ep, struct xfi_rx_entry *rx)
{
	struct xfi_rx_entry *m = rx->multi;

	if (!m)
		return 0;
	rx->multi = NULL;
	if (--m->pending || !m->released)
		return 0;
	xfi_cache_put(&ep->dom->rx_cache, m);
	return 1;
}

static void xfi_complete_rx(struct xfi_ep *ep, struct xfi_rx_entry *rx,
			    const struct xfi_rx_msg *msg)
{
	struct xfi_peer *p = xfi_peer_get(ep, msg->src_key);
	struct xfi_cq_entry e = {
		.op_context = rx->context,
		.flags = xfi_rx_cq_flags(msg),
		.len = msg->len < rx->capacity ? msg->len : rx->capacity,
		.buf = rx->iov_count ? rx->iov[0].iov_base : NULL,
		.data = msg->data,
		.tag = msg->tag,
		.src = p ? xfi_peer_addr(ep, p) : FI_ADDR_NOTAVAIL,
	};

	int released = xfi_multi_piece_done(ep, rx);

	if (released)
		e.flags |= FI_MULTI_RECV;
	if (rx->flags & FI_DISCARD)
		e.len = 0;
	if (ep->rx_cq) {
		if (msg->len > rx->capacity && !(rx->flags & FI_DISCARD))
			xfi_cq_push_err(ep->rx_cq, &e, FI_ETRUNC, msg->len - rx->capacity);
		else if (!ep->rx_selective || (rx->flags & FI_COMPLETION) || released)
			xfi_cq_push(ep->rx_cq, &e);
	}
	xfi_cache_put(&ep->dom->rx_cache, rx);
}

static void xfi_rx_error(struct xfi_ep *ep, struct xfi_rx_entry *rx, uint64_t flags, int err)
{
	struct xfi_cq_entry e = {
		.op_context = rx->context, .flags = flags, .src = FI_ADDR_NOTAVAIL,
	};

	if (xfi_multi_piece_done(ep, rx))
		e.flags |= FI_MULTI_RECV;
	if (ep->rx_cq)
		xfi_cq_push_err(ep->rx_cq, &e, err, 0);
	xfi_cache_put(&ep->dom->rx_cache, rx);
}

/*
 * FI_MULTI_RECV buffer m takes no more messages (no longer on the posted
 * queue): with no piece pending it is free now (an empty completion with
 * FI_MULTI_RECV), else the last piece's completion will say so.
 */
static void xfi_multi_release(struct xfi_ep *ep, struct xfi_rx_entry *m)
{
	struct xfi_cq_entry e = {
		.op_context = m->context, .flags = FI_RECV | FI_MSG | FI_MULTI_RECV,
		.buf = (uint8_t *)m->iov[0].iov_base + m->used, .src = FI_ADDR_NOTAVAIL,
	};

	m->released = 1;
	if (m->pending)
		return;
	if (ep->rx_cq)
		xfi_cq_push(ep->rx_cq, &e);
	xfi_cache_put(&ep->dom->rx_cache, m);
}

/* Does a message of len bytes go into what is left of buffer m? */
static int xfi_multi_fits(const struct xfi_rx_entry *m, uint64_t len)
{
	/* a message longer than a whole buffer is truncated into a fresh one */
	return len <= m->capacity - m->used || !m->used;
}

/*
 * The piece of FI_MULTI_RECV buffer m a message of len bytes lands in
 * (xfi_multi_fits()); NULL without memory.  Marks m released when fewer
 * than min_multi_recv bytes are left: the caller takes it off the posted
 * queue.
 */
static struct xfi_rx_entry *xfi_multi_piece(struct xfi_ep *ep, struct xfi_rx_entry *m,
					    uint64_t len)
{
	struct xfi_rx_entry *rx = xfi_cache_get(&ep->dom->rx_cache, sizeof(*rx));
	size_t left = m->capacity - m->used;

	if (!rx)
		return NULL;
	rx->context = m->context;
	rx->iov[0].iov_base = (uint8_t *)m->iov[0].iov_base + m->used;
	rx->iov[0].iov_len = len < left ? (size_t)len : left;
	rx->iov_count = 1;
	rx->capacity = rx->iov[0].iov_len;
	rx->src_key = m->src_key;
	rx->flags = m->flags & ~(uint64_t)FI_MULTI_RECV;
	rx->multi = m;
	m->used += rx->capacity;
	m->pending++;
	if (m->capacity - m->used < ep->min_multi_recv)
		m->released = 1;
	return rx;
}

static struct xfi_queue *xfi_unexp_queue(struct xfi_ep *ep, uint32_t start_flags)
{
	return (start_flags & XFI_START_TAGGED) ? &ep->unexp_tagged : &ep->unexp_msg;
}

static void xfi_msg_free(struct xfi_domain *dom, struct xfi_rx_msg *msg)
{
	free(msg->buf);
	xfi_cache_put(&dom->msg_cache, msg);
}

/* Queue a FIN for the rendezvous send cookie of the endpoint key. */
static void xfi_send_fin(struct xfi_ep *ep, uint32_t key, uint64_t cookie, int err)
{
	struct xfi_tx_op *op = calloc(1, sizeof(*op));

	if (!op)
		return;		/* the sender's operation stays pending: no memory to tell it */
	op->kind = XFI_OP_FIN;
	op->flags = FI_INJECT;
	op->key = key;
	op->peer = xfi_peer_get(ep, key);
	op->fin_cookie = cookie;
	op->fin_status = err < 0 ? -err : err;
	if (!op->peer) {
		free(op);
		return;
	}
	xfi_tx_enqueue(ep, op);
}

/* Queue an out-of-sequence PING or RESET to the endpoint key. */
static void xfi_send_ctrl(struct xfi_ep *ep, struct xfi_peer *peer, enum xfi_op_kind kind,
			  uint16_t epoch)
{
	struct xfi_tx_op *op = calloc(1, sizeof(*op));

	if (!op)
		return;
	op->kind = kind;
	op->flags = FI_INJECT;
	op->key = peer->key;
	op->peer = peer;
	op->ctrl_epoch = epoch;
	xfi_tx_enqueue(ep, op);
}

/*
 * The stream to peer is broken: later operations to it fail until it is
 * restarted, and rendezvous sends waiting for its FIN will not get one
 * (the receiver is gone, or does not know the stream any more): they fail
 * now instead of waiting forever.
 */
static void xfi_peer_tx_broken(struct xfi_ep *ep, struct xfi_peer *peer, int err)
{
	struct xfi_link *prev = NULL, *cur, *next;

	if (!peer->tx_error)
		peer->tx_error = err;
	for (cur = ep->rndv_wait.head; cur; cur = next) {
		struct xfi_tx_op *op = XFI_ITEM(cur, struct xfi_tx_op);

		next = cur->next;
		if (op->peer != peer) {
			prev = cur;
			continue;
		}
		xfi_q_unlink(&ep->rndv_wait, prev, cur);
		if (!op->err)
			op->err = err;
		xfi_complete_tx(ep, op);
	}
}

/* The domain's RDMA page, allocated on first use; NULL without RDMA. */
struct exanet_rdma *xfi_dom_rdma(struct xfi_domain *dom)
{
	int err;

	if (!dom->rdma && !dom->rdma_unavailable) {
		err = exanet_rdma_alloc(dom->dev, &dom->rdma);
		if (err) {
			FI_WARN(&xfi_prov, FI_LOG_DOMAIN, "no RDMA page (%s): messages above "
				"the threshold go eager, rendezvous receives fail\n",
				strerror(-err));
			dom->rdma_unavailable = 1;
		}
	}
	return dom->rdma;
}

static void xfi_rndv_start(struct xfi_ep *ep, struct xfi_rx_msg *msg, struct xfi_rx_entry *rx);

/* Drop a message taken off the unexpected queue (its rest is consumed). */
static void xfi_msg_discard(struct xfi_ep *ep, struct xfi_rx_msg *msg)
{
	if (msg->rndv) {	/* nothing to read: release the sender */
		xfi_send_fin(ep, msg->src_key, msg->rd.cookie, 0);
		xfi_msg_free(ep->dom, msg);
		return;
	}
	if (msg->complete) {
		xfi_msg_free(ep->dom, msg);
		return;
	}
	msg->discard = 1;
	free(msg->buf);
	msg->buf = NULL;
}

/* A message that will not be completed (sender restarted, bad packet). */
static void xfi_msg_abort(struct xfi_ep *ep, struct xfi_rx_msg *msg)
{
	FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "message from key %#x (tag %#" PRIx64
		", %" PRIu64 " bytes) aborted\n", msg->src_key, msg->tag, (uint64_t)msg->len);
	if (msg->rx)
		xfi_rx_error(ep, msg->rx, xfi_rx_cq_flags(msg), FI_EIO);
	if (msg->queued)
		xfi_q_remove(xfi_unexp_queue(ep, msg->flags), &msg->link);
	xfi_msg_free(ep->dom, msg);
}

/* The last byte of msg arrived. */
static void xfi_msg_done(struct xfi_ep *ep, struct xfi_rx_msg *msg)
{
	msg->complete = 1;
	if (msg->rx) {
		xfi_complete_rx(ep, msg->rx, msg);
		xfi_msg_free(ep->dom, msg);
	} else if (!msg->queued) {
		xfi_msg_free(ep->dom, msg);	/* discarded */
	}
}

static void xfi_msg_bytes(struct xfi_rx_msg *msg, const uint8_t *src, size_t n)
{
	if (msg->rx)
		xfi_iov_copy_in(msg->rx, msg->received, src, n);
	else if (msg->buf)
		memcpy(msg->buf + msg->received, src, n);
	msg->received += n;
}

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
static struct xfi_rx_msg *xfi_find_unexp(struct xfi_ep *ep, const struct xfi_rx_entry *rx,
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

static void xfi_rx_start(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt,
			 size_t len, unsigned int type)
{
	struct xfi_start_info si;
	struct xfi_rx_msg *msg;

	if (peer->rx_cur) {	/* the previous message never finished */
		xfi_msg_abort(ep, peer->rx_cur);
		peer->rx_cur = NULL;
	}
	if (type == XFI_PKT_SHORT ? xfi_parse_short(pkt, len, xfi_params.max_msg_size, &si) :
	    xfi_parse_start(pkt, len, xfi_params.max_msg_size, &si)) {
		ep->rx_dropped++;
		return;
	}
	msg = xfi_cache_get(&ep->dom->msg_cache, sizeof(*msg));
	if (!msg) {
		ep->rx_dropped++;
		return;
	}
	msg->src_key = peer->key;
	msg->tag = si.tag;
	msg->data = si.data;
	msg->flags = si.flags;
	msg->len = si.len;
	msg->rx = xfi_take_posted(ep, msg);
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
			ep->rx_dropped++;
		}
	}
	xfi_msg_bytes(msg, si.payload, si.payload_len);
	if (msg->received == msg->len)
		xfi_msg_done(ep, msg);
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
		xfi_msg_done(ep, msg);
	}
}

/* An in-sequence packet (already validated by xfi_parse_hdr). */
static void xfi_tx_finish_if_done(struct xfi_ep *ep, struct xfi_tx_op *op);

/* The rendezvous send with this cookie to peer is over (receiver's FIN). */
static void xfi_rx_fin(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt, size_t len)
{
	struct xfi_queue *queues[2] = { &ep->rndv_wait, &ep->tx_wait };
	uint64_t cookie;
	int32_t status;
	unsigned int i;

	if (xfi_parse_fin(pkt, len, &cookie, &status)) {
		ep->rx_dropped++;
		return;
	}
	for (i = 0; i < 2; i++) {
		struct xfi_link *prev = NULL, *cur;

		for (cur = queues[i]->head; cur; prev = cur, cur = cur->next) {
			struct xfi_tx_op *op = XFI_ITEM(cur, struct xfi_tx_op);

			if (!op->rndv || op->cookie != cookie || op->key != peer->key)
				continue;
			op->fin_received = 1;
			if (status && !op->err)
				op->err = -status;
			if (i == 0) {
				xfi_q_unlink(queues[i], prev, cur);
				xfi_complete_tx(ep, op);
			}	/* else: completes with the RTS's ACK */
			return;
		}
	}
	ep->rx_dropped++;	/* unknown or repeated cookie */
}

static void xfi_rx_deliver(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt,
			   size_t len)
{
	unsigned int type = pkt[0] & XFI_PKT_TYPE_MASK;

	if (type == XFI_PKT_START || type == XFI_PKT_SHORT)
		xfi_rx_start(ep, peer, pkt, len, type);
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
	struct exanet_msg_info info;
	unsigned int i;

	for (i = 0; i < XFI_RX_BUDGET; i++) {
		ssize_t n = exanet_recv(ep->mbox, pkt, sizeof(pkt), &info);

		if (n == 0)
			break;
		if (n < 0) {
			ep->rx_dropped++;
			if (n == -EIO)
				continue;	/* bad slot, consumed */
			break;
		}
		xfi_rx_packet(ep, info.src_node, pkt, (size_t)n);
	}
}

/* ---- send path ---- */

static void xfi_tx_finish_if_done(struct xfi_ep *ep, struct xfi_tx_op *op)
{
	if (op->outstanding)
		return;
	xfi_q_remove(&ep->tx_wait, &op->link);
	if (op->rndv && !op->err && op->peer->tx_error)
		op->err = op->peer->tx_error;	/* the stream broke: no FIN will come */
	if (op->rndv && !op->err && !op->fin_received) {
		/* RTS delivered: the receiver reads the buffer, then sends a FIN */
		op->wait_since = exanet_now_ns();
		xfi_q_push(&ep->rndv_wait, &op->link);
		return;
	}
	xfi_complete_tx(ep, op);
}

/* Collect channel outcomes: ACK frees the slot, FULL resends it. */
static void xfi_tx_reap(struct xfi_ep *ep)
{
	unsigned int c;

	for (c = 0; c < XFI_CHANNELS; c++) {
		struct xfi_chan *ch = &ep->chans[c];
		int err;

		if (!ch->busy)
			continue;
		err = exanet_status_errno(exanet_chan_status(ep->pkt, c));
		if (err == -EINPROGRESS)
			continue;
		if (err == -ENOBUFS) {	/* nothing was written: send it again */
			err = exanet_send_on(ep->pkt, c, xfi_key_node(ch->peer->key),
					     xfi_key_mbox(ch->peer->key), ch->pkt, ch->len);
			if (err >= 0)
				continue;
		}
		ch->busy = 0;
		if (err < 0) {
			if (!ch->op->err)
				ch->op->err = err;
			/* a FIN leaves no hole in the stream: its receiver is
			 * gone, and nothing waits for it (a new incarnation on
			 * that mailbox must not find our stream broken) */
			if (ch->op->kind != XFI_OP_FIN)
				xfi_peer_tx_broken(ep, ch->peer, err);
		}
		ch->op->outstanding--;
		/* ops still being packetized are finished when retired */
		if (ch->op->retired)
			xfi_tx_finish_if_done(ep, ch->op);
		ch->op = NULL;
	}
}

static int xfi_peer_window_open(struct xfi_ep *ep, const struct xfi_peer *peer)
{
	uint32_t oldest = peer->tx_seq;
	unsigned int c;

	for (c = 0; c < XFI_CHANNELS; c++) {
		const struct xfi_chan *ch = &ep->chans[c];

		if (ch->busy && ch->peer == peer && !xfi_op_out_of_sequence(ch->op) &&
		    xfi_seq_diff(ch->seq, oldest) < 0)
			oldest = ch->seq;
	}
	return xfi_seq_diff(peer->tx_seq, oldest) < XFI_REORDER_WINDOW;
}

static int xfi_free_chan(const struct xfi_ep *ep)
{
	unsigned int c;

	for (c = 0; c < XFI_CHANNELS; c++)
		if (!ep->chans[c].busy)
			return (int)c;
	return -1;
}

/* The head operation is fully handed over (or failed): wait for its ACKs. */
static void xfi_tx_retire_head(struct xfi_ep *ep, struct xfi_tx_op *op)
{
	xfi_q_unlink(&ep->txq, NULL, &op->link);
	xfi_q_push(&ep->tx_wait, &op->link);
	op->retired = 1;
	xfi_tx_finish_if_done(ep, op);
}

/* Put packets of queued operations into free channels, in order. */
static void xfi_tx_fill(struct xfi_ep *ep)
{
	while (ep->txq.head) {
		struct xfi_tx_op *op = XFI_ITEM(ep->txq.head, struct xfi_tx_op);
		struct xfi_peer *peer = op->peer;
		struct xfi_hdr h = { .src_mbox = (uint8_t)ep->mbox_id, .epoch = peer->tx_epoch };
		int ctrl = xfi_op_out_of_sequence(op);
		const uint8_t *src = op->bounce ? op->bounce : op->buf;
		struct xfi_chan *ch;
		size_t n, plen;
		int c, err;

		if (!ctrl && op->stream != peer->tx_stream && !op->err)
			return;	/* for the next stream: the broken one drains first */
		if (!ctrl && peer->tx_error && !op->err)
			op->err = peer->tx_error;
		if (op->err) {
			xfi_tx_retire_head(ep, op);
			continue;
		}
		c = xfi_free_chan(ep);
		if (c < 0 || (!ctrl && !xfi_peer_window_open(ep, peer)))
			return;
		ch = &ep->chans[c];
		h.seq = peer->tx_seq;
		if (op->kind == XFI_OP_PING)
			plen = xfi_build_ping(ch->pkt, &h), n = 0;
		else if (op->kind == XFI_OP_RESET)
			plen = xfi_build_reset(ch->pkt, &h, op->ctrl_epoch), n = 0;
		else if (op->kind == XFI_OP_FIN)
			plen = xfi_build_fin(ch->pkt, &h, op->fin_cookie, op->fin_status), n = 0;
		else if (!op->start_sent && !(op->start_flags & XFI_START_RNDV) &&
			 op->len <= xfi_short_capacity(op->start_flags))
			plen = xfi_build_short(ch->pkt, &h, op->tag, (uint32_t)op->len,
					       op->start_flags, op->data, src), n = op->len;
		else if (!op->start_sent)
			plen = xfi_build_start(ch->pkt, &h, op->tag, (uint32_t)op->len,
					       op->start_flags, op->data, src, &n);
		else
			plen = xfi_build_cont(ch->pkt, &h, src + op->sent, op->len - op->sent, &n);
		err = exanet_send_on(ep->pkt, (unsigned int)c, xfi_key_node(peer->key),
				     xfi_key_mbox(peer->key), ch->pkt, plen);
		if (err < 0) {
			op->err = err;
			continue;
		}
		ch->busy = 1;
		ch->op = op;
		ch->peer = peer;
		ch->seq = ctrl ? peer->tx_seq : peer->tx_seq++;
		ch->len = (uint8_t)plen;
		op->start_sent = 1;
		op->sent += n;
		op->outstanding++;
		if (op->sent == op->len)
			xfi_tx_retire_head(ep, op);
	}
}

/* ---- rendezvous receive: RDMA reads straight into the receive buffer ---- */

static void xfi_rndv_start(struct xfi_ep *ep, struct xfi_rx_msg *msg, struct xfi_rx_entry *rx)
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
	struct exanet_rdma *rdma = ep->dom->rdma;
	uint64_t off = 0;
	int busy = 0;
	unsigned int i;

	for (i = 0; i < r->nseg; off += r->seg_len[i], i++) {
		int ret;

		if (r->seg_done[i])
			continue;
		if (r->slot[i] < 0) {
			struct exanet_raddr src;

			if (r->err) {
				r->seg_done[i] = 1;	/* never posted */
				continue;
			}
			ret = exanet_raddr_make(r->rd.node, r->rd.rank, r->rd.va, &src);
			if (!ret)
				ret = exanet_raddr_add(&src, off);
			if (!ret)
				ret = exanet_rdma_post_read(rdma, r->seg_base[i], &src,
							    r->seg_len[i], NULL);
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
		ret = exanet_rdma_poll(rdma, (unsigned int)r->slot[i], NULL);
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
	int64_t now = exanet_now_ns(), period = (int64_t)xfi_params.probe_ms * 1000000;
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

static void xfi_ep_progress(struct xfi_ep *ep)
{
	if (!ep->enabled)
		return;
	xfi_tx_reap(ep);
	xfi_rx_poll(ep);
	if (ep->rndv_wait.head)
		xfi_probe_peers(ep);
	if (ep->rndv_rx.head)
		xfi_rndv_progress(ep);
	if (ep->rma_ops.head)
		xfi_rma_progress(ep);
	xfi_tx_fill(ep);
}

void xfi_domain_progress(struct xfi_domain *dom)
{
	struct xfi_ep *ep;

	for (ep = dom->eps; ep; ep = ep->dom_next)
		xfi_ep_progress(ep);
}

/* ---- posting ---- */

static size_t xfi_iov_total(const struct iovec *iov, size_t count)
{
	size_t i, t = 0;

	for (i = 0; i < count; i++)
		t += iov[i].iov_len;
	return t;
}

static ssize_t xfi_post_send(struct xfi_ep *ep, const struct iovec *iov, size_t count,
			     fi_addr_t dest, uint64_t tag, uint64_t data, uint64_t flags,
			     void *context)
{
	struct xfi_domain *dom = ep->dom;
	struct xfi_tx_op *op;
	ssize_t ret = 0;
	size_t len;
	uint32_t key;

	if (count > XFI_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	len = xfi_iov_total(iov, count);
	if (len > xfi_params.max_msg_size)
		return -FI_EMSGSIZE;
	if ((flags & FI_INJECT) && len > XFI_INJECT_SIZE)
		return -FI_EMSGSIZE;
	pthread_mutex_lock(&dom->lock);
	op = xfi_cache_get(&dom->op_cache, sizeof(*op));
	if (!op) {
		pthread_mutex_unlock(&dom->lock);
		return -FI_ENOMEM;
	}
	op->context = context;
	op->flags = flags | FI_SEND;
	op->tag = tag;
	op->data = data;
	op->len = len;
	op->start_flags = ((flags & FI_TAGGED) ? XFI_START_TAGGED : 0) |
		((flags & FI_REMOTE_CQ_DATA) ? XFI_START_DATA : 0);
	op->dom = dom;
	if (count == 1 && len > xfi_params.rndv_threshold && !(flags & FI_INJECT) &&
	    !dom->rdma_unavailable &&
	    xfi_mrc_get(dom, iov[0].iov_base, len, XFI_MR_NI_READS, &op->mrh) == 0) {
		/* rendezvous: the START carries where to read from (a system
		 * call to register; read-only memory or no RDMA: eager) */
		struct xfi_rndv *rd = calloc(1, sizeof(*rd));

		if (!rd) {
			ret = -FI_ENOMEM;
			goto fail;
		}
		op->rndv = 1;
		rd->node = op->mrh.mr->node;
		rd->rank = op->mrh.mr->rank;
		rd->va = (uintptr_t)iov[0].iov_base;
		op->bounce = (uint8_t *)rd;
		op->start_flags |= XFI_START_RNDV;
	} else if (count == 1 && !(flags & FI_INJECT)) {
		op->buf = iov[0].iov_base;
	} else if (len) {
		/* inject: the caller may reuse the buffer at once; iov: gather */
		size_t i, off = 0;

		op->bounce = len <= sizeof(op->inline_data) ? op->inline_data : malloc(len);
		if (!op->bounce) {
			ret = -FI_ENOMEM;
			goto fail;
		}
		for (i = 0; i < count; i++) {
			memcpy(op->bounce + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
	}
	if (!ep->enabled || !ep->av || xfi_av_key(ep->av, dest, &key) ||
	    !(op->peer = xfi_peer_get(ep, key))) {
		ret = ep->enabled ? -FI_EINVAL : -FI_EOPBADSTATE;
		goto fail;
	}
	op->key = key;
	if (op->rndv) {
		op->cookie = ++ep->next_cookie;
		((struct xfi_rndv *)(void *)op->bounce)->cookie = op->cookie;
	}
	/* outcomes that arrived while nobody progressed (a send that failed
	 * with the stream) must not keep that stream from restarting */
	if (op->peer->tx_error && op->peer->tx_ops)
		xfi_tx_reap(ep);
	xfi_tx_enqueue(ep, op);
	xfi_tx_fill(ep);	/* start at once: lowest latency */
	pthread_mutex_unlock(&dom->lock);
	return 0;
fail:
	xfi_tx_op_free(op);
	pthread_mutex_unlock(&dom->lock);
	return ret;
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

static ssize_t xfi_post_recv(struct xfi_ep *ep, const struct iovec *iov, size_t count,
			     fi_addr_t src, uint64_t tag, uint64_t ignore, uint64_t flags,
			     void *context)
{
	struct xfi_rx_entry *rx;
	struct xfi_rx_msg *msg;
	uint32_t key = XFI_ANY_SRC;

	if (count > XFI_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	if ((flags & (FI_CLAIM | FI_PEEK)) && !context)
		return -FI_EINVAL;
	/* one buffer of untagged messages */
	if ((flags & FI_MULTI_RECV) &&
	    (count != 1 || (flags & (FI_TAGGED | FI_PEEK | FI_CLAIM | FI_DISCARD))))
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	rx = xfi_cache_get(&ep->dom->rx_cache, sizeof(*rx));
	if (!rx) {
		pthread_mutex_unlock(&ep->dom->lock);
		return -FI_ENOMEM;
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
		pthread_mutex_unlock(&ep->dom->lock);
		free(rx);
		return -FI_EOPBADSTATE;
	}
	if ((ep->caps & FI_DIRECTED_RECV) && src != FI_ADDR_UNSPEC &&
	    xfi_av_key(ep->av, src, &key)) {
		pthread_mutex_unlock(&ep->dom->lock);
		free(rx);
		return -FI_EINVAL;
	}
	rx->src_key = key;
	if (flags & FI_PEEK) {
		xfi_ep_progress(ep);
		xfi_peek(ep, rx);
		pthread_mutex_unlock(&ep->dom->lock);
		return 0;
	}
	if (flags & FI_CLAIM) {
		msg = ((struct fi_context *)context)->internal[0];
		if (!msg) {
			pthread_mutex_unlock(&ep->dom->lock);
			free(rx);
			return -FI_EINVAL;
		}
		((struct fi_context *)context)->internal[0] = NULL;
		if (flags & FI_DISCARD) {
			struct xfi_cq_entry e = { .op_context = context, .flags = xfi_rx_cq_flags(msg),
				.tag = msg->tag, .src = FI_ADDR_NOTAVAIL };

			xfi_msg_discard(ep, msg);
			if (ep->rx_cq)
				xfi_cq_push(ep->rx_cq, &e);
			free(rx);
		} else {
			xfi_msg_attach(ep, msg, rx);
		}
		pthread_mutex_unlock(&ep->dom->lock);
		return 0;
	}
	if (flags & FI_MULTI_RECV) {
		xfi_multi_post(ep, rx);
		pthread_mutex_unlock(&ep->dom->lock);
		return 0;
	}
	msg = xfi_find_unexp(ep, rx, 1);
	if (msg)
		xfi_msg_attach(ep, msg, rx);
	else
		xfi_q_push((flags & FI_TAGGED) ? &ep->posted_tagged : &ep->posted_msg, &rx->link);
	pthread_mutex_unlock(&ep->dom->lock);
	return 0;
}

/* ---- fi_ops_msg / fi_ops_tagged ---- */

static ssize_t xfi_send_buf(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest,
			    uint64_t tag, uint64_t data, uint64_t flags, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (len && !buf)
		return -FI_EINVAL;
	return xfi_post_send(xfi_ep_of(fid), &iov, 1, dest, tag, data, flags, context);
}

static ssize_t xfi_recv_buf(struct fid_ep *fid, void *buf, size_t len, fi_addr_t src,
			    uint64_t tag, uint64_t ignore, uint64_t flags, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	if (len && !buf)
		return -FI_EINVAL;
	return xfi_post_recv(xfi_ep_of(fid), &iov, 1, src, tag, ignore, flags, context);
}

/* Default completion flag: FI_COMPLETION unless the CQ was bound selective. */
#define XFI_TX_DEFAULT FI_COMPLETION
#define XFI_RX_DEFAULT FI_COMPLETION

static ssize_t xfi_msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			    fi_addr_t src, void *context)
{
	(void)desc;
	return xfi_recv_buf(ep, buf, len, src, 0, 0, FI_MSG | XFI_RX_DEFAULT, context);
}

static ssize_t xfi_msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t src, void *context)
{
	(void)desc;
	return xfi_post_recv(xfi_ep_of(ep), iov, count, src, 0, 0, FI_MSG | XFI_RX_DEFAULT,
			     context);
}

static ssize_t xfi_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return xfi_post_recv(xfi_ep_of(ep), msg->msg_iov, msg->iov_count, msg->addr, 0, 0,
			     (flags & (FI_COMPLETION | FI_MULTI_RECV)) | FI_MSG, msg->context);
}

static ssize_t xfi_msg_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    fi_addr_t dest, void *context)
{
	(void)desc;
	return xfi_send_buf(ep, buf, len, dest, 0, 0, FI_MSG | XFI_TX_DEFAULT, context);
}

static ssize_t xfi_msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t dest, void *context)
{
	(void)desc;
	return xfi_post_send(xfi_ep_of(ep), iov, count, dest, 0, 0, FI_MSG | XFI_TX_DEFAULT,
			     context);
}

static ssize_t xfi_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return xfi_post_send(xfi_ep_of(ep), msg->msg_iov, msg->iov_count, msg->addr, 0,
			     msg->data, (flags & (FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA)) |
			     FI_MSG, msg->context);
}

static ssize_t xfi_msg_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{
	return xfi_send_buf(ep, buf, len, dest, 0, 0, FI_MSG | FI_INJECT, NULL);
}

static ssize_t xfi_msg_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
				uint64_t data, fi_addr_t dest, void *context)
{
	(void)desc;
	return xfi_send_buf(ep, buf, len, dest, 0, data,
			    FI_MSG | FI_REMOTE_CQ_DATA | XFI_TX_DEFAULT, context);
}

static ssize_t xfi_msg_injectdata(struct fid_ep *ep, const void *buf, size_t len,
				  uint64_t data, fi_addr_t dest)
{
	return xfi_send_buf(ep, buf, len, dest, 0, data, FI_MSG | FI_INJECT | FI_REMOTE_CQ_DATA,
			    NULL);
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
	return xfi_recv_buf(ep, buf, len, src, tag, ignore, FI_TAGGED | XFI_RX_DEFAULT, context);
}

static ssize_t xfi_tag_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore,
			     void *context)
{
	(void)desc;
	return xfi_post_recv(xfi_ep_of(ep), iov, count, src, tag, ignore,
			     FI_TAGGED | XFI_RX_DEFAULT, context);
}

static ssize_t xfi_tag_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & FI_MULTI_RECV)
		return -FI_EBADFLAGS;	/* untagged messages only */
	return xfi_post_recv(xfi_ep_of(ep), msg->msg_iov, msg->iov_count, msg->addr, msg->tag,
			     msg->ignore, (flags & (FI_COMPLETION | FI_PEEK | FI_CLAIM |
						    FI_DISCARD)) | FI_TAGGED, msg->context);
}

static ssize_t xfi_tag_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    fi_addr_t dest, uint64_t tag, void *context)
{
	(void)desc;
	return xfi_send_buf(ep, buf, len, dest, tag, 0, FI_TAGGED | XFI_TX_DEFAULT, context);
}

static ssize_t xfi_tag_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t dest, uint64_t tag, void *context)
{
	(void)desc;
	return xfi_post_send(xfi_ep_of(ep), iov, count, dest, tag, 0, FI_TAGGED | XFI_TX_DEFAULT,
			     context);
}

static ssize_t xfi_tag_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return xfi_post_send(xfi_ep_of(ep), msg->msg_iov, msg->iov_count, msg->addr, msg->tag,
			     msg->data, (flags & (FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA)) |
			     FI_TAGGED, msg->context);
}

static ssize_t xfi_tag_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
			      uint64_t tag)
{
	return xfi_send_buf(ep, buf, len, dest, tag, 0, FI_TAGGED | FI_INJECT, NULL);
}

static ssize_t xfi_tag_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
				uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	(void)desc;
	return xfi_send_buf(ep, buf, len, dest, tag, data,
			    FI_TAGGED | FI_REMOTE_CQ_DATA | XFI_TX_DEFAULT, context);
}

static ssize_t xfi_tag_injectdata(struct fid_ep *ep, const void *buf, size_t len,
				  uint64_t data, fi_addr_t dest, uint64_t tag)
{
	return xfi_send_buf(ep, buf, len, dest, tag, data,
			    FI_TAGGED | FI_INJECT | FI_REMOTE_CQ_DATA, NULL);
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

	pthread_mutex_lock(&ep->dom->lock);
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
			pthread_mutex_unlock(&ep->dom->lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return -FI_ENOENT;
}

static int xfi_ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	pthread_mutex_lock(&ep->dom->lock);
	*(size_t *)optval = ep->min_multi_recv;
	pthread_mutex_unlock(&ep->dom->lock);
	*optlen = sizeof(size_t);
	return 0;
}

static int xfi_ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	ep->min_multi_recv = *(const size_t *)optval;
	pthread_mutex_unlock(&ep->dom->lock);
	return 0;
}

static int xfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
			 struct fid_ep **tx_ep, void *context)
{
	(void)sep; (void)index; (void)attr; (void)tx_ep; (void)context;
	return -FI_ENOSYS;
}

static int xfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
			 struct fid_ep **rx_ep, void *context)
{
	(void)sep; (void)index; (void)attr; (void)rx_ep; (void)context;
	return -FI_ENOSYS;
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
	struct xfi_addr a = {
		.node = ep->dom->node_id, .mbox = (uint8_t)ep->mbox_id, .version = XFI_ADDR_VERSION,
		.magic = XFI_ADDR_MAGIC,
	};
	size_t room;

	if (!addrlen)
		return -FI_EINVAL;
	room = *addrlen;
	*addrlen = sizeof(a);
	if (room < sizeof(a) || !addr)
		return -FI_ETOOSMALL;
	memcpy(addr, &a, sizeof(a));
	return 0;
}

static int xfi_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void)fid; (void)addr; (void)addrlen;
	return -FI_ENOSYS;
}

static int xfi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	(void)ep; (void)addr; (void)addrlen;
	return -FI_ENOSYS;
}

static int xfi_no_connect(struct fid_ep *ep, const void *addr, const void *param,
			  size_t paramlen)
{
	(void)ep; (void)addr; (void)param; (void)paramlen;
	return -FI_ENOSYS;
}

static int xfi_no_listen(struct fid_pep *pep)
{
	(void)pep;
	return -FI_ENOSYS;
}

static int xfi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	(void)ep; (void)param; (void)paramlen;
	return -FI_ENOSYS;
}

static int xfi_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	(void)pep; (void)handle; (void)param; (void)paramlen;
	return -FI_ENOSYS;
}

static int xfi_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	(void)ep; (void)flags;
	return -FI_ENOSYS;
}

static int xfi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		       void *context)
{
	(void)ep; (void)addr; (void)flags; (void)mc; (void)context;
	return -FI_ENOSYS;
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

	for (i = 0; i < r->nseg; i++)	/* reads still in flight then fail */
		xfi_mrc_put_drop(r->dom, &r->mrh[i]);
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

	pthread_mutex_lock(&dom->lock);
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
	dom->refs--;
	xfi_free_queue(&ep->txq, xfi_free_tx_link);
	xfi_free_queue(&ep->tx_wait, xfi_free_tx_link);
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
	exanet_pkt_free(ep->pkt);	/* aborts channels still ONGOING */
	exanet_mbox_free(ep->mbox);
	pthread_mutex_unlock(&dom->lock);
	free(ep);
	return 0;
}

static int xfi_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);
	int err = 0;

	if (!bfid)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->lock);
	switch (bfid->fclass) {
	case FI_CLASS_AV: {
		struct xfi_av *av = XFI_CONTAINER(bfid, struct xfi_av, av_fid.fid);

		if (ep->av || av->dom != ep->dom) {
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
	case FI_CLASS_EQ:
		break;		/* RDM endpoints report no events */
	default:
		err = -FI_ENOSYS;	/* counters: not yet */
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return err;
}

static int xfi_ep_control(struct fid *fid, int command, void *arg)
{
	struct xfi_ep *ep = XFI_CONTAINER(fid, struct xfi_ep, ep_fid.fid);

	(void)arg;
	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	pthread_mutex_lock(&ep->dom->lock);
	if (!ep->av) {
		pthread_mutex_unlock(&ep->dom->lock);
		return -FI_ENOAV;
	}
	if (!ep->tx_cq || !ep->rx_cq) {
		pthread_mutex_unlock(&ep->dom->lock);
		return -FI_ENOCQ;
	}
	ep->enabled = 1;
	pthread_mutex_unlock(&ep->dom->lock);
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

	if (!info || !epp || (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
			      info->ep_attr->type != FI_EP_UNSPEC))
		return -FI_EINVAL;
	if (info->caps & ~(uint64_t)XFI_CAPS)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->dom = dom;
	ep->caps = info->caps ? info->caps : XFI_CAPS;
	err = exanet_pkt_alloc(dom->dev, &ep->pkt);
	if (err)
		FI_WARN(&xfi_prov, FI_LOG_EP_CTRL, "no packetizer interface: %s\n", strerror(-err));
	if (!err) {
		err = exanet_mbox_alloc(dom->dev, (unsigned int)xfi_params.mbox_slots, &ep->mbox);
		if (err)
			FI_WARN(&xfi_prov, FI_LOG_EP_CTRL, "no mailbox of %zu slots: %s\n",
				xfi_params.mbox_slots, strerror(-err));
	}
	if (err) {
		if (ep->pkt)
			exanet_pkt_free(ep->pkt);
		free(ep);
		return err;
	}
	ep->mbox_id = exanet_mbox_id(ep->mbox);
	ep->min_multi_recv = XFI_MIN_MULTI_RECV;
	/* a restarted endpoint on the same mailbox is told apart by its epoch */
	ep->epoch = (uint16_t)((uint64_t)exanet_now_ns() ^ ((uint64_t)getpid() << 4));
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &xfi_ep_fi_ops;
	ep->ep_fid.ops = &xfi_ep_ops;
	ep->ep_fid.cm = &xfi_cm_ops;
	ep->ep_fid.msg = &xfi_msg_ops;
	ep->ep_fid.tagged = &xfi_tagged_ops;
	ep->ep_fid.rma = &xfi_rma_ops;
	pthread_mutex_lock(&dom->lock);
	ep->dom_next = dom->eps;
	dom->eps = ep;
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*epp = &ep->ep_fid;
	return 0;
}
