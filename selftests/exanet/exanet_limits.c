// SPDX-License-Identifier: GPL-2.0
/*
 * Fair sharing of the ExaNet NI between users (tests.list: nodes = 1),
 * drivers/common/exa_quota.c:
 *
 *  - per-user caps: uid 65534, through many open files in several forked
 *    helper processes, takes packetizer interfaces, mailboxes, RDMA ranks
 *    and RDMA pages until the driver refuses: the refusal is EDQUOT,
 *    exactly at floor(total * max_user_percent / 100) (totals and caps
 *    from sysfs user_usage), while the device still has free units.  While
 *    it holds all that, uid 1000 gets its own cap (at least half of each
 *    resource) and root (CAP_SYS_RESOURCE) runs exanet-pingpong.  Root is
 *    not capped: alone it takes every unit.  When the holders are gone,
 *    user_usage lists no user and the in_use counters are back where they
 *    started.
 *  - rdma cgroup: in a cgroup with rdma.max "exanet0 hca_handle=2
 *    hca_object=3" the third open and the fourth object fail with EAGAIN;
 *    a freed object makes room again; rdma.current follows and is 0 once
 *    the process is gone, and the cgroup can be removed.
 *  - memory cgroup: mailbox queues (N x 1 MiB) are charged to the memory
 *    cgroup of the process that allocated them, and uncharged at exit.
 */
#include "exa_rdma.h"
#include "../lib/exa_limits.h"

#define USAGE		EXANET_SYSFS "user_usage"
#define HOLD_FILES	2	/* files per helper process */

enum { R_PKT, R_MBOX, R_RANK, R_RPAGE, NRES };
static const char *const res_name[NRES] = { "pkt", "mbox", "rank", "rdma_page" };
static const char *const in_use_attr[NRES] = {
	"pkt_in_use", "mbox_in_use", "rdma_ranks_in_use", "rdma_pages_in_use"
};

struct hold_cmd {
	int32_t res, files;
};

struct hold_rep {
	int32_t held;		/* units taken */
	int32_t err;		/* the refusal that ended it (0: none) */
	int32_t files;
};

/*
 * Open up to cmd.files files and take units of one resource on each until
 * refused; a file's own limit (ENOSPC) moves on to the next file, any
 * other refusal ends the run.  A rank is one per file.  Then hold
 * everything until the test closes the pipe.
 */
static int holder_fn(struct kid_io *io)
{
	struct exanet_dev *dev[HOLD_FILES];
	uint8_t *page = map_anon(4096);
	struct hold_rep rep = { 0 };
	struct hold_cmd c;
	int err = 0;

	if (kid_read(io->rd, &c, sizeof(c)) || c.files > HOLD_FILES || !page)
		return 1;
	for (int f = 0; f < c.files; f++) {
		err = exanet_open(NULL, &dev[f]);
		if (err)
			break;
		rep.files++;
		for (;;) {
			struct exanet_pkt *pkt;
			struct exanet_mbox *mb;
			struct exanet_rdma *rd;
			struct exanet_mr *mr;

			switch (c.res) {
			case R_PKT:
				err = exanet_pkt_alloc(dev[f], &pkt);
				break;
			case R_MBOX:
				err = exanet_mbox_alloc(dev[f], EXANET_MBOX_MIN_SLOTS, &mb);
				break;
			case R_RANK:
				err = exanet_reg_mr(dev[f], page, 4096, 0, &mr);
				break;
			default:
				err = exanet_rdma_alloc(dev[f], &rd);
				break;
			}
			if (err)
				break;
			rep.held++;
			if (c.res == R_RANK)
				break;		/* one per file */
		}
		if (err && err != -ENOSPC)
			break;
	}
	rep.err = err;
	if (kid_write(io->wr, &rep, sizeof(rep)))
		return 2;
	kid_read(io->rd, &c, 1);	/* EOF: let go */
	return 0;
}

