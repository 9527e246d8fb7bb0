/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the in-VM tests of the libfabric providers share (exanet:
 * selftests/exanet/exanet_fi2.c and the exanet_fi2-*.h it includes,
 * extoll: selftests/extoll/extoll_fi.c):
 * the two-rank fixture "fi" (fabric, domain, AV, CQ, an enabled endpoint
 * and the peer's address, exchanged out of band), completions, the data
 * pattern with every byte checked, and the bodies of the cases both
 * programs run (their wrappers: fi_cases.h).  Define FI_TEST_PROV (provider
 * name) and FI_TEST_DEVICE (a device file whose absence skips the tests)
 * before including it.
 */
#ifndef FI_TEST_H
#define FI_TEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "exa_clock.h"
#include "fi_objs.h"
#include "kselftest_exa.h"
#include "oob.h"
#include "exa_util.h"

#if !defined(FI_TEST_PROV) || !defined(FI_TEST_DEVICE)
#error "define FI_TEST_PROV and FI_TEST_DEVICE before including fi_test.h"
#endif

#ifndef SEC
#define SEC (1000000000LL)
#endif
#ifndef OOB_SYNC
#define OOB_SYNC(o) ASSERT_EQ(0, oob_barrier(o))
#endif

#define FI_TMO (60 * SEC)
#define MAX_SIZE (1u << 20)
#define EAGER_MAX 256		/* default FI_<PROV>_RNDV_THRESHOLD */

FIXTURE(fi) {
	struct oob oob;
	int rank;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
	int peer_known;
	uint8_t *sbuf, *rbuf;
};

static inline struct fi_info *fi_test_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_TAGGED | FI_MSG;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup(FI_TEST_PROV);
	h->domain_attr->av_type = FI_AV_TABLE;
	return h;
}

/* Open fabric, domain, AV, CQ and an enabled endpoint; its address in addr. */
static inline void fi_open_local(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
			  enum fi_av_type av_type, uint64_t caps, uint8_t addr[64])
{
	struct fi_info *hints = fi_test_hints();
	size_t alen = 64;

	ASSERT_NE(NULL, hints);
	hints->domain_attr->av_type = av_type;
	hints->caps = caps;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	fi_test_open_objs(_metadata, hints, av_type, &self->info, &self->fabric, &self->domain,
			  &self->av, &self->cq, &self->ep);
	memset(addr, 0, 64);
	ASSERT_EQ(0, fi_getname(&self->ep->fid, addr, &alen));
	ASSERT_EQ(8, alen);
}

static inline void fi_open_caps(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
			 enum fi_av_type av_type, uint64_t caps)
{
	uint8_t addr[64], all[2][64];

	fi_open_local(_metadata, self, av_type, caps, addr);
	ASSERT_EQ(0, oob_allgather(&self->oob, addr, all, sizeof(addr)));
	ASSERT_EQ(1, fi_av_insert(self->av, all[1 - self->rank], 1, &self->peer, 0, NULL));
	ASSERT_NE(FI_ADDR_NOTAVAIL, self->peer);
	self->peer_known = 1;
}

/* One more endpoint on the fixture's domain and AV, completing into cq,
 * enabled. */
static inline void fi_open_extra_ep(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
				    struct fid_cq *cq, struct fid_ep **ep)
{
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(*ep, &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(*ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(*ep));
}

/* Where a rank's RMA window is: its address and key, swapped over OOB. */
struct fi_window {
	uint64_t addr, key;
};

/* Register win (cap bytes) for every RMA access and learn every rank's
 * window: all[rank]. */
static inline void fi_share_window(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
				   void *win, size_t cap, struct fid_mr **mr,
				   struct fi_window all[2])
{
	struct fi_window mine;

	ASSERT_EQ(0, fi_mr_reg(self->domain, win, cap,
			       FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, mr,
			       NULL));
	mine.addr = (uintptr_t)win;
	mine.key = fi_mr_key(*mr);
	ASSERT_EQ(0, oob_allgather(&self->oob, &mine, all, sizeof(mine)));
}

static inline void fi_open_all(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
			enum fi_av_type av_type)
{
	fi_open_caps(_metadata, self, av_type, FI_TAGGED | FI_MSG);
}

FIXTURE_SETUP(fi)
{
	int err = oob_init(&self->oob, (unsigned int)ksft_case_index(_metadata), 60000);

	if (err)
		TH_LOG("oob_init (rank %s): %s", getenv("EXA_RANK") ? getenv("EXA_RANK") : "0",
		       strerror(-err));
	ASSERT_EQ(0, err);
	if (self->oob.nnodes != 2)
		SKIP_TEST("needs exactly 2 ranks, have %d", self->oob.nnodes);
	self->rank = self->oob.rank;
	if (access(FI_TEST_DEVICE, F_OK))
		SKIP_TEST("no " FI_TEST_DEVICE);
	self->sbuf = malloc(MAX_SIZE + 64);
	self->rbuf = malloc(MAX_SIZE + 64);
	ASSERT_NE(NULL, self->sbuf);
	ASSERT_NE(NULL, self->rbuf);
}

#define BARRIER_TAG 0x0ba7e5ba7e5ba7e5ull

/*
 * The provider progresses manually: a rendezvous send completes when the
 * receiver's progress has sent the FIN, and an eager packet refused with
 * NACK FULL is resent by the sender's progress.  A test whose own
 * completions are all in must keep calling into the provider until the peer
 * has its completions too (as MPI_Finalize does), so each rank sends a last
 * tagged message and polls until the peer's has arrived and its own is
 * delivered.  Failures are ignored: this is teardown.
 */
static inline void fi_progress_barrier(FIXTURE_DATA(fi) *self)
{
	int64_t end = exa_clock_ns() + FI_TMO;
	struct fi_cq_tagged_entry e;
	uint64_t token = 0;
	int sent = 0, received = 0;

	if (fi_trecv(self->ep, &token, sizeof(token), NULL, self->peer, BARRIER_TAG, 0, &token))
		return;
	if (fi_tsend(self->ep, &self->rank, sizeof(self->rank), NULL, self->peer, BARRIER_TAG,
		     &self->rank))
		return;
	while ((!sent || !received) && exa_clock_ns() < end) {
		ssize_t n = fi_cq_read(self->cq, &e, 1);

		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			if (fi_cq_readerr(self->cq, &ee, 0) == 1 &&
			    (ee.op_context == &self->rank || ee.op_context == &token))
				return;		/* the peer is gone */
			continue;
		}
		if (n != 1)
			continue;
		/* anything else is a leftover of the test */
		if ((e.flags & FI_RECV) && e.tag == BARRIER_TAG)
			received = 1;
		else if (!(e.flags & FI_RECV) && e.op_context == &self->rank)
			sent = 1;
	}
}

FIXTURE_TEARDOWN(fi)
{
	if (self->peer_known)
		fi_progress_barrier(self);
	oob_barrier(&self->oob);
	fi_test_close_objs(self->info, self->fabric, self->domain, self->av, self->cq, self->ep);
	free(self->sbuf);
	free(self->rbuf);
	oob_fini(&self->oob);
}

/* Wait for one completion; an error completion is logged and returned as
 * -err with *err_entry filled (may be NULL). */
