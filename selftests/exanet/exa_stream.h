/* SPDX-License-Identifier: MIT */
/*
 * Pipelined sender (all channels in flight) and checking receiver used by
 * the multi-node tests.  A channel whose message is NACKed FULL resends the
 * same message on the same channel, so per-channel order is preserved.
 */
#ifndef EXA_STREAM_H
#define EXA_STREAM_H

#include "exa_test.h"

struct tx_pipe {
	struct exanet_pkt *pkt;
	int busy[EXANET_PKT_CHANNELS];
	uint8_t msg[EXANET_PKT_CHANNELS][EXANET_MAX_PAYLOAD];
	size_t len[EXANET_PKT_CHANNELS];
	uint32_t node[EXANET_PKT_CHANNELS], mbox[EXANET_PKT_CHANNELS];
	unsigned long acked, full_retries;
	uint64_t bad_status;	/* first final status other than ACK / NACK FULL */
};

static inline void tx_pipe_init(struct tx_pipe *tp, struct exanet_pkt *pkt)
{
	memset(tp, 0, sizeof(*tp));
	tp->pkt = pkt;
}

/* Reap finished channels; returns -EIO once a message failed for good. */
static inline int tx_pipe_poll(struct tx_pipe *tp)
{
	unsigned int c;

	for (c = 0; c < EXANET_PKT_CHANNELS; c++) {
		uint64_t st;

		if (!tp->busy[c])
			continue;
		st = exanet_chan_status(tp->pkt, c);
		switch (EXANET_ST_STATE(st)) {
		case EXANET_CHAN_ONGOING:
			break;
		case EXANET_CHAN_ACK:
			tp->busy[c] = 0;
			tp->acked++;
			break;
		case EXANET_CHAN_NACK:
			if (EXANET_ST_REASON(st) == EXANET_NACK_FULL) {
				tp->full_retries++;
				if (exanet_send_on(tp->pkt, c, tp->node[c], tp->mbox[c],
						   tp->msg[c], tp->len[c]) < 0)
					return -EIO;
				break;
			}
			/* fall through */
		default:
			if (!tp->bad_status)
				tp->bad_status = st;
			tp->busy[c] = 0;
			return -EIO;
		}
	}
	return 0;
}

/* 1 if the message went out, 0 if every channel is busy, <0 on failure. */
static inline int tx_pipe_try_send(struct tx_pipe *tp, uint32_t node, uint32_t mbox,
				   const void *buf, size_t len)
{
	unsigned int c;
	int err = tx_pipe_poll(tp);

	if (err)
		return err;
	for (c = 0; c < EXANET_PKT_CHANNELS; c++) {
		if (tp->busy[c])
			continue;
		memcpy(tp->msg[c], buf, len);
		tp->len[c] = len;
		tp->node[c] = node;
		tp->mbox[c] = mbox;
		err = exanet_send_on(tp->pkt, c, node, mbox, buf, len);
		if (err == -EBUSY)
			continue;
		if (err < 0)
			return err;
		tp->busy[c] = 1;
		return 1;
	}
	return 0;
}

static inline int tx_pipe_idle(const struct tx_pipe *tp)
{
	unsigned int c;

	for (c = 0; c < EXANET_PKT_CHANNELS; c++)
		if (tp->busy[c])
			return 0;
	return 1;
}

/* Per-source receive bookkeeping. */
#define RX_MAX_SRC 8
struct rx_check {
	uint32_t expected_per_src;
	uint32_t count[RX_MAX_SRC];
	uint32_t next_seq[RX_MAX_SRC];		/* for strict in-order checks */
	int64_t last_seq_chan[RX_MAX_SRC][EXANET_PKT_CHANNELS];
	uint8_t *seen[RX_MAX_SRC];		/* bitmap of seqs, dup detection */
	unsigned long corrupt, dups, out_of_order, chan_order_violations, bad_src;
};

static inline int rx_check_init(struct rx_check *rc, uint32_t per_src)
{
	int s, c;

	memset(rc, 0, sizeof(*rc));
	rc->expected_per_src = per_src;
	for (s = 0; s < RX_MAX_SRC; s++) {
		rc->seen[s] = calloc(per_src / 8 + 1, 1);
		if (!rc->seen[s])
			return -ENOMEM;
		for (c = 0; c < EXANET_PKT_CHANNELS; c++)
			rc->last_seq_chan[s][c] = -1;
	}
	return 0;
}

static inline void rx_check_free(struct rx_check *rc)
{
	int s;

	for (s = 0; s < RX_MAX_SRC; s++)
		free(rc->seen[s]);
}

/* Account one received stream message. */
static inline void rx_check_msg(struct rx_check *rc, const uint8_t *buf, size_t len,
				const struct exanet_msg_info *info)
{
	uint32_t src, seq;

	if (exa_parse_msg(buf, len, &src, &seq)) {
		rc->corrupt++;
		return;
	}
	if (src >= RX_MAX_SRC || src != info->src_node || seq >= rc->expected_per_src) {
		rc->bad_src++;
		return;
	}
	if (rc->seen[src][seq / 8] & (1u << (seq % 8))) {
		rc->dups++;
		return;
	}
	rc->seen[src][seq / 8] |= (uint8_t)(1u << (seq % 8));
	rc->count[src]++;
	if (seq != rc->next_seq[src])
		rc->out_of_order++;
	rc->next_seq[src] = seq + 1;
	if (info->src_chan < EXANET_PKT_CHANNELS) {
		if ((int64_t)seq <= rc->last_seq_chan[src][info->src_chan])
			rc->chan_order_violations++;
		rc->last_seq_chan[src][info->src_chan] = seq;
	}
}

/* Account up to max messages waiting in mbox (without waiting): how many,
 * or exanet_recv()'s negative errno. */
static inline int rx_check_drain(struct rx_check *rc, struct exanet_mbox *mbox,
				 unsigned int max)
{
	uint8_t buf[EXANET_MAX_PAYLOAD];
	struct exanet_msg_info info;
	unsigned int got;

	for (got = 0; got < max; got++) {
		ssize_t len = exanet_recv(mbox, buf, sizeof(buf), &info);

		if (len <= 0)
			return len < 0 ? (int)len : (int)got;
		rx_check_msg(rc, buf, (size_t)len, &info);
	}
	return (int)got;
}

#endif
