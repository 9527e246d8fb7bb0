// SPDX-License-Identifier: MIT
/*
 * Guest side of a fault campaign (tools/bench/fault-campaign injects drops,
 * bit flips and link-down periods into the fabric meanwhile).  Not a
 * harness test and not in tests.list: a measurement tool started at the
 * same time on N = 2..64 nodes (EXA_RANK, EXA_NNODES, EXA_PEERS, optional
 * EXA_OOB_PORT; selftests/lib/oob.h).  It counts exactly what happened to
 * every message and RDMA transfer, so that the host can show that nothing
 * was lost silently, duplicated or corrupted, and that every reported
 * failure is a message that really was not delivered.
 *
 *   exa_fault_campaign [--messages N] [--rdma-bytes B] [--rdma-size S]
 *                      [--seconds T] [--timeout T]
 *
 *   --messages N    packetizer messages to EACH other rank (default 20000,
 *                   at most 2^24)
 *   --rdma-bytes B  bytes RDMA-written to EACH other rank (default 16M;
 *                   0 = no RDMA); suffixes k, m, g (binary)
 *   --rdma-size S   bytes per RDMA transfer (default 1M)
 *   --seconds T     start no new work after T seconds (default 0 =
 *                   unlimited); what was started is finished and counted
 *   --timeout T     overall safety limit in seconds (default 600)
 *
 * Every rank must get the same --messages, --rdma-bytes and --rdma-size.
 *
 * Messages: every rank sends to every other rank, destinations interleaved,
 * pipelined over the 4 channels of one packetizer.  A message is 8..64
 * bytes: an 8-byte little-endian header (magic 4 bits, sender rank 6,
 * length - 1 6, sequence number per (sender, receiver) 24, check 24) and a
 * pseudo-random payload.  The check is FNV-1a over the receiver rank, the
 * header (check bits zero) and the payload, so a message that reaches the
 * wrong rank fails it too.  A channel ending in NACK FULL resends the same
 * message on the same channel (not a failure); TIMEOUT or any other NACK
 * makes the message "reported failed": recorded, never resent.
 * Each rank's mailbox is drained in the same loop; a message with a bad
 * check, a sender out of range or not matching the slot's source node, or
 * a sequence out of range is "corrupted"; a second delivery of a sequence
 * is "duplicated".
 *
 * RDMA: every rank writes B bytes to every other rank in transfers of S
 * bytes (4 in flight), into a registered target buffer of B * (N - 1)
 * bytes on the peer (one region of B bytes per sender).  Byte i of transfer
 * t from s to r is a pattern of (s, r, t, i).  After everybody finished,
 * each receiver checks every 16 KiB block (EXANET_RDMA_BLOCK_SIZE, counted
 * from the transfer's start) of every transfer that completed DONE at its
 * sender: equal to the pattern (ok), still all zero (lost: the target
 * buffer starts zeroed) or anything else (corrupted).  Transfers that ended
 * in ERROR are the sender's "reported failed"; their blocks are only looked
 * at to count those that landed intact anyway.  RDMA is skipped (with a
 * note) when any node has no RDMA contexts.
 *
 * Memory per node: B * (N - 1) (target, pinned) + 4 * S (sources, pinned),
 * e.g. 112 MiB + 4 MiB with the defaults on 8 nodes, 240 + 4 MiB on 16.
 * The program refuses to start when MemAvailable cannot hold it.
 *
 * End: once a rank's work is all completed it waits for the others in an
 * out-of-band barrier (on a thread, while it keeps draining its mailbox),
 * drains late arrivals for another LATE_ARRIVAL_GRACE_MS, then the ranks
 * exchange what they sent (count per destination and the exact list of
 * reported failed sequences / transfers) and each computes, as receiver:
 * lost = sent, neither delivered nor reported failed; failed_but_delivered
 * = reported failed, yet delivered.
 *
 * Output: progress on stderr; at the end one JSON line on stdout per rank:
 *   {"campaign":1,"rank":R,"node":ID,"nnodes":N,
 *    sender side, about messages FROM this rank:
 *     "messages_sent"      messages started (= acked + reported_failed)
 *     "messages_acked"     ended in ACK
 *     "reported_failed"    ended in TIMEOUT or a NACK other than FULL
 *     "failed_timeout"     ... of which TIMEOUT
 *     "failed_nack"        ... of which NACK (PDID, BAD_PACKET, ...)
 *     "nack_full_resends"  NACK FULL answers, each resent
 *    receiver side, about messages TO this rank:
 *     "messages_received"  distinct intact messages delivered
 *     "lost"               sent, not delivered, not reported failed
 *     "duplicated"         extra deliveries of a sequence already seen
 *     "corrupted"          deliveries failing a check (see above); the
 *                          message they were is not delivered, so it
 *                          also counts as lost if its sender saw an ACK
 *     "failed_but_delivered" reported failed by the sender, yet delivered
 *    "rdma": 1 if RDMA ran, else 0 (and every rdma_* is 0)
 *    sender side (RDMA FROM this rank):
 *     "rdma_transfers_sent", "rdma_transfers_failed" (ended in ERROR)
 *     "rdma_blocks_sent"      ceil(bytes / 16 KiB) summed over transfers
 *     "rdma_reported_failed"  blocks of the transfers that failed
 *    receiver side (RDMA TO this rank, blocks of transfers DONE at sender):
 *     "rdma_blocks_ok", "rdma_lost", "rdma_corrupted",
 *     "rdma_failed_but_delivered"  blocks of failed transfers that landed
 *                                  intact anyway
 *    "seconds": from the common start until this rank's own work was all
 *               completed}
 * Summed over all ranks:
 *   messages_sent = messages_received + lost + reported_failed
 *                   - failed_but_delivered
 *   rdma_blocks_sent = rdma_blocks_ok + rdma_lost + rdma_corrupted
 *                      + rdma_reported_failed
 *
 * Exit status: 0 when the run completed (failures counted or not: the host
 * judges), 1 setup or out-of-band error, 2 usage, 3 the overall timeout
 * (also when the other ranks do not come within it).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <libexanet.h>

#include "exa_endian.h"
#include "../lib/exa_util.h"
#include "../lib/oob.h"

#define OOB_SESSION		0
#define MBOX_SLOTS		4096
#define MSG_HDR_BYTES		8
#define MSG_MIN_BYTES		8
#define MSG_MAGIC		0xaull
#define MSG_MAX_MESSAGES	(1u << 24)	/* 24-bit sequence */
#define MSG_MAX_RANKS		64		/* 6-bit sender rank */
#define MSG_CHECK_MASK		0xffffffull
#define RDMA_SLOTS		4	/* transfers in flight: keeps the NI busy
					 * while the next source is generated */