static inline int wait_comp(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		     struct fi_cq_err_entry *err_entry)
{
	int64_t end = exa_clock_ns() + FI_TMO;
	ssize_t n;

	for (;;) {
		n = fi_cq_read(cq, e, 1);
		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			if (fi_cq_readerr(cq, &ee, 0) != 1)
				return -FI_EOTHER;
			if (err_entry)
				*err_entry = ee;
			return -(int)ee.err;
		}
		if (n != -FI_EAGAIN)
			return (int)n;
		if (exa_clock_ns() > end)
			return -FI_ETIMEDOUT;
	}
}

/* Pattern that depends on (size, tag) and each byte position. */
static inline void fill(uint8_t *buf, size_t len, uint64_t tag)
{
	exa_fill(buf, len, (uint32_t)tag, (uint32_t)len);
}

/* Byte-by-byte comparison with the pattern; logs the first difference. */
static inline int check(const uint8_t *buf, size_t len, uint64_t tag)
{
	static uint8_t ref[MAX_SIZE];
	size_t i;

	fill(ref, len, tag);
	for (i = 0; i < len; i++) {
		if (buf[i] != ref[i]) {
			fprintf(stderr, "# size %zu tag %#llx: byte %zu is %#x, expected %#x\n",
				len, (unsigned long long)tag, i, buf[i], ref[i]);
			return -EBADMSG;
		}
	}
	return 0;
}

/* Sizes 0 .. 1 MiB: powers of two, their neighbours and the packet edges. */
static inline size_t test_sizes(size_t *out)
{
	static const size_t edges[] = { 31, 32, 33, 39, 40, 41, 95, 96, 97, 1000, 4095, 65537 };
	size_t n = 0, s, i;

	out[n++] = 0;
	for (s = 1; s <= MAX_SIZE; s *= 2)
		out[n++] = s;
	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		out[n++] = edges[i];
	return n;
}

static inline void sizes_one_way(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self, int sender)
{
	size_t sizes[64], n = test_sizes(sizes), k;
	struct fi_cq_tagged_entry e;

	for (k = 0; k < n; k++) {
		size_t len = sizes[k];
		uint64_t tag = 0x1000 + k;

		if (self->rank == sender) {
			fill(self->sbuf, len, tag);
			ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf, len, NULL, self->peer, tag,
					      self->sbuf));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			EXPECT_EQ(self->sbuf, e.op_context);
			EXPECT_EQ(FI_SEND | FI_TAGGED, e.flags & (FI_SEND | FI_TAGGED));
		} else {
			memset(self->rbuf, 0xee, len + 64);
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, MAX_SIZE, NULL, FI_ADDR_UNSPEC,
					      tag, 0, self->rbuf));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			EXPECT_EQ(self->rbuf, e.op_context);
			EXPECT_EQ(FI_RECV | FI_TAGGED, e.flags & (FI_RECV | FI_TAGGED));
			EXPECT_EQ(tag, e.tag);
			if (e.len != len)
				TH_LOG("size %zu: received %zu", len, e.len);
			ASSERT_EQ(len, e.len);
			if (check(self->rbuf, len, tag))
				TH_LOG("size %zu: data differs", len);
			ASSERT_EQ(0, check(self->rbuf, len, tag));
			ASSERT_EQ(0xee, self->rbuf[len]);	/* nothing written past the end */
		}
	}
}

/* Tagged sizes 0 .. 1 MiB (test_sizes), rank 0 to 1, then 1 to 0. */
static inline void fi_test_tagged_sizes(struct __test_metadata *_metadata,
					FIXTURE_DATA(fi) *self)
{
	fi_open_all(_metadata, self, FI_AV_TABLE);
	sizes_one_way(_metadata, self, 0);
	OOB_SYNC(&self->oob);
	sizes_one_way(_metadata, self, 1);
}

/* check() for any length (allocates the reference). */
static inline int check_any(const uint8_t *buf, size_t len, uint64_t tag)
{
	uint8_t *ref;
	size_t i;
	int ret = 0;

	if (len <= MAX_SIZE)
		return check(buf, len, tag);
	ref = malloc(len);
	if (!ref)
		return -ENOMEM;
	fill(ref, len, tag);
	if (memcmp(buf, ref, len)) {
		for (i = 0; i < len && buf[i] == ref[i]; i++)
			;
		fprintf(stderr, "# size %zu tag %#llx: byte %zu is %#x, expected %#x\n", len,
			(unsigned long long)tag, i, buf[i], ref[i]);
		ret = -EBADMSG;
	}
	free(ref);
	return ret;
}

/*
 * Message k of the inject flood: its length, and how it is sent (an
 * fi_tsend with context k + 1 every fifth, fi_tinjectdata with k as CQ
 * data every third of the others, else fi_tinject); all on one tag, so
 * receives match in sending order.
 */
#define INJ_FLOOD_N	3000
#define INJ_FLOOD_TAG	0x7000ull
#define INJ_FLOOD_SLOT	64
static inline int inj_flood_is_send(uint32_t k)
{
	return k % 5 == 4;
}

static inline size_t inj_flood_len(uint32_t k)
{
	return k % 33;	/* 0 .. 32 bytes: every inject size */
}

static inline int inj_flood_has_data(uint32_t k)
{
	return !inj_flood_is_send(k) && k % 3 == 1;
}

/* Receives for messages from .. to - 1, each in its slot of rbuf, context k + 1. */
static inline int inj_flood_post(FIXTURE_DATA(fi) *self, uint32_t from, uint32_t to)
{
	for (uint32_t k = from; k < to; k++) {
		ssize_t ret = fi_trecv(self->ep, self->rbuf + (size_t)k * INJ_FLOOD_SLOT,
				       INJ_FLOOD_SLOT, NULL, self->peer, INJ_FLOOD_TAG, 0,
				       (void *)(uintptr_t)(k + 1));

		if (ret)
			return (int)ret;
	}
	return 0;
}

/* Completion e is the k-th, with message k's bytes and CQ data; 0 or -1. */
static inline int inj_flood_check(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
				  const struct fi_cq_tagged_entry *e, uint32_t k)
{
	size_t len = inj_flood_len(k);
	const uint8_t *b = self->rbuf + (size_t)k * INJ_FLOOD_SLOT;

	if ((uintptr_t)e->op_context != k + 1 || e->len != len ||
	    exa_check(b, len, k, 0) ||
	    !!(e->flags & FI_REMOTE_CQ_DATA) != inj_flood_has_data(k) ||
	    (inj_flood_has_data(k) && e->data != k)) {
		TH_LOG("completion %u: receive %zu, %zu bytes (want %zu), data %s %" PRIu64,
		       k, (size_t)(uintptr_t)e->op_context - 1, (size_t)e->len, len,
		       (e->flags & FI_REMOTE_CQ_DATA) ? "yes" : "no", (uint64_t)e->data);
		return -1;
	}
	return 0;
}

/* Send completion e: a send's, the first for it; 0 or -1. */
static inline int inj_flood_send_done(struct __test_metadata *_metadata, uint8_t *seen,
				      const struct fi_cq_tagged_entry *e)
{
	uintptr_t k = (uintptr_t)e->op_context - 1;

	if (k >= INJ_FLOOD_N || !inj_flood_is_send((uint32_t)k) || seen[k] ||
	    !(e->flags & FI_SEND)) {
		TH_LOG("send completion with context %p, flags %#" PRIx64 ": %s", e->op_context,
		       (uint64_t)e->flags, k < INJ_FLOOD_N && seen[k] ? "twice" : "no such send");
		return -1;
	}
	seen[k] = 1;
	return 0;
}

