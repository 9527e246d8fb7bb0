/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bodies of the cases of fi_cases.h about when an operation is done:
 * FI_DELIVERY_COMPLETE, and endpoints closed with RMA reads outstanding.
 */
#ifndef FI_CASES_CLOSE_H
#define FI_CASES_CLOSE_H

#ifndef FI_CASES_H
#error "fi_cases.h includes fi_cases-close.h"
#endif

/*
 * FI_DELIVERY_COMPLETE for eager messages: rank 1 stays out of the provider
 * for 2 s while rank 0 sends an 8 B (one packet) and a 200 B (several
 * packets) tagged message with FI_DELIVERY_COMPLETE and an 8 B one without.
 * The plain send completes when the NI has the packet; the other two only
 * once rank 1's provider has taken the messages in (here: as unexpected
 * messages, when it polls again), and never before rank 1 wakes up.  Rank 1
 * then receives all three, byte for byte.
 */
#define DC_QUIET_NS (2 * SEC)
static inline void fi_test_delivery_complete(struct __test_metadata *_metadata,
					     FIXTURE_DATA(fi) *self)
{
	static const size_t len[3] = { 8, 200, 8 };
	static const uint64_t tag[3] = { 0xdc01, 0xdc02, 0xdc03 };
	struct fi_cq_tagged_entry e;
	unsigned int i, done = 0;

	fi_open_all(_metadata, self, FI_AV_TABLE);
	if (self->rank == 0) {
		int64_t t0, plain_at = 0, dc_at[2] = { 0, 0 };

		for (i = 0; i < 3; i++)
			fill(self->sbuf + 256 * i, len[i], tag[i]);
		OOB_SYNC(&self->oob);
		t0 = exa_clock_ns();
		for (i = 0; i < 3; i++) {
			struct iovec iov = { self->sbuf + 256 * i, len[i] };
			struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1,
						   .addr = self->peer, .tag = tag[i],
						   .context = (void *)&tag[i] };

			ASSERT_EQ(0, fi_tsendmsg(self->ep, &m, FI_COMPLETION |
						 (i < 2 ? FI_DELIVERY_COMPLETE : 0)));
		}
		while (done < 3 && exa_clock_ns() < t0 + FI_TMO) {
			if (wait_comp(self->cq, &e, NULL))
				break;
			for (i = 0; i < 3; i++)
				if (e.op_context == (void *)&tag[i])
					break;
			ASSERT_LT(i, 3u);
			if (i == 2)
				plain_at = exa_clock_ns() - t0;
			else
				dc_at[i] = exa_clock_ns() - t0;
			done++;
		}
		ASSERT_EQ(3u, done);
		TH_LOG("completions after %.3f s (plain), %.3f s and %.3f s (delivery complete)",
		       plain_at / 1e9, dc_at[0] / 1e9, dc_at[1] / 1e9);
		EXPECT_LT(plain_at, DC_QUIET_NS);
		EXPECT_GE(dc_at[0], DC_QUIET_NS * 3 / 4);
		EXPECT_GE(dc_at[1], DC_QUIET_NS * 3 / 4);
	} else {
		OOB_SYNC(&self->oob);
		usleep(DC_QUIET_NS / 1000);
		for (i = 0; i < 3; i++)
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf + 256 * i, 256, NULL, self->peer,
					      tag[i], 0, (void *)&tag[i]));
		for (done = 0; done < 3; done++) {
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			for (i = 0; i < 3; i++)
				if (e.op_context == (void *)&tag[i])
					break;
			ASSERT_LT(i, 3u);
			EXPECT_EQ(len[i], e.len);
			EXPECT_EQ(0, check(self->rbuf + 256 * i, len[i], tag[i]));
		}
	}
}

/*
 * Endpoints closed with RDMA still outstanding give their read slots back
 * to the domain: each round opens a second endpoint on the domain, posts
 * EC_READS RMA reads of the peer's window on it and closes it without
 * reading a completion (the provider releases a slot only when a poll sees
 * its read finished), EC_ROUNDS times: more reads than the domain has
 * slots (extoll: 64, exanet: 32 read channels).  Every round must still
 * find slots, and then a fresh endpoint on the same domain must complete a
 * rendezvous message each way (a read slot on the receiver) and an RMA
 * read, byte for byte.
 */
