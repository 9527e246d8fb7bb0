/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * EXTOLL NIC: hardware contract between the QEMU device model
 * (qemu-devices/extoll/), the kernel driver (drivers/extoll/) and the
 * user-space libraries (librma2, libvelo2), which store to the requester
 * pages and read the queues in host memory directly.
 *
 * Contents:
 *   1. PCI identity and geometry
 *   2. BAR0: privileged control registers (global + one block per VPID)
 *   3. BAR2: VELO requester pages (one per VPID, user-mappable)
 *   4. VELO receive ring in host memory (slot + status word)
 *   5. BAR4: RMA requester pages (32 per VPID, user-mappable) and the
 *      24-byte command as stored to them
 *   6. RMA notification queue in host memory (16-byte RMA2_Notification)
 *   7. ATU: NLA -> bus address translation table in host memory
 *
 * Documentation/extoll/hardware.md explains the semantics.  All multi-byte
 * values are little endian.  "Bus address" = the address the device uses
 * for DMA (a physical address without IOMMU, an IOVA with one).
 */
#ifndef _UAPI_EXTOLL_HW_H
#define _UAPI_EXTOLL_HW_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

/* ---------------------------------------------------------------- 1. */

#define EXTOLL_PCI_VENDOR_ID		0x1234	/* QEMU's experimental vendor id */
#define EXTOLL_PCI_DEVICE_ID		0xe7b0

#define EXTOLL_HW_PAGE_SIZE		4096
#define EXTOLL_NUM_VPIDS		64	/* implemented; also in EXTOLL_REG_NUM_VPIDS */
#define EXTOLL_SPEC_VPIDS		256	/* 8-bit VPID field on the wire/in formats */
#define EXTOLL_MAX_NODES		65536	/* 16-bit node id field */

/*
 * Each VPID number v has an independent VELO part and RMA part (enabled
 * separately); the driver may hand the VELO part of v and the RMA part of
 * v to different processes.
 */

/* ---------------------------------------------------------------- 2. */

/* BAR0: privileged control, only the kernel maps it.  32- and 64-bit
 * accesses; a 64-bit register may also be accessed as two 32-bit halves
 * (low half at the register offset, high half at +4). */
#define EXTOLL_BAR_CTRL			0
#define EXTOLL_BAR_CTRL_SIZE		0x4000

#define EXTOLL_REG_ID			0x000	/* RO 32: EXTOLL_ID_MAGIC */
#define EXTOLL_ID_MAGIC			0x4c545845	/* "EXTL" */
#define EXTOLL_REG_VERSION		0x004	/* RO 32: EXTOLL_HW_VERSION */
#define EXTOLL_HW_VERSION		2	/* 2: protection IDs (VPID_*_PROT, ATU bits 48-63) */
#define EXTOLL_REG_NODE_ID		0x008	/* RO 32: this node's id (16 bits) */
#define EXTOLL_REG_NUM_NODES		0x00c	/* RO 32: nodes on the fabric */
#define EXTOLL_REG_NUM_VPIDS		0x010	/* RO 32: EXTOLL_NUM_VPIDS */
#define EXTOLL_REG_RMA_FRAG		0x014	/* RO 32: RMA payload bytes per wire fragment (F) */
#define EXTOLL_RMA_FRAG_SIZE		1024
#define EXTOLL_REG_CTRL			0x018	/* WO 32 */
#define EXTOLL_CTRL_RESET		0x1	/* disable every VPID, ATU off, drop all state */
#define EXTOLL_REG_VELO_SLOT		0x01c	/* RO 32: EXTOLL_VELO_SLOT_SIZE */
#define EXTOLL_REG_ATU_BASE		0x020	/* RW 64: bus address of the ATU table, 4 KiB aligned */
#define EXTOLL_REG_ATU_ENTRIES		0x028	/* RW 32: entries (0 = ATU off, max EXTOLL_ATU_MAX_ENTRIES) */
#define EXTOLL_REG_VELO_CREDITS		0x030	/* RO 32: EXTOLL_VELO_TX_CREDITS */
#define EXTOLL_REG_RMA_CMDQ		0x034	/* RO 32: EXTOLL_RMA_CMDQ_DEPTH */
#define EXTOLL_REG_RETX_MAX		0x038	/* RO 32: retransmission budget (retx-max), see below */
#define EXTOLL_DEFAULT_RETX_MAX		15	/* ~1.26 s of silence */

