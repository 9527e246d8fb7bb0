// SPDX-License-Identifier: GPL-2.0
/*
 * RMA protection (tests.list: 2 nodes).  Accesses to an unregistered NLA,
 * to another process's NLA through the wrong VPID, to a VPID nobody holds,
 * beyond the end of a region, or from an unregistered local buffer are
 * refused by the NIC: the origin gets exactly one error notification with
 * the spec's encoding (hardware.md "Errors": requester notification, error
 * RMA2_ERROR_CMPL for a refused put target, RMA2_ERROR_RESP for a refused
 * get source, RMA2_ERROR_REQ for a local fault), the target process sees
 * nothing, no byte of the target (or of the origin for gets) changes, the
 * endpoints keep working and the kernel log stays clean.  A legal access
 * that differs in one field only is the positive control of each attack.
 *
 * Same node: each rank on its own node, the victim is a forked process.
 * Remote node: rank 1 holds two victim processes, rank 0 attacks.
 */
#include "extoll_test.h"

#define TMO_S 60
#define VBYTES (64 * 1024)		/* victim region */
#define GUARD 4096			/* unregistered page after it */
#define LEGAL_BYTES 64			/* the positive control's put */
#define VICTIM_PATTERN 0xA5
#define ORIGIN_PATTERN 0x3C

/* An error notification must arrive even when none was requested. */
#define NO_SPEC RMA2_NO_NOTIFICATION

/* Check the next notification on p: requester, cmd, error bits, peer. */
static int expect_error(struct __test_metadata *_metadata, RMA2_Port p, const char *what,
			RMA2_Command cmd, unsigned int err, unsigned int node, unsigned int vpid)
{
	RMA2_Notification n;

	if (xt_next_noti(p, &n, TMO_S)) {
		TH_LOG("%s: no error notification", what);
		EXPECT_TRUE(0);
		return -1;
	}
	if (rma2_noti_get_error(&n) != err || rma2_noti_get_cmd(&n) != cmd ||
	    rma2_noti_get_notification_type(&n) != RMA2_REQUESTER_NOTIFICATION) {
		char s[256] = "";

		rma2_noti_sdump(&n, s, sizeof(s));
		TH_LOG("%s: got %s", what, s);
	}
	EXPECT_EQ(RMA2_REQUESTER_NOTIFICATION, rma2_noti_get_notification_type(&n));
	EXPECT_EQ(cmd, rma2_noti_get_cmd(&n));
	EXPECT_EQ(err, rma2_noti_get_error(&n));
	EXPECT_EQ(node, rma2_noti_get_remote_nodeid(&n));
	EXPECT_EQ(vpid, rma2_noti_get_remote_vpid(&n));
	return 0;
}

/* Nothing else may be pending on p (no completer for a refused access). */
static void expect_quiet(struct __test_metadata *_metadata, RMA2_Port p, const char *what)
{
	RMA2_Notification n;

	if (xt_next_noti(p, &n, 0.3) == 0) {
		char s[256] = "";

		rma2_noti_sdump(&n, s, sizeof(s));
		TH_LOG("%s: unexpected notification %s", what, s);
		EXPECT_TRUE(0);
	}
}

static size_t count_not(const uint8_t *b, size_t len, uint8_t v)
{
	size_t bad = 0;

	for (size_t i = 0; i < len; i++)
		bad += b[i] != v;
	return bad;
}

/* ------------------------------------------------------------ victim */

/*
 * A victim process: its own endpoint and a VBYTES region of VICTIM_PATTERN
 * followed by an unregistered guard page.  It publishes where it is,
 * waits until the attacker is done and then judges its memory and its
 * notification queue: only the legal put (LEGAL_BYTES of 'legal' at
 * offset 0, one completer notification from the attacker) may show.
 */
struct victim_box {
	volatile int state;		/* VB_* */
	uint32_t node, vpid;
	uint64_t nla, size;
	uint32_t legal_node, legal_vpid;	/* expected origin of the legal put */
	uint8_t legal;			/* its payload byte; 0 = no legal put */
	volatile int verdict;		/* 0 ok, else what went wrong */
	size_t changed;			/* bytes that differ */
	int notis;			/* notifications seen */
};

