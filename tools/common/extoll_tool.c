// SPDX-License-Identifier: MIT
/* What the EXTOLL tools share: see extoll_tool.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "extoll_tool.h"

int xt_handshake(const char *tool, struct pp_opts *o, unsigned int max_size, struct xt_hello *me,
		 struct xt_hello *peer)
{
	int fd;

	me->magic = XT_MAGIC;
	me->version = XT_VERSION;
	me->run.flags = o->flags;
	if (o->client) {
		pp_run_offer(&me->run, o->sizes, o->nsizes, o->iters, o->warmup, o->flags);
		fd = pp_tcp_connect(o->oob_host, o->oob_port, o->timeout_s);
	} else {
		int lfd = pp_tcp_listen(o->oob_host[0] ? o->oob_host : NULL, o->oob_port);

		if (lfd < 0) {
			fprintf(stderr, "%s: cannot listen on port %u: %s\n", tool, o->oob_port,
				strerror(-lfd));
			return -1;
		}
		if (o->verbose)
			fprintf(stderr, "%s: waiting for a client on port %u\n", tool, o->oob_port);
		fd = pp_tcp_accept(lfd, 3600);
		close(lfd);
	}
	if (fd < 0) {
		fprintf(stderr, "%s: out-of-band connection failed: %s\n", tool, strerror(-fd));
		return -1;
	}
	if (pp_write_full(fd, me, sizeof(*me), o->timeout_s) ||
	    pp_read_full(fd, peer, sizeof(*peer), o->timeout_s) || peer->magic != XT_MAGIC ||
	    peer->version != XT_VERSION) {
		fprintf(stderr, "%s: handshake failed\n", tool);
		close(fd);
		return -1;
	}
	if (o->server && pp_run_adopt(tool, &peer->run, max_size, o->sizes, &o->nsizes,
				      &o->iters, &o->warmup)) {
		close(fd);
		return -1;
	}
	if (o->server)
		o->flags = peer->run.flags;
	return fd;
}

int xt_exchange_buffer(const char *tool, int fd, double tmo, const struct xt_buffer *me,
		       struct xt_buffer *peer, uint64_t need)
{
	if (pp_write_full(fd, me, sizeof(*me), tmo) ||
	    pp_read_full(fd, peer, sizeof(*peer), tmo)) {
		fprintf(stderr, "%s: buffer exchange failed\n", tool);
		return -1;
	}
	if (peer->size < need) {
		fprintf(stderr, "%s: peer buffer of %llu bytes is too small\n", tool,
			(unsigned long long)peer->size);
		return -1;
	}
	return 0;
}

int xt_sync(int fd, double tmo)
{
	char c = 'x';

	if (pp_write_full(fd, &c, 1, tmo) || pp_read_full(fd, &c, 1, tmo))
		return -1;
	return 0;
}

void xt_print_bw(const char *tool, const char *transport, const char *desc, const struct pp_opts *o,
		 uint32_t node, uint32_t peer_node, const struct pp_bw_result *res, unsigned int n)
{
	if (o->json) {
		json_object *j = pp_bw_json(tool, transport, o, node, peer_node);

		pp_bw_json_rows(j, res, n);
		tj_print(j, 0);
		return;
	}
	printf("# %s: %s, node %u -> node %u, %lu transfers per size\n", tool, desc, node,
	       peer_node, o->iters);
	pp_bw_table(res, n);
	fflush(stdout);
}

int xt_check_qw_sizes(const char *tool, const struct pp_opts *o)
{
	for (unsigned int i = 0; i < o->nsizes; i++)
		if (o->sizes[i] & 7) {
			fprintf(stderr, "%s: --qw needs sizes that are multiples of 8\n", tool);
			return -EINVAL;
		}
	return 0;
}
