// SPDX-License-Identifier: GPL-2.0
/*
 * The provider's data calls against the libfabric 1.17 man pages, through
 * Debian's libfabric, on the loopback NIC (xfi_loop_test.h): fi_msg(3),
 * fi_tagged(3), fi_rma(3), fi_atomic(3).  Each form of each call moves
 * real bytes (an endpoint sends, writes and applies atomics to itself);
 * each flag the man page defines is accepted with its effect or refused
 * with -FI_EBADFLAGS, and a refusal logs one warn line.  The control
 * calls: test_xfi_api.c.
 */
#include "xfi_loop_test.h"
#include "xfi_loop_calls.h"

/* the provider's own op flag (xfi.h XFI_NO_COMPLETION): never the caller's */
#define PROVIDER_BIT	(1ULL << 62)

/* ---- fi_msg(3) ---- */

/* Every call of fi_ops_msg once: data, flags, CQ data; injects complete silently. */
TEST_F(loop, msg_every_form)
{
	struct fi_cq_tagged_entry e[16];
	struct fi_context ctx[12];
	char in[6][16], small[3], big[13], src[8] = "inject!";
	struct iovec riov[2] = { { small, 3 }, { big, 13 } };
	struct iovec siov[2] = { { "ab", 2 }, { "cdef", 4 } };
	struct iovec miov = { in[2], 16 };
	struct fi_msg rmsg = { .msg_iov = &miov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			       .context = &ctx[2] };
	struct iovec tiov = { "sendmsg", 7 };
	struct fi_msg smsg = { .msg_iov = &tiov, .iov_count = 1, .addr = self->e.self,
			       .context = &ctx[8] };
	const struct fi_cq_tagged_entry *x;

	memset(in, 0, sizeof(in));
	ASSERT_EQ(0, fi_recv(self->e.ep, in[0], 16, NULL, FI_ADDR_UNSPEC, &ctx[0]));
	ASSERT_EQ(0, fi_recvv(self->e.ep, riov, NULL, 2, FI_ADDR_UNSPEC, &ctx[1]));
	ASSERT_EQ(0, fi_recvmsg(self->e.ep, &rmsg, FI_COMPLETION | FI_MORE));
	for (int i = 3; i < 6; i++)
		ASSERT_EQ(0, fi_recv(self->e.ep, in[i], 16, NULL, FI_ADDR_UNSPEC, &ctx[i]));
	ASSERT_EQ(0, fi_send(self->e.ep, "hello", 5, NULL, self->e.self, &ctx[6]));
	ASSERT_EQ(0, fi_sendv(self->e.ep, siov, NULL, 2, self->e.self, &ctx[7]));
	ASSERT_EQ(0, fi_sendmsg(self->e.ep, &smsg, FI_COMPLETION));
	ASSERT_EQ(0, fi_senddata(self->e.ep, "data", 4, NULL, 0x55, self->e.self, &ctx[9]));
	ASSERT_EQ(0, fi_inject(self->e.ep, src, 7, self->e.self));
	memset(src, 'X', sizeof(src));		/* the inject took a copy */
	ASSERT_EQ(0, fi_injectdata(self->e.ep, "id", 2, 0x66, self->e.self));
	ASSERT_EQ(10, loop_reap(self->e.cq, e, 10, 16));
	EXPECT_EQ(0, loop_settle(self->e.cq));	/* nothing for the injects */
	EXPECT_EQ(0, memcmp(in[0], "hello", 5));
	EXPECT_EQ(0, memcmp(small, "abc", 3));
	EXPECT_EQ(0, memcmp(big, "def", 3));
	EXPECT_EQ(0, memcmp(in[2], "sendmsg", 7));
	EXPECT_EQ(0, memcmp(in[3], "data", 4));
	EXPECT_EQ(0, memcmp(in[4], "inject!", 7));
	EXPECT_EQ(0, memcmp(in[5], "id", 2));
	x = loop_find(e, 10, &ctx[1]);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(6u, x->len);
	x = loop_find(e, 10, &ctx[3]);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, x->flags);
	EXPECT_EQ(0x55u, x->data);
	x = loop_find(e, 10, &ctx[5]);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(0x66u, x->data);
	for (int i = 6; i < 10; i++) {
		x = loop_find(e, 10, &ctx[i]);
		ASSERT_NE(NULL, x) TH_LOG("send %d", i);
		EXPECT_EQ(FI_SEND | FI_MSG, x->flags & (FI_SEND | FI_MSG | FI_RECV));
	}
}

/*
 * A post call hands its packet to the NIC and does nothing else: it reads
 * no channel's outcome (the engine's own busy bit says which channel is
 * free; on a NIC whose outcome is final at once, one read of the send's
 * own acceptance) and writes no completion: progress (a CQ read) does.
 */
