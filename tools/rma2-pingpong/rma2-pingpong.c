// SPDX-License-Identifier: MIT
/*
 * rma2-pingpong: RMA put ping-pong latency between two nodes through
 * librma2 (or on one node with two processes).
 *
 * Each side registers a receive buffer; the client puts 'size' bytes into
 * the server's buffer with rma2_post_put_bt (no notification, as
 * pscom4extoll does), the server polls the last byte of the message in its
 * own memory, then puts the same size back.  The last byte carries a
 * per-iteration tag; the NIC makes it visible only after the bytes before
 * it.  --noti: every put carries a completer notification and the receiver
 * waits for that instead (then the tag must already be there).  --get: the
 * client gets 'size' bytes from the server's buffer with a completer
 * notification and waits for it; the server only waits (the figures are
 * RTT/2 as for puts: a get's round trip is twice the median).  No system
 * calls in the loop.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rma2.h>

#include "exa_wait.h"
#include "rma2_tool.h"

#define TOOL "rma2-pingpong"

static void usage(FILE *f)
{
	fprintf(f,
PP_HELP_USAGE(TOOL)
PP_HELP_USAGE_CLIENT(TOOL)
"\n"
"One-way latency (RTT/2) of EXTOLL RMA puts (librma2) between two processes.\n"
"\n"
"  -s, --server           wait for a client and echo its puts\n"
"  -c, --client           drive the measurement\n"
PP_HELP_OOB_LISTEN
"                         (default port %u)\n"
"  -S, --sizes LIST       message sizes 1..%u bytes: 8,64, or 1-64 = 1,2,4,..,64\n"
"                         (default 1,8,64,256,1024,4096,16384,65536)\n"
PP_HELP_ROUND_TRIPS
"  -t, --timeout SEC      per-message and connection timeout (default 10)\n"
"      --qw               quadword puts (sizes must be multiples of 8)\n"
"      --noti             the receiver waits for a completer notification\n"
"                         instead of polling the last byte\n"
"      --get              the client gets from the server's buffer and waits\n"
"                         for the completer notification (RTT = get latency)\n"
XT_HELP_LATENCY_TAIL, PP_DEFAULT_PORT, XT_RMA2_MAX_SIZE);
}

/* o->flags */
enum { FLAG_QW = 1, FLAG_NOTI = 2, FLAG_GET = 4 };

static const struct option tool_lopts[] = {
	{ "qw", no_argument, NULL, PP_FLAG_OPT(0) },
	{ "noti", no_argument, NULL, PP_FLAG_OPT(1) },
	{ "get", no_argument, NULL, PP_FLAG_OPT(2) },
	{ NULL, 0, NULL, 0 }
};

static int check_opts(struct pp_opts *o)
{
	return o->flags & FLAG_QW ? xt_check_qw_sizes(TOOL, o) : 0;
}

static const struct pp_tool tool = {
	.name = TOOL,
	.max_size = XT_RMA2_MAX_SIZE,
	.default_timeout_s = 10,
	.opts = PP_OPT_TIMING,
	.usage = usage,
	.default_sizes = "1,8,64,256,1024,4096,16384,65536",
	.tool_lopts = tool_lopts,
	.tool_opt = pp_flag_opt,
	.check = check_opts,
};

static int wait_tag(volatile uint8_t *p, uint8_t tag, double tmo)
{
	struct exa_wait w;

	exa_wait_init(&w, (int64_t)(tmo * 1e9));
	while (*p != tag)
		if (exa_wait_poll(&w))
			return -1;
	exa_wait_done(&w);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return 0;
}

static int put(RMA2_Port port, RMA2_Handle h, RMA2_Region *sreg, uint32_t size, RMA2_NLA dst,
	       int qw, int noti)
{
	RMA2_Notification_Spec spec = noti ? RMA2_COMPLETER_NOTIFICATION : RMA2_NO_NOTIFICATION;
	RMA2_ERROR rc = qw ? rma2_post_put_qw(port, h, sreg, 0, size, dst, spec, 0)
			   : rma2_post_put_bt(port, h, sreg, 0, size, dst, spec, 0);

	if (rc)
		rma2_perror(rc, TOOL ": post put");
	return rc ? -1 : 0;
}

/* One get of size bytes into rreg from the peer's buffer, waited for. */
static int get(RMA2_Port port, RMA2_Handle h, RMA2_Region *rreg, uint32_t size,
	       RMA2_NLA src, int qw, double tmo)
{
	RMA2_ERROR rc = qw ? rma2_post_get_qw(port, h, rreg, 0, size, src,
					      RMA2_COMPLETER_NOTIFICATION, 0)
			   : rma2_post_get_bt(port, h, rreg, 0, size, src,
					      RMA2_COMPLETER_NOTIFICATION, 0);

	if (rc) {
		rma2_perror(rc, TOOL ": post get");
		return -1;
	}
	return xt_wait_noti(port, tmo);
}

