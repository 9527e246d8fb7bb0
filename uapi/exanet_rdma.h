/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * ExaNet NI: hardware ABI of the RDMA engine (shared by the QEMU device
 * model, the kernel driver, libexanet and the tests).
 *
 * Contents:
 *   1. DMA context devices (one PCI function per rank)
 *   2. Privileged RDMA registers in BAR0 of the NI
 *   3. BAR3: the 16 user-mappable RDMA pages, channels, descriptor, status
 *   4. Notification / local completion record in host memory
 *   5. Limits
 *   6. Fault queue entry (on-demand paging)
 *
 * Documentation/exanet/rdma.md explains the semantics.
 */
#ifndef _UAPI_EXANET_RDMA_H
#define _UAPI_EXANET_RDMA_H

#include <linux/types.h>
#include "exanet.h"

/* ---------------------------------------------------------------- 1. */

/*
 * A DMA context is a separate, BAR-less conventional PCI function
 * ("-device exanet-ctx,ni=<id of the exanet device>,rank=<r>"), each in its
 * own slot of the q35 root bus, hence alone in its IOMMU group.  The NI does
 * every RDMA DMA on behalf of rank r (source reads, destination writes,
 * notification and local completion writes) as a bus master access *of the
 * context function r*, with the plain user virtual address as the DMA
 * address.  With intel-iommu the driver attaches an unmanaged IOMMU domain
 * to context r and maps the registered pages at their user VA; without an
 * IOMMU the DMA address is a guest-physical address.
 *
 * The context function must have Bus Master Enable set in its PCI command
 * register, otherwise its DMA fails (error completion).
 */
#define EXANET_CTX_PCI_VENDOR_ID	EXANET_PCI_VENDOR_ID
#define EXANET_CTX_PCI_DEVICE_ID	0xe7a1
#define EXANET_RDMA_NUM_RANKS		8	/* 1 << EXANET_GVA_RANK_BITS */
/*
 * config space, vendor specific: read-only byte at this offset = rank.
 * Reading it is also the translation fence: the NI may keep translations
 * of the rank's IOMMU domain besides the IOTLB (peers' direct delivery,
 * Documentation/fabric.md section 9); a translation the driver removed
 * (IOMMU unmap, IOTLB flushed) is used by no access that starts after the
 * driver's next read of this byte.  The driver reads it after every unmap.
 */
#define EXANET_CTX_CFG_RANK		0x40

/* ---------------------------------------------------------------- 2. */

/* Per rank context r (BAR0 of the NI): 0x3000 + r * 0x10 */
#define EXANET_REG_CTX_BASE(r)		(0x3000 + 0x10 * (r))
#define EXANET_CTX_PDID			0x00	/* RW 32: PDID incoming RDMA must carry */
#define EXANET_CTX_ENABLE		0x04	/* RW 32: bit 0; 0 = no DMA through it */
#define EXANET_CTX_EN_ON		0x1
#define EXANET_CTX_EN_ODP		0x2	/* on-demand paging: report faults (6.) */
#define EXANET_CTX_STATUS		0x08	/* RO 32: see EXANET_CTX_ST_* */
#define EXANET_CTX_ST_PRESENT		0x1	/* an exanet-ctx function exists */
#define EXANET_CTX_ST_BUSMASTER		0x2	/* its bus master bit is set */
#define EXANET_CTX_IRQ			0x0c	/* RW 32: EXANET_IRQ_ARM(vector) or 0 */

/* Per RDMA page p (BAR0 of the NI): 0x3100 + p * 0x10 */
#define EXANET_REG_RPAGE_BASE(p)	(0x3100 + 0x10 * (p))
#define EXANET_RPAGE_PDID		0x00	/* RW 32: PDID stamped on transfers */
#define EXANET_RPAGE_RANK		0x04	/* RW 32: local DMA context (0..7) */
#define EXANET_RPAGE_ENABLE		0x08	/* RW 32: bit 0; clearing aborts channels */
#define EXANET_RPAGE_BUSY		0x0c	/* RO 32: number of ONGOING channels */

