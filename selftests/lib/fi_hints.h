/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fi_getinfo hints of two libfabric clients the providers "exanet" and
 * "extoll" must both answer (issue 29), and the check of an answer against
 * what each client needs.  Used by the host test test_xfi_getinfo (both
 * providers from build/lib, devices faked) and in-VM by extoll_fi (nodes
 * with both NICs).
 *
 *  - GASNet-EX ofi-conduit: FI_EP_RDM, FI_RMA | FI_MSG | FI_MULTI_RECV,
 *    mode FI_CONTEXT, tx op_flags FI_DELIVERY_COMPLETE, rx op_flags
 *    FI_MULTI_RECV, FI_THREAD_DOMAIN or FI_THREAD_SAFE, manual control
 *    progress, FI_RM_ENABLED, FI_AV_TABLE or FI_AV_MAP, mr_mode
 *    FI_MR_ENDPOINT | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED; it
 *    must not be made to use FI_MR_LOCAL, FI_CONTEXT2 or FI_MSG_PREFIX.
 *  - Open MPI btl ofi (Debian's 4.1.4, as dumped from the provider's
 *    fi_getinfo): FI_EP_RDM, FI_RMA | FI_ATOMIC (FI_MSG as well for its
 *    two-sided mode), mode FI_CONTEXT | FI_CONTEXT2, mr_mode FI_MR_VIRT_ADDR
 *    | FI_MR_ALLOCATED | FI_MR_PROV_KEY, tx op_flags FI_DELIVERY_COMPLETE.
 */
#ifndef FI_HINTS_H
#define FI_HINTS_H

#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#define GASNET_MR_MODE	(FI_MR_ENDPOINT | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)
#define OMPI_BTL_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

static inline struct fi_info *gasnet_hints(enum fi_threading threading, enum fi_av_type av_type)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_RMA | FI_MSG | FI_MULTI_RECV;
	h->mode = FI_CONTEXT;
	h->addr_format = FI_FORMAT_UNSPEC;
	h->ep_attr->type = FI_EP_RDM;
	h->tx_attr->op_flags = FI_DELIVERY_COMPLETE | FI_COMPLETION;
	h->rx_attr->op_flags = FI_MULTI_RECV | FI_COMPLETION;
	h->domain_attr->threading = threading;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->domain_attr->av_type = av_type;
	h->domain_attr->mr_mode = GASNET_MR_MODE;
	return h;
}

static inline struct fi_info *ompi_btl_ofi_hints(int two_sided)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_RMA | FI_ATOMIC | (two_sided ? FI_MSG : 0);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = OMPI_BTL_MR_MODE;
	h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	return h;
}

/*
 * Does answer i give the client of hints h what it needs?  NULL if so, else
 * what is wrong.  Both: asked caps, RDM, no mode beyond the client's, an
 * mr_mode within the client's (so never FI_MR_LOCAL), no message prefix,
 * the tx op_flags kept (FI_DELIVERY_COMPLETE).  GASNet (FI_MULTI_RECV
 * asked): FI_RM_ENABLED, the threading and AV type asked for.
 */
static inline const char *fi_hints_unmet(const struct fi_info *h, const struct fi_info *i)
{
	if ((i->caps & h->caps) != h->caps)
		return "capabilities missing";
	if (i->ep_attr->type != FI_EP_RDM)
		return "not FI_EP_RDM";
	if (i->mode & ~h->mode)
		return "a mode the client does not take";
	if (i->domain_attr->mr_mode & ~h->domain_attr->mr_mode)
		return "an mr_mode the client does not take";
	if (i->domain_attr->mr_mode & FI_MR_LOCAL)
		return "FI_MR_LOCAL required";
	if (i->ep_attr->msg_prefix_size || (i->mode & (FI_MSG_PREFIX | FI_CONTEXT2)))
		return "FI_MSG_PREFIX or FI_CONTEXT2 required";
	if ((i->tx_attr->op_flags & h->tx_attr->op_flags) != h->tx_attr->op_flags)
		return "tx op_flags (FI_DELIVERY_COMPLETE) dropped";
	if (!(h->caps & FI_MULTI_RECV))
		return NULL;
	if (i->domain_attr->resource_mgmt != FI_RM_ENABLED)
		return "not FI_RM_ENABLED";
	if (i->domain_attr->threading != h->domain_attr->threading)
		return "another threading level";
	if (i->domain_attr->av_type != h->domain_attr->av_type)
		return "another AV type";
	if (!(i->rx_attr->caps & FI_MULTI_RECV))
		return "no FI_MULTI_RECV on the receive side";
	return NULL;
}

#endif
