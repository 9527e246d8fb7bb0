// SPDX-License-Identifier: GPL-2.0
/*
 * FI_ATOMIC of the libfabric providers on 2 or 4 nodes (tests.list): done
 * at the target by its provider's progress, so every target keeps reading
 * its CQ until the initiators say (with a tagged message) that they are
 * done.  One source, two programs: exanet_fi_atomic (provider "exanet",
 * selftests/exanet/tests.list) and, built with -DFA_PROV='"extoll"'
 * -DFA_DEVICE='"/dev/extoll/rma2"', extoll_fi_atomic (provider "extoll",
 * selftests/extoll/tests.list).
 *
 *  - fi_getinfo with FI_ATOMIC, fi_atomicvalid / fi_query_atomic answers
 *  - every op x every datatype it supports (write, fetch, compare forms)
 *    against a reference computed locally: the fetched old values and the
 *    target memory afterwards, byte for byte
 *  - fetch-adds posted back to back are applied in issue order
 *  - compare-and-swap semantics
 *  - every rank does N fetch-add on one counter at rank 0: all fetched
 *    values distinct, the final value exact (0 lost updates)
 *  - bad input: invalid key, out of range, misaligned, no remote access,
 *    unsupported op/datatype, too many values: refused, memory unchanged
 *  - another domain's memory: a key of a second domain of the target
 *    process, sent to its first domain's endpoint, is refused even where
 *    the address is registered in the first domain as well
 */
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "exa_test.h"
#include "../lib/fi_objs.h"

#ifndef FA_PROV
#define FA_PROV "exanet"		/* the provider under test */
#define FA_DEVICE EXANET_DEFAULT_DEVICE	/* its device on the nodes */
#endif

#define FI_TMO (60 * SEC)
#define MAX_RANKS 4
#define DONE_TAG 0xd0d0d0d0d0d0d0d0ull
#define MR_MODE (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)
#define ATOMIC_BYTES 32		/* operand bytes of one request */

FIXTURE(fa) {
	struct oob oob;
	int rank, nranks;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t addr[MAX_RANKS];
};

/* A registered buffer as its owner publishes it. */
struct remote_buf {
	uint64_t addr, key;
};

static struct fi_info *atomic_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_TAGGED | FI_ATOMIC;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup(FA_PROV);
	h->domain_attr->av_type = FI_AV_TABLE;
	h->domain_attr->mr_mode = MR_MODE;
	return h;
}

FIXTURE_SETUP(fa)
{
	uint8_t name[64], all[MAX_RANKS][64];
	size_t alen = sizeof(name);
	int i;

	OOB_UP(&self->oob);
	self->rank = self->oob.rank;
	self->nranks = self->oob.nnodes;
	if (self->nranks < 2 || self->nranks > MAX_RANKS)
		SKIP_TEST("needs 2 to %d ranks, have %d", MAX_RANKS, self->nranks);
	if (access(FA_DEVICE, F_OK))
		SKIP_TEST("no " FA_DEVICE);
	fi_test_open_objs(_metadata, atomic_hints(), FI_AV_TABLE, &self->info, &self->fabric,
			  &self->domain, &self->av, &self->cq, &self->ep);
	memset(name, 0, sizeof(name));
	ASSERT_EQ(0, fi_getname(&self->ep->fid, name, &alen));
	ASSERT_EQ(0, oob_allgather(&self->oob, name, all, sizeof(name)));
	for (i = 0; i < self->nranks; i++)	/* records of 64 bytes, addresses of 8 */
		ASSERT_EQ(1, fi_av_insert(self->av, all[i], 1, &self->addr[i], 0, NULL));
}

FIXTURE_TEARDOWN(fa)
{
	oob_barrier(&self->oob);
	fi_test_close_objs(self->info, self->fabric, self->domain, self->av, self->cq, self->ep);
	oob_fini(&self->oob);
}

/* One completion (progressing the provider meanwhile); an error one is
 * returned as -err with *ee filled. */
static int wait_comp(struct fid_cq *cq, struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *ee)
{
	int64_t end = exanet_now_ns() + FI_TMO;
	struct fi_cq_err_entry tmp;

	for (;;) {
		ssize_t n = fi_cq_read(cq, e, 1);

		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			if (!ee)
				ee = &tmp;
			memset(ee, 0, sizeof(*ee));
			if (fi_cq_readerr(cq, ee, 0) != 1)
				return -FI_EOTHER;
			return -(int)ee->err;
		}
		if (n != -FI_EAGAIN)
			return (int)n;
		if (exanet_now_ns() > end)
			return -FI_ETIMEDOUT;
	}
}

