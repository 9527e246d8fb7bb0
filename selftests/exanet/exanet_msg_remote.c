// SPDX-License-Identifier: GPL-2.0
/*
 * Two-node messaging tests (tests.list: nodes = 2).  Both ranks run every
 * test; rank 0 and rank 1 take the roles described per test and meet over
 * the out-of-band TCP channel between phases.
 */
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

static int pair_open(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
		      unsigned int nslots)
{
	struct endpoint_addr all[2];

	OOB_UP(&self->oob);
	if (self->oob.nnodes != 2)
		SKIP_TEST("needs exactly 2 ranks, have %d", self->oob.nnodes);
	self->rank = self->oob.rank;
	OPEN_DEV_OR_SKIP(&self->dev);
	ASSERT_EQ(0, exanet_pkt_alloc(self->dev, &self->pkt));
	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, nslots, &self->mbox));
	self->me.node = exanet_node_id(self->dev);
	self->me.mbox = exanet_mbox_id(self->mbox);
	ASSERT_EQ(0, oob_allgather(&self->oob, &self->me, all, sizeof(self->me)));
	self->peer = all[1 - self->rank];
	ASSERT_NE(self->me.node, self->peer.node);
	return 0;
}

FIXTURE_SETUP(pair)
{
	pair_open(_metadata, self, 1024);
}

FIXTURE_TEARDOWN(pair)
{
	oob_barrier(&self->oob);
	exanet_close(self->dev);
	oob_fini(&self->oob);
}

/* Rank 'sender' sends sizes 1..64 (deterministic random data), each waited
 * for; the other receives them in order and checks size, source, data. */
static void sizes_one_way(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
			  int sender)
{
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	unsigned int len;

	if (self->rank == sender) {
		for (len = 1; len <= EXANET_MAX_PAYLOAD; len++) {
			uint64_t st = 0;
			int err;

			exa_fill(buf, len, self->me.node, len);
			err = exanet_send_wait(self->pkt, self->peer.node, self->peer.mbox, buf,
					       len, 10 * SEC, &st);
			if (err)
				TH_LOG("size %u: %s (status %#llx)", len, strerror(-err),
				       (unsigned long long)st);
			ASSERT_EQ(0, err);
		}
	} else {
		for (len = 1; len <= EXANET_MAX_PAYLOAD; len++) {
			ssize_t n = exanet_recv_wait(self->mbox, buf, sizeof(buf), &info, RX_TMO);

			if (n != (ssize_t)len)
				TH_LOG("expected size %u, got %zd", len, n);
			ASSERT_EQ(len, n);
			ASSERT_EQ(self->peer.node, info.src_node);
			ASSERT_EQ(0, exa_check(buf, len, self->peer.node, len));
		}
		/* nothing extra */
		ASSERT_EQ(0, exanet_recv(self->mbox, buf, sizeof(buf), &info));
	}
	OOB_SYNC(&self->oob);
}

TEST_F(pair, every_size_1_to_64_intact_in_order)
{
	sizes_one_way(_metadata, self, 0);
	sizes_one_way(_metadata, self, 1);
}

/* 10000 messages, each sent after the previous one was ACKed: must arrive
 * exactly once, in order, intact; the ACK count must match. */
TEST_F_TIMEOUT(pair, stream_10000_in_order_no_loss_no_dup, 300)
{
	const uint32_t n = 10000;
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	struct rx_check rc;
	uint32_t i;

	ASSERT_EQ(0, rx_check_init(&rc, n));
	if (self->rank == 0) {
		for (i = 0; i < n; i++) {
			size_t len = 12 + i % 53;
			int err;

			exa_make_msg(buf, len, self->me.node, i);
			do {
				err = exanet_send_wait(self->pkt, self->peer.node, self->peer.mbox,
						       buf, len, 10 * SEC, NULL);
			} while (err == -ENOBUFS);	/* receiver momentarily behind */
			if (err)
				TH_LOG("message %u: %s", i, strerror(-err));
			ASSERT_EQ(0, err);
		}
	} else {
		for (i = 0; i < n; i++) {
			ssize_t len = exanet_recv_wait(self->mbox, buf, sizeof(buf), &info, RX_TMO);

			if (len <= 0)
				TH_LOG("after %u messages: %s", i, len ? strerror((int)-len) : "empty");
			ASSERT_LT(0, len);
			rx_check_msg(&rc, buf, (size_t)len, &info);
		}
		EXPECT_EQ(0, rc.corrupt);
		EXPECT_EQ(0, rc.dups);
		EXPECT_EQ(0, rc.bad_src);
		EXPECT_EQ(0, rc.out_of_order);
		EXPECT_EQ(n, rc.count[self->peer.node]);
		ASSERT_EQ(0, exanet_recv(self->mbox, buf, sizeof(buf), &info));
	}
	rx_check_free(&rc);
}

/* Both ranks stream to each other at the same time with all channels in
 * flight, receiving while sending. */
