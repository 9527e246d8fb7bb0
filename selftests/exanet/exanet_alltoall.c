// SPDX-License-Identifier: GPL-2.0
/*
 * Four-node all-to-all (tests.list: nodes = 4): every rank sends N messages
 * to every other rank's mailbox; every receiver must get exactly N from
 * each sender, in order per sender, intact.  And one mailbox filled by
 * every other rank at once (several writers into one full ring).
 */
#include <limits.h>

#include "exa_stream.h"

#define MBOX_SLOTS 2048

FIXTURE(a2a) {
	struct oob oob;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mbox;
	struct endpoint_addr all[RX_MAX_SRC];
	int rank, nnodes;
};

FIXTURE_SETUP(a2a)
{
	struct endpoint_addr me;

	OOB_UP(&self->oob);
	self->rank = self->oob.rank;
	self->nnodes = self->oob.nnodes;
	if (self->nnodes < 3 || self->nnodes > RX_MAX_SRC)
		SKIP_TEST("needs 3..%d ranks, have %d", RX_MAX_SRC, self->nnodes);
	OPEN_DEV_OR_SKIP(&self->dev);
	ASSERT_EQ(0, exanet_pkt_alloc(self->dev, &self->pkt));
	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, MBOX_SLOTS, &self->mbox));
	me.node = exanet_node_id(self->dev);
	me.mbox = exanet_mbox_id(self->mbox);
	ASSERT_GT(RX_MAX_SRC, me.node);
	ASSERT_EQ(0, oob_allgather(&self->oob, &me, self->all, sizeof(me)));
}

FIXTURE_TEARDOWN(a2a)
{
	oob_barrier(&self->oob);
	exanet_close(self->dev);
	oob_fini(&self->oob);
}

static void check_all_received(struct __test_metadata *_metadata, FIXTURE_DATA(a2a) *self,
			       struct rx_check *rc, uint32_t n, int strict_order)
{
	int r;

	EXPECT_EQ(0, rc->corrupt);
	EXPECT_EQ(0, rc->dups);
	EXPECT_EQ(0, rc->bad_src);
	EXPECT_EQ(0, rc->chan_order_violations);
	if (strict_order)
		EXPECT_EQ(0, rc->out_of_order);
	for (r = 0; r < self->nnodes; r++) {
		uint32_t src = self->all[r].node;

		if (r == self->rank)
			continue;
		if (rc->count[src] != n)
			TH_LOG("rank %d: from node %u got %u of %u", self->rank, src,
			       rc->count[src], n);
		EXPECT_EQ(n, rc->count[src]);
	}
}

/* Each message waits for its ACK; destinations interleaved round robin. */
TEST_F_TIMEOUT(a2a, all_to_all_sequential_exactly_n_in_order, 300)
{
	const uint32_t n = 300;
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	struct rx_check rc;
	uint32_t i, expected = n * (uint32_t)(self->nnodes - 1), received = 0;
	int64_t deadline;
	int d;

	ASSERT_EQ(0, rx_check_init(&rc, n));
	for (i = 0; i < n; i++) {
		for (d = 1; d < self->nnodes; d++) {
			int dst = (self->rank + d) % self->nnodes;
			size_t len = 12 + (i + (uint32_t)dst) % 53;
			int err, got;

			exa_make_msg(buf, len, self->all[self->rank].node, i);
			do {
				err = exanet_send_wait(self->pkt, self->all[dst].node,
						       self->all[dst].mbox, buf, len, 10 * SEC, NULL);
			} while (err == -ENOBUFS);
			if (err)
				TH_LOG("to rank %d message %u: %s", dst, i, strerror(-err));
			ASSERT_EQ(0, err);
			/* drain what is there while sending */
			got = rx_check_drain(&rc, self->mbox, UINT_MAX);
			ASSERT_LE(0, got);
			received += (uint32_t)got;
		}
	}
	deadline = exa_now_ms() + 60000;
	while (received < expected && exa_now_ms() < deadline) {
		ssize_t got = exanet_recv_wait(self->mbox, buf, sizeof(buf), &info, SEC);

		if (got == -ETIMEDOUT)
			continue;
		ASSERT_LT(0, got);
		rx_check_msg(&rc, buf, (size_t)got, &info);
		received++;
	}
	ASSERT_EQ(expected, received);
	check_all_received(_metadata, self, &rc, n, 1);
	OOB_SYNC(&self->oob);
	ASSERT_EQ(0, exanet_recv(self->mbox, buf, sizeof(buf), &info));
	rx_check_free(&rc);
}

