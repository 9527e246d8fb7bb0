// SPDX-License-Identifier: MIT
/*
 * FI_ATOMIC, done at the target by its provider's progress: the NI model
 * has no atomic unit, so a request travels as one in-sequence packet of the
 * endpoint stream (XFI_PKT_ATOMIC: op, datatype, count, address, key,
 * operands, compare values, cookie), the target's progress checks the key,
 * range, access and alignment against its registrations, applies the op
 * and always answers (XFI_PKT_ATOMIC_RESP: cookie, status, old values).
 * The answer completes the initiator's operation (delivery complete);
 * a refused request changes no memory and completes in error.
 *
 * Ordering: the stream delivers in issue order and the target applies in
 * delivery order, so atomics of one endpoint to one target are applied in
 * the order they were posted (FI_ORDER_ATOMIC_RAR/RAW/WAR/WAW).  A target
 * that does not call into libfabric applies nothing (manual progress).
 * Documentation/exanet/libfabric.md, "Atomics".
 */
#include <stdlib.h>
#include <string.h>

#include "xfi.h"
#include "xfi_atomic_ops.h"

/* One call of the fi_ops_atomic table, in one form. */
struct xfi_atomic_call {
	enum xfi_atomic_kind kind;
	const void *buf;		/* operands (NULL for FI_ATOMIC_READ) */
	const void *compare;		/* XFI_KIND_COMPARE */
	void *result;			/* XFI_KIND_FETCH, XFI_KIND_COMPARE */
	size_t count;
	fi_addr_t dest;
	uint64_t addr, key;
	enum fi_datatype datatype;
	enum fi_op op;
	uint64_t flags;			/* FI_COMPLETION, FI_INJECT */
	void *context;
};

/* ---- initiator ---- */

static ssize_t xfi_atomic_post(struct fid_ep *fid, const struct xfi_atomic_call *c)
{
	struct xfi_ep *ep = xfi_ep_of(fid);
	struct xfi_domain *dom = ep->dom;
	struct xfi_atomic_info a = {
		.addr = c->addr, .key = c->key, .op = c->op, .datatype = c->datatype,
		.count = (unsigned int)c->count, .operand = c->buf, .compare = c->compare,
		.size = xfi_atomic_dt_size(c->datatype),
		.flags = c->kind == XFI_KIND_WRITE ? 0 : XFI_ATOMIC_FETCH,
	};
	size_t max = xfi_atomic_max_count(c->op, c->datatype);
	struct xfi_hdr h0 = { 0 };
	struct xfi_tx_op *op;
	struct xfi_peer *peer;
	const char *why;
	uint32_t key;
	int err;

	if (!(ep->caps & FI_ATOMIC))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EOPNOTSUPP, "endpoint opened without FI_ATOMIC\n");
	if (!xfi_atomic_valid(c->kind, c->op, c->datatype))
		/* fi_tostr has one buffer: one call per message */
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EOPNOTSUPP, "op %d on datatype %s: not "
			       "supported\n", (int)c->op,
			       fi_tostr(&c->datatype, FI_TYPE_ATOMIC_TYPE));
	if (!c->count || c->count > max)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "%zu values: 1 to %zu (one packet)\n",
			       c->count, max);
	if ((!c->buf && c->op != FI_ATOMIC_READ) || (c->kind == XFI_KIND_COMPARE && !c->compare) ||
	    (c->kind != XFI_KIND_WRITE && !c->result))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "no operand, compare or result buffer\n");
	if ((c->flags & FI_INJECT) && c->kind != XFI_KIND_WRITE)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "FI_INJECT of a fetching atomic\n");
	xfi_dom_lock(dom);
	if (!ep->enabled) {
		why = "endpoint not enabled";
		err = -FI_EOPBADSTATE;
		goto fail;
	}
	if (xfi_av_key(ep->av, c->dest, &key) || !(peer = xfi_peer_get(ep, key))) {
		why = "no such peer, or no state for it";
		err = -FI_EINVAL;
		goto fail;
	}
	op = xfi_cache_get(&dom->op_cache, sizeof(*op));
	if (!op) {
		why = "no memory";
		err = -FI_ENOMEM;
		goto fail;
	}
	op->kind = XFI_OP_ATOMIC;
	op->dom = dom;
	op->context = c->context;
	op->flags = FI_ATOMIC | (c->kind == XFI_KIND_WRITE ? FI_WRITE : FI_READ) |
		(c->flags & (FI_COMPLETION | FI_INJECT | XFI_NO_COMPLETION));
	op->key = key;
	op->peer = peer;
	/* the operands are copied into the packet now: the caller's buffers
	 * are free on return, whatever FI_INJECT says */
	op->cookie = (uint32_t)++ep->next_cookie;
	a.cookie = (uint32_t)op->cookie;
	op->pre_len = (uint8_t)xfi_build_atomic_req(op->inline_data, &h0, &a);
	op->result = c->result;
	op->result_len = c->kind == XFI_KIND_WRITE ? 0 : c->count * a.size;
	xfi_tx_submit(ep, op);
	xfi_dom_unlock(dom);
	return 0;
