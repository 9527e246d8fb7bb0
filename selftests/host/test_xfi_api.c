// SPDX-License-Identifier: GPL-2.0
/*
 * The provider's control calls against the libfabric 1.17 man pages,
 * through Debian's libfabric, on the loopback NIC (xfi_loop_test.h):
 * fi_av(3), fi_cq(3), fi_cntr(3), fi_mr(3), fi_endpoint(3).  Each flag or
 * attribute the man page defines is accepted with its effect, or refused
 * with the code Documentation/exanet/libfabric.md ("Flags and calls")
 * gives, and every refusal logs one warn line saying what.  The data
 * calls: test_xfi_xfer.c.
 */
#include "xfi_loop_test.h"

/* ---- fi_av(3) ---- */

TEST_F(loop, av_open_types_and_flags)
{
	struct fi_av_attr attr = { .type = FI_AV_UNSPEC };
	struct fid_av *av;

	ASSERT_EQ(0, fi_av_open(self->domain, &attr, &av, NULL));
	EXPECT_EQ(FI_AV_TABLE, attr.type);	/* the provider's choice, written back */
	fi_close(&av->fid);
	attr = (struct fi_av_attr){ .type = FI_AV_MAP, .flags = FI_SYMMETRIC };
	ASSERT_EQ(0, fi_av_open(self->domain, &attr, &av, NULL));
	fi_close(&av->fid);
	attr = (struct fi_av_attr){ .type = 7 };
	REFUSED(-FI_EINVAL, fi_av_open(self->domain, &attr, &av, NULL), "type 7");
	attr = (struct fi_av_attr){ .type = FI_AV_TABLE, .flags = FI_EVENT };
	REFUSED(-FI_ENOSYS, fi_av_open(self->domain, &attr, &av, NULL), "FI_EVENT");
	attr.flags = FI_READ;
	REFUSED(-FI_ENOSYS, fi_av_open(self->domain, &attr, &av, NULL), "not supported");
	attr.flags = 1ULL << 14;	/* no flag of fi_av_open */
	REFUSED(-FI_EBADFLAGS, fi_av_open(self->domain, &attr, &av, NULL), "unknown");
	attr = (struct fi_av_attr){ .type = FI_AV_TABLE, .name = "shared" };
	REFUSED(-FI_ENOSYS, fi_av_open(self->domain, &attr, &av, NULL), "shared");
}

/* FI_MORE: inserted at once all the same; FI_SYNC_ERR: one status per address. */
TEST_F(loop, av_insert_flags)
{
	uint8_t addr[2][8], back[8];
	fi_addr_t fa[2];
	size_t len = sizeof(addr[0]), blen = sizeof(back);
	int errs[2] = { -1, -1 };

	ASSERT_EQ(0, fi_getname(&self->e.ep->fid, addr[0], &len));
	QUIET(1, fi_av_insert(self->e.av, addr[0], 1, fa, FI_MORE, NULL));
	ASSERT_EQ(0, fi_av_lookup(self->e.av, fa[0], back, &blen));
	EXPECT_EQ(0, memcmp(back, addr[0], sizeof(back)));

	memset(addr[1], 0xee, sizeof(addr[1]));	/* no address of this fabric */
	EXPECT_EQ(1, fi_av_insert(self->e.av, addr, 2, fa, FI_SYNC_ERR, errs));
	EXPECT_EQ(0, errs[0]);
	EXPECT_EQ(FI_EINVAL, errs[1]);
	EXPECT_EQ(FI_ADDR_NOTAVAIL, fa[1]);
	REFUSED(-FI_EINVAL, fi_av_insert(self->e.av, addr, 1, fa, FI_SYNC_ERR, NULL),
		"error array");
	REFUSED(-FI_EBADFLAGS, fi_av_insert(self->e.av, addr, 1, fa, FI_AV_USER_ID, NULL),
		"FI_MORE and FI_SYNC_ERR");
	REFUSED(-FI_EBADFLAGS, fi_av_insert(self->e.av, addr, 1, fa, 1ULL << 14, NULL),
		"FI_MORE and FI_SYNC_ERR");
}