/*
 * A target applies atomics only while it calls into the provider: it
 * reads its CQ until `senders` initiators have sent DONE_TAG.
 */
static int serve_until_done(FIXTURE_DATA(fa) *self, int senders)
{
	struct fi_cq_tagged_entry e;
	uint64_t token[MAX_RANKS];
	int i, got = 0;

	for (i = 0; i < senders; i++)
		if (fi_trecv(self->ep, &token[i], sizeof(token[i]), NULL, FI_ADDR_UNSPEC, DONE_TAG,
			     0, &token[i]))
			return -FI_EIO;
	int64_t end = exanet_now_ns() + 5 * FI_TMO;	/* the initiators' whole work */

	while (got < senders) {
		int ret = wait_comp(self->cq, &e, NULL);

		if (ret == -FI_ETIMEDOUT && exanet_now_ns() < end)
			continue;
		if (ret)
			return ret;
		if ((e.flags & FI_RECV) && e.tag == DONE_TAG)
			got++;
	}
	return 0;
}

/* The initiator's side: tell target it may stop serving. */
static int tell_done(FIXTURE_DATA(fa) *self, int target)
{
	struct fi_cq_tagged_entry e;
	uint64_t token = (uint64_t)self->rank;
	int ret = (int)fi_tsend(self->ep, &token, sizeof(token), NULL, self->addr[target],
				DONE_TAG, &token);

	while (!ret) {
		ret = wait_comp(self->cq, &e, NULL);
		if (!ret && e.op_context == &token)
			break;
	}
	return ret;
}

/* Register len bytes at buf with access, and publish (addr, key) of
 * rank owner's registration to everybody in *rb. */
static int share_mr(FIXTURE_DATA(fa) *self, void *buf, size_t len, uint64_t access, int owner,
		    struct fid_mr **mr, struct remote_buf *rb)
{
	int ret = 0;

	if (self->rank == owner) {
		ret = fi_mr_reg(self->domain, buf, len, access, 0, 0, 0, mr, NULL);
		rb->addr = (uintptr_t)buf;
		rb->key = ret ? 0 : fi_mr_key(*mr);
	}
	if (oob_bcast(&self->oob, rb, sizeof(*rb), owner))
		return -FI_EIO;
	return ret;
}

/* ---- the reference: each op on one value, written plainly ---- */

static size_t dt_size(enum fi_datatype dt)
{
	static const size_t size[] = { 1, 1, 2, 2, 4, 4, 8, 8, 4, 8 };

	return size[dt];
}

static int dt_is_int(enum fi_datatype dt)
{
	return dt <= FI_UINT64;
}

/* Unsigned arithmetic for SUM/PROD of integers (wraps, as the NI's
 * two's-complement world does); old/new as T. */
#define REF_OP(T, U, isint)							\
	do {									\
		T o, a = 0, c = 0, n;						\
		memcpy(&o, old, sizeof(T));					\
		if (opnd)							\
			memcpy(&a, opnd, sizeof(T));				\
		if (cmp)							\
			memcpy(&c, cmp, sizeof(T));				\
		n = o;								\
		switch (op) {							\
		case FI_MIN: if (a < o) n = a; break;				\
		case FI_MAX: if (a > o) n = a; break;				\
		case FI_SUM: n = isint ? (T)(U)((U)o + (U)a) : o + a; break;	\
		case FI_PROD: n = isint ? (T)(U)((U)o * (U)a) : o * a; break;	\
		case FI_LOR: n = (o != 0 || a != 0); break;			\
		case FI_LAND: n = (o != 0 && a != 0); break;			\
		case FI_LXOR: n = ((o != 0) != (a != 0)); break;		\
		case FI_ATOMIC_WRITE: n = a; break;				\
		case FI_CSWAP: if (c == o) n = a; break;			\
		case FI_CSWAP_NE: if (c != o) n = a; break;			\
		case FI_CSWAP_LE: if (c <= o) n = a; break;			\
		case FI_CSWAP_LT: if (c < o) n = a; break;			\
		case FI_CSWAP_GE: if (c >= o) n = a; break;			\
		case FI_CSWAP_GT: if (c > o) n = a; break;			\
		default: REF_INT_OPS_##isint(T); break;			\
		}								\
		memcpy(old, &n, sizeof(T));					\
	} while (0)
