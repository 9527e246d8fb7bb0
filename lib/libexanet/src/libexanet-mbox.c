// SPDX-License-Identifier: MIT
/*
 * libexanet, the mailbox: queues, receive, HEAD publishing.
 * The library as a whole: libexanet.c; private header libexanet-int.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "libexanet.h"
#include "libexanet-int.h"
#include "exa_clock.h"
#include "exa_cpu.h"

/* ------------------------------------------------------------ mailbox */

static int is_pow2_in_range(unsigned int n)
{
	return n >= EXANET_MBOX_MIN_SLOTS && n <= EXANET_MBOX_MAX_SLOTS && !(n & (n - 1));
}

/* Empty receives that poll memory only (direct delivery), as libvelo2's */
#define EXANET_DIRECT_SPIN_PROBES 4096u

static uint32_t direct_spin_probes(void)
{
	const char *e = getenv("EXANET_DIRECT_SPIN_PROBES");

	return e && *e ? (uint32_t)strtoul(e, NULL, 0) : EXANET_DIRECT_SPIN_PROBES;
}

static int direct_poll_off(void)
{
	const char *e = getenv("EXANET_DIRECT_POLL");

	return e && !strcmp(e, "0");
}

EXPORT int exanet_mbox_alloc(struct exanet_dev *dev, unsigned int nslots,
			     struct exanet_mbox **mboxp)
{
	struct exanet_mbox_alloc req = { 0 };
	struct exanet_mbox *mb;
	void *regs, *queue;
	int err;

	if (!dev || !mboxp)
		return -EINVAL;
	*mboxp = NULL;
	if (!is_pow2_in_range(nslots))
		return -EINVAL;
	mb = calloc(1, sizeof(*mb));
	if (!mb)
		return -ENOMEM;
	req.nslots = nslots;
	if (ioctl(dev->fd, EXANET_IOC_MBOX_ALLOC, &req) < 0) {
		err = -errno;
		free(mb);
		return err;
	}
	if (req.queue_size < (uint64_t)nslots * EXANET_MBOX_SLOT_SIZE) {
		err = -EPROTO;
		goto fail_free;
	}
	regs = mmap(NULL, EXANET_IFACE_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		    dev->fd, (off_t)req.regs_offset);
	if (regs == MAP_FAILED) {
		err = -errno;
		goto fail_free;
	}
	queue = mmap(NULL, req.queue_size, PROT_READ, MAP_SHARED, dev->fd,
		     (off_t)req.queue_offset);
	if (queue == MAP_FAILED) {
		err = -errno;
		munmap(regs, EXANET_IFACE_PAGE_SIZE);
		goto fail_free;
	}
	mb->dev = dev;
	mb->id = req.mbox;
	mb->nslots = nslots;
	mb->head = 0;
	mb->phase = EXANET_SLOT_PHASE;
	mb->publish_batch = nslots / 4 ? nslots / 4 : 1;
	mb->regs = regs;
	/*
	 * Direct delivery (Documentation/fabric.md section 9): an empty
	 * receive reads TAIL (the NI poll, which lets an emulated node park
	 * and delivers what took the fabric rings) only after this many empty
	 * receives in a row; EXANET_DIRECT_POLL=0 reads it on every one.
	 */
	mb->direct = (mmio_read32(regs, EXANET_MBOX_FEATURES) & EXANET_MBOX_F_DIRECT) &&
		     !direct_poll_off();
	mb->spin_probes = direct_spin_probes();
	mb->queue = queue;
	mb->queue_size = req.queue_size;
	mb->next = dev->mboxes;
	dev->mboxes = mb;
	*mboxp = mb;
	return 0;

fail_free:
	ioctl(dev->fd, EXANET_IOC_MBOX_FREE, &req.mbox);
	free(mb);
	return err;
}

