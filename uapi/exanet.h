/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * ExaNet NI: the one ABI shared by the kernel driver, libexanet, the tools
 * and the QEMU device model.
 *
 * Contents:
 *   1. PCI identity and geometry
 *   2. Register map (BAR0 privileged control with the interrupt registers,
 *      BAR1 packetizer pages, BAR2 mailbox pages, BAR4 MSI-X) and the
 *      mailbox slot format in host memory
 *   3. Character device ioctls and mmap offsets
 *   4. Generic netlink family "exanet"
 *
 * Documentation/exanet/hardware.md explains the semantics.
 */
#ifndef _UAPI_EXANET_H
#define _UAPI_EXANET_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* ---------------------------------------------------------------- 1. */

#define EXANET_PCI_VENDOR_ID		0x1234	/* QEMU's experimental vendor id */
#define EXANET_PCI_DEVICE_ID		0xe7a0

#define EXANET_NUM_PKT_IFACES		64	/* virtualized packetizer interfaces */
#define EXANET_PKT_CHANNELS		4	/* channels per packetizer interface */
#define EXANET_NUM_MBOX_IFACES		64	/* virtualized mailbox interfaces */
#define EXANET_IFACE_PAGE_SIZE		4096	/* one user-mappable page per interface */
#define EXANET_MAX_PAYLOAD		64	/* bytes, delivered atomically */

#define EXANET_MBOX_SLOT_SIZE		128
#define EXANET_MBOX_MIN_SLOTS		4
#define EXANET_MBOX_MAX_SLOTS		8192	/* power of two in [MIN, MAX] */

#define EXANET_PDID_NONE		0	/* never a valid protection domain */
#define EXANET_PDID_MAX			0xffff

/* 80-bit Global Virtual Address: PDID 16 | node 22 | rank 3 | VA 39 */
#define EXANET_GVA_NODE_BITS		22
#define EXANET_GVA_RANK_BITS		3
#define EXANET_GVA_VA_BITS		39
#define EXANET_MAX_NODES		(1u << EXANET_GVA_NODE_BITS)

/* ---------------------------------------------------------------- 2. */

/* BAR0: privileged control page(s), mapped only by the kernel. */
#define EXANET_BAR_CTRL			0
#define EXANET_BAR_CTRL_SIZE		0x4000

#define EXANET_REG_ID			0x000	/* RO 32: EXANET_ID_MAGIC */
#define EXANET_ID_MAGIC			0x45584e49	/* "EXNI" */
#define EXANET_REG_VERSION		0x004	/* RO 32: EXANET_HW_VERSION */
#define EXANET_HW_VERSION		1
#define EXANET_REG_NODE_ID		0x008	/* RO 32: this node's id (22 bits) */
#define EXANET_REG_NUM_NODES		0x00c	/* RO 32: nodes on the fabric */
#define EXANET_REG_CAPS			0x010	/* RO 32: see EXANET_CAPS_* */
#define EXANET_CAPS_PKT_IFACES(c)	((c) & 0xff)
#define EXANET_CAPS_MBOX_IFACES(c)	(((c) >> 8) & 0xff)
#define EXANET_CAPS_PKT_CHANNELS(c)	(((c) >> 16) & 0xff)
#define EXANET_REG_CTRL			0x018	/* WO 32 */
#define EXANET_CTRL_RESET		0x1	/* disable every interface, drop all state */
#define EXANET_REG_RETX_TIMEOUT_US	0x020	/* RW 32: retransmission timeout */
#define EXANET_REG_RETX_MAX		0x024	/* RW 32: retries before TIMEOUT */
#define EXANET_DEFAULT_RETX_TIMEOUT_US	5000	/* doubled per retry, capped at 200 ms */
#define EXANET_DEFAULT_RETX_MAX		10

/*
 * Interrupts (MSI-X).  Sources: every mailbox m (a message written into
 * it) and every RDMA rank r (a notification / completion record written
 * through its context, or a transfer of the rank completing).  The kernel
 * arms a source with a vector in the source's IRQ register
 * (EXANET_MBOX_IRQ, EXANET_CTX_IRQ); when an armed source fires the NI
 * disarms it (one-shot), sets its bit in the PENDING register and raises
 * the vector.  An older NI without interrupts reads IRQ_CAPS as 0 and has
 * no MSI-X capability.
 */
