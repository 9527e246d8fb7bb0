/* SPDX-License-Identifier: MIT */
/*
 * Shared by rma2-pingpong, rma2-bw and velo2-pingpong: the TCP handshake on
 * the management network (exchange of EXTOLL addresses and run
 * parameters) on top of pp_common, bandwidth results (extoll_tool.c); the
 * RMA tools' part is rma2_tool.h.
 */
#ifndef EXTOLL_TOOL_H
#define EXTOLL_TOOL_H

#include <stddef.h>
#include <stdint.h>

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
int xt_handshake(const char *tool, struct pp_opts *o, unsigned int max_size, struct xt_hello *me,
		 struct xt_hello *peer);

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
int xt_exchange_buffer(const char *tool, int fd, double tmo, const struct xt_buffer *me,
		       struct xt_buffer *peer, uint64_t need);

/* Both sides: one byte each way (phase barrier). */
int xt_sync(int fd, double tmo);

/* transport: JSON name ("extoll-rma2-put-bt"); desc: table title. */
void xt_print_bw(const char *tool, const char *transport, const char *desc, const struct pp_opts *o,
		 uint32_t node, uint32_t peer_node, const struct pp_bw_result *res, unsigned int n);

/* Quadword commands move multiples of 8 bytes only: 0, or -EINVAL (said). */
int xt_check_qw_sizes(const char *tool, const struct pp_opts *o);

#endif
