// SPDX-License-Identifier: MIT
/*
 * The libfabric provider "exanet" (lib/libexanet-fi) on two nodes
 * (tests.list: nodes = 2): discovery through Debian's libfabric,
 * tagged and untagged exchanges with every byte checked, out-of-order tag
 * matching, unexpected messages, a flood of 10000 unexpected messages,
 * truncation, FI_PEEK/FI_CLAIM, cancel, and Debian's fi_pingpong.
 *
 * The node image installs the provider where libfabric finds it without
 * FI_PROVIDER_PATH (/usr/lib/x86_64-linux-gnu/libfabric/).
 */
#include <arpa/inet.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "exa_test.h"

#define FI_TMO (60 * SEC)
#define MAX_SIZE (1u << 20)
#define EAGER_MAX 1024		/* default FI_EXANET_RNDV_THRESHOLD */

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

static struct fi_info *exanet_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_TAGGED | FI_MSG;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup("exanet");
	h->domain_attr->av_type = FI_AV_TABLE;
	return h;
}

static void fi_open_caps(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
			 enum fi_av_type av_type, uint64_t caps)
{
	struct fi_info *hints = exanet_hints();
	struct fi_av_attr av_attr = { .type = av_type };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	uint8_t addr[64], all[2][64];
	size_t alen = sizeof(addr);
	int ret;

	ASSERT_NE(NULL, hints);
	hints->domain_attr->av_type = av_type;
	hints->caps = caps;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &self->info);
	fi_freeinfo(hints);
	if (ret)
		TH_LOG("fi_getinfo: %s", fi_strerror(-ret));
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, fi_fabric(self->info->fabric_attr, &self->fabric, NULL));
	ASSERT_EQ(0, fi_domain(self->fabric, self->info, &self->domain, NULL));
	ASSERT_EQ(0, fi_av_open(self->domain, &av_attr, &self->av, NULL));
	ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &self->cq, NULL));
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &self->ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(self->ep, &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(self->ep, &self->cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(self->ep));
	memset(addr, 0, sizeof(addr));
	ASSERT_EQ(0, fi_getname(&self->ep->fid, addr, &alen));
	ASSERT_EQ(8, alen);
	ASSERT_EQ(0, oob_allgather(&self->oob, addr, all, sizeof(addr)));
	ASSERT_EQ(1, fi_av_insert(self->av, all[1 - self->rank], 1, &self->peer, 0, NULL));
	ASSERT_NE(FI_ADDR_NOTAVAIL, self->peer);
	self->peer_known = 1;
}

static void fi_open_all(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
			enum fi_av_type av_type)
{
	fi_open_caps(_metadata, self, av_type, FI_TAGGED | FI_MSG);
}