enum { VB_START, VB_READY, VB_ATTACKED, VB_JUDGED };
enum { V_OPEN = 10, V_MEM, V_REG, V_TMO, V_LEGAL, V_CHANGED, V_NOTI_COUNT, V_NOTI_CONTENT };

static int wait_state(volatile int *state, int want, double tmo)
{
	double end = xt_now_s() + tmo;

	while (*state < want) {
		if (xt_now_s() > end)
			return -1;
		usleep(2000);
	}
	return 0;
}

static int victim_main(struct victim_box *vb)
{
	RMA2_Port p;
	RMA2_Region *r;
	RMA2_Notification n;
	uint8_t *buf;
	size_t from;

	if (rma2_open(&p))
		return V_OPEN;
	buf = aligned_alloc(4096, VBYTES + GUARD);
	if (!buf)
		return V_MEM;
	memset(buf, VICTIM_PATTERN, VBYTES + GUARD);
	if (rma2_register(p, buf, VBYTES, &r) || rma2_get_nla(r, 0, &vb->nla))
		return V_REG;
	vb->node = rma2_get_nodeid(p);
	vb->vpid = rma2_get_vpid(p);
	vb->size = r->size;
	__atomic_store_n(&vb->state, VB_READY, __ATOMIC_RELEASE);
	if (wait_state(&vb->state, VB_ATTACKED, 4 * TMO_S))
		return V_TMO;
	from = 0;
	if (vb->legal) {
		if (count_not(buf, LEGAL_BYTES, vb->legal))
			return V_LEGAL;
		from = LEGAL_BYTES;
	}
	vb->changed = count_not(buf + from, VBYTES + GUARD - from, VICTIM_PATTERN);
	if (vb->changed)
		return V_CHANGED;
	while (xt_next_noti(p, &n, vb->notis < (vb->legal ? 1 : 0) ? TMO_S : 0.5) == 0) {
		vb->notis++;
		if (rma2_noti_get_error(&n) || rma2_noti_get_cmd(&n) != RMA2_BT_PUT ||
		    rma2_noti_get_remote_nodeid(&n) != vb->legal_node ||
		    rma2_noti_get_remote_vpid(&n) != vb->legal_vpid)
			return V_NOTI_CONTENT;
	}
	if (vb->notis != (vb->legal ? 1 : 0))
		return V_NOTI_COUNT;
	rma2_close(p);
	return 0;
}

