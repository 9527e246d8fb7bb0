// SPDX-License-Identifier: MIT
/*
 * exanet libfabric provider: entry point, fi_getinfo, fabric, event queue,
 * domain and memory registration.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "xfi.h"
#include "fi_exanet.h"

struct xfi_params xfi_params = {
	.rndv_threshold = 256,	/* measured: Documentation/measurements.md */
	.mbox_slots = 4096,
	.max_msg_size = 64u << 20,
	.mr_cache_size = 256,
	.probe_ms = 1000,
};

/* ---- stubs ---- */

int xfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)bfid; (void)flags;
	XFI_RETURN_ERR(FI_LOG_CORE, -FI_ENOSYS, "fi_bind to class %zu: not supported\n",
		       fid->fclass);
}

int xfi_no_control(struct fid *fid, int command, void *arg)
{
	(void)arg;
	XFI_RETURN_ERR(FI_LOG_CORE, -FI_ENOSYS, "fi_control %d on class %zu: not supported\n",
		       command, fid->fclass);
}

int xfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		    void *context)
{
	(void)flags; (void)ops; (void)context;
	XFI_RETURN_ERR(FI_LOG_CORE, -FI_ENOSYS, "fi_open_ops '%s' on class %zu: not supported\n",
		       name ? name : "(null)", fid->fclass);
}

int xfi_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	(void)buf; (void)len;
	XFI_RETURN_ERR(FI_LOG_CORE, -FI_ENOSYS, "fi_tostr of class %zu: not supported\n",
		       fid->fclass);
}

int xfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
		   void *context)
{
	(void)flags; (void)ops; (void)context;
	XFI_RETURN_ERR(FI_LOG_CORE, -FI_ENOSYS, "fi_set_ops '%s' on class %zu: not supported\n",
		       name ? name : "(null)", fid->fclass);
}

/* ---- fi_getinfo ---- */

static const char *xfi_device_path(void)
{
	return xfi_params.device && *xfi_params.device ? xfi_params.device :
		XFI_NIC_DEFAULT_DEVICE;
}

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

/* ---- event queue (nothing is ever reported on it: RDM needs no CM) ---- */

static int xfi_eq_close(struct fid *fid)
{
	free(XFI_CONTAINER(fid, struct xfi_eq, eq_fid.fid));
	return 0;
}

static ssize_t xfi_eq_read(struct fid_eq *eq, uint32_t *event, void *buf, size_t len,
			   uint64_t flags)
{
	(void)eq; (void)event; (void)buf; (void)len; (void)flags;
	return -FI_EAGAIN;
}

static ssize_t xfi_eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	(void)eq; (void)buf; (void)flags;
	return -FI_EAGAIN;
}

static ssize_t xfi_eq_write(struct fid_eq *eq, uint32_t event, const void *buf, size_t len,
			    uint64_t flags)
{
	(void)eq; (void)event; (void)buf; (void)len; (void)flags;
	XFI_RETURN_ERR(FI_LOG_EQ, -FI_ENOSYS, "fi_eq_write: not supported\n");
}

static ssize_t xfi_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf, size_t len,
			    int timeout, uint64_t flags)
{
	(void)eq; (void)event; (void)buf; (void)len; (void)flags;
	if (timeout > 0) {
		struct timespec ts = { timeout / 1000, (long)(timeout % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
	return -FI_EAGAIN;
}

static const char *xfi_eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data,
				   char *buf, size_t len)
{
	(void)eq; (void)err_data;
	if (buf && len) {
		strncpy(buf, fi_strerror(prov_errno), len - 1);
		buf[len - 1] = 0;
	}
	return fi_strerror(prov_errno);
}

XFI_CLOSE_ONLY_OPS(xfi_eq_fi_ops, xfi_eq_close);

static struct fi_ops_eq xfi_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = xfi_eq_read,
	.readerr = xfi_eq_readerr,
	.write = xfi_eq_write,
	.sread = xfi_eq_sread,
	.strerror = xfi_eq_strerror,
};

int xfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		void *context)
{
	struct xfi_eq *q;

	(void)fabric;
	if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		XFI_RETURN_ERR(FI_LOG_EQ, -FI_ENOSYS, "wait object %d: not supported (none)\n",
			       (int)attr->wait_obj);
	q = calloc(1, sizeof(*q));
	if (!q)
		XFI_RETURN_ERR(FI_LOG_EQ, -FI_ENOMEM, "no memory\n");
	xfi_fid_init(&q->eq_fid.fid, FI_CLASS_EQ, context, &xfi_eq_fi_ops);
	q->eq_fid.ops = &xfi_eq_ops;
	*eq = &q->eq_fid;
	return 0;
}

/* ---- memory registration ----
 * Messages are copied through the packetizer, so a registration only
 * needs to exist (FI_MR_LOCAL users pass its descriptor along). */

