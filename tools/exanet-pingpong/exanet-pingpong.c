// SPDX-License-Identifier: MIT
/*
 * exanet-pingpong: user-level (kernel-bypass) ping-pong latency between two
 * nodes over the ExaNet packetizer -> mailbox path.
 *
 * Setup: the server listens on a TCP port of the management network; the
 * client connects, both exchange node id + mailbox id and the run
 * parameters, then the timed loop runs purely through libexanet: no system
 * calls per iteration (clock_gettime is the vDSO; --no-timing removes even
 * that).  A final TCP exchange reports the server's error count.
 *
 * --bw: streaming message rate.  Per size the client sends --warmup, then
 * --iters messages back to back, on the 4 channels of its packetizer
 * interface in turn; the server counts them and, after the last one,
 * answers with one short "done" message.  The client's time of a size runs
 * from its first timed send to the arrival of that answer.  A channel is
 * reused only after its previous message's final status was read: ACK
 * frees it, NACK FULL (the server's mailbox was full) sends the same
 * message again on the same channel (counted as a retry), anything else
 * ends the run.  Messages of 8 bytes or more carry a sequence number in
 * their first 8 bytes; with --verify the server checks that each arrives
 * once and intact (the NI does not order messages of different channels).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libexanet.h>

#include "pp_common.h"

#define TOOL "exanet-pingpong"
#define HS_MAGIC 0x45505050u	/* "EPPP" */
/* 2: the run parameters as struct pp_run; 3: run.flags (HS_FLAG_*) */
#define HS_VERSION 3

/* run.flags: the client's mode, which the server follows */
enum { HS_FLAG_BW = 1, HS_FLAG_VERIFY = 2 };
#define HS_FLAGS_KNOWN (HS_FLAG_BW | HS_FLAG_VERIFY)

/* Handshake, both directions (the server's run parameters are zero but for
 * run.flags: the mode it runs, the client's and its own --verify). */
struct handshake {
	uint32_t magic;
	uint32_t version;
	uint32_t node_id;
	uint32_t mbox;
	struct pp_run run;
	int32_t status;		/* server reply: 0 or negative errno */
	uint32_t pad;
};

struct final_report {
	uint32_t magic;
	uint32_t pad;
	uint64_t errors;	/* the server's send errors */
	uint64_t echoed;	/* messages it received */
};

/* --bw: the server's answer after the last message of a size. */
#define BW_DONE_MAGIC 0x454e4f44u	/* "DONE" */
struct bw_done {
	uint32_t magic;
	uint32_t size;
	uint64_t errors;	/* duplicate, missing and damaged messages */
};

/* --bw: a message of at least this size starts with its sequence number */
#define BW_SEQ_BYTES 8u

static void usage(FILE *f)
{
	fprintf(f,
PP_HELP_USAGE(TOOL)
"       " TOOL " --client --oob HOST:PORT [--peer-node N] [options]\n"
"\n"
"One-way latency (RTT/2) of ExaNet packetizer->mailbox messages between two\n"
"nodes, or with --bw their streaming message rate.  Mailbox ids are exchanged\n"
"over a TCP connection on the management network (default port %u).\n"
"\n"
"  -s, --server           wait for a client and echo its messages (--bw: count them)\n"
"  -c, --client           drive the measurement (the server follows its --bw, --verify)\n"
"  -o, --oob HOST:PORT    server: [HOST:]PORT to listen on; client: server address\n"
"  -n, --peer-node N      expected fabric node id of the server (checked)\n"
"  -S, --sizes LIST       message sizes 1..64: 8,16,64, or 1-64 = 1,2,4,..,64\n"
"                         (default 1,2,4,8,16,32,48,56,64)\n"
"  -i, --iters N          timed round trips (--bw: messages) per size (default 1000)\n"
"  -w, --warmup N         untimed round trips (messages) per size first (default 100)\n"
"      --bw               streaming message rate instead of latency: the client sends\n"
"                         the messages of a size back to back on the 4 send channels\n"
"                         (a message NACKed FULL is sent again: a retry), the server\n"
"                         answers after the last; table and JSON: size, MB/s, msgs/s,\n"
"                         retries, errors.  Excludes --sleep, --samples, --no-timing\n"
"      --verify           with --bw: the server checks that every message arrives\n"
"                         once and intact (sizes >= 8 carry a sequence number)\n"
"  -d, --device PATH      ExaNet device (default " EXANET_DEFAULT_DEVICE ")\n"
"      --slots N          mailbox slots, power of two (default 64)\n"
"  -t, --timeout SEC      per-message and connection timeout (default 10)\n"
"      --yield            wait with the library's waits (spin ~20 us, then yield the\n"
"                         CPU): for a server and client on one CPU; default: busy-poll\n"
"      --sleep            receive by sleeping until the NI's interrupt (exanet_event_wait,\n"
"                         no spinning): the one-way figure is then a wake-up's latency\n"
PP_HELP_SAMPLES
"      --no-timing        no clock read per iteration: only the total time per size\n"
"                         is measured (avg only); for syscall counting\n"
PP_HELP_CLOCK
PP_HELP_JSON
PP_HELP_TAIL
"System calls: the steady-state loop makes none (with --yield, a wait longer than\n"
"~20 us yields; with --sleep, every receive arms and polls): stores/loads to the mapped\n"
"pages, and the latency timer is clock_gettime(CLOCK_MONOTONIC) through the\n"
"vDSO, or the calibrated TSC where the clocksource has no vDSO (see --clock).\n"
"To verify, run both sides under 'strace -f -c' with two --iters values N1, N2\n"
"and compute (calls(N2) - calls(N1)) / (N2 - N1), which should be 0.\n"
"\n"
"Exit status: 0 success, 1 runtime error (device, connection, timeout, data\n"
"errors), 2 usage error.\n", PP_DEFAULT_PORT);
}

