/* SPDX-License-Identifier: MIT */
/*
 * Constants of the EXTOLL backend (xfi_nic_extoll.c) for the provider's
 * engine: the provider "extoll" (libextoll-fi.so).  See xfi_nic.h.
 */
#ifndef XFI_NIC_EXTOLL_H
#define XFI_NIC_EXTOLL_H

#define XFI_NIC_NAME		"extoll"	/* provider, fabric, domain prefix */
/* probed by fi_getinfo; libvelo2 and librma2 open their devices themselves */
#define XFI_NIC_DEFAULT_DEVICE	"/dev/extoll/rma2"
#define XFI_NIC_DESCRIPTION	"EXTOLL RMA device probed by fi_getinfo"
#define XFI_NIC_CHANNELS	4	/* VELO sends complete at once: few needed */
/* a send's outcome is final when xfi_nic_send() returns (no ACK to wait
 * for): an inject that fits one packet goes out without an operation */
#define XFI_NIC_SEND_DONE_AT_ONCE 1
#define XFI_NIC_EP_CNT		64	/* VELO VPIDs the engine can address (6 bits) */
#define XFI_NIC_TX_CTX_CNT	64
/* the VELO ring has the driver's size: no mbox_slots parameter */
#define XFI_NIC_HAS_MBOX_SLOTS	0
#define XFI_NIC_MBOX_MIN	4
#define XFI_NIC_MBOX_MAX	8192
/* ATU registrations pin their pages, so the engine's MR cache (which keeps
 * on-demand registrations only) never holds one: no mr_cache_size parameter */
#define XFI_NIC_HAS_MR_CACHE	0
#define XFI_NIC_RDMA_MAX_LEN	(1ull << 30)	/* posted as puts/gets of <= 8 MiB */
/* FI_ATOMIC in fi_info: done by the target's provider like ExaNet's; the
 * target finds the registration by key and address (xfi_mr_find), since an
 * EXTOLL key (RMA VPID, NLA offset) alone can name two of a domain's */
#define XFI_NIC_HAS_ATOMIC	1

#endif
