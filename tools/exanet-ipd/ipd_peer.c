// SPDX-License-Identifier: MIT
/*
 * exanet-ipd: peers and their protocol over the packetizer: the peer
 * table, handshakes (offer, need-ring, accept), credits, probes of a
 * stalled peer, and the mailbox that receives those messages.
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

static const char *const state_names[] = {
	[PEER_UNKNOWN] = "unknown", [PEER_DOWN] = "down",
	[PEER_CONNECTING] = "connecting", [PEER_UP] = "up",
};

const char *ipd_state_name(enum peer_state s)
{
	return state_names[s];
}

static uint32_t new_cookie(void)
{
	uint32_t c = 0;

	while (!c) {
		if (getrandom(&c, sizeof(c), 0) != sizeof(c))
			c = (uint32_t)exa_clock_ns() ^ (uint32_t)getpid();
	}
	return c;
}

static char *ipstr(uint32_t ip, char *buf)
{
	struct in_addr a = { .s_addr = ip };

	return strcpy(buf, inet_ntoa(a));
}

/* ------------------------------------------------------------ peers */

struct peer *ipd_peer_get(struct ipd *d, uint32_t node)
{
	struct peer *p;

	if (node >= d->num_nodes || node >= IPD_MAX_NODES || node == d->node)
		return NULL;
	p = d->peers[node];
	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->node = node;
	p->state = PEER_UNKNOWN;
	p->kmbox = IPD_NO_KMBOX;
	p->rx.credit_chan = -1;
	p->probe_chan = -1;
	d->peers[node] = p;
	d->active[d->nactive++] = p;
	return p;
}

struct peer *ipd_peer_by_ip(struct ipd *d, uint32_t ip)
{
	static struct peer *last;

	if (!ip)
		return NULL;
	if (last && last->ip == ip)
		return last;
	for (unsigned int i = 0; i < d->nactive; i++) {
		if (d->active[i]->ip == ip) {
			last = d->active[i];
			return last;
		}
	}
	return NULL;
}

static void region_free(uint8_t **mem, size_t *len, struct exanet_mr **mr)
{
	if (*mr)
		exanet_dereg_mr(*mr);	/* in-flight transfers on it now fail */
	if (*mem)
		munmap(*mem, *len);
	*mr = NULL;
	*mem = NULL;
	*len = 0;
}

static int region_alloc(struct ipd *d, size_t len, uint8_t **mem, struct exanet_mr **mr)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	int err;

	if (m == MAP_FAILED)
		return -errno;
	err = exanet_reg_mr(d->dev, m, len, 0, mr);
	if (err) {
		munmap(m, len);
		return err;
	}
	*mem = m;
	return 0;
}

int ipd_send_msg(struct ipd *d, struct peer *p, struct ipd_msg *m);

/* Forget our sender state for p's ring (after an error, a new ring, or
 * teardown).  Writes still in flight become orphans: their channel's
 * cookie no longer matches and they are only reaped. */
void ipd_tx_drop(struct ipd *d, struct peer *p)
{
	if (d->tx_guess == p)
		d->tx_guess = NULL;
	if (d->held == p) {
		d->held = NULL;
		p->c.tx_drops++;
	}
	if (p->tx.ready)
		p->last_tx_cookie = p->tx.cookie;
	region_free(&p->tx.stage, &p->tx.stagelen, &p->tx.mr);
	memset(&p->tx, 0, sizeof(p->tx));
}

/* A fresh receive ring for p (at a new address: the new one is mapped
 * before the old one is unmapped, and the old one is unregistered, so late
 * writes meant for it fail instead of landing in the new one). */
int ipd_rx_ring_new(struct ipd *d, struct peer *p)
{
	size_t ring = (size_t)1 << d->o.ring_order, len = IPD_NOTIF_AREA + ring;
	struct exanet_mr *mr = NULL;
	uint8_t *mem = NULL;
	int err;

	err = region_alloc(d, len, &mem, &mr);
	region_free(&p->rx.mem, &p->rx.memlen, &p->rx.mr);
	memset(&p->rx, 0, sizeof(p->rx));
	p->rx.credit_chan = -1;
	if (err) {
		ipd_log(LOG_E, "peer %u: receive ring of %zu KiB: %s", p->node, ring >> 10,
			strerror(-err));
		return err;
	}
	p->rx.mem = mem;
	p->rx.memlen = len;
	p->rx.mr = mr;
	p->rx.notif = (struct exanet_rdma_notif *)mem;
	p->rx.ring = mem + IPD_NOTIF_AREA;
	p->rx.cookie = new_cookie();
	exanet_mr_raddr(mr, mem, &p->rx.raddr);
	ipd_log(LOG_D, "peer %u: receive region %#llx + %zu, cookie %08x", p->node,
		(unsigned long long)p->rx.raddr.va, len, p->rx.cookie);
	return 0;
}