fail:
	xfi_dom_unlock(dom);
	XFI_RETURN_ERR(FI_LOG_EP_DATA, err, "atomic to %#" PRIx64 ": %s\n", c->dest, why);
}

/* The target's answer to one of our requests. */
void xfi_atomic_answer(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt, size_t len)
{
	const uint8_t *data;
	struct xfi_tx_op *op;
	uint32_t cookie;
	int32_t status;
	size_t dlen;
	int done;

	if (xfi_parse_atomic_resp(pkt, len, &cookie, &status, &data, &dlen)) {
		ep->rx_dropped++;
		return;
	}
	op = xfi_take_reply_op(ep, peer, XFI_OP_ATOMIC, cookie, &done);
	if (!op) {
		ep->rx_dropped++;	/* unknown or repeated cookie */
		return;
	}
	if (!status && dlen != op->result_len)
		status = FI_EIO;	/* not what we asked for: nothing to trust */
	else if (!status && dlen)
		memcpy(op->result, data, dlen);
	xfi_reply_done(ep, op, status, done);
}

/* ---- target ---- */

/*
 * May the request a (well formed) of ep's peer touch memory?  0 with
 * *target set, or the positive FI_E* code the answer carries.
 */
static int xfi_atomic_check(struct xfi_ep *ep, const struct xfi_atomic_info *a, void **target)
{
	enum xfi_atomic_kind kind = a->op >= XFI_AOP_CSWAP ? XFI_KIND_COMPARE :
		(a->flags & XFI_ATOMIC_FETCH) ? XFI_KIND_FETCH : XFI_KIND_WRITE;
	uint64_t need = (a->op == FI_ATOMIC_READ ? 0 : FI_REMOTE_WRITE) |
		((a->flags & XFI_ATOMIC_FETCH) ? FI_REMOTE_READ : 0);
	struct xfi_mr *mr;
	size_t len = a->count * a->size;

	if (!(ep->caps & FI_ATOMIC) || !xfi_atomic_valid(kind, a->op, a->datatype))
		return FI_EOPNOTSUPP;
	/* key and range: one registration of this endpoint's domain at most */
	mr = xfi_mr_find(ep->dom, a->key, a->addr, len);
	if (!mr || (mr->access & need) != need || (ep->caps & need) != need)
		return FI_EACCES;
	if (a->addr % a->size)
		return FI_EINVAL;
	*target = (void *)(uintptr_t)a->addr;
	return 0;
}

