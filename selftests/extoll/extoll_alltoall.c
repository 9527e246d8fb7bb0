// SPDX-License-Identifier: GPL-2.0
/*
 * All-to-all over librma2 / libvelo2 between 3..16 nodes (tests.list: 4
 * nodes).  Every rank talks to every other rank at the same time:
 *
 *  - VELO: M messages of 8..120 bytes to every peer (sender rank, receiver
 *    rank, sequence number, checksum); every receiver gets exactly M from
 *    each sender, intact, in per-sender order (the device retries a message
 *    refused by a full ring in order, hardware.md "VELO"), no duplicate, no
 *    unknown sender.
 *  - RMA put / get: every rank writes (put) or fetches (get) a pattern
 *    depending on writer, reader, round and offset into its slot of every
 *    peer, 8 B .. 256 KiB per transfer, byte and quadword commands; every
 *    requester / responder / completer notification is checked field by
 *    field on both sides, in order per peer (commands of one connection
 *    complete in order), then every slot byte for byte, guards included.
 *  - A full ring: every other rank streams to rank 0, which does not look
 *    at its ring until every sender has been held back for a while; then
 *    the ring holds every slot's message, and each sender's are delivered
 *    exactly once, intact, in order (one receive ring, several writers at
 *    once: direct delivery writes it from every sender's emulator).
 *
 * Ranks meet over the out-of-band TCP channel (selftests/lib/oob.h).  Every
 * wait gives up after TMO_S seconds without progress and names the peer
 * and operation it was waiting for.
 */
#include <extoll.h>

#include "exa_endian.h"
#include "extoll_test.h"

#define TMO_S 120
#define MAX_RANKS 16

/* One slot per peer in the send and the receive buffer: up to SLOT_DATA
 * bytes of transfers, the rest of the slot a guard no transfer may touch. */
#define SLOT_DATA (256u * 1024u)
#define SLOT_STRIDE (SLOT_DATA + 4096u)
#define GUARD 0xa5

/* Up to this many transfers per peer and round, XFER_GAP guard bytes
 * apart so that an overrun of any of them shows */
#define MAX_XFERS_PER_PEER 16
#define XFER_GAP 64

#define VELO_MSGS_PER_PEER 200
/* the ring-fill case: up to this many messages from one sender */
#define VELO_FILL_MAX 1024
#define VELO_HDR_LEN 8
#define VELO_MAX_LEN 120

struct rank_addr {
	uint32_t node, rma_vpid, velo_vpid;
	int32_t rma_open_err, velo_open_err;
	uint32_t pad;			/* no uninitialised bytes on the wire */
	uint64_t src_nla, dst_nla;
};

FIXTURE(a2a) {
	struct oob oob;
	int rank, nnodes;
	RMA2_Port port;
	RMA2_Handle h[MAX_RANKS];
	uint8_t *src, *dst;
	size_t buf_len;
	RMA2_Region *rs, *rd;
	velo2_port_t velo;
	velo2_connection_t vc[MAX_RANKS];
	struct rank_addr all[MAX_RANKS];
};