TEST_F(loop, av_remove_lookup_straddr_and_unsupported)
{
	uint8_t addr[8], back[8];
	size_t len = sizeof(addr), blen = 4;
	char str[64];
	size_t slen = sizeof(str);
	fi_addr_t fa, map_fa;
	struct fi_av_attr attr = { .type = FI_AV_MAP };
	struct fid_av *map;

	ASSERT_EQ(0, fi_getname(&self->e.ep->fid, addr, &len));
	ASSERT_EQ(1, fi_av_insert(self->e.av, addr, 1, &fa, 0, NULL));
	/* a short buffer gets the start, and the length it needs */
	memset(back, 0, sizeof(back));
	EXPECT_EQ(0, fi_av_lookup(self->e.av, fa, back, &blen));
	EXPECT_EQ(8u, blen);
	EXPECT_EQ(0, memcmp(back, addr, 4));
	EXPECT_EQ(0, back[4]);
	EXPECT_NE(NULL, fi_av_straddr(self->e.av, addr, str, &slen));
	EXPECT_EQ(0, strncmp(str, variant->prov, strlen(variant->prov)));
	EXPECT_NE(NULL, strstr(str, "://node0/mbox"));

	REFUSED(-FI_EBADFLAGS, fi_av_remove(self->e.av, &fa, 1, FI_MORE), "none are defined");
	QUIET(0, fi_av_remove(self->e.av, &fa, 1, 0));
	blen = sizeof(back);
	REFUSED(-FI_EINVAL, fi_av_lookup(self->e.av, fa, back, &blen), "no address");
	REFUSED(-FI_EINVAL, fi_av_remove(self->e.av, &fa, 1, 0), "not in the address vector");

	/* FI_AV_MAP: the address is its own fi_addr_t */
	ASSERT_EQ(0, fi_av_open(self->domain, &attr, &map, NULL));
	ASSERT_EQ(1, fi_av_insert(map, addr, 1, &map_fa, 0, NULL));
	blen = sizeof(back);
	EXPECT_EQ(0, fi_av_lookup(map, map_fa, back, &blen));
	EXPECT_EQ(0, memcmp(back, addr, sizeof(addr)));
	REFUSED(-FI_EINVAL, fi_av_lookup(map, FI_ADDR_NOTAVAIL, back, &blen), "FI_AV_MAP");
	fi_close(&map->fid);

	REFUSED(-FI_ENOSYS, fi_av_insertsvc(self->e.av, "node0", "1", &fa, 0, NULL),
		"fi_av_insertsvc");
	REFUSED(-FI_ENOSYS, fi_av_insertsym(self->e.av, "node", 1, "1", 1, &fa, 0, NULL),
		"fi_av_insertsym");
	REFUSED(-FI_ENOSYS, fi_av_bind(self->e.av, &self->domain->fid, 0), "fi_bind");
	REFUSED(-FI_EBUSY, fi_close(&self->e.av->fid), "endpoints still use");
}

/* ---- fi_cq(3) ---- */

TEST_F(loop, cq_open_attributes)
{
	static const enum fi_cq_format formats[] = { FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
		FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED };
	struct fi_cq_attr attr = { 0 };
	struct fid_cq *cq;

	for (unsigned int i = 0; i < 4; i++) {
		attr = (struct fi_cq_attr){ .format = formats[i], .wait_obj = FI_WAIT_NONE };
		ASSERT_EQ(0, fi_cq_open(self->domain, &attr, &cq, NULL));
		fi_close(&cq->fid);
	}
	attr = (struct fi_cq_attr){ .format = FI_CQ_FORMAT_UNSPEC };
	ASSERT_EQ(0, fi_cq_open(self->domain, &attr, &cq, NULL));
	EXPECT_EQ(FI_CQ_FORMAT_TAGGED, attr.format);
	fi_close(&cq->fid);
	attr = (struct fi_cq_attr){ .format = 42 };
	REFUSED(-FI_ENOSYS, fi_cq_open(self->domain, &attr, &cq, NULL), "format 42");
	attr = (struct fi_cq_attr){ .wait_obj = FI_WAIT_FD };
	REFUSED(-FI_ENOSYS, fi_cq_open(self->domain, &attr, &cq, NULL), "wait object");
	attr = (struct fi_cq_attr){ .flags = FI_AFFINITY };
	REFUSED(-FI_ENOSYS, fi_cq_open(self->domain, &attr, &cq, NULL), "FI_AFFINITY");
	attr = (struct fi_cq_attr){ .flags = FI_MORE };
	REFUSED(-FI_EBADFLAGS, fi_cq_open(self->domain, &attr, &cq, NULL), "unknown");
	attr = (struct fi_cq_attr){ .wait_cond = 9 };
	REFUSED(-FI_EINVAL, fi_cq_open(self->domain, &attr, &cq, NULL), "wait condition");
	REFUSED(-FI_EBUSY, fi_close(&self->e.cq->fid), "endpoints still use");
}

