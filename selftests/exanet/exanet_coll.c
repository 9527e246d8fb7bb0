// SPDX-License-Identifier: GPL-2.0
/*
 * The NI's collective (allreduce) unit through libexanet (collectives 1.3,
 * uapi/exanet_coll.h), on every node that runs the program (tests.list: 1,
 * 2, 3 and 4 nodes, and 4 on a lossy fabric).  Results are compared bit
 * for bit with selftests/lib/coll_ref.h, the unit's combining order
 * (recursive doubling with fold-in / fold-out), on every member; floating
 * point sums also against a long double sum with a tolerance, and every
 * member's result hash against the others'.  Groups of all nodes, sub-sets
 * (3 of 4: fold-in and fold-out; a pair {1, 3}), members in reverse order,
 * two groups at once, several members on one node (loopback groups, which
 * give a 1-node run real work), barriers, refused arguments, error
 * completions (unregistered memory, members that disagree, a member that
 * leaves) and the unit's counters (sysfs, skipped when absent).
 *
 * Skips when the node has no RDMA contexts or exanet_coll_open() returns
 * -ENODEV (no collective unit).
 */
#include <float.h>
#include <poll.h>

#include "exa_rdma.h"
#include "../lib/coll_ref.h"
#include "../lib/exa_kid.h"

#define MIB (1u << 20)
#define GUARDB 64			/* guard bytes around every result */
#define NREGION 8
/* region k: [k MiB + GUARDB, ...); a vector of up to 1 MiB - 2 GUARDB fits
 * in one, a longer one spans the next regions */
#define BUFSZ ((size_t)NREGION * MIB + 4096)
#define OP_TMO (60 * SEC)		/* one operation on a working group */
#define FAIL_TMO (30 * SEC)		/* an operation that must fail */
#define FAIL_MS_MAX 20000		/* ... and within this */
#define MAXM OOB_MAX_NODES		/* members of the groups made here */

/* Group keys: unique per test case (a key is per node, PDID and rank). */
#define KEY(n) (0xc0000000u | (uint32_t)ksft_case_index(_metadata) << 8 | (uint32_t)(n))

FIXTURE(coll) {
	struct oob oob;
	struct rnode n;
	struct exanet_coll *coll;
	int rank, nn;
	uint32_t node;			/* this node */
	uint32_t nodes[OOB_MAX_NODES];	/* node of every oob rank */
	uint32_t num_nodes;		/* of the fabric */
	uint8_t *scr;			/* reference: every member's input, result */
	size_t scr_len;
};

static uint8_t *region(FIXTURE_DATA(coll) *self, unsigned int k)
{
	return self->n.buf + (size_t)k * MIB + GUARDB;
}

FIXTURE_SETUP(coll)
{
	int err, errs[OOB_MAX_NODES], i;
	uint32_t node;

	OOB_UP(&self->oob);
	self->rank = self->oob.rank;
	self->nn = self->oob.nnodes;
	err = rnode_up(&self->n, BUFSZ, 1);
	if (!err)
		err = exanet_coll_open(self->n.rdma, &self->coll);
	/* every rank must agree on skipping */
	ASSERT_EQ(0, oob_allgather(&self->oob, &err, errs, sizeof(err)));
	for (i = 0; i < self->nn; i++)
		if (errs[i] == -ENODEV)
			SKIP_TEST("node %d: no RDMA contexts or no collective unit (ENODEV)", i);
	for (i = 0; i < self->nn; i++) {
		if (errs[i])
			TH_LOG("rank %d: setup: %s", i, strerror(-errs[i]));
		ASSERT_EQ(0, errs[i]);
	}
	node = exanet_rdma_node(self->n.rdma);
	self->node = node;
	EXPECT_EQ(exanet_node_id(self->n.dev), node);
	self->num_nodes = exanet_num_nodes(self->n.dev);
	ASSERT_EQ(0, oob_allgather(&self->oob, &node, self->nodes, sizeof(node)));
	self->scr_len = (size_t)(MAXM + 1) * 65536;
	self->scr = malloc(self->scr_len);
	ASSERT_NE(NULL, self->scr);
}

FIXTURE_TEARDOWN(coll)
{
	oob_barrier(&self->oob);
	if (self->coll)
		EXPECT_EQ(0, exanet_coll_close(self->coll));
	rnode_down(&self->n);
	free(self->scr);
	oob_fini(&self->oob);
}

/*
 * Every member creates its group before any member starts an operation on
 * it (a block that reaches an NI without the group is refused: NO_GROUP):
 * the tests separate creation and the first start with an oob barrier.
 *
 * This node's view of the group whose member i is oob rank ranks[i]
 * (nodes from the fixture), as member me.
 */
static int group_of(FIXTURE_DATA(coll) *self, uint32_t key, const int *ranks, uint32_t size,
		    uint32_t me, struct exanet_coll_group **g)
{
	uint32_t nodes[MAXM], i;

	for (i = 0; i < size; i++)
		nodes[i] = self->nodes[ranks[i]];
	return exanet_coll_group_create(self->coll, key, size, me, nodes, g);
}

/* The group of all ranks in oob order. */
static int group_all(FIXTURE_DATA(coll) *self, uint32_t key, struct exanet_coll_group **g)
{
	int ranks[MAXM], i;

	for (i = 0; i < self->nn; i++)
		ranks[i] = i;
	return group_of(self, key, ranks, (uint32_t)self->nn, (uint32_t)self->rank, g);
}

/* size members, all on this node (one handle each): a loopback group. */
static int group_local(FIXTURE_DATA(coll) *self, uint32_t key, uint32_t size,
		       struct exanet_coll_group **g)
{
	uint32_t nodes[MAXM], i;
	int err = 0;

	for (i = 0; i < size; i++)
		nodes[i] = self->node;
	for (i = 0; i < size && !err; i++)
		err = exanet_coll_group_create(self->coll, key, size, i, nodes, &g[i]);
	return err;
}

/* One member's part of an allreduce run by this process. */
struct job {
	struct exanet_coll_group *g;
	uint32_t size, me;		/* group size, this handle's member rank */
	unsigned int dtype, op;
	size_t count;
	uint32_t seed;
	uint8_t *src, *dst;		/* dst == src: in place */
	int allreduce;			/* exanet_coll_allreduce() (a single job) */
	struct exanet_rdma_notif *lcomp;
	uint64_t tag;
	int rc;				/* out: of start, else of wait */
	uint32_t crc;			/* out: of the result */
};

static size_t job_bytes(const struct job *j)
{
	return j->count * coll_ref_dtype_size(j->dtype);
}

/* The reference result of j, in self->scr after the members' inputs. */
static uint8_t *job_ref(struct __test_metadata *_metadata, FIXTURE_DATA(coll) *self,
			const struct job *j)
{
	size_t bytes = job_bytes(j);
	const void *in[MAXM];
	uint32_t i;

	ASSERT_GE(MAXM, j->size);
	if ((size_t)(j->size + 1) * bytes > self->scr_len) {
		free(self->scr);
		self->scr_len = (size_t)(j->size + 1) * bytes;
		self->scr = malloc(self->scr_len);
		ASSERT_NE(NULL, self->scr);
	}
	for (i = 0; i < j->size; i++) {
		coll_ref_fill(j->dtype, j->op, i, j->seed, self->scr + i * bytes, j->count);
		in[i] = self->scr + i * bytes;
	}
	ASSERT_EQ(0, coll_ref(j->dtype, j->op, j->size, in, j->count,
			      self->scr + (size_t)j->size * bytes));
	return self->scr + (size_t)j->size * bytes;
}

static void job_prepare(struct job *j)
{
	size_t bytes = job_bytes(j);

	memset(j->dst - GUARDB, GUARD, bytes + 2 * GUARDB);
	if (j->src != j->dst) {
		memset(j->src - GUARDB, GUARD, bytes + 2 * GUARDB);
	}
	coll_ref_fill(j->dtype, j->op, j->me, j->seed, j->src, j->count);
	if (j->lcomp)
		exanet_rdma_notif_reset(j->lcomp);
	j->rc = -EINPROGRESS;
	j->crc = 0;
}

static int job_start(struct job *j)
{
	j->rc = exanet_coll_start(j->g, j->src, j->dst, j->count, j->dtype, j->op, j->lcomp,
				  j->tag);
	return j->rc;
}

static int job_wait(struct job *j, int64_t tmo)
{
	if (!j->rc)
		j->rc = exanet_coll_wait(j->g, tmo, NULL);
	return j->rc;
}

/* |a| without libm */
static long double labs_ld(long double a)
{
	return a < 0 ? -a : a;
}

/*
 * Check a completed job: bit for bit against the reference, guards intact,
 * the source unchanged, floating point sums within the rounding bound of
 * the exact sum.  Returns the number of problems (each logged).
 */
static int job_check(struct __test_metadata *_metadata, FIXTURE_DATA(coll) *self,
		     struct job *j)
{
	size_t es = coll_ref_dtype_size(j->dtype), bytes = job_bytes(j), k;
	const uint8_t *ref;
	int bad = 0;