/* Fork a victim; returns its pid with *vb ready, or -1. */
static pid_t victim_start(struct victim_box *vb)
{
	pid_t pid;

	memset(vb, 0, sizeof(*vb));
	pid = fork();
	if (pid == 0) {
		vb->verdict = victim_main(vb);
		__atomic_store_n(&vb->state, VB_JUDGED, __ATOMIC_RELEASE);
		_exit(vb->verdict);
	}
	if (pid > 0 && wait_state(&vb->state, VB_READY, TMO_S)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

static int victim_finish(struct victim_box *vb, pid_t pid)
{
	int st = exa_wait_child(pid, TMO_S * 1000 * 4);

	if (st)
		ksft_print_msg("victim vpid %u: status %d verdict %d, %zu bytes changed, %d notifications\n",
			      vb->vpid, st, vb->verdict, vb->changed, vb->notis);
	return st;
}

/* ------------------------------------------------------------ attacker */

struct origin {
	RMA2_Port p;
	RMA2_Handle self;		/* loopback */
	uint8_t *src, *dst;		/* registered, ORIGIN_PATTERN / 0 */
	RMA2_Region *rs, *rd;
	RMA2_NLA src_nla, dst_nla;
	uint32_t node, vpid;
};

static int origin_open(struct origin *o)
{
	memset(o, 0, sizeof(*o));
	o->src = aligned_alloc(4096, VBYTES);
	o->dst = aligned_alloc(4096, VBYTES + GUARD);
	if (!o->src || !o->dst || rma2_open(&o->p))
		return -1;
	memset(o->src, ORIGIN_PATTERN, VBYTES);
	memset(o->dst, 0, VBYTES + GUARD);
	o->node = rma2_get_nodeid(o->p);
	o->vpid = rma2_get_vpid(o->p);
	if (rma2_register(o->p, o->src, VBYTES, &o->rs) ||
	    rma2_register(o->p, o->dst, VBYTES, &o->rd) ||
	    rma2_connect(o->p, (RMA2_Nodeid)o->node, (RMA2_VPID)o->vpid, RMA2_CONN_DEFAULT,
			 &o->self))
		return -1;
	rma2_get_nla(o->rs, 0, &o->src_nla);
	rma2_get_nla(o->rd, 0, &o->dst_nla);
	return 0;
}

static void origin_close(struct origin *o)
{
	if (!o->p)
		return;
	rma2_unregister(o->p, o->rs);
	rma2_unregister(o->p, o->rd);
	rma2_close(o->p);
	free(o->src);
	free(o->dst);
}

/* The endpoint still works: a loopback put with data check. */
static void expect_origin_works(struct __test_metadata *_metadata, struct origin *o)
{
	RMA2_Notification n;

	xt_fill(o->src, 5000, 77);
	memset(o->dst, 0, 5000);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(o->p, o->self, o->rs, 0, 5000, o->dst_nla,
						 RMA2_COMPLETER_NOTIFICATION, 0));
	ASSERT_EQ(0, xt_next_noti(o->p, &n, TMO_S));
	EXPECT_EQ(0, rma2_noti_get_error(&n));
	EXPECT_EQ(0, memcmp(o->src, o->dst, 5000));
	memset(o->src, ORIGIN_PATTERN, VBYTES);
	memset(o->dst, 0, VBYTES);
}

/* A VPID number that no endpoint holds right now (next-fit: not reused soon). */
static int closed_vpid(uint32_t *vpid)
{
	RMA2_Port p;

	if (rma2_open(&p))
		return -1;
	*vpid = rma2_get_vpid(p);
	return rma2_close(p) ? -1 : 0;
}

/*
 * Attack a victim (node, vpid, nla) from o: every refused variant, then
 * the legal put.  'other_vpid' is a live endpoint of another process on
 * the victim's node, 'other_nla' an NLA that endpoint registered,
 * 'gone_nla' an NLA that was unregistered there, 'dead_vpid' a VPID
 * nobody holds there.
 */
struct target {
	uint32_t node, vpid;
	uint64_t nla, size;
	uint32_t other_vpid;
	uint64_t other_nla, gone_nla;
	uint32_t dead_vpid;
};

static void attack(struct __test_metadata *_metadata, struct origin *o, const struct target *t,
		   int legal)
{
	RMA2_Handle to_victim, to_other, to_dead;
	RMA2_Notification n;
	const uint32_t len = 3000;	/* three fragments */

	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(o->p, (RMA2_Nodeid)t->node, (RMA2_VPID)t->vpid,
					     RMA2_CONN_DEFAULT, &to_victim));
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(o->p, (RMA2_Nodeid)t->node, (RMA2_VPID)t->other_vpid,
					     RMA2_CONN_DEFAULT, &to_other));
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(o->p, (RMA2_Nodeid)t->node, (RMA2_VPID)t->dead_vpid,
					     RMA2_CONN_DEFAULT, &to_dead));

	/* the victim's NLA through another process's VPID */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(o->p, to_other, o->rs, 0, len, t->nla,
						 RMA2_REQCOMPL_NOTIFICATION, 0));
	expect_error(_metadata, o->p, "put: victim NLA via other VPID", RMA2_BT_PUT,
		     RMA2_ERROR_CMPL, t->node, t->other_vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_qw(o->p, to_other, o->rs, 0, 64, t->nla, NO_SPEC, 0));
	expect_error(_metadata, o->p, "qw put: victim NLA via other VPID", RMA2_QW_PUT,
		     RMA2_ERROR_CMPL, t->node, t->other_vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_immediate_put(o->p, to_other, 8, 0x1122334455667788ull,
							t->nla + 8, NO_SPEC, 0));
	expect_error(_metadata, o->p, "immediate put: victim NLA via other VPID",
		     RMA2_IMMEDIATE_PUT, RMA2_ERROR_CMPL, t->node, t->other_vpid);
	/* get: refused at the source, the local destination stays untouched */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_get_bt(o->p, to_other, o->rd, 0, len, t->nla,
						 RMA2_ALL_NOTIFICATIONS & ~RMA2_REQUESTER_NOTIFICATION,
						 0));
	expect_error(_metadata, o->p, "get: victim NLA via other VPID", RMA2_BT_GET,
		     RMA2_ERROR_RESP, t->node, t->other_vpid);
	/* the other process's NLA through the victim's VPID */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(o->p, to_victim, o->rs, 0, len, t->other_nla,
						 NO_SPEC, 0));
	expect_error(_metadata, o->p, "put: other NLA via victim VPID", RMA2_BT_PUT,
		     RMA2_ERROR_CMPL, t->node, t->vpid);
	/* an NLA that was unregistered, beyond the region, a VPID nobody holds */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(o->p, to_other, o->rs, 0, len, t->gone_nla,
						 NO_SPEC, 0));
	expect_error(_metadata, o->p, "put: unregistered NLA", RMA2_BT_PUT, RMA2_ERROR_CMPL,
		     t->node, t->other_vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(o->p, to_victim, o->rs, 0, len,
						 t->nla + t->size, NO_SPEC, 0));
	expect_error(_metadata, o->p, "put: beyond the victim region", RMA2_BT_PUT,
		     RMA2_ERROR_CMPL, t->node, t->vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(o->p, to_dead, o->rs, 0, len, t->nla,
						 NO_SPEC, 0));
	expect_error(_metadata, o->p, "put: VPID nobody holds", RMA2_BT_PUT, RMA2_ERROR_CMPL,
		     t->node, t->dead_vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_notification(o->p, to_dead, 7, 7, NO_SPEC, 0));
	expect_error(_metadata, o->p, "notification put: VPID nobody holds",
		     RMA2_NOTIFICATION_PUT, RMA2_ERROR_CMPL, t->node, t->dead_vpid);
	expect_quiet(_metadata, o->p, "after the refused accesses");
	EXPECT_EQ(0, count_not(o->dst, VBYTES + GUARD, 0));

	if (legal) {
		/* positive control: the right VPID makes the same put legal */
		memset(o->src, legal, LEGAL_BYTES);
		ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(o->p, to_victim, o->rs, 0, LEGAL_BYTES,
							 t->nla, RMA2_REQCOMPL_NOTIFICATION, 0));
		ASSERT_EQ(0, xt_next_noti(o->p, &n, TMO_S));
		EXPECT_EQ(0, rma2_noti_get_error(&n));
		EXPECT_EQ(RMA2_REQUESTER_NOTIFICATION, rma2_noti_get_notification_type(&n));
		memset(o->src, ORIGIN_PATTERN, LEGAL_BYTES);
	}
	EXPECT_EQ(RMA2_SUCCESS, rma2_disconnect(o->p, to_victim));
	EXPECT_EQ(RMA2_SUCCESS, rma2_disconnect(o->p, to_other));
	EXPECT_EQ(RMA2_SUCCESS, rma2_disconnect(o->p, to_dead));
}

