/* SPDX-License-Identifier: MIT */
/*
 * Constants of the loopback NIC backend (xfi_nic_loop.c): the provider's
 * engine over process memory, for host tests of the libfabric calls
 * without a device (selftests/host/test_xfi_api.c).  Built twice
 * (selftests/build.mk), like the two real backends differ:
 *
 *   XFI_LOOP_AT_ONCE=0  provider "loopack": a send's outcome is known at
 *                       the first poll after it (ExaNet waits for an ACK)
 *   XFI_LOOP_AT_ONCE=1  provider "loopnow": known when the send returns
 *                       (EXTOLL VELO), which enables the engine's fast path
 */
#ifndef XFI_NIC_LOOP_H
#define XFI_NIC_LOOP_H

#ifndef XFI_LOOP_AT_ONCE
#error "XFI_LOOP_AT_ONCE: 0 or 1 (selftests/build.mk)"
#endif

#if XFI_LOOP_AT_ONCE
#define XFI_NIC_NAME		"loopnow"
#else
#define XFI_NIC_NAME		"loopack"
#endif
/* fi_getinfo only checks that the file is there: nothing is opened */
#define XFI_NIC_DEFAULT_DEVICE	"/dev/null"
#define XFI_NIC_DESCRIPTION	"loopback NIC in process memory (host tests)"
#define XFI_NIC_CHANNELS	4
#define XFI_NIC_SEND_DONE_AT_ONCE XFI_LOOP_AT_ONCE
#define XFI_NIC_EP_CNT		64
#define XFI_NIC_TX_CTX_CNT	64
#define XFI_NIC_HAS_MBOX_SLOTS	1
#define XFI_NIC_MBOX_MIN	4
#define XFI_NIC_MBOX_MAX	8192
#define XFI_NIC_HAS_MR_CACHE	1
#define XFI_NIC_RDMA_MAX_LEN	(1ull << 30)
#define XFI_NIC_HAS_ATOMIC	1

#endif