struct endpoint {
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mbox;
};

static int endpoint_open(const struct pp_opts *o, struct endpoint *ep)
{
	int err;

	memset(ep, 0, sizeof(*ep));
	err = exanet_open(o->device, &ep->dev);
	if (err) {
		fprintf(stderr, TOOL ": open %s: %s\n",
			o->device ? o->device : EXANET_DEFAULT_DEVICE, strerror(-err));
		return err;
	}
	err = exanet_pkt_alloc(ep->dev, &ep->pkt);
	if (err) {
		fprintf(stderr, TOOL ": packetizer interface: %s\n", strerror(-err));
		return err;
	}
	err = exanet_mbox_alloc(ep->dev, o->slots, &ep->mbox);
	if (err) {
		fprintf(stderr, TOOL ": mailbox (%u slots): %s\n", o->slots, strerror(-err));
		return err;
	}
	return 0;
}

static void endpoint_close(struct endpoint *ep)
{
	exanet_close(ep->dev);	/* frees interfaces too */
}

/* Our side of the handshake: where our mailbox is. */
static void handshake_init(struct handshake *h, const struct endpoint *ep)
{
	memset(h, 0, sizeof(*h));
	h->magic = HS_MAGIC;
	h->version = HS_VERSION;
	h->node_id = exanet_node_id(ep->dev);
	h->mbox = exanet_mbox_id(ep->mbox);
}

/*
 * Deadline of a busy-poll loop: the clock is read only every 4096 polls (no
 * system call in steady state), so the timeout starts after the first ones.
 */
struct poll_deadline {
	int64_t end;
	unsigned long spins;
};

static int poll_expired(struct poll_deadline *d, int64_t timeout_ns)
{
	if (++d->spins % 4096)
		return 0;
	if (!d->end) {
		d->end = pp_timer_ns() + timeout_ns;
		return 0;
	}
	return pp_timer_ns() > d->end;
}

static int send_one(struct endpoint *ep, uint32_t node, uint32_t mbox, const void *buf,
		    unsigned int len, int64_t timeout_ns, int *chan)
{
	struct poll_deadline dl = { 0, 0 };
	int c;

	/* All four channels ONGOING only if ACKs are slow: keep trying. */
	while ((c = exanet_send(ep->pkt, node, mbox, buf, len)) == -EAGAIN)
		if (poll_expired(&dl, timeout_ns))
			return -ETIMEDOUT;
	if (c < 0)
		return c;
	*chan = c;
	return 0;
}

/*
 * Waits.  By default the tool busy-polls (no system call, whatever the
 * wait: it measures the NI, not the scheduler); --yield uses the library's
 * waits, which spin for about 20 us and then yield the CPU, for a server
 * and client sharing one CPU; --sleep receives by sleeping on the NI's
 * interrupt (the send channel's wait is then --yield's).
 */
enum pp_wait { WAIT_BUSY, WAIT_YIELD, WAIT_SLEEP };

static enum pp_wait wait_mode(const struct pp_opts *o)
{
	return o->sleep ? WAIT_SLEEP : o->yield ? WAIT_YIELD : WAIT_BUSY;
}

/* Armed before the queue is checked, so a message that arrives between the
 * check and the sleep ends the sleep (exanet_event_wait()). */
