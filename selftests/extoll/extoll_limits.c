// SPDX-License-Identifier: GPL-2.0
/*
 * Fair sharing of the EXTOLL NIC between users (tests.list: 1 node),
 * drivers/common/exa_quota.c; the driver only, no traffic between users:
 *
 *  - per-user caps: uid 65534, through many open files in several forked
 *    helper processes, takes RMA VPIDs, VELO VPIDs, ATU entries (a pool of
 *    pages registered again and again, each page at most ATU_PAGE_REGS
 *    times) and notification queue memory until refused: the refusal is EDQUOT, exactly at
 *    floor(total * max_user_percent / 100) (totals and caps from sysfs
 *    user_usage), while the device has more.  Meanwhile uid 1000 gets its
 *    own cap (at least half of each), and root runs rma2-pingpong and
 *    velo2-pingpong.  Root (CAP_SYS_RESOURCE) is not capped: alone it
 *    takes every unit.  Afterwards user_usage lists nobody and the
 *    driver's counters are back where they started.
 *  - rdma cgroup: rdma.max "extoll0 hca_handle=2 hca_object=3": the third
 *    open (of either unit) and the fourth registered region fail with
 *    EAGAIN; rdma.current follows and is 0 once the process is gone.
 *  - memory cgroup: notification queues are charged to the memory cgroup
 *    of the process that mapped them, and uncharged at exit.
 *
 * ATU regions are placed at random, so a 16-page region may find no room
 * while single pages still do: helpers register 16 pages at a time, then
 * single pages.  The ATU holders run with RLIMIT_MEMLOCK raised (each
 * registration of the same page is pinned and accounted again).  They walk
 * a pool of distinct pages sized for the entries they may get, so that no
 * page is under more than ATU_PAGE_REGS registrations (plus the refused
 * one): DMA-API debugging (debug kernel) warns "exceeded 7 overlapping
 * mappings of cacheline" beyond eight device-writable mappings of one
 * cacheline, a limit of the checker, not of the driver.
 */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>

#include "extoll_raw.h"
#include "../lib/exa_limits.h"

#define USAGE		"/sys/class/extoll/extoll0-rma2/user_usage"
#define MAX_FILES	40	/* files per helper */
#define CHUNK_PAGES	16
#define ATU_PAGE_REGS	6	/* registrations of one page at most */

enum { X_RMA, X_VELO, X_ATU, X_QUEUE, NX };
static const char *const xres_name[NX] = { "rma_vpid", "velo_vpid", "atu_entries", "queue_bytes" };

struct xhold_cmd {
	int32_t res, files;
	int64_t target;		/* queue: bytes to take before the last try;
				 * ATU: the most entries the helper may get */
};

struct xhold_rep {
	int64_t held;		/* VPIDs, ATU entries or queue bytes */
	int32_t err;		/* the refusal that ended it (0: none) */
	int32_t chunk_err;	/* ATU: what ended the 16-page registrations */
	int32_t files;
};

/* Largest notification queue that leaves 0 or at least the smallest one. */
static uint64_t queue_size_for(int64_t left)
{
	for (uint64_t q = RMA2_NOTIQ_MAX_SIZE; q >= RMA2_NOTIQ_MIN_SIZE; q /= 2) {
		int64_t rest = left - (int64_t)(q + EXTOLL_PAGE_SIZE);

		if (rest == 0 || rest >= (int64_t)(RMA2_NOTIQ_MIN_SIZE + EXTOLL_PAGE_SIZE))
			return q;
	}
	return 0;
}