/*
 * Retransmission budget.  A reliable stream (per peer node and direction:
 * requests, or responses) that has retransmitted EXTOLL_REG_RETX_MAX times
 * in a row without any packet acknowledged (timeouts of 5, 10, 20, 40, 80,
 * then 100 ms: 15 retries = 1.26 s of silence; NACK back-off of a receiver
 * without room does not count) fails: every packet it still holds is
 * dropped and reported.  RMA commands: a requester notification with
 * EXTOLL_NOTI_ERR_REQ (always written, whatever the notification spec);
 * VELO messages: the credit comes back and EXTOLL_VELO_DROPS of the page
 * counts the message; responses: dropped.  A command the target took whose
 * answer does not come within the same time fails the same way.
 * EXTOLL_CNT_TX_FAILED, _RMA_NO_ANSWER and _RMA_LATE_ANSWERS count them.
 * The stream starts afresh for the next packet.
 */

/* RO 64-bit counters, index n at EXTOLL_REG_COUNTER(n) */
#define EXTOLL_REG_COUNTER(n)		(0x100 + 8 * (n))
enum extoll_counter {
	EXTOLL_CNT_VELO_TX,		/* VELO messages accepted from requester pages */
	EXTOLL_CNT_VELO_TX_DROPPED,	/* refused (no credit, bad header, VPID disabled) or failed stream */
	EXTOLL_CNT_VELO_RX,		/* messages written into a receive ring */
	EXTOLL_CNT_VELO_RX_FULL,	/* deliveries pushed back: ring full (retried) */
	EXTOLL_CNT_VELO_RX_DROPPED,	/* dropped: VPID not enabled / invalid */
	EXTOLL_CNT_RMA_CMDS,		/* RMA commands accepted */
	EXTOLL_CNT_RMA_CMD_DROPPED,	/* commands stored while CMD_FREE was 0 */
	EXTOLL_CNT_RMA_ERRORS,		/* error notifications written */
	EXTOLL_CNT_RMA_RX_BYTES,	/* payload bytes written by put / get response */
	EXTOLL_CNT_NOTI_WRITTEN,	/* notifications written */
	EXTOLL_CNT_NOTI_FULL,		/* notification queue full (retried) */
	EXTOLL_CNT_ATU_FAULTS,		/* translations refused */
	EXTOLL_CNT_TX_PACKETS,		/* reliable packets sent (first transmission) */
	EXTOLL_CNT_RETRANSMITS,		/* packets sent again */
	EXTOLL_CNT_RX_PACKETS,		/* reliable packets accepted in order */
	EXTOLL_CNT_RX_DUPLICATES,	/* duplicates / out of order, dropped */
	EXTOLL_CNT_FABRIC_BAD,		/* malformed fabric packets */
	EXTOLL_CNT_DMA_ERRORS,		/* DMA reads/writes that failed */
	EXTOLL_CNT_PROT_REFUSED,	/* packets for a local VPID / ATU entry refused: protection ID differs */
	EXTOLL_CNT_TX_FAILED,		/* packets dropped: their stream spent its retransmission budget */
	EXTOLL_CNT_RMA_NO_ANSWER,	/* commands failed: the target took them, their answer never came */
	EXTOLL_CNT_RMA_LATE_ANSWERS,	/* answers to commands already reported failed: dropped */
	EXTOLL_NUM_COUNTERS
};