/* Each format carries what it defines: context, flags and length, data, tag. */
TEST_F(loop, cq_formats_fill_their_entries)
{
	static const enum fi_cq_format formats[] = { FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
		FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED };
	char msg[16] = "fourteen bytes", in[16];
	struct fi_context ctx[2];

	for (unsigned int i = 0; i < 4; i++) {
		struct loop_opts o = { .format = formats[i] };
		struct fi_cq_tagged_entry e[2];
		struct fi_cq_tagged_entry *rx = NULL;
		struct loop_ep le;
		int got = 0;

		ASSERT_EQ(0, loop_ep_open(self, &o, &le));
		memset(e, 0, sizeof(e));
		ASSERT_EQ(0, fi_trecv(le.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 7, 0, &ctx[0]));
		ASSERT_EQ(0, fi_tsenddata(le.ep, msg, 14, NULL, 0xd00d, le.self, 7, &ctx[1]));
		for (int polls = 0; polls < 100000 && got < 2; polls++) {
			/* read one entry at a time into slot got, in the CQ's own layout */
			ssize_t n = fi_cq_read(le.cq, &e[got], 1);

			if (n == 1)
				got++;
		}
		ASSERT_EQ(2, got);
		for (int k = 0; k < 2; k++)
			if (e[k].op_context == &ctx[0])
				rx = &e[k];
		ASSERT_NE(NULL, rx) TH_LOG("format %d", (int)formats[i]);
		if (formats[i] >= FI_CQ_FORMAT_MSG) {
			EXPECT_EQ(FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA, rx->flags);
			EXPECT_EQ(14u, rx->len);
		}
		if (formats[i] >= FI_CQ_FORMAT_DATA) {
			EXPECT_EQ((void *)in, rx->buf);
			EXPECT_EQ(0xd00du, rx->data);
		}
		if (formats[i] == FI_CQ_FORMAT_TAGGED)
			EXPECT_EQ(7u, rx->tag);
		EXPECT_EQ(0, memcmp(in, msg, 14));
		loop_ep_close(&le);
	}
}

/* fi_cq_readfrom: the sender's address of a receive; fi_cq_readerr: its flags. */
TEST_F(loop, cq_readfrom_and_readerr)
{
	struct fi_cq_tagged_entry e[2];
	struct fi_cq_err_entry err = { 0 };
	fi_addr_t src[2];
	char in[4], msg[10] = "123456789";
	struct fi_context ctx[2];
	int got = 0;

	ASSERT_EQ(0, fi_trecv(self->e.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 1, 0, &ctx[0]));
	ASSERT_EQ(0, fi_tsend(self->e.ep, msg, 3, NULL, self->e.self, 1, &ctx[1]));
	for (int polls = 0; polls < 100000 && got < 2; polls++) {
		ssize_t n = fi_cq_readfrom(self->e.cq, &e[got], 1, &src[got]);

		if (n == 1)
			got++;
	}
	ASSERT_EQ(2, got);
	for (int k = 0; k < 2; k++)
		EXPECT_EQ(e[k].op_context == &ctx[0] ? self->e.self : FI_ADDR_NOTAVAIL, src[k]);

	/* a truncated receive is an error entry: -FI_EAVAIL until read */
	ASSERT_EQ(0, fi_trecv(self->e.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 2, 0, &ctx[0]));
	ASSERT_EQ(0, fi_tsend(self->e.ep, msg, 9, NULL, self->e.self, 2, &ctx[1]));
	EXPECT_EQ(-FI_EAVAIL, loop_reap(self->e.cq, e, 2, 2));
	QUIET(-FI_EAVAIL, fi_cq_read(self->e.cq, e, 2));
	REFUSED(-FI_EBADFLAGS, fi_cq_readerr(self->e.cq, &err, FI_MORE), "none are defined");
	ASSERT_EQ(1, fi_cq_readerr(self->e.cq, &err, 0));
	EXPECT_EQ(FI_ETRUNC, err.err);
	EXPECT_EQ(&ctx[0], err.op_context);
	EXPECT_EQ(5u, err.olen);
	EXPECT_EQ(0, memcmp(in, msg, 4));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_readerr(self->e.cq, &err, 0));
	EXPECT_EQ(1, loop_reap(self->e.cq, e, 1, 2));	/* the send */
	EXPECT_EQ(&ctx[1], e[0].op_context);
	REFUSED(-FI_EINVAL, fi_cq_readerr(self->e.cq, NULL, 0), "no buffer");
}

