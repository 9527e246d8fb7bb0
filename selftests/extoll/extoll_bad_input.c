// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile use of /dev/extoll/rma2 and /dev/extoll/velo2 below the libraries
 * (tests.list: 1 node): unknown ioctls, bad pointers, bad sizes, unaligned,
 * overflowing and foreign ranges, exhausted ATU and queue budget, mmap of
 * wrong offsets/lengths/kinds, descriptors used by a fork() child, garbage
 * written to the requester pages.  Every call gets the documented error
 * (uapi/extoll.h: EINVAL, EFAULT, EBUSY, ENOSPC, ENOMEM, EACCES, ENOTTY),
 * nothing is left allocated (sysfs counters) and the kernel log stays clean
 * (checked in every teardown).
 */
#include <pthread.h>
#include <stdbool.h>

#include "extoll_raw.h"

#define TMO_S 30
#define KERNEL_PTR ((void *)0xffff888000000000ull)
#define BUDGET_PARAM "/sys/module/extoll/parameters/queue_budget_mb"

#define EXPECT_MMAP_ERRNO(err, call)					\
	do {								\
		errno = 0;						\
		void *__m = (call);					\
		if (__m != MAP_FAILED || errno != (err))		\
			TH_LOG("%s: %p errno %d (%s), expected %s", #call, __m, \
			       errno, strerror(errno), #err);		\
		EXPECT_TRUE(__m == MAP_FAILED);				\
		EXPECT_EQ(err, errno);					\
		if (__m != MAP_FAILED)					\
			munmap(__m, 4096);				\
	} while (0)

/* A read-only page and an address with nothing mapped. */
static void *ro_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void *unmapped_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	munmap(p, 4096);
	return p;
}

/* ------------------------------------------------ fixture */

FIXTURE(raw) {
	int fd, vfd;
	int kmsg0;
	long budget;
	struct xt_usage before;
};

FIXTURE_SETUP(raw)
{
	self->fd = -1;
	self->vfd = -1;
	self->budget = -1;
	xt_usage_read(&self->before);
	self->fd = open(EXTOLL_DEV_RMA2, O_RDWR | O_CLOEXEC);
	if (self->fd < 0 && (errno == ENOENT || errno == ENODEV))
		SKIP_TEST("no " EXTOLL_DEV_RMA2);
	ASSERT_LE(0, self->fd);
	self->vfd = open(EXTOLL_DEV_VELO2, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->vfd);
	self->kmsg0 = exa_kmsg_bad_lines();
}

FIXTURE_TEARDOWN(raw)
{
	struct xt_usage seen;

	if (self->budget > 0) {
		FILE *f = fopen(BUDGET_PARAM, "we");

		if (f) {
			fprintf(f, "%ld\n", self->budget);
			fclose(f);
		}
	}
	if (self->fd >= 0)
		close(self->fd);
	if (self->vfd >= 0)
		close(self->vfd);
	if (self->fd >= 0) {
		/* nothing a failed call did stays allocated */
		EXPECT_LE(0, xt_usage_wait(&self->before, 10, &seen));
		XT_KMSG_CHECK(self->kmsg0);
	}
}

/* ------------------------------------------------ ioctl */

/* The queries agree with each other and with sysfs. */
TEST_F(raw, info_ioctls_match_sysfs)
{
	struct rma2_ioc_info ri;
	struct velo2_ioc_info vi;
	uint64_t v;

	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_GET_INFO, &ri));
	EXPECT_EQ(EXTOLL_ABI_VERSION, ri.abi_version);
	EXPECT_EQ(xt_sysfs("rma2", "node_id"), ri.nodeid);
	EXPECT_EQ(xt_sysfs("rma2", "vpids"), ri.max_vpids);
	EXPECT_LT(ri.vpid, ri.max_vpids);
	EXPECT_EQ(RMA2_NOTI_SIZE, ri.noti_size);
	EXPECT_EQ(RMA2_NOTIQ_DEFAULT_SIZE, ri.notiq_size);
	EXPECT_EQ(RMA2_MMAP_NOTIQ_OFFSET, ri.notiq_offset);
	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_GET_NODEID, &v));
	EXPECT_EQ(ri.nodeid, v);
	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_GET_VPID, &v));
	EXPECT_EQ(ri.vpid, v);
	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_GET_MAXVPID, &v));
	EXPECT_EQ(ri.max_vpids, v);
	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_GET_MAXNODEID, &v));
	EXPECT_EQ(RMA2_NODES, v);
	ASSERT_EQ(0, ioctl(self->vfd, VELO2_IOCG_GET_INFO, &vi));
	EXPECT_EQ(EXTOLL_ABI_VERSION, vi.abi_version);
	EXPECT_EQ(ri.nodeid, vi.nodeid);
	EXPECT_EQ(xt_sysfs("velo2", "vpids"), vi.max_vpids);
	EXPECT_EQ(EXTOLL_VELO_SLOT_SIZE, vi.slot_size);
	EXPECT_EQ(VELO2_MBOX_DEFAULT_SIZE, vi.mbox_size);
	ASSERT_EQ(0, ioctl(self->vfd, VELO2_IOCG_GET_VPID, &v));
	EXPECT_EQ(vi.vpid, v);
	ASSERT_EQ(0, ioctl(self->vfd, VELO2_IOCG_GET_PROCNUM, &v));
	EXPECT_EQ(vi.max_vpids, v);
}