TEST_F_TIMEOUT(pair, both_directions_at_once_pipelined, 300)
{
	const uint32_t n = 5000;
	uint8_t buf[EXANET_MAX_PAYLOAD], in[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	struct tx_pipe tp;
	struct rx_check rc;
	uint32_t sent = 0, received = 0;
	int64_t deadline = exa_now_ms() + 120000;

	ASSERT_EQ(0, rx_check_init(&rc, n));
	tx_pipe_init(&tp, self->pkt);
	while ((sent < n || !tx_pipe_idle(&tp) || received < n) && exa_now_ms() < deadline) {
		ssize_t len;
		int i;

		if (sent < n) {
			size_t l = 12 + (sent * 7) % 53;
			int r;

			exa_make_msg(buf, l, self->me.node, sent);
			r = tx_pipe_try_send(&tp, self->peer.node, self->peer.mbox, buf, l);
			if (r < 0)
				TH_LOG("send %u failed, status %#llx", sent,
				       (unsigned long long)tp.bad_status);
			ASSERT_LE(0, r);
			sent += (uint32_t)r;
		} else {
			ASSERT_EQ(0, tx_pipe_poll(&tp));
		}
		for (i = 0; i < 8; i++) {
			len = exanet_recv(self->mbox, in, sizeof(in), &info);
			ASSERT_LE(0, len);
			if (!len)
				break;
			rx_check_msg(&rc, in, (size_t)len, &info);
			received++;
		}
	}
	TH_LOG("rank %d: sent %u acked %lu full-retries %lu received %u reordered %lu",
	       self->rank, sent, tp.acked, tp.full_retries, received, rc.out_of_order);
	ASSERT_EQ(n, tp.acked);
	ASSERT_EQ(n, received);
	EXPECT_EQ(0, rc.corrupt);
	EXPECT_EQ(0, rc.dups);
	EXPECT_EQ(0, rc.bad_src);
	EXPECT_EQ(0, rc.chan_order_violations);
	EXPECT_EQ(n, rc.count[self->peer.node]);
	rx_check_free(&rc);
}

/* Each rank sends to a second mailbox on its own node. */
TEST_F(pair, loopback_to_own_node)
{
	struct exanet_mbox *lb;
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	unsigned int len, i;

	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, 64, &lb));
	for (len = 1; len <= EXANET_MAX_PAYLOAD; len++) {
		exa_fill(buf, len, 100 + self->me.node, len);
		ASSERT_EQ(0, exanet_send_wait(self->pkt, self->me.node, exanet_mbox_id(lb), buf,
					      len, 10 * SEC, NULL));
		ASSERT_EQ(len, exanet_recv_wait(lb, buf, sizeof(buf), &info, RX_TMO));
		ASSERT_EQ(self->me.node, info.src_node);
		ASSERT_EQ(exanet_pkt_iface(self->pkt), info.src_iface);
		ASSERT_EQ(0, exa_check(buf, len, 100 + self->me.node, len));
	}
	/* a burst filling the mailbox exactly once around (phase flip) */
	for (i = 0; i < 200; i++) {
		exa_make_msg(buf, 40, self->me.node, i);
		ASSERT_EQ(0, exanet_send_wait(self->pkt, self->me.node, exanet_mbox_id(lb), buf,
					      40, 10 * SEC, NULL));
		if (i % 32 == 31) {
			unsigned int k;

			for (k = i - 31; k <= i; k++) {
				uint32_t src, seq;

				ASSERT_EQ(40, exanet_recv_wait(lb, buf, sizeof(buf), &info, RX_TMO));
				ASSERT_EQ(0, exa_parse_msg(buf, 40, &src, &seq));
				ASSERT_EQ(k, seq);
			}
		}
	}
	while (exanet_recv(lb, buf, sizeof(buf), &info) > 0)
		;
	ASSERT_EQ(0, exanet_mbox_free(lb));
}

/*
 * Receiver (rank 1) does not drain an 8-slot mailbox; the sender sends 12:
 * the first ones are ACKed until the mailbox is full, the rest end NACK
 * FULL.  After draining, exactly the ACKed ones are there, in order; then
 * the mailbox accepts new messages again (no stale HEAD).
 */
TEST_F(pair, full_mailbox_nack_full_then_drain)
{
	const unsigned int nslots = 8, total = 12;
	struct exanet_mbox *small;
	struct endpoint_addr target;
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	uint32_t acked_mask = 0, nacked = 0, acked = 0, i;

	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, nslots, &small));
	target.node = self->me.node;
	target.mbox = exanet_mbox_id(small);
	ASSERT_EQ(0, oob_bcast(&self->oob, &target, sizeof(target), 1));

	if (self->rank == 0) {
		for (i = 0; i < total; i++) {
			uint64_t st = 0;
			int err;

			exa_make_msg(buf, 32, self->me.node, i);
			err = exanet_send_wait(self->pkt, target.node, target.mbox, buf, 32,
					       10 * SEC, &st);
			if (err == 0) {
				ASSERT_EQ(0, nacked);	/* no ACK after the first FULL */
				acked_mask |= 1u << i;
				acked++;
			} else {
				if (err != -ENOBUFS)
					TH_LOG("message %u: %s (%s/%s)", i, strerror(-err),
					       exanet_chan_state_str(EXANET_ST_STATE(st)),
					       exanet_nack_reason_str(EXANET_ST_REASON(st)));
				ASSERT_EQ(-ENOBUFS, err);
				ASSERT_EQ(EXANET_CHAN_NACK, EXANET_ST_STATE(st));
				ASSERT_EQ(EXANET_NACK_FULL, EXANET_ST_REASON(st));
				nacked++;
			}
		}
		TH_LOG("mailbox of %u slots took %u messages, %u NACKed FULL", nslots, acked,
		       nacked);
		ASSERT_LE(nslots - 1, acked);
		ASSERT_GE(nslots, acked);
		ASSERT_EQ(total, acked + nacked);
	}
	ASSERT_EQ(0, oob_bcast(&self->oob, &acked, sizeof(acked), 0));
	ASSERT_EQ(0, oob_bcast(&self->oob, &acked_mask, sizeof(acked_mask), 0));

	if (self->rank == 1) {
		ASSERT_EQ(acked, exanet_mbox_pending(small));
		/*
		 * The mailbox counts refused packets once: when a NACK is lost
		 * or late (lossy fabric, loaded host) the sender retransmits,
		 * and the copy is answered as a duplicate with the same NACK.
		 */
		ASSERT_EQ(total - acked, exanet_mbox_full_count(small));
		for (i = 0; i < total; i++) {
			uint32_t src, seq;
			ssize_t n;

			if (!(acked_mask & (1u << i)))
				continue;
			n = exanet_recv(small, buf, sizeof(buf), &info);
			ASSERT_EQ(32, n);
			ASSERT_EQ(0, exa_parse_msg(buf, 32, &src, &seq));
			ASSERT_EQ(i, seq);
		}
		/* nothing NACKed shows up */
		ASSERT_EQ(0, exanet_recv(small, buf, sizeof(buf), &info));
		ASSERT_EQ(acked, exanet_mbox_rx_count(small));
	}
	OOB_SYNC(&self->oob);
	/* drained (HEAD published by the empty poll): a full round fits again */
	if (self->rank == 0) {
		for (i = 0; i < acked; i++) {
			exa_make_msg(buf, 20, self->me.node, 100 + i);
			ASSERT_EQ(0, exanet_send_wait(self->pkt, target.node, target.mbox, buf, 20,
						      10 * SEC, NULL));
		}
	} else {
		for (i = 0; i < acked; i++) {
			uint32_t src, seq;

			ASSERT_EQ(20, exanet_recv_wait(small, buf, sizeof(buf), &info, RX_TMO));
			ASSERT_EQ(0, exa_parse_msg(buf, 20, &src, &seq));
			ASSERT_EQ(100 + i, seq);
		}
	}
	OOB_SYNC(&self->oob);
	exanet_mbox_free(small);
}

