// SPDX-License-Identifier: GPL-2.0
/*
 * librma2 / libvelo2 between two nodes (tests.list: 2 nodes): put and get
 * integrity 1 B .. 16 MiB (byte and quadword variants) with notification
 * contents checked on both sides (NLA, size, type, command, remote node and
 * VPID), and VELO delivery from several sender processes on both nodes into
 * one ring (per-sender order, sender id).  Ranks meet over the
 * out-of-band TCP channel (selftests/lib/oob.h).
 */
#include "extoll_test.h"

#define BUF (16 * MiB + 8192)
#define TMO_S 120

struct addr {
	uint32_t node, vpid, vnode, vvpid;
	uint64_t src_nla, dst_nla;
};

/* The longest plain TEST() of this file may take 600 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 600

FIXTURE(pair) {
	struct oob oob;
	int rank;
	RMA2_Port port;
	RMA2_Handle h;
	uint8_t *src, *dst;
	RMA2_Region *rs, *rd;
	struct addr me, peer;
};

FIXTURE_SETUP(pair)
{
	struct addr all[2];
	int err = oob_init(&self->oob, (unsigned int)ksft_case_index(_metadata), 120000);

	ASSERT_EQ(0, err);
	if (self->oob.nnodes != 2)
		SKIP_TEST("needs exactly 2 ranks");
	self->rank = self->oob.rank;
	XT_RMA2_OPEN_OR_SKIP(&self->port);
	self->src = mmap(NULL, BUF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	self->dst = mmap(NULL, BUF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(self->src != MAP_FAILED && self->dst != MAP_FAILED);
	memset(self->dst, 0, BUF);
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(self->port, self->src, BUF, &self->rs));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(self->port, self->dst, BUF, &self->rd));
	self->me.node = rma2_get_nodeid(self->port);
	self->me.vpid = rma2_get_vpid(self->port);
	rma2_get_nla(self->rs, 0, &self->me.src_nla);
	rma2_get_nla(self->rd, 0, &self->me.dst_nla);
	ASSERT_EQ(0, oob_allgather(&self->oob, &self->me, all, sizeof(self->me)));
	self->peer = all[1 - self->rank];
	ASSERT_NE(self->me.node, self->peer.node);
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(self->port, (RMA2_Nodeid)self->peer.node,
					     (RMA2_VPID)self->peer.vpid, RMA2_CONN_DEFAULT, &self->h));
}

FIXTURE_TEARDOWN(pair)
{
	oob_barrier(&self->oob);
	if (self->port) {
		rma2_disconnect(self->port, self->h);
		rma2_unregister(self->port, self->rs);
		rma2_unregister(self->port, self->rd);
		rma2_close(self->port);
	}
	oob_fini(&self->oob);
}

static const size_t sizes[] = { 1, 3, 8, 13, 64, 1000, 1024, 1025, 4096, 65536 + 7, MiB + 3,
				8 * MiB, 16 * MiB };

/* rank 0 puts into rank 1; rank 1 checks completer notifications + data */
static void put_sizes(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self, int qw)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t size = qw ? sizes[i] & ~(size_t)7 : sizes[i];
		uint32_t so = qw ? 8 * (uint32_t)i : 5 * (uint32_t)i;
		uint32_t dof = qw ? 16 * (uint32_t)i : 11 * (uint32_t)i;
		unsigned int cmd = qw ? RMA2_QW_PUT : RMA2_BT_PUT;
		size_t done = 0;

		if (!size)
			continue;
		if (self->rank == 0)
			xt_fill(self->src + so, size, (uint32_t)(size + i));
		else
			memset(self->dst + dof, 0, size);
		ASSERT_EQ(0, oob_barrier(&self->oob));
		while (done < size) {
			uint32_t c = size - done > 8 * MiB ? 8 * MiB : (uint32_t)(size - done);
			uint64_t dn = self->rank == 0 ? self->peer.dst_nla + dof + done :
							self->me.dst_nla + dof + done;

			/* requester at the origin, completer at the target */
			struct xt_noti want = xt_noti_xfer(self->rank == 0 ?
				RMA2_REQUESTER_NOTIFICATION : RMA2_COMPLETER_NOTIFICATION, cmd,
				self->peer.node, self->peer.vpid,
				self->rank == 0 ? self->me.src_nla + so + done : dn, c);

			if (self->rank == 0) {
				RMA2_ERROR rc = qw ?
					rma2_post_put_qw(self->port, self->h, self->rs, so + (uint32_t)done,
							 c, dn, RMA2_REQCOMPL_NOTIFICATION, 0) :
					rma2_post_put_bt(self->port, self->h, self->rs, so + (uint32_t)done,
							 c, dn, RMA2_REQCOMPL_NOTIFICATION, 0);
				ASSERT_EQ(RMA2_SUCCESS, rc);
			}
			ASSERT_EQ(0, xt_expect_notis(_metadata, self->port, &want, 1, TMO_S, "put"));
			done += c;
		}
		if (self->rank == 1) {
			uint8_t *want = malloc(size);

			ASSERT_TRUE(want != NULL);
			xt_fill(want, size, (uint32_t)(size + i));
			if (memcmp(want, self->dst + dof, size))
				TH_LOG("put %zu bytes (qw %d): data mismatch", size, qw);
			EXPECT_EQ(0, memcmp(want, self->dst + dof, size));
			free(want);
		}
		ASSERT_EQ(0, oob_barrier(&self->oob));
	}
}

