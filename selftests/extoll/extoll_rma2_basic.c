// SPDX-License-Identifier: GPL-2.0
/*
 * librma2 on one node with the emulated EXTOLL NIC (tests.list: 1 node).
 * Loopback connections (own node / VPID) exercise the whole device path:
 * endpoints, registration, put/get integrity 1 B .. 16 MiB (byte and
 * quadword variants, alignment rules), notification contents (NLA, size,
 * type, command, class, origin), immediate put, notification put, the
 * descriptor path with an illegal command, error codes of every call.
 */
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "extoll_test.h"

#define TMO_S 60

/* The longest plain TEST() of this file may take 300 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300

FIXTURE(lb) {
	RMA2_Port port;
	RMA2_Handle h;
	uint8_t *src, *dst;
	size_t len;
	RMA2_Region *rs, *rd;
};

FIXTURE_SETUP(lb)
{
	XT_RMA2_OPEN_OR_SKIP(&self->port);
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(self->port, rma2_get_nodeid(self->port),
					     rma2_get_vpid(self->port), RMA2_CONN_DEFAULT, &self->h));
	self->len = 16 * MiB + 8192;
	self->src = mmap(NULL, self->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	self->dst = mmap(NULL, self->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(self->src != MAP_FAILED && self->dst != MAP_FAILED);
	memset(self->src, 0, self->len);
	memset(self->dst, 0, self->len);
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(self->port, self->src, self->len, &self->rs));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(self->port, self->dst, self->len, &self->rd));
}

FIXTURE_TEARDOWN(lb)
{
	if (!self->port)
		return;
	if (self->rs)
		EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(self->port, self->rs));
	if (self->rd)
		EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(self->port, self->rd));
	EXPECT_EQ(RMA2_SUCCESS, rma2_disconnect(self->port, self->h));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(self->port));
}

TEST(open_close_endpoints)
{
	RMA2_Port p[4] = { NULL };
	RMA2_Notification *n;
	int i, j;

	XT_RMA2_OPEN_OR_SKIP(&p[0]);
	for (i = 1; i < 4; i++)
		ASSERT_EQ(RMA2_SUCCESS, rma2_open(&p[i]));
	for (i = 0; i < 4; i++) {
		EXPECT_NE(0xffff, rma2_get_nodeid(p[i]));
		EXPECT_LT(rma2_get_vpid(p[i]), 256);
		EXPECT_EQ(rma2_get_nodeid(p[0]), rma2_get_nodeid(p[i]));
		for (j = 0; j < i; j++)
			EXPECT_NE(rma2_get_vpid(p[j]), rma2_get_vpid(p[i]));
		EXPECT_GT(rma2_get_proc_num(p[i]), 0);
		EXPECT_GE(rma2_get_queue_size(p[i]), 4096);
		/* fixed by rma2_open: the current size is accepted, no other */
		EXPECT_EQ(RMA2_SUCCESS, rma2_set_queue_size(p[i], rma2_get_queue_size(p[i])));
		EXPECT_EQ(RMA2_ERR_NOT_YET, rma2_set_queue_size(p[i], 2 * rma2_get_queue_size(p[i])));
		EXPECT_EQ(RMA2_NO_NOTI, rma2_noti_probe(p[i], &n));
		EXPECT_EQ(RMA2_REPLAY_ALL, rma2_get_replay_buffer_mode(p[i]));
	}
	for (i = 0; i < 4; i++)
		EXPECT_EQ(RMA2_SUCCESS, rma2_close(p[i]));
	/* again: VPIDs are reusable */
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(RMA2_SUCCESS, rma2_open(&p[0]));
		ASSERT_EQ(RMA2_SUCCESS, rma2_close(p[0]));
	}
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_open(NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_close(NULL));
}

