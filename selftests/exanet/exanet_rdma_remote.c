// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA between two nodes (tests.list: nodes = 2): integrity of writes and
 * reads for 1 B .. 16 MiB with unaligned source, destination and length,
 * notification only after all data, many channels of several processes at
 * once, deregistration while in flight, processes killed mid-transfer on
 * either side (no leaked pinned pages, no oops).
 */
#include "exa_rdma.h"

#define BUFSZ (17u << 20)

FIXTURE(r2) {
	struct oob oob;
	struct rnode n;
	struct rpub peer;
	int rank;
};

FIXTURE_SETUP(r2)
{
	struct rpub all[2], me;
	int err;

	OOB_UP(&self->oob);
	self->rank = self->oob.rank;
	if (self->oob.nnodes != 2)
		SKIP_TEST("needs 2 ranks");
	err = rnode_up(&self->n, BUFSZ, 1);
	/* both ranks must agree on skipping */
	{
		int errs[2];

		ASSERT_EQ(0, oob_allgather(&self->oob, &err, errs, sizeof(err)));
		if (errs[0] == -ENODEV || errs[1] == -ENODEV)
			SKIP_TEST("no RDMA contexts");
		ASSERT_EQ(0, errs[0]);
		ASSERT_EQ(0, errs[1]);
	}
	rnode_pub(&self->n, &me);
	ASSERT_EQ(0, oob_allgather(&self->oob, &me, all, sizeof(me)));
	self->peer = all[1 - self->rank];
}

FIXTURE_TEARDOWN(r2)
{
	oob_barrier(&self->oob);
	rnode_down(&self->n);
	oob_fini(&self->oob);
}

struct xfer {
	size_t len, soff, doff;
};

static const struct xfer xfers[] = {
	{ 1, 0, 0 }, { 1, 3, 5 }, { 7, 1, 2 }, { 64, 0, 8 }, { 255, 9, 1 },
	{ 256, 0, 0 }, { 257, 255, 3 }, { 4095, 1, 4093 }, { 4096, 0, 0 },
	{ 4097, 4095, 1 }, { 16383, 7, 16381 }, { 16384, 0, 0 }, { 16385, 2, 6 },
	{ 65539, 4001, 12 }, { (1u << 20) + 5, 3, 4099 }, { 4u << 20, 0, 0 },
	{ (16u << 20) - 3, 1, 2 }, { 16u << 20, 0, 0 },
};
#define NX (sizeof(xfers) / sizeof(xfers[0]))

/*
 * Rank 0 writes into rank 1 with a notification; rank 1 waits for the
 * notification and checks, right then, every byte and the guards around:
 * the notification must come after all data.
 */
TEST_F_TIMEOUT(r2, write_integrity_notification_after_all_data, 600)
{
	unsigned int i;
	struct rnode *n = &self->n;

	for (i = 0; i < NX; i++) {
		const struct xfer *x = &xfers[i];
		uint32_t seed = 0x1000 + i;

		if (self->rank == 1) {
			memset(n->buf, GUARD, x->doff + x->len + 4096 < n->len ?
			       x->doff + x->len + 4096 : n->len);
			exanet_rdma_notif_reset(&n->rec[REC_IN]);
		} else {
			rpat_fill(n->buf + x->soff, x->len, seed);
		}
		ASSERT_EQ(0, oob_barrier(&self->oob));
		if (self->rank == 0) {
			struct exanet_raddr dst = raddr_at(self->peer.buf, x->doff);
			struct exanet_rdma_notif rec;

			EXPECT_EQ(0, post_and_wait(n, 0, EXANET_RDMA_WCHAN(i % 32), n->buf + x->soff,
						   &dst, x->len, raddr_at(self->peer.rec,
									  REC_IN * 32).va,
						   seed, 60 * SEC, &rec));
			EXPECT_EQ(x->len, rec.length);
			EXPECT_EQ(seed, rec.tag);
		} else {
			struct exanet_rdma_notif rec;
			long bad;

			ASSERT_EQ(1, exanet_rdma_notif_wait(&n->rec[REC_IN], &rec, 60 * SEC));
			bad = rpat_check(n->buf + x->doff, x->len, seed);
			if (bad >= 0)
				TH_LOG("len %zu soff %zu doff %zu: first bad byte %ld", x->len,
				       x->soff, x->doff, bad);
			EXPECT_EQ(-1, bad);
			EXPECT_EQ(1, bytes_equal(n->buf, x->doff, GUARD));
			EXPECT_EQ(1, bytes_equal(n->buf + x->doff + x->len,
						 x->doff + x->len + 4096 < n->len ? 4096 : 0, GUARD));
			EXPECT_EQ(0, rec.error);
			EXPECT_EQ(x->len, rec.length);
			EXPECT_EQ(seed, rec.tag);
			EXPECT_EQ(EXANET_RDMA_OP_WRITE, rec.op);
			EXPECT_EQ(self->peer.node, rec.node);
		}
		ASSERT_EQ(0, oob_barrier(&self->oob));
	}
}

