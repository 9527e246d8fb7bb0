// SPDX-License-Identifier: GPL-2.0
/*
 * Messages between two nodes (tests.list: nodes = 2).  Both ranks run every
 * test; rank 0 and rank 1 take the roles described per test and meet over
 * the out-of-band TCP channel between phases.
 *
 * One translation unit: this file has the fixture "pair" and main; the
 * cases are in the headers it includes below, one concern each, in run
 * order:
 *
 *   exanet_msg_remote-delivery.h  every size, a stream of 10000, both
 *                                 directions at once, the own node, a
 *                                 full mailbox
 *   exanet_msg_remote-failures.h  a receiver in another PDID, a sender
 *                                 killed mid-stream, retransmission
 *   exanet_msg_remote-tools.h     exanet-pingpong between the nodes, its
 *                                 system calls, the tools as nobody
 *   exanet_msg_remote-bypass.h    no system call on the data path
 *                                 (seccomp strict mode)
 */
#define EXANET_MSG_REMOTE_C

#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "exa_stream.h"

#define RX_TMO (20 * SEC)

FIXTURE(pair) {
	struct oob oob;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mbox;
	struct endpoint_addr me, peer;
	int rank;
};

/* Every case: a packetizer and a 1024-slot mailbox on each rank, the
 * peer's address. */
FIXTURE_SETUP(pair)
{
	struct endpoint_addr all[2];

	OOB_UP(&self->oob);
	if (self->oob.nnodes != 2)
		SKIP_TEST("needs exactly 2 ranks, have %d", self->oob.nnodes);
	self->rank = self->oob.rank;
	OPEN_DEV_OR_SKIP(&self->dev);
	ASSERT_EQ(0, exanet_pkt_alloc(self->dev, &self->pkt));
	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, 1024, &self->mbox));
	self->me.node = exanet_node_id(self->dev);
	self->me.mbox = exanet_mbox_id(self->mbox);
	ASSERT_EQ(0, oob_allgather(&self->oob, &self->me, all, sizeof(self->me)));
	self->peer = all[1 - self->rank];
	ASSERT_NE(self->me.node, self->peer.node);
}

FIXTURE_TEARDOWN(pair)
{
	oob_barrier(&self->oob);
	exanet_close(self->dev);
	oob_fini(&self->oob);
}

#include "exanet_msg_remote-delivery.h"
#include "exanet_msg_remote-failures.h"
#include "exanet_msg_remote-tools.h"
#include "exanet_msg_remote-bypass.h"

TEST_HARNESS_MAIN
