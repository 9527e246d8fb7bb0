/* SPDX-License-Identifier: MIT */
/*
 * Constants of the ExaNet backend (xfi_nic_exanet.c) for the provider's
 * engine: the provider "exanet" (libexanet-fi.so).  See xfi_nic.h.
 */
#ifndef XFI_NIC_EXANET_H
#define XFI_NIC_EXANET_H

#include <libexanet.h>

#define XFI_NIC_NAME		"exanet"	/* provider, fabric, domain prefix */
#define XFI_NIC_DEFAULT_DEVICE	EXANET_DEFAULT_DEVICE
#define XFI_NIC_DESCRIPTION	"ExaNet device"
#define XFI_NIC_CHANNELS	EXANET_PKT_CHANNELS	/* send channels per endpoint */
#define XFI_NIC_SEND_DONE_AT_ONCE 0	/* a channel is busy until the packet's ACK */
#define XFI_NIC_EP_CNT		EXANET_NUM_MBOX_IFACES
#define XFI_NIC_TX_CTX_CNT	EXANET_NUM_PKT_IFACES
#define XFI_NIC_MBOX_MIN	EXANET_MBOX_MIN_SLOTS
#define XFI_NIC_MBOX_MAX	EXANET_MBOX_MAX_SLOTS
#define XFI_NIC_HAS_MBOX_SLOTS	1	/* FI_EXANET_MBOX_SLOTS sizes the mailbox */
#define XFI_NIC_HAS_MR_CACHE	1	/* on-demand registrations are cached */
#define XFI_NIC_RDMA_MAX_LEN	EXANET_RDMA_MAX_LEN
#define XFI_NIC_HAS_ATOMIC	1	/* FI_ATOMIC in fi_info */

#endif