#define EC_ROUNDS 6
#define EC_READS 16
#define EC_LEN 16384
#define EC_MSG 65536		/* rendezvous: above EAGER_MAX */
static inline void fi_test_early_close(struct __test_metadata *_metadata,
				       FIXTURE_DATA(fi) *self)
{
	const size_t cap = 4 * EC_MSG;
	struct fi_window all[2];
	uint8_t *win = malloc(cap), addr3[2][64];
	struct fi_cq_tagged_entry e;
	struct fid_mr *mr = NULL;
	struct fid_ep *ep;
	unsigned int r, k, refused = 0;
	uint64_t mytag = 0x5100 + (uint64_t)self->rank, peertag = 0x5101 - (uint64_t)self->rank;
	fi_addr_t peer3;
	size_t alen = 64;
	int64_t end;

	ASSERT_NE(NULL, win);
	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	ASSERT_EQ(FI_RMA, self->info->caps & FI_RMA);
	/* [0, EC_MSG): read by the peer; then the places reads land in */
	memset(win, 0, cap);
	fill(win, EC_LEN, mytag);
	fi_share_window(_metadata, self, win, cap, &mr, all);
	for (r = 0; r < EC_ROUNDS && !refused; r++) {
		fi_open_extra_ep(_metadata, self, self->cq, &ep);
		for (k = 0; k < EC_READS && !refused; k++) {
			ssize_t ret;

			/* the reads of closed endpoints may still be on the wire:
			 * their slots come back when the engine reports them */
			end = exa_clock_ns() + 10 * SEC;
			do
				ret = fi_read(ep, win + EC_MSG + k * (EC_MSG / EC_READS), EC_LEN / 4,
					      fi_mr_desc(mr), self->peer, all[1 - self->rank].addr,
					      all[1 - self->rank].key, NULL);
			while (ret == -FI_EAGAIN && exa_clock_ns() < end);
			if (ret == -FI_EAGAIN) {
				TH_LOG("round %u, read %u: no RDMA slot left for 10 s", r, k);
				refused = 1;
			} else {
				ASSERT_EQ(0, ret);
			}
		}
		EXPECT_EQ(0, fi_close(&ep->fid));	/* no completion read */
	}
	EXPECT_EQ(0, refused);
	OOB_SYNC(&self->oob);

	/* a fresh endpoint on the same domain, its own CQ */
	{
		struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
					      .wait_obj = FI_WAIT_NONE };
		struct fid_cq *cq3;
		uint8_t *rbuf = win + 2 * EC_MSG, *sbuf = win + 3 * EC_MSG;
		unsigned int sent = 0, got = 0;

		ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cq3, NULL));
		fi_open_extra_ep(_metadata, self, cq3, &ep);
		memset(addr3[0], 0, 64);
		ASSERT_EQ(0, fi_getname(&ep->fid, addr3[0], &alen));
		ASSERT_EQ(0, oob_allgather(&self->oob, addr3[0], addr3, 64));
		ASSERT_EQ(1, fi_av_insert(self->av, addr3[1 - self->rank], 1, &peer3, 0, NULL));
		memset(rbuf, 0xee, EC_MSG);
		ASSERT_EQ(0, fi_trecv(ep, rbuf, EC_MSG, fi_mr_desc(mr), FI_ADDR_UNSPEC, peertag, 0,
				      rbuf));
		OOB_SYNC(&self->oob);
		fill(sbuf, EC_MSG, mytag);
		ASSERT_EQ(0, fi_tsend(ep, sbuf, EC_MSG, fi_mr_desc(mr), peer3, mytag, sbuf));
		for (k = 0; k < 2; k++) {
			int ret = wait_comp(cq3, &e, NULL);

			if (ret)
				TH_LOG("rendezvous: sent %u, received %u: %s", sent, got,
				       fi_strerror(-ret));
			ASSERT_EQ(0, ret);
			if (e.flags & FI_RECV) {
				EXPECT_EQ(rbuf, e.op_context);
				EXPECT_EQ(peertag, e.tag);
				ASSERT_EQ(EC_MSG, e.len);
				ASSERT_EQ(0, check(rbuf, EC_MSG, peertag));
				got++;
			} else {
				EXPECT_EQ(sbuf, e.op_context);
				sent++;
			}
		}
		ASSERT_EQ(1, sent);
		ASSERT_EQ(1, got);
		/* and an RMA read of the peer's window */
		memset(rbuf, 0xee, EC_LEN + 1);
		ASSERT_EQ(0, fi_read(ep, rbuf, EC_LEN, fi_mr_desc(mr), self->peer,
				     all[1 - self->rank].addr, all[1 - self->rank].key, rbuf));
		ASSERT_EQ(0, wait_comp(cq3, &e, NULL));
		EXPECT_EQ(FI_RMA | FI_READ, e.flags);
		ASSERT_EQ(0, check(rbuf, EC_LEN, peertag));
		ASSERT_EQ(0xee, rbuf[EC_LEN]);
		OOB_SYNC(&self->oob);	/* the peer's FIN and reads are done */
		EXPECT_EQ(0, fi_close(&ep->fid));
		EXPECT_EQ(0, fi_close(&cq3->fid));
	}
	/* every read of the closed endpoints is over once the engine says so:
	 * the window goes after the peer is past its last one */
	OOB_SYNC(&self->oob);
	EXPECT_EQ(0, fi_close(&mr->fid));
	free(win);
}

