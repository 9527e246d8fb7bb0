// SPDX-License-Identifier: GPL-2.0
/*
 * librma2 against a fake device: the library sources are linked directly
 * and an endpoint is created over plain memory (rma2__open_fake): 32
 * requester pages, a notification queue and a read-pointer word.  Checks
 * the command encoding of every post function (spec 2.5.3), argument
 * validation and error codes, the notification queue protocol (1.4, 2.9),
 * decoding of crafted notification words (4.1), matching, dumps,
 * descriptors, registration arithmetic (2.10), error strings (2.12).
 */
#include <pthread.h>
#include "rma2_int.h"
#include "extoll_hw.h"
#include "../lib/kselftest_exa.h"

#define PG 4096
#define QN 64

struct fake {
	uint8_t *pages;
	RMA2_Notification *queue;
	volatile uint64_t rp;
	RMA2_Port port;
};

FIXTURE(fake_rma2) {
	struct fake f;
	RMA2_Handle h;
};

FIXTURE_SETUP(fake_rma2)
{
	self->f.pages = aligned_alloc(PG, 32 * PG);
	self->f.queue = aligned_alloc(PG, QN * sizeof(RMA2_Notification));
	ASSERT_TRUE(self->f.pages && self->f.queue);
	memset(self->f.pages, 0, 32 * PG);
	memset(self->f.queue, 0, QN * sizeof(RMA2_Notification));
	/* page 0: the device's free command count (EXTOLL_RMA_CMD_FREE) */
	*(volatile uint64_t *)(self->f.pages + RMA2_CMD_FREE_OFF) = 1000000;
	ASSERT_EQ(RMA2_SUCCESS, rma2__open_fake(&self->f.port, 7, 3, self->f.pages, PG,
						self->f.queue, QN, &self->f.rp));
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(self->f.port, 0x1234, 0x56, RMA2_CONN_DEFAULT,
					     &self->h));
}

FIXTURE_TEARDOWN(fake_rma2)
{
	if (self->f.port)
		EXPECT_EQ(RMA2_SUCCESS, rma2_close(self->f.port));
}

static const volatile uint64_t *page_of(struct fake *f, unsigned int i)
{
	return (const volatile uint64_t *)(f->pages + (size_t)i * PG);
}

#define W0_CMD(w) (((w) >> 2) & 0xf)
#define W0_VPID(w) (((w) >> 8) & 0xff)
#define W0_NODE(w) (((w) >> 16) & 0xffff)
#define W0_SPEC(w) (((w) >> 32) & 7)
#define W0_MOD(w) (((w) >> 35) & 0xf)
#define W0_COUNT(w) (((w) >> 40) & 0x7fffff)

static uint64_t mk_w1(unsigned int size_or_class, unsigned int vpid, unsigned int node,
		      unsigned int type, unsigned int cmd, unsigned int mode, unsigned int err)
{
	return (uint64_t)(size_or_class & 0x7fffff) | ((uint64_t)(vpid & 0xff) << 23) |
	       ((uint64_t)node << 32) | ((uint64_t)type << 48) | ((uint64_t)cmd << 51) |
	       ((uint64_t)mode << 55) | ((uint64_t)err << 61);
}

static void push(struct fake *f, unsigned int idx, uint64_t w0, uint64_t w1)
{
	f->queue[idx % QN].word0.value = w0;
	__atomic_store_n(&f->queue[idx % QN].word1.value, w1, __ATOMIC_RELEASE);
}

TEST_F(fake_rma2, identity)
{
	EXPECT_EQ(7, rma2_get_nodeid(self->f.port));
	EXPECT_EQ(3, rma2_get_vpid(self->f.port));
	EXPECT_EQ(0, rma2_get_node_num(self->f.port));	/* 65536 truncated (original quirk) */
	EXPECT_EQ(256, rma2_get_proc_num(self->f.port));
	EXPECT_EQ(0xffff, rma2_get_nodeid(NULL));
	EXPECT_EQ(0xffff, rma2_get_vpid(NULL));
	EXPECT_EQ(0xffff, rma2_get_node_num(NULL));
	EXPECT_EQ(0xffff, rma2_get_proc_num(NULL));
	EXPECT_EQ(0x1234, rma2_handle_get_node(self->h));
	EXPECT_EQ(0x56, rma2_handle_get_vpid(self->h));
	EXPECT_EQ(0xffff, rma2_handle_get_node(NULL));
	EXPECT_EQ(0xffff, rma2_handle_get_vpid(NULL));
}

TEST_F(fake_rma2, connect_disconnect)
{
	RMA2_Handle h = NULL, h2 = NULL;

	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_connect(NULL, 1, 1, RMA2_CONN_DEFAULT, &h));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_connect(self->f.port, 1, 1, RMA2_CONN_DEFAULT, NULL));
	EXPECT_EQ(RMA2_ERR_INV_VALUE,
		  rma2_connect(self->f.port, 1, 1, (RMA2_Connection_Options)32, &h));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_connect(self->f.port, 0xffff, 1, RMA2_CONN_DEFAULT, &h));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_connect(self->f.port, 1, 256, RMA2_CONN_DEFAULT, &h));
	/* loopback and every option combination */
	for (unsigned int o = 0; o < 32; o++) {
		ASSERT_EQ(RMA2_SUCCESS, rma2_connect(self->f.port, 7, 3, (RMA2_Connection_Options)o,
						     &h));
		ASSERT_EQ(RMA2_SUCCESS, rma2_post_notification(self->f.port, h, 1, o,
								RMA2_COMPLETER_NOTIFICATION, 0));
		EXPECT_EQ(o, page_of(&self->f, o)[1]);
		ASSERT_EQ(RMA2_SUCCESS, rma2_disconnect(self->f.port, h));
	}
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(self->f.port, 1, 2, RMA2_CONN_DEFAULT, &h2));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_disconnect(NULL, h2));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_disconnect(self->f.port, NULL));
	EXPECT_EQ(RMA2_SUCCESS, rma2_disconnect(self->f.port, h2));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_close(NULL));
}

