// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: the kernel path of IP over the fabric.
 *
 * exanet-ipd owns the TUN device exa0 and carries bulk data with RDMA
 * writes; every packet through it costs two task switches per node (the
 * application and the daemon).  Once the daemon attaches its TUN device
 * here (EXANET_IOC_IP_ATTACH) and lists its peers (EXANET_IOC_IP_PEERS),
 * small IPv4 packets to a listed peer are taken at POST_ROUTING (a
 * netfilter hook on that device), sent as mailbox messages from the
 * sender's own context through packetizer interfaces the driver holds,
 * and received from a mailbox of the driver's in NAPI, which hands them to
 * the stack as packets of the TUN device.  Everything else goes on to the
 * TUN device and the daemon, as before.
 *
 * Order per peer across both paths: every small packet carries the number
 * of packets its sender had passed on to the daemon for that peer
 * ("bulk"); the receiver counts the packets from that peer coming out of
 * the TUN device (an rx_handler on it) and delivers a small packet only
 * when the count matches: it holds one that is early (until the daemon's
 * packets from that peer stopped coming for EXANET_IP_HOLD_MS, at most
 * EXANET_IP_HOLD_MAX_MS; then the missing ones count as lost) and
 * drops one that is late (a later bulk packet got in first).  A bulk
 * packet that meets unprocessed small ones or held ones is delivered from
 * NAPI behind them.  Small packets among themselves: per-peer sequence
 * numbers, late ones dropped.  So the kernel path may lose packets (a
 * mailbox NACK, a fabric retransmission overtaken) as any NIC may, and
 * never delivers one twice.  Small packets take the daemon's way for a
 * while after a large one to the same peer, and while the daemon has not
 * read what is queued for it in the TUN device.  Left open: a packet the
 * daemon read but cannot send yet (the peer's ring full for longer than
 * that while) can still be overtaken (Documentation/exanet/ipd.md).
 *
 * Locking: rtnl serialises attach and detach (edev->ip changes under rtnl
 * and irq_lock); ip->lock (BH) protects the peers, the channels and the
 * receive state.  Nothing is handed to the stack under ip->lock: the stack
 * may send from there, and the hook takes ip->lock.
 */

#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/ip.h>
#include <linux/netdevice.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/random.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/busy_poll.h>
#include <net/ip.h>

#include "exanet_drv.h"

#define EXANET_IP_PKT_IFACES	4
#define EXANET_IP_CHANNELS	(EXANET_IP_PKT_IFACES * EXANET_PKT_CHANNELS)
#define EXANET_IP_MBOX_SLOTS	1024
#define EXANET_IP_MAX_HELD	64	/* per peer */
#define EXANET_IP_WAIT_US	500	/* for a free channel */
#define EXANET_IP_WAIT_PEER_US	2000	/* for the answers before a packet to the daemon */
#define EXANET_IP_LATE_RUN	4	/* late in a row: the count is wrong */
#define EXANET_IP_HOLD_MAX_MS	1000	/* a held packet waits at most this long */
/* Small packets to a peer take the daemon's way this long after a large one. */
#define EXANET_IP_QUIET_NS	(200 * NSEC_PER_MSEC)
/*
 * After the TUN device dropped packets (its queue was full), the counts of
 * the peers are off by the packets lost: small packets to a peer take the
 * daemon's way until nothing went to it through the daemon for this long;
 * the next one then tells the receiver to take its count (EXANET_IP_F_RESYNC).
 * The wait after the last daemon packet is EXANET_IP_QUIET_NS's, which
 * must not be the shorter one.
 */
#define EXANET_IP_RESYNC_NS	(200 * NSEC_PER_MSEC)
/* Packets counted to the TUN device that it never counts are given up then. */
#define EXANET_IP_TUN_LAG_MAX_NS	(1000 * NSEC_PER_MSEC)
static_assert(EXANET_IP_QUIET_NS >= EXANET_IP_RESYNC_NS);

/* What the kernel path did; kept in edev across attachments. */
struct exanet_ip_stats {
	u64 tx_packets, tx_bytes, tx_frags, tx_to_daemon;
	u64 tx_acked, tx_nacked, tx_timeouts, tx_busy_drops, tx_tun_drops_seen;
	u64 tx_unanswered, tx_daemon_behind, tx_tun_lag_given_up;
	u64 rx_packets, rx_bytes, rx_frags, rx_bad, rx_unknown_node;
	u64 rx_incomplete, rx_late, rx_held, rx_hold_expired, rx_no_mem;
	u64 rx_from_daemon, rx_daemon_behind, rx_resync, rx_new_epoch, rx_down;
};

/* One peer node: send and receive state. */
struct exanet_ip_node {
	u32 node;
	__be32 addr;
	u32 mbox;		/* its kernel path mailbox, or EXANET_IP_NO_MBOX */
	bool listed;

	u32 tx_seq;		/* next small packet's sequence number */
	u32 bulk_sent;		/* packets passed on to the daemon for it */
	u64 bulk_last_ns;	/* when the last one was */
	u64 tun_mark;		/* ip->tun_handed after the last one */
	bool need_resync;	/* the count may be off: TUN drops, not listed */
	u32 inflight;		/* fragments without an answer yet */

	u32 rx_epoch;		/* of its kernel path, 0: none seen yet */
	u32 bulk_rcvd;		/* packets from it out of the TUN device */
	unsigned long bulk_rcvd_at;	/* jiffies of the last one */
	u32 bulk_forgiven;	/* of which counted as lost by a hold that expired */
	u32 late_run;		/* small packets in a row dropped as late */
	u32 rx_seq;		/* last small packet taken */
	bool rx_any;
	struct sk_buff *part;	/* packet being reassembled */
	u32 part_seq, part_bulk, part_done;
	u8 part_next, part_nfrags, part_flags;
	u16 part_csum_start, part_csum_offset;
	struct sk_buff_head held;
};

/* skb->cb of a packet the kernel path hands to the stack. */
struct exanet_ip_cb {
	const void *owner;	/* the exanet_ip: the rx_handler lets it pass */
	unsigned long since;	/* held: jiffies when it was complete */
	u32 bulk;
	bool resync;		/* held: takes the sender's count when due */
};

#define EXANET_IP_CB(skb) ((struct exanet_ip_cb *)(skb)->cb)

struct exanet_ip {
	struct exanet_drv_dev *edev;
	struct exanet_drv_file *ef;
	struct net_device *tun;
	netdevice_tracker tun_tracker;
	struct net *net;
	struct nf_hook_ops hook;
	struct list_head node;		/* on exanet_ip_list, under rtnl */
	u32 max_len;
	u32 epoch;			/* ours, in every first fragment */
	u64 tun_drops;			/* the TUN device's tx_dropped, last seen */
	u64 tun_drop_ns;		/* when it last grew */
	u64 tun_handed;			/* packets handed to the TUN device */
	u64 tun_base;			/* its tx_packets + tx_dropped before them */