	if (j->rc) {
		TH_LOG("%s %s count %zu member %u/%u: %s", coll_ref_dtype_name(j->dtype),
		       coll_ref_op_name(j->op), j->count, j->me, j->size, strerror(-j->rc));
		return 1;
	}
	ref = job_ref(_metadata, self, j);
	if (memcmp(j->dst, ref, bytes)) {
		for (k = 0; k < j->count; k++) {
			uint64_t got = 0, want = 0;

			memcpy(&got, j->dst + k * es, es);
			memcpy(&want, ref + k * es, es);
			if (got != want) {
				TH_LOG("%s %s count %zu member %u/%u: element %zu is 0x%" PRIx64
				       ", the reference 0x%" PRIx64, coll_ref_dtype_name(j->dtype),
				       coll_ref_op_name(j->op), j->count, j->me, j->size, k, got,
				       want);
				break;
			}
		}
		bad++;
	}
	if (!bytes_equal(j->dst - GUARDB, GUARDB, GUARD) ||
	    !bytes_equal(j->dst + bytes, GUARDB, GUARD)) {
		TH_LOG("%s %s count %zu: bytes next to the result written",
		       coll_ref_dtype_name(j->dtype), coll_ref_op_name(j->op), j->count);
		bad++;
	}
	if (j->src != j->dst && memcmp(j->src, self->scr + j->me * bytes, bytes)) {
		TH_LOG("%s %s count %zu: the source changed", coll_ref_dtype_name(j->dtype),
		       coll_ref_op_name(j->op), j->count);
		bad++;
	}
	if (j->op == EXANET_COLL_SUM && coll_ref_is_float(j->dtype)) {
		long double eps = j->dtype == EXANET_COLL_FLOAT ? FLT_EPSILON : DBL_EPSILON;

		for (k = 0; k < j->count; k++) {
			long double sum = 0, abssum = 0, res;
			uint32_t i;

			for (i = 0; i < j->size; i++) {
				const uint8_t *p = self->scr + i * bytes + k * es;
				long double x;

				if (j->dtype == EXANET_COLL_FLOAT) {
					float f;

					memcpy(&f, p, 4);
					x = f;
				} else {
					double d;

					memcpy(&d, p, 8);
					x = d;
				}
				sum += x;
				abssum += labs_ld(x);
			}
			if (j->dtype == EXANET_COLL_FLOAT) {
				float f;

				memcpy(&f, j->dst + k * es, 4);
				res = f;
			} else {
				double d;

				memcpy(&d, j->dst + k * es, 8);
				res = d;
			}
			if (labs_ld(res - sum) > (long double)j->size * eps * abssum) {
				TH_LOG("%s sum count %zu: element %zu is %Lg, the exact sum %Lg",
				       coll_ref_dtype_name(j->dtype), j->count, k, res, sum);
				bad++;
				break;
			}
		}
	}
	j->crc = exa_crc32(j->dst, bytes);
	return bad;
}

/*
 * Prepare, start every job, then wait for each (a single job with
 * allreduce set goes through exanet_coll_allreduce()), check each.
 * Returns the number of problems.
 */
static int run_jobs(struct __test_metadata *_metadata, FIXTURE_DATA(coll) *self,
		    struct job *jobs, int n)
{
	int i, bad = 0;

	for (i = 0; i < n; i++)
		job_prepare(&jobs[i]);
	if (n == 1 && jobs[0].allreduce) {
		jobs[0].rc = exanet_coll_allreduce(jobs[0].g, jobs[0].src, jobs[0].dst,
						   jobs[0].count, jobs[0].dtype, jobs[0].op,
						   OP_TMO);
	} else {
		for (i = 0; i < n; i++)
			job_start(&jobs[i]);
		for (i = 0; i < n; i++)
			job_wait(&jobs[i], OP_TMO);
	}
	for (i = 0; i < n; i++)
		bad += job_check(_metadata, self, &jobs[i]);
	return bad;
}

/*
 * Every rank tells the others its problem count and result hash: all
 * members of one group must hold the same bits.  in[r] is rank r's group
 * (-1: not a member); fails the test (ASSERT) on any problem so that the
 * next operations do not wait for a member that gave up.
 */
struct verdict {
	int32_t bad;
	int32_t group;
	uint32_t crc;
};

static void agree(struct __test_metadata *_metadata, FIXTURE_DATA(coll) *self, int bad,
		  int group, uint32_t crc, const char *what)
{
	struct verdict me = { bad, group, crc }, all[OOB_MAX_NODES];
	int r, s, problems = 0;

	ASSERT_EQ(0, oob_allgather(&self->oob, &me, all, sizeof(me)));
	for (r = 0; r < self->nn; r++) {
		if (all[r].bad) {
			TH_LOG("%s: rank %d had %d problem(s)", what, r, all[r].bad);
			problems++;
		}
		for (s = 0; s < r; s++)
			if (all[r].group >= 0 && all[r].group == all[s].group &&
			    all[r].crc != all[s].crc) {
				TH_LOG("%s: ranks %d and %d of one group hold different results "
				       "(crc %08x, %08x)", what, s, r, all[s].crc, all[r].crc);
				problems++;
			}
	}
	ASSERT_EQ(0, problems);
}

static const unsigned int all_dtypes[] = {
	EXANET_COLL_INT32, EXANET_COLL_UINT32, EXANET_COLL_INT64, EXANET_COLL_UINT64,
	EXANET_COLL_FLOAT, EXANET_COLL_DOUBLE,
};
#define NDT (sizeof(all_dtypes) / sizeof(all_dtypes[0]))

/* ---------------------------------------------------------------- data */

/*
 * Every valid (dtype, op) on the group of all nodes, for 1 element, odd
 * lengths, one block, one block and a bit, 64 KiB; sources and results at
 * different (element-aligned) offsets; one length through allreduce.
 */
TEST_F_TIMEOUT(coll, every_op_dtype_and_length_bit_exact, 1200)
{
	struct exanet_coll_group *g;
	unsigned int d, op, li, combos = 0;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	EXPECT_EQ((uint32_t)self->nn, exanet_coll_group_size(g));
	EXPECT_EQ((uint32_t)self->rank, exanet_coll_group_rank(g));
	EXPECT_GT(EXANET_COLL_GROUPS, exanet_coll_group_slot(g));
	for (d = 0; d < NDT; d++) {
		unsigned int dt = all_dtypes[d];
		size_t es = coll_ref_dtype_size(dt);
		const size_t lens[] = { 1, 3, 13, 1001, EXANET_COLL_BLOCK_SIZE / es,
					EXANET_COLL_BLOCK_SIZE / es + 3, 65536 / es };

		EXPECT_EQ(es, exanet_coll_dtype_size(dt));
		for (op = 0; op < EXANET_COLL_NUM_OPS; op++) {
			uint32_t crc = 0;
			int bad = 0;
			char what[64];

			if (!coll_ref_valid(dt, op))
				continue;
			for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
				struct job j = {
					.g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
					.dtype = dt, .op = op, .count = lens[li],
					.seed = combos * 16 + li,
					.src = region(self, 0) + (li % 3) * 8,
					.dst = region(self, 1) + (li % 2) * 24,
					.allreduce = li == 3,
				};

				bad += run_jobs(_metadata, self, &j, 1);
				crc = exa_crc32(&j.crc, sizeof(j.crc)) ^ crc * 31;
			}
			snprintf(what, sizeof(what), "%s %s", coll_ref_dtype_name(dt),
				 coll_ref_op_name(op));
			agree(_metadata, self, bad, 0, crc, what);
			combos++;
		}
	}
	EXPECT_EQ(30, combos);
	TH_LOG("%u (dtype, op) pairs x 7 lengths on %d member(s): bit exact", combos, self->nn);
}

/* src == dst: the result replaces the source. */
TEST_F_TIMEOUT(coll, in_place, 300)
{
	static const struct { unsigned int dt, op; } c[] = {
		{ EXANET_COLL_INT32, EXANET_COLL_SUM }, { EXANET_COLL_FLOAT, EXANET_COLL_SUM },
		{ EXANET_COLL_DOUBLE, EXANET_COLL_MAX }, { EXANET_COLL_UINT64, EXANET_COLL_BXOR },
		{ EXANET_COLL_DOUBLE, EXANET_COLL_SUM },
	};
	const size_t counts[] = { 1, 1001, 8192 };
	struct exanet_coll_group *g;
	unsigned int i, k;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint32_t crc = 0;
		int bad = 0;

		for (k = 0; k < 3; k++) {
			struct job j = {
				.g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				.dtype = c[i].dt, .op = c[i].op, .count = counts[k],
				.seed = 500 + i * 4 + k, .src = region(self, 2) + k * 8,
			};

			j.dst = j.src;
			bad += run_jobs(_metadata, self, &j, 1);
			crc = crc * 31 + j.crc;
		}
		agree(_metadata, self, bad, 0, crc, "in place");
	}
}