TEST_F(raw, unknown_ioctls_enotty)
{
	uint64_t v = 0;
	int fds[2] = { self->fd, self->vfd };

	for (int i = 0; i < 2; i++) {
		EXPECT_ERRNO(ENOTTY, ioctl(fds[i], _IO('k', 99)));
		EXPECT_ERRNO(ENOTTY, ioctl(fds[i], _IOR('x', 8, uint64_t), &v));
		EXPECT_ERRNO(ENOTTY, ioctl(fds[i], 0, &v));
		EXPECT_ERRNO(ENOTTY, ioctl(fds[i], ~0u, &v));
		/* right number, wrong size or direction encoding */
		EXPECT_ERRNO(ENOTTY, ioctl(fds[i], _IOR('k', 8, uint32_t), &v));
		EXPECT_ERRNO(ENOTTY, ioctl(fds[i], _IOW('k', 32, struct rma2_ioc_info), &v));
	}
	/*
	 * One unit's numbers on the other unit's device (only numbers the
	 * other unit does not share: VELO2_IOCG_GET_SLOT_SIZE is encoded
	 * like RMA2_IOCTL_GET_PROTDESC, _IOR('k', 21, __u64), as in the
	 * original headers).
	 */
	EXPECT_ERRNO(ENOTTY, ioctl(self->fd, VELO2_IOCG_GET_PROCNUM, &v));
	EXPECT_ERRNO(ENOTTY, ioctl(self->fd, VELO2_IOCG_GET_TX_PROTDESC, &v));
	EXPECT_ERRNO(ENOTTY, ioctl(self->fd, VELO2_IOCG_GET_INFO, &v));
	EXPECT_ERRNO(ENOTTY, ioctl(self->vfd, RMA2_IOCTL_REGISTER_REGION, &v));
	EXPECT_ERRNO(ENOTTY, ioctl(self->vfd, RMA2_IOCTL_GET_INFO, &v));
}

TEST_F(raw, bad_user_pointers_efault)
{
	void *ro = ro_page();
	void *bad[] = { NULL, (void *)16, KERNEL_PTR, unmapped_page(), ro };
	static const unsigned long rma_get[] = {
		RMA2_IOCTL_GET_NOTIQ_SIZE, RMA2_IOCTL_GET_NOTIQ_SEGMENT_SIZE,
		RMA2_IOCTL_GET_NOTIQ_WP, RMA2_IOCTL_GET_NOTIQ_RP, RMA2_IOCTL_GET_NODEID,
		RMA2_IOCTL_GET_VPID, RMA2_IOCTL_GET_MAXNODEID, RMA2_IOCTL_GET_MAXVPID,
		RMA2_IOCTL_GET_INFO,
	};
	static const unsigned long velo_get[] = {
		VELO2_IOCG_GET_RP, VELO2_IOCG_GET_WP, VELO2_IOCG_GET_VPID,
		VELO2_IOCG_GET_MBOX_SIZE, VELO2_IOCG_GET_SEGMENT_SIZE, VELO2_IOCG_GET_NODEID,
		VELO2_IOCG_GET_PROCNUM, VELO2_IOCG_GET_NODENUM, VELO2_IOCG_GET_SLOT_SIZE,
		VELO2_IOCG_GET_INFO,
	};
	struct rma2_ioc_region *rr;
	uint8_t *buf = aligned_alloc(4096, 8192);

	ASSERT_TRUE(ro && bad[3] && buf);
	for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
		for (size_t i = 0; i < sizeof(rma_get) / sizeof(rma_get[0]); i++)
			EXPECT_ERRNO(EFAULT, ioctl(self->fd, rma_get[i], bad[b]));
		for (size_t i = 0; i < sizeof(velo_get) / sizeof(velo_get[0]); i++)
			EXPECT_ERRNO(EFAULT, ioctl(self->vfd, velo_get[i], bad[b]));
		if (b == 4)
			continue;	/* readable: see below */
		EXPECT_ERRNO(EFAULT, ioctl(self->fd, RMA2_IOCTL_REGISTER_REGION, bad[b]));
		EXPECT_ERRNO(EFAULT, ioctl(self->fd, RMA2_IOCTL_UNREGISTER_REGION, bad[b]));
		EXPECT_ERRNO(EFAULT, ioctl(self->vfd, VELO2_IOCG_SET_MBOX_SIZE, bad[b]));
		EXPECT_ERRNO(EFAULT, ioctl(self->vfd, VELO2_IOCG_SET_SEGMENT_SIZE, bad[b]));
	}
	/*
	 * A valid request in read-only memory: the driver registers, cannot
	 * write the answer back and must undo the registration.
	 */
	rr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(rr != MAP_FAILED);
	memset(rr, 0, sizeof(*rr));
	rr->addr = (uintptr_t)buf;
	rr->len = 8192;
	ASSERT_EQ(0, mprotect(rr, 4096, PROT_READ));
	EXPECT_ERRNO(EFAULT, ioctl(self->fd, RMA2_IOCTL_REGISTER_REGION, rr));
	EXPECT_EQ(self->before.registered_pages, xt_sysfs("rma2", "registered_pages"));
	EXPECT_EQ(self->before.pinned_pages, xt_sysfs("rma2", "pinned_pages"));
	munmap(rr, 4096);
	munmap(ro, 4096);
	free(buf);
}

