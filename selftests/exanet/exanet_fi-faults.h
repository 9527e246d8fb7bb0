/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_fi: what goes wrong: RMA with keys that name nothing, a peer
 * SIGKILLed in the middle of rendezvous transfers and a new incarnation of
 * it reachable from the same endpoint.
 *
 * Cases of the translation unit of exanet_fi.c: include it only there.
 */
#ifndef EXANET_FI_C
#error "exanet_fi-faults.h holds cases of exanet_fi.c: include it only there"
#endif

/* RMA with keys that name nothing at the target: a write and a read with
 * a key of a rank nobody holds end in error completions (or are refused
 * when posted), a key whose rank cannot exist is refused; neither the
 * target's memory nor the initiator's read buffer changes. */
TEST_F_TIMEOUT(fi, rma_invalid_keys_error_and_memory_unchanged, 300)
{
	const size_t len = 65536;
	struct fi_window all[2];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fid_mr *mr = NULL;
	size_t i;

	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	memset(self->rbuf, 0x5a, len);
	fi_share_window(_metadata, self, self->rbuf, len, &mr, all);
	if (self->rank == 0) {
		uint64_t keys[2] = {
			(all[1].key & ~0xffull) | ((all[1].key + 1) & 7),	/* rank nobody holds */
			(all[1].key & ~0xffull) | 0xfe,			/* no such rank */
		};
		unsigned int k;

		fill(self->sbuf, len, 0x99);
		for (k = 0; k < 2; k++) {
			ssize_t r;

			r = fi_write(self->ep, self->sbuf, len, NULL, self->peer, all[1].addr,
				     keys[k], NULL);
			if (r == 0) {
				EXPECT_GT(0, wait_comp(self->cq, &e, &ee));
			} else {
				EXPECT_EQ(-FI_EINVAL, r);
			}
			memset(self->rbuf, 0x5a, len);	/* our read target */
			r = fi_read(self->ep, self->rbuf, len, fi_mr_desc(mr), self->peer, all[1].addr,
				    keys[k], self->rbuf);
			if (r == 0) {
				ASSERT_GT(0, wait_comp(self->cq, &e, &ee));
				EXPECT_EQ(self->rbuf, ee.op_context);
				EXPECT_EQ(FI_RMA | FI_READ, ee.flags & (FI_RMA | FI_READ));
			} else {
				EXPECT_EQ(-FI_EINVAL, r);
			}
			for (i = 0; i < len; i++)
				ASSERT_EQ(0x5a, self->rbuf[i]);
		}
		/* the right key still works afterwards */
		ASSERT_EQ(0, fi_read(self->ep, self->rbuf, len, fi_mr_desc(mr), self->peer,
				     all[1].addr, all[1].key, NULL));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		for (i = 0; i < len; i++)
			ASSERT_EQ(0x5a, self->rbuf[i]);
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1)
		for (i = 0; i < len; i++)
			ASSERT_EQ(0x5a, self->rbuf[i]);
	OOB_SYNC(&self->oob);
	EXPECT_EQ(0, fi_close(&mr->fid));
}

/* ---- a peer that dies mid-transfer ---- */

/* A bare endpoint for a forked child (no harness, no fixture). */
struct kid_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
};

static int kid_open(struct kid_ep *k, uint8_t addr[8])
{
	struct fi_info *hints = fi_test_hints();
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	size_t alen = 8;

	if (!hints || fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &k->info))
		return -1;
	fi_freeinfo(hints);
	if (fi_fabric(k->info->fabric_attr, &k->fabric, NULL) ||
	    fi_domain(k->fabric, k->info, &k->domain, NULL) ||
	    fi_av_open(k->domain, &av_attr, &k->av, NULL) ||
	    fi_cq_open(k->domain, &cq_attr, &k->cq, NULL) ||
	    fi_endpoint(k->domain, k->info, &k->ep, NULL) ||
	    fi_ep_bind(k->ep, &k->av->fid, 0) ||
	    fi_ep_bind(k->ep, &k->cq->fid, FI_TRANSMIT | FI_RECV) || fi_enable(k->ep))
		return -2;
	return fi_getname(&k->ep->fid, addr, &alen) ? -3 : 0;
}