/* Completion record, status word and poll; the group getters. */
TEST_F_TIMEOUT(coll, completion_record_status_and_poll, 120)
{
	struct exanet_coll_group *g;
	struct exanet_rdma_notif rec;
	uint64_t st = 0, st2 = 0;
	int rc, i;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	/* nothing started yet: not in flight */
	EXPECT_NE(-EINPROGRESS, exanet_coll_poll(g, NULL));
	for (i = 0; i < 3; i++) {
		struct job j = {
			.g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
			.dtype = EXANET_COLL_INT64, .op = EXANET_COLL_SUM, .count = 777 + i,
			.seed = 900 + i, .src = region(self, 0), .dst = region(self, 1),
			.lcomp = &self->n.rec[i], .tag = 0x5eed0000ull + i,
		};
		uint64_t prev = st;
		int64_t end = exa_now_ms() + OP_TMO / MS;

		job_prepare(&j);
		ASSERT_EQ(0, job_start(&j));
		do
			rc = exanet_coll_poll(g, &st);
		while (rc == -EINPROGRESS && exa_now_ms() < end);
		j.rc = rc;
		EXPECT_EQ(0, job_check(_metadata, self, &j));
		EXPECT_EQ(EXANET_COLL_DONE, EXANET_COLL_ST_STATE(st));
		EXPECT_EQ(EXANET_COLL_E_NONE, EXANET_COLL_ST_ERROR(st));
		if (i) {
			EXPECT_EQ(EXANET_COLL_ST_SEQ(prev) + 1, EXANET_COLL_ST_SEQ(st));
		} else {
			TH_LOG("first operation: sequence %u", EXANET_COLL_ST_SEQ(st));
		}
		/* done stays done; wait returns at once */
		EXPECT_EQ(0, exanet_coll_poll(g, &st2));
		EXPECT_EQ(st, st2);
		EXPECT_EQ(0, exanet_coll_wait(g, 0, NULL));
		/* DONE comes with the record already written */
		ASSERT_EQ(1, exanet_rdma_notif_poll(&self->n.rec[i], &rec));
		EXPECT_EQ(0, rec.error);
		EXPECT_EQ(EXANET_RDMA_OP_COLL, rec.op);
		EXPECT_EQ(j.tag, rec.tag);
		EXPECT_EQ(job_bytes(&j), rec.length);
		EXPECT_EQ(self->node, rec.node);
		EXPECT_EQ((uint32_t)self->rank % 256, rec.rank);
		EXPECT_EQ(exanet_rdma_page(self->n.rdma), rec.page);
		EXPECT_EQ(exanet_coll_group_slot(g), rec.chan);
		EXPECT_EQ(EXANET_RDMA_N_VALID | EXANET_RDMA_N_COMPLETION, rec.flags);
		agree(_metadata, self, 0, 0, j.crc, "completion record");
	}
}

/* ------------------------------------------------------------- groups */

/*
 * On 4 or more nodes: the group {0, 1, 2} (3 members: member 2 folds into
 * member 0 and gets the result back) and the pair {1, 3}, one after the
 * other, then both at once (rank 1 is in both).
 */
TEST_F_TIMEOUT(coll, subgroups_three_members_and_a_pair, 300)
{
	static const int tri[] = { 0, 1, 2 }, pair[] = { 1, 3 };
	static const struct { unsigned int dt, op; size_t count; } c[] = {
		{ EXANET_COLL_FLOAT, EXANET_COLL_SUM, 16384 },
		{ EXANET_COLL_DOUBLE, EXANET_COLL_SUM, 1001 },
		{ EXANET_COLL_INT32, EXANET_COLL_MIN, 1025 },
		{ EXANET_COLL_UINT64, EXANET_COLL_BOR, 13 },
	};
	struct exanet_coll_group *gt = NULL, *gp = NULL;
	int in_t = self->rank <= 2, in_p = self->rank == 1 || self->rank == 3;
	unsigned int i;

	if (self->nn < 4)
		SKIP_TEST("needs 4 ranks");
	if (in_t)
		ASSERT_EQ(0, group_of(self, KEY(1), tri, 3, (uint32_t)self->rank, &gt));
	if (in_p)
		ASSERT_EQ(0, group_of(self, KEY(2), pair, 2, self->rank == 1 ? 0 : 1, &gp));
	OOB_SYNC(&self->oob);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct job t = {
			.g = gt, .size = 3, .me = (uint32_t)self->rank, .dtype = c[i].dt,
			.op = c[i].op, .count = c[i].count, .seed = 1100 + i,
			.src = region(self, 0), .dst = region(self, 1),
		};
		struct job p = {
			.g = gp, .size = 2, .me = self->rank == 1 ? 0 : 1, .dtype = c[i].dt,
			.op = c[i].op, .count = c[i].count, .seed = 1200 + i,
			.src = region(self, 2), .dst = region(self, 3),
		};
		struct job both[2] = { t, p };
		int bad = 0;

		/* the three */
		if (in_t)
			bad = run_jobs(_metadata, self, &t, 1);
		agree(_metadata, self, bad, in_t ? 0 : -1, t.crc, "group {0,1,2}");
		/* the pair */
		bad = 0;
		if (in_p)
			bad = run_jobs(_metadata, self, &p, 1);
		agree(_metadata, self, bad, in_p ? 1 : -1, p.crc, "group {1,3}");
		/* both at once: rank 1 starts both, then waits for both */
		bad = 0;
		if (self->rank == 1) {
			bad = run_jobs(_metadata, self, both, 2);
		} else if (in_t) {
			bad = run_jobs(_metadata, self, &both[0], 1);
		} else if (in_p) {
			bad = run_jobs(_metadata, self, &both[1], 1);
		}
		agree(_metadata, self, bad, in_t ? 0 : -1, both[0].crc, "{0,1,2} beside {1,3}");
		agree(_metadata, self, 0, in_p ? 1 : -1, both[1].crc, "{1,3} beside {0,1,2}");
	}
}

/*
 * Two groups of all nodes, different keys, the second with its members in
 * reverse order (member i = rank nn-1-i): both started, then both waited
 * for, in both orders.
 */
TEST_F_TIMEOUT(coll, two_groups_at_once, 300)
{
	static const struct { unsigned int dt1, op1, dt2, op2; size_t count; } c[] = {
		{ EXANET_COLL_FLOAT, EXANET_COLL_SUM, EXANET_COLL_INT32, EXANET_COLL_SUM, 16384 },
		{ EXANET_COLL_DOUBLE, EXANET_COLL_SUM, EXANET_COLL_DOUBLE, EXANET_COLL_SUM, 3001 },
		{ EXANET_COLL_INT64, EXANET_COLL_MAX, EXANET_COLL_UINT32, EXANET_COLL_BXOR, 1 },
	};
	struct exanet_coll_group *ga, *gb;
	int rev[MAXM], i;
	unsigned int k;

	for (i = 0; i < self->nn; i++)
		rev[i] = self->nn - 1 - i;
	ASSERT_EQ(0, group_all(self, KEY(1), &ga));
	ASSERT_EQ(0, group_of(self, KEY(2), rev, (uint32_t)self->nn,
			      (uint32_t)(self->nn - 1 - self->rank), &gb));
	EXPECT_NE(exanet_coll_group_slot(ga), exanet_coll_group_slot(gb));
	OOB_SYNC(&self->oob);
	for (k = 0; k < 2 * sizeof(c) / sizeof(c[0]); k++) {
		unsigned int ci = k / 2;
		struct job j[2] = {
			{ .g = ga, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
			  .dtype = c[ci].dt1, .op = c[ci].op1, .count = c[ci].count,
			  .seed = 1300 + k, .src = region(self, 0), .dst = region(self, 1) },
			{ .g = gb, .size = (uint32_t)self->nn,
			  .me = (uint32_t)(self->nn - 1 - self->rank), .dtype = c[ci].dt2,
			  .op = c[ci].op2, .count = c[ci].count, .seed = 1400 + k,
			  .src = region(self, 2), .dst = region(self, 3) },
		};
		int bad;

		if (k % 2) {
			/* start and wait for b first */
			struct job t = j[0];

			j[0] = j[1];
			j[1] = t;
		}
		bad = run_jobs(_metadata, self, j, 2);
		agree(_metadata, self, bad, 0, j[0].crc ^ j[1].crc * 31, "two groups");
	}
}

/*
 * Several members on one node (one handle each, all member table entries
 * this node): each node on its own runs 2- and 3-member groups, then a
 * mismatch and a departed member among them.  The only test with real
 * combining on a 1-node run.
 */