/* An RMA endpoint with a mapped (so allocated) notification queue of q bytes. */
static int open_with_queue(uint64_t q)
{
	int fd = open(EXTOLL_DEV_RMA2, O_RDWR | O_CLOEXEC), err;
	void *p;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SIZE, (unsigned long)q)) {
		err = -errno;
		close(fd);
		return err;
	}
	p = mmap(NULL, RMA2_MMAP_NOTIQ_LEN(q), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 RMA2_MMAP_NOTIQ_OFFSET);
	if (p == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int xholder_fn(struct kid_io *io)
{
	struct xhold_rep rep = { 0 };
	struct rma2_ioc_region r;
	struct xhold_cmd c;
	size_t pool = CHUNK_PAGES, at = 0;
	uint8_t *buf;
	int fd, err = 0;

	if (kid_read(io->rd, &c, sizeof(c)) || c.files > MAX_FILES)
		return 1;
	/*
	 * ATU: a pool of whole chunks with room for c.target entries at
	 * ATU_PAGE_REGS registrations per page; the walk below goes round
	 * it, so the registrations of any two pages differ by one at most.
	 */
	if (c.res == X_ATU && c.target > 0)
		pool = ((size_t)c.target / ATU_PAGE_REGS / CHUNK_PAGES + 2) * CHUNK_PAGES;
	buf = anon_pages(pool * EXTOLL_PAGE_SIZE);
	if (!buf)
		return 1;
	memset(buf, 1, pool * EXTOLL_PAGE_SIZE);
	switch (c.res) {
	case X_RMA:
	case X_VELO:
		for (int f = 0; f < c.files; f++) {
			fd = open(c.res == X_RMA ? EXTOLL_DEV_RMA2 : EXTOLL_DEV_VELO2,
				  O_RDWR | O_CLOEXEC);
			if (fd < 0) {
				err = -errno;
				break;
			}
			rep.files++;
			rep.held++;
		}
		break;
	case X_ATU:
		fd = open(EXTOLL_DEV_RMA2, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			break;
		}
		rep.files++;
		while (!raw_reg(fd, buf + at * EXTOLL_PAGE_SIZE, CHUNK_PAGES * EXTOLL_PAGE_SIZE,
				0, &r)) {
			rep.held += CHUNK_PAGES;
			at = (at + CHUNK_PAGES) % pool;
		}
		rep.chunk_err = -errno;
		while (!raw_reg(fd, buf + at * EXTOLL_PAGE_SIZE, EXTOLL_PAGE_SIZE, 0, &r)) {
			rep.held++;
			at = (at + 1) % pool;
		}
		err = -errno;
		break;
	default: {
		int64_t left = c.target;

		while (rep.files < c.files - 1) {
			uint64_t q = queue_size_for(left);

			if (!q)
				break;
			fd = open_with_queue(q);
			if (fd < 0) {
				err = fd;
				break;
			}
			rep.files++;
			rep.held += (int64_t)(q + EXTOLL_PAGE_SIZE);
			left -= (int64_t)(q + EXTOLL_PAGE_SIZE);
		}
		if (!err) {		/* one more, the smallest there is */
			fd = open_with_queue(RMA2_NOTIQ_MIN_SIZE);
			if (fd < 0) {
				err = fd;
			} else {
				rep.files++;
				rep.held += RMA2_NOTIQ_MIN_SIZE + EXTOLL_PAGE_SIZE;
			}
		}
		break;
	}
	}
	rep.err = err;
	if (kid_write(io->wr, &rep, sizeof(rep)))
		return 2;
	kid_read(io->rd, &c, 1);	/* EOF: let go */
	return 0;
}

/* Helpers of uid take resource r until refused (VPIDs: MAX_FILES per helper). */
static void take(struct __test_metadata *_metadata, struct crowd *cr, uid_t uid, int r,
		 int64_t queue_target, long long *held, int *err, int *chunk_err)
{
	*held = 0;
	*err = 0;
	for (;;) {
		struct xhold_cmd c = { r, MAX_FILES, queue_target };
		struct xhold_rep rep;
		struct kid *k;

		ASSERT_GT(KID_CROWD_MAX, cr->n);
		k = &cr->kid[cr->n];
		ASSERT_EQ(0, kid_spawn(k, 0, uid, xholder_fn, NULL));
		cr->n++;
		ASSERT_EQ(0, kid_write(k->wr, &c, sizeof(c)));
		ASSERT_EQ(0, kid_read_tmo(k->rd, &rep, sizeof(rep), 120000));
		*held += rep.held;
		*err = rep.err;
		if (chunk_err)
			*chunk_err = rep.chunk_err;
		if (rep.err)
			break;
		queue_target -= rep.held;
	}
}

static const char *errname(int err)
{
	switch (-err) {
	case 0: return "none";
	case EDQUOT: return "EDQUOT";
	case ENOSPC: return "ENOSPC";
	case EBUSY: return "EBUSY";
	case ENOMEM: return "ENOMEM";
	case EAGAIN: return "EAGAIN";
	default: return strerror(-err);
	}
}

/* The driver's own counters in the unit of each resource. */
static long long in_use(int r)
{
	switch (r) {
	case X_RMA: return xt_sysfs("rma2", "vpids_in_use");
	case X_VELO: return xt_sysfs("velo2", "vpids_in_use");
	case X_ATU: return xt_sysfs("rma2", "registered_pages");
	default: return xt_sysfs("rma2", "queue_bytes");
	}
}

static void wait_released(struct __test_metadata *_metadata, const struct xt_usage *base)
{
	struct xt_usage seen;
	struct usage u;
	char s[200];

	if (xt_usage_wait(base, 20, &seen) < 0) {
		xt_usage_str(&seen, s, sizeof(s));
		TH_LOG("still held: %s", s);
	}
	ASSERT_TRUE(xt_usage_equal(base, &seen));
	ASSERT_EQ(0, usage_read(USAGE, &u));
	EXPECT_EQ(0, u.nusers);
}

static int tools_loopback(void)
{
	return exa_system("for t in rma2-pingpong velo2-pingpong; do p=$((p+1)); "
			  "($t --server --oob :4748$p -t 30 >/tmp/xl-$t.srv 2>&1 &); sleep 1; "
			  "$t --client --oob 127.0.0.1:4748$p -t 30 -i 50 -w 5 -S 8,64 "
			  ">/tmp/xl-$t.cli 2>&1 || { cat /tmp/xl-$t.*; exit 1; }; done");
}

/* The longest plain TEST() of this file may take 600 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 600

TEST(per_user_caps_edquot_other_user_and_root_unaffected)
{
	static const int order[NX] = { X_QUEUE, X_ATU, X_RMA, X_VELO };
	struct crowd a = { .n = 0 }, b = { .n = 0 }, root = { .n = 0 };
	long long total[NX], cap[NX], held;
	struct rlimit rl = { 1ul << 30, 1ul << 30 };
	int ri[NX], err, chunk_err, refused[NX] = { 0 };
	struct xt_usage base;
	struct usage u;
	long pct;

	if (access(EXTOLL_DEV_RMA2, F_OK))
		SKIP_TEST("no EXTOLL device");
	/* the ATU holders pin the same pages again and again */
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	pct = module_param_long("extoll", "max_user_percent");
	ASSERT_LT(0, pct);
	EXPECT_EQ(50, pct);		/* the default */
	ASSERT_EQ(0, usage_read(USAGE, &u));
	ASSERT_EQ(0, u.nusers);
	xt_usage_read(&base);
	for (int r = 0; r < NX; r++) {
		ri[r] = usage_res(&u, xres_name[r]);
		ASSERT_LE(0, ri[r]);
		total[r] = u.total[ri[r]];
		cap[r] = u.cap[ri[r]];
		TH_LOG("%s: %lld in total, cap %lld per user (%ld %%), %lld in use", xres_name[r],
		       total[r], cap[r], pct, in_use(r));
		ASSERT_LT(0, total[r]);
		EXPECT_EQ(total[r] * pct / 100, cap[r]);
		ASSERT_EQ(0, in_use(r));
	}
	EXPECT_EQ(xt_sysfs("rma2", "atu_entries") - 1, total[X_ATU]);	/* NLA 0 is never used */

	/* user A */
	for (int i = 0; i < NX; i++) {
		int r = order[i];

		take(_metadata, &a, UID_NOBODY, r, r == X_ATU ? cap[r] : cap[X_QUEUE], &held,
		     &err, &chunk_err);
		refused[r] = err;
		if (r == X_ATU)
			TH_LOG("user A: 16-page regions ended with %s", errname(chunk_err));
		EXPECT_EQ(-EDQUOT, err);
		EXPECT_GT(total[r], in_use(r));		/* refused although the device has more */
	}
	TH_LOG("user A: %d helper processes (up to %d open files each)", a.n, MAX_FILES);
	ASSERT_EQ(0, usage_read(USAGE, &u));
	for (int r = 0; r < NX; r++) {
		held = usage_of(&u, UID_NOBODY, ri[r]);
		TH_LOG("user A (uid %d): held %lld of %lld %s (cap %lld), then %s", UID_NOBODY, held,
		       total[r], xres_name[r], cap[r], errname(refused[r]));
		EXPECT_EQ(cap[r], held);
		EXPECT_EQ(cap[r], in_use(r));
	}

	/* user B while A holds its cap */
	for (int i = 0; i < NX; i++) {
		int r = order[i];

		take(_metadata, &b, UID_USER, r, r == X_ATU ? cap[r] : cap[X_QUEUE], &held,
		     &err, &chunk_err);
		refused[r] = err;
		if (r == X_ATU)
			TH_LOG("user B: 16-page regions ended with %s", errname(chunk_err));
		/* the queue budget may be used up at the same time: ENOMEM first */
		if (r == X_QUEUE && err == -ENOMEM && in_use(r) == total[r])
			continue;
		EXPECT_EQ(-EDQUOT, err);
	}
	ASSERT_EQ(0, usage_read(USAGE, &u));
	for (int r = 0; r < NX; r++) {
		held = usage_of(&u, UID_USER, ri[r]);
		TH_LOG("user B (uid %d) while A holds its cap: got %lld of %lld %s, then %s",
		       UID_USER, held, total[r], xres_name[r], errname(refused[r]));
		EXPECT_EQ(cap[r], held);
		EXPECT_LE(total[r] / 2, held);
		EXPECT_EQ(cap[r], usage_of(&u, UID_NOBODY, ri[r]));
	}
	crowd_release(_metadata, &b, 30000);

	/* root uses the NIC while A holds its cap */
	if (!exa_system("command -v rma2-pingpong >/dev/null && command -v velo2-pingpong >/dev/null")) {
		EXPECT_EQ(0, tools_loopback());
		TH_LOG("root: rma2-pingpong and velo2-pingpong (loopback) ran while user A held its cap");
	}
	crowd_release(_metadata, &a, 30000);
	wait_released(_metadata, &base);

	/* root (CAP_SYS_RESOURCE): every unit; only the device says no */
	for (int i = 0; i < NX; i++) {
		int r = order[i];

		take(_metadata, &root, 0, r, r == X_ATU ? total[r] : total[X_QUEUE], &held,
		     &err, &chunk_err);
		EXPECT_NE(-EDQUOT, err);
		EXPECT_EQ(r == X_QUEUE ? -ENOMEM : r == X_ATU ? -ENOSPC : -EBUSY, err);
	}
	ASSERT_EQ(0, usage_read(USAGE, &u));
	for (int r = 0; r < NX; r++) {
		held = usage_of(&u, 0, ri[r]);
		TH_LOG("root: held %lld of %lld %s (cap %lld does not apply)", held, total[r],
		       xres_name[r], cap[r]);
		EXPECT_EQ(total[r], held);
	}
	crowd_release(_metadata, &root, 30000);
	wait_released(_metadata, &base);
}