/* Names of the counters (sysfs "counters" of the driver, tests). */
#define EXTOLL_COUNTER_NAMES_INIT					\
	[EXTOLL_CNT_VELO_TX]		= "velo_tx",			\
	[EXTOLL_CNT_VELO_TX_DROPPED]	= "velo_tx_dropped",		\
	[EXTOLL_CNT_VELO_RX]		= "velo_rx",			\
	[EXTOLL_CNT_VELO_RX_FULL]	= "velo_rx_full",		\
	[EXTOLL_CNT_VELO_RX_DROPPED]	= "velo_rx_dropped",		\
	[EXTOLL_CNT_RMA_CMDS]		= "rma_cmds",			\
	[EXTOLL_CNT_RMA_CMD_DROPPED]	= "rma_cmd_dropped",		\
	[EXTOLL_CNT_RMA_ERRORS]		= "rma_errors",			\
	[EXTOLL_CNT_RMA_RX_BYTES]	= "rma_rx_bytes",		\
	[EXTOLL_CNT_NOTI_WRITTEN]	= "noti_written",		\
	[EXTOLL_CNT_NOTI_FULL]		= "noti_full",			\
	[EXTOLL_CNT_ATU_FAULTS]		= "atu_faults",			\
	[EXTOLL_CNT_TX_PACKETS]		= "tx_packets",			\
	[EXTOLL_CNT_RETRANSMITS]	= "retransmits",		\
	[EXTOLL_CNT_RX_PACKETS]		= "rx_packets",			\
	[EXTOLL_CNT_RX_DUPLICATES]	= "rx_duplicates",		\
	[EXTOLL_CNT_FABRIC_BAD]		= "fabric_bad",			\
	[EXTOLL_CNT_DMA_ERRORS]		= "dma_errors",			\
	[EXTOLL_CNT_PROT_REFUSED]	= "prot_refused",		\
	[EXTOLL_CNT_TX_FAILED]		= "tx_failed",			\
	[EXTOLL_CNT_RMA_NO_ANSWER]	= "rma_no_answer",		\
	[EXTOLL_CNT_RMA_LATE_ANSWERS]	= "rma_late_answers",

/* Per-VPID control block v at EXTOLL_REG_VPID(v) */
#define EXTOLL_REG_VPID(v)		(0x1000 + 0x40 * (v))
#define EXTOLL_VPID_CTRL		0x00	/* RW 32: EXTOLL_VPID_* enables */
#define EXTOLL_VPID_VELO_RX		0x1	/* receive ring valid: deliver messages */
#define EXTOLL_VPID_VELO_TX		0x2	/* VELO requester page accepts messages */
#define EXTOLL_VPID_RMA			0x4	/* RMA requester pages, notification queue, target side */
#define EXTOLL_VPID_RMA_PHYS		0x8	/* commands on non-TE pages (physical addressing) allowed */
#define EXTOLL_VPID_VELO_RING		0x08	/* RW 64: bus address of the receive ring (4 KiB aligned) */
#define EXTOLL_VPID_VELO_SLOTS		0x10	/* RW 32: ring slots, power of two in [MIN, MAX] */
#define EXTOLL_VPID_VELO_WP		0x14	/* RO 32: device write index (slot, modulo slots) */
#define EXTOLL_VPID_NOTIQ		0x18	/* RW 64: bus address of the notification queue (4 KiB aligned) */
#define EXTOLL_VPID_NOTIQ_ENTRIES	0x20	/* RW 32: entries, power of two in [MIN, MAX] */
#define EXTOLL_VPID_NOTIQ_WP		0x24	/* RO 32: device write index (entry) */
#define EXTOLL_VPID_VELO_RX_COUNT	0x28	/* RO 32: messages delivered to this VPID */
#define EXTOLL_VPID_RMA_PENDING		0x2c	/* RO 32: RMA commands of this VPID not finished */
#define EXTOLL_VPID_VELO_PROT		0x30	/* RW 32: protection ID of the VELO part (bits 0-15) */
#define EXTOLL_VPID_RMA_PROT		0x34	/* RW 32: protection ID of the RMA part (bits 0-15) */
#define EXTOLL_PROT_MASK		0xffff

/*
 * Protection IDs (Documentation/security.md).  Only the kernel writes the
 * two PROT registers (BAR0); both reset to 0.  The device stamps the
 * sending part's ID on every VELO message and RMA command it sends, and
 * on every response it generates for a command (the ID of the request it
 * answers).  The receiving device accepts a packet for VPID v only if the
 * packet's ID equals the ID of the part of v it is for (VELO_PROT for a
 * VELO message, RMA_PROT for puts, gets, immediate and notification puts,
 * locks and their responses) and, for every ATU entry it uses, the
 * entry's ID (bits 48-63) too; for local addresses the posting part's
 * RMA_PROT is the ID that must match.  A refused VELO message is dropped
 * (its credit is returned, EXTOLL_CNT_VELO_RX_DROPPED and
 * EXTOLL_CNT_PROT_REFUSED count it; VELO has no error path to the sender);
 * a refused RMA command ends with an error notification exactly as an ATU
 * fault does (responder / completer error bits), nothing is written or
 * read, and EXTOLL_CNT_PROT_REFUSED counts it at the refusing node.
 */

