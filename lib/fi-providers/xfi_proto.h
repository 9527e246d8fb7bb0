/* SPDX-License-Identifier: MIT */
/*
 * Wire format of the exanet libfabric provider: every packet is one ExaNet
 * packetizer message (<= EXANET_MAX_PAYLOAD bytes) into the peer
 * endpoint's mailbox.  Little-endian host layout (both ends are x86-64).
 *
 * A message that fits in one packet is a SHORT packet (header, tag,
 * optional CQ data, payload; the length is what the packet has left).  A
 * longer one, or a rendezvous, is a START packet (header, tag, length,
 * optional CQ data, the first payload bytes) followed by as many CONT
 * packets as the length needs.  Packets of one sender endpoint to one
 * receiver endpoint carry a sequence number; the receiver puts them back in
 * order (the NI may reorder packets of different channels) before
 * reassembling.
 *
 * Pure functions only: host-testable without a device.
 */
#ifndef XFI_PROTO_H
#define XFI_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define XFI_PKT_MAX		64	/* EXANET_MAX_PAYLOAD */
#define XFI_MBOX_LIMIT		64	/* mailbox ids are 6 bits */
#define XFI_MBOX_ANY		0xff	/* fi_getinfo's src_addr: the endpoint picks one */
#define XFI_NODE_LIMIT		(1u << 22)

enum xfi_pkt_type {
	XFI_PKT_START = 1,
	XFI_PKT_CONT = 2,
	/*
	 * Out of sequence (not reordered, no sequence number consumed): the
	 * end of a rendezvous (named by its cookie), a liveness probe of a
	 * stream, and the answer of an endpoint that does not know the stream
	 * (a new incarnation on the same mailbox).
	 */
	XFI_PKT_FIN = 3,	/* rendezvous: the receiver is done reading */
	XFI_PKT_PING = 4,	/* header only; hdr.epoch = the stream's epoch */
	XFI_PKT_RESET = 5,	/* struct xfi_reset: "I do not know your stream" */
	XFI_PKT_SHORT = 6,	/* a whole eager message: struct xfi_short */
	/*
	 * In sequence: an FI_ATOMIC request (struct xfi_atomic_req, then the
	 * operands, then the compare values) and its answer, which the target
	 * always sends (struct xfi_atomic_resp, then the fetched values).
	 */
	XFI_PKT_ATOMIC = 7,
	XFI_PKT_ATOMIC_RESP = 8,
	XFI_PKT_TYPE_END	/* first unknown type */
};

/* The type byte: the packet type in the low 4 bits; a SHORT packet carries
 * its XFI_SHORT_FLAGS in bits 4-7 (it has no flags word: the 8 bytes saved
 * are one MMIO store less per message). */
#define XFI_PKT_TYPE_MASK	0x0f
#define XFI_SHORT_FLAG_SHIFT	4

#define XFI_START_TAGGED	0x1	/* FI_TAGGED message, else FI_MSG */
#define XFI_START_DATA		0x2	/* carries remote CQ data */
#define XFI_START_RNDV		0x4	/* payload is a struct xfi_rndv, not data */
/* FI_DELIVERY_COMPLETE: once the receiving provider has the whole message
 * (in the posted buffer or queued as unexpected) it sends a FIN whose
 * cookie is XFI_DC_COOKIE(seq of the message's first packet) */
#define XFI_START_DC		0x8
/* fi_writedata's notification: no message, the remote CQ data of an RMA
 * write that completed before this packet was sent (a START of length 0
 * with XFI_START_DATA; the receiver reports FI_REMOTE_WRITE) */
#define XFI_START_RMA_DATA	0x10
#define XFI_START_FLAGS		(XFI_START_TAGGED | XFI_START_DATA | XFI_START_RNDV | XFI_START_DC | \
				 XFI_START_RMA_DATA)
/* Flags a SHORT packet carries in its type byte. */
#define XFI_SHORT_FLAGS		(XFI_START_TAGGED | XFI_START_DATA | XFI_START_DC)
/* Rendezvous cookies count up from 1 and never reach bit 63. */
#define XFI_DC_COOKIE(seq)	((1ull << 63) | (uint32_t)(seq))

