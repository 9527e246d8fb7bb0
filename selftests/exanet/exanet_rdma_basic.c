// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA on one node: ranks, registration (accounting, RLIMIT_MEMLOCK, bad
 * input), RDMA pages and their mappings, loopback data between two ranks of
 * the same node, PDID protection between ranks.
 */
#include "exa_rdma.h"
#include <linux/seccomp.h>
#include <pthread.h>
#include <sys/prctl.h>

#define NEED_RDMA(n, len, page)						\
	do {								\
		int __e = rnode_up((n), (len), (page));			\
		if (__e == -ENODEV)					\
			SKIP_TEST("no RDMA contexts on this node");	\
		ASSERT_EQ(0, __e);					\
	} while (0)

/* The longest plain TEST() of this file may take 120 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 120

TEST(rank_assigned_by_first_registration)
{
	struct exanet_rdma_info info;
	struct exanet_dev *dev;
	struct exanet_mr *mr;
	void *buf = map_anon(8192);
	int err;

	err = exanet_open(NULL, &dev);
	if (err == -ENOENT)
		SKIP_TEST("no device");
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, exanet_rdma_query(dev, &info));
	if (!info.num_ranks || !info.num_pages)
		SKIP_TEST("no RDMA contexts on this node");
	EXPECT_EQ(EXANET_RDMA_NO_RANK, info.rank);
	EXPECT_EQ(exanet_node_id(dev), info.node_id);
	EXPECT_EQ(exanet_pdid(dev), info.pdid);
	ASSERT_EQ(0, exanet_reg_mr(dev, buf, 8192, 0, &mr));
	EXPECT_GT(EXANET_RDMA_NUM_RANKS, mr->rank);
	ASSERT_EQ(0, exanet_rdma_query(dev, &info));
	EXPECT_EQ(mr->rank, info.rank);
	EXPECT_EQ(0, exanet_dereg_mr(mr));
	exanet_close(dev);
}

TEST(registration_bad_input)
{
	struct exanet_reg_mr req;
	struct rnode n;
	int fd;
	uint32_t h;
	void *ro;
	long pagesz = sysconf(_SC_PAGESIZE);

	NEED_RDMA(&n, 65536, 0);
	fd = exanet_dev_fd(n.dev);
	ro = mmap(NULL, pagesz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);

#define REG(a, l, acc) (memset(&req, 0, sizeof(req)), req.addr = (uintptr_t)(a), \
			req.len = (l), req.access = (acc),			\
			ioctl(fd, EXANET_IOC_REG_MR, &req) < 0 ? -errno : 0)
	EXPECT_EQ(-EINVAL, REG(n.buf, 0, 0));
	EXPECT_EQ(-EINVAL, REG(n.buf, 4096, 0x80));
	EXPECT_EQ(-EINVAL, REG(~0ull - 10, 4096, 0));
	EXPECT_EQ(-EINVAL, REG(0xffff888000000000ull, 4096, 0));	/* kernel half */
	EXPECT_EQ(-EINVAL, REG(n.buf, 1ull << 40, 0));			/* too big */
	EXPECT_EQ(-EFAULT, REG(ro, 16, 0));				/* read-only */
	munmap(ro, pagesz);
	EXPECT_EQ(-EFAULT, REG(ro, 16, 0));				/* unmapped */
	EXPECT_EQ(-EFAULT, REG(0x1000, 4096, 0));			/* unmapped */