EXPORT int exanet_mbox_free(struct exanet_mbox *mb)
{
	struct exanet_mbox **pp;
	struct exanet_dev *dev;
	int err = 0;

	if (!mb)
		return -EINVAL;
	dev = mb->dev;
	for (pp = &dev->mboxes; *pp && *pp != mb; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = mb->next;
	munmap((void *)mb->queue, mb->queue_size);
	munmap((void *)mb->regs, EXANET_IFACE_PAGE_SIZE);
	if (ioctl(dev->fd, EXANET_IOC_MBOX_FREE, &mb->id) < 0)
		err = -errno;
	free(mb);
	return err;
}

EXPORT uint32_t exanet_mbox_id(const struct exanet_mbox *mb)
{
	return mb ? mb->id : UINT32_MAX;
}

EXPORT unsigned int exanet_mbox_nslots(const struct exanet_mbox *mb)
{
	return mb ? mb->nslots : 0;
}

static inline int slot_ready(const struct exanet_mbox *mb, uint32_t idx, uint32_t phase)
{
	uint32_t flags = __atomic_load_n(&mb->queue[idx].flags, __ATOMIC_ACQUIRE);

	return (flags & EXANET_SLOT_PHASE) == phase;
}

EXPORT void exanet_mbox_flush(struct exanet_mbox *mb)
{
	if (!mb || !mb->unpublished)
		return;
	/* Our reads of the consumed slots must complete before the NI may
	 * overwrite them. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	mmio_write32(mb->regs, EXANET_MBOX_HEAD, mb->head);
	mb->unpublished = 0;
}

EXPORT ssize_t exanet_recv(struct exanet_mbox *mb, void *buf, size_t buflen,
			   struct exanet_msg_info *info)
{
	const volatile struct exanet_mbox_slot *slot;
	uint32_t len;

	if (!mb || (!buf && buflen))
		return -EINVAL;
	if (!slot_ready(mb, mb->head, mb->phase)) {
		/* Publishing before reporting empty guarantees a drained queue
		 * never NACKs FULL because of a HEAD we kept to ourselves. */
		exanet_mbox_flush(mb);
		if (mb->direct && mb->empty_polls < mb->spin_probes) {
			mb->empty_polls++;
			return 0;	/* the senders' NIs write in by themselves */
		}
		/* Reading TAIL is the poll the NI answers by delivering what
		 * waits for this node before it replies (the emulated NI does
		 * it in the polling CPU); then look once more. */
		(void)mmio_read32(mb->regs, EXANET_MBOX_TAIL);
		if (!slot_ready(mb, mb->head, mb->phase))
			return 0;
	}
	mb->empty_polls = 0;
	slot = &mb->queue[mb->head];
	len = slot->len;
	if (len >= 1 && len <= EXANET_MAX_PAYLOAD) {
		if (!buf || buflen < len)
			return -EMSGSIZE;
		memcpy(buf, (const void *)slot->payload, len);
	}
	if (info) {
		info->src_node = slot->src_node;
		info->src_iface = slot->src_iface;
		info->src_chan = slot->src_chan;
		info->seq = slot->seq;
		info->slot = mb->head;
	}
	if (++mb->head == mb->nslots) {
		mb->head = 0;
		mb->phase ^= EXANET_SLOT_PHASE;
	}
	if (++mb->unpublished >= mb->publish_batch)
		exanet_mbox_flush(mb);
	if (len < 1 || len > EXANET_MAX_PAYLOAD)
		return -EIO;
	return (ssize_t)len;
}

EXPORT ssize_t exanet_recv_wait(struct exanet_mbox *mb, void *buf, size_t buflen,
				struct exanet_msg_info *info, int64_t timeout_ns)
{
	struct exa_wait dl;
	ssize_t n;

	if (!mb || (!buf && buflen))
		return -EINVAL;
	exa_wait_init(&dl, timeout_ns);
	for (;;) {
		n = exanet_recv(mb, buf, buflen, info);
		if (n != 0) {
			exa_wait_done(&dl);
			return n;
		}
		if (exa_wait_poll(&dl))
			return -ETIMEDOUT;
	}
}

EXPORT unsigned int exanet_mbox_pending(const struct exanet_mbox *mb)
{
	uint32_t idx, phase, n = 0;

	if (!mb)
		return 0;
	idx = mb->head;
	phase = mb->phase;
	while (n < mb->nslots && slot_ready(mb, idx, phase)) {
		n++;
		if (++idx == mb->nslots) {
			idx = 0;
			phase ^= EXANET_SLOT_PHASE;
		}
	}
	return n;
}

EXPORT uint32_t exanet_mbox_rx_count(const struct exanet_mbox *mb)
{
	return mb ? mmio_read32(mb->regs, EXANET_MBOX_RX_COUNT) : 0;
}

EXPORT uint32_t exanet_mbox_full_count(const struct exanet_mbox *mb)
{
	return mb ? mmio_read32(mb->regs, EXANET_MBOX_FULL_COUNT) : 0;
}

EXPORT uint32_t exanet_mbox_hw_tail(const struct exanet_mbox *mb)
{
	return mb ? mmio_read32(mb->regs, EXANET_MBOX_TAIL) : 0;
}

EXPORT uint32_t exanet_mbox_hw_head(const struct exanet_mbox *mb)
{
	return mb ? mmio_read32(mb->regs, EXANET_MBOX_HEAD) : 0;
}
