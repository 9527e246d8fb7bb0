// SPDX-License-Identifier: MIT
/*
 * The send side of an endpoint: packets of queued operations into free
 * channels, channel outcomes, operations that wait for a reply of the
 * target (a FIN, an atomic answer) and the probes of their peers, and
 * posting sends (fi_send, fi_tsend and their forms).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfi.h"

/* Completes with a reply of the target (FIN, atomic answer), not the ACK. */
static int xfi_op_awaits_reply(const struct xfi_tx_op *op)
{
	return op->rndv || op->dc || op->kind == XFI_OP_ATOMIC;
}

/* ---- send path ---- */

static void xfi_tx_finish_if_done(struct xfi_ep *ep, struct xfi_tx_op *op)
{
	if (op->outstanding)
		return;
	xfi_q_remove(&ep->tx_wait, &op->link);
	if (xfi_op_awaits_reply(op) && !op->err && op->peer->tx_error)
		op->err = op->peer->tx_error;	/* the stream broke: no reply will come */
	if (xfi_op_awaits_reply(op) && !op->err && !op->fin_received) {
		/* RTS delivered: the receiver reads the buffer, then sends a FIN;
		 * atomic request delivered: the target answers once applied */
		op->wait_since = exa_clock_ns();
		xfi_q_push(&ep->rndv_wait, &op->link);
		return;
	}
	xfi_q_push(&ep->tx_done, &op->link);	/* progress writes the completion */
}

/* The completion of a send without an operation; err: its outcome. */
static void xfi_fast_complete(struct xfi_ep *ep, const struct xfi_fast_send *f, uint32_t key,
			      int err)
{
	if (err)
		FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "send of %u bytes (peer key %#x) failed: %s\n",
			f->len, key, fi_strerror(-err));
	xfi_tx_report(ep, f->context, f->flags, err);
}

/*
 * Progress's last step: the completions of the sends that finished (the
 * operations of tx_done, the fast sends of fast_done).  The only place a
 * send's completion is written, its operation freed and its rendezvous
 * registration given back; post calls never do.
 */
void xfi_tx_complete_done(struct xfi_ep *ep)
{
	struct xfi_link *l;
	unsigned int i;

	for (i = 0; i < ep->fast_done_count; i++)
		xfi_fast_complete(ep, &ep->fast_done[i], 0, 0);
	ep->fast_done_count = 0;
	while ((l = ep->tx_done.head)) {
		xfi_q_unlink(&ep->tx_done, NULL, l);
		xfi_complete_tx(ep, XFI_ITEM(l, struct xfi_tx_op));
	}
}

/* A channel's packet ended in err (0: delivered). */
static void xfi_chan_ended(struct xfi_ep *ep, struct xfi_chan *ch, int err)
{
	struct xfi_tx_op *op = ch->op;

	ch->busy = 0;
	ch->op = NULL;
	ep->chans_busy--;
	/* a FIN leaves no hole in the stream: its receiver is gone, and
	 * nothing waits for it (a new incarnation on that mailbox must not
	 * find our stream broken) */
	if (err < 0 && (!op || op->kind != XFI_OP_FIN))
		xfi_peer_tx_broken(ep, ch->peer, err);
	if (!op) {
		xfi_fast_complete(ep, &ch->fast, ch->peer->key, err);
		xfi_peer_tx_op_ended(ep, ch->peer, ch->fast.stream);
		return;
	}
	if (err < 0 && !op->err)
		op->err = err;
	op->outstanding--;
	/* ops still being packetized are finished when retired */
	if (op->retired)
		xfi_tx_finish_if_done(ep, op);
}

/* Collect channel outcomes: ACK frees the slot, FULL resends it. */
void xfi_tx_reap(struct xfi_ep *ep)
{
	unsigned int c;

	for (c = 0; c < XFI_CHANNELS; c++) {
		struct xfi_chan *ch = &ep->chans[c];
		int err;

		if (!ch->busy)
			continue;
		err = xfi_nic_chan_status(ep->nep, c);
		if (err == -EINPROGRESS)
			continue;
		if (err == -ENOBUFS) {	/* nothing was written: send it again */
			err = xfi_nic_send(ep->nep, c, xfi_key_node(ch->peer->key),
					   xfi_key_mbox(ch->peer->key), ch->pkt, ch->len);
			if (err >= 0)
				continue;
		}
		xfi_chan_ended(ep, ch, err);
	}
}