TEST_F(loop, post_calls_only_queue)
{
	static struct xfi_loop_calls calls;
	int at_once = !strcmp(variant->prov, "loopnow");
	struct fi_cq_tagged_entry e[8];
	struct fi_context ctx[8];
	char in[4][8], env[32];
	unsigned long reaped;

	memset(in, 0, sizeof(in));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, fi_recv(self->e.ep, in[i], 8, NULL, FI_ADDR_UNSPEC, &ctx[i]));
	snprintf(env, sizeof(env), "%p", (void *)&calls);
	ASSERT_EQ(0, setenv("XFI_LOOP_CALLS", env, 1));
	ASSERT_EQ(0, fi_send(self->e.ep, "one", 4, NULL, self->e.self, &ctx[4]));
	ASSERT_EQ(0, fi_send(self->e.ep, "two", 4, NULL, self->e.self, &ctx[5]));
	EXPECT_EQ(2u, calls.sends);
	EXPECT_EQ(at_once ? 2u : 0u, calls.status_reads);
	/* progress: the receives and the sends' outcomes */
	ASSERT_EQ(4, loop_reap(self->e.cq, e, 4, 8));
	reaped = calls.status_reads;
	if (!at_once)
		EXPECT_LT(0u, reaped);
	ASSERT_EQ(0, fi_send(self->e.ep, "three", 6, NULL, self->e.self, &ctx[6]));
	ASSERT_EQ(0, fi_inject(self->e.ep, "four", 5, self->e.self));
	EXPECT_EQ(4u, calls.sends);
	EXPECT_EQ(reaped + (at_once ? 2u : 0u), calls.status_reads);
	EXPECT_EQ(0u, calls.deregs);
	ASSERT_EQ(3, loop_reap(self->e.cq, e, 3, 8));	/* no entry for the inject */
	EXPECT_EQ(0, loop_settle(self->e.cq));
	EXPECT_EQ(0, unsetenv("XFI_LOOP_CALLS"));
	EXPECT_EQ(0, strcmp(in[0], "one"));
	EXPECT_EQ(0, strcmp(in[1], "two"));
	EXPECT_EQ(0, strcmp(in[2], "three"));
	EXPECT_EQ(0, strcmp(in[3], "four"));
	EXPECT_NE(NULL, loop_find(e, 3, &ctx[6]));
}

/* fi_sendmsg / fi_tsendmsg flags: the defined ones work, the others are refused. */
TEST_F(loop, sendmsg_flags)
{
	static const uint64_t accepted[] = { FI_MORE, FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE,
		FI_DELIVERY_COMPLETE, FI_INJECT, FI_REMOTE_CQ_DATA };
	struct fi_cq_tagged_entry e[4];
	struct fi_context ctx[2];
	char payload[40], in[40];
	struct iovec iov = { payload, 8 };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = self->e.self,
			    .context = &ctx[1], .data = 0x1234 };
	struct fi_msg_tagged tm = { .msg_iov = &iov, .iov_count = 1, .addr = self->e.self,
				    .context = &ctx[1], .tag = 5 };

	for (unsigned int i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		const struct fi_cq_tagged_entry *rx;

		memset(payload, 'a' + i, sizeof(payload));
		memset(in, 0, sizeof(in));
		ASSERT_EQ(0, fi_recv(self->e.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &ctx[0]));
		QUIET(0, fi_sendmsg(self->e.ep, &m, accepted[i] | FI_COMPLETION));
		memset(payload, 'X', sizeof(payload));	/* FI_INJECT: reusable at once */
		ASSERT_EQ(2, loop_reap(self->e.cq, e, 2, 4)) TH_LOG("flag %#llx",
							       (unsigned long long)accepted[i]);
		rx = loop_find(e, 2, &ctx[0]);
		ASSERT_NE(NULL, rx);
		EXPECT_EQ(8u, rx->len);
		EXPECT_EQ(accepted[i] == FI_REMOTE_CQ_DATA ? FI_REMOTE_CQ_DATA : 0,
			  rx->flags & FI_REMOTE_CQ_DATA);
		if (accepted[i] == FI_INJECT)
			EXPECT_EQ('a' + (int)i, in[7]);
		EXPECT_NE(NULL, loop_find(e, 2, &ctx[1]));
	}
	iov.iov_len = 33;
	REFUSED(-FI_EMSGSIZE, fi_sendmsg(self->e.ep, &m, FI_INJECT), "inject of 33 bytes");
	iov.iov_len = 8;
	REFUSED(-FI_EBADFLAGS, fi_sendmsg(self->e.ep, &m, FI_FENCE), "fi_sendmsg");
	REFUSED(-FI_EBADFLAGS, fi_sendmsg(self->e.ep, &m, FI_MULTICAST), "fi_sendmsg");
	REFUSED(-FI_EBADFLAGS, fi_sendmsg(self->e.ep, &m, PROVIDER_BIT), "fi_sendmsg");
	REFUSED(-FI_EBADFLAGS, fi_tsendmsg(self->e.ep, &tm, FI_MATCH_COMPLETE), "fi_tsendmsg");
	REFUSED(-FI_EBADFLAGS, fi_tsendmsg(self->e.ep, &tm, FI_FENCE), "fi_tsendmsg");
	REFUSED(-FI_EINVAL, fi_sendmsg(self->e.ep, NULL, 0), "no message");
	REFUSED(-FI_EMSGSIZE, fi_inject(self->e.ep, payload, 33, self->e.self), "inject");
	/* nothing of the refused ones went out */
	ASSERT_EQ(0, fi_recv(self->e.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, &ctx[0]));
	EXPECT_EQ(0, loop_settle(self->e.cq));
	EXPECT_EQ(0, fi_cancel(&self->e.ep->fid, &ctx[0]));
}

