// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA without page pinning (on-demand paging, tests.list: nodes = 2).
 * The single-node cases run on every node independently (two open files of
 * one process = two ranks, loopback); the cross-node cases use the oob.
 *
 * - registration pins nothing, charges nothing to RLIMIT_MEMLOCK
 * - write / read between never-touched buffers (loopback 32 MiB, and
 *   256 MiB between the nodes with RLIMIT_MEMLOCK 0 and no CAP_IPC_LOCK):
 *   data right, faults counted, VmPin 0, driver's pinned counter unchanged
 * - memory the process may not access (read-only, PROT_NONE, unmapped, as
 *   target, as source, as read destination): error completion with the
 *   documented code, nothing written, no oops, the engine still works
 * - MADV_DONTNEED and munmap of the target during transfers: every page
 *   holds zeros or its data, never anything else; a region mapped again at
 *   the same address is never written by the old transfer
 * - fork during a transfer (COW): the parent gets all the data, the
 *   child's memory never changes after the fork
 * - mremap of the target during transfers: the moved pages hold zeros or
 *   their data, the old addresses (mapped again) are never written
 * - swap-out (MADV_PAGEOUT to a zram swap device) of source and target
 *   during transfers: every byte arrives, pages really went to swap
 * - MADV_FREE'd memory written by the NI survives reclaim (the NI's write
 *   counts as a write: the page is not discarded as clean)
 * - page migration (soft offline: contents move to a new frame) of the
 *   target during transfers: every byte lands in the page the process sees
 * - pinned and on-demand registrations side by side in one process
 * - transparent huge pages of the target mapped whole (one IOMMU
 *   superpage each), dropped when the kernel splits one under a transfer:
 *   a page punched out and mapped again gets the next transfer's data
 * - a fault storm (32 channels into fresh memory at once)
 * - the target process killed with faults pending: no leak, no oops
 */
#include "odp_test.h"
#include <linux/capability.h>
#include <sys/syscall.h>

#define LB_LEN (32u << 20)
#define TMO (120 * SEC)

static long reg_pages(void)
{
	return exa_sysfs_long("rdma_registered_pages");
}

