// SPDX-License-Identifier: GPL-2.0
/*
 * libvelo2 against a fake device (velo2__open_fake): requester page with a
 * credit word, receive mailbox of 128-byte slots (uapi/extoll_hw.h 3, 4).
 * Checks the send encoding (header = VELO2_REQUEST_HEADER, payload
 * quadwords), credits (block / VELO2_RET_TRY_AGAIN), receive decoding
 * (srcid = VELO2_ADDR_PACK, exact length, tag, mtt), probe vs blocking,
 * ring wrap, argument validation and every documented error code.
 */
#include <pthread.h>
#include "velo2_int.h"
#include "../lib/kselftest_exa.h"

#define SLOTS 16
#define SLOT 128

FIXTURE(velo) {
	uint64_t *req;
	uint64_t state[512];
	uint8_t *mbox;
	volatile uint64_t rp;
	velo2_port_t port;
	velo2_connection_t con;
};

FIXTURE_SETUP(velo)
{
	self->req = aligned_alloc(4096, 4096);
	self->mbox = aligned_alloc(4096, SLOTS * SLOT);
	ASSERT_TRUE(self->req && self->mbox);
	memset(self->req, 0, 4096);
	memset(self->mbox, 0, SLOTS * SLOT);
	self->req[VELO2_CREDITS_OFF / 8] = 1000;
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2__open_fake(&self->port, 5, 9, self->req, self->state,
						      self->mbox, SLOTS, SLOT, &self->rp));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_connect(&self->port, &self->con, 0x0203, 0x44));
}

FIXTURE_TEARDOWN(velo)
{
	if (self->port.map)
		EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&self->port));
}

/* what the device would write for a message */
static void deliver(uint8_t *mbox, unsigned int slot, uint32_t node, uint32_t vpid, uint8_t tag,
		    uint8_t mtt, const void *data, uint32_t len, int err)
{
	uint8_t *s = mbox + (size_t)(slot % SLOTS) * SLOT;
	uint64_t st = (node & 0xffff) | ((uint64_t)(vpid & 0xff) << 16) |
		      ((uint64_t)(mtt & 3) << 32) | VELO2_STATUS_EOM_BIT |
		      ((uint64_t)tag << 40) | ((uint64_t)(len & 0x7f) << 48);

	if (err)
		st |= VELO2_STATUS_ERR_BIT;
	memcpy(s, data, len);
	__atomic_store_n((uint64_t *)(s + SLOT - 8), st, __ATOMIC_RELEASE);
}

TEST_F(velo, identity_and_connect)
{
	velo2_port_t closed;
	velo2_connection_t c;

	EXPECT_EQ(5, velo2_get_nodeid(&self->port));
	EXPECT_EQ(9, velo2_get_vpid(&self->port));
	EXPECT_TRUE(self->port.map != NULL);
	EXPECT_TRUE(self->con.state_map != NULL);
	EXPECT_EQ((uint32_t)VELO2_ADDR_PACK(0x0203, 0x44), self->con.dest.raw);
	EXPECT_EQ(0x0203, self->con.dest.nodeid);
	EXPECT_EQ(0x44, self->con.dest.vpid);

	memset(&closed, 0, sizeof(closed));
	EXPECT_EQ((velo2_nodeid_t)-1, velo2_get_nodeid(&closed));
	EXPECT_EQ((velo2_vpid_t)-1, velo2_get_vpid(NULL));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_connect(&closed, &c, 1, 1));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_connect(&self->port, NULL, 1, 1));
	EXPECT_EQ(VELO2_RET_INVALID_NODE, velo2_connect(&self->port, &c, 0xfffe, 1));
	EXPECT_EQ(VELO2_RET_INVALID_NODE, velo2_connect(&self->port, &c, 0x10000, 1));
	EXPECT_EQ(VELO2_RET_INVALID_MBOX, velo2_connect(&self->port, &c, 1, 256));
	/* node 0 / vpid 0: dest.raw is 0 but state_map is set (pscom rule) */
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_connect(&self->port, &c, 0, 0));
	EXPECT_EQ(0, c.dest.raw);
	EXPECT_TRUE(c.state_map != NULL);
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_disconnect(&self->port, &c));
	EXPECT_TRUE(c.state_map == NULL && c.dest.raw == 0);
	EXPECT_EQ(VELO2_RET_ERROR, velo2_disconnect(&self->port, NULL));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_disconnect(NULL, &c));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_send(&c, "x", 1, 0, 0));	/* disconnected */
	EXPECT_EQ(VELO2_RET_ERROR, velo2_close(&closed));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_close(NULL));
}