/* fi_recvmsg flags; FI_MULTI_RECV: pieces of one buffer, the last says so. */
TEST_F(loop, recvmsg_flags_and_multi_recv)
{
	static char buf[200], msg[50];
	struct fi_cq_tagged_entry e[8];
	struct fi_context ctx;
	struct iovec iov[2] = { { buf, sizeof(buf) }, { msg, 8 } };
	struct fi_msg m = { .msg_iov = iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			    .context = &ctx };
	int sends = 0;

	REFUSED(-FI_EBADFLAGS, fi_recvmsg(self->e.ep, &m, FI_CLAIM), "fi_recvmsg");
	REFUSED(-FI_EBADFLAGS, fi_recvmsg(self->e.ep, &m, FI_DISCARD), "fi_recvmsg");
	REFUSED(-FI_EBADFLAGS, fi_recvmsg(self->e.ep, &m, FI_PEEK), "fi_recvmsg");
	REFUSED(-FI_EBADFLAGS, fi_recvmsg(self->e.ep, &m, PROVIDER_BIT), "fi_recvmsg");
	m.iov_count = 2;
	REFUSED(-FI_EINVAL, fi_recvmsg(self->e.ep, &m, FI_MULTI_RECV), "one untagged buffer");
	m.iov_count = 1;
	ASSERT_EQ(0, fi_recvmsg(self->e.ep, &m, FI_MULTI_RECV));
	for (int i = 0; i < 3; i++) {
		memset(msg, '0' + i, sizeof(msg));
		ASSERT_EQ(0, fi_send(self->e.ep, msg, sizeof(msg), NULL, self->e.self, NULL));
		sends++;
	}
	/* 3 receive pieces and 3 sends; 50 bytes left < 64 (FI_OPT_MIN_MULTI_RECV) */
	ASSERT_EQ(6, loop_reap(self->e.cq, e, 6, 8));
	for (int i = 0, piece = 0; i < 6; i++) {
		if (!(e[i].flags & FI_RECV))
			continue;
		EXPECT_EQ(&ctx, e[i].op_context);
		EXPECT_EQ((void *)(buf + 50 * piece), e[i].buf);
		EXPECT_EQ(50u, e[i].len);
		EXPECT_EQ(piece == 2 ? FI_MULTI_RECV : 0, e[i].flags & FI_MULTI_RECV);
		EXPECT_EQ('0' + piece, buf[50 * piece + 49]);
		piece++;
	}
	EXPECT_EQ(3, sends);
}

/* FI_SELECTIVE_COMPLETION: an entry only with FI_COMPLETION; errors always. */
TEST_F(loop, selective_completion)
{
	struct loop_opts o = { .bind_flags = FI_SELECTIVE_COMPLETION };
	struct fi_cq_tagged_entry e[4];
	struct fi_cq_err_entry err = { 0 };
	struct fi_context ctx[6];
	char in[3][8], two[2];
	struct iovec siov = { "aaaa", 4 }, riov = { in[0], 8 };
	struct fi_msg sm = { .msg_iov = &siov, .iov_count = 1, .context = &ctx[0] };
	struct fi_msg rm = { .msg_iov = &riov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			     .context = &ctx[1] };
	struct loop_ep le;

	ASSERT_EQ(0, loop_ep_open(self, &o, &le));
	sm.addr = le.self;
	ASSERT_EQ(0, fi_recvmsg(le.ep, &rm, FI_COMPLETION));
	ASSERT_EQ(0, fi_recv(le.ep, in[1], 8, NULL, FI_ADDR_UNSPEC, &ctx[2]));
	ASSERT_EQ(0, fi_recvmsg(le.ep, &(struct fi_msg){ .msg_iov = &(struct iovec){ in[2], 8 },
			       .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = &ctx[3] }, 0));
	ASSERT_EQ(0, fi_sendmsg(le.ep, &sm, FI_COMPLETION));
	ASSERT_EQ(0, fi_send(le.ep, "bbbb", 4, NULL, le.self, &ctx[4]));
	sm.context = &ctx[5];
	ASSERT_EQ(0, fi_sendmsg(le.ep, &sm, 0));
	ASSERT_EQ(2, loop_reap(le.cq, e, 2, 4));
	EXPECT_EQ(0, loop_settle(le.cq));
	EXPECT_NE(NULL, loop_find(e, 2, &ctx[0]));
	EXPECT_NE(NULL, loop_find(e, 2, &ctx[1]));
	EXPECT_EQ(0, memcmp(in[1], "bbbb", 4));
	EXPECT_EQ(0, memcmp(in[2], "aaaa", 4));
	/* a truncated receive without FI_COMPLETION still reports its error */
	ASSERT_EQ(0, fi_recv(le.ep, two, 2, NULL, FI_ADDR_UNSPEC, &ctx[2]));
	ASSERT_EQ(0, fi_inject(le.ep, "cccc", 4, le.self));
	EXPECT_EQ(-FI_EAVAIL, loop_reap(le.cq, e, 1, 4));
	ASSERT_EQ(1, fi_cq_readerr(le.cq, &err, 0));
	EXPECT_EQ(FI_ETRUNC, err.err);
	EXPECT_EQ(&ctx[2], err.op_context);
	loop_ep_close(&le);
}