/* All four channels in flight to alternating destinations. */
TEST_F_TIMEOUT(a2a, all_to_all_pipelined_no_loss_no_dup, 300)
{
	const uint32_t n = 1000;
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct tx_pipe tp;
	struct rx_check rc;
	uint32_t seq[RX_MAX_SRC] = { 0 };
	uint32_t sent = 0, total = n * (uint32_t)(self->nnodes - 1), received = 0;
	int64_t deadline = exa_now_ms() + 200000;
	int next = 1;

	ASSERT_EQ(0, rx_check_init(&rc, n));
	tx_pipe_init(&tp, self->pkt);
	while ((sent < total || !tx_pipe_idle(&tp) || received < total) &&
	       exa_now_ms() < deadline) {
		int got;

		if (sent < total) {
			int dst = (self->rank + next) % self->nnodes;
			size_t l = 12 + (sent * 5) % 53;
			int r;

			exa_make_msg(buf, l, self->all[self->rank].node, seq[dst]);
			r = tx_pipe_try_send(&tp, self->all[dst].node, self->all[dst].mbox, buf, l);
			if (r < 0)
				TH_LOG("send failed, status %#llx", (unsigned long long)tp.bad_status);
			ASSERT_LE(0, r);
			if (r) {
				sent++;
				seq[dst]++;
				next = next % (self->nnodes - 1) + 1;
			}
		} else {
			ASSERT_EQ(0, tx_pipe_poll(&tp));
		}
		got = rx_check_drain(&rc, self->mbox, 16);
		ASSERT_LE(0, got);
		received += (uint32_t)got;
	}
	TH_LOG("rank %d: sent %u acked %lu full-retries %lu received %u cross-channel reorders %lu",
	       self->rank, sent, tp.acked, tp.full_retries, received, rc.out_of_order);
	ASSERT_EQ(total, tp.acked);
	ASSERT_EQ(total, received);
	check_all_received(_metadata, self, &rc, n, 0);
	rx_check_free(&rc);
}

/* Message seq of node src (its length varies with seq) to (dst, mbox) if
 * the pipe takes it: 1 sent, 0 not now, < 0 an error. */
static int fill_send(struct tx_pipe *tp, uint32_t src, uint32_t dst, uint32_t mbox,
		     uint32_t seq)
{
	uint8_t buf[EXANET_MAX_PAYLOAD];
	size_t l = 12 + (seq * 5) % 53;

	exa_make_msg(buf, l, src, seq);
	return tx_pipe_try_send(tp, dst, mbox, buf, l);
}

/*
 * Ranks 1.. send to rank 0, which does not read its mailbox until each of
 * them was pushed back by it (NACK FULL, retried) or had sent everything:
 * then every slot holds a message, and drained the mailbox has each
 * sender's messages exactly once, intact, in order per channel.
 */
TEST_F_TIMEOUT(a2a, mailbox_filled_by_every_sender_at_once, 300)
{
	const uint32_t senders = (uint32_t)self->nnodes - 1;
	const uint32_t n = 2 * MBOX_SLOTS / senders + 1;	/* twice the mailbox */
	int64_t deadline = exa_now_ms() + 200000;
	int pushed = 0, all_pushed[RX_MAX_SRC];

	if (self->rank != 0) {
		uint32_t dst = self->all[0].node, mbox = self->all[0].mbox, sent = 0;
		struct tx_pipe tp;

		tx_pipe_init(&tp, self->pkt);
		/* until pushed back by the full mailbox (or all sent) */
		while (sent < n && !tp.full_retries && exa_now_ms() < deadline) {
			int r = fill_send(&tp, self->all[self->rank].node, dst, mbox, sent);

			ASSERT_LE(0, r);
			sent += (uint32_t)r;
		}
		pushed = tp.full_retries > 0;
		ASSERT_EQ(0, oob_allgather(&self->oob, &pushed, all_pushed, sizeof(pushed)));
		while ((sent < n || !tx_pipe_idle(&tp)) && exa_now_ms() < deadline) {
			int r;

			if (sent == n) {
				ASSERT_EQ(0, tx_pipe_poll(&tp));
				continue;
			}
			r = fill_send(&tp, self->all[self->rank].node, dst, mbox, sent);
			ASSERT_LE(0, r);
			sent += (uint32_t)r;
		}
		TH_LOG("rank %d: %u messages to rank 0, acked %lu, pushed back by the full "
		       "mailbox %lu times", self->rank, sent, tp.acked, tp.full_retries);
		ASSERT_EQ(n, tp.acked);
	} else {
		uint8_t in[EXANET_MAX_PAYLOAD];
		struct exanet_msg_info info;
		struct rx_check rc;
		uint32_t received = 0, burst = 0;
		int first = 1;

		ASSERT_EQ(0, rx_check_init(&rc, n));
		ASSERT_EQ(0, oob_allgather(&self->oob, &pushed, all_pushed, sizeof(pushed)));
		while (received < senders * n && exa_now_ms() < deadline) {
			ssize_t len = exanet_recv(self->mbox, in, sizeof(in), &info);

			ASSERT_LE(0, len);
			if (!len) {
				first = 0;
				continue;
			}
			burst += (uint32_t)first;
			rx_check_msg(&rc, in, (size_t)len, &info);
			received++;
		}
		TH_LOG("rank 0: %u messages from %u senders; the first %u were waiting in "
		       "the mailbox of %u slots", received, senders, burst, MBOX_SLOTS);
		for (uint32_t r = 1; r <= senders; r++)
			if (!all_pushed[r])
				TH_LOG("rank %u sent all before it was pushed back", r);
		ASSERT_EQ(senders * n, received);
		check_all_received(_metadata, self, &rc, n, 0);
		/* the mailbox was full when its reader came */
		EXPECT_LE(MBOX_SLOTS, burst);
		rx_check_free(&rc);
	}
}

TEST_HARNESS_MAIN
