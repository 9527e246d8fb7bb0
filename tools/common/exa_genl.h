/* SPDX-License-Identifier: MIT */
/*
 * The one client of the "exanet" generic netlink family (uapi/exanet.h,
 * drivers/exanet/exanet_genl.c), on libnl-genl-3: exanetctl, exanet-ipd
 * and the selftests' helpers.
 */
#ifndef EXA_GENL_H
#define EXA_GENL_H

#include <stdint.h>

#include <netlink/attr.h>
#include <netlink/genl/genl.h>

#include <exanet.h>

struct exa_genl {
	struct nl_sock *sk;
	int family;		/* the family's id */
	int nl_error;		/* libnl's error when the socket could not connect */
};

/*
 * Connects and resolves the family.  0, -ENOMEM, -ENOTCONN (the socket
 * could not connect: nl_geterror(g->nl_error) says why) or -ENOENT (the
 * family is not registered: no exanet module).
 */
int exa_genl_open(struct exa_genl *g);
void exa_genl_close(struct exa_genl *g);

/* Called for each reply with its attributes (tb[type], NULL if absent). */
typedef void (*exa_genl_reply_fn)(struct nlattr **tb, void *arg);

/*
 * Sends cmd with the u32 attributes types[i] = vals[i] (i < nattrs) and
 * waits, at most 5 s per read, for the end of the answer: the
 * acknowledgement, or with NLM_F_DUMP in flags the end of the dump.  reply
 * (may be NULL) sees every reply message.  0 or the kernel's negative
 * errno; -ENOMEM, -EMSGSIZE, -EIO, -ETIMEDOUT.
 */
int exa_genl_call(struct exa_genl *g, uint8_t cmd, int flags, const uint16_t *types,
		  const uint32_t *vals, int nattrs, exa_genl_reply_fn reply, void *arg);

/* A device as a DEV_GET reply describes it. */
struct exa_genl_dev {
	long node_id, num_nodes, pkt_in_use, mbox_in_use;
	int have_counters;
	uint64_t counters[EXANET_NUM_COUNTERS];
};

/* Takes what the reply tb carries into *d (the rest stays as it was). */
void exa_genl_dev_reply(struct nlattr **tb, struct exa_genl_dev *d);

#endif