static ssize_t recv_sleeping(struct endpoint *ep, void *buf, size_t len, int64_t timeout_ns)
{
	int64_t end = pp_timer_ns() + timeout_ns;
	ssize_t n;
	int r = exanet_event_arm(ep->dev);

	if (r < 0)
		return r;
	while ((n = exanet_recv(ep->mbox, buf, len, NULL)) == 0) {
		int64_t left_ms = (end - pp_timer_ns()) / 1000000;

		if (left_ms <= 0)
			return -ETIMEDOUT;
		r = exanet_event_wait(ep->dev, left_ms > 60000 ? 60000 : (int)left_ms);
		if (r < 0)
			return r;
	}
	return n;
}

static ssize_t recv_one(struct endpoint *ep, void *buf, size_t len, int64_t timeout_ns,
			enum pp_wait wait)
{
	struct poll_deadline dl = { 0, 0 };
	ssize_t n;

	if (wait == WAIT_SLEEP)
		return recv_sleeping(ep, buf, len, timeout_ns);
	if (wait == WAIT_YIELD)
		return exanet_recv_wait(ep->mbox, buf, len, NULL, timeout_ns);
	while ((n = exanet_recv(ep->mbox, buf, len, NULL)) == 0)
		if (poll_expired(&dl, timeout_ns))
			return -ETIMEDOUT;
	return n;
}

static int wait_chan(struct endpoint *ep, unsigned int chan, int64_t timeout_ns, uint64_t *st,
		     enum pp_wait wait)
{
	struct poll_deadline dl = { 0, 0 };

	if (wait != WAIT_BUSY)
		return exanet_wait(ep->pkt, chan, timeout_ns, st);
	for (;;) {
		*st = exanet_chan_status(ep->pkt, chan);
		if (EXANET_ST_STATE(*st) != EXANET_CHAN_ONGOING)
			return exanet_status_errno(*st);
		if (poll_expired(&dl, timeout_ns))
			return -EINPROGRESS;
	}
}

static int check_chan(struct endpoint *ep, int chan, int64_t timeout_ns, enum pp_wait wait)
{
	uint64_t st;
	int err;

	if (chan < 0)
		return 0;
	err = wait_chan(ep, (unsigned int)chan, timeout_ns, &st, wait);
	if (err)
		fprintf(stderr, TOOL ": send on channel %d: %s (state %s, reason %s)\n", chan,
			strerror(-err), exanet_chan_state_str(EXANET_ST_STATE(st)),
			exanet_nack_reason_str(EXANET_ST_REASON(st)));
	return err;
}

/* --bw combinations that make no sense (both sides): -EINVAL after a message. */
static int check_usage(struct pp_opts *o)
{
	const char *why = NULL;

	if ((o->flags & HS_FLAG_VERIFY) && !(o->flags & HS_FLAG_BW))
		why = "--verify needs --bw (the latency mode checks every echo anyway)";
	else if ((o->flags & HS_FLAG_BW) && o->sleep)
		why = "--bw and --sleep exclude each other (the stream polls; --yield may yield)";
	else if ((o->flags & HS_FLAG_BW) && o->samples)
		why = "--samples needs the latency mode: --bw times no round trips";
	else if ((o->flags & HS_FLAG_BW) && o->no_timing)
		why = "--no-timing needs the latency mode: --bw reads the clock twice per size";
	if (!why)
		return 0;
	fprintf(stderr, TOOL ": %s\n", why);
	return -EINVAL;
}

/*
 * Server: whether it can run what the client asked for (run.flags); 0 or
 * -EPROTO after a message.
 */
static int check_mode(const struct pp_opts *o, uint32_t flags)
{
	if (flags & ~(uint32_t)HS_FLAGS_KNOWN) {
		fprintf(stderr, TOOL ": the client asked for unknown options 0x%x\n", flags);
		return -EPROTO;
	}
	if ((o->flags & HS_FLAG_BW) && !(flags & HS_FLAG_BW)) {
		fprintf(stderr, TOOL ": this server was started with --bw but the client asked "
			"for the latency mode (give the client --bw)\n");
		return -EPROTO;
	}
	if ((flags & HS_FLAG_BW) && o->sleep) {
		fprintf(stderr, TOOL ": the client asked for --bw, which excludes this server's "
			"--sleep\n");
		return -EPROTO;
	}
	return 0;
}

/* --bw: the payload of a size (the same on both sides); the sequence
 * number goes over its first 8 bytes. */
static void bw_pattern(uint8_t *pat, unsigned int len)
{
	pp_fill_pattern(pat, len, 0x5eed0000u + len);
}

/*
 * --bw server: per size, receives warmup + iters messages (busy-polling
 * unless --yield), checks them (--verify: each sequence number once, the
 * payload intact; always: the length) and answers with a struct bw_done.
 * A message of another length and a duplicate that --verify recognises
 * do not count as one of the size's messages, so that they do not end the
 * size early (a damaged one does: it stands for the one it should have
 * been).
 * Adds the data errors to *data_errors, the messages to fin->echoed and
 * failed answers to fin->errors.  0, or the error that ended the run.
 */
