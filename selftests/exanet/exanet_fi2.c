// SPDX-License-Identifier: GPL-2.0
/*
 * The libfabric provider "exanet" (lib/libexanet-fi) on two nodes
 * (tests.list: nodes = 2): discovery through Debian's libfabric,
 * tagged and untagged exchanges with every byte checked, out-of-order tag
 * matching, unexpected messages, a flood of 10000 unexpected messages,
 * truncation, FI_PEEK/FI_CLAIM, cancel, Debian's fi_pingpong; sizes up to
 * 16 MiB, capability negotiation, hundreds of outstanding operations, RMA
 * with invalid keys, a peer SIGKILLed in the middle of rendezvous transfers
 * (and a new incarnation of it reachable afterwards), and the MR cache.
 *
 * The node image installs the provider where libfabric finds it without
 * FI_PROVIDER_PATH (/usr/lib/x86_64-linux-gnu/libfabric/).
 */
#include <arpa/inet.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "exa_test.h"
#include "../../lib/libexanet-fi/fi_exanet.h"

#define FI_TEST_PROV "exanet"
#define FI_TEST_DEVICE EXANET_DEFAULT_DEVICE

#include "../lib/fi_test.h"

TEST(fi_info_lists_exanet_rdm_msg_tagged)
{
	struct fi_info *hints = fi_allocinfo();

	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	ASSERT_NE(NULL, hints);
	/* FI_ATOMIC without the mr_mode atomics need is refused */
	fi_freeinfo(fi_test_discovery(_metadata, hints, FI_TAGGED | FI_MSG, FI_ATOMIC));
}

TEST_F_TIMEOUT(fi, tagged_sizes_0_to_1MiB_both_ways_av_table, 600)
{
	fi_test_tagged_sizes(_metadata, self);
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
			if (idx < 0 || idx > n)
				continue;	/* not reached: tells the compiler */
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
		 * its unexpected queue); the 500 B, 4 KiB and 200 KiB ones go by
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

/*
 * Capability negotiation: fi_getinfo without hints lists the provider with
 * everything it offers; hints it can meet are answered with what it gives
 * (no RMA asked: no RMA and no registration mode); what it does not offer
 * is refused with -FI_ENODATA.  Runs on a host too (FI_EXANET_DEVICE=/dev/null
 * FI_PROVIDER_PATH=build/lib).
 */
static int getinfo_ret(struct fi_info *hints)
{
	struct fi_info *info = NULL;
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);

	fi_freeinfo(info);
	return ret;
}

static struct fi_info *exanet_hints_caps(uint64_t caps)
{
	struct fi_info *h = fi_test_hints();

	if (h)
		h->caps = caps;
	return h;
}

TEST(fi_getinfo_negotiates_capabilities)
{
	struct fi_info *hints, *info = NULL, *i;
	int found = 0;

	if (access(EXANET_DEFAULT_DEVICE, F_OK) && !getenv("FI_EXANET_DEVICE"))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	/* no hints at all: every provider; ours with everything it offers */
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info));
	for (i = info; i; i = i->next) {
		if (strcmp(i->fabric_attr->prov_name, "exanet"))
			continue;
		found++;
		EXPECT_EQ(FI_EP_RDM, i->ep_attr->type);
		EXPECT_EQ(FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			  FI_REMOTE_READ | FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE,
			  i->caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_RECV | FI_READ |
				     FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |
				     FI_DIRECTED_RECV | FI_SOURCE));
		EXPECT_EQ(FI_MULTI_RECV, i->caps & FI_MULTI_RECV);
		EXPECT_EQ(FI_MULTI_RECV, i->rx_attr->caps & FI_MULTI_RECV);
		EXPECT_EQ(0, i->tx_attr->caps & FI_MULTI_RECV);
		/* atomics: done by the target's provider (exanet_fi_atomic) */
		EXPECT_EQ(FI_ATOMIC, i->caps & (FI_ATOMIC | FI_COLLECTIVE));
		EXPECT_EQ(FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED,
			  i->domain_attr->mr_mode);
		EXPECT_EQ(FI_PROGRESS_MANUAL, i->domain_attr->data_progress);
		EXPECT_EQ(FI_PROGRESS_MANUAL, i->domain_attr->control_progress);
		EXPECT_EQ(32, i->tx_attr->inject_size);
		EXPECT_EQ(64u << 20, i->ep_attr->max_msg_size);
		EXPECT_EQ(8, i->domain_attr->cq_data_size);
		EXPECT_EQ(0, i->mode);
	}
	fi_freeinfo(info);
	EXPECT_LT(0, found);

	/* tagged messages only: no RMA in the answer, no registration needed */
	hints = exanet_hints_caps(FI_TAGGED);
	ASSERT_NE(NULL, hints);
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
		FI_MR_PROV_KEY;
	info = NULL;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_TAGGED, info->caps & (FI_TAGGED | FI_MSG | FI_RMA));
	EXPECT_EQ(0, info->domain_attr->mr_mode);
	EXPECT_EQ(FI_AV_TABLE, info->domain_attr->av_type);
	fi_freeinfo(info);
	/* RMA with a registration mode that takes provider keys and VAs */
	hints->caps = FI_TAGGED | FI_RMA;
	info = NULL;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_RMA, info->caps & FI_RMA);
	EXPECT_EQ(FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED, info->domain_attr->mr_mode);
	fi_freeinfo(info);
	/* atomics with it too */
	hints->caps = FI_TAGGED | FI_ATOMIC;
	info = NULL;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_ATOMIC, info->caps & (FI_ATOMIC | FI_RMA));
	EXPECT_EQ(FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED, info->domain_attr->mr_mode);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	/* what GASNet-EX's ofi-conduit asks for (its documented requirements) */
	hints = exanet_hints_caps(FI_RMA | FI_MSG | FI_MULTI_RECV);
	ASSERT_NE(NULL, hints);
	hints->mode = FI_CONTEXT;
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	hints->rx_attr->op_flags = FI_MULTI_RECV;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED |
		FI_MR_ENDPOINT;
	info = NULL;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_RMA | FI_MSG | FI_MULTI_RECV, info->caps & (FI_RMA | FI_MSG | FI_MULTI_RECV));
	EXPECT_EQ(FI_RM_ENABLED, info->domain_attr->resource_mgmt);
	EXPECT_EQ(FI_THREAD_DOMAIN, info->domain_attr->threading);
	EXPECT_EQ(0, info->mode);
	EXPECT_EQ(0, info->domain_attr->mr_mode & (FI_MR_LOCAL | FI_MR_ENDPOINT));
	fi_freeinfo(info);
	fi_freeinfo(hints);

	/* refused: what it does not offer */
