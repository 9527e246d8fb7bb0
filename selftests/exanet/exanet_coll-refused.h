/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_coll: refused input: bad arguments, group slots running out,
 * an unregistered buffer, a start while one is in flight.
 *
 * Cases of the translation unit of exanet_coll.c: include it only there.
 */
#ifndef EXANET_COLL_C
#error "exanet_coll-refused.h holds cases of exanet_coll.c: include it only there"
#endif

/* Argument checks of start / allreduce / group_create; the tables. */
TEST_F_TIMEOUT(coll, bad_arguments_refused, 120)
{
	static uint32_t big[EXANET_COLL_MAX_MEMBERS + 1];
	struct exanet_coll_group *g, *g2 = NULL;
	uint8_t *src = region(self, 0), *dst = region(self, 1);
	uint32_t nodes[2], me = (uint32_t)self->rank, other;
	unsigned int e, d;
	int i;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	/* start: dtype, op, bitwise on floating point, count */
	EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, EXANET_COLL_NUM_DTYPES,
					     EXANET_COLL_SUM, NULL, 0));
	EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, 255, EXANET_COLL_SUM, NULL, 0));
	EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, EXANET_COLL_INT32,
					     EXANET_COLL_NUM_OPS, NULL, 0));
	EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, EXANET_COLL_INT32, 255, NULL, 0));
	for (e = EXANET_COLL_BAND; e <= EXANET_COLL_BXOR; e++) {
		EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, EXANET_COLL_FLOAT, e,
						     NULL, 0));
		EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, EXANET_COLL_DOUBLE, e,
						     NULL, 0));
		EXPECT_EQ(-EINVAL, exanet_coll_allreduce(g, src, dst, 4, EXANET_COLL_DOUBLE, e,
							 OP_TMO));
	}
	for (d = 0; d < NDT; d++) {
		size_t es = coll_ref_dtype_size(all_dtypes[d]);

		EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, EXANET_COLL_MAX_LEN / es + 1,
						     all_dtypes[d], EXANET_COLL_SUM, NULL, 0));
		EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, SIZE_MAX / es,
						     all_dtypes[d], EXANET_COLL_MAX, NULL, 0));
	}
	EXPECT_EQ(-EINVAL, exanet_coll_allreduce(g, src, dst, 4, EXANET_COLL_NUM_DTYPES,
						 EXANET_COLL_SUM, OP_TMO));
	/* nothing was started: the group still works, on every member */
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = me,
				 .dtype = EXANET_COLL_DOUBLE, .op = EXANET_COLL_SUM, .count = 257,
				 .seed = 1600, .src = src, .dst = dst };
		int bad = run_jobs(_metadata, self, &j, 1);

		agree(_metadata, self, bad, 0, j.crc, "after refused starts");
	}

	/* the tables */
	EXPECT_EQ(4, exanet_coll_dtype_size(EXANET_COLL_INT32));
	EXPECT_EQ(8, exanet_coll_dtype_size(EXANET_COLL_INT64));
	EXPECT_EQ(8, exanet_coll_dtype_size(EXANET_COLL_UINT64));
	EXPECT_EQ(4, exanet_coll_dtype_size(EXANET_COLL_FLOAT));
	EXPECT_EQ(8, exanet_coll_dtype_size(EXANET_COLL_DOUBLE));
	EXPECT_EQ(4, exanet_coll_dtype_size(EXANET_COLL_UINT32));
	EXPECT_EQ(0, exanet_coll_dtype_size(EXANET_COLL_NUM_DTYPES));
	EXPECT_EQ(0, exanet_coll_dtype_size(~0u));
	EXPECT_EQ(0, exanet_coll_error_errno(EXANET_COLL_E_NONE));
	EXPECT_EQ(-EINVAL, exanet_coll_error_errno(EXANET_COLL_E_BAD_DESC));
	EXPECT_EQ(-EFAULT, exanet_coll_error_errno(EXANET_COLL_E_LOCAL_DMA));
	EXPECT_EQ(-EPROTO, exanet_coll_error_errno(EXANET_COLL_E_MISMATCH));
	EXPECT_EQ(-ECONNRESET, exanet_coll_error_errno(EXANET_COLL_E_NO_GROUP));
	EXPECT_EQ(-ETIMEDOUT, exanet_coll_error_errno(EXANET_COLL_E_TIMEOUT));
	EXPECT_EQ(-EREMOTEIO, exanet_coll_error_errno(EXANET_COLL_E_PEER));
	EXPECT_EQ(-ECANCELED, exanet_coll_error_errno(EXANET_COLL_E_ABORTED));
	EXPECT_EQ(-EPIPE, exanet_coll_error_errno(EXANET_COLL_E_FAILED));
	EXPECT_EQ(-ENOMEM, exanet_coll_error_errno(EXANET_COLL_E_NOMEM));
	EXPECT_EQ(-EIO, exanet_coll_error_errno(200));
	for (e = 0; e <= EXANET_COLL_E_NOMEM + 1; e++) {
		const char *s = exanet_coll_error_str(e);

		EXPECT_TRUE(s && *s);
	}
	EXPECT_TRUE(exanet_coll_error_str(255) != NULL);

	/* group_create */
	other = self->num_nodes > 1 ? (self->node + 1) % self->num_nodes : self->node + 1;
	nodes[0] = self->node;
	nodes[1] = self->node;
	/* my_rank >= size */
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 2, 2, nodes, &g2));
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 1, ~0u, nodes, &g2));
	/* nodes[my_rank] is not this node */
	nodes[0] = other;
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 2, 0, nodes, &g2));
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 1, 0, nodes, &g2));
	/* a member node the fabric does not have */
	nodes[0] = self->node;
	nodes[1] = self->num_nodes;
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 2, 0, nodes, &g2));
	nodes[1] = ~0u;
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 2, 0, nodes, &g2));
	/* size 0, size > EXANET_COLL_MAX_MEMBERS */
	nodes[1] = self->node;
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 0, 0, nodes, &g2));
	for (i = 0; i <= EXANET_COLL_MAX_MEMBERS; i++)
		big[i] = self->node;
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), EXANET_COLL_MAX_MEMBERS + 1,
						    0, big, &g2));
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), ~0u, 0, big, &g2));
	/* the same key and rank twice on this node */
	{
		struct exanet_coll_group *dup = NULL;

		EXPECT_EQ(-EEXIST, group_all(self, KEY(1), &dup));
	}
	/* none of that took a slot or hurt the group */
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = me,
				 .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_BXOR, .count = 33,
				 .seed = 1601, .src = src, .dst = dst };
		int bad = run_jobs(_metadata, self, &j, 1);

		agree(_metadata, self, bad, 0, j.crc, "after refused group_create");
	}
}

