// SPDX-License-Identifier: MIT
/*
 * libexanet, the packetizer: interfaces, sends, channel status.
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

/* ------------------------------------------------------------ packetizer */

EXPORT int exanet_pkt_alloc(struct exanet_dev *dev, struct exanet_pkt **pktp)
{
	struct exanet_pkt_alloc req = { 0 };
	struct exanet_pkt *pkt;
	void *page;
	int err;

	if (!dev || !pktp)
		return -EINVAL;
	*pktp = NULL;
	pkt = calloc(1, sizeof(*pkt));
	if (!pkt)
		return -ENOMEM;
	if (ioctl(dev->fd, EXANET_IOC_PKT_ALLOC, &req) < 0) {
		err = -errno;
		free(pkt);
		return err;
	}
	page = mmap(NULL, EXANET_IFACE_PAGE_SIZE, PROT_READ | PROT_WRITE,
		    MAP_SHARED, dev->fd, (off_t)req.mmap_offset);
	if (page == MAP_FAILED) {
		err = -errno;
		ioctl(dev->fd, EXANET_IOC_PKT_FREE, &req.iface);
		free(pkt);
		return err;
	}
	pkt->dev = dev;
	pkt->iface = req.iface;
	pkt->page = page;
	pkt->next = dev->pkts;
	dev->pkts = pkt;
	*pktp = pkt;
	return 0;
}