/* The longest plain TEST() of this file may take 600 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 600

/* Registrations on demand pin nothing, whatever their size. */
TEST(registration_pins_nothing)
{
	long pages0 = reg_pages(), pin0 = vm_pin_kb();
	struct exanet_mr *big, *imp;
	struct rnode n;
	uint8_t *huge;

	NEED_ODP(&n, 1u << 20, 0, 0);
	huge = mmap(NULL, 1ull << 34, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, huge);
	/* 16 GiB of address space, not even accessible: fine on demand */
	ASSERT_EQ(0, exanet_reg_mr(n.dev, huge, 1ull << 34, EXANET_MR_ON_DEMAND, &big));
	ASSERT_EQ(0, exanet_reg_mr_implicit(n.dev, 0, &imp));
	EXPECT_EQ(pages0, reg_pages());
	EXPECT_EQ(pin0, vm_pin_kb());
	EXPECT_EQ(0, vm_pin_kb());
	/* bad input */
	EXPECT_EQ(-EINVAL, exanet_reg_mr(n.dev, NULL, 0, 0, &big));
	EXPECT_EQ(-EINVAL, exanet_reg_mr(n.dev, NULL, 4096, EXANET_MR_ON_DEMAND, &big));
	EXPECT_EQ(-EINVAL, exanet_reg_mr(n.dev, (void *)(1ull << 47), 4096,
					 EXANET_MR_ON_DEMAND, &big));
	EXPECT_EQ(-EINVAL, exanet_reg_mr(n.dev, n.buf, 4096, 0x40 | EXANET_MR_ON_DEMAND, &big));
	{
		struct exanet_reg_mr req = { .addr = 0xfffffffffffff000ull, .len = 8192,
					     .access = EXANET_MR_ON_DEMAND };

		EXPECT_EQ(-EINVAL, ioctl(exanet_dev_fd(n.dev), EXANET_IOC_REG_MR, &req) < 0 ?
			  -errno : 0);
		req.addr = 4096;
		req.len = 1ull << 47;
		EXPECT_EQ(-EINVAL, ioctl(exanet_dev_fd(n.dev), EXANET_IOC_REG_MR, &req) < 0 ?
			  -errno : 0);
	}
	EXPECT_EQ(0, exanet_dereg_mr(imp));
	rnode_down(&n);
	munmap(huge, 1ull << 34);
	EXPECT_EQ(pages0, reg_pages());
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

/* Loopback write and read between fresh buffers of two ranks. */
TEST(loopback_write_read_fresh_buffers)
{
	long pages0 = reg_pages();
	struct odp_cnt ca0, cb0, ca, cb;
	struct exanet_rdma_notif rec;
	struct exanet_raddr dst;
	struct rnode a, b;
	uint8_t *back;

	NEED_ODP(&a, LB_LEN, 1, 1);
	ASSERT_EQ(0, onode_up(&b, LB_LEN + 65536, 0, 0));
	back = map_anon(LB_LEN);
	ASSERT_NE(NULL, back);
	ASSERT_EQ(0, odp_cnt(a.mr->rank, &ca0));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &cb0));
	opat_fill(a.buf, LB_LEN, 7);	/* touched by the CPU, never by the NI */
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf + 4096, &dst));
	ASSERT_EQ(0, post_and_wait(&a, 0, EXANET_RDMA_WCHAN(0), a.buf, &dst, LB_LEN,
				   (uintptr_t)&b.rec[REC_IN], 1, TMO, &rec));
	EXPECT_EQ(1, exanet_rdma_notif_poll(&b.rec[REC_IN], &rec));
	EXPECT_EQ(LB_LEN, rec.length);
	EXPECT_EQ(-1, opat_check(b.buf + 4096, LB_LEN, 7));
	EXPECT_EQ(1, bytes_equal(b.buf, 4096, 0));
	EXPECT_EQ(1, bytes_equal(b.buf + 4096 + LB_LEN, 65536 - 4096, 0));
	/* and back into memory nobody touched */
	ASSERT_EQ(0, post_and_wait(&a, 1, EXANET_RDMA_RCHAN(0), back, &dst, LB_LEN,
				   (uintptr_t)&a.rec[REC_IN], 2, TMO, NULL));
	EXPECT_EQ(1, exanet_rdma_notif_poll(&a.rec[REC_IN], NULL));
	EXPECT_EQ(-1, opat_check(back, LB_LEN, 7));
	ASSERT_EQ(0, odp_cnt(a.mr->rank, &ca));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &cb));
	TH_LOG("faults: initiator %lld (mapped %lld), target %lld (mapped %lld)",
	       ca.faults - ca0.faults, ca.mapped, cb.faults - cb0.faults, cb.mapped);
	/*
	 * Every page of source, destination and read-back was faulted in;
	 * a fault maps at most ODP_PREFETCH_MAX (the access and what follows).
	 */
	EXPECT_LE(LB_LEN / ODP_PREFETCH_MAX, ca.faults - ca0.faults);
	EXPECT_LE(LB_LEN / ODP_PREFETCH_MAX, cb.faults - cb0.faults);
	/*
	 * and not one per 16 KiB block: the NI holds the blocks that follow
	 * a fault on it, the driver maps the rest of the transfer with it
	 */
	EXPECT_GE(LB_LEN / (64u << 10), cb.faults - cb0.faults);
	EXPECT_GE(2 * LB_LEN / (64u << 10), ca.faults - ca0.faults);
	EXPECT_LE(2 * LB_LEN / 4096, ca.mapped);
	EXPECT_LE(LB_LEN / 4096, cb.mapped);
	EXPECT_EQ(0, vm_pin_kb());
	EXPECT_EQ(pages0, reg_pages());
	{
		unsigned int ra = a.mr->rank, rb = b.mr->rank;

		rnode_down(&b);
		rnode_down(&a);
		/* the files are closed: nothing stays mapped for the ranks */
		ASSERT_EQ(0, odp_cnt(ra, &ca));
		ASSERT_EQ(0, odp_cnt(rb, &cb));
		EXPECT_EQ(0, ca.mapped);
		EXPECT_EQ(0, cb.mapped);
	}
	munmap(back, LB_LEN);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"

/* The node's THP mode ("always [madvise] never" -> "madvise"), 0 or -1. */
static int thp_mode(char *mode, size_t n)
{
	char line[128], *l, *r;
	FILE *f = fopen(THP_ENABLED, "re");

	if (!f)
		return -1;
	l = fgets(line, sizeof(line), f);
	fclose(f);
	if (!l || !(l = strchr(line, '[')) || !(r = strchr(l, ']')) ||
	    (size_t)(r - l) > n)
		return -1;
	*r = 0;
	snprintf(mode, n, "%s", l + 1);
	return 0;
}

