// SPDX-License-Identifier: GPL-2.0
/*
 * libvelo2 on one node with the emulated EXTOLL NIC (tests.list: 1 node):
 * endpoints, loopback messages of every size 0..120 with tag/MTT, srcid =
 * VELO2_ADDR_PACK(node, vpid), probe vs blocking receive, documented error
 * codes, several sender processes into one ring (per-sender order, sender
 * id), ring full -> sender told to try again / blocked, nothing lost.
 */
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "extoll_test.h"

#define TMO_S 60

/* The longest plain TEST() of this file may take 300 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300

TEST(open_close)
{
	velo2_port_t p[4];
	int i, j;

	memset(p, 0, sizeof(p));
	XT_VELO2_OPEN_OR_SKIP(&p[0]);
	for (i = 1; i < 4; i++)
		ASSERT_EQ(VELO2_RET_SUCCESS, velo2_open(&p[i]));
	for (i = 0; i < 4; i++) {
		EXPECT_TRUE(p[i].map != NULL);
		EXPECT_LT(velo2_get_vpid(&p[i]), 256);
		EXPECT_EQ(velo2_get_nodeid(&p[0]), velo2_get_nodeid(&p[i]));
		for (j = 0; j < i; j++)
			EXPECT_NE(velo2_get_vpid(&p[j]), velo2_get_vpid(&p[i]));
	}
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&p[i]));
		EXPECT_TRUE(p[i].map == NULL);
	}
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(VELO2_RET_SUCCESS, velo2_open(&p[0]));
		ASSERT_EQ(VELO2_RET_SUCCESS, velo2_close(&p[0]));
	}
	EXPECT_EQ(VELO2_RET_ERROR, velo2_close(&p[0]));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_open(NULL));
}

TEST(loopback_sizes_tags_mtt)
{
	velo2_port_t p;
	velo2_connection_t c;
	uint8_t msg[120], buf[120];
	uint32_t len, src, self_id;
	uint8_t tag, mtt;

	memset(&p, 0, sizeof(p));
	memset(&c, 0, sizeof(c));
	XT_VELO2_OPEN_OR_SKIP(&p);
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_connect(&p, &c, velo2_get_nodeid(&p), velo2_get_vpid(&p)));
	EXPECT_TRUE(c.state_map != NULL);
	self_id = (uint32_t)VELO2_ADDR_PACK(velo2_get_nodeid(&p), velo2_get_vpid(&p));
	EXPECT_EQ(VELO2_RET_NO_MSG, velo2_probe_recv(&p, buf, 120, &len, &src, &tag, &mtt));
	for (uint32_t l = 0; l <= 120; l++) {
		for (uint32_t i = 0; i < l; i++)
			msg[i] = (uint8_t)(l * 31 + i);
		ASSERT_EQ(VELO2_RET_SUCCESS, velo2_send(&c, msg, l, (uint8_t)(l + 1), (uint8_t)(l & 3)));
		memset(buf, 0, sizeof(buf));
		ASSERT_EQ(VELO2_RET_SUCCESS, xt_velo_recv_tmo(&p, buf, 120, &len, &src, &tag, &mtt, TMO_S));
		ASSERT_EQ(l, len);
		ASSERT_EQ(self_id, src);
		ASSERT_EQ((uint8_t)(l + 1), tag);
		ASSERT_EQ(l & 3, mtt);
		ASSERT_EQ(0, memcmp(buf, msg, l));
	}
	/* blocking receive, mtt pointer NULL */
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_send(&c, "hello", 5, 0, 0));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_recv(&p, buf, 64, &len, &src, &tag, 0));
	EXPECT_EQ(5, len);
	/* too small buffer: not consumed */
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_send(&c, msg, 100, 0, 0));
	for (double end = xt_now_s() + TMO_S;
	     velo2_probe_recv(&p, buf, 50, &len, &src, &tag, &mtt) == VELO2_RET_NO_MSG &&
	     xt_now_s() < end;)
		sched_yield();
	EXPECT_EQ(VELO2_RET_INV_MSG, velo2_probe_recv(&p, buf, 50, &len, &src, &tag, &mtt));
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_probe_recv(&p, buf, 120, &len, &src, &tag, &mtt));
	EXPECT_EQ(100, len);
	/* documented errors */
	EXPECT_EQ(VELO2_RET_INV_MSG, velo2_send(&c, msg, 121, 0, 0));
	EXPECT_EQ(VELO2_RET_INV_MTT, velo2_send(&c, msg, 8, 0, 4));
	{
		velo2_connection_t bad;

		EXPECT_EQ(VELO2_RET_INVALID_NODE, velo2_connect(&p, &bad, 0xfffe, 0));
		EXPECT_EQ(VELO2_RET_INVALID_MBOX, velo2_connect(&p, &bad, 0, 256));
	}
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_disconnect(&p, &c));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_send(&c, msg, 8, 0, 0));
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&p));
	EXPECT_EQ(VELO2_RET_ERROR, velo2_probe_recv(&p, buf, 120, &len, &src, &tag, &mtt));
}

