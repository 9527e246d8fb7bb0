// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver, the kernel path of IP over the fabric: receive.  NAPI
 * takes the small packets from the driver's mailbox and delivers them in
 * order with the daemon's packets of the same peer (counted by the
 * rx_handler on the TUN device).  Overview: exanet_ip.c.
 */

#include "exanet_ip_int.h"

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
	ip->stats->rx_bytes += skb->len;
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

int exanet_ip_poll(struct napi_struct *napi, int budget)
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

void exanet_ip_hold_timer(struct timer_list *t)
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
rx_handler_result_t exanet_ip_rx_handler(struct sk_buff **pskb)
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
