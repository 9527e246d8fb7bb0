// SPDX-License-Identifier: GPL-2.0
/*
 * Clean teardown (tests.list: 1 node).  A process SIGKILLed in the middle
 * of large puts and gets, with VELO messages in flight and memory
 * registered, leaves nothing behind: the driver's counters (VPIDs of both
 * units, ATU entries, pinned pages, queue memory; sysfs) return to where
 * they were, the kernel log stays clean, and the endpoints that follow work.
 * Also: peers of a killed process (VELO sender/receiver, RMA target) are
 * not harmed; RLIMIT_MEMLOCK accounting (VmPin) is returned by unregister
 * and close; all VPIDs in use -> RMA2_ERR_PORTS_USED / VELO2_RET_ERR_FDOPEN,
 * and they are reusable afterwards.
 */
#include <fcntl.h>
#include <sys/resource.h>

#include "extoll_test.h"

#define TMO_S 60
#define RELEASE_TMO_S 20

static void *shared_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int wait_stage(volatile int *stage, int want, double tmo)
{
	double end = xt_now_s() + tmo;

	while (*stage < want) {
		if (xt_now_s() > end)
			return -1;
		usleep(2000);
	}
	return 0;
}

/* Kill, reap, and wait until the driver holds what it held before. */
static void kill_and_expect_released(struct __test_metadata *_metadata, pid_t pid,
				     const struct xt_usage *before, const char *what)
{
	struct xt_usage seen;
	char s[200];
	double t;

	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	t = xt_usage_wait(before, RELEASE_TMO_S, &seen);
	xt_usage_str(&seen, s, sizeof(s));
	if (t < 0) {
		char w[200];

		xt_usage_str(before, w, sizeof(w));
		TH_LOG("%s: still held %s, want %s", what, s, w);
	} else {
		TH_LOG("%s: released %.2f s after the kill (%s)", what, t, s);
	}
	ASSERT_LE(0, t);
}

FIXTURE(td) {
	int kmsg0;
	struct xt_usage before;
};

FIXTURE_SETUP(td)
{
	RMA2_Port probe = NULL;

	XT_RMA2_OPEN_OR_SKIP(&probe);
	rma2_close(probe);
	self->kmsg0 = exa_kmsg_bad_lines();
	xt_usage_read(&self->before);
	ASSERT_LE(0, self->before.pinned_pages);
}

FIXTURE_TEARDOWN(td)
{
	struct xt_usage seen;

	/* every test gives back what it took */
	EXPECT_LE(0, xt_usage_wait(&self->before, RELEASE_TMO_S, &seen));
	XT_KMSG_CHECK(self->kmsg0);
}

/* ------------------------------------------------ killed mid-transfer */

struct busy_box {
	volatile int stage;		/* 1 set up, 2 streaming */
	volatile uint32_t posted;
	long vmpin_kb;
	int velo_in_flight;
};

#define BUSY_BYTES (8 * MiB)

/*
 * Two RMA endpoints streaming 8 MiB puts and gets at each other without
 * ever freeing a notification, a VELO endpoint whose own ring is full
 * with messages still in flight, three registrations.  Never returns.
 */
