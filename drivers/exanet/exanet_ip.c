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
 *
 * Parts: exanet_ip_tx.c (send), exanet_ip_rx.c (receive), this file
 * (attach / detach, peers, sysfs); exanet_ip_int.h (what they share).
 */

#include "exanet_ip_int.h"

LIST_HEAD(exanet_ip_list);	/* attachments, under rtnl */
static struct exanet_ip_stats exanet_ip_stats[EXANET_MAX_DEVICES];

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
	ip->stats = &exanet_ip_stats[edev->index];
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
