// SPDX-License-Identifier: MIT
/*
 * exanet-ipd: liveness: heartbeats, the periodic tick (timeouts,
 * retries), the kernel path's list of peers, the goodbye at exit.
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

/* ------------------------------------------------------- heartbeats */

static void hb_send(struct ipd *d, int leaving)
{
	struct ipd_hb hb = { 0 };
	uint8_t buf[IPD_HB_WIRE_SIZE];
	struct sockaddr_in to = { .sin_family = AF_INET };

	if (d->hbfd < 0)
		return;
	hb.node = d->node;
	hb.mbox = exanet_mbox_id(d->mbox);
	hb.incarnation = d->inc;
	hb.ipv4 = d->ip;
	hb.mtu = d->o.mtu;
	hb.seq = d->hb_seq++;
	hb.num_nodes = d->num_nodes;
	hb.flags = leaving ? IPD_HB_F_LEAVING : 0;
	ipd_hb_encode(&hb, buf);
	to.sin_port = htons((uint16_t)d->o.hb_port);
	to.sin_addr.s_addr = d->hb_bcast;
	if (sendto(d->hbfd, buf, sizeof(buf), 0, (struct sockaddr *)&to, sizeof(to)) ==
	    (ssize_t)sizeof(buf))
		d->c.hb_tx++;
}

static void hb_handle(struct ipd *d, const struct ipd_hb *hb)
{
	struct peer *p;

	if (hb->node == d->node) {
		if (hb->incarnation != d->inc)
			d->c.hb_self_conflict++;	/* another daemon claims our node */
		return;
	}
	if (hb->num_nodes != d->num_nodes) {
		d->c.hb_foreign++;			/* another fabric */
		return;
	}
	p = ipd_peer_get(d, hb->node);
	if (!p) {
		d->c.hb_bad++;
		return;
	}
	d->c.hb_rx++;
	if (p->state == PEER_UP || p->state == PEER_CONNECTING) {
		if (hb->incarnation != p->inc) {
			if (p->inc_auth) {
				/* The fabric told us who runs there; a heartbeat
				 * cannot override it.  A restarted daemon shows
				 * itself over the fabric (OFFER) or the old one
				 * times out. */
				d->c.hb_bad_incarnation++;
				return;
			}
			/* not authenticated yet: follow the newest claim */
			p->inc = hb->incarnation;
			p->mbox = hb->mbox;
		}
		/* IPD_HB_F_LEAVING is not acted upon: anybody on the management
		 * network can forge it.  A stopping daemon says goodbye over the
		 * fabric (BYE), where the NI vouches for the sender. */
		if (!(hb->flags & IPD_HB_F_LEAVING))
			p->last_seen = d->ticks;
		return;
	}
	if (hb->flags & IPD_HB_F_LEAVING)
		return;
	for (unsigned int i = 0; i < 4; i++) {
		if (p->dead_inc[i] == hb->incarnation) {
			d->c.hb_bad_incarnation++;	/* replayed or forged */
			return;
		}
	}
	/*
	 * A heartbeat of the incarnation we just declared down may have been
	 * sent before its BYE or its end and read only now (they are read
	 * once per tick): the peer is back when it is still heard K ticks
	 * after the "down".
	 */
	if (p->state == PEER_DOWN && hb->incarnation == p->inc &&
	    d->ticks - p->down_tick <= d->o.hb_miss) {
		d->c.hb_held_off++;
		ipd_log(LOG_D, "peer node %u: heartbeat %u ticks after its down: not back yet",
			p->node, (unsigned int)(d->ticks - p->down_tick));
		return;
	}
	/* unknown or down: try a handshake over the fabric */
	if (p->inc != hb->incarnation)
		p->last_tx_cookie = 0;
	p->inc = hb->incarnation;
	p->inc_auth = false;
	p->mbox = hb->mbox;
	p->last_seen = d->ticks;
	ipd_peer_connect(d, p);
}

static void hb_recv_all(struct ipd *d)
{
	uint8_t buf[256];
	struct ipd_hb hb;

	if (d->hbfd < 0)
		return;
	for (int i = 0; i < 1024; i++) {
		ssize_t len = recv(d->hbfd, buf, sizeof(buf), MSG_DONTWAIT);

		if (len < 0)
			break;
		if (ipd_hb_decode(buf, (size_t)len, &hb)) {
			d->c.hb_bad++;
			continue;
		}
		hb_handle(d, &hb);
	}
}

/*
 * Tell the driver's kernel path which peers are up, at which address and
 * kernel path mailbox: small packets to them go through the kernel from
 * then on.  A peer still connecting whose ring we hold is listed without
 * a mailbox: the kernel takes its small packets (it may be up already on
 * its side and send them) and sends ours through us.  Unlisted, the first
 * ping after a handshake lost its request in the kernel of the side that
 * finished last (rx_unknown_node).  Only when the list changed (no system
 * call per tick).
 */