/* ---- fi_tagged(3) ---- */

/* FI_PEEK, FI_CLAIM, FI_DISCARD and their combinations on unexpected messages. */
TEST_F(loop, trecvmsg_peek_claim_discard)
{
	struct fi_cq_tagged_entry e[4];
	struct fi_cq_err_entry err = { 0 };
	struct fi_context pc, cc, dc, rc;
	char in[8] = { 0 };
	struct iovec iov = { in, sizeof(in) };
	struct fi_msg_tagged tm = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC };

	ASSERT_EQ(0, fi_tinject(self->e.ep, "one", 3, self->e.self, 1));
	ASSERT_EQ(0, fi_tsend(self->e.ep, "two", 3, NULL, self->e.self, 2, NULL));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 4));	/* the fi_tsend */

	tm.tag = 1;
	tm.context = &pc;
	QUIET(0, fi_trecvmsg(self->e.ep, &tm, FI_PEEK));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 4));
	EXPECT_EQ(&pc, e[0].op_context);
	EXPECT_EQ(3u, e[0].len);
	EXPECT_EQ(1u, e[0].tag);
	EXPECT_EQ(0, in[0]);	/* a peek moves no data */
	tm.tag = 9;
	ASSERT_EQ(0, fi_trecvmsg(self->e.ep, &tm, FI_PEEK));
	EXPECT_EQ(-FI_EAVAIL, loop_reap(self->e.cq, e, 1, 4));
	ASSERT_EQ(1, fi_cq_readerr(self->e.cq, &err, 0));
	EXPECT_EQ(FI_ENOMSG, err.err);

	/* peek + claim, then claim: the message, and nobody else gets it */
	tm.tag = 1;
	tm.context = &cc;
	ASSERT_EQ(0, fi_trecvmsg(self->e.ep, &tm, FI_PEEK | FI_CLAIM));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 4));
	ASSERT_EQ(0, fi_trecvmsg(self->e.ep, &tm, FI_CLAIM));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 4));
	EXPECT_EQ(&cc, e[0].op_context);
	EXPECT_EQ(0, memcmp(in, "one", 3));
	REFUSED(-FI_EINVAL, fi_trecvmsg(self->e.ep, &tm, FI_CLAIM), "FI_CLAIM of a context");

	/* peek + discard: found, and gone */
	tm.tag = 2;
	tm.context = &dc;
	ASSERT_EQ(0, fi_trecvmsg(self->e.ep, &tm, FI_PEEK | FI_DISCARD));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 4));
	EXPECT_EQ(&dc, e[0].op_context);
	ASSERT_EQ(0, fi_trecv(self->e.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 2, 0, &rc));
	EXPECT_EQ(0, loop_settle(self->e.cq));
	ASSERT_EQ(0, fi_cancel(&self->e.ep->fid, &rc));
	EXPECT_EQ(-FI_EAVAIL, loop_reap(self->e.cq, e, 1, 4));
	ASSERT_EQ(1, fi_cq_readerr(self->e.cq, &err, 0));
	EXPECT_EQ(FI_ECANCELED, err.err);

	/* peek + claim, then claim + discard: completes without data */
	ASSERT_EQ(0, fi_tinject(self->e.ep, "three", 5, self->e.self, 3));
	memset(in, 0, sizeof(in));
	tm.tag = 3;
	tm.context = &cc;
	ASSERT_EQ(0, fi_trecvmsg(self->e.ep, &tm, FI_PEEK | FI_CLAIM));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 4));
	ASSERT_EQ(0, fi_trecvmsg(self->e.ep, &tm, FI_CLAIM | FI_DISCARD));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 4));
	EXPECT_EQ(&cc, e[0].op_context);
	EXPECT_EQ(0, in[0]);

	REFUSED(-FI_EINVAL, fi_trecvmsg(self->e.ep, &tm, FI_DISCARD), "without FI_PEEK");
	REFUSED(-FI_EBADFLAGS, fi_trecvmsg(self->e.ep, &tm, FI_MULTI_RECV), "untagged");
	REFUSED(-FI_EBADFLAGS, fi_trecvmsg(self->e.ep, &tm, 1ULL << 14), "fi_trecvmsg");
	tm.context = NULL;
	REFUSED(-FI_EINVAL, fi_trecvmsg(self->e.ep, &tm, FI_PEEK), "without a context");
}

