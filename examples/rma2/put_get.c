// SPDX-License-Identifier: MIT
/*
 * put_get: one-sided RMA with the EXTOLL librma2 API between two nodes.
 *
 * Usage, the same command line on both nodes (common/oob.h):
 *     put_get SERVER_HOSTNAME
 * Each process registers a buffer with the NIC, which gives it a network
 * logical address (NLA); peers name remote memory by (node, VPID, NLA),
 * so the two swap these over TCP.  Then only the client acts:
 *   - it puts the first half of its buffer into the first half of the
 *     server's; the server learns that the data landed from a completer
 *     notification and checks it;
 *   - it gets the second half of the server's buffer into the second half
 *     of its own; the completer notification of the get says the data is
 *     there, and the client checks it.
 * The server never posts a command: RMA needs no help from the target's
 * CPU.  At the end the two tell each other their verdict.
 */
#define _POSIX_C_SOURCE 200809L
#include <rma2.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oob.h"

#define OOB_PORT 7472
#define BUF_SIZE (64 * 1024)
#define HALF (BUF_SIZE / 2)

/* What a peer needs to address our buffer. */
struct rma_peer {
	uint32_t node, vpid;
	uint64_t nla;
};

/* Registered memory is pinned in whole pages: keep it page aligned. */
static _Alignas(4096) uint8_t buf[BUF_SIZE];

static uint8_t pattern(int from_server, size_t i)
{
	return (uint8_t)((from_server ? 0x80 : 0x01) + i * 13);
}

/*
 * Wait up to 30 s for the next notification, which must be @cmd without
 * error.  Probing costs no system call; yield so that a 1-CPU node still
 * runs everything else.
 */
static int wait_noti(RMA2_Port port, RMA2_Command cmd, const char *what)
{
	time_t deadline = time(NULL) + 30;
	RMA2_Notification *n;
	int ok;

	while (rma2_noti_probe(port, &n) != RMA2_SUCCESS) {
		if (time(NULL) > deadline) {
			fprintf(stderr, "%s: no notification within 30 s\n", what);
			return -1;
		}
		sched_yield();
	}
	ok = rma2_noti_get_cmd(n) == cmd && rma2_noti_get_error(n) == 0;
	if (!ok)
		fprintf(stderr, "%s: notification command %d error %d, expected command %d\n",
			what, rma2_noti_get_cmd(n), rma2_noti_get_error(n), cmd);
	rma2_noti_free(port, n);
	return ok ? 0 : -1;
}

/* Bytes of buf[from..from+HALF) that are not the sender's pattern. */
static long count_bad(size_t from, int from_server)
{
	long bad = 0;

	for (size_t i = 0; i < HALF; i++)
		bad += buf[from + i] != pattern(from_server, i);
	return bad;
}

/* The client's part: put, then get; returns bad bytes or -1. */
static long client(RMA2_Port port, RMA2_Handle h, RMA2_Region *reg, const struct rma_peer *peer)
{
	/*
	 * Completer notification at the server (the data is there), requester
	 * notification here (after that: our source may be reused).
	 */
	if (rma2_post_put_bt(port, h, reg, 0, HALF, peer->nla, RMA2_REQCOMPL_NOTIFICATION, 0) ||
	    wait_noti(port, RMA2_BT_PUT, "put"))
		return -1;
	/* For a get the region is the local destination, the NLA the remote source. */
	if (rma2_post_get_bt(port, h, reg, HALF, HALF, peer->nla + HALF,
			     RMA2_COMPLETER_NOTIFICATION, 0) ||
	    wait_noti(port, RMA2_GET_BT_RSP, "get"))
		return -1;
	return count_bad(HALF, 1);
}

int main(int argc, char **argv)
{
	struct rma_peer me, peer;
	char line[256];
	long bad;
	RMA2_Region *reg;
	RMA2_Handle h;
	RMA2_Port port;
	RMA2_ERROR rc;
	int fd, failed, is_server;

	if (argc != 2) {
		fprintf(stderr, "usage: %s SERVER_HOSTNAME\n", argv[0]);
		return 2;
	}
	rc = rma2_open(&port);
	if (rc == RMA2_SUCCESS)
		rc = rma2_register(port, buf, BUF_SIZE, &reg);
	if (rc != RMA2_SUCCESS) {
		rma2_perror(rc, "FAIL: rma2_open/rma2_register (a node with the EXTOLL NIC?)");
		return 1;
	}
	me.node = rma2_get_nodeid(port);
	me.vpid = rma2_get_vpid(port);
	rma2_get_nla(reg, 0, &me.nla);

	fd = oob_connect(argv[1], OOB_PORT, &is_server);
	if (fd < 0)
		return 1;
	/* Each side fills the half the other reads before the exchange. */
	memset(buf, 0, BUF_SIZE);
	for (size_t i = 0; i < HALF; i++)
		buf[is_server ? HALF + i : i] = pattern(is_server, i);
	if (oob_exchange(fd, &me, &peer, sizeof(me)))
		return 1;
	rc = rma2_connect(port, (RMA2_Nodeid)peer.node, (RMA2_VPID)peer.vpid,
			  RMA2_CONN_DEFAULT, &h);
	if (rc != RMA2_SUCCESS) {
		rma2_perror(rc, "FAIL: rma2_connect");
		return 1;
	}

	if (is_server)
		bad = wait_noti(port, RMA2_BT_PUT, "put (target)") ? -1 : count_bad(0, 0);
	else
		bad = client(port, h, reg, &peer);
	snprintf(line, sizeof(line), "%s node %u vpid %u with node %u vpid %u: put and get of %d B",
		 is_server ? "server" : "client", me.node, me.vpid, peer.node, peer.vpid, HALF);
	failed = oob_verdict(fd, bad, line);
	close(fd);
	rma2_disconnect(port, h);
	rma2_unregister(port, reg);
	rma2_close(port);
	return failed ? 1 : 0;
}