#define REFUSED(setup) do {						\
		hints = exanet_hints_caps(FI_TAGGED | FI_MSG);		\
		ASSERT_NE(NULL, hints);					\
		setup;							\
		int _r = getinfo_ret(hints);				\
		if (_r != -FI_ENODATA)					\
			TH_LOG("%s: %d", #setup, _r);			\
		EXPECT_EQ(-FI_ENODATA, _r);				\
		fi_freeinfo(hints);					\
	} while (0)
	REFUSED(hints->ep_attr->type = FI_EP_MSG);
	REFUSED(hints->ep_attr->type = FI_EP_DGRAM);
	/* atomics need provider keys and virtual addresses, like RMA (the
	 * hints here leave mr_mode 0) */
	REFUSED(hints->caps |= FI_ATOMIC);
	REFUSED(hints->caps = FI_ATOMIC);
	REFUSED(hints->caps |= FI_COLLECTIVE);
	/* RMA needs provider keys and virtual addresses */
	REFUSED(hints->caps |= FI_RMA; hints->domain_attr->mr_mode = FI_MR_LOCAL);
	REFUSED(hints->caps |= FI_RMA; hints->domain_attr->mr_mode = FI_MR_SCALABLE);
	REFUSED(hints->caps |= FI_RMA;
		hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED);
	REFUSED(hints->domain_attr->data_progress = FI_PROGRESS_AUTO);
	REFUSED(hints->domain_attr->control_progress = FI_PROGRESS_AUTO);
	REFUSED(hints->addr_format = FI_SOCKADDR_IN);
	REFUSED(hints->tx_attr->inject_size = 4096);
	REFUSED(hints->tx_attr->iov_limit = 64);
	REFUSED(hints->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW);
	REFUSED(hints->ep_attr->max_msg_size = 1ull << 30);
	REFUSED(hints->ep_attr->tx_ctx_cnt = 4);
	REFUSED(hints->domain_attr->cq_data_size = 16);
	REFUSED(free(hints->fabric_attr->name); hints->fabric_attr->name = strdup("verbs"));
#undef REFUSED
	/* and an API version the provider does not speak */
	hints = exanet_hints_caps(FI_TAGGED);
	ASSERT_NE(NULL, hints);
	info = NULL;
	EXPECT_NE(0, fi_getinfo(FI_VERSION(1, 4), NULL, NULL, 0, hints, &info));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/*
 * Hundreds of operations outstanding at once, eager and rendezvous mixed:
 * first with every receive posted before the sends, then with every send
 * posted before any receive (all unexpected; the rendezvous ones wait at
 * the sender) and the receives posted in a shuffled order.  Every
 * operation completes exactly once, with its own context, tag, length and
 * bytes.
 */
#define MANY 320