/* Tag matching with ignore bits, a directed receive, the forms of fi_ops_tagged. */
TEST_F(loop, tagged_forms_ignore_and_directed)
{
	struct fi_cq_tagged_entry e[8];
	struct fi_context ctx[4];
	char in[4][8];
	struct iovec siov[2] = { { "ta", 2 }, { "gv", 2 } };
	const struct fi_cq_tagged_entry *x;

	memset(in, 0, sizeof(in));
	ASSERT_EQ(0, fi_trecv(self->e.ep, in[0], 8, NULL, FI_ADDR_UNSPEC, 0x100, 0xff, &ctx[0]));
	ASSERT_EQ(0, fi_trecv(self->e.ep, in[1], 8, NULL, self->e.self, 0x200, 0, &ctx[1]));
	ASSERT_EQ(0, fi_trecvv(self->e.ep, &(struct iovec){ in[2], 8 }, NULL, 1, FI_ADDR_UNSPEC,
			       0x300, 0, &ctx[2]));
	ASSERT_EQ(0, fi_trecv(self->e.ep, in[3], 8, NULL, FI_ADDR_UNSPEC, 0x400, 0, &ctx[3]));
	ASSERT_EQ(0, fi_tinjectdata(self->e.ep, "d4", 2, 0x44, self->e.self, 0x400));
	ASSERT_EQ(0, fi_tsendv(self->e.ep, siov, NULL, 2, self->e.self, 0x300, NULL));
	ASSERT_EQ(0, fi_tsenddata(self->e.ep, "d2", 2, NULL, 0x22, self->e.self, 0x200, NULL));
	ASSERT_EQ(0, fi_tinject(self->e.ep, "w", 1, self->e.self, 0x1ab));
	ASSERT_EQ(6, loop_reap(self->e.cq, e, 6, 8));
	x = loop_find(e, 6, &ctx[0]);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(0x1abu, x->tag);
	EXPECT_EQ('w', in[0][0]);
	x = loop_find(e, 6, &ctx[1]);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(0x22u, x->data);
	EXPECT_EQ(0, memcmp(in[2], "tagv", 4));
	x = loop_find(e, 6, &ctx[3]);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA, x->flags);
	EXPECT_EQ(0x44u, x->data);
	REFUSED(-FI_EINVAL, fi_trecv(self->e.ep, in[0], 8, NULL, 77, 1, 0, &ctx[0]),
		"no such source");
}