static int xfi_peer_window_open(struct xfi_ep *ep, const struct xfi_peer *peer)
{
	uint32_t oldest = peer->tx_seq;
	unsigned int c;

	for (c = 0; c < XFI_CHANNELS; c++) {
		const struct xfi_chan *ch = &ep->chans[c];

		if (ch->busy && ch->peer == peer && (!ch->op || !xfi_op_out_of_sequence(ch->op)) &&
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
void xfi_tx_fill(struct xfi_ep *ep)
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
		else if (op->kind == XFI_OP_ATOMIC || op->kind == XFI_OP_ATOMIC_RESP)
			plen = xfi_build_prebuilt(ch->pkt, &h, op->inline_data, op->pre_len), n = 0;
		else if (!op->start_sent &&
			 !(op->start_flags & (XFI_START_RNDV | XFI_START_RMA_DATA)) &&
			 op->len <= xfi_short_capacity(op->start_flags))
			plen = xfi_build_short(ch->pkt, &h, op->tag, (uint32_t)op->len,
					       op->start_flags, op->data, src), n = op->len;
		else if (!op->start_sent)
			plen = xfi_build_start(ch->pkt, &h, op->tag, (uint32_t)op->len,
					       op->start_flags, op->data, src, &n);
		else
			plen = xfi_build_cont(ch->pkt, &h, src + op->sent, op->len - op->sent, &n);
		err = xfi_nic_send(ep->nep, (unsigned int)c, xfi_key_node(peer->key),
				   xfi_key_mbox(peer->key), ch->pkt, plen);
		if (err < 0) {
			op->err = err;
			continue;
		}
		ch->busy = 1;
		ep->chans_busy++;
		ch->op = op;
		ch->peer = peer;
		ch->seq = ctrl ? peer->tx_seq : peer->tx_seq++;
		ch->len = (uint8_t)plen;
		if (!op->start_sent && (op->start_flags & XFI_START_DC))
			op->cookie = XFI_DC_COOKIE(h.seq);	/* the receiver's FIN names it */
		op->start_sent = 1;
		op->sent += n;
		op->outstanding++;
		if (op->sent == op->len)
			xfi_tx_retire_head(ep, op);
	}
}

/* ---- replies ---- */

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

void xfi_reply_done(struct xfi_ep *ep, struct xfi_tx_op *op, int32_t status, int done)
{
	op->fin_received = 1;
	if (status && !op->err)
		op->err = -status;
	if (done)
		xfi_complete_tx(ep, op);	/* else: completes with the request's ACK */
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
void xfi_probe_peers(struct xfi_ep *ep)
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

/* ---- posting ---- */

/* The bytes of iov[0..count) one after the other into dst. */
static void xfi_iov_gather(uint8_t *dst, const struct iovec *iov, size_t count)
{
	size_t i, off = 0;

	for (i = 0; i < count; off += iov[i].iov_len, i++)
		memcpy(dst + off, iov[i].iov_base, iov[i].iov_len);
}

/* Queue op and hand what fits to the NIC at once (lowest latency); its
 * outcome and completion are progress's. */
void xfi_tx_submit(struct xfi_ep *ep, struct xfi_tx_op *op)
{
	xfi_tx_enqueue(ep, op);
	xfi_tx_fill(ep);
}

/*
 * An eager send that fits one SHORT packet, when nothing is queued before
 * it and its peer's stream is sound: the packet goes straight into a free
 * channel (the engine's own busy bit says which: no status read), without
 * an operation to allocate, queue and free (the eager path's share of an
 * 8-byte MPI message).  Its completion is progress's: the channel keeps
 * what it needs until the NI's outcome (xfi_chan_ended), or, on a NIC
 * whose outcome is final at once, fast_done keeps it until the next
 * progress call.  0 = sent; -FI_EAGAIN = take the general path (which also
 * reports what is wrong, and queues it when the NIC has no credit: nothing
 * was sent then, no sequence number used).
 */
static ssize_t xfi_send_fast(struct xfi_ep *ep, const struct iovec *iov, size_t count,
			     size_t len, fi_addr_t dest, uint64_t tag, uint64_t data,
			     uint32_t start_flags, uint64_t flags, void *context)
{
	uint8_t payload[XFI_PKT_MAX];	/* >= any SHORT's capacity */
	const uint8_t *src = count ? iov[0].iov_base : NULL;
	struct xfi_fast_send f = { .context = context, .flags = flags | FI_SEND,
				   .len = (uint32_t)len };
	struct xfi_peer *peer;
	struct xfi_chan *ch;
	struct xfi_hdr h;
	uint32_t key;
	size_t plen;
	int c;

	/* the cheap tests first: a stream that fills every channel takes the
	 * general path on each send, and must not pay the lookups twice */
	if (ep->txq.head || ep->chans_busy == XFI_CHANNELS || !ep->enabled || !ep->av ||
	    len > xfi_short_capacity(start_flags) ||
	    (!(flags & FI_INJECT) && len > xfi_params.rndv_threshold) ||
	    (XFI_NIC_SEND_DONE_AT_ONCE && ep->fast_done_count == XFI_FAST_DONE_MAX) ||
	    xfi_av_key(ep->av, dest, &key) || !(peer = xfi_peer_get(ep, key)) ||
	    peer->tx_error || !xfi_peer_window_open(ep, peer) || (c = xfi_free_chan(ep)) < 0)
		return -FI_EAGAIN;
	if (count > 1) {
		xfi_iov_gather(payload, iov, count);
		src = payload;
	}
	ch = &ep->chans[c];
	h = (struct xfi_hdr){ .src_mbox = (uint8_t)ep->mbox_id, .epoch = peer->tx_epoch,
			      .seq = peer->tx_seq };
	plen = xfi_build_short(ch->pkt, &h, tag, (uint32_t)len, start_flags, data, src);
	if (xfi_nic_send(ep->nep, (unsigned int)c, xfi_key_node(key), xfi_key_mbox(key), ch->pkt,
			 plen) < 0)
		return -FI_EAGAIN;
#if XFI_NIC_SEND_DONE_AT_ONCE
	if (xfi_nic_chan_status(ep->nep, (unsigned int)c))
		return -FI_EAGAIN;
	peer->tx_seq++;
	ep->fast_done[ep->fast_done_count++] = f;
#else
	/* in the stream until its outcome (a restart waits for it) */
	f.stream = peer->tx_stream;
	peer->tx_ops++;
	ch->busy = 1;
	ep->chans_busy++;
	ch->op = NULL;
	ch->fast = f;
	ch->peer = peer;
	ch->seq = peer->tx_seq++;
	ch->len = (uint8_t)plen;
#endif
	return 0;
}

/*
 * fi_writedata's second half, once the write is done at the target: a
 * START that carries only the CQ data (XFI_START_RMA_DATA), in sequence on
 * the stream to the peer.  The write completes (FI_RMA | FI_WRITE) when
 * the NI delivered it.  Domain lock held; queued only (sent by progress).
 */
int xfi_tx_rma_data(struct xfi_ep *ep, uint32_t key, uint64_t data, uint64_t flags, void *context)
{
	struct xfi_peer *peer = xfi_peer_get(ep, key);
	struct xfi_tx_op *op;

	if (!peer)
		return -FI_ENOMEM;
	op = xfi_cache_get(&ep->dom->op_cache, sizeof(*op));
	if (!op)
		return -FI_ENOMEM;
	op->kind = XFI_OP_SEND;
	op->context = context;
	op->flags = FI_RMA | FI_WRITE | (flags & (FI_COMPLETION | FI_INJECT | XFI_NO_COMPLETION));
	op->data = data;
	op->start_flags = XFI_START_DATA | XFI_START_RMA_DATA;
	op->dom = ep->dom;
	op->key = key;
	op->peer = peer;
	xfi_tx_enqueue(ep, op);
	return 0;
}

ssize_t xfi_post_send(struct xfi_ep *ep, const struct iovec *iov, size_t count, fi_addr_t dest,
		      uint64_t tag, uint64_t data, uint64_t flags, void *context)
{
	struct xfi_domain *dom = ep->dom;
	struct xfi_tx_op *op;
	struct xfi_peer *peer;
	uint32_t start_flags = ((flags & FI_TAGGED) ? XFI_START_TAGGED : 0) |
		((flags & FI_REMOTE_CQ_DATA) ? XFI_START_DATA : 0);
	ssize_t ret = 0;
	size_t len;
	uint32_t key;

	if (count > XFI_IOV_LIMIT || (count && !iov))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "%zu iovs (at most %d)\n", count,
			       XFI_IOV_LIMIT);
	len = xfi_iov_total(iov, count);
	if (len > xfi_params.max_msg_size)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EMSGSIZE, "%zu bytes: max_msg_size is %zu\n",
			       len, xfi_params.max_msg_size);
	if ((flags & FI_INJECT) && len > XFI_INJECT_SIZE)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EMSGSIZE, "inject of %zu bytes (at most %d)\n",
			       len, (int)XFI_INJECT_SIZE);
	xfi_dom_lock(dom);
	if (!(flags & FI_DELIVERY_COMPLETE) && xfi_params.fast_send &&
	    !xfi_send_fast(ep, iov, count, len, dest, tag, data, start_flags, flags, context)) {
		xfi_dom_unlock(dom);
		return 0;
	}
	if (!ep->enabled || !ep->av || xfi_av_key(ep->av, dest, &key) ||
	    !(peer = xfi_peer_get(ep, key))) {
		xfi_dom_unlock(dom);
		XFI_RETURN_ERR(FI_LOG_EP_DATA, ep->enabled ? -FI_EINVAL : -FI_EOPBADSTATE,
			       "send of %zu bytes to %#" PRIx64 ": %s\n", len, dest,
			       !ep->enabled ? "endpoint not enabled" :
			       "no such peer, or no state for it");
	}
	op = xfi_cache_get(&dom->op_cache, sizeof(*op));
	if (!op) {
		xfi_dom_unlock(dom);
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_ENOMEM, "no memory\n");
	}
	op->peer = peer;
	op->key = key;
	op->context = context;
	op->flags = flags | FI_SEND;
	op->tag = tag;
	op->data = data;
	op->len = len;
	op->start_flags = start_flags;
	op->dom = dom;
	if (count == 1 && len > xfi_params.rndv_threshold && !(flags & FI_INJECT) &&
	    !dom->rdma_unavailable) {
		/* rendezvous: the START carries where to read from (a system
		 * call to register; read-only memory or no RDMA: eager) */
		struct xfi_rndv *rd = calloc(1, sizeof(*rd));

		if (!rd) {
			ret = -FI_ENOMEM;
			goto fail;
		}
		if (xfi_mrc_get(dom, iov[0].iov_base, len, XFI_MR_NI_READS, &op->mrh) == 0) {
			op->rndv = 1;
			xfi_nic_mr_remote(op->mrh.mr, iov[0].iov_base, &rd->node, &rd->rank,
					  &rd->va);
			op->bounce = (uint8_t *)rd;
			op->start_flags |= XFI_START_RNDV;
		} else {
			free(rd);
		}
	}
	if (op->rndv) {
		/* its buffer stays the caller's until the FIN */
	} else if (count == 1 && !(flags & FI_INJECT)) {
		op->buf = iov[0].iov_base;
	} else if (len) {
		/* inject: the caller may reuse the buffer at once; iov: gather */
		op->bounce = len <= sizeof(op->inline_data) ? op->inline_data : malloc(len);
		if (!op->bounce) {
			ret = -FI_ENOMEM;
			goto fail;
		}
		xfi_iov_gather(op->bounce, iov, count);
	}
	if (!op->rndv && (flags & FI_DELIVERY_COMPLETE)) {
		/* eager: completes on the receiver's FIN, not on the NI's ACK
		 * (a rendezvous completes on its FIN anyway) */
		op->dc = 1;
		op->start_flags |= XFI_START_DC;
	}
	if (op->rndv) {
		op->cookie = ++ep->next_cookie;
		((struct xfi_rndv *)(void *)op->bounce)->cookie = op->cookie;
	}
	xfi_tx_submit(ep, op);
	xfi_dom_unlock(dom);
	return 0;
fail:
	xfi_tx_op_free(op);
	xfi_dom_unlock(dom);
	FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "send of %zu bytes to %#" PRIx64 ": no memory\n", len,
		dest);
	return ret;
}
