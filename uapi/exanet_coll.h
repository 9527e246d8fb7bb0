/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * ExaNet NI: hardware ABI of the collective (allreduce) unit, shared by
 * the QEMU device model, the kernel driver, libexanet and the tests.
 *
 * Contents:
 *   1. Groups (privileged registers in BAR0)
 *   2. BAR5: the user-mappable collective pages, descriptor, status
 *   3. Operations, datatypes, errors, limits
 *   4. Character device ioctls
 *
 * Documentation/exanet/collectives.md explains the algorithm, the
 * ordering promise and the failure rules.
 */
#ifndef _UAPI_EXANET_COLL_H
#define _UAPI_EXANET_COLL_H

#include <linux/types.h>
#include <linux/ioctl.h>
#include "exanet.h"
#include "exanet_rdma.h"

/* ---------------------------------------------------------------- 1. */

/*
 * A group is a slot g (0..EXANET_COLL_GROUPS-1) of the NI: the member
 * table (member rank -> node), this member's rank, a 32-bit key that all
 * members agree on, the PDID of the job and the RDMA page whose owner
 * drives it.  Packets of a collective name the group by (PDID, key,
 * destination member rank); the receiving NI takes them only for an
 * enabled group with that PDID, key and rank, and only from the node its
 * member table lists for the sending member.  The kernel writes groups;
 * user space never sees these registers.
 *
 * Program a group: SEL = g, then PDID, PAGE, KEY, SIZE, MYRANK, the
 * member table (MIDX = 0, then SIZE writes of MNODE: each write stores
 * members[MIDX] and increments MIDX), then CTRL = EXANET_COLL_G_ENABLE.
 * Enabling starts the operation sequence at 1.  CTRL = 0 disables the
 * group: an operation in progress ends with EXANET_COLL_E_ABORTED and the
 * group's state (buffers, early packets) is dropped.
 */
#define EXANET_REG_COLL_CAPS		0x3800	/* RO 32: see EXANET_COLL_CAPS_* */
#define EXANET_COLL_CAPS_GROUPS(c)	((c) & 0xff)
#define EXANET_COLL_CAPS_MEMBERS(c)	(((c) >> 8) & 0xffff)
#define EXANET_REG_COLL_SEL		0x3804	/* RW 32: group of the G_ registers */
#define EXANET_REG_COLL_G_CTRL		0x3808	/* RW 32: EXANET_COLL_G_ENABLE */
#define EXANET_COLL_G_ENABLE		0x1
#define EXANET_REG_COLL_G_PDID		0x380c	/* RW 32 */
#define EXANET_REG_COLL_G_PAGE		0x3810	/* RW 32: owner RDMA page (0..15) */
#define EXANET_REG_COLL_G_KEY		0x3814	/* RW 32 */
#define EXANET_REG_COLL_G_SIZE		0x3818	/* RW 32: members, 1..MAX_MEMBERS */
#define EXANET_REG_COLL_G_MYRANK	0x381c	/* RW 32: < SIZE */
#define EXANET_REG_COLL_G_MIDX		0x3820	/* RW 32: member table index */
#define EXANET_REG_COLL_G_MNODE		0x3824	/* RW 32: members[MIDX++] = node */
#define EXANET_REG_COLL_G_STATE		0x3828	/* RO 32: EXANET_COLL_IDLE.. of the
						 * group's current operation */

/* RO 64-bit counters, index n at EXANET_REG_COLL_COUNTER(n); cleared by reset */
#define EXANET_REG_COLL_COUNTER(n)	(0x3900 + 8 * (n))
enum exanet_coll_counter {
	EXANET_CCNT_OPS,		/* operations started */
	EXANET_CCNT_DONE,		/* operations completed DONE */
	EXANET_CCNT_ERRORS,		/* operations completed ERROR (any code) */
	EXANET_CCNT_TX_BLOCKS,		/* blocks sent (first transmission) */
	EXANET_CCNT_TX_BYTES,		/* payload bytes sent (first transmission) */
	EXANET_CCNT_RETRANSMITS,	/* blocks sent again after a timeout */
	EXANET_CCNT_RX_BLOCKS,		/* partner blocks combined / taken */
	EXANET_CCNT_RX_BYTES,
	EXANET_CCNT_RX_DUPLICATES,	/* blocks received again: re-ACKed, dropped */
	EXANET_CCNT_RX_EARLY,		/* blocks kept for a step not reached yet */
	EXANET_CCNT_RX_CORRUPT,		/* blocks with a bad payload checksum */
	EXANET_CCNT_RX_REFUSED,		/* no such group (PDID, key, rank) here,
					 * or the sender is not that member */
	EXANET_CCNT_RX_BAD,		/* malformed / out of protocol packets */
	EXANET_CCNT_PROBES,		/* liveness probes sent */
	EXANET_CCNT_TIMEOUTS,		/* operations ended in TIMEOUT */
	EXANET_COLL_NUM_COUNTERS
};