/* An unknown address or an endpoint not enabled: one warn line per refusal. */
TEST_F(loop, refusals_log_one_line)
{
	struct fid_ep *ep;
	static uint64_t target;
	struct fid_mr *mr;

	ASSERT_EQ(0, fi_mr_reg(self->domain, &target, 8, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	REFUSED(-FI_EINVAL, fi_send(self->e.ep, "x", 1, NULL, 77, NULL), "no such peer");
	REFUSED(-FI_EINVAL, fi_tinject(self->e.ep, "x", 1, 77, 1), "no such peer");
	REFUSED(-FI_EINVAL, fi_write(self->e.ep, "x", 1, NULL, 77, (uintptr_t)&target,
				     fi_mr_key(mr), NULL), "no such peer");
	REFUSED(-FI_EINVAL, fi_atomic(self->e.ep, &target, 1, NULL, 77, (uintptr_t)&target,
				      fi_mr_key(mr), FI_UINT64, FI_SUM, NULL), "no such peer");
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	REFUSED(-FI_EOPBADSTATE, fi_send(ep, "x", 1, NULL, 0, NULL), "not enabled");
	REFUSED(-FI_EOPBADSTATE, fi_recv(ep, (char[4]){ 0 }, 4, NULL, 0, NULL), "not enabled");
	REFUSED(-FI_EOPBADSTATE, fi_write(ep, "x", 1, NULL, 0, (uintptr_t)&target,
					  fi_mr_key(mr), NULL), "not enabled");
	fi_close(&ep->fid);
	fi_close(&mr->fid);
}

/* ---- fi_rma(3) ---- */

TEST_F(loop, rma_every_form)
{
	static char tgt[64], src[64], dst[64];
	struct fi_cq_tagged_entry e[8];
	struct fi_context ctx[8];
	struct fid_mr *tmr, *smr;
	uint64_t key;
	void *desc;
	struct iovec iov = { src + 32, 8 };
	struct fi_rma_iov riov = { .len = 8 };
	struct fi_msg_rma m = { .msg_iov = &iov, .iov_count = 1, .rma_iov = &riov,
				.rma_iov_count = 1, .context = &ctx[3] };
	const struct fi_cq_tagged_entry *x;

	ASSERT_EQ(0, fi_mr_reg(self->domain, tgt, sizeof(tgt), FI_REMOTE_READ | FI_REMOTE_WRITE,
			       0, 0, 0, &tmr, NULL));
	ASSERT_EQ(0, fi_mr_reg(self->domain, src, sizeof(src), FI_READ | FI_WRITE, 0, 0, 0, &smr,
			       NULL));
	key = fi_mr_key(tmr);
	desc = fi_mr_desc(smr);
	for (int i = 0; i < 64; i++)
		src[i] = (char)(i + 1);
	m.addr = self->e.self;
	riov.addr = (uintptr_t)(tgt + 32);
	riov.key = key;
	ASSERT_EQ(0, fi_write(self->e.ep, src, 8, desc, self->e.self, (uintptr_t)tgt, key,
			      &ctx[0]));
	ASSERT_EQ(0, fi_writev(self->e.ep, &(struct iovec){ src + 8, 8 }, &desc, 1, self->e.self,
			       (uintptr_t)(tgt + 8), key, &ctx[1]));
	ASSERT_EQ(0, fi_writedata(self->e.ep, src + 16, 8, NULL, 0x77, self->e.self,
				  (uintptr_t)(tgt + 16), key, &ctx[2]));
	ASSERT_EQ(0, fi_writemsg(self->e.ep, &m, FI_COMPLETION | FI_DELIVERY_COMPLETE | FI_MORE));
	ASSERT_EQ(5, loop_reap(self->e.cq, e, 5, 8));	/* 4 writes + the CQ data's entry */
	EXPECT_EQ(0, memcmp(tgt, src, 24));
	EXPECT_EQ(0, memcmp(tgt + 32, src + 32, 8));
	for (int i = 0; i < 4; i++) {
		x = loop_find(e, 5, &ctx[i]);
		ASSERT_NE(NULL, x) TH_LOG("write %d", i);
		EXPECT_EQ(FI_RMA | FI_WRITE, x->flags);
	}
	x = loop_find(e, 5, NULL);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, x->flags);
	EXPECT_EQ(0x77u, x->data);

	/* inject: from a copy, without a completion */
	memset(src + 48, 0x5a, 8);
	ASSERT_EQ(0, fi_inject_write(self->e.ep, src + 48, 8, self->e.self, (uintptr_t)(tgt + 48),
				     key));
	memset(src + 48, 0, 8);
	EXPECT_EQ(0, loop_settle(self->e.cq));
	EXPECT_EQ(0x5a, tgt[55]);

	/* reads: plain, vector, message (no local descriptor: the MR cache) */
	ASSERT_EQ(0, fi_read(self->e.ep, dst, 8, NULL, self->e.self, (uintptr_t)tgt, key, &ctx[4]));
	ASSERT_EQ(0, fi_readv(self->e.ep, &(struct iovec){ dst + 8, 8 }, NULL, 1, self->e.self,
			      (uintptr_t)(tgt + 8), key, &ctx[5]));
	iov.iov_base = dst + 16;
	riov.addr = (uintptr_t)(tgt + 16);
	m.context = &ctx[6];
	ASSERT_EQ(0, fi_readmsg(self->e.ep, &m, FI_COMPLETION | FI_TRANSMIT_COMPLETE));
	ASSERT_EQ(3, loop_reap(self->e.cq, e, 3, 8));
	EXPECT_EQ(0, memcmp(dst, src, 24));
	x = loop_find(e, 3, &ctx[6]);
	ASSERT_NE(NULL, x);
	EXPECT_EQ(FI_RMA | FI_READ, x->flags);
	fi_close(&smr->fid);
	fi_close(&tmr->fid);
}

TEST_F(loop, rma_msg_flags_and_errors)
{
	static char tgt[16], unreg[16], src[16] = "0123456789abcdef";
	struct fi_cq_tagged_entry e[2];
	struct fi_cq_err_entry err = { 0 };
	struct fid_mr *tmr;
	struct fi_context ctx;
	struct iovec iov[2] = { { src, 8 }, { src + 8, 8 } };
	struct fi_rma_iov riov = { .len = 8 };
	struct fi_msg_rma m = { .msg_iov = iov, .iov_count = 1, .rma_iov = &riov,
				.rma_iov_count = 1, .context = &ctx };

	ASSERT_EQ(0, fi_mr_reg(self->domain, tgt, sizeof(tgt), FI_REMOTE_READ | FI_REMOTE_WRITE,
			       0, 0, 0, &tmr, NULL));
	m.addr = self->e.self;
	riov.addr = (uintptr_t)tgt;
	riov.key = fi_mr_key(tmr);
	REFUSED(-FI_EBADFLAGS, fi_writemsg(self->e.ep, &m, FI_FENCE), "fi_writemsg");
	REFUSED(-FI_EBADFLAGS, fi_writemsg(self->e.ep, &m, FI_COMMIT_COMPLETE), "fi_writemsg");
	REFUSED(-FI_EBADFLAGS, fi_writemsg(self->e.ep, &m, PROVIDER_BIT), "fi_writemsg");
	REFUSED(-FI_EBADFLAGS, fi_readmsg(self->e.ep, &m, FI_INJECT), "fi_readmsg");
	REFUSED(-FI_EBADFLAGS, fi_readmsg(self->e.ep, &m, FI_REMOTE_CQ_DATA), "fi_readmsg");
	m.iov_count = 2;
	REFUSED(-FI_EINVAL, fi_writemsg(self->e.ep, &m, 0), "one local and one remote");
	REFUSED(-FI_EINVAL, fi_writev(self->e.ep, iov, NULL, 2, self->e.self, (uintptr_t)tgt,
				      riov.key, &ctx), "rma_iov_limit");
	REFUSED(-FI_EMSGSIZE, fi_inject_write(self->e.ep, src, 33, self->e.self, (uintptr_t)tgt,
					      riov.key), "FI_INJECT");
	EXPECT_EQ(0, loop_settle(self->e.cq));
	EXPECT_EQ(0, tgt[0]);	/* none of them wrote */
	/* FI_INJECT on fi_writemsg: a copy, and a completion as asked */
	m.iov_count = 1;
	ASSERT_EQ(0, fi_writemsg(self->e.ep, &m, FI_INJECT | FI_COMPLETION));
	src[0] = 'X';
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 2));
	EXPECT_EQ('0', tgt[0]);
	/* memory nobody registered: an error completion, nothing written */
	ASSERT_EQ(0, fi_write(self->e.ep, src, 8, NULL, self->e.self, (uintptr_t)unreg,
			      riov.key, &ctx));
	EXPECT_EQ(-FI_EAVAIL, loop_reap(self->e.cq, e, 1, 2));
	ASSERT_EQ(1, fi_cq_readerr(self->e.cq, &err, 0));
	EXPECT_EQ(FI_EFAULT, err.err);
	EXPECT_EQ(FI_RMA | FI_WRITE, err.flags);
	EXPECT_EQ(0, unreg[0]);
	fi_close(&tmr->fid);
}

