/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bodies of the cases of fi_cases.h about what an endpoint is bound to:
 * FI_MULTI_RECV buffers, a second endpoint on the domain, counters.
 */
#ifndef FI_CASES_ENDPOINTS_H
#define FI_CASES_ENDPOINTS_H

#ifndef FI_CASES_H
#error "fi_cases.h includes fi_cases-endpoints.h"
#endif

/*
 * FI_MULTI_RECV: rank 1 posts three 4 KiB buffers, each taking many
 * untagged messages, eager and rendezvous ones, the first ones sent before
 * any buffer was posted.  Every message lands once, whole, in a buffer;
 * the messages of a buffer fill it from its start without gaps in send
 * order (their completions need not come in that order: a rendezvous
 * piece completes when its read is done), and a buffer takes messages
 * only after the one before it was released; each buffer ends with
 * exactly one completion flagged FI_MULTI_RECV (its last message, an empty
 * one when the next message did not fit, or the cancel of a buffer still
 * posted), and nothing refers to it afterwards.
 */
#define MR_BUFS 3
#define MR_BUF_LEN 4096
#define MR_MSGS 40
#define MR_EARLY 10		/* sent before the buffers are posted */
#define XFI_DEFAULT_MIN_MULTI_RECV 64	/* the provider's FI_OPT_MIN_MULTI_RECV */

static inline size_t mr_len(unsigned int i)
{
	static const size_t lens[] = { 0, 8, 40, 100, EAGER_MAX, 300, 1000, 57, 200, 1 };

	return lens[i % (sizeof(lens) / sizeof(lens[0]))];
}