TEST_F(raw, notification_queue_size_and_pointers)
{
	static const unsigned long bad_sizes[] = {
		0, 100, 4095, 3 * 4096, 5 * 4096, 8 << 20, 1ul << 32, 1ul << 40, ~0ul,
	};
	uint64_t v;
	void *m;

	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
		EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_SIZE, bad_sizes[i]));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_SEGMENT_SIZE, 0ul));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_SEGMENT_SIZE, 100ul));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_SEGMENT_SIZE, 8ul << 20));
	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 16384ul));
	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_GET_NOTIQ_SIZE, &v));
	EXPECT_EQ(16384, v);
	/* a mapping longer than the queue fails and changes nothing */
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 4096 + 16384 + 4096, PROT_READ | PROT_WRITE,
				       MAP_SHARED, self->fd, RMA2_MMAP_NOTIQ_OFFSET));
	EXPECT_EQ(self->before.queue_bytes, xt_sysfs("rma2", "queue_bytes"));
	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 8192ul));
	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 16384ul));
	m = mmap(NULL, 4096 + 16384, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 RMA2_MMAP_NOTIQ_OFFSET);
	ASSERT_TRUE(m != MAP_FAILED);
	EXPECT_EQ(self->before.queue_bytes + 4096 + 16384, xt_sysfs("rma2", "queue_bytes"));
	/* fixed once mapped; the same size is still accepted */
	EXPECT_ERRNO(EBUSY, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 32768ul));
	EXPECT_EQ(0, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 16384ul));
	/* write pointer belongs to the device; read pointer within the queue */
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_WP, 1ul));
	EXPECT_EQ(0, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_WP, 0ul));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_RP, 1024ul));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_RP, ~0ul));
	EXPECT_EQ(0, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_RP, 1023ul));
	EXPECT_EQ(0, ioctl(self->fd, RMA2_IOCTL_GET_NOTIQ_RP, &v));
	EXPECT_EQ(1023, v);
	EXPECT_EQ(1023, ((volatile uint64_t *)m)[0]);
	munmap(m, 4096 + 16384);
}

TEST_F(raw, register_bad_ranges)
{
	struct rma2_ioc_region r;
	uint8_t *buf = aligned_alloc(4096, 65536);
	void *ro = ro_page(), *gone = unmapped_page();
	uint8_t *half = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct raw_ep e;

	ASSERT_TRUE(buf && ro && gone && half != MAP_FAILED);
	ASSERT_EQ(0, munmap(half + 4096, 4096));
	half[0] = 1;
	/* arguments */
	EXPECT_ERRNO(EINVAL, raw_reg(self->fd, buf, 0, 0, &r));
	EXPECT_ERRNO(EINVAL, raw_reg(self->fd, buf, 10, 0x80, &r));
	EXPECT_ERRNO(EINVAL, raw_reg(self->fd, buf, 10, ~0u, &r));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_REGISTER_REGION,
				   &(struct rma2_ioc_region){ .addr = (uintptr_t)buf, .len = 10,
							      .reserved = 1 }));
	EXPECT_ERRNO(EINVAL, raw_reg(self->fd, (void *)(uintptr_t)(~0ull - 5), 100, 0, &r));
	EXPECT_ERRNO(EINVAL, raw_reg(self->fd, buf, ~0ull, 0, &r));
	EXPECT_ERRNO(EINVAL, raw_reg(self->fd, buf, RMA2_REGION_MAX_BYTES + 1, 0, &r));
	EXPECT_ERRNO(EINVAL, raw_reg(self->fd, buf, 1ull << 33, 0, &r));
	/* memory the caller may not hand to a device */
	EXPECT_ERRNO(EFAULT, raw_reg(self->fd, KERNEL_PTR, 4096, 0, &r));
	EXPECT_ERRNO(EFAULT, raw_reg(self->fd, NULL, 4096, 0, &r));
	EXPECT_ERRNO(EFAULT, raw_reg(self->fd, gone, 4096, 0, &r));
	EXPECT_ERRNO(EFAULT, raw_reg(self->fd, half, 8192, 0, &r));	/* 2nd page gone */
	EXPECT_ERRNO(EFAULT, raw_reg(self->fd, ro, 4096, 0, &r));	/* writable wanted */
	EXPECT_ERRNO(EFAULT, raw_reg(self->fd, "a string", 8, 0, &r));
	ASSERT_EQ(0, raw_open(&e));
	EXPECT_ERRNO(EFAULT, raw_reg(self->fd, (void *)e.req, 4096, 0, &r));	/* MMIO */
	EXPECT_ERRNO(EFAULT, raw_reg(self->fd, (void *)e.q, 4096, 0, &r));	/* queue */
	EXPECT_ERRNO(EFAULT, raw_reg(self->fd, (void *)e.req, 4096, RMA2_REGION_READONLY, &r));
	raw_close(&e);
	/* nothing of that is held */
	EXPECT_EQ(self->before.registered_pages, xt_sysfs("rma2", "registered_pages"));
	EXPECT_EQ(self->before.pinned_pages, xt_sysfs("rma2", "pinned_pages"));
	/* read-only memory is fine when asked for read-only */
	ASSERT_EQ(0, raw_reg(self->fd, ro, 4096, RMA2_REGION_READONLY, &r));
	EXPECT_EQ(0, ioctl(self->fd, RMA2_IOCTL_UNREGISTER_REGION, &r));
	/* the answer: 4 KiB arithmetic, NLA never 0 */
	ASSERT_EQ(0, raw_reg(self->fd, buf + 4093, 10, 0, &r));
	EXPECT_TRUE(r.start == (uintptr_t)buf && r.offset == 4093 && r.count == 2 &&
		    r.size == 8192 && r.nla && !(r.nla & 4095));
	EXPECT_EQ(0, ioctl(self->fd, RMA2_IOCTL_UNREGISTER_REGION, &r));
	munmap(ro, 4096);
	munmap(half, 4096);
	free(buf);
}