/*
 * Helpers of uid take resource r, HOLD_FILES files each, until a refusal
 * other than a file's own limit, or until ENOSPC with none left on the
 * device (ENOSPC is also a file's own limit).
 */
static void take(struct __test_metadata *_metadata, struct crowd *cr, uid_t uid, int r,
		 long long total, long long *held, int *err)
{
	*held = 0;
	*err = 0;
	for (;;) {
		struct hold_cmd c = { r, HOLD_FILES };
		struct hold_rep rep;
		struct kid *k;

		ASSERT_GT(KID_CROWD_MAX, cr->n);
		k = &cr->kid[cr->n];
		ASSERT_EQ(0, kid_spawn(k, 0, uid, holder_fn, NULL));
		cr->n++;
		ASSERT_EQ(0, kid_write(k->wr, &c, sizeof(c)));
		ASSERT_EQ(0, kid_read_tmo(k->rd, &rep, sizeof(rep), 60000));
		*held += rep.held;
		*err = rep.err;
		if (rep.err && rep.err != -ENOSPC)
			break;
		if (rep.err == -ENOSPC && exa_sysfs_long(in_use_attr[r]) >= total)
			break;		/* the device is full */
	}
}

static const char *errname(int err)
{
	switch (-err) {
	case 0: return "none";
	case EDQUOT: return "EDQUOT";
	case ENOSPC: return "ENOSPC";
	case EBUSY: return "EBUSY";
	case EAGAIN: return "EAGAIN";
	default: return strerror(-err);
	}
}

/* Has this node RDMA ranks and pages (ranks need the IOMMU)? */
static int node_has_rdma(void)
{
	struct exanet_rdma_info ri;
	struct exanet_dev *dev;
	int ok;

	if (exanet_open(NULL, &dev))
		return 0;
	ok = !exanet_rdma_query(dev, &ri) && ri.num_ranks && ri.num_pages;
	exanet_close(dev);
	return ok;
}

static int pingpong_loopback(void)
{
	unsigned int port = 18990;

	return exa_system("(exanet-pingpong --server --oob %u --timeout 20 >/tmp/lim-pp.srv 2>&1 &); "
			  "i=0; until grep -q ':%04X 00000000:0000 0A' /proc/net/tcp; do "
			  "i=$((i+1)); [ $i -gt 600 ] && exit 90; sleep 0.05; done; "
			  "exanet-pingpong --client --oob 127.0.0.1:%u --sizes 8,64 --iters 100 "
			  "--warmup 10 >/tmp/lim-pp.cli 2>&1 || { cat /tmp/lim-pp.*; exit 91; }",
			  port, port, port);
}

