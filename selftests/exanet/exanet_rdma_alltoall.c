// SPDX-License-Identifier: GPL-2.0
/*
 * Four-node RDMA all-to-all (tests.list: nodes = 4): every rank writes a
 * distinct block into its slot of every other rank's buffer (with a
 * notification per block) and reads every other rank's source block back;
 * all blocks intact, every notification arrives.
 */
#include "exa_rdma.h"

#define BLK ((256u << 10) + 3)		/* odd length: unaligned tails */
#define SLOT (BLK + 13)

FIXTURE(a4) {
	struct oob oob;
	struct rnode n;
	struct rpub all[OOB_MAX_NODES];
	int rank, nn;
};

FIXTURE_SETUP(a4)
{
	struct rpub me;
	int err, errs[OOB_MAX_NODES], i;

	OOB_UP(&self->oob);
	self->rank = self->oob.rank;
	self->nn = self->oob.nnodes;
	if (self->nn < 3 || self->nn > 32)
		SKIP_TEST("needs 3..32 ranks");
	/* [0, nn*SLOT): receive slots; [nn*SLOT, 2*nn*SLOT): read targets */
	err = rnode_up(&self->n, 2 * (size_t)self->nn * SLOT + 4096, 1);
	ASSERT_EQ(0, oob_allgather(&self->oob, &err, errs, sizeof(err)));
	for (i = 0; i < self->nn; i++)
		if (errs[i] == -ENODEV)
			SKIP_TEST("no RDMA contexts");
	for (i = 0; i < self->nn; i++)
		ASSERT_EQ(0, errs[i]);
	rnode_pub(&self->n, &me);
	ASSERT_EQ(0, oob_allgather(&self->oob, &me, self->all, sizeof(me)));
}

FIXTURE_TEARDOWN(a4)
{
	oob_barrier(&self->oob);
	rnode_down(&self->n);
	oob_fini(&self->oob);
}

TEST_F_TIMEOUT(a4, all_to_all_write_then_read_back, 500)
{
	struct rnode *n = &self->n;
	uint8_t *src = n->buf + (size_t)self->nn * SLOT;	/* our source block */
	int d, got = 0;
	unsigned int slot = 0;
	int64_t end;

	memset(n->buf, GUARD, (size_t)self->nn * SLOT);
	rpat_fill(src, BLK, 0x4000 + self->rank);
	for (d = 0; d < NREC - REC_IN; d++)
		exanet_rdma_notif_reset(&n->rec[REC_IN + d]);
	ASSERT_EQ(0, oob_barrier(&self->oob));

	/* write our block into slot 'rank' of every peer, all in flight */
	for (d = 1; d < self->nn; d++) {
		int peer = (self->rank + d) % self->nn;
		struct exanet_raddr dst = raddr_at(self->all[peer].buf, (size_t)self->rank * SLOT);
		struct exanet_rdma_opts op = {
			.notify_va = raddr_at(self->all[peer].rec,
					      (REC_IN + self->rank) * 32).va,
			.tag = 0x4000 + self->rank, .lcomp = &n->rec[slot] };

		exanet_rdma_notif_reset(&n->rec[slot]);
		ASSERT_EQ((int)slot, exanet_rdma_post_write_on(n->rdma, slot, src, &dst, BLK,
								&op));
		slot++;
	}
	for (slot = 0; slot < (unsigned int)self->nn - 1; slot++) {
		struct exanet_rdma_notif rec;

		EXPECT_EQ(0, rwait(n, slot, 120 * SEC, &rec));
	}
	/* every peer's notification, then its data */
	end = exa_now_ms() + 120000;
	while (got < self->nn - 1 && exa_now_ms() < end) {
		for (d = 0; d < self->nn; d++) {
			struct exanet_rdma_notif rec;

			if (d == self->rank || !exanet_rdma_notif_poll(&n->rec[REC_IN + d], &rec))
				continue;
			EXPECT_EQ(0, rec.error);
			EXPECT_EQ(0x4000u + d, rec.tag);
			EXPECT_EQ(-1, rpat_check(n->buf + (size_t)d * SLOT, BLK, 0x4000 + d));
			EXPECT_EQ(1, bytes_equal(n->buf + (size_t)d * SLOT + BLK, SLOT - BLK, GUARD));
			got++;
		}
	}
	EXPECT_EQ(self->nn - 1, got);
	ASSERT_EQ(0, oob_barrier(&self->oob));

	/* read every peer's source block into our receive slots, all in flight */
	memset(n->buf, GUARD, (size_t)self->nn * SLOT);
	slot = EXANET_RDMA_RCHAN(0);
	for (d = 1; d < self->nn; d++) {
		int peer = (self->rank + d) % self->nn;
		struct exanet_raddr srcra = raddr_at(self->all[peer].buf, (size_t)self->nn * SLOT);
		struct exanet_rdma_opts op = { .lcomp = &n->rec[slot] };

		exanet_rdma_notif_reset(&n->rec[slot]);
		ASSERT_EQ((int)slot, exanet_rdma_post_read_on(n->rdma, slot,
							       n->buf + (size_t)peer * SLOT,
							       &srcra, BLK, &op));
		slot++;
	}
	for (slot = EXANET_RDMA_RCHAN(0); slot < EXANET_RDMA_RCHAN(0) + (unsigned int)self->nn - 1; slot++) {
		struct exanet_rdma_notif rec;

		EXPECT_EQ(0, rwait(n, slot, 120 * SEC, &rec));
	}
	for (d = 0; d < self->nn; d++)
		if (d != self->rank)
			EXPECT_EQ(-1, rpat_check(n->buf + (size_t)d * SLOT, BLK, 0x4000 + d));
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

TEST_HARNESS_MAIN
