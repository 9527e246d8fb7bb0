/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_coll: failing members: members that disagree, a member that
 * destroys its group, a member process that exits.
 *
 * Cases of the translation unit of exanet_coll.c: include it only there.
 */
#ifndef EXANET_COLL_C
#error "exanet_coll-members.h holds cases of exanet_coll.c: include it only there"
#endif

/*
 * Members that start different operations (count, then dtype, then op;
 * every member's differs from every other one's): every member gets an
 * error, -EPROTO where it met a partner's operation (a power-of-two group:
 * all; else the members that take a fold-in), -EPROTO or -EREMOTEIO
 * (the partner failed first) on the others; the group is refused (-EPIPE)
 * until re-created; a new group of the same members works.
 */
TEST_F_TIMEOUT(coll, mismatch_eproto_then_epipe_until_recreated, 300)
{
	uint32_t p2 = coll_ref_p2((uint32_t)self->nn);
	int strict = p2 == (uint32_t)self->nn || (uint32_t)self->rank < self->nn - p2;
	int kind;

	if (self->nn < 2)
		SKIP_TEST("needs 2 ranks (loopback_members_on_one_node covers one node)");
	for (kind = 0; kind < 3; kind++) {
		static const char *const what[] = { "count", "dtype", "op" };
		struct exanet_coll_group *g;
		unsigned int dt = EXANET_COLL_INT32, op = EXANET_COLL_SUM;
		size_t count = 100;
		int rc, rcs[OOB_MAX_NODES], i, again;
		int64_t t0;

		/* every member differs from every other one */
		if (kind == 0)
			count = 100 + (size_t)self->rank;
		else if (kind == 1)
			dt = self->rank % 2 ? EXANET_COLL_UINT32 : EXANET_COLL_INT32;
		else
			op = (unsigned int)self->rank % EXANET_COLL_NUM_OPS;
		if (kind == 1 && self->nn > 2)
			dt = (unsigned int[]){ EXANET_COLL_INT32, EXANET_COLL_UINT32,
					       EXANET_COLL_INT64, EXANET_COLL_UINT64 }[self->rank % 4];
		ASSERT_EQ(0, group_all(self, KEY(1 + 2 * kind), &g));
		OOB_SYNC(&self->oob);
		t0 = exa_now_ms();
		rc = exanet_coll_start(g, region(self, 0), region(self, 1), count, dt, op, NULL, 0);
		if (!rc)
			rc = exanet_coll_wait(g, FAIL_TMO, NULL);
		TH_LOG("%s mismatch, rank %d: %s after %lld ms", what[kind], self->rank,
		       strerror(-rc), (long long)(exa_now_ms() - t0));
		EXPECT_GT(FAIL_MS_MAX, exa_now_ms() - t0);
		if (strict) {
			EXPECT_EQ(-EPROTO, rc);
		} else {
			EXPECT_TRUE(rc == -EPROTO || rc == -EREMOTEIO);
		}
		ASSERT_EQ(0, oob_allgather(&self->oob, &rc, rcs, sizeof(rc)));
		for (i = 0; i < self->nn; i++)
			EXPECT_NE(0, rcs[i]);
		EXPECT_EQ(-EPROTO, rcs[0]);
		/* the same operation everywhere now, still refused */
		for (again = 0; again < 2; again++) {
			rc = exanet_coll_start(g, region(self, 0), region(self, 1), 100,
					       EXANET_COLL_INT32, EXANET_COLL_SUM, NULL, 0);
			if (!rc)
				rc = exanet_coll_wait(g, FAIL_TMO, NULL);
			EXPECT_EQ(-EPIPE, rc);
		}
		OOB_SYNC(&self->oob);
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
		/* re-created under a new key: works */
		ASSERT_EQ(0, group_all(self, KEY(2 + 2 * kind), &g));
		OOB_SYNC(&self->oob);
		{
			struct job j = { .g = g, .size = (uint32_t)self->nn,
					 .me = (uint32_t)self->rank, .dtype = EXANET_COLL_FLOAT,
					 .op = EXANET_COLL_SUM, .count = 1001, .seed = 2000 + kind,
					 .src = region(self, 0), .dst = region(self, 1) };
			int bad = run_jobs(_metadata, self, &j, 1);

			agree(_metadata, self, bad, 0, j.crc, "re-created after a mismatch");
		}
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	}
}