void xfi_atomic_serve(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt, size_t len)
{
	uint8_t old[XFI_ATOMIC_DATA_MAX];
	struct xfi_atomic_info a;
	struct xfi_hdr h0 = { 0 };
	struct xfi_tx_op *ans;
	void *target = NULL;
	int status;

	if (xfi_parse_atomic_req(pkt, len, &a)) {
		ep->rx_dropped++;
		return;
	}
	/* the answer first: a request we could not answer is not applied */
	ans = xfi_cache_get(&ep->dom->op_cache, sizeof(*ans));
	if (!ans) {
		ep->rx_dropped++;
		FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "atomic from key %#x dropped: no memory\n",
			peer->key);
		return;
	}
	status = xfi_atomic_check(ep, &a, &target);
	if (status)
		FI_WARN(&xfi_prov, FI_LOG_EP_DATA, "atomic from key %#x to %#" PRIx64 " (key %#"
			PRIx64 ", %u values) refused: %s\n", peer->key, a.addr, a.key, a.count,
			fi_strerror(status));
	else
		xfi_atomic_apply(a.op, a.datatype, a.count, target, a.operand, a.compare, old);
	ans->kind = XFI_OP_ATOMIC_RESP;
	ans->flags = FI_INJECT;
	ans->key = peer->key;
	ans->peer = peer;
	ans->pre_len = (uint8_t)xfi_build_atomic_resp(ans->inline_data, &h0, a.cookie, status, old,
						      !status && (a.flags & XFI_ATOMIC_FETCH) ?
						      a.count * a.size : 0);
	xfi_tx_enqueue(ep, ans);	/* sent by the progress call's xfi_tx_fill */
}

/* ---- validity ---- */

static int xfi_atomic_count(enum xfi_atomic_kind kind, enum fi_datatype datatype, enum fi_op op,
			    size_t *count)
{
	if (!xfi_atomic_valid(kind, op, datatype))
		return -FI_EOPNOTSUPP;	/* a question, not an error: no warning */
	if (count)
		*count = xfi_atomic_max_count(op, datatype);
	return 0;
}

int xfi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
		     struct fi_atomic_attr *attr, uint64_t flags)
{
	enum xfi_atomic_kind kind = (flags & FI_COMPARE_ATOMIC) ? XFI_KIND_COMPARE :
		(flags & FI_FETCH_ATOMIC) ? XFI_KIND_FETCH : XFI_KIND_WRITE;
	int ret;

	(void)domain;
	/* FI_TAGGED (tagged atomics) is not offered */
	if (flags & ~(uint64_t)(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC))
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_EBADFLAGS, "fi_query_atomic: flags %#" PRIx64
			       " not supported\n", flags);
	if ((flags & FI_COMPARE_ATOMIC) && (flags & FI_FETCH_ATOMIC))
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_EINVAL,
			       "FI_FETCH_ATOMIC and FI_COMPARE_ATOMIC together\n");
	if (!attr)
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_EINVAL, "no attributes\n");
	ret = xfi_atomic_count(kind, datatype, op, &attr->count);
	if (!ret)
		attr->size = xfi_atomic_dt_size(datatype);
	return ret;
}

static int xfi_atomic_writevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
				 size_t *count)
{
	(void)ep;
	return xfi_atomic_count(XFI_KIND_WRITE, datatype, op, count);
}

static int xfi_atomic_readwritevalid(struct fid_ep *ep, enum fi_datatype datatype,
				     enum fi_op op, size_t *count)
{
	(void)ep;
	return xfi_atomic_count(XFI_KIND_FETCH, datatype, op, count);
}

static int xfi_atomic_compwritevalid(struct fid_ep *ep, enum fi_datatype datatype,
				     enum fi_op op, size_t *count)
{
	(void)ep;
	return xfi_atomic_count(XFI_KIND_COMPARE, datatype, op, count);
}

/* ---- fi_ops_atomic: every form comes down to one struct xfi_atomic_call ---- */

/* One local ioc (atomic_iov_limit is 1): its buffer, and its count in *count. */
static int xfi_one_ioc(const struct fi_ioc *ioc, size_t n, const void **buf, size_t *count)
{
	if (n != 1 || !ioc)
		return -1;
	*buf = ioc->addr;
	*count = ioc->count;
	return 0;
}

static ssize_t xfi_atomic_write(struct fid_ep *ep, const void *buf, size_t count, void *desc,
				fi_addr_t dest, uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct xfi_atomic_call c = {
		.kind = XFI_KIND_WRITE, .buf = buf, .count = count, .dest = dest, .addr = addr,
		.key = key, .datatype = datatype, .op = op, .flags = XFI_OP_FLAGS(ep),
		.context = context,
	};

	(void)desc;
	return xfi_atomic_post(ep, &c);
}