#define EXANET_BAR_MSIX			4	/* MSI-X table + PBA: kernel only */
#define EXANET_NUM_IRQ_VECTORS		4
#define EXANET_REG_IRQ_CAPS		0x028	/* RO 32: see EXANET_IRQ_CAPS_* */
#define EXANET_IRQ_CAPS_VECTORS(c)	((c) & 0xff)	/* 0: no interrupts */
#define EXANET_REG_IRQ_MBOX_PENDING	0x030	/* RW1C 64: bit m = mailbox m fired */
#define EXANET_REG_IRQ_RANK_PENDING	0x038	/* RW1C 32: bit r = rank r fired */
#define EXANET_REG_IRQ_COUNT		0x03c	/* RO 32: interrupts raised since reset */
/* Per-source IRQ register: 0 = disarmed, EXANET_IRQ_ARM(vector) = armed */
#define EXANET_IRQ_ARMED		0x1
#define EXANET_IRQ_VECTOR_SHIFT		8
#define EXANET_IRQ_VECTOR_MASK		0xffu
#define EXANET_IRQ_ARM(vec)						\
	(EXANET_IRQ_ARMED | (((__u32)(vec) & EXANET_IRQ_VECTOR_MASK) << EXANET_IRQ_VECTOR_SHIFT))
#define EXANET_IRQ_VECTOR(v)		(((v) >> EXANET_IRQ_VECTOR_SHIFT) & EXANET_IRQ_VECTOR_MASK)

/* RO 64-bit counters, index n at EXANET_REG_COUNTER(n) */
#define EXANET_REG_COUNTER(n)		(0x100 + 8 * (n))
enum exanet_counter {
	EXANET_CNT_TX_PACKETS,		/* packets started by a doorbell */
	EXANET_CNT_TX_ACKED,		/* ACKs received for our packets */
	EXANET_CNT_TX_NACKED,		/* NACKs received for our packets */
	EXANET_CNT_TX_RETRANSMITS,	/* retransmissions after a timeout */
	EXANET_CNT_TX_TIMEOUTS,		/* channels that ended in TIMEOUT */
	EXANET_CNT_RX_DELIVERED,	/* packets written into a mailbox */
	EXANET_CNT_RX_DUPLICATES,	/* retransmitted copies re-ACKed, not written */
	EXANET_CNT_RX_NACK_PDID,	/* refused: PDID mismatch */
	EXANET_CNT_RX_NACK_FULL,	/* refused: mailbox full */
	EXANET_CNT_RX_NACK_DISABLED,	/* refused: mailbox not enabled */
	EXANET_CNT_RX_NACK_BAD,		/* refused: malformed packet */
	EXANET_CNT_RX_CORRUPT,		/* dropped: failed checksum (sender retries) */
	EXANET_CNT_DOORBELL_BUSY,	/* doorbell on an ONGOING channel, ignored */
	EXANET_CNT_DMA_ERRORS,		/* DMA into a mailbox queue failed */
	EXANET_NUM_COUNTERS
};

/* Counter names, for sysfs, netlink tools and libexanet: one table for all. */
#define EXANET_COUNTER_NAMES_INIT					\
	[EXANET_CNT_TX_PACKETS]		= "tx_packets",			\
	[EXANET_CNT_TX_ACKED]		= "tx_acked",			\
	[EXANET_CNT_TX_NACKED]		= "tx_nacked",			\
	[EXANET_CNT_TX_RETRANSMITS]	= "tx_retransmits",		\
	[EXANET_CNT_TX_TIMEOUTS]	= "tx_timeouts",		\
	[EXANET_CNT_RX_DELIVERED]	= "rx_delivered",		\
	[EXANET_CNT_RX_DUPLICATES]	= "rx_duplicates",		\
	[EXANET_CNT_RX_NACK_PDID]	= "rx_nack_pdid",		\
	[EXANET_CNT_RX_NACK_FULL]	= "rx_nack_full",		\
	[EXANET_CNT_RX_NACK_DISABLED]	= "rx_nack_disabled",		\
	[EXANET_CNT_RX_NACK_BAD]	= "rx_nack_bad",		\
	[EXANET_CNT_RX_CORRUPT]		= "rx_corrupt",			\
	[EXANET_CNT_DOORBELL_BUSY]	= "doorbell_busy",		\
	[EXANET_CNT_DMA_ERRORS]		= "dma_errors",