TEST_F_TIMEOUT(coll, loopback_members_on_one_node, 300)
{
	static const struct { unsigned int dt, op; size_t count; } c[] = {
		{ EXANET_COLL_FLOAT, EXANET_COLL_SUM, 16384 },
		{ EXANET_COLL_DOUBLE, EXANET_COLL_SUM, 4099 },
		{ EXANET_COLL_INT32, EXANET_COLL_SUM, 1001 },
		{ EXANET_COLL_UINT32, EXANET_COLL_MIN, 3 },
		{ EXANET_COLL_INT64, EXANET_COLL_BAND, 1024 },
	};
	struct exanet_coll_group *g3[3], *g2[2];
	uint32_t size;
	unsigned int i, m;
	int bad = 0, rc;

	ASSERT_EQ(0, group_local(self, KEY(1), 3, g3));
	ASSERT_EQ(0, group_local(self, KEY(2), 2, g2));
	for (size = 2; size <= 3; size++) {
		for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			struct job j[3];

			memset(j, 0, sizeof(j));
			for (m = 0; m < size; m++) {
				j[m].g = size == 3 ? g3[m] : g2[m];
				j[m].size = size;
				j[m].me = m;
				j[m].dtype = c[i].dt;
				j[m].op = c[i].op;
				j[m].count = c[i].count;
				j[m].seed = 1500 + size * 16 + i;
				j[m].src = region(self, 2 * m);
				/* member 1 in place */
				j[m].dst = m == 1 ? j[m].src : region(self, 2 * m + 1);
			}
			bad += run_jobs(_metadata, self, j, (int)size);
			for (m = 1; m < size; m++)
				if (j[m].crc != j[0].crc) {
					TH_LOG("loopback member %u holds another result", m);
					bad++;
				}
		}
	}
	EXPECT_EQ(0, bad);

	/* mismatch: member 0 and 1 of the pair start different counts */
	{
		struct job a = { .g = g2[0], .size = 2, .me = 0, .dtype = EXANET_COLL_INT32,
				 .op = EXANET_COLL_SUM, .count = 10, .seed = 1,
				 .src = region(self, 0), .dst = region(self, 1) };
		struct job b = a;

		b.g = g2[1];
		b.me = 1;
		b.count = 11;
		b.src = region(self, 2);
		b.dst = region(self, 3);
		job_prepare(&a);
		job_prepare(&b);
		ASSERT_EQ(0, job_start(&a));
		ASSERT_EQ(0, job_start(&b));
		EXPECT_EQ(-EPROTO, job_wait(&a, FAIL_TMO));
		EXPECT_EQ(-EPROTO, job_wait(&b, FAIL_TMO));
		/* refused until re-created */
		b.count = 10;
		job_prepare(&a);
		job_prepare(&b);
		rc = job_start(&a);
		if (!rc)
			rc = job_wait(&a, FAIL_TMO);
		EXPECT_EQ(-EPIPE, rc);
		rc = job_start(&b);
		if (!rc)
			rc = job_wait(&b, FAIL_TMO);
		EXPECT_EQ(-EPIPE, rc);
	}

	/* member 2 of the three leaves: the others' operation fails, no hang */
	{
		struct job j[2];
		int64_t t0;

		EXPECT_EQ(0, exanet_coll_group_destroy(g3[2]));
		memset(j, 0, sizeof(j));
		for (m = 0; m < 2; m++) {
			j[m] = (struct job){ .g = g3[m], .size = 3, .me = m,
					     .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_SUM,
					     .count = 100, .seed = 2, .src = region(self, 2 * m),
					     .dst = region(self, 2 * m + 1) };
			job_prepare(&j[m]);
			EXPECT_EQ(0, job_start(&j[m]));
		}
		t0 = exa_now_ms();
		for (m = 0; m < 2; m++) {
			rc = job_wait(&j[m], FAIL_TMO);
			TH_LOG("loopback member %u of 3 after member 2 left: %s after %lld ms", m,
			       strerror(-rc), (long long)(exa_now_ms() - t0));
			EXPECT_TRUE(rc == -ECONNRESET || rc == -EREMOTEIO || rc == -ETIMEDOUT);
		}
		EXPECT_GT(FAIL_MS_MAX, exa_now_ms() - t0);
	}
}

/* ------------------------------------------------------------ domains */

#define OTHER_PDID 0x4c17		/* a job domain no other test uses */

struct intruder_arg {
	uint32_t key, nodes[2];
};

/*
 * In another job domain (PDID): the same key and member table as the
 * legitimate member 1, then one operation; writes its setup result, then
 * (after a byte from the test) the operation's result.
 */
static int intruder_fn(struct kid_io *io)
{
	const struct intruder_arg *a = io->arg;
	struct exanet_dev *dev = NULL;
	struct exanet_rdma *rdma = NULL;
	struct exanet_coll *coll = NULL;
	struct exanet_coll_group *g = NULL;
	struct exanet_mr *mr = NULL;
	static int32_t buf[1024] __attribute__((aligned(4096)));
	int rc;
	char go;

	rc = exanet_open_index(0, &dev);
	if (!rc)
		rc = exanet_rdma_alloc(dev, &rdma);
	if (!rc)
		rc = exanet_coll_open(rdma, &coll);
	if (!rc)
		rc = exanet_reg_mr(dev, buf, sizeof(buf), 0, &mr);
	if (!rc)
		rc = exanet_coll_group_create(coll, a->key, 2, 1, a->nodes, &g);
	if (kid_write(io->wr, &rc, sizeof(rc)) || rc)
		return 1;
	if (kid_read(io->rd, &go, 1))
		return 1;
	rc = exanet_coll_allreduce(g, buf, buf + 512, 16, EXANET_COLL_INT32,
				   EXANET_COLL_SUM, FAIL_TMO);
	kid_write(io->wr, &rc, sizeof(rc));
	kid_read(io->rd, &go, 1);	/* EOF: the test is done */
	exanet_close(dev);
	return 0;
}