#define RX_BATCH		32
#define IDLE_ROUNDS_BEFORE_YIELD 64
#define PROGRESS_EVERY_MS	5000
#define LATE_ARRIVAL_GRACE_MS	500	/* a packet that left before its
					 * sender's TIMEOUT may still land */
#define MEM_MARGIN_BYTES	(32ull << 20)
#define FAILURE_LINES_MAX	10	/* failures described on stderr */
#define OOB_CHUNK_BYTES		(16u << 10)	/* oob_allgather: <= 16 KiB per rank */

enum exit_code { EXIT_DONE = 0, EXIT_SETUP = 1, EXIT_USAGE = 2, EXIT_TIMEOUT = 3 };

struct options {
	uint32_t messages;
	uint64_t rdma_bytes, rdma_size;
	double seconds, timeout;
};

/* Growable list of sequence numbers / transfer indices. */
struct u32_list {
	uint32_t *v;
	uint32_t n, cap;
};

/* What this rank knows about, and did with, rank r. */
struct peer {
	uint32_t node, mbox;
	/* messages to r */
	uint32_t next_seq, acked;
	struct u32_list failed_seqs;
	/* RDMA to r: transfer indices started, DONE, ERROR */
	uint32_t rdma_next, rdma_done;
	struct u32_list rdma_failed;
	struct exanet_raddr rdma_target;	/* r's target buffer */
	/* messages from r */
	uint8_t *delivered;			/* bitmap of sequences */
	uint64_t received, duplicated;
};

struct tx_chan {
	bool busy;
	int dst;
	uint32_t seq;
	size_t len;
	uint8_t buf[EXANET_MAX_PAYLOAD];
};

struct rdma_slot {
	bool busy;
	int dst;
	uint32_t index;
};

struct campaign {
	struct options opt;
	struct oob oob;
	int rank, nnodes;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mbox;
	struct peer *peers;
	int64_t deadline_ms;

	/* sending */
	struct tx_chan chan[EXANET_PKT_CHANNELS];
	int next_msg_step;			/* destination cursor, 1..N-1 */
	uint64_t failed_timeout, failed_nack, nack_full_resends;
	unsigned int failure_lines;

	/* receiving */
	uint64_t corrupted;

	/* RDMA */
	bool rdma_on;
	struct exanet_rdma *rdma;
	struct exanet_mr *target_mr, *source_mr;
	uint8_t *target, *source;
	size_t target_len, source_len, source_stride;
	uint32_t transfers_per_peer;
	struct rdma_slot slot[RDMA_SLOTS];
	int next_rdma_step;
};

/* ---- small helpers ---- */

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static int g_rank;

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "exa_fault_campaign rank %d: ", g_rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

/* Every out-of-band operation waits until the overall deadline at most, so
 * its -ETIMEDOUT is the overall timeout. */
static void oob_failed(const char *what, int err)
{
	die(err == -ETIMEDOUT ? EXIT_TIMEOUT : EXIT_SETUP, "%s: %s", what, strerror(-err));
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die(EXIT_SETUP, "out of memory");
	return p;
}

static void list_push(struct u32_list *l, uint32_t v)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, (size_t)l->cap * sizeof(*l->v));
		if (!l->v)
			die(EXIT_SETUP, "out of memory");
	}
	l->v[l->n++] = v;
}

static bool bit_test(const uint8_t *map, uint32_t i)
{
	return map[i / 8] & (1u << (i % 8));
}

