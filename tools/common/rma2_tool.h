/* SPDX-License-Identifier: MIT */
/*
 * Shared by rma2-pingpong and rma2-bw: the librma2 side of the EXTOLL tools
 * (open, register, connect, wait for a notification; rma2_tool.c).
 */
#ifndef RMA2_TOOL_H
#define RMA2_TOOL_H

#include <stddef.h>

#include <rma2.h>

#include "extoll_tool.h"

#define XT_RMA2_MAX_SIZE (8u << 20)	/* the RMA tools' largest size */

/* rma2_register() with a clear message when RLIMIT_MEMLOCK is too small. */
int xt_register(const char *tool, RMA2_Port port, void *buf, size_t len, size_t total,
		RMA2_Region **reg);

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
int xt_rma2_open(const char *tool, struct pp_opts *o, unsigned int max_size, struct xt_rma2 *x);

/*
 * Tells the peer where our receive buffer is (size bytes of the region
 * reg), learns where its buffer is (at least the run's largest size) and
 * connects to it.  0, or -1 (reported on stderr).
 */
int xt_rma2_connect(const char *tool, struct xt_rma2 *x, const struct pp_opts *o, RMA2_Region *reg,
		    size_t size);

/* Disconnects, unregisters the regions (NULL: none) and closes. */
void xt_rma2_close(struct xt_rma2 *x, RMA2_Region *reg1, RMA2_Region *reg2);

/*
 * Waits for the next RMA notification and consumes it; -1 (reported on
 * stderr) on timeout or an error notification.
 */
int xt_wait_noti(RMA2_Port port, double tmo);

#endif
