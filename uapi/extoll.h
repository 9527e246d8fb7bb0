/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * EXTOLL NIC: the kernel <-> user-space ABI of the extoll driver, used by
 * librma2 and libvelo2.  The hardware contract (registers, ATU, command and
 * queue formats) is uapi/extoll_hw.h; this header only defines what the
 * character devices offer:
 *
 *   /dev/extoll/rma2   one open() = one RMA2 endpoint (one RMA VPID)
 *   /dev/extoll/velo2  one open() = one VELO2 endpoint (one VELO VPID)
 *
 * Ioctl numbers follow the original driver headers (rma2_ioctl.h,
 * velo2_ioctl.h): magic 'k', same numbers, same calling convention:
 *   - "GET" ioctls (and VELO2 "IOCG" ioctls) take a pointer to a __u64
 *     (VELO2_IOCG_SET_* read the new value from that __u64);
 *   - RMA2 "SET" ioctls and VELO2 "IOCT" ioctls take the value itself as
 *     the ioctl argument.
 * Errors are returned as -1/errno: EINVAL (bad value), EFAULT (bad
 * pointer), EBUSY (open: every VPID of the device is in use; ioctl: the
 * state cannot change any more, e.g. the queue is mapped), ENOSPC (no
 * free ATU entries), ENOMEM (RLIMIT_MEMLOCK, the device's queue budget or
 * no memory), EACCES (open: the caller has no protection domain, see
 * uapi/exa_domain.h; ioctl: descriptor used by another process than the
 * opener), EDQUOT (the caller's user holds its share of the resource,
 * module parameter max_user_percent), EAGAIN (the caller's rdma cgroup
 * is at its rdma.max), EPERM (changing the protection ID without
 * CAP_NET_ADMIN), ENODEV (device removed; mapped pages then raise
 * SIGBUS), ENOTTY (unknown ioctl).
 *
 * Protection: every endpoint carries the 16-bit protection domain of its
 * opener (uapi/exa_domain.h, the same value as the ExaNet PDID), set by the
 * kernel at open and stamped by the NIC on everything the endpoint sends;
 * the target NIC refuses traffic from another domain (Documentation/
 * security.md).  The PROTDESC ioctls read it; setting it to another value
 * needs CAP_NET_ADMIN (for an unprivileged caller, setting its own value
 * is accepted and changes nothing).
 *
 * All sizes and offsets are in bytes; pages are 4 KiB (EXTOLL_PAGE_SIZE).
 */
#ifndef _UAPI_EXTOLL_H
#define _UAPI_EXTOLL_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define EXTOLL_ABI_VERSION		1
#define EXTOLL_PAGE_SIZE		4096UL

#define EXTOLL_DEV_RMA2			"/dev/extoll/rma2"
#define EXTOLL_DEV_VELO2		"/dev/extoll/velo2"

/* ------------------------------------------------------------ RMA2 */

#define RMA2_IOC_MAGIC			'k'

/* Notification queue: bytes, a multiple of 4 KiB, power of two. */
#define RMA2_NOTIQ_DEFAULT_SIZE		(64 * 1024)
#define RMA2_NOTIQ_MIN_SIZE		EXTOLL_PAGE_SIZE
#define RMA2_NOTIQ_MAX_SIZE		(4 * 1024 * 1024)
#define RMA2_NOTI_SIZE			16	/* bytes per notification */

/*
 * Registration request/answer (RMA2_IOCTL_REGISTER_REGION,
 * RMA2_IOCTL_UNREGISTER_REGION).  The fields mirror RMA2_Region
 * (rma2_region.h) in fixed-width types, so the library copies them
 * one by one.
 *
 * REGISTER:   in: addr, len (1 .. RMA2_REGION_MAX_BYTES), flags
 *             out: start = addr & ~4095, offset = addr & 4095,
 *                  count = pages, size = count * 4096, nla (never 0,
 *                  4 KiB aligned; NLA of byte p is nla + (p - start)).
 * UNREGISTER: in: nla and size as returned by REGISTER (other fields
 *             ignored).  -EINVAL if no registration of this endpoint has
 *             exactly that nla and size.
 */