#define REF_INT_OPS_1(T)							\
	do {									\
		if (op == FI_BOR) n = o | a;					\
		else if (op == FI_BAND) n = o & a;				\
		else if (op == FI_BXOR) n = o ^ a;				\
		else if (op == FI_MSWAP) n = (T)((a & c) | (o & ~c));		\
	} while (0)
#define REF_INT_OPS_0(T) do { } while (0)

/* Apply op to the value at old (in place); FI_ATOMIC_READ leaves it. */
static void ref_apply(enum fi_op op, enum fi_datatype dt, void *old, const void *opnd,
		      const void *cmp)
{
	switch (dt) {
	case FI_INT8: REF_OP(int8_t, uint8_t, 1); break;
	case FI_UINT8: REF_OP(uint8_t, uint8_t, 1); break;
	case FI_INT16: REF_OP(int16_t, uint16_t, 1); break;
	case FI_UINT16: REF_OP(uint16_t, uint16_t, 1); break;
	case FI_INT32: REF_OP(int32_t, uint32_t, 1); break;
	case FI_UINT32: REF_OP(uint32_t, uint32_t, 1); break;
	case FI_INT64: REF_OP(int64_t, uint64_t, 1); break;
	case FI_UINT64: REF_OP(uint64_t, uint64_t, 1); break;
	case FI_FLOAT: REF_OP(float, float, 0); break;
	case FI_DOUBLE: REF_OP(double, double, 0); break;
	default: break;
	}
}

/* Value number v (small, integral, some zero) as datatype dt at p. */
static void put_value(enum fi_datatype dt, void *p, long v)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
	case FI_INT16: case FI_UINT16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
	case FI_INT32: case FI_UINT32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
	case FI_INT64: case FI_UINT64: { int64_t x = v; memcpy(p, &x, 8); break; }
	case FI_FLOAT: { float x = (float)v; memcpy(p, &x, 4); break; }
	default: { double x = (double)v; memcpy(p, &x, 8); break; }
	}
}

/* Which form supports op on dt (the libfabric table the provider follows). */
enum form { FORM_WRITE, FORM_FETCH, FORM_COMPARE };

static int form_supports(enum form f, enum fi_op op, enum fi_datatype dt)
{
	int logical = op == FI_LOR || op == FI_LAND || op == FI_LXOR || op == FI_BOR ||
		op == FI_BAND || op == FI_BXOR;

	if (op >= FI_CSWAP)
		return f == FORM_COMPARE && (op != FI_MSWAP || dt_is_int(dt));
	if (op == FI_ATOMIC_READ)
		return f == FORM_FETCH;
	return f != FORM_COMPARE && (!logical || dt_is_int(dt));
}

TEST_F(fa, getinfo_and_atomicvalid_answers)
{
	struct fi_atomic_attr attr;
	size_t count = 0;
	int op, dt;

	EXPECT_EQ(FI_ATOMIC, self->info->caps & FI_ATOMIC);
	EXPECT_STREQ(FA_PROV, self->info->fabric_attr->prov_name);
	EXPECT_EQ((uint64_t)(FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR |
			     FI_ORDER_ATOMIC_WAW),
		  self->info->tx_attr->msg_order & (FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW |
						    FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW));
	EXPECT_EQ(MR_MODE, self->info->domain_attr->mr_mode & MR_MODE);
	for (dt = FI_INT8; dt <= FI_DOUBLE; dt++) {
		for (op = FI_MIN; op <= FI_MSWAP; op++) {
			size_t per = ATOMIC_BYTES / dt_size(dt);
			int w = fi_atomicvalid(self->ep, dt, op, &count);

			EXPECT_EQ(form_supports(FORM_WRITE, op, dt) ? 0 : -FI_EOPNOTSUPP, w);
			if (!w)
				EXPECT_EQ(per, count);
			w = fi_fetch_atomicvalid(self->ep, dt, op, &count);
			EXPECT_EQ(form_supports(FORM_FETCH, op, dt) ? 0 : -FI_EOPNOTSUPP, w);
			if (!w)
				EXPECT_EQ(per, count);
			w = fi_compare_atomicvalid(self->ep, dt, op, &count);
			EXPECT_EQ(form_supports(FORM_COMPARE, op, dt) ? 0 : -FI_EOPNOTSUPP, w);
			if (!w)
				EXPECT_EQ(per / 2, count);
			memset(&attr, 0, sizeof(attr));
			w = fi_query_atomic(self->domain, dt, op, &attr, FI_FETCH_ATOMIC);
			EXPECT_EQ(form_supports(FORM_FETCH, op, dt) ? 0 : -FI_EOPNOTSUPP, w);
			if (!w) {
				EXPECT_EQ(dt_size(dt), attr.size);
				EXPECT_EQ(per, attr.count);
			}
		}
	}
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomicvalid(self->ep, FI_LONG_DOUBLE, FI_SUM, &count));
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomicvalid(self->ep, FI_FLOAT_COMPLEX, FI_SUM, &count));
}