static size_t many_len(unsigned int i)
{
	static const size_t lens[] = { 0, 8, 40, 100, 1000, 1024, 1025, 4096, 20000, 65539, 300000 };

	return lens[(i * 7) % (sizeof(lens) / sizeof(lens[0]))];
}

static void many_round(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
		       uint8_t *sb, uint8_t *rb, size_t *off, int pre_post, uint64_t base)
{
	unsigned int order[MANY], i, done = 0;
	unsigned char seen[MANY] = { 0 };
	struct fi_cq_tagged_entry e;
	int64_t end;

	for (i = 0; i < MANY; i++)
		order[i] = i;
	if (!pre_post) {	/* shuffled receive order */
		uint32_t x = 12345;

		for (i = MANY - 1; i > 0; i--) {
			unsigned int j, t;

			x = x * 1103515245u + 12345u;
			j = (x >> 8) % (i + 1);
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
	}
	if (self->rank == 1 && pre_post) {
		for (i = 0; i < MANY; i++) {
			memset(rb + off[i], 0xee, many_len(i) + 1);
			ASSERT_EQ(0, fi_trecv(self->ep, rb + off[i], many_len(i), NULL, self->peer,
					      base + i, 0, (void *)(uintptr_t)(i + 1)));
		}
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		for (i = 0; i < MANY; i++) {
			fill(sb + off[i], many_len(i), base + i);
			ASSERT_EQ(0, fi_tsend(self->ep, sb + off[i], many_len(i), NULL, self->peer,
					      base + i, (void *)(uintptr_t)(i + 1)));
		}
	}
	if (!pre_post) {
		/* every send is posted (eager ones delivered or on their way)
		 * before the first receive */
		OOB_SYNC(&self->oob);
		if (self->rank == 1) {
			for (i = 0; i < MANY; i++) {
				unsigned int k = order[i];

				memset(rb + off[k], 0xee, many_len(k) + 1);
				ASSERT_EQ(0, fi_trecv(self->ep, rb + off[k], many_len(k), NULL,
						      self->peer, base + k, 0,
						      (void *)(uintptr_t)(k + 1)));
			}
		}
	}
	end = exanet_now_ns() + 10 * FI_TMO;
	while (done < MANY) {
		unsigned int k;
		int ret = wait_comp(self->cq, &e, NULL);

		if (ret)
			TH_LOG("after %u completions: %d (%s)", done, ret, fi_strerror(-ret));
		ASSERT_EQ(0, ret);
		k = (unsigned int)(uintptr_t)e.op_context - 1;
		ASSERT_GT(MANY, k);
		ASSERT_EQ(0, seen[k]);
		seen[k] = 1;
		done++;
		if (self->rank == 1) {
			EXPECT_EQ(FI_RECV | FI_TAGGED, e.flags & (FI_RECV | FI_TAGGED));
			ASSERT_EQ(base + k, e.tag);
			ASSERT_EQ(many_len(k), e.len);
			ASSERT_EQ(0, check(rb + off[k], many_len(k), base + k));
			ASSERT_EQ(0xee, rb[off[k] + many_len(k)]);
		} else {
			EXPECT_EQ(FI_SEND | FI_TAGGED, e.flags & (FI_SEND | FI_TAGGED));
		}
		ASSERT_GT(end, exanet_now_ns());
	}
	sends_done(_metadata, self, base + MANY);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
}

TEST_F_TIMEOUT(fi, hundreds_outstanding_eager_and_rendezvous_mixed, 900)
{
	size_t off[MANY], total = 0;
	uint8_t *sb, *rb;
	unsigned int i, rndv = 0;

	for (i = 0; i < MANY; i++) {
		off[i] = total;
		total += many_len(i) + 64;
		rndv += many_len(i) > EAGER_MAX;
	}
	ASSERT_LT(MANY / 4, rndv);		/* both kinds, many of each */
	ASSERT_LT(MANY / 4, MANY - rndv);
	sb = malloc(total);
	rb = malloc(total);
	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, rb);
	fi_open_all(_metadata, self, FI_AV_TABLE);
	many_round(_metadata, self, sb, rb, off, 1, 0x40000);
	OOB_SYNC(&self->oob);
	many_round(_metadata, self, sb, rb, off, 0, 0x50000);
	free(sb);
	free(rb);
}

/* the cases extoll_fi runs too */
#include "../lib/fi_cases.h"

/* RMA with keys that name nothing at the target: a write and a read with
 * a key of a rank nobody holds end in error completions (or are refused
 * when posted), a key whose rank cannot exist is refused; neither the
 * target's memory nor the initiator's read buffer changes. */
