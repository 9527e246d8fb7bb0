// SPDX-License-Identifier: MIT
/*
 * The provider's entry point (fi_prov_ini), the fabric and its event
 * queue.  The top of the provider: everything else is opened from here
 * (fi_getinfo: xfi_info.c, the domain: xfi_domain.c).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xfi.h"

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

static int xfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
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

static int xfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabricp,
			   void *context)
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

/*
 * Called by libfabric once it loaded the library.  The provider object
 * (xfi_prov.c) learns its calls here, so that it depends on no file that
 * logs through it.
 */
FI_EXT_INI
{
	xfi_prov.getinfo = xfi_getinfo;
	xfi_prov.fabric = xfi_fabric_open;
	xfi_params_read();
	return &xfi_prov;
}