TEST_F_TIMEOUT(pair, put_bt_1B_16MiB, 900)
{
	put_sizes(_metadata, self, 0);
}

TEST_F_TIMEOUT(pair, put_qw_8B_16MiB, 900)
{
	put_sizes(_metadata, self, 1);
}

/* rank 1 gets from rank 0: completer at rank 1 (cmd 10/11), responder at rank 0 */
/*
 * More put data posted at once (384 MiB) than the device queues for
 * transmission (48 MiB), the way a bandwidth test posts: no notification
 * but on the last command.  The device must defer the commands the library
 * already has credits for, not drop them: after each 4 MiB put an 8-byte
 * put writes marker i, and every marker must have landed.
 */
#define BURST_PUTS 96
#define BURST_SIZE (4 * MiB)
#define BURST_BULK_OFF MiB	/* markers at offset 0 of both buffers */

TEST_F_TIMEOUT(pair, put_burst_beyond_device_queues, 900)
{
	uint64_t *marker = (uint64_t *)(self->rank == 0 ? self->src : self->dst);
	uint64_t dn = self->peer.dst_nla;
	uint8_t *expect;
	int missing = 0;

	if (self->rank == 0) {
		xt_fill(self->src + BURST_BULK_OFF, BURST_SIZE, 0xb5);
		for (int i = 0; i < BURST_PUTS; i++)
			marker[i] = 0x6d61726b00000000ull | (uint64_t)i;
	} else {
		memset(self->dst, 0, BURST_BULK_OFF + BURST_SIZE);
	}
	ASSERT_EQ(0, oob_barrier(&self->oob));
	if (self->rank == 0) {
		for (int i = 0; i < BURST_PUTS; i++) {
			RMA2_Notification_Spec last = i == BURST_PUTS - 1 ?
				RMA2_COMPLETER_NOTIFICATION : RMA2_NO_NOTIFICATION;

			ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(self->port, self->h, self->rs,
								 BURST_BULK_OFF, BURST_SIZE,
								 dn + BURST_BULK_OFF,
								 RMA2_NO_NOTIFICATION, 0));
			ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(self->port, self->h, self->rs,
								 8 * (uint32_t)i, 8, dn + 8 * i,
								 last, 0));
		}
	} else {
		/* commands of one connection complete in order: the last
		 * marker's notification comes after everything before it */
		struct xt_noti want = xt_noti_xfer(RMA2_COMPLETER_NOTIFICATION, RMA2_BT_PUT,
						   self->peer.node, self->peer.vpid,
						   self->me.dst_nla + 8 * (BURST_PUTS - 1), 8);

		ASSERT_EQ(0, xt_expect_notis(_metadata, self->port, &want, 1, TMO_S, "burst"));
		for (int i = 0; i < BURST_PUTS; i++)
			if (marker[i] != (0x6d61726b00000000ull | (uint64_t)i))
				missing++;
		if (missing)
			TH_LOG("%d of %d markers missing: commands lost", missing, BURST_PUTS);
		EXPECT_EQ(0, missing);
		expect = malloc(BURST_SIZE);
		ASSERT_TRUE(expect != NULL);
		xt_fill(expect, BURST_SIZE, 0xb5);
		EXPECT_EQ(0, memcmp(expect, self->dst + BURST_BULK_OFF, BURST_SIZE));
		free(expect);
	}
	ASSERT_EQ(0, oob_barrier(&self->oob));
}

/*
 * Both ranks add 1 to lock 7 of rank 0's endpoint at the same time (rank 0
 * through a connection to itself): the lock is atomic if the values the
 * completer notifications report are exactly 1 .. 2 * LOCK_ADDS.
 */
