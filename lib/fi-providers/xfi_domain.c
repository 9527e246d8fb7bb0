// SPDX-License-Identifier: MIT
/*
 * The domain: one open NIC, the lock over every object opened on it, and
 * the table that opens them (address vectors, completion queues, counters,
 * endpoints, registrations: xfi_av.c, xfi_cq.c, xfi_cntr.c, xfi_ep.c,
 * xfi_mr.c); fi_open_ops FI_EXANET_DOMAIN_OPS (fi_exanet.h).
 */
#include <stdlib.h>
#include <string.h>

#include "xfi.h"
#include "fi_exanet.h"

static int xfi_domain_close(struct fid *fid)
{
	struct xfi_domain *dom = XFI_CONTAINER(fid, struct xfi_domain, domain_fid.fid);

	if (dom->refs)
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_EBUSY,
			       "%d objects (endpoints, queues, registrations) still open\n",
			       dom->refs);
	if (dom->rdma)
		xfi_nic_rdma_free(dom->rdma);
	xfi_mrc_fini(&dom->mrc);
	xfi_cache_drain(&dom->op_cache);
	xfi_cache_drain(&dom->rx_cache);
	xfi_cache_drain(&dom->msg_cache);
	xfi_nic_close(dom->dev);
	pthread_mutex_destroy(&dom->lock);
	free(dom);
	return 0;
}

static int xfi_mr_cache_stats(struct fid_domain *domain, struct fi_exanet_mr_cache_stats *out)
{
	struct xfi_domain *dom = XFI_CONTAINER(domain, struct xfi_domain, domain_fid);
	struct xfi_mr_cache *c = &dom->mrc;
	struct xfi_ep *ep;

	if (!domain || !out)
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_EINVAL, "no domain or no result\n");
	memset(out, 0, sizeof(*out));
	xfi_dom_lock(dom);
	for (ep = dom->eps; ep; ep = ep->dom_next)
		out->stream_resets += ep->stream_resets;
	pthread_mutex_lock(&c->lock);
	out->hits = c->hits;
	out->misses = c->misses;
	out->registrations = c->registrations;
	out->deregistrations = c->deregistrations;
	out->evictions = c->evictions;
	out->entries = c->count;
	out->on_demand = c->odp;
	pthread_mutex_unlock(&c->lock);
	xfi_dom_unlock(dom);
	return 0;
}

static struct fi_exanet_ops_domain xfi_exanet_domain_ops = {
	.size = sizeof(struct fi_exanet_ops_domain),
	.mr_cache_stats = xfi_mr_cache_stats,
};

static int xfi_domain_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
			       void *context)
{
	(void)fid; (void)context;
	if (!name || !ops || flags)
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_EINVAL, "no name, no result or flags %#" PRIx64
			       "\n", flags);
	if (strcmp(name, FI_EXANET_DOMAIN_OPS))
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_ENOSYS, "ops '%s': only " FI_EXANET_DOMAIN_OPS
			       "\n", name);
	*ops = &xfi_exanet_domain_ops;
	return 0;
}

static struct fi_ops xfi_domain_fi_ops = {
	.size = sizeof(struct fi_ops), .close = xfi_domain_close,
	.bind = xfi_no_bind, .control = xfi_no_control,
	.ops_open = xfi_domain_ops_open, .tostr = xfi_no_tostr,
	.ops_set = xfi_no_ops_set,
};

static int xfi_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			      struct fid_ep **sep, void *context)
{
	(void)domain; (void)info; (void)sep; (void)context;
	XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_ENOSYS, "fi_scalable_ep: not supported\n");
}

static int xfi_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
			    struct fid_poll **pollset)
{
	(void)domain; (void)attr; (void)pollset;
	XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_ENOSYS, "fi_poll_open: not supported\n");
}

static int xfi_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
			  struct fid_stx **stx, void *context)
{
	(void)domain; (void)attr; (void)stx; (void)context;
	XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_ENOSYS, "fi_stx_context: not supported\n");
}

static int xfi_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
			  struct fid_ep **rx_ep, void *context)
{
	(void)domain; (void)attr; (void)rx_ep; (void)context;
	XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_ENOSYS, "fi_srx_context: not supported\n");
}

static int xfi_no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
				   struct fi_collective_attr *attr, uint64_t flags)
{
	(void)domain; (void)coll; (void)attr; (void)flags;
	XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_ENOSYS,
		       "fi_query_collective: not supported (no collectives)\n");
}

static int xfi_endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
			 uint64_t flags, void *context)
{
	if (flags)
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_EBADFLAGS, "flags %#" PRIx64 "\n", flags);
	return xfi_ep_open(domain, info, ep, context);
}

static struct fi_ops_domain xfi_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = xfi_av_open,
	.cq_open = xfi_cq_open,
	.endpoint = xfi_ep_open,
	.scalable_ep = xfi_no_scalable_ep,
	.cntr_open = xfi_cntr_open,
	.poll_open = xfi_no_poll_open,
	.stx_ctx = xfi_no_stx_ctx,
	.srx_ctx = xfi_no_srx_ctx,
	.query_atomic = xfi_query_atomic,
	.query_collective = xfi_no_query_collective,
	.endpoint2 = xfi_endpoint2,
};

int xfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domp, void *context)
{
	struct xfi_domain *dom;
	int err;

	if (!info || !domp)
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_EINVAL, "no info or no result pointer\n");
	if (info->domain_attr && info->domain_attr->name &&
	    strncmp(info->domain_attr->name, XFI_NIC_NAME, strlen(XFI_NIC_NAME)))
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_EINVAL, "domain '%s' is not " XFI_NIC_NAME "'s\n",
			       info->domain_attr->name);
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		XFI_RETURN_ERR(FI_LOG_DOMAIN, -FI_ENOMEM, "no memory\n");
	err = xfi_nic_open(xfi_device_path(), &dom->dev);
	if (err) {
		FI_WARN(&xfi_prov, FI_LOG_DOMAIN, "%s: %s\n", xfi_device_path(), strerror(-err));
		free(dom);
		return err;	/* negative errno = -FI_E* for the common codes */
	}
	pthread_mutex_init(&dom->lock, NULL);
	dom->serialized = info->domain_attr &&
		info->domain_attr->threading == FI_THREAD_DOMAIN;
	xfi_mrc_init(&dom->mrc);
	dom->fabric = XFI_CONTAINER(fabric, struct xfi_fabric, fabric_fid);
	dom->node_id = xfi_nic_node_id(dom->dev);
	xfi_fid_init(&dom->domain_fid.fid, FI_CLASS_DOMAIN, context, &xfi_domain_fi_ops);
	dom->domain_fid.ops = &xfi_domain_ops;
	dom->domain_fid.mr = &xfi_mr_ops;
	*domp = &dom->domain_fid;
	return 0;
}