static int serve_bw(struct endpoint *ep, const struct pp_opts *o, const struct handshake *hs,
		    const unsigned int *sizes, unsigned int nsizes, unsigned long iters,
		    unsigned long warmup, int verify, struct final_report *fin,
		    unsigned long *data_errors)
{
	int64_t tmo = (int64_t)(o->timeout_s * 1e9);
	unsigned long total = iters + warmup, words = (total + 63) / 64;
	uint8_t buf[EXANET_MAX_PAYLOAD], pat[EXANET_MAX_PAYLOAD];
	uint64_t *seen = NULL;
	unsigned int s;
	int err = 0, chan;

	if (verify) {
		seen = malloc(words * sizeof(*seen));
		if (!seen) {
			fprintf(stderr, TOOL ": --verify: no memory for %lu sequence numbers\n", total);
			return -ENOMEM;
		}
	}
	for (s = 0; s < nsizes && !err; s++) {
		unsigned int len = sizes[s];
		unsigned long got = 0, stray = 0, damaged = 0, dup = 0, distinct = 0, missing = 0;
		struct bw_done done = { .magic = BW_DONE_MAGIC, .size = len };

		if (verify) {
			memset(seen, 0, words * sizeof(*seen));
			bw_pattern(pat, len);
		}
		/* steady state: no system calls */
		while (got - stray - dup < total) {
			ssize_t n = recv_one(ep, buf, sizeof(buf), tmo, wait_mode(o));
			uint64_t seq;

			if (n < 0) {
				fprintf(stderr, TOOL ": size %u: receive %lu/%lu: %s\n", len,
					got - stray - dup, total, strerror((int)-n));
				err = (int)n;
				break;
			}
			got++;
			if ((unsigned int)n != len) {
				stray++;
				continue;
			}
			if (!verify)
				continue;
			if (len < BW_SEQ_BYTES) {
				damaged += !!memcmp(buf, pat, len);
				continue;
			}
			memcpy(&seq, buf, sizeof(seq));
			if (seq >= total) {
				damaged++;	/* and its own number will be missing */
			} else if (seen[seq / 64] & (1ull << (seq % 64))) {
				dup++;
			} else {
				seen[seq / 64] |= 1ull << (seq % 64);
				distinct++;
				damaged += !!memcmp(buf + BW_SEQ_BYTES, pat + BW_SEQ_BYTES,
						    len - BW_SEQ_BYTES);
			}
		}
		fin->echoed += got;
		if (err)
			break;
		if (verify && len >= BW_SEQ_BYTES)
			missing = total - distinct;
		done.errors = stray + damaged + dup + missing;
		*data_errors += done.errors;
		if (done.errors)
			fprintf(stderr, TOOL ": size %u: %lu messages of another length, %lu damaged, "
				"%lu duplicate, %lu sequence numbers missing\n", len, stray, damaged,
				dup, missing);
		err = send_one(ep, hs->node_id, hs->mbox, &done, sizeof(done), tmo, &chan);
		if (err) {
			fprintf(stderr, TOOL ": size %u: answer: %s\n", len, strerror(-err));
			break;
		}
		/* one message in flight: check it before the next size */
		if (check_chan(ep, chan, tmo, wait_mode(o)))
			fin->errors++;
		if (o->verbose)
			fprintf(stderr, TOOL ": size %u: %lu messages received\n", len, got);
	}
	free(seen);
	return err;
}