TEST(registration_device)
{
	RMA2_Port p = NULL;
	RMA2_Region *r = NULL, *r2 = NULL, *keep = (RMA2_Region *)0x1;
	RMA2_Region byval;
	static uint8_t stackish[10000];
	uint8_t *buf = malloc(100000);

	XT_RMA2_OPEN_OR_SKIP(&p);
	ASSERT_TRUE(buf != NULL);
	/* arbitrary alignment, overlapping and identical registrations */
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(p, buf + 0xb30, 5000, &r));
	EXPECT_EQ(((uintptr_t)buf + 0xb30) & 0xfff, r->offset);
	EXPECT_EQ(0, (uintptr_t)r->start & 0xfff);
	EXPECT_EQ(r->count * 4096ul, r->size);
	EXPECT_NE(0, r->nla);
	EXPECT_EQ(0, r->nla & 0xfff);
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(p, buf + 0xb30, 5000, &r2));
	EXPECT_NE(r->nla, r2->nla);
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, r2));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(p, buf, 100000, &r2));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, r2));
	memset(&byval, 0, sizeof(byval));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register_nomalloc(p, stackish + 1, sizeof(stackish) - 1, &byval));
	EXPECT_NE(0, byval.nla);
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister_nofree(p, &byval));
	EXPECT_EQ(RMA2_ERR_ERROR, rma2_unregister_nofree(p, &byval));	/* twice */
	/* failures leave *region untouched */
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register(p, buf, 0, &keep));
	EXPECT_NE(RMA2_SUCCESS, rma2_register(p, (void *)0x1000, 4096, &keep));	/* unmapped */
	EXPECT_TRUE(keep == (RMA2_Region *)0x1);
	EXPECT_EQ(RMA2_SUCCESS, rma2_register_adhoc(p, buf + 10, &r2));
	EXPECT_EQ(1, r2->count);
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister_adhoc(p, r2));
	EXPECT_EQ(RMA2_SUCCESS, rma2_register_cached(p, buf, 10, &r2));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister_cached(p, r2));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, r));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p));
	free(buf);
}

/*
 * Put 'size' bytes src+so -> dst+dof in commands of <= 8 MiB, each with a
 * requester and a completer notification checked field by field, then
 * compare the data and the bytes after it.
 */
static int do_put(struct __test_metadata *_metadata, FIXTURE_DATA(lb) *self, size_t size,
		  uint32_t so, uint32_t dof, int qw)
{
	unsigned int me = rma2_get_nodeid(self->port), vp = rma2_get_vpid(self->port);
	unsigned int cmd = qw ? RMA2_QW_PUT : RMA2_BT_PUT;
	RMA2_NLA snla, dnla;
	size_t done = 0;
	int bad = 0;

	xt_fill(self->src + so, size, (uint32_t)size + so);
	memset(self->dst + dof, 0, size + 16);
	rma2_get_nla(self->rs, so, &snla);
	rma2_get_nla(self->rd, dof, &dnla);
	while (done < size) {
		uint32_t c = size - done > 8 * MiB ? 8 * MiB : (uint32_t)(size - done);
		struct xt_noti want[2] = {
			xt_noti_xfer(RMA2_REQUESTER_NOTIFICATION, cmd, me, vp, snla + done, c),
			xt_noti_xfer(RMA2_COMPLETER_NOTIFICATION, cmd, me, vp, dnla + done, c),
		};
		RMA2_ERROR rc = qw ? rma2_post_put_qw(self->port, self->h, self->rs, so + (uint32_t)done,
						      c, dnla + done, RMA2_REQCOMPL_NOTIFICATION, 0)
				   : rma2_post_put_bt(self->port, self->h, self->rs, so + (uint32_t)done,
						      c, dnla + done, RMA2_REQCOMPL_NOTIFICATION, 0);
		EXPECT_EQ(RMA2_SUCCESS, rc);
		if (rc)
			return 1;
		if (xt_expect_notis(_metadata, self->port, want, 2, TMO_S, "put")) {
			TH_LOG("put of %zu bytes (qw %d), command at %zu", size, qw, done);
			return 1;
		}
		done += c;
	}
	if (memcmp(self->dst + dof, self->src + so, size))
		bad = 1;
	for (int i = 0; i < 16; i++)
		if (self->dst[dof + size + i])
			bad = 2;	/* wrote past the end */
	if (bad)
		TH_LOG("put %zu bytes (so %u, do %u, qw %d): data mismatch %d", size, so, dof, qw, bad);
	return bad;
}