struct xfi_hdr {
	uint8_t type;
	uint8_t src_mbox;	/* sender endpoint's mailbox (its address) */
	uint16_t epoch;		/* sender endpoint incarnation */
	uint32_t seq;		/* per (sender, receiver) endpoint pair */
};

struct xfi_start {
	struct xfi_hdr hdr;
	uint64_t tag;
	uint32_t len;		/* whole message */
	uint32_t flags;		/* XFI_START_* */
	/* uint64_t data if XFI_START_DATA, then payload */
};

/* SHORT: uint64_t data if XFI_START_DATA, then the payload (0..48 bytes). */
struct xfi_short {
	struct xfi_hdr hdr;
	uint64_t tag;		/* 0 for an FI_MSG message */
};

/* Rendezvous (RTS): where the receiver RDMA-reads the message from. */
struct xfi_rndv {
	uint32_t node;
	uint32_t rank;
	uint64_t va;
	uint64_t cookie;	/* names the send operation in the FIN */
};

struct xfi_fin {
	struct xfi_hdr hdr;
	uint64_t cookie;
	int32_t status;		/* 0 or a positive FI_E* code */
	uint32_t reserved;
};

/* Answer to a PING of an unknown stream: the sender's stream (the epoch
 * it probed) is gone at the receiver; hdr.epoch/seq are the replier's. */
struct xfi_reset {
	struct xfi_hdr hdr;
	uint16_t stream_epoch;	/* the epoch of the PING */
	uint16_t reserved[3];
};

#define XFI_HDR_SIZE		sizeof(struct xfi_hdr)			/* 8 */
#define XFI_START_SIZE		sizeof(struct xfi_start)		/* 24 */
#define XFI_CONT_PAYLOAD	(XFI_PKT_MAX - XFI_HDR_SIZE)		/* 56 */
/* Largest message that fits in one START packet with CQ data: inject size. */
#define XFI_INJECT_SIZE		(XFI_PKT_MAX - XFI_START_SIZE - 8)	/* 32 */

#define XFI_SHORT_SIZE		sizeof(struct xfi_short)		/* 16 */

/* Payload capacity of the START packet. */
static inline size_t xfi_start_capacity(uint32_t flags)
{
	return XFI_PKT_MAX - XFI_START_SIZE - ((flags & XFI_START_DATA) ? 8 : 0);
}

/* Largest eager message a SHORT packet carries (48 bytes, 40 with data). */
static inline size_t xfi_short_capacity(uint32_t flags)
{
	return XFI_PKT_MAX - XFI_SHORT_SIZE - ((flags & XFI_START_DATA) ? 8 : 0);
}

/* Number of packets an eager message of len bytes takes: one SHORT, or a
 * START and CONTs. */
static inline uint64_t xfi_msg_packets(uint64_t len, uint32_t flags)
{
	size_t first = xfi_start_capacity(flags);

	if (len <= xfi_short_capacity(flags))
		return 1;
	return 1 + (len - first + XFI_CONT_PAYLOAD - 1) / XFI_CONT_PAYLOAD;
}

/* A parsed START packet. */
struct xfi_start_info {
	uint64_t tag;
	uint64_t data;
	uint32_t len;
	uint32_t flags;
	const uint8_t *payload;
	size_t payload_len;
	struct xfi_rndv rndv;	/* XFI_START_RNDV */
};

/*
 * Validate a received packet of pkt_len bytes (hostile input).  Returns its
 * type (XFI_PKT_*) with *hdr filled, or -1 for anything malformed: too
 * short, unknown type, mailbox id out of range.
 */
int xfi_parse_hdr(const uint8_t *pkt, size_t pkt_len, struct xfi_hdr *hdr);

/*
 * Parse a START packet: unknown flag bits, a message longer than max_len,
 * or a payload that is not exactly what the length implies (a struct
 * xfi_rndv for XFI_START_RNDV) -> -1.
 */
int xfi_parse_start(const uint8_t *pkt, size_t pkt_len, uint64_t max_len,
		    struct xfi_start_info *out);

/*
 * Parse a SHORT packet into the START form (len = payload_len, rndv unset):
 * not a SHORT type byte, unknown flag bits, or a payload longer than
 * max_len -> -1.
 */