/* One round with FI_OPT_MIN_MULTI_RECV min (prev: its value before). */
static inline void multi_recv_round(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
			     size_t prev, size_t min)
{
	static uint8_t bufs[MR_BUFS][MR_BUF_LEN + 64];
	struct fi_context ctx[MR_BUFS];
	struct fi_cq_tagged_entry e;
	size_t off[MR_MSGS], total = 0, opt, optlen;
	unsigned int i;

	for (i = 0; i < MR_MSGS; i++) {
		off[i] = total;
		total += mr_len(i);
	}
	ASSERT_GT(MR_BUFS * (MR_BUF_LEN - 1000 - min), total);	/* room even with waste */
	ASSERT_LT(MR_BUF_LEN, total);			/* more than one buffer fills */
	if (self->rank == 0) {
		unsigned int ncomp = 0;

		for (i = 0; i < MR_MSGS; i++) {
			fill(self->sbuf + off[i], mr_len(i), i);
			if (i == MR_EARLY) {
				/* progress until the early ones left, then the rest
				 * once the buffers are posted */
				int64_t until = exa_clock_ns() + SEC / 4;

				while (exa_clock_ns() < until)
					ncomp += fi_cq_read(self->cq, &e, 1) == 1;
				OOB_SYNC(&self->oob);
			}
			ASSERT_EQ(0, fi_senddata(self->ep, self->sbuf + off[i], mr_len(i), NULL, i,
						 self->peer, NULL));
		}
		for (; ncomp < MR_MSGS; ncomp++)
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	} else {
		struct iovec iov[2] = { { bufs[0], 64 }, { bufs[1], 64 } };
		struct fi_msg m = { .msg_iov = iov, .iov_count = 2, .addr = FI_ADDR_UNSPEC };
		struct fi_msg_tagged tm = { .msg_iov = iov, .iov_count = 1,
					    .addr = FI_ADDR_UNSPEC };
		size_t used[MR_BUFS] = { 0 }, pos[MR_BUFS] = { 0 }, at[MR_MSGS];
		unsigned char seen[MR_MSGS] = { 0 }, released[MR_BUFS] = { 0 }, in[MR_MSGS];
		const char *how[MR_BUFS];	/* what released each buffer */
		unsigned int done = 0, b, open_bufs = MR_BUFS;
		int64_t end = exa_clock_ns() + SEC / 2;

		optlen = sizeof(opt);
		ASSERT_EQ(0, fi_getopt(&self->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
				       &opt, &optlen));
		EXPECT_EQ(prev, opt);
		opt = min;
		ASSERT_EQ(0, fi_setopt(&self->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
				       &opt, sizeof(opt)));
		opt = 0;
		ASSERT_EQ(0, fi_getopt(&self->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
				       &opt, &optlen));
		EXPECT_EQ(min, opt);
		/* one buffer, untagged receives only */
		EXPECT_EQ(-FI_EINVAL, fi_recvmsg(self->ep, &m, FI_MULTI_RECV));
		EXPECT_EQ(-FI_EBADFLAGS, fi_trecvmsg(self->ep, &tm, FI_MULTI_RECV));
		/* the early messages arrive unexpected (their RTS for rendezvous) */
		while (exa_clock_ns() < end)
			EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
		memset(bufs, 0xee, sizeof(bufs));
		for (b = 0; b < MR_BUFS; b++) {
			iov[0].iov_base = bufs[b];
			iov[0].iov_len = MR_BUF_LEN;
			m.iov_count = 1;
			m.context = &ctx[b];
			ASSERT_EQ(0, fi_recvmsg(self->ep, &m, FI_MULTI_RECV));
		}
		OOB_SYNC(&self->oob);
		end = exa_clock_ns() + 10 * FI_TMO;
		while (done < MR_MSGS || open_bufs) {
			struct fi_cq_err_entry ee = { 0 };
			int ret;

			if (done == MR_MSGS) {	/* the buffers still posted: cancel them */
				for (b = 0; b < MR_BUFS; b++)
					if (!released[b])
						fi_cancel(&self->ep->fid, &ctx[b]);
			}
			ret = wait_comp(self->cq, &e, &ee);
			if (ret == -FI_ECANCELED) {
				b = (unsigned int)((struct fi_context *)ee.op_context - ctx);
				ASSERT_GT(MR_BUFS, b);
				EXPECT_EQ(FI_RECV | FI_MSG | FI_MULTI_RECV, ee.flags);
				ASSERT_EQ(0, released[b]);
				released[b] = 1;
				how[b] = "cancel";
				open_bufs--;
				continue;
			}
			ASSERT_EQ(0, ret);
			b = (unsigned int)((struct fi_context *)e.op_context - ctx);
			ASSERT_GT(MR_BUFS, b);
			ASSERT_EQ(0, released[b]);	/* nothing after the release */
			ASSERT_LE((uint8_t *)bufs[b], (uint8_t *)e.buf);
			ASSERT_GE((uint8_t *)bufs[b] + MR_BUF_LEN, (uint8_t *)e.buf + e.len);
			if (e.flags & FI_REMOTE_CQ_DATA) {
				i = (unsigned int)e.data;
				ASSERT_GT(MR_MSGS, i);
				if (seen[i])	/* which path delivered it twice */
					TH_LOG("message %u again: buffer %u at %zu, %zu bytes, flags %#llx; first buffer %u at %zu",
					       i, b, (size_t)((uint8_t *)e.buf - bufs[b]), e.len,
					       (unsigned long long)e.flags, in[i], at[i]);
				ASSERT_EQ(0, seen[i]);
				seen[i] = 1;
				done++;
				EXPECT_EQ(FI_RECV | FI_MSG, e.flags & (FI_RECV | FI_MSG | FI_TAGGED));
				ASSERT_EQ(mr_len(i), e.len);
				ASSERT_EQ(0, check(e.buf, e.len, i));
				in[i] = (unsigned char)b;
				at[i] = (size_t)((uint8_t *)e.buf - bufs[b]);
				used[b] += e.len;
			} else {
				/* the next message did not fit in what was left,
				 * and every message in the buffer had completed */
				EXPECT_EQ(0, e.len);
				EXPECT_NE(0, e.flags & FI_MULTI_RECV);
				EXPECT_EQ(used[b], (size_t)((uint8_t *)e.buf - bufs[b]));
			}
			if (e.flags & FI_MULTI_RECV) {
				released[b] = 1;
				how[b] = e.len ? "its last message" : "an empty completion";
				open_bufs--;
				/* released only when it was full enough */
				EXPECT_GT(1000, MR_BUF_LEN - used[b]);
			}
			ASSERT_GT(end, exa_clock_ns());
		}
		/* in send order: each buffer filled from its start, no gaps */
		for (i = 0, b = 0; i < MR_MSGS; i++) {
			ASSERT_LE(b, in[i]);	/* the next buffer after the previous one */
			b = in[i];
			ASSERT_EQ(pos[b], at[i]);
			pos[b] += mr_len(i);
		}
		for (b = 0; b < MR_BUFS; b++)
			TH_LOG("min %zu: buffer %u: %zu bytes, released by %s", min, b, used[b],
			       how[b]);
		EXPECT_LT(0, used[1]);		/* the second buffer took messages */
		EXPECT_EQ(0xee, bufs[0][MR_BUF_LEN]);	/* nothing past a buffer */
	}
	sends_done(_metadata, self, 1);
	/*
	 * The next round's first messages must not find this round's buffers
	 * still posted: an eager send completes once it is in the receiver's
	 * mailbox, so the sender would otherwise start the next round while
	 * this receiver still works through its last completions (those
	 * messages then land here, correctly, and look like one delivered
	 * twice).  After sends_done(): the receiver's FINs need its progress.
	 */
	OOB_SYNC(&self->oob);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
}