/* Get: requester, responder and completer notification, field by field. */
static int do_get(struct __test_metadata *_metadata, FIXTURE_DATA(lb) *self, size_t size,
		  uint32_t so, uint32_t dof, int qw)
{
	unsigned int me = rma2_get_nodeid(self->port), vp = rma2_get_vpid(self->port);
	unsigned int cmd = qw ? RMA2_QW_GET : RMA2_BT_GET;
	RMA2_NLA snla, dnla;
	size_t done = 0;

	xt_fill(self->src + so, size, (uint32_t)size * 3 + so);
	memset(self->dst + dof, 0, size + 16);
	rma2_get_nla(self->rs, so, &snla);
	rma2_get_nla(self->rd, dof, &dnla);
	while (done < size) {
		uint32_t c = size - done > 8 * MiB ? 8 * MiB : (uint32_t)(size - done);
		struct xt_noti want[3] = {
			xt_noti_xfer(RMA2_REQUESTER_NOTIFICATION, cmd, me, vp, dnla + done, c),
			xt_noti_xfer(RMA2_RESPONDER_NOTIFICATION, cmd, me, vp, snla + done, c),
			xt_noti_xfer(RMA2_COMPLETER_NOTIFICATION,
				     qw ? RMA2_GET_QW_RSP : RMA2_GET_BT_RSP, me, vp, dnla + done, c),
		};
		/* get: region/offset = local destination, dest_address = remote source */
		RMA2_ERROR rc = qw ? rma2_post_get_qw(self->port, self->h, self->rd, dof + (uint32_t)done,
						      c, snla + done, RMA2_ALL_NOTIFICATIONS, 0)
				   : rma2_post_get_bt(self->port, self->h, self->rd, dof + (uint32_t)done,
						      c, snla + done, RMA2_ALL_NOTIFICATIONS, 0);
		EXPECT_EQ(RMA2_SUCCESS, rc);
		if (rc || xt_expect_notis(_metadata, self->port, want, 3, TMO_S, "get")) {
			TH_LOG("get of %zu bytes (qw %d), command at %zu", size, qw, done);
			return 1;
		}
		done += c;
	}
	if (memcmp(self->dst + dof, self->src + so, size)) {
		TH_LOG("get %zu bytes: data mismatch", size);
		return 1;
	}
	for (int i = 0; i < 16; i++)
		if (self->dst[dof + size + i]) {
			TH_LOG("get %zu bytes: wrote past the end", size);
			return 1;
		}
	return 0;
}

static const size_t sizes[] = { 1, 2, 3, 7, 8, 9, 15, 16, 63, 64, 65, 1000, 1023, 1024, 1025,
				4095, 4096, 4097, 65536 + 3, MiB + 5, 8 * MiB, 8 * MiB + 1,
				16 * MiB };

TEST_F_TIMEOUT(lb, put_bt_integrity_1B_16MiB, 600)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ASSERT_EQ(0, do_put(_metadata, self, sizes[i], (uint32_t)(i * 13 % 4096),
				    (uint32_t)(i * 7 % 4096), 0));
}

TEST_F_TIMEOUT(lb, put_qw_integrity_8B_16MiB, 600)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t s = sizes[i] & ~(size_t)7;

		if (!s)
			continue;
		ASSERT_EQ(0, do_put(_metadata, self, s, (uint32_t)(i * 8 % 4096),
				    (uint32_t)(i * 24 % 4096), 1));
	}
}

TEST_F_TIMEOUT(lb, get_bt_integrity_1B_16MiB, 600)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ASSERT_EQ(0, do_get(_metadata, self, sizes[i], (uint32_t)(i * 5 % 4096),
				    (uint32_t)(i * 11 % 4096), 0));
}

TEST_F_TIMEOUT(lb, get_qw_integrity_8B_16MiB, 600)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t s = sizes[i] & ~(size_t)7;

		if (!s)
			continue;
		ASSERT_EQ(0, do_get(_metadata, self, s, (uint32_t)(i * 16 % 4096),
				    (uint32_t)(i * 8 % 4096), 1));
	}
}