/*
 * Rank 0 runs every op on every datatype in every form it supports, each
 * on its own 32-byte slot of rank 1's buffer with as many values as one
 * request takes, and applies the same to a local mirror: the fetched values
 * must be the mirror's old ones, and rank 1's buffer the mirror at the end.
 */
#define SLOTS 512
TEST_F_TIMEOUT(fa, every_op_and_datatype_against_reference, 600)
{
	static uint8_t target[SLOTS * ATOMIC_BYTES], mirror[SLOTS * ATOMIC_BYTES];
	static uint8_t seen[SLOTS * ATOMIC_BYTES];
	struct fid_mr *mr = NULL;
	struct remote_buf rb;
	unsigned int slot = 0, checked = 0;
	size_t i;
	int dt, op, f;

	ASSERT_EQ(0, share_mr(self, target, sizeof(target), FI_REMOTE_READ | FI_REMOTE_WRITE, 1,
			      &mr, &rb));
	/* the slot plan is the same on every rank: (dt, op, form) in order */
	for (dt = FI_INT8; dt <= FI_DOUBLE; dt++) {
		for (op = FI_MIN; op <= FI_MSWAP; op++) {
			for (f = FORM_WRITE; f <= FORM_COMPARE; f++) {
				size_t size = dt_size(dt);
				size_t n = ATOMIC_BYTES / size / (f == FORM_COMPARE ? 2 : 1);
				uint8_t *m = mirror + slot * ATOMIC_BYTES;
				uint8_t opnd[ATOMIC_BYTES], cmp[ATOMIC_BYTES], res[ATOMIC_BYTES];
				uint8_t old[ATOMIC_BYTES];
				struct fi_cq_tagged_entry e;
				uint64_t raddr = rb.addr + slot * ATOMIC_BYTES;
				ssize_t ret;

				if (!form_supports(f, op, dt))
					continue;
				ASSERT_LT(slot, SLOTS);
				for (i = 0; i < n; i++) {
					long v = (long)((i * 7 + slot) % 11) - 4;

					put_value(dt, m + i * size, v);
					put_value(dt, opnd + i * size, (long)((i * 5 + slot) % 7) - 2);
					/* compare values below, equal to and above the old one */
					put_value(dt, cmp + i * size, v + (long)(i % 3) - 1);
				}
				if (self->rank == 1)
					memcpy(target + slot * ATOMIC_BYTES, m, ATOMIC_BYTES);
				slot++;
				if (self->rank != 0) {
					for (i = 0; i < n; i++)
						ref_apply(op, dt, m + i * size, opnd + i * size,
							  cmp + i * size);
					continue;
				}
				memcpy(old, m, ATOMIC_BYTES);
				for (i = 0; i < n; i++)
					ref_apply(op, dt, m + i * size, opnd + i * size,
						  cmp + i * size);
				memset(res, 0xee, sizeof(res));
				if (slot == 1)
					OOB_SYNC(&self->oob);	/* rank 1 has its slots */
				if (f == FORM_WRITE)
					ret = fi_atomic(self->ep, opnd, n, NULL, self->addr[1], raddr,
							rb.key, dt, op, res);
				else if (f == FORM_FETCH)
					ret = fi_fetch_atomic(self->ep, opnd, n, NULL, res, NULL,
							      self->addr[1], raddr, rb.key, dt, op,
							      res);
				else
					ret = fi_compare_atomic(self->ep, opnd, n, NULL, cmp, NULL,
								res, NULL, self->addr[1], raddr,
								rb.key, dt, op, res);
				if (ret)
					TH_LOG("dt %d op %d form %d: %s", dt, op, f,
					       fi_strerror((int)-ret));
				ASSERT_EQ(0, ret);
				ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
				EXPECT_EQ((void *)res, e.op_context);
				EXPECT_EQ(FI_ATOMIC | (f == FORM_WRITE ? FI_WRITE : FI_READ), e.flags);
				if (f != FORM_WRITE && memcmp(res, old, n * size)) {
					TH_LOG("dt %d op %d form %d: fetched values differ", dt, op, f);
					ASSERT_EQ(0, memcmp(res, old, n * size));
				}
				checked++;
			}
		}
	}
	if (self->rank == 1) {
		OOB_SYNC(&self->oob);	/* slots filled: rank 0 may start */
		ASSERT_EQ(0, serve_until_done(self, 1));
	} else if (self->rank == 0) {
		ASSERT_EQ(0, tell_done(self, 1));
		TH_LOG("%u op/datatype/form combinations checked", checked);
	} else {
		OOB_SYNC(&self->oob);
	}
	/* rank 1's memory against the mirror, slot by slot */
	if (self->rank == 1)
		memcpy(seen, target, sizeof(target));
	ASSERT_EQ(0, oob_bcast(&self->oob, seen, sizeof(seen), 1));
	for (i = 0; i < slot; i++) {
		if (memcmp(seen + i * ATOMIC_BYTES, mirror + i * ATOMIC_BYTES, ATOMIC_BYTES))
			TH_LOG("slot %zu: target memory differs from the reference", i);
		EXPECT_EQ(0, memcmp(seen + i * ATOMIC_BYTES, mirror + i * ATOMIC_BYTES,
				    ATOMIC_BYTES));
	}
	if (self->rank == 1)
		EXPECT_EQ(0, fi_close(&mr->fid));
}

