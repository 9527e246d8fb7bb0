// SPDX-License-Identifier: MIT
/*
 * exanet-ipd: sending: packets read from the TUN device go into
 * batches in the peers' receive rings, posted as RDMA writes; their
 * completions.
 * Everything here after setup is loads and stores to the NI and memory,
 * except the TUN reads/writes and the heartbeat socket (once per tick).
 * See Documentation/exanet/ipd.md; the parts share ipd_fabric.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <linux/virtio_net.h>
#include <unistd.h>

#include <exanet_ip.h>

#include "ipd.h"
#include "ipd_fabric.h"

/* ---------------------------------------------------- RDMA: sending */

/* Post the open batch of p if a channel, a notification slot and the
 * in-flight limit allow.  Returns 1 if posted. */
static int tx_post(struct ipd *d, struct peer *p)
{
	struct exanet_rdma_opts op = { 0 };
	struct exanet_raddr dst;
	uint64_t len = p->tx.tail - p->tx.bstart, off;
	uint32_t free_ch;
	int ch, ret;

	if (!len || !p->tx.ready)
		return 0;
	if (p->tx.inflight >= d->o.max_inflight || p->tx.wseq - p->tx.credit_wseq >= IPD_NSLOTS)
		return 0;
	free_ch = ~d->chan_busy;
	if (!free_ch)
		return 0;
	ch = __builtin_ctz(free_ch);
	off = p->tx.bstart % p->tx.size;
	dst = p->tx.ring;
	exanet_raddr_add(&dst, IPD_NOTIF_AREA + off);
	op.notify_va = p->tx.ring.va + (uint64_t)(p->tx.wseq % IPD_NSLOTS) *
		       sizeof(struct exanet_rdma_notif);
	op.tag = ipd_tag(p->tx.cookie, p->tx.wseq);
	op.lcomp = &d->lcomp[ch];
	exanet_rdma_notif_reset(&d->lcomp[ch]);
	ret = exanet_rdma_post_write_on(d->rdma, EXANET_RDMA_WCHAN(ch), p->tx.stage + off, &dst,
					len, &op);
	if (ret < 0) {
		d->c.rdma_errors++;
		if (ret == -EBUSY) {	/* still ONGOING: the stale check frees it */
			d->chan[ch].p = NULL;
			d->chan[ch].tick = d->ticks;
			d->chan_busy |= 1u << ch;
		}
		return 0;
	}
	ipd_log(LOG_D, "peer %u: batch %u: %llu bytes at ring offset %llu (va %#llx)", p->node,
		p->tx.wseq, (unsigned long long)len, (unsigned long long)off,
		(unsigned long long)dst.va);
	d->chan[ch].p = p;
	d->chan[ch].cookie = p->tx.cookie;
	d->chan[ch].wseq = p->tx.wseq;
	d->chan[ch].tick = d->ticks;
	d->chan_busy |= 1u << ch;
	p->tx.inflight++;
	p->tx.wseq++;
	p->tx.bstart = p->tx.tail;
	p->c.tx_batches++;
	return 1;
}

int ipd_tx_flush(struct ipd *d)
{
	int n = 0;

	for (unsigned int i = 0; i < d->nactive; i++) {
		struct peer *p = d->active[i];

		if (p->tx.tail != p->tx.bstart)
			n += tx_post(d, p);
	}
	return n;
}

static void chan_done(struct ipd *d, unsigned int ch, int err)
{
	struct inflight *f = &d->chan[ch];
	struct peer *p = f->p;

	d->chan_busy &= ~(1u << ch);
	f->p = NULL;
	if (!p || !p->tx.ready || p->tx.cookie != f->cookie)
		return;		/* an orphan of a ring we no longer write into */
	p->tx.inflight--;
	if (err) {
		d->c.rdma_errors++;
		ipd_log(LOG_W, "peer %u: RDMA write of batch %u failed: %s", p->node, f->wseq,
			strerror(-err));
		/* whether it landed is unknown: this stream is over, ask for a
		 * new ring */
		ipd_tx_drop(d, p);
		ipd_send_need_ring(d, p);
		ipd_peer_update(d, p);
	}
}

/* Local completion records of the channels in flight (memory reads). */
int ipd_comp_poll(struct ipd *d)
{
	uint32_t busy = d->chan_busy;
	int n = 0;

	while (busy) {
		unsigned int ch = (unsigned int)__builtin_ctz(busy);
		struct exanet_rdma_notif rec;

		busy &= busy - 1;
		if (!exanet_rdma_notif_poll(&d->lcomp[ch], &rec))
			continue;
		chan_done(d, ch, rec.error ? exanet_rdma_error_errno(rec.error) : 0);
		n++;
	}
	return n;
}

/* A descriptor refused at the trigger writes no completion record: look
 * at the status of channels that have been busy for a while (MMIO). */