/* Rank 1 reads from rank 0 (the responder is rank 0). */
TEST_F_TIMEOUT(r2, read_integrity_unaligned, 600)
{
	unsigned int i;
	struct rnode *n = &self->n;

	for (i = 0; i < NX; i++) {
		const struct xfer *x = &xfers[i];
		uint32_t seed = 0x2000 + i;

		if (self->rank == 0)
			rpat_fill(n->buf + x->soff, x->len, seed);
		else
			memset(n->buf, GUARD, x->doff + x->len + 4096 < n->len ?
			       x->doff + x->len + 4096 : n->len);
		ASSERT_EQ(0, oob_barrier(&self->oob));
		if (self->rank == 1) {
			struct exanet_raddr src = raddr_at(self->peer.buf, x->soff);
			struct exanet_rdma_notif rec;
			long bad;

			exanet_rdma_notif_reset(&n->rec[REC_IN]);
			EXPECT_EQ(0, post_and_wait(n, 1, EXANET_RDMA_RCHAN(i % 32), n->buf + x->doff,
						   &src, x->len, (uintptr_t)&n->rec[REC_IN], seed,
						   60 * SEC, NULL));
			ASSERT_EQ(1, exanet_rdma_notif_wait(&n->rec[REC_IN], &rec, 10 * SEC));
			EXPECT_EQ(0, rec.error);
			EXPECT_EQ(EXANET_RDMA_OP_READ, rec.op);
			bad = rpat_check(n->buf + x->doff, x->len, seed);
			if (bad >= 0)
				TH_LOG("len %zu: first bad byte %ld", x->len, bad);
			EXPECT_EQ(-1, bad);
			EXPECT_EQ(1, bytes_equal(n->buf, x->doff, GUARD));
		}
		ASSERT_EQ(0, oob_barrier(&self->oob));
	}
}

/*
 * Several processes on rank 0, each with its own page and rank, keep all
 * their write channels busy into disjoint regions of rank 1's buffer.
 */
#define NPROC 3
#define NCH 8
#define CHUNK (64u << 10)

struct cc_arg {
	struct rpub peer;
	int idx;
};

static int cc_child(void *p)
{
	struct cc_arg *a = p;
	struct rnode n;
	unsigned int c, round;

	if (rnode_up(&n, NCH * CHUNK, 1))
		return 30;
	for (round = 0; round < 4; round++) {
		for (c = 0; c < NCH; c++) {
			struct exanet_rdma_opts op = { .tag = c, .lcomp = &n.rec[c] };
			struct exanet_raddr dst = raddr_at(a->peer.buf,
							   ((size_t)a->idx * NCH + c) * CHUNK);

			rpat_fill(n.buf + c * CHUNK, CHUNK, 0x3000 + a->idx * NCH + c + round);
			exanet_rdma_notif_reset(&n.rec[c]);
			if (exanet_rdma_post_write_on(n.rdma, c, n.buf + c * CHUNK, &dst, CHUNK,
						      &op) < 0)
				return 31;
		}
		for (c = 0; c < NCH; c++)
			if (rwait(&n, c, 60 * SEC, &(struct exanet_rdma_notif){ 0 }))
				return 32;
	}
	rnode_down(&n);
	return 0;
}

TEST_F_TIMEOUT(r2, many_channels_of_several_processes, 300)
{
	if (self->rank == 0) {
		struct cc_arg args[NPROC];
		pid_t pids[NPROC];
		int i;

		for (i = 0; i < NPROC; i++) {
			args[i].peer = self->peer;
			args[i].idx = i;
			pids[i] = exa_spawn_in_pdid(0, cc_child, &args[i]);
			ASSERT_LT(0, pids[i]);
		}
		for (i = 0; i < NPROC; i++)
			EXPECT_EQ(0, exa_wait_child(pids[i], 240000));
	}
	ASSERT_EQ(0, oob_barrier(&self->oob));
	if (self->rank == 1) {
		int i, c;

		for (i = 0; i < NPROC; i++)
			for (c = 0; c < NCH; c++)
				EXPECT_EQ(-1, rpat_check(self->n.buf + ((size_t)i * NCH + c) * CHUNK,
							 CHUNK, 0x3000 + i * NCH + c + 3));
	}
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}


/*
 * Keep 4 write channels (slots 12..15) busy with len-byte writes into
 * dst for ms milliseconds (or 4 read channels with reads of it into our
 * buffer, each checked for bytes of value stale when it completed); count
 * completions, errors by code and stale reads.
 */
