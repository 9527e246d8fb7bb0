// SPDX-License-Identifier: MIT
/*
 * Receives and the messages that land in them: matching (posted receives
 * against arriving messages, a new receive against the unexpected ones),
 * the bytes of a message into its receive or its buffer, receive
 * completions and the pieces of FI_MULTI_RECV buffers.
 */
#include <stdlib.h>
#include <string.h>

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

struct xfi_rx_entry *xfi_take_posted(struct xfi_ep *ep, const struct xfi_rx_msg *msg)
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
struct xfi_rx_msg *xfi_find_unexp(struct xfi_ep *ep, const struct xfi_rx_entry *rx, int take)
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

/* ---- messages ---- */

size_t xfi_iov_copy_in(const struct xfi_rx_entry *rx, size_t off, const uint8_t *src, size_t n)
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

struct xfi_queue *xfi_unexp_queue(struct xfi_ep *ep, uint32_t start_flags)
{
	return (start_flags & XFI_START_TAGGED) ? &ep->unexp_tagged : &ep->unexp_msg;
}

void xfi_msg_free(struct xfi_domain *dom, struct xfi_rx_msg *msg)
{
	free(msg->buf);
	xfi_cache_put(&dom->msg_cache, msg);
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

/* ---- receive completions ---- */

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

void xfi_complete_rx(struct xfi_ep *ep, struct xfi_rx_entry *rx, const struct xfi_rx_msg *msg)
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
struct xfi_rx_entry *xfi_multi_piece(struct xfi_ep *ep, struct xfi_rx_entry *m, uint64_t len)
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