TEST_F(raw, unregister_wrong_or_foreign_region)
{
	struct rma2_ioc_region r, r2, bad;
	uint8_t *buf = aligned_alloc(4096, 65536);
	int fd2 = open(EXTOLL_DEV_RMA2, O_RDWR | O_CLOEXEC);

	ASSERT_TRUE(buf != NULL);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, raw_reg(self->fd, buf, 65536, 0, &r));
	ASSERT_EQ(0, raw_reg(fd2, buf, 65536, 0, &r2));	/* same memory, other endpoint */
	EXPECT_NE(r.nla, r2.nla);
	bad = r;
	bad.size += 4096;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_UNREGISTER_REGION, &bad));
	bad = r;
	bad.nla += 4096;
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_UNREGISTER_REGION, &bad));
	memset(&bad, 0, sizeof(bad));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_UNREGISTER_REGION, &bad));
	/* another endpoint's registration is not ours to drop */
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_UNREGISTER_REGION, &r2));
	EXPECT_EQ(self->before.registered_pages + 32, xt_sysfs("rma2", "registered_pages"));
	EXPECT_EQ(0, ioctl(self->fd, RMA2_IOCTL_UNREGISTER_REGION, &r));
	EXPECT_ERRNO(EINVAL, ioctl(self->fd, RMA2_IOCTL_UNREGISTER_REGION, &r));	/* twice */
	EXPECT_EQ(0, ioctl(fd2, RMA2_IOCTL_UNREGISTER_REGION, &r2));
	close(fd2);
	free(buf);
}

/*
 * The ATU runs out: 16 MiB regions are registered until ENOSPC; the
 * library says RMA2_ERR_ATU and leaves *region alone.  Regions are placed
 * at random (the driver hides where other regions are), so 16 MiB may find
 * no contiguous room while single free entries are left between regions:
 * then single pages are registered until ENOSPC again, and at that point
 * every ATU entry but the reserved NLA 0 is in use.  Everything is given
 * back, and a 16 MiB region fits again.
 *
 * The regions come from a pool of distinct pages and no page is under more
 * than ATU_PAGE_REGS registrations at once (plus the one a refused attempt
 * maps before it finds no ATU room): DMA-API debugging (debug kernel) warns
 * "exceeded 7 overlapping mappings of cacheline" when more than eight
 * device-writable mappings of one cacheline exist, a limit of the checker,
 * which this test would otherwise hit by registering one page thousands of
 * times.
 */
#define ATU_PAGE_REGS	6

TEST_F_TIMEOUT(raw, atu_exhausted_enospc, 300)
{
	const size_t len = 16 * MiB, chunk_pages = len / 4096;
	long entries = xt_sysfs("rma2", "atu_entries");
	/* room for every entry with at most ATU_PAGE_REGS regions per page */
	size_t nchunks = (size_t)entries / (ATU_PAGE_REGS * chunk_pages) + 2;
	size_t pool_pages = nchunks * chunk_pages, cursor = 0;
	struct rma2_ioc_region *r = calloc((size_t)entries, sizeof(*r));
	uint8_t *uses = calloc(pool_pages, 1);
	uint8_t *buf = mmap(NULL, pool_pages * 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	RMA2_Port p;
	RMA2_Region *lr = (RMA2_Region *)0x1;
	long n = 0, big, err = 0, most = 0;
	size_t i;

	ASSERT_LT(0, entries);
	ASSERT_TRUE(r && uses && buf != MAP_FAILED);
	memset(buf, 1, pool_pages * 4096);
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&p));
	/* 16 MiB regions, chunk after chunk of the pool */
	for (;;) {
		size_t c = (size_t)n % nchunks;

		ASSERT_GT(ATU_PAGE_REGS, uses[c * chunk_pages]);
		ASSERT_GT(entries, n);
		if (raw_reg(self->fd, buf + c * len, len, 0, &r[n])) {
			err = errno;
			break;
		}
		for (i = 0; i < chunk_pages; i++)
			uses[c * chunk_pages + i]++;
		n++;
	}
	EXPECT_EQ(ENOSPC, err);
	big = n;
	/* the chunk with the fewest registrations */
	EXPECT_EQ(RMA2_ERR_ATU, rma2_register(p, buf + (nchunks - 1) * len, len, &lr));
	EXPECT_TRUE(lr == (RMA2_Region *)0x1);
	/* what is left between the regions, one page at a time, each from
	 * the next page of the pool with room for one more registration */
	err = 0;
	while (n < entries) {
		for (i = 0; i < pool_pages && uses[cursor] >= ATU_PAGE_REGS; i++)
			cursor = (cursor + 1) % pool_pages;
		ASSERT_GT(ATU_PAGE_REGS, uses[cursor]);
		if (raw_reg(self->fd, buf + cursor * 4096, 4096, 0, &r[n])) {
			err = errno;
			break;
		}
		uses[cursor]++;
		cursor = (cursor + 1) % pool_pages;
		n++;
	}
	EXPECT_EQ(ENOSPC, err);
	for (i = 0; i < pool_pages; i++)
		most = uses[i] > most ? uses[i] : most;
	TH_LOG("ATU full after %ld x 16 MiB and %ld single pages (%ld entries, %ld in use before; "
	       "%zu distinct pages, at most %ld registrations of one)",
	       big, n - big, entries, self->before.registered_pages, pool_pages, most);
	EXPECT_GE(ATU_PAGE_REGS, most);
	EXPECT_EQ(entries - 1, self->before.registered_pages + big * (long)chunk_pages + n - big);
	EXPECT_EQ(entries - 1, xt_sysfs("rma2", "registered_pages"));
	/* the failed registrations did not leave pins behind */
	EXPECT_EQ(self->before.pinned_pages + big * (long)chunk_pages + n - big,
		  xt_sysfs("rma2", "pinned_pages"));
	while (n)
		EXPECT_EQ(0, ioctl(self->fd, RMA2_IOCTL_UNREGISTER_REGION, &r[--n]));
	/* all given back: the ATU and the pins are where they were */
	EXPECT_EQ(self->before.registered_pages, xt_sysfs("rma2", "registered_pages"));
	EXPECT_EQ(self->before.pinned_pages, xt_sysfs("rma2", "pinned_pages"));
	EXPECT_EQ(RMA2_SUCCESS, rma2_register(p, buf, len, &lr));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, lr));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p));
	munmap(buf, pool_pages * 4096);
	free(uses);
	free(r);
}