/* The error of a member whose partner left: within FAIL_MS_MAX, never a hang. */
static void expect_left_error(struct __test_metadata *_metadata, FIXTURE_DATA(coll) *self,
			      struct exanet_coll_group *g, int64_t t0)
{
	int rc = exanet_coll_wait(g, FAIL_TMO, NULL);
	int64_t dt = exa_now_ms() - t0;

	TH_LOG("rank %d: %s after %lld ms", self->rank, strerror(-rc), (long long)dt);
	EXPECT_TRUE(rc == -ECONNRESET || rc == -EREMOTEIO || rc == -ETIMEDOUT);
	EXPECT_GT(FAIL_MS_MAX, dt);
}

/* The ranks 0..nn-2 in a new group: works. */
static void regroup_remaining(struct __test_metadata *_metadata, FIXTURE_DATA(coll) *self,
			      uint32_t key)
{
	struct exanet_coll_group *g;
	int ranks[MAXM], i, bad = 0, in = self->rank < self->nn - 1;
	struct job j = { 0 };

	OOB_SYNC(&self->oob);
	for (i = 0; i < self->nn - 1; i++)
		ranks[i] = i;
	if (in)
		ASSERT_EQ(0, group_of(self, key, ranks, (uint32_t)self->nn - 1,
				      (uint32_t)self->rank, &g));
	OOB_SYNC(&self->oob);
	if (in) {
		j = (struct job){ .g = g, .size = (uint32_t)self->nn - 1,
				  .me = (uint32_t)self->rank, .dtype = EXANET_COLL_DOUBLE,
				  .op = EXANET_COLL_SUM, .count = 4097, .seed = 2100,
				  .src = region(self, 0), .dst = region(self, 1) };
		bad = run_jobs(_metadata, self, &j, 1);
	}
	agree(_metadata, self, bad, in ? 0 : -1, j.crc, "the remaining members");
}

/*
 * The last member destroys its group while the others' operation is in
 * flight (their blocks may already wait at its NI): the others get an
 * error within seconds; the remaining members then work in a new group.
 */
TEST_F_TIMEOUT(coll, member_destroys_group_others_fail_then_regroup, 180)
{
	struct exanet_coll_group *g;
	int last = self->nn - 1;
	int64_t t0 = 0;

	if (self->nn < 2)
		SKIP_TEST("needs 2 ranks (loopback_members_on_one_node covers one node)");
	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_SUM, .count = 1001,
				 .seed = 2200, .src = region(self, 0), .dst = region(self, 1) };
		int bad = run_jobs(_metadata, self, &j, 1);

		agree(_metadata, self, bad, 0, j.crc, "before the member left");
	}
	if (self->rank != last) {
		t0 = exa_now_ms();
		ASSERT_EQ(0, exanet_coll_start(g, region(self, 0), region(self, 1), 16384,
					       EXANET_COLL_INT32, EXANET_COLL_SUM, NULL, 0));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == last) {
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	} else {
		expect_left_error(_metadata, self, g, t0);
	}
	if (self->rank != last)
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	regroup_remaining(_metadata, self, KEY(2));
}