struct rma2_ioc_region {
	__u64 addr;
	__u64 len;
	__u64 start;
	__u64 nla;
	__u64 size;
	__u32 count;
	__u32 offset;
	__u32 flags;		/* RMA2_REGION_* */
	__u32 reserved;		/* must be 0 */
};

#define RMA2_REGION_READONLY		0x1	/* remote writes are refused */
#define RMA2_REGION_FLAGS		RMA2_REGION_READONLY
#define RMA2_REGION_MAX_BYTES		(1ULL << 32)

/*
 * Endpoint information in one call (new; not in the original driver).
 * All offsets are mmap offsets on the same file descriptor.
 */
struct rma2_ioc_info {
	__u32 abi_version;	/* EXTOLL_ABI_VERSION */
	__u32 nodeid;
	__u32 vpid;
	__u32 max_nodes;	/* RMA2_IOCTL_GET_MAXNODEID */
	__u32 max_vpids;	/* VPIDs implemented by the device */
	__u32 noti_size;	/* bytes per notification */
	__u64 notiq_size;	/* current queue bytes */
	__u64 req_offset;	/* RMA2_MMAP_REQ_OFFSET */
	__u64 req_size;		/* RMA2_MMAP_REQ_SIZE */
	__u64 state_offset;	/* RMA2_MMAP_STATE_OFFSET */
	__u64 notiq_offset;	/* RMA2_MMAP_NOTIQ_OFFSET (RP page first) */
	__u64 reserved[4];
};

#define RMA2_IOCTL_GET_NOTIQ_SIZE		_IOR(RMA2_IOC_MAGIC, 0, __u64)
#define RMA2_IOCTL_SET_NOTIQ_SIZE		_IOW(RMA2_IOC_MAGIC, 1, __u32)
#define RMA2_IOCTL_SET_NOTIQ_SEGMENT_SIZE	_IOW(RMA2_IOC_MAGIC, 2, __u32)
#define RMA2_IOCTL_GET_NOTIQ_SEGMENT_SIZE	_IOR(RMA2_IOC_MAGIC, 3, __u64)
#define RMA2_IOCTL_SET_NOTIQ_WP			_IOW(RMA2_IOC_MAGIC, 4, __u32)
#define RMA2_IOCTL_SET_NOTIQ_RP			_IOW(RMA2_IOC_MAGIC, 5, __u32)
#define RMA2_IOCTL_GET_NOTIQ_WP			_IOR(RMA2_IOC_MAGIC, 6, __u64)
#define RMA2_IOCTL_GET_NOTIQ_RP			_IOR(RMA2_IOC_MAGIC, 7, __u64)
#define RMA2_IOCTL_GET_NODEID			_IOR(RMA2_IOC_MAGIC, 8, __u64)
#define RMA2_IOCTL_GET_VPID			_IOR(RMA2_IOC_MAGIC, 9, __u64)
#define RMA2_IOCTL_REGISTER_REGION		_IOWR(RMA2_IOC_MAGIC, 10, struct rma2_ioc_region)
#define RMA2_IOCTL_UNREGISTER_REGION		_IOW(RMA2_IOC_MAGIC, 11, struct rma2_ioc_region)
#define RMA2_IOCTL_GET_MAXNODEID		_IOR(RMA2_IOC_MAGIC, 12, __u64)
#define RMA2_IOCTL_GET_MAXVPID			_IOR(RMA2_IOC_MAGIC, 13, __u64)
#define RMA2_IOCTL_SET_PROTDESC			_IOW(RMA2_IOC_MAGIC, 20, __u32)	/* value: domain */
#define RMA2_IOCTL_GET_PROTDESC			_IOR(RMA2_IOC_MAGIC, 21, __u64)
#define RMA2_IOCTL_GET_INFO			_IOR(RMA2_IOC_MAGIC, 32, struct rma2_ioc_info)

