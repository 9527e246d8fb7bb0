// SPDX-License-Identifier: GPL-2.0
/*
 * Deregistration racing with a peer's stream (tests.list: 2 nodes).  With
 * direct delivery the origin's emulator writes and reads the target's
 * memory through translations the target exported (Documentation/
 * fabric.md section 9); a deregistration must end them: once
 * rma2_unregister() returned, not one byte of the region is written or
 * read by a put or get of the peer, and the pages around the region are
 * never touched.  Rank 0 streams 4 KiB puts (then gets) at rank 1's
 * region; rank 1 deregisters it in the middle of the stream, then keeps
 * its own copy of what the region held (puts) or fills it with a new
 * pattern (gets); rank 0 counts puts / gets that completed and that
 * failed, and checks every get it got never carries the new pattern.
 */
#include "extoll_test.h"

#define PAGE 4096u
#define PAGES 64u                   /* the region */
#define CANARY 0xc5
#define OLD 0x11                    /* gets: before the deregistration */
#define NEW 0x99                    /* gets: after it */
#define WINDOW 16                   /* commands in flight */
#define STREAM_S 1.5                /* rank 0's stream */
#define DEREG_S 0.5                 /* rank 1 deregisters after this */
#define TMO_S 60

struct addr {
	uint32_t node, vpid;
	uint64_t nla;
};

FIXTURE(race) {
	struct oob oob;
	int rank;
	RMA2_Port port;
	RMA2_Handle h;
	uint8_t *map;                   /* canary page, region, canary page */
	uint8_t *buf;                   /* the region */
	RMA2_Region *r;
	struct addr me, peer;
};

FIXTURE_SETUP(race)
{
	struct addr all[2];

	ASSERT_EQ(0, oob_init(&self->oob, (unsigned int)ksft_case_index(_metadata), 120000));
	if (self->oob.nnodes != 2)
		SKIP_TEST("needs exactly 2 ranks");
	self->rank = self->oob.rank;
	XT_RMA2_OPEN_OR_SKIP(&self->port);
	self->map = mmap(NULL, (PAGES + 2) * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(self->map != MAP_FAILED);
	memset(self->map, CANARY, (PAGES + 2) * PAGE);
	self->buf = self->map + PAGE;
	memset(self->buf, OLD, PAGES * PAGE);
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(self->port, self->buf, PAGES * PAGE, &self->r));
	self->me.node = rma2_get_nodeid(self->port);
	self->me.vpid = rma2_get_vpid(self->port);
	rma2_get_nla(self->r, 0, &self->me.nla);
	ASSERT_EQ(0, oob_allgather(&self->oob, &self->me, all, sizeof(self->me)));
	self->peer = all[1 - self->rank];
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(self->port, (RMA2_Nodeid)self->peer.node,
					     (RMA2_VPID)self->peer.vpid, RMA2_CONN_DEFAULT, &self->h));
}

FIXTURE_TEARDOWN(race)
{
	oob_barrier(&self->oob);
	if (self->port) {
		rma2_disconnect(self->port, self->h);
		if (self->r)
			rma2_unregister(self->port, self->r);
		rma2_close(self->port);
	}
	oob_fini(&self->oob);
}

/* What rank 0's stream saw */
struct tally {
	long ok, failed, stale;         /* stale: a get that read NEW */
};

/* One notification per command: error bits set or not */
static int take_noti(RMA2_Port port, struct tally *t)
{
	RMA2_Notification n;

	if (xt_next_noti(port, &n, TMO_S))
		return -1;
	if (rma2_noti_get_error(&n))
		t->failed++;
	else
		t->ok++;
	return 0;
}

/*
 * Rank 0: puts (get = 0) or gets of page k % PAGES of the peer's region
 * for STREAM_S seconds, WINDOW in flight.  A get lands in our own region's
 * page k % PAGES, which is checked when its completer notification comes
 * (in order: the stream to one peer keeps its order).
 */
static int stream(struct __test_metadata *_metadata, FIXTURE_DATA(race) *self, int get,
		  struct tally *t)
{
	double end = xt_now_s() + STREAM_S;
	long posted = 0, done = 0;