/* fi_cq_sread: timeout, fi_cq_signal, and FI_CQ_COND_THRESHOLD's count. */
TEST_F(loop, cq_sread_signal_and_threshold)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC,
				   .wait_cond = FI_CQ_COND_THRESHOLD };
	struct fi_cq_tagged_entry e[8];
	struct fid_cq *rxcq, *txcq;
	struct fid_ep *ep;
	struct fid_av *av;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	char addr[8], in[3][4];
	size_t len = sizeof(addr), three = 3;
	fi_addr_t self_fa;
	struct timespec t0, t1;

	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	ASSERT_EQ(0, fi_av_open(self->domain, &av_attr, &av, NULL));
	ASSERT_EQ(0, fi_cq_open(self->domain, &attr, &rxcq, NULL));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(rxcq, e, 1, NULL, 10));
	EXPECT_EQ(0, fi_cq_signal(rxcq));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(rxcq, e, 1, NULL, 10000));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_GT(2, t1.tv_sec - t0.tv_sec);	/* woken, not timed out */

	attr.wait_cond = FI_CQ_COND_NONE;
	ASSERT_EQ(0, fi_cq_open(self->domain, &attr, &txcq, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &rxcq->fid, FI_RECV));
	ASSERT_EQ(0, fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
	ASSERT_EQ(0, fi_enable(ep));
	ASSERT_EQ(0, fi_getname(&ep->fid, addr, &len));
	ASSERT_EQ(1, fi_av_insert(av, addr, 1, &self_fa, 0, NULL));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, fi_recv(ep, in[i], 4, NULL, FI_ADDR_UNSPEC, NULL));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, fi_inject(ep, "abc", 3, self_fa));
	/* two receives complete, the threshold is three: the wait times out */
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(rxcq, e, 8, &three, 50));
	ASSERT_EQ(0, fi_inject(ep, "abc", 3, self_fa));
	EXPECT_EQ(3, fi_cq_sread(rxcq, e, 8, &three, 5000));
	fi_close(&ep->fid);
	fi_close(&txcq->fid);
	fi_close(&rxcq->fid);
	fi_close(&av->fid);
}

/* ---- fi_cntr(3) ---- */

TEST_F(loop, cntr_open_bind_and_count)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_cntr_attr none = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
	struct fid_cntr *tx, *rx, *nw;
	struct fid_ep *ep;
	char in[2][8];

	attr.flags = FI_MORE;
	REFUSED(-FI_EBADFLAGS, fi_cntr_open(self->domain, &attr, &tx, NULL), "flags");
	attr.flags = 0;
	attr.events = 5;
	REFUSED(-FI_ENOSYS, fi_cntr_open(self->domain, &attr, &tx, NULL), "events 5");
	attr = (struct fi_cntr_attr){ .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_FD };
	REFUSED(-FI_ENOSYS, fi_cntr_open(self->domain, &attr, &tx, NULL), "wait object");
	attr.wait_obj = FI_WAIT_UNSPEC;
	ASSERT_EQ(0, fi_cntr_open(self->domain, &attr, &tx, NULL));
	ASSERT_EQ(0, fi_cntr_open(self->domain, &attr, &rx, NULL));
	ASSERT_EQ(0, fi_cntr_open(self->domain, &none, &nw, NULL));
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	/* remote counters need FI_RMA_EVENT, which the providers do not offer */
	REFUSED(-FI_EOPNOTSUPP, fi_ep_bind(ep, &tx->fid, FI_REMOTE_WRITE), "FI_RMA_EVENT");
	REFUSED(-FI_EBADFLAGS, fi_ep_bind(ep, &tx->fid, FI_SEND | FI_MORE), "counter flags");
	REFUSED(-FI_EINVAL, fi_ep_bind(ep, &tx->fid, 0), "no operation");
	fi_close(&ep->fid);
	REFUSED(-FI_EINVAL, fi_cntr_wait(nw, 1, 0), "FI_WAIT_NONE");

	/* the fixture's endpoint sends to itself: two sends, two receives */
	ASSERT_EQ(0, fi_close(&self->e.ep->fid));
	self->e.ep = NULL;
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &self->e.ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(self->e.ep, &self->e.av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(self->e.ep, &tx->fid, FI_SEND));
	ASSERT_EQ(0, fi_ep_bind(self->e.ep, &rx->fid, FI_RECV));
	REFUSED(-FI_EINVAL, fi_ep_bind(self->e.ep, &nw->fid, FI_SEND), "has a counter");
	ASSERT_EQ(0, fi_enable(self->e.ep));	/* counters only: no CQ needed */
	{
		char addr[8];
		size_t len = sizeof(addr);

		ASSERT_EQ(0, fi_getname(&self->e.ep->fid, addr, &len));
		ASSERT_EQ(1, fi_av_insert(self->e.av, addr, 1, &self->e.self, 0, NULL));
	}
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, fi_recv(self->e.ep, in[i], 8, NULL, FI_ADDR_UNSPEC, NULL));
	ASSERT_EQ(0, fi_send(self->e.ep, "a", 1, NULL, self->e.self, NULL));
	ASSERT_EQ(0, fi_inject(self->e.ep, "b", 1, self->e.self));
	EXPECT_EQ(0, fi_cntr_wait(rx, 2, 5000));
	EXPECT_EQ(0, fi_cntr_wait(tx, 2, 5000));
	EXPECT_EQ(2u, fi_cntr_read(tx));
	EXPECT_EQ(2u, fi_cntr_read(rx));
	EXPECT_EQ(0u, fi_cntr_readerr(rx));
	EXPECT_EQ(-FI_ETIMEDOUT, fi_cntr_wait(rx, 3, 10));
	EXPECT_EQ(0, fi_cntr_add(rx, 5));
	EXPECT_EQ(7u, fi_cntr_read(rx));
	EXPECT_EQ(0, fi_cntr_set(rx, 1));
	EXPECT_EQ(1u, fi_cntr_read(rx));
	REFUSED(-FI_EBUSY, fi_close(&tx->fid), "still use the counter");
	fi_close(&self->e.ep->fid);
	self->e.ep = NULL;
	fi_close(&tx->fid);
	fi_close(&rx->fid);
	fi_close(&nw->fid);
}

