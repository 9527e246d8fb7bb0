// SPDX-License-Identifier: MIT
/*
 * exanet-ipd: receiving: the receive rings peers write into, their
 * records handed to the TUN device.
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

/* -------------------------------------------------- RDMA: receiving */

static void deliver(void *arg, const struct ipd_rec_hdr *h, const uint8_t *pkt)
{
	struct ipd *d = arg;

	if (!ipd_tun_write(d, h, pkt)) {
		d->c.tun_tx_packets++;
		d->c.tun_tx_bytes += h->len;
	}
}

/* The stream in our ring cannot be trusted any more: count it, replace
 * the ring (the sender starts over in the new one). */
static void rx_broken(struct ipd *d, struct peer *p, const char *why)
{
	ipd_log(LOG_W, "peer %u: %s in batch %u: new receive ring", p->node, why, p->rx.wseq);
	d->c.rx_bad_batches++;
	p->c.rx_bad++;
	if (!ipd_rx_ring_new(d, p))
		ipd_send_offer(d, p);
	ipd_peer_update(d, p);
}

static int rx_poll(struct ipd *d, struct peer *p, int budget)
{
	uint64_t ring = (uint64_t)1 << d->o.ring_order;
	int n = 0;

	while (n < budget && !(n && ipd_tick_pending)) {
		struct exanet_rdma_notif rec;
		int64_t skip;
		uint64_t start;
		int cnt;
		uint32_t seq0 = p->rx.rseq;

		if (!exanet_rdma_notif_poll(&p->rx.notif[p->rx.wseq % IPD_NSLOTS], &rec))
			break;
		if (rec.tag != ipd_tag(p->rx.cookie, p->rx.wseq) || rec.error ||
		    rec.node != p->node || rec.op != EXANET_RDMA_OP_WRITE) {
			d->c.notif_bad++;	/* not the batch we expect: ignore it */
			continue;
		}
		skip = ipd_batch_skip(p->rx.cons, rec.length, ring);
		if (skip < 0) {
			rx_broken(d, p, "batch of impossible length");
			return n;
		}
		p->rx.cons += (uint64_t)skip;
		start = p->rx.cons % ring;
		cnt = ipd_batch_parse(p->rx.ring + start, rec.length, d->o.mtu, &p->rx.rseq,
				      deliver, d);
		n++;
		if (cnt < 0) {
			p->c.rx_packets += p->rx.rseq - seq0;
			rx_broken(d, p, "malformed record");
			return n;
		}
		p->c.rx_packets += (uint64_t)cnt;
		p->c.rx_bytes += rec.length;
		p->c.rx_batches++;
		p->rx.cons += rec.length;
		p->rx.wseq++;
		p->last_seen = d->ticks;
	}
	if (n)
		ipd_maybe_credit(d, p);
	return n;
}

/*
 * One batch per peer and pass.  Writing a batch's packets into TUN runs the
 * kernel's receive path, which queues the transport's answers (TCP ACKs)
 * on TUN at once; the caller reads and sends them before the next batch.
 * Delivering a whole window first held the ACKs back until the sender had
 * run out of window: measured 3.3 ms stalls per window at 64 KiB MSS.
 */
int ipd_rx_poll_all(struct ipd *d)
{
	int n = 0;

	for (unsigned int i = 0; i < d->nactive; i++) {
		struct peer *p = d->active[i];

		if (p->rx.mem) {
			n += rx_poll(d, p, 1);
			if (p->rx.credit_due && p->rx.credit_chan < 0)
				ipd_send_credit(d, p);
		}
	}
	return n;
}

/* Anything the sender side is waiting for that only polling will see
 * (not announced by an NI interrupt): unposted batches, a held packet,
 * credits to send, control messages in flight. */
bool ipd_tx_pending(const struct ipd *d)
{
	if (d->held || d->ctl_busy)
		return true;
	for (unsigned int i = 0; i < d->nactive; i++) {
		const struct peer *p = d->active[i];

		if (p->tx.tail != p->tx.bstart || p->rx.credit_due)
			return true;
	}
	return false;
}