/*
 * More injects than the NIC takes before the receiver reads (EXTOLL: 768
 * VELO messages; the rest wait in the provider), some of them behind a
 * plain send: each arrives once, in order, with its bytes and CQ data.
 * The first 1000 find their receive posted; the others arrive while the
 * receiver progresses without receives and wait as unexpected messages.
 */
static inline void fi_test_inject_flood(struct __test_metadata *_metadata,
					FIXTURE_DATA(fi) *self)
{
	struct fi_cq_tagged_entry e;
	uint32_t k, sends = 0, done = 0;
	int64_t end;

	static uint8_t seen[INJ_FLOOD_N];

	fi_open_all(_metadata, self, FI_AV_TABLE);
	ASSERT_LE((size_t)INJ_FLOOD_N * INJ_FLOOD_SLOT, (size_t)MAX_SIZE);
	memset(seen, 0, sizeof(seen));
	if (self->rank == 1)
		ASSERT_EQ(0, inj_flood_post(self, 0, 1000));
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		for (k = 0; k < INJ_FLOOD_N; k++) {
			uint8_t *b = self->sbuf + (size_t)k * INJ_FLOOD_SLOT;
			size_t len = inj_flood_len(k);
			ssize_t ret;

			end = exa_clock_ns() + FI_TMO;
			exa_fill(b, len, k, 0);
			do {
				if (inj_flood_is_send(k))
					ret = fi_tsend(self->ep, b, len, NULL, self->peer,
						       INJ_FLOOD_TAG, (void *)(uintptr_t)(k + 1));
				else if (inj_flood_has_data(k))
					ret = fi_tinjectdata(self->ep, b, len, k, self->peer,
							     INJ_FLOOD_TAG);
				else
					ret = fi_tinject(self->ep, b, len, self->peer,
							 INJ_FLOOD_TAG);
				while (fi_cq_read(self->cq, &e, 1) == 1) {
					ASSERT_EQ(0, inj_flood_send_done(_metadata, seen, &e));
					done++;
				}
			} while (ret == -FI_EAGAIN && exa_clock_ns() < end);
			ASSERT_EQ(0, ret);
			if (inj_flood_is_send(k))
				sends++;	/* its buffer stays until it completes */
			else
				memset(b, 0xee, len);	/* an inject's is ours again */
		}
		while (done < sends) {
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			ASSERT_EQ(0, inj_flood_send_done(_metadata, seen, &e));
			done++;
		}
		/* every send completed once, and nothing else completed */
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
		return;		/* the teardown's barrier waits for the receiver */
	}
	usleep(1000000);	/* the NIC fills up, the rest waits at the sender */
	for (k = 0; k < 1000; k++) {		/* into the posted receives */
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		ASSERT_EQ(0, inj_flood_check(_metadata, self, &e, k));
	}
	/* progress for 0.5 s without receives: what comes now waits unexpected */
	for (end = exa_clock_ns() + SEC / 2; exa_clock_ns() < end;)
		ASSERT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
	ASSERT_EQ(0, inj_flood_post(self, 1000, INJ_FLOOD_N));
	for (k = 1000; k < INJ_FLOOD_N; k++) {
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		ASSERT_EQ(0, inj_flood_check(_metadata, self, &e, k));
	}
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
}

/* Debian's fi_pingpong between the two nodes (over the management network
 * for its own setup), msg and tagged, eager and rendezvous sizes. */
static inline void fi_test_pingpong(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self)
{
	static const char *const runs[] = {
		"-S 64 -I 100 -c -m msg", "-S 4096 -I 50 -c -m tagged", "-S 65536 -I 10 -c",
	};
	char cmd[512];
	unsigned int r;

	if (access("/usr/bin/fi_pingpong", X_OK))
		SKIP_TEST("no fi_pingpong in the image");
	for (r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		unsigned int port = 47800 + r;
		struct in_addr srv = { .s_addr = self->oob.peers[0] };
		int status;

		ASSERT_EQ(0, oob_barrier(&self->oob));
		if (self->rank == 0) {
			/* the server in the background; the client starts once
			 * its out-of-band port listens */
			snprintf(cmd, sizeof(cmd),
				 "rm -f /tmp/fipp_%u.rc; (timeout 120 fi_pingpong -p %s -e rdm -B %u "
				 "%s > /tmp/fipp_%u.txt 2>&1; echo $? > /tmp/fipp_%u.rc) "
				 ">/dev/null 2>&1 &", r, FI_TEST_PROV, port, runs[r], r, r);
			ASSERT_EQ(0, exa_system("%s", cmd));
			EXPECT_EQ(0, exa_system("i=0; until cat /proc/net/tcp /proc/net/tcp6 | "
						"grep -q ':%04X [0:]*:0000 0A'; do i=$((i+1)); "
						"[ $i -gt 600 ] && exit 1; sleep 0.05; done", port));
			ASSERT_EQ(0, oob_barrier(&self->oob));
			snprintf(cmd, sizeof(cmd),
				 "i=0; until [ -s /tmp/fipp_%u.rc ]; do i=$((i+1)); "
				 "[ $i -gt 2600 ] && exit 124; sleep 0.05; done; exit $(cat /tmp/fipp_%u.rc)",
				 r, r);
		} else {
			ASSERT_EQ(0, oob_barrier(&self->oob));
			snprintf(cmd, sizeof(cmd),
				 "timeout 120 fi_pingpong -p %s -e rdm -P %u %s %s "
				 "> /tmp/fipp_%u.txt 2>&1", FI_TEST_PROV, port, runs[r], inet_ntoa(srv), r);
		}
		status = exa_system("%s", cmd);
		if (status) {
			TH_LOG("'%s' exited %d:", cmd, status);
			exa_system("sed 's/^/#   /' /tmp/fipp_%u.txt", r);
		}
		EXPECT_EQ(0, status);
		if (self->rank == 1) {
			EXPECT_EQ(0, exa_system("grep -q 'usec/xfer' /tmp/fipp_%u.txt", r));
			exa_system("sed 's/^/# /' /tmp/fipp_%u.txt", r);
		}
	}
}

/* Above 1 MiB up to 16 MiB (rendezvous, several RDMA blocks and pages,
 * odd lengths), both ways, every byte checked, nothing written past the
 * announced length.  A few sizes only: TCG moves a few hundred MB/s. */
static inline void fi_test_tagged_big(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self)
{
	static const size_t sizes[] = { (1u << 20) + 1, (3u << 20) + 4097, 8u << 20,
					 (16u << 20) - 3, 16u << 20 };
	const size_t cap = 16u << 20;
	struct fi_cq_tagged_entry e;
	uint8_t *buf = malloc(cap + 64);
	unsigned int k;
	int sender;

	ASSERT_NE(NULL, buf);
	fi_open_all(_metadata, self, FI_AV_TABLE);
	for (sender = 0; sender < 2; sender++) {
		for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t len = sizes[k];
			uint64_t tag = 0x16000 + k * 2 + (uint64_t)sender;

			if (self->rank == sender) {
				fill(buf, len, tag);
				ASSERT_EQ(0, fi_tsend(self->ep, buf, len, NULL, self->peer, tag, buf));
				ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
				EXPECT_EQ(buf, e.op_context);
				EXPECT_EQ(FI_SEND | FI_TAGGED, e.flags & (FI_SEND | FI_TAGGED));
			} else {
				memset(buf, 0xee, cap + 64);
				ASSERT_EQ(0, fi_trecv(self->ep, buf, cap, NULL, FI_ADDR_UNSPEC, tag, 0,
						      buf));
				ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
				EXPECT_EQ(FI_RECV | FI_TAGGED, e.flags & (FI_RECV | FI_TAGGED));
				EXPECT_EQ(tag, e.tag);
				ASSERT_EQ(len, e.len);
				ASSERT_EQ(0, check_any(buf, len, tag));
				if (len < cap)
					ASSERT_EQ(0xee, buf[len]);
				ASSERT_EQ(0xee, buf[cap]);
			}
		}
	}
	free(buf);
}