static int run_server(const struct pp_opts *o)
{
	struct endpoint ep;
	struct handshake hs, reply;
	struct final_report fin = { .magic = HS_MAGIC };
	int64_t tmo = (int64_t)(o->timeout_s * 1e9);
	uint8_t buf[EXANET_MAX_PAYLOAD];
	unsigned int sizes[PP_MAX_SIZES], nsizes;
	unsigned long iters, warmup, data_errors = 0;
	uint64_t total, k;
	int lfd = -1, fd = -1, err, prev_chan = -1, bw;

	err = endpoint_open(o, &ep);
	if (err)
		goto out;
	lfd = pp_tcp_listen(o->oob_host, o->oob_port);
	if (lfd < 0) {
		err = lfd;
		fprintf(stderr, TOOL ": listen on %s:%u: %s\n", o->oob_host[0] ? o->oob_host : "*",
			o->oob_port, strerror(-err));
		goto out;
	}
	if (o->verbose)
		fprintf(stderr, TOOL ": node %u mailbox %u, waiting on port %u\n",
			exanet_node_id(ep.dev), exanet_mbox_id(ep.mbox), o->oob_port);
	/* the client may take a while to start: wait long for it */
	fd = pp_tcp_accept(lfd, o->timeout_s * 30);
	if (fd < 0) {
		err = fd;
		fprintf(stderr, TOOL ": waiting for a client: %s\n", strerror(-err));
		goto out;
	}
	err = pp_read_full(fd, &hs, sizeof(hs), o->timeout_s);
	if (err || hs.magic != HS_MAGIC || hs.version != HS_VERSION ||
	    hs.run.nsizes == 0 || hs.run.nsizes > PP_MAX_SIZES || hs.mbox > EXANET_DB_MBOX_MASK ||
	    hs.node_id > EXANET_DB_NODE_MASK) {
		fprintf(stderr, TOOL ": bad handshake from client%s%s\n", err ? ": " : "",
			err ? strerror(-err) : "");
		err = err ? err : -EPROTO;
		goto out;
	}
	handshake_init(&reply, &ep);
	reply.status = pp_run_adopt(TOOL, &hs.run, EXANET_MAX_PAYLOAD, sizes, &nsizes, &iters,
				    &warmup);
	if (!reply.status)
		reply.status = check_mode(o, hs.run.flags);
	if (!reply.status)
		reply.run.flags = hs.run.flags | (o->flags & HS_FLAG_VERIFY);
	err = pp_write_full(fd, &reply, sizeof(reply), o->timeout_s);
	if (!err)
		err = reply.status;
	if (err)
		goto out;

	bw = !!(hs.run.flags & HS_FLAG_BW);
	if (bw) {
		int verify = (hs.run.flags | o->flags) & HS_FLAG_VERIFY;

		if (o->verbose)
			fprintf(stderr, TOOL ": --bw%s from node %u\n", verify ? " --verify" : "",
				hs.node_id);
		err = serve_bw(&ep, o, &hs, sizes, nsizes, iters, warmup, verify, &fin,
			       &data_errors);
		pp_write_full(fd, &fin, sizeof(fin), o->timeout_s);
		if (!o->json && !err)
			printf("# " TOOL " server (--bw%s): received %lu messages, %lu data errors, "
			       "%lu send errors\n", verify ? " --verify" : "",
			       (unsigned long)fin.echoed, data_errors, (unsigned long)fin.errors);
		if (!err && (fin.errors || data_errors))
			err = -EIO;
		goto out;
	}

	total = (uint64_t)(iters + warmup) * nsizes;
	/* steady state: echo every message back, no system calls */
	for (k = 0; k < total; k++) {
		ssize_t n = recv_one(&ep, buf, sizeof(buf), tmo, wait_mode(o));

		if (n < 0) {
			fprintf(stderr, TOOL ": receive %lu/%lu: %s\n", (unsigned long)k,
				(unsigned long)total, strerror((int)-n));
			err = (int)n;
			break;
		}
		if (check_chan(&ep, prev_chan, tmo, wait_mode(o)))
			fin.errors++;
		err = send_one(&ep, hs.node_id, hs.mbox, buf, (unsigned int)n, tmo, &prev_chan);
		if (err) {
			fprintf(stderr, TOOL ": echo: %s\n", strerror(-err));
			break;
		}
	}
	if (!err && check_chan(&ep, prev_chan, tmo, wait_mode(o)))
		fin.errors++;
	fin.echoed = k;
	pp_write_full(fd, &fin, sizeof(fin), o->timeout_s);
	if (!o->json && !err)
		printf("# " TOOL " server: echoed %lu messages, %lu send errors\n",
		       (unsigned long)k, (unsigned long)fin.errors);
	if (!err && fin.errors)
		err = -EIO;
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	endpoint_close(&ep);
	return err ? 1 : 0;
}

/* --bw: a send channel and the message it carries (kept for a resend). */
struct bw_chan {
	int busy;			/* sent, outcome not read yet */
	unsigned int len;
	uint64_t seq;
	uint8_t msg[EXANET_MAX_PAYLOAD];
};

/* --bw client: the stream to the server's mailbox. */
struct bw_stream {
	struct endpoint *ep;
	uint32_t node, mbox;
	int64_t tmo;
	enum pp_wait wait;
	unsigned int next;		/* channel of the next message (round robin) */
	struct bw_chan ch[EXANET_PKT_CHANNELS];
	unsigned long retries;
	struct poll_deadline full;	/* NACKs FULL since the last ACK */
};

/*
 * Channels are picked here, not by exanet_send(): it would take any channel
 * that is no longer ONGOING, also one whose outcome has not been read yet,
 * and that outcome (a NACK) would be lost.  A channel is reused only after
 * bw_reap().
 */