int xfi_parse_short(const uint8_t *pkt, size_t pkt_len, uint64_t max_len,
		    struct xfi_start_info *out);

/*
 * Check a CONT packet against the bytes still expected: its payload must
 * be exactly min(remaining, XFI_CONT_PAYLOAD).  Returns the payload length
 * or -1.
 */
int xfi_parse_cont(size_t pkt_len, uint64_t remaining);

/* Build a START packet into pkt (XFI_PKT_MAX bytes) for a message of len
 * bytes; copies the first payload bytes from src (for XFI_START_RNDV, src
 * is the struct xfi_rndv).  *payload_len = message bytes the packet
 * accounts for (all of them for a rendezvous).  Returns the packet length. */
size_t xfi_build_start(uint8_t *pkt, const struct xfi_hdr *hdr, uint64_t tag,
		       uint32_t len, uint32_t flags, uint64_t data, const uint8_t *src,
		       size_t *payload_len);
/* Build a SHORT packet for a message of len <= xfi_short_capacity(flags)
 * bytes (flags: XFI_START_TAGGED, XFI_START_DATA).  Returns its length. */
size_t xfi_build_short(uint8_t *pkt, const struct xfi_hdr *hdr, uint64_t tag,
		       uint32_t len, uint32_t flags, uint64_t data, const uint8_t *src);
size_t xfi_build_fin(uint8_t *pkt, const struct xfi_hdr *hdr, uint64_t cookie, int32_t status);
/* Parse a FIN packet: -1 if malformed. */
int xfi_parse_fin(const uint8_t *pkt, size_t pkt_len, uint64_t *cookie, int32_t *status);
/* PING (header only) and RESET packets; parse: -1 if malformed. */
size_t xfi_build_ping(uint8_t *pkt, const struct xfi_hdr *hdr);
size_t xfi_build_reset(uint8_t *pkt, const struct xfi_hdr *hdr, uint16_t stream_epoch);
int xfi_parse_ping(size_t pkt_len);
int xfi_parse_reset(const uint8_t *pkt, size_t pkt_len, uint16_t *stream_epoch);
/* Build a CONT packet carrying min(remaining, XFI_CONT_PAYLOAD) bytes. */
size_t xfi_build_cont(uint8_t *pkt, const struct xfi_hdr *hdr, const uint8_t *src,
		      uint64_t remaining, size_t *payload_len);

/* Signed distance a - b of 32-bit sequence numbers. */
static inline int32_t xfi_seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

/*
 * FI_ATOMIC on the wire.  op and datatype are libfabric's enum fi_op and
 * enum fi_datatype values (FI_MIN .. FI_MSWAP, FI_INT8 .. FI_DOUBLE:
 * xfi_atomic.c checks they match); whether the combination is supported is
 * the target's business (it answers FI_EOPNOTSUPP).  Operands (count
 * values, none for FI_ATOMIC_READ) and compare values (count, compare ops)
 * fit in the one request packet; the fetched values in the one answer.
 */
#define XFI_AOP_LIMIT		19	/* FI_MSWAP + 1 */
#define XFI_AOP_ATOMIC_READ	10	/* FI_ATOMIC_READ: no operands */
#define XFI_AOP_CSWAP		12	/* FI_CSWAP: compare ops from here on */
#define XFI_ADT_LIMIT		10	/* FI_DOUBLE + 1 */
#define XFI_ATOMIC_FETCH	0x1	/* the answer carries the old values */

struct xfi_atomic_req {
	struct xfi_hdr hdr;
	uint64_t addr;		/* target virtual address */
	uint64_t key;		/* target MR key */
	uint32_t cookie;	/* names the request in the answer */
	uint8_t op, datatype, count, flags;	/* flags: XFI_ATOMIC_FETCH */
};

struct xfi_atomic_resp {
	struct xfi_hdr hdr;
	uint32_t cookie;
	int32_t status;		/* 0 or a positive FI_E* code (then no data) */
};

#define XFI_ATOMIC_REQ_SIZE	sizeof(struct xfi_atomic_req)		/* 32 */
#define XFI_ATOMIC_RESP_SIZE	sizeof(struct xfi_atomic_resp)		/* 16 */
/* Operand bytes (and compare bytes together) a request carries. */
#define XFI_ATOMIC_DATA_MAX	(XFI_PKT_MAX - XFI_ATOMIC_REQ_SIZE)	/* 32 */

