// SPDX-License-Identifier: MIT
/*
 * exanet-ipd data path and peer protocol: receive rings, batching, credits,
 * handshakes, heartbeats.  Everything here after setup is loads and stores
 * to the NI and memory, except the TUN reads/writes and the heartbeat socket
 * (once per tick).  See Documentation/exanet/ipd.md.
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

static int send_msg(struct ipd *d, struct peer *p, struct ipd_msg *m);

/* Forget our sender state for p's ring (after an error, a new ring, or
 * teardown).  Writes still in flight become orphans: their channel's
 * cookie no longer matches and they are only reaped. */
static void tx_drop(struct ipd *d, struct peer *p)
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
static int rx_ring_new(struct ipd *d, struct peer *p)
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
static void peer_drop_conn(struct ipd *d, struct peer *p)
{
	tx_drop(d, p);
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
			peer_drop_conn(d, p);
		}
		return;
	}
	ipd_log(LOG_I, "peer node %u (incarnation %016llx) down: %s", p->node,
		(unsigned long long)p->inc, why);
	d->c.peer_down_events++;
	peer_drop_conn(d, p);
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

static void send_offer(struct ipd *d, struct peer *p)
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
	send_msg(d, p, &m);
}

static void send_need_ring(struct ipd *d, struct peer *p)
{
	struct ipd_msg m = { .type = IPD_MSG_NEED_RING };

	m.src_cookie = p->rx.cookie;
	m.dst_cookie = p->last_tx_cookie;
	m.dst_incarnation = p->inc;
	send_msg(d, p, &m);
}

/* UP when both directions work, CONNECTING while one is being set up. */
static void peer_update(struct ipd *d, struct peer *p)
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
static void peer_connect(struct ipd *d, struct peer *p)
{
	if (p->state == PEER_UP || p->rx.mem || p->tx.ready)
		peer_drop_conn(d, p);
	p->state = PEER_CONNECTING;
	p->connect_tick = d->ticks;
	p->c.handshakes++;
	if (rx_ring_new(d, p))
		return;
	send_offer(d, p);
	send_need_ring(d, p);
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
	peer_drop_conn(d, p);
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

static void send_probe(struct ipd *d, struct peer *p)
{
	struct ipd_msg m = { .type = IPD_MSG_PROBE };
	int ch;

	m.src_cookie = p->rx.cookie;
	m.dst_cookie = p->tx.cookie;
	m.dst_incarnation = p->inc;
	ch = send_msg(d, p, &m);
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

static int send_msg(struct ipd *d, struct peer *p, struct ipd_msg *m)
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

static void send_credit(struct ipd *d, struct peer *p)
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
	ch = send_msg(d, p, &m);
	if (ch < 0)
		return;		/* still due */
	d->ctl[ch].p = p;
	p->rx.credit_chan = ch;
	p->rx.credit_due = false;
	p->rx.credit_pos = p->rx.cons;
	p->rx.credit_wseq = p->rx.wseq;
}

static void maybe_credit(struct ipd *d, struct peer *p)
{
	uint64_t ring = (uint64_t)1 << d->o.ring_order;

	if (p->rx.cons - p->rx.credit_pos >= ring / 4 ||
	    p->rx.wseq - p->rx.credit_wseq >= IPD_NSLOTS / 4)
		p->rx.credit_due = true;
	if (p->rx.credit_due)
		send_credit(d, p);
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
	tx_drop(d, p);
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
	if (!p->rx.mem && !rx_ring_new(d, p))
		send_offer(d, p);
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
	send_msg(d, p, &a);
	peer_update(d, p);
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
		rx_ring_new(d, p);
	send_offer(d, p);
	peer_update(d, p);
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
	peer_update(d, p);
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
		tx_drop(d, p);
		send_need_ring(d, p);
		peer_update(d, p);
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
static void comp_check_stale(struct ipd *d)
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
static bool peer_sendable(const struct peer *p)
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

	if (!p || !peer_sendable(p))
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
static int tun_write(struct ipd *d, const struct ipd_rec_hdr *h, const uint8_t *pkt)
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
	if (!tun_write(d, &h, out))
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
	if (!peer_sendable(p)) {
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

		if (!peer_sendable(p)) {
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

/* -------------------------------------------------- RDMA: receiving */

static void deliver(void *arg, const struct ipd_rec_hdr *h, const uint8_t *pkt)
{
	struct ipd *d = arg;

	if (!tun_write(d, h, pkt)) {
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
	if (!rx_ring_new(d, p))
		send_offer(d, p);
	peer_update(d, p);
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
		maybe_credit(d, p);
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
				send_credit(d, p);
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
	peer_connect(d, p);
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

		if (!peer_sendable(p) || !p->ip)
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
					send_probe(d, p);
			} else {
				p->suspect = false;
			}
		}
		if (p->state == PEER_CONNECTING) {
			if (!p->rx.mem) {
				if (!rx_ring_new(d, p))
					send_offer(d, p);
			} else if (!p->rx.accepted) {
				send_offer(d, p);
			}
			if (!p->tx.ready && p->state == PEER_CONNECTING)
				send_need_ring(d, p);
		}
		if (p->rx.credit_due)
			send_credit(d, p);
	}
	if (d->ctl_busy)
		ipd_ctl_poll(d);
	comp_check_stale(d);
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
		for (int tries = 0; tries < 1000 && send_msg(d, p, &m) == -EAGAIN; tries++)
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

		peer_drop_conn(d, p);
	}
}
