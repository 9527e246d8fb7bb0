// SPDX-License-Identifier: MIT
/*
 * exanet-fault-campaign: after the run, every rank tells the others what it
 * sent them (counts and the exact lists of reported failures) and judges,
 * as receiver, what happened to each message and RDMA block; then one JSON
 * line per rank (campaign.c lists its fields).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "campaign.h"

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

void exchange_and_judge(struct campaign *c, struct results *res)
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

void print_json(const struct campaign *c, const struct results *res, double seconds)
{
	uint64_t rdma_blocks = 0, rdma_failed_blocks = 0;
	struct totals tot;

	sum_peers(c, &tot);
	for (int r = 0; r < c->nnodes; r++) {
		const struct peer *p = &c->peers[r];

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
	       tot.sent, tot.acked, tot.failed, c->failed_timeout, c->failed_nack,
	       c->nack_full_resends, tot.received - res->stray, res->lost, tot.duplicated,
	       c->corrupted + res->stray, res->failed_but_delivered, c->rdma_on ? 1 : 0,
	       tot.rdma_sent, tot.rdma_failed, rdma_blocks, rdma_failed_blocks,
	       res->rdma_ok, res->rdma_lost, res->rdma_corrupted,
	       res->rdma_failed_but_delivered, seconds);
	fflush(stdout);
}