/* An NI collective counter from sysfs (one number per file); -1 if absent. */
static long long coll_counter(const char *name)
{
	char path[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), EXANET_SYSFS "coll/%s", name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * A process of another job domain cannot join a group: with the same key
 * and member table as member 1 but its own PDID, its packets and the
 * legitimate member's find no group at the other NI: both operations end
 * with -ECONNRESET (never a mixed result), and both NIs count the refusal.
 */
TEST_F_TIMEOUT(coll, another_domain_cannot_join_or_inject, 180)
{
	struct intruder_arg a = { .key = KEY(1) };
	struct exanet_coll_group *g = NULL;
	struct kid k = { 0 };
	long long refused0, refused1;
	int32_t *src = (int32_t *)region(self, 0);
	int rc = 0, krc = 0, i;
	char go = 1;

	if (self->nn < 2)
		SKIP_TEST("needs 2 ranks");
	a.nodes[0] = self->nodes[0];
	a.nodes[1] = self->nodes[1];
	refused0 = coll_counter("rx_refused");
	if (refused0 < 0)
		SKIP_TEST("no coll counters in sysfs");
	if (self->rank == 0) {
		ASSERT_EQ(0, exanet_coll_group_create(self->coll, a.key, 2, 0, a.nodes, &g));
	} else if (self->rank == 1) {
		ASSERT_EQ(0, kid_spawn(&k, OTHER_PDID, 0, intruder_fn, &a));
		ASSERT_EQ(0, kid_read_tmo(k.rd, &krc, sizeof(krc), 60000));
		ASSERT_EQ(0, krc);
	}
	OOB_SYNC(&self->oob);
	for (i = 0; i < 16; i++)
		src[i] = i;
	if (self->rank == 0) {
		rc = exanet_coll_allreduce(g, src, src + 512, 16, EXANET_COLL_INT32,
					   EXANET_COLL_SUM, FAIL_TMO);
		TH_LOG("member 0 with the other domain's member 1: %s", strerror(-rc));
		EXPECT_EQ(-ECONNRESET, rc);
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	} else if (self->rank == 1) {
		ASSERT_EQ(0, kid_write(k.wr, &go, 1));
		ASSERT_EQ(0, kid_read_tmo(k.rd, &krc, sizeof(krc), FAIL_MS_MAX + 60000));
		TH_LOG("member 1 in PDID %#x: %s", OTHER_PDID, strerror(-krc));
		EXPECT_EQ(-ECONNRESET, krc);
		EXPECT_EQ(0, kid_finish(&k, 30000));
	}
	OOB_SYNC(&self->oob);
	refused1 = coll_counter("rx_refused");
	if (self->rank <= 1) {
		TH_LOG("rank %d: rx_refused +%lld", self->rank, refused1 - refused0);
		EXPECT_LT(refused0, refused1);
	}
}

/* ------------------------------------------------------------ barrier */

/*
 * count 0: a barrier.  All start together (20 times, also through
 * allreduce); then the last rank starts 500 ms late: nobody's barrier
 * completes before it started.  Nothing is written.
 */
TEST_F_TIMEOUT(coll, barrier_count_zero, 180)
{
	struct exanet_coll_group *g;
	uint8_t *dst = region(self, 1);
	int i, rc, late = self->nn - 1;
	int64_t t0, dt;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	memset(dst - GUARDB, GUARD, 2 * GUARDB);
	OOB_SYNC(&self->oob);
	for (i = 0; i < 20; i++) {
		if (i % 2) {
			EXPECT_EQ(0, exanet_coll_allreduce(g, region(self, 0), dst, 0,
							   EXANET_COLL_INT32, EXANET_COLL_SUM,
							   OP_TMO));
		} else {
			ASSERT_EQ(0, exanet_coll_start(g, region(self, 0), dst, 0,
						       EXANET_COLL_DOUBLE, EXANET_COLL_MAX,
						       NULL, i));
			EXPECT_EQ(0, exanet_coll_wait(g, OP_TMO, NULL));
		}
	}
	EXPECT_EQ(1, bytes_equal(dst - GUARDB, 2 * GUARDB, GUARD));
	agree(_metadata, self, !_metadata->passed, 0, 0, "20 barriers");
	if (self->nn < 2)
		return;
	for (i = 0; i < 3; i++) {
		OOB_SYNC(&self->oob);
		t0 = exa_now_ms();
		if (self->rank == late)
			usleep(500000);
		ASSERT_EQ(0, exanet_coll_start(g, region(self, 0), dst, 0, EXANET_COLL_INT32,
					       EXANET_COLL_SUM, NULL, 0));
		rc = exanet_coll_wait(g, OP_TMO, NULL);
		dt = exa_now_ms() - t0;
		EXPECT_EQ(0, rc);
		if (self->rank != late) {
			if (dt < 350)
				TH_LOG("barrier done after %lld ms, the last member starts at 500 ms",
				       (long long)dt);
			/* the oob barrier leaves the ranks a few ms apart */
			EXPECT_LE(350, dt);
		}
	}
	agree(_metadata, self, !_metadata->passed, 0, 0, "late barrier");
}

/* ----------------------------------------------------- refused input */

/* Argument checks of start / allreduce / group_create; the tables. */
TEST_F_TIMEOUT(coll, bad_arguments_refused, 120)
{
	static uint32_t big[EXANET_COLL_MAX_MEMBERS + 1];
	struct exanet_coll_group *g, *g2 = NULL;
	uint8_t *src = region(self, 0), *dst = region(self, 1);
	uint32_t nodes[2], me = (uint32_t)self->rank, other;
	unsigned int e, d;
	int i;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	/* start: dtype, op, bitwise on floating point, count */
	EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, EXANET_COLL_NUM_DTYPES,
					     EXANET_COLL_SUM, NULL, 0));
	EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, 255, EXANET_COLL_SUM, NULL, 0));
	EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, EXANET_COLL_INT32,
					     EXANET_COLL_NUM_OPS, NULL, 0));
	EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, EXANET_COLL_INT32, 255, NULL, 0));
	for (e = EXANET_COLL_BAND; e <= EXANET_COLL_BXOR; e++) {
		EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, EXANET_COLL_FLOAT, e,
						     NULL, 0));
		EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, 4, EXANET_COLL_DOUBLE, e,
						     NULL, 0));
		EXPECT_EQ(-EINVAL, exanet_coll_allreduce(g, src, dst, 4, EXANET_COLL_DOUBLE, e,
							 OP_TMO));
	}
	for (d = 0; d < NDT; d++) {
		size_t es = coll_ref_dtype_size(all_dtypes[d]);

		EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, EXANET_COLL_MAX_LEN / es + 1,
						     all_dtypes[d], EXANET_COLL_SUM, NULL, 0));
		EXPECT_EQ(-EINVAL, exanet_coll_start(g, src, dst, SIZE_MAX / es,
						     all_dtypes[d], EXANET_COLL_MAX, NULL, 0));
	}
	EXPECT_EQ(-EINVAL, exanet_coll_allreduce(g, src, dst, 4, EXANET_COLL_NUM_DTYPES,
						 EXANET_COLL_SUM, OP_TMO));
	/* nothing was started: the group still works, on every member */
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = me,
				 .dtype = EXANET_COLL_DOUBLE, .op = EXANET_COLL_SUM, .count = 257,
				 .seed = 1600, .src = src, .dst = dst };
		int bad = run_jobs(_metadata, self, &j, 1);

		agree(_metadata, self, bad, 0, j.crc, "after refused starts");
	}

	/* the tables */
	EXPECT_EQ(4, exanet_coll_dtype_size(EXANET_COLL_INT32));
	EXPECT_EQ(8, exanet_coll_dtype_size(EXANET_COLL_INT64));
	EXPECT_EQ(8, exanet_coll_dtype_size(EXANET_COLL_UINT64));
	EXPECT_EQ(4, exanet_coll_dtype_size(EXANET_COLL_FLOAT));
	EXPECT_EQ(8, exanet_coll_dtype_size(EXANET_COLL_DOUBLE));
	EXPECT_EQ(4, exanet_coll_dtype_size(EXANET_COLL_UINT32));
	EXPECT_EQ(0, exanet_coll_dtype_size(EXANET_COLL_NUM_DTYPES));
	EXPECT_EQ(0, exanet_coll_dtype_size(~0u));
	EXPECT_EQ(0, exanet_coll_error_errno(EXANET_COLL_E_NONE));
	EXPECT_EQ(-EINVAL, exanet_coll_error_errno(EXANET_COLL_E_BAD_DESC));
	EXPECT_EQ(-EFAULT, exanet_coll_error_errno(EXANET_COLL_E_LOCAL_DMA));
	EXPECT_EQ(-EPROTO, exanet_coll_error_errno(EXANET_COLL_E_MISMATCH));
	EXPECT_EQ(-ECONNRESET, exanet_coll_error_errno(EXANET_COLL_E_NO_GROUP));
	EXPECT_EQ(-ETIMEDOUT, exanet_coll_error_errno(EXANET_COLL_E_TIMEOUT));
	EXPECT_EQ(-EREMOTEIO, exanet_coll_error_errno(EXANET_COLL_E_PEER));
	EXPECT_EQ(-ECANCELED, exanet_coll_error_errno(EXANET_COLL_E_ABORTED));
	EXPECT_EQ(-EPIPE, exanet_coll_error_errno(EXANET_COLL_E_FAILED));
	EXPECT_EQ(-ENOMEM, exanet_coll_error_errno(EXANET_COLL_E_NOMEM));
	EXPECT_EQ(-EIO, exanet_coll_error_errno(200));
	for (e = 0; e <= EXANET_COLL_E_NOMEM + 1; e++) {
		const char *s = exanet_coll_error_str(e);

		EXPECT_TRUE(s && *s);
	}
	EXPECT_TRUE(exanet_coll_error_str(255) != NULL);

	/* group_create */
	other = self->num_nodes > 1 ? (self->node + 1) % self->num_nodes : self->node + 1;
	nodes[0] = self->node;
	nodes[1] = self->node;
	/* my_rank >= size */
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 2, 2, nodes, &g2));
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 1, ~0u, nodes, &g2));
	/* nodes[my_rank] is not this node */
	nodes[0] = other;
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 2, 0, nodes, &g2));
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 1, 0, nodes, &g2));
	/* a member node the fabric does not have */
	nodes[0] = self->node;
	nodes[1] = self->num_nodes;
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 2, 0, nodes, &g2));
	nodes[1] = ~0u;
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 2, 0, nodes, &g2));
	/* size 0, size > EXANET_COLL_MAX_MEMBERS */
	nodes[1] = self->node;
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), 0, 0, nodes, &g2));
	for (i = 0; i <= EXANET_COLL_MAX_MEMBERS; i++)
		big[i] = self->node;
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), EXANET_COLL_MAX_MEMBERS + 1,
						    0, big, &g2));
	EXPECT_EQ(-EINVAL, exanet_coll_group_create(self->coll, KEY(2), ~0u, 0, big, &g2));
	/* the same key and rank twice on this node */
	{
		struct exanet_coll_group *dup = NULL;

		EXPECT_EQ(-EEXIST, group_all(self, KEY(1), &dup));
	}
	/* none of that took a slot or hurt the group */
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = me,
				 .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_BXOR, .count = 33,
				 .seed = 1601, .src = src, .dst = dst };
		int bad = run_jobs(_metadata, self, &j, 1);

		agree(_metadata, self, bad, 0, j.crc, "after refused group_create");
	}
}

/*
 * The NI's group slots: a node takes solo groups until -ENOSPC (at most
 * EXANET_COLL_GROUPS), frees them, and has them all again.
 */
TEST_F_TIMEOUT(coll, group_slots_enospc_and_reuse, 120)
{
	static struct exanet_coll_group *gs[EXANET_COLL_GROUPS + 1];
	uint64_t seen = 0;
	int n = 0, n2 = 0, rc = 0, round, i;

	for (round = 0; round < 2; round++) {
		for (i = 0; i <= EXANET_COLL_GROUPS; i++) {
			rc = exanet_coll_group_create(self->coll, KEY(i) ^ (uint32_t)round << 20, 1,
						      0, &self->node, &gs[i]);
			if (rc)
				break;
			if (!round) {
				uint32_t s = exanet_coll_group_slot(gs[i]);

				EXPECT_GT(EXANET_COLL_GROUPS, s);
				if (s < 64) {
					EXPECT_EQ(0, seen >> s & 1);
					seen |= 1ull << s;
				}
			}
		}
		EXPECT_EQ(-ENOSPC, rc);
		if (!round)
			n = i;
		else
			n2 = i;
		/* a solo group works even with every slot taken */
		if (i) {
			struct job j = { .g = gs[i - 1], .size = 1, .me = 0,
					 .dtype = EXANET_COLL_UINT32, .op = EXANET_COLL_SUM,
					 .count = 100, .seed = 1700, .src = region(self, 0),
					 .dst = region(self, 1) };

			EXPECT_EQ(0, run_jobs(_metadata, self, &j, 1));
		}
		while (i-- > 0)
			EXPECT_EQ(0, exanet_coll_group_destroy(gs[i]));
	}
	TH_LOG("%d group slots free on node %u (of %d), %d the second time", n, self->node,
	       EXANET_COLL_GROUPS, n2);
	EXPECT_LT(0, n);
	EXPECT_GE(EXANET_COLL_GROUPS, n);
	EXPECT_EQ(n, n2);
}