/* ---------------------------------------------------------------- 3. */

/* BAR2: VELO requester pages, page v at v * 4096 (v < NUM_VPIDS). */
#define EXTOLL_BAR_VELO			2
#define EXTOLL_BAR_VELO_SIZE		(EXTOLL_NUM_VPIDS * EXTOLL_HW_PAGE_SIZE)
#define EXTOLL_VELO_PAGE(v)		((v) * EXTOLL_HW_PAGE_SIZE)

#define EXTOLL_VELO_MAX_MSG		120	/* payload bytes */
#define EXTOLL_VELO_TX_CREDITS		256	/* messages in flight per VPID (spec 6: 256 outstanding) */
#define EXTOLL_VELO_HDR			0x000	/* WO 64: header word */
#define EXTOLL_VELO_DATA(k)		(0x008 + 8 * (k))	/* WO 64: payload quadword k (0..14) */
#define EXTOLL_VELO_WIN_SEND		0x400	/* WO 64: header word; payload from the send window */
#define EXTOLL_VELO_CREDITS		0x800	/* RO 64: messages the device accepts now */
#define EXTOLL_VELO_DROPS		0x808	/* RO 64: messages of this VPID refused or failed */
#define EXTOLL_VELO_FEATURES		0x810	/* RO 64: EXTOLL_VELO_F_* (0 on older devices) */
/*
 * Direct delivery: senders' NIs write into this VPID's ring by themselves
 * (Documentation/fabric.md section 9), so software waiting for a message
 * polls the ring's status words only; it need not read EXTOLL_VELO_CREDITS
 * to have the ring filled.
 */
#define EXTOLL_VELO_F_DIRECT		0x1

/*
 * Header word (spec 1.5, velo2_mod.h VELO2_REQUEST_HEADER):
 * bits 0-15 destination node, 16-23 destination VPID, 32-33 MTT,
 * 34 raise receive interrupt (ignored), 40-47 tag, 48-54 length in bytes.
 * Bits 24-31 must be 0 (multicast not supported: such messages are refused).
 */
#define EXTOLL_VELO_HDR_NODE(h)		((uint32_t)((h) & 0xffff))
#define EXTOLL_VELO_HDR_VPID(h)		((uint32_t)(((h) >> 16) & 0xff))
#define EXTOLL_VELO_HDR_MTT(h)		((uint32_t)(((h) >> 32) & 0x3))
#define EXTOLL_VELO_HDR_TAG(h)		((uint32_t)(((h) >> 40) & 0xff))
#define EXTOLL_VELO_HDR_LEN(h)		((uint32_t)(((h) >> 48) & 0x7f))
#define EXTOLL_VELO_HDR_MC_BITS(h)	((uint32_t)(((h) >> 24) & 0xff))
#define EXTOLL_VELO_MKHDR(node, vpid, mtt, tag, len)			\
	(((uint64_t)((node) & 0xffff)) | ((uint64_t)((vpid) & 0xff) << 16) |	\
	 ((uint64_t)((mtt) & 0x3) << 32) | ((uint64_t)((tag) & 0xff) << 40) |	\
	 ((uint64_t)((len) & 0x7f) << 48))

/*
 * Send rule: the message is sent when the header has been stored and every
 * payload quadword 0 .. ceil(len/8)-1 has been stored since the previous
 * message of this page, in any order (write-combining may reorder).  A
 * message with len 0 is sent by the header store alone.  Only 64-bit
 * stores count.  After the send, header and payload state are cleared.
 * Each sent message takes one credit; the credit comes back when the
 * destination has written the message into its ring (or definitively
 * refused it), or when the stream to the destination failed (retransmission
 * budget, section 2: the message is dropped).  A message completed while
 * EXTOLL_VELO_CREDITS reads 0, with len > 120, multicast bits, a node id >=
 * NUM_NODES, or while VELO_TX is disabled is dropped and counted in
 * EXTOLL_VELO_DROPS, and so is one dropped by a failed stream (the only
 * trace of it the sender can read: VELO has no completion).  Software
 * keeps a local credit count and re-reads EXTOLL_VELO_CREDITS when it
 * reaches 0.  Delivery is reliable and in order per (source node,
 * destination node) while the destination answers.
 */