/* The peer's put has landed: its last byte carries 'tag'. */
static int wait_put(RMA2_Port port, volatile uint8_t *last, uint8_t tag, int noti, double tmo)
{
	if (!noti)
		return wait_tag(last, tag, tmo);
	if (xt_wait_noti(port, tmo)) {
		fprintf(stderr, TOOL ": no or failed completer notification\n");
		return -1;
	}
	if (*last != tag) {
		fprintf(stderr, TOOL ": notification before the data\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct pp_opts o;
	struct xt_rma2 x;
	struct pp_result res[PP_MAX_SIZES];
	RMA2_Region *rreg = NULL, *sreg = NULL;
	uint8_t *rbuf, *sbuf;
	size_t bsize;
	uint64_t *rtt;
	int qw, noti, do_get;
	unsigned int si;

	if (pp_parse_args(argc, argv, &tool, &o))
		return PP_EXIT_USAGE;
	if (pp_timer_init(o.clock))
		return 1;
	if (xt_rma2_open(TOOL, &o, XT_RMA2_MAX_SIZE, &x))
		return 1;
	qw = !!(o.flags & FLAG_QW);
	noti = !!(o.flags & FLAG_NOTI);
	do_get = !!(o.flags & FLAG_GET);
	/* Only what the run's sizes need is allocated and registered. */
	bsize = xt_buffer_size(&o);
	rbuf = aligned_alloc(4096, bsize);
	sbuf = aligned_alloc(4096, bsize);
	rtt = calloc(o.iters, sizeof(*rtt));
	if (!rbuf || !sbuf || !rtt)
		return 1;
	memset(rbuf, 0, bsize);
	pp_fill_pattern(sbuf, bsize, 1);
	if (xt_register(TOOL, x.port, rbuf, bsize, 2 * bsize, &rreg) ||
	    xt_register(TOOL, x.port, sbuf, bsize, 2 * bsize, &sreg))
		return 1;
	if (xt_rma2_connect(TOOL, &x, &o, rreg, bsize))
		return 1;
	if (o.verbose)
		fprintf(stderr, TOOL ": local node %u vpid %u, peer node %u vpid %u\n", x.me.node,
			x.me.vpid, x.peer.node, x.peer.vpid);

	for (si = 0; si < o.nsizes; si++) {
		uint32_t size = o.sizes[si];
		unsigned long total = o.warmup + o.iters, it;
		volatile uint8_t *last = rbuf + size - 1;
		int64_t t0 = 0, tstart = 0;
		unsigned long errors = 0;

		if (do_get && o.server)
			memcpy(rbuf, sbuf, size);	/* what the client gets: same bytes every size */
		else
			memset(rbuf, 0, size);
		if (xt_sync(x.fd, o.timeout_s))
			return 1;
		for (it = 0; it < total && !(do_get && o.server); it++) {
			uint8_t tag = (uint8_t)(it % 255 + 1);

			if (!do_get)
				sbuf[size - 1] = tag;
			if (o.client) {
				if (it == o.warmup)
					tstart = pp_timer_ns();
				if (!o.no_timing)
					t0 = pp_timer_ns();
				if (do_get ? get(x.port, x.h, rreg, size, x.peerbuf.nla, qw, o.timeout_s) :
				    put(x.port, x.h, sreg, size, x.peerbuf.nla, qw, noti) ||
				    wait_put(x.port, last, tag, noti, o.timeout_s)) {
					fprintf(stderr, TOOL ": size %u iteration %lu failed\n", size, it);
					return 1;
				}
				if (!o.no_timing && it >= o.warmup)
					rtt[it - o.warmup] = (uint64_t)(pp_timer_ns() - t0);
			} else {
				if (wait_put(x.port, last, tag, noti, o.timeout_s) ||
				    put(x.port, x.h, sreg, size, x.peerbuf.nla, qw, noti)) {
					fprintf(stderr, TOOL ": size %u iteration %lu failed\n", size, it);
					return 1;
				}
			}
		}
		if (o.client) {
			if (pp_size_result(&o, TOOL, size, rtt, tstart, &res[si]))
				errors++;
			/* data check of the last echo */
			if (memcmp(rbuf, sbuf, size - 1))
				errors++;
			res[si].size = size;
			res[si].errors = errors;
			if (o.verbose)
				fprintf(stderr, TOOL ": size %u: %.2f us\n", size, res[si].median_us);
		}
	}
	xt_sync(x.fd, o.timeout_s);
	if (o.client) {
		char transport[64];

		snprintf(transport, sizeof(transport), "extoll-rma2-%s-%s%s",
			 do_get ? "get" : "put", qw ? "qw" : "bt", noti && !do_get ? "-noti" : "");
		if (o.json)
			pp_print_json(TOOL, transport, x.me.node, x.peer.node, &o, res, o.nsizes);
		else
			pp_print_table(TOOL, transport, do_get ? "librma2 get, completer notification" :
				       noti ? "librma2 put, completer notification"
				       : "librma2 put, tail polling", &o, res, o.nsizes);
	}
	xt_rma2_close(&x, rreg, sreg);
	for (si = 0; o.client && si < o.nsizes; si++)
		if (res[si].errors)
			return 1;
	return 0;
}
