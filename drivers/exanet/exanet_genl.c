// SPDX-License-Identifier: GPL-2.0
/*
 * ExaNet NI driver: generic netlink family "exanet" (management).
 *
 * DEV_GET reports devices and their counters, LINKS_GET their torus link
 * block; PDID_BIND/PDID_UNBIND change the protection domain table and need
 * CAP_NET_ADMIN (GENL_ADMIN_PERM, so the check is done by the netlink
 * core); PDID_GET dumps the table.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/pid.h>
#include <linux/threads.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "exanet_drv.h"

/* Administrators bind job domains; user domains are never assigned. */
static struct netlink_range_validation exanet_pdid_range = {
	.min = EXA_DOMAIN_JOB_MIN,
	.max = EXA_DOMAIN_JOB_MAX,
};

static struct netlink_range_validation exanet_pid_range = {
	.min = 1,
	.max = PID_MAX_LIMIT,
};

static const struct nla_policy exanet_genl_policy[EXANET_ATTR_MAX + 1] = {
	[EXANET_ATTR_DEV_INDEX]	= NLA_POLICY_MAX(NLA_U32, EXANET_MAX_DEVICES - 1),
	[EXANET_ATTR_DEV_NAME]	= { .type = NLA_NUL_STRING, .len = 32 },
	[EXANET_ATTR_NODE_ID]	= { .type = NLA_U32 },
	[EXANET_ATTR_NUM_NODES]	= { .type = NLA_U32 },
	[EXANET_ATTR_PKT_IN_USE] = { .type = NLA_U32 },
	[EXANET_ATTR_MBOX_IN_USE] = { .type = NLA_U32 },
	[EXANET_ATTR_COUNTERS]	= { .type = NLA_NESTED },
	[EXANET_ATTR_PID]	= NLA_POLICY_FULL_RANGE(NLA_U32, &exanet_pid_range),
	[EXANET_ATTR_PDID]	= NLA_POLICY_FULL_RANGE(NLA_U32, &exanet_pdid_range),
	[EXANET_ATTR_PAD]	= { .type = NLA_UNSPEC },
	[EXANET_ATTR_TORUS_SHAPE] = { .type = NLA_U32 },
	[EXANET_ATTR_TORUS_COORD] = { .type = NLA_U32 },
	[EXANET_ATTR_RX_HOPS]	= { .type = NLA_NESTED },
	[EXANET_ATTR_NO_ROUTE]	= { .type = NLA_U64 },
	[EXANET_ATTR_PORTS]	= { .type = NLA_NESTED },
	[EXANET_ATTR_PORT_NAME]	= { .type = NLA_NUL_STRING, .len = 7 },
	[EXANET_ATTR_PORT_STATE] = { .type = NLA_U32 },
	[EXANET_ATTR_PORT_PEER]	= { .type = NLA_U32 },
	[EXANET_ATTR_PORT_MBPS]	= { .type = NLA_U32 },
	[EXANET_ATTR_PORT_NS]	= { .type = NLA_U32 },
	[EXANET_ATTR_PORT_DROP_PPM] = { .type = NLA_U32 },
	[EXANET_ATTR_PORT_CORRUPT_PPM] = { .type = NLA_U32 },
	[EXANET_ATTR_PORT_COUNTERS] = { .type = NLA_NESTED },
};

static struct genl_family exanet_genl_family;

/*
 * A nest of u64 values, attribute i + 1 = vals[i].  Inside it the types
 * are indices, so EXANET_ATTR_PAD would collide with index 9: pad with
 * the reserved type 0, which parsers skip.
 */
static int exanet_genl_put_u64_array(struct sk_buff *skb, int type,
				     const u64 *vals, unsigned int n)
{
	struct nlattr *nest;
	unsigned int i;

	nest = nla_nest_start(skb, type);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < n; i++)
		if (nla_put_u64_64bit(skb, i + 1, vals[i], EXANET_ATTR_UNSPEC))
			return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* Callers hold edev->lock and checked !edev->dead. */