TEST_F(velo, send_encoding)
{
	uint8_t msg[120];
	uint32_t len;

	for (unsigned int i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 1);
	for (len = 0; len <= 120; len++) {
		memset(self->req, 0, 16 * 8);
		ASSERT_EQ(VELO2_RET_SUCCESS, velo2_send(&self->con, msg, len, 0xA5, 2));
		ASSERT_TRUE(self->req[0] ==
			    (uint64_t)VELO2_REQUEST_HEADER(0x0203, 0x44, 2, 0xA5, len));
		ASSERT_EQ(0, memcmp(&self->req[1], msg, len));
		if (len & 7) {	/* the partial last quadword is zero-padded */
			uint8_t *tail = (uint8_t *)&self->req[1] + len;

			for (unsigned int k = len; k < (len + 7) / 8 * 8; k++)
				ASSERT_EQ(0, tail[k - len]);
		}
	}
	EXPECT_EQ(VELO2_RET_INV_MSG, velo2_send(&self->con, msg, 121, 0, 0));
	EXPECT_EQ(VELO2_RET_INV_MSG, velo2_send(&self->con, NULL, 8, 0, 0));
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_send(&self->con, NULL, 0, 0, 0));
	EXPECT_EQ(VELO2_RET_INV_MTT, velo2_send(&self->con, msg, 8, 0, 4));
	for (uint8_t m = 0; m < 4; m++)
		EXPECT_EQ(VELO2_RET_SUCCESS, velo2_send(&self->con, msg, 8, 0, m));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_send(NULL, msg, 8, 0, 0));
}

/* Send window (uapi/extoll_hw.h BAR3): payload into the window, one header store to
 * VELO2_WIN_SEND_OFF; nothing on the per-quadword path; credits as before. */
TEST_F(velo, send_window_encoding_and_credits)
{
	uint64_t win[512];
	uint8_t msg[120];
	uint32_t len;

	for (unsigned int i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 5 + 3);
	velo2__use_window_fake(&self->port, win);
	for (len = 0; len <= 120; len++) {
		memset(self->req, 0, 4096);
		memset(win, 0xee, sizeof(win));
		self->req[VELO2_CREDITS_OFF / 8] = 1000;
		ASSERT_EQ(VELO2_RET_SUCCESS, velo2_send(&self->con, msg, len, 0x5A, 3));
		ASSERT_TRUE(self->req[VELO2_WIN_SEND_OFF / 8] ==
			    (uint64_t)VELO2_REQUEST_HEADER(0x0203, 0x44, 3, 0x5A, len));
		ASSERT_EQ(0, memcmp(win, msg, len));
		for (unsigned int k = len; k < (len + 7) / 8 * 8; k++)	/* zero-padded */
			ASSERT_EQ(0, ((uint8_t *)win)[k]);
		for (unsigned int k = 0; k < 16; k++)	/* the quadword path is not used */
			ASSERT_EQ(0, self->req[k]);
	}
	EXPECT_EQ(VELO2_RET_INV_MSG, velo2_send(&self->con, msg, 121, 0, 0));
	EXPECT_EQ(VELO2_RET_INV_MTT, velo2_send(&self->con, msg, 8, 0, 4));
	/* credits: same local count and re-read as the quadword path */
	self->req[VELO2_CREDITS_OFF / 8] = 2;
	self->port.credits = 0;
	self->port.flags |= VELO2_PORT_NONBLOCK;
	self->req[VELO2_WIN_SEND_OFF / 8] = 0;
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(VELO2_RET_SUCCESS, velo2_send(&self->con, "xy", 2, 0, 0));
	self->req[VELO2_CREDITS_OFF / 8] = 0;
	self->req[VELO2_WIN_SEND_OFF / 8] = 0;
	EXPECT_EQ(VELO2_RET_TRY_AGAIN, velo2_send(&self->con, "zz", 2, 0, 0));
	EXPECT_EQ(0, self->req[VELO2_WIN_SEND_OFF / 8]);	/* nothing stored without credit */
}

