/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_odp: load: pinned and on-demand registrations side by side, a
 * fault storm, a target killed with faults pending, 256 MiB between the
 * nodes with RLIMIT_MEMLOCK 0.
 *
 * Cases of the translation unit of exanet_odp.c: include it only there.
 */
#ifndef EXANET_ODP_C
#error "exanet_odp-load.h holds cases of exanet_odp.c: include it only there"
#endif

/* Pinned and on-demand registrations of one process, also overlapping. */
TEST(pinned_and_on_demand_side_by_side)
{
	const size_t len = 4u << 20;
	long pages0 = reg_pages();
	struct exanet_mr *pin, *pin2;
	struct exanet_raddr dst;
	struct rnode a, b;
	uint8_t *x;

	NEED_ODP(&a, len, 1, 1);
	ASSERT_EQ(0, onode_up(&b, len, 0, 0));
	x = map_anon(len);
	ASSERT_NE(NULL, x);
	memset(x, 0, len);
	ASSERT_EQ(0, exanet_reg_mr(b.dev, x, len, 0, &pin));
	EXPECT_EQ(pages0 + (long)(len / 4096), reg_pages());
	EXPECT_EQ((long)(len / 1024), vm_pin_kb());
	opat_fill(a.buf, len, 31);
	/* into the pinned range, then into the on-demand one */
	ASSERT_EQ(0, exanet_mr_raddr(pin, x, &dst));
	EXPECT_EQ(0, post_and_wait(&a, 0, 0, a.buf, &dst, len, 0, 1, TMO, NULL));
	EXPECT_EQ(-1, opat_check(x, len, 31));
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	EXPECT_EQ(0, post_and_wait(&a, 0, 1, a.buf, &dst, len, 0, 2, TMO, NULL));
	EXPECT_EQ(-1, opat_check(b.buf, len, 31));
	/* pin what is mapped on demand: the pinned pages take over */
	ASSERT_EQ(0, exanet_reg_mr(b.dev, b.buf, len, 0, &pin2));
	opat_fill(a.buf, len, 32);
	EXPECT_EQ(0, post_and_wait(&a, 0, 2, a.buf, &dst, len, 0, 3, TMO, NULL));
	EXPECT_EQ(-1, opat_check(b.buf, len, 32));
	/* unpinned again: on demand from then on */
	EXPECT_EQ(0, exanet_dereg_mr(pin2));
	opat_fill(a.buf, len, 33);
	EXPECT_EQ(0, post_and_wait(&a, 0, 3, a.buf, &dst, len, 0, 4, TMO, NULL));
	EXPECT_EQ(-1, opat_check(b.buf, len, 33));
	/* the pinned one is outside the on-demand registration of b */
	EXPECT_EQ(0, exanet_dereg_mr(pin));
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	dst.va = (uintptr_t)x;
	EXPECT_EQ(-ENXIO, post_and_wait(&a, 0, 4, a.buf, &dst, len, 0, 5, TMO, NULL));
	EXPECT_EQ(pages0, reg_pages());
	EXPECT_EQ(0, vm_pin_kb());
	munmap(x, len);
	rnode_down(&b);
	rnode_down(&a);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

/* 32 channels at once into fresh memory: thousands of faults. */
TEST(fault_storm_many_channels)
{
	const size_t chunk = 2u << 20, nch = EXANET_RDMA_WCHANS;
	struct odp_cnt c0, c;
	struct rnode a, b;
	unsigned int i;
	int64_t t0;

	NEED_ODP(&a, chunk, 1, 1);
	ASSERT_EQ(0, onode_up(&b, chunk * nch, 0, 1));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c0));
	opat_fill(a.buf, chunk, 41);
	t0 = exa_now_ms();
	for (i = 0; i < nch; i++) {
		struct exanet_raddr dst;

		ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf + i * chunk, &dst));
		ASSERT_EQ(0, opost(&a, 0, i, a.buf, &dst, chunk, 0));
	}
	for (i = 0; i < nch; i++)
		EXPECT_EQ(0, owait(&a, i));
	for (i = 0; i < nch; i++)
		EXPECT_EQ(-1, opat_check(b.buf + i * chunk, chunk, 41));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c));
	TH_LOG("%lld target faults in %lld ms", c.faults - c0.faults,
	       (long long)(exa_now_ms() - t0));
	EXPECT_LE((long long)(chunk * nch / ODP_PREFETCH_MAX), c.faults - c0.faults);
	rnode_down(&b);
	rnode_down(&a);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