static int exanet_genl_put_dev(struct sk_buff *skb, struct exanet_drv_dev *edev)
{
	u64 counters[EXANET_NUM_COUNTERS];
	unsigned int n;

	if (nla_put_u32(skb, EXANET_ATTR_NODE_ID, edev->node_id) ||
	    nla_put_u32(skb, EXANET_ATTR_NUM_NODES, edev->num_nodes) ||
	    nla_put_u32(skb, EXANET_ATTR_PKT_IN_USE, edev->pkt_in_use) ||
	    nla_put_u32(skb, EXANET_ATTR_MBOX_IN_USE, edev->mbox_in_use))
		return -EMSGSIZE;
	for (n = 0; n < EXANET_NUM_COUNTERS; n++)
		counters[n] = exanet_read_counter(edev, n);
	return exanet_genl_put_u64_array(skb, EXANET_ATTR_COUNTERS, counters,
					 EXANET_NUM_COUNTERS);
}

static int exanet_genl_put_port(struct sk_buff *skb,
				const struct exa_links *links, unsigned int p)
{
	struct exa_links_port_state ps;
	struct nlattr *nest;

	exa_links_read_port(links, p, &ps);
	nest = nla_nest_start(skb, p + 1);
	if (!nest ||
	    nla_put_string(skb, EXANET_ATTR_PORT_NAME, exa_links_port_name(p)) ||
	    nla_put_u32(skb, EXANET_ATTR_PORT_STATE, ps.state) ||
	    nla_put_u32(skb, EXANET_ATTR_PORT_PEER, ps.peer) ||
	    nla_put_u32(skb, EXANET_ATTR_PORT_MBPS, ps.mbps) ||
	    nla_put_u32(skb, EXANET_ATTR_PORT_NS, ps.ns) ||
	    nla_put_u32(skb, EXANET_ATTR_PORT_DROP_PPM, ps.drop_ppm) ||
	    nla_put_u32(skb, EXANET_ATTR_PORT_CORRUPT_PPM, ps.corrupt_ppm) ||
	    exanet_genl_put_u64_array(skb, EXANET_ATTR_PORT_COUNTERS,
				      ps.counters, EXA_NUM_PORT_COUNTERS))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* Callers hold edev->lock and checked !edev->dead. */
static int exanet_genl_put_links(struct sk_buff *skb, struct exanet_drv_dev *edev)
{
	const struct exa_links *links = &edev->links;
	u64 rx_hops[EXA_TORUS_MAX_HOPS];
	struct nlattr *ports;
	unsigned int h, p;
	int ret;

	/* Without TORUS_SHAPE the reply says: no link block (older model). */
	if (!exa_links_present(links))
		return 0;
	for (h = 0; h < EXA_TORUS_MAX_HOPS; h++)
		rx_hops[h] = exa_links_rx_hops(links, h);
	if (nla_put_u32(skb, EXANET_ATTR_TORUS_SHAPE, links->shape) ||
	    nla_put_u32(skb, EXANET_ATTR_TORUS_COORD, links->coord) ||
	    nla_put_u64_64bit(skb, EXANET_ATTR_NO_ROUTE,
			      exa_links_no_route(links), EXANET_ATTR_PAD) ||
	    exanet_genl_put_u64_array(skb, EXANET_ATTR_RX_HOPS, rx_hops,
				      EXA_TORUS_MAX_HOPS))
		return -EMSGSIZE;

	ports = nla_nest_start(skb, EXANET_ATTR_PORTS);
	if (!ports)
		return -EMSGSIZE;
	for (p = 0; p < EXA_NUM_PORTS; p++) {
		ret = exanet_genl_put_port(skb, links, p);
		if (ret)
			return ret;
	}
	nla_nest_end(skb, ports);
	return 0;
}

/*
 * One message of @cmd (DEV_GET or LINKS_GET) about @edev.  Caller holds
 * exanet_devices_lock; takes edev->lock for the registers.  A failure
 * cancels the whole message, open nests included.
 */
static int exanet_genl_fill(struct sk_buff *skb, struct exanet_drv_dev *edev,
			    u8 cmd, u32 portid, u32 seq, int flags)
{
	void *hdr;
	int ret;

	hdr = genlmsg_put(skb, portid, seq, &exanet_genl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;

	mutex_lock(&edev->lock);
	if (edev->dead)
		ret = -ENODEV;		/* doit says so, dumpit skips it */
	else if (nla_put_u32(skb, EXANET_ATTR_DEV_INDEX, edev->index) ||
		 nla_put_string(skb, EXANET_ATTR_DEV_NAME, dev_name(&edev->dev)))
		ret = -EMSGSIZE;
	else if (cmd == EXANET_CMD_LINKS_GET)
		ret = exanet_genl_put_links(skb, edev);
	else
		ret = exanet_genl_put_dev(skb, edev);
	mutex_unlock(&edev->lock);

	if (ret) {
		genlmsg_cancel(skb, hdr);
		return ret;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* DEV_GET and LINKS_GET: one device by DEV_INDEX. */
static int exanet_genl_dev_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct exanet_drv_dev *edev;
	struct sk_buff *msg;
	u32 index;
	int ret = -ENODEV;

	if (GENL_REQ_ATTR_CHECK(info, EXANET_ATTR_DEV_INDEX)) {
		exa_pr_dbg("command %u without DEV_INDEX\n", info->genlhdr->cmd);
		return -EINVAL;
	}
	index = nla_get_u32(info->attrs[EXANET_ATTR_DEV_INDEX]);

	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg) {
		exa_pr_dbg("command %u: no memory for the reply\n",
			   info->genlhdr->cmd);
		return -ENOMEM;
	}

	mutex_lock(&exanet_devices_lock);
	list_for_each_entry(edev, &exanet_devices, list) {
		if (edev->index == index) {
			ret = exanet_genl_fill(msg, edev, info->genlhdr->cmd,
					       info->snd_portid, info->snd_seq,
					       0);
			break;
		}
	}
	mutex_unlock(&exanet_devices_lock);

	if (ret) {
		exa_pr_dbg("command %u, device %u: %s (%d)\n",
			   info->genlhdr->cmd, index, ret == -ENODEV ?
			   "no such device, or removed" : "reply not built", ret);
		if (ret == -ENODEV)
			NL_SET_ERR_MSG_ATTR(info->extack,
					    info->attrs[EXANET_ATTR_DEV_INDEX],
					    "no such ExaNet device");
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

/* DEV_GET and LINKS_GET: every device. */
static int exanet_genl_dev_dumpit(struct sk_buff *skb,
				  struct netlink_callback *cb)
{
	u8 cmd = genl_dumpit_info(cb)->op.cmd;
	struct exanet_drv_dev *edev;
	unsigned long skip = cb->args[0], idx = 0;
	int ret = 0;

	mutex_lock(&exanet_devices_lock);
	list_for_each_entry(edev, &exanet_devices, list) {
		if (idx++ < skip)
			continue;
		ret = exanet_genl_fill(skb, edev, cmd,
				       NETLINK_CB(cb->skb).portid,
				       cb->nlh->nlmsg_seq, NLM_F_MULTI);
		if (ret == -ENODEV) {	/* being removed: skip it */
			ret = 0;
		} else if (ret) {
			idx--;
			break;
		}
	}
	mutex_unlock(&exanet_devices_lock);
	cb->args[0] = idx;

	/* A partial message asks for another round; an empty one is an error. */
	if (ret == -EMSGSIZE && skb->len)
		return skb->len;
	if (ret)
		exa_pr_dbg("command %u: device %lu does not fit a message (%d)\n",
			   cmd, idx, ret);
	return ret ? ret : skb->len;
}

static int exanet_genl_pdid_bind_doit(struct sk_buff *skb,
				      struct genl_info *info)
{
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, EXANET_ATTR_PID) ||
	    GENL_REQ_ATTR_CHECK(info, EXANET_ATTR_PDID)) {
		exa_pr_dbg("PDID_BIND without PID and PDID\n");
		return -EINVAL;
	}

	/* exa_domain_bind() says why it refuses ("module exa_core +p"). */
	ret = exa_domain_bind(nla_get_u32(info->attrs[EXANET_ATTR_PID]),
			      nla_get_u32(info->attrs[EXANET_ATTR_PDID]));
	if (ret)
		exa_pr_dbg("pid %u domain %u not bound (%d)\n",
			   nla_get_u32(info->attrs[EXANET_ATTR_PID]),
			   nla_get_u32(info->attrs[EXANET_ATTR_PDID]), ret);
	if (ret == -ESRCH)
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[EXANET_ATTR_PID],
				    "no such process");
	else if (ret == -ENOSPC)
		NL_SET_ERR_MSG(info->extack, "PDID binding table full");
	return ret;
}

static int exanet_genl_pdid_unbind_doit(struct sk_buff *skb,
					struct genl_info *info)
{
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, EXANET_ATTR_PID)) {
		exa_pr_dbg("PDID_UNBIND without PID\n");
		return -EINVAL;
	}

	ret = exa_domain_unbind(nla_get_u32(info->attrs[EXANET_ATTR_PID]));
	if (ret)
		exa_pr_dbg("pid %u not unbound (%d)\n",
			   nla_get_u32(info->attrs[EXANET_ATTR_PID]), ret);
	if (ret == -ESRCH)
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[EXANET_ATTR_PID],
				    "no such process");
	else if (ret == -ENOENT)
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[EXANET_ATTR_PID],
				    "process has no PDID binding");
	return ret;
}