	u32 pkt[EXANET_IP_PKT_IFACES];
	void __iomem *pkt_page[EXANET_IP_PKT_IFACES];
	u32 npkt;
	u32 mbox;
	bool have_mbox;
	void __iomem *mbox_page;
	struct exanet_mbox_slot *slots;
	u32 head, published;		/* free-running */

	spinlock_t lock;			/* BH: everything below */
	struct exanet_ip_node *chan[EXANET_IP_CHANNELS];
	struct xarray nodes;		/* node id -> exanet_ip_node */
	struct exanet_ip_node **listed;	/* the daemon's list, by address */
	u32 nlisted;
	struct sk_buff_head daemon_behind; /* TUN packets waiting for NAPI */
	struct timer_list hold_timer;
	u8 txbuf[EXANET_IP_MAX_LEN];

	struct net_device napi_dev;	/* dummy: NAPI needs a device */
	struct napi_struct napi;
	bool napi_on;
	bool hooked, rx_handler_on;
};

static LIST_HEAD(exanet_ip_list);	/* attachments, under rtnl */

/* Stats live in a static per-device array: no lifetime of their own. */
static struct exanet_ip_stats exanet_ip_stats[EXANET_MAX_DEVICES];
#define IP_STAT(ip, f) (exanet_ip_stats[(ip)->edev->index].f++)

static struct exanet_ip_node *exanet_ip_by_addr(struct exanet_ip *ip, __be32 addr)
{
	u32 i;

	for (i = 0; i < ip->nlisted; i++)
		if (ip->listed[i]->addr == addr)
			return ip->listed[i];
	return NULL;
}

/* ip->lock: a node that was a peer and is not listed now (down, restarting). */
static struct exanet_ip_node *exanet_ip_unlisted_by_addr(struct exanet_ip *ip,
							 __be32 addr)
{
	struct exanet_ip_node *pn;
	unsigned long idx;

	xa_for_each(&ip->nodes, idx, pn)
		if (!pn->listed && pn->addr == addr)
			return pn;
	return NULL;
}

/* ---------------------------------------------------------------- send */

static void __iomem *exanet_ip_chan_regs(struct exanet_ip *ip, u32 c)
{
	return ip->pkt_page[c / EXANET_PKT_CHANNELS] +
	       (c % EXANET_PKT_CHANNELS) * EXANET_PKT_CHAN_STRIDE;
}

/* ip->lock: collect the answers of finished fragments. */
static void exanet_ip_reap(struct exanet_ip *ip)
{
	u32 i, c, busy;
	u64 st;

	for (i = 0; i < ip->npkt; i++) {
		bool any = false;

		for (c = 0; c < EXANET_PKT_CHANNELS; c++)
			any |= !!ip->chan[i * EXANET_PKT_CHANNELS + c];
		if (!any)
			continue;
		/* The NI picks up fabric packets (the answers) on this read. */
		busy = exanet_rd(ip->edev, EXANET_REG_PKT_BASE(ip->pkt[i]) +
				 EXANET_PKT_BUSY);
		for (c = 0; c < EXANET_PKT_CHANNELS; c++) {
			u32 k = i * EXANET_PKT_CHANNELS + c;

			if (!ip->chan[k] || (busy & BIT(c)))
				continue;
			st = readq(exanet_ip_chan_regs(ip, k) + EXANET_PKT_STATUS);
			switch (EXANET_ST_STATE(st)) {
			case EXANET_CHAN_ACK:
				IP_STAT(ip, tx_acked);
				break;
			case EXANET_CHAN_TIMEOUT:
				IP_STAT(ip, tx_timeouts);
				break;
			default:
				IP_STAT(ip, tx_nacked);
				exanet_dbg(ip->edev, "ip: node %u refused a fragment (reason %u)\n",
					   ip->chan[k]->node, EXANET_ST_REASON(st));
			}
			ip->chan[k]->inflight--;
			ip->chan[k] = NULL;
		}
	}
}

static u32 exanet_ip_free_channels(struct exanet_ip *ip)
{
	u32 k, n = 0;

	for (k = 0; k < ip->npkt * EXANET_PKT_CHANNELS; k++)
		n += !ip->chan[k];
	return n;
}

static void exanet_ip_arm(struct exanet_ip *ip)
{
	exanet_wr(ip->edev, EXANET_REG_MBOX_BASE(ip->mbox) + EXANET_MBOX_IRQ,
		  EXANET_IRQ_ARM(0));
}

/*
 * ip->lock: collect answers (bounded by @us) until @pn, if given, has all
 * of its answers and @need channels are free.  Answers are collected only
 * when needed: every poll of the NI starts a poll lease
 * (Documentation/fabric.md, section 8), during which the emulated NI
 * expects this node's CPU to pick up its fabric packets, so a reply to a
 * node that sleeps after its send would wait for the lease to run out.
 * Arming the mailbox interrupt again ends the lease.
 */
static bool exanet_ip_reap_until(struct exanet_ip *ip,
				 struct exanet_ip_node *pn, u32 need,
				 unsigned int us)
{
	ktime_t end = ktime_add_us(ktime_get(), us);
	bool ok;

	for (;;) {
		exanet_ip_reap(ip);
		ok = (!pn || !pn->inflight) &&
		     exanet_ip_free_channels(ip) >= need;
		if (ok || ktime_after(ktime_get(), end))
			break;
		cpu_relax();
	}
	exanet_ip_arm(ip);
	return ok;
}

/* ip->lock: wait (bounded) until @need channels are free. */
static bool exanet_ip_wait_channels(struct exanet_ip *ip, u32 need)
{
	if (exanet_ip_free_channels(ip) >= need)
		return true;
	return exanet_ip_reap_until(ip, NULL, need, EXANET_IP_WAIT_US);
}

/*
 * ip->lock: a packet to @pn goes to the daemon; small ones sent before it
 * must be in the peer's mailbox first (its rx_handler then lets the
 * daemon's packet wait behind them): the mailbox and the RDMA ring are
 * not ordered against each other on the fabric.  Bounded: a peer that
 * does not answer (gone) does not hold the sender up.
 */
static void exanet_ip_wait_peer(struct exanet_ip *ip, struct exanet_ip_node *pn)
{
	if (!exanet_ip_reap_until(ip, pn, 0, EXANET_IP_WAIT_PEER_US))
		IP_STAT(ip, tx_unanswered);
}