/*
 * Register/unregister from three threads on one endpoint, then close with
 * registrations left.  Each thread has its own pages, and each of its
 * STORM_SLOTS slots (a start page) holds at most one registration at a
 * time, at most 5 pages long: no page is under more than 5 registrations
 * at once.  DMA-API debugging (debug kernel) warns "exceeded 7 overlapping
 * mappings of cacheline" beyond eight device-writable mappings of one
 * cacheline, a limit of the checker (the storm used to register the first
 * page of one buffer thousands of times).
 */
#define STORM_THREADS	3
#define STORM_SLOTS	64
#define STORM_PAGES	(STORM_SLOTS + 5)	/* per thread */

struct storm {
	int fd;
	uint8_t *buf;
	volatile int stop;
};

struct storm_arg {
	struct storm *s;
	unsigned int t;
	long kept;
};

static void *storm_thread(void *arg)
{
	struct storm_arg *a = arg;
	struct storm *s = a->s;
	struct rma2_ioc_region r, kept[STORM_SLOTS];
	bool held[STORM_SLOTS] = { false };
	uint8_t *base = s->buf + (size_t)a->t * STORM_PAGES * 4096;
	unsigned int i = 0, j;

	while (!s->stop) {
		j = i % STORM_SLOTS;
		if (held[j]) {
			ioctl(s->fd, RMA2_IOCTL_UNREGISTER_REGION, &kept[j]);
			held[j] = false;
		}
		if (raw_reg(s->fd, base + (size_t)j * 4096 + (j & 3) * 100, 4096u * (1 + i % 4),
			    0, &r) == 0) {
			if (i & 1) {
				ioctl(s->fd, RMA2_IOCTL_UNREGISTER_REGION, &r);
			} else {
				kept[j] = r;
				held[j] = true;
			}
		}
		i++;
	}
	for (j = 0; j < STORM_SLOTS; j++)
		a->kept += held[j];
	return NULL;
}

TEST_F(raw, register_storm_from_threads_then_close)
{
	const size_t len = (size_t)STORM_THREADS * STORM_PAGES * 4096;
	struct storm s = { self->fd, aligned_alloc(4096, len), 0 };
	struct storm_arg a[STORM_THREADS];
	pthread_t th[STORM_THREADS];
	long kept = 0;

	ASSERT_TRUE(s.buf != NULL);
	memset(s.buf, 1, len);
	for (int i = 0; i < STORM_THREADS; i++) {
		a[i] = (struct storm_arg){ &s, i, 0 };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, storm_thread, &a[i]));
	}
	usleep(1500000);
	s.stop = 1;
	for (int i = 0; i < STORM_THREADS; i++) {
		pthread_join(th[i], NULL);
		kept += a[i].kept;
	}
	TH_LOG("%ld registrations left for the close", kept);
	EXPECT_LT(0, kept);
	EXPECT_LT(self->before.registered_pages, xt_sysfs("rma2", "registered_pages"));
	/* the teardown's close must give every leftover registration back */
	free(s.buf);
}

/* ------------------------------------------------ mmap */

TEST_F(raw, mmap_bad_requests)
{
	const int rw = PROT_READ | PROT_WRITE;
	uint64_t qs = 0;
	void *m;

	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_GET_NOTIQ_SIZE, &qs));
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 4096, rw, MAP_PRIVATE, self->fd, 0));
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 4096, rw, MAP_PRIVATE, self->fd,
				       RMA2_MMAP_NOTIQ_OFFSET));
	/* across the MMIO and queue areas */
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, RMA_MMIO_LEN + 4096, rw, MAP_SHARED, self->fd, 0));
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 8192, rw, MAP_SHARED, self->fd, RMA_MMIO_LEN - 4096));
	/* beyond the queue, far beyond, wrapping offsets */
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 4096, rw, MAP_SHARED, self->fd,
				       (off_t)(RMA2_MMAP_NOTIQ_OFFSET + 4096 + qs)));
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 4096, rw, MAP_SHARED, self->fd, (off_t)1 << 44));
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 8192, rw, MAP_SHARED, self->fd,
				       (off_t)0x7ffffffffffff000ll));
	EXPECT_EQ(self->before.queue_bytes, xt_sysfs("rma2", "queue_bytes"));
	/* VELO: 2 MMIO pages, then the ring */
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 4096, rw, MAP_PRIVATE, self->vfd, 0));
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 3 * 4096, rw, MAP_SHARED, self->vfd, 0));
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 4096 + VELO2_MBOX_DEFAULT_SIZE + 4096, rw, MAP_SHARED,
				       self->vfd, VELO2_MMAP_MBOX_OFFSET));
	EXPECT_MMAP_ERRNO(EINVAL, mmap(NULL, 4096, rw, MAP_SHARED, self->vfd, (off_t)1 << 44));
	EXPECT_EQ(self->before.queue_bytes, xt_sysfs("rma2", "queue_bytes"));
	/* a right mapping cannot grow, be inherited or be registered */
	m = mmap(NULL, RMA_MMIO_LEN, rw, MAP_SHARED, self->fd, 0);
	ASSERT_TRUE(m != MAP_FAILED);
	EXPECT_TRUE(mremap(m, RMA_MMIO_LEN, RMA_MMIO_LEN + 4096, 0) == MAP_FAILED);
	EXPECT_TRUE(mremap(m, RMA_MMIO_LEN, RMA_MMIO_LEN + 4096, MREMAP_MAYMOVE) == MAP_FAILED);
	EXPECT_ERRNO(EINVAL, madvise(m, 4096, MADV_DOFORK));
	munmap(m, RMA_MMIO_LEN);
}