static ssize_t xfi_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
				 size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op, void *context)
{
	const void *buf;
	size_t n;

	if (xfi_one_ioc(iov, count, &buf, &n))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "%zu iocs: one\n", count);
	return xfi_atomic_write(ep, buf, n, desc ? desc[0] : NULL, dest, addr, key, datatype, op,
				context);
}

/* The message form's common part: one local and one remote ioc of the same count. */
static int xfi_atomic_msg_call(const struct fi_msg_atomic *msg, uint64_t flags,
			       enum xfi_atomic_kind kind, struct xfi_atomic_call *c)
{
	if (!msg || xfi_one_ioc(msg->msg_iov, msg->iov_count, &c->buf, &c->count) ||
	    msg->rma_iov_count != 1 || !msg->rma_iov || msg->rma_iov[0].count != c->count)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL,
			       "not one local and one remote ioc of the same count\n");
	/* an atomic completes with the target's answer: every completion
	 * level is met; FI_FENCE, FI_REMOTE_CQ_DATA and tagged atomics are
	 * not offered, FI_INJECT is for the non-fetching ones */
	if (flags & ~(uint64_t)(FI_COMPLETION | FI_MORE | FI_INJECT_COMPLETE |
				FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE |
				(kind == XFI_KIND_WRITE ? FI_INJECT : 0)))
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EBADFLAGS, "atomic message: flags %#" PRIx64
			       " not supported\n", flags);
	c->kind = kind;
	c->dest = msg->addr;
	c->addr = msg->rma_iov[0].addr;
	c->key = msg->rma_iov[0].key;
	c->datatype = msg->datatype;
	c->op = msg->op;
	c->flags = flags & (FI_COMPLETION | FI_INJECT);
	c->context = msg->context;
	return 0;
}

static ssize_t xfi_atomic_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
				   uint64_t flags)
{
	struct xfi_atomic_call c = { 0 };
	int ret = xfi_atomic_msg_call(msg, flags, XFI_KIND_WRITE, &c);

	return ret ? ret : xfi_atomic_post(ep, &c);
}

static ssize_t xfi_atomic_inject(struct fid_ep *ep, const void *buf, size_t count,
				 fi_addr_t dest, uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op)
{
	struct xfi_atomic_call c = {
		.kind = XFI_KIND_WRITE, .buf = buf, .count = count, .dest = dest, .addr = addr,
		.key = key, .datatype = datatype, .op = op,
		.flags = FI_INJECT | XFI_NO_COMPLETION,
	};

	return xfi_atomic_post(ep, &c);
}

static ssize_t xfi_atomic_readwrite(struct fid_ep *ep, const void *buf, size_t count,
				    void *desc, void *result, void *result_desc,
				    fi_addr_t dest, uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct xfi_atomic_call c = {
		.kind = XFI_KIND_FETCH, .buf = buf, .result = result, .count = count,
		.dest = dest, .addr = addr, .key = key, .datatype = datatype, .op = op,
		.flags = XFI_OP_FLAGS(ep), .context = context,
	};

	(void)desc; (void)result_desc;
	return xfi_atomic_post(ep, &c);
}

static ssize_t xfi_atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
				     size_t count, struct fi_ioc *resultv, void **result_desc,
				     size_t result_count, fi_addr_t dest, uint64_t addr,
				     uint64_t key, enum fi_datatype datatype, enum fi_op op,
				     void *context)
{
	const void *buf, *res;
	size_t n, rn;

	(void)desc; (void)result_desc;
	if (xfi_one_ioc(iov, count, &buf, &n) || xfi_one_ioc(resultv, result_count, &res, &rn) ||
	    rn != n)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL,
			       "not one operand and one result ioc of the same count\n");
	return xfi_atomic_readwrite(ep, buf, n, NULL, (void *)res, NULL, dest, addr, key,
				    datatype, op, context);
}

