/* SPDX-License-Identifier: MIT */
/*
 * libexanet: what the library's source files share (the objects behind
 * the opaque handles of libexanet.h, MMIO accessors, the waits).
 * Private: not installed.
 */
#ifndef LIBEXANET_INT_H
#define LIBEXANET_INT_H

#include <stdint.h>
#include "libexanet.h"
#include "exa_wait.h"	/* the waits with a timeout (EXANET_WAIT_FOREVER: EXA_WAIT_SPIN) */

#define EXPORT __attribute__((visibility("default")))

struct exanet_dev {
	int fd;
	int index;			/* N of /dev/exanetN, -1 if unknown */
	struct exanet_info info;
	struct exanet_pkt *pkts;	/* still-allocated objects, freed on close */
	struct exanet_mbox *mboxes;
	struct exanet_rdma *rdmas;
	struct exanet_mr *mrs;
};

struct exanet_rdma {
	struct exanet_dev *dev;
	struct exanet_rdma *next;
	uint32_t page;
	uint32_t rank;
	uint32_t node;
	uint32_t wclaim;		/* claimed write channels (atomic) */
	uint32_t rclaim;		/* claimed read channels (atomic) */
	uint32_t wcursor;		/* where to start looking (hint, atomic) */
	uint32_t rcursor;
	volatile uint8_t *regs;
	struct exanet_coll *coll;	/* its collective page, if open */
	struct exanet_rdma *pnext;	/* process-wide list (notification polls) */
};

/* libexanet-coll.c */
struct exanet_coll {
	struct exanet_rdma *rdma;
	volatile uint8_t *regs;		/* the collective page */
	struct exanet_coll_group *groups;
};

static inline void mmio_write64(volatile uint8_t *base, size_t off, uint64_t v)
{
	*(volatile uint64_t *)(base + off) = v;
}

static inline uint64_t mmio_read64(const volatile uint8_t *base, size_t off)
{
	return *(const volatile uint64_t *)(base + off);
}

static inline void mmio_write32(volatile uint8_t *base, size_t off, uint32_t v)
{
	*(volatile uint32_t *)(base + off) = v;
}

static inline uint32_t mmio_read32(const volatile uint8_t *base, size_t off)
{
	return *(const volatile uint32_t *)(base + off);
}

/* libexanet-pkt.c, libexanet-mbox.c (their handles) */
struct exanet_pkt {
	struct exanet_dev *dev;
	struct exanet_pkt *next;
	uint32_t iface;
	unsigned int next_chan;		/* round-robin cursor */
	volatile uint8_t *page;
};

struct exanet_mbox {
	struct exanet_dev *dev;
	struct exanet_mbox *next;
	uint32_t id;
	uint32_t nslots;
	uint32_t head;			/* next slot to consume */
	uint32_t phase;			/* expected phase bit of the slot at head */
	uint32_t unpublished;		/* slots consumed since the last HEAD store */
	uint32_t publish_batch;		/* publish HEAD after this many */
	int direct;			/* senders write the queue: poll memory only */
	uint32_t empty_polls;		/* empty receives in a row (direct) */
	uint32_t spin_probes;		/* ... before TAIL is read too */
	volatile uint8_t *regs;
	const volatile struct exanet_mbox_slot *queue;
	size_t queue_size;
};

#endif /* LIBEXANET_INT_H */