struct sender_arg {
	uint32_t node, vpid;	/* receiver */
	int idx, count;
};

/* child: own port, sends [idx][vpid][seq] messages */
static int sender(struct sender_arg *a)
{
	velo2_port_t p;
	velo2_connection_t c;
	uint32_t m[8];

	memset(&p, 0, sizeof(p));
	if (velo2_open(&p) != VELO2_RET_SUCCESS)
		return 10;
	if (velo2_connect(&p, &c, a->node, a->vpid) != VELO2_RET_SUCCESS)
		return 11;
	for (int s = 0; s < a->count; s++) {
		m[0] = (uint32_t)a->idx;
		m[1] = velo2_get_vpid(&p);
		m[2] = velo2_get_nodeid(&p);
		m[3] = (uint32_t)s;
		if (velo2_send(&c, m, 16 + (uint32_t)(s % 5) * 4, (uint8_t)a->idx, 0) !=
		    VELO2_RET_SUCCESS)
			return 12;
	}
	/* keep the port open until the receiver has everything */
	sleep(2);
	velo2_close(&p);
	return 0;
}

TEST(several_senders_one_ring)
{
	enum { NS = 4, COUNT = 3000 };
	velo2_port_t p;
	pid_t pid[NS];
	int next[NS] = { 0 }, got = 0, st;
	uint32_t m[30], len, src;
	uint8_t tag, mtt;

	memset(&p, 0, sizeof(p));
	XT_VELO2_OPEN_OR_SKIP(&p);
	for (int i = 0; i < NS; i++) {
		struct sender_arg a = { velo2_get_nodeid(&p), velo2_get_vpid(&p), i, COUNT };

		pid[i] = fork();
		ASSERT_GE(pid[i], 0);
		if (pid[i] == 0)
			_exit(sender(&a));
	}
	while (got < NS * COUNT) {
		velo2_ret_t r = xt_velo_recv_tmo(&p, m, sizeof(m), &len, &src, &tag, &mtt, TMO_S);

		ASSERT_EQ(VELO2_RET_SUCCESS, r);
		ASSERT_LT(m[0], NS);
		ASSERT_EQ(m[0], tag);
		/* sender id = the sending port's node and VELO VPID */
		ASSERT_EQ((uint32_t)VELO2_ADDR_PACK(m[2], m[1]), src);
		ASSERT_EQ(16 + (m[3] % 5) * 4, len);
		/* per-sender order */
		ASSERT_EQ(next[m[0]], (int)m[3]);
		next[m[0]]++;
		got++;
	}
	for (int i = 0; i < NS; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	EXPECT_EQ(VELO2_RET_NO_MSG, velo2_probe_recv(&p, m, sizeof(m), &len, &src, &tag, &mtt));
	velo2_close(&p);
}

TEST(ring_full_try_again_nothing_lost)
{
	enum { COUNT = 5000 };
	velo2_port_t rx, tx;
	velo2_connection_t c;
	uint32_t m[4], len, src, sent = 0, recvd = 0, tries = 0;
	uint8_t tag, mtt;
	int first_full = -1;

	memset(&rx, 0, sizeof(rx));
	memset(&tx, 0, sizeof(tx));
	XT_VELO2_OPEN_OR_SKIP(&rx);
	setenv("VELO2_SEND_NONBLOCK", "1", 1);
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_open(&tx));
	unsetenv("VELO2_SEND_NONBLOCK");
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_connect(&tx, &c, velo2_get_nodeid(&rx), velo2_get_vpid(&rx)));
	/* fill without receiving until the sender is told to try again */
	for (;;) {
		velo2_ret_t r;

		m[0] = sent;
		r = velo2_send(&c, m, 4, 0, 0);
		if (r == VELO2_RET_TRY_AGAIN) {
			/* the device may still be delivering: retry for a while */
			if (++tries > 2000)
				break;
			usleep(1000);
			continue;
		}
		ASSERT_EQ(VELO2_RET_SUCCESS, r);
		tries = 0;
		sent++;
		ASSERT_LT(sent, COUNT);	/* the ring must fill up eventually */
	}
	first_full = (int)sent;
	TH_LOG("sender told to try again after %u messages", sent);
	ASSERT_GT(first_full, 0);
	/* now drain while sending the rest: nothing lost, order kept */
	xt_velo_send_and_drain(_metadata, &c, &rx, &sent, &recvd, COUNT, 4, TMO_S);
	EXPECT_EQ(VELO2_RET_NO_MSG, xt_velo_recv_tmo(&rx, m, sizeof(m), &len, &src, &tag, &mtt, 1));
	velo2_close(&tx);
	velo2_close(&rx);
}

