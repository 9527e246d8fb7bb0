// SPDX-License-Identifier: MIT
/*
 * rma2-bw: EXTOLL RMA put (or get) bandwidth between two processes through
 * librma2.
 *
 * put (default): the client posts --iters puts of 'size' bytes back to
 * back into the server's buffer, only the last one with a completer
 * notification; commands on one connection complete in order, so when the
 * server sees that notification every put has landed, and it answers with
 * an immediate put into the client's memory.  Bandwidth = size * iters /
 * (first post .. answer).
 * --get: the client pulls from the server's buffer; the last get carries a
 * completer notification at the client.
 * --imm: immediate puts of 'size' (1..8) bytes into consecutive quadwords of
 * the server's buffer, the last with a completer notification (as put).
 * --noti: notification puts (8-byte payload = the sequence number, class
 * 1); every one is a completer notification at the server, which checks
 * the sequence of all of them before answering.  'size' is the payload
 * size counted (8).
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

#define TOOL "rma2-bw"

static void usage(FILE *f)
{
	fprintf(f,
PP_HELP_USAGE(TOOL)
PP_HELP_USAGE_CLIENT(TOOL)
"\n"
"Bandwidth of EXTOLL RMA puts (default) or gets (librma2) between two processes.\n"
"\n"
"  -s, --server           passive side\n"
"  -c, --client           drive the measurement\n"
PP_HELP_OOB_LISTEN
"                         (default port %u)\n"
"  -S, --sizes LIST       transfer sizes 1..%u bytes: 4096,65536, or 64-65536 =\n"
"                         64,128,..,65536 (default 64,1024,4096,65536,262144,\n"
"                         1048576,4194304)\n"
"  -i, --iters N          transfers per size (default 1000)\n"
"  -w, --warmup N         untimed transfers per size first (default 100)\n"
"  -t, --timeout SEC      per-size and connection timeout (default 60)\n"
"      --get              measure gets instead of puts\n"
"      --qw               quadword variants (sizes must be multiples of 8)\n"
"      --imm              immediate puts (sizes 1..8)\n"
"      --noti             notification puts (size 8: the payload)\n"
PP_HELP_JSON
PP_HELP_TAIL
"Exit status: 0 success, 1 run-time failure, 2 usage error.\n", PP_DEFAULT_PORT, XT_RMA2_MAX_SIZE);
}

/* o->flags */
enum { FLAG_QW = 1, FLAG_GET = 2, FLAG_IMM = 4, FLAG_NOTI = 8 };

static const struct option tool_lopts[] = {
	{ "qw", no_argument, NULL, PP_FLAG_OPT(0) },
	{ "get", no_argument, NULL, PP_FLAG_OPT(1) },
	{ "imm", no_argument, NULL, PP_FLAG_OPT(2) },
	{ "noti", no_argument, NULL, PP_FLAG_OPT(3) },
	{ NULL, 0, NULL, 0 }
};

static int check_opts(struct pp_opts *o)
{
	uint32_t f = o->flags;

	if (f & (f - 1)) {
		fprintf(stderr, TOOL ": --qw, --get, --imm and --noti exclude each other\n");
		return -EINVAL;
	}
	if (f & FLAG_QW)
		return xt_check_qw_sizes(TOOL, o);
	/* the server adopts the client's sizes in the handshake */
	if (!o->client || !(f & (FLAG_IMM | FLAG_NOTI)))
		return 0;
	for (unsigned int si = 0; si < o->nsizes; si++) {
		if (o->sizes[si] > 8 || ((f & FLAG_NOTI) && o->sizes[si] != 8)) {
			fprintf(stderr, TOOL ": --imm takes sizes 1..8, --noti size 8\n");
			return -EINVAL;
		}
	}
	return 0;
}

static const struct pp_tool tool = {
	.name = TOOL,
	.max_size = XT_RMA2_MAX_SIZE,
	.default_timeout_s = 60,
	.usage = usage,
	.default_sizes = "64,1024,4096,65536,262144,1048576,4194304",
	.tool_lopts = tool_lopts,
	.tool_opt = pp_flag_opt,
	.check = check_opts,
};