#undef REG
	EXPECT_EQ(-EFAULT, ioctl(fd, EXANET_IOC_REG_MR, (void *)8) < 0 ? -errno : 0);
	EXPECT_EQ(-EFAULT, ioctl(fd, EXANET_IOC_RDMA_INFO, (void *)8) < 0 ? -errno : 0);
	EXPECT_EQ(-EFAULT, ioctl(fd, EXANET_IOC_RDMA_ALLOC, (void *)8) < 0 ? -errno : 0);
	h = 0;
	EXPECT_EQ(-EINVAL, ioctl(fd, EXANET_IOC_DEREG_MR, &h) < 0 ? -errno : 0);
	h = 0x7fffffff;
	EXPECT_EQ(-EINVAL, ioctl(fd, EXANET_IOC_DEREG_MR, &h) < 0 ? -errno : 0);
	h = n.mr->handle;
	EXPECT_EQ(0, ioctl(fd, EXANET_IOC_DEREG_MR, &h) < 0 ? -errno : 0);
	EXPECT_EQ(-EINVAL, ioctl(fd, EXANET_IOC_DEREG_MR, &h) < 0 ? -errno : 0);	/* twice */
	{
		struct exanet_rdma_alloc ra = { .flags = 1 };
		uint32_t p = 99;

		EXPECT_EQ(-EINVAL, ioctl(fd, EXANET_IOC_RDMA_ALLOC, &ra) < 0 ? -errno : 0);
		EXPECT_EQ(-EINVAL, ioctl(fd, EXANET_IOC_RDMA_FREE, &p) < 0 ? -errno : 0);
	}
	/* library argument checks */
	{
		struct exanet_mr *mr;
		struct exanet_raddr ra;

		EXPECT_EQ(-EINVAL, exanet_reg_mr(n.dev, NULL, 10, 0, &mr));
		EXPECT_EQ(-EINVAL, exanet_reg_mr(n.dev, n.buf, 0, 0, &mr));
		EXPECT_EQ(-EINVAL, exanet_raddr_make(1u << 22, 0, 0, &ra));
		EXPECT_EQ(-EINVAL, exanet_raddr_make(0, 8, 0, &ra));
		EXPECT_EQ(-EINVAL, exanet_raddr_make(0, 0, 1ull << 48, &ra));
		EXPECT_EQ(0, exanet_raddr_make(5, 3, 0x7fff12345678ull, &ra));
		{
			uint8_t w[EXANET_RADDR_WIRE_SIZE];
			struct exanet_raddr rb;

			EXPECT_EQ(0, exanet_raddr_encode(&ra, w));
			EXPECT_EQ(0, exanet_raddr_decode(w, &rb));
			EXPECT_EQ(5, rb.node);
			EXPECT_EQ(3, rb.rank);
			EXPECT_EQ(0x7fff12345678ull, rb.va);
			w[7] = 0x80;	/* reserved bits */
			EXPECT_EQ(-EINVAL, exanet_raddr_decode(w, &rb));
		}
	}
	rnode_down(&n);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

TEST(pinned_pages_accounted_and_released)
{
	long base_pages = exa_sysfs_long("rdma_registered_pages");
	long base_pin = vm_pin_kb();
	struct exanet_mr *mr2;
	struct rnode n;

	NEED_RDMA(&n, 1 << 20, 0);
	/* 1 MiB buffer + 1 page of records */
	EXPECT_EQ(base_pages + 257, exa_sysfs_long("rdma_registered_pages"));
	EXPECT_EQ(base_pin + 1028, vm_pin_kb());
	/* overlapping registration of the same pages is allowed, counted twice */
	ASSERT_EQ(0, exanet_reg_mr(n.dev, n.buf + 100, 5000, 0, &mr2));
	EXPECT_EQ(base_pages + 257 + 2, exa_sysfs_long("rdma_registered_pages"));
	EXPECT_EQ(0, exanet_dereg_mr(mr2));
	EXPECT_EQ(0, exanet_dereg_mr(n.mr));
	n.mr = NULL;
	EXPECT_EQ(base_pages + 1, exa_sysfs_long("rdma_registered_pages"));
	EXPECT_EQ(base_pin + 4, vm_pin_kb());
	/* close without deregistration releases the rest */
	exanet_close(n.dev);
	n.dev = NULL;
	EXPECT_EQ(base_pages, exa_sysfs_long("rdma_registered_pages"));
	EXPECT_EQ(base_pin, vm_pin_kb());
	rnode_down(&n);
}

static int memlock_child(void *arg)
{
	struct rlimit rl = { 64 << 10, 64 << 10 };
	struct exanet_dev *dev;
	struct exanet_mr *mr;
	uint8_t *buf = map_anon(1 << 20);
	int err;

	(void)arg;
	if (!buf || setrlimit(RLIMIT_MEMLOCK, &rl))
		return 10;
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 11;
	if (exanet_open(NULL, &dev))
		return 12;
	err = exanet_reg_mr(dev, buf, 1 << 20, 0, &mr);
	if (err != -ENOMEM)
		return 13;
	err = exanet_reg_mr(dev, buf, 32 << 10, 0, &mr);
	if (err)
		return 14;
	/* 32 KiB pinned: another 48 KiB exceeds 64 KiB */
	if (exanet_reg_mr(dev, buf + (64 << 10), 48 << 10, 0, &mr) != -ENOMEM)
		return 15;
	exanet_close(dev);
	return 0;
}

