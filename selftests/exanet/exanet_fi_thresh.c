// SPDX-License-Identifier: MIT
/*
 * Measurement helper (not a test, not in tests.list): tagged ping-pong over
 * the libfabric provider "exanet" between two nodes at sizes around the
 * eager/rendezvous threshold, to choose FI_EXANET_RNDV_THRESHOLD
 * (Documentation/exanet/libfabric.md, "Eager/rendezvous threshold").
 *
 * Started on nodes 0 and 1 at once like a selftest (EXA_RANK, EXA_NNODES,
 * EXA_PEERS); the protocol is chosen with the provider's variable, e.g.
 *	FI_EXANET_RNDV_THRESHOLD=1000000000 exanet_fi_thresh   # all eager
 *	FI_EXANET_RNDV_THRESHOLD=0 exanet_fi_thresh            # all rendezvous
 * Node 0 prints one line per size: "size N iters K p10_us A median_us M
 * p90_us P" (one-way = round trip / 2; each round trip also waits for both
 * send completions, as fi_pingpong does).  Optional arguments: iterations
 * (200), then the sizes (default 256 B .. 32 KiB).
 *
 * EXA_FI_INJECT=1 sends as Open MPI's mtl ofi sends a small blocking
 * message: fi_tinjectdata (the rank as CQ data), no send completion, each
 * side waits only for its receive.  That separates what the provider costs
 * per message from what Open MPI adds (libfabric.md, "Open MPI's share,
 * measured apart").
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "exa_test.h"

static size_t sizes[64] = { 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 16384,
				32768 };

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int die(const char *what, long ret)
{
	fprintf(stderr, "exanet_fi_thresh: %s: %ld (%s)\n", what, ret,
		ret < 0 ? fi_strerror((int)-ret) : "");
	exit(1);
}

/* Wait until both the receive (rctx) and the send (sctx) completed. */
static void wait_both(struct fid_cq *cq, void *rctx, void *sctx)
{
	int got_r = 0, got_s = 0;
	struct fi_cq_tagged_entry e;

	while (!got_r || !got_s) {
		ssize_t n = fi_cq_read(cq, &e, 1);

		if (n == -FI_EAGAIN)
			continue;
		if (n != 1) {
			struct fi_cq_err_entry ee = { 0 };

			fi_cq_readerr(cq, &ee, 0);
			die("completion error", -(long)ee.err);
		}
		if (e.op_context == rctx)
			got_r = 1;
		else if (e.op_context == sctx)
			got_s = 1;
	}
}

/* Progress for 50 ms (a last FIN or ACK for the peer) before a barrier. */
static void drain(struct fid_cq *cq)
{
	int64_t end = exanet_now_ns() + 50000000;
	struct fi_cq_tagged_entry e;

	while (exanet_now_ns() < end)
		(void)fi_cq_read(cq, &e, 1);
}

int main(int argc, char **argv)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint8_t addr[64] = { 0 }, all[2][64];
	size_t alen = sizeof(addr), k, nsizes = 12;
	int iters = argc > 1 ? atoi(argv[1]) : 200, warm = 20, i;
	int64_t *t = calloc((size_t)iters, sizeof(*t));
	uint8_t *sb = malloc(1 << 20), *rb = malloc(1 << 20);
	struct oob oob;
	fi_addr_t peer;
	long ret;
	char rctx, sctx;
	const char *inj_env = getenv("EXA_FI_INJECT");
	int inject = inj_env && *inj_env == '1';

	if (!hints || !t || !sb || !rb || iters < 1)
		return 1;
	if (argc > 2) {
		for (nsizes = 0; nsizes < 64 && (int)nsizes + 2 < argc; nsizes++)
			sizes[nsizes] = strtoul(argv[nsizes + 2], NULL, 0);
	}
	for (k = 0; k < nsizes; k++)
		if (!sizes[k] || sizes[k] > (1u << 20))
			return 1;
	if (oob_init(&oob, 4242, 120000))
		die("oob_init", -1);
	hints->caps = FI_TAGGED;
	if (inject)
		hints->domain_attr->cq_data_size = 4;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("exanet");
	hints->domain_attr->av_type = FI_AV_TABLE;
	if ((ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info)))
		die("fi_getinfo", ret);
	if ((ret = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
	    (ret = fi_domain(fabric, info, &domain, NULL)) ||
	    (ret = fi_av_open(domain, &av_attr, &av, NULL)) ||
	    (ret = fi_cq_open(domain, &cq_attr, &cq, NULL)) ||
	    (ret = fi_endpoint(domain, info, &ep, NULL)) ||
	    (ret = fi_ep_bind(ep, &av->fid, 0)) ||
	    (ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(ep)) || (ret = fi_getname(&ep->fid, addr, &alen)))
		die("endpoint setup", ret);
	if (oob_allgather(&oob, addr, all, sizeof(addr)) ||
	    fi_av_insert(av, all[1 - oob.rank], 1, &peer, 0, NULL) != 1)
		die("address exchange", -1);
	memset(sb, 0x5a, 1 << 20);
	for (k = 0; k < nsizes; k++) {
		size_t len = sizes[k];

		drain(cq);
		if (oob_barrier(&oob))
			die("oob_barrier", -1);
		for (i = -warm; i < iters; i++) {
			int64_t t0 = exanet_now_ns();

			if ((ret = fi_trecv(ep, rb, len, NULL, peer, len, 0, &rctx)))
				die("fi_trecv", ret);
			if (inject) {
				struct fi_cq_tagged_entry e;
				ssize_t n;

				if (oob.rank == 0 &&
				    (ret = fi_tinjectdata(ep, sb, len, 0, peer, len)))
					die("fi_tinjectdata", ret);
				do
					n = fi_cq_read(cq, &e, 1);
				while (n == -FI_EAGAIN);
				if (n != 1 || e.op_context != &rctx)
					die("inject receive", n);
				if (oob.rank == 1 &&
				    (ret = fi_tinjectdata(ep, sb, len, 1, peer, len)))
					die("fi_tinjectdata", ret);
			} else if (oob.rank == 0) {
				if ((ret = fi_tsend(ep, sb, len, NULL, peer, len, &sctx)))
					die("fi_tsend", ret);
				wait_both(cq, &rctx, &sctx);
			} else {
				struct fi_cq_tagged_entry e;
				ssize_t n;

				do	/* the ping */
					n = fi_cq_read(cq, &e, 1);
				while (n == -FI_EAGAIN);
				if (n != 1 || e.op_context != &rctx)
					die("ping", n);
				if ((ret = fi_tsend(ep, sb, len, NULL, peer, len, &sctx)))
					die("fi_tsend", ret);
				/* the next ping's receive is posted at the top */
				do
					n = fi_cq_read(cq, &e, 1);
				while (n == -FI_EAGAIN);
				if (n != 1 || e.op_context != &sctx)
					die("pong send", n);
			}
			if (i >= 0)
				t[i] = exanet_now_ns() - t0;
		}
		if (oob.rank == 0) {
			qsort(t, (size_t)iters, sizeof(*t), cmp_i64);
			printf("size %zu iters %d p10_us %.1f median_us %.1f p90_us %.1f\n", len,
			       iters, t[iters / 10] / 2000.0, t[iters / 2] / 2000.0,
			       t[iters * 9 / 10] / 2000.0);
			fflush(stdout);
		}
	}
	drain(cq);
	oob_barrier(&oob);
	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	oob_fini(&oob);
	return 0;
}