/*
 * Discovery: fi_getinfo(hints) lists FI_TEST_PROV with RDM endpoints that
 * have caps; hints it cannot meet get -FI_ENODATA (an FI_EP_MSG endpoint,
 * refused_caps, FI_PROGRESS_AUTO); Debian's fi_info (package
 * libfabric-bin) lists it.  Frees hints; returns the fi_getinfo answer for
 * more checks (the caller frees it).
 */
static inline struct fi_info *fi_test_discovery(struct __test_metadata *_metadata,
						struct fi_info *hints, uint64_t caps,
						uint64_t refused_caps)
{
	struct fi_info *info = NULL, *none = NULL, *i;
	char line[512];
	FILE *p;
	int found = 0, rdm = 0;

	hints->fabric_attr->prov_name = strdup(FI_TEST_PROV);
	EXPECT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	for (i = info; i; i = i->next) {
		EXPECT_STREQ(FI_TEST_PROV, i->fabric_attr->prov_name);
		EXPECT_EQ(FI_EP_RDM, i->ep_attr->type);
		EXPECT_EQ(caps, i->caps & caps);
		found++;
	}
	EXPECT_LT(0, found);
	hints->ep_attr->type = FI_EP_MSG;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &none));
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = refused_caps;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &none));
	hints->caps = FI_TAGGED;
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &none));
	fi_freeinfo(hints);

	p = popen("fi_info -p " FI_TEST_PROV " -v 2>&1", "r");
	if (!p)
		return info;
	found = 0;
	while (fgets(line, sizeof(line), p)) {
		if (strstr(line, "prov_name: " FI_TEST_PROV))
			found = 1;
		if (strstr(line, "type: FI_EP_RDM"))
			rdm = 1;
	}
	EXPECT_EQ(0, pclose(p));
	EXPECT_EQ(1, found);
	EXPECT_EQ(1, rdm);
	return info;
}

/*
 * Progress is manual: a rendezvous send completes when the receiver's FIN
 * arrives, and the receiver sends FINs only while it calls the provider.
 * So after a round of sends from rank 0 (all complete) to rank 1, rank 0
 * says so over the fabric (an empty message with tag) and rank 1 keeps
 * polling until it has it.
 */
static inline void sends_done(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
			      uint64_t tag)
{
	struct fi_cq_tagged_entry e;

	if (self->rank == 0) {
		ASSERT_EQ(0, fi_tsend(self->ep, NULL, 0, NULL, self->peer, tag, NULL));
	} else {
		ASSERT_EQ(0, fi_trecv(self->ep, NULL, 0, NULL, self->peer, tag, 0, NULL));
	}
	ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
}

/*
 * FI_MULTI_RECV: rank 1 posts three 4 KiB buffers, each taking many
 * untagged messages, eager and rendezvous ones, the first ones sent before
 * any buffer was posted.  Every message lands once, whole, in a buffer;
 * the messages of a buffer fill it from its start without gaps in send
 * order (their completions need not come in that order: a rendezvous
 * piece completes when its read is done), and a buffer takes messages
 * only after the one before it was released; each buffer ends with
 * exactly one completion flagged FI_MULTI_RECV (its last message, an empty
 * one when the next message did not fit, or the cancel of a buffer still
 * posted), and nothing refers to it afterwards.
 */
#define MR_BUFS 3
#define MR_BUF_LEN 4096
#define MR_MSGS 40
#define MR_EARLY 10		/* sent before the buffers are posted */
#define XFI_DEFAULT_MIN_MULTI_RECV 64	/* the provider's FI_OPT_MIN_MULTI_RECV */

static inline size_t mr_len(unsigned int i)
{
	static const size_t lens[] = { 0, 8, 40, 100, EAGER_MAX, 300, 1000, 57, 200, 1 };

	return lens[i % (sizeof(lens) / sizeof(lens[0]))];
}