FIXTURE_SETUP(a2a)
{
	struct rank_addr me = { 0 };
	RMA2_ERROR rc;

	XT_OOB_UP(&self->oob);
	self->rank = self->oob.rank;
	self->nnodes = self->oob.nnodes;
	if (self->nnodes < 3 || self->nnodes > MAX_RANKS)
		SKIP_TEST("needs 3..%d ranks, have %d", MAX_RANKS, self->nnodes);

	/* every rank sends and receives in one loop: a blocking send to a full
	 * ring would wait for a receiver that is itself stuck sending */
	setenv("VELO2_SEND_NONBLOCK", "1", 1);
	rc = rma2_open(&self->port);
	me.rma_open_err = rc;
	if (rc != RMA2_SUCCESS)
		self->port = NULL;
	me.velo_open_err = velo2_open(&self->velo);
	/* all ranks skip or none: a lone skipper would leave the others
	 * waiting in the next collective */
	ASSERT_EQ(0, oob_allgather(&self->oob, &me, self->all, sizeof(me)));
	for (int r = 0; r < self->nnodes; r++) {
		int32_t re = self->all[r].rma_open_err, ve = self->all[r].velo_open_err;

		if (re == RMA2_ERR_NO_DEVICE || re == RMA2_ERR_FD || ve == VELO2_RET_ERR_FDOPEN)
			SKIP_TEST("no EXTOLL device on rank %d (rma2_open %d, velo2_open %d)", r,
			     re, ve);
	}
	for (int r = 0; r < self->nnodes; r++) {
		if (self->all[r].rma_open_err != RMA2_SUCCESS ||
		    self->all[r].velo_open_err != VELO2_RET_SUCCESS)
			TH_LOG("rank %d: rma2_open %d, velo2_open %d", r,
			       self->all[r].rma_open_err, self->all[r].velo_open_err);
		ASSERT_EQ(RMA2_SUCCESS, self->all[r].rma_open_err);
		ASSERT_EQ(VELO2_RET_SUCCESS, self->all[r].velo_open_err);
	}

	self->buf_len = (size_t)self->nnodes * SLOT_STRIDE;
	self->src = mmap(NULL, self->buf_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	self->dst = mmap(NULL, self->buf_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(self->src != MAP_FAILED && self->dst != MAP_FAILED);
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(self->port, self->src, self->buf_len, &self->rs));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(self->port, self->dst, self->buf_len, &self->rd));
	me.node = rma2_get_nodeid(self->port);
	me.rma_vpid = rma2_get_vpid(self->port);
	me.velo_vpid = velo2_get_vpid(&self->velo);
	ASSERT_EQ(me.node, velo2_get_nodeid(&self->velo));
	ASSERT_EQ(RMA2_SUCCESS, rma2_get_nla(self->rs, 0, &me.src_nla));
	ASSERT_EQ(RMA2_SUCCESS, rma2_get_nla(self->rd, 0, &me.dst_nla));
	ASSERT_EQ(0, oob_allgather(&self->oob, &me, self->all, sizeof(me)));

	for (int r = 0; r < self->nnodes; r++) {
		/* notifications and VELO sources name the peer by node id */
		for (int q = 0; q < r; q++)
			ASSERT_NE(self->all[q].node, self->all[r].node);
		if (r == self->rank)
			continue;
		ASSERT_EQ(RMA2_SUCCESS, rma2_connect(self->port, (RMA2_Nodeid)self->all[r].node,
						     (RMA2_VPID)self->all[r].rma_vpid,
						     RMA2_CONN_DEFAULT, &self->h[r]));
		ASSERT_EQ(VELO2_RET_SUCCESS, velo2_connect(&self->velo, &self->vc[r],
							   self->all[r].node,
							   self->all[r].velo_vpid));
	}
}

FIXTURE_TEARDOWN(a2a)
{
	/* nobody may still be sending to or reading from us */
	oob_barrier(&self->oob);
	for (int r = 0; r < self->nnodes; r++) {
		if (self->h[r])
			rma2_disconnect(self->port, self->h[r]);
		if (self->vc[r].state_map)
			velo2_disconnect(&self->velo, &self->vc[r]);
	}
	if (self->velo.map)
		velo2_close(&self->velo);
	if (self->port) {
		if (self->rs)
			rma2_unregister(self->port, self->rs);
		if (self->rd)
			rma2_unregister(self->port, self->rd);
		rma2_close(self->port);
	}
	oob_fini(&self->oob);
}

/* Byte 'off' of what writer has for reader in a round, computable for any
 * offset alone (a check needs no copy of the source). */
static uint8_t pattern_byte(uint32_t writer, uint32_t reader, uint32_t round, size_t off)
{
	uint32_t word = exa_mix32((writer + 1) * 0x9e3779b1u ^ (reader + 1) * 0x85ebca77u ^
			      (round + 1) * 0xc2b2ae3du ^ exa_mix32((uint32_t)(off >> 2)));

	return (uint8_t)(word >> ((off & 3) * 8));
}

/* ------------------------------------------------------------------ VELO */

static uint32_t velo_msg_len(uint32_t sender, uint32_t receiver, uint32_t seq)
{
	/* every length 8..120 comes round, differently per pair */
	return VELO_HDR_LEN + (seq * 7 + sender * 13 + receiver * 5) %
	       (VELO_MAX_LEN - VELO_HDR_LEN + 1);
}

/* FNV-1a over the length and every byte but the checksum field (4..7) */
static uint32_t velo_checksum(const uint8_t *m, uint32_t len)
{
	uint32_t h = 2166136261u ^ len;

	for (uint32_t i = 0; i < len; i++)
		if (i < 4 || i >= 8)
			h = (h ^ m[i]) * 16777619u;
	return h;
}

/* [0] sender rank, [1] receiver rank, [2..3] sequence (LE), [4..7] checksum (LE) */
static void velo_make_msg(uint8_t *m, uint32_t sender, uint32_t receiver, uint32_t seq,
			  uint32_t len)
{
	uint32_t sum;

	m[0] = (uint8_t)sender;
	m[1] = (uint8_t)receiver;
	exa_put_le16(m + 2, (uint16_t)seq);
	for (uint32_t i = VELO_HDR_LEN; i < len; i++)
		m[i] = pattern_byte(sender, receiver, seq, i);
	sum = velo_checksum(m, len);
	exa_put_le32(m + 4, sum);
}