TEST_F(lb, alignment_rules)
{
	RMA2_NLA d;

	rma2_get_nla(self->rd, 0, &d);
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_qw(self->port, self->h, self->rs, 0, 12, d, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_qw(self->port, self->h, self->rs, 4, 8, d, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_qw(self->port, self->h, self->rs, 0, 8, d + 1, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_get_qw(self->port, self->h, self->rd, 2, 8, d, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_bt(self->port, self->h, self->rs, 0, 0, d, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG,
		  rma2_post_put_bt(self->port, self->h, self->rs, 0, 8 * MiB + 1, d, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG,
		  rma2_post_get_bt_direct(self->port, self->h, d, 8 * MiB + 1, d, 0, 0));
	/* quadword variants: size, local and remote address multiples of 8 */
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_get_qw(self->port, self->h, self->rd, 0, 8, d + 4,
						       RMA2_COMPLETER_NOTIFICATION, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_get_qw(self->port, self->h, self->rd, 0, 20, d,
						       RMA2_COMPLETER_NOTIFICATION, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_qw_direct(self->port, self->h, d + 1, 8, d + 64,
							      RMA2_COMPLETER_NOTIFICATION, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_qw_direct(self->port, self->h, d, 8, d + 66,
							      RMA2_COMPLETER_NOTIFICATION, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_get_qw_direct(self->port, self->h, d, 8, d + 3,
							      RMA2_COMPLETER_NOTIFICATION, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_get_qw_direct(self->port, self->h, d, 4, d + 64,
							      RMA2_COMPLETER_NOTIFICATION, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_qw(self->port, self->h, self->rs, 0,
						       8 * MiB + 8, d, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_post_put_bt(self->port, NULL, self->rs, 0, 8, d, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_post_put_bt(NULL, self->h, self->rs, 0, 8, d, 0, 0));
	/* nothing of that reached the device */
	EXPECT_NE(0, xt_next_noti(self->port, &(RMA2_Notification){ { 0 }, { 0 } }, 0.5));
	/* the byte variants take any size and address */
	ASSERT_EQ(0, do_put(_metadata, self, 13, 5, 3, 0));
	ASSERT_EQ(0, do_get(_metadata, self, 13, 7, 1, 0));
}

TEST_F(lb, put_notifications_content)
{
	RMA2_NLA s, d;
	RMA2_Notification n[2];
	const uint32_t len = 5000;
	int seen_req = 0, seen_cmp = 0;

	rma2_get_nla(self->rs, 100, &s);
	rma2_get_nla(self->rd, 200, &d);
	xt_fill(self->src + 100, len, 1);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt_direct(self->port, self->h, s, len, d,
							RMA2_REQCOMPL_NOTIFICATION, 0));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, xt_next_noti(self->port, &n[i], TMO_S));
		rma2_noti_dump(&n[i]);
		EXPECT_EQ(RMA2_BT_PUT, rma2_noti_get_cmd(&n[i]));
		EXPECT_EQ(0, rma2_noti_get_error(&n[i]));
		EXPECT_EQ(rma2_get_nodeid(self->port), rma2_noti_get_remote_nodeid(&n[i]));
		EXPECT_EQ(rma2_get_vpid(self->port), rma2_noti_get_remote_vpid(&n[i]));
		EXPECT_TRUE(rma2_noti_get_mode(&n[i]) & RMA2_NOTI_TE);
		if (rma2_noti_get_notification_type(&n[i]) == RMA2_COMPLETER_NOTIFICATION) {
			seen_cmp++;
			/* last fragment: local address + size == end of the destination */
			EXPECT_TRUE(rma2_noti_get_local_address(&n[i]) + rma2_noti_get_size(&n[i]) ==
				    d + len);
			EXPECT_EQ(len, rma2_noti_get_total_size(d, &n[i]));
			/* pscom4velo's raw decoding */
			EXPECT_TRUE(n[i].word0.value + (n[i].word1.value & 0x7fffff) + 1 == d + len);
		} else if (rma2_noti_get_notification_type(&n[i]) == RMA2_REQUESTER_NOTIFICATION) {
			seen_req++;
		}
	}
	EXPECT_EQ(1, seen_req);
	EXPECT_EQ(1, seen_cmp);
	EXPECT_EQ(0, memcmp(self->src + 100, self->dst + 200, len));
	/* no notification requested: none arrives */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt_direct(self->port, self->h, s, 64, d, 0, 0));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt_direct(self->port, self->h, s, 64, d,
							RMA2_COMPLETER_NOTIFICATION, 0));
	ASSERT_EQ(0, xt_next_noti(self->port, &n[0], TMO_S));
	EXPECT_EQ(RMA2_COMPLETER_NOTIFICATION, rma2_noti_get_notification_type(&n[0]));
	EXPECT_EQ(64, rma2_noti_get_size(&n[0]));
	EXPECT_TRUE(rma2_noti_get_local_address(&n[0]) == d);
}

TEST_F(lb, immediate_put)
{
	unsigned int me = rma2_get_nodeid(self->port), vp = rma2_get_vpid(self->port);
	const uint64_t value = 0x8877665544332211ull;
	volatile uint64_t *t = (volatile uint64_t *)(self->dst + 4096);
	RMA2_NLA d;

	rma2_get_nla(self->rd, 4096, &d);
	for (uint32_t c = 1; c <= 8; c++) {
		uint64_t want = c == 8 ? value : (value & ((1ull << (8 * c)) - 1));
		/* requester: word0 = the value; completer: word0 = the address */
		struct xt_noti notis[2] = {
			{ RMA2_REQUESTER_NOTIFICATION, RMA2_IMMEDIATE_PUT, 0, me, vp, RMA2_NOTI_TE,
			  value, c, 0 },
			{ RMA2_COMPLETER_NOTIFICATION, RMA2_IMMEDIATE_PUT, 0, me, vp, RMA2_NOTI_TE,
			  d, c, 0 },
		};

		*t = 0xf0f0f0f0f0f0f0f0ull;
		ASSERT_EQ(RMA2_SUCCESS, rma2_post_immediate_put(self->port, self->h, c, value, d,
								RMA2_REQCOMPL_NOTIFICATION, 0));
		ASSERT_EQ(0, xt_expect_notis(_metadata, self->port, notis, 2, TMO_S,
					     "immediate put"));
		/* the low c bytes written, the others untouched */
		EXPECT_TRUE(*t == (want | (0xf0f0f0f0f0f0f0f0ull & ~(c == 8 ? ~0ull :
								       ((1ull << (8 * c)) - 1)))));
	}
	/* without notification: poll target memory (rma2_pong style) */
	*t = 0;
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_immediate_put(self->port, self->h, 8, 42, d, 0, 0));
	for (double end = xt_now_s() + TMO_S; *t == 0 && xt_now_s() < end;)
		sched_yield();
	EXPECT_TRUE(*t == 42);
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_immediate_put(self->port, self->h, 0, 1, d, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_immediate_put(self->port, self->h, 9, 1, d, 0, 0));
}

TEST_F(lb, notification_put)
{
	unsigned int me = rma2_get_nodeid(self->port), vp = rma2_get_vpid(self->port);
	/* loopback with all notifications: requester + completer (no memory touched) */
	struct xt_noti notis[2] = {
		{ RMA2_REQUESTER_NOTIFICATION, RMA2_NOTIFICATION_PUT, 0, me, vp, RMA2_NOTI_TE,
		  0xfeedf00dull, 0, 42 },
		{ RMA2_COMPLETER_NOTIFICATION, RMA2_NOTIFICATION_PUT, 0, me, vp, 0,
		  0xfeedf00dull, 0, 42 },
	};
	RMA2_Notification *np;

	ASSERT_EQ(RMA2_SUCCESS, rma2_post_notification(self->port, self->h, 42, 0xfeedf00dull,
						       RMA2_ALL_NOTIFICATIONS, 0));
	ASSERT_EQ(0, xt_expect_notis(_metadata, self->port, notis, 2, TMO_S, "notification put"));
	/* matching helpers on the device queue */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_notification(self->port, self->h, 0xCD, 7,
						       RMA2_COMPLETER_NOTIFICATION, 0));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_noti_match_block(self->port, 0xCD, RMA2_NODEID_ANY,
							   RMA2_VPID_ANY, &np));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_noti_match(self->port, 0xCE, RMA2_NODEID_ANY,
							  RMA2_VPID_ANY, &np));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_free(self->port, np));
	EXPECT_EQ(RMA2_NO_NOTI, rma2_noti_probe(self->port, &np));
}

TEST_F(lb, illegal_command_and_lock_number_give_error_notifications)
{
	RMA2_Descriptor d __attribute__((aligned(16)));
	RMA2_Notification n;
	RMA2_NLA s, t;

	rma2_get_nla(self->rs, 0, &s);
	rma2_get_nla(self->rd, 0, &t);
	memset(self->dst, 0x5a, 64);
	/* command 4 is not a valid command (librma tests/illegal_cmd.c) */
	ASSERT_EQ(RMA2_SUCCESS, rma2_desc_set_put_get(&d, self->h, (RMA2_Command)4, 64,
						      RMA2_ALL_NOTIFICATIONS, 0, s, t));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_descriptor(self->port, self->h, &d));
	/* refused by the requester unit: exactly one notification */
	ASSERT_EQ(0, xt_next_noti(self->port, &n, TMO_S));
	EXPECT_EQ(RMA2_REQUESTER_NOTIFICATION, rma2_noti_get_notification_type(&n));
	EXPECT_EQ(4, rma2_noti_get_cmd(&n));
	EXPECT_EQ(RMA2_ERROR_REQ, rma2_noti_get_error(&n));
	EXPECT_NE(0, xt_next_noti(self->port, &n, 0.3));
	EXPECT_EQ(0x5a, self->dst[0]);
	/* put to an NLA nobody registered: refused by the completer unit */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(self->port, self->h, self->rs, 0, 64,
						 0x7ff0000000ull, RMA2_ALL_NOTIFICATIONS, 0));
	ASSERT_EQ(0, xt_next_noti(self->port, &n, TMO_S));
	EXPECT_EQ(RMA2_REQUESTER_NOTIFICATION, rma2_noti_get_notification_type(&n));
	EXPECT_EQ(RMA2_BT_PUT, rma2_noti_get_cmd(&n));
	EXPECT_EQ(RMA2_ERROR_CMPL, rma2_noti_get_error(&n));
	EXPECT_NE(0, xt_next_noti(self->port, &n, 0.3));
	/* a lock number beyond the pool: refused by the requester unit */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_lock(self->port, self->h, 0, EXTOLL_RMA_LOCKS, 0, 1,
					       RMA2_ALL_NOTIFICATIONS, 0));
	ASSERT_EQ(0, xt_next_noti(self->port, &n, TMO_S));
	EXPECT_EQ(RMA2_REQUESTER_NOTIFICATION, rma2_noti_get_notification_type(&n));
	EXPECT_EQ(RMA2_LOCK_REQ, rma2_noti_get_cmd(&n));
	EXPECT_EQ(RMA2_ERROR_REQ, rma2_noti_get_error(&n));
	EXPECT_EQ(EXTOLL_RMA_LOCKS, rma2_noti_get_lock_number(&n));
	EXPECT_NE(0, xt_next_noti(self->port, &n, 0.3));
	/* the endpoint still works */
	ASSERT_EQ(0, do_put(_metadata, self, 100, 0, 0, 0));
}