TEST(memlock_limit_enforced_for_unprivileged)
{
	struct rnode n;
	pid_t pid;

	NEED_RDMA(&n, 4096, 0);
	rnode_down(&n);
	pid = exa_spawn_in_pdid(0, memlock_child, NULL);
	ASSERT_LT(0, pid);
	EXPECT_EQ(0, exa_wait_child(pid, 30000));
}

TEST(rdma_page_mapped_only_by_owner)
{
	struct exanet_rdma_alloc req = { 0 };
	struct exanet_dev *other;
	struct rnode n;
	void *p;

	NEED_RDMA(&n, 4096, 0);
	ASSERT_EQ(0, ioctl(exanet_dev_fd(n.dev), EXANET_IOC_RDMA_ALLOC, &req));
	EXPECT_EQ(EXANET_RDMA_PAGE_SIZE, req.mmap_size);
	ASSERT_EQ(0, exanet_open(NULL, &other));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, exanet_dev_fd(other),
		 (off_t)req.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	/* wrong length, private mapping */
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, exanet_dev_fd(n.dev),
		 (off_t)req.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, exanet_dev_fd(n.dev),
		 (off_t)req.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, exanet_dev_fd(n.dev),
		 (off_t)req.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(1, exa_sysfs_long("rdma_pages_in_use") >= 1);
	/* free revokes the mapping: the page reads as a fresh fault -> SIGBUS;
	 * just check that the ioctl frees and that a second free is refused */
	munmap(p, 4096);
	EXPECT_EQ(0, ioctl(exanet_dev_fd(n.dev), EXANET_IOC_RDMA_FREE, &req.page));
	EXPECT_EQ(-EINVAL, ioctl(exanet_dev_fd(n.dev), EXANET_IOC_RDMA_FREE, &req.page) < 0 ?
		  -errno : 0);
	exanet_close(other);
	rnode_down(&n);
}

TEST(ranks_are_exclusive_and_reused)
{
	struct exanet_dev *d[EXANET_RDMA_NUM_RANKS + 1];
	struct exanet_rdma_info info;
	struct exanet_mr *mr;
	uint8_t *buf = map_anon(4096);
	unsigned int i, n, seen = 0;
	long base = exa_sysfs_long("rdma_ranks_in_use");

	ASSERT_EQ(0, exanet_open(NULL, &d[0]));
	ASSERT_EQ(0, exanet_rdma_query(d[0], &info));
	if (!info.num_ranks)
		SKIP_TEST("no RDMA contexts");
	n = info.num_ranks - (unsigned int)base;
	for (i = 0; i < n; i++) {
		if (i)
			ASSERT_EQ(0, exanet_open(NULL, &d[i]));
		ASSERT_EQ(0, exanet_reg_mr(d[i], buf, 4096, 0, &mr));
		EXPECT_EQ(0, seen & (1u << mr->rank));
		seen |= 1u << mr->rank;
	}
	EXPECT_EQ((long)info.num_ranks, exa_sysfs_long("rdma_ranks_in_use"));
	ASSERT_EQ(0, exanet_open(NULL, &d[n]));
	EXPECT_EQ(-EBUSY, exanet_reg_mr(d[n], buf, 4096, 0, &mr));
	exanet_close(d[0]);
	EXPECT_EQ(0, exanet_reg_mr(d[n], buf, 4096, 0, &mr));
	for (i = 1; i <= n; i++)
		exanet_close(d[i]);
	EXPECT_EQ(base, exa_sysfs_long("rdma_ranks_in_use"));
}