/* ---- PDID isolation ---- */

struct pdid_child {
	int to_parent, from_parent;
	uint32_t expect_pdid;
	uint32_t target_node, target_mbox;	/* sender role */
};

/* Receiver in another PDID: allocates a mailbox, reports its id, waits,
 * then reports how many messages it holds and its RX count. */
static int pdid_receiver(void *arg)
{
	struct pdid_child *pc = arg;
	struct exanet_dev *dev;
	struct exanet_mbox *mb;
	uint32_t report[3];
	uint8_t buf[EXANET_MAX_PAYLOAD];
	char c;

	if (exanet_open(NULL, &dev) || exanet_pdid(dev) != pc->expect_pdid)
		return 10;
	if (exanet_mbox_alloc(dev, 16, &mb))
		return 11;
	report[0] = exanet_mbox_id(mb);
	if (write(pc->to_parent, report, 4) != 4)
		return 12;
	/* phase 1 done: count what is there (expected nothing) */
	if (read(pc->from_parent, &c, 1) != 1)
		return 13;
	report[0] = exanet_mbox_pending(mb);
	report[1] = exanet_mbox_rx_count(mb);
	if (write(pc->to_parent, report, 8) != 8)
		return 14;
	/* phase 2 done: receive what a same-PDID sender sent */
	if (read(pc->from_parent, &c, 1) != 1)
		return 15;
	report[0] = exanet_mbox_pending(mb);
	report[1] = exanet_mbox_rx_count(mb);
	report[2] = 0;
	while (exanet_recv(mb, buf, sizeof(buf), NULL) == 16 && !exa_check(buf, 16, 7, 7))
		report[2]++;
	if (write(pc->to_parent, report, 12) != 12)
		return 16;
	exanet_close(dev);
	return 0;
}

/* Sender in the receiver's PDID: one message, must be ACKed. */
static int pdid_sender(void *arg)
{
	struct pdid_child *pc = arg;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	uint8_t buf[16];
	uint64_t st;
	int err;

	if (exanet_open(NULL, &dev) || exanet_pdid(dev) != pc->expect_pdid)
		return 20;
	if (exanet_pkt_alloc(dev, &pkt))
		return 21;
	exa_fill(buf, 16, 7, 7);
	err = exanet_send_wait(pkt, pc->target_node, pc->target_mbox, buf, 16, 10 * SEC, &st);
	exanet_close(dev);
	return err ? 22 : 0;
}

TEST_F(pair, pdid_isolation_nack_pdid_victim_untouched)
{
	const uint32_t pdid = 7;
	int up[2] = { -1, -1 }, down[2] = { -1, -1 };
	struct pdid_child pc = { .expect_pdid = pdid };
	struct endpoint_addr victim = { 0, 0 };
	uint32_t report[3];
	pid_t child = -1;
	long nack_pdid_before = 0;
	uint64_t counters[EXANET_NUM_COUNTERS];
	char c = 'n';
	int i;

	if (self->rank == 1) {
		ASSERT_EQ(0, pipe(up));
		ASSERT_EQ(0, pipe(down));
		pc.to_parent = up[1];
		pc.from_parent = down[0];
		ASSERT_LE(EXANET_NUM_COUNTERS, exanet_read_counters(self->dev, counters,
								    EXANET_NUM_COUNTERS));
		nack_pdid_before = (long)counters[EXANET_CNT_RX_NACK_PDID];
		child = exa_spawn_in_pdid(pdid, pdid_receiver, &pc);
		if (child < 0)
			TH_LOG("binding a child to PDID %u: %s", pdid, strerror((int)-child));
		ASSERT_LT(0, child);
		ASSERT_EQ(4, read(up[0], report, 4));
		victim.node = self->me.node;
		victim.mbox = report[0];
	}
	ASSERT_EQ(0, oob_bcast(&self->oob, &victim, sizeof(victim), 1));

	/* phase 1: rank 0 (default PDID) is refused */
	if (self->rank == 0) {
		uint8_t buf[16];

		ASSERT_NE(pdid, exanet_pdid(self->dev));
		exa_fill(buf, 16, 0, 0);
		for (i = 0; i < 3; i++) {
			uint64_t st = 0;
			int err = exanet_send_wait(self->pkt, victim.node, victim.mbox, buf, 16,
						   10 * SEC, &st);

			ASSERT_EQ(-EACCES, err);
			ASSERT_EQ(EXANET_CHAN_NACK, EXANET_ST_STATE(st));
			ASSERT_EQ(EXANET_NACK_PDID, EXANET_ST_REASON(st));
		}
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		ASSERT_EQ(1, write(down[1], &c, 1));
		ASSERT_EQ(8, read(up[0], report, 8));
		EXPECT_EQ(0, report[0]);	/* victim's queue unchanged */
		EXPECT_EQ(0, report[1]);	/* and its RX count */
		ASSERT_LE(EXANET_NUM_COUNTERS, exanet_read_counters(self->dev, counters,
								    EXANET_NUM_COUNTERS));
		EXPECT_LE(nack_pdid_before + 3, (long)counters[EXANET_CNT_RX_NACK_PDID]);
	}
	/* the victim's queue is counted before phase 2 may put anything in it */
	OOB_SYNC(&self->oob);

	/* phase 2: a sender in the same PDID gets through */
	if (self->rank == 0) {
		pid_t s;

		pc.target_node = victim.node;
		pc.target_mbox = victim.mbox;
		s = exa_spawn_in_pdid(pdid, pdid_sender, &pc);
		ASSERT_LT(0, s);
		ASSERT_EQ(0, exa_wait_child(s, 30000));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		ASSERT_EQ(1, write(down[1], &c, 1));
		ASSERT_EQ(12, read(up[0], report, 12));
		EXPECT_EQ(1, report[0]);
		EXPECT_EQ(1, report[1]);
		EXPECT_EQ(1, report[2]);
		ASSERT_EQ(0, exa_wait_child(child, 10000));
	}
}

