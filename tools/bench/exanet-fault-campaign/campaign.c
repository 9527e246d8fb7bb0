// SPDX-License-Identifier: MIT
/*
 * exanet-fault-campaign: the guest side of a fault campaign
 * (tools/bench/fault-campaign runs it on every node and injects drops, bit
 * flips and link-down periods into the fabric meanwhile).  A measurement
 * tool started at the same time on N = 2..64 nodes (EXA_RANK, EXA_NNODES,
 * EXA_PEERS, optional EXA_OOB_PORT: the out-of-band channel of the
 * selftests, selftests/lib/oob.h).  It counts exactly what happened to
 * every message and RDMA transfer, so that the host can show that nothing
 * was lost silently, duplicated or corrupted, and that every reported
 * failure is a message that really was not delivered.
 *
 *   exanet-fault-campaign [--messages N] [--rdma-bytes B] [--rdma-size S]
 *                         [--seconds T] [--timeout T]
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
#include <stdlib.h>
#include <string.h>

#include "exa_util.h"
#include "campaign.h"

static int g_rank;

void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "exanet-fault-campaign rank %d: ", g_rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

/* Every out-of-band operation waits until the overall deadline at most, so
 * its -ETIMEDOUT is the overall timeout. */
void oob_failed(const char *what, int err)
{
	die(err == -ETIMEDOUT ? EXIT_TIMEOUT : EXIT_SETUP, "%s: %s", what, strerror(-err));
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die(EXIT_SETUP, "out of memory");
	return p;
}

void list_push(struct u32_list *l, uint32_t v)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, (size_t)l->cap * sizeof(*l->v));
		if (!l->v)
			die(EXIT_SETUP, "out of memory");
	}
	l->v[l->n++] = v;
}

static double seconds_since(int64_t start_ms)
{
	return (double)(exa_now_ms() - start_ms) / 1000.0;
}

int remaining_ms(const struct campaign *c)
{
	int64_t left = c->deadline_ms - exa_now_ms();

	return left < 1000 ? 1000 : left > INT32_MAX ? INT32_MAX : (int)left;
}

static void check_deadline(const struct campaign *c, const char *phase)
{
	if (exa_now_ms() > c->deadline_ms)
		die(EXIT_TIMEOUT, "overall timeout (%.0f s) while %s", c->opt.timeout, phase);
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

void sum_peers(const struct campaign *c, struct totals *t)
{
	*t = (struct totals){ 0 };
	for (int r = 0; r < c->nnodes; r++) {
		const struct peer *p = &c->peers[r];

		t->sent += p->next_seq;
		t->acked += p->acked;
		t->failed += p->failed_seqs.n;
		t->received += p->received;
		t->duplicated += p->duplicated;
		t->rdma_sent += p->rdma_next;
		t->rdma_failed += p->rdma_failed.n;
	}
}

static void progress_line(const struct campaign *c, int64_t start_ms)
{
	struct totals t;

	sum_peers(c, &t);
	fprintf(stderr, "campaign rank %d: %.0f s: messages sent %" PRIu64 " acked %" PRIu64
		" failed %" PRIu64 " received %" PRIu64 " corrupted %" PRIu64
		"; rdma transfers %" PRIu64 " failed %" PRIu64 "\n", c->rank,
		seconds_since(start_ms), t.sent, t.acked, t.failed, t.received, c->corrupted,
		t.rdma_sent, t.rdma_failed);
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

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(f, "usage: exanet-fault-campaign [--messages N] [--rdma-bytes B] [--rdma-size S]\n"
		"                             [--seconds T] [--timeout T]\n"
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
		fprintf(stderr, "exanet-fault-campaign: too many RDMA transfers per peer\n");
		exit(EXIT_USAGE);
	}
	return;
bad:
	fprintf(stderr, "exanet-fault-campaign: bad value '%s'\n", optarg);
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