/*
 * Memory not registered with the NI: an error completion (-EFAULT), no
 * hang, and the group is refused afterwards (-EPIPE).  Solo groups first
 * (exact codes), then the last member of the group of all nodes with an
 * unregistered source: it gets -EFAULT, every other member an error.
 */
TEST_F_TIMEOUT(coll, unregistered_buffer_error_completion, 180)
{
	size_t len = 4 * 4096;
	uint8_t *unreg = map_anon(len);
	struct exanet_coll_group *g;
	int rc, k, rcs[OOB_MAX_NODES], i;
	int64_t t0;

	ASSERT_NE(NULL, unreg);
	memset(unreg, 1, len);		/* present, writable, just not registered */
	for (k = 0; k < 2; k++) {
		/* k 0: unregistered source; 1: unregistered result */
		uint8_t *src = k ? region(self, 0) : unreg, *dst = k ? unreg : region(self, 1);

		ASSERT_EQ(0, exanet_coll_group_create(self->coll, KEY(1 + k), 1, 0, &self->node,
						      &g));
		t0 = exa_now_ms();
		rc = exanet_coll_start(g, src, dst, 1000, EXANET_COLL_INT32, EXANET_COLL_SUM,
				       NULL, 0);
		if (!rc)
			rc = exanet_coll_wait(g, FAIL_TMO, NULL);
		TH_LOG("solo group, unregistered %s: %s after %lld ms", k ? "result" : "source",
		       strerror(-rc), (long long)(exa_now_ms() - t0));
		EXPECT_EQ(-EFAULT, rc);
		/* refused now */
		rc = exanet_coll_start(g, region(self, 0), region(self, 1), 10, EXANET_COLL_INT32,
				       EXANET_COLL_SUM, NULL, 0);
		if (!rc)
			rc = exanet_coll_wait(g, FAIL_TMO, NULL);
		EXPECT_EQ(-EPIPE, rc);
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	}
	if (self->nn < 2)
		goto out;

	ASSERT_EQ(0, group_all(self, KEY(3), &g));
	OOB_SYNC(&self->oob);
	t0 = exa_now_ms();
	rc = exanet_coll_start(g, self->rank == self->nn - 1 ? unreg : region(self, 0),
			       region(self, 1), 1000, EXANET_COLL_INT32, EXANET_COLL_SUM, NULL, 0);
	if (!rc)
		rc = exanet_coll_wait(g, FAIL_TMO, NULL);
	TH_LOG("rank %d: %s after %lld ms", self->rank, strerror(-rc),
	       (long long)(exa_now_ms() - t0));
	EXPECT_GT(FAIL_MS_MAX, exa_now_ms() - t0);
	ASSERT_EQ(0, oob_allgather(&self->oob, &rc, rcs, sizeof(rc)));
	EXPECT_EQ(-EFAULT, rcs[self->nn - 1]);
	for (i = 0; i < self->nn - 1; i++) {
		EXPECT_NE(0, rcs[i]);
		EXPECT_NE(-EINPROGRESS, rcs[i]);
	}
	EXPECT_EQ(0, exanet_coll_group_destroy(g));
	/* a new group of the same members works */
	ASSERT_EQ(0, group_all(self, KEY(4), &g));
	OOB_SYNC(&self->oob);
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_SUM, .count = 1000,
				 .seed = 1800, .src = region(self, 0), .dst = region(self, 1) };
		int bad = run_jobs(_metadata, self, &j, 1);

		agree(_metadata, self, bad, 0, j.crc, "new group after -EFAULT");
	}
out:
	munmap(unreg, len);
}

/*
 * A second start while the group has an operation in flight: -EBUSY, and
 * the operation in flight is not disturbed.  Rank 0 starts while the other
 * members have not yet (on one node: member 0 of a loopback pair).
 */
TEST_F_TIMEOUT(coll, start_while_in_flight_ebusy, 120)
{
	struct exanet_coll_group *g, *lp[2];
	struct job j[2];
	int loop = self->nn < 2, bad = 0, m;

	memset(j, 0, sizeof(j));
	if (loop) {
		ASSERT_EQ(0, group_local(self, KEY(1), 2, lp));
	} else {
		ASSERT_EQ(0, group_all(self, KEY(1), &g));
		lp[0] = g;
		lp[1] = NULL;
	}
	for (m = 0; m < 2; m++)
		j[m] = (struct job){ .g = lp[m], .size = loop ? 2 : (uint32_t)self->nn,
				     .me = loop ? (uint32_t)m : (uint32_t)self->rank,
				     .dtype = EXANET_COLL_FLOAT, .op = EXANET_COLL_SUM,
				     .count = 4096, .seed = 1900, .src = region(self, 2 * m),
				     .dst = region(self, 2 * m + 1) };
	job_prepare(&j[0]);
	if (loop)
		job_prepare(&j[1]);
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		uint64_t st;

		ASSERT_EQ(0, job_start(&j[0]));
		/* the others have not started: in flight for sure */
		EXPECT_EQ(-EINPROGRESS, exanet_coll_poll(lp[0], &st));
		EXPECT_EQ(EXANET_COLL_ONGOING, EXANET_COLL_ST_STATE(st));
		EXPECT_EQ(-EBUSY, exanet_coll_start(lp[0], region(self, 4), region(self, 5), 4096,
						    EXANET_COLL_FLOAT, EXANET_COLL_SUM, NULL, 0));
		EXPECT_EQ(-EBUSY, exanet_coll_start(lp[0], region(self, 4), region(self, 5), 1,
						    EXANET_COLL_INT32, EXANET_COLL_MAX, NULL, 0));
		EXPECT_EQ(-EINPROGRESS, exanet_coll_poll(lp[0], NULL));
		/* a wait that times out leaves it in flight */
		EXPECT_EQ(-EINPROGRESS, exanet_coll_wait(lp[0], 50 * MS, NULL));
	}
	OOB_SYNC(&self->oob);
	if (loop) {
		job_start(&j[1]);
		job_wait(&j[0], OP_TMO);
		job_wait(&j[1], OP_TMO);
		bad += job_check(_metadata, self, &j[0]);
		bad += job_check(_metadata, self, &j[1]);
	} else {
		if (self->rank != 0)
			job_start(&j[0]);
		job_wait(&j[0], OP_TMO);
		bad += job_check(_metadata, self, &j[0]);
	}
	agree(_metadata, self, bad, 0, j[0].crc, "after -EBUSY");
}

/* ----------------------------------------------------- failing members */

/*
 * Members that start different operations (count, then dtype, then op;
 * every member's differs from every other one's): every member gets an
 * error, -EPROTO where it met a partner's operation (a power-of-two group:
 * all; else the members that take a fold-in), -EPROTO or -EREMOTEIO
 * (the partner failed first) on the others; the group is refused (-EPIPE)
 * until re-created; a new group of the same members works.
 */
TEST_F_TIMEOUT(coll, mismatch_eproto_then_epipe_until_recreated, 300)
{
	uint32_t p2 = coll_ref_p2((uint32_t)self->nn);
	int strict = p2 == (uint32_t)self->nn || (uint32_t)self->rank < self->nn - p2;
	int kind;

	if (self->nn < 2)
		SKIP_TEST("needs 2 ranks (loopback_members_on_one_node covers one node)");
	for (kind = 0; kind < 3; kind++) {
		static const char *const what[] = { "count", "dtype", "op" };
		struct exanet_coll_group *g;
		unsigned int dt = EXANET_COLL_INT32, op = EXANET_COLL_SUM;
		size_t count = 100;
		int rc, rcs[OOB_MAX_NODES], i, again;
		int64_t t0;

		/* every member differs from every other one */
		if (kind == 0)
			count = 100 + (size_t)self->rank;
		else if (kind == 1)
			dt = self->rank % 2 ? EXANET_COLL_UINT32 : EXANET_COLL_INT32;
		else
			op = (unsigned int)self->rank % EXANET_COLL_NUM_OPS;
		if (kind == 1 && self->nn > 2)
			dt = (unsigned int[]){ EXANET_COLL_INT32, EXANET_COLL_UINT32,
					       EXANET_COLL_INT64, EXANET_COLL_UINT64 }[self->rank % 4];
		ASSERT_EQ(0, group_all(self, KEY(1 + 2 * kind), &g));
		OOB_SYNC(&self->oob);
		t0 = exa_now_ms();
		rc = exanet_coll_start(g, region(self, 0), region(self, 1), count, dt, op, NULL, 0);
		if (!rc)
			rc = exanet_coll_wait(g, FAIL_TMO, NULL);
		TH_LOG("%s mismatch, rank %d: %s after %lld ms", what[kind], self->rank,
		       strerror(-rc), (long long)(exa_now_ms() - t0));
		EXPECT_GT(FAIL_MS_MAX, exa_now_ms() - t0);
		if (strict) {
			EXPECT_EQ(-EPROTO, rc);
		} else {
			EXPECT_TRUE(rc == -EPROTO || rc == -EREMOTEIO);
		}
		ASSERT_EQ(0, oob_allgather(&self->oob, &rc, rcs, sizeof(rc)));
		for (i = 0; i < self->nn; i++)
			EXPECT_NE(0, rcs[i]);
		EXPECT_EQ(-EPROTO, rcs[0]);
		/* the same operation everywhere now, still refused */
		for (again = 0; again < 2; again++) {
			rc = exanet_coll_start(g, region(self, 0), region(self, 1), 100,
					       EXANET_COLL_INT32, EXANET_COLL_SUM, NULL, 0);
			if (!rc)
				rc = exanet_coll_wait(g, FAIL_TMO, NULL);
			EXPECT_EQ(-EPIPE, rc);
		}
		OOB_SYNC(&self->oob);
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
		/* re-created under a new key: works */
		ASSERT_EQ(0, group_all(self, KEY(2 + 2 * kind), &g));
		OOB_SYNC(&self->oob);
		{
			struct job j = { .g = g, .size = (uint32_t)self->nn,
					 .me = (uint32_t)self->rank, .dtype = EXANET_COLL_FLOAT,
					 .op = EXANET_COLL_SUM, .count = 1001, .seed = 2000 + kind,
					 .src = region(self, 0), .dst = region(self, 1) };
			int bad = run_jobs(_metadata, self, &j, 1);

			agree(_metadata, self, bad, 0, j.crc, "re-created after a mismatch");
		}
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	}
}