FIXTURE_SETUP(fi)
{
	OOB_UP(&self->oob);
	if (self->oob.nnodes != 2)
		SKIP("needs exactly 2 ranks, have %d", self->oob.nnodes);
	self->rank = self->oob.rank;
	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP("no " EXANET_DEFAULT_DEVICE);
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
static void fi_progress_barrier(FIXTURE_DATA(fi) *self)
{
	int64_t end = exanet_now_ns() + FI_TMO;
	struct fi_cq_tagged_entry e;
	uint64_t token = 0;
	int sent = 0, received = 0;

	if (fi_trecv(self->ep, &token, sizeof(token), NULL, self->peer, BARRIER_TAG, 0, &token))
		return;
	if (fi_tsend(self->ep, &self->rank, sizeof(self->rank), NULL, self->peer, BARRIER_TAG,
		     &self->rank))
		return;
	while ((!sent || !received) && exanet_now_ns() < end) {
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
	if (self->ep)
		fi_close(&self->ep->fid);
	if (self->cq)
		fi_close(&self->cq->fid);
	if (self->av)
		fi_close(&self->av->fid);
	if (self->domain)
		fi_close(&self->domain->fid);
	if (self->fabric)
		fi_close(&self->fabric->fid);
	if (self->info)
		fi_freeinfo(self->info);
	free(self->sbuf);
	free(self->rbuf);
	oob_fini(&self->oob);
}

/* Wait for one completion; an error completion is logged and returned as
 * -err with *err_entry filled (may be NULL). */
static int wait_comp(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		     struct fi_cq_err_entry *err_entry)
{
	int64_t end = exanet_now_ns() + FI_TMO;
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
		if (exanet_now_ns() > end)
			return -FI_ETIMEDOUT;
	}
}

/* Pattern that depends on (size, tag) and each byte position. */
static void fill(uint8_t *buf, size_t len, uint64_t tag)
{
	exa_fill(buf, len, (uint32_t)tag, (uint32_t)len);
}

/* Byte-by-byte comparison with the pattern; logs the first difference. */
static int check(const uint8_t *buf, size_t len, uint64_t tag)
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

TEST(fi_info_lists_exanet_rdm_msg_tagged)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL, *i;
	char line[512];
	FILE *p;
	int found = 0, rdm = 0;

	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP("no " EXANET_DEFAULT_DEVICE);
	ASSERT_NE(NULL, hints);
	hints->fabric_attr->prov_name = strdup("exanet");
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	for (i = info; i; i = i->next) {
		EXPECT_STREQ("exanet", i->fabric_attr->prov_name);
		EXPECT_EQ(FI_EP_RDM, i->ep_attr->type);
		EXPECT_EQ(FI_TAGGED | FI_MSG, i->caps & (FI_TAGGED | FI_MSG));
		found++;
	}
	EXPECT_LT(0, found);
	fi_freeinfo(info);
	/* what the provider does not offer is refused */
	hints->ep_attr->type = FI_EP_MSG;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_ATOMIC;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	hints->caps = FI_TAGGED;
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);

	/* and the command line tool (package libfabric-bin) lists it */
	p = popen("fi_info -p exanet -v 2>&1", "r");
	ASSERT_NE(NULL, p);
	found = 0;
	while (fgets(line, sizeof(line), p)) {
		if (strstr(line, "prov_name: exanet"))
			found = 1;
		if (strstr(line, "type: FI_EP_RDM"))
			rdm = 1;
	}
	EXPECT_EQ(0, pclose(p));
	EXPECT_EQ(1, found);
	EXPECT_EQ(1, rdm);
}

/* Sizes 0 .. 1 MiB: powers of two, their neighbours and the packet edges. */
static size_t test_sizes(size_t *out)
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

static void sizes_one_way(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self, int sender)
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

TEST_F_TIMEOUT(fi, tagged_sizes_0_to_1MiB_both_ways_av_table, 600)
{
	fi_open_all(_metadata, self, FI_AV_TABLE);
	sizes_one_way(_metadata, self, 0);
	OOB_SYNC(&self->oob);
	sizes_one_way(_metadata, self, 1);
}

/* Untagged messages with remote CQ data, over an FI_AV_MAP vector. */
TEST_F_TIMEOUT(fi, msg_with_cq_data_av_map, 300)
{
	struct fi_cq_tagged_entry e;
	size_t len;

	fi_open_all(_metadata, self, FI_AV_MAP);
	for (len = 0; len <= 3000; len += 150) {
		uint64_t data = 0xabcd0000 + len;

		if (self->rank == 0) {
			fill(self->sbuf, len, 7);
			ASSERT_EQ(0, fi_senddata(self->ep, self->sbuf, len, NULL, data, self->peer,
						 NULL));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		} else {
			ASSERT_EQ(0, fi_recv(self->ep, self->rbuf, 4096, NULL, FI_ADDR_UNSPEC, NULL));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			EXPECT_EQ(FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, e.flags);
			EXPECT_EQ(data, e.data);
			ASSERT_EQ(len, e.len);
			ASSERT_EQ(0, check(self->rbuf, len, 7));
		}
	}
}

/* Receives posted in the reverse order of the sends, plus a wildcard that
 * must take only what the specific ones do not match. */
