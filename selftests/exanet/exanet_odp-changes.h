/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_odp: the memory of a transfer changing under it: MADV_DONTNEED
 * and munmap, fork (COW), mremap, swap-out, MADV_FREE and reclaim, page
 * migration.
 *
 * Cases of the translation unit of exanet_odp.c: include it only there.
 */
#ifndef EXANET_ODP_C
#error "exanet_odp-changes.h holds cases of exanet_odp.c: include it only there"
#endif

/* Wait for slot's completion: 0 or the errno of its error. */
static int owait(struct rnode *n, unsigned int slot)
{
	struct exanet_rdma_notif rec;

	return rwait(n, slot, TMO, &rec);
}

/*
 * MADV_DONTNEED of the target while transfers run into it: each page ends
 * with zeros (its data landed before and was thrown away, or not at all)
 * or with its data (landed after, in the page the process sees), and the
 * transfer completes.  Then munmap mid-transfer: the transfer fails
 * (REMOTE_FAULT) or completes; memory mapped again at the same address
 * afterwards is never written by it.
 */
TEST(dontneed_and_munmap_during_transfers)
{
	const size_t len = 8u << 20;
	struct exanet_raddr dst;
	struct rnode a, b;
	int i, err, failed = 0;
	struct odp_cnt c0, c;

	NEED_ODP(&a, len, 1, 1);
	ASSERT_EQ(0, onode_up(&b, len, 0, 1));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c0));
	opat_fill(a.buf, len, 11);
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, opost(&a, 0, 0, a.buf, &dst, len, 0));
		usleep(2000 + 3000 * i);
		ASSERT_EQ(0, madvise(b.buf, len, MADV_DONTNEED));
		EXPECT_EQ(0, owait(&a, 0));
		EXPECT_EQ(-1, opat_pages_zero_or_data(b.buf, len, 11));
	}
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c));
	TH_LOG("invalidations %lld (%lld pages)", c.invalidations - c0.invalidations,
	       c.unmapped - c0.unmapped);
	EXPECT_LT(0, c.invalidations - c0.invalidations);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, opost(&a, 0, 0, a.buf, &dst, len, 0));
		usleep(2000 + 3000 * i);
		ASSERT_EQ(0, munmap(b.buf, len));
		err = owait(&a, 0);
		EXPECT_TRUE(err == 0 || err == -ENXIO);
		failed += err != 0;
		/* the same addresses again, with a sentinel */
		ASSERT_EQ(b.buf, mmap(b.buf, len, PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
		memset(b.buf, 0x5a, len);
		usleep(200000);
		EXPECT_EQ(1, bytes_equal(b.buf, len, 0x5a));
	}
	TH_LOG("munmap mid-transfer: %d of 8 transfers failed", failed);
	rnode_down(&b);
	rnode_down(&a);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

/*
 * fork() while a transfer writes into the parent: the parent sees every
 * byte (copy-on-write breaks in the parent when the NI writes again), the
 * child's memory does not change after the fork.
 */
TEST(fork_cow_during_transfer)
{
	const size_t len = 8u << 20;
	struct exanet_raddr dst;
	struct rnode a, b;
	int i, st;

	NEED_ODP(&a, len, 1, 1);
	ASSERT_EQ(0, onode_up(&b, len, 0, 1));
	opat_fill(a.buf, len, 21);
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	for (i = 0; i < 4; i++) {
		pid_t pid;

		memset(b.buf, 0, len);		/* private pages, not the zero page */
		ASSERT_EQ(0, opost(&a, 0, 0, a.buf, &dst, len, 0));
		usleep(3000 + 5000 * i);
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			uint8_t *snap = malloc(len);

			if (!snap)
				_exit(2);
			memcpy(snap, b.buf, len);
			usleep(1500000);
			_exit(memcmp(snap, b.buf, len) ? 1 : 0);
		}
		EXPECT_EQ(0, owait(&a, 0));
		EXPECT_EQ(-1, opat_check(b.buf, len, 21));
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFEXITED(st));
		EXPECT_EQ(0, WEXITSTATUS(st));	/* 1: the child's memory changed */
	}
	rnode_down(&b);
	rnode_down(&a);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