/* One round with FI_OPT_MIN_MULTI_RECV min (prev: its value before). */
static inline void multi_recv_round(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
			     size_t prev, size_t min)
{
	static uint8_t bufs[MR_BUFS][MR_BUF_LEN + 64];
	struct fi_context ctx[MR_BUFS];
	struct fi_cq_tagged_entry e;
	size_t off[MR_MSGS], total = 0, opt, optlen;
	unsigned int i;

	for (i = 0; i < MR_MSGS; i++) {
		off[i] = total;
		total += mr_len(i);
	}
	ASSERT_GT(MR_BUFS * (MR_BUF_LEN - 1000 - min), total);	/* room even with waste */
	ASSERT_LT(MR_BUF_LEN, total);			/* more than one buffer fills */
	if (self->rank == 0) {
		unsigned int ncomp = 0;

		for (i = 0; i < MR_MSGS; i++) {
			fill(self->sbuf + off[i], mr_len(i), i);
			if (i == MR_EARLY) {
				/* progress until the early ones left, then the rest
				 * once the buffers are posted */
				int64_t until = exa_clock_ns() + SEC / 4;

				while (exa_clock_ns() < until)
					ncomp += fi_cq_read(self->cq, &e, 1) == 1;
				OOB_SYNC(&self->oob);
			}
			ASSERT_EQ(0, fi_senddata(self->ep, self->sbuf + off[i], mr_len(i), NULL, i,
						 self->peer, NULL));
		}
		for (; ncomp < MR_MSGS; ncomp++)
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	} else {
		struct iovec iov[2] = { { bufs[0], 64 }, { bufs[1], 64 } };
		struct fi_msg m = { .msg_iov = iov, .iov_count = 2, .addr = FI_ADDR_UNSPEC };
		struct fi_msg_tagged tm = { .msg_iov = iov, .iov_count = 1,
					    .addr = FI_ADDR_UNSPEC };
		size_t used[MR_BUFS] = { 0 }, pos[MR_BUFS] = { 0 }, at[MR_MSGS];
		unsigned char seen[MR_MSGS] = { 0 }, released[MR_BUFS] = { 0 }, in[MR_MSGS];
		const char *how[MR_BUFS];	/* what released each buffer */
		unsigned int done = 0, b, open_bufs = MR_BUFS;
		int64_t end = exa_clock_ns() + SEC / 2;

		optlen = sizeof(opt);
		ASSERT_EQ(0, fi_getopt(&self->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
				       &opt, &optlen));
		EXPECT_EQ(prev, opt);
		opt = min;
		ASSERT_EQ(0, fi_setopt(&self->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
				       &opt, sizeof(opt)));
		opt = 0;
		ASSERT_EQ(0, fi_getopt(&self->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
				       &opt, &optlen));
		EXPECT_EQ(min, opt);
		/* one buffer, untagged receives only */
		EXPECT_EQ(-FI_EINVAL, fi_recvmsg(self->ep, &m, FI_MULTI_RECV));
		EXPECT_EQ(-FI_EBADFLAGS, fi_trecvmsg(self->ep, &tm, FI_MULTI_RECV));
		/* the early messages arrive unexpected (their RTS for rendezvous) */
		while (exa_clock_ns() < end)
			EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
		memset(bufs, 0xee, sizeof(bufs));
		for (b = 0; b < MR_BUFS; b++) {
			iov[0].iov_base = bufs[b];
			iov[0].iov_len = MR_BUF_LEN;
			m.iov_count = 1;
			m.context = &ctx[b];
			ASSERT_EQ(0, fi_recvmsg(self->ep, &m, FI_MULTI_RECV));
		}
		OOB_SYNC(&self->oob);
		end = exa_clock_ns() + 10 * FI_TMO;
		while (done < MR_MSGS || open_bufs) {
			struct fi_cq_err_entry ee = { 0 };
			int ret;

			if (done == MR_MSGS) {	/* the buffers still posted: cancel them */
				for (b = 0; b < MR_BUFS; b++)
					if (!released[b])
						fi_cancel(&self->ep->fid, &ctx[b]);
			}
			ret = wait_comp(self->cq, &e, &ee);
			if (ret == -FI_ECANCELED) {
				b = (unsigned int)((struct fi_context *)ee.op_context - ctx);
				ASSERT_GT(MR_BUFS, b);
				EXPECT_EQ(FI_RECV | FI_MSG | FI_MULTI_RECV, ee.flags);
				ASSERT_EQ(0, released[b]);
				released[b] = 1;
				how[b] = "cancel";
				open_bufs--;
				continue;
			}
			ASSERT_EQ(0, ret);
			b = (unsigned int)((struct fi_context *)e.op_context - ctx);
			ASSERT_GT(MR_BUFS, b);
			ASSERT_EQ(0, released[b]);	/* nothing after the release */
			ASSERT_LE((uint8_t *)bufs[b], (uint8_t *)e.buf);
			ASSERT_GE((uint8_t *)bufs[b] + MR_BUF_LEN, (uint8_t *)e.buf + e.len);
			if (e.flags & FI_REMOTE_CQ_DATA) {
				i = (unsigned int)e.data;
				ASSERT_GT(MR_MSGS, i);
				if (seen[i])	/* which path delivered it twice */
					TH_LOG("message %u again: buffer %u at %zu, %zu bytes, flags %#llx; first buffer %u at %zu",
					       i, b, (size_t)((uint8_t *)e.buf - bufs[b]), e.len,
					       (unsigned long long)e.flags, in[i], at[i]);
				ASSERT_EQ(0, seen[i]);
				seen[i] = 1;
				done++;
				EXPECT_EQ(FI_RECV | FI_MSG, e.flags & (FI_RECV | FI_MSG | FI_TAGGED));
				ASSERT_EQ(mr_len(i), e.len);
				ASSERT_EQ(0, check(e.buf, e.len, i));
				in[i] = (unsigned char)b;
				at[i] = (size_t)((uint8_t *)e.buf - bufs[b]);
				used[b] += e.len;
			} else {
				/* the next message did not fit in what was left,
				 * and every message in the buffer had completed */
				EXPECT_EQ(0, e.len);
				EXPECT_NE(0, e.flags & FI_MULTI_RECV);
				EXPECT_EQ(used[b], (size_t)((uint8_t *)e.buf - bufs[b]));
			}
			if (e.flags & FI_MULTI_RECV) {
				released[b] = 1;
				how[b] = e.len ? "its last message" : "an empty completion";
				open_bufs--;
				/* released only when it was full enough */
				EXPECT_GT(1000, MR_BUF_LEN - used[b]);
			}
			ASSERT_GT(end, exa_clock_ns());
		}
		/* in send order: each buffer filled from its start, no gaps */
		for (i = 0, b = 0; i < MR_MSGS; i++) {
			ASSERT_LE(b, in[i]);	/* the next buffer after the previous one */
			b = in[i];
			ASSERT_EQ(pos[b], at[i]);
			pos[b] += mr_len(i);
		}
		for (b = 0; b < MR_BUFS; b++)
			TH_LOG("min %zu: buffer %u: %zu bytes, released by %s", min, b, used[b],
			       how[b]);
		EXPECT_LT(0, used[1]);		/* the second buffer took messages */
		EXPECT_EQ(0xee, bufs[0][MR_BUF_LEN]);	/* nothing past a buffer */
	}
	sends_done(_metadata, self, 1);
	/*
	 * The next round's first messages must not find this round's buffers
	 * still posted: an eager send completes once it is in the receiver's
	 * mailbox, so the sender would otherwise start the next round while
	 * this receiver still works through its last completions (those
	 * messages then land here, correctly, and look like one delivered
	 * twice).  After sends_done(): the receiver's FINs need its progress.
	 */
	OOB_SYNC(&self->oob);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
}

/* FI_MULTI_RECV buffers (multi_recv_round), two rounds. */
static inline void fi_test_multi_recv(struct __test_metadata *_metadata,
				      FIXTURE_DATA(fi) *self)
{
	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_MSG | FI_TAGGED | FI_MULTI_RECV);
	ASSERT_NE(0, self->info->caps & FI_MULTI_RECV);
	ASSERT_NE(0, self->info->rx_attr->caps & FI_MULTI_RECV);
	/* buffers released for want of FI_OPT_MIN_MULTI_RECV bytes ... */
	multi_recv_round(_metadata, self, XFI_DEFAULT_MIN_MULTI_RECV, 256);
	/* ... and because the next message did not fit in what was left */
	multi_recv_round(_metadata, self, 256, 16);
}

/*
 * Two endpoints per process on one domain (GASNet-EX uses one for requests
 * and one for replies): each rank sends from each of its endpoints to the
 * other endpoint of its peer, eager and rendezvous (both endpoints share
 * the domain's RDMA page); each message arrives on the endpoint it was
 * sent to, from the address of the endpoint that sent it (FI_SOURCE).
 */
