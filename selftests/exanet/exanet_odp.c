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
 *
 * One translation unit: registration, loopback, huge pages and forbidden
 * memory here; the other cases in the headers included below, in run
 * order: exanet_odp-changes.h (the memory changing under transfers) and
 * exanet_odp-load.h (side by side, fault storm, killed target, 2 nodes).
 */
#define EXANET_ODP_C

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

#include "exanet_odp-changes.h"
#include "exanet_odp-load.h"

TEST_HARNESS_MAIN