void ipd_comp_check_stale(struct ipd *d)
{
	uint32_t busy = d->chan_busy;

	while (busy) {
		unsigned int ch = (unsigned int)__builtin_ctz(busy);
		int err;

		busy &= busy - 1;
		if (d->ticks - d->chan[ch].tick < 5)
			continue;
		err = exanet_rdma_poll(d->rdma, EXANET_RDMA_WCHAN(ch), NULL);
		if (err == -EINPROGRESS)
			continue;
		/* DONE, ERROR (refused at the trigger: no record) or IDLE */
		chan_done(d, ch, err == -ENOMSG ? 0 : err);
	}
}

/*
 * Can packets go to p?  The two directions are independent: once we hold
 * the ring it offered (tx.ready), we write into it, also while the peer
 * has not yet accepted ours (CONNECTING).  Sending only when UP would
 * drop our answer to the first packet of a peer that finished its
 * handshake first and sent at once (found by reading the handshake, not
 * measured alone: Documentation/exanet/ipd.md, "The kernel path").
 */
bool ipd_peer_sendable(const struct peer *p)
{
	return p->tx.ready && (p->state == PEER_UP || p->state == PEER_CONNECTING);
}

/*
 * Where the next record for a packet of up to MTU bytes goes in p's staging
 * copy if it can be written there directly (no end of ring, no closed batch
 * in the way, room granted by credits), else NULL.
 */
static uint8_t *tx_reserve(struct ipd *d, struct peer *p)
{
	uint64_t need, off;

	if (!p || !ipd_peer_sendable(p))
		return NULL;
	need = ipd_rec_size(p->mtu < d->o.mtu ? d->o.mtu : p->mtu);
	off = p->tx.tail % p->tx.size;
	if ((off == 0 || !d->o.batch_kib) && p->tx.tail != p->tx.bstart)
		return NULL;
	if (off + need > p->tx.size || p->tx.tail + need - p->tx.credit_pos > p->tx.size)
		return NULL;
	return p->tx.stage + off;
}

/* The record at the tail (header h, packet already in place) joins the
 * open batch. */
static void tx_commit(struct ipd *d, struct peer *p, uint8_t *rec, struct ipd_rec_hdr *h)
{
	h->seq = p->tx.rseq++;
	ipd_rec_put_hdr(rec, h);
	p->tx.tail += ipd_rec_size(h->len);
	p->c.tx_packets++;
	p->c.tx_bytes += h->len;
	if (p->tx.tail - p->tx.bstart >= (uint64_t)d->o.batch_kib << 10)
		tx_post(d, p);
}

/*
 * Append one packet (header h, payload pkt) to p's open batch by copying
 * it.  -EAGAIN: no room (credits), the caller holds the packet and stops
 * reading the TUN device.
 */
static int tx_append(struct ipd *d, struct peer *p, struct ipd_rec_hdr *h, const uint8_t *pkt)
{
	uint64_t need = ipd_rec_size(h->len), off = p->tx.tail % p->tx.size;

	/* a batch never crosses the end of the ring: a record ending exactly
	 * there closes it too; --batch-kib 0: one packet per write */
	if ((off == 0 || !d->o.batch_kib) && p->tx.tail != p->tx.bstart && !tx_post(d, p))
		return -EAGAIN;
	if (off + need > p->tx.size) {
		uint64_t skip = p->tx.size - off;

		/* the open batch ends here; the next starts at offset 0 */
		if (p->tx.tail != p->tx.bstart && !tx_post(d, p))
			return -EAGAIN;
		if (p->tx.tail + skip + need - p->tx.credit_pos > p->tx.size)
			return -EAGAIN;
		p->tx.tail += skip;
		p->tx.bstart = p->tx.tail;
		off = 0;
	}
	if (p->tx.tail + need - p->tx.credit_pos > p->tx.size)
		return -EAGAIN;
	memcpy(p->tx.stage + off + IPD_REC_HDR, pkt, h->len);
	tx_commit(d, p, p->tx.stage + off, h);
	return 0;
}

/* Write one packet into the TUN device, behind its virtio_net_hdr. */
int ipd_tun_write(struct ipd *d, const struct ipd_rec_hdr *h, const uint8_t *pkt)
{
	struct virtio_net_hdr v = { 0 };
	struct iovec iov[2] = {
		{ .iov_base = &v, .iov_len = sizeof(v) },
		{ .iov_base = (void *)pkt, .iov_len = h->len },
	};

	if (h->flags & IPD_REC_F_CSUM) {
		v.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		v.csum_start = h->csum_start;
		v.csum_offset = h->csum_offset;
	}
	if (writev(d->tunfd, iov, 2) == (ssize_t)(sizeof(v) + h->len))
		return 0;
	d->c.tun_write_errors++;
	return -1;
}