static void exanet_ip_post(struct exanet_ip *ip, struct exanet_ip_node *pn,
			   const void *msg, u32 len)
{
	u64 words[EXANET_MAX_PAYLOAD / 8] = { 0 };
	void __iomem *regs;
	u32 k, w;

	for (k = 0; ip->chan[k]; k++)
		;
	regs = exanet_ip_chan_regs(ip, k);
	memcpy(words, msg, len);
	for (w = 0; w < DIV_ROUND_UP(len, 8); w++)
		writeq(words[w], regs + EXANET_PKT_PAYLOAD + 8 * w);
	writeq(EXANET_DOORBELL(pn->node, pn->mbox, len),
	       regs + EXANET_PKT_DOORBELL);
	ip->chan[k] = pn;
	pn->inflight++;
	IP_STAT(ip, tx_frags);
}

/* ip->lock, enough free channels: send @skb (linear copy in txbuf). */
static void exanet_ip_send(struct exanet_ip *ip, struct exanet_ip_node *pn,
			   struct sk_buff *skb, u32 nfrags, bool resync)
{
	u8 msg[EXANET_MAX_PAYLOAD];
	struct exanet_ip_frag *f = (void *)msg;
	struct exanet_ip_first *first = (void *)(msg + EXANET_IP_HDR_LEN);
	u32 len = skb->len, off = 0, i, n;

	skb_copy_bits(skb, 0, ip->txbuf, len);
	for (i = 0; i < nfrags; i++) {
		u32 hdr = i ? EXANET_IP_HDR_LEN : EXANET_IP_FIRST_HDR_LEN;

		memset(msg, 0, hdr);
		f->magic = EXANET_IP_MAGIC;
		f->index = i;
		f->nfrags = nfrags;
		f->seq = cpu_to_le32(pn->tx_seq);
		if (!i) {
			if (resync)
				f->flags |= EXANET_IP_F_RESYNC;
			first->bulk = cpu_to_le32(pn->bulk_sent);
			first->epoch = cpu_to_le32(ip->epoch);
			first->len = cpu_to_le16(len);
			if (skb->ip_summed == CHECKSUM_PARTIAL) {
				f->flags |= EXANET_IP_F_CSUM;
				first->csum_start =
					cpu_to_le16(skb_checksum_start_offset(skb));
				first->csum_offset = cpu_to_le16(skb->csum_offset);
			}
		}
		n = min(len - off, EXANET_MAX_PAYLOAD - hdr);
		memcpy(msg + hdr, ip->txbuf + off, n);
		off += n;
		exanet_ip_post(ip, pn, msg, hdr + n);
	}
	pn->tx_seq++;
	IP_STAT(ip, tx_packets);
	exanet_ip_stats[ip->edev->index].tx_bytes += len;
}

/*
 * How many IP packets the daemon's peer will see for @skb: GSO segments,
 * or the fragments ip_finish_output() cuts it into.
 */
static u32 exanet_ip_wire_packets(struct sk_buff *skb, struct net_device *dev)
{
	const struct iphdr *iph = ip_hdr(skb);
	u32 mtu = skb_dst(skb) ? dst_mtu(skb_dst(skb)) : READ_ONCE(dev->mtu);
	u32 hlen = iph->ihl * 4, per;

	if (skb_is_gso(skb))
		return max_t(u32, skb_shinfo(skb)->gso_segs, 1);
	if (skb->len <= mtu)
		return 1;
	if (((iph->frag_off & htons(IP_DF)) && !skb->ignore_df) || mtu <= hlen + 8)
		return 0;	/* refused with ICMP, not sent */
	per = (mtu - hlen) & ~7u;
	return DIV_ROUND_UP(skb->len - hlen, per);
}

/*
 * How many packets the TUN device takes in for @skb: one per GSO packet it
 * accepts as such, otherwise those exanet_ip_wire_packets() counts.
 */
static u32 exanet_ip_tun_packets(struct sk_buff *skb, struct net_device *dev)
{
	if (skb_is_gso(skb) && !netif_needs_gso(skb, netif_skb_features(skb)))
		return 1;
	return exanet_ip_wire_packets(skb, dev);
}

/* ip->lock: @skb goes on to the TUN device and the daemon (to @pn, if a peer's). */
static void exanet_ip_count_to_daemon(struct exanet_ip *ip, struct exanet_ip_node *pn,
				      struct sk_buff *skb, struct net_device *dev,
				      u64 now)
{
	ip->tun_handed += exanet_ip_tun_packets(skb, dev);
	if (!pn)
		return;
	pn->bulk_sent += exanet_ip_wire_packets(skb, dev);
	pn->bulk_last_ns = now;
	pn->tun_mark = ip->tun_handed;
}

/*
 * ip->lock: did the TUN device drop packets (its queue full) since we last
 * looked?  Then every peer's count may be off by one of them.
 */
static void exanet_ip_tun_drops(struct exanet_ip *ip, const struct rtnl_link_stats64 *st,
				u64 now)
{
	u32 i;

	if (st->tx_dropped == ip->tun_drops)
		return;
	ip->tun_drops = st->tx_dropped;
	ip->tun_drop_ns = now;
	for (i = 0; i < ip->nlisted; i++)
		ip->listed[i]->need_resync = true;
	IP_STAT(ip, tx_tun_drops_seen);
}

/*
 * ip->lock: has the daemon read (or the TUN device dropped) every packet
 * handed to it for @pn?  A daemon that does not read (waiting for a peer's
 * credits, stopped) keeps them in the TUN queue for as long as it likes,
 * and a small packet must not pass them.  The TUN device counts what it
 * took in, in its queue's order, as read (tx_packets) or dropped.
 */
static bool exanet_ip_daemon_caught_up(struct exanet_ip *ip, struct exanet_ip_node *pn,
				       const struct rtnl_link_stats64 *st, u64 now)
{
	u64 seen = st->tx_packets + st->tx_dropped - ip->tun_base;

	if ((s64)(seen - ip->tun_handed) > 0) {
		/* Packets not counted here (IPv6, before the attachment). */
		ip->tun_base += seen - ip->tun_handed;
		seen = ip->tun_handed;
	}
	if ((s64)(seen - pn->tun_mark) >= 0)
		return true;
	if (now - pn->bulk_last_ns < EXANET_IP_TUN_LAG_MAX_NS)
		return false;
	/* Counted, but lost before the TUN device took them in. */
	ip->tun_base -= pn->tun_mark - seen;
	IP_STAT(ip, tx_tun_lag_given_up);
	return true;
}

/* ip->lock: may @skb to @pn take the kernel path? */
static bool exanet_ip_kernel_path_ok(struct exanet_ip *ip, struct exanet_ip_node *pn,
				     struct sk_buff *skb, u64 now)
{
	struct rtnl_link_stats64 st;

	if (pn->mbox == EXANET_IP_NO_MBOX || skb->len > ip->max_len ||
	    skb_is_gso(skb) || now - pn->bulk_last_ns < EXANET_IP_QUIET_NS)
		return false;
	dev_get_stats(ip->tun, &st);
	exanet_ip_tun_drops(ip, &st, now);
	if (now - ip->tun_drop_ns < EXANET_IP_RESYNC_NS)
		return false;
	if (!exanet_ip_daemon_caught_up(ip, pn, &st, now)) {
		IP_STAT(ip, tx_daemon_behind);
		return false;
	}
	return true;
}