/*
 * GET_MAXNODEID answers RMA2_NODES (original constant, = the 16-bit node
 * id space); GET_MAXVPID answers the VPIDs the device implements (<=
 * RMA2_VPIDS, the 8-bit VPID space; 64 on the emulated NIC).
 */
#define RMA2_NODES				65536
#define RMA2_VPIDS				256

/*
 * mmap layout of /dev/extoll/rma2 (spec 1.4), 4 KiB pages.  A mapping
 * must be MAP_SHARED and lie entirely inside one of the two areas:
 *
 *   MMIO area  [0, RMA2_MMAP_NOTIQ_OFFSET), mapped uncached
 *     page i (0..31)  requester page i of this VPID (extoll_hw.h 5)
 *     page 32         WC-buffer state page of the original layout: an
 *                     alias of requester page 0, whose EXTOLL_RMA_CMD_FREE /
 *                     EXTOLL_RMA_CMD_DROPS registers are the flow-control
 *                     state of the VPID
 *   queue area [RMA2_MMAP_NOTIQ_OFFSET, + 4096 + notiq_size), read/write
 *     first page      read-pointer page: word 0 (__u64) holds the
 *                     consumer's read index (entries) for GET_NOTIQ_RP /
 *                     SET_NOTIQ_RP; the device does not read it
 *     then            the notification queue, notiq_size bytes of 16-byte
 *                     entries (extoll_hw.h 6): present when word1 != 0,
 *                     the consumer zeroes word1 to free an entry.
 *
 * The first mmap of the queue area allocates the queue with the size then
 * set and enables the RMA part of the VPID (requester pages, notifications
 * and the target side: puts/gets addressed to this VPID); before that,
 * commands and incoming requests for the VPID are refused.  Afterwards
 * SET_NOTIQ_SIZE fails with EBUSY (unless the size is unchanged).
 * Mappings are never inherited by fork() children.
 */
#define RMA2_REQ_PAGES				32
#define RMA2_MMAP_REQ_OFFSET			0
#define RMA2_MMAP_REQ_SIZE			(RMA2_REQ_PAGES * EXTOLL_PAGE_SIZE)
#define RMA2_MMAP_STATE_OFFSET			RMA2_MMAP_REQ_SIZE
#define RMA2_MMAP_NOTIQ_OFFSET			(RMA2_MMAP_STATE_OFFSET + EXTOLL_PAGE_SIZE)
#define RMA2_MMAP_NOTIQ_LEN(notiq_size)		(EXTOLL_PAGE_SIZE + (notiq_size))

/* ------------------------------------------------------------ VELO2 */

#define VELO2_IOC_MAGIC			'k'

/* Receive mailbox: bytes, a multiple of 4 KiB, power of two. */
#define VELO2_MBOX_DEFAULT_SIZE		(64 * 1024)
#define VELO2_MBOX_MIN_SIZE		EXTOLL_PAGE_SIZE
#define VELO2_MBOX_MAX_SIZE		(4 * 1024 * 1024)