/*
 * Queues are capped per device (queue_budget_mb): with a 1 MiB budget the
 * queue that does not fit any more is refused with ENOMEM (also through
 * the libraries: RMA2_ERR_MMAP, VELO2_RET_ERR_MMAP), and a refused mmap
 * leaves the size settable.
 */
TEST_F(raw, queue_budget_exhausted_enomem)
{
	const int rw = PROT_READ | PROT_WRITE;
	FILE *f = fopen(BUDGET_PARAM, "re");
	int fd2 = open(EXTOLL_DEV_RMA2, O_RDWR | O_CLOEXEC);
	int vfd2 = open(EXTOLL_DEV_VELO2, O_RDWR | O_CLOEXEC);
	RMA2_Port p = (RMA2_Port)0x1;
	velo2_port_t vp;
	uint64_t v = 256 * 1024;
	void *m1, *m2, *m3, *m4;

	ASSERT_TRUE(f != NULL);
	ASSERT_EQ(1, fscanf(f, "%ld", &self->budget));
	fclose(f);
	ASSERT_LE(0, fd2);
	ASSERT_LE(0, vfd2);
	ASSERT_EQ(0, self->before.queue_bytes);
	f = fopen(BUDGET_PARAM, "we");
	ASSERT_TRUE(f != NULL);
	fprintf(f, "1\n");
	ASSERT_EQ(0, fclose(f));
	/* 516 KiB + 260 KiB held */
	ASSERT_EQ(0, ioctl(self->fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 512ul * 1024));
	m1 = mmap(NULL, 4096 + 512 * 1024, rw, MAP_SHARED, self->fd, RMA2_MMAP_NOTIQ_OFFSET);
	ASSERT_TRUE(m1 != MAP_FAILED);
	ASSERT_EQ(0, ioctl(self->vfd, VELO2_IOCG_SET_MBOX_SIZE, &v));
	m2 = mmap(NULL, 4096 + v, rw, MAP_SHARED, self->vfd, VELO2_MMAP_MBOX_OFFSET);
	ASSERT_TRUE(m2 != MAP_FAILED);
	/* another 516 KiB do not fit, even through a one-page mapping */
	ASSERT_EQ(0, ioctl(fd2, RMA2_IOCTL_SET_NOTIQ_SIZE, 512ul * 1024));
	EXPECT_MMAP_ERRNO(ENOMEM, mmap(NULL, 4096 + 512 * 1024, rw, MAP_SHARED, fd2,
				       RMA2_MMAP_NOTIQ_OFFSET));
	EXPECT_MMAP_ERRNO(ENOMEM, mmap(NULL, 4096, rw, MAP_SHARED, fd2, RMA2_MMAP_NOTIQ_OFFSET));
	EXPECT_EQ((4096 + 512 * 1024) + (4096 + 256 * 1024), xt_sysfs("rma2", "queue_bytes"));
	/* 132 KiB + 68 KiB still do */
	ASSERT_EQ(0, ioctl(fd2, RMA2_IOCTL_SET_NOTIQ_SIZE, 128ul * 1024));
	m3 = mmap(NULL, 4096 + 128 * 1024, rw, MAP_SHARED, fd2, RMA2_MMAP_NOTIQ_OFFSET);
	ASSERT_TRUE(m3 != MAP_FAILED);
	m4 = mmap(NULL, 4096 + VELO2_MBOX_DEFAULT_SIZE, rw, MAP_SHARED, vfd2,
		  VELO2_MMAP_MBOX_OFFSET);
	ASSERT_TRUE(m4 != MAP_FAILED);
	/* 48 KiB left: the libraries' default queues do not fit */
	EXPECT_EQ(RMA2_ERR_MMAP, rma2_open(&p));
	EXPECT_TRUE(p == NULL);
	EXPECT_EQ(VELO2_RET_ERR_MMAP, velo2_open(&vp));
	EXPECT_TRUE(vp.map == NULL);
	munmap(m1, 4096 + 512 * 1024);
	munmap(m2, 4096 + v);
	munmap(m3, 4096 + 128 * 1024);
	munmap(m4, 4096 + VELO2_MBOX_DEFAULT_SIZE);
	close(fd2);
	close(vfd2);
}

/* ------------------------------------------------ fork() child */

