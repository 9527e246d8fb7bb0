/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_coll: the limits (EXANET_COLL_MAX_LEN, allreduce splitting longer
 * vectors) and the unit's counters.
 *
 * Cases of the translation unit of exanet_coll.c: include it only there.
 */
#ifndef EXANET_COLL_C
#error "exanet_coll-limits.h holds cases of exanet_coll.c: include it only there"
#endif

/* ------------------------------------------------------------- limits */

/*
 * EXANET_COLL_MAX_LEN bytes in one operation; allreduce splits a longer
 * vector (start refuses it) and the result is still the reference.
 */
TEST_F_TIMEOUT(coll, max_len_and_allreduce_split, 600)
{
	struct exanet_coll_group *g;
	size_t count = EXANET_COLL_MAX_LEN / 4 + 1001;
	int bad;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_DOUBLE, .op = EXANET_COLL_SUM,
				 .count = EXANET_COLL_MAX_LEN / 8, .seed = 2400,
				 .src = region(self, 0), .dst = region(self, 4) };

		bad = run_jobs(_metadata, self, &j, 1);
		agree(_metadata, self, bad, 0, j.crc, "EXANET_COLL_MAX_LEN bytes");
	}
	EXPECT_EQ(-EINVAL, exanet_coll_start(g, region(self, 0), region(self, 4), count,
					     EXANET_COLL_INT32, EXANET_COLL_SUM, NULL, 0));
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_SUM, .count = count,
				 .seed = 2401, .src = region(self, 0), .dst = region(self, 4),
				 .allreduce = 1 };

		bad = run_jobs(_metadata, self, &j, 1);
		agree(_metadata, self, bad, 0, j.crc, "allreduce of MAX_LEN + 4004 bytes");
	}
}

/* ----------------------------------------------------------- counters */

/*
 * Per member, for an operation of B blocks in a group of size s with p2
 * and L = log2(p2) rounds, first transmissions sent and blocks taken:
 * fold-in (r >= p2 sends, r - p2 takes), L rounds (members < p2 send and
 * take), fold-out (r - p2 sends, r takes).
 */
static void expected_blocks(uint32_t s, uint32_t m, long long b, long long *tx, long long *rx)
{
	uint32_t p2 = coll_ref_p2(s), l = 0;

	while ((1u << l) < p2)
		l++;
	*tx = (m >= p2 ? b : 0) + (m < p2 ? l * b : 0) + (m < s - p2 ? b : 0);
	*rx = (m < s - p2 ? b : 0) + (m < p2 ? l * b : 0) + (m >= p2 ? b : 0);
}

TEST_F_TIMEOUT(coll, counters_advance, 180)
{
	long long c0[EXANET_COLL_NUM_COUNTERS], c1[EXANET_COLL_NUM_COUNTERS];
	long long d[EXANET_COLL_NUM_COUNTERS], tx, rx, blocks = 65536 / EXANET_COLL_BLOCK_SIZE;
	int have = ccnt_read(c0) == 0, haves[OOB_MAX_NODES], i, nops = 3, bad = 0, failed = 0;
	int lossy = getenv("EXA_FAULT_INJECTION") != NULL;
	struct exanet_coll_group *g, *solo;
	uint8_t *unreg;
	unsigned int k;

	ASSERT_EQ(0, oob_allgather(&self->oob, &have, haves, sizeof(have)));
	for (i = 0; i < self->nn; i++)
		if (!haves[i])
			SKIP_TEST("no collective counters in sysfs (" COLL_SYSFS ") on node %d", i);
	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	ASSERT_EQ(0, exanet_coll_group_create(self->coll, KEY(2), 1, 0, &self->node, &solo));
	OOB_SYNC(&self->oob);
	ASSERT_EQ(0, ccnt_read(c0));
	OOB_SYNC(&self->oob);
	for (i = 0; i < nops; i++) {
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_UINT64, .op = EXANET_COLL_SUM,
				 .count = 65536 / 8, .seed = 2500 + i, .src = region(self, 0),
				 .dst = region(self, 1) };

		bad += run_jobs(_metadata, self, &j, 1);
	}
	/* one error: a solo operation on memory the NI does not know */
	unreg = map_anon(4096);
	ASSERT_NE(NULL, unreg);
	if (!exanet_coll_start(solo, unreg, region(self, 1), 16, EXANET_COLL_INT32,
			       EXANET_COLL_SUM, NULL, 0)) {
		EXPECT_EQ(-EFAULT, exanet_coll_wait(solo, FAIL_TMO, NULL));
		failed = 1;		/* started, then failed in the NI */
	}
	munmap(unreg, 4096);
	/* everybody done: every block that had to move has moved */
	OOB_SYNC(&self->oob);
	ASSERT_EQ(0, ccnt_read(c1));
	for (k = 0; k < EXANET_COLL_NUM_COUNTERS; k++) {
		d[k] = c1[k] - c0[k];
		TH_LOG("rank %d: %s +%lld (now %lld)", self->rank, ccnt_names[k], d[k], c1[k]);
	}
	expected_blocks((uint32_t)self->nn, (uint32_t)self->rank, blocks * nops, &tx, &rx);
	EXPECT_EQ(nops + failed, d[EXANET_CCNT_OPS]);
	EXPECT_EQ(nops, d[EXANET_CCNT_DONE]);
	EXPECT_EQ(failed, d[EXANET_CCNT_ERRORS]);
	EXPECT_EQ(tx, d[EXANET_CCNT_TX_BLOCKS]);
	EXPECT_EQ(tx * EXANET_COLL_BLOCK_SIZE, d[EXANET_CCNT_TX_BYTES]);
	EXPECT_EQ(rx, d[EXANET_CCNT_RX_BLOCKS]);
	EXPECT_EQ(rx * EXANET_COLL_BLOCK_SIZE, d[EXANET_CCNT_RX_BYTES]);
	EXPECT_EQ(0, d[EXANET_CCNT_TIMEOUTS]);
	EXPECT_EQ(0, d[EXANET_CCNT_RX_REFUSED]);
	EXPECT_EQ(0, d[EXANET_CCNT_RX_BAD]);
	if (!lossy) {
		EXPECT_EQ(0, d[EXANET_CCNT_RX_CORRUPT]);
	} else {
		TH_LOG("lossy fabric: %lld retransmissions, %lld corrupt, %lld duplicates",
		       d[EXANET_CCNT_RETRANSMITS], d[EXANET_CCNT_RX_CORRUPT],
		       d[EXANET_CCNT_RX_DUPLICATES]);
	}
	agree(_metadata, self, bad, -1, 0, "counters");
}