/* ------------------------------------------------------------ tests */

FIXTURE(prot) {
	int kmsg0;
	struct origin o;
	struct victim_box *vb;
};

FIXTURE_SETUP(prot)
{
	RMA2_Port probe = NULL;

	XT_RMA2_OPEN_OR_SKIP(&probe);
	rma2_close(probe);
	self->kmsg0 = exa_kmsg_bad_lines();
	ASSERT_EQ(0, origin_open(&self->o));
	self->vb = mmap(NULL, sizeof(*self->vb), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(self->vb != MAP_FAILED);
}

FIXTURE_TEARDOWN(prot)
{
	origin_close(&self->o);
	XT_KMSG_CHECK(self->kmsg0);
}

/* Own node, own endpoint: addresses nobody (or nobody any more) registered. */
TEST_F(prot, unregistered_nla_error_notifications_memory_untouched)
{
	struct origin *o = &self->o;
	uint8_t *gone = aligned_alloc(4096, VBYTES);
	RMA2_Region *r;
	RMA2_NLA gone_nla, beyond_table;
	long atu = xt_sysfs("rma2", "atu_entries");

	ASSERT_TRUE(gone != NULL);
	ASSERT_LT(0, atu);
	beyond_table = (RMA2_NLA)atu * 4096;
	memset(gone, VICTIM_PATTERN, VBYTES);
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(o->p, gone, VBYTES, &r));
	ASSERT_EQ(RMA2_SUCCESS, rma2_get_nla(r, 0, &gone_nla));
	ASSERT_EQ(RMA2_SUCCESS, rma2_unregister(o->p, r));

	/* remote (target) side refuses: put/immediate put CMPL, get RESP */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(o->p, o->self, o->rs, 0, 3000, gone_nla,
						 RMA2_REQCOMPL_NOTIFICATION, 0));
	expect_error(_metadata, o->p, "put to an unregistered NLA", RMA2_BT_PUT, RMA2_ERROR_CMPL,
		     o->node, o->vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt(o->p, o->self, o->rs, 0, 8, 0, NO_SPEC, 0));
	expect_error(_metadata, o->p, "put to NLA 0", RMA2_BT_PUT, RMA2_ERROR_CMPL, o->node,
		     o->vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_qw(o->p, o->self, o->rs, 0, 64, beyond_table,
						 NO_SPEC, 0));
	expect_error(_metadata, o->p, "qw put beyond the ATU table", RMA2_QW_PUT,
		     RMA2_ERROR_CMPL, o->node, o->vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_immediate_put(o->p, o->self, 4, 0xdeadbeef, gone_nla,
							NO_SPEC, 0));
	expect_error(_metadata, o->p, "immediate put to an unregistered NLA", RMA2_IMMEDIATE_PUT,
		     RMA2_ERROR_CMPL, o->node, o->vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_get_bt(o->p, o->self, o->rd, 0, 3000, gone_nla,
						 RMA2_RESPCOMPL_NOTIFICATION, 0));
	expect_error(_metadata, o->p, "get from an unregistered NLA", RMA2_BT_GET,
		     RMA2_ERROR_RESP, o->node, o->vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_get_qw_direct(o->p, o->self, o->dst_nla, 64,
							beyond_table, NO_SPEC, 0));
	expect_error(_metadata, o->p, "qw get beyond the ATU table", RMA2_QW_GET,
		     RMA2_ERROR_RESP, o->node, o->vpid);
	/* local side refuses (nothing is sent): REQ */
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt_direct(o->p, o->self, gone_nla, 3000, o->dst_nla,
							RMA2_REQCOMPL_NOTIFICATION, 0));
	expect_error(_metadata, o->p, "put from an unregistered source", RMA2_BT_PUT,
		     RMA2_ERROR_REQ, o->node, o->vpid);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_get_bt_direct(o->p, o->self, gone_nla, 3000, o->src_nla,
							RMA2_ALL_NOTIFICATIONS, 0));
	expect_error(_metadata, o->p, "get into an unregistered destination", RMA2_BT_GET,
		     RMA2_ERROR_REQ, o->node, o->vpid);
	expect_quiet(_metadata, o->p, "after the refused accesses");
	EXPECT_EQ(0, count_not(gone, VBYTES, VICTIM_PATTERN));
	EXPECT_EQ(0, count_not(o->dst, VBYTES + GUARD, 0));
	EXPECT_EQ(0, count_not(o->src, VBYTES, ORIGIN_PATTERN));
	expect_origin_works(_metadata, o);
	free(gone);
}

