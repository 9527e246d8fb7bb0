// SPDX-License-Identifier: MIT
/*
 * udp-pingpong: the kernel-socket baseline for exanet-pingpong.  Same
 * options and output, over UDP on the management network.  A zero-length
 * datagram from the client ends the server.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pp_common.h"

#define TOOL "udp-pingpong"
#define UDP_MAX_PAYLOAD 64


static void usage(FILE *f)
{
	fprintf(f,
PP_HELP_USAGE(TOOL)
PP_HELP_USAGE_CLIENT(TOOL)
"\n"
"One-way latency (RTT/2) of UDP datagrams between two nodes over the kernel\n"
"socket path (the baseline for exanet-pingpong; same options and output).\n"
"\n"
"  -s, --server           echo datagrams until the client says goodbye\n"
"  -c, --client           drive the measurement\n"
"  -o, --oob HOST:PORT    server: [HOST:]PORT to bind; client: server address\n"
"                         (default port %u)\n"
"  -n, --peer-node N      accepted for compatibility, ignored\n"
"  -S, --sizes LIST       payload sizes 1..64: 8,16,64, or 1-64 = 1,2,4,..,64\n"
PP_HELP_ROUND_TRIPS
"  -t, --timeout SEC      per-reply timeout before a retransmission (default 1),\n"
"                         server: idle timeout x 60\n"
PP_HELP_SAMPLES
PP_HELP_NO_TIMING
PP_HELP_CLOCK
PP_HELP_JSON
PP_HELP_TAIL
"Exit status: 0 success, 1 runtime error, 2 usage error.\n", PP_DEFAULT_PORT);
}

static const struct pp_tool udp_pp_tool = {
	.name = TOOL,
	.max_size = UDP_MAX_PAYLOAD,
	.default_timeout_s = 1,
	.opts = PP_OPT_PEER | PP_OPT_TIMING,
	.usage = usage,
};

static int run_server(const struct pp_opts *o)
{
	struct sockaddr_storage ss, peer;
	unsigned int sl;
	unsigned long echoed = 0;
	char buf[2048];
	int fd, err, one = 1;

	err = pp_resolve(o->oob_host, o->oob_port, SOCK_DGRAM, &ss, &sl);
	if (err) {
		fprintf(stderr, TOOL ": cannot resolve '%s'\n", o->oob_host);
		return 1;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror(TOOL ": socket");
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0) {
		fprintf(stderr, TOOL ": bind port %u: %s\n", o->oob_port, strerror(errno));
		close(fd);
		return 1;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		socklen_t pl = sizeof(peer);
		ssize_t n;
		int pr = poll(&pfd, 1, (int)(o->timeout_s * 60 * 1000));

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			fprintf(stderr, TOOL ": server idle for %.0f s, giving up\n",
				o->timeout_s * 60);
			err = -ETIMEDOUT;
			break;
		}
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &pl);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			perror(TOOL ": recvfrom");
			break;
		}
		if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&peer, pl) < 0) {
			err = -errno;
			perror(TOOL ": sendto");
			break;
		}
		if (n == 0)
			break;	/* goodbye, already acknowledged by the echo */
		echoed++;
	}
	if (!err && !o->json)
		printf("# " TOOL " server: echoed %lu datagrams\n", echoed);
	close(fd);
	return err ? 1 : 0;
}

static int run_client(const struct pp_opts *o)
{
	struct sockaddr_storage ss;
	struct pp_result res[PP_MAX_SIZES];
	struct timeval tv;
	uint8_t out[UDP_MAX_PAYLOAD], in[2048];
	uint64_t *rtt;
	unsigned int sl, s;
	char desc[300];
	int fd, err = 0;

	if (pp_resolve(o->oob_host, o->oob_port, SOCK_DGRAM, &ss, &sl)) {
		fprintf(stderr, TOOL ": cannot resolve '%s'\n", o->oob_host);
		return 1;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sl) < 0) {
		perror(TOOL ": socket/connect");
		return 1;
	}
	tv.tv_sec = (time_t)o->timeout_s;
	tv.tv_usec = (suseconds_t)((o->timeout_s - (double)tv.tv_sec) * 1e6);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	rtt = calloc(o->iters, sizeof(*rtt));
	if (!rtt) {
		close(fd);
		return 1;
	}
	for (s = 0; s < o->nsizes && !err; s++) {
		unsigned int len = o->sizes[s];
		unsigned long it, total = o->warmup + o->iters;
		int64_t t_start = 0, t0 = 0;

		memset(&res[s], 0, sizeof(res[s]));
		res[s].size = len;
		for (it = 0; it < total; it++) {
			unsigned int tries = 0;
			ssize_t n;

			pp_fill_pattern(out, len, (uint32_t)(it * 131 + len));
			if (it == o->warmup)
				t_start = pp_timer_ns();
			if (!o->no_timing)
				t0 = pp_timer_ns();
			for (;;) {
				if (send(fd, out, len, 0) < 0) {
					err = -errno;
					break;
				}
				n = recv(fd, in, sizeof(in), 0);
				/* skip stale replies of a retransmitted datagram */
				while (n >= 0 && ((size_t)n != len || memcmp(in, out, len)))
					n = recv(fd, in, sizeof(in), 0);
				if (n >= 0)
					break;
				if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
				    errno != ECONNREFUSED) {
					err = -errno;
					break;
				}
				res[s].errors++;	/* lost: retransmit */
				if (++tries >= 10) {
					err = -ETIMEDOUT;
					break;
				}
			}
			if (err) {
				fprintf(stderr, TOOL ": size %u iteration %lu: %s\n", len, it,
					strerror(-err));
				break;
			}
			if (!o->no_timing && it >= o->warmup)
				rtt[it - o->warmup] = (uint64_t)(pp_timer_ns() - t0);
		}
		if (err || (err = pp_size_result(o, TOOL, len, rtt, t_start, &res[s])))
			break;
		if (o->verbose)
			fprintf(stderr, TOOL ": size %u done\n", len);
	}
	/* goodbye: zero-length datagram, best effort */
	for (s = 0; s < 3; s++) {
		if (send(fd, out, 0, 0) < 0)
			break;
		if (recv(fd, in, sizeof(in), 0) == 0)
			break;
	}
	close(fd);
	free(rtt);
	if (err)
		return 1;
	snprintf(desc, sizeof(desc), "to %s:%u", o->oob_host, o->oob_port);
	if (o->json)
		pp_print_json(TOOL, "udp", -1, o->peer_node, o, res, o->nsizes);
	else
		pp_print_table(TOOL, "udp", desc, o, res, o->nsizes);
	return 0;
}

int main(int argc, char **argv)
{
	return pp_main(argc, argv, &udp_pp_tool, run_server, run_client);
}
