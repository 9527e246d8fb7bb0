/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_fi: the operations between two ranks, every byte checked: tagged
 * and untagged messages, out-of-order tag matching, unexpected messages and
 * a flood of them, truncation, FI_PEEK/FI_CLAIM and cancel, RMA with keys.
 *
 * Cases of the translation unit of exanet_fi.c: include it only there.
 */
#ifndef EXANET_FI_C
#error "exanet_fi-xfer.h holds cases of exanet_fi.c: include it only there"
#endif

TEST_F_TIMEOUT(fi, tagged_sizes_0_to_1MiB_both_ways_av_table, 600)
{
	fi_test_tagged_sizes(_metadata, self);
}

/* Untagged messages with remote CQ data, over an FI_AV_MAP vector. */
TEST_F_TIMEOUT(fi, msg_with_cq_data_av_map, 300)
{
	struct fi_cq_tagged_entry e;
	size_t len;

	fi_open_all(_metadata, self, FI_AV_MAP);
	for (len = 0; len <= 3000; len += 150) {
		uint64_t data = 0xabcd0000 + len;

		if (self->rank == 0) {
			fill(self->sbuf, len, 7);
			ASSERT_EQ(0, fi_senddata(self->ep, self->sbuf, len, NULL, data, self->peer,
						 NULL));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		} else {
			ASSERT_EQ(0, fi_recv(self->ep, self->rbuf, 4096, NULL, FI_ADDR_UNSPEC, NULL));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			EXPECT_EQ(FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, e.flags);
			EXPECT_EQ(data, e.data);
			ASSERT_EQ(len, e.len);
			ASSERT_EQ(0, check(self->rbuf, len, 7));
		}
	}
}

/* Receives posted in the reverse order of the sends, plus a wildcard that
 * must take only what the specific ones do not match. */
TEST_F_TIMEOUT(fi, out_of_order_tag_matching, 300)
{
	const int n = 16;
	struct fi_cq_tagged_entry e;
	int i, got[17] = { 0 };

	fi_open_all(_metadata, self, FI_AV_TABLE);
	if (self->rank == 1) {
		for (i = n - 1; i >= 0; i--)
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf + i * 4096, 4096, NULL, self->peer,
					      0x500 + i, 0, (void *)(intptr_t)(i + 1)));
		/* wildcard over the low 8 bits: gets tag 0x7ff only */
		ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf + n * 4096, 4096, NULL, FI_ADDR_UNSPEC,
				      0x700, 0xff, (void *)(intptr_t)(n + 1)));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		for (i = 0; i < n; i++) {
			fill(self->sbuf + i * 4096, 100 + i * 200, 0x500 + i);
			ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf + i * 4096, 100 + i * 200, NULL,
					      self->peer, 0x500 + i, NULL));
		}
		fill(self->sbuf + n * 4096, 77, 0x7ff);
		ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf + n * 4096, 77, NULL, self->peer, 0x7ff,
				      NULL));
		for (i = 0; i <= n; i++)
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	} else {
		for (i = 0; i <= n; i++) {
			int idx;

			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			idx = (int)(intptr_t)e.op_context - 1;
			ASSERT_LE(0, idx);
			ASSERT_GE(n, idx);
			if (idx < 0 || idx > n)
				continue;	/* not reached: tells the compiler */
			got[idx]++;
			if (idx < n) {
				EXPECT_EQ((uint64_t)(0x500 + idx), e.tag);
				ASSERT_EQ((size_t)(100 + idx * 200), e.len);
				ASSERT_EQ(0, check(self->rbuf + idx * 4096, e.len, 0x500 + idx));
			} else {
				EXPECT_EQ(0x7ffu, e.tag);
				ASSERT_EQ(77, e.len);
				ASSERT_EQ(0, check(self->rbuf + idx * 4096, 77, 0x7ff));
			}
		}
		for (i = 0; i <= n; i++)
			EXPECT_EQ(1, got[i]);
	}
}

/* Messages that arrive before any receive is posted (one of 200 KiB) are
 * buffered and handed over intact, in send order for equal tags. */
