// SPDX-License-Identifier: MIT
/*
 * exanet-fault-campaign: the messages.  Each is 8..64 bytes, a
 * little-endian header (magic, sender, length, sequence, check) and a
 * pseudo-random payload, sent on the four channels of one packetizer to
 * every other rank in turn; the mailbox is drained in the same loop and
 * every delivery accounted (campaign.c describes the format and the
 * counts).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "campaign.h"

static uint32_t fnv1a(uint32_t h, const uint8_t *p, size_t n)
{
	while (n--) {
		h ^= *p++;
		h *= 16777619u;
	}
	return h;
}

static uint32_t msg_check(uint64_t header, const uint8_t *payload, size_t plen, int receiver)
{
	uint64_t hb = htole64(header & ~MSG_CHECK_MASK);
	uint8_t rb = (uint8_t)receiver;
	uint32_t h = 2166136261u;

	h = fnv1a(h, &rb, 1);
	h = fnv1a(h, (const uint8_t *)&hb, sizeof(hb));
	h = fnv1a(h, payload, plen);
	return (h ^ (h >> 24)) & MSG_CHECK_MASK;
}

static size_t msg_build(uint8_t *buf, int sender, int receiver, uint32_t seq)
{
	uint64_t stream = mix64((uint64_t)sender << 40 | (uint64_t)receiver << 32 | seq);
	size_t len = MSG_MIN_BYTES + stream % (EXANET_MAX_PAYLOAD - MSG_MIN_BYTES + 1);
	uint64_t header;

	for (size_t i = MSG_HDR_BYTES; i < len; i += 8) {
		uint64_t w = htole64(mix64(stream + i));

		memcpy(buf + i, &w, len - i < 8 ? len - i : 8);
	}
	header = MSG_MAGIC << 60 | (uint64_t)sender << 54 | (uint64_t)(len - 1) << 48 |
		 (uint64_t)seq << 24;
	header |= msg_check(header, buf + MSG_HDR_BYTES, len - MSG_HDR_BYTES, receiver);
	header = htole64(header);
	memcpy(buf, &header, sizeof(header));
	return len;
}

/* 0 and sender/seq if the message is intact and meant for receiver. */
static int msg_parse(const uint8_t *buf, size_t len, int receiver, int *sender, uint32_t *seq)
{
	uint64_t header;

	if (len < MSG_MIN_BYTES || len > EXANET_MAX_PAYLOAD)
		return -1;
	memcpy(&header, buf, sizeof(header));
	header = le64toh(header);
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
int tx_reap(struct campaign *c)
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

int tx_fill(struct campaign *c)
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

bool tx_idle(const struct campaign *c)
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

int rx_drain(struct campaign *c)
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