/* The error of a member whose partner left: within FAIL_MS_MAX, never a hang. */
static void expect_left_error(struct __test_metadata *_metadata, FIXTURE_DATA(coll) *self,
			      struct exanet_coll_group *g, int64_t t0)
{
	int rc = exanet_coll_wait(g, FAIL_TMO, NULL);
	int64_t dt = exa_now_ms() - t0;

	TH_LOG("rank %d: %s after %lld ms", self->rank, strerror(-rc), (long long)dt);
	EXPECT_TRUE(rc == -ECONNRESET || rc == -EREMOTEIO || rc == -ETIMEDOUT);
	EXPECT_GT(FAIL_MS_MAX, dt);
}

/* The ranks 0..nn-2 in a new group: works. */
static void regroup_remaining(struct __test_metadata *_metadata, FIXTURE_DATA(coll) *self,
			      uint32_t key)
{
	struct exanet_coll_group *g;
	int ranks[MAXM], i, bad = 0, in = self->rank < self->nn - 1;
	struct job j = { 0 };

	OOB_SYNC(&self->oob);
	for (i = 0; i < self->nn - 1; i++)
		ranks[i] = i;
	if (in)
		ASSERT_EQ(0, group_of(self, key, ranks, (uint32_t)self->nn - 1,
				      (uint32_t)self->rank, &g));
	OOB_SYNC(&self->oob);
	if (in) {
		j = (struct job){ .g = g, .size = (uint32_t)self->nn - 1,
				  .me = (uint32_t)self->rank, .dtype = EXANET_COLL_DOUBLE,
				  .op = EXANET_COLL_SUM, .count = 4097, .seed = 2100,
				  .src = region(self, 0), .dst = region(self, 1) };
		bad = run_jobs(_metadata, self, &j, 1);
	}
	agree(_metadata, self, bad, in ? 0 : -1, j.crc, "the remaining members");
}

/*
 * The last member destroys its group while the others' operation is in
 * flight (their blocks may already wait at its NI): the others get an
 * error within seconds; the remaining members then work in a new group.
 */
TEST_F_TIMEOUT(coll, member_destroys_group_others_fail_then_regroup, 180)
{
	struct exanet_coll_group *g;
	int last = self->nn - 1;
	int64_t t0 = 0;

	if (self->nn < 2)
		SKIP_TEST("needs 2 ranks (loopback_members_on_one_node covers one node)");
	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_SUM, .count = 1001,
				 .seed = 2200, .src = region(self, 0), .dst = region(self, 1) };
		int bad = run_jobs(_metadata, self, &j, 1);

		agree(_metadata, self, bad, 0, j.crc, "before the member left");
	}
	if (self->rank != last) {
		t0 = exa_now_ms();
		ASSERT_EQ(0, exanet_coll_start(g, region(self, 0), region(self, 1), 16384,
					       EXANET_COLL_INT32, EXANET_COLL_SUM, NULL, 0));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == last) {
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	} else {
		expect_left_error(_metadata, self, g, t0);
	}
	if (self->rank != last)
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	regroup_remaining(_metadata, self, KEY(2));
}

/* The member process of member_process_exits_...: reports on fd, then sleeps. */
static void __attribute__((noreturn)) leaver(FIXTURE_DATA(coll) *self, uint32_t key, int fd,
						 int go)
{
	struct exanet_coll_group *g;
	struct exanet_coll *coll;
	struct rnode n;
	int ranks[MAXM], i, rc;
	uint32_t nodes[MAXM];
	size_t count = 1001, bytes = count * 4;
	const void *in[MAXM];

	rc = rnode_up(&n, 2 * MIB, 1);
	if (!rc)
		rc = exanet_coll_open(n.rdma, &coll);
	for (i = 0; i < self->nn; i++) {
		ranks[i] = i;
		nodes[i] = self->nodes[ranks[i]];
	}
	if (!rc)
		rc = exanet_coll_group_create(coll, key, (uint32_t)self->nn,
					      (uint32_t)self->nn - 1, nodes, &g);
	if (write(fd, &rc, sizeof(rc)) != sizeof(rc) || rc)
		_exit(1);
	/* once every member has its group: one operation with them, checked */
	if (read(go, &i, sizeof(i)) != sizeof(i))
		_exit(1);
	coll_ref_fill(EXANET_COLL_INT32, EXANET_COLL_SUM, (uint32_t)self->nn - 1, 2300, n.buf,
		      count);
	rc = exanet_coll_allreduce(g, n.buf, n.buf + MIB, count, EXANET_COLL_INT32,
				   EXANET_COLL_SUM, OP_TMO);
	if (!rc) {
		for (i = 0; i < self->nn; i++) {
			coll_ref_fill(EXANET_COLL_INT32, EXANET_COLL_SUM, (uint32_t)i, 2300,
				      self->scr + (size_t)i * bytes, count);
			in[i] = self->scr + (size_t)i * bytes;
		}
		coll_ref(EXANET_COLL_INT32, EXANET_COLL_SUM, (uint32_t)self->nn, in, count,
			 self->scr + (size_t)self->nn * bytes);
		if (memcmp(n.buf + MIB, self->scr + (size_t)self->nn * bytes, bytes))
			rc = -EBADMSG;
	}
	if (write(fd, &rc, sizeof(rc)) != sizeof(rc))
		_exit(1);
	for (;;)
		pause();		/* until SIGKILLed */
}

static int read_int(int fd, int timeout_ms, int *v)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, timeout_ms) != 1)
		return -ETIMEDOUT;
	return read(fd, v, sizeof(*v)) == sizeof(*v) ? 0 : -EIO;
}

/*
 * The last member is a separate process that is SIGKILLed while the
 * others' operation is in flight (its file closes, its group goes): the
 * others get an error within seconds; the remaining members then work in a
 * new group.
 */
TEST_F_TIMEOUT(coll, member_process_exits_others_fail_then_regroup, 180)
{
	struct exanet_coll_group *g = NULL;
	int last = self->nn - 1, v = -1, pfd[2], gfd[2], status;
	pid_t pid = -1;
	int64_t t0 = 0;

	if (self->nn < 2)
		SKIP_TEST("needs 2 ranks (loopback_members_on_one_node covers one node)");
	if (self->rank == last) {
		/* the child needs none of the registered memory (nor its COW) */
		EXPECT_EQ(0, madvise(self->n.buf, BUFSZ, MADV_DONTFORK));
		EXPECT_EQ(0, madvise(self->n.rec, 4096, MADV_DONTFORK));
		ASSERT_EQ(0, pipe(pfd));
		ASSERT_EQ(0, pipe(gfd));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			close(pfd[0]);
			close(gfd[1]);
			leaver(self, KEY(1), pfd[1], gfd[0]);
		}
		close(pfd[1]);
		close(gfd[0]);
		ASSERT_EQ(0, read_int(pfd[0], 30000, &v));
		EXPECT_EQ(0, v);
	} else {
		ASSERT_EQ(0, group_all(self, KEY(1), &g));
	}
	OOB_SYNC(&self->oob);
	/* one operation with the member process */
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_SUM, .count = 1001,
				 .seed = 2300, .src = region(self, 0), .dst = region(self, 1) };
		int bad = 0;

		if (self->rank == last) {
			ASSERT_EQ(sizeof(v), write(gfd[1], &v, sizeof(v)));
			ASSERT_EQ(0, read_int(pfd[0], 70000, &v));
			if (v)
				TH_LOG("member process: %s", strerror(-v));
			bad = v != 0;
		} else {
			bad = run_jobs(_metadata, self, &j, 1);
		}
		agree(_metadata, self, bad, -1, 0, "with the member process");
	}
	if (self->rank != last) {
		t0 = exa_now_ms();
		ASSERT_EQ(0, exanet_coll_start(g, region(self, 0), region(self, 1), 16384,
					       EXANET_COLL_INT32, EXANET_COLL_SUM, NULL, 0));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == last) {
		EXPECT_EQ(0, kill(pid, SIGKILL));
		EXPECT_EQ(pid, waitpid(pid, &status, 0));
		close(pfd[0]);
		close(gfd[1]);
	} else {
		expect_left_error(_metadata, self, g, t0);
		EXPECT_EQ(0, exanet_coll_group_destroy(g));
	}
	regroup_remaining(_metadata, self, KEY(2));
}