static int busy_child(struct busy_box *bb)
{
	RMA2_Port a, b;
	RMA2_Handle ab, ba;
	RMA2_Region *ra, *rb, *rb2;
	RMA2_NLA na, nb;
	velo2_port_t vp;
	velo2_connection_t vc;
	uint8_t *sa = mmap(NULL, BUSY_BYTES, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *sb = mmap(NULL, BUSY_BYTES, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t m[8] = { 0 };
	int tries = 0;

	if (sa == MAP_FAILED || sb == MAP_FAILED)
		return 10;
	memset(sa, 0x11, BUSY_BYTES);
	memset(sb, 0x22, BUSY_BYTES);
	if (rma2_open(&a) || rma2_open(&b) ||
	    rma2_register(a, sa, BUSY_BYTES, &ra) || rma2_register(b, sb, BUSY_BYTES, &rb) ||
	    rma2_register(b, sa, MiB, &rb2) ||
	    rma2_connect(a, rma2_get_nodeid(b), rma2_get_vpid(b), RMA2_CONN_DEFAULT, &ab) ||
	    rma2_connect(b, rma2_get_nodeid(a), rma2_get_vpid(a), RMA2_CONN_DEFAULT, &ba))
		return 11;
	rma2_get_nla(ra, 0, &na);
	rma2_get_nla(rb, 0, &nb);
	/* VELO: fill the own ring until the device holds messages back */
	setenv("VELO2_SEND_NONBLOCK", "1", 1);
	memset(&vp, 0, sizeof(vp));
	if (velo2_open(&vp) ||
	    velo2_connect(&vp, &vc, velo2_get_nodeid(&vp), velo2_get_vpid(&vp)))
		return 12;
	while (tries < 200) {
		velo2_ret_t r = velo2_send(&vc, m, sizeof(m), 0, 0);

		if (r == VELO2_RET_TRY_AGAIN) {
			tries++;
			usleep(1000);
		} else if (r == VELO2_RET_SUCCESS) {
			bb->velo_in_flight++;
			m[0]++;
		} else {
			return 13;
		}
	}
	bb->vmpin_kb = xt_vmpin_kb(getpid());
	bb->stage = 1;
	for (;;) {
		if (rma2_post_put_bt(a, ab, ra, 0, BUSY_BYTES, nb, RMA2_REQCOMPL_NOTIFICATION, 0) ||
		    rma2_post_get_qw(b, ba, rb, 0, BUSY_BYTES, na, RMA2_ALL_NOTIFICATIONS, 0))
			return 14;
		bb->posted += 2;
		if (bb->posted >= 4)
			bb->stage = 2;
	}
}

TEST_F_TIMEOUT(td, killed_mid_transfer_releases_everything, 300)
{
	struct busy_box *bb = shared_page();

	ASSERT_TRUE(bb != NULL);
	for (int round = 0; round < 3; round++) {
		struct xt_usage alive;
		pid_t pid;
		char what[64];

		memset(bb, 0, sizeof(*bb));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0)
			_exit(busy_child(bb));
		if (wait_stage(&bb->stage, 2, TMO_S)) {
			TH_LOG("child stage %d (exit status %d)", bb->stage,
			       exa_poll_child(pid, 0));
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			ASSERT_TRUE(0);
		}
		/* land the kill at a different point of the stream each round */
		usleep(50000 + 120000 * round);
		xt_usage_read(&alive);
		/* what the child holds shows up in the counters */
		EXPECT_EQ(self->before.rma_vpids + 2, alive.rma_vpids);
		EXPECT_EQ(self->before.velo_vpids + 1, alive.velo_vpids);
		EXPECT_EQ(self->before.registered_pages + 2 * 2048 + 256, alive.registered_pages);
		EXPECT_EQ(self->before.pinned_pages + 2 * 2048 + 256, alive.pinned_pages);
		EXPECT_LT(self->before.queue_bytes, alive.queue_bytes);
		/* ... and in its RLIMIT_MEMLOCK accounting (17 MiB) */
		EXPECT_EQ(17 * 1024, bb->vmpin_kb);
		EXPECT_LE(64, bb->velo_in_flight);
		snprintf(what, sizeof(what), "round %d (%u commands posted)", round, bb->posted);
		kill_and_expect_released(_metadata, pid, &self->before, what);
	}
	xt_expect_device_works(_metadata);
}

/* Two endpoints of this node; four 8 MiB puts source (0x5a) -> destination (0). */
struct put_pair {
	uint32_t len;
	uint8_t *src, *dst;
	RMA2_Port a, b;
	RMA2_Handle h;
	RMA2_Region *rs, *rd;
	RMA2_NLA s, d;
};

static void put_pair_start(struct __test_metadata *_metadata, struct put_pair *pp)
{
	pp->len = 8 * MiB;
	pp->src = mmap(NULL, pp->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pp->dst = mmap(NULL, pp->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(pp->src != MAP_FAILED && pp->dst != MAP_FAILED);
	memset(pp->src, 0x5a, pp->len);
	memset(pp->dst, 0, pp->len);
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&pp->a));
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&pp->b));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(pp->a, pp->src, pp->len, &pp->rs));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(pp->b, pp->dst, pp->len, &pp->rd));
	rma2_get_nla(pp->rs, 0, &pp->s);
	rma2_get_nla(pp->rd, 0, &pp->d);
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(pp->a, rma2_get_nodeid(pp->b),
					     rma2_get_vpid(pp->b), RMA2_CONN_DEFAULT, &pp->h));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt_direct(pp->a, pp->h, pp->s, pp->len,
								pp->d,
								RMA2_REQUESTER_NOTIFICATION, 0));
}