void ipd_kpath_sync(struct ipd *d)
{
	struct exanet_ip_peer list[IPD_MAX_NODES];
	struct exanet_ip_peers req = { 0 };
	unsigned int n = 0;

	if (d->kmbox == IPD_NO_KMBOX)
		return;
	for (unsigned int i = 0; i < d->nactive; i++) {
		const struct peer *p = d->active[i];

		if (!ipd_peer_sendable(p) || !p->ip)
			continue;
		list[n].node = p->node;
		list[n].addr = p->ip;
		list[n].mbox = p->state == PEER_UP ? p->kmbox : IPD_NO_KMBOX;
		list[n].flags = 0;
		n++;
	}
	if (n == d->nkpeers && !memcmp(list, d->kpeers, n * sizeof(list[0])))
		return;
	req.count = n;
	req.peers = (uintptr_t)list;
	if (ioctl(exanet_dev_fd(d->dev), EXANET_IOC_IP_PEERS, &req) < 0) {
		ipd_log(LOG_W, "kernel path: peer list of %u: %s", n, strerror(errno));
		return;
	}
	memcpy(d->kpeers, list, n * sizeof(list[0]));
	d->nkpeers = n;
	ipd_log(LOG_D, "kernel path: %u peers", n);
}

void ipd_tick(struct ipd *d)
{
	d->ticks++;
	d->icmp_budget = 10;
	hb_recv_all(d);
	hb_send(d, 0);
	for (unsigned int i = 0; i < d->nactive; i++) {
		struct peer *p = d->active[i];

		if (p->state == PEER_DOWN || p->state == PEER_UNKNOWN) {
			if (p->rx.mem || p->tx.stage)	/* never: a last resort */
				ipd_peer_down(d, p, "found at a tick");
			continue;
		}
		if (p->state == PEER_CONNECTING &&
		    d->ticks - p->connect_tick > IPD_HANDSHAKE_TIMEOUT_MS / d->o.hb_interval_ms) {
			char why[64];

			d->c.handshake_timeouts++;
			snprintf(why, sizeof(why), "handshake not completed within %u ms",
				 IPD_HANDSHAKE_TIMEOUT_MS);
			ipd_peer_down(d, p, why);
			continue;
		}
		if (p->state == PEER_UP || p->state == PEER_CONNECTING) {
			if (d->ticks - p->last_seen > d->o.hb_miss) {
				if (!p->suspect) {
					p->suspect = true;
					p->probe_tick = d->ticks;
				}
				if (!p->inc_auth) {
					/* never confirmed over the fabric: nothing to ask */
					ipd_peer_down(d, p, "heartbeats missed");
					continue;
				}
				if (d->ticks - p->probe_tick > 10000 / d->o.hb_interval_ms) {
					ipd_peer_down(d, p, "heartbeats missed, no answer over the fabric");
					continue;
				}
				if (p->probe_chan < 0)
					ipd_send_probe(d, p);
			} else {
				p->suspect = false;
			}
		}
		if (p->state == PEER_CONNECTING) {
			if (!p->rx.mem) {
				if (!ipd_rx_ring_new(d, p))
					ipd_send_offer(d, p);
			} else if (!p->rx.accepted) {
				ipd_send_offer(d, p);
			}
			if (!p->tx.ready && p->state == PEER_CONNECTING)
				ipd_send_need_ring(d, p);
		}
		if (p->rx.credit_due)
			ipd_send_credit(d, p);
	}
	if (d->ctl_busy)
		ipd_ctl_poll(d);
	ipd_comp_check_stale(d);
}

void ipd_goodbye(struct ipd *d)
{
	for (unsigned int i = 0; i < d->nactive; i++) {
		struct peer *p = d->active[i];
		struct ipd_msg m = { .type = IPD_MSG_BYE };

		if (p->state != PEER_UP && p->state != PEER_CONNECTING)
			continue;
		m.src_cookie = p->rx.cookie ? p->rx.cookie : 1;
		m.dst_cookie = p->tx.cookie;
		m.dst_incarnation = p->inc;
		for (int tries = 0; tries < 1000 && ipd_send_msg(d, p, &m) == -EAGAIN; tries++)
			usleep(100);
	}
	hb_send(d, 1);
	/* let the goodbyes leave before the interfaces go away */
	for (int tries = 0; tries < 200 && d->ctl_busy; tries++) {
		ipd_ctl_poll(d);
		usleep(1000);
	}
	for (unsigned int i = 0; i < d->nactive; i++) {
		struct peer *p = d->active[i];

		ipd_peer_drop_conn(d, p);
	}
}