/* ------------------------------------------------------------- limits */

/*
 * EXANET_COLL_MAX_LEN bytes in one operation; allreduce splits a longer
 * vector (start refuses it) and the result is still the reference.
 */
TEST_F_TIMEOUT(coll, max_len_and_allreduce_split, 600)
{
	struct exanet_coll_group *g;
	size_t count = EXANET_COLL_MAX_LEN / 4 + 1001;
	int bad;

	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	OOB_SYNC(&self->oob);
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_DOUBLE, .op = EXANET_COLL_SUM,
				 .count = EXANET_COLL_MAX_LEN / 8, .seed = 2400,
				 .src = region(self, 0), .dst = region(self, 4) };

		bad = run_jobs(_metadata, self, &j, 1);
		agree(_metadata, self, bad, 0, j.crc, "EXANET_COLL_MAX_LEN bytes");
	}
	EXPECT_EQ(-EINVAL, exanet_coll_start(g, region(self, 0), region(self, 4), count,
					     EXANET_COLL_INT32, EXANET_COLL_SUM, NULL, 0));
	{
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_INT32, .op = EXANET_COLL_SUM, .count = count,
				 .seed = 2401, .src = region(self, 0), .dst = region(self, 4),
				 .allreduce = 1 };

		bad = run_jobs(_metadata, self, &j, 1);
		agree(_metadata, self, bad, 0, j.crc, "allreduce of MAX_LEN + 4004 bytes");
	}
}

/* ----------------------------------------------------------- counters */

static const char *const ccnt_names[EXANET_COLL_NUM_COUNTERS] = {
	[EXANET_CCNT_OPS] = "ops", [EXANET_CCNT_DONE] = "done",
	[EXANET_CCNT_ERRORS] = "errors", [EXANET_CCNT_TX_BLOCKS] = "tx_blocks",
	[EXANET_CCNT_TX_BYTES] = "tx_bytes", [EXANET_CCNT_RETRANSMITS] = "retransmits",
	[EXANET_CCNT_RX_BLOCKS] = "rx_blocks", [EXANET_CCNT_RX_BYTES] = "rx_bytes",
	[EXANET_CCNT_RX_DUPLICATES] = "rx_duplicates", [EXANET_CCNT_RX_EARLY] = "rx_early",
	[EXANET_CCNT_RX_CORRUPT] = "rx_corrupt", [EXANET_CCNT_RX_REFUSED] = "rx_refused",
	[EXANET_CCNT_RX_BAD] = "rx_bad", [EXANET_CCNT_PROBES] = "probes",
	[EXANET_CCNT_TIMEOUTS] = "timeouts",
};

#define COLL_SYSFS "/sys/class/exanet/exanet0/coll"

/*
 * The unit's counters: /sys/class/exanet/exanet0/coll/<name>, one file
 * each (or "name value" lines in .../coll_counters, like rdma_counters).
 * 0, or -ENOENT when the driver shows none.
 */
static int ccnt_read(long long *v)
{
	char path[128];
	struct stat st;
	unsigned int i;

	for (i = 0; i < EXANET_COLL_NUM_COUNTERS; i++) {
		if (!stat(COLL_SYSFS, &st)) {
			snprintf(path, sizeof(path), COLL_SYSFS "/%s", ccnt_names[i]);
			v[i] = exa_read_long(path);
		} else {
			v[i] = exa_file_field(COLL_SYSFS "_counters", ccnt_names[i]);
		}
		if (v[i] < 0)
			return -ENOENT;
	}
	return 0;
}

/*
 * Per member, for an operation of B blocks in a group of size s with p2
 * and L = log2(p2) rounds, first transmissions sent and blocks taken:
 * fold-in (r >= p2 sends, r - p2 takes), L rounds (members < p2 send and
 * take), fold-out (r - p2 sends, r takes).
 */
static void expected_blocks(uint32_t s, uint32_t m, long long b, long long *tx, long long *rx)
{
	uint32_t p2 = coll_ref_p2(s), l = 0;

	while ((1u << l) < p2)
		l++;
	*tx = (m >= p2 ? b : 0) + (m < p2 ? l * b : 0) + (m < s - p2 ? b : 0);
	*rx = (m < s - p2 ? b : 0) + (m < p2 ? l * b : 0) + (m >= p2 ? b : 0);
}

TEST_F_TIMEOUT(coll, counters_advance, 180)
{
	long long c0[EXANET_COLL_NUM_COUNTERS], c1[EXANET_COLL_NUM_COUNTERS];
	long long d[EXANET_COLL_NUM_COUNTERS], tx, rx, blocks = 65536 / EXANET_COLL_BLOCK_SIZE;
	int have = ccnt_read(c0) == 0, haves[OOB_MAX_NODES], i, nops = 3, bad = 0, failed = 0;
	int lossy = getenv("EXA_FAULT_INJECTION") != NULL;
	struct exanet_coll_group *g, *solo;
	uint8_t *unreg;
	unsigned int k;

	ASSERT_EQ(0, oob_allgather(&self->oob, &have, haves, sizeof(have)));
	for (i = 0; i < self->nn; i++)
		if (!haves[i])
			SKIP_TEST("no collective counters in sysfs (" COLL_SYSFS ") on node %d", i);
	ASSERT_EQ(0, group_all(self, KEY(1), &g));
	ASSERT_EQ(0, exanet_coll_group_create(self->coll, KEY(2), 1, 0, &self->node, &solo));
	OOB_SYNC(&self->oob);
	ASSERT_EQ(0, ccnt_read(c0));
	OOB_SYNC(&self->oob);
	for (i = 0; i < nops; i++) {
		struct job j = { .g = g, .size = (uint32_t)self->nn, .me = (uint32_t)self->rank,
				 .dtype = EXANET_COLL_UINT64, .op = EXANET_COLL_SUM,
				 .count = 65536 / 8, .seed = 2500 + i, .src = region(self, 0),
				 .dst = region(self, 1) };

		bad += run_jobs(_metadata, self, &j, 1);
	}
	/* one error: a solo operation on memory the NI does not know */
	unreg = map_anon(4096);
	ASSERT_NE(NULL, unreg);
	if (!exanet_coll_start(solo, unreg, region(self, 1), 16, EXANET_COLL_INT32,
			       EXANET_COLL_SUM, NULL, 0)) {
		EXPECT_EQ(-EFAULT, exanet_coll_wait(solo, FAIL_TMO, NULL));
		failed = 1;		/* started, then failed in the NI */
	}
	munmap(unreg, 4096);
	/* everybody done: every block that had to move has moved */
	OOB_SYNC(&self->oob);
	ASSERT_EQ(0, ccnt_read(c1));
	for (k = 0; k < EXANET_COLL_NUM_COUNTERS; k++) {
		d[k] = c1[k] - c0[k];
		TH_LOG("rank %d: %s +%lld (now %lld)", self->rank, ccnt_names[k], d[k], c1[k]);
	}
	expected_blocks((uint32_t)self->nn, (uint32_t)self->rank, blocks * nops, &tx, &rx);
	EXPECT_EQ(nops + failed, d[EXANET_CCNT_OPS]);
	EXPECT_EQ(nops, d[EXANET_CCNT_DONE]);
	EXPECT_EQ(failed, d[EXANET_CCNT_ERRORS]);
	EXPECT_EQ(tx, d[EXANET_CCNT_TX_BLOCKS]);
	EXPECT_EQ(tx * EXANET_COLL_BLOCK_SIZE, d[EXANET_CCNT_TX_BYTES]);
	EXPECT_EQ(rx, d[EXANET_CCNT_RX_BLOCKS]);
	EXPECT_EQ(rx * EXANET_COLL_BLOCK_SIZE, d[EXANET_CCNT_RX_BYTES]);
	EXPECT_EQ(0, d[EXANET_CCNT_TIMEOUTS]);
	EXPECT_EQ(0, d[EXANET_CCNT_RX_REFUSED]);
	EXPECT_EQ(0, d[EXANET_CCNT_RX_BAD]);
	if (!lossy) {
		EXPECT_EQ(0, d[EXANET_CCNT_RX_CORRUPT]);
	} else {
		TH_LOG("lossy fabric: %lld retransmissions, %lld corrupt, %lld duplicates",
		       d[EXANET_CCNT_RETRANSMITS], d[EXANET_CCNT_RX_CORRUPT],
		       d[EXANET_CCNT_RX_DUPLICATES]);
	}
	agree(_metadata, self, bad, -1, 0, "counters");
}

TEST_HARNESS_MAIN
