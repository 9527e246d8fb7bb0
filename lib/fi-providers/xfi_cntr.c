// SPDX-License-Identifier: MIT
/*
 * Counters (fi_cntr): the number of operations of the kinds an endpoint
 * bound them to (FI_SEND, FI_RECV, FI_READ, FI_WRITE) that completed, and
 * of those that failed, whether or not the operation writes a CQ entry
 * (FI_SELECTIVE_COMPLETION, inject): xfi_cntr_count() (xfi.h) counts them
 * where they complete.  Reading and waiting progress every
 * endpoint of the domain, as a CQ read does (manual progress).  Remote
 * RMA is not counted: that needs FI_RMA_EVENT, which the providers do not
 * offer (the NI writes and reads registered memory without the target's
 * software).
 */
#include <sched.h>

#include "xfi.h"

static struct xfi_cntr *xfi_cntr_of(struct fid_cntr *fid)
{
	return XFI_CONTAINER(fid, struct xfi_cntr, cntr_fid);
}

static void xfi_cntr_progress(struct xfi_cntr *c)
{
	xfi_dom_lock(c->dom);
	xfi_domain_progress(c->dom);
	xfi_dom_unlock(c->dom);
}

static uint64_t xfi_cntr_read(struct fid_cntr *fid)
{
	struct xfi_cntr *c = xfi_cntr_of(fid);

	xfi_cntr_progress(c);
	return __atomic_load_n(&c->value, __ATOMIC_ACQUIRE);
}

static uint64_t xfi_cntr_readerr(struct fid_cntr *fid)
{
	struct xfi_cntr *c = xfi_cntr_of(fid);

	xfi_cntr_progress(c);
	return __atomic_load_n(&c->err, __ATOMIC_ACQUIRE);
}

static int xfi_cntr_add(struct fid_cntr *fid, uint64_t value)
{
	__atomic_add_fetch(&xfi_cntr_of(fid)->value, value, __ATOMIC_RELEASE);
	return 0;
}

static int xfi_cntr_set(struct fid_cntr *fid, uint64_t value)
{
	__atomic_store_n(&xfi_cntr_of(fid)->value, value, __ATOMIC_RELEASE);
	return 0;
}

static int xfi_cntr_adderr(struct fid_cntr *fid, uint64_t value)
{
	__atomic_add_fetch(&xfi_cntr_of(fid)->err, value, __ATOMIC_RELEASE);
	return 0;
}

static int xfi_cntr_seterr(struct fid_cntr *fid, uint64_t value)
{
	__atomic_store_n(&xfi_cntr_of(fid)->err, value, __ATOMIC_RELEASE);
	return 0;
}

/*
 * No wait object: the wait polls and progresses (manual progress needs
 * the polling anyway), yielding the CPU between polls with FI_WAIT_YIELD.
 * Returns early with -FI_EAVAIL once the error count changed.
 */
static int xfi_cntr_wait(struct fid_cntr *fid, uint64_t threshold, int timeout)
{
	struct xfi_cntr *c = xfi_cntr_of(fid);
	int64_t end = timeout >= 0 ? exa_clock_ns() + (int64_t)timeout * 1000000 : 0;
	uint64_t err0 = __atomic_load_n(&c->err, __ATOMIC_ACQUIRE);
	unsigned long spins = 0;

	if (c->wait_obj == FI_WAIT_NONE)
		XFI_RETURN_ERR(FI_LOG_CNTR, -FI_EINVAL,
			       "fi_cntr_wait on a counter opened with FI_WAIT_NONE\n");
	for (;;) {
		xfi_cntr_progress(c);
		if (__atomic_load_n(&c->value, __ATOMIC_ACQUIRE) >= threshold)
			return 0;
		if (__atomic_load_n(&c->err, __ATOMIC_ACQUIRE) != err0)
			return -FI_EAVAIL;
		if (timeout >= 0 && (++spins & 255) == 0 && exa_clock_ns() >= end)
			return -FI_ETIMEDOUT;
		if (c->wait_obj == FI_WAIT_YIELD)
			sched_yield();
	}
}

static int xfi_cntr_close(struct fid *fid)
{
	struct xfi_cntr *c = XFI_CONTAINER(fid, struct xfi_cntr, cntr_fid.fid);

	if (xfi_domain_put(c->dom, &c->refs))
		XFI_RETURN_ERR(FI_LOG_CNTR, -FI_EBUSY, "endpoints still use the counter\n");
	free(c);
	return 0;
}