/* FI_MULTI_RECV buffers (multi_recv_round), two rounds. */
static inline void fi_test_multi_recv(struct __test_metadata *_metadata,
				      FIXTURE_DATA(fi) *self)
{
	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_MSG | FI_TAGGED | FI_MULTI_RECV);
	ASSERT_NE(0, self->info->caps & FI_MULTI_RECV);
	ASSERT_NE(0, self->info->rx_attr->caps & FI_MULTI_RECV);
	/* buffers released for want of FI_OPT_MIN_MULTI_RECV bytes ... */
	multi_recv_round(_metadata, self, XFI_DEFAULT_MIN_MULTI_RECV, 256);
	/* ... and because the next message did not fit in what was left */
	multi_recv_round(_metadata, self, 256, 16);
}

/*
 * Two endpoints per process on one domain (GASNet-EX uses one for requests
 * and one for replies): each rank sends from each of its endpoints to the
 * other endpoint of its peer, eager and rendezvous (both endpoints share
 * the domain's RDMA page); each message arrives on the endpoint it was
 * sent to, from the address of the endpoint that sent it (FI_SOURCE).
 */
static inline void fi_test_two_endpoints(struct __test_metadata *_metadata,
					 FIXTURE_DATA(fi) *self)
{
	static const size_t lens[2] = { 8, 4096 };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	uint8_t mine[2][64], all[2][2][64], rbufs[2][2][4096];
	struct fid_ep *eps[2] = { NULL, NULL };
	struct fid_cq *cqs[2] = { NULL, NULL };
	fi_addr_t peer_eps[2];
	unsigned int k, s, got[2] = { 0, 0 }, sent = 0;
	size_t alen = 64;
	int64_t end;

	fi_open_local(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_SOURCE, mine[0]);
	eps[0] = self->ep;
	cqs[0] = self->cq;
	ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cqs[1], NULL));
	fi_open_extra_ep(_metadata, self, cqs[1], &eps[1]);
	memset(mine[1], 0, 64);
	ASSERT_EQ(0, fi_getname(&eps[1]->fid, mine[1], &alen));
	ASSERT_NE(0, memcmp(mine[0], mine[1], 8));	/* two addresses */
	ASSERT_EQ(0, oob_allgather(&self->oob, mine, all, sizeof(mine)));
	ASSERT_EQ(1, fi_av_insert(self->av, all[1 - self->rank][0], 1, &peer_eps[0], 0, NULL));
	ASSERT_EQ(1, fi_av_insert(self->av, all[1 - self->rank][1], 1, &peer_eps[1], 0, NULL));
	self->peer = peer_eps[0];
	self->peer_known = 1;
	/* endpoint k receives from the peer's endpoint 1 - k, both sizes */
	for (k = 0; k < 2; k++)
		for (s = 0; s < 2; s++)
			ASSERT_EQ(0, fi_trecv(eps[k], rbufs[k][s], lens[s], NULL, FI_ADDR_UNSPEC,
					      0x7000 + 16 * k + s, 0, &rbufs[k][s]));
	OOB_SYNC(&self->oob);
	for (k = 0; k < 2; k++)
		for (s = 0; s < 2; s++) {
			fill(self->sbuf + 8192 * (2 * k + s), lens[s], 0x7000 + 16 * (1 - k) + s);
			ASSERT_EQ(0, fi_tsend(eps[k], self->sbuf + 8192 * (2 * k + s), lens[s], NULL,
					      peer_eps[1 - k], 0x7000 + 16 * (1 - k) + s, NULL));
		}
	end = exa_clock_ns() + FI_TMO;
	while (sent < 4 || got[0] < 2 || got[1] < 2) {
		for (k = 0; k < 2; k++) {
			struct fi_cq_tagged_entry e;
			fi_addr_t src = FI_ADDR_NOTAVAIL;
			ssize_t n = fi_cq_readfrom(cqs[k], &e, 1, &src);

			if (n == -FI_EAGAIN)
				continue;
			ASSERT_EQ(1, n);
			if (!(e.flags & FI_RECV)) {
				sent++;
				continue;
			}
			s = e.tag & 1;
			EXPECT_EQ(0x7000 + 16 * k + s, e.tag);
			EXPECT_EQ(&rbufs[k][s], e.op_context);
			EXPECT_EQ(peer_eps[1 - k], src);
			ASSERT_EQ(lens[s], e.len);
			ASSERT_EQ(0, check(rbufs[k][s], lens[s], e.tag));
			got[k]++;
		}
		ASSERT_GT(end, exa_clock_ns());
	}
	fi_progress_barrier(self);	/* both endpoints' FINs are out */
	EXPECT_EQ(0, fi_close(&eps[1]->fid));
	EXPECT_EQ(0, fi_close(&cqs[1]->fid));
}