TEST(ring_full_blocking_send_waits)
{
	enum { COUNT = 4000 };
	velo2_port_t rx;
	uint32_t m[4], len, src;
	uint8_t tag, mtt;
	pid_t pid;
	int st;

	memset(&rx, 0, sizeof(rx));
	XT_VELO2_OPEN_OR_SKIP(&rx);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		velo2_port_t tx;
		velo2_connection_t c;

		memset(&tx, 0, sizeof(tx));
		if (velo2_open(&tx) || velo2_connect(&tx, &c, velo2_get_nodeid(&rx), velo2_get_vpid(&rx)))
			_exit(10);
		for (uint32_t s = 0; s < COUNT; s++) {
			m[0] = s;
			if (velo2_send(&c, m, 4, 0, 0) != VELO2_RET_SUCCESS)	/* blocks when full */
				_exit(11);
		}
		sleep(1);
		_exit(0);
	}
	sleep(2);	/* let the ring overflow */
	for (uint32_t i = 0; i < COUNT; i++) {
		ASSERT_EQ(VELO2_RET_SUCCESS, xt_velo_recv_tmo(&rx, m, sizeof(m), &len, &src, &tag, &mtt, TMO_S));
		ASSERT_EQ(i, m[0]);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	velo2_close(&rx);
}

/* Kernel bypass: send and probe/receive under SECCOMP_MODE_STRICT. */
static void no_syscall_child(volatile int *stage)
{
	velo2_port_t p;
	velo2_connection_t c;
	uint8_t buf[120];
	uint32_t len, src;
	uint8_t tag, mtt;
	int i, bad = 0;

	memset(&p, 0, sizeof(p));
	if (velo2_open(&p) || velo2_connect(&p, &c, velo2_get_nodeid(&p), velo2_get_vpid(&p)))
		syscall(SYS_exit, 20);
	*stage = 1;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0)
		syscall(SYS_exit, 21);
	*stage = 2;
	for (i = 0; i < 2000 && !bad; i++) {
		memset(buf, i & 0xff, sizeof(buf));
		if (velo2_send(&c, buf, (uint32_t)(i % 121), (uint8_t)i, 0))
			bad = 1;
		{
			velo2_ret_t r;

			/* (velo2_recv would sched_yield after a spin budget) */
			while ((r = velo2_probe_recv(&p, buf, 120, &len, &src, &tag, &mtt)) ==
			       VELO2_RET_NO_MSG)
				;
			if (r)
				bad = 1;
		}
		if (len != (uint32_t)(i % 121) || tag != (uint8_t)i)
			bad = 1;
	}
	*stage = bad ? 3 : 4;
	syscall(SYS_exit, bad);
}

TEST(send_and_recv_make_no_system_calls)
{
	velo2_port_t probe;

	memset(&probe, 0, sizeof(probe));
	XT_VELO2_OPEN_OR_SKIP(&probe);
	velo2_close(&probe);
	xt_expect_no_syscalls(_metadata, no_syscall_child);
}

TEST_HARNESS_MAIN
