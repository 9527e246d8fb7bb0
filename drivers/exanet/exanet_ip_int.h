/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ExaNet NI driver, the kernel path of IP over the fabric: what its parts
 * share.  exanet_ip.c (overview, attach / detach, peers, sysfs),
 * exanet_ip_tx.c (the netfilter hook and the packetizer channels),
 * exanet_ip_rx.c (NAPI receive from the mailbox, order across both paths).
 * Private to those three files.
 */
#ifndef EXANET_IP_INT_H
#define EXANET_IP_INT_H

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
	struct exanet_ip_stats *stats;	/* the device's, outlives us */
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

extern struct list_head exanet_ip_list;	/* attachments, under rtnl */

/* Stats live in a static per-device array: no lifetime of their own. */
#define IP_STAT(ip, f) ((ip)->stats->f++)

static inline struct exanet_ip_node *exanet_ip_by_addr(struct exanet_ip *ip, __be32 addr)
{
	u32 i;

	for (i = 0; i < ip->nlisted; i++)
		if (ip->listed[i]->addr == addr)
			return ip->listed[i];
	return NULL;
}

/* ip->lock: a node that was a peer and is not listed now (down, restarting). */
static inline struct exanet_ip_node *
exanet_ip_unlisted_by_addr(struct exanet_ip *ip, __be32 addr)
{
	struct exanet_ip_node *pn;
	unsigned long idx;

	xa_for_each(&ip->nodes, idx, pn)
		if (!pn->listed && pn->addr == addr)
			return pn;
	return NULL;
}

/* exanet_ip_tx.c */
void exanet_ip_arm(struct exanet_ip *ip);
unsigned int exanet_ip_out(void *priv, struct sk_buff *skb,
			   const struct nf_hook_state *state);

/* exanet_ip_rx.c */
int exanet_ip_poll(struct napi_struct *napi, int budget);
void exanet_ip_hold_timer(struct timer_list *t);
rx_handler_result_t exanet_ip_rx_handler(struct sk_buff **pskb);

#endif
