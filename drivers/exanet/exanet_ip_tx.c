// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver, the kernel path of IP over the fabric: send.  The
 * netfilter hook at POST_ROUTING of the daemon's TUN device takes small
 * packets to listed peers and posts them as mailbox messages through the
 * packetizer channels the driver holds.  Overview: exanet_ip.c.
 */

#include "exanet_ip_int.h"

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

void exanet_ip_arm(struct exanet_ip *ip)
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
	ip->stats->tx_bytes += len;
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

unsigned int exanet_ip_out(void *priv, struct sk_buff *skb,
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