TEST_F_TIMEOUT(fi, out_of_order_tag_matching, 300)
{
	const int n = 16;
	struct fi_cq_tagged_entry e;
	int i, got[17] = { 0 };

	fi_open_all(_metadata, self, FI_AV_TABLE);
	if (self->rank == 1) {
		for (i = n - 1; i >= 0; i--)
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf + i * 4096, 4096, NULL, self->peer,
					      0x500 + i, 0, (void *)(intptr_t)(i + 1)));
		/* wildcard over the low 8 bits: gets tag 0x7ff only */
		ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf + n * 4096, 4096, NULL, FI_ADDR_UNSPEC,
				      0x700, 0xff, (void *)(intptr_t)(n + 1)));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		for (i = 0; i < n; i++) {
			fill(self->sbuf + i * 4096, 100 + i * 200, 0x500 + i);
			ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf + i * 4096, 100 + i * 200, NULL,
					      self->peer, 0x500 + i, NULL));
		}
		fill(self->sbuf + n * 4096, 77, 0x7ff);
		ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf + n * 4096, 77, NULL, self->peer, 0x7ff,
				      NULL));
		for (i = 0; i <= n; i++)
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	} else {
		for (i = 0; i <= n; i++) {
			int idx;

			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			idx = (int)(intptr_t)e.op_context - 1;
			ASSERT_LE(0, idx);
			ASSERT_GE(n, idx);
			got[idx]++;
			if (idx < n) {
				EXPECT_EQ((uint64_t)(0x500 + idx), e.tag);
				ASSERT_EQ((size_t)(100 + idx * 200), e.len);
				ASSERT_EQ(0, check(self->rbuf + idx * 4096, e.len, 0x500 + idx));
			} else {
				EXPECT_EQ(0x7ffu, e.tag);
				ASSERT_EQ(77, e.len);
				ASSERT_EQ(0, check(self->rbuf + idx * 4096, 77, 0x7ff));
			}
		}
		for (i = 0; i <= n; i++)
			EXPECT_EQ(1, got[i]);
	}
}

/* Messages that arrive before any receive is posted (one of 200 KiB) are
 * buffered and handed over intact, in send order for equal tags. */
TEST_F_TIMEOUT(fi, unexpected_before_receive_posted, 300)
{
	static const size_t lens[] = { 0, 1, 32, 33, 500, 4096, 200000, 8, 8, 8 };
	const int n = sizeof(lens) / sizeof(lens[0]);
	struct fi_cq_tagged_entry e;
	size_t off = 0;
	int i;

	fi_open_all(_metadata, self, FI_AV_TABLE);
	if (self->rank == 0) {
		for (i = 0; i < n; i++) {
			fill(self->sbuf + off, lens[i], i < 7 ? (uint64_t)i : (uint64_t)(100 + i));
			ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf + off, lens[i], NULL, self->peer,
					      i < 7 ? (uint64_t)i : (uint64_t)99, NULL));
			off += lens[i];
		}
		/* the eager ones complete when delivered (in the peer's mailbox or
		 * its unexpected queue); the 4 KiB and 200 KiB ones go by
		 * rendezvous and complete only once the receiver has read them */
		for (i = 0; i < n; i++)
			if (lens[i] <= EAGER_MAX)
				ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	} else {
		/* let them come in while nothing is posted; progress without receives */
		int64_t end = exanet_now_ns() + 2 * SEC;

		while (exanet_now_ns() < end)
			EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		/* reverse order for the distinct tags, then the three tag-99 ones */
		for (i = 6; i >= 0; i--) {
			memset(self->rbuf, 0, lens[i] + 1);
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, MAX_SIZE, NULL, FI_ADDR_UNSPEC,
					      (uint64_t)i, 0, NULL));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			ASSERT_EQ(lens[i], e.len);
			ASSERT_EQ(0, check(self->rbuf, lens[i], (uint64_t)i));
		}
		for (i = 7; i < n; i++) {
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, 64, NULL, FI_ADDR_UNSPEC, 99, 0,
					      NULL));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			ASSERT_EQ(8, e.len);
			ASSERT_EQ(0, check(self->rbuf, 8, 100 + i));	/* send order */
		}
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
	} else {
		for (i = 0; i < n; i++)	/* the rendezvous sends */
			if (lens[i] > EAGER_MAX)
				ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	}
}

/* 10000 small messages flood a receiver that posts nothing (and does not
 * even progress for the first second: the mailbox fills, the NI NACKs,
 * the provider resends): every one is delivered exactly once, intact. */