/* AnonHugePages (kB) of the mapping that holds addr, or -1. */
static long anon_huge_kb(const void *addr)
{
	unsigned long lo, hi, a = (unsigned long)addr;
	char line[256];
	long kb = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = a >= lo && a < hi;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

static int thp_set(const char *mode)
{
	FILE *f = fopen(THP_ENABLED, "we");
	int ret;

	if (!f)
		return -1;
	ret = fputs(mode, f) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/*
 * The target in transparent huge pages (the nodes have too little memory
 * for the kernel to turn THP on by itself: the test asks for madvise mode
 * and restores the node's mode).  Each huge page the NI faults in is
 * mapped whole, with one IOMMU superpage; when the kernel splits one (a
 * page punched out of it), the superpage goes before the page is freed,
 * and the page mapped again at that address gets the next transfer's data.
 */
TEST(huge_pages_mapped_whole_and_split)
{
	const size_t H = 2u << 20, len = 4 * H;
	struct odp_cnt c0, c1, c2, c3;
	struct exanet_raddr ra;
	struct rnode a, b;
	uint8_t *raw, *dst, *hole;
	char mode0[16];
	long thp;

	if (thp_mode(mode0, sizeof(mode0)) || thp_set("madvise"))
		SKIP_TEST("no transparent huge pages on this node");
	NEED_ODP(&a, len, 1, 1);
	ASSERT_EQ(0, onode_up(&b, 4096, 0, 1));
	raw = map_anon(len + H);
	ASSERT_NE(NULL, raw);
	dst = (uint8_t *)(((uintptr_t)raw + H - 1) & ~(uintptr_t)(H - 1));
	ASSERT_EQ(0, madvise(dst, len, MADV_HUGEPAGE));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c0));
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, dst, &ra));
	opat_fill(a.buf, len, 21);
	ASSERT_EQ(0, post_and_wait(&a, 0, EXANET_RDMA_WCHAN(0), a.buf, &ra, len,
				   (uintptr_t)&b.rec[REC_IN], 1, TMO, NULL));
	EXPECT_EQ(-1, opat_check(dst, len, 21));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c1));
	thp = anon_huge_kb(dst) / 2048;
	TH_LOG("target: %lld faults, %lld pages mapped, %lld huge (the process has %ld)",
	       c1.faults - c0.faults, c1.mapped, c1.huge, thp);
	if (thp < 2) {
		thp_set(mode0);
		SKIP_TEST("the kernel gave the target %ld huge pages", thp);
	}
	/* every huge page mapped whole, a few faults for all of them */
	EXPECT_EQ(c0.huge + thp, c1.huge);
	EXPECT_LE(c1.faults - c0.faults, (long long)(len / H));
	EXPECT_LE((long long)(len / 4096), c1.mapped);

	/* punch a page out of the second huge page: the kernel splits it */
	hole = dst + H + 5 * 4096;
	ASSERT_EQ(0, munmap(hole, 4096));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c2));
	EXPECT_EQ(c1.huge - 1, c2.huge);
	EXPECT_LT(c1.invalidations, c2.invalidations);
	ASSERT_EQ(hole, mmap(hole, 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	memset(hole, 0xa5, 4096);
	/*
	 * Over everything again: a superpage left behind would have sent
	 * the hole's data to the page freed by the munmap, and the new page
	 * would keep 0xa5.
	 */
	opat_fill(a.buf, len, 22);
	ASSERT_EQ(0, post_and_wait(&a, 0, EXANET_RDMA_WCHAN(1), a.buf, &ra, len,
				   (uintptr_t)&b.rec[REC_IN + 1], 2, TMO, NULL));
	EXPECT_EQ(-1, opat_check(dst, len, 22));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c3));
	/* the split one now in small pages, the others still whole */
	EXPECT_EQ(c2.huge, c3.huge);
	EXPECT_EQ(0, vm_pin_kb());
	{
		unsigned int rb = b.mr->rank;

		rnode_down(&b);
		ASSERT_EQ(0, odp_cnt(rb, &c3));
		EXPECT_EQ(0, c3.mapped);
		EXPECT_EQ(0, c3.huge);
	}
	rnode_down(&a);
	munmap(raw, len + H);
	EXPECT_EQ(0, thp_set(mode0));
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

