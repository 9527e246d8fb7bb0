// SPDX-License-Identifier: MIT
/*
 * The entries of a completion queue: written by progress (and by posting
 * calls that complete at once), taken by the reads (xfi_cq.c).  Kept in an
 * internal form and converted to the queue's format when taken; the ring
 * grows instead of overflowing so no completion is ever lost.  Errors wait
 * in a list of their own.  The caller holds the domain lock.
 */
#include <stdlib.h>
#include <string.h>

#include "xfi.h"

int xfi_cq_ring_init(struct xfi_cq *cq)
{
	cq->cap = 256;
	cq->ring = malloc(cq->cap * sizeof(*cq->ring));
	return cq->ring ? 0 : -FI_ENOMEM;
}

void xfi_cq_ring_fini(struct xfi_cq *cq)
{
	struct xfi_cq_err *q, *next;

	for (q = cq->err_head; q; q = next) {
		next = q->next;
		free(q);
	}
	free(cq->ring);
}

size_t xfi_cq_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT: return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED: return sizeof(struct fi_cq_tagged_entry);
	default: return 0;
	}
}

static void xfi_cq_format_entry(enum fi_cq_format format, const struct xfi_cq_entry *e,
				void *out)
{
	struct fi_cq_tagged_entry t = {
		.op_context = e->op_context, .flags = e->flags, .len = e->len,
		.buf = e->buf, .data = e->data, .tag = e->tag,
	};

	/* the formats are prefixes of the tagged one */
	memcpy(out, &t, xfi_cq_entry_size(format));
}

int xfi_cq_push(struct xfi_cq *cq, const struct xfi_cq_entry *e)
{
	if (cq->count == cq->cap) {
		size_t cap = cq->cap * 2, i;
		struct xfi_cq_entry *ring = malloc(cap * sizeof(*ring));

		if (!ring)
			XFI_RETURN_ERR(FI_LOG_CQ, -FI_ENOMEM, "no memory for %zu entries\n", cap);
		for (i = 0; i < cq->count; i++)
			ring[i] = cq->ring[(cq->head + i) & (cq->cap - 1)];
		free(cq->ring);
		cq->ring = ring;
		cq->head = 0;
		cq->cap = cap;
	}
	cq->ring[(cq->head + cq->count) & (cq->cap - 1)] = *e;
	cq->count++;
	cq->dom->completions++;
	return 0;
}

int xfi_cq_push_err(struct xfi_cq *cq, const struct xfi_cq_entry *e, int err, size_t olen)
{
	struct xfi_cq_err *q = calloc(1, sizeof(*q));

	if (!q)
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_ENOMEM, "no memory for an error entry (%s)\n",
			       fi_strerror(err < 0 ? -err : err));
	q->err.op_context = e->op_context;
	q->err.flags = e->flags;
	q->err.len = e->len;
	q->err.buf = e->buf;
	q->err.data = e->data;
	q->err.tag = e->tag;
	q->err.olen = olen;
	q->err.err = err < 0 ? -err : err;
	q->err.prov_errno = q->err.err;
	q->src = e->src;
	if (cq->err_tail)
		cq->err_tail->next = q;
	else
		cq->err_head = q;
	cq->err_tail = q;
	cq->dom->completions++;
	return 0;
}

size_t xfi_cq_take(struct xfi_cq *cq, void *buf, size_t count, fi_addr_t *src_addr)
{
	size_t esz = xfi_cq_entry_size(cq->format), n;

	for (n = 0; n < count && cq->count; n++) {
		const struct xfi_cq_entry *e = &cq->ring[cq->head];

		xfi_cq_format_entry(cq->format, e, (char *)buf + n * esz);
		if (src_addr)
			src_addr[n] = e->src;
		cq->head = (cq->head + 1) & (cq->cap - 1);
		cq->count--;
	}
	return n;
}

struct xfi_cq_err *xfi_cq_take_err(struct xfi_cq *cq)
{
	struct xfi_cq_err *q = cq->err_head;

	if (q) {
		cq->err_head = q->next;
		if (!cq->err_head)
			cq->err_tail = NULL;
	}
	return q;
}