TEST_F(fake_rma2, post_put_get_encoding)
{
	static uint8_t buf[3 * PG] __attribute__((aligned(PG)));
	const volatile uint64_t *pg = page_of(&self->f, RMA2_CONN_DEFAULT);
	RMA2_Region *r = NULL;
	uint64_t w;

	ASSERT_EQ(RMA2_SUCCESS, rma2_register(self->f.port, buf + 0xb30, 5000, &r));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(self->f.port, self->h, r, 10, 100, 0xabc0,
						 RMA2_REQCOMPL_NOTIFICATION, RMA2_CMD_NTR));
	w = pg[0];
	EXPECT_EQ(3, w & 3);
	EXPECT_EQ(RMA2_BT_PUT, W0_CMD(w));
	EXPECT_EQ(0x56, W0_VPID(w));
	EXPECT_EQ(0x1234, W0_NODE(w));
	EXPECT_EQ(5, W0_SPEC(w));
	EXPECT_EQ(RMA2_CMD_NTR, W0_MOD(w));
	EXPECT_EQ(99, W0_COUNT(w));
	EXPECT_TRUE(pg[1] == (uint64_t)(uintptr_t)(buf + 0xb30 + 10));	/* read = local */
	EXPECT_TRUE(pg[2] == 0xabc0);						/* write = remote */

	/* get: read = remote (dest_address), write = local */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_get_bt(self->f.port, self->h, r, 1, 1, 0x5000,
						 RMA2_COMPLETER_NOTIFICATION, RMA2_CMD_DEFAULT));
	EXPECT_EQ(RMA2_BT_GET, W0_CMD(pg[0]));
	EXPECT_EQ(0, W0_COUNT(pg[0]));
	EXPECT_TRUE(pg[1] == 0x5000);
	EXPECT_TRUE(pg[2] == (uint64_t)(uintptr_t)(buf + 0xb31));

	ASSERT_EQ(RMA2_SUCCESS, rma2_post_get_qw_direct(self->f.port, self->h, 0x1000, 8388608,
							0x2000, 0, 0));
	EXPECT_EQ(RMA2_QW_GET, W0_CMD(pg[0]));
	EXPECT_EQ(0x7fffff, W0_COUNT(pg[0]));
	EXPECT_TRUE(pg[1] == 0x2000 && pg[2] == 0x1000);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_qw_direct(self->f.port, self->h, 0x1008, 16,
							0x2008, 0, 0));
	EXPECT_EQ(RMA2_QW_PUT, W0_CMD(pg[0]));
	EXPECT_TRUE(pg[1] == 0x1008 && pg[2] == 0x2008);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt_direct(self->f.port, self->h, 0x1001, 3,
							0x2003, 0, 0));
	EXPECT_EQ(RMA2_BT_PUT, W0_CMD(pg[0]));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_get_bt_direct(self->f.port, self->h, 0x1001, 3,
							0x2003, 0, 0));
	EXPECT_EQ(RMA2_BT_GET, W0_CMD(pg[0]));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_qw(self->f.port, self->h, r, 0x4d0, 8, 0x2008, 0, 0));
	EXPECT_TRUE(pg[1] == (uint64_t)(uintptr_t)(buf + 0x1000));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_get_qw(self->f.port, self->h, r, 0x4d0, 8, 0x2008, 0, 0));
	EXPECT_EQ(RMA2_QW_GET, W0_CMD(pg[0]));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(self->f.port, r));
}

TEST_F(fake_rma2, post_argument_errors)
{
	static uint8_t buf[PG] __attribute__((aligned(PG)));
	RMA2_Region *r = NULL;
	RMA2_Port p = self->f.port;
	RMA2_Handle h = self->h, other = NULL;
	RMA2_Port p2 = NULL;
	RMA2_Notification q2[8];
	volatile uint64_t rp2;
	static uint8_t pages2[32 * PG] __attribute__((aligned(PG)));

	ASSERT_EQ(RMA2_SUCCESS, rma2_register(p, buf, PG, &r));
	/* size 0, > 8 MiB */
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_bt(p, h, r, 0, 0, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_bt(p, h, r, 0, 8388609, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_get_bt_direct(p, h, 1, 0, 2, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_get_bt_direct(p, h, 1, 8388609, 2, 0, 0));
	/* qw: size multiple of 8, both addresses aligned */
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_qw(p, h, r, 0, 12, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_qw(p, h, r, 4, 8, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_qw(p, h, r, 0, 8, 0x1004, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_get_qw(p, h, r, 0, 9, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_put_qw_direct(p, h, 0x1001, 8, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_get_qw_direct(p, h, 0x1000, 8, 0x1002, 0, 0));
	/* bt: no alignment rule */
	EXPECT_EQ(RMA2_SUCCESS, rma2_post_put_bt(p, h, r, 3, 5, 0x1001, 0, 0));
	/* spec / modifier range */
	EXPECT_EQ(RMA2_ERR_WRONG_ARG,
		  rma2_post_put_bt(p, h, r, 0, 8, 0x1000, (RMA2_Notification_Spec)8, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG,
		  rma2_post_put_bt(p, h, r, 0, 8, 0x1000, 0, (RMA2_Command_Modifier)16));
	/* NULL region */
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_post_put_bt(p, h, NULL, 0, 8, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_post_get_qw(p, h, NULL, 0, 8, 0x1000, 0, 0));
	/* port / handle */
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_post_put_bt(NULL, h, r, 0, 8, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_post_put_bt(p, NULL, r, 0, 8, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_post_notification(NULL, h, 1, 2, 4, 0));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_post_notification(p, NULL, 1, 2, 4, 0));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_post_immediate_put(NULL, h, 8, 1, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_post_lock(p, NULL, 0, 1, 0, 1, 0, 0));
	/* a handle of another port */
	*(uint64_t *)(pages2 + RMA2_CMD_FREE_OFF) = 10;
	ASSERT_EQ(RMA2_SUCCESS, rma2__open_fake(&p2, 1, 1, pages2, PG, q2, 8, &rp2));
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(p2, 1, 1, RMA2_CONN_DEFAULT, &other));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_post_put_bt_direct(p, other, 8, 8, 8, 0, 0));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p2));
	/* immediate put count */
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_immediate_put(p, h, 0, 1, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_immediate_put(p, h, 9, 1, 0x1000, 0, 0));
	/* lock target / number */
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_lock(p, h, 2, 1, 0, 1, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_lock(p, h, 0, 0x1000000, 0, 1, 0, 0));
	/* descriptor */
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_post_descriptor(p, h, NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_post_descriptor(NULL, h, NULL));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, r));
}

TEST_F(fake_rma2, post_immediate_notification_lock)
{
	const volatile uint64_t *pg = page_of(&self->f, RMA2_CONN_DEFAULT);

	for (uint32_t c = 1; c <= 8; c++) {
		ASSERT_EQ(RMA2_SUCCESS, rma2_post_immediate_put(self->f.port, self->h, c,
				0x1122334455667788ull, 0x9000, RMA2_COMPLETER_NOTIFICATION, 0));
		EXPECT_EQ(RMA2_IMMEDIATE_PUT, W0_CMD(pg[0]));
		EXPECT_EQ(c - 1, W0_COUNT(pg[0]));
		EXPECT_TRUE(pg[1] == 0x9000 && pg[2] == 0x1122334455667788ull);
	}
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_notification(self->f.port, self->h, 0xAB,
			0xdeadbeefcafef00dull, RMA2_ALL_NOTIFICATIONS, RMA2_CMD_DEFAULT));
	EXPECT_EQ(RMA2_NOTIFICATION_PUT, W0_CMD(pg[0]));
	EXPECT_EQ(0xAB, W0_COUNT(pg[0]));
	EXPECT_EQ(7, W0_SPEC(pg[0]));
	EXPECT_TRUE(pg[1] == 0xdeadbeefcafef00dull && pg[2] == 0);

	ASSERT_EQ(RMA2_SUCCESS, rma2_post_lock(self->f.port, self->h, 1, 0x123456, 5, -2,
					       RMA2_ALL_NOTIFICATIONS, 0));
	EXPECT_EQ(RMA2_LOCK_REQ, W0_CMD(pg[0]));
	EXPECT_EQ(1, W0_COUNT(pg[0]) & 1);
	EXPECT_TRUE(pg[1] == ((5ull << 32) | 0x123456));
	EXPECT_TRUE(pg[2] == ((uint64_t)0xfffffffeu << 32));
}