/* One lock command with every notification; checks all three (spec 4.3). */
static void lock_op(struct __test_metadata *_metadata, FIXTURE_DATA(lb) *self, uint32_t unit,
		    uint32_t num, int32_t cmp, int32_t add, uint8_t want_result,
		    int32_t want_value)
{
	RMA2_Nodeid node = rma2_get_nodeid(self->port);
	RMA2_VPID vpid = rma2_get_vpid(self->port);
	struct { unsigned int type, cmd; uint8_t result; int32_t value; } want[3] = {
		{ RMA2_REQUESTER_NOTIFICATION, RMA2_LOCK_REQ, 0, cmp },
		{ RMA2_RESPONDER_NOTIFICATION, RMA2_LOCK_REQ, want_result, want_value },
		{ RMA2_COMPLETER_NOTIFICATION, RMA2_LOCK_RSP, want_result, want_value },
	};

	ASSERT_EQ(RMA2_SUCCESS, rma2_post_lock(self->port, self->h, unit, num, cmp, add,
					       RMA2_ALL_NOTIFICATIONS, 0));
	/* loopback: requester first, then the target's, then the origin's */
	for (int i = 0; i < 3; i++) {
		RMA2_Notification n;

		ASSERT_EQ(0, xt_next_noti(self->port, &n, TMO_S));
		EXPECT_EQ(want[i].type, rma2_noti_get_notification_type(&n));
		EXPECT_EQ(want[i].cmd, rma2_noti_get_cmd(&n));
		EXPECT_EQ(0, rma2_noti_get_error(&n));
		EXPECT_EQ(node, rma2_noti_get_remote_nodeid(&n));
		EXPECT_EQ(vpid, rma2_noti_get_remote_vpid(&n));
		EXPECT_EQ(num, rma2_noti_get_lock_number(&n));
		EXPECT_EQ(want[i].result, rma2_noti_get_lock_result(&n));
		EXPECT_EQ(want[i].value, (int32_t)rma2_noti_get_lock_value(&n));
	}
}