TEST_F_TIMEOUT(fi, rma_invalid_keys_error_and_memory_unchanged, 300)
{
	const size_t len = 65536;
	struct { uint64_t addr, key; } mine, all[2];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fid_mr *mr = NULL;
	size_t i;

	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	memset(self->rbuf, 0x5a, len);
	ASSERT_EQ(0, fi_mr_reg(self->domain, self->rbuf, len,
			       FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL));
	mine.addr = (uintptr_t)self->rbuf;
	mine.key = fi_mr_key(mr);
	ASSERT_EQ(0, oob_allgather(&self->oob, &mine, all, sizeof(mine)));
	if (self->rank == 0) {
		uint64_t keys[2] = {
			(all[1].key & ~0xffull) | ((all[1].key + 1) & 7),	/* rank nobody holds */
			(all[1].key & ~0xffull) | 0xfe,			/* no such rank */
		};
		unsigned int k;

		fill(self->sbuf, len, 0x99);
		for (k = 0; k < 2; k++) {
			ssize_t r;

			r = fi_write(self->ep, self->sbuf, len, NULL, self->peer, all[1].addr,
				     keys[k], NULL);
			if (r == 0) {
				EXPECT_GT(0, wait_comp(self->cq, &e, &ee));
			} else {
				EXPECT_EQ(-FI_EINVAL, r);
			}
			memset(self->rbuf, 0x5a, len);	/* our read target */
			r = fi_read(self->ep, self->rbuf, len, fi_mr_desc(mr), self->peer, all[1].addr,
				    keys[k], self->rbuf);
			if (r == 0) {
				ASSERT_GT(0, wait_comp(self->cq, &e, &ee));
				EXPECT_EQ(self->rbuf, ee.op_context);
				EXPECT_EQ(FI_RMA | FI_READ, ee.flags & (FI_RMA | FI_READ));
			} else {
				EXPECT_EQ(-FI_EINVAL, r);
			}
			for (i = 0; i < len; i++)
				ASSERT_EQ(0x5a, self->rbuf[i]);
		}
		/* the right key still works afterwards */
		ASSERT_EQ(0, fi_read(self->ep, self->rbuf, len, fi_mr_desc(mr), self->peer,
				     all[1].addr, all[1].key, NULL));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		for (i = 0; i < len; i++)
			ASSERT_EQ(0x5a, self->rbuf[i]);
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1)
		for (i = 0; i < len; i++)
			ASSERT_EQ(0x5a, self->rbuf[i]);
	OOB_SYNC(&self->oob);
	EXPECT_EQ(0, fi_close(&mr->fid));
}

/* ---- a peer that dies mid-transfer ---- */

/* A bare endpoint for a forked child (no harness, no fixture). */
struct kid_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
};

static int kid_open(struct kid_ep *k, uint8_t addr[8])
{
	struct fi_info *hints = fi_test_hints();
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	size_t alen = 8;

	if (!hints || fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &k->info))
		return -1;
	fi_freeinfo(hints);
	if (fi_fabric(k->info->fabric_attr, &k->fabric, NULL) ||
	    fi_domain(k->fabric, k->info, &k->domain, NULL) ||
	    fi_av_open(k->domain, &av_attr, &k->av, NULL) ||
	    fi_cq_open(k->domain, &cq_attr, &k->cq, NULL) ||
	    fi_endpoint(k->domain, k->info, &k->ep, NULL) ||
	    fi_ep_bind(k->ep, &k->av->fid, 0) ||
	    fi_ep_bind(k->ep, &k->cq->fid, FI_TRANSMIT | FI_RECV) || fi_enable(k->ep))
		return -2;
	return fi_getname(&k->ep->fid, addr, &alen) ? -3 : 0;
}

/* Read exactly n bytes from a pipe (-1 on EOF / error). */
static int read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

#define DEAD_LEN	(4u << 20)
#define DEAD_NSEND	8	/* survivor -> child, rendezvous */
#define DEAD_NRECV	4	/* child -> survivor, rendezvous */

/*
 * Child 1 (node 1): receives the survivor's message 0, then posts receives
 * for 1..3 only (4..7 stay unexpected, their senders wait for a FIN),
 * posts DEAD_NRECV rendezvous sends to the survivor, progresses 20 ms (the
 * RTS packets leave; the survivor starts reading), tells the parent 'R'
 * and keeps progressing until the parent SIGKILLs it.
 */