/*
 * Unregistering both ends while 8 MiB puts are in flight: every put ends
 * with one requester notification (done, or refused with the unit that
 * found the hole), and the device never writes the memory after its
 * registration is gone.
 */
TEST_F_TIMEOUT(td, unregister_with_puts_in_flight, 300)
{
	struct put_pair pp;
	RMA2_Notification n;
	int done = 0, refused = 0;

	put_pair_start(_metadata, &pp);
	usleep(30000);	/* let the first one get going */
	ASSERT_EQ(RMA2_SUCCESS, rma2_unregister(pp.b, pp.rd));
	ASSERT_EQ(RMA2_SUCCESS, rma2_unregister(pp.a, pp.rs));
	memset(pp.dst, 0, pp.len);	/* from now on the device must not touch it */
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, xt_next_noti(pp.a, &n, TMO_S));
		EXPECT_EQ(RMA2_REQUESTER_NOTIFICATION, rma2_noti_get_notification_type(&n));
		if (rma2_noti_get_error(&n))
			refused++;
		else
			done++;
		EXPECT_TRUE(rma2_noti_get_error(&n) == 0 ||
			    rma2_noti_get_error(&n) == RMA2_ERROR_REQ ||
			    rma2_noti_get_error(&n) == RMA2_ERROR_CMPL);
	}
	TH_LOG("%d puts done, %d refused", done, refused);
	EXPECT_EQ(RMA2_NO_NOTI, rma2_noti_probe(pp.a, &(RMA2_Notification *){ NULL }));
	for (uint32_t i = 0; i < pp.len; i += 4096)
		ASSERT_EQ(0, pp.dst[i]);
	EXPECT_EQ(0, memcmp(pp.dst, pp.dst + 1, pp.len - 1));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(pp.a));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(pp.b));
	munmap(pp.src, pp.len);
	munmap(pp.dst, pp.len);
}

/*
 * The device reads a put's source when it sends each packet (hardware.md,
 * "Execution"), so unregistering the source with 32 MiB of puts queued
 * must fence those reads: every put ends with one requester notification
 * (done, or ERR_CMPL for a put whose source went away mid-way), and no
 * byte written into the source after the unregister reaches the target.
 */