TEST_F(raw, fork_child_cannot_use_parents_endpoint)
{
	struct raw_ep e;
	uint64_t v;
	pid_t pid;
	int st;

	ASSERT_EQ(0, raw_open(&e));
	ASSERT_EQ(0, ioctl(e.fd, RMA2_IOCTL_GET_VPID, &v));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		unsigned char vec;
		struct rma2_ioc_region r;
		uint8_t *buf = aligned_alloc(4096, 4096);

		if (ioctl(e.fd, RMA2_IOCTL_GET_VPID, &v) != -1 || errno != EACCES)
			_exit(1);
		if (ioctl(self->vfd, VELO2_IOCG_GET_VPID, &v) != -1 || errno != EACCES)
			_exit(2);
		if (raw_reg(e.fd, buf, 4096, 0, &r) != -1 || errno != EACCES)
			_exit(3);
		if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, e.fd, 0) != MAP_FAILED || errno != EACCES)
			_exit(4);
		/* the parent's mappings are not inherited */
		if (mincore((void *)e.req, 4096, &vec) != -1 || errno != ENOMEM)
			_exit(5);
		if (mincore((void *)e.q, 4096, &vec) != -1 || errno != ENOMEM)
			_exit(6);
		/* and touching them is a plain segfault */
		e.req[0] = 1;
		_exit(7);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	if (!WIFSIGNALED(st))
		TH_LOG("child exit status %d", WEXITSTATUS(st));
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	/* the parent's endpoint is unharmed */
	EXPECT_EQ(0, ioctl(e.fd, RMA2_IOCTL_GET_VPID, &v));
	raw_close(&e);
}

/* ------------------------------------------------ VELO */

TEST_F(raw, velo2_size_and_pointer_rules)
{
	static const uint64_t bad_sizes[] = { 0, 100, 3000, 3 * 4096, 8 << 20, 1ull << 40, ~0ull };
	uint64_t v;
	void *m;

	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		v = bad_sizes[i];
		EXPECT_ERRNO(EINVAL, ioctl(self->vfd, VELO2_IOCG_SET_MBOX_SIZE, &v));
	}
	v = 0;
	EXPECT_ERRNO(EINVAL, ioctl(self->vfd, VELO2_IOCG_SET_SEGMENT_SIZE, &v));
	v = 8192;
	ASSERT_EQ(0, ioctl(self->vfd, VELO2_IOCG_SET_MBOX_SIZE, &v));
	ASSERT_EQ(0, ioctl(self->vfd, VELO2_IOCG_GET_MBOX_SIZE, &v));
	EXPECT_EQ(8192, v);
	m = mmap(NULL, 4096 + 8192, PROT_READ | PROT_WRITE, MAP_SHARED, self->vfd,
		 VELO2_MMAP_MBOX_OFFSET);
	ASSERT_TRUE(m != MAP_FAILED);
	v = 16384;
	EXPECT_ERRNO(EBUSY, ioctl(self->vfd, VELO2_IOCG_SET_MBOX_SIZE, &v));
	EXPECT_ERRNO(EINVAL, ioctl(self->vfd, VELO2_IOCT_SET_RP, 64ul));	/* 64 slots */
	EXPECT_EQ(0, ioctl(self->vfd, VELO2_IOCT_SET_RP, 63ul));
	EXPECT_ERRNO(EINVAL, ioctl(self->vfd, VELO2_IOCT_SET_WP, 5ul));
	ASSERT_EQ(0, ioctl(self->vfd, VELO2_IOCG_GET_SLOT_SIZE, &v));
	EXPECT_EQ(EXTOLL_VELO_SLOT_SIZE, v);
	munmap(m, 4096 + 8192);
}

/* Headers the device must refuse: dropped and counted, nothing delivered. */
TEST_F(raw, velo2_garbage_headers_dropped)
{
	struct velo2_ioc_info info;
	volatile uint64_t *req, *ring, *slot0;
	uint64_t drops0, nodes;
	double end;

	ASSERT_EQ(0, ioctl(self->vfd, VELO2_IOCG_GET_INFO, &info));
	ASSERT_EQ(0, ioctl(self->vfd, VELO2_IOCG_GET_NODENUM, &nodes));
	req = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->vfd, 0);
	ring = mmap(NULL, 4096 + info.mbox_size, PROT_READ | PROT_WRITE, MAP_SHARED, self->vfd,
		    VELO2_MMAP_MBOX_OFFSET);
	ASSERT_TRUE(req != MAP_FAILED && ring != MAP_FAILED);
	slot0 = ring + 512 + EXTOLL_VELO_STATUS_OFF / 8;
	drops0 = req[EXTOLL_VELO_DROPS / 8];
	/* too long, multicast bits, a node that does not exist */
	req[0] = EXTOLL_VELO_MKHDR(info.nodeid, info.vpid, 0, 1, 121);
	for (int k = 0; k < 15; k++)
		req[1 + k] = 0x4242424242424242ull;
	req[0] = EXTOLL_VELO_MKHDR(info.nodeid, info.vpid, 0, 2, 0) | (1ull << 24);
	req[0] = EXTOLL_VELO_MKHDR(nodes, info.vpid, 0, 3, 0);
	end = xt_now_s() + TMO_S;
	while (req[EXTOLL_VELO_DROPS / 8] < drops0 + 3 && xt_now_s() < end)
		usleep(1000);
	EXPECT_EQ(drops0 + 3, req[EXTOLL_VELO_DROPS / 8]);
	usleep(100000);
	EXPECT_EQ(0, *slot0);
	/* a good message still goes through, into slot 0 */
	req[1] = 0x1122334455667788ull;
	req[0] = EXTOLL_VELO_MKHDR(info.nodeid, info.vpid, 1, 0x42, 8);
	end = xt_now_s() + TMO_S;
	while (!*slot0 && xt_now_s() < end)
		usleep(1000);
	EXPECT_EQ(8, EXTOLL_VELO_ST_LEN(*slot0));
	EXPECT_EQ(0x42, EXTOLL_VELO_ST_TAG(*slot0));
	EXPECT_EQ(info.vpid, EXTOLL_VELO_ST_VPID(*slot0));
	EXPECT_TRUE(ring[512] == 0x1122334455667788ull);
	munmap((void *)req, 2 * 4096);
	munmap((void *)ring, 4096 + info.mbox_size);
}

