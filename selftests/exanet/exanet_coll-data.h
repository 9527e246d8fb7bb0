/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_coll: the results: every op x dtype x length bit-exact against
 * the reference order, in place, the completion record and poll.
 *
 * Cases of the translation unit of exanet_coll.c: include it only there.
 */
#ifndef EXANET_COLL_C
#error "exanet_coll-data.h holds cases of exanet_coll.c: include it only there"
#endif

/*
 * Every valid (dtype, op) on the group of all nodes, for 1 element, odd
 * lengths, one block, one block and a bit, 64 KiB; sources and results at
 * different (element-aligned) offsets; one length through allreduce.
 */
TEST_F_TIMEOUT(coll, every_op_dtype_and_length_bit_exact, 1200)
{
	struct exanet_coll_group *g;
	unsigned int d, op, li, combos = 0;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	EXPECT_EQ((uint32_t)self->nn, exanet_coll_group_size(g));
	EXPECT_EQ((uint32_t)self->rank, exanet_coll_group_rank(g));
	EXPECT_GT(EXANET_COLL_GROUPS, exanet_coll_group_slot(g));
	for (d = 0; d < NDT; d++) {
		unsigned int dt = all_dtypes[d];
		size_t es = coll_ref_dtype_size(dt);
		const size_t lens[] = { 1, 3, 13, 1001, EXANET_COLL_BLOCK_SIZE / es,
					EXANET_COLL_BLOCK_SIZE / es + 3, 65536 / es };

		EXPECT_EQ(es, exanet_coll_dtype_size(dt));
		for (op = 0; op < EXANET_COLL_NUM_OPS; op++) {
			uint32_t crc = 0;
			int bad = 0;
			char what[64];

			if (!coll_ref_valid(dt, op))
				continue;
			for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
				struct job j = {
					.g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
					.dtype = dt, .op = op, .count = lens[li],
					.seed = combos * 16 + li,
					.src = region(self, 0) + (li % 3) * 8,
					.dst = region(self, 1) + (li % 2) * 24,
					.allreduce = li == 3,
				};

				bad += run_jobs(_metadata, self, &j, 1);
				crc = exa_crc32(&j.crc, sizeof(j.crc)) ^ crc * 31;
			}
			snprintf(what, sizeof(what), "%s %s", coll_ref_dtype_name(dt),
				 coll_ref_op_name(op));
			agree(_metadata, self, bad, 0, crc, what);
			combos++;
		}
	}
	EXPECT_EQ(30, combos);
	TH_LOG("%u (dtype, op) pairs x 7 lengths on %d member(s): bit exact", combos, self->nn);
}

/* src == dst: the result replaces the source. */
TEST_F_TIMEOUT(coll, in_place, 300)
{
	static const struct { unsigned int dt, op; } c[] = {
		{ EXANET_COLL_INT32, EXANET_COLL_SUM }, { EXANET_COLL_FLOAT, EXANET_COLL_SUM },
		{ EXANET_COLL_DOUBLE, EXANET_COLL_MAX }, { EXANET_COLL_UINT64, EXANET_COLL_BXOR },
		{ EXANET_COLL_DOUBLE, EXANET_COLL_SUM },
	};
	const size_t counts[] = { 1, 1001, 8192 };
	struct exanet_coll_group *g;
	unsigned int i, k;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint32_t crc = 0;
		int bad = 0;

		for (k = 0; k < 3; k++) {
			struct job j = {
				.g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				.dtype = c[i].dt, .op = c[i].op, .count = counts[k],
				.seed = 500 + i * 4 + k, .src = region(self, 2) + k * 8,
			};

			j.dst = j.src;
			bad += run_jobs(_metadata, self, &j, 1);
			crc = crc * 31 + j.crc;
		}
		agree(_metadata, self, bad, 0, crc, "in place");
	}
}

/* Completion record, status word and poll; the group getters. */
TEST_F_TIMEOUT(coll, completion_record_status_and_poll, 120)
{
	struct exanet_coll_group *g;
	struct exanet_rdma_notif rec;
	uint64_t st = 0, st2 = 0;
	int rc, i;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	/* nothing started yet: not in flight */
	EXPECT_NE(-EINPROGRESS, exanet_coll_poll(g, NULL));
	for (i = 0; i < 3; i++) {
		struct job j = {
			.g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
			.dtype = EXANET_COLL_INT64, .op = EXANET_COLL_SUM, .count = 777 + i,
			.seed = 900 + i, .src = region(self, 0), .dst = region(self, 1),
			.lcomp = &self->n.rec[i], .tag = 0x5eed0000ull + i,
		};
		uint64_t prev = st;
		int64_t end = exa_now_ms() + OP_TMO / MS;

		job_prepare(&j);
		ASSERT_EQ(0, job_start(&j));
		do
			rc = exanet_coll_poll(g, &st);
		while (rc == -EINPROGRESS && exa_now_ms() < end);
		j.rc = rc;
		EXPECT_EQ(0, job_check(_metadata, self, &j));
		EXPECT_EQ(EXANET_COLL_DONE, EXANET_COLL_ST_STATE(st));
		EXPECT_EQ(EXANET_COLL_E_NONE, EXANET_COLL_ST_ERROR(st));
		if (i) {
			EXPECT_EQ(EXANET_COLL_ST_SEQ(prev) + 1, EXANET_COLL_ST_SEQ(st));
		} else {
			TH_LOG("first operation: sequence %u", EXANET_COLL_ST_SEQ(st));
		}
		/* done stays done; wait returns at once */
		EXPECT_EQ(0, exanet_coll_poll(g, &st2));
		EXPECT_EQ(st, st2);
		EXPECT_EQ(0, exanet_coll_wait(g, 0, NULL));
		/* DONE comes with the record already written */
		ASSERT_EQ(1, exanet_rdma_notif_poll(&self->n.rec[i], &rec));
		EXPECT_EQ(0, rec.error);
		EXPECT_EQ(EXANET_RDMA_OP_COLL, rec.op);
		EXPECT_EQ(j.tag, rec.tag);
		EXPECT_EQ(job_bytes(&j), rec.length);
		EXPECT_EQ(self->node, rec.node);
		EXPECT_EQ((uint32_t)self->rank % 256, rec.rank);
		EXPECT_EQ(exanet_rdma_page(self->n.rdma), rec.page);
		EXPECT_EQ(exanet_coll_group_slot(g), rec.chan);
		EXPECT_EQ(EXANET_RDMA_N_VALID | EXANET_RDMA_N_COMPLETION, rec.flags);
		agree(_metadata, self, 0, 0, j.crc, "completion record");
	}
}