/* Own node, another process: its NLA through the wrong VPID and the like. */
TEST_F_TIMEOUT(prot, foreign_endpoint_same_node, 300)
{
	struct origin *o = &self->o, other;
	struct victim_box *vb = self->vb;
	struct target t;
	uint8_t *gone = aligned_alloc(4096, 4096);
	RMA2_Region *r;
	pid_t pid;

	ASSERT_TRUE(gone != NULL);
	pid = victim_start(vb);
	ASSERT_LT(0, pid);
	/* "another process's endpoint" = a second endpoint of ours */
	ASSERT_EQ(0, origin_open(&other));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(other.p, gone, 4096, &r));
	memset(&t, 0, sizeof(t));
	ASSERT_EQ(RMA2_SUCCESS, rma2_get_nla(r, 0, &t.gone_nla));
	ASSERT_EQ(RMA2_SUCCESS, rma2_unregister(other.p, r));
	t.node = vb->node;
	t.vpid = vb->vpid;
	t.nla = vb->nla;
	t.size = vb->size;
	t.other_vpid = other.vpid;
	t.other_nla = other.dst_nla;
	ASSERT_EQ(0, closed_vpid(&t.dead_vpid));
	ASSERT_EQ(o->node, t.node);
	vb->legal = 0x5b;
	vb->legal_node = o->node;
	vb->legal_vpid = o->vpid;
	attack(_metadata, o, &t, vb->legal);
	/* the other endpoint saw nothing and its memory is unchanged */
	expect_quiet(_metadata, other.p, "other endpoint");
	EXPECT_EQ(0, count_not(other.dst, VBYTES + GUARD, 0));
	__atomic_store_n(&vb->state, VB_ATTACKED, __ATOMIC_RELEASE);
	EXPECT_EQ(0, victim_finish(vb, pid));
	expect_origin_works(_metadata, o);
	origin_close(&other);
	free(gone);
}

