// SPDX-License-Identifier: MIT
/*
 * velo2-pingpong: VELO ping-pong latency and streaming bandwidth (libvelo2)
 * between two processes.  No system calls in the loops.
 *
 * Every message travels as a train of VELO messages ("fragments") of at
 * most 120 bytes, in order: VELO delivers in order per sender/receiver
 * pair, so the receiver reassembles by concatenation, as an MPI eager
 * protocol over VELO does.  Framing, checked by the receiver: tag = message
 * sequence number (low 8 bits), mtt = MTT_MORE on every fragment but the
 * last (MTT_LAST); MTT_ACK marks the 0-byte end-of-stream answer of --bw.
 * Without --frag a message is exactly one VELO message (sizes 1..120).
 *
 * Latency: the client sends a message, the server reassembles it and sends
 * it back; one-way latency = RTT/2.  The client compares every echo with
 * what it sent (after the clock is read).
 * --bw: the client streams --iters messages of each size back to back, the
 * server reassembles them all, then answers with one MTT_ACK message;
 * bandwidth = size * iters / (first send .. answer received).
 * Sends use the library's non-blocking mode (VELO2_SEND_NONBLOCK=1): when
 * the device has no credit (the receiver's ring is full or messages are
 * still in flight) velo2_send returns VELO2_RET_TRY_AGAIN and the message
 * is re-sent; such retries are counted.
 * --verify: the client alternates two data patterns per message and the
 * server checks every message against the pattern it expects before
 * answering (this check is inside the timed path).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <velo2.h>

#include "exa_wait.h"
#include "extoll_tool.h"

#define TOOL "velo2-pingpong"
#define FRAG_MAX_SIZE (4u << 20)

enum { MTT_MORE = 0, MTT_LAST = 1, MTT_ACK = 2 };
enum { FLAG_FRAG = 1, FLAG_BW = 2, FLAG_VERIFY = 4 };	/* o->flags */
#define DEF_SIZES "1,8,16,32,56,64,96,120"
#define DEF_FRAG_SIZES "8,64,120,256,1024,4096"

static void usage(FILE *f)
{
	fprintf(f,
PP_HELP_USAGE(TOOL)
PP_HELP_USAGE_CLIENT(TOOL)
"\n"
"One-way latency (RTT/2) or streaming bandwidth of EXTOLL VELO messages\n"
"(libvelo2) between two processes.\n"
"\n"
"  -s, --server           wait for a client and answer its messages\n"
"  -c, --client           drive the measurement (the server adopts its options)\n"
PP_HELP_OOB_LISTEN
"                         (default port %u)\n"
"  -S, --sizes LIST       message sizes: 8,64, or 1-64 = 1,2,4,..,64; 1..120 bytes,\n"
"                         with --frag or --bw 1..%u (default 1,8,16,32,56,64,\n"
"                         96,120; with --frag or --bw 8,64,120,256,1024,4096)\n"
"  -i, --iters N          timed round trips (--bw: messages) per size (default 1000)\n"
"  -w, --warmup N         untimed round trips (messages) per size first (default 100)\n"
"  -t, --timeout SEC      per-message and connection timeout (default 10)\n"
"      --frag             carry each message as <= 120-byte VELO fragments\n"
"      --bw               streaming bandwidth instead of latency (implies --frag)\n"
"      --verify           the server checks the data of every message\n"
XT_HELP_LATENCY_TAIL, PP_DEFAULT_PORT, FRAG_MAX_SIZE);
}

static const struct option tool_lopts[] = {
	{ "frag", no_argument, NULL, PP_FLAG_OPT(0) },
	{ "bw", no_argument, NULL, PP_FLAG_OPT(1) },
	{ "verify", no_argument, NULL, PP_FLAG_OPT(2) },
	{ NULL, 0, NULL, 0 }
};

/* --frag, --bw (implies --frag), --verify; fragments carry larger sizes */
static int tool_opt(struct pp_opts *o, int c, const char *arg)
{
	if (pp_flag_opt(o, c, arg))
		return -EINVAL;
	if (o->flags & FLAG_BW)
		o->flags |= FLAG_FRAG;
	if (o->flags & FLAG_FRAG) {
		o->max_size = FRAG_MAX_SIZE;
		o->default_sizes = DEF_FRAG_SIZES;
	}
	return 0;
}