int main(int argc, char **argv)
{
	struct pp_opts o;
	struct xt_rma2 x;
	struct pp_bw_result res[PP_MAX_SIZES];
	RMA2_Region *buf_reg = NULL;
	RMA2_ERROR rc;
	uint8_t *buf;
	size_t bsize;
	volatile uint64_t *ack;
	int qw, get, imm, noti;
	unsigned int si;

	if (pp_parse_args(argc, argv, &tool, &o))
		return PP_EXIT_USAGE;
	memset(res, 0, sizeof(res));
	/* a server adopts the client's o.flags */
	if (xt_rma2_open(TOOL, &o, XT_RMA2_MAX_SIZE, &x))
		return 1;
	qw = !!(o.flags & FLAG_QW);
	get = !!(o.flags & FLAG_GET);
	imm = !!(o.flags & FLAG_IMM);
	noti = !!(o.flags & FLAG_NOTI);
	/* one buffer: the run's largest size + a page holding the ack quadword */
	bsize = xt_buffer_size(&o);
	buf = aligned_alloc(4096, bsize + 4096);
	if (!buf)
		return 1;
	pp_fill_pattern(buf, bsize, 2);
	ack = (volatile uint64_t *)(buf + bsize);
	*ack = 0;
	if (xt_register(TOOL, x.port, buf, bsize + 4096, bsize + 4096, &buf_reg))
		return 1;
	if (xt_rma2_connect(TOOL, &x, &o, buf_reg, bsize))
		return 1;
	for (si = 0; si < o.nsizes; si++) {
		uint32_t size = o.sizes[si];
		int64_t t0 = 0, t1;
		int pass;

		for (pass = 0; pass < 2; pass++) {	/* warm-up, then timed */
			unsigned long n = pass ? o.iters : o.warmup, i;

			if (!n)
				continue;
			*ack = 0;
			if (xt_sync(x.fd, o.timeout_s))
				return 1;
			if (o.client) {
				t0 = exa_clock_ns();
				for (i = 0; i < n; i++) {
					RMA2_Notification_Spec spec = i == n - 1 ?
						RMA2_COMPLETER_NOTIFICATION : RMA2_NO_NOTIFICATION;

					if (imm)
						rc = rma2_post_immediate_put(x.port, x.h, size, i,
							x.peerbuf.nla + (i * 8) % x.peerbuf.size, spec, 0);
					else if (noti)
						rc = rma2_post_notification(x.port, x.h, 1, i,
							RMA2_COMPLETER_NOTIFICATION, 0);
					else if (get)
						rc = qw ? rma2_post_get_qw(x.port, x.h, buf_reg, 0, size,
									   x.peerbuf.nla, spec, 0)
							: rma2_post_get_bt(x.port, x.h, buf_reg, 0, size,
									   x.peerbuf.nla, spec, 0);
					else
						rc = qw ? rma2_post_put_qw(x.port, x.h, buf_reg, 0, size,
									   x.peerbuf.nla, spec, 0)
							: rma2_post_put_bt(x.port, x.h, buf_reg, 0, size,
									   x.peerbuf.nla, spec, 0);
					if (rc) {
						rma2_perror(rc, TOOL ": post");
						return 1;
					}
				}
				if (get) {
					if (xt_wait_noti(x.port, o.timeout_s)) {
						fprintf(stderr, TOOL ": size %u: no/failed completion\n", size);
						return 1;
					}
				} else {
					struct exa_wait w;

					exa_wait_init(&w, (int64_t)(o.timeout_s * 1e9));
					while (*ack == 0) {
						if (exa_wait_poll(&w)) {
							fprintf(stderr, TOOL ": size %u: no answer\n", size);
							return 1;
						}
					}
					exa_wait_done(&w);
				}
				t1 = exa_clock_ns();
				if (pass) {
					pp_bw_set(&res[si], size, n, t1 - t0);
					if (o.verbose)
						fprintf(stderr, TOOL ": size %u: %.1f MB/s\n", size,
							res[si].mb_s);
				}
			} else if (noti) {
				/* every notification put, in order, then answer */
				for (unsigned long k = 0; k < n; k++) {
					RMA2_Notification *nt;
					struct exa_wait w;

					exa_wait_init(&w, (int64_t)(o.timeout_s * 1e9));
					while (rma2_noti_probe(x.port, &nt) != RMA2_SUCCESS) {
						if (exa_wait_poll(&w)) {
							fprintf(stderr, TOOL ": notification put %lu of %lu "
								"missing\n", k, n);
							return 1;
						}
					}
					exa_wait_done(&w);
					if (rma2_noti_get_error(nt) ||
					    rma2_noti_get_notiput_payload(nt) != k) {
						fprintf(stderr, TOOL ": notification put %lu: error %d "
							"payload %llu\n", k, rma2_noti_get_error(nt),
							(unsigned long long)rma2_noti_get_notiput_payload(nt));
						return 1;
					}
					rma2_noti_free(x.port, nt);
				}
				rc = rma2_post_immediate_put(x.port, x.h, 8, 1,
							     x.peerbuf.nla + x.peerbuf.size, 0, 0);
				if (rc)
					return 1;
			} else if (!get) {
				/* last put's completer notification, then answer */
				if (xt_wait_noti(x.port, o.timeout_s)) {
					fprintf(stderr, TOOL ": size %u: no/failed completion\n", size);
					return 1;
				}
				rc = rma2_post_immediate_put(x.port, x.h, 8, 1,
							     x.peerbuf.nla + x.peerbuf.size, 0, 0);
				if (rc)
					return 1;
			}
		}
	}
	xt_sync(x.fd, o.timeout_s);
	if (o.client) {
		const char *what = imm ? "imm-put" : noti ? "noti-put" :
			get ? (qw ? "get-qw" : "get-bt") : (qw ? "put-qw" : "put-bt");
		char transport[64], desc[64];

		snprintf(transport, sizeof(transport), "extoll-rma2-%s", what);
		snprintf(desc, sizeof(desc), "EXTOLL RMA %s", what);
		xt_print_bw(TOOL, transport, desc, &o, x.me.node, x.peer.node, res, o.nsizes);
	}
	xt_rma2_close(&x, buf_reg, NULL);
	return 0;
}