/* Loopback: rank a writes into / reads from rank b on the same node. */
TEST(loopback_write_read_integrity)
{
	static const size_t sizes[] = { 1, 7, 256, 4097, 16384, 100000, 1 << 20 };
	struct rnode a, b;
	unsigned int i;

	NEED_RDMA(&a, 2 << 20, 1);
	ASSERT_EQ(0, rnode_up(&b, 2 << 20, 0));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i], off = i * 3 + 1;
		struct exanet_raddr dst;
		struct exanet_rdma_notif rec;

		rpat_fill(a.buf + off, len, 100 + i);
		memset(b.buf, GUARD, b.len);
		ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf + off + 5, &dst));
		ASSERT_EQ(0, post_and_wait(&a, 0, EXANET_RDMA_WCHAN(1), a.buf + off, &dst, len,
					   (uintptr_t)&b.rec[REC_IN], 1000 + i, 30 * SEC, &rec));
		EXPECT_EQ(1, exanet_rdma_notif_poll(&b.rec[REC_IN], &rec));
		EXPECT_EQ(1000 + i, rec.tag);
		EXPECT_EQ(len, rec.length);
		EXPECT_EQ(-1, rpat_check(b.buf + off + 5, len, 100 + i));
		EXPECT_EQ(1, bytes_equal(b.buf, off + 5, GUARD));
		EXPECT_EQ(1, bytes_equal(b.buf + off + 5 + len, b.len - off - 5 - len, GUARD));
		/* read it back into a */
		memset(a.buf, GUARD, a.len);
		ASSERT_EQ(0, post_and_wait(&a, 1, EXANET_RDMA_RCHAN(2), a.buf + 3, &dst, len,
					   (uintptr_t)&a.rec[REC_IN], 7, 30 * SEC, NULL));
		EXPECT_EQ(1, exanet_rdma_notif_poll(&a.rec[REC_IN], NULL));
		EXPECT_EQ(-1, rpat_check(a.buf + 3, len, 100 + i));
		EXPECT_EQ(1, bytes_equal(a.buf + 3 + len, 64, GUARD));
	}
	rnode_down(&b);
	rnode_down(&a);
}

struct notif_waiter {
	struct exanet_rdma_notif *rec;
	int ret;
	int64_t ms;
};

static void *notif_waiter(void *arg)
{
	struct notif_waiter *w = arg;
	int64_t t0 = exa_now_ms();

	w->ret = exanet_rdma_notif_wait(w->rec, NULL, SEC);
	w->ms = exa_now_ms() - t0;
	return NULL;
}

/*
 * exanet_rdma_notif_wait reads NOTIFS of one of the process's RDMA pages
 * between two looks at the record: a record written by a transfer is
 * seen; a page freed while another thread waits takes nothing down (the
 * wait goes on through the next page and ends in its timeout); the other
 * page carries on; with no page left a wait still ends in its timeout.
 */
TEST(notif_wait_polls_the_ni_and_outlives_its_page)
{
	struct exanet_rdma_notif *in, rec;
	struct notif_waiter w = { 0 };
	struct exanet_rdma *second;
	struct exanet_raddr dst;
	struct rnode a, b;
	pthread_t t;

	NEED_RDMA(&a, 65536, 1);
	ASSERT_EQ(0, rnode_up(&b, 65536, 0));
	in = &b.rec[REC_IN];
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	exanet_rdma_notif_reset(in);
	ASSERT_EQ(0, post_and_wait(&a, 0, EXANET_RDMA_WCHAN(0), a.buf, &dst, 8,
				   (uintptr_t)in, 11, 30 * SEC, NULL));
	ASSERT_EQ(1, exanet_rdma_notif_wait(in, &rec, 10 * SEC));
	EXPECT_EQ(11, rec.tag);

	/* a second page, then the first freed under a waiting thread */
	ASSERT_EQ(0, exanet_rdma_alloc(a.dev, &second));
	w.rec = &b.rec[REC_IN + 1];
	exanet_rdma_notif_reset(w.rec);
	ASSERT_EQ(0, pthread_create(&t, NULL, notif_waiter, &w));
	usleep(100000);
	ASSERT_EQ(0, exanet_rdma_free(a.rdma));
	a.rdma = second;
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(-ETIMEDOUT, w.ret);
	EXPECT_LE(900, w.ms);

	/* the remaining page carries a write; then no page at all */
	exanet_rdma_notif_reset(in);
	ASSERT_EQ(0, post_and_wait(&a, 0, EXANET_RDMA_WCHAN(1), a.buf, &dst, 64,
				   (uintptr_t)in, 12, 30 * SEC, NULL));
	ASSERT_EQ(1, exanet_rdma_notif_wait(in, &rec, 10 * SEC));
	EXPECT_EQ(12, rec.tag);
	ASSERT_EQ(0, exanet_rdma_free(a.rdma));
	a.rdma = NULL;
	EXPECT_EQ(-ETIMEDOUT, exanet_rdma_notif_wait(in, NULL, SEC / 10));
	rnode_down(&b);
	rnode_down(&a);
}