static const struct pp_tool tool = {
	.name = TOOL,
	.max_size = VELO2_MAX_MSG_SIZE,
	.default_timeout_s = 10,
	.opts = PP_OPT_TIMING,
	.usage = usage,
	.default_sizes = DEF_SIZES,
	.tool_lopts = tool_lopts,
	.tool_opt = tool_opt,
};

struct link {
	velo2_port_t port;
	velo2_connection_t con;
	uint32_t peer_id;		/* VELO2_ADDR_PACK of the peer */
	double timeout_s;
	unsigned long retries;		/* sends refused with VELO2_RET_TRY_AGAIN */
};

static int send_frag(struct link *l, const void *buf, uint32_t len, uint8_t tag, uint8_t mtt)
{
	struct exa_wait w;
	velo2_ret_t r;

	exa_wait_init(&w, (int64_t)(l->timeout_s * 1e9));
	while ((r = velo2_send(&l->con, buf, len, tag, mtt)) == VELO2_RET_TRY_AGAIN) {
		l->retries++;
		if (exa_wait_poll(&w))
			break;
	}
	exa_wait_done(&w);
	if (r != VELO2_RET_SUCCESS) {
		fprintf(stderr, TOOL ": velo2_send: %s\n",
			r == VELO2_RET_TRY_AGAIN ? "no credit within the timeout" : "failed");
		return -1;
	}
	return 0;
}

/* Receives one fragment of at most buflen bytes from the peer. */
static int recv_frag(struct link *l, void *buf, uint32_t buflen, uint32_t *len, uint8_t *tag,
		     uint8_t *mtt)
{
	struct exa_wait w;
	uint32_t src = 0;
	velo2_ret_t r;

	exa_wait_init(&w, (int64_t)(l->timeout_s * 1e9));
	while ((r = velo2_probe_recv(&l->port, buf, buflen, len, &src, tag, mtt)) ==
	       VELO2_RET_NO_MSG) {
		if (exa_wait_poll(&w)) {
			fprintf(stderr, TOOL ": no message within %g s\n", l->timeout_s);
			return -1;
		}
	}
	exa_wait_done(&w);
	if (r != VELO2_RET_SUCCESS) {
		fprintf(stderr, TOOL ": velo2_probe_recv: %s\n", r == VELO2_RET_INV_MSG ?
			"message longer than the fragment expected, or with the error bit" :
			"failed");
		return -1;
	}
	if (src != l->peer_id) {
		fprintf(stderr, TOOL ": message from 0x%06x, expected 0x%06x\n", src, l->peer_id);
		return -1;
	}
	return 0;
}

static int send_msg(struct link *l, const uint8_t *buf, uint32_t size, uint8_t seq)
{
	uint32_t off = 0;

	do {
		uint32_t len = size - off < VELO2_MAX_MSG_SIZE ? size - off : VELO2_MAX_MSG_SIZE;

		if (send_frag(l, buf + off, len, seq, off + len == size ? MTT_LAST : MTT_MORE))
			return -1;
		off += len;
	} while (off < size);
	return 0;
}

/* Reassembles message 'seq' of 'size' bytes into buf; any deviation from
 * the framing is fatal (the stream can no longer be trusted). */
static int recv_msg(struct link *l, uint8_t *buf, uint32_t size, uint8_t seq)
{
	uint32_t off = 0, len;
	uint8_t tag, mtt;

	do {
		uint32_t want = size - off < VELO2_MAX_MSG_SIZE ? size - off : VELO2_MAX_MSG_SIZE;
		uint8_t last = off + want == size ? MTT_LAST : MTT_MORE;

		if (recv_frag(l, buf + off, want, &len, &tag, &mtt))
			return -1;
		if (len != want || tag != seq || mtt != last) {
			fprintf(stderr, TOOL ": message %u byte %u: fragment of %u bytes, tag %u, "
				"mtt %u; expected %u bytes, tag %u, mtt %u\n", seq, off, len, tag,
				mtt, want, seq, last);
			return -1;
		}
		off += len;
	} while (off < size);
	return 0;
}

static int recv_ack(struct link *l)
{
	uint32_t len;
	uint8_t tag, mtt;

	if (recv_frag(l, NULL, 0, &len, &tag, &mtt))
		return -1;
	if (len || mtt != MTT_ACK) {
		fprintf(stderr, TOOL ": expected the end-of-stream answer, got %u bytes mtt %u\n",
			len, mtt);
		return -1;
	}
	return 0;
}

