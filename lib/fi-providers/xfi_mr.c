// SPDX-License-Identifier: MIT
/*
 * Memory registration (fi_mr_reg, fi_mr_regv, fi_mr_regattr) and the
 * lookup of a registration by key and range that atomics need at the
 * target (xfi_mr_find).  Messages are copied through the packetizer, so
 * for them a registration only needs to exist (FI_MR_LOCAL users pass its
 * descriptor along); memory for RMA is pinned and mapped for the NI.
 */
#include <stdlib.h>
#include <string.h>

#include "xfi.h"

/* What fi_mr_reg's access may name (fi_mr(3)) */
#define XFI_MR_ACCESS	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | \
			 FI_REMOTE_WRITE)

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

	/* FI_RMA_EVENT, FI_RMA_PMEM, FI_HMEM_*: of capabilities not offered */
	if (flags)
		XFI_RETURN_ERR(FI_LOG_MR, -FI_EBADFLAGS, "flags %#" PRIx64 ": none supported\n",
			       flags);
	if (!attr || !mrp || !attr->mr_iov)
		XFI_RETURN_ERR(FI_LOG_MR, -FI_EINVAL, "no attributes, result pointer or iov\n");
	if (attr->iov_count != 1)
		XFI_RETURN_ERR(FI_LOG_MR, -FI_EINVAL, "%zu segments: one (mr_iov_limit)\n",
			       attr->iov_count);
	if (attr->access & ~(uint64_t)XFI_MR_ACCESS)
		XFI_RETURN_ERR(FI_LOG_MR, -FI_EINVAL, "access %#" PRIx64 ": unknown bits\n",
			       attr->access);
	if (attr->iface != FI_HMEM_SYSTEM)
		XFI_RETURN_ERR(FI_LOG_MR, -FI_ENOSYS, "memory interface %d: host memory only "
			       "(no FI_HMEM)\n", (int)attr->iface);
	if (attr->auth_key_size)
		XFI_RETURN_ERR(FI_LOG_MR, -FI_EINVAL, "authorization keys: not supported\n");
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		XFI_RETURN_ERR(FI_LOG_MR, -FI_ENOMEM, "no memory\n");
	mr->dom = dom;
	mr->access = attr->access;
	if (attr->access & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)) {
		/* memory for RMA: pinned and mapped for the NI, one range */
		int err = -FI_EINVAL;

		if (attr->mr_iov[0].iov_len)
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

struct fi_ops_mr xfi_mr_ops = {
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
