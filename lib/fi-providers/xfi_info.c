// SPDX-License-Identifier: MIT
/*
 * fi_getinfo: which hints the provider meets, the fi_info it answers with,
 * and the addresses in it (this node's NI, a node string or the hints').
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "xfi.h"

/*
 * A refused hint says why at FI_LOG_LEVEL=info (e.g. "FI_LOG_LEVEL=info
 * fi_info -p exanet" shows what a client asked for that the provider lacks).
 */
static int xfi_refuse(const char *why)
{
	FI_INFO(&xfi_prov, FI_LOG_CORE, "hints refused: %s\n", why);
	return 0;
}

#define XFI_REFUSE_IF(cond) do { if (cond) return xfi_refuse(#cond); } while (0)

static int xfi_hints_ok(const struct fi_info *hints)
{
	if (!hints)
		return 1;
	if (hints->caps & ~(uint64_t)XFI_CAPS) {
		uint64_t missing = hints->caps & ~(uint64_t)XFI_CAPS;

		FI_INFO(&xfi_prov, FI_LOG_CORE, "hints refused: capabilities not offered: %s\n",
			fi_tostr(&missing, FI_TYPE_CAPS));
		return 0;
	}
	XFI_REFUSE_IF(hints->addr_format != FI_FORMAT_UNSPEC);
	if (hints->ep_attr) {
		XFI_REFUSE_IF(hints->ep_attr->type != FI_EP_UNSPEC &&
			      hints->ep_attr->type != FI_EP_RDM);
		XFI_REFUSE_IF(hints->ep_attr->max_msg_size > xfi_params.max_msg_size);
		XFI_REFUSE_IF(hints->ep_attr->tx_ctx_cnt > 1 || hints->ep_attr->rx_ctx_cnt > 1);
	}
	XFI_REFUSE_IF(hints->fabric_attr && hints->fabric_attr->name &&
		      strcmp(hints->fabric_attr->name, XFI_FABRIC_NAME));
	if (hints->domain_attr) {
		const struct fi_domain_attr *d = hints->domain_attr;

		XFI_REFUSE_IF(d->name && strncmp(d->name, XFI_NIC_NAME, strlen(XFI_NIC_NAME)));
		XFI_REFUSE_IF(d->control_progress == FI_PROGRESS_AUTO ||
			      d->data_progress == FI_PROGRESS_AUTO);
		XFI_REFUSE_IF(d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_MAP &&
			      d->av_type != FI_AV_TABLE);
		XFI_REFUSE_IF(d->cq_data_size > 8);
		/* no shared AVs (FI_SHARED_AV): an AV belongs to one process */
		XFI_REFUSE_IF(d->caps & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM));
		XFI_REFUSE_IF(d->mr_iov_limit > 1);
	}
	if (hints->tx_attr) {
		XFI_REFUSE_IF(hints->tx_attr->inject_size > XFI_INJECT_SIZE ||
			      hints->tx_attr->iov_limit > XFI_IOV_LIMIT);
		XFI_REFUSE_IF(hints->tx_attr->msg_order & ~(uint64_t)(FI_ORDER_SAS | XFI_ATOMIC_ORDER));
		XFI_REFUSE_IF(hints->tx_attr->caps & ~(uint64_t)XFI_CAPS);
	}
	if (hints->rx_attr) {
		XFI_REFUSE_IF(hints->rx_attr->iov_limit > XFI_IOV_LIMIT);
		XFI_REFUSE_IF(hints->rx_attr->msg_order & ~(uint64_t)(FI_ORDER_SAS | XFI_ATOMIC_ORDER));
		XFI_REFUSE_IF(hints->rx_attr->caps & ~(uint64_t)XFI_CAPS);
	}
	return 1;
}

/* Whether the caller's hints accept the memory registration mode RMA needs. */
static int xfi_hints_mr_mode_ok(const struct fi_info *hints)
{
	int m;

	if (!hints || !hints->domain_attr)
		return 1;
	m = hints->domain_attr->mr_mode;
	if (m == FI_MR_BASIC)
		return 1;	/* the old name of exactly this mode */
	return (m & XFI_RMA_MR_MODE) == XFI_RMA_MR_MODE;
}

static struct fi_info *xfi_make_info(const struct fi_info *hints)
{
	struct fi_info *fi;
	uint64_t caps = hints && hints->caps ? hints->caps : XFI_CAPS;

