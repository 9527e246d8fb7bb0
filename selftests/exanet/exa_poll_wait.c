// SPDX-License-Identifier: MIT
/*
 * Helper of the poll-parking tests (qemu-devices/tests/park_test.py): a
 * process that waits on its mailbox the way libexanet users do, and a
 * one-message sender.
 *
 *   exa_poll_wait recv SECONDS COUNT   allocate a mailbox, print "mbox <id>",
 *                                      then wait (exanet_recv_wait) until
 *                                      COUNT messages arrived or SECONDS
 *                                      passed; print "got <n> <len> <ms>"
 *                                      per message (ms since the wait
 *                                      started) and "done <n>"
 *   exa_poll_wait send NODE MBOX       send one 8-byte message, wait for
 *                                      its ACK; print "sent"
 *   exa_poll_wait serve SECONDS        register a buffer with a known
 *                                      pattern, print "raddr <hex>" (its
 *                                      remote address, wire form), sleep
 *   exa_poll_wait read RADDR           RDMA-read RDMA_BYTES from RADDR,
 *                                      wait for the channel (STATUS polls,
 *                                      exanet_rdma_wait), check the
 *                                      pattern; print "read <bytes> <ms>"
 *
 * Exit status 0 when every step worked (a recv that timed out with fewer
 * than COUNT messages exits 3).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libexanet.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define RDMA_BYTES (64 * 1024)

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static int do_serve(struct exanet_dev *dev, long seconds)
{
	uint8_t wire[EXANET_RADDR_WIRE_SIZE];
	static uint8_t buf[RDMA_BYTES] __attribute__((aligned(4096)));
	struct exanet_raddr ra;
	struct exanet_mr *mr;
	int err;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = pattern(i);
	err = exanet_reg_mr(dev, buf, sizeof(buf), 0, &mr);
	if (!err)
		err = exanet_mr_raddr(mr, buf, &ra);
	if (!err)
		err = exanet_raddr_encode(&ra, wire);
	if (err) {
		fprintf(stderr, "register: %s\n", strerror(-err));
		return 1;
	}
	printf("raddr ");
	for (size_t i = 0; i < sizeof(wire); i++)
		printf("%02x", wire[i]);
	printf("\n");
	fflush(stdout);
	sleep((unsigned int)seconds);
	exanet_dereg_mr(mr);
	return 0;
}

static int do_read(struct exanet_dev *dev, const char *hex)
{
	uint8_t wire[EXANET_RADDR_WIRE_SIZE];
	static uint8_t buf[RDMA_BYTES] __attribute__((aligned(4096)));
	struct exanet_rdma *rdma;
	struct exanet_raddr ra;
	struct exanet_mr *mr;
	int64_t start;
	int err, slot;

	if (strlen(hex) != 2 * sizeof(wire))
		return 2;
	for (size_t i = 0; i < sizeof(wire); i++)
		if (sscanf(hex + 2 * i, "%2hhx", &wire[i]) != 1)
			return 2;
	err = exanet_raddr_decode(wire, &ra);
	if (!err)
		err = exanet_reg_mr(dev, buf, sizeof(buf), 0, &mr);
	if (!err)
		err = exanet_rdma_alloc(dev, &rdma);
	if (err) {
		fprintf(stderr, "set-up: %s\n", strerror(-err));
		return 1;
	}
	start = now_ns();
	slot = exanet_rdma_post_read(rdma, buf, &ra, sizeof(buf), NULL);
	if (slot < 0) {
		fprintf(stderr, "exanet_rdma_post_read: %s\n", strerror(-slot));
		return 1;
	}
	err = exanet_rdma_wait(rdma, (unsigned int)slot, 20000000000LL, NULL);
	if (err) {
		fprintf(stderr, "exanet_rdma_wait: %s\n", strerror(-err));
		return 1;
	}
	for (size_t i = 0; i < sizeof(buf); i++) {
		if (buf[i] != pattern(i)) {
			fprintf(stderr, "byte %zu: 0x%02x, expected 0x%02x\n", i, buf[i],
				pattern(i));
			return 1;
		}
	}
	printf("read %zu %.3f\n", sizeof(buf), (now_ns() - start) / 1e6);
	exanet_rdma_free(rdma);
	exanet_dereg_mr(mr);
	return 0;
}

static int do_recv(struct exanet_dev *dev, long seconds, long count)
{
	struct exanet_mbox *mb;
	int64_t start, end;
	long got = 0;
	char buf[64];
	int err;

	err = exanet_mbox_alloc(dev, 64, &mb);
	if (err) {
		fprintf(stderr, "exanet_mbox_alloc: %s\n", strerror(-err));
		return 1;
	}
	printf("mbox %u\n", exanet_mbox_id(mb));
	fflush(stdout);
	start = now_ns();
	end = start + seconds * 1000000000LL;
	while (got < count || count == 0) {
		int64_t left = end - now_ns();
		ssize_t n;

		if (left <= 0)
			break;
		n = exanet_recv_wait(mb, buf, sizeof(buf), NULL, left);
		if (n == -ETIMEDOUT)
			break;
		if (n < 0) {
			fprintf(stderr, "exanet_recv_wait: %s\n", strerror((int)-n));
			return 1;
		}
		got++;
		printf("got %ld %zd %.3f\n", got, n, (now_ns() - start) / 1e6);
		fflush(stdout);
	}
	printf("done %ld\n", got);
	exanet_mbox_free(mb);
	return got < count ? 3 : 0;
}

static int do_send(struct exanet_dev *dev, uint32_t node, uint32_t mbox)
{
	struct exanet_pkt *pkt;
	uint64_t msg = 0x5041524b2d4d5347ull;	/* "PARK-MSG" */
	int err;

	err = exanet_pkt_alloc(dev, &pkt);
	if (err) {
		fprintf(stderr, "exanet_pkt_alloc: %s\n", strerror(-err));
		return 1;
	}
	err = exanet_send_wait(pkt, node, mbox, &msg, sizeof(msg), 5000000000LL, NULL);
	if (err) {
		fprintf(stderr, "exanet_send_wait: %s\n", strerror(-err));
		return 1;
	}
	printf("sent\n");
	exanet_pkt_free(pkt);
	return 0;
}

int main(int argc, char **argv)
{
	struct exanet_dev *dev;
	int err, rc;

	if (argc < 3 || argc != (!strcmp(argv[1], "recv") || !strcmp(argv[1], "send") ? 4 : 3) ||
	    (strcmp(argv[1], "recv") && strcmp(argv[1], "send") && strcmp(argv[1], "serve") &&
	     strcmp(argv[1], "read"))) {
		fprintf(stderr, "usage: exa_poll_wait recv SECONDS COUNT | send NODE MBOX | "
			"serve SECONDS | read RADDR\n");
		return 2;
	}
	err = exanet_open(NULL, &dev);
	if (err) {
		fprintf(stderr, "exanet_open: %s\n", strerror(-err));
		return 1;
	}
	if (!strcmp(argv[1], "recv"))
		rc = do_recv(dev, strtol(argv[2], NULL, 0), strtol(argv[3], NULL, 0));
	else if (!strcmp(argv[1], "serve"))
		rc = do_serve(dev, strtol(argv[2], NULL, 0));
	else if (!strcmp(argv[1], "read"))
		rc = do_read(dev, argv[2]);
	else
		rc = do_send(dev, (uint32_t)strtoul(argv[2], NULL, 0),
			     (uint32_t)strtoul(argv[3], NULL, 0));
	exanet_close(dev);
	return rc;
}