static unsigned int exanet_ip_out(void *priv, struct sk_buff *skb,
				  const struct nf_hook_state *state)
{
	struct exanet_ip *ip = priv;
	struct exanet_ip_node *pn;
	u32 nfrags;
	u64 now;

	if (state->out != ip->tun || skb->protocol != htons(ETH_P_IP))
		return NF_ACCEPT;

	spin_lock_bh(&ip->lock);
	pn = exanet_ip_by_addr(ip, ip_hdr(skb)->daddr);
	now = ktime_get_ns();
	if (!pn) {
		/*
		 * Not a peer's: the daemon drops it or answers with ICMP.  One
		 * that was a peer goes on counting, so that once listed again
		 * small packets wait for the quiet of its daemon path and the
		 * first one resynchronises the count (need_resync).
		 */
		pn = exanet_ip_unlisted_by_addr(ip, ip_hdr(skb)->daddr);
		exanet_ip_count_to_daemon(ip, pn, skb, state->out, now);
		spin_unlock_bh(&ip->lock);
		return NF_ACCEPT;
	}
	if (!exanet_ip_kernel_path_ok(ip, pn, skb, now)) {
		if (pn->inflight)
			exanet_ip_wait_peer(ip, pn);
		exanet_ip_count_to_daemon(ip, pn, skb, state->out, now);
		IP_STAT(ip, tx_to_daemon);
		spin_unlock_bh(&ip->lock);
		return NF_ACCEPT;
	}
	nfrags = EXANET_IP_NFRAGS(skb->len);
	if (!exanet_ip_wait_channels(ip, nfrags)) {
		IP_STAT(ip, tx_busy_drops);
		spin_unlock_bh(&ip->lock);
		kfree_skb(skb);
		return NF_STOLEN;
	}
	exanet_ip_send(ip, pn, skb, nfrags, pn->need_resync);
	pn->need_resync = false;
	spin_unlock_bh(&ip->lock);
	consume_skb(skb);
	return NF_STOLEN;
}

/* ------------------------------------------------------------- receive */

static bool exanet_ip_slot_ready(struct exanet_ip *ip)
{
	struct exanet_mbox_slot *s = &ip->slots[ip->head % EXANET_IP_MBOX_SLOTS];
	u32 phase = !((ip->head / EXANET_IP_MBOX_SLOTS) & 1);

	return (READ_ONCE(s->flags) & EXANET_SLOT_PHASE) == phase;
}

static void exanet_ip_drop_part(struct exanet_ip *ip, struct exanet_ip_node *pn)
{
	if (!pn->part)
		return;
	kfree_skb(pn->part);
	pn->part = NULL;
	IP_STAT(ip, rx_incomplete);
}

/* A packet is complete: is it a well-formed IPv4 packet of that length? */
static bool exanet_ip_packet_ok(struct sk_buff *skb, u8 flags, u16 start,
				u16 offset)
{
	const struct iphdr *iph = (const struct iphdr *)skb->data;

	if (skb->len < sizeof(*iph) || iph->version != 4 || iph->ihl < 5 ||
	    iph->ihl * 4 > skb->len || ntohs(iph->tot_len) != skb->len)
		return false;
	if (flags & EXANET_IP_F_CSUM)
		return start >= iph->ihl * 4 &&
		       skb_partial_csum_set(skb, start, offset);
	return true;
}

/*
 * ip->lock: a complete small packet from @pn: hand it on (@out), hold it
 * or drop it, by the order rules above.
 */
static void exanet_ip_take(struct exanet_ip *ip, struct exanet_ip_node *pn,
			   struct sk_buff *skb, u32 seq, u32 bulk, bool resync,
			   struct sk_buff_head *out)
{
	s32 early = (s32)(bulk - pn->bulk_rcvd);

	EXANET_IP_CB(skb)->resync = false;
	if (resync && early > 0 &&
	    time_before(jiffies, pn->bulk_rcvd_at + msecs_to_jiffies(EXANET_IP_HOLD_MS))) {
		/*
		 * The sender's count is the right one (EXANET_IP_F_RESYNC), but
		 * its daemon's packets are still coming in, and may be ones it
		 * counted before this packet: it waits as an early one does,
		 * and takes the count when due.
		 */
		EXANET_IP_CB(skb)->resync = true;
	} else if (resync) {
		pn->bulk_rcvd = bulk;
		pn->bulk_forgiven = 0;
		early = 0;
	}
	if (early < 0 && (pn->bulk_forgiven || pn->late_run >= EXANET_IP_LATE_RUN)) {
		/*
		 * Not late: the packets a hold gave up on came after all (and
		 * counted twice), or the count went wrong some other way (a
		 * packet counted that the sender did not): back in step.
		 */
		pn->bulk_rcvd = bulk;
		pn->bulk_forgiven = 0;
		early = 0;
		IP_STAT(ip, rx_resync);
	}
	if ((pn->rx_any && (s32)(seq - pn->rx_seq) <= 0) || early < 0) {
		pn->late_run += early < 0;
		IP_STAT(ip, rx_late);
		kfree_skb(skb);
		return;
	}
	pn->late_run = 0;
	pn->rx_any = true;
	pn->rx_seq = seq;
	EXANET_IP_CB(skb)->bulk = bulk;
	if (early || !skb_queue_empty(&pn->held)) {
		if (skb_queue_len(&pn->held) >= EXANET_IP_MAX_HELD) {
			IP_STAT(ip, rx_late);
			kfree_skb(skb);
			return;
		}
		EXANET_IP_CB(skb)->since = jiffies;
		__skb_queue_tail(&pn->held, skb);
		IP_STAT(ip, rx_held);
		return;
	}
	__skb_queue_tail(out, skb);
}

/*
 * ip->lock: has held @skb, early, waited long enough?  The daemon's packets
 * it waits for are lost only once that path from the peer went quiet; it
 * may lag by far more than the hold under load.
 */
static bool exanet_ip_hold_over(struct exanet_ip_node *pn, struct sk_buff *skb)
{
	unsigned long since = EXANET_IP_CB(skb)->since;
	unsigned long quiet = time_after(pn->bulk_rcvd_at, since) ? pn->bulk_rcvd_at : since;

	return !time_before(jiffies, since + msecs_to_jiffies(EXANET_IP_HOLD_MAX_MS)) ||
	       !time_before(jiffies, quiet + msecs_to_jiffies(EXANET_IP_HOLD_MS));
}

/* ip->lock: held packets of @pn that are due now. */
static void exanet_ip_release(struct exanet_ip *ip, struct exanet_ip_node *pn,
			      struct sk_buff_head *out)
{
	struct sk_buff *skb;