/*
 * Another node: rank 1 runs the victim process and a second process's
 * endpoint (its own), rank 0 attacks both over the fabric.
 */
struct remote_info {
	struct target t;
	int32_t ok;
};

TEST_F_TIMEOUT(prot, foreign_endpoint_remote_node, 300)
{
	struct origin *o = &self->o;
	struct victim_box *vb = self->vb;
	struct remote_info ri;
	struct oob oob;
	pid_t pid = -1;
	int32_t result = 0;

	XT_OOB_UP(&oob);
	if (oob.nnodes != 2) {
		oob_fini(&oob);
		SKIP_TEST("needs exactly 2 ranks");
	}
	memset(&ri, 0, sizeof(ri));
	if (oob.rank == 1) {
		uint8_t *gone = aligned_alloc(4096, 4096);
		RMA2_Region *r;

		pid = victim_start(vb);
		ri.ok = pid > 0 && gone && !rma2_register(o->p, gone, 4096, &r) &&
			!rma2_get_nla(r, 0, &ri.t.gone_nla) && !rma2_unregister(o->p, r) &&
			!closed_vpid(&ri.t.dead_vpid);
		ri.t.node = vb->node;
		ri.t.vpid = vb->vpid;
		ri.t.nla = vb->nla;
		ri.t.size = vb->size;
		ri.t.other_vpid = o->vpid;	/* this process is "the other" */
		ri.t.other_nla = o->dst_nla;
		free(gone);
	}
	ASSERT_EQ(0, oob_bcast(&oob, &ri, sizeof(ri), 1));
	ASSERT_TRUE(ri.ok);
	if (oob.rank == 0) {
		ASSERT_NE(o->node, ri.t.node);
		attack(_metadata, o, &ri.t, 0x6c);
		expect_origin_works(_metadata, o);
		/* the legal put came from here */
		result = (int32_t)(o->node << 16 | o->vpid);
	}
	ASSERT_EQ(0, oob_bcast(&oob, &result, sizeof(result), 0));
	if (oob.rank == 1) {
		vb->legal = 0x6c;
		vb->legal_node = (uint32_t)result >> 16;
		vb->legal_vpid = (uint32_t)result & 0xffff;
		__atomic_store_n(&vb->state, VB_ATTACKED, __ATOMIC_RELEASE);
		EXPECT_EQ(0, victim_finish(vb, pid));
		/* the second process saw nothing and its memory is unchanged */
		expect_quiet(_metadata, o->p, "other endpoint");
		EXPECT_EQ(0, count_not(o->dst, VBYTES + GUARD, 0));
	}
	ASSERT_EQ(0, oob_barrier(&oob));
	oob_fini(&oob);
}

TEST_HARNESS_MAIN
