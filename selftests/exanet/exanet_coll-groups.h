/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_coll: groups: sub-groups (fold-in and fold-out), two groups at
 * once, several members on one node, a process of another job domain kept
 * out, and the barrier (count 0).
 *
 * Cases of the translation unit of exanet_coll.c: include it only there.
 */
#ifndef EXANET_COLL_C
#error "exanet_coll-groups.h holds cases of exanet_coll.c: include it only there"
#endif

/* ------------------------------------------------------------- groups */

/*
 * On 4 or more nodes: the group {0, 1, 2} (3 members: member 2 folds into
 * member 0 and gets the result back) and the pair {1, 3}, one after the
 * other, then both at once (rank 1 is in both).
 */
TEST_F_TIMEOUT(coll, subgroups_three_members_and_a_pair, 300)
{
	static const int tri[] = { 0, 1, 2 }, pair[] = { 1, 3 };
	static const struct { unsigned int dt, op; size_t count; } c[] = {
		{ EXANET_COLL_FLOAT, EXANET_COLL_SUM, 16384 },
		{ EXANET_COLL_DOUBLE, EXANET_COLL_SUM, 1001 },
		{ EXANET_COLL_INT32, EXANET_COLL_MIN, 1025 },
		{ EXANET_COLL_UINT64, EXANET_COLL_BOR, 13 },
	};
	struct exanet_coll_group *gt = NULL, *gp = NULL;
	int in_t = self->rank <= 2, in_p = self->rank == 1 || self->rank == 3;
	unsigned int i;

	if (self->nn < 4)
		SKIP_TEST("needs 4 ranks");
	if (in_t)
		ASSERT_EQ(0, group_of(self, KEY(1), tri, 3, (uint32_t)self->rank, &gt));
	if (in_p)
		ASSERT_EQ(0, group_of(self, KEY(2), pair, 2, self->rank == 1 ? 0 : 1, &gp));
	OOB_SYNC(&self->oob);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct job t = {
			.g = gt, .size = 3, .me = (uint32_t)self->rank, .dtype = c[i].dt,
			.op = c[i].op, .count = c[i].count, .seed = 1100 + i,
			.src = region(self, 0), .dst = region(self, 1),
		};
		struct job p = {
			.g = gp, .size = 2, .me = self->rank == 1 ? 0 : 1, .dtype = c[i].dt,
			.op = c[i].op, .count = c[i].count, .seed = 1200 + i,
			.src = region(self, 2), .dst = region(self, 3),
		};
		struct job both[2] = { t, p };
		int bad = 0;

		/* the three */
		if (in_t)
			bad = run_jobs(_metadata, self, &t, 1);
		agree(_metadata, self, bad, in_t ? 0 : -1, t.crc, "group {0,1,2}");
		/* the pair */
		bad = 0;
		if (in_p)
			bad = run_jobs(_metadata, self, &p, 1);
		agree(_metadata, self, bad, in_p ? 1 : -1, p.crc, "group {1,3}");
		/* both at once: rank 1 starts both, then waits for both */
		bad = 0;
		if (self->rank == 1) {
			bad = run_jobs(_metadata, self, both, 2);
		} else if (in_t) {
			bad = run_jobs(_metadata, self, &both[0], 1);
		} else if (in_p) {
			bad = run_jobs(_metadata, self, &both[1], 1);
		}
		agree(_metadata, self, bad, in_t ? 0 : -1, both[0].crc, "{0,1,2} beside {1,3}");
		agree(_metadata, self, 0, in_p ? 1 : -1, both[1].crc, "{1,3} beside {0,1,2}");
	}
}

/*
 * Two groups of all nodes, different keys, the second with its members in
 * reverse order (member i = rank nn-1-i): both started, then both waited
 * for, in both orders.
 */