/* Read exactly n bytes from a pipe (-1 on EOF / error). */
static int read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

#define DEAD_LEN	(4u << 20)
#define DEAD_NSEND	8	/* survivor -> child, rendezvous */
#define DEAD_NRECV	4	/* child -> survivor, rendezvous */

/*
 * Child 1 (node 1): receives the survivor's message 0, then posts receives
 * for 1..3 only (4..7 stay unexpected, their senders wait for a FIN),
 * posts DEAD_NRECV rendezvous sends to the survivor, progresses 20 ms (the
 * RTS packets leave; the survivor starts reading), tells the parent 'R'
 * and keeps progressing until the parent SIGKILLs it.
 */
static void kid_victim(int up, int down)
{
	struct kid_ep k = { 0 };
	struct fi_cq_tagged_entry e;
	uint8_t addr[8] = { 0 }, peer[8];
	uint8_t *sb = malloc(DEAD_LEN), *rb = malloc((size_t)DEAD_NSEND * DEAD_LEN);
	int64_t end;
	int i, got0 = 0;

	if (!sb || !rb || kid_open(&k, addr) || write(up, addr, 8) != 8 ||
	    read_full(down, peer, 8) || fi_av_insert(k.av, peer, 1, &k.peer, 0, NULL) != 1)
		_exit(2);
	fill(sb, DEAD_LEN, 0xd00);
	if (fi_trecv(k.ep, rb, DEAD_LEN, NULL, k.peer, 0xd20, 0, rb))
		_exit(4);
	while (!got0) {
		ssize_t n = fi_cq_read(k.cq, &e, 1);

		if (n == 1 && e.op_context == rb)
			got0 = 1;
		else if (n == -FI_EAVAIL)
			_exit(5);
	}
	if (check_any(rb, DEAD_LEN, 0xd20))
		_exit(6);
	for (i = 1; i < 4; i++)
		if (fi_trecv(k.ep, rb + (size_t)i * DEAD_LEN, DEAD_LEN, NULL, k.peer, 0xd20 + i, 0,
			     NULL))
			_exit(7);
	/* our sends last: the survivor is reading them when we die */
	for (i = 0; i < DEAD_NRECV; i++)
		if (fi_tsend(k.ep, sb, DEAD_LEN, NULL, k.peer, 0xd10 + i, NULL))
			_exit(3);
	end = exanet_now_ns() + 20 * 1000000;	/* the RTS packets leave */
	while (exanet_now_ns() < end)
		fi_cq_read(k.cq, &e, 1);
	if (write(up, "R", 1) != 1)
		_exit(8);
	for (;;)
		fi_cq_read(k.cq, &e, 1);
}

/* Child 2: a new incarnation (new process, most likely on the same
 * mailbox): receives an eager and a rendezvous message from the survivor,
 * checks them, sends two back and waits for their completions. */