#define LOCK_ADDS 200

TEST_F_TIMEOUT(pair, lock_adds_from_both_nodes_are_atomic, 300)
{
	uint32_t values[2][LOCK_ADDS], *mine = values[self->rank];
	uint8_t seen[2 * LOCK_ADDS + 1] = { 0 };
	uint32_t lock_node = self->rank == 0 ? self->me.node : self->peer.node;
	RMA2_Handle h = self->h;
	int bad = 0;

	if (self->rank == 0)
		ASSERT_EQ(RMA2_SUCCESS, rma2_connect(self->port, (RMA2_Nodeid)self->me.node,
						     (RMA2_VPID)self->me.vpid, RMA2_CONN_DEFAULT, &h));
	ASSERT_EQ(0, oob_barrier(&self->oob));
	for (int i = 0; i < LOCK_ADDS; i++) {
		RMA2_Notification n;

		ASSERT_EQ(RMA2_SUCCESS, rma2_post_lock(self->port, h, 0, 7, INT32_MAX, 1,
						       RMA2_COMPLETER_NOTIFICATION, 0));
		ASSERT_EQ(0, xt_next_noti(self->port, &n, TMO_S));
		ASSERT_EQ(RMA2_LOCK_RSP, rma2_noti_get_cmd(&n));
		ASSERT_EQ(0, rma2_noti_get_error(&n));
		ASSERT_EQ(1, rma2_noti_get_lock_result(&n));
		ASSERT_EQ(lock_node, rma2_noti_get_remote_nodeid(&n));
		mine[i] = rma2_noti_get_lock_value(&n);
	}
	ASSERT_EQ(0, oob_allgather(&self->oob, mine, values, sizeof(values[0])));
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < LOCK_ADDS; i++) {
			uint32_t v = values[r][i];

			/* each rank's own values grow; no value is given twice */
			if (v < 1 || v > 2 * LOCK_ADDS || seen[v]++ ||
			    (i && v <= values[r][i - 1]))
				bad++;
		}
	if (bad)
		TH_LOG("%d lock values out of place", bad);
	EXPECT_EQ(0, bad);
	if (self->rank == 0)
		rma2_disconnect(self->port, h);
	ASSERT_EQ(0, oob_barrier(&self->oob));
}

static void get_sizes(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self, int qw)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t size = qw ? sizes[i] & ~(size_t)7 : sizes[i];
		uint32_t so = qw ? 24 * (uint32_t)i : 7 * (uint32_t)i;
		uint32_t dof = qw ? 8 * (uint32_t)i : 3 * (uint32_t)i;
		size_t done = 0;

		if (!size)
			continue;
		if (self->rank == 0)
			xt_fill(self->src + so, size, (uint32_t)(size * 5 + i));
		else
			memset(self->dst + dof, 0, size);
		ASSERT_EQ(0, oob_barrier(&self->oob));
		while (done < size) {
			uint32_t c = size - done > 8 * MiB ? 8 * MiB : (uint32_t)(size - done);

			unsigned int cmd = qw ? RMA2_QW_GET : RMA2_BT_GET;
			uint64_t local = self->me.dst_nla + dof + done;
			/* requester + completer (cmd 10/11) at the origin, responder at the owner */
			struct xt_noti origin[2] = {
				xt_noti_xfer(RMA2_REQUESTER_NOTIFICATION, cmd, self->peer.node,
					     self->peer.vpid, local, c),
				xt_noti_xfer(RMA2_COMPLETER_NOTIFICATION,
					     qw ? RMA2_GET_QW_RSP : RMA2_GET_BT_RSP,
					     self->peer.node, self->peer.vpid, local, c),
			};
			struct xt_noti owner = xt_noti_xfer(RMA2_RESPONDER_NOTIFICATION, cmd,
							    self->peer.node, self->peer.vpid,
							    self->me.src_nla + so + done, c);

			if (self->rank == 1) {
				RMA2_ERROR rc = qw ?
					rma2_post_get_qw_direct(self->port, self->h, local, c,
								self->peer.src_nla + so + done,
								RMA2_ALL_NOTIFICATIONS, 0) :
					rma2_post_get_bt_direct(self->port, self->h, local, c,
								self->peer.src_nla + so + done,
								RMA2_ALL_NOTIFICATIONS, 0);
				ASSERT_EQ(RMA2_SUCCESS, rc);
				ASSERT_EQ(0, xt_expect_notis(_metadata, self->port, origin, 2, TMO_S,
							     "get (origin)"));
			} else {
				ASSERT_EQ(0, xt_expect_notis(_metadata, self->port, &owner, 1, TMO_S,
							     "get (data owner)"));
			}
			done += c;
		}
		if (self->rank == 1) {
			uint8_t *want = malloc(size);

			ASSERT_TRUE(want != NULL);
			xt_fill(want, size, (uint32_t)(size * 5 + i));
			EXPECT_EQ(0, memcmp(want, self->dst + dof, size));
			free(want);
		}
		ASSERT_EQ(0, oob_barrier(&self->oob));
	}
}