struct stream_stats {
	long done, errors, by_code[16], stale;
};

static void stream_rdma(struct rnode *n, const struct exanet_raddr *dst, size_t len,
			int ms, struct stream_stats *st, int read, uint8_t stale)
{
	int64_t end = exa_now_ms() + ms;
	unsigned int c;
	int active[4] = { 0 };

	memset(st, 0, sizeof(*st));
	for (;;) {
		int busy = 0;

		for (c = 0; c < 4; c++) {
			unsigned int slot = read ? EXANET_RDMA_RCHAN(12 + c) : 12 + c;
			uint8_t *buf = n->buf + (read ? c * len : 0);
			struct exanet_rdma_notif rec;

			if (active[c]) {
				uint64_t s = exanet_rdma_status(n->rdma, slot);

				if (EXANET_RDMA_ST_STATE(s) == EXANET_RDMA_ONGOING) {
					busy = 1;
					continue;
				}
				active[c] = 0;
				if (EXANET_RDMA_ST_STATE(s) == EXANET_RDMA_DONE) {
					st->done++;
					st->stale += read && memchr(buf, stale, len);
				} else {
					st->errors++;
					st->by_code[EXANET_RDMA_ST_ERROR(s) & 15]++;
				}
				exanet_rdma_notif_poll(&n->rec[slot], &rec);
			}
			if (exa_now_ms() < end) {
				struct exanet_rdma_opts op = { .lcomp = &n->rec[slot] };

				int r = read ? exanet_rdma_post_read_on(n->rdma, slot, buf, dst, len,
									&op) :
					       exanet_rdma_post_write_on(n->rdma, slot, buf, dst, len,
									 &op);

				if (r == (int)slot) {
					active[c] = 1;
					busy = 1;
				}
			}
		}
		if (!busy && exa_now_ms() >= end)
			break;
		usleep(100);
	}
}

/*
 * Rank 1 deregisters a region while rank 0 writes into it (reads it), then
 * rewrites it: nothing may land after the deregistration returned, and no
 * read that completed may carry a byte written after it.  With direct
 * delivery (Documentation/fabric.md section 9) the initiator's NI reaches
 * the region through translations the target's NI cached: the driver's
 * fence after the unmap must end them.
 */