static void kid_victim(int up, int down)
{
	struct kid_ep k = { 0 };
	struct fi_cq_tagged_entry e;
	uint8_t addr[8] = { 0 }, peer[8];
	uint8_t *sb = malloc(DEAD_LEN), *rb = malloc((size_t)DEAD_NSEND * DEAD_LEN);
	int64_t end;
	int i, got0 = 0;

	if (!sb || !rb || kid_open(&k, addr) || write(up, addr, 8) != 8 ||
	    read_full(down, peer, 8) || fi_av_insert(k.av, peer, 1, &k.peer, 0, NULL) != 1)
		_exit(2);
	fill(sb, DEAD_LEN, 0xd00);
	if (fi_trecv(k.ep, rb, DEAD_LEN, NULL, k.peer, 0xd20, 0, rb))
		_exit(4);
	while (!got0) {
		ssize_t n = fi_cq_read(k.cq, &e, 1);

		if (n == 1 && e.op_context == rb)
			got0 = 1;
		else if (n == -FI_EAVAIL)
			_exit(5);
	}
	if (check_any(rb, DEAD_LEN, 0xd20))
		_exit(6);
	for (i = 1; i < 4; i++)
		if (fi_trecv(k.ep, rb + (size_t)i * DEAD_LEN, DEAD_LEN, NULL, k.peer, 0xd20 + i, 0,
			     NULL))
			_exit(7);
	/* our sends last: the survivor is reading them when we die */
	for (i = 0; i < DEAD_NRECV; i++)
		if (fi_tsend(k.ep, sb, DEAD_LEN, NULL, k.peer, 0xd10 + i, NULL))
			_exit(3);
	end = exanet_now_ns() + 20 * 1000000;	/* the RTS packets leave */
	while (exanet_now_ns() < end)
		fi_cq_read(k.cq, &e, 1);
	if (write(up, "R", 1) != 1)
		_exit(8);
	for (;;)
		fi_cq_read(k.cq, &e, 1);
}

/* Child 2: a new incarnation (new process, most likely on the same
 * mailbox): receives an eager and a rendezvous message from the survivor,
 * checks them, sends two back and waits for their completions. */
static void kid_second(int up, int down)
{
	struct kid_ep k = { 0 };
	struct fi_cq_tagged_entry e;
	uint8_t addr[8] = { 0 }, peer[8];
	uint8_t *b = malloc(2u << 20), *sb = malloc(2u << 20);
	int64_t end;
	int done = 0;

	if (!b || !sb || kid_open(&k, addr) || write(up, addr, 8) != 8 ||
	    read_full(down, peer, 8) || fi_av_insert(k.av, peer, 1, &k.peer, 0, NULL) != 1)
		_exit(2);
	if (fi_trecv(k.ep, b, 100, NULL, k.peer, 0xe00, 0, NULL) ||
	    fi_trecv(k.ep, b + 4096, 1u << 20, NULL, k.peer, 0xe01, 0, NULL) ||
	    fi_trecv(k.ep, b + (1u << 20) + 8192, 8, NULL, k.peer, 0xeff, 0, NULL))
		_exit(3);
	fill(sb, 200, 0xe02);
	fill(sb + 4096, (1u << 20) + 5, 0xe03);
	if (fi_tsend(k.ep, sb, 200, NULL, k.peer, 0xe02, NULL) ||
	    fi_tsend(k.ep, sb + 4096, (1u << 20) + 5, NULL, k.peer, 0xe03, NULL))
		_exit(4);
	end = exanet_now_ns() + 120 * SEC;
	/* 2 receives, 2 sends and the survivor's "bye" (sent once it has all
	 * its completions: until then our FIN may still have to go out) */
	while (done < 5 && exanet_now_ns() < end) {
		ssize_t n = fi_cq_read(k.cq, &e, 1);

		if (n == -FI_EAVAIL)
			_exit(5);
		if (n != 1)
			continue;
		done++;
		if (!(e.flags & FI_RECV))
			continue;
		if (e.tag == 0xe00 && (e.len != 100 || check(b, 100, 0xe00)))
			_exit(6);
		if (e.tag == 0xe01 && (e.len != 1u << 20 || check(b + 4096, 1u << 20, 0xe01)))
			_exit(7);
	}
	_exit(done == 5 ? 0 : 9);
}

/* Node 1: start a child, relay addresses; returns its pid. */
static pid_t start_kid(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
		       void (*fn)(int, int), int *up_rd)
{
	int up[2], down[2];
	uint8_t kaddr[64] = { 0 }, all[2][64];
	pid_t pid;

	(void)_metadata;
	if (pipe(up) || pipe(down))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		fn(up[1], down[0]);
		_exit(1);
	}
	close(up[1]);
	close(down[0]);
	if (pid < 0 || read_full(up[0], kaddr, 8))
		TH_LOG("child did not start");
	if (oob_allgather(&self->oob, kaddr, all, sizeof(kaddr)) ||
	    write(down[1], all[0], 8) != 8)
		TH_LOG("address exchange failed");
	close(down[1]);
	*up_rd = up[0];
	return pid;
}