/* ---- sender killed mid-stream ---- */

struct killed_sender_arg {
	uint32_t node, mbox, max;
	int ready_fd;
};

static int stream_until_killed(void *arg)
{
	struct killed_sender_arg *ka = arg;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mb;
	uint8_t buf[EXANET_MAX_PAYLOAD];
	uint32_t i;
	char c = 'r';

	if (exanet_open(NULL, &dev) || exanet_pkt_alloc(dev, &pkt) ||
	    exanet_mbox_alloc(dev, 64, &mb))
		return 30;
	if (write(ka->ready_fd, &c, 1) != 1)
		return 31;
	for (i = 0; i < ka->max; i++) {
		int err;

		exa_make_msg(buf, 48, exanet_node_id(dev), i);
		do {
			err = exanet_send_wait(pkt, ka->node, ka->mbox, buf, 48, 10 * SEC, NULL);
		} while (err == -ENOBUFS);
		if (err)
			return 32;
		/* throttle so the kill lands mid-stream, before the
		 * receiver's mailbox could fill */
		if (i % 32 == 31)
			usleep(2000);
	}
	pause();	/* wait for SIGKILL with everything still allocated */
	return 0;
}

TEST_F_TIMEOUT(pair, sender_killed_midstream_cleanup_and_prefix, 120)
{
	const uint32_t max = 1000000;
	struct exanet_mbox *big;
	struct endpoint_addr target;
	struct killed_sender_arg ka;
	long pkt_before = 0, mbox_before = 0;
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	uint32_t got = 0;

	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, 8192, &big));
	target.node = self->me.node;
	target.mbox = exanet_mbox_id(big);
	ASSERT_EQ(0, oob_bcast(&self->oob, &target, sizeof(target), 1));

	if (self->rank == 0) {
		int ready[2], status;
		pid_t s;
		char c;

		pkt_before = exa_sysfs_long("pkt_in_use");
		mbox_before = exa_sysfs_long("mbox_in_use");
		ASSERT_LE(0, pkt_before);
		ASSERT_LE(0, mbox_before);
		ASSERT_EQ(0, pipe(ready));
		ka = (struct killed_sender_arg){ target.node, target.mbox, max, ready[1] };
		s = exa_spawn_in_pdid(0, stream_until_killed, &ka);
		ASSERT_LT(0, s);
		ASSERT_EQ(1, read(ready[0], &c, 1));
		ASSERT_EQ(pkt_before + 1, exa_sysfs_long("pkt_in_use"));
		OOB_SYNC(&self->oob);	/* it streams ... */
		OOB_SYNC(&self->oob);	/* ... and its first messages arrived */
		ASSERT_EQ(0, kill(s, SIGKILL));
		ASSERT_EQ(s, waitpid(s, &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status));
		/* interfaces return to the pool (may take a moment) */
		{
			int64_t end = exa_now_ms() + 5000;

			while ((exa_sysfs_long("pkt_in_use") != pkt_before ||
				exa_sysfs_long("mbox_in_use") != mbox_before) &&
			       exa_now_ms() < end)
				usleep(10000);
		}
		ASSERT_EQ(pkt_before, exa_sysfs_long("pkt_in_use"));
		ASSERT_EQ(mbox_before, exa_sysfs_long("mbox_in_use"));
	} else {
		/*
		 * Killed once messages arrive, not after a fixed time: on a
		 * loaded host, or while a cable of the route goes down, the
		 * first ones can take longer than any fixed wait.
		 */
		int64_t end;

		OOB_SYNC(&self->oob);
		end = exa_now_ms() + 60000;
		while (!exanet_mbox_pending(big) && exa_now_ms() < end)
			usleep(1000);
		OOB_SYNC(&self->oob);
	}
	OOB_SYNC(&self->oob);
	usleep(100000);	/* a packet that was in flight lands or is dropped */
	if (self->rank == 1) {
		ssize_t n;

		while ((n = exanet_recv(big, buf, sizeof(buf), &info)) > 0) {
			uint32_t src, seq;

			ASSERT_EQ(48, n);
			ASSERT_EQ(0, exa_parse_msg(buf, 48, &src, &seq));
			ASSERT_EQ(got, seq);	/* in-order prefix */
			got++;
		}
		ASSERT_EQ(0, n);
		TH_LOG("killed sender got %u messages through before dying", got);
		ASSERT_LT(0, got);
		ASSERT_GT(max, got);
	}
	OOB_SYNC(&self->oob);
	exanet_mbox_free(big);
}