/*
 * The NI's group slots: a node takes solo groups until -ENOSPC (at most
 * EXANET_COLL_GROUPS), frees them, and has them all again.
 */
TEST_F_TIMEOUT(coll, group_slots_enospc_and_reuse, 120)
{
	static struct exanet_coll_group *gs[EXANET_COLL_GROUPS + 1];
	uint64_t seen = 0;
	int n = 0, n2 = 0, rc = 0, round, i;

	for (round = 0; round < 2; round++) {
		for (i = 0; i <= EXANET_COLL_GROUPS; i++) {
			rc = exanet_coll_group_create(self->coll, KEY(i) ^ (uint32_t)round << 20, 1,
						      0, &self->node, &gs[i]);
			if (rc)
				break;
			if (!round) {
				uint32_t s = exanet_coll_group_slot(gs[i]);

				EXPECT_GT(EXANET_COLL_GROUPS, s);
				if (s < 64) {
					EXPECT_EQ(0, seen >> s & 1);
					seen |= 1ull << s;
				}
			}
		}
		EXPECT_EQ(-ENOSPC, rc);
		if (!round)
			n = i;
		else
			n2 = i;
		/* a solo group works even with every slot taken */
		if (i) {
			struct job j = { .g = gs[i - 1], .size = 1, .me = 0,
					 .dtype = EXANET_COLL_UINT32, .op = EXANET_COLL_SUM,
					 .count = 100, .seed = 1700, .src = region(self, 0),
					 .dst = region(self, 1) };

			EXPECT_EQ(0, run_jobs(_metadata, self, &j, 1));
		}
		while (i-- > 0)
			EXPECT_EQ(0, exanet_coll_group_destroy(gs[i]));
	}
	TH_LOG("%d group slots free on node %u (of %d), %d the second time", n, self->node,
	       EXANET_COLL_GROUPS, n2);
	EXPECT_LT(0, n);
	EXPECT_GE(EXANET_COLL_GROUPS, n);
	EXPECT_EQ(n, n2);
}

/*
 * Memory not registered with the NI: an error completion (-EFAULT), no
 * hang, and the group is refused afterwards (-EPIPE).  Solo groups first
 * (exact codes), then the last member of the group of all nodes with an
 * unregistered source: it gets -EFAULT, every other member an error.
 */