/* The member process of member_process_exits_...: reports on fd, then sleeps. */
static void __attribute__((noreturn)) leaver(FIXTURE_DATA(coll) *self, uint32_t key, int fd,
						 int go)
{
	struct exanet_coll_group *g;
	struct exanet_coll *coll;
	struct rnode n;
	int ranks[MAXM], i, rc;
	uint32_t nodes[MAXM];
	size_t count = 1001, bytes = count * 4;
	const void *in[MAXM];

	rc = rnode_up(&n, 2 * MIB, 1);
	if (!rc)
		rc = exanet_coll_open(n.rdma, &coll);
	for (i = 0; i < self->nn; i++) {
		ranks[i] = i;
		nodes[i] = self->nodes[ranks[i]];
	}
	if (!rc)
		rc = exanet_coll_group_create(coll, key, (uint32_t)self->nn,
					      (uint32_t)self->nn - 1, nodes, &g);
	if (write(fd, &rc, sizeof(rc)) != sizeof(rc) || rc)
		_exit(1);
	/* once every member has its group: one operation with them, checked */
	if (read(go, &i, sizeof(i)) != sizeof(i))
		_exit(1);
	coll_ref_fill(EXANET_COLL_INT32, EXANET_COLL_SUM, (uint32_t)self->nn - 1, 2300, n.buf,
		      count);
	rc = exanet_coll_allreduce(g, n.buf, n.buf + MIB, count, EXANET_COLL_INT32,
				   EXANET_COLL_SUM, OP_TMO);
	if (!rc) {
		for (i = 0; i < self->nn; i++) {
			coll_ref_fill(EXANET_COLL_INT32, EXANET_COLL_SUM, (uint32_t)i, 2300,
				      self->scr + (size_t)i * bytes, count);
			in[i] = self->scr + (size_t)i * bytes;
		}
		coll_ref(EXANET_COLL_INT32, EXANET_COLL_SUM, (uint32_t)self->nn, in, count,
			 self->scr + (size_t)self->nn * bytes);
		if (memcmp(n.buf + MIB, self->scr + (size_t)self->nn * bytes, bytes))
			rc = -EBADMSG;
	}
	if (write(fd, &rc, sizeof(rc)) != sizeof(rc))
		_exit(1);
	for (;;)
		pause();		/* until SIGKILLed */
}

static int read_int(int fd, int timeout_ms, int *v)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, timeout_ms) != 1)
		return -ETIMEDOUT;
	return read(fd, v, sizeof(*v)) == sizeof(*v) ? 0 : -EIO;
}

/*
 * The last member is a separate process that is SIGKILLed while the
 * others' operation is in flight (its file closes, its group goes): the
 * others get an error within seconds; the remaining members then work in a
 * new group.
 */
TEST_F_TIMEOUT(coll, member_process_exits_others_fail_then_regroup, 180)
{
	struct exanet_coll_group *g = NULL;
	int last = self->nn - 1, v = -1, pfd[2], gfd[2], status;
	pid_t pid = -1;
	int64_t t0 = 0;

	if (self->nn < 2)
		SKIP_TEST("needs 2 ranks (loopback_members_on_one_node covers one node)");
	if (self->rank == last) {
		/* the child needs none of the registered memory (nor its COW) */
		EXPECT_EQ(0, madvise(self->n.buf, BUFSZ, MADV_DONTFORK));
		EXPECT_EQ(0, madvise(self->n.rec, 4096, MADV_DONTFORK));
		ASSERT_EQ(0, pipe(pfd));
		ASSERT_EQ(0, pipe(gfd));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			close(pfd[0]);
			close(gfd[1]);
			leaver(self, KEY(1), pfd[1], gfd[0]);
		}
		close(pfd[1]);
		close(gfd[0]);
		ASSERT_EQ(0, read_int(pfd[0], 30000, &v));
		EXPECT_EQ(0, v);
	} else {
		ASSERT_EQ(0, group_all(self, KEY(1), &g));
	}
	OOB_SYNC(&self->oob);
	/* one operation with the member process */
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_SUM, .count = 1001,
				 .seed = 2300, .src = region(self, 0), .dst = region(self, 1) };
		int bad = 0;

		if (self->rank == last) {
			ASSERT_EQ(sizeof(v), write(gfd[1], &v, sizeof(v)));
			ASSERT_EQ(0, read_int(pfd[0], 70000, &v));
			if (v)
				TH_LOG("member process: %s", strerror(-v));
			bad = v != 0;
		} else {
			bad = run_jobs(_metadata, self, &j, 1);
		}
		agree(_metadata, self, bad, -1, 0, "with the member process");
	}
	if (self->rank != last) {
		t0 = exa_now_ms();
		ASSERT_EQ(0, exanet_coll_start(g, region(self, 0), region(self, 1), 16384,
					       EXANET_COLL_INT32, EXANET_COLL_SUM, NULL, 0));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == last) {
		EXPECT_EQ(0, kill(pid, SIGKILL));
		EXPECT_EQ(pid, waitpid(pid, &status, 0));
		close(pfd[0]);
		close(gfd[1]);
	} else {
		expect_left_error(_metadata, self, g, t0);
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	}
	regroup_remaining(_metadata, self, KEY(2));
}