TEST_F_TIMEOUT(coll, two_groups_at_once, 300)
{
	static const struct { unsigned int dt1, op1, dt2, op2; size_t count; } c[] = {
		{ EXANET_COLL_FLOAT, EXANET_COLL_SUM, EXANET_COLL_INT32, EXANET_COLL_SUM, 16384 },
		{ EXANET_COLL_DOUBLE, EXANET_COLL_SUM, EXANET_COLL_DOUBLE, EXANET_COLL_SUM, 3001 },
		{ EXANET_COLL_INT64, EXANET_COLL_MAX, EXANET_COLL_UINT32, EXANET_COLL_BXOR, 1 },
	};
	struct exanet_coll_group *ga, *gb;
	int rev[MAXM], i;
	unsigned int k;

	for (i = 0; i < self->nn; i++)
		rev[i] = self->nn - 1 - i;
	ASSERT_EQ(0, group_all(self, KEY(1), &ga));
	ASSERT_EQ(0, group_of(self, KEY(2), rev, (uint32_t)self->nn,
			      (uint32_t)(self->nn - 1 - self->rank), &gb));
	EXPECT_NE(exanet_coll_group_slot(ga), exanet_coll_group_slot(gb));
	OOB_SYNC(&self->oob);
	for (k = 0; k < 2 * sizeof(c) / sizeof(c[0]); k++) {
		unsigned int ci = k / 2;
		struct job j[2] = {
			{ .g = ga, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
			  .dtype = c[ci].dt1, .op = c[ci].op1, .count = c[ci].count,
			  .seed = 1300 + k, .src = region(self, 0), .dst = region(self, 1) },
			{ .g = gb, .size = (uint32_t)self->nn,
			  .me = (uint32_t)(self->nn - 1 - self->rank), .dtype = c[ci].dt2,
			  .op = c[ci].op2, .count = c[ci].count, .seed = 1400 + k,
			  .src = region(self, 2), .dst = region(self, 3) },
		};
		int bad;

		if (k % 2) {
			/* start and wait for b first */
			struct job t = j[0];

			j[0] = j[1];
			j[1] = t;
		}
		bad = run_jobs(_metadata, self, j, 2);
		agree(_metadata, self, bad, 0, j[0].crc ^ j[1].crc * 31, "two groups");
	}
}

/*
 * Several members on one node (one handle each, all member table entries
 * this node): each node on its own runs 2- and 3-member groups, then a
 * mismatch and a departed member among them.  The only test with real
 * combining on a 1-node run.
 */
TEST_F_TIMEOUT(coll, loopback_members_on_one_node, 300)
{
	static const struct { unsigned int dt, op; size_t count; } c[] = {
		{ EXANET_COLL_FLOAT, EXANET_COLL_SUM, 16384 },
		{ EXANET_COLL_DOUBLE, EXANET_COLL_SUM, 4099 },
		{ EXANET_COLL_INT32, EXANET_COLL_SUM, 1001 },
		{ EXANET_COLL_UINT32, EXANET_COLL_MIN, 3 },
		{ EXANET_COLL_INT64, EXANET_COLL_BAND, 1024 },
	};
	struct exanet_coll_group *g3[3], *g2[2];
	uint32_t size;
	unsigned int i, m;
	int bad = 0, rc;

	ASSERT_EQ(0, group_local(self, KEY(1), 3, g3));
	ASSERT_EQ(0, group_local(self, KEY(2), 2, g2));
	for (size = 2; size <= 3; size++) {
		for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			struct job j[3];

			memset(j, 0, sizeof(j));
			for (m = 0; m < size; m++) {
				j[m].g = size == 3 ? g3[m] : g2[m];
				j[m].size = size;
				j[m].me = m;
				j[m].dtype = c[i].dt;
				j[m].op = c[i].op;
				j[m].count = c[i].count;
				j[m].seed = 1500 + size * 16 + i;
				j[m].src = region(self, 2 * m);
				/* member 1 in place */
				j[m].dst = m == 1 ? j[m].src : region(self, 2 * m + 1);
			}
			bad += run_jobs(_metadata, self, j, (int)size);
			for (m = 1; m < size; m++)
				if (j[m].crc != j[0].crc) {
					TH_LOG("loopback member %u holds another result", m);
					bad++;
				}
		}
	}
	EXPECT_EQ(0, bad);

	/* mismatch: member 0 and 1 of the pair start different counts */
	{
		struct job a = { .g = g2[0], .size = 2, .me = 0, .dtype = EXANET_COLL_INT32,
				 .op = EXANET_COLL_SUM, .count = 10, .seed = 1,
				 .src = region(self, 0), .dst = region(self, 1) };
		struct job b = a;

		b.g = g2[1];
		b.me = 1;
		b.count = 11;
		b.src = region(self, 2);
		b.dst = region(self, 3);
		job_prepare(&a);
		job_prepare(&b);
		ASSERT_EQ(0, job_start(&a));
		ASSERT_EQ(0, job_start(&b));
		EXPECT_EQ(-EPROTO, job_wait(&a, FAIL_TMO));
		EXPECT_EQ(-EPROTO, job_wait(&b, FAIL_TMO));
		/* refused until re-created */
		b.count = 10;
		job_prepare(&a);
		job_prepare(&b);
		rc = job_start(&a);
		if (!rc)
			rc = job_wait(&a, FAIL_TMO);
		EXPECT_EQ(-EPIPE, rc);
		rc = job_start(&b);
		if (!rc)
			rc = job_wait(&b, FAIL_TMO);
		EXPECT_EQ(-EPIPE, rc);
	}

	/* member 2 of the three leaves: the others' operation fails, no hang */
	{
		struct job j[2];
		int64_t t0;

		EXPECT_EQ(0, exanet_coll_group_destroy(g3[2]));
		memset(j, 0, sizeof(j));
		for (m = 0; m < 2; m++) {
			j[m] = (struct job){ .g = g3[m], .size = 3, .me = m,
					     .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_SUM,
					     .count = 100, .seed = 2, .src = region(self, 2 * m),
					     .dst = region(self, 2 * m + 1) };
			job_prepare(&j[m]);
			EXPECT_EQ(0, job_start(&j[m]));
		}
		t0 = exa_now_ms();
		for (m = 0; m < 2; m++) {
			rc = job_wait(&j[m], FAIL_TMO);
			TH_LOG("loopback member %u of 3 after member 2 left: %s after %lld ms", m,
			       strerror(-rc), (long long)(exa_now_ms() - t0));
			EXPECT_TRUE(rc == -ECONNRESET || rc == -EREMOTEIO || rc == -ETIMEDOUT);
		}
		EXPECT_GT(FAIL_MS_MAX, exa_now_ms() - t0);
	}
}

