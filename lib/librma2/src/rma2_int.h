/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* librma2 internals (not installed). */
#ifndef RMA2_INT_H
#define RMA2_INT_H

#include <pthread.h>
#include "rma2.h"

#define RMA2_PORT_MAGIC 0x524d4132u	/* "RMA2" */
#define RMA2_CONN_MAGIC 0x434f4e4eu	/* "CONN" */
#define RMA2_DEV_PATH "/dev/extoll/rma2"
#define RMA2_DEFAULT_QUEUE_BYTES (256u * 1024u)
#define RMA2_DEFAULT_SEGMENT_BYTES (64u * 1024u)
#define RMA2_POOL_GROW 32
/* as VELO2_DIRECT_SPIN_PROBES (libvelo2's velo2_int.h), for the same reasons */
#define RMA2_DIRECT_SPIN_PROBES 4096u
#define RMA2_CMD_FREE_OFF 0x800	/* EXTOLL_RMA_CMD_FREE in requester page 0 */

/* Command word 0 fields (spec 2.5.3). */
#define RMA2_W0_VALID 3ull
#define RMA2_W0_CMD_SHIFT 2
#define RMA2_W0_VPID_SHIFT 8
#define RMA2_W0_NODE_SHIFT 16
#define RMA2_W0_SPEC_SHIFT 32
#define RMA2_W0_MOD_SHIFT 35
#define RMA2_W0_COUNT_SHIFT 40
#define RMA2_W0_COUNT_MASK 0x7fffffull

struct RMA2_Connection_s {
	uint32_t magic;
	uint32_t options;		/* requester page index 0..31 */
	RMA2_Endpoint *port;
	RMA2_Nodeid node;
	RMA2_VPID vpid;
	uint32_t response_tc;
	volatile uint64_t *page;	/* requester page of 'options' */
	struct RMA2_Connection_s *next;
};

struct RMA2_Endpoint_s {
	uint32_t magic;
	int fd;				/* -1 for a fake (host-test) endpoint */
	int fake;
	RMA2_Nodeid node;
	RMA2_VPID vpid;
	uint32_t node_num, proc_num;
	volatile uint8_t *req_base;	/* requester page 0 */
	size_t req_stride;		/* bytes between requester pages */
	void *req_map;
	size_t req_map_len;
	void *q_map;
	size_t q_map_len;
	volatile uint64_t *rp_word;	/* read-pointer write-back */
	volatile RMA2_Notification *queue;
	uint32_t q_entries;
	uint32_t q_rd;			/* next entry to consume */
	uint32_t q_unpublished;
	uint32_t q_bytes, q_seg;
	RMA2_Replay_Buffer_Mode replay;
	uint32_t credits;		/* commands the device accepts without re-reading */
	int last_to_self;		/* the last command went to this node (atomic) */
	/*
	 * Peers write notifications into the queue themselves
	 * (EXTOLL_RMA_F_DIRECT): an empty probe reads NOTI_COUNT only once
	 * per spin_probes empty probes (RMA2_DIRECT_SPIN_PROBES; 0: always,
	 * as RMA2_DIRECT_POLL=0 does).
	 */
	int direct;
	uint32_t spin_probes, empty_polls;
	pthread_mutex_t post_lock;
	extoll2_list_t desc_pool;
	extoll2_list_t region_pool;
	struct RMA2_Connection_s *conns;
	uint64_t fake_nla_next;
};

/*
 * Host tests: an endpoint over caller memory instead of the device.
 * req_pages: 32 pages of 'stride' bytes (commands land at offset 0 of the
 * page of the connection's options; the 64-bit word at RMA2_CMD_FREE_OFF of
 * page 0 is the device's free command count); queue: 'entries' notifications;
 * rp_word: read-pointer word.  Registration returns NLA = virtual address.
 */
RMA2_ERROR rma2__open_fake(RMA2_Port *port, RMA2_Nodeid node, RMA2_VPID vpid,
			   void *req_pages, size_t stride, RMA2_Notification *queue,
			   uint32_t entries, volatile uint64_t *rp_word);

#endif