/* Drop everything about the connection with p (both directions). */
void ipd_peer_drop_conn(struct ipd *d, struct peer *p)
{
	ipd_tx_drop(d, p);
	region_free(&p->rx.mem, &p->rx.memlen, &p->rx.mr);
	memset(&p->rx, 0, sizeof(p->rx));
	p->rx.credit_chan = -1;
}

/*
 * A peer that is down (or never heard of) holds no region: its receive
 * region and the staging copy of its ring go with the "down", and nothing
 * allocates new ones until its heartbeat returns (hb_handle).  Called again
 * for a peer already down it only releases what it still holds.
 */
void ipd_peer_down(struct ipd *d, struct peer *p, const char *why)
{
	if (p->state == PEER_DOWN || p->state == PEER_UNKNOWN) {
		if (p->rx.mem || p->tx.stage) {
			ipd_log(LOG_W, "peer node %u is %s but held a region: released (%s)",
				p->node, ipd_state_name(p->state), why);
			ipd_peer_drop_conn(d, p);
		}
		return;
	}
	ipd_log(LOG_I, "peer node %u (incarnation %016llx) down: %s", p->node,
		(unsigned long long)p->inc, why);
	d->c.peer_down_events++;
	ipd_peer_drop_conn(d, p);
	p->state = PEER_DOWN;
	p->down_tick = d->ticks;
	p->inc_auth = false;
	ipd_kpath_sync(d);
	p->probe_chan = -1;
	p->suspect = false;
}

/* A handshake begins (or a live peer's ring is being replaced): the clock
 * of IPD_HANDSHAKE_TIMEOUT_MS starts. */
static void peer_connecting(struct ipd *d, struct peer *p)
{
	if (p->state != PEER_CONNECTING)
		p->connect_tick = d->ticks;
	p->state = PEER_CONNECTING;
}

void ipd_send_offer(struct ipd *d, struct peer *p)
{
	struct ipd_msg m = { .type = IPD_MSG_OFFER };

	if (!p->rx.mem)
		return;
	m.ring_order = (uint8_t)d->o.ring_order;
	m.src_cookie = p->rx.cookie;
	m.dst_cookie = p->tx.ready ? p->tx.cookie : 0;
	m.dst_incarnation = p->inc;
	exanet_raddr_encode(&p->rx.raddr, m.u.offer.ring);
	m.u.offer.ipv4 = d->ip;
	m.u.offer.mtu = d->o.mtu;
	m.u.offer.t_ns = (uint64_t)exa_clock_ns();
	m.u.offer.kmbox = d->kmbox;
	ipd_send_msg(d, p, &m);
}

void ipd_send_need_ring(struct ipd *d, struct peer *p)
{
	struct ipd_msg m = { .type = IPD_MSG_NEED_RING };

	m.src_cookie = p->rx.cookie;
	m.dst_cookie = p->last_tx_cookie;
	m.dst_incarnation = p->inc;
	ipd_send_msg(d, p, &m);
}

/* UP when both directions work, CONNECTING while one is being set up. */
void ipd_peer_update(struct ipd *d, struct peer *p)
{
	char ip[20];

	if (p->state == PEER_DOWN || p->state == PEER_UNKNOWN)
		return;
	if (p->rx.accepted && p->tx.ready) {
		if (p->state != PEER_UP) {
			p->state = PEER_UP;
			p->up_since_tick = d->ticks;
			d->c.peer_up_events++;
			ipd_log(LOG_I, "peer node %u up: %s, incarnation %016llx, handshake rtt "
				"%lld us", p->node, ipstr(p->ip, ip), (unsigned long long)p->inc,
				(long long)(p->rtt_ns / 1000));
		}
	} else if (p->state == PEER_UP) {
		peer_connecting(d, p);
		d->c.conn_resets++;
		ipd_log(LOG_W, "peer node %u: %s ring being replaced", p->node,
			p->tx.ready ? "our receive" : "its receive");
	}
	ipd_kpath_sync(d);
}

/* Start the handshake with p: a fresh receive ring, OFFER, and ask for
 * its ring (NEED_RING, repeated every tick while we have none). */