/* Server: its data error count for one size, over the TCP connection. */
static int report_errors(int fd, const struct pp_opts *o, unsigned long *errors)
{
	uint64_t n = *errors;

	if (o->server)
		return pp_write_full(fd, &n, sizeof(n), o->timeout_s) ? -1 : 0;
	if (pp_read_full(fd, &n, sizeof(n), o->timeout_s))
		return -1;
	*errors += (unsigned long)n;
	return 0;
}

struct run {
	struct link *l;
	const struct pp_opts *o;
	int fd, verify;
	uint8_t *pat[2];		/* data patterns of even / odd messages */
	uint8_t *rbuf;
	uint64_t *rtt;
};

static const uint8_t *pattern(const struct run *r, unsigned long msg)
{
	return r->pat[r->verify ? msg & 1 : 0];
}

static int latency(struct run *r, uint32_t size, struct pp_result *res)
{
	const struct pp_opts *o = r->o;
	unsigned long total = o->warmup + o->iters, it, errors = 0;
	int64_t t0 = 0, tstart = 0;

	if (xt_sync(r->fd, o->timeout_s))
		return -1;
	for (it = 0; it < total; it++) {
		const uint8_t *msg = pattern(r, it);
		uint8_t seq = (uint8_t)it;

		if (o->client) {
			if (it == o->warmup)
				tstart = pp_timer_ns();
			if (!o->no_timing)
				t0 = pp_timer_ns();
			if (send_msg(r->l, msg, size, seq) || recv_msg(r->l, r->rbuf, size, seq))
				goto fail;
			if (!o->no_timing && it >= o->warmup)
				r->rtt[it - o->warmup] = (uint64_t)(pp_timer_ns() - t0);
			if (memcmp(r->rbuf, msg, size))
				errors++;
		} else {
			if (recv_msg(r->l, r->rbuf, size, seq))
				goto fail;
			if (r->verify && memcmp(r->rbuf, msg, size))
				errors++;
			if (send_msg(r->l, r->rbuf, size, seq))
				goto fail;
		}
	}
	if (o->client) {
		if (pp_size_result(o, TOOL, size, r->rtt, tstart, res))
			return -1;
		res->size = size;
	}
	if (report_errors(r->fd, o, &errors))
		return -1;
	res->errors = errors;
	return 0;
fail:
	fprintf(stderr, TOOL ": size %u, round trip %lu failed\n", size, it);
	return -1;
}

/* One stream of n messages, numbered from *msg on, and its answer. */
static int stream(struct run *r, uint32_t size, unsigned long n, unsigned long *msg,
		  unsigned long *errors, int64_t *ns)
{
	const struct pp_opts *o = r->o;
	unsigned long i;
	int64_t t0;

	if (xt_sync(r->fd, o->timeout_s))
		return -1;
	t0 = exa_clock_ns();
	for (i = 0; i < n; i++, (*msg)++) {
		const uint8_t *expect = pattern(r, *msg);

		if (o->client) {
			if (send_msg(r->l, expect, size, (uint8_t)*msg))
				goto fail;
		} else {
			if (recv_msg(r->l, r->rbuf, size, (uint8_t)*msg))
				goto fail;
			if (r->verify && memcmp(r->rbuf, expect, size))
				(*errors)++;
		}
	}
	if (o->client) {
		if (recv_ack(r->l))
			goto fail;
	} else if (send_frag(r->l, NULL, 0, 0, MTT_ACK)) {
		goto fail;
	}
	*ns = exa_clock_ns() - t0;
	return 0;
fail:
	fprintf(stderr, TOOL ": size %u, message %lu of %lu failed\n", size, i, n);
	return -1;
}

static int bandwidth(struct run *r, uint32_t size, struct pp_bw_result *res)
{
	const struct pp_opts *o = r->o;
	unsigned long msg = 0, errors = 0;
	int64_t ns = 0;

	if (o->warmup && stream(r, size, o->warmup, &msg, &errors, &ns))
		return -1;
	r->l->retries = 0;
	if (stream(r, size, o->iters, &msg, &errors, &ns))
		return -1;
	if (report_errors(r->fd, o, &errors))
		return -1;
	pp_bw_set(res, size, o->iters, ns);
	res->send_retries = r->l->retries;
	res->errors = errors;
	if (o->verbose && o->client)
		fprintf(stderr, TOOL ": size %u: %.2f MB/s\n", size, res->mb_s);
	return 0;
}

