/* SPDX-License-Identifier: MIT */
/*
 * exanet-ipd wire formats (Documentation/exanet/ipd.md, "Protocol"):
 *
 *   heartbeat  UDP datagram on the management network (discovery, liveness)
 *   fabric     <= 64-byte packetizer messages into the peer daemon's mailbox
 *              (handshake, credits, goodbye)
 *   ring       records in a peer's receive ring, written by RDMA writes
 *
 * Everything here is pure code (no device, no system call) so the host unit
 * test (selftests/host/test_ipd_proto.c) can feed it hostile input.
 * Multi-byte fields are little-endian on the wire (both ends are x86-64;
 * the helpers convert anyway).
 */
#ifndef IPD_PROTO_H
#define IPD_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* ---- heartbeats ---- */

#define IPD_HB_MAGIC		0x48495845u	/* "EXIH" */
#define IPD_HB_VERSION		1
#define IPD_HB_F_LEAVING	0x01		/* daemon is stopping */

struct ipd_hb {
	uint32_t node;		/* fabric node id */
	uint32_t mbox;		/* mailbox of the daemon on that node */
	uint64_t incarnation;	/* random, new at every start, never 0 */
	uint32_t ipv4;		/* address of its interface (network order), informative */
	uint32_t mtu;
	uint32_t seq;		/* heartbeat counter */
	uint32_t num_nodes;	/* fabric size it sees */
	uint8_t flags;		/* IPD_HB_F_* */
};
#define IPD_HB_WIRE_SIZE	44

void ipd_hb_encode(const struct ipd_hb *hb, uint8_t out[IPD_HB_WIRE_SIZE]);
/* 0, or -EBADMSG (size, magic, version, CRC, reserved bits, zero incarnation). */
int ipd_hb_decode(const void *buf, size_t len, struct ipd_hb *hb);

/* ---- fabric messages (packetizer -> mailbox) ---- */

enum ipd_msg_type {
	IPD_MSG_OFFER = 1,	/* here is my receive ring for you */
	IPD_MSG_ACCEPT = 2,	/* I will write into your ring */
	IPD_MSG_CREDIT = 3,	/* I consumed your records up to here */
	IPD_MSG_BYE = 4,	/* I am stopping */
	IPD_MSG_NEED_RING = 5,	/* I cannot write into your ring dst_cookie (0: I
				 * have none): offer me a fresh one */
	IPD_MSG_PROBE = 6,	/* are you there?  (the NI's ACK is the answer) */
};
#define IPD_MSG_LAST IPD_MSG_PROBE
#define IPD_MSG_VERSION		1

/*
 * The two directions between a pair of daemons are independent: A's receive
 * ring for B (cookie a, new for every ring) is written by B's sender state
 * for ring a, and vice versa.  'src_cookie' is the sender's current receive
 * ring for the receiver (0: none), 'dst_cookie' the receiver's ring the
 * message is about (OFFER: the one the sender writes into, informative).
 * Both incarnations are named; a message whose dst_incarnation is not the
 * receiver's own is stale and dropped.
 */
struct ipd_msg {
	uint8_t type;
	uint8_t ring_order;	/* OFFER: log2 of the ring size */
	uint8_t src_mbox;	/* mailbox of the sending daemon */
	uint32_t src_cookie;
	uint32_t dst_cookie;
	uint64_t src_incarnation;
	uint64_t dst_incarnation;
	union {
		struct {	/* OFFER */
			uint8_t ring[16];	/* exanet_raddr wire form of the region */
			uint32_t ipv4;		/* sender's interface address, network order */
			uint32_t mtu;		/* largest packet it accepts */
			uint64_t t_ns;		/* sender's clock, echoed by ACCEPT */
			uint32_t kmbox;		/* its kernel path mailbox (packets to it),
						 * IPD_NO_KMBOX: none */
		} offer;
		struct {	/* ACCEPT */
			uint64_t t_ns;		/* echo of the OFFER's */
			uint32_t ipv4;
			uint32_t mtu;
		} accept;
		struct {	/* CREDIT */
			uint64_t cons_pos;	/* ring bytes consumed (monotonic) */
			uint32_t cons_wseq;	/* batches consumed */
		} credit;
	} u;
};
#define IPD_MSG_MAX_SIZE	64
#define IPD_NO_KMBOX		0xffffffffu	/* = EXANET_IP_NO_MBOX */

/* Encode into out (64 bytes); returns the message length. */
size_t ipd_msg_encode(const struct ipd_msg *m, uint8_t out[IPD_MSG_MAX_SIZE]);
/* 0 or -EBADMSG (unknown type/version, wrong length, reserved bits). */
int ipd_msg_decode(const void *buf, size_t len, struct ipd_msg *m);

/* ---- receive ring ---- */

