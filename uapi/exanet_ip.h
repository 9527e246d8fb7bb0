/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * ExaNet NI driver: the kernel path of IP over the fabric.
 *
 * The IP service's daemon (tools/exanet-ipd) owns the TUN device and
 * moves bulk data with RDMA.  EXANET_IOC_IP_ATTACH hands that TUN device
 * to the driver, which from then on sends small IPv4 packets to the peers
 * the daemon lists (EXANET_IOC_IP_PEERS) through the packetizer, straight
 * from the sender's system call, and receives them from a mailbox of its
 * own in NAPI: no TUN queue, no daemon wake-up and no task switch on
 * either side.  Order per peer is kept across both paths
 * (Documentation/exanet/ipd.md, "The kernel path").
 *
 * Contents:
 *   1. Character device ioctls
 *   2. Wire format of a kernel path fragment (mailbox payload)
 */
#ifndef _UAPI_EXANET_IP_H
#define _UAPI_EXANET_IP_H

#include <linux/types.h>
#include <linux/ioctl.h>
#include "exanet.h"

/* ---------------------------------------------------------------- 1. */

/*
 * Attach: @ifindex is a TUN device (IFF_TUN) of the caller's network
 * namespace; the caller needs CAP_NET_ADMIN, a PDID of its own (the IP
 * service's: the kernel path's packetizer interfaces and mailbox carry
 * it) and an NI with interrupts.  One attachment per NI; it ends when the
 * file is closed or the TUN device goes away.  @max_len: largest IP packet
 * sent through the kernel path, 0 = EXANET_IP_DEFAULT_LEN, at most
 * EXANET_IP_MAX_LEN; out: the value in effect.  @mbox (out): the kernel
 * path's mailbox, which the peers need (the daemon tells them).
 */
struct exanet_ip_attach {
	__u32 ifindex;
	__u32 flags;		/* 0 */
	__u32 max_len;
	__u32 mbox;
};

/*
 * The peers, replacing the previous list: node, IPv4 address (network
 * byte order) and the kernel path mailbox of each (EXANET_IP_NO_MBOX: the
 * peer has no kernel path, everything to it goes through the daemon).
 * Nodes and addresses are unique, the own node is not in the list.
 */
struct exanet_ip_peer {
	__u32 node;
	__u32 addr;
	__u32 mbox;
	__u32 flags;		/* 0 */
};

struct exanet_ip_peers {
	__u32 count;		/* <= EXANET_IP_MAX_PEERS */
	__u32 flags;		/* 0 */
	__u64 peers;		/* user pointer to count struct exanet_ip_peer */
};

#define EXANET_IP_NO_MBOX		0xffffffffu
#define EXANET_IP_MAX_PEERS		4096

#define EXANET_IOC_IP_ATTACH		_IOWR(EXANET_IOC_MAGIC, 0x30, struct exanet_ip_attach)
#define EXANET_IOC_IP_PEERS		_IOW(EXANET_IOC_MAGIC, 0x31, struct exanet_ip_peers)

/* ---------------------------------------------------------------- 2. */

/*
 * An IP packet travels as 1..EXANET_IP_MAX_FRAGS mailbox messages of one
 * packetizer channel each, sent back to back to the peer's kernel path
 * mailbox.  Every message starts with struct exanet_ip_frag; the first
 * one continues with struct exanet_ip_first.  Little endian.
 *
 * @seq numbers the packets to one destination node (fragments of a
 * packet share it); @bulk is how many packets the sending node had handed
 * to its daemon for that node before this one: the receiver delivers the
 * packet only after as many packets from that node came in through the
 * daemon (or once the daemon's packets from that node stopped coming for
 * EXANET_IP_HOLD_MS: the missing ones are lost), so a small packet never overtakes
 * a large one of the same flow.  @epoch is drawn at every attachment: a
 * new one tells the receiver that the sender started afresh (sequence
 * numbers and counts from 0).  EXANET_IP_F_CSUM: the transport checksum
 * was left to the device (csum_start/csum_offset from the IP header, as
 * in a virtio_net_hdr); the fabric is CRC-protected, so the receiver
 * accepts the packet without it.  EXANET_IP_F_RESYNC: @bulk is right
 * and the receiver's count is not (the sender's TUN device dropped some of
 * the packets it counted, or the receiver was not its peer for a while:
 * down, restarted); nothing went to the daemon for that node for long
 * enough that all the others arrived.
 */
struct exanet_ip_frag {
	__u8  magic;		/* EXANET_IP_MAGIC */
	__u8  index;		/* 0 .. nfrags - 1 */
	__u8  nfrags;
	__u8  flags;		/* EXANET_IP_F_* (first fragment only) */
	__le32 seq;
};

struct exanet_ip_first {
	__le32 bulk;
	__le32 epoch;		/* the sending kernel path's, random, never 0 */
	__le16 len;		/* the IP packet's length */
	__le16 csum_start;
	__le16 csum_offset;
	__le16 reserved;	/* 0 */
};

#define EXANET_IP_MAGIC			0xe1
#define EXANET_IP_F_CSUM		0x01
#define EXANET_IP_F_RESYNC		0x02
#define EXANET_IP_HDR_LEN		((__u32)sizeof(struct exanet_ip_frag))
#define EXANET_IP_FIRST_HDR_LEN		(EXANET_IP_HDR_LEN + (__u32)sizeof(struct exanet_ip_first))
#define EXANET_IP_FIRST_DATA		(EXANET_MAX_PAYLOAD - EXANET_IP_FIRST_HDR_LEN)
#define EXANET_IP_NEXT_DATA		(EXANET_MAX_PAYLOAD - EXANET_IP_HDR_LEN)
#define EXANET_IP_MAX_FRAGS		16
#define EXANET_IP_MAX_LEN		(EXANET_IP_FIRST_DATA + (EXANET_IP_MAX_FRAGS - 1) * EXANET_IP_NEXT_DATA)
#define EXANET_IP_DEFAULT_LEN		256
#define EXANET_IP_HOLD_MS		50

/* Fragments an IP packet of @len bytes needs. */
#define EXANET_IP_NFRAGS(len)						\
	((len) <= EXANET_IP_FIRST_DATA ? 1u :				\
	 1u + ((len) - EXANET_IP_FIRST_DATA + EXANET_IP_NEXT_DATA - 1) / EXANET_IP_NEXT_DATA)

#endif /* _UAPI_EXANET_IP_H */