TEST_F(lb, lock_fetch_compare_and_add)
{
	RMA2_Notification *np;

	/* locks start at 0: take lock 1 (<= 0: add 1), then fail to take it again */
	lock_op(_metadata, self, 0, 1, 0, 1, 1, 1);
	lock_op(_metadata, self, 0, 1, 0, 1, 0, 1);
	/* release with a negative add (tests/simple_lock.c) */
	lock_op(_metadata, self, 0, 1, 1, -1, 1, 0);
	/* the responder unit's pool and other lock numbers are separate */
	lock_op(_metadata, self, 1, 1, 0, 5, 1, 5);
	lock_op(_metadata, self, 0, 1, 0, 0, 1, 0);
	lock_op(_metadata, self, 0, EXTOLL_RMA_LOCKS - 1, -1, 7, 0, 0);
	lock_op(_metadata, self, 0, EXTOLL_RMA_LOCKS - 1, 0, -7, 1, -7);
	lock_op(_metadata, self, 0, EXTOLL_RMA_LOCKS - 1, -8, 1, 0, -7);
	/* responder only (at the target: loopback), found by the lock matcher */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_lock(self->port, self->h, 1, 1, 5, 1,
					       RMA2_RESPONDER_NOTIFICATION, 0));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_lock_match_block(self->port, 1, RMA2_NODEID_ANY,
							   RMA2_VPID_ANY, &np));
	EXPECT_EQ(1, rma2_noti_get_lock_result(np));
	EXPECT_EQ(6, rma2_noti_get_lock_value(np));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_free(self->port, np));
	EXPECT_EQ(RMA2_NO_NOTI, rma2_noti_probe(self->port, &np));
}