/* ------------------------------------------------------------ domains */

#define OTHER_PDID 0x4c17		/* a job domain no other test uses */

struct intruder_arg {
	uint32_t key, nodes[2];
};

/*
 * In another job domain (PDID): the same key and member table as the
 * legitimate member 1, then one operation; writes its setup result, then
 * (after a byte from the test) the operation's result.
 */
static int intruder_fn(struct kid_io *io)
{
	const struct intruder_arg *a = io->arg;
	struct exanet_dev *dev = NULL;
	struct exanet_rdma *rdma = NULL;
	struct exanet_coll *coll = NULL;
	struct exanet_coll_group *g = NULL;
	struct exanet_mr *mr = NULL;
	static int32_t buf[1024] __attribute__((aligned(4096)));
	int rc;
	char go;

	rc = exanet_open_index(0, &dev);
	if (!rc)
		rc = exanet_rdma_alloc(dev, &rdma);
	if (!rc)
		rc = exanet_coll_open(rdma, &coll);
	if (!rc)
		rc = exanet_reg_mr(dev, buf, sizeof(buf), 0, &mr);
	if (!rc)
		rc = exanet_coll_group_create(coll, a->key, 2, 1, a->nodes, &g);
	if (kid_write(io->wr, &rc, sizeof(rc)) || rc)
		return 1;
	if (kid_read(io->rd, &go, 1))
		return 1;
	rc = exanet_coll_allreduce(g, buf, buf + 512, 16, EXANET_COLL_INT32,
				   EXANET_COLL_SUM, FAIL_TMO);
	kid_write(io->wr, &rc, sizeof(rc));
	kid_read(io->rd, &go, 1);	/* EOF: the test is done */
	exanet_close(dev);
	return 0;
}

/*
 * A process of another job domain cannot join a group: with the same key
 * and member table as member 1 but its own PDID, its packets and the
 * legitimate member's find no group at the other NI: both operations end
 * with -ECONNRESET (never a mixed result), and both NIs count the refusal.
 */
