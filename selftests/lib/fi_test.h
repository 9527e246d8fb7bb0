/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the in-VM tests of the libfabric providers share (exanet:
 * selftests/exanet/exanet_fi.c and the exanet_fi-*.h it includes,
 * extoll: selftests/extoll/extoll_fi.c):
 * the two-rank fixture "fi" (fabric, domain, AV, CQ, an enabled endpoint
 * and the peer's address, exchanged out of band), completions, the data
 * pattern with every byte checked, and the bodies of the tagged sizes and
 * discovery cases, which each program wraps in a case of its own (the
 * cases both programs run as they are: fi_cases.h).  Define FI_TEST_PROV
 * (provider name) and FI_TEST_DEVICE (a device file whose absence skips
 * the tests) before including it.
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

#endif