TEST_F_TIMEOUT(fi, flood_10000_unexpected_nothing_lost, 900)
{
	const uint32_t n = 10000;
	struct fi_cq_tagged_entry e;
	uint32_t i;

	fi_open_all(_metadata, self, FI_AV_TABLE);
	if (self->rank == 0) {
		uint32_t done = 0;

		for (i = 0; i < n; i++) {
			size_t len = 1 + i % 24;

			exa_fill(self->sbuf + (size_t)i * 24, len, i, 0);
			ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf + (size_t)i * 24, len, NULL,
					      self->peer, 0x10000 + i, NULL));
			while (fi_cq_read(self->cq, &e, 1) == 1)
				done++;
		}
		/* the marker comes last: when it is received, so are the others */
		ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf, 0, NULL, self->peer, 0xdead, NULL));
		while (done < n + 1) {
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			done++;
		}
	} else {
		usleep(1000000);
		ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, 16, NULL, FI_ADDR_UNSPEC, 0xdead, 0,
				      NULL));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		ASSERT_EQ(0xdeadu, e.tag);
		/* now every message waits in the unexpected queue: take them in
		 * reverse order to walk the whole queue */
		for (i = n; i-- > 0;) {
			size_t len = 1 + i % 24;
			int err;

			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, 64, NULL, FI_ADDR_UNSPEC,
					      0x10000 + i, 0, NULL));
			err = fi_cq_read(self->cq, &e, 1);
			if (err != 1)
				TH_LOG("message %u not there (%d)", i, err);
			ASSERT_EQ(1, err);
			ASSERT_EQ(len, e.len);
			ASSERT_EQ(0, exa_check(self->rbuf, len, i, 0));
		}
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
	}
}

/* A receive buffer that is too small: error completion FI_ETRUNC with the
 * overflow length; the bytes that fit are delivered. */
TEST_F_TIMEOUT(fi, truncation_reported_as_etrunc, 300)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;

	static const size_t lens[] = { 1000, 50000 };	/* eager, rendezvous */
	unsigned int k;

	fi_open_all(_metadata, self, FI_AV_TABLE);
	for (k = 0; k < 2; k++) {
		size_t len = lens[k], room = len * 3 / 10;

		if (self->rank == 0) {
			fill(self->sbuf, len, 5);
			ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf, len, NULL, self->peer, 5, NULL));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		} else {
			memset(self->rbuf, 0, len);
			ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, room, NULL, FI_ADDR_UNSPEC, 5, 0,
					      self->rbuf));
			ASSERT_EQ(-FI_ETRUNC, wait_comp(self->cq, &e, &ee));
			EXPECT_EQ(self->rbuf, ee.op_context);
			EXPECT_EQ(len - room, ee.olen);
			EXPECT_EQ(room, ee.len);
			fill(self->sbuf, len, 5);	/* the expected pattern, locally */
			ASSERT_EQ(0, memcmp(self->rbuf, self->sbuf, room));
			EXPECT_EQ(0, self->rbuf[room]);
		}
	}
}

/* MPI_Probe / MPI_Mprobe: FI_PEEK finds nothing (FI_ENOMSG), then the
 * message, then FI_PEEK|FI_CLAIM reserves it and FI_CLAIM receives it;
 * a cancelled receive completes with FI_ECANCELED. */
TEST_F_TIMEOUT(fi, peek_claim_and_cancel, 300)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fi_context ctx;
	struct iovec iov;
	struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				   .tag = 42, .context = &ctx };

	fi_open_all(_metadata, self, FI_AV_TABLE);
	if (self->rank == 1) {
		iov.iov_base = self->rbuf;
		iov.iov_len = 4096;
		ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_PEEK));
		ASSERT_EQ(-FI_ENOMSG, wait_comp(self->cq, &e, &ee));
		/* cancel of a posted receive */
		ASSERT_EQ(0, fi_trecv(self->ep, self->rbuf, 64, NULL, FI_ADDR_UNSPEC, 7777, 0, &ctx));
		ASSERT_EQ(0, fi_cancel(&self->ep->fid, &ctx));
		ASSERT_EQ(-FI_ECANCELED, wait_comp(self->cq, &e, &ee));
		EXPECT_EQ(&ctx, ee.op_context);
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		fill(self->sbuf, 2000, 42);
		ASSERT_EQ(0, fi_tsend(self->ep, self->sbuf, 2000, NULL, self->peer, 42, NULL));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	} else {
		int64_t end = exanet_now_ns() + FI_TMO;
		int ret;

		do {	/* peek until it is there */
			ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_PEEK));
			ret = wait_comp(self->cq, &e, &ee);
		} while (ret == -FI_ENOMSG && exanet_now_ns() < end);
		ASSERT_EQ(0, ret);
		EXPECT_EQ(2000, e.len);
		EXPECT_EQ(42, e.tag);
		ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_PEEK | FI_CLAIM));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		/* claimed: an ordinary receive does not see it any more */
		ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_PEEK));
		ASSERT_EQ(-FI_ENOMSG, wait_comp(self->cq, &e, &ee));
		ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_PEEK | FI_CLAIM));
		ASSERT_EQ(-FI_ENOMSG, wait_comp(self->cq, &e, &ee));
		/* the context of the successful FI_PEEK | FI_CLAIM receives it */
		memset(self->rbuf, 0, 2000);
		ASSERT_EQ(0, fi_trecvmsg(self->ep, &m, FI_CLAIM));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		EXPECT_EQ(&ctx, e.op_context);
		ASSERT_EQ(2000, e.len);
		ASSERT_EQ(0, check(self->rbuf, 2000, 42));
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
	}
}