static int pdid_child(void *arg)
{
	int *pfd = arg;
	struct rnode v;
	struct rpub pub;
	char c;

	if (rnode_up(&v, 65536, 0))
		return 20;
	memset(v.buf, 0xab, v.len);
	rnode_pub(&v, &pub);
	if (write(pfd[1], &pub, sizeof(pub)) != sizeof(pub))
		return 21;
	if (read(pfd[2], &c, 1) != 1)	/* attacker done */
		return 22;
	if (!bytes_equal(v.buf, v.len, 0xab))
		return 23;
	if (exanet_rdma_notif_poll(&v.rec[REC_IN], NULL))
		return 24;
	rnode_down(&v);
	return 0;
}

TEST(pdid_violation_error_completion_and_victim_unchanged)
{
	struct rnode a;
	struct rpub pub;
	int p1[2], p2[2], fds[3];
	pid_t pid;
	struct exanet_raddr dst;
	char c = 'x';

	NEED_RDMA(&a, 65536, 1);
	ASSERT_EQ(0, pipe(p1));
	ASSERT_EQ(0, pipe(p2));
	fds[0] = p1[0];
	fds[1] = p1[1];
	fds[2] = p2[0];
	pid = exa_spawn_in_pdid(4242, pdid_child, fds);
	ASSERT_LT(0, pid);
	ASSERT_EQ((ssize_t)sizeof(pub), read(p1[0], &pub, sizeof(pub)));
	dst = raddr_at(pub.buf, 0);
	memset(a.buf, 0x11, a.len);
	EXPECT_EQ(-EACCES, post_and_wait(&a, 0, 0, a.buf, &dst, 65536,
					  raddr_at(pub.rec, REC_IN * 32).va, 1, 30 * SEC, NULL));
	EXPECT_EQ(-EACCES, post_and_wait(&a, 1, EXANET_RDMA_RCHAN(0), a.buf, &dst, 4096, 0, 2,
					  30 * SEC, NULL));
	EXPECT_EQ(1, bytes_equal(a.buf, a.len, 0x11));
	EXPECT_EQ(1, write(p2[1], &c, 1));
	EXPECT_EQ(0, exa_wait_child(pid, 30000));
	rnode_down(&a);
}

/* Unregistered target memory and an unused rank: error completions. */
TEST(unregistered_target_and_absent_rank_fail_cleanly)
{
	struct rnode a, b;
	uint8_t *unreg = map_anon(65536);
	struct exanet_raddr dst;
	unsigned int r;

	NEED_RDMA(&a, 65536, 1);
	ASSERT_EQ(0, rnode_up(&b, 65536, 0));
	memset(unreg, 0x33, 65536);
	ASSERT_EQ(0, exanet_raddr_make(b.mr->node, b.mr->rank, (uintptr_t)unreg, &dst));
	EXPECT_EQ(-EREMOTEIO, post_and_wait(&a, 0, 3, a.buf, &dst, 8192, 0, 0, 30 * SEC, NULL));
	EXPECT_EQ(1, bytes_equal(unreg, 65536, 0x33));
	/* read from unregistered remote memory */
	EXPECT_EQ(-EREMOTEIO, post_and_wait(&a, 1, EXANET_RDMA_RCHAN(3), a.buf, &dst, 8192, 0, 0,
					    30 * SEC, NULL));
	/* local source not registered */
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	EXPECT_EQ(-EFAULT, post_and_wait(&a, 0, 4, unreg, &dst, 8192, 0, 0, 30 * SEC, NULL));
	/* deregistered target */
	EXPECT_EQ(0, post_and_wait(&a, 0, 5, a.buf, &dst, 8192, 0, 0, 30 * SEC, NULL));
	ASSERT_EQ(0, exanet_dereg_mr(b.mr));
	b.mr = NULL;
	memset(b.buf, 0x44, b.len);
	EXPECT_EQ(-EREMOTEIO, post_and_wait(&a, 0, 5, a.buf, &dst, 8192, 0, 0, 30 * SEC, NULL));
	EXPECT_EQ(1, bytes_equal(b.buf, b.len, 0x44));
	/* a rank nobody owns */
	for (r = 0; r < EXANET_RDMA_NUM_RANKS; r++)
		if (r != a.mr->rank && r != b.mr_rec->rank)
			break;
	if (exa_sysfs_long("rdma_ranks_in_use") == 2) {
		ASSERT_EQ(0, exanet_raddr_make(b.mr_rec->node, r, (uintptr_t)b.buf, &dst));
		EXPECT_EQ(-ECONNREFUSED, post_and_wait(&a, 0, 6, a.buf, &dst, 64, 0, 0, 30 * SEC,
						       NULL));
	}
	/* no such node */
	ASSERT_EQ(0, exanet_raddr_make(4000, 0, (uintptr_t)b.buf, &dst));
	EXPECT_EQ(-EHOSTUNREACH, post_and_wait(&a, 0, 7, a.buf, &dst, 64, 0, 0, 30 * SEC, NULL));
	/* bad descriptor: misaligned notification address */
	{
		struct exanet_rdma_opts op = { .notify_va = 3 };

		EXPECT_EQ(-EINVAL, exanet_rdma_post_write_on(a.rdma, 8, a.buf, &dst, 64, &op));
		EXPECT_EQ(-EINVAL, exanet_rdma_post_write_on(a.rdma, 40, a.buf, &dst, 64, NULL));
		EXPECT_EQ(-EINVAL, exanet_rdma_post_read_on(a.rdma, 8, a.buf, &dst, 64, NULL));
	}
	rnode_down(&b);
	rnode_down(&a);
	EXPECT_EQ(0, exa_kmsg_bad_lines());
}