/*
 * Memory the process may not write (or read): error completion with the
 * documented code, nothing written, and the engine keeps working.
 */
TEST(forbidden_memory_error_completion)
{
	const size_t len = 65536;
	struct exanet_raddr dst;
	struct odp_cnt c0, c;
	struct rnode a, b;
	uint8_t *ro, *pn, *gone, *rofile;
	char path[] = "/tmp/odp-ro-XXXXXX";
	int fd;

	NEED_ODP(&a, len, 1, 1);
	ASSERT_EQ(0, onode_up(&b, len, 0, 1));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c0));
	opat_fill(a.buf, len, 3);
	ro = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pn = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gone = map_anon(len);
	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_NE(MAP_FAILED, pn);
	ASSERT_NE(NULL, gone);
	ASSERT_EQ(0, munmap(gone, len));
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, len));
	rofile = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, rofile);

	/* remote write into read-only / PROT_NONE / unmapped / read-only file */
	dst.node = b.mr->node;
	dst.rank = b.mr->rank;
	dst.va = (uintptr_t)ro;
	EXPECT_EQ(-ENXIO, post_and_wait(&a, 0, 0, a.buf, &dst, len, 0, 1, TMO, NULL));
	EXPECT_EQ(1, bytes_equal(ro, len, 0));
	dst.va = (uintptr_t)pn;
	EXPECT_EQ(-ENXIO, post_and_wait(&a, 0, 1, a.buf, &dst, len, 0, 2, TMO, NULL));
	dst.va = (uintptr_t)gone;
	EXPECT_EQ(-ENXIO, post_and_wait(&a, 0, 2, a.buf, &dst, len, 0, 3, TMO, NULL));
	dst.va = (uintptr_t)rofile;
	EXPECT_EQ(-ENXIO, post_and_wait(&a, 0, 3, a.buf, &dst, len, 0, 4, TMO, NULL));
	EXPECT_EQ(1, bytes_equal(rofile, len, 0));
	/* a notification into read-only memory */
	dst.va = (uintptr_t)b.buf;
	EXPECT_EQ(-ENXIO, post_and_wait(&a, 0, 4, a.buf, &dst, 4096, (uintptr_t)ro, 5, TMO, NULL));
	EXPECT_EQ(1, bytes_equal(ro, len, 0));
	/* local: PROT_NONE source, read into read-only memory */
	EXPECT_EQ(-EPERM, post_and_wait(&a, 0, 5, pn, &dst, len, 0, 6, TMO, NULL));
	EXPECT_EQ(-EPERM, post_and_wait(&a, 1, EXANET_RDMA_RCHAN(0), ro, &dst, len, 0, 7, TMO,
					NULL));
	EXPECT_EQ(1, bytes_equal(ro, len, 0));
	/* remote read from PROT_NONE */
	dst.va = (uintptr_t)pn;
	EXPECT_EQ(-ENXIO, post_and_wait(&a, 1, EXANET_RDMA_RCHAN(1), a.buf, &dst, len, 0, 8,
					TMO, NULL));
	ASSERT_EQ(0, mprotect(pn, len, PROT_READ));
	EXPECT_EQ(1, bytes_equal(pn, len, 0));
	/* the engine still works, for the same memory once writable */
	ASSERT_EQ(0, mprotect(ro, len, PROT_READ | PROT_WRITE));
	dst.va = (uintptr_t)ro;
	EXPECT_EQ(0, post_and_wait(&a, 0, 6, a.buf, &dst, len, 0, 9, TMO, NULL));
	EXPECT_EQ(-1, opat_check(ro, len, 3));
	ASSERT_EQ(0, odp_cnt(b.mr->rank, &c));
	TH_LOG("target rank: %lld faults refused, %lld resolved", c.refused - c0.refused,
	       c.faults - c0.faults);
	EXPECT_LE(5, c.refused - c0.refused);
	munmap(ro, len);
	munmap(pn, len);
	munmap(rofile, len);
	close(fd);
	unlink(path);
	rnode_down(&b);
	rnode_down(&a);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

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

TEST_HARNESS_MAIN