/* ---------------------------------------------------------- rdma cgroup */

enum { CG_RMA1, CG_VELO1, CG_RMA2, CG_VELO2, CG_REG1, CG_REG2, CG_REG3, CG_REG4,
       CG_REG_AFTER_UNREG, CG_NSTEP };
static const char *const cg_step[CG_NSTEP] = {
	"open rma2", "open velo2", "open rma2 (3rd handle)", "open velo2 (3rd handle)",
	"register 1", "register 2", "register 3", "register 4", "register after an unregister",
};

struct cg_rep {
	int32_t err[CG_NSTEP];
};

static int cg_child_fn(struct kid_io *io)
{
	uint8_t *buf = anon_pages(4 * EXTOLL_PAGE_SIZE);
	struct rma2_ioc_region r[CG_NSTEP];
	int fd[CG_NSTEP];
	struct cg_rep rep;
	char go;

	memset(&rep, 0, sizeof(rep));
	if (kid_read(io->rd, &go, 1) || !buf)
		return 1;
	memset(buf, 1, 4 * EXTOLL_PAGE_SIZE);
	for (int i = CG_RMA1; i <= CG_VELO2; i++) {
		fd[i] = open(i == CG_RMA1 || i == CG_RMA2 ? EXTOLL_DEV_RMA2 : EXTOLL_DEV_VELO2,
			     O_RDWR | O_CLOEXEC);
		rep.err[i] = fd[i] < 0 ? -errno : 0;
	}
	if (fd[CG_RMA1] < 0)
		goto out;
	for (int i = CG_REG1; i <= CG_REG4; i++)
		rep.err[i] = raw_reg(fd[CG_RMA1], buf + (i - CG_REG1) * EXTOLL_PAGE_SIZE,
				     EXTOLL_PAGE_SIZE, 0, &r[i]) ? -errno : 0;
	/* the test reads rdma.current now */
	if (kid_write(io->wr, &rep, sizeof(rep)) || kid_read(io->rd, &go, 1))
		return 2;
	if (!rep.err[CG_REG1] && ioctl(fd[CG_RMA1], RMA2_IOCTL_UNREGISTER_REGION, &r[CG_REG1]))
		return 3;
	rep.err[CG_REG_AFTER_UNREG] = raw_reg(fd[CG_RMA1], buf, EXTOLL_PAGE_SIZE, 0,
					      &r[CG_REG_AFTER_UNREG]) ? -errno : 0;
out:
	if (kid_write(io->wr, &rep, sizeof(rep)))
		return 4;
	kid_read(io->rd, &go, 1);	/* EOF */
	return 0;
}