/* ---- fi_mr(3) ---- */

TEST_F(loop, mr_reg_flags_access_and_segments)
{
	static char buf[4096], other[64];
	struct iovec iov[2] = { { buf, 64 }, { other, 64 } };
	struct fi_mr_attr attr = { .mr_iov = iov, .iov_count = 1, .access = FI_REMOTE_READ };
	struct fid_mr *mr;

	ASSERT_EQ(0, fi_mr_reg(self->domain, buf, sizeof(buf), FI_REMOTE_WRITE | FI_REMOTE_READ,
			       0, 0, 0, &mr, (void *)0x77));
	EXPECT_NE(0u, fi_mr_key(mr));	/* FI_MR_PROV_KEY: the provider's */
	EXPECT_NE(NULL, fi_mr_desc(mr));
	EXPECT_EQ((void *)0x77, mr->fid.context);
	fi_close(&mr->fid);
	/* without RMA access a registration is only bookkeeping */
	ASSERT_EQ(0, fi_mr_reg(self->domain, buf, 8, FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL));
	fi_close(&mr->fid);
	ASSERT_EQ(0, fi_mr_regattr(self->domain, &attr, 0, &mr));
	fi_close(&mr->fid);

	REFUSED(-FI_EBADFLAGS, fi_mr_reg(self->domain, buf, 8, FI_REMOTE_READ, 0, 0,
					 FI_RMA_EVENT, &mr, NULL), "none supported");
	REFUSED(-FI_EBADFLAGS, fi_mr_reg(self->domain, buf, 8, FI_REMOTE_READ, 0, 0,
					 FI_RMA_PMEM, &mr, NULL), "none supported");
	REFUSED(-FI_EINVAL, fi_mr_reg(self->domain, buf, 8, FI_REMOTE_READ | FI_TAGGED, 0, 0, 0,
				      &mr, NULL), "access");
	REFUSED(-FI_EINVAL, fi_mr_regv(self->domain, iov, 2, FI_SEND, 0, 0, 0, &mr, NULL),
		"mr_iov_limit");
	REFUSED(-FI_EINVAL, fi_mr_regv(self->domain, iov, 0, FI_SEND, 0, 0, 0, &mr, NULL),
		"mr_iov_limit");
	attr.iface = FI_HMEM_CUDA;
	REFUSED(-FI_ENOSYS, fi_mr_regattr(self->domain, &attr, 0, &mr), "FI_HMEM");
	attr.iface = FI_HMEM_SYSTEM;
	attr.auth_key_size = 4;
	REFUSED(-FI_EINVAL, fi_mr_regattr(self->domain, &attr, 0, &mr), "authorization");
	REFUSED(-FI_EINVAL, fi_mr_regattr(self->domain, NULL, 0, &mr), "no attributes");
	REFUSED(-FI_EINVAL, fi_mr_reg(self->domain, buf, 0, FI_REMOTE_READ, 0, 0, 0, &mr, NULL),
		"refused");
}