TEST_F_TIMEOUT(fi, unexpected_before_receive_posted, 300)
{
	static const size_t lens[] = { 0, 1, 32, 33, 500, 4096, 200000, 8, 8, 8 };
	const int n = sizeof(lens) / sizeof(lens[0]);
	struct fi_cq_tagged_entry e;
	size_t off = 0;
	int i;

	fi_open_all(_metadata, self, FI_AV_TABLE);
	if (self->rank == 0) {
		for (i = 0; i < n; i++) {
			fill(self->sbuf + off, lens[i], i < 7 ? (uint64_t)i : (uint64_t)(100 + i));
			ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf + off, lens[i], NULL, self->peer,
					      i < 7 ? (uint64_t)i : (uint64_t)99, NULL));
			off += lens[i];
		}
		/* the eager ones complete when delivered (in the peer's mailbox or
		 * its unexpected queue); the 500 B, 4 KiB and 200 KiB ones go by
		 * rendezvous and complete only once the receiver has read them */
		for (i = 0; i < n; i++)
			if (lens[i] <= EAGER_MAX)
				ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	} else {
		/* let them come in while nothing is posted; progress without receives */
		int64_t end = exanet_now_ns() + 2 * SEC;

		while (exanet_now_ns() < end)
			EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		/* reverse order for the distinct tags, then the three tag-99 ones */
		for (i = 6; i >= 0; i--) {
			memset(self->rbuf, 0, lens[i] + 1);
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, MAX_SIZE, NULL, FI_ADDR_UNSPEC,
					      (uint64_t)i, 0, NULL));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			ASSERT_EQ(lens[i], e.len);
			ASSERT_EQ(0, check(self->rbuf, lens[i], (uint64_t)i));
		}
		for (i = 7; i < n; i++) {
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, 64, NULL, FI_ADDR_UNSPEC, 99, 0,
					      NULL));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			ASSERT_EQ(8, e.len);
			ASSERT_EQ(0, check(self->rbuf, 8, 100 + i));	/* send order */
		}
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
	} else {
		for (i = 0; i < n; i++)	/* the rendezvous sends */
			if (lens[i] > EAGER_MAX)
				ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	}
}

/* 10000 small messages flood a receiver that posts nothing (and does not
 * even progress for the first second: the mailbox fills, the NI NACKs,
 * the provider resends): every one is delivered exactly once, intact. */
TEST_F_TIMEOUT(fi, flood_10000_unexpected_nothing_lost, 900)
{
	const uint32_t n = 10000;
	struct fi_cq_tagged_entry e;
	uint32_t i;

	fi_open_all(_metadata, self, FI_AV_TABLE);
	if (self->rank == 0) {
		uint32_t done = 0;

		for (i = 0; i < n; i++) {
			size_t len = 1 + i % 24;

			exa_fill(self->sbuf + (size_t)i * 24, len, i, 0);
			ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf + (size_t)i * 24, len, NULL,
					      self->peer, 0x10000 + i, NULL));
			while (fi_cq_read(self->cq, &e, 1) == 1)
				done++;
		}
		/* the marker comes last: when it is received, so are the others */
		ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf, 0, NULL, self->peer, 0xdead, NULL));
		while (done < n + 1) {
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			done++;
		}
	} else {
		usleep(1000000);
		ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, 16, NULL, FI_ADDR_UNSPEC, 0xdead, 0,
				      NULL));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		ASSERT_EQ(0xdeadu, e.tag);
		/* now every message waits in the unexpected queue: take them in
		 * reverse order to walk the whole queue */
		for (i = n; i-- > 0;) {
			size_t len = 1 + i % 24;
			int err;

			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, 64, NULL, FI_ADDR_UNSPEC,
					      0x10000 + i, 0, NULL));
			err = fi_cq_read(self->cq, &e, 1);
			if (err != 1)
				TH_LOG("message %u not there (%d)", i, err);
			ASSERT_EQ(1, err);
			ASSERT_EQ(len, e.len);
			ASSERT_EQ(0, exa_check(self->rbuf, len, i, 0));
		}
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
	}
}

/* A receive buffer that is too small: error completion FI_ETRUNC with the
 * overflow length; the bytes that fit are delivered. */
TEST_F_TIMEOUT(fi, truncation_reported_as_etrunc, 300)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;

	static const size_t lens[] = { 1000, 50000 };	/* eager, rendezvous */
	unsigned int k;

	fi_open_all(_metadata, self, FI_AV_TABLE);
	for (k = 0; k < 2; k++) {
		size_t len = lens[k], room = len * 3 / 10;

		if (self->rank == 0) {
			fill(self->sbuf, len, 5);
			ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf, len, NULL, self->peer, 5, NULL));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		} else {
			memset(self->rbuf, 0, len);
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, room, NULL, FI_ADDR_UNSPEC, 5, 0,
					      self->rbuf));
			ASSERT_EQ(-FI_ETRUNC, wait_comp(self->cq, &e, &ee));
			EXPECT_EQ(self->rbuf, ee.op_context);
			EXPECT_EQ(len - room, ee.olen);
			EXPECT_EQ(room, ee.len);
			fill(self->sbuf, len, 5);	/* the expected pattern, locally */
			ASSERT_EQ(0, memcmp(self->rbuf, self->sbuf, room));
			EXPECT_EQ(0, self->rbuf[room]);
		}
	}
}

/* MPI_Probe / MPI_Mprobe: FI_PEEK finds nothing (FI_ENOMSG), then the
 * message, then FI_PEEK|FI_CLAIM reserves it and FI_CLAIM receives it;
 * a cancelled receive completes with FI_ECANCELED. */