TEST_F_TIMEOUT(td, unregister_source_with_puts_queued, 300)
{
	struct put_pair pp;
	RMA2_Notification n;
	int done = 0, refused = 0;

	put_pair_start(_metadata, &pp);
	ASSERT_EQ(RMA2_SUCCESS, rma2_unregister(pp.a, pp.rs));
	memset(pp.src, 0xa5, pp.len);	/* the device must not read this any more */
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, xt_next_noti(pp.a, &n, TMO_S));
		EXPECT_EQ(RMA2_REQUESTER_NOTIFICATION, rma2_noti_get_notification_type(&n));
		if (rma2_noti_get_error(&n)) {
			EXPECT_EQ(RMA2_ERROR_CMPL, rma2_noti_get_error(&n));
			refused++;
		} else {
			done++;
		}
	}
	TH_LOG("%d puts done, %d ended by the unregister", done, refused);
	EXPECT_EQ(RMA2_NO_NOTI, rma2_noti_probe(pp.a, &(RMA2_Notification *){ NULL }));
	EXPECT_EQ(NULL, memchr(pp.dst, 0xa5, pp.len));
	if (!refused)
		EXPECT_EQ(NULL, memchr(pp.dst, 0, pp.len));	/* all done: all there */
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(pp.b, pp.rd));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(pp.a));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(pp.b));
	munmap(pp.src, pp.len);
	munmap(pp.dst, pp.len);
}

/* ------------------------------------------------ VELO peers of a dead process */

struct velo_box {
	volatile int stage;
	uint32_t node, vpid;
};

static void velo_msg(uint32_t *m, uint32_t seq)
{
	for (int i = 0; i < 12; i++)
		m[i] = seq * 2654435761u + (uint32_t)i;
}

static int velo_streamer(struct velo_box *vb, uint32_t to_node, uint32_t to_vpid)
{
	velo2_port_t p;
	velo2_connection_t c;
	uint32_t m[12];

	memset(&p, 0, sizeof(p));
	if (velo2_open(&p) || velo2_connect(&p, &c, to_node, to_vpid))
		return 10;
	vb->node = velo2_get_nodeid(&p);
	vb->vpid = velo2_get_vpid(&p);
	vb->stage = 1;
	for (uint32_t s = 0;; s++) {
		velo_msg(m, s);
		if (velo2_send(&c, m, 8 + (s % 6) * 8, (uint8_t)s, 0))	/* blocks when full */
			return 11;
	}
}

TEST_F_TIMEOUT(td, killed_velo_sender_receiver_keeps_in_order_prefix, 300)
{
	struct velo_box *vb = shared_page();
	velo2_port_t rx;
	uint32_t m[30], want[12], len, src, got = 0;
	uint8_t tag, mtt;
	pid_t pid;

	ASSERT_TRUE(vb != NULL);
	memset(&rx, 0, sizeof(rx));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_open(&rx));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(velo_streamer(vb, velo2_get_nodeid(&rx), velo2_get_vpid(&rx)));
	ASSERT_EQ(0, wait_stage(&vb->stage, 1, TMO_S));
	for (;;) {
		velo2_ret_t r = xt_velo_recv_tmo(&rx, m, sizeof(m), &len, &src, &tag, &mtt,
						 got < 300 ? TMO_S : 1.0);

		if (got == 300)
			ASSERT_EQ(0, kill(pid, SIGKILL));	/* messages still coming */
		if (r == VELO2_RET_NO_MSG && got > 300)
			break;
		ASSERT_EQ(VELO2_RET_SUCCESS, r);
		/* an in-order, intact prefix of what was sent, from the right sender */
		velo_msg(want, got);
		ASSERT_EQ(8 + (got % 6) * 8, len);
		ASSERT_EQ(0, memcmp(m, want, len));
		ASSERT_EQ((uint8_t)got, tag);
		ASSERT_EQ((uint32_t)VELO2_ADDR_PACK(vb->node, vb->vpid), src);
		got++;
	}
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	TH_LOG("received an in-order prefix of %u messages", got);
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&rx));
}

static int velo_sink(struct velo_box *vb)
{
	velo2_port_t p;

	memset(&p, 0, sizeof(p));
	if (velo2_open(&p))
		return 10;
	vb->node = velo2_get_nodeid(&p);
	vb->vpid = velo2_get_vpid(&p);
	vb->stage = 1;
	for (;;)
		pause();	/* never reads: the ring fills up */
}