	while ((skb = skb_peek(&pn->held))) {
		u32 bulk = EXANET_IP_CB(skb)->bulk;
		s32 early = (s32)(bulk - pn->bulk_rcvd);

		if (early > 0 && !exanet_ip_hold_over(pn, skb))
			break;
		if (EXANET_IP_CB(skb)->resync) {
			/* the sender's count, now that its daemon's packets stopped */
			pn->bulk_rcvd = bulk;
			pn->bulk_forgiven = 0;
		} else if (early > 0) {
			/* The bulk packets it waits for count as lost. */
			pn->bulk_forgiven += early;
			pn->bulk_rcvd = bulk;
			IP_STAT(ip, rx_hold_expired);
		}
		/* due, or older than a packet that resynchronised the count */
		__skb_unlink(skb, &pn->held);
		__skb_queue_tail(out, skb);
	}
}

/*
 * ip->lock: @pn's kernel path started afresh (its daemon restarted): its
 * sequence numbers and counts begin again, what is left of the old one
 * is dropped.
 */
static void exanet_ip_new_epoch(struct exanet_ip *ip, struct exanet_ip_node *pn,
				u32 epoch)
{
	if (pn->rx_epoch)
		IP_STAT(ip, rx_new_epoch);
	__skb_queue_purge(&pn->held);
	pn->rx_epoch = epoch;
	pn->rx_any = false;
	pn->bulk_rcvd = 0;
	pn->bulk_forgiven = 0;
	pn->late_run = 0;
}

/* ip->lock: one mailbox slot. */
static void exanet_ip_slot(struct exanet_ip *ip, struct exanet_mbox_slot *s,
			   struct sk_buff_head *out)
{
	const struct exanet_ip_frag *f = (const void *)s->payload;
	const struct exanet_ip_first *first =
		(const void *)(s->payload + EXANET_IP_HDR_LEN);
	u32 len = READ_ONCE(s->len), hdr, n;
	struct exanet_ip_node *pn;
	struct sk_buff *skb;

	IP_STAT(ip, rx_frags);
	pn = xa_load(&ip->nodes, READ_ONCE(s->src_node));
	if (!pn || !pn->listed) {
		IP_STAT(ip, rx_unknown_node);
		return;
	}
	if (len < EXANET_IP_HDR_LEN || len > EXANET_MAX_PAYLOAD ||
	    f->magic != EXANET_IP_MAGIC || !f->nfrags ||
	    f->nfrags > EXANET_IP_MAX_FRAGS || f->index >= f->nfrags)
		goto bad;

	if (!f->index) {
		u16 plen = le16_to_cpu(first->len);

		exanet_ip_drop_part(ip, pn);
		if (len >= EXANET_IP_FIRST_HDR_LEN && first->epoch &&
		    le32_to_cpu(first->epoch) != pn->rx_epoch)
			exanet_ip_new_epoch(ip, pn, le32_to_cpu(first->epoch));
		if (len < EXANET_IP_FIRST_HDR_LEN || first->reserved || !first->epoch ||
		    (f->flags & ~(EXANET_IP_F_CSUM | EXANET_IP_F_RESYNC)) ||
		    plen < sizeof(struct iphdr) || plen > EXANET_IP_MAX_LEN ||
		    EXANET_IP_NFRAGS(plen) != f->nfrags ||
		    len != EXANET_IP_FIRST_HDR_LEN +
			   min_t(u32, plen, EXANET_IP_FIRST_DATA))
			goto bad;
		skb = napi_alloc_skb(&ip->napi, plen);
		if (!skb) {
			IP_STAT(ip, rx_no_mem);
			return;
		}
		skb_put(skb, plen);
		pn->part = skb;
		pn->part_seq = le32_to_cpu(f->seq);
		pn->part_bulk = le32_to_cpu(first->bulk);
		pn->part_nfrags = f->nfrags;
		pn->part_flags = f->flags;
		pn->part_next = 0;
		pn->part_done = 0;
		pn->part_csum_start = le16_to_cpu(first->csum_start);
		pn->part_csum_offset = le16_to_cpu(first->csum_offset);
		hdr = EXANET_IP_FIRST_HDR_LEN;
	} else {
		if (!pn->part || f->index != pn->part_next ||
		    f->nfrags != pn->part_nfrags ||
		    le32_to_cpu(f->seq) != pn->part_seq) {
			if (pn->part)
				exanet_ip_drop_part(ip, pn);
			else
				IP_STAT(ip, rx_incomplete);
			return;
		}
		hdr = EXANET_IP_HDR_LEN;
	}
	skb = pn->part;
	n = min_t(u32, skb->len - pn->part_done, EXANET_MAX_PAYLOAD - hdr);
	if (len != hdr + n) {
		exanet_ip_drop_part(ip, pn);
		goto bad;
	}
	memcpy(skb->data + pn->part_done, s->payload + hdr, n);
	pn->part_done += n;
	pn->part_next++;
	if (pn->part_next < pn->part_nfrags)
		return;

	pn->part = NULL;
	if (!exanet_ip_packet_ok(skb, pn->part_flags & EXANET_IP_F_CSUM,
				 pn->part_csum_start, pn->part_csum_offset)) {
		kfree_skb(skb);
		goto bad;
	}
	if (!netif_running(ip->tun)) {
		/* exa0 is down: as a NIC's driver would, take nothing in */
		kfree_skb(skb);
		IP_STAT(ip, rx_down);
		return;
	}
	skb->dev = ip->tun;
	skb->protocol = htons(ETH_P_IP);
	skb_reset_network_header(skb);
	skb_mark_napi_id(skb, &ip->napi);
	EXANET_IP_CB(skb)->owner = ip;
	IP_STAT(ip, rx_packets);
	exanet_ip_stats[ip->edev->index].rx_bytes += skb->len;
	exanet_ip_take(ip, pn, skb, pn->part_seq, pn->part_bulk,
		       pn->part_flags & EXANET_IP_F_RESYNC, out);
	return;
bad:
	IP_STAT(ip, rx_bad);
	exanet_dbg(ip->edev, "ip: malformed fragment from node %u\n", pn->node);
}

/* ip->lock: TUN packets that waited behind small ones, in order. */
static void exanet_ip_daemon_packets(struct exanet_ip *ip,
				     struct sk_buff_head *out)
{
	struct exanet_ip_node *pn;
	struct sk_buff *skb;

	while ((skb = __skb_dequeue(&ip->daemon_behind))) {
		pn = exanet_ip_by_addr(ip, ip_hdr(skb)->saddr);
		EXANET_IP_CB(skb)->owner = ip;
		__skb_queue_tail(out, skb);
		if (pn) {
			pn->bulk_rcvd++;
			pn->bulk_rcvd_at = jiffies;
			exanet_ip_release(ip, pn, out);
		}
	}
}