/* What the providers do not offer on a registration, and running out of them. */
TEST_F(loop, mr_bind_refresh_and_exhaustion)
{
	static char buf[256];
	struct fid_mr *mr, *mr2;

	ASSERT_EQ(0, fi_mr_reg(self->domain, buf, 128, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	REFUSED(-FI_ENOSYS, fi_mr_bind(mr, &self->e.ep->fid, 0), "fi_bind");
	REFUSED(-FI_ENOSYS, fi_mr_enable(mr), "fi_control");
	/* the NI's registrations run out: refused, and said so */
	setenv("XFI_LOOP_MR_MAX", "1", 1);
	REFUSED(-FI_ENOSPC, fi_mr_reg(self->domain, buf + 128, 128, FI_REMOTE_WRITE, 0, 0, 0,
				      &mr2, NULL), "refused");
	fi_close(&mr->fid);
	EXPECT_EQ(0, fi_mr_reg(self->domain, buf + 128, 128, FI_REMOTE_WRITE, 0, 0, 0, &mr2, NULL));
	fi_close(&mr2->fid);
	unsetenv("XFI_LOOP_MR_MAX");
}

/* ---- fi_endpoint(3) ---- */

TEST_F(loop, ep_bind_flags_and_enable)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;

	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	ASSERT_EQ(0, fi_cq_open(self->domain, &cq_attr, &cq, NULL));
	ASSERT_EQ(0, fi_av_open(self->domain, &av_attr, &av, NULL));
	REFUSED(-FI_ENOAV, fi_enable(ep), "no address vector");
	REFUSED(-FI_EBADFLAGS, fi_ep_bind(ep, &av->fid, FI_MORE), "none are defined");
	ASSERT_EQ(0, fi_ep_bind(ep, &av->fid, 0));
	REFUSED(-FI_EINVAL, fi_ep_bind(ep, &self->e.av->fid, 0), "has one");
	REFUSED(-FI_EBADFLAGS, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_MORE),
		"FI_SELECTIVE_COMPLETION only");
	REFUSED(-FI_EINVAL, fi_ep_bind(ep, &cq->fid, 0), "neither FI_TRANSMIT nor FI_RECV");
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT));
	REFUSED(-FI_ENOCQ, fi_enable(ep), "no receive");
	REFUSED(-FI_EINVAL, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT), "has one");
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_RECV | FI_SELECTIVE_COMPLETION));
	EXPECT_EQ(0, fi_enable(ep));
	REFUSED(-FI_EINVAL, fi_ep_bind(ep, NULL, 0), "nothing to bind");
	REFUSED(-FI_ENOSYS, fi_ep_bind(ep, &self->domain->fid, 0), "not supported");
	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
}

/* FI_GETOPSFLAG / FI_SETOPSFLAG: the flags of the calls that take none. */
TEST_F(loop, ep_control_ops_flags)
{
	struct loop_opts o = { .bind_flags = FI_SELECTIVE_COMPLETION, .tx_op_flags = FI_COMPLETION };
	struct fi_cq_tagged_entry e[4];
	struct fi_context ctx[2];
	struct loop_ep le;
	uint64_t f;
	char in[2][8];

	ASSERT_EQ(0, loop_ep_open(self, &o, &le));
	f = FI_TRANSMIT;
	ASSERT_EQ(0, fi_control(&le.ep->fid, FI_GETOPSFLAG, &f));
	EXPECT_EQ(FI_COMPLETION, f);
	f = FI_RECV;
	ASSERT_EQ(0, fi_control(&le.ep->fid, FI_GETOPSFLAG, &f));
	EXPECT_EQ(0u, f);
	/* sends write an entry under FI_SELECTIVE_COMPLETION now, receives not */
	ASSERT_EQ(0, fi_recv(le.ep, in[0], 8, NULL, FI_ADDR_UNSPEC, &ctx[0]));
	ASSERT_EQ(0, fi_send(le.ep, "x", 1, NULL, le.self, &ctx[1]));
	ASSERT_EQ(1, loop_reap(le.cq, e, 1, 4));
	EXPECT_EQ(&ctx[1], e[0].op_context);
	EXPECT_EQ(0, loop_settle(le.cq));
	EXPECT_EQ('x', in[0][0]);
	/* and the other way round */
	f = FI_TRANSMIT;
	QUIET(0, fi_control(&le.ep->fid, FI_SETOPSFLAG, &f));
	f = FI_RECV | FI_COMPLETION;
	QUIET(0, fi_control(&le.ep->fid, FI_SETOPSFLAG, &f));
	f = FI_RECV;
	ASSERT_EQ(0, fi_control(&le.ep->fid, FI_GETOPSFLAG, &f));
	EXPECT_EQ(FI_COMPLETION, f);
	ASSERT_EQ(0, fi_recv(le.ep, in[1], 8, NULL, FI_ADDR_UNSPEC, &ctx[0]));
	ASSERT_EQ(0, fi_send(le.ep, "y", 1, NULL, le.self, &ctx[1]));
	ASSERT_EQ(1, loop_reap(le.cq, e, 1, 4));
	EXPECT_EQ(&ctx[0], e[0].op_context);
	EXPECT_EQ(0, loop_settle(le.cq));
	EXPECT_EQ('y', in[1][0]);

	f = FI_TRANSMIT | FI_RECV;
	REFUSED(-FI_EINVAL, fi_control(&le.ep->fid, FI_GETOPSFLAG, &f), "one of them");
	f = FI_COMPLETION;
	REFUSED(-FI_EINVAL, fi_control(&le.ep->fid, FI_SETOPSFLAG, &f), "one of them");
	f = FI_TRANSMIT | FI_FENCE;
	REFUSED(-FI_EBADFLAGS, fi_control(&le.ep->fid, FI_SETOPSFLAG, &f), "not supported");
	f = FI_RECV | FI_DELIVERY_COMPLETE;
	REFUSED(-FI_EBADFLAGS, fi_control(&le.ep->fid, FI_SETOPSFLAG, &f), "not supported");
	f = FI_TRANSMIT | FI_TRANSMIT_COMPLETE;
	QUIET(0, fi_control(&le.ep->fid, FI_SETOPSFLAG, &f));
	REFUSED(-FI_ENOSYS, fi_control(&le.ep->fid, FI_GETWAIT, &f), "FI_ENABLE");
	REFUSED(-FI_ENOSYS, fi_ep_alias(le.ep, &self->e.ep, 0), "FI_ENABLE");
	loop_ep_close(&le);
}