/* Size of a datatype value; 0 if datatype is out of range. */
size_t xfi_atomic_dt_size(unsigned int datatype);

/* Most values of datatype one request carries for op (compare ops carry
 * twice as many bytes); 0 if either is out of range. */
size_t xfi_atomic_max_count(unsigned int op, unsigned int datatype);

/* A parsed atomic request. */
struct xfi_atomic_info {
	uint64_t addr, key;
	uint32_t cookie;
	unsigned int op, datatype, count, flags;
	size_t size;			/* of one value */
	const uint8_t *operand;		/* count values (NULL: FI_ATOMIC_READ) */
	const uint8_t *compare;		/* count values (NULL: not a compare op) */
};

/*
 * Build a request (operand: count values, NULL for FI_ATOMIC_READ; compare:
 * count values for compare ops).  The caller has checked count against
 * xfi_atomic_max_count().  Returns the packet length.
 */
size_t xfi_build_atomic_req(uint8_t *pkt, const struct xfi_hdr *hdr,
			    const struct xfi_atomic_info *a);
/* Parse one: op, datatype, flags out of range, count 0 or above the
 * maximum, a length other than the operands imply, a compare op or
 * FI_ATOMIC_READ without XFI_ATOMIC_FETCH -> -1. */
int xfi_parse_atomic_req(const uint8_t *pkt, size_t pkt_len, struct xfi_atomic_info *out);
/* Build an answer: data (len bytes, only with status 0) are the old values. */
size_t xfi_build_atomic_resp(uint8_t *pkt, const struct xfi_hdr *hdr, uint32_t cookie,
			     int32_t status, const uint8_t *data, size_t len);
/* Parse one: a negative status, data with an error status, or more data
 * than a request can fetch -> -1.  *data, *len: the old values. */
int xfi_parse_atomic_resp(const uint8_t *pkt, size_t pkt_len, uint32_t *cookie,
			  int32_t *status, const uint8_t **data, size_t *len);

/* A packet built before its place in the stream is known: the header
 * fields other than the type come from hdr.  Returns len. */
size_t xfi_build_prebuilt(uint8_t *pkt, const struct xfi_hdr *hdr, const uint8_t *prebuilt,
			  size_t len);

/* Address of an endpoint as fi_getname() returns it (8 bytes). */
#define XFI_ADDR_MAGIC 0x5846	/* "XF" */
/* Wire protocol of the endpoint: 2 since SHORT packets (a version 1 peer
 * would drop them and its stream would stall; its address is refused). */
#define XFI_ADDR_VERSION 2
struct xfi_addr {
	uint32_t node;
	uint8_t mbox;
	uint8_t version;	/* XFI_ADDR_VERSION */
	uint16_t magic;
};

/* Compact peer key: node << 6 | mailbox; also the FI_AV_MAP fi_addr. */
static inline uint32_t xfi_key(uint32_t node, uint32_t mbox)
{
	return node << 6 | (mbox & 63u);
}
static inline uint32_t xfi_key_node(uint32_t key) { return key >> 6; }
static inline uint32_t xfi_key_mbox(uint32_t key) { return key & 63u; }

/* The address of mailbox mbox (or XFI_MBOX_ANY) of node's NI. */
static inline struct xfi_addr xfi_addr_make(uint32_t node, uint8_t mbox)
{
	return (struct xfi_addr){ .node = node, .mbox = mbox, .version = XFI_ADDR_VERSION,
				  .magic = XFI_ADDR_MAGIC };
}
/*
 * 0 if a is a well-formed address, -1 otherwise.  any_mbox: its mailbox
 * may be XFI_MBOX_ANY (fi_getinfo's src_addr, node strings without one);
 * an address an endpoint sends to or inserts names a mailbox.
 */
int xfi_addr_check(const struct xfi_addr *a, int any_mbox);
/* A caller's address of len bytes, copied into *a and checked: 0 or -1. */
int xfi_addr_from(const void *buf, size_t len, int any_mbox, struct xfi_addr *a);

#endif