	/* RMA and atomics only for callers that handle provider keys and
	 * virtual addresses */
	if ((caps & (XFI_RMA_CAPS | FI_ATOMIC)) && !xfi_hints_mr_mode_ok(hints)) {
		if (hints && hints->caps) {
			xfi_refuse("RMA or atomics without FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | "
				   "FI_MR_ALLOCATED in mr_mode");
			return NULL;
		}
		caps &= ~(uint64_t)(XFI_RMA_CAPS | XFI_ATOMIC_CAPS);
	}
	fi = fi_allocinfo();
	if (!fi)
		return NULL;
	if ((caps & (FI_RMA | FI_ATOMIC)) &&
	    !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	/* FI_MSG/FI_TAGGED alone imply both directions */
	if (!(caps & (FI_SEND | FI_RECV)))
		caps |= FI_SEND | FI_RECV;
	caps |= caps & (FI_LOCAL_COMM | FI_REMOTE_COMM) ? 0 : FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;

	/* FI_LOCAL_COMM and FI_REMOTE_COMM are domain capabilities */
	fi->tx_attr->caps = caps & ~(uint64_t)(FI_RECV | FI_DIRECTED_RECV | FI_SOURCE |
					       FI_MULTI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE |
					       FI_LOCAL_COMM | FI_REMOTE_COMM);
	fi->tx_attr->op_flags = hints && hints->tx_attr ? hints->tx_attr->op_flags : 0;
	fi->tx_attr->msg_order = FI_ORDER_SAS | ((caps & FI_ATOMIC) ? XFI_ATOMIC_ORDER : 0);
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = XFI_INJECT_SIZE;
	fi->tx_attr->size = XFI_QUEUE_SIZE;
	fi->tx_attr->iov_limit = XFI_IOV_LIMIT;
	fi->tx_attr->rma_iov_limit = (caps & (FI_RMA | FI_ATOMIC)) ? 1 : 0;

	fi->rx_attr->caps = caps & ~(uint64_t)(FI_SEND | FI_READ | FI_WRITE |
					       FI_LOCAL_COMM | FI_REMOTE_COMM);
	fi->rx_attr->op_flags = hints && hints->rx_attr ? hints->rx_attr->op_flags : 0;
	fi->rx_attr->msg_order = FI_ORDER_SAS | ((caps & FI_ATOMIC) ? XFI_ATOMIC_ORDER : 0);
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = 0;
	fi->rx_attr->size = XFI_QUEUE_SIZE;
	fi->rx_attr->iov_limit = XFI_IOV_LIMIT;

	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = XFI_ADDR_VERSION;
	fi->ep_attr->max_msg_size = xfi_params.max_msg_size;
	fi->ep_attr->msg_prefix_size = 0;
	/* ordered: atomics (one packet each), not RMA (msg_order says which) */
	fi->ep_attr->max_order_raw_size = (caps & FI_ATOMIC) ? XFI_ATOMIC_DATA_MAX : 0;
	fi->ep_attr->max_order_war_size = (caps & FI_ATOMIC) ? XFI_ATOMIC_DATA_MAX : 0;
	fi->ep_attr->max_order_waw_size = (caps & FI_ATOMIC) ? XFI_ATOMIC_DATA_MAX : 0;
	fi->ep_attr->mem_tag_format = hints && hints->ep_attr && hints->ep_attr->mem_tag_format ?
		hints->ep_attr->mem_tag_format : XFI_TAG_FORMAT;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	fi->domain_attr->name = strdup(XFI_NIC_NAME "0");
	fi->domain_attr->threading = hints && hints->domain_attr &&
		hints->domain_attr->threading ? hints->domain_attr->threading : FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = hints && hints->domain_attr ? hints->domain_attr->av_type :
		FI_AV_UNSPEC;
	/* messages need no registration; RMA needs provider keys */
	fi->domain_attr->mr_mode = (caps & (FI_RMA | FI_ATOMIC)) ? XFI_RMA_MR_MODE : 0;
	/* a caller that asked in the old terms gets its answer in them */
	if (fi->domain_attr->mr_mode && hints && hints->domain_attr &&
	    hints->domain_attr->mr_mode == FI_MR_BASIC)
		fi->domain_attr->mr_mode = FI_MR_BASIC;
	fi->domain_attr->mr_key_size = 8;
	fi->domain_attr->cq_data_size = 8;
	fi->domain_attr->cq_cnt = 64;
	fi->domain_attr->cntr_cnt = 64;
	fi->domain_attr->ep_cnt = XFI_NIC_EP_CNT;
	fi->domain_attr->tx_ctx_cnt = XFI_NIC_TX_CTX_CNT;
	fi->domain_attr->rx_ctx_cnt = XFI_NIC_EP_CNT;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->max_ep_stx_ctx = 0;
	fi->domain_attr->max_ep_srx_ctx = 0;
	fi->domain_attr->mr_cnt = 1024;
	/* an RMA key covers one virtually contiguous range */
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->caps = caps & (FI_LOCAL_COMM | FI_REMOTE_COMM);

	fi->fabric_attr->name = strdup(XFI_FABRIC_NAME);
	/* prov_name is filled in by libfabric itself */
	fi->fabric_attr->prov_version = XFI_PROV_VERSION;

	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return NULL;
	}
	return fi;
}

/* The node id of the NI behind the device file (sysfs), or -1. */
static long xfi_local_node(void)
{
	char path[64];
	struct stat st;
	long node = -1;
	FILE *f;

	if (stat(xfi_device_path(), &st) || !S_ISCHR(st.st_mode))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/node_id", major(st.st_rdev),
		 minor(st.st_rdev));
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &node) != 1 || node < 0 || node >= XFI_NODE_LIMIT)
		node = -1;
	fclose(f);
	return node;
}

