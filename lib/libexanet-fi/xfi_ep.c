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

/* ---- peers ---- */

struct xfi_peer *xfi_peer_get(struct xfi_ep *ep, uint32_t key)
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

fi_addr_t xfi_peer_addr(struct xfi_ep *ep, struct xfi_peer *p)
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

void xfi_tx_op_free(struct xfi_tx_op *op)
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
	uint16_t e = (uint16_t)(exa_clock_ns() >> 10);

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
int xfi_op_out_of_sequence(const struct xfi_tx_op *op)
{
	return op->kind == XFI_OP_PING || op->kind == XFI_OP_RESET || op->kind == XFI_OP_FIN;
}

int xfi_op_awaits_reply(const struct xfi_tx_op *op)
{
	return op->rndv || op->dc || op->kind == XFI_OP_ATOMIC;
}

/* Queue an operation to op->peer (set). */
void xfi_tx_enqueue(struct xfi_ep *ep, struct xfi_tx_op *op)
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

void xfi_complete_tx(struct xfi_ep *ep, struct xfi_tx_op *op)
{
	struct xfi_cq_entry e = {
		.op_context = op->context,
		.flags = op->flags & (FI_SEND | FI_MSG | FI_TAGGED | FI_ATOMIC | FI_RMA | FI_READ |
				      FI_WRITE),
		.src = FI_ADDR_NOTAVAIL,
	};

	if (op->err && (op->kind == XFI_OP_ATOMIC || op->kind == XFI_OP_ATOMIC_RESP))
		FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "atomic %s peer key %#x failed: %s\n",
			op->kind == XFI_OP_ATOMIC ? "to" : "answer to", op->key,
			fi_strerror(op->err < 0 ? -op->err : op->err));
	else if (op->err && (op->flags & FI_RMA))
		FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "fi_writedata: the notification to peer key "
			"%#x failed: %s\n", op->key, fi_strerror(op->err));
	else if (op->err)
		FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "send of %zu bytes (tag %#" PRIx64
			", peer key %#x) failed: %s\n", op->len, op->tag, op->key,
			fi_strerror(op->err));
	if (op->counted && op->stream != op->peer->tx_stream) {
		op->peer->tx_next_ops--;
	} else if (op->counted && !--op->peer->tx_ops && op->peer->tx_error &&
		   op->peer->tx_next_ops) {
		xfi_peer_tx_restart(ep, op->peer);	/* the held operations go now */
	}
	if (op->kind == XFI_OP_SEND || op->kind == XFI_OP_ATOMIC)
		xfi_cntr_count(ep, op->flags, op->err);
	if (ep->tx_cq && (op->kind == XFI_OP_SEND || op->kind == XFI_OP_ATOMIC)) {
		if (op->err)
			xfi_cq_push_err(ep->tx_cq, &e, op->err, 0);
		else if (xfi_tx_wants_completion(ep, op->flags))
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

uint64_t xfi_rx_cq_flags(const struct xfi_rx_msg *msg)
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

void xfi_complete_rx(struct xfi_ep *ep, struct xfi_rx_entry *rx,
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
	xfi_cntr_count(ep, FI_RECV, msg->len > rx->capacity && !(rx->flags & FI_DISCARD));
	if (ep->rx_cq) {
		if (msg->len > rx->capacity && !(rx->flags & FI_DISCARD))
			xfi_cq_push_err(ep->rx_cq, &e, FI_ETRUNC, msg->len - rx->capacity);
		else if (!ep->rx_selective || (rx->flags & FI_COMPLETION) || released)
			xfi_cq_push(ep->rx_cq, &e);
	}
	xfi_cache_put(&ep->dom->rx_cache, rx);
}

void xfi_rx_error(struct xfi_ep *ep, struct xfi_rx_entry *rx, uint64_t flags, int err)
{
	struct xfi_cq_entry e = {
		.op_context = rx->context, .flags = flags, .src = FI_ADDR_NOTAVAIL,
	};

	if (xfi_multi_piece_done(ep, rx))
		e.flags |= FI_MULTI_RECV;
	xfi_cntr_count(ep, FI_RECV, 1);
	if (ep->rx_cq)
		xfi_cq_push_err(ep->rx_cq, &e, err, 0);
	xfi_cache_put(&ep->dom->rx_cache, rx);
}

/*
 * FI_MULTI_RECV buffer m takes no more messages (no longer on the posted
 * queue): with no piece pending it is free now (an empty completion with
 * FI_MULTI_RECV), else the last piece's completion will say so.
 */
void xfi_multi_release(struct xfi_ep *ep, struct xfi_rx_entry *m)
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
int xfi_multi_fits(const struct xfi_rx_entry *m, uint64_t len)
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
struct xfi_rx_entry *xfi_multi_piece(struct xfi_ep *ep, struct xfi_rx_entry *m,
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

struct xfi_queue *xfi_unexp_queue(struct xfi_ep *ep, uint32_t start_flags)
{
	return (start_flags & XFI_START_TAGGED) ? &ep->unexp_tagged : &ep->unexp_msg;
}

void xfi_msg_free(struct xfi_domain *dom, struct xfi_rx_msg *msg)
{
	free(msg->buf);
	xfi_cache_put(&dom->msg_cache, msg);
}

/* Queue a FIN for the rendezvous send cookie of the endpoint key. */
void xfi_send_fin(struct xfi_ep *ep, uint32_t key, uint64_t cookie, int err)
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
void xfi_send_ctrl(struct xfi_ep *ep, struct xfi_peer *peer, enum xfi_op_kind kind,
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
void xfi_peer_tx_broken(struct xfi_ep *ep, struct xfi_peer *peer, int err)
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
struct xfi_nic_rdma *xfi_dom_rdma(struct xfi_domain *dom)
{
	int err;

	if (!dom->rdma && !dom->rdma_unavailable) {
		err = xfi_nic_rdma_alloc(dom->dev, &dom->rdma);
		if (err) {
			FI_WARN(&xfi_prov, FI_LOG_DOMAIN, "no RDMA page (%s): messages above "
				"the threshold go eager, rendezvous receives fail\n",
				strerror(-err));
			dom->rdma_unavailable = 1;
		}
	}
	return dom->rdma;
}

/* Drop a message taken off the unexpected queue (its rest is consumed). */
void xfi_msg_discard(struct xfi_ep *ep, struct xfi_rx_msg *msg)
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
void xfi_msg_abort(struct xfi_ep *ep, struct xfi_rx_msg *msg)
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
void xfi_msg_done(struct xfi_ep *ep, struct xfi_rx_msg *msg)
{
	msg->complete = 1;
	if (msg->rx) {
		xfi_complete_rx(ep, msg->rx, msg);
		xfi_msg_free(ep->dom, msg);
	} else if (!msg->queued) {
		xfi_msg_free(ep->dom, msg);	/* discarded */
	}
}

void xfi_msg_bytes(struct xfi_rx_msg *msg, const uint8_t *src, size_t n)
{
	if (msg->rx)
		xfi_iov_copy_in(msg->rx, msg->received, src, n);
	else if (msg->buf)
		memcpy(msg->buf + msg->received, src, n);
	msg->received += n;
}

/* Hand a (possibly incomplete) unexpected message to the receive rx. */
void xfi_msg_attach(struct xfi_ep *ep, struct xfi_rx_msg *msg, struct xfi_rx_entry *rx)
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
