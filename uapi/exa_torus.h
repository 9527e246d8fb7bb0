/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * The 3D-torus link block, the same in the control BAR (BAR0) of both
 * NICs (ExaNet NI and EXTOLL): where the node sits in the torus, its six
 * link ports, their state and their counters.  Read-only for the kernel;
 * the state and fault settings of a link are changed from the host
 * (QEMU properties, Documentation/fabric.md).
 *
 * A port names the outgoing direction of one cable: port x+ of node n
 * leads to the node one step further in x (wrapping around), and the
 * cable ends in that node's port x-.  A cable is up when both of its ends
 * are administratively up and both nodes run.  In a dimension of size 1
 * both ports of that dimension are unused (EXA_PORT_USED clear); in a
 * dimension of size 2 the + and - ports lead to the same neighbour over
 * two different cables.  Counters count what leaves the node through the
 * port (packets routed over that cable, this node's or forwarded ones).
 */
#ifndef _UAPI_EXA_TORUS_H
#define _UAPI_EXA_TORUS_H

#define EXA_TORUS_BASE			0x800	/* offset in BAR0 of both NICs */

#define EXA_TORUS_SHAPE			0x000	/* RO 32: X | Y << 8 | Z << 16 */
#define EXA_TORUS_COORD			0x004	/* RO 32: x | y << 8 | z << 16 */
#define EXA_TORUS_NUM_PORTS		0x008	/* RO 32: EXA_NUM_PORTS */
#define EXA_TORUS_DIM(v, d)		(((v) >> (8 * (d))) & 0xff)

#define EXA_NUM_PORTS			6
enum exa_port {
	EXA_PORT_XP, EXA_PORT_XM,	/* x+, x- */
	EXA_PORT_YP, EXA_PORT_YM,
	EXA_PORT_ZP, EXA_PORT_ZM,
};
#define EXA_PORT_NAMES_INIT						\
	[EXA_PORT_XP] = "x+", [EXA_PORT_XM] = "x-",			\
	[EXA_PORT_YP] = "y+", [EXA_PORT_YM] = "y-",			\
	[EXA_PORT_ZP] = "z+", [EXA_PORT_ZM] = "z-",

/* Port block p */
#define EXA_TORUS_PORT(p)		(0x040 + 0x80 * (p))
#define EXA_PORT_STATE			0x00	/* RO 32: EXA_PORT_* bits */
#define EXA_PORT_USED			0x1	/* leads to another node */
#define EXA_PORT_UP			0x2	/* the cable carries packets */
#define EXA_PORT_ADMIN_UP		0x4	/* this end is not set down */
#define EXA_PORT_PEER_ALIVE		0x8	/* the neighbour node runs */
#define EXA_PORT_PEER			0x04	/* RO 32: neighbour's node id */
#define EXA_PORT_MBPS			0x08	/* RO 32: link rate, 0 = unlimited */
#define EXA_PORT_NS			0x0c	/* RO 32: latency of the hop */
#define EXA_PORT_DROP_PPM		0x10	/* RO 32: injected drops */
#define EXA_PORT_CORRUPT_PPM		0x14	/* RO 32: injected bit flips */
#define EXA_PORT_COUNTER(n)		(0x20 + 8 * (n))	/* RO 64 */
enum exa_port_counter {
	EXA_PORT_CNT_PACKETS,		/* packets and bulk records sent over it */
	EXA_PORT_CNT_BYTES,		/* their bytes (fabric header included) */
	EXA_PORT_CNT_DROPS,		/* lost on this cable (injected drops) */
	EXA_PORT_CNT_CRC_ERRORS,	/* damaged on this cable (bit flips) */
	EXA_PORT_CNT_RETRANS,		/* retransmissions it caused: drops + CRC errors */
	EXA_PORT_CNT_DETOURED,		/* packets that avoided it while it was down */
	EXA_PORT_CNT_BUSY_NS,		/* time the cable was busy sending (link rate set) */
	EXA_PORT_CNT_DOWN_EVENTS,	/* times this end was set down */
	EXA_NUM_PORT_COUNTERS
};
#define EXA_PORT_COUNTER_NAMES_INIT					\
	[EXA_PORT_CNT_PACKETS]		= "packets",			\
	[EXA_PORT_CNT_BYTES]		= "bytes",			\
	[EXA_PORT_CNT_DROPS]		= "drops",			\
	[EXA_PORT_CNT_CRC_ERRORS]	= "crc_errors",			\
	[EXA_PORT_CNT_RETRANS]		= "retrans",			\
	[EXA_PORT_CNT_DETOURED]		= "detoured",			\
	[EXA_PORT_CNT_BUSY_NS]		= "busy_ns",			\
	[EXA_PORT_CNT_DOWN_EVENTS]	= "down_events",

/*
 * Packets delivered to this node by the number of hops they took
 * (h = 0..EXA_TORUS_MAX_HOPS - 1; the last bucket holds longer routes),
 * and the packets this node could not route (every path cut).
 */
#define EXA_TORUS_MAX_HOPS		16
#define EXA_TORUS_RX_HOPS(h)		(0x400 + 8 * (h))	/* RO 64 */
#define EXA_TORUS_NO_ROUTE		0x480	/* RO 64 */

#endif /* _UAPI_EXA_TORUS_H */