/*
 * Fetch-adds posted back to back without waiting are applied in issue
 * order (FI_ORDER_ATOMIC_RAW/WAW: one stream, applied in delivery order):
 * the k-th returns k; then compare-and-swap semantics on the same counter.
 */
#define ORDERED 200
TEST_F_TIMEOUT(fa, ordered_fetch_add_and_compare_swap, 300)
{
	static uint64_t counter;
	uint64_t one = 1, got[ORDERED], res, want, cmp;
	struct fi_cq_tagged_entry e;
	struct fid_mr *mr = NULL;
	struct remote_buf rb;
	int i, done = 0;

	counter = 0;
	ASSERT_EQ(0, share_mr(self, &counter, sizeof(counter), FI_REMOTE_READ | FI_REMOTE_WRITE,
			      1, &mr, &rb));
	if (self->rank == 1) {
		ASSERT_EQ(0, serve_until_done(self, 1));
		EXPECT_EQ(12345u, counter);
		EXPECT_EQ(0, fi_close(&mr->fid));
		return;
	}
	if (self->rank != 0)
		return;
	for (i = 0; i < ORDERED; i++) {
		got[i] = UINT64_MAX;
		ASSERT_EQ(0, fi_fetch_atomic(self->ep, &one, 1, NULL, &got[i], NULL, self->addr[1],
					     rb.addr, rb.key, FI_UINT64, FI_SUM, &got[i]));
	}
	while (done < ORDERED) {
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		done++;
	}
	for (i = 0; i < ORDERED; i++)
		ASSERT_EQ((uint64_t)i, got[i]);
	/* CSWAP that matches: swaps, returns the old value */
	want = 1000;
	cmp = ORDERED;
	ASSERT_EQ(0, fi_compare_atomic(self->ep, &want, 1, NULL, &cmp, NULL, &res, NULL,
				       self->addr[1], rb.addr, rb.key, FI_UINT64, FI_CSWAP, &res));
	ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	EXPECT_EQ(FI_ATOMIC | FI_READ, e.flags);
	EXPECT_EQ((uint64_t)ORDERED, res);
	/* CSWAP that does not: leaves it, returns the current value */
	want = 7;
	cmp = ORDERED;
	ASSERT_EQ(0, fi_compare_atomic(self->ep, &want, 1, NULL, &cmp, NULL, &res, NULL,
				       self->addr[1], rb.addr, rb.key, FI_UINT64, FI_CSWAP, &res));
	ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	EXPECT_EQ(1000u, res);
	/* CSWAP_GT: compare 2000 > 1000, swaps */
	want = 12345;
	cmp = 2000;
	ASSERT_EQ(0, fi_compare_atomic(self->ep, &want, 1, NULL, &cmp, NULL, &res, NULL,
				       self->addr[1], rb.addr, rb.key, FI_UINT64, FI_CSWAP_GT, &res));
	ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	EXPECT_EQ(1000u, res);
	/* ATOMIC_READ sees it */
	ASSERT_EQ(0, fi_fetch_atomic(self->ep, NULL, 1, NULL, &res, NULL, self->addr[1], rb.addr,
				     rb.key, FI_UINT64, FI_ATOMIC_READ, &res));
	ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	EXPECT_EQ(12345u, res);
	ASSERT_EQ(0, tell_done(self, 1));
}