	while (xt_now_s() < end || done < posted) {
		if (posted - done < WINDOW && xt_now_s() < end) {
			uint32_t pg = (uint32_t)(posted % PAGES);
			RMA2_NLA remote = self->peer.nla + (uint64_t)pg * PAGE;
			RMA2_ERROR rc;

			if (get) {
				memset(self->buf + pg * PAGE, 0, PAGE);
				rc = rma2_post_get_bt(self->port, self->h, self->r, pg * PAGE, PAGE,
						      remote, RMA2_COMPLETER_NOTIFICATION, 0);
			} else {
				memset(self->buf + pg * PAGE, (int)(posted & 0x3f) + 0x40, PAGE);
				rc = rma2_post_put_bt(self->port, self->h, self->r, pg * PAGE, PAGE,
						      remote, RMA2_REQUESTER_NOTIFICATION, 0);
			}
			if (rc != RMA2_SUCCESS) {
				TH_LOG("post %ld: %d", posted, rc);
				return -1;
			}
			posted++;
			continue;
		}
		long before = t->ok;

		if (take_noti(self->port, t)) {
			TH_LOG("no notification for command %ld of %ld", done, posted);
			return -1;
		}
		if (get && t->ok > before) {
			const uint8_t *p = self->buf + (done % PAGES) * PAGE;

			for (uint32_t i = 0; i < PAGE; i++) {
				if (p[i] != OLD) {
					if (p[i] == NEW)
						t->stale++;
					else
						TH_LOG("get %ld: byte %u is 0x%02x", done, i, p[i]);
					EXPECT_EQ(OLD, p[i]);
					break;
				}
			}
		}
		done++;
	}
	return 0;
}

/*
 * Rank 1: deregister in the middle of the stream; afterwards the region
 * must not change (puts) or is refilled with NEW (gets).
 */
static void deregister_midway(struct __test_metadata *_metadata, FIXTURE_DATA(race) *self,
			      int get, uint8_t *copy)
{
	usleep((useconds_t)(DEREG_S * 1e6));
	ASSERT_EQ(RMA2_SUCCESS, rma2_unregister(self->port, self->r));
	self->r = NULL;
	if (get)
		memset(self->buf, NEW, PAGES * PAGE);
	memcpy(copy, self->buf, PAGES * PAGE);
}

static void race(struct __test_metadata *_metadata, FIXTURE_DATA(race) *self, int get)
{
	static uint8_t copy[PAGES * PAGE];
	struct tally t = { 0 };

	ASSERT_EQ(0, oob_barrier(&self->oob));
	if (self->rank == 0) {
		ASSERT_EQ(0, stream(_metadata, self, get, &t));
		TH_LOG("%s: %ld completed, %ld refused", get ? "gets" : "puts", t.ok, t.failed);
		EXPECT_EQ(0, t.stale);
		/* the deregistration fell into the stream */
		EXPECT_GT(t.ok, 0);
		EXPECT_GT(t.failed, 0);
		ASSERT_EQ(0, oob_barrier(&self->oob));
		return;
	}
	deregister_midway(_metadata, self, get, copy);
	ASSERT_EQ(0, oob_barrier(&self->oob));        /* the stream is over */
	if (memcmp(copy, self->buf, PAGES * PAGE)) {
		for (uint32_t i = 0; i < PAGES * PAGE; i++) {
			if (copy[i] != self->buf[i]) {
				TH_LOG("byte %u of the region changed after the deregistration",
				       i);
				break;
			}
		}
	}
	EXPECT_EQ(0, memcmp(copy, self->buf, PAGES * PAGE));
	for (uint32_t i = 0; i < PAGE; i++) {
		ASSERT_EQ(CANARY, self->map[i]);
		ASSERT_EQ(CANARY, self->map[(PAGES + 1) * PAGE + i]);
	}
}

TEST_F_TIMEOUT(race, puts_write_nothing_after_deregistration, 300)
{
	race(_metadata, self, 0);
}

TEST_F_TIMEOUT(race, gets_read_nothing_after_deregistration, 300)
{
	race(_metadata, self, 1);
}

TEST_HARNESS_MAIN
