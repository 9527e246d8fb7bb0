/* SPDX-License-Identifier: MIT */
/*
 * Shared by exanet-rdma-bw and exanet-rdma-lat: the defaults of their
 * options, setup of an RDMA page and a registered buffer, and the out-of-band
 * exchange of run parameters and remote addresses over a TCP connection on
 * the management network (pp_common.c helpers).  rdma_tool.c.
 */
#ifndef RDMA_TOOL_H
#define RDMA_TOOL_H

#include <stddef.h>
#include <stdint.h>

#include <libexanet.h>

#include "pp_common.h"

#define RT_MAGIC 0x45524454u	/* "ERDT" */
#define RT_MAX_SIZE (4u << 20)
/* Two halves of the largest size + a notification page: 4 MiB + 4 KiB. */
#define RT_DEFAULT_SIZES "1-2097152"
#define RT_DEFAULT_PORT 18530
#define RT_NOTIF_SLOTS 64

/* The struct pp_tool members both tools share (designated initializers). */
#define RT_PP_TOOL(tool_name, port) \
	.name = (tool_name), .max_size = RT_MAX_SIZE, .default_timeout_s = 30, \
	.opts = PP_OPT_DEVICE, .default_sizes = RT_DEFAULT_SIZES, .default_port = (port)

/* Exchanged once in each direction. */
struct rt_hello {
	uint32_t magic;
	int32_t status;			/* 0 or negative errno */
	uint32_t node, rank;
	uint8_t buf[EXANET_RADDR_WIRE_SIZE];	/* peer buffer */
	uint8_t notif[EXANET_RADDR_WIRE_SIZE];	/* peer notification slots */
	struct pp_run run;		/* flags: the tool's mode */
};

struct rt_ctx {
	struct exanet_dev *dev;
	struct exanet_rdma *rdma;
	uint8_t *buf;			/* 2 * buflen: [send | receive] */
	size_t buflen;
	int odp;			/* on demand: implicit registration, nothing pinned */
	struct exanet_rdma_notif *notif;	/* RT_NOTIF_SLOTS records */
	struct exanet_mr *mr_buf, *mr_notif;
	struct exanet_raddr peer_buf, peer_notif;
	uint32_t peer_node;
};

/*
 * odp: the buffers are registered on demand (the implicit registration),
 * neither populated nor written: the NI faults them in (first touch).
 * thp: the buffers ask for transparent huge pages (MADV_HUGEPAGE).
 */
int rt_setup(struct rt_ctx *c, const char *device, size_t buflen, int odp, int thp);
void rt_teardown(struct rt_ctx *c);

/*
 * The TCP connection.  Client: connects to the server.  Server: waits for
 * the client, reads its hello into *peer and adopts its run parameters
 * (sizes, iters, warmup; the tool decodes peer->run.flags).  Returns the
 * connected fd, or -1 (reported on stderr).
 */
int rt_rendezvous(const char *tool, struct pp_opts *o, struct rt_hello *peer);

/* Largest size of the run, 0 if a size is 0 or above RT_MAX_SIZE. */
unsigned int rt_max_size(const struct pp_opts *o);

/*
 * After rt_setup() (its result in err): sends our hello (err, our buffers
 * unless err, the run parameters and mode), the client reads the server's,
 * and the peer's addresses are taken.  0, or -1 (reported on stderr, but
 * our own setup error, reported by rt_setup()).
 */
int rt_hello_exchange(const char *tool, struct rt_ctx *c, const struct pp_opts *o, int err,
		      uint32_t mode, int fd, struct rt_hello *peer);

/* On-demand faults resolved so far for our rank (sysfs rdma_odp), or -1. */
long long rt_odp_faults(const struct rt_ctx *c);

/* Default iteration count for a transfer size: about 32 MiB per size. */
unsigned long rt_iters_for(unsigned int size, unsigned long max);

#endif
