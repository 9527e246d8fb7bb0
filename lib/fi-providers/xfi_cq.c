// SPDX-License-Identifier: MIT
/*
 * Completion queues: the fi_ops_cq of the application.  A read progresses
 * every endpoint of the domain first (manual progress: xfi_progress.c),
 * then takes what progress wrote (xfi_cq_ring.c).
 */
#include <stdlib.h>
#include <string.h>

#include "xfi.h"

static ssize_t xfi_cq_readfrom_locked(struct xfi_cq *cq, void *buf, size_t count,
				      fi_addr_t *src_addr)
{
	xfi_domain_progress(cq->dom);
	if (cq->err_head)
		return -FI_EAVAIL;
	if (!cq->count)
		return -FI_EAGAIN;
	return (ssize_t)xfi_cq_take(cq, buf, count, src_addr);
}

static ssize_t xfi_cq_readfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src_addr)
{
	struct xfi_cq *cq = XFI_CONTAINER(fid, struct xfi_cq, cq_fid);
	ssize_t ret;

	if (count && !buf)
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_EINVAL, "%zu entries into no buffer\n", count);
	xfi_dom_lock(cq->dom);
	ret = xfi_cq_readfrom_locked(cq, buf, count, src_addr);
	xfi_dom_unlock(cq->dom);
	return ret;
}

static ssize_t xfi_cq_read(struct fid_cq *fid, void *buf, size_t count)
{
	return xfi_cq_readfrom(fid, buf, count, NULL);
}

static ssize_t xfi_cq_readerr(struct fid_cq *fid, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct xfi_cq *cq = XFI_CONTAINER(fid, struct xfi_cq, cq_fid);
	struct xfi_cq_err *q;

	if (flags)
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_EBADFLAGS, "flags %#" PRIx64 " (none are defined)\n",
			       flags);
	if (!buf)
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_EINVAL, "no buffer\n");
	xfi_dom_lock(cq->dom);
	q = xfi_cq_take_err(cq);
	xfi_dom_unlock(cq->dom);
	if (!q)
		return -FI_EAGAIN;
	/* we never hand out provider error data */
	buf->op_context = q->err.op_context;
	buf->flags = q->err.flags;
	buf->len = q->err.len;
	buf->buf = q->err.buf;
	buf->data = q->err.data;
	buf->tag = q->err.tag;
	buf->olen = q->err.olen;
	buf->err = q->err.err;
	buf->prov_errno = q->err.prov_errno;
	buf->err_data_size = 0;
	free(q);
	return 1;
}

/* Entries (and whether an error one waits) once progressed, under the lock. */
static size_t xfi_cq_ready(struct xfi_cq *cq, int *err)
{
	size_t n;

	xfi_dom_lock(cq->dom);
	xfi_domain_progress(cq->dom);
	n = cq->count;
	*err = !!cq->err_head;
	xfi_dom_unlock(cq->dom);
	return n;
}

/*
 * No wait object: sread busy-polls (manual progress needs the polling
 * anyway).  A CQ opened with FI_CQ_COND_THRESHOLD waits for *cond entries
 * (at most count: more could not be returned), or an error entry.
 */
static ssize_t xfi_cq_sreadfrom(struct fid_cq *fid, void *buf, size_t count,
				fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct xfi_cq *cq = XFI_CONTAINER(fid, struct xfi_cq, cq_fid);
	int64_t end = timeout >= 0 ? exa_clock_ns() + (int64_t)timeout * 1000000 : 0;
	size_t threshold = 1;
	unsigned long spins = 0;
	ssize_t ret;

	if (cq->wait_cond == FI_CQ_COND_THRESHOLD && cond)
		threshold = *(const size_t *)cond;
	if (threshold > count)
		threshold = count;
	for (;;) {
		int err;

		if (threshold <= 1 || xfi_cq_ready(cq, &err) >= threshold || err)
			ret = xfi_cq_readfrom(fid, buf, count, src_addr);
		else
			ret = -FI_EAGAIN;
		if (ret != -FI_EAGAIN)
			return ret;
		if (__atomic_exchange_n(&cq->signaled, 0, __ATOMIC_ACQ_REL))
			return -FI_EAGAIN;	/* fi_cq_signal: wake up empty-handed */
		if (timeout >= 0 && (++spins & 255) == 0 && exa_clock_ns() >= end)
			return -FI_EAGAIN;
	}
}