static void send_unreach(struct ipd *d, const uint8_t *pkt, uint32_t len)
{
	struct ipd_rec_hdr h = { 0 };
	uint8_t out[600];
	size_t n;

	uint32_t from;

	if (d->icmp_budget <= 0)
		return;
	/* From the unreachable address itself: one of our own addresses
	 * arriving on exa0 would be a martian source to the kernel. */
	memcpy(&from, pkt + 16, 4);
	n = ipd_icmp_unreach(out, sizeof(out), from, pkt, len, 1 /* host unreachable */);
	if (!n)
		return;
	d->icmp_budget--;
	h.len = (uint32_t)n;
	if (!ipd_tun_write(d, &h, out))
		d->c.icmp_unreach_sent++;
}

/* The peer a packet goes to (NULL: dropped, counted, maybe answered). */
static struct peer *route_packet(struct ipd *d, const uint8_t *pkt, uint32_t len)
{
	struct peer *p;
	uint32_t dst;

	if (len < 20 || (pkt[0] >> 4) != 4) {
		d->c.drop_not_ipv4++;
		return NULL;
	}
	memcpy(&dst, pkt + 16, 4);
	p = ipd_peer_by_ip(d, dst);
	if (!p) {
		d->c.drop_no_peer++;
		if ((dst & d->netmask) == (d->ip & d->netmask))
			send_unreach(d, pkt, len);
		return NULL;
	}
	if (!ipd_peer_sendable(p)) {
		d->c.drop_peer_down++;
		p->c.tx_drops++;
		/* a host that is gone, not one whose rings are being replaced */
		if (p->state == PEER_DOWN || p->state == PEER_UNKNOWN)
			send_unreach(d, pkt, len);
		return NULL;
	}
	if (len > p->mtu) {
		d->c.drop_too_big++;
		p->c.tx_drops++;
		return NULL;
	}
	return p;
}

/* The record header of a packet read behind its virtio_net_hdr, or -1 to
 * drop it (GSO, which we never enable, or a checksum position outside). */
static int vnet_to_rec(const struct virtio_net_hdr *v, uint32_t len, struct ipd_rec_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->len = len;
	h->type = IPD_REC_IP;
	if (v->gso_type != VIRTIO_NET_HDR_GSO_NONE)
		return -1;
	if (v->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		h->flags = IPD_REC_F_CSUM;
		h->csum_start = v->csum_start;
		h->csum_offset = v->csum_offset;
	}
	return ipd_rec_check(h, ipd_rec_size(len), len);
}

/*
 * Read packets from the TUN device into the peers' open batches.  A packet
 * is read straight into the staging copy of the peer the previous one went
 * to (its record header then overwrites the virtio_net_hdr in front of it);
 * it is copied only when it goes elsewhere or that peer has no room.
 */
int ipd_tun_rx(struct ipd *d)
{
	const size_t vl = sizeof(struct virtio_net_hdr);
	int n = 0;

	if (d->held) {
		struct peer *p = d->held;

		if (!ipd_peer_sendable(p)) {
			d->held = NULL;
		} else if (tx_append(d, p, &d->held_hdr, d->buf + IPD_REC_HDR) == -EAGAIN) {
			if (!p->tx.stalled) {
				p->tx.stalled = true;
				p->c.credit_stalls++;
			}
			return 0;
		} else {
			d->held = NULL;
			p->tx.stalled = false;
			n++;
		}
	}
	if (d->tun_quiet) {
		d->tun_quiet = 0;
		return n;
	}
	for (int i = 0; i < 64 && !(i && ipd_tick_pending); i++) {
		struct peer *g = d->tx_guess, *p;
		uint8_t *rec = tx_reserve(d, g);
		struct virtio_net_hdr v;
		struct ipd_rec_hdr h;
		uint32_t len;
		ssize_t got;

		if (!rec) {
			rec = d->buf;
			g = NULL;
		}
		got = read(d->tunfd, rec + IPD_REC_HDR - vl, d->o.mtu + vl);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				d->c.tun_read_errors++;
			break;
		}
		if ((size_t)got <= vl)
			break;
		n++;
		len = (uint32_t)((size_t)got - vl);
		d->c.tun_rx_packets++;
		d->c.tun_rx_bytes += len;
		memcpy(&v, rec + IPD_REC_HDR - vl, vl);
		if (vnet_to_rec(&v, len, &h)) {
			d->c.drop_bad_ip++;
			continue;
		}
		if (h.flags & IPD_REC_F_CSUM)
			d->c.csum_offloaded++;
		p = route_packet(d, rec + IPD_REC_HDR, len);
		if (!p)
			continue;
		d->tx_guess = p;
		if (p == g) {
			tx_commit(d, p, rec, &h);
			continue;
		}
		if (tx_append(d, p, &h, rec + IPD_REC_HDR) == -EAGAIN) {
			if (rec != d->buf)
				memcpy(d->buf + IPD_REC_HDR, rec + IPD_REC_HDR, len);
			d->held = p;
			d->held_hdr = h;
			d->c.held_packets++;
			p->tx.stalled = true;
			p->c.credit_stalls++;
			break;
		}
	}
	return n;
}