/* Node 0: the survivor's side of an address exchange with a new child. */
static fi_addr_t survivor_meet(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
			       const uint8_t *mine, uint8_t *kid)
{
	uint8_t all[2][64];
	fi_addr_t a = FI_ADDR_NOTAVAIL;

	(void)_metadata;
	if (oob_allgather(&self->oob, mine, all, sizeof(all[0])))
		return FI_ADDR_NOTAVAIL;
	memcpy(kid, all[1], 8);
	if (fi_av_insert(self->av, all[1], 1, &a, 0, NULL) != 1)
		TH_LOG("fi_av_insert of the child failed");
	return a;
}

/*
 * Node 0 (survivor) sends 8 x 4 MiB rendezvous messages to a process on
 * node 1 and receives 4 x 4 MiB from it; that process is SIGKILLed after
 * its first receive (reads of some of the others in flight, 4 of the sends
 * still unexpected over there).  Every operation of the survivor ends
 * within a bounded time: sends either completed or error completions
 * (fi_cq_readerr), receives either complete with the right bytes or
 * error completions, or are still unmatched and cancellable.  Then a new
 * process on node 1 (a new incarnation, normally on the same mailbox)
 * exchanges eager and rendezvous messages with the same survivor endpoint.
 */
TEST_F_TIMEOUT(fi, peer_killed_mid_rendezvous_then_new_peer_reachable, 900)
{
	uint8_t mine[64] = { 0 }, kid1[8], kid2[8];

	if (self->rank == 1) {
		char c = 0;
		int up, status = 0;
		pid_t pid = start_kid(_metadata, self, kid_victim, &up);

		ASSERT_LT(0, pid);
		ASSERT_EQ(0, read_full(up, &c, 1));
		ASSERT_EQ('R', c);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
		close(up);
		OOB_SYNC(&self->oob);	/* the survivor has all its completions */
		pid = start_kid(_metadata, self, kid_second, &up);
		ASSERT_LT(0, pid);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			TH_LOG("second child: status %#x", status);
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
		close(up);
		OOB_SYNC(&self->oob);
		return;
	}

	/* node 0: the survivor */
	{
		uint8_t *sb = malloc(DEAD_LEN), *rb = malloc((size_t)DEAD_NRECV * DEAD_LEN);
		int send_ok = 0, send_err = 0, recv_ok = 0, recv_err = 0, i;
		struct fi_exanet_mr_cache_stats st0, st1;
		struct fi_exanet_ops_domain *xops = NULL;
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry ee;
		fi_addr_t victim, second;
		int64_t t0, t_last = 0, end;

		ASSERT_NE(NULL, sb);
		ASSERT_NE(NULL, rb);
		fi_open_local(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG, mine);
		ASSERT_EQ(0, fi_open_ops(&self->domain->fid, FI_EXANET_DOMAIN_OPS, 0,
					 (void **)&xops, NULL));
		ASSERT_EQ(0, xops->mr_cache_stats(self->domain, &st0));
		victim = survivor_meet(_metadata, self, mine, kid1);
		ASSERT_NE(FI_ADDR_NOTAVAIL, victim);
		fill(sb, DEAD_LEN, 0xd20);	/* the pattern of message 0 (checked by the child) */
		for (i = 0; i < DEAD_NRECV; i++)
			ASSERT_EQ(0, fi_trecv(self->ep, rb + (size_t)i * DEAD_LEN, DEAD_LEN, NULL,
					      victim, 0xd10 + i, 0, (void *)(uintptr_t)(0x100 + i)));
		for (i = 0; i < DEAD_NSEND; i++)
			ASSERT_EQ(0, fi_tsend(self->ep, sb, DEAD_LEN, NULL, victim, 0xd20 + i,
					      (void *)(uintptr_t)(0x200 + i)));
		t0 = exanet_now_ns();
		end = t0 + 120 * SEC;
		/* every send ends; wait a little longer for the receives */
		while (send_ok + send_err < DEAD_NSEND && exanet_now_ns() < end) {
			ssize_t n = fi_cq_read(self->cq, &e, 1);
			uintptr_t ctx;

			if (n == -FI_EAVAIL) {
				memset(&ee, 0, sizeof(ee));
				ASSERT_EQ(1, fi_cq_readerr(self->cq, &ee, 0));
				ctx = (uintptr_t)ee.op_context;
				EXPECT_NE(0, ee.err);
				TH_LOG("error completion %#lx after %lld ms: %s", (unsigned long)ctx,
				       (long long)((exanet_now_ns() - t0) / 1000000),
				       fi_strerror(ee.err));
				if (ctx >= 0x200)
					send_err++;
				else
					recv_err++;
				t_last = exanet_now_ns();
				continue;
			}
			if (n != 1)
				continue;
			ctx = (uintptr_t)e.op_context;
			if (ctx >= 0x200) {
				send_ok++;
			} else {
				ASSERT_LE(0x100, ctx);
				ASSERT_EQ(DEAD_LEN, e.len);
				ASSERT_EQ(0, check_any(rb + (ctx - 0x100) * DEAD_LEN, DEAD_LEN, 0xd00));
				recv_ok++;
			}
			t_last = exanet_now_ns();
		}
		TH_LOG("sends: %d ok, %d failed; receives: %d ok, %d failed; last after %lld ms",
		       send_ok, send_err, recv_ok, recv_err, (long long)((t_last - t0) / 1000000));
		ASSERT_EQ(DEAD_NSEND, send_ok + send_err);	/* no hang */
		EXPECT_LE(1, send_ok);			/* message 0 was received */
		EXPECT_LE(4, send_err);			/* 4..7 never had a receive */
		/* receives: a matched one ends (data, or an error from its RDMA
		 * read of the dead sender's memory); one whose RTS never came is
		 * still posted */
		end = exanet_now_ns() + 60 * SEC;
		while (recv_ok + recv_err < DEAD_NRECV && exanet_now_ns() < end) {
			ssize_t n = fi_cq_read(self->cq, &e, 1);

			if (n == -FI_EAVAIL) {
				ASSERT_EQ(1, fi_cq_readerr(self->cq, &ee, 0));
				recv_err++;
			} else if (n == 1) {
				ASSERT_EQ(0, check_any(rb + ((uintptr_t)e.op_context - 0x100) *
						       DEAD_LEN, DEAD_LEN, 0xd00));
				recv_ok++;
			}
		}
		TH_LOG("receives: %d ok, %d failed, %d never matched, after %lld ms", recv_ok,
		       recv_err, DEAD_NRECV - recv_ok - recv_err,
		       (long long)((exanet_now_ns() - t0) / 1000000));
		for (i = recv_ok + recv_err; i < DEAD_NRECV; i++) {
			/* never matched: cancel works (a matched receive stuck
			 * in its reads would not be cancellable) */
			ssize_t n;
			int j, cancelled = 0;

			for (j = 0; j < DEAD_NRECV && !cancelled; j++)
				if (fi_cancel(&self->ep->fid, (void *)(uintptr_t)(0x100 + j)) == 0)
					cancelled = 1;
			ASSERT_EQ(1, cancelled);
			do
				n = fi_cq_read(self->cq, &e, 1);
			while (n == -FI_EAGAIN);
			ASSERT_EQ(-FI_EAVAIL, n);
			ASSERT_EQ(1, fi_cq_readerr(self->cq, &ee, 0));
			EXPECT_EQ(FI_ECANCELED, ee.err);
		}
		OOB_SYNC(&self->oob);

		/* a new incarnation of the peer: reachable from the same endpoint */
		second = survivor_meet(_metadata, self, mine, kid2);
		ASSERT_NE(FI_ADDR_NOTAVAIL, second);
		TH_LOG("first peer %02x%02x%02x%02x mbox %u, second mbox %u", kid1[3], kid1[2],
		       kid1[1], kid1[0], kid1[4], kid2[4]);
		fill(sb, 100, 0xe00);
		fill(sb + 4096, 1u << 20, 0xe01);
		ASSERT_EQ(0, fi_trecv(self->ep, rb, 4096, NULL, second, 0xe02, 0, rb));
		ASSERT_EQ(0, fi_trecv(self->ep, rb + 8192, 2u << 20, NULL, second, 0xe03, 0,
				      rb + 8192));
		ASSERT_EQ(0, fi_tsend(self->ep, sb, 100, NULL, second, 0xe00, NULL));
		ASSERT_EQ(0, fi_tsend(self->ep, sb + 4096, 1u << 20, NULL, second, 0xe01, NULL));
		for (i = 0; i < 4; i++) {
			int ret = wait_comp(self->cq, &e, &ee);

			if (ret)
				TH_LOG("completion %d with the second peer: %s", i, fi_strerror(-ret));
			ASSERT_EQ(0, ret);
			if (e.op_context == rb) {
				ASSERT_EQ(200, e.len);
				ASSERT_EQ(0, check(rb, 200, 0xe02));
			} else if (e.op_context == rb + 8192) {
				ASSERT_EQ((1u << 20) + 5, e.len);
				ASSERT_EQ(0, check_any(rb + 8192, (1u << 20) + 5, 0xe03));
			}
		}
		ASSERT_EQ(0, fi_tsend(self->ep, sb, 0, NULL, second, 0xeff, NULL));
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		ASSERT_EQ(0, xops->mr_cache_stats(self->domain, &st1));
		TH_LOG("stream resets: %llu",
		       (unsigned long long)(st1.stream_resets - st0.stream_resets));
		if (!memcmp(kid1, kid2, 8))	/* same address: the old stream was restarted */
			EXPECT_LE(1, st1.stream_resets - st0.stream_resets);
		OOB_SYNC(&self->oob);
		self->peer_known = 0;	/* no barrier with a process that has left */
		free(sb);
		free(rb);
	}
}