/* ---------------------------------------------------------------- 2. */

/*
 * BAR5: EXANET_RDMA_PAGES collective pages of 4 KiB; collective page p
 * belongs to the owner of RDMA page p (same PDID and DMA rank: every DMA
 * of the unit goes through that rank's context, with user VAs, like RDMA).
 * Slot g (64 bytes at g * EXANET_COLL_SLOT_STRIDE) is group g; the NI
 * ignores stores to, and reads 0 from, slots of groups that are not
 * enabled and owned by page p.
 *
 * Writing a slot stages the descriptor; the store to EXANET_COLL_D_CTRL
 * is the trigger.  Reading a slot returns the status view.
 */
#define EXANET_BAR_COLL			5
#define EXANET_COLL_GROUPS		64
#define EXANET_COLL_PAGE_SIZE		4096
#define EXANET_BAR_COLL_SIZE		(EXANET_RDMA_PAGES * EXANET_COLL_PAGE_SIZE)
#define EXANET_COLL_SLOT_STRIDE		64

struct exanet_coll_desc {
	__u64 src_va;		/* count elements in the caller's memory */
	__u64 dst_va;		/* result, may equal src_va (in place) */
	__u64 count;		/* elements, 0..EXANET_COLL_MAX_LEN / size */
	__u64 type;		/* EXANET_COLL_TYPE(dtype, op) */
	__u64 lcomp_va;		/* struct exanet_rdma_notif, or 0 */
	__u64 tag;		/* copied into the completion record */
	__u64 reserved;		/* must be 0 */
	__u64 ctrl;		/* trigger; flags, must be 0 */
};
#define EXANET_COLL_D_SRC_VA		0x00
#define EXANET_COLL_D_DST_VA		0x08
#define EXANET_COLL_D_COUNT		0x10
#define EXANET_COLL_D_TYPE		0x18
#define EXANET_COLL_D_LCOMP_VA		0x20
#define EXANET_COLL_D_TAG		0x28
#define EXANET_COLL_D_CTRL		0x38
#define EXANET_COLL_TYPE(dtype, op)	((__u64)(dtype) | (__u64)(op) << 8)
#define EXANET_COLL_TYPE_DTYPE(t)	((unsigned int)((t) & 0xff))
#define EXANET_COLL_TYPE_OP(t)		((unsigned int)(((t) >> 8) & 0xff))

/* Status view (reads): state 0..3, error 8..15, operation sequence 32..63 */
#define EXANET_COLL_S_STATUS		0x00	/* RO 64 */
#define EXANET_COLL_S_DONE_BLOCKS	0x08	/* RO 64: result blocks written */
#define EXANET_COLL_ST_STATE(s)		((unsigned int)((s) & 0xf))
#define EXANET_COLL_ST_ERROR(s)		((unsigned int)(((s) >> 8) & 0xff))
#define EXANET_COLL_ST_SEQ(s)		((__u32)((s) >> 32))
enum exanet_coll_state {
	EXANET_COLL_IDLE = 0,		/* nothing started since enable */
	EXANET_COLL_ONGOING = 1,	/* descriptor slot must not be written */
	EXANET_COLL_DONE = 2,		/* result written (and completion record) */
	EXANET_COLL_ERROR = 3,		/* see the error code */
};

/*
 * Completion record: struct exanet_rdma_notif at lcomp_va with
 * op = EXANET_RDMA_OP_COLL, length = bytes of the vector, node = this
 * node, rank = this member's rank modulo 256, page = the page, chan = the
 * group, flags = EXANET_RDMA_N_VALID | EXANET_RDMA_N_COMPLETION; an
 * interrupt of the page's rank (EXANET_CTX_IRQ) follows if armed.
 */
#define EXANET_RDMA_OP_COLL		3

/* ---------------------------------------------------------------- 3. */

enum exanet_coll_op {
	EXANET_COLL_SUM = 0,
	EXANET_COLL_MIN = 1,
	EXANET_COLL_MAX = 2,
	EXANET_COLL_BAND = 3,		/* bitwise: integer types only */
	EXANET_COLL_BOR = 4,
	EXANET_COLL_BXOR = 5,
	EXANET_COLL_NUM_OPS
};