static void bit_set(uint8_t *map, uint32_t i)
{
	map[i / 8] |= (uint8_t)(1u << (i % 8));
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint32_t fnv1a(uint32_t h, const uint8_t *p, size_t n)
{
	while (n--) {
		h ^= *p++;
		h *= 16777619u;
	}
	return h;
}

static double seconds_since(int64_t start_ms)
{
	return (double)(exa_now_ms() - start_ms) / 1000.0;
}

static int remaining_ms(const struct campaign *c)
{
	int64_t left = c->deadline_ms - exa_now_ms();

	return left < 1000 ? 1000 : left > INT32_MAX ? INT32_MAX : (int)left;
}

static void check_deadline(const struct campaign *c, const char *phase)
{
	if (exa_now_ms() > c->deadline_ms)
		die(EXIT_TIMEOUT, "overall timeout (%.0f s) while %s", c->opt.timeout, phase);
}

/* Destination of the step-th interleaved turn (step 1..N-1): never ourselves. */
static int step_to_rank(const struct campaign *c, int step)
{
	return (c->rank + step) % c->nnodes;
}

/* ---- messages ---- */

static uint32_t msg_check(uint64_t header, const uint8_t *payload, size_t plen, int receiver)
{
	uint8_t hb[8], rb = (uint8_t)receiver;
	uint32_t h = 2166136261u;

	exa_put_le64(hb, header & ~MSG_CHECK_MASK);
	h = fnv1a(h, &rb, 1);
	h = fnv1a(h, hb, sizeof(hb));
	h = fnv1a(h, payload, plen);
	return (h ^ (h >> 24)) & MSG_CHECK_MASK;
}

static size_t msg_build(uint8_t *buf, int sender, int receiver, uint32_t seq)
{
	uint64_t stream = mix64((uint64_t)sender << 40 | (uint64_t)receiver << 32 | seq);
	size_t len = MSG_MIN_BYTES + stream % (EXANET_MAX_PAYLOAD - MSG_MIN_BYTES + 1);
	uint64_t header;

	for (size_t i = MSG_HDR_BYTES; i < len; i += 8) {
		uint8_t w[8];

		exa_put_le64(w, mix64(stream + i));
		memcpy(buf + i, w, len - i < 8 ? len - i : 8);
	}
	header = MSG_MAGIC << 60 | (uint64_t)sender << 54 | (uint64_t)(len - 1) << 48 |
		 (uint64_t)seq << 24;
	header |= msg_check(header, buf + MSG_HDR_BYTES, len - MSG_HDR_BYTES, receiver);
	exa_put_le64(buf, header);
	return len;
}

/* 0 and sender/seq if the message is intact and meant for receiver. */
static int msg_parse(const uint8_t *buf, size_t len, int receiver, int *sender, uint32_t *seq)
{
	uint64_t header;

	if (len < MSG_MIN_BYTES || len > EXANET_MAX_PAYLOAD)
		return -1;
	header = exa_get_le64(buf);
	if (header >> 60 != MSG_MAGIC || ((header >> 48) & 0x3f) + 1 != len)
		return -1;
	if ((header & MSG_CHECK_MASK) !=
	    msg_check(header, buf + MSG_HDR_BYTES, len - MSG_HDR_BYTES, receiver))
		return -1;
	*sender = (int)((header >> 54) & 0x3f);
	*seq = (uint32_t)((header >> 24) & 0xffffff);
	return 0;
}

static void record_msg_failure(struct campaign *c, struct tx_chan *ch, uint64_t status,
			       int send_err)
{
	struct peer *p = &c->peers[ch->dst];

	list_push(&p->failed_seqs, ch->seq);
	if (!send_err && EXANET_ST_STATE(status) == EXANET_CHAN_TIMEOUT)
		c->failed_timeout++;
	else
		c->failed_nack++;
	if (c->failure_lines++ < FAILURE_LINES_MAX) {
		if (send_err)
			fprintf(stderr, "campaign rank %d: to rank %d seq %u: resend: %s\n",
				c->rank, ch->dst, ch->seq, strerror(-send_err));
		else
			fprintf(stderr, "campaign rank %d: to rank %d seq %u: %s%s%s "
				"(status %#" PRIx64 ")\n", c->rank, ch->dst, ch->seq,
				exanet_chan_state_str(EXANET_ST_STATE(status)),
				EXANET_ST_STATE(status) == EXANET_CHAN_NACK ? " " : "",
				EXANET_ST_STATE(status) == EXANET_CHAN_NACK ?
				exanet_nack_reason_str(EXANET_ST_REASON(status)) : "", status);
	}
	ch->busy = false;
}

/* Reap finished channels; returns how many changed state. */
static int tx_reap(struct campaign *c)
{
	int progressed = 0;

	for (unsigned int i = 0; i < EXANET_PKT_CHANNELS; i++) {
		struct tx_chan *ch = &c->chan[i];
		uint64_t st;
		int err;

		if (!ch->busy)
			continue;
		st = exanet_chan_status(c->pkt, i);
		switch (EXANET_ST_STATE(st)) {
		case EXANET_CHAN_ONGOING:
			continue;
		case EXANET_CHAN_ACK:
			c->peers[ch->dst].acked++;
			ch->busy = false;
			break;
		case EXANET_CHAN_NACK:
			if (EXANET_ST_REASON(st) == EXANET_NACK_FULL) {
				/* same channel: keeps the per-channel order */
				c->nack_full_resends++;
				err = exanet_send_on(c->pkt, i, c->peers[ch->dst].node,
						     c->peers[ch->dst].mbox, ch->buf, ch->len);
				if (err < 0)
					record_msg_failure(c, ch, st, err);
				break;
			}
			record_msg_failure(c, ch, st, 0);
			break;
		default:	/* TIMEOUT, or IDLE: the doorbell was never taken */
			record_msg_failure(c, ch, st, 0);
			break;
		}
		progressed++;
	}
	return progressed;
}

/* Next destination with messages left, in interleaved order, or -1. */
static int next_msg_dst(struct campaign *c)
{
	for (int tries = 0; tries < c->nnodes - 1; tries++) {
		int dst = step_to_rank(c, c->next_msg_step);

		c->next_msg_step = c->next_msg_step % (c->nnodes - 1) + 1;
		if (c->peers[dst].next_seq < c->opt.messages)
			return dst;
	}
	return -1;
}

static int tx_fill(struct campaign *c)
{
	int started = 0;

	for (unsigned int i = 0; i < EXANET_PKT_CHANNELS; i++) {
		struct tx_chan *ch = &c->chan[i];
		struct peer *p;
		int dst, err;

		if (ch->busy)
			continue;
		dst = next_msg_dst(c);
		if (dst < 0)
			break;
		p = &c->peers[dst];
		ch->dst = dst;
		ch->seq = p->next_seq;
		ch->len = msg_build(ch->buf, c->rank, dst, ch->seq);
		err = exanet_send_on(c->pkt, i, p->node, p->mbox, ch->buf, ch->len);
		if (err == -EBUSY)
			continue;	/* still ONGOING in hardware: next round */
		if (err < 0)
			die(EXIT_SETUP, "exanet_send_on to node %u: %s", p->node, strerror(-err));
		p->next_seq++;
		ch->busy = true;
		started++;
	}
	return started;
}

static bool tx_idle(const struct campaign *c)
{
	for (unsigned int i = 0; i < EXANET_PKT_CHANNELS; i++)
		if (c->chan[i].busy)
			return false;
	return true;
}

static void rx_account(struct campaign *c, const uint8_t *buf, size_t len,
		       const struct exanet_msg_info *info)
{
	struct peer *p;
	uint32_t seq;
	int sender;

	if (msg_parse(buf, len, c->rank, &sender, &seq) || sender >= c->nnodes ||
	    sender == c->rank || c->peers[sender].node != info->src_node ||
	    seq >= c->opt.messages) {
		c->corrupted++;
		return;
	}
	p = &c->peers[sender];
	if (bit_test(p->delivered, seq)) {
		p->duplicated++;
		return;
	}
	bit_set(p->delivered, seq);
	p->received++;
}

static int rx_drain(struct campaign *c)
{
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	int got = 0;

	while (got < RX_BATCH) {
		ssize_t len = exanet_recv(c->mbox, buf, sizeof(buf), &info);

		if (len == 0)
			break;
		got++;
		if (len == -EIO) {	/* impossible length in the slot: consumed */
			c->corrupted++;
			continue;
		}
		if (len < 0)
			die(EXIT_SETUP, "exanet_recv: %s", strerror((int)-len));
		rx_account(c, buf, (size_t)len, &info);
	}
	return got;
}

/* ---- RDMA ---- */

static uint64_t transfer_offset(const struct campaign *c, uint32_t index)
{
	return (uint64_t)index * c->opt.rdma_size;
}

static size_t transfer_len(const struct campaign *c, uint32_t index)
{
	uint64_t left = c->opt.rdma_bytes - transfer_offset(c, index);

	return (size_t)(left < c->opt.rdma_size ? left : c->opt.rdma_size);
}

static uint64_t blocks_of(size_t len)
{
	return (len + EXANET_RDMA_BLOCK_SIZE - 1) / EXANET_RDMA_BLOCK_SIZE;
}

/* Where sender's region starts in receiver's target buffer. */
static uint64_t region_offset(const struct campaign *c, int sender, int receiver)
{
	return (uint64_t)(sender < receiver ? sender : sender - 1) * c->opt.rdma_bytes;
}

static uint64_t pattern_seed(int sender, int receiver, uint32_t index)
{
	return mix64((uint64_t)sender << 48 ^ (uint64_t)receiver << 40 ^ index);
}

/* Pattern bytes [from, from + len) of a transfer; word w = mix64(seed + w). */
static void pattern_fill(uint8_t *p, size_t len, uint64_t seed)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w = mix64(seed + i / 8);

		memcpy(p + i, &w, 8);
	}
	if (i < len) {
		uint64_t w = mix64(seed + i / 8);

		memcpy(p + i, &w, len - i);
	}
}