static int xfi_mr_close(struct fid *fid)
{
	struct xfi_mr *mr = XFI_CONTAINER(fid, struct xfi_mr, mr_fid.fid);
	struct xfi_mr **pp;

	xfi_dom_lock(mr->dom);
	for (pp = &mr->dom->mrs; *pp; pp = &(*pp)->dom_next) {
		if (*pp == mr) {
			*pp = mr->dom_next;	/* no atomic finds it any more */
			break;
		}
	}
	xfi_dom_unlock(mr->dom);
	if (mr->xmr)
		xfi_nic_dereg_mr(mr->xmr);
	xfi_domain_put(mr->dom, NULL);
	free(mr);
	return 0;
}

XFI_CLOSE_ONLY_OPS(xfi_mr_fi_ops, xfi_mr_close);

static int xfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
			  struct fid_mr **mrp)
{
	struct xfi_domain *dom = XFI_CONTAINER(fid, struct xfi_domain, domain_fid.fid);
	struct xfi_mr *mr;

	(void)flags;
	if (!attr || !mrp || (attr->iov_count && !attr->mr_iov))
		XFI_RETURN_ERR(FI_LOG_MR, -FI_EINVAL, "no attributes, result pointer or iov\n");
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		XFI_RETURN_ERR(FI_LOG_MR, -FI_ENOMEM, "no memory\n");
	mr->dom = dom;
	mr->access = attr->access;
	if (attr->access & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)) {
		/* memory for RMA: pinned and mapped for the NI, one range */
		int err = -FI_EINVAL;

		if (attr->iov_count == 1 && attr->mr_iov[0].iov_len)
			err = xfi_nic_reg_mr(dom->dev, attr->mr_iov[0].iov_base,
					     attr->mr_iov[0].iov_len, 0, &mr->xmr);
		if (err) {
			FI_WARN(&xfi_prov, FI_LOG_MR, "registration of %zu segment(s) (%zu bytes) "
				"refused: %s\n", attr->iov_count,
				attr->iov_count ? attr->mr_iov[0].iov_len : 0, strerror(-err));
			free(mr);
			return err;
		}
	}
	xfi_fid_init(&mr->mr_fid.fid, FI_CLASS_MR, attr->context, &xfi_mr_fi_ops);
	mr->mr_fid.mem_desc = mr;
	xfi_dom_lock(dom);
	if (mr->xmr) {
		mr->mr_fid.key = mr->xmr->key;
		mr->dom_next = dom->mrs;
		dom->mrs = mr;
	} else
		mr->mr_fid.key = attr->requested_key ? attr->requested_key : ++dom->next_mr_key;
	dom->refs++;
	xfi_dom_unlock(dom);
	*mrp = &mr->mr_fid;
	return 0;
}

static int xfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		       uint64_t access, uint64_t offset, uint64_t requested_key,
		       uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov, .iov_count = count, .access = access, .offset = offset,
		.requested_key = requested_key, .context = context,
	};

	return xfi_mr_regattr(fid, &attr, flags, mr);
}

static int xfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		      uint64_t offset, uint64_t requested_key, uint64_t flags,
		      struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return xfi_mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

static struct fi_ops_mr xfi_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = xfi_mr_reg,
	.regv = xfi_mr_regv,
	.regattr = xfi_mr_regattr,
};

/*
 * Keys alone need not be unique in a domain: an EXTOLL key is the domain's
 * RMA VPID and the registration's NLA minus its virtual address, and two
 * registrations whose NLAs lie as far apart as their addresses (adjacent
 * buffers registered one after the other) get the same one.  The key and
 * an address inside the registration name at most one: key + address is
 * the NLA the NIC would use, and the ATU gives every registration of a
 * port NLAs of its own.  ExaNet keys carry a handle unique per
 * registration, so the address only adds the range check.
 */
struct xfi_mr *xfi_mr_find(struct xfi_domain *dom, uint64_t key, uint64_t addr, size_t len)
{
	struct xfi_mr *mr;

	for (mr = dom->mrs; mr; mr = mr->dom_next) {
		uintptr_t start = (uintptr_t)mr->xmr->addr;

		if (mr->mr_fid.key == key && addr >= start && addr - start <= mr->xmr->len &&
		    len <= mr->xmr->len - (addr - start))
			return mr;
	}
	return NULL;
}

/* ---- domain ---- */

void xfi_domain_get(struct xfi_domain *dom)
{
	xfi_dom_lock(dom);
	dom->refs++;
	xfi_dom_unlock(dom);
}

int xfi_domain_put(struct xfi_domain *dom, const int *users)
{
	xfi_dom_lock(dom);
	if (users && *users) {
		xfi_dom_unlock(dom);
		return -FI_EBUSY;
	}
	dom->refs--;
	xfi_dom_unlock(dom);
	return 0;
}

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

/* ---- fabric ---- */

static int xfi_fabric_close(struct fid *fid)
{
	free(XFI_CONTAINER(fid, struct xfi_fabric, fabric_fid.fid));
	return 0;
}

XFI_CLOSE_ONLY_OPS(xfi_fabric_fi_ops, xfi_fabric_close);

static int xfi_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			     struct fid_pep **pep, void *context)
{
	(void)fabric; (void)info; (void)pep; (void)context;
	XFI_RETURN_ERR(FI_LOG_FABRIC, -FI_ENOSYS, "fi_passive_ep: not supported (RDM)\n");
}