TEST(rdma_cgroup_caps_handles_and_regions_eagain)
{
	static const int want[CG_NSTEP] = {
		[CG_RMA2] = -EAGAIN, [CG_VELO2] = -EAGAIN, [CG_REG4] = -EAGAIN,
	};
	long long h = 0, o = 0;
	struct kid k = { 0 };
	struct cg_rep rep;
	char cg[128], go = 'g';
	int err;

	if (access(EXTOLL_DEV_RMA2, F_OK))
		SKIP_TEST("no EXTOLL device");
	err = cg_create(cg, sizeof(cg), "extoll_limits_rdma", "rdma");
	if (err == -ENOENT)
		SKIP_TEST("no cgroup2 with the rdma controller at " CG_ROOT);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, cg_write(cg, "rdma.max", "extoll0 hca_handle=2 hca_object=3"));
	ASSERT_EQ(0, cg_rdma(cg, "rdma.max", "extoll0", &h, &o));
	ASSERT_EQ(2, h);
	ASSERT_EQ(3, o);
	ASSERT_EQ(0, kid_spawn(&k, 0, UID_NOBODY, cg_child_fn, NULL));
	ASSERT_EQ(0, cg_move(cg, k.pid));
	ASSERT_EQ(0, kid_write(k.wr, &go, 1));
	ASSERT_EQ(0, kid_read_tmo(k.rd, &rep, sizeof(rep), 30000));
	ASSERT_EQ(0, cg_rdma(cg, "rdma.current", "extoll0", &h, &o));
	TH_LOG("rdma.current while the child holds 2 endpoints and 3 regions: extoll0 "
	       "hca_handle=%lld hca_object=%lld", h, o);
	EXPECT_EQ(2, h);
	EXPECT_EQ(3, o);
	ASSERT_EQ(0, kid_write(k.wr, &go, 1));
	ASSERT_EQ(0, kid_read_tmo(k.rd, &rep, sizeof(rep), 30000));
	for (int i = 0; i < CG_NSTEP; i++) {
		TH_LOG("%s: %s", cg_step[i], errname(rep.err[i]));
		EXPECT_EQ(want[i], rep.err[i]);
	}
	EXPECT_EQ(0, cg_rdma(cg, "rdma.current", "extoll0", &h, &o));
	EXPECT_EQ(3, o);
	EXPECT_EQ(0, kid_finish(&k, 20000));
	/* the endpoints are released when their last reference goes */
	for (int i = 0; i < 100 && !cg_rdma(cg, "rdma.current", "extoll0", &h, &o) && (h || o); i++)
		usleep(50000);
	TH_LOG("rdma.current after the child exited: extoll0 hca_handle=%lld hca_object=%lld",
	       h, o);
	EXPECT_EQ(0, h);
	EXPECT_EQ(0, o);
	EXPECT_EQ(0, cg_remove(cg, "extoll0"));
}