/*
 * BAR3: VELO send windows (write-combining-like buffers), page v at
 * v * 4096: plain memory (RAM), so stores to it are not device accesses.
 * Send through the window: store the payload bytes 0 .. len-1 to offset 0
 * of the VPID's window page (any store size, any order), then store the
 * header word (same format as EXTOLL_VELO_HDR) to EXTOLL_VELO_WIN_SEND of
 * the requester page: that one 64-bit store is the doorbell; the device
 * takes the len payload bytes from the window at that moment (later
 * stores to the window do not change the message) and sends the message
 * under the same rules, credits and checks as above.  A doorbell discards
 * a message half-stored through EXTOLL_VELO_HDR/EXTOLL_VELO_DATA.  The
 * window is zeroed whenever VELO_TX of the VPID is switched on or off and
 * at reset, so a new owner never reads a previous owner's bytes.  Present
 * when BAR3 is at least EXTOLL_BAR_VELO_WIN_SIZE bytes (the driver reports
 * it in struct velo2_ioc_info flags, VELO2_INFO_SEND_WINDOW).
 */
#define EXTOLL_BAR_VELO_WIN		3
#define EXTOLL_BAR_VELO_WIN_SIZE	(EXTOLL_NUM_VPIDS * EXTOLL_HW_PAGE_SIZE)
#define EXTOLL_VELO_WIN_PAGE(v)		((v) * EXTOLL_HW_PAGE_SIZE)

/* ---------------------------------------------------------------- 4. */

#define EXTOLL_VELO_SLOT_SIZE		128
#define EXTOLL_VELO_STATUS_OFF		120	/* status word: last quadword of the slot */
#define EXTOLL_VELO_MIN_SLOTS		4
#define EXTOLL_VELO_MAX_SLOTS		65536

/*
 * Slot s is at ring + 128 * s.  The device writes the payload to bytes
 * 0 .. len-1 of the slot, then the status word (never 0: EOM is always
 * set).  A slot is free when its status word is 0: the device checks the
 * status of the slot at its write index before using it; a non-zero status
 * means the ring is full and the message is pushed back to the sender
 * (retried later, never lost).  Software consumes slots in ring order,
 * copies the payload, then stores 0 to the status word.
 *
 * Status word (spec 3.6): bits 0-15 source node, 16-23 source VPID (the
 * sender's VELO VPID), 32-33 MTT, 36 end of message (always 1), 37 error,
 * 40-47 tag, 48-54 length in bytes.
 */
#define EXTOLL_VELO_ST_NODE(s)		((uint32_t)((s) & 0xffff))
#define EXTOLL_VELO_ST_VPID(s)		((uint32_t)(((s) >> 16) & 0xff))
#define EXTOLL_VELO_ST_SRCID(s)		((uint32_t)((s) & 0xffffff))
#define EXTOLL_VELO_ST_MTT(s)		((uint32_t)(((s) >> 32) & 0x3))
#define EXTOLL_VELO_ST_EOM		(1ull << 36)
#define EXTOLL_VELO_ST_ERR		(1ull << 37)
#define EXTOLL_VELO_ST_TAG(s)		((uint32_t)(((s) >> 40) & 0xff))
#define EXTOLL_VELO_ST_LEN(s)		((uint32_t)(((s) >> 48) & 0x7f))

/* ---------------------------------------------------------------- 5. */

/*
 * BAR4: RMA requester pages.  Page i (0..31, = RMA2_Connection_Options
 * value) of VPID v at EXTOLL_RMA_PAGE(v, i): the 32 pages of one VPID are
 * contiguous (128 KiB), so one mmap covers them.
 */
#define EXTOLL_BAR_RMA			4
#define EXTOLL_RMA_PAGES_PER_VPID	32
#define EXTOLL_RMA_VPID_STRIDE		(EXTOLL_RMA_PAGES_PER_VPID * EXTOLL_HW_PAGE_SIZE)
#define EXTOLL_BAR_RMA_SIZE		(EXTOLL_NUM_VPIDS * EXTOLL_RMA_VPID_STRIDE)
#define EXTOLL_RMA_PAGE(v, i)		((v) * EXTOLL_RMA_VPID_STRIDE + (i) * EXTOLL_HW_PAGE_SIZE)

