// SPDX-License-Identifier: MIT
/*
 * Peers and the stream of packets to each: an operation joins the stream
 * to its peer when it is queued (xfi_tx_enqueue) and leaves it when it
 * completes (xfi_complete_tx); a failed packet breaks the stream
 * (xfi_peer_tx_broken), which restarts once the operations of the old one
 * are done.  FIN, PING and RESET packets travel beside the stream.
 */
#include <stdlib.h>
#include <string.h>

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

/* ---- the stream to a peer ---- */

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

/* A send of stream 'stream' to peer ended (an operation or a fast send). */
void xfi_peer_tx_op_ended(struct xfi_ep *ep, struct xfi_peer *peer, uint32_t stream)
{
	if (stream != peer->tx_stream)
		peer->tx_next_ops--;
	else if (!--peer->tx_ops && peer->tx_error && peer->tx_next_ops)
		xfi_peer_tx_restart(ep, peer);	/* the held operations go now */
}

/* The counter and CQ entry of a finished send or atomic (err: its outcome),
 * an operation's (xfi_complete_tx) or a fast send's (xfi_tx.c). */
void xfi_tx_report(struct xfi_ep *ep, void *context, uint64_t flags, int err)
{
	struct xfi_cq_entry e = {
		.op_context = context,
		.flags = flags & (FI_SEND | FI_MSG | FI_TAGGED | FI_ATOMIC | FI_RMA | FI_READ |
				  FI_WRITE),
		.src = FI_ADDR_NOTAVAIL,
	};

	xfi_cntr_count(ep, flags, err);
	if (err && ep->tx_cq)
		xfi_cq_push_err(ep->tx_cq, &e, err, 0);
	else if (!err && xfi_tx_wants_completion(ep, flags))
		xfi_cq_push(ep->tx_cq, &e);
}

void xfi_complete_tx(struct xfi_ep *ep, struct xfi_tx_op *op)
{
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
	if (op->counted)
		xfi_peer_tx_op_ended(ep, op->peer, op->stream);
	if (op->kind == XFI_OP_SEND || op->kind == XFI_OP_ATOMIC)
		xfi_tx_report(ep, op->context, op->flags, op->err);
	xfi_tx_op_free(op);
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

/* ---- packets beside the stream ---- */

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
