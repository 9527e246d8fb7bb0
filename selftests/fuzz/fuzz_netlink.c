// SPDX-License-Identifier: MIT
/*
 * exa_fuzz: the "exanet" generic netlink family, commands with lying
 * flags, versions, attributes and lengths (fuzz_ops.h).
 */
#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <exanet.h>

#include "../lib/exa_util.h"
#include "fuzz_ops.h"

/* ------------------------------------------------------------ netlink */

struct nlmsg {
	struct nlmsghdr n;
	struct genlmsghdr g;
	uint8_t attrs[512];
};

static int nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -EIO;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void nl_put(struct nlmsg *m, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)((uint8_t *)m + NLMSG_ALIGN(m->n.nlmsg_len));

	if (NLMSG_ALIGN(m->n.nlmsg_len) + NLA_HDRLEN + NLA_ALIGN(len) > sizeof(*m))
		return;
	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	if (len)
		memcpy((uint8_t *)a + NLA_HDRLEN, data, len);
	m->n.nlmsg_len = NLMSG_ALIGN(m->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* Send m, count the answers; -errno of the first error, else the count. */
static int nl_talk(int fd, struct nlmsg *m, int wait_done)
{
	static _Atomic uint32_t seq = 1;
	union {
		uint8_t b[16384];
		struct nlmsghdr align;
	} buf;
	int count = 0;

	m->n.nlmsg_seq = atomic_fetch_add(&seq, 1);
	if (send(fd, m, m->n.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		ssize_t len = recv(fd, buf.b, sizeof(buf.b), 0);
		struct nlmsghdr *h;

		if (len <= 0)
			return count;
		for (h = &buf.align; NLMSG_OK(h, (unsigned int)len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : count;
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return count;
			count++;
			if (!(h->nlmsg_flags & NLM_F_MULTI) && !wait_done)
				return count;
		}
	}
}

/* A pid the fuzzer may bind: its own processes, or none at all. */
static uint32_t rv_pid(struct fz_proc *p, struct frng *r)
{
	switch (frng_below(r, 6)) {
	case 0:
		return (uint32_t)getpid();
	case 1:
		return (uint32_t)syscall(SYS_gettid);
	case 2: {
		pid_t k = p->kids[frng_below(r, FZ_KIDS)];

		return k > 0 ? (uint32_t)k : (uint32_t)getpid();
	}
	case 3: {
		pid_t w = fz->worker[frng_below(r, (uint64_t)fz->nprocs)].pid;

		return w > 0 ? (uint32_t)w : 0;
	}
	case 4:
		return 0;
	default:	/* above PID_MAX_LIMIT: never a process */
		return (4u << 20) + (uint32_t)frng_below(r, 1u << 30);
	}
}

int op_netlink(struct fz_proc *p, struct frng *r)
{
	static const uint16_t flagsets[] = {
		NLM_F_REQUEST, NLM_F_REQUEST | NLM_F_ACK, NLM_F_REQUEST | NLM_F_DUMP,
		NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, 0,
	};
	struct nlmsg m;
	unsigned int n, i;
	int fd, ret;
	uint8_t cmd;

	if (p->nl_family < 0) {
		p->nl_family = exa_genl_family_id();
		if (p->nl_family < 0)
			return 0;
	}
	fd = nl_open();
	if (fd < 0)
		return 0;
	memset(&m, 0, sizeof(m));
	cmd = (uint8_t)frng_below(r, FUZZ_NL_CMDS);
	if (frng_one_in(r, 20))
		cmd = (uint8_t)frng_next(r);
	m.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m.n.nlmsg_type = (uint16_t)p->nl_family;
	m.n.nlmsg_flags = flagsets[frng_below(r, sizeof(flagsets) / sizeof(flagsets[0]))];
	m.g.cmd = cmd;
	m.g.version = frng_below(r, 8) ? EXANET_GENL_VERSION : (uint8_t)frng_next(r);
	n = (unsigned int)frng_below(r, 6);
	for (i = 0; i < n; i++) {
		uint16_t type = (uint16_t)(frng_below(r, 6) ? frng_below(r, EXANET_ATTR_MAX + 3) :
							     frng_next(r));
		uint32_t v32;
		uint64_t v64;
		uint8_t raw[64];
		uint16_t len;

		if (frng_one_in(r, 10))
			type |= NLA_F_NESTED;
		switch (type & NLA_TYPE_MASK) {
		case EXANET_ATTR_PID:
			v32 = rv_pid(p, r);
			break;
		case EXANET_ATTR_PDID:
			v32 = rv_domain(r);
			break;
		case EXANET_ATTR_DEV_INDEX:
			v32 = (uint32_t)(frng_below(r, 2) ? frng_below(r, 3) : rv_u64(r));
			break;
		default:
			v32 = (uint32_t)rv_u64(r);
			break;
		}
		switch (frng_below(r, 8)) {
		case 0:		/* wrong width */
			len = (uint16_t)frng_below(r, 4);
			memcpy(raw, &v32, 4);
			break;
		case 1:
			v64 = rv_u64(r);
			memcpy(raw, &v64, 8);
			len = 8;
			break;
		case 2:		/* strings and blobs, unterminated or long */
			len = (uint16_t)frng_below(r, sizeof(raw) + 1);
			for (unsigned int k = 0; k < len; k++)
				raw[k] = (uint8_t)(frng_below(r, 4) ? 'a' + frng_below(r, 26) :
								     frng_next(r));
			break;
		case 3: {	/* nested: a few u32 inside */
			struct nlattr *in = (struct nlattr *)raw;

			in->nla_type = (uint16_t)frng_below(r, 20);
			in->nla_len = (uint16_t)(frng_below(r, 4) ? NLA_HDRLEN + 4 : frng_next(r));
			memcpy(raw + NLA_HDRLEN, &v32, 4);
			len = NLA_HDRLEN + 4;
			type |= frng_below(r, 2) ? NLA_F_NESTED : 0;
			break;
		}
		default:
			memcpy(raw, &v32, 4);
			len = 4;
			break;
		}
		nl_put(&m, type, raw, len);
	}
	if (frng_one_in(r, 12)) {	/* a lying length somewhere */
		if (frng_one_in(r, 2) && m.n.nlmsg_len > NLMSG_LENGTH(GENL_HDRLEN))
			((struct nlattr *)((uint8_t *)&m + NLMSG_LENGTH(GENL_HDRLEN)))->nla_len =
				(uint16_t)frng_next(r);
		else
			m.n.nlmsg_len -= (uint32_t)frng_below(r, m.n.nlmsg_len - NLMSG_HDRLEN + 1);
	}
	if (cmd < FUZZ_NL_CMDS)
		atomic_fetch_add(&fz->nl_sent[cmd], 1);
	note(p, "netlink cmd %u flags %#x attrs %u len %u", cmd, m.n.nlmsg_flags, n,
	     m.n.nlmsg_len);
	ret = nl_talk(fd, &m, 0);
	close(fd);
	return ret >= 0;
}