static int bw_send_on(struct bw_stream *s, unsigned int c)
{
	struct bw_chan *ch = &s->ch[c];
	int r = exanet_send_on(s->ep->pkt, c, s->node, s->mbox, ch->msg, ch->len);

	if (r < 0) {
		fprintf(stderr, TOOL ": size %u: send of message %llu on channel %u: %s\n", ch->len,
			(unsigned long long)ch->seq, c, strerror(-r));
		return r;
	}
	ch->busy = 1;
	return 0;
}

/*
 * Waits for the outcome of channel c's message: ACK frees the channel; NACK
 * FULL (-ENOBUFS: the server's mailbox was full, nothing was written) sends
 * the same message again on the same channel, a retry; anything else is
 * reported and returned.  -ETIMEDOUT if the mailbox stays full for the
 * timeout.
 */
static int bw_reap(struct bw_stream *s, unsigned int c)
{
	struct bw_chan *ch = &s->ch[c];
	uint64_t st = 0;
	int err;

	while (ch->busy) {
		err = wait_chan(s->ep, c, s->tmo, &st, s->wait);
		if (!err) {
			ch->busy = 0;
			s->full.end = 0;
			s->full.spins = 0;
			break;
		}
		if (err != -ENOBUFS) {
			fprintf(stderr, TOOL ": size %u: message %llu on channel %u: %s (state %s, "
				"reason %s)\n", ch->len, (unsigned long long)ch->seq, c,
				strerror(-err), exanet_chan_state_str(EXANET_ST_STATE(st)),
				exanet_nack_reason_str(EXANET_ST_REASON(st)));
			return err;
		}
		if (poll_expired(&s->full, s->tmo)) {
			fprintf(stderr, TOOL ": size %u: the server's mailbox stayed full for %g s "
				"(message %llu)\n", ch->len, s->tmo / 1e9, (unsigned long long)ch->seq);
			return -ETIMEDOUT;
		}
		s->retries++;
		err = bw_send_on(s, c);
		if (err)
			return err;
	}
	return 0;
}

/* Sends message seq of len bytes (pat, the sequence number first). */
static int bw_post(struct bw_stream *s, const uint8_t *pat, unsigned int len, uint64_t seq)
{
	unsigned int c = s->next;
	struct bw_chan *ch = &s->ch[c];
	int err = bw_reap(s, c);

	if (err)
		return err;
	memcpy(ch->msg, pat, len);
	if (len >= BW_SEQ_BYTES)
		memcpy(ch->msg, &seq, sizeof(seq));
	ch->len = len;
	ch->seq = seq;
	s->next = (c + 1) % EXANET_PKT_CHANNELS;
	return bw_send_on(s, c);
}

/* The outcome of every message still in flight, oldest first. */
static int bw_drain(struct bw_stream *s)
{
	unsigned int i;
	int err;

	for (i = 0; i < EXANET_PKT_CHANNELS; i++) {
		err = bw_reap(s, (s->next + i) % EXANET_PKT_CHANNELS);
		if (err)
			return err;
	}
	return 0;
}

/*
 * One size: warmup + iters messages, then the server's answer.  Fills res
 * (errors: the server's count); 0, or the error that ended the run.
 */
static int bw_size(struct bw_stream *s, const struct pp_opts *o, unsigned int len,
		   struct pp_bw_result *res)
{
	unsigned long total = o->warmup + o->iters, seq;
	uint8_t pat[EXANET_MAX_PAYLOAD], in[EXANET_MAX_PAYLOAD];
	struct bw_done done;
	int64_t t_start = 0, ns;
	ssize_t n;
	int err = 0;

	memset(res, 0, sizeof(*res));
	res->size = len;
	res->iters = o->iters;
	bw_pattern(pat, len);
	/* steady state: no system calls */
	for (seq = 0; seq < total && !err; seq++) {
		if (seq == o->warmup) {
			t_start = pp_timer_ns();
			s->retries = 0;		/* the timed messages' only */
		}
		err = bw_post(s, pat, len, seq);
	}
	if (!err)
		err = bw_drain(s);
	res->send_retries = s->retries;
	if (err)
		return err;
	n = recv_one(s->ep, in, sizeof(in), s->tmo, s->wait);
	ns = pp_timer_ns() - t_start;
	if (n < 0) {
		fprintf(stderr, TOOL ": size %u: no answer from the server: %s\n", len,
			strerror((int)-n));
		return (int)n;
	}
	memcpy(&done, in, sizeof(done));
	if ((size_t)n != sizeof(done) || done.magic != BW_DONE_MAGIC || done.size != len) {
		fprintf(stderr, TOOL ": size %u: unexpected answer from the server (%zd bytes)\n",
			len, n);
		return -EPROTO;
	}
	pp_bw_set(res, len, o->iters, ns);
	res->errors = (unsigned long)done.errors;
	if (o->verbose)
		fprintf(stderr, TOOL ": size %u: %.2f MB/s, %.1f msgs/s, %lu retries\n", len,
			res->mb_s, res->msg_s, res->send_retries);
	return 0;
}

