// SPDX-License-Identifier: GPL-2.0
/*
 * exanet_rdma_stream: a helper of the node restart test
 * (qemu-devices/tests/direct_test.py), not a test of its own: it prints no
 * TAP and is not in tests.list.  The ExaNet counterpart of
 * selftests/extoll/extoll_put_stream.c.
 *
 *   exanet_rdma_stream target BYTES
 *       registers BYTES of memory filled with 0x5a, prints
 *       "target node N rank R va 0x..." and waits until SIGTERM.
 *   exanet_rdma_stream stream NODE RANK VA BYTES
 *       writes BYTES to (NODE, RANK, VA), one RDMA write at a time, until
 *       SIGTERM, and prints "ok N refused N lost N" every 200 ms and at the
 *       end: completed writes, writes the NI ended with an error, and
 *       writes not completed within 10 s (the NI promises there are none).
 *
 * It goes on after errors on purpose: the test wants to see what becomes
 * of writes aimed at a node that died and at its next incarnation.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libexanet.h>

#include "stream_tally.h"

#define WAIT_NS 10000000000ll

static int usage(void)
{
	fprintf(stderr, "usage: exanet_rdma_stream target BYTES\n"
			"       exanet_rdma_stream stream NODE RANK VA BYTES\n");
	return 2;
}

static void *region(struct exanet_dev *dev, uint64_t bytes, struct exanet_mr **mr)
{
	void *buf = aligned_alloc(4096, (bytes + 4095) & ~4095ull);
	int err;

	if (!buf) {
		fprintf(stderr, "exanet_rdma_stream: out of memory\n");
		return NULL;
	}
	memset(buf, 0x5a, bytes);
	err = exanet_reg_mr(dev, buf, bytes, 0, mr);
	if (err) {
		fprintf(stderr, "exanet_rdma_stream: exanet_reg_mr: %s\n", strerror(-err));
		free(buf);
		return NULL;
	}
	return buf;
}

static int target(struct exanet_dev *dev, uint64_t bytes)
{
	struct exanet_raddr ra;
	struct exanet_mr *mr;
	void *buf = region(dev, bytes, &mr);

	if (!buf || exanet_mr_raddr(mr, buf, &ra))
		return 1;
	printf("target node %u rank %u va %#" PRIx64 "\n", ra.node, ra.rank, ra.va);
	fflush(stdout);
	while (!stream_stop)
		pause();
	return 0;
}

static int stream(struct exanet_dev *dev, const struct exanet_raddr *dst, uint64_t bytes)
{
	struct stream_tally t = { .next_report = stream_now_s() + STREAM_REPORT_S };
	struct exanet_rdma *rdma;
	struct exanet_mr *mr;
	void *buf = region(dev, bytes, &mr);
	int err;

	if (!buf)
		return 1;
	err = exanet_rdma_alloc(dev, &rdma);
	if (err) {
		fprintf(stderr, "exanet_rdma_stream: exanet_rdma_alloc: %s\n", strerror(-err));
		return 1;
	}
	while (!stream_stop) {
		int slot = exanet_rdma_post_write(rdma, buf, dst, bytes, NULL);

		if (slot < 0) {
			fprintf(stderr, "exanet_rdma_stream: post: %s\n", strerror(-slot));
			return 1;
		}
		err = exanet_rdma_wait(rdma, (unsigned int)slot, WAIT_NS, NULL);
		stream_tally_count(&t, err == -EINPROGRESS, err != 0);
	}
	stream_tally_print(&t);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t node = 0, rank = 0, va = 0, bytes;
	struct exanet_raddr dst;
	struct exanet_dev *dev;
	int rc, err;

	if (argc == 3 && !strcmp(argv[1], "target")) {
		if (stream_parse_u64(argv[2], &bytes) || !bytes || bytes > (64u << 20))
			return usage();
	} else if (argc == 6 && !strcmp(argv[1], "stream")) {
		if (stream_parse_u64(argv[2], &node) || stream_parse_u64(argv[3], &rank) ||
		    stream_parse_u64(argv[4], &va) || stream_parse_u64(argv[5], &bytes) || !bytes ||
		    bytes > (8u << 20) || node > UINT32_MAX || rank > UINT32_MAX ||
		    exanet_raddr_make((uint32_t)node, (uint32_t)rank, va, &dst))
			return usage();
	} else {
		return usage();
	}
	stream_catch_term();
	err = exanet_open(NULL, &dev);
	if (err) {
		fprintf(stderr, "exanet_rdma_stream: exanet_open: %s\n", strerror(-err));
		return 1;
	}
	if (argv[1][0] == 't')
		rc = target(dev, bytes);
	else
		rc = stream(dev, &dst, bytes);
	exanet_close(dev);
	return rc;
}