TEST_F_TIMEOUT(pair, get_bt_1B_16MiB, 900)
{
	get_sizes(_metadata, self, 0);
}

TEST_F_TIMEOUT(pair, get_qw_8B_16MiB, 900)
{
	get_sizes(_metadata, self, 1);
}

/* VELO: 2 sender processes per node into rank 0's ring */
static int velo_sender(uint32_t node, uint32_t vpid, uint32_t idx, int count)
{
	velo2_port_t p;
	velo2_connection_t c;
	uint32_t m[8];

	memset(&p, 0, sizeof(p));
	if (velo2_open(&p) != VELO2_RET_SUCCESS || velo2_connect(&p, &c, node, vpid))
		return 10;
	for (int s = 0; s < count; s++) {
		m[0] = idx;
		m[1] = velo2_get_nodeid(&p);
		m[2] = velo2_get_vpid(&p);
		m[3] = (uint32_t)s;
		if (velo2_send(&c, m, 16 + (uint32_t)(s % 3) * 8, (uint8_t)idx, 0) != VELO2_RET_SUCCESS)
			return 11;
	}
	sleep(3);
	velo2_close(&p);
	return 0;
}

TEST(velo_senders_on_both_nodes_one_ring)
{
	enum { PER_NODE = 2, COUNT = 2000 };
	struct oob oob;
	velo2_port_t rx;
	uint32_t rxaddr[2], m[30], len, src;
	uint8_t tag, mtt;
	pid_t pid[PER_NODE];
	int next[2 * PER_NODE] = { 0 }, got = 0, st;

	ASSERT_EQ(0, oob_init(&oob, (unsigned int)ksft_case_index(_metadata), 120000));
	if (oob.nnodes != 2)
		SKIP_TEST("needs exactly 2 ranks");
	memset(&rx, 0, sizeof(rx));
	if (oob.rank == 0) {
		if (velo2_open(&rx) == VELO2_RET_ERR_FDOPEN)
			SKIP_TEST("no EXTOLL device");
		rxaddr[0] = velo2_get_nodeid(&rx);
		rxaddr[1] = velo2_get_vpid(&rx);
	}
	ASSERT_EQ(0, oob_bcast(&oob, rxaddr, sizeof(rxaddr), 0));
	for (int i = 0; i < PER_NODE; i++) {
		pid[i] = fork();
		ASSERT_GE(pid[i], 0);
		if (pid[i] == 0)
			_exit(velo_sender(rxaddr[0], rxaddr[1],
					  (uint32_t)(oob.rank * PER_NODE + i), COUNT));
	}
	if (oob.rank == 0) {
		double end = xt_now_s() + 300;

		while (got < 2 * PER_NODE * COUNT) {
			velo2_ret_t r = velo2_probe_recv(&rx, m, sizeof(m), &len, &src, &tag, &mtt);

			if (r == VELO2_RET_NO_MSG) {
				ASSERT_LT(xt_now_s(), end);
				sched_yield();
				continue;
			}
			ASSERT_EQ(VELO2_RET_SUCCESS, r);
			ASSERT_LT(m[0], 2 * PER_NODE);
			ASSERT_EQ(m[0], tag);
			ASSERT_EQ((uint32_t)VELO2_ADDR_PACK(m[1], m[2]), src);
			/* senders of rank 0 are on this node, those of rank 1 are not */
			if (m[0] / PER_NODE == 0) {
				ASSERT_EQ(rxaddr[0], m[1]);
			} else {
				ASSERT_NE(rxaddr[0], m[1]);
			}
			ASSERT_EQ(16 + (m[3] % 3) * 8, len);
			ASSERT_EQ(next[m[0]], (int)m[3]);	/* per-sender order */
			next[m[0]]++;
			got++;
		}
		velo2_close(&rx);
	}
	for (int i = 0; i < PER_NODE; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	ASSERT_EQ(0, oob_barrier(&oob));
	oob_fini(&oob);
}

TEST_HARNESS_MAIN