/* Kernel bypass: a child in seccomp strict mode posts RDMA writes and
 * reads between two of its ranks and polls channels and notifications. */
static int strict_rdma(void *arg)
{
	int *result_fd = arg, i, ok = 0;
	struct rnode a, b;
	struct exanet_raddr dst;
	char r;

	if (rnode_up(&a, 1 << 16, 1) || rnode_up(&b, 1 << 16, 0))
		return 60;
	if (exanet_mr_raddr(b.mr, b.buf, &dst))
		return 61;
	(void)exanet_rdma_status(a.rdma, 0);		/* fault the page in */
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT))
		return 62;
	for (i = 0; i < 200; i++) {
		struct exanet_rdma_opts op = { .notify_va = (uintptr_t)&b.rec[REC_IN], .tag = i };
		size_t len = 1 + (size_t)i * 97;
		int slot;

		rpat_fill(a.buf, len, 0x5000 + i);
		while ((slot = exanet_rdma_post_write(a.rdma, a.buf, &dst, len, &op)) == -EAGAIN)
			;
		if (slot < 0 || exanet_rdma_wait(a.rdma, slot, EXANET_WAIT_FOREVER, NULL))
			break;
		if (exanet_rdma_notif_wait(&b.rec[REC_IN], NULL, EXANET_WAIT_FOREVER) != 1)
			break;
		slot = exanet_rdma_post_read(a.rdma, a.buf + 32768, &dst, len, NULL);
		if (slot < 0 || exanet_rdma_wait(a.rdma, slot, EXANET_WAIT_FOREVER, NULL))
			break;
		ok += rpat_check(b.buf, len, 0x5000 + i) < 0 &&
		      rpat_check(a.buf + 32768, len, 0x5000 + i) < 0;
	}
	r = ok == 200 ? 'y' : 'n';
	if (write(*result_fd, &r, 1) != 1)
		syscall(SYS_exit, 63);
	syscall(SYS_exit, 0);
	return 64;
}

TEST(data_path_makes_no_syscalls)
{
	struct rnode n;
	int res[2], rc;
	pid_t pid;
	char r = 0;

	NEED_RDMA(&n, 4096, 0);
	rnode_down(&n);
	ASSERT_EQ(0, pipe(res));
	pid = exa_spawn_in_pdid(0, strict_rdma, &res[1]);
	ASSERT_LT(0, pid);
	close(res[1]);
	rc = exa_wait_child(pid, 100000);
	if (rc == 128 + SIGKILL)
		TH_LOG("killed by seccomp: the RDMA data path made a system call");
	ASSERT_EQ(0, rc);
	ASSERT_EQ(1, read(res[0], &r, 1));
	ASSERT_EQ('y', r);
	/* the killed-by-exit child's registrations are gone */
	EXPECT_EQ(0, exa_sysfs_long("rdma_registrations"));
}

TEST_HARNESS_MAIN