/* Per packetizer interface i: 0x1000 + i * 0x20 */
#define EXANET_REG_PKT_BASE(i)		(0x1000 + 0x20 * (i))
#define EXANET_PKT_PDID			0x00	/* RW 32: PDID stamped on packets */
#define EXANET_PKT_ENABLE		0x04	/* RW 32: bit 0; clearing aborts channels */
#define EXANET_PKT_BUSY			0x08	/* RO 32: bitmask of ONGOING channels */

/* Per mailbox interface m: 0x2000 + m * 0x40 */
#define EXANET_REG_MBOX_BASE(m)		(0x2000 + 0x40 * (m))
#define EXANET_MBOX_PDID		0x00	/* RW 32: PDID packets must carry */
#define EXANET_MBOX_ENABLE		0x04	/* RW 32: bit 0; setting resets head/tail */
#define EXANET_MBOX_QBASE_LO		0x08	/* RW 32: DMA address of slot 0 */
#define EXANET_MBOX_QBASE_HI		0x0c
#define EXANET_MBOX_NSLOTS		0x10	/* RW 32: power of two */
#define EXANET_MBOX_IRQ			0x14	/* RW 32: EXANET_IRQ_ARM(vector) or 0 */

/*
 * BAR1: packetizer interface pages, page i belongs to interface i.
 * Channel c occupies 0x100 bytes at c * EXANET_PKT_CHAN_STRIDE.
 */
#define EXANET_BAR_PKT			1
#define EXANET_BAR_PKT_SIZE		(EXANET_NUM_PKT_IFACES * EXANET_IFACE_PAGE_SIZE)
#define EXANET_PKT_CHAN_STRIDE		0x100
#define EXANET_PKT_PAYLOAD		0x00	/* WO, 64 bytes, 4- or 8-byte stores */
#define EXANET_PKT_DOORBELL		0x40	/* WO 64: the final store, starts the packet */
#define EXANET_PKT_STATUS		0x48	/* RO 64 */

/* DOORBELL: size | mailbox | node; every other bit must be zero */
#define EXANET_DB_SIZE_SHIFT		0
#define EXANET_DB_SIZE_MASK		0x7full
#define EXANET_DB_MBOX_SHIFT		8
#define EXANET_DB_MBOX_MASK		0x3full
#define EXANET_DB_NODE_SHIFT		16
#define EXANET_DB_NODE_MASK		0x3fffffull
#define EXANET_DOORBELL(node, mbox, size)				\
	((((__u64)(node) & EXANET_DB_NODE_MASK) << EXANET_DB_NODE_SHIFT) |	\
	 (((__u64)(mbox) & EXANET_DB_MBOX_MASK) << EXANET_DB_MBOX_SHIFT) |	\
	 (((__u64)(size) & EXANET_DB_SIZE_MASK) << EXANET_DB_SIZE_SHIFT))

/* STATUS: state in bits 0..3, NACK reason in bits 8..15, retries in 16..23 */
#define EXANET_ST_STATE(s)		((unsigned int)((s) & 0xf))
#define EXANET_ST_REASON(s)		((unsigned int)(((s) >> 8) & 0xff))
#define EXANET_ST_RETRIES(s)		((unsigned int)(((s) >> 16) & 0xff))
enum exanet_chan_state {
	EXANET_CHAN_IDLE = 0,		/* never used since enable */
	EXANET_CHAN_ONGOING = 1,	/* in flight, payload area must not be touched */
	EXANET_CHAN_ACK = 2,		/* delivered exactly once */
	EXANET_CHAN_NACK = 3,		/* refused by the target, see reason */
	EXANET_CHAN_TIMEOUT = 4,	/* no answer after RETX_MAX retries */
};
enum exanet_nack_reason {
	EXANET_NACK_NONE = 0,
	EXANET_NACK_PDID = 1,		/* target mailbox is in another protection domain */
	EXANET_NACK_FULL = 2,		/* target mailbox has no free slot */
	EXANET_NACK_BAD_PACKET = 3,	/* malformed doorbell or packet */
	EXANET_NACK_DISABLED = 4,	/* target mailbox not enabled */
	EXANET_NACK_NO_ROUTE = 5,	/* destination node does not exist */
};