/* ---- retransmission (needs a fabric with fault injection) ---- */

TEST_F_TIMEOUT(pair, retransmission_exactly_once, 300)
{
	const uint32_t n = 2000;
	uint64_t before[EXANET_NUM_COUNTERS], after[EXANET_NUM_COUNTERS];
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	struct rx_check rc;
	uint64_t retx = 0;
	uint32_t i;

	ASSERT_EQ(0, rx_check_init(&rc, n));
	ASSERT_LE(EXANET_NUM_COUNTERS, exanet_read_counters(self->dev, before, EXANET_NUM_COUNTERS));
	if (self->rank == 0) {
		for (i = 0; i < n; i++) {
			int err;

			exa_make_msg(buf, 64, self->me.node, i);
			do {
				err = exanet_send_wait(self->pkt, self->peer.node, self->peer.mbox,
						       buf, 64, 60 * SEC, NULL);
			} while (err == -ENOBUFS);
			ASSERT_EQ(0, err);
		}
		ASSERT_LE(EXANET_NUM_COUNTERS,
			  exanet_read_counters(self->dev, after, EXANET_NUM_COUNTERS));
		retx = after[EXANET_CNT_TX_RETRANSMITS] - before[EXANET_CNT_TX_RETRANSMITS];
	} else {
		for (i = 0; i < n; i++) {
			ssize_t len = exanet_recv_wait(self->mbox, buf, sizeof(buf), &info, 60 * SEC);

			ASSERT_EQ(64, len);
			rx_check_msg(&rc, buf, 64, &info);
		}
		ASSERT_EQ(0, exanet_recv(self->mbox, buf, sizeof(buf), &info));
		EXPECT_EQ(0, rc.corrupt);
		EXPECT_EQ(0, rc.dups);
		EXPECT_EQ(0, rc.out_of_order);
		EXPECT_EQ(n, rc.count[self->peer.node]);
	}
	rx_check_free(&rc);
	ASSERT_EQ(0, oob_bcast(&self->oob, &retx, sizeof(retx), 0));
	if (retx == 0 && !getenv("EXA_FAULT_INJECTION"))
		SKIP_TEST("no retransmission happened (fabric without fault injection); "
		     "delivery was still exactly-once");
	TH_LOG("%llu retransmissions, delivery exactly once", (unsigned long long)retx);
}

/* ---- the benchmark tool between the two nodes ---- */

TEST_F_TIMEOUT(pair, exanet_pingpong_tool_runs_between_nodes, 180)
{
	char peer_ip[32], cmd[512];
	uint32_t peers[OOB_MAX_NODES];
	int rank, nnodes, rc;
	unsigned int port = 18700 + (unsigned int)ksft_case_index(_metadata);

	if (exa_system("command -v exanet-pingpong >/dev/null 2>&1"))
		SKIP_TEST("exanet-pingpong not installed");
	ASSERT_EQ(0, oob_from_env(&rank, &nnodes, peers, OOB_MAX_NODES));
	snprintf(peer_ip, sizeof(peer_ip), "%u.%u.%u.%u", ((uint8_t *)&peers[1])[0],
		 ((uint8_t *)&peers[1])[1], ((uint8_t *)&peers[1])[2], ((uint8_t *)&peers[1])[3]);
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		snprintf(cmd, sizeof(cmd), "exanet-pingpong --server --oob %u --timeout 20 "
			 ">/tmp/pp-server.out 2>&1", port);
		rc = exa_system("%s", cmd);
		if (rc)
			exa_system("cat /tmp/pp-server.out");
		ASSERT_EQ(0, rc);
	} else {
		snprintf(cmd, sizeof(cmd), "exanet-pingpong --client --oob %s:%u --peer-node %u "
			 "--sizes 1,8,64 --iters 200 --warmup 20 --json >/tmp/pp-client.json",
			 peer_ip, port, self->peer.node);
		rc = exa_system("%s", cmd);
		ASSERT_EQ(0, rc);
		ASSERT_EQ(0, exa_system("grep -q '\"transport\":\"exanet\"' /tmp/pp-client.json"));
		ASSERT_EQ(0, exa_system("grep -q '\"size\":64' /tmp/pp-client.json"));
		ASSERT_EQ(0, exa_system("grep -q '\"errors\":0}]' /tmp/pp-client.json"));
		exa_system("cat /tmp/pp-client.json | sed 's/^/# /'");
	}
	/* wrong peer node is refused with a usage-level error */
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		snprintf(cmd, sizeof(cmd), "exanet-pingpong --server --oob %u --timeout 5 "
			 ">/dev/null 2>&1", port + 50);
		exa_system("%s", cmd);	/* the client gives up after the handshake */
	} else {
		snprintf(cmd, sizeof(cmd), "exanet-pingpong --client --oob %s:%u --peer-node 77 "
			 "--iters 10 >/dev/null 2>&1", peer_ip, port + 50);
		ASSERT_EQ(1, exa_system("%s", cmd));
	}
}

/*
 * The benchmark's own method: both sides under strace -f -c at two
 * iteration counts; the number of system calls must not grow with the
 * iterations.
 */
static long strace_total_calls(const char *file)
{
	char cmd[256];
	long calls = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "awk '$NF == \"total\" { print $4 }' %s", file);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fscanf(p, "%ld", &calls) != 1)
		calls = -1;
	pclose(p);
	return calls;
}