/*
 * Every rank (rank 0 included, through its own endpoint) does N fetch-adds
 * of 1 on one counter at rank 0, up to WINDOW in flight: the fetched values
 * of all ranks together are exactly 0 .. ranks * N - 1, each once, and the
 * counter ends at ranks * N: no update lost, none applied twice.
 */
#define PER_RANK 2000
#define WINDOW 16
TEST_F_TIMEOUT(fa, concurrent_fetch_add_loses_no_update, 900)
{
	static uint64_t counter, got[PER_RANK], all[MAX_RANKS][PER_RANK];
	static uint8_t seen[MAX_RANKS * PER_RANK];
	uint64_t one = 1, total = (uint64_t)self->nranks * PER_RANK;
	struct fi_cq_tagged_entry e;
	struct fid_mr *mr = NULL;
	struct remote_buf rb;
	int posted = 0, done = 0, r, i;

	counter = 0;
	ASSERT_EQ(0, share_mr(self, &counter, sizeof(counter), FI_REMOTE_READ | FI_REMOTE_WRITE,
			      0, &mr, &rb));
	while (done < PER_RANK) {
		while (posted < PER_RANK && posted - done < WINDOW) {
			ssize_t ret = fi_fetch_atomic(self->ep, &one, 1, NULL, &got[posted], NULL,
						      self->addr[0], rb.addr, rb.key, FI_UINT64,
						      FI_SUM, &got[posted]);

			if (ret == -FI_EAGAIN)
				break;
			ASSERT_EQ(0, ret);
			posted++;
		}
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		ASSERT_EQ(FI_ATOMIC | FI_READ, e.flags);
		done++;
	}
	if (self->rank == 0) {
		ASSERT_EQ(0, serve_until_done(self, self->nranks - 1));
	} else {
		ASSERT_EQ(0, tell_done(self, 0));
	}
	ASSERT_EQ(0, oob_allgather(&self->oob, got, all, sizeof(got)));
	if (self->rank != 0)
		return;
	EXPECT_EQ(total, counter);
	memset(seen, 0, sizeof(seen));
	for (r = 0; r < self->nranks; r++) {
		for (i = 0; i < PER_RANK; i++) {
			uint64_t v = all[r][i];

			if (v >= total || seen[v]) {
				TH_LOG("rank %d op %d fetched %llu: %s", r, i,
				       (unsigned long long)v, v >= total ? "out of range" :
				       "twice");
				ASSERT_TRUE(0);
			}
			seen[v] = 1;
			/* one initiator's fetch-adds are applied in its issue order */
			if (i)
				ASSERT_LT(all[r][i - 1], v);
		}
	}
	TH_LOG("%d ranks x %d fetch-adds: %llu, every value once", self->nranks, PER_RANK,
	       (unsigned long long)counter);
	EXPECT_EQ(0, fi_close(&mr->fid));
}

/* Post an atomic that the target must refuse: the error completion's code. */
static int refused(FIXTURE_DATA(fa) *self, uint64_t addr, uint64_t key, enum fi_datatype dt,
		   enum fi_op op, int fetch, uint64_t *ctx)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	uint64_t opnd[4] = { 0x1111111111111111ull, 2, 3, 4 }, res[4];
	ssize_t ret;
	int err;

	ret = fetch ? fi_fetch_atomic(self->ep, opnd, 1, NULL, res, NULL, self->addr[1], addr,
				      key, dt, op, ctx) :
		fi_atomic(self->ep, opnd, 1, NULL, self->addr[1], addr, key, dt, op, ctx);
	if (ret)
		return (int)ret;
	err = wait_comp(self->cq, &e, &ee);
	if (!err)
		return 0;	/* accepted */
	if (ee.op_context != ctx ||
	    ee.flags != (FI_ATOMIC | (fetch ? FI_READ : FI_WRITE)))
		return -FI_EOTHER;
	return err;
}

/*
 * Bad input: rank 1 has a remote read-write buffer A, a remote read-only
 * buffer B and a local-only one C.  Invalid keys, addresses outside A,
 * misaligned addresses, writes to B and C are refused with an error
 * completion (FI_EACCES, FI_EINVAL for the alignment); unsupported
 * combinations and too many values are refused at post time; none of it
 * touches memory.  A fetch from B works.
 */