/* The RDMA engine's slots run out: -FI_EAGAIN (flow control, not logged). */
TEST_F(loop, rma_slots_exhausted_is_eagain)
{
	static char tgt[16], src[16] = "abcdefgh";
	struct fi_cq_tagged_entry e[2];
	struct fid_mr *tmr;

	setenv("XFI_LOOP_RDMA_SLOTS", "1", 1);	/* read when the domain takes its page */
	ASSERT_EQ(0, fi_mr_reg(self->domain, tgt, sizeof(tgt), FI_REMOTE_WRITE, 0, 0, 0, &tmr,
			       NULL));
	ASSERT_EQ(0, fi_write(self->e.ep, src, 8, NULL, self->e.self, (uintptr_t)tgt,
			      fi_mr_key(tmr), NULL));
	QUIET(-FI_EAGAIN, fi_write(self->e.ep, src, 8, NULL, self->e.self, (uintptr_t)(tgt + 8),
				   fi_mr_key(tmr), NULL));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 2));
	ASSERT_EQ(0, fi_write(self->e.ep, src, 8, NULL, self->e.self, (uintptr_t)(tgt + 8),
			      fi_mr_key(tmr), NULL));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 2));
	EXPECT_EQ(0, memcmp(tgt + 8, "abcdefgh", 8));
	fi_close(&tmr->fid);
	unsetenv("XFI_LOOP_RDMA_SLOTS");
}

/* ---- fi_atomic(3) ---- */

TEST_F(loop, atomic_every_form)
{
	static uint64_t target = 5;
	uint64_t v, cmp, res = 0;
	struct fi_cq_tagged_entry e[4];
	struct fi_context ctx[4];
	struct fid_mr *mr;
	uint64_t key;
	size_t count = 0;

	ASSERT_EQ(0, fi_mr_reg(self->domain, &target, sizeof(target),
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	key = fi_mr_key(mr);
	EXPECT_EQ(0, fi_atomicvalid(self->e.ep, FI_UINT64, FI_SUM, &count));
	EXPECT_EQ(4u, count);	/* 32 bytes of operands */
	v = 3;
	ASSERT_EQ(0, fi_atomic(self->e.ep, &v, 1, NULL, self->e.self, (uintptr_t)&target, key,
			       FI_UINT64, FI_SUM, &ctx[0]));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 4));
	EXPECT_EQ(FI_ATOMIC | FI_WRITE, e[0].flags);
	EXPECT_EQ(8u, target);
	v = 2;
	ASSERT_EQ(0, fi_fetch_atomic(self->e.ep, &v, 1, NULL, &res, NULL, self->e.self,
				     (uintptr_t)&target, key, FI_UINT64, FI_SUM, &ctx[1]));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 4));
	EXPECT_EQ(FI_ATOMIC | FI_READ, e[0].flags);
	EXPECT_EQ(8u, res);
	EXPECT_EQ(10u, target);
	v = 99;
	cmp = 10;
	ASSERT_EQ(0, fi_compare_atomic(self->e.ep, &v, 1, NULL, &cmp, NULL, &res, NULL,
				       self->e.self, (uintptr_t)&target, key, FI_UINT64, FI_CSWAP,
				       &ctx[2]));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 4));
	EXPECT_EQ(10u, res);
	EXPECT_EQ(99u, target);
	v = 1;
	ASSERT_EQ(0, fi_inject_atomic(self->e.ep, &v, 1, self->e.self, (uintptr_t)&target, key,
				      FI_UINT64, FI_SUM));
	v = 1000;	/* the operand was copied */
	EXPECT_EQ(0, loop_settle(self->e.cq));
	EXPECT_EQ(100u, target);
	fi_close(&mr->fid);
}