/*
 * mremap of the target (moved elsewhere) while a transfer writes into it.
 * The process then owns the moved pages at their new address and
 * overwrites them: the NI must not reach them any more through the old
 * addresses.  The old range, mapped again (fresh pages), holds per page
 * zeros or the data (it is still registered: the implicit registration
 * covers it); the transfer completes or fails with REMOTE_FAULT.
 */
TEST(mremap_during_transfers)
{
	const size_t len = 8u << 20;
	struct exanet_raddr dst;
	struct rnode a, b;
	uint8_t *moved;
	int i, err, failed = 0;

	NEED_ODP(&a, len, 1, 1);
	ASSERT_EQ(0, onode_up(&b, len, 0, 1));
	opat_fill(a.buf, len, 51);
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	for (i = 0; i < 6; i++) {
		/* somewhere else to move to (same size: mremap would not move) */
		moved = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, moved);
		ASSERT_EQ(0, opost(&a, 0, 0, a.buf, &dst, len, 0));
		usleep(2000 + 4000 * i);
		ASSERT_EQ(moved, mremap(b.buf, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, moved));
		memset(moved, 0x77, len);
		/* fresh (zero) pages at the old addresses, the CPU leaves them alone */
		ASSERT_EQ(b.buf, mmap(b.buf, len, PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0));
		err = owait(&a, 0);
		EXPECT_TRUE(err == 0 || err == -ENXIO);
		failed += err != 0;
		usleep(100000);
		EXPECT_EQ(1, bytes_equal(moved, len, 0x77));
		EXPECT_EQ(-1, opat_pages_zero_or_data(b.buf, len, 51));
		munmap(moved, len);
	}
	TH_LOG("mremap mid-transfer: %d of 6 transfers failed", failed);
	rnode_down(&b);
	rnode_down(&a);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

/* A zram swap device on the node, set up once: 0, or -1 (skip). */
static int ensure_swap(void)
{
	if (meminfo_kb("SwapTotal") > 0)
		return 0;
	if (exa_system("modprobe zram num_devices=1 >/dev/null 2>&1 && "
		       "echo 192M > /sys/block/zram0/disksize && "
		       "mkswap /dev/zram0 >/dev/null && swapon /dev/zram0"))
		return -1;
	return meminfo_kb("SwapTotal") > 0 ? 0 : -1;
}

/*
 * Source and target pushed out to swap while transfers run between them:
 * the kernel's reclaim invalidates the NI's mappings first, the NI faults
 * the pages back in, every byte arrives.
 */
TEST(swap_out_during_transfers)
{
	const size_t len = 8u << 20;
	long long out0, in0;
	struct odp_cnt c0, c;
	struct exanet_raddr dst;
	struct rnode a, b;
	long swapped = 0;
	int i;

	if (ensure_swap())
		SKIP_TEST("no swap device (zram) on this node");
	NEED_ODP(&a, len, 1, 1);
	ASSERT_EQ(0, onode_up(&b, len, 0, 1));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c0));
	out0 = vmstat_count("pswpout");
	in0 = vmstat_count("pswpin");
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	for (i = 0; i < 6; i++) {
		opat_fill(a.buf, len, 60 + i);
		ASSERT_EQ(0, madvise(a.buf, len, MADV_PAGEOUT));
		ASSERT_EQ(0, opost(&a, 0, 0, a.buf, &dst, len, 0));
		usleep(3000 + 4000 * i);
		ASSERT_EQ(0, madvise(b.buf, len, MADV_PAGEOUT));
		ASSERT_EQ(0, madvise(a.buf, len, MADV_PAGEOUT));
		EXPECT_EQ(0, owait(&a, 0));
		ASSERT_EQ(0, madvise(b.buf, len, MADV_PAGEOUT));
		swapped += pages_swapped(b.buf, len);
		EXPECT_EQ(-1, opat_check(b.buf, len, 60 + i));
	}
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c));
	/* pswpout is -1 - -1 on a kernel without VM event counters */
	TH_LOG("pswpout %lld pswpin %lld, target pages seen swapped out %ld, "
	       "target invalidations %lld", vmstat_count("pswpout") - out0,
	       vmstat_count("pswpin") - in0, swapped, c.invalidations - c0.invalidations);
	EXPECT_LT((long)(len / 4096), swapped);
	EXPECT_LT(0, c.invalidations - c0.invalidations);
	rnode_down(&b);
	rnode_down(&a);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