/* Sender credits held by messages to a dead receiver come back. */
TEST_F_TIMEOUT(td, killed_velo_receiver_sender_credits_return, 300)
{
	struct velo_box *vb = shared_page();
	velo2_port_t tx, rx;
	velo2_connection_t to_sink, to_rx;
	uint32_t m[4] = { 0 }, sent = 0, recvd = 0;
	struct xt_usage base;
	int tries = 0;
	pid_t pid;

	ASSERT_TRUE(vb != NULL);
	memset(&tx, 0, sizeof(tx));
	memset(&rx, 0, sizeof(rx));
	setenv("VELO2_SEND_NONBLOCK", "1", 1);
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_open(&tx));
	unsetenv("VELO2_SEND_NONBLOCK");
	xt_usage_read(&base);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(velo_sink(vb));
	ASSERT_EQ(0, wait_stage(&vb->stage, 1, TMO_S));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_connect(&tx, &to_sink, vb->node, vb->vpid));
	/* fill the sink until every credit is held by an undelivered message */
	while (tries < 500) {
		velo2_ret_t r = velo2_send(&to_sink, m, sizeof(m), 0, 0);

		if (r == VELO2_RET_TRY_AGAIN) {
			tries++;
			usleep(1000);
			continue;
		}
		ASSERT_EQ(VELO2_RET_SUCCESS, r);
		sent++;
		ASSERT_GT(100000, sent);
	}
	TH_LOG("sink full after %u messages", sent);
	kill_and_expect_released(_metadata, pid, &base, "VELO receiver");
	/* the held messages are dropped, their credits return: 1000 more go out */
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_open(&rx));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_connect(&tx, &to_rx, velo2_get_nodeid(&rx),
						   velo2_get_vpid(&rx)));
	sent = 0;
	xt_velo_send_and_drain(_metadata, &to_rx, &rx, &sent, &recvd, 1000, sizeof(m), TMO_S);
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&tx));
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&rx));
}

/* ------------------------------------------------ RMA target dies */

struct target_box {
	volatile int stage;
	uint32_t node, vpid;
	uint64_t nla;
};

#define TARGET_BYTES MiB

static int rma_target(struct target_box *tb)
{
	RMA2_Port p;
	RMA2_Region *r;
	uint8_t *buf = aligned_alloc(4096, TARGET_BYTES);

	if (!buf || rma2_open(&p) || rma2_register(p, buf, TARGET_BYTES, &r))
		return 10;
	rma2_get_nla(r, 0, &tb->nla);
	tb->node = rma2_get_nodeid(p);
	tb->vpid = rma2_get_vpid(p);
	tb->stage = 1;
	for (;;)
		pause();	/* never frees a notification either */
}

/*
 * Puts stream into a process that gets killed: the origin sees only
 * successes and then "completer" errors, never a hang or another error;
 * a new endpoint that gets the dead one's VPID number cannot be reached
 * through the dead one's NLA.
 */