static void kid_second(int up, int down)
{
	struct kid_ep k = { 0 };
	struct fi_cq_tagged_entry e;
	uint8_t addr[8] = { 0 }, peer[8];
	uint8_t *b = malloc(2u << 20), *sb = malloc(2u << 20);
	int64_t end;
	int done = 0;

	if (!b || !sb || kid_open(&k, addr) || write(up, addr, 8) != 8 ||
	    read_full(down, peer, 8) || fi_av_insert(k.av, peer, 1, &k.peer, 0, NULL) != 1)
		_exit(2);
	if (fi_trecv(k.ep, b, 100, NULL, k.peer, 0xe00, 0, NULL) ||
	    fi_trecv(k.ep, b + 4096, 1u << 20, NULL, k.peer, 0xe01, 0, NULL) ||
	    fi_trecv(k.ep, b + (1u << 20) + 8192, 8, NULL, k.peer, 0xeff, 0, NULL))
		_exit(3);
	fill(sb, 200, 0xe02);
	fill(sb + 4096, (1u << 20) + 5, 0xe03);
	if (fi_tsend(k.ep, sb, 200, NULL, k.peer, 0xe02, NULL) ||
	    fi_tsend(k.ep, sb + 4096, (1u << 20) + 5, NULL, k.peer, 0xe03, NULL))
		_exit(4);
	end = exanet_now_ns() + 120 * SEC;
	/* 2 receives, 2 sends and the survivor's "bye" (sent once it has all
	 * its completions: until then our FIN may still have to go out) */
	while (done < 5 && exanet_now_ns() < end) {
		ssize_t n = fi_cq_read(k.cq, &e, 1);

		if (n == -FI_EAVAIL)
			_exit(5);
		if (n != 1)
			continue;
		done++;
		if (!(e.flags & FI_RECV))
			continue;
		if (e.tag == 0xe00 && (e.len != 100 || check(b, 100, 0xe00)))
			_exit(6);
		if (e.tag == 0xe01 && (e.len != 1u << 20 || check(b + 4096, 1u << 20, 0xe01)))
			_exit(7);
	}
	_exit(done == 5 ? 0 : 9);
}

/* Node 1: start a child, relay addresses; returns its pid. */
static pid_t start_kid(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
		       void (*fn)(int, int), int *up_rd)
{
	int up[2], down[2];
	uint8_t kaddr[64] = { 0 }, all[2][64];
	pid_t pid;

	(void)_metadata;
	if (pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		fn(up[1], down[0]);
		_exit(1);
	}
	close(up[1]);
	close(down[0]);
	if (pid < 0 || read_full(up[0], kaddr, 8))
		TH_LOG("child did not start");
	if (oob_allgather(&self->oob, kaddr, all, sizeof(kaddr)) ||
	    write(down[1], all[0], 8) != 8)
		TH_LOG("address exchange failed");
	close(down[1]);
	*up_rd = up[0];
	return pid;
}

/* Node 0: the survivor's side of an address exchange with a new child. */
static fi_addr_t survivor_meet(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
			       const uint8_t *mine, uint8_t *kid)
{
	uint8_t all[2][64];
	fi_addr_t a = FI_ADDR_NOTAVAIL;

	(void)_metadata;
	if (oob_allgather(&self->oob, mine, all, sizeof(all[0])))
		return FI_ADDR_NOTAVAIL;
	memcpy(kid, all[1], 8);
	if (fi_av_insert(self->av, all[1], 1, &a, 0, NULL) != 1)
		TH_LOG("fi_av_insert of the child failed");
	return a;
}

/*
 * Node 0 (survivor) sends 8 x 4 MiB rendezvous messages to a process on
 * node 1 and receives 4 x 4 MiB from it; that process is SIGKILLed after
 * its first receive (reads of some of the others in flight, 4 of the sends
 * still unexpected over there).  Every operation of the survivor ends
 * within a bounded time: sends either completed or error completions
 * (fi_cq_readerr), receives either complete with the right bytes or
 * error completions, or are still unmatched and cancellable.  Then a new
 * process on node 1 (a new incarnation, normally on the same mailbox)
 * exchanges eager and rendezvous messages with the same survivor endpoint.
 */