/* BAR2: mailbox interface pages, page m belongs to mailbox m. */
#define EXANET_BAR_MBOX			2
#define EXANET_BAR_MBOX_SIZE		(EXANET_NUM_MBOX_IFACES * EXANET_IFACE_PAGE_SIZE)
#define EXANET_MBOX_HEAD		0x00	/* RW 32: next slot software consumes */
#define EXANET_MBOX_TAIL		0x08	/* RO 32: next slot the NI writes */
#define EXANET_MBOX_SIZE		0x10	/* RO 32: number of slots */
#define EXANET_MBOX_RX_COUNT		0x18	/* RO 32: packets delivered */
#define EXANET_MBOX_FULL_COUNT		0x20	/* RO 32: packets NACKed as FULL */
#define EXANET_MBOX_FEATURES		0x28	/* RO 32: EXANET_MBOX_F_* (0 on older NIs) */
/*
 * Direct delivery: senders' NIs write into this mailbox by themselves
 * (Documentation/fabric.md section 9), so software waiting for a message
 * polls the slots' flags only; it need not read EXANET_MBOX_TAIL to have
 * the queue filled.
 */
#define EXANET_MBOX_F_DIRECT		0x1

/*
 * Mailbox slot in host memory, written by the NI with DMA.  The NI writes
 * the whole slot except 'flags' first and 'flags' last: software owns the
 * slot when (flags & EXANET_SLOT_PHASE) equals its expected phase, which
 * starts at 1 after enable and flips each time the index wraps.
 */
struct exanet_mbox_slot {
	__u8  payload[EXANET_MAX_PAYLOAD];
	__u32 len;		/* payload bytes, 1..64 */
	__u32 src_node;		/* sending node */
	__u16 src_iface;	/* sending packetizer interface */
	__u8  src_chan;		/* sending channel */
	__u8  reserved0;
	__u32 seq;		/* per sending channel, for diagnostics */
	__u8  reserved1[44];
	__u32 flags;
};
#define EXANET_SLOT_PHASE		0x1

/* ---------------------------------------------------------------- 3. */

#define EXANET_ABI_VERSION		1
#define EXANET_DEV_PATH_FMT		"/dev/exanet%u"

struct exanet_info {
	__u32 abi_version;
	__u32 node_id;
	__u32 num_nodes;
	__u32 pdid;		/* protection domain of this open file */
	__u32 num_pkt_ifaces;
	__u32 num_mbox_ifaces;
	__u32 pkt_channels;
	__u32 max_payload;
};

struct exanet_pkt_alloc {
	__u32 iface;		/* out */
	__u32 flags;		/* in: must be 0 */
	__u64 mmap_offset;	/* out: one page, read/write */
};

struct exanet_mbox_alloc {
	__u32 nslots;		/* in: power of two, MIN_SLOTS..MAX_SLOTS */
	__u32 mbox;		/* out */
	__u64 regs_offset;	/* out: one page, read/write (HEAD) */
	__u64 queue_offset;	/* out: slot array, read-only mapping */
	__u64 queue_size;	/* out: bytes = nslots * EXANET_MBOX_SLOT_SIZE */
};

#define EXANET_IOC_MAGIC		0xe7
#define EXANET_IOC_GET_INFO		_IOR(EXANET_IOC_MAGIC, 0x00, struct exanet_info)
#define EXANET_IOC_PKT_ALLOC		_IOWR(EXANET_IOC_MAGIC, 0x01, struct exanet_pkt_alloc)
#define EXANET_IOC_PKT_FREE		_IOW(EXANET_IOC_MAGIC, 0x02, __u32)
#define EXANET_IOC_MBOX_ALLOC		_IOWR(EXANET_IOC_MAGIC, 0x03, struct exanet_mbox_alloc)
#define EXANET_IOC_MBOX_FREE		_IOW(EXANET_IOC_MAGIC, 0x04, __u32)

/*
 * Arm the NI's interrupt for this file: the next message written into one
 * of the armed mailboxes, or the next RDMA notification / completion of the
 * file's rank, makes the file readable (poll POLLIN) until the next arm.
 * One-shot: each armed source raises at most one interrupt per arm; an
 * event that happened before the arm does not make the file readable, but
 * 'events' tells whether one happened since the file's previous arm.  -EOPNOTSUPP when
 * the NI has no interrupts; -ENOENT when there is nothing to arm.
 */