TEST_F_TIMEOUT(coll, another_domain_cannot_join_or_inject, 180)
{
	struct intruder_arg a = { .key = KEY(1) };
	struct exanet_coll_group *g = NULL;
	struct kid k = { 0 };
	long long refused0, refused1;
	int32_t *src = (int32_t *)region(self, 0);
	int rc = 0, krc = 0, i;
	char go = 1;

	if (self->nn < 2)
		SKIP_TEST("needs 2 ranks");
	a.nodes[0] = self->nodes[0];
	a.nodes[1] = self->nodes[1];
	refused0 = coll_counter(EXANET_CCNT_RX_REFUSED);
	if (refused0 < 0)
		SKIP_TEST("no coll counters in sysfs");
	if (self->rank == 0) {
		ASSERT_EQ(0, exanet_coll_group_create(self->coll, a.key, 2, 0, a.nodes, &g));
	} else if (self->rank == 1) {
		ASSERT_EQ(0, kid_spawn(&k, OTHER_PDID, 0, intruder_fn, &a));
		ASSERT_EQ(0, kid_read_tmo(k.rd, &krc, sizeof(krc), 60000));
		ASSERT_EQ(0, krc);
	}
	OOB_SYNC(&self->oob);
	for (i = 0; i < 16; i++)
		src[i] = i;
	if (self->rank == 0) {
		rc = exanet_coll_allreduce(g, src, src + 512, 16, EXANET_COLL_INT32,
					   EXANET_COLL_SUM, FAIL_TMO);
		TH_LOG("member 0 with the other domain's member 1: %s", strerror(-rc));
		EXPECT_EQ(-ECONNRESET, rc);
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	} else if (self->rank == 1) {
		ASSERT_EQ(0, kid_write(k.wr, &go, 1));
		ASSERT_EQ(0, kid_read_tmo(k.rd, &krc, sizeof(krc), FAIL_MS_MAX + 60000));
		TH_LOG("member 1 in PDID %#x: %s", OTHER_PDID, strerror(-krc));
		EXPECT_EQ(-ECONNRESET, krc);
		EXPECT_EQ(0, kid_finish(&k, 30000));
	}
	OOB_SYNC(&self->oob);
	refused1 = coll_counter(EXANET_CCNT_RX_REFUSED);
	if (self->rank <= 1) {
		TH_LOG("rank %d: rx_refused +%lld", self->rank, refused1 - refused0);
		EXPECT_LT(refused0, refused1);
	}
}

/* ------------------------------------------------------------ barrier */

/*
 * count 0: a barrier.  All start together (20 times, also through
 * allreduce); then the last rank starts 500 ms late: nobody's barrier
 * completes before it started.  Nothing is written.
 */
TEST_F_TIMEOUT(coll, barrier_count_zero, 180)
{
	struct exanet_coll_group *g;
	uint8_t *dst = region(self, 1);
	int i, rc, late = self->nn - 1;
	int64_t t0, dt;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	memset(dst - GUARDB, GUARD, 2 * GUARDB);
	OOB_SYNC(&self->oob);
	for (i = 0; i < 20; i++) {
		if (i % 2) {
			EXPECT_EQ(0, exanet_coll_allreduce(g, region(self, 0), dst, 0,
							   EXANET_COLL_INT32, EXANET_COLL_SUM,
							   OP_TMO));
		} else {
			ASSERT_EQ(0, exanet_coll_start(g, region(self, 0), dst, 0,
						       EXANET_COLL_DOUBLE, EXANET_COLL_MAX,
						       NULL, i));
			EXPECT_EQ(0, exanet_coll_wait(g, OP_TMO, NULL));
		}
	}
	EXPECT_EQ(1, bytes_equal(dst - GUARDB, 2 * GUARDB, GUARD));
	agree(_metadata, self, !_metadata->passed, 0, 0, "20 barriers");
	if (self->nn < 2)
		return;
	for (i = 0; i < 3; i++) {
		OOB_SYNC(&self->oob);
		t0 = exa_now_ms();
		if (self->rank == late)
			usleep(500000);
		ASSERT_EQ(0, exanet_coll_start(g, region(self, 0), dst, 0, EXANET_COLL_INT32,
					       EXANET_COLL_SUM, NULL, 0));
		rc = exanet_coll_wait(g, OP_TMO, NULL);
		dt = exa_now_ms() - t0;
		EXPECT_EQ(0, rc);
		if (self->rank != late) {
			if (dt < 350)
				TH_LOG("barrier done after %lld ms, the last member starts at 500 ms",
				       (long long)dt);
			/* the oob barrier leaves the ranks a few ms apart */
			EXPECT_LE(350, dt);
		}
	}
	agree(_metadata, self, !_metadata->passed, 0, 0, "late barrier");
}