TEST_F_TIMEOUT(coll, unregistered_buffer_error_completion, 180)
{
	size_t len = 4 * 4096;
	uint8_t *unreg = map_anon(len);
	struct exanet_coll_group *g;
	int rc, k, rcs[OOB_MAX_NODES], i;
	int64_t t0;

	ASSERT_NE(NULL, unreg);
	memset(unreg, 1, len);		/* present, writable, just not registered */
	for (k = 0; k < 2; k++) {
		/* k 0: unregistered source; 1: unregistered result */
		uint8_t *src = k ? region(self, 0) : unreg, *dst = k ? unreg : region(self, 1);

		ASSERT_EQ(0, exanet_coll_group_create(self->coll, KEY(1 + k), 1, 0, &self->node,
						      &g));
		t0 = exa_now_ms();
		rc = exanet_coll_start(g, src, dst, 1000, EXANET_COLL_INT32, EXANET_COLL_SUM,
				       NULL, 0);
		if (!rc)
			rc = exanet_coll_wait(g, FAIL_TMO, NULL);
		TH_LOG("solo group, unregistered %s: %s after %lld ms", k ? "result" : "source",
		       strerror(-rc), (long long)(exa_now_ms() - t0));
		EXPECT_EQ(-EFAULT, rc);
		/* refused now */
		rc = exanet_coll_start(g, region(self, 0), region(self, 1), 10, EXANET_COLL_INT32,
				       EXANET_COLL_SUM, NULL, 0);
		if (!rc)
			rc = exanet_coll_wait(g, FAIL_TMO, NULL);
		EXPECT_EQ(-EPIPE, rc);
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	}
	if (self->nn < 2)
		goto out;

	ASSERT_EQ(0, group_all(self, KEY(3), &g));
	OOB_SYNC(&self->oob);
	t0 = exa_now_ms();
	rc = exanet_coll_start(g, self->rank == self->nn - 1 ? unreg : region(self, 0),
			       region(self, 1), 1000, EXANET_COLL_INT32, EXANET_COLL_SUM, NULL, 0);
	if (!rc)
		rc = exanet_coll_wait(g, FAIL_TMO, NULL);
	TH_LOG("rank %d: %s after %lld ms", self->rank, strerror(-rc),
	       (long long)(exa_now_ms() - t0));
	EXPECT_GT(FAIL_MS_MAX, exa_now_ms() - t0);
	ASSERT_EQ(0, oob_allgather(&self->oob, &rc, rcs, sizeof(rc)));
	EXPECT_EQ(-EFAULT, rcs[self->nn - 1]);
	for (i = 0; i < self->nn - 1; i++) {
		EXPECT_NE(0, rcs[i]);
		EXPECT_NE(-EINPROGRESS, rcs[i]);
	}
	EXPECT_EQ(0, exanet_coll_group_destroy(g));
	/* a new group of the same members works */
	ASSERT_EQ(0, group_all(self, KEY(4), &g));
	OOB_SYNC(&self->oob);
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_SUM, .count = 1000,
				 .seed = 1800, .src = region(self, 0), .dst = region(self, 1) };
		int bad = run_jobs(_metadata, self, &j, 1);

		agree(_metadata, self, bad, 0, j.crc, "new group after -EFAULT");
	}
out:
	munmap(unreg, len);
}

/*
 * A second start while the group has an operation in flight: -EBUSY, and
 * the operation in flight is not disturbed.  Rank 0 starts while the other
 * members have not yet (on one node: member 0 of a loopback pair).
 */
TEST_F_TIMEOUT(coll, start_while_in_flight_ebusy, 120)
{
	struct exanet_coll_group *g, *lp[2];
	struct job j[2];
	int loop = self->nn < 2, bad = 0, m;

	memset(j, 0, sizeof(j));
	if (loop) {
		ASSERT_EQ(0, group_local(self, KEY(1), 2, lp));
	} else {
		ASSERT_EQ(0, group_all(self, KEY(1), &g));
		lp[0] = g;
		lp[1] = NULL;
	}
	for (m = 0; m < 2; m++)
		j[m] = (struct job){ .g = lp[m], .size = loop ? 2 : (uint32_t)self->nn,
				     .me = loop ? (uint32_t)m : (uint32_t)self->rank,
				     .dtype = EXANET_COLL_FLOAT, .op = EXANET_COLL_SUM,
				     .count = 4096, .seed = 1900, .src = region(self, 2 * m),
				     .dst = region(self, 2 * m + 1) };
	job_prepare(&j[0]);
	if (loop)
		job_prepare(&j[1]);
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		uint64_t st;

		ASSERT_EQ(0, job_start(&j[0]));
		/* the others have not started: in flight for sure */
		EXPECT_EQ(-EINPROGRESS, exanet_coll_poll(lp[0], &st));
		EXPECT_EQ(EXANET_COLL_ONGOING, EXANET_COLL_ST_STATE(st));
		EXPECT_EQ(-EBUSY, exanet_coll_start(lp[0], region(self, 4), region(self, 5), 4096,
						    EXANET_COLL_FLOAT, EXANET_COLL_SUM, NULL, 0));
		EXPECT_EQ(-EBUSY, exanet_coll_start(lp[0], region(self, 4), region(self, 5), 1,
						    EXANET_COLL_INT32, EXANET_COLL_MAX, NULL, 0));
		EXPECT_EQ(-EINPROGRESS, exanet_coll_poll(lp[0], NULL));
		/* a wait that times out leaves it in flight */
		EXPECT_EQ(-EINPROGRESS, exanet_coll_wait(lp[0], 50 * MS, NULL));
	}
	OOB_SYNC(&self->oob);
	if (loop) {
		job_start(&j[1]);
		job_wait(&j[0], OP_TMO);
		job_wait(&j[1], OP_TMO);
		bad += job_check(_metadata, self, &j[0]);
		bad += job_check(_metadata, self, &j[1]);
	} else {
		if (self->rank != 0)
			job_start(&j[0]);
		job_wait(&j[0], OP_TMO);
		bad += job_check(_metadata, self, &j[0]);
	}
	agree(_metadata, self, bad, 0, j[0].crc, "after -EBUSY");
}