#define CW_LEN (32u << 20)	/* long enough to be in flight at the close */

/*
 * fi_read into memory registered by the application (its own desc), the
 * endpoint closed at once: no byte may land after fi_close() returned.
 */
static inline void fi_test_close_waits_for_reads(struct __test_metadata *_metadata,
						 FIXTURE_DATA(fi) *self)
{
	uint8_t *win = malloc(2 * (size_t)CW_LEN), *dst = win + CW_LEN, *snap = malloc(CW_LEN);
	uint64_t mytag = 0x5200 + (uint64_t)self->rank, peertag = 0x5201 - (uint64_t)self->rank;
	struct fi_window all[2];
	struct fid_mr *mr = NULL;
	struct fid_ep *ep;
	ssize_t ret;
	int64_t end, t0;

	ASSERT_NE(NULL, win);
	ASSERT_NE(NULL, snap);
	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	ASSERT_EQ(FI_RMA, self->info->caps & FI_RMA);
	fill(win, CW_LEN, mytag);		/* what the peer reads */
	memset(dst, 0, CW_LEN);
	fi_share_window(_metadata, self, win, 2 * (size_t)CW_LEN, &mr, all);
	fi_open_extra_ep(_metadata, self, self->cq, &ep);
	end = exa_clock_ns() + 10 * SEC;
	do
		ret = fi_read(ep, dst, CW_LEN, fi_mr_desc(mr), self->peer, all[1 - self->rank].addr,
			      all[1 - self->rank].key, NULL);
	while (ret == -FI_EAGAIN && exa_clock_ns() < end);
	ASSERT_EQ(0, ret);
	t0 = exa_clock_ns();
	EXPECT_EQ(0, fi_close(&ep->fid));	/* no completion read */
	t0 = exa_clock_ns() - t0;
	memcpy(snap, dst, CW_LEN);		/* as it is right after the close */
	usleep(300 * 1000);
	if (memcmp(snap, dst, CW_LEN))
		TH_LOG("the read went on landing after fi_close() (which took %lld us)",
		       (long long)t0 / 1000);
	EXPECT_EQ(0, memcmp(snap, dst, CW_LEN));
	/* the read ran to its end: the peer's whole pattern is there */
	EXPECT_EQ(0, check_any(dst, CW_LEN, peertag));
	OOB_SYNC(&self->oob);	/* the peer's read of our window is over too */
	EXPECT_EQ(0, fi_close(&mr->fid));
	free(snap);
	free(win);
}

#endif