TEST_F(lb, descriptor_path)
{
	RMA2_Descriptor *d;
	RMA2_Notification n;
	RMA2_NLA s, t;
	int nfree;

	rma2_get_nla(self->rs, 8, &s);
	rma2_get_nla(self->rd, 16, &t);
	xt_fill(self->src + 8, 256, 3);
	ASSERT_EQ(RMA2_SUCCESS, rma2_desc_alloc(self->port, &d));
	ASSERT_EQ(RMA2_SUCCESS, rma2_desc_query_free(self->port, &nfree));
	ASSERT_EQ(RMA2_SUCCESS, rma2_desc_set_put_get(d, self->h, RMA2_QW_PUT, 256,
						      RMA2_COMPLETER_NOTIFICATION, 0, s, t));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_descriptor(self->port, self->h, d));
	ASSERT_EQ(0, xt_next_noti(self->port, &n, TMO_S));
	EXPECT_EQ(0, rma2_noti_get_error(&n));
	EXPECT_EQ(0, memcmp(self->src + 8, self->dst + 16, 256));
	ASSERT_EQ(RMA2_SUCCESS, rma2_desc_set_noti_put(d, self->h, RMA2_COMPLETER_NOTIFICATION, 0,
						       0xEF, 99));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_descriptor(self->port, self->h, d));
	ASSERT_EQ(0, xt_next_noti(self->port, &n, TMO_S));
	EXPECT_EQ(0xEF, rma2_noti_get_notiput_class(&n));
	ASSERT_EQ(RMA2_SUCCESS, rma2_desc_set_immediate_put(d, self->h, RMA2_COMPLETER_NOTIFICATION,
							    0, 4, t, 0xa1b2c3d4));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_descriptor(self->port, self->h, d));
	ASSERT_EQ(0, xt_next_noti(self->port, &n, TMO_S));
	EXPECT_TRUE(*(uint32_t *)(self->dst + 16) == 0xa1b2c3d4);
	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_free(self->port, d));
}