static void dereg_race(struct __test_metadata *_metadata, FIXTURE_DATA(r2) *self, size_t len,
		       int read)
{
	struct rnode *n = &self->n;
	uint8_t *region = map_anon(len);
	struct exanet_mr *mr = NULL;
	uint8_t wire[EXANET_RADDR_WIRE_SIZE], all[2][EXANET_RADDR_WIRE_SIZE];
	long base = exa_sysfs_long("rdma_registered_pages");

	ASSERT_NE(NULL, region);
	memset(wire, 0, sizeof(wire));
	if (self->rank == 1) {
		struct exanet_raddr ra;

		memset(region, 0x55, len);
		ASSERT_EQ(0, exanet_reg_mr(n->dev, region, len, 0, &mr));
		ASSERT_EQ(0, exanet_mr_raddr(mr, region, &ra));
		ASSERT_EQ(0, exanet_raddr_encode(&ra, wire));
	}
	ASSERT_EQ(0, oob_allgather(&self->oob, wire, all, sizeof(wire)));
	if (self->rank == 0) {
		struct exanet_raddr peer = raddr_at(all[1], 0);
		struct stream_stats st;

		memset(n->buf, 0x77, len);
		ASSERT_EQ(0, oob_barrier(&self->oob));		/* go */
		stream_rdma(n, &peer, len, 2500, &st, read, 0x99);
		TH_LOG("%s while the target deregistered: %ld done, %ld failed (%ld remote "
		       "DMA fault), %ld read what it wrote after", read ? "reads" : "writes",
		       st.done, st.errors, st.by_code[EXANET_RDMA_E_REMOTE_DMA], st.stale);
		EXPECT_LT(0, st.done);
		EXPECT_LT(0, st.errors);
		if (!read)
			EXPECT_EQ(st.errors, st.by_code[EXANET_RDMA_E_REMOTE_DMA]);
		EXPECT_EQ(0, st.stale);
		ASSERT_EQ(0, oob_barrier(&self->oob));		/* transfers over */
	} else {
		ASSERT_EQ(0, oob_barrier(&self->oob));
		usleep(700000);					/* mid-stream */
		ASSERT_EQ(0, exanet_dereg_mr(mr));
		memset(region, 0x99, len);			/* given back: ours again */
		EXPECT_EQ(base, exa_sysfs_long("rdma_registered_pages"));
		ASSERT_EQ(0, oob_barrier(&self->oob));
		EXPECT_EQ(1, bytes_equal(region, len, 0x99));
	}
	munmap(region, len);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

TEST_F_TIMEOUT(r2, dereg_while_in_flight_no_late_dma, 300)
{
	dereg_race(_metadata, self, 16u << 20, 0);
}

TEST_F_TIMEOUT(r2, dereg_while_reading_no_late_read, 300)
{
	dereg_race(_metadata, self, 1u << 20, 1);
}

/*
 * A process is SIGKILLed while RDMA is in flight: on rank 1 the target of
 * rank 0's writes, on rank 0 an initiator.  Afterwards no pinned page, rank
 * or RDMA page is left behind and the kernel log is clean.
 */
struct victim_arg {
	struct rpub peer;
	int pipefd;
	int initiator;
};

static int victim(void *p)
{
	struct victim_arg *a = p;
	struct rnode n;
	struct rpub me;
	unsigned int c;

	if (rnode_up(&n, 16u << 20, a->initiator))
		return 40;
	rnode_pub(&n, &me);
	if (write(a->pipefd, &me, sizeof(me)) != sizeof(me))
		return 41;
	if (a->initiator) {
		for (;;)
			for (c = 0; c < 4; c++) {
				struct exanet_raddr dst = raddr_at(a->peer.buf, c * (4u << 20));

				exanet_rdma_post_write_on(n.rdma, c, n.buf + c * (4u << 20), &dst,
							  4u << 20, NULL);
			}
	}
	for (;;)
		pause();
	return 0;
}

TEST_F_TIMEOUT(r2, killed_process_mid_transfer_leaks_nothing, 300)
{
	struct rnode *n = &self->n;
	long pages0 = exa_sysfs_long("rdma_registered_pages");
	long ranks0 = exa_sysfs_long("rdma_ranks_in_use");
	long rpages0 = exa_sysfs_long("rdma_pages_in_use");
	long mem0 = meminfo_kb("MemFree");
	struct victim_arg va;
	struct rpub vpub, all[2];
	int p[2];
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	va.peer = self->peer;
	va.pipefd = p[1];
	va.initiator = self->rank == 0;
	pid = exa_spawn_in_pdid(0, victim, &va);
	ASSERT_LT(0, pid);
	ASSERT_EQ((ssize_t)sizeof(vpub), read(p[0], &vpub, sizeof(vpub)));
	EXPECT_EQ(pages0 + 4096 + 1, exa_sysfs_long("rdma_registered_pages"));
	ASSERT_EQ(0, oob_allgather(&self->oob, &vpub, all, sizeof(vpub)));
	if (self->rank == 0) {
		/* stream writes into rank 1's victim while both victims die */
		struct exanet_raddr dst = raddr_at(all[1].buf, 0);
		struct stream_stats st;

		ASSERT_EQ(0, oob_barrier(&self->oob));
		stream_rdma(n, &dst, 4u << 20, 2500, &st, 0, 0);
		TH_LOG("writes into the killed target: %ld done, %ld failed (%ld context gone, "
		       "%ld DMA fault)", st.done, st.errors, st.by_code[EXANET_RDMA_E_REMOTE_CTX],
		       st.by_code[EXANET_RDMA_E_REMOTE_DMA]);
		EXPECT_LT(0, st.errors);
		EXPECT_EQ(st.errors, st.by_code[EXANET_RDMA_E_REMOTE_CTX] +
			  st.by_code[EXANET_RDMA_E_REMOTE_DMA] + st.by_code[EXANET_RDMA_E_PDID]);
	} else {
		ASSERT_EQ(0, oob_barrier(&self->oob));
		usleep(300000);
		kill(pid, SIGKILL);
	}
	if (self->rank == 0)
		kill(pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, exa_wait_child(pid, 30000));
	ASSERT_EQ(0, oob_barrier(&self->oob));
	usleep(300000);
	EXPECT_EQ(pages0, exa_sysfs_long("rdma_registered_pages"));
	EXPECT_EQ(ranks0, exa_sysfs_long("rdma_ranks_in_use"));
	EXPECT_EQ(rpages0, exa_sysfs_long("rdma_pages_in_use"));
	EXPECT_EQ(0, exa_sysfs_long("rdma_active_channels") > 4 ? 1 : 0);
	/* the victim's 16 MiB are back (allow for noise) */
	if (meminfo_kb("MemFree") < mem0 - 8192)
		TH_LOG("MemFree %ld kB before, %ld kB after", mem0, meminfo_kb("MemFree"));
	EXPECT_LE(mem0 - 8192, meminfo_kb("MemFree"));
	EXPECT_EQ(0, exa_kmsg_bad_lines());
	close(p[0]);
	close(p[1]);
}

TEST_HARNESS_MAIN