void ipd_peer_connect(struct ipd *d, struct peer *p)
{
	if (p->state == PEER_UP || p->rx.mem || p->tx.ready)
		ipd_peer_drop_conn(d, p);
	p->state = PEER_CONNECTING;
	p->connect_tick = d->ticks;
	p->c.handshakes++;
	if (ipd_rx_ring_new(d, p))
		return;
	ipd_send_offer(d, p);
	ipd_send_need_ring(d, p);
}

/*
 * Incarnation check of a message from p.  OFFER and NEED_RING come first
 * from a new daemon and may introduce a new incarnation (the fabric vouches
 * for the source node and PDID); a known dead incarnation never comes back.
 * Other messages must come from the incarnation we talk to.  0 = go on.
 */
static int peer_auth(struct ipd *d, struct peer *p, const struct ipd_msg *m)
{
	uint64_t inc = m->src_incarnation;

	if (inc == p->inc && (p->inc_auth || m->type == IPD_MSG_OFFER ||
			      m->type == IPD_MSG_NEED_RING || m->type == IPD_MSG_ACCEPT)) {
		p->inc_auth = true;
		return 0;
	}
	if (m->type != IPD_MSG_OFFER && m->type != IPD_MSG_NEED_RING)
		return -1;
	for (unsigned int i = 0; i < 4; i++)
		if (p->dead_inc[i] == inc)
			return -1;
	if (p->inc && p->inc_auth) {
		d->c.peer_restarts++;
		ipd_log(LOG_I, "peer node %u restarted (incarnation %016llx -> %016llx)",
			p->node, (unsigned long long)p->inc, (unsigned long long)inc);
	}
	if (p->inc) {
		p->dead_inc[p->dead_idx++ % 4] = p->inc;
		if (p->state != PEER_UNKNOWN)
			p->state = PEER_DOWN;
	}
	/* a probe of the old incarnation says nothing about the new one */
	p->suspect = false;
	p->probe_chan = -1;
	ipd_peer_drop_conn(d, p);
	p->last_tx_cookie = 0;
	p->inc = inc;
	p->inc_auth = true;
	return 0;
}

/* ----------------------------------------------- packetizer messages */

/*
 * Missed heartbeats are confirmed over the fabric before the peer is
 * declared down.  A PROBE into its mailbox is ACKed by its NI only while
 * the daemon lives (its mailbox is freed with it: NACK at once after a
 * kill); a node that is gone does not answer (TIMEOUT).  A peer whose
 * heartbeats were merely late (its VM or daemon stalled, the management
 * network lost some) stays up with its rings.
 */
static void probe_done(struct ipd *d, struct peer *p, int err)
{
	if (!p->suspect)
		return;
	if (!err) {
		d->c.probes_alive++;
		p->suspect = false;
		p->last_seen = d->ticks;
		ipd_log(LOG_I, "peer node %u missed %u heartbeats but answers over the fabric",
			p->node, d->o.hb_miss);
		return;
	}
	{
		char why[96];

		snprintf(why, sizeof(why), "heartbeats missed, fabric probe: %s", strerror(-err));
		ipd_peer_down(d, p, why);
	}
}

void ipd_send_probe(struct ipd *d, struct peer *p)
{
	struct ipd_msg m = { .type = IPD_MSG_PROBE };
	int ch;

	m.src_cookie = p->rx.cookie;
	m.dst_cookie = p->tx.cookie;
	m.dst_incarnation = p->inc;
	ch = ipd_send_msg(d, p, &m);
	if (ch < 0)
		return;		/* again at the next tick */
	d->c.probes++;
	d->ctl[ch].p = p;
	p->probe_chan = ch;
}

/* Reap finished control channels (MMIO status reads: only while busy). */
void ipd_ctl_poll(struct ipd *d)
{
	for (unsigned int ch = 0; ch < EXANET_PKT_CHANNELS; ch++) {
		uint64_t st;
		int err;

		if (!d->ctl[ch].busy)
			continue;
		st = exanet_chan_status(d->pkt, ch);
		err = exanet_status_errno(st);
		if (err == -EINPROGRESS)
			continue;
		d->ctl[ch].busy = 0;
		d->ctl_busy--;
		if (err)
			d->c.msg_tx_errors++;
		if (d->ctl[ch].p) {
			struct peer *p = d->ctl[ch].p;

			d->ctl[ch].p = NULL;
			if (p->rx.credit_chan == (int)ch) {
				p->rx.credit_chan = -1;
				if (err)	/* send the latest values again */
					p->rx.credit_due = true;
			}
			if (p->probe_chan == (int)ch) {
				p->probe_chan = -1;
				probe_done(d, p, err);
			}
		}
	}
}