static ssize_t xfi_cq_sread(struct fid_cq *fid, void *buf, size_t count, const void *cond,
			    int timeout)
{
	return xfi_cq_sreadfrom(fid, buf, count, NULL, cond, timeout);
}

/* Wakes the next (or current) fi_cq_sread with -FI_EAGAIN. */
static int xfi_cq_signal(struct fid_cq *fid)
{
	struct xfi_cq *cq = XFI_CONTAINER(fid, struct xfi_cq, cq_fid);

	__atomic_store_n(&cq->signaled, 1, __ATOMIC_RELEASE);
	return 0;
}

static const char *xfi_cq_strerror(struct fid_cq *fid, int prov_errno, const void *err_data,
				   char *buf, size_t len)
{
	(void)fid; (void)err_data;
	if (buf && len) {
		strncpy(buf, fi_strerror(prov_errno), len - 1);
		buf[len - 1] = 0;
		return buf;
	}
	return fi_strerror(prov_errno);
}

static int xfi_cq_close(struct fid *fid)
{
	struct xfi_cq *cq = XFI_CONTAINER(fid, struct xfi_cq, cq_fid.fid);

	if (xfi_domain_put(cq->dom, &cq->refs))
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_EBUSY, "endpoints still use the completion queue\n");
	xfi_cq_ring_fini(cq);
	free(cq);
	return 0;
}

XFI_CLOSE_ONLY_OPS(xfi_cq_fi_ops, xfi_cq_close);

static struct fi_ops_cq xfi_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = xfi_cq_read,
	.readfrom = xfi_cq_readfrom,
	.readerr = xfi_cq_readerr,
	.sread = xfi_cq_sread,
	.sreadfrom = xfi_cq_sreadfrom,
	.signal = xfi_cq_signal,
	.strerror = xfi_cq_strerror,
};

int xfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cqp,
		void *context)
{
	struct xfi_domain *dom = XFI_CONTAINER(domain, struct xfi_domain, domain_fid);
	enum fi_cq_format format = attr ? attr->format : FI_CQ_FORMAT_UNSPEC;
	struct xfi_cq *cq;

	if (!cqp)
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_EINVAL, "no result pointer\n");
	if (format == FI_CQ_FORMAT_UNSPEC)
		format = FI_CQ_FORMAT_TAGGED;
	if (!xfi_cq_entry_size(format))
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_ENOSYS, "format %d: not supported\n", (int)format);
	if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_ENOSYS, "wait object %d: not supported (none)\n",
			       (int)attr->wait_obj);
	if (attr && (attr->flags & ~(uint64_t)FI_AFFINITY))
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_EBADFLAGS, "flags %#" PRIx64 ": unknown\n",
			       attr->flags);
	if (attr && (attr->flags & FI_AFFINITY))
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_ENOSYS, "FI_AFFINITY: not supported\n");
	if (attr && attr->wait_cond != FI_CQ_COND_NONE && attr->wait_cond != FI_CQ_COND_THRESHOLD)
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_EINVAL, "wait condition %d: unknown\n",
			       (int)attr->wait_cond);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_ENOMEM, "no memory\n");
	if (xfi_cq_ring_init(cq)) {
		free(cq);
		XFI_RETURN_ERR(FI_LOG_CQ, -FI_ENOMEM, "no memory for the entries\n");
	}
	cq->dom = dom;
	cq->format = format;
	cq->wait_cond = attr ? attr->wait_cond : FI_CQ_COND_NONE;
	if (attr)
		attr->format = format;
	xfi_fid_init(&cq->cq_fid.fid, FI_CLASS_CQ, context, &xfi_cq_fi_ops);
	cq->cq_fid.ops = &xfi_cq_ops;
	xfi_domain_get(dom);
	*cqp = &cq->cq_fid;
	return 0;
}
