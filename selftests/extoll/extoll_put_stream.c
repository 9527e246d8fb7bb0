// SPDX-License-Identifier: GPL-2.0
/*
 * extoll_put_stream: a helper of the node restart test
 * (qemu-devices/tests/direct_test.py), not a test of its own: it prints no
 * TAP and is not in tests.list.
 *
 *   extoll_put_stream target BYTES
 *       registers BYTES of memory filled with 0x5a, prints
 *       "target node N vpid V nla 0x..." and waits until SIGTERM.
 *   extoll_put_stream stream NODE VPID NLA BYTES
 *       puts BYTES into (NODE, VPID, NLA), one at a time, each with a
 *       requester notification, until SIGTERM, and prints
 *       "ok N refused N lost N" every 200 ms and at the end: completed
 *       puts, puts the NI ended with an error, and puts with no
 *       notification within 10 s (the NI promises there are none).
 *
 * It goes on after errors on purpose: the test wants to see what becomes
 * of puts aimed at a node that died and at its next incarnation.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rma2.h>

#include "stream_tally.h"

#define NOTI_WAIT_S 10.0

static int usage(void)
{
	fprintf(stderr, "usage: extoll_put_stream target BYTES\n"
			"       extoll_put_stream stream NODE VPID NLA BYTES\n");
	return 2;
}

static void *region(RMA2_Port p, uint64_t bytes, RMA2_Region **r)
{
	void *buf = aligned_alloc(4096, (bytes + 4095) & ~4095ull);
	RMA2_ERROR err;

	if (!buf) {
		fprintf(stderr, "extoll_put_stream: out of memory\n");
		return NULL;
	}
	memset(buf, 0x5a, bytes);
	err = rma2_register(p, buf, bytes, r);
	if (err != RMA2_SUCCESS) {
		fprintf(stderr, "extoll_put_stream: rma2_register: error %d\n", err);
		free(buf);
		return NULL;
	}
	return buf;
}

static int target(RMA2_Port p, uint64_t bytes)
{
	RMA2_Region *r;
	RMA2_NLA nla;

	if (!region(p, bytes, &r))
		return 1;
	rma2_get_nla(r, 0, &nla);
	printf("target node %u vpid %u nla %#" PRIx64 "\n", (unsigned int)rma2_get_nodeid(p),
	       (unsigned int)rma2_get_vpid(p), (uint64_t)nla);
	fflush(stdout);
	while (!stream_stop)
		pause();
	return 0;
}

/* The next notification, or -1 after NOTI_WAIT_S (or on SIGTERM). */
static int next_noti(RMA2_Port p, RMA2_Notification *out)
{
	double end = stream_now_s() + NOTI_WAIT_S;
	RMA2_Notification *n;

	while (rma2_noti_probe(p, &n) != RMA2_SUCCESS) {
		if (stream_now_s() > end)
			return -1;
		usleep(50);
	}
	rma2_noti_dup(n, out);
	rma2_noti_free(p, n);
	return 0;
}

static int stream(RMA2_Port p, unsigned int node, unsigned int vpid, RMA2_NLA dst,
		  uint64_t bytes)
{
	struct stream_tally t = { .next_report = stream_now_s() + STREAM_REPORT_S };
	RMA2_Region *r;
	RMA2_Handle h;
	RMA2_NLA src;
	RMA2_ERROR err;

	if (!region(p, bytes, &r))
		return 1;
	rma2_get_nla(r, 0, &src);
	err = rma2_connect(p, node, vpid, RMA2_CONN_DEFAULT, &h);
	if (err != RMA2_SUCCESS) {
		fprintf(stderr, "extoll_put_stream: rma2_connect node %u vpid %u: error %d\n",
			node, vpid, err);
		return 1;
	}
	while (!stream_stop) {
		RMA2_Notification n;
		int lost;

		err = rma2_post_put_bt_direct(p, h, src, bytes, dst, RMA2_REQUESTER_NOTIFICATION, 0);
		if (err != RMA2_SUCCESS) {
			fprintf(stderr, "extoll_put_stream: post: error %d\n", err);
			return 1;
		}
		lost = next_noti(p, &n) != 0;
		stream_tally_count(&t, lost, !lost && rma2_noti_get_error(&n));
	}
	stream_tally_print(&t);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t node, vpid, nla, bytes;
	RMA2_Port p;
	int rc;

	if (argc == 3 && !strcmp(argv[1], "target")) {
		if (stream_parse_u64(argv[2], &bytes) || !bytes || bytes > (64u << 20))
			return usage();
	} else if (argc == 6 && !strcmp(argv[1], "stream")) {
		if (stream_parse_u64(argv[2], &node) || stream_parse_u64(argv[3], &vpid) ||
		    stream_parse_u64(argv[4], &nla) || stream_parse_u64(argv[5], &bytes) || !bytes ||
		    bytes > (8u << 20) || node > 0xffff || vpid > 0xffff)
			return usage();
	} else {
		return usage();
	}
	stream_catch_term();
	if (rma2_open(&p) != RMA2_SUCCESS) {
		fprintf(stderr, "extoll_put_stream: rma2_open failed (no /dev/extoll/rma2?)\n");
		return 1;
	}
	if (argv[1][0] == 't')
		rc = target(p, bytes);
	else
		rc = stream(p, node, vpid, nla, bytes);
	rma2_close(p);
	return rc;
}