struct exanet_event_arm {
	__u32 flags;		/* in: EXANET_EVENT_* */
	__u32 reserved;		/* in: must be 0 */
	__u64 mbox_mask;	/* in: mailboxes to arm (bit m = mailbox m), every one
				 * this file's; must be 0 with EXANET_EVENT_ALL_MBOX.
				 * out: the mailboxes armed */
	__u32 rank;		/* out: the rank armed, or EXANET_RDMA_NO_RANK */
	__u32 events;		/* out: sources of this file that fired between
				 * its previous arm and this one (0: none) */
};
/* flags 0 with a non-zero mbox_mask: exactly those mailboxes */
#define EXANET_EVENT_ALL_MBOX		0x1	/* every mailbox the file holds */
#define EXANET_EVENT_RDMA		0x2	/* the file's rank, if it has one */
#define EXANET_EVENT_FLAGS		(EXANET_EVENT_ALL_MBOX | EXANET_EVENT_RDMA)

#define EXANET_IOC_EVENT_ARM		_IOWR(EXANET_IOC_MAGIC, 0x05, struct exanet_event_arm)

/*
 * RDMA (hardware ABI: uapi/exanet_rdma.h, scheme: Documentation/exanet/rdma.md).
 *
 * A file that uses RDMA gets a rank (0..EXANET_RDMA_NUM_RANKS - 1) on its
 * node: its own DMA context (a PCI function alone in its IOMMU group, with
 * an unmanaged IOMMU domain) stamped with the file's PDID.  The rank is
 * allocated by the first RDMA_ALLOC or REG_MR and kept until close.
 * Remote addresses are (node, rank, user VA).
 */
struct exanet_rdma_info {
	__u32 node_id;		/* out */
	__u32 rank;		/* out: EXANET_RDMA_NO_RANK if none yet */
	__u32 pdid;		/* out */
	__u32 num_ranks;	/* out: DMA contexts present on this node */
	__u32 num_pages;	/* out: RDMA engine pages on this node */
	__u32 pages_held;	/* out: pages this file holds */
	__u64 max_mr_bytes;	/* out: largest registration */
	__u64 reserved[2];	/* out: zero */
};
#define EXANET_RDMA_NO_RANK		0xffffffffu

struct exanet_rdma_alloc {
	__u32 flags;		/* in: must be 0 */
	__u32 page;		/* out: RDMA engine page index */
	__u32 rank;		/* out: the file's rank */
	__u32 node_id;		/* out */
	__u64 mmap_offset;	/* out: map mmap_size bytes, shared, read/write */
	__u64 mmap_size;	/* out */
};

#define EXANET_MR_LOCAL_WRITE		0x1	/* NI may write (RDMA read into it) */
#define EXANET_MR_REMOTE_WRITE		0x2	/* peers may RDMA-write into it */
#define EXANET_MR_REMOTE_READ		0x4	/* peers may RDMA-read from it */
#define EXANET_MR_ACCESS_MASK		0x7
/*
 * On demand (no pinning, nothing charged to RLIMIT_MEMLOCK): pages are
 * mapped for the NI when it faults on them and unmapped when the kernel
 * frees, migrates or copies them (Documentation/exanet/rdma.md section 9).
 * With addr 0 and len 0: the whole address space of the process
 * (implicit registration).  -EOPNOTSUPP without NI interrupts.
 */
#define EXANET_MR_ON_DEMAND		0x8
#define EXANET_MR_FLAGS_MASK		(EXANET_MR_ACCESS_MASK | EXANET_MR_ON_DEMAND)

struct exanet_reg_mr {
	__u64 addr;		/* in: user address, any alignment */
	__u64 len;		/* in: bytes, 1..max_mr_bytes */
	__u32 access;		/* in: EXANET_MR_* (access bits 0 = all) */
	__u32 handle;		/* out: for DEREG_MR */
	__u32 rank;		/* out: the file's rank */
	__u32 node_id;		/* out */
};

#define EXANET_IOC_RDMA_INFO		_IOR(EXANET_IOC_MAGIC, 0x10, struct exanet_rdma_info)
#define EXANET_IOC_RDMA_ALLOC		_IOWR(EXANET_IOC_MAGIC, 0x11, struct exanet_rdma_alloc)
#define EXANET_IOC_RDMA_FREE		_IOW(EXANET_IOC_MAGIC, 0x12, __u32)
#define EXANET_IOC_REG_MR		_IOWR(EXANET_IOC_MAGIC, 0x13, struct exanet_reg_mr)
#define EXANET_IOC_DEREG_MR		_IOW(EXANET_IOC_MAGIC, 0x14, __u32)