static inline void fi_test_two_endpoints(struct __test_metadata *_metadata,
					 FIXTURE_DATA(fi) *self)
{
	static const size_t lens[2] = { 8, 4096 };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	uint8_t mine[2][64], all[2][2][64], rbufs[2][2][4096];
	struct fid_ep *eps[2] = { NULL, NULL };
	struct fid_cq *cqs[2] = { NULL, NULL };
	fi_addr_t peer_eps[2];
	unsigned int k, s, got[2] = { 0, 0 }, sent = 0;
	size_t alen = 64;
	int64_t end;

	fi_open_local(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_SOURCE, mine[0]);
	eps[0] = self->ep;
	cqs[0] = self->cq;
	ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cqs[1], NULL));
	fi_open_extra_ep(_metadata, self, cqs[1], &eps[1]);
	memset(mine[1], 0, 64);
	ASSERT_EQ(0, fi_getname(&eps[1]->fid, mine[1], &alen));
	ASSERT_NE(0, memcmp(mine[0], mine[1], 8));	/* two addresses */
	ASSERT_EQ(0, oob_allgather(&self->oob, mine, all, sizeof(mine)));
	ASSERT_EQ(1, fi_av_insert(self->av, all[1 - self->rank][0], 1, &peer_eps[0], 0, NULL));
	ASSERT_EQ(1, fi_av_insert(self->av, all[1 - self->rank][1], 1, &peer_eps[1], 0, NULL));
	self->peer = peer_eps[0];
	self->peer_known = 1;
	/* endpoint k receives from the peer's endpoint 1 - k, both sizes */
	for (k = 0; k < 2; k++)
		for (s = 0; s < 2; s++)
			ASSERT_EQ(0, fi_trecv(eps[k], rbufs[k][s], lens[s], NULL, FI_ADDR_UNSPEC,
					      0x7000 + 16 * k + s, 0, &rbufs[k][s]));
	OOB_SYNC(&self->oob);
	for (k = 0; k < 2; k++)
		for (s = 0; s < 2; s++) {
			fill(self->sbuf + 8192 * (2 * k + s), lens[s], 0x7000 + 16 * (1 - k) + s);
			ASSERT_EQ(0, fi_tsend(eps[k], self->sbuf + 8192 * (2 * k + s), lens[s], NULL,
					      peer_eps[1 - k], 0x7000 + 16 * (1 - k) + s, NULL));
		}
	end = exa_clock_ns() + FI_TMO;
	while (sent < 4 || got[0] < 2 || got[1] < 2) {
		for (k = 0; k < 2; k++) {
			struct fi_cq_tagged_entry e;
			fi_addr_t src = FI_ADDR_NOTAVAIL;
			ssize_t n = fi_cq_readfrom(cqs[k], &e, 1, &src);

			if (n == -FI_EAGAIN)
				continue;
			ASSERT_EQ(1, n);
			if (!(e.flags & FI_RECV)) {
				sent++;
				continue;
			}
			s = e.tag & 1;
			EXPECT_EQ(0x7000 + 16 * k + s, e.tag);
			EXPECT_EQ(&rbufs[k][s], e.op_context);
			EXPECT_EQ(peer_eps[1 - k], src);
			ASSERT_EQ(lens[s], e.len);
			ASSERT_EQ(0, check(rbufs[k][s], lens[s], e.tag));
			got[k]++;
		}
		ASSERT_GT(end, exa_clock_ns());
	}
	fi_progress_barrier(self);	/* both endpoints' FINs are out */
	EXPECT_EQ(0, fi_close(&eps[1]->fid));
	EXPECT_EQ(0, fi_close(&cqs[1]->fid));
}

/*
 * FI_DELIVERY_COMPLETE for eager messages: rank 1 stays out of the provider
 * for 2 s while rank 0 sends an 8 B (one packet) and a 200 B (several
 * packets) tagged message with FI_DELIVERY_COMPLETE and an 8 B one without.
 * The plain send completes when the NI has the packet; the other two only
 * once rank 1's provider has taken the messages in (here: as unexpected
 * messages, when it polls again), and never before rank 1 wakes up.  Rank 1
 * then receives all three, byte for byte.
 */
/*
 * Counters (fi_cntr) on an endpoint whose CQ takes only what asks for a
 * completion (FI_SELECTIVE_COMPLETION): sends, injects and receives are
 * counted without CQ entries, RMA writes and reads on a counter of their
 * own, a truncated receive and a write with a bad key on the error counts;
 * fi_sendmsg(FI_INJECT | FI_COMPLETION) still writes its CQ entry.  Also
 * what is refused: FI_REMOTE_* counters (no FI_RMA_EVENT), a second
 * counter for one kind, a wait on an FI_WAIT_NONE counter, closing a bound
 * counter.  Eager sizes only: they complete without the peer's progress.
 */
