// SPDX-License-Identifier: MIT
/*
 * Address vectors.  An address is (fabric node, mailbox id) of the peer
 * endpoint (struct xfi_addr).  FI_AV_MAP: the fi_addr_t is the compact key
 * itself; FI_AV_TABLE: an index into a table of keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfi.h"

#define XFI_KEY_NONE UINT32_MAX

/* Silent: every caller says at warn what it refused (one line per refusal). */
int xfi_av_key(const struct xfi_av *av, fi_addr_t addr, uint32_t *key)
{
	if (!av || addr == FI_ADDR_NOTAVAIL)
		return -FI_EINVAL;
	if (av->type == FI_AV_MAP) {
		if (addr >= (fi_addr_t)XFI_NODE_LIMIT << 6)
			return -FI_EINVAL;
		*key = (uint32_t)addr;
		return 0;
	}
	if (addr >= av->count || av->keys[addr] == XFI_KEY_NONE)
		return -FI_EINVAL;
	*key = av->keys[addr];
	return 0;
}

fi_addr_t xfi_av_addr(const struct xfi_av *av, uint32_t key)
{
	size_t i;

	if (!av)
		return FI_ADDR_NOTAVAIL;
	if (av->type == FI_AV_MAP)
		return key;
	for (i = 0; i < av->count; i++)
		if (av->keys[i] == key)
			return i;
	return FI_ADDR_NOTAVAIL;
}

static int xfi_av_insert(struct fid_av *fid, const void *addr, size_t count,
			 fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct xfi_av *av = XFI_CONTAINER(fid, struct xfi_av, av_fid);
	const struct xfi_addr *in = addr;
	int *errs = (flags & FI_SYNC_ERR) ? context : NULL;
	size_t i;
	int done = 0;

	/* FI_MORE is a hint (more inserts follow): nothing to batch here */
	if (flags & ~(uint64_t)(FI_MORE | FI_SYNC_ERR))
		XFI_RETURN_ERR(FI_LOG_AV, -FI_EBADFLAGS,
			       "flags %#" PRIx64 ": only FI_MORE and FI_SYNC_ERR are supported\n",
			       flags);
	if ((count && !addr) || ((flags & FI_SYNC_ERR) && count && !context))
		XFI_RETURN_ERR(FI_LOG_AV, -FI_EINVAL,
			       "no addresses, or FI_SYNC_ERR without an error array\n");
	xfi_dom_lock(av->dom);
	if (av->type == FI_AV_TABLE && av->count + count > av->cap) {
		size_t cap = av->cap ? av->cap : 64;
		uint32_t *k;

		while (cap < av->count + count)
			cap *= 2;
		k = realloc(av->keys, cap * sizeof(*k));
		if (!k) {
			xfi_dom_unlock(av->dom);
			XFI_RETURN_ERR(FI_LOG_AV, -FI_ENOMEM, "no memory for %zu addresses\n", cap);
		}
		av->keys = k;
		av->cap = cap;
	}
	for (i = 0; i < count; i++) {
		struct xfi_addr a;
		fi_addr_t out = FI_ADDR_NOTAVAIL;

		memcpy(&a, &in[i], sizeof(a));
		if (xfi_addr_check(&a, 0) == 0) {
			uint32_t key = xfi_key(a.node, a.mbox);

			if (av->type == FI_AV_MAP) {
				out = key;
			} else {
				out = av->count;
				av->keys[av->count++] = key;
			}
			done++;
		} else if (av->type == FI_AV_TABLE) {
			/* keep indices aligned with the input */
			av->keys[av->count++] = XFI_KEY_NONE;
		}
		if (errs)
			errs[i] = out == FI_ADDR_NOTAVAIL ? FI_EINVAL : 0;
		if (fi_addr)
			fi_addr[i] = out;
	}
	av->gen++;
	xfi_dom_unlock(av->dom);
	return done;
}

static int xfi_av_insertsvc(struct fid_av *av, const char *node, const char *service,
			    fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	(void)av; (void)node; (void)service; (void)fi_addr; (void)flags; (void)context;
	XFI_RETURN_ERR(FI_LOG_AV, -FI_ENOSYS, "fi_av_insertsvc: not supported\n");
}

static int xfi_av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			    const char *service, size_t svccnt, fi_addr_t *fi_addr,
			    uint64_t flags, void *context)
{
	(void)av; (void)node; (void)nodecnt; (void)service; (void)svccnt; (void)fi_addr;
	(void)flags; (void)context;
	XFI_RETURN_ERR(FI_LOG_AV, -FI_ENOSYS, "fi_av_insertsym: not supported\n");
}

static int xfi_av_remove(struct fid_av *fid, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct xfi_av *av = XFI_CONTAINER(fid, struct xfi_av, av_fid);
	size_t i;
	int err = 0;

	if (flags)
		XFI_RETURN_ERR(FI_LOG_AV, -FI_EBADFLAGS,
			       "fi_av_remove: flags %#" PRIx64 " (none are defined)\n", flags);
	if (count && !fi_addr)
		XFI_RETURN_ERR(FI_LOG_AV, -FI_EINVAL, "fi_av_remove: no addresses\n");
	xfi_dom_lock(av->dom);
	for (i = 0; i < count; i++) {
		uint32_t key;

		if (xfi_av_key(av, fi_addr[i], &key)) {
			err = -FI_EINVAL;
			continue;
		}
		if (av->type == FI_AV_TABLE)
			av->keys[fi_addr[i]] = XFI_KEY_NONE;
	}
	av->gen++;
	xfi_dom_unlock(av->dom);
	if (err)
		XFI_RETURN_ERR(FI_LOG_AV, err, "fi_av_remove: %zu address(es), some not in the "
			       "address vector\n", count);
	return 0;
}