TEST_F(loop, atomic_msg_flags_query_and_errors)
{
	static uint64_t target = 1, unreg;
	uint64_t v = 1, res = 0;
	struct fi_cq_tagged_entry e[2];
	struct fi_cq_err_entry err = { 0 };
	struct fi_context ctx;
	struct fid_mr *mr;
	struct fi_ioc ioc = { &v, 1 }, rioc = { &res, 1 };
	struct fi_rma_ioc rma = { .count = 1 };
	struct fi_msg_atomic m = { .msg_iov = &ioc, .iov_count = 1, .rma_iov = &rma,
				   .rma_iov_count = 1, .datatype = FI_UINT64, .op = FI_SUM,
				   .context = &ctx };
	struct fi_atomic_attr attr;

	ASSERT_EQ(0, fi_mr_reg(self->domain, &target, sizeof(target),
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	m.addr = self->e.self;
	rma.addr = (uintptr_t)&target;
	rma.key = fi_mr_key(mr);
	QUIET(0, fi_atomicmsg(self->e.ep, &m, FI_COMPLETION | FI_DELIVERY_COMPLETE | FI_MORE));
	ASSERT_EQ(1, loop_reap(self->e.cq, e, 1, 2));
	EXPECT_EQ(2u, target);
	REFUSED(-FI_EBADFLAGS, fi_atomicmsg(self->e.ep, &m, FI_FENCE), "atomic message");
	REFUSED(-FI_EBADFLAGS, fi_atomicmsg(self->e.ep, &m, FI_REMOTE_CQ_DATA), "atomic message");
	REFUSED(-FI_EBADFLAGS, fi_atomicmsg(self->e.ep, &m, FI_TAGGED), "atomic message");
	REFUSED(-FI_EBADFLAGS, fi_fetch_atomicmsg(self->e.ep, &m, &rioc, NULL, 1, FI_INJECT),
		"atomic message");
	REFUSED(-FI_EBADFLAGS, fi_query_atomic(self->domain, FI_UINT64, FI_SUM, &attr, FI_TAGGED),
		"fi_query_atomic");
	REFUSED(-FI_EINVAL, fi_query_atomic(self->domain, FI_UINT64, FI_SUM, &attr,
					    FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC), "together");
	QUIET(-FI_EOPNOTSUPP, fi_query_atomic(self->domain, FI_FLOAT, FI_BAND, &attr, 0));
	QUIET(0, fi_query_atomic(self->domain, FI_UINT64, FI_CSWAP, &attr, FI_COMPARE_ATOMIC));
	EXPECT_EQ(8u, attr.size);
	REFUSED(-FI_EINVAL, fi_atomic(self->e.ep, &v, 0, NULL, self->e.self, rma.addr, rma.key,
				      FI_UINT64, FI_SUM, NULL), "values");
	REFUSED(-FI_EOPNOTSUPP, fi_atomic(self->e.ep, &v, 1, NULL, self->e.self, rma.addr,
					  rma.key, FI_FLOAT, FI_BAND, NULL), "not supported");
	EXPECT_EQ(0, loop_settle(self->e.cq));
	EXPECT_EQ(2u, target);
	/* memory nobody registered: an error completion, nothing changed */
	rma.addr = (uintptr_t)&unreg;
	ASSERT_EQ(0, fi_atomicmsg(self->e.ep, &m, FI_COMPLETION));
	EXPECT_EQ(-FI_EAVAIL, loop_reap(self->e.cq, e, 1, 2));
	ASSERT_EQ(1, fi_cq_readerr(self->e.cq, &err, 0));
	EXPECT_EQ(FI_EACCES, err.err);
	EXPECT_EQ(&ctx, err.op_context);
	EXPECT_EQ(0u, unreg);
	fi_close(&mr->fid);
}

TEST_HARNESS_MAIN