XFI_CLOSE_ONLY_OPS(xfi_cntr_fi_ops, xfi_cntr_close);

static struct fi_ops_cntr xfi_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = xfi_cntr_read,
	.readerr = xfi_cntr_readerr,
	.add = xfi_cntr_add,
	.set = xfi_cntr_set,
	.wait = xfi_cntr_wait,
	.adderr = xfi_cntr_adderr,
	.seterr = xfi_cntr_seterr,
};

int xfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntrp, void *context)
{
	struct xfi_domain *dom = XFI_CONTAINER(domain, struct xfi_domain, domain_fid);
	enum fi_wait_obj wait_obj = attr ? attr->wait_obj : FI_WAIT_UNSPEC;
	struct xfi_cntr *c;

	if (!cntrp)
		XFI_RETURN_ERR(FI_LOG_CNTR, -FI_EINVAL, "no result pointer\n");
	if (attr && attr->events != FI_CNTR_EVENTS_COMP)
		XFI_RETURN_ERR(FI_LOG_CNTR, -FI_ENOSYS, "events %d: only FI_CNTR_EVENTS_COMP\n",
			       (int)attr->events);
	if (attr && attr->flags)
		XFI_RETURN_ERR(FI_LOG_CNTR, -FI_EBADFLAGS, "flags %#" PRIx64 "\n", attr->flags);
	if (wait_obj == FI_WAIT_UNSPEC)
		wait_obj = FI_WAIT_YIELD;
	if (wait_obj != FI_WAIT_NONE && wait_obj != FI_WAIT_YIELD)
		XFI_RETURN_ERR(FI_LOG_CNTR, -FI_ENOSYS, "wait object %d: not supported (none, "
			       "FI_WAIT_YIELD)\n", (int)wait_obj);
	c = calloc(1, sizeof(*c));
	if (!c)
		XFI_RETURN_ERR(FI_LOG_CNTR, -FI_ENOMEM, "no memory\n");
	c->dom = dom;
	c->wait_obj = wait_obj;
	if (attr)
		attr->wait_obj = wait_obj;
	xfi_fid_init(&c->cntr_fid.fid, FI_CLASS_CNTR, context, &xfi_cntr_fi_ops);
	c->cntr_fid.ops = &xfi_cntr_ops;
	xfi_domain_get(dom);
	*cntrp = &c->cntr_fid;
	return 0;
}

int xfi_cntr_bind(struct xfi_ep *ep, struct xfi_cntr *c, uint64_t flags)
{
	static const uint64_t kinds[] = { FI_SEND, FI_RECV, FI_READ, FI_WRITE };
	struct xfi_cntr **slots[] = { &ep->cntr_send, &ep->cntr_recv, &ep->cntr_read,
				      &ep->cntr_write };
	unsigned int i;

	if (c->dom != ep->dom)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "counter of another domain\n");
	if (flags & (FI_REMOTE_READ | FI_REMOTE_WRITE))
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EOPNOTSUPP, "FI_REMOTE_READ/WRITE counters "
			       "need FI_RMA_EVENT, which the provider does not offer\n");
	if (flags & ~(uint64_t)(FI_SEND | FI_RECV | FI_READ | FI_WRITE))
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EBADFLAGS, "counter flags %#" PRIx64 "\n",
			       flags);
	if (!flags)
		XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "counter bound to no operation\n");
	for (i = 0; i < 4; i++) {
		if ((flags & kinds[i]) && *slots[i])
			XFI_RETURN_ERR(FI_LOG_EP_CTRL, -FI_EINVAL, "the endpoint has a counter "
				       "for flag %#" PRIx64 "\n", kinds[i]);
	}
	for (i = 0; i < 4; i++) {
		if (flags & kinds[i]) {
			*slots[i] = c;
			c->refs++;
		}
	}
	return 0;
}

void xfi_cntr_unbind_all(struct xfi_ep *ep)
{
	struct xfi_cntr **slots[] = { &ep->cntr_send, &ep->cntr_recv, &ep->cntr_read,
				      &ep->cntr_write };
	unsigned int i;

	for (i = 0; i < 4; i++) {
		if (*slots[i]) {
			(*slots[i])->refs--;
			*slots[i] = NULL;
		}
	}
}