TEST_F_TIMEOUT(td, killed_rma_target_late_puts_refused, 300)
{
	struct target_box *tb = shared_page();
	RMA2_Port p, heir = NULL, spare[64];
	RMA2_Handle h, hh;
	RMA2_Region *rs, *rh;
	RMA2_Notification n;
	RMA2_NLA s, heir_nla;
	uint8_t *src = aligned_alloc(4096, TARGET_BYTES), *hb = aligned_alloc(4096, 65536);
	int ok = 0, refused = 0, nspare = 0;
	struct xt_usage base;
	pid_t pid;

	ASSERT_TRUE(tb && src && hb);
	memset(src, 0x77, TARGET_BYTES);
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&p));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(p, src, TARGET_BYTES, &rs));
	rma2_get_nla(rs, 0, &s);
	xt_usage_read(&base);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(rma_target(tb));
	ASSERT_EQ(0, wait_stage(&tb->stage, 1, TMO_S));
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(p, (RMA2_Nodeid)tb->node, (RMA2_VPID)tb->vpid,
					     RMA2_CONN_DEFAULT, &h));
	for (int i = 0; i < 40; i++) {
		ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt_direct(p, h, s, TARGET_BYTES, tb->nla,
								RMA2_REQCOMPL_NOTIFICATION, 0));
		if (i == 10)
			kill_and_expect_released(_metadata, pid, &base, "RMA target");
	}
	/* one requester notification per put: success, then refused */
	for (int i = 0; i < 40; i++) {
		ASSERT_EQ(0, xt_next_noti(p, &n, TMO_S));
		EXPECT_EQ(RMA2_REQUESTER_NOTIFICATION, rma2_noti_get_notification_type(&n));
		if (rma2_noti_get_error(&n) == 0) {
			EXPECT_EQ(0, refused);	/* no success after the first refusal */
			ok++;
		} else {
			EXPECT_EQ(RMA2_ERROR_CMPL, rma2_noti_get_error(&n));
			refused++;
		}
	}
	TH_LOG("%d puts completed, %d refused", ok, refused);
	EXPECT_LE(29, refused);
	/* the VPID number's next owner: the dead NLA does not lead to it */
	for (int i = 0; i < 64 && !heir; i++) {
		RMA2_Port q;

		ASSERT_EQ(RMA2_SUCCESS, rma2_open(&q));
		if (rma2_get_vpid(q) == tb->vpid)
			heir = q;
		else
			spare[nspare++] = q;
	}
	while (nspare)
		rma2_close(spare[--nspare]);
	ASSERT_TRUE(heir != NULL);
	memset(hb, 0x99, 65536);
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(heir, hb, 65536, &rh));
	rma2_get_nla(rh, 0, &heir_nla);
	EXPECT_NE(tb->nla, heir_nla);
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(p, (RMA2_Nodeid)tb->node, (RMA2_VPID)tb->vpid,
					     RMA2_CONN_DEFAULT, &hh));
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt_direct(p, hh, s, 4096, tb->nla, 0, 0));
	ASSERT_EQ(0, xt_next_noti(p, &n, TMO_S));
	EXPECT_EQ(RMA2_ERROR_CMPL, rma2_noti_get_error(&n));
	for (int i = 0; i < 65536; i++)
		ASSERT_EQ(0x99, hb[i]);
	/* positive control: the heir's own NLA is reachable */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt_direct(p, hh, s, 4096, heir_nla,
							RMA2_REQUESTER_NOTIFICATION, 0));
	ASSERT_EQ(0, xt_next_noti(p, &n, TMO_S));
	EXPECT_EQ(0, rma2_noti_get_error(&n));
	EXPECT_EQ(0x77, hb[0]);
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(heir, rh));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(heir));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, rs));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p));
}

/* ------------------------------------------------ accounting and limits */

#define LIMIT_BYTES (256 * 1024)

enum { L_SETUP = 10, L_REG, L_PIN1, L_OVER, L_PIN_UNREG, L_REREG, L_PIN_CLOSE, L_REOPEN };

/* As an unprivileged user with RLIMIT_MEMLOCK = 256 KiB (no CAP_IPC_LOCK). */
static int memlock_child(void)
{
	struct rlimit rl = { LIMIT_BYTES, LIMIT_BYTES };
	uint8_t *buf = aligned_alloc(4096, 2 * LIMIT_BYTES);
	RMA2_Port p;
	RMA2_Region *r, *r2 = (RMA2_Region *)0x1;

	if (!buf || setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) || setuid(65534))
		return L_SETUP;
	memset(buf, 1, 2 * LIMIT_BYTES);
	if (rma2_open(&p) || rma2_register(p, buf, LIMIT_BYTES, &r))
		return L_REG;
	if (xt_vmpin_kb(getpid()) != LIMIT_BYTES / 1024)
		return L_PIN1;
	/* one page over the limit: refused, *region untouched */
	if (rma2_register(p, buf + LIMIT_BYTES, 4096, &r2) != RMA2_ERR_NO_MEM ||
	    r2 != (RMA2_Region *)0x1)
		return L_OVER;
	if (rma2_unregister(p, r) || xt_vmpin_kb(getpid()) != 0)
		return L_PIN_UNREG;
	if (rma2_register(p, buf + LIMIT_BYTES, LIMIT_BYTES, &r))
		return L_REREG;
	/* close without unregistering gives the accounting back too */
	if (rma2_close(p) || xt_vmpin_kb(getpid()) != 0)
		return L_PIN_CLOSE;
	if (rma2_open(&p) || rma2_register(p, buf, LIMIT_BYTES, &r) || rma2_close(p))
		return L_REOPEN;
	return 0;
}