TEST_F(fake_rma2, descriptors)
{
	RMA2_Descriptor *d[40], sd __attribute__((aligned(16)));
	const volatile uint64_t *pg = page_of(&self->f, RMA2_CONN_DEFAULT);
	int n = -1, n0;

	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_query_free(self->f.port, &n0));
	EXPECT_EQ(32, n0);
	for (int i = 0; i < 40; i++) {	/* grows beyond the initial 32 */
		ASSERT_EQ(RMA2_SUCCESS, rma2_desc_alloc(self->f.port, &d[i]));
		EXPECT_EQ(0, (uintptr_t)d[i] & 15);
	}
	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_query_free(self->f.port, &n));
	EXPECT_EQ(24, n);
	for (int i = 0; i < 40; i++)
		ASSERT_EQ(RMA2_SUCCESS, rma2_desc_free(self->f.port, d[i]));
	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_query_free(self->f.port, &n));
	EXPECT_EQ(64, n);
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_desc_alloc(NULL, &d[0]));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_desc_alloc(self->f.port, NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_desc_free(NULL, d[0]));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_desc_free(self->f.port, NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_desc_query_free(NULL, &n));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_desc_query_free(self->f.port, NULL));

	/* put/get setter, command used as given (even the invalid code 4) */
	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_set_put_get(&sd, self->h, (RMA2_Command)4, 64,
						      RMA2_ALL_NOTIFICATIONS, 0, 0x100, 0x200));
	EXPECT_TRUE(sd.handle == self->h);
	EXPECT_EQ(4, W0_CMD(sd.value[0]));
	EXPECT_EQ(63, W0_COUNT(sd.value[0]));
	EXPECT_EQ(0x1234, W0_NODE(sd.value[0]));
	EXPECT_TRUE(sd.value[1] == 0x100 && sd.value[2] == 0x200);
	EXPECT_EQ(RMA2_SUCCESS, rma2_post_descriptor(self->f.port, self->h, &sd));
	EXPECT_TRUE(pg[0] == sd.value[0] && pg[1] == 0x100 && pg[2] == 0x200);

	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_set_immediate_put(&sd, self->h, 4, 0, 8, 0x300, 42));
	EXPECT_EQ(RMA2_IMMEDIATE_PUT, W0_CMD(sd.value[0]));
	EXPECT_EQ(7, W0_COUNT(sd.value[0]));
	EXPECT_TRUE(sd.value[1] == 0x300 && sd.value[2] == 42);

	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_set_noti_put(&sd, self->h, 4, 0, 0xCD, 77));
	EXPECT_EQ(RMA2_NOTIFICATION_PUT, W0_CMD(sd.value[0]));
	EXPECT_EQ(0xCD, W0_COUNT(sd.value[0]));
	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_set_notification_value(&sd, 0xEF, 99));
	EXPECT_EQ(0xEF, W0_COUNT(sd.value[0]));
	EXPECT_TRUE(sd.value[1] == 99);

	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_set_lock(&sd, self->h, 7, 0, 1, 9, 10, 11));
	EXPECT_EQ(RMA2_LOCK_REQ, W0_CMD(sd.value[0]));
	EXPECT_TRUE(sd.value[1] == ((10ull << 32) | 9) && sd.value[2] == (11ull << 32));
	EXPECT_EQ(RMA2_ERR_WRONG_CMD, rma2_desc_set_notification_value(&sd, 1, 1));

	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_desc_set_put_get(NULL, self->h, 2, 1, 0, 0, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_desc_set_immediate_put(NULL, self->h, 0, 0, 1, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_desc_set_noti_put(NULL, self->h, 0, 0, 1, 0));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_desc_set_lock(NULL, self->h, 0, 0, 0, 0, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_desc_set_notification_value(NULL, 1, 1));
}

/* uapi: every decoder of a notification word inverts its encoder */
TEST(noti_word_decoders_invert_the_encoders)
{
	static const struct { uint32_t size, vpid, node, type, cmd, mode, err; } f[] = {
		{ 0, 0, 0, 0, 0, 0, 0 },
		{ 0x7fffff, 0xff, 0xffff, 7, 0xf, 0x3f, 7 },
		{ 495, 0x7f, 0xbeef, 4, RMA2_QW_PUT, RMA2_NOTI_TE | RMA2_NOTI_NTR, 0 },
		{ 0x2aaaaa, 0x55, 0x5555, 2, 5, 0x2a, 5 },
	};
	unsigned int i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint64_t w1 = EXTOLL_NOTI_W1(f[i].size, f[i].vpid, f[i].node, f[i].type,
					     f[i].cmd, f[i].mode, f[i].err);
		uint64_t w0 = EXTOLL_LOCK_W0(f[i].size & 0xffffff, f[i].vpid, 0x80000000u | f[i].node);

		EXPECT_EQ(f[i].size, EXTOLL_NOTI_W1_SIZE(w1));
		EXPECT_EQ(f[i].size & 0xff, EXTOLL_NOTI_W1_CLASS(w1));
		EXPECT_EQ(f[i].vpid, EXTOLL_NOTI_W1_RVPID(w1));
		EXPECT_EQ(f[i].node, EXTOLL_NOTI_W1_RNODE(w1));
		EXPECT_EQ(f[i].type, EXTOLL_NOTI_W1_TYPE(w1));
		EXPECT_EQ(f[i].cmd, EXTOLL_NOTI_W1_CMD(w1));
		EXPECT_EQ(f[i].mode, EXTOLL_NOTI_W1_MODE(w1));
		EXPECT_EQ(f[i].err, EXTOLL_NOTI_W1_ERR(w1));
		EXPECT_EQ(f[i].size & 0xffffff, EXTOLL_LOCK_W0_NUM(w0));
		EXPECT_EQ(f[i].vpid, EXTOLL_LOCK_W0_RESULT(w0));
		EXPECT_EQ(0x80000000u | f[i].node, EXTOLL_LOCK_W0_VALUE(w0));
	}
}

