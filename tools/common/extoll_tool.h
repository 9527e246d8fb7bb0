/* SPDX-License-Identifier: MIT */
/*
 * Shared by rma2-pingpong, rma2-bw and velo2-pingpong: the TCP handshake on
 * the management network (exchange of EXTOLL addresses and run
 * parameters) on top of pp_common, bandwidth results, and (with rma2.h
 * included first) waiting for a notification.
 */
#ifndef EXTOLL_TOOL_H
#define EXTOLL_TOOL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "exa_wait.h"
#include "pp_common.h"

#define XT_MAGIC 0x58544f4cu	/* "XTOL" */

/* The end of the latency tools' help (rma2-pingpong, velo2-pingpong). */
#define XT_HELP_LATENCY_TAIL \
	PP_HELP_SAMPLES \
	PP_HELP_NO_TIMING \
	"      --clock MODE       auto (default), monotonic, tsc\n" \
	PP_HELP_JSON \
	PP_HELP_TAIL \
	"Exit status: 0 success, 1 run-time failure (device, connection, data\n" \
	"error), 2 usage error.\n"

#define XT_VERSION 2	/* 2: buffers are exchanged after the run parameters */

struct xt_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t node;		/* RMA2 / VELO2 node id */
	uint32_t vpid;
	uint64_t nla;		/* receive buffer NLA (RMA tools) */
	uint64_t buf_size;
	struct pp_run run;	/* client: the run; flags: the tool's options */
	int32_t status;
	uint32_t pad;
};

/*
 * Connect (client) or accept (server); exchange hellos (me->run.flags:
 * o->flags).  The server adopts the client's run parameters
 * (pp_run_adopt(): sizes within 1..max_size) and options (o->flags).
 * Returns the TCP fd or -1.
 */
static inline int xt_handshake(const char *tool, struct pp_opts *o, unsigned int max_size,
			       struct xt_hello *me, struct xt_hello *peer)
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

/*
 * Size of a buffer for the run's largest message, whole pages (after
 * xt_handshake: the client's sizes).
 */
static inline size_t xt_buffer_size(const struct pp_opts *o)
{
	return ((size_t)pp_max_size(o->sizes, o->nsizes) + 4095) & ~(size_t)4095;
}

/* The registered receive buffers of both sides, once the sizes are known. */
struct xt_buffer {
	uint64_t nla;
	uint64_t size;
};

/* Both sides need a peer buffer of at least 'need' bytes. */
static inline int xt_exchange_buffer(const char *tool, int fd, double tmo,
				     const struct xt_buffer *me, struct xt_buffer *peer,
				     uint64_t need)
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

/* Both sides: one byte each way (phase barrier). */
static inline int xt_sync(int fd, double tmo)
{
	char c = 'x';

	if (pp_write_full(fd, &c, 1, tmo) || pp_read_full(fd, &c, 1, tmo))
		return -1;
	return 0;
}

/* transport: JSON name ("extoll-rma2-put-bt"); desc: table title. */
static inline void xt_print_bw(const char *tool, const char *transport, const char *desc,
			       const struct pp_opts *o, uint32_t node, uint32_t peer_node,
			       const struct pp_bw_result *res, unsigned int n)
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

#ifdef LIBRMA2_H
/* rma2_register() with a clear message when RLIMIT_MEMLOCK is too small. */
static inline int xt_register(const char *tool, RMA2_Port port, void *buf, size_t len,
			      size_t total, RMA2_Region **reg)
{
	RMA2_ERROR rc = rma2_register(port, buf, len, reg);
	struct rlimit rl;
	int e = errno;

	if (rc == RMA2_SUCCESS)
		return 0;
	rma2_perror(rc, "rma2_register");
	if (e == ENOMEM && !getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < total)
		fprintf(stderr, "%s: the run registers %zu KiB but RLIMIT_MEMLOCK is %llu KiB: "
			"use smaller --sizes or raise it (ulimit -l)\n", tool, total >> 10,
			(unsigned long long)rl.rlim_cur >> 10);
	return -1;
}

/* rma2_perror() with "TOOL: what" as the header. */
static inline void xt_rma2_perror(const char *tool, RMA2_ERROR rc, const char *what)
{
	char header[128];

	snprintf(header, sizeof(header), "%s: %s", tool, what);
	rma2_perror(rc, header);
}

