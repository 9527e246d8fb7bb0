// SPDX-License-Identifier: MIT
/* The generic netlink client; see exa_genl.h. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <netlink/genl/ctrl.h>
#include <netlink/netlink.h>

#include "exa_genl.h"

#define EXA_GENL_TIMEOUT_S 5

int exa_genl_open(struct exa_genl *g)
{
	struct timeval tv = { .tv_sec = EXA_GENL_TIMEOUT_S };
	int err;

	memset(g, 0, sizeof(*g));
	g->sk = nl_socket_alloc();
	if (!g->sk)
		return -ENOMEM;
	err = genl_connect(g->sk);
	if (err) {
		g->nl_error = err;
		nl_socket_free(g->sk);
		g->sk = NULL;
		return -ENOTCONN;
	}
	/* a kernel that never answers must not hang the caller */
	setsockopt(nl_socket_get_fd(g->sk), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	g->family = genl_ctrl_resolve(g->sk, EXANET_GENL_NAME);
	if (g->family < 0) {
		nl_socket_free(g->sk);
		g->sk = NULL;
		return -ENOENT;
	}
	return 0;
}

void exa_genl_close(struct exa_genl *g)
{
	nl_socket_free(g->sk);
	g->sk = NULL;
}

struct reply_state {
	int done;
	int error;		/* negative errno from the kernel */
	exa_genl_reply_fn reply;
	void *arg;
};

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct reply_state *st = arg;
	struct nlattr *tb[EXANET_ATTR_MAX + 1];
	struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));

	if (nla_parse(tb, EXANET_ATTR_MAX, genlmsg_attrdata(gh, 0), genlmsg_attrlen(gh, 0),
		      NULL) < 0)
		return NL_SKIP;
	if (st->reply)
		st->reply(tb, st->arg);
	return NL_OK;
}

static int on_finish(struct nl_msg *msg, void *arg)
{
	struct reply_state *st = arg;

	(void)msg;
	st->done = 1;
	return NL_STOP;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct reply_state *st = arg;

	(void)nla;
	st->error = e->error;
	st->done = 1;
	return NL_STOP;
}

int exa_genl_call(struct exa_genl *g, uint8_t cmd, int flags, const uint16_t *types,
		  const uint32_t *vals, int nattrs, exa_genl_reply_fn reply, void *arg)
{
	struct reply_state st = { .reply = reply, .arg = arg };
	int dump = !!(flags & NLM_F_DUMP);
	struct nl_msg *msg;
	struct nl_cb *cb;
	int i, rc;

	msg = nlmsg_alloc();
	/* callbacks of this call only: st does not outlive it */
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!msg || !cb) {
		nlmsg_free(msg);
		nl_cb_put(cb);
		return -ENOMEM;
	}
	/* NLM_F_ACK comes from the socket's auto-ack (below), not from flags */
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, g->family, 0, flags & ~NLM_F_ACK, cmd,
			 EXANET_GENL_VERSION)) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nattrs; i++)
		if (nla_put_u32(msg, types[i], vals[i]) < 0) {
			rc = -EMSGSIZE;
			goto out;
		}
	/* a dump ends with NLMSG_DONE; anything else with its acknowledgement */
	if (dump)
		nl_socket_disable_auto_ack(g->sk);
	else
		nl_socket_enable_auto_ack(g->sk);
	if (nl_send_auto(g->sk, msg) < 0) {
		rc = -EIO;
		goto out;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &st);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &st);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_finish, &st);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &st);
	while (!st.done) {
		/* the number of messages read: 0 or -NLE_AGAIN when the read timed out */
		rc = nl_recvmsgs_report(g->sk, cb);
		if (st.done)
			break;
		if (rc == 0 || rc == -NLE_AGAIN) {
			st.error = -ETIMEDOUT;
			break;
		}
		if (rc < 0) {
			st.error = -EIO;
			break;
		}
	}
	rc = st.error;
out:
	nlmsg_free(msg);
	nl_cb_put(cb);
	return rc;
}

void exa_genl_dev_reply(struct nlattr **tb, struct exa_genl_dev *d)
{
	struct nlattr *a;
	int rem;

	if (tb[EXANET_ATTR_NODE_ID])
		d->node_id = nla_get_u32(tb[EXANET_ATTR_NODE_ID]);
	if (tb[EXANET_ATTR_NUM_NODES])
		d->num_nodes = nla_get_u32(tb[EXANET_ATTR_NUM_NODES]);
	if (tb[EXANET_ATTR_PKT_IN_USE])
		d->pkt_in_use = nla_get_u32(tb[EXANET_ATTR_PKT_IN_USE]);
	if (tb[EXANET_ATTR_MBOX_IN_USE])
		d->mbox_in_use = nla_get_u32(tb[EXANET_ATTR_MBOX_IN_USE]);
	if (!tb[EXANET_ATTR_COUNTERS])
		return;
	/* attribute n + 1 is counter n; padding has type 0 */
	nla_for_each_nested(a, tb[EXANET_ATTR_COUNTERS], rem) {
		int n = nla_type(a) - 1;

		if (n >= 0 && n < EXANET_NUM_COUNTERS && nla_len(a) >= 8) {
			d->counters[n] = nla_get_u64(a);
			d->have_counters = 1;
		}
	}
}