TEST(noti_decoding)
{
	RMA2_Notification n;

	/* completer notification of a put: 496 bytes at 0x12345000 from node 0xbeef vpid 0x7f */
	n.word0.value = 0x12345000;
	n.word1.value = mk_w1(495, 0x7f, 0xbeef, 4, RMA2_QW_PUT, RMA2_NOTI_TE | RMA2_NOTI_NTR, 0);
	EXPECT_EQ(RMA2_QW_PUT, rma2_noti_get_cmd(&n));
	EXPECT_EQ(RMA2_COMPLETER_NOTIFICATION, rma2_noti_get_notification_type(&n));
	EXPECT_EQ(RMA2_NOTI_TE | RMA2_NOTI_NTR, rma2_noti_get_mode(&n));
	EXPECT_EQ(0, rma2_noti_get_error(&n));
	EXPECT_EQ(0xbeef, rma2_noti_get_remote_nodeid(&n));
	EXPECT_EQ(0x7f, rma2_noti_get_remote_vpid(&n));
	EXPECT_TRUE(rma2_noti_get_local_address(&n) == 0x12345000);
	EXPECT_EQ(496, rma2_noti_get_size(&n));
	/* last fragment of a 10000-byte put starting at 0x12343000 + ... */
	EXPECT_EQ(0x12345000 - 0x12343000 + 496, rma2_noti_get_total_size(0x12343000, &n));
	/* pscom4velo raw decoding */
	EXPECT_EQ(496, (n.word1.value & 0x7fffff) + 1);

	/* maximum fields */
	n.word1.value = mk_w1(0x7fffff, 0xff, 0xffff, 7, 15, 0x3f, 7);
	EXPECT_EQ(8388608, rma2_noti_get_size(&n));
	EXPECT_EQ(0xff, rma2_noti_get_remote_vpid(&n));
	EXPECT_EQ(0xffff, rma2_noti_get_remote_nodeid(&n));
	EXPECT_EQ(7, rma2_noti_get_notification_type(&n));
	EXPECT_EQ(15, rma2_noti_get_cmd(&n));
	EXPECT_EQ(0x3f, rma2_noti_get_mode(&n));
	EXPECT_EQ(7, rma2_noti_get_error(&n));
	EXPECT_EQ(0xff, rma2_noti_get_notiput_class(&n));

	/* notification put */
	n.word0.value = 0xfeedfacecafebeefull;
	n.word1.value = mk_w1(0xCD, 2, 1, 4, RMA2_NOTIFICATION_PUT, 0, 0);
	EXPECT_TRUE(rma2_noti_get_notiput_payload(&n) == 0xfeedfacecafebeefull);
	EXPECT_EQ(0xCD, rma2_noti_get_notiput_class(&n));
	EXPECT_EQ(RMA2_ERROR_CMPL, ({ n.word1.value |= 4ull << 61; rma2_noti_get_error(&n); }));

	/* lock */
	n.word0.value = (0xfffffffeull << 32) | (1ull << 24) | 0x00abcd;
	n.word1.value = mk_w1(0, 1, 1, 2, RMA2_LOCK_REQ, 0, 0);
	EXPECT_EQ(0xabcd, rma2_noti_get_lock_number(&n));
	EXPECT_EQ(1, rma2_noti_get_lock_result(&n));
	EXPECT_TRUE(rma2_noti_get_lock_value(&n) == 0xfffffffeu);

	/* NULL is harmless */
	EXPECT_EQ(0, rma2_noti_get_size(NULL));
	EXPECT_EQ(0, rma2_noti_get_error(NULL));
	EXPECT_EQ(0xffff, rma2_noti_get_remote_nodeid(NULL));
}

TEST_F(fake_rma2, noti_queue_protocol)
{
	RMA2_Notification *n = NULL, *n2 = NULL, junk;

	EXPECT_EQ(RMA2_NO_NOTI, rma2_noti_probe(self->f.port, &n));
	EXPECT_TRUE(n == NULL);
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_noti_probe(NULL, &n));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_probe(self->f.port, NULL));
	/* freeing with nothing present / a bogus pointer: error, no crash */
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_free(self->f.port, &junk));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_free(self->f.port, &self->f.queue[0]));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_free(self->f.port, NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_noti_free(NULL, &junk));

	push(&self->f, 0, 0x1000, mk_w1(7, 1, 2, 4, RMA2_BT_PUT, 0, 0));
	push(&self->f, 1, 0x2000, mk_w1(15, 1, 2, 4, RMA2_BT_PUT, 0, 0));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_probe(self->f.port, &n));
	EXPECT_TRUE(n == &self->f.queue[0]);		/* pointer into the queue */
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_probe(self->f.port, &n2));
	EXPECT_TRUE(n2 == n);				/* idempotent until freed */
	/* only the head may be freed */
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_free(self->f.port, &self->f.queue[1]));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_free(self->f.port, n));
	EXPECT_TRUE(self->f.queue[0].word1.value == 0);	/* consumer zeroes word1 */
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_free(self->f.port, n));	/* double free */
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_get_block(self->f.port, &n));
	EXPECT_TRUE(n == &self->f.queue[1]);
	EXPECT_EQ(16, rma2_noti_get_size(n));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_free(self->f.port, n));
	EXPECT_EQ(RMA2_NO_NOTI, rma2_noti_probe(self->f.port, &n));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_noti_get_block(NULL, &n));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_get_block(self->f.port, NULL));
}

TEST_F(fake_rma2, noti_lazy_rp_and_wrap)
{
	RMA2_Notification *n;
	unsigned int i;

	self->f.rp = 12345;
	/* 3 laps around the 64-entry ring, FIFO order kept */
	for (i = 0; i < 3 * QN; i++) {
		push(&self->f, i, i, mk_w1(i & 0x7fffff, 0, 0, 4, RMA2_BT_PUT, 0, 0));
		ASSERT_EQ(RMA2_SUCCESS, rma2_noti_probe(self->f.port, &n));
		ASSERT_TRUE(n->word0.value == i);
		ASSERT_EQ(RMA2_SUCCESS, rma2_noti_free(self->f.port, n));
		if (i == RMA2_RP_LAZYNESS - 1)
			EXPECT_EQ(12345, self->f.rp);	/* not yet written back */
		if (i == RMA2_RP_LAZYNESS)
			EXPECT_EQ(RMA2_RP_LAZYNESS + 1, self->f.rp);
	}
	EXPECT_NE(12345, self->f.rp);
	EXPECT_LT(self->f.rp, QN);
}

struct late { struct fake *f; };

static void *late_writer(void *arg)
{
	struct fake *f = arg;

	usleep(100000);
	push(f, 0, 0x77, mk_w1(0, 0, 0, 4, RMA2_IMMEDIATE_PUT, 0, 0));
	return NULL;
}

TEST_F(fake_rma2, noti_get_block_waits)
{
	pthread_t t;
	RMA2_Notification *n = NULL;

	ASSERT_EQ(0, pthread_create(&t, NULL, late_writer, &self->f));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_get_block(self->f.port, &n));
	EXPECT_TRUE(n->word0.value == 0x77);
	pthread_join(t, NULL);
}