/* --------------------------------------------------------- memory cgroup */

#define MEMCG_EPS	8
#define MEMCG_QUEUE	(1u << 20)

static int memcg_child_fn(struct kid_io *io)
{
	int32_t err = 0;
	char go;

	if (kid_read(io->rd, &go, 1))
		return 1;
	for (int i = 0; i < MEMCG_EPS && !err; i++) {
		int fd = open_with_queue(MEMCG_QUEUE);

		err = fd < 0 ? fd : 0;
	}
	if (kid_write(io->wr, &err, sizeof(err)))
		return 2;
	kid_read(io->rd, &go, 1);	/* EOF */
	return 0;
}

TEST(queues_charged_to_memory_cgroup)
{
	const long long queues = (long long)MEMCG_EPS * (MEMCG_QUEUE + EXTOLL_PAGE_SIZE);
	long long m0, m1, m2 = 0;
	struct kid k = { 0 };
	char cg[128], go = 'g';
	int32_t err;

	if (access(EXTOLL_DEV_RMA2, F_OK))
		SKIP_TEST("no EXTOLL device");
	err = cg_create(cg, sizeof(cg), "extoll_limits_mem", "memory");
	if (err == -ENOENT)
		SKIP_TEST("no cgroup2 with the memory controller at " CG_ROOT);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, kid_spawn(&k, 0, UID_NOBODY, memcg_child_fn, NULL));
	ASSERT_EQ(0, cg_move(cg, k.pid));
	m0 = cg_read_ll(cg, "memory.current");
	ASSERT_LE(0, m0);
	ASSERT_EQ(0, kid_write(k.wr, &go, 1));
	ASSERT_EQ(0, kid_read_tmo(k.rd, &err, sizeof(err), 30000));
	ASSERT_EQ(0, err);
	m1 = cg_read_ll(cg, "memory.current");
	EXPECT_EQ(0, kid_finish(&k, 20000));
	for (int i = 0; i < 100; i++) {
		m2 = cg_read_ll(cg, "memory.current");
		if (m2 <= m1 - queues)
			break;
		usleep(50000);
	}
	TH_LOG("memory.current: %lld KiB before, %lld KiB with %d notification queues of %u KiB "
	       "(%lld KiB with their read-pointer pages), %lld KiB after the process exited",
	       m0 >> 10, m1 >> 10, MEMCG_EPS, MEMCG_QUEUE >> 10, queues >> 10, m2 >> 10);
	EXPECT_LE(m0 + queues, m1);
	EXPECT_GE(m1 - queues, m2);
	EXPECT_EQ(0, cg_remove(cg, NULL));
}

TEST_HARNESS_MAIN