TEST_F_TIMEOUT(pair, exanet_pingpong_steady_state_no_syscalls_strace, 300)
{
	static const unsigned int iters[2] = { 100, 1100 };
	char peer_ip[32], file[64];
	uint32_t peers[OOB_MAX_NODES];
	long calls[2];
	int rank, nnodes, k;

	if (exa_system("command -v exanet-pingpong >/dev/null 2>&1 && "
		       "command -v strace >/dev/null 2>&1"))
		SKIP_TEST("exanet-pingpong or strace not installed");
	ASSERT_EQ(0, oob_from_env(&rank, &nnodes, peers, OOB_MAX_NODES));
	snprintf(peer_ip, sizeof(peer_ip), "%u.%u.%u.%u", ((uint8_t *)&peers[1])[0],
		 ((uint8_t *)&peers[1])[1], ((uint8_t *)&peers[1])[2], ((uint8_t *)&peers[1])[3]);
	for (k = 0; k < 2; k++) {
		unsigned int port = 18800 + (unsigned int)ksft_case_index(_metadata) * 4 + (unsigned int)k;

		snprintf(file, sizeof(file), "/tmp/pp-strace.%d", k);
		OOB_SYNC(&self->oob);
		/*
		 * The client starts only once the server listens: a client that
		 * has to retry its connect makes extra calls that have nothing
		 * to do with the steady state (seen on a slow, lossy cluster).
		 */
		if (self->rank == 1) {
			ASSERT_EQ(0, exa_system("rm -f %s.rc; (strace -f -c -o %s exanet-pingpong "
						"--server --oob %u --timeout 30 >/dev/null 2>&1; "
						"echo $? > %s.rc) >/dev/null 2>&1 &",
						file, file, port, file));
			ASSERT_EQ(0, exa_system("i=0; until grep -q ':%04X 00000000:0000 0A' "
						"/proc/net/tcp; do i=$((i+1)); [ $i -gt 600 ] "
						"&& exit 1; sleep 0.05; done", port));
			OOB_SYNC(&self->oob);
			ASSERT_EQ(0, exa_system("i=0; until [ -s %s.rc ]; do i=$((i+1)); "
						"[ $i -gt 1200 ] && exit 1; sleep 0.05; done; "
						"exit $(cat %s.rc)", file, file));
		} else {
			OOB_SYNC(&self->oob);
			ASSERT_EQ(0, exa_system("strace -f -c -o %s exanet-pingpong --client "
						"--oob %s:%u --sizes 32 --iters %u --warmup 10 "
						">/dev/null 2>&1", file, peer_ip, port, iters[k]));
		}
		calls[k] = strace_total_calls(file);
		ASSERT_LT(0, calls[k]);
	}
	TH_LOG("rank %d (%s): %ld system calls at %u iterations, %ld at %u", self->rank,
	       self->rank ? "server" : "client", calls[0], iters[0], calls[1], iters[1]);
	/* per iteration: (calls[1] - calls[0]) / 1000 must be ~0; allow a
	 * handful of calls of noise (e.g. a page fault retry path) */
	ASSERT_GE(10, calls[1] - calls[0]);
}

/* ---- the tools as an ordinary user ---- */

/* sh -c CMD as uid/gid 65534 (no passwd entry or su needed); exit status. */
static int nobody_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int nobody_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return exa_wait_child(pid, 240000);
}

/*
 * TOOL --server on rank 1 and TOOL --client on rank 0, both as nobody.
 * Returns the client's exit status on rank 0, the server's on rank 1;
 * outputs in /tmp/nb-<tag>.{cli,err,srv}.
 */
static int nobody_tool_pair(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
			    const char *tool, const char *tag, unsigned int port,
			    const char *peer_ip, const char *srv_args, const char *cli_args)
{
	int rc;

	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		exa_system("rm -f /tmp/nb-%s.*", tag);
		ASSERT_EQ(0, nobody_sh("(%s --server --oob %u %s > /tmp/nb-%s.srv 2>&1; "
				       "echo $? > /tmp/nb-%s.rc) >/dev/null 2>&1 &",
				       tool, port, srv_args, tag, tag));
		ASSERT_EQ(0, exa_system("i=0; until grep -q ':%04X 00000000:0000 0A' "
					"/proc/net/tcp; do i=$((i+1)); [ $i -gt 600 ] "
					"&& exit 1; sleep 0.05; done", port));
		OOB_SYNC(&self->oob);
		rc = exa_system("i=0; until [ -s /tmp/nb-%s.rc ]; do i=$((i+1)); "
				"[ $i -gt 3000 ] && exit 99; sleep 0.05; done; "
				"exit $(cat /tmp/nb-%s.rc)", tag, tag);
		if (rc)
			exa_system("sed 's/^/# %s server: /' /tmp/nb-%s.srv", tool, tag);
	} else {
		OOB_SYNC(&self->oob);
		rc = nobody_sh("%s --client --oob %s:%u %s > /tmp/nb-%s.cli 2> /tmp/nb-%s.err",
			       tool, peer_ip, port, cli_args, tag, tag);
		if (rc)
			exa_system("sed 's/^/# %s client: /' /tmp/nb-%s.cli /tmp/nb-%s.err",
				   tool, tag, tag);
	}
	return rc;
}

/*
 * An ordinary user (uid 65534 on both nodes, unbound: the same user domain
 * on both) runs the tools with the node's default RLIMIT_MEMLOCK:
 * exanet-pingpong, exanet-rdma-lat (write and read) and exanet-rdma-bw with
 * small sizes work.  exanet-rdma-lat with its default sizes (up to 2 MiB:
 * two 2 MiB halves and a notification page registered) works under the
 * default 8 MiB limit, else both sides exit 1 naming RLIMIT_MEMLOCK.
 */
