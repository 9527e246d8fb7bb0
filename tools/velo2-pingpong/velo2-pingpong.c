// SPDX-License-Identifier: MIT
/*
 * velo2-pingpong: VELO small-message ping-pong latency (libvelo2) between
 * two processes: the client sends 'size' bytes (<= 120), the server
 * receives with velo2_recv (blocking) and sends the message back.  No
 * system calls in the loop.
 */
#include <getopt.h>

#include <velo2.h>

#include "extoll_tool.h"

#define TOOL "velo2-pingpong"

static const unsigned int def_sizes[] = { 1, 8, 16, 32, 56, 64, 96, 120 };

static void usage(FILE *f)
{
	fprintf(f,
"usage: " TOOL " --server [--oob [HOST:]PORT] [options]\n"
"       " TOOL " --client --oob HOST:PORT [options]\n"
"\n"
"One-way latency (RTT/2) of EXTOLL VELO messages (libvelo2) between two processes.\n"
"\n"
"  -s, --server           wait for a client and echo its messages\n"
"  -c, --client           drive the measurement\n"
"  -o, --oob HOST:PORT    server: [HOST:]PORT to listen on; client: server address\n"
"                         (default port %u)\n"
"  -S, --sizes LIST       message sizes 1..120 (default 1,8,16,32,56,64,96,120)\n"
"  -i, --iters N          timed round trips per size (default 1000)\n"
"  -w, --warmup N         untimed round trips per size first (default 100)\n"
"  -t, --timeout SEC      per-message and connection timeout (default 10)\n"
"      --no-timing        only the total time per size (avg only)\n"
"      --clock MODE       auto (default), monotonic, tsc\n"
"  -j, --json             machine-readable output on stdout\n"
"  -v, --verbose          progress on stderr\n"
"  -h, --help             this help\n"
"\n"
"Exit status: 0 success, 1 run-time failure, 2 usage error.\n", PP_DEFAULT_PORT);
}

static const struct pp_tool tool = { TOOL, VELO2_MAX_MSG_SIZE, 10.0, 0, usage };

static velo2_ret_t recv_tmo(velo2_port_t *p, void *buf, uint32_t *len, uint32_t *src, double tmo)
{
	uint8_t tag, mtt;
	unsigned long spins = 0;
	int64_t end = pp_now_ns() + (int64_t)(tmo * 1e9);
	velo2_ret_t r;

	while ((r = velo2_probe_recv(p, buf, VELO2_MAX_MSG_SIZE, len, src, &tag, &mtt)) ==
	       VELO2_RET_NO_MSG) {
		if ((++spins & 0xffff) == 0) {
			if (pp_now_ns() > end)
				return r;
			sched_yield();
		}
	}
	return r;
}

int main(int argc, char **argv)
{
	struct pp_opts o;
	struct xt_hello me, peer;
	struct pp_result res[PP_MAX_SIZES];
	velo2_port_t port;
	velo2_connection_t con;
	uint8_t msg[VELO2_MAX_MSG_SIZE], got[VELO2_MAX_MSG_SIZE];
	uint64_t *rtt;
	uint32_t peer_id;
	int fd, sizes_given;
	unsigned int si;

	sizes_given = xt_has_opt(argc, argv, "--sizes", "-S");
	if (pp_parse_args(argc, argv, &tool, &o))
		return PP_EXIT_USAGE;
	if (!sizes_given) {
		o.nsizes = sizeof(def_sizes) / sizeof(def_sizes[0]);
		memcpy(o.sizes, def_sizes, sizeof(def_sizes));
	}
	if (pp_timer_init(o.clock ? o.clock : "auto"))
		return 1;
	memset(&port, 0, sizeof(port));
	memset(&con, 0, sizeof(con));
	if (velo2_open(&port) != VELO2_RET_SUCCESS) {
		fprintf(stderr, TOOL ": velo2_open failed (no EXTOLL device?)\n");
		return 1;
	}
	rtt = calloc(o.iters, sizeof(*rtt));
	if (!rtt)
		return 1;
	memset(&me, 0, sizeof(me));
	me.node = velo2_get_nodeid(&port);
	me.vpid = velo2_get_vpid(&port);
	fd = xt_handshake(TOOL, &o, VELO2_MAX_MSG_SIZE, &me, &peer);
	if (fd < 0)
		return 1;
	if (velo2_connect(&port, &con, peer.node, peer.vpid) != VELO2_RET_SUCCESS) {
		fprintf(stderr, TOOL ": velo2_connect failed\n");
		return 1;
	}
	peer_id = (uint32_t)VELO2_ADDR_PACK(peer.node, peer.vpid);
	pp_fill_pattern(msg, sizeof(msg), 3);
	for (si = 0; si < o.nsizes; si++) {
		uint32_t size = o.sizes[si], len = 0, src = 0;
		unsigned long total = o.warmup + o.iters, it, errors = 0;
		int64_t t0 = 0, tstart = 0;

		if (xt_sync(fd, o.timeout_s))
			return 1;
		for (it = 0; it < total; it++) {
			if (o.client) {
				if (it == o.warmup)
					tstart = pp_timer_ns();
				if (!o.no_timing)
					t0 = pp_timer_ns();
				if (velo2_send(&con, msg, size, 0, 0) != VELO2_RET_SUCCESS ||
				    recv_tmo(&port, got, &len, &src, o.timeout_s) != VELO2_RET_SUCCESS) {
					fprintf(stderr, TOOL ": size %u iteration %lu failed\n", size, it);
					return 1;
				}
				if (!o.no_timing && it >= o.warmup)
					rtt[it - o.warmup] = (uint64_t)(pp_timer_ns() - t0);
				if (len != size || src != peer_id || memcmp(got, msg, size))
					errors++;
			} else {
				if (recv_tmo(&port, got, &len, &src, o.timeout_s) != VELO2_RET_SUCCESS ||
				    velo2_send(&con, got, len, 0, 0) != VELO2_RET_SUCCESS) {
					fprintf(stderr, TOOL ": size %u iteration %lu failed\n", size, it);
					return 1;
				}
			}
		}
		if (o.client) {
			if (o.no_timing)
				pp_stats_total((uint64_t)(pp_timer_ns() - tstart), o.iters, &res[si]);
			else
				pp_stats(rtt, o.iters, &res[si]);
			res[si].size = size;
			res[si].errors = errors;
		}
	}
	xt_sync(fd, o.timeout_s);
	if (o.client) {
		if (o.json)
			pp_print_json(TOOL, "extoll-velo2", me.node, peer.node, &o, res, o.nsizes);
		else
			pp_print_table(TOOL, "extoll-velo2", "libvelo2 send/recv", &o, res, o.nsizes);
	}
	velo2_disconnect(&port, &con);
	velo2_close(&port);
	close(fd);
	for (si = 0; o.client && si < o.nsizes; si++)
		if (res[si].errors)
			return 1;
	return 0;
}
