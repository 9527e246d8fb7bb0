/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of the exanet_ipd program share (the fixture and the
 * helpers more than one of them uses).  The program, one concern per file,
 * its cases running in the order of the files on the link line
 * (selftests/build.mk; selftests/lib/kselftest_split.h):
 *
 *   exanet_ipd.c           fixture "ipd", the first case (starts the
 *                          daemons), main
 *   exanet_ipd_traffic.c   ping, TCP, UDP, kernel bypass, counters
 *   exanet_ipd_hostile.c   hostile input: other PDIDs, forged heartbeats,
 *                          malformed batches
 *   exanet_ipd_peers.c     a stalled, a killed and a silent peer
 *   exanet_ipd_modes.c     sleep, irq and default mode; the stop
 *   exanet_ipd_poweroff.c  a node powered off (fixture "poweroff", last)
 */
#ifndef EXANET_IPD_H
#define EXANET_IPD_H

#include "../lib/kselftest_split.h"
#include "ipd_test.h"
#include "../../tools/exanet-ipd/ipd_proto.h"

/* The longest plain TEST() of this program may take 400 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 400

#define TCP_BYTES (64ull << 20)

/* Pages one peer connection holds: receive region (notification page +
 * ring) and the staging copy of the peer's ring (default 2 MiB rings). */
#define CONN_PAGES (1 + 2 * (2u << 20) / 4096)

/* The driver's resources in use without a daemon (before the first case). */
struct before {
	long reg_pages, rdma_pages, ranks;
};

struct before *saved(void);
void record_before(void);
int have_rdma(void);
void start_all(struct __test_metadata *_metadata, struct oob *o, const char *mode);

/*
 * Every case but the first (which starts the daemons) and the last (which
 * powers a node off) runs on the fixture: the daemons up in busy mode on
 * every rank, peers up, whatever the case before did (stopped, killed,
 * restarted in another mode) or however it ended.  Every rank takes the
 * same decision (all of them restart when one is not ready).
 */
FIXTURE(ipd) {
	struct oob o;
};

FIXTURE_SETUP(ipd);
FIXTURE_TEARDOWN(ipd);

/* TCP over exa0 (exanet_ipd_traffic.c) */
int tcp_receive(int lfd, uint64_t expect, char *sha, long long *got);
int tcp_send(uint32_t ip, int port, uint64_t total, uint64_t seed, char *sha);
void tcp_ring(struct __test_metadata *_metadata, struct oob *o, uint64_t bytes, int port);

/* A background TCP transfer and its result (exanet_ipd_traffic.c) */
struct xfer {
	char sha[72];
	long long bytes;
	int err;
};

pid_t xfer_start(int send, int peer, uint64_t bytes, int port, int *rfd);
int xfer_wait(pid_t pid, int rfd, struct xfer *x, int timeout_ms);

#endif /* EXANET_IPD_H */