/*
 * Counters (fi_cntr) on an endpoint whose CQ takes only what asks for a
 * completion (FI_SELECTIVE_COMPLETION): sends, injects and receives are
 * counted without CQ entries, RMA writes and reads on a counter of their
 * own, a truncated receive and a write with a bad key on the error counts;
 * fi_sendmsg(FI_INJECT | FI_COMPLETION) still writes its CQ entry.  Also
 * what is refused: FI_REMOTE_* counters (no FI_RMA_EVENT), a second
 * counter for one kind, a wait on an FI_WAIT_NONE counter, closing a bound
 * counter.  Eager sizes only: they complete without the peer's progress.
 */
#define CNT_MSGS 24
#define CNT_LEN 200
static inline void fi_test_counters(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cntr_attr none = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
	struct fid_cntr *txc, *rxc, *rmac, *nowait;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	uint8_t addr[64], all[2][64];
	struct fi_window win[2];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fid_mr *mr;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
	size_t alen = sizeof(addr);
	int i;

	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	ASSERT_EQ(0, fi_cntr_open(self->domain, &attr, &txc, NULL));
	ASSERT_EQ(0, fi_cntr_open(self->domain, &attr, &rxc, NULL));
	ASSERT_EQ(0, fi_cntr_open(self->domain, &attr, &rmac, NULL));
	ASSERT_EQ(0, fi_cntr_open(self->domain, &none, &nowait, NULL));
	ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cq, NULL));
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION));
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_ep_bind(ep, &rxc->fid, FI_RECV | FI_REMOTE_WRITE));
	ASSERT_EQ(0, fi_ep_bind(ep, &txc->fid, FI_SEND));
	ASSERT_EQ(0, fi_ep_bind(ep, &rxc->fid, FI_RECV));
	ASSERT_EQ(0, fi_ep_bind(ep, &rmac->fid, FI_WRITE | FI_READ));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(ep, &nowait->fid, FI_SEND));
	ASSERT_EQ(0, fi_enable(ep));
	EXPECT_EQ(-FI_EBUSY, fi_close(&txc->fid));
	EXPECT_EQ(-FI_EINVAL, fi_cntr_wait(nowait, 1, 0));
	memset(addr, 0, sizeof(addr));
	ASSERT_EQ(0, fi_getname(&ep->fid, addr, &alen));
	ASSERT_EQ(0, oob_allgather(&self->oob, addr, all, sizeof(addr)));
	ASSERT_EQ(1, fi_av_insert(self->av, all[1 - self->rank], 1, &peer, 0, NULL));
	memset(self->rbuf, 0, MAX_SIZE);
	fi_share_window(_metadata, self, self->rbuf, MAX_SIZE, &mr, win);

	/* CNT_MSGS sends and injects, counted, no CQ entries */
	if (self->rank == 1) {
		for (i = 0; i < CNT_MSGS; i++)
			ASSERT_EQ(0, fi_recv(ep, self->rbuf + i * CNT_LEN, CNT_LEN, NULL,
					     FI_ADDR_UNSPEC, NULL));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		for (i = 0; i < CNT_MSGS; i++) {
			fill(self->sbuf + i * CNT_LEN, i % 2 ? CNT_LEN : 16, i);
			if (i % 2) {
				ASSERT_EQ(0, fi_send(ep, self->sbuf + i * CNT_LEN, CNT_LEN, NULL,
						     peer, NULL));
			} else {
				while (fi_inject(ep, self->sbuf + i * CNT_LEN, 16, peer) ==
				       -FI_EAGAIN)
					fi_cntr_read(txc);
			}
		}
		ASSERT_EQ(0, fi_cntr_wait(txc, CNT_MSGS, 30000));
		EXPECT_EQ(CNT_MSGS, fi_cntr_read(txc));
		EXPECT_EQ(0, fi_cntr_readerr(txc));
	} else {
		ASSERT_EQ(0, fi_cntr_wait(rxc, CNT_MSGS, 30000));
		EXPECT_EQ(CNT_MSGS, fi_cntr_read(rxc));
		EXPECT_EQ(0, fi_cntr_readerr(rxc));
		for (i = 0; i < CNT_MSGS; i++)
			ASSERT_EQ(0, check(self->rbuf + i * CNT_LEN, i % 2 ? CNT_LEN : 16, i));
	}
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, &e, 1));
	OOB_SYNC(&self->oob);

	/* fi_sendmsg with FI_INJECT | FI_COMPLETION completes in the CQ;
	 * then a receive too short for the next message counts an error */
	if (self->rank == 1) {
		ASSERT_EQ(0, fi_recv(ep, self->rbuf, CNT_LEN, NULL, FI_ADDR_UNSPEC, NULL));
		ASSERT_EQ(0, fi_recv(ep, self->rbuf + CNT_LEN, 16, NULL, FI_ADDR_UNSPEC, NULL));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		struct iovec iov = { .iov_base = self->sbuf, .iov_len = 16 };
		struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = peer,
				      .context = &iov };

		ASSERT_EQ(0, fi_sendmsg(ep, &msg, FI_INJECT | FI_COMPLETION));
		ASSERT_EQ(0, wait_comp(cq, &e, NULL));
		EXPECT_EQ(&iov, e.op_context);
		EXPECT_EQ(FI_SEND | FI_MSG, e.flags);
		ASSERT_EQ(0, fi_send(ep, self->sbuf, 100, NULL, peer, NULL));
		ASSERT_EQ(0, fi_cntr_wait(txc, CNT_MSGS + 2, 30000));
	} else {
		ASSERT_EQ(0, fi_cntr_wait(rxc, CNT_MSGS + 1, 30000));
		EXPECT_EQ(-FI_ETRUNC, wait_comp(cq, &e, &ee));
		EXPECT_EQ(84, ee.olen);
		EXPECT_EQ(1, fi_cntr_readerr(rxc));
		EXPECT_EQ(CNT_MSGS + 1, fi_cntr_read(rxc));
	}
	OOB_SYNC(&self->oob);

	/* RMA on its own counter: 3 writes and 2 reads, then a bad key */
	if (self->rank == 0) {
		fill(self->sbuf, 4096, 0x33);
		for (i = 0; i < 3; i++)
			ASSERT_EQ(0, fi_write(ep, self->sbuf, 4096, NULL, peer,
					      win[1].addr + i * 4096, win[1].key, NULL));
		/* the providers promise no read-after-write order for RMA
		 * (msg_order FI_ORDER_SAS): the reads below see the writes
		 * once these completed */
		ASSERT_EQ(0, fi_cntr_wait(rmac, 3, 30000));
		for (i = 0; i < 2; i++)
			ASSERT_EQ(0, fi_read(ep, self->rbuf + (64 + i) * 4096, 4096,
					     fi_mr_desc(mr), peer, win[1].addr, win[1].key, NULL));
		ASSERT_EQ(0, fi_cntr_wait(rmac, 5, 30000));
		EXPECT_EQ(0, fi_cntr_readerr(rmac));
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, &e, 1));
		ASSERT_EQ(0, check(self->rbuf + 65 * 4096, 4096, 0x33));
		ASSERT_EQ(0, fi_write(ep, self->sbuf, 64, NULL, peer,
				      win[1].addr + MAX_SIZE + (64u << 20), win[1].key, NULL));
		EXPECT_GT(0, wait_comp(cq, &e, &ee));
		EXPECT_EQ(1, fi_cntr_readerr(rmac));
		EXPECT_EQ(5, fi_cntr_read(rmac));
		/* the application's own updates */
		EXPECT_EQ(0, fi_cntr_set(txc, 0));
		EXPECT_EQ(0, fi_cntr_add(txc, 5));
		EXPECT_EQ(5, fi_cntr_read(txc));
		EXPECT_EQ(-FI_ETIMEDOUT, fi_cntr_wait(txc, 6, 10));
		EXPECT_EQ(0, fi_cntr_seterr(txc, 2));
		EXPECT_EQ(0, fi_cntr_adderr(txc, 1));
		EXPECT_EQ(3, fi_cntr_readerr(txc));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1)
		ASSERT_EQ(0, check(self->rbuf + 2 * 4096, 4096, 0x33));
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&mr->fid));
	EXPECT_EQ(0, fi_close(&txc->fid));
	EXPECT_EQ(0, fi_close(&rxc->fid));
	EXPECT_EQ(0, fi_close(&rmac->fid));
	EXPECT_EQ(0, fi_close(&nowait->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

#endif