/* Global RDMA registers */
#define EXANET_REG_RDMA_CAPS		0x3200	/* RO 32: see EXANET_RDMA_CAPS_* */
#define EXANET_RDMA_CAPS_PAGES(c)	((c) & 0xff)
#define EXANET_RDMA_CAPS_WCHANS(c)	(((c) >> 8) & 0xff)
#define EXANET_RDMA_CAPS_RCHANS(c)	(((c) >> 16) & 0xff)
#define EXANET_RDMA_CAPS_RANKS(c)	(((c) >> 24) & 0xff)
#define EXANET_REG_RDMA_RETX_US		0x3204	/* RW 32: block timeout, default 20000 */
#define EXANET_RDMA_DEFAULT_RETX_US	20000	/* doubled per retry, capped at 200 ms */
#define EXANET_REG_RDMA_WINDOW		0x3208	/* RW 32: blocks in flight per transfer */
#define EXANET_RDMA_DEFAULT_WINDOW	128	/* 1..EXANET_RDMA_MAX_WINDOW */
#define EXANET_RDMA_MAX_WINDOW		256
/* Retries before TIMEOUT: EXANET_REG_RETX_MAX (shared with the packetizer). */

/*
 * Fault queue (on-demand paging, section 6 below and rdma.md section 9): a
 * ring of EXANET_REG_RDMA_FQ_SIZE struct exanet_rdma_fault entries in host
 * memory (DMA address of the NI function itself).  HEAD and TAIL are free
 * running 32-bit indices, entry = index & (size - 1); the NI writes an
 * entry, then advances TAIL; software consumes up to TAIL, then writes
 * HEAD.  TAIL - HEAD == SIZE: full (the fault is not recorded, the block
 * is retried later).
 */
#define EXANET_REG_RDMA_FQ_BASE_LO	0x3210	/* RW 32: DMA address of entry 0 */
#define EXANET_REG_RDMA_FQ_BASE_HI	0x3214
#define EXANET_REG_RDMA_FQ_SIZE		0x3218	/* RW 32: entries, power of two
						 * 16..65536, 0 = off; a write
						 * resets HEAD and TAIL */
#define EXANET_REG_RDMA_FQ_HEAD		0x321c	/* RW 32: next entry software reads;
						 * moving it past an entry
						 * replays what waited for
						 * that fault (write FQ_FAIL
						 * before, to fail it) */
#define EXANET_REG_RDMA_FQ_TAIL		0x3220	/* RO 32: next entry the NI writes */
#define EXANET_REG_RDMA_FQ_IRQ		0x3224	/* RW 32: EXANET_IRQ_ARM(vector) or 0;
						 * fires (pending bit
						 * EXANET_IRQ_RANK_FAULT of
						 * IRQ_RANK_PENDING) when an entry
						 * is written, or at once when
						 * armed while HEAD != TAIL */
#define EXANET_REG_RDMA_FQ_RESUME	0x3228	/* WO 32: bit r = replay every block
						 * held for rank r, consumed
						 * or not (recovery) */
#define EXANET_REG_RDMA_FQ_FAIL		0x322c	/* WO 32: fault id: the transfer
						 * held on it ends in error */
#define EXANET_RDMA_FQ_MIN		16
#define EXANET_RDMA_FQ_MAX		65536
#define EXANET_IRQ_RANK_FAULT		16	/* bit in EXANET_REG_IRQ_RANK_PENDING */