/* FI_RMA: rank 0 writes into and reads back from rank 1's registered
 * buffer with its key; a key naming a rank nobody holds and an address
 * outside the registration end in error completions, and the target's
 * memory outside the one good write is unchanged. */
TEST_F_TIMEOUT(fi, rma_write_read_with_keys, 300)
{
	const size_t len = 100000, off = 4096;
	struct { uint64_t addr, key; } mine, all[2];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fid_mr *mr = NULL;
	size_t i;

	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	ASSERT_EQ(FI_RMA, self->info->caps & FI_RMA);
	ASSERT_EQ(FI_MR_PROV_KEY, self->info->domain_attr->mr_mode & FI_MR_PROV_KEY);
	memset(self->rbuf, 0x5a, MAX_SIZE);
	ASSERT_EQ(0, fi_mr_reg(self->domain, self->rbuf, MAX_SIZE,
			       FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL));
	mine.addr = (uintptr_t)self->rbuf;
	mine.key = fi_mr_key(mr);
	ASSERT_EQ(0, oob_allgather(&self->oob, &mine, all, sizeof(mine)));
	if (self->rank == 0) {
		uint64_t bad_rank_key = (all[1].key & ~0xffull) | ((all[1].key + 1) & 7);

		fill(self->sbuf, len, 0x77);	/* unregistered: registered for the write */
		ASSERT_EQ(0, fi_write(self->ep, self->sbuf, len, NULL, self->peer,
				      all[1].addr + off, all[1].key, self->sbuf));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		EXPECT_EQ(FI_RMA | FI_WRITE, e.flags);
		EXPECT_EQ(self->sbuf, e.op_context);
		ASSERT_EQ(0, fi_read(self->ep, self->rbuf, len, fi_mr_desc(mr), self->peer,
				     all[1].addr + off, all[1].key, self->rbuf));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		EXPECT_EQ(FI_RMA | FI_READ, e.flags);
		ASSERT_EQ(0, check(self->rbuf, len, 0x77));
		/* a rank nobody holds on the target node */
		ASSERT_EQ(0, fi_write(self->ep, self->sbuf, 1000, NULL, self->peer, all[1].addr,
				      bad_rank_key, NULL));
		EXPECT_GT(0, wait_comp(self->cq, &e, &ee));
		/* an address the target never registered */
		ASSERT_EQ(0, fi_write(self->ep, self->sbuf, 1000, NULL, self->peer,
				      all[1].addr + MAX_SIZE + (64u << 20), all[1].key, NULL));
		EXPECT_GT(0, wait_comp(self->cq, &e, &ee));
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		for (i = 0; i < off; i++)
			ASSERT_EQ(0x5a, self->rbuf[i]);
		ASSERT_EQ(0, check(self->rbuf + off, len, 0x77));
		for (i = off + len; i < MAX_SIZE; i++)
			ASSERT_EQ(0x5a, self->rbuf[i]);
	}
	OOB_SYNC(&self->oob);
	EXPECT_EQ(0, fi_close(&mr->fid));
}

/* The eager data path (fi_tsend, fi_trecv, fi_cq_read) makes no system
 * call: a thread in seccomp strict mode (only read, write, exit and
 * sigreturn; anything else kills the process) exchanges 2000 tagged
 * messages.  The thread warms its malloc arena first and leaves with a raw
 * exit (pthread_exit would make other calls). */
