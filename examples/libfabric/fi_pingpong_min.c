// SPDX-License-Identifier: MIT
/*
 * fi_pingpong_min: the fewest libfabric calls that move verified data
 * between two nodes over a reliable datagram (FI_EP_RDM) endpoint.
 *
 * Usage, the same command line on both nodes (common/oob.h):
 *     fi_pingpong_min [-p exanet|extoll] SERVER_HOSTNAME
 * The client sends messages of growing size, from 1 byte (eager) to
 * 64 KiB (the providers' rendezvous, an RDMA read by the receiver); the
 * server checks each one and answers with its bit-inverse, which the
 * client checks.  At the end the two tell each other their verdict, so
 * each line covers both directions.
 *
 * The endpoint addresses travel over TCP on the management network:
 * fi_getname() gives our own, fi_av_insert() turns the peer's into an
 * fi_addr_t that the data calls take.
 */
#define _POSIX_C_SOURCE 200809L	/* getopt, strdup */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oob.h"

#define OOB_PORT 7471
#define MAX_ADDR 64
static const size_t sizes[] = { 1, 64, 4096, 65536 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAX_SIZE 65536

static struct fid_cq *cq;

/* Manual progress: completions (and the provider's work) happen in here. */
static int poll_cq(void)
{
	struct fi_cq_entry entry;
	struct fi_cq_err_entry err = { 0 };
	ssize_t rc = fi_cq_read(cq, &entry, 1);

	if (rc == 1)
		*(int *)entry.op_context = 1;	/* the op's "done" flag */
	if (rc == 1 || rc == -FI_EAGAIN)
		return 0;
	if (rc == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1)
		fprintf(stderr, "completion error: %s\n",
			fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
	else
		fprintf(stderr, "fi_cq_read: %s\n", fi_strerror((int)-rc));
	return -1;
}

/* Wait for both flags, 30 s at most (a lost peer must not hang us). */
static int wait_done(int *a, int *b)
{
	time_t deadline = time(NULL) + 30;

	while (!(*a && *b)) {
		if (poll_cq())
			return -1;
		if (time(NULL) > deadline) {
			fprintf(stderr, "no completion within 30 s\n");
			return -1;
		}
	}
	return 0;
}

static uint8_t pattern(size_t msg, size_t i)
{
	return (uint8_t)(msg * 31 + i * 7 + 1);
}

/* One message each way; returns the number of bad bytes, or -1. */
static long transfer(struct fid_ep *ep, fi_addr_t peer, int is_server, size_t msg,
		     uint8_t *sbuf, uint8_t *rbuf)
{
	size_t len = sizes[msg];
	int sent = 0, received = 0;
	long bad = 0;
	ssize_t rc;

	/* Post the receive first (a message that finds none waits in the provider). */
	if (fi_recv(ep, rbuf, len, NULL, peer, &received))
		return -1;
	if (is_server) {
		if (wait_done(&received, &received))
			return -1;
		for (size_t i = 0; i < len; i++)
			sbuf[i] = (uint8_t)~rbuf[i];
	} else {
		for (size_t i = 0; i < len; i++)
			sbuf[i] = pattern(msg, i);
	}
	while ((rc = fi_send(ep, sbuf, len, NULL, peer, &sent)) == -FI_EAGAIN)
		if (poll_cq())	/* no send credits yet: progress, then retry */
			return -1;
	if (rc || wait_done(&sent, &received))
		return -1;
	for (size_t i = 0; i < len; i++)
		bad += rbuf[i] != (is_server ? pattern(msg, i) : (uint8_t)~pattern(msg, i));
	return bad;
}

/* Give up on the first failing setup call, saying which one it was. */
#define TRY(call)								\
	do {									\
		int rc_ = (int)(call);						\
		if (rc_) {							\
			printf("FAIL: provider %s: %s: %s\n", prov, #call,	\
			       fi_strerror(-rc_));				\
			return 1;						\
		}								\
	} while (0)

int main(int argc, char **argv)
{
	const char *prov = "exanet";
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT, .size = 64 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	char me[MAX_ADDR] = "", them[MAX_ADDR] = "", name[128] = "?";
	size_t addrlen = sizeof(me), namelen = sizeof(name);
	static uint8_t sbuf[MAX_SIZE], rbuf[MAX_SIZE];
	int opt, fd, is_server, rc;
	char line[256];
	long bad = 0;
	fi_addr_t peer;

	while ((opt = getopt(argc, argv, "p:")) != -1)
		prov = opt == 'p' ? optarg : NULL;
	if (!prov || optind != argc - 1) {
		fprintf(stderr, "usage: %s [-p exanet|extoll] SERVER_HOSTNAME\n", argv[0]);
		return 2;
	}

	/* Ask the named provider for a reliable unconnected endpoint. */
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup(prov);
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (rc) {
		printf("FAIL: provider %s: fi_getinfo: %s (does fi_info -p %s list it?)\n",
		       prov, fi_strerror(-rc), prov);
		return 1;
	}
	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	TRY(fi_domain(fabric, info, &domain, NULL));
	TRY(fi_cq_open(domain, &cq_attr, &cq, NULL));
	TRY(fi_av_open(domain, &av_attr, &av, NULL));
	TRY(fi_endpoint(domain, info, &ep, NULL));
	TRY(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_ep_bind(ep, &av->fid, 0));
	TRY(fi_enable(ep));
	TRY(fi_getname(&ep->fid, me, &addrlen));

	/* Swap endpoint addresses over TCP, then make the peer's usable. */
	fd = oob_connect(argv[optind], OOB_PORT, &is_server);
	if (fd < 0 || oob_exchange(fd, me, them, sizeof(me)) ||
	    fi_av_insert(av, them, 1, &peer, 0, NULL) != 1) {
		printf("FAIL: provider %s: no peer address\n", prov);
		return 1;
	}
	fi_av_straddr(av, them, name, &namelen);

	for (size_t msg = 0; msg < NSIZES && bad >= 0; msg++) {
		long b = transfer(ep, peer, is_server, msg, sbuf, rbuf);

		bad = b < 0 ? -1 : bad + b;
	}
	snprintf(line, sizeof(line), "%s with %s over %s: %zu messages of 1..%d B each way",
		 is_server ? "server" : "client", name, prov, NSIZES, MAX_SIZE);
	rc = oob_verdict(fd, bad, line);
	close(fd);
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return rc ? 1 : 0;
}