/* RO 64-bit counters, index n at EXANET_REG_RDMA_COUNTER(n); cleared by reset */
#define EXANET_REG_RDMA_COUNTER(n)	(0x3400 + 8 * (n))
enum exanet_rdma_counter {
	EXANET_RCNT_TX_WRITES,		/* RDMA writes started */
	EXANET_RCNT_TX_READS,		/* RDMA reads started */
	EXANET_RCNT_TX_DONE,		/* channels completed DONE */
	EXANET_RCNT_TX_ERRORS,		/* channels completed ERROR (any code) */
	EXANET_RCNT_TX_BLOCKS,		/* blocks sent (first transmission) */
	EXANET_RCNT_TX_BYTES,		/* payload bytes sent (first transmission) */
	EXANET_RCNT_TX_RETRANSMITS,	/* blocks sent again (timeout or NACK) */
	EXANET_RCNT_TX_NACK_RETRY,	/* retryable NACKs (corrupt cells) */
	EXANET_RCNT_TX_TIMEOUTS,	/* transfers ended in TIMEOUT */
	EXANET_RCNT_RX_BLOCKS,		/* blocks written to memory */
	EXANET_RCNT_RX_BYTES,		/* payload bytes written to memory */
	EXANET_RCNT_RX_DUPLICATES,	/* blocks received again, re-ACKed, not written */
	EXANET_RCNT_RX_CORRUPT,		/* blocks with a bad cell checksum (NACK retry) */
	EXANET_RCNT_RX_NACK_PDID,	/* refused: PDID mismatch */
	EXANET_RCNT_RX_NACK_CTX,	/* refused: rank context absent / disabled */
	EXANET_RCNT_RX_DMA_ERRORS,	/* destination / notification DMA failed */
	EXANET_RCNT_RX_BAD,		/* malformed RDMA packets */
	EXANET_RCNT_NOTIFICATIONS,	/* notification records written */
	EXANET_RCNT_READS_SERVED,	/* read requests answered (responder side) */
	EXANET_RCNT_RING_FULL,		/* block sends deferred: bulk ring full */
	EXANET_RCNT_DESC_BUSY,		/* descriptor trigger on an ONGOING channel */
	EXANET_RCNT_FAULTS,		/* fault entries written to the fault queue */
	EXANET_RCNT_FAULT_QFULL,	/* faults not recorded: queue full / off */
	EXANET_RCNT_FAULT_HOLDS,	/* blocks held / NACKed for a fault */
	EXANET_RCNT_FAULT_REPLAYS,	/* held accesses replayed (HEAD / RESUME) */
	EXANET_RCNT_FAULT_FAILS,	/* transfers failed by FQ_FAIL */
	EXANET_RDMA_NUM_COUNTERS
};

/* ---------------------------------------------------------------- 3. */

/*
 * BAR3: 16 RDMA pages of 4 KiB; page p = RDMA interface p, mapped by the
 * one process the driver allocated it to.  A page holds 64 channel slots
 * of 64 bytes: slots 0..31 are write channels, 32..63 read channels.
 *
 * Writing a slot stages the 64-byte descriptor (4- or 8-byte stores); the
 * store to EXANET_RDMA_D_CTRL (offset 0x38, 8-byte, or 4-byte = upper half
 * zero) is the trigger and starts the transfer.  Reading a slot returns the
 * channel status view instead (the descriptor is write-only).
 */
#define EXANET_BAR_RDMA			3
#define EXANET_RDMA_PAGES		16
#define EXANET_RDMA_PAGE_SIZE		4096
#define EXANET_BAR_RDMA_SIZE		(EXANET_RDMA_PAGES * EXANET_RDMA_PAGE_SIZE)
#define EXANET_RDMA_WCHANS		32
#define EXANET_RDMA_RCHANS		32
#define EXANET_RDMA_CHANS		(EXANET_RDMA_WCHANS + EXANET_RDMA_RCHANS)
#define EXANET_RDMA_CHAN_STRIDE		64
#define EXANET_RDMA_WCHAN(i)		(i)			/* slot of write channel i */
#define EXANET_RDMA_RCHAN(i)		(EXANET_RDMA_WCHANS + (i))	/* read channel i */

/*
 * The 64-byte descriptor.  'remote' packs the destination node and rank:
 * EXANET_RDMA_REMOTE(node, rank); the remote address is the plain user VA
 * of the target process (< 2^48).  Together they are the GVA
 * (PDID 16 | node 22 | rank 3 | VA): the PDID is never supplied by user
 * space, it is the page's EXANET_RPAGE_PDID.
 *
 * WRITE channel:  local_va  = source in the caller's memory
 *                 remote_va = destination in process (node, rank)
 *                 notify_va = notification VA in the TARGET process (0 = none)
 * READ channel:   local_va  = destination in the caller's memory
 *                 remote_va = source in process (node, rank)
 *                 notify_va = notification VA in the CALLER (0 = none)
 * Both:           lcomp_va  = local completion record VA in the caller
 *                             (0 = none; written DONE or ERROR)
 *                 tag       = copied into notification and completion
 *                 ctrl      = flags (none defined: must be 0), the trigger
 */
