// SPDX-License-Identifier: MIT
/*
 * The provider object and its tunables: the struct fi_provider that every
 * log line names (FI_WARN(&xfi_prov, ...)), the FI_<NIC>_* parameters, and
 * the "not supported" answers the object tables share.  It uses no other
 * file of the provider, so every file may use it: libfabric's entry point
 * (xfi_fabric.c) hands it its getinfo and fabric calls.
 */
#include <stdbool.h>
#include <stdint.h>

#include "xfi.h"

struct xfi_params xfi_params = {
	.rndv_threshold = 256,	/* measured: notes/measurements-2026.md */
	.mbox_slots = 4096,
	.max_msg_size = 64u << 20,
	.mr_cache_size = 256,
	.probe_ms = 1000,
	.fast_send = 1,
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

/* ---- provider ---- */

static void xfi_cleanup(void)
{
}

/* getinfo and fabric: set by fi_prov_ini (xfi_fabric.c) */
struct fi_provider xfi_prov = {
	.version = XFI_PROV_VERSION,
	.fi_version = XFI_API_VERSION,
	.name = XFI_PROV_NAME,
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

void xfi_params_read(void)
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
	fi_param_define(&xfi_prov, "fast_send", FI_PARAM_BOOL,
			"small eager sends go straight into a free send channel, without "
			"an operation object (default 1; 0: every send takes the general "
			"path, the baseline of make bench-mpi)");
	fi_param_get_str(&xfi_prov, "device", &xfi_params.device);
	fi_param_get_bool(&xfi_prov, "fast_send", &xfi_params.fast_send);
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

