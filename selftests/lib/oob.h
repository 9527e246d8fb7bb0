/* SPDX-License-Identifier: MIT */
/*
 * Out-of-band coordination between the ranks of a multi-node test over TCP
 * on the management network.  The test runner starts the same program on
 * nodes 0..k-1 with EXA_RANK, EXA_NNODES and EXA_PEERS (comma-separated
 * IPv4 of every rank, own included).  Rank 0 is the hub: it listens, the
 * others connect; collectives are gather-to-0 then scatter.
 *
 * Every call has a deadline (no infinite waits) and returns 0 or a negative
 * errno (-ETIMEDOUT, -ECONNRESET, -EPROTO, ...).
 *
 * A 'session' number (e.g. the harness test index) keeps successive tests
 * of the same program apart: each session uses its own TCP port
 * (EXA_OOB_PORT, default 47100, plus session) and a hello carrying it.
 * The emulated nodes reserve 47100-47299 (ip_local_reserved_ports) so no
 * outgoing connection takes one of these ports; do the same on real nodes.
 */
#ifndef SELFTEST_OOB_H
#define SELFTEST_OOB_H

#include <stddef.h>
#include <stdint.h>

#define OOB_MAX_NODES 64
#define OOB_DEFAULT_PORT 47100
#define OOB_DEFAULT_TIMEOUT_MS 30000

struct oob {
	int rank;
	int nnodes;
	unsigned int session;
	int timeout_ms;			/* per collective operation */
	int fds[OOB_MAX_NODES];		/* rank 0: fd per peer rank; others: fds[0] */
	uint32_t peers[OOB_MAX_NODES];	/* IPv4, network order */
};

/* Parse EXA_RANK/EXA_NNODES/EXA_PEERS.  Missing variables mean a single
 * rank (rank 0 of 1).  -EINVAL on malformed values. */
int oob_from_env(int *rank, int *nnodes, uint32_t *peers, int max_peers);

/* Connect all ranks for 'session'.  timeout_ms bounds connection setup and
 * every later operation (<= 0: OOB_DEFAULT_TIMEOUT_MS). */
int oob_init(struct oob *o, unsigned int session, int timeout_ms);
/* Same with explicit rank layout (used by host tests). */
int oob_init_explicit(struct oob *o, int rank, int nnodes, const uint32_t *peers,
		      unsigned int session, unsigned int base_port, int timeout_ms);

/* all[r * len .. ] receives rank r's 'len' bytes; mine may alias all+rank*len. */
int oob_allgather(struct oob *o, const void *mine, void *all, size_t len);
int oob_barrier(struct oob *o);
/* Root's buffer to everybody. */
int oob_bcast(struct oob *o, void *buf, size_t len, int root);
/* Closes connections (no barrier). */
void oob_fini(struct oob *o);

#endif
