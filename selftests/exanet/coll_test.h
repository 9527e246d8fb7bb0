/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fixture and helpers of exanet_coll.c and the exanet_coll-*.h it
 * includes: the fixture "coll" (RDMA registration, the collective unit,
 * every rank's node), groups of all or some ranks, operations ("jobs")
 * checked against the reference order (selftests/lib/coll_ref.h), every
 * rank's verdict, and the unit's counters.
 */
#ifndef COLL_TEST_H
#define COLL_TEST_H

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

/* One of the unit's counters (EXANET_CCNT_*); -1 when the driver shows none. */
static long long coll_counter(unsigned int idx)
{
	long long v[EXANET_COLL_NUM_COUNTERS];

	return ccnt_read(v) ? -1 : v[idx];
}

#endif /* COLL_TEST_H */