TEST_F_TIMEOUT(fi, peek_claim_and_cancel, 300)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fi_context ctx;
	struct iovec iov;
	struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				   .tag = 42, .context = &ctx };

	fi_open_all(_metadata, self, FI_AV_TABLE);
	if (self->rank == 1) {
		iov.iov_base = self->rbuf;
		iov.iov_len = 4096;
		ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_PEEK));
		ASSERT_EQ(-FI_ENOMSG, wait_comp(self->cq, &e, &ee));
		/* cancel of a posted receive */
		ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, 64, NULL, FI_ADDR_UNSPEC, 7777, 0, &ctx));
		ASSERT_EQ(0, fi_cancel(&self->ep->fid, &ctx));
		ASSERT_EQ(-FI_ECANCELED, wait_comp(self->cq, &e, &ee));
		EXPECT_EQ(&ctx, ee.op_context);
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		fill(self->sbuf, 2000, 42);
		ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf, 2000, NULL, self->peer, 42, NULL));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	} else {
		int64_t end = exanet_now_ns() + FI_TMO;
		int ret;

		do {	/* peek until it is there */
			ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_PEEK));
			ret = wait_comp(self->cq, &e, &ee);
		} while (ret == -FI_ENOMSG && exanet_now_ns() < end);
		ASSERT_EQ(0, ret);
		EXPECT_EQ(2000, e.len);
		EXPECT_EQ(42, e.tag);
		ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_PEEK | FI_CLAIM));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		/* claimed: an ordinary receive does not see it any more */
		ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_PEEK));
		ASSERT_EQ(-FI_ENOMSG, wait_comp(self->cq, &e, &ee));
		ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_PEEK | FI_CLAIM));
		ASSERT_EQ(-FI_ENOMSG, wait_comp(self->cq, &e, &ee));
		/* the context of the successful FI_PEEK | FI_CLAIM receives it */
		memset(self->rbuf, 0, 2000);
		ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_CLAIM));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		EXPECT_EQ(&ctx, e.op_context);
		ASSERT_EQ(2000, e.len);
		ASSERT_EQ(0, check(self->rbuf, 2000, 42));
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
	}
}

/* FI_RMA: rank 0 writes into and reads back from rank 1's registered
 * buffer with its key; a key naming a rank nobody holds and an address
 * outside the registration end in error completions, and the target's
 * memory outside the one good write is unchanged. */
TEST_F_TIMEOUT(fi, rma_write_read_with_keys, 300)
{
	const size_t len = 100000, off = 4096;
	struct fi_window all[2];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fid_mr *mr = NULL;
	size_t i;

	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	ASSERT_EQ(FI_RMA, self->info->caps & FI_RMA);
	ASSERT_EQ(FI_MR_PROV_KEY, self->info->domain_attr->mr_mode & FI_MR_PROV_KEY);
	memset(self->rbuf, 0x5a, MAX_SIZE);
	fi_share_window(_metadata, self, self->rbuf, MAX_SIZE, &mr, all);
	if (self->rank == 0) {
		uint64_t bad_rank_key = (all[1].key & ~0xffull) | ((all[1].key + 1) & 7);

		fill(self->sbuf, len, 0x77);	/* unregistered: registered for the write */
		ASSERT_EQ(0, fi_write(self->ep, self->sbuf, len, NULL, self->peer,
				      all[1].addr + off, all[1].key, self->sbuf));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		EXPECT_EQ(FI_RMA | FI_WRITE, e.flags);
		EXPECT_EQ(self->sbuf, e.op_context);
		ASSERT_EQ(0, fi_read(self->ep, self->rbuf, len, fi_mr_desc(mr), self->peer,
				     all[1].addr + off, all[1].key, self->rbuf));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		EXPECT_EQ(FI_RMA | FI_READ, e.flags);
		ASSERT_EQ(0, check(self->rbuf, len, 0x77));
		/* a rank nobody holds on the target node */
		ASSERT_EQ(0, fi_write(self->ep, self->sbuf, 1000, NULL, self->peer, all[1].addr,
				      bad_rank_key, NULL));
		EXPECT_GT(0, wait_comp(self->cq, &e, &ee));
		/* an address the target never registered */
		ASSERT_EQ(0, fi_write(self->ep, self->sbuf, 1000, NULL, self->peer,
				      all[1].addr + MAX_SIZE + (64u << 20), all[1].key, NULL));
		EXPECT_GT(0, wait_comp(self->cq, &e, &ee));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		for (i = 0; i < off; i++)
			ASSERT_EQ(0x5a, self->rbuf[i]);
		ASSERT_EQ(0, check(self->rbuf + off, len, 0x77));
		for (i = off + len; i < MAX_SIZE; i++)
			ASSERT_EQ(0x5a, self->rbuf[i]);
	}
	OOB_SYNC(&self->oob);
	EXPECT_EQ(0, fi_close(&mr->fid));
}
