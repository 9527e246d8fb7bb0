/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_msg_remote: delivery between the two nodes: every size, a stream of
 * 10000, both directions at once, the own node, a full mailbox.
 *
 * Cases of the translation unit of exanet_msg_remote.c: include it only there.
 */
#ifndef EXANET_MSG_REMOTE_C
#error "exanet_msg_remote-delivery.h holds cases of exanet_msg_remote.c: include it only there"
#endif

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
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct tx_pipe tp;
	struct rx_check rc;
	uint32_t sent = 0, received = 0;
	int64_t deadline = exa_now_ms() + 120000;

	ASSERT_EQ(0, rx_check_init(&rc, n));
	tx_pipe_init(&tp, self->pkt);
	while ((sent < n || !tx_pipe_idle(&tp) || received < n) && exa_now_ms() < deadline) {
		int got;

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
		got = rx_check_drain(&rc, self->mbox, 8);
		ASSERT_LE(0, got);
		received += (uint32_t)got;
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