static int xfi_av_lookup(struct fid_av *fid, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct xfi_av *av = XFI_CONTAINER(fid, struct xfi_av, av_fid);
	struct xfi_addr a;
	uint32_t key;
	size_t n;
	int err;

	if (!addrlen)
		XFI_RETURN_ERR(FI_LOG_AV, -FI_EINVAL, "no addrlen\n");
	xfi_dom_lock(av->dom);
	err = xfi_av_key(av, fi_addr, &key);
	xfi_dom_unlock(av->dom);
	if (err)
		XFI_RETURN_ERR(FI_LOG_AV, err, "fi_av_lookup: no address %#" PRIx64 " in the %s\n",
			       fi_addr, av->type == FI_AV_MAP ? "FI_AV_MAP" : "FI_AV_TABLE");
	a = xfi_addr_make(xfi_key_node(key), (uint8_t)xfi_key_mbox(key));
	n = *addrlen < sizeof(a) ? *addrlen : sizeof(a);
	if (addr && n)
		memcpy(addr, &a, n);
	*addrlen = sizeof(a);
	return 0;
}

static const char *xfi_av_straddr(struct fid_av *fid, const void *addr, char *buf, size_t *len)
{
	struct xfi_addr a;
	int n;

	(void)fid;
	if (!addr || !buf || !len)
		return NULL;
	memcpy(&a, addr, sizeof(a));
	if (xfi_addr_check(&a, 1))
		n = snprintf(buf, *len, XFI_NIC_NAME "://invalid");
	else if (a.mbox == XFI_MBOX_ANY)	/* fi_getinfo's src_addr */
		n = snprintf(buf, *len, XFI_NIC_NAME "://node%u", a.node);
	else
		n = snprintf(buf, *len, XFI_NIC_NAME "://node%u/mbox%u", a.node, a.mbox);
	*len = n >= 0 ? (size_t)n + 1 : 0;
	return buf;
}

static int xfi_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
			 struct fid_av_set **av_set, void *context)
{
	(void)av; (void)attr; (void)av_set; (void)context;
	XFI_RETURN_ERR(FI_LOG_AV, -FI_ENOSYS, "fi_av_set: not supported\n");
}

static int xfi_av_close(struct fid *fid)
{
	struct xfi_av *av = XFI_CONTAINER(fid, struct xfi_av, av_fid.fid);

	if (xfi_domain_put(av->dom, &av->refs))
		XFI_RETURN_ERR(FI_LOG_AV, -FI_EBUSY, "endpoints still use the address vector\n");
	free(av->keys);
	free(av);
	return 0;
}

XFI_CLOSE_ONLY_OPS(xfi_av_fi_ops, xfi_av_close);

static struct fi_ops_av xfi_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = xfi_av_insert,
	.insertsvc = xfi_av_insertsvc,
	.insertsym = xfi_av_insertsym,
	.remove = xfi_av_remove,
	.lookup = xfi_av_lookup,
	.straddr = xfi_av_straddr,
	.av_set = xfi_no_av_set,
};

int xfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **avp,
		void *context)
{
	struct xfi_domain *dom = XFI_CONTAINER(domain, struct xfi_domain, domain_fid);
	struct xfi_av *av;

	if (!attr || !avp)
		XFI_RETURN_ERR(FI_LOG_AV, -FI_EINVAL, "no attributes or no result pointer\n");
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
		XFI_RETURN_ERR(FI_LOG_AV, -FI_EINVAL, "type %d\n", (int)attr->type);
	/* FI_EVENT (inserts reported on an EQ) and FI_READ (of a shared AV)
	 * are defined but not offered; FI_SYMMETRIC is a hint */
	if (attr->flags & ~(uint64_t)(FI_SYMMETRIC | FI_EVENT | FI_READ))
		XFI_RETURN_ERR(FI_LOG_AV, -FI_EBADFLAGS, "flags %#" PRIx64 ": unknown\n",
			       attr->flags);
	if (attr->flags & (FI_EVENT | FI_READ))
		XFI_RETURN_ERR(FI_LOG_AV, -FI_ENOSYS, "flags %#" PRIx64
			       ": FI_EVENT and FI_READ are not supported\n", attr->flags);
	if (attr->name)
		XFI_RETURN_ERR(FI_LOG_AV, -FI_ENOSYS, "shared address vector '%s': not supported\n",
			       attr->name);
	av = calloc(1, sizeof(*av));
	if (!av)
		XFI_RETURN_ERR(FI_LOG_AV, -FI_ENOMEM, "no memory\n");
	av->dom = dom;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
	attr->type = av->type;
	xfi_fid_init(&av->av_fid.fid, FI_CLASS_AV, context, &xfi_av_fi_ops);
	av->av_fid.ops = &xfi_av_ops;
	xfi_domain_get(dom);
	*avp = &av->av_fid;
	return 0;
}