TEST_F(fake_rma2, noti_match)
{
	RMA2_Notification *n = NULL;
	RMA2_Port p = self->f.port;

	EXPECT_EQ(RMA2_NO_NOTI, rma2_noti_match(p, RMA2_ANY, RMA2_NODEID_ANY, RMA2_VPID_ANY,
						RMA2_COMPLETER_NOTIFICATION, RMA2_ANY_NLA, 0, &n));
	/* get completion: cmd 10, node 9, vpid 4, 100 bytes at 0x5000 */
	push(&self->f, 0, 0x5000, mk_w1(99, 4, 9, 4, RMA2_GET_BT_RSP, 0, 0));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_match(p, RMA2_ANY, RMA2_NODEID_ANY, RMA2_VPID_ANY,
						RMA2_COMPLETER_NOTIFICATION, RMA2_ANY_NLA, 0, &n));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_match(p, RMA2_GETS, 9, 4, RMA2_COMPLETER_NOTIFICATION,
						0x5000, 0, &n));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_match(p, RMA2_GET_BT_RSP, 9, 4,
						RMA2_COMPLETER_NOTIFICATION, 0x5000 + 100,
						(int)RMA2_MATCH_LAST_NLA_FLAG, &n));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_match(p, RMA2_PUTS, 9, 4,
						     RMA2_COMPLETER_NOTIFICATION, 0x5000, 0, &n));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_match(p, RMA2_ANY, 8, 4,
						     RMA2_COMPLETER_NOTIFICATION, 0x5000, 0, &n));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_match(p, RMA2_ANY, 9, 5,
						     RMA2_COMPLETER_NOTIFICATION, 0x5000, 0, &n));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_match(p, RMA2_ANY, 9, 4,
						     RMA2_REQUESTER_NOTIFICATION, 0x5000, 0, &n));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_match(p, RMA2_ANY, 9, 4,
						     RMA2_COMPLETER_NOTIFICATION, 0x5008, 0, &n));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_match_block(p, RMA2_ANY, 9, 4,
						      RMA2_COMPLETER_NOTIFICATION, 0x5000, 0, &n));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_match(p, RMA2_ANY, 9, 4, RMA2_COMPLETER_NOTIFICATION,
						0x5000, (int)RMA2_BLOCK_FLAG, &n));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_noti_match(p, RMA2_CLASS_ANY, RMA2_NODEID_ANY,
							  RMA2_VPID_ANY, &n));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_lock_match(p, RMA2_LOCK_ANY, RMA2_NODEID_ANY,
							  RMA2_VPID_ANY, &n));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_noti_match(NULL, RMA2_ANY, 9, 4, 4, 0, 0, &n));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_match(p, RMA2_ANY, 9, 4, 4, 0, 0, NULL));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_free(p, n));

	/* notification put */
	push(&self->f, 1, 42, mk_w1(0xAB, 4, 9, 4, RMA2_NOTIFICATION_PUT, 0, 0));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_noti_match(p, 0xAB, 9, 4, &n));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_noti_match_block(p, RMA2_CLASS_ANY, RMA2_NODEID_ANY,
							   RMA2_VPID_ANY, &n));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_noti_match(p, 0xAC, 9, 4, &n));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_noti_match(p, 0xAB, 8, 4, &n));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_noti_noti_match(NULL, 0xAB, 9, 4, &n));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_free(p, n));

	/* lock responder notification */
	push(&self->f, 2, (5ull << 32) | (1ull << 24) | 77, mk_w1(0, 4, 9, 2, RMA2_LOCK_REQ, 0, 0));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_lock_match(p, 77, 9, 4, &n));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_lock_match_block(p, RMA2_LOCK_ANY, RMA2_NODEID_ANY,
							   RMA2_VPID_ANY, &n));
	EXPECT_EQ(RMA2_ERR_NO_MATCH, rma2_noti_lock_match(p, 78, 9, 4, &n));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_noti_lock_match(NULL, 77, 9, 4, &n));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_free(p, n));
}

TEST(noti_dup_and_dumps)
{
	RMA2_Notification a, b;
	char s[512] = "prefix:";
	char tiny[8] = "";
	char *text = NULL;
	size_t tl = 0;
	FILE *mf;

	a.word0.value = 0x1000;
	a.word1.value = mk_w1(63, 3, 5, 4, RMA2_BT_PUT, 0, 0);
	memset(&b, 0, sizeof(b));
	EXPECT_EQ(RMA2_SUCCESS, rma2_noti_dup(&a, &b));
	EXPECT_EQ(0, memcmp(&a, &b, 16));
	EXPECT_TRUE(a.word1.value != 0);	/* dup does not free the input */
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_dup(NULL, &b));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_dup(&a, NULL));

	rma2_noti_sdump(&a, s, sizeof(s));
	EXPECT_EQ(0, strncmp(s, "prefix:", 7));	/* appends */
	EXPECT_TRUE(strstr(s, "BT_PUT") != NULL);
	EXPECT_TRUE(strstr(s, "size 64") != NULL);
	rma2_noti_sdump(&a, tiny, sizeof(tiny));
	EXPECT_LT(strlen(tiny), sizeof(tiny));
	rma2_noti_sdump(&a, NULL, 10);
	rma2_noti_sdump(&a, s, 0);

	mf = open_memstream(&text, &tl);
	ASSERT_TRUE(mf != NULL);
	a.word1.value = mk_w1(0xEF, 3, 5, 4, RMA2_NOTIFICATION_PUT, 0, 0);
	rma2_noti_fdump(&a, mf);
	rma2_noti_fdump(NULL, mf);
	rma2_noti_fdump(&a, NULL);
	fclose(mf);
	EXPECT_TRUE(strstr(text, "class 0xef") != NULL);
	free(text);
	rma2_noti_dump(&a);
}