static int victim(void *arg)
{
	int fd = *(int *)arg;
	struct rnode v;
	struct rpub pub;

	if (onode_up(&v, 64u << 20, 0, 1))
		return 20;
	rnode_pub(&v, &pub);
	if (write(fd, &pub, sizeof(pub)) != sizeof(pub))
		return 21;
	for (;;)
		pause();
}

/* The target is killed while its faults are pending: clean errors. */
TEST(target_killed_with_faults_pending)
{
	const size_t len = 64u << 20;
	long ranks0 = exa_sysfs_long("rdma_ranks_in_use");
	struct exanet_raddr dst;
	struct odp_cnt c;
	struct rpub pub;
	struct rnode a;
	int p[2], i, err, errors = 0;
	pid_t pid;

	NEED_ODP(&a, len, 1, 1);
	opat_fill(a.buf, 1u << 20, 51);
	ASSERT_EQ(0, pipe(p));
	pid = exa_spawn_in_pdid(0, victim, &p[1]);
	ASSERT_LT(0, pid);
	ASSERT_EQ((ssize_t)sizeof(pub), read(p[0], &pub, sizeof(pub)));
	dst = raddr_at(pub.buf, 0);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, opost(&a, 0, i, a.buf, &dst, len / 4, 0));
		dst.va += len / 4;
	}
	/*
	 * Kill it as soon as its rank has resolved a fault: a fault maps at
	 * most ODP_PREFETCH_MAX, so most of the 64 MiB is still to fault
	 * then, however fast faults are.
	 */
	for (i = 0; i < 20000; i++) {
		if (!odp_cnt(pub.rank, &c) && c.faults > 0)
			break;
		usleep(500);
	}
	EXPECT_LT(0, c.faults);
	kill(pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, exa_wait_child(pid, 30000));
	for (i = 0; i < 4; i++) {
		err = owait(&a, i);
		EXPECT_NE(-ETIMEDOUT, err);
		errors += err != 0;
		if (err)
			TH_LOG("transfer %d: %d (%s)", i, err, strerror(-err));
	}
	EXPECT_LT(0, errors);
	/* the victim's file is released once the fault worker let go of it */
	for (i = 0; i < 100 && exa_sysfs_long("rdma_ranks_in_use") != ranks0 + 1; i++)
		usleep(100000);
	EXPECT_EQ(ranks0 + 1, exa_sysfs_long("rdma_ranks_in_use"));	/* a's rank */
	ASSERT_EQ(0, odp_cnt(pub.rank, &c));
	EXPECT_EQ(0, c.mapped);		/* the victim's pages are unmapped */
	rnode_down(&a);
	close(p[0]);
	close(p[1]);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

/* ------------------------------------------------------------ 2 nodes */

FIXTURE(o2) {
	struct oob oob;
	int rank;
};

FIXTURE_SETUP(o2)
{
	OOB_UP(&self->oob);
	self->rank = self->oob.rank;
	if (self->oob.nnodes != 2)
		SKIP_TEST("needs 2 ranks");
}

FIXTURE_TEARDOWN(o2)
{
	oob_barrier(&self->oob);
	oob_fini(&self->oob);
}

/* Drop CAP_IPC_LOCK (root would bypass RLIMIT_MEMLOCK) and set it to 0. */
static int memlock_zero(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	struct rlimit rl = { 0, 0 };

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0;
}

/*
 * 256 MiB written from node 0 into a never-touched buffer of node 1, then
 * read back by node 0 into a never-touched buffer, both with
 * RLIMIT_MEMLOCK 0: data right, faults counted, nothing pinned.
 */