int ipd_send_msg(struct ipd *d, struct peer *p, struct ipd_msg *m)
{
	uint8_t buf[IPD_MSG_MAX_SIZE];
	size_t len;
	int ch, ret;

	m->src_mbox = (uint8_t)exanet_mbox_id(d->mbox);
	m->src_incarnation = d->inc;
	len = ipd_msg_encode(m, buf);
	if (d->ctl_busy)
		ipd_ctl_poll(d);
	for (ch = 0; ch < EXANET_PKT_CHANNELS; ch++)
		if (!d->ctl[ch].busy)
			break;
	if (ch == EXANET_PKT_CHANNELS) {
		d->c.msg_tx_busy++;
		return -EAGAIN;
	}
	ret = exanet_send_on(d->pkt, (unsigned int)ch, p->node, p->mbox, buf, len);
	if (ret < 0) {
		d->c.msg_tx_errors++;
		return ret;
	}
	d->ctl[ch].busy = 1;
	d->ctl[ch].p = NULL;
	d->ctl_busy++;
	d->c.msg_tx++;
	return ch;
}

void ipd_send_credit(struct ipd *d, struct peer *p)
{
	struct ipd_msg m = { .type = IPD_MSG_CREDIT };
	int ch;

	if (p->rx.credit_chan >= 0)
		return;		/* one at a time; the next carries newer values */
	m.src_cookie = p->rx.cookie;
	m.dst_cookie = p->tx.cookie;
	m.dst_incarnation = p->inc;
	m.u.credit.cons_pos = p->rx.cons;
	m.u.credit.cons_wseq = p->rx.wseq;
	ch = ipd_send_msg(d, p, &m);
	if (ch < 0)
		return;		/* still due */
	d->ctl[ch].p = p;
	p->rx.credit_chan = ch;
	p->rx.credit_due = false;
	p->rx.credit_pos = p->rx.cons;
	p->rx.credit_wseq = p->rx.wseq;
}

void ipd_maybe_credit(struct ipd *d, struct peer *p)
{
	uint64_t ring = (uint64_t)1 << d->o.ring_order;

	if (p->rx.cons - p->rx.credit_pos >= ring / 4 ||
	    p->rx.wseq - p->rx.credit_wseq >= IPD_NSLOTS / 4)
		p->rx.credit_due = true;
	if (p->rx.credit_due)
		ipd_send_credit(d, p);
}

/* Start writing into the ring the peer offered (from its beginning). */
static int tx_setup(struct ipd *d, struct peer *p, const struct ipd_msg *m)
{
	struct exanet_raddr ra;
	uint64_t size = (uint64_t)1 << m->ring_order;
	int err;

	if (exanet_raddr_decode(m->u.offer.ring, &ra) || ra.node != p->node) {
		d->c.msg_bad++;
		return -EBADMSG;
	}
	ipd_tx_drop(d, p);
	p->tx.stagelen = size;
	err = region_alloc(d, size, &p->tx.stage, &p->tx.mr);
	if (err) {
		ipd_log(LOG_E, "peer %u: staging ring: %s", p->node, strerror(-err));
		p->tx.stagelen = 0;
		return err;
	}
	p->tx.ring = ra;
	p->tx.size = size;
	p->tx.cookie = m->src_cookie;
	p->tx.ready = true;
	return 0;
}

static void handle_offer(struct ipd *d, struct peer *p, const struct ipd_msg *m)
{
	struct ipd_msg a = { .type = IPD_MSG_ACCEPT };

	if (p->state == PEER_DOWN || p->state == PEER_UNKNOWN)
		peer_connecting(d, p);
	if (!p->rx.mem && !ipd_rx_ring_new(d, p))
		ipd_send_offer(d, p);
	/* sending polls the control channels: a PROBE that failed meanwhile
	 * may have declared the peer down, and a down peer gets no region */
	if (p->state == PEER_DOWN)
		return;
	if (!p->tx.ready || p->tx.cookie != m->src_cookie) {
		if (tx_setup(d, p, m))
			return;
	}
	p->ip = m->u.offer.ipv4;
	p->mtu = m->u.offer.mtu;
	p->kmbox = m->u.offer.kmbox;
	a.src_cookie = p->rx.cookie;
	a.dst_cookie = m->src_cookie;
	a.dst_incarnation = p->inc;
	a.u.accept.t_ns = m->u.offer.t_ns;
	a.u.accept.ipv4 = d->ip;
	a.u.accept.mtu = d->o.mtu;
	/* the kernel takes its small packets before our ACCEPT can make it
	 * up and send them */
	ipd_kpath_sync(d);
	ipd_send_msg(d, p, &a);
	ipd_peer_update(d, p);
}