TEST_F(fake_rma2, registration)
{
	static uint8_t buf[4 * PG] __attribute__((aligned(PG)));
	RMA2_Region *r = NULL, *r2 = NULL, *keep = (RMA2_Region *)0x1;
	RMA2_Region byval;
	RMA2_NLA nla;
	void *va;
	size_t sz, cnt;

	ASSERT_EQ(RMA2_SUCCESS, rma2_register(self->f.port, buf + 0xc00, 5000, &r));
	EXPECT_TRUE(r->start == buf);
	EXPECT_EQ(0xc00, r->offset);
	EXPECT_EQ(2, r->count);		/* ceil((5000 + 0xc00) / 4096) */
	EXPECT_EQ(2 * PG, r->size);
	EXPECT_TRUE(r->end == buf + 2 * PG);
	EXPECT_TRUE(r->endpoint == self->f.port);
	EXPECT_TRUE(r->parent == NULL);
	EXPECT_NE(0, r->nla);
	ASSERT_EQ(RMA2_SUCCESS, rma2_get_nla(r, 100, &nla));
	EXPECT_TRUE(nla == r->nla + 0xc00 + 100);
	/* pscom4velo: nla of buf = region.nla + (buf - region.start) */
	EXPECT_TRUE(nla == r->nla + (uint64_t)((buf + 0xc00 + 100) - (uint8_t *)r->start));
	ASSERT_EQ(RMA2_SUCCESS, rma2_get_va(r, 100, &va));
	EXPECT_TRUE(va == buf + 0xc00 + 100);
	ASSERT_EQ(RMA2_SUCCESS, rma2_get_size(r, &sz));
	EXPECT_EQ(2 * PG, sz);
	ASSERT_EQ(RMA2_SUCCESS, rma2_get_page_count(r, &cnt));
	EXPECT_EQ(2, cnt);
	EXPECT_EQ(1, rma2_get_region_contained(r, buf + 0xc00, 5000));
	EXPECT_EQ(1, rma2_get_region_contained(r, buf, 2 * PG));
	EXPECT_EQ(0, rma2_get_region_contained(r, buf, 2 * PG + 1));
	EXPECT_EQ(1, rma2_get_region_overlap(r, buf + 2 * PG - 1, 10));
	EXPECT_EQ(0, rma2_get_region_overlap(r, buf + 3 * PG, 10));
	EXPECT_EQ(1, rma2_get_region_equal(r, buf, 2 * PG));
	EXPECT_EQ(0, rma2_get_region_equal(r, buf + 0xc00, 5000));
	EXPECT_EQ(0, rma2_get_region_contained(NULL, buf, 1));

	/* overlapping / identical registrations are independent */
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(self->f.port, buf + 0xc00, 5000, &r2));
	EXPECT_TRUE(r2 != r);
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(self->f.port, r2));
	EXPECT_TRUE(r->nla != 0);

	/* *region untouched on failure */
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register(self->f.port, buf, 0, &keep));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register(self->f.port, NULL, 10, &keep));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_register(NULL, buf, 10, &keep));
	EXPECT_TRUE(keep == (RMA2_Region *)0x1);
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register(self->f.port, buf, 10, NULL));

	/* by value (pscom4velo) */
	memset(&byval, 0, sizeof(byval));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register_nomalloc(self->f.port, buf + 1, 1, &byval));
	EXPECT_EQ(1, byval.count);
	EXPECT_EQ(1, byval.offset);
	EXPECT_TRUE(byval.endpoint == NULL);
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister_nofree(self->f.port, &byval));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register_nomalloc(self->f.port, buf, 1, NULL));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_unregister_nofree(self->f.port, NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_unregister_nofree(NULL, &byval));

	/* cached / adhoc */
	ASSERT_EQ(RMA2_SUCCESS, rma2_register_cached(self->f.port, buf, 100, &r2));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister_cached(self->f.port, r2));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register_adhoc(self->f.port, buf + PG + 5, &r2));
	EXPECT_EQ(1, r2->count);
	EXPECT_TRUE(r2->start == buf + PG);
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister_adhoc(self->f.port, r2));

	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_get_nla(NULL, 0, &nla));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_get_nla(r, 0, NULL));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_get_va(NULL, 0, &va));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_get_size(NULL, &sz));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_get_page_count(r, NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_unregister(NULL, r));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_unregister(self->f.port, NULL));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(self->f.port, r));
}

TEST(error_strings)
{
	static const int codes[] = { 0, -1, -2, -3, -4, -5, -6, -7, -9, -10, -11, -12, -13, -15,
				     -16, -17, -18, -22, -23, -24, -25, -26, 27, 28, 29, 30, 31, 32 };
	char buf[100], prev[100] = "";
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		memset(buf, 'x', sizeof(buf));
		rma2_serror((RMA2_ERROR)codes[i], buf, sizeof(buf));
		EXPECT_LT(strlen(buf), sizeof(buf));
		EXPECT_GT(strlen(buf), 0);
		EXPECT_TRUE(strncmp(buf, "unknown", 7) != 0);
		EXPECT_TRUE(strcmp(buf, prev) != 0);
		strcpy(prev, buf);
	}
	memset(buf, 'x', sizeof(buf));
	rma2_serror((RMA2_ERROR)-8, buf, sizeof(buf));	/* unused code: generic text */
	EXPECT_EQ(0, strncmp(buf, "unknown", 7));
	memset(buf, 'x', sizeof(buf));
	rma2_serror(RMA2_ERR_INVALID_VERSION, buf, 5);	/* truncated but terminated */
	EXPECT_EQ(4, strlen(buf));
	rma2_serror(RMA2_SUCCESS, NULL, 10);
	rma2_serror(RMA2_SUCCESS, buf, 0);
	rma2_perror(RMA2_ERR_NO_DEVICE, "test_rma2_fake");
	rma2_perror(RMA2_ERR_NO_DEVICE, NULL);
}

TEST_F(fake_rma2, configuration)
{
	RMA2_Port p = self->f.port;
	const volatile uint64_t *pg;
	uint32_t rq = 9, rs = 9;

	EXPECT_EQ(QN * 16, rma2_get_queue_size(p));
	EXPECT_EQ(0, rma2_get_queue_size(NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_set_queue_size(NULL, 4096));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_set_queue_size(p, 1000));
	EXPECT_EQ(RMA2_ERR_NOT_YET, rma2_set_queue_size(p, 8192));
	EXPECT_EQ(64 * 1024, rma2_get_queue_segment_size(p));
	EXPECT_EQ(RMA2_SUCCESS, rma2_set_queue_segment_size(p, 8192));
	EXPECT_EQ(8192, rma2_get_queue_segment_size(p));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_set_queue_segment_size(p, 100));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_set_queue_segment_size(NULL, 4096));
	EXPECT_EQ(0, rma2_get_queue_segment_size(NULL));

	EXPECT_EQ(RMA2_REPLAY_ALL, rma2_get_replay_buffer_mode(p));
	rma2_set_replay_mode(p, RMA2_REPLAY_MANUAL);
	EXPECT_EQ(RMA2_REPLAY_MANUAL, rma2_get_replay_buffer_mode(p));
	rma2_set_replay_mode(p, (RMA2_Replay_Buffer_Mode)99);
	EXPECT_EQ(RMA2_REPLAY_MANUAL, rma2_get_replay_buffer_mode(p));
	rma2_set_replay_mode(NULL, RMA2_REPLAY_ALL);
	rma2_replay_buffer_drain(p);
	rma2_replay_buffer_drain(NULL);

	/* connection option requests switch the requester page */
	EXPECT_EQ(0, rma2_get_interrupt(p, self->h));
	EXPECT_EQ(RMA2_SUCCESS, rma2_request_interrupt(p, self->h));
	EXPECT_EQ(1, rma2_get_interrupt(p, self->h));
	EXPECT_EQ(RMA2_SUCCESS, rma2_request_rra(p, self->h));
	EXPECT_EQ(1, rma2_get_rra(p, self->h));
	EXPECT_EQ(0, rma2_get_physical_access(p, self->h));
	EXPECT_EQ(RMA2_SUCCESS, rma2_request_physical_access(p, self->h));
	EXPECT_EQ(1, rma2_get_physical_access(p, self->h));
	EXPECT_EQ(RMA2_SUCCESS, rma2_request_tcs(p, self->h, 2, 1));
	EXPECT_EQ(RMA2_SUCCESS, rma2_get_tcs(p, self->h, &rq, &rs));
	EXPECT_EQ(2, rq);
	EXPECT_EQ(1, rs);
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_request_tcs(p, self->h, 4, 0));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_get_tcs(p, self->h, NULL, &rs));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_notification(p, self->h, 1, 0x55, 4, 0));
	pg = page_of(&self->f, RMA2_CONN_IRQ | RMA2_CONN_RRA | RMA2_CONN_TC2);
	EXPECT_TRUE(pg[1] == 0x55);
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_request_interrupt(p, NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_request_rra(NULL, self->h));
	EXPECT_EQ(0, rma2_get_rra(NULL, self->h));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_request_physical_access(p, NULL));
	EXPECT_EQ(RMA2_ERR_NOT_YET, rma2_set_protectionid(p, 1));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_set_protectionid(NULL, 1));
}