static void exanet_ip_release_all(struct exanet_ip *ip, struct sk_buff_head *out,
				  bool *held)
{
	u32 i;

	*held = false;
	for (i = 0; i < ip->nlisted; i++) {
		exanet_ip_release(ip, ip->listed[i], out);
		*held |= !skb_queue_empty(&ip->listed[i]->held);
	}
}

static void exanet_ip_deliver(struct sk_buff_head *out)
{
	struct sk_buff *skb;

	while ((skb = __skb_dequeue(out)))
		netif_receive_skb(skb);
}

static int exanet_ip_poll(struct napi_struct *napi, int budget)
{
	struct exanet_ip *ip = container_of(napi, struct exanet_ip, napi);
	struct sk_buff_head out;
	int done = 0;
	bool held;

	__skb_queue_head_init(&out);
	spin_lock(&ip->lock);
	while (done < budget && exanet_ip_slot_ready(ip)) {
		/* Slot contents are valid once the phase matches. */
		dma_rmb();
		exanet_ip_slot(ip, &ip->slots[ip->head % EXANET_IP_MBOX_SLOTS],
			       &out);
		ip->head++;
		done++;
	}
	if (ip->head != ip->published) {
		writel(ip->head % EXANET_IP_MBOX_SLOTS,
		       ip->mbox_page + EXANET_MBOX_HEAD);
		ip->published = ip->head;
	}
	/*
	 * The daemon's packets that wait go up only behind every small one
	 * already in the mailbox: with the budget spent (8 for a busy-polling
	 * reader), the rest comes at the next poll, and so do they.
	 */
	if (!exanet_ip_slot_ready(ip))
		exanet_ip_daemon_packets(ip, &out);
	exanet_ip_release_all(ip, &out, &held);
	spin_unlock(&ip->lock);

	exanet_ip_deliver(&out);
	if (held)
		mod_timer(&ip->hold_timer,
			  jiffies + msecs_to_jiffies(EXANET_IP_HOLD_MS) + 1);
	if (done < budget) {
		/* A busy-polling reader: let the NI pick up the fabric. */
		if (!done && test_bit(NAPI_STATE_IN_BUSY_POLL, &napi->state))
			readl(ip->mbox_page + EXANET_MBOX_TAIL);
		if (napi_complete_done(napi, done)) {
			exanet_ip_arm(ip);
			/* A slot that came before the arm raised nothing. */
			if (exanet_ip_slot_ready(ip))
				napi_schedule(napi);
		}
	}
	return done;
}

static void exanet_ip_hold_timer(struct timer_list *t)
{
	struct exanet_ip *ip = from_timer(ip, t, hold_timer);

	napi_schedule(&ip->napi);
}

/* irq_lock held (exanet_irq.c): the kernel path's mailbox fired. */
void exanet_ip_irq(struct exanet_drv_dev *edev, u64 mbox_pending)
{
	struct exanet_ip *ip = edev->ip;

	lockdep_assert_held(&edev->irq_lock);
	if (ip && (mbox_pending & BIT_ULL(ip->mbox)))
		napi_schedule(&ip->napi);
}

/*
 * A packet the daemon wrote into the TUN device.  It counts towards the
 * order of its source peer; if small packets may be due before it, it
 * waits for NAPI, which hands it on in its place.
 */
static rx_handler_result_t exanet_ip_rx_handler(struct sk_buff **pskb)
{
	struct sk_buff *skb = *pskb;
	struct exanet_ip *ip = rcu_dereference(skb->dev->rx_handler_data);
	struct exanet_ip_node *pn;
	bool behind = false;
	u32 i;

	if (EXANET_IP_CB(skb)->owner == ip)
		return RX_HANDLER_PASS;
	if (skb->protocol != htons(ETH_P_IP) ||
	    !pskb_may_pull(skb, sizeof(struct iphdr)))
		return RX_HANDLER_PASS;

	spin_lock(&ip->lock);
	IP_STAT(ip, rx_from_daemon);
	pn = exanet_ip_by_addr(ip, ip_hdr(skb)->saddr);
	if (!pn) {
		spin_unlock(&ip->lock);
		return RX_HANDLER_PASS;
	}
	behind = exanet_ip_slot_ready(ip) || !skb_queue_empty(&ip->daemon_behind);
	for (i = 0; i < ip->nlisted && !behind; i++)
		behind = !skb_queue_empty(&ip->listed[i]->held);
	if (behind) {
		IP_STAT(ip, rx_daemon_behind);
		__skb_queue_tail(&ip->daemon_behind, skb);
		spin_unlock(&ip->lock);
		napi_schedule(&ip->napi);
		return RX_HANDLER_CONSUMED;
	}
	pn->bulk_rcvd++;
	pn->bulk_rcvd_at = jiffies;
	spin_unlock(&ip->lock);
	return RX_HANDLER_PASS;
}

/* ------------------------------------------------------ attach / detach */

static void exanet_ip_purge_node(struct exanet_ip_node *pn)
{
	kfree_skb(pn->part);
	pn->part = NULL;
	__skb_queue_purge(&pn->held);
}

/* rtnl: stop both paths, give back everything. */
static void exanet_ip_detach(struct exanet_ip *ip)
{
	struct exanet_drv_dev *edev = ip->edev;
	struct exanet_ip_node *pn;
	unsigned long idx;
	u32 i;

	ASSERT_RTNL();
	spin_lock_irq(&edev->irq_lock);
	if (edev->ip == ip)
		edev->ip = NULL;
	spin_unlock_irq(&edev->irq_lock);
	if (ip->have_mbox)
		exanet_wr(edev, EXANET_REG_MBOX_BASE(ip->mbox) + EXANET_MBOX_IRQ, 0);
	if (ip->hooked)
		nf_unregister_net_hook(ip->net, &ip->hook);
	if (ip->rx_handler_on)
		netdev_rx_handler_unregister(ip->tun);
	if (ip->napi_on)
		napi_disable(&ip->napi);
	del_timer_sync(&ip->hold_timer);
	if (ip->napi_on)
		netif_napi_del(&ip->napi);
	list_del(&ip->node);
	__skb_queue_purge(&ip->daemon_behind);
	xa_for_each(&ip->nodes, idx, pn) {
		exanet_ip_purge_node(pn);
		kfree(pn);
	}
	xa_destroy(&ip->nodes);
	kfree(ip->listed);
	if (ip->tun)
		netdev_put(ip->tun, &ip->tun_tracker);
	if (ip->mbox_page)
		pci_iounmap(edev->pdev, ip->mbox_page);
	if (ip->have_mbox)
		exanet_mbox_put(ip->ef, ip->mbox);
	for (i = 0; i < ip->npkt; i++) {
		pci_iounmap(edev->pdev, ip->pkt_page[i]);
		exanet_pkt_put(ip->ef, ip->pkt[i]);
	}
	kvfree(ip);
}