#define BAD_LEN 4096
TEST_F_TIMEOUT(fa, bad_input_refused_without_touching_memory, 300)
{
	static uint8_t a[BAD_LEN], b[BAD_LEN], c[BAD_LEN];
	struct fid_mr *mra = NULL, *mrb = NULL, *mrc = NULL;
	struct remote_buf ra, rbb, rc;
	uint64_t ctx, opnd[8] = { 0 }, res[8], cmp[8] = { 0 };
	size_t count;
	int i;

	memset(a, 0xa5, sizeof(a));
	memset(b, 0xb6, sizeof(b));
	memset(c, 0xc7, sizeof(c));
	ASSERT_EQ(0, share_mr(self, a, sizeof(a), FI_REMOTE_READ | FI_REMOTE_WRITE, 1, &mra, &ra));
	ASSERT_EQ(0, share_mr(self, b, sizeof(b), FI_REMOTE_READ, 1, &mrb, &rbb));
	ASSERT_EQ(0, share_mr(self, c, sizeof(c), FI_READ | FI_WRITE, 1, &mrc, &rc));
	if (self->rank == 1) {
		ASSERT_EQ(0, serve_until_done(self, 1));
		for (i = 0; i < BAD_LEN; i++) {
			ASSERT_EQ(0xa5, a[i]);
			ASSERT_EQ(0xb6, b[i]);
			ASSERT_EQ(0xc7, c[i]);
		}
		EXPECT_EQ(0, fi_close(&mra->fid));
		EXPECT_EQ(0, fi_close(&mrb->fid));
		EXPECT_EQ(0, fi_close(&mrc->fid));
		return;
	}
	if (self->rank != 0)
		return;
	/* keys: another handle, another rank, zero */
	EXPECT_EQ(-FI_EACCES, refused(self, ra.addr, ra.key ^ 0x100, FI_UINT64, FI_SUM, 0, &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, ra.addr, ra.key ^ 1, FI_UINT64, FI_SUM, 1, &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, ra.addr, 0, FI_UINT64, FI_ATOMIC_WRITE, 0, &ctx));
	/* addresses: before, across the end, far beyond, wrapping */
	EXPECT_EQ(-FI_EACCES, refused(self, ra.addr - 8, ra.key, FI_UINT64, FI_SUM, 0, &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, ra.addr + BAD_LEN - 4, ra.key, FI_UINT64, FI_SUM, 0,
				      &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, ra.addr + BAD_LEN, ra.key, FI_UINT8, FI_SUM, 0, &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, ra.addr + (1ull << 40), ra.key, FI_UINT32, FI_SUM, 1,
				      &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, UINT64_MAX - 3, ra.key, FI_UINT32, FI_SUM, 0, &ctx));
	/* misaligned: inside A, so only the alignment is wrong */
	EXPECT_EQ(-FI_EINVAL, refused(self, ra.addr + 1, ra.key, FI_UINT16, FI_SUM, 0, &ctx));
	EXPECT_EQ(-FI_EINVAL, refused(self, ra.addr + 4, ra.key, FI_UINT64, FI_SUM, 1, &ctx));
	EXPECT_EQ(-FI_EINVAL, refused(self, ra.addr + 2, ra.key, FI_FLOAT, FI_MAX, 0, &ctx));
	/* no remote write access: B (read only), C (local only); no read on C */
	EXPECT_EQ(-FI_EACCES, refused(self, rbb.addr, rbb.key, FI_UINT32, FI_SUM, 0, &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, rbb.addr, rbb.key, FI_UINT32, FI_SUM, 1, &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, rc.addr, rc.key, FI_UINT32, FI_ATOMIC_WRITE, 0, &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, rc.addr, rc.key, FI_UINT32, FI_ATOMIC_READ, 1, &ctx));
	/* reading B is fine */
	EXPECT_EQ(0, refused(self, rbb.addr + 8, rbb.key, FI_UINT32, FI_ATOMIC_READ, 1, &ctx));
	/* refused at post time: unsupported combinations, too many values */
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomic(self->ep, opnd, 1, NULL, self->addr[1], ra.addr,
					    ra.key, FI_FLOAT, FI_BOR, &ctx));
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomic(self->ep, opnd, 1, NULL, self->addr[1], ra.addr,
					    ra.key, FI_UINT32, FI_CSWAP, &ctx));
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomic(self->ep, opnd, 1, NULL, self->addr[1], ra.addr,
					    ra.key, FI_UINT32, FI_ATOMIC_READ, &ctx));
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_fetch_atomic(self->ep, opnd, 1, NULL, res, NULL,
						  self->addr[1], ra.addr, ra.key, FI_LONG_DOUBLE,
						  FI_SUM, &ctx));
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_compare_atomic(self->ep, opnd, 1, NULL, cmp, NULL, res, NULL,
						    self->addr[1], ra.addr, ra.key, FI_DOUBLE,
						    FI_MSWAP, &ctx));
	ASSERT_EQ(0, fi_atomicvalid(self->ep, FI_UINT32, FI_SUM, &count));
	EXPECT_EQ(-FI_EINVAL, fi_atomic(self->ep, opnd, count + 1, NULL, self->addr[1], ra.addr,
					ra.key, FI_UINT32, FI_SUM, &ctx));
	EXPECT_EQ(-FI_EINVAL, fi_atomic(self->ep, opnd, 0, NULL, self->addr[1], ra.addr, ra.key,
					FI_UINT32, FI_SUM, &ctx));
	ASSERT_EQ(0, fi_compare_atomicvalid(self->ep, FI_UINT64, FI_CSWAP, &count));
	EXPECT_EQ(-FI_EINVAL, fi_compare_atomic(self->ep, opnd, count + 1, NULL, cmp, NULL, res,
						NULL, self->addr[1], ra.addr, ra.key, FI_UINT64,
						FI_CSWAP, &ctx));
	EXPECT_EQ(-FI_EINVAL, fi_fetch_atomic(self->ep, opnd, 1, NULL, NULL, NULL, self->addr[1],
					      ra.addr, ra.key, FI_UINT64, FI_SUM, &ctx));
	ASSERT_EQ(0, tell_done(self, 1));
}