TEST_F_TIMEOUT(fi, peer_killed_mid_rendezvous_then_new_peer_reachable, 900)
{
	uint8_t mine[64] = { 0 }, kid1[8], kid2[8];

	if (self->rank == 1) {
		char c = 0;
		int up, status = 0;
		pid_t pid = start_kid(_metadata, self, kid_victim, &up);

		ASSERT_LT(0, pid);
		ASSERT_EQ(0, read_full(up, &c, 1));
		ASSERT_EQ('R', c);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
		close(up);
		OOB_SYNC(&self->oob);	/* the survivor has all its completions */
		pid = start_kid(_metadata, self, kid_second, &up);
		ASSERT_LT(0, pid);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			TH_LOG("second child: status %#x", status);
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
		close(up);
		OOB_SYNC(&self->oob);
		return;
	}

	/* node 0: the survivor */
	{
		uint8_t *sb = malloc(DEAD_LEN), *rb = malloc((size_t)DEAD_NRECV * DEAD_LEN);
		int send_ok = 0, send_err = 0, recv_ok = 0, recv_err = 0, i;
		struct fi_exanet_mr_cache_stats st0, st1;
		struct fi_exanet_ops_domain *xops = NULL;
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry ee;
		fi_addr_t victim, second;
		int64_t t0, t_last = 0, end;

		ASSERT_NE(NULL, sb);
		ASSERT_NE(NULL, rb);
		fi_open_local(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG, mine);
		ASSERT_EQ(0, fi_open_ops(&self->domain->fid, FI_EXANET_DOMAIN_OPS, 0,
					 (void **)&xops, NULL));
		ASSERT_EQ(0, xops->mr_cache_stats(self->domain, &st0));
		victim = survivor_meet(_metadata, self, mine, kid1);
		ASSERT_NE(FI_ADDR_NOTAVAIL, victim);
		fill(sb, DEAD_LEN, 0xd20);	/* the pattern of message 0 (checked by the child) */
		for (i = 0; i < DEAD_NRECV; i++)
			ASSERT_EQ(0, fi_trecv(self->ep, rb + (size_t)i * DEAD_LEN, DEAD_LEN, NULL,
					      victim, 0xd10 + i, 0, (void *)(uintptr_t)(0x100 + i)));
		for (i = 0; i < DEAD_NSEND; i++)
			ASSERT_EQ(0, fi_tsend(self->ep, sb, DEAD_LEN, NULL, victim, 0xd20 + i,
					      (void *)(uintptr_t)(0x200 + i)));
		t0 = exanet_now_ns();
		end = t0 + 120 * SEC;
		/* every send ends; wait a little longer for the receives */
		while (send_ok + send_err < DEAD_NSEND && exanet_now_ns() < end) {
			ssize_t n = fi_cq_read(self->cq, &e, 1);
			uintptr_t ctx;

			if (n == -FI_EAVAIL) {
				memset(&ee, 0, sizeof(ee));
				ASSERT_EQ(1, fi_cq_readerr(self->cq, &ee, 0));
				ctx = (uintptr_t)ee.op_context;
				EXPECT_NE(0, ee.err);
				TH_LOG("error completion %#lx after %lld ms: %s", (unsigned long)ctx,
				       (long long)((exanet_now_ns() - t0) / 1000000),
				       fi_strerror(ee.err));
				if (ctx >= 0x200)
					send_err++;
				else
					recv_err++;
				t_last = exanet_now_ns();
				continue;
			}
			if (n != 1)
				continue;
			ctx = (uintptr_t)e.op_context;
			if (ctx >= 0x200) {
				send_ok++;
			} else {
				ASSERT_LE(0x100, ctx);
				ASSERT_EQ(DEAD_LEN, e.len);
				ASSERT_EQ(0, check_any(rb + (ctx - 0x100) * DEAD_LEN, DEAD_LEN, 0xd00));
				recv_ok++;
			}
			t_last = exanet_now_ns();
		}
		TH_LOG("sends: %d ok, %d failed; receives: %d ok, %d failed; last after %lld ms",
		       send_ok, send_err, recv_ok, recv_err, (long long)((t_last - t0) / 1000000));
		ASSERT_EQ(DEAD_NSEND, send_ok + send_err);	/* no hang */
		EXPECT_LE(1, send_ok);			/* message 0 was received */
		EXPECT_LE(4, send_err);			/* 4..7 never had a receive */
		/* receives: a matched one ends (data, or an error from its RDMA
		 * read of the dead sender's memory); one whose RTS never came is
		 * still posted */
		end = exanet_now_ns() + 60 * SEC;
		while (recv_ok + recv_err < DEAD_NRECV && exanet_now_ns() < end) {
			ssize_t n = fi_cq_read(self->cq, &e, 1);

			if (n == -FI_EAVAIL) {
				ASSERT_EQ(1, fi_cq_readerr(self->cq, &ee, 0));
				recv_err++;
			} else if (n == 1) {
				ASSERT_EQ(0, check_any(rb + ((uintptr_t)e.op_context - 0x100) *
						       DEAD_LEN, DEAD_LEN, 0xd00));
				recv_ok++;
			}
		}
		TH_LOG("receives: %d ok, %d failed, %d never matched, after %lld ms", recv_ok,
		       recv_err, DEAD_NRECV - recv_ok - recv_err,
		       (long long)((exanet_now_ns() - t0) / 1000000));
		for (i = recv_ok + recv_err; i < DEAD_NRECV; i++) {
			/* never matched: cancel works (a matched receive stuck
			 * in its reads would not be cancellable) */
			ssize_t n;
			int j, cancelled = 0;

			for (j = 0; j < DEAD_NRECV && !cancelled; j++)
				if (fi_cancel(&self->ep->fid, (void *)(uintptr_t)(0x100 + j)) == 0)
					cancelled = 1;
			ASSERT_EQ(1, cancelled);
			do
				n = fi_cq_read(self->cq, &e, 1);
			while (n == -FI_EAGAIN);
			ASSERT_EQ(-FI_EAVAIL, n);
			ASSERT_EQ(1, fi_cq_readerr(self->cq, &ee, 0));
			EXPECT_EQ(FI_ECANCELED, ee.err);
		}
		OOB_SYNC(&self->oob);

		/* a new incarnation of the peer: reachable from the same endpoint */
		second = survivor_meet(_metadata, self, mine, kid2);
		ASSERT_NE(FI_ADDR_NOTAVAIL, second);
		TH_LOG("first peer %02x%02x%02x%02x mbox %u, second mbox %u", kid1[3], kid1[2],
		       kid1[1], kid1[0], kid1[4], kid2[4]);
		fill(sb, 100, 0xe00);
		fill(sb + 4096, 1u << 20, 0xe01);
		ASSERT_EQ(0, fi_trecv(self->ep, rb, 4096, NULL, second, 0xe02, 0, rb));
		ASSERT_EQ(0, fi_trecv(self->ep, rb + 8192, 2u << 20, NULL, second, 0xe03, 0,
				      rb + 8192));
		ASSERT_EQ(0, fi_tsend(self->ep, sb, 100, NULL, second, 0xe00, NULL));
		ASSERT_EQ(0, fi_tsend(self->ep, sb + 4096, 1u << 20, NULL, second, 0xe01, NULL));
		for (i = 0; i < 4; i++) {
			int ret = wait_comp(self->cq, &e, &ee);

			if (ret)
				TH_LOG("completion %d with the second peer: %s", i, fi_strerror(-ret));
			ASSERT_EQ(0, ret);
			if (e.op_context == rb) {
				ASSERT_EQ(200, e.len);
				ASSERT_EQ(0, check(rb, 200, 0xe02));
			} else if (e.op_context == rb + 8192) {
				ASSERT_EQ((1u << 20) + 5, e.len);
				ASSERT_EQ(0, check_any(rb + 8192, (1u << 20) + 5, 0xe03));
			}
		}
		ASSERT_EQ(0, fi_tsend(self->ep, sb, 0, NULL, second, 0xeff, NULL));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		ASSERT_EQ(0, xops->mr_cache_stats(self->domain, &st1));
		TH_LOG("stream resets: %llu",
		       (unsigned long long)(st1.stream_resets - st0.stream_resets));
		if (!memcmp(kid1, kid2, 8))	/* same address: the old stream was restarted */
			EXPECT_LE(1, st1.stream_resets - st0.stream_resets);
		OOB_SYNC(&self->oob);
		self->peer_known = 0;	/* no barrier with a process that has left */
		free(sb);
		free(rb);
	}
}