TEST_F_TIMEOUT(pair, tools_run_as_unprivileged_user_default_memlock, 300)
{
	/* default sizes (RT_DEFAULT_SIZES): two 2 MiB halves + a notification page */
	const unsigned long long need = (4ull << 20) + 4096;
	unsigned int port = 18900 + (unsigned int)ksft_case_index(_metadata) * 8;
	uint32_t peers[OOB_MAX_NODES];
	struct exanet_rdma_info ri;
	char peer_ip[32], args[256];
	int rank, nnodes, rc, rdma;
	struct rlimit rl;

	if (exa_system("{ command -v exanet-pingpong && command -v exanet-rdma-lat && "
		       "command -v exanet-rdma-bw; } >/dev/null 2>&1"))
		SKIP_TEST("tools not installed");
	ASSERT_EQ(0, oob_from_env(&rank, &nnodes, peers, OOB_MAX_NODES));
	snprintf(peer_ip, sizeof(peer_ip), "%u.%u.%u.%u", ((uint8_t *)&peers[1])[0],
		 ((uint8_t *)&peers[1])[1], ((uint8_t *)&peers[1])[2], ((uint8_t *)&peers[1])[3]);
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &rl));
	rdma = !exanet_rdma_query(self->dev, &ri) && ri.num_ranks && ri.num_pages;
	TH_LOG("rank %d: RLIMIT_MEMLOCK %llu KiB, RDMA %s", self->rank,
	       rl.rlim_cur == RLIM_INFINITY ? ~0ull : (unsigned long long)rl.rlim_cur >> 10,
	       rdma ? "yes" : "no");

	snprintf(args, sizeof(args), "--peer-node %u --sizes 1,8,64 --iters 200 --warmup 20 --json",
		 self->peer.node);
	rc = nobody_tool_pair(_metadata, self, "exanet-pingpong", "pp", port, peer_ip,
			      "--timeout 20", args);
	ASSERT_EQ(0, rc);
	if (self->rank == 0)
		ASSERT_EQ(0, exa_system("grep -q '\"errors\":0}]' /tmp/nb-pp.cli"));
	if (!rdma)
		SKIP_TEST("exanet-pingpong passed; no RDMA on this node for the RDMA tools");

	rc = nobody_tool_pair(_metadata, self, "exanet-rdma-lat", "lat", port + 1, peer_ip,
			      "-t 30", "-S 8,4096,65536 -i 50 -w 5 -j");
	ASSERT_EQ(0, rc);
	if (self->rank == 0)
		ASSERT_EQ(0, exa_system("grep -q '\"size\":65536.*\"status\":\"ok\"' /tmp/nb-lat.cli"));
	rc = nobody_tool_pair(_metadata, self, "exanet-rdma-lat", "latr", port + 2, peer_ip,
			      "-t 30", "-r -S 8,65536 -i 50 -w 5 -j");
	ASSERT_EQ(0, rc);
	if (self->rank == 0)
		ASSERT_EQ(0, exa_system("grep -q '\"size\":65536.*\"status\":\"ok\"' /tmp/nb-latr.cli"));
	rc = nobody_tool_pair(_metadata, self, "exanet-rdma-bw", "bw", port + 3, peer_ip,
			      "-t 30", "-S 4096,65536 -i 16 -w 2 -j");
	ASSERT_EQ(0, rc);
	if (self->rank == 0)
		ASSERT_EQ(0, exa_system("grep -q '\"size\":65536.*\"status\":\"ok\"' /tmp/nb-bw.cli"));

	/* default sizes */
	rc = nobody_tool_pair(_metadata, self, "exanet-rdma-lat", "latd", port + 4, peer_ip,
			      "-t 30", "-i 4 -w 1 -j");
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) {
		ASSERT_EQ(0, rc);
	} else {
		TH_LOG("default sizes need %llu KiB > RLIMIT_MEMLOCK: refused with a clear message",
		       need >> 10);
		ASSERT_EQ(1, rc);
		ASSERT_EQ(0, exa_system("grep -q 'RLIMIT_MEMLOCK is %llu KiB' /tmp/nb-latd.%s",
					(unsigned long long)rl.rlim_cur >> 10,
					self->rank ? "srv" : "err"));
	}
}

/* ---- kernel bypass: no system call on the data path ---- */

/*
 * After setup, a child enters seccomp strict mode (only read, write, exit,
 * sigreturn allowed; anything else kills it) and runs a ping-pong with the
 * peer through libexanet.  Surviving proves the data path makes no system
 * call (waits without timeout read no clock).
 */

struct bypass_arg {
	int initiator;
	int to_parent, from_parent;
	volatile uint32_t *progress;	/* shared page: iterations done */
};

/* Runs in a forked child: own device, own interfaces (mappings are not
 * inherited), then strict mode and 500 round trips.  Never returns. */