enum exanet_coll_dtype {
	EXANET_COLL_INT32 = 0,
	EXANET_COLL_INT64 = 1,
	EXANET_COLL_UINT64 = 2,
	EXANET_COLL_FLOAT = 3,
	EXANET_COLL_DOUBLE = 4,
	EXANET_COLL_UINT32 = 5,
	EXANET_COLL_NUM_DTYPES
};

/* Bytes of one element of dtype, 0 for an unknown one. */
#define EXANET_COLL_DTYPE_SIZE(d)					\
	((d) == EXANET_COLL_INT32 || (d) == EXANET_COLL_UINT32 ||	\
	 (d) == EXANET_COLL_FLOAT ? 4u :				\
	 (d) == EXANET_COLL_INT64 || (d) == EXANET_COLL_UINT64 ||	\
	 (d) == EXANET_COLL_DOUBLE ? 8u : 0u)

/* Whether the unit takes (dtype, op): bitwise ops on integer types only. */
#define EXANET_COLL_TYPE_VALID(d, op)					\
	(EXANET_COLL_DTYPE_SIZE(d) && (op) < EXANET_COLL_NUM_OPS &&	\
	 ((op) < EXANET_COLL_BAND ||					\
	  ((d) != EXANET_COLL_FLOAT && (d) != EXANET_COLL_DOUBLE)))

enum exanet_coll_error {
	EXANET_COLL_E_NONE = 0,
	EXANET_COLL_E_BAD_DESC = 1,	/* op/dtype/count/flags/VA range */
	EXANET_COLL_E_LOCAL_DMA = 2,	/* source read / result write failed */
	EXANET_COLL_E_MISMATCH = 3,	/* members started different operations */
	EXANET_COLL_E_NO_GROUP = 4,	/* a member's NI has no such group
					 * (process gone, another PDID) */
	EXANET_COLL_E_TIMEOUT = 5,	/* a member's NI stopped answering */
	EXANET_COLL_E_PEER = 6,		/* a member's operation failed */
	EXANET_COLL_E_ABORTED = 7,	/* group disabled / device reset */
	EXANET_COLL_E_FAILED = 8,	/* refused: an earlier operation failed;
					 * re-create the group */
	EXANET_COLL_E_NOMEM = 9,	/* the NI ran out of buffer memory */
};

/* Wire unit: a longer vector goes through the steps block by block. */
#define EXANET_COLL_BLOCK_SIZE		4096
#define EXANET_COLL_MAX_LEN		(1u << 20)	/* bytes per operation */
#define EXANET_COLL_MAX_MEMBERS		1024

/* ---------------------------------------------------------------- 4. */

/*
 * The collective unit of an RDMA page (EXANET_IOC_RDMA_ALLOC): BIND
 * returns the mmap offset of its collective page.  GROUP_CREATE programs a
 * free group slot of the NI with the caller's PDID and page; it fails with
 * -EINVAL (size 0 or > EXANET_COLL_MAX_MEMBERS, my_rank >= size,
 * members[my_rank] not this node, a node >= the fabric's node count,
 * page not held, flags), -EEXIST (this NI already has a group with the
 * same PDID, key and my_rank), -ENOSPC (no free slot), -EFAULT.  The
 * groups of a file are destroyed when it is closed or its page freed.
 */
struct exanet_coll_bind {
	__u32 page;		/* in: an RDMA page the file holds */
	__u32 flags;		/* in: must be 0 */
	__u64 mmap_offset;	/* out: map mmap_size bytes, shared, read/write */
	__u64 mmap_size;	/* out */
};

struct exanet_coll_group_create {
	__u32 page;		/* in: RDMA page that drives the group */
	__u32 key;		/* in: the same on every member */
	__u32 size;		/* in: members */
	__u32 my_rank;		/* in: this member */
	__u64 members;		/* in: user pointer to size __u32 node ids */
	__u32 flags;		/* in: must be 0 */
	__u32 group;		/* out: slot, the descriptor slot on the page */
};

#define EXANET_IOC_COLL_BIND		_IOWR(EXANET_IOC_MAGIC, 0x20, struct exanet_coll_bind)
#define EXANET_IOC_COLL_GROUP_CREATE	_IOWR(EXANET_IOC_MAGIC, 0x21, \
					      struct exanet_coll_group_create)
#define EXANET_IOC_COLL_GROUP_DESTROY	_IOW(EXANET_IOC_MAGIC, 0x22, __u32)

#define EXANET_MMAP_COLL		5	/* EXANET_MMAP_OFFSET(kind, page) */

#endif /* _UAPI_EXANET_COLL_H */
