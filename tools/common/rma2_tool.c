// SPDX-License-Identifier: MIT
/* The librma2 side of the EXTOLL tools: see rma2_tool.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "exa_wait.h"
#include "rma2_tool.h"

int xt_register(const char *tool, RMA2_Port port, void *buf, size_t len, size_t total,
		RMA2_Region **reg)
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
static void xt_rma2_perror(const char *tool, RMA2_ERROR rc, const char *what)
{
	char header[128];

	snprintf(header, sizeof(header), "%s: %s", tool, what);
	rma2_perror(rc, header);
}

int xt_rma2_open(const char *tool, struct pp_opts *o, unsigned int max_size, struct xt_rma2 *x)
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

int xt_rma2_connect(const char *tool, struct xt_rma2 *x, const struct pp_opts *o, RMA2_Region *reg,
		    size_t size)
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

void xt_rma2_close(struct xt_rma2 *x, RMA2_Region *reg1, RMA2_Region *reg2)
{
	rma2_disconnect(x->port, x->h);
	if (reg1)
		rma2_unregister(x->port, reg1);
	if (reg2)
		rma2_unregister(x->port, reg2);
	rma2_close(x->port);
	close(x->fd);
}

int xt_wait_noti(RMA2_Port port, double tmo)
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