/* Is p[0, len) the pattern's bytes [from, from + len)?  from is 8-aligned. */
static bool pattern_matches(const uint8_t *p, size_t len, uint64_t seed, uint64_t from)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t got, want = mix64(seed + (from + i) / 8);

		memcpy(&got, p + i, 8);
		if (got != want)
			return false;
	}
	if (i < len) {
		uint64_t want = mix64(seed + (from + i) / 8);

		if (memcmp(p + i, &want, len - i))
			return false;
	}
	return true;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static int next_rdma_dst(struct campaign *c)
{
	for (int tries = 0; tries < c->nnodes - 1; tries++) {
		int dst = step_to_rank(c, c->next_rdma_step);

		c->next_rdma_step = c->next_rdma_step % (c->nnodes - 1) + 1;
		if (c->peers[dst].rdma_next < c->transfers_per_peer)
			return dst;
	}
	return -1;
}

static int rdma_fill(struct campaign *c)
{
	int started = 0;

	for (unsigned int s = 0; s < RDMA_SLOTS; s++) {
		struct rdma_slot *sl = &c->slot[s];
		uint8_t *src = c->source + (size_t)s * c->source_stride;
		struct exanet_raddr dst_ra;
		struct peer *p;
		size_t len;
		int dst, err;

		if (sl->busy)
			continue;
		dst = next_rdma_dst(c);
		if (dst < 0)
			break;
		p = &c->peers[dst];
		sl->dst = dst;
		sl->index = p->rdma_next;
		len = transfer_len(c, sl->index);
		pattern_fill(src, len, pattern_seed(c->rank, dst, sl->index));
		dst_ra = p->rdma_target;
		err = exanet_raddr_add(&dst_ra, region_offset(c, c->rank, dst) +
				       transfer_offset(c, sl->index));
		if (!err)
			err = exanet_rdma_post_write_on(c->rdma, s, src, &dst_ra, len, NULL);
		if (err == -EBUSY)
			continue;
		if (err < 0)
			die(EXIT_SETUP, "RDMA write to rank %d: %s", dst, strerror(-err));
		p->rdma_next++;
		sl->busy = true;
		started++;
	}
	return started;
}

static int rdma_reap(struct campaign *c)
{
	int progressed = 0;

	for (unsigned int s = 0; s < RDMA_SLOTS; s++) {
		struct rdma_slot *sl = &c->slot[s];
		struct peer *p;
		uint64_t st;

		if (!sl->busy)
			continue;
		p = &c->peers[sl->dst];
		/* STATUS, not the completion record: a descriptor refused at
		 * the trigger ends in ERROR without a record */
		st = exanet_rdma_status(c->rdma, s);
		if (EXANET_RDMA_ST_STATE(st) == EXANET_RDMA_ONGOING)
			continue;
		if (EXANET_RDMA_ST_STATE(st) == EXANET_RDMA_DONE) {
			p->rdma_done++;
		} else {
			list_push(&p->rdma_failed, sl->index);
			if (c->failure_lines++ < FAILURE_LINES_MAX)
				fprintf(stderr, "campaign rank %d: RDMA to rank %d transfer %u: "
					"%s (status %#" PRIx64 ")\n", c->rank, sl->dst, sl->index,
					EXANET_RDMA_ST_STATE(st) == EXANET_RDMA_ERROR ?
					exanet_rdma_error_str(EXANET_RDMA_ST_ERROR(st)) :
					"not started", st);
		}
		sl->busy = false;
		progressed++;
	}
	return progressed;
}

static bool rdma_idle(const struct campaign *c)
{
	for (unsigned int s = 0; s < RDMA_SLOTS; s++)
		if (c->slot[s].busy)
			return false;
	return true;
}