/*
 * mmap offsets are opaque to applications (use the values returned by the
 * alloc ioctls); the driver encodes kind and index so it can check that the
 * caller owns what it maps.
 */
#define EXANET_MMAP_KIND_SHIFT		32
#define EXANET_MMAP_INDEX_SHIFT		24
#define EXANET_MMAP_PKT			1
#define EXANET_MMAP_MBOX_REGS		2
#define EXANET_MMAP_MBOX_QUEUE		3
#define EXANET_MMAP_RDMA		4
#define EXANET_MMAP_OFFSET(kind, index)					\
	(((__u64)(kind) << EXANET_MMAP_KIND_SHIFT) |			\
	 ((__u64)(index) << EXANET_MMAP_INDEX_SHIFT))

/* ---------------------------------------------------------------- 4. */

/*
 * Generic netlink family for management (exanetctl).  Commands that change
 * state need CAP_NET_ADMIN, checked in the kernel (GENL_ADMIN_PERM).
 */
#define EXANET_GENL_NAME		"exanet"
#define EXANET_GENL_VERSION		1

enum exanet_genl_cmd {
	EXANET_CMD_UNSPEC,
	EXANET_CMD_DEV_GET,		/* dump or get (DEV_INDEX): device info + counters */
	EXANET_CMD_PDID_BIND,		/* admin: PID + PDID: the process and its future
					 * descendants open devices in PDID */
	EXANET_CMD_PDID_UNBIND,		/* admin: PID */
	EXANET_CMD_PDID_GET,		/* dump bindings */
	EXANET_CMD_LINKS_GET,		/* dump or get (DEV_INDEX): torus link block */
	__EXANET_CMD_MAX,
};
#define EXANET_CMD_MAX (__EXANET_CMD_MAX - 1)

enum exanet_genl_attr {
	EXANET_ATTR_UNSPEC,
	EXANET_ATTR_DEV_INDEX,		/* u32: N of /dev/exanetN */
	EXANET_ATTR_DEV_NAME,		/* string */
	EXANET_ATTR_NODE_ID,		/* u32 */
	EXANET_ATTR_NUM_NODES,		/* u32 */
	EXANET_ATTR_PKT_IN_USE,		/* u32: allocated packetizer interfaces */
	EXANET_ATTR_MBOX_IN_USE,	/* u32: allocated mailbox interfaces */
	EXANET_ATTR_COUNTERS,		/* nested: attribute n+1 = u64 counter n */
	EXANET_ATTR_PID,		/* u32 */
	EXANET_ATTR_PDID,		/* u32, 1..EXANET_PDID_MAX */
	EXANET_ATTR_PAD,
	/*
	 * LINKS_GET: the torus link block (uapi/exa_torus.h).  Without
	 * TORUS_SHAPE the device has no block.  Nests of indices: attribute
	 * i + 1 = element i (hop count, enum exa_port, enum exa_port_counter).
	 */
	EXANET_ATTR_TORUS_SHAPE,	/* u32: X | Y << 8 | Z << 16 (EXA_TORUS_SHAPE) */
	EXANET_ATTR_TORUS_COORD,	/* u32: x | y << 8 | z << 16 (EXA_TORUS_COORD) */
	EXANET_ATTR_RX_HOPS,		/* nested u64: packets delivered after h hops */
	EXANET_ATTR_NO_ROUTE,		/* u64: packets this node could not route */
	EXANET_ATTR_PORTS,		/* nested: port p, a nest of PORT_* below */
	EXANET_ATTR_PORT_NAME,		/* string: "x+" ... "z-" (EXA_PORT_NAMES_INIT) */
	EXANET_ATTR_PORT_STATE,		/* u32: EXA_PORT_USED | UP | ADMIN_UP | PEER_ALIVE */
	EXANET_ATTR_PORT_PEER,		/* u32: the neighbour's node id */
	EXANET_ATTR_PORT_MBPS,		/* u32: link rate, 0 = unlimited */
	EXANET_ATTR_PORT_NS,		/* u32: latency of the hop */
	EXANET_ATTR_PORT_DROP_PPM,	/* u32: injected drops */
	EXANET_ATTR_PORT_CORRUPT_PPM,	/* u32: injected bit flips */
	EXANET_ATTR_PORT_COUNTERS,	/* nested u64: port counter n */
	__EXANET_ATTR_MAX,
};
#define EXANET_ATTR_MAX (__EXANET_ATTR_MAX - 1)

#endif /* _UAPI_EXANET_H */