static int exanet_ip_take_resources(struct exanet_ip *ip)
{
	struct exanet_drv_dev *edev = ip->edev;
	int ret;

	for (ip->npkt = 0; ip->npkt < EXANET_IP_PKT_IFACES; ip->npkt++) {
		u32 *i = &ip->pkt[ip->npkt];

		ret = exanet_pkt_take(ip->ef, true, i);
		if (ret)
			return ret;
		ip->pkt_page[ip->npkt] =
			pci_iomap_range(edev->pdev, EXANET_BAR_PKT,
					*i * EXANET_IFACE_PAGE_SIZE,
					EXANET_IFACE_PAGE_SIZE);
		if (!ip->pkt_page[ip->npkt]) {
			exanet_pkt_put(ip->ef, *i);
			return -ENOMEM;
		}
	}
	ret = exanet_mbox_take(ip->ef, EXANET_IP_MBOX_SLOTS, true, &ip->mbox);
	if (ret)
		return ret;
	ip->have_mbox = true;
	ip->slots = edev->mbox[ip->mbox].queue.va;
	ip->mbox_page = pci_iomap_range(edev->pdev, EXANET_BAR_MBOX,
					ip->mbox * EXANET_IFACE_PAGE_SIZE,
					EXANET_IFACE_PAGE_SIZE);
	return ip->mbox_page ? 0 : -ENOMEM;
}

/* rtnl: is @dev a TUN device (IFF_TUN: IP packets, no link header)? */
static bool exanet_ip_is_tun(struct net_device *dev)
{
	return dev->rtnl_link_ops && !strcmp(dev->rtnl_link_ops->kind, "tun") &&
	       dev->type == ARPHRD_NONE;
}

long exanet_ip_ioctl_attach(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct net *net = current->nsproxy->net_ns;
	struct exanet_ip_attach req;
	struct net_device *dev;
	struct exanet_ip *ip;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	if (req.flags) {
		exanet_dbg(edev, "ip attach: unknown flags %#x\n", req.flags);
		return -EINVAL;
	}
	if (!req.max_len)
		req.max_len = EXANET_IP_DEFAULT_LEN;
	if (req.max_len < sizeof(struct iphdr) || req.max_len > EXANET_IP_MAX_LEN) {
		exanet_dbg(edev, "ip attach: max_len %u (%zu..%u)\n", req.max_len,
			   sizeof(struct iphdr), EXANET_IP_MAX_LEN);
		return -EINVAL;
	}
	if (!ns_capable(net->user_ns, CAP_NET_ADMIN)) {
		exanet_dbg(edev, "ip attach: no CAP_NET_ADMIN\n");
		return -EPERM;
	}
	if (!READ_ONCE(edev->nvec)) {
		exanet_dbg(edev, "ip attach: the NI has no interrupts\n");
		return -EOPNOTSUPP;
	}

	ip = kvzalloc(sizeof(*ip), GFP_KERNEL);
	if (!ip)
		return -ENOMEM;
	ip->edev = edev;
	ip->ef = ef;
	ip->net = net;
	ip->max_len = req.max_len;
	ip->epoch = get_random_u32() | 1;
	spin_lock_init(&ip->lock);
	xa_init(&ip->nodes);
	skb_queue_head_init(&ip->daemon_behind);
	timer_setup(&ip->hold_timer, exanet_ip_hold_timer, 0);
	INIT_LIST_HEAD(&ip->node);

	rtnl_lock();
	list_add(&ip->node, &exanet_ip_list);
	if (edev->ip) {
		exanet_dbg(edev, "ip attach: the NI has a kernel path already\n");
		ret = -EBUSY;
		goto fail;
	}
	dev = __dev_get_by_index(net, req.ifindex);
	if (!dev || !exanet_ip_is_tun(dev)) {
		exanet_dbg(edev, "ip attach: ifindex %u is no TUN device\n",
			   req.ifindex);
		ret = -EINVAL;
		goto fail;
	}
	ip->tun = dev;
	netdev_hold(dev, &ip->tun_tracker, GFP_KERNEL);
	ret = exanet_ip_take_resources(ip);
	if (ret)
		goto fail;

	init_dummy_netdev(&ip->napi_dev);
	netif_napi_add(&ip->napi_dev, &ip->napi, exanet_ip_poll);
	napi_enable(&ip->napi);
	ip->napi_on = true;
	ret = netdev_rx_handler_register(dev, exanet_ip_rx_handler, ip);
	if (ret) {
		exanet_dbg(edev, "ip attach: %s has an rx_handler already\n",
			   dev->name);
		goto fail;
	}
	ip->rx_handler_on = true;
	ip->hook.hook = exanet_ip_out;
	ip->hook.priv = ip;
	ip->hook.pf = NFPROTO_IPV4;
	ip->hook.hooknum = NF_INET_POST_ROUTING;
	ip->hook.priority = NF_IP_PRI_LAST;
	ret = nf_register_net_hook(net, &ip->hook);
	if (ret)
		goto fail;
	ip->hooked = true;
	spin_lock_irq(&edev->irq_lock);
	edev->ip = ip;
	spin_unlock_irq(&edev->irq_lock);
	exanet_ip_arm(ip);
	req.mbox = ip->mbox;
	dev_info(&edev->dev, "ip: kernel path on %s: mailbox %u, packets up to %u bytes\n",
		 dev->name, ip->mbox, ip->max_len);
	rtnl_unlock();

	if (copy_to_user(uarg, &req, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer: kernel path stopped\n");
		exanet_ip_file_release(ef);
		return -EFAULT;
	}
	return 0;

fail:
	exanet_ip_detach(ip);
	rtnl_unlock();
	return ret;
}

long exanet_ip_ioctl_peers(struct exanet_drv_file *ef, void __user *uarg)
{
	struct exanet_drv_dev *edev = ef->edev;
	struct exanet_ip_node **listed = NULL, **old, *pn;
	struct exanet_ip_peer *peers = NULL;
	struct exanet_ip_peers req;
	struct sk_buff_head dead;
	struct exanet_ip *ip;
	unsigned long idx;
	u32 i, j;
	int ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req))) {
		exanet_dbg(edev, "bad user pointer\n");
		return -EFAULT;
	}
	if (req.flags || req.count > EXANET_IP_MAX_PEERS) {
		exanet_dbg(edev, "ip peers: flags %#x, count %u (at most %u)\n",
			   req.flags, req.count, EXANET_IP_MAX_PEERS);
		return -EINVAL;
	}
	if (req.count) {
		peers = kvmalloc_array(req.count, sizeof(*peers), GFP_KERNEL);
		listed = kcalloc(req.count, sizeof(*listed), GFP_KERNEL);
		if (!peers || !listed) {
			ret = -ENOMEM;
			goto out;
		}
		if (copy_from_user(peers, u64_to_user_ptr(req.peers),
				   req.count * sizeof(*peers))) {
			exanet_dbg(edev, "bad user pointer\n");
			ret = -EFAULT;
			goto out;
		}
	}
	for (i = 0; i < req.count; i++) {
		const struct exanet_ip_peer *p = &peers[i];

		if (p->flags || p->node >= edev->num_nodes ||
		    p->node == edev->node_id ||
		    (p->mbox != EXANET_IP_NO_MBOX && p->mbox >= edev->num_mbox)) {
			exanet_dbg(edev, "ip peers: entry %u: node %u mailbox %u flags %#x\n",
				   i, p->node, p->mbox, p->flags);
			ret = -EINVAL;
			goto out;
		}
		for (j = 0; j < i; j++)
			if (peers[j].node == p->node || peers[j].addr == p->addr) {
				exanet_dbg(edev, "ip peers: entry %u repeats entry %u\n",
					   i, j);
				ret = -EINVAL;
				goto out;
			}
	}

	rtnl_lock();
	ip = edev->ip;
	if (!ip || ip->ef != ef) {
		rtnl_unlock();
		exanet_dbg(edev, "ip peers: this file has no kernel path\n");
		ret = -ENOENT;
		goto out;
	}
	/* Nodes are created outside ip->lock (GFP_KERNEL), kept until detach. */
	for (i = 0; i < req.count; i++) {
		pn = xa_load(&ip->nodes, peers[i].node);
		if (!pn) {
			pn = kzalloc(sizeof(*pn), GFP_KERNEL);
			if (!pn) {
				ret = -ENOMEM;
				break;
			}
			pn->node = peers[i].node;
			/* nothing came from it yet: its daemon path is quiet */
			pn->bulk_rcvd_at = jiffies - msecs_to_jiffies(EXANET_IP_HOLD_MAX_MS);
			skb_queue_head_init(&pn->held);
			ret = xa_err(xa_store(&ip->nodes, pn->node, pn, GFP_KERNEL));
			if (ret) {
				kfree(pn);
				break;
			}
		}
		listed[i] = pn;
	}
	if (ret) {
		rtnl_unlock();
		goto out;
	}
	__skb_queue_head_init(&dead);
	spin_lock_bh(&ip->lock);
	/*
	 * A peer listed again, or with another mailbox: its receiver's count
	 * of our daemon packets is not ours (a restarted receiver starts at
	 * 0, and we may not have listed it while it was down).
	 */
	for (i = 0; i < req.count; i++)
		listed[i]->need_resync |= !listed[i]->listed ||
					  listed[i]->mbox != peers[i].mbox;
	xa_for_each(&ip->nodes, idx, pn)
		pn->listed = false;
	for (i = 0; i < req.count; i++) {
		pn = listed[i];
		pn->listed = true;
		pn->addr = (__force __be32)peers[i].addr;
		pn->mbox = peers[i].mbox;
	}
	xa_for_each(&ip->nodes, idx, pn)
		if (!pn->listed) {
			/* Gone: nothing of it is delivered any more. */
			if (pn->part)
				__skb_queue_tail(&dead, pn->part);
			pn->part = NULL;
			skb_queue_splice_tail_init(&pn->held, &dead);
		}
	old = ip->listed;
	ip->listed = listed;
	ip->nlisted = req.count;
	listed = old;
	spin_unlock_bh(&ip->lock);
	rtnl_unlock();
	__skb_queue_purge(&dead);