TEST_F_TIMEOUT(lb, streaming_many_commands_in_order, 300)
{
	/* more commands than the device queue (256) without waiting; the
	 * post calls apply back-pressure instead of failing; then one
	 * notification for the last (rma2_ping style) */
	RMA2_NLA s, d;
	RMA2_Notification n;
	const int cmds = 2000;

	rma2_get_nla(self->rs, 0, &s);
	rma2_get_nla(self->rd, 0, &d);
	for (int i = 0; i < cmds; i++) {
		uint64_t v = (uint64_t)i + 1;

		ASSERT_EQ(RMA2_SUCCESS, rma2_post_immediate_put(self->port, self->h, 8, v,
				d + (uint64_t)(i % 512) * 8,
				i == cmds - 1 ? RMA2_COMPLETER_NOTIFICATION : 0, 0));
	}
	ASSERT_EQ(0, xt_next_noti(self->port, &n, TMO_S));
	/* in-order execution: every slot holds the value of its last writer */
	for (int k = 0; k < 512; k++) {
		uint64_t last = 0;

		for (int i = k; i < cmds; i += 512)
			last = (uint64_t)i + 1;
		ASSERT_TRUE(((uint64_t *)self->dst)[k] == last);
	}
}

/*
 * Kernel bypass: after set-up, posting puts / immediate puts / notification
 * puts and probing + freeing notifications run under SECCOMP_MODE_STRICT
 * (only read, write, exit, sigreturn allowed; any other system call kills
 * the process).
 */
static void no_syscall_child(volatile int *stage)
{
	RMA2_Port p;
	RMA2_Handle h;
	RMA2_Region *r;
	RMA2_Notification *n;
	RMA2_NLA s, d;
	uint8_t *buf = aligned_alloc(4096, 8192);
	int i, bad = 0;

	if (!buf || rma2_open(&p) || rma2_connect(p, rma2_get_nodeid(p), rma2_get_vpid(p),
						  RMA2_CONN_DEFAULT, &h) ||
	    rma2_register(p, buf, 8192, &r))
		syscall(SYS_exit, 20);
	rma2_get_nla(r, 0, &s);
	rma2_get_nla(r, 4096, &d);
	memset(buf, 0x33, 4096);
	*stage = 1;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0)
		syscall(SYS_exit, 21);
	*stage = 2;
	for (i = 0; i < 1000 && !bad; i++) {
		RMA2_ERROR rc;

		switch (i % 3) {
		case 0:
			rc = rma2_post_put_bt_direct(p, h, s, 1 + (uint32_t)i % 4096, d,
						     RMA2_COMPLETER_NOTIFICATION, 0);
			break;
		case 1:
			rc = rma2_post_immediate_put(p, h, 8, (uint64_t)i, d, RMA2_COMPLETER_NOTIFICATION, 0);
			break;
		default:
			rc = rma2_post_notification(p, h, 1, (uint64_t)i, RMA2_COMPLETER_NOTIFICATION, 0);
		}
		if (rc)
			bad = 1;
		while (rma2_noti_probe(p, &n) != RMA2_SUCCESS)
			;
		if (rma2_noti_get_error(n) || rma2_noti_free(p, n))
			bad = 1;
	}
	*stage = bad ? 3 : 4;
	syscall(SYS_exit, bad);
}

TEST(post_and_poll_make_no_system_calls)
{
	RMA2_Port probe = NULL;

	XT_RMA2_OPEN_OR_SKIP(&probe);
	rma2_close(probe);
	xt_expect_no_syscalls(_metadata, no_syscall_child);
}

TEST_HARNESS_MAIN