static ssize_t xfi_atomic_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
				       struct fi_ioc *resultv, void **result_desc,
				       size_t result_count, uint64_t flags)
{
	struct xfi_atomic_call c = { 0 };
	const void *res;
	size_t rn;
	int ret = xfi_atomic_msg_call(msg, flags, XFI_KIND_FETCH, &c);

	(void)result_desc;
	if (ret)
		return ret;
	if (xfi_one_ioc(resultv, result_count, &res, &rn) || rn != c.count)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL, "not one result ioc of %zu values\n",
			       c.count);
	c.result = (void *)res;
	return xfi_atomic_post(ep, &c);
}

static ssize_t xfi_atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count,
				    void *desc, const void *compare, void *compare_desc,
				    void *result, void *result_desc, fi_addr_t dest,
				    uint64_t addr, uint64_t key, enum fi_datatype datatype,
				    enum fi_op op, void *context)
{
	struct xfi_atomic_call c = {
		.kind = XFI_KIND_COMPARE, .buf = buf, .compare = compare, .result = result,
		.count = count, .dest = dest, .addr = addr, .key = key, .datatype = datatype,
		.op = op, .flags = XFI_OP_FLAGS(ep), .context = context,
	};

	(void)desc; (void)compare_desc; (void)result_desc;
	return xfi_atomic_post(ep, &c);
}

static ssize_t xfi_atomic_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
				     size_t count, const struct fi_ioc *comparev,
				     void **compare_desc, size_t compare_count,
				     struct fi_ioc *resultv, void **result_desc,
				     size_t result_count, fi_addr_t dest, uint64_t addr,
				     uint64_t key, enum fi_datatype datatype, enum fi_op op,
				     void *context)
{
	const void *buf, *cmp, *res;
	size_t n, cn, rn;

	(void)desc; (void)compare_desc; (void)result_desc;
	if (xfi_one_ioc(iov, count, &buf, &n) || xfi_one_ioc(comparev, compare_count, &cmp, &cn) ||
	    xfi_one_ioc(resultv, result_count, &res, &rn) || cn != n || rn != n)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL,
			       "not one operand, compare and result ioc of the same count\n");
	return xfi_atomic_compwrite(ep, buf, n, NULL, cmp, NULL, (void *)res, NULL, dest, addr,
				    key, datatype, op, context);
}

static ssize_t xfi_atomic_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
				       const struct fi_ioc *comparev, void **compare_desc,
				       size_t compare_count, struct fi_ioc *resultv,
				       void **result_desc, size_t result_count, uint64_t flags)
{
	struct xfi_atomic_call c = { 0 };
	const void *cmp, *res;
	size_t cn, rn;
	int ret = xfi_atomic_msg_call(msg, flags, XFI_KIND_COMPARE, &c);

	(void)compare_desc; (void)result_desc;
	if (ret)
		return ret;
	if (xfi_one_ioc(comparev, compare_count, &cmp, &cn) ||
	    xfi_one_ioc(resultv, result_count, &res, &rn) || cn != c.count || rn != c.count)
		XFI_RETURN_ERR(FI_LOG_EP_DATA, -FI_EINVAL,
			       "not one compare and one result ioc of %zu values\n", c.count);
	c.compare = cmp;
	c.result = (void *)res;
	return xfi_atomic_post(ep, &c);
}

struct fi_ops_atomic xfi_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = xfi_atomic_write,
	.writev = xfi_atomic_writev,
	.writemsg = xfi_atomic_writemsg,
	.inject = xfi_atomic_inject,
	.readwrite = xfi_atomic_readwrite,
	.readwritev = xfi_atomic_readwritev,
	.readwritemsg = xfi_atomic_readwritemsg,
	.compwrite = xfi_atomic_compwrite,
	.compwritev = xfi_atomic_compwritev,
	.compwritemsg = xfi_atomic_compwritemsg,
	.writevalid = xfi_atomic_writevalid,
	.readwritevalid = xfi_atomic_readwritevalid,
	.compwritevalid = xfi_atomic_compwritevalid,
};