TEST_F(velo, send_credits_nonblocking)
{
	self->req[VELO2_CREDITS_OFF / 8] = 3;
	self->port.credits = 0;
	self->port.flags |= VELO2_PORT_NONBLOCK;
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(VELO2_RET_SUCCESS, velo2_send(&self->con, "abc", 3, 0, 0));
	/* device still reports 3 free, local count exhausted: re-read -> 3 more */
	self->req[VELO2_CREDITS_OFF / 8] = 0;
	EXPECT_EQ(VELO2_RET_TRY_AGAIN, velo2_send(&self->con, "abc", 3, 0, 0));
	self->req[VELO2_CREDITS_OFF / 8] = 1;
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_send(&self->con, "abc", 3, 0, 0));
}

static void *give_credit(void *arg)
{
	uint64_t *req = arg;

	usleep(100000);
	__atomic_store_n(&req[VELO2_CREDITS_OFF / 8], 5, __ATOMIC_RELEASE);
	return NULL;
}

TEST_F(velo, send_blocks_without_credit)
{
	pthread_t t;

	self->req[VELO2_CREDITS_OFF / 8] = 0;
	self->port.credits = 0;
	ASSERT_EQ(0, pthread_create(&t, NULL, give_credit, self->req));
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_send(&self->con, "abc", 3, 0, 0));	/* waits */
	pthread_join(t, NULL);
	EXPECT_EQ(4, self->port.credits);
}

TEST_F(velo, receive_decoding)
{
	uint8_t data[120], buf[120];
	uint32_t len = 0, src = 0;
	uint8_t tag = 0, mtt = 9;

	for (unsigned int i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(255 - i);
	EXPECT_EQ(VELO2_RET_NO_MSG, velo2_probe_recv(&self->port, buf, 120, &len, &src, &tag, &mtt));
	deliver(self->mbox, 0, 0x1234, 0x56, 0x77, 3, data, 120, 0);
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_probe_recv(&self->port, buf, 120, &len, &src, &tag, &mtt));
	EXPECT_EQ(120, len);
	EXPECT_EQ((uint32_t)VELO2_ADDR_PACK(0x1234, 0x56), src);
	EXPECT_EQ(0x77, tag);
	EXPECT_EQ(3, mtt);
	EXPECT_EQ(0, memcmp(buf, data, 120));
	EXPECT_EQ(VELO2_RET_NO_MSG, velo2_probe_recv(&self->port, buf, 120, &len, &src, &tag, &mtt));

	/* exact odd length, mtt pointer NULL (extoll_pp_velo passes 0) */
	deliver(self->mbox, 1, 1, 2, 0, 0, data, 13, 0);
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_recv(&self->port, buf, 64, &len, &src, &tag, 0));
	EXPECT_EQ(13, len);
	/* zero-length message */
	deliver(self->mbox, 2, 1, 2, 0, 0, data, 0, 0);
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_recv(&self->port, buf, 64, &len, &src, &tag, &mtt));
	EXPECT_EQ(0, len);
	/* buffer too small: INV_MSG, not consumed, nothing written past buflen */
	deliver(self->mbox, 3, 1, 2, 0, 0, data, 100, 0);
	memset(buf, 0xee, sizeof(buf));
	EXPECT_EQ(VELO2_RET_INV_MSG, velo2_probe_recv(&self->port, buf, 99, &len, &src, &tag, &mtt));
	EXPECT_EQ(0xee, buf[0]);
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_probe_recv(&self->port, buf, 100, &len, &src, &tag, &mtt));
	EXPECT_EQ(100, len);
	/* error bit: consumed, INV_MSG */
	deliver(self->mbox, 4, 1, 2, 0, 0, data, 8, 1);
	EXPECT_EQ(VELO2_RET_INV_MSG, velo2_probe_recv(&self->port, buf, 120, &len, &src, &tag, &mtt));
	EXPECT_EQ(VELO2_RET_NO_MSG, velo2_probe_recv(&self->port, buf, 120, &len, &src, &tag, &mtt));
	/* closed port */
	{
		velo2_port_t closed;

		memset(&closed, 0, sizeof(closed));
		EXPECT_EQ(VELO2_RET_ERROR, velo2_probe_recv(&closed, buf, 120, &len, &src, &tag, &mtt));
		EXPECT_EQ(VELO2_RET_ERROR, velo2_recv(NULL, buf, 120, &len, &src, &tag, &mtt));
	}
}