/* The longest plain TEST() of this file may take 300 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300

TEST(per_user_caps_edquot_other_user_and_root_unaffected)
{
	static const int order[NRES] = { R_RPAGE, R_RANK, R_PKT, R_MBOX };
	struct crowd a = { .n = 0 }, b = { .n = 0 }, root = { .n = 0 };
	long long base[NRES], total[NRES], cap[NRES], held, after;
	int ri[NRES], err, rdma, nres, refused[NRES] = { 0 };
	struct usage u;
	long pct;

	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	pct = module_param_long("exanet", "max_user_percent");
	ASSERT_LT(0, pct);
	EXPECT_EQ(50, pct);		/* the default */
	ASSERT_EQ(0, usage_read(USAGE, &u));
	ASSERT_EQ(0, u.nusers);		/* nobody holds anything yet */
	rdma = node_has_rdma();
	nres = rdma ? NRES : 2;
	for (int r = 0; r < NRES; r++) {
		ri[r] = usage_res(&u, res_name[r]);
		ASSERT_LE(0, ri[r]);
		total[r] = u.total[ri[r]];
		cap[r] = u.cap[ri[r]];
		base[r] = r < nres ? exa_sysfs_long(in_use_attr[r]) : 0;
		TH_LOG("%s: %lld in total, cap %lld per user (%ld %%), %lld in use", res_name[r],
		       total[r], cap[r], pct, base[r]);
		ASSERT_LT(0, total[r]);
		EXPECT_EQ(total[r] * pct / 100, cap[r]);
		ASSERT_EQ(0, base[r]);
	}
	if (!rdma)
		TH_LOG("no RDMA ranks on this node: packetizer interfaces and mailboxes only");

	/* user A takes all it can of everything */
	for (int i = 0; i < NRES; i++) {
		int r = order[i];

		if (r >= nres)
			continue;
		take(_metadata, &a, UID_NOBODY, r, total[r], &held, &err);
		refused[r] = err;
		EXPECT_EQ(-EDQUOT, err);
		after = exa_sysfs_long(in_use_attr[r]);
		EXPECT_GT(total[r], after);	/* refused although the device has more */
	}
	TH_LOG("user A: %d helper processes (up to %d open files each)", a.n, HOLD_FILES);
	ASSERT_EQ(0, usage_read(USAGE, &u));
	for (int r = 0; r < nres; r++) {
		held = usage_of(&u, UID_NOBODY, ri[r]);
		TH_LOG("user A (uid %d): held %lld of %lld %s (cap %lld), then %s", UID_NOBODY, held,
		       total[r], res_name[r], cap[r], errname(refused[r]));
		EXPECT_EQ(cap[r], held);
		EXPECT_EQ(base[r] + cap[r], exa_sysfs_long(in_use_attr[r]));
	}

	/* user B still gets its share (at least half) while A holds everything */
	for (int i = 0; i < NRES; i++) {
		int r = order[i];

		if (r >= nres)
			continue;
		take(_metadata, &b, UID_USER, r, total[r], &held, &err);
		refused[r] = err;
		EXPECT_EQ(-EDQUOT, err);
	}
	ASSERT_EQ(0, usage_read(USAGE, &u));
	for (int r = 0; r < nres; r++) {
		held = usage_of(&u, UID_USER, ri[r]);
		TH_LOG("user B (uid %d) while A holds its cap: got %lld of %lld %s, then %s",
		       UID_USER, held, total[r], res_name[r], errname(refused[r]));
		EXPECT_EQ(cap[r], held);
		EXPECT_LE(total[r] / 2, held);
		EXPECT_EQ(cap[r], usage_of(&u, UID_NOBODY, ri[r]));	/* A untouched */
	}
	crowd_release(_metadata, &b, 20000);
	ASSERT_EQ(0, usage_read(USAGE, &u));
	EXPECT_EQ(0, usage_of(&u, UID_USER, ri[R_PKT]) + usage_of(&u, UID_USER, ri[R_MBOX]));

	/* root runs the tool's allocation path and traffic while A holds its cap */
	if (!exa_system("command -v exanet-pingpong >/dev/null 2>&1")) {
		EXPECT_EQ(0, pingpong_loopback());
		TH_LOG("root: exanet-pingpong (loopback) ran while user A held its cap");
	}
	crowd_release(_metadata, &a, 20000);

	ASSERT_EQ(0, usage_read(USAGE, &u));
	EXPECT_EQ(0, u.nusers);
	for (int r = 0; r < nres; r++)
		EXPECT_EQ(base[r], exa_sysfs_long(in_use_attr[r]));

	/* root (CAP_SYS_RESOURCE) is not capped: it takes every unit */
	for (int i = 0; i < NRES; i++) {
		int r = order[i];

		if (r >= nres)
			continue;
		take(_metadata, &root, 0, r, total[r], &held, &err);
		EXPECT_NE(-EDQUOT, err);
	}
	ASSERT_EQ(0, usage_read(USAGE, &u));
	for (int r = 0; r < nres; r++) {
		held = usage_of(&u, 0, ri[r]);
		TH_LOG("root: held %lld of %lld %s (cap %lld does not apply)", held, total[r],
		       res_name[r], cap[r]);
		EXPECT_EQ(total[r] - base[r], held);
		EXPECT_LT(cap[r], held);
	}
	crowd_release(_metadata, &root, 20000);

	/* all given back */
	ASSERT_EQ(0, usage_read(USAGE, &u));
	EXPECT_EQ(0, u.nusers);
	for (int r = 0; r < nres; r++)
		EXPECT_EQ(base[r], exa_sysfs_long(in_use_attr[r]));
}