TEST_F_TIMEOUT(o2, write_read_256MiB_never_touched_memlock_0, 1200)
{
	const char *mb = getenv("EXA_ODP_BIG_MB");	/* debugging: smaller runs */
	const size_t len = (mb ? strtoul(mb, NULL, 0) : 256) << 20;
	long pages0 = reg_pages();
	int errs[2], err;
	struct rpub me, all[2];
	struct odp_cnt c0, c;
	struct exanet_mr *pinned;
	struct rnode n;
	int64_t t0;

	ASSERT_EQ(0, memlock_zero());
	/* first-touch transfers of 256 MiB take minutes under TCG */
	self->oob.timeout_ms = 900000;
	err = onode_up(&n, len, self->rank == 0, 1);
	ASSERT_EQ(0, oob_allgather(&self->oob, &err, errs, sizeof(err)));
	if (errs[0] == -ENODEV || errs[1] == -ENODEV)
		SKIP_TEST("no RDMA contexts / on-demand paging");
	ASSERT_EQ(0, errs[0]);
	ASSERT_EQ(0, errs[1]);
	/* the limit is in force: pinning even one page fails */
	EXPECT_EQ(-ENOMEM, exanet_reg_mr(n.dev, n.rec, 4096, 0, &pinned));
	ASSERT_EQ(0, odp_cnt(n.mr->rank, &c0));
	rnode_pub(&n, &me);
	ASSERT_EQ(0, oob_allgather(&self->oob, &me, all, sizeof(me)));
	if (self->rank == 0) {
		struct exanet_raddr dst = raddr_at(all[1].buf, 0);

		opat_fill(n.buf, len, 61);
		t0 = exa_now_ms();
		EXPECT_EQ(0, post_and_wait(&n, 0, 0, n.buf, &dst, len,
					   raddr_at(all[1].rec, REC_IN * 32).va, 61, 600 * SEC,
					   NULL));
		TH_LOG("write 256 MiB into fresh memory: %lld ms", (long long)(exa_now_ms() - t0));
		ASSERT_EQ(0, oob_barrier(&self->oob));	/* checked */
		/* read it back into fresh memory */
		ASSERT_EQ(0, munmap(n.buf, len));
		n.buf = map_anon(len);
		ASSERT_NE(NULL, n.buf);
		t0 = exa_now_ms();
		EXPECT_EQ(0, post_and_wait(&n, 1, EXANET_RDMA_RCHAN(0), n.buf, &dst, len,
					   (uintptr_t)&n.rec[REC_IN], 62, 600 * SEC, NULL));
		TH_LOG("read 256 MiB into fresh memory: %lld ms", (long long)(exa_now_ms() - t0));
		EXPECT_EQ(1, exanet_rdma_notif_poll(&n.rec[REC_IN], NULL));
		EXPECT_EQ(-1, opat_check(n.buf, len, 61));
		ASSERT_EQ(0, oob_barrier(&self->oob));
	} else {
		struct exanet_rdma_notif rec;
		int64_t end = exa_now_ms() + 600000;

		while (exanet_rdma_notif_poll(&n.rec[REC_IN], &rec) != 1 && exa_now_ms() < end)
			usleep(1000);
		EXPECT_EQ(len, rec.length);
		EXPECT_EQ(-1, opat_check(n.buf, len, 61));
		ASSERT_EQ(0, oob_barrier(&self->oob));
		ASSERT_EQ(0, oob_barrier(&self->oob));	/* read done */
	}
	ASSERT_EQ(0, odp_cnt(n.mr->rank, &c));
	TH_LOG("rank %u: %lld faults, %lld pages mapped", n.mr->rank, c.faults - c0.faults,
	       c.mapped);
	EXPECT_LE((long long)(len / ODP_PREFETCH_MAX), c.faults - c0.faults);
	EXPECT_LE((long long)(len / 4096), c.mapped);
	EXPECT_EQ(0, vm_pin_kb());
	EXPECT_EQ(pages0, reg_pages());
	rnode_down(&n);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}