/* ------------------------------------------------ RMA commands the library would refuse */

struct bad_cmd {
	const char *what;
	unsigned int page;
	uint64_t w0, w1, w2;
	unsigned int err;
};

/*
 * Raw command words: the device refuses what is malformed with a requester
 * error notification (hardware.md "Errors"), writes nothing, and keeps
 * working.  Quadword commands need size % 8 == 0.
 */
TEST_F(raw, rma2_garbage_commands_error_notifications)
{
	struct raw_ep e;
	struct rma2_ioc_region r, ro;
	uint8_t *buf = aligned_alloc(4096, 16384), *rob = aligned_alloc(4096, 4096);
	uint64_t w0, w1, s, d;
	const unsigned int te = EXTOLL_RMA_OPT_TE;
	struct bad_cmd bad[8];
	int n = 0;

	ASSERT_TRUE(buf && rob);
	ASSERT_EQ(0, raw_open(&e));
	memset(buf, 0, 16384);
	memset(rob, 0x5e, 4096);
	xt_fill(buf, 4096, 9);
	ASSERT_EQ(0, raw_reg(e.fd, buf, 16384, 0, &r));
	ASSERT_EQ(0, raw_reg(e.fd, rob, 4096, RMA2_REGION_READONLY, &ro));
	s = r.nla;
	d = r.nla + 8192;
#define BAD(w, pg, a, b, c, e_) bad[n++] = (struct bad_cmd){ w, pg, a, b, c, e_ }
	BAD("qw put of 12 bytes", te,
	    EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_PUT, e.info.nodeid, e.info.vpid, 4, 0, 11), s, d,
	    RMA2_ERROR_REQ);
	BAD("qw get of 9 bytes", te,
	    EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_GET, e.info.nodeid, e.info.vpid, 4, 0, 8), s, d,
	    RMA2_ERROR_REQ);
	BAD("command code 4", te, EXTOLL_RMA_MKW0(4, e.info.nodeid, e.info.vpid, 4, 0, 63), s, d,
	    RMA2_ERROR_REQ);
	BAD("multicast modifier", te,
	    EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, e.info.nodeid, e.info.vpid, 4, EXTOLL_MOD_MC, 63),
	    s, d, RMA2_ERROR_REQ);
	BAD("physical addressing", 0,
	    EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, e.info.nodeid, e.info.vpid, 4, 0, 63), 0x1000,
	    0x2000, RMA2_ERROR_REQ);
	BAD("register-file access page", te | EXTOLL_RMA_OPT_RRA,
	    EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, e.info.nodeid, e.info.vpid, 4, 0, 63), s, d,
	    RMA2_ERROR_REQ);
	BAD("node out of range", te,
	    EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, 0xfff0, e.info.vpid, 4, 0, 63), s, d,
	    RMA2_ERROR_REQ);
	BAD("write into a read-only region", te,
	    EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, e.info.nodeid, e.info.vpid, 4, 0, 63), s, ro.nla,
	    RMA2_ERROR_CMPL);
#undef BAD
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(0, raw_post(&e, bad[i].page, bad[i].w0, bad[i].w1, bad[i].w2));
		if (raw_poll(&e, &w0, &w1, TMO_S)) {
			TH_LOG("%s: no notification", bad[i].what);
			EXPECT_TRUE(0);
			continue;
		}
		if (EXTOLL_NOTI_W1_ERR(w1) != bad[i].err || EXTOLL_NOTI_W1_TYPE(w1) != RMA2_REQUESTER_NOTIFICATION)
			TH_LOG("%s: word1 %#llx", bad[i].what, (unsigned long long)w1);
		EXPECT_EQ(bad[i].err, EXTOLL_NOTI_W1_ERR(w1));
		EXPECT_EQ(RMA2_REQUESTER_NOTIFICATION, EXTOLL_NOTI_W1_TYPE(w1));
	}
	/* no stray notification, nothing written */
	EXPECT_NE(0, raw_poll(&e, &w0, &w1, 0.3));
	for (int i = 8192; i < 16384; i++)
		ASSERT_EQ(0, buf[i]);
	for (int i = 0; i < 4096; i++)
		ASSERT_EQ(0x5e, rob[i]);
	/* a get from the read-only region and a put still work */
	ASSERT_EQ(0, raw_post(&e, te, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, e.info.nodeid, e.info.vpid,
						     4, 0, 99), ro.nla, d));
	ASSERT_EQ(0, raw_poll(&e, &w0, &w1, TMO_S));
	EXPECT_EQ(0, EXTOLL_NOTI_W1_ERR(w1));
	EXPECT_EQ(EXTOLL_CMD_GET_BT_RSP, EXTOLL_NOTI_W1_CMD(w1));
	EXPECT_EQ(0x5e, buf[8192 + 99]);
	EXPECT_EQ(0, buf[8192 + 100]);
	ASSERT_EQ(0, raw_post(&e, te, EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_PUT, e.info.nodeid, e.info.vpid,
						     4, 0, 4095), s, d));
	ASSERT_EQ(0, raw_poll(&e, &w0, &w1, TMO_S));
	EXPECT_EQ(0, EXTOLL_NOTI_W1_ERR(w1));
	EXPECT_EQ(0, memcmp(buf, buf + 8192, 4096));
	raw_close(&e);
	free(buf);
	free(rob);
}

TEST_HARNESS_MAIN