TEST_F(loop, ep_getopt_setopt)
{
	size_t v = 0, len = sizeof(v), big = 128;

	ASSERT_EQ(0, fi_getopt(&self->e.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
	EXPECT_EQ(64u, v);
	EXPECT_EQ(sizeof(size_t), len);
	ASSERT_EQ(0, fi_setopt(&self->e.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &big,
			       sizeof(big)));
	ASSERT_EQ(0, fi_getopt(&self->e.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
	EXPECT_EQ(128u, v);
	REFUSED(-FI_EINVAL, fi_setopt(&self->e.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
				      &big, 4), "not a size_t");
	len = 4;
	REFUSED(-FI_ETOOSMALL, fi_getopt(&self->e.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
					 &v, &len), "no room");
	len = sizeof(v);
	REFUSED(-FI_ENOPROTOOPT, fi_getopt(&self->e.ep->fid, FI_OPT_ENDPOINT,
					   FI_OPT_BUFFERED_LIMIT, &v, &len), "option");
	REFUSED(-FI_ENOPROTOOPT, fi_setopt(&self->e.ep->fid, FI_OPT_ENDPOINT,
					   FI_OPT_CM_DATA_SIZE, &v, len), "option");
	REFUSED(-FI_ENOPROTOOPT, fi_setopt(&self->e.ep->fid, 3, FI_OPT_MIN_MULTI_RECV, &v, len),
		"level 3");
}

/* fi_cancel: a posted receive completes with FI_ECANCELED, once. */
TEST_F(loop, ep_cancel)
{
	struct fi_cq_tagged_entry e[2];
	struct fi_cq_err_entry err = { 0 };
	struct fi_context ctx;
	char in[8];

	ASSERT_EQ(0, fi_trecv(self->e.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 3, 0, &ctx));
	QUIET(0, fi_cancel(&self->e.ep->fid, &ctx));
	EXPECT_EQ(-FI_EAVAIL, loop_reap(self->e.cq, e, 1, 2));
	ASSERT_EQ(1, fi_cq_readerr(self->e.cq, &err, 0));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(&ctx, err.op_context);
	EXPECT_EQ(FI_RECV | FI_TAGGED, err.flags);
	REFUSED(-FI_ENOENT, fi_cancel(&self->e.ep->fid, &ctx), "no posted receive");
	REFUSED(-FI_EINVAL, fi_cancel(&self->e.ep->fid, NULL), "no context");
	/* a message sent now is not taken by the cancelled receive */
	ASSERT_EQ(0, fi_tinject(self->e.ep, "z", 1, self->e.self, 3));
	EXPECT_EQ(0, loop_settle(self->e.cq));
}

/* What RDM endpoints of these providers do not have: -FI_ENOSYS, said so. */
TEST_F(loop, ep_calls_not_offered)
{
	struct fid_ep *ep;
	struct fid_stx *stx;
	struct fi_tx_attr tx = { 0 };
	struct fi_rx_attr rx = { 0 };
	char addr[8];
	size_t len = 4;

	REFUSED(-FI_ENOSYS, fi_tx_context(self->e.ep, 0, &tx, &ep, NULL), "fi_tx_context");
	REFUSED(-FI_ENOSYS, fi_rx_context(self->e.ep, 0, &rx, &ep, NULL), "fi_rx_context");
	REFUSED(-FI_ENOSYS, fi_stx_context(self->domain, &tx, &stx, NULL), "fi_stx_context");
	REFUSED(-FI_ENOSYS, fi_srx_context(self->domain, &rx, &ep, NULL), "fi_srx_context");
	REFUSED(-FI_ENOSYS, fi_scalable_ep(self->domain, self->info, &ep, NULL),
		"fi_scalable_ep");
	REFUSED(-FI_ENOSYS, fi_setname(&self->e.ep->fid, addr, 8), "fi_setname");
	REFUSED(-FI_ENOSYS, fi_getpeer(self->e.ep, addr, &len), "fi_getpeer");
	REFUSED(-FI_ENOSYS, fi_connect(self->e.ep, addr, NULL, 0), "fi_connect");
	REFUSED(-FI_ENOSYS, fi_shutdown(self->e.ep, 0), "fi_shutdown");
	REFUSED(-FI_EBADFLAGS, fi_endpoint2(self->domain, self->info, &ep, FI_MORE, NULL),
		"flags");
	/* fi_getname into too small a buffer: the size it needs */
	REFUSED(-FI_ETOOSMALL, fi_getname(&self->e.ep->fid, addr, &len), "room for 4");
	EXPECT_EQ(8u, len);
}

/* The NI's endpoints (mailboxes) run out: refused with the NI's code, said so. */
TEST_F(loop, ep_open_exhaustion)
{
	struct fid_ep *ep;

	setenv("XFI_LOOP_MBOXES", "1", 1);	/* the fixture holds the only one */
	REFUSED(-FI_EBUSY, fi_endpoint(self->domain, self->info, &ep, NULL), "mailbox");
	unsetenv("XFI_LOOP_MBOXES");
	ASSERT_EQ(0, fi_endpoint(self->domain, self->info, &ep, NULL));
	fi_close(&ep->fid);
	self->info->caps |= FI_RMA_EVENT;
	REFUSED(-FI_EINVAL, fi_endpoint(self->domain, self->info, &ep, NULL),
		"capabilities not offered");
	self->info->caps &= ~(uint64_t)FI_RMA_EVENT;
}

/* NULL where a call needs something: refused with -FI_EINVAL (or the man
 * page's code), said so, and no crash. */
TEST_F(loop, null_arguments_refused)
{
	struct fi_cq_tagged_entry e;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	char buf[16];
	size_t len = sizeof(buf), v = 0;

	REFUSED(-FI_EINVAL, fi_av_open(self->domain, NULL, &av, NULL), "no attributes");
	REFUSED(-FI_EINVAL, fi_av_insert(self->e.av, NULL, 1, NULL, 0, NULL), "no addresses");
	REFUSED(-FI_EINVAL, fi_av_lookup(self->e.av, self->e.self, buf, NULL), "addrlen");
	REFUSED(-FI_EINVAL, fi_av_remove(self->e.av, NULL, 1, 0), "no addresses");
	EXPECT_EQ(NULL, fi_av_straddr(self->e.av, NULL, buf, &len));
	REFUSED(-FI_EINVAL, fi_getname(&self->e.ep->fid, buf, NULL), "no addrlen");
	REFUSED(-FI_EINVAL, fi_cq_read(self->e.cq, NULL, 1), "no buffer");
	QUIET(-FI_EAGAIN, fi_cq_read(self->e.cq, &e, 1));
	REFUSED(-FI_EINVAL, fi_endpoint(self->domain, NULL, &ep, NULL), "no info");
	REFUSED(-FI_EINVAL, fi_domain(self->fabric, NULL, (struct fid_domain **)&ep, NULL),
		"no info");
	REFUSED(-FI_EINVAL, fi_cq_open(self->domain, &(struct fi_cq_attr){ 0 }, NULL, NULL),
		"no result");
	REFUSED(-FI_EINVAL, fi_cntr_open(self->domain, NULL, NULL, NULL), "no result");
	ASSERT_EQ(0, fi_cntr_open(self->domain, NULL, &cntr, NULL));	/* defaults */
	fi_close(&cntr->fid);
	ASSERT_EQ(0, fi_cq_open(self->domain, NULL, &cq, NULL));
	fi_close(&cq->fid);
	REFUSED(-FI_EINVAL, fi_setopt(&self->e.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
				      NULL, sizeof(size_t)), "not a size_t");
	REFUSED(-FI_ETOOSMALL, fi_getopt(&self->e.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
					 &v, NULL), "no room");
	REFUSED(-FI_EINVAL, fi_control(&self->e.ep->fid, FI_GETOPSFLAG, NULL), "no argument");
	REFUSED(-FI_EINVAL, fi_recv(self->e.ep, NULL, 8, NULL, FI_ADDR_UNSPEC, NULL),
		"into no buffer");
	REFUSED(-FI_EINVAL, fi_send(self->e.ep, NULL, 8, NULL, self->e.self, NULL),
		"from no buffer");
	REFUSED(-FI_EINVAL, fi_recvmsg(self->e.ep, NULL, 0), "no message");
	REFUSED(-FI_EINVAL, fi_tsendmsg(self->e.ep, NULL, 0), "no message");
	REFUSED(-FI_EINVAL, fi_writemsg(self->e.ep, NULL, 0), "one local and one remote");
	REFUSED(-FI_EINVAL, fi_atomicmsg(self->e.ep, NULL, 0), "one local and one remote");
	REFUSED(-FI_EINVAL, fi_query_atomic(self->domain, FI_UINT64, FI_SUM, NULL, 0),
		"no attributes");
	QUIET(0, fi_atomicvalid(self->e.ep, FI_UINT64, FI_SUM, NULL));
	REFUSED(-FI_EINVAL, fi_sendv(self->e.ep, NULL, NULL, 2, self->e.self, NULL), "iovs");
}

TEST_HARNESS_MAIN