static int xfi_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			    struct fid_wait **waitset)
{
	(void)fabric; (void)attr; (void)waitset;
	XFI_RETURN_ERR(FI_LOG_FABRIC, -FI_ENOSYS, "fi_wait_open: not supported (no wait objects)\n");
}

static int xfi_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	(void)fabric; (void)fids; (void)count;
	return -FI_EAGAIN;	/* manual progress: keep polling */
}

static int xfi_domain2(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **dom, uint64_t flags, void *context)
{
	if (flags)
		XFI_RETURN_ERR(FI_LOG_FABRIC, -FI_EBADFLAGS, "flags %#" PRIx64 "\n", flags);
	return xfi_domain_open(fabric, info, dom, context);
}

static struct fi_ops_fabric xfi_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = xfi_domain_open,
	.passive_ep = xfi_no_passive_ep,
	.eq_open = xfi_eq_open,
	.wait_open = xfi_no_wait_open,
	.trywait = xfi_trywait,
	.domain2 = xfi_domain2,
};

int xfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabricp, void *context)
{
	struct xfi_fabric *fab;

	if (attr && attr->name && strcmp(attr->name, XFI_FABRIC_NAME))
		XFI_RETURN_ERR(FI_LOG_FABRIC, -FI_ENODATA, "fabric '%s' is not " XFI_FABRIC_NAME
			       "\n", attr->name);
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		XFI_RETURN_ERR(FI_LOG_FABRIC, -FI_ENOMEM, "no memory\n");
	xfi_fid_init(&fab->fabric_fid.fid, FI_CLASS_FABRIC, context, &xfi_fabric_fi_ops);
	fab->fabric_fid.ops = &xfi_fabric_ops;
	*fabricp = &fab->fabric_fid;
	return 0;
}

/* ---- provider ---- */

static void xfi_cleanup(void)
{
}

struct fi_provider xfi_prov = {
	.version = XFI_PROV_VERSION,
	.fi_version = XFI_API_VERSION,
	.name = XFI_PROV_NAME,
	.getinfo = xfi_getinfo,
	.fabric = xfi_fabric_open,
	.cleanup = xfi_cleanup,
};

/*
 * A parameter set to a value out of its range keeps its default, with a
 * warning that names the range (fi_info -e lists the parameters).
 */
static void xfi_param_size(const char *name, size_t min, size_t max, bool pow2, size_t *dst)
{
	size_t v;

	if (fi_param_get_size_t(&xfi_prov, name, &v))
		return;
	if (v < min || v > max || (pow2 && (v & (v - 1)))) {
		FI_WARN(&xfi_prov, FI_LOG_CORE,
			"parameter %s=%zu ignored: allowed %zu..%zu%s; using %zu\n", name, v,
			min, max, pow2 ? ", a power of two" : "", *dst);
		return;
	}
	*dst = v;
}

static void xfi_read_params(void)
{
	fi_param_define(&xfi_prov, "device", FI_PARAM_STRING,
			XFI_NIC_DESCRIPTION " (default " XFI_NIC_DEFAULT_DEVICE ")");
#if XFI_NIC_HAS_MBOX_SLOTS
	fi_param_define(&xfi_prov, "mbox_slots", FI_PARAM_SIZE_T,
			"receive mailbox slots per endpoint, power of two (default 4096)");
#endif
	fi_param_define(&xfi_prov, "max_msg_size", FI_PARAM_SIZE_T,
			"largest message in bytes (default 64 MiB)");
	fi_param_define(&xfi_prov, "rndv_threshold", FI_PARAM_SIZE_T,
			"messages longer than this go by rendezvous (RDMA read), shorter "
			"ones eagerly through the packetizer (default 256)");
#if XFI_NIC_HAS_MR_CACHE
	fi_param_define(&xfi_prov, "mr_cache_size", FI_PARAM_SIZE_T,
			"rendezvous buffers kept registered (on-demand registrations, "
			"LRU); 0 registers and deregisters every message (default 256)");
#endif
	fi_param_define(&xfi_prov, "probe_ms", FI_PARAM_SIZE_T,
			"a rendezvous send waiting this long for the receiver probes "
			"whether it is still there (default 1000, minimum 10)");
	fi_param_get_str(&xfi_prov, "device", &xfi_params.device);
#if XFI_NIC_HAS_MR_CACHE
	xfi_param_size("mr_cache_size", 0, 65536, false, &xfi_params.mr_cache_size);
#endif
	xfi_param_size("probe_ms", 10, 3600000, false, &xfi_params.probe_ms);
	xfi_param_size("rndv_threshold", 0, SIZE_MAX, false, &xfi_params.rndv_threshold);
#if XFI_NIC_HAS_MBOX_SLOTS
	xfi_param_size("mbox_slots", XFI_NIC_MBOX_MIN, XFI_NIC_MBOX_MAX, true,
		       &xfi_params.mbox_slots);
#endif
	xfi_param_size("max_msg_size", 1, UINT32_MAX, false, &xfi_params.max_msg_size);
}

FI_EXT_INI
{
	xfi_read_params();
	return &xfi_prov;
}