/* page index bits (RMA2_Connection_Options) */
#define EXTOLL_RMA_OPT_TC_MASK		0x3	/* traffic class: accepted, ignored */
#define EXTOLL_RMA_OPT_RRA		0x4	/* register-file access: not supported (error) */
#define EXTOLL_RMA_OPT_IRQ		0x8	/* noted in the notification mode bits, no interrupt */
#define EXTOLL_RMA_OPT_TE		0x10	/* NLA addressing through the ATU; clear = physical */

#define EXTOLL_RMA_CMD_WORD(k)		(8 * (k))	/* WO 64: command word k (0..2) */
#define EXTOLL_RMA_CMD_FREE		0x800	/* RO 64: commands the device accepts now (any page of the VPID) */
#define EXTOLL_RMA_CMD_DROPS		0x808	/* RO 64: commands of this VPID refused (stored while full) */
/*
 * RO 64: notifications the NI has written into this VPID's queue since the
 * device reset (any page of the VPID).  Software that finds its queue empty
 * reads it: the read is where the NI sees a waiting process (it takes in
 * pending fabric traffic at once, and a host-side model may park the
 * waiting vCPU).
 */
#define EXTOLL_RMA_NOTI_COUNT		0x810
/*
 * RO 64: EXTOLL_RMA_F_* (0 on older devices).  F_DIRECT: peers write
 * notifications into this VPID's queue themselves (an emulated NI's direct
 * delivery); software that finds the queue empty need not read NOTI_COUNT
 * on every look (it still does now and then: traffic that takes the NI's
 * other path is taken in by that read).
 */
#define EXTOLL_RMA_FEATURES		0x818
#define EXTOLL_RMA_F_DIRECT		0x1
#define EXTOLL_RMA_CMDQ_DEPTH		256	/* unfinished commands per VPID */

/*
 * A command is three 64-bit stores to words 0, 1, 2 of a requester page (any
 * order); it is taken when all three have been stored since the previous
 * command of that page.  Encoding = RMA2_Descriptor value[0..2] (spec 2.5.3):
 *
 * word0: bits 0-1 must be 3; 2-5 command (RMA2_Command); 8-15 destination
 *        VPID; 16-31 destination node; 32-34 notification spec (1 requester,
 *        2 responder, 4 completer); 35-38 command modifier (NTR accepted and
 *        ignored, MC/ERA/EWA refused); 40-62 count:
 *          put / get:        size - 1 (1 .. 8 MiB)
 *          immediate put:    bytes - 1 (bits 40-42, 1 .. 8 bytes)
 *          notification put: class (bits 40-47)
 * put (2 byte, 3 quadword): word1 = local source address, word2 = remote
 *        destination address
 * get (0 byte, 1 quadword): word1 = remote source address, word2 = local
 *        destination address
 * immediate put (6): word1 = remote destination address, word2 = value (the
 *        low-order count bytes are written, little endian)
 * notification put (5): word1 = 64-bit payload, word2 ignored
 * lock (12): count bit 0 (word0 bit 40) = lock pool (0 completer unit,
 *        1 responder unit); word1 = compare value (bits 32-63) | lock number
 *        (bits 0-23, < EXTOLL_RMA_LOCKS); word2 = add value (bits 32-63).
 *        Fetch-compare-and-add at the destination VPID: if lock <= compare
 *        (signed 32-bit), lock += add and result 1, else result 0.  Locks
 *        start at 0 for each owner of the VPID.  Notifications: requester
 *        (cmd 12, value = compare, result 0), responder at the target (cmd
 *        12), completer at the origin (cmd 13, EXTOLL_CMD_LOCK_RSP); word0 =
 *        EXTOLL_LOCK_W0(number, result, value after the operation).
 *
 * Addresses are NLAs on pages with EXTOLL_RMA_OPT_TE, bus addresses
 * otherwise (only when the VPID has EXTOLL_VPID_RMA_PHYS).  Quadword
 * variants need size % 8 == 0 (addresses may be unaligned; the copy is
 * byte exact).  The source of a put is read (snapshot) when the command is
 * taken, so the buffer may be reused at once.  Completed commands of one
 * VPID to one destination node are executed in order.
 */