#define CNT_MSGS 24
#define CNT_LEN 200
static inline void fi_test_counters(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cntr_attr none = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
	struct fid_cntr *txc, *rxc, *rmac, *nowait;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	uint8_t addr[64], all[2][64];
	struct fi_window win[2];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fid_mr *mr;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
	size_t alen = sizeof(addr);
	int i;

	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	ASSERT_EQ(0, fi_cntr_open(self->domain, &attr, &txc, NULL));
	ASSERT_EQ(0, fi_cntr_open(self->domain, &attr, &rxc, NULL));
	ASSERT_EQ(0, fi_cntr_open(self->domain, &attr, &rmac, NULL));
	ASSERT_EQ(0, fi_cntr_open(self->domain, &none, &nowait, NULL));
	ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cq, NULL));
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION));
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_ep_bind(ep, &rxc->fid, FI_RECV | FI_REMOTE_WRITE));
	ASSERT_EQ(0, fi_ep_bind(ep, &txc->fid, FI_SEND));
	ASSERT_EQ(0, fi_ep_bind(ep, &rxc->fid, FI_RECV));
	ASSERT_EQ(0, fi_ep_bind(ep, &rmac->fid, FI_WRITE | FI_READ));
	EXPECT_EQ(-FI_EINVAL, fi_ep_bind(ep, &nowait->fid, FI_SEND));
	ASSERT_EQ(0, fi_enable(ep));
	EXPECT_EQ(-FI_EBUSY, fi_close(&txc->fid));
	EXPECT_EQ(-FI_EINVAL, fi_cntr_wait(nowait, 1, 0));
	memset(addr, 0, sizeof(addr));
	ASSERT_EQ(0, fi_getname(&ep->fid, addr, &alen));
	ASSERT_EQ(0, oob_allgather(&self->oob, addr, all, sizeof(addr)));
	ASSERT_EQ(1, fi_av_insert(self->av, all[1 - self->rank], 1, &peer, 0, NULL));
	memset(self->rbuf, 0, MAX_SIZE);
	fi_share_window(_metadata, self, self->rbuf, MAX_SIZE, &mr, win);

	/* CNT_MSGS sends and injects, counted, no CQ entries */
	if (self->rank == 1) {
		for (i = 0; i < CNT_MSGS; i++)
			ASSERT_EQ(0, fi_recv(ep, self->rbuf + i * CNT_LEN, CNT_LEN, NULL,
					     FI_ADDR_UNSPEC, NULL));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		for (i = 0; i < CNT_MSGS; i++) {
			fill(self->sbuf + i * CNT_LEN, i % 2 ? CNT_LEN : 16, i);
			if (i % 2) {
				ASSERT_EQ(0, fi_send(ep, self->sbuf + i * CNT_LEN, CNT_LEN, NULL,
						     peer, NULL));
			} else {
				while (fi_inject(ep, self->sbuf + i * CNT_LEN, 16, peer) ==
				       -FI_EAGAIN)
					fi_cntr_read(txc);
			}
		}
		ASSERT_EQ(0, fi_cntr_wait(txc, CNT_MSGS, 30000));
		EXPECT_EQ(CNT_MSGS, fi_cntr_read(txc));
		EXPECT_EQ(0, fi_cntr_readerr(txc));
	} else {
		ASSERT_EQ(0, fi_cntr_wait(rxc, CNT_MSGS, 30000));
		EXPECT_EQ(CNT_MSGS, fi_cntr_read(rxc));
		EXPECT_EQ(0, fi_cntr_readerr(rxc));
		for (i = 0; i < CNT_MSGS; i++)
			ASSERT_EQ(0, check(self->rbuf + i * CNT_LEN, i % 2 ? CNT_LEN : 16, i));
	}
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, &e, 1));
	OOB_SYNC(&self->oob);

	/* fi_sendmsg with FI_INJECT | FI_COMPLETION completes in the CQ;
	 * then a receive too short for the next message counts an error */
	if (self->rank == 1) {
		ASSERT_EQ(0, fi_recv(ep, self->rbuf, CNT_LEN, NULL, FI_ADDR_UNSPEC, NULL));
		ASSERT_EQ(0, fi_recv(ep, self->rbuf + CNT_LEN, 16, NULL, FI_ADDR_UNSPEC, NULL));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		struct iovec iov = { .iov_base = self->sbuf, .iov_len = 16 };
		struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = peer,
				      .context = &iov };

		ASSERT_EQ(0, fi_sendmsg(ep, &msg, FI_INJECT | FI_COMPLETION));
		ASSERT_EQ(0, wait_comp(cq, &e, NULL));
		EXPECT_EQ(&iov, e.op_context);
		EXPECT_EQ(FI_SEND | FI_MSG, e.flags);
		ASSERT_EQ(0, fi_send(ep, self->sbuf, 100, NULL, peer, NULL));
		ASSERT_EQ(0, fi_cntr_wait(txc, CNT_MSGS + 2, 30000));
	} else {
		ASSERT_EQ(0, fi_cntr_wait(rxc, CNT_MSGS + 1, 30000));
		EXPECT_EQ(-FI_ETRUNC, wait_comp(cq, &e, &ee));
		EXPECT_EQ(84, ee.olen);
		EXPECT_EQ(1, fi_cntr_readerr(rxc));
		EXPECT_EQ(CNT_MSGS + 1, fi_cntr_read(rxc));
	}
	OOB_SYNC(&self->oob);

	/* RMA on its own counter: 3 writes and 2 reads, then a bad key */
	if (self->rank == 0) {
		fill(self->sbuf, 4096, 0x33);
		for (i = 0; i < 3; i++)
			ASSERT_EQ(0, fi_write(ep, self->sbuf, 4096, NULL, peer,
					      win[1].addr + i * 4096, win[1].key, NULL));
		for (i = 0; i < 2; i++)
			ASSERT_EQ(0, fi_read(ep, self->rbuf + (64 + i) * 4096, 4096,
					     fi_mr_desc(mr), peer, win[1].addr, win[1].key, NULL));
		ASSERT_EQ(0, fi_cntr_wait(rmac, 5, 30000));
		EXPECT_EQ(0, fi_cntr_readerr(rmac));
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, &e, 1));
		ASSERT_EQ(0, check(self->rbuf + 65 * 4096, 4096, 0x33));
		ASSERT_EQ(0, fi_write(ep, self->sbuf, 64, NULL, peer,
				      win[1].addr + MAX_SIZE + (64u << 20), win[1].key, NULL));
		EXPECT_GT(0, wait_comp(cq, &e, &ee));
		EXPECT_EQ(1, fi_cntr_readerr(rmac));
		EXPECT_EQ(5, fi_cntr_read(rmac));
		/* the application's own updates */
		EXPECT_EQ(0, fi_cntr_set(txc, 0));
		EXPECT_EQ(0, fi_cntr_add(txc, 5));
		EXPECT_EQ(5, fi_cntr_read(txc));
		EXPECT_EQ(-FI_ETIMEDOUT, fi_cntr_wait(txc, 6, 10));
		EXPECT_EQ(0, fi_cntr_seterr(txc, 2));
		EXPECT_EQ(0, fi_cntr_adderr(txc, 1));
		EXPECT_EQ(3, fi_cntr_readerr(txc));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1)
		ASSERT_EQ(0, check(self->rbuf + 2 * 4096, 4096, 0x33));
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&mr->fid));
	EXPECT_EQ(0, fi_close(&txc->fid));
	EXPECT_EQ(0, fi_close(&rxc->fid));
	EXPECT_EQ(0, fi_close(&rmac->fid));
	EXPECT_EQ(0, fi_close(&nowait->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

#define DC_QUIET_NS (2 * SEC)
static inline void fi_test_delivery_complete(struct __test_metadata *_metadata,
					     FIXTURE_DATA(fi) *self)
{
	static const size_t len[3] = { 8, 200, 8 };
	static const uint64_t tag[3] = { 0xdc01, 0xdc02, 0xdc03 };
	struct fi_cq_tagged_entry e;
	unsigned int i, done = 0;

	fi_open_all(_metadata, self, FI_AV_TABLE);
	if (self->rank == 0) {
		int64_t t0, plain_at = 0, dc_at[2] = { 0, 0 };

		for (i = 0; i < 3; i++)
			fill(self->sbuf + 256 * i, len[i], tag[i]);
		OOB_SYNC(&self->oob);
		t0 = exa_clock_ns();
		for (i = 0; i < 3; i++) {
			struct iovec iov = { self->sbuf + 256 * i, len[i] };
			struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1,
						   .addr = self->peer, .tag = tag[i],
						   .context = (void *)&tag[i] };

			ASSERT_EQ(0, fi_tsendmsg(self->ep, &m, FI_COMPLETION |
						 (i < 2 ? FI_DELIVERY_COMPLETE : 0)));
		}
		while (done < 3 && exa_clock_ns() < t0 + FI_TMO) {
			if (wait_comp(self->cq, &e, NULL))
				break;
			for (i = 0; i < 3; i++)
				if (e.op_context == (void *)&tag[i])
					break;
			ASSERT_LT(i, 3u);
			if (i == 2)
				plain_at = exa_clock_ns() - t0;
			else
				dc_at[i] = exa_clock_ns() - t0;
			done++;
		}
		ASSERT_EQ(3u, done);
		TH_LOG("completions after %.3f s (plain), %.3f s and %.3f s (delivery complete)",
		       plain_at / 1e9, dc_at[0] / 1e9, dc_at[1] / 1e9);
		EXPECT_LT(plain_at, DC_QUIET_NS);
		EXPECT_GE(dc_at[0], DC_QUIET_NS * 3 / 4);
		EXPECT_GE(dc_at[1], DC_QUIET_NS * 3 / 4);
	} else {
		OOB_SYNC(&self->oob);
		usleep(DC_QUIET_NS / 1000);
		for (i = 0; i < 3; i++)
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf + 256 * i, 256, NULL, self->peer,
					      tag[i], 0, (void *)&tag[i]));
		for (done = 0; done < 3; done++) {
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			for (i = 0; i < 3; i++)
				if (e.op_context == (void *)&tag[i])
					break;
			ASSERT_LT(i, 3u);
			EXPECT_EQ(len[i], e.len);
			EXPECT_EQ(0, check(self->rbuf + 256 * i, len[i], tag[i]));
		}
	}
}

/*
 * Endpoints closed with RDMA still outstanding give their read slots back
 * to the domain: each round opens a second endpoint on the domain, posts
 * EC_READS RMA reads of the peer's window on it and closes it without
 * reading a completion (the provider releases a slot only when a poll sees
 * its read finished), EC_ROUNDS times: more reads than the domain has
 * slots (extoll: 64, exanet: 32 read channels).  Every round must still
 * find slots, and then a fresh endpoint on the same domain must complete a
 * rendezvous message each way (a read slot on the receiver) and an RMA
 * read, byte for byte.
 */