/*
 * MADV_FREE makes pages "lazy free": reclaim discards them unless they
 * are written again.  A write by the NI is a write: after it, reclaim
 * must keep the data (the driver dirties the pages it maps writable).
 */
TEST(lazyfree_memory_written_by_nic_survives_reclaim)
{
	const size_t len = 4u << 20;
	struct exanet_raddr dst;
	struct rnode a, b;
	int i;

	NEED_ODP(&a, len, 1, 1);
	ASSERT_EQ(0, onode_up(&b, len, 0, 1));
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	for (i = 0; i < 3; i++) {
		memset(b.buf, 0x11, len);
		/* the NI maps the pages (writable, while they are dirty) */
		opat_fill(a.buf, len, 70 + i);
		EXPECT_EQ(0, post_and_wait(&a, 0, 0, a.buf, &dst, len, 0, 1, TMO, NULL));
		EXPECT_EQ(-1, opat_check(b.buf, len, 70 + i));
		ASSERT_EQ(0, madvise(b.buf, len, MADV_FREE));
		/* the NI writes after MADV_FREE: the data must stay */
		opat_fill(a.buf, len, 80 + i);
		EXPECT_EQ(0, post_and_wait(&a, 0, 0, a.buf, &dst, len, 0, 2, TMO, NULL));
		ASSERT_EQ(0, madvise(b.buf, len, MADV_PAGEOUT));
		EXPECT_EQ(-1, opat_check(b.buf, len, 80 + i));
	}
	rnode_down(&b);
	rnode_down(&a);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

#ifndef MADV_SOFT_OFFLINE
#define MADV_SOFT_OFFLINE 101
#endif

/*
 * Page migration under a running transfer: soft offline moves the
 * contents of each page to a new frame (the kernel's migration path,
 * which invalidates the NI's mapping first).  Every byte lands in the
 * page the process sees; the frames really changed.
 */
TEST(migration_during_transfers)
{
	const size_t len = 2u << 20, part = 256u << 10;
	struct exanet_raddr dst;
	struct rnode a, b;
	long long mig0;
	int i, moved = 0;

	NEED_ODP(&a, len, 1, 1);
	ASSERT_EQ(0, onode_up(&b, len, 0, 1));
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	mig0 = vmstat_count("pgmigrate_success");
	for (i = 0; i < 4; i++) {
		uint64_t before[64], pfn;
		size_t k, off = (size_t)i * part;

		memset(b.buf, 0, len);	/* private frames to migrate */
		for (k = 0; k < 64; k++)
			before[k] = page_frame(b.buf + off + k * 4096);
		if (!before[0])
			SKIP_TEST("no page frames in /proc/self/pagemap (not root?)");
		opat_fill(a.buf, len, 90 + i);
		ASSERT_EQ(0, opost(&a, 0, 0, a.buf, &dst, len, 0));
		usleep(2000 + 3000 * i);
		if (madvise(b.buf + off, part, MADV_SOFT_OFFLINE)) {
			if (errno == EINVAL || errno == EPERM)
				SKIP_TEST("soft offline not available (%s)", strerror(errno));
			ASSERT_EQ(0, -errno);
		}
		EXPECT_EQ(0, owait(&a, 0));
		EXPECT_EQ(-1, opat_check(b.buf, len, 90 + i));
		for (k = 0; k < 64; k++) {
			pfn = page_frame(b.buf + off + k * 4096);
			moved += pfn && pfn != before[k];
		}
	}
	TH_LOG("%d of 256 pages moved to new frames, pgmigrate_success +%lld", moved,
	       vmstat_count("pgmigrate_success") - mig0);
	EXPECT_LE(128, moved);
	rnode_down(&b);
	rnode_down(&a);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}