static void raise_memlock(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	if (setrlimit(RLIMIT_MEMLOCK, &rl) && !getrlimit(RLIMIT_MEMLOCK, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
}

static void *map_zeroed(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* 0, -ENODEV when the node has no RDMA contexts, else a negative errno. */
static int rdma_setup(struct campaign *c)
{
	struct exanet_rdma_info info;
	long long avail_kb;
	int err;

	err = exanet_rdma_query(c->dev, &info);
	if (err == -ENOTTY || (!err && (!info.num_ranks || !info.num_pages)))
		return -ENODEV;
	if (err)
		return err;
	c->transfers_per_peer = (uint32_t)((c->opt.rdma_bytes + c->opt.rdma_size - 1) /
					   c->opt.rdma_size);
	c->target_len = (size_t)(c->opt.rdma_bytes * (uint64_t)(c->nnodes - 1));
	c->source_stride = (size_t)(c->opt.rdma_size < c->opt.rdma_bytes ?
				    c->opt.rdma_size : c->opt.rdma_bytes);
	c->source_len = c->source_stride * RDMA_SLOTS;
	avail_kb = exa_file_field("/proc/meminfo", "MemAvailable");
	if (avail_kb > 0 && (uint64_t)c->target_len + c->source_len + MEM_MARGIN_BYTES >
	    (uint64_t)avail_kb << 10) {
		fprintf(stderr, "campaign rank %d: RDMA needs %zu MiB (rdma-bytes x %d peers + "
			"%d x rdma-size), MemAvailable is %lld MiB: lower --rdma-bytes\n",
			c->rank, (c->target_len + c->source_len) >> 20, c->nnodes - 1,
			RDMA_SLOTS, avail_kb >> 10);
		return -ENOMEM;
	}
	raise_memlock();
	c->target = map_zeroed(c->target_len);
	c->source = map_zeroed(c->source_len);
	if (!c->target || !c->source)
		return -ENOMEM;
	err = exanet_reg_mr(c->dev, c->target, c->target_len, 0, &c->target_mr);
	if (!err)
		err = exanet_reg_mr(c->dev, c->source, c->source_len, 0, &c->source_mr);
	if (!err)
		err = exanet_rdma_alloc(c->dev, &c->rdma);
	if (err == -ENOMEM)
		fprintf(stderr, "campaign rank %d: RDMA registration: out of memory "
			"(RLIMIT_MEMLOCK?)\n", c->rank);
	return err;
}

static void rdma_teardown(struct campaign *c)
{
	if (c->rdma)
		exanet_rdma_free(c->rdma);
	if (c->source_mr)
		exanet_dereg_mr(c->source_mr);
	if (c->target_mr)
		exanet_dereg_mr(c->target_mr);
	if (c->source)
		munmap(c->source, c->source_len);
	if (c->target)
		munmap(c->target, c->target_len);
	c->rdma = NULL;
	c->source_mr = c->target_mr = NULL;
	c->source = c->target = NULL;
	c->rdma_on = false;
}

/* ---- setup ---- */

/* What every rank publishes before the start. */
struct hello {
	int32_t setup_err;
	int32_t rdma_err;
	uint32_t node, mbox;
	uint32_t messages;
	uint32_t reserved;
	uint64_t rdma_bytes, rdma_size;
	uint8_t rdma_target[EXANET_RADDR_WIRE_SIZE];
};

static int device_setup(struct campaign *c)
{
	int err = exanet_open(NULL, &c->dev);

	if (err) {
		fprintf(stderr, "campaign rank %d: exanet_open: %s\n", c->rank, strerror(-err));
		return err;
	}
	err = exanet_pkt_alloc(c->dev, &c->pkt);
	if (!err)
		err = exanet_mbox_alloc(c->dev, MBOX_SLOTS, &c->mbox);
	if (err)
		fprintf(stderr, "campaign rank %d: packetizer / mailbox: %s\n", c->rank,
			strerror(-err));
	return err;
}

static void setup(struct campaign *c)
{
	struct hello me = { 0 }, *all;
	bool no_rdma = false;
	int err, r;

	err = oob_init(&c->oob, OOB_SESSION, remaining_ms(c));
	if (err)
		oob_failed("oob_init", err);
	c->rank = g_rank = c->oob.rank;
	c->nnodes = c->oob.nnodes;
	if (c->nnodes < 2 || c->nnodes > MSG_MAX_RANKS)
		die(EXIT_SETUP, "needs 2..%d ranks, have %d", MSG_MAX_RANKS, c->nnodes);
	c->peers = xcalloc((size_t)c->nnodes, sizeof(*c->peers));

	me.setup_err = device_setup(c);
	me.rdma_err = -ENODEV;
	if (!me.setup_err) {
		struct exanet_raddr ra;

		me.node = exanet_node_id(c->dev);
		me.mbox = exanet_mbox_id(c->mbox);
		if (c->opt.rdma_bytes) {
			me.rdma_err = rdma_setup(c);
			if (!me.rdma_err) {
				exanet_mr_raddr(c->target_mr, c->target, &ra);
				exanet_raddr_encode(&ra, me.rdma_target);
			} else if (me.rdma_err != -ENODEV) {
				fprintf(stderr, "campaign rank %d: RDMA setup: %s\n", c->rank,
					strerror(-me.rdma_err));
			}
		}
	}
	me.messages = c->opt.messages;
	me.rdma_bytes = c->opt.rdma_bytes;
	me.rdma_size = c->opt.rdma_size;

	all = xcalloc((size_t)c->nnodes, sizeof(*all));
	c->oob.timeout_ms = remaining_ms(c);
	err = oob_allgather(&c->oob, &me, all, sizeof(me));
	if (err)
		oob_failed("exchanging addresses", err);
	for (r = 0; r < c->nnodes; r++) {
		if (all[r].setup_err)
			die(EXIT_SETUP, "rank %d could not set up its device: %s", r,
			    strerror(-all[r].setup_err));
		if (all[r].messages != me.messages || all[r].rdma_bytes != me.rdma_bytes ||
		    all[r].rdma_size != me.rdma_size)
			die(EXIT_SETUP, "rank %d runs with other --messages / --rdma-bytes / "
			    "--rdma-size", r);
		if (c->opt.rdma_bytes && all[r].rdma_err && all[r].rdma_err != -ENODEV)
			die(EXIT_SETUP, "rank %d could not set up RDMA: %s", r,
			    strerror(-all[r].rdma_err));
		if (all[r].rdma_err == -ENODEV)
			no_rdma = true;
	}
	if (c->opt.rdma_bytes && no_rdma) {
		if (c->rank == 0)
			fprintf(stderr, "campaign: a node has no RDMA contexts: RDMA skipped\n");
		rdma_teardown(c);
	} else if (c->opt.rdma_bytes) {
		c->rdma_on = true;
	}
	for (r = 0; r < c->nnodes; r++) {
		struct peer *p = &c->peers[r];

		p->node = all[r].node;
		p->mbox = all[r].mbox;
		if (c->rdma_on && exanet_raddr_decode(all[r].rdma_target, &p->rdma_target))
			die(EXIT_SETUP, "rank %d published a bad remote address", r);
		p->delivered = xcalloc(c->opt.messages / 8 + 1, 1);
	}
	free(all);
	c->next_msg_step = c->next_rdma_step = 1;
}

/* ---- the run ---- */

/* The end barrier runs on its own thread so the mailbox keeps draining:
 * other ranks may still be sending to us. */
struct end_barrier {
	struct oob *oob;
	atomic_int finished;
	int result;
};

static void *end_barrier_run(void *arg)
{
	struct end_barrier *b = arg;

	b->result = oob_barrier(b->oob);
	atomic_store(&b->finished, 1);
	return NULL;
}

static bool work_left(const struct campaign *c, bool may_start)
{
	if (!tx_idle(c) || (c->rdma_on && !rdma_idle(c)))
		return true;
	if (!may_start)
		return false;
	for (int r = 0; r < c->nnodes; r++) {
		if (r == c->rank)
			continue;
		if (c->peers[r].next_seq < c->opt.messages)
			return true;
		if (c->rdma_on && c->peers[r].rdma_next < c->transfers_per_peer)
			return true;
	}
	return false;
}

static void progress_line(const struct campaign *c, int64_t start_ms)
{
	uint64_t sent = 0, acked = 0, failed = 0, received = 0, rdma_sent = 0, rdma_failed = 0;

	for (int r = 0; r < c->nnodes; r++) {
		const struct peer *p = &c->peers[r];

		sent += p->next_seq;
		acked += p->acked;
		failed += p->failed_seqs.n;
		received += p->received;
		rdma_sent += p->rdma_next;
		rdma_failed += p->rdma_failed.n;
	}
	fprintf(stderr, "campaign rank %d: %.0f s: messages sent %" PRIu64 " acked %" PRIu64
		" failed %" PRIu64 " received %" PRIu64 " corrupted %" PRIu64
		"; rdma transfers %" PRIu64 " failed %" PRIu64 "\n", c->rank,
		seconds_since(start_ms), sent, acked, failed, received, c->corrupted,
		rdma_sent, rdma_failed);
}

/* Returns the seconds this rank's own work took. */
static double run(struct campaign *c)
{
	struct end_barrier barrier = { .oob = &c->oob };
	pthread_t barrier_thread;
	bool may_start = true, barrier_started = false;
	int64_t start_ms, stop_ms, next_progress_ms, grace_end_ms;
	double work_seconds = 0;
	unsigned int idle_rounds = 0;
	int err;

	c->oob.timeout_ms = remaining_ms(c);
	err = oob_barrier(&c->oob);
	if (err)
		oob_failed("start barrier", err);
	start_ms = exa_now_ms();
	stop_ms = c->opt.seconds > 0 ? start_ms + (int64_t)(c->opt.seconds * 1000) : INT64_MAX;
	next_progress_ms = start_ms + PROGRESS_EVERY_MS;

	while (!atomic_load(&barrier.finished)) {
		int progressed = rx_drain(c) + tx_reap(c);
		int64_t now = exa_now_ms();

		if (may_start && now >= stop_ms) {
			may_start = false;
			fprintf(stderr, "campaign rank %d: --seconds reached, finishing what "
				"was started\n", c->rank);
		}
		if (may_start)
			progressed += tx_fill(c);
		if (c->rdma_on) {
			progressed += rdma_reap(c);
			if (may_start)
				progressed += rdma_fill(c);
		}
		if (!barrier_started && !work_left(c, may_start)) {
			work_seconds = seconds_since(start_ms);
			c->oob.timeout_ms = remaining_ms(c);
			err = pthread_create(&barrier_thread, NULL, end_barrier_run, &barrier);
			if (err)
				die(EXIT_SETUP, "pthread_create: %s", strerror(err));
			barrier_started = true;
		}
		if (now >= next_progress_ms) {
			progress_line(c, start_ms);
			next_progress_ms = now + PROGRESS_EVERY_MS;
			check_deadline(c, barrier_started ? "waiting for the other ranks" :
				       "sending");
		}
		if (progressed) {
			idle_rounds = 0;
		} else if (++idle_rounds >= IDLE_ROUNDS_BEFORE_YIELD) {
			idle_rounds = 0;
			check_deadline(c, barrier_started ? "waiting for the other ranks" :
				       "sending");
			sched_yield();
		}
	}
	pthread_join(barrier_thread, NULL);
	if (barrier.result)
		oob_failed("end barrier", barrier.result);

	grace_end_ms = exa_now_ms() + LATE_ARRIVAL_GRACE_MS;
	while (exa_now_ms() < grace_end_ms)
		if (!rx_drain(c))
			sched_yield();
	progress_line(c, start_ms);
	return work_seconds;
}

/* ---- the exchange of results ---- */

/* What a sender did towards one destination. */
struct pair_summary {
	uint32_t msgs_sent, msgs_failed;
	uint32_t rdma_sent, rdma_failed;
};

/* oob_allgather of any size, in chunks the out-of-band channel accepts. */
static int allgather_large(struct oob *o, const uint8_t *mine, uint8_t *all, size_t len)
{
	size_t n = (size_t)o->nnodes;
	uint8_t *chunk = xcalloc(n, OOB_CHUNK_BYTES);
	int err = 0;

	for (size_t off = 0; off < len && !err; off += OOB_CHUNK_BYTES) {
		size_t part = len - off < OOB_CHUNK_BYTES ? len - off : OOB_CHUNK_BYTES;

		err = oob_allgather(o, mine + off, chunk, part);
		for (size_t r = 0; r < n && !err; r++)
			memcpy(all + r * len + off, chunk + r * part, part);
	}
	free(chunk);
	return err;
}

struct results {
	uint64_t lost, failed_but_delivered, stray;
	uint64_t rdma_ok, rdma_lost, rdma_corrupted, rdma_failed_but_delivered;
};

/* As receiver: what happened to what sender s sent us. */
static void judge_sender(struct campaign *c, int s, const struct pair_summary *sum,
			 const uint32_t *failed_seqs, const uint32_t *failed_rdma,
			 struct results *res)
{
	struct peer *p = &c->peers[s];
	uint8_t *failed = xcalloc(c->opt.messages / 8 + 1, 1);
	uint8_t *rdma_failed;

	for (uint32_t i = 0; i < sum->msgs_failed; i++)
		if (failed_seqs[i] < c->opt.messages)
			bit_set(failed, failed_seqs[i]);
	for (uint32_t seq = 0; seq < c->opt.messages; seq++) {
		bool delivered = bit_test(p->delivered, seq), reported = bit_test(failed, seq);

		if (seq >= sum->msgs_sent) {
			/* never sent, yet here with a valid check: not a real delivery */
			if (delivered)
				res->stray++;
			continue;
		}
		if (delivered && reported)
			res->failed_but_delivered++;
		else if (!delivered && !reported)
			res->lost++;
	}
	free(failed);

	if (!c->rdma_on)
		return;
	rdma_failed = xcalloc(c->transfers_per_peer / 8 + 1, 1);
	for (uint32_t i = 0; i < sum->rdma_failed; i++)
		if (failed_rdma[i] < c->transfers_per_peer)
			bit_set(rdma_failed, failed_rdma[i]);
	for (uint32_t t = 0; t < sum->rdma_sent && t < c->transfers_per_peer; t++) {
		const uint8_t *region = c->target + region_offset(c, s, c->rank) +
					transfer_offset(c, t);
		uint64_t seed = pattern_seed(s, c->rank, t);
		size_t len = transfer_len(c, t);

		for (size_t off = 0; off < len; off += EXANET_RDMA_BLOCK_SIZE) {
			size_t blen = len - off < EXANET_RDMA_BLOCK_SIZE ?
				      len - off : EXANET_RDMA_BLOCK_SIZE;
			bool intact = pattern_matches(region + off, blen, seed, off);

			if (bit_test(rdma_failed, t))
				res->rdma_failed_but_delivered += intact;
			else if (intact)
				res->rdma_ok++;
			else if (all_zero(region + off, blen))
				res->rdma_lost++;
			else
				res->rdma_corrupted++;
		}
	}
	free(rdma_failed);
}

static void exchange_and_judge(struct campaign *c, struct results *res)
{
	size_t n = (size_t)c->nnodes, list_words, rec_len;
	struct pair_summary *mine = xcalloc(n, sizeof(*mine));
	struct pair_summary *all = xcalloc(n * n, sizeof(*all));
	uint32_t max_msg_failed = 0, max_rdma_failed = 0;
	uint32_t *my_lists, *all_lists = NULL;
	int err;

	for (size_t r = 0; r < n; r++) {
		mine[r].msgs_sent = c->peers[r].next_seq;
		mine[r].msgs_failed = c->peers[r].failed_seqs.n;
		mine[r].rdma_sent = c->peers[r].rdma_next;
		mine[r].rdma_failed = c->peers[r].rdma_failed.n;
	}
	c->oob.timeout_ms = remaining_ms(c);
	err = oob_allgather(&c->oob, mine, all, n * sizeof(*mine));
	if (err)
		oob_failed("exchanging results", err);
	for (size_t i = 0; i < n * n; i++) {
		if (all[i].msgs_failed > max_msg_failed)
			max_msg_failed = all[i].msgs_failed;
		if (all[i].rdma_failed > max_rdma_failed)
			max_rdma_failed = all[i].rdma_failed;
	}

	/* The exact failure lists, each padded to the longest anywhere (every
	 * rank computes the same layout from the same summaries). */
	list_words = (size_t)max_msg_failed + max_rdma_failed;
	rec_len = n * list_words * sizeof(uint32_t);
	my_lists = xcalloc(n * list_words, sizeof(uint32_t));
	for (size_t r = 0; r < n; r++) {
		uint32_t *at = my_lists + r * list_words;

		if (c->peers[r].failed_seqs.n)
			memcpy(at, c->peers[r].failed_seqs.v,
			       c->peers[r].failed_seqs.n * sizeof(uint32_t));
		if (c->peers[r].rdma_failed.n)
			memcpy(at + max_msg_failed, c->peers[r].rdma_failed.v,
			       c->peers[r].rdma_failed.n * sizeof(uint32_t));
	}
	if (rec_len) {
		all_lists = xcalloc(n, rec_len);
		err = allgather_large(&c->oob, (const uint8_t *)my_lists, (uint8_t *)all_lists,
				      rec_len);
		if (err)
			oob_failed("exchanging failure lists", err);
	}

	memset(res, 0, sizeof(*res));
	for (size_t s = 0; s < n; s++) {
		const uint32_t *lists = all_lists ? all_lists + (s * n + (size_t)c->rank) *
						    list_words : NULL;

		if ((int)s == c->rank)
			continue;
		judge_sender(c, (int)s, &all[s * n + (size_t)c->rank], lists,
			     lists ? lists + max_msg_failed : NULL, res);
	}
	free(all_lists);
	free(my_lists);
	free(all);
	free(mine);
}

static void print_json(const struct campaign *c, const struct results *res, double seconds)
{
	uint64_t sent = 0, acked = 0, failed = 0, received = 0, duplicated = 0;
	uint64_t rdma_sent = 0, rdma_failed = 0, rdma_blocks = 0, rdma_failed_blocks = 0;

	for (int r = 0; r < c->nnodes; r++) {
		const struct peer *p = &c->peers[r];

		sent += p->next_seq;
		acked += p->acked;
		failed += p->failed_seqs.n;
		received += p->received;
		duplicated += p->duplicated;
		rdma_sent += p->rdma_next;
		rdma_failed += p->rdma_failed.n;
		for (uint32_t t = 0; t < p->rdma_next; t++)
			rdma_blocks += blocks_of(transfer_len(c, t));
		for (uint32_t i = 0; i < p->rdma_failed.n; i++)
			rdma_failed_blocks += blocks_of(transfer_len(c, p->rdma_failed.v[i]));
	}
	printf("{\"campaign\":1,\"rank\":%d,\"node\":%u,\"nnodes\":%d,"
	       "\"messages_sent\":%" PRIu64 ",\"messages_acked\":%" PRIu64
	       ",\"reported_failed\":%" PRIu64 ",\"failed_timeout\":%" PRIu64
	       ",\"failed_nack\":%" PRIu64 ",\"nack_full_resends\":%" PRIu64
	       ",\"messages_received\":%" PRIu64 ",\"lost\":%" PRIu64
	       ",\"duplicated\":%" PRIu64 ",\"corrupted\":%" PRIu64
	       ",\"failed_but_delivered\":%" PRIu64 ",\"rdma\":%d"
	       ",\"rdma_transfers_sent\":%" PRIu64 ",\"rdma_transfers_failed\":%" PRIu64
	       ",\"rdma_blocks_sent\":%" PRIu64 ",\"rdma_reported_failed\":%" PRIu64
	       ",\"rdma_blocks_ok\":%" PRIu64 ",\"rdma_lost\":%" PRIu64
	       ",\"rdma_corrupted\":%" PRIu64 ",\"rdma_failed_but_delivered\":%" PRIu64
	       ",\"seconds\":%.3f}\n",
	       c->rank, c->peers[c->rank].node, c->nnodes,
	       sent, acked, failed, c->failed_timeout, c->failed_nack, c->nack_full_resends,
	       received - res->stray, res->lost, duplicated, c->corrupted + res->stray,
	       res->failed_but_delivered, c->rdma_on ? 1 : 0,
	       rdma_sent, rdma_failed, rdma_blocks, rdma_failed_blocks,
	       res->rdma_ok, res->rdma_lost, res->rdma_corrupted,
	       res->rdma_failed_but_delivered, seconds);
	fflush(stdout);
}

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(f, "usage: exa_fault_campaign [--messages N] [--rdma-bytes B] [--rdma-size S]\n"
		"                          [--seconds T] [--timeout T]\n"
		"  --messages N    packetizer messages to each other rank (default 20000)\n"
		"  --rdma-bytes B  bytes RDMA-written to each other rank (default 16M, 0: none)\n"
		"  --rdma-size S   bytes per RDMA transfer (default 1M)\n"
		"  --seconds T     start no new work after T seconds (default 0: unlimited)\n"
		"  --timeout T     overall limit in seconds (default 600)\n"
		"Ranks from EXA_RANK, EXA_NNODES, EXA_PEERS (EXA_OOB_PORT).\n");
}

/* A byte count with an optional binary suffix k, m or g. */
static int parse_bytes(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || *out < 0 ? -1 : 0;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "messages", required_argument, NULL, 'm' },
		{ "rdma-bytes", required_argument, NULL, 'b' },
		{ "rdma-size", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 'T' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int opt;

	*o = (struct options){ .messages = 20000, .rdma_bytes = 16ull << 20,
			       .rdma_size = 1ull << 20, .seconds = 0, .timeout = 600 };
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (parse_bytes(optarg, &v) || v > MSG_MAX_MESSAGES)
				goto bad;
			o->messages = (uint32_t)v;
			break;
		case 'b':
			if (parse_bytes(optarg, &o->rdma_bytes))
				goto bad;
			break;
		case 's':
			if (parse_bytes(optarg, &o->rdma_size) || !o->rdma_size ||
			    o->rdma_size > EXANET_RDMA_MAX_LEN)
				goto bad;
			break;
		case 'T':
			if (parse_seconds(optarg, &o->seconds))
				goto bad;
			break;
		case 't':
			if (parse_seconds(optarg, &o->timeout) || o->timeout <= 0)
				goto bad;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_DONE);
		default:
			usage(stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind != argc) {
		usage(stderr);
		exit(EXIT_USAGE);
	}
	if (o->rdma_bytes && (o->rdma_bytes + o->rdma_size - 1) / o->rdma_size > UINT32_MAX) {
		fprintf(stderr, "exa_fault_campaign: too many RDMA transfers per peer\n");
		exit(EXIT_USAGE);
	}
	return;
bad:
	fprintf(stderr, "exa_fault_campaign: bad value '%s'\n", optarg);
	usage(stderr);
	exit(EXIT_USAGE);
}

int main(int argc, char **argv)
{
	struct campaign c = { 0 };
	struct results res;
	double seconds;

	parse_options(argc, argv, &c.opt);
	c.deadline_ms = exa_now_ms() + (int64_t)(c.opt.timeout * 1000);
	setup(&c);
	if (c.rdma_on)
		fprintf(stderr, "campaign rank %d of %d (node %u): to each of %d peers %u "
			"messages and %" PRIu64 " RDMA bytes in transfers of %" PRIu64 "\n",
			c.rank, c.nnodes, c.peers[c.rank].node, c.nnodes - 1, c.opt.messages,
			c.opt.rdma_bytes, c.opt.rdma_size);
	else
		fprintf(stderr, "campaign rank %d of %d (node %u): to each of %d peers %u "
			"messages, no RDMA\n", c.rank, c.nnodes, c.peers[c.rank].node,
			c.nnodes - 1, c.opt.messages);
	seconds = run(&c);
	exchange_and_judge(&c, &res);
	print_json(&c, &res, seconds);
	if (c.rdma_on)
		rdma_teardown(&c);
	exanet_close(c.dev);
	oob_fini(&c.oob);
	return EXIT_DONE;
}