struct strict_arg {
	FIXTURE_DATA(fi) *self;
	volatile int result;	/* 0 ok, 1 entered strict mode, < 0 error */
	volatile unsigned int done;
};

static void *strict_thread(void *p)
{
	struct strict_arg *a = p;
	FIXTURE_DATA(fi) *self = a->self;
	struct fi_cq_tagged_entry e;
	void *warm[256];
	unsigned int i, posted = 0, sent = 0, completed = 0, n = 2000;
	int err = 0;

	/* memory the provider's malloc calls can take without brk/mmap */
	warm[0] = malloc(8u << 20);
	for (i = 1; i < 256; i++)
		warm[i] = malloc(64 + (i % 8) * 32);
	for (i = 0; i < 256; i++)
		free(warm[i]);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) {
		a->result = -1;
		return NULL;
	}
	a->result = 1;
	while (completed < n && !err) {
		ssize_t r;

		if (self->rank == 0 && sent < n) {
			r = fi_tsend(self->ep, self->sbuf + (sent % 64) * 32, 1 + sent % 32, NULL,
				     self->peer, 0x9000 + sent, NULL);
			if (r == 0)
				sent++;
			else if (r != -FI_EAGAIN)
				err = -2;
		}
		if (self->rank == 1 && posted < n && posted < completed + 64) {
			r = fi_trecv(self->ep, self->rbuf + (posted % 64) * 32, 32, NULL,
				     FI_ADDR_UNSPEC, 0x9000 + posted, 0, NULL);
			if (r == 0)
				posted++;
			else if (r != -FI_EAGAIN)
				err = -3;
		}
		r = fi_cq_read(self->cq, &e, 1);
		if (r == 1)
			completed++;
		else if (r != -FI_EAGAIN)
			err = -4;
		a->done = completed;
	}
	a->result = err ? err : 0;
	syscall(SYS_exit, 0);
	return NULL;
}

TEST_F_TIMEOUT(fi, eager_data_path_makes_no_syscalls_seccomp_strict, 300)
{
	struct strict_arg a = { .self = self, .result = 1 };
	pthread_t t;

	/* one heap (the main one) that keeps what is freed and grows in
	 * large steps: the warm-up above covers the whole exchange */
	ASSERT_EQ(1, mallopt(M_ARENA_MAX, 1));
	ASSERT_EQ(1, mallopt(M_MMAP_THRESHOLD, 64 << 20));
	ASSERT_EQ(1, mallopt(M_TRIM_THRESHOLD, 256 << 20));
	fi_open_all(_metadata, self, FI_AV_TABLE);
	memset(self->sbuf, 0x33, 64 * 32);
	OOB_SYNC(&self->oob);
	ASSERT_EQ(0, pthread_create(&t, NULL, strict_thread, &a));
	ASSERT_EQ(0, pthread_join(t, NULL));	/* a system call there kills us all */
	if (a.result)
		TH_LOG("strict thread: result %d after %u completions", a.result, a.done);
	ASSERT_EQ(0, a.result);
	ASSERT_EQ(2000, a.done);
	OOB_SYNC(&self->oob);
}

/* Debian's fi_pingpong between the two nodes over the provider, with data
 * checks, tagged and untagged. */
TEST_F_TIMEOUT(fi, fi_pingpong_between_two_nodes, 600)
{
	static const char *const runs[] = {
		"-S 64 -I 100 -c -m msg", "-S 4096 -I 50 -c -m tagged", "-S 65536 -I 10 -c",
	};
	char cmd[512];
	unsigned int r;

	if (access("/usr/bin/fi_pingpong", X_OK))
		SKIP("no fi_pingpong in the image");
	for (r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		unsigned int port = 47800 + r;
		struct in_addr srv = { .s_addr = self->oob.peers[0] };
		int status;

		OOB_SYNC(&self->oob);
		if (self->rank == 0)
			snprintf(cmd, sizeof(cmd),
				 "timeout 120 fi_pingpong -p exanet -e rdm -B %u %s > /tmp/fipp_%u.txt 2>&1",
				 port, runs[r], r);
		else
			snprintf(cmd, sizeof(cmd),
				 "sleep 2; timeout 120 fi_pingpong -p exanet -e rdm -P %u %s %s "
				 "> /tmp/fipp_%u.txt 2>&1", port, runs[r], inet_ntoa(srv), r);
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

TEST_HARNESS_MAIN