TEST_F(td, rlimit_memlock_accounting_returned)
{
	pid_t pid = fork();
	int st;

	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(memlock_child());
	st = exa_wait_child(pid, TMO_S * 1000);
	if (st)
		TH_LOG("child failed at step %d", st);
	EXPECT_EQ(0, st);
}

/* No file descriptor left: the libraries say so and hold nothing. */
TEST_F(td, no_free_file_descriptor)
{
	struct rlimit rl, lim;
	RMA2_Port p = (RMA2_Port)0x1;
	velo2_port_t vp;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	lim = rl;
	lim.rlim_cur = (rlim_t)fd;	/* the lowest free descriptor is beyond the limit */
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &lim));
	EXPECT_EQ(RMA2_ERR_FD, rma2_open(&p));
	EXPECT_TRUE(p == NULL);
	memset(&vp, 0x5a, sizeof(vp));
	EXPECT_EQ(VELO2_RET_ERR_FDOPEN, velo2_open(&vp));
	EXPECT_TRUE(vp.map == NULL);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&p));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p));
}

/* Every VPID taken: clear error codes; all reusable afterwards. */
TEST_F_TIMEOUT(td, all_vpids_in_use_then_reusable, 120)
{
	long nrma = xt_sysfs("rma2", "vpids"), nvelo = xt_sysfs("velo2", "vpids");
	RMA2_Port rp[256], extra = (RMA2_Port)0x1;
	velo2_port_t *vp = calloc(256, sizeof(*vp)), vextra;
	int nr = 0, nv = 0;
	RMA2_ERROR rc;

	ASSERT_TRUE(vp != NULL);
	ASSERT_LT(0, nrma);
	ASSERT_GE(256, nrma);
	ASSERT_LT(0, nvelo);
	ASSERT_GE(256, nvelo);
	while ((rc = rma2_open(&rp[nr])) == RMA2_SUCCESS)
		ASSERT_GT(256, ++nr);
	EXPECT_EQ(RMA2_ERR_PORTS_USED, rc);
	EXPECT_EQ(nrma - self->before.rma_vpids, nr);
	EXPECT_TRUE(rp[nr] == NULL);
	EXPECT_EQ(RMA2_ERR_PORTS_USED, rma2_open(&extra));
	EXPECT_TRUE(extra == NULL);
	while (velo2_open(&vp[nv]) == VELO2_RET_SUCCESS)
		ASSERT_GT(256, ++nv);
	EXPECT_EQ(nvelo - self->before.velo_vpids, nv);
	memset(&vextra, 0, sizeof(vextra));
	EXPECT_EQ(VELO2_RET_ERR_FDOPEN, velo2_open(&vextra));
	EXPECT_TRUE(vextra.map == NULL);
	/* one given back: one can be had again */
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(rp[--nr]));
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&rp[nr++]));
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&vp[--nv]));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_open(&vp[nv++]));
	while (nr)
		EXPECT_EQ(RMA2_SUCCESS, rma2_close(rp[--nr]));
	while (nv)
		EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&vp[--nv]));
	free(vp);
}

TEST_HARNESS_MAIN