/*
 * Every post function with every documented error: the same arguments as
 * a successful post except one, and nothing reaches the requester page.
 */
typedef RMA2_ERROR (*region_post)(RMA2_Port, RMA2_Handle, RMA2_Region *, uint32_t, uint32_t,
				  RMA2_NLA, RMA2_Notification_Spec, RMA2_Command_Modifier);
typedef RMA2_ERROR (*direct_post)(RMA2_Port, RMA2_Handle, RMA2_NLA, uint32_t, RMA2_NLA,
				  RMA2_Notification_Spec, RMA2_Command_Modifier);

struct post_variant {
	const char *name;
	region_post region;
	direct_post direct;
	int qw;
};

static const struct post_variant post_variants[] = {
	{ "put_bt", rma2_post_put_bt, NULL, 0 },
	{ "put_qw", rma2_post_put_qw, NULL, 1 },
	{ "get_bt", rma2_post_get_bt, NULL, 0 },
	{ "get_qw", rma2_post_get_qw, NULL, 1 },
	{ "put_bt_direct", NULL, rma2_post_put_bt_direct, 0 },
	{ "put_qw_direct", NULL, rma2_post_put_qw_direct, 1 },
	{ "get_bt_direct", NULL, rma2_post_get_bt_direct, 0 },
	{ "get_qw_direct", NULL, rma2_post_get_qw_direct, 1 },
};

/* local = offset into r (region variants) or NLA r->nla + offset (direct) */
static RMA2_ERROR post_one(const struct post_variant *v, RMA2_Port p, RMA2_Handle h,
			   RMA2_Region *r, uint32_t local, uint32_t size, RMA2_NLA remote,
			   unsigned int spec, unsigned int mod)
{
	if (v->region)
		return v->region(p, h, r, local, size, remote, (RMA2_Notification_Spec)spec,
				 (RMA2_Command_Modifier)mod);
	return v->direct(p, h, r->nla + r->offset + local, size, remote,
			 (RMA2_Notification_Spec)spec, (RMA2_Command_Modifier)mod);
}

TEST_F(fake_rma2, every_post_function_every_error_code)
{
	static uint8_t buf[2 * PG] __attribute__((aligned(PG)));
	static uint8_t pages2[32 * PG] __attribute__((aligned(PG)));
	volatile uint64_t *pg = (volatile uint64_t *)page_of(&self->f, RMA2_CONN_DEFAULT);
	RMA2_Port p = self->f.port, p2 = NULL;
	RMA2_Handle h = self->h, foreign = NULL;
	RMA2_Notification q2[8];
	volatile uint64_t rp2;
	RMA2_Region *r;

	*(uint64_t *)(pages2 + RMA2_CMD_FREE_OFF) = 10;
	ASSERT_EQ(RMA2_SUCCESS, rma2__open_fake(&p2, 1, 1, pages2, PG, q2, 8, &rp2));
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(p2, 1, 1, RMA2_CONN_DEFAULT, &foreign));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(p, buf, sizeof(buf), &r));
	for (size_t i = 0; i < sizeof(post_variants) / sizeof(post_variants[0]); i++) {
		const struct post_variant *v = &post_variants[i];

		TH_LOG("%s", v->name);
		pg[0] = 0;
		ASSERT_EQ(RMA2_SUCCESS, post_one(v, p, h, r, 8, 64, 0x1000, 4, 0));
		ASSERT_NE(0, pg[0]);
		pg[0] = 0;
		EXPECT_EQ(RMA2_ERR_INV_PORT, post_one(v, NULL, h, r, 8, 64, 0x1000, 4, 0));
		EXPECT_EQ(RMA2_ERR_INV_HANDLE, post_one(v, p, NULL, r, 8, 64, 0x1000, 4, 0));
		EXPECT_EQ(RMA2_ERR_INV_HANDLE, post_one(v, p, foreign, r, 8, 64, 0x1000, 4, 0));
		EXPECT_EQ(RMA2_ERR_WRONG_ARG, post_one(v, p, h, r, 8, 0, 0x1000, 4, 0));
		EXPECT_EQ(RMA2_ERR_WRONG_ARG, post_one(v, p, h, r, 8, RMA2_MAX_SIZE + 8, 0x1000, 4, 0));
		EXPECT_EQ(RMA2_ERR_WRONG_ARG, post_one(v, p, h, r, 8, 64, 0x1000, 8, 0));
		EXPECT_EQ(RMA2_ERR_WRONG_ARG, post_one(v, p, h, r, 8, 64, 0x1000, 4, 16));
		if (v->qw) {
			/* size, local and remote address: multiples of 8 */
			EXPECT_EQ(RMA2_ERR_WRONG_ARG, post_one(v, p, h, r, 8, 60, 0x1000, 4, 0));
			EXPECT_EQ(RMA2_ERR_WRONG_ARG, post_one(v, p, h, r, 4, 64, 0x1000, 4, 0));
			EXPECT_EQ(RMA2_ERR_WRONG_ARG, post_one(v, p, h, r, 8, 64, 0x1004, 4, 0));
		} else {
			/* byte variants: no alignment rule */
			EXPECT_EQ(RMA2_SUCCESS, post_one(v, p, h, r, 3, 61, 0x1005, 4, 0));
			EXPECT_NE(0, pg[0]);
			pg[0] = 0;
		}
		if (v->region)
			EXPECT_EQ(RMA2_ERR_INV_VALUE, v->region(p, h, NULL, 8, 64, 0x1000,
								RMA2_COMPLETER_NOTIFICATION, 0));
		EXPECT_EQ(0, pg[0]);	/* no failed call posted anything */
	}
	/* the other posting functions */
	pg[0] = 0;
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_post_immediate_put(NULL, h, 8, 1, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_post_immediate_put(p, foreign, 8, 1, 0x1000, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_immediate_put(p, h, 8, 1, 0x1000,
							      (RMA2_Notification_Spec)8, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_immediate_put(p, h, 8, 1, 0x1000, 0,
							      (RMA2_Command_Modifier)16));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_post_notification(NULL, h, 1, 1, 4, 0));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_post_notification(p, foreign, 1, 1, 4, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_notification(p, h, 1, 1, (RMA2_Notification_Spec)9,
							     0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_notification(p, h, 1, 1, 4,
							     (RMA2_Command_Modifier)31));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_post_lock(NULL, h, 0, 1, 0, 1, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_post_lock(p, foreign, 0, 1, 0, 1, 0, 0));
	EXPECT_EQ(RMA2_ERR_WRONG_ARG, rma2_post_lock(p, h, 0, 1, 0, 1, (RMA2_Notification_Spec)8, 0));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_post_descriptor(p, NULL, NULL));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_post_descriptor(p, foreign, NULL));
	EXPECT_EQ(0, pg[0]);
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, r));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p2));
}