static int bypass_child(void *arg)
{
	struct bypass_arg *ba = arg;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mb;
	struct endpoint_addr me, peer;
	uint8_t buf[EXANET_MAX_PAYLOAD];
	const volatile struct exanet_mbox_slot *q2;
	uint32_t i, ok = 0;
	char r = '?';

	if (exanet_open(NULL, &dev) || exanet_pkt_alloc(dev, &pkt) ||
	    exanet_mbox_alloc(dev, 64, &mb))
		return 50;
	me.node = exanet_node_id(dev);
	me.mbox = exanet_mbox_id(mb);
	if (write(ba->to_parent, &me, sizeof(me)) != sizeof(me) ||
	    read(ba->from_parent, &peer, sizeof(peer)) != sizeof(peer))
		return 51;
	/* touch the pages now (the first access faults them in) without
	 * consuming anything: the peer's first ping may already be here */
	(void)exanet_mbox_pending(mb);
	(void)exanet_mbox_rx_count(mb);
	(void)exanet_chan_status(pkt, 0);

	/* diagnostics: a second view of our queue, to tell a missing DMA
	 * from a stale mapping if the test ever stalls */
	q2 = mmap(NULL, 64 * EXANET_MBOX_SLOT_SIZE, PROT_READ, MAP_SHARED, exanet_dev_fd(dev),
		  (off_t)EXANET_MMAP_OFFSET(EXANET_MMAP_MBOX_QUEUE, me.mbox));
	if (q2 == MAP_FAILED)
		return 55;
	ba->progress[4] = q2[0].flags;
	ba->progress[1] = 1;	/* stage: set up */
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0)
		return 52;
	ba->progress[1] = 2;	/* stage: strict mode */
	/*
	 * No clock here (on a node whose clocksource has no vDSO a clock read
	 * is a system call): waits are bounded by the peer's outcome and by
	 * the parent's timeout instead.
	 */
	for (i = 0; i < 500; i++) {
		int chan = -1;
		ssize_t n = 0;

		if (ba->initiator) {
			exa_fill(buf, 32, 1, i);
			while ((chan = exanet_send(pkt, peer.node, peer.mbox, buf, 32)) == -EAGAIN)
				;
			if (chan < 0) {
				r = 's';
				break;
			}
			ba->progress[1] = 3;	/* stage: ping sent */
			/* wait for the echo; give up if our ping failed */
			while ((n = exanet_recv(mb, buf, sizeof(buf), NULL)) == 0) {
				int st = exanet_chan_state(pkt, (unsigned int)chan);

				ba->progress[2] = (uint32_t)exanet_chan_status(pkt, (unsigned int)chan);
				ba->progress[3] = exanet_mbox_hw_tail(mb);

				if (st == EXANET_CHAN_NACK || st == EXANET_CHAN_TIMEOUT)
					break;
			}
		} else {
			ba->progress[1] = 4;	/* stage: waiting for ping */
			while ((n = exanet_recv(mb, buf, sizeof(buf), NULL)) == 0) {
				ba->progress[3] = exanet_mbox_hw_tail(mb);
				ba->progress[4] = q2[0].flags;
				ba->progress[5] = q2[0].len;
			}
			if (n == 32) {
				while ((chan = exanet_send(pkt, peer.node, peer.mbox, buf, 32)) == -EAGAIN)
					;
			}
		}
		if (n != 32) {
			r = n < 0 ? 'r' : 'p';	/* receive error / ping failed */
			break;
		}
		if (chan < 0 || exanet_wait(pkt, (unsigned int)chan, EXANET_WAIT_FOREVER, NULL)) {
			r = 'a';		/* send not ACKed */
			break;
		}
		if (exa_check(buf, 32, 1, i) == 0)
			ok++;
		ba->progress[0] = i + 1;
	}
	if (i == 500)
		r = ok == 500 ? 'y' : 'c';
	if (write(ba->to_parent, &r, 1) != 1 || write(ba->to_parent, &i, sizeof(i)) != sizeof(i))
		syscall(SYS_exit, 53);
	syscall(SYS_exit, 0);	/* exit_group is not allowed in strict mode */
	return 54;
}

TEST_F_TIMEOUT(pair, data_path_makes_no_syscalls_seccomp_strict, 120)
{
	struct bypass_arg ba = { .initiator = self->rank == 0 };
	struct endpoint_addr all[2], mine;
	int up[2], down[2], rc;
	pid_t pid;
	char r = 0;

	ba.progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, (void *)ba.progress);
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	ba.to_parent = up[1];
	ba.from_parent = down[0];
	pid = exa_spawn_in_pdid(0, bypass_child, &ba);
	ASSERT_LT(0, pid);
	ASSERT_EQ(sizeof(mine), read(up[0], &mine, sizeof(mine)));
	ASSERT_EQ(0, oob_allgather(&self->oob, &mine, all, sizeof(mine)));
	ASSERT_EQ(sizeof(all[0]), write(down[1], &all[1 - self->rank], sizeof(all[0])));
	close(up[1]);
	/* wait while the child makes progress; give up after 20 s without */
	{
		uint32_t last = 0;
		int64_t last_change = exa_now_ms();

		for (;;) {
			rc = exa_poll_child(pid, 200);
			if (rc != -ETIMEDOUT)
				break;
			if (ba.progress[0] != last) {
				last = ba.progress[0];
				last_change = exa_now_ms();
			} else if (exa_now_ms() - last_change > 20000) {
				TH_LOG("rank %d: no progress after %u round trips; stage %u status %#x "
				       "hw tail %u; slot 0 via 2nd mapping: flags %u len %u; my mbox %u, "
				       "peer node %u mbox %u", self->rank, last,
				       ba.progress[1], ba.progress[2], ba.progress[3], ba.progress[4],
				       ba.progress[5], mine.mbox,
				       all[1 - self->rank].node, all[1 - self->rank].mbox);
				rc = exa_wait_child(pid, 0);
				break;
			}
		}
	}
	if (rc == 128 + SIGKILL)
		TH_LOG("the data path made a system call (killed by seccomp strict mode)");
	ASSERT_EQ(0, rc);
	ASSERT_EQ(1, read(up[0], &r, 1));
	{
		uint32_t iter = 0;

		ASSERT_EQ(sizeof(iter), read(up[0], &iter, sizeof(iter)));
		if (r != 'y')
			TH_LOG("rank %d: ping-pong failed at iteration %u: %c", self->rank, iter, r);
	}
	ASSERT_EQ('y', r);
}

TEST_HARNESS_MAIN