out:
	kfree(listed);
	kvfree(peers);
	return ret;
}

/* The file that attached is closing. */
void exanet_ip_file_release(struct exanet_drv_file *ef)
{
	struct exanet_drv_dev *edev = ef->edev;

	rtnl_lock();
	if (edev->ip && edev->ip->ef == ef)
		exanet_ip_detach(edev->ip);
	rtnl_unlock();
}

/* The device is going away. */
void exanet_ip_quiesce(struct exanet_drv_dev *edev)
{
	rtnl_lock();
	if (edev->ip)
		exanet_ip_detach(edev->ip);
	rtnl_unlock();
}

/* The TUN device is going away: so is the kernel path on it. */
static int exanet_ip_netdev_event(struct notifier_block *nb,
				  unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct exanet_ip *ip, *tmp;

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	list_for_each_entry_safe(ip, tmp, &exanet_ip_list, node)
		if (ip->tun == dev && ip->edev->ip == ip) {
			dev_info(&ip->edev->dev, "ip: %s is gone: kernel path stopped\n",
				 dev->name);
			exanet_ip_detach(ip);
		}
	return NOTIFY_DONE;
}

static struct notifier_block exanet_ip_notifier = {
	.notifier_call = exanet_ip_netdev_event,
};

int exanet_ip_init(void)
{
	return register_netdevice_notifier(&exanet_ip_notifier);
}

void exanet_ip_exit(void)
{
	unregister_netdevice_notifier(&exanet_ip_notifier);
}

/* ----------------------------------------------------------------- sysfs */

static ssize_t ip_stats_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct exanet_drv_dev *edev = container_of(dev, struct exanet_drv_dev, dev);
	const struct exanet_ip_stats *st = &exanet_ip_stats[edev->index];
	int n = 0;

#define IP_SHOW(f) (n += sysfs_emit_at(buf, n, #f " %llu\n", st->f))
	n += sysfs_emit_at(buf, n, "attached %d\n", !!READ_ONCE(edev->ip));
	IP_SHOW(tx_packets); IP_SHOW(tx_bytes); IP_SHOW(tx_frags);
	IP_SHOW(tx_to_daemon); IP_SHOW(tx_acked); IP_SHOW(tx_nacked);
	IP_SHOW(tx_timeouts); IP_SHOW(tx_busy_drops); IP_SHOW(tx_tun_drops_seen);
	IP_SHOW(tx_unanswered); IP_SHOW(tx_daemon_behind); IP_SHOW(tx_tun_lag_given_up);
	IP_SHOW(rx_packets); IP_SHOW(rx_bytes); IP_SHOW(rx_frags);
	IP_SHOW(rx_bad); IP_SHOW(rx_unknown_node); IP_SHOW(rx_incomplete);
	IP_SHOW(rx_late); IP_SHOW(rx_held); IP_SHOW(rx_hold_expired);
	IP_SHOW(rx_no_mem); IP_SHOW(rx_from_daemon); IP_SHOW(rx_daemon_behind);
	IP_SHOW(rx_resync); IP_SHOW(rx_new_epoch); IP_SHOW(rx_down);
#undef IP_SHOW
	return n;
}
static DEVICE_ATTR_RO(ip_stats);

static struct attribute *exanet_ip_attrs[] = {
	&dev_attr_ip_stats.attr,
	NULL,
};

const struct attribute_group exanet_ip_group = {
	.attrs = exanet_ip_attrs,
};