int main(int argc, char **argv)
{
	struct pp_opts o;
	struct xt_hello me, peer;
	struct pp_result lat[PP_MAX_SIZES];
	struct pp_bw_result bw[PP_MAX_SIZES];
	struct link l;
	struct run r;
	uint32_t flags, max;
	int fd, failed = 0;
	unsigned int si;

	if (pp_parse_args(argc, argv, &tool, &o))
		return PP_EXIT_USAGE;
	if (pp_timer_init(o.clock))
		return 1;
	/* credit shortage must come back as VELO2_RET_TRY_AGAIN (see send_frag) */
	if (setenv("VELO2_SEND_NONBLOCK", "1", 1))
		return 1;
	memset(&l, 0, sizeof(l));
	l.timeout_s = o.timeout_s;
	if (velo2_open(&l.port) != VELO2_RET_SUCCESS) {
		fprintf(stderr, TOOL ": velo2_open failed (no EXTOLL device?)\n");
		return 1;
	}
	memset(&me, 0, sizeof(me));
	me.node = velo2_get_nodeid(&l.port);
	me.vpid = velo2_get_vpid(&l.port);
	fd = xt_handshake(TOOL, &o, FRAG_MAX_SIZE, &me, &peer);	/* a server adopts o.flags */
	if (fd < 0)
		return 1;
	flags = o.flags & (FLAG_FRAG | FLAG_BW | FLAG_VERIFY);
	for (si = 0; si < o.nsizes; si++) {
		if (!(flags & FLAG_FRAG) && o.sizes[si] > VELO2_MAX_MSG_SIZE) {
			fprintf(stderr, TOOL ": size %u needs --frag\n", o.sizes[si]);
			return 1;
		}
	}
	max = pp_max_size(o.sizes, o.nsizes);
	if (velo2_connect(&l.port, &l.con, peer.node, peer.vpid) != VELO2_RET_SUCCESS) {
		fprintf(stderr, TOOL ": velo2_connect failed\n");
		return 1;
	}
	l.peer_id = (uint32_t)VELO2_ADDR_PACK(peer.node, peer.vpid);
	memset(&r, 0, sizeof(r));
	r.l = &l;
	r.o = &o;
	r.fd = fd;
	r.verify = !!(flags & FLAG_VERIFY);
	r.pat[0] = malloc(max);
	r.pat[1] = malloc(max);
	r.rbuf = malloc(max);
	r.rtt = calloc(o.client ? o.iters : 1, sizeof(*r.rtt));
	if (!r.pat[0] || !r.pat[1] || !r.rbuf || !r.rtt) {
		fprintf(stderr, TOOL ": out of memory\n");
		return 1;
	}
	pp_fill_pattern(r.pat[0], max, 3);
	pp_fill_pattern(r.pat[1], max, 4);
	memset(lat, 0, sizeof(lat));
	memset(bw, 0, sizeof(bw));
	for (si = 0; si < o.nsizes; si++) {
		int rc = flags & FLAG_BW ? bandwidth(&r, o.sizes[si], &bw[si]) :
			latency(&r, o.sizes[si], &lat[si]);

		if (rc)
			return 1;
		if (lat[si].errors || bw[si].errors) {
			fprintf(stderr, TOOL ": size %u: %lu data errors\n", o.sizes[si],
				lat[si].errors + bw[si].errors);
			failed = 1;
		}
	}
	xt_sync(fd, o.timeout_s);
	if (o.client && (flags & FLAG_BW)) {
		xt_print_bw(TOOL, "extoll-velo2-stream", "EXTOLL VELO stream of <= 120-byte fragments",
			    &o, me.node, peer.node, bw, o.nsizes);
	} else if (o.client) {
		const char *transport = flags & FLAG_FRAG ? "extoll-velo2-frag" : "extoll-velo2";

		if (o.json)
			pp_print_json(TOOL, transport, me.node, peer.node, &o, lat, o.nsizes);
		else
			pp_print_table(TOOL, transport, flags & FLAG_FRAG ?
				       "libvelo2, <= 120-byte fragments" : "libvelo2 send/recv",
				       &o, lat, o.nsizes);
	}
	velo2_disconnect(&l.port, &l.con);
	velo2_close(&l.port);
	close(fd);
	free(r.pat[0]);
	free(r.pat[1]);
	free(r.rbuf);
	free(r.rtt);
	return failed;
}
