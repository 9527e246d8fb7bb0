/* SPDX-License-Identifier: MIT */
/*
 * exanet-fault-campaign: what its parts share (campaign.c: options, setup,
 * the run and main; campaign_msg.c: the messages; campaign_rdma.c: the RDMA
 * writes; campaign_results.c: the exchange of what was sent, the verdict
 * and the JSON line).  campaign.c describes the program.
 */
#ifndef CAMPAIGN_H
#define CAMPAIGN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <libexanet.h>

#include "oob.h"

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

/* What this rank did with all its peers together. */
struct totals {
	uint64_t sent, acked, failed, received, duplicated;	/* messages */
	uint64_t rdma_sent, rdma_failed;			/* transfers */
};

struct results {
	uint64_t lost, failed_but_delivered, stray;
	uint64_t rdma_ok, rdma_lost, rdma_corrupted, rdma_failed_but_delivered;
};

/* campaign.c */
void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
void oob_failed(const char *what, int err);
void *xcalloc(size_t n, size_t size);
void list_push(struct u32_list *l, uint32_t v);
int remaining_ms(const struct campaign *c);
void sum_peers(const struct campaign *c, struct totals *t);

/* campaign_msg.c: one round each, returning how many channels changed
 * state or messages were taken */
int tx_reap(struct campaign *c);
int tx_fill(struct campaign *c);
bool tx_idle(const struct campaign *c);
int rx_drain(struct campaign *c);

/* campaign_rdma.c */
uint64_t transfer_offset(const struct campaign *c, uint32_t index);
size_t transfer_len(const struct campaign *c, uint32_t index);
uint64_t blocks_of(size_t len);
uint64_t region_offset(const struct campaign *c, int sender, int receiver);
uint64_t pattern_seed(int sender, int receiver, uint32_t index);
bool pattern_matches(const uint8_t *p, size_t len, uint64_t seed, uint64_t from);
bool all_zero(const uint8_t *p, size_t len);
int rdma_fill(struct campaign *c);
int rdma_reap(struct campaign *c);
bool rdma_idle(const struct campaign *c);
int rdma_setup(struct campaign *c);
void rdma_teardown(struct campaign *c);

/* campaign_results.c */
void exchange_and_judge(struct campaign *c, struct results *res);
void print_json(const struct campaign *c, const struct results *res, double seconds);

/* Bitmaps of delivered / failed sequences, the generator of payloads and
 * patterns, the interleaved order of destinations. */
static inline bool bit_test(const uint8_t *map, uint32_t i)
{
	return map[i / 8] & (1u << (i % 8));
}

static inline void bit_set(uint8_t *map, uint32_t i)
{
	map[i / 8] |= (uint8_t)(1u << (i % 8));
}

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Destination of the step-th interleaved turn (step 1..N-1): never ourselves. */
static inline int step_to_rank(const struct campaign *c, int step)
{
	return (c->rank + step) % c->nnodes;
}

#endif /* CAMPAIGN_H */