static uint8_t velo_mtt(uint32_t sender, uint32_t seq)
{
	return (uint8_t)((sender + seq) & 3);
}

struct velo_rx {
	uint32_t per_peer;			/* messages each sender sends */
	uint32_t got[MAX_RANKS];		/* distinct messages per sender */
	uint32_t past_newest[MAX_RANKS];	/* 1 + highest sequence seen per sender */
	uint8_t seen[MAX_RANKS][VELO_FILL_MAX];
	uint32_t total_unique;
	uint32_t corrupt, dups, out_of_order, unknown_sender, errors;
	uint32_t logged;
};

#define VELO_LOG_MAX 10
#define VELO_LOG(rx, fmt, ...)						\
	do {								\
		if ((rx)->logged++ < VELO_LOG_MAX)			\
			ksft_print_msg(fmt "\n", ##__VA_ARGS__);	\
	} while (0)

static int velo_rank_of_src(FIXTURE_DATA(a2a) *self, uint32_t srcid)
{
	for (int r = 0; r < self->nnodes; r++)
		if (r != self->rank &&
		    (uint32_t)VELO2_ADDR_PACK(self->all[r].node, self->all[r].velo_vpid) == srcid)
			return r;
	return -1;
}

/* Checks one received message and books it; 'res' is velo2_probe_recv's answer. */
static void velo_take(FIXTURE_DATA(a2a) *self, struct velo_rx *rx, velo2_ret_t res,
		      const uint8_t *m, uint32_t len, uint32_t srcid, uint8_t tag, uint8_t mtt)
{
	int from = velo_rank_of_src(self, srcid);
	uint32_t seq, sum;

	if (res != VELO2_RET_SUCCESS) {
		/* a message with the error bit (consumed by the library) */
		rx->errors++;
		VELO_LOG(rx, "rank %d: receive error %d (srcid %#x)", self->rank, res, srcid);
		return;
	}
	if (from < 0 || tag != from) {
		rx->unknown_sender++;
		VELO_LOG(rx, "rank %d: message from srcid %#x (rank %d) with tag %u", self->rank,
			 srcid, from, tag);
		return;
	}
	if (len < VELO_HDR_LEN) {
		rx->corrupt++;
		VELO_LOG(rx, "rank %d: %u-byte message from rank %d", self->rank, len, from);
		return;
	}
	if (m[0] != from) {
		rx->unknown_sender++;
		VELO_LOG(rx, "rank %d: message from rank %d says it is from rank %u", self->rank,
			 from, m[0]);
		return;
	}
	seq = exa_get_le16(m + 2);
	sum = exa_get_le32(m + 4);
	if (m[1] != self->rank || seq >= rx->per_peer ||
	    len != velo_msg_len((uint32_t)from, (uint32_t)self->rank, seq) ||
	    mtt != velo_mtt((uint32_t)from, seq) || sum != velo_checksum(m, len)) {
		rx->corrupt++;
		VELO_LOG(rx, "rank %d: corrupt message from rank %d: receiver %u seq %u len %u "
			 "mtt %u checksum %#x (computed %#x)", self->rank, from, m[1], seq, len,
			 mtt, sum, velo_checksum(m, len));
		return;
	}
	if (rx->seen[from][seq]) {
		rx->dups++;
		VELO_LOG(rx, "rank %d: message %u from rank %d again", self->rank, seq, from);
		return;
	}
	/* older than one already here: overtaken (a gap alone may be a loss,
	 * which the final count reports) */
	if (seq < rx->past_newest[from]) {
		rx->out_of_order++;
		VELO_LOG(rx, "rank %d: message %u from rank %d after message %u", self->rank,
			 seq, from, rx->past_newest[from] - 1);
	} else {
		rx->past_newest[from] = seq + 1;
	}
	rx->seen[from][seq] = 1;
	rx->got[from]++;
	rx->total_unique++;
}

/* Nothing received was corrupt, twice, overtaken, from a stranger or an error. */
static void velo_expect_intact(struct __test_metadata *_metadata, const struct velo_rx *rx)
{
	EXPECT_EQ(0, rx->corrupt);
	EXPECT_EQ(0, rx->dups);
	EXPECT_EQ(0, rx->out_of_order);
	EXPECT_EQ(0, rx->unknown_sender);
	EXPECT_EQ(0, rx->errors);
}

static uint32_t velo_first_missing(const struct velo_rx *rx, int from)
{
	uint32_t seq = 0;

	while (seq < rx->per_peer && rx->seen[from][seq])
		seq++;
	return seq;
}

/*
 * Every rank sends VELO_MSGS_PER_PEER messages to every other rank,
 * destinations interleaved, draining its own ring between sends.
 */
TEST_F_TIMEOUT(a2a, velo_all_to_all_exactly_m_intact_in_order, 300)
{
	const uint32_t peers = (uint32_t)self->nnodes - 1;
	const uint32_t to_send = VELO_MSGS_PER_PEER * peers;
	uint32_t sent_to[MAX_RANKS] = { 0 }, sent = 0, try_again = 0, extra = 0;
	struct velo_rx *rx = calloc(1, sizeof(*rx));
	uint8_t out[VELO_MAX_LEN], in[128];
	uint32_t step = 1, len, srcid;
	uint8_t tag, mtt;
	double stall_end, settle_end;
	velo2_ret_t res;

	ASSERT_TRUE(rx != NULL);
	rx->per_peer = VELO_MSGS_PER_PEER;
	ASSERT_EQ(0, oob_barrier(&self->oob));
	stall_end = xt_now_s() + TMO_S;
	while (sent < to_send || rx->total_unique < to_send) {
		int progress = 0;

		if (sent < to_send) {
			uint32_t dst = ((uint32_t)self->rank + step) % (uint32_t)self->nnodes;
			uint32_t seq = sent_to[dst];
			uint32_t l = velo_msg_len((uint32_t)self->rank, dst, seq);

			velo_make_msg(out, (uint32_t)self->rank, dst, seq, l);
			res = velo2_send(&self->vc[dst], out, l, (uint8_t)self->rank,
					 velo_mtt((uint32_t)self->rank, seq));
			if (res == VELO2_RET_SUCCESS) {
				sent_to[dst]++;
				sent++;
				step = step % peers + 1;
				progress = 1;
			} else {
				if (res != VELO2_RET_TRY_AGAIN)
					TH_LOG("rank %d: send %u to rank %u: %d", self->rank, seq,
					       dst, res);
				ASSERT_EQ(VELO2_RET_TRY_AGAIN, res);
				try_again++;
			}
		}
		for (int k = 0; k < 16; k++) {
			res = velo2_probe_recv(&self->velo, in, sizeof(in), &len, &srcid, &tag,
					       &mtt);
			if (res == VELO2_RET_NO_MSG)
				break;
			ASSERT_TRUE(res == VELO2_RET_SUCCESS || res == VELO2_RET_INV_MSG);
			velo_take(self, rx, res, in, len, srcid, tag, mtt);
			progress = 1;
		}
		if (progress) {
			stall_end = xt_now_s() + TMO_S;
		} else if (xt_now_s() > stall_end) {
			TH_LOG("rank %d: nothing sent or received for %d s (told to try again "
			       "%u times)", self->rank, TMO_S, try_again);
			for (int r = 0; r < self->nnodes; r++) {
				if (r == self->rank)
					continue;
				if (sent_to[r] < VELO_MSGS_PER_PEER)
					TH_LOG("rank %d: to rank %d sent %u of %u", self->rank, r,
					       sent_to[r], VELO_MSGS_PER_PEER);
				if (rx->got[r] < VELO_MSGS_PER_PEER)
					TH_LOG("rank %d: from rank %d (node %u) got %u of %u, "
					       "first missing %u", self->rank, r,
					       self->all[r].node, rx->got[r], VELO_MSGS_PER_PEER,
					       velo_first_missing(rx, r));
			}
			ASSERT_TRUE(0);
		} else {
			sched_yield();
		}
	}
	TH_LOG("rank %d: sent %u, received %u, try again %u", self->rank, sent,
	       rx->total_unique, try_again);
	/* everybody has everything: whatever arrives now is one too many */
	ASSERT_EQ(0, oob_barrier(&self->oob));
	settle_end = xt_now_s() + 0.5;
	while (xt_now_s() < settle_end) {
		res = velo2_probe_recv(&self->velo, in, sizeof(in), &len, &srcid, &tag, &mtt);
		if (res == VELO2_RET_NO_MSG) {
			sched_yield();
			continue;
		}
		ASSERT_TRUE(res == VELO2_RET_SUCCESS || res == VELO2_RET_INV_MSG);
		velo_take(self, rx, res, in, len, srcid, tag, mtt);
		extra++;
	}
	if (extra)
		TH_LOG("rank %d: %u messages after all %u had arrived", self->rank, extra, to_send);
	EXPECT_EQ(0, extra);
	for (int r = 0; r < self->nnodes; r++) {
		if (r == self->rank)
			continue;
		if (rx->got[r] != VELO_MSGS_PER_PEER)
			TH_LOG("rank %d: from rank %d got %u of %u", self->rank, r, rx->got[r],
			       VELO_MSGS_PER_PEER);
		EXPECT_EQ(VELO_MSGS_PER_PEER, rx->got[r]);
	}
	velo_expect_intact(_metadata, rx);
	free(rx);
}

/* Every rank but 0: messages for rank 0 until they are all sent or the
 * sends have been refused (ring full, credits held) for held_s seconds on
 * end; 1 = held back, 0 = all sent. */
static int velo_fill_send(struct __test_metadata *_metadata, FIXTURE_DATA(a2a) *self,
			  uint32_t per_peer, uint32_t *sent, uint32_t *try_again, double held_s)
{
	uint8_t out[VELO_MAX_LEN];
	double refused_since = 0, stall_end = xt_now_s() + TMO_S;

	while (*sent < per_peer) {
		uint32_t l = velo_msg_len((uint32_t)self->rank, 0, *sent);
		velo2_ret_t res;

		velo_make_msg(out, (uint32_t)self->rank, 0, *sent, l);
		res = velo2_send(&self->vc[0], out, l, (uint8_t)self->rank,
				 velo_mtt((uint32_t)self->rank, *sent));
		if (res == VELO2_RET_SUCCESS) {
			(*sent)++;
			refused_since = 0;
			stall_end = xt_now_s() + TMO_S;
			continue;
		}
		if (res != VELO2_RET_TRY_AGAIN) {
			TH_LOG("rank %d: send %u to rank 0: %d", self->rank, *sent, res);
			return -1;
		}
		(*try_again)++;
		if (!refused_since)
			refused_since = xt_now_s();
		else if (held_s > 0 && xt_now_s() - refused_since > held_s)
			return 1;
		if (xt_now_s() > stall_end) {
			TH_LOG("rank %d: refused for %d s after %u of %u messages", self->rank,
			       TMO_S, *sent, per_peer);
			return -1;
		}
		usleep(100);
	}
	return 0;
}

/*
 * Several writers into one full ring: ranks 1.. stream to rank 0, which
 * does not look at its ring until each of them has sent all or been held
 * back for HELD_S on end.  Then the ring is full (its first slots, read
 * one after the other, all hold messages) and, drained, has every
 * sender's messages exactly once, intact, in order per sender.
 */
#define HELD_S 0.3
TEST_F_TIMEOUT(a2a, velo_ring_filled_by_every_sender_at_once, 300)
{
	const uint32_t slots = VELO2_MBOX_DEFAULT_SIZE / EXTOLL_VELO_SLOT_SIZE;
	const uint32_t senders = (uint32_t)self->nnodes - 1;
	/* twice the ring across the senders, at least VELO_MSGS_PER_PEER each */
	uint32_t per_peer = 2 * slots / senders + 1, sent = 0, try_again = 0, burst = 0;
	struct velo_rx *rx = calloc(1, sizeof(*rx));
	int held = 0, all_held[MAX_RANKS];

	ASSERT_TRUE(rx != NULL);
	if (per_peer < VELO_MSGS_PER_PEER)
		per_peer = VELO_MSGS_PER_PEER;
	ASSERT_GE(VELO_FILL_MAX, per_peer);
	rx->per_peer = per_peer;
	ASSERT_EQ(0, oob_barrier(&self->oob));
	if (self->rank != 0) {
		held = velo_fill_send(_metadata, self, per_peer, &sent, &try_again, HELD_S);
		ASSERT_LE(0, held);
	}
	/* every sender held back (or done): only now does rank 0 read */
	ASSERT_EQ(0, oob_allgather(&self->oob, &held, all_held, sizeof(held)));
	if (self->rank != 0) {
		ASSERT_EQ(0, velo_fill_send(_metadata, self, per_peer, &sent, &try_again, 0));
		TH_LOG("rank %d: %u messages to rank 0, %s, told to try again %u times",
		       self->rank, sent, held ? "held back by the full ring" : "none held back",
		       try_again);
	} else {
		uint8_t in[128];
		uint32_t len, srcid;
		uint8_t tag, mtt;
		int first = 1;
		double stall_end = xt_now_s() + TMO_S;

		while (rx->total_unique < senders * per_peer) {
			velo2_ret_t res = velo2_probe_recv(&self->velo, in, sizeof(in), &len,
							   &srcid, &tag, &mtt);

			if (res == VELO2_RET_NO_MSG) {
				first = 0;
				ASSERT_GT(stall_end, xt_now_s());
				sched_yield();
				continue;
			}
			ASSERT_TRUE(res == VELO2_RET_SUCCESS || res == VELO2_RET_INV_MSG);
			burst += first;
			velo_take(self, rx, res, in, len, srcid, tag, mtt);
			stall_end = xt_now_s() + TMO_S;
		}
		TH_LOG("rank 0: %u messages from %u senders; the first %u were waiting in "
		       "the ring of %u slots", rx->total_unique, senders, burst, slots);
		for (uint32_t r = 1; r <= senders; r++) {
			if (!all_held[r])
				TH_LOG("rank %u sent all before it was held back", r);
			EXPECT_EQ(per_peer, rx->got[r]);
		}
		/* the ring was full when its reader came */
		EXPECT_LE(slots, burst);
		velo_expect_intact(_metadata, rx);
	}
	free(rx);
}

/* ------------------------------------------------------------------- RMA */

enum { KIND_REQ, KIND_RESP, KIND_COMPL, NKINDS };

static const char *const kind_name[NKINDS] = { "requester", "responder", "completer" };

static int kind_of_type(unsigned int type)
{
	switch (type) {
	case RMA2_REQUESTER_NOTIFICATION:
		return KIND_REQ;
	case RMA2_RESPONDER_NOTIFICATION:
		return KIND_RESP;
	case RMA2_COMPLETER_NOTIFICATION:
		return KIND_COMPL;
	}
	return -1;
}

/* The notifications one rank must see in a round: per peer and kind, in order. */
struct noti_plan {
	struct xt_noti want[MAX_RANKS][NKINDS][MAX_XFERS_PER_PEER];
	uint8_t taken[MAX_RANKS][NKINDS][MAX_XFERS_PER_PEER];
	int count[MAX_RANKS][NKINDS];
	int got[MAX_RANKS][NKINDS];
	int total;
};

struct rma_round {
	int is_get, qw;
	uint32_t size;
	uint32_t id;		/* part of the pattern: no round passes on old data */
	uint32_t src_lead, dst_lead;	/* slot offsets of the first transfer */
	int xfers;		/* per peer, XFER_GAP apart */
	char what[48];
};

static void plan_add(struct noti_plan *p, int peer, unsigned int type, unsigned int cmd,
		     const struct rank_addr *a, uint64_t start, uint32_t len)
{
	int kind = kind_of_type(type);
	int j = p->count[peer][kind]++;

	p->want[peer][kind][j] = xt_noti_xfer(type, cmd, a->node, a->rma_vpid, start, len);
	p->total++;
}

/*
 * Books notification n against the plan.  Each (peer, kind) stream must
 * come in posting order; one that matches a later entry counts as out of
 * order, one that matches none as wrong.  Returns the number of problems.
 */
static int plan_take(FIXTURE_DATA(a2a) *self, struct noti_plan *p, RMA2_Notification *n,
		     const struct rma_round *rd)
{
	unsigned int node = rma2_noti_get_remote_nodeid(n);
	int kind = kind_of_type(rma2_noti_get_notification_type(n));
	int peer = -1, head, j;
	char why[400];

	for (int r = 0; r < self->nnodes; r++)
		if (r != self->rank && self->all[r].node == node)
			peer = r;
	if (peer < 0 || kind < 0 || p->got[peer][kind] >= p->count[peer][kind]) {
		rma2_noti_sdump(n, why, sizeof(why));
		ksft_print_msg("%s: rank %d: unexpected notification (peer rank %d): %s\n", rd->what,
		       self->rank, peer, why);
		return 1;
	}
	p->got[peer][kind]++;
	for (head = 0; p->taken[peer][kind][head]; head++)
		;
	for (j = head; j < p->count[peer][kind]; j++)
		if (!p->taken[peer][kind][j] &&
		    !xt_noti_differs(n, &p->want[peer][kind][j], why, sizeof(why)))
			break;
	if (j == p->count[peer][kind]) {
		xt_noti_differs(n, &p->want[peer][kind][head], why, sizeof(why));
		ksft_print_msg("%s: rank %d: %s notification %d of %d for rank %d (node %u): %s\n",
		       rd->what, self->rank, kind_name[kind], head + 1, p->count[peer][kind],
		       peer, node, why);
		p->taken[peer][kind][head] = 1;
		return 1;
	}
	p->taken[peer][kind][j] = 1;
	if (j != head) {
		ksft_print_msg("%s: rank %d: %s notification %d of %d for rank %d came before %d\n",
		       rd->what, self->rank, kind_name[kind], j + 1, p->count[peer][kind], peer,
		       head + 1);
		return 1;
	}
	return 0;
}

/* Logs every (peer, kind) stream still short of notifications; returns their number. */
static int plan_report_missing(FIXTURE_DATA(a2a) *self, const struct noti_plan *p,
			       const struct rma_round *rd)
{
	int short_streams = 0;

	for (int peer = 0; peer < self->nnodes; peer++)
		for (int k = 0; k < NKINDS; k++)
			if (p->got[peer][k] < p->count[peer][k]) {
				ksft_print_msg("%s: rank %d: %s notifications for rank %d (node %u): "
				       "%d of %d\n", rd->what, self->rank, kind_name[k], peer,
				       self->all[peer].node, p->got[peer][k], p->count[peer][k]);
				short_streams++;
			}
	return short_streams;
}

/* Offset of transfer j from the lead of a slot */
static size_t xfer_at(const struct rma_round *rd, int j)
{
	return (size_t)j * (rd->size + XFER_GAP);
}

/* Whether offset 'rel' from the lead of a slot belongs to a transfer */
static int in_xfer(const struct rma_round *rd, size_t rel)
{
	return rel / (rd->size + XFER_GAP) < (size_t)rd->xfers &&
	       rel % (rd->size + XFER_GAP) < rd->size;
}

/* Bytes of slot 'writer' in our receive buffer: the pattern where the
 * transfers went, the guard everywhere else. */
static int check_slot(FIXTURE_DATA(a2a) *self, const struct rma_round *rd, int writer)
{
	const uint8_t *slot = self->dst + (size_t)writer * SLOT_STRIDE;
	size_t first_bad = 0, bad = 0;
	int first_in_data = 0;
	uint8_t want_at_first = 0;

	for (size_t i = 0; i < SLOT_STRIDE; i++) {
		int data = writer != self->rank && i >= rd->dst_lead &&
			   in_xfer(rd, i - rd->dst_lead);
		uint8_t want = data ? pattern_byte((uint32_t)writer, (uint32_t)self->rank, rd->id,
						   i - rd->dst_lead) : GUARD;

		if (slot[i] != want && !bad++) {
			first_bad = i;
			first_in_data = data;
			want_at_first = want;
		}
	}
	if (bad)
		ksft_print_msg("%s: rank %d: slot of rank %d: %zu bytes wrong, first at %zu (%s, "
		       "got %#x, want %#x)\n", rd->what, self->rank, writer, bad, first_bad,
		       first_in_data ? "data" : "guard", slot[first_bad], want_at_first);
	return bad ? 1 : 0;
}

static void rma_run_round(struct __test_metadata *_metadata, FIXTURE_DATA(a2a) *self,
			  const struct rma_round *rd)
{
	struct noti_plan *plan = calloc(1, sizeof(*plan));
	const struct rank_addr *me = &self->all[self->rank];
	unsigned int cmd = rd->is_get ? (rd->qw ? RMA2_QW_GET : RMA2_BT_GET) :
					(rd->qw ? RMA2_QW_PUT : RMA2_BT_PUT);
	int bad = 0, slots_bad = 0;

	ASSERT_TRUE(plan != NULL);
	/* at least XFER_GAP guard bytes after the last transfer of a slot */
	ASSERT_GE(SLOT_STRIDE, rd->src_lead + xfer_at(rd, rd->xfers));
	ASSERT_GE(SLOT_STRIDE, rd->dst_lead + xfer_at(rd, rd->xfers));
	/* Our source slot p holds what we write for (put) or give to (get) p */
	for (int p = 0; p < self->nnodes; p++) {
		uint8_t *s = self->src + (size_t)p * SLOT_STRIDE + rd->src_lead;

		for (size_t i = 0; p != self->rank && i < xfer_at(rd, rd->xfers); i++)
			if (in_xfer(rd, i))
				s[i] = pattern_byte((uint32_t)self->rank, (uint32_t)p, rd->id, i);
	}
	memset(self->dst, GUARD, self->buf_len);

	for (int p = 0; p < self->nnodes; p++) {
		const struct rank_addr *a = &self->all[p];

		if (p == self->rank)
			continue;
		for (int j = 0; j < rd->xfers; j++) {
			uint64_t src_at = me->src_nla + (uint64_t)p * SLOT_STRIDE + rd->src_lead +
					  xfer_at(rd, j);
			uint64_t dst_at = me->dst_nla + (uint64_t)p * SLOT_STRIDE + rd->dst_lead +
					  xfer_at(rd, j);

			if (!rd->is_get) {
				/* our put to p, p's put to us */
				plan_add(plan, p, RMA2_REQUESTER_NOTIFICATION, cmd, a, src_at,
					 rd->size);
				plan_add(plan, p, RMA2_COMPLETER_NOTIFICATION, cmd, a, dst_at,
					 rd->size);
			} else {
				/* our get from p, p's get from us */
				plan_add(plan, p, RMA2_REQUESTER_NOTIFICATION, cmd, a, dst_at,
					 rd->size);
				plan_add(plan, p, RMA2_COMPLETER_NOTIFICATION,
					 rd->qw ? RMA2_GET_QW_RSP : RMA2_GET_BT_RSP, a, dst_at,
					 rd->size);
				plan_add(plan, p, RMA2_RESPONDER_NOTIFICATION, cmd, a, src_at,
					 rd->size);
			}
		}
	}
	ASSERT_EQ(0, oob_barrier(&self->oob));

	/* transfer j to every peer before transfer j + 1 to any */
	for (int j = 0; j < rd->xfers; j++) {
		for (int d = 1; d < self->nnodes; d++) {
			int p = (self->rank + d) % self->nnodes;
			const struct rank_addr *a = &self->all[p];
			uint32_t at = (uint32_t)xfer_at(rd, j);
			RMA2_ERROR rc;

			if (!rd->is_get) {
				uint64_t remote = a->dst_nla + (uint64_t)self->rank * SLOT_STRIDE +
						  rd->dst_lead + at;
				uint32_t off = (uint32_t)p * SLOT_STRIDE + rd->src_lead + at;

				rc = rd->qw ? rma2_post_put_qw(self->port, self->h[p], self->rs,
							       off, rd->size, remote,
							       RMA2_REQCOMPL_NOTIFICATION, 0) :
					      rma2_post_put_bt(self->port, self->h[p], self->rs,
							       off, rd->size, remote,
							       RMA2_REQCOMPL_NOTIFICATION, 0);
			} else {
				uint64_t remote = a->src_nla + (uint64_t)self->rank * SLOT_STRIDE +
						  rd->src_lead + at;
				uint64_t local = me->dst_nla + (uint64_t)p * SLOT_STRIDE +
						 rd->dst_lead + at;

				rc = rd->qw ? rma2_post_get_qw_direct(self->port, self->h[p], local,
								      rd->size, remote,
								      RMA2_ALL_NOTIFICATIONS, 0) :
					      rma2_post_get_bt_direct(self->port, self->h[p], local,
								      rd->size, remote,
								      RMA2_ALL_NOTIFICATIONS, 0);
			}
			if (rc != RMA2_SUCCESS)
				TH_LOG("%s: rank %d: posting transfer %d to rank %d: %d", rd->what,
				       self->rank, j, p, rc);
			ASSERT_EQ(RMA2_SUCCESS, rc);
		}
	}

	for (int seen = 0; seen < plan->total; seen++) {
		RMA2_Notification n;

		if (xt_next_noti(self->port, &n, TMO_S)) {
			TH_LOG("%s: rank %d: no notification for %d s, %d of %d arrived", rd->what,
			       self->rank, TMO_S, seen, plan->total);
			plan_report_missing(self, plan, rd);
			ASSERT_TRUE(0);
		}
		bad += plan_take(self, plan, &n, rd);
	}
	/* unexpected ones took the place of some we wait for */
	bad += plan_report_missing(self, plan, rd);
	EXPECT_EQ(0, bad);
	/* every peer has its notifications too: all data of the round is in place */
	ASSERT_EQ(0, oob_barrier(&self->oob));
	for (int w = 0; w < self->nnodes; w++)
		slots_bad += check_slot(self, rd, w);
	EXPECT_EQ(0, slots_bad);
	free(plan);
}

static const uint32_t xfer_sizes[] = { 8, 4096, 65536, SLOT_DATA };

static void rma_all_sizes(struct __test_metadata *_metadata, FIXTURE_DATA(a2a) *self,
			  int is_get)
{
	for (size_t i = 0; i < sizeof(xfer_sizes) / sizeof(xfer_sizes[0]); i++) {
		for (int qw = 0; qw <= 1; qw++) {
			struct rma_round rd = {
				.is_get = is_get, .qw = qw, .size = xfer_sizes[i],
				.id = (uint32_t)(is_get * 64 + (int)i * 2 + qw),
				/* byte commands at odd offsets, quadword ones aligned */
				.src_lead = qw ? 8 : 5, .dst_lead = qw ? 16 : 3,
			};
			uint32_t fit = SLOT_DATA / rd.size;
			double t0 = xt_now_s();

			rd.xfers = fit < MAX_XFERS_PER_PEER ? (int)fit : MAX_XFERS_PER_PEER;
			snprintf(rd.what, sizeof(rd.what), "%s %s %u B x %d",
				 is_get ? "get" : "put", qw ? "qw" : "bt", rd.size, rd.xfers);
			rma_run_round(_metadata, self, &rd);
			TH_LOG("rank %d: %s to/from %d peers: %.2f s", self->rank, rd.what,
			       self->nnodes - 1, xt_now_s() - t0);
		}
	}
}

TEST_F_TIMEOUT(a2a, put_all_to_all_8B_256KiB, 300)
{
	rma_all_sizes(_metadata, self, 0);
}

TEST_F_TIMEOUT(a2a, get_all_to_all_8B_256KiB, 300)
{
	rma_all_sizes(_metadata, self, 1);
}

TEST_HARNESS_MAIN