TEST_F(velo, ring_wrap_order_and_slot_release)
{
	uint8_t buf[120];
	uint32_t len, src, i;
	uint8_t tag;

	for (i = 0; i < 5 * SLOTS; i++) {
		uint32_t v = i;

		deliver(self->mbox, i, i % 3, 1, (uint8_t)i, 0, &v, 4, 0);
		ASSERT_EQ(VELO2_RET_SUCCESS, velo2_probe_recv(&self->port, buf, 120, &len, &src, &tag,
							      NULL));
		ASSERT_EQ(4, len);
		ASSERT_EQ(0, memcmp(buf, &v, 4));
		ASSERT_EQ((uint8_t)i, tag);
		ASSERT_EQ((uint32_t)VELO2_ADDR_PACK(i % 3, 1), src);
		/* slot freed: status word zeroed */
		ASSERT_TRUE(*(uint64_t *)(self->mbox + (i % SLOTS) * SLOT + SLOT - 8) == 0);
	}
}

static void *late_msg(void *arg)
{
	uint8_t *mbox = arg;

	usleep(100000);
	deliver(mbox, 0, 7, 8, 1, 1, "late!", 5, 0);
	return NULL;
}

TEST_F(velo, recv_blocks)
{
	pthread_t t;
	uint8_t buf[120];
	uint32_t len = 0, src = 0;
	uint8_t tag = 0, mtt = 0;

	ASSERT_EQ(0, pthread_create(&t, NULL, late_msg, self->mbox));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_recv(&self->port, buf, 120, &len, &src, &tag, &mtt));
	EXPECT_EQ(5, len);
	EXPECT_EQ(0, memcmp(buf, "late!", 5));
	EXPECT_EQ((uint32_t)VELO2_ADDR_PACK(7, 8), src);
	pthread_join(t, NULL);
}

TEST_F(velo, remaining_error_codes)
{
	uint8_t data[100], buf[120];
	uint32_t len = 7, src = 7;
	uint8_t tag = 7, mtt = 7;
	velo2_port_t other;
	uint64_t oreq[512] = { 0 }, ostate[8];
	uint8_t ombox[4 * SLOT];
	volatile uint64_t orp;
	velo2_connection_t oc;

	memset(data, 0x3c, sizeof(data));
	/* blocking receive, buffer too small: INV_MSG, message kept, nothing written */
	deliver(self->mbox, 0, 1, 2, 0, 0, data, 100, 0);
	memset(buf, 0xee, sizeof(buf));
	EXPECT_EQ(VELO2_RET_INV_MSG, velo2_recv(&self->port, buf, 99, &len, &src, &tag, &mtt));
	EXPECT_EQ(0xee, buf[0]);
	EXPECT_EQ(7, len);
	EXPECT_EQ(VELO2_RET_INV_MSG, velo2_recv(&self->port, NULL, 120, &len, &src, &tag, &mtt));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_recv(&self->port, buf, 100, &len, &src, &tag, &mtt));
	EXPECT_EQ(100, len);
	/* blocking receive of a message with the error bit: consumed */
	deliver(self->mbox, 1, 1, 2, 0, 0, data, 8, 1);
	EXPECT_EQ(VELO2_RET_INV_MSG, velo2_recv(&self->port, buf, 120, &len, &src, &tag, &mtt));
	EXPECT_EQ(VELO2_RET_NO_MSG, velo2_probe_recv(&self->port, buf, 120, &len, &src, &tag,
						     &mtt));
	/* a connection of another port cannot be disconnected here */
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2__open_fake(&other, 1, 1, oreq, ostate, ombox, 4, SLOT,
						      &orp));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_connect(&other, &oc, 1, 1));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_disconnect(&self->port, &oc));
	EXPECT_TRUE(oc.state_map != NULL);
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_disconnect(&other, &oc));
	/* a connection whose port was closed sends nothing */
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_connect(&other, &oc, 1, 1));
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&other));
	oreq[0] = 0;
	EXPECT_EQ(VELO2_RET_ERROR, velo2_send(&oc, "x", 1, 0, 0));
	EXPECT_TRUE(oreq[0] == 0);
	EXPECT_EQ(VELO2_RET_ERROR, velo2_connect(NULL, &oc, 1, 1));
}

TEST(close_resets)
{
	uint64_t req[512] = { 0 }, state[8];
	uint8_t mbox[4 * 128];
	volatile uint64_t rp;
	velo2_port_t p;

	ASSERT_EQ(VELO2_RET_ERROR, velo2__open_fake(&p, 1, 1, req, state, mbox, 4, 100, &rp));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2__open_fake(&p, 1, 1, req, state, mbox, 4, 128, &rp));
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&p));
	EXPECT_TRUE(p.map == NULL);
	EXPECT_EQ(VELO2_RET_ERROR, velo2_close(&p));
}

TEST_HARNESS_MAIN