EXPORT int exanet_pkt_free(struct exanet_pkt *pkt)
{
	struct exanet_pkt **pp;
	struct exanet_dev *dev;
	int err = 0;

	if (!pkt)
		return -EINVAL;
	dev = pkt->dev;
	for (pp = &dev->pkts; *pp && *pp != pkt; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = pkt->next;
	munmap((void *)pkt->page, EXANET_IFACE_PAGE_SIZE);
	if (ioctl(dev->fd, EXANET_IOC_PKT_FREE, &pkt->iface) < 0)
		err = -errno;
	free(pkt);
	return err;
}

EXPORT uint32_t exanet_pkt_iface(const struct exanet_pkt *pkt)
{
	return pkt ? pkt->iface : UINT32_MAX;
}

static inline volatile uint8_t *chan_base(const struct exanet_pkt *pkt, unsigned int chan)
{
	return pkt->page + (size_t)chan * EXANET_PKT_CHAN_STRIDE;
}

static int send_args_ok(const struct exanet_pkt *pkt, uint32_t node, uint32_t mbox,
			const void *buf, size_t len)
{
	if (!pkt || !buf || len < 1 || len > EXANET_MAX_PAYLOAD)
		return 0;
	if (node > EXANET_DB_NODE_MASK || mbox > EXANET_DB_MBOX_MASK)
		return 0;
	return 1;
}

/* Payload as 8-byte stores; the last partial word is zero-padded, which
 * stays inside the 64-byte payload window. */
static inline void write_packet(volatile uint8_t *ch, uint32_t node, uint32_t mbox,
				const void *buf, size_t len)
{
	const uint8_t *src = buf;
	size_t off;

	for (off = 0; off + 8 <= len; off += 8) {
		uint64_t w;

		memcpy(&w, src + off, 8);
		mmio_write64(ch, EXANET_PKT_PAYLOAD + off, w);
	}
	if (off < len) {
		uint64_t w = 0;

		memcpy(&w, src + off, len - off);
		mmio_write64(ch, EXANET_PKT_PAYLOAD + off, w);
	}
	store_fence();
	mmio_write64(ch, EXANET_PKT_DOORBELL, EXANET_DOORBELL(node, mbox, len));
}

EXPORT int exanet_send_on(struct exanet_pkt *pkt, unsigned int chan, uint32_t node,
			  uint32_t mbox, const void *buf, size_t len)
{
	volatile uint8_t *ch;

	if (!send_args_ok(pkt, node, mbox, buf, len) || chan >= EXANET_PKT_CHANNELS)
		return -EINVAL;
	ch = chan_base(pkt, chan);
	if (EXANET_ST_STATE(mmio_read64(ch, EXANET_PKT_STATUS)) == EXANET_CHAN_ONGOING)
		return -EBUSY;
	write_packet(ch, node, mbox, buf, len);
	return (int)chan;
}

/* The caller read the channel's final status since its last send (it keeps
 * its own busy bit): no STATUS read, the packet's stores only.  A doorbell
 * on an ONGOING channel is ignored by the NI (counter DOORBELL_BUSY). */
EXPORT int exanet_send_on_idle(struct exanet_pkt *pkt, unsigned int chan, uint32_t node,
			       uint32_t mbox, const void *buf, size_t len)
{
	if (!send_args_ok(pkt, node, mbox, buf, len) || chan >= EXANET_PKT_CHANNELS)
		return -EINVAL;
	write_packet(chan_base(pkt, chan), node, mbox, buf, len);
	return (int)chan;
}

EXPORT int exanet_send(struct exanet_pkt *pkt, uint32_t node, uint32_t mbox,
		       const void *buf, size_t len)
{
	unsigned int i, chan;

	if (!send_args_ok(pkt, node, mbox, buf, len))
		return -EINVAL;
	for (i = 0; i < EXANET_PKT_CHANNELS; i++) {
		volatile uint8_t *ch;

		chan = (pkt->next_chan + i) % EXANET_PKT_CHANNELS;
		ch = chan_base(pkt, chan);
		if (EXANET_ST_STATE(mmio_read64(ch, EXANET_PKT_STATUS)) == EXANET_CHAN_ONGOING)
			continue;
		write_packet(ch, node, mbox, buf, len);
		pkt->next_chan = (chan + 1) % EXANET_PKT_CHANNELS;
		return (int)chan;
	}
	return -EAGAIN;
}

EXPORT uint64_t exanet_chan_status(const struct exanet_pkt *pkt, unsigned int chan)
{
	if (!pkt || chan >= EXANET_PKT_CHANNELS)
		return 0;
	return mmio_read64(chan_base(pkt, chan), EXANET_PKT_STATUS);
}

EXPORT int exanet_chan_state(const struct exanet_pkt *pkt, unsigned int chan)
{
	if (!pkt || chan >= EXANET_PKT_CHANNELS)
		return -EINVAL;
	return (int)EXANET_ST_STATE(exanet_chan_status(pkt, chan));
}

EXPORT int exanet_status_errno(uint64_t status)
{
	switch (EXANET_ST_STATE(status)) {
	case EXANET_CHAN_ACK:
		return 0;
	case EXANET_CHAN_ONGOING:
		return -EINPROGRESS;
	case EXANET_CHAN_IDLE:
		return -ENOMSG;
	case EXANET_CHAN_TIMEOUT:
		return -ETIMEDOUT;
	case EXANET_CHAN_NACK:
		switch (EXANET_ST_REASON(status)) {
		case EXANET_NACK_PDID:
			return -EACCES;
		case EXANET_NACK_FULL:
			return -ENOBUFS;
		case EXANET_NACK_BAD_PACKET:
			return -EPROTO;
		case EXANET_NACK_NO_ROUTE:
			return -EHOSTUNREACH;
		case EXANET_NACK_DISABLED:
		default:
			return -ECONNREFUSED;
		}
	default:
		return -EIO;
	}
}

EXPORT int exanet_wait(struct exanet_pkt *pkt, unsigned int chan, int64_t timeout_ns,
		       uint64_t *statusp)
{
	struct exa_wait dl;
	volatile uint8_t *ch;
	uint64_t st;

	if (!pkt || chan >= EXANET_PKT_CHANNELS)
		return -EINVAL;
	ch = chan_base(pkt, chan);
	exa_wait_init(&dl, timeout_ns);
	for (;;) {
		st = mmio_read64(ch, EXANET_PKT_STATUS);
		if (EXANET_ST_STATE(st) != EXANET_CHAN_ONGOING) {
			exa_wait_done(&dl);
			break;
		}
		if (exa_wait_poll(&dl))
			break;
	}
	if (statusp)
		*statusp = st;
	return exanet_status_errno(st);
}

EXPORT int exanet_send_wait(struct exanet_pkt *pkt, uint32_t node, uint32_t mbox,
			    const void *buf, size_t len, int64_t timeout_ns,
			    uint64_t *statusp)
{
	struct exa_wait dl;
	int chan;

	if (!send_args_ok(pkt, node, mbox, buf, len))
		return -EINVAL;
	exa_wait_init(&dl, timeout_ns);
	for (;;) {
		chan = exanet_send(pkt, node, mbox, buf, len);
		if (chan != -EAGAIN) {
			exa_wait_done(&dl);
			break;
		}
		if (exa_wait_poll(&dl))
			return -EAGAIN;
	}
	if (chan < 0)
		return chan;
	return exanet_wait(pkt, (unsigned int)chan, exa_wait_left(&dl), statusp);
}