/*
 * The results of --bw, in velo2-pingpong's form (table: size MB/s msgs/s
 * retries errors; JSON: the same fields per size).  status: NULL when all
 * sizes ran, else why the run stopped.
 */
static void bw_print(const struct pp_opts *o, uint32_t node, uint32_t peer_node, int verify,
		     const struct pp_bw_result *res, unsigned int n, const char *status)
{
	if (o->json) {
		json_object *j = pp_bw_json(TOOL, "exanet-stream", o, node, peer_node);

		tj_uint(j, "channels", EXANET_PKT_CHANNELS);
		tj_bool(j, "verify", verify);
		tj_str(j, "timer", pp_timer_desc());
		pp_bw_json_rows(j, res, n);
		tj_str(j, "status", status ? status : "ok");
		tj_print(j, 0);
		return;
	}
	printf("# %s: ExaNet packetizer->mailbox stream on %u channels%s, node %u -> node %u, "
	       "%lu messages per size (warmup %lu)\n", TOOL, EXANET_PKT_CHANNELS,
	       verify ? ", verified" : "", node, peer_node, o->iters, o->warmup);
	printf("# first timed send .. the server's answer; timer: %s\n", pp_timer_desc());
	pp_bw_table(res, n);
	if (status)
		printf("# stopped: %s\n", status);
	fflush(stdout);
}

/* --bw client after the handshake: every size, the output; 0 or an error. */
static int client_bw(struct endpoint *ep, const struct pp_opts *o, int fd,
		     const struct handshake *hs, const struct handshake *reply)
{
	struct pp_bw_result res[PP_MAX_SIZES];
	struct bw_stream st;
	struct final_report fin;
	unsigned int i, n = 0;
	int err = 0, failed = 0, verify = !!(reply->run.flags & HS_FLAG_VERIFY);

	memset(&st, 0, sizeof(st));
	st.ep = ep;
	st.node = reply->node_id;
	st.mbox = reply->mbox;
	st.tmo = (int64_t)(o->timeout_s * 1e9);
	st.wait = wait_mode(o);
	while (n < o->nsizes && !err) {
		err = bw_size(&st, o, o->sizes[n], &res[n]);
		if (err)
			res[n].errors++;	/* the failed send or the missing answer */
		n++;
	}
	if (!err && pp_read_full(fd, &fin, sizeof(fin), o->timeout_s) == 0 && fin.errors)
		fprintf(stderr, TOOL ": server reported %lu send errors\n",
			(unsigned long)fin.errors);
	bw_print(o, hs->node_id, reply->node_id, verify, res, n, err ? strerror(-err) : NULL);
	for (i = 0; i < n && !err; i++)
		if (res[i].errors) {
			fprintf(stderr, TOOL ": size %u: %lu data errors\n", res[i].size,
				res[i].errors);
			failed = 1;
		}
	return err ? err : failed ? -EIO : 0;
}