#define EXTOLL_RMA_W0_MAGIC		0x3ull
#define EXTOLL_RMA_W0_CMD(w)		((uint32_t)(((w) >> 2) & 0xf))
#define EXTOLL_RMA_W0_VPID(w)		((uint32_t)(((w) >> 8) & 0xff))
#define EXTOLL_RMA_W0_NODE(w)		((uint32_t)(((w) >> 16) & 0xffff))
#define EXTOLL_RMA_W0_SPEC(w)		((uint32_t)(((w) >> 32) & 0x7))
#define EXTOLL_RMA_W0_MOD(w)		((uint32_t)(((w) >> 35) & 0xf))
#define EXTOLL_RMA_W0_COUNT(w)		((uint32_t)(((w) >> 40) & 0x7fffff))
#define EXTOLL_RMA_MKW0(cmd, node, vpid, spec, mod, count)		\
	(EXTOLL_RMA_W0_MAGIC | ((uint64_t)((cmd) & 0xf) << 2) |		\
	 ((uint64_t)((vpid) & 0xff) << 8) | ((uint64_t)((node) & 0xffff) << 16) | \
	 ((uint64_t)((spec) & 0x7) << 32) | ((uint64_t)((mod) & 0xf) << 35) |	\
	 ((uint64_t)((count) & 0x7fffff) << 40))

/* command codes (RMA2_Command) */
#define EXTOLL_CMD_BT_GET		0
#define EXTOLL_CMD_QW_GET		1
#define EXTOLL_CMD_BT_PUT		2
#define EXTOLL_CMD_QW_PUT		3
#define EXTOLL_CMD_NOTI_PUT		5
#define EXTOLL_CMD_IMM_PUT		6
#define EXTOLL_CMD_GET_BT_RSP		10
#define EXTOLL_CMD_GET_QW_RSP		11
#define EXTOLL_CMD_LOCK_REQ		12
#define EXTOLL_CMD_LOCK_RSP		13
#define EXTOLL_RMA_LOCKS		16384	/* per VPID and pool */
/* word0 of a lock notification (spec 4.1) */
#define EXTOLL_LOCK_W0(num, result, value)					\
	(((uint64_t)((num) & 0xffffff)) | ((uint64_t)((result) & 0xff) << 24) |	\
	 ((uint64_t)(uint32_t)(value) << 32))
/* ... and its decoders */
#define EXTOLL_LOCK_W0_NUM(w0)		((uint32_t)((w0) & 0xffffff))
#define EXTOLL_LOCK_W0_RESULT(w0)	((uint8_t)(((w0) >> 24) & 0xff))
#define EXTOLL_LOCK_W0_VALUE(w0)	((uint32_t)((w0) >> 32))
#define EXTOLL_RMA_MAX_SIZE		(1u << 23)

/* modifier bits (RMA2_Command_Modifier) */
#define EXTOLL_MOD_MC			0x1
#define EXTOLL_MOD_NTR			0x2
#define EXTOLL_MOD_ERA			0x4
#define EXTOLL_MOD_EWA			0x8

/* ---------------------------------------------------------------- 6. */

#define EXTOLL_NOTI_SIZE		16
#define EXTOLL_NOTIQ_MIN_ENTRIES	16
#define EXTOLL_NOTIQ_MAX_ENTRIES	(1u << 20)

/*
 * Entry e at notiq + 16 * e: word0 then word1 (= RMA2_Notification).  The
 * device writes word0, then word1 (never 0).  An entry is free when word1
 * is 0: the device checks the entry at its write index before writing; a
 * full queue pushes back (the packet that needs the notification is
 * retried; local notifications wait inside the device).  The consumer
 * reads in ring order and stores 0 to word1 when done.  No read pointer
 * is needed by the device.
 *
 * word1 (spec 4.1): bits 0-22 size - 1 (put/get/immediate put: size of the
 * last fragment); 0-7 class (notification put); 23-30 remote VPID; 32-47
 * remote node; 48-50 type (1 requester, 2 responder, 4 completer); 51-54
 * command; 55-60 mode (RMA2_Notification_Modifier: 2 IRQ page, 4 TE page);
 * 61-63 error (1 requester, 2 responder, 4 completer unit).
 * word0: address (put/get: local address of the last fragment on the node
 * that receives the notification; immediate put requester: the value;
 * notification put: the payload).
 */