struct exanet_rdma_desc {
	__u64 local_va;
	__u64 remote_va;
	__u64 remote;		/* EXANET_RDMA_REMOTE(node, rank) */
	__u64 length;		/* bytes, 1..EXANET_RDMA_MAX_LEN */
	__u64 notify_va;	/* 8-byte aligned, or 0 */
	__u64 tag;
	__u64 lcomp_va;		/* 8-byte aligned, or 0 */
	__u64 ctrl;		/* trigger; flags, must be 0 */
};
#define EXANET_RDMA_D_LOCAL_VA		0x00
#define EXANET_RDMA_D_REMOTE_VA		0x08
#define EXANET_RDMA_D_REMOTE		0x10
#define EXANET_RDMA_D_LENGTH		0x18
#define EXANET_RDMA_D_NOTIFY_VA		0x20
#define EXANET_RDMA_D_TAG		0x28
#define EXANET_RDMA_D_LCOMP_VA		0x30
#define EXANET_RDMA_D_CTRL		0x38

#define EXANET_RDMA_REMOTE_NODE_MASK	0x3fffffull	/* bits 0..21 */
#define EXANET_RDMA_REMOTE_RANK_SHIFT	24		/* bits 24..26 */
#define EXANET_RDMA_REMOTE_RANK_MASK	0x7ull
#define EXANET_RDMA_REMOTE(node, rank)					\
	(((__u64)(node) & EXANET_RDMA_REMOTE_NODE_MASK) |		\
	 (((__u64)(rank) & EXANET_RDMA_REMOTE_RANK_MASK) << EXANET_RDMA_REMOTE_RANK_SHIFT))
#define EXANET_RDMA_REMOTE_NODE(r)	((__u32)((r) & EXANET_RDMA_REMOTE_NODE_MASK))
#define EXANET_RDMA_REMOTE_RANK(r)	((__u32)(((r) >> EXANET_RDMA_REMOTE_RANK_SHIFT) & \
						 EXANET_RDMA_REMOTE_RANK_MASK))

/* Status view of a channel slot (reads). */
#define EXANET_RDMA_S_STATUS		0x00	/* RO 64 */
#define EXANET_RDMA_S_DONE_BYTES	0x08	/* RO 64: bytes acknowledged / received */
/*
 * RO 64, the same in every slot of a page: notification and completion
 * records (RDMA and collective) the NI has written into the memory of the
 * page's rank since the device reset.  Software waiting for a record in
 * memory reads it when the record is not there yet: the read is where the
 * NI sees a waiting process (it takes in pending fabric traffic at once,
 * and a host-side model may park the waiting vCPU).
 */
#define EXANET_RDMA_S_NOTIFS		0x10

/* STATUS: state 0..3, error 8..15, retries 16..23, transfer sequence 32..63 */
#define EXANET_RDMA_ST_STATE(s)		((unsigned int)((s) & 0xf))
#define EXANET_RDMA_ST_ERROR(s)		((unsigned int)(((s) >> 8) & 0xff))
#define EXANET_RDMA_ST_RETRIES(s)	((unsigned int)(((s) >> 16) & 0xff))
#define EXANET_RDMA_ST_SEQ(s)		((__u32)((s) >> 32))
enum exanet_rdma_state {
	EXANET_RDMA_IDLE = 0,		/* nothing started since enable */
	EXANET_RDMA_ONGOING = 1,	/* descriptor slot must not be written */
	EXANET_RDMA_DONE = 2,		/* all data (and notification) landed */
	EXANET_RDMA_ERROR = 3,		/* see the error code */
};
enum exanet_rdma_error {
	EXANET_RDMA_E_NONE = 0,
	EXANET_RDMA_E_BAD_DESC = 1,	/* flags, length, alignment, VA range */
	EXANET_RDMA_E_NO_ROUTE = 2,	/* node >= NUM_NODES */
	EXANET_RDMA_E_PDID = 3,		/* remote context in another PDID: nothing written */
	EXANET_RDMA_E_REMOTE_CTX = 4,	/* remote rank context absent or disabled */
	EXANET_RDMA_E_REMOTE_DMA = 5,	/* remote translation / DMA fault */
	EXANET_RDMA_E_LOCAL_DMA = 6,	/* local translation / DMA fault (or local ctx off) */
	EXANET_RDMA_E_TIMEOUT = 7,	/* no progress after RETX_MAX retries */
	EXANET_RDMA_E_NOTIFY_DMA = 8,	/* data landed, notification write failed */
	EXANET_RDMA_E_ABORTED = 9,	/* the page was disabled / device reset */
	EXANET_RDMA_E_REMOTE_FAULT = 10, /* on-demand fault refused at the remote
					 * (address not mapped / not writable) */
	EXANET_RDMA_E_LOCAL_FAULT = 11,	/* the same in the caller's memory */
};