/*
 * Another domain's memory: rank 1 registers one buffer in its fixture
 * domain (key k1) and in a second domain of its own (key k2, another RMA
 * VPID / RDMA rank, so k2 != k1).  Atomics with k2 sent to the fixture
 * endpoint are refused (FI_EACCES) although the address lies in a
 * registration of that domain, and change nothing; one with k1 works.
 */
TEST_F_TIMEOUT(fa, another_domains_memory_refused, 300)
{
	static uint64_t d[4];
	struct fid_domain *dom2 = NULL;
	struct fid_mr *mr1 = NULL, *mr2 = NULL;
	struct remote_buf r1, r2;
	struct fi_cq_tagged_entry e;
	uint64_t ctx, five = 5, res = 0;

	d[0] = 0x1111111111111111ull;
	d[1] = 100;
	if (self->rank == 1)
		ASSERT_EQ(0, fi_domain(self->fabric, self->info, &dom2, NULL));
	ASSERT_EQ(0, share_mr(self, d, sizeof(d), FI_REMOTE_READ | FI_REMOTE_WRITE, 1, &mr1, &r1));
	/* the same memory in the second domain (share_mr registers in the fixture's) */
	if (self->rank == 1) {
		ASSERT_EQ(0, fi_mr_reg(dom2, d, sizeof(d), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0,
				       0, &mr2, NULL));
		r2.addr = (uintptr_t)d;
		r2.key = fi_mr_key(mr2);
		EXPECT_NE(r1.key, r2.key);
	}
	ASSERT_EQ(0, oob_bcast(&self->oob, &r2, sizeof(r2), 1));
	if (self->rank == 1) {
		ASSERT_EQ(0, serve_until_done(self, 1));
		EXPECT_EQ(0x1111111111111111ull, d[0]);
		EXPECT_EQ(105u, d[1]);
		EXPECT_EQ(0, fi_close(&mr2->fid));
		EXPECT_EQ(0, fi_close(&mr1->fid));
		EXPECT_EQ(0, fi_close(&dom2->fid));
		return;
	}
	if (self->rank != 0)
		return;
	EXPECT_EQ(-FI_EACCES, refused(self, r2.addr, r2.key, FI_UINT64, FI_SUM, 1, &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, r2.addr, r2.key, FI_UINT64, FI_ATOMIC_WRITE, 0, &ctx));
	EXPECT_EQ(-FI_EACCES, refused(self, r2.addr + 8, r2.key, FI_UINT32, FI_ATOMIC_READ, 1,
				      &ctx));
	/* the first domain's own key works on the same memory */
	ASSERT_EQ(0, fi_fetch_atomic(self->ep, &five, 1, NULL, &res, NULL, self->addr[1],
				     r1.addr + 8, r1.key, FI_UINT64, FI_SUM, &res));
	ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	EXPECT_EQ(100u, res);
	ASSERT_EQ(0, tell_done(self, 1));
}

TEST_HARNESS_MAIN