static int run_client(const struct pp_opts *o)
{
	struct endpoint ep;
	struct handshake hs, reply;
	struct final_report fin;
	struct pp_result res[PP_MAX_SIZES];
	int64_t tmo = (int64_t)(o->timeout_s * 1e9);
	uint8_t out[EXANET_MAX_PAYLOAD], in[EXANET_MAX_PAYLOAD];
	uint64_t *rtt = NULL;
	unsigned int s;
	char desc[128];
	int fd = -1, err, chan = -1;

	err = endpoint_open(o, &ep);
	if (err)
		goto out;
	if (!(o->flags & HS_FLAG_BW)) {
		rtt = calloc(o->iters, sizeof(*rtt));
		if (!rtt) {
			err = -ENOMEM;
			goto out;
		}
	}
	fd = pp_tcp_connect(o->oob_host, o->oob_port, o->timeout_s * 3);
	if (fd < 0) {
		err = fd;
		fprintf(stderr, TOOL ": connect to %s:%u: %s\n", o->oob_host, o->oob_port,
			strerror(-err));
		goto out;
	}
	handshake_init(&hs, &ep);
	pp_run_offer(&hs.run, o->sizes, o->nsizes, o->iters, o->warmup, o->flags);
	err = pp_write_full(fd, &hs, sizeof(hs), o->timeout_s);
	if (!err)
		err = pp_read_full(fd, &reply, sizeof(reply), o->timeout_s);
	if (err || reply.magic != HS_MAGIC || reply.version != HS_VERSION) {
		fprintf(stderr, TOOL ": handshake with server failed: %s%s\n",
			strerror(err ? -err : EPROTO), err == -ECONNRESET ?
			" (a server of another version hangs up)" : "");
		err = err ? err : -EPROTO;
		goto out;
	}
	if (reply.status) {
		fprintf(stderr, TOOL ": the server refused the run (%s): see its messages\n",
			strerror(-reply.status));
		err = -EPROTO;
		goto out;
	}
	if (o->peer_node >= 0 && reply.node_id != (uint32_t)o->peer_node) {
		fprintf(stderr, TOOL ": server is fabric node %u, --peer-node says %ld\n",
			reply.node_id, o->peer_node);
		err = -EINVAL;
		goto out;
	}
	if (o->verbose)
		fprintf(stderr, TOOL ": node %u mbox %u -> node %u mbox %u\n", hs.node_id,
			hs.mbox, reply.node_id, reply.mbox);
	if (o->flags & HS_FLAG_BW) {
		err = client_bw(&ep, o, fd, &hs, &reply);
		goto out;
	}

	for (s = 0; s < o->nsizes && !err; s++) {
		unsigned int len = o->sizes[s];
		unsigned long it, total = o->warmup + o->iters;
		int64_t t_start = 0, t0;

		memset(&res[s], 0, sizeof(res[s]));
		res[s].size = len;
		for (it = 0; it < total; it++) {
			ssize_t n;

			pp_fill_pattern(out, len, (uint32_t)(it * 131 + len));
			if (it == o->warmup)
				t_start = pp_timer_ns();
			t0 = o->no_timing ? 0 : pp_timer_ns();
			err = send_one(&ep, reply.node_id, reply.mbox, out, len, tmo, &chan);
			if (err) {
				fprintf(stderr, TOOL ": send: %s\n", strerror(-err));
				break;
			}
			n = recv_one(&ep, in, sizeof(in), tmo, wait_mode(o));
			if (!o->no_timing && it >= o->warmup)
				rtt[it - o->warmup] = (uint64_t)(pp_timer_ns() - t0);
			if (n < 0) {
				err = (int)n;
				fprintf(stderr, TOOL ": size %u iteration %lu: no reply: %s\n", len,
					it, strerror((int)-n));
				break;
			}
			if ((unsigned int)n != len || memcmp(in, out, len))
				res[s].errors++;
			if (check_chan(&ep, chan, tmo, wait_mode(o)))
				res[s].errors++;
		}
		if (err || (err = pp_size_result(o, TOOL, len, rtt, t_start, &res[s])))
			break;
		if (o->verbose)
			fprintf(stderr, TOOL ": size %u done (%.3f us)\n", len, res[s].median_us);
	}
	if (err)
		goto out;
	if (pp_read_full(fd, &fin, sizeof(fin), o->timeout_s) == 0 && fin.errors)
		fprintf(stderr, TOOL ": server reported %lu send errors\n",
			(unsigned long)fin.errors);

	snprintf(desc, sizeof(desc), "node %u -> node %u", hs.node_id, reply.node_id);
	if (o->json)
		pp_print_json(TOOL, "exanet", hs.node_id, reply.node_id, o, res, o->nsizes);
	else
		pp_print_table(TOOL, "exanet", desc, o, res, o->nsizes);
	for (s = 0; s < o->nsizes; s++)
		if (res[s].errors)
			err = -EIO;
out:
	if (fd >= 0)
		close(fd);
	free(rtt);
	endpoint_close(&ep);
	return err ? 1 : 0;
}

/* --bw and --verify: o->flags HS_FLAG_BW (bit 0), HS_FLAG_VERIFY (bit 1) */
static const struct option tool_lopts[] = {
	{ "bw", no_argument, NULL, PP_FLAG_OPT(0) },
	{ "verify", no_argument, NULL, PP_FLAG_OPT(1) },
	{ NULL, 0, NULL, 0 }
};

static const struct pp_tool exanet_pp_tool = {
	.name = TOOL,
	.max_size = EXANET_MAX_PAYLOAD,
	.default_timeout_s = 10,
	.opts = PP_OPT_DEVICE | PP_OPT_MBOX | PP_OPT_PEER | PP_OPT_TIMING,
	.usage = usage,
	.tool_lopts = tool_lopts,
	.tool_opt = pp_flag_opt,
	.check = check_usage,
};

int main(int argc, char **argv)
{
	return pp_main(argc, argv, &exanet_pp_tool, run_server, run_client);
}
