// SPDX-License-Identifier: MIT
/*
 * libpsm2.so.2 for the emulated nodes: "no Omni-Path here".
 *
 * Debian's libfabric1 links Intel's libpsm2, which is built for CPUs with
 * AVX.  Its constructor calibrates the TSC against gettimeofday(); when ten
 * measurements in a row look wrong (a busy TCG vCPU on a loaded host), it
 * falls back to parsing "cpu MHz" of /proc/cpuinfo with AVX instructions,
 * and the process dies of SIGILL on the emulated CPU (qemu64, no AVX):
 * every program that loads libfabric (fi_info, fi_pingpong, MPI ranks) can
 * die before main().  The node image carries this stub instead
 * (tools/cluster/mkinitramfs.sh): the symbols libfabric's psm2 provider
 * imports, every call failing, so the provider finds no device.
 */
#include <stddef.h>
#include <stdint.h>

#define PSM2_STUB_ERR 40	/* PSM2_INTERNAL_ERR: anything but PSM2_OK */

const char *psm2_error_get_string(int error)
{
	(void)error;
	return "no Omni-Path on this node (libpsm2 stub of the emulated cluster)";
}

uint64_t psm2_get_capability_mask(uint64_t req_cap_mask)
{
	(void)req_cap_mask;
	return 0;
}

void *psm2_epaddr_getctxt(void *epaddr)
{
	(void)epaddr;
	return NULL;
}

/* Everything else returns a psm2_error_t; callers pass arguments the stub
 * ignores (the x86-64 calling convention makes that harmless). */
#define STUB(name) int name(void); int name(void) { return PSM2_STUB_ERR; }
STUB(psm2_am_get_parameters)
STUB(psm2_am_get_source)
STUB(psm2_am_register_handlers_2)
STUB(psm2_am_reply_short)
STUB(psm2_am_request_short)
STUB(psm2_ep_close)
STUB(psm2_ep_connect)
STUB(psm2_ep_disconnect2)
STUB(psm2_ep_epid_lookup2)
STUB(psm2_ep_open)
STUB(psm2_ep_open_opts_get_defaults)
STUB(psm2_epaddr_setctxt)
STUB(psm2_epaddr_to_epid)
STUB(psm2_error_register_handler)
STUB(psm2_finalize)
STUB(psm2_info_query)
STUB(psm2_init)
STUB(psm2_mq_cancel)
STUB(psm2_mq_improbe2)
STUB(psm2_mq_imrecv)
STUB(psm2_mq_init)
STUB(psm2_mq_ipeek)
STUB(psm2_mq_iprobe2)
STUB(psm2_mq_irecv2)
STUB(psm2_mq_isend2)
STUB(psm2_mq_send2)
STUB(psm2_mq_test2)
STUB(psm2_mq_wait2)
STUB(psm2_poll)