#define EC_ROUNDS 6
#define EC_READS 16
#define EC_LEN 16384
#define EC_MSG 65536		/* rendezvous: above EAGER_MAX */
static inline void fi_test_early_close(struct __test_metadata *_metadata,
				       FIXTURE_DATA(fi) *self)
{
	const size_t cap = 4 * EC_MSG;
	struct fi_window all[2];
	uint8_t *win = malloc(cap), addr3[2][64];
	struct fi_cq_tagged_entry e;
	struct fid_mr *mr = NULL;
	struct fid_ep *ep;
	unsigned int r, k, refused = 0;
	uint64_t mytag = 0x5100 + (uint64_t)self->rank, peertag = 0x5101 - (uint64_t)self->rank;
	fi_addr_t peer3;
	size_t alen = 64;
	int64_t end;

	ASSERT_NE(NULL, win);
	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	ASSERT_EQ(FI_RMA, self->info->caps & FI_RMA);
	/* [0, EC_MSG): read by the peer; then the places reads land in */
	memset(win, 0, cap);
	fill(win, EC_LEN, mytag);
	fi_share_window(_metadata, self, win, cap, &mr, all);
	for (r = 0; r < EC_ROUNDS && !refused; r++) {
		fi_open_extra_ep(_metadata, self, self->cq, &ep);
		for (k = 0; k < EC_READS && !refused; k++) {
			ssize_t ret;

			/* the reads of closed endpoints may still be on the wire:
			 * their slots come back when the engine reports them */
			end = exa_clock_ns() + 10 * SEC;
			do
				ret = fi_read(ep, win + EC_MSG + k * (EC_MSG / EC_READS), EC_LEN / 4,
					      fi_mr_desc(mr), self->peer, all[1 - self->rank].addr,
					      all[1 - self->rank].key, NULL);
			while (ret == -FI_EAGAIN && exa_clock_ns() < end);
			if (ret == -FI_EAGAIN) {
				TH_LOG("round %u, read %u: no RDMA slot left for 10 s", r, k);
				refused = 1;
			} else {
				ASSERT_EQ(0, ret);
			}
		}
		EXPECT_EQ(0, fi_close(&ep->fid));	/* no completion read */
	}
	EXPECT_EQ(0, refused);
	OOB_SYNC(&self->oob);

	/* a fresh endpoint on the same domain, its own CQ */
	{
		struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
					      .wait_obj = FI_WAIT_NONE };
		struct fid_cq *cq3;
		uint8_t *rbuf = win + 2 * EC_MSG, *sbuf = win + 3 * EC_MSG;
		unsigned int sent = 0, got = 0;

		ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cq3, NULL));
		fi_open_extra_ep(_metadata, self, cq3, &ep);
		memset(addr3[0], 0, 64);
		ASSERT_EQ(0, fi_getname(&ep->fid, addr3[0], &alen));
		ASSERT_EQ(0, oob_allgather(&self->oob, addr3[0], addr3, 64));
		ASSERT_EQ(1, fi_av_insert(self->av, addr3[1 - self->rank], 1, &peer3, 0, NULL));
		memset(rbuf, 0xee, EC_MSG);
		ASSERT_EQ(0, fi_trecv(ep, rbuf, EC_MSG, fi_mr_desc(mr), FI_ADDR_UNSPEC, peertag, 0,
				      rbuf));
		OOB_SYNC(&self->oob);
		fill(sbuf, EC_MSG, mytag);
		ASSERT_EQ(0, fi_tsend(ep, sbuf, EC_MSG, fi_mr_desc(mr), peer3, mytag, sbuf));
		for (k = 0; k < 2; k++) {
			int ret = wait_comp(cq3, &e, NULL);

			if (ret)
				TH_LOG("rendezvous: sent %u, received %u: %s", sent, got,
				       fi_strerror(-ret));
			ASSERT_EQ(0, ret);
			if (e.flags & FI_RECV) {
				EXPECT_EQ(rbuf, e.op_context);
				EXPECT_EQ(peertag, e.tag);
				ASSERT_EQ(EC_MSG, e.len);
				ASSERT_EQ(0, check(rbuf, EC_MSG, peertag));
				got++;
			} else {
				EXPECT_EQ(sbuf, e.op_context);
				sent++;
			}
		}
		ASSERT_EQ(1, sent);
		ASSERT_EQ(1, got);
		/* and an RMA read of the peer's window */
		memset(rbuf, 0xee, EC_LEN + 1);
		ASSERT_EQ(0, fi_read(ep, rbuf, EC_LEN, fi_mr_desc(mr), self->peer,
				     all[1 - self->rank].addr, all[1 - self->rank].key, rbuf));
		ASSERT_EQ(0, wait_comp(cq3, &e, NULL));
		EXPECT_EQ(FI_RMA | FI_READ, e.flags);
		ASSERT_EQ(0, check(rbuf, EC_LEN, peertag));
		ASSERT_EQ(0xee, rbuf[EC_LEN]);
		OOB_SYNC(&self->oob);	/* the peer's FIN and reads are done */
		EXPECT_EQ(0, fi_close(&ep->fid));
		EXPECT_EQ(0, fi_close(&cq3->fid));
	}
	/* every read of the closed endpoints is over once the engine says so:
	 * the window goes after the peer is past its last one */
	OOB_SYNC(&self->oob);
	EXPECT_EQ(0, fi_close(&mr->fid));
	free(win);
}

#define CW_LEN (32u << 20)	/* long enough to be in flight at the close */

/*
 * fi_read into memory registered by the application (its own desc), the
 * endpoint closed at once: no byte may land after fi_close() returned.
 */
static inline void fi_test_close_waits_for_reads(struct __test_metadata *_metadata,
						 FIXTURE_DATA(fi) *self)
{
	uint8_t *win = malloc(2 * (size_t)CW_LEN), *dst = win + CW_LEN, *snap = malloc(CW_LEN);
	uint64_t mytag = 0x5200 + (uint64_t)self->rank, peertag = 0x5201 - (uint64_t)self->rank;
	struct fi_window all[2];
	struct fid_mr *mr = NULL;
	struct fid_ep *ep;
	ssize_t ret;
	int64_t end, t0;

	ASSERT_NE(NULL, win);
	ASSERT_NE(NULL, snap);
	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	ASSERT_EQ(FI_RMA, self->info->caps & FI_RMA);
	fill(win, CW_LEN, mytag);		/* what the peer reads */
	memset(dst, 0, CW_LEN);
	fi_share_window(_metadata, self, win, 2 * (size_t)CW_LEN, &mr, all);
	fi_open_extra_ep(_metadata, self, self->cq, &ep);
	end = exa_clock_ns() + 10 * SEC;
	do
		ret = fi_read(ep, dst, CW_LEN, fi_mr_desc(mr), self->peer, all[1 - self->rank].addr,
			      all[1 - self->rank].key, NULL);
	while (ret == -FI_EAGAIN && exa_clock_ns() < end);
	ASSERT_EQ(0, ret);
	t0 = exa_clock_ns();
	EXPECT_EQ(0, fi_close(&ep->fid));	/* no completion read */
	t0 = exa_clock_ns() - t0;
	memcpy(snap, dst, CW_LEN);		/* as it is right after the close */
	usleep(300 * 1000);
	if (memcmp(snap, dst, CW_LEN))
		TH_LOG("the read went on landing after fi_close() (which took %lld us)",
		       (long long)t0 / 1000);
	EXPECT_EQ(0, memcmp(snap, dst, CW_LEN));
	/* the read ran to its end: the peer's whole pattern is there */
	EXPECT_EQ(0, check_any(dst, CW_LEN, peertag));
	OOB_SYNC(&self->oob);	/* the peer's read of our window is over too */
	EXPECT_EQ(0, fi_close(&mr->fid));
	free(snap);
	free(win);
}

#endif