#define VELO2_IOCG_GET_RP		_IOR(VELO2_IOC_MAGIC, 0, __u64)
#define VELO2_IOCT_SET_RP		_IO(VELO2_IOC_MAGIC, 1)
#define VELO2_IOCG_GET_WP		_IOR(VELO2_IOC_MAGIC, 2, __u64)
#define VELO2_IOCT_SET_WP		_IO(VELO2_IOC_MAGIC, 3)
#define VELO2_IOCG_GET_VPID		_IOR(VELO2_IOC_MAGIC, 4, __u64)
#define VELO2_IOCG_GET_MBOX_SIZE	_IOR(VELO2_IOC_MAGIC, 5, __u64)
#define VELO2_IOCG_SET_MBOX_SIZE	_IOW(VELO2_IOC_MAGIC, 6, __u64)
#define VELO2_IOCG_GET_SEGMENT_SIZE	_IOR(VELO2_IOC_MAGIC, 7, __u64)
#define VELO2_IOCG_SET_SEGMENT_SIZE	_IOW(VELO2_IOC_MAGIC, 8, __u64)
#define VELO2_IOCG_GET_NODEID		_IOR(VELO2_IOC_MAGIC, 12, __u64)
/* The VELO part has one protection ID for sending and receiving. */
#define VELO2_IOCG_SET_TX_PROTDESC	_IOW(VELO2_IOC_MAGIC, 13, __u64)
#define VELO2_IOCG_GET_TX_PROTDESC	_IOR(VELO2_IOC_MAGIC, 14, __u64)
#define VELO2_IOCG_SET_RX_PROTDESC	_IOW(VELO2_IOC_MAGIC, 15, __u64)
#define VELO2_IOCG_GET_RX_PROTDESC	_IOR(VELO2_IOC_MAGIC, 16, __u64)
#define VELO2_IOCG_GET_PROCNUM		_IOR(VELO2_IOC_MAGIC, 19, __u64)
#define VELO2_IOCG_GET_NODENUM		_IOR(VELO2_IOC_MAGIC, 20, __u64)
#define VELO2_IOCG_GET_SLOT_SIZE	_IOR(VELO2_IOC_MAGIC, 21, __u64)
#define VELO2_IOCG_GET_INFO		_IOR(VELO2_IOC_MAGIC, 32, struct velo2_ioc_info)

/*
 * GET_PROCNUM answers the VELO VPIDs the device implements (original: 256
 * = VELO2_PROCNUM), GET_NODENUM the nodes on the fabric (original: 1024).
 * GET_SLOT_SIZE answers EXTOLL_VELO_SLOT_SIZE (128).
 */
#define VELO2_PROCNUM			256
#define VELO2_NODENUM			1024

struct velo2_ioc_info {
	__u32 abi_version;	/* EXTOLL_ABI_VERSION */
	__u32 nodeid;
	__u32 vpid;
	__u32 max_vpids;	/* VPIDs implemented by the device */
	__u32 slot_size;	/* bytes per mailbox slot */
	__u32 flags;		/* VELO2_INFO_* (0 from older drivers) */
	__u64 mbox_size;	/* current mailbox bytes */
	__u64 req_offset;	/* VELO2_MMAP_REQ_OFFSET */
	__u64 state_offset;	/* VELO2_MMAP_STATE_OFFSET */
	__u64 mbox_offset;	/* VELO2_MMAP_MBOX_OFFSET (RP page first) */
	__u64 reserved[4];
};

/*
 * mmap layout of /dev/extoll/velo2 (spec 1.5), MAP_SHARED, each mapping
 * inside one area:
 *   MMIO area  page 0: VELO requester page of this VPID (extoll_hw.h 3),
 *                      accepting messages from open() on
 *              page 1: WC-buffer state page of the original layout:
 *                      the VPID's VELO send window (extoll_hw.h, BAR3)
 *                      when info.flags has VELO2_INFO_SEND_WINDOW, else
 *                      an alias of page 0 (EXTOLL_VELO_CREDITS/DROPS at
 *                      0x800)
 *   mbox area  at VELO2_MMAP_MBOX_OFFSET: read-pointer page (word 0 =
 *              consumer read index in slots, for GET_RP/SET_RP; the
 *              device does not read it), then mbox_size bytes of
 *              EXTOLL_VELO_SLOT_SIZE slots (extoll_hw.h 4).  The first
 *              mmap of this area allocates the ring and enables reception
 *              for the VPID; afterwards SET_MBOX_SIZE fails with EBUSY
 *              (unless the size is unchanged).
 */
/* struct velo2_ioc_info flags */
#define VELO2_INFO_SEND_WINDOW		0x1	/* page 1 is the send window */

#define VELO2_MMAP_REQ_OFFSET		0
#define VELO2_MMAP_STATE_OFFSET		EXTOLL_PAGE_SIZE
#define VELO2_MMAP_MBOX_OFFSET		(2 * EXTOLL_PAGE_SIZE)
#define VELO2_MMAP_MBOX_LEN(mbox_size)	(EXTOLL_PAGE_SIZE + (mbox_size))

#endif /* _UAPI_EXTOLL_H */