struct exanet_drv_pdid_dump_ctx {
	struct sk_buff *skb;
	struct netlink_callback *cb;
};

static int exanet_genl_put_binding(void *arg, pid_t nr, u32 pdid)
{
	struct exanet_drv_pdid_dump_ctx *ctx = arg;
	void *hdr;

	hdr = genlmsg_put(ctx->skb, NETLINK_CB(ctx->cb->skb).portid,
			  ctx->cb->nlh->nlmsg_seq, &exanet_genl_family,
			  NLM_F_MULTI, EXANET_CMD_PDID_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(ctx->skb, EXANET_ATTR_PID, nr) ||
	    nla_put_u32(ctx->skb, EXANET_ATTR_PDID, pdid)) {
		genlmsg_cancel(ctx->skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(ctx->skb, hdr);
	return 0;
}

static int exanet_genl_pdid_get_dumpit(struct sk_buff *skb,
				       struct netlink_callback *cb)
{
	struct exanet_drv_pdid_dump_ctx ctx = { .skb = skb, .cb = cb };
	int ret;

	ret = exa_domain_for_each(&cb->args[0], exanet_genl_put_binding, &ctx);
	if (ret == -EMSGSIZE && skb->len)
		return skb->len;
	if (ret)
		exa_pr_dbg("binding %lu does not fit a message (%d)\n",
			   cb->args[0], ret);
	return ret ? ret : skb->len;
}

static const struct genl_small_ops exanet_genl_ops[] = {
	{
		.cmd	= EXANET_CMD_DEV_GET,
		.doit	= exanet_genl_dev_doit,
		.dumpit	= exanet_genl_dev_dumpit,
	},
	{
		.cmd	= EXANET_CMD_PDID_BIND,
		.doit	= exanet_genl_pdid_bind_doit,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= EXANET_CMD_PDID_UNBIND,
		.doit	= exanet_genl_pdid_unbind_doit,
		.flags	= GENL_ADMIN_PERM,
	},
	{
		.cmd	= EXANET_CMD_PDID_GET,
		.dumpit	= exanet_genl_pdid_get_dumpit,
	},
	{
		.cmd	= EXANET_CMD_LINKS_GET,
		.doit	= exanet_genl_dev_doit,
		.dumpit	= exanet_genl_dev_dumpit,
	},
};

static struct genl_family exanet_genl_family __ro_after_init = {
	.name		= EXANET_GENL_NAME,
	.version	= EXANET_GENL_VERSION,
	.maxattr	= EXANET_ATTR_MAX,
	.policy		= exanet_genl_policy,
	.module		= THIS_MODULE,
	.small_ops	= exanet_genl_ops,
	.n_small_ops	= ARRAY_SIZE(exanet_genl_ops),
	/* Commands added since get the core's strict header checks. */
	.resv_start_op	= EXANET_CMD_LINKS_GET,
};

int exanet_genl_init(void)
{
	return genl_register_family(&exanet_genl_family);
}

void exanet_genl_exit(void)
{
	genl_unregister_family(&exanet_genl_family);
}