/* ---------------------------------------------------------------- 4. */

/*
 * Notification (written in the target process for a write, in the
 * initiator for a read, once ALL data has landed) and local completion
 * record (written in the initiator at lcomp_va when the channel completes).
 * 32 bytes; the NI writes bytes 0..27 first and 'flags' (with
 * EXANET_RDMA_N_VALID) last.  Software clears 'flags' before reusing it.
 */
struct exanet_rdma_notif {
	__u64 tag;		/* descriptor tag */
	__u64 length;		/* bytes transferred */
	__u32 node;		/* notification: initiator node; completion: remote node */
	__u8  rank;		/* rank of that process */
	__u8  op;		/* EXANET_RDMA_OP_* */
	__u8  error;		/* enum exanet_rdma_error, 0 = success */
	__u8  page;		/* initiator's RDMA page */
	__u16 chan;		/* initiator's channel slot (0..63) */
	__u16 reserved;
	__u32 flags;		/* EXANET_RDMA_N_* , written last */
};
#define EXANET_RDMA_N_VALID		0x1
#define EXANET_RDMA_N_COMPLETION	0x2	/* local completion (not a notification) */
#define EXANET_RDMA_OP_WRITE		1
#define EXANET_RDMA_OP_READ		2

/* ---------------------------------------------------------------- 5. */

#define EXANET_RDMA_MAX_LEN		(1ull << 30)	/* 1 GiB per descriptor */
#define EXANET_RDMA_VA_BITS		48		/* VAs and VA + length below 2^48 */
#define EXANET_RDMA_BLOCK_SIZE		16384		/* ACK unit */
#define EXANET_RDMA_CELL_SIZE		256		/* wire unit, 64 per block */

/* ---------------------------------------------------------------- 6. */

/*
 * Fault queue entry (32 bytes), written by the NI when a DMA of a rank in
 * on-demand mode (EXANET_CTX_EN_ODP) fails translation.  The block is held
 * (source read) or answered "retry later" (destination / notification
 * write) until software consumes the entry (EXANET_REG_RDMA_FQ_HEAD moves
 * past it: replay) after writing its id to EXANET_REG_RDMA_FQ_FAIL if the
 * access must fail (error completion EXANET_RDMA_E_LOCAL_FAULT /
 * EXANET_RDMA_E_REMOTE_FAULT).
 */
struct exanet_rdma_fault {
	__u64 va;		/* first byte of the failed access */
	__u32 len;		/* bytes of the access (<= one block) */
	__u32 id;		/* fault id, for EXANET_REG_RDMA_FQ_FAIL */
	__u8  rank;		/* local DMA context */
	__u8  access;		/* EXANET_FAULT_READ / EXANET_FAULT_WRITE */
	__u8  kind;		/* EXANET_FAULT_K_* */
	__u8  op;		/* EXANET_RDMA_OP_* of the transfer */
	__u32 node;		/* initiator node of the transfer */
	__u8  page;		/* initiator's RDMA page */
	__u8  chan;		/* initiator's channel slot */
	__u16 ahead;		/* blocks of the transfer after this access
				 * (a prefetch hint; 0xffff: that many or more) */
	__u32 seq;		/* transfer sequence number */
};
#define EXANET_FAULT_READ		1
#define EXANET_FAULT_WRITE		2
#define EXANET_FAULT_K_SRC		1	/* source read (initiator / responder) */
#define EXANET_FAULT_K_DST		2	/* destination write */
#define EXANET_FAULT_K_NOTIFY		3	/* notification write */
#define EXANET_FAULT_K_LCOMP		4	/* local completion record write */

#endif /* _UAPI_EXANET_RDMA_H */