/* An RMA tool's link to its peer. */
struct xt_rma2 {
	RMA2_Port port;
	RMA2_Handle h;			/* the connection to the peer */
	struct xt_hello me, peer;
	struct xt_buffer peerbuf;	/* the peer's receive buffer */
	int fd;				/* the out-of-band TCP connection */
};

/*
 * rma2_open(), then xt_handshake() with our node and VPID in x->me (a
 * server adopts the client's run and o->flags).  0, or -1 (reported on
 * stderr).
 */
static inline int xt_rma2_open(const char *tool, struct pp_opts *o, unsigned int max_size,
			       struct xt_rma2 *x)
{
	RMA2_ERROR rc;

	memset(x, 0, sizeof(*x));
	x->fd = -1;
	rc = rma2_open(&x->port);
	if (rc != RMA2_SUCCESS) {
		xt_rma2_perror(tool, rc, "rma2_open");
		return -1;
	}
	x->me.node = rma2_get_nodeid(x->port);
	x->me.vpid = rma2_get_vpid(x->port);
	x->fd = xt_handshake(tool, o, max_size, &x->me, &x->peer);
	return x->fd < 0 ? -1 : 0;
}

/*
 * Tells the peer where our receive buffer is (size bytes of the region
 * reg), learns where its buffer is (at least the run's largest size) and
 * connects to it.  0, or -1 (reported on stderr).
 */
static inline int xt_rma2_connect(const char *tool, struct xt_rma2 *x, const struct pp_opts *o,
				  RMA2_Region *reg, size_t size)
{
	struct xt_buffer mine;
	RMA2_ERROR rc;

	rma2_get_nla(reg, 0, &mine.nla);
	mine.size = size;
	if (xt_exchange_buffer(tool, x->fd, o->timeout_s, &mine, &x->peerbuf,
			       pp_max_size(o->sizes, o->nsizes)))
		return -1;
	rc = rma2_connect(x->port, (RMA2_Nodeid)x->peer.node, (RMA2_VPID)x->peer.vpid,
			  RMA2_CONN_DEFAULT, &x->h);
	if (rc != RMA2_SUCCESS) {
		xt_rma2_perror(tool, rc, "rma2_connect");
		return -1;
	}
	return 0;
}

/* Disconnects, unregisters the regions (NULL: none) and closes. */
static inline void xt_rma2_close(struct xt_rma2 *x, RMA2_Region *reg1, RMA2_Region *reg2)
{
	rma2_disconnect(x->port, x->h);
	if (reg1)
		rma2_unregister(x->port, reg1);
	if (reg2)
		rma2_unregister(x->port, reg2);
	rma2_close(x->port);
	close(x->fd);
}

/* Waits for the next RMA notification and consumes it; -1 (reported on
 * stderr) on timeout or an error notification. */
static inline int xt_wait_noti(RMA2_Port port, double tmo)
{
	RMA2_Notification *n;
	struct exa_wait w;
	int err;

	exa_wait_init(&w, (int64_t)(tmo * 1e9));
	while (rma2_noti_probe(port, &n) != RMA2_SUCCESS) {
		if (exa_wait_poll(&w)) {
			fprintf(stderr, "no RMA notification within %g s\n", tmo);
			return -1;
		}
	}
	exa_wait_done(&w);
	err = rma2_noti_get_error(n);
	if (err)
		fprintf(stderr, "RMA error notification: error %d, size %u, from node %u\n",
			err, rma2_noti_get_size(n), rma2_noti_get_remote_nodeid(n));
	rma2_noti_free(port, n);
	return err ? -1 : 0;
}
#endif

/* Quadword commands move multiples of 8 bytes only: 0, or -EINVAL (said). */
static inline int xt_check_qw_sizes(const char *tool, const struct pp_opts *o)
{
	for (unsigned int i = 0; i < o->nsizes; i++)
		if (o->sizes[i] & 7) {
			fprintf(stderr, "%s: --qw needs sizes that are multiples of 8\n", tool);
			return -EINVAL;
		}
	return 0;
}

#endif