/* ---------------------------------------------------------- rdma cgroup */

enum { CG_OPEN1, CG_OPEN2, CG_OPEN3, CG_PKT1, CG_MBOX1, CG_PKT2, CG_OBJ4_MBOX, CG_OBJ4_PKT,
       CG_OBJ4_RANK, CG_AFTER_FREE, CG_NSTEP };
static const char *const cg_step[CG_NSTEP] = {
	"open 1", "open 2", "open 3", "pkt (object 1)", "mbox (object 2)", "pkt (object 3)",
	"mbox (object 4)", "pkt (object 4)", "rank (object 4)", "mbox after a free",
};

struct cg_rep {
	int32_t err[CG_NSTEP];
	int64_t handles, objects;	/* rdma.current as the child saw it, before the free */
};

static int cg_child_fn(struct kid_io *io)
{
	struct exanet_dev *d1 = NULL, *d2 = NULL, *d3 = NULL;
	struct exanet_pkt *p1 = NULL, *p2;
	struct exanet_mbox *mb;
	struct exanet_mr *mr;
	uint8_t *page = map_anon(4096);
	struct cg_rep rep;
	char go;

	memset(&rep, 0, sizeof(rep));
	if (kid_read(io->rd, &go, 1) || !page)	/* in the cgroup now */
		return 1;
	rep.err[CG_OPEN1] = exanet_open(NULL, &d1);
	rep.err[CG_OPEN2] = exanet_open(NULL, &d2);
	rep.err[CG_OPEN3] = exanet_open(NULL, &d3);
	if (rep.err[CG_OPEN1] || rep.err[CG_OPEN2])
		goto out;
	rep.err[CG_PKT1] = exanet_pkt_alloc(d1, &p1);
	rep.err[CG_MBOX1] = exanet_mbox_alloc(d1, 16, &mb);
	rep.err[CG_PKT2] = exanet_pkt_alloc(d2, &p2);
	rep.err[CG_OBJ4_MBOX] = exanet_mbox_alloc(d2, 16, &mb);
	rep.err[CG_OBJ4_PKT] = exanet_pkt_alloc(d1, &p2);
	rep.err[CG_OBJ4_RANK] = exanet_reg_mr(d2, page, 4096, 0, &mr);
	/* the test reads rdma.current now */
	if (kid_write(io->wr, &rep, sizeof(rep)) || kid_read(io->rd, &go, 1))
		return 2;
	if (!rep.err[CG_PKT1])
		exanet_pkt_free(p1);
	rep.err[CG_AFTER_FREE] = exanet_mbox_alloc(d2, 16, &mb);
out:
	if (kid_write(io->wr, &rep, sizeof(rep)))
		return 3;
	kid_read(io->rd, &go, 1);	/* EOF */
	return 0;
}