/*
 * A node string of fi_getinfo in fi_av_straddr's form,
 * "<provider>://node<N>[/mbox<M>]" (no mailbox: any, XFI_MBOX_ANY).
 */
static int xfi_parse_node(const char *str, struct xfi_addr *a)
{
	static const char prefix[] = XFI_NIC_NAME "://node";
	unsigned long node, mbox = XFI_MBOX_ANY;
	char *end;

	if (strncmp(str, prefix, sizeof(prefix) - 1))
		return -1;
	str += sizeof(prefix) - 1;
	if (*str < '0' || *str > '9')
		return -1;
	node = strtoul(str, &end, 10);
	if (!strncmp(end, "/mbox", 5) && end[5] >= '0' && end[5] <= '9')
		mbox = strtoul(end + 5, &end, 10);
	if (*end || node >= XFI_NODE_LIMIT || mbox > XFI_MBOX_ANY)
		return -1;
	*a = xfi_addr_make((uint32_t)node, (uint8_t)mbox);
	return xfi_addr_check(a, 1);
}

static int xfi_info_set_addr(void **where, size_t *len, const struct xfi_addr *a)
{
	*where = malloc(sizeof(*a));
	if (!*where)
		return -FI_ENOMEM;
	memcpy(*where, a, sizeof(*a));
	*len = sizeof(*a);
	return 0;
}

/*
 * fi_info's addresses: the source is this node's NI (its mailbox is chosen
 * when the endpoint opens: XFI_MBOX_ANY), the destination the node string
 * (without FI_SOURCE) or the hints' dest_addr.  0 or -FI_ENODATA.
 */
static int xfi_getinfo_addrs(const char *node, uint64_t flags, const struct fi_info *hints,
			     struct fi_info *fi)
{
	struct xfi_addr src = { 0 }, dst = { 0 }, named;
	long self = xfi_local_node();
	bool have_src = false, have_dst = false;
	char why[160];

	if (node && xfi_parse_node(node, &named)) {
		snprintf(why, sizeof(why), "node \"%.40s\" is not an address of this fabric "
			 "(%s://node<N>[/mbox<M>])", node, XFI_NIC_NAME);
		xfi_refuse(why);
		return -FI_ENODATA;
	}
	if (hints && hints->src_addr) {
		if (xfi_addr_from(hints->src_addr, hints->src_addrlen, 1, &src)) {
			xfi_refuse("hints->src_addr is not an address of this fabric");
			return -FI_ENODATA;
		}
		have_src = true;
	}
	if (node && (flags & FI_SOURCE)) {
		src = named;
		have_src = true;
	}
	if (have_src && self >= 0 && src.node != (uint32_t)self) {
		snprintf(why, sizeof(why), "source node %u is not this one (%ld)", src.node, self);
		xfi_refuse(why);
		return -FI_ENODATA;
	}
	if (!have_src && self >= 0) {
		src = xfi_addr_make((uint32_t)self, XFI_MBOX_ANY);
		have_src = true;
	}
	if (node && !(flags & FI_SOURCE)) {
		dst = named;
		have_dst = true;
	} else if (hints && hints->dest_addr) {
		if (xfi_addr_from(hints->dest_addr, hints->dest_addrlen, 1, &dst)) {
			xfi_refuse("hints->dest_addr is not an address of this fabric");
			return -FI_ENODATA;
		}
		have_dst = true;
	}
	if ((have_src && xfi_info_set_addr(&fi->src_addr, &fi->src_addrlen, &src)) ||
	    (have_dst && xfi_info_set_addr(&fi->dest_addr, &fi->dest_addrlen, &dst)))
		return -FI_ENODATA;
	return 0;
}

int xfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info)
{
	int ret;

	(void)service;	/* a mailbox is named in the node string, if at all */

	if (FI_MAJOR(version) != 1 || FI_MINOR(version) < 5) {
		FI_INFO(&xfi_prov, FI_LOG_CORE, "API version %u.%u: 1.5 or later needed\n",
			FI_MAJOR(version), FI_MINOR(version));
		return -FI_ENODATA;
	}
	/* no NI on this machine (or no access): no fabric to offer */
	if (access(xfi_device_path(), R_OK | W_OK)) {
		FI_INFO(&xfi_prov, FI_LOG_CORE, "%s: %s\n", xfi_device_path(), strerror(errno));
		return -FI_ENODATA;
	}
	if (!xfi_hints_ok(hints))
		return -FI_ENODATA;
	*info = xfi_make_info(hints);
	if (!*info)
		return -FI_ENODATA;
	ret = xfi_getinfo_addrs(node, flags, hints, *info);
	if (ret) {
		fi_freeinfo(*info);
		*info = NULL;
	}
	return ret;
}