/* ---- MR cache ---- */

/* Whether on-demand registration works on this node (NI with interrupts). */
static int node_has_odp(void)
{
	struct exanet_dev *dev;
	struct exanet_mr *mr;
	static char page[4096] __attribute__((aligned(4096)));
	int ret;

	if (exanet_open(EXANET_DEFAULT_DEVICE, &dev))
		return -1;
	ret = exanet_reg_mr(dev, page, sizeof(page), EXANET_MR_REMOTE_READ | EXANET_MR_ON_DEMAND,
			    &mr);
	if (!ret)
		exanet_dereg_mr(mr);
	exanet_close(dev);
	return ret == 0;
}

/*
 * (a) 20 rendezvous messages from one buffer into one buffer: with
 * on-demand paging each side registers once (the provider's counters), the
 * other 19 are cache hits; without it (msix=off NIs) one registration per
 * message and nothing cached.  (b) Both buffers are unmapped and mapped
 * again at the same addresses with new contents: the next message (a cache
 * hit with on-demand paging) carries the new bytes into the new receive
 * pages, never the old ones.
 */
TEST_F_TIMEOUT(fi, mr_cache_registers_once_and_never_serves_stale_pages, 900)
{
	const size_t len = 4u << 20, n = 20;
	struct fi_exanet_mr_cache_stats st0, st1, st2;
	struct fi_exanet_ops_domain *xops = NULL;
	struct fi_cq_tagged_entry e;
	int odp = node_has_odp();
	uint8_t *buf, *again;
	size_t i;

	ASSERT_LE(0, odp);
	fi_open_all(_metadata, self, FI_AV_TABLE);
	ASSERT_EQ(0, fi_open_ops(&self->domain->fid, FI_EXANET_DOMAIN_OPS, 0, (void **)&xops,
				 NULL));
	ASSERT_EQ(sizeof(*xops), xops->size);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, xops->mr_cache_stats(self->domain, &st0));
	for (i = 0; i < n; i++) {
		uint64_t tag = 0x7000 + i;

		if (self->rank == 0) {
			fill(buf, len, tag);
			ASSERT_EQ(0, fi_tsend(self->ep, buf, len, NULL, self->peer, tag, NULL));
		} else {
			memset(buf, 0, len);
			ASSERT_EQ(0, fi_trecv(self->ep, buf, len, NULL, self->peer, tag, 0, NULL));
		}
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		if (self->rank == 1) {
			ASSERT_EQ(len, e.len);
			ASSERT_EQ(0, check_any(buf, len, tag));
		}
	}
	ASSERT_EQ(0, xops->mr_cache_stats(self->domain, &st1));
	TH_LOG("on-demand %d: %llu registrations, %llu hits, %llu misses for %zu messages", odp,
	       (unsigned long long)(st1.registrations - st0.registrations),
	       (unsigned long long)(st1.hits - st0.hits),
	       (unsigned long long)(st1.misses - st0.misses), n);
	if (odp) {
		EXPECT_EQ(1, st1.on_demand);
		EXPECT_EQ(1, st1.registrations - st0.registrations);
		EXPECT_EQ(n - 1, st1.hits - st0.hits);
		EXPECT_EQ(0, st1.deregistrations - st0.deregistrations);
		EXPECT_LE(1, st1.entries);
	} else {
		EXPECT_EQ(0, st1.on_demand);
		EXPECT_EQ(n, st1.registrations - st0.registrations);
		EXPECT_EQ(n, st1.deregistrations - st0.deregistrations);
		EXPECT_EQ(0, st1.entries);
	}
	OOB_SYNC(&self->oob);

	/* (b) free the memory and map new memory at the same address */
	ASSERT_EQ(0, munmap(buf, len));
	again = mmap(buf, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_EQ(buf, again);
	if (self->rank == 0) {
		fill(buf, len, 0x7fff);
		ASSERT_EQ(0, fi_tsend(self->ep, buf, len, NULL, self->peer, 0x7fff, NULL));
	} else {
		/* untouched new pages: the NI faults them in (zero until written) */
		ASSERT_EQ(0, fi_trecv(self->ep, buf, len, NULL, self->peer, 0x7fff, 0, NULL));
	}
	ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	if (self->rank == 1) {
		ASSERT_EQ(len, e.len);
		ASSERT_EQ(0, check_any(buf, len, 0x7fff));
	}
	ASSERT_EQ(0, xops->mr_cache_stats(self->domain, &st2));
	if (odp)	/* served by the cached entry, through the new pages */
		EXPECT_EQ(st1.registrations, st2.registrations);
	OOB_SYNC(&self->oob);
	ASSERT_EQ(0, munmap(buf, len));
}

TEST_HARNESS_MAIN