TEST(rdma_cgroup_caps_handles_and_objects_eagain)
{
	static const int want[CG_NSTEP] = {
		[CG_OPEN3] = -EAGAIN, [CG_OBJ4_MBOX] = -EAGAIN, [CG_OBJ4_PKT] = -EAGAIN,
		[CG_OBJ4_RANK] = -EAGAIN,
	};
	long long h = 0, o = 0;
	struct kid k = { 0 };
	struct cg_rep rep;
	char cg[128], go = 'g';
	int err, rdma = node_has_rdma();

	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	err = cg_create(cg, sizeof(cg), "exa_limits_rdma", "rdma");
	if (err == -ENOENT)
		SKIP_TEST("no cgroup2 with the rdma controller at " CG_ROOT);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, cg_write(cg, "rdma.max", "exanet0 hca_handle=2 hca_object=3"));
	ASSERT_EQ(0, cg_rdma(cg, "rdma.max", "exanet0", &h, &o));
	ASSERT_EQ(2, h);
	ASSERT_EQ(3, o);

	ASSERT_EQ(0, kid_spawn(&k, 0, UID_NOBODY, cg_child_fn, NULL));
	ASSERT_EQ(0, cg_move(cg, k.pid));
	ASSERT_EQ(0, kid_write(k.wr, &go, 1));
	ASSERT_EQ(0, kid_read_tmo(k.rd, &rep, sizeof(rep), 30000));
	ASSERT_EQ(0, cg_rdma(cg, "rdma.current", "exanet0", &h, &o));
	TH_LOG("rdma.current while the child holds 2 files and 3 objects: exanet0 hca_handle=%lld "
	       "hca_object=%lld", h, o);
	EXPECT_EQ(2, h);
	EXPECT_EQ(3, o);
	ASSERT_EQ(0, kid_write(k.wr, &go, 1));
	ASSERT_EQ(0, kid_read_tmo(k.rd, &rep, sizeof(rep), 30000));
	for (int i = 0; i < CG_NSTEP; i++) {
		int w = want[i];

		if (i == CG_OBJ4_RANK && !rdma)
			w = -ENODEV;	/* no rank to take on this node */
		TH_LOG("%s: %s", cg_step[i], errname(rep.err[i]));
		EXPECT_EQ(w, rep.err[i]);
	}
	EXPECT_EQ(0, cg_rdma(cg, "rdma.current", "exanet0", &h, &o));
	EXPECT_EQ(3, o);		/* the free made room for one */
	EXPECT_EQ(0, kid_finish(&k, 20000));
	ASSERT_EQ(0, cg_rdma(cg, "rdma.current", "exanet0", &h, &o));
	TH_LOG("rdma.current after the child exited: exanet0 hca_handle=%lld hca_object=%lld", h, o);
	EXPECT_EQ(0, h);
	EXPECT_EQ(0, o);
	EXPECT_EQ(0, cg_remove(cg, "exanet0"));
}

/* --------------------------------------------------------- memory cgroup */

#define MEMCG_MBOXES	8	/* one file's limit */

static int memcg_child_fn(struct kid_io *io)
{
	struct exanet_dev *dev;
	struct exanet_mbox *mb;
	int32_t err = 0;
	char go;

	if (kid_read(io->rd, &go, 1))
		return 1;
	err = exanet_open(NULL, &dev);
	for (int i = 0; !err && i < MEMCG_MBOXES; i++)
		err = exanet_mbox_alloc(dev, EXANET_MBOX_MAX_SLOTS, &mb);
	if (kid_write(io->wr, &err, sizeof(err)))
		return 2;
	kid_read(io->rd, &go, 1);	/* EOF */
	return 0;
}

TEST(mailbox_queues_charged_to_memory_cgroup)
{
	const long long queues = (long long)MEMCG_MBOXES * EXANET_MBOX_MAX_SLOTS *
				 EXANET_MBOX_SLOT_SIZE;
	long long m0, m1, m2;
	struct kid k = { 0 };
	char cg[128], go = 'g';
	int32_t err;

	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	err = cg_create(cg, sizeof(cg), "exa_limits_mem", "memory");
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
	m2 = cg_read_ll(cg, "memory.current");
	TH_LOG("memory.current: %lld KiB before, %lld KiB with %d mailboxes of %d slots "
	       "(%lld KiB of queues), %lld KiB after the process exited", m0 >> 10, m1 >> 10,
	       MEMCG_MBOXES, EXANET_MBOX_MAX_SLOTS, queues >> 10, m2 >> 10);
	EXPECT_LE(m0 + queues, m1);
	EXPECT_GE(m1 - queues, m2);
	EXPECT_EQ(0, cg_remove(cg, NULL));
}

TEST_HARNESS_MAIN