/*
 * A peer's receive region (registered by the receiver, written by the
 * sender's RDMA writes):
 *
 *   [0, 4096)          IPD_NSLOTS notification records (struct exanet_rdma_notif)
 *   [4096, 4096 + R)   the ring, R = 2^ring_order bytes
 *
 * The sender writes batches: a batch is a run of records in [s, s + len)
 * of the ring, one RDMA write, with its notification at slot wseq % NSLOTS
 * and tag = cookie << 32 | wseq.  Batches follow each other; a batch that
 * would not fit before the end of the ring starts at offset 0 instead (the
 * receiver sees that from its length).  Records are 16-byte aligned.
 */
#define IPD_NSLOTS		64
#define IPD_NOTIF_AREA		4096
#define IPD_REC_ALIGN		16
#define IPD_REC_HDR		16
#define IPD_REC_IP		0x4950	/* "IP" */
#define IPD_RING_ORDER_MIN	19	/* 512 KiB: see ipd.md, credits */
#define IPD_RING_ORDER_MAX	28	/* 256 MiB */
#define IPD_MTU_MIN		576
#define IPD_MTU_MAX		65535

struct ipd_rec_hdr {
	uint32_t len;		/* IP packet bytes */
	uint16_t type;		/* IPD_REC_IP */
	uint16_t flags;		/* IPD_REC_F_* */
	uint32_t seq;		/* record number on this connection, from 0 */
	uint16_t csum_start;	/* IPD_REC_F_CSUM: the transport checksum */
	uint16_t csum_offset;	/* still to be completed (else both 0) */
};
/* The sender's kernel left the transport checksum to the device (TUN
 * checksum offload): csum_start/csum_offset say where, as in a
 * virtio_net_hdr with VIRTIO_NET_HDR_F_NEEDS_CSUM.  The receiver hands
 * them to its kernel the same way; the fabric is CRC-protected. */
#define IPD_REC_F_CSUM		0x1

static inline uint32_t ipd_rec_size(uint32_t len)
{
	return IPD_REC_HDR + ((len + IPD_REC_ALIGN - 1) & ~(uint32_t)(IPD_REC_ALIGN - 1));
}

static inline uint64_t ipd_tag(uint32_t cookie, uint32_t wseq)
{
	return (uint64_t)cookie << 32 | wseq;
}

/*
 * Where a batch of 'len' bytes starts in a ring of 'ring_size' bytes when
 * the receiver has consumed up to 'cons': returns the skip (bytes to add to
 * cons before the batch, 0 if it starts at cons % ring_size), or -1 if len
 * is impossible (0, unaligned, larger than the ring).
 */
int64_t ipd_batch_skip(uint64_t cons, uint64_t len, uint64_t ring_size);

/*
 * Check one IP packet of len bytes: IPv4 (version, IHL >= 5, total length
 * == len, header within len) or IPv6 (payload length + 40 == len).
 * 0 or -EBADMSG.
 */
int ipd_ip_check(const uint8_t *pkt, size_t len);

/*
 * Walk the records of one batch: for each valid record call
 * deliver(arg, header, packet).  Stops at the first malformed record
 * (header fields, length beyond the batch or above mtu, sequence,
 * checksum position outside the packet, bad IP packet) and returns
 * -EBADMSG; returns the number of records otherwise.  *seq is the expected
 * next record sequence number and is advanced.
 */
int ipd_batch_parse(const uint8_t *batch, size_t len, uint32_t mtu, uint32_t *seq,
		    void (*deliver)(void *arg, const struct ipd_rec_hdr *h, const uint8_t *pkt),
		    void *arg);

/* Write the record header for a packet of len bytes (payload follows). */
void ipd_rec_put(uint8_t *at, uint32_t len, uint32_t seq);
/* Same with checksum offload information (h->seq included). */
void ipd_rec_put_hdr(uint8_t *at, const struct ipd_rec_hdr *h);
/* 0 if a record header is acceptable for a packet in a batch with
 * 'room' bytes left (header included) and the given MTU, else -EBADMSG. */
int ipd_rec_check(const struct ipd_rec_hdr *h, size_t room, uint32_t mtu);

/*
 * ICMP destination unreachable (type 3, code) from 'from' (network order)
 * about the IPv4 packet 'orig' (orig_len bytes): writes it into out
 * (>= 576 bytes) and returns its length, or 0 when no error may be sent
 * (not IPv4, an ICMP error itself, a fragment other than the first,
 * broadcast/multicast source).
 */
size_t ipd_icmp_unreach(uint8_t *out, size_t outlen, uint32_t from, const uint8_t *orig,
			size_t orig_len, uint8_t code);

uint16_t ipd_csum(const void *buf, size_t len);
uint32_t ipd_crc32(const void *buf, size_t len);

#endif