/* Error codes of the remaining calls that take a port, handle or region. */
TEST_F(fake_rma2, remaining_error_codes)
{
	static uint8_t buf[PG] __attribute__((aligned(PG)));
	static uint8_t pages2[32 * PG] __attribute__((aligned(PG)));
	RMA2_Port p = self->f.port, p2 = NULL;
	RMA2_Handle foreign = NULL;
	RMA2_Notification q2[8], *n;
	RMA2_Region *r, *r2, *keep = (RMA2_Region *)0x1;
	volatile uint64_t rp2;
	void *va;
	size_t sz;

	*(uint64_t *)(pages2 + RMA2_CMD_FREE_OFF) = 10;
	ASSERT_EQ(RMA2_SUCCESS, rma2__open_fake(&p2, 1, 1, pages2, PG, q2, 8, &rp2));
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(p2, 1, 1, RMA2_CONN_DEFAULT, &foreign));
	/* a region or a handle of another port is not ours */
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(p2, buf, PG, &r2));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_unregister(p, r2));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_unregister_cached(p, r2));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_unregister_adhoc(p, r2));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_disconnect(p, foreign));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_request_interrupt(p, foreign));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_request_rra(p, foreign));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_request_tcs(p, foreign, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_HANDLE, rma2_get_tcs(p, foreign, (uint32_t *)&sz, (uint32_t *)&sz));
	EXPECT_EQ(0, rma2_get_interrupt(p, foreign));
	EXPECT_EQ(0, rma2_get_physical_access(NULL, self->h));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_request_physical_access(NULL, self->h));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_request_tcs(NULL, self->h, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_get_tcs(NULL, self->h, (uint32_t *)&sz, (uint32_t *)&sz));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p2, r2));
	/* registration variants: port, address, size, output */
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_register_nomalloc(NULL, buf, 10, &(RMA2_Region){ 0 }));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register_nomalloc(p, NULL, 10, &(RMA2_Region){ 0 }));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register_nomalloc(p, buf, 0, &(RMA2_Region){ 0 }));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register(p, (void *)(uintptr_t)-4096, 8192, &keep));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_register_cached(NULL, buf, 10, &keep));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register_cached(p, buf, 0, &keep));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_register_adhoc(NULL, buf, &keep));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register_adhoc(p, NULL, &keep));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_register_adhoc(p, buf, NULL));
	EXPECT_TRUE(keep == (RMA2_Region *)0x1);
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_unregister_cached(NULL, keep));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_unregister_adhoc(NULL, keep));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(p, buf, PG, &r));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_get_va(r, 0, NULL));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_get_size(r, NULL));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_get_page_count(NULL, &sz));
	EXPECT_EQ(RMA2_SUCCESS, rma2_get_va(r, 1, &va));
	EXPECT_EQ(0, rma2_get_region_overlap(NULL, buf, 1));
	EXPECT_EQ(0, rma2_get_region_equal(NULL, buf, PG));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, r));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_unregister(p, r));	/* twice */
	/* the blocking matchers check their arguments before they wait */
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_noti_match_block(NULL, RMA2_ANY, 1, 1, 4, 0, 0, &n));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_match_block(p, RMA2_ANY, 1, 1, 4, 0, 0, NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_noti_noti_match_block(NULL, 1, 1, 1, &n));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_noti_match_block(p, 1, 1, 1, NULL));
	EXPECT_EQ(RMA2_ERR_INV_PORT, rma2_noti_lock_match_block(NULL, 1, 1, 1, &n));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_lock_match_block(p, 1, 1, 1, NULL));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_noti_match(p, 1, 1, 1, NULL));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_lock_match(p, 1, 1, 1, NULL));
	EXPECT_EQ(RMA2_NO_NOTI, rma2_noti_noti_match(p, 1, 1, 1, &n));
	EXPECT_EQ(RMA2_NO_NOTI, rma2_noti_lock_match(p, 1, 1, 1, &n));
	/* a matching head and nowhere to put it: no write through NULL */
	push(&self->f, 0, 5, mk_w1(1, 1, 1, 4, RMA2_NOTIFICATION_PUT, 0, 0));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_noti_match(p, 1, 1, 1, NULL));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_noti_match_block(p, 1, 1, 1, NULL));
	EXPECT_EQ(RMA2_ERR_INV_VALUE, rma2_noti_match(p, RMA2_ANY, 1, 1, 4, RMA2_ANY_NLA, 0, NULL));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_noti_match(p, 1, 1, 1, &n));
	ASSERT_EQ(RMA2_SUCCESS, rma2_noti_free(p, n));
	/* every decoder survives NULL */
	EXPECT_EQ(RMA2_ANY, rma2_noti_get_cmd(NULL));
	EXPECT_EQ(RMA2_NO_NOTIFICATION, rma2_noti_get_notification_type(NULL));
	EXPECT_EQ(0, rma2_noti_get_mode(NULL));
	EXPECT_EQ(0xffff, rma2_noti_get_remote_vpid(NULL));
	EXPECT_TRUE(rma2_noti_get_local_address(NULL) == 0);
	EXPECT_EQ(0, rma2_noti_get_total_size(0x1000, NULL));
	EXPECT_EQ(0, rma2_noti_get_lock_value(NULL));
	EXPECT_EQ(0, rma2_noti_get_lock_number(NULL));
	EXPECT_EQ(0, rma2_noti_get_lock_result(NULL));
	EXPECT_TRUE(rma2_noti_get_notiput_payload(NULL) == 0);
	EXPECT_EQ(0, rma2_noti_get_notiput_class(NULL));
	rma2_noti_dump(NULL);
	{
		char s[64] = "";

		rma2_noti_sdump(NULL, s, sizeof(s));
		EXPECT_TRUE(strstr(s, "(null)") != NULL);
	}
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p2));
}

struct mt { RMA2_Port p; RMA2_Handle h; volatile int stop; };

static void *poster(void *arg)
{
	struct mt *m = arg;

	for (int i = 0; i < 100000 && !m->stop; i++)
		rma2_post_immediate_put(m->p, m->h, 8, (uint64_t)i, 0x1000, 0, 0);
	return NULL;
}

TEST_F(fake_rma2, post_and_poll_from_two_threads)
{
	struct mt m = { self->f.port, self->h, 0 };
	pthread_t t;
	RMA2_Notification *n;
	unsigned int i;

	ASSERT_EQ(0, pthread_create(&t, NULL, poster, &m));
	for (i = 0; i < 1000; i++) {
		push(&self->f, i, i, mk_w1(0, 0, 0, 4, RMA2_BT_PUT, 0, 0));
		ASSERT_EQ(RMA2_SUCCESS, rma2_noti_probe(self->f.port, &n));
		ASSERT_TRUE(n->word0.value == i);
		ASSERT_EQ(RMA2_SUCCESS, rma2_noti_free(self->f.port, n));
	}
	m.stop = 1;
	pthread_join(t, NULL);
}

TEST_HARNESS_MAIN