static void handle_need_ring(struct ipd *d, struct peer *p, const struct ipd_msg *m)
{
	if (p->state == PEER_DOWN || p->state == PEER_UNKNOWN)
		peer_connecting(d, p);
	/* the peer lost the ring it wrote into (or never had one after it
	 * was in use): a fresh one, since our consumer state belongs to the
	 * old stream; a ring it has not accepted yet is just offered again */
	if (!p->rx.mem || (m->dst_cookie && m->dst_cookie == p->rx.cookie) ||
	    (!m->dst_cookie && p->rx.accepted))
		ipd_rx_ring_new(d, p);
	ipd_send_offer(d, p);
	ipd_peer_update(d, p);
}

static void handle_accept(struct ipd *d, struct peer *p, const struct ipd_msg *m)
{
	if (m->dst_cookie != p->rx.cookie || !p->rx.mem) {
		d->c.msg_stale++;
		return;
	}
	if (!p->rx.accepted) {
		p->rx.accepted = true;
		p->rtt_ns = exa_clock_ns() - (int64_t)m->u.accept.t_ns;
	}
	ipd_peer_update(d, p);
}

static void handle_credit(struct ipd *d, struct peer *p, const struct ipd_msg *m)
{
	uint64_t pos = m->u.credit.cons_pos;
	uint32_t w = m->u.credit.cons_wseq;

	if (!p->tx.ready || m->src_cookie != p->tx.cookie) {
		d->c.msg_stale++;
		return;
	}
	/* credits only move forward and never past what we sent */
	if (pos < p->tx.credit_pos || pos > p->tx.bstart || (int32_t)(w - p->tx.credit_wseq) < 0 ||
	    (int32_t)(p->tx.wseq - w) < 0) {
		d->c.credit_bad++;
		return;
	}
	p->tx.credit_pos = pos;
	p->tx.credit_wseq = w;
}

int ipd_mbox_poll(struct ipd *d)
{
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	int n = 0;

	for (;;) {
		struct ipd_msg m;
		struct peer *p;
		ssize_t len = exanet_recv(d->mbox, buf, sizeof(buf), &info);

		if (len == 0)
			break;
		if (len < 0) {
			d->c.msg_bad++;
			if (len == -EIO)
				continue;
			break;
		}
		n++;
		d->c.msg_rx++;
		if (ipd_msg_decode(buf, (size_t)len, &m)) {
			d->c.msg_bad++;
			continue;
		}
		p = ipd_peer_get(d, info.src_node);
		if (!p) {
			d->c.msg_bad++;
			continue;
		}
		/*
		 * A peer we declared down gets no receive region from a
		 * handshake message: it may have been sent just before the
		 * peer died (or said goodbye) and arrive after the "down".  Its
		 * heartbeat starts a new handshake when it is back (a
		 * restarted daemon's too, a tick later); until then the
		 * message is dropped.
		 */
		if (p->state == PEER_DOWN && m.dst_incarnation == d->inc &&
		    (m.type == IPD_MSG_OFFER || m.type == IPD_MSG_NEED_RING)) {
			d->c.msg_peer_down++;
			ipd_log(LOG_D, "peer node %u is down: %s of incarnation %016llx dropped, no "
				"receive ring before its heartbeat returns", p->node,
				m.type == IPD_MSG_OFFER ? "OFFER" : "NEED_RING",
				(unsigned long long)m.src_incarnation);
			continue;
		}
		if (m.dst_incarnation != d->inc || peer_auth(d, p, &m)) {
			d->c.msg_stale++;
			continue;
		}
		p->mbox = m.src_mbox;
		p->last_seen = d->ticks;
		switch (m.type) {
		case IPD_MSG_OFFER:
			handle_offer(d, p, &m);
			break;
		case IPD_MSG_NEED_RING:
			handle_need_ring(d, p, &m);
			break;
		case IPD_MSG_ACCEPT:
			handle_accept(d, p, &m);
			break;
		case IPD_MSG_CREDIT:
			handle_credit(d, p, &m);
			break;
		case IPD_MSG_BYE:
			ipd_peer_down(d, p, "it said goodbye");
			break;
		case IPD_MSG_PROBE:
			break;		/* the NI's ACK answered it */
		}
	}
	return n;
}