#define EXTOLL_NOTI_W1(size_or_class, rvpid, rnode, type, cmd, mode, err)	\
	(((uint64_t)((size_or_class) & 0x7fffff)) |			\
	 ((uint64_t)((rvpid) & 0xff) << 23) |				\
	 ((uint64_t)((rnode) & 0xffff) << 32) |				\
	 ((uint64_t)((type) & 0x7) << 48) |				\
	 ((uint64_t)((cmd) & 0xf) << 51) |				\
	 ((uint64_t)((mode) & 0x3f) << 55) |				\
	 ((uint64_t)((err) & 0x7) << 61))
/* ... and its decoders, one per field */
#define EXTOLL_NOTI_W1_SIZE(w1)		((uint32_t)((w1) & 0x7fffff))	/* size - 1 */
#define EXTOLL_NOTI_W1_CLASS(w1)	((uint32_t)((w1) & 0xff))
#define EXTOLL_NOTI_W1_RVPID(w1)	((uint32_t)(((w1) >> 23) & 0xff))
#define EXTOLL_NOTI_W1_RNODE(w1)	((uint32_t)(((w1) >> 32) & 0xffff))
#define EXTOLL_NOTI_W1_TYPE(w1)		((uint32_t)(((w1) >> 48) & 0x7))
#define EXTOLL_NOTI_W1_CMD(w1)		((uint32_t)(((w1) >> 51) & 0xf))
#define EXTOLL_NOTI_W1_MODE(w1)		((uint32_t)(((w1) >> 55) & 0x3f))
#define EXTOLL_NOTI_W1_ERR(w1)		((uint32_t)(((w1) >> 61) & 0x7))
#define EXTOLL_NOTI_REQUESTER		1
#define EXTOLL_NOTI_RESPONDER		2
#define EXTOLL_NOTI_COMPLETER		4
#define EXTOLL_NOTI_MODE_IRQ		2
#define EXTOLL_NOTI_MODE_TE		4
#define EXTOLL_NOTI_ERR_REQ		1
#define EXTOLL_NOTI_ERR_RESP		2
#define EXTOLL_NOTI_ERR_CMPL		4

/* ---------------------------------------------------------------- 7. */

/*
 * ATU: one flat table of 64-bit entries at EXTOLL_REG_ATU_BASE, entry n
 * translates NLA page n (NLA bits 12 and up); NLA bits 0-11 are the offset
 * in the page.  NLAs at or above ATU_ENTRIES * 4096 fault.  The driver
 * never makes entry 0 valid (NLA 0 is "no region").  The device reads the
 * entry for every page it touches and caches nothing: an entry cleared by
 * the driver is not used by any access that starts after the driver's
 * next read of any BAR0 register.
 *
 * entry: bit 0 valid, bit 1 readable (put source, get responder source),
 * bit 2 writable (put/immediate put destination, get destination),
 * bits 4-11 owner VPID (must equal the VPID on whose behalf the device
 * accesses: the posting VPID for local addresses, the destination VPID of
 * the command for remote ones), bits 12-47 bus address of the 4 KiB page,
 * bits 48-63 protection ID (must equal the ID of the access, see 2).
 */
#define EXTOLL_ATU_MAX_ENTRIES		(1u << 22)	/* 16 GiB of NLA space */
#define EXTOLL_ATU_VALID		0x1ull
#define EXTOLL_ATU_READ			0x2ull
#define EXTOLL_ATU_WRITE		0x4ull
#define EXTOLL_ATU_VPID(e)		((uint32_t)(((e) >> 4) & 0xff))
#define EXTOLL_ATU_ADDR(e)		((e) & 0x0000fffffffff000ull)
#define EXTOLL_ATU_PROT(e)		((uint32_t)(((e) >> 48) & 0xffff))
#define EXTOLL_ATU_ADDR_MAX		(1ull << 48)	/* bus addresses must be below */
#define EXTOLL_ATU_ENTRY(addr, vpid, perm, prot)			\
	(((uint64_t)(addr) & 0x0000fffffffff000ull) |			\
	 ((uint64_t)((prot) & 0xffff) << 48) |				\
	 ((uint64_t)((vpid) & 0xff) << 4) |				\
	 ((uint64_t)(perm) & 0x6) | EXTOLL_ATU_VALID)

#endif /* _UAPI_EXTOLL_HW_H */
